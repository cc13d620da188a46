#!/usr/bin/env python3
"""Where the time of a `--jobs N` run goes: the serial start, and each worker's busy and idle time.

Runs `trainlint check --select ALL --no-cache --jobs N PATHS` in this process (as the console
entry point would, minus its final os._exit) with a timestamp around every task in the workers,
and prints: when the first task started (everything before it is serial: interpreter, imports,
discovery, loading libcst and the engine before forking), each worker's first start, last end,
summed task time and share busy, and when the run ended. Compare `--jobs 1` and `--jobs 2` to see
how far the parallel part is from half of the one-job work.

usage: python bench/pool_timeline.py [--jobs N] [PATHS...]
  PATHS default to the staged train2 tree of bench/run.py (run that once first).
Run it with an interpreter that has this checkout's trainlint (e.g. .venv/bin/python).
"""

from __future__ import annotations

import time

T0 = time.perf_counter()  # before trainlint is imported: the imports are part of the serial start

import argparse  # noqa: E402
import contextlib  # noqa: E402
import io  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

CACHE = Path(os.environ.get("TRAINLINT_BENCH_CACHE", Path.home() / ".cache" / "trainlint-bench"))


_original_task: list = []


def timed_task(item):
    """runner._task with the worker's pid and the task's start and end carried back on the result
    (module level: the pool sends the task function to the workers by name)."""
    start = time.perf_counter()
    index, result, digest = _original_task[0](item)
    result.__dict__["_stamp"] = (os.getpid(), start - T0, time.perf_counter() - T0)
    return index, result, digest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("paths", nargs="*")
    args = parser.parse_args()
    tree = CACHE / "work" / "train2" / "tree"
    paths = args.paths or [str(tree / "torchtune-0.6.1"), str(tree / "litgpt-0.5.13")]

    import trainlint.cli as cli
    import trainlint.runner as runner

    stamps: list[tuple[int, float, float]] = []
    _original_task.append(runner._task)
    execute = runner._execute

    def collecting_execute(work, jobs, own_process=False):
        for index, result, digest in execute(work, jobs, own_process):
            stamps.append(result.__dict__.pop("_stamp"))
            yield index, result, digest

    runner._task = timed_task  # forked workers inherit the patched module
    runner._execute = collecting_execute
    process = cli._Process()  # the console entry point's own-process settings (GC tuning)
    argv = ["check", "--select", "ALL", "--no-cache", "--jobs", str(args.jobs), *paths]
    with contextlib.redirect_stdout(io.StringIO()):
        try:
            cli.cli(argv, prog_name="trainlint", obj=process)
        except SystemExit:
            pass
    end = time.perf_counter() - T0

    workers: dict[int, list[float]] = {}
    for pid, start, stop in stamps:
        first, last, busy = workers.get(pid, [start, stop, 0.0])
        workers[pid] = [min(first, start), max(last, stop), busy + stop - start]
    print(f"--jobs {args.jobs}: {len(stamps)} files, run ended at {end:.3f} s")
    print(f"serial start (until the first task): {min(s for _, s, _ in stamps):.3f} s")
    for n, (pid, (first, last, busy)) in enumerate(sorted(workers.items()), 1):
        span = last - first
        print(f"worker {n}: {first:.3f} -> {last:.3f} s, busy {busy:.3f} s of {span:.3f} s "
              f"({100 * busy / span if span else 100:.0f}%)")
    print(f"summed task time: {sum(w[2] for w in workers.values()):.3f} s")


if __name__ == "__main__":
    sys.exit(main())
