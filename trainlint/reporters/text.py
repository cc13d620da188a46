"""Human output: `concise` (one line per finding), `full` (with the source lines and the fix) and
`grouped` (the findings under their file's name, as Ruff's)."""

from __future__ import annotations

from collections import Counter

import click

from trainlint.diagnostics import Applicability, RunResult
from trainlint.notebook import CellMap, cell_maps
from trainlint.textpos import apply_edits, edits_overlap, split_lines, strip_eol


def render(result: RunResult, fmt: str) -> str:
    if result.diff_mode:
        # As Ruff's --diff: standard output is a patch (`| git apply`, `| patch -p0`) and nothing
        # else; the cli writes summary() to standard error.
        return "".join(f.diff if f.diff.endswith("\n") else f.diff + "\n" for f in result.files if f.diff)
    lines = _grouped(result) if fmt == "grouped" else _one_by_one(result, full=fmt == "full")
    if not result.quiet:
        lines.extend(summary(result))
    return "\n".join(lines) + ("\n" if lines else "")


def _one_by_one(result: RunResult, full: bool) -> list[str]:
    """`path:row:column: code message` per finding; `full` adds its source rows and its fix."""
    cells = cell_maps(result)
    lines: list[str] = []
    for diag in result.diagnostics:
        # Styled as Ruff's (path bold, code red, [*] cyan); the cli drops the styles unless the
        # output is a terminal (and NO_COLOR is unset), so files and pipes get plain text.
        lines.append(f"{_style(diag.path, bold=True)}:{_row(cells, diag)}:{diag.start.column}: "
                     f"{_finding(result, diag)}")
        if full:
            shift = diag.start.row - cells[diag.path].locate(diag.start.row)[1] if diag.path in cells else 0
            lines.extend(_snippet(result.source_of(diag.path), diag, shift))
            if diag.fix is not None:
                lines.append(f"  = help: {diag.fix.message} ({diag.fix.applicability.value} fix)")
                lines.extend(_fix_lines(result.source_of(diag.path), diag, diag.path in cells))
            lines.append("")
    return lines


def _row(cells: dict[str, CellMap], diag) -> str:
    """The finding's row; in a notebook `cell 3:2`, as Ruff writes a notebook's findings."""
    if diag.path not in cells:
        return str(diag.start.row)
    return "cell {}:{}".format(*cells[diag.path].locate(diag.start.row))


def _finding(result: RunResult, diag) -> str:
    marker = "[*] " if diag.fixable(result.unsafe_fixes) else ""
    return f"{_style(diag.code, fg='red', bold=True)} {_style(marker, fg='cyan')}{diag.message}"


def _grouped(result: RunResult) -> list[str]:
    """Each file's name (bold, underlined), then its findings as `row:column code message`, the
    positions aligned, and a blank line."""
    cells = cell_maps(result)
    by_path: dict[str, list] = {}
    for diag in result.diagnostics:
        by_path.setdefault(diag.path, []).append(diag)
    out = []
    for path, diags in by_path.items():
        out.append(_style(path, bold=True, underline=True) + ":")
        rows = [_row(cells, d) for d in diags]
        row_width = max(len(r) for r in rows)
        col_width = max(len(str(d.start.column)) for d in diags)
        out.extend(f"  {row:>{row_width}}:{d.start.column:<{col_width}} {_finding(result, d)}"
                   for row, d in zip(rows, diags))
        out.append("")
    return out


def _style(text: str, **styles) -> str:
    return click.style(text, **styles) if text else text


def _snippet(source: str | None, diag, shift: int = 0) -> list[str]:
    """The finding's rows with a caret under it; `shift` is subtracted from the row numbers shown
    (a notebook's rows are counted within the cell)."""
    if not source:
        return []
    rows = source.splitlines()
    out = []
    last = min(diag.end.row, diag.start.row + 4, len(rows))
    width = len(str(last - shift))
    for row in range(diag.start.row, last + 1):
        out.append(f"  {row - shift:>{width}} | {rows[row - 1]}")
        if row == diag.start.row:
            end_col = diag.end.column if diag.end.row == row else len(rows[row - 1]) + 1
            out.append(f"  {'':>{width}} | {' ' * (diag.start.column - 1)}{'^' * max(1, end_col - diag.start.column)}")
    return out


def _fix_lines(source: str | None, diag, notebook: bool = False) -> list[str]:
    """The rows the fix changes: `- ` the row as it is (its number now), `+ ` as the fix writes it
    (its number then). Shown for every fix, so a suggestion that --fix never writes is still
    visible as code. In a notebook a row is numbered `cell:row`."""
    if not source or not diag.fix.edits or edits_overlap(diag.fix.edits):
        return []  # overlapping edits (a rule's bug) would make no text to show
    from difflib import SequenceMatcher  # here: only the `full` format needs it

    fixed = apply_edits(source, diag.fix.edits)
    old = [strip_eol(line) for line in split_lines(source)]
    new = [strip_eol(line) for line in split_lines(fixed)]
    label_old, label_new = (_cell_rows(source), _cell_rows(fixed)) if notebook else (str, str)
    rows = []
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        rows += [("-", label_old(i + 1), old[i]) for i in range(i1, i2)]
        rows += [("+", label_new(j + 1), new[j]) for j in range(j1, j2)]
    # One width for the whole fix, so the signs of all its hunks stay in one column.
    width = max((len(label) for _, label, _ in rows), default=0)
    return [f"  {label:>{width}} {sign} {text}".rstrip(" ") for sign, label, text in rows]


def _cell_rows(text: str):
    cells = CellMap.of(text)
    return lambda row: "{}:{}".format(*cells.locate(row))


def summary(result: RunResult) -> list[str]:
    """The closing lines: counts, what --fix (or --unsafe-fixes) would do, what was fixed."""
    diagnostics = result.diagnostics
    fixed = result.fixed
    plural = lambda n, word: f"{n} {word}{'' if n == 1 else 's'}"  # noqa: E731 - six uses below
    out = []
    if result.diff_mode:
        out.append(f"Would fix {plural(fixed, 'error')}." if fixed else "No errors would be fixed.")
    elif result.fix_only:
        out.append(f"Fixed {plural(fixed, 'error')}." if fixed else "No errors fixed.")
    elif fixed:
        out.append(f"Found {plural(len(diagnostics) + fixed, 'error')} ({fixed} fixed, {len(diagnostics)} remaining).")
    elif diagnostics:
        out.append(f"Found {plural(len(diagnostics), 'error')}.")
    elif not result.errors:
        out.append("All checks passed!")
    if result.errors:  # each is said on standard error as it happens; the count closes the run
        out.append(f"{plural(len(result.errors), 'file')} could not be checked"
                   + (" or fixed." if result.fix_mode else "."))
    available = sum(1 for d in diagnostics if d.fixable(result.unsafe_fixes))
    hidden = 0 if result.unsafe_fixes else sum(
        1 for d in diagnostics if d.fix and d.fix.edits and d.fix.applicability is Applicability.UNSAFE)
    if available and not result.diff_mode:
        out.append(f"[*] {available} fixable with the `--fix` option"
                   + (" (with `--unsafe-fixes`)." if result.unsafe_fixes else "."))
    if hidden:
        out.append(f"{hidden} hidden fix{'es' if hidden != 1 else ''} can be enabled with the `--unsafe-fixes` option.")
    if result.show_fixes and fixed:
        # Ruff's layout: per file, how many findings of each rule were fixed.
        out.append(f"{'Would fix' if result.diff_mode else 'Fixed'} {plural(fixed, 'error')}:")
        for f in sorted(result.files, key=lambda f: f.path):
            counts = Counter((d.code, d.name) for d in _applied(f))
            if counts:
                out.append(f"- {f.path}:")
                out.extend(f"    {n} × {code} ({name})" for (code, name), n in sorted(counts.items()))
    return out


def _applied(file_result):
    return file_result.applied
