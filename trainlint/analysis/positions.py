"""Offsets of nodes, from one code-generation pass over the module.

libcst's PositionProvider does the same with line/column objects per token and costs about
4x more; we track one integer offset and compute rows and columns only for reported nodes.
It runs only for files that have findings.
"""

from __future__ import annotations

import bisect
import re
from contextlib import contextmanager
from dataclasses import dataclass, field

import libcst as cst
from libcst._nodes.internal import CodegenState

from trainlint.diagnostics import Location

_NEWLINE = re.compile(r"\r\n|\r|\n")


@dataclass
class _OffsetState(CodegenState):
    offset: int = 0
    # node -> (start, end) of its syntactic extent (no surrounding whitespace or parentheses)
    syntactic: dict = field(default_factory=dict)
    # node -> (start, end) of everything the node generates (what a node replacement rewrites)
    inclusive: dict = field(default_factory=dict)
    _starts: list = field(default_factory=list)

    def add_token(self, value: str) -> None:
        self.tokens.append(value)
        self.offset += len(value)

    def add_indent_tokens(self) -> None:
        self.tokens.extend(self.indent_tokens)
        for token in self.indent_tokens:
            self.offset += len(token)

    def before_codegen(self, node) -> None:
        self._starts.append(self.offset)

    def after_codegen(self, node) -> None:
        start = self._starts.pop()
        self.inclusive[node] = (start, self.offset)
        if node not in self.syntactic:
            self.syntactic[node] = (start, self.offset)

    @contextmanager
    def record_syntactic_position(self, node, *, start_node=None, end_node=None):
        start = self.offset
        try:
            yield
        finally:
            end = self.offset
            if start_node is not None:
                start = self.syntactic.get(start_node, self.inclusive.get(start_node, (start, end)))[0]
            if end_node is not None:
                end = self.syntactic.get(end_node, self.inclusive.get(end_node, (start, end)))[1]
            self.syntactic[node] = (start, end)


class Positions:
    """Offsets of nodes. Given the nodes a file's findings and fixes name (`wanted`), only the
    statement around each is generated with offset tracking (the innermost one whose code occurs
    exactly once in the text at a line start, going outwards while it is ambiguous) and placed where
    its code is found. When even the top-level statement is ambiguous, or a node is not inside a
    statement, the whole module is generated instead, which is exact."""

    def __init__(self, module: cst.Module, text: str, wanted=None, parent=None) -> None:
        self.text = text
        self._line_starts = [0] + [m.end() for m in _NEWLINE.finditer(text)]
        self.syntactic: dict = {}
        self.inclusive: dict = {}
        if wanted is None or parent is None or not self._by_statement(module, text, wanted, parent):
            state = _OffsetState(default_indent=module.default_indent, default_newline=module.default_newline)
            module._codegen(state)
            self.syntactic = state.syntactic
            self.inclusive = state.inclusive

    def _by_statement(self, module: cst.Module, text: str, wanted, parent) -> bool:
        if not module.has_trailing_newline:
            return False  # generated alone, a file's last line would carry a newline the text lacks
        for node in wanted:
            if node in self.syntactic:
                continue  # inside a statement placed already
            if not any(self._place(stmt, indent, module, text) for stmt, indent in _statements_around(node, module, parent)):
                return False
        return True

    def _place(self, stmt, indent: list, module: cst.Module, text: str) -> bool:
        """Generates `stmt` (inside blocks indented by `indent`) and records its nodes' offsets if
        its code occurs exactly once at a line start; a statement's real text is always one such
        occurrence, so a unique one is it."""
        state = _OffsetState(default_indent=module.default_indent, default_newline=module.default_newline)
        state.indent_tokens = list(indent)
        stmt._codegen(state)
        code = "".join(state.tokens)
        if not code:
            return False
        base = -1
        at = text.find(code)
        while at >= 0:
            if at == 0 or text[at - 1] in "\r\n":
                if base >= 0:
                    return False  # a second occurrence: try the enclosing statement
                base = at
            at = text.find(code, at + 1)
        if base < 0:
            return False
        for table, spans in ((self.syntactic, state.syntactic), (self.inclusive, state.inclusive)):
            for each, (start, end) in spans.items():
                table[each] = (base + start, base + end)
        return True

    def span(self, node: cst.CSTNode) -> tuple[int, int]:
        return self.syntactic[node]

    def inclusive_span(self, node: cst.CSTNode) -> tuple[int, int]:
        return self.inclusive[node]

    def location(self, offset: int) -> Location:
        row = bisect.bisect_right(self._line_starts, offset)
        return Location(row, offset - self._line_starts[row - 1] + 1)

    def line_start(self, row: int) -> int:
        return self._line_starts[row - 1]


def _statements_around(node, module: cst.Module, parent) -> list:
    """(statement, indent tokens of the blocks around it) for each statement enclosing `node`
    (itself included), innermost first; empty if `node` is not inside a module-level statement.
    An `elif` is skipped: alone it would generate as `if`, which is not its text."""
    found = []  # (statement, blocks counted below it)
    blocks = []
    current = node
    while current is not None and current is not module:
        up = parent.get(current)
        if isinstance(current, cst.IndentedBlock):
            blocks.append(module.default_indent if current.indent is None else current.indent)
        elif isinstance(current, cst.MatchCase):
            # The `match` indents its cases itself (ctx.indentation): without it, a statement in
            # a `case` body generated one level shallow, was not found, and the whole `match` was.
            blocks.append(module.default_indent if up.indent is None else up.indent)
        elif isinstance(current, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            if not (isinstance(up, cst.If) and up.orelse is current):
                found.append((current, len(blocks)))
        current = up
    if current is not module:
        return []
    return [(stmt, blocks[below:][::-1]) for stmt, below in found]
