"""The issue's end-to-end cases: real training scripts, real torch on CPU, real torchrun.

No absolute times are asserted: verdicts come from the verifier's own statistics (ratio of the
medians over interleaved repeats, with its spread), and only where the effect is large (about 2x).
"""

from __future__ import annotations

import pytest

from trainlint.verify import stats

pytest.importorskip("torch")  # every case runs a real training script


def _measured(data: dict) -> None:
    # A rule that stops firing on its fixture turns the case into "nothing to fix": say so.
    assert data["verdict"] != "nothing to fix", data.get("note")


def _check_report_fields(data: dict) -> None:
    for key in ("script", "rules", "steps", "repeats", "before", "after", "speedup",
                "speedup_low", "speedup_high", "losses_match", "max_loss_deviation", "verdict"):
        assert key in data, key
    for side in ("before", "after"):
        assert data[side]["median_step_s"] > 0
        share = data[side]["data_wait_share"]
        assert share is None or 0.0 <= share <= 1.0  # None: no batch came from a torch DataLoader


# Longer runs average out bursts of other load on the machine (the steps mostly sleep in I/O).
LOADER_ARGS = ("--steps", "40", "--warmup", "2", "--repeats", "3")


def test_loader_bound_num_workers_is_faster_and_identical(verify, fixtures):
    result, data = verify(fixtures / "loader_bound.py", "--fixed",
                          fixtures / "loader_bound_fixed.py", *LOADER_ARGS)
    assert result.exit_code == 0, result.output
    _check_report_fields(data)
    assert data["verdict"] == stats.FASTER, data.get("pair_ratios")
    assert data["speedup_low"] > 1.0
    assert data["losses_identical"] and data["losses_match"]
    assert data["max_loss_deviation"] == 0.0
    # The original spends much of its step waiting for records (most of it on a quiet machine;
    # other load on the cores lengthens the compute part, hence the loose bound).
    assert data["before"]["data_wait_share"] > 0.2
    assert "faster" in result.stdout


def test_loader_bound_rule_tl101(verify, fixtures):
    result, data = verify(fixtures / "loader_bound.py", "--rule", "TL101", *LOADER_ARGS)
    assert result.exit_code == 0, result.output
    _measured(data)
    assert data["rules"] == ["TL101"]
    assert data["verdict"] == stats.FASTER, data.get("pair_ratios")
    assert data["losses_identical"]
    assert data["loss_tolerance"]["kind"] == "curve"


def test_a_new_iterator_every_step_keeps_its_workers_tl103(verify, fixtures):
    # `next(iter(loader))` at every step starts the workers for every batch; persistent workers
    # keep them (a large effect, several times over on 2 cores, so the verdict is asserted).
    result, data = verify(fixtures / "fresh_iterator_steps.py", "--rule", "TL103",
                          "--steps", "10", "--warmup", "2", "--repeats", "3")
    assert result.exit_code == 0, result.output
    _measured(data)
    assert data["verdict"] == stats.FASTER, data.get("pair_ratios")
    assert data["losses_match"], data["max_loss_deviation"]


# Five rounds: the spread's t-interval over rounds needs several (two rounds' quantile is 12.7),
# and with three one disturbed round (seen once in CI: pair ratios 1.18, 2.43, 2.35) pulls the
# interval's low end under 1 although the effect is about 2x; five absorb one such round. Ten
# steps a round: with four, a round lasted well under a second and two disturbed rounds of five
# (seen in a local CI run: 1.16, 4.00, 1.09, 2.20, 2.53) still reached below 1; on an idle
# machine ten give 1.92 to 2.26 (speedup 2.15, spread 1.77-2.38).
DDP_ARGS = ("--nproc-per-node", "2", "--steps", "10", "--warmup", "1", "--repeats", "5")


def test_ddp_accumulation_no_sync_is_faster_under_torchrun(verify, fixtures):
    result, data = verify(fixtures / "ddp_accum.py", "--fixed", fixtures / "ddp_accum_fixed.py",
                          *DDP_ARGS)
    assert result.exit_code == 0, result.output
    _check_report_fields(data)
    assert data["nproc_per_node"] == 2
    assert data["before"]["data_wait_share"] is None  # its batches are tensors in memory, no DataLoader
    assert data["verdict"] == stats.FASTER, data.get("pair_ratios")
    # no_sync sums locally before one all-reduce: equal up to float reassociation.
    assert data["losses_match"]
    assert data["max_loss_deviation"] < 1e-5


def test_ddp_accumulation_rule_tl301(verify, fixtures):
    result, data = verify(fixtures / "ddp_accum.py", "--rule", "TL301", *DDP_ARGS)
    assert result.exit_code == 0, result.output
    _measured(data)
    assert data["verdict"] == stats.FASTER, data.get("pair_ratios")
    assert data["losses_match"]


def test_accelerate_accumulation_rule_tl301(verify, fixtures):
    """The same measurement on a script written for accelerate: the harness finds its wrapped
    optimizer's steps and its `accelerator.backward` losses, and TL301's fix for it pays off."""
    pytest.importorskip("accelerate", reason="accelerate is in the dev extra")
    result, data = verify(fixtures / "accelerate_accum.py", "--rule", "TL301", *DDP_ARGS)
    assert result.exit_code == 0, result.output
    _measured(data)
    assert data["verdict"] == stats.FASTER, data.get("pair_ratios")
    assert data["losses_match"] and data["max_loss_deviation"] < 1e-5


def test_change_that_does_nothing_is_no_measurable_change(verify, fixtures):
    result, data = verify(fixtures / "tight_loop.py", "--fixed", fixtures / "tight_loop_noop.py",
                          "--steps", "25", "--warmup", "3", "--repeats", "3",
                          # One thread: on an oversubscribed machine a two-thread matmul waits
                          # for its descheduled twin, which moves whole runs around.
                          "--threads", "1")
    assert result.exit_code == 0, result.output
    assert data["verdict"] == stats.NO_CHANGE, (data["speedup_low"], data["speedup_high"])
    assert data["speedup_low"] <= 1.0 <= data["speedup_high"]
    assert data["losses_identical"]
    # No DataLoader: the table says the data wait was not measured, not that it was 0%.
    assert data["before"]["data_wait_share"] is None and data["after"]["data_wait_share"] is None
    assert "original  " in result.stdout and " 0%" not in result.stdout


def test_changed_learning_rate_is_rejected(verify, fixtures):
    result, data = verify(fixtures / "tight_loop.py", "--fixed", fixtures / "tight_loop_lr.py",
                          "--steps", "5", "--warmup", "1", "--repeats", "1")
    assert result.exit_code == 1, result.output
    assert data["verdict"] == stats.REJECTED
    assert not data["losses_match"]
    assert data["max_loss_deviation"] > 1e-3
    assert "rejected" in result.stdout


def test_each_attributes_every_fix(verify, fixtures):
    # Every rule's fix alone, then all together: one row each (a single quick round; the
    # verdicts are not asserted, the table's shape and the guard rail are).
    result, data = verify(fixtures / "short_epochs.py", "--rule", "TL103,TL104", "--each",
                          "--steps", "6", "--warmup", "1", "--repeats", "1")
    assert result.exit_code == 0, result.output
    assert [r["name"] for r in data["rows"]] == ["TL103", "TL104", "TL103+TL104"]
    assert data["rules"] == ["TL103", "TL104"]
    for row in data["rows"]:
        assert row["median_step_s"] > 0 and row["speedup"] > 0
        # Order pinned: persistent workers and prefetch depth keep the losses bit-identical.
        assert row["losses_identical"], row
    for name in ("TL103 ", "TL104 ", "TL103+TL104 "):
        assert name in result.stdout


# Scripts whose loop is the framework's: the verifier counts the optimizer steps Lightning's and
# transformers' Trainers take, and compares the losses they compute, with no loop in the script.
FRAMEWORK_CASES = [("lightning_classifier.py", "TL201", "pytorch_lightning"),
                   ("hf_trainer_regression.py", "TL202", "transformers"),
                   ("accelerate_regression.py", "TL102", "accelerate")]


@pytest.mark.parametrize(("script", "rule", "framework"), FRAMEWORK_CASES,
                         ids=[case[0] for case in FRAMEWORK_CASES])
def test_a_script_whose_loop_is_a_frameworks_is_measured(verify, fixtures, script, rule, framework, monkeypatch):
    pytest.importorskip(framework)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # nothing to download; CI may reach only package registries
    result, data = verify(fixtures.parent / "frameworks" / script, "--rule", rule,
                          "--steps", "6", "--warmup", "1", "--repeats", "1")
    assert result.exit_code == 0, result.output
    _measured(data)
    _check_report_fields(data)
    assert data["rules"] == [rule]
    # None of these fixes changes what is computed: the loss curves are the same.
    assert data["losses_identical"] and data["losses_match"], data.get("max_loss_deviation")
