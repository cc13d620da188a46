"""`--statistics`: counts per rule instead of findings, as a table (concise/full) or, with
`--output-format json`, as Ruff writes it: a list of {code, name, count, fixable}."""

from __future__ import annotations

import json
from collections import Counter

from trainlint.diagnostics import RunResult

FORMATS = ("concise", "full", "json")


def _rows(result: RunResult) -> list[tuple[str, str, int, bool]]:
    """(code, name, count, fixable), most frequent first; fixable when --fix (with the
    --unsafe-fixes given) would write the fix of at least one of them."""
    counts = Counter((d.code, d.name) for d in result.diagnostics)
    fixable = {d.code for d in result.diagnostics if d.fixable(result.unsafe_fixes)}
    return [(code, name, n, code in fixable)
            for (code, name), n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0][0]))]


def render(result: RunResult, fmt: str) -> str:
    rows = _rows(result)
    if fmt == "json":
        return json.dumps([{"code": code, "name": name, "count": n, "fixable": fixable}
                           for code, name, n, fixable in rows], indent=2) + "\n"
    # As Ruff: when any row is fixable, the others say `[ ] ` so the names stay in one column.
    blank = "[ ] " if any(fixable for *_, fixable in rows) else ""
    lines = [f"{n:>5}\t{code}\t{'[*] ' if fixable else blank}{name}" for code, name, n, fixable in rows]
    return "\n".join(lines) + ("\n" if lines else "")
