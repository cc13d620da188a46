"""Loaders in processes the script starts itself (TL101): a function the file runs as the
`target=` of a `multiprocessing` Process, maps over a process Pool, or hands to a
`ProcessPoolExecutor`. The script has split its data over those processes already (an offline
pass computing metrics or features over shards, one process per shard), so the loader in each
goes over its share beside the others, and workers would multiply the processes again. In a Pool
they could not start at all: a pool's processes are daemonic, and a daemonic process may not have
children (the loader's first iteration fails with "daemonic processes are not allowed to have
children")."""

from __future__ import annotations

import libcst as cst

from trainlint.analysis.batches import resolve_callable
from trainlint.analysis.loops import CALL_DEPTH
from trainlint.analysis.variables import with_items

# Where the standard library (and torch.multiprocessing, which re-exports it) defines each.
_PROCESSES = frozenset(f"{module}.Process" for module in ("multiprocessing", "multiprocessing.context",
                                                          "torch.multiprocessing"))
_POOLS = frozenset(f"{module}.Pool" for module in ("multiprocessing", "multiprocessing.pool", "torch.multiprocessing"))
_CONTEXTS = frozenset(f"{module}.get_context" for module in ("multiprocessing", "torch.multiprocessing"))
# A Pool's methods that run a function in its processes; the function is their first argument.
_POOL_RUNS = frozenset({"map", "imap", "imap_unordered", "starmap", "map_async", "starmap_async", "apply",
                        "apply_async"})
# An executor's processes are not daemonic (they may start workers): they count as Processes.
_EXECUTORS = frozenset({"concurrent.futures.ProcessPoolExecutor", "concurrent.futures.process.ProcessPoolExecutor"})
_EXECUTOR_RUNS = frozenset({"map", "submit"})

POOL, PROCESS = "pool", "process"


def started_in_processes(ctx, call: cst.Call) -> str | None:
    """How the function that builds the loader (call) is run in processes the file starts: POOL
    when a process Pool runs it (`pool.map(fn, shards)`, `Pool(4).imap(...)`, a pool built from
    `get_context(...)`), whatever the module does; PROCESS when a Process runs it as its target
    (`Process(target=self.run_shard, args=(i,))`) or a ProcessPoolExecutor's `map`/`submit` runs
    it, and nothing in the module trains (no backward, no optimizer step: a process per rank that
    trains, as scripts launched before torchrun start, wants workers like any training loader);
    None otherwise."""
    fn = ctx.index.enclosing_function(call)
    kind = _runs_as(ctx, fn, 0) if fn is not None else None
    if kind == PROCESS and ctx.loops.step_calls:
        return None
    return kind


def _runs_as(ctx, fn: cst.FunctionDef, depth: int) -> str | None:
    """How fn runs in started processes: as a target itself, else as a function called (up to
    CALL_DEPTH calls down) only from such functions (`pool.map(process_shard, shards)`, and
    `process_shard` calls the `shard_stats` that builds the loader). Where the readings differ (a
    Pool's target also a Process's, or callers of both kinds), PROCESS, the one with the further
    condition."""
    kinds = _targets(ctx).get(fn)
    if kinds:
        return PROCESS if PROCESS in kinds else POOL
    calls = ctx.loops.calls_of(fn) if depth < CALL_DEPTH else []
    found = set()
    for caller in (ctx.index.enclosing_function(c) for c in calls):
        kind = _runs_as(ctx, caller, depth + 1) if caller is not None and caller is not fn else None
        if kind is None:
            return None  # run in the main process too (or from code this cannot follow)
        found.add(kind)
    if not found:
        return None
    return PROCESS if PROCESS in found else POOL


def _targets(ctx) -> dict[cst.FunctionDef, set[str]]:
    """{function of the module: how it is run in started processes (POOL, PROCESS)}, once per file."""
    cached = getattr(ctx, "_process_targets", None)
    if cached is not None:
        return cached
    found: dict[cst.FunctionDef, set[str]] = {}
    # A file that names neither can start no process (an import or a qualified name spells one).
    starts = "multiprocessing" in ctx.text or "ProcessPool" in ctx.text
    for run in ctx.index.nodes(cst.Call) if starts else ():
        kind, target = _started(ctx, run)
        if target is not None:
            fn = resolve_callable(ctx, target)
            if isinstance(fn, cst.FunctionDef):
                found.setdefault(fn, set()).add(kind)
    ctx._process_targets = found
    return found


def _started(ctx, run: cst.Call) -> tuple[str | None, cst.BaseExpression | None]:
    """(kind, the function run) when run starts a function in other processes."""
    func = run.func
    if _is_build(ctx, func, _PROCESSES, "Process"):
        target = ctx.keyword(run, "target")
        return PROCESS, (target.value if target is not None else None)
    if not isinstance(func, cst.Attribute):
        return None, None
    if func.attr.value in _POOL_RUNS and _holds(ctx, func.value, _POOLS, "Pool"):
        kind = POOL
    elif func.attr.value in _EXECUTOR_RUNS and _holds(ctx, func.value, _EXECUTORS, None):
        kind = PROCESS
    else:
        return None, None
    first = ctx.positional(run, 0) or ctx.keyword(run, "func") or ctx.keyword(run, "fn")
    return kind, (first.value if first is not None and not first.star else None)


def _is_build(ctx, func: cst.BaseExpression, classes: frozenset, attr: str | None) -> bool:
    """func is one of classes (`mp.Process`, `Pool`), or the attribute attr of a multiprocessing
    context (`mp.get_context("spawn").Pool`, also through a name the context is assigned to)."""
    if ctx.names.qualified(func) in classes:
        return True
    if attr is None or not (isinstance(func, cst.Attribute) and func.attr.value == attr):
        return False
    held = _held(ctx, func.value)
    return bool(held) and all(isinstance(v, cst.Call) and ctx.names.qualified(v.func) in _CONTEXTS for v in held)


def _holds(ctx, value: cst.BaseExpression, classes: frozenset, attr: str | None) -> bool:
    """value is one of classes (a process Pool, an executor; _is_build): built right there
    (`Pool(4).map`), or a name every assignment of which builds one, or bound by `with Pool(4) as
    pool:` around its read."""
    held = _held(ctx, value)
    return bool(held) and all(isinstance(v, cst.Call) and _is_build(ctx, v.func, classes, attr) for v in held)


def _held(ctx, value: cst.BaseExpression) -> list[cst.BaseExpression]:
    """What value stands for: a name's assigned values and the `with` items that bind it around
    the read ([] when it may be set from anywhere); anything else, itself."""
    if not isinstance(value, cst.Name):
        return [value]
    return [*with_items(ctx.index, value), *(ctx.bindings.assigned_values(value) or [])]
