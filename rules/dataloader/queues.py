"""Datasets fed by a queue (TL101): an IterableDataset that takes its items from a queue another
thread or process fills, as an RL trainer's rollouts or a streaming reader's producer processes
do. Its loading is the producer's and already runs beside training, so worker processes have
nothing to overlap; worse, each worker would get its own copy of the queue, which nothing fills
(a forked worker blocks on `get()` for ever, a spawned one cannot pickle a `queue.Queue`)."""

from __future__ import annotations

import libcst as cst

from trainlint.analysis.batches import built_class, dataset_values, method_of, methods_reached
from trainlint.analysis.tree import assigned_pairs, assignments, parameter_annotation

# Queue classes of the standard library and of torch.multiprocessing (which re-exports them).
_QUEUES = frozenset(
    f"{module}.{cls}"
    for module in ("queue", "multiprocessing", "multiprocessing.queues", "torch.multiprocessing")
    for cls in ("Queue", "SimpleQueue", "JoinableQueue", "LifoQueue", "PriorityQueue")
)
# What `get(timeout=...)` / `get_nowait()` of those queues raises when no item came.
_EMPTY = frozenset({"queue.Empty", "_queue.Empty", "multiprocessing.queues.Empty"})
_TAKES = frozenset({"get", "get_nowait"})
# The methods a loader takes items through.
_ITEM_METHODS = ("__iter__", "__getitem__")

FED, WRAPS, EMPTY = "fed", "wraps", "empty"


def queue_fed_builds(ctx, call: cst.Call) -> tuple[list[str], bool]:
    """(names of the module's dataset classes fed by a queue among the builds of the loader's
    dataset, whether every build is one of them, wraps one, or yields nothing). A build wraps one
    when it is handed one (`Batcher(Rollouts(q))`) or the loader's dataset name itself, rebound
    around its earlier value (`dataset = Batcher(dataset)`); a class whose `__iter__` returns
    `iter([])` yields nothing (a placeholder for ranks that never draw). Once per loader: TL101
    asks it, and then its workers advice again."""
    cache = ctx.__dict__.setdefault("_queue_fed_builds", {})
    if call not in cache:
        cache[call] = _queue_fed_builds(ctx, call)
    return cache[call]


def _queue_fed_builds(ctx, call: cst.Call) -> tuple[list[str], bool]:
    first = ctx.positional(call, 0) or ctx.keyword(call, "dataset")
    name = ctx.dotted(first.value) if first is not None and not first.star else None
    fed: list[str] = []
    # A value other than a class's construction (`dataset = splits["train"]`) may be anything.
    kinds = [_kind(ctx, value, name, fed, 0) if isinstance(value, cst.Call) else None
             for value in dataset_values(ctx, call)]
    return fed, bool(fed) and all(kind is not None for kind in kinds)


def _kind(ctx, build: cst.Call, name: str | None, fed: list[str], depth: int) -> str | None:
    cls = built_class(ctx, build)
    if cls is None or depth > 3:
        return None
    if _takes_from_queue(ctx, cls):
        fed.append(cls.name.value)
        return FED
    for arg in build.args:
        if arg.star:
            continue
        if isinstance(arg.value, cst.Call) and _kind(ctx, arg.value, name, fed, depth + 1) == FED:
            return FED
        if name is not None and ctx.dotted(arg.value) == name:
            return WRAPS
    return EMPTY if _yields_nothing(ctx, cls) else None


def _takes_from_queue(ctx, cls: cst.ClassDef) -> bool:
    """cls's `__iter__` or `__getitem__` (its own or a base's of this module), or a method of the
    class they call (_item_methods), takes an item with `.get()`/`.get_nowait()` from a queue: an
    attribute the class sets to a queue (constructed, or a parameter annotated as one), or any
    receiver when the call sits in a `try` that catches `queue.Empty`, which only a queue's `get`
    raises."""
    held = _queue_attributes(ctx, cls)
    for method in _item_methods(ctx, cls):
        for node in ctx.index.walk(method):
            if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
                    and node.func.attr.value in _TAKES):
                continue
            if ctx.dotted(node.func.value) in held or _awaits_empty(ctx, node, method):
                return True
    return False


# How many `self.method()` calls down from `__iter__`/`__getitem__` the queue's `get` is looked for.
_HELPER_DEPTH = 2


def _item_methods(ctx, cls: cst.ClassDef) -> list[cst.FunctionDef]:
    """cls's `__iter__` and `__getitem__`, and the methods of cls they call through `self.`
    (`yield self._next_rollout()`), up to _HELPER_DEPTH calls down (batches.methods_reached)."""
    items = [m for name in _ITEM_METHODS if (m := method_of(ctx, cls, name)) is not None]
    return methods_reached(ctx, [cls], items, _HELPER_DEPTH)


def _queue_attributes(ctx, cls: cst.ClassDef) -> set[str]:
    """`self.x` that the methods of cls and its bases here set to a queue: `self.q = queue.Queue()`,
    `self.q = q` of a parameter `q: mp.Queue`, or `self.q: queue.Queue = ...`."""
    classes = ctx.loops.lineage(cls)
    held: set[str] = set()
    for whole, value, stmt in assignments(ctx.index):
        fn = ctx.index.enclosing_function(stmt)
        if fn is None or ctx.index.enclosing_class(stmt) not in classes:
            continue
        annotated = isinstance(stmt, cst.AnnAssign) and _names_queue(ctx, stmt.annotation.annotation)
        for target, part in assigned_pairs(whole, value):
            name = ctx.dotted(target) or ""
            if name.startswith("self.") and (annotated or _is_queue(ctx, fn, part)):
                held.add(name)
    return held


def _is_queue(ctx, fn: cst.FunctionDef, value: cst.BaseExpression | None) -> bool:
    if isinstance(value, cst.Call):
        return ctx.names.qualified(value.func) in _QUEUES
    if isinstance(value, cst.Name):
        annotation = parameter_annotation(fn, value.value)
        return annotation is not None and _names_queue(ctx, annotation)
    return False


def _names_queue(ctx, annotation: cst.BaseExpression) -> bool:
    """The annotation names a queue class (`queue.Queue`, `mp.Queue | None`, `Optional[Queue]`)."""
    return any(isinstance(node, (cst.Name, cst.Attribute)) and ctx.names.qualified(node) in _QUEUES
               for node in ctx.index.walk(annotation))


def _awaits_empty(ctx, call: cst.Call, method: cst.FunctionDef) -> bool:
    """call runs in the body of a `try` (inside method) with a handler for `queue.Empty`."""
    for ancestor in ctx.index.ancestors(call):
        if ancestor is method:
            return False
        if isinstance(ancestor, cst.Try) and ctx.index.contains(ancestor.body, call) and any(
                handler.type is not None and _catches_empty(ctx, handler.type) for handler in ancestor.handlers):
            return True
    return False


def _catches_empty(ctx, caught: cst.BaseExpression) -> bool:
    if isinstance(caught, cst.Tuple):
        return any(_catches_empty(ctx, element.value) for element in caught.elements)
    return ctx.names.qualified(caught) in _EMPTY


def _yields_nothing(ctx, cls: cst.ClassDef) -> bool:
    """cls's `__iter__` is one `return iter([])` (or of `()`)."""
    method = method_of(ctx, cls, "__iter__")
    if method is None or not isinstance(method.body, cst.IndentedBlock):
        return False
    body = [s for s in method.body.body if not (isinstance(s, cst.SimpleStatementLine)
                                                 and isinstance(s.body[0], cst.Expr)
                                                 and isinstance(s.body[0].value, cst.SimpleString))]
    if len(body) != 1 or not isinstance(body[0], cst.SimpleStatementLine):
        return False
    stmt = body[0].body[0]
    value = stmt.value if isinstance(stmt, cst.Return) else None
    return (isinstance(value, cst.Call) and ctx.names.qualified(value.func) == "builtins.iter" and len(value.args) == 1
            and isinstance(value.args[0].value, (cst.List, cst.Tuple)) and not value.args[0].value.elements)
