"""Line and column arithmetic shared by the reporters, the review and the baseline.

Rows follow Python's tokenizer: a line ends at "\\n", "\\r\\n" or "\\r" (str.splitlines would also
split on form feeds and Unicode separators, which Python source treats as ordinary characters,
and every row after one would then be off by one).
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from trainlint.diagnostics import Diagnostic, Edit, Location

_NEWLINE = re.compile(r"\r\n|\r|\n")


def split_lines(text: str) -> list[str]:
    """The lines of `text` with their line endings kept; "" has no lines."""
    lines = []
    pos = 0
    for m in _NEWLINE.finditer(text):
        lines.append(text[pos : m.end()])
        pos = m.end()
    if pos < len(text):
        lines.append(text[pos:])
    return lines


def strip_eol(line: str) -> str:
    if line.endswith("\r\n"):
        return line[:-2]
    if line.endswith(("\n", "\r")):
        return line[:-1]
    return line


@dataclass
class LineIndex:
    """Maps 1-based rows to character offsets in one source text."""

    text: str

    def __post_init__(self) -> None:
        self.lines = split_lines(self.text)
        self.starts = []
        pos = 0
        for line in self.lines:
            self.starts.append(pos)
            pos += len(line)

    def line(self, row: int) -> str:
        """Row `row` (1-based) without its line ending; "" past the end."""
        if 1 <= row <= len(self.lines):
            return strip_eol(self.lines[row - 1])
        return ""

    def line_start(self, row: int) -> int:
        if row <= len(self.lines):
            return self.starts[row - 1]
        return len(self.text)

    def location(self, offset: int) -> Location:
        """The 1-based row and column of a character offset."""
        row = bisect.bisect_right(self.starts, offset) or 1
        return Location(row, offset - self.starts[row - 1] + 1 if self.starts else offset + 1)

    def line_end(self, row: int, keep_eol: bool = False) -> int:
        """Offset just past row `row`'s content (or past its line ending with keep_eol)."""
        if row > len(self.lines):
            return len(self.text)
        line = self.lines[row - 1]
        end = self.starts[row - 1] + len(line)
        return end if keep_eol else end - (len(line) - len(strip_eol(line)))

    def byte_column(self, row: int, column: int) -> int:
        """1-based UTF-8 byte column of the 1-based character column `column` on `row`."""
        prefix = self.line(row)[: max(column - 1, 0)]
        # Columns past the end of the line (a position just after its last character) stay valid.
        extra = max(column - 1 - len(prefix), 0)
        return len(prefix.encode("utf-8", "surrogatepass")) + extra + 1


def line_range(diag: Diagnostic) -> tuple[int, int]:
    """The rows a finding covers. A range that ends at column 1 of a row stops at the row before:
    it covers no character of that row, and a review comment must not reach it."""
    first, last = diag.start.row, diag.end.row
    if last > first and diag.end.column <= 1:
        last -= 1
    return first, max(first, last)


def edits_overlap(edits: tuple[Edit, ...] | list[Edit]) -> bool:
    """Whether two of edits change the same text (apply_edits refuses them): a fix made of
    them is no fix."""
    ordered = sorted(edits, key=lambda e: (e.start, e.end))
    return any(b.start < a.end for a, b in zip(ordered, ordered[1:]))


def apply_edits(text: str, edits: tuple[Edit, ...] | list[Edit], base: int = 0) -> str:
    """Apply edits (offsets relative to the full source) to `text`, which starts at offset `base`."""
    out = []
    pos = 0
    for edit in sorted(edits, key=lambda e: (e.start, e.end)):
        start, end = edit.start - base, edit.end - base
        if start < pos:
            raise ValueError("overlapping edits")
        out.append(text[pos:start])
        out.append(edit.content)
        pos = end
    out.append(text[pos:])
    return "".join(out)


def whole_line_replacement(source: str, diag: Diagnostic) -> tuple[int, int, str] | None:
    """The fix of `diag` as a replacement of whole rows: (first_row, last_row, new_text).

    GitHub suggestion blocks (and reviewdog's line-based suggestions) replace exactly the lines the
    comment sits on, so the fix can be shown only when every edit falls within the finding's rows.
    new_text has no trailing line ending: the block's closing fence supplies it.
    Returns None when there is no fix or it reaches outside those rows (an import added at the
    top of the file, say).
    """
    if diag.fix is None or not diag.fix.edits:
        return None
    index = LineIndex(source)
    first, last = line_range(diag)
    lo = index.line_start(first)
    hi = index.line_end(last)
    for edit in diag.fix.edits:
        if edit.start < lo or edit.end > hi:
            return None
    try:
        new = apply_edits(source[lo:hi], diag.fix.edits, base=lo)
    except ValueError:
        return None
    return first, last, new
