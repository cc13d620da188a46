"""Suppression comments: `# noqa`, `# noqa: TL101, TL102`, `# trainlint: ignore[TL101]`, and the
file-level `# trainlint: noqa`. A line suppression applies to findings that start on that line
(for a multi-line call, its first line). Codes of other tools in the same comment are ignored.
"""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass, field

_CODE = r"[A-Z]+[0-9]+"
_NOQA = re.compile(rf"#\s*noqa(?::\s*(?P<codes>{_CODE}(?:[\s,]+{_CODE})*))?", re.IGNORECASE)
_IGNORE = re.compile(rf"#\s*trainlint:\s*ignore(?:\[(?P<codes>[^\]]*)\])?")
_FILE = re.compile(rf"#\s*trainlint:\s*noqa(?::\s*(?P<codes>{_CODE}(?:[\s,]+{_CODE})*))?")

ALL = None  # a blanket suppression


def _codes(text: str | None):
    if not text:
        return ALL
    return frozenset(c for c in re.split(r"[\s,]+", text.strip()) if c)


@dataclass
class Suppressions:
    lines: dict[int, frozenset | None] = field(default_factory=dict)
    file_codes: frozenset | None | bool = False  # False: none; None: all; set: those codes

    def suppressed(self, code: str, row: int) -> bool:
        if self.file_codes is None or (self.file_codes and code in self.file_codes):
            return True
        if row in self.lines:
            codes = self.lines[row]
            return codes is None or any(code == c or code.startswith(c) for c in codes)
        return False


def _comments(text: str):
    """(row, comment text) of real comments; falls back to a line scan if tokenizing fails."""
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT:
                yield tok.start[0], tok.string
    except (tokenize.TokenError, SyntaxError, IndentationError):
        for row, line in enumerate(text.splitlines(), 1):
            pos = line.find("#")
            if pos >= 0:
                yield row, line[pos:]


def parse_suppressions(text: str) -> Suppressions:
    result = Suppressions()
    # Cheap test first: most files hold no suppression comment at all.
    if "noqa" not in text and "trainlint:" not in text:
        return result
    for row, comment in _comments(text):
        file_match = _FILE.search(comment)
        if file_match and comment.lstrip("#").strip().startswith("trainlint"):
            codes = _codes(file_match.group("codes"))
            if codes is ALL:
                result.file_codes = None
            elif result.file_codes is not None:
                result.file_codes = (result.file_codes or frozenset()) | codes
            continue
        for pattern in (_NOQA, _IGNORE):
            match = pattern.search(comment)
            if match:
                codes = _codes(match.group("codes"))
                if row in result.lines:
                    prev = result.lines[row]
                    codes = None if prev is None or codes is None else prev | codes
                result.lines[row] = codes
    return result
