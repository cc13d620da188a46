"""Where a training framework iterates a DataLoader of the file and copies its batches itself, so
that the framework's call stands for the training loop: a loader handed to a Lightning Trainer's
`fit` or returned by a module's `train_dataloader()`, and one an accelerate `Accelerator`
prepares for a loop that runs optimizer steps. The loader rules read these (TL102 whether batches
reach an accelerator, TL103 how many epochs a Trainer runs).

Each function takes the loader's call (and, where a function's name says what the loader is for,
the name it is assigned to, None when it is not).
"""

from __future__ import annotations

import libcst as cst

from trainlint.analysis.frameworks import (
    configured_for_cpu,
    is_accelerator,
    is_lightning_data_source,
    is_lightning_fit_trainer,
)


def lightning_trainers(ctx, call: cst.Call, name: str | None) -> list[cst.Call] | None:
    """The Lightning Trainers that train on this loader, which Lightning then iterates and moves to
    the device itself: it is handed to `trainer.fit` after the model (or as `train_dataloaders=`),
    or it is what a LightningModule's or LightningDataModule's `train_dataloader()` returns (the
    Trainer asks for it once), trained on by any Trainer of the file, or by one built elsewhere
    ([]). None when no Lightning Trainer is seen to take it."""
    if _returned_by_train_dataloader(ctx, call, name):
        return [c for c in ctx.index.nodes(cst.Call) if _is_lightning_trainer(ctx, c)]
    return _fitting_trainers(ctx, call) or None


def lightning_epochs(ctx, call: cst.Call, name: str | None) -> bool:
    """A Lightning Trainer goes over the loader every epoch, for several: the Trainers that may run
    it neither stop after one epoch nor at a step budget. Lightning's default is 1000 epochs, so a
    module whose Trainer is built elsewhere counts as several."""
    trainers = lightning_trainers(ctx, call, name)
    return trainers is not None and all(_runs_epochs(ctx, trainer) for trainer in trainers)


def _returned_by_train_dataloader(ctx, call: cst.Call, name: str | None) -> bool:
    fn = returned_from(ctx, call, name)
    if fn is None or fn.name.value != "train_dataloader":
        return False
    cls = ctx.index.parent.get(ctx.index.parent.get(fn))
    return isinstance(cls, cst.ClassDef) and ctx.names.inherits(cls.name.value, is_lightning_data_source)


def returned_from(ctx, call: cst.Call, name: str | None) -> cst.FunctionDef | None:
    """The function that returns this loader (`return DataLoader(...)`, or the name it is assigned
    to, alone or in a tuple), whose name says what the loader is for (`train_dataloader`,
    `get_eval_loader`)."""
    fn = ctx.index.enclosing_function(call)
    if fn is None:
        return None
    if isinstance(ctx.parent(call), cst.Return):
        return fn
    if name is None:
        return None
    for node in ctx.index.returns(fn):
        if node.value is not None:
            values = [e.value for e in node.value.elements] if isinstance(node.value, cst.Tuple) else [node.value]
            if any(ctx.dotted(value) == name for value in values):
                return fn
    return None


def _fitting_trainers(ctx, call: cst.Call) -> list[cst.Call]:
    """The Lightning Trainers whose `fit` is handed this loader as its training loader: the
    argument after the model (the third is the validation loader) or `train_dataloaders=`
    (`train_dataloader=` before Lightning 1.4)."""
    return [trainer for _use, _at, trainer in _handed_to(
        ctx, call, ("fit",), lambda i, keyword: i == 1 or keyword in ("train_dataloaders", "train_dataloader"),
        _is_lightning_trainer)]


def accelerate_trains_on(ctx, call: cst.Call) -> list[cst.Call]:
    """The accelerate Accelerators that prepare this loader for training, moving its batches to
    the device themselves: it is handed to `accelerator.prepare(...)` (or `prepare_data_loader`),
    and a loop that runs optimizer steps iterates it, or what `prepare` returns in its place
    (`model, opt, train_dl = accelerator.prepare(model, opt, train_dl)`; the loader may be built
    in another function of the file). [] when none does, or no training loop is seen over it (an
    evaluation loader, or one a helper returns)."""
    uses = _handed_to(ctx, call, ("prepare", "prepare_data_loader"), lambda i, keyword: keyword is None,
                      _is_accelerator)
    return [accelerator for use, at, accelerator in uses
            if any(ctx.loops.runs_steps(loop) for loop in _loops_over_prepared(ctx, use, at))]


def places_batches(ctx, accelerator: cst.Call) -> bool:
    """The Accelerator moves batches to an accelerator: not `cpu=True`, not `device_placement=False`."""
    placement = ctx.keyword(accelerator, "device_placement")
    return not configured_for_cpu(accelerator) and (placement is None or ctx.literal(placement.value) is not False)


def _loops_over_prepared(ctx, use: cst.Call, at: int) -> list[cst.For]:
    """The loops of `prepare`'s function over what it returns for its `at`-th argument: Loops
    follows a name through `prepare` into the tuple target in the same position
    (`model, dl = accelerator.prepare(model, dl)`); a loader written inline is what the target
    in its position holds (`model, dl = accelerator.prepare(model, DataLoader(...))`: before, only
    a loader prepared alone was followed, and TL102 missed the others)."""
    name = ctx.dotted(use.args[at].value)
    if name is not None:
        return ctx.loops.loops_over_names([name], ctx.index.enclosing_function(use))
    return ctx.loops.loops_over(use.args[at].value)


def _is_this_loader(ctx, call: cst.Call, expr: cst.BaseExpression) -> bool:
    """expr is this loader: the call itself, or a name it is known by where that name is in sight
    (`Loops.names_of`: the name it is assigned to in the function that builds it, anywhere for
    `self.x`; in a caller, the name bound by position from a call of the function that returns it,
    `train_dl, eval_dl = get_dataloaders(...)`; a parameter it is handed to). A name alone says
    nothing across functions: accelerate's tests call every loader `train_dl`."""
    if expr is call:
        return True
    spelled = ctx.dotted(expr)
    return spelled is not None and any(spelled == known and ctx.loops.in_sight(expr, known, scope)
                                       for known, scope in ctx.loops.names_of(call))


def _handed_to(ctx, call: cst.Call, methods: tuple[str, ...], takes,
               is_framework) -> list[tuple[cst.Call, int, cst.Call]]:
    """(the method call, the argument's position, the call that built the framework object) for
    each method in `methods` of a framework object that is handed this loader (`_is_this_loader`)
    as an argument `takes(position, keyword)` accepts (position None for a keyword)."""
    found = []
    for use in ctx.index.nodes(cst.Call):
        if not (isinstance(use.func, cst.Attribute) and use.func.attr.value in methods):
            continue
        at = next((i for i, arg in enumerate(use.args)
                   if not arg.star and takes(None if arg.keyword else i, arg.keyword.value if arg.keyword else None)
                   and _is_this_loader(ctx, call, arg.value)), None)
        if at is None:
            continue
        receiver = use.func.value
        values = [receiver] if isinstance(receiver, cst.Call) else ctx.assigned_values(receiver, anywhere=True)
        found += [(use, at, value) for value in values if isinstance(value, cst.Call) and is_framework(ctx, value)]
    return found


def _is_lightning_trainer(ctx, call: cst.Call) -> bool:
    return is_lightning_fit_trainer(ctx.names.qualified_if_named(call.func, "Trainer"))


def _is_accelerator(ctx, call: cst.Call) -> bool:
    return is_accelerator(ctx.names.qualified_if_named(call.func, "Accelerator"))


def _runs_epochs(ctx, trainer: cst.Call) -> bool:
    """The Trainer's settings let it run several epochs over the same loader: `max_epochs` is not a
    literal 0 or 1 (-1 is endless), no `max_steps` budget, no `reload_dataloaders_every_n_epochs`
    (a new loader, and new workers, every N epochs), and no `**settings` that may set them."""
    if ctx.hides_arguments(trainer):
        return False
    epochs = ctx.keyword(trainer, "max_epochs")
    value = ctx.literal(epochs.value) if epochs is not None else None
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value <= 1:
        return False
    steps = ctx.keyword(trainer, "max_steps")
    if steps is not None and ctx.literal(steps.value) != -1:
        return False
    reload = ctx.keyword(trainer, "reload_dataloaders_every_n_epochs")
    return reload is None or ctx.literal(reload.value) == 0
