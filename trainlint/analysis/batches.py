"""Where a loader's batches are made and where a loop copies them to the device.

The loader rules ask it what a DataLoader call sets (`loader_arg`), whether its collate_fn or
dataset makes the batches on the device (`batches_made_on_device`), which loops take its batches
(`loader_batches`) and which device copies those batches reach (`batch_moves`); the host-sync
rules ask it which loops take batches that arrive on the host (`host_batch_loops`), so that a
read of such a batch's tensors (`batch["ids"].tolist()`) is not a wait for the GPU.
"""

from __future__ import annotations

import re

import libcst as cst

from trainlint.analysis.framework_loaders import accelerate_trains_on, places_batches
from trainlint.analysis.frameworks import is_training_arguments
from trainlint.analysis.literals import UNKNOWN
from trainlint.analysis.loops import LOOKS_ONLY
from trainlint.analysis.names import bound_names, dotted, local_names
from trainlint.analysis.tree import conditional_values, parameter, parameter_annotation
from trainlint.analysis.variables import is_variable, owner, role

DATALOADERS = (
    "torch.utils.data.DataLoader",
    "torchdata.stateful_dataloader.StatefulDataLoader",
    "torchdata.stateful_dataloader.stateful_dataloader.StatefulDataLoader",
)
# The positional parameters of DataLoader.__init__ (torch 2.13; StatefulDataLoader's are the same),
# in order; prefetch_factor, persistent_workers, pin_memory_device and in_order are keyword-only.
POSITIONAL_PARAMETERS = ("dataset", "batch_size", "shuffle", "sampler", "batch_sampler", "num_workers", "collate_fn",
                         "pin_memory", "drop_last", "timeout", "worker_init_fn", "multiprocessing_context", "generator")
PARAMETER_POSITION = {name: i for i, name in enumerate(POSITIONAL_PARAMETERS)}


def builds_trainer_loader(ctx, call: cst.Call) -> bool:
    """`TrainingArguments(...)` (or a trl/sentence-transformers subclass): the Trainer builds its
    training DataLoader from the `dataloader_*` settings, one per DataLoader argument."""
    return is_training_arguments(ctx.names.qualified_if_named(call.func, "Arguments", "Config"))


def loader_keyword(ctx, call: cst.Call, name: str) -> str:
    """The keyword that sets DataLoader argument `name` in this call: `dataloader_num_workers` in
    TrainingArguments, `num_workers` in a DataLoader."""
    return f"dataloader_{name}" if builds_trainer_loader(ctx, call) else name


def loader_arg(ctx, call: cst.Call, name: str) -> cst.Arg | None:
    """The argument that sets DataLoader argument `name` in this call: its keyword, its position,
    or the call's `*args`/`**options` when they may pass it (a value not known here); None when
    it is certainly not passed (a `**options` dict whose keys the file shows does not hold it)."""
    keyword = loader_keyword(ctx, call, name)
    arg = ctx.keyword(call, keyword)
    if arg is None and name in PARAMETER_POSITION and not builds_trainer_loader(ctx, call):
        arg = ctx.positional(call, PARAMETER_POSITION[name])
    if arg is None and ctx.hides_arguments(call):
        keys = ctx.star_keys(call)
        if keys is None or keyword in keys:
            return next(a for a in call.args if a.star)
    if arg is None and (made := partial_loader(ctx, call)) is not None:
        arg = ctx.keyword(made, keyword)  # given by the partial, where the call gives none
    return arg


def collate_arg(ctx, call: cst.Call) -> cst.Arg | None:
    """The argument that gives the loader a collate_fn of its own (as loader_arg finds it); None
    when it passes none or passes `None`, by keyword or by position: DataLoader's default collate."""
    arg = loader_arg(ctx, call, "collate_fn")
    return None if arg is not None and not arg.star and ctx.literal(arg.value) is None else arg


def star_values(ctx, call: cst.Call, name: str) -> list:
    """The values the call's `**options` dict is given for DataLoader argument `name` where the
    file shows every place that sets it (`train_kwargs = {"batch_size": args.batch_size}`,
    `train_kwargs.update({"pin_memory": True})`); None stands for one it does not show; [] when
    the dict's keys are not known."""
    return list((ctx.star_entries(call) or {}).get(loader_keyword(ctx, call, name)) or ())


def star_setting(ctx, call: cst.Call, name: str):
    """The literal star_values gives `name`, when they all are that literal; UNKNOWN otherwise."""
    found = {ctx.literal(v) if v is not None else UNKNOWN for v in star_values(ctx, call, name) or [None]}
    return found.pop() if len(found) == 1 else UNKNOWN


def is_loader(ctx, call: cst.Call) -> bool:
    """A call of DataLoader's constructor with DataLoader's own arguments (aliases, subclasses that
    keep its __init__), also through a name assigned only such classes (yolov5's
    `loader = DataLoader if image_weights else InfiniteDataLoader; loader(dataset, ...)`)."""
    if ctx.names.constructs(call.func, *DATALOADERS):
        return True
    if partial_loader(ctx, call) is not None:
        return True
    if not isinstance(call.func, cst.Name) or call.func.value in ctx.names.aliases:
        return False
    values = ctx.assigned_values(call.func)
    return bool(values) and all(_loader_classes(ctx, v) for v in values)


def partial_loader(ctx, call: cst.Call) -> cst.Call | None:
    """The `functools.partial(DataLoader, batch_size=8, ...)` that call runs, written in it or
    through a name only ever assigned it (`make = partial(DataLoader, ...)`, then `make(ds)`): the
    partial gives keywords only, no dataset, so the call's own arguments stand where they would in
    DataLoader's, and a keyword the call gives replaces the partial's (loader_arg reads the
    partial's where the call gives none; a fix sets the keyword at the call, for that loader alone).
    None otherwise."""
    func = call.func
    made_here = _partials_of_loaders(ctx)
    if not made_here:  # asked of every call of every file: most make no such partial
        return None
    if isinstance(func, cst.Call):
        values = [func]
    elif isinstance(func, cst.Name) and func.value in made_here and func.value not in ctx.names.aliases:
        bindings = ctx.bindings.seen_from(func)
        if not bindings or any(kind != "assign" or value is None for kind, value in bindings):
            return None
        values = [value for _kind, value in bindings]
    else:
        return None
    if len(values) != 1 or not isinstance(made := values[0], cst.Call) \
            or ctx.names.qualified(made.func) != "functools.partial" or not made.args:
        return None
    first, rest = made.args[0], made.args[1:]
    if first.keyword is not None or first.star or not _loader_classes(ctx, first.value):
        return None
    if any(arg.keyword is None or arg.star or arg.keyword.value == "dataset" for arg in rest):
        return None  # a positional or `**` argument moves or hides the call's
    return made


def _partials_of_loaders(ctx) -> frozenset[str]:
    """The file's `functools.partial(<a DataLoader class>, ...)` calls, as the names they are
    assigned to ("" for one called in place); found once per file. partial_loader asked the
    bindings of every called name of every file that mentions `partial`, a tenth of a lint run."""
    found = ctx.__dict__.get("_partials_of_loaders")
    if found is None:
        names = set()
        if "partial" in ctx.text:
            for made in ctx.index.nodes(cst.Call):
                if made.args and ctx.names.qualified(made.func) == "functools.partial" \
                        and _loader_classes(ctx, made.args[0].value):
                    parent = ctx.parent(made)
                    names.add(parent.targets[0].target.value if isinstance(parent, cst.Assign)
                              and isinstance(parent.targets[0].target, cst.Name) else "")
        found = ctx.__dict__["_partials_of_loaders"] = frozenset(names)
    return found


def loader_calls(ctx) -> list[cst.Call]:
    """The file's DataLoader calls (is_loader), in the order they stand; found once per file for
    the rules and analyses that look at every loader (which ones feed a loop, set a collate_fn)."""
    calls = ctx.__dict__.get("_loader_calls")
    if calls is None:
        calls = ctx.__dict__["_loader_calls"] = [call for call in ctx.index.nodes(cst.Call) if is_loader(ctx, call)]
    return calls


def _loader_classes(ctx, expr: cst.BaseExpression) -> bool:
    if isinstance(expr, cst.IfExp):
        return _loader_classes(ctx, expr.body) and _loader_classes(ctx, expr.orelse)
    return isinstance(expr, (cst.Name, cst.Attribute)) and ctx.names.constructs(expr, *DATALOADERS)


def collates_set_on(ctx, call: cst.Call) -> list[cst.BaseExpression]:
    """The collate_fns set on the loader after it is built, under a name it is known by there
    (`loader.collate_fn = f`; in a function it is handed to, `train_dataloader.collate_fn =
    self.smart_batching_collate`): they replace the one its call gives."""
    sets = ctx.__dict__.get("_collate_sets")
    if sets is None:  # (name set on, function, value) of every `X.collate_fn = value` of the file
        sets = ctx.__dict__["_collate_sets"] = [
            (dotted(target.target.value), ctx.index.enclosing_function(node), node.value)
            for node in (ctx.index.nodes(cst.Assign) if ".collate_fn" in ctx.text else ()) for target in node.targets
            if isinstance(target.target, cst.Attribute) and target.target.attr.value == "collate_fn"]
    if not sets:
        return []
    known = {(path.name, path.scope) for path in ctx.loops.paths_of(call)}
    return [value for name, scope, value in sets if (name, scope) in known]


def reads_as_loader(ctx, obj: cst.BaseExpression) -> bool:
    """obj, whose attribute a statement sets (`obj.collate_fn = f`), is a DataLoader built
    elsewhere, as far as the file shows: a parameter annotated with a loader class
    (`train_dataloader: DataLoader`), or a name that reads as a loader's (`self.dataloader`) and is
    not assigned something else in its function. (A loader of this file is found through the names
    it is known by: collates_set_on.)"""
    if isinstance(obj, cst.Name):
        fn = ctx.index.enclosing_function(obj)
        annotation = parameter_annotation(fn, obj.value) if fn is not None else None
        if annotation is not None:
            return _loader_classes(ctx, annotation)
        if ctx.bindings.assigned_values(obj):
            return False  # assigned something that is not a loader of this file: its name says nothing
    return bool(_LOADER_NAMES.search((dotted(obj) or "").rsplit(".", 1)[-1]))


def loader_batches(ctx, call: cst.Call, *, shared: bool = False) -> list[tuple[cst.CSTNode, cst.CSTNode]]:
    """(loop, target) for each loop that takes the loader's batches into target: the loops over it
    (with shared, also those over it on some calls of their function, `shared_loops`), and loops
    drawing them with `target = next(it)` (`next_draws`)."""
    loops = ctx.loops.loops_over(call)
    if shared:
        loops += [loop for loop, _path in ctx.loops.shared_loops(call)]
    return [(loop, loop.target) for loop in loops] + ctx.loops.next_draws(call)


def is_device_move(ctx, call: cst.Call) -> bool:
    """`x.cuda()` or `x.to(device)` / `x.to("cuda")` / `x.to(device=d, ...)` (not a dtype-only
    `.to(torch.float16)`, nor `.to(memory_format=fmt)`)."""
    func = call.func
    if not isinstance(func, cst.Attribute):
        return False
    if func.attr.value == "cuda":
        return True
    if func.attr.value != "to" or not call.args:
        return False
    first = next((a for a in call.args if a.keyword is not None and a.keyword.value == "device"), call.args[0])
    if first.keyword is not None and first.keyword.value != "device":
        return False  # keywords only, none a device: `.to(dtype=...)`, `.to(memory_format=...)`
    qn = ctx.names.qualified(first.value) or ""
    if qn.startswith("torch.") and qn != "torch.device":
        return False  # a dtype
    if first.keyword is None and isinstance(first.value, cst.Attribute) and first.value.attr.value == "dtype":
        return False  # `mask.to(h.dtype)` in a model's forward: another tensor's dtype, no copy
    literal = ctx.literal(first.value)
    return (literal is UNKNOWN or isinstance(literal, str)) and not is_cpu_device(ctx, first.value)


def copies_to_host(ctx, call: cst.Call, *, blocking: bool = False) -> bool:
    """call copies what it is called on into host memory: `x.cpu()`, or `x.to(...)` whose device
    (first positional or `device=`) is_cpu_device reads as the CPU: `x.to("cpu")`,
    `x.to(device="cpu")`, `x.to(torch.device("cpu"))`, `x.to(cpu)` of a name bound only to the
    CPU. Not `x.to(device)` of a device picked at run time, which may be the GPU. With blocking,
    only a copy that waits for the device: not one with `non_blocking=` anything but a literal
    False (into pinned memory it waits for nothing), nor `.cpu(...)` given other arguments."""
    func = call.func
    if not isinstance(func, cst.Attribute) or func.attr.value not in ("cpu", "to") or any(a.star for a in call.args):
        return False
    if func.attr.value == "cpu":
        return not (blocking and call.args)
    if not call.args:
        return False
    device = next((a for a in call.args if a.keyword is not None and a.keyword.value == "device"), call.args[0])
    if device.keyword is not None and device.keyword.value != "device" or not is_cpu_device(ctx, device.value):
        return False  # `.to(dtype=...)`, `.to(device)`
    # `.to(device, dtype, non_blocking, copy)`: the flag by keyword, or third by position.
    positional = [a for a in call.args if a.keyword is None]
    flag = next((a for a in call.args if a.keyword is not None and a.keyword.value == "non_blocking"),
                positional[2] if len(positional) > 2 else None)
    return not blocking or flag is None or ctx.literal(flag.value) is False


def is_cpu_device(ctx, expr: cst.BaseExpression, depth: int = 0) -> bool:
    """expr is known to name the CPU: `"cpu"` (`"cpu:0"`), `torch.device("cpu")`, or a variable
    every assignment of which, in the scope it is read from, is one of those (`cpu =
    torch.device("cpu")`, `host = "cpu"`), a parameter among them holding what every call of its
    function hands it or leaves it by default (`def _test_model(opt, device=torch.device("cpu"))`
    that no call passes a device: Loops.parameter_values)."""
    literal = ctx.literal(expr)
    if isinstance(literal, str):
        return literal.split(":")[0] == "cpu"
    if isinstance(expr, cst.Call) and ctx.names.qualified(expr.func) == "torch.device" and expr.args:
        return is_cpu_device(ctx, expr.args[0].value, depth + 1) if depth < 3 else False
    if not isinstance(expr, cst.Name) or depth >= 3 or not is_variable(ctx.index, expr):
        return False
    scopes = ctx.bindings.of(expr.value)
    if scopes is None:
        return False
    scope = owner(ctx.index, expr)
    while True:
        bindings = scopes.get(scope)
        if bindings:
            values = [value for kind, value in bindings if kind == "assign" and value is not None]
            others = len(bindings) - len(values)
            if others == 1 and isinstance(scope, cst.FunctionDef) and parameter(scope, expr.value) is not None:
                # The one binding that assigns no value is the parameter (another would be a second).
                passed = ctx.loops.parameter_values(scope, expr.value)
                values, others = (values + passed, 0) if passed is not None else (values, others)
            return others == 0 and all(is_cpu_device(ctx, value, depth + 1) for value in values)
        if scope is None:
            return False
        scope = owner(ctx.index, scope)
        while isinstance(scope, cst.ClassDef):  # a class body's names are not seen from its methods
            scope = owner(ctx.index, scope)


# Helpers that move a whole batch (a dict or list of tensors) to a device: torchtune's
# `batch_to_device`, accelerate's `send_to_device`, fairseq's `move_to_cuda`, and projects' own.
_DEVICE_HELPER = re.compile(r"((^|_)to_(device|cuda|gpu)|^(send|move|copy)_to_(device|cuda|gpu|accelerator))$")


def is_device_helper(ctx, call: cst.Call) -> bool:
    name = ctx.dotted(call.func)
    return name is not None and bool(call.args) and bool(_DEVICE_HELPER.search(name.rsplit(".", 1)[-1]))


def batch_moves(ctx, loop: cst.CSTNode, *, pieces: bool = False, target: cst.CSTNode | None = None) -> frozenset[cst.Call]:
    """The device copies (`.to(device)`, `.cuda()`, batch helpers) that the batches of a loop over
    a loader reach: copies of the loop's target (or of target, where the loop draws its batches
    with `target = next(it)`) or of values computed from it, in the loop body or in module-local
    functions the loop hands them to (up to three calls down; a batch helper of the module, `x =
    to_device(x)`, is both a copy and followed into, unless it calls itself). With pieces, only
    copies of the batch's own tensors (`batch["x"]`, `x, y = batch`, `for t in batch`), the ones in
    the loader's memory, not of values computed from them (`accelerator.gather(x)`, `model(x)`)."""
    target = loop.target if target is None else target
    cache = ctx.__dict__.setdefault("_batch_moves", {})
    if (loop, target, pieces) not in cache:
        names = {ctx.dotted(n) for n in ctx.index.walk(target) if isinstance(n, (cst.Name, cst.Attribute))}
        found: set = set()
        _moves_in(ctx, loop.body, names - {None}, _is_piece if pieces else mentions_any, 3, (), found,
                  skip_moved=pieces)
        if pieces:  # a tensor the loop has copied already is in device memory, not the loader's
            found = {call for call in found if not moved_already(ctx, call)}
        cache[loop, target, pieces] = frozenset(found)
    return cache[loop, target, pieces]


def moved_already(ctx, call: cst.Call) -> bool:
    """What the device copy call copies was copied to the device before: a copy itself
    (`x.to(device).to(other)`), or a name (or what is taken out of one) whose assignment reaching
    the copy, earlier in the blocks that hold it (not across the start of a loop or function),
    assigns a device copy (`y = y.to(device, non_blocking=True)`, `x, y = x.cuda(), y.cuda()`,
    `batch = send_to_device(batch, device)`)."""
    expr = call.func.value if isinstance(call.func, cst.Attribute) and is_device_move(ctx, call) else None
    return expr is not None and _value_moved(ctx, expr)


def _value_moved(ctx, expr: cst.BaseExpression) -> bool:
    """expr, read where it stands, is (or is taken out of) a device copy made before: moved_already
    of what a copy copies, and of what a call hands a function of the module."""
    for _ in range(8):  # names followed back through their assignments, a few steps
        if expr is None:
            return False
        if _copied(ctx, expr):
            return True
        if isinstance(expr, (cst.Name, cst.Attribute)):
            found, value = _reaching_assignment(ctx, expr, ctx.dotted(expr))
            if found:
                # `labels = batch.pop("labels")` after `batch = {k: v.to(device) ...}`: what the
                # value is taken from was copied.
                expr = value
                continue
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
            expr = expr.func.value
        elif isinstance(expr, (cst.Subscript, cst.Attribute)):
            expr = expr.value
        else:
            return False
    return False


def _copied(ctx, expr: cst.BaseExpression) -> bool:
    """expr is a device copy, or what a method or an index makes of one (`x.cuda().float()`), or a
    comprehension of copies (`{k: v.to(device) for k, v in batch.items()}`, `tuple(t.to(device)
    for t in batch)`)."""
    while True:
        if isinstance(expr, (cst.DictComp, cst.ListComp, cst.GeneratorExp, cst.SetComp)):
            element = expr.value if isinstance(expr, cst.DictComp) else expr.elt
            return _copied(ctx, element)
        if isinstance(expr, cst.Call) and ctx.names.qualified(expr.func) in ("builtins.tuple", "builtins.list") \
                and len(expr.args) == 1 and isinstance(expr.args[0].value, (cst.GeneratorExp, cst.ListComp)):
            return _copied(ctx, expr.args[0].value)
        if isinstance(expr, cst.Call):
            if is_device_move(ctx, expr) or is_device_helper(ctx, expr):
                return True
            if not isinstance(expr.func, cst.Attribute):
                return False
            expr = expr.func.value
        elif isinstance(expr, cst.Subscript):
            expr = expr.value
        else:
            return False


def _reaching_assignment(ctx, use: cst.BaseExpression, name: str | None) -> tuple[bool, cst.BaseExpression | None]:
    """(True, value) for the nearest statement before use, in the blocks that hold it, that
    binds name: value is what an assignment gives name (an element of `a, b = x, y`, or the
    whole value it unpacks), None for any other binding. (False, None) when none does before a
    loop, function or comprehension start."""
    if name is None:
        return False, None
    parts = name.split(".")
    prefixes = {".".join(parts[:i]) for i in range(1, len(parts))}
    for anc, earlier in ctx.index.preceding(use):
        if isinstance(anc, (cst.For, cst.While, cst.FunctionDef, cst.Lambda, cst.ClassDef, cst.BaseComp)):
            return False, None
        for stmt in earlier:
            for small in reversed(stmt.body) if isinstance(stmt, cst.SimpleStatementLine) else [stmt]:
                if isinstance(small, cst.Assign) and len(small.targets) == 1:
                    target = small.targets[0].target
                    if ctx.dotted(target) == name:
                        return True, small.value
                    if isinstance(target, (cst.Tuple, cst.List)):
                        names = [ctx.dotted(e.value) for e in target.elements]
                        if name in names and not any(isinstance(e, cst.StarredElement) for e in target.elements):
                            value = small.value
                            if isinstance(value, (cst.Tuple, cst.List)):
                                if len(value.elements) != len(names) or \
                                        isinstance(value.elements[names.index(name)], cst.StarredElement):
                                    return True, None
                                return True, value.elements[names.index(name)].value
                            return True, value
                bound = ctx.index.memo(bound_names, small)
                if name in bound:
                    return True, None
                if bound & prefixes:  # `batch = ...` before a use of `batch.x`: ask about `batch`
                    return False, None
    return False, None


def _moves_in(ctx, body: cst.CSTNode, names: set, carries, depth: int, seen: tuple, found: set,
              whole: bool = False, skip_moved: bool = False) -> None:
    """carries(ctx, expr, names): whether the value of expr carries the batch named by names; whole:
    names are re-bound only by plain assignments to one name (`derived_names`); skip_moved: a value
    copied to the device before a call (`x = x.to(device, non_blocking=True); model(x)`) is not
    followed into the function called: its copies there (`x.to(self.device)` in forward) copy
    nothing from the host."""
    names = derived_names(ctx, body, names, carries, whole)
    for node in ctx.index.walk(body):
        if not isinstance(node, cst.Call):
            continue
        if is_device_move(ctx, node) and carries(ctx, node.func.value, names):
            found.add(node)
            continue
        helper = is_device_helper(ctx, node) and any(carries(ctx, a.value, names) for a in node.args)
        if helper:
            found.add(node)
        # Into a module-local function, a batch helper too (`def to_device(x): return
        # x.to(device)`): its own copies are the ones a rule may change. Not a helper that calls
        # itself on the parts of any structure (TL106's `_trainlint_to_device`): what one of its
        # copies gets may be anything (its blocking `obj.to(device)` for objects of their own class).
        if depth:
            callee = ctx.loops.local_callee_name(node)
            if callee is None or helper and _recursive(ctx, ctx.loops.functions[callee][0]):
                continue
            params = {param for param, arg in ctx.loops.bind_params(callee, node) if carries(ctx, arg.value, names)
                      and not (skip_moved and _value_moved(ctx, arg.value))}
            fn = ctx.loops.functions[callee][0]
            if params and fn not in seen:
                _moves_in(ctx, fn.body, params, carries, depth - 1, (*seen, fn), found, whole, skip_moved)


def _recursive(ctx, fn: cst.FunctionDef) -> bool:
    """fn calls itself."""
    return any(isinstance(node, cst.Call) and ctx.loops.local_callee_name(node) == fn.name.value
               for node in ctx.index.walk(fn.body))


def whole_batch_moves(ctx, loop: cst.CSTNode, target: cst.CSTNode | None = None) -> frozenset[cst.Call]:
    """The device copies of the batch itself, the object the loader yields (`batch.to(device)`,
    also through a name it is re-bound to, `batch = batch.to(device)`, or a parameter it is handed
    to, up to three calls down), as opposed to copies of the tensors taken out of it (`batch["x"]`,
    `x, y = batch`, `for t in batch`): a custom collate_fn's batch may be an object of its own
    class, whose `to` is not Tensor.to."""
    target = loop.target if target is None else target
    cache = ctx.__dict__.setdefault("_whole_batch_moves", {})
    if (loop, target) not in cache:
        batch = batch_part(ctx, loop, target)
        found: set = set()
        if isinstance(batch, (cst.Name, cst.Attribute)):
            _moves_in(ctx, loop.body, {ctx.dotted(batch)} - {None}, _is_whole, 3, (), found, whole=True)
        cache[loop, target] = frozenset(found)
    return cache[loop, target]


def batch_part(ctx, loop: cst.CSTNode, target: cst.BaseExpression) -> cst.BaseExpression:
    """What a loop binds the loader's batch to: the target (`x, y`), or, in a loop over
    `enumerate(loader)`, the target's second part (`(x, y)` of `i, (x, y)`)."""
    if target is getattr(loop, "target", None) and _called(ctx, loop.iter, "enumerate") \
            and isinstance(target, cst.Tuple) and len(target.elements) == 2:
        return target.elements[1].value
    return target


def _called(ctx, expr: cst.BaseExpression, name: str) -> bool:
    """expr is a call of name, or wraps one as its first argument (`tqdm(enumerate(loader))`)."""
    while isinstance(expr, cst.Call) and expr.args:
        if (ctx.dotted(expr.func) or "").rsplit(".", 1)[-1] == name:
            return True
        expr = expr.args[0].value
    return False


# Methods that take a part out of a container batch: their result is not the batch itself.
_TAKES_PART = frozenset({"get", "values", "items", "keys", "pop", "setdefault", "__getitem__"})


def _is_whole(ctx, expr: cst.BaseExpression, names: set) -> bool:
    """expr is one of names, or what a method of one gives that is not a part taken out of it
    (`batch.to(device)`, `batch.pin_memory()`; not `batch["x"]`, `batch.x`, `batch.get("x")`)."""
    while ctx.dotted(expr) not in names:
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) \
                and expr.func.attr.value not in _TAKES_PART:
            expr = expr.func.value
        else:
            return False
    return True


def mentions_any(ctx, expr: cst.CSTNode, names: set) -> bool:
    return any(isinstance(n, (cst.Name, cst.Attribute)) and ctx.dotted(n) in names for n in ctx.index.walk(expr))


def _is_piece(ctx, expr: cst.BaseExpression, names: set) -> bool:
    """expr is one of names or taken from one (`batch["x"]`, `batch.values()`, `x.float()`), or a
    tuple/list of such (`for t in (x, y)`: each t is a piece)."""
    if isinstance(expr, (cst.Tuple, cst.List)):
        elements = [e.value for e in expr.elements]
        return bool(elements) and all(_is_piece(ctx, e, names) for e in elements)
    while ctx.dotted(expr) not in names:
        if isinstance(expr, cst.Call):
            expr = expr.func
        elif isinstance(expr, (cst.Attribute, cst.Subscript)):
            expr = expr.value
        else:
            return False
    return True


def derived_names(ctx, body: cst.CSTNode, names: set, carries, whole: bool = False) -> set:
    """names and every name bound in body from a value that carries one of them (`x, y = batch`,
    `for micro in batch.split(4)`, `{k: v for k, v in batch.items()}`; with mentions_any also
    `inputs = prepare(batch)`, which _is_piece does not count as the batch's own tensor). With
    whole, only plain assignments to one name (`batch = batch.to(device)`): unpacking or iterating
    takes parts out of the batch."""
    names = set(names)
    bindings = []  # (value, target)
    for node in ctx.index.walk(body):
        if whole:
            if isinstance(node, cst.Assign) and len(node.targets) == 1 \
                    and isinstance(node.targets[0].target, (cst.Name, cst.Attribute)):
                bindings.append((node.value, node.targets[0].target))
            continue
        if isinstance(node, cst.Assign):
            bindings += [(node.value, t.target) for t in node.targets]
        elif isinstance(node, (cst.AnnAssign, cst.AugAssign)) and node.value is not None:
            bindings.append((node.value, node.target))
        elif isinstance(node, (cst.For, cst.CompFor)):
            bindings.append((node.iter, node.target))
        elif isinstance(node, cst.NamedExpr):
            bindings.append((node.value, node.target))
        elif isinstance(node, cst.WithItem) and node.asname is not None:
            bindings.append((node.item, node.asname.name))
    changed = True
    while changed:
        changed = False
        for value, target in bindings:
            if carries(ctx, value, names):
                for n in ctx.index.walk(target):
                    name = ctx.dotted(n) if isinstance(n, (cst.Name, cst.Attribute)) else None
                    if name and name not in names:
                        names.add(name)
                        changed = True
    return names


def batches_made_on_device(ctx, call: cst.Call) -> bool:
    """The loader's batches come out of it on the device: its collate_fn, or its dataset's class
    (`__getitem__`/`__iter__`, the methods of the class they call, or `__init__` storing the data
    there), defined in this module, moves tensors to a device; or its dataset is built from
    tensors on the device (`dataset_on_device`). Pinning such batches raises (`cannot pin
    'torch.cuda.FloatTensor'`), and so does CUDA in forked worker processes."""
    cache = ctx.__dict__.setdefault("_device_batches", {})
    if call not in cache:
        cache[call] = _moves_in_loader(ctx, call) or dataset_on_device(ctx, call)
    return cache[call]


def dataset_on_device(ctx, call: cst.Call) -> bool:
    """The loader's dataset is built from tensors on the device (`Tensors.on_device`): a dataset
    call (`TensorDataset(X.cuda(), Y.cuda())`, a dataset class of this module or of any library)
    handed such a tensor, or a list or tuple of them, or a dataset built so (`Subset(ds, idx)` of
    such a `ds`, `ConcatDataset([a, b])`); directly or through the name the call is assigned to."""
    return _dataset_built_from(ctx, call, ctx.tensors.on_device)


def dataset_held_on_device(ctx, call: cst.Call) -> bool:
    """The loader's dataset holds its data on the device, not only its batches: it is built from
    device tensors (dataset_on_device), or its class of this module moves them there in `__init__`
    (`self.x = torch.randn(n, 8).to(device)`) or reads a module global holding one. TL101's advice
    differs then: workers cannot use such tensors, and the data needs no loading worth a worker."""
    if dataset_on_device(ctx, call):
        return True
    cls = dataset_class(ctx, call)
    if cls is None:
        return False
    init = method_of(ctx, cls, "__init__")
    if init is not None and sample_work(ctx, cls, init, lambda kind: kind == MOVES_TENSORS, depth=3, functions=True):
        return True
    return any(_reads_device_globals(ctx, method, cls) for name in ("__getitem__", "__iter__")
               if (method := method_of(ctx, cls, name)) is not None)


def dataset_from_device_helper(ctx, call: cst.Call) -> bool:
    """A tensor the loader's dataset is built from (as dataset_on_device follows the dataset) comes
    from a call of a function of this module that copies tensors to a device somewhere in it
    (`Tensors.from_device_helper`): it may be on the device where on_device cannot tell."""
    return _dataset_built_from(ctx, call, ctx.tensors.from_device_helper)


def _dataset_built_from(ctx, call: cst.Call, test) -> bool:
    first = ctx.positional(call, 0) or ctx.keyword(call, "dataset")
    return first is not None and not first.star and _built_from(ctx, first.value, test, 0)


def _built_from(ctx, expr: cst.BaseExpression, test, depth: int) -> bool:
    """expr, or what it is built from (the arguments of a call, the items of a list or tuple, the
    values a name is assigned or unpacked from, and its attributes: a dataset or a list of them),
    four levels down (`tr, va = random_split(full, ...)` of `full = TensorDataset(X, Y)`), passes test."""
    if depth > 4:
        return False
    if test(expr):
        return True
    # Unpacked items count as the items they unpack (`TensorDataset(*[t.to(device) for t in xs])`).
    if isinstance(expr, (cst.List, cst.Tuple)):
        return any(_built_from(ctx, e.value, test, depth + 1) for e in expr.elements)
    if isinstance(expr, cst.Call):
        return any(_built_from(ctx, a.value, test, depth + 1) for a in expr.args)
    if isinstance(expr, (cst.Name, cst.Attribute)):
        unpacked, attributes = _other_bindings(ctx).get((ctx.index.enclosing_function(expr), dotted(expr)), ([], []))
        return any(isinstance(v, (cst.Call, cst.List, cst.Tuple)) and _built_from(ctx, v, test, depth + 1)
                   for v in (*ctx.assigned_values(expr), *unpacked)) \
            or any(_built_from(ctx, v, test, depth + 1) for v in attributes)
    return False


def dataset_changed_after(ctx, call: cst.Call) -> bool:
    """The loader's dataset, read from a name, has attributes assigned in that name's scope (`ds.tensors
    = tuple(f(t) for t in ds.tensors)`): what it holds is not only what it was built from."""
    first = ctx.positional(call, 0) or ctx.keyword(call, "dataset")
    if first is None or first.star or not isinstance(first.value, (cst.Name, cst.Attribute)):
        return False
    key = (ctx.index.enclosing_function(first.value), dotted(first.value))
    return bool(_other_bindings(ctx).get(key, ([], []))[1])


def _other_bindings(ctx) -> dict:
    """(function, dotted name) -> (the values unpacked into a tuple target that holds the name,
    `tr, va = random_split(full, ...)`, `a, b = torch.split(X, 20)`; the values its attributes are
    assigned, `ds.tensors = ...`): what the name holds beyond its plain assignments
    (`ctx.assigned_values`). Once per file."""
    table = ctx.__dict__.get("_other_bindings")
    if table is None:
        table = ctx.__dict__["_other_bindings"] = {}
        for assign in ctx.index.nodes(cst.Assign):
            scope = ctx.index.enclosing_function(assign)
            for target in assign.targets:
                target = target.target
                if isinstance(target, (cst.Tuple, cst.List)):
                    for element in target.elements:
                        name = dotted(element.value) if not isinstance(element, cst.StarredElement) else None
                        if name:
                            table.setdefault((scope, name), ([], []))[0].append(assign.value)
                elif isinstance(target, cst.Attribute) and dotted(target.value):
                    table.setdefault((scope, dotted(target.value)), ([], []))[1].append(assign.value)
    return table


def _moves_in_loader(ctx, call: cst.Call) -> bool:
    arg = collate_arg(ctx, call)
    collates = [arg.value] if arg is not None and not arg.star else []
    for value in collates + collates_set_on(ctx, call):
        for collate in callable_choices(ctx, value):  # either branch of a conditional one
            if any(kind == MOVES_TENSORS for _c, kind in heavy_work(ctx, collate, masks=False)):
                return True
    if _dataset_built_from(ctx, call, lambda expr: moving_callable(ctx, expr)):
        return True  # a transform it is handed (`transform=lambda t: t.to(device)`) may run per item
    cls = dataset_class(ctx, call)
    if cls is None:
        return False
    for name in ("__init__", "__getitem__", "__iter__"):
        method = method_of(ctx, cls, name)
        if method is not None and sample_work(ctx, cls, method, lambda kind: kind == MOVES_TENSORS,
                                              depth=3, functions=True):
            return True
    return any(_reads_device_globals(ctx, method, cls) for name in ("__getitem__", "__iter__")
               if (method := method_of(ctx, cls, name)) is not None)


def moving_callable(ctx, expr: cst.BaseExpression, depth: int = 0) -> bool:
    """expr is a callable of this module that moves tensors to a device (moves_through): a
    lambda (`lambda t: t.to(device)`), a function of the module named (`to_dev`), or a name
    assigned one of those, `functools.partial` of one, or an instance of a class of the module
    whose `__call__` does. Handed to a dataset (`Wrapped(data, transform=to_dev)`), it may run on
    every item in `__getitem__`, which then hands out device tensors."""
    if depth > 3:
        return False
    if isinstance(expr, cst.Lambda):
        return moves_through(ctx, expr)
    if isinstance(expr, cst.Call):
        if ctx.names.qualified(expr.func) == "functools.partial" and expr.args and expr.args[0].keyword is None \
                and not expr.args[0].star:
            return moving_callable(ctx, expr.args[0].value, depth + 1)
        cls = class_named(ctx, ctx.dotted(expr.func))
        call = method_of(ctx, cls, "__call__") if cls is not None else None
        return call is not None and moves_through(ctx, call)
    if isinstance(expr, cst.Name) and is_variable(ctx.index, expr):
        values = ctx.bindings.assigned_values(expr) or []
        if any(moving_callable(ctx, v, depth + 1) for v in values if isinstance(v, (cst.Lambda, cst.Call, cst.Name))):
            return True
        return any(moves_through(ctx, fn) for fn in ctx.loops.functions.get(expr.value, ()))
    if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value in ("self", "cls"):
        found = resolve_callable(ctx, expr)
        return isinstance(found, cst.FunctionDef) and moves_through(ctx, found)
    return False


def moves_through(ctx, root: cst.CSTNode, depth: int = 3, seen: tuple = ()) -> bool:
    """root (a function or lambda) copies tensors to a device (heavy_work's MOVES_TENSORS), itself
    or in a function of the module it calls, up to depth calls down (`prepare(t)` calling
    `to_dev(t)`)."""
    if any(kind == MOVES_TENSORS for _c, kind in heavy_work(ctx, root, masks=False)):
        return True
    if depth == 0:
        return False
    return any(moves_through(ctx, callee, depth - 1, (*seen, root))
               for node in ctx.index.walk(root) if isinstance(node, cst.Call)
               for callee in ctx.loops.callees(node)
               if callee is not root and callee not in seen and not ctx.index.contains(root, callee))


def _reads_device_globals(ctx, fn: cst.FunctionDef, cls: cst.ClassDef | None, depth: int = 2) -> bool:
    """fn reads a module-level name assigned a tensor on the device (`FEATS = torch.randn(n, d,
    device=device)`, then `return FEATS[i]` in `__getitem__`), an attribute of its class that holds
    one (`table = FEATS` in the class body, `self.table = FEATS` in a method), or calls a function
    of the module that does (`lookup(i)`, two calls down): its samples are device tensors."""
    on_device = _device_globals(ctx)
    if not on_device:
        return False
    local = local_names(fn)
    held = _device_attributes(ctx, cls, on_device) if cls is not None else set()
    for n in ctx.index.walk(fn.body):
        if isinstance(n, cst.Name) and n.value in on_device and n.value not in local and is_variable(ctx.index, n):
            return True
        if isinstance(n, cst.Attribute) and ctx.dotted(n) in held:
            return True
        if depth and isinstance(n, cst.Call) and isinstance(n.func, cst.Name) and n.func.value not in local:
            if any(_reads_device_globals(ctx, callee, None, depth - 1)
                   for callee in ctx.loops.functions.get(n.func.value, ()) if callee is not fn):
                return True
    return False


def device_global_read(ctx, fn: cst.CSTNode) -> cst.Name | None:
    """A read in fn (a function or lambda) of a module-level name assigned a tensor on the device
    (`MEAN = torch.tensor(..., device=DEVICE)`, then `imgs - MEAN` in a collate_fn); None when none."""
    on_device = _device_globals(ctx)
    if not on_device:
        return None
    local = local_names(fn)
    return next((n for n in ctx.index.walk(fn.body) if isinstance(n, cst.Name) and n.value in on_device
                 and n.value not in local and is_variable(ctx.index, n)), None)


def _device_attributes(ctx, cls: cst.ClassDef, on_device: frozenset[str]) -> set[str]:
    """`self.x` for each attribute of cls its body or a method assigns a device global."""
    out = set()
    for node in ctx.index.walk(cls):
        if not (isinstance(node, cst.Assign) and isinstance(node.value, cst.Name) and node.value.value in on_device):
            continue
        for target in node.targets:
            if isinstance(target.target, cst.Name) and ctx.index.enclosing_function(node) is None:
                out.add(f"self.{target.target.value}")  # a class attribute, read as self.x
            elif ctx.dotted(target.target) and ctx.dotted(target.target).startswith("self."):
                out.add(ctx.dotted(target.target))
    return out


def _device_globals(ctx) -> frozenset[str]:
    """Names the module's top level assigns a tensor on the device (Tensors.on_device)."""
    cached = ctx.__dict__.get("_device_globals")
    if cached is None:
        names = set()
        for stmt in ctx.module.body:
            for node in (stmt.body if isinstance(stmt, cst.SimpleStatementLine) else ()):
                if isinstance(node, cst.Assign) and ctx.tensors.on_device(node.value):
                    names |= {t.target.value for t in node.targets if isinstance(t.target, cst.Name)}
        cached = ctx.__dict__["_device_globals"] = frozenset(names)
    return cached


def sample_work(ctx, cls: cst.ClassDef, fn: cst.FunctionDef, wanted, skip=None, depth: int = 2, seen=(),
                functions: bool = False):
    """(the call to report, what it does, the method doing it) for the first heavy_work call of
    fn, or of a method of cls it calls (`self.load_image(i)`, up to `depth` calls down), whose kind
    `wanted(kind)` accepts; None if there is none. The call reported is fn's own: the line a
    suppression or a reader looks at. `skip(call, fn)` leaves out a call of fn (work done only
    when a cache misses), and what it calls. With functions, the module's functions it calls
    (`to_dev(x)`) are followed too."""
    work = [(c, k) for c, k in heavy_work(ctx, fn.body, masks=False)
            if wanted(k) and not (skip and skip(c, fn))]
    if work:
        return work[0][0], work[0][1], fn
    if depth == 0:
        return None
    for call in ctx.index.walk(fn.body):
        func = call.func if isinstance(call, cst.Call) else None
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self":
            method = method_of(ctx, cls, func.attr.value)
            callees = [method] if method is not None else []
        elif functions and isinstance(func, cst.Name):
            callees = [c for c in ctx.loops.callees(call) if ctx.index.enclosing_class(c) is None]
        else:
            continue
        if skip and skip(call, fn):
            continue
        for callee in callees:
            if callee is fn or callee in seen:
                continue
            found = sample_work(ctx, cls, callee, wanted, skip, depth - 1, (*seen, fn), functions)
            if found is not None:
                return call, found[1], found[2]
    return None


_ITERABLE_DATASETS = ("torch.utils.data.IterableDataset", "torch.utils.data.dataset.IterableDataset")


def trains_unguarded(ctx) -> bool:
    """The script trains when imported: a hot loop at its top level, or a top-level call of a
    module-local function that runs one (itself or through the module's functions it calls),
    outside an `if __name__ == "__main__":` guard. A DataLoader worker started by spawn or forkserver (the
    default on macOS and Windows, and on Linux from Python 3.14) imports the main module again, so
    adding workers to such a script makes each worker start the training (and fail)."""
    cached = ctx.__dict__.get("_trains_unguarded")
    if cached is None:
        cached = ctx.__dict__["_trains_unguarded"] = _trains_unguarded(ctx)
    return cached


def _trains_unguarded(ctx) -> bool:
    body = ctx.module.body
    # A notebook's cells cannot be guarded, and a worker does not run them again (the kernel is
    # the main module).
    framework_fits = [c for c in ctx.index.nodes(cst.Call) if _framework_fit(ctx, c)]
    if ctx.path.endswith(".ipynb") or not (ctx.loops.hot_loops or framework_fits):
        return False
    loops = ctx.loops
    training = {fn.name.value for loop in loops.hot_loops if (fn := ctx.index.enclosing_function(loop)) is not None}
    training |= {fn.name.value for c in framework_fits if (fn := ctx.index.enclosing_function(c)) is not None}
    for _ in range(3):  # what calls a function that trains trains (`main()` -> `train()`)
        training |= {name for name, defs in loops.functions.items() for fn in defs
                     if any(isinstance(n, cst.Call) and loops.local_callee_name(n) in training
                            for n in ctx.index.walk(fn.body))}
    # A command-line app a training function is registered with by a decorator
    # (`@app.command()` of Typer): calling the app runs it.
    apps = {root for name in training for fn in loops.functions.get(name, ())
            for decorator in fn.decorators if (root := _root_name(decorator.decorator))}
    for stmt in body:
        if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)) or (
                isinstance(stmt, cst.If) and "__main__" in ctx.code(stmt.test)):
            continue  # definitions, and what runs only when the script is the main program
        for node in ctx.index.walk(stmt):
            if node in loops.hot_loops or node in framework_fits:
                return True
            # Called, or handed to what calls it: `fire.Fire(main)`, `partial(main)()`,
            # `Thread(target=main).start()`.
            if isinstance(node, cst.Name) and node.value in training and is_variable(ctx.index, node) and role(ctx.index, node)[0] == "read":
                return True
            if isinstance(node, cst.Call) and ctx.dotted(node.func) in apps:
                return True
    return False


def _framework_fit(ctx, call: cst.Call) -> bool:
    """A framework's training run: `.fit(...)` / `.train()` of a Trainer (Lightning's,
    transformers' or a class named so), built in the call (`L.Trainer(...).fit(model, loader)`)
    or assigned to the name it is called on; its loaders' workers start inside it."""
    func = call.func
    if not (isinstance(func, cst.Attribute) and func.attr.value in ("fit", "train")):
        return False
    made = [func.value] if isinstance(func.value, cst.Call) else ctx.assigned_values(func.value)
    return any(isinstance(v, cst.Call) and (ctx.names.qualified(v.func) or ctx.dotted(v.func) or "").endswith("Trainer")
               for v in made)


def _root_name(expr: cst.BaseExpression) -> str | None:
    """The name an expression starts from: `app` of `app.command(name="x")`."""
    while True:
        if isinstance(expr, cst.Call):
            expr = expr.func
        elif isinstance(expr, cst.Attribute):
            expr = expr.value
        else:
            return expr.value if isinstance(expr, cst.Name) else None


def replays_per_worker(ctx, call: cst.Call) -> str | None:
    """The name of the loader's dataset class when, with workers, each worker would replay its
    whole stream: an iterable dataset of this module (deriving, through its classes here, from
    torch's IterableDataset, and from no class of another module besides torch's datasets) that
    does not split its stream between workers: its `__iter__`, and the methods of the class and
    the module's functions it calls (up to three calls down), read no worker's `id` or
    `num_workers` from `torch.utils.data.get_worker_info()` and hand the worker info to no other
    call (`_shards_by_worker`; info used only to seed an RNG, `info.seed`, splits nothing), and
    the loader sets no `worker_init_fn` (which may configure each worker's copy). None
    otherwise, also for a dataset whose class is not seen here: libraries' streaming datasets
    (Hugging Face `datasets`, webdataset) split their shards between workers themselves."""
    cls = dataset_class(ctx, call)
    if cls is None or loader_arg(ctx, call, "worker_init_fn") is not None:
        return None
    chain, pending = [], [cls]
    while pending:
        current = pending.pop()
        if current in chain:
            continue
        chain.append(current)
        for base in current.bases:
            if base.keyword is not None or base.star:
                continue
            qn = ctx.names.qualified(base.value) or ""
            local = class_named(ctx, ctx.dotted(base.value))
            if local is not None and not qn:
                pending.append(local)
            elif not (qn.startswith("torch.utils.data.") or qn in ("builtins.object", "typing.Generic")
                      or ctx.dotted(base.value) == "object"):
                return None  # a base from elsewhere may split the stream itself
    if not ctx.names.inherits(cls.name.value, lambda qn: qn in _ITERABLE_DATASETS):
        return None
    iterate = next((m for c in chain if (m := method_of(ctx, c, "__iter__")) is not None), None)
    if iterate is None:  # no `__iter__` seen: any use of the worker info in the classes counts
        if any(_asks_worker_info(ctx, c, 2, ()) for c in chain):
            return None
    elif _shards_by_worker(ctx, chain, iterate):
        return None
    return cls.name.value


def _asks_worker_info(ctx, root: cst.CSTNode, depth: int, seen: tuple) -> bool:
    """root, or a module-local function it calls (up to depth calls down), reads get_worker_info."""
    for node in ctx.index.walk(root):
        if isinstance(node, (cst.Name, cst.Attribute)) and _names_worker_info(ctx, node):
            return True
    if depth == 0:
        return False
    for node in ctx.index.walk(root):
        for fn in ctx.loops.callees(node) if isinstance(node, cst.Call) else ():
            if fn not in seen and not ctx.index.contains(root, fn) and _asks_worker_info(ctx, fn, depth - 1, (*seen, root)):
                return True
    return False


def _names_worker_info(ctx, expr: cst.BaseExpression) -> bool:
    return (ctx.dotted(expr) or "").rsplit(".", 1)[-1] == "get_worker_info"


def methods_reached(ctx, chain: list, start: list, depth: int, functions: bool = False) -> list[cst.FunctionDef]:
    """start, then the methods of the classes in chain (or their in-module bases) that they call
    through `self.` or `super()`, and (with functions) the module-local functions they call, and
    so on up to depth calls down: each once, in the order found (`__iter__`, then the
    `self._next_rollout` it calls)."""
    reached, frontier = list(start), list(start)
    for _ in range(depth):
        found = []
        for fn in frontier:
            for node in ctx.index.walk(fn):
                if not isinstance(node, cst.Call):
                    continue
                func, callees = node.func, []
                if isinstance(func, cst.Attribute) and (
                        ctx.dotted(func.value) == "self" or isinstance(func.value, cst.Call)
                        and ctx.dotted(func.value.func) == "super"):
                    callees = [m for c in chain if (m := method_of(ctx, c, func.attr.value)) is not None]
                elif functions and ctx.loops.local_callee_name(node) is not None:
                    callees = ctx.loops.callees(node)
                found += [c for c in callees if c not in reached and c not in found
                          and not any(ctx.index.contains(r, c) for r in reached)]
        reached += found
        frontier = found
    return reached


def _shards_by_worker(ctx, chain: list, iterate: cst.FunctionDef) -> bool:
    """`__iter__`, or a method of the classes in chain or a module-local function it calls (up to
    three calls down), splits the stream by worker: it reads the worker's `id` or `num_workers`
    from `get_worker_info()` (`info.id`, `worker_info.num_workers`, `get_worker_info().id`, the
    info held in a name or `self.x`), or hands the info to another call, which may split it
    (`self.rows(get_worker_info())`). The info read only for its `seed` (a per-worker RNG) splits
    nothing: every worker still yields every sample."""
    reached = methods_reached(ctx, chain, [iterate], 3, functions=True)
    holders: set = set()
    for fn in reached:
        for node in ctx.index.walk(fn):
            if isinstance(node, (cst.Assign, cst.NamedExpr, cst.AnnAssign)) and isinstance(node.value, cst.Call) \
                    and _names_worker_info(ctx, node.value.func):
                targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
                holders |= {name for t in targets if (name := ctx.dotted(t))}

    def is_info(expr) -> bool:
        return (isinstance(expr, cst.Call) and _names_worker_info(ctx, expr.func)
                or (ctx.dotted(expr) or "") in holders)

    for fn in reached:
        for node in ctx.index.walk(fn):
            if isinstance(node, cst.Attribute) and node.attr.value in ("id", "num_workers") and is_info(node.value):
                return True
            if (isinstance(node, cst.Call) and ctx.names.qualified(node.func) not in LOOKS_ONLY
                    and any(is_info(arg.value) for arg in node.args)):
                return True
    return False


def dataset_builds(ctx, call: cst.Call) -> list[cst.Call]:
    """The calls the loader's dataset may be built by: `DataLoader(Images(...))`, or each call
    assigned to the name it is given (`ds = Images(...)`; more than one when branches differ),
    both sides of a conditional (`Rollouts(q) if q else Files(paths)`) each."""
    return [value for value in dataset_values(ctx, call) if isinstance(value, cst.Call)]


def dataset_values(ctx, call: cst.Call) -> list[cst.BaseExpression]:
    """What the loader's dataset may be, as dataset_builds reads it, values other than calls kept
    (`ds = splits["train"]`): [] when it is not a name or a value written in the call. A plain
    name is read in the scope the loader reads it from (its function's assignments, else an
    enclosing function's or the module's: `dataset = Files(...)` in another function is another
    variable); an attribute (`self.dataset`), set in any method, from every assignment in the
    module."""
    first = ctx.positional(call, 0) or ctx.keyword(call, "dataset")
    if first is None or first.star:
        return []
    if isinstance(first.value, (cst.Call, cst.IfExp)):
        return conditional_values(first.value)
    if isinstance(first.value, cst.Name):
        assigned = ctx.bindings.assigned_values(first.value)
        if assigned is not None:  # None: declared global or nonlocal somewhere, set from anywhere
            return [branch for value in assigned for branch in conditional_values(value)]
    name = ctx.dotted(first.value)
    return [branch for a in ctx.index.nodes(cst.Assign) if any(ctx.dotted(t.target) == name for t in a.targets)
            for branch in conditional_values(a.value)] if name else []


def dataset_class(ctx, call: cst.Call) -> cst.ClassDef | None:
    """The class of this module the loader's dataset is built from, when only one call builds it."""
    built = dataset_builds(ctx, call)
    return built_class(ctx, built[0]) if len(built) == 1 else None


def built_class(ctx, build: cst.Call) -> cst.ClassDef | None:
    """The class of this module that build constructs (`Images(root)`), if it names one."""
    return class_named(ctx, ctx.dotted(build.func))


def class_named(ctx, name: str | None) -> cst.ClassDef | None:
    """The (first) class of this module called name."""
    return next((c for c in ctx.index.nodes(cst.ClassDef) if c.name.value == name), None)


def method_of(ctx, cls: cst.ClassDef, name: str) -> cst.FunctionDef | None:
    """The method `name` of cls, or of a base class defined in this module (Loops.method_of)."""
    return ctx.loops.method_of(cls, name)


def callable_choices(ctx, expr: cst.BaseExpression) -> list[cst.CSTNode]:
    """The module's functions (as resolve_callable finds them) that expr may name: both
    branches of a conditional (`collate_to_gpu if use_cuda else None`), else expr's own."""
    return [found for choice in conditional_values(expr) if (found := resolve_callable(ctx, choice)) is not None]


def resolve_callable(ctx, expr: cst.BaseExpression) -> cst.CSTNode | None:
    """A function, lambda or class (its __call__) defined in this module that expr names."""
    if isinstance(expr, cst.Lambda):
        return expr
    if isinstance(expr, cst.Call) and ctx.names.qualified(expr.func) == "functools.partial" and expr.args \
            and expr.args[0].keyword is None and not expr.args[0].star:
        return resolve_callable(ctx, expr.args[0].value)  # `partial(collate, tokenizer=tok)` runs collate
    if isinstance(expr, cst.Call):  # Collator(tokenizer) -> the class's __call__
        expr = expr.func
    if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value in ("self", "cls"):
        # `self.collate` in a method: its class's own (or an in-module base's), not the first
        # function of that name in the file (two analyzer classes each with a `run_shard`).
        cls = ctx.index.enclosing_class(expr)
        method = method_of(ctx, cls, expr.attr.value) if cls is not None else None
        if method is not None:
            return method
    name = ctx.dotted(expr)
    if name is None:
        return None
    last = name.rsplit(".", 1)[-1]
    for fn in ctx.loops.functions.get(last, ()):
        return fn
    for cls in ctx.index.nodes(cst.ClassDef):
        if cls.name.value == last:
            for stmt in ctx.index.walk(cls):
                if isinstance(stmt, cst.FunctionDef) and stmt.name.value == "__call__":
                    return stmt
    return None


# -- what a loader's batches are made of -----------------------------------------------------------

_DEFAULT_COLLATES = frozenset({"torch.utils.data.default_collate", "torch.utils.data.dataloader.default_collate",
                               "torch.utils.data._utils.collate.default_collate"})
# Tensor-making torch functions that Tensors.is_tensor does not count (it reads `torch.nn.*` as modules).
_TENSOR_FUNCTIONS = frozenset({"torch.nn.utils.rnn.pad_sequence"})


def copy_takes_non_blocking(ctx, call: cst.Call) -> bool | None:
    """Whether `non_blocking=` may be passed to the device copy call, a copy of the batches of
    this file's loaders (`batch_moves` with pieces): True when what it copies is a tensor (or an
    object of a class of this module whose `to`/`cuda` takes `non_blocking` or `**kwargs`) on
    every loop of every loader of this file that reaches it; False when it is, on one of them, an
    object of a class of this module whose method does not take it (`def to(self, device)`); None
    when not known: the batch of a collate_fn this file does not show, or a batch object that is
    not a tensor (a transformers BatchEncoding, whose `to` takes `non_blocking` only from 4.48).

    What a loader yields is known from its collate_fn (`_collated`): default collation makes
    tensors of what the dataset gives (dicts, lists and tuples of them); a module-local collate_fn
    is read at its returns. The batch itself (`whole_batch_moves`) and the parts taken out of it
    are judged apart: a transformers data collator's batch is a BatchEncoding or dict whose values
    are tensors."""
    table = ctx.__dict__.get("_copy_takes_non_blocking")
    if table is None:
        table = {}
        for loader in loader_calls(ctx):
            whole, parts = _collated(ctx, loader)
            for loop, target in loader_batches(ctx, loader, shared=True):
                wholes = whole_batch_moves(ctx, loop, target)
                for move in batch_moves(ctx, loop, pieces=True, target=target):
                    kind = whole if move in wholes else parts
                    if isinstance(kind, cst.ClassDef):
                        kind = _method_takes_non_blocking(ctx, kind, move)
                    table[move] = _weakest(table.get(move, True), kind)
        ctx.__dict__["_copy_takes_non_blocking"] = table
    takes = table.get(call)
    if takes is None and call in table and _guarded_as_tensor(ctx, call):
        return True  # `v.to(device) if torch.is_tensor(v) else v`: only a tensor is copied
    return takes


def _guarded_as_tensor(ctx, call: cst.Call) -> bool:
    """The copy runs only when what it copies is a tensor: it is in the true branch of a
    conditional expression or `if` testing `torch.is_tensor(v)` or `isinstance(v, torch.Tensor)`
    of the name it copies."""
    copied = ctx.dotted(call.func.value) if isinstance(call.func, cst.Attribute) else None
    if copied is None:
        return False

    def tests_tensor(test) -> bool:
        if not isinstance(test, cst.Call) or not test.args or ctx.dotted(test.args[0].value) != copied:
            return False
        qn = ctx.names.qualified(test.func) or ""
        if qn == "torch.is_tensor":
            return True
        return qn == "builtins.isinstance" and len(test.args) == 2 and \
            ctx.names.qualified(test.args[1].value) == "torch.Tensor"

    child = call
    for anc in ctx.index.ancestors(call):
        if isinstance(anc, cst.IfExp) and child is anc.body and tests_tensor(anc.test):
            return True
        if isinstance(anc, cst.If) and child is anc.body and tests_tensor(anc.test):
            return True
        if isinstance(anc, (cst.FunctionDef, cst.Lambda)):
            return False
        child = anc
    return False


def _weakest(a: bool | None, b: bool | None) -> bool | None:
    if a is False or b is False:
        return False
    return None if a is None or b is None else True


def _method_takes_non_blocking(ctx, cls: cst.ClassDef, call: cst.Call) -> bool | None:
    """The method of cls that call calls (`to`, `cuda`) takes `non_blocking` or `**kwargs`; None
    when cls has no such method here (one it inherits from a class of another module)."""
    method = method_of(ctx, cls, call.func.attr.value) if isinstance(call.func, cst.Attribute) else None
    if method is None:
        return None
    return isinstance(method.params.star_kwarg, cst.Param) or parameter(method, "non_blocking") is not None


def _collated(ctx, loader: cst.Call):
    """(whole, parts): what the loader's batch is, and what the parts taken out of it are. Each
    is True (tensors, or plain Python values that have no `to`), None (not known), or a ClassDef
    of this module (an object of that class: `_method_takes_non_blocking` judges its copy)."""
    cache = ctx.__dict__.setdefault("_collated", {})
    if loader not in cache:
        cache[loader] = _find_collated(ctx, loader)
    return cache[loader]


def _find_collated(ctx, loader: cst.Call):
    batch_size = loader_arg(ctx, loader, "batch_size")
    sizes = star_values(ctx, loader, "batch_size") if batch_size is not None and batch_size.star else \
        [batch_size.value] if batch_size is not None else []
    if batch_size is not None and (not sizes or any(v is None or ctx.literal(v) is None for v in sizes)):
        return None, None  # `batch_size=None`: the dataset's samples pass through as they are
    arg = collate_arg(ctx, loader)
    if arg is None:
        return True, True
    if arg.star:
        return None, None
    qualified = ctx.names.qualified(arg.value) or ""
    if qualified in _DEFAULT_COLLATES:
        return True, True
    made = ctx.assigned_values(arg.value) if isinstance(arg.value, cst.Name) else []
    made = made[0] if len(made) == 1 else arg.value  # `collator = DataCollatorWithPadding(tokenizer)`
    if isinstance(made, cst.Call):
        qualified = ctx.names.qualified(made.func) or qualified
    if qualified.startswith("transformers.") and "collator" in qualified.lower():
        return None, True  # a transformers data collator's batch: a BatchEncoding (or dict) of tensors
    collate = resolve_callable(ctx, arg.value)
    if collate is None:
        return None, None
    whole, parts = True, True
    for value in collate_returns(ctx, collate):
        w, p = _returned(ctx, value, 0)
        whole, parts = _join(whole, w), _join(parts, p)
    return whole, parts


def _join(a, b):
    """Both kinds at once (two returns of a collate_fn): the same class, or the weakest."""
    if a is b:
        return a
    if isinstance(a, cst.ClassDef) or isinstance(b, cst.ClassDef):
        return None if a is not True and b is not True else (a if b is True else b)
    return _weakest(a, b)


def collate_returns(ctx, collate: cst.CSTNode) -> list[cst.BaseExpression]:
    """What a collate_fn (a function, lambda or `__call__`) returns: its return values, not those
    of functions defined inside it; a bare `return` gives None."""
    if isinstance(collate, cst.Lambda):
        return [collate.body]
    return [node.value if node.value is not None else cst.Name("None") for node in ctx.index.returns(collate)]


def returned_parts(ctx, value: cst.BaseExpression, depth: int = 0) -> list[cst.BaseExpression] | None:
    """The parts of a container a collate_fn returns, when it writes them out: the elements of a
    tuple or list display, the values of a dict display or `dict(k=...)` (and of `batch[k] = v`
    later in the function, for a name assigned one); None for anything else."""
    if isinstance(value, (cst.Tuple, cst.List)):
        if any(isinstance(e, cst.StarredElement) for e in value.elements):
            return None
        return [e.value for e in value.elements]
    if isinstance(value, cst.Dict):
        if any(isinstance(e, cst.StarredDictElement) for e in value.elements):
            return None
        return [e.value for e in value.elements]
    if isinstance(value, cst.Call) and ctx.names.qualified(value.func) == "builtins.dict" and all(
            a.keyword is not None for a in value.args):
        return [a.value for a in value.args]
    if isinstance(value, cst.Name) and depth < 2:
        assigned = ctx.assigned_values(value)
        if len(assigned) != 1:
            return None
        parts = returned_parts(ctx, assigned[0], depth + 1)
        if parts is None:
            return None
        scope = ctx.index.enclosing_function(value)
        return parts + [a.value for a in ctx.index.nodes(cst.Assign) if ctx.index.enclosing_function(a) is scope
                        for t in a.targets if isinstance(t.target, cst.Subscript)
                        and ctx.dotted(t.target.value) == value.value]
    return None


def collate_leaves_on_host(ctx, collate: cst.CSTNode) -> bool:
    """Some of what the collate_fn returns is not known to be moved to the device by it: a part
    of a tuple, list or dict it returns (`lengths` of `return pad_sequence(xs).to(device),
    lengths`, which `pack_padded_sequence` needs on the CPU), or the value it returns, is not a
    device copy, what a method, an index or a torch function makes of one, or a string or number.
    Moving the whole batch where it arrives would move that too."""
    for value in collate_returns(ctx, collate):
        parts = returned_parts(ctx, value)
        for part in parts if parts is not None else [value]:
            if not (_moved(ctx, part, 0) or isinstance(part, (cst.SimpleString, cst.ConcatenatedString,
                                                              cst.FormattedString, cst.Integer, cst.Float))):
                return True
    return False


def _moved(ctx, expr: cst.BaseExpression, depth: int) -> bool:
    """expr, in a collate_fn, is on the device: a device copy, what a method or an index makes of
    one (`x.to(device).long()`), a torch function of one (`pad_sequence([s.to(device) for s in
    samples])`), a comprehension or display of such, `tuple(...)`/`list(...)` of one, or a name
    last assigned one."""
    if depth > 4:
        return False
    if isinstance(expr, cst.Call):
        if is_device_move(ctx, expr) or is_device_helper(ctx, expr):
            return True
        qualified = ctx.names.qualified(expr.func) or ""
        if qualified in ("builtins.tuple", "builtins.list") and len(expr.args) == 1:
            return _moved(ctx, expr.args[0].value, depth + 1)
        if qualified.startswith("torch."):
            return any(not a.star and _moved(ctx, a.value, depth + 1) for a in expr.args)
        return isinstance(expr.func, cst.Attribute) and _moved(ctx, expr.func.value, depth + 1)
    if isinstance(expr, cst.Subscript):
        return _moved(ctx, expr.value, depth + 1)
    if isinstance(expr, (cst.ListComp, cst.GeneratorExp, cst.SetComp)):
        return _moved(ctx, expr.elt, depth + 1)
    if isinstance(expr, cst.DictComp):
        return _moved(ctx, expr.value, depth + 1)
    if isinstance(expr, (cst.List, cst.Tuple)):
        return bool(expr.elements) and all(not isinstance(e, cst.StarredElement) and _moved(ctx, e.value, depth + 1)
                                           for e in expr.elements)
    if isinstance(expr, cst.Name):
        assigned = ctx.assigned_values(expr)
        return bool(assigned) and _moved(ctx, assigned[-1], depth + 1)
    return False


def _returned(ctx, value: cst.BaseExpression, depth: int):
    """(whole, parts) for a value a collate_fn returns."""
    parts = returned_parts(ctx, value)
    if parts is not None:
        # A plain tuple, list or dict: its own `to` does not exist; each part must be known.
        kind = True
        for part in parts:
            kind = _join(kind, _part_kind(ctx, part, depth))
        return True, kind
    if _tensor_value(ctx, value):
        return True, True
    if isinstance(value, cst.Call):
        qualified = ctx.names.qualified(value.func) or ""
        if qualified in _DEFAULT_COLLATES:
            return True, True
        name = ctx.dotted(value.func)
        cls = class_named(ctx, name)
        if cls is not None:
            return cls, None
    if isinstance(value, cst.Name) and depth < 2:
        assigned = ctx.assigned_values(value)
        if assigned:
            kinds = [_returned(ctx, v, depth + 1) for v in assigned]
            whole, parts = kinds[0]
            for w, p in kinds[1:]:
                whole, parts = _join(whole, w), _join(parts, p)
            return whole, parts
    return None, None


def _part_kind(ctx, part: cst.BaseExpression, depth: int):
    """What a part of a returned container is: True for a tensor or a plain Python value (a
    literal, a display or comprehension: a list of strings has no `to`), else as `_returned`
    judges a whole value."""
    if isinstance(part, (cst.SimpleString, cst.FormattedString, cst.ConcatenatedString, cst.Integer, cst.Float,
                         cst.ListComp, cst.SetComp, cst.DictComp, cst.List, cst.Set, cst.Dict)):
        return True
    whole, _parts = _returned(ctx, part, depth + 1)
    return whole if depth < 3 else None


def _tensor_value(ctx, value: cst.BaseExpression) -> bool:
    """value, in a collate_fn, is a tensor: a torch call (Tensors.is_tensor), `pad_sequence(...)`,
    or a device copy of one of those."""
    while isinstance(value, cst.Call) and is_device_move(ctx, value):
        value = value.func.value
    if isinstance(value, cst.Call) and (ctx.names.qualified(value.func) or "") in _TENSOR_FUNCTIONS:
        return True
    return isinstance(value, cst.Call) and ctx.tensors.is_tensor(value)


# -- work a collate_fn or dataset does per sample ----------------------------------------------

# Tokenizing calls by their method's name, whatever the tokenizer is called: Hugging Face's
# (`encode_plus`, `batch_encode_plus`), tiktoken's (`encode_ordinary`, `encode_batch`),
# SentencePiece's (`EncodeAsIds`, `encode_as_pieces`).
_TOKENIZE = re.compile(r"(tokeniz|encode_plus|batch_encode|^encode$|^encode_ordinary|^encode_batch$|^encode_?as_?(ids|pieces)$|"
                       r"^pad$|pad_sequence|apply_chat_template)", re.IGNORECASE)
# Keywords only a Hugging Face tokenizer's call takes (`self.tok(text, truncation=True, max_length=512)`).
_TOKENIZER_KEYWORDS = frozenset({"truncation", "add_special_tokens", "is_split_into_words", "return_offsets_mapping",
                                 "return_special_tokens_mask"})
# What builds a tokenizer, by qualified name: tiktoken's encodings, SentencePiece's processor, and
# any `...Tokenizer...` class or its `from_pretrained` (`AutoTokenizer.from_pretrained(...)`).
_TOKENIZER_MAKERS = re.compile(r"(^tiktoken\.(get_encoding|encoding_for_model)$|SentencePieceProcessor|Tokeniz)")
_DECODE = re.compile(r"(^Image\.open$|\.open$|imread|imdecode|decode_image|decode_jpeg|read_image|^load$|librosa\.load|"
                     r"torchaudio\.load|soundfile\.read|^sf\.read$|decord|VideoReader)")
# Audio feature extraction (log-mel, fbank, MFCC): like tokenizing, the same for a clip every epoch.
# A spectrogram per clip (`torch.stft`, `wave.stft(...)`) and torchaudio's feature transforms
# (built once, `self.melspec = MelSpectrogram(...)`, and called per sample) count too.
_FEATURES = re.compile(r"(^librosa\.feature\.|^torchaudio\.compliance\.kaldi\.(fbank|mfcc|spectrogram)$|"
                       r"(^|\.)log_mel_spectrogram$|feature_extractor|(^|\.)stft$|"
                       r"^torchaudio\.transforms\.(Spectrogram|MelSpectrogram|MFCC|LFCC|MelScale)$)", re.IGNORECASE)
_MASK = re.compile(r"(mask)", re.IGNORECASE)
_AUDIO = re.compile(r"(torchaudio|librosa|soundfile|^sf\.|audio|wav)", re.IGNORECASE)
# Opening a file reads bytes; it decodes no image or audio (fairseq's FastaDataset keeps one handle).
_FILE_OPENERS = frozenset({"builtins.open", "io.open", "os.open", "codecs.open", "gzip.open", "bz2.open", "lzma.open"})


def _call_name(ctx, call: cst.Call) -> str:
    return ctx.names.qualified(call.func) or ctx.dotted(call.func) or ""


def _made_by(ctx, func: cst.BaseExpression) -> list[str]:
    """The qualified names of the calls that built the object a call calls, where it is a name
    or `self.x` assigned one (`self.melspec = torchaudio.transforms.MelSpectrogram(...)`)."""
    if not isinstance(func, (cst.Name, cst.Attribute)):
        return []
    values = ctx.assigned_values(func) or ctx.assigned_values(func, anywhere=True)
    return [ctx.names.qualified(v.func) or "" for v in values if isinstance(v, cst.Call)]


# heavy_work's kinds for padding: of token ids (a tokenizer's `pad`, integer ids), or of sequences
# it cannot tell are ids (float features: spectrograms, MFCC frames padded with `F.pad`).
PADS_TOKENS = "pads token sequences"
PADS = "pads sequences"
# heavy_work's kind for a copy to a device (`.to(device)`, `.cuda()`).
MOVES_TENSORS = "moves tensors to a device"
# Names that say a value holds token ids (`input_ids`, `tokens`, `pad_id`, `pad_token_id`).
_TOKEN_NAMES = re.compile(r"(^|_)(ids?|tokens?|toks?)$|input_ids|token_ids|pad_id|pad_token|padding_idx", re.IGNORECASE)
_INTEGER_DTYPES = frozenset({"torch.long", "torch.int64", "torch.int32", "torch.int", "torch.int16", "torch.uint8"})


def _pads_token_ids(ctx, call: cst.Call, name: str) -> bool:
    """A padding call pads token ids: it is a tokenizer's (`tokenizer.pad(...)`), or its
    arguments show integer ids (a name like `input_ids` or `pad_token_id`, an integer dtype,
    `.long()`). Else it may pad float features (`F.pad` of a spectrogram, `pad_sequence` of MFCC
    frames), where token advice would mislead."""
    if "tokenizer" in name.lower():
        return True
    for arg in call.args:
        for node in ctx.index.walk(arg.value):
            spelled = ctx.dotted(node) if isinstance(node, (cst.Name, cst.Attribute)) else None
            if spelled is None:
                continue
            if _TOKEN_NAMES.search(spelled.rsplit(".", 1)[-1]) \
                    or (ctx.names.qualified(node) or spelled) in _INTEGER_DTYPES \
                    or isinstance(node, cst.Attribute) and node.attr.value in ("long", "int"):
                return True
    return False


def _calls_tokenizer(ctx, call: cst.Call) -> bool:
    """call tokenizes through a tokenizer not named `tokenizer`: it passes a keyword only a Hugging
    Face tokenizer takes (`self.tok(text, truncation=True)`), or it calls an object (or a method of
    one, not `decode`) that a tokenizer factory built (`self.enc = tiktoken.get_encoding("gpt2")`,
    `tok = AutoTokenizer.from_pretrained(...)`). Before, only the name `tokenizer` was recognised;
    a module such as `self.encoder(x)` is neither."""
    if any(arg.keyword is not None and arg.keyword.value in _TOKENIZER_KEYWORDS for arg in call.args):
        return True
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value.lower().startswith("decode"):
        return False
    held = func.value if isinstance(func, cst.Attribute) and not _made_by(ctx, func) else func
    return any(_TOKENIZER_MAKERS.search(made) for made in _made_by(ctx, held)) \
        or any(_handed(ctx, e, _TOKENIZER_MAKERS) for e in {func, held}) or _processor_text(ctx, call)


# What builds a Hugging Face processor (`AutoProcessor.from_pretrained(...)`, `CLIPProcessor(...)`).
_PROCESSOR_MAKERS = re.compile(r"Processor(\.from_pretrained)?$")


def _processor_text(ctx, call: cst.Call) -> bool:
    """call hands text to a Hugging Face processor (`self.processor(text=t, images=img)`): the
    object is named a processor or built by one's class, and `text=` is what its tokenizer gets.
    A processor given only images or audio tokenizes nothing (audio: heavy_work's features)."""
    if ctx.keyword(call, "text") is None or not isinstance(call.func, (cst.Name, cst.Attribute)):
        return False
    spelled = ctx.dotted(call.func) or ""
    return "processor" in spelled.rsplit(".", 1)[-1].lower() \
        or any(_PROCESSOR_MAKERS.search(made) for made in _made_by(ctx, call.func)) \
        or _handed(ctx, call.func, _PROCESSOR_MAKERS)


def _handed(ctx, held: cst.BaseExpression, makers: re.Pattern) -> bool:
    """held is `self.tok`, which the class's `__init__` sets from a parameter only
    (`def __init__(self, texts, tok): self.tok = tok`), and every construction of the class in
    the file hands that parameter an object one of makers built (a tokenizer: `DS(texts, AutoTokenizer.
    from_pretrained(...))`, `tok = tiktoken.get_encoding("gpt2"); DS(texts, tok)`). A plain
    `self.tok(t)` was missed unless given a keyword only Hugging Face's tokenizer takes. Not when
    any construction is unseen (no construction, `*args`, the parameter left to its default, the
    class handed on or subclassed): `self.transform(x)` may hold anything."""
    if not (isinstance(held, cst.Attribute) and isinstance(held.value, cst.Name) and held.value.value == "self"):
        return False
    cls = ctx.index.enclosing_class(held)
    if cls is None:
        return False
    values = [v for v in ctx.assigned_values(held, anywhere=True) if ctx.index.enclosing_class(v) is cls]
    inits = {ctx.index.enclosing_function(v) for v in values}
    if not values or len(inits) != 1:
        return False
    init = inits.pop()
    if init is None or init.name.value != "__init__" or ctx.index.enclosing_class(init) is not cls:
        return False
    names = {v.value for v in values if isinstance(v, cst.Name)}
    if len(names) != 1 or len(names) != len(values) or not ctx.loops.is_plain_parameter(init, next(iter(names))):
        return False
    param = names.pop()
    constructions = _constructions(ctx, cls)
    return bool(constructions) and all(_made_by_maker(ctx, arg, makers) for arg in
                                       (_bound_argument(init, call, param) for call in constructions))


def _constructions(ctx, cls: cst.ClassDef) -> list[cst.Call]:
    """The calls `Cls(...)` of the file that construct cls; [] where its name is read otherwise
    (a subclass, handed on as a factory): some constructions are then not seen."""
    calls = []
    for node in ctx.index.nodes(cst.Name):
        if node.value != cls.name.value or node is cls.name:
            continue
        parent = ctx.parent(node)
        if not (isinstance(parent, cst.Call) and parent.func is node):
            return []
        calls.append(parent)
    return calls


def _bound_argument(init: cst.FunctionDef, call: cst.Call, param: str) -> cst.BaseExpression | None:
    """The argument `Cls(...)` hands `__init__`'s parameter param; None where it passes `*args`
    or `**kwargs` or leaves it to its default."""
    if any(arg.star for arg in call.args):
        return None
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == param:
            return arg.value
    params = [p.name.value for p in init.params.params][1:]  # less `self`
    positional = [arg.value for arg in call.args if arg.keyword is None]
    index = params.index(param) if param in params else len(positional)
    return positional[index] if index < len(positional) else None


def _made_by_maker(ctx, expr: cst.BaseExpression | None, makers: re.Pattern) -> bool:
    """expr is an object one of makers builds (a tokenizer: `AutoTokenizer.from_pretrained(...)`),
    itself or through a name assigned one."""
    if isinstance(expr, cst.Call):
        return bool(makers.search(_call_name(ctx, expr)))
    return expr is not None and any(makers.search(made) for made in _made_by(ctx, expr))


def heavy_work(ctx, root: cst.CSTNode, *, masks: bool) -> list[tuple[cst.Call, str]]:
    """Calls under root that tokenize, pad, mask, decode media or move tensors to a device."""
    out = []
    for node in ctx.index.walk(root):
        if not isinstance(node, cst.Call):
            continue
        name = _call_name(ctx, node)
        last = name.rsplit(".", 1)[-1]
        receiver = name.rsplit(".", 1)[0] if "." in name else ""
        if _TOKENIZE.search(last) or ("tokenizer" in receiver.lower() and last not in ("decode",)) \
                or (last in ("__call__",) and "tokenizer" in name.lower()) or name.lower().endswith("tokenizer") \
                or _calls_tokenizer(ctx, node):
            # Padding ids already tokenized (`pad_sequence`, a tokenizer's `pad`) is not tokenizing.
            padding = last in ("pad", "pad_sequence") or last.startswith("pad_")
            if not padding:
                out.append((node, "tokenizes text"))
            else:
                out.append((node, PADS_TOKENS if _pads_token_ids(ctx, node, name) else PADS))
        elif _FEATURES.search(name) or any(_FEATURES.search(made) for made in _made_by(ctx, node.func)) \
                or "processor" in name.lower() and ctx.keyword(node, "sampling_rate"):
            out.append((node, "extracts audio features"))  # a transformers processor given audio
        elif last in ("open", "imread", "imdecode", "decode_image", "decode_jpeg", "read_image", "read") and \
                _DECODE.search(name) and name not in _FILE_OPENERS or name in ("PIL.Image.open", "torchvision.io.read_image", "torchaudio.load",
                                                  "librosa.load", "cv2.imread", "soundfile.read"):
            audio = _AUDIO.search(name) is not None
            out.append((node, "decodes audio" if audio else "decodes images"))
        elif masks and _MASK.search(last) and last not in ("masked_fill",):
            out.append((node, "builds masks"))
        elif is_device_move(ctx, node):
            out.append((node, MOVES_TENSORS))
    return out


# -- loops whose batches arrive on the host -----------------------------------------------------

# A loop over a name like these takes a loader's batches (`for x, y in train_loader`, `for batch in
# tqdm(dataloader)`, `enumerate(data_iter)`), even when the file does not build the loader.
_LOADER_NAMES = re.compile(r"(loader|dataloader|batches|data_iter)", re.IGNORECASE)
# Methods that hand back a loader a framework prepared, whose batches it moves to the device itself:
# accelerate's `prepare`/`prepare_data_loader`, Lightning Fabric's `setup_dataloaders`.
_PREPARES = frozenset({"prepare", "prepare_data_loader", "setup_dataloaders"})


def strip_iteration(expr: cst.BaseExpression) -> cst.BaseExpression:
    """What a loop's iterable iterates under `enumerate(...)`, `tqdm(...)` and `iter(...)`."""
    while isinstance(expr, cst.Call) and expr.args and dotted(expr.func) in ("enumerate", "tqdm", "tqdm.tqdm", "iter"):
        expr = expr.args[0].value
    return expr


def over_loader_name(loop: cst.For) -> bool:
    """The loop goes over a name that reads as a loader's (`loader`, `train_dataloader`, `batches`),
    directly or under enumerate/tqdm/iter."""
    return bool(_LOADER_NAMES.search(dotted(strip_iteration(loop.iter)) or ""))


def host_batch_loops(ctx) -> frozenset[cst.For]:
    """The `for` loops whose batches arrive on the host, so that a tensor of the batch (`batch["ids"]`,
    `y` of `for x, y in loader`) is in host memory until the loop moves it. Conservatively, all of:
    the loop takes a loader's batches into its target (a DataLoader of this file, `loader_batches`,
    or a name that reads as a loader's); it copies some of the batch's own tensors to the device
    itself (`batch_moves` with pieces: the script expects them on the CPU); no loader of this file
    that feeds it makes its batches on the device (`batches_made_on_device`: collate_fn, dataset)
    or is prepared by an accelerate Accelerator that places them; and what it iterates is not a
    framework's prepared loader (`dl = accelerator.prepare(dl)`, `fabric.setup_dataloaders(dl)`),
    which moves the batches itself. Once per file."""
    cached = ctx.__dict__.get("_host_batch_loops")
    if cached is not None:
        return cached
    fed: dict[cst.CSTNode, bool] = {}  # loop -> some loader of this file feeding it makes device batches
    for call in loader_calls(ctx):
        on_device = batches_made_on_device(ctx, call) or any(
            places_batches(ctx, accelerator) for accelerator in accelerate_trains_on(ctx, call))
        for loop, target in loader_batches(ctx, call, shared=True):
            # A loop drawing with `batch = next(it)` has a step counter as its target: not a batch.
            fed[loop] = fed.get(loop, False) or on_device or target is not loop.target
    cached = frozenset(loop for loop in ctx.index.nodes(cst.For)
                       if (loop in fed or over_loader_name(loop)) and not fed.get(loop, False)
                       and not _framework_prepared(ctx, loop.iter) and batch_moves(ctx, loop, pieces=True))
    ctx.__dict__["_host_batch_loops"] = cached
    return cached


def _framework_prepared(ctx, iterable: cst.BaseExpression) -> bool:
    """The loop iterates what a framework's prepare call returns (`accelerator.prepare(dl)`), or a
    name some assignment of the file binds from one (`model, opt, dl = accelerator.prepare(...)`)."""
    source = strip_iteration(iterable)
    if isinstance(source, cst.Call):
        return isinstance(source.func, cst.Attribute) and source.func.attr.value in _PREPARES
    name = ctx.dotted(source)
    return name is not None and any(
        isinstance(assign.value, cst.Call) and isinstance(assign.value.func, cst.Attribute)
        and assign.value.func.attr.value in _PREPARES and name in bound_names(assign)
        for assign in ctx.index.nodes(cst.Assign))
