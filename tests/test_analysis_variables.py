"""trainlint.analysis.variables: the bindings and reads of a plain variable in its own scope."""

import libcst as cst

from trainlint.analysis.context import FileContext
from trainlint.analysis.variables import held_values, may_reach, variable_uses


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


def _reaches(code: str, name: str) -> list[bool]:
    """may_reach from the first assignment of name (`name = 1`) to each of its reads `f(name)`."""
    ctx = FileContext("t.py", code, cst.parse_module(code), None)
    assign = next(a for a in ctx.index.nodes(cst.Assign) if ctx.code(a).startswith(f"{name} = 1"))
    reads = [c.args[0].value for c in ctx.index.nodes(cst.Call) if ctx.dotted(c.func) == "f"]
    return [may_reach(ctx.index, assign, r, ctx.index.enclosing_function(assign)) for r in reads]


def test_may_reach_follows_blocks_and_branches():
    # Later in the same loop body, and in a loop after it: reached; a plain rebinding hides it.
    assert _reaches("for s in xs:\n    a = 1\n    f(a)\n    for t in ys:\n        f(a)\n    a = 2\n    f(a)\n",
                    "a") == [True, True, False]
    # Assigned in one branch: reached after the if, not in the other branch; a rebinding in a branch
    # may not run and hides nothing.
    assert _reaches("if c:\n    a = 1\nelse:\n    f(a)\n    a = 2\nf(a)\n", "a") == [False, True]
    # Read earlier in the loop than the assignment: the previous iteration's value, not this one.
    assert _reaches("def g():\n    for s in xs:\n        f(a)\n        a = 1\n", "a") == [False]


def test_reaching_value_reads_what_each_statement_binds_once(monkeypatch):
    # mmdet's odinw35 configs: 800 lines of top-level assignments, each name read below many of
    # them. Following every use back asked each earlier statement what it binds again, for every
    # use: quadratic (the --deep sweep spent seconds on one config). Counted, not timed: each
    # statement is asked once, however many uses walk past it.
    import trainlint.analysis.variables as variables_module
    from trainlint.analysis.variables import reaching_value

    statements = 60
    code = "".join(f"cfg_{i} = dict(a={i})\n" for i in range(statements)) + "".join(
        f"use(unset_{i})\n" for i in range(statements))
    ctx = FileContext("t.py", code, cst.parse_module(code), None)
    asked = []
    bound = variables_module.bound_names
    monkeypatch.setattr(variables_module, "bound_names", lambda node: asked.append(node) or bound(node))
    uses = [c.args[0].value for c in ctx.index.nodes(cst.Call) if c.func.value == "use"]
    assert [reaching_value(ctx.index, use, use.value) for use in uses] == [None] * statements
    assert 0 < len(asked) <= 2 * statements
    # And the memo does not change the answer: the assignment that reaches a use is still found.
    assert ctx.code(reaching_value(ctx.index, uses[0], "cfg_3")) == "dict(a=3)"


def _held(code: str) -> list[str] | None:
    """held_values at the read `f(m)` (the last one, when there are several)."""
    ctx = FileContext("t.py", code, cst.parse_module(code), None)
    read = [c.args[0].value for c in ctx.index.nodes(cst.Call) if ctx.dotted(c.func) == "f"][-1]
    held = held_values(ctx, read)
    return None if held is None else [ctx.code(v) for v in held]


def test_held_values_of_a_container_name():
    # The display that reaches the read, and what is put in it between.
    assert _held("m = {'a': x, 'b': y}\nm['c'] = z\nm.update(d=u, **rest)\nm.update({'e': v})\nf(m)\n") == \
        ["x", "y", "z", "u", "v"]
    assert _held("m = []\nm.append(x)\nm.insert(0, y)\nm.extend([z, w])\nm.setdefault('k', v)\nf(m)\n") == \
        ["x", "y", "z", "w", "v"]
    assert _held("m = dict(a=x)\nif c:\n    m['b'] = y\nf(m)\n") == ["x", "y"]
    # A display rebound before the read hides the one before it, and what was put in that.
    assert _held("m = {'a': x}\nm['b'] = y\nm = [z]\nf(m)\n") == ["z"]
    # Put in after the read: not in it yet (the next iteration's is a new dict).
    assert _held("for s in xs:\n    m = {}\n    f(m)\n    m['a'] = x\n") == []


def test_held_values_unknown():
    # Another value may reach the read (a comprehension may convert what the dict held), or a
    # binding this does not follow; or the name is no container at all.
    assert _held("m = {'a': x}\nm = {k: v.item() for k, v in m.items()}\nf(m)\n") is None
    assert _held("def g(m):\n    m['a'] = x\n    f(m)\n") is None
    assert _held("m = [x]\nm += [y]\nf(m)\n") is None
    assert _held("m = make()\nm['a'] = x\nf(m)\n") is None
