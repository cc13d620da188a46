"""What the TL1xx rules share about a DataLoader call: its settings (written, or read through a
configuration), whether it is a training loader, whether its dataset changes between passes, and
the base class that finds the loaders a rule looks at."""

from __future__ import annotations

from functools import cached_property

import libcst as cst

from trainlint.analysis.batches import (
    PARAMETER_POSITION,
    builds_trainer_loader,
    is_loader,
    loader_arg,
    loader_batches,
    loader_keyword,
    star_setting,
)
from trainlint.analysis.framework_loaders import returned_from
from trainlint.analysis.literals import UNKNOWN
from trainlint.analysis.settings import Source
from trainlint.analysis.star_args import entry_to_change
from trainlint.analysis.tree import binding_targets, conditional_values
from trainlint.analysis.variables import owner, reaching_value, variable_uses
from trainlint.analysis.words import words
from trainlint.diagnostics import Applicability
from trainlint.rule import Rule


_EVAL_WORDS = frozenset({"val", "valid", "validation", "test", "testing", "eval", "evaluate", "evaluation", "dev",
                         "predict", "prediction", "inference", "infer"})
# A stem run together with a loader word: `valloader`, `testdl`, `evaldata`.
_EVAL_STEMS = ("val", "valid", "test", "eval", "dev")
_LOADER_WORDS = frozenset({"loader", "dataloader", "dl", "data", "dataset", "ds", "set", "iter", "batches"})


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


_SEQUENTIAL = ("SequentialSampler",)


def sampler_calls(ctx, call: cst.Call, or_none: bool = False) -> list[cst.Call] | None:
    """The calls that build the loader's `sampler=`, None when not all known: through a name, the
    assignment that reaches the loader (`data_sampler = SequentialSampler(ds)` just above it in an
    `else:` branch, whatever the other branch assigns), else every assignment in its function.
    With or_none, the sampler may also be None (`DistributedSampler(ds) if distributed else None`,
    or assigned so in one branch): the calls of its other values."""
    sampler = loader_arg(ctx, call, "sampler")
    if sampler is None or sampler.star:
        return None
    if isinstance(sampler.value, (cst.Call, cst.IfExp)):
        values = [sampler.value]
    else:
        name = ctx.dotted(sampler.value)
        reaching = reaching_value(ctx.index, sampler.value, name) if name else None
        values = [reaching] if reaching is not None else ctx.assigned_values(sampler.value)
    if or_none:
        values = [branch for v in values for branch in conditional_values(v)]
        values = [v for v in values if not (isinstance(v, cst.Name) and v.value == "None")]
    if not values or not all(isinstance(v, cst.Call) for v in values):
        return None
    return values


def sampler_is(ctx, expr: cst.BaseExpression, names: tuple[str, ...]) -> bool:
    """expr is a sampler class of one of these names, as imported (`RandomSampler as RS`) or spelled."""
    name = ctx.names.qualified(expr) or ctx.dotted(expr) or ""
    return name.rsplit(".", 1)[-1] in names


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
    # Gone over by comprehensions only (`[model(x) for x in loader]`): a pass that steps no
    # optimizer, unless it calls a function of the module that runs a step on each call
    # (`[train_step(b) for b in dl]`, Loops.stepping_functions).
    comprehensions = ctx.loops.comprehensions_over(call, shared=True)
    if comprehensions:
        stepping = ctx.loops.stepping_functions
        return any(fn in stepping for clause in comprehensions for node in ctx.index.walk(ctx.parent(clause))
                   if isinstance(node, cst.Call) for fn in ctx.loops.callees(node))
    samplers = sampler_calls(ctx, call)
    if samplers and all(sampler_is(ctx, v.func, _SEQUENTIAL) for v in samplers):
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
    for word in words(name):
        if word in _EVAL_WORDS or any(word.startswith(stem) and word[len(stem):] in _LOADER_WORDS
                                      for stem in _EVAL_STEMS):
            return True
    return False


def _settings_visible(ctx, call: cst.Call) -> bool:
    """No `*args`, and no `**options` dict built elsewhere: which arguments the call passes is known."""
    return not ctx.hides_arguments(call) or ctx.star_keys(call) is not None


def _over_builtin_collection(ctx, call: cst.Call) -> bool:
    """`DataLoader(range(n))`, `DataLoader([1, 2, 3])`: plain Python values, nothing to load or pin."""
    dataset = loader_arg(ctx, call, "dataset") or ctx.positional(call, 0)
    return dataset is not None and constant_values(ctx, dataset.value)


def constant_values(ctx, expr: cst.BaseExpression, depth: int = 0) -> bool:
    """expr is a collection of constants the file writes: `range(n)`, a list/tuple/set display of
    literals (or of such displays), `list()`/`tuple()` of one, a comprehension over such values
    whose element calls nothing (`[(i, i % 2) for i in range(10)]`), or a name assigned only
    those. Not a comprehension over data (`[tokenize(t) for t in texts]`, `[[ord(c) for c in t]
    for t in lines]`): a list of real samples, as a loader's dataset, is what the rules are for
    (ctx.is_builtin_collection, which takes any comprehension, exempted a tokenized corpus)."""
    if depth > 3:
        return False
    if isinstance(expr, (cst.List, cst.Tuple, cst.Set)):
        return all(not isinstance(e, cst.StarredElement) and (
            ctx.literal(e.value) is not UNKNOWN or constant_values(ctx, e.value, depth + 1)) for e in expr.elements)
    if isinstance(expr, (cst.ListComp, cst.SetComp, cst.GeneratorExp)):
        clauses, clause = [], expr.for_in
        while clause is not None:
            clauses.append(clause)
            clause = clause.inner_for_in
        return all(constant_values(ctx, c.iter, depth + 1) for c in clauses) \
            and not any(isinstance(n, cst.Call) for n in ctx.index.walk(expr.elt))
    if isinstance(expr, cst.Call):
        qn = ctx.names.qualified(expr.func)
        if qn == "builtins.range":
            return True
        return qn in ("builtins.list", "builtins.tuple") and len(expr.args) == 1 \
            and constant_values(ctx, expr.args[0].value, depth + 1)
    if isinstance(expr, cst.Name):
        values = ctx.assigned_values(expr)
        return bool(values) and all(constant_values(ctx, v, depth + 1) for v in values)
    return False


def draws_one_batch(ctx, call: cst.Call) -> bool:
    """A loader made to draw a single batch (an example input, a shape probe): `next(iter(DataLoader(
    ...)))`, or `loader = DataLoader(...)` whose only use is one `next(iter(loader))` that runs once
    (one a loop runs again is a new pass at every step: `Loops.fresh_draws`). Workers, pinning and
    prefetching would only add start-up work to it."""
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
        and _next_of_iter(ctx, reads[0].node) and not ctx.loops.fresh_draws(call)


def draws_a_batch_per_pass(ctx, call: cst.Call) -> bool:
    """Every pass over the loader is a new iterator a loop makes for one batch (`next(iter(loader))`
    per step, `Loops.fresh_draws`): a deeper prefetch is thrown away with each iterator, and no
    pass reaches the ragged last batch."""
    fresh = {id(draw.args[0].value) for draw in ctx.loops.fresh_draws(call)}
    passes = ctx.loops.passes_over(call)
    return bool(fresh) and all(id(node) in fresh for node, _ in passes)


def iterator_once(ctx, draw: cst.Call) -> str:
    """What to do instead of a new iterator for every batch (a `Loops.fresh_draws` draw), as TL101,
    TL103, TL106 and TL107 say it."""
    return f"make the iterator once before the loop (`it = {ctx.code(draw.args[0].value).strip()}`, made again at `StopIteration`)"


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
                and not _over_builtin_collection(ctx, node) and not draws_one_batch(ctx, node):
            self.check_loader(node)

    @cached_property
    def _mentions_loaders(self) -> bool:
        """A rule that also runs for TrainingArguments runs in files that never name a DataLoader:
        the loader test (which follows assignments) is skipped there."""
        return "DataLoader" in self.ctx.text

    def check_loader(self, call: cst.Call) -> None:
        raise NotImplementedError


# Methods that change a list, dict, set or deque in place (`items.extend(new)`, `ds.items.append(x)`).
MUTATORS = frozenset({"append", "extend", "insert", "pop", "remove", "clear", "update", "add", "discard",
                       "setdefault", "popitem", "sort", "reverse", "appendleft", "extendleft", "popleft",
                       "difference_update", "intersection_update", "symmetric_difference_update"})


def changes_argument(ctx, call: cst.Call, held: str) -> bool:
    """call runs a function of the module whose parameter bound to `held` it changes."""
    name = ctx.loops.local_callee_name(call)
    fns = ctx.loops.functions.get(name or "", ())
    if len(fns) != 1:
        return False
    return any(ctx.dotted(arg.value) == held and changes(ctx, fns[0], param)
               for param, arg in ctx.loops.bind_args(fns[0], call))


def changes(ctx, fn: cst.FunctionDef, name: str) -> bool:
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
            if node.func.attr.value in MUTATORS and of(node.func.value):
                return True
            if node.func.attr.value == "shuffle" and node.args and of(node.args[0].value):
                return True
    return False


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


def device_arg(call: cst.Call) -> cst.Arg | None:
    """The device argument of `x.to(...)` or `x.cuda(...)`: `device=`, or the first one when passed
    by position."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "device":
            return arg
    first = call.args[0] if call.args else None
    return first if first is not None and first.keyword is None and not first.star else None


def excerpt(ctx, node: cst.CSTNode) -> str:
    """node's code on one line for a message, cut when long."""
    code = " ".join(ctx.code(node).split())
    return code if len(code) <= 60 else code[:57] + "..."
