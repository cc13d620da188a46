"""Where a value read to the host on every step is handed on: a call outside torch that needs the
Python value in that same step (an environment's `env.step(action)`), or a decision every rank
takes together on a flag reduced across ranks, where reading it every N steps, the advice TL201
gives a value that is only logged or recorded, is no option."""

from __future__ import annotations

from typing import NamedTuple

import libcst as cst

from trainlint.analysis.names import bound_names
from trainlint.analysis.tensors import pure_tensor_method
from trainlint.analysis.variables import may_reach, owner, variable_uses
from trainlint.analysis.words import words

from .logged_values import is_log_call, tracker_values
from .syncs import device_tensor, reads_to_host


def host_consumer(ctx, read: cst.Call) -> cst.Call | None:
    """The call that takes the value of read (a host read: `int(q(obs).argmax())`) in the same
    step, when that call needs a Python value (_needs_host_value): read is one of its arguments
    (`env.step(int(a))`), or is assigned to a plain local name that one of its arguments reads
    later in the same iteration (`action = int(...)` ... `env.step(action)`, also past a branch:
    `if explore: action = random.randrange(2) else: action = int(...)`). The value is what read
    gives, taken further only by host conversions and indexing (`x.cpu().numpy()[0]`,
    `int(a.item())`). None otherwise: a value only printed, formatted, logged or stored in a
    list, dict or meter, or handed to a call this cannot see into."""
    value = _whole_value(ctx, read)
    parent = ctx.parent(value)
    if isinstance(parent, cst.Arg):
        call = ctx.parent(parent)
        return call if isinstance(call, cst.Call) and not parent.star and _needs_host_value(ctx, call, parent) \
            else None
    for use in _same_step_reads(ctx, value) or ():
        arg = ctx.parent(use)
        if isinstance(arg, cst.Arg) and arg.value is use and not arg.star \
                and _needs_host_value(ctx, ctx.parent(arg), arg):
            return ctx.parent(arg)
    return None


def _same_step_reads(ctx, value: cst.BaseExpression) -> list[cst.Name] | None:
    """When value is assigned to a plain local name (`action = int(...)`, `oom = flag.item()`),
    the reads of that name the assignment may reach later in the same iteration (also past a
    branch: `if explore: action = random.randrange(2) else: action = int(...)`). None when value is
    not so assigned, or the name may be read where this cannot follow (a closure, a `global`)."""
    assign = ctx.parent(value)
    if not (isinstance(assign, cst.Assign) and assign.value is value and len(assign.targets) == 1
            and isinstance(assign.targets[0].target, cst.Name)):
        return None
    name = assign.targets[0].target.value
    scope = owner(ctx.index, assign)
    uses = variable_uses(ctx.index, scope, name)
    if uses is None:
        return None
    # The same iteration: a read inside the innermost loop that holds the assignment (within its
    # function), which may_reach then finds after it in that loop's body.
    loop = next((a for a in ctx.index.ancestors(assign) if isinstance(a, (cst.For, cst.While))
                 and (scope is None or ctx.index.contains(scope, a))), None)
    return [use.node for use in uses if use.kind == "read" and (loop is None or ctx.index.contains(loop, use.node))
            and may_reach(ctx.index, assign, use.node, scope)]


def per_step_test(ctx, read: cst.Call) -> cst.If | cst.While | cst.Assert | None:
    """The `if`, `while` or `assert` run on every step whose test reads the value of read in the
    same step: directly (`if not math.isfinite(loss.item()):`) or through the plain local name it
    is assigned to (DeiT's `loss_value = loss.item()` ... `if not math.isfinite(loss_value):`).
    Read every N steps instead, that test would have no value on the other steps."""
    for use in _value_and_reads(ctx, _whole_value(ctx, read)):
        test = next((a for a in ctx.index.ancestors(use) if isinstance(a, (cst.If, cst.While, cst.Assert))
                     and ctx.index.contains(a.test, use)), None)
        if test is not None and ctx.is_per_step(test):
            return test
    return None


# Calls that end the run where they stand, as a `raise` does (DeiT's `sys.exit(1)` on a non-finite
# loss): a check `torch._assert_async` can make on the device.
_EXITS = frozenset({"sys.exit", "builtins.exit", "builtins.quit", "os._exit"})


def test_advice(ctx, node: cst.CSTNode) -> str:
    """The advice for a per-step test of a value the GPU holds, by what its branch does: only a
    check that fails (`assert`, an `if` ending in `raise` or `sys.exit(...)`) can become
    `torch._assert_async(...)`. Every test got that advice, also `if mask.sum() == 0: continue`,
    whose skip no device-side assert can make."""
    last = None
    if isinstance(node, cst.If) and isinstance(node.body, cst.IndentedBlock) and node.body.body:
        line = node.body.body[-1]
        last = line.body[-1] if isinstance(line, cst.SimpleStatementLine) and line.body else None
    elif isinstance(node, cst.If) and isinstance(node.body, cst.SimpleStatementSuite) and node.body.body:
        last = node.body.body[-1]
    exits = isinstance(last, cst.Expr) and isinstance(last.value, cst.Call) \
        and ctx.names.qualified(last.value.func) in _EXITS
    if isinstance(node, cst.Assert) or isinstance(last, cst.Raise) or exits:
        return "use `torch._assert_async(...)` or check it at the logging interval"
    if isinstance(last, (cst.Continue, cst.Return)):
        return ("no device-side check can skip the step: compute it on the device instead (`torch.where(...)`, "
                "masking the loss so the step does nothing), or accept the sync here")
    if isinstance(last, cst.Break):
        return "leaving the loop needs the value on the host: test it at the logging interval"
    return "compute on the device (`torch.where(...)`) or check it at the logging interval"


def _whole_value(ctx, read: cst.Call) -> cst.BaseExpression:
    """read, taken up through what keeps it a host copy of the same value: more host reads of the
    chain (`.cpu().numpy()`, `.to("cpu").numpy()`, `.tolist()`), an index (`[0]`), `int()`/`float()`/`bool()` of it."""
    node = read
    while True:
        parent = ctx.parent(node)
        if isinstance(parent, cst.Attribute) and parent.value is node:
            call = ctx.parent(parent)
            if isinstance(call, cst.Call) and call.func is parent and reads_to_host(ctx, call):
                node = call
                continue
        if isinstance(parent, cst.Subscript) and parent.value is node:
            node = parent
            continue
        if isinstance(parent, cst.Arg) and not parent.keyword and not parent.star:
            call = ctx.parent(parent)
            if isinstance(call, cst.Call) and len(call.args) == 1 \
                    and ctx.names.qualified(call.func) in ("builtins.int", "builtins.float", "builtins.bool"):
                node = call
                continue
        return node


# Modules whose functions compute with a number or record it (the value is not needed there on its
# own: where the result goes decides), and torch itself.
_COMPUTING_MODULES = frozenset({"builtins", "torch", "numpy", "math", "statistics", "random", "logging", "warnings",
                                "wandb", "mlflow", "neptune", "comet_ml", "clearml", "tensorboardX", "json", "time",
                                "lightning", "pytorch_lightning", "accelerate", "transformers", "tqdm", "sklearn",
                                "scipy", "pandas"})
# Words of a callee's or receiver's name that say logging, progress display or recording into a
# container (`self.meter.update`, `memory.push`, `history.append`, `log_metrics`): a value kept or
# shown, which the logging interval or a tensor on the device can serve.
_RECORDING_WORDS = frozenset({
    "log", "logs", "logger", "loggers", "logging", "print", "write", "writer", "scalar", "scalars", "metric", "metrics",
    "record", "records", "recorder", "summary", "summaries", "histogram", "track", "tracker", "trackers", "postfix",
    "description", "meter", "meters", "stats", "history", "wandb", "tb", "tensorboard", "board", "monitor", "report",
    "bar", "pbar", "tqdm", "progress", "display", "show", "plot", "append", "extend", "insert", "add", "update",
    "setdefault", "push", "put", "store", "save", "dump", "callback", "callbacks", "hook", "hooks", "on",
    # metrics computed from it (`accuracy_score(y, pred)`, `compute_metrics(...)`)
    "score", "accuracy", "acc", "f1", "precision", "recall", "auc", "bleu", "rouge", "eval", "evaluate",
    # text made of it, a number rounded, a test's assertion (`self.assertEqual(n.item(), 4)`)
    "format", "join", "round", "assert",
    # the optimizer's objects: a scheduler stepped with a metric (not ReduceLROnPlateau, which the
    # rule knows), a scaler
    "scheduler", "sched", "lr", "optimizer", "optim", "opt", "scaler",
})


def _needs_host_value(ctx, call: cst.Call, arg: cst.Arg) -> bool:
    """call needs the Python value its argument arg gives: a function or method of code outside
    torch (an environment's `env.step(action)`, a library's or the file's own function). Not one
    that only computes with it or records it: builtins, numpy, math, sklearn, torch; a tensor's,
    a list's or a string's methods (and methods named as a tensor's); logging and trackers; a
    dict's or meter's methods, a metric, an assertion (_RECORDING_WORDS in the callee's or its
    receiver's name); a class built with it; nor one that also takes a device
    tensor (a model or loss called with a step number: `model(x, int(t))` is the model's code); nor
    one whose result is only shown (_shown). Where those decide, the value is only kept or shown,
    and the logging interval or a tensor on the device serves it."""
    func = call.func
    qualified = ctx.names.qualified(func)
    if qualified is not None and qualified.split(".", 1)[0] in _COMPUTING_MODULES:
        return False
    if is_log_call(ctx, call) or tracker_values(ctx, call) is not None:
        return False
    if isinstance(func, cst.Attribute):
        receiver = func.value
        # A tensor's method, also on a receiver not known to be one (`lengths.view(b, 1).expand(b,
        # int(n))`), a list's, a string's (`"{}".format(v)`).
        if ctx.tensors.is_tensor(receiver) or pure_tensor_method(func.attr.value) \
                or ctx.is_builtin_collection(receiver) \
                or isinstance(receiver, (cst.SimpleString, cst.FormattedString, cst.ConcatenatedString)):
            return False
        last = ctx.dotted(receiver)
        names = [func.attr.value] + ([last.rsplit(".", 1)[-1]] if last else [])
    elif isinstance(func, cst.Name):
        names = [func.value]
    else:
        return False  # `handlers[k](v)`, `make()(v)`: not a callee to name
    if any(words(n) & _RECORDING_WORDS for n in names) or names[0][:1].isupper() or names[0] == "__class__":
        return False  # recording, or a class built with it (`Transition(s, a.item(), r)`): the object keeps it
    if any(a is not arg and device_tensor(ctx, a.value) for a in call.args):
        return False
    return not _shown(ctx, call)


def _shown(ctx, call: cst.Call) -> bool:
    """call's result is only shown: the call is inside the arguments of a logging call or a
    formatted string in its statement (`print(tokenizer.decode(ids.tolist()))`)."""
    for anc in ctx.index.ancestors(call):
        if isinstance(anc, (cst.FormattedString, cst.BaseSmallStatement, cst.BaseCompoundStatement)):
            return isinstance(anc, cst.FormattedString)
        if isinstance(anc, cst.Call) and (is_log_call(ctx, anc) or tracker_values(ctx, anc) is not None):
            return True
    return False


# Collectives that change their tensor in place to what every rank holds (torch.distributed's,
# composer's `dist`), and methods that return it (accelerate's `reduce`/`gather`, Fabric's and
# Lightning's `all_reduce`/`all_gather`).
_IN_PLACE_COLLECTIVES = frozenset({"all_reduce", "broadcast"})
_RETURNING_COLLECTIVES = frozenset({"reduce", "all_reduce", "gather", "all_gather"})
_DECIDING = (cst.If, cst.While, cst.IfExp)
_NOT_COLLECTIVE = ("torch.", "numpy.", "functools.")


def cross_rank_decision(ctx, read: cst.Call, target: cst.BaseExpression) -> bool:
    """read takes the value of a tensor reduced across ranks (_reduced_across_ranks: a flag each
    rank put in) to decide what the step does: it is tested (`if int(flag.item()) >= 1:`), or
    assigned to a name a test reads later in the step (`oom = flag.item()` ... `if oom == 1:
    raise`). Every rank needs the answer on that very step to stay in lockstep (stop together,
    give up a batch another rank ran out of memory on): reading it every N steps changes what the
    program does, and keeping it on the device leaves nothing to decide with (trl's stop
    callbacks, composer's auto-microbatching OOM flag)."""
    return _reduced_across_ranks(ctx, read, target) and _decides(ctx, _whole_value(ctx, read))


def _reduced_across_ranks(ctx, read: cst.Call, target: cst.BaseExpression) -> bool:
    """target (or what it indexes: `overflow_gpu[0]`) is what a collective returned
    (`accelerator.reduce(flag, reduction="sum")`), or a name an in-place collective took
    (`dist.all_reduce(flag)`) earlier in the block that holds read (or a block around it, inside
    the same loop body and function), with nothing binding it again in between."""
    while isinstance(target, cst.Subscript):
        target = target.value
    if isinstance(target, cst.Call):
        # The tensor is their one positional argument: `x.gather(1, idx)` and `torch.gather(x, 1,
        # idx)` pick elements along a dimension, `functools.reduce(f, xs)` folds a list.
        func = target.func
        positional = [a for a in target.args if a.keyword is None]
        qualified = ctx.names.qualified(func) or ""
        return isinstance(func, cst.Attribute) and func.attr.value in _RETURNING_COLLECTIVES \
            and len(positional) == 1 and not positional[0].star \
            and (qualified.startswith("torch.distributed.") or not qualified.startswith(_NOT_COLLECTIVE))
    name = ctx.dotted(target)
    if name is None:
        return False
    for anc, earlier in ctx.index.preceding(read):
        if isinstance(anc, (cst.FunctionDef, cst.Lambda, cst.ClassDef, cst.For, cst.While)):
            return False
        for stmt in earlier:
            call = _called(stmt)
            if call is not None and call.args and not call.args[0].star and call.args[0].keyword is None \
                    and (ctx.dotted(call.func) or "").rsplit(".", 1)[-1] in _IN_PLACE_COLLECTIVES \
                    and ctx.dotted(call.args[0].value) == name:
                return True
            if name in bound_names(stmt):
                return False
    return False


def _called(stmt: cst.CSTNode) -> cst.Call | None:
    """The call that stmt is, as a statement of its own (`dist.all_reduce(flag, op=MAX)`)."""
    if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1:
        stmt = stmt.body[0]
    return stmt.value if isinstance(stmt, cst.Expr) and isinstance(stmt.value, cst.Call) else None


def _decides(ctx, value: cst.BaseExpression) -> bool:
    """value is tested (_tested), or assigned to a plain name that a test reads later in the same
    step (_same_step_reads: `oom = flag.item()` ... `if oom == 1: raise`)."""
    return any(_tested(ctx, use) for use in _value_and_reads(ctx, value))


def _value_and_reads(ctx, value: cst.BaseExpression) -> list[cst.BaseExpression]:
    """value itself, then the reads of the plain name it is assigned to later in the same step
    (_same_step_reads): where a test or a call may take what a host read gave."""
    return [value, *(_same_step_reads(ctx, value) or ())]


def _tested(ctx, node: cst.BaseExpression) -> bool:
    """node, taken up through comparisons and `not`/`and`/`or`, is the test of an `if`, a `while`
    or a conditional expression."""
    parent = ctx.parent(node)
    while isinstance(parent, (cst.Comparison, cst.ComparisonTarget, cst.UnaryOperation, cst.BooleanOperation)):
        node, parent = parent, ctx.parent(parent)
    return isinstance(parent, _DECIDING) and parent.test is node


# Calls that average (or sum, to be divided) the numbers of a list they are given.
_REDUCTIONS = frozenset({"builtins.sum", "numpy.mean", "numpy.sum", "numpy.average", "numpy.nanmean",
                         "statistics.mean", "statistics.fmean"})
# Calls that make an array of a list, whose `.mean()` averages it (`torch.tensor(losses).mean()`).
_ARRAYS = frozenset({"torch.tensor", "torch.as_tensor", "torch.stack", "torch.Tensor", "torch.FloatTensor",
                     "numpy.array", "numpy.asarray"})


# Calls that join the arrays or tensors of a list into one (`np.concatenate(preds)`,
# `torch.stack(norms)`), by the torch call that joins the tensors so on the device.
_JOINS = {"numpy.concatenate": "torch.cat", "torch.cat": "torch.cat", "torch.concat": "torch.cat",
          "torch.concatenate": "torch.cat", "numpy.stack": "torch.stack", "torch.stack": "torch.stack",
          "numpy.vstack": "torch.vstack", "torch.vstack": "torch.vstack", "numpy.hstack": "torch.hstack",
          "torch.hstack": "torch.hstack"}


class GatheredList(NamedTuple):
    """A list of per-step values used whole later (gathered_list): averaged, or joined."""

    name: cst.BaseExpression  # the list where it is filled: `losses`, `self.losses`
    listed: cst.BaseExpression  # the list as used, where it is: `losses[-50:]`, a caller's `epoch_losses`
    use: cst.BaseExpression  # as written: `np.mean(losses)`, `torch.tensor(losses).mean()`, `np.concatenate(preds)`
    returned_by: cst.FunctionDef | None  # the function that returns the list to where it is used
    join: str | None  # None for a mean; for a join, the torch call that joins on the device: `torch.cat`


def gathered_list(ctx, read: cst.Call) -> GatheredList | None:
    """For read appended whole to a list (`losses.append(loss.item())`; with the host reads chained
    after it: `preds.append(logits.argmax(1).cpu().numpy())`), a use of that list whole
    (_whole_use): a mean (`np.mean(losses)`, `sum(losses[-50:]) / 50`, `... / len(losses)`,
    `torch.tensor(losses).mean()`) or a join (`np.concatenate(preds)`, `torch.stack(norms)`), seen
    where the list is: in the function, for a variable of its function; in the methods of the
    object, for `self.losses` (Loops.self_attributes: a trainer's epoch-end method); or in a caller
    the function returns the variable to (`return losses`, then `epoch_losses = train_epoch(...)`
    and `np.mean(epoch_losses)`: Loops.returned_to). Read every N steps, such a mean would average
    every Nth step only, and a join (the predictions an accuracy is taken over) would hold every
    Nth step only. None for a list only printed or stored, or one this cannot follow (a closure,
    `global`)."""
    value = read
    # `x.cpu().numpy()`, `x.to("cpu").tolist()`: the whole chain of host reads is appended.
    while isinstance(attr := ctx.parent(value), cst.Attribute) and attr.value is value \
            and isinstance(chained := ctx.parent(attr), cst.Call) and chained.func is attr \
            and reads_to_host(ctx, chained):
        value = chained
    arg = ctx.parent(value)
    call = ctx.parent(arg)
    if not (isinstance(arg, cst.Arg) and arg.value is value and isinstance(call, cst.Call) and len(call.args) == 1
            and isinstance(call.func, cst.Attribute) and call.func.attr.value == "append"):
        return None
    name = call.func.value
    if isinstance(name, cst.Name):
        uses = variable_uses(ctx.index, owner(ctx.index, name), name.value) or ()
        reads = [use.node for use in uses if use.kind == "read"]
    elif isinstance(name, cst.Attribute) and isinstance(name.value, cst.Name) and name.value.value == "self" \
            and (cls := ctx.index.enclosing_class(call)) is not None:
        reads = ctx.loops.self_attributes(cls, name.attr.value)
    else:
        return None
    for node in reads:
        if (found := _whole_use(ctx, node)) is not None:
            return GatheredList(name, found[0], found[1], None, found[2])
    for node in reads if isinstance(name, cst.Name) else ():
        # Returned alone or in a tuple (`return losses, acc`), bound by a caller to a name.
        for bound, caller in ctx.loops.returned_to(node, escaping=True):
            for use in variable_uses(ctx.index, caller, bound) or ():
                if use.kind == "read" and (found := _whole_use(ctx, use.node)) is not None:
                    return GatheredList(name, found[0], found[1], ctx.index.enclosing_function(node), found[2])
    return None


def _whole_use(ctx, node: cst.BaseExpression) -> tuple[cst.BaseExpression, cst.BaseExpression, str | None] | None:
    """(the list as used, the use as written, the torch join or None for a mean) where node, a read
    of a list (or a window of its last values: `losses[-50:]`), is averaged (`np.mean(losses)`,
    `sum(losses) / n`, `torch.tensor(losses).mean()`) or joined (_JOINS: `np.concatenate(preds)`,
    `torch.stack(norms)` of `torch.stack(norms).max()`). None elsewhere, and for a total
    (`sum(losses)` alone)."""
    listed = node
    if isinstance(parent := ctx.parent(listed), cst.Subscript) and parent.value is listed:
        listed = parent
    outer = ctx.parent(listed)
    reducer = ctx.parent(outer)
    if not (isinstance(outer, cst.Arg) and isinstance(reducer, cst.Call) and reducer.args[0] is outer
            and outer.keyword is None and not outer.star):
        return None
    qualified = ctx.names.qualified(reducer.func)
    if qualified in _ARRAYS and all(a.keyword is not None for a in reducer.args[1:]):
        method, mean = ctx.parent(reducer), ctx.parent(ctx.parent(reducer))
        if isinstance(method, cst.Attribute) and method.attr.value == "mean" and isinstance(mean, cst.Call) \
                and mean.func is method and not mean.args:
            return listed, mean, None
    # Joined as it is (no `axis=`/`dim=`, which the torch call would spell otherwise): the join's
    # result, an array over every step, is what the script goes on with.
    if qualified in _JOINS and len(reducer.args) == 1:
        return listed, reducer, _JOINS[qualified]
    if qualified in _ARRAYS:
        return None
    if qualified not in _REDUCTIONS or len(reducer.args) != 1:
        return None
    divided = ctx.parent(reducer)
    if isinstance(divided, cst.BinaryOperation) and divided.left is reducer and isinstance(divided.operator, cst.Divide):
        return listed, divided, None
    # A total, not a mean: `sum(losses)` alone.
    return None if qualified in ("builtins.sum", "numpy.sum") else (listed, reducer, None)
