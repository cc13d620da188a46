#!/usr/bin/env python3
"""Side-by-side wall time of two commits of trainlint on the same files: what a change costs.

    python bench/ab.py BASE_REV PATH... [--repeat 3] [--rev HEAD] [--cwd DIR] [-- TRAINLINT_ARGS...]

BASE_REV (and --rev, default the working tree) are checked out into temporary git worktrees
(the working tree is used as it is), then `python -m trainlint check --select ALL --no-cache
--jobs 1 -q -e PATH...` runs from --cwd (default: the current folder) with PYTHONPATH pointing
at each checkout, interleaved A B A B so that machine noise falls on both alike. Prints each
run, the best and median of each side and their ratio. The interpreter is this one: it needs
trainlint's dependencies (libcst, click) installed, not trainlint itself.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


@contextlib.contextmanager
def checkout(rev: str | None):
    """The repository itself for None (the working tree as it is), else a temporary git worktree
    of rev, removed afterwards. bench/verify_overhead.py --against uses it too."""
    if rev is None:
        yield REPO
        return
    with tempfile.TemporaryDirectory(prefix="trainlint-ab-") as tmp:
        path = Path(tmp) / rev.replace("/", "_")
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "-f", "--detach", str(path), rev],
                       check=True, capture_output=True)
        try:
            yield path
        finally:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(path)],
                           capture_output=True)


def _run(root: Path, cwd: str, paths: list[str], extra: list[str]) -> float:
    env = dict(os.environ, PYTHONPATH=str(root))
    command = [sys.executable, "-m", "trainlint", "check", "--select", "ALL", "--no-cache", "--jobs", "1", "-q",
               "-e", *extra, *paths]
    start = time.perf_counter()
    subprocess.run(command, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("base", help="the commit to compare against")
    parser.add_argument("paths", nargs="+", help="files and folders to check (relative to --cwd)")
    parser.add_argument("--rev", help="the other commit (default: the working tree)")
    parser.add_argument("--repeat", type=int, default=3, help="pairs of runs (default 3)")
    parser.add_argument("--cwd", default=os.getcwd(), help="folder the runs start in")
    args, extra = parser.parse_known_args()
    extra = [a for a in extra if a != "--"]
    with checkout(args.base) as base, checkout(args.rev) as other:
        sides = {args.base: base, args.rev or "working tree": other}
        times: dict[str, list[float]] = {name: [] for name in sides}
        for i in range(args.repeat):
            for name, root in sides.items():
                seconds = _run(root, args.cwd, args.paths, extra)
                times[name].append(seconds)
                print(f"pair {i + 1}: {name}: {seconds:.2f} s", flush=True)
        for name, values in times.items():
            print(f"{name}: best {min(values):.2f} s, median {statistics.median(values):.2f} s")
        (a, av), (b, bv) = times.items()
        print(f"{b} / {a}: {statistics.median(bv) / statistics.median(av):.3f} (medians), "
              f"{min(bv) / min(av):.3f} (best)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
