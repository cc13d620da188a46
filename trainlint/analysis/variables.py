"""Where a plain variable is bound and read, within one function (or the module).

Fixes that change what a name holds (TL201's `total += loss.detach()`) or when it is assigned
(a statement moved under a logging interval) must see every read of that name. This follows
Python's scoping just far enough to say when that is possible: a name's uses in its own scope are
listed, and a use it cannot follow (a `global`/`nonlocal` declaration, a closure, a module
variable read inside a function) makes the answer None.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import libcst as cst

from trainlint.analysis.names import bound_names, dotted
from trainlint.analysis.tree import TreeIndex

_SCOPES = (cst.FunctionDef, cst.Lambda, cst.ClassDef)


@dataclass
class Use:
    node: cst.Name
    kind: str  # "read", "aug" (`x += ...`: read and write), "assign" (`x = ...`, `x: T = ...`), "bind" (any other)
    value: cst.BaseExpression | None = None  # "assign": what is assigned to this name, when known
    stmt: cst.CSTNode | None = None  # "assign"/"aug": the assignment


def is_variable(index: TreeIndex, name: cst.Name) -> bool:
    """The Name spells a variable: not the attribute of `x.name` nor the keyword of `f(name=...)`."""
    parent = index.parent.get(name)
    if isinstance(parent, cst.Attribute) and parent.attr is name:
        return False
    return not (isinstance(parent, cst.Arg) and parent.keyword is name)


def owner(index: TreeIndex, node: cst.CSTNode) -> cst.CSTNode | None:
    """The function, lambda or class whose scope node belongs to; None for the module."""
    parent = index.parent.get(node)
    if isinstance(parent, (cst.FunctionDef, cst.ClassDef)) and parent.name is node:
        node = parent  # `def f` binds f where the def stands
    for anc in index.ancestors(node):
        if isinstance(anc, _SCOPES):
            return anc
    return None


def with_items(index: TreeIndex, name: cst.Name) -> list[cst.BaseExpression]:
    """What the `with` statements around a read of name bind to it (`with Pool(4) as pool:` gives
    `Pool(4)` for a `pool` read in its body), nearest first."""
    return [item.item for anc in index.ancestors(name) if isinstance(anc, cst.With) for item in anc.items
            if item.asname is not None and isinstance(item.asname.name, cst.Name)
            and item.asname.name.value == name.value]


def variable_uses(index: TreeIndex, scope: cst.FunctionDef | None, name: str) -> list[Use] | None:
    """Every binding and read of the variable `name` of scope (a function, lambda or class, as
    `owner` names it; None: the module), in
    document order; None when it may be used where this cannot follow: a `global`/`nonlocal`
    declaration of it, or a nested function, lambda or class that uses it without binding its own
    (a closure, or a function reading the module's variable)."""
    uses: list[Use] = []
    nested: dict[cst.CSTNode, bool] = {}  # nested scope -> binds a name of its own
    for node in index.nodes(cst.Name):
        if node.value != name or not is_variable(index, node):
            continue
        if isinstance(index.parent.get(node), cst.NameItem):
            return None  # global / nonlocal
        where = owner(index, node)
        kind, value, stmt = role(index, node)
        if where is scope:
            uses.append(Use(node, kind, value, stmt))
        elif scope is None or index.contains(scope, where):
            nested[where] = nested.get(where, False) or kind not in ("read", "aug")
    if not all(nested.values()):
        return None
    return uses


class Bindings:
    """Every binding of every variable of a module (`x = ...`, parameters, loop targets, imports,
    `x += ...`), by name and scope, and the names each scope declares `global`/`nonlocal`: one walk
    over the module's names, shared through FileContext.bindings (settings.py reads a variable's
    one assignment from it, loops.py whether a function shadows a module variable)."""

    def __init__(self, index: TreeIndex) -> None:
        self.index = index

    def of(self, name: str) -> dict | None:
        """scope -> [(kind, assigned value)] for name, as `role` tells them; None when some scope
        declares it `global` or `nonlocal` (any scope may set it then)."""
        if name in self._declared_names:
            return None
        return self._table.get(name, {})

    def binds(self, scope: cst.CSTNode | None, name: str) -> bool:
        """scope binds a variable name of its own (not one it declares `global`/`nonlocal`)."""
        return scope in self._table.get(name, {}) and name not in self._declared.get(scope, ())

    def seen_from(self, name: cst.Name) -> list | None:
        """[(kind, assigned value)] of the variable a read of name reads: the bindings of the
        innermost scope that binds it (its own, else an enclosing function's, else the module's;
        class bodies only for their own code); None when it is bound nowhere or may be set from
        elsewhere (`global`/`nonlocal`)."""
        scopes = self.of(name.value)
        if scopes is None:
            return None
        scope = owner(self.index, name)
        while True:
            if scopes.get(scope):
                return scopes[scope]
            if scope is None:
                return None
            scope = owner(self.index, scope)
            while isinstance(scope, cst.ClassDef):  # a class body's names are not seen from its methods
                scope = owner(self.index, scope)

    def assigned_values(self, name: cst.Name) -> list[cst.BaseExpression] | None:
        """The values the variable a read of name reads is assigned (seen_from's bindings that
        assign a value it can tell: not a parameter, a loop target or an unpacked part it cannot
        match); None where seen_from is None (bound nowhere, or `global`/`nonlocal`)."""
        bindings = self.seen_from(name)
        if bindings is None:
            return None
        return [value for kind, value in bindings if kind == "assign" and value is not None]

    def reads_module(self, name: cst.Name) -> bool:
        """A read of name in a function reads the module's variable: no scope from its own out binds
        it (class bodies only for their own code), the module does, and none declares it
        `global`/`nonlocal`."""
        scopes = self.of(name.value)
        if not scopes or not scopes.get(None):
            return False
        scope = owner(self.index, name)
        first = True
        while scope is not None:
            if (first or not isinstance(scope, cst.ClassDef)) and scopes.get(scope):
                return False
            scope, first = owner(self.index, scope), False
        return True

    def module_uses(self, name: str) -> list[Use] | None:
        """Every binding and read of the module's variable `name`, in document order: its uses at
        the top level and its reads in functions (or lambdas, classes) that see it there (a
        function that binds a name of its own, as by a parameter, has another variable).
        `Use.node`'s owner tells which are inside a function. None when some scope declares it
        `global`/`nonlocal` (any function may rebind it)."""
        scopes = self.of(name)
        if scopes is None:
            return None
        uses = []
        for node in self.index.nodes(cst.Name):
            if node.value != name or not is_variable(self.index, node):
                continue
            where = owner(self.index, node)
            if where is None or self.reads_module(node):
                kind, value, stmt = role(self.index, node)
                uses.append(Use(node, kind, value, stmt))
        return uses

    @cached_property
    def _table(self) -> dict:
        table: dict = {}
        for node in self.index.nodes(cst.Name):
            if not is_variable(self.index, node) or isinstance(self.index.parent.get(node), cst.NameItem):
                continue
            kind, value, _stmt = role(self.index, node)
            if kind != "read":
                table.setdefault(node.value, {}).setdefault(owner(self.index, node), []).append((kind, value))
        return table

    @cached_property
    def _declared(self) -> dict:
        table: dict = {}
        for item in self.index.nodes(cst.NameItem):
            table.setdefault(owner(self.index, item.name), set()).add(item.name.value)
        return table

    @cached_property
    def _declared_names(self) -> frozenset[str]:
        return frozenset(name for names in self._declared.values() for name in names)


def may_reach(index: TreeIndex, stmt: cst.CSTNode, read: cst.Name, scope: cst.CSTNode | None) -> bool:
    """The value stmt leaves in read's variable may reach read (scope: the function, lambda or
    class whose variable it is, as `owner` names it; anything else, such as None, for the
    module's): going up from the read, block by block, and back through each block's earlier
    statements, the statement that is or holds stmt comes before any statement that plainly
    rebinds the name. A statement that binds it only inside a branch or loop may not run, so it
    hides nothing; a read in another branch than stmt's never meets stmt, nor does one earlier in
    a loop than stmt (the value of the previous iteration). A read in a nested function may run at
    any time: it counts. (TL601: a score read after the attention; TL201: a host value handed on
    in the same step.)"""
    if index.contains(stmt, read):
        return True  # `out, w = att @ v, att`
    for anc, earlier in index.preceding(read):
        for prev in earlier:
            if prev is stmt or index.contains(prev, stmt):
                return True
            if isinstance(prev, (cst.SimpleStatementLine, cst.BaseSmallStatement)) and any(
                    isinstance(n, cst.Name) and n.value == read.value and role(index, n)[0] == "assign"
                    for n in index.walk(prev)):
                return False
        if isinstance(anc, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            return anc is not scope
    return False


# Not variable_uses: that lists a plain name's uses in document order, but this asks which
# assignment reaches a use along the block structure, for dotted names too (`self.running =
# self.running.item()`), and a closure that reads the name (where variable_uses gives up) does not
# change which assignment reaches a use.
def reaching_value(index: TreeIndex, use: cst.BaseExpression, name: str) -> cst.BaseExpression | None:
    """The value of the assignment `name = value` that every path to `use` passes last, when
    that is plain to see: an earlier statement of a block that holds the use, with no other
    assignment to name after it and no loop between it and the use (whose next iteration
    could bring a later value back). None when not that simple."""
    for anc, earlier in index.preceding(use):
        if isinstance(anc, (cst.FunctionDef, cst.Lambda, cst.ClassDef, cst.For, cst.While)):
            return None
        for stmt in earlier:
            value = _assigned_here(stmt, name)
            if value is not None:
                return value
            if name in index.memo(bound_names, stmt):
                return None
    return None


def _assigned_here(stmt: cst.CSTNode, name: str) -> cst.BaseExpression | None:
    """The value when stmt is the simple statement `name = value`: a line of its own, or a small
    statement that preceding lists apart from the others of its line (`x = t.cpu(); print(x)`)."""
    if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1:
        stmt = stmt.body[0]
    if isinstance(stmt, cst.Assign):
        assign = stmt
        if len(assign.targets) == 1 and dotted(assign.targets[0].target) == name:
            return assign.value
    return None


def role(index: TreeIndex, name: cst.Name) -> tuple[str, cst.BaseExpression | None, cst.CSTNode | None]:
    """How a Name is used: (kind, assigned value, assignment); see Use."""
    parent = index.parent.get(name)
    if isinstance(parent, (cst.Param, cst.AsName, cst.ImportAlias, cst.FunctionDef, cst.ClassDef)) \
            and parent.name is name:
        return "bind", None, None
    child, node = name, parent
    while isinstance(node, (cst.Element, cst.StarredElement, cst.Tuple, cst.List)):
        child, node = node, index.parent.get(node)
    unpacked = child is not name
    if isinstance(node, cst.AssignTarget) and node.target is child:
        assign = index.parent.get(node)
        value = _unpacked_value(index, name, child, assign.value) if unpacked else assign.value
        return "assign", value, assign
    if isinstance(node, cst.AnnAssign) and node.target is child and not unpacked and node.value is not None:
        return "assign", node.value, node
    if isinstance(node, cst.AugAssign) and node.target is child and not unpacked:
        return "aug", None, node
    if isinstance(node, (cst.AugAssign, cst.AnnAssign, cst.For, cst.CompFor, cst.NamedExpr, cst.Del)) \
            and getattr(node, "target", None) is child:
        return "bind", None, None
    return "read", None, None


def _unpacked_value(index: TreeIndex, name: cst.Name, target: cst.CSTNode, value: cst.BaseExpression):
    """The element of `a, b = 0.0, 0` that name (an element of the flat target) receives."""
    element = index.parent.get(name)
    if not isinstance(target, (cst.Tuple, cst.List)) or not isinstance(value, (cst.Tuple, cst.List)) \
            or index.parent.get(element) is not target or len(target.elements) != len(value.elements):
        return None
    if any(isinstance(e, cst.StarredElement) for e in (*target.elements, *value.elements)):
        return None
    return value.elements[[i for i, e in enumerate(target.elements) if e is element][0]].value


def names_a_value(ctx, node: cst.CSTNode) -> bool:
    """node (a Name or Attribute) reads or binds a value a guard can use: not the keyword of
    `f(save_steps=4)`, not the attribute part of `x.name`, not a function's or class's own name, nor
    a call's callee (`save_every(...)`), nor an import's name."""
    index = ctx.index
    parent = index.parent.get(node)
    if isinstance(node, cst.Name) and not is_variable(index, node):
        return False
    if isinstance(parent, (cst.FunctionDef, cst.ClassDef)) and parent.name is node:
        return False
    if isinstance(parent, cst.Call) and parent.func is node:
        return False
    if isinstance(parent, (cst.ImportAlias, cst.AsName)) or index.enclosing(node, (cst.Import, cst.ImportFrom)):
        return False
    if isinstance(node, cst.Name):  # a function's name read elsewhere (`callback=log_every`) is no number either
        return node.value not in {fn.name.value for fn in index.nodes(cst.FunctionDef)}
    return True


def in_scope_of(ctx, node: cst.CSTNode, at: cst.CSTNode) -> bool:
    """A plain name at node can be read at `at`: it is the module's, or bound in the function that
    holds `at` (or one around it); an attribute (`args.log_every`, `self.log_every`) is taken as
    reachable."""
    if not isinstance(node, cst.Name):
        return True
    where = owner(ctx.index, node)
    if where is None:
        return True
    return any(anc is where for anc in ctx.index.ancestors(at))


# Methods that put what they are given into a dict or list: (the arguments that hold it).
_PUTS = {"update": None, "append": -1, "insert": -1, "extend": -1, "setdefault": 1}


def held_values(ctx, read: cst.BaseExpression) -> list[cst.BaseExpression] | None:
    """What the dict, list or tuple a plain name holds at read, when that is plain to see in its
    function: the elements of the display that reaches read (`metrics = {"loss": loss}`, `logs =
    [loss, acc]`, `dict(loss=loss)`), and what the statements between put into it (`metrics["loss"]
    = loss`, `metrics.update(loss=loss)`, `logs.append(acc)`). None when a binding of another kind
    may reach read (a comprehension or a call's result: `{k: v.item() ...}` may convert it), or one
    this cannot follow (a parameter, a loop target, `+=`, a closure, `global`). Elements that are
    displays themselves are given as they are, as are `**extras` and `*rest`'s values, which are
    left out."""
    if not isinstance(read, cst.Name) or not any(_elements(ctx, v) is not None for v in ctx.assigned_values(read)):
        return None  # first: most names are assigned no display (and variable_uses walks the module)
    index = ctx.index
    scope = owner(index, read)
    uses = variable_uses(index, scope, read.value)
    if uses is None:
        return None
    held: list[cst.BaseExpression] = []
    reached = False
    for use in uses:
        if use.node is read:
            continue
        if use.kind != "read":
            if use.kind != "assign":
                return None
            if not may_reach(index, use.stmt, read, scope):
                continue
            elements = _elements(ctx, use.value)
            if elements is None:
                return None
            reached = True
            held += elements
        else:
            put = _put(index, use.node)
            if put and may_reach(index, index.parent[use.node], read, scope):
                held += put
    return held if reached else None


def _elements(ctx, value: cst.BaseExpression | None) -> list[cst.BaseExpression] | None:
    """The values a dict, list, tuple or set display holds (`dict(loss=loss)` is one); None for any
    other expression."""
    if isinstance(value, cst.Dict):
        return [e.value for e in value.elements if isinstance(e, cst.DictElement)]
    if isinstance(value, (cst.List, cst.Tuple, cst.Set)):
        return [e.value for e in value.elements if isinstance(e, cst.Element)]
    if isinstance(value, cst.Call) and ctx.names.qualified(value.func) in ("builtins.dict", "builtins.list") \
            and all(arg.keyword is not None for arg in value.args):
        return [arg.value for arg in value.args]
    return None


def _put(index: TreeIndex, name: cst.Name) -> list[cst.BaseExpression]:
    """What a statement reading name puts into the container it names: the value of
    `name[key] = value`, the arguments of `name.update(...)` (a dict display's values),
    `name.append(v)`, `name.insert(i, v)`, `name.extend([...])`, `name.setdefault(k, v)`."""
    parent = index.parent.get(name)
    if isinstance(parent, cst.Subscript) and parent.value is name:
        target = index.parent.get(parent)
        if isinstance(target, cst.AssignTarget):
            return [index.parent[target].value]
        return []
    call = index.parent.get(parent)
    if not (isinstance(parent, cst.Attribute) and parent.value is name and parent.attr.value in _PUTS
            and isinstance(call, cst.Call) and call.func is parent and call.args):
        return []
    method, position = parent.attr.value, _PUTS[parent.attr.value]
    if position is None:
        args = call.args
    else:
        args = [call.args[position]] if position < len(call.args) else []
    values = []
    for arg in args:
        if arg.star:
            continue
        if method in ("update", "extend") and arg.keyword is None and isinstance(arg.value, (cst.Dict, cst.List, cst.Tuple)):
            values += [e.value for e in arg.value.elements if isinstance(e, (cst.DictElement, cst.Element))]
        else:
            values.append(arg.value)
    return values
