"""TL104 dataloader-shallow-prefetch: Loader with workers and `prefetch_factor` missing or below the
configured minimum."""

from __future__ import annotations

import libcst as cst

from trainlint.analysis.batches import class_named, loader_arg, loader_batches
from trainlint.analysis.literals import UNKNOWN
from trainlint.analysis.tree import binding_targets
from trainlint.diagnostics import Applicability
from trainlint.rule import NO_FIX, Invalid, Option, Valid

from .changed import global_change_sites
from .cases import FRESH
from .loaders import (
    DataLoaderRule,
    MUTATORS,
    TRAINER_TRIGGERS,
    changes_argument,
    draws_a_batch_per_pass,
    excerpt,
    setting_advice,
    setting_fix,
    setting_source,
    setting_value,
)
from .workers import has_workers, workers_operand, workers_positive, workers_subject


# A sampler built here, handed to the loader, and (maybe) changed in the loop over its batches.
_CHANGED_SAMPLER = (
    "from torch.utils.data import DataLoader\nsampler = LossAware(len(ds))\n"
    "loader = DataLoader(ds, sampler=sampler, num_workers=2)\n"
    "for x, idx in loader:\n    loss = model(x)\n    {change}\n    loss.mean().backward()\n    opt.step()\n"
)

# A sampler whose __iter__ reads a module global (a curriculum's fraction), which {change} may set
# in the loop over the batches.
_GLOBAL_SAMPLER = (
    "import random\nfrom torch.utils.data import DataLoader, Sampler\nCURRICULUM = {{'frac': 0.1}}\nLOG = {{}}\n"
    "class Growing(Sampler):\n    def __init__(self, n):\n        self.n = n\n    def __iter__(self):\n"
    "        while True:\n            yield random.randrange(max(1, int(self.n * CURRICULUM['frac'])))\n"
    "def main(ds):\n    loader = DataLoader(ds, sampler=Growing(100), num_workers=2)\n"
    "    for step, x in enumerate(loader):\n        {change}\n        loss = model(x)\n        loss.backward()\n"
    "        opt.step()\n"
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
Not a loader whose every pass is a new iterator drawn for one batch (`next(iter(loader))` each
step): what the workers prefetch past that batch is dropped with the iterator (TL103 reports it).

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
assignment, an in-place method), or changes a module global that the `__iter__` of the sampler's
class (of this module) reads, as TL103 reads a dataset's (a curriculum's `CURRICULUM["frac"] = ...`
each step, also in a function of the module the loop calls): the main process draws the indices of the batches the workers
prefetch, `prefetch_factor` per worker ahead of the loop, so a deeper queue draws more of them
before each change and the samples drawn differ. A change between passes (`sampler.set_epoch(epoch)`
in the epoch loop) keeps the fix.
"""
    valid = [
        # A new iterator for every batch: what the workers prefetch past it is dropped with it.
        Valid(FRESH.format(opts=", num_workers=4")),
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
        # A worker count from an option that defaults to 0 (TL101's finding): the runs that give it.
        Invalid("import argparse\nfrom torch.utils.data import DataLoader\nparser = argparse.ArgumentParser()\n"
                "parser.add_argument('--num-workers', type=int, default=0)\nargs = parser.parse_args()\n"
                "loader = DataLoader(ds, num_workers=args.num_workers)\n",
                message="Workers (when `--num-workers` is given; it defaults to 0) keep only 2 batches each in flight"),
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
        # The loop sets a module global the sampler's `__iter__` reads (a curriculum's fraction),
        # itself or through a function of the module: as for the sampler, the fix changed which
        # samples came. Another global, or none: fixed.
        Invalid(_GLOBAL_SAMPLER.format(change="CURRICULUM['frac'] = min(1.0, step / 10)"), fixed=NO_FIX,
                message="changes `CURRICULUM`, a module global its sampler reads (`CURRICULUM['frac'] = "),
        Invalid("def grow(step):\n    CURRICULUM.update(frac=step / 10)\n"
                + _GLOBAL_SAMPLER.format(change="grow(step)"), fixed=NO_FIX, message="changes `CURRICULUM`"),
        Invalid(_GLOBAL_SAMPLER.format(change="LOG['step'] = step"),
                fixed=_GLOBAL_SAMPLER.format(change="LOG['step'] = step").replace(
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
        if draws_a_batch_per_pass(ctx, call):
            return  # a new iterator for every batch: what it prefetches past that batch is dropped
        value = setting_value(ctx, call, "prefetch_factor", None)
        if value is UNKNOWN or (value is not None and value >= minimum):
            return
        # 2 is PyTorch's default with workers, also what an explicit `prefetch_factor=None` means.
        depth = "2" if value is None else repr(value)
        certain = workers_positive(ctx, workers.value)
        fix = setting_fix(self, call, "prefetch_factor", str(minimum), Applicability.SAFE,
                          at_call=None if certain else f"{minimum} if {workers_operand(ctx, call, workers)} > 0 else None")
        if setting_source(ctx, call, "prefetch_factor") is not None and value is None and not certain:
            fix = None  # `PREFETCH = None` is right with no workers, a number is not: no room for the condition
        changed = _sampler_changed_in_pass(ctx, call)
        if changed is not None:
            node, held = changed
            what = f"its sampler (`{excerpt(ctx, node)}`)" if held is None else \
                f"`{held}`, which its sampler was built from (`{excerpt(ctx, node)}`)"
        elif (changed := _global_changed_in_pass(ctx, call)) is not None:
            node, held = changed
            what = f"`{held}`, a module global its sampler reads (`{excerpt(ctx, node)}`)"
        if changed is not None:
            # A sampler the loop changes (a loss-aware one: `sampler.update(idx, loss)`), an object
            # it was built from (prioritized replay's priorities), or a global it reads (a
            # curriculum's fraction): the main process draws the indices of the batches workers
            # prefetch, so a deeper queue draws more of them before the change, and which samples
            # come changes.
            self.report(call, f"{workers_subject(ctx, call)} keep only {depth} batches each in flight; not fixed: the loop over the "
                              f"loader changes {what}, and the main process draws "
                              f"the indices of the batches workers prefetch, that many per worker ahead of "
                              f"the loop, so a deeper prefetch would change which samples are drawn")
            return
        self.report(call, setting_advice(ctx, call, "prefetch_factor", str(minimum),
                                         f"{workers_subject(ctx, call)} keep only {depth} batches each in flight",
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
                        or isinstance(node, cst.Call) and changes_argument(ctx, node, name):
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


def _global_changed_in_pass(ctx, call: cst.Call) -> tuple[cst.CSTNode, str] | None:
    """Where a loop that takes the loader's batches (or a function of the module it calls) changes
    a module global that the `__iter__` of its sampler's or batch sampler's class (of this module;
    also one a batch sampler is built around) reads (changed.global_change_sites: a curriculum's
    `CURRICULUM["frac"] = ...`), and the global's name; None when none does."""
    classes = []
    for setting in ("sampler", "batch_sampler"):
        arg = loader_arg(ctx, call, setting)
        if arg is not None and not arg.star:
            classes += _sampler_classes(ctx, arg.value)
    sites = [site for cls in dict.fromkeys(classes) for site in global_change_sites(ctx, cls, ("__iter__",))]
    if not sites:
        return None
    for loop, _target in loader_batches(ctx, call, shared=True):
        for site in sites:
            if ctx.loops.runs_inside(site, loop):
                return site, _changed_global(site)
    return None


def _changed_global(site: cst.CSTNode) -> str:
    """The global a change site of global_change_sites changes (`CURRICULUM` of `CURRICULUM["frac"] = x`)."""
    if isinstance(site, cst.Call):
        expr = site.func.value
    else:
        expr = site.targets[0].target if isinstance(site, cst.Assign) else site.target
    while isinstance(expr, (cst.Subscript, cst.Attribute)):
        expr = expr.value
    return expr.value if isinstance(expr, cst.Name) else "?"


def _sampler_calls(ctx, sampler: cst.BaseExpression, depth: int) -> list[cst.Call]:
    """The calls that build a sampler: the call given, or (at the top, depth 0) the calls a name
    given was assigned; none below depth 2."""
    if depth > 2:
        return []
    if isinstance(sampler, cst.Call):
        return [sampler]
    if isinstance(sampler, (cst.Name, cst.Attribute)) and depth == 0:
        return [v for v in ctx.assigned_values(sampler) if isinstance(v, cst.Call)]
    return []


def _sampler_classes(ctx, sampler: cst.BaseExpression, depth: int = 0) -> list[cst.ClassDef]:
    """The classes of this module a sampler is built from: the call given (`Growing(100)`), or the
    calls a name given was assigned, and the calls among their arguments (`BatchSampler(Growing(n),
    32, False)`)."""
    out = []
    for built in _sampler_calls(ctx, sampler, depth):
        cls = class_named(ctx, ctx.dotted(built.func))
        if cls is not None:
            out.append(cls)
        out += [c for arg in built.args if isinstance(arg.value, cst.Call)
                for c in _sampler_classes(ctx, arg.value, depth + 1)]
    return out


def _built_from(ctx, sampler: cst.BaseExpression, depth: int = 0) -> list[str]:
    """The names (`prio`, `self.prio`) handed to the constructor of a sampler: the call given
    (`sampler=PrioritySampler(prio)`), or the calls a name given was assigned; a call among the
    arguments is followed too (`BatchSampler(PrioritySampler(prio), 32, False)`)."""
    out = []
    for built in _sampler_calls(ctx, sampler, depth):
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
            if method in MUTATORS or method.endswith("_") and not method.startswith("_") \
                    and method != "requires_grad_":
                return True
        return changes_argument(ctx, node, name)
    return False
