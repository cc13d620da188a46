"""Values written literally in the source: numbers (with the arithmetic scales are written in),
True/False/None and strings. What the analyses and rules read as a known value; anything else is
UNKNOWN (falsy, so `if literal(x):` reads as "not known to be true")."""

from __future__ import annotations

import operator

import libcst as cst

_ARITHMETIC = {cst.Add: operator.add, cst.Subtract: operator.sub, cst.Multiply: operator.mul,
               cst.Divide: operator.truediv, cst.Power: operator.pow, cst.LeftShift: operator.lshift}


class _Unknown:
    def __repr__(self) -> str:
        return "UNKNOWN"

    def __bool__(self) -> bool:
        return False


UNKNOWN = _Unknown()


def literal(expr: cst.BaseExpression | None):
    """The value of a simple literal (a number as `number` reads it, True/False/None, a string),
    else UNKNOWN."""
    if expr is None:
        return UNKNOWN
    value = number(expr)
    if value is not None:
        return value
    if isinstance(expr, cst.Name) and expr.value in ("True", "False", "None"):
        return {"True": True, "False": False, "None": None}[expr.value]
    if isinstance(expr, cst.SimpleString):
        return expr.evaluated_value
    return UNKNOWN


def number(expr: cst.BaseExpression | None) -> int | float | None:
    """The value of a number literal (`1_000`, `0x10`, `1e-3`), signed (`-1`, `+0.5`) or in
    arithmetic of such (`2 ** 16`, `1 << 13`, `1 / 2`: how scales and epsilons are written),
    else None."""
    if isinstance(expr, cst.Integer):
        return int(expr.value.replace("_", ""), 0)
    if isinstance(expr, cst.Float):
        return float(expr.value.replace("_", ""))
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, (cst.Minus, cst.Plus)):
        value = number(expr.expression)
        return -value if value is not None and isinstance(expr.operator, cst.Minus) else value
    if isinstance(expr, cst.BinaryOperation) and type(expr.operator) in _ARITHMETIC:
        left, right = number(expr.left), number(expr.right)
        if left is None or right is None or (isinstance(expr.operator, (cst.Power, cst.LeftShift)) and abs(right) > 64):
            return None
        try:
            value = _ARITHMETIC[type(expr.operator)](left, right)
            float(value)  # past a float's range (chained powers) or complex (`(-8) ** 0.5`): not a number here
        except (ArithmeticError, TypeError, ValueError):
            return None
        return value
    return None
