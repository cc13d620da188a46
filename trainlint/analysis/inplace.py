"""Whether a host tensor is changed in place after a device copy reads it.

TL108 asks it before it makes a copy of a pinned batch non-blocking: the host goes on while such
a copy waits its turn on the stream, so a change made in place afterwards may reach the device.

A change is an in-place method (`x.mul_(s)`), an augmented or item assignment (`x += 1`,
`x[m] = 0`), an `out=` argument, a call passing `inplace=True` or of a function named as an
in-place one (`torch.relu_(x)`, `nn.init.zeros_(x)`), or a call of a function of the module that
changes its parameter so (followed three calls down); made on the tensor or on a view of it
(`v = x[:, 0]`, `x.view(-1)`, `x.numpy()`, `x.float()`, which may be `x` itself). A copied item
at a literal key (`batch["x"]`, `batch[0]`) is followed as a tensor of its own, until the item or
its container is set anew.

After the copy means: later in its pass, and after the loops around it in its function; on the
next pass of a loop around it that does not bind the tensor anew on each pass (several steps on
one batch); and, for a copy in a function of the module that copies its parameter, after the
calls that hand it the tensor. A loop that binds the tensor anew on each pass (the loop over the
batches) ends the search: its passes copy tensors of their own.
"""

from __future__ import annotations

from typing import NamedTuple

import libcst as cst

from trainlint.analysis.batches import is_device_move
from trainlint.analysis.literals import UNKNOWN, literal
from trainlint.analysis.loops import Loop
from trainlint.analysis.names import dotted
from trainlint.analysis.tree import named_parameters

# How many calls down (into the functions of the module a tensor is handed to) and up (to the
# callers of a helper that copies its parameter) a tensor is followed.
_DEPTH = 3
# Tensor methods whose result may share the tensor's memory: a view, or the tensor itself when
# nothing needs converting (`x.float()` of a float tensor, `x.contiguous()`, `x.cpu()` on the host,
# `x.to(torch.float32)`; a `.to` that moves to a device makes a new tensor: `is_device_move`).
_VIEW_METHODS = frozenset({
    "view", "view_as", "reshape", "reshape_as", "flatten", "unflatten", "squeeze", "unsqueeze", "permute",
    "transpose", "t", "narrow", "select", "expand", "expand_as", "as_strided", "movedim", "moveaxis",
    "swapaxes", "swapdims", "unfold", "diagonal", "split", "chunk", "unbind", "tensor_split", "hsplit",
    "vsplit", "dsplit", "detach", "contiguous", "to", "type", "type_as", "float", "half", "double", "bfloat16",
    "long", "int", "short", "char", "byte", "bool", "cpu", "numpy", "pin_memory",
})
_VIEW_ATTRIBUTES = frozenset({"data", "T", "mT", "H", "mH", "real", "imag"})
# Named as in-place methods, but leave the values alone.
_KEEPS_VALUES = frozenset({"requires_grad_"})


class Change(NamedTuple):
    """name: the tensor as the code that changes it knows it (the copied name, or its caller's);
    node: the statement part or call that changes it (`cutout_(x)` for a change in that function);
    next_pass: the change comes on the next pass of a loop around the copy."""
    name: str
    node: cst.CSTNode
    next_pass: bool


def changed_after_copy(ctx, call: cst.Call) -> Change | None:
    """The change made in place, after the device copy `call` (`x.to(device)`), to the host tensor
    it copies, when one may be; None when none is seen. Copies of a name, or of a view of it, are
    followed (`x.float().to(device)`, `[t.cuda() for t in x]`), and so is a copy of an item at a
    literal key (`batch["x"]`, `batch[0]`, spelled as `_item` does): changed in place through that
    same item (`batch["x"].mul_(s)`, `batch["x"][0] = 0`, `out=batch["x"]`) until the item or its
    container is set anew; setting the item (`batch["x"] = ...`) is no change of the tensor it held."""
    names = _copied_names(ctx, call)
    return _after(ctx, call, names, 0) if names else None


def _copied_names(ctx, call: cst.Call) -> frozenset[str]:
    source = call.func.value
    while isinstance(source, (cst.Call, cst.Attribute)) and _view_step(ctx, source) is not None:
        source = _view_step(ctx, source)
    if not isinstance(source, cst.Name):
        item = _item(source)
        return frozenset({item}) if item is not None else frozenset()
    name = source.value
    # `[t.cuda() for t in x]`, `(t.to(device) for t in (x, y))`: the tensors of what it iterates.
    for anc in ctx.index.ancestors(call):
        if isinstance(anc, (cst.BaseSimpleComp, cst.DictComp)):
            comp = anc.for_in
            while comp is not None:
                if name in _target_names(comp.target):
                    roots = {_root(ctx, item) for item in _items(comp.iter)}
                    return frozenset(roots) if None not in roots else frozenset()
                comp = comp.inner_for_in
        if isinstance(anc, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
            break
    return frozenset({name})


def _after(ctx, node: cst.CSTNode, names: frozenset[str], depth: int) -> Change | None:
    """The first change of names' tensor after node (the copy, or a call handing the tensor to the
    helper that copies it) runs, walking up from it: the rest of each block, the next pass of
    each loop, the callers of its function."""
    scope = ctx.index.enclosing_function(node)
    live, parents = _views(ctx, scope, names)
    child, position, first = node, 0, True
    for anc in ctx.index.ancestors(node):
        # The small statements after the copy's on its line run next (`xd = x.to(d); x.mul_(s)`:
        # once skipped, as the line was taken whole), then the rest of each block.
        if isinstance(anc, (cst.IndentedBlock, cst.Module, cst.SimpleStatementLine, cst.SimpleStatementSuite)):
            position = next(i for i, stmt in enumerate(anc.body) if stmt is child)
            if first:  # `x = x.to(device)`: what follows changes the copy, not the host tensor
                live, first = _bind(ctx, anc.body[position], live), False
            found, live = _scan(ctx, anc.body[position + 1:], live, depth, parents)
            if found is not None:
                return Change(_named(names), found, False)
            if not live:
                return None
        elif isinstance(anc, Loop) and child is anc.body:
            # The next pass, from the loop's start to the copy: a name the pass binds anew (the
            # loop's target, `x, y = next(it)`) holds another batch's tensor; when the pass so
            # binds the copied name, each pass copies its own (the loop over the batches) and what
            # follows the loop, or comes round in loops outside it, is not this copy's concern.
            again = _drop(live, _target_names(anc.target)) if isinstance(anc, cst.For) else live
            body = anc.body.body[:position + 1] if isinstance(anc.body, cst.IndentedBlock) else [anc.body]
            found, again = _scan(ctx, body, again, depth, parents)
            if found is not None:
                return Change(_named(names), found, True)
            if not names & again:
                return None
        elif isinstance(anc, cst.FunctionDef):
            return _in_callers(ctx, node, anc, names & live, depth)
        elif isinstance(anc, (cst.Lambda, cst.ClassDef)):
            return None
        child = anc
    return None


def _items(expr: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The items of a tuple or list display (`out=(values, indices)`), else expr itself."""
    return [e.value for e in expr.elements] if isinstance(expr, (cst.Tuple, cst.List)) else [expr]


def _named(names: frozenset[str]) -> str:
    return sorted(names)[0]


def _in_callers(ctx, node: cst.CSTNode, fn: cst.FunctionDef, names: frozenset[str], depth: int) -> Change | None:
    """A helper of the module copies its parameter (`def to_device(t): return t.to(device)`): the
    change, after a call of it, of the tensor the call hands it."""
    params = {p.name.value for p in named_parameters(fn)}
    # The parameter still holds what the caller handed when the copy reads it.
    handed = {n for n in names & params
              if all(_bind(ctx, stmt, frozenset({n})) for _anc, earlier in ctx.index.preceding(node)
                     for stmt in earlier if ctx.index.contains(fn, stmt))}
    if not handed or depth >= _DEPTH or len(ctx.loops.functions.get(fn.name.value, ())) != 1:
        return None
    for call in ctx.loops.calls_of(fn):
        for param, arg in ctx.loops.bind_args(fn, call):
            root = _root(ctx, arg.value) if param in handed and not arg.star else None
            found = _after(ctx, call, frozenset({root}), depth + 1) if root is not None else None
            if found is not None:
                return found
    return None


def _scan(ctx, statements, live: frozenset[str], depth: int,
          parents: frozenset[str] = frozenset()) -> tuple[cst.CSTNode | None, frozenset[str]]:
    """(the first change of a live name in statements, in order, or None; the names still live
    after them: a statement binding a name to anything but a view of a live one ends it)."""
    for stmt in statements:
        found = _change_in(ctx, stmt, live, depth, parents)
        if found is not None:
            return found, live
        live = _bind(ctx, stmt, live)
        if not live:
            break
    return None, live


def _bind(ctx, stmt: cst.CSTNode, live: frozenset[str]) -> frozenset[str]:
    """live after stmt's own assignments (`x = x.clone()` ends x; `v = x[0]` makes v one). A
    compound statement's bindings happen on some paths only: they end nothing. A small statement
    alone (preceding lists those of the line that holds the copy) binds as the line would."""
    if isinstance(stmt, cst.BaseSmallStatement):
        small_statements = [stmt]
    elif isinstance(stmt, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
        small_statements = stmt.body
    else:
        return live
    out = set(live)
    for small in small_statements:
        if isinstance(small, cst.Assign):
            pairs = [p for t in small.targets for p in _pairs(t.target, small.value)]
        elif isinstance(small, cst.AnnAssign) and small.value is not None:
            pairs = _pairs(small.target, small.value)
        else:
            continue
        for target, value in pairs:
            viewed = bool(_roots(ctx, value) & out)
            item = _item(target)
            for name in _target_names(target) | ({item} if item is not None else set()):
                out = set(_drop(out, {name}))  # a container bound anew holds other items too
                if viewed:
                    out.add(name)
    return frozenset(out)


def _drop(live, names) -> frozenset[str]:
    """live without names, nor the items of containers so named (`batch["x"]` of `batch`)."""
    return frozenset(n for n in live if n not in names and n.split("[", 1)[0] not in names)


def _pairs(target: cst.BaseExpression, value: cst.BaseExpression) -> list[tuple]:
    """(target, value) of an assignment, item by item where both are displays of one length
    (`x, y = batch["x"], batch["y"]`)."""
    if isinstance(target, (cst.Tuple, cst.List)) and isinstance(value, (cst.Tuple, cst.List)) and \
            len(target.elements) == len(value.elements) and not any(
                isinstance(e, cst.StarredElement) for e in (*target.elements, *value.elements)):
        return [p for t, v in zip(target.elements, value.elements) for p in _pairs(t.value, v.value)]
    return [(target, value)]


def _target_names(target: cst.BaseExpression) -> set[str]:
    """The plain names an assignment or loop target binds (`x`, `x, (y, z)`, `*rest`)."""
    if isinstance(target, cst.Name):
        return {target.value}
    if isinstance(target, (cst.Tuple, cst.List)):
        return {n for e in target.elements for n in _target_names(e.value)}
    if isinstance(target, cst.StarredElement):
        return _target_names(target.value)
    return set()


def _views(ctx, scope: cst.FunctionDef | None, names: frozenset[str]) -> tuple[frozenset[str], frozenset[str]]:
    """(names, the names their function (or the module) binds anywhere to a view of them (`v =
    x[:, 0]`, `a, b = x.unbind(1)`, `for row in x`) and the names they are views of (`x` of `inp
    = x.float()`, `batch` of `x, y = batch`); those last ones): a view taken before the copy is
    the host tensor's memory too. Once per scope and names."""
    cache = ctx.__dict__.setdefault("_inplace_views", {})
    key = (scope, names)
    if key not in cache:
        root = scope if scope is not None else ctx.module
        assigned, looped = [], []
        for node in ctx.index.walk(root):
            if isinstance(node, cst.Assign):
                assigned += [p for t in node.targets for p in _pairs(t.target, node.value)]
            elif isinstance(node, (cst.For, cst.CompFor)):
                looped.append((node.target, node.iter))  # a tensor's rows; or what a loader or list holds
        parents, grown = set(), True
        while grown:  # what names are taken from (not what else is taken from that: `y` of `x, y = batch`)
            grown = False
            for target, value in assigned:
                parent = _root(ctx, value) if _target_names(target) & (names | parents) else None
                if parent is not None and parent not in names | parents:
                    parents.add(parent)
                    grown = True
        found, grown = set(names), True
        while grown:
            grown = False
            for target, value in assigned + looped:
                new = _target_names(target) - found if _roots(ctx, value) & found else ()
                if new:
                    found |= new
                    grown = True
        cache[key] = (frozenset(found | parents), frozenset(parents - found))
    return cache[key]


def _view_step(ctx, expr: cst.BaseExpression) -> cst.BaseExpression | None:
    """What expr is a view of (`x` for `x[0]`, `x.T`, `x.view(-1)`), or None."""
    if isinstance(expr, cst.Subscript):
        return expr.value
    if isinstance(expr, cst.Attribute) and expr.attr.value in _VIEW_ATTRIBUTES:
        return expr.value
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and \
            expr.func.attr.value in _VIEW_METHODS and not is_device_move(ctx, expr):
        return expr.func.value
    return None


def _item(expr: cst.BaseExpression) -> str | None:
    """A container's item at a literal key or position, `batch["x"]` or `batch[0]`, spelled
    `batch['x']` / `batch[0]` (`_drop` reads the container's name before the bracket); else None."""
    if not isinstance(expr, cst.Subscript) or not isinstance(expr.value, cst.Name) or len(expr.slice) != 1 \
            or not isinstance(expr.slice[0].slice, cst.Index):
        return None
    key = literal(expr.slice[0].slice.value)
    return f"{expr.value.value}[{key!r}]" if key is not UNKNOWN and isinstance(key, (str, int)) else None


def _roots(ctx, expr: cst.BaseExpression) -> set[str]:
    """Whose tensor expr is, or a view of: the name `_root` gives, and each item at a literal key
    on the way (`batch['x']` and `batch` for `batch["x"][0]`)."""
    out = set()
    while expr is not None:
        if isinstance(expr, cst.Name):
            out.add(expr.value)
            break
        item = _item(expr)
        if item is not None:
            out.add(item)
        expr = _view_step(ctx, expr)
    return out


def _root(ctx, expr: cst.BaseExpression) -> str | None:
    """The name expr is that of, or a view of (`x`, `x[:, 0]`, `x.view(-1).T`); None for anything
    else (a new tensor: `x.clone()`, `x + 1`, `x.to(device)`)."""
    while not isinstance(expr, cst.Name):
        expr = _view_step(ctx, expr)
        if expr is None:
            return None
    return expr.value


def _change_in(ctx, stmt: cst.CSTNode, live: frozenset[str], depth: int,
               parents: frozenset[str] = frozenset()) -> cst.CSTNode | None:
    """The first part of stmt that changes a live name's tensor in place, or None. An item set on
    what the tensor was taken from (`batch["x"] = ...`) is not one: that is a dict or list,
    most likely, given another value."""
    for node in ctx.index.walk(stmt):
        if isinstance(node, cst.Call) and _changes(ctx, node, live, depth):
            return node
        if isinstance(node, cst.AugAssign) and _roots(ctx, node.target) & live:
            return node  # `x += 1` adds in place into a tensor
        # A write into the tensor (`x[m] = 0`, `batch["x"][0] = 0`); setting the copied item
        # itself (`batch["x"] = ...`) gives its container another value.
        if isinstance(node, cst.Assign) and any(
                isinstance(t.target, cst.Subscript) and _roots(ctx, t.target.value) & live
                and not (isinstance(t.target.value, cst.Name) and t.target.value.value in parents)
                for t in node.targets):
            return node
    return None


def _changes(ctx, call: cst.Call, live: frozenset[str], depth: int) -> bool:
    """call changes a live name's tensor in place."""
    func = call.func
    if isinstance(func, cst.Attribute) and _roots(ctx, func.value) & live:
        method = func.attr.value
        if method.endswith("_") and not method.startswith("_") and method not in _KEEPS_VALUES:
            return True  # `x.mul_(s)`, `x[:, 0].zero_()`
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "out":
            if any(_roots(ctx, out) & live for out in _items(arg.value)):
                return True  # `torch.add(a, b, out=x)`
    first = ctx.positional(call, 0)
    first_live = first is not None and bool(_roots(ctx, first.value) & live)
    inplace = ctx.keyword(call, "inplace")
    if first_live and inplace is not None and ctx.literal(inplace.value) is not False:
        return True  # `F.relu(x, inplace=True)`
    callee = ctx.loops.local_callee_name(call)
    if callee is not None and len(ctx.loops.functions[callee]) == 1:
        # A function of the module: its body says, for each parameter handed the tensor or a view.
        fn = ctx.loops.functions[callee][0]
        for param, arg in ctx.loops.bind_args(fn, call):
            # The tensor itself, or an item of a list or tuple handed over (`normalize_([x])`,
            # whose loop over the parameter takes the tensor as a view of it).
            held = [arg.value] + ([e.value for e in arg.value.elements]
                                  if isinstance(arg.value, (cst.List, cst.Tuple)) else [])
            if not arg.star and any(_roots(ctx, v) & live for v in held):
                if depth >= _DEPTH or _changes_parameter(ctx, fn, param, depth + 1):
                    return True  # followed no further: taken as a change
        return False
    name = (dotted(func) or "").rsplit(".", 1)[-1]
    return first_live and name.endswith("_") and not name.startswith("_")  # `torch.relu_(x)`


def _changes_parameter(ctx, fn: cst.FunctionDef, param: str, depth: int) -> bool:
    """fn changes in place the tensor handed as param. Asked once per function and parameter; a
    recursive call (`return [to_device(v, device) for v in batch]`) meets the question in progress
    and answers no: it changes only what the rest of the body changes (once followed to the
    depth limit and taken as a change)."""
    cache = ctx.__dict__.setdefault("_inplace_parameters", {})
    key = (fn, param)
    if key not in cache:
        cache[key] = False
        body = fn.body.body if isinstance(fn.body, cst.IndentedBlock) else [fn.body]
        live, parents = _views(ctx, fn, frozenset({param}))
        found, _live = _scan(ctx, body, live, depth, parents)
        cache[key] = found is not None
    return cache[key]
