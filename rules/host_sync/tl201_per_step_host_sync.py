"""TL201 per-step-host-sync: `.item()`, `.cpu()`, `.numpy()`, `.tolist()`, `float(t)`, `int(t)`,
`bool(t)` of a tensor, or its copy into a host buffer (`buf.copy_(t)`), on every step."""

from __future__ import annotations

import re

import libcst as cst

from trainlint.analysis.distributed import one_line
from trainlint.analysis.names import dotted
from trainlint.analysis.variables import variable_uses
from trainlint.diagnostics import Applicability
from trainlint.rule import NO_FIX, Invalid, Option, Rule, Valid, in_training_loop

from .cases import CLOSURE, FORWARD_TRAINER, HOOK, HOST_BATCH, WRITER, forward_case, in_accumulation_step
from .consumers import cross_rank_decision, gathered_list, host_consumer, per_step_test, test_advice
from .guards import guard_statement, interval_guard, log_line
from .logged_values import argument
from .syncs import (PROG_BAR_CAVEAT, blocking_host_copy, framework_log_value, framework_logging, host_read,
                    reads_to_host, waits_per_step)


def _log_line_read(ctx, read: cst.Call) -> bool:
    """read is in the arguments of a call that is a whole statement of its own, its value unused,
    and only logs (_log_line): `print("loss", loss.item())`, `writer.add_scalar("loss",
    loss.item(), step)`. TL201 guards that statement as TL202 guards one that formats the tensor."""
    stmt = ctx.index.enclosing(read, cst.SimpleStatementLine)
    if stmt is None or len(stmt.body) != 1 or not isinstance(stmt.body[0], cst.Expr) \
            or not isinstance(stmt.body[0].value, cst.Call):
        return False
    call = stmt.body[0].value
    return any(ctx.index.contains(arg, read) for arg in call.args) and log_line(ctx, call)


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


# A trainer whose logging interval is an attribute its `__init__` sets (`{init}`).
_INIT_INTERVAL = """import torch
class Trainer:
    def __init__(self, log_every=2):
        self.log_every = {init}
    def fit(self):
        for step, (x, y) in enumerate(loader):
            loss = model(x, y)
            loss.backward()
            opt.step()
            print(step, loss.item())
{extra}"""


# A loss printed on rank 0 every step, beside the loop's own rank-0 test at an interval.
_RANK_ZERO = """import os
import torch
import torch.distributed as dist
{setup}for step, (x, y) in enumerate(loader):
    loss = model(x, y)
    loss.backward()
    opt.step()
    if dist.get_rank() == 0:
        print(step, loss.item())
    if dist.get_rank() == 0 and step % {every} == 0:
        print("grad", model.weight.grad.norm().item())
"""


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
# A file that builds a ReduceLROnPlateau and steps it in the loop (`step`, indented for the inner loop).
# A trainer whose loop calls a method of the logger it keeps on itself, handing it {args}.
# A transformers callback that the file's own loop calls (not the Trainer): its `state` is None.
_OWN_CALLBACK = """import torch
from transformers import TrainerCallback
class Printer(TrainerCallback):
    def on_step_end(self, args, state, control, step=0, loss=None, **kw):
        {body}
class Loop:
    def __init__(self, model, opt):
        self.model, self.opt = model, opt
        self.callbacks = [Printer()]
        self.printer = Printer()
    def train(self, loader):
        for step, x in enumerate(loader):
            loss = self.model(x.cuda())
            loss.backward()
            self.opt.step()
            {call}(None, None, None, step=step, loss=loss)
"""
_KEPT_LOGGER = ("import torch\nclass Logger:\n    def on_step_end(self, step, loss):\n        {body}\n"
                "class Trainer:\n    def __init__(self):\n        self.model = torch.nn.Linear(8, 1).cuda()\n"
                "        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)\n        self.logger = Logger()\n"
                "    def fit(self, losses):\n        for step in range(10):\n"
                "            loss = self.model(torch.randn(8, 8, device='cuda')).mean()\n"
                "            loss.backward()\n            self.opt.step()\n            self.logger.on_step_end({args})\n")
def _callbacks(code: str, second: str = "NoOp()") -> str:
    """_KEPT_LOGGER with the logger one of a list of callbacks the loop calls in turn."""
    return code.replace("self.logger = Logger()", f"self.callbacks = [Logger(), {second}]").replace(
        "            self.logger.on_step_end(", "            for cb in self.callbacks:\n                cb.on_step_end(") \
        + "class NoOp:\n    def on_step_end(self, step, loss):\n        pass\n"


def _set_later(code: str) -> str:
    """_KEPT_LOGGER with the logger None in __init__, made in `setup`, called when set."""
    return code.replace("self.logger = Logger()\n", "self.logger = None\n    def setup(self):\n        self.logger = Logger()\n"
                        ).replace("            self.logger.on_step_end(",
                                  "            if self.logger is not None:\n                self.logger.on_step_end(")


def _rank_flag(read: str) -> str:
    """A flag every rank puts in, reduced across ranks in the training loop; read reads it."""
    return "import torch.distributed as dist\n" + in_training_loop(
        "flag = torch.tensor(int(diverged(loss)), device='cuda')\n" + read)


# A second class of the file, for a tuple assignment that sets two attributes.
_OTHER = "class Other:\n    pass\n"
# A printer class a logger hands the step to as `it`.
_PRINTER = "class Printer:\n    def show(self, it, loss):\n        print(it, loss.item())\n"
_PLATEAU_CASE = ("import torch\nfrom torch.optim.lr_scheduler import ReduceLROnPlateau\nsched = ReduceLROnPlateau(opt)\n"
                 "for epoch in range(3):\n    for step, (x, y) in enumerate(loader):\n        loss = model(x, y)\n"
                 "        loss.backward()\n        opt.step()\n        {step}\n")


# A script that builds its model and data on the CPU and never names a device ({setup} and
# {loop} vary it).
_CPU_ONLY = """import torch
from torch.utils.data import DataLoader, TensorDataset
loader = DataLoader(TensorDataset(torch.randn(32, 4), torch.randn(32, 1)), batch_size=8)
model = torch.nn.Linear(4, 1){setup}
opt = torch.optim.SGD(model.parameters(), lr=0.01)
{loop}    for epoch in range(2):
        tot = 0.0
        for x, y in loader:
            loss = (model(x) - y).pow(2).mean()
            opt.zero_grad(); loss.backward(); opt.step()
            seen = float(y.abs().sum())
            tot += loss.item()
        print(epoch, tot)
"""

# An optimizer's unit test on a small CPU model, in a file that uses CUDA elsewhere (timm's
# test_optim.py): `{place}` says where the model and its input go; `{calls}` how it is run.
_CPU_TEST = ("import torch\nfrom torch import nn\n"
             "def _test_model(optimizer, device=torch.device('cpu'), after_step=0):\n"
             "    x = torch.tensor([0.1, 0.2, 0.3, 0.4, 0.5, 0.6], device=device).reshape(3, 2)\n"
             "    model = nn.Sequential(nn.Linear(2, 3), nn.Sigmoid(), nn.Linear(3, 1), nn.Sigmoid())\n"
             "    {place}\n    opt = optimizer(model.parameters())\n    prev_loss = float('inf')\n"
             "    for i in range(20):\n        opt.zero_grad()\n        loss = model(x).sum()\n"
             "        loss.backward()\n        loss = loss.item()\n        if i > after_step:\n"
             "            assert loss < prev_loss\n        prev_loss = loss\n        opt.step()\n"
             "def test_sgd():\n    {calls}\n"
             "def test_cuda_state():\n    p = nn.Parameter(torch.ones(8, device='cuda'))\n    assert p.is_cuda\n")


# A DQN agent trained on every environment step: `{act}` picks the action (the lines before the
# environment's step), `{step}` hands it to the environment.
_AGENT = """import random
import gym
import torch
env = gym.make("CartPole-v1")
q_net = torch.nn.Linear(4, 2).cuda()
opt = torch.optim.Adam(q_net.parameters())
obs = env.reset()
for step in range(1000):
    q = q_net(torch.as_tensor(obs).cuda())
    {act}
    {step}
    loss = q.pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
"""
_ENV_STEP = "obs, reward, done, info = env.step(action)"


# A module class of the file (Tensors._module_classes).
# A loop whose labels arrive on the host, compared with a module constant ({limit}).
_HOST_LABELS = ("import torch\nMIN_LABELS = {limit}\ndef train(loader):\n    for x, y in loader:\n"
                "        few = int(y.sum() < MIN_LABELS)\n        loss = model(x.cuda(), y.cuda())\n"
                "        loss.backward()\n        opt.step()\n")
_MODULE_NET = "import torch\nfrom torch import nn\nclass Net(nn.Module):\n    pass\n"


# A step per training objective: the index picks the objective's optimizer (sentence-transformers' fit).
_OBJECTIVES = (
    "import torch\nglobal_step = 0\nfor epoch in range(epochs):\n    for _ in range(steps_per_epoch):\n"
    "        for i in range(len(models)):\n            optimizer = optimizers[i]\n"
    "            loss = models[i](x.cuda(), y.cuda())\n            loss.backward()\n            optimizer.step()\n"
    "            {read}\n        global_step += 1\n"
)
_ALTERNATING = (
    "import torch\nfor i, (x, y) in enumerate(loader):\n    optimizer = optimizers[i % 2]\n"
    "    loss = model(x.cuda(), y.cuda())\n    loss.backward()\n    optimizer.step()\n    {read}\n"
)
# A token count added to across micro-batches drawn from an iterator a caller hands in, read once
# per step (torchtitan's `int(local_valid_tokens)`); {start} is what the count starts as.
# A host buffer `buf` made before a training loop on the GPU, which ends with `{copy}`.
_HOST_COPY = ("import torch\nmodel = torch.nn.Linear(4, 1).cuda()\nbuf = {buf}\n"
              "for step, x in enumerate(loader):\n    loss = model(x.cuda()).sum()\n    loss.backward()\n"
              "    opt.step()\n    {copy}\n")
_TOKEN_COUNT = ("import torch\n\n\ndef train_step(data_iterator):\n    n = {start}\n"
                "    for _ in range(4):\n        x, labels = next(data_iterator)\n        n += (labels != -100).sum()\n"
                "        model(x).sum().backward()\n    log({{'tokens': int(n)}})\n    opt.step()\n\n\n"
                "for step in range(100):\n    train_step(batches)\n")

# A training function filling `losses` on every step with `{fill}`, then `{after}`.
_AVERAGED = ("import torch\nimport numpy as np\ndef train(model, opt, data):\n    losses = []\n"
             "    for step, (x, y) in enumerate(data):\n        loss = model(x.cuda()).mean()\n        loss.backward()\n"
             "        opt.step()\n        {fill}\n    {after}\n")
# A trainer filling `self.losses` in its step method, which its fit loop calls, and reading it
# with `{after}` in an epoch-end method.
_AVERAGED_ATTR = ("import torch\nimport numpy as np\nclass Trainer:\n    def __init__(self):\n        self.losses = []\n"
                  "    def train_step(self, x):\n        loss = self.model(x.cuda()).mean()\n        loss.backward()\n"
                  "        self.opt.step()\n        self.losses.append(loss.item())\n"
                  "    def on_epoch_end(self):\n        {after}\n"
                  "    def fit(self, data):\n        for epoch in range(10):\n            for x in data:\n"
                  "                self.train_step(x)\n            self.on_epoch_end()\n")
# A function filling `losses` on every step and returning it to `main`, which then does `{after}`.
_AVERAGED_RETURNED = ("import torch\nimport numpy as np\ndef train_epoch(model, opt, data):\n    losses = []\n"
                      "    for step, (x, y) in enumerate(data):\n        loss = model(x.cuda()).mean()\n"
                      "        loss.backward()\n        opt.step()\n        losses.append(loss.item())\n"
                      "    return losses\ndef main(model, opt, data):\n    for epoch in range(10):\n"
                      "        epoch_losses = train_epoch(model, opt, data)\n        {after}\n")
# A loop copying each step's predictions to the host with `{fill}` (labels stay on the host), then `{after}`.
_GATHERED = ("import torch\nimport numpy as np\ndef train(model, opt, data):\n    preds, labels = [], []\n"
             "    for step, (x, y) in enumerate(data):\n        logits = model(x.cuda())\n"
             "        logits.mean().backward()\n        opt.step()\n        {fill}\n        labels.append(y.numpy())\n"
             "    {after}\n")
# A Lightning training step that logs with `LOG`.
_LIGHTNING_LOG = HOOK.format(base="L.LightningModule", hook="training_step", read="acc.item()").replace(
    "self.history.append(acc.item())", "LOG")


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
Flags reads of a tensor's value on the host (`.item()`, `.cpu()`, `.numpy()`, `.tolist()`; a copy
spelled `.to("cpu")`, `.to(device="cpu")`, `.to(torch.device("cpu"))` or `.to(cpu)` of a name
bound only to the CPU, as `.cpu()`, not `.to(device)` of a device picked at run time nor one with
`non_blocking=True`; `float(t)`, `int(t)`, `bool(t)`, `math.isfinite(t)` / `math.isnan(t)` / `math.isinf(t)` (which
call `float(t)`), also as an `if` test, where TL204 does not report them again; a GradScaler's
`get_scale()`, which is `.item()` of its scale; a copy from the device into a tensor in host
memory (`buf.copy_(out)`, where `buf` is made on the CPU: `torch.empty(n, device="cpu")`,
`.cpu()`, `.pin_memory()`), which waits as `.cpu()` does unless `non_blocking=True` (reported
without a fix: under an interval the buffer would hold an older value on the other steps); and a
tensor handed to the `step()` of a
scheduler built as `torch.optim.lr_scheduler.ReduceLROnPlateau(...)` in the file, which reads
its metric with `float()`) that run on every step of the hot loop. Under gradient accumulation the
branch that steps the optimizer (`if (i + 1) % accum == 0: opt.step(); ...`, or accelerate's
`if accelerator.sync_gradients:`) runs on every training step too; a logging interval inside it
limits what it guards, and so does the `else:` of a test that is false every N steps
(`if step % log_every: ... else:`, `if step % n != 0: ... else:`, `if (step + 1) % n > 0: ...
else:`); the body of such a test runs on all steps but one in N and counts as every step (no fix
puts an interval inside it: `if step % 100 == 0:` under `if step % log_every:` could hold on no
step), and so does what follows `if step % n == 0: continue` (it leaves on one step in N; `if
step % n != 0: continue` leaves on the others, and what follows is limited), or a `continue` on
one step or a few named ones, or past a bound (`if step == 0: continue`, `if step in {0, 1}:`,
`if step >= max_steps:`). So do the hooks a framework calls on every step, where the loop is the
framework's: a LightningModule's `training_step`, a Lightning callback's `on_train_batch_end`, a
transformers or trl Trainer's `compute_loss` or `training_step`, a TrainerCallback's
`on_step_end` (found through base classes the module imports). Code under a test of a few steps
(`if step == 0:`, or steps named one by one: `if step in {1, 10, 100}:`) does not run on every
step, nor does code after a `continue` (or a helper's `return`) on every step but the first, a
few or the last (`if step != 0: continue`, `if step > 0:`, `if step:`, `if step not in {0, 1}:`,
`if i != len(loader) - 1:`, `if not first:`). A `case` reads as the `if` it amounts to: `match step % log_every:` / `case 0:` is an
interval test, `case _:` runs on every step. A function handed to the optimizer's step as its closure (`opt.step(closure)`) runs on every
step; but in a closure handed to L-BFGS, whose step reads the closure's loss on the host at every
evaluation (`float(closure())`), a read of its own waits for nothing more and is not flagged (nor
by TL202 and TL204). The `forward` (or `__call__`) of a model whose class the file defines
(subclassing nn.Module) runs on every step when the loop calls the model (`out = model(x)` with
`model = Net(...)`, also `.to(device)`, `model = model.cuda()`, DDP or `torch.compile` around it;
`self.model(x)` in a Trainer; a LightningModule's `self(x)`); an imported model's, or one called
only in evaluation, does not. A read there gets no fix: forward sees no step counter of the loop.
The same reading of "every step" holds for TL202, TL203 and TL204. The
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
range(n)` but not of `range(0, n, batch_size)`, whose offsets count samples, a name it increments
by 1, never a tensor: `step_t += 1` of a device tensor is no
counter; of a micro-batch loop that steps no optimizer, nanoGPT's `for micro_step in
range(accum):`, the counter of the loop around it that does, as of a loop over training
objectives whose rounds each step the optimizer they take, `optimizer = optimizers[train_idx]`
(sentence-transformers' fit: a test of the index, which restarts every step, held on every
step); in a loop nested in an epoch loop,
a name its body increments by 1 that the outer loop never sets anew, `global_step += 1`, before
the loop's index, which restarts every epoch) and the script's logging interval (`if it % args.log_interval == 0:`), with `step`
standing for a counter not found (in the code that runs once per optimizer step under gradient
accumulation, `opt_step`, which the advice says to count there with `opt_step += 1`: a test of the
loop's index there, `i % 10 == 0` under `i % 4 == 3`, may hold on no step; no fix is written). In a
function or method the loop calls (also one of an object the loop's class keeps, `self.logger =
Logger()`, or of each in a list it keeps, `self.callbacks = [Logger(), tracker]` with `tracker =
Tracker()` assigned once), the loop's counter is not in scope: the parameter every call hands it to
(`self.logger.on_step_end(step, loss)` into `def on_step_end(self, step, loss)`, also
`global_step=self.global_step`; other classes' methods of the same name aside) is the counter
when the function rebinds it nowhere, followed through functions that hand it on
(`self.printer.show(step, loss)` into `def show(self, it, loss)`: `it`); else, in a method, the
advice counts `self.step += 1` there and no fix is written. An interval kept on the object
(`self.log_every`) is the one of the class that holds the code, or of a base class of it. In a hook, the advice and the fixes use the framework's own step
counter and logging interval: `self.global_step % self.trainer.log_every_n_steps` in a
LightningModule, `trainer.global_step % trainer.log_every_n_steps` in a Lightning callback,
`state.global_step % state.logging_steps` in a TrainerCallback (the Trainer's `self.state` in a
Trainer subclass), but only in a hook the framework alone calls: one the file's own code calls
(`for cb in self.callbacks: cb.on_step_end(args, None, None, step=step)`) is a method like any
other there, guarded by the counter the call hands in, else not fixed; and in Lightning they mention `self.log(...)`, which keeps a tensor on the
device until the logger writes (with `prog_bar=True` the progress bar reads it at every refresh,
each batch by default). Lightning's and the Trainer's counters count optimizer steps: under gradient accumulation a
guard on them is true on every micro-batch of each N-th step.

Nothing is flagged (nor by TL202, TL203 and TL204) in a file whose training can only run on the
CPU, where each operation has finished when it returns: one that names no device (no `.cuda()` or
`.to(...)`, no `device`/`cuda`/`gpu`/`mps`/`xla`/`tpu`/`npu` in a name, keyword or string, no
DataParallel, DDP or FSDP), imports nothing that may place tensors itself (only the standard
library, torch, torchvision, numpy and such; not accelerate, Lightning, transformers or a module
of the project), restores no tensors without a `map_location`, reads no name it does not bind, and
trains its loops in code that takes no model, optimizer or data from a caller (`def train(model,
loader):` may be handed them on a GPU).

A value known to be in host memory is not flagged, as reading it waits for no GPU: a numpy
value, a tensor made without `device=` (`torch.randint(0, 10, (1,))`, also through a name, and
one made before the loop that the loop never changes or only adds host values to: `counts +=
torch.bincount(y)` of the labels before they are moved; or changes only by `+=`, `-=`, `*=`, `/=`
(or `.add_()`, `.sub_()`, `.mul_()`, `.div_()`) of anything, which work in place on a tensor and
never move it (a count of tokens over micro-batches, `n = torch.tensor(0)` then `n += (labels !=
-100).sum()`, read in the loop or after it: torchtitan's `int(local_valid_tokens)`; not a number,
which `+=` of a device tensor turns into one); not one it moves, copies into (`.copy_()` may read
the device), or hands to a function), what
`.cpu()` copied (the `.cpu()` is the finding), and a tensor of a batch that arrives on the host,
read before the loop moves it (`batch["ids"].tolist()`, `y.numpy()` after `y = batch["y"]`, and
what indexing, arithmetic, a dtype conversion or a torch function given only host tensors
(`torch.bincount(y)`) makes of it; also as what a loop or comprehension
goes over, `for v in y.tolist():`, and the elements it takes from one, `[v.item() for v in y]`;
a variable of the module read in a function counts as what the module assigns it: `int(y.sum() <
MIN_LABELS)` after `MIN_LABELS = 3`). Also what a torch.nn module kept on the host makes of host
tensors (`model(x).sum()`, an optimizer's unit test in a file that uses CUDA elsewhere): a module
built in the file from torch.nn classes with no `device=` (a container such as `nn.Sequential`
holding only such modules; not `DataParallel`, not under `with torch.device(...)`, not where the
file sets the default device), which no call moves (`.cuda()`,
`.to(device)`; a device known to be the CPU, as a parameter's default `device=torch.device("cpu")`
that every call leaves, is no move) or hands to anything that may place it (a function of the
file, `accelerator.prepare(model)`; not a library that places nothing, such as timm's
`create_optimizer_v2(model)` or `copy.deepcopy`); a factory told the CPU
(`device="cpu"`, or such a parameter) makes a host tensor too. A batch counts as arriving on the
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

A value the host needs on every step gets other advice, and no fix: one handed, in the same
iteration, to a call outside torch (an environment's `env.step(action)` after `action =
int(q_net(obs).argmax())`, directly or through a plain local name, also past an `if` whose other
branch picks a random action), which reading it every N steps would leave without it. Such a call
is not a builtin nor torch's, numpy's, math's or sklearn's, nor a tensor's or a string's method
(also one named as a tensor's: `view`, `expand`), nor logging, a tracker or a progress bar, nor
(by the words of its or its receiver's name) a container's or a meter's method, a metric, a
scheduler, a test's assertion, or a class built with the value (`losses.append(l)`,
`meter.update(l)`, `memory.push(s, a)`, `log_metrics(l)`, `accuracy(p, y)`, `Transition(s, a)`);
it takes no device tensor besides (`model(x, int(t))` is the model's code), and its result is
not only printed (`print(tok.decode(ids.tolist()))`). A value only printed, formatted, logged or
kept in a list, dict or meter keeps the advice above. The advice is to compute the value on the
host (a small policy can act on a CPU copy of the model) or to let one read serve many steps
(vectorised environments).

A flag reduced across ranks and tested on the step is not reported: every rank put its part in
and must act on the answer together on that very step (stop training, give up a batch another
rank ran out of memory on), so an interval would change what the program does, and the
collective has every rank wait anyway. It is a tensor a collective returned
(`accelerator.reduce(flag)`, `.gather`, `.all_reduce`, `.all_gather`, given the tensor as its one
positional argument: `x.gather(1, idx)` and `torch.gather` pick along a dimension), or a name an in-place
collective took earlier in the same block (`dist.all_reduce(flag)`, `dist.broadcast(flag, 0)`,
nothing binding the name again in between), read into the test of an `if`/`while` (`if
int(flag.item()) >= 1:`) or into a name such a test reads later in the step (`oom = flag.item()` ...
`if oom == 1: raise`). A reduced value only logged or kept keeps the advice above.

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
Unsafe too, in Lightning: `self.log("loss", loss.item())` (or `float(loss)`, `value=`, also
`pl_module.log` in a callback) becomes `self.log("loss", loss)`, the tensor Lightning detaches
and reads only where its logger writes (a tensor not known to be a float one, as `acc`, is
logged as `acc.float()`, the dtype Lightning gives a number); the logged values are the same. Not
fixed with `prog_bar=True`, whose bar reads the tensor at every refresh (the message says so).
`self.log_dict({"loss": loss.item(), "acc": acc.item()})` is fixed so, value by value. Where the
value logged is not the read alone (`self.log("y", loss.item() * 2)`, `loss.cpu()`, `int(n)`),
the message shows the call with the tensor (`self.log("y", loss * 2)`) and says why it is not
written; no guard is suggested there. A `round()` of the value is left out of the call shown
(`self.log("loss", round(loss.item(), 3))` shows `self.log("loss", loss)`), and not written: the
tensor would be logged unrounded.
A value appended to a list that is averaged later (`losses.append(loss.item())`, then
`np.mean(losses)`, `sum(losses[-50:]) / 50` or `torch.tensor(losses).mean()`) is not advised
under an interval (the mean would cover every Nth step): the message says to append
`loss.detach()` and take `torch.stack(losses).mean().item()` where it is averaged; no fix, no
guard suggested. So is a trainer's `self.losses` filled in its step method and averaged in
another method of the same object (its class, a base or a subclass of it defined here; a
LightningModule's `self.epoch_losses` averaged in `on_train_epoch_end`), and a
list a function returns to a caller that averages it (`epoch_losses = train_epoch(...)`, then
`np.mean(epoch_losses)`). So is a copy appended to a list that is joined whole later
(`preds.append(logits.argmax(1).cpu().numpy())`, or `.to("cpu")`, `.tolist()`, then
`np.concatenate(preds)` for an accuracy, `torch.stack(norms).max()`): read under an interval the
list would hold every Nth step; the message says to append the tensor (`logits.argmax(1)`, a
loss or logits `.detach()`ed) and copy it once, joined, where the list is used
(`torch.cat(preds).cpu().numpy()`; GPU memory then holds the tensors until the list is used); no
fix, no guard suggested.
A value tested on every step (`loss_value = loss.item()`, then `if not
math.isfinite(loss_value): sys.exit(1)`) would have nothing to test between intervals: the
message advises by what the test does (`torch._assert_async(...)` for a check that fails,
`torch.where(...)` otherwise, as TL204 does); no fix, no guard suggested.
Other shapes get a suggestion only (shown, never written): put the statement under the loop's own
interval test, else the script's logging interval (a name such as `log_every`,
`args.log_interval` or `PRINT_FREQ` whose value is known to be a positive whole number: a
literal, an option's default, an attribute of `self` that the class's `__init__` sets to a
literal and nothing else in the file sets; also an option of that name the script's `add_argument`
defines and its code never reads, where the loop sees the parsed namespace; none for one that is not known, as `step % 0` and `step % "2"`
raise), else 100; an
assignment moves only together with the statements right after it that read the name, and not at
all when the name is read anywhere else (the read would be stale). A statement that fills a list,
dict, set or meter (`losses.append(loss.item())`, `meter.update(loss.item(), n)`) gets no
suggestion when the container is read anywhere else, or may be (a parameter, an attribute such as
`self.history`, a module variable): filled every N steps it would hold every N-th value (the mean
of every tenth loss, predictions shorter than their targets).
"""
    valid = [
        # A host tensor compared with a constant of the module (a float, read in the loop's
        # function) is on the host: it was reported (the constant was not followed out of it).
        Valid(_HOST_LABELS.format(limit="3")),
        # A test's loop over a few gradients written out (through a name) runs each once: no
        # training loop (timm's Adafactor clipping test was reported).
        Valid("import torch\ndef test_clipping(param, opt, grad):\n    grads = [grad, 10 * grad, 0.1 * grad]\n"
              "    for grad in grads:\n        param.grad = grad.cuda()\n        opt.step()\n"
              "        rms = param.detach().norm().item()\n        assert rms <= 1.0\n"),
        # A flag reduced across ranks and tested on the step: every rank must act on it together
        # (stop, drop a batch another rank ran out of memory on); an interval cannot serve (trl's
        # stop callbacks, composer's OOM flag were reported).
        Valid(_rank_flag("dist.all_reduce(flag)\nif flag.item() > 0:\n    break")),
        Valid(_rank_flag("dist.all_reduce(flag, op=dist.ReduceOp.MAX)\n"
                                     "oom = int(flag[0].item())\nseen = step\nif oom == 1:\n    raise RuntimeError('OOM')")),
        Valid(_rank_flag("if int(accelerator.reduce(flag, reduction='sum').item()) >= 1:\n"
                                     "    control.should_training_stop = True")),
        # A model of the file called only in evaluation under no_grad (the loop trains another),
        # one bound to either of a class of the file and an imported one (which `model(x)` runs
        # is not known), and a plain callable class (no nn.Module): not followed.
        Valid(forward_case("self.stats.append(h.mean().item())", make="model = other.cuda()")
              + "net = Net().cuda()\nnet.eval()\nwith torch.no_grad():\n    for x in val_loader:\n        net(x.cuda())\n"),
        Valid(forward_case("self.stats.append(h.mean().item())",
                           make="model = (Net() if big else torchvision.models.resnet18()).cuda()")),
        Valid(forward_case("self.stats.append(h.mean().item())").replace("(nn.Module)", "")),
        # Throttled by the clock (`if time.time() - tic > 30: ...; tic = time.time()`): once per 30 s,
        # the same interval question TL202 asks (Loops.is_clock_throttle).
        Valid("import time\ntic = time.time()\n" + in_training_loop(
            "if time.time() - tic > 30:\n    print(loss.item())\n    tic = time.time()")),
        # A list of callbacks with an element not known (`make_callback()`, which may return any
        # object): the loop's calls are not followed into Logger alone (no finding from a guess).
        Valid(_callbacks(_KEPT_LOGGER.format(body="print(step, loss.item())", args="step, loss"), "make_callback()")),
        # ... also through a name that holds such an element (`extra = make_callback()`, or bound twice).
        Valid(_callbacks(_KEPT_LOGGER.format(body="print(step, loss.item())", args="step, loss"), "extra").replace(
            "        self.callbacks =", "        extra = make_callback()\n        self.callbacks =")),
        Valid(_callbacks(_KEPT_LOGGER.format(body="print(step, loss.item())", args="step, loss"), "extra").replace(
            "        self.callbacks =", "        extra = NoOp()\n        extra = make_callback()\n        self.callbacks =")),
        # Trainer's `self.report(loss)` runs Trainer.report, not the never-called Evaluator.report
        # of the same name (methods were matched by name alone).
        Valid("import torch\nclass Evaluator:\n    def report(self, loss):\n        self.vals.append(loss.item())\n"
              "class Trainer:\n    def __init__(self):\n        self.model = torch.nn.Linear(4, 1).cuda()\n"
              "        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)\n"
              "    def report(self, loss):\n        self.losses.append(loss.detach())\n"
              "    def fit(self, n):\n        for i in range(n):\n            loss = self.model(torch.randn(8, 4).cuda()).sum()\n"
              "            loss.backward()\n            self.opt.step()\n            self.report(loss)\n"),
        # Nothing in the file can put a tensor on a GPU: on the CPU each operation has run when it
        # returns and the reads wait for nothing (both were reported as waiting for the GPU).
        Valid(_CPU_ONLY.format(setup="", loop="if True:\n")),
        Valid(_CPU_ONLY.format(setup="", loop="def main(epochs=2):\n") + "main()\n"),
        # A small torch.nn model built with no device, moved nowhere but to the CPU (a parameter's
        # default every call leaves), fed a host tensor: its loss is on the host (timm's unit test).
        Valid(_CPU_TEST.format(place="model.to(device)", calls="_test_model(torch.optim.SGD, after_step=1)")),
        Valid(_CPU_TEST.format(place="pass", calls="_test_model(torch.optim.SGD)")),
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
        Valid(HOOK.format(base="L.LightningModule", hook="validation_step", read="acc.item()")),
        Valid(HOOK.format(base="object", hook="training_step", read="acc.item()")),
        # Values in host memory: the tensors of a batch the loop moves to the device itself, read
        # before it does; numpy values; tensors made without a device (a user's script).
        Valid(HOST_BATCH.format(read='ids = batch["ids"].tolist()')),
        Valid(HOST_BATCH.format(read="labels_cpu = y.numpy()")),
        Valid(HOST_BATCH.format(read="n_labels = int((y != -100).sum())")),
        Valid(HOST_BATCH.format(read="order = np.argsort(np.random.rand(8)).tolist()")),
        Valid(HOST_BATCH.format(read="scale = np.random.rand(1).item()")),
        Valid(HOST_BATCH.format(read="k = int(torch.randint(0, 10, (1,)).item())")),
        Valid(HOST_BATCH.format(read="perm = torch.randperm(8)\n    first = perm[:2].tolist()")),
        # ... and what a torch function makes of host tensors alone.
        Valid(HOST_BATCH.format(read="counts = torch.bincount(y, minlength=3).tolist()")),
        # ... and a tensor made on the host before the loop that the loop only adds host values to
        # (a class histogram of the CPU labels), or never changes.
        Valid(HOST_BATCH.format(read="counts += torch.bincount(y, minlength=3)\n    frac = (counts / counts.sum()).tolist()")
              .replace("import torch\n", "import torch\ncounts = torch.zeros(3)\n")),
        # ... or adds anything to with `+=`, which changes a tensor in place and never moves it (a
        # device operand would raise there; before, this was taken for a move to the device).
        Valid(HOST_BATCH.format(read="counts += torch.bincount(x.long().flatten(), minlength=3)\n"
                                     "    frac = counts.tolist()").replace("import torch\n", "import torch\ncounts = torch.zeros(3)\n")),
        # A token count kept in a host tensor across micro-batches drawn from an iterator a caller
        # hands in, read once per step (torchtitan's `int(local_valid_tokens)`): its labels' device
        # is not known, but the `+=` leaves the count on the host.
        Valid(_TOKEN_COUNT.format(start="torch.tensor(0, dtype=torch.int64)")),
        # ... also when the adding is written as the in-place method (`counts.add_(...)` was taken for
        # a change that may move it, and reported).
        Valid(HOST_BATCH.format(read="counts.add_(torch.bincount(y, minlength=3))\n    frac = (counts / counts.sum()).tolist()")
              .replace("import torch\n", "import torch\ncounts = torch.zeros(3)\n")),
        # ... whatever it adds: `counts.add_(v)` is `counts += v`, in place, and only a tensor has
        # it (a device operand was taken for a change that may move it, and reported, unlike `+=`).
        Valid(HOST_BATCH.format(read="counts.add_(torch.bincount(x.long().flatten(), minlength=3))\n"
                                     "    frac = counts.tolist()").replace("import torch\n", "import torch\ncounts = torch.zeros(3)\n")),
        Valid(HOST_BATCH.format(read="frac = counts.tolist()\n    counts.add_(x.sum())").replace(
            "import torch\n", "import torch\ncounts = torch.zeros(3)\n")),
        Valid(HOST_BATCH.format(read="print(int(seen))").replace("import torch\n", "import torch\nseen = torch.zeros(())\n")),
        # ... also as the iterable of a loop or a comprehension (evaluated where it stands), and the
        # elements of such a value.
        Valid(HOST_BATCH.format(read="for v in y.tolist():\n        seen.append(v)")),
        # ... also through a tensor method that keeps its device (`y.nonzero()`, `y.gather(...)`).
        Valid(HOST_BATCH.format(read="hits = y.nonzero().tolist()\n    picked = y.gather(0, y).tolist()")),
        Valid(HOST_BATCH.format(read="doubled = [v * 2 for v in y.tolist()]")),
        Valid(HOST_BATCH.format(read="top = max(v for v in y.numpy())")),
        Valid(HOST_BATCH.format(read="by_pos = {k: v for k, v in enumerate(y.tolist())}")),
        Valid(HOST_BATCH.format(read="vals = [v.item() for v in y]")),
        Valid(HOST_BATCH.format(read="for v in y:\n        seen.append(v.item())")),
        Valid("import torch\nfor ids, x in loader:\n    seen.update(ids.tolist())\n"
              "    loss = model(x.cuda(non_blocking=True))\n    loss.backward()\n    opt.step()\n"),
        Valid("import torch\nfor batch in loader:\n    x, y = batch\n    x = x.cuda(non_blocking=True)\n"
              "    labels = y.numpy()\n    loss = model(x, y.cuda())\n    loss.backward()\n    opt.step()\n"),
        # L-BFGS reads the closure's loss on the host at every evaluation (`float(closure())`):
        # a read of its own there waits for nothing more.
        Valid(CLOSURE.format(optimizer="LBFGS", read="history.append(loss.item())", closure="closure")),
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
        # A `continue` on all steps but some (a flag's, or a remainder's, also with a one-off test
        # beside it) still limits what follows.
        Valid(in_training_loop("if not should_log or step == 0:\n    continue\nprint(loss.item())")),
        Valid(in_training_loop("if step % 10 != 0 or step == 0:\n    continue\nprint(loss.item())")),
        Valid(in_training_loop("if step % 100 != 0:\n    continue\nprint(loss.item())")),
        Valid(in_training_loop("if step % 100:\n    continue\nprint(loss.item())")),
        # A `continue` on every step but the first (or a few, or all but the last) leaves the rest
        # to those steps only: it was read as per step.
        Valid(in_training_loop("if step != 0:\n    continue\nprint(loss.item())")),
        Valid(in_training_loop("if step > 0:\n    continue\nprint(loss.item())")),
        Valid(in_training_loop("if step >= 1:\n    continue\nprint(loss.item())")),
        Valid(in_training_loop("if step:\n    continue\nprint(loss.item())")),
        Valid(in_training_loop("if step not in {0, 1}:\n    continue\nprint(loss.item())")),
        Valid(in_training_loop("if step != len(loader) - 1:\n    continue\nprint(loss.item())")),
        Valid(in_training_loop("if epoch_step != 0 or not verbose:\n    continue\nprint(loss.item())")),
        Valid("first = True\n" + in_training_loop("if not first:\n    continue\nfirst = False\nprint(loss.item())")),
        # ... also `return` in a helper the loop calls on every step.
        Valid("import torch\ndef show(step, loss):\n    if step != 0:\n        return\n    print(loss.item())\n"
              + in_training_loop("show(step, loss)").partition("\n")[2]),
        # `match step % n:` / `case 0:` is the interval test `if step % n == 0:` written as a match
        # (read as per step before).
        Valid(in_training_loop("match step % args.log_interval:\n    case 0:\n        print(loss.item())")),
        Valid(in_training_loop("match step % 10:\n    case 0 | 5:\n        print(loss.item())")),
        # `buf.copy_(x)` into a host tensor: not with `non_blocking=True`, nor into a tensor on the
        # device or one not known to be in host memory (a parameter), nor from a host batch's tensor.
        Valid(_HOST_COPY.format(buf='torch.empty(4, device="cpu").pin_memory()',
                                copy="buf.copy_(loss.detach(), non_blocking=True)")),
        Valid(_HOST_COPY.format(buf='torch.zeros(4, device="cuda")', copy="buf.copy_(loss.detach())")),
        Valid(_HOST_COPY.format(buf='torch.zeros(4)', copy="if step % 100 == 0:\n        buf.copy_(loss.detach())")),
        Valid(HOST_BATCH.format(read="buf.copy_(y)").replace("for step", "buf = torch.zeros(4)\nfor step")),
        # A copy to the host with `non_blocking=True` waits for nothing (as `buf.copy_(x,
        # non_blocking=True)`); `.to(device)` is a copy to a device picked at run time.
        Valid(in_training_loop("preds = model(x).argmax(-1).to('cpu', non_blocking=True)")),
        Valid(in_training_loop("history.append(loss.detach().to(device))")),
        Valid("import torch\ndef train(loader, buf):\n    for x in loader:\n        loss = model(x.cuda())\n"
              "        loss.backward()\n        opt.step()\n        buf.copy_(loss.detach())\n"),
    ]
    invalid = [
        # `buf.copy_(x)` of a device tensor into a host tensor waits as `.cpu()` does (it was not
        # reported): a CPU factory's, a pinned buffer, what `.cpu()` gave, or a view of one.
        Invalid(_HOST_COPY.format(buf='torch.empty(4, device="cpu")', copy="buf.copy_(loss.detach())"),
                fixed=NO_FIX, message="`buf.copy_(...)` copies a GPU tensor into host memory, which waits for "
                "the GPU on every step; copy it under the logging interval (`if step % 100 == 0:`), or into a "
                "pinned buffer with `non_blocking=True` (and wait for the copy, on an event, before reading it); "
                "not fixed: on the other steps the buffer would keep an older value"),
        Invalid(_HOST_COPY.format(buf="torch.zeros(4).pin_memory()", copy="buf[:1].copy_(loss.detach(), False)"),
                fixed=NO_FIX),
        Invalid(_HOST_COPY.format(buf="model.weight.detach().cpu()", copy="buf.copy_(model.weight)"), fixed=NO_FIX),
        Invalid("import torch\nclass Trainer:\n    def __init__(self):\n        self.model = torch.nn.Linear(4, 1).cuda()\n"
                "        self.host = torch.zeros(1)\n    def fit(self, loader):\n        for x in loader:\n"
                "            loss = self.model(x.cuda()).sum()\n            loss.backward()\n            self.opt.step()\n"
                "            self.host.copy_(loss.detach())\n", fixed=NO_FIX),
        # ... a constant that is a tensor on the device makes the comparison one there.
        Invalid(_HOST_LABELS.format(limit="torch.tensor(3, device='cuda')"), fixed=NO_FIX, message="`int()`"),
        # ... but a reduced value only logged, a flag tested before it is reduced (or reduced
        # again later), and a reduced tensor kept in a name nothing tests are reads an interval serves.
        Invalid(_rank_flag("dist.all_reduce(loss)\nprint(loss.item())"),
                fixed=_rank_flag("dist.all_reduce(loss)\nif step % 100 == 0:\n    print(loss.item())")),
        Invalid(_rank_flag("if flag.item() > 0:\n    break\ndist.all_reduce(flag)")),
        Invalid(_rank_flag("dist.all_reduce(flag)\nflag = flag * 2\nif flag.item() > 0:\n    break")),
        Invalid(_rank_flag("dist.all_reduce(flag)\nstop = flag.item()\nhistory.append(stop)")),
        # `gather` along a dimension, of a tensor or torch's, is no collective.
        Invalid(_rank_flag("if flag.gather(0, idx).item() > 0:\n    break")),
        Invalid(_rank_flag("if torch.gather(flag, 0, idx).item() > 0:\n    break")),
        # A method of an object the trainer keeps (`self.logger = Logger()` every time it is set)
        # runs per step: its `.item()` went unreported. Each call hands the loop's `step` to the
        # method's `step`, which the guard names (the loop's own name is not seen there).
        Invalid(_KEPT_LOGGER.format(body="print(step, loss.item())", args="step, loss"),
                fixed=_KEPT_LOGGER.format(body="if step % 100 == 0:\n            print(step, loss.item())",
                                          args="step, loss"),
                message="(`if step % 100 == 0:`)"),
        # Another class with a method of the same name (every callback class has `on_step_end`):
        # the call still runs Logger's, whose `step` it binds (binding went by name, found two
        # functions, and the advice counted `self.step += 1` with no fix).
        Invalid(_KEPT_LOGGER.format(body="print(step, loss.item())", args="step, loss")
                + "class NoOp:\n    def on_step_end(self, step, loss):\n        pass\n",
                fixed=_KEPT_LOGGER.format(body="if step % 100 == 0:\n            print(step, loss.item())", args="step, loss")
                + "class NoOp:\n    def on_step_end(self, step, loss):\n        pass\n",
                message="(`if step % 100 == 0:`)"),
        # Callbacks kept in a list (`for cb in self.callbacks: cb.on_step_end(step, loss)` over
        # `[Logger(), NoOp()]`): each element's method runs per step, Logger's `.item()` went
        # unreported (only a single object on `self` was followed).
        Invalid(_callbacks(_KEPT_LOGGER.format(body="print(step, loss.item())", args="step, loss")),
                fixed=_callbacks(_KEPT_LOGGER.format(
                    body="if step % 100 == 0:\n            print(step, loss.item())", args="step, loss")),
                message="(`if step % 100 == 0:`)"),
        # An element named, as a script keeps a callback it reads afterwards (`noop = NoOp()`, then
        # `[Logger(), noop]`): the name holds one construction of a class of the file. The list
        # was left unfollowed, as for an unknown element, and Logger's `.item()` unreported.
        Invalid(_callbacks(_KEPT_LOGGER.format(body="print(step, loss.item())", args="step, loss"), "noop").replace(
                    "        self.callbacks =", "        noop = NoOp()\n        self.callbacks ="),
                fixed=_callbacks(_KEPT_LOGGER.format(
                    body="if step % 100 == 0:\n            print(step, loss.item())", args="step, loss"), "noop").replace(
                    "        self.callbacks =", "        noop = NoOp()\n        self.callbacks =")),
        # The logger set outside __init__ (`self.logger = None` there, `Logger()` in `setup`), the
        # call under `is not None`: the None binding made the attribute unknown, nothing reported.
        Invalid(_set_later(_KEPT_LOGGER.format(body="print(step, loss.item())", args="step, loss")),
                fixed=_set_later(_KEPT_LOGGER.format(
                    body="if step % 100 == 0:\n            print(step, loss.item())", args="step, loss")),
                message="(`if step % 100 == 0:`)"),
        # Handed on a level deeper (`self.printer.show(step, loss)` as `it`): the counter is `it`
        # there (the advice named `step`, which `show` does not see).
        Invalid(_KEPT_LOGGER.format(body="self.printer.show(step, loss)", args="step, loss").replace(
                    "class Logger:\n", _PRINTER + "class Logger:\n    def __init__(self):\n        self.printer = Printer()\n"),
                fixed=_KEPT_LOGGER.format(body="self.printer.show(step, loss)", args="step, loss").replace(
                    "class Logger:\n", _PRINTER.replace("        print(", "        if it % 100 == 0:\n            print(")
                    + "class Logger:\n    def __init__(self):\n        self.printer = Printer()\n"),
                message="(`if it % 100 == 0:`)"),
        # The loop's counter handed as an attribute (`global_step=self.global_step`, which the loop
        # counts with `self.global_step += 1`): the parameter is the counter (it was not found).
        Invalid(_KEPT_LOGGER.format(body="print(step, loss.item())", args="step=self.global_step, loss=loss").replace(
                    "for step in range(10):\n", "for x in loader:\n").replace(
                    "loss=loss)\n", "loss=loss)\n            self.global_step += 1\n"),
                fixed=_KEPT_LOGGER.format(body="if step % 100 == 0:\n            print(step, loss.item())",
                                          args="step=self.global_step, loss=loss").replace(
                    "for step in range(10):\n", "for x in loader:\n").replace(
                    "loss=loss)\n", "loss=loss)\n            self.global_step += 1\n"),
                message="(`if step % 100 == 0:`)"),
        # `self.log_every` is each class's own: the Trainer's (50) is not the Logger's (2), which
        # was "not known" because the file set the name twice; and where only the Trainer sets
        # it, the Logger's method cannot read it (the advice named it: AttributeError).
        Invalid(_KEPT_LOGGER.format(body="print(step, loss.item())", args="step, loss").replace(
                    "class Logger:\n", "class Logger:\n    def __init__(self):\n        self.log_every = 2\n").replace(
                    "self.logger = Logger()\n", "self.logger = Logger()\n        self.log_every = 50\n"),
                fixed=_KEPT_LOGGER.format(body="if step % self.log_every == 0:\n            print(step, loss.item())",
                                          args="step, loss").replace(
                    "class Logger:\n", "class Logger:\n    def __init__(self):\n        self.log_every = 2\n").replace(
                    "self.logger = Logger()\n", "self.logger = Logger()\n        self.log_every = 50\n"),
                message="(`if step % self.log_every == 0:`)"),
        Invalid(_KEPT_LOGGER.format(body="print(step, loss.item())", args="step, loss").replace(
                    "self.logger = Logger()\n", "self.logger = Logger()\n        self.log_every = 50\n"),
                fixed=_KEPT_LOGGER.format(body="if step % 100 == 0:\n            print(step, loss.item())",
                                          args="step, loss").replace(
                    "self.logger = Logger()\n", "self.logger = Logger()\n        self.log_every = 50\n"),
                message="(`if step % 100 == 0:`)"),
        # ... nor the Trainer's loop the Logger's.
        Invalid(_KEPT_LOGGER.format(body="pass", args="step, loss").replace(
                    "class Logger:\n", "class Logger:\n    def __init__(self):\n        self.log_every = 3\n").replace(
                    "self.opt.step()\n", "self.opt.step()\n            print(loss.item())\n"),
                fixed=_KEPT_LOGGER.format(body="pass", args="step, loss").replace(
                    "class Logger:\n", "class Logger:\n    def __init__(self):\n        self.log_every = 3\n").replace(
                    "self.opt.step()\n", "self.opt.step()\n            if step % 100 == 0:\n                print(loss.item())\n"),
                message="(`if step % 100 == 0:`)"),
        # ... a parameter not handed the loop's counter, or one the method rebinds, is no counter.
        Invalid(_KEPT_LOGGER.format(body="print(step, loss.item())", args="len(losses), loss"), fixed=NO_FIX,
                message="counting `self.step += 1` in this method"),
        Invalid(_KEPT_LOGGER.format(body="step = step * 4\n        print(step, loss.item())", args="step, loss"),
                fixed=NO_FIX, message="counting `self.step += 1` in this method"),
        # In a method the loop calls, the advice names a counter the method can keep: the loop's
        # `step` it named is not seen there (copied, the test raised NameError).
        Invalid("import torch\nclass Trainer:\n    def train_step(self, x):\n        loss = self.model(x)\n"
                "        loss.backward()\n        self.opt.step()\n        print(f'loss {loss.item():.4f}')\n"
                "    def fit(self, loader):\n        for x in loader:\n            self.train_step(x.to('cuda'))\n",
                fixed=NO_FIX, message="(`if self.step % 100 == 0:`, counting `self.step += 1` in this method"),
        # ... but the same script that moves its model (`.to(...)` moves to devices too), or whose
        # loop trains a model and data handed in by a caller who may have put them on a GPU.
        # ... one call hands a CUDA device, or the model goes to the GPU: the loss is there too.
        Invalid(_CPU_TEST.format(place="model.to(device)",
                                 calls="_test_model(torch.optim.SGD, torch.device('cuda'))"), fixed=NO_FIX),
        Invalid(_CPU_TEST.format(place="model.cuda()", calls="_test_model(torch.optim.SGD)"), fixed=NO_FIX),
        Invalid(_CPU_ONLY.format(setup="\nmodel.to(device)", loop="if True:\n"),
                fixed=_CPU_ONLY.format(setup="\nmodel.to(device)", loop="if True:\n").replace(
                    "loss.item()", "loss.detach()").replace("(epoch, tot)", "(epoch, float(tot))"),
                message="`.item()` waits for the GPU"),
        Invalid(_CPU_ONLY.format(setup="", loop="def train(model, loader):\n"),
                fixed=_CPU_ONLY.format(setup="", loop="def train(model, loader):\n").replace(
                    "loss.item()", "loss.detach()").replace("(epoch, tot)", "(epoch, float(tot))"),
                message="`.item()` waits for the GPU"),
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
        # A value tested on every step (DeiT's stop on a non-finite loss): read every N steps the test
        # would have nothing to test between; the advice was the logging interval alone.
        Invalid(in_training_loop("loss_value = loss.item()\nif not math.isfinite(loss_value):\n"
                                 "    print(f'Loss is {loss_value}, stopping training')\n    sys.exit(1)").replace(
                    "import torch\n", "import math\nimport sys\nimport torch\n"),
                fixed=NO_FIX, message="`.item()` waits for the GPU on every step; its value is tested on every step "
                "(`if not math.isfinite(loss_value):`): use `torch._assert_async(...)` or check it at the logging "
                "interval (`if step % 100 == 0:`)"),
        Invalid(in_training_loop("assert loss.item() < 1e4, 'diverged'"), fixed=NO_FIX,
                message="(`assert loss.item() < 1e4`): use `torch._assert_async(...)`"),
        Invalid(in_training_loop("if loss.item() < best:\n    best = loss.item()"), fixed=NO_FIX,
                message="(`if loss.item() < best:`): compute on the device (`torch.where(...)`)"),
        Invalid(_with_total(in_training_loop("total += bool(loss > 1)")) + "print(total)\n", fixed=NO_FIX),
        # ReduceLROnPlateau's step reads its metric with `float()` (a tensor metric was not reported).
        Invalid(_PLATEAU_CASE.format(step="sched.step(loss)"), fixed=NO_FIX, message="ReduceLROnPlateau reads the metric"),
        Invalid(_PLATEAU_CASE.format(step="sched.step(metrics=loss.detach())").replace(
            "from torch.optim.lr_scheduler import ReduceLROnPlateau\n", "import torch.optim.lr_scheduler as ls\n").replace(
            "= ReduceLROnPlateau(", "= ls.ReduceLROnPlateau("), fixed=NO_FIX, message="not fixed: stepping less often"),
        # In the branch that steps the optimizer, with no counter of optimizer steps: the advice
        # said `if step % LOG_EVERY == 0:` "where no counter of the loop was found" though the loop
        # counts `i`, and `i % 10 == 0` under `i % 4 == 3` never holds; it says to count optimizer
        # steps there, and nothing is written.
        Invalid(in_accumulation_step("print(f'loss {loss.item():.4f}')", counter="").replace(
            "import torch\n", "import torch\nLOG_EVERY = 10\n"), fixed=NO_FIX,
                message="(`if opt_step % LOG_EVERY == 0:`, counting optimizer steps with `opt_step += 1` where the "
                        "optimizer steps"),
        # ... and with one, the fix tests it, never the loop's index (which the loop tests too).
        Invalid(in_accumulation_step("print(f'loss {loss.item():.4f}')\nif i % 10 == 0:\n    print(i)"),
                fixed=in_accumulation_step("if global_step % 100 == 0:\n    print(f'loss {loss.item():.4f}')\n"
                                           "if i % 10 == 0:\n    print(i)")),
        # A loop with no step counter: the advice says to keep one, rather than name one it lacks.
        Invalid("import torch\nfor x, y in loader:\n    loss = model(x, y)\n    loss.backward()\n    opt.step()\n"
                "    losses.append(loss.item())\n", message="counting `step` where no counter of the loop was found"),
        # After `if step % n == 0: continue` the loop runs on all steps but one in N: reported,
        # with no "every N steps" suggestion (it would hold on no step there).
        Invalid(in_training_loop("if step % 10 == 0:\n    continue\nprint(loss.item())"), fixed=NO_FIX,
                message="`.item()` waits for the GPU on every step"),
        # A tensor method that makes a tensor (`logits.nonzero()`, `.gather`, `.clamp`, `.topk(k)[1]`)
        # gives one: its `.tolist()` waits as `torch.nonzero(logits).tolist()` does (not reported).
        Invalid(in_training_loop("logits = model(x)\nhits = logits.nonzero().tolist()"), message="`.tolist()`"),
        Invalid(in_training_loop("logits = model(x)\nbest = logits.topk(3)[1].tolist()"), message="`.tolist()`"),
        Invalid(in_training_loop("logits = model(x)\nlo = logits.clamp(0, 1).argwhere().tolist()"), message="`.tolist()`"),
        # After a `continue` on one step or a few named ones (`if step == 0: continue`, `step in
        # {0, 1}`), or past a bound (`step >= max_steps`), the rest runs on every other step: it
        # was taken for code limited to some steps, and nothing after it was reported.
        Invalid(in_training_loop("if step == 0:\n    continue  # warm-up\nprint('loss', loss.item())"),
                fixed=in_training_loop("if step == 0:\n    continue  # warm-up\nif step % 100 == 0:\n"
                                       "    print('loss', loss.item())")),
        Invalid(in_training_loop("if step in {0, 1}:\n    continue\nhistory = loss.item()")),
        Invalid(in_training_loop("if args.skip_first and step == 0:\n    continue\nhistory = loss.item()")),
        Invalid(in_training_loop("if step >= args.max_steps:\n    continue\nhistory = loss.item()")),
        # Not a one-off: a size (`batch_size != ...`), a flag that only contains `step`, or `and` with
        # a test that may be false on every step leaves the rest per step.
        Invalid(in_training_loop("if batch_size != args.batch_size:\n    continue\nhistory = loss.item()")),
        Invalid(in_training_loop("if skip_step:\n    continue\nhistory = loss.item()")),
        Invalid(in_training_loop("if step != 0 and args.warmup_only:\n    continue\nhistory = loss.item()")),
        # Past a large bound the steps before it are most of a run, each one paying.
        Invalid(in_training_loop("if step >= 1000:\n    continue\nhistory = loss.item()")),
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
        Invalid(CLOSURE.format(optimizer="SGD", read="history.append(loss.item())", closure="closure"), fixed=NO_FIX),
        Invalid(CLOSURE.format(optimizer="Adam", read="history.append(float(loss))", closure="closure=closure"),
                fixed=NO_FIX),
        # A remainder that holds on all steps but one in N: only its `else:` is limited.
        Invalid(in_training_loop("if step % log_every:\n    print(loss.item())"), fixed=NO_FIX),
        Invalid(in_training_loop("if (step + 1) % log_every > 0:\n    n = int(loss)"), fixed=NO_FIX),
        Invalid(in_training_loop("preds = model(x).argmax(-1).cpu().numpy()"), fixed=NO_FIX),
        # A copy to the host spelled `.to("cpu")` (a device given by keyword, `torch.device("cpu")`, a
        # name bound to it) is `.cpu()`, with the same fixes; it went unreported, or was reported
        # at the `.numpy()` after it.
        Invalid(in_training_loop("print('loss', loss.to('cpu'))"),
                fixed=in_training_loop("if step % 100 == 0:\n    print('loss', loss.to('cpu'))"),
                message="`.to('cpu')` waits for the GPU on every step"),
        Invalid(_with_total(in_training_loop("total += loss.to(device='cpu')\nif step % 10 == 0:\n    print(total)")),
                fixed=_with_total(in_training_loop("total += loss.detach()\nif step % 10 == 0:\n    print(float(total))"))),
        Invalid(in_training_loop("preds = model(x).argmax(-1).to(torch.device('cpu')).numpy()"), fixed=NO_FIX,
                message="`.to(torch.device('cpu'))` waits"),
        Invalid("import torch\nhost = torch.device('cpu')\n" + in_training_loop("history.append(loss.detach().to(host))")
                .partition("\n")[2], fixed=NO_FIX, message="`.to(host)` waits"),
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
        Invalid(HOOK.format(base="L.LightningModule", hook="training_step", read="acc.item()"), fixed=NO_FIX,
                message="(`if self.global_step % self.trainer.log_every_n_steps == 0:`), keep it on the device, "
                        "or pass the tensor itself to `self.log(...)`"),
        Invalid(HOOK.format(base="Base", hook="training_step", read="acc.item()").replace(
            "class M(", "class Base(L.LightningModule):\n    pass\nclass M("), fixed=NO_FIX),
        Invalid(HOOK.format(base="transformers.Trainer", hook="compute_loss", read="float(acc)"), fixed=NO_FIX,
                message="(`if self.state.global_step % self.state.logging_steps == 0:`) or keep it on the device"),
        # A block that reads the name among the statements after it: no suggestion (it does not move).
        Invalid(in_training_loop("lossf = loss.item()\nif verbose:\n    print(lossf)\nhistory.append(lossf)"),
                fixed=NO_FIX),
        # Not in host memory: a batch's tensor once moved, or the batch itself once moved (rebound,
        # in place as a BatchEncoding does, by a helper), a model's output, a loader whose
        # collate_fn makes the batches on the device, one accelerate prepared, a loop that moves
        # nothing of its batch (`x.numpy()` of a value not known to be on the host).
        Invalid(HOST_BATCH.format(read="xs = x.tolist()"), fixed=NO_FIX, message="`.tolist()` waits for the GPU"),
        # A host scalar tensor with a device tensor gives a device tensor.
        Invalid(HOST_BATCH.format(read="total = torch.add(y.sum(), x.sum()).item()"), fixed=NO_FIX),
        Invalid(HOST_BATCH.format(read="y = y.cuda()\n    labels = y.numpy()"), fixed=NO_FIX),
        # A number, which `+=` of a tensor turns into a tensor on that tensor's device, or a tensor
        # made on the device, is not on the host after it.
        Invalid(_TOKEN_COUNT.format(start="0"), fixed=NO_FIX, message="`int()` waits for the GPU"),
        Invalid(_TOKEN_COUNT.format(start="torch.tensor(0, device='cuda')"), fixed=NO_FIX),
        # A host tensor of before the loop that the loop moves, or copies a device tensor into
        # (`copy_` may read the device), is not known to be on the host.
        Invalid(HOST_BATCH.format(read="counts = counts.cuda()\n    frac = counts.tolist()").replace(
            "import torch\n", "import torch\ncounts = torch.zeros(3)\n"), fixed=NO_FIX),
        Invalid(HOST_BATCH.format(read="frac = counts.tolist()\n    counts.copy_(x.sum(0))").replace(
            "import torch\n", "import torch\ncounts = torch.zeros(3)\n"), fixed=NO_FIX),
        Invalid(HOST_BATCH.format(read='batch = batch.to(device)\n    ids = batch["ids"].tolist()'), fixed=NO_FIX),
        Invalid(HOST_BATCH.format(read='batch = {k: v.to(device) for k, v in batch.items()}\n'
                                        '    ids = batch["ids"].tolist()'), fixed=NO_FIX),
        Invalid(HOST_BATCH.format(read='batch.to(device)\n    ids = batch["ids"].tolist()'), fixed=NO_FIX),
        Invalid(HOST_BATCH.format(read='batch_to_device(batch, device)\n    ids = batch["ids"].tolist()'),
                fixed=NO_FIX),
        # The advice names the guard the fix writes: the loop's own interval test, whose `if` the
        # line that only logs joins (it was a suggestion only).
        Invalid("import torch\nfor it in range(args.iters):\n    loss = model(x, y)\n    loss.backward()\n"
                "    opt.step()\n    print(loss.item())\n    if it % args.log_interval == 0:\n        log(it)\n",
                fixed="import torch\nfor it in range(args.iters):\n    loss = model(x, y)\n    loss.backward()\n"
                "    opt.step()\n    if it % args.log_interval == 0:\n        print(loss.item())\n        log(it)\n",
                message="(`if it % args.log_interval == 0:`)"),
        Invalid(HOST_BATCH.format(read="preds = model(x).argmax(-1).tolist()"), fixed=NO_FIX),
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
        Invalid(HOST_BATCH.format(read="vals = [y.item() for y in model(x)]"), fixed=NO_FIX),
        Invalid(HOST_BATCH.format(read="for y in model(x):\n        seen.append(y.item())"), fixed=NO_FIX),
        Invalid(HOST_BATCH.format(read="for v in x.tolist():\n        seen.append(v)"), fixed=NO_FIX),
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
        # A loop over training objectives, each round stepping the optimizer its index picks
        # (sentence-transformers' fit): part of one step; the loop around it counts steps
        # (`train_idx % 100 == 0` held on every step, for the first objective).
        Invalid(_OBJECTIVES.format(read="print(loss.item())"),
                fixed=_OBJECTIVES.format(read="if global_step % 100 == 0:\n                print(loss.item())")),
        # ... not a loop over batches that alternates optimizers (a step per batch).
        Invalid(_ALTERNATING.format(read="print(loss.item())"),
                fixed=_ALTERNATING.format(read="if i % 100 == 0:\n        print(loss.item())")),
        Invalid(in_training_loop("logger.info('l=%f', loss.item())"),
                fixed=in_training_loop("if step % 100 == 0:\n    logger.info('l=%f', loss.item())")),
        Invalid(in_training_loop("print('loss', loss.item())"),
                fixed=in_training_loop("if step % 25 == 0:\n    print('loss', loss.item())"), options={"log-every": 25}),
        # A loop over batch offsets (`range(0, n, batch_size)`) counts samples, not steps: `start % 100
        # == 0` held on one step in 25 of those of 4 samples, on the first alone of those of 64. No fix;
        # a range that steps by 1 counts steps.
        Invalid("import torch\nfor start in range(0, len(xs), bs):\n    loss = model(xs[start:start + bs])\n"
                "    loss.backward()\n    opt.step()\n    print(loss.item())\n", fixed=NO_FIX,
                message="counting `step` where no counter of the loop was found"),
        Invalid("import torch\nfor i in range(0, n, 1):\n    loss = model(xs[i])\n"
                "    loss.backward()\n    opt.step()\n    print(loss.item())\n",
                fixed="import torch\nfor i in range(0, n, 1):\n    loss = model(xs[i])\n"
                "    loss.backward()\n    opt.step()\n    if i % 100 == 0:\n        print(loss.item())\n"),
        # The script's logging-interval option, defined but never read by the code: the guard used
        # the default 100 until something read `args.log_interval` ...
        Invalid(in_training_loop("print('loss', loss.item())").replace("import torch\n", "import torch\nimport argparse\nparser = argparse.ArgumentParser()\nparser.add_argument('--log_interval', type=int, default=20)\nargs = parser.parse_args()\n"),
                fixed=in_training_loop("if step % args.log_interval == 0:\n    print('loss', loss.item())")
                .replace("import torch\n", "import torch\nimport argparse\nparser = argparse.ArgumentParser()\nparser.add_argument('--log_interval', type=int, default=20)\nargs = parser.parse_args()\n")),
        # ... when its default is a positive whole number.
        Invalid(in_training_loop("print('loss', loss.item())").replace(
                    "import torch\n", "import torch\nimport argparse\nparser = argparse.ArgumentParser()\nparser.add_argument('--log_interval', type=int, default=None)\nargs = parser.parse_args()\n"),
                fixed=in_training_loop("if step % 100 == 0:\n    print('loss', loss.item())").replace(
                    "import torch\n", "import torch\nimport argparse\nparser = argparse.ArgumentParser()\nparser.add_argument('--log_interval', type=int, default=None)\nargs = parser.parse_args()\n")),
        Invalid(WRITER + in_training_loop("writer.add_scalar('loss', loss.item(), step)"),
                fixed=WRITER + in_training_loop("if step % 100 == 0:\n    writer.add_scalar('loss', loss.item(), step)")),
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
        Invalid(HOOK.format(base="L.LightningModule", hook="training_step", read="acc.item()").replace(
                    "self.history.append(acc.item())", "print('acc', acc.item())"),
                fixed=HOOK.format(base="L.LightningModule", hook="training_step", read="acc.item()").replace(
                    "self.history.append(acc.item())", "if self.global_step % self.trainer.log_every_n_steps == 0:\n"
                    "            print('acc', acc.item())")),
        # Lightning's `self.log` (`pl_module.log` in a callback) given the value read: the fix
        # passes the tensor itself, which Lightning reads only where its logger writes (a float
        # one as it is, another with `.float()`, as Lightning converts a number). It was a
        # suggestion to guard the line, never written, and said nothing of why. With
        # `prog_bar=True` the bar reads it at every refresh: not fixed, and the message says why.
        Invalid(HOOK.format(base="L.LightningModule", hook="training_step", read="acc.item()").replace(
                    "self.history.append(acc.item())", "self.log('loss', loss.item())"),
                fixed=HOOK.format(base="L.LightningModule", hook="training_step", read="acc.item()").replace(
                    "self.history.append(acc.item())", "self.log('loss', loss)")),
        Invalid(HOOK.format(base="L.LightningModule", hook="training_step", read="acc.item()").replace(
                    "self.history.append(acc.item())", "self.log('acc', value=float(acc), on_step=True)"),
                fixed=HOOK.format(base="L.LightningModule", hook="training_step", read="acc.item()").replace(
                    "self.history.append(acc.item())", "self.log('acc', value=acc.float(), on_step=True)")),
        Invalid(HOOK.format(base="L.LightningModule", hook="training_step", read="acc.item()").replace(
                    "self.history.append(acc.item())", "self.log('loss', loss.item(), prog_bar=True)"),
                fixed=NO_FIX, message="pass the tensor itself to `self.log(...)` (without `prog_bar=True`: the "
                "progress bar reads it at every refresh, each batch by default); not fixed: it is shown on the "
                "progress bar (`prog_bar=True`)"),
        # A list of per-step reads averaged later (at the interval, or once per epoch): read
        # under an interval it would average every Nth step only; the advice is to keep the
        # values on the device and read their mean once where it is taken. A list only printed
        # keeps the interval advice.
        Invalid(_AVERAGED.format(fill="losses.append(loss.item())", after="return np.mean(losses)"), fixed=NO_FIX,
                message="`.item()` waits for the GPU on every step; `losses` is averaged (`np.mean(losses)`): append "
                        "`loss.detach()` and read the mean once there, `torch.stack(losses).mean().item()`; read under "
                        "a logging interval, the mean would cover every Nth step only; not fixed:"),
        Invalid(_AVERAGED.format(fill="losses.append(float(loss))\n        if step % 50 == 0:\n"
                                      "            print(sum(losses[-50:]) / 50)", after="pass"), fixed=NO_FIX,
                message="`losses` is averaged (`sum(losses[-50:]) / 50`): append `loss.detach()` and read the mean once "
                        "there, `torch.stack(losses[-50:]).mean().item()`"),
        Invalid(_AVERAGED.format(fill="losses.append(loss.detach().item())",
                                 after="return sum(losses) / len(losses)"), fixed=NO_FIX,
                message="append `loss.detach()` and read the mean once there, `torch.stack(losses).mean().item()`"),
        Invalid(_AVERAGED.format(fill="losses.append(loss.item())", after="print(losses)"), fixed=NO_FIX,
                message="read it under the logging interval"),
        # ... also a list kept on the module (Lightning's `self.epoch_losses`, appended in
        # `training_step`, averaged in `on_train_epoch_end`): it was advised under the interval.
        Invalid("import numpy as np\n" + HOOK.format(base="L.LightningModule", hook="training_step", read="loss.item()")
                + "    def on_train_epoch_end(self):\n        print(np.mean(self.history))\n", fixed=NO_FIX,
                message="`self.history` is averaged (`np.mean(self.history)`): append `loss.detach()` and read the "
                        "mean once there, `torch.stack(self.history).mean().item()`"),
        Invalid(HOOK.format(base="L.LightningModule", hook="training_step", read="loss.item()")
                + "    def on_train_epoch_end(self):\n        print(self.history)\n", fixed=NO_FIX,
                message="read it under the logging interval"),
        # Reduced as a tensor: `torch.tensor(losses).mean()` (it got the interval advice).
        Invalid(_AVERAGED.format(fill="losses.append(loss.item())", after="return torch.tensor(losses).mean().item()"),
                fixed=NO_FIX, message="`losses` is averaged (`torch.tensor(losses).mean()`): append `loss.detach()` "
                                      "and read the mean once there, `torch.stack(losses).mean().item()`"),
        # A trainer's list, filled in its step method and averaged in another method of the class
        # (it got the interval advice, with a `self.step` counter to keep).
        Invalid(_AVERAGED_ATTR.format(after="print(sum(self.losses) / len(self.losses))"), fixed=NO_FIX,
                message="`.item()` waits for the GPU on every step; `self.losses` is averaged "
                        "(`sum(self.losses) / len(self.losses)`): append `loss.detach()` and read the mean once there, "
                        "`torch.stack(self.losses).mean().item()`; read under a logging interval, the mean would cover "
                        "every Nth step only; not fixed: each use of `self.losses` would change with it"),
        Invalid(_AVERAGED_ATTR.format(after="self.mean = np.mean(self.losses); self.losses = []"), fixed=NO_FIX,
                message="`self.losses` is averaged (`np.mean(self.losses)`)"),
        # Only printed, or another class's `self.losses` averaged: the interval advice.
        Invalid(_AVERAGED_ATTR.format(after="print(self.losses)"), fixed=NO_FIX,
                message="read it under the logging interval"),
        Invalid(_AVERAGED_ATTR.format(after="print(self.losses)") + "class Meter:\n    def mean(self):\n"
                "        return np.mean(self.losses)\n", fixed=NO_FIX, message="read it under the logging interval"),
        # Returned, and averaged by the caller (it got the interval advice).
        Invalid(_AVERAGED_RETURNED.format(after="print(epoch, np.mean(epoch_losses))"), fixed=NO_FIX,
                message="`losses` is averaged where `train_epoch(...)` returns it (`np.mean(epoch_losses)`): append "
                        "`loss.detach()` and read the mean once there, `torch.stack(epoch_losses).mean().item()`"),
        Invalid(_AVERAGED_RETURNED.format(after="print(epoch, np.mean(epoch_losses))").replace(
                    "return losses", "return losses, step").replace("epoch_losses =", "epoch_losses, n ="),
                fixed=NO_FIX, message="`losses` is averaged where `train_epoch(...)` returns it"),
        Invalid(_AVERAGED_RETURNED.format(after="print(epoch, epoch_losses)"), fixed=NO_FIX,
                message="read it under the logging interval"),
        # Per-step copies joined into one array where the list is used (`np.concatenate(preds)` for
        # an accuracy, `torch.stack(norms).max()`): read under an interval, the accuracy would
        # cover every Nth batch only (it got the interval advice). The device tensors can be
        # appended and copied once, joined. A list of copies only printed keeps the interval advice.
        Invalid(_GATHERED.format(fill="preds.append(logits.argmax(1).cpu().numpy())",
                                 after="return (np.concatenate(preds) == np.concatenate(labels)).mean()"),
                fixed=NO_FIX,
                message="`.cpu()` waits for the GPU on every step; `preds` is used whole (`np.concatenate(preds)`): "
                        "append `logits.argmax(1)` and copy it once there, `torch.cat(preds).cpu().numpy()` (GPU "
                        "memory then holds them until it is used); read under a logging interval, it would hold every "
                        "Nth step only; not fixed: each use of `preds` would change with it"),
        Invalid(_GATHERED.format(fill="preds.append(logits.to('cpu'))", after="return torch.stack(preds).max()"),
                fixed=NO_FIX, message="`preds` is used whole (`torch.stack(preds)`): append `logits.detach()` and copy "
                                      "it once there, `torch.stack(preds).cpu()`"),
        Invalid(_GATHERED.format(fill="preds.append(logits.argmax(1).tolist())", after="print(preds)"), fixed=NO_FIX,
                message="read it under the logging interval"),
        # `self.log_dict({...})` logs each value with `self.log`: a value read whole is fixed as
        # there, one finding and fix each. It got a guard suggestion, never written, and no reason.
        Invalid(_LIGHTNING_LOG.replace("LOG", "self.log_dict({'loss': loss.item(), 'acc': float(acc)})"),
                fixed=_LIGHTNING_LOG.replace("LOG", "self.log_dict({'loss': loss, 'acc': acc.float()})")),
        Invalid(_LIGHTNING_LOG.replace("LOG", "self.log_dict({'loss': loss.item()}, True)"),
                fixed=NO_FIX, message="not fixed: it is shown on the progress bar (`True`)"),
        # The read is not the whole value logged (a copy, arithmetic on the number, `int()`): no
        # fix, and the message says what to log instead and why it is not written.
        Invalid(_LIGHTNING_LOG.replace("LOG", "self.log('x', loss.cpu())"), fixed=NO_FIX,
                message="`.cpu()` waits for the GPU on every step; pass the tensor itself to `self.log(...)`: "
                        "`self.log('x', loss)` (without `prog_bar=True`"),
        Invalid(_LIGHTNING_LOG.replace("LOG", "self.log('x', loss.cpu())"), fixed=NO_FIX,
                message="; not fixed: the fix replaces `.item()` and `float()`, not `.cpu()`"),
        Invalid(_LIGHTNING_LOG.replace("LOG", "self.log('y', loss.item() * 2)"), fixed=NO_FIX,
                message="pass the tensor itself to `self.log(...)`: `self.log('y', loss * 2)` (without"),
        Invalid(_LIGHTNING_LOG.replace("LOG", "self.log('y', loss.item() * 2)"), fixed=NO_FIX,
                message="; not fixed: the script works the value out from the number (`loss.item() * 2`), and on "
                        "the tensor it would be worked out in the tensor's dtype"),
        # Rounded for the log: the tensor is shown unrounded (`round()` of a tensor raises), and
        # not written, as `int()` is not (it got the generic advice, which left `round()` out).
        Invalid(_LIGHTNING_LOG.replace("LOG", "self.log('loss', round(loss.item(), 3))"), fixed=NO_FIX,
                message="`.item()` waits for the GPU on every step; pass the tensor itself to `self.log(...)`: "
                        "`self.log('loss', loss)` (without `prog_bar=True`: the progress bar reads it at every "
                        "refresh, each batch by default); not fixed: `round()` rounds it, and the tensor would be "
                        "logged unrounded"),
        Invalid(_LIGHTNING_LOG.replace("LOG", "self.log('y', round(loss.item() * 2))"), fixed=NO_FIX,
                message="`self.log('y', loss * 2)` (without `prog_bar=True`"),
        Invalid(_LIGHTNING_LOG.replace("LOG", "self.log_dict({'n': int(acc)})"), fixed=NO_FIX,
                message="`self.log_dict({'n': acc})` (without `prog_bar=True`: the progress bar reads it at every "
                        "refresh, each batch by default); not fixed: `int()` makes it a whole number, and the tensor "
                        "would be logged as it is"),
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
        # The loop's own interval test beside a rank test (`dist.get_rank() == 0 and step % 5 ==
        # 0`) is the loop's interval: the rank call kept the test from being reused, and the fix
        # invented `step % 100`. Joined to `if dist.get_rank() == 0:`, the rank test is not repeated.
        Invalid(_RANK_ZERO.format(every="5", setup=""),
                fixed=_RANK_ZERO.format(every="5", setup="").replace(
                    "    if dist.get_rank() == 0:\n", "    if dist.get_rank() == 0 and step % 5 == 0:\n")),
        # ... also where the interval may not be a number and the reused test keeps the rank test
        # (it was written twice: `if dist.get_rank() == 0 and dist.get_rank() == 0 and step % every == 0:`).
        Invalid(_RANK_ZERO.format(every="every", setup="every = int(os.environ['EVERY'])\n"),
                fixed=_RANK_ZERO.format(every="every", setup="every = int(os.environ['EVERY'])\n").replace(
                    "    if dist.get_rank() == 0:\n", "    if dist.get_rank() == 0 and step % every == 0:\n")),
        # An interval set once, to a literal, in the class's `__init__` is known as a module
        # constant is (it said "`self.log_every` is not known to be a positive whole number" and
        # wrote no guard); set from an argument, or also elsewhere in the file, it is not.
        Invalid(_INIT_INTERVAL.format(init="2", extra=""),
                fixed=_INIT_INTERVAL.format(init="2", extra="").replace(
                    "            print(step, loss.item())\n",
                    "            if step % self.log_every == 0:\n                print(step, loss.item())\n")),
        Invalid(_INIT_INTERVAL.format(init="log_every", extra=""), fixed=NO_FIX,
                message="`self.log_every` is not known to be a positive whole number"),
        Invalid(_INIT_INTERVAL.format(init="2", extra="trainer = Trainer()\ntrainer.log_every = 0\n"), fixed=NO_FIX,
                message="`self.log_every` is not known to be a positive whole number"),
        Invalid(_INIT_INTERVAL.format(init="2", extra="").replace("        self.log_every = 2\n",
                                                                 "        self.log_every = 2\n        self.log_every += 1\n"),
                fixed=NO_FIX, message="`self.log_every` is not known to be a positive whole number"),
        # An `end=` that is a newline ends the line as the default does.
        Invalid(in_training_loop("print('loss', loss.item(), end='\\n')\nprint('lr', lr)"),
                fixed=in_training_loop("if step % 100 == 0:\n    print('loss', loss.item(), end='\\n')\nprint('lr', lr)")),
        # So does a carriage return (a progress line the next print starts over): it was taken for
        # half a line and got no fix.
        Invalid(in_training_loop("print('loss', loss.item(), end='\\r')\nprint('lr', lr)"),
                fixed=in_training_loop("if step % 100 == 0:\n    print('loss', loss.item(), end='\\r')\nprint('lr', lr)")),
        # A TrainerCallback's hook that the file's own loop calls is an ordinary method there: the
        # counter the call hands in guards it. It was guarded with transformers' `state.global_step
        # % state.logging_steps`, and the loop passes `state=None`: the fixed script crashed.
        Invalid(_OWN_CALLBACK.format(call="for cb in self.callbacks:\n                cb.on_step_end",
                                     body="print('loss', loss.item())"),
                fixed=_OWN_CALLBACK.format(call="for cb in self.callbacks:\n                cb.on_step_end",
                                           body="if step % 100 == 0:\n            print('loss', loss.item())")),
        # Without a counter handed in (`self.cb.on_step_end(...)` passes none): no fix, not the
        # framework's state either.
        Invalid(_OWN_CALLBACK.format(call="self.printer.on_step_end",
                                     body="print('loss', loss.item())").replace("step=step, ", ""),
                fixed=NO_FIX, message="counting `self.step += 1` in this method"),
        # The callbacks set by one tuple assignment (`self.callbacks, self.printer = [Printer()],
        # Printer()`): each element is its own binding. The tuple target left `self.printer`
        # unknown, the hook was taken for the framework's and guarded by `state.global_step`,
        # which crashed on the `state=None` the loop hands in.
        Invalid(_OWN_CALLBACK.format(call="self.printer.on_step_end", body="print('loss', loss.item())").replace(
                    "self.callbacks = [Printer()]\n        self.printer = Printer()",
                    "self.callbacks, self.printer = [Printer()], Printer()"),
                fixed=_OWN_CALLBACK.format(call="self.printer.on_step_end",
                                           body="if step % 100 == 0:\n            print('loss', loss.item())").replace(
                    "self.callbacks = [Printer()]\n        self.printer = Printer()",
                    "self.callbacks, self.printer = [Printer()], Printer()")),
        # The same with two classes of the file paired with two attributes (`self.a, self.b = A(), B()`).
        Invalid(_KEPT_LOGGER.format(body="print(step, loss.item())", args="step, loss").replace(
                    "self.logger = Logger()", "self.logger, self.other = Logger(), Other()") + _OTHER,
                fixed=_KEPT_LOGGER.format(body="if step % 100 == 0:\n            print(step, loss.item())",
                                          args="step, loss").replace(
                    "self.logger = Logger()", "self.logger, self.other = Logger(), Other()") + _OTHER),
        # In the forward of a model of the file, run by `model(x)` in the loop on every step (it
        # was not reported: the loop's call of the model was no call of forward): no fix, forward
        # has no step counter. Built and moved (`Net().cuda()`, `model = model.cuda()`), wrapped
        # in DDP, or kept by a Trainer (`self.model = Net().to(...)`).
        Invalid(forward_case("self.stats.append(h.mean().item())"), fixed=NO_FIX,
                message="counting `self.step += 1` in `forward`, which `model(x.cuda())` in the training loop runs "
                        "on every step (evaluation calls count too); not fixed: no step counter here"),
        # ... bound to either of two classes of the file (`(Net() if big else Other()).cuda()`): the
        # forward of each runs on the steps of the runs that build it (it was not followed).
        Invalid(forward_case("self.stats.append(h.mean().item())", make="model = (Net() if big else Other()).cuda()")
                + "class Other(nn.Module):\n    pass\n", fixed=NO_FIX, message="in `forward`"),
        Invalid(forward_case("counts = torch.bincount(h.argmax(-1), minlength=2)\nself.stats.append(counts.tolist())",
                             make="model = Net()\nmodel = model.cuda()"), fixed=NO_FIX, message="`.tolist()`"),
        Invalid(forward_case("self.stats.append(h.max().item())",
                             make="model = torch.nn.parallel.DistributedDataParallel(Net().cuda())"),
                fixed=NO_FIX, message="in `forward`"),
        Invalid(FORWARD_TRAINER.format(body="print(mask.sum().item())"), fixed=NO_FIX,
                message="which `self.model(x.cuda(), mask.cuda())` in the training loop runs on every step"),
        # An agent's action, which the environment needs as a Python value on every step (it was
        # advised to read it every 100 steps, which leaves the environment without one): another
        # advice, no fix. Through a plain local name, past a branch that explores at random; as
        # the call's own argument; copied as `.cpu().numpy()`, or indexed from `.tolist()`.
        Invalid(_AGENT.format(act="action = int(q.argmax())", step=_ENV_STEP), fixed=NO_FIX,
                message="the value is needed on the host every step (passed to `env.step`), so an interval "
                        "cannot help; not fixed: to wait less, compute it on the host (a small policy can act "
                        "on a CPU copy of the model), or let one read serve many steps (vectorised environments"),
        Invalid(_AGENT.format(act="if random.random() < 0.1:\n        action = random.randrange(2)\n    else:\n"
                                  "        action = q.argmax().item()", step=_ENV_STEP),
                fixed=NO_FIX, message="(passed to `env.step`)"),
        Invalid(_AGENT.format(act="pass", step="obs, reward, done, info = env.step(q.argmax().item())"),
                fixed=NO_FIX, message="(passed to `env.step`)"),
        Invalid(_AGENT.format(act="action = q.argmax().cpu().numpy()", step=_ENV_STEP), fixed=NO_FIX,
                message="(passed to `env.step`)"),
        Invalid(_AGENT.format(act="action = q.argmax(-1, keepdim=True).tolist()[0]", step="env.step(action=action)"),
                fixed=NO_FIX, message="(passed to `env.step`)"),
        # Not needed on the host: only printed, logged, formatted or kept (a list, a replay memory,
        # a metrics dict), or the previous step's action (read before this step's is made), or
        # handed to a call that also takes a device tensor (the model's own code): the advice
        # stays the logging interval's.
        Invalid(_AGENT.format(act="action = q.argmax().item()", step="print(f'{action}')\n    memory.push(obs, action)"
                              "\n    history.append(action)\n    stats = {'action': action}\n    logger.info('%s', stats)"),
                message="read it under the logging interval (`if step % 100 == 0:`)"),
        # Nor a call whose result is only printed, a class built with it, a test's assertion, a
        # string's format, a tensor's method on a receiver not known to be a tensor.
        Invalid(_AGENT.format(act="action = q.argmax().item()", step="print(vocab.lookup(action))\n    "
                              "buffer.add(Transition(obs, action))\n    self.assertEqual(action, 1)\n    "
                              "title = '{}'.format(action)\n    h = feats.view(1, 2).expand(action, 2)"),
                message="read it under the logging interval"),
        Invalid(_AGENT.format(act="env.step(action)", step="action = q.argmax().item()"),
                message="read it under the logging interval"),
        Invalid(_AGENT.format(act="action = q.argmax().item()", step="q_net(q, action)"),
                message="read it under the logging interval"),
        # A neighbour suppressed with `# trainlint: ignore[TL201]` stays where it is, as with
        # `# noqa: TL201` (only `noqa` in the line's text ended the run: the ignore form moved).
        Invalid(in_training_loop("print('loss', loss.item())\nprint('each step', loss.item())  # trainlint: ignore[TL201]"),
                fixed=in_training_loop("if step % 100 == 0:\n    print('loss', loss.item())\n"
                                       "print('each step', loss.item())  # trainlint: ignore[TL201]")),
        Invalid(in_training_loop("print('loss', loss.item())\nprint('each step', loss.item())  # noqa: TL201"),
                fixed=in_training_loop("if step % 100 == 0:\n    print('loss', loss.item())\n"
                                       "print('each step', loss.item())  # noqa: TL201")),
        # A suppression of another tool (`# noqa: E501`) does not keep a line from moving.
        Invalid(in_training_loop("print('loss', loss.item())\nprint('each step', loss.item())  # noqa: E501"),
                fixed=in_training_loop("if step % 100 == 0:\n    print('loss', loss.item())\n"
                                       "    print('each step', loss.item())  # noqa: E501")),
        # In a `case` body: the guard's body was written one level too shallow (the `match`
        # statement's own indentation was not counted), and the fix did not parse.
        Invalid(in_training_loop("match mode:\n    case 'verbose':\n        print('loss', loss.item())\n"
                                 "    case _:\n        pass"),
                fixed=in_training_loop("match mode:\n    case 'verbose':\n        if step % 100 == 0:\n"
                                       "            print('loss', loss.item())\n    case _:\n        pass")),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        func = node.func
        read = host_read(ctx, node)
        if read is not None:
            target, what = read
            # One finding per chain: `x.cpu().numpy()` is reported at `.cpu()`, and so is
            # `x.cpu().detach().numpy().item()` (pytorch-tabnet: it was reported twice), and
            # `x.to("cpu").numpy()` at `.to("cpu")`.
            if isinstance(func, cst.Attribute) and _sync_in_receiver(ctx, func.value):
                return
        elif isinstance(func, cst.Attribute) and func.attr.value == "get_scale" and not node.args \
                and dotted(func.value) in _scaler_names(ctx):
            # GradScaler.get_scale() is `self._scale.item()` (timm's and HF's "was the step skipped?").
            if waits_per_step(ctx, node):
                self.report(node, f"`{ctx.code(node)}` reads the loss scale from the GPU (`.item()`) on every step; "
                                  f"read it under the logging interval ({interval_guard(ctx, node, self.opts['log-every'])}); to tell a "
                                  f"skipped step, let the scheduler step anyway (float16 skips few steps)")
            return
        elif blocking_host_copy(ctx, node) is not None:
            # `buf.copy_(x)` into a host tensor is `.cpu()` written into a buffer: it waits for x.
            if waits_per_step(ctx, node):
                self.report(node, f"`{ctx.code(func)}(...)` copies a GPU tensor into host memory, which waits for "
                                  f"the GPU on every step; copy it under the logging interval "
                                  f"({interval_guard(ctx, node, self.opts['log-every'])}), or into a pinned buffer "
                                  f"with `non_blocking=True` (and wait for the copy, on an event, before reading it); "
                                  f"not fixed: on the other steps the buffer would keep an older value")
            return
        elif (metric := _plateau_metric(ctx, node)) is not None:
            if waits_per_step(ctx, node) and not ctx.tensors.on_host(metric):
                self.report(node, f"`{ctx.code(node)}`: ReduceLROnPlateau reads the metric with "
                                  f"`float()`, which waits for the GPU on every step; step it where the metric is read "
                                  f"anyway (per epoch, or at the logging interval with `.item()`); not fixed: stepping "
                                  f"less often changes when its patience runs out")
            return
        else:
            return
        # A value known to be in host memory waits for no GPU: a tensor of a batch the loop has not
        # moved yet, a numpy value, a tensor made without a device (Tensors.on_host).
        if not waits_per_step(ctx, node) or ctx.tensors.on_host(target):
            return
        if cross_rank_decision(ctx, node, target):
            # A flag every rank put in, tested to act together on this step (stop, skip a batch a
            # rank ran out of memory on): the collective waits anyway, and no interval can serve.
            return
        consumer = host_consumer(ctx, node)
        if consumer is not None:
            # An agent's action (`env.step(int(q.argmax()))`): read every N steps, the environment
            # would get no action; accumulating on the device gives it none either. What helps is
            # where the value is made, or how many steps one read serves.
            self.report(node, f"{what} waits for the GPU on every step, and the value is needed on the host every "
                              f"step (passed to `{ctx.code(consumer.func)}`), so an interval cannot help; not fixed: "
                              f"to wait less, compute it on the host (a small policy can act on a CPU copy of the "
                              f"model), or let one read serve many steps (vectorised environments: one sync for a "
                              f"batch of actions)")
            return
        fix = None
        parent, added = ctx.parent(node), node
        # `total += loss.item() * x.size(0)`: a sum weighted by the batch size (PyTorch's tutorials).
        while isinstance(parent, cst.BinaryOperation) and isinstance(parent.operator, (cst.Multiply, cst.Divide)) \
                and not ctx.tensors.is_tensor(parent.right if parent.left is added else parent.left):
            parent, added = ctx.parent(parent), parent
        if isinstance(parent, cst.AugAssign) and isinstance(parent.operator, cst.AddAssign) and parent.value is added:
            detached = _detached(target)
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
            detached = _detached(target)
            added_code = ctx.code(detached) if added is node else ctx.code(added).replace(ctx.code(node), ctx.code(detached), 1)
            advice = (f"accumulate with `{total} = {total} + {added_code}` and convert once at the logging interval; "
                      f"not fixed: the fix handles `{total} += ...`")
        elif (test := per_step_test(ctx, node)) is not None:
            # DeiT's `loss_value = loss.item()`, then `if not math.isfinite(loss_value): sys.exit(1)`:
            # read every N steps, the test has no value on the other steps; no guard can fix it.
            header = f"assert {ctx.code(test.test)}" if isinstance(test, cst.Assert) else \
                f"{'if' if isinstance(test, cst.If) else 'while'} {ctx.code(test.test)}:"
            advice = f"its value is tested on every step (`{header}`): {test_advice(ctx, test)}"
            if advice.endswith("logging interval"):
                advice += f" ({interval_guard(ctx, node, self.opts['log-every'])})"
        elif (gathered := gathered_list(ctx, node)) is not None \
                and (gathered.join is not None or what in ("`.item()`", "`float()`")):
            # `losses.append(loss.item())`, then `np.mean(losses)`: read under an interval the
            # list would hold every Nth step, and its mean would mean something else. The values
            # can stay on the device until the mean is taken. No guard is suggested.
            # Also a trainer's `self.losses` averaged in its epoch-end method, and a list returned
            # to a caller that averages it. So for copies joined where the list is used
            # (`preds.append(logits.argmax(1).cpu().numpy())`, then `np.concatenate(preds)` for
            # an accuracy): the tensors can be appended, joined on the device and copied once.
            name = ctx.code(gathered.name)
            where = "" if gathered.returned_by is None else f" where `{gathered.returned_by.name.value}(...)` returns it"
            used = one_line(ctx.code(gathered.use))
            listed = ctx.code(gathered.listed)
            if gathered.join is None:
                detached = ctx.code(_detached(target))
                advice = (f"`{name}` is averaged{where} (`{used}`): append `{detached}` and read the mean once there, "
                          f"`torch.stack({listed}).mean().item()`; read under a logging interval, the mean would "
                          f"cover every Nth step only")
            else:
                # An index or a comparison carries no graph; a loss or logits would keep theirs.
                detached = ctx.code(target if _gradless(target) else _detached(target))
                # The join gave a numpy array, or a tensor in host memory: the copy gives the same.
                copy = ".cpu().numpy()" if ctx.names.qualified(gathered.use.func).startswith("numpy.") else ".cpu()"
                advice = (f"`{name}` is used whole{where} (`{used}`): append `{detached}` and copy it once there, "
                          f"`{gathered.join}({listed}){copy}` (GPU memory then holds them until it is used); read "
                          f"under a logging interval, it would hold every Nth step only")
            advice += f"; not fixed: each use of `{name}` would change with it"
        elif what not in ("`bool()`",) and not what.startswith("`math.") \
                and (logged := framework_log_value(ctx, node)) is not None:
            # `self.log("loss", loss.item())`: Lightning's log takes the tensor itself (it
            # detaches it) and reads it only where its logger writes, every
            # `log_every_n_steps`; a guard would instead leave steps out of what it reduces
            # over the epoch (no guard is suggested). The progress bar reads what it shows at
            # every refresh, though. `log_dict` logs each of its values so.
            log = ctx.code(logged.call.func).removesuffix("_dict")
            advice = (f"read it under the logging interval ({interval_guard(ctx, node, self.opts['log-every'])}), "
                      f"keep it on the device{framework_logging(ctx, node)}")
            bar = logged.prog_bar
            whole = logged.value is node and what in ("`.item()`", "`float()`")
            rounded = logged.rounded
            if not whole:
                # A copy (`.cpu()`), `int()`, arithmetic on the number: say what to log instead. A
                # `round()` of it is left out (a tensor has no `__round__`: TypeError).
                shown = logged.call.deep_replace(node, target) if rounded is None else \
                    logged.call.deep_replace(rounded, rounded.args[0].value.deep_replace(node, target))
                advice = f"pass the tensor itself to `{log}(...)`: `{one_line(ctx.code(shown))}` ({PROG_BAR_CAVEAT})"
            if bar is not None and ctx.literal(bar.value) is not False:
                advice += f"; not fixed: it is shown on the progress bar (`{ctx.code(bar)}`)"
            elif rounded is not None and logged.value is rounded and rounded.args[0].value is node:
                advice += "; not fixed: `round()` rounds it, and the tensor would be logged unrounded"
            elif logged.value is not node:
                advice += (f"; not fixed: the script works the value out from the number "
                           f"(`{one_line(ctx.code(logged.value))}`), and on the tensor it would be worked out in "
                           f"the tensor's dtype")
            elif what == "`int()`":
                advice += "; not fixed: `int()` makes it a whole number, and the tensor would be logged as it is"
            elif not whole:
                advice += f"; not fixed: the fix replaces `.item()` and `float()`, not {what}"
            else:
                fix = self.fix(Applicability.UNSAFE, f"Pass the tensor itself to `{log}(...)`",
                               (node, _as_float_tensor(ctx, target)))
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


def _as_float_tensor(ctx, tensor: cst.BaseExpression) -> cst.BaseExpression | str:
    """The tensor whose `.item()` (or `float()`) Lightning's `self.log` was given, for it to log in
    its place with the same value: a float tensor as it is (a loss, a mean: _floating_tensor), else
    converted with `.float()`, as Lightning converts a Python number (an integer tensor would be
    converted with a warning, where versions convert it at all)."""
    if _floating_tensor(tensor):
        return tensor
    code = ctx.code(tensor)
    atom = isinstance(tensor, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)) or tensor.lpar
    return f"{code}.float()" if atom else f"({code}).float()"


def _plateau_metric(ctx, call: cst.Call) -> cst.BaseExpression | None:
    """The tensor handed to `sched.step(metric)` of a scheduler assigned
    `torch.optim.lr_scheduler.ReduceLROnPlateau(...)` in the file (any import alias): its step
    converts the metric with `float()`. None for any other call, or a metric not known to be a tensor."""
    func = call.func
    if not isinstance(func, cst.Attribute) or func.attr.value != "step":
        return None
    metric = argument(ctx, call, 0, "metrics")
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


def _gradless(expr: cst.BaseExpression) -> bool:
    """A tensor that carries no autograd graph, for certain: an index (`logits.argmax(1)`), a comparison."""
    return isinstance(expr, cst.Comparison) or isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) \
        and expr.func.attr.value in ("argmax", "argmin")


def _is_detach(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "detach" \
        and not expr.args


def _detached(expr: cst.BaseExpression) -> cst.BaseExpression:
    """expr with `.detach()` after it, unless it ends in one."""
    return expr if _is_detach(expr) else cst.Call(func=cst.Attribute(value=expr, attr=cst.Name("detach")))


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


def _sync_in_receiver(ctx, expr: cst.BaseExpression) -> bool:
    """A host read earlier in the method chain that expr ends (`.cpu()`, `.to("cpu")`, `.numpy()`)."""
    while isinstance(expr, (cst.Call, cst.Attribute, cst.Subscript)):
        if isinstance(expr, cst.Call):
            if reads_to_host(ctx, expr):
                return True
            expr = expr.func
        else:
            expr = expr.value
    return False
