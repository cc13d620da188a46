"""Human output: `concise` (one line per finding) and `full` (with the source lines and the fix)."""

from __future__ import annotations

from collections import Counter

from trainlint.diagnostics import Applicability, RunResult
from trainlint.textpos import apply_edits, split_lines, strip_eol


def _fix_marker(diag) -> str:
    return "[*] " if diag.fix is not None and diag.fix.applicability is Applicability.SAFE and diag.fix.edits else ""


def render(result: RunResult, fmt: str) -> str:
    lines: list[str] = []
    diagnostics = result.diagnostics
    if result.statistics:
        return _statistics(diagnostics)
    for diag in diagnostics:
        lines.append(f"{diag.path}:{diag.start.row}:{diag.start.column}: {diag.code} {_fix_marker(diag)}{diag.message}")
        if fmt == "full":
            lines.extend(_snippet(result.source_of(diag.path), diag))
            if diag.fix is not None:
                lines.append(f"  = help: {diag.fix.message} ({diag.fix.applicability.value} fix)")
                lines.extend(_fix_lines(result.source_of(diag.path), diag))
            lines.append("")
    for file in result.files:
        if file.diff:
            lines.append(file.diff.rstrip("\n"))
    lines.extend(_summary(result))
    return "\n".join(lines) + ("\n" if lines else "")


def _snippet(source: str | None, diag) -> list[str]:
    if not source:
        return []
    rows = source.splitlines()
    out = []
    last = min(diag.end.row, diag.start.row + 4, len(rows))
    width = len(str(last))
    for row in range(diag.start.row, last + 1):
        out.append(f"  {row:>{width}} | {rows[row - 1]}")
        if row == diag.start.row:
            end_col = diag.end.column if diag.end.row == row else len(rows[row - 1]) + 1
            out.append(f"  {'':>{width}} | {' ' * (diag.start.column - 1)}{'^' * max(1, end_col - diag.start.column)}")
    return out


def _fix_lines(source: str | None, diag) -> list[str]:
    """The rows the fix changes: `- ` the row as it is (its number now), `+ ` as the fix writes it
    (its number then). Shown for every fix, so a suggestion that --fix never writes is still
    visible as code."""
    if not source or not diag.fix.edits:
        return []
    from difflib import SequenceMatcher  # here: only the `full` format needs it

    old = [strip_eol(line) for line in split_lines(source)]
    new = [strip_eol(line) for line in split_lines(apply_edits(source, diag.fix.edits))]
    out = []
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        width = len(str(max(i2, j2)))
        out += [f"  {i + 1:>{width}} - {old[i]}".rstrip(" ") for i in range(i1, i2)]
        out += [f"  {j + 1:>{width}} + {new[j]}".rstrip(" ") for j in range(j1, j2)]
    return out


def _summary(result: RunResult) -> list[str]:
    diagnostics = result.diagnostics
    out = []
    fixed = result.fixed
    if diagnostics or fixed:
        if fixed and not any(f.diff for f in result.files):
            out.append(f"Found {len(diagnostics) + fixed} error{'s' if len(diagnostics) + fixed != 1 else ''} ({fixed} fixed, {len(diagnostics)} remaining).")
        elif any(f.diff for f in result.files):
            out.append(f"Would fix {fixed} error{'s' if fixed != 1 else ''}.")
        else:
            out.append(f"Found {len(diagnostics)} error{'s' if len(diagnostics) != 1 else ''}.")
        safe = sum(1 for d in diagnostics if d.fix and d.fix.edits and d.fix.applicability is Applicability.SAFE)
        unsafe = sum(1 for d in diagnostics if d.fix and d.fix.edits and d.fix.applicability is Applicability.UNSAFE)
        if safe:
            out.append(f"[*] {safe} fixable with the `--fix` option.")
        if unsafe:
            out.append(f"{unsafe} hidden fix{'es' if unsafe != 1 else ''} can be enabled with the `--unsafe-fixes` option.")
    elif not result.errors:
        out.append("All checks passed!")
    if result.show_fixes and fixed:
        counts = Counter(d.code for f in result.files for d in _applied(f))
        out.append("Fixed:")
        out.extend(f"  {code}: {n}" for code, n in sorted(counts.items()))
    return out


def _applied(file_result):
    return file_result.applied


def _statistics(diagnostics) -> str:
    counts = Counter((d.code, d.name) for d in diagnostics)
    fixable = Counter(d.code for d in diagnostics if d.fix and d.fix.edits and d.fix.applicability is Applicability.SAFE)
    lines = []
    for (code, name), n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0][0])):
        lines.append(f"{n:>5}\t{code}\t{'[*] ' if fixable[code] else ''}{name}")
    return "\n".join(lines) + ("\n" if lines else "")
