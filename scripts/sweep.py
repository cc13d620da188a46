#!/usr/bin/env python3
"""Crash sweep over the corpus (training and speed sets): trainlint must never fail on real code.

    sweep.py [--corpus DIR] [--role all] [--packages a,b] [--jobs N] [--deep] [--fix] [--keep]

lint  (always): every Python file through the runner with every rule selected; an internal
      error (any exception other than a clean per-file error) is a failure.
--deep: also parse every file and run every shared analysis on it (names, hot loops and
      per-step for every call, tensors for every name), whether or not a rule's prefilter
      would have parsed it, so the analyses meet all 4M lines and not only the files that
      mention a trigger.
--fix : copy the packages to a temporary folder, run the real CLI there with
      `--fix --unsafe-fixes --select ALL`, then check that every changed file parses (libcst and
      `compile()`), that the fixes added no line ending in whitespace, that the CLI printed no
      traceback, and that a second run changes nothing.

Exit 0 when clean, 1 when something failed; every failure is printed with its file.
"""

from __future__ import annotations

import argparse
import ast
import os
import shutil
import subprocess
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import ecosystem  # noqa: E402  (the corpus helpers live there)

_SETTINGS = None
_DEEP = False


def _init(settings, deep) -> None:
    global _SETTINGS, _DEEP
    _SETTINGS, _DEEP = settings, deep


def _deep(path: str) -> str | None:
    """Run every shared analysis over the whole file; the traceback of a failure, else None."""
    import libcst as cst

    from trainlint.analysis.context import FileContext
    from trainlint.analysis.positions import Positions
    from trainlint.engine import ParseError, parse
    from trainlint.source import SourceError, read_source

    try:
        source = read_source(path)
        module = parse(source.text)
    except (SourceError, ParseError):
        return None  # a clean per-file error; the lint phase reports it
    try:
        ctx = FileContext(path, source.text, module, _SETTINGS)
        loops, tensors = ctx.loops, ctx.tensors
        for call in ctx.index.nodes(cst.Call):
            loops.is_per_step(call)
            loops.in_hot_loop(call)
            ctx.names.qualified(call.func)
            tensors.is_tensor(call)
        for name in ctx.index.nodes(cst.Name):
            tensors.is_tensor(name)
        for node in ctx.index.nodes(cst.If):
            loops.is_interval_test(node.test)
        Positions(module, source.text)
    except RecursionError:
        return None  # reported as "too deeply nested" by the runner
    except Exception:  # noqa: BLE001 - that is what the sweep looks for
        return traceback.format_exc()
    return None


def _lint(path: str) -> tuple[str, str | None, float]:
    from trainlint.runner import Mode, check_file

    started = time.perf_counter()
    result = check_file(path, _SETTINGS, Mode())
    problem = None
    if result.error is not None and result.error.internal:
        problem = result.error.reason
    if problem is None and _DEEP:
        problem = _deep(path)
    return path, problem, time.perf_counter() - started


def lint_phase(packages, jobs: int, deep: bool) -> list[str]:
    import multiprocessing

    from trainlint.config import Settings

    files = [p for _, root in packages for p in ecosystem.python_files(root)]
    files.sort(key=lambda p: -ecosystem._size(p))
    failures = []
    slow = []
    started = time.perf_counter()
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(jobs, initializer=_init, initargs=(Settings(select=("ALL",)), deep), maxtasksperchild=100) as pool:
        for n, (path, problem, seconds) in enumerate(pool.imap_unordered(_lint, files, chunksize=2)):
            if problem:
                failures.append(f"{path}: {problem}")
                print(f"INTERNAL {path}: {problem}", file=sys.stderr)
            slow.append((seconds, path))
            if (n + 1) % 1000 == 0:
                print(f"  lint: {n + 1}/{len(files)} files, {time.perf_counter() - started:.0f}s", file=sys.stderr)
    slow.sort(reverse=True)
    print(f"lint{' + deep analyses' if deep else ''}: {len(files)} files in {time.perf_counter() - started:.0f}s, "
          f"{len(failures)} internal errors; slowest: "
          + ", ".join(f"{os.path.basename(p)} {s:.1f}s" for s, p in slow[:3]))
    return failures


def _snapshot(root: str) -> dict[str, bytes]:
    out = {}
    for path in ecosystem.python_files(root):
        with open(path, "rb") as fh:
            out[path] = fh.read()
    return out


# `python -m trainlint`, importing trainlint from $TRAINLINT_CHECKOUT when set (see ecosystem.use_checkout).
_BOOT = (
    "import os, runpy, sys\n"
    "c = os.environ.get('TRAINLINT_CHECKOUT')\n"
    "if c:\n"
    "    sys.path.insert(0, c)\n"
    "    sys.meta_path[:] = [f for f in sys.meta_path if '__editable__' not in str(getattr(f, '__module__', ''))]\n"
    "sys.argv[0] = 'trainlint'\n"
    "runpy.run_module('trainlint', run_name='__main__', alter_sys=True)\n"
)


def _trailing_whitespace(data: bytes) -> int:
    return sum(1 for line in data.splitlines() if line[-1:] in (b" ", b"\t"))


def _cli_fix(folder: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-c", _BOOT, "check", "--fix", "--unsafe-fixes", "--select", "ALL", "--no-cache",
           "--exit-zero", "-q", folder]
    return subprocess.run(cmd, capture_output=True, text=True, env=os.environ.copy())


def _fix_package(args: tuple[str, str, str]) -> tuple[str, list[str], int]:
    name, root, tmp = args
    work = os.path.join(tmp, name)
    shutil.copytree(root, work, ignore=lambda d, names: [n for n in names if not (
        n.endswith((".py", ".pyi")) or os.path.isdir(os.path.join(d, n)))], symlinks=True)
    before = _snapshot(work)
    failures = []
    first = _cli_fix(work)
    if "Traceback" in first.stderr or first.returncode not in (0, 1, 2):
        failures.append(f"{name}: first --fix run exited {first.returncode}:\n{first.stderr[-3000:]}")
    for line in first.stderr.splitlines():
        if "internal error" in line:
            failures.append(line)
    after = _snapshot(work)
    changed = [p for p in after if after[p] != before.get(p)]
    for path in changed:
        data = after[path]
        try:
            import libcst as cst

            from trainlint.source import decode

            text, _, _ = decode(data, path)
            cst.parse_module(text)
            compile(data, path, "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
            compile(data, path, "exec", dont_inherit=True)
        except Exception as exc:  # noqa: BLE001
            failures.append(f"{path}: fixed file does not parse/compile: {type(exc).__name__}: {exc}")
        # A fix writes no trailing whitespace (a line of spaces once stood before a re-laid-out call's ')').
        added = _trailing_whitespace(data) - _trailing_whitespace(before.get(path, b""))
        if added > 0:
            failures.append(f"{path}: the fixes added {added} line(s) ending in whitespace")
    second = _cli_fix(work)
    if "Traceback" in second.stderr:
        failures.append(f"{name}: second --fix run crashed:\n{second.stderr[-3000:]}")
    again = _snapshot(work)
    for path in again:
        if again[path] != after[path]:
            failures.append(f"{path}: not idempotent: a second --fix run changed it again")
    return name, failures, len(changed)


def fix_phase(packages, jobs: int, keep: bool) -> list[str]:
    from concurrent.futures import ThreadPoolExecutor

    tmp = tempfile.mkdtemp(prefix="trainlint-sweep-")
    started = time.perf_counter()
    failures: list[str] = []
    changed_total = 0
    try:
        # Threads only wait on CLI subprocesses; each package is one subprocess at a time.
        with ThreadPoolExecutor(jobs) as pool:
            for name, fails, changed in pool.map(_fix_package, [(n, r, tmp) for n, r in packages]):
                changed_total += changed
                print(f"  fix: {name}: {changed} files changed, {len(fails)} problems", file=sys.stderr)
                failures.extend(fails)
    finally:
        if keep:
            print(f"fixed copies kept in {tmp}", file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    print(f"fix: {changed_total} files changed in {time.perf_counter() - started:.0f}s; {len(failures)} problems")
    return failures


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", default=ecosystem.DEFAULT_CORPUS)
    parser.add_argument("--role", default="all", choices=("train", "speed", "all"))
    parser.add_argument("--packages")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--deep", action="store_true", help="run every analysis on every file")
    parser.add_argument("--fix", action="store_true", help="also run --fix --unsafe-fixes on a temporary copy")
    parser.add_argument("--no-lint", action="store_true", help="skip the lint phase (with --fix)")
    parser.add_argument("--keep", action="store_true", help="keep the fixed copy")
    parser.add_argument("--trainlint", help="sweep the trainlint of this checkout")
    args = parser.parse_args(argv)
    if args.trainlint:
        ecosystem.use_checkout(args.trainlint)
        os.environ["TRAINLINT_CHECKOUT"] = os.path.abspath(args.trainlint)
    packages = ecosystem.corpus_packages(args.corpus, args.role, args.packages.split(",") if args.packages else None)
    if not packages:
        print(f"no corpus packages under {args.corpus}/src", file=sys.stderr)
        return 2
    failures = []
    if not args.no_lint:
        failures += lint_phase(packages, max(1, args.jobs), args.deep)
    if args.fix:
        failures += fix_phase(packages, max(1, args.jobs), args.keep)
    for f in failures:
        print("FAIL", f)
    print("sweep: clean" if not failures else f"sweep: {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
