"""`trainlint verify SCRIPT (--rule CODES | --fixed FILE) [OPTIONS] [-- SCRIPT_ARGS...]`: the click command.

Registered by trainlint.cli as `verify`; also runnable as `python -m trainlint.verify`.
Importing this module must not import torch (the linter never does); torch is imported lazily,
only to ask whether a GPU is there for the profiler breakdown.
"""

from __future__ import annotations

import os
import signal
import sys
import tempfile
from pathlib import Path

import click

from trainlint.verify import report as report_mod
from trainlint.verify import stats, tolerance
from trainlint.verify.errors import VerifyError
from trainlint.verify.runner import (
    RunSettings,
    Stopped,
    changed_files,
    default_threads,
    directory_state,
    run_interleaved,
    run_once,
    stop_on_signals,
)
from trainlint.verify.variants import (
    expand_rules,
    file_variant,
    original,
    parse_rules,
    rule_variants,
)

EXIT_OK = 0
EXIT_REJECTED = 1
EXIT_ERROR = 2


def _positive(name: str, value: int, minimum: int = 1) -> None:
    if value < minimum:
        raise VerifyError(f"{name} must be at least {minimum} (got {value})")


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


class _VerifyCommand(click.Command):
    """`verify train.py --epochs 1` said only "No such option: --epochs": the script's own
    options go after `--`, and the message says so now."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except click.NoSuchOption as e:
            e.message += (" (options for the script go after `--`: "
                          "trainlint verify train.py --fixed fixed.py -- --epochs 1)")
            raise


@click.command(
    name="verify",
    cls=_VerifyCommand,
    context_settings={"help_option_names": ["-h", "--help"]},
    short_help="Measure a fix's speedup and check the loss curve.",
)
@click.argument("script", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("script_args", nargs=-1, type=click.UNPROCESSED)
@click.option("--rule", "rules", multiple=True, metavar="CODES",
              help="Rules whose fixes (safe and unsafe) make the fixed version, e.g. TL101,TL103.")
@click.option("--fixed", type=click.Path(dir_okay=False, path_type=Path),
              help="A hand-fixed copy of the script to compare instead.")
@click.option("--each", is_flag=True,
              help="Measure every rule's fix alone, then all together (attribution table).")
@click.option("--steps", default=20, show_default=True, help="Measured optimizer steps per run.")
@click.option("--warmup", default=5, show_default=True, help="Optimizer steps before measuring.")
@click.option("--repeats", default=3, show_default=True,
              help="Interleaved rounds (original, fixed, original, fixed, ...).")
@click.option("--nproc-per-node", "nproc", type=int, default=None,
              help="Run under torchrun with this many processes (distributed scripts).")
@click.option("--json", "json_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Write the JSON report here.")
@click.option("--report", "report_dir", type=click.Path(file_okay=False, path_type=Path),
              help="Write verify.json and verify.png (step times, loss curves) into this folder.")
@click.option("--loss-rtol", type=float, default=None,
              help="Relative loss tolerance per step, instead of the rules' own.")
@click.option("--seed", default=0, show_default=True, help="Seed set in both versions.")
@click.option("--threads", type=int, default=None,
              help="Threads per process for both versions [default: cores / processes].")
@click.option("--timeout", "timeout_s", default=600.0, show_default=True,
              help="Seconds one run may take before it is stopped.")
@click.option("--pin-loader-rng/--no-pin-loader-rng", default=True, show_default=True,
              help="Give shuffling samplers their own seeded generator in both versions, so "
                   "loader changes (persistent_workers) keep the data order.")
@click.option("--cwd", "cwd", type=click.Path(exists=True, file_okay=False, path_type=Path), default=None,
              help="Working directory of the runs [default: the script's directory].")
@click.option("--profile/--no-profile", default=None,
              help="torch.profiler breakdown of a few steps [default: on when a GPU is present].")
@click.pass_context
def verify_command(ctx: click.Context, **opts) -> None:
    """Run SCRIPT before and after a fix; report the speedup and whether the loss curve holds.

    Arguments after `--` go to the script. Only the script named here is run.
    Exit status: 0 measured (faster, no measurable change, slower) or nothing to measure (no
    fix applies), 1 rejected by the loss guard rail, 2 error; 128 + N when stopped by signal N
    (SIGTERM, SIGHUP), after ending the running script and removing the temporary files.
    """
    known: dict = {}  # what _verify had set up when it failed, for the error's report
    try:
        with stop_on_signals():
            code = _verify(**opts, known=known)
    except VerifyError as e:
        click.echo(f"trainlint verify: error: {e}", err=True)
        _write_error_report(opts, known, e)
        ctx.exit(EXIT_ERROR)
    except Stopped as e:
        # The runs were ended and their files removed on the way here; 128 + the signal's number
        # is the shell's convention for a process a signal ended.
        name = signal.Signals(e.signum).name
        click.echo(f"trainlint verify: stopped by {name}; the running script was ended and its "
                   "temporary files removed.", err=True)
        ctx.exit(128 + e.signum)
    ctx.exit(code)


def _verify(
    script: Path,
    script_args: tuple[str, ...],
    rules: tuple[str, ...],
    fixed: Path | None,
    each: bool,
    steps: int,
    warmup: int,
    repeats: int,
    nproc: int | None,
    json_path: Path | None,
    report_dir: Path | None,
    loss_rtol: float | None,
    seed: int,
    threads: int | None,
    timeout_s: float,
    profile: bool | None,
    pin_loader_rng: bool,
    cwd: Path | None,
    known: dict | None = None,
) -> int:
    known = {} if known is None else known
    codes = parse_rules(rules)
    known["rules"] = codes
    if not script.is_file():
        raise VerifyError(f"{script}: no such file")
    for path in (script, fixed):
        if path is not None and path.suffix == ".ipynb":
            # `check` reads notebooks; a run needs a script (and a notebook's cells may expect a kernel).
            raise VerifyError(f"{path}: a notebook cannot be run as a script; export it first "
                              f"(`jupyter nbconvert --to script {path.name}`) and verify the .py")
    if codes and fixed is not None:
        raise VerifyError("--rule and --fixed both name the fixed version: give one of them")
    if not codes and fixed is None:
        given = [arg for arg in script_args if arg.split("=", 1)[0] in ("--rule", "--fixed")]
        if given:
            # `verify train.py -- --steps 50 --fixed f.py`: all after `--` goes to the script.
            raise VerifyError(f"name the fixed version before `--`: `{given[0]}` came after it, which hands "
                              "it to the script")
        raise VerifyError("name the fixed version: --rule CODES (trainlint's fixes) or --fixed FILE")
    if fixed is not None and not fixed.is_file():
        raise VerifyError(f"{fixed}: no such file")
    if each and not codes:
        raise VerifyError("--each needs --rule with the rules to attribute")
    _positive("--steps", steps)
    # A step's time is measured from the previous step's end, so one step must come first.
    _positive("--warmup", warmup)
    _positive("--repeats", repeats)
    if nproc is not None:
        _positive("--nproc-per-node", nproc)
    if threads is not None:
        _positive("--threads", threads)
    if not timeout_s > 0:  # --timeout 0 was accepted, then every run "did not finish within 0 s"
        raise VerifyError(f"--timeout must be a number of seconds above 0 (got {timeout_s:g})")
    if loss_rtol is not None and not loss_rtol >= 0:
        raise VerifyError("--loss-rtol must be a number >= 0")
    if report_dir is not None:
        report_mod.require_matplotlib()
    for option, target in (("--json", json_path), ("--report", report_dir)):
        if target is not None:
            _require_writable(option, target)
    if codes:
        codes = expand_rules(codes)
        known["rules"] = codes
    script = script.resolve()
    script_text = _compiled(script)
    if fixed is not None and _compiled(fixed) == script_text:  # refused now, not after a run
        # Measured all the same (a run against itself shows the machine's noise), but said: the
        # table read as a fix found to make no measurable change.
        click.echo(f"trainlint verify: note: {fixed} is the same as {script.name}: the runs "
                   "measure run-to-run noise, not a fix", err=True)

    settings = RunSettings(
        script=str(script),
        script_args=list(script_args),
        steps=steps,
        warmup=warmup,
        nproc=nproc,
        seed=seed,
        timeout_s=timeout_s,
        threads=threads or default_threads(nproc),
        pin_loader_rng=pin_loader_rng,
        cwd=str(cwd.resolve()) if cwd is not None else "",
    )
    known["settings"] = settings
    with tempfile.TemporaryDirectory(prefix="trainlint-verify-") as tmp:
        workdir = Path(tmp)
        if codes:
            planned = rule_variants(script, codes, each, workdir)
        else:
            planned = [file_variant(fixed.resolve())]
        tolerances = {
            p.variant.name: (tolerance.user_tolerance(loss_rtol) if loss_rtol is not None
                             else tolerance.for_rules(p.variant.rules))
            for p in planned if p.variant is not None
        }
        variants = [original(script)]
        for p in planned:  # a variant two entries share runs once
            if p.variant is not None and p.variant not in variants:
                variants.append(p.variant)
        if len(variants) == 1:
            for p in planned:
                click.echo(f"trainlint verify: {p.note}; nothing to measure.")
            # --report DIR got nothing before; it gets the JSON (no picture: nothing ran).
            _write_reports(report_mod.nothing_report(settings, planned, repeats), json_path,
                           report_dir)
            return EXIT_OK

        def progress(msg: str) -> None:
            click.echo(f"trainlint verify: {msg}", err=True)

        listing = directory_state(settings.cwd)
        written: list[str] = []

        def after_first_run() -> None:
            written.extend(changed_files(listing, directory_state(settings.cwd)))
            if written:
                progress(f"warning: the script wrote into its working directory ({_names(written)}); "
                         "later runs start from what earlier ones left")

        try:
            records = run_interleaved(settings, variants, repeats, workdir, progress,
                                      after_first_run)
        except VerifyError as e:
            raise VerifyError(_hint(str(e), script_text, nproc, cwd is not None)) from None
        profiles = None
        if profile or (profile is None and _cuda_available()):
            profiles = {}
            for v in (variants[0], variants[-1]):
                progress(f"profiling {min(5, steps)} steps: {v.name}")
                rec = run_once(settings, v, repeats, workdir, profile_steps=min(5, steps))
                if rec.profile:
                    profiles[v.name] = rec.profile
        result = report_mod.build(settings, planned, records, tolerances, repeats=repeats,
                                  fixed_file=str(fixed.resolve()) if fixed else None,
                                  profiles=profiles)
        result["directory_writes"] = written
    click.echo(report_mod.table(result))
    _write_reports(result, json_path, report_dir)
    if report_dir:
        try:
            report_mod.write_picture(result, records, report_dir / "verify.png")
        except OSError as e:
            raise _WriteError(f"cannot write the report: {e}") from None
        click.echo(f"trainlint verify: wrote {report_dir / 'verify.png'}", err=True)
    if result["verdict"] in (stats.REJECTED, stats.INCONCLUSIVE):
        return EXIT_REJECTED  # a fix the loss check could not accept is never passed silently
    return EXIT_OK


def _compiled(path: Path) -> str:
    """path's text, which must compile: a file that cannot be run is refused before any run."""
    try:
        text = path.read_text(encoding="utf-8")
        compile(text, str(path), "exec")
    except (OSError, UnicodeDecodeError, SyntaxError) as e:
        raise VerifyError(f"{path}: cannot be run: {e}") from None
    return text


def _names(paths: list[str], most: int = 5) -> str:
    return ", ".join(paths[:most]) + (f" and {len(paths) - most} more" if len(paths) > most else "")


_SPAWNS_ITS_OWN = ("mp.spawn(", "multiprocessing.spawn(", "start_processes(")


def _hint(message: str, script_text: str, nproc: int | None, cwd_given: bool) -> str:
    if "without a single optimizer step" in message and any(s in script_text for s in _SPAWNS_ITS_OWN):
        # torch.multiprocessing.spawn: the steps happen in the script's own children, which the
        # harness is not in; "a hand-written update loop" and --nproc-per-node were both wrong.
        label = message.split(" ran to the end", 1)[0]
        return (f"{label} made no optimizer step in its own process: the training runs in "
                "processes the script starts itself (torch.multiprocessing.spawn), which the "
                "verifier cannot time. Measure a script that trains in its own process (for "
                "several processes, started by torchrun: --nproc-per-node N).")
    if nproc is None and "init_process_group" in script_text:
        return message + "\n(the script sets up torch.distributed: run it with --nproc-per-node N)"
    if "FileNotFoundError" in message and not cwd_given:
        # Scripts written for `python scripts/train.py` from a repository's root read paths
        # relative to that root; the runs start in the script's own directory.
        return message + ("\n(the runs start in the script's directory; if the script expects "
                          "another working directory, give it with --cwd DIR)")
    return message


class _WriteError(VerifyError):
    """The report itself could not be written: no error report is tried after it."""


def _require_writable(option: str, path: Path) -> None:
    """Refuse a report path that cannot be written before any run: it was found out only
    after minutes of measuring, and the measurement was lost. Folders on the way are made at
    writing time, so the nearest one that exists must be a writable folder."""
    nearest = path
    while not nearest.exists() and nearest != nearest.parent:
        nearest = nearest.parent
    if nearest != path and not nearest.is_dir():
        raise _WriteError(f"cannot write the report {option} {path}: {nearest} is not a folder")
    if not os.access(nearest, os.W_OK):
        raise _WriteError(f"cannot write the report {option} {path}: {nearest} is not writable")


def _write_reports(result: dict, json_path: Path | None, report_dir: Path | None) -> None:
    try:
        if json_path:
            report_mod.write_json(result, json_path)
        if report_dir:
            report_mod.write_json(result, report_dir / "verify.json")
    except OSError as e:
        raise _WriteError(f"cannot write the report: {e}") from None


def _write_error_report(opts: dict, known: dict, error: VerifyError) -> None:
    """The JSON report of a failed verify, with the same keys as a measured one and `error` set.

    --json and --report DIR wrote nothing on an error, so a CI job reading the report found no
    file. Best effort: a report that cannot be written is said, the error stays the one shown.
    """
    if not (opts.get("json_path") or opts.get("report_dir")) or isinstance(error, _WriteError):
        return
    settings = known.get("settings")
    script = settings.script if settings else str(opts["script"])
    fixed = opts.get("fixed")
    result = report_mod.skeleton(settings, script=script, rules=[],
                                 asked_rules=known.get("rules") or [],
                                 fixed_file=str(fixed.resolve()) if fixed else None,
                                 repeats=opts["repeats"])
    if settings is None:  # an option was refused: say what was asked
        result.update(script_args=list(opts["script_args"]), steps=opts["steps"],
                      warmup=opts["warmup"], seed=opts["seed"], nproc_per_node=opts["nproc"])
    result.update(verdict=report_mod.ERROR, error=str(error))
    try:
        _write_reports(result, opts.get("json_path"), opts.get("report_dir"))
    except VerifyError as e:
        click.echo(f"trainlint verify: {e}", err=True)


def main() -> None:
    verify_command.main(prog_name="trainlint verify")


if __name__ == "__main__":
    sys.exit(main())
