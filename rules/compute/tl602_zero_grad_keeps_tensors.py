"""TL602 zero-grad-keeps-tensors: `zero_grad(set_to_none=False)` writes zeros into every gradient
instead of freeing them."""

from __future__ import annotations

import libcst as cst

from trainlint.analysis.distributed import one_line
from trainlint.diagnostics import Applicability
from trainlint.rule import NO_FIX, Invalid, Rule, Valid, target_allows



# Gradient norms read from every parameter with no None check (a hand-written norm logger).
_GRAD_NORMS = (
    "import torch\n"
    "for x in loader:\n"
    "    opt.zero_grad(set_to_none=False)\n"
    "    loss_fn(model(x)).backward()\n"
    "    gnorm = torch.stack([p.grad.norm() for p in params]).norm()\n"
    "    opt.step()\n"
)

class ZeroGradKeepsTensors(Rule):
    code = "TL602"
    name = "zero-grad-keeps-tensors"
    summary = "`zero_grad(set_to_none=False)` writes zeros into every gradient instead of freeing them"
    source = "§2.1"
    fix_applicability = "unsafe"
    triggers = ("zero_grad",)
    docs = """
## What it does
Flags `optimizer.zero_grad(set_to_none=False)` and `model.zero_grad(set_to_none=False)` (also the
positional `zero_grad(False)`). A value written as a name is read as TL101 describes
(`set_to_none=args.free_grads` of a `store_true` switch is False in a plain run) and fixed where
it is written: set to True there.

## Why is this bad?
With `set_to_none=False` every step launches a memset kernel per parameter to write zeros, and
the gradient tensors stay allocated between the optimizer step and the next backward. The
default (`set_to_none=True`, since PyTorch 2.0) drops them: no memsets, lower peak memory, and
the next backward writes the gradients instead of adding to zeros.

## Example
```python
optimizer.zero_grad(set_to_none=False)
```

## Use instead
```python
optimizer.zero_grad()
```

## Fix safety
Unsafe: code that reads `p.grad` between `zero_grad()` and the next backward (or for parameters
that get no gradient) sees `None` instead of a zero tensor, and optimizers skip parameters whose
gradient is None rather than stepping them with a zero gradient (which matters with weight decay
or momentum). No fix is offered when the module, in any function, reads a `.grad` that no None
test of the same gradient guards (`torch.stack([p.grad.norm() for p in params])` fails as soon
as a parameter gets no gradient on a step); the message shows the read. Guards are `if p.grad is
not None:` (or `if p.grad is None: continue` before the read), `p.grad is not None and ...`,
`... for p in params if p.grad is not None`, and a loop over parameters filtered that way
(`filter(lambda p: p.grad is not None, params)`). With `target-torch` older than 2.0, whose default was `set_to_none=False`, the fix
writes `set_to_none=True` instead of dropping the argument.
"""
    valid = [
        Valid("optimizer.zero_grad()\n"),
        Valid("optimizer.zero_grad(set_to_none=True)\n"),
        Valid("model.zero_grad(set_to_none=args.keep_grads)\n"),
        Valid("FREE = True\nmodel.zero_grad(set_to_none=FREE)\n"),
        Valid("widget.clear(set_to_none=False)\n"),
        Valid("zero_grad = lambda: None\nzero_grad()\n"),
    ]
    invalid = [
        Invalid("optimizer.zero_grad(set_to_none=False)\n", fixed="optimizer.zero_grad()\n",
                message="set_to_none"),
        # Before PyTorch 2.0 the default was set_to_none=False: dropping the argument would change nothing.
        Invalid("optimizer.zero_grad(set_to_none=False)\n", fixed="optimizer.zero_grad(set_to_none=True)\n",
                message="call `optimizer.zero_grad(set_to_none=True)` to free", settings={"target_torch": "1.13"}),
        Invalid("model.zero_grad(False)\n", fixed="model.zero_grad()\n", message="`model.zero_grad(False)` writes zeros"),
        Invalid("for x in loader:\n    self.opt.zero_grad(set_to_none = False)\n    loss.backward()\n",
                fixed="for x in loader:\n    self.opt.zero_grad()\n    loss.backward()\n"),
        Invalid("opts[0].zero_grad(\n    set_to_none=False,\n)\n", fixed="opts[0].zero_grad()\n"),
        # Written as names whose value the file settles: fixed where they are written.
        Invalid("FREE_GRADS = False\noptimizer.zero_grad(set_to_none=FREE_GRADS)\n",
                fixed="FREE_GRADS = True\noptimizer.zero_grad(set_to_none=FREE_GRADS)\n",
                message="allocated (`FREE_GRADS` is False); set `FREE_GRADS = True` to free them instead"),
        Invalid("import argparse\nparser = argparse.ArgumentParser()\nparser.add_argument('--free-grads', action='store_true')\n"
                "args = parser.parse_args()\noptimizer.zero_grad(set_to_none=args.free_grads)\n",
                fixed="import argparse\nparser = argparse.ArgumentParser()\n"
                      "parser.add_argument('--free-grads', action=argparse.BooleanOptionalAction, default=True)\n"
                      "args = parser.parse_args()\noptimizer.zero_grad(set_to_none=args.free_grads)\n",
                message="unless `--free-grads` is given (it is off by default)"),
        Invalid("import torch\nclass T:\n    def step(self):\n        self.optimizer.zero_grad(set_to_none=False)\n",
                fixed="import torch\nclass T:\n    def step(self):\n        self.optimizer.zero_grad()\n"),        # Gradients read with no None check: a parameter that gets no gradient on a step has None
        # there after the fix (an auxiliary head used every other step: AttributeError on step 1).
        Invalid(_GRAD_NORMS, fixed=NO_FIX,
                message="not fixed: `p.grad` is read without a None check (`p.grad.norm()`)"),
        Invalid("def clip(params):\n    for p in params:\n        p.grad.data.clamp_(-1, 1)\n"
                "def step():\n    opt.zero_grad(set_to_none=False)\n    loss.backward()\n    clip(params)\n",
                fixed=NO_FIX, message="not fixed: `p.grad` is read"),
        Invalid("grads = [p.grad for p in model.parameters()]\nopt.zero_grad(set_to_none=False)\n", fixed=NO_FIX),
        # ... a test on another gradient guards nothing.
        Invalid(_GRAD_NORMS.replace("for p in params]", "for p in params if q.grad is not None]"), fixed=NO_FIX),
        # Read only where a None test keeps None out: fixed.
        Invalid(_GRAD_NORMS.replace("for p in params]", "for p in params if p.grad is not None]"),
                fixed=_GRAD_NORMS.replace("for p in params]", "for p in params if p.grad is not None]").replace(
                    "zero_grad(set_to_none=False)", "zero_grad()")),
        Invalid(_GRAD_NORMS.replace("params]", "filter(lambda p: p.grad is not None, params)]"),
                fixed=_GRAD_NORMS.replace("params]", "filter(lambda p: p.grad is not None, params)]").replace(
                    "zero_grad(set_to_none=False)", "zero_grad()")),
        Invalid("opt.zero_grad(set_to_none=False)\nloss.backward()\nfor p in model.parameters():\n"
                "    if p.grad is None:\n        continue\n    p.grad.data.clamp_(-1, 1)\n"
                "    if p.grad is not None and p.grad.norm() > 1: print(p.grad.norm())\n"
                "    total = 0 if p.grad is None else p.grad.sum()\n",
                fixed="opt.zero_grad()\nloss.backward()\nfor p in model.parameters():\n"
                      "    if p.grad is None:\n        continue\n    p.grad.data.clamp_(-1, 1)\n"
                      "    if p.grad is not None and p.grad.norm() > 1: print(p.grad.norm())\n"
                      "    total = 0 if p.grad is None else p.grad.sum()\n"),
        Invalid("params = [p for p in model.parameters() if p.grad is not None]\n"
                "norm = torch.stack([torch.norm(p.grad) for p in params])\nopt.zero_grad(set_to_none=False)\n",
                fixed="params = [p for p in model.parameters() if p.grad is not None]\n"
                      "norm = torch.stack([torch.norm(p.grad) for p in params])\nopt.zero_grad()\n"),
        # Written, tested, or `torch.autograd.grad(...)`: no gradient read.
        Invalid("for p in model.parameters():\n    if p.grad is None:\n        p.grad = torch.zeros_like(p)\n"
                "g = torch.autograd.grad(loss, x)\nopt.zero_grad(set_to_none=False)\n",
                fixed="for p in model.parameters():\n    if p.grad is None:\n        p.grad = torch.zeros_like(p)\n"
                      "g = torch.autograd.grad(loss, x)\nopt.zero_grad()\n"),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute) or func.attr.value != "zero_grad" or len(node.args) != 1:
            return
        arg = node.args[0]
        if arg.star or (arg.keyword is not None and arg.keyword.value != "set_to_none"):
            return
        receiver = self.ctx.code(func.value)
        if not (isinstance(arg.value, cst.Name) and arg.value.value == "False"):
            # Written as a name whose value the file settles (`set_to_none=args.free_grads` of a
            # `store_true` switch): judged by that value, fixed where it is written.
            source = self.ctx.sources.of_arg(arg)
            if source is not None and source.value is False:
                withheld = self._unguarded_read()
                self.report(node, source.explain(
                    f"`{receiver}.zero_grad(set_to_none={self.ctx.code(arg.value)})` writes zeros into every "
                    f"gradient each step and keeps them allocated", "True", "to free them instead")
                    + (f"; {withheld}" if withheld else ""),
                    None if withheld else source.fix(self, "True", Applicability.UNSAFE))
            return
        if target_allows(self.ctx, "2.0"):
            call, why = f"{receiver}.zero_grad()", " (set_to_none=True)"
            fix = self.fix(Applicability.UNSAFE, "Drop `set_to_none=False`",
                           (node, node.with_changes(args=[], whitespace_before_args=cst.SimpleWhitespace(""))))
        else:  # before PyTorch 2.0 the default was False: say True (target-torch)
            call, why = f"{receiver}.zero_grad(set_to_none=True)", ""
            fix = self.fix(Applicability.UNSAFE, "Set `set_to_none=True`",
                           (arg.value, cst.Name("True")))
        withheld = self._unguarded_read()
        self.report(
            node,
            # The call as written: a positional `zero_grad(False)` was quoted with a keyword it lacks.
            f"`{one_line(self.ctx.code(node))}` writes zeros into every gradient each step and keeps them "
            f"allocated; call `{call}`{why} to free them instead" + (f"; {withheld}" if withheld else ""),
            None if withheld else fix,
        )

    def _unguarded_read(self) -> str | None:
        """Why the fix is withheld, when the module reads a `.grad` with no None check in front
        (`torch.stack([p.grad.norm() for p in params])`; grads.py): freed, the gradient of a
        parameter that gets none on a step (an auxiliary head used every other step) is None there,
        and the read fails. None when every read is guarded."""
        ctx = self.ctx
        grad = ctx.grads.unguarded_read
        if grad is None:
            return None
        # What reads it: `p.grad.data.clamp_(-1, 1)`, or the call it is handed to (`torch.norm(p.grad)`).
        reader: cst.CSTNode = grad
        while True:
            up = ctx.parent(reader)
            if (isinstance(up, (cst.Attribute, cst.Subscript)) and up.value is reader) or (
                    isinstance(up, cst.Call) and up.func is reader):
                reader = up
            else:
                break
        if reader is grad and isinstance(ctx.parent(grad), cst.Arg):
            reader = ctx.parent(ctx.parent(grad))
        name, code = ctx.code(grad).strip(), " ".join(ctx.code(reader).split())
        where = f" (`{code}`)" if reader is not grad and len(code) <= 60 else ""
        return (f"not fixed: `{name}` is read without a None check{where}, which fails once the gradient of a "
                f"parameter that gets none on a step is None")
