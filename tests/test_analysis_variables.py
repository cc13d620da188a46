"""trainlint.analysis.variables: the bindings and reads of a plain variable in its own scope."""

import libcst as cst

from trainlint.analysis.context import FileContext
from trainlint.analysis.variables import variable_uses


def _uses(code: str, name: str, function: str | None = None):
    ctx = FileContext("t.py", code, cst.parse_module(code), None)
    scope = None
    if function is not None:
        scope = next(f for f in ctx.index.nodes(cst.FunctionDef) if f.name.value == function)
    uses = variable_uses(ctx.index, scope, name)
    if uses is None:
        return None
    return [(u.kind, ctx.code(u.value) if u.value is not None else None) for u in uses]


def test_kinds_and_assigned_values():
    code = ("total, seen = 0.0, []\nfor x in xs:\n    total += f(x)\n    obj.total = 1\n    g(total=total)\n"
            "total: float = 1.5\nprint(total)\nfor total in ys:\n    pass\n")
    assert _uses(code, "total") == [("assign", "0.0"), ("aug", None), ("read", None), ("assign", "1.5"),
                                    ("read", None), ("bind", None)]
    # A starred or nested unpacking gives no value.
    assert _uses("a, *b = 1, 2, 3\n", "a") == [("assign", None)]


def test_function_scope_and_its_neighbours():
    code = ("total = 5\ndef train():\n    total = 0.0\n    return total\ndef other(total):\n    return total\n"
            "def reset():\n    total = 1\n")
    assert _uses(code, "total", "train") == [("assign", "0.0"), ("read", None)]
    # Functions that bind their own `total` do not use the module's.
    assert _uses(code, "total") == [("assign", "5")]


def test_uses_it_cannot_follow():
    assert _uses("total = 0.0\ndef show():\n    print(total)\n", "total") is None  # a module variable read in a function
    assert _uses("def f():\n    total = 0\n    cb = lambda: total\n", "total", "f") is None  # a closure
    assert _uses("def f():\n    global total\n    total = 0\n", "total", "f") is None
    assert _uses("def f():\n    total = 0\n    def g():\n        nonlocal total\n        total += 1\n", "total", "f") is None
