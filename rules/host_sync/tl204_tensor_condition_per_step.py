"""TL204 tensor-condition-per-step: Python `if`/`while`/`assert`/conditional expression/`min`/`max` on
a tensor value on every step."""

from __future__ import annotations

import libcst as cst

from trainlint.analysis.loops import first_modulo
from trainlint.diagnostics import Applicability
from trainlint.layout import split_at_brackets
from trainlint.rule import NO_FIX, Invalid, Rule, Valid, in_training_loop

from .cases import FORWARD_TRAINER, forward_case
from .consumers import test_advice
from .syncs import device_tensor, forward_call, is_tensor_test, on_accelerator, waits_per_step


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
_HOST_BATCH_TEST = ("import torch\nfor batch in loader:\n    x = batch['x'].cuda(non_blocking=True)\n    y = batch['y']\n"
                    "    {test}\n    loss = model(x, y.cuda(non_blocking=True))\n    loss.backward()\n    opt.step()\n")



# A test of a loss at two precisions, a loop over the dtypes written out ({test} on the loss).
_WRITTEN_CASES = ("import torch\ndef test_low_precision(model, x, y):\n"
                  "    for dtype in (torch.float16, torch.bfloat16):\n"
                  "        loss = model(x.to(dtype).cuda(), y.cuda()).mean()\n        loss.backward()\n"
                  "        {test}\n")

# A trainer whose step returns the loss ({kept}), tested by a helper the loop hands it to ({use}).
_RETURNED_LOSS = ("import torch\nclass Brain:\n    def __init__(self, model):\n        self.model = model.cuda()\n"
                  "    def fit_batch(self, batch):\n        loss = self.model(batch.cuda()).sum()\n        loss.backward()\n"
                  "        self.opt.step()\n        return {kept}\n    def update(self, loss):\n"
                  "        if torch.isfinite(loss):\n            self.n += 1\n    def fit(self, loader):\n"
                  "        for batch in loader:\n            loss = self.fit_batch(batch)\n            {use}\n")

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
that every call hands a Python number (`check(loss.item(), 10)`; not one whose function is also
handed on as a callback, which may be given anything) does not, nor does a constant of
the module named like one (`TARGET_LOSS = 0.05`); a module variable the module makes a tensor on
the device counts, read in a function too. An interval counted
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
or check at the logging interval. Only a check that fails (an `assert`, an `if` ending in
`raise`) can become `torch._assert_async`: a test that skips the batch (`if mask.sum() == 0:
continue`) needs the bool on the host; compute on the device instead (`torch.where(...)`, masking
the loss), or accept the sync. The message's advice follows what the branch does.

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
        # The loss a step returns with `.cpu()` is in host memory: testing it, in the loop or in a
        # helper every call of which hands it that value (speechbrain's `update_average(loss, ...)`
        # after `fit_batch` returns `loss.detach().cpu()`), waits for nothing. It was reported.
        Valid(_RETURNED_LOSS.format(kept="loss.detach().cpu()", use="self.update(loss)")),
        Valid(_RETURNED_LOSS.format(kept="loss.detach().cpu()", use="if torch.isnan(loss):\n                break")),
        # A model of the file run only in evaluation, under no_grad after training: its forward is
        # no per-step code; nor is the forward of a class the loop does not call (an imported model).
        Valid(forward_case("if torch.isnan(x).any():\n    raise ValueError('nan input')", make="model = other.cuda()")
              + "net = Net().cuda()\nwith torch.no_grad():\n    for x in val_loader:\n        net(x.cuda())\n"),
        Valid(forward_case("if torch.isnan(x).any():\n    raise ValueError('nan input')",
                           make="from models import Net as Imported\nmodel = Imported().cuda()")),
        # A test's loop over a few settings written out runs each once: no training loop (timm's
        # low-precision loss test was reported).
        Valid(_WRITTEN_CASES.format(test="assert torch.isfinite(loss)")),
        # A module constant is what the module assigns it, whatever its name says: a float read
        # in a function. It was reported.
        Valid("import torch\nTARGET_LOSS = 0.05\ndef train():\n    lossf = float('inf')\n"
              "    for step, (x, y) in enumerate(loader):\n        loss = model(x, y)\n        loss.backward()\n"
              "        opt.step()\n        if step % 100 == 0:\n            lossf = loss.item()\n"
              "        if lossf < TARGET_LOSS:\n            break\n"),
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
        # After `if step != 0: continue` the rest runs on the first step only (read as per step).
        Valid(in_training_loop("if step != 0:\n    continue\nif loss > 10:\n    print('spike')")),
        Valid(in_training_loop("if use_amp:\n    scaler.update()")),
        Valid("import torch\nfor x in val_loader:\n    out = model(x)\n    assert not torch.isnan(out).any()\n"),
        Valid(in_training_loop("if step == 0:\n    print(loss)")),
        # torch.is_* predicates answer a Python bool; loss_scale is a setting (transformers, deepspeed).
        Valid(in_training_loop("if torch.is_floating_point(x):\n    x = x.half()")),
        Valid(in_training_loop("if self.clip_grad == 0.0 and self.loss_scale == 1.0:\n    continue")),
        # `prev = loss` after `loss = loss.item()`: both floats (timm's optimizer tests).
        Valid(in_training_loop("loss = loss.item()\nif step > 2:\n    assert loss < prev_loss\nprev_loss = loss")),
        # A batch field the loop never moves is in host memory: testing it waits for no GPU.
        Valid(_HOST_BATCH_TEST.format(test="if y.sum() == 0:\n        continue")),
        Valid(_HOST_BATCH_TEST.format(test="if torch.bincount(y, minlength=3)[0] == 0:\n        continue")),
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
        # The step returns the loss on the device: the helper's test waits for the GPU; so it does
        # where the helper is also handed on as a callback, which may be given anything.
        Invalid(_RETURNED_LOSS.format(kept="loss.detach()", use="self.update(loss)"), message="`if` on a tensor"),
        Invalid(_RETURNED_LOSS.format(kept="loss.detach().cpu()", use="self.update(loss)\n            hooks.append(self.update)"),
                message="`if` on a tensor"),
        # ... but inside a training loop, such a loop's test runs on every step.
        Invalid("import torch\nfor x, y in loader:\n    for opt, part in ((opt_g, 'g'), (opt_d, 'd')):\n"
                "        loss = model(x.cuda(), part).mean()\n        loss.backward()\n        opt.step()\n"
                "        assert torch.isfinite(loss)\n", message="`torch._assert_async"),
        # A parameter named like a tensor whose function is also handed on (a callback, which may
        # be given a tensor): what it holds is not known to be a number.
        Invalid("import torch\ndef check(loss, limit):\n    if loss > limit:\n        print('big')\n"
                "hooks.append(check)\n" + in_training_loop("check(loss.item(), 10)").partition("\n")[2],
                message="`if` on a tensor"),
        # ... but a module constant that is a tensor on the device makes the test one, as does a
        # constant named like a loss that a function may rebind (`global`).
        Invalid(_RETURNED_LOSS.format(kept="loss.detach().cpu()", use="if loss < STOP_BELOW:\n                break")
                .replace("import torch\n", "import torch\nSTOP_BELOW = torch.tensor(0.05).cuda()\n", 1),
                message="`if` on a tensor"),
        Invalid("import torch\nTARGET_LOSS = 0.05\ndef train():\n    global TARGET_LOSS\n    lossf = float('inf')\n"
                "    for step, (x, y) in enumerate(loader):\n        loss = model(x, y)\n        loss.backward()\n"
                "        opt.step()\n        if lossf < TARGET_LOSS:\n            break\n"
                "        if step % 100 == 0:\n            lossf = loss.item()\n"
                "            TARGET_LOSS = loss.detach()\n", message="`if` on a tensor"),
        # In the forward of a model of the file, which the loop runs through `model(x)` on every
        # step (the loop never showed forward's code, and these went unreported): a check that
        # fails gets the `_assert_async` suggestion, a test that returns early none.
        Invalid(forward_case("if torch.isnan(x).any():\n    raise ValueError('nan input')"), fixed=NO_FIX,
                message="(in `forward`, which `model(x.cuda())` in the training loop runs on every step)"),
        Invalid(FORWARD_TRAINER.format(body="if (mask.sum() == 0):\n            return self.fc(x) * 0"), fixed=NO_FIX,
                message="(in `forward`, which `self.model(x.cuda(), mask.cuda())` in the training loop runs"),
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
        Invalid(_HOST_BATCH_TEST.format(test="if x.sum() == 0:\n        continue"), fixed=NO_FIX),
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
        # The advice fits what the branch does: `torch._assert_async` was advised for every test,
        # also a skip of the batch (`continue`), which no assert can make.
        Invalid(in_training_loop("if torch.isnan(loss):\n    raise RuntimeError('nan')"),
                message="use `torch._assert_async(...)`"),
        # `sys.exit(...)` ends the run as `raise` does: a check _assert_async can make (DeiT's stop).
        Invalid(in_training_loop("if not torch.isfinite(loss):\n    print('Loss is', loss)\n    sys.exit(1)").replace(
                    "import torch\n", "import sys\nimport torch\n"),
                fixed=NO_FIX, message="use `torch._assert_async(...)`"),
        Invalid(in_training_loop("if not torch.isfinite(loss):\n    opt.zero_grad()\n    continue"), fixed=NO_FIX,
                message="no device-side check can skip the step: compute it on the device instead (`torch.where(...)`"),
        Invalid(in_training_loop("if loss < 1e-3:\n    break"), fixed=NO_FIX,
                message="leaving the loop needs the value on the host: test it at the logging interval"),
        Invalid(in_training_loop("if loss > 10:\n    print('spike')"), fixed=NO_FIX,
                message="compute on the device (`torch.where(...)`) or check it at the logging interval"),
        # A test of a tensor bound by `:=` in it, or earlier (it was not reported).
        Invalid(in_training_loop("if (n := loss.detach()) > 1:\n    print('big')"), fixed=NO_FIX, message="`if` on a tensor"),
        Invalid(in_training_loop("history.append((n := loss.detach()))\nif n > 1:\n    print('big')"), fixed=NO_FIX,
                message="`if` on a tensor"),
        # After `if step == 0: continue`, which leaves on one step only (it hid the rest).
        Invalid(in_training_loop("if step == 0:\n    continue\nif loss > 10:\n    print('spike')"), fixed=NO_FIX,
                message="`if` on a tensor"),
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
        counted_on_device = modulo is not None and device_tensor(ctx, modulo.left)
        if (ctx.loops.limits_body(test) and not counted_on_device) or not is_tensor_test(ctx, test) \
                or not (each_iteration and on_accelerator(ctx) or waits_per_step(ctx, node)):
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
            advice = test_advice(ctx, node)
        call = forward_call(ctx, node)
        if call is not None:
            # In a model's forward the step loop is out of sight: say what runs it every step.
            advice += (f" (in `{ctx.index.enclosing_function(node).name.value}`, which `{ctx.code(call)}` in the training "
                       f"loop runs on every step)")
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
        tensors = [a.value for a in node.args if device_tensor(ctx, a.value)]
        if not tensors or not waits_per_step(ctx, node):
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
        call = cst.parse_expression(f"{torch_name}._assert_async({cond})")
        if not ctx.fits(ctx.code(call), at=node):
            # Laid out as Black would (the suggestion is copied as shown): the `if` and its
            # message made one line longer than line-length.
            call = split_at_brackets(call, ctx.module.default_indent, "", ctx.room(node))
        new = cst.SimpleStatementLine([cst.Expr(call)])
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
