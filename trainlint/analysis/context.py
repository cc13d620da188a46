"""FileContext: the shared analyses of one file, as rules see them.

Analyses are computed on first use, once per file, so a file whose enabled rules need only
import names never pays for hot-loop or tensor analysis.
"""

from __future__ import annotations

from functools import cached_property

import libcst as cst

from trainlint.analysis.loops import Loops
from trainlint.analysis.names import Names, dotted
from trainlint.analysis.tensors import Tensors
from trainlint.analysis.tree import TreeIndex


class FileContext:
    def __init__(self, path: str, text: str, module: cst.Module, settings) -> None:
        self.path = path
        self.text = text
        self.module = module
        self.settings = settings
        self.index = TreeIndex(module)

    @cached_property
    def names(self) -> Names:
        return Names(self.index)

    @cached_property
    def loops(self) -> Loops:
        return Loops(self.index, self.names, tuple(getattr(self.settings, "interval_names", ()) or ()))

    @cached_property
    def tensors(self) -> Tensors:
        return Tensors(self.index, self.names)

    # -- small questions rules ask often ---------------------------------------------------

    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        return self.index.parent.get(node)

    def is_per_step(self, node: cst.CSTNode) -> bool:
        return self.loops.is_per_step(node)

    def code(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)

    @staticmethod
    def keyword(call: cst.Call, name: str) -> cst.Arg | None:
        for arg in call.args:
            if arg.keyword is not None and arg.keyword.value == name:
                return arg
        return None

    @staticmethod
    def has_star_kwargs(call: cst.Call) -> bool:
        return any(arg.star == "**" for arg in call.args)

    @staticmethod
    def positional(call: cst.Call, index: int) -> cst.Arg | None:
        positional = [a for a in call.args if a.keyword is None and not a.star]
        return positional[index] if index < len(positional) else None

    @staticmethod
    def literal(expr: cst.BaseExpression | None):
        """The value of a simple literal (int, float, True/False/None, string), else a sentinel."""
        if expr is None:
            return UNKNOWN
        if isinstance(expr, cst.Integer):
            return int(expr.value.replace("_", ""), 0)
        if isinstance(expr, cst.Float):
            return float(expr.value.replace("_", ""))
        if isinstance(expr, cst.Name) and expr.value in ("True", "False", "None"):
            return {"True": True, "False": False, "None": None}[expr.value]
        if isinstance(expr, cst.SimpleString):
            return expr.evaluated_value
        return UNKNOWN

    @staticmethod
    def dotted(expr) -> str | None:
        return dotted(expr)

    def with_keyword(self, call: cst.Call, name: str, value: str) -> cst.Call:
        """`call` with keyword `name=value` set (replaced if present, else appended in its style)."""
        value_expr = cst.parse_expression(value)
        existing = self.keyword(call, name)
        if existing is not None:
            new_args = [a.with_changes(value=value_expr) if a is existing else a for a in call.args]
            return call.with_changes(args=new_args)
        args = list(call.args)
        new_arg = cst.Arg(keyword=cst.Name(name), value=value_expr,
                          equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                                                whitespace_after=cst.SimpleWhitespace("")))
        if not args:
            return call.with_changes(args=[new_arg])
        last = args[-1]
        if isinstance(last.comma, cst.Comma):
            # Trailing comma (usually one argument per line): add ours in the same layout.
            new_arg = new_arg.with_changes(comma=last.comma)
            prev_layout = args[-2].comma if len(args) > 1 and isinstance(args[-2].comma, cst.Comma) else last.comma
            args[-1] = last.with_changes(comma=prev_layout)
            args.append(new_arg)
        else:
            args[-1] = last.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
            args.append(new_arg)
        return call.with_changes(args=args)

    def without_keyword(self, call: cst.Call, name: str) -> cst.Call:
        args = [a for a in call.args if not (a.keyword is not None and a.keyword.value == name)]
        if args and len(args) < len(call.args):
            original_last = call.args[-1]
            args[-1] = args[-1].with_changes(comma=original_last.comma)
        return call.with_changes(args=args)


class _Unknown:
    def __repr__(self) -> str:
        return "UNKNOWN"

    def __bool__(self) -> bool:
        return False


UNKNOWN = _Unknown()
