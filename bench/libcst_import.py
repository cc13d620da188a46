#!/usr/bin/env python3
"""What trainlint.libcst_import saves: importing libcst plainly vs with the kept dataclass code.

Each sample is a fresh interpreter that imports libcst one way and reports the import's wall time;
the two ways alternate, round by round, and the medians and their ratio are printed. The kept file
is a temporary one, filled by one run before the rounds.

usage: python bench/libcst_import.py [--rounds N]
Run it with an interpreter that has this checkout's trainlint (e.g. .venv/bin/python).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile

SAMPLE = r"""
import sys, time
from trainlint import libcst_import
cache = None if sys.argv[1] == "-" else sys.argv[1]
start = time.perf_counter()
libcst_import.import_libcst(cache)
print(time.perf_counter() - start)
"""


def sample(cache: str) -> float:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    out = subprocess.run([sys.executable, "-c", SAMPLE, cache], capture_output=True, text=True, check=True, env=env)
    return float(out.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        kept_file = os.path.join(tmp, "kept.marshal")
        sample(kept_file)  # fills the file
        plain, kept = [], []
        for _ in range(args.rounds):
            plain.append(sample("-"))
            kept.append(sample(kept_file))
    p, k = statistics.median(plain), statistics.median(kept)
    print(f"import libcst, median of {args.rounds} fresh interpreters each (alternating):")
    print(f"  plain:               {p * 1000:6.1f} ms   (min {min(plain) * 1000:.1f})")
    print(f"  kept dataclass code: {k * 1000:6.1f} ms   (min {min(kept) * 1000:.1f})")
    print(f"  plain / kept: {p / k:.2f}x, {(p - k) * 1000:.0f} ms less per run")


if __name__ == "__main__":
    main()
