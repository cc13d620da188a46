"""TL203 per-step-device-sync-call: `torch.cuda.synchronize()`, `empty_cache()` or memory statistics on
every step."""

from __future__ import annotations

import re

import libcst as cst

from trainlint.analysis.loops import CALL_DEPTH
from trainlint.analysis.names import bound_names
from trainlint.diagnostics import Applicability
from trainlint.rule import NO_FIX, Invalid, Option, Rule, Valid, in_training_loop

from .guards import guard_statement, interval_guard, unparenthesized
from .syncs import on_accelerator, side_effect_free


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


# Peak statistics (`reset_peak_memory_stats` resets them) and the reads that report them.
_PEAK_RESETS = frozenset({"torch.cuda.reset_peak_memory_stats", "torch.accelerator.reset_peak_memory_stats"})
_PEAK_READS = frozenset({"torch.cuda.max_memory_allocated", "torch.cuda.max_memory_reserved", "torch.cuda.memory_stats",
                         "torch.cuda.memory_summary", "torch.accelerator.max_memory_allocated",
                         "torch.accelerator.max_memory_reserved", "torch.accelerator.memory_stats"})


def _peak_read_left(rule, reset: cst.Call, qn: str, joins) -> cst.Call | None:
    """For a per-step reset of the peak statistics, a read of the peaks on every step of the same
    loop (`peaks.append(torch.cuda.max_memory_allocated())`) that its own fix would not put under
    the interval (guard_statement: the list is read after the loop): the reset must not move
    alone, or that read would report the peak of N steps. None when every such read moves too
    (in the reset's own group, or by its own fix, under the same test) or there is none."""
    if qn not in _PEAK_RESETS:
        return None
    ctx = rule.ctx
    loop, scope = ctx.loops.innermost_loop(reset), ctx.index.enclosing_function(reset)
    if loop is None:
        return None
    for call in ctx.index.nodes(cst.Call):
        if call is reset or _device_sync_name(ctx, call) not in _PEAK_READS or ctx.loops.innermost_loop(call) is not loop \
                or ctx.index.enclosing_function(call) is not scope or not ctx.is_per_step(call):
            continue
        if guard_statement(rule, call, rule.opts["log-every"], joins=joins) is None:
            return call
    return None


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
# A subclass's override of a method the base class's loop calls on every step.
_OVERRIDE = ("import torch\nclass Base:\n    def __init__(self):\n        self.model = torch.nn.Linear(4, 1).cuda()\n"
             "        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)\n"
             "    def after_step(self):\n        pass\n"
             "    def fit(self):\n        for i in range(10):\n            self.model(torch.randn(8, 4).cuda()).sum().backward()\n"
             "            self.opt.step()\n            self.after_step()\n"
             "class Verbose(Base):\n    def after_step(self):\n        {sync}\n")
_SYNC_HELPER = ("import time\nimport torch\ndef cuda_sync():\n    torch.cuda.synchronize()\n"
                "for x in loader:\n    model(x).sum().backward()\n    opt.step()\n    {loop}\n")
# A trainer whose loop calls a method of the logger it keeps on itself.
_KEPT_LOGGER = ("import torch\nclass Logger:\n    def on_step_end(self, step, loss):\n        print(step){sync}\n"
                "class Trainer:\n    def __init__(self):\n        self.model = torch.nn.Linear(8, 1).cuda()\n"
                "        self.logger = Logger()\n    def fit(self, x):\n        for step in range(10):\n"
                "            loss = self.model(x).mean()\n            loss.backward()\n            self.opt.step()\n"
                "            self.logger.on_step_end(step, loss)\n")


# A meter whose `tick` reads the clock ({test}), called by the loop after a synchronize ({call}).
_METER = ("import time\nimport torch\nclass Meter:\n    def __init__(self):\n        self.t0 = time.time()\n"
          "    def tick(self, step):\n        if {test}:\n            t1 = time.time()\n"
          "            print(f'step {{step}}: {{(t1 - self.t0) * 1000:.1f}} ms')\n            self.t0 = t1\n"
          "meter = Meter()\nfor step, x in enumerate(loader):\n    model(x).sum().backward()\n    opt.step()\n"
          "    torch.cuda.synchronize()\n    {call}\n")
_KEPT_METER = _METER.replace("meter = Meter()\nfor step, x in enumerate(loader):\n    model(x).sum().backward()\n"
                             "    opt.step()\n    torch.cuda.synchronize()\n    {call}\n",
                             "class Trainer:\n    def __init__(self):\n        self.meter = Meter()\n"
                             "    def fit(self, loader):\n        for step, x in enumerate(loader):\n"
                             "            model(x).sum().backward()\n            opt.step()\n"
                             "            torch.cuda.synchronize()\n            self.meter.tick(step)\n")


# Timing printed every 5 steps, with a synchronize on every step before the interval's `if`.
_INTERVAL_TIMING = """import time
import torch
t0 = time.time()
for step, (x, y) in enumerate(loader):
    loss = model(x, y)
    loss.backward()
    opt.step()
    torch.cuda.synchronize()
{between}    if step % 5 == 0:
        t1 = time.time()
        print(f"step {{step}} took {{(t1 - t0) / 5:.3f}}s")
        t0 = t1
"""


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
per-step call of the helper is in a loop body that reads a clock. But a per-step synchronize
whose loop reads the clock only under one `if` after it that runs on some steps (`if step % 5 ==
0: t1 = time.time()`) is flagged: it waits for the GPU on every step for a read made every 5th.
A clock read in a function of the module that the loop calls (`meter.tick(step)`, followed a few
calls deep) counts as a read in the loop: read on every step, the synchronize is not flagged;
read only under an interval (`def tick(self, step): if step % 5 == 0: t1 = time.time()`), it is
flagged, without a fix.

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
Unsafe: `synchronize()`/`empty_cache()` statements are removed (timings taken around them change;
also one written as a conditional expression whose other arm does nothing,
`torch.cuda.synchronize() if device == "cuda" else None`),
with an `else:` or `finally:` clause they leave empty (a `finally:` only from a `try` that keeps an
`except`; otherwise, or with a comment there, `pass` stays), and with an `if` they leave empty
whose test has no effect of its own (names, attributes, subscripts, literals and operations of
them: `if x.shape[0] > 4:`, on one line too; one that calls something keeps `pass`); one under a
switch of the configuration that no loop around it sets (`if debug:`, `if args.sync_each_step:`,
`if cfg["sync"]:`; not a device flag such as `use_cuda`) is reported without a fix;
statistics are put under the logging interval, statistics lines side by side under one `if`
(joined with `and` to the test of an `if` that
holds only them: `if torch.cuda.is_available() and step % 100 == 0:`). A statistic assigned to a name moves together with
the statements right after it that read the name (`m = torch.cuda.memory_allocated()` and
`stats.append(m)`); when the name is read anywhere else (later in the loop after other work,
earlier in the loop, after it), there is no fix: that read would see a stale value, or none. Nor is
there one when the statement fills a container (`stats.append(torch.cuda.memory_allocated())`)
that is read anywhere else: it would hold every N-th value; nor when the call is in a helper
that is also called where it does not run on every step, or used by name (an inference
benchmark's `cuda_sync()`; another class's method of the same name, and a call that runs it, are
no such use): editing its body would change those uses too. A `reset_peak_memory_stats()` moves
only when each read of the peaks on every step of its loop (`max_memory_allocated()`,
`max_memory_reserved()`, `memory_stats()`) moves under the interval too (each by its own fix, or
beside it); otherwise there is no fix: reset every N steps, such a read would give the peak of N
steps rather than of one. Nor in the `else:` or
`elif` of an `if` whose test takes a remainder of the same counter (`if step % log_every == 0:
... else:`), where an interval test may never hold.
A synchronize kept for clock reads made only under an interval moves into that `if`, right
before the first clock read (with the device guard that holds only it, `if torch.cuda.is_available():`,
when the loop rebinds nothing that guard reads): each read still follows all the work queued before it, as the
previous read did, so the times logged stay the same. There is no fix when a line between the
synchronize and that read calls anything (it may queue GPU work the read would then wait for),
nor when the clock is read in a function the loop calls: move the synchronize into that function,
under its interval, right before the read.
"""
    valid = [
        # Throttled by the clock: once per 30 s, whatever the start's name (Loops.is_clock_throttle).
        Valid("import time\ntic = time.perf_counter()\n" + in_training_loop(
            "if time.perf_counter() - tic > 30:\n    print(torch.cuda.max_memory_allocated())\n"
            "    tic = time.perf_counter()")),
        # A guard whose test the loop rebinds (`sync` set each step) would be read later under the
        # interval: the guarded sync is left as before.
        Valid(_INTERVAL_TIMING.format(between="").replace(
            "    torch.cuda.synchronize()\n", "    sync = step > 2\n    if sync:\n        torch.cuda.synchronize()\n")),
        # Per-step timing (a clock read on every step, beside the interval's print) needs the
        # synchronize on every step: not flagged.
        Valid("import time\n" + in_training_loop("torch.cuda.synchronize()\nt1 = time.time()\ntimes.append(t1 - t0)\n"
                                                 "t0 = t1\nif step % 5 == 0:\n    print(sum(times))")),
        # `self.run(x)` in Trainer runs Trainer.run, not Exporter.run, which runs once after
        # training (methods were matched by name alone, so Exporter.run was a per-step call).
        Valid("import torch\nclass Exporter:\n    def run(self, model):\n        torch.cuda.empty_cache()\n"
              "class Trainer:\n    def __init__(self):\n        self.model = torch.nn.Linear(4, 1).cuda()\n"
              "        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)\n"
              "    def run(self, x):\n        self.model(x).sum().backward()\n        self.opt.step()\n"
              "    def fit(self, n):\n        for i in range(n):\n            self.run(torch.randn(8, 4).cuda())\n"
              "        Exporter().run(self.model)\n"),
        # A script that builds its model and data on the CPU: its calls place nothing, and it has no
        # GPU to wait for (it was reported as stalling the GPU pipeline).
        Valid("import torch\nmodel = torch.nn.Linear(4, 1)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
              "for it in range(10):\n    model(torch.randn(8, 4)).sum().backward()\n    opt.step()\n"
              "    torch.cuda.empty_cache()\n"),
        Valid(in_training_loop("if step % 100 == 0:\n    torch.cuda.synchronize()")),
        # After a `continue` on every step but the first (`step != 0`, `step > 0`, `not first`), the
        # rest runs on the first step only (it was read as per step).
        Valid(in_training_loop("if step != 0:\n    continue\ntorch.cuda.synchronize()")),
        Valid(in_training_loop("if step > 0:\n    continue\nprint(torch.cuda.max_memory_allocated())")),
        Valid(in_training_loop("if step % 100 != 0:\n    continue\ntorch.cuda.synchronize()")),
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
        # A clock read on every step in a method the loop calls (`meter.tick(step)`): per-step
        # timing, as when the read is written in the loop.
        Valid(_METER.format(test="step >= 0", call="meter.tick(step)")),
        # A helper's synchronize, called in a loop body that reads a clock (it was removed from the helper).
        Valid(_SYNC_HELPER.format(loop="t0 = time.perf_counter()\n    cuda_sync()\n    print(time.perf_counter() - t0)")),
    ]
    invalid = [
        # A method of the logger the trainer keeps (`self.logger = Logger()`, its only binding)
        # runs on every step: its synchronize went unreported (the method was not followed).
        Invalid(_KEPT_LOGGER.format(sync="\n        torch.cuda.synchronize()"), fixed=_KEPT_LOGGER.format(sync=""),
                message="on every step"),
        # A call that runs another class's method of the same name (`self.printer.on_step_end`,
        # Printer's) is no use of Logger's by name (it was: no fix).
        Invalid(_KEPT_LOGGER.format(sync="\n        torch.cuda.synchronize()").replace(
                    "class Trainer:\n", "class Printer:\n    def on_step_end(self, step, loss):\n        print(step)\n"
                    "class Trainer:\n").replace("self.logger = Logger()\n", "self.logger = Logger()\n        self.printer = Printer()\n")
                + "            self.printer.on_step_end(step, loss)\n",
                fixed=_KEPT_LOGGER.format(sync="").replace(
                    "class Trainer:\n", "class Printer:\n    def on_step_end(self, step, loss):\n        print(step)\n"
                    "class Trainer:\n").replace("self.logger = Logger()\n", "self.logger = Logger()\n        self.printer = Printer()\n")
                + "            self.printer.on_step_end(step, loss)\n",
                message="on every step"),
        # `self.after_step()` in Base may run a subclass's override: it runs on every step too.
        # Base's own `def after_step` is no use of Verbose's by name (it was: no fix).
        Invalid(_OVERRIDE.format(sync="torch.cuda.empty_cache()"), fixed=_OVERRIDE.format(sync="pass"),
                message="on every step"),
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
        # A guard reading a subscript (`x.shape[0] > 4`) has no effect of its own: it goes too (it
        # was left as `if x.shape[0] > 4: pass`), also written on one line (which got no fix); a
        # guard that calls something (`len(x)`) stays, with `pass`.
        Invalid(in_training_loop("if x.shape[0] > 4:\n    torch.cuda.synchronize()\nprint(step)"),
                fixed=in_training_loop("print(step)")),
        Invalid(in_training_loop("if x.shape[0] > 4: torch.cuda.synchronize()\nprint(step)"),
                fixed=in_training_loop("print(step)"), message="remove it"),
        # The same switch written as a conditional expression, a statement of its own: it goes too
        # (it was taken for a statistic and moved under the logging interval).
        Invalid(in_training_loop("torch.cuda.synchronize() if device == 'cuda' else None\nprint(step)"),
                fixed=in_training_loop("print(step)"), message="remove it"),
        Invalid(in_training_loop("None if cpu else torch.cuda.empty_cache()\nprint(step)"),
                fixed=in_training_loop("print(step)")),
        # ... its value kept: not a statement to remove.
        Invalid(in_training_loop("done = torch.cuda.synchronize() if sync else None\nprint(step)"),
                fixed=in_training_loop("if step % 100 == 0:\n    done = torch.cuda.synchronize() if sync else None\n"
                                       "print(step)"), message="call it under the logging interval"),
        Invalid(in_training_loop("if len(x) > 4: torch.cuda.synchronize()\nprint(step)"),
                fixed=in_training_loop("if len(x) > 4: pass\nprint(step)")),
        # A config switch, as an attribute or a dict entry, on one line too: not fixed.
        Invalid(in_training_loop("if cfg['sync_each_step']:\n    torch.cuda.synchronize()"), fixed=NO_FIX,
                message="runs only when `cfg['sync_each_step']` is set"),
        Invalid(in_training_loop("if args.debug: torch.cuda.synchronize()"), fixed=NO_FIX,
                message="runs only when `args.debug` is set"),
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
        # An emptied `finally:` / `else:` clause goes (the fix wrote `finally: pass`, `else: pass`);
        # a `try` with nothing but `finally` keeps `pass` (`try:` alone does not parse).
        Invalid(in_training_loop("try:\n    x = f()\nexcept ValueError:\n    x = None\nfinally:\n"
                                 "    torch.cuda.synchronize()\nprint(x)"),
                fixed=in_training_loop("try:\n    x = f()\nexcept ValueError:\n    x = None\nprint(x)")),
        Invalid(in_training_loop("try:\n    x = f()\nfinally:\n    torch.cuda.synchronize()"),
                fixed=in_training_loop("try:\n    x = f()\nfinally:\n    pass")),
        Invalid(in_training_loop("if step > 2:\n    print(step)\nelse:\n    torch.cuda.synchronize()"),
                fixed=in_training_loop("if step > 2:\n    print(step)")),
        # ... but a comment there stays, with `pass`.
        Invalid(in_training_loop("if step > 2:\n    print(step)\nelse:\n    # settle\n    torch.cuda.synchronize()"),
                fixed=in_training_loop("if step > 2:\n    print(step)\nelse:\n    # settle\n    pass")),
        # A sync under a switch of the configuration the loop never changes (`if debug:`) is asked
        # for by whoever sets it: the fix deleted the whole `if`. Reported, not fixed; a switch the
        # loop sets, or a device flag, is no such switch.
        Invalid("import torch\ndebug = args.debug\n" + in_training_loop("if debug:\n    torch.cuda.synchronize()"),
                fixed=NO_FIX, message="not fixed: it runs only when `debug` is set, a switch the loop never changes"),
        Invalid(in_training_loop("debug = step < 3\nif debug:\n    torch.cuda.synchronize()"),
                fixed=in_training_loop("debug = step < 3")),
        Invalid(in_training_loop("if args.use_cuda:\n    torch.cuda.synchronize()"),
                fixed=in_training_loop("pass").replace("    pass\n", "")),
        # Statistics lines side by side go under one `if` (each got an `if it % 100 == 0:` of its own).
        Invalid("import torch\nfor it in range(1000):\n    opt.step()\n    mem = torch.cuda.memory_allocated() / 2**20\n"
                "    stats = {'mem': torch.cuda.max_memory_reserved()}\n    torch.cuda.reset_peak_memory_stats()\n",
                fixed="import torch\nfor it in range(1000):\n    opt.step()\n    if it % 100 == 0:\n"
                "        mem = torch.cuda.memory_allocated() / 2**20\n"
                "        stats = {'mem': torch.cuda.max_memory_reserved()}\n        torch.cuda.reset_peak_memory_stats()\n"),
        # ... not one suppressed (`# trainlint: ignore[TL203]`, as `# noqa: TL203`): it stays per step.
        Invalid("import torch\nfor it in range(1000):\n    opt.step()\n    mem = torch.cuda.memory_allocated() / 2**20\n"
                "    res = torch.cuda.memory_reserved()  # trainlint: ignore[TL203]\n",
                fixed="import torch\nfor it in range(1000):\n    opt.step()\n    if it % 100 == 0:\n"
                "        mem = torch.cuda.memory_allocated() / 2**20\n"
                "    res = torch.cuda.memory_reserved()  # trainlint: ignore[TL203]\n"),
        # ... not one whose name is read elsewhere (it moves with its readers or not at all).
        Invalid("import torch\nfor it in range(1000):\n    opt.step()\n    torch.cuda.reset_peak_memory_stats()\n"
                "    mem = torch.cuda.memory_allocated()\n    opt.zero_grad()\n    hist.append(mem)\n",
                fixed="import torch\nfor it in range(1000):\n    opt.step()\n    if it % 100 == 0:\n"
                "        torch.cuda.reset_peak_memory_stats()\n"
                "    mem = torch.cuda.memory_allocated()\n    opt.zero_grad()\n    hist.append(mem)\n"),
        # A reset of the peak statistics moves only with the per-step reads of the peak it resets:
        # moved alone, `peaks.append(torch.cuda.max_memory_allocated())` (which cannot move: the
        # list is read after the loop) gave the peak of N steps instead of one's.
        Invalid("import torch\npeaks = []\nfor it in range(1000):\n    torch.cuda.reset_peak_memory_stats()\n"
                "    opt.step()\n    peaks.append(torch.cuda.max_memory_allocated())\nprint(max(peaks))\n",
                fixed=NO_FIX, message="not fixed: the peak it resets is read on every step "
                                      "(`torch.cuda.max_memory_allocated()`)"),
        Invalid("import torch\nfor it in range(1000):\n    torch.cuda.reset_peak_memory_stats()\n"
                "    opt.step()\n    print(torch.cuda.max_memory_allocated())\n",
                fixed="import torch\nfor it in range(1000):\n    if it % 100 == 0:\n        torch.cuda.reset_peak_memory_stats()\n"
                "    opt.step()\n    if it % 100 == 0:\n        print(torch.cuda.max_memory_allocated())\n"),
        # Statistics read the allocator's counters on the host: no wait for the GPU.
        Invalid(in_training_loop("torch.cuda.reset_peak_memory_stats()"), message="no wait for the GPU"),
        # A synchronize for a clock read made only under the logging interval was not flagged
        # (the loop reads a clock): it waited for the GPU on every step for a read every 5th. It
        # moves into that `if`, right before the read.
        Invalid(_INTERVAL_TIMING.format(between=""),
                fixed=_INTERVAL_TIMING.format(between="").replace("    torch.cuda.synchronize()\n", "").replace(
                    "        t1 = time.time()\n", "        torch.cuda.synchronize()\n        t1 = time.time()\n"),
                message="for a clock read made only under `if step % 5 == 0:`"),
        # The same synchronize under a device guard that holds only it (a script that also runs on a
        # CPU) was taken for per-step timing and not reported: the guard moves with it.
        Invalid(_INTERVAL_TIMING.format(between="").replace(
                    "    torch.cuda.synchronize()\n", "    if torch.cuda.is_available():\n        torch.cuda.synchronize()\n"),
                fixed=_INTERVAL_TIMING.format(between="").replace("    torch.cuda.synchronize()\n", "").replace(
                    "        t1 = time.time()\n", "        if torch.cuda.is_available():\n            torch.cuda.synchronize()\n"
                    "        t1 = time.time()\n"),
                message="for a clock read made only under `if step % 5 == 0:`"),
        # A clock read under the interval in a method the loop calls after the synchronize
        # (`meter.tick(step)`, `self.meter.tick(step)`): the synchronize was removed, and the ms
        # logged measured launch time. Reported with advice, no fix.
        Invalid(_METER.format(test="step % 5 == 0", call="meter.tick(step)"), fixed=NO_FIX,
                message="a clock read that `tick` makes only under `if step % 5 == 0:`; not fixed: move it into "
                        "`tick` under its interval, before the clock read"),
        Invalid(_KEPT_METER.format(test="step % 5 == 0"), fixed=NO_FIX,
                message="not fixed: move it into `tick` under its interval, before the clock read"),
        Invalid(_METER.format(test="step >= 0", call="if step % 5 == 0:\n        meter.tick(step)"), fixed=NO_FIX,
                message="that `tick` makes only on some steps; not fixed: move it into `tick`, before the clock read"),
        # ... not past a line that calls something (it may queue GPU work the read would wait for).
        Invalid(_INTERVAL_TIMING.format(between="    ema.update(model)\n"), fixed=NO_FIX,
                message="not fixed: code between it and the clock read calls something"),
        # The advice names the guard the fix writes: the loop's own counter, the default interval.
        Invalid("import torch\nfor it in range(1000):\n    opt.step()\n    print(torch.cuda.memory_allocated())\n",
                fixed="import torch\nfor it in range(1000):\n    opt.step()\n    if it % 100 == 0:\n"
                "        print(torch.cuda.memory_allocated())\n",
                message="call it under the logging interval (`if it % 100 == 0:`)"),
        # After `if step == 0: continue` (warm-up skipped), which leaves on one step only.
        Invalid(in_training_loop("if step == 0:\n    continue\ntorch.cuda.synchronize()"),
                fixed=in_training_loop("if step == 0:\n    continue")),
        # In a `case` body (the guard's body was one level too shallow: the fix did not parse).
        Invalid("import torch\nfor it in range(1000):\n    opt.step()\n    match mode:\n        case 'mem':\n"
                "            print(torch.cuda.memory_allocated())\n",
                fixed="import torch\nfor it in range(1000):\n    opt.step()\n    match mode:\n        case 'mem':\n"
                "            if it % 100 == 0:\n                print(torch.cuda.memory_allocated())\n"),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        qn = _device_sync_name(ctx, node)
        if qn is None or not ctx.is_per_step(node) or not on_accelerator(ctx):
            return
        helper, callers = _helper_callers(ctx, node)
        if qn.endswith(".synchronize") and helper is None and ctx.measures_time(node) \
                and (timed := _interval_clock_read(ctx, node)) is not None:
            self._report_interval_timing(node, *timed)
            return
        if qn.endswith(".synchronize") and (ctx.measures_time(node) or any(
                ctx.is_per_step(c) and ctx.measures_time(c) for c in callers)):
            # Synchronizing to time GPU work is the point (yolov5's time_sync()), also in a helper
            # whose per-step call sits among the clock reads (`t0 = time.perf_counter(); ...;
            # cuda_sync(); print(time.perf_counter() - t0)`).
            return
        if qn.endswith(".synchronize") and helper is None and (called := _called_clock_read(ctx, node)) is not None:
            fn, interval = called
            if interval is None:
                return  # a clock read on every step, in a function the loop calls: per-step timing
            where, into = (f"under `if {interval}:`", " under its interval") if interval else ("on some steps", "")
            self.report(node, f"`{ctx.code(node.func)}()` on every step stalls the GPU pipeline for a clock read "
                              f"that `{fn.name.value}` makes only {where}; not fixed: move it into "
                              f"`{fn.name.value}`{into}, before the clock read")
            return
        if qn.endswith(".synchronize") and ctx.orders_async_work(node):
            return  # it may be what lets the host read a side stream's work or a non-blocking copy
        removable = _DEVICE_SYNC[qn]
        fix = None
        parent = ctx.parent(node)
        if removable and isinstance(parent, cst.IfExp) and _inert(parent.orelse if parent.body is node else parent.body):
            # `torch.cuda.synchronize() if device == "cuda" else None`: an `if` written as an expression.
            parent = ctx.parent(parent)
        stmt = ctx.parent(parent) if isinstance(parent, cst.Expr) else None
        if removable and isinstance(stmt, cst.SimpleStatementSuite) and len(stmt.body) == 1:
            # `if x.shape[0] > 4: torch.cuda.synchronize()` on one line: the `if` goes too when
            # nothing is left for it to do, else the call becomes `pass`.
            owner = ctx.parent(stmt)
            message = f"Remove `{ctx.code(node)}`"
            fix, advice = self._removal(
                _remove_statement(self, owner, message) if _empty_without_body(ctx, owner, stmt)
                else self.fix(Applicability.UNSAFE, message, (parent, cst.Pass())), parent)
        elif removable and isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1:
            fix, advice = self._removal(_remove_statement(self, stmt, f"Remove `{ctx.code(node)}`"), stmt)
        else:
            # The statistics lines beside it go under the same `if` (each got one of its own).
            joins = lambda call: _DEVICE_SYNC.get(_device_sync_name(ctx, call)) is False  # noqa: E731
            fix = guard_statement(self, node, self.opts["log-every"], joins=joins)
            advice = f"call it under the logging interval ({interval_guard(ctx, node, self.opts['log-every'])})"
            read = _peak_read_left(self, node, qn, joins) if fix is not None else None
            if read is not None:
                # Reset every N steps, a peak read on every step would give the peak of N steps.
                fix = None
                advice += (f"; not fixed: the peak it resets is read on every step (`{ctx.code(read)}`), and that "
                           f"read cannot move with it: reset every N steps, it would give the peak of N steps; "
                           f"move both under the interval")
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

    def _removal(self, fix, flag_anchor: cst.CSTNode) -> tuple:
        """The fix and advice for a sync that can simply go (fix deletes it). flag_anchor is the
        statement in the sync's block (the `Expr` of a one-line `if`'s body): under a switch the
        loop never changes (`if debug:`) the sync was asked for, so it is reported without the fix."""
        advice = "remove it (or run it under the logging interval when it serves a measurement)"
        flag = _opt_in_flag(self.ctx, flag_anchor)
        if flag is None:
            return fix, advice
        return None, advice + (f"; not fixed: it runs only when `{flag}` is set, a switch the loop never changes "
                               f"(a debugging run may want it)")

    def _report_interval_timing(self, node: cst.Call, guard: cst.If, clock: cst.BaseStatement | None, why: str) -> None:
        """A per-step synchronize for clock reads made only under the logging interval: the fix
        moves it into that `if`, right before the first clock read."""
        ctx = self.ctx
        stmt = _sync_statement(ctx, node)
        test = unparenthesized(ctx, guard.test)
        fix = None
        if clock is not None:
            body = list(guard.body.body)
            at = body.index(clock)
            sync = stmt.with_changes(leading_lines=[line for line in stmt.leading_lines if line.comment is not None])
            inner = [*body[:at], sync, *body[at:]]
            fix = self.fix(Applicability.UNSAFE, f"Synchronize under `if {test}:`, right before the clock read",
                           (stmt, ""), (guard, guard.with_changes(body=guard.body.with_changes(body=inner))))
        self.report(node, f"`{ctx.code(node.func)}()` on every step stalls the GPU pipeline for a clock read made "
                          f"only under `if {test}:`; synchronize there, right before the read"
                          + (f"; not fixed: {why}" if why else ""), fix)


def _interval_clock_read(ctx, node: cst.Call) -> tuple[cst.If, cst.BaseStatement | None, str] | None:
    """Where a per-step synchronize (node) is there only for clock reads that all run under one
    `if` after it in the same block, a test that limits its body to some steps (`if step % 5 ==
    0: t1 = time.time()`): that `if`, the statement of its body holding the first clock read,
    and why there is no fix ("" when there is one). Such a sync waits for the GPU on every step
    for a read made every 5th; synchronized right before the read instead, the read still comes
    after all the queued work, as the interval's previous read did. The fix needs nothing between
    the sync and that read that calls anything (it could queue GPU work that the read would
    then wait for). None where a clock is read on every step (per-step timing needs the sync
    each step: not reported, as before), or CUDA events are timed."""
    loop = ctx.loops.innermost_loop(node)
    line = ctx.parent(ctx.parent(node))
    if loop is None or not isinstance(ctx.parent(node), cst.Expr) or not isinstance(line, cst.SimpleStatementLine) \
            or len(line.body) != 1:
        return None
    stmt = _sync_statement(ctx, node, loop)
    block = ctx.parent(stmt)
    if not isinstance(block, cst.IndentedBlock):
        return None
    calls = [c for c in ctx.index.walk(loop.body) if isinstance(c, cst.Call)]
    if any(ctx.times_events(c) for c in calls):
        return None
    clocks = [c for c in calls if ctx.is_clock_read(c)]
    body = list(block.body)
    after = body[body.index(stmt) + 1:]
    guard = next((s for s in after if isinstance(s, cst.If) and any(ctx.index.contains(s.body, c) for c in clocks)),
                 None)
    if guard is None or not clocks or not all(ctx.index.contains(guard.body, c) for c in clocks) \
            or not ctx.loops.limits_body(guard.test) or not isinstance(guard.body, cst.IndentedBlock):
        return None
    inner = list(guard.body.body)
    clock = next(s for s in inner if any(ctx.index.contains(s, c) for c in clocks))
    between = [*after[:after.index(guard)], guard.test, *inner[:inner.index(clock)]]
    if any(isinstance(n, cst.Call) for part in between for n in ctx.index.walk(part)):
        return guard, None, "code between it and the clock read calls something, which may queue GPU work the read would wait for"
    return guard, clock, ""


def _inert(expr: cst.BaseExpression) -> bool:
    """The other arm of a conditional expression around a sync does nothing: `None`, `...`, a
    number or a string."""
    return isinstance(expr, (cst.Ellipsis, cst.Integer, cst.Float, cst.SimpleString)) or (
        isinstance(expr, cst.Name) and expr.value == "None")


def _sync_statement(ctx, node: cst.Call, loop: cst.CSTNode | None = None) -> cst.BaseStatement:
    """The statement that holds the synchronize `node` as its loop body sees it: its line, or the
    device guard around it that holds nothing else (`if device.type == "cuda":
    torch.cuda.synchronize()`, as scripts that also run on a CPU write it), which moves with it.
    Before, such a guarded sync was taken for per-step timing and not reported. The guard's test
    must read nothing the loop body rebinds: moved under the interval, it is evaluated later."""
    line = ctx.parent(ctx.parent(node))
    block = ctx.parent(line)
    guard = ctx.parent(block)
    loop = loop or ctx.loops.innermost_loop(node)
    if not (isinstance(block, cst.IndentedBlock) and len(block.body) == 1 and isinstance(guard, cst.If)
            and guard.orelse is None and loop is not None and ctx.index.contains(loop.body, guard)):
        return line
    read = {n.value for n in ctx.index.walk(guard.test) if isinstance(n, cst.Name)}
    if ctx.loops.limits_body(guard.test) or read & bound_names(loop.body):
        return line
    return guard



def _called_clock_read(ctx, node: cst.Call) -> tuple[cst.FunctionDef, str | None] | None:
    """A clock read (or CUDA event timing) in a function of the module that node's loop body
    calls, followed through Loops.callees a few calls deep (`meter.tick(step)` after the
    synchronize, with `def tick(self, step): if step % 5 == 0: t1 = time.time()`): the function
    that reads the clock, and the interval under which it does (None when it reads it on every
    step). Such a read depends on the synchronize like one written in the loop: removing it made
    the logged milliseconds measure launch time. A read on every step is preferred over one
    under an interval (the synchronize is then needed each step); None when no callee reads one."""
    loop = ctx.loops.innermost_loop(node)
    if loop is None:
        return None
    found = None
    for call in (c for c in ctx.index.walk(loop.body) if isinstance(c, cst.Call)):
        for fn, read, interval in _clock_reads_under(ctx, call, None if ctx.is_per_step(call) else "", 0, set()):
            if interval is None:
                return fn, None
            found = found or (fn, interval)
    return found


def _clock_reads_under(ctx, call: cst.Call, interval: str | None, depth: int, seen: set):
    """(function, clock read, interval limiting it or None) for each clock read in the functions
    call runs, and in those they call (up to loops.CALL_DEPTH); interval: what already limits
    call ("" for a call that does not run on every step, whose interval is not named)."""
    if depth >= CALL_DEPTH:
        return
    for fn in ctx.loops.callees(call):
        if fn in seen:
            continue
        seen.add(fn)
        for inner in (c for c in ctx.index.walk(fn.body) if isinstance(c, cst.Call)):
            limited = interval if interval is not None else ctx.loops.interval_in_function(inner)
            if ctx.is_clock_read(inner) or ctx.times_events(inner):
                yield fn, inner, limited
            elif ctx.loops.callees(inner):
                yield from _clock_reads_under(ctx, inner, limited, depth + 1, seen)


def _helper_callers(ctx, node: cst.CSTNode) -> tuple[cst.FunctionDef | None, list[cst.Call]]:
    """The module's function that holds node outside any hot loop of its own (a helper such as
    `def cuda_sync(): torch.cuda.synchronize()`), and the calls of it; (None, []) when node is
    in a hot loop's body or a framework's step hook."""
    fn = ctx.index.enclosing_function(node)
    if fn is None or ctx.loops.hot_loop_of(node) is not None or ctx.loops.step_hook(node) is not None:
        return None, []
    return fn, list(ctx.loops.calls_of(fn))


def _used_elsewhere(ctx, fn: cst.FunctionDef, callers: list[cst.Call]) -> str | None:
    """How the helper fn is used other than by a call on every step, as words for a message
    (`called where it does not run on every step`, `used by name`); None when every use is such a
    call."""
    for call in callers:
        if not ctx.is_per_step(call):
            return "called where it does not run on every step"
    calls = {id(c.func) for c in callers} | {id(c.func.attr) for c in callers if isinstance(c.func, cst.Attribute)}
    calls |= _other_functions_names(ctx, fn)
    for name in ctx.index.nodes(cst.Name):
        if name.value == fn.name.value and name is not fn.name and id(name) not in calls:
            return "used by name, not only called"
    return None


def _other_functions_names(ctx, fn: cst.FunctionDef) -> set[int]:
    """The ids of the names spelled as fn's that are no use of fn: another function's `def` of the
    name, and a call the module resolves to other functions only (`self.callback.on_step_end(...)`
    running PrintLoss's, not SyncCB's). Every callback class defines `on_step_end`; each of them
    counted as fn "used by name", and the sync was never removed."""
    out = {id(other.name) for other in ctx.loops.functions.get(fn.name.value, ()) if other is not fn}
    for call in ctx.loops.calls_by_name.get(fn.name.value, ()):
        callees = ctx.loops.callees(call)
        if callees and fn not in callees:
            out |= {id(call.func), id(call.func.attr) if isinstance(call.func, cst.Attribute) else 0}
    return out


# Names of a flag that says where the code runs (`use_cuda`, `args.gpu`): a device guard, whose
# body runs on every step of a GPU run, not an opt-in switch.
_DEVICE_FLAG = re.compile(r"cuda|gpu|device|accel|xla|mps|distributed|ddp", re.IGNORECASE)


def _opt_in_flag(ctx, stmt: cst.BaseStatement) -> str | None:
    """The test, as code, of the `if` whose body holds stmt when it is a switch of the run's
    configuration that the loop never changes (`if debug:`, `if args.sync_each_step and not
    cfg.fast:`): plain names and attributes, no call, none bound in the loop. A sync there is
    asked for by whoever sets the switch (the fix deleted `if debug: torch.cuda.synchronize()`
    whole). None otherwise; device flags (`use_cuda`) are no such switch."""
    block = ctx.parent(stmt)
    branch = ctx.parent(block) if isinstance(block, (cst.IndentedBlock, cst.SimpleStatementSuite)) else None
    loop = ctx.loops.innermost_loop(stmt)
    if not isinstance(branch, cst.If) or branch.body is not block or loop is None \
            or not ctx.index.contains(loop.body, branch):
        return None
    operands = [branch.test]
    names = []
    while operands:
        node = operands.pop()
        if isinstance(node, cst.BooleanOperation):
            operands += [node.left, node.right]
        elif isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Not):
            operands.append(node.expression)
        elif isinstance(node, (cst.Name, cst.Attribute)) and ctx.dotted(node):
            names.append(ctx.dotted(node))
        elif isinstance(node, cst.Subscript) and ctx.dotted(node.value) and len(node.slice) == 1 \
                and isinstance(node.slice[0].slice, cst.Index) and isinstance(ctx.literal(node.slice[0].slice.value), str):
            # `cfg["sync_each_step"]`: a switch read from a config dict, as `cfg.sync_each_step` is.
            names.append(f"{ctx.dotted(node.value)}.{ctx.literal(node.slice[0].slice.value)}")
        else:
            return None
    # Bound in any loop around it, up to its function (`debug = epoch == 0` in the epoch loop).
    bound: set[str] = set()
    for anc in ctx.index.ancestors(stmt):
        if isinstance(anc, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            break
        if isinstance(anc, (cst.For, cst.While)):
            bound |= bound_names(anc)
    for name in names:
        root = name.split(".", 1)[0]
        if _DEVICE_FLAG.search(name) or root in bound or name in bound:
            return None
    return unparenthesized(ctx, branch.test)


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
    if len(block.body) == 1 and (dropped := _without_clause(ctx, owner, stmt)) is not None:
        return rule.fix(Applicability.UNSAFE, message, dropped)
    return rule.fix(Applicability.UNSAFE, message, ctx.block_without(stmt))


def _without_clause(ctx, clause: cst.CSTNode, stmt: cst.BaseStatement) -> tuple | None:
    """The statement that owns clause (an `else:` or `finally:` whose whole body is stmt) and that
    statement without it, as a replacement: the fix wrote `finally: pass` and `else: pass`. An
    `else:` can always go (a `try` with one has an `except`); a `finally:` only from a `try`
    that keeps an `except` (`try:` alone does not parse: there `pass` stays). None when a comment
    on the clause or the statement would be lost, or for any other block."""
    if not isinstance(clause, (cst.Else, cst.Finally)) or any(line.comment for line in stmt.leading_lines) \
            or any(line.comment for line in clause.leading_lines) or clause.body.header.comment is not None:
        return None
    owner = ctx.parent(clause)
    if isinstance(clause, cst.Finally):
        if not isinstance(owner, cst.Try) or not owner.handlers:
            return None
        return owner, owner.with_changes(finalbody=None)
    if isinstance(owner, (cst.If, cst.For, cst.While, cst.Try)) and owner.orelse is clause:
        return owner, owner.with_changes(orelse=None)
    return None


def _empty_without_body(ctx, owner: cst.CSTNode, block: cst.BaseSuite) -> bool:
    """Whether `owner`, with `block` (its body) emptied, would do nothing at all."""
    if isinstance(owner, cst.If):
        # (not an `elif`: removing it would take the branches after it along)
        return owner.orelse is None and side_effect_free(ctx, owner.test) \
            and not isinstance(ctx.parent(owner), cst.If)
    if isinstance(owner, cst.Try):
        return owner.body is block and owner.orelse is None and owner.finalbody is None
    return False
