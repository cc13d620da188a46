"""Logging calls and the tensors they format: print/logging/tqdm, TensorBoard writers,
experiment trackers (wandb, Fabric loggers), f-strings and `%` formatting."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from trainlint.analysis.names import dotted
from trainlint.analysis.variables import held_values
from trainlint.analysis.words import words

from .syncs import device_tensor, held_tensors


_LOG_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "critical", "log", "exception"})
_PROGRESS_METHODS = frozenset({"set_description", "set_postfix", "set_postfix_str", "write"})


def is_log_call(ctx, call: cst.Call) -> bool:
    """print, a `logging` call, or a method whose name and receiver's name say logging or a
    progress bar (`logger.info`, `pbar.set_postfix`, `accelerator.print`). Not a method of an
    instance of a class the file defines (`logger = History()`; `logger.log(step, loss)` kept the
    loss, and the fix put it under an interval, dropping data): that method's body is this
    file's code, read through the call (Loops.callees) like any other."""
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
        named = (attr in _LOG_METHODS and ("log" in receiver)) \
            or (attr in _PROGRESS_METHODS and (attr != "write" or "tqdm" in receiver or "bar" in receiver)) \
            or attr == "print"  # accelerator.print, fabric.print, a LightningModule's self.print, rich's console
        return named and not ctx.loops.instance_methods(call)
    return False


_SUMMARY_WRITERS = frozenset({"torch.utils.tensorboard.SummaryWriter", "torch.utils.tensorboard.writer.SummaryWriter",
                              "tensorboardX.SummaryWriter", "tensorboardX.writer.SummaryWriter"})
_FABRIC = frozenset({"lightning.Fabric", "lightning.fabric.Fabric", "lightning_fabric.Fabric"})


@dataclass
class _TrackerCall:
    """A call that logs values to an experiment tracker, each value read to the host at once."""

    values: list  # the expressions the call logs (a dict's values, or the one value)
    container: cst.BaseExpression | None  # the name of the dict whose values these are (`log_dict`)
    step: bool  # the step is passed explicitly (guarding the call keeps the x-axis right)


def tracker_values(ctx, call: cst.Call) -> _TrackerCall | None:
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
    if ctx.loops.instance_methods(call):
        # An object of a class the file defines (`writer = Writer()` whose `add_scalar` appends
        # to a list): no tracker, whatever its name; its body is followed as the file's code.
        return None
    if attr == "log" and (ctx.names.qualified(func) == "wandb.log" or _assigned_from(ctx, receiver, {"wandb.init"})):
        data, step = argument(ctx, call, 0, "data"), argument(ctx, call, 1, "step")
        commit = ctx.keyword(call, "commit")
        return _TrackerCall(*_logged(ctx, data), step is not None and (commit is None or ctx.literal(commit.value) is not False))
    if attr in ("add_scalar", "add_scalars", "add_histogram") and _is_summary_writer(ctx, receiver):
        # `add_histogram` copies the whole tensor (a layer's weights) to the host to bin it.
        keyword = {"add_scalar": "scalar_value", "add_scalars": "tag_scalar_dict", "add_histogram": "values"}[attr]
        value = argument(ctx, call, 1, keyword)
        return _TrackerCall(*_logged(ctx, value), argument(ctx, call, 2, "global_step") is not None)
    last = (dotted(receiver) or "").rsplit(".", 1)[-1]
    if attr == "log" and (last == "accelerator" or _assigned_from(ctx, receiver, {"accelerate.Accelerator"})) \
            and ("init_trackers" in ctx.text or "log_with" in ctx.text):
        values, step = argument(ctx, call, 0, "values"), argument(ctx, call, 1, "step")
        return _TrackerCall(*_logged(ctx, values), step is not None)
    if attr in ("log", "log_dict") and (last == "fabric" or _assigned_from(ctx, receiver, _FABRIC)) \
            and _fabric_has_loggers(ctx):
        if attr == "log":
            value, step = argument(ctx, call, 1, "value"), argument(ctx, call, 2, "step")
        else:
            value, step = argument(ctx, call, 0, "metrics"), argument(ctx, call, 1, "step")
        return _TrackerCall(*_logged(ctx, value), step is not None)
    return None


def argument(ctx, call: cst.Call, index: int, keyword: str) -> cst.BaseExpression | None:
    arg = ctx.keyword(call, keyword) or ctx.positional(call, index)
    return arg.value if arg is not None and arg.value is not None and not (
        isinstance(arg.value, cst.Name) and arg.value.value == "None") else None


def _logged(ctx, value: cst.BaseExpression | None) -> tuple[list, cst.BaseExpression | None]:
    """The values a logged dict holds (a display, or a name holding one where it is logged:
    variables.held_values, with what item assignments and `update` put in it), or the value itself;
    and the name, for a dict a name holds."""
    if value is None:
        return [], None
    if isinstance(value, cst.Dict):
        return [e.value for e in value.elements if isinstance(e, cst.DictElement)], None
    held = held_values(ctx, value)
    if held is not None:
        return held, value
    return [value], None


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


_WRITER_WORDS = frozenset({"writer", "tb", "tensorboard"})


def _is_summary_writer(ctx, receiver: cst.BaseExpression) -> bool:
    """A TensorBoard SummaryWriter: assigned from the class, or a `writer`/`tb_writer`/`tbLogger`-style
    name in a module that imports the class."""
    if _assigned_from(ctx, receiver, _SUMMARY_WRITERS):
        return True
    name = (dotted(receiver) or "").rsplit(".", 1)[-1]
    return bool(words(name) & _WRITER_WORDS) and any(
        target in _SUMMARY_WRITERS or target in ("torch.utils.tensorboard", "tensorboardX")
        for target in ctx.names.aliases.values())


def _fabric_has_loggers(ctx) -> bool:
    """The module builds a Fabric with loggers (without any, `fabric.log` does nothing)."""
    return "loggers" in ctx.text and any(ctx.keyword(c, "loggers") is not None and (dotted(c.func) or "").rsplit(".", 1)[-1] == "Fabric"
               for c in ctx.index.nodes(cst.Call))


def is_string(expr: cst.BaseExpression) -> bool:
    """A string literal, or one built with `+`/`*` (`'%11s' * 2 + '%11.4g' * 5`)."""
    if isinstance(expr, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
        return True
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.Add, cst.Multiply)):
        return is_string(expr.left) or (isinstance(expr.operator, cst.Add) and is_string(expr.right))
    return False


def formatted_tensors(ctx, expr: cst.BaseExpression):
    """Tensor values, maybe on the device (`device_tensor`), that formatting `expr` (f-string, %,
    .format, dict) would convert; or the name of a dict or list holding such a tensor
    (held_tensors says which)."""
    if isinstance(expr, (cst.FormattedString,)):
        for part in expr.parts:
            if isinstance(part, cst.FormattedStringExpression) and _formats_tensor(ctx, part.expression):
                yield part.expression
    elif isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Modulo) and is_string(expr.left):
        values = [e.value for e in expr.right.elements] if isinstance(expr.right, cst.Tuple) else [expr.right]
        for value in values:
            if _formats_tensor(ctx, value):
                yield value
    elif isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "format":
        for arg in expr.args:
            if _formats_tensor(ctx, arg.value):
                yield arg.value
    elif isinstance(expr, cst.Dict):
        # A value formatted inside a dict or list display is converted with it (`set_postfix({"loss":
        # f"{loss:.3f}"})`, `print([loss, acc])`: the display's repr formats each tensor).
        for element in expr.elements:
            if isinstance(element, cst.DictElement):
                yield from formatted_tensors(ctx, element.value)
    elif isinstance(expr, (cst.List, cst.Tuple, cst.Set)):
        for element in expr.elements:
            if isinstance(element, cst.Element):
                yield from formatted_tensors(ctx, element.value)
    elif isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Add) and (
            is_string(expr.left) or is_string(expr.right) or _to_text(ctx, expr.left) or _to_text(ctx, expr.right)):
        # `"loss " + str(loss)`: the string is built from the tensor's value.
        for side in (expr.left, expr.right):
            yield from formatted_tensors(ctx, side)
    elif _to_text(ctx, expr):
        yield expr.args[0].value
    elif _formats_tensor(ctx, expr):
        yield expr


def _formats_tensor(ctx, expr: cst.BaseExpression) -> bool:
    """Formatting expr reads a device tensor: it is one, or it names a dict or list holding one
    (`metrics = {"loss": loss}`, then `print(metrics)`: the dict's text formats each value)."""
    return device_tensor(ctx, expr) or bool(held_tensors(ctx, expr))


def _to_text(ctx, expr: cst.BaseExpression) -> bool:
    """`str(t)` / `repr(t)` of a tensor maybe on the device: its value read to make the text."""
    return isinstance(expr, cst.Call) and ctx.names.qualified(expr.func) in ("builtins.str", "builtins.repr") \
        and len(expr.args) == 1 and not expr.args[0].star and _formats_tensor(ctx, expr.args[0].value)
