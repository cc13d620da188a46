"""The keys a call's `**options` can pass, when the file shows the dict's whole life.

`DataLoader(ds, **loader_kwargs)` passes any argument the dict holds: a rule that wants to know
whether `num_workers` is set cannot tell, unless the dict is built in the same function from
literal keys and changed only in ways that name them. PyTorch's MNIST example, copied into many
training scripts, builds its loader options this way:

    train_kwargs = {"batch_size": args.batch_size}
    if use_cuda:
        train_kwargs.update({"num_workers": 1, "pin_memory": True, "shuffle": True})
    DataLoader(dataset, **train_kwargs)

A key outside the set is certainly not passed (a keyword added beside the `**` cannot collide);
a key inside it may be, with a value the rules treat as unknown.
"""

from __future__ import annotations

import libcst as cst

from trainlint.analysis.literals import UNKNOWN
from trainlint.analysis.variables import owner, variable_uses

_DEPTH = 3  # `.update(other)` followed this many dicts deep


def star_keys(ctx, call: cst.Call) -> frozenset[str] | None:
    """Every key the call's one `**options` can hold, when its whole life is visible in its
    function; None otherwise (also beside a `*args`, which may pass anything)."""
    entries = star_entries(ctx, call)
    return frozenset(entries) if entries is not None else None


def star_entries(ctx, call: cst.Call) -> dict[str, list] | None:
    """star_keys' keys, each with the values the dict may give it (an expression; None where one
    is set without being shown, as by `options[key] = v` for a choice of keys)."""
    stars = [a for a in call.args if a.star]
    if len(stars) != 1 or stars[0].star != "**" or not isinstance(stars[0].value, cst.Name):
        return None
    return _name_entries(ctx, stars[0].value, _DEPTH)


def _name_entries(ctx, name: cst.Name, depth: int) -> dict[str, list] | None:
    """The keys the dict variable can hold, with their values (a function's, or the module's when a
    function reads it from there, and changes it only at the top level): built from dict literals or
    `dict(...)` (`{} if old_torch else {"static_graph": True}`), given keys by `options["key"] =
    ...` (literal keys, or a choice of them) or `options.update(...)` of a dict whose keys are
    known, and otherwise only unpacked into calls or merged into another dict."""
    at_module = owner(ctx.index, name) is not None and ctx.bindings.reads_module(name)
    uses = ctx.bindings.module_uses(name.value) if at_module \
        else variable_uses(ctx.index, owner(ctx.index, name), name.value)
    if uses is None or depth < 0:
        return None  # global, or used by a nested function
    entries: dict[str, list] = {}
    built = False
    for use in uses:
        parent = ctx.parent(use.node)
        if isinstance(parent, cst.Arg) and parent.star == "**" or isinstance(parent, cst.StarredDictElement) \
                or _copied_by_dict(ctx, parent):
            continue  # unpacked into a call or a dict, or `dict(options)`: a copy, the dict is unchanged
        if at_module and owner(ctx.index, use.node) is not None:
            # A module's dict (`LOADER_KWARGS = dict(batch_size=32, shuffle=True)` unpacked in
            # `main`): a function may run at any time, so there it may only be read.
            if _merged_into_update(ctx, parent) or _only_reads(ctx, use.node, parent):
                continue
            return None
        if use.kind == "assign":
            found = dict_entries(ctx, use.value, depth)  # options = {...}
            built = True
        elif use.kind != "read":
            return None
        elif isinstance(parent, cst.Subscript) and isinstance(target := ctx.parent(parent), cst.AssignTarget) \
                and len(parent.slice) == 1:
            keys = _literal_strings(ctx, parent.slice[0].slice.value)  # options["key"] = ...
            value = ctx.parent(target).value if keys is not None and len(keys) == 1 else None
            found = {key: [value] for key in keys} if keys is not None else None
        elif isinstance(parent, cst.Attribute) and parent.attr.value == "update" \
                and isinstance(call := ctx.parent(parent), cst.Call) and call.func is parent:
            found = _update_entries(ctx, call, depth)  # options.update(...)
        elif _merged_into_update(ctx, parent) or _only_reads(ctx, use.node, parent):
            continue  # read (by another dict's update(), `.get(...)`, `options["key"]`): unchanged
        else:
            return None  # read, changed or handed on: its keys are not known here
        if found is None:
            return None
        _merge(entries, found)
    return entries if built else None


def entry_to_change(ctx, call: cst.Call, key: str) -> cst.BaseExpression | None:
    """The value to replace so that the call's `**options` passes `key` differently: the one
    literal the file gives the key, written where the dict itself is built or changed
    (`options = {"key": 0}`, `dict(key=0)`, `options["key"] = 0`, `options.update(key=0)`) in
    the call's own block (so it is given on every run that reaches the call), or at the module's
    top level for a module's dict a function unpacks, and only when no
    other call unpacks the dict (a second loader sharing it keeps its setting). None otherwise."""
    values = (ctx.star_entries(call) or {}).get(key) or []
    if len(values) != 1 or values[0] is None or ctx.literal(values[0]) is UNKNOWN:
        return None
    star = next(a for a in call.args if a.star)
    at_module = owner(ctx.index, star.value) is not None and ctx.bindings.reads_module(star.value)
    uses = ctx.bindings.module_uses(star.value.value) if at_module \
        else variable_uses(ctx.index, owner(ctx.index, star.value), star.value.value)
    unpacked = [u for u in uses or () if isinstance(p := ctx.parent(u.node), cst.Arg) and p.star == "**"]
    if len(unpacked) != 1:
        return None
    holder = _dict_holder(ctx, values[0])
    if holder is None or holder[0] != star.value.value:
        return None
    if at_module:  # the module's dict, read in a function: set at its top level, it is set before any call
        return values[0] if isinstance(ctx.parent(holder[1]), cst.Module) else None
    call_stmt = ctx.statement(call)
    return values[0] if ctx.parent(holder[1]) is ctx.parent(call_stmt) else None


def _dict_holder(ctx, value: cst.BaseExpression) -> tuple[str, cst.CSTNode] | None:
    """(name of the dict variable, statement) where `value` is given to a key of that dict, by a
    literal, `dict(...)`, a subscript assignment or `.update(...)`; None for anything else
    (a conditional expression among them: one branch alone would change)."""
    node = value
    while True:
        parent = ctx.parent(node)
        if isinstance(parent, (cst.DictElement, cst.Dict)) or \
                isinstance(parent, cst.Arg) and not parent.star and isinstance(ctx.parent(parent), cst.Call):
            node = parent
            continue
        if isinstance(parent, cst.Call) and node in parent.args:
            func = parent.func
            if ctx.dotted(func) == "dict":
                node = parent
                continue
            if isinstance(func, cst.Attribute) and func.attr.value == "update" and isinstance(func.value, cst.Name):
                stmt = ctx.parent(ctx.parent(parent))
                return (func.value.value, stmt) if isinstance(ctx.parent(parent), cst.Expr) else None
            return None
        if isinstance(parent, cst.Assign) and parent.value is node and len(parent.targets) == 1:
            target = parent.targets[0].target
            if isinstance(target, cst.Subscript):
                target = target.value
            return (target.value, ctx.parent(parent)) if isinstance(target, cst.Name) else None
        return None


def _merge(into: dict[str, list], found: dict[str, list]) -> None:
    for key, values in found.items():
        into.setdefault(key, []).extend(values)


def dict_entries(ctx, value: cst.BaseExpression | None, depth: int = _DEPTH) -> dict[str, list] | None:
    """The keys of a dict expression, with their values: a literal, `dict(k=v, ...)`, a
    conditional of two such, or a variable whose entries `_name_entries` knows; a dict unpacked
    into a literal (`{**base, "dtype": t}`) or given to `dict` (`dict(base, dtype=t)`) adds its
    keys when they are known."""
    if isinstance(value, cst.IfExp):
        body, orelse = dict_entries(ctx, value.body, depth), dict_entries(ctx, value.orelse, depth)
        if body is None or orelse is None:
            return None
        _merge(body, orelse)
        return body
    if isinstance(value, cst.Name) and depth > 0:
        return _name_entries(ctx, value, depth - 1)
    if isinstance(value, cst.Call) and ctx.dotted(value.func) == "dict":
        entries = {}
        for arg in value.args:
            if arg.keyword is not None:
                _merge(entries, {arg.keyword.value: [arg.value]})
                continue
            # `dict(base, k=v)`, `dict(**base)`: base's keys when known (one dict deeper).
            found = dict_entries(ctx, arg.value, depth - 1) if arg.star != "*" else None
            if found is None:
                return None
            _merge(entries, found)
        return entries
    if not isinstance(value, cst.Dict):
        return None
    entries: dict[str, list] = {}
    for element in value.elements:
        if isinstance(element, cst.StarredDictElement):
            found = dict_entries(ctx, element.value, depth - 1)  # `{**base, "dtype": ...}`
            if found is None:
                return None
            _merge(entries, found)
            continue
        found = _literal_strings(ctx, element.key)
        if found is None:
            return None
        _merge(entries, {key: [element.value if len(found) == 1 else None] for key in found})
    return entries


def _update_entries(ctx, call: cst.Call, depth: int) -> dict[str, list] | None:
    """The keys `options.update(...)` may add, with their values: of its one positional dict and
    its keywords."""
    entries: dict[str, list] = {}
    positional = [arg for arg in call.args if arg.keyword is None]
    if len(positional) > 1 or any(arg.star for arg in positional):
        return None
    for arg in call.args:
        if arg.keyword is not None:
            _merge(entries, {arg.keyword.value: [arg.value]})
            continue
        found = dict_entries(ctx, arg.value, depth - 1)
        if found is None:
            return None
        _merge(entries, found)
    return entries


_READERS = frozenset({"get", "keys", "items", "values", "copy"})


def _only_reads(ctx, node: cst.Name, parent: cst.CSTNode) -> bool:
    """The use reads the dict without changing it: `options.get(...)` (a fix's guard reads the
    worker count this way), `.keys()`, `.items()`, `options["key"]`, `"key" in options`."""
    if isinstance(parent, cst.Attribute) and parent.value is node:
        call = ctx.parent(parent)
        return parent.attr.value in _READERS and isinstance(call, cst.Call) and call.func is parent
    if isinstance(parent, cst.Subscript) and parent.value is node:
        holder = ctx.parent(parent)
        return not (isinstance(holder, (cst.AssignTarget, cst.AugAssign, cst.Del)) or
                    isinstance(holder, cst.AnnAssign) and holder.target is parent)
    return isinstance(parent, cst.ComparisonTarget) and isinstance(parent.operator, (cst.In, cst.NotIn))


def _copied_by_dict(ctx, parent: cst.CSTNode) -> bool:
    """The name is the positional argument of `dict(...)`, which copies it (`dict(base, dtype=t)`)."""
    if not isinstance(parent, cst.Arg) or parent.keyword is not None or parent.star:
        return False
    call = ctx.parent(parent)
    return isinstance(call, cst.Call) and ctx.dotted(call.func) == "dict"


def _merged_into_update(ctx, parent: cst.CSTNode) -> bool:
    """The name is the argument of another dict's `.update(...)`."""
    if not isinstance(parent, cst.Arg) or parent.keyword is not None:
        return False
    call = ctx.parent(parent)
    return isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and call.func.attr.value == "update"


def _literal_strings(ctx, expr) -> set[str] | None:
    if isinstance(expr, cst.IfExp):
        body, orelse = _literal_strings(ctx, expr.body), _literal_strings(ctx, expr.orelse)
        return None if body is None or orelse is None else body | orelse
    value = ctx.literal(expr)
    return {value} if isinstance(value, str) else None
