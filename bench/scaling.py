"""How check time grows with the number of training loops in one file (it must stay linear).

Not a test: a benchmark to run by hand. Generates files of N small training functions (each a loop
with a backward, an optimizer step and a per-step `.item()` read, so every host-sync rule has work
to do), checks each in this process with every rule on, and prints the seconds and the time per
function; the last column, the ratio of per-function times to the smallest file's, stays near 1
when the work is linear (it read 4x at N=1000 before the logging interval was looked up once per
file, and 5 minutes at N=3000).

    python bench/scaling.py [--sizes 250 500 1000 2000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from trainlint.api import lint_source  # noqa: E402
from trainlint.config import Settings  # noqa: E402

FUNCTION = ("def f{i}(loader, model, opt):\n    for x in loader:\n        model(x).sum().backward()\n"
            "        opt.step()\n        print(x.sum().item())\n\n\n")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[250, 500, 1000, 2000])
    p.add_argument("--repeat", type=int, default=3)
    a = p.parse_args()
    settings = Settings(select=("ALL",))
    base = None
    print(f"{'functions':>10} {'seconds':>9} {'ms/function':>12} {'ratio':>7}")
    for n in a.sizes:
        source = "import torch\n\n\n" + "".join(FUNCTION.format(i=i) for i in range(n))
        times = []
        for _ in range(a.repeat):
            start = time.perf_counter()
            lint_source(source, path="many.py", settings=settings)
            times.append(time.perf_counter() - start)
        seconds = statistics.median(times)
        per = seconds / n
        base = base or per
        print(f"{n:>10} {seconds:>9.2f} {per * 1000:>12.2f} {per / base:>7.2f}")


if __name__ == "__main__":
    main()
