#!/usr/bin/env python3
"""What finding the cells' `source` values in a notebook's JSON costs, against one json.loads.

A fix to a notebook replaces only the changed cells' `source` values in its text
(trainlint/notebook_json.py); finding them walks the whole document. The notebook here is made up:
`--cells` code cells, each with an output holding `--output-kb` of base64 (a plotted image), as
notebooks that train and plot are. Each round times json.loads of the text (what reading the
notebook costs anyway) and source_spans of it, alternating; the medians and their ratio are
printed. A ratio of about 1 means each value is decoded once.

usage: python bench/notebook_spans.py [--cells N] [--output-kb K] [--rounds R]
Run it with an interpreter that has this checkout's trainlint (e.g. .venv/bin/python).
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import statistics
import time

from trainlint.notebook_json import source_spans


def notebook(cells: int, output_kb: int) -> str:
    image = base64.b64encode(os.urandom(output_kb * 768)).decode()  # 4 base64 characters per 3 bytes
    cell = {"cell_type": "code", "execution_count": 1, "metadata": {},
            "outputs": [{"output_type": "display_data", "data": {"image/png": image, "text/plain": ["<Figure>"]},
                         "metadata": {}}],
            "source": ["for step, (x, y) in enumerate(loader):\n", "    loss = model(x, y)\n", "    print(loss)\n"]}
    doc = {"cells": [cell] * cells, "metadata": {"kernelspec": {"name": "python3"}}, "nbformat": 4,
           "nbformat_minor": 5}
    return json.dumps(doc, indent=1)


def timed(fn, raw: str) -> float:
    start = time.perf_counter()
    fn(raw)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cells", type=int, default=200)
    parser.add_argument("--output-kb", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    raw = notebook(args.cells, args.output_kb)
    assert len(source_spans(raw)) == args.cells
    loads, spans = [], []
    for _ in range(args.rounds):
        loads.append(timed(json.loads, raw))
        spans.append(timed(source_spans, raw))
    print(f"notebook: {args.cells} cells, {len(raw) / 1e6:.1f} MB")
    print(f"json.loads:   median {statistics.median(loads):.3f} s")
    print(f"source_spans: median {statistics.median(spans):.3f} s")
    print(f"source_spans / json.loads: {statistics.median(spans) / statistics.median(loads):.2f}")


if __name__ == "__main__":
    main()
