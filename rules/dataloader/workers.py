"""Worker processes for a loader (TL101, also written by TL106/TL107): the count to set, the fix
that sets it, and why a loader's dataset or collate_fn cannot go to a worker (unpicklable
objects, open file handles a fork would share, a new iterator for every batch)."""

from __future__ import annotations

import re

import libcst as cst

from trainlint.analysis.batches import (
    batches_made_on_device,
    builds_trainer_loader,
    collates_set_on,
    dataset_builds,
    dataset_class,
    loader_arg,
    loader_keyword,
    replays_per_worker,
    trains_unguarded,
)
from trainlint.analysis.imports import insert_stdlib_import
from trainlint.analysis.tree import assigned_pairs
from trainlint.diagnostics import Applicability
from trainlint.rule import Rule

from .changed import changed_while_drawn
from .loaders import excerpt, iterator_once, setting_fix, setting_source, setting_value
from .queues import queue_fed_builds


DEFAULT_WORKERS = "min(8, os.cpu_count() or 1)"


def workers_value(ctx, call: cst.Call):
    """0 when the loader runs in the main process in a plain run (also by an option's or field's
    default), UNKNOWN when not known statically, else the count."""
    return setting_value(ctx, call, "num_workers", 0)


def has_workers(ctx, call: cst.Call) -> bool:
    """num_workers is given and is not certainly 0 (a literal, or a variable holding one)."""
    return setting_value(ctx, call, "num_workers", 0, certain=True) != 0


def workers_subject(ctx, call: cst.Call) -> str:
    """How TL103 and TL104 name a loader's workers: `Workers`; or, when a plain run starts none
    (the count is an option or a configuration field that defaults to 0, TL101's finding), the
    runs that do: `Workers (when `--num-workers` is given; it defaults to 0)`."""
    source = setting_source(ctx, call, "num_workers")
    if source is None or source.is_certain or source.value != 0 or isinstance(source.value, bool):
        return "Workers"
    return f"Workers ({source.when_set()})"


def workers_to_set(rule: Rule) -> str:
    """The worker count TL101 advises and writes: the configured one, else the machine's at run time."""
    configured = rule.opts.get("num-workers")
    return str(configured) if configured else DEFAULT_WORKERS


def _os_import(ctx, value: str) -> list:
    """The `import os` that DEFAULT_WORKERS needs, when the file lacks it."""
    return [insert_stdlib_import(ctx, "os")] if value == DEFAULT_WORKERS and "os" not in ctx.names.aliases else []


def add_workers_fix(rule: Rule, call: cst.Call):
    """The TL101 fix: `num_workers` (or `dataloader_num_workers`, or where its value is written) set
    to workers_to_set's count. None for a loader whose batches are made on the device (workers
    would initialise CUDA in forked processes, which raises), or whose iterable dataset does not
    split its stream between workers (`replays_per_worker`: each would yield every sample)."""
    if batches_made_on_device(rule.ctx, call) or workers_advice(rule.ctx, call):
        return None
    value = workers_to_set(rule)
    if value == DEFAULT_WORKERS and "os" in rule.ctx.local_names(call):
        return None  # `os` is another value there (`def main(os="linux")`): `os.cpu_count()` would fail
    return setting_fix(rule, call, "num_workers", value, Applicability.UNSAFE, *_os_import(rule.ctx, value))


def workers_advice(ctx, call: cst.Call) -> str | None:
    """Why workers are not added to the loader, and what to do first: a build of its dataset takes
    its items from a queue (queues.py), its iterable dataset does not split its stream, the loop
    taking its batches changes its dataset, or the script trains at its top level with no
    `__main__` guard, or the loop makes a new iterator over the loader for every batch."""
    fresh = ctx.loops.fresh_draws(call)
    if fresh:
        # `next(iter(loader))` per step: a new pass each step, and workers started for each one
        # (hundreds of milliseconds) to hand over a single batch: slower than loading in process.
        return (f"the loop makes a new iterator over it for every batch (`{ctx.code(fresh[0]).strip()}`), "
                f"and each new iterator would start the workers again; {iterator_once(ctx, fresh[0])}")
    if changed_while_drawn(ctx, call):
        # Workers forked at a pass's start keep their copy of the dataset: what the loop adds to it
        # (a replay buffer's `buf.add(obs)`) would never reach them (the model trained on zeros).
        return ("the loop that takes its batches changes its dataset (or an object it holds), and each worker "
                "would keep the copy it was forked with, never seeing the change (a buffer filled in the loop "
                "would be read empty); build the loader again after each change")
    fed, _ = queue_fed_builds(ctx, call)
    if fed:
        return (f"`{fed[0]}` takes its items from a queue that another thread or process fills, and a worker would "
                f"get its own copy of the queue, which nothing fills (a forked worker waits on it for ever); give "
                f"workers only to a loader of another dataset")
    name = replays_per_worker(ctx, call)
    if name is not None:
        return (f"`{name}` is an IterableDataset that does not split its stream between workers (its `__iter__` "
                f"reads no worker `id` or `num_workers` from `torch.utils.data.get_worker_info()`), so each worker "
                f"would replay the whole stream and every "
                f"sample would come once per worker; shard it by worker in `__iter__`")
    if trains_unguarded(ctx):
        return ("the script trains at its top level with no `if __name__ == \"__main__\":` guard, and a worker "
                "started by spawn or forkserver (macOS, Windows, Linux from Python 3.14) imports it again and "
                "would start the training too; put the top-level code under that guard")
    defined = _notebook_definition(ctx, call)
    if defined is not None:
        return (f"`{defined}` is defined in the notebook, and a worker started by spawn or forkserver (Jupyter's "
                f"default on macOS and Windows, and on Linux from Python 3.14) cannot import the notebook to "
                f"unpickle it; move it into a `.py` module the notebook imports")
    cls = dataset_class(ctx, call)
    handle = _open_handle(ctx, cls) if cls is not None else None
    if handle is not None:
        attribute, opener = handle
        return (f"`{cls.name.value}` opens `{attribute}` in `__init__`, and {_fork_hazard(opener)}; open it in the "
                f"worker instead (lazily in `__getitem__`, or in a `worker_init_fn`)")
    if cls is not None and ctx.index.enclosing_function(cls) is not None:
        # pickle sends a class or function by its name, which a local one has not: the parent fails
        # to pickle it ("Can't pickle local object") when the loader starts the workers.
        return (f"`{cls.name.value}` is defined inside a function, so it cannot be pickled for a worker started by "
                f"spawn or forkserver (macOS, Windows, Linux from Python 3.14); define it at the module's top level")
    unpicklable = _unpicklable(ctx, call)
    if unpicklable is not None:
        remedy = "define the class at the module's top level" if unpicklable.endswith(_LOCAL_INSTANCE) \
            else "define it as a function at the module's top level"
        return (f"{unpicklable}, which cannot be pickled for a worker started by spawn or forkserver (macOS, "
                f"Windows, Linux from Python 3.14); {remedy}")
    return None


def _notebook_definition(ctx, call: cst.Call) -> str | None:
    """In a notebook, the name of a class or function of its cells the loader hands its workers:
    the dataset's class (or a class or function it is built with, `Squares(transform=scale)`), its
    `collate_fn`, `worker_init_fn` or sampler. A worker started by spawn or forkserver unpickles
    them by importing `__main__` again, which for a kernel is no file it can import (a script's
    classes it can, from the script). None in a script, or when the loader hands over none."""
    if not ctx.path.endswith(".ipynb"):
        return None
    defined = {n.name.value for n in ctx.index.nodes(cst.ClassDef) if ctx.index.enclosing_function(n) is None}
    defined |= {name for name, fns in ctx.loops.functions.items()
                if any(ctx.index.enclosing_function(fn) is None and ctx.index.enclosing_class(fn) is None for fn in fns)}

    def named(expr: cst.BaseExpression) -> str | None:
        if isinstance(expr, cst.Call):
            expr = expr.func
        return expr.value if isinstance(expr, cst.Name) and expr.value in defined else None

    for build in dataset_builds(ctx, call):
        for expr in (build, *(a.value for a in build.args if not a.star)):
            if named(expr) is not None:
                return named(expr)
    for setting in ("collate_fn", "worker_init_fn", "sampler", "batch_sampler"):
        arg = loader_arg(ctx, call, setting)
        if arg is not None and not arg.star and named(arg.value) is not None:
            return named(arg.value)
    return None


# Builtins that call a function they are given and keep nothing of it (`map(lambda r: ..., rows)`).
_CALLS_AND_DROPS = frozenset({"map", "filter", "sorted", "min", "max", "list", "tuple", "dict", "set", "sum",
                              "any", "all", "enumerate", "zip", "iter", "next", "reduce"})


def _unpicklable(ctx, call: cst.Call) -> str | None:
    """What the loader hands its workers that pickle cannot send by reference, for a message:
    its `collate_fn` (also one set on it after it is built) or `worker_init_fn`, or one its
    dataset is built with (`Mapped(base, lambda t: t * 2)`, a transform `Lambda(lambda x: ...)` in
    it), that is a lambda (never picklable, even at the module's top level) or a function defined
    inside a function. None when none is seen."""
    for setting in ("collate_fn", "worker_init_fn"):
        arg = loader_arg(ctx, call, setting)
        if arg is not None and not arg.star:
            kind = _unpicklable_function(ctx, arg.value, call)
            if kind is not None:
                return f"its `{setting}` is {kind}"
    for value in collates_set_on(ctx, call):  # `loader.collate_fn = lambda b: b` after it is built
        kind = _unpicklable_function(ctx, value, value)
        if kind is not None:
            return f"its `collate_fn` (set after it is built) is {kind}"
    for build in dataset_builds(ctx, call):
        found = _holds_unpicklable(ctx, build, call, 0)
        if found is not None:
            return f"its dataset is built with `{excerpt(ctx, found[0])}`, {found[1]}"
    return None


_LOCAL_INSTANCE = "an instance of a class defined inside a function"


def _unpicklable_function(ctx, expr: cst.BaseExpression, at: cst.CSTNode) -> str | None:
    """Why the function expr gives cannot be pickled ("a lambda", "a function defined inside a
    function", "an instance of a class defined inside a function"), as read at `at`: a lambda, a
    name assigned one, a nested def of that name in a function holding `at`, an instance of a class
    defined in such a function (`collate_fn=Collator()`: pickle finds its class by name, as it does a
    function) or a name assigned one, or `functools.partial` of one of those; None otherwise."""
    if isinstance(expr, cst.Call) and ctx.names.qualified(expr.func) == "functools.partial" and expr.args \
            and not expr.args[0].star and expr.args[0].keyword is None:
        return _unpicklable_function(ctx, expr.args[0].value, at)
    if isinstance(expr, cst.Lambda):
        return "a lambda"
    if _local_instance(ctx, expr, at) or isinstance(expr, cst.Name) and any(
            _local_instance(ctx, v, at) for v in ctx.assigned_values(expr)):
        return _LOCAL_INSTANCE
    if not isinstance(expr, cst.Name):
        return None
    if any(isinstance(v, cst.Lambda) for v in (*ctx.assigned_values(expr), *ctx.assigned_values(expr, anywhere=True))
           if ctx.index.enclosing_function(v) in (None, ctx.index.enclosing_function(at))):
        return "a lambda"
    for fn in ctx.loops.functions.get(expr.value, ()):
        # Defined in a function (also in a method: the class then holds that function), not a
        # method itself (`self.collate` pickles with its instance).
        outer, cls = ctx.index.enclosing_function(fn), ctx.index.enclosing_class(fn)
        if outer is not None and (cls is None or ctx.index.contains(cls, outer)) and ctx.index.contains(outer, at):
            return "a function defined inside a function"
    return None


def _local_instance(ctx, expr: cst.BaseExpression, at: cst.CSTNode) -> bool:
    """expr calls a class of that name defined inside a function that holds `at` (`Collator()`
    with `class Collator` in `main`)."""
    if not (isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name)):
        return False
    for cls in ctx.index.nodes(cst.ClassDef):
        if cls.name.value == expr.func.value:
            outer = ctx.index.enclosing_function(cls)
            if outer is not None and ctx.index.contains(outer, at):
                return True
    return False


def _holds_unpicklable(ctx, build: cst.Call, at: cst.Call, depth: int) -> tuple[cst.CSTNode, str] | None:
    """(argument, why) for a function that cannot be pickled handed to the call that builds the
    dataset, or to a call among its arguments (`transform=Compose([Lambda(lambda x: x * 2)])`,
    also through a name assigned such a call), a few levels down; builtins that only call it
    (`map(lambda ...)`) keep nothing of it and are not followed."""
    if depth > 3 or (ctx.dotted(build.func) or "").rsplit(".", 1)[-1] in _CALLS_AND_DROPS \
            and ctx.names.qualified(build.func) in (None, f"builtins.{ctx.dotted(build.func)}"):
        return None
    for arg in build.args:
        if arg.star:
            continue
        kind = _unpicklable_function(ctx, arg.value, at)
        if kind is not None:
            return arg.value, kind
        values = [arg.value] if not isinstance(arg.value, cst.Name) else ctx.assigned_values(arg.value)
        for value in values:
            items = [e.value for e in value.elements] if isinstance(value, (cst.List, cst.Tuple)) else [value]
            for item in items:
                if isinstance(item, cst.Call):
                    found = _holds_unpicklable(ctx, item, at, depth + 1)
                    if found is not None:
                        return found
    return None


# Calls that open a file or database handle a dataset may keep on itself.
# An archive (`zipfile.ZipFile(path)`, `tarfile.TarFile(path)`) keeps its file open and seeks it per
# member read, as a handle does.
_OPENERS = re.compile(r"^(builtins\.open|io\.open|h5py\.File|lmdb\.open|tables\.open_file|zarr\.open|"
                      r"sqlite3\.connect|numpy\.memmap|zipfile\.ZipFile|tarfile\.TarFile)$|(^|\.)open$")


def _fork_hazard(opener: str) -> str:
    """What goes wrong when forked workers use a handle that opener made before the fork, for
    TL101's message. Not the same for every kind: a file or archive shares its position (the
    message once said so for all of them), but HDF5 (h5py, PyTables) is not fork-safe at all, and
    an lmdb environment or SQLite connection must not be used in a process forked after it was
    opened, as their own documentation says."""
    if opener in ("h5py.File", "tables.open_file"):
        return ("HDF5 is not fork-safe: forked workers reading through a file opened before the fork get "
                "corrupted reads or errors")
    if opener == "lmdb.open":
        return ("an lmdb environment must not be used after a fork (its memory map and lock table belong to the "
                "process that opened it): forked workers would read through it unsafely")
    if opener == "sqlite3.connect":
        return ("an SQLite connection must not be carried across a fork (forked workers would share its file "
                "locks and cache, which can corrupt the database)")
    if opener == "zarr.open":
        return "forked workers would share the store it keeps open"
    return "forked workers would share that handle and its file position (records read at the wrong offsets)"


def _open_handle(ctx, cls: cst.ClassDef) -> tuple[str, str] | None:
    """What the class's `__init__` opens and keeps on self (`self.f = open(path, "rb")`,
    `self.f = Path(path).open("rb")`, `self.h5 = h5py.File(path)`, `self.zip = zipfile.ZipFile(path)`),
    also as an object of the open file (`self.x = h5py.File(path)["x"]`, or `f = h5py.File(path)`
    then `self.x, self.y = f["x"], f["y"]`: an HDF5 dataset reads through its file), as (the
    attribute as code, the opener's name); None when it keeps no handle. A memory map is safe to
    share (no position), and is left out; so is what a read copies out (`f["x"][:]`)."""
    for stmt in cls.body.body:
        if not (isinstance(stmt, cst.FunctionDef) and stmt.name.value == "__init__"):
            continue
        opened: dict[str, str] = {}  # local names bound to an opener's result
        for node in ctx.index.walk(stmt.body):
            if not isinstance(node, cst.Assign):
                continue
            for target in node.targets:
                for held, value in assigned_pairs(target.target, node.value):
                    name = _opener(ctx, value, opened)
                    if name is None:
                        continue
                    attribute = ctx.dotted(held) or ""
                    if attribute.startswith("self."):
                        return attribute, name
                    if isinstance(held, cst.Name):
                        opened[held.value] = name
    return None


def _opener(ctx, value: cst.BaseExpression, opened: dict[str, str]) -> str | None:
    """The opener whose handle value is or reads through (an item or attribute of it), or None.
    An item taken with `[:]` or `[()]` is a copy read out, not a handle."""
    while isinstance(value, (cst.Subscript, cst.Attribute)):
        if isinstance(value, cst.Subscript) and any(
                isinstance(e.slice, cst.Slice) or isinstance(getattr(e.slice, "value", None), cst.Tuple)
                for e in value.slice):
            return None
        value = value.value
    if isinstance(value, cst.Name):
        return opened.get(value.value)
    if not isinstance(value, cst.Call):
        return None
    func = value.func
    name = ctx.names.qualified(func) or ctx.dotted(func) or ""
    # `Path(path).open("rb")`: a method `open` of a value the dotted name cannot spell.
    if not name and isinstance(func, cst.Attribute) and func.attr.value == "open":
        name = "open"
    return name if _OPENERS.search(name) and name != "numpy.memmap" else None


def subject(ctx, call: cst.Call) -> str:
    """What loads the batches, for a message: the loader, or the Trainer TrainingArguments configure."""
    return "The Trainer's DataLoader" if builds_trainer_loader(ctx, call) else "DataLoader"


def workers_positive(ctx, expr: cst.BaseExpression) -> bool:
    """num_workers that is certainly > 0: a positive literal, `max(1, ...)`, or `min(k, ... or 1)`."""
    value = ctx.sources.value(expr, certain=True)
    if isinstance(value, int) and not isinstance(value, bool):
        return value > 0
    if isinstance(expr, cst.Call) and ctx.dotted(expr.func) in ("min", "max") and expr.args:
        values = [a.value for a in expr.args]
        if ctx.dotted(expr.func) == "max":
            return any(isinstance(ctx.literal(v), int) and ctx.literal(v) > 0 for v in values)
        return all(workers_positive(ctx, v) or (isinstance(v, cst.BooleanOperation) and isinstance(v.operator, cst.Or)
                                                and workers_positive(ctx, v.right)) for v in values)
    return False


def workers_operand(ctx, call: cst.Call, workers: cst.Arg) -> str:
    """The worker count as an operand of the fix's guard: the argument's value, or what the
    `**options` dict holds (`loader_kwargs.get("num_workers", 0)`, 0 when it holds none)."""
    if workers.star:
        return f'{ctx.code(workers.value)}.get({ctx.quote}{loader_keyword(ctx, call, "num_workers")}{ctx.quote}, 0)'
    return _operand(ctx, workers.value)


def _operand(ctx, expr: cst.BaseExpression) -> str:
    """expr's code, parenthesized unless it is already one operand of a comparison: `8 if x else 0`
    must become `(8 if x else 0) > 0` (found by tests/test_properties.py)."""
    code = ctx.code(expr).strip()  # keeps the expression's own parentheses, if any
    if isinstance(expr, (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.Integer)) or expr.lpar:
        return code
    return f"({code})"
