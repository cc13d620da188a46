"""What a condition inside a module-local function reads as on given calls of that function.

A function that several loaders go through (`run_epoch(model, train_loader, opt)` and
`run_epoch(model, val_loader)`) trains on some calls only, under a condition on its parameters:
`if optimizer is not None:`, `if train:`, `if mode == "train":`, often through a local name
(`training = optimizer is not None`). Given the calls that lead into the function (outermost
first), `Conditions.truth` reads such a condition with what those calls pass: literal arguments,
parameter defaults, arguments that are themselves parameters of the calling function (read one
call further out), local names assigned once, and module constants. Anything else is UNKNOWN:
this is read, never run.
"""

from __future__ import annotations

import operator

import libcst as cst

from trainlint.analysis.literals import UNKNOWN, literal
from trainlint.analysis.tree import TreeIndex, parameter
from trainlint.analysis.variables import Bindings


class _NotNone:
    """A value known not to be None (a call's result, a collection, a lambda) whose truth and
    equality are not known: enough for `optimizer is not None`."""

    def __repr__(self) -> str:
        return "NOT_NONE"

    def __bool__(self) -> bool:
        return False


NOT_NONE = _NotNone()
_NOT_NONE_EXPRESSIONS = (cst.Call, cst.Lambda, cst.List, cst.Tuple, cst.Dict, cst.Set, cst.ListComp,
                         cst.SetComp, cst.DictComp, cst.GeneratorExp, cst.FormattedString)
_EQUALITY = {cst.Equal: operator.eq, cst.NotEqual: operator.ne}
_DEPTH = 8  # names read through names (`train = is_train`, `is_train = mode == "train"`)


class Conditions:
    """Conditions of the module's functions, read on given calls of them. bind_args pairs a
    call of a module-local function with that function's parameters (Loops.bind_args: the
    function in hand, not looked up again by its name)."""

    def __init__(self, index: TreeIndex, variables: Bindings, bind_args) -> None:
        self.index = index
        self.variables = variables
        self.bind_args = bind_args

    def truth(self, test: cst.BaseExpression, fn: cst.FunctionDef | None, calls: tuple, given: tuple = (),
              depth: int = 0):
        """True or False when test, in function fn reached through calls (the calls of module-local
        functions that lead to fn, outermost first; the last calls fn), is known to be that on
        those calls, with given's names bound ((name, function, value) each); else UNKNOWN."""
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            inner = self.truth(test.expression, fn, calls, given, depth)
            return UNKNOWN if inner is UNKNOWN else not inner
        if isinstance(test, cst.BooleanOperation):
            left = self.truth(test.left, fn, calls, given, depth)
            decisive = isinstance(test.operator, cst.Or)  # `a or b` is True once a is; `a and b` False once a is False
            if left is decisive:
                return decisive
            right = self.truth(test.right, fn, calls, given, depth)
            if right is decisive:
                return decisive
            return UNKNOWN if UNKNOWN in (left, right) else not decisive
        value = self.value(test, fn, calls, given, depth)
        if value is UNKNOWN or value is NOT_NONE:
            return UNKNOWN
        return bool(value)

    def value(self, expr: cst.BaseExpression, fn: cst.FunctionDef | None, calls: tuple, given: tuple = (),
              depth: int = 0):
        """The value of expr in fn on calls: a literal, NOT_NONE, or UNKNOWN."""
        if depth > _DEPTH:
            return UNKNOWN
        if isinstance(expr, _NOT_NONE_EXPRESSIONS):
            return NOT_NONE
        if isinstance(expr, cst.Comparison):
            return self._compare(expr, fn, calls, given, depth + 1)
        if isinstance(expr, cst.BooleanOperation) or (isinstance(expr, cst.UnaryOperation)
                                                      and isinstance(expr.operator, cst.Not)):
            return self.truth(expr, fn, calls, given, depth + 1)
        if isinstance(expr, cst.Name) and expr.value not in ("True", "False", "None"):
            return self._name(expr.value, fn, calls, given, depth + 1)
        return literal(expr)

    def _compare(self, expr: cst.Comparison, fn, calls: tuple, given: tuple, depth: int):
        if len(expr.comparisons) != 1:
            return UNKNOWN
        target = expr.comparisons[0]
        left = self.value(expr.left, fn, calls, given, depth)
        right = self.value(target.comparator, fn, calls, given, depth)
        if UNKNOWN in (left, right):
            return UNKNOWN
        op = type(target.operator)
        if op in (cst.Is, cst.IsNot):
            if left is NOT_NONE and right is NOT_NONE:
                return UNKNOWN
            if NOT_NONE in (left, right):
                same = False if None in (left, right) else UNKNOWN
            elif all(v is None or isinstance(v, bool) for v in (left, right)):
                same = left is right
            else:
                return UNKNOWN  # `is` of numbers and strings is not a promise Python makes
            return same if same is UNKNOWN or op is cst.Is else not same
        if op in _EQUALITY and NOT_NONE not in (left, right):
            return _EQUALITY[op](left, right)
        return UNKNOWN

    def _name(self, name: str, fn: cst.FunctionDef | None, calls: tuple, given: tuple, depth: int):
        """A name given in fn, a parameter of fn (what the last call passes, else its default), a
        name fn assigns once, or a module variable assigned once that fn reads."""
        for known, scope, value in given:
            if known == name and scope is fn:
                return value
        bound = self.variables.of(name)
        if bound is None:
            return UNKNOWN  # declared global or nonlocal somewhere
        here = bound.get(fn, [])
        param = parameter(fn, name) if fn is not None else None
        if param is not None:
            if len(here) != 1:
                return UNKNOWN  # re-assigned in the function
            return self._argument(param, fn, calls, given, depth)
        if fn is not None and here:
            return self._assigned(here, fn, calls, given, depth)
        if any(scope is not None and scope is not fn and self.index.contains(scope, fn) for scope in bound):
            return UNKNOWN  # an enclosing function's variable (a closure)
        module = bound.get(None, [])
        return self._assigned(module, None, (), (), depth) if module else UNKNOWN

    def _assigned(self, bindings: list, scope, calls: tuple, given: tuple, depth: int):
        if len(bindings) != 1 or bindings[0][0] != "assign" or bindings[0][1] is None:
            return UNKNOWN
        return self.value(bindings[0][1], scope, calls, given, depth)

    def _argument(self, param: cst.Param, fn: cst.FunctionDef, calls: tuple, given: tuple, depth: int):
        """What the last of calls passes as param of fn, read where that call stands; the default
        when it passes nothing."""
        if not calls:
            return UNKNOWN
        call = calls[-1]
        if any(arg.star for arg in call.args):
            return UNKNOWN  # `*args` / `**kwargs` may hold it
        for name, arg in self.bind_args(fn, call):
            if name == param.name.value:
                return self.value(arg.value, self.index.enclosing_function(call), calls[:-1], given, depth)
        return UNKNOWN if param.default is None else self.value(param.default, None, (), (), depth)
