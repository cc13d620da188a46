"""TL1xx: the input pipeline (seed article §3, §3.3, §6.2)."""

from __future__ import annotations

import re
from functools import cached_property

import libcst as cst

from trainlint.analysis.batches import (
    PARAMETER_POSITION,
    batch_moves,
    batch_part,
    batches_made_on_device,
    builds_trainer_loader,
    collate_arg,
    collate_leaves_on_host,
    copy_takes_non_blocking,
    dataset_builds,
    dataset_changed_after,
    dataset_class,
    dataset_from_device_helper,
    dataset_on_device,
    device_global_read,
    heavy_work,
    is_device_helper,
    is_cpu_device,
    is_device_move,
    is_loader,
    loader_arg,
    loader_batches,
    loader_keyword,
    method_of,
    replays_per_worker,
    callable_choices,
    resolve_callable,
    sample_work,
    star_setting,
    trains_unguarded,
)
from trainlint.analysis.context import UNKNOWN
from trainlint.analysis.framework_loaders import (
    accelerate_trains_on,
    lightning_epochs,
    lightning_trainers,
    places_batches,
    returned_from,
)
from trainlint.analysis.frameworks import configured_for_cpu
from trainlint.analysis.imports import after_imports, insert_stdlib_import
from trainlint.analysis.inplace import changed_after_copy
from trainlint.analysis.loops import runs_at_most_once
from trainlint.analysis.names import bound_names
from trainlint.analysis.settings import Source
from trainlint.analysis.star_args import dict_entries, entry_to_change
from trainlint.analysis.tree import binding_targets
from trainlint.analysis.variables import owner, variable_uses
from trainlint.diagnostics import Applicability
from trainlint.rule import NO_FIX, Invalid, Option, Rule, Valid

DATASETS = ("torch.utils.data.Dataset", "torch.utils.data.IterableDataset")
_EVAL_WORDS = frozenset({"val", "valid", "validation", "test", "testing", "eval", "evaluate", "evaluation", "dev",
                         "predict", "prediction", "inference", "infer"})
# A stem run together with a loader word: `valloader`, `testdl`, `evaldata`.
_EVAL_STEMS = ("val", "valid", "test", "eval", "dev")
_LOADER_WORDS = frozenset({"loader", "dataloader", "dl", "data", "dataset", "ds", "set", "iter", "batches"})
DEFAULT_WORKERS = "min(8, os.cpu_count() or 1)"


def set_loader_arg(ctx, call: cst.Call, name: str, value: str) -> cst.Call:
    """The loader call with `name` set to value: in place when the call passes it by position (a
    keyword beside it would raise "got multiple values"), else as a keyword."""
    if builds_trainer_loader(ctx, call):
        return ctx.with_keyword(call, loader_keyword(ctx, call, name), value)
    return ctx.with_keyword(call, name, value, position=PARAMETER_POSITION.get(name))


def setting_value(ctx, call: cst.Call, name: str, missing, *, certain: bool = False):
    """The value of the loader's argument `name` in a plain run (`missing` when it is not passed):
    a literal, or what the variable, option or configuration field it reads holds (see
    settings.py; with certain, no option's or field's default)."""
    arg = loader_arg(ctx, call, name)
    if arg is None:
        return missing
    if arg.star:
        return star_setting(ctx, call, name)  # `**options`: what the file shows its dict is given
    return ctx.sources.value(arg.value, certain=certain)


def setting_source(ctx, call: cst.Call, name: str) -> Source | None:
    """Where the loader's argument `name` gets its value when it names it (`num_workers=NUM_WORKERS`)."""
    return ctx.sources.of_arg(loader_arg(ctx, call, name))


def setting_fix(rule: Rule, call: cst.Call, name: str, value: str, applicability: Applicability, *extra,
                at_call: str | None = None):
    """The fix that sets the loader's `name` to value: where the value is written when the
    argument reads it from a variable, an option's or a field's default (`Source.fix`), else at
    the call (as at_call, when the call needs a guarded form)."""
    ctx = rule.ctx
    arg = loader_arg(ctx, call, name)
    if arg is not None and arg.star:
        # Given by the `**options` dict: a keyword beside it would be passed twice, so the dict's
        # own entry changes, where that changes this loader alone (see entry_to_change).
        keyword = loader_keyword(ctx, call, name)
        entry = entry_to_change(ctx, call, keyword)
        if entry is None:
            return None
        return rule.fix(applicability, f"Set `{keyword}` to `{value}` in `{arg.value.value}`",
                        (entry, cst.parse_expression(value)), *extra)
    source = setting_source(ctx, call, name)
    if source is not None:
        return source.fix(rule, value, applicability, *extra)
    keyword = loader_keyword(ctx, call, name)
    return rule.fix(applicability, f"Set `{keyword}={at_call or value}`",
                    (call, set_loader_arg(ctx, call, name, at_call or value)), *extra)


def setting_advice(ctx, call: cst.Call, name: str, value: str, problem: str, why: str = "") -> str:
    """A message: the problem, where the setting comes from when not from the call, and what to set
    (`...; set `num_workers=8` so ...`, `... (`NUM_WORKERS` is 0); set `NUM_WORKERS = 8` so ...`)."""
    source = setting_source(ctx, call, name)
    arg = loader_arg(ctx, call, name)
    if source is None and arg is not None and arg.star and isinstance(arg.value, cst.Name):
        # Given by the `**options` dict (`train_kwargs`): that is where to change it.
        keyword = loader_keyword(ctx, call, name)
        return (f"{problem}; set `{keyword}` to `{value}` in `{arg.value.value}` (the dict the call unpacks)"
                f"{f' {why}' if why else ''}")
    if source is None:
        return f"{problem}; set `{loader_keyword(ctx, call, name)}={value}`{f' {why}' if why else ''}"
    return source.explain(problem, value, why)


def loader_name(ctx, call: cst.Call) -> str | None:
    """The name a loader call is assigned to (`train_loader = DataLoader(...)`)."""
    parent = ctx.parent(call)
    if isinstance(parent, cst.Assign) and len(parent.targets) == 1:
        return ctx.dotted(parent.targets[0].target)
    if isinstance(parent, cst.AnnAssign):
        return ctx.dotted(parent.target)
    return None


def workers_value(ctx, call: cst.Call):
    """0 when the loader runs in the main process in a plain run (also by an option's or field's
    default), UNKNOWN when not known statically, else the count."""
    return setting_value(ctx, call, "num_workers", 0)


def has_workers(ctx, call: cst.Call) -> bool:
    """num_workers is given and is not certainly 0 (a literal, or a variable holding one)."""
    return setting_value(ctx, call, "num_workers", 0, certain=True) != 0


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
    """Why workers are not added to the loader, and what to do first: its iterable dataset does
    not split its stream, or the script trains at its top level with no `__main__` guard."""
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
    cls = dataset_class(ctx, call)
    handle = _open_handle(ctx, cls) if cls is not None else None
    if handle is not None:
        attribute, opener = handle
        return (f"`{cls.name.value}` opens `{attribute}` in `__init__`, and {_fork_hazard(opener)}; open it in the "
                f"worker instead (lazily in `__getitem__`, or in a `worker_init_fn`)")
    if cls is not None and ctx.index.enclosing_function(cls) is not None:
        return (f"`{cls.name.value}` is defined inside a function, so a worker started by spawn or forkserver "
                f"(macOS, Windows, Linux from Python 3.14) cannot unpickle it; define it at the module's top level")
    unpicklable = _unpicklable(ctx, call)
    if unpicklable is not None:
        remedy = "define the class at the module's top level" if unpicklable.endswith(_LOCAL_INSTANCE) \
            else "define it as a function at the module's top level"
        return (f"{unpicklable}, which a worker started by spawn or forkserver (macOS, Windows, Linux from "
                f"Python 3.14) cannot unpickle; {remedy}")
    return None


# Builtins that call a function they are given and keep nothing of it (`map(lambda r: ..., rows)`).
_CALLS_AND_DROPS = frozenset({"map", "filter", "sorted", "min", "max", "list", "tuple", "dict", "set", "sum",
                              "any", "all", "enumerate", "zip", "iter", "next", "reduce"})


def _unpicklable(ctx, call: cst.Call) -> str | None:
    """What the loader hands its workers that pickle cannot send by reference, for a message:
    its `collate_fn` or `worker_init_fn`, or one its dataset is built with (`Mapped(base, lambda t:
    t * 2)`, a transform `Lambda(lambda x: ...)` in it), that is a lambda (never picklable, even at
    the module's top level) or a function defined inside a function. None when none is seen."""
    for setting in ("collate_fn", "worker_init_fn"):
        arg = loader_arg(ctx, call, setting)
        if arg is not None and not arg.star:
            kind = _unpicklable_function(ctx, arg.value, call)
            if kind is not None:
                return f"its `{setting}` is {kind}"
    for build in dataset_builds(ctx, call):
        found = _holds_unpicklable(ctx, build, call, 0)
        if found is not None:
            return f"its dataset is built with `{_excerpt(ctx, found[0])}`, {found[1]}"
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
        outer = ctx.index.enclosing_function(fn)
        if outer is not None and ctx.index.enclosing_class(fn) is None and ctx.index.contains(outer, at):
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
                for held, value in _assigned_pairs(target.target, node.value):
                    name = _opener(ctx, value, opened)
                    if name is None:
                        continue
                    attribute = ctx.dotted(held) or ""
                    if attribute.startswith("self."):
                        return attribute, name
                    if isinstance(held, cst.Name):
                        opened[held.value] = name
    return None


def _assigned_pairs(target: cst.BaseExpression, value: cst.BaseExpression):
    """(target, value) pairs of an assignment, element by element for `a, b = x, y`."""
    if isinstance(target, (cst.Tuple, cst.List)) and isinstance(value, (cst.Tuple, cst.List)) \
            and len(target.elements) == len(value.elements):
        for t, v in zip(target.elements, value.elements):
            yield from _assigned_pairs(t.value, v.value)
    else:
        yield target, value


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


def _subject(ctx, call: cst.Call) -> str:
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


_SEQUENTIAL = ("SequentialSampler",)
# Samplers that draw a new random order (or random draws: weighted, or a random subset) each epoch.
_SHUFFLING = ("RandomSampler", "DistributedSampler", "WeightedRandomSampler", "SubsetRandomSampler")


def _sampler_calls(ctx, call: cst.Call, or_none: bool = False) -> list[cst.Call] | None:
    """The calls that build the loader's `sampler=` (through assignments), None when not all known.
    With or_none, the sampler may also be None (`DistributedSampler(ds) if distributed else None`,
    or assigned so in one branch): the calls of its other values."""
    sampler = loader_arg(ctx, call, "sampler")
    if sampler is None or sampler.star:
        return None
    values = [sampler.value] if isinstance(sampler.value, (cst.Call, cst.IfExp)) else ctx.assigned_values(sampler.value)
    if or_none:
        values = [branch for v in values for branch in ((v.body, v.orelse) if isinstance(v, cst.IfExp) else (v,))]
        values = [v for v in values if not (isinstance(v, cst.Name) and v.value == "None")]
    if not values or not all(isinstance(v, cst.Call) for v in values):
        return None
    return values


def _shuffles_without_sampler(ctx, call: cst.Call, shuffle: cst.Arg) -> bool:
    """`shuffle=(sampler is None)` beside `sampler=sampler` (PyTorch's ImageNet example): the
    loader shuffles itself exactly when it is given no sampler, and the sampler decides otherwise."""
    test = shuffle.value
    sampler = loader_arg(ctx, call, "sampler")
    return sampler is not None and not sampler.star and isinstance(test, cst.Comparison) and len(test.comparisons) == 1 \
        and isinstance(test.comparisons[0].operator, cst.Is) and ctx.dotted(test.comparisons[0].comparator) == "None" \
        and ctx.dotted(test.left) is not None and ctx.dotted(test.left) == ctx.dotted(sampler.value)


def _sampler_is(ctx, expr: cst.BaseExpression, names: tuple[str, ...]) -> bool:
    """expr is a sampler class of one of these names, as imported (`RandomSampler as RS`) or spelled."""
    name = ctx.names.qualified(expr) or ctx.dotted(expr) or ""
    return name.rsplit(".", 1)[-1] in names


def shuffles(ctx, call: cst.Call) -> bool:
    """The loader draws batches in a new random order each epoch: `shuffle=True`, or a
    `RandomSampler` / `DistributedSampler` (which shuffles unless told `shuffle=False`), a
    `WeightedRandomSampler` or a `SubsetRandomSampler`."""
    shuffle = loader_arg(ctx, call, "shuffle")
    if shuffle is not None and not _shuffles_without_sampler(ctx, call, shuffle):
        return setting_value(ctx, call, "shuffle", False) is True
    samplers = _sampler_calls(ctx, call, or_none=shuffle is not None)
    if not samplers:
        return False
    for sampler in samplers:
        if not _sampler_is(ctx, sampler.func, _SHUFFLING):
            return False
        option = ctx.keyword(sampler, "shuffle")
        if option is not None and ctx.literal(option.value) is not True:
            return False
    return True


def is_training_loader(ctx, call: cst.Call) -> bool:
    """The loader feeds training: a loop over it in this module runs optimizer steps. When no loop
    over it is seen here, a sequential sampler or an evaluation name (`names_evaluation`, of the
    loader or of the function returning it) says it does not."""
    loops = [loop for loop, _target in loader_batches(ctx, call)]
    if loops:
        return any(ctx.loops.runs_steps(loop) for loop in loops)
    # Only through a function other loaders go through too: whether it steps on this loader's
    # calls (`run_epoch(model, val_loader)` with `if optimizer is not None:` around the step).
    verdicts = {ctx.loops.steps_on(loop, path) for loop, path in ctx.loops.shared_loops(call)}
    if True in verdicts or verdicts == {False}:
        return True in verdicts
    samplers = _sampler_calls(ctx, call)
    if samplers and all(_sampler_is(ctx, v.func, _SEQUENTIAL) for v in samplers):
        return False
    name = loader_name(ctx, call) or ""
    if names_evaluation(name.rsplit(".", 1)[-1]):
        return False
    # Returned by a function named for evaluation: Lightning's `val_dataloader()`,
    # `test_dataloader()`, `predict_dataloader()`, or a `build_eval_loader()`.
    fn = returned_from(ctx, call, name or None)
    if fn is not None and names_evaluation(fn.name.value):
        return False
    shuffle = loader_arg(ctx, call, "shuffle")
    return not (shuffle is not None and ctx.literal(shuffle.value) is False and name == "")


def names_evaluation(name: str) -> bool:
    """Whole words of a name (split at underscores and case changes) say it evaluates: `val_loader`,
    `evalDataLoader`, `build_eval_loader`, or a stem run together with a loader word (`valloader`,
    `testdl`); not `device_loader`, `interval_dl` or `retrieval_loader`, which only contain one."""
    for word in re.findall(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])", name):
        word = word.lower()
        if word in _EVAL_WORDS or any(word.startswith(stem) and word[len(stem):] in _LOADER_WORDS
                                      for stem in _EVAL_STEMS):
            return True
    return False


def _settings_visible(ctx, call: cst.Call) -> bool:
    """No `*args`, and no `**options` dict built elsewhere: which arguments the call passes is known."""
    return not ctx.hides_arguments(call) or ctx.star_keys(call) is not None


def _over_builtin_collection(ctx, call: cst.Call) -> bool:
    """`DataLoader(range(n))`, `DataLoader([])`: plain Python values, nothing to load or pin."""
    dataset = loader_arg(ctx, call, "dataset") or ctx.positional(call, 0)
    return dataset is not None and ctx.is_builtin_collection(dataset.value)


def _draws_one_batch(ctx, call: cst.Call) -> bool:
    """A loader made to draw a single batch (an example input, a shape probe): `next(iter(DataLoader(
    ...)))`, or `loader = DataLoader(...)` whose only use is one `next(iter(loader))`. Workers,
    pinning and prefetching would only add start-up work to it."""
    if _next_of_iter(ctx, call):
        return True
    assign = ctx.parent(call)
    if not isinstance(assign, cst.Assign) or len(assign.targets) != 1 \
            or not isinstance(assign.targets[0].target, cst.Name):
        return False
    target = assign.targets[0].target
    uses = variable_uses(ctx.index, owner(ctx.index, target), target.value) or []
    reads = [u for u in uses if u.kind == "read"]
    return len(reads) == 1 and len(uses) == 2 and any(u.stmt is assign for u in uses) \
        and _next_of_iter(ctx, reads[0].node)


def _next_of_iter(ctx, expr: cst.BaseExpression) -> bool:
    """expr is the whole argument of `iter()`, itself the whole argument of `next()`."""
    node = expr
    for name in ("builtins.iter", "builtins.next"):
        arg = ctx.parent(node)
        node = ctx.parent(arg) if isinstance(arg, cst.Arg) else None
        if not isinstance(node, cst.Call) or len(node.args) != 1 or arg.keyword or arg.star \
                or ctx.names.qualified(node.func) != name:
            return False
    return True


# What a file that builds a loader or a Trainer's loader settings holds: a DataLoader, a call of
# TrainingArguments (or an alias of it), or a call of a `...Config` in a file that names trl
# (`SFTConfig(...)`).
TRAINER_TRIGGERS = ("DataLoader", "TrainingArguments(", "TrainingArguments as", ("trl", "Config("))


class DataLoaderRule(Rule):
    """Shared shape of the loader rules: visit DataLoader calls whose keywords are all visible (and,
    for the rules that set `trainer_settings`, TrainingArguments, whose `dataloader_*` settings
    configure the Trainer's DataLoader)."""

    triggers = ("DataLoader",)
    trainer_settings = False

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        if self.trainer_settings and builds_trainer_loader(ctx, node):
            if _settings_visible(ctx, node) and _handed_on(ctx, node):
                self.check_loader(node)
        elif self._mentions_loaders and is_loader(ctx, node) and _settings_visible(ctx, node) \
                and not _over_builtin_collection(ctx, node) and not _draws_one_batch(ctx, node):
            self.check_loader(node)

    @cached_property
    def _mentions_loaders(self) -> bool:
        """A rule that also runs for TrainingArguments runs in files that never name a DataLoader:
        the loader test (which follows assignments) is skipped there."""
        return "DataLoader" in self.ctx.text

    def check_loader(self, call: cst.Call) -> None:
        raise NotImplementedError


# A dataset that hands out samples already on the device (its tensors moved in __getitem__, or
# stored there by __init__): its loader's batches need no pinning, and workers would start CUDA.
_ON_DEVICE = (
    "import torch\nfrom torch.utils.data import DataLoader, Dataset\n"
    "class OnDevice(Dataset):\n"
    "    def __init__(self, x, y):\n        self.x, self.y = x, y\n"
    "    def __getitem__(self, i):\n        return self.x[i].to('cuda'), self.y[i].to('cuda')\n"
    "loader = DataLoader(OnDevice(X, Y), batch_size=64{options})\n"
    "for xb, yb in loader:\n    loss = model(xb.to('cuda'), yb.to('cuda'))\n    loss.backward()\n    opt.step()\n"
)
# An iterable dataset of this module, and its loader; the tester's stream doubled its samples with 2 workers.
_STREAM = (
    "import os\nimport torch\nfrom torch.utils.data import DataLoader, IterableDataset, get_worker_info\n{helper}"
    "class Stream(IterableDataset):\n    def __init__(self, paths):\n        self.paths = paths\n"
    "    def __iter__(self):\n{body}"
    "loader = DataLoader(Stream(paths){options})\n"
)
_UNSHARDED = "        for p in self.paths:\n            yield torch.load(p)\n"
_SHARDED = ("        info = get_worker_info()\n        paths = self.paths if info is None else "
            "self.paths[info.id::info.num_workers]\n        for p in paths:\n            yield torch.load(p)\n")
_SEEDED = ("        info = get_worker_info()\n        rng = random.Random(0 if info is None else info.seed)\n"
           "        for p in self.paths:\n            yield augment(torch.load(p), rng)\n")
_LEFTOVER = ("    def _unused(self):\n        info = get_worker_info()\n"
             "        return self.paths if info is None else self.paths[info.id::info.num_workers]\n")
_SHARD_HELPER = ("def shard(items):\n    info = torch.utils.data.get_worker_info()\n"
                 "    return items if info is None else items[info.id::info.num_workers]\n")
_WORKERS_SET = ", num_workers=min(8, os.cpu_count() or 1)"
# A dataset built from tensors on the device (the tester's TensorDataset of `X.to(device)`).
_TENSORS_ON_DEVICE = (
    "import torch\nfrom torch.utils.data import DataLoader, TensorDataset\n"
    "device = torch.device('cuda')\n{data}"
    "loader = DataLoader({dataset}, batch_size=64{options})\n"
    "for xb, yb in loader:\n    loss = model(xb.to(device), yb.to(device))\n    loss.backward()\n    opt.step()\n"
)
# A frozen encoder's features, computed on the device by a helper (the tester's linear probe).
_EXTRACT = ("def extract(encoder, images, bs=64):\n    feats = []\n    for i in range(0, len(images), bs):\n"
            "        feats.append(encoder(images[i:i + bs].to(device)))\n    return torch.cat(feats)\n")
_STORED_ON_DEVICE = _ON_DEVICE.replace("self.x, self.y = x, y", "self.x, self.y = x.cuda(), y.cuda()").replace(
    "return self.x[i].to('cuda'), self.y[i].to('cuda')", "return self.x[i], self.y[i]")


# A script that trains when run, through a function it calls at its top level.
_TOP_LEVEL = (
    "from torch.utils.data import DataLoader\n"
    "def train(loader):\n"
    "    for x, y in loader:\n"
    "        model(x, y).backward()\n"
    "        opt.step()\n"
    "def main():\n"
    "    train(DataLoader(ds))\n"
    "main()\n"
)
# A loader built inside a function, with what comes {before} it.
_LOCAL_FUNCTION = (
    "import functools\nimport os\nimport torch\nfrom torch.utils.data import DataLoader\ndef main(ds, base, rows, root):\n"
    "{before}    loader = DataLoader({ds}{options})\n    for b in loader:\n        model(b).backward()\n        opt.step()\n"
)
_GUARDED = _TOP_LEVEL.replace("main()\n", "if __name__ == '__main__':\n    main()\n")


class DataLoaderNoWorkers(DataLoaderRule):
    code = "TL101"
    name = "dataloader-no-workers"
    summary = "DataLoader loads data in the main process (`num_workers` missing or 0)"
    source = "§3, §3.3"
    fix_applicability = "unsafe"
    triggers = TRAINER_TRIGGERS
    trainer_settings = True
    options = {
        "num-workers": Option(0, int, "The value the fix writes; 0 means `min(8, os.cpu_count() or 1)` at run time.",
                              minimum=0),
    }
    _OPTION = ("import argparse\nfrom torch.utils.data import DataLoader\nparser = argparse.ArgumentParser()\n"
               "parser.add_argument({flag}, type=int, default={default})\nargs = parser.parse_args()\n"
               "loader = DataLoader(ds, num_workers=args.num_workers)\n")
    _CONFIG = ("import os\nfrom dataclasses import dataclass, field\nfrom torch.utils.data import DataLoader\n"
               "@dataclass\nclass Config:\n    batch_size: int = 32\n    num_workers: int = {default}\n{more}"
               "def main(cfg: Config):\n    return DataLoader(ds, cfg.batch_size, num_workers=cfg.num_workers)\n")
    docs = """
## What it does
Flags a `DataLoader` (any import alias, local subclasses, `StatefulDataLoader`) whose `num_workers`
is missing or a literal 0. A loader over plain Python values (`range(n)`, a list literal) or made
to draw one batch (`next(iter(DataLoader(...)))`, or a variable whose only use is one
`next(iter(loader))`) has nothing to overlap and is not flagged, by this or any loader rule.
Also flags transformers' `TrainingArguments` (and trl's and sentence-transformers' subclasses,
such as `SFTConfig`) handed to a trainer in the same file, without `dataloader_num_workers` or
with 0, its default: the Trainer then loads and collates every batch in the training process.
TL103 and TL104 read its `dataloader_persistent_workers` and `dataloader_prefetch_factor` too.

A setting written as a name is read where the file writes it (the same reading for TL101-TL105):
a variable assigned once in the scope the read looks in (`NUM_WORKERS = 0` at module level, or
`workers = 0` in the function; not one declared `global` elsewhere, nor a parameter); a
command-line option's default (`args.num_workers`: the file's one `add_argument` for it, by
`dest=` or its first long flag, with no `set_defaults` for it); or the default of a configuration
class's field (`cfg.num_workers`, where `cfg` is annotated with the module's one class declaring
`num_workers`, built from it, or parsed into it by a call handed the class, such as
`tyro.cli(Config)`; and nothing in the file sets the field: no `cfg.num_workers = ...`, no
construction naming it or passing arguments by position or `**`, no `replace(...)` of it). An
option's or field's default of 0 loads in the training process unless the run is configured
otherwise. The fix changes the value where it is written, once for every loader that reads it.
Options passed as `**options` are read when the function shows the dict's whole life: built from
literal keys (`{...}`, `dict(a=...)`, `options["key"] = ...`, `options.update(...)` of such a dict,
as PyTorch's MNIST example merges its CUDA options) and otherwise only read or unpacked. A key
it may hold reads as the literal it is given where every place that sets it gives the same one
(`"pin_memory": True` in the CUDA options), else as not known here. A key it holds is fixed in
the dict (a keyword beside the `**` would pass it twice): the literal it is given is replaced
where the dict is built or changed in the loader call's own block, and only when no other call
unpacks the dict; otherwise (set under a condition, or a dict two loaders share) it is reported
without a fix. One it cannot hold is missing, and the fix adds the keyword beside the `**` (a
guard on workers reads `options.get("num_workers", 0)`).

No workers fix either for a dataset that keeps an open file or database handle from its
`__init__` (`self.f = open(path, "rb")`, `Path(path).open()`, an archive kept open by `zipfile.ZipFile`
or `tarfile.open`: forked workers would share its position; `h5py.File` or `tables.open_file`: HDF5
is not fork-safe; `lmdb.open` or `sqlite3.connect`: not to be used after a fork), also an
object read through such a handle (`self.x = h5py.File(path)["x"]`, or an item of a name bound to
the file; not a copy read out with `[:]`), for a
dataset class defined inside a function (spawned workers cannot unpickle it), nor
for a `collate_fn` or `worker_init_fn` that is a lambda (never picklable by reference, even at the
module's top level), a function defined inside a function or an instance of a class defined inside a
function (`collate_fn=Collator()`), or such a function the dataset is
built with (`Mapped(base, lambda t: t * 2)`, a transform `Lambda(lambda x: ...)` it is given, also
through a name; not one a builtin only calls while the data is built, `map(lambda r: ..., rows)`), where
a local name hides the module `os` the fix calls, or for a framework's training run at the top level
of an unguarded script (`L.Trainer(...).fit(...)`, a Trainer's `.train()`). A config unpacked from
`HfArgumentParser(...).parse_args_into_dataclasses()` is read as an instance of its class.

## Why is this bad?
With no workers, every batch is read, decoded and collated in the training process between two
steps, and the accelerator idles while it happens. Worker processes prepare the next batches
while the current one trains.

## Example
```python
loader = DataLoader(dataset, batch_size=64, shuffle=True)
```

## Use instead
```python
loader = DataLoader(dataset, batch_size=64, shuffle=True, num_workers=min(8, os.cpu_count() or 1))
```

## Fix safety
Unsafe: workers need a picklable dataset and collate function, and each worker has its own RNG
stream, so random augmentations differ from a run without workers. A value the file does not
settle (a parameter, an option or field it cannot see once), `*args`, or `**options` whose keys
the file does not show, is not a finding. A `0` passed by position is replaced where it stands.
A loader whose batches its dataset or `collate_fn` (defined in this module) already puts on the
device, or whose dataset is built from tensors on the device (`TensorDataset(X.to(device), Y)`,
`.cuda()`, a tensor made with `device=`, or a name assigned one; any dataset class handed such a
tensor, also inside `Subset(...)` or `ConcatDataset([...])`), is reported with no fix: workers
cannot start CUDA in forked processes, so those copies must move into the training loop first
(TL106 does it for a `collate_fn`). An iterable dataset (a subclass of `IterableDataset`) defined
in this module whose `__iter__` does not split its stream between workers is reported with no fix
either: every worker runs the whole `__iter__`, so each sample would come once per worker (64
samples an epoch become 128 with 2 workers). It counts as split when its `__iter__`, or the methods
of the class and the module's functions it calls (three calls down), read the worker's `id` or
`num_workers` from `torch.utils.data.get_worker_info()` (`info.id`, `get_worker_info().num_workers`)
or hand the worker info to another call, or when the loader sets a `worker_init_fn`; the info read
only to seed a per-worker RNG (`random.Random(info.seed)`), or asked for in a method `__iter__`
never calls, splits nothing. An iterable dataset not defined here (Hugging Face `datasets`
streaming, webdataset, a project module's class), or a class here deriving from such a class, is
not seen and keeps the fix: the libraries' streaming datasets split their shards between workers
themselves; check a project's own stream before applying it. A script that trains at its top
level (a hot loop there; a top-level call of a function of the module that runs one, or that
function handed to what calls it: `fire.Fire(main)`, `Thread(target=main)`; or a call of the
app such a function is registered with: Typer's `@app.command()` and `app()`) outside
an `if __name__ == "__main__":` guard is reported with no fix too: a worker started by spawn or
forkserver (the default on macOS and Windows, and on Linux from Python 3.14) imports the main
module again and would start the training (not a notebook: a worker does not run its cells again). TL106 and TL107 add workers the same way, under the
same conditions, and say why when they add none.
"""
    valid = [
        Valid("from torch.utils.data import DataLoader\nDataLoader(ds, batch_size=8, num_workers=4)\n"),
        Valid("from torch.utils.data import DataLoader\nDataLoader(ds, num_workers=args.workers)\n"),
        Valid("from torch.utils.data import DataLoader\nDataLoader(ds, **loader_kwargs)\n"),
        Valid("import torch\nloader = torch.utils.data.DataLoader(ds, 8, True, None, None, 2)\n"),
        Valid("from mylib import DataLoader\nDataLoader(ds)\n"),
        # `*args` may carry num_workers by position.
        Valid("from torch.utils.data import DataLoader\nloader = DataLoader(*loader_args)\n"),
        # Plain Python values in memory: nothing for workers to load (ecosystem: accelerate tests).
        Valid("from torch.utils.data import DataLoader\ndl = DataLoader(range(64), batch_size=8, shuffle=True)\n"),
        # One batch drawn and the loader dropped (ecosystem: torchrec's inference client): no loading to overlap.
        Valid("from torch.utils.data import DataLoader\nexample = next(iter(DataLoader(ds, batch_size=8)))\n"),
        Valid("from torch.utils.data import DataLoader\ndef trace(model, ds):\n    probe = DataLoader(ds, batch_size=1)\n"
              "    return torch.jit.trace(model, next(iter(probe)))\n"),
        Valid("from torch.utils.data import DataLoader\nitems = list(range(10))\ndl = DataLoader(items, batch_size=1)\n"),
        Valid("from transformers import TrainingArguments\nargs = TrainingArguments('out', dataloader_num_workers=4)\n"
              "Trainer(model, args).train()\n"),
        Valid("from transformers import TrainingArguments\nargs = TrainingArguments(**config)\nTrainer(model, args).train()\n"),
        Valid("from transformers import TrainingArguments as TA\nTrainer(model, TA('out', dataloader_num_workers=2))\n"),
        # Built and given to no trainer here: no DataLoader is configured (accelerate's DeepSpeed test).
        Valid("from transformers import TrainingArguments\nargs = TrainingArguments('out')\nassert args is not None\n"),
        # trl's model settings are not TrainingArguments.
        Valid("from trl import ModelConfig\nmodel_args = ModelConfig(model_name_or_path='gpt2')\n"),
        # A command-line worker count that defaults to some workers, or whose option is not seen once.
        Valid(_OPTION.format(flag="'--num-workers'", default="4")),
        Valid(_OPTION.format(flag="'--num-workers'", default="0") +
              "parser.add_argument('--num_workers', type=int, default=2)\n"),
        Valid(_OPTION.format(flag="'--workers'", default="0")),
        Valid(_OPTION.format(flag="'--num-workers'", default="0") + "parser.set_defaults(num_workers=8)\n"),
        # A subclass with its own __init__ does not take DataLoader's arguments (ecosystem: torchtitan tests).
        Valid("from torch.utils.data import DataLoader\nclass FakeLoader(DataLoader):\n    def __init__(self):\n"
              "        super().__init__(dataset=[], batch_size=1)\nloader = FakeLoader()\n"),
        # A worker count from a variable is known only when it is assigned once, where the read looks.
        Valid("from torch.utils.data import DataLoader\nNUM_WORKERS = 4\ndef main():\n"
              "    return DataLoader(ds, num_workers=NUM_WORKERS)\n"),
        Valid("from torch.utils.data import DataLoader\nNUM_WORKERS = 0\ndef setup(n):\n    global NUM_WORKERS\n"
              "    NUM_WORKERS = n\ndef main():\n    return DataLoader(ds, num_workers=NUM_WORKERS)\n"),
        Valid("from torch.utils.data import DataLoader\ndef main(fast):\n    workers = 0\n    if fast:\n"
              "        workers = 8\n    return DataLoader(ds, num_workers=workers)\n"),
        Valid("from torch.utils.data import DataLoader\nNUM_WORKERS = 0\ndef main(NUM_WORKERS):\n"
              "    return DataLoader(ds, num_workers=NUM_WORKERS)\n"),
        # A `**options` dict that may hold the worker count, or whose keys the file does not show.
        Valid("from torch.utils.data import DataLoader\ndef main(fast):\n    kw = {'batch_size': 32}\n    if fast:\n"
              "        kw.update(num_workers=8)\n    return DataLoader(ds, **kw)\n"),
        Valid("from torch.utils.data import DataLoader\ndef main():\n    kw = {'batch_size': 32}\n    tune(kw)\n"
              "    return DataLoader(ds, **kw)\n"),
        # A module's dict a function changes (it may run before the loader is built), or one
        # declared `global` somewhere: its keys are not known.
        Valid("from torch.utils.data import DataLoader\nKW = {'batch_size': 32}\ndef fast():\n"
              "    KW['num_workers'] = 8\ndef main():\n    return DataLoader(ds, **KW)\n"),
        Valid("from torch.utils.data import DataLoader\nKW = {'batch_size': 32}\ndef setup(kw):\n    global KW\n"
              "    KW = kw\ndef main():\n    return DataLoader(ds, **KW)\n"),
        # A configuration field's default decides only when nothing in the file sets the field.
        Valid(_CONFIG.format(default="4", more="")),
        Valid(_CONFIG.format(default="0", more="") + "main(Config(num_workers=4))\n"),
        Valid(_CONFIG.format(default="0", more="") + "main(Config(64, 4))\n"),
        Valid(_CONFIG.format(default="0", more="") + "cfg = Config()\ncfg.num_workers = 4\nmain(cfg)\n"),
        Valid(_CONFIG.format(default="0", more="") + "main(dataclasses.replace(Config(), num_workers=4))\n"),
        Valid(_CONFIG.format(default="0", more="class Fast(Config):\n    num_workers: int = 8\n")),
        # An object the file never ties to the class may be anything.
        Valid(_CONFIG.format(default="0", more="").replace("cfg: Config", "cfg")),
    ]
    invalid = [
        # A script that trains at its top level, unguarded: a spawned worker would import it and
        # train again. Under `if __name__ == "__main__":`, the fix.
        # `os` is another value where the loader is built: `os.cpu_count()` there would fail.
        Invalid("from torch.utils.data import DataLoader\ndef main(ds, os='linux'):\n    loader = DataLoader(ds)\n"
                "    for b in loader:\n        model(b).backward()\n        opt.step()\n", fixed=NO_FIX),
        # A dataset that keeps an open file on itself (workers would share its position), or whose
        # class is defined in a function (spawned workers cannot unpickle it): no workers fix.
        Invalid("from torch.utils.data import DataLoader, Dataset\nclass Records(Dataset):\n    def __init__(self, path):\n"
                "        self.f = open(path, 'rb')\n    def __getitem__(self, i):\n        self.f.seek(i * 64)\n"
                "        return self.f.read(64)\ndef main():\n    loader = DataLoader(Records('r.bin'))\n"
                "    for b in loader:\n        model(b).backward()\n        opt.step()\n", fixed=NO_FIX,
                message="`Records` opens `self.f` in `__init__`"),
        # The same for a handle opened by `Path.open` or an archive kept open (each member read
        # seeks the shared file): before, workers were added and a forked worker read another's
        # offsets (zipfile.BadZipFile: Bad CRC-32 on a real run with four workers).
        Invalid("from pathlib import Path\nfrom torch.utils.data import DataLoader, Dataset\nclass Records(Dataset):\n"
                "    def __init__(self, path):\n        self.f = Path(path).open('rb')\n    def __getitem__(self, i):\n"
                "        self.f.seek(i * 64)\n        return self.f.read(64)\ndef main():\n"
                "    loader = DataLoader(Records('r.bin'))\n    for b in loader:\n        model(b).backward()\n"
                "        opt.step()\n", fixed=NO_FIX, message="`Records` opens `self.f` in `__init__`"),
        Invalid("import zipfile\nfrom torch.utils.data import DataLoader, Dataset\nclass Shards(Dataset):\n"
                "    def __init__(self, path):\n        self.zf = zipfile.ZipFile(path)\n    def __getitem__(self, i):\n"
                "        return self.zf.read(f'{i}.bin')\ndef main():\n"
                "    loader = DataLoader(Shards('s.zip'))\n    for b in loader:\n        model(b).backward()\n"
                "        opt.step()\n", fixed=NO_FIX, message="`Shards` opens `self.zf` in `__init__`"),
        Invalid("from tarfile import TarFile\nfrom torch.utils.data import DataLoader, Dataset\nclass Shards(Dataset):\n"
                "    def __init__(self, path):\n        self.tar = TarFile(path)\n    def __getitem__(self, i):\n"
                "        return self.tar.extractfile(f'{i}.bin').read()\ndef main():\n"
                "    loader = DataLoader(Shards('s.tar'))\n    for b in loader:\n        model(b).backward()\n"
                "        opt.step()\n", fixed=NO_FIX, message="`Shards` opens `self.tar` in `__init__`"),
        # An HDF5 file or an lmdb environment: the reason is not a shared file position (the message
        # once said so) but that HDF5 is not fork-safe, and lmdb's environment must not cross a fork.
        Invalid("import h5py\nfrom torch.utils.data import DataLoader, Dataset\nclass Frames(Dataset):\n"
                "    def __init__(self, path):\n        self.h5 = h5py.File(path, 'r')\n    def __getitem__(self, i):\n"
                "        return self.h5['x'][i]\ndef main():\n"
                "    loader = DataLoader(Frames('f.h5'))\n    for b in loader:\n        model(b).backward()\n"
                "        opt.step()\n", fixed=NO_FIX,
                message="`Frames` opens `self.h5` in `__init__`, and HDF5 is not fork-safe"),
        # ... also an object read through the file: an item of it, or of a name bound to it (the
        # tester's `self.x = h5py.File(p)["x"]` got the workers fix); not a copy read out (`[:]`).
        Invalid("import h5py\nfrom torch.utils.data import DataLoader, Dataset\nclass Frames(Dataset):\n"
                "    def __init__(self, path):\n        self.x = h5py.File(path, 'r')['x']\n    def __getitem__(self, i):\n"
                "        return self.x[i]\ndef main():\n"
                "    loader = DataLoader(Frames('f.h5'))\n    for b in loader:\n        model(b).backward()\n"
                "        opt.step()\n", fixed=NO_FIX, message="`Frames` opens `self.x` in `__init__`"),
        Invalid("import h5py\nfrom torch.utils.data import DataLoader, Dataset\nclass Frames(Dataset):\n"
                "    def __init__(self, path):\n        f = h5py.File(path, 'r')\n        self.x, self.y = f['x'], f['y']\n"
                "    def __getitem__(self, i):\n        return self.x[i]\ndef main():\n"
                "    loader = DataLoader(Frames('f.h5'))\n    for b in loader:\n        model(b).backward()\n"
                "        opt.step()\n", fixed=NO_FIX, message="`Frames` opens `self.x` in `__init__`"),
        Invalid("import h5py\nfrom torch.utils.data import DataLoader, Dataset\nclass Frames(Dataset):\n"
                "    def __init__(self, path):\n        f = h5py.File(path, 'r')\n        self.x = f['x'][:]\n"
                "    def __getitem__(self, i):\n        return self.x[i]\ndef main():\n"
                "    loader = DataLoader(Frames('f.h5'))\n    for b in loader:\n        model(b).backward()\n"
                "        opt.step()\n", message="; set `num_workers="),
        Invalid("import lmdb\nfrom torch.utils.data import DataLoader, Dataset\nclass Records(Dataset):\n"
                "    def __init__(self, path):\n        self.env = lmdb.open(path, readonly=True)\n"
                "    def __getitem__(self, i):\n        with self.env.begin() as txn:\n"
                "            return txn.get(str(i).encode())\ndef main():\n"
                "    loader = DataLoader(Records('db'))\n    for b in loader:\n        model(b).backward()\n"
                "        opt.step()\n", fixed=NO_FIX,
                message="`Records` opens `self.env` in `__init__`, and an lmdb environment must not be used after a fork"),
        Invalid("from torch.utils.data import DataLoader, Dataset\ndef main():\n    class Local(Dataset):\n"
                "        def __getitem__(self, i):\n            return i\n    loader = DataLoader(Local())\n"
                "    for b in loader:\n        model(b).backward()\n        opt.step()\n", fixed=NO_FIX,
                message="is defined inside a function"),
        # So is a collate_fn or worker_init_fn that is a lambda (never picklable, even at the top
        # level) or a function defined inside a function, or such a function the dataset is built
        # with (directly or in a transform it is given): the fix once added workers that raised
        # AttributeError under spawn (macOS, Windows).
        Invalid(_LOCAL_FUNCTION.format(before="", ds="ds", options=", collate_fn=lambda b: torch.stack(b) * 2"),
                fixed=NO_FIX, message="its `collate_fn` is a lambda, which a worker started by spawn"),
        Invalid(_LOCAL_FUNCTION.format(before="    def collate(b):\n        return torch.stack(b)\n", ds="ds",
                                       options=", collate_fn=functools.partial(collate)"),
                fixed=NO_FIX, message="its `collate_fn` is a function defined inside a function"),
        # An instance of a class defined inside the function (a callable Collator): pickled by its
        # class's name, which spawned workers cannot find ("Can't pickle local object"); the fix
        # added workers.
        Invalid(_LOCAL_FUNCTION.format(before="    class Collator:\n        def __call__(self, b):\n"
                                              "            return torch.stack(b)\n", ds="ds",
                                       options=", collate_fn=Collator()"),
                fixed=NO_FIX, message="its `collate_fn` is an instance of a class defined inside a function, "
                                      "which a worker started by spawn or forkserver (macOS, Windows, Linux from "
                                      "Python 3.14) cannot unpickle; define the class at the module's top level"),
        Invalid(_LOCAL_FUNCTION.format(before="    class Collator:\n        def __call__(self, b):\n"
                                              "            return torch.stack(b)\n    collate = Collator()\n",
                                       ds="ds", options=", collate_fn=collate"),
                fixed=NO_FIX, message="an instance of a class defined inside a function"),
        # ... a class at the module's top level pickles by name: fixed.
        Invalid(_LOCAL_FUNCTION.format(before="", ds="ds", options=", collate_fn=Collator()").replace(
                    "def main(", "class Collator:\n    def __call__(self, b):\n        return torch.stack(b)\ndef main("),
                fixed=_LOCAL_FUNCTION.format(before="", ds="\n        ds, collate_fn=Collator()",
                                             options=", num_workers=min(8, os.cpu_count() or 1)\n    ").replace(
                    "def main(", "class Collator:\n    def __call__(self, b):\n        return torch.stack(b)\ndef main(")),
        Invalid(_LOCAL_FUNCTION.format(before="    seed = lambda i: None\n", ds="ds", options=", worker_init_fn=seed"),
                fixed=NO_FIX, message="its `worker_init_fn` is a lambda"),
        Invalid(_LOCAL_FUNCTION.format(before="", ds="Mapped(base, lambda t: t * 2)", options=""),
                fixed=NO_FIX, message="its dataset is built with `lambda t: t * 2`, a lambda"),
        Invalid(_LOCAL_FUNCTION.format(before="    tf = T.Compose([T.ToTensor(), T.Lambda(lambda x: x.repeat(3, 1, 1))])\n",
                                       ds="ImageFolder(root, transform=tf)", options=""),
                fixed=NO_FIX, message="a lambda"),
        # A lambda a builtin only calls (`map`) while the data is built is not kept: fixed.
        Invalid(_LOCAL_FUNCTION.format(before="", ds="TensorDataset(torch.tensor(list(map(lambda r: r * 2, rows))))",
                                       options=""),
                fixed=_LOCAL_FUNCTION.format(before="", ds="\n        TensorDataset(torch.tensor(list(map(lambda r: r * 2, rows))))",
                                             options=",\n        num_workers=min(8, os.cpu_count() or 1),\n    ")),
        Invalid(_TOP_LEVEL, fixed=NO_FIX, message='no `if __name__ == "__main__":` guard'),
        # A framework that trains at the top level (Lightning's fit, transformers' train): its
        # loader's workers would import the script again too.
        Invalid("import lightning as L\nfrom torch.utils.data import DataLoader\nloader = DataLoader(ds, batch_size=8)\n"
                "L.Trainer(max_epochs=3).fit(model, loader)\n", fixed=NO_FIX,
                message='no `if __name__ == "__main__":` guard'),
        Invalid("from transformers import Trainer, TrainingArguments\nargs = TrainingArguments('out')\n"
                "trainer = Trainer(model=model, args=args, train_dataset=ds)\ntrainer.train()\n", fixed=NO_FIX,
                message='no `if __name__ == "__main__":` guard'),
        # ... also when the top level hands the training function to what calls it, or calls the
        # command-line app it is registered with.
        Invalid(_TOP_LEVEL.replace("main()\n", "import fire\nfire.Fire(main)\n"), fixed=NO_FIX,
                message='no `if __name__ == "__main__":` guard'),
        Invalid(_TOP_LEVEL.replace("main()\n", "import threading\nthreading.Thread(target=main).start()\n"),
                fixed=NO_FIX, message='no `if __name__ == "__main__":` guard'),
        Invalid(_TOP_LEVEL.replace("def main():", "import typer\napp = typer.Typer()\n@app.command()\ndef main():")
                .replace("main()\n", "app()\n"), fixed=NO_FIX, message='no `if __name__ == "__main__":` guard'),
        Invalid(_GUARDED, fixed="import os\n\n" + _GUARDED.replace(
            "DataLoader(ds)", "DataLoader(ds, num_workers=min(8, os.cpu_count() or 1))")),
        # Batches made on the device: reported, with no workers added (they cannot start CUDA).
        Invalid(_ON_DEVICE.format(options=""), fixed=NO_FIX, message="move those copies into the training loop"),
        Invalid(_STORED_ON_DEVICE.format(options=""), fixed=NO_FIX, message="move those copies into the training loop"),
        # An iterable dataset of this module that does not split its stream by worker: each worker
        # would yield every sample; with get_worker_info (here, or in a function it calls) or a
        # worker_init_fn, workers are added.
        Invalid(_STREAM.format(helper="", body=_UNSHARDED, options=""), fixed=NO_FIX,
                message="`Stream` is an IterableDataset that does not split its stream between workers"),
        Invalid(_STREAM.format(helper="", body=_UNSHARDED, options="").replace(
                    "class Stream(IterableDataset)", "class Base(IterableDataset):\n    pass\nclass Stream(Base)"),
                fixed=NO_FIX, message="each worker would replay the whole stream"),
        Invalid(_STREAM.format(helper="", body=_SHARDED, options=""),
                fixed=_STREAM.format(helper="", body=_SHARDED, options=_WORKERS_SET)),
        # The worker info read only to seed a per-worker RNG, or asked for by a method `__iter__`
        # never calls: every worker still yields every sample (the tester's 32 samples became 64).
        Invalid(_STREAM.format(helper="", body=_SEEDED, options=""), fixed=NO_FIX,
                message="reads no worker `id` or `num_workers`"),
        Invalid(_STREAM.format(helper="", body=_UNSHARDED + _LEFTOVER, options=""), fixed=NO_FIX,
                message="does not split its stream between workers"),
        # Split in a method `__iter__` calls, or by the call's own `id`: workers are added.
        Invalid(_STREAM.format(helper="", body=_UNSHARDED.replace("self.paths", "self._mine()") + _LEFTOVER.replace(
                    "_unused", "_mine"), options=""),
                fixed=_STREAM.format(helper="", body=_UNSHARDED.replace("self.paths", "self._mine()") + _LEFTOVER.replace(
                    "_unused", "_mine"), options=_WORKERS_SET)),
        Invalid(_STREAM.format(helper="", body=_UNSHARDED.replace("self.paths", "self.paths[get_worker_info().id::2]"),
                               options=""),
                fixed=_STREAM.format(helper="", body=_UNSHARDED.replace("self.paths", "self.paths[get_worker_info().id::2]"),
                                     options=_WORKERS_SET)),
        Invalid(_STREAM.format(helper=_SHARD_HELPER, body=_UNSHARDED.replace("self.paths", "shard(self.paths)"), options=""),
                fixed=_STREAM.format(helper=_SHARD_HELPER, body=_UNSHARDED.replace("self.paths", "shard(self.paths)"),
                                     options=_WORKERS_SET)),
        Invalid(_STREAM.format(helper="", body=_UNSHARDED, options=", worker_init_fn=split_files"),
                fixed=_STREAM.format(helper="", body=_UNSHARDED, options=", worker_init_fn=split_files, num_workers=4"),
                options={"num-workers": 4}),
        # A dataset built from tensors on the device: workers cannot use them either.
        Invalid(_TENSORS_ON_DEVICE.format(data="X = torch.randn(1024, 8).to(device)\nY = torch.randn(1024, 1).to(device)\n",
                                          dataset="TensorDataset(X, Y)", options=""),
                fixed=NO_FIX, message="its dataset holds tensors on the device"),
        Invalid(_TENSORS_ON_DEVICE.format(data="", dataset="TensorDataset(xs.cuda(), ys.cuda())", options=", shuffle=True"),
                fixed=NO_FIX, message="keep the dataset on the CPU"),
        Invalid(_TENSORS_ON_DEVICE.format(data="", dataset="TensorDataset(*[t.to(device) for t in (X, Y)])", options=""),
                fixed=NO_FIX, message="its dataset holds tensors on the device"),
        Invalid(
            "import os\nfrom torch.utils.data import DataLoader\nloader = DataLoader(ds, batch_size=8)\n",
            fixed="import os\nfrom torch.utils.data import DataLoader\n"
            "loader = DataLoader(ds, batch_size=8, num_workers=min(8, os.cpu_count() or 1))\n",
        ),
        Invalid(
            "from torch.utils.data import DataLoader as DL\nloader = DL(ds, num_workers=0)\n",
            fixed="import os\n\nfrom torch.utils.data import DataLoader as DL\n"
            "loader = DL(ds, num_workers=min(8, os.cpu_count() or 1))\n",
        ),
        Invalid(
            "import torch.utils.data as tud\nloader = tud.DataLoader(ds)\n",
            fixed="import torch.utils.data as tud\nloader = tud.DataLoader(ds, num_workers=4)\n",
            options={"num-workers": 4},
        ),
        Invalid("from torch.utils import data\nloader = data.DataLoader(ds, shuffle=True)\n",
                fixed="import os\n\nfrom torch.utils import data\n"
                      "loader = data.DataLoader(ds, shuffle=True, num_workers=min(8, os.cpu_count() or 1))\n"),
        # A positional 0 is replaced where it stands: a keyword beside it would raise TypeError.
        Invalid("import os\nfrom torch.utils.data import DataLoader\nloader = DataLoader(ds, 4, True, None, None, 0)\n",
                fixed="import os\nfrom torch.utils.data import DataLoader\n"
                      "loader = DataLoader(ds, 4, True, None, None, min(8, os.cpu_count() or 1))\n"),
        Invalid("from torch.utils.data.dataloader import DataLoader\nloader = DataLoader(ds)\n",
                fixed="import os\n\nfrom torch.utils.data.dataloader import DataLoader\n"
                      "loader = DataLoader(ds, num_workers=min(8, os.cpu_count() or 1))\n"),
        # A loader kept under a name and used again may be iterated there; `iter()` alone may be drawn
        # from many times.
        Invalid("from torch.utils.data import DataLoader\nloader = DataLoader(ds)\nexample = next(iter(loader))\n"
                "train(loader)\n",
                fixed="import os\n\nfrom torch.utils.data import DataLoader\n"
                      "loader = DataLoader(ds, num_workers=min(8, os.cpu_count() or 1))\nexample = next(iter(loader))\n"
                      "train(loader)\n"),
        Invalid("from torch.utils.data import DataLoader\nbatches = iter(DataLoader(ds))\n",
                fixed="import os\n\nfrom torch.utils.data import DataLoader\n"
                      "batches = iter(DataLoader(ds, num_workers=min(8, os.cpu_count() or 1)))\n"),
        Invalid(
            "from torch.utils.data import DataLoader\nclass MyLoader(DataLoader):\n    pass\nloader = MyLoader(ds)\n",
            fixed="import os\n\nfrom torch.utils.data import DataLoader\nclass MyLoader(DataLoader):\n    pass\n"
            "loader = MyLoader(ds, num_workers=min(8, os.cpu_count() or 1))\n",
        ),
        Invalid("from torchdata.stateful_dataloader import StatefulDataLoader\nloader = StatefulDataLoader(ds)\n",
                fixed="import os\n\nfrom torchdata.stateful_dataloader import StatefulDataLoader\n"
                      "loader = StatefulDataLoader(ds, num_workers=min(8, os.cpu_count() or 1))\n"),
        # The Trainer builds its DataLoader from TrainingArguments: `dataloader_num_workers`, 0 by default.
        Invalid("import os\nfrom transformers import TrainingArguments\nargs = TrainingArguments('out', bf16=True)\n"
                "if __name__ == '__main__':\n    Trainer(model, args).train()\n",
                fixed="import os\nfrom transformers import TrainingArguments\n"
                      "args = TrainingArguments(\n    'out', bf16=True, dataloader_num_workers=min(8, os.cpu_count() or 1)\n)\n"
                      "if __name__ == '__main__':\n    Trainer(model, args).train()\n",
                message="The Trainer's DataLoader loads batches in the training process; set `dataloader_num_workers="),
        Invalid("from transformers import TrainingArguments as TA\nTrainer(model, TA('out'))\n",
                fixed="import os\n\nfrom transformers import TrainingArguments as TA\n"
                      "Trainer(model, TA('out', dataloader_num_workers=min(8, os.cpu_count() or 1)))\n",
                message="The Trainer's"),
        Invalid("from trl import SFTConfig\nSFTTrainer(model, args=SFTConfig(output_dir='out', dataloader_num_workers=0))\n",
                fixed="from trl import SFTConfig\nSFTTrainer(model, args=SFTConfig(output_dir='out', dataloader_num_workers=2))\n",
                options={"num-workers": 2}),
        # The worker count of a command-line option whose default is 0: the default is fixed.
        Invalid(_OPTION.format(flag="'--num-workers'", default="0"),
                fixed=_OPTION.format(flag="'--num-workers'", default="min(8, os.cpu_count() or 1)").replace(
                    "import argparse\n", "import argparse\nimport os\n"),
                message="unless `--num-workers` is given (it defaults to 0)"),
        Invalid(_OPTION.format(flag="'-j', dest='num_workers'", default="0"),
                fixed=_OPTION.format(flag="'-j', dest='num_workers'", default="4"), options={"num-workers": 4}),
        # A subclass that forwards *args/**kwargs keeps DataLoader's signature (yolov5's InfiniteDataLoader).
        Invalid("from torch.utils.data import DataLoader\nclass Loop(DataLoader):\n    def __init__(self, *args, **kwargs):\n"
                "        super().__init__(*args, **kwargs)\nloader = Loop(ds, batch_size=4)\n",
                fixed="import os\n\nfrom torch.utils.data import DataLoader\nclass Loop(DataLoader):\n"
                      "    def __init__(self, *args, **kwargs):\n        super().__init__(*args, **kwargs)\n"
                      "loader = Loop(ds, batch_size=4, num_workers=min(8, os.cpu_count() or 1))\n"),
        # A `**options` dict built in view without a worker count: the keyword is added beside it.
        Invalid("import os\nfrom torch.utils.data import DataLoader\ndef main():\n    kw = dict(batch_size=32, shuffle=True)\n"
                "    return DataLoader(ds, **kw)\n",
                fixed="import os\nfrom torch.utils.data import DataLoader\ndef main():\n    kw = dict(batch_size=32, shuffle=True)\n"
                      "    return DataLoader(ds, **kw, num_workers=min(8, os.cpu_count() or 1))\n"),
        # A module's `**options` dict read in a function (before, only a dict built in the same
        # function was followed, and the loader was not reported): the keyword is added beside it
        # when the dict lacks it; an entry it holds is changed at the top level where it is given
        # (a keyword beside it would raise "got multiple values for keyword argument").
        Invalid("import os\nfrom torch.utils.data import DataLoader\nKW = dict(batch_size=32, shuffle=True)\n"
                "def main():\n    return DataLoader(ds, **KW)\n",
                fixed="import os\nfrom torch.utils.data import DataLoader\nKW = dict(batch_size=32, shuffle=True)\n"
                      "def main():\n    return DataLoader(ds, **KW, num_workers=min(8, os.cpu_count() or 1))\n"),
        Invalid("import os\nfrom torch.utils.data import DataLoader\nKW = {'batch_size': 32, 'num_workers': 0}\n"
                "def main():\n    return DataLoader(ds, **KW)\n",
                fixed="import os\nfrom torch.utils.data import DataLoader\n"
                      "KW = {'batch_size': 32, 'num_workers': min(8, os.cpu_count() or 1)}\n"
                      "def main():\n    return DataLoader(ds, **KW)\n"),
        # ... unpacked by a second loader too (changing it would change that one): reported, no fix.
        Invalid("import os\nfrom torch.utils.data import DataLoader\nKW = {'batch_size': 32, 'num_workers': 0}\n"
                "def main():\n    return DataLoader(ds, **KW)\ndef probe():\n    return DataLoader(ds, **KW)\n",
                fixed=NO_FIX),
        # A variable assigned 0 once: the assignment is fixed, for every loader reading it.
        Invalid("import os\nfrom torch.utils.data import DataLoader\nNUM_WORKERS = 0\ndef main():\n"
                "    train = DataLoader(ds, num_workers=NUM_WORKERS)\n    val = DataLoader(vs, num_workers=NUM_WORKERS)\n",
                fixed="import os\nfrom torch.utils.data import DataLoader\nNUM_WORKERS = min(8, os.cpu_count() or 1)\n"
                      "def main():\n    train = DataLoader(ds, num_workers=NUM_WORKERS)\n"
                      "    val = DataLoader(vs, num_workers=NUM_WORKERS)\n",
                message="in the training process (`NUM_WORKERS` is 0); set `NUM_WORKERS = min(8, os.cpu_count() or 1)`"),
        Invalid("from torch.utils.data import DataLoader\ndef main():\n    workers = 0\n"
                "    return DataLoader(ds, num_workers=workers)\n",
                fixed="from torch.utils.data import DataLoader\ndef main():\n    workers = 2\n"
                      "    return DataLoader(ds, num_workers=workers)\n", options={"num-workers": 2}),
        # A configuration class's default: the default is fixed.
        Invalid(_CONFIG.format(default="0", more=""),
                fixed=_CONFIG.format(default="min(8, os.cpu_count() or 1)", more=""),
                message="unless configured otherwise (`Config.num_workers` defaults to 0); default `Config.num_workers`"),
        Invalid(_CONFIG.format(default="field(default=0, metadata={'help': 'workers'})", more=""),
                fixed=_CONFIG.format(default="field(default=4, metadata={'help': 'workers'})", more=""),
                options={"num-workers": 4}),
        # A configuration built by a command-line parser from the class (tyro, pyrallis, HfArgumentParser).
        Invalid("from dataclasses import dataclass\nfrom torch.utils.data import DataLoader\n@dataclass\nclass Config:\n"
                "    num_workers: int = 0\ncfg = tyro.cli(Config)\nloader = DataLoader(ds, num_workers=cfg.num_workers)\n",
                # `import os` joins the standard-library section, before its `from` imports (isort).
                fixed="import os\nfrom dataclasses import dataclass\nfrom torch.utils.data import DataLoader\n@dataclass\n"
                "class Config:\n    num_workers: int = min(8, os.cpu_count() or 1)\ncfg = tyro.cli(Config)\n"
                "loader = DataLoader(ds, num_workers=cfg.num_workers)\n",
                message="`Config.num_workers` defaults to 0"),
        # ... unpacked from HfArgumentParser's tuple, at the position of the class.
        Invalid("from dataclasses import dataclass\nfrom torch.utils.data import DataLoader\n@dataclass\nclass Data:\n"
                "    num_workers: int = 0\ndef main():\n    model_args, data = HfArgumentParser((ModelArgs, Data))"
                ".parse_args_into_dataclasses()\n    loader = DataLoader(ds, num_workers=data.num_workers)\n",
                message="`Data.num_workers` defaults to 0"),
        Invalid("from torch.utils.data import DataLoader\nclass CFG:\n    num_workers = 0\n"
                "loader = DataLoader(ds, num_workers=CFG.num_workers)\n",
                fixed="import os\n\nfrom torch.utils.data import DataLoader\nclass CFG:\n"
                      "    num_workers = min(8, os.cpu_count() or 1)\nloader = DataLoader(ds, num_workers=CFG.num_workers)\n",
                message="`CFG.num_workers` defaults to 0"),
    ]

    def check_loader(self, call: cst.Call) -> None:
        ctx = self.ctx
        workers = workers_value(ctx, call)
        if workers != 0 or isinstance(workers, bool):
            return
        if batches_made_on_device(ctx, call):
            # Workers cannot start CUDA: the copies must leave the dataset or collate_fn first.
            if dataset_on_device(ctx, call):
                why = ("its dataset holds tensors on the device, which workers cannot use; keep the dataset on the "
                       "CPU, move each batch in the training loop")
            else:
                why = ("its dataset or collate_fn puts them on the device, which workers cannot do; move those copies "
                       "into the training loop")
            self.report(call, f"{_subject(ctx, call)} loads batches in the training process, and {why}, then set "
                              "`num_workers`")
            return
        replay = workers_advice(ctx, call)
        if replay is not None:
            self.report(call, f"{_subject(ctx, call)} loads batches in the training process; {replay}, then set "
                              f"`num_workers`")
            return
        self.report(
            call,
            setting_advice(ctx, call, "num_workers", workers_to_set(self),
                           f"{_subject(ctx, call)} loads batches in the training process",
                           "so workers prepare the next batches while the GPU trains"),
            add_workers_fix(self, call),
        )


# One function that both loaders go through, stepping only when handed an optimizer: `a` trains,
# `b` does not (their names do not say).
_SHARED_EPOCH = (
    "from torch.utils.data import DataLoader\n"
    "def run_epoch(model, loader, device, optimizer=None):\n"
    "    training = optimizer is not None\n"
    "    for x, y in loader:\n"
    "        x = x.to(device)\n"
    "        loss = model(x, y)\n"
    "        if training:\n"
    "            loss.backward()\n"
    "            optimizer.step()\n"
    "a = DataLoader(ds, batch_size=8, shuffle=True{a})\n"
    "b = DataLoader(vs, batch_size=8, shuffle=True{b})\n"
    "for epoch in range(3):\n"
    "    run_epoch(model, a, device, opt)\n"
    "    run_epoch(model, b, device)\n"
)
# The same, leaving the loop before the step when not training (`if not training: continue`).
_SHARED_EPOCH_GUARD = _SHARED_EPOCH.replace(
    "        if training:\n            loss.backward()\n            optimizer.step()\n",
    "        if not training:\n            continue\n        loss.backward()\n        optimizer.step()\n")
# A trainer class: the loader built in __init__, wrapped in a progress bar by the method that
# trains, which fit() calls every epoch.
_TRAINER_CLASS = (
    "from torch.utils.data import DataLoader\n"
    "from tqdm import tqdm\n"
    "class Trainer:\n"
    "    def __init__(self, ds):\n"
    "        self.train_loader = DataLoader(ds, num_workers=4{options})\n"
    "    def train_epoch(self):\n"
    "        pbar = tqdm(self.train_loader)\n"
    "        for x, y in pbar:\n"
    "            loss = self.model({x}, y)\n"
    "            loss.backward()\n"
    "            self.opt.step()\n"
    "    def fit(self, epochs):\n"
    "        for epoch in range(epochs):\n"
    "            self.train_epoch()\n"
)
# A trainer class whose fit() takes the loader, built and called by the script.
_FIT_METHOD = (
    "from torch.utils.data import DataLoader\n"
    "class Trainer:\n"
    "    def fit(self, loader, epochs):\n"
    "        for epoch in range(epochs):\n"
    "            for x, y in loader:\n"
    "                loss = self.model({x}, y)\n"
    "                loss.backward()\n"
    "                self.opt.step()\n"
    "loader = DataLoader(ds, num_workers=4{options})\n"
    "{call}\n"
)
# One loop over (phase, loader) pairs, stepping in the "train" phase only: `a` trains, `b` does not.
_PHASES = (
    "from torch.utils.data import DataLoader\n"
    "a = DataLoader(ds, batch_size=8, shuffle=True{a})\n"
    "b = DataLoader(vs, batch_size=8, shuffle=True{b})\n"
    "for epoch in range(3):\n"
    "    for phase, loader in [('train', a), ('val', b)]:\n"
    "        for x, y in loader:\n"
    "            loss = model(x.cuda(), y)\n"
    "            if phase == 'train':\n"
    "                loss.backward()\n"
    "                opt.step()\n"
)
# A training function nested in main, reading main's pinned loader.
_CLOSURE = (
    "from torch.utils.data import DataLoader\n"
    "def main(epochs):\n"
    "    loader = DataLoader(ds, num_workers=2, pin_memory=True)\n"
    "    def train_epoch():\n"
    "        for x, y in loader:\n"
    "            model({x}, y).backward()\n"
    "            opt.step()\n"
    "    for epoch in range(epochs):\n"
    "        train_epoch()\n"
)
# A dict of loaders picked by phase, stepping in the "train" phase only.
_PHASE_KEYS = (
    "from torch.utils.data import DataLoader\n"
    "loaders = {{\n"
    "    'train': DataLoader(ds, shuffle=True{a}),\n"
    "    'val': DataLoader(vs, shuffle=True{b}),\n"
    "}}\n"
    "for epoch in range(3):\n"
    "    for phase in ['train', 'val']:\n"
    "        for x, y in loaders[phase]:\n"
    "            loss = model(x.cuda(), y)\n"
    "            if phase == 'train':\n"
    "                loss.backward()\n"
    "                opt.step()\n"
)
# The same, the loader picked into a name first; and the pairs loop over zipped displays.
_PHASE_PICKED = _PHASE_KEYS.replace("        for x, y in loaders[phase]:\n",
                                    "        loader = loaders[phase]\n        for x, y in loader:\n")
_PHASES_ZIP = _PHASES.replace("[('train', a), ('val', b)]", "zip(['train', 'val'], [a, b])")
# Loaders returned in a dict by a helper, the training one picked by its key.
_RETURNED_DICT = (
    "from torch.utils.data import DataLoader\n"
    "def build(cfg):\n"
    "    return {{\n"
    "        'train': DataLoader(cfg.train, shuffle=True{a}),\n"
    "        'val': DataLoader(cfg.val{b}),\n"
    "    }}\n"
    "def main(cfg):\n"
    "    loaders = build(cfg)\n"
    "    train_loader = loaders['train']\n"
    "    for epoch in range(10):\n"
    "        for x, y in train_loader:\n"
    "            loss = model(x.cuda(), y)\n"
    "            loss.backward()\n"
    "            opt.step()\n"
)
# Step-based training that draws batches with next() and starts the iterator again at the end.
_GROWN = ("from torch.utils.data import DataLoader\ndef main(items, more, losses, x, y, i):\n    ds = {ds}\n"
          "    loader = DataLoader(ds, num_workers=2)\n    for epoch in range(3):\n        for x in loader:\n"
          "            step(x)\n        {grow}\n")
_CURRICULUM = ("import random\nclass Curriculum:\n    def __init__(self, items):\n        self.all = items\n"
               "        self.items = items[:8]\n    def grow(self, epoch):\n        self.items = self.all[: 8 * (epoch + 1)]\n"
               "    def resample(self):\n        random.shuffle(self.items)\n"
               "    def describe(self):\n        print(len(self.items))\n")
_HELPER = ("import torch\nfrom torch.utils.data import DataLoader\ndef to_device(t):\n    return {move}\n"
           "loader = DataLoader(ds, num_workers=2, pin_memory=True)\n"
           "for x, y in loader:\n    {body}\n    loss = model(x, y)\n    loss.backward()\n    opt.step()\n")
_DRAWN = (
    "from torch.utils.data import DataLoader\n"
    "loader = DataLoader(ds, shuffle=True{pin})\n"
    "data_iter = iter(loader)\n"
    "for step in range(1000):\n"
    "    try:\n"
    "        x, y = next(data_iter)\n"
    "    except StopIteration:\n"
    "        data_iter = iter(loader)\n"
    "        x, y = next(data_iter)\n"
    "    loss = model({x}, y)\n"
    "    loss.backward()\n"
    "    opt.step()\n"
)
# Two loaders held in one dict and picked by their keys; only "a" trains.
_BY_KEY = (
    "from torch.utils.data import DataLoader\n"
    "loaders = {{'a': DataLoader(ds, shuffle=True{pin_a}), 'b': DataLoader(vs, shuffle=True{pin_b})}}\n"
    "for epoch in range(3):\n"
    "    for x in loaders['a']:\n"
    "        model({move}).backward()\n"
    "        opt.step()\n"
    "    for x in loaders['b']:\n"
    "        model({move})\n"
)
# MNIST-style functions that the epoch loop hands the loaders to.
_HANDED = (
    "from torch.utils.data import DataLoader\n"
    "def train(model, device, loader, optimizer):\n"
    "    for x, y in loader:\n"
    "        x, y = x.to(device), y.to(device)\n"
    "        loss = model(x, y)\n"
    "        loss.backward()\n"
    "        optimizer.step()\n"
    "def check(model, device, loader):\n"
    "    for x, y in loader:\n"
    "        score(model(x.to(device)), y.to(device))\n"
    "def main(model, device, optimizer):\n"
    "    loader_a = DataLoader(ds, num_workers=2{pin})\n"
    "    loader_b = DataLoader(ds2, num_workers=2)\n"
    "    for epoch in range(3):\n"
    "        train(model, device, loader_a, optimizer)\n"
    "        check(model, device, loader_b)\n"
)

# PyTorch's MNIST example: the loader's settings in a dict, some only on CUDA.
_MNIST = (
    "from torch.utils.data import DataLoader\ndef train(model, device, loader, opt):\n"
    "    for data, target in loader:\n        data = {x}\n        loss = model(data, target)\n"
    "        loss.backward()\n        opt.step()\ndef main(use_cuda):\n    train_kwargs = {{'batch_size': 64}}\n"
    "    if use_cuda:\n        train_kwargs.update({{'num_workers': 1, 'pin_memory': True, 'shuffle': True}})\n"
    "    loader = DataLoader(ds, **train_kwargs)\n    for epoch in range(3):\n        train(model, device, loader, opt)\n"
)

# ... with pin_memory given only where the dict is built (the cases change it there).
_MNIST_UNPINNED = _MNIST.format(x="data.to(device)").replace("'pin_memory': True, ", "")


class DataLoaderNoPinMemory(DataLoaderRule):
    code = "TL102"
    name = "dataloader-no-pin-memory"
    summary = "Training DataLoader without `pin_memory=True` while batches move to an accelerator"
    source = "§3.3"
    fix_applicability = "safe"
    docs = """
## What it does
Flags a training `DataLoader` without `pin_memory=True` whose batches the training loop moves to
an accelerator (`.to(device)`, `.cuda()`, or a batch helper such as torchtune's
`batch_to_device(batch, device)` or accelerate's `send_to_device`).

Decided per loader. A loader iterated in a loop of this module is flagged only when that loop's
own batches (its target, values computed from it, and module-local functions they are handed
to, up to three calls down) reach such a copy; one whose batches stay on the CPU is not. A loader
a module-local function returns counts as iterated by its caller's loops over the name the call
binds it to (by position in a returned tuple), unless the caller hands that name on. A loader
handed to a function that other loaders go through too (`run_epoch(model, train_loader, opt)`,
`run_epoch(model, val_loader)`) trains when that function's step is reached on its calls: the
`if` conditions around the step are read with what each call passes (`if optimizer is not None:`
is false on the call that passes no optimizer), and so are the guards that leave before it (`if
not train: continue`); so are they for a loop over pairs that binds it
(`for phase, loader in [("train", train_loader), ("val", val_loader)]`: `if phase == "train":` is
false for the validation loader). A loader
not iterated here (returned, handed to a framework or to a function's parameter) is flagged when
the hot loop copies something that no visible loop over a loader of the file leads to, unless
its name, or the function returning it (Lightning's `val_dataloader()`), says it evaluates
(whole words such as `val`, `eval`, `test`, or a stem run together with a loader word, as in
`valloader`; `device_loader` and `retrieval_loader` only contain one).

Frameworks copy the batches themselves. A loader a Lightning Trainer trains on (handed to
`trainer.fit`, or returned by a LightningModule's or LightningDataModule's `train_dataloader()`)
is flagged unless the file's Trainers train on the CPU (`accelerator="cpu"`); transformers'
Trainer pins by default, so only `TrainingArguments(dataloader_pin_memory=False)` is flagged, and
not with `use_cpu=True`. A training loader an accelerate `Accelerator` prepares is flagged unless
it runs on the CPU (`cpu=True`) or places nothing (`device_placement=False`); the message adds
`DataLoaderConfiguration(non_blocking=True)`, without which accelerate's copies still block.

Not a loader whose batches come out of it on the device: its `collate_fn`, or its dataset's class
in this module (`__getitem__`, `__iter__`, the methods they call, or `__init__` storing the data
there), moves tensors to a device; or its dataset is built from tensors on the device
(`TensorDataset(X.to(device), Y.to(device))`, `.cuda()`, a tensor made with `device=` other than
the CPU, what `torch.load` restores with a `map_location` other than the CPU and its items
(`data = torch.load(path, map_location=device)`, `TensorDataset(data["x"], data["y"])`), or with
no `map_location` from a file this module `torch.save`s such tensors into (a path built from the
same parts: they come back on the device they were saved from), a list
appended such tensors, what `torch.cat` or a model makes of them, what a function of this module
returns when its returns are such tensors, two calls down (`feats = extract(encoder, images)`
returning `torch.cat` of `encoder(x.to(device))`), a name assigned such a tensor on some path or
unpacked from a split of one (`a, b = torch.split(X, 20)`, `X.chunk(2)`) or from a comprehension or
`map` that moves them (`X, Y = map(lambda t: t.to(device), (X, Y))`), any dataset class handed
one, `Subset`/`ConcatDataset` or a `random_split` of such a dataset (`tr, va = random_split(full,
...)`), or a dataset given them as an attribute after it is built (`ds.tensors = tuple(t.to(device)
for t in ds.tensors)`). There is no pageable
copy to speed up, and pinning CUDA tensors raises (`cannot pin 'torch.cuda.FloatTensor'`).

A setting written as a name is read as TL101 describes: `pin_memory=PIN` with `PIN = False`,
`pin_memory=cfg.pin_memory` whose field defaults to False, `pin_memory=args.pin_memory` whose
option is off by default (`default=False`, or a `store_true` switch, and no `set_defaults` turns
it on: the run copies from pageable memory unless the flag is given). The fix changes the value
where it is written; a `store_true` switch becomes `action=argparse.BooleanOptionalAction,
default=True`, so `--pin-memory` still works and `--no-pin-memory` turns pinning off.

## Why is this bad?
Copies from pageable host memory go through a staging buffer and cannot overlap with compute.
Pinned (page-locked) batches copy faster and allow `non_blocking=True` transfers.

## Example
```python
loader = DataLoader(ds, batch_size=32, num_workers=4)
for x, y in loader:
    x, y = x.cuda(), y.cuda()
```

## Use instead
```python
loader = DataLoader(ds, batch_size=32, num_workers=4, pin_memory=True)
```

## Fix safety
Safe: pinning changes where host memory lives, not what is computed. A `pin_memory` passed by
position is replaced where it stands. Unsafe when a tensor the dataset is built from comes from a
call of a function of this module that copies tensors to a device somewhere in it, and what it
returns is not seen to be on the device: it may be (pinning would then raise); and when the
dataset is given attributes after it is built (`ds.tensors = tuple(prepare(t) for t in ds.tensors)`),
since what it then holds is not all seen.
"""
    # No hot-loop prefilter: a script that hands its loader to a framework's Trainer has no loop.
    triggers = TRAINER_TRIGGERS
    trainer_settings = True
    _LOOP = "from torch.utils.data import DataLoader\n{loader}\nfor x, y in loader:\n    x = x.to(device)\n    loss = model(x, y)\n    loss.backward()\n    opt.step()\n"
    _LIGHTNING = ("import lightning as L\nfrom torch.utils.data import DataLoader\nloader = DataLoader(ds{pin})\n"
                  "trainer = L.Trainer({settings})\ntrainer.fit(model, loader)\n")
    _HF = "from transformers import Trainer, TrainingArguments\nTrainer(model, TrainingArguments('out'{settings}))\n"
    # A loader whose pin_memory is a command-line option, for _LOOP's `loader`.
    _PIN_OPTION = ("import argparse\nparser = argparse.ArgumentParser()\nparser.add_argument({option})\n"
                   "args = parser.parse_args()\nloader = DataLoader(ds, num_workers=2, pin_memory=args.{dest})")
    _PREPARED = ("from accelerate import Accelerator\nfrom torch.utils.data import DataLoader\n"
                 "def get_dataloaders(ds, vds):\n    train_dataloader = DataLoader(ds, shuffle=True{pin})\n"
                 "    eval_dataloader = DataLoader(vds)\n    return train_dataloader, eval_dataloader\n"
                 "def train(model, opt, ds, vds):\n    accelerator = Accelerator()\n"
                 "    train_dataloader, eval_dataloader = get_dataloaders(ds, vds)\n"
                 "    model, opt, train_dataloader, eval_dataloader = accelerator.prepare(\n"
                 "        model, opt, train_dataloader, eval_dataloader)\n"
                 "    for batch in train_dataloader:\n        accelerator.backward(model(batch))\n        opt.step()\n"
                 "    for batch in eval_dataloader:\n        evaluate(model, batch)\n")
    _ACCELERATE = ("from accelerate import Accelerator\nfrom torch.utils.data import DataLoader\n"
                   "accelerator = Accelerator({settings})\nloader = DataLoader(ds, shuffle=True{pin})\n"
                   "model, opt, loader = accelerator.prepare(model, opt, loader)\nfor batch in loader:\n"
                   "    accelerator.backward(model(batch))\n    opt.step()\n")
    valid = [
        Valid(_LOOP.format(loader="loader = DataLoader(ds, num_workers=2, pin_memory=True)")),
        Valid("from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=2)\nfor x, y in loader:\n    loss = model(x, y)\n    loss.backward()\n    opt.step()\n"),
        Valid(_LOOP.format(loader="loader = DataLoader(ds, num_workers=2, **kw)")),
        # A helper that moves to the CPU is not a copy to an accelerator.
        Valid(_LOOP.replace("x = x.to(device)", "x = move_to_cpu(x)").format(loader="loader = DataLoader(ds)")),
        Valid(_LOOP.format(loader="val_loader = DataLoader(ds, num_workers=2)\nloader = DataLoader(ds, num_workers=2, pin_memory=True)")),
        # A loader only iterated by a loop without optimizer steps is not a training loader
        # (ecosystem: pytorch-tabnet's predict()).
        Valid(_LOOP.format(loader="loader = DataLoader(ds, num_workers=2, pin_memory=True)") +
              "def predict(X):\n    dl = DataLoader(X, batch_size=64)\n    for batch in dl:\n"
              "        out = model(batch.to(device))\n"),
        # A sequential sampler marks an evaluation loader (ecosystem: simpletransformers).
        Valid(_LOOP.format(loader="loader = DataLoader(ds, num_workers=2, pin_memory=True)") +
              "eval_sampler = SequentialSampler(eval_ds)\nscore_loader = DataLoader(eval_ds, sampler=eval_sampler)\n"),
        # ... also imported under another name (the hot loop's copy may be of any unseen loader's batches).
        Valid("from torch.utils.data import DataLoader, SequentialSampler as InOrder\ndef fit(dl):\n"
              "    for x in dl:\n        model(x.cuda()).backward()\n        opt.step()\n"
              "score_loader = DataLoader(ds, num_workers=2, sampler=InOrder(ds))\n"),
        # Batches the dataset already puts on the device: nothing to pin (pinning them raises).
        Valid(_ON_DEVICE.format(options=", num_workers=0")),
        Valid(_STORED_ON_DEVICE.format(options="")),
        # Built from tensors on the device: moved there (`X.to(device)`, `.cuda()`), made there
        # (`device=`), or a dataset of such a dataset (`Subset`, `ConcatDataset`).
        Valid(_TENSORS_ON_DEVICE.format(data="X = torch.randn(1024, 8).to(device)\nY = torch.randn(1024, 1).to(device)\n",
                                        dataset="TensorDataset(X, Y)", options=", num_workers=0")),
        Valid(_TENSORS_ON_DEVICE.format(data="", dataset="TensorDataset(xs.cuda(), ys.cuda().float())", options="")),
        # ... through a function of the module, or an attribute the class holds them in.
        Valid(_TENSORS_ON_DEVICE.format(
            data="FEATS = torch.randn(100, 4, device=device)\ndef lookup(i):\n    return FEATS[i]\n"
                 "class Cached(torch.utils.data.Dataset):\n"
                 "    def __len__(self):\n        return 100\n    def __getitem__(self, i):\n        return lookup(i), i\n",
            dataset="Cached()", options="")),
        Valid(_TENSORS_ON_DEVICE.format(
            data="FEATS = torch.randn(100, 4, device=device)\nclass Cached(torch.utils.data.Dataset):\n"
                 "    def __init__(self):\n        self.table = FEATS\n"
                 "    def __len__(self):\n        return 100\n    def __getitem__(self, i):\n        return self.table[i], i\n",
            dataset="Cached()", options="")),
        # A dataset class whose __getitem__ indexes module-level tensors made on the device.
        Valid(_TENSORS_ON_DEVICE.format(
            data="FEATS = torch.randn(100, 4, device=device)\nclass Cached(torch.utils.data.Dataset):\n"
                 "    def __len__(self):\n        return 100\n    def __getitem__(self, i):\n        return FEATS[i], i\n",
            dataset="Cached()", options="")),
        Valid(_TENSORS_ON_DEVICE.format(data="X = torch.randn(1024, 8, device=device)\nY = X.sum(1, keepdim=True)\n"
                                             "train = TensorDataset(X, Y)\n",
                                        dataset="Subset(train, range(512))", options="")),
        # Unpacked from a split of device tensors (`torch.split`, `.chunk`), a `random_split` of a
        # dataset of them, or given them as an attribute after it is built (`ds.tensors = ...`):
        # pinning them raised "cannot pin 'torch.cuda.FloatTensor'" after the fix.
        Valid(_TENSORS_ON_DEVICE.format(data="X = torch.randn(40, 4).to(device)\na, b = torch.split(X, 20)\n",
                                        dataset="TensorDataset(a, b.sum(1))", options="")),
        Valid(_TENSORS_ON_DEVICE.format(data="X = torch.randn(40, 4).to(device)\na, b = X.chunk(2)\n",
                                        dataset="TensorDataset(a, b)", options="")),
        Valid(_TENSORS_ON_DEVICE.format(data="X = torch.randn(40, 4).to(device)\nfull = TensorDataset(X, X.sum(1))\n"
                                             "tr, va = random_split(full, [32, 8])\n", dataset="tr", options="")),
        Valid(_TENSORS_ON_DEVICE.format(data="ds = TensorDataset(torch.randn(16, 4), torch.randn(16, 1))\n"
                                             "ds.tensors = tuple(t.to(device) for t in ds.tensors)\n",
                                        dataset="ds", options="")),
        Valid(_TENSORS_ON_DEVICE.format(data="X = torch.randn(1024, 8)\nif torch.cuda.is_available():\n"
                                             "    X = X.cuda()\n",
                                        dataset="ConcatDataset([TensorDataset(X), extra])", options="")),
        # Restored onto the device by torch.load, or features a helper of the module returns from the
        # device (a frozen encoder's, for a linear probe): pinning them raises on CUDA.
        Valid(_TENSORS_ON_DEVICE.format(data="data = torch.load('cache.pt', map_location=device)\n",
                                        dataset="TensorDataset(data['x'], data['y'])", options="")),
        Valid(_TENSORS_ON_DEVICE.format(data="x, y = torch.load('cache.pt', device)\n",
                                        dataset="TensorDataset(x, y)", options="")),
        # Tensors unpacked into the dataset from a comprehension that moves them.
        Valid(_TENSORS_ON_DEVICE.format(data="", dataset="TensorDataset(*[t.to(device) for t in (X, Y)])",
                                        options="")),
        # ... or from a `map` that moves them (a lambda, `torch.Tensor.cuda`, a function of the
        # module): the fix pinned them and raised "cannot pin 'torch.cuda.FloatTensor'".
        Valid(_TENSORS_ON_DEVICE.format(data="X, Y = map(lambda t: t.to(device), (X, Y))\n",
                                        dataset="TensorDataset(X, Y)", options="")),
        Valid(_TENSORS_ON_DEVICE.format(data="X, Y = map(torch.Tensor.cuda, (X, Y))\n",
                                        dataset="TensorDataset(X, Y)", options="")),
        Valid(_TENSORS_ON_DEVICE.format(data="def move(t):\n    return t.float().to(device)\n"
                                             "X, Y = map(move, [X, Y])\n",
                                        dataset="TensorDataset(X, Y)", options="")),
        # No map_location: restored where they were saved from, and this file saves device tensors
        # there (a path built from the same parts).
        Valid(_TENSORS_ON_DEVICE.format(
            data="CACHE = 'feats.pt'\ntorch.save({'x': encoder(images.to(device)), 'y': labels}, CACHE)\n"
                 "data = torch.load(CACHE)\n", dataset="TensorDataset(data['x'], data['y'])", options="")),
        Valid(_TENSORS_ON_DEVICE.format(data=_EXTRACT + "feats = extract(encoder, images)\n",
                                        dataset="TensorDataset(feats, labels)", options="")),
        Valid(_TENSORS_ON_DEVICE.format(data=_EXTRACT.replace("    return torch.cat(feats)", "    return embed(feats)")
                                        + "def embed(feats):\n    return torch.cat(feats)\n"
                                        + "feats = extract(encoder, images)\n",
                                        dataset="TensorDataset(feats, labels)", options="")),
        # Decided per loader: `b`'s batches never leave the CPU; `c` is never iterated, and the only
        # copy in the hot loop is of another loader's batches.
        Valid(_LOOP.format(loader="loader = DataLoader(ds, num_workers=2, pin_memory=True)\n"
                                  "b = DataLoader(ds2, num_workers=2)\nc = DataLoader(ds3, num_workers=2)") +
              "for y in b:\n    loss = cpu_model(y)\n    loss.backward()\n    opt.step()\n"),
        # Returned by a function named for evaluation (Lightning's val_dataloader()), while the hot
        # loop iterates a parameter.
        Valid("from torch.utils.data import DataLoader\ndef fit(dl):\n    for x in dl:\n        model(x.cuda()).backward()\n"
              "        opt.step()\nclass Data:\n    def val_dataloader(self):\n        return DataLoader(self.ds)\n"
              "    def build_eval_loader(self):\n        loader = DataLoader(self.ds)\n        return loader\n"),
        # A command-line switch set on by set_defaults (timm's `--pin-mem`/`--no-pin-mem`).
        Valid(_LOOP.format(loader="import argparse\nparser = argparse.ArgumentParser()\n"
                                  "parser.add_argument('--pin-mem', action='store_true')\n"
                                  "parser.add_argument('--no-pin-mem', action='store_false', dest='pin_mem')\n"
                                  "parser.set_defaults(pin_mem=True)\nargs = parser.parse_args()\n"
                                  "loader = DataLoader(ds, num_workers=2, pin_memory=args.pin_mem)")),
        # A Lightning Trainer on the CPU; the transformers Trainer's default, or a run on the CPU.
        Valid(_LIGHTNING.format(pin="", settings="accelerator='cpu', max_epochs=3")),
        Valid(_HF.format(settings="")),
        # accelerate on the CPU, told not to place batches, or preparing an evaluation loader.
        Valid(_ACCELERATE.format(settings="cpu=True", pin="")),
        Valid(_ACCELERATE.format(settings="device_placement=False", pin="")),
        Valid(_ACCELERATE.format(settings="", pin=", pin_memory=True") +
              "scores = DataLoader(vds)\nscores = accelerator.prepare(scores)\nfor b in scores:\n    evaluate(b)\n"),
        # Prepared in a helper whose result no training loop is seen to iterate (accelerate's tests).
        Valid(_ACCELERATE.format(settings="", pin=", pin_memory=True") +
              "def create_dataloader(accelerator, ds):\n    dl = DataLoader(ds, batch_size=4)\n"
              "    dl = accelerator.prepare(dl)\n    return dl\n"),
        Valid(_HF.format(settings=", use_cpu=True, dataloader_pin_memory=False")),
        Valid(_LOOP.replace("x = x.to(device)", "x = x.to(device)\n    scale = torch.ones(1).cuda()").format(
            loader="loader = DataLoader(ds, num_workers=2, pin_memory=True)\nb = DataLoader(ds2)") +
              "for y in b:\n    loss = model(y, scale)\n    loss.backward()\n    opt.step()\n"),
        # Handed to an evaluation function (its name says nothing): no training loader.
        Valid(_HANDED.format(pin=", pin_memory=True")),
        # A function both loaders go through, stepping only on `a`'s calls: `b` does not train.
        Valid(_SHARED_EPOCH.format(a=", pin_memory=True", b="")),
        Valid(_SHARED_EPOCH_GUARD.format(a=", pin_memory=True", b="")),
        # A loop over (phase, loader) pairs steps in the "train" phase only: `b` does not train.
        Valid(_PHASES.format(a=", pin_memory=True", b="")),
        # ... or over the keys of a dict of loaders (`loaders[phase]`).
        Valid(_PHASE_KEYS.format(a=", pin_memory=True", b="")),
        Valid(_PHASE_PICKED.format(a=", pin_memory=True", b="")),
        Valid(_PHASES_ZIP.format(a=", pin_memory=True", b="")),
        Valid(_RETURNED_DICT.format(a=", pin_memory=True", b="")),
        # The batches it draws stay on the CPU; the step's copy is of another tensor.
        Valid(_DRAWN.format(pin="", x="x + table.cuda()")),
    ]
    invalid = [
        # Turned off in the loader's `**` dict: a keyword beside the dict would pass it twice, so
        # the fix changes the dict's entry where it is given on every run that reaches the loader
        # and no other loader unpacks the dict; under `if use_cuda:` only, reported, no fix.
        Invalid(_MNIST.format(x="data.to(device)").replace("'pin_memory': True", "'pin_memory': False"), fixed=NO_FIX,
                message="set `pin_memory` to `True` in `train_kwargs` (the dict the call unpacks)"),
        Invalid(_MNIST_UNPINNED.replace("{'batch_size': 64}", "{'batch_size': 64, 'pin_memory': 0}"),
                fixed=_MNIST_UNPINNED.replace("{'batch_size': 64}", "{'batch_size': 64, 'pin_memory': True}")),
        Invalid(_MNIST_UNPINNED.replace("{'batch_size': 64}", "dict(batch_size=64, pin_memory=False)"),
                fixed=_MNIST_UNPINNED.replace("{'batch_size': 64}", "dict(batch_size=64, pin_memory=True)")),
        # A second loader unpacks the same dict: changing it would change that loader too.
        Invalid(_MNIST_UNPINNED.replace("{'batch_size': 64}", "{'batch_size': 64, 'pin_memory': False}")
                .replace("    loader = DataLoader(ds, **train_kwargs)\n",
                         "    loader = DataLoader(ds, **train_kwargs)\n    probe = DataLoader(ds, **train_kwargs)\n"),
                fixed=NO_FIX),
        Invalid(_LOOP.format(loader="loader = DataLoader(ds, num_workers=2)"),
                fixed=_LOOP.format(loader="loader = DataLoader(ds, num_workers=2, pin_memory=True)")),
        # Tensors made on or brought back to the CPU (a dtype-only `.to`): pageable, pinning helps.
        Invalid(_TENSORS_ON_DEVICE.format(data="X = torch.randn(1024, 8, device='cpu').to(torch.float16)\n"
                                               "Y = X.cuda().cpu()\n", dataset="TensorDataset(X, Y)", options=""),
                fixed=_TENSORS_ON_DEVICE.format(data="X = torch.randn(1024, 8, device='cpu').to(torch.float16)\n"
                                                     "Y = X.cuda().cpu()\n", dataset="TensorDataset(X, Y)",
                                                options=", pin_memory=True")),
        # Loaded onto the CPU, or features brought back to it: pinning helps. A helper that copies
        # to the device and returns what is not seen to be there gets the fix as unsafe.
        # ... while a file saved from host tensors, or one this file does not write, is read to the CPU.
        Invalid(_TENSORS_ON_DEVICE.format(
            data="torch.save({'x': images, 'y': labels}, 'feats.pt')\ndata = torch.load('feats.pt')\n",
            dataset="TensorDataset(data['x'], data['y'])", options=""),
            fixed=_TENSORS_ON_DEVICE.format(
            data="torch.save({'x': images, 'y': labels}, 'feats.pt')\ndata = torch.load('feats.pt')\n",
            dataset="TensorDataset(data['x'], data['y'])", options=", pin_memory=True")),
        # A `map` that keeps the tensors where they are: pinned.
        Invalid(_TENSORS_ON_DEVICE.format(data="X, Y = map(lambda t: t.float(), (X, Y))\n",
                                          dataset="TensorDataset(X, Y)", options=""),
                fixed=_TENSORS_ON_DEVICE.format(data="X, Y = map(lambda t: t.float(), (X, Y))\n",
                                                dataset="TensorDataset(X, Y)", options=", pin_memory=True")),
        Invalid(_TENSORS_ON_DEVICE.format(data="data = torch.load('cache.pt', map_location='cpu')\n",
                                          dataset="TensorDataset(data['x'], data['y'])", options=""),
                fixed=_TENSORS_ON_DEVICE.format(data="data = torch.load('cache.pt', map_location='cpu')\n",
                                                dataset="TensorDataset(data['x'], data['y'])",
                                                options=", pin_memory=True")),
        Invalid(_TENSORS_ON_DEVICE.format(data=_EXTRACT.replace(".to(device)))", ".to(device)).cpu())")
                                          + "feats = extract(encoder, images)\n",
                                          dataset="TensorDataset(feats, labels)", options=""),
                fixed=_TENSORS_ON_DEVICE.format(data=_EXTRACT.replace(".to(device)))", ".to(device)).cpu())")
                                                + "feats = extract(encoder, images)\n",
                                                dataset="TensorDataset(feats, labels)", options=", pin_memory=True")),
        # Frameworks move the batches: Lightning's loaders, the Trainer's pinning turned off.
        Invalid(_LIGHTNING.format(pin="", settings="max_epochs=3"),
                fixed=_LIGHTNING.format(pin=", pin_memory=True", settings="max_epochs=3")),
        Invalid("import pytorch_lightning as pl\nfrom torch.utils.data import DataLoader\n"
                "class Data(pl.LightningDataModule):\n    def train_dataloader(self):\n"
                "        return DataLoader(self.ds, batch_size=32)\n",
                fixed="import pytorch_lightning as pl\nfrom torch.utils.data import DataLoader\n"
                      "class Data(pl.LightningDataModule):\n    def train_dataloader(self):\n"
                      "        return DataLoader(self.ds, batch_size=32, pin_memory=True)\n"),
        # A command-line switch that is off unless given: its default is fixed; a store_true switch
        # becomes a BooleanOptionalAction on by default.
        Invalid(_LOOP.format(loader=_PIN_OPTION.format(option="'--pin-memory', type=bool, default=False",
                                                       dest="pin_memory")),
                fixed=_LOOP.format(loader=_PIN_OPTION.format(option="'--pin-memory', type=bool, default=True",
                                                             dest="pin_memory"))),
        Invalid(_LOOP.format(loader=_PIN_OPTION.format(option="'--pin-mem', action='store_true'", dest="pin_mem")),
                fixed=_LOOP.format(loader=_PIN_OPTION.format(
                    option="'--pin-mem', action=argparse.BooleanOptionalAction, default=True", dest="pin_mem")),
                message="unless `--pin-mem` is given (it is off by default)"),
        # ... also with its `default=False` written out (made `default=True` alone, the flag could
        # no longer turn pinning off).
        Invalid(_LOOP.format(loader=_PIN_OPTION.format(option="'--pin-mem', action='store_true', default=False",
                                                       dest="pin_mem")),
                fixed=_LOOP.format(loader=_PIN_OPTION.format(
                    option="'--pin-mem', action=argparse.BooleanOptionalAction, default=True", dest="pin_mem"))),
        Invalid(_LOOP.format(loader="from argparse import ArgumentParser\nparser = ArgumentParser()\n"
                                    "parser.add_argument('--pin', action='store_true', help='pin batches')\n"
                                    "args = parser.parse_args()\nloader = DataLoader(ds, pin_memory=args.pin)"),
                # `import argparse` added for the action's name.
                fixed="import argparse\n\n" + _LOOP.format(
                    loader="from argparse import ArgumentParser\nparser = ArgumentParser()\n"
                           "parser.add_argument(\n    '--pin', action=argparse.BooleanOptionalAction, help='pin batches', "
                           "default=True\n)\n"
                           "args = parser.parse_args()\nloader = DataLoader(ds, pin_memory=args.pin)")),
        # A variable or a configuration field that holds False: fixed where it is written.
        Invalid(_LOOP.format(loader="PIN = False\nloader = DataLoader(ds, num_workers=2, pin_memory=PIN)"),
                fixed=_LOOP.format(loader="PIN = True\nloader = DataLoader(ds, num_workers=2, pin_memory=PIN)"),
                message="pageable memory (`PIN` is False); set `PIN = True`"),
        Invalid(_LOOP.format(loader="class Config:\n    pin_memory: bool = False\ncfg = Config()\n"
                                    "loader = DataLoader(ds, num_workers=2, pin_memory=cfg.pin_memory)"),
                fixed=_LOOP.format(loader="class Config:\n    pin_memory: bool = True\ncfg = Config()\n"
                                          "loader = DataLoader(ds, num_workers=2, pin_memory=cfg.pin_memory)"),
                message="unless configured otherwise (`Config.pin_memory` is off by default)"),
        # Whole words of a function's name: `device` is no `dev` set.
        Invalid("from torch.utils.data import DataLoader\ndef fit(dl):\n    for x in dl:\n        model(x.cuda()).backward()\n"
                "        opt.step()\ndef device_loader(ds):\n    return DataLoader(ds)\n",
                fixed="from torch.utils.data import DataLoader\ndef fit(dl):\n    for x in dl:\n"
                      "        model(x.cuda()).backward()\n        opt.step()\ndef device_loader(ds):\n"
                      "    return DataLoader(ds, pin_memory=True)\n"),
        Invalid(_ACCELERATE.format(settings="", pin=""), fixed=_ACCELERATE.format(settings="", pin=", pin_memory=True"),
                message="DataLoaderConfiguration(non_blocking=True)"),
        # Built in one function, prepared and trained on in another (accelerate's examples).
        Invalid(_PREPARED.format(pin=""), fixed=_PREPARED.format(pin=", pin_memory=True")),
        # ... also when the helper returns the loader directly (accelerate's `generate_baseline_dataloader`).
        Invalid(_PREPARED.replace("    train_dataloader = DataLoader(ds, shuffle=True{pin})\n", "").replace(
            "return train_dataloader, eval_dataloader", "return DataLoader(ds, shuffle=True{pin}), eval_dataloader").format(
            pin=""),
                fixed=_PREPARED.replace("    train_dataloader = DataLoader(ds, shuffle=True{pin})\n", "").replace(
            "return train_dataloader, eval_dataloader", "return DataLoader(ds, shuffle=True{pin}), eval_dataloader").format(
            pin=", pin_memory=True")),
        Invalid(_HF.format(settings=", dataloader_pin_memory=False"),
                fixed=_HF.format(settings=", dataloader_pin_memory=True"), message="`dataloader_pin_memory=True`"),
        Invalid(_LOOP.format(loader="loader = DataLoader(ds, num_workers=2, pin_memory=False)"),
                fixed=_LOOP.format(loader="loader = DataLoader(ds, num_workers=2, pin_memory=True)")),
        Invalid(_LOOP.format(loader="loader = DataLoader(\n    ds,\n    num_workers=2,\n)"),
                fixed=_LOOP.format(loader="loader = DataLoader(\n    ds,\n    num_workers=2,\n    pin_memory=True,\n)")),
        Invalid(_LOOP.replace("x.to(device)", "x.cuda()").format(loader="loader = DataLoader(ds)"),
                fixed=_LOOP.replace("x.to(device)", "x.cuda()").format(loader="loader = DataLoader(ds, pin_memory=True)")),
        # torchtune's recipes move the batch dict with a helper.
        Invalid(_LOOP.replace("x = x.to(device)", "utils.batch_to_device(x, self._device)").format(
            loader="loader = DataLoader(ds)"),
                fixed=_LOOP.replace("x = x.to(device)", "utils.batch_to_device(x, self._device)").format(
                    loader="loader = DataLoader(ds, pin_memory=True)"),
                message="pin_memory=True"),
        # A positional pin_memory=False is replaced where it stands.
        Invalid(_LOOP.format(loader="loader = DataLoader(ds, 8, True, None, None, 2, None, False)"),
                fixed=_LOOP.format(loader="loader = DataLoader(ds, 8, True, None, None, 2, None, True)")),
        # The batch reaches the copy through a comprehension, and through a step function.
        Invalid(_LOOP.replace("x = x.to(device)", "x = {{k: v.to(device) for k, v in x.items()}}").format(
            loader="loader = DataLoader(ds, num_workers=2)\nother = DataLoader(ds2, pin_memory=True)"),
                fixed=_LOOP.replace("x = x.to(device)", "x = {{k: v.to(device) for k, v in x.items()}}").format(
                    loader="loader = DataLoader(ds, num_workers=2, pin_memory=True)\n"
                           "other = DataLoader(ds2, pin_memory=True)")),
        Invalid("from torch.utils.data import DataLoader\nloader = DataLoader(ds)\ndef step(batch):\n"
                "    inputs, labels = batch\n    loss = model(inputs.cuda(), labels.cuda())\n    loss.backward()\n"
                "    opt.step()\nfor epoch in range(3):\n    for i, batch in enumerate(loader):\n        step(batch)\n",
                fixed="from torch.utils.data import DataLoader\nloader = DataLoader(ds, pin_memory=True)\ndef step(batch):\n"
                      "    inputs, labels = batch\n    loss = model(inputs.cuda(), labels.cuda())\n    loss.backward()\n"
                      "    opt.step()\nfor epoch in range(3):\n    for i, batch in enumerate(loader):\n        step(batch)\n"),
        # Handed to the training function every epoch; the loader handed to the checking one is not
        # for training.
        Invalid(_HANDED.format(pin=""), fixed=_HANDED.format(pin=", pin_memory=True")),
        Invalid(_SHARED_EPOCH.format(a="", b=""), fixed=_SHARED_EPOCH.format(a=", pin_memory=True", b="")),
        Invalid(_SHARED_EPOCH_GUARD.format(a="", b=""), fixed=_SHARED_EPOCH_GUARD.format(a=", pin_memory=True", b="")),
        Invalid(_PHASES.format(a="", b=""), fixed=_PHASES.format(a=", pin_memory=True", b="")),
        Invalid(_PHASE_KEYS.format(a="", b=""), fixed=_PHASE_KEYS.format(a=", pin_memory=True", b="")),
        Invalid(_PHASE_PICKED.format(a="", b=""), fixed=_PHASE_PICKED.format(a=", pin_memory=True", b="")),
        Invalid(_PHASES_ZIP.format(a="", b=""), fixed=_PHASES_ZIP.format(a=", pin_memory=True", b="")),
        Invalid(_RETURNED_DICT.format(a="", b=""), fixed=_RETURNED_DICT.format(a=", pin_memory=True", b="")),
        Invalid(_DRAWN.format(pin="", x="x.cuda()"), fixed=_DRAWN.format(pin=", pin_memory=True", x="x.cuda()")),
        # Iterated where this module cannot see it (a parameter), while the visible loop over another
        # loader evaluates: the hot loop's copy may be of its batches.
        Invalid("from torch.utils.data import DataLoader\ndef fit(dl):\n    for x in dl:\n        loss = model(x.cuda())\n"
                "        loss.backward()\n        opt.step()\ntrain_loader = DataLoader(ds, num_workers=2)\n"
                "val_loader = DataLoader(vds, pin_memory=True)\nfit(train_loader)\nfor x in val_loader:\n"
                "    score(model(x.cuda()))\n",
                fixed="from torch.utils.data import DataLoader\ndef fit(dl):\n    for x in dl:\n"
                      "        loss = model(x.cuda())\n        loss.backward()\n        opt.step()\n"
                      "train_loader = DataLoader(ds, num_workers=2, pin_memory=True)\n"
                      "val_loader = DataLoader(vds, pin_memory=True)\nfit(train_loader)\nfor x in val_loader:\n"
                      "    score(model(x.cuda()))\n"),
    ]

    def check_loader(self, call: cst.Call) -> None:
        ctx = self.ctx
        arg = loader_arg(ctx, call, "pin_memory")
        pin = setting_value(ctx, call, "pin_memory", False)
        if pin is UNKNOWN or pin:  # (the loader pins when the value is true: 0 and None do not)
            return
        accelerators, name = None, loader_name(ctx, call)
        if batches_made_on_device(ctx, call):
            return  # already on the device: nothing to pin (pinning them raises)
        if builds_trainer_loader(ctx, call):
            # The Trainer pins by default: only a written-out False, for a run on an accelerator.
            if arg is None or configured_for_cpu(call):
                return
        elif (trainers := lightning_trainers(ctx, call, name)) is not None:
            # Lightning moves the batches itself (non-blocking to CUDA), unless told to stay on the CPU.
            if trainers and all(configured_for_cpu(trainer) for trainer in trainers):
                return
        elif accelerators := accelerate_trains_on(ctx, call):
            # accelerate's prepared loader moves each batch itself.
            if not any(places_batches(ctx, accelerator) for accelerator in accelerators):
                return
        elif not self._feeds_copies(call):
            return
        # accelerate copies without non_blocking unless its DataLoaderConfiguration says so.
        overlap = " (with `dataloader_config=DataLoaderConfiguration(non_blocking=True)` for the Accelerator)" \
            if accelerators else ""
        # A dataset tensor from a helper of the module that copies to the device (`feats =
        # extract(encoder, images)`) may be on it where on_device cannot tell: pinning would raise.
        # So may one whose attributes are assigned after it is built (`ds.tensors = tuple(f(t) for t in
        # ds.tensors)`): what it holds is not only what it was seen built from.
        applicability = Applicability.UNSAFE if dataset_from_device_helper(ctx, call) \
            or dataset_changed_after(ctx, call) else Applicability.SAFE
        # A `store_true` switch has no default to turn on (it would need another action): no fix.
        self.report(
            call,
            setting_advice(ctx, call, "pin_memory", "True", "Batches go to the accelerator from pageable memory",
                           f"for faster, asynchronous copies{overlap}"),
            setting_fix(self, call, "pin_memory", "True", applicability),
        )

    def _feeds_copies(self, call: cst.Call) -> bool:
        """A training loader of this module whose batches the hot loop copies to an accelerator."""
        ctx = self.ctx
        if not is_training_loader(ctx, call):
            return False
        batches = [(loop, target) for loop, target in loader_batches(ctx, call) if ctx.loops.runs_steps(loop)]
        batches += [(loop, loop.target) for loop, path in ctx.loops.shared_loops(call)
                    if ctx.loops.steps_on(loop, path) is not False]
        if batches:
            # Its own batches must reach a device copy; another loader's copies say nothing of it.
            return any(batch_moves(ctx, loop, target=target) for loop, target in batches)
        return bool(_unattributed_moves(ctx))


def _hot_moves(ctx) -> frozenset[cst.Call]:
    """Device copies (`.to(device)`, `.cuda()`, batch helpers such as `batch_to_device(batch,
    device)`) in a hot loop or a function it calls."""
    cached = getattr(ctx, "_hot_moves", None)
    if cached is None:
        cached = frozenset(c for c in ctx.index.nodes(cst.Call)
                           if (is_device_move(ctx, c) or is_device_helper(ctx, c)) and ctx.loops.in_hot_loop(c))
        ctx._hot_moves = cached
    return cached


def _unattributed_moves(ctx) -> frozenset[cst.Call]:
    """Device copies in the hot loop that no visible loop over a loader of this file leads to: the
    batches of a loader whose loop is not seen here (iterated through a parameter, `next(it)`, a
    framework) may be what they copy. With no loader iterated in a visible loop, all of them."""
    cached = getattr(ctx, "_unattributed_moves", None)
    if cached is None:
        attributed: set = set()
        for call in ctx.index.nodes(cst.Call):
            if is_loader(ctx, call):
                for loop, target in loader_batches(ctx, call, shared=True):
                    attributed |= batch_moves(ctx, loop, target=target)
        cached = _hot_moves(ctx) - attributed
        ctx._unattributed_moves = cached
    return cached


# A dataset class reading a setting of the object it is built with, and a module global; the epoch
# loop makes a {change}.
_READS_SETTING = (
    "import torch\nfrom torch.utils.data import DataLoader, Dataset\nNOISE = 0.0\n"
    "class Tokens(Dataset):\n    def __init__(self, cfg):\n        self.cfg = cfg\n"
    "    def __getitem__(self, i):\n        return torch.zeros(self.cfg.seq_len) + NOISE\n"
    "def main(cfg):\n    loader = DataLoader(Tokens(cfg), num_workers=2)\n    for epoch in range(3):\n"
    "        {change}\n        for x in loader:\n            step(x)\n"
)
# Two iterators drawn from in turn, the first started again when it runs out.
_TWO_ITERATORS = (
    "from torch.utils.data import DataLoader\ndef main(ds, ds2):\n    loader = DataLoader(ds, num_workers=2)\n"
    "    other = DataLoader(ds2, num_workers=2, persistent_workers=True)\n    {make}\n    for step in range(100):\n"
    "        try:\n            a = next(it_a)\n        except StopIteration:\n            it_a = iter(loader)\n"
    "            a = next(it_a)\n        b = next(it_b)\n        step_fn(a, b)\n"
)


class DataLoaderWorkersNotPersistent(DataLoaderRule):
    code = "TL103"
    name = "dataloader-workers-not-persistent"
    summary = "Loader with workers, iterated for several epochs, without `persistent_workers=True`"
    source = "§3.3"
    fix_applicability = "unsafe"
    triggers = TRAINER_TRIGGERS
    trainer_settings = True
    docs = """
## What it does
Flags a `DataLoader` with workers (`num_workers` not 0, as a literal or a variable holding one; a
setting written as a name is read as TL101 describes) and no `persistent_workers=True`
that is gone over once per epoch inside an outer loop: by a loop or a comprehension (`[model(x)
for x in val_loader]`) with the outer loop around it or around the calls of its function (`for
epoch in range(n): train(epoch)`; the loader found where a function of the module returns it to
its caller, `train_loader, val_loader = make_loaders(cfg)`, or hands it on, as TL108 describes, or
in a dict or list the loop picks it from, `dataloaders[phase]`, also a dict a helper returns,
`loaders = build(cfg)`, and an item picked into a name, `train_loader = loaders["train"]`), or by
a function of another
module it is handed to inside the outer loop (`evaluate(model, val_loader)` imported from a utils
module), such as `iter(loader)` made again at each `StopIteration`; not when the outer loop builds
the loader again, which starts new workers every epoch whatever its settings. Batches drawn with
`next(it)` from an iterator made once before the loop (`it = iter(loader)`, or
`it = itertools.cycle(loader)`, which caches the batches of its one pass) are one pass. Also a loader a Lightning Trainer trains on (handed to `trainer.fit`, or
returned by a LightningModule's or LightningDataModule's `train_dataloader`) that runs several
epochs (`max_epochs` not a literal 1 or less, its default 1000, no `max_steps` and no
`reload_dataloaders_every_n_epochs`); and `TrainingArguments` with `dataloader_num_workers` and no
`dataloader_persistent_workers=True`, for a run of several epochs (`num_train_epochs` not a literal
1 or less, its default 3, and no `max_steps`).

A loader handed to a function inside a dict, list or tuple (`evaluate(model, {"train": loader})`),
or put in one a name holds (`loaders = [train_loader, val_loader]`), is followed into the loops
over it; a dataset changed by a method of its class (`ds.grow(epoch)`, `ds.resample()`), by a
module function handed it, or through a wrapper (`Subset(ds, idx)`) withholds the fix; `for epoch in
range(1)` repeats nothing. The message says what the fix changes in a seeded run: its random
draws after the loader's first pass (see Fix safety), for any loader, shuffled or not.

## Why is this bad?
Without persistent workers, every epoch starts by forking the workers again and re-running the
dataset's set-up in each; on short epochs the GPU waits for this at every epoch boundary.

## Example
```python
loader = DataLoader(ds, num_workers=4)
for epoch in range(10):
    for x, y in loader:
        ...
```

## Use instead
```python
loader = DataLoader(ds, num_workers=4, persistent_workers=True)
```

## Fix safety
Unsafe: live workers keep their copy of the dataset, so changes made to it between epochs are
not seen; and a seeded run draws different random numbers after the loader's first pass: without
persistent workers each pass over the loader draws its workers' base seed from the global RNG
(from the loader's `generator=` when given), with them only the first pass does, so every later
random draw of the run changes (any loader's shuffle, dropout, augmentations; the workers' RNGs
run on instead of being seeded anew), whether or not this loader shuffles. With a worker
count that may be 0 in a run, the fix sets `persistent_workers=workers > 0` (True with no workers
raises); a `persistent_workers` setting written elsewhere then gets no fix, since its one value
would be wrong for some runs. No fix either when the loader is gone over again while a loop
over it runs (a nested loop over it, `next(iter(loader))`, two passes in one loop's header such as
`zip(loader, loader)`, a train-set evaluation from a function
of the module the loop calls), or is handed inside that loop to a function this file does not
define, which may go over it (`evaluate(model, train_loader)` imported; `len(loader)`, `print`
do not count): with persistent workers every `iter(loader)` returns the same
iterator, reset for the new pass, so the outer loop ends early or repeats batches; a loop over it
after the other ends (an evaluation at the end of the epoch) keeps the fix. Nor when one loop
draws in turn from two iterators over the loader (`next(it_a)`, `next(it_b)`), each made by
`iter(loader)`, `itertools.cycle(loader)` or a generator function of the module handed it (`def
infinite(dl): while True: yield from dl`): the second `iter()` resets the first's pass. Nor when the loop
around the loader changes its dataset, by its name or as `loader.dataset` (`ds.set_epoch(epoch)`,
`ds.max_len = ...`, `ds.items.extend(new)`, `ds.labels[i] = y`, a method named to change it:
`set_*`, `close_*`, `reset*`, `enable_*`, `disable_*`; in the loop or a function of the module
it calls), or
a list or other object it was built from (`ds = ListDataset(items)`, then `items.extend(new)`,
`items.append(x)`, `items[i] = x`, `items += new`, or an attribute of it its class may read:
`cfg.seq_len = ...` with `Tokens(cfg)` reading `self.cfg.seq_len`, where the class is of this
module), or a module global the class's `__getitem__`/`__iter__` reads (`NOISE = ...`
under `global NOISE`): the live workers would keep the copy they were
started with (a grown list is indexed past the workers' shorter copy: IndexError).
"""
    _EPOCHS = "from torch.utils.data import DataLoader\nloader = {loader}\nfor epoch in range(3):\n    for batch in loader:\n        step(batch)\n"
    _FIT = ("import pytorch_lightning as pl\nfrom torch.utils.data import DataLoader\nloader = {loader}\n"
            "trainer = pl.Trainer({settings})\ntrainer.fit(model, {given})\n")
    _HOOK = ("import lightning as L\nfrom torch.utils.data import DataLoader\nclass Data(L.LightningDataModule):\n"
             "    def train_dataloader(self):\n        return {loader}\n")
    valid = [
        Valid(_EPOCHS.format(loader="DataLoader(ds, num_workers=4, persistent_workers=True)")),
        Valid(_EPOCHS.format(loader="DataLoader(ds, num_workers=0)")),
        # A name rebuilt per dataset in a loop, then assigned a last loader gone over once: the
        # loops before that assignment go over the earlier loaders.
        Valid("from torch.utils.data import DataLoader\ndef main(sets, final):\n    for ds in sets:\n"
              "        ld = DataLoader(ds, num_workers=2, persistent_workers=True)\n        for x in ld:\n            step(x)\n"
              "    ld = DataLoader(final, num_workers=2)\n    for x in ld:\n        step(x)\n"),
        # ... and the loops after a later assignment of the name go over the later loader.
        Valid("from torch.utils.data import DataLoader\ndef main(ds):\n    loader = DataLoader(ds, num_workers=2)\n"
              "    for x in loader:\n        step(x)\n    loader = DataLoader(ds, num_workers=2, persistent_workers=True)\n"
              "    for epoch in range(3):\n        for x in loader:\n            step(x)\n"),
        # One epoch, written as a loop: nothing is restarted.
        Valid(_EPOCHS.format(loader="DataLoader(ds, num_workers=4)").replace("range(3)", "range(1)")),
        Valid(_EPOCHS.format(loader="DataLoader(ds, num_workers=4)").replace("range(3)", "range(1, 2)")),
        # A loader the epoch loop builds anew each time (here, or through a helper): no workers to
        # keep alive.
        Valid("from torch.utils.data import DataLoader\nfor epoch in range(10):\n    ds.set_difficulty(epoch)\n"
              "    loader = DataLoader(ds, num_workers=4)\n    for batch in loader:\n        step(batch)\n"),
        Valid("from torch.utils.data import DataLoader\ndef make_loader(ds):\n    return DataLoader(ds, num_workers=4)\n"
              "def main(ds):\n    for epoch in range(3):\n        loader = make_loader(ds)\n"
              "        for batch in loader:\n            step(batch)\n"),
        # The helper returns two loaders; the epoch loop iterates only the second, once per epoch.
        Valid("from torch.utils.data import DataLoader\ndef make_loaders(ds):\n    train = DataLoader(ds, num_workers=4)\n"
              "    probe = DataLoader(ds, num_workers=4, persistent_workers=True)\n    return train, probe\n"
              "def main(ds):\n    train, probe = make_loaders(ds)\n    for batch in train:\n        step(batch)\n"
              "    for epoch in range(3):\n        for batch in probe:\n            check(batch)\n"),
        # No workers, from a variable assigned once.
        Valid(_EPOCHS.format(loader="DataLoader(ds, num_workers=NUM_WORKERS)").replace(
            "loader = ", "NUM_WORKERS = 0\nloader = ", 1)),
        Valid("from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=4)\nfor batch in loader:\n    step(batch)\n"),
        # The function reading the module's loader is called once, not from a loop.
        Valid("from torch.utils.data import DataLoader\ntrainloader = DataLoader(ds, num_workers=2)\n"
              "def train(epoch):\n    for batch in trainloader:\n        step(batch)\n"
              "def main():\n    train(0)\nfor attempt in range(3):\n    print(attempt)\n"),
        Valid(_EPOCHS.format(loader="DataLoader(ds)")),
        # The loop over (phase, loader) pairs goes over each loader once: no epoch loop around it.
        Valid(_PHASES.format(a=", num_workers=2", b=", num_workers=2").replace(
            "for epoch in range(3):\n    for phase", "if True:\n    for phase")),
        # Another function's variable of the same name is another loader; `len()` goes over nothing.
        Valid("from torch.utils.data import DataLoader\ndef probe(ds):\n    loader = DataLoader(ds, num_workers=4)\n"
              "    return next(iter(loader)), len(loader)\n"
              "def train(make):\n    for epoch in range(3):\n        loader = make(epoch)\n"
              "        print(len(loader))\n        for batch in loader:\n            step(batch)\n"),
        # One epoch, or a step budget that decides how often the loader is gone over.
        Valid("from transformers import TrainingArguments\n"
              "args = TrainingArguments('out', dataloader_num_workers=4, num_train_epochs=1)\n"
              "Trainer(model, args)\n"),
        Valid("from transformers import TrainingArguments\n"
              "args = TrainingArguments('out', dataloader_num_workers=4, max_steps=500)\n"
              "Trainer(model, args)\n"),
        Valid("from transformers import TrainingArguments\nargs = TrainingArguments("
              "'out', dataloader_num_workers=4, dataloader_persistent_workers=True)\n"
              "Trainer(model, args)\n"),
        # Lightning: one epoch, a step budget, loaders rebuilt every epoch, the validation loader
        # (fit's third argument), another library's fit, a hook of a class that is no Lightning module.
        Valid(_FIT.format(loader="DataLoader(ds, num_workers=4)", settings="max_epochs=1", given="loader")),
        Valid(_FIT.format(loader="DataLoader(ds, num_workers=4)", settings="max_steps=5000", given="loader")),
        Valid(_FIT.format(loader="DataLoader(ds, num_workers=4)", settings="reload_dataloaders_every_n_epochs=1",
                          given="loader")),
        Valid(_FIT.format(loader="DataLoader(ds, num_workers=4)", settings="", given="train, loader")),
        Valid("from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=4)\nestimator.fit(model, loader)\n"),
        # A method of an object the file does not build from its class: where it goes is not seen.
        Valid(_FIT_METHOD.format(options="", x="x", call="trainer = make_trainer()\ntrainer.fit(loader, 10)")),
        Valid("from torch.utils.data import DataLoader\nclass Data:\n    def train_dataloader(self):\n"
              "        return DataLoader(self.ds, num_workers=4)\n"),
        # Batches drawn with next() from an iterator made once, before the loop: one pass over the
        # loader (itertools.cycle caches the batches and never iterates it again).
        Valid("import itertools\nfrom torch.utils.data import DataLoader\n"
              "loader = DataLoader(ds, shuffle=True, num_workers=4, pin_memory=True)\n"
              "train_iter = itertools.cycle(loader)\nfor step in range(10_000):\n    x, y = next(train_iter)\n"
              "    loss = model(x.cuda(non_blocking=True), y)\n    loss.backward()\n    opt.step()\n"),
        Valid("from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=4)\n"
              "data_iter = iter(loader)\nfor step in range(len(loader)):\n    step_fn(next(data_iter))\n"),
        Valid("from itertools import cycle\nfrom torch.utils.data import DataLoader\n"
              "loader = DataLoader(ds, num_workers=4)\ndef train(steps):\n    batches = cycle(loader)\n"
              "    for step in range(steps):\n        step_fn(next(batches))\n"),
    ]
    invalid = [
        # A shuffled loader: the message says the data order of a seeded run changes.
        Invalid("from torch.utils.data import DataLoader\nloader = DataLoader(ds, shuffle=True, num_workers=2)\n"
                "for epoch in range(3):\n    for b in loader:\n        step(b)\n",
                message="a seeded run then draws different random numbers after the loader's first pass: "
                        "without persistent workers each pass draws the workers' base seed from the global RNG"),
        # Not shuffled itself (an evaluation loader), or ordered by a DistributedSampler (its seed and
        # epoch): the global RNG still moves on differently, and other loaders' shuffles with it
        # (the note was once given only for a shuffled loader, and spoke of its shuffle).
        Invalid("from torch.utils.data import DataLoader\nval_loader = DataLoader(vs, num_workers=2)\n"
                "for epoch in range(3):\n    for b in val_loader:\n        score(b)\n",
                message="any loader's shuffle, dropout"),
        Invalid("from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=2, generator=g)\n"
                "for epoch in range(3):\n    for b in loader:\n        step(b)\n",
                message="from the loader's `generator`"),
        Invalid(_EPOCHS.format(loader="DataLoader(ds, num_workers=4)"),
                fixed=_EPOCHS.format(loader="DataLoader(ds, num_workers=4, persistent_workers=True)")),
        # Drawn with next() and started again at StopIteration: a new pass, and new workers, each time.
        Invalid(_DRAWN.format(pin=", num_workers=4", x="x"),
                fixed=_DRAWN.format(pin=", num_workers=4, persistent_workers=True", x="x")),
        # A cycle made anew every epoch goes over the loader again.
        Invalid("import itertools\nfrom torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=4)\n"
                "for epoch in range(3):\n    it = itertools.cycle(loader)\n    for step in range(10):\n"
                "        step_fn(next(it))\n",
                fixed="import itertools\nfrom torch.utils.data import DataLoader\n"
                      "loader = DataLoader(ds, num_workers=4, persistent_workers=True)\n"
                      "for epoch in range(3):\n    it = itertools.cycle(loader)\n    for step in range(10):\n"
                      "        step_fn(next(it))\n"),
        # PyTorch's MNIST example: workers only in the CUDA options, merged into the loader's `**`
        # dict; the guard reads the dict's worker count.
        Invalid("from torch.utils.data import DataLoader\ndef main(use_cuda):\n    train_kwargs = {'batch_size': 64}\n"
                "    if use_cuda:\n        cuda_kwargs = {'num_workers': 1, 'pin_memory': True}\n"
                "        train_kwargs.update(cuda_kwargs)\n    loader = DataLoader(ds, **train_kwargs)\n"
                "    for epoch in range(3):\n        train(model, loader)\n",
                fixed="from torch.utils.data import DataLoader\ndef main(use_cuda):\n    train_kwargs = {'batch_size': 64}\n"
                      "    if use_cuda:\n        cuda_kwargs = {'num_workers': 1, 'pin_memory': True}\n"
                      "        train_kwargs.update(cuda_kwargs)\n    loader = DataLoader(\n"
                      "        ds, **train_kwargs, persistent_workers=train_kwargs.get('num_workers', 0) > 0\n"
                      "    )\n    for epoch in range(3):\n        train(model, loader)\n"),
        # Returned by a helper to the function whose epoch loop iterates it (by the tuple's position).
        Invalid("from torch.utils.data import DataLoader\ndef make_loaders(ds, vs):\n"
                "    train = DataLoader(ds, num_workers=4)\n    val = DataLoader(vs)\n    return train, val\n"
                "def main(ds, vs):\n    train_loader, val_loader = make_loaders(ds, vs)\n    for epoch in range(3):\n"
                "        for batch in train_loader:\n            step(batch)\n",
                fixed="from torch.utils.data import DataLoader\ndef make_loaders(ds, vs):\n"
                      "    train = DataLoader(ds, num_workers=4, persistent_workers=True)\n    val = DataLoader(vs)\n"
                      "    return train, val\ndef main(ds, vs):\n    train_loader, val_loader = make_loaders(ds, vs)\n"
                      "    for epoch in range(3):\n        for batch in train_loader:\n            step(batch)\n"),
        # An evaluation loader gone over at every evaluation, from a function the training loop calls.
        Invalid("from torch.utils.data import DataLoader\nval_loader = DataLoader(vs, num_workers=2)\n"
                "def validate():\n    for batch in val_loader:\n        score(batch)\n"
                "for step, batch in enumerate(train_loader):\n    model(batch).backward()\n    opt.step()\n"
                "    if step % 100 == 0:\n        validate()\n",
                fixed="from torch.utils.data import DataLoader\n"
                      "val_loader = DataLoader(vs, num_workers=2, persistent_workers=True)\n"
                      "def validate():\n    for batch in val_loader:\n        score(batch)\n"
                      "for step, batch in enumerate(train_loader):\n    model(batch).backward()\n    opt.step()\n"
                      "    if step % 100 == 0:\n        validate()\n",
                message="Workers are restarted at every pass over the loader (each evaluation)"),
        # A module's loader read by the function the epoch loop calls (pytorch-cifar's `train(epoch)`).
        Invalid("from torch.utils.data import DataLoader\ntrainloader = DataLoader(ds, num_workers=2)\n"
                "def train(epoch):\n    for batch in trainloader:\n        step(batch)\n"
                "for epoch in range(3):\n    train(epoch)\n",
                fixed="from torch.utils.data import DataLoader\n"
                      "trainloader = DataLoader(ds, num_workers=2, persistent_workers=True)\n"
                      "def train(epoch):\n    for batch in trainloader:\n        step(batch)\n"
                      "for epoch in range(3):\n    train(epoch)\n"),
        # persistent_workers from a variable holding False: fixed there while the workers are certain;
        # with a configurable worker count, True could meet 0 workers (a ValueError): no fix.
        Invalid(_EPOCHS.format(loader="DataLoader(ds, num_workers=8, persistent_workers=KEEP)").replace(
                    "loader = ", "KEEP = False\nloader = ", 1),
                fixed=_EPOCHS.format(loader="DataLoader(ds, num_workers=8, persistent_workers=KEEP)").replace(
                    "loader = ", "KEEP = True\nloader = ", 1),
                message="(`KEEP` is False); set `KEEP = True`"),
        Invalid(_EPOCHS.format(loader="DataLoader(ds, num_workers=cfg.workers, persistent_workers=cfg.keep)").replace(
                    "loader = ", "class Config:\n    workers = 4\n    keep = False\ncfg = Config()\nloader = ", 1),
                fixed=NO_FIX, message="unless configured otherwise (`Config.keep` is off by default)"),
        # Lightning runs the epochs: a Trainer of several (1000 by default) fitting the loader, or
        # the loader a module's train_dataloader() gives a Trainer built elsewhere.
        Invalid(_FIT.format(loader="DataLoader(ds, num_workers=4)", settings="max_epochs=10", given="loader"),
                fixed=_FIT.format(loader="DataLoader(ds, num_workers=4, persistent_workers=True)",
                                  settings="max_epochs=10", given="loader")),
        Invalid(_FIT.format(loader="DataLoader(ds, num_workers=4)", settings="", given="train_dataloaders=loader"),
                fixed=_FIT.format(loader="DataLoader(ds, num_workers=4, persistent_workers=True)", settings="",
                                  given="train_dataloaders=loader")),
        Invalid(_HOOK.format(loader="DataLoader(ds, num_workers=self.n)"),
                fixed=_HOOK.format(loader="DataLoader(ds, num_workers=self.n, persistent_workers=self.n > 0)")),
        Invalid(_EPOCHS.format(loader="DataLoader(ds, num_workers=args.workers, persistent_workers=False)"),
                fixed=_EPOCHS.format(loader="DataLoader(ds, num_workers=args.workers, persistent_workers=args.workers > 0)")),
        Invalid("from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=2)\nfor epoch in range(3):\n"
                "    for i, batch in enumerate(loader):\n        step(batch)\n",
                fixed="from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=2, persistent_workers=True)\n"
                      "for epoch in range(3):\n    for i, batch in enumerate(loader):\n        step(batch)\n"),
        # Returned to the caller, which hands it to another module's evaluator for each checkpoint
        # (fairseq's MMPT predict script).
        Invalid("from torch.utils.data import DataLoader\nfrom evaluation import Evaluator\n"
                "def get_loader(cfg):\n    test_loader = DataLoader(cfg.ds, num_workers=6)\n    return test_loader\n"
                "def main(cfg):\n    test_loader = get_loader(cfg)\n    for ckpt in cfg.checkpoints:\n"
                "        Evaluator(cfg).evaluate(load(ckpt), test_loader)\n",
                fixed="from torch.utils.data import DataLoader\nfrom evaluation import Evaluator\n"
                      "def get_loader(cfg):\n    test_loader = DataLoader(cfg.ds, num_workers=6, persistent_workers=True)\n"
                      "    return test_loader\n"
                      "def main(cfg):\n    test_loader = get_loader(cfg)\n    for ckpt in cfg.checkpoints:\n"
                      "        Evaluator(cfg).evaluate(load(ckpt), test_loader)\n",
                message="each evaluation"),
        # Each loader of a loop over (phase, loader) pairs, which the epoch loop runs again.
        Invalid(_PHASES.format(a=", num_workers=2, persistent_workers=True", b=", num_workers=2"),
                fixed=_PHASES.format(a=", num_workers=2, persistent_workers=True",
                                     b=", num_workers=2, persistent_workers=True")),
        # Returned in a dict, the training loader picked by its key (not the validation one).
        Invalid(_RETURNED_DICT.format(a=", num_workers=2", b=", num_workers=2"),
                fixed=_RETURNED_DICT.format(a=", num_workers=2", b=", num_workers=2").replace(
                    "DataLoader(cfg.train, shuffle=True, num_workers=2)",
                    "DataLoader(\n            cfg.train, shuffle=True, num_workers=2, persistent_workers=True\n        )")),
        # Gone over in a closure the epoch loop calls.
        Invalid(_CLOSURE.format(x="x"), fixed=_CLOSURE.format(x="x").replace(
            "pin_memory=True)", "pin_memory=True, persistent_workers=True)")),
        # Gone over by a comprehension in a function the epoch loop calls.
        Invalid("from torch.utils.data import DataLoader\nval_loader = DataLoader(vs, num_workers=2)\n"
                "def evaluate():\n    return sum([model(x) for x in val_loader])\n"
                "for epoch in range(3):\n    evaluate()\n",
                fixed="from torch.utils.data import DataLoader\n"
                      "val_loader = DataLoader(vs, num_workers=2, persistent_workers=True)\n"
                      "def evaluate():\n    return sum([model(x) for x in val_loader])\n"
                      "for epoch in range(3):\n    evaluate()\n",
                message="each evaluation"),
        # A trainer class's loader, wrapped in a progress bar by the method fit() calls every epoch.
        Invalid(_TRAINER_CLASS.format(options="", x="x"),
                fixed=_TRAINER_CLASS.format(options=", persistent_workers=True", x="x")),
        # Handed to a method of the module's trainer class, on an instance built here.
        Invalid(_FIT_METHOD.format(options="", x="x", call="trainer = Trainer()\ntrainer.fit(loader, 10)"),
                fixed=_FIT_METHOD.format(options=", persistent_workers=True", x="x",
                                         call="trainer = Trainer()\ntrainer.fit(loader, 10)")),
        Invalid(_FIT_METHOD.format(options="", x="x", call="Trainer().fit(loader, 10)"),
                fixed=_FIT_METHOD.format(options=", persistent_workers=True", x="x", call="Trainer().fit(loader, 10)")),
        # Held in a dict the epoch loop picks it from by phase (PyTorch's fine-tuning tutorial).
        Invalid("from torch.utils.data import DataLoader\n"
                "loaders = {p: DataLoader(sets[p], num_workers=4) for p in ['train', 'val']}\n"
                "for epoch in range(3):\n    for phase in ['train', 'val']:\n"
                "        for x, y in loaders[phase]:\n            step(x, y)\n",
                fixed="from torch.utils.data import DataLoader\n"
                      "loaders = {\n    p: DataLoader(sets[p], num_workers=4, persistent_workers=True)\n"
                      "    for p in ['train', 'val']\n}\n"
                      "for epoch in range(3):\n    for phase in ['train', 'val']:\n"
                      "        for x, y in loaders[phase]:\n            step(x, y)\n"),
        Invalid("from torch.utils.data import DataLoader\ndef train_epoch(dl):\n    for b in dl:\n        step(b)\n"
                "loader = DataLoader(ds, num_workers=2)\nfor epoch in range(3):\n    train_epoch(loader)\n",
                fixed="from torch.utils.data import DataLoader\ndef train_epoch(dl):\n    for b in dl:\n        step(b)\n"
                      "loader = DataLoader(ds, num_workers=2, persistent_workers=True)\nfor epoch in range(3):\n"
                      "    train_epoch(loader)\n"),
        # Only looked at inside the loop (`len(loader)`), or handed elsewhere after it ends: fixed.
        Invalid("from torch.utils.data import DataLoader\nfrom utils import evaluate\n"
                "loader = DataLoader(ds, num_workers=2)\nfor epoch in range(3):\n    for i, b in enumerate(loader):\n"
                "        fit(b, i / len(loader))\n    evaluate(model, loader)\n",
                fixed="from torch.utils.data import DataLoader\nfrom utils import evaluate\n"
                      "loader = DataLoader(ds, num_workers=2, persistent_workers=True)\nfor epoch in range(3):\n"
                      "    for i, b in enumerate(loader):\n        fit(b, i / len(loader))\n    evaluate(model, loader)\n"),
        # The loader gone over again while a loop over it runs (a train-set evaluation, a peek with
        # next(iter(loader))): persistent workers share one iterator, reset by each new pass, so
        # the outer pass would be cut short or repeat batches. Reported, no fix.
        Invalid("from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=2)\n"
                "def evaluate(dl):\n    for x, y in dl:\n        score(x, y)\n"
                "for epoch in range(3):\n    for i, (x, y) in enumerate(loader):\n        step(x, y)\n"
                "        if i % 4 == 0:\n            evaluate(loader)\n",
                fixed=NO_FIX, message="gone over again while a loop over it runs"),
        Invalid("from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=2)\n"
                "for epoch in range(3):\n    for i, (x, y) in enumerate(loader):\n        step(x, y)\n"
                "        if i == 2:\n            xs, _ = next(iter(loader))\n",
                fixed=NO_FIX, message="gone over again while a loop over it runs"),
        Invalid("from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=2)\n"
                "for epoch in range(3):\n    for x in loader:\n        step(x)\n"
                "        for y in loader:\n            check(y)\n",
                fixed=NO_FIX, message="gone over again while a loop over it runs"),
        # ... handed down inside a dict or list (`evaluate(model, {"train": loader})`): the fix once
        # cut the run to 2 steps, and hung a loop that breaks out of its evaluation pass.
        Invalid("from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=2)\n"
                "def evaluate(loaders):\n    for name, dl in loaders.items():\n        for x, y in dl:\n            score(x, y)\n"
                "for epoch in range(3):\n    for i, (x, y) in enumerate(loader):\n        step(x, y)\n"
                "        if i % 4 == 0:\n            evaluate({'train': loader})\n",
                fixed=NO_FIX, message="gone over again while a loop over it runs"),
        Invalid("from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=2)\n"
                "def evaluate(loaders):\n    for dl in loaders:\n        for x, y in dl:\n            score(x, y)\n"
                "for epoch in range(3):\n    for i, (x, y) in enumerate(loader):\n        step(x, y)\n"
                "        if i % 4 == 0:\n            evaluate([loader, other])\n",
                fixed=NO_FIX, message="gone over again while a loop over it runs"),
        # ... put in a list a name holds, gone over inside the loop.
        Invalid("from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=2)\nloaders = [loader, other]\n"
                "for epoch in range(3):\n    for i, (x, y) in enumerate(loader):\n        step(x, y)\n"
                "        if i == 3:\n            for dl in loaders:\n                for b in dl:\n                    score(b)\n",
                fixed=NO_FIX, message="gone over again while a loop over it runs"),
        # A function reading the module's loader, called inside the loop over it.
        Invalid("from torch.utils.data import DataLoader\ntrain_loader = DataLoader(ds, num_workers=2)\n"
                "def train_accuracy():\n    return sum(score(b) for b in train_loader)\n"
                "def main():\n    for epoch in range(3):\n        for step, b in enumerate(train_loader):\n"
                "            fit(b)\n            if step % 100 == 0:\n                print(train_accuracy())\n",
                fixed=NO_FIX, message="gone over again while a loop over it runs"),
        # A function that several loaders go through, called with this one inside its loop.
        Invalid("from torch.utils.data import DataLoader\ntrain_loader = DataLoader(ds, num_workers=2)\n"
                "val_loader = DataLoader(vs)\ndef evaluate(dl):\n    for b in dl:\n        score(b)\n"
                "for epoch in range(3):\n    for i, b in enumerate(train_loader):\n        fit(b)\n"
                "        if i % 50 == 0:\n            evaluate(train_loader)\n    evaluate(val_loader)\n",
                fixed=NO_FIX, message="gone over again while a loop over it runs"),
        # Handed, inside the loop over it, to a function defined elsewhere, which may go over it.
        Invalid("from torch.utils.data import DataLoader\nfrom utils import evaluate\n"
                "loader = DataLoader(ds, num_workers=2)\nfor epoch in range(3):\n    for i, b in enumerate(loader):\n"
                "        fit(b)\n        if i % 50 == 0:\n            evaluate(model, loader)\n",
                fixed=NO_FIX, message="handed to `evaluate`, defined elsewhere, which may go over it"),
        # Two passes at once from one loop's header (pairs of batches): both would draw from one
        # iterator. A zip of two different loaders keeps the fix.
        Invalid("from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=2)\n"
                "for epoch in range(3):\n    for a, b in zip(loader, loader):\n        step(a, b)\n",
                fixed=NO_FIX, message="the loader is gone over again while a loop over it runs"),
        Invalid("import itertools\nfrom torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=2)\n"
                "for epoch in range(3):\n    for a, b in zip(loader, itertools.islice(loader, 1, None)):\n"
                "        step(a, b)\n", fixed=NO_FIX, message="gone over again"),
        Invalid("from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=2)\n"
                "other = DataLoader(ds2, num_workers=2, persistent_workers=True)\n"
                "for epoch in range(3):\n    for a, b in zip(loader, other):\n        step(a, b)\n",
                fixed="from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=2, persistent_workers=True)\n"
                "other = DataLoader(ds2, num_workers=2, persistent_workers=True)\n"
                "for epoch in range(3):\n    for a, b in zip(loader, other):\n        step(a, b)\n"),
        # Two iterators over the loader drawn from in turn (a GAN's discriminator and generator
        # batches; `iter()` twice, or two generators each looping over it): with the fix the second
        # `iter()` reset the first's pass, repeating batches and losing others. Reported, no fix;
        # iterators over two loaders keep it.
        Invalid(_TWO_ITERATORS.format(make="it_a, it_b = iter(loader), iter(loader)"),
                fixed=NO_FIX, message="draws from two iterators over the loader in turn (`it_a` and `it_b`)"),
        Invalid("def infinite(dl):\n    while True:\n        for b in dl:\n            yield b\n"
                + _TWO_ITERATORS.format(make="it_a = infinite(loader)\n    it_b = infinite(loader)"),
                fixed=NO_FIX, message="two iterators over the loader"),
        Invalid(_TWO_ITERATORS.format(make="it_a, it_b = iter(loader), iter(other)"),
                fixed=_TWO_ITERATORS.format(make="it_a, it_b = iter(loader), iter(other)").replace(
                    "DataLoader(ds, num_workers=2)", "DataLoader(ds, num_workers=2, persistent_workers=True)")),
        # The dataset changed between epochs (a curriculum's `set_epoch`, an attribute assigned):
        # live workers would keep their own copy and never see it. Reported, no fix.
        Invalid("from torch.utils.data import DataLoader\nds = Curriculum()\nloader = DataLoader(ds, num_workers=2)\n"
                "for epoch in range(3):\n    ds.set_epoch(epoch)\n    for x in loader:\n        step(x)\n",
                fixed=NO_FIX, message="changes its dataset"),
        Invalid("from torch.utils.data import DataLoader\ndef main(ds):\n    loader = DataLoader(ds, num_workers=2)\n"
                "    for epoch in range(3):\n        ds.max_len = 2 + epoch\n        for x in loader:\n            step(x)\n",
                fixed=NO_FIX, message="changes its dataset"),
        # ... reached through the loader (`loader.dataset`), as Ultralytics' trainer closes mosaic.
        Invalid("from torch.utils.data import DataLoader\nloader = DataLoader(Scaled(), num_workers=2)\n"
                "for epoch in range(3):\n    loader.dataset.scale = float(epoch + 1)\n    for x in loader:\n        step(x)\n",
                fixed=NO_FIX, message="changes its dataset"),
        Invalid("from torch.utils.data import DataLoader\nclass Trainer:\n    def fit(self):\n"
                "        self.train_loader = DataLoader(ds, num_workers=2)\n        for epoch in range(9):\n"
                "            if epoch == 5:\n                self.train_loader.dataset.close_mosaic(hyp=self.args)\n"
                "            for x in self.train_loader:\n                step(x)\n",
                fixed=NO_FIX, message="changes its dataset"),
        # The data grows in place between rounds (self-training adds pseudo-labelled samples): a list
        # handed to the dataset's class, or an attribute of the dataset, extended or changed by item.
        # With the fix live workers keep the old list and the sampler indexes past it (IndexError).
        Invalid(_GROWN.format(ds="ListDataset(items)", grow="items.extend(more)"),
                fixed=NO_FIX, message="changes its dataset"),
        Invalid(_GROWN.format(ds="ListDataset(items)", grow="ds.items.append(x)"),
                fixed=NO_FIX, message="changes its dataset"),
        Invalid(_GROWN.format(ds="ListDataset(items)", grow="ds.labels[i] = y"),
                fixed=NO_FIX, message="changes its dataset"),
        Invalid(_GROWN.format(ds="ListDataset(items)", grow="items += more").replace(
                    "    ds = ", "    items = [x for x in range(16)]\n    ds = "),
                fixed=NO_FIX, message="changes its dataset"),
        Invalid(_GROWN.format(ds="ListDataset(items)", grow="pass").replace(
                    "DataLoader(ds,", "DataLoader(ListDataset(items),").replace("pass", "items.insert(0, x)"),
                fixed=NO_FIX, message="changes its dataset"),
        # ... by a method of its class that changes the dataset (a curriculum's `ds.grow(epoch)`,
        # `ds.resample()` shuffling its list), or a function of the module handed it: the fix
        # once let live workers index past their shorter copy (IndexError).
        Invalid(_CURRICULUM + _GROWN.format(ds="Curriculum(items)", grow="ds.grow(epoch)"),
                fixed=NO_FIX, message="changes its dataset"),
        Invalid(_CURRICULUM + _GROWN.format(ds="Curriculum(items)", grow="ds.resample()"),
                fixed=NO_FIX, message="changes its dataset"),
        Invalid(_CURRICULUM + "def widen(d, n):\n    d.items = d.all[:n]\n"
                + _GROWN.format(ds="Curriculum(items)", grow="widen(ds, 8 * epoch)"),
                fixed=NO_FIX, message="changes its dataset"),
        # ... also through a wrapper built from it (`Subset(ds, idx)` sees `ds.resample()`).
        Invalid(_CURRICULUM + _GROWN.format(ds="Subset(Curriculum(items), idx)", grow="pass").replace(
                    "    ds = Subset(Curriculum(items), idx)", "    base = Curriculum(items)\n    ds = Subset(base, idx)").replace(
                    "pass", "base.resample()"),
                fixed=NO_FIX, message="changes its dataset"),
        # ... or a setting of an object it was built from, which its class reads (`cfg.seq_len`
        # with `Tokens(cfg)` reading `self.cfg.seq_len`), or a module global its `__getitem__`
        # reads: the fix froze them in the workers at their first values.
        Invalid(_READS_SETTING.format(change="cfg.seq_len = 4 + epoch"), fixed=NO_FIX, message="changes its dataset"),
        Invalid(_READS_SETTING.format(change="global NOISE\n        NOISE = float(epoch)"), fixed=NO_FIX,
                message="changes its dataset or what it reads"),
        # A setting its class never reads: fixed.
        Invalid(_READS_SETTING.format(change="cfg.lr = 0.1 * epoch"),
                fixed=_READS_SETTING.format(change="cfg.lr = 0.1 * epoch").replace(
                    "num_workers=2)", "num_workers=2, persistent_workers=True)")),
        # A method that changes nothing of its object (`ds.describe()`): fixed.
        Invalid(_CURRICULUM + _GROWN.format(ds="Curriculum(items)", grow="ds.describe()"),
                fixed=_CURRICULUM + _GROWN.format(ds="Curriculum(items)", grow="ds.describe()").replace(
                    "num_workers=2)", "num_workers=2, persistent_workers=True)")),
        # A list the loop grows that the dataset was not built from (the losses): fixed.
        Invalid(_GROWN.format(ds="ListDataset(items)", grow="losses.append(x)"),
                fixed=_GROWN.format(ds="ListDataset(items)", grow="losses.append(x)").replace(
                    "num_workers=2)", "num_workers=2, persistent_workers=True)")),
        # Evaluated on the training set after the epoch's pass ends: no pass is cut short, fixed.
        Invalid("from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=2)\n"
                "def evaluate(dl):\n    for x, y in dl:\n        score(x, y)\n"
                "for epoch in range(3):\n    for x, y in loader:\n        step(x, y)\n    evaluate(loader)\n"
                "    print(next(iter(loader)))\n",
                fixed="from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=2, persistent_workers=True)\n"
                      "def evaluate(dl):\n    for x, y in dl:\n        score(x, y)\n"
                      "for epoch in range(3):\n    for x, y in loader:\n        step(x, y)\n    evaluate(loader)\n"
                      "    print(next(iter(loader)))\n"),
        Invalid("from transformers import TrainingArguments\nargs = TrainingArguments('out', dataloader_num_workers=4)\n"
                "trainer = Trainer(model=model, args=args)\n",
                fixed="from transformers import TrainingArguments\nargs = TrainingArguments(\n"
                      "    'out', dataloader_num_workers=4, dataloader_persistent_workers=True\n)\n"
                      "trainer = Trainer(model=model, args=args)\n",
                message="`dataloader_persistent_workers=True`"),
    ]

    def check_loader(self, call: cst.Call) -> None:
        ctx = self.ctx
        if not has_workers(ctx, call) or setting_value(ctx, call, "persistent_workers", False) is not False:
            return
        if builds_trainer_loader(ctx, call):
            if not _trainer_epochs(ctx, call):
                return
        else:
            if not (_looped_over_per_epoch(ctx, call) or _handed_on_per_epoch(ctx, call)
                    or lightning_epochs(ctx, call, loader_name(ctx, call))):
                return
        workers = loader_arg(ctx, call, "num_workers")
        # PyTorch rejects persistent_workers=True without workers, so a configurable worker count
        # (simpletransformers' dataloader_num_workers, 0 by default) gets a condition, not True;
        # a setting written elsewhere has no room for one, so it gets no fix then.
        certain = workers_positive(ctx, workers.value)
        fix = setting_fix(self, call, "persistent_workers", "True", Applicability.UNSAFE,
                          at_call="True" if certain else f"{_workers_operand(ctx, call, workers)} > 0")
        if setting_source(ctx, call, "persistent_workers") is not None and not certain:
            fix = None
        # Persistent workers share one iterator between passes: a new pass (`evaluate(model,
        # train_loader)`, `next(iter(train_loader))`) while a loop over the loader runs resets
        # it under that loop, which then ends early or repeats batches.
        reentered = _passes_within_a_pass(ctx, call)
        # So do two iterators over it drawn from in turn (`it_a, it_b = iter(loader), iter(loader)`,
        # two generators each looping over it): the second `iter()` resets the first's pass.
        concurrent = None if reentered else _concurrent_iterators(ctx, call)
        # Live workers keep the copy of the dataset they were forked with: a change made to it
        # between epochs (`ds.set_epoch(epoch)`, `ds.max_len = ...`) would no longer reach them.
        changed = not reentered and not concurrent and _dataset_changed_per_pass(ctx, call)
        if reentered or concurrent or changed:
            fix = None
        # An evaluation loader (by its name: whether a loop trains is not always visible, verl's
        # training loop steps in other processes) gone over again at each evaluation (verl's
        # `_validate()` every `test_freq` steps) restarts its workers for each one, not per epoch.
        name = loader_name(ctx, call) or ""
        evaluates = names_evaluation(name.rsplit(".", 1)[-1]) and not builds_trainer_loader(ctx, call)
        when = "at every pass over the loader (each evaluation)" if evaluates else "at every epoch"
        message = setting_advice(ctx, call, "persistent_workers", "True", f"Workers are restarted {when}",
                                 "to keep them alive")
        if reentered:
            again = "the loader is gone over again while a loop over it runs"
            if all(reentered is not node for node, _ in ctx.loops.passes_over(call)):  # handed elsewhere
                again = (f"while a loop over it runs the loader is handed to `{ctx.code(reentered.func).strip()}`, "
                         "defined elsewhere, which may go over it")
            message = (f"Workers are restarted {when}; `persistent_workers=True` would keep them alive, but "
                       f"{again}: persistent workers share one iterator, so that inner pass would reset the "
                       "loop's (cutting it short or repeating batches); give the inner pass its own loader first")
        elif concurrent:
            message = (f"Workers are restarted {when}; `persistent_workers=True` would keep them alive, but "
                       f"the loop draws from two iterators over the loader in turn (`{concurrent[0]}` and "
                       f"`{concurrent[1]}`): persistent workers share one iterator, so starting the second resets "
                       "the first (batches repeated and others never drawn); give each its own loader first")
        elif changed:
            message = (f"Workers are restarted {when}; `persistent_workers=True` would keep them alive, but "
                       "the loop around the loader changes its dataset or what it reads, and live workers keep "
                       "their own copy of it, so they would not see the change")
        elif fix is not None:
            message += _rng_note(ctx, call)
        self.report(call, message, fix)


def _rng_note(ctx, call: cst.Call) -> str:
    """What persistent workers change in a seeded run, for TL103's message. Measured (docs/verify.md):
    each pass without them draws the workers' base seed from the global RNG (from the loader's own
    `generator=` when given), and with them only the first pass does; the global stream then moves
    on differently for every later random draw (any loader's shuffle, dropout, augmentations), and
    the workers' own RNGs run on instead of being seeded anew. A DistributedSampler's order comes
    from its seed and epoch, and is not what changes."""
    if builds_trainer_loader(ctx, call):
        return ""
    if loader_arg(ctx, call, "generator") is not None:
        return (" (a seeded run then draws different random numbers after the loader's first pass: without "
                "persistent workers each pass draws the workers' base seed from the loader's `generator`, with them only the "
                "first does, so its later shuffles and its workers' random augmentations change)")
    return (" (a seeded run then draws different random numbers after the loader's first pass: without persistent "
            "workers each pass draws the workers' base seed from the global RNG, with them only the first does, so every "
            "later random draw changes: any loader's shuffle, dropout, random augmentations in the workers too)")


# Methods that change a list, dict, set or deque in place (`items.extend(new)`, `ds.items.append(x)`).
_MUTATORS = frozenset({"append", "extend", "insert", "pop", "remove", "clear", "update", "add", "discard",
                       "setdefault", "popitem", "sort", "reverse", "appendleft", "extendleft", "popleft",
                       "difference_update", "intersection_update", "symmetric_difference_update"})


# Methods named to change the object they are called on (`set_epoch`, `close_mosaic`, `reset`).
_CHANGING_PREFIXES = ("set_", "close_", "reset", "enable_", "disable_")


def _changes_own(ctx, method: str) -> bool:
    """A method of that name, of a class of the module, changes its own object (`self.items =
    ...`, `self.items.append(x)`, `random.shuffle(self.items)`): a curriculum's `ds.grow(epoch)`."""
    return any(ctx.index.enclosing_class(fn) is not None and fn.params.params
               and _changes(ctx, fn, fn.params.params[0].name.value)
               for fn in ctx.loops.functions.get(method, ()))


def _changes_argument(ctx, call: cst.Call, held: str) -> bool:
    """call runs a function of the module whose parameter bound to `held` it changes."""
    name = ctx.loops.local_callee_name(call)
    fns = ctx.loops.functions.get(name or "", ())
    if len(fns) != 1:
        return False
    return any(ctx.dotted(arg.value) == held and _changes(ctx, fns[0], param)
               for param, arg in ctx.loops.bind_params(name, call))


def _changes(ctx, fn: cst.FunctionDef, name: str) -> bool:
    """fn's body changes the object `name` holds: assigns or deletes one of its attributes or an
    item of them, calls a mutating method on one (`name.items.extend(x)`), or shuffles one in place
    (`random.shuffle(name.items)`)."""
    def of(expr) -> bool:
        spelled = ctx.dotted(expr) if expr is not None else None
        return spelled is not None and spelled.startswith(name + ".")

    for node in ctx.index.walk(fn.body):
        for target in binding_targets(node):
            if isinstance(target, cst.Attribute) and ctx.dotted(target.value) == name \
                    or isinstance(target, cst.Subscript) and of(target.value):
                return True
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
            if node.func.attr.value in _MUTATORS and of(node.func.value):
                return True
            if node.func.attr.value == "shuffle" and node.args and of(node.args[0].value):
                return True
    return False


def _dataset_changed_per_pass(ctx, call: cst.Call) -> bool:
    """The loader's dataset, a name or `loader.dataset`, is changed in a loop that runs a pass
    over the loader again (`for epoch ...: ds.set_epoch(epoch)`): a method named to change it
    called on it (`set_*`, `close_*`, `reset*`, `enable_*`, `disable_*`), an attribute of it
    assigned (`ds.max_len = ...`), an item of it or of an attribute assigned or deleted
    (`ds.x[i] = ...`), a mutating method called on it or an attribute (`ds.items.extend(new)`);
    or a name handed to the call that built it (`ds = ListDataset(items)`, or built in the
    loader's call) has a mutating method called, an item assigned, or is a list extended with
    `+=` (`items.extend(new)`)."""
    dataset = ctx.positional(call, 0) or ctx.keyword(call, "dataset")
    if dataset is None or dataset.star:
        return False
    scope = ctx.index.enclosing_function(call)
    name = ctx.dotted(dataset.value)
    watched: list = []  # (name, its scope, whether it is the dataset itself)
    if name:
        watched.append((name, scope, True))
    # ... also reached through the loader (`loader.dataset.set_epoch(epoch)`; Ultralytics'
    # `self.train_loader.dataset.close_mosaic(...)`).
    watched += [(f"{known}.dataset", where, True) for known, where in ctx.loops.names_of(call)]
    builders = [dataset.value] if isinstance(dataset.value, cst.Call) else ctx.assigned_values(dataset.value)
    for built in builders:
        if isinstance(built, cst.Call):
            where = ctx.index.enclosing_function(built)
            for arg in built.args:
                given = ctx.dotted(arg.value) if not arg.star else None
                if given and given != "self" and (given, where, False) not in watched:
                    watched.append((given, where, False))
    cls = dataset_class(ctx, call)
    # A module global the dataset's `__getitem__`/`__iter__` reads, assigned by the loop (`NOISE =
    # ...` under `global NOISE`): live workers keep the value they were forked with.
    sites: list = _global_changes(ctx, cls) if cls is not None else []
    if not watched and not sites:
        return False

    def on(expr, held: str, whole: bool) -> bool:
        spelled = ctx.dotted(expr)
        return spelled is not None and (spelled == held or spelled.startswith(held + ".") and whole)

    for held, where, whole in watched:
        found: list = []
        for node in ctx.index.nodes(cst.Call):
            func = node.func
            if not isinstance(func, cst.Attribute):
                continue
            if ctx.dotted(func.value) == held and (
                    whole and func.attr.value.startswith(_CHANGING_PREFIXES) or _changes_own(ctx, func.attr.value)):
                # (also on what the dataset was built from: `Subset(ds, idx)` sees `ds.resample()`)
                found.append(node)
            elif func.attr.value in _MUTATORS and on(func.value, held, whole):
                found.append(node)
        if whole:  # handed to a function of the module that changes it (`grow(ds, epoch)`)
            found += [node for node in ctx.loops.calls_handing(held) if _changes_argument(ctx, node, held)]
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
                        # read (`cfg.seq_len = ...` with `Tokens(cfg)` reading `self.cfg.seq_len`).
                        or not whole and isinstance(target, cst.Attribute) and on(target.value, held, True)
                        and _may_read(ctx, cls, target.attr.value)
                        # `items += more` extends a list in place (an int's `n += 1` binds a new one).
                        or not whole and isinstance(node, cst.AugAssign) and ctx.dotted(target) == held
                        and ctx.is_builtin_collection(target)):
                    found.append(node)
                    break
        sites += [site for site in found if ctx.loops.in_sight(site, held, where)]
    if not sites:
        return False
    rebuilt = ctx.loops.loops_around(call)
    outers = {outer for _, anchor in ctx.loops.passes_over(call) for outer in ctx.loops.loops_around(anchor)} - rebuilt
    return any(ctx.loops.runs_inside(site, outer) for site in sites for outer in outers)


def _may_read(ctx, cls: cst.ClassDef | None, attr: str) -> bool:
    """The dataset's class, of this module, names an attribute of this name in its body
    (`self.cfg.seq_len` for `seq_len`). A class not seen here is not judged: a configuration handed
    to it (simpletransformers' `args`) has many fields the loop may set that it never reads."""
    return cls is not None and any(isinstance(n, cst.Attribute) and n.attr.value == attr for n in ctx.index.walk(cls))


def _global_changes(ctx, cls: cst.ClassDef) -> list[cst.CSTNode]:
    """Where a module global that the class's `__getitem__` or `__iter__` reads is assigned, at the
    top level or in a function declaring it `global`, or changed by a mutating method
    (`NOISE = float(epoch)`, `TABLE.append(x)`)."""
    module_names = {t.target.value for stmt in ctx.module.body if isinstance(stmt, cst.SimpleStatementLine)
                    for node in stmt.body if isinstance(node, (cst.Assign, cst.AnnAssign))
                    for t in (node.targets if isinstance(node, cst.Assign) else [node])
                    if isinstance(t.target, cst.Name)}
    read = set()
    for method_name in ("__getitem__", "__iter__"):
        method = method_of(ctx, cls, method_name)
        if method is None:
            continue
        local = bound_names(method.body) | {p.name.value for p in method.params.params}
        read |= {n.value for n in ctx.index.walk(method.body) if isinstance(n, cst.Name)
                 and n.value in module_names and n.value not in local}
    if not read:
        return []
    sites = []
    for node in [*ctx.index.nodes(cst.Assign), *ctx.index.nodes(cst.AugAssign)]:
        targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
        for target in targets:
            if isinstance(target, cst.Name) and target.value in read and _global_there(ctx, node, target.value):
                sites.append(node)
    for node in ctx.index.nodes(cst.Call):
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in _MUTATORS and isinstance(func.value, cst.Name) \
                and func.value.value in read and _global_there(ctx, node, func.value.value):
            sites.append(node)
    return sites


def _global_there(ctx, node: cst.CSTNode, name: str) -> bool:
    """name at node is the module's variable: node is at the top level, or its function declares
    it `global` (a function that binds it otherwise has a local of that name)."""
    fn = ctx.index.enclosing_function(node)
    if fn is None:
        return True
    declared = any(isinstance(n, cst.Global) and any(g.name.value == name for g in n.names)
                   for n in ctx.index.walk(fn.body))
    return declared or (isinstance(node, cst.Call) and name not in bound_names(fn.body)
                        and name not in {p.name.value for p in fn.params.params})


def _passes_within_a_pass(ctx, call: cst.Call) -> cst.CSTNode | None:
    """A pass over the loader (a loop, a comprehension, `iter(loader)`) started while a `for`
    loop over it runs: in its body, or in a module-local function called from there with the
    loader (or reading its name)."""
    passes = ctx.loops.passes_over(call)
    handed = ctx.loops.handed_out(call)
    names = ctx.loops.names_of(call)
    for loop, _ in passes:
        # Two passes started by one loop's header (`zip(loader, loader)`, `zip(loader,
        # islice(loader, 1, None))`): with persistent workers both draw from one iterator.
        header = loop.iter if isinstance(loop, cst.For) else getattr(getattr(loop, "for_in", None), "iter", None)
        if header is not None and sum(
                1 for node in ctx.index.walk(header) if isinstance(node, (cst.Name, cst.Attribute))
                and any(ctx.dotted(node) == name and ctx.loops.in_sight(node, name, scope) for name, scope in names)
                and not isinstance(ctx.parent(node), cst.Attribute)) > 1:
            return loop
        if isinstance(loop, cst.For):
            for node, anchor in passes:
                if node is not loop and (ctx.index.contains(loop.body, node) or ctx.loops.runs_inside(anchor, loop)):
                    return node
            # Handed to a function defined elsewhere (`evaluate(model, train_loader)` imported):
            # it may go over the loader; with no sight of it, the fix is not safe to offer.
            for other in handed:
                if ctx.loops.runs_inside(other, loop):
                    return other
    return None


# Calls that start a pass over the iterable they are given and hold it (`iter(loader)`, `cycle(loader)`).
_ITERATOR_MAKERS = frozenset({"builtins.iter", "itertools.cycle"})


def _concurrent_iterators(ctx, call: cst.Call) -> tuple[str, str] | None:
    """The names of two iterators over the loader that one loop draws from in turn (`next(it_a)`,
    `next(it_b)`), each made by `iter(loader)`, `itertools.cycle(loader)` or a generator function of
    the module handed the loader (`def infinite(dl): while True: for b in dl: yield b`); None when
    no loop does. Both passes are alive at once: with persistent workers the second `iter()`
    returns the same iterator, reset."""
    names = ctx.loops.names_of(call)
    holders: dict = {}  # (holder name, its scope) -> the call that made it
    for maker in ctx.index.nodes(cst.Call):
        if not any(not a.star and any(ctx.dotted(a.value) == name and ctx.loops.in_sight(a.value, name, scope)
                                      for name, scope in names) for a in maker.args):
            continue
        if ctx.names.qualified(maker.func) not in _ITERATOR_MAKERS and not _is_generator_call(ctx, maker):
            continue
        holder = _bound_name(ctx, maker)
        if holder is not None:
            holders.setdefault((holder, ctx.index.enclosing_function(maker)), maker)
    if len(holders) < 2:
        return None
    for loop in [*ctx.index.nodes(cst.For), *ctx.index.nodes(cst.While)]:
        drawn = []
        for node in ctx.index.walk(loop.body):
            if isinstance(node, cst.Call) and ctx.names.qualified(node.func) == "builtins.next" and node.args:
                key = (ctx.dotted(node.args[0].value), ctx.index.enclosing_function(node))
                if key in holders and key[0] not in drawn:
                    drawn.append(key[0])
        if len(drawn) >= 2:
            return drawn[0], drawn[1]
    return None


def _is_generator_call(ctx, call: cst.Call) -> bool:
    """call runs a function of the module that yields (a generator, made when called)."""
    name = ctx.loops.local_callee_name(call)
    return any(isinstance(node, cst.Yield) and ctx.index.enclosing_function(node) is fn
               for fn in ctx.loops.functions.get(name or "", ()) for node in ctx.index.walk(fn.body))


def _bound_name(ctx, value: cst.BaseExpression) -> str | None:
    """The name value is assigned to: `it = value`, or its place in `a, b = value, other`."""
    parent = ctx.parent(value)
    if isinstance(parent, cst.Element) and isinstance(tuple_ := ctx.parent(parent), cst.Tuple):
        assign = ctx.parent(tuple_)
        if isinstance(assign, cst.Assign) and assign.value is tuple_ and len(assign.targets) == 1 \
                and isinstance(assign.targets[0].target, (cst.Tuple, cst.List)) \
                and len(assign.targets[0].target.elements) == len(tuple_.elements):
            return ctx.dotted(assign.targets[0].target.elements[tuple_.elements.index(parent)].value)
        return None
    if isinstance(parent, cst.Assign) and parent.value is value and len(parent.targets) == 1:
        return ctx.dotted(parent.targets[0].target)
    return None


def _workers_operand(ctx, call: cst.Call, workers: cst.Arg) -> str:
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


def _handed_on(ctx, call: cst.Call) -> bool:
    """The arguments are passed to a call (`Trainer(model, args=TrainingArguments(...))`, or
    through the name they are assigned to): arguments built and never given to a trainer configure
    no DataLoader (accelerate's DeepSpeed set-up test)."""
    parent = ctx.parent(call)
    if isinstance(parent, cst.Arg):
        return True
    name = loader_name(ctx, call)
    return name is not None and any(ctx.dotted(arg.value) == name for other in ctx.index.nodes(cst.Call)
                                    for arg in other.args)


def _trainer_epochs(ctx, call: cst.Call) -> bool:
    """The Trainer these TrainingArguments configure goes over its loader more than once:
    `num_train_epochs` is not a literal 1 or less (the default is 3), and no `max_steps` decides
    instead."""
    if ctx.keyword(call, "max_steps") is not None:
        return False
    epochs = ctx.keyword(call, "num_train_epochs")
    value = ctx.literal(epochs.value) if epochs is not None else 3
    return not (isinstance(value, (int, float)) and value <= 1)


def _looped_over_per_epoch(ctx, call: cst.Call) -> bool:
    """A loop or comprehension over the loader (as loops_over finds them: where a function returns
    it to its caller, hands it to another, or reads the module's) is run again and again by an outer loop, around it
    or around the calls of its function (`for epoch in ...: train(epoch)`), that does not build
    the loader again."""
    rebuilt = ctx.loops.loops_around(call)  # a new loader, and new workers, on each of their runs
    rebuilt |= {loop for loop in ctx.index.nodes(cst.For) if runs_at_most_once(loop)}  # `range(1)` repeats nothing
    passes = [*ctx.loops.loops_over(call), *ctx.loops.comprehensions_over(call)]
    if any(outer not in rebuilt for loop in passes for outer in ctx.loops.repeating_loops(loop)):
        return True
    return any(outer not in rebuilt for loop, path in ctx.loops.shared_loops(call)
               for outer in ctx.loops.repeats_on(loop, path))


# `next(it)` draws from an iterator made before (`it = itertools.cycle(loader)`, `it = iter(loader)`):
# only the call that made it starts a pass over the loader, and workers, and is judged itself.
_NOT_ITERATING = frozenset({"len", "print", "isinstance", "hasattr", "getattr", "type", "id", "repr", "str", "next"})


def _handed_on_per_epoch(ctx, call: cst.Call) -> bool:
    """A name the loader is known by (`Loops.names_of`) is handed, inside an outer loop that does
    not build it, to a call that loops_over does not follow into: a function of another module
    (`evaluate(model, val_loader)` imported from a utils module, `engine.train_one_epoch(loader)`),
    which goes over it at each call."""
    rebuilt = ctx.loops.loops_around(call) | {loop for loop in ctx.index.nodes(cst.For) if runs_at_most_once(loop)}
    names = ctx.loops.names_of(call)
    names += [known for known in ctx.loops.returned_to(call, escaping=True) if known not in names]
    for name, scope in names:
        for other in ctx.index.nodes(cst.Call):
            # Into the module's own functions names_of follows it: their loops decide. Builtins
            # that only look at it (`len(loader)`, `print`) do not go over it.
            if ctx.dotted(other.func) in _NOT_ITERATING or not any(
                    ctx.dotted(arg.value) == name and not ctx.loops.follows(other, arg, name) for arg in other.args):
                continue
            if ctx.loops.in_sight(other, name, scope) and any(outer not in rebuilt for outer in ctx.loops.repeating_loops(other)):
                return True
    return False


# A sampler built here, handed to the loader, and (maybe) changed in the loop over its batches.
_CHANGED_SAMPLER = (
    "from torch.utils.data import DataLoader\nsampler = LossAware(len(ds))\n"
    "loader = DataLoader(ds, sampler=sampler, num_workers=2)\n"
    "for x, idx in loader:\n    loss = model(x)\n    {change}\n    loss.mean().backward()\n    opt.step()\n"
)


class DataLoaderShallowPrefetch(DataLoaderRule):
    code = "TL104"
    name = "dataloader-shallow-prefetch"
    summary = "Loader with workers and `prefetch_factor` missing or below the configured minimum"
    source = "§3.3"
    fix_applicability = "safe"
    triggers = TRAINER_TRIGGERS
    trainer_settings = True
    options = {"min-prefetch-factor": Option(4, int, "The smallest prefetch_factor accepted; the fix sets this value.",
                                              minimum=1)}
    docs = """
## What it does
Flags a `DataLoader` with workers whose `prefetch_factor` is missing or `None` (both mean
PyTorch's default, 2) or below the configured minimum (default 4); and the same in
`TrainingArguments` (`dataloader_num_workers`, `dataloader_prefetch_factor`). Settings written as
names are read as TL101 describes; a worker count that is only a default (an option's, a
field's) may be 0 in a run, so the fix then sets `prefetch_factor=4 if workers > 0 else None`.

## Why is this bad?
Each worker keeps only `prefetch_factor` batches ready. With uneven sample costs (variable-length
text, images of different sizes) a shallow queue drains and the GPU waits for the slowest batch.

## Example
```python
loader = DataLoader(ds, num_workers=4)
```

## Use instead
```python
loader = DataLoader(ds, num_workers=4, prefetch_factor=4)
```

## Fix safety
Safe: a deeper queue uses more host memory but computes the same batches in the same order. When
`num_workers` is an expression, the fix writes `prefetch_factor=4 if <workers> > 0 else None`,
since PyTorch rejects a prefetch factor without workers. No fix when a loop over the loader's
batches changes the `sampler` or `batch_sampler` the loader was given, by its name or as
`loader.sampler` (a method called on it, as a loss-aware sampler's `sampler.update(idx, loss)`, an
attribute or item of it assigned, or a function of the module handed it that does either), or
changes in place an object handed to the sampler's constructor (prioritized replay's `prio[idx] =
err` for `sampler=PrioritySampler(prio)`: an item or attribute of it assigned, an augmented
assignment, an in-place method): the main process draws the indices of the batches the workers
prefetch, `prefetch_factor` per worker ahead of the loop, so a deeper queue draws more of them
before each change and the samples drawn differ. A change between passes (`sampler.set_epoch(epoch)`
in the epoch loop) keeps the fix.
"""
    valid = [
        Valid("from torch.utils.data import DataLoader\nDataLoader(ds, num_workers=4, prefetch_factor=4)\n"),
        Valid("from torch.utils.data import DataLoader\nDataLoader(ds)\n"),
        Valid("from torch.utils.data import DataLoader\nDataLoader(ds, num_workers=4, prefetch_factor=8)\n"),
        # No workers, or a deep prefetch, from variables assigned once.
        Valid("from torch.utils.data import DataLoader\nNUM_WORKERS = 0\nDataLoader(ds, num_workers=NUM_WORKERS)\n"),
        Valid("from torch.utils.data import DataLoader\ndef main():\n    depth = 8\n"
              "    DataLoader(ds, num_workers=4, prefetch_factor=depth)\n"),
        Valid("from transformers import TrainingArguments\nTrainer(m, TrainingArguments('o', dataloader_num_workers=4, "
              "dataloader_prefetch_factor=4))\n"),
        Valid("from transformers import TrainingArguments\nTrainer(m, TrainingArguments('o'))\n"),
        Valid("from torch.utils.data import DataLoader\nDataLoader(ds, num_workers=4, prefetch_factor=2)\n",
              options={"min-prefetch-factor": 2}),
        # A name that may hold another callable is not known to build a DataLoader.
        Valid("from torch.utils.data import DataLoader\nmake = DataLoader if plain else build_loader\n"
              "make(ds, num_workers=4)\n"),
    ]
    invalid = [
        # Workers only in the options merged into the loader's `**` dict (PyTorch's MNIST example).
        Invalid("from torch.utils.data import DataLoader\ndef main(use_cuda):\n    kw = {'batch_size': 64}\n"
                "    if use_cuda:\n        kw.update({'num_workers': 1, 'pin_memory': True})\n"
                "    return DataLoader(ds, **kw)\n",
                fixed="from torch.utils.data import DataLoader\ndef main(use_cuda):\n    kw = {'batch_size': 64}\n"
                      "    if use_cuda:\n        kw.update({'num_workers': 1, 'pin_memory': True})\n"
                      "    return DataLoader(\n"
                      "        ds, **kw, prefetch_factor=4 if kw.get('num_workers', 0) > 0 else None\n    )\n"),
        # A worker count from a variable holding one is certain: no condition in the fix; a shallow
        # prefetch from a variable is fixed there.
        Invalid("from torch.utils.data import DataLoader\nNUM_WORKERS = 6\nDataLoader(ds, num_workers=NUM_WORKERS)\n",
                fixed="from torch.utils.data import DataLoader\nNUM_WORKERS = 6\n"
                      "DataLoader(ds, num_workers=NUM_WORKERS, prefetch_factor=4)\n"),
        Invalid("from torch.utils.data import DataLoader\nPREFETCH = 2\nDataLoader(ds, num_workers=w, prefetch_factor=PREFETCH)\n",
                fixed="from torch.utils.data import DataLoader\nPREFETCH = 4\n"
                      "DataLoader(ds, num_workers=w, prefetch_factor=PREFETCH)\n",
                message="Workers keep only 2 batches each in flight (`PREFETCH` is 2); set `PREFETCH = 4`"),
        Invalid("from torch.utils.data import DataLoader\nDataLoader(ds, num_workers=4)\n",
                fixed="from torch.utils.data import DataLoader\nDataLoader(ds, num_workers=4, prefetch_factor=4)\n"),
        Invalid("from torch.utils.data import DataLoader\nDataLoader(ds, num_workers=4, prefetch_factor=2)\n",
                fixed="from torch.utils.data import DataLoader\nDataLoader(ds, num_workers=4, prefetch_factor=4)\n"),
        # None means PyTorch's default: 2 with workers.
        Invalid("from torch.utils.data import DataLoader\nDataLoader(ds, num_workers=4, prefetch_factor=None)\n",
                fixed="from torch.utils.data import DataLoader\nDataLoader(ds, num_workers=4, prefetch_factor=4)\n",
                message="only 2 batches"),
        # yolov5: the loader class chosen at run time, either one a DataLoader.
        Invalid("from torch.utils.data import DataLoader\nclass InfiniteDataLoader(DataLoader):\n"
                "    def __init__(self, *args, **kwargs):\n        super().__init__(*args, **kwargs)\n"
                "def create(ds, nw, weights):\n    loader = DataLoader if weights else InfiniteDataLoader\n"
                "    return loader(ds, num_workers=nw)\n",
                fixed="from torch.utils.data import DataLoader\nclass InfiniteDataLoader(DataLoader):\n"
                "    def __init__(self, *args, **kwargs):\n        super().__init__(*args, **kwargs)\n"
                "def create(ds, nw, weights):\n    loader = DataLoader if weights else InfiniteDataLoader\n"
                "    return loader(ds, num_workers=nw, prefetch_factor=4 if nw > 0 else None)\n"),
        Invalid("from trl import SFTConfig\nconfig = SFTConfig(output_dir='out', dataloader_num_workers=nw)\n"
                "SFTTrainer(model, args=config)\n",
                fixed="from trl import SFTConfig\nconfig = SFTConfig(\n    output_dir='out',\n    dataloader_num_workers=nw,\n"
                      "    dataloader_prefetch_factor=4 if nw > 0 else None,\n)\nSFTTrainer(model, args=config)\n",
                message="set `dataloader_prefetch_factor=4`"),
        Invalid("from torch.utils.data import DataLoader\nDataLoader(ds, num_workers=nw)\n",
                fixed="from torch.utils.data import DataLoader\n"
                      "DataLoader(ds, num_workers=nw, prefetch_factor=4 if nw > 0 else None)\n"),
        Invalid("from torch.utils.data import DataLoader\nDataLoader(ds, num_workers=4, prefetch_factor=4)\n",
                fixed="from torch.utils.data import DataLoader\nDataLoader(ds, num_workers=4, prefetch_factor=6)\n",
                options={"min-prefetch-factor": 6}),
        Invalid("from torch.utils.data import DataLoader\nDataLoader(ds, num_workers=8 if fast else 0)\n",
                fixed="from torch.utils.data import DataLoader\nDataLoader(\n    ds,\n    num_workers=8 if fast else 0,\n"
                      "    prefetch_factor=4 if (8 if fast else 0) > 0 else None,\n)\n"),
        # The loop changes the sampler it draws from (a loss-aware sampler, hard-example mining):
        # the main process draws indices prefetch_factor batches per worker ahead, so the fix
        # changed which samples came. Reported, no fix; so through the loader
        # (`loader.batch_sampler`), or a helper.
        Invalid(_CHANGED_SAMPLER.format(change="sampler.update(idx, loss)"), fixed=NO_FIX,
                message="changes its sampler (`sampler.update(idx, loss)`)"),
        Invalid(_CHANGED_SAMPLER.format(change="sampler.weights[idx] = loss").replace(
                    "sampler=sampler", "batch_sampler=sampler"), fixed=NO_FIX, message="changes its sampler"),
        Invalid(_CHANGED_SAMPLER.format(change="loader.sampler.update(idx, loss)"), fixed=NO_FIX,
                message="changes its sampler"),
        Invalid("def reweigh(s, idx, loss):\n    s.weights[idx] = loss\n" + _CHANGED_SAMPLER.format(
                    change="reweigh(sampler, idx, loss)"), fixed=NO_FIX, message="changes its sampler"),
        # The loop changes in place what the sampler was built from (prioritized replay: the
        # sampler draws from `prio`, the loop sets `prio[idx]`): the fix changed which samples came,
        # as for the sampler itself. So through a name the sampler was assigned to, a batch sampler
        # around it, an augmented assignment or an in-place method.
        Invalid(_CHANGED_SAMPLER.format(change="prio[idx] = loss").replace(
                    "sampler = LossAware(len(ds))\n", "prio = torch.ones(64)\n").replace(
                    "sampler=sampler", "sampler=PrioritySampler(prio)"), fixed=NO_FIX,
                message="changes `prio`, which its sampler was built from (`prio[idx] = loss`), and the main "
                        "process draws the indices"),
        Invalid(_CHANGED_SAMPLER.format(change="prio[idx] += loss").replace(
                    "sampler = LossAware(len(ds))", "sampler = BatchSampler(PrioritySampler(weights=prio), 8, False)")
                .replace("sampler=sampler", "batch_sampler=sampler"), fixed=NO_FIX, message="changes `prio`"),
        Invalid(_CHANGED_SAMPLER.format(change="prio *= 0.9").replace(
                    "LossAware(len(ds))", "PrioritySampler(prio)"), fixed=NO_FIX, message="changes `prio`"),
        Invalid(_CHANGED_SAMPLER.format(change="self.prio.mul_(0.9)").replace(
                    "LossAware(len(ds))", "PrioritySampler(self.prio)"), fixed=NO_FIX, message="changes `self.prio`"),
        # Reading what the sampler was built from, or binding the name anew, leaves the sampler's
        # object as it was: fixed.
        Invalid(_CHANGED_SAMPLER.format(change="prio = prio * 0.9 + loss.sum()").replace(
                    "LossAware(len(ds))", "PrioritySampler(prio)"),
                fixed=_CHANGED_SAMPLER.format(change="prio = prio * 0.9 + loss.sum()").replace(
                    "LossAware(len(ds))", "PrioritySampler(prio)").replace(
                    "num_workers=2)", "num_workers=2, prefetch_factor=4)")),
        # A sampler changed only between passes (`set_epoch` in the epoch loop): fixed.
        Invalid(_CHANGED_SAMPLER.format(change="pass").replace(
                    "for x, idx in loader:", "sampler.set_epoch(1)\nfor x, idx in loader:"),
                fixed=_CHANGED_SAMPLER.format(change="pass").replace(
                    "for x, idx in loader:", "sampler.set_epoch(1)\nfor x, idx in loader:").replace(
                    "num_workers=2)", "num_workers=2, prefetch_factor=4)")),
    ]

    def check_loader(self, call: cst.Call) -> None:
        ctx = self.ctx
        minimum = self.opts["min-prefetch-factor"]
        workers = loader_arg(ctx, call, "num_workers")
        if workers is None or not has_workers(ctx, call):
            return
        value = setting_value(ctx, call, "prefetch_factor", None)
        if value is UNKNOWN or (value is not None and value >= minimum):
            return
        # 2 is PyTorch's default with workers, also what an explicit `prefetch_factor=None` means.
        depth = "2" if value is None else repr(value)
        certain = workers_positive(ctx, workers.value)
        fix = setting_fix(self, call, "prefetch_factor", str(minimum), Applicability.SAFE,
                          at_call=None if certain else f"{minimum} if {_workers_operand(ctx, call, workers)} > 0 else None")
        if setting_source(ctx, call, "prefetch_factor") is not None and value is None and not certain:
            fix = None  # `PREFETCH = None` is right with no workers, a number is not: no room for the condition
        changed = _sampler_changed_in_pass(ctx, call)
        if changed is not None:
            # A sampler the loop changes (a loss-aware one: `sampler.update(idx, loss)`), or an
            # object it was built from (prioritized replay's priorities): the main process draws
            # the indices of the batches workers prefetch, so a deeper queue draws more of them
            # before the change, and which samples come changes.
            node, held = changed
            what = f"its sampler (`{_excerpt(ctx, node)}`)" if held is None else \
                f"`{held}`, which its sampler was built from (`{_excerpt(ctx, node)}`)"
            self.report(call, f"Workers keep only {depth} batches each in flight; not fixed: the loop over the "
                              f"loader changes {what}, and the main process draws "
                              f"the indices of the batches workers prefetch, that many per worker ahead of "
                              f"the loop, so a deeper prefetch would change which samples are drawn")
            return
        self.report(call, setting_advice(ctx, call, "prefetch_factor", str(minimum),
                                         f"Workers keep only {depth} batches each in flight",
                                         "so uneven batches do not drain the queue"), fix)


def _sampler_changed_in_pass(ctx, call: cst.Call) -> tuple[cst.CSTNode, str | None] | None:
    """Where a loop that takes the loader's batches (or a function of the module it hands the
    sampler to) changes the sampler or batch sampler the loader was given, named or as
    `loader.sampler`: a method called on it (`sampler.update(idx, loss)`, `set_epoch`), or an
    attribute or item of it assigned (`sampler.weights[idx] = w`); or changes in place an object
    handed to the sampler's constructor, which the sampler may hold and read as it draws
    (prioritized replay's `prio[idx] = err` for `PrioritySampler(prio)`). Returns the change and
    the constructor argument's name (None for the sampler itself); None when no loop does."""
    scope = ctx.index.enclosing_function(call)
    watched = []  # (name, scope)
    handed = []  # (name, scope): objects the sampler was built from
    for setting in ("sampler", "batch_sampler"):
        arg = loader_arg(ctx, call, setting)
        if arg is not None and not arg.star:
            if isinstance(arg.value, (cst.Name, cst.Attribute)):
                watched.append((ctx.dotted(arg.value), scope))
            handed += [(name, scope) for name in _built_from(ctx, arg.value)]
        watched += [(f"{known}.{setting}", where) for known, where in ctx.loops.names_of(call)]
    watched = [(name, where) for name, where in watched if name]
    if not watched and not handed:
        return None

    def on(expr, name) -> bool:
        spelled = ctx.dotted(expr) if expr is not None else None
        return spelled is not None and (spelled == name or spelled.startswith(name + "."))

    for loop, _target in loader_batches(ctx, call, shared=True):
        for node in ctx.index.walk(loop.body):
            for name, where in watched:
                if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and on(node.func.value, name) \
                        or isinstance(node, cst.Call) and _changes_argument(ctx, node, name):
                    if ctx.loops.in_sight(node, name, where):
                        return node, None
                for target in binding_targets(node):
                    if isinstance(target, (cst.Attribute, cst.Subscript)) and on(target.value, name) \
                            and ctx.loops.in_sight(node, name, where):
                        return node, None
            for name, where in handed:
                if _changes_in_place(ctx, node, name, on) and ctx.loops.in_sight(node, name, where):
                    return node, name
    return None


def _built_from(ctx, sampler: cst.BaseExpression, depth: int = 0) -> list[str]:
    """The names (`prio`, `self.prio`) handed to the constructor of a sampler: the call given
    (`sampler=PrioritySampler(prio)`), or the calls a name given was assigned; a call among the
    arguments is followed too (`BatchSampler(PrioritySampler(prio), 32, False)`)."""
    if depth > 2:
        return []
    calls = [sampler] if isinstance(sampler, cst.Call) else \
        [v for v in ctx.assigned_values(sampler) if isinstance(v, cst.Call)] \
        if isinstance(sampler, (cst.Name, cst.Attribute)) and depth == 0 else []
    out = []
    for built in calls:
        for arg in built.args:
            if isinstance(arg.value, (cst.Name, cst.Attribute)) and ctx.dotted(arg.value):
                out.append(ctx.dotted(arg.value))
            elif isinstance(arg.value, cst.Call):
                out += _built_from(ctx, arg.value, depth + 1)
    return out


def _changes_in_place(ctx, node: cst.CSTNode, name: str, on) -> bool:
    """node changes the object `name` holds in place: an item or attribute of it assigned (`prio[idx]
    = err`, `prio[idx] += 1`), an augmented assignment to it (`prio *= 0.9`), an in-place tensor
    method (`prio.mul_(0.9)`) or a container's mutating one (`weights.append(w)`) called on it, or
    a function of the module called that changes its parameter so. Reading it, or binding the name
    anew (`prio = prio * 0.9`), leaves the sampler's object as it was."""
    for target in binding_targets(node):
        if isinstance(target, (cst.Attribute, cst.Subscript)) and on(target.value, name):
            return True
        if isinstance(node, cst.AugAssign) and ctx.dotted(target) == name:
            return True
    if isinstance(node, cst.Call):
        if isinstance(node.func, cst.Attribute) and on(node.func.value, name):
            method = node.func.attr.value
            if method in _MUTATORS or method.endswith("_") and not method.startswith("_") \
                    and method != "requires_grad_":
                return True
        return _changes_argument(ctx, node, name)
    return False


class DataLoaderRaggedLastBatch(DataLoaderRule):
    code = "TL105"
    name = "dataloader-ragged-last-batch"
    summary = "Shuffled training loader without `drop_last=True`"
    source = "§6.2"
    fix_applicability = "unsafe"
    docs = """
## What it does
Flags a shuffled training `DataLoader` (`shuffle=True`, or a `RandomSampler`,
`DistributedSampler`, `WeightedRandomSampler` or `SubsetRandomSampler` as its `sampler`, passed
directly or through a name) without
`drop_last=True`; not one with `batch_size=None`, whose dataset yields whole batches (there is no
ragged last batch, and `drop_last` would raise), nor one whose batch size is 1 (written, or
DataLoader's default when none is given: every batch is one sample). Whether it trains is read as TL102 describes (the optimizer steps of its loops,
also on the calls of a function other loaders go through; else its name). Settings written as
names (`drop_last=cfg.drop_last`) are read as TL101 describes, and fixed where they are written.
Not a loader that shuffles a dataset whose size the file writes (a `TensorDataset` of
`torch.randn(20, 3)`, a class whose `__len__` returns a literal) when its batch size divides that
size or exceeds it: every batch is then the same size, and for a dataset smaller than one batch
`drop_last=True` would leave no batch at all.

## Why is this bad?
The last batch of each epoch is smaller. A new shape recompiles `torch.compile`d graphs, defeats
CUDA graphs and cuDNN autotuning caches, and a tiny batch gives a noisy gradient step.

## Example
```python
loader = DataLoader(ds, batch_size=64, shuffle=True)
```

## Use instead
```python
loader = DataLoader(ds, batch_size=64, shuffle=True, drop_last=True)
```

## Fix safety
Unsafe: up to `batch_size - 1` samples per epoch are skipped (a different subset each epoch).
A `drop_last` passed by position is replaced where it stands. A loader built by a comprehension
(`{x: DataLoader(sets[x], shuffle=True) for x in ["train", "val"]}`) stands for the evaluation
loaders too: the fix sets `drop_last` per key (`drop_last=x == "train"`) where the keys are
written and one of them (`"train"`, `"training"`) names the training set; otherwise it is
reported with no fix, the message showing that setting.
"""
    valid = [
        # Re-bound through a wrapper of itself (`accelerator.prepare`): still the loader its loops
        # go over, which take no optimizer step here.
        Valid("from torch.utils.data import DataLoader\ndef check(accelerator):\n    dl = DataLoader(ds, shuffle=True)\n"
              "    dl = accelerator.prepare(dl)\n    for _ in range(3):\n        for b in dl:\n            seen.append(b)\n"),
        Valid("from torch.utils.data import DataLoader\nDataLoader(ds, shuffle=True, drop_last=True)\n"),
        Valid("from torch.utils.data import DataLoader\nDataLoader(ds, shuffle=False)\n"),
        Valid("from torch.utils.data import DataLoader\nDataLoader(ds)\n"),
        Valid("from torch.utils.data import DataLoader\nval_loader = DataLoader(ds, shuffle=True)\n"),
        # One sample a batch (written, or DataLoader's default): no last batch is smaller, and
        # drop_last changes nothing (the finding was noise).
        Valid("from torch.utils.data import DataLoader\nDataLoader(ds, shuffle=True)\n"),
        Valid("from torch.utils.data import DataLoader\nDataLoader(ds, batch_size=1, shuffle=True)\n"),
        # `batch_size=None`: the dataset yields whole batches (DLRM's); drop_last would raise.
        Valid("from torch.utils.data import DataLoader\nDataLoader(batches, batch_size=None, shuffle=True)\n"),
        # Evaluation by whole words of the name, or a stem run together with a loader word.
        Valid("from torch.utils.data import DataLoader\ntestloader = DataLoader(ds, shuffle=True)\n"
              "evalDataLoader = DataLoader(ds, shuffle=True)\n"),
        # A dataset whose size the file writes, smaller than the batch size or a multiple of it:
        # every batch is the same size. Before, `drop_last=True` was added, and a dataset smaller
        # than a batch gave no batch at all (the training loop never ran; a tester's toy script
        # then failed reading the loss after it).
        Valid("import torch\nfrom torch.utils.data import DataLoader, TensorDataset\nx = torch.randn(20, 3)\n"
              "train_loader = DataLoader(TensorDataset(x, x.sum(1)), batch_size=32, shuffle=True)\n"),
        Valid("import torch\nfrom torch.utils.data import DataLoader, TensorDataset\n"
              "train_loader = DataLoader(TensorDataset(torch.zeros((64, 3))), batch_size=16, shuffle=True)\n"),
        Valid("from torch.utils.data import DataLoader, Dataset\nclass Toy(Dataset):\n    def __len__(self):\n"
              "        return 10\n    def __getitem__(self, i):\n        return i\n"
              "train_loader = DataLoader(Toy(), batch_size=32, shuffle=True)\n"),
        # Samplers that keep the order, or are told not to shuffle.
        Valid("from torch.utils.data import DataLoader, SequentialSampler\n"
              "DataLoader(ds, sampler=SequentialSampler(ds), batch_size=8)\n"),
        Valid("from torch.utils.data import DataLoader\nfrom torch.utils.data.distributed import DistributedSampler\n"
              "DataLoader(ds, sampler=DistributedSampler(ds, shuffle=False), batch_size=8)\n"),
        Valid("from torch.utils.data import DataLoader, RandomSampler\n"
              "sampler = RandomSampler(ds) if train else None\nDataLoader(ds, sampler=sampler, batch_size=8)\n"),
        # Handed to a local function whose loop only checks the batches (accelerate's data-loop test).
        Valid("from torch.utils.data import DataLoader\ndef check_batches(dl):\n    for batch in dl:\n"
              "        assert len(batch) == 4\nloader = DataLoader(ds, shuffle=True)\ncheck_batches(loader)\n"),
        # A function both loaders go through, stepping only on `a`'s calls: `b` does not train.
        Valid(_SHARED_EPOCH.format(a=", drop_last=True", b="")),
        Valid(_SHARED_EPOCH_GUARD.format(a=", drop_last=True", b="")),
        Valid(_PHASES.format(a=", drop_last=True", b="")),
        Valid(_PHASE_KEYS.format(a=", drop_last=True", b="")),
        Valid(_PHASE_PICKED.format(a=", drop_last=True", b="")),
        Valid(_PHASES_ZIP.format(a=", drop_last=True", b="")),
        # ... or from a dict's items, by their key.
        Valid("from torch.utils.data import DataLoader\n"
              "held = {'fit': DataLoader(ds, shuffle=True, drop_last=True), 'check': DataLoader(vs, shuffle=True)}\n"
              "for name, dl in held.items():\n    for x in dl:\n        loss = model(x)\n"
              "        if name == 'fit':\n            loss.backward()\n            opt.step()\n"),
        # Picked from a dict by key: the loop over "b" runs no optimizer step.
        Valid(_BY_KEY.format(pin_a=", drop_last=True", pin_b="", move="x.cuda()")),
    ]
    invalid = [
        # PyTorch's ImageNet example: a DistributedSampler or none, `shuffle=(sampler is None)`:
        # shuffled either way.
        Invalid("from torch.utils.data import DataLoader, DistributedSampler\n"
                "sampler = DistributedSampler(ds) if distributed else None\n"
                "loader = DataLoader(ds, batch_size=64, shuffle=(sampler is None), sampler=sampler)\n"
                "for epoch in range(3):\n    for x in loader:\n        model(x).backward()\n        opt.step()\n",
                message="set `drop_last=True`"),
        # Shuffled through the loader's `**` dict, which does not set drop_last: set beside it.
        Invalid(_MNIST.format(x="data.to(device)"),
                fixed=_MNIST.format(x="data.to(device)").replace("**train_kwargs)", "**train_kwargs, drop_last=True)")),
        Invalid("from torch.utils.data import DataLoader\nDataLoader(ds, batch_size=8, shuffle=True)\n",
                fixed="from torch.utils.data import DataLoader\nDataLoader(ds, batch_size=8, shuffle=True, drop_last=True)\n"),
        Invalid(_SHARED_EPOCH.format(a="", b=""), fixed=_SHARED_EPOCH.format(a=", drop_last=True", b="")),
        Invalid(_SHARED_EPOCH_GUARD.format(a="", b=""), fixed=_SHARED_EPOCH_GUARD.format(a=", drop_last=True", b="")),
        # PyTorch's fine-tuning tutorial: one call builds the "train" and the "val" loader; the
        # validation loader must keep its last batch (its loss is divided by the dataset's size).
        Invalid("from torch.utils.data import DataLoader\n"
                "loaders = {x: DataLoader(sets[x], 4, shuffle=True) for x in ['train', 'val']}\n"
                "for epoch in range(3):\n    for phase in ['train', 'val']:\n        for x, y in loaders[phase]:\n"
                "            loss = model(x, y)\n            if phase == 'train':\n"
                "                loss.backward()\n                opt.step()\n",
                fixed="from torch.utils.data import DataLoader\n"
                      "loaders = {\n    x: DataLoader(sets[x], 4, shuffle=True, drop_last=x == 'train')\n"
                      "    for x in ['train', 'val']\n}\n"
                      "for epoch in range(3):\n    for phase in ['train', 'val']:\n        for x, y in loaders[phase]:\n"
                      "            loss = model(x, y)\n            if phase == 'train':\n"
                      "                loss.backward()\n                opt.step()\n",
                message="`drop_last=x == 'train'`"),
        # Keys not written (or none of them the training set's): the setting is shown, not written.
        Invalid("from torch.utils.data import DataLoader\n"
                "loaders = {x: DataLoader(sets[x], 4, shuffle=True) for x in phases}\n"
                "for epoch in range(3):\n    for phase in phases:\n        for x, y in loaders[phase]:\n"
                "            loss = model(x, y)\n            loss.backward()\n            opt.step()\n",
                fixed=NO_FIX, message='`drop_last=x == "train"`'),
        # Shuffling and keeping the last batch by a configuration's defaults: the default is fixed.
        Invalid("from torch.utils.data import DataLoader\nclass Args:\n    shuffle = True\n    drop_last = False\n"
                "DataLoader(ds, 8, shuffle=Args.shuffle, drop_last=Args.drop_last)\n",
                fixed="from torch.utils.data import DataLoader\nclass Args:\n    shuffle = True\n    drop_last = True\n"
                      "DataLoader(ds, 8, shuffle=Args.shuffle, drop_last=Args.drop_last)\n",
                message="unless configured otherwise (`Args.drop_last` is off by default); default `Args.drop_last` to"),
        # Names that only contain an evaluation stem: `retrieval`, `interval`.
        Invalid("from torch.utils.data import DataLoader\nretrieval_loader = DataLoader(ds, 8, shuffle=True)\n",
                fixed="from torch.utils.data import DataLoader\n"
                      "retrieval_loader = DataLoader(ds, 8, shuffle=True, drop_last=True)\n"),
        Invalid("from torch.utils.data import DataLoader\nDataLoader(ds, 8, shuffle=True, drop_last=False)\n",
                fixed="from torch.utils.data import DataLoader\nDataLoader(ds, 8, shuffle=True, drop_last=True)\n"),
        Invalid("from torch.utils.data import DataLoader\ntrain_loader = DataLoader(ds, 32, True)\n",
                fixed="from torch.utils.data import DataLoader\ntrain_loader = DataLoader(ds, 32, True, drop_last=True)\n"),
        # A known size that the batch size does not divide: the last batch is smaller.
        Invalid("import torch\nfrom torch.utils.data import DataLoader, TensorDataset\nx = torch.randn(70, 3)\n"
                "train_loader = DataLoader(TensorDataset(x, x.sum(1)), batch_size=32, shuffle=True)\n",
                fixed="import torch\nfrom torch.utils.data import DataLoader, TensorDataset\nx = torch.randn(70, 3)\n"
                      "train_loader = DataLoader(\n    TensorDataset(x, x.sum(1)), batch_size=32, shuffle=True, drop_last=True\n)\n"),
        # A positional drop_last=False is replaced where it stands.
        Invalid("from torch.utils.data import DataLoader\nloader = DataLoader(ds, 32, True, None, None, 2, None, True, False)\n",
                fixed="from torch.utils.data import DataLoader\n"
                      "loader = DataLoader(ds, 32, True, None, None, 2, None, True, True)\n"),
        Invalid("import torch\nloader = torch.utils.data.DataLoader(ds, batch_size=4, shuffle=True, num_workers=2)\n",
                fixed="import torch\nloader = torch.utils.data.DataLoader(\n"
                      "    ds, batch_size=4, shuffle=True, num_workers=2, drop_last=True\n)\n"),
        # The Hugging Face examples' shape: a RandomSampler assigned first.
        Invalid("from torch.utils.data import DataLoader, RandomSampler\ntrain_sampler = RandomSampler(train_dataset)\n"
                "train_loader = DataLoader(train_dataset, sampler=train_sampler, batch_size=8)\n",
                fixed="from torch.utils.data import DataLoader, RandomSampler\ntrain_sampler = RandomSampler(train_dataset)\n"
                "train_loader = DataLoader(\n    train_dataset, sampler=train_sampler, batch_size=8, drop_last=True\n)\n"),
        # Random draws: class-balanced weights, or a random subset of the indices.
        Invalid("from torch.utils.data import DataLoader, WeightedRandomSampler\n"
                "sampler = WeightedRandomSampler(weights, num_samples=len(ds))\n"
                "train_loader = DataLoader(ds, batch_size=8, sampler=sampler)\n",
                fixed="from torch.utils.data import DataLoader, WeightedRandomSampler\n"
                      "sampler = WeightedRandomSampler(weights, num_samples=len(ds))\n"
                      "train_loader = DataLoader(ds, batch_size=8, sampler=sampler, drop_last=True)\n"),
        Invalid("import torch\nloader = torch.utils.data.DataLoader(\n"
                "    ds, batch_size=4, sampler=torch.utils.data.SubsetRandomSampler(train_idx)\n)\n",
                fixed="import torch\nloader = torch.utils.data.DataLoader(\n"
                      "    ds,\n    batch_size=4,\n    sampler=torch.utils.data.SubsetRandomSampler(train_idx),\n"
                      "    drop_last=True,\n)\n"),
        Invalid("import torch\nfrom torch.utils.data.distributed import DistributedSampler\n"
                "loader = torch.utils.data.DataLoader(ds, batch_size=4, sampler=DistributedSampler(ds))\n",
                fixed="import torch\nfrom torch.utils.data.distributed import DistributedSampler\n"
                      "loader = torch.utils.data.DataLoader(\n"
                      "    ds, batch_size=4, sampler=DistributedSampler(ds), drop_last=True\n)\n"),
    ]

    def check_loader(self, call: cst.Call) -> None:
        ctx = self.ctx
        batch_sampler = loader_arg(ctx, call, "batch_sampler")
        if not shuffles(ctx, call) or (batch_sampler is not None and ctx.literal(batch_sampler.value) is not None):
            return
        batch_size = loader_arg(ctx, call, "batch_size")
        if batch_size is not None and not batch_size.star and ctx.literal(batch_size.value) is None:
            return  # `batch_size=None`: the dataset's items are the batches; drop_last would raise
        if not is_training_loader(ctx, call):
            return
        if setting_value(ctx, call, "drop_last", False) is not False:
            return
        if _batches_even(ctx, call):
            return
        problem = "The last batch of each epoch is smaller (new shapes, a noisy step)"
        per_key = _comprehension_key(ctx, call)
        if per_key is not None:
            # One call builds the evaluation loaders too (`{x: DataLoader(...) for x in ["train",
            # "val"]}`): dropping their last batch would drop evaluation samples. Where the keys
            # are written and one of them names the training set, the setting is per key.
            name, train = per_key
            q = ctx.quote
            value = f"{name} == {q}{train or 'train'}{q}"
            fix = None
            if train is not None and setting_source(ctx, call, "drop_last") is None:
                fix = setting_fix(self, call, "drop_last", value, Applicability.UNSAFE)
            self.report(call, f"{problem}; set `drop_last` for the training loader only, as in "
                              f"`drop_last={value}`, as this call builds every `{name}`'s loader", fix)
            return
        self.report(call, setting_advice(ctx, call, "drop_last", "True", problem),
                    setting_fix(self, call, "drop_last", "True", Applicability.UNSAFE))


def _batches_even(ctx, call: cst.Call) -> bool:
    """Every batch of an epoch has the same size: the batch size is 1 (written or the default), or
    the loader shuffles its whole dataset (no sampler of its own), whose size the file shows (`_dataset_size`), and the literal batch size
    divides it or is larger than it. A dataset smaller than its batch size is one batch an epoch;
    `drop_last=True` would leave none, and the training loop would never run."""
    batch = setting_value(ctx, call, "batch_size", 1, certain=True)
    if not isinstance(batch, int) or isinstance(batch, bool) or batch <= 0:
        return False
    if batch == 1:  # one sample a batch (also the default): no last batch is smaller
        return True
    sampler = loader_arg(ctx, call, "sampler")
    if sampler is not None and (sampler.star or ctx.literal(sampler.value) is not None):
        return False
    size = _dataset_size(ctx, call)
    return size is not None and (size <= batch or size % batch == 0)


# Torch factories whose first argument (or the first element of a size tuple) is the first dimension.
_SIZED_FACTORIES = frozenset({"torch.randn", "torch.rand", "torch.zeros", "torch.ones", "torch.empty",
                              "torch.full", "torch.arange"})


def _dataset_size(ctx, call: cst.Call) -> int | None:
    """The number of samples of the loader's dataset, when the file writes it as a literal: a
    `TensorDataset` of a torch factory's tensor (`torch.randn(20, 3)`, through a name assigned it
    once), or a dataset class of the module whose `__len__` returns a literal; None otherwise."""
    builds = dataset_builds(ctx, call)
    if len(builds) != 1:
        return None
    build = builds[0]
    if ctx.names.qualified(build.func) in ("torch.utils.data.TensorDataset", "torch.utils.data.dataset.TensorDataset"):
        first = build.args[0] if build.args and not build.args[0].star and build.args[0].keyword is None else None
        return _first_dimension(ctx, first.value, 0) if first is not None else None
    cls = dataset_class(ctx, call)
    length = method_of(ctx, cls, "__len__") if cls is not None else None
    if length is None:
        return None
    returns = [n for n in ctx.index.walk(length) if isinstance(n, cst.Return)]
    value = ctx.literal(returns[0].value) if len(returns) == 1 and returns[0].value is not None else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _first_dimension(ctx, expr: cst.BaseExpression, depth: int) -> int | None:
    """The literal first dimension of a tensor a torch factory makes (`torch.randn(20, 3)`,
    `torch.zeros((20, 3))`), followed through a name assigned once; None otherwise."""
    if isinstance(expr, cst.Name) and depth < 3:
        values = ctx.assigned_values(expr)
        return _first_dimension(ctx, values[0], depth + 1) if len(values) == 1 else None
    if not (isinstance(expr, cst.Call) and ctx.names.qualified(expr.func) in _SIZED_FACTORIES and expr.args):
        return None
    first = expr.args[0]
    if first.star or first.keyword is not None:
        return None
    size = first.value
    if isinstance(size, (cst.Tuple, cst.List)) and size.elements:
        size = size.elements[0].value
    if ctx.names.qualified(expr.func) == "torch.arange" and len(expr.args) > 1:
        return None  # `torch.arange(start, end)`
    value = ctx.literal(size)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _comprehension_key(ctx, call: cst.Call) -> tuple[str, str | None] | None:
    """(the name, the training key) when call is the element of a comprehension that builds one
    loader per value of that name (`{x: DataLoader(sets[x], ...) for x in ["train", "val"]}`:
    ("x", "train")); the training key is the one string of a written list of them that names the
    training set (`"train"`, `"training"`), else None. None when call is no such element."""
    comp = ctx.parent(call)
    if not isinstance(comp, (cst.DictComp, cst.ListComp, cst.SetComp, cst.GeneratorExp)):
        return None
    if (comp.value if isinstance(comp, cst.DictComp) else comp.elt) is not call:
        return None
    target = comp.for_in.target
    if not isinstance(target, cst.Name):
        return None
    keys = comp.for_in.iter
    values = [ctx.literal(e.value) for e in keys.elements] if isinstance(keys, (cst.List, cst.Tuple)) else []
    train = [v for v in values if isinstance(v, str) and v.lower() in ("train", "training")]
    return target.value, train[0] if len(train) == 1 and all(isinstance(v, str) for v in values) else None


# -- heavy per-sample work -------------------------------------------------------------------

_CACHE = re.compile(r"cache", re.IGNORECASE)


def _loaders_using(ctx, predicate) -> list[cst.Call]:
    return [c for c in ctx.index.nodes(cst.Call) if is_loader(ctx, c) and predicate(c)]


# TL106's device-move case: the collate_fn moves batches to a module-level device.
_MOVES = '''\
import torch
from torch.utils.data import DataLoader

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def collate(batch):
    xs = torch.stack([b[0] for b in batch]).to(device)
    ys = torch.stack([b[1] for b in batch]).to(device)
    return xs, ys


loader = DataLoader(ds, batch_size=4, collate_fn=collate)
for x, y in loader:
    loss = model(x, y)
    loss.backward()
    opt.step()
'''
_MOVES_RETURN = ("    xs = torch.stack([b[0] for b in batch]).to(device)\n"
                 "    ys = torch.stack([b[1] for b in batch]).to(device)\n    return xs, ys\n")
_MOVES_RETURN_FIXED = _MOVES_RETURN.replace(".to(device)", "")
_LONG_RETURN = ("    return torch.stack([b[0] for b in batch]).to(device=device, memory_format=torch.contiguous_format), "
                "torch.stack([b[1] for b in batch]).to(device)\n")
_LONG_RETURN_FIXED = ("    return torch.stack([b[0] for b in batch]).to(memory_format=torch.contiguous_format), "
                      "torch.stack([b[1] for b in batch])\n")
_MOVES_LOOP = "for x, y in loader:\n    loss = model(x, y)\n    loss.backward()\n    opt.step()\n"
_MOVES_LOOP_FIXED = _MOVES_LOOP.replace("\n", "\n    x, y = _trainlint_to_device((x, y), device)\n", 1)
_OTHER_LOOPS = ("\n\ndef evaluate():\n    for x, y in loader:\n        print(model(x, y))\n\n\n"
                "def train(loader):\n    for batch in loader:\n        model(batch).backward()\n        opt.step()\n\n\n"
                "train(DataLoader(ds))\n")
_DRAWS = ("it = iter(loader)\nfor step in range(100):\n    try:\n        x, y = next(it)\n    except StopIteration:\n"
          "        it = iter(loader)\n        x, y = next(it)\n    loss = model(x, y)\n    loss.backward()\n    opt.step()\n")
_SHARED = ("def run_epoch(model, loader, opt=None):\n    for batch in loader:\n        loss = model(batch)\n"
           "        if opt is not None:\n            loss.backward()\n            opt.step()\n\n\n"
           "run_epoch(model, loader, opt)\nrun_epoch(model, DataLoader(val_ds))\n")
_IN_DICT = ("def evaluate(loaders):\n    for name, dl in loaders.items():\n        for x, y in dl:\n"
            "            print(name, model(x, y))\n\n\nevaluate({'train': loader})\n")
_MOVES_FIXED = '''\
import torch
from torch.utils.data import DataLoader


def _trainlint_to_device(batch, device):
    """Added by trainlint (TL106): the batch with every tensor moved to `device`."""
    if isinstance(batch, torch.Tensor):
        return batch.to(device, non_blocking=True)
    if hasattr(batch, "to") and callable(batch.to) and not isinstance(batch, type):
        return batch.to(device)  # an object of its own class: its `to` may not take non_blocking
    if isinstance(batch, dict):
        return type(batch)(
            (k, _trainlint_to_device(v, device)) for k, v in batch.items()
        )
    if isinstance(batch, (list, tuple)):
        moved = [_trainlint_to_device(v, device) for v in batch]
        return type(batch)(*moved) if hasattr(batch, "_fields") else type(batch)(moved)
    return batch


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def collate(batch):
    xs = torch.stack([b[0] for b in batch])
    ys = torch.stack([b[1] for b in batch])
    return xs, ys


loader = DataLoader(ds, batch_size=4, collate_fn=collate)
for x, y in loader:
    x, y = _trainlint_to_device((x, y), device)
    loss = model(x, y)
    loss.backward()
    opt.step()
'''


class HeavyCollateFn(Rule):
    code = "TL106"
    name = "heavy-collate-fn"
    summary = "`collate_fn` that tokenizes, pads, masks, decodes images or moves tensors to a device"
    source = "§3, §3.3"
    fix_applicability = "unsafe"
    # Every loader call is spelled with "DataLoader" somewhere in the file (its import at least);
    # a collate_fn passed by position has no keyword to find.
    triggers = ("collate_fn", "DataLoader")
    options = DataLoaderNoWorkers.options
    docs = """
## What it does
Resolves a loader's `collate_fn` to its definition in the module and flags one that tokenizes,
pads, builds masks, decodes images, extracts audio features (as TL107 reads them) or moves
tensors to a device.

`functools.partial(collate, ...)` is read as the function it runs, a lambda as the module's functions
its body calls (`lambda b: pad_collate(b, PAD_ID)`), and the kinds of work are
named (tokenizes text, pads token sequences, decodes images or audio, moves tensors to a device)
with offline advice that follows them (none for a device move alone).

## Why is this bad?
`collate_fn` runs once per batch on the loader's critical path; in the main process
(`num_workers=0`) the GPU waits for it at every step. Tokenizing or decoding per step repeats work
that can be done once, offline. Device moves in `collate_fn` force CUDA into worker processes.

## Example
```python
def collate(batch):
    return tokenizer([b["text"] for b in batch], padding=True, return_tensors="pt")
loader = DataLoader(ds, batch_size=32, collate_fn=collate)
```

## Use instead
Pre-tokenize once (token ids in a binary array or memmap), pad to buckets offline, and at least
run the loader with workers:
```python
loader = DataLoader(ds, batch_size=32, collate_fn=collate, num_workers=min(8, os.cpu_count() or 1))
```

## Fix safety
Unsafe. Device moves in `collate_fn` (to a string or module-level device) are taken out of it, each
where it stands with its other arguments kept (`y.to(device, dtype=torch.float32)` becomes
`y.to(dtype=torch.float32)`; `non_blocking` goes with the device), and done where the batches arrive instead, through a small helper the fix adds (`_trainlint_to_device`,
which moves every tensor of a nested batch with `non_blocking=True`, and calls a batch object of
another class's own `.to(device)` without it, since that may not take it): first thing in every loop over the loader (evaluation
loops too, and a function's loop that other loaders go through), right after each `next(it)` draw.
The loops of every loader built with that `collate_fn` get the move. When one of them also goes
where its loops are not seen (another module's function, a comprehension, a one-off draw such as
`x, y = next(iter(loader))` after training, a draw that binds no name, `model(*next(it))`, an
iterator made in a `with` or handed on), or the module uses the function in another way too, no
fix (the message names the draw): some batches would stay on the CPU. Nor when the
`collate_fn` also works on the device apart from its moves (a torch factory given a device that
is not the CPU, `torch.rand(shape, device=device)`, or a module-level tensor on the device, `xs -
MEAN`): without the moves that would meet host tensors. Nor
when the `collate_fn` returns something it does not move (a part of its tuple or dict, such as the
sequence lengths `pack_padded_sequence` needs on the CPU, or a value the file does not show to be
a device copy): moving the whole batch in the loop would move that too. Nor when the move is
CUDA-only (`.cuda()`, `.cuda(local_rank)`, `"cuda"`) and a loop it would go into also takes the
batches of another loader (`DataLoader(ds)` in the `else:` of `if use_cuda:`): that run would
break. A conditional `collate_fn` (`collate_to_gpu if use_cuda else None`) is reported by the
branch that does the work, with no fix and no workers; one behind a lambda keeps its device moves
(no fix). Otherwise, when the
loader runs in the main process, the fix adds workers, as TL101 (not to an iterable dataset of
this module that does not split its stream between workers: each would replay every sample; the
message says so). Moving tokenizing and decoding offline is left to you.
"""
    _SRC = "import os\nfrom torch.utils.data import DataLoader\ndef collate(batch):\n    {body}\n    return batch\nloader = DataLoader(ds, {args})\n"
    valid = [
        Valid(_SRC.format(body="batch = torch.stack(batch)", args="collate_fn=collate")),
        # A collate_fn that changes the layout only moves nothing to a device.
        Valid(_SRC.format(body="batch = torch.stack(batch).to(memory_format=torch.channels_last)",
                          args="collate_fn=collate, num_workers=2")),
        Valid(_SRC.format(body="ids = tokenizer(batch)", args="collate_fn=other")),
        Valid("from torch.utils.data import DataLoader\nloader = DataLoader(ds, collate_fn=default_collate)\n"),
        Valid(_SRC.format(body="x = [b * 2 for b in batch]", args="collate_fn=collate, num_workers=4")),
    ]
    invalid = [
        # Through functools.partial (Hugging Face's `partial(collate, tokenizer=tok)`): the function it runs.
        Invalid(("import functools\n" + _SRC).format(body="ids = tokenizer(batch, padding=True)",
                                                     args="collate_fn=functools.partial(collate, tokenizer=tok), num_workers=2"),
                message="tokenizes"),
        Invalid(_SRC.format(body="enc = tokenizer(batch, padding=True)", args="collate_fn=collate"),
                fixed=_SRC.format(body="enc = tokenizer(batch, padding=True)",
                                  args="collate_fn=collate, num_workers=min(8, os.cpu_count() or 1)")),
        # A lambda that calls the module's collate function with a padding id (before, the lambda's
        # own body was read, and the padding in the function it calls was not reported). In the
        # main process: no workers, a lambda cannot be pickled for spawned workers (TL101's reason).
        Invalid(_SRC.format(body="ids = pad_sequence(batch, batch_first=True, padding_value=pad_id)",
                            args="collate_fn=lambda b: collate(b, PAD_ID), num_workers=2").replace(
                                "def collate(batch):", "def collate(batch, pad_id):"),
                fixed=NO_FIX, message="collate_fn `collate` (called by its lambda) pads token sequences"),
        Invalid(_SRC.format(body="ids = pad_sequence(batch, batch_first=True, padding_value=pad_id)",
                            args="collate_fn=lambda b: collate(b, PAD_ID)").replace(
                                "def collate(batch):", "def collate(batch, pad_id):"),
                fixed=NO_FIX, message="no workers added: its `collate_fn` is a lambda"),
        # ... and device moves there: reported, left in place (the fix edits a collate_fn the loader names).
        Invalid(_SRC.format(body="batch = torch.stack(batch).to(device)",
                            args="collate_fn=lambda b: collate(b, 'cuda')").replace(
                                "def collate(batch):", "def collate(batch, device):"),
                fixed=NO_FIX, message="(no fix: the loader's collate_fn is a lambda that calls it)"),
        # With workers already, or a device move with no loop over the loader to move it to: no fix.
        Invalid(_SRC.format(body="enc = tokenizer(batch, padding=True)", args="collate_fn=collate, num_workers=4"),
                fixed=NO_FIX),
        # The collate_fn (and the workers) passed by position: no `collate_fn` keyword in the file.
        Invalid(_SRC.format(body="enc = tokenizer(batch, padding=True)", args="8, True, None, None, 4, collate"),
                fixed=NO_FIX, message="collate_fn `collate` tokenizes text"),
        Invalid(_SRC.format(body="x = pad_sequence(batch, batch_first=True)", args="collate_fn=collate"),
                fixed=_SRC.format(body="x = pad_sequence(batch, batch_first=True)",
                                  args="collate_fn=collate, num_workers=min(8, os.cpu_count() or 1)")),
        Invalid(_SRC.format(body="imgs = [Image.open(p) for p in batch]", args="collate_fn=collate"),
                fixed=_SRC.format(body="imgs = [Image.open(p) for p in batch]",
                                  args="collate_fn=collate, num_workers=min(8, os.cpu_count() or 1)")),
        Invalid(_SRC.format(body="batch = [b.cuda() for b in batch]", args="collate_fn=collate"), fixed=NO_FIX),
        # A lambda collate_fn: workers started by spawn cannot unpickle it; no workers added.
        Invalid(_SRC.format(body="pass", args="collate_fn=lambda b: tokenizer(b, padding=True)"),
                fixed=NO_FIX, message="no workers added: its `collate_fn` is a lambda"),
        # An iterable dataset that does not split its stream by worker: no workers added.
        Invalid(_STREAM.format(helper="def collate(batch):\n    return tokenizer(batch, padding=True)\n",
                               body=_UNSHARDED, options=", collate_fn=collate"),
                fixed=NO_FIX, message="no workers added: `Stream` is an IterableDataset"),
        # Device moves leave collate_fn for the training loop (a helper moves nested batches; only
        # tensors get non_blocking, a batch class's own `to` is called plainly).
        Invalid(_MOVES, fixed=_MOVES_FIXED),
        # The helper names torch as the module does, and imports it when the module does not.
        Invalid(re.sub(r"\btorch\.(?!utils)", "th.", _MOVES.replace("import torch\n", "import torch as th\n")),
                fixed=re.sub(r"\btorch\.(?!utils)", "th.", _MOVES_FIXED.replace("import torch\n", "import torch as th\n"))),
        Invalid(_MOVES.replace("import torch\n", "from torch import stack\n").replace("torch.stack", "stack")
                .replace('torch.device("cuda" if torch.cuda.is_available() else "cpu")', '"cuda"'),
                fixed=_MOVES_FIXED.replace("import torch\n", "from torch import stack\n")
                .replace("torch.stack", "stack").replace('torch.device("cuda" if torch.cuda.is_available() else "cpu")',
                                                         '"cuda"')
                .replace("DataLoader\n\n\ndef", "DataLoader\nimport torch\n\n\ndef")),
        # Device work left in the collate_fn besides its moves (a random mask made on the device,
        # a module-level CUDA mean): the fix once took the moves out and left it mixing host and
        # device tensors (then workers started CUDA). Reported, no fix.
        Invalid(_MOVES.replace("    return xs, ys\n", "    mask = torch.rand(xs.shape, device=device) < 0.15\n"
                               "    return xs, ys\n"), fixed=NO_FIX, message="no fix: it also works on the device"),
        Invalid(_MOVES.replace("\n\ndef collate", "MEAN = torch.zeros(3, device=device)\n\n\ndef collate").replace(
                    "ys = torch.stack([b[1] for b in batch]).to(device)\n",
                    "ys = torch.stack([b[1] for b in batch]).to(device)\n    xs = xs - MEAN\n"),
                fixed=NO_FIX, message="(`MEAN`)"),
        # A loop written on one line: reported, no fix (it once escaped as an internal error).
        Invalid(_MOVES.replace(_MOVES_LOOP, "for x, y in loader: loss = model(x, y); loss.backward(); opt.step()\n"),
                fixed=NO_FIX),
        # Every loop over the loader gets the move, an evaluation loop too (its batches would stay
        # on the CPU); the batch of `enumerate` is the target's second part; a loop of another
        # function over another loader of the same name is left alone.
        Invalid(_MOVES.replace(_MOVES_LOOP, _MOVES_LOOP.replace("x, y in loader", "i, (x, y) in enumerate(loader)")
                               + _OTHER_LOOPS),
                fixed=_MOVES_FIXED.replace(_MOVES_LOOP_FIXED, _MOVES_LOOP_FIXED.replace(
                    "x, y in loader", "i, (x, y) in enumerate(loader)") + _OTHER_LOOPS.replace(
                    "    for x, y in loader:\n", "    for x, y in loader:\n        x, y = _trainlint_to_device((x, y), device)\n"))),
        # Batches drawn by `next(it)` in a step loop are moved right after each draw.
        Invalid(_MOVES.replace(_MOVES_LOOP, _DRAWS),
                fixed=_MOVES_FIXED.replace(_MOVES_LOOP_FIXED, _DRAWS.replace(
                    "        x, y = next(it)\n", "        x, y = next(it)\n        x, y = _trainlint_to_device((x, y), device)\n"))),
        # A function that another loader goes through too: its loop moves every loader's batches.
        Invalid(_MOVES.replace(_MOVES_LOOP, _SHARED),
                fixed=_MOVES_FIXED.replace(_MOVES_LOOP_FIXED, _SHARED.replace(
                    "    for batch in loader:\n", "    for batch in loader:\n        batch = _trainlint_to_device(batch, device)\n"))),
        # Handed down inside a dict to a function that goes over its values: that loop moves
        # the batches too (an evaluation once got CPU batches on a GPU model).
        Invalid(_MOVES.replace(_MOVES_LOOP, _MOVES_LOOP + _IN_DICT),
                fixed=_MOVES_FIXED.replace(_MOVES_LOOP_FIXED, _MOVES_LOOP_FIXED + _IN_DICT.replace(
                    "        for x, y in dl:\n", "        for x, y in dl:\n            x, y = _trainlint_to_device((x, y), device)\n"))),
        # Handed to another module's function, or gone over by a comprehension, the loader has
        # loops this file does not show: reported, no fix.
        Invalid(_MOVES.replace(_MOVES_LOOP, "from utils import evaluate\n" + _MOVES_LOOP + "evaluate(model, loader)\n"),
                fixed=NO_FIX),
        Invalid(_MOVES.replace(_MOVES_LOOP, _MOVES_LOOP + "print([model(x, y) for x, y in loader])\n"), fixed=NO_FIX),
        # Batches taken where no loop the fix edits takes them: a one-off draw after training, a
        # draw that binds no target (`model(*next(it))`), an iterator made in a `with` or handed
        # on: they would stay on the CPU. No fix.
        Invalid(_MOVES.replace(_MOVES_LOOP, _MOVES_LOOP + "x, y = next(iter(loader))\nprint(model(x, y))\n"),
                fixed=NO_FIX, message="no fix: `next(iter(loader))` takes batches"),
        Invalid(_MOVES.replace(_MOVES_LOOP, _MOVES_LOOP + "it = iter(loader)\nfor _ in range(3):\n    print(model(*next(it)))\n"),
                fixed=NO_FIX, message="no fix: `next(it)` takes batches"),
        Invalid(_MOVES.replace(_MOVES_LOOP, _MOVES_LOOP + "with tqdm(loader) as bar:\n    for x, y in bar:\n        print(model(x, y))\n"),
                fixed=NO_FIX),
        Invalid(_MOVES.replace(_MOVES_LOOP, _MOVES_LOOP + "prefetcher = Prefetcher(iter(loader))\n"), fixed=NO_FIX),
        # One collate_fn for two loaders: both loaders' loops get the move; not when one of them
        # goes where its loops are not seen, nor when the module uses the function elsewhere too.
        Invalid(_MOVES.replace(_MOVES_LOOP, "val_loader = DataLoader(vs, collate_fn=collate)\n" + _MOVES_LOOP
                               + "for x, y in val_loader:\n    print(model(x, y))\n"),
                fixed=_MOVES_FIXED.replace(_MOVES_LOOP_FIXED, "val_loader = DataLoader(vs, collate_fn=collate)\n"
                                           + _MOVES_LOOP_FIXED + "for x, y in val_loader:\n"
                                           "    x, y = _trainlint_to_device((x, y), device)\n    print(model(x, y))\n")),
        Invalid(_MOVES.replace(_MOVES_LOOP, "val_loader = DataLoader(vs, collate_fn=collate)\n" + _MOVES_LOOP
                               + "print([model(x, y) for x, y in val_loader])\n"), fixed=NO_FIX),
        Invalid(_MOVES.replace(_MOVES_LOOP, _MOVES_LOOP + "x, y = collate(samples)\n"), fixed=NO_FIX),
        # A CUDA-only move (`.cuda(local_rank)`) whose loop also takes the batches of a CPU
        # loader (the other branch of `if use_cuda:`): the added move would break that run.
        Invalid(_MOVES.replace(").to(device)", ").cuda(local_rank)").replace(
                    "loader = DataLoader(ds, batch_size=4, collate_fn=collate)\n",
                    "if use_cuda:\n    loader = DataLoader(ds, batch_size=4, collate_fn=collate)\n"
                    "else:\n    loader = DataLoader(ds, batch_size=4)\n"), fixed=NO_FIX),
        # A conditional collate_fn: the branch that moves is reported (by its name); no fix, which
        # would change the other branch's batches too, and no workers (TL101 says so as well).
        Invalid(_MOVES.replace("collate_fn=collate)", "collate_fn=collate if use_cuda else None)"), fixed=NO_FIX,
                message="collate_fn `collate` moves tensors to a device"),
        # A collate_fn that leaves part of its batch on the CPU (sequence lengths, which packing
        # needs there): moving the whole batch in the loop would move them too; reported only.
        Invalid(_MOVES.replace("ys = torch.stack([b[1] for b in batch]).to(device)",
                               "ys = torch.tensor([len(b[0]) for b in batch])"), fixed=NO_FIX,
                message="its batch may hold values it leaves on the CPU"),
        Invalid(_MOVES.replace("return xs, ys", "return {'x': xs, 'y': ys, 'n': torch.tensor(len(batch))}"),
                fixed=NO_FIX, message="its batch may hold values it leaves on the CPU"),
        # What is made on the device by a torch function of moved tensors counts as moved.
        Invalid(_MOVES.replace("torch.stack([b[1] for b in batch]).to(device)", "torch.cat([b[1].to(device) for b in batch])"),
                fixed=_MOVES_FIXED.replace("torch.stack([b[1] for b in batch])", "torch.cat([b[1] for b in batch])")),
        # An instance of a class with `__call__` is named as the loader names it (its class).
        Invalid("from torch.utils.data import DataLoader\nclass PadCollator:\n    def __call__(self, batch):\n"
                "        return pad_sequence(batch, batch_first=True)\n"
                "loader = DataLoader(ds, collate_fn=PadCollator(), num_workers=2)\n", fixed=NO_FIX,
                message="collate_fn `PadCollator` pads token sequences"),
        # `.cuda(rank)` keeps its index (a module-level rank): the batches go to that device, not
        # to the current one (`.cuda()` alone means the current device).
        Invalid(_MOVES.replace('device = torch.device("cuda" if torch.cuda.is_available() else "cpu")', "rank = 1")
                .replace(".to(device)", ".cuda(rank)"),
                fixed=_MOVES_FIXED.replace('device = torch.device("cuda" if torch.cuda.is_available() else "cpu")',
                                           "rank = 1").replace("((x, y), device)", "((x, y), rank)")),
        Invalid(_MOVES.replace(".to(device)", ".cuda(device=device)"), fixed=_MOVES_FIXED),
        Invalid(_MOVES.replace(".to(device)", ".cuda()"),
                fixed=_MOVES_FIXED.replace("((x, y), device)", '((x, y), "cuda")')),
        # A one-off draw outside a loop (a sample batch for shapes) would stay on the CPU.
        Invalid(_MOVES.replace(_MOVES_LOOP, "it = iter(loader)\nsample = next(it)\n" + _MOVES_LOOP), fixed=NO_FIX),
        # A move that also converts keeps the conversion (a label cast to float for BCE), by keyword
        # or by position; non_blocking goes with the device.
        Invalid(_MOVES.replace("[1] for b in batch]).to(device)", "[1] for b in batch]).to(device, dtype=torch.float32)"),
                fixed=_MOVES_FIXED.replace("[1] for b in batch])\n", "[1] for b in batch]).to(dtype=torch.float32)\n")),
        Invalid(_MOVES.replace("[1] for b in batch]).to(device)", "[1] for b in batch]).to(device, torch.float32, copy=True)")
                .replace("[0] for b in batch]).to(device)", "[0] for b in batch]).to(device=device, non_blocking=True)"),
                fixed=_MOVES_FIXED.replace("[1] for b in batch])\n", "[1] for b in batch]).to(torch.float32, copy=True)\n")),
        # Moves in one line too long for it (a keyword device beside another keyword): each `.to`
        # is taken out where it stands, other arguments kept (the fix once rewrote the whole
        # return value for one of them, over the other's edit: an internal error).
        Invalid(_MOVES.replace(_MOVES_RETURN, _LONG_RETURN), fixed=_MOVES_FIXED.replace(_MOVES_RETURN_FIXED, _LONG_RETURN_FIXED)),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        if not is_loader(ctx, node) or ctx.is_offline_script:
            return
        arg = collate_arg(ctx, node)
        if arg is None or arg.star:
            return
        # A conditional collate_fn (`collate_to_gpu if use_cuda else None`): the branch that
        # does the work is reported; no fix, which would change the other branch's batches too.
        choices = callable_choices(ctx, arg.value)
        definition, work = next(((d, w) for d in choices if (w := heavy_work(ctx, d, masks=True))), (None, None))
        wrapper = None
        if not work:
            # `collate_fn=lambda b: pad_collate(b, PAD_ID)`: the work is in the function it calls.
            definition, wrapper, work = next(((d, lam, w) for lam in choices for d in _called_by_lambda(ctx, lam)
                                              if (w := heavy_work(ctx, d, masks=True))), (None, None, None))
        if not work:
            return
        conditional = isinstance(arg.value, cst.IfExp)
        shown = next((b for b in (arg.value.body, arg.value.orelse) if (wrapper or definition) in callable_choices(ctx, b)),
                     arg.value) if conditional else arg.value
        kinds = sorted({kind for _, kind in work})
        where = "in the main process, so the GPU waits on it every step" if workers_value(ctx, node) == 0 \
            else "once per batch on the loader's critical path"
        offline = offline_advice(kinds)
        name = f"{definition.name.value}` (called by its lambda)" if wrapper else f"{_written_name(ctx, shown, definition)}`"
        message = (f"collate_fn `{name} {', '.join(kinds)} {where}"
                   + (f"; do this once offline ({offline})" if offline else ""))
        moves = [call for call, kind in work if kind == "moves tensors to a device"]
        if moves:
            message += "; move `.to(device)` into the training loop"
            # Device moves first: adding workers to a collate_fn that touches CUDA would break it.
            if wrapper is not None:
                # The fix rewrites a collate_fn the loader names; one behind a lambda is left as it is.
                message += " (no fix: the loader's collate_fn is a lambda that calls it)"
                fix = None
            elif other := _other_device_work(ctx, definition, moves):
                # Taking the moves out would leave it mixing host and device tensors, and workers
                # added next (TL101) would start CUDA in forked processes.
                message += (f"; no fix: it also works on the device apart from those moves (`{_excerpt(ctx, other)}`), "
                            "which would then meet host tensors; do that in the training loop too")
                fix = None
            elif collate_leaves_on_host(ctx, definition):
                # Moving the whole batch would move what it keeps on the CPU too (`lengths` for packing).
                message += (" for the tensors it moves (no fix: its batch may hold values it leaves on the CPU, "
                            "which a move of the whole batch would move too)")
                fix = None
            elif conditional:
                fix = None
            elif stray := next((draw for user in _collate_users(ctx, definition)
                                for draw in ctx.loops.stray_draws(user)), None):
                # Batches taken outside every loop the fix would edit (`next(iter(loader))` after
                # training) would stay on the CPU while the model is on the device.
                message += (f"; no fix: `{_excerpt(ctx, stray)}` takes batches outside the loops the move would "
                            f"go into, and they would stay on the CPU")
                fix = None
            else:
                fix = _move_to_loop_fix(self, node, definition, moves)
        elif workers_value(ctx, node) == 0 and not ctx.hides_arguments(node) and not conditional:
            fix = add_workers_fix(self, node)
            replay = workers_advice(ctx, node)
            message += f"; no workers added: {replay}" if replay else ""
        else:
            fix = None
        self.report(arg, message, fix)


def _called_by_lambda(ctx, collate: cst.CSTNode) -> list[cst.FunctionDef]:
    """The module's functions a lambda collate_fn calls in its body (`lambda b: pad_collate(b,
    PAD_ID)`, a common way to pass a padding id), which do its work; [] for anything else."""
    if not isinstance(collate, cst.Lambda):
        return []
    found = []
    for node in ctx.index.walk(collate.body):
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) \
                and isinstance(fn := resolve_callable(ctx, node.func), cst.FunctionDef) and fn not in found:
            found.append(fn)
    return found


def _other_device_work(ctx, collate: cst.CSTNode, moves: list[cst.Call]) -> cst.CSTNode | None:
    """What in the collate_fn, besides its moves, makes or reads tensors on the device: a torch
    factory given a device that is not the CPU (`torch.rand(n, device=DEVICE)`), or a module-level
    tensor on the device (`imgs - MEAN` with `MEAN = torch.tensor(..., device=DEVICE)`)."""
    if isinstance(collate, (cst.FunctionDef, cst.Lambda)):
        read = device_global_read(ctx, collate)
        if read is not None:
            return read
    for node in ctx.index.walk(collate):
        if isinstance(node, cst.Call) and node not in moves and (ctx.names.qualified(node.func) or "").startswith("torch.") \
                and (device := ctx.keyword(node, "device")) is not None and not is_cpu_device(ctx, device.value):
            return node
    return None


def offline_advice(kinds) -> str:
    """What to do once, offline, for the kinds of per-batch work a collate_fn does (heavy_work's);
    "" when it only moves tensors to a device, which belongs in the training loop instead."""
    advice = []
    if any("text" in k or "token" in k for k in kinds):
        advice.append("pre-tokenized ids in a memmap, pre-padded buckets")
    if any("features" in k for k in kinds):
        advice.append("features computed once, a memmap of log-mel frames")
    if any("decodes" in k for k in kinds):
        advice.append("decoded tensors saved once")
    if any("masks" in k for k in kinds) and not advice:
        advice.append("masks built with the padded batches")
    return "; ".join(advice)


# Inserted once per module by the TL106 fix: moves every tensor of a batch (nested dicts, lists,
# tuples) to the device, so collate_fn can stay on the CPU. Only tensors get non_blocking: a batch
# class of the project's own (`def to(self, device)`) may not take it. {torch}: the module's name
# for torch.
MOVE_HELPER = """def _trainlint_to_device(batch, device):
    \"\"\"Added by trainlint (TL106): the batch with every tensor moved to `device`.\"\"\"
    if isinstance(batch, {torch}.Tensor):
        return batch.to(device, non_blocking=True)
    if hasattr(batch, "to") and callable(batch.to) and not isinstance(batch, type):
        return batch.to(device)  # an object of its own class: its `to` may not take non_blocking
    if isinstance(batch, dict):
        return type(batch)(
            (k, _trainlint_to_device(v, device)) for k, v in batch.items()
        )
    if isinstance(batch, (list, tuple)):
        moved = [_trainlint_to_device(v, device) for v in batch]
        return type(batch)(*moved) if hasattr(batch, "_fields") else type(batch)(moved)
    return batch
"""


def _move_to_loop_fix(rule: Rule, loader: cst.Call, collate: cst.CSTNode, moves: list[cst.Call]):
    """Take the device moves out of collate_fn and move each batch in the loops over this loader.

    Only when every move names the same device through something the loop can see too (a string,
    or a module-level name), and the loader's loops bind the batch to plain names."""
    ctx = rule.ctx
    params = {p.name.value for p in collate.params.params} if isinstance(collate, (cst.FunctionDef, cst.Lambda)) else set()
    local = params | {ctx.dotted(t.target) for a in ctx.index.walk(collate) if isinstance(a, cst.Assign)
                      for t in a.targets}
    devices = set()
    for call in moves:
        found = _device_arg(call)
        if call.func.attr.value == "cuda" and found is None:
            devices.add('"cuda"')  # the current device, as `.cuda()` means
            continue
        if found is None:
            return None  # `x.to(memory_format=..., device=...)` read another way: not sure which is the device
        # `.cuda(rank)` keeps its index: `.to(rank)` goes to the same device (an int is a CUDA index).
        device = found.value
        root = device
        while isinstance(root, cst.Attribute):
            root = root.value
        if isinstance(root, cst.Name) and root.value in local or not isinstance(root, (cst.Name, cst.SimpleString)):
            return None
        devices.add(ctx.code(device))
    # Every loader built with this collate_fn loses its moves: all of their batches must be seen.
    users = _collate_users(ctx, collate)
    if loader not in users:
        return None
    batches = [found for user in users for found in loader_batches(ctx, user, shared=True)]
    batches = list(dict.fromkeys(batches))  # a shared function's loop, once
    if len(devices) != 1 or not batches or any(_leaves_sight(ctx, user) for user in users):
        return None
    device = devices.pop()
    # A loop that also takes batches from another loader: the move added there moves those too.
    # To a device named by a variable (`device`, CPU where there is no GPU) that is harmless; to a
    # CUDA-only one (`.cuda()`, `.cuda(local_rank)`) it breaks the run the other loader is for
    # (`DataLoader(ds, collate_fn=to_gpu) if use_cuda else DataLoader(ds)`).
    cuda_only = any(call.func.attr.value == "cuda" for call in moves) or "cuda" in device
    if cuda_only:
        others = [call for call in ctx.index.nodes(cst.Call) if call not in users and is_loader(ctx, call)]
        fed_by_others = {loop for other in others for loop, _ in loader_batches(ctx, other, shared=True)}
        if any(loop in fed_by_others for loop, _ in batches):
            return None
    # Each move is taken out where it stands, its other arguments kept (`y.to(device, dtype=...)`
    # -> `y.to(dtype=...)`), written as text: a call handed to rule.fix may take its whole
    # statement along (call_replacement), over the edits of the other moves in it.
    stripper = _MoveStripper(set(moves))
    outermost = [call for call in moves if not any(a in stripper.moves for a in ctx.index.ancestors(call))]
    replacements = []
    for call in outermost:
        new = call.visit(stripper)
        if stripper.failed:
            return None  # an argument left that cannot stand without the device
        replacements.append((call, ctx.render(new, at=call)))
    for loop, target in batches:
        batch = batch_part(ctx, loop, target)
        names = [batch] if isinstance(batch, cst.Name) else [e.value for e in getattr(batch, "elements", ())]
        if not names or not all(isinstance(n, cst.Name) for n in names):
            return None  # bound to anything else: `batch["x"]`, starred
        bound = ", ".join(n.value for n in names)
        packed = bound if isinstance(batch, cst.Name) else f"({bound}{',' if len(names) == 1 else ''})"
        move = f"{bound} = _trainlint_to_device({packed}, {device})"
        if target is loop.target:  # first thing in the loop's body
            if not isinstance(loop.body, cst.IndentedBlock):
                return None  # `for x in loader: step(x)` on one line: no statement to add before its body
            replacements.append(ctx.insert_before(loop.body.body[0], move))
        else:  # drawn by `target = next(it)`: right after the draw
            draw = ctx.parent(ctx.parent(ctx.parent(target)))  # target, AssignTarget, Assign, its line
            if not isinstance(draw, cst.SimpleStatementLine) or len(draw.body) != 1:
                return None
            replacements.append(ctx.insert_after(draw, move))
    if "_trainlint_to_device" not in ctx.loops.functions:
        newline, torch = ctx.module.default_newline, ctx.names.module_alias("torch")
        code = newline * 2 + MOVE_HELPER.replace("{torch}", torch or "torch")
        if torch is None:  # `from torch.utils.data import DataLoader` only: the helper needs torch itself
            code = "import torch" + newline + code
        helper = after_imports(ctx, code, blank_lines_after=2)
        if helper is None:
            return None
        replacements.append(helper)
    return rule.fix(Applicability.UNSAFE, f"Move batches to {device} in the training loop, not in collate_fn",
                    *replacements)


def _written_name(ctx, value: cst.BaseExpression, definition: cst.CSTNode) -> str:
    """The collate_fn as the loader names it: `collate`, `self.collate`, the class of an instance
    (`PadCollator()` -> `PadCollator`), else its code when short (`partial(collate, pad=0)`), else
    its definition's name."""
    name = ctx.dotted(value)
    if name is None and isinstance(value, cst.Call) and isinstance(definition, cst.FunctionDef) \
            and definition.name.value == "__call__":
        name = ctx.dotted(value.func)
    if name is None:
        code = ctx.code(value).strip()
        name = code if "\n" not in code and len(code) <= 60 else None
    if name is None:
        name = definition.name.value if isinstance(definition, cst.FunctionDef) else "collate_fn"
    return name


def _device_arg(call: cst.Call) -> cst.Arg | None:
    """The device argument of `x.to(...)` or `x.cuda(...)`: `device=`, or the first one when passed
    by position."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "device":
            return arg
    first = call.args[0] if call.args else None
    return first if first is not None and first.keyword is None and not first.star else None


class _MoveStripper(cst.CSTTransformer):
    """Rewrites each device move (by identity, in `moves`) to what it does but the move:
    `x.to(device)`/`x.cuda()` -> `x`; `x.to(device, torch.float32)` -> `x.to(torch.float32)`,
    `x.to(device=d, memory_format=m)` -> `x.to(memory_format=m)` (`non_blocking` goes with the
    device). Sets `failed` where an argument left would mean something else without it."""

    def __init__(self, moves: set) -> None:
        super().__init__()
        self.moves = moves
        self.failed = False

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        if original not in self.moves:
            return updated
        func = updated.func
        if func.attr.value == "cuda":
            device = updated.args[0] if updated.args and updated.args[0].keyword is None else None
            kept = [a for a in updated.args if a is not device and not (a.keyword and a.keyword.value in ("device", "non_blocking"))]
            if any(a.keyword is None for a in kept):
                self.failed = True  # `x.cuda(0, True)`: a positional non_blocking
            func = func.with_changes(attr=cst.Name("to"))
        else:
            device = _device_arg(updated)
            kept = [a for a in updated.args if a is not device and not (a.keyword and a.keyword.value == "non_blocking")]
            first = kept[0] if kept and kept[0].keyword is None else None
            if first is not None and isinstance(first.value, cst.Name) and first.value.value in ("True", "False"):
                self.failed = True  # `x.to(other, True)`: non_blocking would become a dtype
        if any(a.star for a in kept):
            self.failed = True
        if not kept:
            return updated.func.value
        kept[-1] = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        return updated.with_changes(func=func, args=kept)


def _collate_users(ctx, collate: cst.CSTNode) -> list[cst.Call]:
    """The loaders whose collate_fn is the definition collate; [] when the module names it
    anywhere else too (called directly, wrapped, stored): its other uses would lose the moves."""
    users, uses = [], []
    for call in ctx.index.nodes(cst.Call):
        arg = collate_arg(ctx, call) if is_loader(ctx, call) else None
        if arg is not None and not arg.star and resolve_callable(ctx, arg.value) is collate:
            users.append(call)
            uses += [id(n) for n in ctx.index.walk(arg.value) if isinstance(n, cst.Name)]
    name = collate.name.value if isinstance(collate, cst.FunctionDef) else None
    if isinstance(collate, cst.FunctionDef) and collate.name.value == "__call__":
        name = ctx.index.enclosing_class(collate).name.value
    if name is not None and any(n.value == name and id(n) not in uses for n in ctx.index.nodes(cst.Name)
                                if not isinstance(ctx.parent(n), (cst.FunctionDef, cst.ClassDef))):
        return []
    return users


def _leaves_sight(ctx, loader: cst.Call) -> bool:
    """A name the loader is known by, on every call or on some (`paths_of`), is handed where the
    loops seen are not all of its loops (to another module's function, another target, a draw
    outside a loop), its batches are taken outside those loops (`stray_draws`: `next(iter(loader))`,
    `with tqdm(loader) as bar:`), or it is gone over by a comprehension: moving its batches in the loops seen would
    leave the others on the CPU. A return counts only when the callers binding it are not all
    known."""
    if ctx.loops.comprehensions_over(loader, shared=True):
        return True  # `[model(x) for x in loader]`: no statement to move its batches in
    if ctx.loops.stray_draws(loader):
        return True  # `x, y = next(iter(loader))` after training: no loop to move its batch in
    followed = bool(ctx.loops.returned_to(loader))
    return any(ctx.loops.escapes(path.name, path.scope, returns=not followed, shared=True)
               for path in ctx.loops.paths_of(loader))


class HeavyGetitem(Rule):
    code = "TL107"
    name = "heavy-getitem"
    summary = "`Dataset.__getitem__`/`__iter__` that tokenizes text or decodes images/audio per sample"
    source = "§3, §6.2"
    fix_applicability = "unsafe"
    triggers = ("__getitem__", "__iter__", "set_transform", "with_transform")
    options = DataLoaderNoWorkers.options
    docs = """
## What it does
Flags a dataset's `__getitem__` (map-style) or `__iter__` (iterable) that tokenizes text,
decodes images or audio, or extracts audio features (a transformers feature extractor or a
processor given `sampling_rate=`, `librosa.feature.*`, `torchaudio.compliance.kaldi.fbank`, a
spectrogram by `torch.stft`, a torchaudio transform such as `MelSpectrogram`, also one built in
`__init__` as `self.melspec` and called per sample) for every sample, itself or in a method of its class (or of a base class
in the same module) that it calls, up to two calls down (`self.load_image(i)`).

Also flags a function given to Hugging Face datasets' `ds.set_transform(fn)` or
`ds.with_transform(fn)` (a function of the module, a lambda, `functools.partial` of one) that does
this work: the dataset runs it in its `__getitem__` at every access. Its finding has no fix.

## Why is this bad?
This work is repeated every epoch for every sample, and with few or no workers it is what the GPU
waits on. Doing it once, offline, turns the loader into cheap reads.

## Example
```python
class TextDataset(Dataset):
    def __getitem__(self, i):
        return self.tokenizer(self.texts[i], truncation=True)["input_ids"]
```

## Use instead
Tokenize once and store token ids in a binary array (e.g. `np.memmap`); store decoded, resized
image tensors (or use GPU decoding), log-mel features computed once; `__getitem__` then only slices.

## Fix safety
Unsafe: where a loader of this dataset runs in the main process, the fix adds workers as TL101,
and, as there, not to an iterable dataset of this module that does not split its stream between
workers (each would replay every sample; the message says so). The offline conversion is yours to
make: for a `set_transform`/`with_transform` function, `ds.map(fn, batched=True)`, which runs it once
and caches what it returns (no fix).
"""
    _SRC = "import os\nfrom torch.utils.data import Dataset, DataLoader\nclass DS(Dataset):\n    def __getitem__(self, i):\n        {body}\nloader = DataLoader(DS(){args})\n"
    valid = [
        Valid(_SRC.format(body="return self.ids[i]", args="")),
        Valid(_SRC.format(body="return torch.from_numpy(self.arr[i])", args="")),
        Valid("class Vocab:\n    def __getitem__(self, tok):\n        return self.tokenizer(tok)\n"),
        Valid(_SRC.format(body="return self.data[i] * 2", args=", num_workers=4")),
        # An image processor (no sampling rate) and stored features read back: not audio extraction.
        Valid(_SRC.format(body="return self.processor(images=self.images[i], return_tensors='pt')", args=", num_workers=2")),
        Valid(_SRC.format(body="return self.features[i], self.feature_extractor.sampling_rate", args=", num_workers=2")),
        # Work that refills a cache, and a file handle opened per sample: not decoding every sample.
        Valid(_SRC.format(body="if len(self.cache) == 0:\n            self.cache = [Image.open(p) for p in self.paths]\n"
                               "        return self.cache.pop()", args=", num_workers=2")),
        Valid(_SRC.format(body="with open(self.paths[i]) as f:\n            return f.read()", args=", num_workers=2")),
        Valid(_SRC.format(body="if i not in self.image_cache:\n            self.image_cache[i] = Image.open(self.paths[i])\n"
                               "        return self.image_cache[i]", args=", num_workers=2")),
        # An on-access transform that only reshapes or augments what the dataset already holds.
        Valid("def to_tensors(batch):\n    return {'x': [torch.tensor(v) for v in batch['x']]}\n"
              "ds = load_dataset('mnist', split='train')\nds.set_transform(to_tensors)\n"),
        # A method that only slices, and a same-named function outside the class that decodes.
        Valid("import cv2\nfrom torch.utils.data import Dataset\ndef load_image(p):\n    return cv2.imread(p)\n"
              "class DS(Dataset):\n    def load_image(self, i):\n        return self.images[i]\n"
              "    def __getitem__(self, i):\n        return self.load_image(i)\n"),
    ]
    invalid = [
        Invalid(_SRC.format(body="return self.tokenizer(self.texts[i])", args=""),
                fixed=_SRC.format(body="return self.tokenizer(self.texts[i])",
                                  args=", num_workers=min(8, os.cpu_count() or 1)")),
        # A loader with workers already: reported, no fix (the offline conversion is the user's).
        Invalid(_SRC.format(body="return Image.open(self.paths[i])", args=", num_workers=2"), fixed=NO_FIX),
        # Audio features (log-mel, fbank) computed per clip, as tokenizing is for text: a
        # transformers feature extractor, a processor given a sampling rate, librosa, kaldi.
        Invalid(_SRC.format(body="return self.feature_extractor(self.clips[i], sampling_rate=16000).input_features[0]",
                            args=", num_workers=2"), fixed=NO_FIX,
                message="extracts audio features for every sample, every epoch; store the features computed once"),
        Invalid(_SRC.format(body="return self.processor(self.clips[i]['array'], sampling_rate=16000, return_tensors='pt')",
                            args=", num_workers=2"), fixed=NO_FIX, message="extracts audio features"),
        Invalid("import librosa\n" + _SRC.format(body="return librosa.feature.melspectrogram(y=self.clips[i], sr=16000)",
                                                 args=", num_workers=2"), fixed=NO_FIX, message="extracts audio features"),
        Invalid("import torchaudio\n" + _SRC.format(body="return torchaudio.compliance.kaldi.fbank(self.clips[i])",
                                                    args=", num_workers=2"), fixed=NO_FIX, message="extracts audio features"),
        # A spectrogram per clip (torch.stft), and a torchaudio transform built in __init__ and
        # called per sample.
        Invalid("import torch\n" + _SRC.format(body="return torch.stft(self.clips[i], 400, return_complex=True).abs()",
                                                args=", num_workers=2"), fixed=NO_FIX, message="extracts audio features"),
        Invalid("import torchaudio\n" + _SRC.format(body="return self.melspec(self.clips[i])", args=", num_workers=2")
                .replace("class ", "class Base:\n    def __init__(self):\n"
                         "        self.melspec = torchaudio.transforms.MelSpectrogram(n_mels=64)\nclass ", 1),
                fixed=NO_FIX, message="extracts audio features"),
        Invalid(_SRC.format(body="return self.tok.encode(self.texts[i])", args=""),
                fixed=_SRC.format(body="return self.tok.encode(self.texts[i])",
                                  args=", num_workers=min(8, os.cpu_count() or 1)")),
        # A cache mode that is off by default decodes every sample (ultralytics' `cache="disk"`).
        Invalid(_SRC.format(body="if self.cache == 'disk':\n            return np.load(self.npy[i])\n"
                                 "        return cv2.imread(self.paths[i])", args=", num_workers=2"), fixed=NO_FIX),
        # An iterable dataset that does not split its stream by worker: workers would each replay it.
        Invalid(_STREAM.format(helper="", body=_UNSHARDED.replace("torch.load(p)", "torchaudio.load(p)"), options=""),
                fixed=NO_FIX, message="no workers added: `Stream` is an IterableDataset that does not split"),
        Invalid(_STREAM.format(helper="", body=_SHARDED.replace("torch.load(p)", "torchaudio.load(p)"), options=""),
                fixed=_STREAM.format(helper="", body=_SHARDED.replace("torch.load(p)", "torchaudio.load(p)"),
                                     options=_WORKERS_SET)),
        # No loader of the dataset here: no workers to add.
        Invalid("from torch.utils.data import IterableDataset\nclass S(IterableDataset):\n    def __iter__(self):\n"
                "        for p in self.paths:\n            yield torchaudio.load(p)\n", fixed=NO_FIX),
        # Hugging Face datasets' on-access transforms run in the dataset's `__getitem__` at every
        # access (before, only a `__getitem__` of the file's own was read): reported on the work,
        # with no fix; `.map(..., batched=True)` tokenizes once.
        Invalid("def tokenize(batch):\n    return tokenizer(batch['text'], truncation=True)\n"
                "ds = load_dataset('imdb', split='train')\nds.set_transform(tokenize)\n"
                "loader = DataLoader(ds, batch_size=32)\n", fixed=NO_FIX,
                message="`tokenize` given to `set_transform` tokenizes text for every sample at every access"),
        Invalid("ds = load_dataset('imdb', split='train').with_transform(lambda b: tokenizer(b['text']))\n",
                fixed=NO_FIX, message="the lambda given to `with_transform` tokenizes text"),
        # yolov5's shape: the decode sits in a method of the class (or of a base class here) that
        # __getitem__ calls, one or two calls down; the finding is on __getitem__'s own line.
        Invalid("import cv2\nfrom torch.utils.data import Dataset\nclass Images(Dataset):\n"
                "    def load_image(self, i):\n        return cv2.imread(self.files[i])\n"
                "class Mosaic(Images):\n    def load_mosaic(self, i):\n        return [self.load_image(j) for j in (i, i + 1)]\n"
                "    def __getitem__(self, i):\n        img = self.load_mosaic(i) if self.mosaic else self.load_image(i)\n"
                "        return img\n", fixed=NO_FIX, message="(in `self.load_image`)"),
    ]

    def __init__(self, ctx, options) -> None:
        super().__init__(ctx, options)
        self._reported: set[cst.Call] = set()  # a transform given to two datasets is reported once

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        ctx = self.ctx
        if node.name.value not in ("__getitem__", "__iter__") or ctx.is_offline_script:
            return
        cls = ctx.index.enclosing_class(node)
        if cls is None or not ctx.names.is_a(cst.Name(cls.name.value), *DATASETS):
            return
        found = sample_work(ctx, cls, node, lambda kind: kind != "moves tensors to a device",
                            skip=lambda call, fn: _fills_cache(ctx, call, fn))
        if found is None:
            return
        call, kind, method = found
        offline = ("token ids in a binary array / memmap" if "text" in kind or "token" in kind else
                   "the features computed once (a memmap of log-mel frames)" if "features" in kind else
                   "the decoded waveforms (or log-mel features), saved once as tensors or a memmap" if "audio" in kind else
                   "the decoded, resized images, saved once as tensors or a memmap")
        where = f" (in `self.{method.name.value}`)" if method is not node else ""
        message = (f"`{cls.name.value}.{node.name.value}` {kind}{where} for every sample, every epoch; store "
                   f"{offline} and only slice here")
        fix = None
        loaders = _loaders_using(ctx, lambda c: any(ctx.dotted(b.func) == cls.name.value for b in dataset_builds(ctx, c)))
        idle = [c for c in loaders if workers_value(ctx, c) == 0 and not ctx.hides_arguments(c)]
        if idle:
            fix = add_workers_fix(self, idle[0])
            replay = workers_advice(ctx, idle[0])
            message += f"; no workers added: {replay}" if replay else ""
        self.report(call, message, fix)

    def visit_Call(self, node: cst.Call) -> None:
        """Hugging Face datasets' `ds.set_transform(fn)` / `ds.with_transform(fn)`: the dataset's
        `__getitem__` runs fn at every access, so tokenizing there is per-sample work every epoch,
        as in a `__getitem__` of the file's own; `ds.map(fn, batched=True)` does it once and caches
        it. Reported on fn's call, with no fix (the loader may take any dataset)."""
        ctx = self.ctx
        func = node.func
        if not (isinstance(func, cst.Attribute) and func.attr.value in _ON_ACCESS) or ctx.is_offline_script:
            return
        arg = ctx.positional(node, 0) or ctx.keyword(node, "transform")
        if arg is None or arg.star:
            return
        transform = resolve_callable(ctx, arg.value)
        if transform is None:
            return
        work = [(c, k) for c, k in heavy_work(ctx, transform, masks=False) if k != "moves tensors to a device"]
        if not work:
            return
        call, kind = work[0]
        offline = ("`map(..., batched=True)`, which runs it once and caches the token ids" if "text" in kind or "token" in kind
                   else "`map(...)` once, caching the result")
        if call in self._reported:
            return  # one function given to several datasets: one finding
        self._reported.add(call)
        name = "the lambda" if isinstance(transform, cst.Lambda) else f"`{transform.name.value}`" \
            if transform.name.value != "__call__" else f"`{ctx.index.enclosing_class(transform).name.value}`"
        self.report(call, f"{name} given to `{func.attr.value}` {kind} for every sample at every access, every epoch; "
                          f"do it with {offline} (not fixed: the offline conversion is yours to make)", None)


# Hugging Face datasets' methods that set a transform run at every access (`__getitem__`).
_ON_ACCESS = frozenset({"set_transform", "with_transform"})


def _fills_cache(ctx, node: cst.CSTNode, fn: cst.FunctionDef) -> bool:
    """node runs under an `if` (in fn) that asks whether a cache holds something
    (`if len(self.cache) == 0:`, `if key not in cache:`, `if self.cache is None:`, `if not cache:`):
    once per cache miss, not for every sample. A mode test (`if self.cache == "disk":`) is not one."""
    for anc in ctx.index.ancestors(node):
        if anc is fn:
            return False
        if isinstance(anc, cst.If) and _asks_cache(ctx, anc.test):
            return True
    return False


def _asks_cache(ctx, test: cst.BaseExpression) -> bool:
    def is_cache(expr) -> bool:
        return bool(_CACHE.search((ctx.dotted(expr) or "").rsplit(".", 1)[-1]))

    for n in ctx.index.walk(test):
        if isinstance(n, cst.Call) and ctx.dotted(n.func) == "len" and n.args and is_cache(n.args[0].value):
            return True
        if isinstance(n, cst.UnaryOperation) and isinstance(n.operator, cst.Not) and is_cache(n.expression):
            return True
        if isinstance(n, cst.Comparison) and any(
                isinstance(t.operator, (cst.In, cst.NotIn, cst.Is, cst.IsNot))
                and (is_cache(t.comparator) or is_cache(n.left)) for t in n.comparisons):
            return True
    return False


_STEP_FN = (
    "from torch.utils.data import DataLoader\n"
    "loader = DataLoader(ds, num_workers=2, pin_memory=True)\n"
    "def train_step(model, batch, device):\n"
    "    images, labels = batch\n"
    "    loss = model({to}).loss(labels)\n"
    "    loss.backward()\n"
    "    return loss\n"
    "for batch in loader:\n"
    "    train_step(model, batch, device)\n"
    "    opt.step()\n"
    "    if retry:\n"
    "        train_step(model, batch=batch, device=device)\n"
)

_NESTED_STEP = (
    "from torch.utils.data import DataLoader\n"
    "loader = DataLoader(ds, num_workers=2, pin_memory=True)\n"
    "def prepare(batch, device):\n"
    "    return {to}\n"
    "def train_step(model, batch, device):\n"
    "    model(prepare(batch, device)).backward()\n"
    "for batch in loader:\n"
    "    train_step(model, batch, device)\n"
    "    opt.step()\n"
)


_CUSTOM_BATCH = (
    "import torch\nfrom torch.utils.data import DataLoader\n"
    "class Batch:\n    def __init__(self, x):\n        self.x = x\n"
    "    def to({params}):\n        return Batch(self.x.to(device))\n"
    "loader = DataLoader(ds, num_workers=2, pin_memory=True, collate_fn=lambda s: Batch(torch.stack(s)))\n"
    "for batch in loader:\n    {move}\n    model(batch.x).backward()\n    opt.step()\n"
)
_HF_BATCH = (
    "from torch.utils.data import DataLoader\nfrom transformers import DataCollatorWithPadding\n"
    "collator = DataCollatorWithPadding(tokenizer)\n"
    "loader = DataLoader(ds, num_workers=2, pin_memory=True, collate_fn=collator)\n"
    "for batch in loader:\n    {move}\n    model(**batch).loss.backward()\n    opt.step()\n"
)
_COLLATED = (
    "import torch\nfrom torch.utils.data import DataLoader\n{collate}\n"
    "loader = DataLoader(ds, num_workers=2, pin_memory=True, collate_fn=collate)\n"
    "for x, y in loader:\n    {move}\n    loss = model(x, y)\n    loss.backward()\n    opt.step()\n"
)
_STACKS = "def collate(samples):\n    return torch.stack([a for a, _ in samples]), torch.tensor([b for _, b in samples])"


# Several steps on each batch: its copies in the step loop, a change before or after that loop.
_FREE_STEPS = (
    "from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=2, pin_memory=True)\n"
    "for x, y in loader:\n{before}    for _ in range(4):\n        {inner}\n        loss = model(xd, y)\n"
    "        loss.backward()\n        opt.step()\n{after}"
)


# "Free" adversarial training: several optimizer steps on each batch, in a loop inside the loop
# over the batches.
_FREE_AT = (
    "from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=2, pin_memory=True)\n"
    "for x, y in loader:\n    x, y = {x}, y.cuda(non_blocking=True)\n    for _ in range(4):\n"
    "        loss = model(x + delta, y)\n        loss.backward()\n        opt.step()\n"
)


class BlockingHostToDeviceCopy(Rule):
    code = "TL108"
    name = "blocking-host-to-device-copy"
    summary = "Batch from a pinned loader copied to the device without `non_blocking=True`"
    source = "§3.3"
    fix_applicability = "safe"
    # pin_memory may be passed by position (TL102's fix writes it there when the call passes that
    # far): no keyword to find, but every loader call is spelled with "DataLoader" in the file.
    triggers = ("pin_memory", "DataLoader")
    needs_hot_loop = True
    docs = """
## What it does
In the hot loop (or a loop over the batches that holds it: several optimizer steps on each
batch), flags `.to(device)` / `.cuda()` of a batch drawn from a loader with
`pin_memory=True` (written there, or read as TL101 describes: `pin_memory=PIN` with `PIN = True`)
that does not pass `non_blocking=True`. The loop may be where the loader is built, in a function
that returns it to its caller or that it is handed to (`train(model, train_loader)` every epoch,
as in PyTorch's MNIST example, also a `run_epoch(model, loader)` that the evaluation loader goes
through too), or a function reading the module's loader (or its enclosing function's, a
closure); or a step loop drawing the batches with `next(it)` from `it = iter(loader)`. Flagged
are copies of the batch or of tensors taken from it (`x, y = batch`, `batch["x"]`, `for t in
batch`), there or in module-local functions the loop hands them to (`train_step(model, batch)`, up to three calls down;
also a helper that returns the copy, `x = to_device(x)` with `def to_device(t): return t.to(device)`,
or `{k: v.to(device) ... for k, v in batch.items()}`; not one that calls itself on the parts of any
structure, whose copies may be of any object).
Not flagged: copies to the CPU (`"cpu"`, `torch.device("cpu")`, a name assigned one of those),
which must stay blocking to be read right after, and copies of tensors the loop has already
copied to the device (`y` after `y = y.to(device, non_blocking=True)`): they do not read pinned
memory; nor a copy that unpacks a dict holding `non_blocking` (`x.to(**move)` with `move =
dict(device=device, non_blocking=True)`, `y.to(device, **{"non_blocking": True})`, or a dict built
from one holding it: `{**base, "dtype": t}`, `dict(base, dtype=t)`): the dict sets it.

A tensor taken out of a batch the loop already copied (a dict or tuple comprehension of
copies, then `batch.pop("labels")`) is in device memory and not reported; a batch handed in a list
or tuple to a helper that changes its items in place withholds the fix; a recursive helper that
only builds new containers does not.

## Why is this bad?
A blocking copy makes the host wait until the transfer ends, so it cannot queue the next kernels;
from pinned memory the copy can run asynchronously and overlap with compute.

## Example
```python
for x, y in loader:  # DataLoader(..., pin_memory=True)
    x, y = x.to(device), y.to(device)
```

## Use instead
```python
    x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
```

## Fix safety
Safe: work queued on the same CUDA stream after the copy still sees the copied data. A
`non_blocking` passed by position (`x.cuda(0, False)`) is set where it stands. The fix is written
only where what is copied is known to take `non_blocking`: the tensors of a default-collated batch
(a loader without `collate_fn`, or passing `None` for it), what a `collate_fn` of this module returns as tensors (or as an
object of a class of this module whose `to`/`cuda` takes `non_blocking` or `**kwargs`), the
tensors a transformers data collator's batch holds, and a copy made only of a tensor (`v.to(device)
if torch.is_tensor(v) else v`, under `if isinstance(v, torch.Tensor):`). The copy of anything else (another batch
object, a part of the batch of a `collate_fn` the file does not show, a value reaching the copy by
a way no loader of the file is seen to take) is fixed only with `--unsafe-fixes`: a transformers
`BatchEncoding` takes `non_blocking` from transformers 4.48 on, and such a value may be anything. An object of a class of this
module whose `to`/`cuda` does not take it gets no fix (passing it would raise a TypeError), nor
does a copy under `with torch.cuda.stream(s):` in a function where no stream waits for another
(`wait_stream`, `wait_event`): there the copy's being blocking is what makes the data ready for
the default stream that reads it. Nor does the copy of a host tensor changed in place after it
(`xd = x.to(device)` then `x.mul_(std)`, `x += 1`, `x[m] = 0`, `torch.add(a, b, out=x)`,
`F.relu(x, inplace=True)`, a function of the module that changes its argument so, `cutout_(x)`, or
a change through a view, `v = x[:, 0]` then `v.zero_()`): later in the pass, after a loop around
the copy, on the next pass of a loop around it inside the loop over the batches (several steps on
each batch, `x.add_(noise)` before the copy), or after a call of a helper of the module that copies
the tensor it is handed. The host goes on while a non-blocking copy waits its turn, so the copy
could read the changed values. The copy of an item at a literal key, `batch["x"].to(device)` or
`batch[0].cuda()`, is followed through that same item (`batch["x"].mul_(0.5)`, `batch["x"][0] = 0`,
`out=batch["x"]`) until the item or its container is set anew: the item set anew, `batch["x"] =
...`, is no change in place. Nor does a copy that unpacks
a dict the file does not show (`x.to(**to_kw)` of a function's `**to_kw`) or `*args`: it may pass
`non_blocking` already, and the keyword beside it would then be passed twice (a TypeError); a dict
whose keys the file shows without it takes the keyword beside it. Nor does a copy in
a function of the module whose device is its parameter when some call passes the CPU there
(`def move(t, dev): return t.to(dev)`, also `move(pred, "cpu")`): a non-blocking copy to the
host would be read before it ends.
"""
    _SRC = ("from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=2, pin_memory=True)\n"
            "for x, y in loader:\n    {move}\n    loss = model(x, y)\n    loss.backward()\n    opt.step()\n")
    valid = [
        # Taken out of a batch its loop copied already (a dict or tuple comprehension of copies):
        # in device memory, nothing to pin.
        Valid("from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=2, pin_memory=True)\n"
              "for batch in loader:\n    batch = {k: v.to(device, non_blocking=True) for k, v in batch.items()}\n"
              "    labels = batch.pop('labels')\n    loss = model(**batch, labels=labels.to(device, torch.float32))\n"
              "    loss.backward()\n    opt.step()\n"),
        Valid("from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=2, pin_memory=True)\n"
              "for batch in loader:\n    batch = tuple(t.to(device, non_blocking=True) for t in batch)\n"
              "    ids, labels = batch\n    loss = model(ids, labels.to(device).float())\n    loss.backward()\n    opt.step()\n"),
        # ... also on the same line, after `;`: the copy's line was once looked past, so the
        # earlier small statement that copied the batch was not seen (flagged, fixed needlessly).
        Valid("from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=2, pin_memory=True)\n"
              "for batch in loader:\n    batch = [t.to(device, non_blocking=True) for t in batch]; x = batch[0].to(device)\n"
              "    loss = model(x)\n    loss.backward()\n    opt.step()\n"),
        Valid(_SRC.format(move="x = x.to(device, non_blocking=True)")),
        Valid(_SRC.replace("pin_memory=True", "pin_memory=False").format(move="x = x.to(device)")),
        Valid("import torch\n" + _SRC.format(move="x = x.to(torch.float16)")),
        Valid(_SRC.format(move="model.to(device)")),
        # A layout change alone is no copy to the device; with `device=` among the keywords it is.
        Valid("import torch\n" + _SRC.format(move="x = x.to(memory_format=torch.channels_last)")),
        # Drawn with next() from another loader's iterator.
        Valid(_DRAWN.format(pin=", pin_memory=True", x="x.cuda()").replace("next(data_iter)", "next(other_iter)")),
        # The pinned loader of the dict is not the one this loop picks.
        Valid(_BY_KEY.format(pin_a="", pin_b=", pin_memory=True", move="x.cuda()")),
        # non_blocking passed by position.
        Valid(_SRC.format(move="x, y = x.cuda(0, True), y.to(device, None, True)")),
        # ... or by a dict the copy unpacks, whose keys the file shows: a keyword beside it was
        # once added, passing non_blocking twice (TypeError).
        Valid(_SRC.format(move="x = x.to(**move)\n    y = y.to(device, **{'non_blocking': True})").replace(
            "for x, y", "move = dict(device=device, non_blocking=True)\nfor x, y")),
        # ... also a dict built from one holding it (`{**base, ...}`, `dict(base, ...)`): these were
        # reported, unfixed, as if the key were unknown.
        Valid(_SRC.format(move="x = x.to(device, **kw1)\n    y = y.to(device, **kw2)").replace(
            "for x, y", "base = {'non_blocking': True}\nkw1 = {**base, 'dtype': torch.float32}\n"
                        "kw2 = dict(base, dtype=torch.float32)\nfor x, y")),
        # The step function is handed something other than the batch.
        Valid(_STEP_FN.format(to="images.to(device)").replace("train_step(model, batch, device)",
                                                             "train_step(model, cached, device)").replace(
            "train_step(model, batch=batch, device=device)", "pass")),
        # Copies to the CPU (a non-blocking one read right after would give stale values): by a
        # name assigned the CPU device, or `torch.device("cpu")` written in the call.
        Valid("import torch\ncpu = torch.device('cpu')\n" + _SRC.format(
            move="x = x.to(device, non_blocking=True)\n    x_host = x.to(cpu)\n    y_host = y.to(torch.device('cpu:0'))")),
        Valid("import torch\n" + _SRC.replace("for x, y", "host = 'cpu'\ndef train():\n  for x, y").format(
            move="y_host = y.to(host)").replace("\n    ", "\n      ") + "train()\n"),
        # Tensors the loop already copied to the device: a copy of them is not of pinned memory.
        Valid(_SRC.format(move="x, y = x.to(device, non_blocking=True), y.cuda(non_blocking=True)\n"
                               "    if step % 4 == 0:\n        log(x.to(host), y[0].to(other))")),
        Valid(_SRC.format(move="y = y.to(device, non_blocking=True).long()\n    y_host = y.to(host)")),
        # A helper that calls itself on the parts of any structure (TL106's `_trainlint_to_device`):
        # its `obj.to(device)` may be of any object; it is not followed.
        Valid(_HELPER.format(move="[to_device(p) for p in t] if isinstance(t, list) else t.to(device)",
                             body="x = to_device(x)")),
    ]
    invalid = [
        # Gone over through a progress bar made each epoch, after the loader's assignment: the loop
        # goes over this loader (a check of re-bound names once took the bar for a new value).
        Invalid("from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=2, pin_memory=True)\n"
                "for epoch in range(3):\n    bar = tqdm(loader)\n    for x in bar:\n        loss = model(x.cuda())\n"
                "        loss.backward()\n        opt.step()\n",
                fixed="from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=2, pin_memory=True)\n"
                "for epoch in range(3):\n    bar = tqdm(loader)\n    for x in bar:\n        loss = model(x.cuda(non_blocking=True))\n"
                "        loss.backward()\n        opt.step()\n"),
        Invalid(_SRC.format(move="x = x.to(device)"), fixed=_SRC.format(move="x = x.to(device, non_blocking=True)")),
        # A dict unpacked into the copy: one without the key takes the keyword beside it; one the
        # file does not show (a function's `**to_kw`) may hold it already (the keyword beside it
        # once raised "got multiple values"): no fix.
        Invalid(_SRC.format(move="x = x.to(**move)").replace("for x, y", "move = dict(device=device)\nfor x, y"),
                fixed=_SRC.format(move="x = x.to(**move, non_blocking=True)").replace(
                    "for x, y", "move = dict(device=device)\nfor x, y")),
        # ... so is one built from a dict without it (its keys known through `**base`).
        Invalid(_SRC.format(move="x = x.to(**move)").replace(
                    "for x, y", "base = {'device': device}\nmove = {**base, 'dtype': dt}\nfor x, y"),
                fixed=_SRC.format(move="x = x.to(**move, non_blocking=True)").replace(
                    "for x, y", "base = {'device': device}\nmove = {**base, 'dtype': dt}\nfor x, y")),
        Invalid("from torch.utils.data import DataLoader\ndef train(loader, **to_kw):\n    for x, y in loader:\n"
                "        loss = model(x.to(**to_kw), y)\n        loss.backward()\n        opt.step()\n"
                "train(DataLoader(ds, num_workers=2, pin_memory=True), device=device, non_blocking=True)\n",
                fixed=NO_FIX, message="unless `**to_kw` passes `non_blocking=True`; not fixed"),
        Invalid(_SRC.format(move="x = x.cuda()"), fixed=_SRC.format(move="x = x.cuda(non_blocking=True)")),
        # pin_memory passed by position (the 8th of DataLoader's; TL102's fix writes it there when
        # the call passes that far): no `pin_memory` keyword in the file.
        Invalid(_SRC.format(move="x = x.cuda()").replace("num_workers=2, pin_memory=True", "8, True, None, None, 2, None, True"),
                fixed=_SRC.format(move="x = x.cuda(non_blocking=True)").replace(
                    "num_workers=2, pin_memory=True", "8, True, None, None, 2, None, True")),
        # The host tensor changed in place after its copy (normalized on the host for a log, a
        # buffer reused): a non-blocking copy may read it after the change; reported, no fix.
        Invalid(_SRC.format(move="xd = x.to(device)\n    x.mul_(std)"), fixed=NO_FIX,
                message="`x` is changed in place after the copy"),
        Invalid(_SRC.format(move="xd = x.to(device)\n    if step % 10 == 0:\n        x[x < 0] = 0"), fixed=NO_FIX,
                message="`x` is changed in place after the copy"),
        # ... also later on the copy's own line, after `;` (the rest of the line was once skipped,
        # and the copy fixed).
        Invalid(_SRC.format(move="xd = x.to(device); x.mul_(std)"), fixed=NO_FIX,
                message="`x` is changed in place after the copy"),
        Invalid(_SRC.format(move="with ctx:\n        yd = y.cuda()\n    y += 1"), fixed=NO_FIX,
                message="`y` is changed in place after the copy"),
        # ... by a function of the module the tensor is handed to (a cutout on the host; two calls
        # down), through a view of it (taken before or after the copy), by `out=` or `inplace=True`,
        # or on the next pass of a loop around the copy inside the loop over the batches (several
        # steps on each batch): no fix.
        Invalid(_SRC.format(move="xd = x.to(device)\n    cutout_(x)").replace(
                    "loader = ", "def cutout_(t):\n    t[:, :, :4, :4] = 0\nloader = "), fixed=NO_FIX,
                message="`x` is changed in place after the copy, by `cutout_(x)`"),
        Invalid(_SRC.format(move="xd = x.to(device)\n    augment(x, 4)").replace(
                    "loader = ", "def erase(t, n):\n    t.narrow(2, 0, n).zero_()\n"
                                 "def augment(images, n):\n    erase(images[0], n)\nloader = "), fixed=NO_FIX,
                message="`x` is changed in place after the copy, by `augment(x, 4)`"),
        # A recursive helper that builds new lists and changes nothing (it once counted as a
        # change, followed to the depth limit): fixed.
        Invalid(_SRC.format(move="xd = x.to(device)\n    moved = to_device(x)").replace(
                    "loader = ", "def to_device(t):\n    if isinstance(t, torch.Tensor):\n        return t.cuda()\n"
                                 "    return [to_device(v) for v in t]\nloader = "),
                fixed=_SRC.format(move="xd = x.to(device, non_blocking=True)\n    moved = to_device(x)").replace(
                    "loader = ", "def to_device(t):\n    if isinstance(t, torch.Tensor):\n        return t.cuda()\n"
                                 "    return [to_device(v) for v in t]\nloader = ")),
        # ... handed inside a list or tuple to a helper that changes each item in place.
        Invalid(_SRC.format(move="xd = x.to(device)\n    normalize_([x])").replace(
                    "loader = ", "def normalize_(ts):\n    for t in ts:\n        t.sub_(0.5)\nloader = "), fixed=NO_FIX,
                message="`x` is changed in place after the copy, by `normalize_([x])`"),
        Invalid(_SRC.format(move="v = y[:, 0]\n    yd = y.to(device)\n    v.zero_()"), fixed=NO_FIX,
                message="`y` is changed in place after the copy, by `v.zero_()`"),
        Invalid(_SRC.format(move="yd = y.to(device)\n    y.view(-1)[0] = 1"), fixed=NO_FIX,
                message="`y` is changed in place after the copy"),
        Invalid("import torch\n" + _SRC.format(move="yd = y.to(device)\n    torch.add(y, 1, out=y)"), fixed=NO_FIX,
                message="`y` is changed in place after the copy, by `torch.add(y, 1, out=y)`"),
        Invalid(_SRC.format(move="xd = x.to(device)\n    h = F.relu(x, inplace=True)"), fixed=NO_FIX,
                message="`x` is changed in place after the copy"),
        Invalid(_SRC.format(move="xs = [t.cuda() for t in x]\n    x[0].mul_(2)"), fixed=NO_FIX,
                message="`x` is changed in place after the copy"),
        Invalid(_FREE_STEPS.format(before="", inner="x.add_(noise)\n        xd = x.to(device)", after=""),
                fixed=NO_FIX, message="`x` is changed in place after the copy, on the next pass of the loop"),
        Invalid(_FREE_STEPS.format(before="", inner="xd = x.to(device)", after="    x.zero_()\n"), fixed=NO_FIX,
                message="`x` is changed in place after the copy, by `x.zero_()`"),
        # Copied by a helper of the module, then changed by its caller.
        Invalid(_HELPER.format(move="t.to(device)", body="xd = to_device(x)\n    x.mul_(std)"), fixed=NO_FIX,
                message="`x` is changed in place after the copy, by `x.mul_(std)`"),
        # ... or through what it was taken from (a list batch's item; a dict's item set anew is no
        # change of the tensor).
        Invalid(_SRC.format(move="xd = x.to(device)\n    batch[0].zero_()").replace(
                    "for x, y in loader:", "for batch in loader:\n    x, y = batch"), fixed=NO_FIX,
                message="`x` is changed in place after the copy, by `batch[0].zero_()`"),
        Invalid(_SRC.format(move="batch['x'] = x.to(device)").replace(
                    "for x, y in loader:", "for batch in loader:\n    x, y = batch['x'], batch['y']"),
                fixed=_SRC.format(move="batch['x'] = x.to(device, non_blocking=True)").replace(
                    "for x, y in loader:", "for batch in loader:\n    x, y = batch['x'], batch['y']")),
        # The copy of an item (same container, same literal key) changed in place after it: by a
        # method, a write into it, `out=`; a list batch's item too. No fix. The item set anew
        # first, another key, the container bound anew: fixed.
        Invalid(_SRC.format(move="xd = batch['x'].to(device)\n    batch['x'].mul_(0.5)").replace("for x, y in loader:", "for batch in loader:"),
                fixed=NO_FIX, message="`batch['x']` is changed in place after the copy, by `batch['x'].mul_(0.5)`"),
        Invalid(_SRC.format(move="xd = batch[0].to(device)\n    batch[0].add_(1)").replace("for x, y in loader:", "for batch in loader:"),
                fixed=NO_FIX, message="`batch[0]` is changed in place after the copy"),
        Invalid(_SRC.format(move='xd = batch["x"].float().to(device)\n    batch["x"][0] = 0').replace("for x, y in loader:", "for batch in loader:"),
                fixed=NO_FIX, message="is changed in place after the copy, by `batch[\"x\"][0] = 0`"),
        Invalid("import torch\n" + _SRC.format(move="xd = batch['x'].to(device)\n    torch.mul(m, 2, out=batch['x'])")
                .replace("for x, y in loader:", "for batch in loader:"), fixed=NO_FIX, message="`batch['x']` is changed in place after the copy"),
        Invalid(_SRC.format(move="xd = batch['x'].to(device)\n    batch['x'] = aug(batch['x'])\n    batch['x'].mul_(2)\n"
                                 "    batch['y'].mul_(2)\n    batch[0].mul_(2)").replace("for x, y in loader:", "for batch in loader:"),
                fixed=_SRC.format(move="xd = batch['x'].to(device, non_blocking=True)\n    batch['x'] = aug(batch['x'])\n"
                                       "    batch['x'].mul_(2)\n    batch['y'].mul_(2)\n    batch[0].mul_(2)").replace("for x, y in loader:", "for batch in loader:")),
        Invalid(_SRC.format(move="xd = batch['x'].to(device)\n    batch = other\n    batch['x'].mul_(2)").replace("for x, y in loader:", "for batch in loader:"),
                fixed=_SRC.format(move="xd = batch['x'].to(device, non_blocking=True)\n    batch = other\n"
                                       "    batch['x'].mul_(2)").replace("for x, y in loader:", "for batch in loader:")),
        # What is handed on is only read, or changed after the function makes its own copy; a
        # copy of the tensor (not a view) is changed; the change comes before the loop around the
        # copy, or after the copy rebinds the name to the device's tensor: fixed.
        Invalid(_SRC.format(move="xd = x.to(device)\n    m = stats(x)\n    noisy = aug(x)").replace(
                    "loader = ", "def stats(t):\n    return t.mean()\ndef aug(t):\n    t = t.flip(0)\n"
                                 "    t.mul_(2)\n    return t\nloader = "),
                fixed=_SRC.format(move="xd = x.to(device, non_blocking=True)\n    m = stats(x)\n    noisy = aug(x)").replace(
                    "loader = ", "def stats(t):\n    return t.mean()\ndef aug(t):\n    t = t.flip(0)\n"
                                 "    t.mul_(2)\n    return t\nloader = ")),
        Invalid(_SRC.format(move="xd = x.to(device)\n    v = x.clone()\n    v[:, 0] = 0\n    x.sum().add_(1)"),
                fixed=_SRC.format(move="xd = x.to(device, non_blocking=True)\n    v = x.clone()\n    v[:, 0] = 0\n"
                                       "    x.sum().add_(1)")),
        Invalid(_FREE_STEPS.format(before="    x.add_(noise)\n", inner="xd = x.to(device)", after=""),
                fixed=_FREE_STEPS.format(before="    x.add_(noise)\n", inner="xd = x.to(device, non_blocking=True)",
                                         after="")),
        Invalid(_FREE_STEPS.format(before="", inner="x = x.to(device)\n        x.add_(noise)", after=""),
                fixed=_FREE_STEPS.format(before="", inner="x = x.to(device, non_blocking=True)\n        x.add_(noise)",
                                         after="")),
        # Changed after it is bound to something else, or the copy itself rebinds it: fixed.
        Invalid(_SRC.format(move="x = x.to(device)\n    x.mul_(std)"),
                fixed=_SRC.format(move="x = x.to(device, non_blocking=True)\n    x.mul_(std)")),
        Invalid(_SRC.format(move="xd = x.to(device)\n    x = x.clone()\n    x.mul_(std)"),
                fixed=_SRC.format(move="xd = x.to(device, non_blocking=True)\n    x = x.clone()\n    x.mul_(std)")),
        Invalid(_SRC.format(move="x.mul_(std)\n    xd = x.to(device)\n    log(x.mean())"),
                fixed=_SRC.format(move="x.mul_(std)\n    xd = x.to(device, non_blocking=True)\n    log(x.mean())")),
        # Copied in a helper of the module that returns the copy (`x = to_device(x)`), as a tensor
        # or the values of a dict batch: the helper's copy is fixed.
        Invalid(_HELPER.format(move="t.to(device)", body="x = to_device(x)"),
                fixed=_HELPER.format(move="t.to(device, non_blocking=True)", body="x = to_device(x)")),
        Invalid(_HELPER.format(move="{k: v.to(device) if torch.is_tensor(v) else v\n            for k, v in t.items()}",
                               body="batch = to_device(batch)").replace("for x, y in", "for batch in"),
                fixed=_HELPER.format(move="{k: v.to(device, non_blocking=True) if torch.is_tensor(v) else v\n"
                                          "            for k, v in t.items()}",
                                     body="batch = to_device(batch)").replace("for x, y in", "for batch in")),
        # The helper also copies to the CPU for another caller: reported, no fix (a non-blocking
        # copy to the host is read before it ends).
        Invalid(_HELPER.format(move="t.to(dev)", body="x = to_device(x, device)\n    log(to_device(loss))").replace(
                    "def to_device(t):", "def to_device(t, dev='cpu'):"),
                fixed=NO_FIX, message="`to_device` also copies to the CPU"),
        # Several steps on each batch: the loop over the batches holds the step loop.
        Invalid(_FREE_AT.format(x="x.to(device)"), fixed=_FREE_AT.format(x="x.to(device, non_blocking=True)")),
        # PyTorch's MNIST example: pinned (and batch size given) through the loader's `**` dict.
        Invalid(_MNIST.format(x="data.to(device)"), fixed=_MNIST.format(x="data.to(device, non_blocking=True)")),
        Invalid("import torch\n" + _SRC.format(move="x = x.to(memory_format=torch.channels_last, device=device)"),
                fixed="import torch\n" + _SRC.format(
                    move="x = x.to(memory_format=torch.channels_last, device=device, non_blocking=True)")),
        # Pinned through a variable (settings written as names are read as TL101 describes).
        Invalid(_SRC.format(move="x = x.cuda()").replace("pin_memory=True", "pin_memory=PIN").replace(
            "loader = ", "PIN = True\nloader = "),
                fixed=_SRC.format(move="x = x.cuda(non_blocking=True)").replace(
                    "pin_memory=True", "pin_memory=PIN").replace("loader = ", "PIN = True\nloader = ")),
        Invalid(_SRC.format(move="x, y = x.to(device), y.to(device)"),
                fixed=_SRC.format(move="x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)")),
        Invalid(_SRC.format(move="x = x.to('cuda', non_blocking=False)"),
                fixed=_SRC.format(move="x = x.to('cuda', non_blocking=True)")),
        # A device that is not the CPU on every run; a copy of what the loop copied is a copy of
        # the batch again once the name is bound to the batch's tensor anew.
        Invalid(_SRC.format(move="dev = 'cpu' if cpu_only else 'cuda'\n    x = x.to(dev)"),
                fixed=_SRC.format(move="dev = 'cpu' if cpu_only else 'cuda'\n    x = x.to(dev, non_blocking=True)")),
        Invalid(_SRC.format(move="z = x.to(device, non_blocking=True)\n    z = x\n    z = z.cuda()"),
                fixed=_SRC.format(move="z = x.to(device, non_blocking=True)\n    z = x\n    z = z.cuda(non_blocking=True)")),
        # A positional non_blocking=False is replaced where it stands (`to(other, bool)`, `cuda(device, bool)`).
        Invalid(_SRC.format(move="x, y = x.to(ref, False), y.cuda(0, False)"),
                fixed=_SRC.format(move="x, y = x.to(ref, True), y.cuda(0, True)")),
        # The copy happens in the step function the batch is handed to (called twice: one finding).
        Invalid(_STEP_FN.format(to="images.to(device)"), fixed=_STEP_FN.format(to="images.to(device, non_blocking=True)")),
        # Each tensor of the batch, copied in a comprehension (simpletransformers).
        Invalid(_SRC.format(move="x = [t.cuda() for t in x]"),
                fixed=_SRC.format(move="x = [t.cuda(non_blocking=True) for t in x]")),
        # ... or of a tuple of the batch's tensors.
        Invalid(_SRC.format(move="x, y = (t.to(device) for t in (x, y))"),
                fixed=_SRC.format(move="x, y = (t.to(device, non_blocking=True) for t in (x, y))")),
        # The loader is handed to the training function (MNIST's shape); the checking loop is no hot loop.
        Invalid(_HANDED.format(pin=", pin_memory=True"),
                fixed=_HANDED.format(pin=", pin_memory=True").replace(
                    "x, y = x.to(device), y.to(device)",
                    "x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)")),
        # A function both loaders go through (its copy is of the pinned loader's batches on some calls).
        Invalid(_SHARED_EPOCH.format(a=", pin_memory=True", b=""),
                fixed=_SHARED_EPOCH.format(a=", pin_memory=True", b="").replace(
                    "x = x.to(device)", "x = x.to(device, non_blocking=True)")),
        # A trainer class's loader, wrapped in a progress bar in the method that trains.
        Invalid(_TRAINER_CLASS.format(options=", pin_memory=True", x="x.cuda()"),
                fixed=_TRAINER_CLASS.format(options=", pin_memory=True", x="x.cuda(non_blocking=True)")),
        Invalid(_FIT_METHOD.format(options=", pin_memory=True", x="x.cuda()", call="Trainer().fit(loader, 10)"),
                fixed=_FIT_METHOD.format(options=", pin_memory=True", x="x.cuda(non_blocking=True)",
                                         call="Trainer().fit(loader, 10)")),
        # A loop over (phase, loader) pairs: its copies are of `a`'s pinned batches in one phase.
        Invalid(_PHASES.format(a=", pin_memory=True", b=""),
                fixed=_PHASES.format(a=", pin_memory=True", b="").replace("x.cuda()", "x.cuda(non_blocking=True)")),
        # A closure reading its enclosing function's loader, called every epoch.
        Invalid(_CLOSURE.format(x="x.cuda()"), fixed=_CLOSURE.format(x="x.cuda(non_blocking=True)")),
        # Drawn with next() in a step loop.
        Invalid(_DRAWN.format(pin=", pin_memory=True", x="x.cuda()"),
                fixed=_DRAWN.format(pin=", pin_memory=True", x="x.cuda(non_blocking=True)")),
        # Picked from a dict by its key; the other loader of the dict is not pinned.
        Invalid(_BY_KEY.format(pin_a=", pin_memory=True", pin_b="", move="x.cuda()"),
                fixed=_BY_KEY.format(pin_a=", pin_memory=True", pin_b="", move="x.cuda()").replace(
                    "x.cuda()", "x.cuda(non_blocking=True)", 1)),
        # A module's loader read in the function that trains (pytorch-cifar's shape).
        Invalid("from torch.utils.data import DataLoader\ntrainloader = DataLoader(ds, pin_memory=True)\n"
                "def train(epoch):\n    for x, y in trainloader:\n        loss = model(x.cuda(), y.cuda())\n"
                "        loss.backward()\n        opt.step()\n",
                fixed="from torch.utils.data import DataLoader\ntrainloader = DataLoader(ds, pin_memory=True)\n"
                "def train(epoch):\n    for x, y in trainloader:\n"
                "        loss = model(x.cuda(non_blocking=True), y.cuda(non_blocking=True))\n"
                "        loss.backward()\n        opt.step()\n"),
        # Two calls down: the step function hands the batch on to a helper that copies it.
        Invalid(_NESTED_STEP.format(to="batch['x'].to(device)"),
                fixed=_NESTED_STEP.format(to="batch['x'].to(device, non_blocking=True)")),
        # A collate_fn's batch of a class of this module: its `to` takes no non_blocking (TypeError
        # after the fix), or does (the fix stays).
        Invalid(_CUSTOM_BATCH.format(params="self, device", move="batch = batch.to(device)"), fixed=NO_FIX,
                message="its class's `to` must take `non_blocking` first"),
        Invalid(_CUSTOM_BATCH.format(params="self, device, non_blocking=False", move="batch = batch.to(device)"),
                fixed=_CUSTOM_BATCH.format(params="self, device, non_blocking=False",
                                           move="batch = batch.to(device, non_blocking=True)")),
        # A transformers collator's batch is a BatchEncoding (non_blocking from transformers 4.48 on):
        # fixed only as unsafe (plain --fix leaves it); the tensors it holds take the safe fix.
        Invalid(_HF_BATCH.format(move="batch = batch.to(device)"),
                fixed=_HF_BATCH.format(move="batch = batch.to(device, non_blocking=True)"),
                message="if `batch` is a tensor"),
        Invalid(_HF_BATCH.format(move="batch = {k: v.to(device) for k, v in batch.items()}"),
                fixed=_HF_BATCH.format(move="batch = {k: v.to(device, non_blocking=True) for k, v in batch.items()}")),
        # A collate_fn of this module that returns tensors; one of another module: not known (unsafe).
        Invalid(_COLLATED.format(collate=_STACKS, move="x, y = x.to(device), y.to(device)"),
                fixed=_COLLATED.format(collate=_STACKS,
                                       move="x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)")),
        Invalid(_COLLATED.format(collate="from utils import collate", move="x = x.to(device)"),
                fixed=_COLLATED.format(collate="from utils import collate", move="x = x.to(device, non_blocking=True)")),
        # On a side stream nothing waits for: the blocking copy is what orders it (no fix); with a
        # wait_stream, the fix.
        Invalid("import torch\n" + _SRC.format(move="with torch.cuda.stream(s):\n        x = x.to(device)"),
                fixed=NO_FIX, message="it runs on a side stream"),
        Invalid("import torch\n" + _SRC.format(
            move="with torch.cuda.stream(s):\n        x = x.to(device)\n    torch.cuda.current_stream().wait_stream(s)"),
                fixed="import torch\n" + _SRC.format(
            move="with torch.cuda.stream(s):\n        x = x.to(device, non_blocking=True)\n"
                 "    torch.cuda.current_stream().wait_stream(s)")),
    ]

    def __init__(self, ctx, options) -> None:
        super().__init__(ctx, options)
        self._reported: set[cst.Call] = set()  # a step function two loops call is reported once

    def visit_Module(self, node: cst.Module) -> None:
        ctx = self.ctx
        for loop, target in _pinned_batches(ctx):
            # The loop over the batches steps the optimizer, or holds a loop that does: several
            # steps on one batch ("free" adversarial training, inner optimization) copy it once.
            if ctx.loops.runs_steps(loop):
                self._check_copies(batch_moves(ctx, loop, pieces=True, target=target))

    def _check_copies(self, moves: frozenset[cst.Call]) -> None:
        ctx = self.ctx
        for call in moves - self._reported:
            if not is_device_move(ctx, call):
                continue  # a batch helper (`send_to_device(batch, device)`): its own signature
            self._reported.add(call)
            position = _non_blocking_position(ctx, call)
            arg = ctx.keyword(call, "non_blocking") or ctx.positional(call, position)
            if arg is not None and ctx.literal(arg.value) is not False:
                continue
            unpacked = _unpacks_non_blocking(ctx, call)
            if unpacked is True:
                continue  # `x.to(**move)` with `move = dict(device=d, non_blocking=True)`: the dict says
            message = "Copy of a pinned batch blocks the host; pass `non_blocking=True` so it overlaps with compute"
            if unpacked is None:
                # `x.to(**to_kw)` of a dict the file does not show: it may pass non_blocking, and a
                # keyword beside it would then be passed twice (TypeError).
                star = next(a for a in call.args if a.star)
                self.report(call, f"Copy of a pinned batch blocks the host unless `{star.star}{ctx.code(star.value)}` "
                            "passes `non_blocking=True`; not fixed: a keyword beside it would be passed twice "
                            "if it passes `non_blocking` already, so set it where that is built")
                continue
            if ctx.on_unwaited_side_stream(call):
                # A blocking copy on a side stream is done when `.to()` returns; a non-blocking one
                # would race with the default stream that reads it.
                self.report(call, message + " (it runs on a side stream: make the stream that reads it "
                            "`wait_stream(...)` that one first)")
                continue
            helper = _also_copies_to_cpu(ctx, call)
            if helper is not None:
                # `def move(t, dev): return t.to(dev)`, also called with "cpu": a non-blocking copy
                # to the host is read before it ends (stale values).
                self.report(call, message + f" (`{helper}` also copies to the CPU, where a non-blocking copy "
                            "would be read before it ends: give the batch a copy of its own)")
                continue
            changed = changed_after_copy(ctx, call)
            if changed is not None:
                # The host keeps going while a non-blocking copy waits its turn on the stream: a
                # change made in place afterwards may reach the device copy.
                when = ", on the next pass of the loop" if changed.next_pass else ""
                self.report(call, message + f" (`{changed.name}` is changed in place after the copy{when}, by "
                            f"`{_excerpt(ctx, changed.node)}`, which a non-blocking copy may read after the "
                            "change: change it first, or copy a clone)")
                continue
            takes = copy_takes_non_blocking(ctx, call)
            if takes is False:
                self.report(call, message + f" (its class's `{call.func.attr.value}` must take `non_blocking` first)")
                continue
            replacement = (call, ctx.with_keyword(call, "non_blocking", "True", position=position))
            if takes is None:  # not known to be a tensor: its `to` may not take non_blocking
                self.report(call, message + f" (if `{ctx.code(call.func.value)}` is a tensor: the collate_fn's "
                            "batch may be an object whose method does not take `non_blocking`)",
                            self.fix(Applicability.UNSAFE, "Pass `non_blocking=True`", replacement))
                continue
            self.report(call, message, self.fix(Applicability.SAFE, "Pass `non_blocking=True`", replacement))


def _unpacks_non_blocking(ctx, call: cst.Call) -> bool | None:
    """Whether the copy's `*args`/`**options` pass non_blocking: False when it has none or the
    file shows the dicts' keys without it (a keyword beside them is safe), True when a dict's keys
    hold it (`move = dict(device=d, non_blocking=True)`, `**{"non_blocking": True}`: the dict decides
    it), None when not known (`**to_kw` a parameter, or `*args`, which may pass it by position)."""
    found = False
    for arg in call.args:
        if not arg.star:
            continue
        if arg.star == "*":
            return None
        entries = dict_entries(ctx, arg.value)
        if entries is None:
            return None
        found = found or "non_blocking" in entries
    return found


def _also_copies_to_cpu(ctx, call: cst.Call) -> str | None:
    """The name of the module-local function the copy is in when its device is a parameter of that
    function and some call of it passes the CPU there (`move(pred, "cpu")`); else None."""
    device = _device_arg(call)
    fn = ctx.index.enclosing_function(call)
    if device is None or fn is None or not isinstance(device.value, cst.Name):
        return None
    param = device.value.value
    declared = next((p for p in (*fn.params.params, *fn.params.kwonly_params) if p.name.value == param), None)
    if declared is None:
        return None
    name = fn.name.value
    for other in ctx.index.nodes(cst.Call):
        if ctx.loops.local_callee_name(other) != name:
            continue
        bound = dict(ctx.loops.bind_params(name, other))
        given = bound[param].value if param in bound else declared.default  # `dev="cpu"` left out
        if given is not None and is_cpu_device(ctx, given):
            return name
    return None


def _excerpt(ctx, node: cst.CSTNode) -> str:
    """node's code on one line for a message, cut when long."""
    code = " ".join(ctx.code(node).split())
    return code if len(code) <= 60 else code[:57] + "..."


def _non_blocking_position(ctx, call: cst.Call) -> int:
    """Where a device copy takes non_blocking positionally: `Tensor.cuda(device, non_blocking)`;
    `Tensor.to(device, dtype, non_blocking)`, or `Tensor.to(other, non_blocking)` when the second
    argument is a bool (PyTorch has no `to(device, bool)`)."""
    if call.func.attr.value == "cuda":
        return 1
    second = ctx.positional(call, 1)
    return 1 if second is not None and isinstance(ctx.literal(second.value), bool) else 2


def _pinned_batches(ctx) -> list[tuple[cst.CSTNode, cst.CSTNode]]:
    """(loop, target) for each loop taking the batches of a pinned loader of this file (as
    loader_batches finds them: loops over it where it is bound, returned to or handed to, on some
    calls at least, and `next(it)` draws): a non-blocking copy of another loader's pageable batch
    is only a plain copy. Once per file."""
    pinned = getattr(ctx, "_pinned_batches", None)
    if pinned is None:
        pinned = []
        for call in ctx.index.nodes(cst.Call):
            if is_loader(ctx, call) and setting_value(ctx, call, "pin_memory", False) is True:
                pinned += [found for found in loader_batches(ctx, call, shared=True) if found not in pinned]
        ctx._pinned_batches = pinned
    return pinned