"""`--add-noqa`: suppress every current finding with a `# noqa: TLxxx` comment on its first line
(for a finding on a line that cannot take a comment, on the line the engine reads for it, as in
Ruff: where the multi-line string ends, or where the backslash continuation ends).

An existing `# noqa: X, Y` on that line gains the new codes; a blanket `# noqa` already covers
everything and is left alone. Files are rewritten atomically, keeping encoding, BOM, line endings
and mode, and only if they still hold the text the findings were computed from.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections import defaultdict
from trainlint.diagnostics import FileError, RunResult
from trainlint.registry import rules_by_code
from trainlint.source import SourceError, read_source
from trainlint.suppressions import NOQA, comment_rows  # the code list and rows are read as the engine reads them
from trainlint.writer import write_fixed
from trainlint.textpos import split_lines, strip_eol

_CODE_TEXT = re.compile(r"[A-Za-z]+[0-9]+")


def _comments(text: str) -> dict[int, tuple[int, str]]:
    """Per row: its comment token (column, text)."""
    comments: dict[int, tuple[int, str]] = {}
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT:
                comments[tok.start[0]] = (tok.start[1], tok.string)
    except (tokenize.TokenError, SyntaxError, IndentationError):
        pass  # the engine already parsed this file; a tokenizer hiccup only loses precision here
    return comments


def _target_row(lines: list[str], row: int, moved: dict[int, int]) -> int | None:
    """The row whose comment suppresses findings on row (comment_rows: itself, or where its
    string or continuation ends); None when that row still ends with a backslash (the tokenizer
    gave up on the file), where a comment would break the code."""
    row = moved.get(row, row)
    if 1 <= row <= len(lines) and strip_eol(lines[row - 1]).endswith("\\"):
        return None
    return row


def _with_codes(line: str, comment: tuple[int, str] | None, codes: list[str]) -> tuple[str, int]:
    """`line` (no EOL) with `codes` suppressed; returns the new line and how many codes were added."""
    if comment is not None:
        col, text = comment
        m = NOQA.search(text)
        if m is not None:
            if m.group("codes") is None:
                return line, 0  # blanket noqa: nothing to add
            # As written: another tool's codes keep their case, and `tl201` suppresses nothing
            # (the engine compares codes as written), so TL201 is still added beside it.
            existing = _CODE_TEXT.findall(m.group("codes"))
            new = [c for c in codes if c not in existing]
            if not new:
                return line, 0
            merged = "# noqa: " + ", ".join(existing + new)
            start, end = col + m.start(), col + m.end()
            return line[:start] + merged + line[end:], len(new)
    return line.rstrip() + "  # noqa: " + ", ".join(codes), len(codes)


def suppressed_line(text: str, row: int, code: str) -> tuple[int, str] | None:
    """The row whose comment suppresses findings on row `row` (itself, or where its multi-line
    string or backslash continuation ends) and its text (without its line ending) with `code`
    suppressed: an editor's "disable for this line"; None when that row cannot take a comment
    or is already covered."""
    lines = split_lines(text)
    row = _target_row(lines, row, comment_rows(text))
    if row is None or not 1 <= row <= len(lines):
        return None
    new, added = _with_codes(strip_eol(lines[row - 1]), _comments(text).get(row), [code])
    return (row, new) if added else None


def add_noqa(result: RunResult, errors: list[FileError] | None = None) -> int:
    """Insert suppressions for every unfixed finding in `result`; returns how many findings were
    suppressed. Files that cannot be rewritten are skipped and, when `errors` is given, reported there."""

    def fail(path: str, reason: str) -> None:
        if errors is not None:
            errors.append(FileError(path, reason))

    by_file: dict[str, dict[int, list[str]]] = defaultdict(lambda: defaultdict(list))
    rules = rules_by_code()
    for diag in result.diagnostics:
        # An unused suppression (TL001) is not suppressed by another comment: as Ruff's
        # --add-noqa leaves RUF100, it is left to its fix.
        if diag.fixed or getattr(rules.get(diag.code), "audits_suppressions", False):
            continue
        codes = by_file[diag.path][diag.start.row]
        if diag.code not in codes:
            codes.append(diag.code)

    total = 0
    for path, rows in by_file.items():
        try:
            source = read_source(path)
        except SourceError as exc:
            fail(path, f"cannot add noqa: {exc}")
            continue
        text = source.text
        expected = result.source_of(path)
        if expected is not None and expected != text:
            fail(path, "cannot add noqa: the file changed since it was checked")
            continue

        lines = split_lines(text)
        comments, moved = _comments(text), comment_rows(text)
        # The engine honours a suppression on the row a finding starts on, or for a row that
        # cannot take a comment, on the row comment_rows gives (where the string or the
        # continuation ends); a finding with no such row is reported instead of given a comment.
        targets: dict[int, list[str]] = {}
        for row, codes in sorted(rows.items()):
            target = _target_row(lines, row, moved)
            if target is None:
                fail(path, f"cannot add noqa on line {row} ({', '.join(codes)}): no line of its statement can take a comment")
                continue
            row = target
            targets.setdefault(row, [])
            targets[row] += [c for c in codes if c not in targets[row]]
        added = 0
        for row, codes in targets.items():
            if not 1 <= row <= len(lines):
                continue
            line = lines[row - 1]
            content = strip_eol(line)
            new, n = _with_codes(content, comments.get(row), sorted(codes))
            lines[row - 1] = new + line[len(content):]
            added += n
        if not added:
            continue
        try:
            # Keeps encoding, BOM and mode; refuses if the file changed since read_source.
            write_fixed(source, "".join(lines))
        except SourceError as exc:
            fail(path, f"cannot add noqa: {str(exc).removeprefix('not fixed: ')}")
            continue
        total += added
    return total
