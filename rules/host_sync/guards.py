"""Putting a per-step read under the loop's logging interval, as TL201, TL202 and TL203 fix it:
the loop's step counter and interval test (`if step % log_every == 0:`), an existing `if` to join,
and the statements that must move with the read."""

from __future__ import annotations

import re
from typing import NamedTuple

import libcst as cst

from trainlint.analysis.command_line import option_default, unread_option
from trainlint.analysis.distributed import one_line
from trainlint.analysis.literals import UNKNOWN
from trainlint.analysis.loops import enumerate_counter, range_counter
from trainlint.analysis.names import bound_names, dotted, local_names, module_names
from trainlint.analysis.tree import binding_targets, walk
from trainlint.analysis.tensors import pure_tensor_method
from trainlint.analysis.variables import in_scope_of, is_variable, names_a_value, owner, role, variable_uses
from trainlint.diagnostics import Applicability
from trainlint.rule import Rule

from .logged_values import formatted_tensors, is_log_call, tracker_values
from .syncs import device_tensor, forward_call, host_read, side_effect_free


# Any case: a script's interval is as often a constant (`LOG_EVERY = 50`, `PRINT_FREQ`) as a variable.
_INTERVAL_NAME = re.compile(
    r"^(log_every\w*|log_interval|log_freq\w*|print_freq|print_every|print_interval|logging_steps|log_steps|"
    r"display_every|report_every|log_iter\w*|disp_freq)$",
    re.IGNORECASE,
)

def step_counter(ctx, node: cst.CSTNode) -> str | None:
    """The hot loop's existing step counter: the enumerate index, or a name incremented by 1; in
    a framework's step hook, the framework's (Lightning's `self.global_step`).

    Code that runs once per optimizer step of gradient accumulation (`if (i + 1) % accum == 0:`)
    counts optimizer steps: only a name incremented there will do (`global_step += 1`). The
    loop's index would make `if i % 100 == 0:` inside that branch true on no step at all when
    the accumulation count is even."""
    loop = ctx.loops.hot_loop_of(node)
    if loop is None:
        hook = ctx.loops.step_hook(node)  # the framework's counter (`self.global_step`)
        return hook.counter if hook is not None else _counter_parameter(ctx, node)
    region = ctx.loops.step_region(node)
    if region is not None:
        return _incremented(ctx, region)
    outer = _stepping_outer_loop(ctx, loop)
    if outer is not None:
        # nanoGPT's `for micro_step in range(accum):` inside the loop that steps: the micro-batch
        # index repeats every optimizer step (`micro_step % 100 == 0` held at the first micro-batch
        # of every step); the outer loop's counter counts optimizer steps.
        loop = outer
    # The enumerate index, also through a progress bar (`tqdm(enumerate(loader), total=n)`).
    counter = enumerate_counter(loop, ctx.assigned_values) or range_counter(loop, ctx.assigned_values)
    if counter is not None:
        return (_growing_counter(ctx, loop) if outer is None else None) or counter
    if outer is not None:
        return _incremented(ctx, [s for s in outer.body.body if not ctx.index.contains(s, node)])
    return _incremented(ctx, [loop.body])


# How many calls deep a counter handed from the loop is followed (_counter_parameter).
_MAX_CALL_DEPTH = 4


def _counter_parameter(ctx, node: cst.CSTNode, _seen: tuple = ()) -> str | None:
    """In a function the module's loops call, the parameter every call hands the loop's counter
    (`self.logger.on_step_end(step, loss)` into `def on_step_end(self, step, loss)`, also
    `global_step=self.global_step`), when the function binds that name nowhere else: there it
    counts the loop's steps as the loop does. The loop's own name is not seen in the function
    (advice naming it raised NameError). Followed through the functions between (`on_step_end`
    handing `step` on to `self.printer.show(step, loss)` as `it`): each level's own name."""
    fn = ctx.index.enclosing_function(node)
    if fn is None or fn in _seen or len(_seen) >= _MAX_CALL_DEPTH:
        return None
    calls = ctx.loops.calls_of(fn)
    found: set[str] = set()
    for call in calls:
        counter = _counter_at_call(ctx, call, (*_seen, fn))
        # Arguments are bound to fn's own parameters (bind_args): a call that may run another
        # class's method as well (`for cb in self.callbacks: cb.on_step_end(self, step, loss)`)
        # hands fn the counter all the same.
        if counter is None or fn not in ctx.loops.callees(call):
            return None
        params = {param for param, arg in ctx.loops.bind_args(fn, call)
                  if not arg.star and ctx.dotted(arg.value) == counter}
        if len(params) != 1:
            return None
        found |= params
    if len(found) != 1:
        return None
    param = found.pop()
    # Rebound in the function (`step = step * accum`, a nested loop's `for step in ...`): not the count.
    return None if any(param == name for name in bound_names(fn.body)) else param


def _counter_at_call(ctx, call: cst.Call, seen: tuple) -> str | None:
    """The loop's counter as named where call stands: in a hot loop, the loop's (step_counter);
    in a function called from one, the parameter it comes in as (_counter_parameter); None in a
    framework's hook (its counter is the framework's, not handed on here) or elsewhere."""
    if ctx.loops.hot_loop_of(call) is not None:
        return step_counter(ctx, call)
    if ctx.loops.step_hook(call) is not None:
        return None
    return _counter_parameter(ctx, call, seen)


def _growing_counter(ctx, loop: cst.CSTNode) -> str | None:
    """A name the loop's body increments by 1 on every iteration (`global_step += 1`, a statement
    of the body itself), in a loop nested in another that never sets it anew: it keeps counting
    across the outer loop, where the loop's own index restarts. `for epoch ...: for i in
    range(50): ...; global_step += 1` was guarded with `if i % 100 == 0:`, true at `i == 0`
    only (once per epoch, whatever the interval). None without an outer loop or such a name."""
    around = next((a for a in ctx.index.ancestors(loop)
                   if isinstance(a, (cst.For, cst.While, cst.FunctionDef, cst.ClassDef, cst.Lambda))), None)
    if not isinstance(around, (cst.For, cst.While)) or not isinstance(loop.body, cst.IndentedBlock):
        return None
    for stmt in loop.body.body:
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            if not (isinstance(small, cst.AugAssign) and isinstance(small.operator, cst.AddAssign)
                    and ctx.literal(small.value) == 1 and not ctx.tensors.is_tensor(small.target)):
                continue
            name = ctx.dotted(small.target)
            # Set anew in the outer loop (`n = 0` each epoch) it restarts as the index does.
            if name and not any(ctx.dotted(target) == name for node in ctx.index.walk(around)
                                if not isinstance(node, cst.AugAssign) for target in binding_targets(node)):
                return name
    return None


def _stepping_outer_loop(ctx, loop: cst.CSTNode) -> cst.For | cst.While | None:
    """The loop around loop that steps the optimizer, when loop itself runs no optimizer step (a
    micro-batch loop of gradient accumulation); None otherwise."""
    steps = ctx.loops.optimizer_step_sites
    if not steps or any(ctx.index.contains(loop, c) for c in steps):
        return None
    outer = next((a for a in ctx.index.ancestors(loop)
                  if isinstance(a, (cst.For, cst.While, cst.FunctionDef, cst.ClassDef, cst.Lambda))), None)
    if isinstance(outer, (cst.For, cst.While)) and any(ctx.index.contains(outer, c) for c in steps):
        return outer
    return None


def _incremented(ctx, statements) -> str | None:
    """The first name these statements increment by 1 (`step += 1`); not a tensor (`step_t =
    torch.zeros((), device="cuda")`, `step_t += 1`): a guard `if step_t % n == 0:` would read it
    on the host on every step, the very wait the guard is there to avoid."""
    for stmt in statements:
        for aug in ctx.index.walk(stmt):
            if isinstance(aug, cst.AugAssign) and isinstance(aug.operator, cst.AddAssign) \
                    and ctx.literal(aug.value) == 1 and not ctx.tensors.is_tensor(aug.target):
                name = ctx.dotted(aug.target)
                if name:
                    return name
    return None


class _Guard(NamedTuple):
    """The guard a fix puts per-step code under, and the messages name."""

    test: str | None  # the condition, as code (`step % log_every == 0`); None: no fix
    shown: str  # the guard as the advice shows it, in backticks (with why there is no fix)
    interval: str = ""  # the interval, as code, for a fix's title (`args.log_every`, `4`)
    # The loop's own `if` below that the statements move into, past the lines between that only
    # bind names its test reads (`global_step += 1`), which stay where they are (_join_below).
    join: cst.If | None = None
    taken: tuple = ()  # the statements that move into join, in order


class _OwnTest(NamedTuple):
    """The interval test the loop already makes (_loop_interval_test)."""

    test: str  # as the guard writes it
    interval: str  # the interval, as code
    guard: cst.If  # the loop's `if`
    whole: bool  # test is the `if`'s whole test
    reads: frozenset  # the dotted names test reads


def _guard(ctx, node: cst.CSTNode, default: int) -> _Guard:
    """The guard around node that a fix writes and a message advises (_interval_guard), with no
    fix where guarding the line would lose or garble what it logs: in the `else`/`elif` of the
    loop's own interval test of the counter (_interval_else), or beside a print that ends its
    line elsewhere (_split_print)."""
    guard = _interval_guard(ctx, node, default)
    if guard.test is None:
        return guard
    branch = _interval_else(ctx, node, guard.test)
    if branch is not None:
        return guard._replace(test=None, shown=(
            f"{guard.shown}, not written: the line runs in the `else` of `if {unparenthesized(ctx, branch.test)}:`, "
            f"on the steps that test skips, where this one may never hold"))
    split = _split_print(ctx, node)
    if split is not None:
        return guard._replace(test=None, shown=(
            f"{guard.shown}, not written: `{one_line(ctx.code(split))}` prints its line in two calls, "
            f"which a guard on one of them would split"))
    return guard


def _modulo_counters(expr: cst.BaseExpression) -> set[str]:
    """The dotted names read left of a `%` in expr (`step` of `(step + 1) % log_every == 0`)."""
    names = set()
    for node in walk(expr):
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Modulo):
            names |= {text for n in walk(node.left) if isinstance(n, (cst.Name, cst.Attribute))
                      and (text := dotted(n)) is not None}
    return names


def _interval_else(ctx, node: cst.CSTNode, test: str) -> cst.If | None:
    """The `if`, up to node's function, in whose `else:` or `elif` chain node runs, when its test
    takes a remainder of a counter that test (the guard) takes one of: `if step % log_every ==
    0: ... else: print(...)` runs the print on the other steps only, where `step % log_every ==
    0` never holds (the fix wrote it there, and `elif step > 2 and step % log_every == 0:`,
    and the line was never logged again)."""
    counters = _modulo_counters(cst.parse_expression(test))
    child = node
    for anc in ctx.index.ancestors(node):
        if isinstance(anc, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            return None
        if isinstance(anc, cst.If) and anc.orelse is child and _modulo_counters(anc.test) & counters:
            return anc
        child = anc
    return None


def _split_print(ctx, node: cst.CSTNode) -> cst.Call | None:
    """A print with an `end=` that is not a newline (`print(..., end=" ")`) among the lines a fix
    would guard with node's (the statements it moves and the logging lines beside them), as the
    last of them, or right before the first: it prints half a line, which the next print ends.
    Guarding only one half printed the other half on every step: one run-on line, or each step's
    name beside another step's loss. None when there is none."""
    stmt = ctx.index.enclosing(node, cst.SimpleStatementLine)
    block = ctx.parent(stmt) if stmt is not None else None
    if not isinstance(block, cst.IndentedBlock):
        return None
    body = list(block.body)
    moved = _statements_to_move(ctx, block, stmt) or [stmt]
    at, end = body.index(moved[0]), body.index(moved[-1])
    above = _logging_run(ctx, body[:at][::-1])
    below = _logging_run(ctx, body[end + 1:])
    first, last = at - len(above), end + len(below)
    if first > 0 and (call := _open_print(ctx, body[first - 1])) is not None:
        return call
    # The last one matters when a log call after it in the block may end its line (`print("lr",
    # lr)`); alone at the end of its block (`print("\rloss %f" % loss, end="")` as the body of
    # `if show_running_loss:`), guarding it splits nothing.
    call = _open_print(ctx, body[last])
    if call is not None and any(isinstance(n, cst.Call) and is_log_call(ctx, n)
                                for line in body[last + 1:] for n in walk(line)):
        return call
    return None


def _open_print(ctx, line: cst.CSTNode) -> cst.Call | None:
    """line is a log call alone whose `end=` is not a string ending in a newline or a carriage
    return (the line it prints is ended by the next print); None otherwise. A progress line
    (`end="\\r"`) is whole on its own: the next print starts over it, not after it."""
    if not (isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1 and isinstance(line.body[0], cst.Expr)
            and isinstance(line.body[0].value, cst.Call)):
        return None
    call = line.body[0].value
    end = ctx.keyword(call, "end")
    if end is None or not is_log_call(ctx, call):
        return None
    value = ctx.literal(end.value)
    return None if isinstance(value, str) and value.endswith(("\n", "\r")) else call


def _interval_guard(ctx, node: cst.CSTNode, default: int) -> _Guard:
    """The guard around node that a fix writes and a message advises.

    In a framework's step hook: the framework's counter and interval (Lightning's `self.global_step
    % self.trainer.log_every_n_steps`). In a loop that already tests an interval of its counter
    (`if args.log_every > 0 and step % args.log_every == 0:`, `if i % 4 == 3:`, `if step %
    int(log_interval) == 0:`): that test as the script writes it (_loop_interval_test), so the
    guarded code runs on the steps the script already logs at, and nothing the script guards
    against (an interval of 0, a string read from the environment) is lost; but only where it
    reads at node what it reads where it stands: when the loop binds a name of it in between
    (`every = ...`, `global_step += 1` after the print, before the test), the statements join
    that `if` below when only such bindings lie between (_join_below), else the script's named
    interval is the guard when it reads no such name, else there is no fix. Else the loop's
    counter and the script's interval (`log_every`, `args.log_interval`, `LOG_EVERY`) when its
    value is known to be a positive whole number (a literal, an option's default); one that is
    not known gets no guard (`step % 0` raises, `step % "2"` too); else the default."""
    counter = step_counter(ctx, node)
    own = _loop_interval_test(ctx, node, counter) if counter is not None and ctx.loops.step_hook(node) is None \
        else None
    if own is None:
        return _named_guard(ctx, node, counter, default)
    bound = _bound_between(ctx, node, own.guard)
    clash = _clashes(own.reads, bound)
    if not clash:
        return _Guard(own.test, f"`if {own.test}:`", own.interval)
    taken = _join_below(ctx, node, own)
    if taken is not None:
        return _Guard(own.test, f"`if {own.test}:`", own.interval, join=own.guard, taken=taken)
    named = _named_guard(ctx, node, counter, default)
    if named.test is not None and named.interval != str(default) and not _clashes({counter, named.interval}, bound):
        return named
    return _Guard(None, f"`if {own.test}:`, not written here: it reads `{sorted(clash)[0]}`, which the loop sets "
                        f"between this line and that test")


def _named_guard(ctx, node: cst.CSTNode, counter: str | None, default: int) -> _Guard:
    """_guard without the loop's own test: the framework's, else the script's named interval,
    else the default."""
    hook = ctx.loops.step_hook(node)
    if hook is not None:
        interval = hook.interval
    else:
        interval, known = str(default), True
        for name, text in _interval_names(ctx):
            if in_scope_of(ctx, name, node) and _own_attribute(ctx, name, node):
                value = interval_value(ctx, name, node)
                interval = text
                known = isinstance(value, int) and not isinstance(value, bool) and value > 0
                break
        else:
            # An option the script defines but the code never reads (`--log_interval`, default
            # 20): the guard used the default 100 until something read `args.log_interval`.
            option = unread_option(ctx, node, _INTERVAL_NAME)
            if option is not None:
                namespace, attr = option.split(".")
                found = option_default(ctx, cst.Attribute(value=cst.Name(namespace), attr=cst.Name(attr)))
                value = found.value if found is not None else None
                if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                    interval = option
        if not known:
            name, counting = (counter, "") if counter is not None else _missing_counter(ctx, node)
            shown = f"`if {name} % {interval} == 0:`"
            why = f"not written: `{interval}` is not known to be a positive whole number"
            return _Guard(None, f"{shown}, {counting}; {why}" if counting else f"{shown}, {why}")
    if counter is None:
        name, counting = _missing_counter(ctx, node)
        return _Guard(None, f"`if {name} % {interval} == 0:`, {counting}")
    test = f"{counter} % {interval} == 0"
    return _Guard(test, f"`if {test}:`", interval)


def _self_attribute(expr: cst.CSTNode) -> bool:
    """expr is `self.<attr>`."""
    return isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self"


def _own_attribute(ctx, name: cst.CSTNode, at: cst.CSTNode) -> bool:
    """An interval `self.log_every` seen at name is one the code at `at` can read as `self.log_every`:
    both stand in the same class, or name in a base class of at's defined here. Another class's
    (Trainer's `self.log_every = 50` advised inside Logger's method, or Logger's inside Trainer's
    loop) is an attribute the object at `at` may not have: AttributeError. Other names: True."""
    if not _self_attribute(name):
        return True
    owner = ctx.index.enclosing_class(at)
    return owner is not None and ctx.index.enclosing_class(name) in ctx.loops.lineage(owner)


def interval_value(ctx, expr: cst.BaseExpression, at: cst.CSTNode):
    """The value a plain run gives the interval expr read at `at`: a literal, a variable's or
    option's (Sources), else that of an attribute of `self` set once in `__init__`
    (_init_attribute_value); UNKNOWN when the file does not say."""
    value = ctx.sources.value(expr)
    return _init_attribute_value(ctx, expr, at) if value is UNKNOWN else value


def _init_attribute_value(ctx, expr: cst.BaseExpression, at: cst.CSTNode):
    """The literal `self.log_every` holds where `at`, in a method of the same class, reads it:
    the file binds that attribute of such an object exactly once (not `trainer.log_every = 0` of
    any object, not `self.log_every += 1`, no `setattr`), as `self.log_every = 2` in the `__init__`
    of that class or of a base class of it defined here. `self.log_every` of an unrelated class
    (not a base or a subclass) is another object's: Logger's `self.log_every = 2` was unknown
    because the Trainer set its own to 50. Such an attribute is as known as a module constant
    (TL201 said "not known to be a positive whole number" and wrote no guard). UNKNOWN
    otherwise: set from an argument or a config (`self.log_every = log_every`), anywhere else,
    or more than once."""
    if not _self_attribute(expr):
        return UNKNOWN
    cls = ctx.index.enclosing_class(at)
    lineage = ctx.loops.lineage(cls) if cls is not None else []
    if ctx.index.enclosing_class(expr) not in lineage:
        return UNKNOWN
    attr = expr.attr.value
    for call in ctx.index.nodes(cst.Call):
        if ctx.dotted(call.func) == "setattr" and (len(call.args) < 2 or ctx.literal(call.args[1].value) in (attr, UNKNOWN)):
            return UNKNOWN
    related = {*lineage, *ctx.loops.subclasses(cls)}
    bound = [a for a in ctx.index.nodes(cst.Attribute) if a.attr.value == attr and _is_bound(ctx, a)
             and not (_self_attribute(a) and (owner := ctx.index.enclosing_class(a)) is not None
                      and owner not in related)]
    if len(bound) != 1:
        return UNKNOWN
    target = bound[0]
    holder, assign = ctx.parent(target), ctx.parent(ctx.parent(target))
    fn = ctx.index.enclosing_function(target)
    if not (isinstance(holder, cst.AssignTarget) and isinstance(assign, cst.Assign) and len(assign.targets) == 1
            and _self_attribute(target) and fn is not None and fn.name.value == "__init__"
            and ctx.parent(ctx.parent(fn)) in lineage):
        return UNKNOWN
    return ctx.literal(assign.value)


def _is_bound(ctx, node: cst.CSTNode) -> bool:
    """node is a target an assignment, `for`, `with ... as` or `:=` binds, also inside a tuple or
    list target (`self.a, self.log_every = 1, 2`), or one `del` removes."""
    child = node
    parent = ctx.parent(child)
    while isinstance(parent, (cst.Element, cst.StarredElement, cst.Tuple, cst.List)):
        child, parent = parent, ctx.parent(parent)
    if isinstance(parent, cst.AssignTarget):
        return True
    return isinstance(parent, cst.Del) or any(t is child for t in binding_targets(parent))


def _missing_counter(ctx, node: cst.CSTNode) -> tuple[str, str]:
    """The counter the advice names where the loop keeps none to guard node with, and how it
    says to keep it. In the branch that steps the optimizer under gradient accumulation it counts
    optimizer steps (`opt_step += 1` there): that branch sees one micro-batch in N, and a test of
    the loop's index inside it (`i % 10 == 0` under `i % 4 == 3`, `step % 100 == 0` under `(step
    + 1) % 4 == 0`) may hold on no step at all."""
    if ctx.loops.step_region(node) is not None:
        return "opt_step", ("counting optimizer steps with `opt_step += 1` where the optimizer steps, as a test of the "
                            "loop's index there may hold on no step")
    fn = ctx.index.enclosing_function(node)
    call = forward_call(ctx, node)
    if call is not None:
        # A model's forward, run by `out = model(x)` in the loop: no counter of the loop is seen
        # there, and evaluation runs it too (a count kept in it counts those calls).
        return "self.step", (f"counting `self.step += 1` in `{fn.name.value}`, which `{one_line(ctx.code(call))}` in the "
                             f"training loop runs on every step (evaluation calls count too); not fixed: no step "
                             f"counter here")
    if fn is not None and ctx.loops.hot_loop_of(node) is None and _called_from_loop(ctx, fn):
        # A function the module's loop calls (`self.train_step(x)`), or one such a function
        # calls: the loop's index is not seen there, and advice naming it would raise NameError
        # if copied; a method's object can keep the count. (Not a framework's hook, called by no
        # loop of the module.)
        if ctx.index.enclosing_class(fn) is not None and fn.params.params \
                and fn.params.params[0].name.value == "self":
            return "self.step", "counting `self.step += 1` in this method, which sees no counter of the loop"
        return "step", "with the loop's counter handed in as a parameter `step`, which this function does not take"
    name = _free_counter_name(ctx, fn)
    note = "" if name == "step" else " (`step` holds something else here)"
    return name, f"counting `{name}` where no counter of the loop was found{note}"


def _free_counter_name(ctx, fn: cst.FunctionDef | None) -> str:
    """A name for the counter the advice asks to keep that fn (the module's top level where fn is
    None) does not bind already: its `step` may be another loop's (PPO's rollout loop before its
    update loop), which a copied `if step % 100 == 0:` would read."""
    taken = local_names(fn) if fn is not None else module_names(ctx.module)
    return next((n for n in ("step", "train_step", "update_step") if n not in taken), "step")


def _called_from_loop(ctx, fn: cst.FunctionDef, _seen: tuple = ()) -> bool:
    """fn is called in a hot loop of the module, directly or through functions called there
    (`self.handler.on_step_end(...)` in the loop calling `self.printer.show(...)`)."""
    if fn in _seen or len(_seen) >= _MAX_CALL_DEPTH:
        return False
    for call in ctx.loops.calls_of(fn):
        if ctx.loops.hot_loop_of(call) is not None:
            return True
        caller = ctx.index.enclosing_function(call)
        if caller is not None and ctx.loops.step_hook(call) is None and _called_from_loop(ctx, caller, (*_seen, fn)):
            return True
    return False


def _bound_between(ctx, node: cst.CSTNode, guard: cst.If) -> set[str]:
    """The dotted names (and the names they start with) bound by what the loop runs between the
    statement holding node and guard's test, either way round, as seen in the innermost block
    that holds both: the statements between, and the ones holding each end (all of them, but
    guard's own test, and its body when it comes after node: it runs after the test)."""
    block, child_node, child_guard = None, {}, {}
    for anc, path in ((node, child_node), (guard, child_guard)):
        child = anc
        for a in ctx.index.ancestors(anc):
            if isinstance(a, cst.IndentedBlock):
                path[a] = child
            child = a
    for a in ctx.index.ancestors(node):
        if isinstance(a, cst.IndentedBlock) and a in child_guard:
            block = a
            break
    if block is None:
        return set()
    body = list(block.body)
    i, j = body.index(child_node[block]), body.index(child_guard[block])
    skip = {guard.test} | ({guard.body} if j > i else set())
    names: set[str] = set()
    stack = body[min(i, j):max(i, j) + 1]
    while stack:
        n = stack.pop()
        if n in skip:
            continue
        for target in binding_targets(n):
            names |= _outer_names(ctx, target)  # `self.global_step`, `config` of `config["k"] = v`
        stack.extend(n.children)
    return names - {None}


def _clashes(read: set[str], bound: set[str]) -> set[str]:
    """The names of read that a binding of bound changes: the name itself, an object it is an
    attribute of (`args` for `args.wandb`), or an attribute of it."""
    return {r for r in read for b in bound if r == b or r.startswith(b + ".") or b.startswith(r + ".")}


def _join_below(ctx, node: cst.CSTNode, own: _OwnTest) -> tuple | None:
    """The statements that move with node's (_statements_to_move), and the per-step logging lines
    among the lines after them (_logging_run), when they can join the loop's own `if` below in the
    same block whose whole test is the guard: each line between them and it is either such a
    logging line, taken along, or a plain binding of names (`every = 2 if epoch == 0 else 5`,
    `global_step += 1`) that calls nothing, reads nothing the moved lines bind and binds nothing
    the moved or taken lines read, which stays where it is. Moving them past such lines is exact,
    and they then run on the steps the script logs at (a copy of the test above those lines read
    the name before it was set: unbound, or last round's value). None otherwise."""
    stmt = ctx.index.enclosing(node, cst.SimpleStatementLine)
    block = ctx.parent(stmt) if stmt is not None else None
    if not own.whole or not isinstance(block, cst.IndentedBlock) or own.guard not in block.body \
            or own.guard.orelse is not None or not isinstance(own.guard.body, cst.IndentedBlock):
        return None
    body = list(block.body)
    if body.index(own.guard) < body.index(stmt):
        return None
    moved = _statements_to_move(ctx, block, stmt)
    if moved is None:
        return None
    taken, bound, reads = list(moved), set(), set()
    for line in body[body.index(moved[-1]) + 1:body.index(own.guard)]:
        if _logging_run(ctx, [line]):
            taken.append(line)
            continue
        names = _bound_names(line) if isinstance(line, cst.SimpleStatementLine) else None
        if not names or not all(isinstance(small, (cst.Assign, cst.AugAssign, cst.AnnAssign)) for small in line.body) \
                or any(isinstance(n, (cst.Call, cst.Await, cst.Yield, cst.Lambda)) for n in ctx.index.walk(line)):
            return None
        bound |= names
        reads |= {n.value for n in ctx.index.walk(line) if isinstance(n, cst.Name)}
    moved_binds = set().union(*(_bound_names(s) or set() for s in moved))
    if not bound or reads & moved_binds or any(_reads_name(ctx, s, n) for s in taken for n in bound):
        return None
    return tuple(taken)


def _loop_interval_test(ctx, node: cst.CSTNode, counter: str) -> _OwnTest | None:
    """The interval test the loop around node already makes of its counter, and its interval, as
    code: an `if` of the
    same loop (in gradient accumulation's optimizer step when node is there, outside it when node
    is not), run on every step itself, whose test is `<counter expression> % <interval> == <k>`
    (`(step + 1) % log_every == 0`, `i % 4 == 3`), alone or in an `and` with conditions on the
    interval (`args.log_every > 0 and ...`, kept: they keep the remainder from dividing by zero)
    and others without effects (`rank == 0`, dropped where the interval is known to be a positive
    whole number: the guard limits steps, not processes; else kept, in order: `args.wandb and
    step % log_every == 0` may guard an interval that is None without `--wandb`), and
    whose body logs or whose interval is named like a logging interval. Not a test of a tensor
    (`step_t % 10`: itself a wait for the GPU on every step). None when the loop has none."""
    loop = ctx.loops.hot_loop_of(node)
    if loop is None:
        return None
    region = ctx.loops.step_region(node)
    # The loop's own index too, when the counter is one that grows across an outer loop
    # (_growing_counter): the script's `if i % 10 == 0:` is still its test. Not in the branch
    # that steps the optimizer under accumulation, where the index's interval may never hold.
    index = None if region is not None else \
        enumerate_counter(loop, ctx.assigned_values) or range_counter(loop, ctx.assigned_values)
    counters = {counter, index} - {None} | _incremented_all(ctx, region if region is not None else [loop.body])
    first = None
    for guard in ctx.index.walk(loop.body):
        if not isinstance(guard, cst.If) or ctx.loops.innermost_loop(guard) is not loop \
                or ctx.loops.is_step_boundary(guard) or not ctx.loops.limits_body(guard.test):
            continue
        in_region = region is not None and any(ctx.index.contains(s, guard) for s in region)
        if in_region != (region is not None) or (region is None and ctx.loops.step_region(guard) is not None) \
                or not ctx.loops.is_per_step(guard, optimizer_steps=region is not None):
            continue
        test = _reusable_test(ctx, guard, counters)
        if test is None:
            continue
        own = _OwnTest(*test[:2], guard, *test[2:])
        if _named_log_interval(ctx, _one_in_n_of(ctx, guard.test)):
            return own
        first = first or own
    return first


def _one_in_n_of(ctx, test: cst.BaseExpression) -> cst.BaseExpression | None:
    """The interval n of the `x % n == k` among the operands of `test`'s `and` (a reusable test has one)."""
    stack = [test]
    while stack:
        part = stack.pop(0)
        if isinstance(part, cst.BooleanOperation) and isinstance(part.operator, cst.And):
            stack[:0] = [part.left, part.right]
        elif _one_in_n(ctx, part) is not None:
            return _one_in_n(ctx, part).right
    return None


def _named_log_interval(ctx, every: cst.BaseExpression | None) -> bool:
    """The interval is named as a logging one (`log_every`, `config["log_interval"]`). A loop's
    `if` that only qualifies by logging in its body (`if step % eval_every == 0: ...
    print("val", v)`) is taken only when the loop has no such one: the first reusable `if` was
    taken before, which put the per-step loss print under the evaluation interval when the
    evaluation's `if` came first, logging on other steps than the script's `if step % log_every`."""
    if every is None:
        return False
    text = (ctx.dotted(every) or "") if isinstance(every, (cst.Name, cst.Attribute)) else ""
    return bool(_INTERVAL_NAME.match(text.rsplit(".", 1)[-1].lstrip("_"))) or _subscript_interval(ctx, every)


def _reusable_test(ctx, guard: cst.If, counters: set[str]) -> tuple[str, str, bool, frozenset] | None:
    """guard's test as _loop_interval_test reuses it, or None."""
    parts, stack = [], [guard.test]
    while stack:  # the operands of `a and b and c`, in order
        part = stack.pop(0)
        if isinstance(part, cst.BooleanOperation) and isinstance(part.operator, cst.And):
            stack[:0] = [part.left, part.right]
        else:
            parts.append(part)
    remainders = [p for p in parts if _one_in_n(ctx, p) is not None]
    if len(remainders) != 1:
        return None
    modulo = _one_in_n(ctx, remainders[0])
    every = ctx.literal(modulo.right)
    # The counter read whole: `args.step % args.log_interval` is not a test of the loop's `step`
    # (the `step` of the attribute matched, and the fix reused that test as the loop's interval).
    if ctx.tensors.is_tensor(modulo.left) or (isinstance(every, int) and every <= 1) \
            or not _outer_names(ctx, modulo.left) & counters:
        return None
    interval = _outer_names(ctx, modulo.right)
    value = every if isinstance(every, int) else interval_value(ctx, modulo.right, guard) \
        if isinstance(modulo.right, (cst.Name, cst.Attribute)) else None
    positive = isinstance(value, int) and not isinstance(value, bool) and value > 0
    kept = []
    for part in parts:
        if part is remainders[0]:
            kept.append(part)
        elif not side_effect_free(ctx, part):
            return None
        elif _outer_names(ctx, part) & interval or not positive:
            # `args.log_every > 0`: what keeps the remainder from failing; any condition, when
            # the interval may not be a number (`args.wandb and step % log_every == 0`).
            kept.append(part)
    text = (ctx.dotted(modulo.right) or "") if isinstance(modulo.right, (cst.Name, cst.Attribute)) else ""
    if not (_INTERVAL_NAME.match(text.rsplit(".", 1)[-1].lstrip("_")) or _subscript_interval(ctx, modulo.right)
            or any(isinstance(c, cst.Call) and is_log_call(ctx, c) for c in ctx.index.walk(guard.body))):
        return None
    # Without its parentheses: the fix's title says "every `args.log_interval * 2` steps".
    every_code = unparenthesized(ctx, modulo.right)
    reads = frozenset().union(*(_outer_names(ctx, p) for p in kept))
    if len(kept) == len(parts):
        return unparenthesized(ctx, guard.test), every_code, True, reads
    return " and ".join(one_line(ctx.code(p)) for p in kept), every_code, False, reads


def unparenthesized(ctx, expr: cst.BaseExpression) -> str:
    """expr as one line, for a message or a new `if`, without the parentheses around it, which
    only spread it over lines or group it where it stood (`if (\n    a\n    and b\n):` ->
    `a and b`, as Black writes a test that fits on one line; `(args.log_interval * 2)`)."""
    return one_line(ctx.code(expr.with_changes(lpar=[], rpar=[]) if getattr(expr, "lpar", None) else expr))


def _outer_names(ctx, expr: cst.BaseExpression) -> set[str]:
    """The dotted names expr reads, whole (`self._log_every` and not `self` or `_log_every` of it)."""
    return {ctx.dotted(n) for n in ctx.index.walk(expr) if isinstance(n, (cst.Name, cst.Attribute))
            and not isinstance(ctx.parent(n), cst.Attribute)} - {None}


def _subscript_interval(ctx, expr: cst.BaseExpression) -> bool:
    """`config["log_every"]`, `int(cfg.log_interval)`: a logging interval taken from a mapping or
    converted."""
    for n in ctx.index.walk(expr):
        text = ctx.literal(n) if isinstance(n, cst.SimpleString) else ctx.dotted(n) if isinstance(
            n, (cst.Name, cst.Attribute)) else None
        if isinstance(text, str) and _INTERVAL_NAME.match(text.rsplit(".", 1)[-1].lstrip("_")):
            return True
    return False


def _one_in_n(ctx, test: cst.BaseExpression) -> cst.BinaryOperation | None:
    """The remainder of `x % n == k` (either way round, k a whole number): a test that holds on
    one step in n."""
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1
            and isinstance(test.comparisons[0].operator, cst.Equal)):
        return None
    for remainder, other in ((test.left, test.comparisons[0].comparator), (test.comparisons[0].comparator, test.left)):
        value = ctx.literal(other)
        if isinstance(remainder, cst.BinaryOperation) and isinstance(remainder.operator, cst.Modulo) \
                and isinstance(value, int) and not isinstance(value, bool):
            return remainder
    return None


def _incremented_all(ctx, statements) -> set[str]:
    """Every name (not a tensor) these statements increment by 1."""
    names = set()
    for stmt in statements:
        for aug in ctx.index.walk(stmt):
            if isinstance(aug, cst.AugAssign) and isinstance(aug.operator, cst.AddAssign) \
                    and ctx.literal(aug.value) == 1 and not ctx.tensors.is_tensor(aug.target):
                names.add(ctx.dotted(aug.target))
    return names - {None}


def _interval_names(ctx) -> list[tuple[cst.CSTNode, str]]:
    """(node, dotted name) for each name of the file that reads like a logging interval and holds
    a value (`log_every`, `args.log_interval`, `self._log_every_n_steps`), in the order the file's
    attributes then names come; found once per file (every per-step finding asks)."""
    cached = ctx.__dict__.get("_interval_names")
    if cached is None:
        cached = []
        for name in ctx.index.nodes(cst.Attribute) + ctx.index.nodes(cst.Name):
            text = ctx.dotted(name)
            # A private attribute counts too: torchtune's `self._log_every_n_steps`.
            if text and _INTERVAL_NAME.match(text.rsplit(".", 1)[-1].lstrip("_")) and names_a_value(ctx, name):
                cached.append((name, text))
        ctx.__dict__["_interval_names"] = cached
    return cached


def interval_guard(ctx, node: cst.CSTNode, default_interval: int) -> str:
    """The guard the messages advise, as it goes in their parentheses: the one guard_statement
    writes, in backticks (`if it % args.log_interval == 0:`, the loop's own test `if i % 4 == 3:`,
    the framework's in a step hook: `if trainer.global_step % trainer.log_every_n_steps == 0:`).
    Where the loop keeps no counter, or the interval is not known to be a positive number (and
    there is no fix), the advice says so."""
    return _guard(ctx, node, default_interval).shown


def _comments_only(stmt: cst.CSTNode) -> cst.CSTNode:
    """stmt as the first line moved into the top of an `if`'s body: without the blank lines above
    it, with the comment lines above it (`# report the loss`), which move with it. They were
    dropped: the statement's removal took them from where they were, and nothing put them back."""
    return stmt.with_changes(leading_lines=[line for line in stmt.leading_lines if line.comment is not None])


def guard_statement(rule: Rule, node: cst.CSTNode, default_interval: int, joins=None):
    """Fix that puts the statement holding node under `if <counter> % <interval> == 0:`.

    A statement that assigns a name moves only when nothing outside the guard reads that name
    afterwards (`m = torch.cuda.memory_allocated()` followed by `stats.append(m)` would leave the
    append reading a stale value, or an unbound one): the statements right after it that read it
    move too, when that is simple; otherwise there is no fix. Nor is there one when a statement
    that would move fills a container read elsewhere (_filled_only_here).

    joins: for a rule whose other findings beside node get the same guard (TL203's statistics),
    whether a call is one of them: a line making such a call, that moves alone, joins the same
    new `if` as the logging lines do (_logging_run), instead of an `if` of its own per line."""
    ctx = rule.ctx
    stmt = ctx.index.enclosing(node, cst.SimpleStatementLine)
    guard = _guard(ctx, node, default_interval)
    test, interval = guard.test, guard.interval
    if stmt is None or test is None or not isinstance(ctx.parent(stmt), cst.IndentedBlock):
        return None
    if ctx.loops.remainder_guard(stmt) is not None:
        return None  # `if step % 100 == 0:` inside `if step % log_every:` may hold on no step at all
    if len(stmt.body) > 1:
        return None  # `gc.collect(); torch.cuda.empty_cache()`: the guard would take the others along
    moved = _statements_to_move(ctx, ctx.parent(stmt), stmt)
    if moved is None:
        return None
    first = moved[0]
    if guard.join is not None:
        # The loop's own `if` below, past lines that set what its test reads: the statements move
        # into it, those lines stay.
        taken = list(guard.taken)
        inner = [_comments_only(taken[0]), *taken[1:], *guard.join.body.body]
        return rule.fix(Applicability.UNSAFE, f"Run it every `{interval}` steps, in the `if` below (`if {test}:`)",
                        (guard.join, guard.join.with_changes(body=guard.join.body.with_changes(body=inner))),
                        *((s, "") for s in taken))
    # The same guard right above or below: the statements join it instead of a second `if`; so do
    # the per-step logging lines between them (TL202's, and TL201's that only log: _logging_run),
    # which would each be guarded by the same test (two prints above `if step % log_every == 0:`
    # gave two such `if`s back to back).
    body = list(ctx.parent(stmt).body)
    at, end = body.index(first), body.index(moved[-1])
    above = _logging_run(ctx, body[:at][::-1], joins)[::-1]
    below = _logging_run(ctx, body[end + 1:], joins)
    for run, before in ((above, True), (below, False)):
        index = at - len(run) - 1 if before else end + len(run) + 1
        neighbour = body[index] if 0 <= index < len(body) else None
        if isinstance(neighbour, cst.If) and neighbour.orelse is None and isinstance(neighbour.body, cst.IndentedBlock) \
                and unparenthesized(ctx, neighbour.test) == test:
            taken = [*run, *moved] if before else [*moved, *run]
            joined = [_comments_only(taken[0]) if not before else taken[0], *taken[1:]]
            inner = [*neighbour.body.body, *joined] if before else [*joined, *neighbour.body.body]
            where = "above" if before else "below"
            return rule.fix(Applicability.UNSAFE, f"Run it every `{interval}` steps, in the `if` {where} (`if {test}:`)",
                            (neighbour, neighbour.with_changes(body=neighbour.body.with_changes(body=inner))),
                            *((s, "") for s in taken))
    # No such `if`: the per-step logging lines right above and below go under the new guard with
    # the statements (each would get its own `if` with the same test: two prints in a row gave two
    # `if step % 100 == 0:` back to back). The fix of each of them writes the same edits.
    group = [*above, *moved, *below]
    first = group[0]
    outer = ctx.parent(ctx.parent(stmt))
    if isinstance(outer, cst.If) and outer.orelse is None and len(body) == len(group) \
            and isinstance(outer.test, _JOINABLE_TESTS) and not (isinstance(outer.test, cst.BooleanOperation)
                                                                and not isinstance(outer.test.operator, cst.And)):
        # The whole body of a plain `if` (`if torch.cuda.is_available():`): one joined condition,
        # evaluated in the same order as the nested `if`s would be.
        joined = outer.test.with_changes(lpar=[], rpar=[]) if isinstance(outer.test, cst.BooleanOperation) else outer.test
        rest = _new_conditions(ctx, test, outer.test)
        return rule.fix(Applicability.UNSAFE, f"Run it every `{interval}` steps (`if ... and {rest}:`)",
                        (outer.test, cst.BooleanOperation(left=joined, operator=cst.And(),
                                                          right=cst.parse_expression(rest))))
    if _loop_of_logging_only(ctx, outer, body, group, test):
        # The whole body of a loop over the model's parameters (or a dict's items) that only logs:
        # the loop goes under the guard, not each line in it, so the steps between logs do not
        # walk every parameter to skip each one.
        guarded = cst.If(test=cst.parse_expression(test), body=cst.IndentedBlock(
            body=[outer.with_changes(leading_lines=[])]), leading_lines=outer.leading_lines)
        return rule.fix(Applicability.UNSAFE, f"Run the loop every `{interval}` steps (`if {test}:`)", (outer, guarded))
    guarded = cst.If(
        test=cst.parse_expression(test),
        body=cst.IndentedBlock(body=[first.with_changes(leading_lines=[]), *group[1:]]),
        leading_lines=first.leading_lines,
    )
    message = f"Run it every `{interval}` steps (`if {test}:`)"
    if len(moved) > 1:
        names = ", ".join(f"`{n}`" for n in sorted(_bound_names(moved[0])))
        lines = "next line, which reads" if len(moved) == 2 else f"next {len(moved) - 1} lines, which read"
        message = f"Run it and the {lines} {names}, every `{interval}` steps (`if {test}:`)"
    if above or below:
        count = len(above) + len(below)
        kind = "logging " if joins is None else ""  # TL203's run holds statistics lines too
        message = message.replace(" (`if", f", with the {count} per-step {kind}line{'s' if count > 1 else ''} "
                                           f"beside it (`if", 1)
    # The statements after the first move into the guard: each is removed where it stood.
    return rule.fix(Applicability.UNSAFE, message, (first, guarded), *((s, "") for s in group[1:]))


# Methods whose loop goes over what an object holds and does nothing else: a module's parameters,
# buffers and submodules, a dict's keys, values and items.
_LISTINGS = frozenset({"parameters", "named_parameters", "buffers", "named_buffers", "modules", "named_modules",
                       "children", "named_children", "items", "keys", "values"})
# Builtins that go over such a listing as it is (`enumerate(model.parameters())`).
_OVER_LISTING = frozenset({"builtins.enumerate", "builtins.zip", "builtins.list", "builtins.tuple", "builtins.sorted"})


def _listing(ctx, expr: cst.BaseExpression) -> bool:
    """expr lists what objects hold (_LISTINGS), maybe through enumerate/zip/sorted: going over it
    has no effect, so a loop over it may be skipped."""
    if not isinstance(expr, cst.Call):
        return False
    if isinstance(expr.func, cst.Attribute) and expr.func.attr.value in _LISTINGS:
        return side_effect_free(ctx, expr.func.value) and not expr.args
    return ctx.names.qualified(expr.func) in _OVER_LISTING and bool(expr.args) and all(
        not arg.star and arg.keyword is None and _listing(ctx, arg.value) for arg in expr.args)


def _loop_of_logging_only(ctx, loop: cst.CSTNode, body: list, group: list, test: str) -> bool:
    """loop is a `for` over a listing (_listing) whose body is group alone, with no `else`, that
    binds no name the guard's test reads, nor one read after it but in a loop that binds it
    again (`for p in model.parameters():` twice): guarding the loop skips only the logging."""
    if not (isinstance(loop, cst.For) and loop.orelse is None and loop.asynchronous is None
            and len(body) == len(group) and isinstance(ctx.parent(loop), (cst.IndentedBlock, cst.Module))
            and _listing(ctx, loop.iter)):
        return False
    targets = {n.value for n in walk(loop.target) if isinstance(n, cst.Name)}
    if targets & {n.value for n in walk(cst.parse_expression(test)) if isinstance(n, cst.Name)}:
        return False
    scope = owner(ctx.index, loop)
    for name in targets:
        uses = variable_uses(ctx.index, scope, name)
        if uses is None or any(use.kind in ("read", "aug") and not ctx.index.contains(loop, use.node)
                               and not _rebound_by_loop(ctx, use.node, name) for use in uses):
            return False
    return True


def _rebound_by_loop(ctx, read: cst.Name, name: str) -> bool:
    """read is in the body of a `for` that binds name itself: it reads that loop's value."""
    for anc in ctx.index.ancestors(read):
        if isinstance(anc, cst.For) and ctx.index.contains(anc.body, read) \
                and any(isinstance(n, cst.Name) and n.value == name for n in walk(anc.target)):
            return True
    return False


def _and_operands(expr: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The operands of `a and b and c`, in order; [expr] for anything else."""
    if isinstance(expr, cst.BooleanOperation) and isinstance(expr.operator, cst.And) and not expr.lpar:
        return [*_and_operands(expr.left), *_and_operands(expr.right)]
    return [expr]


def _new_conditions(ctx, test: str, known: cst.BaseExpression) -> str:
    """test without the `and` operands that the `if` it joins already tests (known): the loop's
    own `if dist.get_rank() == 0 and step % every == 0:`, reused whole where the interval may not
    be a number, joined `if dist.get_rank() == 0:` as `if dist.get_rank() == 0 and
    dist.get_rank() == 0 and step % every == 0:`. The reused test's other operands have no effects
    (_reusable_test) and the joined one is evaluated first: dropping a repeat changes nothing.
    The remainder test itself always stays."""
    seen = {one_line(ctx.code(p)) for p in _and_operands(known)}
    parts = _and_operands(cst.parse_expression(test))
    kept = [p for p in parts if _one_in_n(ctx, p) is not None or one_line(cst.Module([]).code_for_node(p)) not in seen]
    return " and ".join(one_line(cst.Module([]).code_for_node(p)) for p in kept)


# Conditions an interval test joins with `and` as they are: no operator of theirs binds more
# loosely than `and` (not `a or b`, `x if c else y`, a lambda or `:=` without parentheses).
_JOINABLE_TESTS = (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.Comparison, cst.UnaryOperation,
                   cst.BooleanOperation)


def _logging_run(ctx, statements, joins=None) -> list:
    """The statements at the start of `statements` that each log a tensor in one call and do
    nothing else (`print(f"loss {loss:.3f}")`, `pbar.set_postfix(loss=loss)`, a tracker's call
    given its step): TL202 guards each with the same test, so a guard joining an `if` past them
    takes them along. So are lines that make a call `joins` accepts and move alone
    (_joins_alone). A line whose finding the author suppressed (`# noqa: TL202`, `# trainlint:
    ignore[TL201]`, also on the first line of a print over several, or the file's `# trainlint:
    noqa: TL201`: ctx.suppressed_in) ends the run: it is meant to run on every step."""
    run = []
    for stmt in statements:
        if joins is not None and _joins_alone(ctx, stmt, joins):
            run.append(stmt)
            continue
        if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Expr)
                and isinstance(stmt.body[0].value, cst.Call)) or _bound_names(stmt) != set():
            # (a line that binds a name, `print(f"{(cur := loss):.4f}")`, moves only with the
            # lines that read it: _statements_to_move)
            break
        call = stmt.body[0].value
        tracker = tracker_values(ctx, call) if not is_log_call(ctx, call) else None
        if tracker is not None:
            logged = tracker.step and any(device_tensor(ctx, v) for v in tracker.values)
        else:
            logged = is_log_call(ctx, call) and any(True for arg in call.args for _ in formatted_tensors(ctx, arg.value))
        # TL201 guards a log line that reads a tensor with `.item()` the same way (_log_line).
        read = log_line(ctx, call) and _reads_device_tensor(ctx, call)
        if not logged and not read:
            break
        if (logged and ctx.suppressed_in(stmt, "TL202")) or (read and ctx.suppressed_in(stmt, "TL201")):
            break
        run.append(stmt)
    return run


def _joins_alone(ctx, stmt: cst.CSTNode, joins) -> bool:
    """stmt is one simple statement making a call that `joins` accepts (a statistic TL203 puts
    under the same guard: `torch.cuda.reset_peak_memory_stats()`, `stats = {"mem":
    torch.cuda.max_memory_reserved()}`), whose TL203 finding is not suppressed (ctx.suppressed_in),
    that would move under the guard by itself (nothing else reads what it binds:
    _statements_to_move). Each such line got its own `if step % 100 == 0:` back to back."""
    if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1) or ctx.suppressed_in(stmt, "TL203") \
            or has_flow_or_step(ctx, stmt):
        return False
    if not any(isinstance(n, cst.Call) and joins(n) for n in ctx.index.walk(stmt)):
        return False
    block = ctx.parent(stmt)
    return isinstance(block, cst.IndentedBlock) and _statements_to_move(ctx, block, stmt) == [stmt]


def log_line(ctx, call: cst.Call) -> bool:
    """A call that only logs: one TL202 recognizes as logging (a print, a logger's, a progress
    bar's; a tracker's given its step, which TL202 guards), whose arguments do nothing but make the
    values logged (_makes_values_only). Guarded, it logs less often and changes nothing else."""
    if not is_log_call(ctx, call):
        tracker = tracker_values(ctx, call)
        if tracker is None or not tracker.step:
            return False
    return all(_makes_values_only(ctx, arg.value) for arg in call.args)


# Calls that make a value and change nothing, as a log line's arguments make what it logs:
# conversions, formatting, the clock.
_PURE_CALLS = frozenset({"builtins.str", "builtins.repr", "builtins.float", "builtins.int", "builtins.bool",
                         "builtins.round", "builtins.abs", "builtins.len", "builtins.min", "builtins.max",
                         "builtins.sum", "builtins.format", "builtins.list", "builtins.tuple", "builtins.dict",
                         "builtins.sorted", "time.time", "time.perf_counter", "time.monotonic", "math.sqrt",
                         "math.exp", "math.log"})
# Methods of the same kind on other objects: a string's `format`, a scheduler's learning rate.
_PURE_METHODS = frozenset({"format", "get_last_lr"})


def _makes_values_only(ctx, expr: cst.BaseExpression) -> bool:
    """Evaluating expr has no effect but its value: every call in it is a host read of a tensor
    (`loss.item()`, `float(t)`), a tensor method or torch function that makes a new value
    (`grad.norm()`, `torch.stack(...)`), or one of _PURE_CALLS / _PURE_METHODS; no `:=`, no
    `await`. Another call (`next(it)`, `model(x)`, `meter.update(...)`) may do something that
    logging every N steps would skip."""
    for node in ctx.index.walk(expr):
        if isinstance(node, (cst.NamedExpr, cst.Await, cst.Yield)):
            return False
        if not isinstance(node, cst.Call) or host_read(ctx, node) is not None:
            continue
        qn = ctx.names.qualified(node.func)
        if qn is not None:
            if qn in _PURE_CALLS or (qn.startswith("torch.") and pure_tensor_method(qn.rsplit(".", 1)[-1])
                                     or qn in ("torch.stack", "torch.cat", "torch.linalg.norm")):
                continue
            return False
        func = node.func
        if not isinstance(func, cst.Attribute) or not (
                func.attr.value in _PURE_METHODS
                or (pure_tensor_method(func.attr.value) and ctx.tensors.is_tensor(func.value))):
            return False
    return True


def _reads_device_tensor(ctx, call: cst.Call) -> bool:
    """An argument of call reads a tensor that may be on the device on the host (TL201's finding)."""
    return any(isinstance(node, cst.Call) and (read := host_read(ctx, node)) is not None
               and not ctx.tensors.on_host(read[0]) for arg in call.args for node in ctx.index.walk(arg.value))


# At most this many statements after a guarded assignment move with it (the reads of its name).
_MAX_MOVED_READERS = 3


def _statements_to_move(ctx, block: cst.IndentedBlock, stmt: cst.SimpleStatementLine):
    """stmt and the statements right after it in block that read the names it binds (and, in turn,
    names those bind), when every other read of those names is among them; None when a read is
    elsewhere (earlier in the block, in another block, after the loop, in another function), a
    name is not a plain local (`self.m = ...`: read anywhere), or the reads are not the simple
    straight-line statements right after it."""
    body = list(block.body)
    start = next(i for i, s in enumerate(body) if s is stmt)
    scope = ctx.index.enclosing_function(stmt)
    end = start
    pending = _bound_names(stmt)
    if pending is None:
        return None
    done: set[str] = set()
    while pending:
        name = pending.pop()
        done.add(name)
        uses = variable_uses(ctx.index, scope, name)
        if uses is None:
            return None
        for use in uses:
            if use.kind not in ("read", "aug"):
                continue
            k = _position_in(ctx, block, use.node)
            if k is None or k < start:
                return None
            if k > end:
                end = k
        if end - start > _MAX_MOVED_READERS:
            return None
        for s in body[start + 1:end + 1]:
            # A compound statement among the readers (`if ...:` that reads the name) does not move.
            names = _bound_names(s) if isinstance(s, cst.SimpleStatementLine) else None
            if names is None:
                return None
            pending |= names - done
    moved = body[start:end + 1]
    for i, s in enumerate(moved):
        if not isinstance(s, cst.SimpleStatementLine) or has_flow_or_step(ctx, s):
            return None
        # Each statement that moves reads what an earlier one assigns: none is unrelated work.
        if i and not any(_reads_name(ctx, s, n) for n in done):
            return None
    if not all(_filled_only_here(ctx, scope, container, moved) for s in moved for container in _filled_containers(s)):
        return None
    return moved


# Methods that add to the object they are called on: a list, dict, set, deque or queue, or a
# running meter (pytorch/examples' `losses.update(loss.item(), images.size(0))`).
_FILLING_METHODS = frozenset({"append", "extend", "insert", "add", "update", "appendleft", "extendleft",
                              "setdefault", "put", "put_nowait", "__setitem__"})


def _filled_containers(stmt: cst.SimpleStatementLine) -> list[cst.BaseExpression]:
    """What the statement adds to (`losses` of `losses.append(...)`, `self` of
    `self.history["d"].append(...)`): the root of each filling method's receiver."""
    roots = []
    for node in walk(stmt):
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) \
                and node.func.attr.value in _FILLING_METHODS:
            root = node.func.value
            while isinstance(root, (cst.Attribute, cst.Subscript, cst.Call)):
                root = root.func if isinstance(root, cst.Call) else root.value
            roots.append(root)
    return roots


def _filled_only_here(ctx, scope, container: cst.BaseExpression, moved: list) -> bool:
    """A container filled by the moved statements is read nowhere else: filled every N steps, any
    other read (the mean after the loop, a window of the last N at an interval, `torch.cat` of
    predictions beside complete targets) would see every N-th value. Only a plain variable of this
    scope, made here, can tell (not a parameter, an attribute, or a module list a function fills)."""
    if not isinstance(container, cst.Name):
        return False
    uses = variable_uses(ctx.index, scope, container.value)
    if uses is None or (scope is not None and not any(use.kind == "assign" for use in uses)):
        return False
    for use in uses:
        if use.kind == "assign":
            continue
        if use.kind == "bind" or not any(ctx.index.contains(s, use.node) for s in moved):
            return False
    return True


def _position_in(ctx, block: cst.IndentedBlock, node: cst.CSTNode) -> int | None:
    """The index of the statement of block that holds node, None when block does not hold it."""
    child = node
    for anc in ctx.index.ancestors(node):
        if anc is block:
            return next(i for i, s in enumerate(block.body) if s is child)
        child = anc
    return None


def _bound_names(stmt: cst.SimpleStatementLine) -> set[str] | None:
    """Plain names the statement line binds; None when it binds something else (an attribute, an
    item, a star target) or leaves the block (`return`, `break`...)."""
    names: set[str] = set()
    for small in stmt.body:
        if isinstance(small, (cst.Return, cst.Break, cst.Continue, cst.Raise, cst.Global, cst.Nonlocal, cst.Del,
                              cst.Import, cst.ImportFrom)):
            return None
        for target in binding_targets(small):
            elements = target.elements if isinstance(target, (cst.Tuple, cst.List)) else [target]
            for element in elements:
                value = element.value if isinstance(element, cst.BaseElement) else element
                if isinstance(element, cst.StarredElement) or not isinstance(value, cst.Name):
                    return None
                names.add(value.value)
    for node in walk(stmt):
        if isinstance(node, cst.NamedExpr):
            if not isinstance(node.target, cst.Name):
                return None
            names.add(node.target.value)
    return names


def _reads_name(ctx, stmt: cst.CSTNode, name: str) -> bool:
    return any(isinstance(n, cst.Name) and n.value == name and is_variable(ctx.index, n)
               and role(ctx.index, n)[0] in ("read", "aug") for n in ctx.index.walk(stmt))


def has_flow_or_step(ctx, stmt: cst.CSTNode) -> bool:
    """The statement leaves the block or runs a training step: it cannot move under a guard."""
    for node in ctx.index.walk(stmt):
        if isinstance(node, (cst.Return, cst.Break, cst.Continue, cst.Raise, cst.Yield, cst.Await)):
            return True
        if isinstance(node, cst.Call) and node in ctx.loops.step_calls:
            return True
    return False
