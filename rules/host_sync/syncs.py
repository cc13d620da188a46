"""What the TL2xx rules share about host-device synchronisation: which calls read a device value
on the host, which values are device tensors, and which steps already wait for the device."""

from __future__ import annotations

from typing import NamedTuple

import libcst as cst

from trainlint.analysis.batches import copies_to_host
from trainlint.analysis.variables import held_values


# Methods that read a tensor's value on the host; a copy into host memory (`.cpu()`, `.to("cpu")`)
# is the other host read of a method chain (batches.copies_to_host).
SYNC_METHODS = ("item", "numpy", "tolist")


def reads_to_host(ctx, call: cst.Call) -> bool:
    """call, a link of a method chain, reads what it is called on to the host and waits for it:
    `.item()`, `.numpy()`, `.tolist()`, a blocking copy (`.cpu()`, `.to("cpu")`). Whatever it is
    called on: the chain's first such link is the wait, and what follows it reads host memory."""
    func = call.func
    return isinstance(func, cst.Attribute) and (func.attr.value in SYNC_METHODS and not call.args
                                                 or copies_to_host(ctx, call, blocking=True))


def waits_per_step(ctx, node: cst.CSTNode) -> bool:
    """A host read at node makes the host wait for the GPU on every step: it runs per step, and not
    in a closure handed to an L-BFGS step, which reads the closure's loss on the host itself at
    every evaluation (`float(closure())`, then a test of a gradient tensor): a read of its own
    there waits for nothing more; nor does one in a branch of a test that read a tensor already
    (_after_synced_test); nor in a file whose training runs on the CPU, where no GPU is waited for
    (on_accelerator)."""
    if not ctx.is_per_step(node) or not on_accelerator(ctx) or _after_synced_test(ctx, node):
        return False
    fn = ctx.index.enclosing_function(node)
    steps = ctx.loops.steps_handed(fn) if fn is not None else []
    return not steps or not all(_is_lbfgs(ctx, call.func.value) for call in steps)


def forward_call(ctx, node: cst.CSTNode) -> cst.Call | None:
    """For node in the own body of a module's `forward` (or `__call__`) that the training loop
    runs by calling the module object (`out = model(x)`: Loops.module_call), that call, where it
    runs on every step; else None. forward sees no step counter of the loop, and is run by
    evaluation too: the messages say where the per-step run comes from, and no guard is written."""
    fn = ctx.index.enclosing_function(node)
    if fn is None or not ctx.loops.is_module_method(fn):
        return None
    return next((call for call in ctx.loops.calls_of(fn) if ctx.loops.module_call(call) and ctx.is_per_step(call)),
                None)


def on_accelerator(ctx) -> bool:
    """The file's training may run on a GPU (or another accelerator): it names a device, uses a
    framework that places tensors, or trains what it does not build itself (Devices). A script that
    builds a CPU model and data and never moves them runs each operation before returning: a host
    read there, or a device synchronize, waits for nothing."""
    return ctx.devices.may_use_accelerator


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
                is_tensor_test(ctx, anc.test) or any(host_read(ctx, c) for c in ctx.index.walk(anc.test)
                                                      if isinstance(c, cst.Call))):
            return True
        child = anc
    return False


def host_read(ctx, call: cst.Call) -> tuple[cst.BaseExpression, str] | None:
    """(the tensor, how it is read) for `t.item()`, `t.cpu()` (`t.to("cpu")`), `t.numpy()`, `t.tolist()`,
    `float(t)`, `int(t)`, `bool(t)`, `math.isnan(t)` (`isfinite`, `isinf`) of a tensor t; None for any other call. TL201 reports these; a test made
    of one has waited for the GPU already (_after_synced_test)."""
    func = call.func
    if reads_to_host(ctx, call):
        if func.attr.value == "item" or ctx.tensors.is_tensor(func.value):
            # `.to("cpu")` as written: the message names the call the reader sees.
            return func.value, f"`.{func.attr.value}()`" if not call.args else f"`{ctx.code(call)[len(ctx.code(func.value)):]}`"
        return None
    qn = ctx.names.qualified(func)
    if qn in _CONVERSIONS and len(call.args) == 1 and not call.args[0].star and call.args[0].keyword is None \
            and ctx.tensors.is_tensor(call.args[0].value):
        return call.args[0].value, f"`{_CONVERSIONS[qn]}()`"
    return None


def blocking_host_copy(ctx, call: cst.Call) -> cst.BaseExpression | None:
    """The source of `buf.copy_(src)` that copies a tensor that may be on the device (device_tensor)
    into one in host memory (Tensors.in_host_memory): without `non_blocking=True` the copy waits
    for the GPU as `.cpu()` does. None for any other call, and for `non_blocking=` anything but a
    literal False (True, with a pinned buffer, waits for nothing; a variable is not known)."""
    func = call.func
    if not (isinstance(func, cst.Attribute) and func.attr.value == "copy_") or any(a.star for a in call.args):
        return None
    source = ctx.positional(call, 0) or ctx.keyword(call, "src")
    flag = ctx.positional(call, 1) or ctx.keyword(call, "non_blocking")
    if source is None or (flag is not None and ctx.literal(flag.value) is not False):
        return None
    source = source.value
    if not ctx.tensors.in_host_memory(func.value) or not device_tensor(ctx, source) \
            or ctx.tensors.in_host_memory(source):
        return None
    return source


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

def framework_logging(ctx, node: cst.CSTNode) -> str:
    """Advice to hand a tensor to the framework's logger in a step hook that has one (Lightning's
    `self.log`, which reads its values only when it writes the logs), as the last of the options
    a message lists; else ""."""
    hook = ctx.loops.step_hook(node)
    if hook is None or hook.log is None:
        return ""
    return f", or pass the tensor itself to `{hook.log}(...)` ({PROG_BAR_CAVEAT})"


# Why a tensor handed to Lightning's `self.log` still waits per step where it is shown on the bar.
PROG_BAR_CAVEAT = "without `prog_bar=True`: the progress bar reads it at every refresh, each batch by default"


class LoggedValue(NamedTuple):
    call: cst.Call  # `self.log(...)`, `self.log_dict(...)`
    value: cst.BaseExpression  # the value logged that holds the read
    prog_bar: cst.Arg | None  # the call's `prog_bar=` argument, where it has one
    rounded: cst.Call | None = None  # `round(loss.item(), 3)` in value: the number rounded for the log


def framework_log_value(ctx, read: cst.Call) -> LoggedValue | None:
    """The framework's logging call of the step hook that holds read (Lightning's `self.log`,
    `pl_module.log` in a callback) and the value it logs that holds read: `self.log("loss",
    loss.item() * 2)` (or `value=`), or a value of the dict display `self.log_dict({"loss":
    loss.item()})` hands it (log_dict logs each with `log`). None elsewhere, and where read is
    first handed to another call (`torch.tensor(loss.item())`), other than `round()` (`self.log("loss",
    round(loss.item(), 3))`: the number rounded for the log, which `rounded` names)."""
    hook = ctx.loops.step_hook(read)
    if hook is None or hook.log is None:
        return None
    element, child, rounded = None, read, None
    for anc in ctx.index.ancestors(read):
        if isinstance(anc, cst.DictElement) and element is None and anc.value is child:
            element = anc
        child = anc
        if isinstance(anc, (cst.BaseStatement, cst.BaseSmallStatement, cst.Lambda, cst.BaseComp)):
            return None
        if not isinstance(anc, cst.Arg):
            continue
        call = ctx.parent(anc)
        func = ctx.code(call.func) if isinstance(call, cst.Call) else None
        if rounded is None and isinstance(call, cst.Call) and ctx.names.qualified(call.func) == "builtins.round" \
                and anc is ctx.positional(call, 0):
            rounded = call
            continue
        if func == hook.log and anc in (ctx.positional(call, 1), ctx.keyword(call, "value")):
            return LoggedValue(call, anc.value, ctx.keyword(call, "prog_bar") or ctx.positional(call, 2), rounded)
        if func == f"{hook.log}_dict" and anc in (ctx.positional(call, 0), ctx.keyword(call, "dictionary")) \
                and isinstance(anc.value, cst.Dict) and element is not None and ctx.parent(element) is anc.value:
            return LoggedValue(call, element.value, ctx.keyword(call, "prog_bar") or ctx.positional(call, 1), rounded)
        return None
    return None


# Questions about the process group that change nothing (`dist.get_rank() == 0`): the rank test
# of `if dist.get_rank() == 0 and step % 5 == 0:` is as free of effects as `rank == 0`, and
# the loop's interval test was not reused past it (TL201 wrote `step % 100` beside it).
_PROCESS_QUERIES = frozenset({"torch.distributed.get_rank", "torch.distributed.get_world_size",
                              "torch.distributed.is_initialized"})


def side_effect_free(ctx, test: cst.BaseExpression) -> bool:
    """A guard's test whose evaluation has no effect worth keeping: names, attributes, subscripts
    and literals, comparisons and arithmetic or boolean operations of them (`step > 0`,
    `args.debug and rank == 0`), `torch.cuda.is_available()` and the process group's rank and
    size (`dist.get_rank()`)."""
    if isinstance(test, (cst.Name, cst.Attribute, cst.Integer, cst.Float, cst.SimpleString)):
        return True
    if isinstance(test, cst.Comparison):
        return side_effect_free(ctx, test.left) and all(
            side_effect_free(ctx, c.comparator) for c in test.comparisons)
    if isinstance(test, (cst.BooleanOperation, cst.BinaryOperation)):
        return side_effect_free(ctx, test.left) and side_effect_free(ctx, test.right)
    if isinstance(test, cst.UnaryOperation):
        return side_effect_free(ctx, test.expression)
    if isinstance(test, cst.Subscript):
        # `x.shape[0] > 4`, `cfg["debug"]`: an index of such parts reads, as an attribute does.
        return side_effect_free(ctx, test.value) and all(
            side_effect_free(ctx, e.slice.value) if isinstance(e.slice, cst.Index)
            else all(part is None or side_effect_free(ctx, part) for part in (e.slice.lower, e.slice.upper, e.slice.step))
            for e in test.slice)
    if isinstance(test, cst.Call) and not test.args:
        qn = ctx.names.qualified(test.func) or ""
        return qn.endswith(".is_available") or qn in _PROCESS_QUERIES
    return False


def is_tensor_test(ctx, test: cst.BaseExpression) -> bool:
    if isinstance(test, cst.Comparison):
        if any(isinstance(t.operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)) for t in test.comparisons):
            return False
        sides = [test.left] + [t.comparator for t in test.comparisons]
        return any(device_tensor(ctx, s) for s in sides)
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return is_tensor_test(ctx, test.expression)
    if isinstance(test, cst.BooleanOperation):
        return is_tensor_test(ctx, test.left) or is_tensor_test(ctx, test.right)
    if isinstance(test, (cst.Name, cst.Attribute)):
        return False  # a bare name is usually a Python flag; only clear tensor expressions count
    return device_tensor(ctx, test)


def held_tensors(ctx, expr: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The device tensors a dict or list that expr names holds where it is read (`metrics =
    {"loss": loss}`, then `metrics["acc"] = acc`: variables.held_values), also inside displays it
    holds (`{"train": {"loss": loss}}`): formatting the container formats each."""
    tensors = []
    values = list(held_values(ctx, expr) or ())
    while values:
        value = values.pop(0)
        if isinstance(value, (cst.Dict, cst.List, cst.Tuple, cst.Set)):
            values[:0] = [e.value for e in value.elements if isinstance(e, (cst.DictElement, cst.Element))]
        elif device_tensor(ctx, value):
            tensors.append(value)
    return tensors


def device_tensor(ctx, expr: cst.BaseExpression) -> bool:
    """A tensor that may be on the device: one known to be in host memory (a batch field the loop
    has not moved, `Tensors.on_host`) is read without waiting for the GPU."""
    return ctx.tensors.is_tensor(expr) and not ctx.tensors.on_host(expr)
