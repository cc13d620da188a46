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
    def __init__(self, module: cst.Module, text: str) -> None:
        state = _OffsetState(default_indent=module.default_indent, default_newline=module.default_newline)
        module._codegen(state)
        self.syntactic = state.syntactic
        self.inclusive = state.inclusive
        self.text = text
        self._line_starts = [0] + [m.end() for m in _NEWLINE.finditer(text)]

    def span(self, node: cst.CSTNode) -> tuple[int, int]:
        return self.syntactic[node]

    def inclusive_span(self, node: cst.CSTNode) -> tuple[int, int]:
        return self.inclusive[node]

    def location(self, offset: int) -> Location:
        row = bisect.bisect_right(self._line_starts, offset)
        return Location(row, offset - self._line_starts[row - 1] + 1)

    def line_start(self, row: int) -> int:
        return self._line_starts[row - 1]
