"""Launching the script (plain python or torchrun) under the harness, and interleaving versions.

Each run is a fresh process tree started from the script's own directory, with the same seed,
thread counts and hash seed for every version, so the only difference between runs is the code.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from trainlint.verify.errors import VerifyError
from trainlint.verify.harness import ENV_VAR

# The directory that holds the trainlint package, so the child finds the harness even when
# trainlint is not installed (run from a checkout).
_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])


class Stopped(BaseException):
    """SIGTERM or SIGHUP reached the verifier (a timeout, a CI cancel, scancel, a closed terminal).

    Raised from the signal handler (stop_on_signals) wherever the verifier is, so that the same
    unwinding as Ctrl-C runs: the running script's process group is ended (_run_once), the fixed
    version's hidden copy beside the script is removed (run_once) and so is the temp folder. A
    BaseException, as KeyboardInterrupt is, so that no `except Exception` swallows it.
    """

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


@contextmanager
def stop_on_signals():
    """Turn SIGTERM and SIGHUP into Stopped while the runs go on; the old handlers after.

    Before, either signal ended the verifier at once: the script's process group (a session of
    its own, so it got no signal) ran on orphaned, and the hidden copy and the temp folder stayed.
    A second signal while the first one's cleanup runs is ignored, so the cleanup finishes.
    Outside the main thread (where Python allows no handler) nothing is installed.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    fired: list[int] = []

    def handler(signum, _frame):
        if fired:
            return
        fired.append(signum)
        raise Stopped(signum)

    old = {s: signal.signal(s, handler) for s in STOP_SIGNALS}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


@dataclass
class Variant:
    """One version of the script: the original, or a fixed copy."""

    name: str  # "original", "TL101", "TL101+TL103", "fixed"
    rules: list[str]
    code_path: str  # file whose code runs (the original script for the original)


@dataclass
class RunSettings:
    script: str  # absolute path of the script the user named
    script_args: list[str]
    steps: int
    warmup: int
    nproc: int | None  # None: plain python; a number: torchrun with that many processes
    seed: int = 0
    timeout_s: float = 600.0
    threads: int | None = None
    pin_loader_rng: bool = True
    python: str = sys.executable
    # The runs' working directory: the script's own by default (relative data paths written for
    # `cd scripts && python train.py`); --cwd for scripts meant to run from a repository's root.
    cwd: str = ""

    def __post_init__(self) -> None:
        self.cwd = self.cwd or os.path.dirname(self.script)


@dataclass
class RunRecord:
    variant: str
    repeat: int
    step_s: list[float]  # measured steps only (after warm-up); slowest rank per step
    data_wait_s: list[float]  # same steps, rank 0
    all_step_s: list[float]  # every step including warm-up (for the picture)
    losses: list[float]  # per optimizer step, rank 0, including warm-up
    wall_s: float
    ranks: int
    profile: dict | None = None
    timing_source: str = "wall"
    loader_batches: int | None = None  # batches rank 0 drew from torch DataLoaders (None: not counted)
    extra: dict = field(default_factory=dict)


def default_threads(nproc: int | None) -> int:
    """Threads per process, the same for every version: the cores shared among the ranks."""
    cores = os.cpu_count() or 1
    return max(1, cores // max(1, nproc or 1))


RANK_LOGS = "rank-logs"  # torchrun's --log-dir inside a run's folder (see _rank_output)


def _command(settings: RunSettings, out_dir: Path | None = None) -> list[str]:
    harness = ["-m", "trainlint.verify.harness"]
    if settings.nproc is None:
        return [settings.python, *harness, *settings.script_args]
    # --tee 3: each rank's stdout and stderr also go to a file of its own, so a failing rank's
    # output can be shown apart from the others' (the console copy gets a "[defaultR]:" prefix).
    logs = ["--tee", "3", "--log-dir", str(out_dir / RANK_LOGS)] if out_dir is not None else []
    return [
        settings.python,
        "-m",
        "torch.distributed.run",
        "--standalone",
        f"--nproc-per-node={settings.nproc}",
        *logs,
        *harness,
        *settings.script_args,
    ]


def _env(settings: RunSettings, cfg: dict) -> dict[str, str]:
    env = dict(os.environ)
    path = env.get("PYTHONPATH")
    env["PYTHONPATH"] = _PACKAGE_ROOT + (os.pathsep + path if path else "")
    threads = str(settings.threads or default_threads(settings.nproc))
    # Pinned for every version alike (torchrun would otherwise pick its own).
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        env[var] = threads
    env["PYTHONHASHSEED"] = str(settings.seed)
    env[ENV_VAR] = json.dumps(cfg)
    return env


def _tail(path: Path, lines: int = 25, chars: int = 4000) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    tail = "\n".join(text.rstrip().splitlines()[-lines:])
    return tail[-chars:]


# A stderr tail with fewer lines than this (a warning, nothing) may not hold the cause: the
# stdout tail is shown too.
_SHORT_STDERR_LINES = 3


def _output_tail(stdout_path: Path, stderr_path: Path) -> str:
    """What the script last printed, for a failure's message: stderr's tail, and stdout's too
    when stderr says little.

    Only stderr's tail was shown, empty for a script that logs its fatal message to stdout
    (logging.basicConfig(stream=sys.stdout)) and then exits 1.
    """
    err = _tail(stderr_path)
    parts = []
    if err:
        parts.append(f"Its stderr ends with:\n{err}")
    if len(err.splitlines()) < _SHORT_STDERR_LINES:
        out = _tail(stdout_path)
        if out:
            parts.append(f"Its stdout ends with:\n{out}")
    return "\n".join(parts) if parts else "It printed nothing to stdout or stderr."


def run_once(
    settings: RunSettings,
    variant: Variant,
    repeat: int,
    workdir: Path,
    *,
    profile_steps: int = 0,
) -> RunRecord:
    """Run one version once; raise VerifyError with a plain reason when it does not measure."""
    beside = _copy_beside(settings.script, variant.code_path)
    try:
        return _run_once(settings, variant, repeat, workdir, profile_steps, beside or variant.code_path)
    except VerifyError as e:
        if not beside:
            raise
        raise VerifyError(str(e).replace(beside, _shown_name(settings, variant))) from None
    finally:
        if beside:
            try:
                os.unlink(beside)
            except OSError:
                pass


HIDDEN_PREFIX = ".trainlint-verify-"


def _shown_name(settings: RunSettings, variant: Variant) -> str:
    """What a fixed version's traceback names instead of its hidden copy, gone by the time the
    message is read (it named `.trainlint-verify-XXXX-train.py`): the --fixed file, or says
    whose copy it was."""
    if variant.name == "fixed":
        return variant.code_path
    return f"(trainlint's fixed copy of {os.path.basename(settings.script)})"


def _copy_beside(script: str, code_path: str) -> str | None:
    """A copy of a fixed version's code in the script's own directory, under a hidden name.

    spawn/forkserver DataLoader workers re-import the main module from its file; pointing them at
    this copy (harness._spawn_main_from) makes them run the fixed code, and a copy beside the
    script keeps ``__file__``-relative paths in those workers where they were. None for the
    original, or when the directory is not writable (the copy in the work folder is used then).
    """
    if os.path.abspath(code_path) == os.path.abspath(script):
        return None
    directory, name = os.path.split(script)
    try:
        fd, path = tempfile.mkstemp(prefix=HIDDEN_PREFIX, suffix=f"-{name}", dir=directory)
    except OSError:
        return None
    try:
        with os.fdopen(fd, "wb") as f, open(code_path, "rb") as src:
            f.write(src.read())
    except OSError:
        os.unlink(path)
        return None
    return path


def _run_once(
    settings: RunSettings, variant: Variant, repeat: int, workdir: Path, profile_steps: int,
    code_path: str,
) -> RunRecord:
    out_dir = Path(tempfile.mkdtemp(prefix=f"{variant.name}-{repeat}-", dir=workdir))
    cfg = {
        "script": settings.script,
        "code_path": code_path,
        "steps": settings.steps,
        "warmup": settings.warmup,
        "seed": settings.seed,
        "out_dir": str(out_dir),
        "threads": settings.threads or default_threads(settings.nproc),
        "pin_loader_rng": settings.pin_loader_rng,
        "profile_steps": profile_steps,
    }
    stdout_path = out_dir / "stdout.txt"
    stderr_path = out_dir / "stderr.txt"
    label = "the original script" if variant.name == "original" else f"the fixed version ({variant.name})"
    t0 = time.perf_counter()
    with open(stdout_path, "wb") as out, open(stderr_path, "wb") as err:
        # A session of its own so that a timeout can end the whole tree (torchrun and its ranks,
        # DataLoader workers) and nothing else.
        proc = subprocess.Popen(
            _command(settings, out_dir),
            cwd=settings.cwd,
            env=_env(settings, cfg),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            start_new_session=True,
        )
        try:
            rc = proc.wait(timeout=settings.timeout_s)
        except BaseException as e:
            # A timeout, Ctrl-C, or SIGTERM/SIGHUP (Stopped): the run's own session does not see
            # the signal the verifier got.
            _kill_tree(proc)
            if not isinstance(e, subprocess.TimeoutExpired):
                raise
            needed = settings.warmup + (profile_steps or settings.steps)
            raise VerifyError(
                f"{label} did not finish {needed} steps within "
                f"{settings.timeout_s:g} s{_progress(out_dir, needed, timed_out=True)} "
                "(raise --timeout, or lower --steps). "
                + _output_tail(stdout_path, stderr_path)
            ) from None
    wall = time.perf_counter() - t0
    rank_files = sorted(p for p in out_dir.glob("rank*.json") if not p.name.endswith(".error.json"))
    if rc != 0:
        needed = settings.warmup + (profile_steps or settings.steps)
        failed = _first_failed_rank(out_dir)
        if failed is not None:
            rank, tail, how = failed
            output = _rank_output(out_dir, rank)
            raise VerifyError(f"{label}: torchrun exited with status {rc}: rank {rank} {how} first,"
                              f"{_progress(out_dir, needed, rank=rank)}. "
                              f"Its traceback ends with:\n{tail}" + output)
        raise VerifyError(f"{label} exited with status {rc}{_progress(out_dir, needed)}. "
                          + _output_tail(stdout_path, stderr_path))
    if not rank_files:
        raise VerifyError(
            f"{label} exited without the harness reporting (did it replace the process?). "
            + _output_tail(stdout_path, stderr_path)
        )
    ranks = [json.loads(p.read_text()) for p in rank_files]
    ranks.sort(key=lambda r: r["rank"])
    needed = settings.warmup + (profile_steps or settings.steps)
    for r in ranks:
        seen = r["steps_seen"]
        if seen == 0:
            raise VerifyError(
                f"{label} ran to the end without a single optimizer step "
                "(the verifier counts torch.optim optimizer steps; a hand-written update loop "
                "cannot be measured)."
            )
        if seen < needed:
            others = r.get("other_optimizer_steps", 0)
            raise VerifyError(
                f"{label} finished after {seen} optimizer steps, fewer than the "
                f"{needed} asked for (--warmup {settings.warmup} + --steps "
                f"{profile_steps or settings.steps}); lower --steps or give the script more data."
                + (f" (It also made {others} steps of other optimizers, not counted: the "
                   "verifier counts one optimizer, the first, or one that steps twice in a row "
                   "after it.)" if others else "")
            )
    return _record(variant.name, repeat, settings.warmup, ranks, wall)


def _read_progress(out_dir: Path) -> dict[int, dict]:
    """Rank -> the harness's progress record (harness._write_progress), for the ranks that wrote one."""
    found = {}
    for path in out_dir.glob("rank*.progress"):
        try:
            found[int(path.name[4:-len(".progress")])] = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
    return found


def _progress(out_dir: Path, needed: int, rank: int | None = None, timed_out: bool = False) -> str:
    """How far a run that failed or timed out got, as a clause for its message ("" if unknown).

    The messages said only that the script failed or did not finish in time: not whether it died
    at its first step or near the end, nor whether a run that timed out had hung before training
    or mid-way. ``rank``: the failing rank's count (each rank has its own); otherwise the lowest.
    """
    records = _read_progress(out_dir)
    if rank is not None and rank in records:
        records = {rank: records[rank]}
    if not records:
        return ""
    slowest = min(records, key=lambda r: (records[r]["steps"], r))
    rec = records[slowest]
    steps = rec["steps"]
    who = f" (rank {slowest}; the others got further)" if (
        rank is None and len({r["steps"] for r in records.values()}) > 1) else ""
    if timed_out:
        if not steps:
            return ", and made no optimizer step by then"
        since = time.time() - rec["last_step_time"] if rec.get("last_step_time") else None
        quiet = f", then no step for {since:.0f} s" if since is not None and since >= 1 else ""
        return f": it reached {steps} of {needed} optimizer steps{who}{quiet}"
    if not steps:
        return " before its first optimizer step"
    # Without the failure's exact count (a crash that ended the process outright), the count
    # the thread last wrote may lag by a fraction of a second.
    at_least = "" if rec.get("final") else "at least "
    return f" after {at_least}{steps} of {needed} optimizer steps{who}"


def _rank_output(out_dir: Path, rank: int) -> str:
    """The failing rank's own stdout tail (torchrun's --tee file), for the failure's message.

    The traceback alone left out what the rank printed before it exited ("[rank1] data shard
    exhausted, exiting" before a sys.exit(2)), and the run's stdout mixes every rank's lines.
    Single-node runs: the local rank is the rank.
    """
    for path in sorted((out_dir / RANK_LOGS).glob(f"*/attempt_*/{rank}/stdout.log")):
        out = _tail(path)
        if out:
            return f"\nIts stdout ends with:\n{out}"
    return ""


def _first_failed_rank(out_dir: Path, lines: int = 25) -> tuple[int, str, str] | None:
    """The rank whose script raised first, its traceback's tail (harness._rank_failed), and how
    it failed ("failed", or "called sys.exit(2)").

    Under torchrun the stderr tail is torchrun's summary of the ranks it stopped, not the cause:
    the first rank to fail holds that, the others only broke off after it. The status in the
    message is torchrun's (1 whatever the rank's), so a rank's sys.exit is named as the call:
    "exited with status 1: rank 1 failed first" over "exit status 2" read as a contradiction.
    """
    errors = []
    for path in out_dir.glob("rank*.error.json"):
        try:
            errors.append(json.loads(path.read_text()))
        except (OSError, ValueError):
            continue
    if not errors:
        return None
    first = min(errors, key=lambda e: (e["time"], e["rank"]))
    tail = "\n".join(first["traceback"].rstrip().splitlines()[-lines:])
    how = f"called sys.exit({first['sys_exit']})" if "sys_exit" in first else "failed"
    return first["rank"], tail, how


def _record(name: str, repeat: int, warmup: int, ranks: list[dict], wall: float) -> RunRecord:
    source = "device" if all(r.get("step_device_s") for r in ranks) else "wall"
    key = "step_device_s" if source == "device" else "step_wall_s"
    n = min(r["steps_seen"] for r in ranks)
    # A synchronous data-parallel step is as slow as its slowest rank.
    all_steps = [max(r[key][i] or 0.0 for r in ranks) for i in range(n)]
    if source == "device":
        # The first device time has no earlier event; take the wall time there.
        all_steps[0] = max(r["step_wall_s"][0] for r in ranks)
    r0 = ranks[0]
    return RunRecord(
        variant=name,
        repeat=repeat,
        step_s=all_steps[warmup:n],
        data_wait_s=r0["data_wait_s"][warmup:n],
        all_step_s=all_steps,
        losses=r0["loss_per_step"][:n],
        wall_s=wall,
        ranks=len(ranks),
        profile=r0.get("profile"),
        timing_source=source,
        loader_batches=r0.get("loader_batches"),
        extra={"other_optimizer_steps": r0.get("other_optimizer_steps", 0),
               "optimizer_switches": r0.get("optimizer_switches", 0),
               "stop_caught": any(r.get("stop_caught") for r in ranks),
               "pinned_loaders": r0.get("pinned_loaders", 0),
               "own_generator_loaders": r0.get("own_generator_loaders", 0)},
    )


def _kill_tree(proc: subprocess.Popen) -> None:
    # The child leads its own process group (start_new_session), so this reaches only the
    # processes this run started.
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=10)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()


_SNAPSHOT_LIMIT = 5000  # entries: a data folder in the working directory is not listed in full
_SNAPSHOT_DEPTH = 2  # the working directory and its subfolders (checkpoints/last.pt)


def directory_state(directory: str) -> dict[str, tuple[int, int]]:
    """Name -> (mtime in ns, size) of the files in the runs' working directory (and one level below).

    Compared before and after the first run (changed_files): a script that writes there (a
    checkpoint it resumes from, a cache) makes runs influence each other, and the report says so.
    The fixed versions' hidden copies are not the script's writes and are left out.
    """
    state: dict[str, tuple[int, int]] = {}
    own = _own_outputs()
    base = len(directory.rstrip(os.sep).split(os.sep))
    for root, dirs, files in os.walk(directory):
        depth = len(root.rstrip(os.sep).split(os.sep)) - base
        dirs[:] = [] if depth + 1 >= _SNAPSHOT_DEPTH else [d for d in dirs if d != "__pycache__"]
        for name in files:
            if name.startswith(HIDDEN_PREFIX):
                continue
            path = os.path.join(root, name)
            try:
                st = os.stat(path)
            except OSError:
                continue
            if (st.st_dev, st.st_ino) in own:
                continue  # `trainlint verify ... > verify.log`: grown by the verifier, not the script
            state[os.path.relpath(path, directory)] = (st.st_mtime_ns, st.st_size)
            if len(state) >= _SNAPSHOT_LIMIT:
                return state
    return state


def _own_outputs() -> set[tuple[int, int]]:
    """(device, inode) of the files this process's standard output and error are redirected to."""
    own = set()
    for fd in (1, 2):
        try:
            st = os.fstat(fd)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode):
            own.add((st.st_dev, st.st_ino))
    return own


def changed_files(before: dict[str, tuple[int, int]], after: dict[str, tuple[int, int]]) -> list[str]:
    """Files created, changed or removed between two directory_state listings."""
    return sorted(name for name in before.keys() | after.keys() if before.get(name) != after.get(name))


def _run_notes(variant: Variant, rec: RunRecord) -> list[str]:
    """What the harness saw that the numbers alone do not say (said once per version)."""
    notes = []
    if rec.extra.get("stop_caught"):
        notes.append(f"warning: {variant.name}: the script caught the verifier's stop signal (a "
                     "bare `except:` or `except BaseException:` around the step) and trained on; "
                     "the verifier ended the run there")
    if rec.extra.get("optimizer_switches"):
        notes.append(f"note: {variant.name}: the steps counted went from one optimizer to another "
                     "that took over (a new training stage)")
    return notes


def run_interleaved(
    settings: RunSettings,
    variants: list[Variant],
    repeats: int,
    workdir: Path,
    progress: Callable[[str], None] | None = None,
    after_first_run: Callable[[], None] | None = None,
) -> dict[str, list[RunRecord]]:
    """Run every version once per round, in the same order, for `repeats` rounds (A B A B ...).

    Interleaving spreads slow drifts of the machine (other load, clocks, caches) over all
    versions instead of letting them land on one.
    """
    records: dict[str, list[RunRecord]] = {v.name: [] for v in variants}
    for k in range(repeats):
        for v in variants:
            if progress:
                progress(f"repeat {k + 1}/{repeats}: {v.name}")
            rec = run_once(settings, v, k, workdir)
            records[v.name].append(rec)
            if progress and k == 0:
                for note in _run_notes(v, rec):
                    progress(note)
            if after_first_run and k == 0 and v is variants[0]:
                after_first_run()
    return records
