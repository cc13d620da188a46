"""Suppression comments: `# noqa`, `# noqa: TL101, TL102`, `# trainlint: ignore[TL101]`, and the
file-level `# trainlint: noqa`. A line suppression applies to findings that start on that line
(for a multi-line call, its first line), and, as in Ruff, to findings on the rows before it that
cannot take a comment: inside a multi-line string that ends on it, or in a statement continued
with backslashes up to it. Codes of other tools in the
same comment are ignored.

Each directive keeps where it and each of its codes sit in the text, and `Suppressions` records
which codes suppressed a finding, so that the unused ones can be reported and taken out
(TL001, `unused_codes`).

As in Ruff, a file-level `# trainlint: noqa` counts only on a line of its own: after code it
suppresses nothing (it switched trainlint off for the whole file from the end of one line). It,
and a `# noqa TL101` without its `:` (read as a blanket `# noqa`, as flake8 and Ruff read it),
are kept as `Suppressions.problems`: warned about on standard error (`warnings`) and reported by
TL001.
"""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass, field

from trainlint.textpos import LineIndex, split_lines, strip_eol

_CODE = r"[A-Z]+[0-9]+"
_CODE_RE = re.compile(_CODE, re.IGNORECASE)
_BRACKETED_CODE = re.compile(r"[^\s,]+")
NOQA = re.compile(rf"#\s*noqa(?::\s*(?P<codes>{_CODE}(?:[\s,]+{_CODE})*))?", re.IGNORECASE)
_IGNORE = re.compile(r"#\s*trainlint:\s*ignore(?:\[(?P<codes>[^\]]*)\])?")
_FILE = re.compile(rf"#\s*trainlint:\s*noqa(?::\s*(?P<codes>{_CODE}(?:[\s,]+{_CODE})*))?")

ALL = None  # a blanket suppression

# What is wrong with a suppression comment (Suppressions.problems).
MISPLACED_FILE_LEVEL, MISSING_COLON = "misplaced file-level", "missing colon"
# A `# noqa` read as blanket that was meant to list codes: `# noqa TL101`, `# noqa:` with none.
_AFTER_BLANKET = re.compile(rf"\s+{_CODE}\b|:", re.IGNORECASE)
# A cheap test for a text that may hold either problem (a superset; parse_suppressions decides).
_MAY_HAVE_PROBLEMS = re.compile(
    rf"\S[^\n]*#\s*trainlint:\s*noqa|noqa(?:[ \t]+{_CODE}|:[ \t]*(?!{_CODE}))", re.IGNORECASE)


@dataclass(frozen=True)
class Code:
    text: str
    start: int  # offsets in the source text
    end: int


@dataclass(frozen=True)
class Directive:
    """One suppression comment (or the suppressing part of one): `# noqa: A1, B2`,
    `# trainlint: ignore[A1]` or the file-level `# trainlint: noqa: A1`."""

    row: int
    start: int  # offset of its `#`
    end: int  # offset just past it (past `]` for ignore[...])
    comment_start: int  # the whole comment token, which may hold other text
    comment_end: int
    codes: tuple[Code, ...] | None  # None: blanket
    file_level: bool = False

    def code_texts(self) -> frozenset | None:
        return None if self.codes is None else frozenset(c.text for c in self.codes)


@dataclass
class Suppressions:
    lines: dict[int, frozenset | None] = field(default_factory=dict)
    file_codes: frozenset | None | bool = False  # False: none; None: all; set: those codes
    directives: list[Directive] = field(default_factory=list)
    # (row or 0 for the file level, code as written) of every code that suppressed a finding
    used: set = field(default_factory=set)
    # rows that cannot take a comment (in a multi-line string, continued with a backslash) -> the
    # row whose comment covers them (comment_rows)
    moved_rows: dict[int, int] = field(default_factory=dict)
    # (directive, MISPLACED_FILE_LEVEL or MISSING_COLON): comments that do not do what they look like
    problems: list[tuple[Directive, str]] = field(default_factory=list)

    def suppressed(self, code: str, row: int) -> bool:
        row = self.moved_rows.get(row, row)
        line = self.lines.get(row, False)
        if line is None or self._used(line, code, row):
            return True
        return self.file_codes is None or self._used(self.file_codes, code, 0)

    def _used(self, written, code: str, key: int) -> bool:
        """Whether codes written in a comment (False: none) name `code`; those that do are recorded."""
        hits = [c for c in written or () if covers(c, code)]
        self.used.update((key, c) for c in hits)
        return bool(hits)


def covers(written: str, code: str) -> bool:
    """Whether a code written in a comment (a code or a prefix such as `TL1`) names `code`."""
    return code.startswith(written)


def comment_rows(text: str) -> dict[int, int]:
    """Each row whose end cannot take a comment -> the row a comment covering it goes on, as in
    Ruff: a row inside a multi-line string, where the string ends; a row continued with a
    backslash, where the continuation ends; chains followed to their last row (a continuation
    into a multi-line string, a string ending on a continued row)."""
    spans = []
    starts: list[int] = []  # f-strings tokenized in parts (Python 3.12+)
    commented: set[int] = set()
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.STRING and tok.start[0] != tok.end[0]:
                spans.append((tok.start[0], tok.end[0]))
            elif tok.type == _FSTRING_START:
                starts.append(tok.start[0])
            elif tok.type == _FSTRING_END and starts:
                first = starts.pop()
                if first != tok.end[0]:
                    spans.append((first, tok.end[0]))
            elif tok.type == tokenize.COMMENT:
                commented.add(tok.start[0])
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return {}
    out: dict[int, int] = {}
    for first, last in spans:
        for row in range(first, last):
            out[row] = max(out.get(row, last), last)
    # A backslash ending a row outside a string and a comment continues the statement on the next row.
    for row, line in enumerate(split_lines(text), start=1):
        if row not in out and row not in commented and strip_eol(line).endswith("\\"):
            out[row] = row + 1
    for row in sorted(out, reverse=True):  # a chain: the end of the last link
        out[row] = out.get(out[row], out[row])
    return out


_FSTRING_START = getattr(tokenize, "FSTRING_START", None)
_FSTRING_END = getattr(tokenize, "FSTRING_END", None)


def _comments(text: str):
    """(row, column, comment text) of real comments; falls back to a line scan if tokenizing fails."""
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT:
                yield tok.start[0], tok.start[1], tok.string
    except (tokenize.TokenError, SyntaxError, IndentationError):
        for row, line in enumerate(text.splitlines(), 1):
            pos = line.find("#")
            if pos >= 0:
                yield row, pos, line[pos:]


def _directive(match: re.Match, row: int, at: int, comment: str, *, file_level=False, bracketed=False) -> Directive:
    codes = None
    group = match.group("codes")
    if group and group.strip():
        base = at + match.start("codes")
        # Inside ignore[...] anything between separators is a code, as the suppression reads it.
        pattern = _BRACKETED_CODE if bracketed else _CODE_RE
        codes = tuple(Code(m.group(), base + m.start(), base + m.end()) for m in pattern.finditer(group))
    return Directive(row, at + match.start(), at + match.end(), at, at + len(comment), codes or None,
                     file_level=file_level)


def parse_suppressions(text: str) -> Suppressions:
    result = Suppressions()
    # Cheap test first: most files hold no suppression comment at all.
    if "noqa" not in text and "trainlint:" not in text:
        return result
    lines = None
    for row, column, comment in _comments(text):
        if "noqa" not in comment.lower() and "trainlint:" not in comment:
            continue
        if lines is None:
            lines = LineIndex(text)  # rows as the tokenizer counts them, to turn row and column into an offset
        at = lines.line_start(row) + column
        file_match = _FILE.search(comment)
        if file_match and comment.lstrip("#").strip().startswith("trainlint"):
            directive = _directive(file_match, row, at, comment, file_level=True)
            if text[lines.line_start(row):at].strip():
                result.problems.append((directive, MISPLACED_FILE_LEVEL))
                continue
            result.directives.append(directive)
            codes = directive.code_texts()
            if codes is ALL:
                result.file_codes = None
            elif result.file_codes is not None:
                result.file_codes = (result.file_codes or frozenset()) | codes
            continue
        for pattern, bracketed in ((NOQA, False), (_IGNORE, True)):
            match = pattern.search(comment)
            if match:
                directive = _directive(match, row, at, comment, bracketed=bracketed)
                result.directives.append(directive)
                if not bracketed and directive.codes is None and _AFTER_BLANKET.match(comment, match.end()):
                    result.problems.append((directive, MISSING_COLON))
                codes = directive.code_texts()
                if row in result.lines:
                    prev = result.lines[row]
                    codes = None if prev is None or codes is None else prev | codes
                result.lines[row] = codes
    if result.lines:
        result.moved_rows = comment_rows(text)
    return result


def problems(text: str) -> list[tuple[Directive, str]]:
    """The suppression comments of text that do not do what they look like (Suppressions.problems);
    a cheap test first, as every checked file's text is asked."""
    if not _MAY_HAVE_PROBLEMS.search(text):
        return []
    return parse_suppressions(text).problems


def problem_warning(path: str, text: str, directive: Directive, problem: str) -> str:
    """The standard-error line for one of `problems`, worded as Ruff's warnings are."""
    return "warning: " + problem_message(text, directive, problem, f"{path}:{directive.row}")


def problem_message(text: str, directive: Directive, problem: str, where: str | None = None) -> str:
    """What is wrong with one of `problems`, saying where (`path:row`) when given: the editor's
    diagnostic (the language server) stands on the comment itself and needs no place."""
    written = text[directive.start:directive.end]
    if problem == MISPLACED_FILE_LEVEL:
        line = "# noqa" + (": " + ", ".join(c.text for c in directive.codes) if directive.codes else "")
        return (f"Unexpected `{written}` directive{f' at {where}' if where else ''}, after code: it suppresses "
                f"nothing. File-level suppression comments must appear on their own line. For line-level "
                f"suppression, write `{line}`.")
    expected = ("a comma-separated list of codes after `:`" if text.startswith(":", directive.end)
                else "`:` followed by a comma-separated list of codes")
    return (f"Invalid `# noqa` directive{f' on {where}' if where else ''}: expected {expected} "
            f"(e.g. `# noqa: TL101`); it suppresses every rule on the line.")


# trainlint's own namespace: a code there that no rule has is a typo or a rule since renamed.
# Written in any case: `# noqa: tl201` suppresses nothing (codes are compared as written).
_OWN_CODE = re.compile(r"TL[0-9]+", re.IGNORECASE)

# Why a code in a suppression is reported (TL001), in the order its message lists them.
UNUSED_CODE, UNKNOWN_CODE, DUPLICATED_CODE = "unused", "unknown", "duplicated"


def unused_codes(suppressions: Suppressions, known: frozenset, enabled: frozenset,
                 audit_code: str) -> list[tuple[Directive, tuple[tuple[Code, str], ...]]]:
    """The directives holding codes that suppress nothing, with those codes and why (UNUSED_CODE,
    UNKNOWN_CODE, DUPLICATED_CODE).

    UNUSED_CODE: a code (or prefix) of rules trainlint knows (`known`), every one of which ran on this
    file (`enabled`), that suppressed no finding; another tool's code, or one of a rule that did
    not run, is left alone, as is a blanket `# noqa`. UNKNOWN_CODE: a code in trainlint's namespace
    (`TL109`) that no rule has. DUPLICATED_CODE: a code the same directive already lists. A directive
    that suppresses `audit_code` itself (TL001) on its line, or a file-level blanket suppression,
    turns the audit off there."""
    if suppressions.file_codes is None:
        return []
    if suppressions.file_codes and any(covers(c, audit_code) for c in suppressions.file_codes):
        return []
    out = []
    for directive in suppressions.directives:
        if directive.codes is None:
            continue
        row = 0 if directive.file_level else directive.row
        line_codes = suppressions.file_codes if directive.file_level else suppressions.lines.get(row)
        if line_codes is None or any(covers(c, audit_code) for c in line_codes):
            continue
        unused = []
        seen = set()
        for code in directive.codes:
            named = {k for k in known if covers(code.text, k)}
            if code.text in seen:
                unused.append((code, DUPLICATED_CODE))
            elif not named and _OWN_CODE.fullmatch(code.text):
                unused.append((code, UNKNOWN_CODE))
            elif named and named <= enabled and (row, code.text) not in suppressions.used:
                unused.append((code, UNUSED_CODE))
            seen.add(code.text)
        if unused:
            out.append((directive, tuple(unused)))
    return out


def audited_problems(suppressions: Suppressions, audit_code: str) -> list[tuple[Directive, str]]:
    """The problems (Suppressions.problems) the audit rule reports: not where a file-level
    suppression covers it, nor on a line where a code list names it. The blanket `# noqa TL101`
    that is itself the problem does not hide it."""
    if suppressions.file_codes is None:
        return []
    if suppressions.file_codes and any(covers(c, audit_code) for c in suppressions.file_codes):
        return []
    named = {d.row for d in suppressions.directives
             if not d.file_level and any(covers(c.text, audit_code) for c in d.codes or ())}
    return [(d, p) for d, p in suppressions.problems if d.row not in named]


def without_codes(lines: LineIndex, directive: Directive, unused: tuple[Code, ...]) -> tuple[int, int, str]:
    """The edit (start, end, new text) that takes `unused` out of `directive`: the codes from its
    list when others remain, else the directive itself, the comment when nothing else is in it,
    and the line when nothing else is on it."""
    assert directive.codes is not None
    text = lines.text
    left = [c.text for c in directive.codes if c not in unused]
    first, last = directive.codes[0].start, directive.codes[-1].end
    if left:
        return first, last, ", ".join(left)
    before = text[directive.comment_start:directive.start]
    after = text[directive.end:directive.comment_end]
    if before.strip():
        # `# type: ignore  # noqa: TL101`: the directive and the blanks before it go.
        start = directive.start
        while start > directive.comment_start and text[start - 1] in " \t":
            start -= 1
        return start, directive.end, ""
    if after.strip():
        # `# noqa: TL101  why`: the comment's own words stay.
        rest = after.lstrip()
        return directive.start, directive.end + len(after) - len(rest), "" if rest.startswith("#") else "# "
    # The whole comment goes, with the blanks before it; so does its line (with its line ending)
    # when nothing else was on it.
    line_start = lines.line_start(directive.row)
    start = directive.comment_start
    while start > line_start and text[start - 1] in " \t":
        start -= 1
    end = lines.line_end(directive.row, keep_eol=True) if start == line_start else directive.comment_end
    return start, end, ""
