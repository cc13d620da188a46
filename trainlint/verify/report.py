"""What the verifier reports: the result value (which is the JSON report), the terminal table, and
the picture (step times per step and the loss curves, before vs after)."""

from __future__ import annotations

import json
import math
from pathlib import Path

from trainlint.verify import stats, tolerance
from trainlint.verify.errors import VerifyError
from trainlint.verify.runner import RunRecord, RunSettings
from trainlint.verify.variants import Planned

NOTHING_TO_FIX = "nothing to fix"


def _side(runs: list[RunRecord]) -> dict:
    steps = [r.step_s for r in runs]
    return {
        # The median over repeats of each run's mean step time (see stats).
        "median_step_s": stats.median([stats.mean(s) for s in steps]),
        "median_of_steps_s": stats.median([x for s in steps for x in s]),
        # Waiting is measured in torch's DataLoader only: a script that draws no batch from one
        # (its own iterator, tensors in memory) gets no share, not a 0% that says it never waits.
        "data_wait_share": None if all(r.loader_batches == 0 for r in runs)
        else stats.data_wait_share(steps, [r.data_wait_s for r in runs]),
        "step_s": steps,
        "losses": [_num(x) for x in runs[0].losses],
        "timing": runs[0].timing_source,
        # Steps of optimizers other than the counted one, in the first repeat (rank 0): recorded
        # and shown nowhere before, so a GAN's step read as one optimizer's step (see table()).
        "other_optimizer_steps": runs[0].extra.get("other_optimizer_steps", 0),
        # What the harness saw in the first repeat, said on stderr only before (runner._run_notes):
        # a script that caught the stop and trained on; counted steps that moved to another
        # optimizer (a new training stage).
        "stop_caught": bool(runs[0].extra.get("stop_caught")),
        "optimizer_switches": runs[0].extra.get("optimizer_switches", 0),
    }


# Step times of one version that swing by more than this factor, between its repeats or between
# the halves of one run, are worth a warning (see unsteady()).
UNSTEADY = 1.5


def unsteady(records: dict[str, list[RunRecord]]) -> list[dict]:
    """The versions whose step times shifted sharply: between repeats (a run's mean step time
    against another's) or inside a run (the median of its first half of steps against its second's).

    The verdict's spread already covers such noise, but it did not say where the noise came from:
    a run whose steps slowed 3x halfway (another process took the cores, or the script's threads
    outnumbered them) read as an unexplained wide spread. Medians of halves, not means, so that a
    loader's bursts (one slow step, many fast ones) do not count as a shift.
    """
    found = []
    for name, runs in records.items():
        means = [stats.mean(r.step_s) for r in runs if r.step_s]
        between = max(means) / min(means) if means and min(means) > 0 else 1.0
        within = 1.0
        for r in runs:
            half = len(r.step_s) // 2
            if half >= 2:
                a, b = stats.median(r.step_s[:half]), stats.median(r.step_s[half:])
                if min(a, b) > 0:
                    within = max(within, max(a, b) / min(a, b))
        if between > UNSTEADY or within > UNSTEADY:
            found.append({"version": name, "between_repeats": round(between, 3),
                          "within_run": round(within, 3)})
    return found


def _num(x: float) -> float | None:
    # JSON has no inf/nan.
    return None if x is None or math.isinf(x) or math.isnan(x) else x


def _data_order(before: list[RunRecord], pin_loader_rng: bool) -> str:
    """What the run says about the data order, for a curve tolerance's reason.

    A fact of the run, not of the rule: the reason said "(data order pinned)" also for a script
    that seeds its own loader's shuffling, which the verifier leaves alone.
    """
    extra = before[0].extra
    if extra.get("own_generator_loaders"):
        return "data order: the script's own loader generator (not pinned by the verifier)"
    if not pin_loader_rng:
        return "data order not pinned (--no-pin-loader-rng)"
    if extra.get("pinned_loaders"):
        return "data order pinned by the verifier"
    return ""


def compare(
    before: list[RunRecord], after: list[RunRecord], tol: tolerance.Tolerance,
    pin_loader_rng: bool = True,
) -> dict:
    if tol.kind == "curve":
        order = _data_order(before, pin_loader_rng)
        if order:
            tol = tolerance.Tolerance(tol.kind, tol.rtol, f"{tol.reason}; {order}")
    sp = stats.compare_steps([r.step_s for r in before], [r.step_s for r in after])
    loss = tolerance.check([r.losses for r in before], [r.losses for r in after], tol)
    # No step compared: the deviations are not 0, they were never measured (the JSON said 0.0).
    seen = bool(loss.steps_compared)
    if loss.within:
        verdict = sp.verdict
    else:
        verdict = stats.INCONCLUSIVE if loss.inconclusive else stats.REJECTED
    return {
        "speedup": sp.speedup,
        "speedup_low": sp.low,
        "speedup_high": sp.high,
        "pair_ratios": sp.pair_ratios,
        # None: no scalar loss went through backward in either version; nothing to guard.
        # None also when the check cannot tell (the original does not reproduce itself).
        "losses_match": loss.within if loss.steps_compared and not loss.inconclusive else None,
        "loss_check_inconclusive": loss.inconclusive,
        "loss_steps_compared": loss.steps_compared,
        "losses_identical": loss.identical if seen else None,
        "max_loss_deviation": _num(loss.max_deviation) if seen else None,
        "loss_deviation_compared": _num(loss.compared_deviation) if seen else None,
        "loss_tolerance": {**tol.to_json(), "allowed": loss.allowed,
                           "original_self_deviation": _num(loss.self_deviation) if seen else None},
        "loss_summary": loss.describe(),
        "verdict": verdict,
    }


ERROR = "error"

# Keys every JSON report has, measured or not (a "nothing to fix" report lacked script_args, cwd,
# fixed_file, warmup, seed and rows; an error wrote none): null where nothing was measured.
_MEASURED_KEYS = (
    "before", "after", "median_step_s", "data_wait_share", "speedup", "speedup_low",
    "speedup_high", "pair_ratios", "losses_match", "loss_check_inconclusive",
    "loss_steps_compared", "losses_identical", "max_loss_deviation", "loss_deviation_compared",
    "loss_tolerance", "loss_summary", "verdict", "note", "profile", "error",
)


# Keys of every entry of `rows`, measured or not ("nothing to fix" rows had five of them, and a
# measured row had no step times or loss curve of its own): null where nothing was measured.
_ROW_KEYS = (
    "name", "rules", "asked_rules", "after", "median_step_s", "data_wait_share", "other_optimizer_steps",
    "speedup", "speedup_low", "speedup_high", "pair_ratios", "losses_match", "loss_check_inconclusive",
    "loss_steps_compared", "losses_identical", "max_loss_deviation", "loss_deviation_compared",
    "loss_tolerance", "loss_summary", "verdict", "note",
)


def _row(p: Planned, **measured) -> dict:
    """A `rows` entry with every key (_ROW_KEYS)."""
    row = dict.fromkeys(_ROW_KEYS)
    row.update(name=p.name, rules=p.rules, asked_rules=p.asked, note=p.note or None, **measured)
    return row


def skeleton(settings: RunSettings | None, *, script: str, rules: list[str], asked_rules: list[str],
             fixed_file: str | None, repeats: int) -> dict:
    """A report with every key, the measurements null: build() fills it, an error or "nothing
    to fix" leaves it so. settings is None for an error before the runs were set up."""
    report: dict = {
        "script": script,
        "script_args": settings.script_args if settings else None,
        "cwd": settings.cwd if settings else None,
        "rules": rules,
        "asked_rules": asked_rules,
        "fixed_file": fixed_file,
        "steps": settings.steps if settings else None,
        "warmup": settings.warmup if settings else None,
        "repeats": repeats,
        "nproc_per_node": settings.nproc if settings else None,
        "threads_per_process": settings.threads if settings else None,
        "seed": settings.seed if settings else None,
        "directory_writes": [],
        "unsteady_step_times": [],
        "rows": [],
    }
    report.update(dict.fromkeys(_MEASURED_KEYS))
    return report


def nothing_report(settings: RunSettings, planned: list[Planned], repeats: int) -> dict:
    """No rule had a fix: nothing ran; every row says why."""
    final = planned[-1]
    report = skeleton(settings, script=settings.script, rules=final.rules, asked_rules=final.asked,
                      fixed_file=None, repeats=repeats)
    report["rows"] = [_row(p, verdict=NOTHING_TO_FIX) for p in planned]
    report.update(verdict=NOTHING_TO_FIX, note="; ".join(p.note for p in planned))
    return report


def build(
    settings: RunSettings,
    planned: list[Planned],
    records: dict[str, list[RunRecord]],
    tolerances: dict[str, tolerance.Tolerance],
    *,
    repeats: int,
    fixed_file: str | None,
    profiles: dict[str, dict] | None = None,
) -> dict:
    before = records["original"]
    rows = []
    for p in planned:
        if p.variant is None:
            rows.append(_row(p, verdict=NOTHING_TO_FIX))
            continue
        after = records[p.variant.name]
        side = _side(after)
        rows.append(_row(p, after=side, median_step_s=side["median_step_s"],
                         data_wait_share=side["data_wait_share"],
                         other_optimizer_steps=side["other_optimizer_steps"],
                         **compare(before, after, tolerances[p.variant.name], settings.pin_loader_rng)))
    final = planned[-1]  # the version with every fix (or the --fixed file)
    # rules: those whose fixes the version with all fixes holds; asked_rules: all asked for.
    report = skeleton(settings, script=settings.script, rules=final.rules, asked_rules=final.asked,
                      fixed_file=fixed_file, repeats=repeats)
    report["before"] = _side(before)
    if final.variant is None:
        report.update({"after": None, "speedup": None, "speedup_low": None, "speedup_high": None,
                       "losses_match": None, "max_loss_deviation": None,
                       "verdict": NOTHING_TO_FIX, "note": final.note})
    else:
        report.update({k: v for k, v in rows[-1].items()
                       # (a row's step counts are in "after" already)
                       if k not in ("name", "rules", "asked_rules", "other_optimizer_steps")})
    report["rows"] = rows
    report["unsteady_step_times"] = unsteady(records)
    if profiles:
        report["profile"] = profiles
    return report


def _ms(s: float | None) -> str:
    return "-" if s is None else f"{s * 1000:.2f} ms"


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x * 100:.0f}%"


# A spread whose ends are more than this factor apart is too wide to say anything (see table()).
WIDE_SPREAD = 4.0


def _bound(x: float) -> str:
    """An end of the speedup's spread: two decimals, and no 0.00 or seven-digit ends where the
    interval of two rounds runs off.

    An end near 1.0 gets the digits that keep it off 1.00: "0.96x [0.91-1.00] slower" read as a
    spread touching 1.0, which "slower" (the whole spread below 1.0) excludes; 0.997 is shown.
    """
    if x < 0.01:
        return "<0.01"
    if x > 100:
        return ">100"
    text = f"{x:.2f}"
    digits = 2
    while float(text) == 1.0 and x != 1.0 and digits < 6:
        digits += 1
        text = f"{x:.{digits}f}"
    return text


def table(report: dict) -> str:
    ranks = f"torchrun x{report['nproc_per_node']}" if report["nproc_per_node"] else "1 process"
    head = (f"trainlint verify {Path(report['script']).name}: {report['repeats']} interleaved "
            f"repeats x {report['steps']} steps after {report['warmup']} warm-up, {ranks}, "
            f"step times from {report['before']['timing']} clock")
    cols = ["version", "step time", "data wait", "speedup [spread]", "loss vs original", "verdict"]
    lines = [[ "original", _ms(report["before"]["median_step_s"]),
               _pct(report["before"]["data_wait_share"]), "-", "-", "-"]]
    for row in report["rows"]:
        if row["verdict"] == NOTHING_TO_FIX:
            lines.append([row["name"], "-", "-", "-", "-", NOTHING_TO_FIX])
            continue
        lines.append([
            row["name"],
            _ms(row["median_step_s"]),
            _pct(row["data_wait_share"]),
            f"{row['speedup']:.2f}x [{_bound(row['speedup_low'])}-{_bound(row['speedup_high'])}]",
            row["loss_summary"],
            row["verdict"],
        ])
    widths = [max(len(c), *(len(r[i]) for r in lines)) for i, c in enumerate(cols)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    out = [head, fmt.format(*cols).rstrip(), fmt.format(*("-" * w for w in widths))]
    out += [fmt.format(*r).rstrip() for r in lines]
    if report["repeats"] < stats.MIN_ROUNDS_FOR_CLAIM:
        out.append(f"one repeat: no speed claim without run-to-run noise "
                   f"(use --repeats {stats.MIN_ROUNDS_FOR_CLAIM} or more).")
    elif any(r["verdict"] == stats.NO_CHANGE and r.get("speedup_low")
             and r["speedup_high"] / r["speedup_low"] > WIDE_SPREAD for r in report["rows"]):
        # Only where the verdict is "no measurable change": a wide spread wholly below (or above)
        # 1.0 still tells the direction, and "slower" at 0.13x [0.04-0.47] followed by "cannot
        # tell a speed change from noise" contradicted itself.
        # Two rounds put a t-quantile of 12.7 on the run-to-run noise: a spread like 0.02-40 says
        # only that these numbers cannot tell; more rounds (or steps per run) narrow it.
        out.append(f"a spread this wide cannot tell a speed change from noise: use more --repeats "
                   f"(now {report['repeats']}) or --steps.")
    for row in report["rows"]:
        if row["verdict"] != NOTHING_TO_FIX and row.get("note"):
            out.append(f"{row['note']}: the same fixed version, measured once.")
        elif row["verdict"] == NOTHING_TO_FIX and row.get("note") and not row["note"].startswith(
                f"{row['name']} found nothing to fix"):
            # With --each the JSON said "TL201 found 1 finding without an automatic fix" and the
            # table only "nothing to fix" (a plain "found nothing" would only repeat the row).
            out.append(f"{row['note']}.")
    for row in report["rows"]:
        t = row.get("loss_tolerance")
        if row["verdict"] == stats.REJECTED:
            band = ("its window means left their noise band" if t["kind"] == "curve"
                    else f"{t['kind']}, {t['allowed']:.2g}")
            out.append(f"{row['name']}: rejected, the loss curve left its tolerance "
                       f"({band}; {t['reason']}).")
        elif row["verdict"] == stats.INCONCLUSIVE:
            out.append(f"{row['name']}: the loss check cannot tell: the original's own repeats "
                       f"differ by {t['original_self_deviation']:.2g} ({t['kind']}), beyond what "
                       f"any tolerance may be widened to ({tolerance.widening_cap_of(t):.2g}); "
                       "make the script reproducible (a fixed seed, no state carried between "
                       "runs) or compare the curves yourself.")
    out += _other_optimizer_notes(report)
    unchecked = [row["name"] for row in report["rows"]
                 if row["verdict"] != NOTHING_TO_FIX and not row.get("loss_steps_compared")]
    if unchecked:
        # The loss column's "no loss seen at backward" read like a result; the verdict then
        # covers speed alone, and nothing under the table said so.
        out.append(f"warning: the loss check was not done for {', '.join(unchecked)}: no "
                   "backward() on a single scalar loss was seen (a `.backward(gradient)` on a "
                   "non-scalar, or several losses at once, is not captured); the verdict covers "
                   "speed only: compare the training curves yourself.")
    shifts = report.get("unsteady_step_times") or []
    if shifts:
        parts = [f"{u['version']} (x{max(u['between_repeats'], u['within_run']):.1f} "
                 f"{'between repeats' if u['between_repeats'] >= u['within_run'] else 'within a run'})"
                 for u in shifts]
        out.append(f"warning: step times shifted sharply in {', '.join(parts)}: the machine's load "
                   "changed during the runs (other processes, or more threads than cores: see "
                   "--threads); the spread includes it, a quieter machine narrows it.")
    written = report.get("directory_writes")
    if written:
        shown = ", ".join(written[:5]) + (f" and {len(written) - 5} more" if len(written) > 5 else "")
        out.append(f"warning: the first run wrote into its working directory ({shown}): runs "
                   "influence each other (a later run may resume from a checkpoint an earlier "
                   "one saved), so neither the times nor the loss curves compare like for like; "
                   "have the script write elsewhere, or clear it between runs.")
    prof = report.get("profile")
    if prof:
        out.append("")
        out.append("profiler breakdown (share of wall time over a few steps):")
        for name, p in prof.items():
            shares = ", ".join(f"{k} {v * 100:.0f}%" for k, v in p["shares"].items() if v is not None)
            if p.get("device", True):
                out.append(f"  {name}: {shares}; compute-time ratio {p['compute_time_ratio'] * 100:.1f}%")
            else:
                out.append(f"  {name}: {shares}; no GPU kernel in this run: kernels, memcpy, communication and "
                           "the compute-time ratio are measured on a GPU")
    return "\n".join(out)


def _other_optimizer_notes(report: dict) -> list[str]:
    """A note naming the versions in which optimizers other than the counted one stepped.

    The harness counted them (other_optimizer_steps) but nothing said so: a GAN's "step time"
    read as one optimizer's step, though it spans the discriminator's step and the generator's.
    """
    versions = [("original", report["before"])]
    versions += [(row["name"], row) for row in report["rows"] if row["verdict"] != NOTHING_TO_FIX]
    counts = [f"{name} {side['other_optimizer_steps']}" for name, side in versions
              if side.get("other_optimizer_steps")]
    if not counts:
        return []
    return [f"note: steps of another optimizer were not counted as steps ({', '.join(counts)} in "
            "the first repeat): the verifier counts the steps of one optimizer, the first to step, "
            "so with two that take turns (a GAN's) a step's time spans both optimizers' work; its "
            "loss is the counted optimizer's own."]


def write_json(report: dict, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


def require_matplotlib() -> None:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise VerifyError(
            "--report needs matplotlib for the picture: pip install 'trainlint[verify]'"
        ) from None


def write_picture(report: dict, records: dict[str, list[RunRecord]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")  # no display needed
    import matplotlib.pyplot as plt

    fig, (ax_t, ax_l) = plt.subplots(2, 1, figsize=(9, 7), sharex=False)
    warmup = report["warmup"]
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, (name, runs) in enumerate(records.items()):
        c = colors[i % len(colors)]
        for k, r in enumerate(runs):
            xs = list(range(warmup + 1, warmup + 1 + len(r.step_s)))
            ax_t.plot(xs, [s * 1000 for s in r.step_s], color=c, alpha=0.35 if k else 0.9,
                      label=name if k == 0 else None, marker=".", linewidth=1)
        ax_l.plot(range(1, len(runs[0].losses) + 1), runs[0].losses, color=c, label=name,
                  linestyle="-" if i == 0 else "--", marker=".")
    ax_t.set_xlabel("optimizer step")
    ax_t.set_ylabel("step time (ms)")
    ax_t.set_title(f"{Path(report['script']).name}: step times (every repeat), verdict: "
                   f"{report['verdict']}")
    ax_t.legend()
    ax_l.axvline(warmup + 0.5, color="grey", linewidth=0.8, linestyle=":")
    ax_l.set_xlabel("optimizer step (dotted line: end of warm-up)")
    ax_l.set_ylabel("loss (first repeat)")
    ax_l.legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
