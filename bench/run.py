#!/usr/bin/env python3
"""Side-by-side benchmark: trainlint against TorchFix and Fixit on the same pinned files.

What one run does (issue 6):
  1. fetches the pinned corpus packages through the shared fetch script (sha256-checked),
  2. copies their .py files into one staging tree, so every tool sees exactly the same files
     and no tool picks up a package's own pyproject/setup.cfg as configuration,
  3. installs torchfix 0.7.0 and fixit 2.2.1 into their own virtual environments (cached),
  4. runs every tool on the staging tree, interleaved round by round, and
  5. prints wall time, CPU time, peak memory and the ratios the targets are stated in.

Only the standard library is used, so any Python 3.10+ can run it. trainlint itself runs from
this checkout, installed into a private venv (or by the interpreter given with --python).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CACHE = Path(os.environ.get("TRAINLINT_BENCH_CACHE", Path.home() / ".cache" / "trainlint-bench"))

# The baselines are pinned exactly; their dependencies float with what the registry resolves,
# and the resolved libcst version is printed with the results.
BASELINES = {
    "torchfix": ("torchfix", "0.7.0"),
    "fixit": ("fixit", "2.2.1"),
}

# File sets, as package names in pins.tsv. "train2" is the set issue 6 states the TorchFix
# ratio on; "transformers" is the 1.2M-line set for the absolute time and memory targets.
SETS = {
    "train2": ["torchtune", "litgpt"],
    "transformers": ["transformers"],
}

TRAINLINT_TOOLS = ("cold", "warm", "jobs1", "jobs2", "noprefilter")
ALL_TOOLS = ["floor-ast", "floor-parse", "torchfix", "fixit", "cold", "warm", "jobs1", "jobs2", "noprefilter"]
# TorchFix/Fixit would need about half an hour each on transformers and no target compares
# against them there, so that set leaves them (and the 3-minute libcst floor) out unless asked.
DEFAULT_TOOLS = {
    "train2": [t for t in ALL_TOOLS if t != "noprefilter"],
    "transformers": ["floor-ast", "cold", "warm", "jobs1", "jobs2"],
}

# trainlint with its text prefilter switched off (every rule sees every file), to measure what
# the prefilter saves. It patches the engine from outside; nothing in trainlint knows about it.
NO_PREFILTER_CODE = r"""
import sys
import trainlint.engine as engine
engine.select_for_text = lambda rules, text: list(rules)
from trainlint.cli import main
sys.argv[0] = "trainlint"
main()
"""

# How many files and lines get past the prefilter (not timed).
PREFILTER_STATS_CODE = r"""
import json, sys
from trainlint.config import SettingsResolver
from trainlint.discovery import discover
from trainlint.engine import select_for_text
from trainlint.source import read_source
resolver = SettingsResolver(None, {"select": tuple(s for s in sys.argv[1:2] if s) or None})
files, _ = discover(sys.argv[2:], resolver)
out = {"files": len(files), "lines": 0, "passed_files": 0, "passed_lines": 0}
for path in files:
    try:
        text = read_source(path).text
    except Exception:
        continue
    lines = text.count("\n")
    out["lines"] += lines
    settings = resolver.for_path(path)
    if select_for_text(settings.active_rules(path), text):
        out["passed_files"] += 1
        out["passed_lines"] += lines
print(json.dumps(out))
"""

FLOOR_CODE = r"""
import sys, time
kind, listing = sys.argv[1], sys.argv[2]
if kind == "parse":
    import libcst
    parse = libcst.parse_module
else:
    import ast
    parse = ast.parse
failed = 0
for path in open(listing, encoding="utf-8").read().splitlines():
    with open(path, "rb") as handle:
        data = handle.read()
    try:
        parse(data)
    except Exception:
        failed += 1
print(f"{kind}: {failed} files failed to parse")
"""


# ---------------------------------------------------------------------------------------------
# Fetching and staging


def find_fetch_script(explicit: str | None) -> Path:
    candidates = []
    if explicit:
        candidates.append(Path(explicit))
    if os.environ.get("TRAINLINT_FETCH"):
        candidates.append(Path(os.environ["TRAINLINT_FETCH"]))
    candidates.append(REPO / ".." / "shared" / "corpus" / "fetch.sh")
    # In a git worktree the checkout is not beside shared/; the main checkout (parent of the
    # common .git folder) is, so try relative to that as well.
    try:
        common = subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "--path-format=absolute", "--git-common-dir"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()
        candidates.append(Path(common).parent / ".." / "shared" / "corpus" / "fetch.sh")
    except (OSError, subprocess.CalledProcessError):
        pass
    for candidate in candidates:
        if candidate.is_file():
            return candidate.resolve()
    sys.exit("bench: fetch.sh not found; pass --fetch-script or set TRAINLINT_FETCH. Tried:\n  "
             + "\n  ".join(str(c) for c in candidates))


def fetch(fetch_script: Path, corpus: Path, packages: list[str]) -> list[Path]:
    """Runs fetch.sh on a pins file cut down to `packages`, so only what the set needs is downloaded."""
    pins = Path(os.environ.get("PINS", fetch_script.parent / "pins.tsv"))
    wanted = []
    for line in pins.read_text().splitlines():
        if line and not line.startswith("#") and line.split("\t")[0] in packages:
            wanted.append(line)
    missing = set(packages) - {line.split("\t")[0] for line in wanted}
    if missing:
        sys.exit(f"bench: not in {pins}: {', '.join(sorted(missing))}")
    with tempfile.NamedTemporaryFile("w", suffix=".tsv", delete=False) as handle:
        handle.write("\n".join(wanted) + "\n")
        cut = handle.name
    try:
        out = subprocess.run(
            ["bash", str(fetch_script), str(corpus), "all"],
            env={**os.environ, "PINS": cut}, capture_output=True, text=True,
        )
    finally:
        os.unlink(cut)
    if out.returncode != 0:
        sys.exit(f"bench: fetch.sh failed ({out.returncode}):\n{out.stderr[-3000:]}")
    return [Path(p) for p in out.stdout.split()]


def stage(folders: list[Path], tree: Path) -> tuple[list[str], int, int]:
    """Copies every .py file of `folders` into `tree/<package-version>/...`; returns the
    top-level names to pass to the tools, and the number of lines."""
    if tree.exists():
        shutil.rmtree(tree)
    tree.mkdir(parents=True)
    files, lines = [], 0
    tops = []
    for folder in folders:
        tops.append(folder.name)
        for src in sorted(folder.rglob("*.py")):
            if not src.is_file():
                continue
            dst = tree / folder.name / src.relative_to(folder)
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dst)
            files.append(str(dst))
            with open(dst, "rb") as handle:
                lines += handle.read().count(b"\n")
    (tree.parent / "files.txt").write_text("\n".join(files) + "\n")
    return tops, len(files), lines


# ---------------------------------------------------------------------------------------------
# Baseline environments


def ensure_venv(name: str, version: str, base_python: str) -> tuple[Path | None, str]:
    """Returns (bin folder, note). A failed install is reported, not fatal: the table says so."""
    home = CACHE / f"{name}-{version}"
    marker = home / ".bench-ok"
    if not marker.is_file():
        if home.exists():
            shutil.rmtree(home)
        made = subprocess.run([base_python, "-m", "venv", str(home)], capture_output=True, text=True)
        if made.returncode != 0:
            return None, f"venv failed: {made.stderr.strip()[-500:]}"
        inst = subprocess.run(
            [str(home / "bin" / "python"), "-m", "pip", "install", "-q", f"{name}=={version}"],
            capture_output=True, text=True,
        )
        if inst.returncode != 0:
            tail = "\n".join(line for line in inst.stderr.splitlines() if "ignored" not in line)[-800:]
            return None, f"pip install {name}=={version} failed: {tail}"
        marker.write_text(f"{name}=={version}\n")
    ver = subprocess.run([str(home / "bin" / name), "--version"], capture_output=True, text=True)
    text = (ver.stdout + ver.stderr).strip()
    if version not in text:
        return None, f"{name} --version says {text!r}, expected {version}"
    libcst = subprocess.run(
        [str(home / "bin" / "python"), "-c", "import importlib.metadata as m; print(m.version('libcst'))"],
        capture_output=True, text=True,
    ).stdout.strip()
    return home / "bin", f"{name} {version} (libcst {libcst})"


# ---------------------------------------------------------------------------------------------
# Measuring one command


_CLK_TCK = os.sysconf("SC_CLK_TCK")


class TreeMemory(threading.Thread):
    """Samples the summed memory of every process in the command's session.

    wait4's ru_maxrss only gives the largest single process; a process pool's footprint is the
    sum over its workers. PSS (proportional set size) is summed, not RSS, so pages that forked
    workers still share with the parent are not counted twice.
    """

    def __init__(self, sid: int, interval: float):
        super().__init__(daemon=True)
        self.sid, self.interval = sid, interval
        self.peak_kb = 0
        # pid -> CPU seconds (user + system) last seen: lets the bench tell the CPU time on the
        # critical path (parent + busiest worker) from the total, which load does not distort.
        self.cpu: dict[str, float] = {}
        self.done = threading.Event()

    def _session_pids(self):
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat", "rb") as handle:
                    stat = handle.read()
            except OSError:
                continue
            # Fields after the parenthesised command name: state ppid pgrp session ...
            rest = stat[stat.rfind(b")") + 2:].split()
            if int(rest[3]) == self.sid:
                # utime and stime are fields 14 and 15 of stat, in clock ticks
                self.cpu[entry] = (int(rest[11]) + int(rest[12])) / _CLK_TCK
                yield entry

    @staticmethod
    def _pss_kb(pid: str) -> int:
        try:
            with open(f"/proc/{pid}/smaps_rollup", "rb") as handle:
                for line in handle:
                    if line.startswith(b"Pss:"):
                        return int(line.split()[1])
        except OSError:
            pass
        return 0

    def run(self):
        while not self.done.is_set():
            total = sum(self._pss_kb(pid) for pid in self._session_pids())
            self.peak_kb = max(self.peak_kb, total)
            self.done.wait(self.interval)


@dataclass
class Sample:
    tool: str
    wall: float
    cpu: float
    maxrss_mb: float
    pss_mb: float
    rc: int
    timed_out: bool
    crashed: bool  # a Python traceback on stderr: the time measures a crash, not the work
    # CPU seconds on the critical path: the whole tree's CPU minus the workers', plus the busiest
    # worker's. What the run would take on idle cores, were it CPU-bound and every worker got
    # its own core; sampled every 0.1 s, so good to about 0.1 s per worker.
    critical_cpu: float
    out_lines: int
    log: str


def measure(tool: str, argv: list[str], cwd: Path, env: dict, timeout: float, logdir: Path,
            run_no: int, sample_memory: bool) -> Sample:
    log = logdir / f"{tool}-{run_no}"
    with open(f"{log}.out", "wb") as out, open(f"{log}.err", "wb") as err:
        start = time.perf_counter()
        # A session of its own: the timeout kills the whole tree (pool workers included), and
        # the memory sampler finds the tree by session id.
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=out, stderr=err, start_new_session=True)
        sampler = TreeMemory(proc.pid, 0.1) if sample_memory else None
        if sampler:
            sampler.start()
        timed_out = threading.Event()

        def kill():
            timed_out.set()
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

        timer = threading.Timer(timeout, kill)
        timer.start()
        # wait4 gives this child's own resource usage (its waited-for descendants included),
        # unlike RUSAGE_CHILDREN, which accumulates over every command this script ran.
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        timer.cancel()
        proc.returncode = os.waitstatus_to_exitcode(status)
        if sampler:
            sampler.done.set()
            sampler.join()
    with open(f"{log}.out", "rb") as handle:
        out_lines = handle.read().count(b"\n")
    with open(f"{log}.err", "rb") as handle:
        crashed = b"Traceback (most recent call last)" in handle.read()
    cpu = usage.ru_utime + usage.ru_stime
    critical = float("nan")
    if sampler:
        workers = [v for pid, v in sampler.cpu.items() if pid != str(proc.pid)]
        critical = cpu - sum(workers) + max(workers, default=0.0)
    return Sample(
        tool=tool, wall=wall, cpu=cpu, critical_cpu=critical,
        maxrss_mb=usage.ru_maxrss / 1024,  # Linux reports kilobytes
        pss_mb=(sampler.peak_kb / 1024) if sampler else float("nan"),
        rc=proc.returncode, timed_out=timed_out.is_set(), crashed=crashed, out_lines=out_lines, log=str(log),
    )


# ---------------------------------------------------------------------------------------------
# trainlint's command lines


def install_trainlint(base_python: str) -> str:
    """Installs this checkout (working tree, committed or not) into a private venv; returns its python.

    Not an editable install and not PYTHONPATH: a shared venv with an editable install of
    another checkout resolves missing submodules (and trainlint.rules) from that checkout, so
    the bench would time a mix. A regular install of a copy times exactly these files, the way
    users get them. The copy keeps build/ and *.egg-info out of the checkout.
    """
    home = CACHE / "trainlint-venv"
    python = home / "bin" / "python"
    if not (home / ".bench-ok").is_file():
        shutil.rmtree(home, ignore_errors=True)
        subprocess.run([base_python, "-m", "venv", str(home)], check=True)
        # Build tools once, so each later reinstall needs no network and no isolated build env.
        subprocess.run([str(python), "-m", "pip", "install", "-q", "setuptools>=68", "wheel"], check=True)
        (home / ".bench-ok").write_text("ok\n")
    listed = subprocess.run(
        ["git", "-C", str(REPO), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        capture_output=True, check=True,
    ).stdout.split(b"\0")
    with tempfile.TemporaryDirectory(prefix="trainlint-bench-src-") as tmp:
        for rel in filter(None, (name.decode() for name in listed)):
            src = REPO / rel
            if src.is_file() and not rel.startswith("bench/"):
                dst = Path(tmp) / rel
                dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, dst)
        # Dependencies first (cached after the first time), so the floors can run even when
        # the checkout does not build; trainlint itself is reinstalled every run so the bench
        # never times stale code.
        try:
            import tomllib
            deps = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
        except (ImportError, KeyError, OSError):
            deps = ["libcst", "click"]
        subprocess.run([str(python), "-m", "pip", "install", "-q", *deps], check=True, stderr=subprocess.DEVNULL)
        built = subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--force-reinstall",
                                "--no-build-isolation", tmp], capture_output=True, text=True)
        if built.returncode != 0:
            subprocess.run([str(python), "-m", "pip", "uninstall", "-q", "-y", "trainlint"], capture_output=True)
            errors = [line for line in built.stderr.splitlines() if "ignored:" not in line]
            print("bench: installing this checkout failed:\n  " + "\n  ".join(errors[-6:]), flush=True)
    return str(python)


def trainlint_options(python: str, env: dict) -> tuple[str | None, str]:
    """Returns (help text of `trainlint check`, note). None when trainlint check does not run."""
    probe = subprocess.run([python, "-m", "trainlint", "check", "--help"], env=env,
                           capture_output=True, text=True, cwd=tempfile.gettempdir())
    if probe.returncode != 0:
        return None, "trainlint check --help failed: " + (probe.stderr.strip().splitlines() or ["?"])[-1]
    version = subprocess.run([python, "-c", "import importlib.metadata as m; print(m.version('trainlint'), m.version('libcst'))"],
                             env=env, capture_output=True, text=True).stdout.split()
    return probe.stdout, f"trainlint {version[0]} (libcst {version[1]})" if len(version) == 2 else "ok"


def build_commands(args, tops, bins, tl_help, cache_dir, work) -> tuple[dict, dict]:
    """Returns ({tool: argv}, {tool: reason it is skipped})."""
    cmds, skipped = {}, {}
    listing = str(work / "files.txt")
    cmds["floor-ast"] = [args.python, "-c", FLOOR_CODE, "ast", listing]
    cmds["floor-parse"] = [args.python, "-c", FLOOR_CODE, "parse", listing]
    for name in ("torchfix", "fixit"):
        if bins.get(name) is None:
            skipped[name] = "not installed (see above)"
    if bins.get("torchfix"):
        cmds["torchfix"] = [str(bins["torchfix"] / "torchfix"), "--select", "ALL",
                            "--jobs", str(args.workers), *tops]
    if bins.get("fixit"):
        # Fixit has no worker option: it uses a process pool as wide as the CPU count.
        cmds["fixit"] = [str(bins["fixit"] / "fixit"), "lint", *tops]
    if tl_help is None:
        for name in ("cold", "warm", "jobs1", "jobs2"):
            skipped[name] = "trainlint check does not run yet"
        return cmds, skipped
    # Every rule, as torchfix runs with --select ALL; --trainlint-select "" keeps trainlint's defaults.
    select = ["--select", args.trainlint_select] if args.trainlint_select and "--select" in tl_help else []
    base = [args.python, "-m", "trainlint", "check", *select, *args.trainlint_arg]
    has_cache = "--no-cache" in tl_help and "--cache-dir" in tl_help
    has_jobs = "--jobs" in tl_help
    no_cache = ["--no-cache"] if has_cache else []
    cmds["cold"] = [*base, *no_cache, *tops]
    if has_cache:
        cmds["warm"] = [*base, "--cache-dir", str(cache_dir), *tops]
    else:
        skipped["warm"] = "no --cache-dir/--no-cache option yet"
    if has_jobs:
        cmds["jobs1"] = [*base, *no_cache, "--jobs", "1", *tops]
        cmds["jobs2"] = [*base, *no_cache, "--jobs", "2", *tops]
    else:
        skipped["jobs1"] = skipped["jobs2"] = "no --jobs option yet"
    cmds["noprefilter"] = [args.python, "-c", NO_PREFILTER_CODE, "check", *select, *args.trainlint_arg,
                           *no_cache, *(["--jobs", "1"] if has_jobs else []), *tops]
    return cmds, skipped


# ---------------------------------------------------------------------------------------------
# Report


@dataclass
class Summary:
    tool: str
    samples: list[Sample] = field(default_factory=list)

    @property
    def ok(self):
        return [s for s in self.samples if not (s.timed_out or s.crashed) and s.rc >= 0]

    def median(self, attr="wall"):
        values = [getattr(s, attr) for s in self.ok]
        return statistics.median(values) if values else float("nan")

    def best(self, attr="wall"):
        # Interference from other work only ever adds time, so the fastest run is the closest
        # to what the tool itself costs; the ratios use it.
        values = [getattr(s, attr) for s in self.ok]
        return min(values) if values else float("nan")


LABELS = {
    "floor-ast": "floor: ast.parse, 1 core",
    "floor-parse": "floor: libcst.parse_module, 1 core",
    "torchfix": "torchfix 0.7.0 --select ALL",
    "fixit": "fixit 2.2.1 lint",
    "fill": "trainlint, filling the cache",
    "cold": "trainlint cold (--no-cache)",
    "warm": "trainlint warm (cache hit)",
    "jobs1": "trainlint cold --jobs 1",
    "jobs2": "trainlint cold --jobs 2",
    "noprefilter": "trainlint cold --jobs 1, prefilter off",
}


def table(summaries: dict[str, Summary], skipped: dict[str, str]) -> str:
    rows = [("tool", "runs", "wall s (best)", "wall s (median)", "CPU s (best)", "critical-path CPU s", "max RSS MB", "sum PSS MB", "rc", "out lines")]
    for tool in ["floor-ast", "floor-parse", "torchfix", "fixit", "fill", "cold", "warm", "jobs1", "jobs2", "noprefilter"]:
        if tool in skipped:
            rows.append((LABELS[tool], "-", "n/a: " + skipped[tool], "", "", "", "", "", "", ""))
            continue
        summ = summaries.get(tool)
        if not summ or not summ.samples:
            continue
        ok = summ.ok
        timeouts = sum(s.timed_out for s in summ.samples)
        crashes = sum(s.crashed for s in summ.samples)
        walls = [s.wall for s in ok]
        rows.append((
            LABELS[tool],
            f"{len(ok)}" + (f" (+{timeouts} timed out)" if timeouts else "")
            + (f" (+{crashes} crashed)" if crashes else ""),
            f"{summ.best():.2f}" if walls else "failed",
            f"{summ.median():.2f}" if walls else "",
            f"{summ.best('cpu'):.2f}" if walls else "",
            f"{summ.best('critical_cpu'):.2f}" if walls else "",
            f"{max(s.maxrss_mb for s in summ.samples):.0f}",
            f"{max(s.pss_mb for s in summ.samples):.0f}",
            ",".join(sorted({str(s.rc) for s in summ.samples})),
            ",".join(sorted({str(s.out_lines) for s in summ.samples})),
        ))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |" for r in rows]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def ratios(summaries: dict[str, Summary], set_name: str) -> list[dict]:
    def med(tool, attr="wall"):
        s = summaries.get(tool)
        return s.best(attr) if s and s.ok else float("nan")

    out = []

    def add(name, value, target, passed=None):
        # passed=None: shown for information, no target to meet.
        if value != value:
            verdict = "n/a"
        elif passed is None:
            verdict = "-"
        else:
            verdict = "PASS" if passed(value) else "FAIL"
        out.append({"ratio": name, "value": value, "target": target, "verdict": verdict})

    cold = med("cold")
    if set_name == "train2":
        add("torchfix / trainlint cold", med("torchfix") / cold, ">= 25x", lambda v: v >= 25)
        add("fixit / trainlint cold", med("fixit") / cold, "> 1 (far ahead)", lambda v: v > 1)
        # CPU seconds do not grow when other work competes for the cores; shown beside the wall
        # ratio so a loaded machine can be told apart from a slow tool.
        add("torchfix / trainlint cold, CPU time", med("torchfix", "cpu") / med("cold", "cpu"), "(info)")
    add("warm / cold", med("warm") / cold, "<= 10%", lambda v: v <= 0.10)
    add("jobs1 / jobs2", med("jobs1") / med("jobs2"), ">= 1.7x", lambda v: v >= 1.7)
    add("jobs1 / jobs2, projected for idle cores (CPU on the critical path)",
        med("jobs1", "critical_cpu") / med("jobs2", "critical_cpu"), "(info: >= 1.7x wanted)")
    add("cold / libcst parse floor", cold / med("floor-parse"), "(info: close to 1 or below)")
    add("prefilter off / on (--jobs 1)", med("noprefilter") / med("jobs1"), "(info: what the prefilter saves)")
    if set_name == "transformers":
        add("cold wall seconds", cold, "< 60 s", lambda v: v < 60)
        peak = max((max(s.pss_mb for s in summ.samples) for t, summ in summaries.items()
                    if t in ("cold", "warm", "jobs1", "jobs2", "fill") and summ.samples), default=float("nan"))
        add("trainlint peak memory MB (sum PSS)", peak, "< 1024 MB", lambda v: v < 1024)
    return out


def fmt_ratio(r):
    v = r["value"]
    if v != v:
        return "n/a"
    if "%" in r["target"]:
        return f"{v * 100:.1f}%"
    if "MB" in r["target"] or "seconds" in r["ratio"]:
        return f"{v:.1f}"
    return f"{v:.2f}x"


# ---------------------------------------------------------------------------------------------


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--set", choices=sorted(SETS), default="train2",
                        help="file set: train2 = torchtune 0.6.1 + litgpt 0.5.13 (default), transformers = 5.23.0")
    parser.add_argument("--tools", help=f"comma list out of {','.join(ALL_TOOLS)} (default depends on --set)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each trainlint variant (default 3)")
    parser.add_argument("--baseline-repeat", type=int, default=1, help="runs of torchfix, fixit and the floors (default 1)")
    parser.add_argument("--workers", type=int, default=os.cpu_count(), help="processes for torchfix --jobs (default: CPU count)")
    parser.add_argument("--python", default=os.environ.get("TRAINLINT_BENCH_PYTHON"),
                        help="interpreter that already has trainlint installed; runs trainlint and the floors. "
                             "Default: this checkout installed into a private venv under the bench cache")
    parser.add_argument("--venv-python", default=sys.executable, help="interpreter the baseline venvs are made from")
    parser.add_argument("--corpus", default=os.environ.get("TRAINLINT_CORPUS", str(Path.home() / ".cache" / "trainlint-corpus")),
                        help="where fetch.sh unpacks the corpus (default $TRAINLINT_CORPUS or ~/.cache/trainlint-corpus)")
    parser.add_argument("--fetch-script", help="path to fetch.sh (default $TRAINLINT_FETCH or <repo>/../shared/corpus/fetch.sh)")
    parser.add_argument("--trainlint-select", default="ALL",
                        help='trainlint --select value (default ALL, like torchfix; "" for its default rules)')
    parser.add_argument("--trainlint-arg", action="append", default=[],
                        help="extra argument for every `trainlint check` (repeatable)")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per torchfix/fixit/floor run (default 1800)")
    parser.add_argument("--trainlint-timeout", type=float, default=600, help="seconds per trainlint run (default 600)")
    parser.add_argument("--no-memory-sampling", action="store_true", help="skip the summed-PSS sampler (0.1 s /proc scans)")
    parser.add_argument("--json", help="also write the results as JSON to this path")
    args = parser.parse_args(argv)

    tools = args.tools.split(",") if args.tools else DEFAULT_TOOLS[args.set]
    unknown = set(tools) - set(ALL_TOOLS)
    if unknown:
        parser.error(f"unknown tools: {', '.join(sorted(unknown))}")

    work = CACHE / "work" / args.set
    logdir = work / "logs"
    cache_dir = work / "trainlint-cache"
    print(f"bench: set {args.set}: {', '.join(SETS[args.set])}; work folder {work}", flush=True)

    fetch_script = find_fetch_script(args.fetch_script)
    folders = fetch(fetch_script, Path(args.corpus), SETS[args.set])
    tops, n_files, n_lines = stage(folders, work / "tree")
    if logdir.exists():
        shutil.rmtree(logdir)
    logdir.mkdir(parents=True)
    print(f"bench: {n_files} .py files, {n_lines} lines, staged under {work / 'tree'}", flush=True)

    bins, notes = {}, {}
    for name in ("torchfix", "fixit"):
        if name in tools:
            print(f"bench: preparing {name} venv ...", flush=True)
            bins[name], notes[name] = ensure_venv(*BASELINES[name], args.venv_python)
            print(f"bench:   {notes[name]}", flush=True)

    if not args.python:
        print("bench: installing this checkout into the bench venv ...", flush=True)
        args.python = install_trainlint(args.venv_python)
    tl_env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    tl_help, tl_note = trainlint_options(args.python, tl_env)
    notes["trainlint"] = tl_note
    if tl_help is None:
        print(f"bench: {tl_note}", flush=True)
    else:
        stats = subprocess.run([args.python, "-c", PREFILTER_STATS_CODE, args.trainlint_select, *tops],
                               cwd=work / "tree", env=tl_env, capture_output=True, text=True)
        try:
            st = json.loads(stats.stdout)
            notes["prefilter"] = (f"{st['passed_files']} of {st['files']} files ({st['passed_lines']} of "
                                  f"{st['lines']} lines) get past the text prefilter to the parser")
        except ValueError:
            notes["prefilter"] = "could not measure: " + (stats.stderr.strip().splitlines() or ["?"])[-1]

    cmds, skipped = build_commands(args, tops, bins, tl_help, cache_dir, work)
    skipped = {t: why for t, why in skipped.items() if t in tools}
    plan = [t for t in tools if t in cmds]
    env_for = {t: (tl_env if t in TRAINLINT_TOOLS or t.startswith("floor") else dict(os.environ)) for t in plan}
    repeat = {t: (args.repeat if t in TRAINLINT_TOOLS else args.baseline_repeat) for t in plan}

    load = os.getloadavg()[0]
    notes["load average at start"] = f"{load:.2f}"
    if load > 0.5:
        print(f"bench: warning: load average {load:.2f}; other work on the machine skews the times", flush=True)

    summaries = {t: Summary(t) for t in plan}
    tree = work / "tree"

    def one(tool, label_tool, run_no, argv):
        timeout = args.trainlint_timeout if tool in TRAINLINT_TOOLS else args.timeout
        s = measure(label_tool, argv, tree, env_for[tool], timeout, logdir, run_no, not args.no_memory_sampling)
        state = "TIMED OUT" if s.timed_out else f"rc {s.rc}"
        print(f"bench:   {label_tool:<12} run {run_no}: {s.wall:8.2f} s wall, {s.cpu:8.1f} s CPU, "
              f"{s.maxrss_mb:6.0f} MB max RSS, {s.pss_mb:6.0f} MB sum PSS, {state}", flush=True)
        return s

    if "warm" in plan:
        # The warm runs read what this run writes; it starts from an empty cache folder.
        shutil.rmtree(cache_dir, ignore_errors=True)
        summaries["fill"] = Summary("fill")
        summaries["fill"].samples.append(one("warm", "fill", 1, cmds["warm"]))

    # Round-robin with a rotating start, so slow drift of the machine (thermal, page cache)
    # spreads over all tools instead of landing on one.
    rounds = max(repeat.values(), default=0)
    for r in range(rounds):
        order = [t for t in plan if repeat[t] > r]
        order = order[r % len(order):] + order[: r % len(order)] if order else order
        print(f"bench: round {r + 1}/{rounds}: {', '.join(order)}", flush=True)
        for tool in order:
            summaries[tool].samples.append(one(tool, tool, r + 1, cmds[tool]))

    # The cache and the pool must not change what is reported.
    consistency = {}
    for a, b in (("cold", "warm"), ("jobs1", "jobs2"), ("cold", "jobs1"), ("jobs1", "noprefilter")):
        if summaries.get(a) and summaries.get(b) and summaries[a].ok and summaries[b].ok:
            out_a = Path(summaries[a].ok[0].log + ".out").read_bytes()
            out_b = Path(summaries[b].ok[0].log + ".out").read_bytes()
            consistency[f"{a} vs {b}"] = "same output" if out_a == out_b else "OUTPUT DIFFERS"

    rs = ratios(summaries, args.set)
    notes["load average at end (1 min)"] = f"{os.getloadavg()[0]:.2f}"
    versions = {"python": platform.python_version(), **notes}
    for t in (x for x in ("cold", "jobs1") if x in cmds):
        versions["trainlint command"] = " ".join(cmds[t][1:])
        break

    print()
    print(f"Set {args.set} ({' + '.join(f.name for f in folders)}): {n_files} files, {n_lines} lines; "
          f"{os.cpu_count()} CPUs; {_dt.datetime.now(_dt.timezone.utc):%Y-%m-%d %H:%M} UTC")
    print()
    print(table(summaries, skipped))
    print()
    print("Ratios from the best run of each row.")
    print()
    print("| ratio | value | target | verdict |")
    print("|---|---|---|---|")
    for r in rs:
        print(f"| {r['ratio']} | {fmt_ratio(r)} | {r['target']} | {r['verdict']} |")
    print()
    for k, v in consistency.items():
        print(f"output check, {k}: {v}")
    for k, v in versions.items():
        print(f"{k}: {v}")
    print(f"logs: {logdir}")

    if args.json:
        Path(args.json).write_text(json.dumps({
            "set": args.set, "packages": [f.name for f in folders], "files": n_files, "lines": n_lines,
            "cpus": os.cpu_count(), "versions": versions, "skipped": skipped, "consistency": consistency,
            "commands": {t: argv for t, argv in cmds.items() if t in plan},
            "samples": {t: [s.__dict__ for s in summ.samples] for t, summ in summaries.items()},
            "ratios": rs,
        }, indent=2, default=str) + "\n")
        print(f"json: {args.json}")
    failed_tools = [t for t, s in summaries.items() if s.samples and not s.ok]
    return 1 if failed_tools else 0


if __name__ == "__main__":
    sys.exit(main())
