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
    top-level statements holding them are generated with offset tracking, each placed by finding
    its code in the text; when a statement's code is not found exactly once (or a wanted node is
    not inside a top-level statement), the whole module is generated instead, which is exact."""

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
        tops = []
        for node in wanted:
            top = node
            while parent.get(top) is not None and parent.get(top) is not module:
                top = parent[top]
            if parent.get(top) is not module:
                return False
            if top not in tops:
                tops.append(top)
        if not module.has_trailing_newline and module.body and module.body[-1] in tops:
            return False  # generated alone, the last statement would carry a newline the text lacks
        for top in tops:
            state = _OffsetState(default_indent=module.default_indent, default_newline=module.default_newline)
            top._codegen(state)
            code = "".join(state.tokens)
            base = text.find(code)
            if base < 0 or not code or text.find(code, base + 1) >= 0:
                return False
            for table, spans in ((self.syntactic, state.syntactic), (self.inclusive, state.inclusive)):
                for node, (start, end) in spans.items():
                    table[node] = (base + start, base + end)
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
