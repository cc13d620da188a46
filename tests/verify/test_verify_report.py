"""Report formats from given run records: the JSON fields, the table, the picture."""

from __future__ import annotations

import json

import pytest

from trainlint.verify import report, tolerance
from trainlint.verify.runner import RunRecord, RunSettings, Variant
from trainlint.verify.variants import Planned


def _rec(name: str, k: int, step: float, losses: list[float]) -> RunRecord:
    steps = [step * (1 + 0.01 * ((i + k) % 3)) for i in range(10)]
    return RunRecord(variant=name, repeat=k, step_s=steps, data_wait_s=[step / 2] * 10,
                     all_step_s=[step] * 2 + steps, losses=losses, wall_s=1.0, ranks=1)


def _result(after_losses):
    settings = RunSettings(script="/x/train.py", script_args=["--epochs", "1"], steps=10,
                           warmup=2, nproc=None, threads=2)
    base = [1.0, 0.9, 0.8] + [0.7] * 9
    records = {
        "original": [_rec("original", k, 0.04, base) for k in range(3)],
        "TL101": [_rec("TL101", k, 0.02, after_losses) for k in range(3)],
    }
    planned = [Planned(Variant("TL101", ["TL101"], "/tmp/f.py"), ["TL101"]),
               Planned(None, ["TL999"], "TL999 found nothing to fix in train.py")]
    # The last planned version is the combined one; put the measured one last for the totals.
    planned = planned[::-1]
    tols = {"TL101": tolerance.for_rules(["TL101"])}
    return report.build(settings, planned, records, tols, repeats=3, fixed_file=None), records


def test_json_has_the_issue_fields():
    data, _ = _result([1.0, 0.9, 0.8] + [0.7] * 9)
    for key in ("script", "rules", "steps", "repeats", "before", "after", "speedup",
                "speedup_low", "speedup_high", "losses_match", "max_loss_deviation", "verdict"):
        assert key in data
    assert data["rules"] == ["TL101"]
    assert data["before"]["median_step_s"] > data["after"]["median_step_s"]
    assert data["before"]["data_wait_share"] == pytest.approx(0.5, rel=0.05)
    assert data["verdict"] == "faster"
    assert data["losses_match"] and data["max_loss_deviation"] == 0.0
    json.dumps(data, allow_nan=False)  # valid strict JSON
    assert [r["verdict"] for r in data["rows"]] == ["nothing to fix", "faster"]


def test_table_lists_every_row():
    data, _ = _result([1.0, 0.9, 0.8] + [0.7] * 9)
    text = report.table(data)
    assert "original" in text and "TL101" in text and "nothing to fix" in text
    assert "2.0" in text and "identical" in text


def test_rejected_row_says_why():
    data, _ = _result([1.0, 2.0, 3.0] + [4.0] * 9)
    assert data["verdict"] == "rejected"
    assert not data["losses_match"]
    assert "left its tolerance" in report.table(data)


def test_picture(tmp_path):
    pytest.importorskip("matplotlib", reason="the picture needs the optional matplotlib")
    data, records = _result([1.0, 0.9, 0.8] + [0.7] * 9)
    out = tmp_path / "verify.png"
    report.write_picture(data, records, out)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_spread_too_wide_to_tell_is_said_so_and_its_ends_stay_short():
    data, _ = _result([1.0, 0.9, 0.8] + [0.7] * 9)
    row = data["rows"][-1]
    assert "more --repeats" not in report.table(data)  # 3 steady rounds: a usable spread
    row.update(speedup=0.56, speedup_low=1e-9, speedup_high=7334823.47,  # two rounds that disagree
               verdict="no measurable change")
    text = report.table(data)
    assert "0.56x [<0.01->100]" in text
    assert "cannot tell a speed change from noise: use more --repeats (now 3) or --steps." in text
    assert all(line == line.rstrip() for line in text.splitlines())


def test_a_wide_spread_wholly_below_one_is_slower_without_a_cannot_tell_note():
    # "0.13x [0.04-0.47] slower" was followed by "a spread this wide cannot tell a speed change
    # from noise": the whole spread below 1.0 does tell; the note is for spreads across 1.0.
    data, _ = _result([1.0, 0.9, 0.8] + [0.7] * 9)
    data["rows"][-1].update(speedup=0.13, speedup_low=0.04, speedup_high=0.47, verdict="slower")
    text = report.table(data)
    assert "0.13x [0.04-0.47]" in text and "slower" in text
    assert "cannot tell" not in text


def test_a_spread_end_near_one_is_not_shown_as_one():
    # "0.96x [0.91-1.00] slower": the upper end 0.997 rounded to 1.00, which "slower" excludes.
    data, _ = _result([1.0, 0.9, 0.8] + [0.7] * 9)
    data["rows"][-1].update(speedup=0.96, speedup_low=0.91, speedup_high=0.997, verdict="slower")
    assert "0.96x [0.91-0.997]" in report.table(data)
    data["rows"][-1].update(speedup=1.04, speedup_low=1.0004, speedup_high=1.09, verdict="faster")
    assert "1.04x [1.0004-1.09]" in report.table(data)


def test_profile_lines_say_what_a_cpu_run_cannot_measure():
    from trainlint.verify.profile import Span, breakdown

    data, _ = _result([1.0, 0.9, 0.8] + [0.7] * 9)
    gpu = breakdown([Span("sm90_xmma_gemm_bf16", 0, 400, True)], wall_s=1000e-6, steps=2)
    cpu = breakdown([Span("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 0, 300, False)],
                    wall_s=1000e-6, steps=2)
    data["profile"] = {"original": gpu, "TL101": cpu}
    lines = report.table(data).splitlines()
    assert "  original: kernels 40%, memcpy 0%, communication 0%, data loader 0%, other 60%; " \
           "compute-time ratio 40.0%" in lines
    assert "  TL101: data loader 30%, other 70%; no GPU kernel in this run: kernels, memcpy, " \
           "communication and the compute-time ratio are measured on a GPU" in lines


def test_data_wait_of_a_script_without_a_dataloader_is_not_measured():
    def records(batches):
        return [RunRecord(variant="original", repeat=k, step_s=[0.01] * 3, data_wait_s=[0.0] * 3,
                          all_step_s=[0.01] * 4, losses=[1.0] * 4, wall_s=1.0, ranks=1, loader_batches=batches)
                for k in range(2)]

    assert report._side(records(0))["data_wait_share"] is None
    assert report._side(records(4))["data_wait_share"] == 0.0  # a loader that never made it wait


def test_combined_row_equal_to_one_rules_fix_carries_its_measurement():
    # --each where TL999 fixes nothing and TL101+TL999 is TL101's version: the combined row and
    # the top-level verdict said "nothing to fix" (after/speedup null) though TL101 was measured.
    settings = RunSettings(script="/x/train.py", script_args=[], steps=10, warmup=2, nproc=None,
                           threads=2)
    base = [1.0, 0.9, 0.8] + [0.7] * 9
    records = {"original": [_rec("original", k, 0.04, base) for k in range(3)],
               "TL101": [_rec("TL101", k, 0.02, base) for k in range(3)]}
    v = Variant("TL101", ["TL101"], "/tmp/f.py")
    planned = [Planned(v, ["TL101"]), Planned(None, ["TL999"], "TL999 found nothing to fix"),
               Planned(v, ["TL101", "TL999"], "TL101+TL999 fix only what TL101 fixes alone")]
    data = report.build(settings, planned, records, {"TL101": tolerance.for_rules(["TL101"])},
                        repeats=3, fixed_file=None)
    assert data["verdict"] == "faster" and data["after"] is not None
    assert data["speedup"] == pytest.approx(2.0, rel=0.05) and data["losses_match"]
    assert [r["verdict"] for r in data["rows"]] == ["faster", "nothing to fix", "faster"]
    text = report.table(data)
    assert "TL101+TL999 fix only what TL101 fixes alone" in text


def test_a_non_reproducible_original_is_reported_as_inconclusive():
    # Before: a widened tolerance (twice the original's own ~200% self-deviation) let any change
    # pass; now the verdict says the loss check cannot tell.
    settings = RunSettings(script="/x/train.py", script_args=[], steps=10, warmup=2, nproc=None,
                           threads=2)
    base = [1.0, 0.9, 0.8] + [0.7] * 9
    records = {"original": [_rec("original", k, 0.04, [x * (1 + 2 * k) for x in base])
                            for k in range(3)],
               "fixed": [_rec("fixed", k, 0.04, [x * 0.5 for x in base]) for k in range(3)]}
    planned = [Planned(Variant("fixed", [], "/tmp/f.py"), [])]
    data = report.build(settings, planned, records, {"fixed": tolerance.UNKNOWN}, repeats=3,
                        fixed_file="/tmp/f.py")
    assert data["verdict"] == "inconclusive"
    assert data["losses_match"] is None and data["loss_check_inconclusive"]
    text = report.table(data)
    assert "cannot tell" in text and "inconclusive" in text


def test_a_loss_check_not_done_is_null_and_said_under_the_table():
    # No scalar loss went through backward (per_sample.backward(gradient)): the JSON said
    # max_loss_deviation 0.0, as if measured, and only the loss column hinted at it.
    settings = RunSettings(script="/x/train.py", script_args=[], steps=10, warmup=2, nproc=None,
                           threads=2)
    records = {"original": [_rec("original", k, 0.04, []) for k in range(3)],
               "fixed": [_rec("fixed", k, 0.04, []) for k in range(3)]}
    planned = [Planned(Variant("fixed", [], "/tmp/f.py"), [])]
    data = report.build(settings, planned, records, {"fixed": tolerance.for_rules([])},
                        repeats=3, fixed_file="/tmp/f.py")
    assert data["losses_match"] is None
    assert data["max_loss_deviation"] is None and data["loss_deviation_compared"] is None
    assert data["losses_identical"] is None
    assert data["loss_tolerance"]["original_self_deviation"] is None
    assert "warning: the loss check was not done for fixed" in report.table(data)


def test_a_nothing_to_fix_rows_note_is_printed_under_the_table():
    # With --each, the JSON had "TL201 found 1 finding without an automatic fix"; the table showed
    # only "nothing to fix" for that row. A plain "found nothing to fix" is not repeated.
    data, _ = _result([1.0, 0.9, 0.8] + [0.7] * 9)
    assert "found nothing to fix in train.py" not in report.table(data)
    data["rows"][0].update(name="TL201", note="TL201 found 1 finding without an automatic fix "
                                              "in train.py")
    assert "TL201 found 1 finding without an automatic fix in train.py." in report.table(data)
    assert data["rows"][0]["asked_rules"] == ["TL999"] and data["asked_rules"] == ["TL101"]
    # A rule whose fix needs another's (TL103 after TL101's workers) says where it is measured.
    note = ("TL999's fix applies only once the other rules' fixes are in (TL999 found nothing to fix "
            "in train.py alone); it is measured in the TL101+TL999 row")
    data["rows"][0].update(name="TL999", note=note)
    assert note + "." in report.table(data)


def test_step_times_that_shift_sharply_are_warned_about():
    # Before: a run whose steps slowed 3x halfway read only as a wide spread, its cause unsaid.
    data, records = _result([1.0, 0.9, 0.8] + [0.7] * 9)
    assert data["unsteady_step_times"] == []
    assert "shifted sharply" not in report.table(data)
    # A loader's bursts (one slow step in five) are no shift: medians of halves ignore them.
    bursty = [0.12 if i % 5 == 0 else 0.03 for i in range(10)]
    records["original"][0].step_s = bursty
    assert report.unsteady(records) == []
    # The second half of a run 3x slower than the first: within a run.
    records["original"][1].step_s = [0.04] * 5 + [0.12] * 5
    # A whole repeat twice as slow as the others: between repeats.
    records["TL101"][2].step_s = [x * 2 for x in records["TL101"][2].step_s]
    found = {u["version"]: u for u in report.unsteady(records)}
    assert found["original"]["within_run"] == pytest.approx(3.0)
    assert found["TL101"]["between_repeats"] == pytest.approx(2.0, rel=0.05)
    assert found["TL101"]["within_run"] < report.UNSTEADY
    data["unsteady_step_times"] = report.unsteady(records)
    text = report.table(data)
    assert "warning: step times shifted sharply in original (x3.0 within a run), TL101 (x2.0 between repeats)" in text
