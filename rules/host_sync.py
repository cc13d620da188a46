"""TL2xx: host-device synchronisation in the hot loop (seed article §5.2, §1.3)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import NamedTuple

import libcst as cst

from trainlint.analysis.distributed import one_line
from trainlint.analysis.loops import enumerate_counter, first_modulo, range_counter
from trainlint.analysis.names import dotted
from trainlint.analysis.tree import binding_targets, walk
from trainlint.analysis.tensors import pure_tensor_method
from trainlint.analysis.variables import in_scope_of, is_variable, names_a_value, role, variable_uses
from trainlint.diagnostics import Applicability
from trainlint.rule import NO_FIX, Invalid, Option, Rule, Valid, in_training_loop

_SYNC_METHODS = ("item", "cpu", "numpy", "tolist")
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
        return hook.counter if hook is not None else None
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
        return counter
    if outer is not None:
        return _incremented(ctx, [s for s in outer.body.body if not ctx.index.contains(s, node)])
    return _incremented(ctx, [loop.body])


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


def _waits_per_step(ctx, node: cst.CSTNode) -> bool:
    """A host read at node makes the host wait for the GPU on every step: it runs per step, and not
    in a closure handed to an L-BFGS step, which reads the closure's loss on the host itself at
    every evaluation (`float(closure())`, then a test of a gradient tensor): a read of its own
    there waits for nothing more; nor does one in a branch of a test that read a tensor already
    (_after_synced_test)."""
    if not ctx.is_per_step(node) or _after_synced_test(ctx, node):
        return False
    fn = ctx.index.enclosing_function(node)
    steps = ctx.loops.steps_handed(fn) if fn is not None else []
    return not steps or not all(_is_lbfgs(ctx, call.func.value) for call in steps)


def _after_synced_test(ctx, node: cst.CSTNode) -> bool:
    """node is in a branch of an `if` whose test already read a tensor on the host (`if
    loss.item() > 100:`, `if torch.isnan(loss):`): the test is the per-step wait (reported itself),
    and a read in the branch finds the GPU already waited for; the branch may also run only on the
    steps the value picks (a loss spike), where a guard on the step counter would hide it."""
    child = node
    for anc in ctx.index.ancestors(node):
        if isinstance(anc, (cst.FunctionDef, cst.Lambda, cst.ClassDef)) or anc in ctx.loops.hot_loops:
            return False
        if isinstance(anc, cst.If) and child is not anc.test and (
                _is_tensor_test(ctx, anc.test) or any(_host_read(ctx, c) for c in ctx.index.walk(anc.test)
                                                      if isinstance(c, cst.Call))):
            return True
        child = anc
    return False


def _host_read(ctx, call: cst.Call) -> tuple[cst.BaseExpression, str] | None:
    """(the tensor, how it is read) for `t.item()`, `t.cpu()`, `t.numpy()`, `t.tolist()`,
    `float(t)`, `int(t)`, `bool(t)`, `math.isnan(t)` (`isfinite`, `isinf`) of a tensor t; None for any other call. TL201 reports these; a test made
    of one has waited for the GPU already (_after_synced_test)."""
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value in _SYNC_METHODS and not call.args:
        if func.attr.value == "item" or ctx.tensors.is_tensor(func.value):
            return func.value, f"`.{func.attr.value}()`"
        return None
    qn = ctx.names.qualified(func)
    if qn in _CONVERSIONS and len(call.args) == 1 and not call.args[0].star and call.args[0].keyword is None \
            and ctx.tensors.is_tensor(call.args[0].value):
        return call.args[0].value, f"`{_CONVERSIONS[qn]}()`"
    return None


# Calls that turn their one argument into a Python number or bool: of a tensor, they read its value
# on the host. `bool(t)` is what `if t:` does; math's predicates call `float(t)` first.
_CONVERSIONS = {"builtins.float": "float", "builtins.int": "int", "builtins.bool": "bool",
                "math.isfinite": "math.isfinite", "math.isnan": "math.isnan", "math.isinf": "math.isinf"}


def _is_lbfgs(ctx, optimizer: cst.BaseExpression) -> bool:
    """An L-BFGS optimizer: assigned `torch.optim.LBFGS(...)` (in the function that steps it, or
    anywhere for an attribute), or named so (`self.lbfgs`)."""
    name = ctx.dotted(optimizer) or ""
    values = ctx.assigned_values(optimizer) or ("." in name and ctx.assigned_values(optimizer, anywhere=True)) or []
    return "lbfgs" in name.rsplit(".", 1)[-1].lower() or any(
        isinstance(v, cst.Call) and (ctx.names.qualified(v.func) or "").endswith(".LBFGS") for v in values)


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
            f"{guard.shown}, not written: the line runs in the `else` of `if {one_line(ctx.code(branch.test))}:`, "
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
    if call is not None and any(isinstance(n, cst.Call) and _is_log_call(ctx, n)
                                for line in body[last + 1:] for n in walk(line)):
        return call
    return None


def _open_print(ctx, line: cst.CSTNode) -> cst.Call | None:
    """line is a log call alone whose `end=` is not a string ending in a newline (the line it
    prints is ended by the next print); None otherwise."""
    if not (isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1 and isinstance(line.body[0], cst.Expr)
            and isinstance(line.body[0].value, cst.Call)):
        return None
    call = line.body[0].value
    end = ctx.keyword(call, "end")
    if end is None or not _is_log_call(ctx, call):
        return None
    value = ctx.literal(end.value)
    return None if isinstance(value, str) and value.endswith("\n") else call


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
            if in_scope_of(ctx, name, node):
                value = ctx.sources.value(name)
                interval = text
                known = isinstance(value, int) and not isinstance(value, bool) and value > 0
                break
        if not known:
            shown = f"`if {counter or 'step'} % {interval} == 0:`"
            why = f"not written: `{interval}` is not known to be a positive whole number"
            return _Guard(None, f"{shown}, {why}" if counter is not None else
                          f"{shown}, counting `step` where no counter of the loop was found; {why}")
    if counter is None:
        return _Guard(None, f"`if step % {interval} == 0:`, counting `step` where no counter of the loop was found")
    test = f"{counter} % {interval} == 0"
    return _Guard(test, f"`if {test}:`", interval)


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
    counters = {counter} | _incremented_all(ctx, region if region is not None else [loop.body])
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
    if ctx.tensors.is_tensor(modulo.left) or (isinstance(every, int) and every <= 1) \
            or not any(isinstance(n, (cst.Name, cst.Attribute)) and ctx.dotted(n) in counters
                       for n in ctx.index.walk(modulo.left)):
        return None
    interval = _outer_names(ctx, modulo.right)
    value = every if isinstance(every, int) else ctx.sources.value(modulo.right) \
        if isinstance(modulo.right, (cst.Name, cst.Attribute)) else None
    positive = isinstance(value, int) and not isinstance(value, bool) and value > 0
    kept = []
    for part in parts:
        if part is remainders[0]:
            kept.append(part)
        elif not _side_effect_free(ctx, part):
            return None
        elif _outer_names(ctx, part) & interval or not positive:
            # `args.log_every > 0`: what keeps the remainder from failing; any condition, when
            # the interval may not be a number (`args.wandb and step % log_every == 0`).
            kept.append(part)
    text = (ctx.dotted(modulo.right) or "") if isinstance(modulo.right, (cst.Name, cst.Attribute)) else ""
    if not (_INTERVAL_NAME.match(text.rsplit(".", 1)[-1].lstrip("_")) or _subscript_interval(ctx, modulo.right)
            or any(isinstance(c, cst.Call) and _is_log_call(ctx, c) for c in ctx.index.walk(guard.body))):
        return None
    every_code = one_line(ctx.code(modulo.right))
    reads = frozenset().union(*(_outer_names(ctx, p) for p in kept))
    if len(kept) == len(parts):
        return one_line(ctx.code(guard.test)), every_code, True, reads
    return " and ".join(one_line(ctx.code(p)) for p in kept), every_code, False, reads


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

def framework_logging(ctx, node: cst.CSTNode) -> str:
    """Advice to hand a tensor to the framework's logger in a step hook that has one (Lightning's
    `self.log`, which reads its values only when it writes the logs), as the last of the options
    a message lists; else ""."""
    hook = ctx.loops.step_hook(node)
    if hook is None or hook.log is None:
        return ""
    return (f", or pass the tensor itself to `{hook.log}(...)` (without `prog_bar=True`: the progress bar reads "
            f"it at every refresh, each batch by default)")


def _comments_only(stmt: cst.CSTNode) -> cst.CSTNode:
    """stmt as the first line moved into the top of an `if`'s body: without the blank lines above
    it, with the comment lines above it (`# report the loss`), which move with it. They were
    dropped: the statement's removal took them from where they were, and nothing put them back."""
    return stmt.with_changes(leading_lines=[line for line in stmt.leading_lines if line.comment is not None])


def guard_statement(rule: Rule, node: cst.CSTNode, default_interval: int):
    """Fix that puts the statement holding node under `if <counter> % <interval> == 0:`.

    A statement that assigns a name moves only when nothing outside the guard reads that name
    afterwards (`m = torch.cuda.memory_allocated()` followed by `stats.append(m)` would leave the
    append reading a stale value, or an unbound one): the statements right after it that read it
    move too, when that is simple; otherwise there is no fix. Nor is there one when a statement
    that would move fills a container read elsewhere (_filled_only_here)."""
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
    above = _logging_run(ctx, body[:at][::-1])[::-1]
    below = _logging_run(ctx, body[end + 1:])
    for run, before in ((above, True), (below, False)):
        index = at - len(run) - 1 if before else end + len(run) + 1
        neighbour = body[index] if 0 <= index < len(body) else None
        if isinstance(neighbour, cst.If) and neighbour.orelse is None and isinstance(neighbour.body, cst.IndentedBlock) \
                and one_line(ctx.code(neighbour.test)) == test:
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
        return rule.fix(Applicability.UNSAFE, f"Run it every `{interval}` steps (`if ... and {test}:`)",
                        (outer.test, cst.BooleanOperation(left=joined, operator=cst.And(),
                                                          right=cst.parse_expression(test))))
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
        message = message.replace(" (`if", f", with the {count} per-step logging line{'s' if count > 1 else ''} "
                                           f"beside it (`if", 1)
    # The statements after the first move into the guard: each is removed where it stood.
    return rule.fix(Applicability.UNSAFE, message, (first, guarded), *((s, "") for s in group[1:]))


# Conditions an interval test joins with `and` as they are: no operator of theirs binds more
# loosely than `and` (not `a or b`, `x if c else y`, a lambda or `:=` without parentheses).
_JOINABLE_TESTS = (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.Comparison, cst.UnaryOperation,
                   cst.BooleanOperation)


def _logging_run(ctx, statements) -> list:
    """The statements at the start of `statements` that each log a tensor in one call and do
    nothing else (`print(f"loss {loss:.3f}")`, `pbar.set_postfix(loss=loss)`, a tracker's call
    given its step): TL202 guards each with the same test, so a guard joining an `if` past them
    takes them along. A line with a comment that suppresses a finding (`# noqa`) ends the run."""
    run = []
    for stmt in statements:
        if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Expr)
                and isinstance(stmt.body[0].value, cst.Call)) or "noqa" in ctx.code(stmt).lower():
            break
        call = stmt.body[0].value
        tracker = _tracker_values(ctx, call) if not _is_log_call(ctx, call) else None
        if tracker is not None:
            logged = tracker.step and any(_device_tensor(ctx, v) for v in tracker.values)
        else:
            logged = _is_log_call(ctx, call) and any(True for arg in call.args for _ in _formatted_tensors(ctx, arg.value))
        # TL201 guards a log line that reads a tensor with `.item()` the same way (_log_line).
        if not logged and not (_log_line(ctx, call) and _reads_device_tensor(ctx, call)):
            break
        run.append(stmt)
    return run


def _log_line(ctx, call: cst.Call) -> bool:
    """A call that only logs: one TL202 recognizes as logging (a print, a logger's, a progress
    bar's; a tracker's given its step, which TL202 guards), whose arguments do nothing but make the
    values logged (_makes_values_only). Guarded, it logs less often and changes nothing else."""
    if not _is_log_call(ctx, call):
        tracker = _tracker_values(ctx, call)
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
        if not isinstance(node, cst.Call) or _host_read(ctx, node) is not None:
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
    return any(isinstance(node, cst.Call) and (read := _host_read(ctx, node)) is not None
               and not ctx.tensors.on_host(read[0]) for arg in call.args for node in ctx.index.walk(arg.value))


def _log_line_read(ctx, read: cst.Call) -> bool:
    """read is in the arguments of a call that is a whole statement of its own, its value unused,
    and only logs (_log_line): `print("loss", loss.item())`, `writer.add_scalar("loss",
    loss.item(), step)`. TL201 guards that statement as TL202 guards one that formats the tensor."""
    stmt = ctx.index.enclosing(read, cst.SimpleStatementLine)
    if stmt is None or len(stmt.body) != 1 or not isinstance(stmt.body[0], cst.Expr) \
            or not isinstance(stmt.body[0].value, cst.Call):
        return False
    call = stmt.body[0].value
    return any(ctx.index.contains(arg, read) for arg in call.args) and _log_line(ctx, call)


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
        if not isinstance(s, cst.SimpleStatementLine) or _has_flow_or_step(ctx, s):
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


def _has_flow_or_step(ctx, stmt: cst.CSTNode) -> bool:
    """The statement leaves the block or runs a training step: it cannot move under a guard."""
    for node in ctx.index.walk(stmt):
        if isinstance(node, (cst.Return, cst.Break, cst.Continue, cst.Raise, cst.Yield, cst.Await)):
            return True
        if isinstance(node, cst.Call) and node in ctx.loops.step_calls:
            return True
    return False


def _with_total(code: str, init: str = "total = 0.0") -> str:
    """A rule case with an accumulator initialised before its loop."""
    return code.replace("import torch\n", f"import torch\n{init}\n", 1)


_BF16_TOTAL = "model = model.to(torch.bfloat16)\ntotal = 0.0"


# The BERT-era loop: the running loss is kept, logged as a difference at the interval and returned.
_RUN_GLUE = """import torch
def train(loader):
    global_step, tr_loss, logging_loss = 0, 0.0, 0.0
    for x, y in loader:
        loss = model(x, y)
        loss.backward()
        opt.step()
        tr_loss += loss.{read}
        global_step += 1
        if global_step % 50 == 0:
            writer.add_scalar("loss", ({tr_loss} - logging_loss) / 50, global_step)
            logging_loss = {tr_loss}
    return global_step, {tr_loss} / global_step
"""


def in_accumulation_step(body: str, counter: str = "global_step += 1\n") -> str:
    """A rule case: gradient accumulation, with `body` in the branch that steps the optimizer
    (once per optimizer step, every training step), after `counter`."""
    inner = (counter + body).replace("\n", "\n        ").rstrip(" ")
    return ("import torch\nfor i, (x, y) in enumerate(loader):\n    (model(x, y) / accum).backward()\n"
            "    if (i + 1) % accum == 0:\n        opt.step()\n        opt.zero_grad()\n        " + inner + "\n")


_TQDM_LOOP = ("for it in {iter}:\n    loss = model(*next(batches))\n    loss.backward()\n    opt.step()\n"
              "    print(f'loss {{loss:.4f}}')\n")
# Gradient accumulation whose other micro-batches leave the loop body from an `else:`.
_ELSE_CONTINUE = ("import torch\nfor i, (x, y) in enumerate(loader):\n    loss = model(x, y) / accum\n    loss.backward()\n"
                  "    if (i + 1) % accum == 0:\n        opt.step()\n{counter}    else:\n        continue\n"
                  "    print(f'loss {{loss:.4f}}')\n")


# accelerate's gradient accumulation: the optimizer steps every micro-batch inside `accumulate`,
# and accelerate skips all but the last.
_ACCUMULATE = """import torch
from accelerate import Accelerator
accelerator = Accelerator(gradient_accumulation_steps=4)
for step, batch in enumerate(loader):
    with accelerator.accumulate(model):
        loss = model(**batch).loss
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
    if {guard}:
        completed_steps += 1
        progress_bar.set_postfix(loss=loss.item())
"""
# A method of a framework's class, with a host read in it.
_HOOK = """import torch
import lightning as L
import transformers
class M({base}):
    def {hook}(self, batch, batch_idx):
        loss, acc = self.model(batch)
        self.history.append({read})
        return loss
"""
# A loader's batch arrives on the host: the loop moves its tensors to the device itself.
_HOST_BATCH = """import numpy as np
import torch
for step, batch in enumerate(loader):
    x = batch["x"].cuda(non_blocking=True)
    y = batch["y"]
    {read}
    loss = model(x, y.cuda(non_blocking=True))
    loss.backward()
    opt.step()
"""
_COLLATE_TO_DEVICE = """import torch
from torch.utils.data import DataLoader
def collate(samples):
    x = torch.stack([s[0] for s in samples])
    ids = torch.tensor([s[1] for s in samples])
    return x.to("cuda"), ids.to("cuda")
train_loader = DataLoader(ds, batch_size=8, collate_fn={collate})
for ids, x in train_loader:
    seen.update(ids.tolist())
    loss = model(x.cuda(non_blocking=True))
    loss.backward()
    opt.step()
"""
# A closure handed to the optimizer's step, which calls it (L-BFGS up to `max_iter` times per step).
_CLOSURE = """import torch
def fit(model, x, y, iters=5):
    opt = torch.optim.{optimizer}(model.parameters(), lr=0.1)
    history = []
    def closure():
        opt.zero_grad()
        loss = model(x, y)
        loss.backward()
        {read}
        return loss
    for it in range(iters):
        opt.step({closure})
    return history
"""
# A step function the loop calls through another name: `{bind}` binds `step_fn` (or, in a
# class, `self.step_fn`), `{call}` calls it with the batch.
_STEP_ALIAS = """import functools
import torch
def train_step(model, opt, x, y):
    loss = model(x, y)
    loss.backward()
    opt.step()
    history.append(loss.item())
    return loss
def make_train_step(model, opt):
    def step(x, y):
        loss = model(x, y)
        loss.backward()
        opt.step()
        history.append(loss.item())
        return loss
    return step
def evaluate(model, opt, x, y):
    return model(x, y)
def run(model, opt, loader):
    {bind}
    for x, y in loader:
        {call}
"""
_STEP_METHOD_ALIAS = """import torch
class Trainer:
    def __init__(self, model, opt):
        self.model, self.opt = model, opt
        self.step_fn = {bound}
    def train_step(self, x, y):
        loss = self.model(x, y)
        loss.backward()
        self.opt.step()
        self.history.append(loss.item())
    def fit(self, loader):
        for x, y in loader:
            self.step_fn(x, y)
"""
_NO_FIX_SHOWN_NAME = _with_total(in_training_loop("total += loss.item()")) + "print(f'{total=}')\n"
_NO_FIX_PER_STEP_READ = _with_total(in_training_loop("total += loss.item()\npbar.set_postfix(avg=total / (step + 1))"))
_NO_FIX_COUNT = _with_total(in_training_loop("correct += (model(x).argmax(-1) == y).sum().item()"), "correct = 0") \
    + "print(correct)\n"


# TL201's logging interval where the script has none (it has no option for it).


_WRITER = "from torch.utils.tensorboard import SummaryWriter\nwriter = SummaryWriter()\n"
# A file that builds a ReduceLROnPlateau and steps it in the loop (`step`, indented for the inner loop).
_PLATEAU_CASE = ("import torch\nfrom torch.optim.lr_scheduler import ReduceLROnPlateau\nsched = ReduceLROnPlateau(opt)\n"
                 "for epoch in range(3):\n    for step, (x, y) in enumerate(loader):\n        loss = model(x, y)\n"
                 "        loss.backward()\n        opt.step()\n        {step}\n")


# A module class of the file (Tensors._module_classes).
_MODULE_NET = "import torch\nfrom torch import nn\nclass Net(nn.Module):\n    pass\n"


class PerStepHostSync(Rule):
    code = "TL201"
    name = "per-step-host-sync"
    summary = "`.item()`, `.cpu()`, `.numpy()`, `.tolist()`, `float(t)`, `int(t)`, `bool(t)` of a tensor on every step"
    source = "§5.2, §1.3"
    fix_applicability = "unsafe"
    triggers = (".item(", ".cpu(", ".numpy(", ".tolist(", "float(", "int(", "bool(", "isfinite(", "isnan(", "isinf(",
                ".get_scale(", ".step(")
    needs_hot_loop = True
    # TL202's option too: a line TL201 guards may share its `if` with the logging lines TL202 guards.
    options = {"log-every": Option(100, int, "The interval the fix and the advice use when the script defines none.",
                                   minimum=1)}
    docs = """
## What it does
Flags reads of a tensor's value on the host (`.item()`, `.cpu()`, `.numpy()`, `.tolist()`,
`float(t)`, `int(t)`, `bool(t)`, `math.isfinite(t)` / `math.isnan(t)` / `math.isinf(t)` (which
call `float(t)`), also as an `if` test, where TL204 does not report them again; a GradScaler's
`get_scale()`, which is `.item()` of its scale; and a tensor handed to the `step()` of a
scheduler built as `torch.optim.lr_scheduler.ReduceLROnPlateau(...)` in the file, which reads
its metric with `float()`) that run on every step of the hot loop. Under gradient accumulation the
branch that steps the optimizer (`if (i + 1) % accum == 0: opt.step(); ...`, or accelerate's
`if accelerator.sync_gradients:`) runs on every training step too; a logging interval inside it
limits what it guards, and so does the `else:` of a test that is false every N steps
(`if step % log_every: ... else:`, `if step % n != 0: ... else:`, `if (step + 1) % n > 0: ...
else:`); the body of such a test runs on all steps but one in N and counts as every step (no fix
puts an interval inside it: `if step % 100 == 0:` under `if step % log_every:` could hold on no
step), and so does what follows `if step % n == 0: continue` (it leaves on one step in N; `if
step % n != 0: continue` leaves on the others, and what follows is limited). So do the hooks a framework calls on every step, where the loop is the
framework's: a LightningModule's `training_step`, a Lightning callback's `on_train_batch_end`, a
transformers or trl Trainer's `compute_loss` or `training_step`, a TrainerCallback's
`on_step_end` (found through base classes the module imports). Code under a test of a few steps
(`if step == 0:`, or steps named one by one: `if step in {1, 10, 100}:`) does not run on every
step. A function handed to the optimizer's step as its closure (`opt.step(closure)`) runs on every
step; but in a closure handed to L-BFGS, whose step reads the closure's loss on the host at every
evaluation (`float(closure())`), a read of its own waits for nothing more and is not flagged (nor
by TL202 and TL204). The same reading of "every step" holds for TL202, TL203 and TL204. The
advice names the guard the fix writes (also in TL202 and TL203): the interval test the loop
already makes of its counter (its `if` whose interval is named as a logging one, else the first
whose body logs), as the script writes it (`if args.log_every > 0 and step %
args.log_every == 0:`, `if i % 4 == 3:`, `if step % int(log_interval) == 0:`; a condition of
it that is not about the interval, such as `rank == 0`, is left out when the interval is known
to be a positive whole number, else the whole test is kept: `args.wandb and step % log_every ==
0` may guard an interval that is None; when the loop sets a name the test reads between the
line and the test, such as `global_step += 1`, the line moves into that `if` past such plain
assignments, else the named interval below is used when it reads no such name, else there is
no fix); else the loop's own
counter (the `enumerate` index, also of `tqdm(enumerate(loader))`, `it` of `for it in
range(n)`, a name it increments by 1, never a tensor: `step_t += 1` of a device tensor is no
counter; of a micro-batch loop that steps no optimizer, nanoGPT's `for micro_step in
range(accum):`, the counter of the loop around it that does) and the script's logging interval (`if it % args.log_interval == 0:`), with `step`
standing for a counter not found. In a hook, the advice and the fixes use the framework's own step
counter and logging interval: `self.global_step % self.trainer.log_every_n_steps` in a
LightningModule, `trainer.global_step % trainer.log_every_n_steps` in a Lightning callback,
`state.global_step % state.logging_steps` in a TrainerCallback (the Trainer's `self.state` in a
Trainer subclass); and in Lightning they mention `self.log(...)`, which keeps a tensor on the
device until the logger writes (with `prog_bar=True` the progress bar reads it at every refresh,
each batch by default). Lightning's and the Trainer's counters count optimizer steps: under gradient accumulation a
guard on them is true on every micro-batch of each N-th step.

A value known to be in host memory is not flagged, as reading it waits for no GPU: a numpy
value, a tensor made without `device=` (`torch.randint(0, 10, (1,))`, also through a name, and
one made before the loop that the loop never changes or only adds host values to: `counts +=
torch.bincount(y)` (or `counts.add_(...)`) of the labels before they are moved; not one it moves, adds a device tensor
to, changes in place or hands to a function), what
`.cpu()` copied (the `.cpu()` is the finding), and a tensor of a batch that arrives on the host,
read before the loop moves it (`batch["ids"].tolist()`, `y.numpy()` after `y = batch["y"]`, and
what indexing, arithmetic, a dtype conversion or a torch function given only host tensors
(`torch.bincount(y)`) makes of it; also as what a loop or comprehension
goes over, `for v in y.tolist():`, and the elements it takes from one, `[v.item() for v in y]`). A batch counts as arriving on the
host only when the loop takes it from a loader (`for batch in loader`) and copies some of its
tensors to the device itself (`batch["x"].cuda()`), no DataLoader of the file that feeds the loop
makes its batches on the device (in its collate_fn or dataset), and the loop does not iterate a
loader that accelerate or Fabric prepared. A read after the batch is moved is flagged
(`batch = batch.to(device)`, `batch = {k: v.to(device) ...}`, `batch.to(device)` of a
BatchEncoding, a helper handed the batch), as is `x.numpy()` of any other value.

A read in a branch of a test that already read the tensor (`if loss.item() > 100:`, `if
torch.isnan(loss):`) is not reported: the test is the wait. The guard a fix writes is the loop's
own interval test, or reads the loop's counter (also through `trange(n)` / `tqdm(range(n))`) and
the script's interval, and joins an `if` with the same test right above or below (with the
per-step logging lines between them, which it would guard the same way; without such an `if`,
the per-step logging lines right beside it go under the one new `if`), or the `if` that holds
only the line and those (`if torch.cuda.is_available() and step % 100 == 0:`); a loop with no counter
is told to keep one. A running sum written out (`s = s + loss.item()`) is advised like `s +=`
(accumulate the detached tensor), without a fix. ReduceLROnPlateau's step is reported without a
fix: stepping it less often changes when its patience runs out.

## Why is this bad?
A read of a device tensor waits until every queued kernel has finished: the host stops feeding
the GPU, and the GPU idles while the host catches up. Once per step, this serialises the loop.

## Example
```python
for x, y in loader:
    loss = model(x, y)
    loss.backward()
    opt.step()
    total += loss.item()
```

## Use instead
```python
    total += loss.detach()          # stays on the device
...
if step % log_every == 0:
    print(total.item() / n)          # one sync per interval
```

## Fix safety
Unsafe: `total += loss.item()` (or `float(loss)`, also times or divided by a number; not
`int()`, `bool()` or math's predicates, which add a truncated value, a 0 or a 1:
`loss.item() * x.size(0)`) becomes `total += loss.detach()`, so `total`
becomes a tensor and its conversion moves to where it is read: every read of `total` (formatted,
logged, compared, stored, returned or passed on) becomes `float(total)`, the number it was, so
nothing downstream sees a tensor (`logging_loss = float(tr_loss)`, `return float(total) / n`).
The sum is kept in float32 on the device rather than a Python float; in a file that trains in
lower precision (autocast, a half or bfloat16 model) the fix writes `loss.detach().float()`, as
a bfloat16 sum loses most of its value over an epoch. There is no fix when a
read would still sync on every step: `total` is read per step (a running average in the progress
bar); or when a read cannot be seen or converted: it is an attribute or an item
(`self.total`, `stats["n"]`: read elsewhere) or not initialised with a number literal
(`total = 0.0`; resets to a literal in the loop are fine, though a read that sees an integer
literal itself, as after `total = 0` when the loop never ran, prints `0.0`); or it may hold an integer
(`correct += (pred == y).sum().item()` from `correct = 0`: `float()` would print `42.0`); or it is
printed with its own name (`f"{total=}"` would print `float(total)=`).
Unsafe too: a statement that only logs what the read gives (`print("loss", loss.item())`,
`logger.info("l=%f", loss.item())`, `pbar.set_postfix(loss=loss.item())`,
`writer.add_scalar("loss", loss.item(), step)`): a call TL202 counts as logging (a tracker's
only when given its step), standing alone with its value unused, whose arguments call nothing
but host reads, tensor methods and torch functions that make a value, conversions (`str`,
`round`), `format`, the clock or `get_last_lr()`. It is put under the guard TL202 would write for
it, joining the same `if`s and the per-step logging lines beside it (a `print(f"loss
{loss:.3f}")` and a `print("grad", g.norm().item())` in a row end under one `if`), and left
alone where TL202 writes none (under `if step % log_every:`, in the branch that steps the
optimizer without a counter of its own, in the `else:`/`elif` of the loop's own interval test,
beside a print that ends its line elsewhere); fewer lines are logged.
Other shapes get a suggestion only (shown, never written): put the statement under the loop's own
interval test, else the script's logging interval (a name such as `log_every`,
`args.log_interval` or `PRINT_FREQ` whose value is known to be a positive whole number: a
literal, an option's default; none for one that is not known, as `step % 0` and `step % "2"`
raise), else 100; an
assignment moves only together with the statements right after it that read the name, and not at
all when the name is read anywhere else (the read would be stale). A statement that fills a list,
dict, set or meter (`losses.append(loss.item())`, `meter.update(loss.item(), n)`) gets no
suggestion when the container is read anywhere else, or may be (a parameter, an attribute such as
`self.history`, a module variable): filled every N steps it would hold every N-th value (the mean
of every tenth loss, predictions shorter than their targets).
"""
    valid = [
        # The interval written as an expression (a conditional, `and`).
        Valid(in_training_loop("v = loss.item() if step % 5 == 0 else None")),
        Valid(in_training_loop("if step % 100 == 0:\n    print(loss.item())")),
        # A few steps of the run, written out: like `step == 0`.
        Valid(in_training_loop("if step in {1, 10, 100}:\n    print('milestone', loss.item())")),
        Valid(in_training_loop("total += loss.detach()")),
        Valid("import torch\nwith torch.no_grad():\n    for x, y in val_loader:\n        acc += (model(x) == y).sum().item()\n"),
        Valid(in_training_loop("pass") + "print(loss.item())\n"),
        Valid(in_training_loop("n = int(args.steps)")),
        Valid(in_training_loop("should_log = step % 10 == 0\nif should_log:\n    print(loss.item())")),
        Valid("import torch\nscaler = torch.amp.GradScaler()\n" + in_training_loop(
            "if step % 100 == 0:\n    print(scaler.get_scale())").partition("\n")[2]),
        # The else of `step % n` (or of `step % n != 0`, or `not should_log`) runs every n steps.
        Valid(in_training_loop("if step % 100:\n    pass\nelse:\n    print(loss.item())")),
        Valid(in_training_loop("if step % 100 != 0:\n    continue\nelif rank == 0:\n    print(loss.item())")),
        # A tensor made on the CPU (no device=) reads no GPU (diffusers' random roll amount).
        Valid(in_training_loop("shift = torch.randint(8, (1,), generator=g).item()")),
        # Under the logging interval inside the branch that steps the optimizer.
        Valid(in_accumulation_step("if global_step % 50 == 0:\n    print(loss.item())")),
        # In a branch of a test that read the tensor already (reported itself, as TL201 or TL204):
        # the GPU was waited for, and the branch runs on the steps the value picks (a loss spike),
        # which a guard on the step counter would hide.
        Valid(in_training_loop("if torch.isnan(loss):\n    print(f'nan at {step}: {x.sum().item()}')")),
        Valid(in_training_loop("if loss > 100:\n    spikes.append(loss.item())\nelse:\n    last = float(loss)")),
        Valid(_ACCUMULATE.format(guard="accelerator.sync_gradients and completed_steps % 50 == 0")),
        # Not a per-step hook: evaluation, or a class no framework calls.
        Valid(_HOOK.format(base="L.LightningModule", hook="validation_step", read="acc.item()")),
        Valid(_HOOK.format(base="object", hook="training_step", read="acc.item()")),
        # Values in host memory: the tensors of a batch the loop moves to the device itself, read
        # before it does; numpy values; tensors made without a device (a user's script).
        Valid(_HOST_BATCH.format(read='ids = batch["ids"].tolist()')),
        Valid(_HOST_BATCH.format(read="labels_cpu = y.numpy()")),
        Valid(_HOST_BATCH.format(read="n_labels = int((y != -100).sum())")),
        Valid(_HOST_BATCH.format(read="order = np.argsort(np.random.rand(8)).tolist()")),
        Valid(_HOST_BATCH.format(read="scale = np.random.rand(1).item()")),
        Valid(_HOST_BATCH.format(read="k = int(torch.randint(0, 10, (1,)).item())")),
        Valid(_HOST_BATCH.format(read="perm = torch.randperm(8)\n    first = perm[:2].tolist()")),
        # ... and what a torch function makes of host tensors alone.
        Valid(_HOST_BATCH.format(read="counts = torch.bincount(y, minlength=3).tolist()")),
        # ... and a tensor made on the host before the loop that the loop only adds host values to
        # (a class histogram of the CPU labels), or never changes.
        Valid(_HOST_BATCH.format(read="counts += torch.bincount(y, minlength=3)\n    frac = (counts / counts.sum()).tolist()")
              .replace("import torch\n", "import torch\ncounts = torch.zeros(3)\n")),
        # ... also when the adding is written as the in-place method (`counts.add_(...)` was taken for
        # a change that may move it, and reported).
        Valid(_HOST_BATCH.format(read="counts.add_(torch.bincount(y, minlength=3))\n    frac = (counts / counts.sum()).tolist()")
              .replace("import torch\n", "import torch\ncounts = torch.zeros(3)\n")),
        Valid(_HOST_BATCH.format(read="print(int(seen))").replace("import torch\n", "import torch\nseen = torch.zeros(())\n")),
        # ... also as the iterable of a loop or a comprehension (evaluated where it stands), and the
        # elements of such a value.
        Valid(_HOST_BATCH.format(read="for v in y.tolist():\n        seen.append(v)")),
        Valid(_HOST_BATCH.format(read="doubled = [v * 2 for v in y.tolist()]")),
        Valid(_HOST_BATCH.format(read="top = max(v for v in y.numpy())")),
        Valid(_HOST_BATCH.format(read="by_pos = {k: v for k, v in enumerate(y.tolist())}")),
        Valid(_HOST_BATCH.format(read="vals = [v.item() for v in y]")),
        Valid(_HOST_BATCH.format(read="for v in y:\n        seen.append(v.item())")),
        Valid("import torch\nfor ids, x in loader:\n    seen.update(ids.tolist())\n"
              "    loss = model(x.cuda(non_blocking=True))\n    loss.backward()\n    opt.step()\n"),
        Valid("import torch\nfor batch in loader:\n    x, y = batch\n    x = x.cuda(non_blocking=True)\n"
              "    labels = y.numpy()\n    loss = model(x, y.cuda())\n    loss.backward()\n    opt.step()\n"),
        # L-BFGS reads the closure's loss on the host at every evaluation (`float(closure())`):
        # a read of its own there waits for nothing more.
        Valid(_CLOSURE.format(optimizer="LBFGS", read="history.append(loss.item())", closure="closure")),
        # A DataLoader of the file whose collate_fn leaves the batches on the CPU.
        Valid(_COLLATE_TO_DEVICE.replace('x.to("cuda"), ids.to("cuda")', "x, ids").format(collate="collate")),
        # A name bound to the step function and to something else (another function, what an
        # unknown call returns, a loop's values): which one the loop calls is not known.
        Valid(_STEP_ALIAS.format(bind="step_fn = train_step if training else evaluate",
                                 call="step_fn(model, opt, x, y)")),
        Valid(_STEP_ALIAS.format(bind="step_fn = train_step\n    if not training:\n        step_fn = evaluate",
                                 call="step_fn(model, opt, x, y)")),
        Valid(_STEP_ALIAS.format(bind="step_fn = train_step\n    step_fn = hooks.wrap(step_fn)",
                                 call="step_fn(model, opt, x, y)")),
        Valid(_STEP_ALIAS.format(bind="for step_fn in (train_step, evaluate):\n        pass",
                                 call="step_fn(model, opt, x, y)")),
        Valid(_STEP_METHOD_ALIAS.format(bound="torch.compile(self.train_step)").replace(
            "    def fit(", "    def set_eval(self):\n        self.step_fn = self.model\n    def fit(")),
        # `bool()` and math's predicates of a Python float, outside the loop, or under the logging
        # interval read no tensor on every step.
        Valid(in_training_loop("if step % 100 == 0:\n    lossf = loss.item()\nok = math.isfinite(lossf)\nbig = bool(lossf > 10)")),
        Valid(in_training_loop("ok = math.isfinite(args.lr) and bool(args.lr)")),
        Valid(in_training_loop("pass") + "if math.isnan(loss) or not bool(loss < 10):\n    print('diverged')\n"),
        Valid(in_training_loop("if step % 100 == 0:\n    assert math.isfinite(loss)\n    flags.append(bool(loss > 1))")),
        # ReduceLROnPlateau given a number, stepped per epoch or at the interval; another scheduler.
        Valid(_PLATEAU_CASE.format(step="if step % 100 == 0:\n            sched.step(loss.detach().item())")),
        Valid(_PLATEAU_CASE.format(step="pass") + "    sched.step(loss)\n"),
        Valid(_PLATEAU_CASE.format(step="sched.step(best_val)").replace("ReduceLROnPlateau(opt)", "ReduceLROnPlateau(opt)\nbest_val = 0.5")),
        Valid(_PLATEAU_CASE.format(step="sched.step(loss)").replace("ReduceLROnPlateau(opt)", "StepLR(opt, 10)")),
    ]
    invalid = [
        # A parameter of a module of the file moved to the device (the loop target of a for over
        # `model.parameters()`, `self.model.fc.weight`) is a tensor there: its per-step read was
        # not reported, parameters not being known as tensors.
        Invalid(_MODULE_NET + "model = Net()\nmodel = model.cuda()\n" + in_training_loop(
            "for p in model.parameters():\n    norms.append(p.tolist())"), fixed=NO_FIX,
                message="`.tolist()` waits for the GPU"),
        # `bool(t)` and `math.isnan(t)` (`isfinite`, `isinf`: they call `float(t)`) read the tensor
        # on the host as `float(t)` does (they were not reported); in an `if` too, as `if
        # float(loss) > 9:` is TL201's (TL204 does not report them again); no accumulate fix: they
        # add 0 or 1, not the value.
        Invalid(in_training_loop("flags.append(bool(loss > 1))"), fixed=NO_FIX, message="`bool()` waits for the GPU"),
        Invalid(in_training_loop("if bool(loss > 100):\n    print('spike')"), fixed=NO_FIX, message="`bool()` waits"),
        Invalid(in_training_loop("ok = math.isfinite(loss)").replace("import torch\n", "import math\nimport torch\n"),
                fixed=NO_FIX, message="`torch.isfinite(loss)` tests it on the device"),
        Invalid(in_training_loop("if math.isnan(loss):\n    raise RuntimeError('nan')").replace(
            "import torch\n", "import math\nimport torch\n"), fixed=NO_FIX, message="`math.isnan()` waits"),
        Invalid(in_training_loop("from math import isinf\nbad = isinf(loss)"), fixed=NO_FIX, message="`math.isinf()`"),
        Invalid(_with_total(in_training_loop("total += bool(loss > 1)")) + "print(total)\n", fixed=NO_FIX),
        # ReduceLROnPlateau's step reads its metric with `float()` (a tensor metric was not reported).
        Invalid(_PLATEAU_CASE.format(step="sched.step(loss)"), fixed=NO_FIX, message="ReduceLROnPlateau reads the metric"),
        Invalid(_PLATEAU_CASE.format(step="sched.step(metrics=loss.detach())").replace(
            "from torch.optim.lr_scheduler import ReduceLROnPlateau\n", "import torch.optim.lr_scheduler as ls\n").replace(
            "= ReduceLROnPlateau(", "= ls.ReduceLROnPlateau("), fixed=NO_FIX, message="not fixed: stepping less often"),
        # A loop with no step counter: the advice says to keep one, rather than name one it lacks.
        Invalid("import torch\nfor x, y in loader:\n    loss = model(x, y)\n    loss.backward()\n    opt.step()\n"
                "    losses.append(loss.item())\n", message="counting `step` where no counter of the loop was found"),
        # After `if step % n == 0: continue` the loop runs on all steps but one in N: reported,
        # with no "every N steps" suggestion (it would hold on no step there).
        Invalid(in_training_loop("if step % 10 == 0:\n    continue\nprint(loss.item())"), fixed=NO_FIX,
                message="`.item()` waits for the GPU on every step"),
        # GradScaler.get_scale() is `.item()` of the scale: the "was the step skipped?" idiom.
        Invalid("import torch\nscaler = torch.amp.GradScaler()\n" + in_training_loop(
            "before = scaler.get_scale()").partition("\n")[2], fixed=NO_FIX,
                message="`scaler.get_scale()` reads the loss scale from the GPU"),
        # The reads of the accumulator are converted where they are: it prints a number, not `tensor(...)`.
        Invalid(_with_total(in_training_loop("total += loss.item()")) + "print('mean', total / 100)\n",
                fixed=_with_total(in_training_loop("total += loss.detach()")) + "print('mean', float(total) / 100)\n"),
        # Weighted by the batch size (the tutorials' epoch loss): the read inside the product.
        Invalid(_with_total(in_training_loop("total += loss.item() * x.size(0)")) + "print('mean', total / 100)\n",
                fixed=_with_total(in_training_loop("total += loss.detach() * x.size(0)"))
                + "print('mean', float(total) / 100)\n"),
        Invalid(_with_total(in_training_loop("total += float(loss) * len(y) / n")) + "print('mean', total / 100)\n",
                fixed=_with_total(in_training_loop("total += loss.detach() * len(y) / n"))
                + "print('mean', float(total) / 100)\n"),
        # ... not a product with another tensor (`loss.item() * w` with `w` a tensor): no fix.
        Invalid(_with_total(in_training_loop("total += loss.item() * weights.sum()")) + "print(total)\n", fixed=NO_FIX),
        # Training in bfloat16: the sum is kept in float32.
        Invalid(_with_total(in_training_loop("total += loss.item()"), _BF16_TOTAL) + "print('mean', total / 100)\n",
                fixed=_with_total(in_training_loop("total += loss.detach().float()"), _BF16_TOTAL)
                + "print('mean', float(total) / 100)\n"),
        Invalid(in_training_loop("losses.append(loss.item())"), fixed=NO_FIX),
        # A running sum written out is one too (it was told to read under the interval, which
        # would drop terms from the sum).
        Invalid(_with_total(in_training_loop("total = total + loss.item()")) + "print(total)\n", fixed=NO_FIX,
                message="accumulate with `total = total + loss.detach()`"),
        # All but a few steps, or steps of a collection of unknown size: a line that only logs is
        # guarded as TL202 guards `print(f"{loss}")` there, joining the `if` that holds only it
        # (it was a suggestion only).
        Invalid(in_training_loop("if step not in {1, 10, 100}:\n    print(loss.item())"),
                fixed=in_training_loop("if step not in {1, 10, 100} and step % 100 == 0:\n    print(loss.item())")),
        Invalid(in_training_loop("if step in milestones:\n    print(loss.item())"),
                fixed=in_training_loop("if step in milestones and step % 100 == 0:\n    print(loss.item())")),
        # A closure the optimizer's step calls runs on every step.
        Invalid(_CLOSURE.format(optimizer="SGD", read="history.append(loss.item())", closure="closure"), fixed=NO_FIX),
        Invalid(_CLOSURE.format(optimizer="Adam", read="history.append(float(loss))", closure="closure=closure"),
                fixed=NO_FIX),
        # A remainder that holds on all steps but one in N: only its `else:` is limited.
        Invalid(in_training_loop("if step % log_every:\n    print(loss.item())"), fixed=NO_FIX),
        Invalid(in_training_loop("if (step + 1) % log_every > 0:\n    n = int(loss)"), fixed=NO_FIX),
        Invalid(in_training_loop("preds = model(x).argmax(-1).cpu().numpy()"), fixed=NO_FIX),
        Invalid(_with_total(in_training_loop("running += float(loss)\nif step % 10 == 0:\n"
                                             "    logger.info(f'loss {running / 10:.3f}')\n    running = 0"), "running = 0"),
                fixed=_with_total(in_training_loop("running += loss.detach()\nif step % 10 == 0:\n"
                                                   "    logger.info(f'loss {float(running) / 10:.3f}')\n    running = 0"),
                                  "running = 0")),
        Invalid("import torch\ndef train_step(x, y):\n    loss = model(x, y)\n    loss.backward()\n    opt.step()\n"
                "    return loss.item()\nfor x, y in loader:\n    train_step(x, y)\n", fixed=NO_FIX),
        # Stored and returned reads get the number back too: nothing downstream sees a tensor.
        Invalid(_RUN_GLUE.format(read="item()", tr_loss="tr_loss"),
                fixed=_RUN_GLUE.format(read="detach()", tr_loss="float(tr_loss)")),
        # No fix: read on every step (the sync would only move), an integer count (`float()` would
        # print `42.0`), no number literal to start from, printed with its name (`f"{total=}"`).
        Invalid(_NO_FIX_SHOWN_NAME, fixed=_NO_FIX_SHOWN_NAME),
        Invalid(_NO_FIX_PER_STEP_READ, fixed=_NO_FIX_PER_STEP_READ),
        Invalid(_NO_FIX_COUNT, fixed=_NO_FIX_COUNT),
        Invalid(in_training_loop("total += loss.item()"), fixed=in_training_loop("total += loss.item()")),
        # Gradient accumulation: the branch that steps the optimizer runs on every training step
        # (torchtune's recipes read the running loss there), as does what follows an early
        # `continue` on the other micro-batches.
        Invalid(in_accumulation_step("lossf = loss.item()\npbar.set_description(f'{lossf:.3f}')"), fixed=NO_FIX),
        Invalid("import torch\nfor i, (x, y) in enumerate(loader):\n    (model(x, y) / accum).backward()\n"
                "    if (i + 1) % accum != 0:\n        continue\n    opt.step()\n    opt.zero_grad()\n"
                "    losses.append(loss.item())\n", fixed=NO_FIX),
        # accelerate: `sync_gradients` is true exactly when the optimizer steps; the progress bar
        # line only logs, and is guarded by the optimizer-step counter that branch increments, as
        # TL202 guards `set_postfix(loss=loss)` (it was a suggestion only).
        Invalid(_ACCUMULATE.format(guard="accelerator.sync_gradients"),
                fixed=_ACCUMULATE.format(guard="accelerator.sync_gradients").replace(
                    "        progress_bar", "        if completed_steps % 100 == 0:\n            progress_bar")),
        # Hooks a framework calls on every step: the loop is Lightning's or the Trainer's.
        # The advice names the framework's own counter and interval, and Lightning's `self.log`.
        Invalid(_HOOK.format(base="L.LightningModule", hook="training_step", read="acc.item()"), fixed=NO_FIX,
                message="(`if self.global_step % self.trainer.log_every_n_steps == 0:`), keep it on the device, "
                        "or pass the tensor itself to `self.log(...)`"),
        Invalid(_HOOK.format(base="Base", hook="training_step", read="acc.item()").replace(
            "class M(", "class Base(L.LightningModule):\n    pass\nclass M("), fixed=NO_FIX),
        Invalid(_HOOK.format(base="transformers.Trainer", hook="compute_loss", read="float(acc)"), fixed=NO_FIX,
                message="(`if self.state.global_step % self.state.logging_steps == 0:`) or keep it on the device"),
        # A block that reads the name among the statements after it: no suggestion (it does not move).
        Invalid(in_training_loop("lossf = loss.item()\nif verbose:\n    print(lossf)\nhistory.append(lossf)"),
                fixed=NO_FIX),
        # Not in host memory: a batch's tensor once moved, or the batch itself once moved (rebound,
        # in place as a BatchEncoding does, by a helper), a model's output, a loader whose
        # collate_fn makes the batches on the device, one accelerate prepared, a loop that moves
        # nothing of its batch (`x.numpy()` of a value not known to be on the host).
        Invalid(_HOST_BATCH.format(read="xs = x.tolist()"), fixed=NO_FIX, message="`.tolist()` waits for the GPU"),
        # A host scalar tensor with a device tensor gives a device tensor.
        Invalid(_HOST_BATCH.format(read="total = torch.add(y.sum(), x.sum()).item()"), fixed=NO_FIX),
        Invalid(_HOST_BATCH.format(read="y = y.cuda()\n    labels = y.numpy()"), fixed=NO_FIX),
        # A host tensor of before the loop that the loop moves, adds a device tensor to, or changes
        # in place from one, is on the device from then on.
        Invalid(_HOST_BATCH.format(read="counts += torch.bincount(x.long().flatten(), minlength=3)\n"
                                        "    frac = counts.tolist()").replace("import torch\n", "import torch\ncounts = torch.zeros(3)\n"),
                fixed=NO_FIX),
        Invalid(_HOST_BATCH.format(read="counts.add_(torch.bincount(x.long().flatten(), minlength=3))\n"
                                        "    frac = counts.tolist()").replace("import torch\n", "import torch\ncounts = torch.zeros(3)\n"),
                fixed=NO_FIX),
        Invalid(_HOST_BATCH.format(read="counts = counts.cuda()\n    frac = counts.tolist()").replace(
            "import torch\n", "import torch\ncounts = torch.zeros(3)\n"), fixed=NO_FIX),
        Invalid(_HOST_BATCH.format(read="frac = counts.tolist()\n    counts.add_(x.sum())").replace(
            "import torch\n", "import torch\ncounts = torch.zeros(3)\n"), fixed=NO_FIX),
        Invalid(_HOST_BATCH.format(read='batch = batch.to(device)\n    ids = batch["ids"].tolist()'), fixed=NO_FIX),
        Invalid(_HOST_BATCH.format(read='batch = {k: v.to(device) for k, v in batch.items()}\n'
                                        '    ids = batch["ids"].tolist()'), fixed=NO_FIX),
        Invalid(_HOST_BATCH.format(read='batch.to(device)\n    ids = batch["ids"].tolist()'), fixed=NO_FIX),
        Invalid(_HOST_BATCH.format(read='batch_to_device(batch, device)\n    ids = batch["ids"].tolist()'),
                fixed=NO_FIX),
        # The advice names the guard the fix writes: the loop's own interval test, whose `if` the
        # line that only logs joins (it was a suggestion only).
        Invalid("import torch\nfor it in range(args.iters):\n    loss = model(x, y)\n    loss.backward()\n"
                "    opt.step()\n    print(loss.item())\n    if it % args.log_interval == 0:\n        log(it)\n",
                fixed="import torch\nfor it in range(args.iters):\n    loss = model(x, y)\n    loss.backward()\n"
                "    opt.step()\n    if it % args.log_interval == 0:\n        print(loss.item())\n        log(it)\n",
                message="(`if it % args.log_interval == 0:`)"),
        Invalid(_HOST_BATCH.format(read="preds = model(x).argmax(-1).tolist()"), fixed=NO_FIX),
        # The step function called through another name: an alias, a partial, a compiled
        # function, a closure a factory returns, a compiled method kept on the instance.
        Invalid(_STEP_ALIAS.format(bind="step_fn = train_step", call="step_fn(model, opt, x, y)"), fixed=NO_FIX),
        Invalid(_STEP_ALIAS.format(bind="step_fn = functools.partial(train_step, model, opt=opt)",
                                   call="step_fn(x=x, y=y)"), fixed=NO_FIX),
        Invalid(_STEP_ALIAS.format(bind="step_fn = torch.compile(train_step) if compile else train_step",
                                   call="loss = step_fn(model, opt, x, y)"), fixed=NO_FIX),
        Invalid(_STEP_ALIAS.format(bind="step_fn = make_train_step(model, opt)", call="step_fn(x, y)"),
                fixed=NO_FIX),
        Invalid(_STEP_METHOD_ALIAS.format(bound="torch.compile(self.train_step)"), fixed=NO_FIX),
        # A comprehension's or a loop's own `y` is not the batch's.
        Invalid(_HOST_BATCH.format(read="vals = [y.item() for y in model(x)]"), fixed=NO_FIX),
        Invalid(_HOST_BATCH.format(read="for y in model(x):\n        seen.append(y.item())"), fixed=NO_FIX),
        Invalid(_HOST_BATCH.format(read="for v in x.tolist():\n        seen.append(v)"), fixed=NO_FIX),
        Invalid(_COLLATE_TO_DEVICE.format(collate="collate"), fixed=NO_FIX),
        Invalid("import torch\nfrom accelerate import Accelerator\naccelerator = Accelerator()\n"
                "model, opt, train_loader = accelerator.prepare(model, opt, train_loader)\n"
                "for batch in train_loader:\n    seen.update(batch['ids'].tolist())\n"
                "    loss = model(batch['x'].to(accelerator.device))\n    accelerator.backward(loss)\n    opt.step()\n",
                fixed=NO_FIX),
        Invalid("import torch\nfor x, y in loader:\n    labels = y.numpy()\n    loss = model(x, y)\n"
                "    loss.backward()\n    opt.step()\n", fixed=NO_FIX),
        # A statement that only logs what `.item()` reads is guarded as TL202 guards one that
        # formats the tensor (it was a suggestion only: `print(f"loss {loss:.3f}")` got its `if`
        # and `print("grad", ....item())` beside it stayed per-step) ...
        # nanoGPT's micro-batch loop inside the loop that steps: the guard counts optimizer steps
        # with the outer loop's counter (`micro_step % 100 == 0` held at every step's first micro-batch).
        Invalid("import torch\nfor iter_num in range(max_iters):\n    for micro_step in range(accum):\n"
                "        loss = model(x, y) / accum\n        loss.backward()\n        print('micro', loss.item())\n"
                "    opt.step()\n",
                fixed="import torch\nfor iter_num in range(max_iters):\n    for micro_step in range(accum):\n"
                "        loss = model(x, y) / accum\n        loss.backward()\n        if iter_num % 100 == 0:\n"
                "            print('micro', loss.item())\n    opt.step()\n"),
        Invalid(in_training_loop("logger.info('l=%f', loss.item())"),
                fixed=in_training_loop("if step % 100 == 0:\n    logger.info('l=%f', loss.item())")),
        Invalid(in_training_loop("print('loss', loss.item())"),
                fixed=in_training_loop("if step % 25 == 0:\n    print('loss', loss.item())"), options={"log-every": 25}),
        Invalid(_WRITER + in_training_loop("writer.add_scalar('loss', loss.item(), step)"),
                fixed=_WRITER + in_training_loop("if step % 100 == 0:\n    writer.add_scalar('loss', loss.item(), step)")),
        Invalid(in_training_loop("pbar.set_postfix(loss=loss.item(), lr=sched.get_last_lr()[0])"),
                fixed=in_training_loop("if step % 100 == 0:\n    pbar.set_postfix(loss=loss.item(), lr=sched.get_last_lr()[0])")),
        # ... under one `if` with the logging line beside it, which TL202 guards the same way ...
        Invalid(in_training_loop("print(f'loss {loss:.3f}')\nprint('grad', model.weight.grad.norm().item())"),
                fixed=in_training_loop("if step % 100 == 0:\n    print(f'loss {loss:.3f}')\n"
                                       "    print('grad', model.weight.grad.norm().item())")),
        # ... with the loop's own interval test, as TL202 does; in a hook, the framework's counter.
        Invalid("import torch\nlog_every = 10\nfor step, (x, y) in enumerate(loader):\n    loss = model(x, y)\n"
                "    loss.backward()\n    opt.step()\n    print('loss', float(loss))\n",
                fixed="import torch\nlog_every = 10\nfor step, (x, y) in enumerate(loader):\n    loss = model(x, y)\n"
                "    loss.backward()\n    opt.step()\n    if step % log_every == 0:\n        print('loss', float(loss))\n"),
        Invalid(_HOOK.format(base="L.LightningModule", hook="training_step", read="acc.item()").replace(
                    "self.history.append(acc.item())", "print('acc', acc.item())"),
                fixed=_HOOK.format(base="L.LightningModule", hook="training_step", read="acc.item()").replace(
                    "self.history.append(acc.item())", "if self.global_step % self.trainer.log_every_n_steps == 0:\n"
                    "            print('acc', acc.item())")),
        # Not a line that only logs: another call in it (`next(it)`), its value used, a record
        # written to a file, a tracker numbering its calls (no step), a line with another
        # statement; and where TL202 writes no guard (under `if step % log_every:`, the
        # optimizer-step branch without a counter of its own): a suggestion at most.
        Invalid(in_training_loop("print('loss', loss.item(), next(it))"), fixed=NO_FIX),
        Invalid(in_training_loop("ok = logger.info('l=%f', loss.item())"), fixed=NO_FIX),
        Invalid(in_training_loop("print(loss.item(), file=metrics_csv)"), fixed=NO_FIX),
        Invalid("import wandb\n" + in_training_loop("wandb.log({'loss': loss.item()})"), fixed=NO_FIX),
        Invalid(in_training_loop("print('loss', loss.item()); seen += 1"), fixed=NO_FIX),
        Invalid(in_accumulation_step("print('loss', loss.item())", counter=""), fixed=NO_FIX),
        # In the `else`/`elif` of the loop's own interval test of the counter: the fix put
        # `if step % log_every == 0:` there (or `elif step > 2 and step % log_every == 0:`), which
        # never holds, and the line was never logged again.
        Invalid(in_training_loop("if step % log_every == 0:\n    print('full', step, loss.item())\nelse:\n"
                                 "    print('short', loss.item())"),
                fixed=NO_FIX, message="not written: the line runs in the `else` of `if step % log_every == 0:`"),
        Invalid(in_training_loop("if (step + 1) % log_every == 0:\n    print('full', step, loss.item())\n"
                                 "elif step > 2:\n    print('mid', loss.item())"),
                fixed=NO_FIX, message="the `else` of `if (step + 1) % log_every == 0:`"),
        # A print whose `end=` is not a newline prints half a line, which the next print ends:
        # guarding one half printed the other on every step (a run-on line; each step's name
        # beside another step's loss).
        Invalid(in_training_loop("print('[%d] loss=%.4f' % (step, loss.item()), end=' ', flush=True)\nprint('lr', lr)"),
                fixed=NO_FIX, message="prints its line in two calls"),
        Invalid(in_training_loop("print(f'step {step}', end=' ')\nprint('loss', loss.item())"),
                fixed=NO_FIX, message="not written: `print(f'step {step}', end=' ')` prints its line in two calls"),
        # ... but one alone at the end of its block (a progress line) splits nothing.
        Invalid(in_training_loop("if verbose:\n    print('\\rloss %f' % loss.item(), end='')"),
                fixed=in_training_loop("if verbose and step % 100 == 0:\n    print('\\rloss %f' % loss.item(), end='')")),
        # An `end=` that is a newline ends the line as the default does.
        Invalid(in_training_loop("print('loss', loss.item(), end='\\n')\nprint('lr', lr)"),
                fixed=in_training_loop("if step % 100 == 0:\n    print('loss', loss.item(), end='\\n')\nprint('lr', lr)")),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        func = node.func
        read = _host_read(ctx, node)
        if read is not None:
            target, what = read
            # One finding per chain: `x.cpu().numpy()` is reported at `.cpu()`, and so is
            # `x.cpu().detach().numpy().item()` (pytorch-tabnet: it was reported twice).
            if isinstance(func, cst.Attribute) and _sync_in_receiver(func.value):
                return
        elif isinstance(func, cst.Attribute) and func.attr.value == "get_scale" and not node.args \
                and dotted(func.value) in _scaler_names(ctx):
            # GradScaler.get_scale() is `self._scale.item()` (timm's and HF's "was the step skipped?").
            if _waits_per_step(ctx, node):
                self.report(node, f"`{ctx.code(node)}` reads the loss scale from the GPU (`.item()`) on every step; "
                                  f"read it under the logging interval ({interval_guard(ctx, node, self.opts['log-every'])}); to tell a "
                                  f"skipped step, let the scheduler step anyway (float16 skips few steps)")
            return
        elif (metric := _plateau_metric(ctx, node)) is not None:
            if _waits_per_step(ctx, node) and not ctx.tensors.on_host(metric):
                self.report(node, f"`{ctx.code(node)}`: ReduceLROnPlateau reads the metric with "
                                  f"`float()`, which waits for the GPU on every step; step it where the metric is read "
                                  f"anyway (per epoch, or at the logging interval with `.item()`); not fixed: stepping "
                                  f"less often changes when its patience runs out")
            return
        else:
            return
        # A value known to be in host memory waits for no GPU: a tensor of a batch the loop has not
        # moved yet, a numpy value, a tensor made without a device (Tensors.on_host).
        if not _waits_per_step(ctx, node) or ctx.tensors.on_host(target):
            return
        fix = None
        parent, added = ctx.parent(node), node
        # `total += loss.item() * x.size(0)`: a sum weighted by the batch size (PyTorch's tutorials).
        while isinstance(parent, cst.BinaryOperation) and isinstance(parent.operator, (cst.Multiply, cst.Divide)) \
                and not ctx.tensors.is_tensor(parent.right if parent.left is added else parent.left):
            parent, added = ctx.parent(parent), parent
        if isinstance(parent, cst.AugAssign) and isinstance(parent.operator, cst.AddAssign) and parent.value is added:
            detached = target if _is_detach(target) else cst.Call(func=cst.Attribute(value=target, attr=cst.Name("detach")))
            floating = what == "`float()`" or _floating_tensor(target)
            if floating and ctx.precision.lowers_precision:
                # A bfloat16 loss summed in its own dtype loses the sum (8 bits of mantissa: 2000
                # steps of ~2.3 average to 0.5); float32 keeps it, and costs nothing on a float32
                # loss. Not for counts (`n_tokens += mask.sum().item()`): float32 rounds past 2**24.
                detached = cst.Call(func=cst.Attribute(value=detached, attr=cst.Name("float")))
            # `total += int(x)` truncates every value: accumulating the tensor would not; `bool(t)`
            # and `math.isnan(t)` add a 0 or 1, not the tensor's value.
            if what not in ("`int()`", "`bool()`") and not what.startswith("`math."):
                fix = _accumulate_fix(self, parent, node, detached, floating=floating)
            added_code = ctx.code(detached) if added is node else ctx.code(added).replace(ctx.code(node), ctx.code(detached), 1)
            advice = f"accumulate with `{ctx.code(parent.target)} += {added_code}` and convert once at the logging interval"
        elif (total := _summed_into(ctx, parent, added)) is not None:
            # `s = s + loss.item()` is the same running sum: read every N steps it would drop terms.
            detached = target if _is_detach(target) else cst.Call(func=cst.Attribute(value=target, attr=cst.Name("detach")))
            added_code = ctx.code(detached) if added is node else ctx.code(added).replace(ctx.code(node), ctx.code(detached), 1)
            advice = (f"accumulate with `{total} = {total} + {added_code}` and convert once at the logging interval; "
                      f"not fixed: the fix handles `{total} += ...`")
        else:
            logging = framework_logging(ctx, node)
            advice = (f"read it under the logging interval ({interval_guard(ctx, node, self.opts['log-every'])})"
                      f"{', keep it on the device' if logging else ' or keep it on the device'}{logging}")
            guard = guard_statement(self, node, self.opts["log-every"])
            if guard is not None:
                # A line that only logs is guarded as TL202 guards one that formats the tensor (the
                # two in a row end under one `if`); other shapes change what the script records
                # (an assignment, a list, a meter): shown as a suggestion, never written.
                fix = guard if _log_line_read(ctx, node) else \
                    self.fix(Applicability.DISPLAY_ONLY, guard.message, *guard.replacements)
        if what.startswith("`math."):
            advice += f"; `torch.{what[6:-3]}({ctx.code(target)})` tests it on the device"
        self.report(node, f"{what} waits for the GPU on every step; {advice}", fix)


def _plateau_metric(ctx, call: cst.Call) -> cst.BaseExpression | None:
    """The tensor handed to `sched.step(metric)` of a scheduler assigned
    `torch.optim.lr_scheduler.ReduceLROnPlateau(...)` in the file (any import alias): its step
    converts the metric with `float()`. None for any other call, or a metric not known to be a tensor."""
    func = call.func
    if not isinstance(func, cst.Attribute) or func.attr.value != "step":
        return None
    metric = _argument(ctx, call, 0, "metrics")
    if metric is None or not ctx.tensors.is_tensor(metric) or dotted(func.value) is None:
        return None
    # Built in the function, or anywhere in the file (a module-level `sched` a `train()` steps):
    # then every binding of the name must be one.
    values = ctx.assigned_values(func.value) or ctx.assigned_values(func.value, anywhere=True)
    plateau = [isinstance(v, cst.Call) and ctx.names.qualified(v.func) == _PLATEAU for v in values]
    return metric if plateau and all(plateau) else None


_PLATEAU = "torch.optim.lr_scheduler.ReduceLROnPlateau"


def _summed_into(ctx, parent: cst.CSTNode, added: cst.CSTNode) -> str | None:
    """The name of `s = s + added` (or `s = added + s`) when parent is that `+`: a running sum
    written out, as `s += added` is; None otherwise."""
    if not (isinstance(parent, cst.BinaryOperation) and isinstance(parent.operator, cst.Add)):
        return None
    other = parent.left if parent.right is added else parent.right if parent.left is added else None
    assign = ctx.parent(parent)
    if other is None or not isinstance(assign, cst.Assign) or assign.value is not parent or len(assign.targets) != 1:
        return None
    name = ctx.dotted(assign.targets[0].target)
    return name if name is not None and name == ctx.dotted(other) else None


def _scaler_names(ctx) -> frozenset[str]:
    """Names assigned a GradScaler of the file (`scaler = torch.amp.GradScaler("cuda")`)."""
    cached = ctx.__dict__.get("_scaler_names")
    if cached is None:
        names = set()
        for use in ctx.precision.scalers:
            assign = ctx.parent(use.call)
            if isinstance(assign, cst.Assign):
                names |= {dotted(t.target) for t in assign.targets} - {None}
        cached = ctx.__dict__["_scaler_names"] = frozenset(names)
    return cached


def _is_detach(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "detach" \
        and not expr.args


_ARITHMETIC_AUG = (cst.AddAssign, cst.SubtractAssign, cst.MultiplyAssign, cst.DivideAssign)


def _accumulate_fix(rule: Rule, aug: cst.AugAssign, read: cst.BaseExpression, detached: cst.BaseExpression,
                    floating: bool):
    """`total += loss.item()` -> `total += loss.detach()` (read, the host read in the added value,
    becomes detached: `loss.item() * n` -> `loss.detach() * n`), and every read of `total` converted with
    `float(total)` where it is read (formatting, printing or logging, comparisons, arithmetic that
    ends in one of those, appending to a list): the conversion moves to where it is read.

    No fix unless that is the whole story: total is a plain local (or module) variable that a
    number literal initialises (`total = 0.0`, a reset in the loop too) and only arithmetic
    assignments change; every read is one of those and none runs on every step (it would sync
    there instead); and total held a Python float before (a float literal, `float(...)`, or the
    `.item()` of a loss-like float tensor: `float()` of an integer count would print `42.0`)."""
    ctx = rule.ctx
    acc = aug.target
    if not isinstance(acc, cst.Name):
        return None  # `self.total`, `stats["n"]`: read in places this cannot see
    uses = variable_uses(ctx.index, ctx.index.enclosing_function(aug), acc.value)
    if uses is None:
        return None
    initialised = False
    conversions = []
    for use in uses:
        if use.kind == "assign":
            number = ctx.number(use.value)
            if number is None:
                return None
            initialised = True
            floating = floating or isinstance(number, float)
        elif use.kind == "aug":
            if not isinstance(use.stmt.operator, _ARITHMETIC_AUG):
                return None
            value = use.stmt.value
            floating = floating or isinstance(value, cst.Float) or isinstance(use.stmt.operator, cst.DivideAssign) \
                or (isinstance(value, cst.Call) and ctx.names.qualified(value.func) == "builtins.float")
        elif use.kind == "read":
            if ctx.is_per_step(use.node):
                return None
            how = _read_conversion(ctx, use.node)
            if how is None:
                return None
            if how == "convert":
                conversions.append(use.node)
        else:
            return None
    if not initialised or not floating:
        return None
    replacements = [(read, detached)] + [(n, f"float({ctx.code(n)})") for n in conversions]
    message = "Accumulate on the device with `.detach()`"
    if conversions:
        message += f" and convert `{acc.value}` where it is read (`float({acc.value})`)"
    return rule.fix(Applicability.UNSAFE, message, *replacements)


_FLOAT_METHODS = frozenset({"mean", "float", "double", "half", "bfloat16", "norm", "sqrt", "exp", "log", "std", "var",
                            "softmax", "log_softmax", "sigmoid", "tanh"})
_FLOAT_NAME = re.compile(r"^(\w+_)?(loss(es)?|nll|ppl|perplexity|norm)$", re.IGNORECASE)


def _floating_tensor(expr: cst.BaseExpression, depth: int = 0) -> bool:
    """A tensor that is floating point for certain enough: a loss or norm, a mean, a quotient."""
    if depth > 8:
        return False
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
        return expr.func.attr.value in _FLOAT_METHODS or _floating_tensor(expr.func.value, depth + 1)
    if isinstance(expr, cst.BinaryOperation):
        return isinstance(expr.operator, cst.Divide) or _floating_tensor(expr.left, depth + 1) \
            or _floating_tensor(expr.right, depth + 1)
    if isinstance(expr, cst.Subscript):
        return _floating_tensor(expr.value, depth + 1)
    text = dotted(expr) if isinstance(expr, (cst.Name, cst.Attribute)) else None
    return bool(text) and bool(_FLOAT_NAME.match(text.rsplit(".", 1)[-1]))


def _read_conversion(ctx, read: cst.Name) -> str | None:
    """How a read of an accumulator that becomes a tensor keeps the value it had: "done" (it is
    already the argument of `float()`/`int()`), "convert" (wrap it in `float()`, which gives back
    the Python number it was, wherever the read goes: formatted, compared, stored, returned or
    passed on; a float has no method or item a tensor would need), None where the conversion would
    change what the program prints: `f"{total=}"` prints the expression's text too."""
    for anc in ctx.index.ancestors(read):
        if isinstance(anc, cst.FormattedStringExpression) and anc.equal is not None:
            return None
        if isinstance(anc, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            break
    arg = ctx.parent(read)
    if isinstance(arg, cst.Arg) and not arg.keyword and not arg.star:
        call = ctx.parent(arg)
        if isinstance(call, cst.Call) and len(call.args) == 1 \
                and ctx.names.qualified(call.func) in ("builtins.float", "builtins.int"):
            return "done"
    return "convert"


def _sync_in_receiver(expr: cst.BaseExpression) -> bool:
    """A host-sync method call earlier in the method chain that expr ends."""
    while isinstance(expr, (cst.Call, cst.Attribute, cst.Subscript)):
        if isinstance(expr, cst.Call):
            if isinstance(expr.func, cst.Attribute) and expr.func.attr.value in _SYNC_METHODS and not expr.args:
                return True
            expr = expr.func
        else:
            expr = expr.value
    return False


_LOG_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "critical", "log", "exception"})
_PROGRESS_METHODS = frozenset({"set_description", "set_postfix", "set_postfix_str", "write"})


def _is_log_call(ctx, call: cst.Call) -> bool:
    func = call.func
    qn = ctx.names.qualified(func)
    if qn == "builtins.print":
        # `print(..., file=metrics_csv)` writes a record per step, not a log line: guarding it would
        # drop rows. Printing to the console streams is logging.
        target = ctx.keyword(call, "file")
        return target is None or ctx.names.qualified(target.value) in ("sys.stdout", "sys.stderr")
    if (qn or "").startswith("logging."):
        return True
    if isinstance(func, cst.Attribute):
        attr = func.attr.value
        receiver = (ctx.dotted(func.value) or "").lower()
        if attr in _LOG_METHODS and ("log" in receiver):
            return True
        if attr in _PROGRESS_METHODS and (attr != "write" or "tqdm" in receiver or "bar" in receiver):
            return True
        if attr == "print":  # accelerator.print, fabric.print, a LightningModule's self.print, rich's console
            return True
    return False


_SUMMARY_WRITERS = frozenset({"torch.utils.tensorboard.SummaryWriter", "torch.utils.tensorboard.writer.SummaryWriter",
                              "tensorboardX.SummaryWriter", "tensorboardX.writer.SummaryWriter"})
_FABRIC = frozenset({"lightning.Fabric", "lightning.fabric.Fabric", "lightning_fabric.Fabric"})


@dataclass
class _TrackerCall:
    """A call that logs values to an experiment tracker, each value read to the host at once."""

    values: list  # the expressions the call logs (a dict's values, or the one value)
    step: bool  # the step is passed explicitly (guarding the call keeps the x-axis right)


def _tracker_values(ctx, call: cst.Call) -> _TrackerCall | None:
    """`wandb.log({...})`, a SummaryWriter's `add_scalar(tag, value, step)`/`add_scalars`/`add_histogram`,
    `accelerator.log({...})` (with trackers initialised in the module) and Fabric's
    `log(name, value)`/`log_dict({...})` (with loggers): each copies the values it is given to the
    host when it is called (`add_scalar` through numpy, wandb through `.item()`/`.tolist()`).
    Lightning's `self.log` keeps tensors on the device until its own interval and is not one."""
    func = call.func
    if not isinstance(func, cst.Attribute) or func.attr.value not in ("log", "log_dict", "add_scalar", "add_scalars",
                                                                      "add_histogram"):
        return None
    attr = func.attr.value
    receiver = func.value
    if attr == "log" and (ctx.names.qualified(func) == "wandb.log" or _assigned_from(ctx, receiver, {"wandb.init"})):
        data, step = _argument(ctx, call, 0, "data"), _argument(ctx, call, 1, "step")
        commit = ctx.keyword(call, "commit")
        return _TrackerCall(_logged(ctx, data), step is not None and (commit is None or ctx.literal(commit.value) is not False))
    if attr in ("add_scalar", "add_scalars", "add_histogram") and _is_summary_writer(ctx, receiver):
        # `add_histogram` copies the whole tensor (a layer's weights) to the host to bin it.
        keyword = {"add_scalar": "scalar_value", "add_scalars": "tag_scalar_dict", "add_histogram": "values"}[attr]
        value = _argument(ctx, call, 1, keyword)
        return _TrackerCall(_logged(ctx, value), _argument(ctx, call, 2, "global_step") is not None)
    last = (dotted(receiver) or "").rsplit(".", 1)[-1]
    if attr == "log" and (last == "accelerator" or _assigned_from(ctx, receiver, {"accelerate.Accelerator"})) \
            and ("init_trackers" in ctx.text or "log_with" in ctx.text):
        values, step = _argument(ctx, call, 0, "values"), _argument(ctx, call, 1, "step")
        return _TrackerCall(_logged(ctx, values), step is not None)
    if attr in ("log", "log_dict") and (last == "fabric" or _assigned_from(ctx, receiver, _FABRIC)) \
            and _fabric_has_loggers(ctx):
        if attr == "log":
            value, step = _argument(ctx, call, 1, "value"), _argument(ctx, call, 2, "step")
        else:
            value, step = _argument(ctx, call, 0, "metrics"), _argument(ctx, call, 1, "step")
        return _TrackerCall(_logged(ctx, value), step is not None)
    return None


def _argument(ctx, call: cst.Call, index: int, keyword: str) -> cst.BaseExpression | None:
    arg = ctx.keyword(call, keyword) or ctx.positional(call, index)
    return arg.value if arg is not None and arg.value is not None and not (
        isinstance(arg.value, cst.Name) and arg.value.value == "None") else None


def _logged(ctx, value: cst.BaseExpression | None) -> list:
    """The values a logged dict holds (a literal, or a name assigned only dict literals in the same
    function), or the value itself."""
    if value is None:
        return []
    dicts = [value] if isinstance(value, cst.Dict) else []
    if isinstance(value, cst.Name):
        assigned = ctx.assigned_values(value)
        if assigned and all(isinstance(v, cst.Dict) for v in assigned):
            dicts = assigned
    if dicts:
        return [e.value for d in dicts for e in d.elements if isinstance(e, cst.DictElement)]
    return [value]


def _assigned_from(ctx, receiver: cst.BaseExpression, qualnames) -> bool:
    """receiver is a name (or `self.x`) assigned the result of one of qualnames' calls: in the same
    function, or for an attribute anywhere in the module (`self.writer = SummaryWriter()` in
    `__init__`)."""
    name = dotted(receiver)
    if name is None:
        return False
    values = ctx.assigned_values(receiver)
    if not values and "." in name:
        values = ctx.assigned_values(receiver, anywhere=True)
    return any(isinstance(v, cst.Call) and ctx.names.qualified(v.func) in qualnames for v in values)


_WRITER_NAME = re.compile(r"(^|_)(writer|tb|tensorboard)(_|$)", re.IGNORECASE)


def _is_summary_writer(ctx, receiver: cst.BaseExpression) -> bool:
    """A TensorBoard SummaryWriter: assigned from the class, or a `writer`/`tb_writer`-style name
    in a module that imports the class."""
    if _assigned_from(ctx, receiver, _SUMMARY_WRITERS):
        return True
    name = (dotted(receiver) or "").rsplit(".", 1)[-1]
    return bool(_WRITER_NAME.search(name)) and any(
        target in _SUMMARY_WRITERS or target in ("torch.utils.tensorboard", "tensorboardX")
        for target in ctx.names.aliases.values())


def _fabric_has_loggers(ctx) -> bool:
    """The module builds a Fabric with loggers (without any, `fabric.log` does nothing)."""
    return "loggers" in ctx.text and any(ctx.keyword(c, "loggers") is not None and (dotted(c.func) or "").rsplit(".", 1)[-1] == "Fabric"
               for c in ctx.index.nodes(cst.Call))


def _is_string(expr: cst.BaseExpression) -> bool:
    """A string literal, or one built with `+`/`*` (`'%11s' * 2 + '%11.4g' * 5`)."""
    if isinstance(expr, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
        return True
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.Add, cst.Multiply)):
        return _is_string(expr.left) or (isinstance(expr.operator, cst.Add) and _is_string(expr.right))
    return False


def _formatted_tensors(ctx, expr: cst.BaseExpression):
    """Tensor values, maybe on the device (`_device_tensor`), that formatting `expr` (f-string, %,
    .format, dict) would convert."""
    if isinstance(expr, (cst.FormattedString,)):
        for part in expr.parts:
            if isinstance(part, cst.FormattedStringExpression) and _device_tensor(ctx, part.expression):
                yield part.expression
    elif isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Modulo) and _is_string(expr.left):
        values = [e.value for e in expr.right.elements] if isinstance(expr.right, cst.Tuple) else [expr.right]
        for value in values:
            if _device_tensor(ctx, value):
                yield value
    elif isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "format":
        for arg in expr.args:
            if _device_tensor(ctx, arg.value):
                yield arg.value
    elif isinstance(expr, cst.Dict):
        # A value formatted inside a dict or list display is converted with it (`set_postfix({"loss":
        # f"{loss:.3f}"})`, `print([loss, acc])`: the display's repr formats each tensor).
        for element in expr.elements:
            if isinstance(element, cst.DictElement):
                yield from _formatted_tensors(ctx, element.value)
    elif isinstance(expr, (cst.List, cst.Tuple, cst.Set)):
        for element in expr.elements:
            if isinstance(element, cst.Element):
                yield from _formatted_tensors(ctx, element.value)
    elif isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Add) and (
            _is_string(expr.left) or _is_string(expr.right) or _to_text(ctx, expr.left) or _to_text(ctx, expr.right)):
        # `"loss " + str(loss)`: the string is built from the tensor's value.
        for side in (expr.left, expr.right):
            yield from _formatted_tensors(ctx, side)
    elif _to_text(ctx, expr):
        yield expr.args[0].value
    elif _device_tensor(ctx, expr):
        yield expr


def _to_text(ctx, expr: cst.BaseExpression) -> bool:
    """`str(t)` / `repr(t)` of a tensor maybe on the device: its value read to make the text."""
    return isinstance(expr, cst.Call) and ctx.names.qualified(expr.func) in ("builtins.str", "builtins.repr") \
        and len(expr.args) == 1 and not expr.args[0].star and _device_tensor(ctx, expr.args[0].value)


_ARGS = ("import argparse\nimport torch\nparser = argparse.ArgumentParser()\n"
         "parser.add_argument('--log-interval', type=int, default=10)\nargs = parser.parse_args()\n")


def _own_test(test: str, joined: bool = False, extra: str = "") -> str:
    """A rule case: a loop that logs under its own interval test `test`, with a per-step print of
    the loss (and `extra`) above it; joined: the print (and `extra`) moved into that test's body."""
    lines = ["print(f'loss {loss:.4f}')"] + ([extra] if extra else [])
    if joined:
        body = f"if {test}:\n" + "".join(f"    {line}\n" for line in lines) + "    print('step', step)"
    else:
        body = "".join(f"{line}\n" for line in lines) + f"if {test}:\n    print('step', step)"
    return in_training_loop(body).replace("import torch\n", "import torch\nconfig = {'log_every': 5}\n")


# A module the file trains on the device, whose parameters are tensors there (Tensors.is_device_parameter).
_LINEAR_ON_DEVICE = "import torch\nmodel = torch.nn.Linear(2, 1).cuda()\n"
_HISTOGRAMS = "for name, p in model.named_parameters():\n    writer.add_histogram(name, p, step)"
_ACCELERATOR = "from accelerate import Accelerator\naccelerator = Accelerator(log_with='wandb')\n"
_FABRIC_LOGGERS = "import lightning as L\nfabric = L.Fabric(loggers=L.fabric.loggers.CSVLogger('logs'))\n"
_NO_STEP_WANDB = "import wandb\n" + in_training_loop("wandb.log({'loss': loss})")


class PerStepTensorLogging(Rule):
    code = "TL202"
    name = "per-step-tensor-logging"
    summary = "`print`/`logging`/f-string/`tqdm.set_postfix`/tracker logging (`wandb.log`, `add_scalar`) of a tensor on every step"
    source = "§5.2"
    fix_applicability = "unsafe"
    # Formatting spelled anywhere: an f-string or `%` outside a logging call is a finding too.
    triggers = ("print", "log", "set_description", "set_postfix", "write", 'f"', "f'", "%", "add_scalar",
                "add_histogram")
    needs_hot_loop = True
    options = {"log-every": Option(100, int, "The interval the fix uses when the script defines none.", minimum=1)}
    docs = """
## What it does
Flags printing, logging or formatting a tensor (`print(loss)`, `logger.info(f"{loss:.3f}")`,
`accelerator.print(f"{loss=}")`, `pbar.set_postfix(loss=loss)`, `desc = f"loss {loss:.3f}"`,
also inside a dict or list display that is logged: `pbar.set_postfix({"loss": f"{loss:.3f}"})`,
`print([loss, acc])`) on every step of the hot loop. A message of a `raise` or `assert` is not flagged: it is only
formatted when the check fails; nor is one in a branch that leaves the loop for good (ending in
`break`, `return`, `raise` or `sys.exit()`), which runs once. Nor is a value known to be in host
memory, as TL201 reads it: formatting or logging it waits for no GPU (a tensor made without
`device=`, a
tensor of a batch that arrives on the host, read before the loop moves it, and what
`y.sum()` or `torch.bincount(y)` makes of it).

Logging a tensor to an experiment tracker is flagged too: `wandb.log({"loss": loss})`, a
TensorBoard `SummaryWriter`'s `writer.add_scalar("loss", loss, step)` (or `add_scalars`, or
`add_histogram`, which copies the whole tensor),
`accelerator.log({...})` in a module that sets up trackers (`log_with=`, `init_trackers`), and
Fabric's `fabric.log(...)`/`fabric.log_dict(...)` in a module that gives it `loggers=`. Lightning's
`self.log(...)` is not: it keeps tensors on the device and reads them at its own interval; but
`self.log(..., sync_dist=True)` (or `log_dict`) in a per-step hook such as `training_step` is
flagged, without a fix: it reduces the value across processes on every step, a collective per
logged value that Lightning's documentation warns about; log the per-step value unsynced, or
reduce once per epoch (`on_step=False, on_epoch=True`).

`print(..., file=<a file>)` writes a per-step record and is left alone; text made with
`str(t)` or concatenation (`"loss " + str(loss)`) is reported.

## Why is this bad?
Formatting a device tensor copies it to the host and waits for the GPU, like `.item()`: the loop
stops queuing work every step. Trackers do the same when they are called: `add_scalar` converts
the value through numpy, wandb through `.item()`/`.tolist()`.

## Example
```python
for step, batch in enumerate(loader):
    ...
    print(f"step {step} loss {loss:.4f}")
```

## Use instead
```python
    if step % log_every == 0:
        print(f"step {step} loss {loss:.4f}")
```

## Fix safety
Unsafe: the statement is put under the interval test the loop already makes, as the script
writes it (`if args.log_every > 0 and step % args.log_every == 0:`, `if i % 4 == 3:`), joining
that `if` when it is right below or above (past other per-step logging lines, which join it
too, as do those TL201 guards, `print("loss", loss.item())`, and, below, past plain assignments of what the test reads, `global_step += 1`, which stay
above it); a condition that is not about the interval (`rank == 0`) is left out only when the
interval is known to be a positive whole number; else under the loop's existing step counter and the script's logging interval (a name
such as `log_every`, `args.log_interval` or `LOG_EVERY`, in any case, when its value is known to
be a positive whole number; no fix when it is not, as `step % 0` raises; else `log-every`,
default 100), so fewer lines are printed; the per-step logging lines right beside it (TL201's
too) go under the same new `if`. A tensor that counts steps (`step_t += 1`) is no
counter: the guard would read it on every step. A string built outside a
logging call (assigned, then used) gets no fix: the code that uses it must move too. A tracker
call is guarded the same way only when it passes its step explicitly (`step=`, `global_step`):
without it the tracker numbers the calls it gets, and logging every N steps would squeeze the
x-axis N times (so would `wandb.log(..., commit=False)`); those get no fix. Under gradient
accumulation, in the branch that steps the optimizer, the counter must be one that branch
increments (`global_step += 1`): the loop's micro-batch index may never be a multiple of the
interval there. Without one there is no fix. Nor is there one for a line in the `else:` or
`elif` of an `if` whose test takes a remainder of the same counter (`if step % log_every == 0:
... else: print(...)`): it runs on the steps that test skips, where an interval test may never
hold; nor beside a print whose `end=` is not a newline (`print(f"step {step}", end=" ")`, right
before the line the fix would guard, or the last it guards with a log call after it): it prints half a line that the next print ends,
and guarding one half would print the other on every step (two such prints that both log a
tensor are logging lines side by side, and go under one `if` together).
"""
    valid = [
        # A name bound to a conditional expression between two host values is a float, whatever
        # its name says (`loss_val` was taken for a tensor).
        Valid(in_training_loop("loss_val = loss.item() if step % 5 == 0 else 0.0\nprint(f'a {loss_val:.3f}')")),
        # A record written per step to a file of its own (`print(..., file=csv)`) is data, not a log.
        Valid(in_training_loop("print(step, loss, sep=',', file=metrics_csv)")),
        # In a branch of a test that read the tensor already: nothing more to wait for.
        Valid(in_training_loop("if loss > 100:\n    print(f'loss spike at {step}: {loss:.2f}')")),
        # The interval written as an expression (a conditional, `and`): already every n steps.
        Valid(in_training_loop("print(f'step {step} loss {loss:.4f}') if step % 5 == 0 else None")),
        Valid(in_training_loop("step % 5 == 0 and print(f'loss {loss:.4f}')")),
        Valid(in_training_loop("if step % 50 == 0:\n    print(f'loss {loss:.3f}')")),
        Valid(in_training_loop("print(f'step {step}')")),
        Valid(in_training_loop("pbar.set_postfix(lr=opt.param_groups[0]['lr'])")),
        Valid("import logging\nfor x, y in val_loader:\n    loss = model(x, y)\n    logging.info('%s', loss)\n"),
        Valid(in_training_loop("print(loss.item())")),
        # Formatted only when the check fails.
        Valid(in_training_loop("if not torch.isfinite(loss).all():\n    raise RuntimeError(f'loss is {loss}')")),
        Valid(in_training_loop("assert loss.ndim == 0, f'loss {loss}'")),
        # ... or just before the process exits (torchvision's detection reference).
        Valid("import sys\n" + in_training_loop("if not ok:\n    print(loss)\n    sys.exit(1)")),
        Valid(in_training_loop("if not ok:\n    print(f'loss {loss}')\n    exit(1)")),
        Valid(in_training_loop("desc = f'step {step}'\npbar.set_description(desc)")),
        # A module-local step function that returns `loss.item()`: a float (its `.item()` is TL201's).
        Valid("import torch\ndef train():\n    loss = model(x).mean()\n    loss.backward()\n    opt.step()\n"
              "    return loss.item()\nfor epoch in range(100):\n    loss = train()\n    print(f'loss {loss:.4f}')\n"),
        # Trackers: a host number is TL201's; Lightning's self.log keeps tensors on the device;
        # accelerate without trackers logs nothing; an `add_scalar` of an unknown object.
        Valid("import wandb\n" + in_training_loop("wandb.log({'loss': loss.item()}, step=step)")),
        Valid("import wandb\n" + in_training_loop("if step % 50 == 0:\n    wandb.log({'loss': loss}, step=step)")),
        Valid("import lightning as L\nclass M(L.LightningModule):\n    def fit(self, loader, opt):\n"
              "        for step, batch in enumerate(loader):\n            loss = self(batch)\n"
              "            loss.backward()\n            opt.step()\n            self.log('loss', loss)\n"),
        Valid("from accelerate import Accelerator\naccelerator = Accelerator()\n"
              + in_training_loop("accelerator.log({'loss': loss}, step=step)")),
        # Reduced once per epoch, under an interval, or in an epoch hook: not every step.
        Valid("import lightning as L\nclass M(L.LightningModule):\n    def training_step(self, batch, i):\n"
              "        loss = self(batch)\n        self.log('loss', loss, on_step=False, on_epoch=True, sync_dist=True)\n"
              "        if i % 100 == 0:\n            self.log('x', loss, sync_dist=True)\n        return loss\n"
              "    def on_train_epoch_end(self):\n        self.log('e', self.total, sync_dist=True)\n"),
        Valid(in_training_loop("meter.add_scalar('loss', loss, step)")),
        Valid(_CLOSURE.format(optimizer="LBFGS", read="print('eval', loss)", closure="closure")),
        # Values in host memory wait for no GPU (as TL201 reads them): a batch field the loop has
        # not moved yet, what a torch function makes of it, a tensor made without a device.
        Valid(_HOST_BATCH.format(read="print(f'labels {y.sum()}')")),
        Valid(_HOST_BATCH.format(read="print(f'class counts {torch.bincount(y, minlength=3)}')")),
        Valid(_HOST_BATCH.format(read="noise = torch.randn(3)\n    print(f'noise {noise}')")),
        Valid(_HOST_BATCH.format(read="desc = f'labels {y.sum()}'\n    pbar.set_description(desc)")),
        Valid("import wandb\n" + _HOST_BATCH.format(read="wandb.log({'labels': y.sum()}, step=step)")),
        # Dict and list displays of numbers, under the logging interval, or after the loop.
        Valid(in_training_loop("lossf = loss.item() if step % 10 == 0 else lossf\npbar.set_postfix({'loss': f'{lossf:.3f}'})\n"
                               "print([lossf, step])\nlogger.info({'lr': opt.param_groups[0]['lr']})")),
        Valid(in_training_loop("if step % 100 == 0:\n    pbar.set_postfix({'loss': f'{loss:.3f}'})\n    print([loss, step])")),
        Valid(in_training_loop("pass") + "print([loss, acc])\nlogger.info({'loss': f'{loss:.3f}'})\n"),
        # add_histogram of a value not known to be a tensor, under the interval, or after the loop.
        Valid(_WRITER + in_training_loop("writer.add_histogram('lr', lrs, step)")),
        Valid(_WRITER + in_training_loop("if step % 100 == 0:\n    writer.add_histogram('out', out.detach(), step)")),
        Valid(_WRITER + in_training_loop("pass") + "writer.add_histogram('out', loss.detach(), step)\n"),
        # Parameters of a module never moved to a device are on the host (no wait); nor is what
        # `parameters()` of an object the file does not show to be a module gives known (a call's
        # result, a class of the file that is no nn.Module), though it is "moved".
        Valid("import torch\nmodel = torch.nn.Linear(2, 1)\n" + _WRITER
              + in_training_loop(_HISTOGRAMS + "\nprint(model.weight)")),
        Valid("import torch\nsched = make_schedule().cuda()\nclass Knobs:\n    def parameters(self):\n"
              "        return [0.1, 0.2]\nknobs = Knobs()\nknobs.cuda()\n" + _WRITER + in_training_loop(
                  "for p in sched.parameters():\n    writer.add_histogram('s', p, step)\n"
                  "for name, p in knobs.named_parameters():\n    writer.add_histogram(name, p, step)\nprint(knobs.weight)")),
    ]
    invalid = [
        # A parameter of a module on the device, logged every step (a histogram of each weight: a
        # copy of the whole layer), or a layer's weight printed: parameters were not known as
        # tensors, so neither was reported.
        Invalid(_LINEAR_ON_DEVICE + _WRITER + in_training_loop(_HISTOGRAMS),
                fixed=_LINEAR_ON_DEVICE + _WRITER + in_training_loop(
                    "for name, p in model.named_parameters():\n    if step % 100 == 0:\n"
                    "        writer.add_histogram(name, p, step)"),
                message="Logging tensor `p` with `writer.add_histogram()`"),
        Invalid("import torch\nmodel = torch.nn.Sequential(torch.nn.Linear(2, 1))\nmodel.to(device)\n"
                + in_training_loop("print(model[0].weight)"),
                fixed="import torch\nmodel = torch.nn.Sequential(torch.nn.Linear(2, 1))\nmodel.to(device)\n"
                + in_training_loop("if step % 100 == 0:\n    print(model[0].weight)")),
        # ... and a buffer the module registers (`net.ema`: only weight and bias were known).
        Invalid("import torch\nclass Net(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
                "        self.register_buffer('ema', torch.zeros(1))\nnet = Net().cuda()\n"
                + in_training_loop("print('ema', net.ema)"),
                fixed="import torch\nclass Net(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
                "        self.register_buffer('ema', torch.zeros(1))\nnet = Net().cuda()\n"
                + in_training_loop("if step % 100 == 0:\n    print('ema', net.ema)")),
        # A tensor formatted inside a dict or list display that is logged (they were not reported):
        # the display's text formats each element; the call is guarded as any log call.
        Invalid(in_training_loop("pbar.set_postfix({'loss': f'{loss:.3f}'})"),
                fixed=in_training_loop("if step % 100 == 0:\n    pbar.set_postfix({'loss': f'{loss:.3f}'})")),
        Invalid(in_training_loop("print([loss, acc])"), fixed=in_training_loop("if step % 100 == 0:\n    print([loss, acc])"),
                message="Formatting tensor `loss`"),
        Invalid(in_training_loop("logger.info(('loss', loss.detach()))"), fixed=in_training_loop(
            "if step % 100 == 0:\n    logger.info(('loss', loss.detach()))")),
        # add_histogram copies the whole tensor to the host (it was not reported); with a step it is
        # guarded as add_scalar is, and without one it is not fixed (the x-axis would squeeze).
        Invalid(_WRITER + in_training_loop("writer.add_histogram('out', out.detach(), step)").replace("    loss = model", "    out = model(x)\n    loss = model"),
                fixed=_WRITER + in_training_loop("if step % 100 == 0:\n    writer.add_histogram('out', out.detach(), step)").replace(
                    "    loss = model", "    out = model(x)\n    loss = model"),
                message="with `writer.add_histogram()`"),
        Invalid(_WRITER + in_training_loop("for name, p in model.named_parameters():\n    writer.add_histogram(name, p.grad)"),
                fixed=NO_FIX),
        # A tensor turned into text by concatenation, or a method of a parameter (`.norm()`).
        Invalid(in_training_loop("print('loss ' + str(loss))"), message="Formatting tensor `loss`"),
        Invalid(in_training_loop("print('w', model.weight.norm())")),
        # ... but once the loop has moved it, the batch field is on the device.
        Invalid(_HOST_BATCH.format(read="print(f'x {x.sum()}')"),
                fixed=_HOST_BATCH.format(read="if step % 100 == 0:\n        print(f'x {x.sum()}')"),
                message="Formatting tensor `x.sum()`"),
        # The total norm clip_grad_norm_ returns is a tensor (on the gradients' device).
        Invalid(in_training_loop("gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"
                                 "print(f'grad norm {gn:.3f}')"), message="Formatting tensor `gn`"),
        Invalid(in_training_loop("print(f'loss {loss:.4f}')"), fixed=in_training_loop("if step % 100 == 0:\n    print(f'loss {loss:.4f}')")),
        # Two per-step logging lines in a row share one `if` (each got its own, back to back).
        Invalid(in_training_loop("print(f'loss {loss:.4f}')\n# the gradient\nlogger.info('grad %s', grad_norm)"),
                fixed=in_training_loop("if step % 100 == 0:\n    print(f'loss {loss:.4f}')\n"
                                       "    # the gradient\n    logger.info('grad %s', grad_norm)"), message="Formatting tensor `loss`"),
        # In a framework's step hook: guarded by the framework's counter and logging interval.
        Invalid(_HOOK.format(base="L.LightningModule", hook="training_step", read="loss").replace(
                    "self.history.append(loss)", "print('loss', loss)"),
                fixed=_HOOK.format(base="L.LightningModule", hook="training_step", read="loss").replace(
                    "self.history.append(loss)", "if self.global_step % self.trainer.log_every_n_steps == 0:\n"
                    "            print('loss', loss)"),
                message="or pass the tensor itself to `self.log(...)`"),
        Invalid("import torch\nimport lightning as L\nclass Stats(L.Callback):\n"
                "    def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):\n"
                "        print(f'loss {outputs[\"loss\"]:.3f}')\n",
                fixed="import torch\nimport lightning as L\nclass Stats(L.Callback):\n"
                "    def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):\n"
                "        if trainer.global_step % trainer.log_every_n_steps == 0:\n"
                "            print(f'loss {outputs[\"loss\"]:.3f}')\n",
                message="`module.log(...)`"),
        # Lightning: a per-step log reduced across processes.
        Invalid("import lightning as L\nclass M(L.LightningModule):\n    def training_step(self, batch, i):\n"
                "        loss = self(batch)\n        self.log('train/loss', loss, sync_dist=True)\n        return loss\n",
                fixed=NO_FIX, message="`self.log(..., sync_dist=True)` reduces the value across processes on every step"),
        Invalid("import lightning as L\nclass C(L.Callback):\n"
                "    def on_train_batch_end(self, trainer, module, outputs, batch, i):\n"
                "        module.log_dict({'loss': outputs['loss']}, sync_dist=True)\n", fixed=NO_FIX),
        Invalid(in_training_loop("logger.info('loss %.3f' % loss)"),
                fixed=in_training_loop("if step % 100 == 0:\n    logger.info('loss %.3f' % loss)")),
        Invalid(in_training_loop("pbar.set_postfix(loss=loss)"),
                fixed=in_training_loop("if step % 100 == 0:\n    pbar.set_postfix(loss=loss)")),
        Invalid(in_training_loop("accelerator.print(f'{step}: {loss=}')"),
                fixed=in_training_loop("if step % 100 == 0:\n    accelerator.print(f'{step}: {loss=}')")),
        # yolov5's progress line: a starred tensor in a `%` format built by string arithmetic.
        Invalid(in_training_loop("mloss = (mloss * step + loss) / (step + 1)\n"
                                 "pbar.set_description(('%10s' + '%10.4g' * 3) % (step, *mloss))").replace(
                    "import torch\n", "import torch\nmloss = torch.zeros(3)\n"),
                fixed=in_training_loop("mloss = (mloss * step + loss) / (step + 1)\nif step % 100 == 0:\n"
                                       "    pbar.set_description(('%10s' + '%10.4g' * 3) % (step, *mloss))").replace(
                    "import torch\n", "import torch\nmloss = torch.zeros(3)\n"),
                message="`mloss`"),
        # Built outside a logging call and used later: reported, no fix (the use would move too).
        Invalid(in_training_loop("desc = f'loss {loss:.3f}'\npbar.set_description(desc)"), fixed=NO_FIX),
        Invalid(in_training_loop("print('loss', loss)"), fixed=in_training_loop("if step % 25 == 0:\n    print('loss', loss)"),
                options={"log-every": 25}),
        Invalid("import torch\nlog_interval = 10\nfor step, (x, y) in enumerate(loader):\n    loss = model(x, y)\n"
                "    loss.backward()\n    opt.step()\n    print('{:.3f}'.format(loss))\n",
                fixed="import torch\nlog_interval = 10\nfor step, (x, y) in enumerate(loader):\n    loss = model(x, y)\n"
                "    loss.backward()\n    opt.step()\n    if step % log_interval == 0:\n        print('{:.3f}'.format(loss))\n"),
        # ... also a constant's (a user's `LOG_EVERY = 50` gave `step % 100`).
        Invalid(in_training_loop("print(f'loss {loss:.4f}')").replace("import torch\n", "import torch\nLOG_EVERY = 50\n"),
                fixed=in_training_loop("if step % LOG_EVERY == 0:\n    print(f'loss {loss:.4f}')").replace(
                    "import torch\n", "import torch\nLOG_EVERY = 50\n")),
        # Experiment trackers copy a tensor to the host when they are called.
        Invalid("import wandb\n" + in_training_loop("wandb.log({'train/loss': loss, 'lr': lr}, step=step)"),
                fixed="import wandb\n" + in_training_loop("if step % 100 == 0:\n"
                                                           "    wandb.log({'train/loss': loss, 'lr': lr}, step=step)"),
                message="`wandb.log()`"),
        Invalid(_WRITER + in_training_loop("writer.add_scalar('loss', loss, step)"),
                fixed=_WRITER + in_training_loop("if step % 100 == 0:\n    writer.add_scalar('loss', loss, step)")),
        Invalid(_ACCELERATOR + in_training_loop("accelerator.log({'train_loss': loss}, step=step)"),
                fixed=_ACCELERATOR + in_training_loop("if step % 100 == 0:\n"
                                                      "    accelerator.log({'train_loss': loss}, step=step)")),
        Invalid(_FABRIC_LOGGERS + in_training_loop("metrics = {'loss': loss, 'step': step}\n"
                                                   "fabric.log_dict(metrics, step=step)"),
                fixed=_FABRIC_LOGGERS + in_training_loop("metrics = {'loss': loss, 'step': step}\n"
                                                         "if step % 100 == 0:\n    fabric.log_dict(metrics, step=step)")),
        # No step given: wandb numbers its calls, so guarding would squeeze the x-axis; no fix.
        Invalid(_NO_STEP_WANDB, fixed=_NO_STEP_WANDB),
        # In the branch that steps the optimizer, the interval counts optimizer steps; without a
        # counter of them there is no fix (`i % 100 == 0` may hold on no optimizer step at all).
        Invalid(in_accumulation_step("print(f'loss {loss:.4f}')"),
                fixed=in_accumulation_step("if global_step % 100 == 0:\n    print(f'loss {loss:.4f}')")),
        Invalid(in_accumulation_step("print(f'loss {loss:.4f}')", counter=""),
                fixed=in_accumulation_step("print(f'loss {loss:.4f}')", counter="")),
        # After `if (i + 1) % accum == 0: ... else: continue` the loop runs once per optimizer
        # step too: no guard on the micro-batch index (`i % 100 == 0` there held on no step when
        # accum was 4), and with `global_step` counted there, a guard on that.
        # The loop already logs every 50 steps: that number, and that `if`, which the line joins
        # (no second `if` with the same test beside it).
        Invalid(in_training_loop("if step % 50 == 0:\n    print('step', step)\nprint(f'loss {loss:.4f}')"),
                fixed=in_training_loop("if step % 50 == 0:\n    print('step', step)\n    print(f'loss {loss:.4f}')")),
        Invalid(in_training_loop("print(f'loss {loss:.4f}')\nif step % 50 == 0:\n    print('step', step)"),
                fixed=in_training_loop("if step % 50 == 0:\n    print(f'loss {loss:.4f}')\n    print('step', step)")),
        # A keyword or a function named like an interval is no interval.
        Invalid(in_training_loop("print(f'loss {loss:.4f}')").replace(
                    "import torch\n", "import torch\ncfg = setup(log_interval=5)\ndef log_every(s):\n    pass\n"),
                fixed=in_training_loop("if step % 100 == 0:\n    print(f'loss {loss:.4f}')").replace(
                    "import torch\n", "import torch\ncfg = setup(log_interval=5)\ndef log_every(s):\n    pass\n")),
        # A loop over a progress bar of step numbers counts with its own target.
        Invalid(_TQDM_LOOP.format(iter="trange(1000)"),
                fixed=_TQDM_LOOP.format(iter="trange(1000)").replace(
                    "    print(f'loss {loss:.4f}')", "    if it % 100 == 0:\n        print(f'loss {loss:.4f}')")),
        Invalid("pbar = tqdm(range(n))\n" + _TQDM_LOOP.format(iter="pbar"),
                fixed="pbar = tqdm(range(n))\n" + _TQDM_LOOP.format(iter="pbar").replace(
                    "    print(f'loss {loss:.4f}')", "    if it % 100 == 0:\n        print(f'loss {loss:.4f}')")),
        Invalid(_ELSE_CONTINUE.format(counter=""), fixed=NO_FIX),
        Invalid(_ELSE_CONTINUE.format(counter="        global_step += 1\n"),
                fixed=_ELSE_CONTINUE.format(counter="        global_step += 1\n").replace(
                    "    print(f'loss {loss:.4f}')", "    if global_step % 100 == 0:\n        print(f'loss {loss:.4f}')")),
        # In a closure the optimizer's step calls (not L-BFGS's, which reads the loss itself): no
        # fix, the loop's counter is not in sight.
        Invalid(_CLOSURE.format(optimizer="SGD", read="print('eval', loss)", closure="closure"), fixed=NO_FIX),
        # On all steps but one in N: reported; no interval inside it (`step % 100 == 0` under
        # `step % 50 != 0` would print on no step at all).
        Invalid(in_training_loop("if step % 50 != 0:\n    print('loss', loss)"), fixed=NO_FIX),
        # ... and after `if step % 50 == 0: continue`, which leaves on one step in N only.
        Invalid(in_training_loop("if step % 50 == 0:\n    continue\nprint('loss', loss)"), fixed=NO_FIX),
        # The advice names the guard the fix writes: the loop's own counter and the script's interval
        # (an option that defaults to a positive number).
        Invalid(_ARGS + "global_step = 0\nfor batch in loader:\n    loss = model(batch)\n    loss.backward()\n"
                "    opt.step()\n    global_step += 1\n    print(f'loss {loss:.3f}', every=args.log_interval)\n",
                fixed=_ARGS + "global_step = 0\nfor batch in loader:\n    loss = model(batch)\n"
                "    loss.backward()\n    opt.step()\n    global_step += 1\n"
                "    if global_step % args.log_interval == 0:\n        print(f'loss {loss:.3f}', every=args.log_interval)\n",
                message="(`if global_step % args.log_interval == 0:`)"),
        # An interval whose value is not known to be a positive number: no guard (`step % 0`, or of
        # a string read from the environment, raises); and one that may be 0 (`--log-every 0`
        # turns logging off) was guarded by `step % args.log_every` with the default 0.
        Invalid(in_training_loop("print(f'loss {loss:.4f}')").replace("import torch\n", "import torch\nimport os\n"
                "log_interval = os.environ.get('LOG_INTERVAL', '2')\n"), fixed=NO_FIX,
                message="not written: `log_interval` is not known to be a positive whole number"),
        Invalid(_ARGS.replace("log-interval', type=int, default=10", "log-every', type=int, default=0")
                + "print('logging every', args.log_every)\n"
                + in_training_loop("print(f'loss {loss:.4f}')").partition("\n")[2], fixed=NO_FIX,
                message="not written: `args.log_every` is not known to be a positive whole number"),
        # The loop's own interval test, reused as the script writes it: with its guard against an
        # interval of 0, its conversion, its item of a mapping, its remainder (the CIFAR tutorial's
        # `i % 4 == 3`: `i % 4 == 0` printed on other steps).
        Invalid(_own_test("args.log_every > 0 and step % args.log_every == 0"),
                fixed=_own_test("args.log_every > 0 and step % args.log_every == 0", joined=True)),
        Invalid(_own_test("step % int(log_interval) == 0"), fixed=_own_test("step % int(log_interval) == 0", joined=True),
                message="(`if step % int(log_interval) == 0:`)"),
        Invalid(_own_test('step % config["log_every"] == 0'), fixed=_own_test('step % config["log_every"] == 0', joined=True)),
        Invalid(_own_test("step % 4 == 3"), fixed=_own_test("step % 4 == 3", joined=True)),
        # ... without a condition that is not about the interval (`rank == 0`: steps, not processes),
        # where the interval is known to be a positive whole number ...
        Invalid(_own_test("rank == 0 and step % log_every == 0").replace("import torch\n", "import torch\nlog_every = 10\n"),
                fixed=_own_test("rank == 0 and step % log_every == 0").replace(
                    "import torch\n", "import torch\nlog_every = 10\n").replace(
                    "    print(f'loss {loss:.4f}')\n", "    if step % log_every == 0:\n        print(f'loss {loss:.4f}')\n")),
        # ... else with the whole test, in order, also in parentheses (torchtune's recipes): a
        # condition may keep the remainder from failing (`args.wandb and step % log_every == 0`
        # with `log_every = args.log_every if args.wandb else None`: `step % log_every` alone
        # raised TypeError without `--wandb`).
        Invalid(_own_test("(step % cfg.log_every_n_steps == 0 and cfg.is_rank_zero)"),
                fixed=_own_test("(step % cfg.log_every_n_steps == 0 and cfg.is_rank_zero)", joined=True)),
        Invalid(_own_test("args.wandb and step % log_every == 0").replace(
                    "import torch\n", "import torch\nlog_every = args.log_every if args.wandb else None\n"),
                fixed=_own_test("args.wandb and step % log_every == 0", joined=True).replace(
                    "import torch\n", "import torch\nlog_every = args.log_every if args.wandb else None\n"),
                message="(`if args.wandb and step % log_every == 0:`)"),
        # Where the loop sets a name the test reads between the line and the test (`every = ...`,
        # `global_step += 1`), the line joins the test's `if` past those lines, which stay (the
        # test copied above them read `every` unbound, NameError, or before the increment, logging
        # on other steps than the script) ...
        Invalid(_own_test("step % every == 0", extra="every = 2 if epoch == 0 else 5"),
                fixed=_own_test("step % every == 0").replace(
                    "    print(f'loss {loss:.4f}')\n", "    every = 2 if epoch == 0 else 5\n").replace(
                    "    print('step', step)", "    print(f'loss {loss:.4f}')\n        print('step', step)"),
                message="(`if step % every == 0:`)"),
        Invalid("import torch\nlog_every = 4\nglobal_step = 0\nfor x in loader:\n    loss = model(x)\n    loss.backward()\n"
                "    opt.step()\n    print(f'loss {loss:.4f}')\n    global_step += 1\n"
                "    if global_step % log_every == 0:\n        print('logged', global_step)\n",
                fixed="import torch\nlog_every = 4\nglobal_step = 0\nfor x in loader:\n    loss = model(x)\n    loss.backward()\n"
                "    opt.step()\n    global_step += 1\n"
                "    if global_step % log_every == 0:\n        print(f'loss {loss:.4f}')\n        print('logged', global_step)\n"),
        # The comment above the moved line moves with it (it was dropped), in both joins: past
        # the lines that set what the test reads, and into the same test right below.
        Invalid("import torch\nlog_every = 4\nglobal_step = 0\nfor x in loader:\n    loss = model(x)\n    loss.backward()\n"
                "    opt.step()\n\n    # report the loss\n    print(f'loss {loss:.4f}')\n    global_step += 1\n"
                "    if global_step % log_every == 0:\n        print('logged', global_step)\n",
                fixed="import torch\nlog_every = 4\nglobal_step = 0\nfor x in loader:\n    loss = model(x)\n    loss.backward()\n"
                "    opt.step()\n    global_step += 1\n"
                "    if global_step % log_every == 0:\n        # report the loss\n        print(f'loss {loss:.4f}')\n"
                "        print('logged', global_step)\n"),
        Invalid(_own_test("step % 5 == 0").replace("    print(f'loss", "\n    # the loss, each step\n    print(f'loss"),
                fixed=_own_test("step % 5 == 0", joined=True).replace(
                    "        print(f'loss", "        # the loss, each step\n        print(f'loss")),
        # The loop's logging `if` is the one reused, not an evaluation `if` before it that prints
        # too: the first such `if` was taken, printing the loss every `eval_every` steps.
        Invalid("import torch\neval_every = 100\nlog_every = 10\nfor step, x in enumerate(loader):\n"
                "    loss = model(x)\n    loss.backward()\n    opt.step()\n    print(f'loss {loss:.4f}')\n"
                "    if step % eval_every == 0:\n        print('val', evaluate(model))\n"
                "    if step % log_every == 0:\n        print('logged', step)\n",
                fixed="import torch\neval_every = 100\nlog_every = 10\nfor step, x in enumerate(loader):\n"
                "    loss = model(x)\n    loss.backward()\n    opt.step()\n"
                "    if step % log_every == 0:\n        print(f'loss {loss:.4f}')\n"
                "    if step % eval_every == 0:\n        print('val', evaluate(model))\n"
                "    if step % log_every == 0:\n        print('logged', step)\n",
                message="(`if step % log_every == 0:`)"),
        # ... else under the script's named interval, when it reads no such name ...
        Invalid(_own_test("step % k == 0", extra="k = max(1, LOG_EVERY // scale())").replace(
                    "import torch\n", "import torch\nLOG_EVERY = 10\n"),
                fixed=_own_test("step % k == 0", extra="k = max(1, LOG_EVERY // scale())").replace(
                    "import torch\n", "import torch\nLOG_EVERY = 10\n").replace(
                    "    print(f'loss {loss:.4f}')\n", "    if step % LOG_EVERY == 0:\n        print(f'loss {loss:.4f}')\n")),
        # ... else not at all.
        Invalid(_own_test("step % k == 0", extra="k = max(1, 10 // scale())"), fixed=NO_FIX,
                message="(`if step % k == 0:`, not written here: it reads `k`, which the loop sets between this line and that test)"),
        # Several per-step lines above the loop's `if`: all join it (two `if`s with the same test
        # were written back to back).
        Invalid(_own_test("step % log_every == 0", extra="pbar.set_postfix(loss=loss)"),
                fixed=_own_test("step % log_every == 0", extra="pbar.set_postfix(loss=loss)", joined=True)),
        # A tensor that counts steps is no counter: `if step_t % 10 == 0:` reads it every step.
        Invalid("import torch\nstep_t = torch.zeros((), dtype=torch.long, device='cuda')\nlog_every = 10\n"
                "for batch in loader:\n    loss = model(batch)\n    loss.backward()\n    opt.step()\n    step_t += 1\n"
                "    print(f'loss {loss:.3f}')\n", fixed=NO_FIX, message="no counter of the loop was found"),
        # A progress bar over `enumerate(...)`: its index counts.
        Invalid("import torch\nfrom tqdm import tqdm\nfor step, x in tqdm(enumerate(loader), total=len(loader)):\n"
                "    loss = model(x)\n    loss.backward()\n    opt.step()\n    print(f'loss {loss:.4f}')\n",
                fixed="import torch\nfrom tqdm import tqdm\nfor step, x in tqdm(enumerate(loader), total=len(loader)):\n"
                "    loss = model(x)\n    loss.backward()\n    opt.step()\n    if step % 100 == 0:\n"
                "        print(f'loss {loss:.4f}')\n"),
        Invalid("import torch\nfrom tqdm import tqdm\npbar = tqdm(enumerate(loader))\nfor step, x in pbar:\n"
                "    loss = model(x)\n    loss.backward()\n    opt.step()\n    pbar.set_postfix(loss=loss)\n",
                fixed="import torch\nfrom tqdm import tqdm\npbar = tqdm(enumerate(loader))\nfor step, x in pbar:\n"
                "    loss = model(x)\n    loss.backward()\n    opt.step()\n    if step % 100 == 0:\n"
                "        pbar.set_postfix(loss=loss)\n"),
        # In the `else`/`elif` chain of the loop's own interval test of the counter: the fix wrote
        # `elif step > 2 and step % log_every == 0:` (never true), or that test in the `else:`.
        Invalid(in_training_loop("if step % log_every == 0:\n    print(f'full {loss:.4f}')\nelif step > 2:\n"
                                 "    print(f'mid {loss:.3f}')"),
                fixed=NO_FIX, message="not written: the line runs in the `else` of `if step % log_every == 0:`"),
        Invalid(in_training_loop("if (step + 1) % log_every == 0:\n    print(f'full {loss:.4f}')\nelif step > 2:\n"
                                 "    pass\nelse:\n    print(f'low {loss:.3f}')"),
                fixed=NO_FIX, message="the `else` of `if (step + 1) % log_every == 0:`"),
        # An `else` of a test of another counter (the epoch's) is no such branch.
        Invalid("import torch\nfor epoch in range(3):\n    for step, (x, y) in enumerate(loader):\n"
                "        loss = model(x, y)\n        loss.backward()\n        opt.step()\n"
                "        if epoch % 2 == 0:\n            pass\n        else:\n            print(f'loss {loss:.3f}')\n",
                fixed="import torch\nfor epoch in range(3):\n    for step, (x, y) in enumerate(loader):\n"
                "        loss = model(x, y)\n        loss.backward()\n        opt.step()\n"
                "        if epoch % 2 == 0:\n            pass\n        else:\n            if step % 100 == 0:\n"
                "                print(f'loss {loss:.3f}')\n"),
        # A print ending its line elsewhere (`end=' '`) beside the guarded one: guarding one half
        # printed the other on every step, each step's name beside another step's loss.
        Invalid(in_training_loop("print(f'step {step}', end=' ')\nprint(f'loss {loss:.4f}')"),
                fixed=NO_FIX, message="prints its line in two calls"),
        Invalid(in_training_loop("print(f'loss {loss:.4f}', end=' ')\nprint('lr', lr)"),
                fixed=NO_FIX, message="prints its line in two calls"),
        # Both halves log the tensor: they move under one guard together.
        Invalid(in_training_loop("acc = (out - y).abs().mean()\nprint(f'loss {loss:.3f}', end=' ')\n"
                                 "print(f'acc {acc:.3f}')"),
                fixed=in_training_loop("acc = (out - y).abs().mean()\nif step % 100 == 0:\n"
                                       "    print(f'loss {loss:.3f}', end=' ')\n    print(f'acc {acc:.3f}')")),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        if not _is_log_call(ctx, node):
            self._check_tracker(node)
            self._check_synced_log(node)
            return
        values = [v for arg in node.args for v in _formatted_tensors(ctx, arg.value)]
        if not values or not _waits_per_step(ctx, node):
            return
        self._report(node, values[0], guard_statement(self, node, self.opts["log-every"]))

    def _check_synced_log(self, node: cst.Call) -> None:
        """Lightning's `self.log(..., sync_dist=True)` in a per-step hook: a collective across
        processes for every value on every step (Lightning's docs warn of the overhead)."""
        ctx = self.ctx
        sync = ctx.keyword(node, "sync_dist")  # first: most calls have none, and the hook costs a walk
        if sync is None or ctx.literal(sync.value) is not True:
            return
        hook = ctx.loops.step_hook(node)
        if hook is None or hook.log is None or ctx.dotted(node.func) not in (hook.log, f"{hook.log}_dict"):
            return
        on_step = ctx.keyword(node, "on_step")
        if (on_step is not None and ctx.literal(on_step.value) is False) or not ctx.is_per_step(node):
            return
        self.report(
            node,
            f"`{ctx.code(node.func)}(..., sync_dist=True)` reduces the value across processes on every step; log "
            f"the per-step value without `sync_dist`, or reduce once per epoch (`on_step=False, on_epoch=True`)",
        )

    def _check_tracker(self, node: cst.Call) -> None:
        """A tensor logged to wandb, TensorBoard, accelerate's or Fabric's trackers."""
        ctx = self.ctx
        tracker = _tracker_values(ctx, node)
        if tracker is None:
            return
        values = [v for v in tracker.values if _device_tensor(ctx, v)]
        if not values or not _waits_per_step(ctx, node):
            return
        # Without an explicit step, the tracker numbers what it is given: logging every N steps
        # would squeeze the x-axis N times. No fix then.
        fix = guard_statement(self, node, self.opts["log-every"]) if tracker.step else None
        self.report(
            node,
            f"Logging tensor `{ctx.code(values[0])}` with `{ctx.code(node.func)}()` copies it to the host and waits "
            f"for the GPU on every step; log it every N steps ({interval_guard(ctx, node, self.opts['log-every'])})",
            fix,
        )

    def visit_FormattedString(self, node: cst.FormattedString) -> None:
        self._check_formatting(node)

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if isinstance(node.operator, cst.Modulo) and _is_string(node.left):
            self._check_formatting(node)

    def _check_formatting(self, node: cst.BaseExpression) -> None:
        """A string built from a tensor outside a logging call (`desc = f"loss {loss:.3f}"`):
        reported without a fix, since the name it is assigned to is used later."""
        ctx = self.ctx
        if not _waits_per_step(ctx, node) or self._inside_logging_or_error(node):
            return
        values = list(_formatted_tensors(ctx, node))
        if values:
            self._report(node, values[0], None)

    def _inside_logging_or_error(self, node: cst.CSTNode) -> bool:
        """Inside a logging call (reported there), or a `raise`/`assert` message (only on failure)."""
        for anc in self.ctx.index.ancestors(node):
            if isinstance(anc, cst.Call) and _is_log_call(self.ctx, anc):
                return True
            if isinstance(anc, (cst.Raise, cst.Assert)):
                return True
            if isinstance(anc, (cst.BaseStatement, cst.FunctionDef, cst.Lambda)):
                return False
        return False

    def _report(self, node: cst.CSTNode, value: cst.BaseExpression, fix) -> None:
        self.report(
            node,
            f"Formatting tensor `{self.ctx.code(value)}` waits for the GPU on every step; log it every N steps "
            f"({interval_guard(self.ctx, node, self.opts['log-every'])}){framework_logging(self.ctx, node)}",
            fix,
        )


_DEVICE_SYNC = {
    "torch.cuda.synchronize": True, "torch.cuda.empty_cache": True, "torch.cuda.ipc_collect": True,
    "torch.accelerator.synchronize": True, "torch.mps.synchronize": True, "torch.mps.empty_cache": True,
    "torch.cuda.memory_allocated": False, "torch.cuda.memory_reserved": False,
    "torch.cuda.max_memory_allocated": False, "torch.cuda.max_memory_reserved": False,
    "torch.cuda.memory_stats": False, "torch.cuda.memory_summary": False,
    "torch.cuda.reset_peak_memory_stats": False, "torch.cuda.mem_get_info": False,
    "torch.accelerator.empty_cache": True, "torch.accelerator.memory_allocated": False,
    "torch.accelerator.memory_reserved": False, "torch.accelerator.max_memory_allocated": False,
    "torch.accelerator.max_memory_reserved": False, "torch.accelerator.memory_stats": False,
    "torch.accelerator.reset_peak_memory_stats": False, "torch.accelerator.get_memory_info": False,
}


def _device_sync_name(ctx, call: cst.Call) -> str | None:
    """The `_DEVICE_SYNC` name a call stands for: `torch.cuda.synchronize()` under any import
    alias, or the same function of a device module (`torch.get_device_module(device).synchronize()`,
    directly or through a name assigned from it), spelled as its `torch.cuda` twin."""
    qn = ctx.names.qualified(call.func)
    if qn in _DEVICE_SYNC:
        return qn
    func = call.func
    if not isinstance(func, cst.Attribute) or f"torch.cuda.{func.attr.value}" not in _DEVICE_SYNC:
        return None
    receiver = func.value
    sources = [receiver] if isinstance(receiver, cst.Call) else ctx.assigned_values(receiver)
    if sources and all(isinstance(v, cst.Call) and ctx.names.qualified(v.func) == "torch.get_device_module"
                       for v in sources):
        return f"torch.cuda.{func.attr.value}"
    return None


_STALE_AFTER_LOOP = in_training_loop("peak = torch.cuda.max_memory_allocated()") + "print(peak)\n"
_STALE_AFTER_WORK = in_training_loop("m = torch.cuda.memory_allocated()\nopt.zero_grad()\nstats.append(m)")
# A list filled per step and read after the loop: filled every N steps it would hold every N-th value.
_FILLED_READ_AFTER = "import torch\nstats = []\n" + in_training_loop(
    "stats.append(torch.cuda.memory_allocated())").partition("\n")[2] + "print(len(stats), max(stats))\n"


# A helper that synchronizes, called in the training loop (`{loop}`).
_SYNC_HELPER = ("import time\nimport torch\ndef cuda_sync():\n    torch.cuda.synchronize()\n"
                "for x in loader:\n    model(x).sum().backward()\n    opt.step()\n    {loop}\n")


class PerStepDeviceSyncCall(Rule):
    code = "TL203"
    name = "per-step-device-sync-call"
    summary = "`torch.cuda.synchronize()`, `empty_cache()` or memory statistics on every step"
    source = "§5.2"
    fix_applicability = "unsafe"
    triggers = ("synchronize", "empty_cache", "memory_", "ipc_collect", "mem_get_info", "get_memory_info")
    needs_hot_loop = True
    options = {"log-every": Option(100, int, "The interval the fix uses for statistics when the script defines none.",
                                   minimum=1)}
    docs = """
## What it does
Flags `torch.cuda.synchronize()`, `torch.cuda.empty_cache()` and `torch.cuda.memory_*` statistics
called on every step of the hot loop, and the same calls spelled device-agnostically
(`torch.accelerator.*`, a module from `torch.get_device_module(device)`). A `synchronize()` in a
function that reads a clock (timing GPU work), uses a side stream (`torch.cuda.stream(s)`,
`wait_stream`) or copies to the host with `non_blocking=True` is not flagged: there it may be what
makes a measurement or a read of the host copy correct.

A synchronize counts as timing only when a clock is read in the same loop body: one read
before and one after the loop time the whole run. CUDA events count as a clock (`end.record()`
of a `torch.cuda.Event`, `start.elapsed_time(end)`, which needs the end event finished). A
synchronize in a helper (`def cuda_sync(): torch.cuda.synchronize()`) counts as timing when a
per-step call of the helper is in a loop body that reads a clock.

## Why is this bad?
`synchronize()` blocks the host until the GPU is idle, so nothing is queued ahead; `empty_cache()`
returns cached blocks that the next step must allocate again (with synchronisation). Memory
statistics (`memory_allocated()`, `max_memory_reserved()`, `reset_peak_memory_stats()`) do not
wait for the GPU: they read the caching allocator's counters on the host, but each call builds
the whole statistics dict (`mem_get_info()` asks the driver), host time on every step.

## Example
```python
for batch in loader:
    ...
    opt.step()
    torch.cuda.synchronize()
```

## Use instead
Remove the call, or keep it under the logging interval when it serves a measurement:
```python
    if step % log_every == 0:
        print(torch.cuda.max_memory_allocated())
```

## Fix safety
Unsafe: `synchronize()`/`empty_cache()` statements are removed (timings taken around them change);
statistics are put under the logging interval (joined with `and` to the test of an `if` that
holds only them: `if torch.cuda.is_available() and step % 100 == 0:`). A statistic assigned to a name moves together with
the statements right after it that read the name (`m = torch.cuda.memory_allocated()` and
`stats.append(m)`); when the name is read anywhere else (later in the loop after other work,
earlier in the loop, after it), there is no fix: that read would see a stale value, or none. Nor is
there one when the statement fills a container (`stats.append(torch.cuda.memory_allocated())`)
that is read anywhere else: it would hold every N-th value; nor when the call is in a helper
that is also called where it does not run on every step, or used by name (an inference
benchmark's `cuda_sync()`): editing its body would change those uses too. Nor in the `else:` or
`elif` of an `if` whose test takes a remainder of the same counter (`if step % log_every == 0:
... else:`), where an interval test may never hold.
"""
    valid = [
        Valid(in_training_loop("if step % 100 == 0:\n    torch.cuda.synchronize()")),
        Valid(in_training_loop("pass") + "torch.cuda.synchronize()\n"),
        Valid("import torch\nfor epoch in range(3):\n    torch.cuda.empty_cache()\n    train_one_epoch()\n"),
        Valid(in_training_loop("torch.synchronize_everything = 1")),
        # Timing GPU work needs the synchronize (yolov5's time_sync() in its profile loop).
        Valid("import time\n" + in_training_loop("torch.cuda.synchronize()\nt1 = time.perf_counter()")),
        # The host reads a non-blocking copy to it, or a side stream's work, after the synchronize.
        Valid(in_training_loop("preds = out.argmax(-1).to('cpu', non_blocking=True)\ntorch.cuda.synchronize()\n"
                               "hist += np.bincount(preds.numpy())")),
        Valid(in_training_loop("with torch.cuda.stream(side):\n    ema.update(model)\ntorch.cuda.synchronize()")),
        # The CPU named by a variable (as TL108 reads device names), and a pinned host buffer.
        Valid("import torch\nout_dev = torch.device('cpu')\n" + in_training_loop(
            "preds = out.argmax(-1).to(out_dev, non_blocking=True)\ntorch.cuda.synchronize()\nhist += preds.numpy()")),
        Valid(in_training_loop("pinned_buf.copy_(out, non_blocking=True)\ntorch.cuda.synchronize()\nlog(pinned_buf)")),
        # CUDA events time the step like a clock: `elapsed_time` needs the end event finished.
        Valid(in_training_loop("end.record()\ntorch.cuda.synchronize()\ntimes.append(start.elapsed_time(end))")),
        Valid("import torch\nstart = torch.cuda.Event(enable_timing=True)\n" + in_training_loop(
            "start.record()\ntorch.cuda.synchronize()").partition("\n")[2]),
        # A helper's synchronize, called in a loop body that reads a clock (it was removed from the helper).
        Valid(_SYNC_HELPER.format(loop="t0 = time.perf_counter()\n    cuda_sync()\n    print(time.perf_counter() - t0)")),
    ]
    invalid = [
        # A clock read only before and after the loop times the whole run: each step's
        # synchronize is not part of that measurement.
        Invalid(in_training_loop("torch.cuda.synchronize()").replace("import torch\n", "import time\nimport torch\nstart = time.time()\n")
                + "print(time.time() - start)\n", message="on every step"),
        # Another statement on the same line (`gc.collect(); ...`): guarding the line would run it
        # every N steps too; reported, no fix.
        Invalid("import gc\n" + in_training_loop("gc.collect(); torch.cuda.empty_cache()"), fixed=NO_FIX),
        Invalid(in_training_loop("torch.cuda.synchronize()"), fixed=in_training_loop("").replace("    \n", "")),
        # A TrainerCallback's step hook: under the Trainer's own counter and logging interval.
        Invalid("import torch\nfrom transformers import TrainerCallback\nclass Memory(TrainerCallback):\n"
                "    def on_step_end(self, args, state, control, **kwargs):\n"
                "        print(torch.cuda.memory_allocated())\n",
                fixed="import torch\nfrom transformers import TrainerCallback\nclass Memory(TrainerCallback):\n"
                "    def on_step_end(self, args, state, control, **kwargs):\n"
                "        if state.global_step % state.logging_steps == 0:\n"
                "            print(torch.cuda.memory_allocated())\n",
                message="(`if state.global_step % state.logging_steps == 0:`)"),
        # ... with no `state` parameter to read the counter from: reported, no fix.
        Invalid("import torch\nfrom transformers import TrainerCallback\nclass Memory(TrainerCallback):\n"
                "    def on_step_end(self, *args, **kwargs):\n"
                "        print(torch.cuda.memory_allocated())\n", fixed=NO_FIX, message="`if step % 100 == 0:`"),
        # In the `else` of the loop's own interval test: the guard written there never held.
        Invalid(in_training_loop("if step % 10 == 0:\n    pass\nelse:\n    print(torch.cuda.memory_allocated())"),
                fixed=NO_FIX, message="the line runs in the `else` of `if step % 10 == 0:`"),
        Invalid(in_training_loop("torch.cuda.empty_cache()\nprint(step)"), fixed=in_training_loop("print(step)")),
        # A guard or a `try` left with nothing to do goes with the call; an `elif`, an `else` or a
        # `finally` keeps its statement (with `pass` where the body empties).
        Invalid(in_training_loop("if step > 0 and not args.debug:\n    torch.cuda.empty_cache()\nprint(step)"),
                fixed=in_training_loop("print(step)")),
        Invalid(in_training_loop("try:\n    torch.cuda.synchronize()\nexcept RuntimeError:\n    pass\nprint(step)"),
                fixed=in_training_loop("print(step)")),
        Invalid(in_training_loop("try:\n    torch.cuda.synchronize()\nfinally:\n    done()"),
                fixed=in_training_loop("try:\n    pass\nfinally:\n    done()")),
        Invalid(in_training_loop("if step > 0:\n    torch.cuda.empty_cache()\nelse:\n    warm()"),
                fixed=in_training_loop("if step > 0:\n    pass\nelse:\n    warm()")),
        Invalid(in_training_loop("if next(flags):\n    torch.cuda.empty_cache()"),
                fixed=in_training_loop("if next(flags):\n    pass")),
        # Blank lines on both sides of the call: one stays, with the comment above it.
        Invalid("import torch\nfor step, x in enumerate(loader):\n    # free memory\n\n    torch.cuda.empty_cache()\n\n"
                "    model(x).sum().backward()\n    opt.step()\n",
                fixed="import torch\nfor step, x in enumerate(loader):\n    # free memory\n\n"
                "    model(x).sum().backward()\n    opt.step()\n"),
        Invalid(in_training_loop("mem = torch.cuda.max_memory_allocated()"),
                fixed=in_training_loop("if step % 100 == 0:\n    mem = torch.cuda.max_memory_allocated()")),
        # A statistic that is the whole body of a plain `if`: one joined condition (an `if step %
        # 100 == 0:` was nested in it); a condition that binds more loosely than `and` keeps the nesting.
        Invalid(in_training_loop("if torch.cuda.is_available():\n    mem = torch.cuda.max_memory_allocated()"),
                fixed=in_training_loop("if torch.cuda.is_available() and step % 100 == 0:\n"
                                       "    mem = torch.cuda.max_memory_allocated()")),
        Invalid(in_training_loop("if a or b:\n    mem = torch.cuda.max_memory_allocated()"),
                fixed=in_training_loop("if a or b:\n    if step % 100 == 0:\n        mem = torch.cuda.max_memory_allocated()")),
        Invalid(in_training_loop("if torch.cuda.is_available():\n    torch.cuda.synchronize()"),
                fixed=in_training_loop("").replace("    \n", "")),
        Invalid("from torch import cuda\nfor x in loader:\n    model(x).sum().backward()\n    opt.step()\n    cuda.synchronize()\n",
                fixed="from torch import cuda\nfor x in loader:\n    model(x).sum().backward()\n    opt.step()\n"),
        # Device-agnostic spellings: torch.accelerator, and a device module (torchtitan, torchtune).
        Invalid(in_training_loop("torch.accelerator.empty_cache()"), fixed=in_training_loop("").replace("    \n", "")),
        Invalid(in_training_loop("device_module.synchronize()").replace(
            "import torch\n", "import torch\ndevice_module = torch.get_device_module(device_type)\n"),
            fixed=in_training_loop("").replace("    \n", "").replace(
                "import torch\n", "import torch\ndevice_module = torch.get_device_module(device_type)\n"),
            message="`device_module.synchronize()`"),
        Invalid(in_training_loop("stats = torch.get_device_module(device).max_memory_reserved()"),
                fixed=in_training_loop("if step % 100 == 0:\n"
                                       "    stats = torch.get_device_module(device).max_memory_reserved()")),
        # The statement right after that reads the statistic moves with it (it would read a stale value).
        Invalid(in_training_loop("m = torch.cuda.memory_allocated()\nstats.append(m)\nprint(step)"),
                fixed=in_training_loop("if step % 100 == 0:\n    m = torch.cuda.memory_allocated()\n"
                                       "    stats.append(m)\nprint(step)")),
        # Read after the loop, or after unrelated work: no fix.
        Invalid(_STALE_AFTER_LOOP, fixed=_STALE_AFTER_LOOP),
        Invalid(_STALE_AFTER_WORK, fixed=_STALE_AFTER_WORK),
        Invalid(_FILLED_READ_AFTER, fixed=_FILLED_READ_AFTER),
        # Under a remainder that holds on all steps but one in N: removed; a statistic is not put
        # under an interval inside it (it could hold on no step).
        Invalid(in_training_loop("if step % 50 != 0:\n    torch.cuda.empty_cache()"),
                fixed=in_training_loop("").replace("    \n", "")),
        Invalid(in_training_loop("if step % 50:\n    mem = torch.cuda.memory_allocated()"), fixed=NO_FIX),
        # A helper also called outside the hot loop (an inference benchmark): its body is not edited.
        Invalid(_SYNC_HELPER.format(loop="cuda_sync()") + "model(x)\ncuda_sync()\n", fixed=NO_FIX,
                message="not fixed: `cuda_sync` is also called where it does not run on every step"),
        Invalid(_SYNC_HELPER.format(loop="cuda_sync()"), fixed=_SYNC_HELPER.format(loop="cuda_sync()").replace(
            "    torch.cuda.synchronize()\n", "    pass\n")),
        # Statistics read the allocator's counters on the host: no wait for the GPU.
        Invalid(in_training_loop("torch.cuda.reset_peak_memory_stats()"), message="no wait for the GPU"),
        # The advice names the guard the fix writes: the loop's own counter, the default interval.
        Invalid("import torch\nfor it in range(1000):\n    opt.step()\n    print(torch.cuda.memory_allocated())\n",
                fixed="import torch\nfor it in range(1000):\n    opt.step()\n    if it % 100 == 0:\n"
                "        print(torch.cuda.memory_allocated())\n",
                message="call it under the logging interval (`if it % 100 == 0:`)"),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        qn = _device_sync_name(ctx, node)
        if qn is None or not ctx.is_per_step(node):
            return
        helper, callers = _helper_callers(ctx, node)
        if qn.endswith(".synchronize") and (ctx.measures_time(node) or any(
                ctx.is_per_step(c) and ctx.measures_time(c) for c in callers)):
            # Synchronizing to time GPU work is the point (yolov5's time_sync()), also in a helper
            # whose per-step call sits among the clock reads (`t0 = time.perf_counter(); ...;
            # cuda_sync(); print(time.perf_counter() - t0)`).
            return
        if qn.endswith(".synchronize") and ctx.orders_async_work(node):
            return  # it may be what lets the host read a side stream's work or a non-blocking copy
        removable = _DEVICE_SYNC[qn]
        fix = None
        parent = ctx.parent(node)
        stmt = ctx.parent(parent) if isinstance(parent, cst.Expr) else None
        if removable and isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1:
            fix = _remove_statement(self, stmt, f"Remove `{ctx.code(node)}`")
            advice = "remove it (or run it under the logging interval when it serves a measurement)"
        else:
            fix = guard_statement(self, node, self.opts["log-every"])
            advice = f"call it under the logging interval ({interval_guard(ctx, node, self.opts['log-every'])})"
        # A helper that other code calls too (an inference benchmark's `cuda_sync()`): editing its
        # body would change those callers as well.
        elsewhere = _used_elsewhere(ctx, helper, callers) if helper is not None else None
        if elsewhere is not None:
            fix = None
            advice += f"; not fixed: `{helper.name.value}` is also {elsewhere}, which would change too"
        if removable:
            problem = "stalls the GPU pipeline"
        elif qn.endswith(("mem_get_info", "get_memory_info")):
            problem = "asks the driver for free memory (host time each step, no wait for the GPU)"
        else:
            # memory_allocated() and friends read the caching allocator's counters on the host
            # (`torch._C._cuda_memoryStats` builds the whole statistics dict): no device sync.
            problem = "builds the allocator's statistics on the host (host time each step, no wait for the GPU)"
        self.report(node, f"`{ctx.code(node.func)}()` on every step {problem}; {advice}", fix)


def _helper_callers(ctx, node: cst.CSTNode) -> tuple[cst.FunctionDef | None, list[cst.Call]]:
    """The module's function that holds node outside any hot loop of its own (a helper such as
    `def cuda_sync(): torch.cuda.synchronize()`), and the calls of it; (None, []) when node is
    in a hot loop's body or a framework's step hook."""
    fn = ctx.index.enclosing_function(node)
    if fn is None or ctx.loops.hot_loop_of(node) is not None or ctx.loops.step_hook(node) is not None:
        return None, []
    return fn, list(ctx.loops.calls_by_name.get(fn.name.value, ()))


def _used_elsewhere(ctx, fn: cst.FunctionDef, callers: list[cst.Call]) -> str | None:
    """How the helper fn is used other than by a call on every step, as words for a message
    (`called where it does not run on every step`, `used by name`); None when every use is such a
    call."""
    for call in callers:
        if not ctx.is_per_step(call):
            return "called where it does not run on every step"
    calls = {id(c.func) for c in callers} | {id(c.func.attr) for c in callers if isinstance(c.func, cst.Attribute)}
    for name in ctx.index.nodes(cst.Name):
        if name.value == fn.name.value and name is not fn.name and id(name) not in calls:
            return "used by name, not only called"
    return None


def _remove_statement(rule: Rule, stmt: cst.BaseStatement, message: str):
    """Fix that deletes a statement, keeping its comments (moved to the next statement). A
    statement left with nothing to do goes too: a guard left empty (`if torch.cuda.is_available():`,
    `if step > 0:`), and a `try` left empty with no `else` or `finally` (its handlers could no
    longer run); otherwise an empty block gets `pass`."""
    ctx = rule.ctx
    block = ctx.parent(stmt)
    if not isinstance(block, (cst.IndentedBlock, cst.Module)):
        return None
    owner = ctx.parent(block)
    if len(block.body) == 1 and _empty_without_body(ctx, owner, block):
        return _remove_statement(rule, owner, message)
    return rule.fix(Applicability.UNSAFE, message, ctx.block_without(stmt))


def _empty_without_body(ctx, owner: cst.CSTNode, block: cst.BaseSuite) -> bool:
    """Whether `owner`, with `block` (its body) emptied, would do nothing at all."""
    if isinstance(owner, cst.If):
        # (not an `elif`: removing it would take the branches after it along)
        return owner.orelse is None and _side_effect_free(ctx, owner.test) \
            and not isinstance(ctx.parent(owner), cst.If)
    if isinstance(owner, cst.Try):
        return owner.body is block and owner.orelse is None and owner.finalbody is None
    return False


def _side_effect_free(ctx, test: cst.BaseExpression) -> bool:
    """A guard's test whose evaluation has no effect worth keeping: names, attributes and
    literals, comparisons and arithmetic or boolean operations of them (`step > 0`,
    `args.debug and rank == 0`), and `torch.cuda.is_available()`."""
    if isinstance(test, (cst.Name, cst.Attribute, cst.Integer, cst.Float, cst.SimpleString)):
        return True
    if isinstance(test, cst.Comparison):
        return _side_effect_free(ctx, test.left) and all(
            _side_effect_free(ctx, c.comparator) for c in test.comparisons)
    if isinstance(test, (cst.BooleanOperation, cst.BinaryOperation)):
        return _side_effect_free(ctx, test.left) and _side_effect_free(ctx, test.right)
    if isinstance(test, cst.UnaryOperation):
        return _side_effect_free(ctx, test.expression)
    if isinstance(test, cst.Call) and not test.args:
        return (ctx.names.qualified(test.func) or "").endswith(".is_available")
    return False


def _only_raise(branch: cst.If) -> cst.Raise | None:
    """The `raise` that is the whole body of an `if` without `else`."""
    body = branch.body.body
    if branch.orelse is not None or len(body) != 1 or not isinstance(body[0], cst.SimpleStatementLine):
        return None
    small = body[0].body
    if len(small) == 1 and isinstance(small[0], cst.Raise) and small[0].exc is not None:
        return small[0]
    return None


def _one_tensor_expression(ctx, expr: cst.BaseExpression) -> bool:
    """A tensor computed without asking Python for a bool on the way: not `a and b`, not `not a`,
    not a chained comparison, not `is`/`in`."""
    if isinstance(expr, cst.BooleanOperation):
        return False
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Not):
        return False
    if isinstance(expr, cst.Comparison):
        if len(expr.comparisons) != 1 or isinstance(expr.comparisons[0].operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)):
            return False
        return ctx.tensors.is_tensor(expr.left) or ctx.tensors.is_tensor(expr.comparisons[0].comparator)
    return ctx.tensors.is_tensor(expr)


# A step loop whose batch arrives on the host and is moved field by field.
_HOST_BATCH = ("import torch\nfor batch in loader:\n    x = batch['x'].cuda(non_blocking=True)\n    y = batch['y']\n"
               "    {test}\n    loss = model(x, y.cuda(non_blocking=True))\n    loss.backward()\n    opt.step()\n")


def _is_tensor_test(ctx, test: cst.BaseExpression) -> bool:
    if isinstance(test, cst.Comparison):
        if any(isinstance(t.operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)) for t in test.comparisons):
            return False
        sides = [test.left] + [t.comparator for t in test.comparisons]
        return any(_device_tensor(ctx, s) for s in sides)
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return _is_tensor_test(ctx, test.expression)
    if isinstance(test, cst.BooleanOperation):
        return _is_tensor_test(ctx, test.left) or _is_tensor_test(ctx, test.right)
    if isinstance(test, (cst.Name, cst.Attribute)):
        return False  # a bare name is usually a Python flag; only clear tensor expressions count
    return _device_tensor(ctx, test)


def _device_tensor(ctx, expr: cst.BaseExpression) -> bool:
    """A tensor that may be on the device: one known to be in host memory (a batch field the loop
    has not moved, `Tensors.on_host`) is read without waiting for the GPU."""
    return ctx.tensors.is_tensor(expr) and not ctx.tensors.on_host(expr)


class TensorConditionPerStep(Rule):
    code = "TL204"
    name = "tensor-condition-per-step"
    summary = "Python `if`/`while`/`assert`/conditional expression/`min`/`max` on a tensor value on every step"
    source = "§5.2"
    fix_applicability = "suggestion"
    triggers = ("if ", "while ", "assert ", "min(", "max(")
    needs_hot_loop = True
    docs = """
## What it does
Flags a Python `if`, `while`, `assert` or conditional expression (`x if torch.isnan(loss) else
y`) whose condition is a tensor (`if torch.isnan(loss):`, `if loss == 0:`, `assert not
torch.isinf(grad).any()`) on every step of the hot loop, and the test of a hot loop that is
itself a `while` on a tensor (`while loss > eps:`, evaluated before every step); also `min()` /
`max()` given a tensor among two or more arguments (`best = min(best, loss)`), which compare it in
Python and ask for the result's bool. Not one known to be in host memory (a batch field the loop
has not moved, as TL201 reads it); an explicit conversion in the test (`if float(loss) > 9:`,
`if bool(t):`, `if math.isnan(loss):`) is TL201's.

The method spellings (`loss.isnan()`, `gn.isfinite()`) count; a parameter named like a tensor
that every call hands a Python number (`check(loss.item(), 10)`) does not. An interval counted
by a device tensor (`if step_t % 10 == 0:`) is flagged: the remainder is read on every step.

## Why is this bad?
Python needs a bool: the tensor is copied to the host, which waits for the GPU to finish every
queued kernel, on every step.

## Example
```python
    if torch.isnan(loss):
        raise RuntimeError("nan")
```

## Use instead
```python
    torch._assert_async(~torch.isnan(loss))   # checked on the device, no sync
```
or check at the logging interval.

## Fix safety
A suggestion only (shown in diffs and reviews, never written by `--fix`): `assert cond` and
`if cond: raise ...` (a `raise` alone in the branch) are rewritten to `torch._assert_async(...)`
(`torch._assert_async(torch.logical_not(cond))` for the `if`), keeping a plain string message.
It raises asynchronously, later than the Python check did, a `RuntimeError` instead of the
original exception, and a failed device-side assert leaves the CUDA context unusable. A condition
that still needs a Python bool (`a or b`, `0 < x < 1`) gets no suggestion, nor do conditional
expressions, `min`/`max` (their result would stay a tensor) and a training loop's own `while`
(how often to test is the script's choice).
"""
    valid = [
        # A parameter named like a tensor that every call hands a Python number holds a float.
        Valid("import torch\ndef check(loss, limit):\n    if loss > limit:\n        print('big')\n"
              + in_training_loop("check(loss.item(), 10)").partition("\n")[2]),
        # Python floats, however they are set up: unpacked from a tuple of numbers, or smoothed
        # from `.item()` with a parameter (an LR finder's running loss).
        Valid("import torch\ndef train():\n    avg_loss, best_loss = 0.0, float('inf')\n    for i in range(10):\n"
              "        loss = model(x).mean()\n        loss.backward()\n        opt.step()\n"
              "        avg_loss = loss.item()\n        if avg_loss < best_loss:\n            best_loss = avg_loss\n"),
        Valid("import math\nimport torch\ndef find(smooth=0.05):\n    avg_loss, best_loss = 0.0, math.inf\n"
              "    for i in range(10):\n        loss = model(x).mean()\n        loss.backward()\n        opt.step()\n"
              "        avg_loss = smooth * loss.item() + (1 - smooth) * avg_loss\n"
              "        smoothed = avg_loss / (1 - (1 - smooth) ** (i + 1))\n"
              "        if smoothed < best_loss:\n            best_loss = smoothed\n"
              "        if smoothed > 4 * best_loss:\n            break\n"),
        Valid(in_training_loop("if step % 100 == 0 and torch.isnan(loss):\n    raise RuntimeError('nan')")),
        Valid(in_training_loop("if loss is None:\n    continue")),
        Valid(in_training_loop("if use_amp:\n    scaler.update()")),
        Valid("import torch\nfor x in val_loader:\n    out = model(x)\n    assert not torch.isnan(out).any()\n"),
        Valid(in_training_loop("if step == 0:\n    print(loss)")),
        # torch.is_* predicates answer a Python bool; loss_scale is a setting (transformers, deepspeed).
        Valid(in_training_loop("if torch.is_floating_point(x):\n    x = x.half()")),
        Valid(in_training_loop("if self.clip_grad == 0.0 and self.loss_scale == 1.0:\n    continue")),
        # `prev = loss` after `loss = loss.item()`: both floats (timm's optimizer tests).
        Valid(in_training_loop("loss = loss.item()\nif step > 2:\n    assert loss < prev_loss\nprev_loss = loss")),
        # A batch field the loop never moves is in host memory: testing it waits for no GPU.
        Valid(_HOST_BATCH.format(test="if y.sum() == 0:\n        continue")),
        Valid(_HOST_BATCH.format(test="if torch.bincount(y, minlength=3)[0] == 0:\n        continue")),
        # min/max and conditional expressions of Python numbers, under the logging interval, or
        # outside the loop; `torch.max` keeps it on the device.
        Valid(in_training_loop("if step % 100 == 0:\n    lossf = loss.item()\nbest = min(best, lossf)\nlr = max(1e-5, lr * 0.9)")),
        Valid(in_training_loop("peak = torch.max(peak, loss.detach())\nw = max(1, step)")),
        Valid(in_training_loop("if step % 100 == 0:\n    best = min(best, loss)\n    flag = 1 if loss > 9 else 0")),
        Valid(in_training_loop("pass") + "best = min(best, loss)\nflag = 1 if torch.isnan(loss) else 0\n"),
        Valid(in_training_loop("scale = 0.5 if step > 10 else 1.0\nv = loss.detach() if keep else None")),
        # A training loop whose own test reads no tensor, or reads one only at its interval.
        Valid("import torch\nstep = 0\nwhile step < max_steps:\n    loss = model(x)\n    loss.backward()\n"
              "    opt.step()\n    step += 1\n"),
        Valid("import torch\nstep, lossf = 0, float('inf')\nwhile lossf > eps and step < n:\n    loss = model(x)\n"
              "    loss.backward()\n    opt.step()\n    step += 1\n    if step % 100 == 0:\n        lossf = loss.item()\n"),
        # An outer `while` around the hot loop (per epoch, not per step).
        Valid("import torch\nwhile val_loss > eps:\n    for x in loader:\n        loss = model(x)\n        loss.backward()\n"
              "        opt.step()\n    val_loss = evaluate(model)\n"),
    ]
    invalid = [
        # The method spellings of the checks (`loss.isnan()`, a clipped norm's `gn.isfinite()`).
        Invalid(in_training_loop("if loss.isnan():\n    print('nan')"), message="`if` on a tensor"),
        Invalid(in_training_loop("gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\nif gn.isfinite():\n    sched.step()"),
                message="`if` on a tensor"),
        Invalid("import torch\nfrom torch.nn.utils import clip_grad_norm_\n" + in_training_loop(
            "gn = clip_grad_norm_(model.parameters(), 1.0)\nif gn > 10:\n    skipped += 1").replace("import torch\n", "", 1)),
        # Smoothed from the loss tensor itself (no `.item()`): a tensor.
        Invalid("import torch\ndef train(best=1.0):\n    ema = 0.0\n    for i in range(10):\n"
                "        loss = model(x).mean()\n        loss.backward()\n        opt.step()\n"
                "        ema = 0.9 * ema + 0.1 * loss\n        if ema < best:\n            best = 0.5\n"),
        # ... one it moved is on the device.
        Invalid(_HOST_BATCH.format(test="if x.sum() == 0:\n        continue"), fixed=NO_FIX),
        Invalid(in_training_loop("if torch.isnan(loss):\n    raise RuntimeError('nan')"), fixed=NO_FIX),
        Invalid(in_training_loop("if loss == 0:\n    break"), fixed=NO_FIX),
        Invalid(in_training_loop("assert torch.isfinite(loss)"), fixed=NO_FIX),
        Invalid(in_training_loop("assert not torch.isnan(loss).any()"), fixed=NO_FIX),
        Invalid(in_training_loop("while loss > 10:\n    loss = loss / 2"), fixed=NO_FIX),
        # The tensor is read whenever the remainder is not zero: on most steps.
        Invalid(in_training_loop("if step % 100 != 0 and torch.isnan(loss):\n    skipped += 1"), fixed=NO_FIX),
        # An interval counted by a tensor on the device reads it on every step (`step_t > 5` was
        # reported, `step_t % 10 == 0` taken for an interval).
        Invalid(in_training_loop("step_t += 1\nif step_t % 10 == 0:\n    print('ten')").replace(
            "import torch\n", "import torch\nstep_t = torch.zeros((), dtype=torch.long, device='cuda')\n"),
            fixed=NO_FIX, message="`if` on a tensor"),
        # min/max of a tensor compare it in Python (they were not reported).
        Invalid(in_training_loop("best = min(best, loss)"), fixed=NO_FIX, message="`min()` compares tensor `loss`"),
        Invalid(in_training_loop("worst = max(loss.detach(), 0.0)"), fixed=NO_FIX, message="`max()` compares"),
        # A conditional expression on a tensor asks for its bool as `if` does (it was not reported).
        Invalid(in_training_loop("skipped += 1 if torch.isnan(loss) else 0"), fixed=NO_FIX,
                message="`... if ... else ...` on a tensor"),
        Invalid(in_training_loop("scale = 0.5 if loss > 1.0 else 1.0"), fixed=NO_FIX, message="`torch.where(...)`"),
        # The training loop's own test (`while loss > eps:`) runs before every step (it was not
        # reported: it is not inside the loop's body).
        Invalid("import torch\nloss = torch.tensor(1.0)\nwhile loss > 1e-3:\n    loss = model(x)\n    loss.backward()\n"
                "    opt.step()\n", fixed=NO_FIX, message="`while` on a tensor"),
    ]

    def _check(self, node, test: cst.BaseExpression, kind: str, each_iteration: bool = False) -> None:
        """each_iteration: the test is the hot loop's own (`while loss > eps:`), evaluated before
        every step though it is not inside the loop's body."""
        ctx = self.ctx
        # `if step % n == 0 and torch.isnan(loss)`: the tensor part only runs at the interval; but an
        # interval counted by a tensor (`if step_t % 10 == 0:`) reads that tensor on every step.
        modulo = first_modulo(test)
        counted_on_device = modulo is not None and _device_tensor(ctx, modulo.left)
        if (ctx.loops.limits_body(test) and not counted_on_device) or not _is_tensor_test(ctx, test) \
                or not (each_iteration or _waits_per_step(ctx, node)):
            return
        fix = None
        if isinstance(node, cst.Assert):
            stmt = ctx.parent(node)
            if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1:
                fix = self._assert_async(node, test, negate=False, message=node.msg)
        elif isinstance(node, cst.If):
            raised = _only_raise(node)
            if raised is not None:
                exc = raised.exc
                message = exc.args[0].value if isinstance(exc, cst.Call) and len(exc.args) == 1 else None
                fix = self._assert_async(node, test, negate=True, message=message)
        if each_iteration:
            advice = (f"loop on the step count and test it at the logging interval (`if step % 100 == 0 and not "
                      f"({ctx.code(test)}): break`); not fixed: how often to test is the script's choice")
        elif isinstance(node, cst.IfExp):
            advice = "pick on the device (`torch.where(...)`) or check it at the logging interval"
        else:
            advice = "use `torch._assert_async(...)` or check it at the logging interval"
        self.report(test, f"`{kind}` on a tensor copies it to the host and waits for the GPU every step; {advice}", fix)

    def visit_IfExp(self, node: cst.IfExp) -> None:
        # `x if torch.isnan(loss) else y` asks Python for a bool as `if` does.
        self._check(node, node.test, "... if ... else ...")

    def visit_Call(self, node: cst.Call) -> None:
        """`min(best, loss)` / `max(loss, 0.0)` of a tensor: Python's `<` on it gives a tensor whose
        truth min/max ask for, which copies it to the host: a tensor condition, as `if loss < best:`
        is (not TL201's: no conversion is written). No fix: `torch.minimum` wants tensors on both
        sides, and the result would stay a tensor where the code may expect a number."""
        ctx = self.ctx
        qn = ctx.names.qualified(node.func)
        if qn not in ("builtins.min", "builtins.max") or len(node.args) < 2 \
                or any(a.star or a.keyword is not None for a in node.args):
            return
        tensors = [a.value for a in node.args if _device_tensor(ctx, a.value)]
        if not tensors or not _waits_per_step(ctx, node):
            return
        name = qn.rsplit(".", 1)[-1]
        self.report(
            node,
            f"`{name}()` compares tensor `{ctx.code(tensors[0])}` in Python, which copies it to the host and waits "
            f"for the GPU every step; keep it on the device (`torch.{name}imum`, `torch.clamp`) or compare at the "
            f"logging interval; not fixed: the result would stay a tensor where the code may expect a number",
        )

    def _assert_async(self, node, test: cst.BaseExpression, negate: bool, message):
        """Suggestion: `assert cond` / `if not cond: raise` as `torch._assert_async(cond)`; a plain
        string message is kept. Only for a condition that is one tensor expression: `a and b` or
        `0 < x < 1` would still ask Python for a bool."""
        ctx = self.ctx
        inner = test
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            inner, negate = test.expression, not negate
        if not _one_tensor_expression(ctx, inner):
            return None
        torch_name, imports = ctx.module_name("torch")
        cond = f"{torch_name}.logical_not({ctx.code(inner)})" if negate else ctx.code(inner)
        if isinstance(message, (cst.SimpleString, cst.ConcatenatedString)):
            cond += f", {ctx.code(message)}"
        new = cst.parse_statement(f"{torch_name}._assert_async({cond})\n")
        if isinstance(node, cst.Assert):
            replacement = (node, new.body[0])
        else:
            replacement = (node, new.with_changes(leading_lines=node.leading_lines))
        return self.fix(Applicability.DISPLAY_ONLY, "Check on the device with `torch._assert_async`", replacement,
                        *imports)

    def visit_If(self, node: cst.If) -> None:
        self._check(node, node.test, "if")

    def visit_While(self, node: cst.While) -> None:
        # The training loop itself (`while loss > eps:`): its test runs before every step.
        self._check(node, node.test, "while", each_iteration=node in self.ctx.loops.hot_loops)

    def visit_Assert(self, node: cst.Assert) -> None:
        self._check(node, node.test, "assert")
