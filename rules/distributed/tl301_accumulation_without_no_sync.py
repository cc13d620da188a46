"""TL301 accumulation-without-no-sync: DDP/FSDP, accelerate or Fabric model trained with gradient
accumulation that all-reduces on every micro-batch."""

from __future__ import annotations

import libcst as cst

from trainlint.analysis.distributed import (
    ACCELERATE,
    DDP,
    FABRIC,
    FSDP,
    FSDP2,
    Accumulation,
    LateNoSync,
    Wrapped,
    one_line,
)
from trainlint.analysis.imports import imported_name
from trainlint.analysis.names import bound_names, dotted
from trainlint.analysis.tree import binding_targets, walk
from trainlint.diagnostics import Applicability
from trainlint import layout
from trainlint.rule import NO_FIX, Invalid, Rule, Valid


_SHORT = {DDP: "DDP", FSDP: "FSDP", FSDP2: "FSDP2's fully_shard", ACCELERATE: "prepared by accelerate: DDP when launched on several processes",
          FABRIC: "set up by Fabric: DDP or FSDP when launched on several processes"}

# The cases share a DDP script; {loop} is its training loop.
_HEAD = (
    "import torch\n"
    "from torch.nn.parallel import DistributedDataParallel as DDP\n"
    "model = DDP(model, gradient_as_bucket_view=True)\n"
)
_FLAT = (
    "for step, (x, y) in enumerate(loader):\n"
    "    loss = loss_fn(model(x), y) / accum\n"
    "    loss.backward()\n"
    "    if (step + 1) % accum == 0:\n"
    "        opt.step()\n"
    "        opt.zero_grad()\n"
)
_FLAT_FIXED = (
    "for step, (x, y) in enumerate(loader):\n"
    "    # Sync gradients only on the micro-batch before the optimizer step.\n"
    "    with contextlib.nullcontext() if (step + 1) % accum == 0 else model.no_sync():\n"
    "        loss = loss_fn(model(x), y) / accum\n"
    "        loss.backward()\n"
    "    if (step + 1) % accum == 0:\n"
    "        opt.step()\n"
    "        opt.zero_grad()\n"
)
_NESTED = (
    "def train(model, batches, opt, accum):\n"
    "    for step in range(100):\n"
    "        for micro in range(accum):\n"
    "            x, y = next(batches)\n"
    "            out = model(x)\n"
    "            loss = loss_fn(out, y)\n"
    "            loss.backward()\n"
    "        opt.step()\n"
    "        opt.zero_grad()\n"
    "train(DDP(net), batches, opt, 8)\n"
)
_NESTED_FIXED = (
    "def train(model, batches, opt, accum):\n"
    "    for step in range(100):\n"
    "        for micro in range(accum):\n"
    "            x, y = next(batches)\n"
    "            # Sync gradients only on the micro-batch before the optimizer step.\n"
    "            with contextlib.nullcontext() if micro == accum - 1 else model.no_sync():\n"
    "                out = model(x)\n"
    "                loss = loss_fn(out, y)\n"
    "                loss.backward()\n"
    "        opt.step()\n"
    "        opt.zero_grad()\n"
    "train(DDP(net), batches, opt, 8)\n"
)
_COMMENT = "# Sync gradients only on the micro-batch before the optimizer step."
_FORWARD_COMMENT = "# The forward too: DDP decides in it whether the backward all-reduces."
_SHORT_COMMENT = "# Sync gradients only on the micro-batch that steps."  # where the other is too long
_TRAINER = (
    "import torch\n"
    "from torch.nn.parallel import DistributedDataParallel as DDP\n"
    "class Trainer:\n"
    "    def __init__(self, net, accumulate):\n"
    "        self.model = DDP(net, gradient_as_bucket_view=True)\n"
    "        self.accumulate = accumulate\n"
    "    def optimizer_step(self):\n"
    "        self.scaler.step(self.optimizer)\n"
    "        self.scaler.update()\n"
    "        self.optimizer.zero_grad()\n"
    "    def train(self, loader):\n"
    "        last_opt_step = -1\n"
    "        for ni, batch in enumerate(loader):\n"
    "            loss = self.model(batch).sum()\n"
    "            self.scaler.scale(loss).backward()\n"
    "            if ni - last_opt_step >= self.accumulate:\n"
    "                self.optimizer_step()\n"
    "                last_opt_step = ni\n"
)
_TRAINER_FIXED = "import contextlib\n\n" + _TRAINER.replace(
    "            loss = self.model(batch).sum()\n            self.scaler.scale(loss).backward()\n",
    "            " + _COMMENT + "\n"
    "            with (\n"
    "                contextlib.nullcontext()\n"
    "                if ni - last_opt_step >= self.accumulate\n"
    "                else self.model.no_sync()\n"
    "            ):\n"
    "                loss = self.model(batch).sum()\n"
    "                self.scaler.scale(loss).backward()\n")
_FSDP2 = ("import torch\nfrom torch.distributed.fsdp import fully_shard\nfully_shard(model)\n"
          "for step, (x, y) in enumerate(loader):\n{sync}    loss = loss_fn(model(x), y) / accum\n    loss.backward()\n"
          "    if (step + 1) % accum == 0:\n        opt.step()\n")
_STORED = (
    "import torch\n"
    "from torch.nn.parallel import DistributedDataParallel as DDP\n"
    "class Trainer:\n"
    "    def __init__(self, net, accum):\n"
    "        {init}\n"
    "    def fit(self, data):\n"
    "        for i, (x, y) in enumerate(data):\n"
    "            loss = self.net(x).sum() / self.accum\n"
    "            loss.backward()\n"
    "            if (i + 1) % self.accum == 0:\n"
    "                self.opt.step()\n"
    "{build}\n"
)
_STORED_FIXED = "import contextlib\n\n" + _STORED.replace(
    "            loss = self.net(x).sum() / self.accum\n            loss.backward()\n",
    "            " + _COMMENT + "\n"
    "            with (\n"
    "                contextlib.nullcontext()\n"
    "                if (i + 1) % self.accum == 0\n"
    "                else self.net.no_sync()\n"
    "            ):\n"
    "                loss = self.net(x).sum() / self.accum\n"
    "                loss.backward()\n")
# accelerate and Fabric: the model comes back wrapped from `prepare`/`setup`.
_ACCELERATE = (
    "from accelerate import Accelerator\n"
    "accelerator = Accelerator()\n"
    "model, opt, loader = accelerator.prepare(model, opt, loader)\n"
)
_FABRIC = (
    "import lightning as L\n"
    "fabric = L.Fabric(accelerator='cuda', devices=2)\n"
    "model, opt = fabric.setup(model, opt)\n"
)

# A helper of the module that wraps the model only when asked to, and the fix it gets.
_HELPER_HEAD = "import torch\nfrom contextlib import nullcontext\ndef wrap(m, use_ddp):\n{wrap}model = wrap(net, ddp)\n"
_FLAT_MAYBE_FIXED = (
    "for step, (x, y) in enumerate(loader):\n"
    "    # Sync gradients only on the micro-batch before the optimizer step.\n"
    "    with (\n        nullcontext()\n        if (step + 1) % accum == 0\n"
    "        else getattr(model, \"no_sync\", nullcontext)()\n    ):\n"
    "        loss = loss_fn(model(x), y) / accum\n        loss.backward()\n"
    "    if (step + 1) % accum == 0:\n        opt.step()\n        opt.zero_grad()\n"
)

# A second training loop that does skip the sync (its own `accumulate`) leaves this one's as it is.
_ACCUMULATE_LOOP = (
    "for x, y in loader:\n"
    "    with accelerator.accumulate(model):\n"
    "        accelerator.backward(loss_fn(model(x), y))\n"
    "        opt.step()\n"
    "        opt.zero_grad()\n"
)
_FSDP = "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\nmodel = FSDP(model)\n"
# no_sync() around the backward alone, the forward before it (a user's script: one all-reduce per
# micro-batch all the same).
_LATE = (
    "for step, (x, y) in enumerate(loader):\n"
    "    out = model(x)\n"
    "    loss = loss_fn(out, y) / accum\n"
    "    if (step + 1) % accum != 0:\n"
    "        with model.no_sync():\n"
    "            loss.backward()\n"
    "    else:\n"
    "        loss.backward()\n"
    "        opt.step()\n"
    "        opt.zero_grad()\n"
)
_LATE_CTX = "    with model.no_sync() if (step + 1) % accum else contextlib.nullcontext():\n"
_LATE_FLAT = _FLAT.replace("    loss.backward()\n", _LATE_CTX + "        loss.backward()\n")
# An optimizer named as no optimizer is (`adam`, `sgd`), known by its construction.
_NAMED = (
    "import torch\n"
    "from torch.nn.parallel import DistributedDataParallel as DDP\n"
    "def train(net, data, accum=4):\n"
    "    model = DDP(net, gradient_as_bucket_view=True)\n"
    "    adam = torch.optim.AdamW(model.parameters(), lr=1e-4)\n"
    "    for i, (x, y) in enumerate(data):\n"
    "        loss = (model(x) - y).pow(2).mean() / accum\n"
    "        loss.backward()\n"
    "        if (i + 1) % accum == 0:\n"
    "            adam.step(); adam.zero_grad()\n"
)
_NAMED_FIXED = "import contextlib\n\n" + _NAMED.replace(
    "        loss = (model(x) - y).pow(2).mean() / accum\n        loss.backward()\n",
    "        " + "# Sync gradients only on the micro-batch before the optimizer step.\n"
    "        with contextlib.nullcontext() if (i + 1) % accum == 0 else model.no_sync():\n"
    "            loss = (model(x) - y).pow(2).mean() / accum\n"
    "            loss.backward()\n")
_TEACHER = "teacher = FSDP(teacher_net)\nwith teacher.no_sync():\n    teacher(x).sum().backward()\n"


class AccumulationWithoutNoSync(Rule):
    code = "TL301"
    name = "accumulation-without-no-sync"
    summary = ("DDP/FSDP, accelerate or Fabric model trained with gradient accumulation that all-reduces on every "
               "micro-batch")
    source = "§4.2"
    fix_applicability = "unsafe"
    triggers = ("DistributedDataParallel", "FullyShardedDataParallel", "fully_shard", "Accelerator", "accelerator",
                "Fabric", "fabric")
    needs_hot_loop = True
    docs = """
## What it does
Flags a model wrapped in `DistributedDataParallel` or `FullyShardedDataParallel` (any import
alias, a module-local helper that returns one, or a parameter it is passed to; also one wrapped
only on some paths, under `if ddp:` or in one branch of `DDP(net) if ddp else net`), or sharded
in place by FSDP2's `fully_shard(model)` (whose switch is `model.set_requires_gradient_sync(...)`,
set by the fix before each micro-batch's forward), or prepared by
accelerate (`accelerator.prepare`) or Lightning Fabric (`fabric.setup`), which wrap it in DDP
when launched on several processes, that is trained with gradient accumulation: backward runs
on every micro-batch (itself, or in a module-local function the loop calls, such as
`train_micro_step(model, batch)`) while the optimizer steps (itself, or in a module-local method
such as `self.optimizer_step()`) only under a condition (`if (step + 1) % accum == 0:`,
`if is_last_micro_batch:`, `if ni - last_step >= accumulate:`, the `else:` of
`if (step + 1) % accum != 0:`) or once after an inner
micro-batch loop. A loop that already controls synchronisation (`model.no_sync()`,
`model.require_backward_grad_sync = ...`, `model.set_requires_gradient_sync(...)`, `accelerator.accumulate(model)`,
`fabric.no_backward_sync(model)`, or a project helper named after them) is not flagged: the
control must be about that model (an alias or a parameter it is passed to counts, and so does one
that names no model, such as `self.maybe_no_sync()`) and sit in that loop, in a function the loop
calls, or elsewhere in the loop's function (a context manager picked before the loop). One in
another training loop, or about another wrapped model, does not count.

Also flags a DDP model's `no_sync()` that holds the backward but not the forward, which runs
before the `with` (`out = model(x)`, then `with model.no_sync(): loss.backward()`, also with the
`with` in an `if` branch, or a context chosen from `no_sync` through a name): the backward under
it still all-reduces. FSDP reads its `no_sync()` flag in the backward, and accelerate or Fabric
may wrap the model in FSDP: their `no_sync()` around the backward alone is not flagged.

## Why is this bad?
DDP all-reduces the gradients during every backward. With accumulation only the last
micro-batch before the optimizer step needs it: the others pay a full gradient all-reduce each
for nothing. Measured with 2 processes over gloo, accumulation 8 and a 5M-parameter model, skipping
it on the other micro-batches was about 1.6x faster.

## Example
```python
model = DDP(model)
for step, (x, y) in enumerate(loader):
    loss = loss_fn(model(x), y) / accum
    loss.backward()
    if (step + 1) % accum == 0:
        opt.step()
        opt.zero_grad()
```

## Use instead
```python
for step, (x, y) in enumerate(loader):
    with contextlib.nullcontext() if (step + 1) % accum == 0 else model.no_sync():
        loss = loss_fn(model(x), y) / accum
        loss.backward()
    if (step + 1) % accum == 0:
        opt.step()
        opt.zero_grad()
```
`no_sync()` must hold the forward as well as the backward: DDP decides in the forward whether
the next backward all-reduces, so wrapping the backward alone saves nothing (measured with gloo
and a comm hook: one all-reduce per micro-batch all the same; none with the forward inside). A
model from accelerate gets `accelerator.no_sync(model)`, one from Fabric
`fabric.no_backward_sync(model)`: both do nothing when the run has a single process. A model
wrapped only on some paths (under `if ddp:`, in one branch of a conditional expression, or by a
helper of the module that returns the plain model on another path) gets
`getattr(model, "no_sync", contextlib.nullcontext)()`: the plain module has no `no_sync`.

## Fix safety
Unsafe. The fix evaluates the step condition before the forward (it is not applied when the
statements in between change what the condition reads), and it relies on a synchronised
micro-batch preceding every optimizer step; gradients accumulated under `no_sync()` are
all-reduced then, so the result equals the original up to floating-point summation order. Code
that steps the optimizer elsewhere (after the loop, for a ragged last group) would step on
unsynchronised gradients: no fix is offered there. With FSDP, `no_sync()` keeps unsharded
gradients until the synchronising micro-batch, which costs memory.

For a `no_sync()` around the backward alone, the fix moves the statements from the forward up to
the `with` into it, when they are in the `with`'s block, run no other backward or step, and bind
nothing the context expression reads (it is then evaluated before them; one that calls anything
but `no_sync`, `nullcontext`, `getattr` or `len` gets no fix). When the forward runs before an
`if` whose branches both need it, no fix is offered: the forward has to move into both. Either
way DDP also stops broadcasting buffers (BatchNorm statistics) before forwards that follow an
unsynchronised one.
"""
    valid = [
        Valid(_FSDP2.format(sync="    model.set_requires_gradient_sync((step + 1) % accum == 0)\n")),
        # Gradients cleared on every iteration, the step skipped on some (a warm-up freeze): no
        # micro-batches, nothing accumulates.
        Valid(_HEAD + "for step, (x, y) in enumerate(loader):\n    opt.zero_grad()\n    loss_fn(model(x), y).backward()\n"
                      "    if step >= freeze_steps:\n        opt.step()\n"),
        # Already skips the sync: no_sync around forward and backward.
        Valid(_HEAD + _FLAT.replace(
            "    loss = loss_fn(model(x), y) / accum\n    loss.backward()\n",
            "    with model.no_sync() if (step + 1) % accum else contextlib.nullcontext():\n"
            "        loss = loss_fn(model(x), y) / accum\n        loss.backward()\n")),
        # nanoGPT's way: the flag DDP reads in the forward.
        Valid(_HEAD + _FLAT.replace("    loss = loss_fn", "    model.require_backward_grad_sync = (step + 1) % accum == 0\n"
                                    "    loss = loss_fn")),
        # accelerate handles the sync inside `accumulate`.
        Valid("from accelerate import Accelerator\nfrom torch.nn.parallel import DistributedDataParallel\n"
              "for batch in loader:\n    with accelerator.accumulate(model):\n        loss = model(batch)\n"
              "        accelerator.backward(loss)\n        if accelerator.sync_gradients:\n            opt.step()\n"),
        # Fabric.
        Valid(_HEAD + "for i, batch in enumerate(loader):\n    is_accumulating = (i + 1) % accum != 0\n"
              "    with fabric.no_backward_sync(model, enabled=is_accumulating):\n        loss = model(batch)\n"
              "        fabric.backward(loss)\n    if not is_accumulating:\n        opt.step()\n"),
        # No accumulation: the optimizer steps every iteration.
        Valid(_HEAD + "for x, y in loader:\n    loss = loss_fn(model(x), y)\n    loss.backward()\n    opt.step()\n"),
        # Accumulation, but no DDP/FSDP in this module.
        Valid("import torch\n" + _FLAT),
        # accelerate prepared only the loader and optimizer: the model is not wrapped.
        Valid("from accelerate import Accelerator\naccelerator = Accelerator()\n"
              "opt, loader = accelerator.prepare(opt, loader)\n" + _FLAT),
        # A prepared model whose optimizer steps on every batch.
        Valid(_ACCELERATE + "for x, y in loader:\n    accelerator.backward(loss_fn(model(x), y))\n    opt.step()\n"),
        # The flag set by a helper the loop calls (the model passed under another name).
        Valid(_HEAD + "def set_sync(m, on):\n    m.require_backward_grad_sync = on\n" + _FLAT.replace(
            "    loss = loss_fn", "    set_sync(model, (step + 1) % accum == 0)\n    loss = loss_fn")),
        # The context manager picked before the loop, in the loop's function, through a variable.
        Valid(_HEAD + "def train(model):\n    skip_sync = model.no_sync\n" + "".join(
            "    " + line + "\n" for line in _FLAT.replace(
                "    loss = loss_fn(model(x), y) / accum\n    loss.backward()\n",
                "    ctx = skip_sync if (step + 1) % accum else contextlib.nullcontext\n    with ctx():\n"
                "        loss = loss_fn(model(x), y) / accum\n        loss.backward()\n").splitlines())),
        # A method of the trainer returns `self.model.no_sync()` or a null context.
        Valid(_TRAINER.replace(
            "    def train(self, loader):\n",
            "    def sync_context(self, sync):\n"
            "        return contextlib.nullcontext() if sync else self.model.no_sync()\n"
            "    def train(self, loader):\n").replace(
            "            loss = self.model(batch).sum()\n            self.scaler.scale(loss).backward()\n",
            "            with self.sync_context(ni - last_opt_step >= self.accumulate):\n"
            "                loss = self.model(batch).sum()\n                self.scaler.scale(loss).backward()\n")),
        # The context chosen before the `with`, the forward inside it.
        Valid(_HEAD + _FLAT.replace(
            "    loss = loss_fn(model(x), y) / accum\n    loss.backward()\n",
            "    ctx = model.no_sync() if (step + 1) % accum else contextlib.nullcontext()\n    with ctx:\n"
            "        loss = loss_fn(model(x), y) / accum\n        loss.backward()\n")),
        # Forward and backward each under a no_sync() of their own.
        Valid(_HEAD + _LATE.replace("    out = model(x)\n", "    with model.no_sync():\n        out = model(x)\n")),
        # FSDP reads its flag in the backward: no_sync() around it alone skips the reduce-scatter.
        Valid(_FSDP + _LATE),
        # `.step()` of what is no optimizer: a scheduler of torch.optim, an object of another kind.
        Valid(_HEAD + "sched = torch.optim.lr_scheduler.StepLR(opt, 10)\n"
              + _FLAT.replace("        opt.step()\n        opt.zero_grad()\n", "        sched.step()\n")),
        Valid(_HEAD + "sgd = NoiseSchedule(0.1)\n"
              + _FLAT.replace("        opt.step()\n        opt.zero_grad()\n", "        sgd.step()\n")),
    ]
    invalid = [
        Invalid(_HEAD + _FLAT, fixed="import contextlib\n\n" + _HEAD + _FLAT_FIXED,
                message="`(step + 1) % accum == 0`"),
        # The step in the `else` of the skip test, which passes or continues.
        Invalid(_HEAD + _FLAT.replace("    if (step + 1) % accum == 0:\n",
                                      "    if (step + 1) % accum != 0:\n        pass\n    else:\n"),
                fixed="import contextlib\n\n" + _HEAD + _FLAT_FIXED.replace(
                    "    if (step + 1) % accum == 0:\n", "    if (step + 1) % accum != 0:\n        pass\n    else:\n"),
                message="only when `(step + 1) % accum == 0`"),
        Invalid(_HEAD + _FLAT.replace("    if (step + 1) % accum == 0:\n",
                                      "    if (step + 1) % accum:\n        continue\n    else:\n"),
                fixed="import contextlib\n\n" + _HEAD + _FLAT_FIXED.replace(
                    "    if (step + 1) % accum == 0:\n", "    if (step + 1) % accum:\n        continue\n    else:\n"
                ).replace("contextlib.nullcontext() if (step + 1) % accum == 0 else model.no_sync()",
                          "model.no_sync() if (step + 1) % accum else contextlib.nullcontext()")),
        # The backward in a per-micro-batch helper the loop calls: the call goes under no_sync.
        Invalid(_HEAD + "def micro_step(model, x, y):\n    loss = loss_fn(model(x), y) / accum\n    loss.backward()\n"
                + _FLAT.replace("    loss = loss_fn(model(x), y) / accum\n    loss.backward()\n", "    micro_step(model, x, y)\n"),
                fixed="import contextlib\n\n" + _HEAD
                + "def micro_step(model, x, y):\n    loss = loss_fn(model(x), y) / accum\n    loss.backward()\n"
                + _FLAT_FIXED.replace("        loss = loss_fn(model(x), y) / accum\n        loss.backward()\n",
                                      "        micro_step(model, x, y)\n"),
                message="`micro_step(model, x, y)` (which runs `loss.backward()`)"),
        # A helper in the same module returns the wrapped model; `nullcontext` imported by name.
        Invalid("import torch\nfrom contextlib import nullcontext\n"
                "def wrap(m):\n    return torch.nn.parallel.DistributedDataParallel(m, gradient_as_bucket_view=True)\n"
                "model = wrap(net)\n" + _FLAT,
                fixed="import torch\nfrom contextlib import nullcontext\n"
                "def wrap(m):\n    return torch.nn.parallel.DistributedDataParallel(m, gradient_as_bucket_view=True)\n"
                "model = wrap(net)\n" + _FLAT_FIXED.replace("contextlib.nullcontext()", "nullcontext()")),
        # ... one that returns the plain model on another path (`if use_ddp: return DDP(m)`,
        # or wraps under a condition): maybe wrapped, as under `if ddp:`.
        *(Invalid(_HELPER_HEAD.format(wrap=wrap) + _FLAT,
                  fixed=_HELPER_HEAD.format(wrap=wrap) + _FLAT_MAYBE_FIXED)
          for wrap in ("    if use_ddp:\n        return torch.nn.parallel.DistributedDataParallel(m)\n    return m\n",
                       "    if use_ddp:\n        m = torch.nn.parallel.DistributedDataParallel(m)\n    return m\n")),
        # Nested micro-batch loop; the wrapped model is passed to the training function.
        Invalid(_HEAD.replace("model = DDP(model, gradient_as_bucket_view=True)\n", "import contextlib\n") + _NESTED,
                fixed=_HEAD.replace("model = DDP(model, gradient_as_bucket_view=True)\n", "import contextlib\n")
                + _NESTED_FIXED),
        # `continue` on accumulation steps; DDP wrapped only when distributed.
        Invalid("import contextlib\nimport torch.nn as nn\nif world_size > 1:\n    model = nn.parallel.DistributedDataParallel(model)\n"
                "for i, batch in enumerate(loader):\n    loss = model(**batch).loss\n    loss.backward()\n"
                "    if (i + 1) % args.gradient_accumulation_steps != 0:\n        continue\n    optimizer.step()\n",
                fixed="import contextlib\nimport torch.nn as nn\nif world_size > 1:\n"
                "    model = nn.parallel.DistributedDataParallel(model)\n"
                "for i, batch in enumerate(loader):\n    " + _COMMENT + "\n"
                "    with (\n        getattr(model, \"no_sync\", contextlib.nullcontext)()\n"
                "        if (i + 1) % args.gradient_accumulation_steps != 0\n        else contextlib.nullcontext()\n    ):\n"
                "        loss = model(**batch).loss\n        loss.backward()\n"
                "    if (i + 1) % args.gradient_accumulation_steps != 0:\n        continue\n    optimizer.step()\n"),
        # Wrapped in one branch of a conditional expression: maybe wrapped, as under `if ddp:`.
        Invalid(_HEAD.replace("model = DDP(model, gradient_as_bucket_view=True)\n",
                              "model = DDP(net) if dist.is_initialized() else net\n") + _FLAT,
                fixed="import contextlib\n\n" + _HEAD.replace("model = DDP(model, gradient_as_bucket_view=True)\n",
                                                             "model = DDP(net) if dist.is_initialized() else net\n")
                + _FLAT_FIXED.replace("model.no_sync():\n", 'getattr(model, "no_sync", contextlib.nullcontext)():\n')
                .replace("    with contextlib.nullcontext() if (step + 1) % accum == 0 else getattr(",
                         "    with (\n        contextlib.nullcontext()\n        if (step + 1) % accum == 0\n"
                         "        else getattr(").replace('nullcontext)():\n', 'nullcontext)()\n    ):\n'),
                message="gradients of `model` (DDP)"),
        # ... the nested micro-batch loop, the plain model in the first branch.
        Invalid(_HEAD.replace("model = DDP(model, gradient_as_bucket_view=True)\n",
                              "import contextlib\nmodel = net if world_size == 1 else DDP(net)\n")
                + _NESTED.replace("train(DDP(net), batches, opt, 8)", "train(model, batches, opt, 8)"),
                fixed=_HEAD.replace("model = DDP(model, gradient_as_bucket_view=True)\n",
                                    "import contextlib\nmodel = net if world_size == 1 else DDP(net)\n")
                + _NESTED_FIXED.replace("train(DDP(net), batches, opt, 8)", "train(model, batches, opt, 8)")
                .replace("            with contextlib.nullcontext() if micro == accum - 1 else model.no_sync():\n",
                         "            with (\n                contextlib.nullcontext()\n                if micro == accum - 1\n"
                         '                else getattr(model, "no_sync", contextlib.nullcontext)()\n            ):\n')),
        # Wrapped in both branches: always wrapped, so `model.no_sync()` as for a plain wrap.
        Invalid(_HEAD.replace("model = DDP(model, gradient_as_bucket_view=True)\n",
                              "model = DDP(net, static_graph=True) if static else DDP(net)\n") + _FLAT,
                fixed="import contextlib\n\n" + _HEAD.replace("model = DDP(model, gradient_as_bucket_view=True)\n",
                                                             "model = DDP(net, static_graph=True) if static else DDP(net)\n")
                + _FLAT_FIXED),
        # FSDP, with a flag guard and a counter the fix must not read early: reported, not fixed.
        Invalid("from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\nmodel = FSDP(model)\n"
                "micro = 0\nfor batch in loader:\n    loss = model(batch)\n    loss.backward()\n    micro += 1\n"
                "    if micro % accum == 0:\n        opt.step()\n", fixed=NO_FIX, message="FSDP"),
        # accelerate: the loop's own `accelerator` spells the context manager.
        Invalid(_ACCELERATE + _FLAT.replace("loss.backward()", "accelerator.backward(loss)"),
                fixed="import contextlib\n\n" + _ACCELERATE
                + _FLAT_FIXED.replace("loss.backward()", "accelerator.backward(loss)").replace(
                    "    with contextlib.nullcontext() if (step + 1) % accum == 0 else model.no_sync():\n",
                    "    with (\n        contextlib.nullcontext()\n        if (step + 1) % accum == 0\n"
                    "        else accelerator.no_sync(model)\n    ):\n"),
                message="`accelerator.no_sync(model)`"),
        # Fabric, nested micro-batch loop.
        Invalid(_FABRIC + _NESTED.replace("loss.backward()", "fabric.backward(loss)").replace(
                    "train(DDP(net), batches, opt, 8)", "train(model, batches, opt, 8)"),
                fixed="import contextlib\n\n" + _FABRIC
                + _NESTED_FIXED.replace("loss.backward()", "fabric.backward(loss)").replace(
                    "with contextlib.nullcontext() if micro == accum - 1 else model.no_sync():\n",
                    "with (\n                contextlib.nullcontext()\n                if micro == accum - 1\n"
                    "                else fabric.no_backward_sync(model)\n            ):\n").replace(
                    "train(DDP(net), batches, opt, 8)", "train(model, batches, opt, 8)"),
                message="set up by Fabric"),
        # The training function sees the prepared model but not the accelerator: reported, not fixed.
        Invalid("from accelerate import Accelerator\ndef train(model, opt, loader):\n"
                + "".join("    " + line + "\n" for line in _FLAT.splitlines())
                + "def main():\n" + "".join("    " + line + "\n" for line in _ACCELERATE.splitlines()[1:])
                + "    train(model, opt, loader)\n", fixed=NO_FIX, message="`accelerator.no_sync(model)`"),
        # ultralytics' shape: the step is a method of the trainer, the window a comparison with the
        # accumulation count (an `accumulate` attribute that is a number, not accelerate's).
        Invalid(_TRAINER, fixed=_TRAINER_FIXED, message="`ni - last_opt_step >= self.accumulate`"),
        # A call between the forward and the step's test that may change what the test reads: no
        # fix (the test, moved before the forward, would see the counter before the call, and the
        # sync would fall one micro-batch early: the ranks' weights drifted apart).
        Invalid(_STORED.format(init="self.net, self.accum = net, accum", build="Trainer(DDP(m), 4)").replace(
            "            loss.backward()\n            if (i + 1) % self.accum == 0:",
            "            loss.backward()\n            self.bump()\n            if self.micro % self.accum == 0:").replace(
            "    def fit(", "    def bump(self):\n        self.micro += 1\n    def fit("), fixed=NO_FIX,
            message="not fixed: `self.bump()` may change what `self.micro % self.accum == 0` reads"),
        Invalid(_HEAD + "def train(model, loader, counter):\n    for x, y in loader:\n        loss = loss_fn(model(x), y)\n"
                "        loss.backward()\n        counter.tick()\n        if counter.n % accum == 0:\n            opt.step()\n"
                "train(DDP(net), loader, Counter())\n", fixed=NO_FIX),
        Invalid(_HEAD + "step = 0\ndef bump():\n    global step\n    step += 1\n"
                "def train(model, loader):\n    for x, y in loader:\n        loss = loss_fn(model(x), y)\n"
                "        loss.backward()\n        bump()\n        if step % accum == 0:\n            opt.step()\n"
                "train(DDP(net), loader)\n", fixed=NO_FIX),
        # The optimizer known by what it is assigned, whatever its name: torch.optim's, imported
        # from it, another package's `optim` (bitsandbytes), a class named as one (transformers'
        # Adafactor), kept on the object.
        Invalid(_NAMED, fixed=_NAMED_FIXED),
        Invalid(_HEAD.replace("import torch\n", "import torch\nfrom torch.optim import SGD\n")
                + "sgd = SGD(model.parameters(), lr=0.1)\n" + _FLAT.replace("opt.", "sgd."),
                fixed="import contextlib\n\n" + _HEAD.replace("import torch\n", "import torch\nfrom torch.optim import SGD\n")
                + "sgd = SGD(model.parameters(), lr=0.1)\n" + _FLAT_FIXED.replace("opt.", "sgd.")),
        Invalid(_NAMED.replace("import torch\n", "import torch\nimport bitsandbytes as bnb\n").replace(
            "adam = torch.optim.AdamW(", "opt2 = bnb.optim.Adam8bit(").replace("adam.", "opt2.")),
        Invalid(_NAMED.replace("import torch\n", "import torch\nfrom transformers import Adafactor\n").replace(
            "adam = torch.optim.AdamW(", "fac = Adafactor(").replace("adam.", "fac.")),
        Invalid(_STORED.format(init="self.net, self.accum = net, accum\n        self.adam = torch.optim.Adam(net.parameters())",
                               build="Trainer(DDP(m), 4)").replace("self.opt.step()", "self.adam.step()"),
                message="gradients of `self.net` (DDP)"),
        Invalid(_FSDP2.format(sync="").replace("fully_shard(model)\n", "fully_shard(model)\nsgd = torch.optim.SGD(model.parameters())\n")
                .replace("opt.step()", "sgd.step()")),
        # FSDP2 (`fully_shard(model)`, in place): no `no_sync()`; the fix sets its switch before the
        # forward, true on the micro-batch that steps.
        Invalid(_FSDP2.format(sync=""), fixed=_FSDP2.format(
            sync="    # Reduce-scatter gradients only on the micro-batch before the optimizer step.\n"
                 "    model.set_requires_gradient_sync((step + 1) % accum == 0)\n"),
                message="call `model.set_requires_gradient_sync(False)` before the other micro-batches' forward"),
        # ... also by a base class's __init__ the class inherits.
        Invalid(_STORED.format(init="self.net, self.accum = net, accum", build="Trainer(DDP(m), 4)").replace(
            "class Trainer:\n", "class Base:\n").replace("    def fit(", "class Trainer(Base):\n    def fit("),
                message="gradients of `self.net` (DDP)"),
        # A counter bumped between the backward and the step's test: named in the reason.
        Invalid(_HEAD + "n = 0\nfor x, y in loader:\n    loss = loss_fn(model(x), y)\n    loss.backward()\n"
                "    n += 1\n    if n % accum == 0:\n        opt.step()\n", fixed=NO_FIX,
                message="not fixed: `n += 1` changes what `n % accum == 0` reads"),
        # Wrapped outside and handed to the constructor, which stores it: `self.net` in its methods
        # (once written as the outer `model`, a NameError in the method).
        Invalid(_STORED.format(init="self.net, self.accum = net, accum", build="Trainer(DDP(m), 4)"),
                fixed=_STORED_FIXED.format(init="self.net, self.accum = net, accum", build="Trainer(DDP(m), 4)"),
                message="gradients of `self.net` (DDP)"),
        Invalid(_STORED.format(init="self.net = net\n        self.accum = accum",
                               build="model = DDP(m)\nTrainer(accum=4, net=model)"),
                fixed=_STORED_FIXED.format(init="self.net = net\n        self.accum = accum",
                                           build="model = DDP(m)\nTrainer(accum=4, net=model)")),
        # A step after the loop for the ragged last group: unsynchronised gradients there, so no fix.
        Invalid(_HEAD + "def train():\n" + "".join("    " + line + "\n" for line in _FLAT.splitlines())
                + "    opt.step()\n", fixed=NO_FIX),
        # Another loop's `accelerator.accumulate(model)` does not skip the sync in this one (no fix:
        # that loop's optimizer step is outside this accumulation, in the same scope).
        Invalid(_ACCELERATE + _FLAT.replace("loss.backward()", "accelerator.backward(loss)") + _ACCUMULATE_LOOP,
                fixed=NO_FIX,
                message="`accelerator.no_sync(model)`"),
        # Nor does `no_sync()` of another wrapped model.
        Invalid(_FSDP + _FLAT + _TEACHER, fixed="import contextlib\n\n" + _FSDP + _FLAT_FIXED + _TEACHER,
                message="gradients of `model` (FSDP)"),
        # no_sync() around the backward alone: the forward has to move into both branches, no fix.
        Invalid(_HEAD + _LATE, fixed=NO_FIX, message="the forward under `model.no_sync()` too"),
        # ... in the forward's block: the forward moves into the `with`.
        Invalid("import contextlib\n" + _HEAD + _LATE_FLAT, fixed="import contextlib\n" + _HEAD + _LATE_FLAT.replace(
            "    loss = loss_fn(model(x), y) / accum\n" + _LATE_CTX,
            _LATE_CTX + "        " + _FORWARD_COMMENT + "\n        loss = loss_fn(model(x), y) / accum\n"),
                message="`with model.no_sync() if (step + 1) % accum else contextlib.nullcontext():` holds only"),
        # ... a context chosen through a name. No fix where the context would be entered before what
        # it reads: `ctx`, assigned after the forward; a call, which might answer differently.
        Invalid(_HEAD + _LATE_FLAT.replace(_LATE_CTX, "    ctx = model.no_sync() if (step + 1) % accum else nullcontext()\n"
                                           "    with ctx:\n"), fixed=NO_FIX, message="`with ctx:`"),
        Invalid(_HEAD + _LATE_FLAT.replace("(step + 1) % accum else", "accumulating(step) else"), fixed=NO_FIX),
        # `==` compares the flag and sets nothing.
        Invalid(_HEAD + _FLAT.replace(
            "    loss = loss_fn", "    model.require_backward_grad_sync == ((step + 1) % accum == 0)\n    loss = loss_fn"),
                fixed="import contextlib\n\n" + _HEAD + _FLAT_FIXED.replace(
                    "        loss = loss_fn",
                    "        model.require_backward_grad_sync == ((step + 1) % accum == 0)\n        loss = loss_fn"),
                message="`(step + 1) % accum == 0`"),
        # A `continue` guard: the message says when the step runs, not `not (... != 0)`; two models
        # of different wrappers are each named with their own.
        Invalid("from torch.nn.parallel import DistributedDataParallel as DDP\nfrom torch.distributed.fsdp import "
                "fully_shard\nmodel = DDP(net)\nm2 = fully_shard(net2)\nfor step, b in enumerate(loader):\n"
                "    loss = model(b).mean() + m2(b).mean()\n    loss.backward()\n    if (step + 1) % accum != 0:\n"
                "        continue\n    opt.step()\n    opt.zero_grad()\n", fixed=NO_FIX,
                message="`model` (DDP), `m2` (FSDP2's fully_shard) on every micro-batch, but the optimizer steps only "
                        "when `(step + 1) % accum == 0`"),
    ]

    def visit_Module(self, node: cst.Module) -> None:
        dist = self.ctx.distributed
        if not dist.wrapped:
            return
        reported = set()
        for acc in dist.accumulations():
            if acc.loop in reported:
                continue  # one finding per loop (`if fp16: scaler.scale(loss).backward() else: loss.backward()`)
            reported.add(acc.loop)
            used = dist.wrapped_in(acc.loop)
            if not used or dist.controls_sync(acc.loop, used):
                continue
            wrapped = used[0]
            via = self._via(acc, wrapped)
            no_sync = self._no_sync(wrapped, via or wrapped.via)
            backward = f"`{one_line(self.ctx.code(acc.backward))}`"
            inner = self.ctx.loops.backward_inside(acc.backward)
            if inner is not None:  # a per-micro-batch helper: `train_micro_step(model, batch)`
                backward += f" (which runs `{one_line(self.ctx.code(inner))}`)"
            if acc.nested:
                when = f"once after the micro-batch loop `{self.ctx.code(acc.loop).splitlines()[0].rstrip(':')}`"
            else:
                when = f"only when `{acc.condition}`"
            kinds = list(dict.fromkeys(w.kind for w in used))
            # Each model named with its own wrapper when they differ (`model` (DDP), `m2` (FSDP2's ...)).
            models = ", ".join(f"`{w.name}`" + (f" ({_SHORT[w.kind]})" if len(kinds) > 1 else "") for w in used)
            if len(kinds) == 1:
                models += f" ({_SHORT[wrapped.kind]})"
            # FSDP reduce-scatters the gradient shards; DDP and the frameworks over it all-reduce.
            reduces = {FSDP: "reduce-scatters", FSDP2: "reduce-scatters"}.get(wrapped.kind, "all-reduces")
            if len({k in (FSDP, FSDP2) for k in kinds}) > 1:
                reduces = "all-reduces or reduce-scatters"
            message = (f"{backward} {reduces} the gradients of {models} on every "
                       f"micro-batch, but the optimizer steps {when}; "
                       + (f"call `{no_sync}` before the other micro-batches' forward (and `True` before the last)"
                          if wrapped.kind == FSDP2 else
                          f"run forward and backward under `{no_sync}` on the other micro-batches"))
            if wrapped.kind == FSDP:
                message += " (FSDP keeps unsharded gradients meanwhile: more memory)"
            if len(used) > 1:
                fix, why = None, "several wrapped models train in this loop"
            elif wrapped.via is not None and via is None:
                fix, why = None, f"the loop's code cannot reach `{wrapped.via}`"
            else:
                fix, why = self._fix(acc, wrapped, no_sync)
            if why:
                message += f"; not fixed: {why}"
            self.report(acc.backward, message, fix)
        # A `no_sync()` in the loop counts as its control above, even around the backward alone;
        # there it saves nothing, which is reported here, once for each `with`.
        for late in dist.backward_only_no_syncs():
            no_sync = self._no_sync(late.wrapped, None)
            code = self.ctx.code
            forward = one_line(code(late.forward))
            if len(forward) > 40:
                forward = one_line(code(late.forward.func)) + "(...)"
            message = (f"`with {one_line(code(late.item.item))}:` holds only the backward "
                       f"(`{one_line(code(late.backward))}`), which still all-reduces: DDP decides in the forward "
                       f"(`{forward}`, run before the `with`) whether the next backward all-reduces; run the "
                       f"forward under `{no_sync}` too")
            self.report(late.item.item, message, self._forward_fix(late, no_sync))

    @staticmethod
    def _no_sync(wrapped: Wrapped, via: str | None) -> str:
        """The context manager that skips the all-reduce, spelled for how the model was wrapped."""
        if wrapped.kind == ACCELERATE:
            return f"{via}.no_sync({wrapped.name})"
        if wrapped.kind == FABRIC:
            return f"{via}.no_backward_sync({wrapped.name})"
        if wrapped.kind == FSDP2:
            return f"{wrapped.name}.set_requires_gradient_sync(False)"
        return f"{wrapped.name}.no_sync()"

    def _via(self, acc: Accumulation, wrapped: Wrapped) -> str | None:
        """The accelerate/Fabric object, by a name the training loop can use; None when it has none."""
        if wrapped.via is None:
            return None
        dist = self.ctx.distributed
        func = acc.backward.func
        receiver = dotted(func.value) if isinstance(func, cst.Attribute) else None
        if receiver is not None and dist.framework(receiver) == wrapped.kind:
            return receiver  # `accelerator.backward(loss)`: the loop already holds it
        scope = self.ctx.index.enclosing_function(acc.loop) or self.ctx.module
        return wrapped.via if dist.references(scope, wrapped.via) else None

    # -- the fix -----------------------------------------------------------------------

    def _fix(self, acc: Accumulation, wrapped: Wrapped, no_sync: str):
        """(the fix, None), or (None, why there is none, as the message says it)."""
        ctx, dist = self.ctx, self.ctx.distributed
        if acc.sync_test is None:
            return None, "the micro-batch that steps cannot be told before its forward"
        if self._steps_elsewhere(acc):
            return None, "an optimizer step after the loop would use gradients left unsynchronised"
        if not isinstance(acc.loop.body, cst.IndentedBlock):
            return None, None
        stmts = list(acc.loop.body.body)
        end = stmts.index(dist.top_statement(acc.loop, acc.backward))
        start = next((i for i, s in enumerate(stmts[:end + 1])
                      if dist.references(s, wrapped.name) or dist.calls_local_using(s, wrapped.name)), None)
        if start is None:
            # no_sync around backward alone saves nothing
            return None, "the forward is not in sight in the loop"
        guard_index = stmts.index(acc.guard) if acc.guard is not None else len(stmts)
        if guard_index <= end:
            return None, "the step's condition is tested before this micro-batch's backward"
        test_node = acc.guard.test if acc.guard is not None else None
        why = self._why_not_hoisted(acc, stmts[start:guard_index], test_node)
        if why:
            return None, why

        if wrapped.kind == FSDP2:
            return self._fsdp2_fix(acc, wrapped, stmts[start]), None
        replacements = []
        nullcontext = imported_name(ctx, "contextlib.nullcontext")
        if nullcontext is None:
            module, add_import = ctx.module_name("contextlib")
            nullcontext = f"{module}.nullcontext"
            replacements += add_import
        context = no_sync
        if wrapped.conditional and wrapped.via is None:
            # Wrapped only on some paths (`if ddp: model = DDP(model)`): a plain module has no no_sync.
            # accelerate's and Fabric's context managers do nothing for a model they did not wrap.
            context = f'getattr({wrapped.name}, "no_sync", {nullcontext})()'
        test = acc.sync_test
        if acc.guard is not None and _is_continue_guard(acc.guard):
            test = ctx.code(acc.guard.test)
            expr = f"{context} if {_paren(acc.guard.test, test)} else {nullcontext}()"
        else:
            test_expr = cst.parse_expression(test)
            expr = f"{nullcontext}() if {_paren(test_expr, test)} else {context}"
        first = stmts[start]
        if not ctx.fits(f"with {expr}:", at=first):  # Black's layout for a long context expression
            indent = ctx.module.default_indent
            expr = layout.code(layout.parenthesized(cst.parse_expression(expr), indent, ctx.room(first, indent)))
        header = cst.parse_statement(f"with {expr}:\n    pass\n")
        with_stmt = header.with_changes(
            body=cst.IndentedBlock(body=[first.with_changes(leading_lines=[])] + stmts[start + 1:end + 1]),
            leading_lines=[*first.leading_lines, cst.EmptyLine(comment=cst.Comment(
                _COMMENT if ctx.fits(_COMMENT, at=first) else _SHORT_COMMENT))],
        )
        new_body = acc.loop.body.with_changes(body=stmts[:start] + [with_stmt] + stmts[end + 1:])
        replacements.append((acc.loop.body, new_body))
        return self.fix(Applicability.UNSAFE, f"Run forward and backward under `{no_sync}` on "
                        f"micro-batches that do not step", *replacements), None

    def _fsdp2_fix(self, acc: Accumulation, wrapped: Wrapped, first: cst.BaseStatement):
        """FSDP2 has no `no_sync()`: the switch is set before each micro-batch's forward, true on
        the one whose backward steps (`model.set_requires_gradient_sync((i + 1) % accum == 0)`)."""
        ctx = self.ctx
        test = acc.sync_test  # (for a `continue` guard, the condition the step runs under)
        if wrapped.conditional:
            return None  # a plain module has no set_requires_gradient_sync
        line = cst.parse_statement(f"{wrapped.name}.set_requires_gradient_sync({test})\n")
        comment = "# Reduce-scatter gradients only on the micro-batch before the optimizer step."
        line = line.with_changes(leading_lines=[*first.leading_lines, cst.EmptyLine(comment=cst.Comment(comment))]
                                 if ctx.fits(comment, at=first) else first.leading_lines)
        stmts = list(acc.loop.body.body)
        at = stmts.index(first)
        body = [*stmts[:at], line, first.with_changes(leading_lines=[]), *stmts[at + 1:]]
        return self.fix(Applicability.UNSAFE, f"Switch gradient sync off on micro-batches that do not step "
                        f"(`{wrapped.name}.set_requires_gradient_sync(...)`)",
                        (acc.loop.body, acc.loop.body.with_changes(body=body)))

    def _why_not_hoisted(self, acc: Accumulation, between: list, test_node) -> str | None:
        """Why the sync test, evaluated before the forward, might not mean what the step's condition
        means later; None when it does."""
        test = test_node if test_node is not None else cst.parse_expression(acc.sync_test)
        also = set()
        if acc.nested and isinstance(acc.loop.target, (cst.Name, cst.Tuple)):
            also = {dotted(n) for n in self.ctx.index.walk(acc.loop.target) if isinstance(n, cst.Name)}
        shown = one_line(self.ctx.code(test))
        if not _unchanged_by(test, between, lambda call: dotted(call.func) == "len", also):
            read = {dotted(n) for n in walk(test) if isinstance(n, (cst.Name, cst.Attribute)) and dotted(n)}
            binder = next((stmt for stmt in between if any(
                r == w or r.startswith(w + ".") or w.startswith(r + ".") for r in read for w in bound_names(stmt))), None)
            if not isinstance(binder, cst.SimpleStatementLine):
                binder = None  # a block binds too much to name one statement (`self` of `self.x[i] = v`)
            if binder is not None and not any(isinstance(n, cst.Call) and dotted(n.func) != "len" for n in walk(test)):
                code = one_line(self.ctx.code(binder.with_changes(leading_lines=[])))  # no comments above it
                return f"`{code}` changes what `{shown}` reads, and the test would move before it"
            return f"`{shown}` reads what the forward and backward change, and would be tested before them"
        call = self._changed_by_calls(test, between)
        if call is not None:
            return f"`{one_line(call)}` may change what `{shown}` reads, and the test would move before it"
        return None

    def _changed_by_calls(self, test: cst.BaseExpression, between: list) -> str | None:
        """A call among the statements between that may change what test reads (the call, as
        code): a method called on an object test reads from (`c.tick()`, `state.update(step=n)`,
        `steps.append(x)` for `len(steps) % accum`), a method of the class that assigns an
        attribute of self test reads (`self.bump()` with `self.micro_step += 1` in it), or a
        module function that declares a name test reads `global`."""
        ctx = self.ctx
        read = {dotted(n) for n in walk(test) if isinstance(n, (cst.Name, cst.Attribute)) and dotted(n)}
        for stmt in between:
            for call in walk(stmt):
                if not isinstance(call, cst.Call):
                    continue
                func = call.func
                if isinstance(func, cst.Attribute) and (receiver := dotted(func.value)) is not None:
                    if receiver in ("self", "cls"):
                        fns = ctx.loops.functions.get(func.attr.value, ())
                        if any(_assigns_any(fn, {r for r in read if r.startswith("self.")}) for fn in fns):
                            return ctx.code(call)
                    elif any(r == receiver or r.startswith(receiver + ".") for r in read):
                        return ctx.code(call)
                elif isinstance(func, cst.Name):
                    for fn in ctx.loops.functions.get(func.value, ()):
                        declared = {n.name.value for g in walk(fn.body) if isinstance(g, cst.Global) for n in g.names}
                        if declared & read:
                            return ctx.code(call)
        return None

    def _forward_fix(self, late: LateNoSync, no_sync: str):
        """Move the statements from the forward to the `with` into it, when they sit in its block."""
        ctx, dist = self.ctx, self.ctx.distributed
        stmt = late.statement
        block = ctx.parent(stmt)
        if not isinstance(block, cst.IndentedBlock):
            return None
        stmts = list(block.body)
        end = stmts.index(stmt)
        start = next((i for i, s in enumerate(stmts[:end]) if dist.forward_in(s, late.wrapped) is not None), None)
        if start is None:
            return None  # the forward runs in a block around this one (`if ...: with ... else: ...`): both need it
        moved = stmts[start:end]
        steps = {*ctx.loops.step_calls, *ctx.loops.optimizer_step_sites}
        if any(n in steps for s in moved for n in ctx.index.walk(s)):
            return None  # another backward or a step would come under no_sync too
        name = late.wrapped.name

        def plain(call: cst.Call) -> bool:
            """Calls that answer the same before the forward: the context managers, `len`."""
            func = call.func
            if isinstance(func, cst.Call):  # `getattr(model, "no_sync", nullcontext)()`
                func = func.func
            return dotted(func) in (f"{name}.no_sync", "getattr", "len") \
                or ctx.names.qualified(func) == "contextlib.nullcontext"

        # The context is now entered before those statements: it must not read what they bind.
        if any(item.asname is not None or not _unchanged_by(item.item, moved, plain) for item in stmt.items):
            return None
        body = stmt.body
        if isinstance(body, cst.SimpleStatementSuite):  # `with model.no_sync(): loss.backward()`
            body = cst.IndentedBlock(body=[cst.SimpleStatementLine(
                body=body.body, trailing_whitespace=body.trailing_whitespace)])
        first = moved[0]
        # Blank lines before the forward stay above the `with`; its comment lines go in with it.
        lead = list(first.leading_lines)
        split = next((i for i, line in enumerate(lead) if line.comment is not None), len(lead))
        inside = lead[split:]
        if ctx.fits(_FORWARD_COMMENT, at=first, deeper=1):
            inside.insert(0, cst.EmptyLine(comment=cst.Comment(_FORWARD_COMMENT)))
        new_with = stmt.with_changes(
            leading_lines=lead[:split] + [line for line in stmt.leading_lines if line.comment is not None],
            body=body.with_changes(body=[first.with_changes(leading_lines=inside), *moved[1:], *body.body]))
        return self.fix(Applicability.UNSAFE, f"Run the forward under `{no_sync}` too",
                        (block, block.with_changes(body=stmts[:start] + [new_with] + stmts[end + 1:])))

    def _steps_elsewhere(self, acc: Accumulation) -> bool:
        """An optimizer step outside the accumulation (after the loop): it may see unsynchronised gradients."""
        loops = self.ctx.loops
        scope = self.ctx.index.enclosing_function(acc.loop) or self.ctx.module
        home = loops.innermost_loop(acc.loop) if acc.nested else acc.loop
        for step in loops.optimizer_step_sites:
            if step is acc.step or not self.ctx.index.contains(scope, step):
                continue
            if self.ctx.index.enclosing_function(step) is not self.ctx.index.enclosing_function(acc.loop):
                continue
            if not self.ctx.index.contains(home, step):
                return True
        return False


def _unchanged_by(expr: cst.BaseExpression, between: list, call_ok, also=()) -> bool:
    """expr, evaluated before the statements between instead of after them, has the same value: it
    reads no name they bind (nor any of also), and makes no call but those call_ok accepts (a call
    might not return the same value twice)."""
    read = set(also)
    for node in walk(expr):
        if isinstance(node, cst.Call) and not call_ok(node):
            return False
        if isinstance(node, (cst.Name, cst.Attribute)) and dotted(node) is not None:
            read.add(dotted(node))
    written = set().union(*map(bound_names, between))
    return not any(r == w or r.startswith(w + ".") or w.startswith(r + ".") for r in read for w in written)


def _assigns_any(fn: cst.FunctionDef, names: set[str]) -> bool:
    """fn binds one of the dotted names (`self.micro_step += 1`, `self.n = ...`)."""
    return bool(names) and any(isinstance(n, (cst.Name, cst.Attribute)) and dotted(n) in names
                               for node in walk(fn.body) for t in binding_targets(node) for n in walk(t))


def _is_continue_guard(stmt) -> bool:
    body = stmt.body.body if isinstance(stmt, cst.If) else ()
    return len(body) == 1 and isinstance(body[0], cst.SimpleStatementLine) and isinstance(body[0].body[0], cst.Continue)


def _paren(node, code: str) -> str:
    """code of a condition, parenthesised where `a if <test> else b` needs it."""
    return f"({code})" if isinstance(node, (cst.IfExp, cst.Lambda, cst.NamedExpr)) else code
