"""Hot loops, per-step code and interval guards.

The hot loop is the innermost loop that runs a backward or optimizer step, directly or through
functions and methods of the same module that it calls. Code is "per step" when it runs on every
iteration of a hot loop: in its body (nested plain loops included), or in a module-local function
called per step (or handed to the optimizer's step as its closure: `opt.step(closure)`), and not under an interval guard (`if step % n == 0`, a flag derived from one,
or a configured name). A remainder test that holds on all steps but one in N (`if step % n:`,
`if step % n != 0:`) limits only its `else:` (limits_body, else_interval).
"""

from __future__ import annotations

import re
from functools import cached_property
from typing import NamedTuple

import libcst as cst

from trainlint.analysis.branches import Conditions
from trainlint.analysis.literals import UNKNOWN, literal, number
from trainlint.analysis.names import Names, dotted
from trainlint.analysis.tree import (
    LIST_ADDS, TreeIndex, assigned_pairs, assignments, binding_targets, is_none, last_statement, parameter,
    parameter_annotation, target_parts, walk,
)
from trainlint.analysis.variables import Bindings, is_variable

Loop = (cst.For, cst.While)
_FUNC_BOUNDARY = (cst.FunctionDef, cst.Lambda, cst.ClassDef)
# How many calls down module-local functions are followed: a loader handed to them (as TL108's step
# functions), and the rules that read what a call runs (TL101's started processes, TL203's clock reads).
CALL_DEPTH = 3
# A value handed to shared functions from many places (a test module's `check(loader)` calls) is
# followed along this many paths at most.
_MAX_PATHS = 64

# Receivers of `.step()` that are optimizers by their names (schedulers step per epoch as often as
# per step); one named otherwise is by its construction (constructs_optimizer, Loops._holds_optimizer).
_OPTIMIZER_RECEIVER = re.compile(r"(optim|^opt$|_opt$|^opt_|scaler|^trainer$)", re.IGNORECASE)
_BACKWARD_METHODS = frozenset({"backward", "manual_backward"})

# Flags that, by name, say "only on some steps" (accelerate's sync_gradients, is_last_micro_batch...).
DEFAULT_INTERVAL_NAMES = re.compile(
    r"^(should_\w+|do_\w+|is_last\w*|last_\w+|\w+_now|sync_gradients|is_accumulat\w*|\w*log_step\w*|"
    r"\w*_boundary|is_update\w*|update_step|is_grad_acc\w*)$"
)
# Calls that hand back the same stream of batches (accelerate, Lightning Fabric, XLA, itertools).
_LOADER_WRAPPER = re.compile(r"^(iter|enumerate|tqdm|cycle|prepare\w*|setup_dataloaders?|skip_first_batches|"
                             r"\w*[wW]rap\w*|MpDeviceLoader|ParallelLoader)$")


# The wrappers among those that prepare a loader for a framework (the loader may be written inside
# the call: `accelerator.prepare(model, DataLoader(ds))`).
_PREPARING = re.compile(r"^(prepare\w*|setup_dataloaders?)$")


def _is_wrapper(node: cst.CSTNode | None) -> bool:
    """node is a call of a loader wrapper (`iter(dl)`, `tqdm(dl)`, `accelerator.prepare(dl)`)."""
    return isinstance(node, cst.Call) and bool(_LOADER_WRAPPER.match((dotted(node.func) or "").rsplit(".", 1)[-1]))


def _unwrapped(expr: cst.BaseExpression) -> cst.BaseExpression:
    """What loader wrappers are wrapped around: `loader` of `iter(tqdm(loader))`."""
    while _is_wrapper(expr) and expr.args and expr.args[0].keyword is None and not expr.args[0].star:
        expr = expr.args[0].value
    return expr


def zipped_names(call: cst.Call) -> list[str]:
    """The names a `zip(...)` pairs up, under loader wrappers or alone (`tqdm(zip(src, tgt))`,
    `enumerate(zip(a, iter(b)))`: `src`, `tgt`); [] when call is no such zip."""
    inner = _unwrapped(call)
    if not (isinstance(inner, cst.Call) and dotted(inner.func) == "zip") \
            or any(a.keyword is not None or a.star for a in inner.args):
        return []
    return [name for a in inner.args if (name := dotted(_unwrapped(a.value)))]


def _target_names(assign: cst.Assign) -> list[str | None]:
    """The dotted names an assignment binds, elements of a tuple target too."""
    out: list = []
    for target in assign.targets:
        t = target.target
        out += [dotted(e.value) for e in t.elements] if isinstance(t, (cst.Tuple, cst.List)) else [dotted(t)]
    return out


class _Framework(NamedTuple):
    """Methods a training framework calls on every training step: the loop is the framework's, so
    no hot loop is seen around them. A class is one of the framework's modules, trainers or
    callbacks when a base class comes from one of `packages` and its name ends with `base`. The
    other fields are code for a guard inside a hook, `{1}` standing for the hook's second parameter
    (a Lightning callback's `trainer`), `{2}` for its third."""
    packages: tuple[str, ...]
    base: str
    hooks: frozenset[str]
    counter: str  # the framework's optimizer-step counter
    interval: str  # its logging interval
    log: str | None  # its tensor logging call, which reads the values only at that interval


class StepHook(NamedTuple):
    """The fields of _Framework for one hook, with its parameter names filled in."""
    counter: str
    interval: str
    log: str | None


_LIGHTNING_HOOKS = frozenset({"training_step", "on_train_batch_start", "on_train_batch_end", "on_before_backward",
                              "on_after_backward", "on_before_optimizer_step", "on_before_zero_grad"})
_STEP_HOOKS = (
    _Framework(("lightning", "pytorch_lightning"), "LightningModule", _LIGHTNING_HOOKS,
               "self.global_step", "self.trainer.log_every_n_steps", "self.log"),
    _Framework(("lightning", "pytorch_lightning"), "Callback", _LIGHTNING_HOOKS,
               "{1}.global_step", "{1}.log_every_n_steps", "{2}.log"),
    # `state.logging_steps`, not `args.logging_steps`: the latter may be a fraction of the run.
    _Framework(("transformers", "trl"), "Trainer", frozenset({"compute_loss", "training_step"}),
               "self.state.global_step", "self.state.logging_steps", None),
    _Framework(("transformers", "trl"), "TrainerCallback",
               frozenset({"on_step_begin", "on_step_end", "on_substep_end", "on_pre_optimizer_step",
                          "on_optimizer_step"}),
               "{2}.global_step", "{2}.logging_steps", None),
)
# What the engine's text prefilter looks for besides backward and step calls (engine.select_for_text).
STEP_HOOK_NAMES = tuple(sorted({hook for framework in _STEP_HOOKS for hook in framework.hooks}))
_COUNTER = re.compile(r"(step|iter|idx|^i$|^it$|^j$|batch|epoch|count)", re.IGNORECASE)
_ACCUMULATION = re.compile(r"accum", re.IGNORECASE)  # accumulate, accum_steps, gradient_accumulation_steps
# Calls that read the host's clock.
CLOCKS = frozenset({"time.time", "time.perf_counter", "time.monotonic", "time.time_ns", "time.perf_counter_ns",
                    "time.monotonic_ns", "timeit.default_timer"})


def is_step_call(call: cst.Call, names: Names, holds_optimizer=None) -> bool:
    """A backward (`loss.backward()`, `torch.autograd.backward(...)`) or an optimizer's step: `.step()`
    of a receiver named as an optimizer (_OPTIMIZER_RECEIVER), or, with holds_optimizer (the
    receiver's Name or Attribute -> bool), of one it says is bound to an optimizer's construction
    (`adam = torch.optim.AdamW(...)`: Loops._holds_optimizer)."""
    func = call.func
    if isinstance(func, cst.Attribute):
        attr = func.attr.value
        if attr in _BACKWARD_METHODS:
            return True
        if attr == "step":
            receiver = dotted(func.value)
            if receiver is None:
                return False
            last = receiver.rsplit(".", 1)[-1]
            return bool(_OPTIMIZER_RECEIVER.search(last)) or holds_optimizer is not None and holds_optimizer(func.value)
    return names.qualified(func) == "torch.autograd.backward"


# Optimizer classes by how their names end: torch.optim's, and those of bitsandbytes (`Adam8bit`),
# apex and deepspeed (`FusedAdam`, `DeepSpeedCPUAdam`), transformers (`Adafactor`), ZeRO's
# `ZeroRedundancyOptimizer` and other `...Optimizer` classes.
_OPTIMIZER_CLASS_ENDINGS = ("Adam", "AdamW", "SGD", "RMSprop", "Adagrad", "Adadelta", "Adamax", "LBFGS", "ASGD",
                            "Rprop", "Adafactor", "Lion", "Lamb", "LAMB", "LARS", "Adam8bit", "AdamW8bit",
                            "AdamW32bit", "NovoGrad", "Novograd", "AdaBelief", "Muon", "Shampoo", "SophiaG",
                            "Prodigy", "Optimizer")
# A module-local or library factory of an optimizer (`build_optimizer(cfg, model)`, timm's `create_optimizer_v2`).
_OPTIMIZER_FACTORY = re.compile(r"^(create|build|get|make|init)_optimi[sz]er(_v\d+)?$")
# Parts of a dotted path under an `optim` package that name no optimizer: schedulers, SWA's averaged model.
_NOT_OPTIMIZER_PATH = re.compile(r"sched|swa_utils|lr_", re.IGNORECASE)


def constructs_optimizer(call: cst.Call, names: Names) -> bool:
    """call makes an optimizer: a class or factory of an `optim` package (`torch.optim.AdamW`, as
    written or imported, `bnb.optim.Adam8bit`, `timm.optim.create_optimizer_v2`; not its schedulers,
    `torch.optim.lr_scheduler.StepLR`), one whose name ends as an optimizer class's does
    (`transformers.Adafactor`, `FusedAdam`, `ZeroRedundancyOptimizer`), or an optimizer factory
    (`build_optimizer(cfg, model)`). By the names only: nothing is resolved beyond the imports."""
    spelled = dotted(call.func)
    if spelled is None:
        return False
    last = spelled.rsplit(".", 1)[-1]
    path = names.qualified(call.func) or spelled
    if _NOT_OPTIMIZER_PATH.search(path):
        return False
    return path.startswith("torch.optim.") or ".optim." in path or path.startswith("optim.") \
        or last.endswith(_OPTIMIZER_CLASS_ENDINGS) or bool(_OPTIMIZER_FACTORY.match(last))


def _returns_at_end(loop: cst.CSTNode) -> bool:
    """The loop's body ends with a `return`: it goes round again only where a `continue` sends it
    (a retry), not once per step."""
    body = loop.body.body if isinstance(loop.body, cst.IndentedBlock) else []
    last = body[-1] if body else None
    return isinstance(last, cst.SimpleStatementLine) and isinstance(last.body[-1], cst.Return)


def is_optimizer_step(call: cst.Call) -> bool:
    """Of the step calls (is_step_call), `opt.step()` / `scaler.step(opt)`; the others are backwards."""
    return isinstance(call.func, cst.Attribute) and call.func.attr.value == "step"


_EXISTENCE = frozenset({"exists", "isfile", "is_file", "isdir", "is_dir"})


def _tests_existence(index: TreeIndex, test: cst.BaseExpression) -> bool:
    """`os.path.exists(p)`, `Path(p).is_file()` and the like, somewhere in the test."""
    for node in index.walk(test):
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in _EXISTENCE:
            return True
    return False


def _position(body, stmt) -> int:
    for i, item in enumerate(body):
        if item is stmt:
            return i
    return -1


def first_modulo(expr: cst.CSTNode) -> cst.BinaryOperation | None:
    """The first `x % n` in expr, in document order: what makes a test an interval test."""
    for node in walk(expr):
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Modulo):
            return node
    return None


def _is_modulo(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Modulo)


def _remainder_test(test: cst.BaseExpression) -> tuple[bool, str] | None:
    """For a test of a remainder against a number, or a bare remainder: (whether it holds on one
    step in N, the test its `else:` runs under as code when it holds on the others). `step % n == 0`
    (one step in N); `step % n`, `step % n != 0`, `(step + 1) % n > 0`, `0 < step % n`,
    `step % n >= 1` (all steps but one in N: the `else:` is the limited branch); `not` of either.
    None for any other test."""
    code = _code_of
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = _remainder_test(test.expression)
        return None if inner is None else (not inner[0], code(test.expression) if inner[0] else "")
    if _is_modulo(test):
        return False, f"{code(test)} == 0"
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1):
        return None
    op, left, right = test.comparisons[0].operator, test.left, test.comparisons[0].comparator
    if _is_modulo(left) and number(right) is not None:
        remainder, value, flipped = left, right, False
    elif _is_modulo(right) and number(left) is not None:
        remainder, value, flipped = right, left, True
    else:
        return None
    if isinstance(op, cst.Equal):
        return True, ""
    if isinstance(op, cst.NotEqual):
        return False, f"{code(remainder)} == {code(value)}"
    # A remainder is never negative: `> 0` and `>= 1` hold exactly where it is not zero.
    above = {0: cst.LessThan if flipped else cst.GreaterThan, 1: cst.LessThanEqual if flipped else cst.GreaterThanEqual}
    if isinstance(op, above.get(number(value), ())):
        return False, f"{code(remainder)} == 0"
    return None


def _pattern_test(subject: cst.BaseExpression, pattern: cst.MatchPattern) -> cst.BaseExpression | None:
    """The test a `case` pattern makes of the `match` subject, as the `if` that does the same would
    write it: `case 0:` of `match step % n:` is `step % n == 0`, `case 1 | 10:` is `step % n in
    (1, 10)`, `case None:` is `x is None`. None for a pattern that matches anything (`case _:`,
    `case x:`) or one that takes the subject apart (a sequence, a mapping, a class)."""
    if isinstance(pattern, cst.MatchAs) and pattern.pattern is not None:
        return _pattern_test(subject, pattern.pattern)
    if isinstance(pattern, cst.MatchValue):
        return cst.Comparison(left=subject, comparisons=[cst.ComparisonTarget(cst.Equal(), pattern.value)])
    if isinstance(pattern, cst.MatchSingleton):
        return cst.Comparison(left=subject, comparisons=[cst.ComparisonTarget(cst.Is(), pattern.value)])
    if isinstance(pattern, cst.MatchOr) and all(isinstance(p.pattern, cst.MatchValue) for p in pattern.patterns):
        values = cst.Tuple([cst.Element(p.pattern.value) for p in pattern.patterns])
        return cst.Comparison(left=subject, comparisons=[cst.ComparisonTarget(cst.In(), values)])
    return None


def _few_steps(test: cst.BaseExpression) -> bool:
    """test holds on one step or a few named ones (`step == 0`, `step in {1, 10}`), or on a run of
    steps past a bound (`step < warmup`, `step >= max_steps`): a comparison without a remainder in
    it that is not `!=` or `not in`, also in `and` with anything, or `or` of such. Code after `if
    test: continue` runs on every other step, most of the run, as code after no exit does."""
    if isinstance(test, cst.BooleanOperation):
        left, right = _few_steps(test.left), _few_steps(test.right)
        return (left or right) if isinstance(test.operator, cst.And) else (left and right)
    if not isinstance(test, cst.Comparison) or first_modulo(test) is not None:
        return False
    return all(isinstance(t.operator, (cst.Equal, cst.In, cst.LessThan, cst.LessThanEqual, cst.GreaterThan,
                                       cst.GreaterThanEqual)) for t in test.comparisons)


# A flag true on a run's (or an epoch's) first step only: `first`, `is_first_step`, `first_batch`.
_FIRST_FLAG = re.compile(r"^(is_)?first(_\w+)?$", re.IGNORECASE)
# Counter-like names that are a size or a limit, not a position in the run (`batch_size`, `max_steps`).
_NOT_A_POSITION = re.compile(r"(size|len|num|dim|shape|total|max|min)", re.IGNORECASE)
# The most steps a one-off exit's bound leaves before it (`if step > 2: continue`).
_FEW_STEPS = 10


def _position_name(expr: cst.BaseExpression) -> bool:
    """expr names a step counter (`step`, `i`, `self.global_step`), not a size (`batch_size`)."""
    last = (dotted(expr) or "").rsplit(".", 1)[-1]
    return bool(last and _COUNTER.search(last)) and not _NOT_A_POSITION.search(last)


def _past_first_steps(test: cst.BaseExpression) -> bool:
    """A comparison that holds on every step but one or a few: `step != 0`, `i != len(loader) - 1`,
    `step not in {0, 1}`, `i > 0`, `step >= 1`, `0 < step` (a counter against a number), or `not
    first`. The flip of _few_steps: code after `if test: continue` runs on those few steps only."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return bool(_FIRST_FLAG.match((dotted(test.expression) or "").rsplit(".", 1)[-1]))
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1) or first_modulo(test) is not None:
        return False
    op, left, right = test.comparisons[0].operator, test.left, test.comparisons[0].comparator
    if isinstance(op, cst.NotEqual):
        return _position_name(left) or _position_name(right)
    if isinstance(op, cst.NotIn):
        return _position_name(left) and _few_numbers(right)
    if isinstance(op, (cst.GreaterThan, cst.GreaterThanEqual)):
        return _position_name(left) and _few(number(right))
    if isinstance(op, (cst.LessThan, cst.LessThanEqual)):
        return _few(number(left)) and _position_name(right)
    return False


def _few(bound: int | float | None) -> bool:
    """A bound that leaves a few steps before it (`step > 2`): past a large one (`step >= 1000`)
    the run's first thousand steps are still most of a short run, each one paying."""
    return bound is not None and bound <= _FEW_STEPS


def _code_of(node: cst.CSTNode) -> str:
    return cst.Module(body=[]).code_for_node(node)


def _few_numbers(expr: cst.BaseExpression) -> bool:
    """A set, tuple or list display of number literals (`{1, 10, 100}`): steps a test names one by one."""
    return isinstance(expr, (cst.Set, cst.Tuple, cst.List)) and bool(expr.elements) and all(
        isinstance(e, cst.Element) and number(e.value) is not None for e in expr.elements)


def _display_rows(expr: cst.BaseExpression) -> list[list[cst.BaseExpression]] | None:
    """The values a loop over expr binds on each iteration, when expr writes them all: a list or
    tuple display (a row per element: the values of a tuple element, else the element alone), or
    `zip` of such displays (`zip(["train", "val"], [train_loader, val_loader])`, a row per
    position, as far as the shortest goes). None for any other iterable."""
    if isinstance(expr, (cst.List, cst.Tuple)):
        return [[e.value for e in el.value.elements] if isinstance(el.value, (cst.Tuple, cst.List)) else [el.value]
                for el in expr.elements]
    if _is_zip(expr):
        columns = [arg.value for arg in expr.args]
        if not all(isinstance(c, (cst.List, cst.Tuple)) and not any(isinstance(e, cst.StarredElement) for e in c.elements)
                   for c in columns):
            return None
        return [[c.elements[i].value for c in columns] for i in range(min(len(c.elements) for c in columns))]
    return None


def _is_zip(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Call) and dotted(expr.func) == "zip" and bool(expr.args) \
        and not any(arg.star or arg.keyword for arg in expr.args)


def _leaves(stmt: cst.CSTNode) -> bool:
    """stmt is `if test:` whose branch ends by leaving (`continue`, `break`, `return`, `raise`),
    with no `else`: the statements after it run only when test is false."""
    if not isinstance(stmt, cst.If) or stmt.orelse is not None:
        return False
    return isinstance(last_statement(stmt.body), (cst.Continue, cst.Break, cst.Return, cst.Raise))


# Builtins that look at a value without going over it (or splitting it: a DataLoader worker's info).
LOOKS_ONLY = frozenset(f"builtins.{name}" for name in (
    "len", "print", "isinstance", "id", "hasattr", "getattr", "setattr", "type", "repr", "str", "format", "vars",
    "bool"))


def range_counter(loop: cst.CSTNode, assigned=None) -> str | None:
    """The name a `for` loop over a range of step numbers binds: `for step in range(n)`, through
    a progress bar (`tqdm(range(n))`, `trange(n)`, or a name assigned one: `pbar = tqdm(range(n))`,
    `for step in pbar:`, with `assigned(name)` giving the values assigned to it); None otherwise."""
    if not (isinstance(loop, cst.For) and isinstance(loop.target, cst.Name)) or loop.target.value == "_":
        return None  # `for _ in range(n)` names no counter to read (one the body counts may)
    call = _counting_call(loop.iter, assigned, ("range", "trange"))
    if call is None:
        return None
    # `range(0, n, batch_size)` binds batch offsets: `start % 100 == 0` holds on one step in 25 (a
    # batch of 4) or on the first alone (of 64), not every 100th. Counting by 1 only.
    step = call.args[2] if len(call.args) > 2 and call.args[2].keyword is None else None
    if step is not None and (step.star or literal(step.value) != 1):
        return None
    return loop.target.value


def enumerate_counter(loop: cst.CSTNode, assigned=None) -> str | None:
    """The index a `for` loop over `enumerate(...)` binds (`step` of `for step, batch in
    enumerate(loader)`), also when a progress bar wraps the enumerate (`tqdm(enumerate(loader),
    total=n)`, or a name assigned one: `pbar = tqdm(enumerate(data))`, `for step, b in pbar:`,
    with `assigned(name)` giving the values assigned to it); None otherwise."""
    if not (isinstance(loop, cst.For) and isinstance(loop.target, (cst.Tuple, cst.List)) and loop.target.elements):
        return None
    first = loop.target.elements[0]
    if isinstance(first, cst.StarredElement) or not isinstance(first.value, cst.Name) or first.value.value == "_":
        return None
    return first.value.value if _counting_call(loop.iter, assigned, ("enumerate",)) is not None else None


def _counting_call(it: cst.BaseExpression, assigned, counters: tuple[str, ...]) -> cst.Call | None:
    """The call of one of `counters` (by its last name) the loop's iterable is: directly, through a
    progress bar over it (the bar goes over what it is given first: `tqdm(enumerate(loader),
    total=n)`), or through a name assigned one of those (`assigned(name)` gives its values); None
    when it is none of those."""
    if isinstance(it, cst.Name) and assigned is not None:
        values = assigned(it)
        it = values[0] if len(values) == 1 else it
    for _ in range(2):
        if not isinstance(it, cst.Call):
            return None
        name = (dotted(it.func) or "").rsplit(".", 1)[-1]
        if name in counters:
            return it
        if name != "tqdm" or not it.args or it.args[0].keyword is not None or it.args[0].star:
            return None
        it = it.args[0].value
    return None


def _display_items(display: cst.BaseExpression):
    """(item expression, key) for each item of a dict, list or tuple display: a dict's literal key,
    a list's or tuple's position (UNKNOWN after a starred item, which shifts the rest)."""
    starred = False
    for i, element in enumerate(display.elements):
        if isinstance(element, cst.StarredElement):
            starred = True
        value = getattr(element, "value", None)
        if value is None or isinstance(element, (cst.StarredElement, cst.StarredDictElement)):
            continue
        yield value, literal(element.key) if isinstance(element, cst.DictElement) else UNKNOWN if starred else i


def runs_at_most_once(loop: cst.CSTNode) -> bool:
    """A `for` over a literal range of at most one number (`range(1)`, `range(0, 1)`, `range(1,
    2)`): a single epoch, which repeats nothing."""
    if not (isinstance(loop, cst.For) and isinstance(loop.iter, cst.Call) and dotted(loop.iter.func) == "range"):
        return False
    args = loop.iter.args
    if not 1 <= len(args) <= 2 or any(a.keyword is not None or a.star for a in args):
        return False
    bounds = [literal(a.value) for a in args]
    if not all(isinstance(b, int) and not isinstance(b, bool) for b in bounds):
        return False
    start, stop = (0, bounds[0]) if len(bounds) == 1 else bounds
    return stop - start <= 1


class ValuePath(NamedTuple):
    """A name a value is known by in a function (None: the module), and the calls of module-local
    functions that hand it down there, outermost first; always: the name holds this value wherever
    it is in sight (each call of those functions hands this same value; no loop over several
    values binds it)."""
    name: str
    scope: cst.FunctionDef | None
    calls: tuple
    always: bool
    element: bool = False  # the name holds a container of the value (`loaders["train"]`), at key
    key: object = UNKNOWN
    # (name, function, value): what a loop over pairs binds beside it, `phase` to "train" in
    # `for phase, loader in [("train", train_loader), ("val", val_loader)]`.
    given: tuple = ()


class _Alias(NamedTuple):
    """The module-local function a call through another name runs (`step_fn(batch)` with
    `step_fn = functools.partial(train_step, model)`), and how that binding moves the call's
    arguments onto the function's parameters: a bound method (`self.train_step`) takes `self`
    itself; a partial fills the first `positional` parameters and its `keywords`."""
    name: str
    method: bool = False
    positional: int = 0
    keywords: frozenset = frozenset()


# Wrappers that hand back the function they are given, called as it: `functools.partial(fn, ...)`
# (with some arguments bound), `torch.compile(fn)` (its other parameters are keyword-only).
_FUNCTION_WRAPPERS = frozenset({"functools.partial", "torch.compile"})
# How many bindings a name is followed through to a function (`step = torch.compile(step_fn)`
# with `step_fn = train_step`), a factory's return counting as one.
_ALIAS_DEPTH = 4


# nn.Module methods that hand back the module itself (`Net().to(device).train()` is the Net).
_MODULE_SELF_METHODS = frozenset({"to", "cuda", "cpu", "train", "eval", "half", "float", "double", "bfloat16",
                                  "requires_grad_", "to_empty", "type"})


def _past_self_methods(expr: cst.BaseExpression) -> cst.BaseExpression:
    """expr past the calls of nn.Module methods that hand back the module itself: `model` of
    `model.cuda().float()`."""
    while isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) \
            and expr.func.attr.value in _MODULE_SELF_METHODS:
        expr = expr.func.value
    return expr


def _through_self_methods(index: TreeIndex, node: cst.BaseExpression) -> cst.BaseExpression:
    """The outermost call of nn.Module methods that hand back the module itself made on node:
    `model.to(device).train()` for the `model` in it, which is what that expression holds; node
    itself when none is called on it."""
    while True:
        attr = index.parent.get(node)
        call = index.parent.get(attr)
        if not (isinstance(attr, cst.Attribute) and attr.value is node and attr.attr.value in _MODULE_SELF_METHODS
                and isinstance(call, cst.Call) and call.func is attr):
            return node
        node = call


_DISPLAYS = (cst.Tuple, cst.List, cst.Set, cst.Dict)


def _outermost_display(index: TreeIndex, node: cst.BaseExpression) -> tuple[cst.BaseExpression, cst.CSTNode | None]:
    """The outermost tuple, list, set or dict display that holds node as an element, at any depth
    (`{"parts": [model, opt]}` for the `model` in it), with node's own element when that display
    holds it directly (None when nested); (node, None) when no display holds it."""
    outer, element = node, None
    while True:
        item = index.parent.get(outer)
        display = index.parent.get(item)
        if not (isinstance(item, (cst.BaseElement, cst.BaseDictElement)) and isinstance(display, _DISPLAYS)):
            return outer, element
        element = item if outer is node else None
        outer = display


def _tuple_position(display: cst.BaseExpression, element: cst.CSTNode | None) -> int | None:
    """element's position in display when that is a tuple whose positions are fixed (no starred
    element: `return *rest, model` puts `model` anywhere); None otherwise."""
    if not isinstance(display, cst.Tuple) or any(isinstance(e, cst.StarredElement) for e in display.elements):
        return None
    return next((i for i, e in enumerate(display.elements) if e is element), None)


# Wrappers whose call runs the wrapped module's forward (`DDP(model)(x)`, `torch.compile(model)(x)`).
_FORWARDING_WRAPPERS = frozenset({"torch.nn.parallel.DistributedDataParallel", "torch.nn.DataParallel",
                                  "torch.nn.parallel.DataParallel", "torch.compile"})


def _plain_params(fn: cst.FunctionDef, call: cst.Call) -> list[str]:
    """The parameters of fn that call's positional arguments fill, for a call by fn's own name:
    after `self`/`cls` when called on an object (`trainer.fit(loader)`, `self.fit(loader)`)."""
    params = [p.name.value for p in fn.params.params]
    if params and params[0] in ("self", "cls") and isinstance(call.func, cst.Attribute):
        return params[1:]
    return params


def _paired(params: list[str], call: cst.Call):
    """(parameter name, argument) pairs of call: its positional arguments on params in order,
    its keyword arguments on their keywords."""
    positional = [a for a in call.args if a.keyword is None and not a.star]
    yield from zip(params, positional)
    for arg in call.args:
        if arg.keyword is not None:
            yield arg.keyword.value, arg


class _Held(NamedTuple):
    """What the bindings of `self.<attr>` seen so far hold (_attribute_classes): instances of the
    classes `names` (many=False), or lists of such instances (many=True)."""
    many: bool
    names: frozenset[str]


class _AttributeClasses(NamedTuple):
    """Loops._attribute_classes: attribute name -> the classes of the file (one of each name,
    sorted by name) whose instances it holds (`instances`), or whose instances make up the list
    it holds (`elements`)."""
    instances: dict[str, tuple[cst.ClassDef, ...]]
    elements: dict[str, tuple[cst.ClassDef, ...]]


class Loops:
    def __init__(self, index: TreeIndex, names: Names, interval_names: tuple[str, ...] = (),
                 variables: Bindings | None = None) -> None:
        self.index = index
        self.names = names
        self.variables = variables or Bindings(index)
        self.interval_names = frozenset(interval_names)
        self._per_step_fn: dict[tuple[cst.FunctionDef, bool], bool] = {}
        self._boundary_cache: dict[cst.If, bool] = {}
        self._guard_cache: dict[cst.CSTNode, bool] = {}
        self._in_hot_fn: dict[cst.FunctionDef, bool] = {}
        self._exit_cache: dict[cst.CSTNode, list[int]] = {}
        self._case_tests: dict[cst.MatchCase, cst.BaseExpression | None] = {}
        self._loops_over: dict[cst.CSTNode, list[cst.For]] = {}
        self._names_of: dict[cst.CSTNode, list] = {}
        self._paths_of: dict[cst.CSTNode, list] = {}
        self._draws: dict[cst.CSTNode, list] = {}
        self._fresh_draws: dict[cst.CSTNode, list] = {}
        self._callees: dict[cst.Call, list[cst.FunctionDef]] = {}
        # Memos of the questions about the file's classes and functions (module_call,
        # _parameter_classes, _set_in_class, _target's factories): final answers only. The two
        # questions that can come back to themselves keep what they are working out in a set of
        # their own (_resolving_parameters: a function handing its parameter on to itself;
        # _resolving_factories: a factory returning its own call), asked before the memo is written.
        self._module_calls: dict[cst.Call, list[cst.FunctionDef]] = {}
        self._parameter_classes_memo: dict[tuple[cst.FunctionDef, str], tuple[cst.ClassDef, ...]] = {}
        self._resolving_parameters: set[tuple[cst.FunctionDef, str]] = set()
        self._set_in_class_memo: dict[tuple[cst.ClassDef, str], bool] = {}
        self._factory_memo: dict[cst.FunctionDef, _Alias | None] = {}
        self._resolving_factories: set[cst.FunctionDef] = set()

        # The tables, in the order they are built, each from those before it:
        # 1. from the syntax alone: functions and classes by name, flag names, step calls (and,
        #    when first asked, the cached properties that read only the syntax, `names` and
        #    `variables`: _module_classes, _instance_names, _attribute_classes, _name_reads). The
        #    questions "which classes of the file may this expression hold" (_instance_classes) read
        #    only these. `variables` (a name's bindings: _element_class follows `tracker` in
        #    `[LossPrinter(), tracker]`) is variables.Bindings, built from the syntax, not from Loops.
        # 2. _aliases: calls through a name bound to a module-local function (_find_aliases); a
        #    factory's call in such a binding is read as _direct_callee reads calls, so 1 and the
        #    class questions, but not as a module's call (no forward is a factory).
        # 3. calls_by_name: each call's local_callee_name, which reads 1, 2 and module_call.
        # 4. the stepping functions and hot loops, from the calls of 3.
        self.functions: dict[str, list[cst.FunctionDef]] = {}
        for fn in index.nodes(cst.FunctionDef):
            self.functions.setdefault(fn.name.value, []).append(fn)
        self.classes: dict[str, list[cst.ClassDef]] = {}
        for cls in index.nodes(cst.ClassDef):
            self.classes.setdefault(cls.name.value, []).append(cls)

        # Names assigned from a modulo test or another flag: `should_log = step % n == 0`.
        self.flag_names: set[str] = set()
        for assign in index.nodes(cst.Assign):
            # Only tests are flags: `should_log = step % n == 0`. A bare remainder is a number, e.g.
            # HF-style resume `steps_trained_in_current_epoch = global_step % steps_per_epoch`, later
            # tested as `if steps_trained_in_current_epoch > 0: continue` to skip batches already seen.
            if isinstance(assign.value, (cst.Comparison, cst.BooleanOperation, cst.UnaryOperation)) \
                    and first_modulo(assign.value) is not None:
                for target in assign.targets:
                    name = dotted(target.target)
                    if name:
                        self.flag_names.add(name.rsplit(".", 1)[-1])

        # Calls of a module-local function through a name bound to it (_find_aliases): found once,
        # before calls_by_name, which holds them under the function's name. The values assigned to
        # `self.<attr>` are read for the step calls too (_holds_optimizer).
        alias_names, self._attribute_values = self._alias_bindings()
        self.step_calls: list[cst.Call] = [c for c in index.nodes(cst.Call)
                                           if is_step_call(c, names, self._holds_optimizer)]
        self._aliases: dict[cst.Call, _Alias] = self._find_aliases(alias_names)
        self.calls_by_name: dict[str, list[cst.Call]] = {}
        for call in index.nodes(cst.Call):
            callee = self.local_callee_name(call)
            if callee is not None:
                self.calls_by_name.setdefault(callee, []).append(call)

        self.stepping_functions = self._find_stepping_functions()
        self.hot_loops: set[cst.CSTNode] = set()
        for site in self._step_sites():
            loop = self._stepping_loop(site)
            if loop is not None:
                self.hot_loops.add(loop)

    def _holds_optimizer(self, receiver: cst.BaseExpression) -> bool:
        """receiver (of a `.step()` whose name says nothing: `adam.step()`) is bound to an
        optimizer's construction (constructs_optimizer): a variable the scopes it is read in
        assign one (`adam = torch.optim.AdamW(...)` in the function or the module; any of its
        assignments there), or `self.<attr>` that its class assigns one. Asked only for the
        receivers the name test left, so the bindings are looked up for few calls."""
        if isinstance(receiver, cst.Name):
            bindings = self.variables.seen_from(receiver) or ()
            values = [value for kind, value in bindings if kind == "assign"]
        elif isinstance(receiver, cst.Attribute) and isinstance(receiver.value, cst.Name) \
                and receiver.value.value == "self":
            values = self._attribute_values.get((self.index.enclosing_class(receiver), receiver.attr.value), ())
        else:
            return False
        return any(isinstance(value, cst.Call) and constructs_optimizer(value, self.names) for value in values)

    # -- structure helpers -------------------------------------------------------------

    def local_callee_name(self, call: cst.Call) -> str | None:
        """`train_step(...)` or `self.train_step(...)` when a function of that name is defined here;
        also a method called on an instance of a class defined here (`Trainer(model).fit(loader)`,
        or `trainer.fit(loader)` with `trainer = Trainer(model)` assigned once in the caller's
        function or the module) when that class defines it; and a call through a name bound to
        one such function only (`step_fn(batch)`, `self.step_fn(batch)`: _find_aliases)."""
        direct = self._direct_callee(call)
        if direct is None and self._aliases:
            alias = self._aliases.get(call)
            return alias.name if alias is not None else None
        return direct

    def _direct_callee(self, call: cst.Call, *, modules: bool = True) -> str | None:
        """local_callee_name(call) but for its aliases. modules=False leaves out the calls of a
        module object (_module_call_site): _find_aliases reads a factory's call so, as no module's
        forward hands back a function to call, and module_call is not asked before the aliases
        are known (calls_by_name asks it for every call)."""
        func = call.func
        if modules and (run := self._module_call_site(call)):
            return run[0].name.value
        if isinstance(func, cst.Name):
            name = func.value
        elif isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value in ("self", "cls"):
            name = func.attr.value
        elif isinstance(func, cst.Attribute) and func.attr.value in self.functions:  # cheap test first
            classes = self._instance_classes(func.value, call)
            name = func.attr.value
            if not any(self.index.enclosing_class(fn) in classes for fn in self.functions[name]):
                return None
        else:
            return None
        return name if name in self.functions else None

    def _module_call_site(self, call: cst.Call) -> list[cst.FunctionDef]:
        """module_call(call) for a call whose name is no function of the file (`model(x)`,
        `self.model(x)`, `self(x)`): what local_callee_name, callees and bind_args take the call
        to run. A call named as a function of the file runs that function, whatever module_call
        says of it. Empty for any other call."""
        func = call.func
        if isinstance(func, cst.Name):
            name = func.value
        elif isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value in ("self", "cls"):
            name = func.attr.value
        else:
            return []
        return [] if name in self.functions else self.module_call(call)

    def module_call(self, call: cst.Call) -> list[cst.FunctionDef]:
        """For a call of a module object (`model(x)`, `self.model(x)`, a LightningModule's
        `self(x)`) whose class is known and defined here, subclassing nn.Module: the method that
        call runs, the class's `__call__` where it defines one, else its `forward` (nn.Module's
        `__call__` runs it). A host sync in a model's forward, which the training loop runs
        through `out = model(x)` on every step, went unseen. Only a known object of the file's
        own classes (_instance_classes: `model = Net(...)`, also `Net().to(device)` and
        `model = model.cuda()`; `self.model = Net()`; a parameter every call hands one); an
        imported model's forward is not here to read. Empty otherwise."""
        # No guard against recursion: the class questions asked here (_instance_classes) never ask
        # module_call or any callee of a call.
        if not self._module_classes:
            return []  # no module class here: every unknown name's call asks, most files have none
        cached = self._module_calls.get(call)
        if cached is not None:
            return cached
        func = call.func
        if isinstance(func, cst.Name) and func.value == "self":
            cls = self.index.enclosing_class(call)
            classes = [cls] if cls is not None else []
        elif isinstance(func, cst.Name) or (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name)
                                            and func.value.value == "self"):
            classes = self._instance_classes(func, call)
        else:
            classes = ()
        found = []
        for cls in classes:
            if cls.name.value not in self._module_classes:
                continue
            method = self.method_of(cls, "__call__") or self.method_of(cls, "forward")
            if method is not None and method not in found:
                found.append(method)
        # One name, as calls_by_name keys calls by name (`__call__` of one class, `forward` of another: neither).
        found = found if len({m.name.value for m in found}) == 1 else []
        self._module_calls[call] = found
        return found

    @cached_property
    def _module_classes(self) -> frozenset[str]:
        """The file's classes that are torch modules: deriving (through classes of the file) from
        torch.nn.Module, another class of torch.nn (`nn.Sequential`), or Lightning's
        LightningModule; calling an instance of one runs its forward."""
        def is_module(qn: str) -> bool:
            parts = qn.split(".")
            return qn == "torch.nn.Module" or (len(parts) == 3 and qn.startswith("torch.nn.") and parts[2][:1].isupper()) \
                or (parts[0] in ("lightning", "pytorch_lightning") and parts[-1] == "LightningModule")
        return frozenset(name for name in self.classes if self.names.inherits(name, is_module))

    def is_module_method(self, fn: cst.FunctionDef) -> bool:
        """fn is the `forward` or `__call__` a call of a module object of the file runs (module_call)."""
        return fn.name.value in ("forward", "__call__") and any(
            fn in self.module_call(call) for call in self.calls_by_name.get(fn.name.value, ()))

    def callees(self, call: cst.Call) -> list[cst.FunctionDef]:
        """The module-local functions call may run, of those named local_callee_name(call).
        `self.x()` / `cls.x()` in a class runs that class's own x (or the one it inherits from a
        base class defined here), or an override in a subclass defined here, not a same-named
        method of an unrelated class (Trainer's `self.run(x)` once counted Exporter.run as run on
        every step); where the class has none (a mixin calling what its user defines), every
        function of the name. An instance's method (`Trainer(model).fit()`) is that class's own.
        A plain call (`train(...)`) or one through an alias: every function of the name."""
        name = self.local_callee_name(call)
        if name is None:
            return []
        cached = self._callees.get(call)
        if cached is None:
            cached = self._callees[call] = self._narrowed(call, name)
        return cached

    def instance_methods(self, call: cst.Call) -> tuple[cst.FunctionDef, ...]:
        """For `obj.meth(...)` where obj is an instance of a class defined here (`obj = Cls()`,
        `self.obj = Cls()`, `for cb in self.callbacks` over `[Cls(), ...]`: _instance_classes), the
        method meth of each such class (or of a base class defined here), once each; empty when
        none is known. Such a call runs code of this file, whatever its names say: a
        `logger.log(step, loss)` on an in-file `History()` is no logging library's call."""
        func = call.func
        if not isinstance(func, cst.Attribute) or func.attr.value not in self.functions:
            return ()
        found: list[cst.FunctionDef] = []
        for cls in self._instance_classes(func.value, call):
            method = self.method_of(cls, func.attr.value)
            if method is not None and method not in found:
                found.append(method)
        return tuple(found)

    def calls_of(self, fn: cst.FunctionDef) -> list[cst.Call]:
        """The calls that may run fn (callees): calls_by_name's calls of fn's name, less those
        that run a same-named function of another class."""
        return [c for c in self.calls_by_name.get(fn.name.value, ()) if fn in self.callees(c)]

    def _narrowed(self, call: cst.Call, name: str) -> list[cst.FunctionDef]:
        fns = self.functions[name]
        if run := self._module_call_site(call):  # `model(x)`: its class's forward, not every forward of the file
            return list(run)
        func = call.func
        if len(fns) == 1 or call in self._aliases or not isinstance(func, cst.Attribute):
            return list(fns)
        if isinstance(func.value, cst.Name) and func.value.value in ("self", "cls"):
            cls = self.index.enclosing_class(call)
            if cls is None:
                return list(fns)
            own = self.method_of(cls, name)
            overrides = [m for sub in self.subclasses(cls) if (m := self.method_of(sub, name, own=True)) is not None]
            found = ([own] if own is not None else []) + [m for m in overrides if m is not own]
            return found or list(fns)
        # An instance of one class, or of one of several (a loop over `[LossLogger(), Saver()]`):
        # the method each defines.
        own = [m for cls in self._instance_classes(func.value, call) if (m := self.method_of(cls, name, own=True))]
        return own or list(fns)

    def method_of(self, cls: cst.ClassDef, name: str, _seen: tuple = (), *, own: bool = False) -> cst.FunctionDef | None:
        """The method `name` of cls, or (unless own) of a base class defined in this module."""
        for stmt in cls.body.body:
            if isinstance(stmt, cst.FunctionDef) and stmt.name.value == name:
                return stmt
        if own:
            return None
        for base in self._bases(cls):
            if base not in _seen and base is not cls:
                method = self.method_of(base, name, (*_seen, cls))
                if method is not None:
                    return method
        return None

    def _bases(self, cls: cst.ClassDef) -> list[cst.ClassDef]:
        """cls's base classes defined in this module (the first class of each base's name)."""
        return [self.classes[base][0] for arg in cls.bases
                if (base := dotted(arg.value)) is not None and base in self.classes]

    def subclasses(self, cls: cst.ClassDef) -> list[cst.ClassDef]:
        """The classes defined here that inherit from cls, directly or through others defined here."""
        out: list[cst.ClassDef] = []
        todo = [cls]
        while todo:
            parent = todo.pop()
            for defs in self.classes.values():
                for sub in defs:
                    if sub is not cls and sub not in out and parent in self._bases(sub):
                        out.append(sub)
                        todo.append(sub)
        return out

    def _alias_bindings(self) -> tuple[frozenset[str], dict[tuple, list]]:
        """What _find_aliases follows, in one pass over the assignments: the plain names (not
        the file's functions') assigned a name, attribute, call or conditional, which may be
        aliases; and every value assigned to `self.<attr>`, by (class, attr) (None where a target
        cannot be read: `self.a, b = f()`)."""
        names: set[str] = set()
        attributes: dict[tuple, list] = {}
        for node in (*self.index.nodes(cst.Assign), *self.index.nodes(cst.AnnAssign), *self.index.nodes(cst.AugAssign)):
            value = node.value if isinstance(node, (cst.Assign, cst.AnnAssign)) else None
            for whole in (binding_targets(node) if isinstance(node, cst.Assign) else [node.target]):
                # `self.step_fn, self.n = train_step, 0`: each element its own binding (assigned_pairs).
                for target, part in assigned_pairs(whole, value):
                    if isinstance(target, cst.Name):
                        if part is not None and isinstance(part, (cst.Name, cst.Attribute, cst.Call, cst.IfExp)):
                            names.add(target.value)
                        continue
                    for sub in walk(target):
                        if isinstance(sub, cst.Attribute) and isinstance(sub.value, cst.Name) and sub.value.value == "self":
                            key = (self.index.enclosing_class(node), sub.attr.value)
                            attributes.setdefault(key, []).append(part if sub is target else None)
        return frozenset(names - self.functions.keys()), attributes

    def _find_aliases(self, names: frozenset[str]) -> dict[cst.Call, _Alias]:
        """Calls through a name that is not the function's own: `step_fn(...)` where every binding
        of step_fn seen there is an assignment of one and the same module-local function, as
        itself (`step_fn = train_step`, `self.train_step`), wrapped (`functools.partial(fn, ...)`,
        `torch.compile(fn)`), or returned by a factory (`step = make_train_step(model, opt)`,
        which defines and returns `def step(batch)`); `self.step_fn(...)` where every assignment
        of `self.step_fn` in the class is one. A name bound to anything else as well (a parameter,
        a loop target, another function) is not followed: which one runs is not known. The
        function must be the only one of its name, as calls_by_name keys calls by name. names
        and self._attribute_values: _alias_bindings."""
        attributes = self._attribute_values
        if not names and not attributes:
            return {}
        out = {}
        for call in self.index.nodes(cst.Call):
            func = call.func
            if isinstance(func, cst.Name) and func.value in names:
                alias = self._name_target(func, 0)
            elif isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self" \
                    and func.attr.value not in self.functions and attributes:
                alias = self._attribute_target(func, 0)
            else:
                continue
            if alias is not None:
                out[call] = alias
        return out

    def _name_target(self, name: cst.Name, depth: int) -> _Alias | None:
        """The function the variable read as name is bound to, when all its bindings agree."""
        return self._one_target([value if kind == "assign" else None
                                 for kind, value in self.variables.seen_from(name) or [("bind", None)]], depth)

    def _attribute_target(self, attr: cst.Attribute, depth: int) -> _Alias | None:
        """The function `self.<attr>` is bound to, when all its assignments in the class agree."""
        values = self._attribute_values.get((self.index.enclosing_class(attr), attr.attr.value))
        return self._one_target(values or [None], depth)

    def _one_target(self, values: list, depth: int) -> _Alias | None:
        targets = {None if value is None else self._target(value, depth + 1) for value in values}
        return targets.pop() if len(targets) == 1 else None

    def _target(self, expr: cst.BaseExpression, depth: int) -> _Alias | None:
        """The module-local function expr evaluates to (see _find_aliases), or None."""
        if depth > _ALIAS_DEPTH:
            return None
        if isinstance(expr, cst.Name):
            if expr.value in self.functions:
                return _Alias(expr.value) if len(self.functions[expr.value]) == 1 else None
            return self._name_target(expr, depth)
        if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self":
            fns = self.functions.get(expr.attr.value, ())
            if not fns:
                return self._attribute_target(expr, depth)
            if len(fns) != 1 or not isinstance(self.index.parent.get(self.index.parent.get(fns[0])), cst.ClassDef):
                return None
            static = any(dotted(d.decorator) == "staticmethod" for d in fns[0].decorators)
            return _Alias(expr.attr.value, method=not static)
        if isinstance(expr, cst.IfExp):  # `torch.compile(train_step) if cfg.compile else train_step`
            return self._one_target([expr.body, expr.orelse], depth)
        if not isinstance(expr, cst.Call):
            return None
        wrapper = self.names.qualified(expr.func)
        if wrapper in _FUNCTION_WRAPPERS:
            if not expr.args or expr.args[0].keyword is not None or expr.args[0].star \
                    or any(arg.star for arg in expr.args):
                return None
            inner = self._target(expr.args[0].value, depth + 1)
            if inner is None or wrapper != "functools.partial":
                return inner
            bound = expr.args[1:]
            return inner._replace(positional=inner.positional + sum(arg.keyword is None for arg in bound),
                                  keywords=inner.keywords | {arg.keyword.value for arg in bound if arg.keyword})
        factory = self._direct_callee(expr, modules=False)
        if factory is None or len(self.functions[factory]) != 1:
            return None
        fn = self.functions[factory][0]
        if fn in self._factory_memo:
            return self._factory_memo[fn]
        if fn in self._resolving_factories:
            return None  # a factory that returns its own call (`return make_step(...)`): no function known
        self._resolving_factories.add(fn)
        try:
            returns = self.index.returns(fn)
            found = self._one_target([r.value for r in returns] or [None], depth) \
                if all(r.value is not None for r in returns) else None
        finally:
            self._resolving_factories.discard(fn)
        self._factory_memo[fn] = found
        return found

    @cached_property
    def _instance_names(self) -> frozenset[str]:
        """Names some assignment binds to a call of a class of the file (`trainer = Trainer(...)`,
        or either one of a conditional expression), and names a `for` loop binds (`for cb in self.callbacks`): those _instance_classes reads."""
        assigned = (t.target.value for node in self.index.nodes(cst.Assign)
                    if (isinstance(made := self._module_made(node.value), cst.Call) and isinstance(made.func, cst.Name)
                        and made.func.value in self.classes)
                    # (a conditional expression's classes asked only of one: this runs for every assignment)
                    or (isinstance(made, cst.IfExp) and self._constructed_either(node.value))
                    for t in node.targets if isinstance(t.target, cst.Name))
        looped = (loop.target.value for loop in self.index.nodes(cst.For) if isinstance(loop.target, cst.Name))
        return frozenset((*assigned, *looped))

    @cached_property
    def _attribute_classes(self) -> _AttributeClasses:
        """For attribute names the module binds (`<x>.logger = ...`), the classes of the file
        whose instances every binding of it holds: in `instances` where each is
        `self.logger = Logger(...)` of a class defined here (once, not a name the file also
        imports), in `elements` where each is a list or tuple of such instances
        (`self.callbacks = [LossLogger(), Saver()]`, `= []` then `self.callbacks.append(Saver())`,
        or an `__init__` parameter every construction of the class hands such a list:
        _handed_to_init); in neither where that is not known. `self.cb = None` binds no class (a
        callback set later, in `setup`, tested `is not None` before use). Any other binding of the
        name anywhere (another class's, `trainer.logger = ...` from outside, a tuple or loop
        target (but `self.a, self.b = A(), B()`, paired element by element: assigned_pairs), an element's assignment, an unknown element appended, `logger = ...` or `logger:
        Logger` in a class body, which a dataclass's caller may set) leaves what it holds unknown."""
        out: dict[str, _Held | None] = {}

        def add(name: str, held: _Held | None) -> None:
            if name in out and (out[name] is None or held is None or out[name].many != held.many):
                out[name] = None
            else:
                out[name] = held if name not in out else _Held(held.many, out[name].names | held.names)

        for node in (*self.index.nodes(cst.Assign), *self.index.nodes(cst.AnnAssign),
                     *self.index.nodes(cst.AugAssign), *self.index.nodes(cst.For), *self.index.nodes(cst.AsName)):
            value = node.value if isinstance(node, (cst.Assign, cst.AnnAssign)) else None
            if isinstance(node, cst.AsName):
                targets = [node.name]
            elif isinstance(node, cst.Assign):
                targets = [t.target for t in node.targets]
            else:
                targets = [node.target]
            # `self.callbacks, self.printer = [Printer()], Printer()`: each element its own binding.
            for target, part in (pair for whole in targets for pair in assigned_pairs(whole, value)):
                if isinstance(target, cst.Name) and isinstance(self.index.parent.get(self.index.parent.get(node)),
                                                               (cst.IndentedBlock, cst.SimpleStatementSuite)) \
                        and isinstance(self.index.enclosing(node, (cst.FunctionDef, cst.ClassDef)), cst.ClassDef):
                    out[target.value] = None  # a class-body binding: `logger: Logger = field(...)`
                    continue
                for sub in walk(target):
                    if not isinstance(sub, cst.Attribute):
                        continue
                    on_self = sub is target and isinstance(sub.value, cst.Name) and sub.value.value == "self"
                    if on_self and isinstance(node, (cst.Assign, cst.AnnAssign)) and is_none(part):
                        continue  # `self.cb = None`: no object yet
                    add(sub.attr.value, self._held(part, node) if on_self else None)
        for call in self.index.nodes(cst.Call):  # `self.callbacks.append(Saver())`
            func = call.func
            if isinstance(func, cst.Attribute) and func.attr.value in LIST_ADDS \
                    and isinstance(func.value, cst.Attribute) and func.value.attr.value in out:
                add(func.value.attr.value, self._added(call))
        tables = _AttributeClasses({}, {})
        for name, held in out.items():
            if held is not None and held.names:
                table = tables.elements if held.many else tables.instances
                table[name] = tuple(self.classes[cls][0] for cls in sorted(held.names))
        return tables

    def _held(self, value: cst.BaseExpression | None, at: cst.CSTNode) -> _Held | None:
        """What `self.<attr> = value` stores (_attribute_classes), or None when not known."""
        made = self._constructed_either(value) if value is not None else ()
        if made:  # `Net()`, or either class of `Net() if small else BigNet()`
            return _Held(False, frozenset(made))
        many = self._constructed_classes(value)
        if many is not None:
            return _Held(True, many)
        if isinstance(value, cst.Name):
            return self._handed_to_init(value, at)
        return None

    def _constructed_classes(self, value: cst.BaseExpression | None) -> frozenset[str] | None:
        """The class names of a list or tuple display whose every element constructs one
        (`[LossLogger(), Saver(out)]`, `[]`, or names one assigned once: _element_class), else None: an element of any other kind (a
        parameter, a star, an imported class) may be an object whose methods are not known."""
        if not isinstance(value, (cst.List, cst.Tuple)):
            return None
        names = [self._element_class(e.value) if isinstance(e, cst.Element) else None for e in value.elements]
        return None if None in names else frozenset(names)

    def _element_class(self, value: cst.BaseExpression) -> str | None:
        """The class an element of a callbacks display constructs (_constructed_class), also through
        a name its scope assigns once, to such a construction (`tracker = GradNormTracker()`, then
        `[LossPrinter(), tracker]`: the script keeps the name to read the tracker afterwards)."""
        if isinstance(value, cst.Name):
            bindings = self.variables.seen_from(value) or []
            if len(bindings) != 1 or bindings[0][0] != "assign":
                return None
            value = bindings[0][1]
        return self._constructed_class(value)

    def _added(self, call: cst.Call) -> _Held | None:
        """What `<x>.callbacks.append(Saver())` (or extend/insert) adds to the list, or None."""
        args = [a for a in call.args if a.keyword is None and not a.star]
        if len(args) != len(call.args) or not args:
            return None
        value = args[-1].value
        if call.func.attr.value == "extend":
            many = self._constructed_classes(value)
            return _Held(True, many) if many is not None else None
        one = self._constructed_class(value)
        return _Held(True, frozenset([one])) if one is not None else None

    def _handed_to_init(self, param: cst.Name, at: cst.CSTNode) -> _Held | None:
        """For `self.callbacks = callbacks` in `__init__`, its parameter: what every construction
        of the class hands it (init_arguments), when each is a display of instances of classes of
        the file (or an instance). A name handed in is not followed (what it holds is the
        caller's). A parameter left out takes its default: None adds nothing."""
        handed = self.init_arguments(param, at)
        if handed is None:
            return None
        found: list[_Held] = []
        for given, call in handed:
            if is_none(given):
                continue
            held = self._held(given, call) if not isinstance(given, cst.Name) else None
            if held is None:
                return None
            found.append(held)
        kinds = {held.many for held in found}
        return _Held(kinds.pop(), frozenset().union(*(held.names for held in found))) if len(kinds) == 1 else None

    def init_arguments(self, param: cst.Name, at: cst.CSTNode) -> list[tuple[cst.BaseExpression, cst.Call]] | None:
        """For a read of a parameter of a class's own `__init__` (`self.callbacks = callbacks`,
        `self.device = device`; at: where it is read there): (argument, construction) for every
        construction of the class in the file, the parameter's default where one leaves it out.
        What the instance keeps is then what its constructions hand in (a device picked in `main`
        and handed to `Trainer(model, loader, device)`). None where that is not known: the
        parameter is keyword-only or re-bound in `__init__`, the class has subclasses here or is
        named other than as a call's callee (a factory that gets the class, a subclass elsewhere
        may construct it otherwise), a construction passes `*args`/`**kwargs` or leaves out a
        parameter that has no default, or nothing constructs it here."""
        init = self.index.enclosing_function(at)
        cls = self.index.enclosing_class(at)
        if init is None or cls is None or init.name.value != "__init__" or self.index.parent.get(
                self.index.parent.get(init)) is not cls or self.subclasses(cls):
            return None
        params = [p for p in init.params.params]
        names = [p.name.value for p in params]
        if param.value not in names[1:] or (self.variables.of(param.value) or {}).get(init) != [("bind", None)]:
            return None
        position = names.index(param.value) - 1
        default = params[position + 1].default
        found: list[tuple[cst.BaseExpression, cst.Call]] = []
        for node in self._name_reads.get(cls.name.value, ()):
            if node is cls.name:
                continue
            call = self.index.parent.get(node)
            if not isinstance(call, cst.Call) or call.func is not node or any(a.star for a in call.args):
                return None
            given = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == param.value), None)
            positional = [a.value for a in call.args if a.keyword is None]
            if given is None and position < len(positional):
                given = positional[position]
            if given is None:
                if default is None:
                    return None  # a required parameter not found among the arguments: not read right
                given = default
            found.append((given, call))
        return found or None

    def _constructed_class(self, value: cst.BaseExpression | None) -> str | None:
        """The name of the class value constructs (`Logger(...)`) when the file defines one class
        of that name and imports no such name, else None. A module of the file moved or wrapped
        as it is made (`Net().to(device)`, `DDP(Net().cuda())`) is still that module (_module_made)."""
        made = self._module_made(value)
        if made is not value:
            name = self._constructed_class(made)
            return name if name in self._module_classes else None
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Name):
            name = value.func.value
            if len(self.classes.get(name, ())) == 1 and name not in self.names.aliases:
                return name
        return None

    def _module_made(self, value: cst.BaseExpression | None) -> cst.BaseExpression | None:
        """What value is, past the nn.Module methods that hand back the module itself and the
        wrappers whose call runs its forward: `Net()` of `DDP(Net().to(device).train())`, `model`
        of `model.cuda()`. value itself when it is neither (what it names is for the caller to
        check: those methods hand back the module only on a module)."""
        while isinstance(value, cst.Call):
            func = value.func
            if isinstance(func, cst.Attribute) and func.attr.value in _MODULE_SELF_METHODS:
                value = func.value
            elif value.args and value.args[0].keyword is None and not value.args[0].star \
                    and self.names.qualified(func) in _FORWARDING_WRAPPERS:
                value = value.args[0].value
            else:
                break
        return value

    def _rebound_module(self, name: str, bindings: list) -> tuple[cst.ClassDef, ...]:
        """The class of the file a variable bound more than once holds, when one binding constructs
        a module of it and each other moves or wraps the same variable (`model = Net()`, then
        `model = model.to(device)`, `model = DDP(model)`): still that module. Empty otherwise."""
        made: set[str] = set()
        for kind, value in bindings:
            inner = self._module_made(value) if kind == "assign" else None
            if isinstance(inner, cst.Name) and inner.value == name and inner is not value:
                continue
            cls = self._constructed_class(inner) if inner is not None else None
            if cls is None or cls not in self._module_classes:
                return ()
            made.add(cls)
        return (self.classes[made.pop()][0],) if len(made) == 1 else ()

    def _attribute_class(self, attr: cst.Attribute, at: cst.CSTNode, *, elements: bool = False) -> tuple[cst.ClassDef, ...]:
        """The classes defined here that `self.<attr>`, read at `at`, holds an instance of (or,
        with elements, a list of instances of): every binding of the attribute says so
        (_attribute_classes), one of them in at's class or a base class defined here (else the
        instance may get it from elsewhere: a base class of another module)."""
        tables = self._attribute_classes
        held = (tables.elements if elements else tables.instances).get(attr.attr.value)
        owner = self.index.enclosing_class(at)
        if held is None or owner is None:
            return ()
        return held if self._set_in_class(owner, attr.attr.value) else ()

    def lineage(self, cls: cst.ClassDef) -> list[cst.ClassDef]:
        """cls and its base classes defined here, through bases of bases: the classes whose
        methods and `self.<attr>` bindings an instance of cls has."""
        chain, todo = [], [cls]
        while todo:
            one = todo.pop()
            if one not in chain:
                chain.append(one)
                todo += self._bases(one)
        return chain

    def self_attributes(self, cls: cst.ClassDef, attr: str) -> list[cst.Attribute]:
        """Every `self.<attr>` in the methods of cls, of its base classes defined here and of its
        subclasses: what an instance of cls may read or bind as that attribute (a trainer's
        `self.losses`, filled in its step method and averaged in its epoch-end method). Another
        class's `self.<attr>` is another object's. Reads through other names of the object
        (`trainer.losses`) are not among them."""
        related = {*self.lineage(cls), *self.subclasses(cls)}
        return [node for node in self.index.nodes(cst.Attribute)
                if node.attr.value == attr and isinstance(node.value, cst.Name) and node.value.value == "self"
                and self.index.enclosing_class(node) in related]

    def _set_in_class(self, owner: cst.ClassDef, attr: str) -> bool:
        """Whether owner, or a base class of it defined here, assigns `self.<attr>`. Memoized:
        every call in the file on a `self.<attr>` asks (calls_by_name)."""
        key = (owner, attr)
        found = self._set_in_class_memo.get(key)
        if found is None:
            chain = self.lineage(owner)
            found = self._set_in_class_memo[key] = any(
                any(isinstance(t, cst.Attribute) and t.attr.value == attr for w in targets for t in target_parts(w))
                and self.index.enclosing_class(node) in chain
                for node in (*self.index.nodes(cst.Assign), *self.index.nodes(cst.AnnAssign))
                for targets in [[t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]])
        return found

    def _instance_classes(self, expr: cst.BaseExpression, at: cst.CSTNode) -> tuple[cst.ClassDef, ...]:
        """The classes defined here (one of their name) that expr, read at `at`, may be an
        instance of: `Trainer(...)`, a name assigned `Trainer(...)` once in at's function (else
        the module), `self.logger` where every binding of it is `self.logger = Logger(...)`
        (_attribute_class), a loop's target over a list of instances (`for cb in self.callbacks:`
        with `self.callbacks = [LossLogger(), Saver()]`: _element_classes), or a parameter of at's
        function that holds one (_parameter_classes: `def train(..., ckpt)` called as
        `train(..., Ckpt())`, or `ckpt: Ckpt`). Empty when not known. This and the questions it
        asks (_attribute_class, _element_classes, _parameter_classes, _rebound_module) all answer
        in this shape, and read only the tables built from the syntax (see __init__), so they
        may be asked while the aliases and calls_by_name are being found. Each question ends by
        itself but a parameter's, which can lead to another function's parameter and so on:
        _parameter_classes works each out once, so the chain ends."""
        if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self":
            return self._attribute_class(expr, at)
        if isinstance(expr, cst.Name):
            fn = self.index.enclosing_function(at)
            if fn is not None and self.is_plain_parameter(fn, expr.value):
                return self._parameter_classes(fn, expr.value)
            if expr.value not in self._instance_names:
                return ()  # never assigned an instance of a class of the file: no binding table to read
            bound = self.variables.of(expr.value) or {}
            here = bound.get(self.index.enclosing_function(at)) or bound.get(None) or []
            if len(here) != 1:
                return self._rebound_module(expr.value, here)
            if here[0][0] == "bind":
                loop = self._loop_binding(expr.value, at)
                return self._element_classes(loop.iter, loop) if loop is not None else ()
            if here[0][0] != "assign":
                return ()
            expr = here[0][1]
        return tuple(self.classes[name][0] for name in self._constructed_either(expr)) if expr is not None else ()

    def _constructed_either(self, expr: cst.BaseExpression) -> tuple[str, ...]:
        """The classes expr constructs (_constructed_class), either one of a conditional expression
        (`Net(cfg) if cfg.small else BigNet(cfg)`, nested too), each once; empty when a branch
        constructs no class of the file (what it holds is then not known)."""
        if isinstance(expr, cst.IfExp):
            body, orelse = self._constructed_either(expr.body), self._constructed_either(expr.orelse)
            return tuple(dict.fromkeys((*body, *orelse))) if body and orelse else ()
        made = self._module_made(expr)
        if isinstance(made, cst.IfExp) and made is not expr:
            # `(Net() if small else BigNet()).cuda()`: moved as a module is, so modules only.
            names = self._constructed_either(made)
            return names if all(name in self._module_classes for name in names) else ()
        name = self._constructed_class(expr)
        return (name,) if name is not None else ()

    def _loop_binding(self, name: str, at: cst.CSTNode) -> cst.For | None:
        """The `for <name> in ...:` loop around `at`, in at's function, that binds name."""
        for anc in self.index.ancestors(at):
            if isinstance(anc, _FUNC_BOUNDARY):
                return None
            if isinstance(anc, cst.For) and isinstance(anc.target, cst.Name) and anc.target.value == name \
                    and self.index.contains(anc.body, at):
                return anc
        return None

    def _element_classes(self, expr: cst.BaseExpression, at: cst.CSTNode) -> tuple[cst.ClassDef, ...]:
        """The classes of the file whose instances make up the list expr, read at `at`: a display
        of them, `self.callbacks` (_attribute_class, elements), or a name assigned one once.
        Empty when any element is not known (no call followed into some classes only)."""
        if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self":
            return self._attribute_class(expr, at, elements=True)
        if isinstance(expr, cst.Name):
            bound = (self.variables.of(expr.value) or {})
            here = bound.get(self.index.enclosing_function(at)) or bound.get(None) or []
            if len(here) != 1 or here[0][0] != "assign" or here[0][1] is None:
                return ()
            expr = here[0][1]
        names = self._constructed_classes(expr)
        return tuple(self.classes[name][0] for name in sorted(names)) if names else ()

    def is_plain_parameter(self, fn: cst.FunctionDef, name: str) -> bool:
        """name is a named parameter of fn (not `*args`/`**kwargs`, not self/cls) that fn never
        rebinds: a read of it in fn's own body holds what the caller passed."""
        if parameter(fn, name) is None or name in ("self", "cls"):
            return False
        bound = self.variables.of(name)
        return bound is not None and bound.get(fn) == [("bind", None)]

    def _parameter_classes(self, fn: cst.FunctionDef, name: str) -> tuple[cst.ClassDef, ...]:
        """The class defined here that fn's parameter name holds an instance of (a tuple of that
        one class, as _instance_classes answers): its annotation names one (`ckpt: Ckpt`), or
        every call of fn in the file hands it one and the same class's instance
        (`train(model, Ckpt())`, `ckpt = Ckpt(); train(model, ckpt)`). A checkpointer handed in
        as a parameter was not followed, so its per-step `ckpt.save(...)` went unseen. Empty
        where fn is also used other than by a plain call (handed on as a callback: its arguments
        are not seen), a call passes `*args`/`**kwargs` or leaves the parameter to its default,
        or the calls disagree. Memoized by (fn, name), with the same answer whoever asks first:
        it used to be worked out to a depth left by the asker, and the memo kept the first
        question's answer; the tables' questions (plain_calls_of) came first and deep, so a
        parameter handed down through two functions was never known. The chain of parameters
        followed ends because each (fn, name) is worked out once (the memo, and
        _resolving_parameters while it is being worked out)."""
        key = (fn, name)
        if key in self._parameter_classes_memo:
            return self._parameter_classes_memo[key]
        if key in self._resolving_parameters:
            # Asked again while it is being answered: a function handing the parameter on to
            # itself (`def walk(node, visitor): ... walk(child, visitor)`), or two functions
            # handing it back and forth. That call hands nothing known.
            return ()
        self._resolving_parameters.add(key)
        try:
            found = self._parameter_classes_uncached(fn, name)
        finally:
            self._resolving_parameters.discard(key)
        self._parameter_classes_memo[key] = found
        return found

    def _parameter_classes_uncached(self, fn: cst.FunctionDef, name: str) -> tuple[cst.ClassDef, ...]:
        annotation = parameter_annotation(fn, name)
        if annotation is not None:
            return self._named_class(annotation)
        handed = self.handed_to(fn, name)
        if not handed:
            return ()
        found = {self._instance_classes(arg.value, call) for arg, call in handed}
        classes = found.pop() if len(found) == 1 else ()
        return classes if len(classes) == 1 else ()

    def handed_to(self, fn: cst.FunctionDef, name: str) -> list[tuple[cst.Arg, cst.Call]] | None:
        """(argument, call) for each call in the file of fn (plain_calls_of) that hands its
        parameter name: what the parameter holds. None where that is not known: fn is read other
        than as a call's callee, a call passes `*args`/`**kwargs` or leaves name to its default."""
        per_call = self._per_call(fn, name)
        if per_call is None or any(arg is None for arg, _call in per_call):
            return None
        return per_call

    def parameter_values(self, fn: cst.FunctionDef, name: str) -> list[cst.BaseExpression] | None:
        """What fn's parameter name holds, call by call (plain_calls_of): the argument a call hands
        it, or its default where a call leaves it out (`device=torch.device("cpu")` that no call
        passes). None where that is not known: fn is read other than as a call's callee, or never
        called here (another module may call it with anything), a call passes `*args`/`**kwargs`,
        or leaves out a parameter that has no default."""
        param = parameter(fn, name)
        per_call = self._per_call(fn, name)
        if param is None or not per_call or param.default is None and any(arg is None for arg, _call in per_call):
            return None
        return [arg.value if arg is not None else param.default for arg, _call in per_call]

    def _per_call(self, fn: cst.FunctionDef, name: str) -> list[tuple[cst.Arg | None, cst.Call]] | None:
        """(argument, call) for each call in the file of fn (plain_calls_of): the argument that
        fills its parameter name, None where the call leaves it to its default. None where not
        known: fn is read other than as a call's callee, or a call passes `*args`/`**kwargs`."""
        calls = self.plain_calls_of(fn)
        if calls is None:
            return None
        out = []
        for call in calls:
            if any(arg.star for arg in call.args):
                return None
            # A plain call is never through an alias (plain_calls_of), so its arguments bind as
            # written: bind_args' alias table is not needed, and not yet built when this is asked
            # for a factory's call (_find_aliases).
            args = [arg for param_name, arg in _paired(_plain_params(fn, call), call) if param_name == name]
            if len(args) > 1:
                return None
            out.append((args[0] if args else None, call))
        return out

    def _named_class(self, annotation: cst.BaseExpression) -> tuple[cst.ClassDef, ...]:
        """The class defined here (one of its name, no import of the name) an annotation names,
        `Ckpt` or `"Ckpt"`, as a tuple of it; else empty."""
        name = dotted(annotation)
        if isinstance(annotation, cst.SimpleString):
            name = annotation.evaluated_value if isinstance(annotation.evaluated_value, str) else None
        if name is None or len(self.classes.get(name, ())) != 1 or name in self.names.aliases:
            return ()
        return (self.classes[name][0],)

    @cached_property
    def _name_reads(self) -> dict[str, list[cst.Name]]:
        """Every Name node of the file, by its name, in document order (plain_calls_of,
        init_arguments)."""
        out: dict[str, list[cst.Name]] = {}
        for node in self.index.nodes(cst.Name):
            out.setdefault(node.value, []).append(node)
        return out

    def plain_calls_of(self, fn: cst.FunctionDef) -> list[cst.Call] | None:
        """Every call in the file that runs fn: `train(...)` of a module function; `self.fit(...)`
        and `obj.fit(...)` on an instance of fn's class, for a method (a call on an object of
        unknown class is taken not to run it, as calls_by_name takes it). Read from the names of
        the file, not from calls_by_name: the class questions ask this, and calls_by_name and the
        aliases ask them (see __init__). None where fn itself is read other than as a call's
        callee (handed on as a callback, aliased: `step = train_step`, `torch.compile(
        self.train_step)`, a factory's `return step`: its arguments are not seen), or the file
        defines other functions of its name (which a plain call runs is unknown)."""
        name = fn.name.value
        cls = self.index.enclosing_class(fn)
        method = cls is not None and self.index.parent.get(self.index.parent.get(fn)) is cls
        if len(self.functions.get(name, ())) != 1:
            return None
        if method and name in ("forward", "__call__") and cls.name.value in self._module_classes:
            return None  # a module's forward runs from `model(x)`, which no name of it spells
        calls = []
        for node in self._name_reads.get(name, ()):
            if node is fn.name:
                continue
            parent = self.index.parent.get(node)
            if isinstance(parent, cst.Attribute) and parent.attr is node:
                if not method:
                    continue  # `model.train()`: not a module function's call
                receiver = parent.value
                # `self.fit(...)` in any class: fn is the only function of its name, and a class
                # calling a method it does not define (a mixin's `self.fit`) runs its user's,
                # as callees takes it.
                own = isinstance(receiver, cst.Name) and receiver.value in ("self", "cls")
                owners = () if own else self._instance_classes(receiver, parent)
                if not (own or any(self.method_of(owner, name) is fn for owner in owners)):
                    continue
                node, parent = parent, self.index.parent.get(parent)
            elif method or not is_variable(self.index, node):
                continue  # a method's bare name is no call of it; `f(train=...)` names no variable
            if not (isinstance(parent, cst.Call) and parent.func is node):
                return None
            calls.append(parent)
        return calls

    def bind_params(self, fn_name: str, call: cst.Call):
        """(parameter name, argument) pairs of a call of the module-local function fn_name (when
        exactly one function has that name); `self`/`cls` are skipped for method calls. For
        callers that have only the name; one that has the function calls bind_args."""
        fns = self.functions.get(fn_name, ())
        if len(fns) != 1:
            return
        yield from self.bind_args(fns[0], call)

    def bind_args(self, fn: cst.FunctionDef, call: cst.Call):
        """(parameter name, argument) pairs of call, bound to the parameters of fn, the function
        it runs (one of callees(call)), whatever other functions share fn's name: every callback
        class defines `on_step_end`, and binding by name alone found no parameters there."""
        alias = self._aliases.get(call)
        if alias is not None:
            params = [p.name.value for p in fn.params.params]
            # `self.step_fn(x)` may call a plain function kept on the instance (no `self` taken),
            # `step_fn(x)` a bound method (`self` taken): the binding says which.
            if alias.method and params and params[0] in ("self", "cls"):
                params = params[1:]
            params = [p for p in params[alias.positional:] if p not in alias.keywords]
        elif self._module_call_site(call):
            params = [p.name.value for p in fn.params.params]
            params = params[1:] if params and params[0] in ("self", "cls") else params  # `model(x)`: after self
        else:
            params = _plain_params(fn, call)
        yield from _paired(params, call)

    @cached_property
    def call_arguments(self) -> list[tuple[cst.FunctionDef, cst.Call, str, cst.Arg]]:
        """(callee, call, parameter, argument) for every call of a module-local function."""
        return [(self.functions[fn_name][0], call, param, arg)
                for fn_name, calls in self.calls_by_name.items() for call in calls
                for param, arg in self.bind_params(fn_name, call)]

    def innermost_loop(self, node: cst.CSTNode) -> cst.CSTNode | None:
        """The nearest enclosing loop whose body (not iterable/test) holds node, in the same function."""
        child = node
        for anc in self.index.ancestors(node):
            if isinstance(anc, _FUNC_BOUNDARY):
                return None
            if isinstance(anc, Loop) and child is anc.body:
                return anc
            child = anc
        return None

    def _stepping_loop(self, site: cst.CSTNode) -> cst.CSTNode | None:
        """The loop that repeats a step site: the innermost loop around it, past loops over items
        written out (`for dtype in (torch.float16, torch.bfloat16):`, `for grad in grads` after
        `grads = [g, 10 * g, 0.1 * g]`), which run once per item written: a handful of cases, as
        a test checks a few settings, not training steps (timm's unit tests were read as training
        loops). A loop around such a loop is the hot loop, if there is one. Past a loop over
        optimizers too (_over_optimizers), whose rounds make one step, to the loop around it that
        repeats steps; not where none does: none there, or a loop that runs its body once and
        returns, round again only to retry (composer's `while True:` around a batch that may run
        out of memory), as the loop over optimizers is all that repeats steps in sight there."""
        loop = self.innermost_loop(site)
        while loop is not None:
            around = self.innermost_loop(loop)
            if not (self._over_written_items(loop)
                    or self._over_optimizers(loop) and around is not None and not _returns_at_end(around)):
                break
            loop = around
        return loop

    def _over_optimizers(self, loop: cst.CSTNode) -> bool:
        """loop goes over optimizers, a step of each: a `for` whose own optimizer steps (not those
        of a loop inside it) all step the optimizer a round takes, its target (`for opt in
        optimizers: opt.step()`) or a name the body assigns an item the target indexes
        (`optimizer = optimizers[train_idx]` in `for train_idx in range(len(objectives))`:
        sentence-transformers' fit, one step per training objective). Its rounds are parts of one
        step: its index counts objectives, the loop around it counts steps."""
        return loop in self._loops_over_optimizers

    @cached_property
    def _loops_over_optimizers(self) -> frozenset[cst.For]:
        """The loops _over_optimizers answers for, found once from the optimizer steps."""
        steps_by_loop: dict[cst.CSTNode, list[cst.Call]] = {}
        for call in self.step_calls:
            if is_optimizer_step(call):
                steps_by_loop.setdefault(self.innermost_loop(call), []).append(call)
        return frozenset(loop for loop, steps in steps_by_loop.items()
                         if isinstance(loop, cst.For) and all(self._steps_taken(loop, call) for call in steps))

    def _steps_taken(self, loop: cst.For, step: cst.Call) -> bool:
        """step (`opt.step()`, `scaler.step(opt)`) steps what a round of loop takes: its target, or
        a name its body assigns an item the target indexes (`optimizer = optimizers[i]`)."""
        targets = {n.value for n in self.index.walk(loop.target) if isinstance(n, cst.Name)}
        taken = set(targets)
        for node in self.index.walk(loop.body):
            if isinstance(node, cst.Assign) and len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name) \
                    and isinstance(node.value, cst.Subscript) and len(node.value.slice) == 1 \
                    and isinstance(index := node.value.slice[0].slice, cst.Index) \
                    and isinstance(index.value, cst.Name) and index.value.value in targets:
                taken.add(node.targets[0].target.value)
        return any(isinstance(n, cst.Name) and n.value in taken
                   for part in (step.func.value, *(a.value for a in step.args)) for n in self.index.walk(part))

    def _over_written_items(self, loop: cst.CSTNode) -> bool:
        """loop is a `for` over a tuple, list or set display with no starred element, or over a
        name every binding of which assigns one and that nothing grows (`data.append(batch)`
        anywhere in the file: the list may hold a whole dataset by the time the loop runs)."""
        if not isinstance(loop, cst.For):
            return False

        def written(value) -> bool:
            return isinstance(value, (cst.Tuple, cst.List, cst.Set)) and bool(value.elements) \
                and not any(isinstance(e, cst.StarredElement) for e in value.elements)

        if isinstance(loop.iter, cst.Name):
            bindings = self.variables.seen_from(loop.iter)
            return bool(bindings) and all(kind == "assign" and written(value) for kind, value in bindings) \
                and not any(self._grown(read) for read in self._name_reads.get(loop.iter.value, ()))
        return written(loop.iter)

    def _grown(self, read: cst.Name) -> bool:
        """read is the list a method adds items to: `read.append(x)`, `.extend(xs)`, `.insert(i, x)`."""
        method = self.index.parent.get(read)
        call = self.index.parent.get(method)
        return isinstance(method, cst.Attribute) and method.value is read \
            and method.attr.value in LIST_ADDS \
            and isinstance(call, cst.Call) and call.func is method

    def repeating_loops(self, node: cst.CSTNode, depth: int = 0) -> list[cst.CSTNode]:
        """The loops that run node more than once: the innermost loop around it in its function,
        else, for a node of a module-local function, the loops around that function's calls
        (three calls up: pytorch-cifar's `for epoch in ...: train(epoch)` repeats the loop over
        `trainloader` in `train`)."""
        loop = self.innermost_loop(node)
        if loop is not None:
            return [loop]
        fn = self.index.enclosing_function(node)
        if fn is None or depth >= CALL_DEPTH:
            return []
        out = []
        for call in self.calls_of(fn):
            if len(self.callees(call)) == 1 and not self.index.contains(fn, call):
                out += [outer for outer in self.repeating_loops(call, depth + 1) if outer not in out]
        return out

    def repeats_on(self, loop: cst.CSTNode, path: ValuePath) -> list[cst.CSTNode]:
        """The loops that run loop again over path's value (a shared_loops path): as
        repeating_loops, but a loop binding a new value each time (`for phase, loader in
        [("train", train_loader), ("val", val_loader)]`) is passed over for the loops around it,
        and only the calls on path lead out of a function (not `run_epoch(model, val_loader)`'s
        loop for the training loader's calls)."""
        node = self.innermost_loop(loop)
        while node is not None and node in self._loops_over_displays:
            loop, node = node, self.innermost_loop(node)
        if node is not None:
            return [node]
        if path.calls:
            return self.repeats_on(path.calls[-1], path._replace(calls=path.calls[:-1]))
        return self.repeating_loops(loop)

    def loops_around(self, node: cst.CSTNode) -> set[cst.CSTNode]:
        """Every loop that runs node again and again: the loops around it, and, as far as
        `repeating_loops` follows calls, the loops around those loops."""
        out: set = set()
        todo = [node]
        while todo:
            for loop in self.repeating_loops(todo.pop()):
                if loop not in out:
                    out.add(loop)
                    todo.append(loop)
        return out

    def _find_stepping_functions(self) -> set[cst.FunctionDef]:
        """Functions that run one step per call: a step outside any loop of their own, and no loop
        of optimizer steps of their own (that makes a training run, see _training_runs)."""
        stepping: set[cst.FunctionDef] = set()
        changed = True
        while changed:
            changed = False
            for site in self._step_sites(stepping):
                fn = self.index.enclosing_function(site)
                if fn is not None and fn not in stepping and self.innermost_loop(site) is None \
                        and fn not in self._training_runs:
                    stepping.add(fn)
                    changed = True
        return stepping

    @cached_property
    def _training_runs(self) -> frozenset[cst.FunctionDef]:
        """Functions with a loop of their own that calls `optimizer.step()`: training runs, where
        a step outside that loop is a one-off (timm's optimizer tests compute one loss before their
        200 steps and one after), not what each call does. A loop of backwards only (gradient
        accumulation inside a train step) and a loop over optimizers (`for opt in optimizers:
        opt.step()`) are part of one step."""
        runs = set()
        for call in self.step_calls:
            fn = self.index.enclosing_function(call)
            loop = self.innermost_loop(call)
            if fn is None or fn in runs or loop is None or not is_optimizer_step(call) or self._over_optimizers(loop):
                continue
            runs.add(fn)
        return frozenset(runs)

    def _step_sites(self, stepping: set | None = None):
        stepping = self.stepping_functions if stepping is None else stepping
        yield from self.step_calls
        seen = set()
        for fn in list(stepping):  # _find_stepping_functions adds to stepping while it reads these
            for call in self.calls_of(fn):
                if call not in seen:
                    seen.add(call)
                    yield call

    def runs_steps(self, loop: cst.CSTNode) -> bool:
        """The loop is a hot loop or holds one (an epoch loop around the step loop)."""
        if loop in self.hot_loops:
            return True
        return any(self.index.contains(loop.body, hot) for hot in self.hot_loops)

    def loops_over(self, value: cst.BaseExpression) -> list[cst.For]:
        """`for` loops that iterate over the value of expr: over the expression itself, or over the
        name it is assigned to (in the same function; `self.x` anywhere in the module), possibly
        through enumerate/tqdm/zip. Once per value: every loader rule asks."""
        if value not in self._loops_over:
            self._loops_over[value] = self._find_loops_over(value)
        return list(self._loops_over[value])

    def _find_loops_over(self, value: cst.BaseExpression) -> list[cst.For]:
        # Over value itself, or over a call of the module-local function that returns it alone
        # (`for batch in make_loader(cfg):`).
        here = [value, *self._returning_calls(value)]
        out = [loop for loop in self.index.nodes(cst.For) if any(self.index.contains(loop.iter, v) for v in here)]
        assign = self.index.parent.get(value)
        for path in self.paths_of(value):
            if path.always:
                # A loop that runs before the name is assigned this value, with no loop around
                # both, goes over what the name held before (`ld` rebuilt per dataset, then
                # assigned once more for a last pass).
                # (only for the name the value is assigned to: a name re-bound from it through a
                # wrapper, `it = tqdm(loader)`, is assigned where that wrapper is)
                assigned_here = isinstance(assign, cst.Assign) and path.scope is self.index.enclosing_function(assign) \
                    and any(dotted(t.target) == path.name for t in assign.targets)
                out += [loop for loop in self._loops_named(path) if loop not in out
                        and not (assigned_here and self._runs_before(loop, assign))
                        and not (assigned_here and self._rebound_between(path.name, assign, loop))]
        return out

    def _rebound_between(self, name: str, assign: cst.Assign, loop: cst.CSTNode) -> bool:
        """Another assignment of name runs after assign and before loop (straight-line, in one
        function): the loop goes over that later value (`loader` built again for a last run)."""
        fn = self.index.enclosing_function(assign)
        return any(other is not assign and self.index.enclosing_function(other) is fn
                   # `train_dl = accelerator.prepare(train_dl)` wraps the same loader: not another
                   and not any(isinstance(n, (cst.Name, cst.Attribute)) and dotted(n) == name
                               for n in self.index.walk(other.value))
                   and self._runs_before(assign, other) and self._runs_before(other, loop)
                   for other in self._assignments_of.get(name, ()))

    @cached_property
    def _assignments_of(self) -> dict[str, list[cst.Assign]]:
        """dotted name -> the plain assignments of it in the module."""
        out: dict[str, list[cst.Assign]] = {}
        for assign in self.index.nodes(cst.Assign):
            for target in assign.targets:
                name = dotted(target.target)
                if name is not None:
                    out.setdefault(name, []).append(assign)
        return out

    def _runs_before(self, first: cst.CSTNode, then: cst.CSTNode) -> bool:
        """first ends before then starts, in one run of their function: first comes earlier in the
        block holding both, and no loop in that function holds both (a later pass would run it
        after then)."""
        if self.index.enclosing_function(first) is not self.index.enclosing_function(then):
            return False  # a function defined before may be called after
        positions = {}
        child = first
        for anc in self.index.ancestors(first):
            if isinstance(anc, (cst.IndentedBlock, cst.Module)):
                positions[anc] = _position(anc.body, child)
            child = anc
        child = then
        for anc in self.index.ancestors(then):
            if isinstance(anc, Loop) and self.index.contains(anc, first):
                return False
            if isinstance(anc, _FUNC_BOUNDARY):
                return False
            if anc in positions:
                return positions[anc] < _position(anc.body, child)
            child = anc
        return False

    def next_draws(self, value: cst.BaseExpression) -> list[tuple[cst.CSTNode, cst.BaseExpression]]:
        """(loop, target) for each batch a loop draws from value by `target = next(it)`, where it
        is a name value is known by (`data_iter = iter(loader)`): step-based training that draws
        its batches and starts the iterator again at StopIteration. Once per value."""
        if value not in self._draws:
            names = self.names_of(value)
            out = []
            for assign, arg in self._next_assignments:
                name = dotted(arg)
                loop = self.innermost_loop(assign)
                if loop is not None and any(name == known and self.in_sight(assign, known, scope) for known, scope in names):
                    out.append((loop, assign.targets[0].target))
            self._draws[value] = out
        return list(self._draws[value])

    def fresh_draws(self, value: cst.BaseExpression) -> list[cst.Call]:
        """Each `next(iter(x))` of a name value is known by (names_of) in a hot loop (guarded or
        not) that runs it again and again without making value again: a new iterator, so a new pass
        over value, for every item drawn (a DataLoader starts its workers again and prefetches anew
        at each one). Not one an epoch loop runs (a sample batch decoded once an epoch): a pass an
        epoch is what the loader rules take any loader to make. Once per value: every loader rule asks."""
        if value in self._fresh_draws:
            return list(self._fresh_draws[value])
        names = self.names_of(value)
        made_again = self.loops_around(value)
        out = []
        for call in self._next_calls:
            made = call.args[0].value
            if len(call.args) != 1 or not isinstance(made, cst.Call) or dotted(made.func) != "iter" \
                    or len(made.args) != 1 or made.args[0].star or made.args[0].keyword:
                continue
            name = dotted(made.args[0].value)
            if self.in_hot_loop(call) and any(
                    name == known and self.in_sight(call, known, scope) for known, scope in names) and any(
                    loop not in made_again and not runs_at_most_once(loop) for loop in self.loops_around(call)):
                out.append(call)
        self._fresh_draws[value] = out
        return list(out)

    def stray_draws(self, value: cst.BaseExpression) -> list[cst.CSTNode]:
        """Where value's batches are taken other than by the loops over it (as loops_over,
        shared_loops and comprehensions_over find them) and next_draws' `target = next(it)` in a
        loop, on any path of it (paths_of): a `next(...)` that binds no target in a loop (a one-off
        draw after training, `x, y = next(iter(loader))`; `model(*next(it))`), and an iterator
        made over it through loader wrappers (`iter`, `tqdm`, `enumerate`...) that no loop or
        comprehension goes over and that is not bound to a name value is known by (escapes looks
        at those): `with tqdm(loader) as bar:`, `Prefetcher(iter(loader))`, `pbar =
        tqdm(enumerate(loader))`. A fix that moves the batches of the loops seen would leave these
        on the CPU."""
        paths = self.paths_of(value)
        known = {(path.name, path.scope) for path in paths}
        attributes = {name for name, _ in known if name.startswith("self.")}  # read in every method
        drawn = {id(self.index.parent.get(self.index.parent.get(target)).value) for _, target in self.next_draws(value)}
        out: list = []
        for path in paths:
            for call in self._next_calls:
                if id(call) not in drawn and call not in out and self.in_sight(call, path.name, path.scope) \
                        and self._names(_unwrapped(call.args[0].value), path):
                    out.append(call)
            for call in self.calls_handing(path.name):
                if not _is_wrapper(call) or not self.in_sight(call, path.name, path.scope) \
                        or not any(self._names(arg.value, path) for arg in call.args if not arg.star):
                    continue
                outer = call
                while isinstance(arg := self.index.parent.get(outer), cst.Arg) and arg.value is outer \
                        and _is_wrapper(self.index.parent.get(arg)):
                    outer = self.index.parent.get(arg)
                holder = self.index.parent.get(outer)
                if isinstance(holder, cst.Arg) and dotted(self.index.parent.get(holder).func) == "next":
                    continue  # a draw: the loop above sees it
                if any(isinstance(anc, (cst.For, cst.CompFor)) and self.index.contains(anc.iter, outer)
                       for anc in self.index.ancestors(outer)):
                    continue  # gone over by a loop or comprehension
                if outer is call and isinstance(holder, cst.Assign) and holder.value is outer and any(
                        name in attributes if name.startswith("self.") else (name, self.index.enclosing_function(holder)) in known
                        for name in _target_names(holder) if name):
                    continue  # re-bound to a name the loops and escapes follow (`it = iter(loader)`)
                if outer not in out:
                    out.append(outer)
        return out

    @cached_property
    def _next_calls(self) -> list[cst.Call]:
        """Each `next(it)` / `next(it, default)` call of the module."""
        return [node for node in self.index.nodes(cst.Call) if dotted(node.func) == "next"
                and node.args and not node.args[0].star]

    @cached_property
    def _next_assignments(self) -> list[tuple[cst.Assign, cst.BaseExpression]]:
        """(assignment, iterator) for each `x = next(it)` / `x = next(it, default)` of the module."""
        return [(node, node.value.args[0].value) for node in self.index.nodes(cst.Assign)
                if len(node.targets) == 1 and isinstance(node.value, cst.Call) and dotted(node.value.func) == "next"
                and node.value.args and not node.value.args[0].star]

    def shared_loops(self, value: cst.BaseExpression) -> list[tuple[cst.For, ValuePath]]:
        """(loop, path) for each loop over value that is not one of loops_over's: a loop of a
        module-local function that other values go through on its other calls (`run_epoch(model,
        train_loader, opt)` and `run_epoch(model, val_loader)`), or over a name a loop binds to
        several values (`for phase, loader in [("train", train_loader), ("val", val_loader)]`),
        with the path that leads value there (the calls handing it down, outermost first; the
        names bound beside it). The loop goes over value on those calls or iterations only."""
        every = self.loops_over(value)
        return [(loop, path) for path in self.paths_of(value) if not path.always
                for loop in self._loops_named(path) if loop not in every]

    def steps_on(self, loop: cst.For, path: ValuePath) -> bool | None:
        """Whether loop runs optimizer steps when it goes over the value of path (as shared_loops
        gives them: its function reached through path's calls, path's given names bound): True
        when a step in it sits under conditions that are all true there (or under none), False
        when every step sits under one that is false there (`if optimizer is not None:` on
        `run_epoch(model, val_loader)`, `if phase == "train":` for the "val" loader), None when
        not known."""
        if not self.runs_steps(loop):
            return False
        fn = self.index.enclosing_function(loop)
        verdicts = set()
        for site in self._step_sites():
            if self.index.contains(loop.body, site):
                verdicts.add(self._reached_on(site, fn, path))
                if True in verdicts:
                    return True
        return False if verdicts == {False} else None

    def _reached_on(self, node: cst.CSTNode, fn: cst.FunctionDef | None, path: ValuePath) -> bool | None:
        """node's `if` conditions in fn on path: all true (True), one false (False), else None.
        A guard that leaves before node (`if not train: continue`, `if optimizer is None:
        return`) is the opposite condition: true there, node is not reached; one not known there
        is taken for a guard that skips some iterations (`if batch is None: continue`, `if step <
        resume_step: continue`), after which node still runs."""
        known = True
        child = node
        for anc in self.index.ancestors(node):
            if anc is fn or isinstance(anc, _FUNC_BOUNDARY):
                break
            if isinstance(anc, cst.If) and child is not anc.test:
                truth = self.conditions.truth(anc.test, fn, path.calls, path.given)
                if truth is not UNKNOWN and truth is not (child is anc.body):
                    return False
                known = known and truth is not UNKNOWN
            if isinstance(anc, cst.IndentedBlock) and child in anc.body:
                for guard in anc.body[:anc.body.index(child)]:
                    if _leaves(guard):
                        if self.conditions.truth(guard.test, fn, path.calls, path.given) is True:
                            return False
            child = anc
        return True if known else None

    @cached_property
    def conditions(self) -> Conditions:
        return Conditions(self.index, self.variables, self.bind_args)

    def names_of(self, value: cst.BaseExpression) -> list[tuple[str, cst.FunctionDef | None]]:
        """(name, function) for every name value is known by, in the function it is known in: the
        names it is assigned to, and what they are re-bound to through loader wrappers
        (`dl = accelerator.prepare(dl)`); the names a caller binds it to when a module-local
        function returns it (`returned_to`); and the parameters of module-local functions it is
        handed to on every call of them (`_handed_to`, also written as the argument itself:
        `train(DataLoader(ds))`). A use of the name where it is in sight (`in_sight`) is a use of
        value. Once per value."""
        if value not in self._names_of:
            out: list = []
            for path in self.paths_of(value):
                if path.always and not path.element and (path.name, path.scope) not in out:
                    out.append((path.name, path.scope))
            self._names_of[value] = out
        return list(self._names_of[value])

    def paths_of(self, value: cst.BaseExpression) -> list[ValuePath]:
        """Every name value is known by (as names_of), and also the parameters of functions it is
        handed to on some of their calls only (`run_epoch(model, train_loader, opt)` beside
        `run_epoch(model, val_loader)`), each with the calls that hand it down. Once per value."""
        if value not in self._paths_of:
            contained = self._container_of(value)
            parent = self.index.parent.get(contained[0] if contained else value)
            targets = []
            if isinstance(parent, cst.Assign):
                targets = [dotted(t.target) for t in parent.targets]
            elif isinstance(parent, cst.AnnAssign):
                targets = [dotted(parent.target)]
            elif contained is None:
                targets = self._prepared_as(value)
            out: list = []
            written_in = self._parameter_of(value)
            if written_in is not None:
                params, callee, calls = written_in
                self._reach(params, callee, 1, out, calls)
            for attr, init in self._kept_as(value):  # `Trainer(model, DataLoader(ds))`
                self._reach([attr], init, 1, out)
            self._reach([t for t in targets if t], self.index.enclosing_function(value), 0, out,
                        element=contained is not None, key=contained[1] if contained else UNKNOWN)
            for name, caller in self.returned_to(value):
                self._reach([name], caller, 0, out)
            if contained is not None:  # `return {"train": DataLoader(...), ...}` to `loaders = build(cfg)`
                for name, caller in self.returned_to(contained[0]):
                    self._reach([name], caller, 0, out, element=True, key=contained[1])
            self._paths_of[value] = out
        return list(self._paths_of[value])

    def _prepared_as(self, value: cst.BaseExpression) -> list[str | None]:
        """The name a framework's prepare call hands value back as, when value is written as its
        argument (`model, opt, dl = accelerator.prepare(model, opt, DataLoader(ds))`, by position;
        `dl = fabric.setup_dataloaders(DataLoader(ds))`): the loader built inline is known by that
        name, as `dl = accelerator.prepare(dl)` re-binds a name (before, such a loader had no name
        and its loops were not seen). So does an iterator made over it by a loader wrapper that gets
        it alone (`it = iter(DataLoader(ds))`, `it = cycle(tqdm(DataLoader(ds)))`), as `it =
        iter(dl)` re-binds dl: the `batch = next(it)` of a step loop drew the batches of a loader
        known by no name, unseen by the loader rules. Empty otherwise."""
        arg = self.index.parent.get(value)
        call = self.index.parent.get(arg)
        if not isinstance(arg, cst.Arg) or arg.value is not value or arg.keyword or arg.star \
                or not isinstance(call, cst.Call) or not _is_wrapper(call):
            return []
        if not _PREPARING.match((dotted(call.func) or "").rsplit(".", 1)[-1]):
            return self._wrapped_alone(call, arg)
        assign = self.index.parent.get(call)
        if not isinstance(assign, cst.Assign) or assign.value is not call or len(assign.targets) != 1:
            return []
        args = [a for a in call.args if not a.keyword]
        if any(a.star for a in args):
            return []
        target = assign.targets[0].target
        if isinstance(target, (cst.Tuple, cst.List)):
            if len(target.elements) != len(args) or len(args) < 2 or any(
                    isinstance(e, cst.StarredElement) for e in target.elements):
                return []
            return [dotted(target.elements[args.index(arg)].value)]
        return [dotted(target)] if len(args) == 1 else []

    def _wrapped_alone(self, call: cst.Call, arg: cst.Arg) -> list[str | None]:
        """The name `it = wrapper(value)` binds (_prepared_as), value being the wrapper's only
        positional argument (`iter(dl)`, `tqdm(dl, total=n)`; not `enumerate(dl, 1)`'s start) and
        the target one name; through wrappers around it (`iter(tqdm(...))`). Empty otherwise."""
        if [a for a in call.args if a.keyword is None] != [arg]:
            return []
        holder = self.index.parent.get(call)
        if isinstance(holder, cst.Arg):
            return self._prepared_as(call)
        if not isinstance(holder, cst.Assign) or holder.value is not call or len(holder.targets) != 1 \
                or isinstance(holder.targets[0].target, (cst.Tuple, cst.List)):
            return []
        return [dotted(holder.targets[0].target)]

    def _reach(self, names: list[str], scope: cst.FunctionDef | None, depth: int, out: list,
               calls: tuple = (), always: bool = True, element: bool = False, key=UNKNOWN, given: tuple = ()) -> None:
        """Add names of scope, their re-bindings there, the names loops over several values bind
        them to, and (up to three calls down) the parameters of the functions they are handed to,
        to out, as ValuePaths (of a container holding the value at key, with element)."""
        known = [(name, scope) for name in names] if element else self._wrapped_names(names, scope)
        for name, where in known:
            path = ValuePath(name, where, calls, always, element, key, given)
            if path in out or len(out) >= _MAX_PATHS:
                continue
            out.append(path)
            self._reach_picked(path, depth, out)
            for target, loop_fn, bound, item in self._unpacked_by_loops(path):
                if item:  # still the container's item, under a key the loop binds
                    keyed = ValuePath(name, where, calls, False, True, key, (*given, *bound))
                    if keyed not in out and len(out) < _MAX_PATHS:
                        out.append(keyed)
                        self._reach_picked(keyed, depth, out)
                else:
                    self._reach([target], loop_fn, depth, out, calls, False, False, UNKNOWN, (*given, *bound))
        if depth < CALL_DEPTH:
            for where in dict.fromkeys(where for _name, where in known):
                here = [name for name, w in known if w is where]
                for callee, param, call, only in self._handed_to(here, where):
                    self._reach([param], callee, depth + 1, out, (*calls, call), always and only, element, key, given)
                if always and not element:
                    # Kept by the instance of a class it is handed to (`Trainer(model, dl)`, with
                    # `self.loader = loader` in `__init__`): `self.loader` in its methods, as for a
                    # loader built in `__init__`. Reached through the methods' calls, not through
                    # the construction, so no call is added.
                    for attr, init in self._kept_by_constructions(here, where):
                        self._reach([attr], init, depth + 1, out, calls, always, element, key, given)
                if not element:
                    # Handed down inside a display: `evaluate(model, {"train": train_loader})`.
                    for callee, param, call, item_key in self._handed_in_display(here, where):
                        self._reach([param], callee, depth + 1, out, (*calls, call), False, True, item_key, given)
                    # Put in one held by a name: `loaders = [train_loader, val_loader]`.
                    for target, item_key in self._held_in_displays(here, where):
                        self._reach([target], where, depth, out, calls, False, True, item_key, given)

    def _unpacked_by_loops(self, path: ValuePath) -> list[tuple[str, cst.FunctionDef | None, tuple, bool]]:
        """(target, function, given, item) for each loop over several values that binds path's
        value to target on some iterations: `for phase, loader in [("train", train_loader),
        ("val", val_loader)]` (given: `phase` is "train" then), `for loader in (train_loader,
        val_loader)`, and, for a dict holding it, `for phase, loader in loaders.items()` (given
        the key) or `for loader in loaders.values()`, for a list or tuple, `for loader in
        loaders`; or (item) a loop over the dict's keys that
        picks it there (`for phase in ["train", "val"]:` with `loaders[phase]`; target is the
        dict, given the key)."""
        out = []
        if path.element and not path.given and isinstance(path.key, int) and not isinstance(path.key, bool):
            # An item of a list or tuple (an int key): `for dl in loaders:` binds each item in turn.
            for loop in self._loops_over_plain_names.get(path.name, ()):
                if isinstance(loop.target, cst.Name) and self.in_sight(loop, path.name, path.scope):
                    out.append((loop.target.value, self.index.enclosing_function(loop), (), False))
        for loop in self._loops_over_displays:
            if not self.in_sight(loop, path.name, path.scope):
                continue
            fn = self.index.enclosing_function(loop)
            targets = loop.target.elements if isinstance(loop.target, (cst.Tuple, cst.List)) else None
            names = [dotted(t.value) for t in targets] if targets is not None else [dotted(loop.target)]
            if None in names:
                continue
            if path.element and not path.given and isinstance(loop.iter, (cst.List, cst.Tuple)) and targets is None:
                if path.key is not UNKNOWN and any(literal(e.value) == path.key for e in loop.iter.elements):
                    out.append((path.name, fn, ((names[0], fn, path.key),), True))
                continue
            if path.element:
                method = loop.iter.func.attr.value if isinstance(loop.iter, cst.Call) and isinstance(
                    loop.iter.func, cst.Attribute) and dotted(loop.iter.func.value) == path.name else None
                if method == "values" and targets is None:
                    out.append((names[0], fn, (), False))
                elif method == "items" and len(names) == 2:
                    out.append((names[1], fn, () if path.key is UNKNOWN else ((names[0], fn, path.key),), False))
                continue
            for values in _display_rows(loop.iter) or ():
                if len(values) != len(names) or (targets is None) != (len(values) == 1 and not _is_zip(loop.iter)):
                    continue
                for i, value in enumerate(values):
                    if dotted(value) == path.name:
                        given = tuple((names[j], fn, literal(v)) for j, v in enumerate(values)
                                      if j != i and literal(v) is not UNKNOWN)
                        out.append((names[i], fn, given, False))
        return out

    def _reach_picked(self, path: ValuePath, depth: int, out: list) -> None:
        """For a path of a container holding the value: reach the names assigned an item of it
        that may be the value (`train_loader = loaders["train"]`, holding it always, at its own
        key; `loader = loaders[phase]` inside `for phase in ["train", "val"]`, on path's
        iterations), in the function the assignment is in."""
        if not path.element:
            return
        for node in self.index.nodes(cst.Assign):
            if len(node.targets) != 1 or not isinstance(node.value, cst.Subscript) or not self._names(node.value, path) \
                    or not self.in_sight(node, path.name, path.scope):
                continue
            name = dotted(node.targets[0].target)
            index = node.value.slice[0].slice
            exact = path.key is not UNKNOWN and isinstance(index, cst.Index) and literal(index.value) == path.key
            by_given = isinstance(index, cst.Index) and any(dotted(index.value) == known for known, _fn, _v in path.given)
            if path.given and not (exact or by_given):
                continue  # any key (`loaders[cfg.phase]`): the path without given names takes it
            if name is not None:
                self._reach([name], self.index.enclosing_function(node), depth, out, path.calls,
                            path.always and exact, False, UNKNOWN, path.given)

    @cached_property
    def _loops_over_plain_names(self) -> dict[str, list[cst.For]]:
        """dotted name -> the loops over that name itself (`for dl in loaders:`)."""
        out: dict[str, list[cst.For]] = {}
        for loop in self.index.nodes(cst.For):
            name = dotted(loop.iter) if isinstance(loop.iter, (cst.Name, cst.Attribute)) else None
            if name is not None:
                out.setdefault(name, []).append(loop)
        return out

    @cached_property
    def _loops_over_displays(self) -> list[cst.For]:
        """Loops over a list or tuple display, or over a `.items()` / `.values()` call: where a
        loop may bind a name to each of several values."""
        return [loop for loop in self.index.nodes(cst.For) if _display_rows(loop.iter) is not None or (
            isinstance(loop.iter, cst.Call) and isinstance(loop.iter.func, cst.Attribute)
            and loop.iter.func.attr.value in ("items", "values") and not loop.iter.args)]

    def _container_of(self, value: cst.BaseExpression) -> tuple[cst.BaseExpression, object] | None:
        """(container, key) when value is written as an element of a dict, list or tuple display
        (key: its literal key or position) or as the element of a comprehension (key UNKNOWN: any),
        as in `loaders = {"train": DataLoader(...), "val": DataLoader(...)}` or `dataloaders = {x:
        DataLoader(datasets[x]) for x in ["train", "val"]}`."""
        parent = self.index.parent.get(value)
        if isinstance(parent, (cst.DictElement, cst.Element)) and parent.value is value:
            container = self.index.parent.get(parent)
            return container, next(key for item, key in _display_items(container) if item is value)
        if isinstance(parent, cst.DictComp) and parent.value is value or \
                isinstance(parent, cst.ListComp) and parent.elt is value:
            return parent, UNKNOWN
        return None

    def _loops_named(self, path: ValuePath, kind: type = cst.For) -> list:
        """The `for` loops (or comprehension clauses, kind CompFor) whose iterable mentions path's
        name where it reads what it holds in its function; for an element of a container, an item
        of it at the element's key (`dataloaders[phase]`, `loaders["train"]`; not `for phase in
        loaders`)."""
        # A loop over a display goes over the values written in it, not over their batches:
        # `for phase, loader in [("train", train_loader), ...]` binds loader (_unpacked_by_loops).
        return [loop for loop in self.index.nodes(kind) if self.in_sight(loop, path.name, path.scope)
                and _display_rows(loop.iter) is None
                and any(self._names(n, path) for n in self.index.walk(loop.iter))]

    def comprehensions_over(self, value: cst.BaseExpression, shared: bool = False) -> list[cst.CompFor]:
        """The comprehension clauses that go over value as loops_over finds it (`[model(x) for x, y
        in self.val_loader]`): a whole pass over the loader, like a loop. With shared, also those
        on the paths other values take too (a function's `sum(... for x, y in dl)` that the loader
        is handed to, inside a dict, on some of its calls)."""
        out: list = []
        for path in self.paths_of(value):
            if path.always or shared:
                out += [clause for clause in self._loops_named(path, cst.CompFor) if clause not in out]
        return out

    def passes_over(self, value: cst.BaseExpression) -> list[tuple[cst.CSTNode, cst.CSTNode]]:
        """(pass, anchor) for each place that starts a pass over value: a loop or comprehension
        over it (as loops_over and shared_loops find them) or `iter(it)` of a name it is known by
        (`next(iter(loader))`); anchor is where the pass is run from in the value's own scope: the
        outermost call handing it down (a function several values go through runs the pass for
        this one on those calls only), else the pass itself."""
        out: list = []
        every = self.loops_over(value)
        for node in [*every, *self.comprehensions_over(value), *self.yields_over(value)]:
            out.append((node, node))
        iters = [c for c in self.index.nodes(cst.Call) if dotted(c.func) == "iter" and c.args and not c.args[0].star]
        for path in self.paths_of(value):
            anchor = path.calls[0] if path.calls else None
            found = [] if path.always else [loop for loop in self._loops_named(path) if loop not in every]
            found += [c for c in iters if self.in_sight(c, path.name, path.scope) and self._names(c.args[0].value, path)]
            out += [(node, anchor or node) for node in found if all(node is not seen for seen, _ in out)]
        return out

    def handed_out(self, value: cst.BaseExpression) -> list[cst.Call]:
        """Calls of functions this module does not define (`from utils import evaluate`, a
        method) handed value by a name it is known by, where that name is in sight: what they do
        with it is not seen (they may go over it). Builtins that only look at it (`len(loader)`,
        `print`, `isinstance`) do not count."""
        out = []
        for path in self.paths_of(value):
            for call in self.calls_handing(path.name):
                if call not in out and self.local_callee_name(call) is None \
                        and self.names.qualified(call.func) not in LOOKS_ONLY \
                        and any(self._names(arg.value, path) for arg in call.args if not arg.star) \
                        and self.in_sight(call, path.name, path.scope):
                    out.append(call)
        return out

    def calls_handing(self, name: str) -> list[cst.Call]:
        """The calls with an argument spelled `name` (or an item of it: `loaders["train"]`)."""
        return self._calls_by_argument.get(name, [])

    @cached_property
    def _calls_by_argument(self) -> dict[str, list[cst.Call]]:
        calls: dict[str, list[cst.Call]] = {}
        for call in self.index.nodes(cst.Call):
            for arg in call.args:
                spelled = dotted(arg.value.value if isinstance(arg.value, cst.Subscript) else arg.value)
                if spelled and call not in calls.get(spelled, ()):
                    calls.setdefault(spelled, []).append(call)
        return calls

    def runs_inside(self, node: cst.CSTNode, loop: cst.CSTNode) -> bool:
        """node runs while loop's body runs: it is in the body, or in a module-local function
        called from there (as loops_around follows calls)."""
        return self.index.contains(loop.body, node) or loop in self.loops_around(node)

    def _names(self, node: cst.CSTNode, path: ValuePath) -> bool:
        """node spells path's value: its name, or an item of its container at its key. An item
        picked by a name a loop over literal keys binds (`loaders[phase]` in `for phase in
        ["train", "val"]`) is that key's value on its own iterations only: a path given that name."""
        if not path.element:
            return isinstance(node, (cst.Name, cst.Attribute)) and dotted(node) == path.name
        if not isinstance(node, cst.Subscript) or dotted(node.value) != path.name:
            return False
        index = node.slice[0].slice if len(node.slice) == 1 else None
        key = literal(index.value) if isinstance(index, cst.Index) else UNKNOWN
        if path.key is not UNKNOWN and key is UNKNOWN and isinstance(index.value, cst.Name) \
                and self._key_loop(node, index.value.value) is not None:
            return any(name == index.value.value for name, _fn, _value in path.given)
        return key is UNKNOWN or path.key is UNKNOWN or key == path.key

    def _key_loop(self, node: cst.CSTNode, name: str) -> cst.For | None:
        """The loop around node that binds name to each literal of a display (`for phase in
        ["train", "val"]`)."""
        for anc in self.index.ancestors(node):
            if isinstance(anc, cst.For) and dotted(anc.target) == name:
                if isinstance(anc.iter, (cst.List, cst.Tuple)) and all(
                        literal(e.value) is not UNKNOWN for e in anc.iter.elements):
                    return anc
                return None
        return None

    def _parameter_of(self, value: cst.BaseExpression) -> tuple[list[str], cst.FunctionDef, tuple] | None:
        """([parameter], function, (call,)) when value is written as an argument of the one call of a
        module-local function (`train(model, DataLoader(ds), opt)`)."""
        arg = self.index.parent.get(value)
        call = self.index.parent.get(arg)
        if not isinstance(arg, cst.Arg) or arg.value is not value or not isinstance(call, cst.Call):
            return None
        name = self.local_callee_name(call)
        if name is None or len(self.calls_by_name.get(name, ())) != 1:
            return None
        return next(([[param], self.functions[name][0], (call,)] for param, bound in self.bind_params(name, call)
                     if bound is arg), None)

    def _returning_calls(self, value: cst.BaseExpression) -> list[cst.Call]:
        """The calls (outside it) of the module-local function that returns value alone."""
        fn = self.index.enclosing_function(value)
        if fn is None or self._returned_at(fn, value) != -1:
            return []
        return [c for c in self.calls_of(fn) if not self.index.contains(fn, c)]

    def returned_to(self, value: cst.BaseExpression, *, escaping: bool = False,
                    depth: int = 0) -> list[tuple[str, cst.FunctionDef | None]]:
        """(name, its function) for each place a module-local function's result that is value is
        bound by a call of it: value returned alone, or at one position of a returned tuple
        (`return train, val` binds `train_loader, val_loader = make_loaders(cfg)` by position), as
        itself or under the one name it is assigned in that function: the loaders a
        `build_loaders()` helper returns to the training function; and on, up to CALL_DEPTH call
        levels, where a caller returns the name it binds (`train_loader = make_loader()`, `return
        train_loader, None` in a `setup()` that `main` calls). Not a call on which
        value is not made: its `if` conditions are false for the call's arguments (the evaluation
        loader under `else:` of `if not evaluate:`, for `load(path)` that leaves `evaluate=False`).
        [] when a caller hands a bound name on where loops_over_names does not follow it (to
        another module's function, an attribute, a return): the loops seen would not be all of
        them; with escaping, the names all the same (where it is handed on is what the caller asks)."""
        fn = self.index.enclosing_function(value)
        callers = [] if fn is None else [c for c in self.calls_of(fn) if not self.index.contains(fn, c)
                                         and self._reached_on(value, fn, ValuePath("", fn, (c,), False)) is not False]
        position = self._returned_at(fn, value) if callers else None
        if position is None:
            return []
        out = []
        for call in callers:
            assign = self.index.parent.get(call)
            if not isinstance(assign, cst.Assign) or assign.value is not call or len(assign.targets) != 1:
                continue
            target = assign.targets[0].target
            if position >= 0:
                if not isinstance(target, (cst.Tuple, cst.List)) or len(target.elements) <= position:
                    continue
                target = target.elements[position].value
            name = dotted(target)
            if name is None:
                continue
            caller = self.index.enclosing_function(call)
            if caller is not None and depth + 1 < CALL_DEPTH and self._returned_at(caller, call) is not None:
                # Returned on to the caller's callers: the names they bind, as for this call.
                further = self.returned_to(call, escaping=escaping, depth=depth + 1)
                if not escaping and (not further or self.escapes(name, caller, returns=False)):
                    return []
                out += [(name, caller)] + [known for known in further if known not in out]
                continue
            if not escaping and self.escapes(name, caller):
                return []
            out.append((name, caller))
        return out

    def escapes(self, name: str, scope: cst.FunctionDef | None, *, returns: bool = True, shared: bool = False,
                making: cst.CSTNode | None = None) -> bool:
        """The name's value leaves scope's sight (every method's, for `self.x`): an argument of a
        call other than a loader wrapper (`iter`, `tqdm`, `accelerator.prepare`...), `len`, `next`
        in a loop (the batches it draws, as next_draws gives them) or a module-local function the
        loops follow it into (with shared, any module-local function's parameter: the caller
        asking checks there too, as paths_of gives them), assigned to another target, or (unless
        returns is False: the caller asking follows the returns itself) returned; also through
        the nn.Module methods that hand back the module itself (`return model.to(device)`,
        `other = model.cuda()`; `model = model.cuda()` keeps it in the name), and as an element of
        a tuple, list, set or dict display that goes any of those ways (`return model, opt`,
        `state = {"model": model}`, `self.parts = [model]`; as _display_leaves says). Uses inside
        making, the call that makes the value, are the name's earlier value (`model =
        nn.DataParallel(model)`), not this one."""
        for node in self.index.nodes(cst.Name):
            if node.value != name.split(".", 1)[0] or making is not None and self.index.contains(making, node):
                continue
            if not name.startswith("self.") and self.index.enclosing_function(node) is not scope:
                continue  # `self.x` is read in every method
            use = self.index.parent.get(node)
            if isinstance(use, cst.Attribute) and use.value is node and dotted(use) == name:
                node, use = use, self.index.parent.get(use)
            # `model.to(device)`, `model.cuda().train()`: the module itself, handed back (returned,
            # assigned, handed on) as the name is; re-bound to its own name it stays in sight.
            itself = _through_self_methods(self.index, node)
            if itself is not node:
                node, use = itself, self.index.parent.get(itself)
                if isinstance(use, cst.Assign) and use.value is node \
                        and all(dotted(t.target) == name for t in use.targets):
                    continue
            elif isinstance(use, cst.Attribute) and use.value is node:
                continue
            display, element = _outermost_display(self.index, node)
            if display is not node:  # `return model, opt`, `state = {"model": model}`
                if self._display_leaves(display, element, node, name, returns, shared):
                    return True
                continue
            if isinstance(use, (cst.Return, cst.Yield)) and returns or (isinstance(use, cst.Assign) and use.value is node):
                return True
            if isinstance(use, cst.Arg) and use.value is node and not self._consumes(self.index.parent.get(use), use, name, shared):
                return True
        return False

    def _display_leaves(self, display: cst.BaseExpression, element: cst.CSTNode | None, node: cst.BaseExpression,
                        name: str, returns: bool, shared: bool) -> bool:
        """A display holding name's value (node, its element in it when it holds it directly:
        `(model, opt)`, `{"model": model}`, at any depth) takes it out of sight (as escapes says)
        where the display goes: returned or yielded (with returns False, not as an element of a
        returned tuple, which the caller asking follows as _returned_at reads it), assigned to a
        target other than the name (`state = (model, opt)`; not `model, opt = model.cuda(), opt`,
        which unpacks each value back to its own name), handed to a call, or gone over by a loop
        (`for dl in (train_dl, val_dl)`: the loop's target holds it); with shared, not where
        paths_of follows the value on (_display_followed): the caller asking checks there too.
        Read where it stands (`(model,)[0]`, `model in (a, b)`), it stays."""
        use = self.index.parent.get(display)
        position = _tuple_position(display, element)
        if isinstance(use, (cst.Return, cst.Yield)):
            return returns or position is None
        if shared and self._display_followed(display, element, node, name):
            return False
        if isinstance(use, cst.Assign) and use.value is display:
            target = use.targets[0].target
            if len(use.targets) == 1 and position is not None and isinstance(target, (cst.Tuple, cst.List)) \
                    and len(target.elements) == len(display.elements) \
                    and not any(isinstance(e, cst.StarredElement) for e in target.elements):
                return dotted(target.elements[position].value) != name
            return True
        return isinstance(use, (cst.AnnAssign, cst.AugAssign, cst.Arg)) and use.value is display \
            or isinstance(use, (cst.For, cst.CompFor)) and use.iter is display \
            or isinstance(use, cst.From) and isinstance(self.index.parent.get(use), cst.Yield)  # `yield from [model]`

    def _display_followed(self, display: cst.BaseExpression, element: cst.CSTNode | None, node: cst.BaseExpression,
                          name: str) -> bool:
        """paths_of follows the name's value (node) on through display (as _reach does): an item of
        a dict, list or tuple display assigned to one name (`loaders = {"train": loader}`,
        _held_in_displays) or handed to a module-local function (`evaluate({"train": loader})`,
        _handed_in_display), or a value a `for` loop over a display binds (`for phase, dl in
        [("train", loader), ...]`, also through `zip`: _unpacked_by_loops)."""
        use = self.index.parent.get(display)
        item = dotted(node) == name and isinstance(element, (cst.Element, cst.DictElement)) \
            and isinstance(display, (cst.Dict, cst.List, cst.Tuple))
        if isinstance(use, cst.Assign):
            return item and len(use.targets) == 1 and dotted(use.targets[0].target) is not None
        loop = use
        if isinstance(use, cst.Arg):
            call = self.index.parent.get(use)
            if not use.star and item and any(a is use for _callee, c, _param, a in self.call_arguments if c is call):
                return True
            loop, display = self.index.parent.get(call), call  # `zip(["train", "val"], [train_dl, val_dl])`
        return isinstance(loop, cst.For) and loop.iter is display \
            and any(value is node for row in _display_rows(display) or () for value in row)

    def _consumes(self, call: cst.Call, arg: cst.Arg, name: str, shared: bool) -> bool:
        """call takes name's value in arg without it leaving sight (as escapes says)."""
        callee = (dotted(call.func) or "").rsplit(".", 1)[-1]
        if callee == "len" or _LOADER_WRAPPER.match(callee) or self.follows(call, arg, name):
            return True
        if callee == "next":
            return self.innermost_loop(call) is not None
        return shared and any(a is arg for _callee, c, _param, a in self.call_arguments if c is call)

    def _returned_at(self, fn: cst.FunctionDef, value: cst.BaseExpression) -> int | None:
        """Where fn returns value: -1 alone, i at position i of a returned tuple, None if it does not
        (nor at a known position: `return *rest, model`);
        returned through the nn.Module methods that hand back the module (`return model.cuda()`) too."""
        holder = self.index.parent.get(value)
        names = set()
        if isinstance(holder, cst.Assign) and len(holder.targets) == 1 and isinstance(holder.targets[0].target, cst.Name):
            names.add(holder.targets[0].target.value)
        for node in self.index.returns(fn):
            if node.value is None:
                continue
            returned = _past_self_methods(node.value)  # `return model.cuda()` returns the module
            if returned is value or dotted(returned) in names:
                return -1
            for element in returned.elements if isinstance(returned, cst.Tuple) else ():
                item = _past_self_methods(element.value)
                if item is value or dotted(item) in names:
                    return _tuple_position(returned, element)
        return None

    def loops_over_names(self, names: list[str], scope: cst.FunctionDef | None) -> list[cst.For]:
        """`for` loops that iterate one of names of function scope (None: the module), or what they
        are re-bound to there (`dl = accelerator.prepare(dl)`): loops where the names are in
        sight (`in_sight`), and loops of module-local functions they are handed to
        (`train(model, train_loader)`, up to three calls down) over the parameter that takes them,
        when every call of that function passes the same name there. A function that several
        loaders go through (`run_epoch(train_loader)`, `run_epoch(val_loader)`) is not followed: its
        loop is each loader's on some calls only (`shared_loops`)."""
        reached: list = []
        self._reach(names, scope, 0, reached)
        out: list = []
        for path in reached:
            if path.always:
                out += [loop for loop in self._loops_named(path) if loop not in out]
        return out

    def in_sight(self, node: cst.CSTNode, name: str, scope: cst.FunctionDef | None) -> bool:
        """At node, name reads what it holds in function scope: node is in scope, or name is
        `self.x` (read in every method), or scope's variable read in a function nested in it (the
        module's: pytorch-cifar's `def train(epoch): for ... in trainloader`; a function's: a
        closure `def train_epoch(): for ... in loader` inside `main`) that binds no variable of that
        name itself, nor does any function between them."""
        fn = self.index.enclosing_function(node)
        if fn is scope or name.startswith("self."):
            return True
        if scope is not None and not self.index.contains(scope, node):
            return False
        base = name.split(".", 1)[0]
        for anc in self.index.ancestors(node):
            if anc is scope:
                break
            if isinstance(anc, (cst.FunctionDef, cst.Lambda)) and self.variables.binds(anc, base):
                return False
        return True

    def _handed_to(self, names: list[str], scope: cst.FunctionDef | None) -> list[tuple]:
        """(function, parameter, call, only) for each module-local function that a call in sight of
        scope hands one of names to; only: every call of that function passes that same name
        there (one such call stands for all of them)."""
        out: list = []
        seen: set = set()
        for callee, call, param, arg in self.call_arguments:
            name = dotted(arg.value)
            if callee is scope or arg.star or name not in names or not self.in_sight(call, name, scope):
                continue
            only = self._takes_only(callee, param, name)
            key = (callee, param) if only else (callee, param, call)
            if key not in seen:
                seen.add(key)
                out.append((callee, param, call, only))
        return out

    def _held_in_displays(self, names: list[str], scope: cst.FunctionDef | None) -> list[tuple]:
        """(name, key) for each assignment in scope of a dict, list or tuple display holding one of
        names as an item (at its literal key or position): `loaders = {"train": train_loader}`."""
        return [(target, key) for target, display in self._display_assignments.get(scope, ())
                for item, key in _display_items(display) if dotted(item) in names]

    @cached_property
    def _display_assignments(self) -> dict:
        """function (None: the module) -> (target, display) for each `name = {...}` / `[...]` /
        `(...)` there; asked on every path a value takes, found once."""
        out: dict = {}
        for assign in self.index.nodes(cst.Assign):
            target = dotted(assign.targets[0].target) if len(assign.targets) == 1 else None
            if target is not None and isinstance(assign.value, (cst.Dict, cst.List, cst.Tuple)):
                out.setdefault(self.index.enclosing_function(assign), []).append((target, assign.value))
        return out

    def _handed_in_display(self, names: list[str], scope: cst.FunctionDef | None) -> list[tuple]:
        """(function, parameter, call, key) for each call in sight of scope handing a module-local
        function a dict, list or tuple display with one of names as an item (at key: its literal
        key or position): the function may go over the item (`for ld in loaders.values():`)."""
        out: list = []
        for callee, call, param, arg in self.call_arguments:
            if callee is scope or arg.star or not isinstance(arg.value, (cst.Dict, cst.List, cst.Tuple)):
                continue
            for item, key in _display_items(arg.value):
                name = dotted(item)
                if name in names and self.in_sight(call, name, scope):
                    out.append((callee, param, call, key))
        return out

    def follows(self, call: cst.Call, arg: cst.Arg, name: str) -> bool:
        """`loops_over_names` follows name through this argument into a module-local function, or
        into the attribute of `self` a class's `__init__` keeps it in (_kept_by_constructions)."""
        return any(a is arg and self._takes_only(callee, param, name)
                   for callee, c, param, a in self.call_arguments if c is call) or any(
            value is arg.value and c is call for _attr, _init, kept, handed in self._kept_names if kept == name
            for value, c in handed)

    @cached_property
    def _kept_parameters(self) -> dict[str, list[tuple[cst.FunctionDef, cst.Name, str]]]:
        """Class name -> (its `__init__`, the read of the parameter, `self.<attr>`) for each
        `self.<attr> = <parameter>` in a class's own `__init__` (element by element too:
        `self.model, self.loader = model, loader`; annotated too: `self.loader: DataLoader =
        loader`): the instance keeps what its constructions hand in."""
        out: dict = {}
        for whole, assigned, assign in assignments(self.index):
            init = self.index.enclosing_function(assign)
            if init is None or init.name.value != "__init__":
                continue
            cls = self.index.enclosing_class(assign)
            if cls is None or self.index.parent.get(self.index.parent.get(init)) is not cls:
                continue
            for target, value in assigned_pairs(whole, assigned):
                if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) \
                        and target.value.value == "self" and isinstance(value, cst.Name) \
                        and self.is_plain_parameter(init, value.value):
                    out.setdefault(cls.name.value, []).append((init, value, f"self.{target.attr.value}"))
        return out

    def _kept_as(self, value: cst.BaseExpression) -> list[tuple[str, cst.FunctionDef]]:
        """(`self.<attr>`, `__init__`) when value is written as an argument of the one
        construction of a class of the file that keeps it on self (`Trainer(model,
        DataLoader(ds))` beside `self.loader = loader`), as _parameter_of does for a function."""
        arg = self.index.parent.get(value)
        call = self.index.parent.get(arg)
        if not isinstance(arg, cst.Arg) or arg.value is not value or not isinstance(call, cst.Call) \
                or not isinstance(call.func, cst.Name):
            return []
        return [(attr, init) for init, param, attr in self._kept_parameters.get(call.func.value, ())
                if [given for given, _call in self.init_arguments(param, param) or ()] == [value]]

    @cached_property
    def _kept_names(self) -> list[tuple[str, cst.FunctionDef, str, tuple]]:
        """(`self.<attr>`, `__init__`, name, handed) for each parameter a class of the file keeps
        on self (_kept_parameters) that every construction of the class hands one and the same
        name (handed: init_arguments' (argument, construction) pairs). A class constructed with
        different values (two trainers, two loaders) is left out: which instance a method's
        `self.loader` reads is not known."""
        out = []
        for kept in self._kept_parameters.values():
            for init, param, attr in kept:
                handed = self.init_arguments(param, param)
                names = {dotted(value) for value, _call in handed or ()}
                if handed and len(names) == 1 and None not in names:
                    out.append((attr, init, names.pop(), tuple(handed)))
        return out

    def _kept_by_constructions(self, names: list[str], scope: cst.FunctionDef | None) -> list[tuple[str, cst.FunctionDef]]:
        """(`self.<attr>`, `__init__`) for each parameter a class of the file keeps on self that
        every construction hands one of names, in sight of scope (the same variable):
        `Trainer(model, dl)` beside `self.loader = loader` (_kept_names)."""
        out = []
        for attr, init, name, handed in self._kept_names:
            if name in names and all(self.in_sight(call, name, scope) for _value, call in handed) \
                    and (attr, init) not in out:
                out.append((attr, init))
        return out

    def _takes_only(self, callee: cst.FunctionDef, param: str, name: str) -> bool:
        """Every call of callee passes name as its parameter param."""
        for call in self.calls_of(callee):
            bound = dict(self.bind_args(callee, call))
            if param not in bound or dotted(bound[param].value) != name:
                return False
        return True

    def _wrapped_names(self, names: list[str], scope) -> list[tuple[str, cst.FunctionDef | None]]:
        """(name, function) for names of scope and the names their values are re-bound to through
        a call: `dl = accelerator.prepare(dl)`, `it = iter(dl)`, `model, dl = accelerator.prepare(model,
        dl)` (a tuple target takes the argument in the same position), or given as they are
        (`train_dl = loader`), in the same function, or, for
        `self.x` (read in every method), in any (`pbar = tqdm(self.train_loader)`)."""
        out = [(name, scope) for name in names]
        for name, where in out:  # grows as re-bindings are found: `it = iter(tqdm(dl))` in two steps
            scopes = self._rebindings if name.startswith("self.") else {where: self._rebindings.get(where, ())}
            for fn, pairs in scopes.items():
                out += [(new, fn) for new, old in pairs if new and old == name and (new, fn) not in out]
        return out

    @cached_property
    def _rebindings(self) -> dict:
        """function (None: the module) -> (new name, old name) for each re-binding through a loader
        wrapper or a plain alias there, in document order (each loader's loops are asked for by
        every rule)."""
        table: dict = {}
        for assign in self.index.nodes(cst.Assign):
            if isinstance(assign.value, (cst.Name, cst.Attribute)):
                # A plain alias (`train_dl = loader`, `loader = self.train_loader`) is the same
                # loader under another name: its loops and hand-offs are the loader's.
                old = dotted(assign.value)
                if old:
                    table.setdefault(self.index.enclosing_function(assign), []).extend(
                        (dotted(target.target), old) for target in assign.targets
                        if not isinstance(target.target, (cst.Tuple, cst.List)))
                continue
            if not isinstance(assign.value, cst.Call):
                continue
            callee = (dotted(assign.value.func) or "").rsplit(".", 1)[-1]
            zipped = zipped_names(assign.value)
            if zipped:
                # `pbar = tqdm(zip(src, tgt))`, `pairs = zip(src, tgt)`: a loop over the name goes
                # over each loader zipped, as one whose header writes the zip out does.
                for target in assign.targets:
                    if not isinstance(target.target, (cst.Tuple, cst.List)):
                        table.setdefault(self.index.enclosing_function(assign), []).extend(
                            (dotted(target.target), name) for name in zipped)
                continue
            if not _LOADER_WRAPPER.match(callee):
                handed = self._regenerated(assign.value)
                if handed is not None:  # `it = infinite(dl)`: a generator yielding dl's batches
                    for target in assign.targets:
                        table.setdefault(self.index.enclosing_function(assign), []).append((dotted(target.target), handed))
                continue  # `n = len(dl)` is not the loader
            args = [dotted(a.value) for a in assign.value.args if not a.keyword and not a.star]
            for target in assign.targets:
                t = target.target
                if isinstance(t, (cst.Tuple, cst.List)) and len(t.elements) == len(args) and len(args) > 1:
                    pairs = [(dotted(e.value), a) for e, a in zip(t.elements, args)]
                elif len(args) == 1:
                    pairs = [(dotted(t), args[0])]
                else:
                    continue
                table.setdefault(self.index.enclosing_function(assign), []).extend(pairs)
        return table

    def _regenerated(self, call: cst.Call) -> str | None:
        """The dotted name handed to call whose items it yields, when call runs one generator
        function of the module that yields only the items of that parameter (`def infinite(dl):
        while True: yield from dl`, or `for b in dl: yield b`): `it = infinite(loader)` draws
        the loader's batches, as `it = iter(loader)` does."""
        callees = self.callees(call)
        param = self._regenerator_param(callees[0]) if len(callees) == 1 else None
        if param is None:
            return None
        arg = dict(self.bind_args(callees[0], call)).get(param)
        return dotted(arg.value) if arg is not None and not arg.star else None

    def _regenerator_param(self, fn: cst.FunctionDef) -> str | None:
        """The parameter of fn whose items are all fn yields (`yield from dl`, or `yield b` in
        `for b in dl:`), or None (not a generator, or it yields anything else)."""
        params = {p.name.value for p in fn.params.params}
        found = set()
        for node in self.index.walk(fn.body):
            if not isinstance(node, cst.Yield) or self.index.enclosing_function(node) is not fn:
                continue
            if isinstance(node.value, cst.From):
                source = node.value.item
            else:
                loop = self.innermost_loop(node)
                source = loop.iter if isinstance(loop, cst.For) and isinstance(node.value, cst.Name) \
                    and isinstance(loop.target, cst.Name) and loop.target.value == node.value.value else None
            if not isinstance(source, cst.Name) or source.value not in params:
                return None
            found.add(source.value)
        return found.pop() if len(found) == 1 else None

    def yields_over(self, value: cst.BaseExpression) -> list[cst.Yield]:
        """The `yield from` expressions that go over value on every path (a generator of the
        module handed it: `def infinite(dl): while True: yield from dl`): a whole pass over a
        loader, like a loop over it."""
        out: list = []
        for path in self.paths_of(value):
            if path.always and not path.element:
                out += [node for node in self._yields_from if node not in out and self.in_sight(node, path.name, path.scope)
                        and self._names(node.value.item, path)]
        return out

    @cached_property
    def _yields_from(self) -> list[cst.Yield]:
        return [node for node in self.index.nodes(cst.Yield) if isinstance(node.value, cst.From)]

    # -- guards ------------------------------------------------------------------------

    def is_interval_test(self, test: cst.BaseExpression) -> bool:
        cached = self._guard_cache.get(test)
        if cached is not None:
            return cached
        result = first_modulo(test) is not None or any(self._marks_interval(node) for node in self.index.walk(test))
        self._guard_cache[test] = result
        return result

    def _marks_interval(self, node: cst.CSTNode) -> bool:
        """A part of a test that limits it to some steps: an interval flag or name, or a comparison
        of a counter."""
        if isinstance(node, (cst.Name, cst.Attribute)):
            text = dotted(node)
            if text is not None:
                last = text.rsplit(".", 1)[-1]
                return last in self.flag_names or last in self.interval_names or text in self.interval_names \
                    or bool(DEFAULT_INTERVAL_NAMES.match(last))
        if isinstance(node, cst.Comparison):
            if self.is_clock_throttle(node):
                return True
            # `if step == 0` / `if i == len(loader) - 1`: runs once, not per step;
            # `if ni - last_opt_step >= self.accumulate`: once per accumulation window.
            if any(isinstance(t.operator, (cst.Equal, cst.GreaterThanEqual)) for t in node.comparisons):
                sides = [node.left] + [t.comparator for t in node.comparisons]
                return any(isinstance(s, cst.Name) and _COUNTER.search(s.value) for s in sides) or any(
                    _ACCUMULATION.search((dotted(s) or "").rsplit(".", 1)[-1]) for s in sides)
            # `if step in {1, 10, 100}`: a few steps written out, as `step == 0` is one.
            if len(node.comparisons) == 1 and isinstance(node.comparisons[0].operator, cst.In) \
                    and isinstance(node.left, cst.Name) and _COUNTER.search(node.left.value):
                return _few_numbers(node.comparisons[0].comparator)
        return False

    def is_clock_throttle(self, node: cst.CSTNode) -> bool:
        """node is `<clock>() - x > N` (or `>=`, or `N < <clock>() - x`) in the test of an `if` whose
        body sets x again from the same clock (`tic = time.time()`): the body runs once per N
        seconds, whatever x is called (`tic`, `t0`, `last`). Only names like `last_log` were taken
        for an interval, so `if time.time() - tic > 30: print(f"{loss:.4f}"); tic = time.time()`
        was reported as logging on every step and got `if step % 100 == 0:` nested inside it. Without
        the reset the test holds on every step once N seconds have passed: no interval."""
        if not isinstance(node, cst.Comparison) or len(node.comparisons) != 1:
            return False
        operator = node.comparisons[0].operator
        if isinstance(operator, (cst.GreaterThan, cst.GreaterThanEqual)):
            elapsed = node.left
        elif isinstance(operator, (cst.LessThan, cst.LessThanEqual)):
            elapsed = node.comparisons[0].comparator
        else:
            return False
        if not (isinstance(elapsed, cst.BinaryOperation) and isinstance(elapsed.operator, cst.Subtract)
                and isinstance(elapsed.left, cst.Call) and not elapsed.left.args):
            return False
        clock = self.names.qualified(elapsed.left.func)
        since = dotted(elapsed.right)
        if clock not in CLOCKS or since is None:
            return False
        branch = next((anc for anc in self.index.ancestors(node) if isinstance(anc, cst.BaseStatement)), None)
        if not isinstance(branch, cst.If) or not self.index.contains(branch.test, node):
            return False
        return any(isinstance(assign, cst.Assign) and isinstance(assign.value, cst.Call)
                   and self.names.qualified(assign.value.func) == clock
                   and any(dotted(target.target) == since for target in assign.targets)
                   for assign in self.index.walk(branch.body)
                   if self.index.enclosing_function(assign) is self.index.enclosing_function(branch))

    def limits_body(self, test: cst.BaseExpression) -> bool:
        """The body of `if test:` runs on some steps only: an interval test (is_interval_test), but
        not a remainder test that holds on all steps but one in N (`if step % n:`, `if step % n !=
        0:`, `if (step + 1) % n > 0:`), whose `else:` is the limited branch (else_interval). `a and
        b` limits when either side does; `a or b` not when a side is such a remainder test."""
        if isinstance(test, cst.BooleanOperation):
            left, right = self.limits_body(test.left), self.limits_body(test.right)
            if isinstance(test.operator, cst.And):
                return left or right
            if any((r := _remainder_test(side)) is not None and not r[0] for side in (test.left, test.right)):
                return False
            return left or right
        remainder = _remainder_test(test)
        if remainder is not None:
            return remainder[0]
        return self.is_interval_test(test)

    def case_test(self, case: cst.MatchCase) -> cst.BaseExpression | None:
        """The test under which a `case` body runs, as an `if` would write it (_pattern_test, with
        the case's own `if` guard joined by `and`): `match step % log_every:` / `case 0:` is the
        interval test `step % log_every == 0`. None for a case that matches anything. Made once per
        case, so that the guard caches (keyed by node) see the same test each time."""
        if case not in self._case_tests:
            match = self.index.parent.get(case)
            test = _pattern_test(match.subject, case.pattern) if isinstance(match, cst.Match) else None
            if case.guard is not None:
                test = case.guard if test is None else cst.BooleanOperation(left=test, operator=cst.And(),
                                                                           right=case.guard)
            self._case_tests[case] = test
        return self._case_tests[case]

    def _limits_case(self, anc: cst.CSTNode, child: cst.CSTNode) -> bool:
        """child is the body of a `case` whose test limits it to some steps (case_test, limits_body)."""
        return isinstance(anc, cst.MatchCase) and child is anc.body and (test := self.case_test(anc)) is not None \
            and self.limits_body(test)

    def remainder_guard(self, node: cst.CSTNode) -> cst.If | None:
        """The `if` around node, up to its hot loop or function, whose body holds node under a
        remainder test that holds on all steps but one in N (`if step % n != 0:`), or an `if step
        % n == 0: continue` before it in a block around it. Code there runs
        on most steps, but an interval put around it (`if step % 100 == 0:`) could hold on no step
        at all: a fix that guards it must not."""
        child = node
        for anc in self.index.ancestors(node):
            if isinstance(anc, _FUNC_BOUNDARY):
                return None
            if isinstance(anc, cst.If) and child is anc.body and (r := _remainder_test(anc.test)) is not None \
                    and not r[0]:
                return anc
            if isinstance(anc, cst.IndentedBlock) and child in anc.body:
                # After `if step % n == 0: continue` the block runs on the other steps only.
                for before in anc.body[:anc.body.index(child)]:
                    if isinstance(before, cst.If) and before.orelse is None \
                            and (r := _remainder_test(before.test)) is not None and r[0] \
                            and isinstance(last_statement(before.body), (cst.Continue, cst.Return)):
                        return before
            if anc in self.hot_loops:
                return None
            child = anc
        return None

    def is_periodic(self, test: cst.BaseExpression) -> bool:
        """An interval test that recurs (a modulo, a flag), not a one-off `step == n` comparison."""
        if first_modulo(test) is not None or any(self.is_clock_throttle(node) for node in walk(test)):
            return True
        # A flag such as `should_save` / `accelerator.sync_gradients`, alone or in `and`/`or`/`not`.
        operands = [test]
        while operands:
            node = operands.pop()
            if isinstance(node, cst.BooleanOperation):
                operands += [node.left, node.right]
            elif isinstance(node, cst.UnaryOperation):
                operands.append(node.expression)
            elif isinstance(node, (cst.Name, cst.Attribute)):
                return True
        return False

    def else_interval(self, test: cst.BaseExpression) -> str | None:
        """For a test whose `else:` runs every N steps (`step % n`, `step % n != 0`, `not should_log`):
        the condition that `else:` runs under, as code (`step % n == 0`); None for any other test
        (`if step % n == 0: ... else:` runs on most steps)."""
        remainder = _remainder_test(test)
        if remainder is not None:
            return None if remainder[0] else remainder[1]
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            inner = test.expression  # a flag (`not should_log`)
            if self.is_interval_test(inner) and self.is_periodic(inner) and isinstance(inner, (cst.Name, cst.Attribute)):
                return self.index.module.code_for_node(inner)
        return None

    # -- per step ----------------------------------------------------------------------

    def hot_loop_of(self, node: cst.CSTNode) -> cst.CSTNode | None:
        """The hot loop that node is directly in (same function), ignoring guards."""
        child = node
        for anc in self.index.ancestors(node):
            if isinstance(anc, _FUNC_BOUNDARY):
                return None
            if isinstance(anc, Loop) and child is anc.body and anc in self.hot_loops:
                return anc
            child = anc
        return None

    def _early_exits(self, block) -> tuple[list[int], list[int]]:
        """Positions in a block of interval guards that leave early: `if not should_log: return`,
        `if step % n != 0: continue`, `if step % n == 0: ... else: continue`; the statements after
        them run only on some steps. In two
        lists: the guards after which the block steps the optimizer (`if (i + 1) % accum != 0:
        continue` before `opt.step()`: what follows runs once per optimizer step), and the others."""
        cached = self._exit_cache.get(block)
        if cached is None:
            cached = ([], [])
            for i, stmt in enumerate(block.body):
                if isinstance(stmt, cst.If) and stmt.orelse is None and self._skips_first_steps(stmt) \
                        and isinstance(last_statement(stmt.body), (cst.Return, cst.Continue)) \
                        and not self._steps_optimizer(stmt, block.body[i + 1:]):
                    # `if step != 0: continue`, `if i > 0: continue`, `if not first: continue`:
                    # what follows runs on the first step (or a few) only. One after which the
                    # optimizer steps is taken for an accumulation window's count, as before.
                    cached[1].append(i)
                elif isinstance(stmt, cst.If) and stmt.orelse is None and self.is_interval_test(stmt.test):
                    remainder = _remainder_test(stmt.test)
                    if (remainder is not None and remainder[0]) or _few_steps(stmt.test):
                        # `if step % n == 0: continue` leaves on one step in N, `if step == 0:
                        # continue` on one step only (`step >= max_steps` past a bound): what
                        # follows runs on the others, most steps.
                        continue
                    last = last_statement(stmt.body)
                    if isinstance(last, (cst.Return, cst.Continue)):
                        steps = isinstance(last, cst.Continue) and self._steps_optimizer(stmt, block.body[i + 1:])
                        cached[0 if steps else 1].append(i)
                elif isinstance(stmt, cst.If) and isinstance(stmt.orelse, cst.Else) and self.limits_body(stmt.test) \
                        and isinstance(last_statement(stmt.orelse.body), (cst.Return, cst.Continue)):
                    # `if (i + 1) % accum == 0: opt.step() ... else: continue`: what follows runs
                    # with the body, on the steps the test holds.
                    steps = isinstance(last_statement(stmt.orelse.body), cst.Continue) and (
                        self._steps_optimizer(stmt, [stmt.body]) or self._steps_optimizer(stmt, block.body[i + 1:]))
                    cached[0 if steps else 1].append(i)
            self._exit_cache[block] = cached
        return cached

    def _skips_first_steps(self, branch: cst.If) -> bool:
        """branch's test holds on every step of its loop but one or a few (_past_first_steps),
        also a bare loop index (`if step:`, false at 0 only: the enumerate or range counter of the
        loop, not any name with `step` in it); `a or b` when either side does, `a and b` when both."""
        loop = self.innermost_loop(branch)
        counters = {enumerate_counter(loop), range_counter(loop)} - {None} if loop is not None else set()

        def past(test: cst.BaseExpression) -> bool:
            if isinstance(test, cst.BooleanOperation):
                left, right = past(test.left), past(test.right)
                return (left or right) if isinstance(test.operator, cst.Or) else (left and right)
            return _past_first_steps(test) or (isinstance(test, cst.Name) and test.value in counters)

        return past(branch.test)

    def _steps_optimizer(self, at: cst.CSTNode, statements) -> bool:
        """An optimizer step of the hot loop that `at` is in, among `statements`: `opt.step()`,
        `scaler.step(opt)`, or a call of a module-local function that steps one."""
        loop = self.innermost_loop(at)
        return loop is not None and loop in self.hot_loops and any(
            self.innermost_loop(call) is loop and any(self.index.contains(stmt, call) for stmt in statements)
            for call in self.optimizer_step_sites)

    @cached_property
    def optimizer_step_sites(self) -> list[cst.Call]:
        """Optimizer steps: `opt.step()`, and calls of a module-local function or method that
        steps without running a backward of its own (ultralytics' `self.optimizer_step()`)."""
        return self._sites(optimizer=True)

    @cached_property
    def backward_sites(self) -> list[cst.Call]:
        """Backwards: `loss.backward()`, and calls of a module-local function or method that runs
        one without stepping the optimizer (a per-micro-batch `train_micro_step(model, batch)`)."""
        return self._sites(optimizer=False)

    def backward_inside(self, call: cst.Call) -> cst.Call | None:
        """For a backward site that calls a module-local function (one of backward_sites'
        helpers), the backward that function runs; None for a backward itself."""
        if call in self.step_calls:
            return None
        callees = self.callees(call)
        return next((c for c in self.step_calls if self.index.enclosing_function(c) in callees), None)

    def _sites(self, optimizer: bool) -> list[cst.Call]:
        """The step calls of one kind (optimizer steps, or backwards), then the calls of the
        functions whose own step calls are all of that kind."""
        direct = [c for c in self.step_calls if is_optimizer_step(c) == optimizer]
        out = list(direct)
        stepping = [f for f in self.index.nodes(cst.FunctionDef) if f in self.stepping_functions]
        for fn in sorted(stepping, key=lambda f: f.name.value):
            calls = [c for c in self.step_calls if self.index.enclosing_function(c) is fn]
            if calls and all(is_optimizer_step(c) == optimizer for c in calls):
                out += [c for c in self.calls_of(fn) if c not in out]
        return out

    def is_step_boundary(self, branch: cst.If) -> bool:
        """The interval guard of gradient accumulation: `if (i + 1) % accum == 0:` around the
        optimizer step, or accelerate's `if accelerator.sync_gradients:` (true exactly when the
        optimizer steps inside `accelerator.accumulate`). Its body runs once per optimizer step,
        which is every training step."""
        cached = self._boundary_cache.get(branch)
        if cached is None:
            flag = dotted(branch.test) if isinstance(branch.test, (cst.Name, cst.Attribute)) else None
            cached = self.limits_body(branch.test) and (
                self._steps_optimizer(branch, [branch.body]) or (flag or "").rsplit(".", 1)[-1] == "sync_gradients")
            self._boundary_cache[branch] = cached
        return cached

    def step_region(self, node: cst.CSTNode) -> list | None:
        """The statements that run once per optimizer step of gradient accumulation and hold node
        (the body of `if (i + 1) % accum == 0:` that steps the optimizer, or the rest of the loop
        body after `if (i + 1) % accum != 0: continue`, or after `if (i + 1) % accum == 0: ...
        else: continue` with that `if`'s body); None when node is not in such code."""
        child = node
        for anc in self.index.ancestors(node):
            if isinstance(anc, _FUNC_BOUNDARY):
                return None
            if isinstance(anc, cst.If) and child is anc.body and self.is_step_boundary(anc):
                return list(anc.body.body)
            if isinstance(anc, cst.IndentedBlock):
                steps, _others = self._early_exits(anc)
                position = _position(anc.body, child)
                if steps and steps[0] < position:
                    guard = anc.body[steps[0]]
                    # `if (i + 1) % accum == 0: opt.step() ... else: continue`: the body too
                    head = list(guard.body.body) if guard.orelse is not None else []
                    return head + list(anc.body[steps[0] + 1:])
            if isinstance(anc, Loop) and child is anc.body and anc in self.hot_loops:
                return None
            child = anc
        return None

    def is_per_step(self, node: cst.CSTNode, *, optimizer_steps: bool = False) -> bool:
        """node runs on every iteration of a hot loop. With `optimizer_steps`, code that runs once
        per optimizer step of gradient accumulation counts too (is_step_boundary): a host sync
        there stalls every training step, while the accumulation analysis asks about iterations."""
        child = node
        for anc in self.index.ancestors(node):
            if isinstance(anc, cst.If) and child is anc.body and (self._ends_loop(anc) or (
                    self.limits_body(anc.test) and not (optimizer_steps and self.is_step_boundary(anc)))):
                return False
            # `if step % n: ... else: log()` / `if (i + 1) % accum != 0: ... else: opt.step()`: the else
            # (or elif) runs every n steps.
            if isinstance(anc, cst.If) and child is anc.orelse and self.else_interval(anc.test) is not None \
                    and not (optimizer_steps and self._steps_optimizer(anc, [anc.orelse])):
                return False
            # The same interval written as an expression: `print(loss) if step % n == 0 else None`,
            # `step % n == 0 and print(loss)`.
            if isinstance(anc, cst.IfExp) and child is anc.body and self.limits_body(anc.test):
                return False
            # ... or as a `match`: `match step % n:` / `case 0:`.
            if self._limits_case(anc, child):
                return False
            if isinstance(anc, cst.BooleanOperation) and isinstance(anc.operator, cst.And) and child is anc.right \
                    and self.limits_body(anc.left):
                return False
            if isinstance(anc, (cst.ExceptHandler, cst.ExceptStarHandler)):
                # Recovery code (`except OutOfMemoryError: torch.cuda.empty_cache()`) runs when a
                # step fails, not on every step (OpenNMT-py, ultralytics).
                return False
            if isinstance(anc, (cst.IndentedBlock, cst.Module)):
                steps, others = self._early_exits(anc)
                exits = others if optimizer_steps else sorted(steps + others)
                if exits and exits[0] < _position(anc.body, child):
                    return False
            if isinstance(anc, Loop) and child is anc.body and anc in self.hot_loops:
                return True
            if isinstance(anc, (cst.Lambda, cst.ClassDef)):
                return False
            if isinstance(anc, cst.FunctionDef):
                return self._function_per_step(anc, optimizer_steps)
            child = anc
        return False

    def interval_in_function(self, node: cst.CSTNode) -> str | None:
        """The interval, as code, that limits node within its own function (`if step % 250 == 0:`
        around it, or `if step % n != 0: return` before it): a helper that checks its own interval
        runs its body on some steps only, whatever its caller does. None when nothing there does,
        or when the limiting branch is the optimizer step of gradient accumulation (once per
        training step)."""
        code = self.index.module.code_for_node
        child = node
        for anc in self.index.ancestors(node):
            if isinstance(anc, _FUNC_BOUNDARY):
                return None
            if isinstance(anc, cst.If) and child is anc.body and self.limits_body(anc.test) \
                    and self.is_periodic(anc.test) and not self.is_step_boundary(anc):
                return " ".join(code(anc.test).split())
            if isinstance(anc, cst.If) and child is anc.orelse and (negated := self.else_interval(anc.test)) \
                    and not self._steps_optimizer(anc, [anc.orelse]):
                return " ".join(negated.split())
            if self._limits_case(anc, child) and self.is_periodic(test := self.case_test(anc)):
                return " ".join(code(test).split())
            if isinstance(anc, (cst.IndentedBlock, cst.Module)):
                _steps, others = self._early_exits(anc)
                # A one-off exit (`if step != 0: return`) names no interval to quote.
                exits = [i for i in others if i < _position(anc.body, child)
                         and not (anc.body[i].orelse is None and self._skips_first_steps(anc.body[i]))]
                if exits:
                    guard = anc.body[exits[0]]
                    if guard.orelse is not None:  # `if step % n == 0: ... else: return`
                        return " ".join(code(guard.test).split())
                    negated = self.else_interval(guard.test)
                    return " ".join((negated or f"not ({code(guard.test)})").split())
            child = anc
        return None

    def once_in_function(self, node: cst.CSTNode) -> bool:
        """node runs on one step or a few only, as its own function decides: under a one-off test
        (`if step == 0:`, `if step == max_steps - 1:`; one that limits the body without recurring,
        as a guard in the loop reads), or after a one-off exit (`if step != 0: return`,
        _skips_first_steps). The counterpart of interval_in_function, which names no such test."""
        child = node
        for anc in self.index.ancestors(node):
            if isinstance(anc, _FUNC_BOUNDARY):
                return False
            if isinstance(anc, cst.If) and child is anc.body and self.limits_body(anc.test) \
                    and not self.is_periodic(anc.test) and not self.is_step_boundary(anc):
                return True
            if isinstance(anc, (cst.IndentedBlock, cst.Module)):
                _steps, others = self._early_exits(anc)
                if any(i < _position(anc.body, child) and anc.body[i].orelse is None
                       and self._skips_first_steps(anc.body[i]) for i in others):
                    return True
            child = anc
        return False

    def _ends_loop(self, branch: cst.If) -> bool:
        """The branch leaves the hot loop for good (`if epoch >= epochs: ...; break`, or a `return`,
        `raise` or `sys.exit()` in the loop's own function): it runs at most once, not on every step."""
        last = last_statement(branch.body)
        if isinstance(last, (cst.Return, cst.Raise)) or (
                isinstance(last, cst.Expr) and isinstance(last.value, cst.Call) and self._exits(last.value)):
            return self.hot_loop_of(branch) is not None
        return isinstance(last, cst.Break) and self.innermost_loop(branch) in self.hot_loops

    def _exits(self, call: cst.Call) -> bool:
        """`sys.exit(1)`, `os._exit(1)`, `exit()`, `quit()`: the process ends (torchvision's
        detection reference stops so on a non-finite loss)."""
        qualified = self.names.qualified(call.func)
        return qualified in ("sys.exit", "os._exit", "builtins.exit", "builtins.quit") or (
            qualified is None and dotted(call.func) in ("exit", "quit"))

    def _function_per_step(self, fn: cst.FunctionDef, optimizer_steps: bool) -> bool:
        key = (fn, optimizer_steps)
        cached = self._per_step_fn.get(key)
        if cached is not None:
            return cached
        self._per_step_fn[key] = False  # recursion guard
        result = self.is_step_hook(fn) or any(self.is_per_step(call, optimizer_steps=optimizer_steps)
                                              for call in (*self.calls_of(fn),
                                                           *self.steps_handed(fn)))
        self._per_step_fn[key] = result
        return result

    def steps_handed(self, fn: cst.FunctionDef) -> list[cst.Call]:
        """The optimizer steps handed fn as their closure (`opt.step(closure)`,
        `opt.step(closure=closure)`), which call it there: in the scope that defines fn (L-BFGS's
        closure, a function nested in the one that trains)."""
        return [call for call in self._closure_steps.get(fn.name.value, ()) if self._names_function(call, fn)]

    def _names_function(self, at: cst.CSTNode, fn: cst.FunctionDef) -> bool:
        """fn's name, read at `at`, is fn: the nearest scope around `at` that defines a function
        of that name (not a method) defines fn."""
        defs = [f for f in self.functions.get(fn.name.value, ())
                if not isinstance(self.index.parent.get(self.index.parent.get(f)), cst.ClassDef)]
        scope = self.index.enclosing_function(at)
        while True:
            here = [f for f in defs if self.index.enclosing_function(f) is scope]
            if here or scope is None:
                return fn in here
            scope = self.index.enclosing_function(scope)

    @cached_property
    def _closure_steps(self) -> dict[str, list[cst.Call]]:
        table: dict[str, list[cst.Call]] = {}
        for call in self.step_calls:
            if is_optimizer_step(call):
                for arg in call.args:
                    if isinstance(arg.value, cst.Name) and not arg.star and (
                            arg.keyword is None or arg.keyword.value == "closure"):
                        table.setdefault(arg.value.value, []).append(call)
        return table

    def is_step_hook(self, fn: cst.FunctionDef) -> bool:
        """A method a training framework calls on every step: a LightningModule's `training_step`
        or a Lightning callback's `on_train_batch_end`, a transformers (or trl) Trainer's
        `compute_loss` or `training_step`, a TrainerCallback's `on_step_end` (_STEP_HOOKS)."""
        return self._framework(fn) is not None

    def step_hook(self, node: cst.CSTNode) -> StepHook | None:
        """The step counter, logging interval and tensor logging call of the framework hook whose
        own body holds node (not a function it calls, nor a hot loop of its own); None outside
        one, or when the hook lacks the parameter they are read from."""
        if self.hot_loop_of(node) is not None:
            return None
        fn = self.index.enclosing_function(node)
        framework = self._framework(fn) if fn is not None else None
        if framework is None or self.file_calls_hook(fn):
            return None
        params = [p.name.value for p in fn.params.params]
        try:
            return StepHook(framework.counter.format(*params), framework.interval.format(*params),
                            framework.log.format(*params) if framework.log else None)
        except IndexError:  # `def on_step_end(self, *args, **kwargs)`
            return None

    def file_calls_hook(self, fn: cst.FunctionDef) -> bool:
        """The file's own code runs the framework hook fn, outside the framework's hooks (`for cb in
        self.callbacks: cb.on_step_end(args, None, None)` in its loop, `self.cb.on_step_end(...)`):
        there the arguments are the file's, not the framework's. A guard on transformers'
        `state.global_step % state.logging_steps` crashed where the loop passed `state=None`; the
        hook is an ordinary method of the file, and its counter is the one the call hands in. A call
        from another hook of the framework (a Trainer's `training_step` calling its own
        `compute_loss`) is still the framework's run."""
        return any(not (caller := self.index.enclosing_function(call)) or self._framework(caller) is None
                   for call in self.calls_of(fn))

    def _framework(self, fn: cst.FunctionDef) -> _Framework | None:
        cls = self.index.parent.get(self.index.parent.get(fn))
        if not isinstance(cls, cst.ClassDef):
            return None
        name = fn.name.value
        for framework in _STEP_HOOKS:
            if name in framework.hooks and self.names.inherits(
                    cls.name.value, lambda qn: qn.split(".", 1)[0] in framework.packages
                    and qn.rsplit(".", 1)[-1].endswith(framework.base)):
                return framework
        return None

    def in_training_step(self, node: cst.CSTNode) -> bool:
        """node takes part in every training step: per step in a hot loop (or a function it calls),
        or in a function that itself runs backward or an optimizer step. An autocast in `evaluate()`
        or `predict()` of the same module does not, even when evaluation runs every N steps from the
        training loop (simpletransformers)."""
        if self.is_per_step(node):
            return True
        fn = self.index.enclosing_function(node)
        return fn is not None and any(self.index.enclosing_function(c) is fn for c in self.step_calls)

    def on_cache_miss(self, node: cst.CSTNode) -> bool:
        """node runs only when a file is missing: the else-arm of `if os.path.exists(cache): load`,
        or the body of `if not os.path.exists(cache)`. Writing a cache there happens once, not every
        N steps (simpletransformers' `torch.save(features, cached_features_file)`)."""
        child = node
        for anc in self.index.ancestors(node):
            if isinstance(anc, _FUNC_BOUNDARY):
                return False
            if isinstance(anc, cst.If):
                negated = isinstance(anc.test, cst.UnaryOperation) and isinstance(anc.test.operator, cst.Not)
                if _tests_existence(self.index, anc.test) and (
                        (child is anc.orelse and not negated) or (child is anc.body and negated)):
                    return True
            child = anc
        return False

    def in_hot_loop(self, node: cst.CSTNode) -> bool:
        """In a hot loop's body (or a function it calls, or a framework's step hook), guarded or not."""
        child = node
        for anc in self.index.ancestors(node):
            if isinstance(anc, Loop) and child is anc.body and anc in self.hot_loops:
                return True
            if isinstance(anc, (cst.Lambda, cst.ClassDef)):
                return False
            if isinstance(anc, cst.FunctionDef):
                return self._function_in_hot_loop(anc)
            child = anc
        return False

    def _function_in_hot_loop(self, fn: cst.FunctionDef) -> bool:
        cached = self._in_hot_fn.get(fn)
        if cached is not None:
            return cached
        self._in_hot_fn[fn] = False  # recursion guard
        result = self.is_step_hook(fn) or any(self.in_hot_loop(call) for call in (
            *self.calls_of(fn), *self.steps_handed(fn)))
        self._in_hot_fn[fn] = result
        return result
