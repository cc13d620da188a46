#!/usr/bin/env python3
"""Where a cold trainlint run spends its time, and which rules' triggers let files past the
text prefilter. Profiles `trainlint check --no-cache --jobs 1` in this process with cProfile.

usage: python bench/profile_cold.py [--select ALL] [--triggers 'TL401=.amp| amp'] [PATHS...]
  PATHS default to the staged train2 tree of bench/run.py (run that once first).
Run it with an interpreter that has this checkout's trainlint (e.g. .venv/bin/python).
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import os
import pstats
import sys
import time
from collections import Counter
from pathlib import Path

CACHE = Path(os.environ.get("TRAINLINT_BENCH_CACHE", Path.home() / ".cache" / "trainlint-bench"))

# (label, file suffix, function name): cumulative time of these functions is the phase's cost.
# Phases nest (the node index is built inside lint_text), so each is also shown as a share.
PHASES = [
    ("whole run (trainlint.runner.run)", "trainlint/runner.py", "run"),
    ("stdlib ast.parse of files no rule needs (syntax check)", "trainlint/engine.py", "check_syntax"),
    ("libcst.parse_module", "trainlint/engine.py", "parse"),
    ("node index (analysis.tree)", "trainlint/analysis/context.py", "__init__"),
    ("positions of findings (analysis.positions, codegen)", "trainlint/analysis/positions.py", "__init__"),
    ("findings -> diagnostics (engine._resolve, includes positions)", "trainlint/engine.py", "_resolve"),
    ("discovery", "trainlint/discovery.py", "discover"),
    ("reading and decoding files", "trainlint/source.py", "read_source"),
]


def phase_times(stats: pstats.Stats) -> list[tuple[str, float]]:
    out = []
    for label, suffix, name in PHASES:
        total = 0.0
        for (filename, _line, func), (_cc, _nc, _tt, ct, _callers) in stats.stats.items():
            if func == name and filename.replace(os.sep, "/").endswith(suffix):
                total += ct
        out.append((label, total))
    return out


def rule_time(stats: pstats.Stats) -> list[tuple[str, float]]:
    """Own time spent in rule modules and the shared analyses, per module (tottime)."""
    per = Counter()
    for (filename, _line, _func), (_cc, _nc, tt, _ct, _callers) in stats.stats.items():
        f = filename.replace(os.sep, "/")
        for marker in ("/rules/", "/trainlint/analysis/"):
            if marker in f:
                per[marker.strip("/").split("/")[-1] + "/" + f.rsplit("/", 1)[-1]] += tt
    return per.most_common(12)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--select", default="ALL")
    parser.add_argument("--top", type=int, default=25, help="rows of the raw cProfile listing")
    parser.add_argument("--triggers", action="append", default=[], metavar="CODE=WORD|WORD",
                        help="try other trigger words for a rule (e.g. 'TL401=.amp| amp'); repeatable")
    parser.add_argument("paths", nargs="*")
    args = parser.parse_args()
    paths = args.paths
    if not paths:
        tree = CACHE / "work" / "train2" / "tree"
        if not tree.is_dir():
            sys.exit(f"profile: {tree} missing; run bench/run.py once, or pass PATHS")
        os.chdir(tree)
        paths = sorted(p.name for p in tree.iterdir())

    started = time.perf_counter()
    import trainlint.cli  # the import cost is part of every run: measure it too

    imported = time.perf_counter() - started
    from trainlint.config import SettingsResolver
    from trainlint.discovery import discover
    from trainlint.engine import select_for_text
    from trainlint.runner import Mode, run

    from trainlint.registry import get_rule

    for spec in args.triggers:
        code, _, words = spec.partition("=")
        get_rule(code).triggers = tuple(words.split("|"))
        print(f"trying {code} triggers {get_rule(code).triggers!r}")
    resolver = SettingsResolver(None, {"select": (args.select,) if args.select else None})
    profiler = cProfile.Profile()
    wall = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        result = profiler.runcall(run, paths, resolver, Mode(), jobs=1, cache=None)
    wall = time.perf_counter() - wall
    stats = pstats.Stats(profiler)

    import hashlib

    found = sorted(f"{d.path}:{d.start.row}:{d.start.column}:{d.code}" for d in result.diagnostics)
    # A digest of the findings, so runs with other --triggers can be checked to find the same.
    print(f"findings: {len(found)}, digest {hashlib.sha256(chr(10).join(found).encode()).hexdigest()[:12]}")
    print(f"import trainlint.cli: {imported:.2f} s (not profiled)")
    print(f"profiled run: {wall:.2f} s wall (cProfile roughly doubles pure-Python time)\n")
    total = dict(phase_times(stats))[PHASES[0][0]] or 1.0
    print("| phase | cumulative s | share of run |")
    print("|---|---|---|")
    for label, seconds in phase_times(stats):
        print(f"| {label} | {seconds:.2f} | {seconds / total * 100:.0f}% |")
    print("\nOwn time in rules and shared analyses (top modules):")
    for name, seconds in rule_time(stats):
        print(f"  {seconds:6.2f} s  {name}")

    # The prefilter: which rules make files go on to parsing, and how many only for that rule.
    files, _ = discover(paths, resolver)
    passing, lines_passing, lines_all = 0, 0, 0
    per_rule, only = Counter(), Counter()
    for path in files:
        try:
            with open(path, encoding="utf-8", errors="replace") as fh:
                text = fh.read()
        except OSError:
            continue
        n = text.count("\n")
        lines_all += n
        active = select_for_text(resolver.for_path(path).active_rules(path), text)
        if active:
            passing += 1
            lines_passing += n
        for a in active:
            per_rule[a.rule.code] += 1
        if len(active) == 1:
            only[active[0].rule.code] += 1
    print(f"\nPrefilter: {passing} of {len(files)} files ({lines_passing} of {lines_all} lines) go on to parsing.")
    print("| rule | files it lets through | files only it lets through | triggers |")
    print("|---|---|---|---|")
    rules = {a.rule.code: a.rule for a in resolver.for_path(files[0] if files else ".").active_rules()}
    for code, n in per_rule.most_common(8):
        print(f"| {code} | {n} | {only[code]} | {', '.join(repr(t) for t in rules[code].triggers)[:80]} |")

    print(f"\nTop {args.top} functions by cumulative time:")
    stats.sort_stats("cumulative").print_stats(args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
