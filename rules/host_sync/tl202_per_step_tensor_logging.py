"""TL202 per-step-tensor-logging: `print`/`logging`/f-string/`tqdm.set_postfix`/tracker logging
(`wandb.log`, `add_scalar`) of a tensor on every step."""

from __future__ import annotations

import libcst as cst

from trainlint.rule import NO_FIX, Invalid, Option, Rule, Valid, in_training_loop

from .cases import CLOSURE, HOOK, HOST_BATCH, WRITER, in_accumulation_step
from .guards import guard_statement, interval_guard
from .logged_values import formatted_tensors, is_log_call, is_string, tracker_values
from .syncs import device_tensor, framework_logging, held_tensors, waits_per_step


_TQDM_LOOP = ("for it in {iter}:\n    loss = model(*next(batches))\n    loss.backward()\n    opt.step()\n"
              "    print(f'loss {{loss:.4f}}')\n")
# Gradient accumulation whose other micro-batches leave the loop body from an `else:`.
_ELSE_CONTINUE = ("import torch\nfor i, (x, y) in enumerate(loader):\n    loss = model(x, y) / accum\n    loss.backward()\n"
                  "    if (i + 1) % accum == 0:\n        opt.step()\n{counter}    else:\n        continue\n"
                  "    print(f'loss {{loss:.4f}}')\n")


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


# A class of the file whose methods are named like a logger's: `{method}` keeps the loss ({keep}).
_HISTORY = ("import torch\nclass History:\n    def __init__(self):\n        self.losses = []\n"
            "    def {method}(self, step, loss):\n        {keep}\n")

# torchtune's distillation recipe: a ratio read from its configuration ({cfg}, {ratio}) weighs the
# two losses it logs ({logged}).
_KD_RATIO = ("import argparse\nimport torch\nfrom omegaconf import DictConfig\nclass Recipe:\n"
             "    def __init__(self, cfg{cfg}):\n        self._kd_ratio = {ratio}\n"
             "    def train(self, loader, pbar, num_tokens):\n        for batch in loader:\n"
             "            class_loss, kd_loss = self._loss_step(batch)\n"
             "            loss = (1 - self._kd_ratio) * class_loss + self._kd_ratio * kd_loss\n"
             "            loss.backward()\n            self._optimizer.step()\n"
             "            loss_to_log = (1 - self._kd_ratio) * {logged}\n"
             "            pbar.set_description(f'Loss: {{loss_to_log}}')\n")

# A module constant named like a loss ({value}), shown on every step of a function's loop.
_CONSTANT = ("import torch\nTARGET_LOSS = {value}\ndef train():\n    for step, (x, y) in enumerate(loader):\n"
             "        loss = model(x, y)\n        loss.backward()\n        opt.step()\n"
             "        print(f'target {{TARGET_LOSS}}')\n")

# speechbrain's Brain: a running average that `update_average` keeps as a float ({add} is what
# each step adds to it; {start} what `__init__` starts it at); `self.step` is a counter a
# checkpoint's yaml may set (parsed text holds no tensors).
_AVERAGE = ("import torch\nimport yaml\nclass Brain:\n    def __init__(self, model):\n"
            "        self.model = model.cuda()\n        self.step = 0\n        self.avg_loss = {start}\n"
            "    def update_average(self, loss, avg_loss):\n        if torch.isfinite(loss):\n"
            "            avg_loss -= avg_loss / self.step\n            avg_loss += {add} / self.step\n"
            "        return avg_loss\n"
            "    def fit(self, loader, opt, bar):\n        for batch in loader:\n            self.step += 1\n"
            "            loss = self.model(batch.cuda()).mean()\n            loss.backward()\n            opt.step()\n"
            "            self.avg_loss = self.update_average(loss.detach().cpu(), self.avg_loss)\n"
            "            bar.set_postfix(train_loss=self.avg_loss)\n        self.avg_loss = 0.0\n"
            "    def recover(self, path):\n        with open(path) as f:\n            state = yaml.safe_load(f)\n"
            "        self.step = state['step']\n        self.avg_loss = state['avg_loss']\n")



def _guarded_postfix(code: str) -> str:
    """_AVERAGE with its progress bar line under the fix's interval, on the class's step counter."""
    line = "            bar.set_postfix(train_loss=self.avg_loss)\n"
    return code.replace(line, "            if self.step % 100 == 0:\n    " + line)


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
`print([loss, acc])`, or in a dict or list that a name holds where it is logged, as its function
shows it: `metrics = {"loss": loss}`, `logs = [loss, acc]`, filled by `metrics["acc"] = acc`,
`metrics.update(lr=lr)` or `logs.append(loss)`, then `print(metrics)`, `logger.info(f"{logs}")`,
`pbar.set_postfix(**metrics)`; the finding is the logging call, not the dict, and the
fix guards it as any other; a dict made anew before it is logged, `{k: v.item() for k, v in
metrics.items()}`, is not read) on every step of the hot loop; a name bound by `:=` (`f"{(cur := loss):.4f}"`,
then `print(cur)`) is read as an assigned one, here and in TL201 and TL204. A message of a `raise` or `assert` is not flagged: it is only
formatted when the check fails; nor is one in a branch that leaves the loop for good (ending in
`break`, `return`, `raise` or `sys.exit()`), which runs once. Nor is a value known to be in host
memory, as TL201 reads it: formatting or logging it waits for no GPU (a tensor made without
`device=`, a
tensor of a batch that arrives on the host, read before the loop moves it, and what
`y.sum()` or `torch.bincount(y)` makes of it). Nor is a Python number, whatever its name says:
a name every assignment of which gives one (`current_loss = loss.item()`, `avg = 0.9 * avg + 0.1
* loss.item()`), what the file's own function returns when every `return` gives one, its
parameters holding what the call hands them (`self.avg_loss = self.update_average(loss,
self.avg_loss)` that adds `float(loss) / self.step` to what it is handed), an attribute of
`self` every value of which its class gives is one (a part of what json, yaml or toml parsed
counts, as does a value of a configuration parsed from text: `cfg.get("kd_ratio", 0.5)` of a
`cfg: DictConfig` parameter, an attribute of what argparse's `parse_args()` gives; what
`torch.load` gives does not), and a variable of the module every assignment of
which gives one, read in a function (`TARGET_LOSS = 0.05`; not one a function declares `global`).

Logging a tensor to an experiment tracker is flagged too: `wandb.log({"loss": loss})` (or a
dict a name holds, as above: `log_dict["loss"] = loss`, then `wandb.log(log_dict, step=step)`), a
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
`str(t)` or concatenation (`"loss " + str(loss)`) is reported. A method of an instance of a class
the file defines (`logger = History()`, `self.logger = History()`) is not taken for logging by its
names (`logger.log(step, loss)`): its body is checked instead, as run on every step.

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
above it); a condition that is not about the interval (`rank == 0`, `dist.get_rank() == 0`) is left out only when the
interval is known to be a positive whole number (and a condition of the `if` it joins is not written twice); else under the loop's existing step counter (in a loop nested in an epoch loop, a
name its body increments by 1 that the outer loop never sets anew, `global_step += 1`, before the
loop's index, which restarts every epoch) and the script's logging interval (a name
such as `log_every`, `args.log_interval` or `LOG_EVERY`, in any case, when its value is known to
be a positive whole number, as a literal, an option's default, or an attribute of `self` set to a
literal once, in the class's `__init__`, and nowhere else in the file, also an option of that name the
script's `add_argument` defines and its code never reads; no fix when it is not, as `step % 0` raises; else `log-every`,
default 100), so fewer lines are printed; the per-step logging lines right beside it (TL201's
too) go under the same new `if`, but not one whose own finding is suppressed (`# noqa: TL201`,
`# trainlint: ignore[TL202]`, also on the first line of a call over several, or the file's
`# trainlint: noqa: TL202`): it stays on every step, and ends the run. When those lines are the whole body of a loop over what an
object holds (`for name, p in model.named_parameters():`, a dict's `.items()`), the loop goes under
the `if` instead, unless a name it binds is read after it. A tensor that counts steps (`step_t += 1`) is no
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
hold; nor beside a print whose `end=` is not a newline or a carriage return (`print(f"step {step}", end=" ")`, right
before the line the fix would guard, or the last it guards with a log call after it): it prints half a line that the next print ends,
and guarding one half would print the other on every step (two such prints that both log a
tensor are logging lines side by side, and go under one `if` together).
"""
    valid = [
        # A module constant named like a loss is what the module assigns it: a float, read in the
        # loop's function. It was taken for a tensor by its name.
        Valid(_CONSTANT.format(value="0.05")),
        # A value of a configuration parsed from text (an OmegaConf DictConfig parameter, what
        # argparse parsed) holds no tensor: weighing `.item()` floats with it gives a float
        # (torchtune's `loss_to_log`, reported).
        Valid(_KD_RATIO.format(cfg=": DictConfig", ratio="cfg.get('kd_ratio', 0.5)", logged="class_loss.item()")),
        Valid(_KD_RATIO.format(cfg="", ratio="argparse.ArgumentParser().parse_args().kd_ratio",
                               logged="class_loss.item()")),
        # A class of the file named like a tracker (`writer = Writer()`, its `add_scalar` keeps
        # the tensor in a list) in a module importing SummaryWriter: judged by its name, it was
        # taken for TensorBoard's and reported.
        Valid("from torch.utils.tensorboard import SummaryWriter\nclass Writer:\n    def __init__(self):\n"
              "        self.rows = []\n    def add_scalar(self, tag, value, step):\n        self.rows.append(value)\n"
              "writer = Writer()\n" + in_training_loop("writer.add_scalar('loss', loss, step)")),
        # A method of an instance of a class of the file (`logger = History()`, `self.logger =
        # History()`) is no logging library's, whatever its names: it was reported as formatting
        # the loss, and the fix put `logger.log(step, loss)` under an interval, keeping 3 losses of
        # 250. Its body is read through the call (an invalid case below).
        Valid(_HISTORY.format(method="log", keep="self.losses.append(loss.detach())") + "logger = History()\n"
              + in_training_loop("logger.log(step, loss)").partition("\n")[2]),
        Valid(_HISTORY.format(method="info", keep="self.losses.append(loss.detach())")
              + "class Trainer:\n    def __init__(self):\n        self.logger = History()\n"
              "    def fit(self, loader):\n        for step, (x, y) in enumerate(loader):\n"
              "            loss = model(x, y)\n            loss.backward()\n            opt.step()\n"
              "            self.logger.info(step, loss)\n"),
        # Trainer's `self.log_metrics(i, loss)` runs Trainer.log_metrics; Evaluator's method of the
        # same name, called once per epoch on an evaluator, logged every step (matched by name alone).
        Valid("import torch\nclass Evaluator:\n    def log_metrics(self, step, loss):\n        print(f'step {step} loss {loss:.4f}')\n"
              "class Trainer:\n    def __init__(self):\n        self.model = torch.nn.Linear(4, 1).cuda()\n"
              "        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)\n"
              "    def log_metrics(self, step, loss):\n        self.hist.append(loss.detach())\n"
              "    def fit(self, evaluator):\n        for ep in range(3):\n            for i in range(4):\n"
              "                loss = self.model(torch.randn(8, 4).cuda()).sum()\n"
              "                loss.backward()\n                self.opt.step()\n                self.log_metrics(i, loss)\n"
              "            evaluator.log_metrics(ep, loss.detach())\n"),
        # A float the file's own method returns: every value the attribute is given (in `__init__`,
        # per step through `update_average`, from a yaml checkpoint) is a number, and the method
        # adds numbers to the one it is handed (speechbrain's `avg_train_loss`, reported before).
        Valid(_AVERAGE.format(start="0.0", add="float(loss)")),
        Valid(_AVERAGE.format(start="None", add="loss.item()")),
        # What `.to("cpu")` copied is in host memory, as what `.cpu()` copied: the copy is TL201's
        # (it was reported here as a device tensor formatted).
        Valid(in_training_loop("print('loss', loss.to('cpu'))")),
        Valid("import torch\nhost = torch.device('cpu')\n" + in_training_loop("print(f'{loss.to(host)}')").partition("\n")[2]),
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
        # After `if step > 0: continue` the rest runs on the first step only (read as per step).
        Valid(in_training_loop("if step > 0:\n    continue\nprint(f'loss {loss:.3f}')")),
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
        Valid(CLOSURE.format(optimizer="LBFGS", read="print('eval', loss)", closure="closure")),
        # Values in host memory wait for no GPU (as TL201 reads them): a batch field the loop has
        # not moved yet, what a torch function makes of it, a tensor made without a device.
        Valid(HOST_BATCH.format(read="print(f'labels {y.sum()}')")),
        Valid(HOST_BATCH.format(read="print(f'class counts {torch.bincount(y, minlength=3)}')")),
        Valid(HOST_BATCH.format(read="noise = torch.randn(3)\n    print(f'noise {noise}')")),
        Valid(HOST_BATCH.format(read="desc = f'labels {y.sum()}'\n    pbar.set_description(desc)")),
        Valid("import wandb\n" + HOST_BATCH.format(read="wandb.log({'labels': y.sum()}, step=step)")),
        # Dict and list displays of numbers, under the logging interval, or after the loop.
        Valid(in_training_loop("lossf = loss.item() if step % 10 == 0 else lossf\npbar.set_postfix({'loss': f'{lossf:.3f}'})\n"
                               "print([lossf, step])\nlogger.info({'lr': opt.param_groups[0]['lr']})")),
        Valid(in_training_loop("if step % 100 == 0:\n    pbar.set_postfix({'loss': f'{loss:.3f}'})\n    print([loss, step])")),
        Valid(in_training_loop("pass") + "print([loss, acc])\nlogger.info({'loss': f'{loss:.3f}'})\n"),
        # A dict or list bound to a name holds no tensor to format when its values are numbers
        # (`.item()`), when it is logged under the interval, when a later assignment converts it
        # (`{k: v.item() ...}`, or a display of numbers), or when its tensors are on the host.
        Valid(in_training_loop("metrics = {'loss': loss.item(), 'lr': lr}\nmetrics['acc'] = acc.item()\nprint(metrics)")),
        Valid(in_training_loop("metrics = {'loss': loss}\nif step % 100 == 0:\n    print(metrics)")),
        Valid(in_training_loop("metrics = {'loss': loss}\nmetrics = {k: v.item() for k, v in metrics.items()}\n"
                               "logger.info(metrics)")),
        Valid(in_training_loop("logs = [loss]\nlogs = [loss.item()]\nprint(logs)")),
        Valid(HOST_BATCH.format(read="stats = {'labels': y.sum()}\n    print(stats)")),
        # ... nor does one whose tensors are put in after it is logged (the next step's dict is new).
        Valid(in_training_loop("metrics = {'lr': lr}\nprint(metrics)\nmetrics['loss'] = loss")),
        # add_histogram of a value not known to be a tensor, under the interval, or after the loop.
        Valid(WRITER + in_training_loop("writer.add_histogram('lr', lrs, step)")),
        Valid(WRITER + in_training_loop("if step % 100 == 0:\n    writer.add_histogram('out', out.detach(), step)")),
        Valid(WRITER + in_training_loop("pass") + "writer.add_histogram('out', loss.detach(), step)\n"),
        # Parameters of a module never moved to a device are on the host (no wait); nor is what
        # `parameters()` of an object the file does not show to be a module gives known (a call's
        # result, a class of the file that is no nn.Module), though it is "moved".
        Valid("import torch\nmodel = torch.nn.Linear(2, 1)\n" + WRITER
              + in_training_loop(_HISTOGRAMS + "\nprint(model.weight)")),
        Valid("import torch\nsched = make_schedule().cuda()\nclass Knobs:\n    def parameters(self):\n"
              "        return [0.1, 0.2]\nknobs = Knobs()\nknobs.cuda()\n" + WRITER + in_training_loop(
                  "for p in sched.parameters():\n    writer.add_histogram('s', p, step)\n"
                  "for name, p in knobs.named_parameters():\n    writer.add_histogram(name, p, step)\nprint(knobs.weight)")),
        # Throttled by the clock: `if <clock>() - x > N:` whose body sets x from the same clock runs
        # once per N seconds, whatever x is called. Only `last_*` names were taken for an interval:
        # this was reported and the fix nested `if step % 100 == 0:` inside it (about 1% of the
        # windows printed, as `tic` is reset outside the new guard).
        Valid("import time\ntic = time.time()\n" + in_training_loop(
            "if time.time() - tic > 30:\n    print(f'step {step} loss {loss:.4f}')\n    tic = time.time()")),
        Valid("import time\nt0 = time.monotonic()\n" + in_training_loop(
            "if 30 <= time.monotonic() - t0:\n    print(f'loss {loss:.4f}')\n    t0 = time.monotonic()")),
        # A name bound by `:=` to a Python number is one, as an assigned one is (TL201 reads it).
        Valid(in_training_loop("print(f'loss {(v := loss.item()):.4f}')\nprint(v)")),
        Valid(in_training_loop("avg = 0.9 * (v := loss.item()) + 0.1 * v\nprint(f'{avg:.3f}')")),
    ]
    invalid = [
        # A tensor bound by `:=` is read like an assigned one: formatted in place and printed later
        # (neither was reported).
        Invalid(in_training_loop("print(f'loss {(cur := loss):.4f}')"),
                fixed=in_training_loop("if step % 100 == 0:\n    print(f'loss {(cur := loss):.4f}')")),
        # A logging line beside it that binds a name read later stays (the read would be stale).
        Invalid(in_training_loop("print(f'loss {loss:.4f}')\nprint(f'{(cur := loss.detach()):.4f}')\nhist.append(cur)")
                + "print(hist)\n",
                fixed=in_training_loop("if step % 100 == 0:\n    print(f'loss {loss:.4f}')\n"
                                       "print(f'{(cur := loss.detach()):.4f}')\nhist.append(cur)") + "print(hist)\n"),
        Invalid(in_training_loop("history.append((cur := loss.detach()))\nprint(cur)"),
                fixed=in_training_loop("history.append((cur := loss.detach()))\nif step % 100 == 0:\n    print(cur)")),
        # ... a tensor on the device when the module makes one.
        Invalid(_CONSTANT.format(value="torch.tensor(0.05, device='cuda')"), message="`TARGET_LOSS`"),
        # ... but a float divided by a tensor is a tensor (torchtune's single-device recipe divides
        # by the token count), and a configuration not known to be parsed text may hold anything.
        Invalid(_KD_RATIO.format(cfg=": DictConfig", ratio="cfg.get('kd_ratio', 0.5)",
                                 logged="class_loss.item() / num_tokens.sum()"), message="`loss_to_log`"),
        Invalid(_KD_RATIO.format(cfg="", ratio="cfg.get('kd_ratio', 0.5)", logged="class_loss.item()"),
                message="`loss_to_log`"),
        # ... but a tensor added to it, or a tensor it starts from, makes the average a tensor.
        *(Invalid(code, fixed=_guarded_postfix(code)) for code in (
            _AVERAGE.format(start="0.0", add="loss.detach()"),
            _AVERAGE.format(start="torch.zeros((), device='cuda')", add="float(loss)"),
            # torch.load may give a tensor, where yaml gives numbers.
            _AVERAGE.format(start="0.0", add="float(loss)").replace("yaml.safe_load(f)", "torch.load(f)"))),
        # ... a method of such a class that formats the loss is reported where it does, in its body.
        Invalid(_HISTORY.format(method="log", keep="print(f'loss {loss:.4f}')") + "logger = History()\n"
                + in_training_loop("logger.log(step, loss)").partition("\n")[2],
                fixed=_HISTORY.format(method="log", keep="if step % 100 == 0:\n            print(f'loss {loss:.4f}')")
                + "logger = History()\n" + in_training_loop("logger.log(step, loss)").partition("\n")[2]),
        # A parameter of a module on the device, logged every step (a histogram of each weight: a
        # copy of the whole layer), or a layer's weight printed: parameters were not known as
        # tensors, so neither was reported. The loop over the parameters goes under the guard (the
        # guard went inside it, and the steps between logs still walked every parameter to skip it).
        Invalid(_LINEAR_ON_DEVICE + WRITER + in_training_loop(_HISTOGRAMS),
                fixed=_LINEAR_ON_DEVICE + WRITER + in_training_loop(
                    "if step % 100 == 0:\n    for name, p in model.named_parameters():\n"
                    "        writer.add_histogram(name, p, step)"),
                message="Logging tensor `p` with `writer.add_histogram()`"),
        # ... not a loop whose names are read after it: the guard goes inside, as before.
        Invalid(_LINEAR_ON_DEVICE + WRITER + in_training_loop(_HISTOGRAMS + "\nlast = name"),
                fixed=_LINEAR_ON_DEVICE + WRITER + in_training_loop(
                    "for name, p in model.named_parameters():\n    if step % 100 == 0:\n"
                    "        writer.add_histogram(name, p, step)\nlast = name")),
        # A later loop binding the same names reads its own: the loop still goes under the guard,
        # with both of its logging lines.
        Invalid(_LINEAR_ON_DEVICE + WRITER + in_training_loop(
                    "for name, p in model.named_parameters():\n    writer.add_histogram(name, p, step)\n"
                    "    writer.add_histogram(name + '/grad', p.grad, step)\nfor name, p in model.named_parameters():\n"
                    "    p.grad = None"),
                fixed=_LINEAR_ON_DEVICE + WRITER + in_training_loop(
                    "if step % 100 == 0:\n    for name, p in model.named_parameters():\n"
                    "        writer.add_histogram(name, p, step)\n        writer.add_histogram(name + '/grad', p.grad, step)\n"
                    "for name, p in model.named_parameters():\n    p.grad = None")),
        # A layer's weight printed.
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
        # ... or in a dict or list bound to a name, then logged (they were not reported): the
        # finding is the logging call, where the wait is, and that call goes under the interval.
        Invalid(in_training_loop("metrics = {'loss': loss, 'lr': lr}\nprint(metrics)"),
                fixed=in_training_loop("metrics = {'loss': loss, 'lr': lr}\nif step % 100 == 0:\n    print(metrics)"),
                message="Formatting tensor `loss` (in `metrics`)"),
        Invalid(in_training_loop("logs = [loss, acc]\nlogger.info(logs)"),
                fixed=in_training_loop("logs = [loss, acc]\nif step % 100 == 0:\n    logger.info(logs)")),
        Invalid(in_training_loop("metrics = {'lr': lr}\nmetrics['loss'] = loss\npbar.set_postfix(**metrics)"),
                fixed=in_training_loop("metrics = {'lr': lr}\nmetrics['loss'] = loss\nif step % 100 == 0:\n"
                                       "    pbar.set_postfix(**metrics)")),
        Invalid(in_training_loop("logs = []\nlogs.append(loss.detach())\nprint(f'step {step}: {logs}')"),
                fixed=in_training_loop("logs = []\nlogs.append(loss.detach())\nif step % 100 == 0:\n"
                                       "    print(f'step {step}: {logs}')")),
        # A string made outside a logging call gets no fix, as for a tensor formatted there.
        Invalid(in_training_loop("stats = dict(loss=loss)\ndesc = f'{stats}'\npbar.set_description(desc)"),
                fixed=NO_FIX, message="Formatting tensor `loss` (in `stats`)"),
        # add_histogram copies the whole tensor to the host (it was not reported); with a step it is
        # guarded as add_scalar is, and without one it is not fixed (the x-axis would squeeze).
        Invalid(WRITER + in_training_loop("writer.add_histogram('out', out.detach(), step)").replace("    loss = model", "    out = model(x)\n    loss = model"),
                fixed=WRITER + in_training_loop("if step % 100 == 0:\n    writer.add_histogram('out', out.detach(), step)").replace(
                    "    loss = model", "    out = model(x)\n    loss = model"),
                message="with `writer.add_histogram()`"),
        Invalid(WRITER + in_training_loop("for name, p in model.named_parameters():\n    writer.add_histogram(name, p.grad)"),
                fixed=NO_FIX),
        # A tensor turned into text by concatenation, or a method of a parameter (`.norm()`).
        Invalid(in_training_loop("print('loss ' + str(loss))"), message="Formatting tensor `loss`"),
        Invalid(in_training_loop("print('w', model.weight.norm())")),
        # ... but once the loop has moved it, the batch field is on the device.
        Invalid(HOST_BATCH.format(read="print(f'x {x.sum()}')"),
                fixed=HOST_BATCH.format(read="if step % 100 == 0:\n        print(f'x {x.sum()}')"),
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
        Invalid(HOOK.format(base="L.LightningModule", hook="training_step", read="loss").replace(
                    "self.history.append(loss)", "print('loss', loss)"),
                fixed=HOOK.format(base="L.LightningModule", hook="training_step", read="loss").replace(
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
        Invalid(WRITER + in_training_loop("writer.add_scalar('loss', loss, step)"),
                fixed=WRITER + in_training_loop("if step % 100 == 0:\n    writer.add_scalar('loss', loss, step)")),
        # A writer known by its name alone (made elsewhere) in a module importing SummaryWriter:
        # the name's words, camelCase as well as snake_case, say TensorBoard.
        Invalid("from torch.utils.tensorboard import SummaryWriter\ntbWriter = make_writer()\n"
                + in_training_loop("tbWriter.add_scalar('loss', loss, step)"),
                fixed="from torch.utils.tensorboard import SummaryWriter\ntbWriter = make_writer()\n"
                + in_training_loop("if step % 100 == 0:\n    tbWriter.add_scalar('loss', loss, step)")),
        Invalid(_ACCELERATOR + in_training_loop("accelerator.log({'train_loss': loss}, step=step)"),
                fixed=_ACCELERATOR + in_training_loop("if step % 100 == 0:\n"
                                                      "    accelerator.log({'train_loss': loss}, step=step)")),
        Invalid(_FABRIC_LOGGERS + in_training_loop("metrics = {'loss': loss, 'step': step}\n"
                                                   "fabric.log_dict(metrics, step=step)"),
                fixed=_FABRIC_LOGGERS + in_training_loop("metrics = {'loss': loss, 'step': step}\n"
                                                         "if step % 100 == 0:\n    fabric.log_dict(metrics, step=step)")),
        # A tracker's dict filled by item assignment or `update` (they were not reported).
        Invalid("import wandb\n" + in_training_loop("log_dict = {}\nlog_dict['loss'] = loss\nwandb.log(log_dict, step=step)"),
                fixed="import wandb\n" + in_training_loop("log_dict = {}\nlog_dict['loss'] = loss\nif step % 100 == 0:\n"
                                                           "    wandb.log(log_dict, step=step)"),
                message="Logging tensor `loss` (in `log_dict`) with `wandb.log()`"),
        Invalid(_ACCELERATOR + in_training_loop("metrics = {'lr': lr}\nmetrics.update(loss=loss)\n"
                                                "accelerator.log(metrics, step=step)"),
                fixed=_ACCELERATOR + in_training_loop("metrics = {'lr': lr}\nmetrics.update(loss=loss)\n"
                                                      "if step % 100 == 0:\n    accelerator.log(metrics, step=step)")),
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
        Invalid(CLOSURE.format(optimizer="SGD", read="print('eval', loss)", closure="closure"), fixed=NO_FIX),
        # On all steps but one in N: reported; no interval inside it (`step % 100 == 0` under
        # `step % 50 != 0` would print on no step at all).
        Invalid(in_training_loop("if step % 50 != 0:\n    print('loss', loss)"), fixed=NO_FIX),
        # ... and after `if step % 50 == 0: continue`, which leaves on one step in N only.
        Invalid(in_training_loop("if step % 50 == 0:\n    continue\nprint('loss', loss)"), fixed=NO_FIX),
        # ... and after `if step == 0: continue`, which leaves on one step only (it hid the rest).
        Invalid(in_training_loop("if step == 0:\n    continue\nprint(f'loss {loss:.4f}')"),
                fixed=in_training_loop("if step == 0:\n    continue\nif step % 100 == 0:\n    print(f'loss {loss:.4f}')")),
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
        # The test shown without the parentheses that spread it over lines where it stands (the
        # message showed `if (step % ... and cfg.is_rank_zero):`).
        Invalid(_own_test("(\n    step % cfg.log_every_n_steps == 0\n    and cfg.is_rank_zero\n)"),
                fixed=_own_test("(\n    step % cfg.log_every_n_steps == 0\n    and cfg.is_rank_zero\n)", joined=True),
                message="(`if step % cfg.log_every_n_steps == 0 and cfg.is_rank_zero:`)"),
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
        # After `continue` on the micro-batches of gradient accumulation, with no counter of
        # optimizer steps: the advice named `step`, "where no counter of the loop was found", though
        # the loop counts `i` (whose interval test there may hold on no step).
        Invalid("import torch\nfor i, (x, y) in enumerate(loader):\n    (model(x, y) / accum).backward()\n"
                "    if (i + 1) % accum != 0:\n        continue\n    opt.step()\n    print(f'loss {loss:.3f}')\n",
                fixed=NO_FIX, message="(`if opt_step % 100 == 0:`, counting optimizer steps with `opt_step += 1`"),
        # No counter of the loop, and the function's `step` is another loop's (a PPO update after
        # its rollout loop): the advice named `step`, which holds the rollout's last index there.
        Invalid("import torch\ndef update(n, batch_size, mb):\n    for step in range(n):\n        collect(step)\n"
                "    for start in range(0, batch_size, mb):\n        loss = model(start)\n        loss.backward()\n"
                "        opt.step()\n        print(f'loss {loss:.3f}')\n",
                fixed=NO_FIX, message="(`if train_step % 100 == 0:`, counting `train_step` where no counter of the loop "
                                      "was found (`step` holds something else here)"),
        # The same at a script's top level (its rollout loop `for step in range(128):` before an
        # update loop with no counter): the advice named `step`, the rollout's last index there.
        Invalid("import torch\nfor step in range(128):\n    collect(step)\nfor start in range(0, batch_size, mb):\n"
                "    loss = model(start)\n    loss.backward()\n    opt.step()\n    print(f'loss {loss:.3f}')\n",
                fixed=NO_FIX, message="(`if train_step % 100 == 0:`, counting `train_step` where no counter of the loop "
                                      "was found (`step` holds something else here)"),
        # A tensor that counts steps is no counter: `if step_t % 10 == 0:` reads it every step.
        Invalid("import torch\nstep_t = torch.zeros((), dtype=torch.long, device='cuda')\nlog_every = 10\n"
                "for batch in loader:\n    loss = model(batch)\n    loss.backward()\n    opt.step()\n    step_t += 1\n"
                "    print(f'loss {loss:.3f}')\n", fixed=NO_FIX, message="no counter of the loop was found"),
        # A clock test whose `if` does not reset the start (or resets it from another clock) holds on
        # every step once the time has passed: still per step.
        Invalid("import time\nt0 = time.time()\n" + in_training_loop(
                    "if time.time() - t0 > 30:\n    print(f'loss {loss:.4f}')"),
                fixed="import time\nt0 = time.time()\n" + in_training_loop(
                    "if time.time() - t0 > 30 and step % 100 == 0:\n    print(f'loss {loss:.4f}')")),
        Invalid("import time\nt0 = time.time()\n" + in_training_loop(
                    "if time.time() - t0 > 30:\n    print(f'loss {loss:.4f}')\n    t0 = time.perf_counter()"),
                message="Formatting tensor `loss`"),
        # In a loop nested in the epoch loop, a counter that keeps growing across epochs
        # (`global_step += 1`) is the one to test: `i % 100` held at `i == 0` only, once an epoch.
        Invalid("import torch\nglobal_step = 0\nfor epoch in range(10):\n    for i in range(50):\n"
                "        loss = model(x)\n        loss.backward()\n        opt.step()\n        global_step += 1\n"
                "        print(f'loss {loss:.4f}')\n",
                fixed="import torch\nglobal_step = 0\nfor epoch in range(10):\n    for i in range(50):\n"
                "        loss = model(x)\n        loss.backward()\n        opt.step()\n        global_step += 1\n"
                "        if global_step % 100 == 0:\n            print(f'loss {loss:.4f}')\n"),
        # ... not one the epoch loop sets anew (it restarts as the index does), nor a loop's own
        # interval test of its index, which stays the guard.
        Invalid("import torch\nfor epoch in range(10):\n    n = 0\n    for i in range(50):\n"
                "        loss = model(x)\n        loss.backward()\n        opt.step()\n        n += 1\n"
                "        print(f'loss {loss:.4f}')\n",
                message="(`if i % 100 == 0:`)"),
        Invalid("import torch\nglobal_step = 0\nfor epoch in range(10):\n    for i in range(50):\n"
                "        loss = model(x)\n        loss.backward()\n        opt.step()\n        global_step += 1\n"
                "        print(f'loss {loss:.4f}')\n        if i % 10 == 0:\n            print('at', i)\n",
                message="(`if i % 10 == 0:`)"),
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
        # A progress line (`end='\\r'`) is whole on its own: the next print starts over it.
        # It was taken for half a line ("prints its line in two calls") and got no fix.
        Invalid(in_training_loop("print(f'step {step} loss {loss:.4f}', end='\\r')\nprint('lr', lr)"),
                fixed=in_training_loop("if step % 100 == 0:\n    print(f'step {step} loss {loss:.4f}', end='\\r')\n"
                                       "print('lr', lr)")),
        Invalid(in_training_loop("print(f'step {step}', end='\\r')\nprint(f'loss {loss:.4f}')"),
                fixed=in_training_loop("print(f'step {step}', end='\\r')\nif step % 100 == 0:\n"
                                       "    print(f'loss {loss:.4f}')")),
        # A line continued by the next print (`end=''`) still gets none.
        Invalid(in_training_loop("print(f'loss {loss:.4f}', end='')\nprint(' lr', lr)"),
                fixed=NO_FIX, message="prints its line in two calls"),
        # Both halves log the tensor: they move under one guard together.
        Invalid(in_training_loop("acc = (out - y).abs().mean()\nprint(f'loss {loss:.3f}', end=' ')\n"
                                 "print(f'acc {acc:.3f}')"),
                fixed=in_training_loop("acc = (out - y).abs().mean()\nif step % 100 == 0:\n"
                                       "    print(f'loss {loss:.3f}', end=' ')\n    print(f'acc {acc:.3f}')")),
        # A neighbour suppressed on the first line of a multi-line print, either form, stays.
        Invalid(in_training_loop("print(f'loss {loss:.3f}')\nprint(  # trainlint: ignore[TL202]\n    f'each {loss:.3f}')"),
                fixed=in_training_loop("if step % 100 == 0:\n    print(f'loss {loss:.3f}')\n"
                                       "print(  # trainlint: ignore[TL202]\n    f'each {loss:.3f}')")),
        Invalid(in_training_loop("print(f'loss {loss:.3f}')\nprint(  # noqa: TL202\n    f'each {loss:.3f}')"),
                fixed=in_training_loop("if step % 100 == 0:\n    print(f'loss {loss:.3f}')\n"
                                       "print(  # noqa: TL202\n    f'each {loss:.3f}')")),
        Invalid(in_training_loop("print(f'each {loss:.3f}')  # trainlint: ignore[TL2]\nprint(f'loss {loss:.3f}')"),
                fixed=in_training_loop("print(f'each {loss:.3f}')  # trainlint: ignore[TL2]\nif step % 100 == 0:\n"
                                       "    print(f'loss {loss:.3f}')")),
        # ... and TL201's log line in a file that suppresses TL201 (`# trainlint: noqa: TL201`).
        Invalid("# trainlint: noqa: TL201\n" + in_training_loop("print(f'loss {loss:.3f}')\nprint('each', loss.item())"),
                fixed="# trainlint: noqa: TL201\n" + in_training_loop(
                    "if step % 100 == 0:\n    print(f'loss {loss:.3f}')\nprint('each', loss.item())")),
        # In a `case` body (the guard's body was one level too shallow: the fix did not parse).
        Invalid(in_training_loop("match mode:\n    case 'verbose':\n        print(f'loss {loss:.3f}')"),
                fixed=in_training_loop("match mode:\n    case 'verbose':\n        if step % 100 == 0:\n"
                                       "            print(f'loss {loss:.3f}')")),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        if not is_log_call(ctx, node):
            self._check_tracker(node)
            self._check_synced_log(node)
            return
        values = [v for arg in node.args for v in formatted_tensors(ctx, arg.value)]
        if not values or not waits_per_step(ctx, node):
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
        tracker = tracker_values(ctx, node)
        if tracker is None:
            return
        values = [v for v in tracker.values if device_tensor(ctx, v)]
        if not values or not waits_per_step(ctx, node):
            return
        # Without an explicit step, the tracker numbers what it is given: logging every N steps
        # would squeeze the x-axis N times. No fix then.
        fix = guard_statement(self, node, self.opts["log-every"]) if tracker.step else None
        self.report(
            node,
            f"Logging tensor `{ctx.code(values[0])}`{_held_in(ctx, tracker.container)} with `{ctx.code(node.func)}()` "
            f"copies it to the host and waits "
            f"for the GPU on every step; log it every N steps ({interval_guard(ctx, node, self.opts['log-every'])})",
            fix,
        )

    def visit_FormattedString(self, node: cst.FormattedString) -> None:
        self._check_formatting(node)

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if isinstance(node.operator, cst.Modulo) and is_string(node.left):
            self._check_formatting(node)

    def _check_formatting(self, node: cst.BaseExpression) -> None:
        """A string built from a tensor outside a logging call (`desc = f"loss {loss:.3f}"`):
        reported without a fix, since the name it is assigned to is used later."""
        ctx = self.ctx
        if not waits_per_step(ctx, node) or self._inside_logging_or_error(node):
            return
        values = list(formatted_tensors(ctx, node))
        if values:
            self._report(node, values[0], None)

    def _inside_logging_or_error(self, node: cst.CSTNode) -> bool:
        """Inside a logging call (reported there), or a `raise`/`assert` message (only on failure)."""
        for anc in self.ctx.index.ancestors(node):
            if isinstance(anc, cst.Call) and is_log_call(self.ctx, anc):
                return True
            if isinstance(anc, (cst.Raise, cst.Assert)):
                return True
            if isinstance(anc, (cst.BaseStatement, cst.FunctionDef, cst.Lambda)):
                return False
        return False

    def _report(self, node: cst.CSTNode, value: cst.BaseExpression, fix) -> None:
        ctx, container = self.ctx, None
        if not device_tensor(ctx, value):  # a dict or list that holds one (formatted_tensors)
            container, value = value, held_tensors(ctx, value)[0]
        self.report(
            node,
            f"Formatting tensor `{ctx.code(value)}`{_held_in(ctx, container)} waits for the GPU on every step; log it "
            f"every N steps ({interval_guard(ctx, node, self.opts['log-every'])}){framework_logging(ctx, node)}",
            fix,
        )


def _held_in(ctx, container: cst.BaseExpression | None) -> str:
    """Where the reported tensor is, when the call logs a dict or list that holds it: the call
    (where the wait is, and what the fix guards) shows only the container's name."""
    return f" (in `{ctx.code(container)}`)" if container is not None else ""
