"""TL302 ddp-copying-gradients: `DistributedDataParallel(...)` without `gradient_as_bucket_view=True`."""

from __future__ import annotations

from functools import cached_property

import libcst as cst

from trainlint.analysis.distributed import DDP
from trainlint.analysis.frameworks import is_accelerate_ddp_kwargs, is_lightning_ddp_strategy, lightning_strategies
from trainlint.analysis.imports import imported_name
from trainlint.analysis.star_args import star_keys
from trainlint.diagnostics import Applicability
from trainlint.rule import NO_FIX, Invalid, Rule, Valid


_DDP_ARGS = (
    "import torch\n"
    "def wrap(model, args, device):\n"
    "    ddp_args = {}\n"
    "    if args.ddp_static_graph:\n"
    "        ddp_args['static_graph'] = True\n"
    "    return torch.nn.parallel.DistributedDataParallel(model, device_ids=[device], **ddp_args)\n"
)


# A DDP wrapper only evaluated, and a teacher wrapped under no_grad beside the trained model.
_EVALUATE = (
    "import torch\n"
    "from torch.nn.parallel import DistributedDataParallel as DDP\n"
    "@torch.no_grad()\n"
    "def evaluate(model, loader, rank):\n"
    "    model = DDP(model, device_ids=[rank])\n"
    "    model.eval()\n"
    "    for x, y in loader:\n"
    "        metric.update(model(x), y)\n"
)
# mmdet's benchmark: a model wrapped, switched to evaluation and returned ({more}: the rest of the module).
_INFERENCE = (
    "import torch\n"
    "from torch.nn.parallel import DistributedDataParallel\n"
    "def init_model(model, distributed):\n"
    "    model = model.cuda()\n"
    "    if distributed:\n"
    "        model = DistributedDataParallel(model, device_ids=[torch.cuda.current_device()])\n"
    "    {switch}\n"
    "    return model\n"
    "{more}"
)
# An evaluation helper that returns what the wrapper computes ({ret}: its return).
_EVALUATE_SUM = (
    "import torch\n"
    "from torch.nn.parallel import DistributedDataParallel as DDP\n"
    "@torch.no_grad()\n"
    "def evaluate_ddp(net, batches):\n"
    "    wrapped = DDP(net)\n"
    "    {ret}\n"
)
_DISTIL = (
    "import torch\n"
    "from torch.nn.parallel import DistributedDataParallel as DDP\n"
    "def distil(net, teacher, loader, opt, rank):\n"
    "    model = DDP(net, device_ids=[rank], gradient_as_bucket_view=True)\n"
    "    with torch.no_grad():\n"
    "        teacher = DDP(teacher, device_ids=[rank])\n"
    "    for x in loader:\n"
    "        with torch.no_grad():\n"
    "            target = teacher(x)\n"
    "        loss_fn(model(x), target).backward()\n"
    "        opt.step()\n"
)


class DdpCopyingGradients(Rule):
    code = "TL302"
    name = "ddp-copying-gradients"
    summary = "`DistributedDataParallel(...)` without `gradient_as_bucket_view=True`"
    source = "§4.2"
    fix_applicability = "unsafe"
    triggers = ("DistributedDataParallel", "DDPStrategy", 'strategy="ddp', "strategy='ddp")
    docs = """
## What it does
Flags `DistributedDataParallel(...)` (any import alias) that does not pass
`gradient_as_bucket_view=True`; and the same through Lightning: a `DDPStrategy(...)` without it,
or a `Trainer`/`Fabric` given `strategy="ddp"` (or `"ddp_find_unused_parameters_true"`), which
the fix turns into `strategy=DDPStrategy(gradient_as_bucket_view=True)`, as Lightning's DDP
optimizations guide shows; and accelerate's `DistributedDataParallelKwargs(...)` (the DDP options
of an `Accelerator(kwargs_handlers=[...])`) without it. Lightning's and accelerate's only in a
module that trains (a `.fit(...)` call, a backward or an optimizer step), since Fabric is also
started with `strategy="ddp"` just to launch processes. A plain `DistributedDataParallel(...)`
that no backward runs through is not flagged either: assigned to a name in a function that keeps
it there (not returned, handed to a call, stored elsewhere or read by a nested function or by
a generator expression left to run later), and used only under
`torch.no_grad()`/`torch.inference_mode()` (the function's decorator or a `with`: what it
computes there may be returned, also from a comprehension or a generator expression a builtin
consumes on the spot, `return sum(model(x).sum() for x in batches)`, as it carries no graph), or in a function that runs no backward or optimizer step (nor calls one that does, nor
runs per step) and neither calls its `.train()` nor hands its `.parameters()` to a call: an
evaluation helper. Nor is one returned after its function switches it to evaluation
(`model.eval()`, then `return model`) in a module that runs no backward or optimizer step: an
inference model (a benchmark's). Switching it out of training (`.eval()`, `.requires_grad_(False)`) is no use
that trains, wherever it runs. A wrapper at module level, or one that leaves its function (but for
that inference model), is flagged, since its training is not in sight. A value written as a name is read as
TL101 describes (`gradient_as_bucket_view=args.bucket_view` of a `store_true` switch is off in a
plain run) and fixed where it is written.

## Why is this bad?
By default DDP keeps each gradient twice: in `param.grad` and in the communication bucket it
all-reduces, copying between them on every backward. With `gradient_as_bucket_view=True` the
gradients are views into the buckets: one copy less per step and a gradient-sized block of
memory saved.

## Example
```python
model = DistributedDataParallel(model, device_ids=[local_rank])
```

## Use instead
```python
model = DistributedDataParallel(model, device_ids=[local_rank], gradient_as_bucket_view=True)
```

## Fix safety
Unsafe: gradients become views into DDP's buckets, so code that assigns `param.grad = ...`,
swaps a gradient's storage (`param.grad.data = ...`: the gradient leaves the bucket and the
averaged gradients go wrong, so the trained weights change) or calls
`param.grad.detach_()`/`requires_grad_()` breaks. No fix is offered when the module does one of
these anywhere, a helper function included (the message says which); a gradient changed in
place (`param.grad.mul_(...)`, `param.grad.data *= ...`, `param.grad.copy_(...)`) stays the
bucket's view and is fine. `optimizer.zero_grad()` works either way. A call with `**options` is flagged
only when every key the dict can hold is visible in the function (built from literals, given
literal keys, used nowhere else) and none is `gradient_as_bucket_view`; one with `*args` (which
may pass it by position) is not flagged, nor one that passes ten or more arguments by position:
the tenth is `gradient_as_bucket_view` in releases before `init_sync` was added ahead of it.
"""
    valid = [
        Valid("from torch.nn.parallel import DistributedDataParallel as DDP\nDDP(model, gradient_as_bucket_view=True)\n"),
        Valid("import torch\ntorch.nn.parallel.DistributedDataParallel(model, **ddp_kwargs)\n"),
        Valid("from torch.nn.parallel import DistributedDataParallel as DDP\n"
              "DDP(model, gradient_as_bucket_view=args.bucket_view)\n"),
        # An option that defaults to on.
        Valid("import argparse\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
              "parser = argparse.ArgumentParser()\nparser.add_argument('--bucket-view', type=int, default=1)\n"
              "args = parser.parse_args()\nDDP(model, gradient_as_bucket_view=args.bucket_view)\n"),
        Valid("from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\nFSDP(model)\n"),
        Valid("from mylib import DistributedDataParallel\nDistributedDataParallel(model)\n"),
        Valid("from torch.nn.parallel import DistributedDataParallel as DDP\nif isinstance(model, DDP):\n"
              "    model = model.module\n"),
        # The options dict may set it, or is changed where its keys cannot be seen.
        Valid(_DDP_ARGS.replace("ddp_args['static_graph'] = True", "ddp_args['gradient_as_bucket_view'] = True")),
        Valid(_DDP_ARGS.replace("ddp_args['static_graph'] = True", "ddp_args.update(user_options)")),
        Valid(_DDP_ARGS.replace("ddp_args = {}", "ddp_args = load_options()")),
        Valid("import torch\ndef wrap(model, ddp_args):\n"
              "    return torch.nn.parallel.DistributedDataParallel(model, **ddp_args)\n"),
        # Every parameter by position: which one the tenth is depends on the torch release.
        Valid("from torch.nn.parallel import DistributedDataParallel as DDP\n"
              "DDP(model, None, None, 0, True, None, 25, False, False, True)\n"),
        # `*args` may pass it by position (and a keyword beside it would be passed twice).
        Valid("from torch.nn.parallel import DistributedDataParallel as DDP\ndef wrap(model, *args):\n"
              "    return DDP(model, *args)\n"),
        Valid(_DDP_ARGS.replace("device_ids=[device]", "*extra")),
        # accelerate: the option given, or options for a module that does not train.
        Valid("from accelerate import Accelerator, DistributedDataParallelKwargs\n"
              "kwargs = DistributedDataParallelKwargs(find_unused_parameters=True, gradient_as_bucket_view=True)\n"
              "accelerator = Accelerator(kwargs_handlers=[kwargs])\naccelerator.backward(loss)\n"),
        Valid("from accelerate.utils import DistributedDataParallelKwargs\nDEFAULTS = DistributedDataParallelKwargs()\n"),
        # Lightning: the option given, or a strategy that is not plain DDP.
        Valid("import lightning as L\nfrom lightning.pytorch.strategies import DDPStrategy\n"
              "trainer = L.Trainer(strategy=DDPStrategy(gradient_as_bucket_view=True))\n"),
        Valid("import lightning as L\ntrainer = L.Trainer(strategy='fsdp')\nfabric = L.Fabric(strategy=args.strategy)\n"),
        # Processes launched for generation: nothing trains here (litgpt's generate scripts).
        Valid("import lightning as L\nfabric = L.Fabric(devices='auto', strategy='ddp')\nfabric.launch()\n"
              "print(generate(model, prompt))\n"),
        # A wrapper only evaluated (a user's script): no backward runs through it.
        Valid(_EVALUATE),
        Valid(_EVALUATE.replace("@torch.no_grad()\n", "")),
        # ... switched to evaluation and returned from a module that trains nothing (mmdet's
        # inference benchmark was reported).
        Valid(_INFERENCE.format(switch="model.eval()", more="")),
        # ... under `with torch.no_grad():` in a function that trains another model.
        Valid(_DISTIL),
        # ... switched to evaluation in the training function: `.eval()` trains nothing.
        Valid(_DISTIL.replace("    for x in loader:\n", "    teacher.eval()\n    teacher.requires_grad_(False)\n"
                                                         "    for x in loader:\n")),
        # ... its outputs returned, computed under no_grad (no graph to run a backward through):
        # also in a comprehension, or a generator expression consumed where it stands.
        Valid(_EVALUATE_SUM.format(ret="return sum(wrapped(x).sum() for x in batches)")),
        Valid(_EVALUATE_SUM.format(ret="return [wrapped(x) for x in batches]")),
        Valid(_EVALUATE_SUM.format(ret="return torch.stack(list(wrapped(x) for x in batches))")),
        Valid(_EVALUATE_SUM.format(ret="return wrapped(batches).argmax(-1)")),
    ]
    invalid = [
        # ... but returned without that switch, or from a module that trains, it may be trained.
        Invalid(_INFERENCE.format(switch="model.float()", more="")),
        Invalid(_INFERENCE.format(switch="model.eval()", more="def fit(model, x, opt):\n    model(x).sum().backward()\n"
                                                             "    opt.step()\n")),
        # Lightning's strategy="ddp": named as a DDPStrategy with the option.
        Invalid("import lightning as L\ntrainer = L.Trainer(devices=8, strategy='ddp')\ntrainer.fit(model)\n",
                fixed="import lightning as L\nfrom lightning.pytorch.strategies import DDPStrategy\n"
                      "trainer = L.Trainer(devices=8, strategy=DDPStrategy(gradient_as_bucket_view=True))\n"
                      "trainer.fit(model)\n",
                message="use `strategy=DDPStrategy(gradient_as_bucket_view=True)`"),
        Invalid("import pytorch_lightning as pl\nfrom pytorch_lightning.strategies import DDPStrategy as S\n"
                "trainer = pl.Trainer(strategy='ddp_find_unused_parameters_true')\ntrainer.fit(model)\n",
                fixed="import pytorch_lightning as pl\nfrom pytorch_lightning.strategies import DDPStrategy as S\n"
                      "trainer = pl.Trainer(\n    strategy=S(find_unused_parameters=True, gradient_as_bucket_view=True)\n)\n"
                      "trainer.fit(model)\n"),
        Invalid("from lightning.fabric import Fabric\nfabric = Fabric(strategy='ddp')\n"
                "for batch in loader:\n    fabric.backward(model(batch))\n    opt.step()\n",
                fixed="from lightning.fabric import Fabric\nfrom lightning.fabric.strategies import DDPStrategy\n"
                      "fabric = Fabric(strategy=DDPStrategy(gradient_as_bucket_view=True))\n"
                      "for batch in loader:\n    fabric.backward(model(batch))\n    opt.step()\n"),
        Invalid("from lightning.pytorch.strategies import DDPStrategy\nstrategy = DDPStrategy(static_graph=True)\n"
                "Trainer(strategy=strategy).fit(model)\n",
                fixed="from lightning.pytorch.strategies import DDPStrategy\n"
                      "strategy = DDPStrategy(static_graph=True, gradient_as_bucket_view=True)\n"
                      "Trainer(strategy=strategy).fit(model)\n"),
        # accelerate's DDP options, handed to the Accelerator.
        Invalid("from accelerate import Accelerator, DistributedDataParallelKwargs\n"
                "kwargs = DistributedDataParallelKwargs(static_graph=True)\n"
                "accelerator = Accelerator(kwargs_handlers=[kwargs])\naccelerator.backward(loss)\n",
                fixed="from accelerate import Accelerator, DistributedDataParallelKwargs\n"
                      "kwargs = DistributedDataParallelKwargs(static_graph=True, gradient_as_bucket_view=True)\n"
                      "accelerator = Accelerator(kwargs_handlers=[kwargs])\naccelerator.backward(loss)\n"),
        Invalid("from torch.nn.parallel import DistributedDataParallel as DDP\nmodel = DDP(model, device_ids=[rank])\n",
                fixed="from torch.nn.parallel import DistributedDataParallel as DDP\n"
                "model = DDP(model, device_ids=[rank], gradient_as_bucket_view=True)\n",
                message="gradient_as_bucket_view=True"),
        Invalid("import torch\nmodel = torch.nn.parallel.DistributedDataParallel(\n    model,\n    device_ids=[rank],\n)\n",
                fixed="import torch\nmodel = torch.nn.parallel.DistributedDataParallel(\n    model,\n"
                "    device_ids=[rank],\n    gradient_as_bucket_view=True,\n)\n"),
        Invalid("import torch.nn as nn\nmodel = nn.parallel.DistributedDataParallel(model, gradient_as_bucket_view=False)\n",
                fixed="import torch.nn as nn\nmodel = nn.parallel.DistributedDataParallel(model, gradient_as_bucket_view=True)\n"),
        Invalid("from torch.nn.parallel.distributed import DistributedDataParallel\nm = DistributedDataParallel(m)\n",
                fixed="from torch.nn.parallel.distributed import DistributedDataParallel\n"
                "m = DistributedDataParallel(m, gradient_as_bucket_view=True)\n"),
        # Written as names whose value the file settles: a constant, a switch that is off by default.
        Invalid("from torch.nn.parallel import DistributedDataParallel as DDP\nBUCKET_VIEW = False\n"
                "model = DDP(model, gradient_as_bucket_view=BUCKET_VIEW)\n",
                fixed="from torch.nn.parallel import DistributedDataParallel as DDP\nBUCKET_VIEW = True\n"
                      "model = DDP(model, gradient_as_bucket_view=BUCKET_VIEW)\n",
                message="back (`BUCKET_VIEW` is False); set `BUCKET_VIEW = True` so gradients"),
        Invalid("import argparse\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
                "parser = argparse.ArgumentParser()\nparser.add_argument('--bucket-view', action='store_true')\n"
                "args = parser.parse_args()\nmodel = DDP(model, gradient_as_bucket_view=args.bucket_view)\n",
                fixed="import argparse\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
                      "parser = argparse.ArgumentParser()\nparser.add_argument(\n"
                      "    '--bucket-view', action=argparse.BooleanOptionalAction, default=True\n)\n"
                      "args = parser.parse_args()\nmodel = DDP(model, gradient_as_bucket_view=args.bucket_view)\n",
                message="unless `--bucket-view` is given (it is off by default)"),
        # Code that assigns gradients: reported, but the fix would break it.
        Invalid("from torch.nn.parallel import DistributedDataParallel as DDP\nmodel = DDP(model)\n"
                "for p in model.parameters():\n    p.grad = torch.zeros_like(p)\n", fixed=NO_FIX,
                message="not fixed: `p.grad = ...` replaces a gradient"),
        # ... or detaches them in place (a hand-written zero_grad: "Can't detach views in-place").
        Invalid("import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\nmodel = DDP(model)\n"
                "for p in model.parameters():\n    p.grad.detach_()\n    p.grad.zero_()\n", fixed=NO_FIX,
                message="not fixed: `p.grad.detach_()` fails on a gradient that is a view"),
        # ... or swaps a gradient's storage: it leaves the bucket, and the averaged gradients go wrong
        # (2 gloo ranks, 5 SGD steps: weights [-0.015, 0.142, -0.219, -0.185] became [-0.175, -0.021, 0.902, 0.645]).
        Invalid("import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\nmodel = DDP(model)\n"
                "for p in model.parameters():\n    p.grad.data = p.grad.data * 0.5\n", fixed=NO_FIX,
                message="not fixed: `p.grad.data = ...` swaps a gradient's storage out of DDP's bucket"),
        # ... also in a helper function.
        Invalid("import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
                "def scale_grads(model, factor):\n    for p in model.parameters():\n        if p.grad is not None:\n"
                "            p.grad.data = p.grad.data * factor\n"
                "def main():\n    model = DDP(net)\n    loss.backward()\n    scale_grads(model, 0.5)\n    opt.step()\n",
                fixed=NO_FIX, message="`p.grad.data = ...`"),
        # Changed in place, a gradient stays the bucket's view (the same weights either way): fixed.
        Invalid("import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\nmodel = DDP(model)\n"
                "for p in model.parameters():\n    p.grad.data *= 0.5\n    p.grad.mul_(0.5)\n",
                fixed="import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
                      "model = DDP(model, gradient_as_bucket_view=True)\n"
                      "for p in model.parameters():\n    p.grad.data *= 0.5\n    p.grad.mul_(0.5)\n"),
        # An evaluation wrapper whose uses are not all in sight: returned, handed on, or used after
        # its `no_grad` block in a training loop.
        Invalid(_EVALUATE.replace("    model.eval()\n", "    model.eval()\n    return model\n"),
                fixed=_EVALUATE.replace("    model.eval()\n", "    model.eval()\n    return model\n").replace(
                    "device_ids=[rank])", "device_ids=[rank], gradient_as_bucket_view=True)")),
        Invalid(_EVALUATE.replace("@torch.no_grad()\n", "").replace("    model.eval()\n", "    run_epoch(model, loader)\n"),
                fixed=_EVALUATE.replace("@torch.no_grad()\n", "").replace(
                    "    model.eval()\n", "    run_epoch(model, loader)\n").replace(
                    "device_ids=[rank])", "device_ids=[rank], gradient_as_bucket_view=True)")),
        Invalid(_DISTIL.replace("            target = teacher(x)\n", "            target = x\n").replace(
            "        loss_fn(model(x), target)", "        loss_fn(teacher(x), target)"),
                fixed=_DISTIL.replace("            target = teacher(x)\n", "            target = x\n").replace(
            "        loss_fn(model(x), target)", "        loss_fn(teacher(x), target)").replace(
            "DDP(teacher, device_ids=[rank])", "DDP(teacher, device_ids=[rank], gradient_as_bucket_view=True)")),
        # A generator expression left unconsumed runs when it is iterated, after its function
        # returned and outside its no_grad; outputs returned without no_grad may be trained on.
        Invalid(_EVALUATE_SUM.format(ret="return (wrapped(x) for x in batches)"),
                fixed=_EVALUATE_SUM.format(ret="return (wrapped(x) for x in batches)").replace(
                    "DDP(net)", "DDP(net, gradient_as_bucket_view=True)")),
        Invalid(_EVALUATE_SUM.format(ret="outputs = (wrapped(x) for x in batches)\n    return outputs")),
        Invalid(_EVALUATE_SUM.format(ret="return map(sum, (wrapped(x) for x in batches))")),
        Invalid(_EVALUATE_SUM.format(ret="return wrapped(batches)").replace("@torch.no_grad()\n", "")),
        # Options gathered in a dict whose every key is visible (open_clip, ultralytics).
        Invalid(_DDP_ARGS, fixed=_DDP_ARGS.replace(
            "DistributedDataParallel(model, device_ids=[device], **ddp_args)\n",
            "DistributedDataParallel(\n        model, device_ids=[device], **ddp_args, gradient_as_bucket_view=True\n"
            "    )\n")),
        # ... also when the dict is annotated (torchtitan's `fsdp_config: dict[str, Any] = {...}`).
        Invalid(_DDP_ARGS.replace("ddp_args = {}", "ddp_args: dict[str, bool] = {}"), fixed=_DDP_ARGS.replace(
            "ddp_args = {}", "ddp_args: dict[str, bool] = {}").replace(
            "DistributedDataParallel(model, device_ids=[device], **ddp_args)\n",
            "DistributedDataParallel(\n        model, device_ids=[device], **ddp_args, gradient_as_bucket_view=True\n"
            "    )\n")),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        qualified = ctx.names.qualified(node.func)
        if lightning_strategies(qualified) is not None:
            if self._module_trains:
                self._check_lightning(node, qualified)
            return
        accelerate_options = is_accelerate_ddp_kwargs(qualified)
        framework_options = accelerate_options or is_lightning_ddp_strategy(qualified)
        if not (ctx.names.is_a(node.func, DDP) or (framework_options and self._module_trains)):
            return
        if not framework_options and not ctx.distributed.may_train(node):
            return  # a wrapper only evaluated: no backward, no bucket copy to save
        if accelerate_options and any(arg.keyword is None and not arg.star for arg in node.args):
            return  # a dataclass's fields by position: which one is which is not worth guessing
        if ctx.hides_arguments(node):
            keys = star_keys(ctx, node)
            if keys is None or "gradient_as_bucket_view" in keys:
                return  # the options may set it: not known here
        if ctx.positional(node, 9) is not None:
            # Ten or more positional arguments: the tenth is gradient_as_bucket_view in the torch
            # releases before `init_sync` was inserted ahead of it, check_reduction after, so the
            # call may set it (and a keyword beside it could raise "got multiple values").
            return
        arg = ctx.keyword(node, "gradient_as_bucket_view")
        if arg is not None and ctx.sources.value(arg.value) is not False:
            return
        # Written as a name whose value the file settles (`args.bucket_view` of a `store_true`
        # switch, `BUCKET_VIEW = False`): judged by that value, fixed where it is written.
        source = ctx.sources.of_arg(arg)
        problem = "DDP copies every gradient into its all-reduce buckets and back"
        why = "so gradients are views into the buckets (less memory, one copy less per step)"
        fix = None
        withheld = self._grad_replaced()
        if withheld is not None:
            pass
        elif source is not None:
            fix = source.fix(self, "True", Applicability.UNSAFE)
        else:
            fix = self.fix(Applicability.UNSAFE, "Set `gradient_as_bucket_view=True`",
                           (node, ctx.with_keyword(node, "gradient_as_bucket_view", "True")))
        message = source.explain(problem, "True", why) if source is not None else \
            f"{problem}; set `gradient_as_bucket_view=True` {why}"
        if withheld is not None:
            message += f"; {withheld}"
        self.report(node, message, fix)

    def _check_lightning(self, call: cst.Call, qualified: str) -> None:
        """A Lightning Trainer or Fabric given `strategy="ddp"`: its DDP copies gradients too; the
        fix names the strategy with the option (Lightning's DDP optimizations guide)."""
        ctx = self.ctx
        arg = ctx.keyword(call, "strategy")
        value = ctx.literal(arg.value) if arg is not None else None
        if value not in _LIGHTNING_DDP:
            return
        module = lightning_strategies(qualified)
        local = imported_name(ctx, f"{module}.DDPStrategy")
        options = _LIGHTNING_DDP[value] + "gradient_as_bucket_view=True"
        fix = None
        withheld = self._grad_replaced()
        if withheld is None:
            # The whole call, so that one made too long is laid out one argument per line.
            edits = [(call, ctx.with_keyword(call, "strategy", f"{local or 'DDPStrategy'}({options})"))]
            if local is None:
                edits.append(ctx.insert_after_imports(f"from {module} import DDPStrategy"))
            fix = self.fix(Applicability.UNSAFE, f"Use `DDPStrategy({options})`", *edits)
        self.report(arg, f"`strategy={ctx.code(arg.value)}` wraps the model in DDP, which copies every gradient into "
                         f"its all-reduce buckets and back; use `strategy=DDPStrategy({options})` so gradients are "
                         f"views into the buckets (less memory, one copy less per step)"
                         + (f"; {withheld}" if withheld is not None else ""), fix)

    @cached_property
    def _module_trains(self) -> bool:
        """The module trains: a Trainer's `.fit(...)`, or a backward or optimizer step (Fabric's
        `fabric.backward(loss)`). litgpt starts Fabric with `strategy="ddp"` only to launch
        processes for generation."""
        ctx = self.ctx
        return bool(ctx.loops.step_calls) or any(
            isinstance(c.func, cst.Attribute) and c.func.attr.value == "fit" for c in ctx.index.nodes(cst.Call))

    def _grad_replaced(self) -> str | None:
        """Why the fix is withheld, when the module replaces a parameter's gradient or its storage
        or detaches it in place (`p.grad = ...`, `p.grad.data = ...`, `p.grad.detach_()`,
        `p.grad.requires_grad_(False)`; grads.py), which a gradient that is a view into DDP's bucket
        does not take: None when it does none of these."""
        ctx = self.ctx
        node = ctx.grads.replaced
        if node is None:
            return None
        if isinstance(node, cst.Call):
            return f"not fixed: `{ctx.code(node).strip()}` fails on a gradient that is a view (\"Can't detach views in-place\")"
        target = ctx.code(node).strip()
        if node.attr.value == "data":
            return (f"not fixed: `{target} = ...` swaps a gradient's storage out of DDP's bucket, which changes the "
                    f"averaged gradients (write into it in place instead: `{ctx.code(node.value).strip()}.copy_(...)`)")
        return f"not fixed: `{target} = ...` replaces a gradient, which then is no longer a view into DDP's bucket"


# Lightning's strategy names that mean plain DDP, with the DDPStrategy options they stand for.
_LIGHTNING_DDP = {"ddp": "", "ddp_find_unused_parameters_true": "find_unused_parameters=True, "}
