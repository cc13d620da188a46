"""Whether a loader's dataset, or an object it holds, is changed where workers would not see it.

TL101 and TL103 both ask: workers are forked with a copy of the dataset, so a change made by the
training loop (`ds.set_epoch(epoch)`, `buf.add(obs)`, `resize.size = ...` on a transform the dataset
was built with) reaches them only when they are started again.
"""

from __future__ import annotations

import libcst as cst

from trainlint.analysis.batches import dataset_class, method_of, methods_reached
from trainlint.analysis.names import local_names

from .loaders import MUTATORS, changes, changes_argument


# Methods named to change the object they are called on (`set_epoch`, `close_mosaic`, `reset`).
_CHANGING_PREFIXES = ("set_", "close_", "reset", "enable_", "disable_")


def _changes_own(ctx, method: str) -> bool:
    """A method of that name, of a class of the module, changes its own object (`self.items =
    ...`, `self.items.append(x)`, `random.shuffle(self.items)`): a curriculum's `ds.grow(epoch)`."""
    return any(ctx.index.enclosing_class(fn) is not None and fn.params.params
               and changes(ctx, fn, fn.params.params[0].name.value)
               for fn in ctx.loops.functions.get(method, ()))


def dataset_change_sites(ctx, call: cst.Call) -> list[cst.CSTNode]:
    """Where the loader's dataset, a name or `loader.dataset`, is changed, in sight of the name
    the change spells (`ds.set_epoch(epoch)`): a method named to change it
    called on it (`set_*`, `close_*`, `reset*`, `enable_*`, `disable_*`), an attribute of it
    assigned (`ds.max_len = ...`), an item of it or of an attribute assigned or deleted
    (`ds.x[i] = ...`), a mutating method called on it or an attribute (`ds.items.extend(new)`);
    or a name handed to the call that built it (`ds = ListDataset(items)`, or built in the
    loader's call) has a mutating method called, an item assigned, or is a list extended with
    `+=` (`items.extend(new)`)."""
    dataset = ctx.positional(call, 0) or ctx.keyword(call, "dataset")
    if dataset is None or dataset.star:
        return []
    scope = ctx.index.enclosing_function(call)
    name = ctx.dotted(dataset.value)
    watched: list = []  # (name, its scope, whether it is the dataset itself, the expression spelling it)
    if name:
        watched.append((name, scope, True, dataset.value))
    # ... also reached through the loader (`loader.dataset.set_epoch(epoch)`; Ultralytics'
    # `self.train_loader.dataset.close_mosaic(...)`).
    watched += [(f"{known}.dataset", where, True, None) for known, where in ctx.loops.names_of(call)]
    builders = [dataset.value] if isinstance(dataset.value, cst.Call) else ctx.assigned_values(dataset.value)
    for built in builders:
        if isinstance(built, cst.Call):
            where = ctx.index.enclosing_function(built)
            for arg in built.args:
                given = ctx.dotted(arg.value) if not arg.star else None
                if given and given != "self" and all((given, where, False) != w[:3] for w in watched):
                    watched.append((given, where, False, arg.value))
    cls = dataset_class(ctx, call)
    # A module global the dataset's `__getitem__`/`__iter__` reads, assigned by the loop (`NOISE =
    # ...` under `global NOISE`): live workers keep the value they were forked with.
    sites: list = global_change_sites(ctx, cls) if cls is not None else []
    if not watched and not sites:
        return []

    def on(expr, held: str, whole: bool) -> bool:
        spelled = ctx.dotted(expr)
        return spelled is not None and (spelled == held or spelled.startswith(held + ".") and whole)

    for held, where, whole, spelled in watched:
        found: list = []
        for node in ctx.index.nodes(cst.Call):
            func = node.func
            if not isinstance(func, cst.Attribute):
                continue
            if ctx.dotted(func.value) == held and (
                    whole and func.attr.value.startswith(_CHANGING_PREFIXES) or _changes_own(ctx, func.attr.value)):
                # (also on what the dataset was built from: `Subset(ds, idx)` sees `ds.resample()`)
                found.append(node)
            elif func.attr.value in MUTATORS and on(func.value, held, whole):
                found.append(node)
        if whole:  # handed to a function of the module that changes it (`grow(ds, epoch)`)
            found += [node for node in ctx.loops.calls_handing(held) if changes_argument(ctx, node, held)]
        for node in [*ctx.index.nodes(cst.Assign), *ctx.index.nodes(cst.AugAssign), *ctx.index.nodes(cst.Del)]:
            if isinstance(node, cst.Assign):
                targets = [t.target for t in node.targets]
            elif isinstance(node, cst.AugAssign):
                targets = [node.target]
            else:
                targets = [e.value for e in node.target.elements] if isinstance(node.target, cst.Tuple) else [node.target]
            for target in targets:
                if (isinstance(target, cst.Subscript) and on(target.value, held, whole)
                        or whole and isinstance(target, cst.Attribute) and on(target.value, held, whole)
                        # An object the dataset was built from, given a new setting its class may
                        # read (`cfg.seq_len = ...` with `Tokens(cfg)` reading `self.cfg.seq_len`),
                        # or its own class reads (`resize.size = ...` with `Images(resize)`, Resize's
                        # `__call__` reading `self.size`: it is part of the dataset, and was missed).
                        or not whole and isinstance(target, cst.Attribute) and on(target.value, held, True)
                        and (_may_read(ctx, cls, target.attr.value)
                             or _held_reads(ctx, spelled, ctx.dotted(target.value)[len(held):], target.attr.value))
                        # `items += more` extends a list in place (an int's `n += 1` binds a new one).
                        or not whole and isinstance(node, cst.AugAssign) and ctx.dotted(target) == held
                        and ctx.is_builtin_collection(target)):
                    found.append(node)
                    break
        sites += [site for site in found if ctx.loops.in_sight(site, held, where)]
    return sites


def changed_between_passes(ctx, call: cst.Call) -> bool:
    """The loader's dataset (dataset_change_sites) is changed in a loop that runs a pass over the
    loader again (`for epoch ...: ds.set_epoch(epoch)`), and does not build the loader anew: live
    (persistent) workers would keep the copy they were forked with (TL103)."""
    sites = dataset_change_sites(ctx, call)
    if not sites:
        return False
    rebuilt = ctx.loops.loops_around(call)
    outers = {outer for _, anchor in ctx.loops.passes_over(call) for outer in ctx.loops.loops_around(anchor)} - rebuilt
    return any(ctx.loops.runs_inside(site, outer) for site in sites for outer in outers)


def changed_while_drawn(ctx, call: cst.Call) -> bool:
    """The loader's dataset (dataset_change_sites) is changed in a loop that takes batches from the
    loader: the body of a loop over it, or a loop drawing with `next(it)` from an iterator over it
    (a replay buffer filled by `buf.add(obs)` beside `next(it)`). Workers forked at the pass's start
    keep their copy, so they would never see what the loop adds (TL101: the model trained on the
    empty buffer's zeros)."""
    sites = dataset_change_sites(ctx, call)
    if not sites:
        return False
    loops = [node for node, _ in ctx.loops.passes_over(call) if isinstance(node, (cst.For, cst.While))]
    loops += [loop for loop, _ in ctx.loops.next_draws(call)]
    return any(ctx.loops.runs_inside(site, loop) for site in sites for loop in loops
               if isinstance(loop, (cst.For, cst.While)))


def _held_reads(ctx, given: cst.BaseExpression | None, path: str, attr: str) -> bool:
    """The object handed to the dataset's constructor (given, a name) is built here from a class of
    the module whose body reads `self.<attr>` (`resize = Resize(16)`, Resize's `__call__` reading
    `self.size`): a new value of that attribute changes what the dataset returns. path: the
    attributes between (`""` for `resize.size`); only the object itself is judged."""
    if given is None or path:
        return False
    for value in ctx.assigned_values(given):
        if not isinstance(value, cst.Call):
            continue
        class_name = ctx.dotted(value.func)
        for cls in ctx.index.nodes(cst.ClassDef):
            if cls.name.value == class_name and any(
                    isinstance(n, cst.Attribute) and n.attr.value == attr and ctx.dotted(n.value) == "self"
                    for c in ctx.loops.lineage(cls) for n in ctx.index.walk(c)):
                return True
    return False


def _may_read(ctx, cls: cst.ClassDef | None, attr: str) -> bool:
    """The dataset's class, of this module, names an attribute of this name in its body
    (`self.cfg.seq_len` for `seq_len`). A class not seen here is not judged: a configuration handed
    to it (simpletransformers' `args`) has many fields the loop may set that it never reads."""
    return cls is not None and any(isinstance(n, cst.Attribute) and n.attr.value == attr for n in ctx.index.walk(cls))


def global_change_sites(ctx, cls: cst.ClassDef, methods: tuple[str, ...] = ("__getitem__", "__iter__")
                        ) -> list[cst.CSTNode]:
    """Where a module global that the class's methods (`__getitem__` or `__iter__`; a sampler's
    `__iter__` for TL104), the methods of the class they call or the module's functions (two calls
    down) read is changed: assigned, at the top level or in a function declaring it `global`
    (`NOISE = float(epoch)`); an item or an attribute it reads of it assigned, no declaration
    needed (`CURRICULUM["frac"] = ...`, `CFG.frac = ...`, also `+=`); or a mutating method called
    on it (`TABLE.append(x)`). Live workers keep the value they were forked with; the main process
    draws a sampler's indices ahead of the loop."""
    module_names = {t.target.value for stmt in ctx.module.body if isinstance(stmt, cst.SimpleStatementLine)
                    for node in stmt.body if isinstance(node, (cst.Assign, cst.AnnAssign))
                    for t in (node.targets if isinstance(node, cst.Assign) else [node])
                    if isinstance(t.target, cst.Name)}
    if not module_names:
        return []
    chain = ctx.loops.lineage(cls)
    starts = [method for name in methods if (method := method_of(ctx, cls, name)) is not None]
    read: set[str] = set()
    spelled: set[str] = set()  # `CFG.frac`: attributes read of those globals
    for fn in methods_reached(ctx, chain, starts, 2, functions=True):
        local = local_names(fn)
        for n in ctx.index.walk(fn.body):
            if isinstance(n, cst.Name) and n.value in module_names and n.value not in local:
                read.add(n.value)
            elif isinstance(n, cst.Attribute) and (name := ctx.dotted(n)) and name.split(".", 1)[0] in module_names:
                spelled.add(name)
    if not read:
        return []
    sites = []
    for node in [*ctx.index.nodes(cst.Assign), *ctx.index.nodes(cst.AugAssign)]:
        targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
        for target in targets:
            if isinstance(target, cst.Name):
                if target.value in read and _global_there(ctx, node, target.value):
                    sites.append(node)
                continue
            root = target
            while isinstance(root, (cst.Subscript, cst.Attribute)):
                root = root.value
            if not (isinstance(root, cst.Name) and root.value in read and _global_there(ctx, node, root.value, True)):
                continue
            # An attribute set is a change where the class reads it (`CFG.frac`, not `CFG.lr`).
            name = ctx.dotted(target) if isinstance(target, cst.Attribute) else None
            if name is None or any(r == name or r.startswith(name + ".") for r in spelled):
                sites.append(node)
    for node in ctx.index.nodes(cst.Call):
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in MUTATORS and isinstance(func.value, cst.Name) \
                and func.value.value in read and _global_there(ctx, node, func.value.value, True):
            sites.append(node)
    return sites


def _global_there(ctx, node: cst.CSTNode, name: str, read: bool = False) -> bool:
    """name at node is the module's variable: node is at the top level, or its function declares
    it `global` (a function that binds it otherwise has a local of that name), or (read: the name
    is only read there, its object changed, `NOISE["scale"] = ...`) binds no name of its own."""
    fn = ctx.index.enclosing_function(node)
    if fn is None:
        return True
    declared = any(isinstance(n, cst.Global) and any(g.name.value == name for g in n.names)
                   for n in ctx.index.walk(fn.body))
    return declared or (read and not ctx.bindings.binds(fn, name))
