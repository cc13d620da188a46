"""The code that runs inside the measured script's process (every rank under torchrun).

Started as ``python -m trainlint.verify.harness SCRIPT_ARGS...`` (or through torchrun's ``-m``),
it reads its settings from the ``TRAINLINT_VERIFY`` environment variable, installs hooks that
observe training from outside the script's code, executes the script as ``__main__`` and writes
what it saw to ``<out_dir>/rank<R>.json``.

What is hooked, and why each hook stays cheap (the harness must not change what it measures):
- a step hook for every optimizer, at ``Optimizer._optimizer_step_code`` (the empty method torch
  calls after each step for profilers; a global step post-hook where torch has none): one
  ``perf_counter`` and two appends per step (plus a CUDA event, recorded without synchronising,
  when CUDA is in use; the events are created ahead, in the first step); it also stops the run
  after warm-up + N steps;
- ``DataLoader.__iter__`` and the loader iterator's ``__next__``: time spent waiting for data,
  noted with its end time and matched to steps at the end of the run;
- ``torch.autograd.backward`` (which ``Tensor.backward`` calls): a scalar loss on a GPU (or any
  device but the CPU), detached (``.data``), is kept where it lives and read once at the end, so
  no per-step host sync is added; the usual ``loss.backward()`` on the CPU is read at once
  (``.item()``: there is no device to wait for, and a tensor kept per step cost more, see the
  backward hook);
  the losses of backward calls followed by another optimizer's step (a GAN's generator) are
  dropped, so a counted step's loss is that of its own optimizer's backward calls;
  ``GradScaler.scale`` notes which scaled tensor stands for which loss, so the loss kept is the
  unscaled one, and ``GradScaler.step`` counts a step it skips as a step;
- progress: a daemon thread writes the number of steps so far to ``<out_dir>/rank<R>.progress``
  at most every 0.5 s when it changed, and the harness writes it once more when the script fails;
  so a failure's or a timeout's message says how far the run got. The step hook itself writes
  nothing and reads nothing from the device;
- ``DataLoader.__init__``: a shuffling ``RandomSampler`` without its own generator gets one, seeded
  from the verifier's seed, so the data order no longer depends on how often the loader draws
  its worker base seed from the global RNG (``persistent_workers=True`` draws it once instead of
  once per epoch, which otherwise reshuffles every later epoch differently).

torch is imported here on purpose: this module only ever runs in the child process.
"""

from __future__ import annotations

import builtins
import json
import os
import random
import sys
import threading
import time
import types
import weakref

ENV_VAR = "TRAINLINT_VERIFY"


class StopRun(BaseException):
    """Raised from the step hook once enough steps were measured.

    A BaseException so that a script's ``except Exception:`` does not swallow it.
    """


def _no_optimizer() -> None:
    """What ``_State.counted`` is while no optimizer is counted: called, it returns None."""
    return None


class _State:
    def __init__(self, cfg: dict) -> None:
        self.total = int(cfg["warmup"]) + int(cfg["steps"])
        self.profile_steps = int(cfg.get("profile_steps", 0))
        self.warmup = int(cfg["warmup"])
        # What the hooks record, each an append to its own list; put together per step at the end
        # (_collect), so that the hooks that run every step stay short.
        self.step_ends: list[float] = []  # perf_counter at each counted optimizer step
        self.step_marks: list[int] = []  # len(losses) at each counted step
        self.cuda_events: list = []  # one recorded per step, in step order
        self.spare_events: list = []  # created ahead (see _make_events)
        # in backward order: a float (the usual call's loss on the CPU, read at once) or a
        # detached scalar tensor (read at the end)
        self.losses: list = []
        # (perf_counter at its end, seconds) of each wait for the loader: one append, so a loader
        # drawn from by several threads cannot pair one wait's end with another's length
        self.waits: list[tuple[float, float]] = []
        self.loader_batches = 0  # drawn from a torch DataLoader: none, and data wait is not measured
        # The step count at which the step hook looks at stopping or profiling (_milestone); one
        # comparison a step instead of the branches themselves.
        self.next_milestone = self.warmup if self.profile_steps else self.total
        # The counted optimizer, called: a weak reference to it, or _no_optimizer before the first
        # step and once the run is stopped (see _counted).
        self.counted = _no_optimizer
        # (id, len(step_ends)) of the last other optimizer's step: its next step with no counted
        # one in between takes over
        self.last_other: tuple[int, int] | None = None
        self.other_optimizer_steps = 0
        self.other_backward = 0  # backward calls whose loss went to another optimizer's step
        self.optimizer_switches = 0
        self.other_calls = 0  # step hook calls other than the counted optimizer's usual step
        self.scaler_skipped = 0  # steps a GradScaler skipped, counted as steps all the same
        self.stopped = False  # StopRun was raised
        self.stop_caught = False  # ... and the script caught it and stepped again
        self.loaders = 0
        # Shuffling loaders the harness pinned, and those the script gave its own generator (their
        # order is the script's; the report must not say the verifier pinned it).
        self.pinned_loaders = 0
        self.own_generator_loaders = 0
        self.start = time.perf_counter()
        self.profiler = None
        self.profile_start = 0.0
        self.profile: dict | None = None
        self.device = None  # the CUDA device stepped on, if any
        self.progress_written = -1  # the step count last written to the progress file
        self.progress_final = False  # the failure's exact count is written: the thread stops
        self.progress_lock = threading.Lock()  # the thread's write and the failure's


class Hooks:
    """The installed patches and step hook; disable() restores torch as it was.

    The harness itself never disables them (the process ends with the run); the overhead
    benchmark toggles them to time the same loop with and without, all of them or one part at a
    time (``PARTS``) to see which part costs what.
    """

    PARTS = ("step", "backward", "loader")  # the step hook, loss capture, loader timing and seeding

    def __init__(self) -> None:
        # (part, owner, attribute name, original, replacement)
        self.patches: list[tuple[str, object, str, object, object]] = []
        self.step_hook = None  # for torch's global step post-hooks, where it has no step entry point
        self.handle = None
        self.enabled: tuple[str, ...] = ()

    def patch(self, part: str, owner, name: str, new) -> None:
        self.patches.append((part, owner, name, getattr(owner, name), new))
        setattr(owner, name, new)

    def disable(self) -> None:
        for _, owner, name, old, _ in self.patches:
            setattr(owner, name, old)
        if self.handle is not None:
            self.handle.remove()
            self.handle = None
        self.enabled = ()

    def enable(self, parts: tuple[str, ...] = PARTS) -> None:
        """Install the given parts (all by default) and remove the others."""
        from torch.optim.optimizer import register_optimizer_step_post_hook

        self.disable()
        for part, owner, name, _, new in self.patches:
            if part in parts:
                setattr(owner, name, new)
        if "step" in parts and self.step_hook is not None:
            self.handle = register_optimizer_step_post_hook(self.step_hook)
        self.enabled = parts


def _install(cfg: dict, state: _State) -> Hooks:
    import torch
    import torch.utils.data.dataloader as dl

    hooks = Hooks()

    seed = int(cfg["seed"])
    perf = time.perf_counter
    waits = state.waits

    # Data wait: creating the iterator (worker start-up when workers are not persistent) and
    # each __next__ are time the training loop spends waiting for the loader.
    def waiting(orig, batch: bool):
        def timed(self):
            t = perf()
            try:
                return orig(self)
            finally:
                end = perf()
                waits.append((end, end - t))
                state.loader_batches += batch

        return timed

    timed_iter = waiting(dl.DataLoader.__iter__, batch=False)
    timed_next = waiting(dl._BaseDataLoaderIter.__next__, batch=True)

    hooks.patch("loader", dl.DataLoader, "__iter__", timed_iter)
    hooks.patch("loader", dl._BaseDataLoaderIter, "__next__", timed_next)

    if cfg.get("pin_loader_rng", True):
        orig_init = dl.DataLoader.__init__

        def init(self, *args, **kwargs):
            orig_init(self, *args, **kwargs)
            index = state.loaders
            state.loaders += 1
            # (an explicit None test: truth-testing a sampler would call its __len__)
            sampler = getattr(self.batch_sampler, "sampler", None)
            if sampler is None:
                sampler = self.sampler
            if isinstance(sampler, torch.utils.data.RandomSampler) and sampler.generator is not None:
                state.own_generator_loaders += 1
            elif isinstance(sampler, torch.utils.data.RandomSampler):
                state.pinned_loaders += 1
                # Only loaders left to the global RNG are pinned; a script that passes its own
                # generator keeps it (its data order is already decided by the script).
                g = torch.Generator()
                g.manual_seed(seed * 1000 + index)
                sampler.generator = g
                if self.generator is None:
                    base = torch.Generator()
                    base.manual_seed(seed * 1000 + 500 + index)
                    self.generator = base

        hooks.patch("loader", dl.DataLoader, "__init__", init)

    orig_backward = torch.autograd.backward
    scaled: dict = {}  # id(scaled output) -> (weak reference to it, the detached loss it scales)
    tensor_cls = torch.Tensor
    losses = state.losses  # (only ever changed in place)

    def record_other(tensors, grad_tensors) -> None:
        loss = _backward_loss(tensors, grad_tensors, scaled)
        if loss is not None:
            losses.append(loss)

    if _backward_parameters(orig_backward) == BACKWARD_PARAMETERS:
        # torch's own parameters, spelled out: no argument tuple and keyword dict built and
        # unpacked at each call (about half the capture's cost in a tight loop, measured with
        # bench/verify_hook_shapes.py).
        def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False,
                     grad_variables=None, inputs=None):
            # The usual call, loss.backward() on a plain tensor with no GradScaler in use, costs
            # a class test and a read: this runs every step, and the overhead target is 2% of a
            # tight loop's step, so it is written out here, not called. A loss on a device is
            # kept there (``.data``: ``detach`` without the shared version counter, which a
            # value read once at the end does not need; 0.3 against 0.5 us, timeit) and read
            # when the run ends. A loss on the CPU is read now: ``.item()`` waits for nothing
            # there and takes 0.2 us, while each CPU tensor kept alive left its small blocks
            # among the step's freed ones in the C heap: malloc's longer searches and the
            # garbage collector's walks over the kept tensors were about 7,000 of the 9,600
            # instructions a step the harness added to the tight loop (`python
            # bench/verify_overhead.py --instructions --against 05b2ffc --top 12`). Anything
            # else (a list of losses, an explicit gradient, a scaled loss, a tensor subclass)
            # goes through _backward_loss.
            if grad_tensors is None and tensors.__class__ is tensor_cls and not scaled:
                if tensors.numel() == 1:
                    losses.append(tensors.item() if tensors.is_cpu else tensors.data)
            else:
                record_other(tensors, grad_tensors)
            return orig_backward(tensors, grad_tensors, retain_graph, create_graph,
                                 grad_variables, inputs)
    else:
        def backward(tensors, grad_tensors=None, *args, **kwargs):
            # The same, for another torch's parameters: passed on as given.
            if grad_tensors is None and tensors.__class__ is tensor_cls and not scaled:
                if tensors.numel() == 1:
                    losses.append(tensors.item() if tensors.is_cpu else tensors.data)
            else:
                record_other(tensors, grad_tensors)
            return orig_backward(tensors, grad_tensors, *args, **kwargs)

    hooks.patch("backward", torch.autograd, "backward", backward)

    # A GradScaler's backward runs on scale(loss), the loss times the scale: the loss recorded is
    # the one scale() was given, so a fix that changes the scale (TL403) or drops the scaler
    # (TL402) compares real losses. torch.cuda.amp.GradScaler inherits both methods.
    scaler_cls = torch.amp.GradScaler
    orig_scale = scaler_cls.scale
    orig_scaler_step = scaler_cls.step

    def scale(self, outputs):
        result = orig_scale(self, outputs)
        _remember_scaled(outputs, result, scaled)
        return result

    def scaler_step(self, optimizer, *args, **kwargs):
        before = (len(step_ends), state.other_calls)  # changes whenever the step hook runs
        result = orig_scaler_step(self, optimizer, *args, **kwargs)
        if (len(step_ends), state.other_calls) == before and "step" in hooks.enabled:
            # The scaler skipped optimizer.step (inf/NaN gradients): still one iteration, so the
            # loss curves stay aligned per iteration instead of merging it into the next step.
            state.scaler_skipped += 1
            after_step(optimizer)
        return result

    hooks.patch("backward", scaler_cls, "scale", scale)
    hooks.patch("step", scaler_cls, "step", scaler_step)

    # torch.cuda.current_stream builds a new Stream object at each call, which measured 9 us a
    # call on the GPU machine (three times an event record; see docs/verify.md): the step hook
    # keeps one per stream, looked up by the stream's raw identity (a cheap call where torch
    # has it), so a script that switches streams still records on the one it steps on.
    stream_identity = getattr(torch._C, "_cuda_getCurrentStream", None)
    streams: dict = {}

    def current_stream():
        if stream_identity is None:
            return torch.cuda.current_stream(state.device)
        key = stream_identity(state.device.index)
        stream = streams.get(key)
        if stream is None:
            stream = streams[key] = torch.cuda.current_stream(state.device)
        return stream

    step_ends, marks = state.step_ends, state.step_marks

    def after_step(optimizer, args=None, kwargs=None):
        # The usual step, the counted optimizer's, is told with one weak-reference call and
        # recorded with two appends; the rest (the first step, another optimizer's, a stop the
        # script caught) goes to _other_step. Like the backward hook, this runs every step and is
        # kept short: data waits and losses are matched to steps at the end (_collect).
        if state.counted() is not optimizer and not _other_step(cfg, state, optimizer):
            return
        if state.device is not None:
            # Recorded on the stream the parameters' device computes on; no host wait. Under
            # torchrun each rank's own GPU, whatever the current device is.
            ev = state.spare_events.pop() if state.spare_events else _make_events(state)
            ev.record(current_stream())
            state.cuda_events.append(ev)
        step_ends.append(perf())
        marks.append(len(losses))
        if len(step_ends) >= state.next_milestone:
            _milestone(state, len(step_ends))

    # torch calls Optimizer._optimizer_step_code, an empty method, right after each step of any
    # optimizer (its entry point for profilers): run there, the step hook replaces a call the
    # step makes anyway instead of adding one (in the tight CPU loop the two read within noise
    # of each other: `python bench/verify_hook_shapes.py --part step`). A torch without that
    # entry point gets the global step post-hook, called at the same place (after the
    # optimizer's own post-hooks instead of before them).
    if callable(getattr(torch.optim.Optimizer, "_optimizer_step_code", None)):
        hooks.patch("step", torch.optim.Optimizer, "_optimizer_step_code", after_step)
    else:
        hooks.step_hook = after_step
    hooks.enable()
    return hooks


BACKWARD_PARAMETERS = (
    ("tensors", None), ("grad_tensors", None), ("retain_graph", None), ("create_graph", False),
    ("grad_variables", None), ("inputs", None),
)


def _backward_parameters(fn) -> tuple | None:
    """(name, default) of each of ``fn``'s parameters, None where one is not plain positional
    or keyword (the backward hook spells out torch's parameters only where they are these)."""
    import inspect

    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind is not p.POSITIONAL_OR_KEYWORD for p in params):
        return None
    return tuple((p.name, None if p.default is p.empty else p.default) for p in params)


def _other_step(cfg: dict, state: _State, optimizer) -> bool:
    """A step other than the counted optimizer's usual one: whether the run counts it."""
    state.other_calls += 1
    if state.stopped:
        # The stop was raised and the script caught it (a bare except: or except
        # BaseException: around the step) and trained on: the record is already complete.
        _caught_stop(cfg, state)
    if not _counted(state, optimizer):
        _drop_other_losses(state)
        return False
    return True


def _milestone(state: _State, n: int) -> None:
    """At ``next_milestone`` steps: stop the run, or start or stop the profiler (a run with
    ``profile_steps`` profiles the steps after warm-up, then stops)."""
    if not state.profile_steps:
        _stop(state)  # raises StopRun
    if n == state.warmup:
        _start_profiler(state)
        state.next_milestone = state.warmup + state.profile_steps
    elif n == state.warmup + state.profile_steps:
        _stop_profiler(state)
        _stop(state)


def _stop(state: _State) -> None:
    """End the script's training: raise StopRun, remembering that it was raised (_caught_stop)."""
    state.stopped = True
    state.counted = _no_optimizer  # a step after this one is not the usual step (_other_step)
    raise StopRun()


def _caught_stop(cfg: dict, state: _State) -> None:
    """The script swallowed StopRun and stepped again: write the record and end the process.

    Before, such a script trained on to its end (or to the runner's --timeout) and its record
    then held every step, or none. The record holds the steps up to the stop, as for any run; the
    process ends as a torchrun rank does (threads joined, atexit handlers run) with status 0.
    """
    sys.stderr.write(
        "trainlint verify: the script caught the verifier's stop signal (a bare `except:` or "
        "`except BaseException:` around the training step) and went on training; the run ends "
        "here, with the steps measured up to the stop.\n"
    )
    state.stop_caught = True
    _finish(cfg, state, "stopped")
    _exit_before_finalization(0)


def _counted(state: _State, optimizer) -> bool:
    """Whether this optimizer's step is the one the run counts, switching to a new optimizer
    once the counted one has stopped.

    Several optimizers that step in turn (a GAN's two) leave the first one counted: only its
    steps are steps. An optimizer that steps twice with no step of the counted one in between
    has taken over (stage 1 trains a head with one optimizer, stage 2 everything with another):
    from its second step on, its steps are counted. Before, only the first optimizer's steps
    counted, and a run whose first stage was short "finished after 10 optimizer steps". The
    step where it takes over spans both of its steps since the old optimizer's last one (its
    loss is that of the second step's backward calls: the first one's were dropped as another's).
    """
    # (the counted optimizer's own steps do not come here: the step hook tells them itself)
    here = (id(optimizer), len(state.step_ends))
    if state.counted() is None or state.last_other == here:
        # The first step of the run; or the counted optimizer is gone (a stage's optimizer
        # freed when the stage ended: held by id, the next one could take its id and its place
        # unnoticed); or another stepped twice with no counted step in between: it is the
        # counted one from now on.
        if state.counted is not _no_optimizer:
            state.optimizer_switches += 1
        state.counted = weakref.ref(optimizer)
        state.last_other = None
        if state.device is None:
            state.device = _param_device(optimizer)
        return True
    state.last_other = here
    state.other_optimizer_steps += 1
    return False


def _drop_other_losses(state: _State) -> None:
    """Forget the losses of the backward calls that led to another optimizer's step.

    The backward calls since the last step of any optimizer belong to the optimizer stepping
    now; when that is not the counted one (a GAN's generator, stepping after its discriminator)
    they are not the counted step's. Before, they stayed pending and the counted step's loss
    was the mean of the discriminator's loss and the generator's previous one. Only list
    bookkeeping: the tensors are dropped, never read, so no host sync is added. A loss whose
    backward comes before the other optimizer's step but belongs to the counted one (both
    backward calls first, then both steps) cannot be told apart and is dropped alike.
    """
    done = state.step_marks[-1] if state.step_marks else 0  # the losses of counted steps
    n = len(state.losses) - done
    if n:
        del state.losses[done:]
        state.other_backward += n


def _backward_loss(tensors, grads, scaled: dict):
    """The detached loss a backward call computes gradients of, or None when there is no loss.

    A scalar is the loss; a list of scalars (``torch.autograd.backward([l1, l2])``) sums them; a
    tensor with an explicit gradient (``t.backward(g)``) is the loss ``(t * g).sum()``, whose
    gradient that is. A tensor that GradScaler.scale returned stands for the loss it was given
    (``scaled``). All of it stays on the device: no read here.

    The usual ``loss.backward()`` does not come here (the backward hook records it itself);
    shapes are not made equal here either (a ``reshape`` took three times as long as a
    ``detach``) but at the end (_collect).
    """
    torch = sys.modules["torch"]
    if grads is None and isinstance(tensors, torch.Tensor):
        entry = scaled.get(id(tensors))
        if entry is not None and entry[0]() is tensors:
            tensors = entry[1]
        return tensors.detach() if tensors.numel() == 1 else None
    if isinstance(tensors, torch.Tensor):
        tensors = (tensors,)
        grads = tuple(grads) if isinstance(grads, (tuple, list)) else (grads,)
    elif not isinstance(tensors, (tuple, list)):
        return None
    elif isinstance(grads, torch.Tensor) or grads is None:
        grads = (grads,) * len(tensors) if grads is None else (grads,)
    if len(grads) != len(tensors):
        return None
    total = None
    for t, g in zip(tensors, grads):
        if not isinstance(t, torch.Tensor):
            return None
        entry = scaled.get(id(t))
        if entry is not None and entry[0]() is t:
            t = entry[1]  # the loss before scaling (its gradient argument is scaled alike)
            g = None
        if t.numel() == 1:
            part = t.detach()  # any one-element shape: _collect makes them ()
        elif isinstance(g, torch.Tensor) and g.shape == t.shape:
            part = (t.detach() * g).sum()
        else:
            return None
        if total is not None and part.device != total.device:
            return None  # losses on several devices (model parallel): no sum without a copy
        total = part if total is None else total + part
    return total


def _remember_scaled(outputs, result, scaled: dict) -> None:
    """Note which tensor GradScaler.scale returned for which loss, holding the scaled one weakly.

    The entry goes when the scaled tensor does not outlive its step (dead entries are dropped as
    new ones come, so the table stays small)."""
    import weakref

    import torch

    if isinstance(outputs, torch.Tensor):
        pairs = [(outputs, result)]
    elif isinstance(outputs, (list, tuple)) and isinstance(result, (list, tuple)):
        pairs = list(zip(outputs, result))
    else:
        return
    if len(scaled) > 64:
        for key in [k for k, (ref, _) in scaled.items() if ref() is None]:
            del scaled[key]
    for loss, out in pairs:
        if isinstance(loss, torch.Tensor) and isinstance(out, torch.Tensor) and out is not loss:
            try:
                scaled[id(out)] = (weakref.ref(out), loss.detach())
            except TypeError:
                pass


EVENT_BATCH = 4096  # events created at a time: a verify run's warm-up + steps fit in one batch


def _make_events(state: _State):
    """One timing event for this step, after creating the events the coming steps will record.

    torch creates a CUDA event lazily, at its first record, and creating one is a driver call
    that costs as much as a small kernel launch (tens of microseconds on some virtual machines).
    So the whole run's events are created and recorded once here, at the end of the first step
    (a warm-up step, whose time no interval measures), and each later step only records one.
    """
    import torch

    stream = torch.cuda.current_stream(state.device)
    count = max(1, min(EVENT_BATCH, state.total - len(state.step_ends)))
    events = [torch.cuda.Event(enable_timing=True) for _ in range(count)]
    for ev in events:
        ev.record(stream)
    state.spare_events = events[1:]
    return events[0]


def _param_device(optimizer):
    """The CUDA device of the optimizer's parameters, or None when they are not on a GPU."""
    for group in optimizer.param_groups:
        for p in group["params"]:
            return p.device if p.device.type == "cuda" else None
    return None


def _start_profiler(state: _State) -> None:
    import torch
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU]
    if state.device is not None:
        activities.append(ProfilerActivity.CUDA)
        torch.cuda.synchronize(state.device)
    state.profiler = profile(activities=activities)
    state.profiler.__enter__()
    state.profile_start = time.perf_counter()


def _stop_profiler(state: _State) -> None:
    import torch

    from trainlint.verify.profile import breakdown_from_profiler

    if state.device is not None:
        torch.cuda.synchronize(state.device)
    wall = time.perf_counter() - state.profile_start
    state.profiler.__exit__(None, None, None)
    state.profile = breakdown_from_profiler(state.profiler, wall, state.profile_steps)


def _seed(seed: int) -> None:
    import torch

    random.seed(seed)
    torch.manual_seed(seed)
    try:
        import numpy as np
    except ImportError:
        pass
    else:
        np.random.seed(seed)


def _collect(state: _State, status: str) -> dict:
    import torch

    if state.device is not None:
        # A script may run under torch.cuda.set_sync_debug_mode("error") to prove that its
        # steps never wait for the GPU; the harness's one read at the end is not such a step.
        torch.cuda.set_sync_debug_mode(0)
    # (a loss on the CPU was read when it came: a number, not a tensor)
    read = iter(_read_losses([t for t in state.losses if isinstance(t, torch.Tensor)]))
    losses = [next(read) if isinstance(v, torch.Tensor) else float(v) for v in state.losses]
    counts = [b - a for a, b in zip([0] + state.step_marks[:-1], state.step_marks)]
    per_step: list[float] = []
    i = 0
    for count in counts:
        chunk = losses[i : i + count]
        i += count
        per_step.append(sum(chunk) / len(chunk) if chunk else float("nan"))
    ends = state.step_ends
    wall_times = [b - a for a, b in zip([state.start] + ends[:-1], ends)]
    device_times = None
    if state.cuda_events and len(state.cuda_events) == len(ends):
        torch.cuda.synchronize(state.device)
        evs = state.cuda_events
        device_times = [None] + [a.elapsed_time(b) / 1000.0 for a, b in zip(evs[:-1], evs[1:])]
    return {
        "status": status,
        "rank": int(os.environ.get("RANK", "0")),
        "steps_seen": len(ends),
        "other_optimizer_steps": state.other_optimizer_steps,
        "other_optimizer_backward": state.other_backward,
        "optimizer_switches": state.optimizer_switches,
        "scaler_skipped_steps": state.scaler_skipped,
        "stop_caught": state.stop_caught,
        "step_wall_s": wall_times,
        "step_device_s": device_times,
        "data_wait_s": _waits_per_step(state),
        "loader_batches": state.loader_batches,
        "loss_per_step": per_step,
        "backward_per_step": counts,
        "profile": state.profile,
        "pinned_loaders": state.pinned_loaders,
        "own_generator_loaders": state.own_generator_loaders,
    }


def _read_losses(tensors: list) -> list[float]:
    """The values of the loss tensors kept during the run: the single device-to-host read of the
    whole run (one per device when the losses lie on several)."""
    if not tensors:
        return []
    import torch

    # (a loss is any one-element tensor, shape () or (1,) ...: _backward_loss leaves it so)
    if len({t.device for t in tensors}) == 1:
        return torch.stack([t.float().reshape(()) for t in tensors]).cpu().tolist()
    return [float(t.float().reshape(()).cpu()) for t in tensors]


def _waits_per_step(state: _State) -> list[float]:
    """Seconds each counted step waited for the loader: the waits that ended after the step
    before it and before its own end (waits after the last counted step belong to no step)."""
    import bisect

    per_step = [0.0] * len(state.step_ends)
    for end, wait in state.waits:
        i = bisect.bisect_left(state.step_ends, end)
        if i < len(per_step):
            per_step[i] += wait
    return per_step


_keep: list = []


def _execute(cfg: dict) -> None:
    script = cfg["script"]
    code_path = cfg.get("code_path") or script
    with open(code_path, "rb") as f:
        source = f.read()
    # Compiled under the path of the file actually run, so tracebacks show the right lines.
    code = compile(source, code_path, "exec", dont_inherit=True)
    global _executed_path
    _executed_path = code_path
    module = types.ModuleType("__main__")
    # __file__ is the original script's path for both versions: the fixed copy stands in for
    # the script where it lives (data paths built from __file__ keep working). Spawned children
    # re-import the code that runs (_spawn_main_from).
    module.__dict__.update(
        {"__file__": script, "__builtins__": builtins, "__loader__": None, "__spec__": None}
    )
    if os.path.abspath(code_path) != os.path.abspath(script):
        _spawn_main_from(script, code_path)
    # Keep the harness module alive (it is __main__ when started with -m) before replacing it.
    _keep.append(sys.modules.get("__main__"))
    sys.modules["__main__"] = module
    sys.argv = [script] + sys.argv[1:]
    sys.path[0] = os.path.dirname(script)
    exec(code, module.__dict__)


def _spawn_main_from(script: str, code_path: str) -> None:
    """Make spawn/forkserver children (DataLoader workers) re-import the code that runs, not the
    original script.

    Such a child rebuilds ``__main__`` from the parent's ``__main__.__file__``, which is the
    original script's path here (see _execute): without this, a fixed version's loader workers
    ran the original's ``__getitem__`` and the verifier measured the original twice. The runner
    puts the fixed copy beside the script (a hidden name), so the child's ``__file__`` still sits
    in the script's directory.
    """
    from multiprocessing import spawn

    orig = spawn.get_preparation_data
    original = os.path.normpath(script)

    def get_preparation_data(name):
        data = orig(name)
        if data.get("init_main_from_path") == original:
            data["init_main_from_path"] = os.path.normpath(code_path)
        return data

    spawn.get_preparation_data = get_preparation_data


def main() -> None:
    cfg = json.loads(os.environ[ENV_VAR])
    os.environ.pop(ENV_VAR, None)  # the script's own subprocesses are not measured
    threads = cfg.get("threads")
    import torch

    if threads:
        torch.set_num_threads(int(threads))
    state = _State(cfg)
    _seed(int(cfg["seed"]))
    _install(cfg, state)
    _start_progress(cfg, state)
    status = "finished"
    exit_code = 0
    try:
        _execute(cfg)
    except StopRun:
        status = "stopped"
    except SystemExit as e:
        code = e.code
        exit_code = code if isinstance(code, int) else (0 if code is None else 1)
        if exit_code:
            _write_progress(cfg, state, final=True)
            if int(os.environ.get("WORLD_SIZE", "1")) > 1:
                _rank_failed(cfg, exit_code)
            raise
    except BaseException as exc:
        _write_progress(cfg, state, final=True)
        if int(os.environ.get("WORLD_SIZE", "1")) > 1:
            _rank_failed(cfg)
        if isinstance(exc, KeyboardInterrupt):
            raise
        # The traceback starts at the script: runpy's and the harness's frames (main, _execute)
        # above it said nothing of the cause and made the script's error look like trainlint's.
        sys.stderr.write(_script_traceback(exc))
        raise SystemExit(1) from None
    if state.stopped:
        status = "stopped"  # also when the script caught StopRun and then left its loop
    _finish(cfg, state, status)
    sys.stdout.flush()
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:
        _exit_before_finalization(exit_code)


PROGRESS_EVERY_S = 0.5


def _progress_path(cfg: dict) -> str:
    return os.path.join(cfg["out_dir"], f"rank{os.environ.get('RANK', '0')}.progress")


def _write_progress(cfg: dict, state: _State, final: bool = False) -> None:
    """Write how many steps the run made, and when the last one ended (wall clock), for the
    runner's message when the script fails or does not finish in time (runner._progress).

    Before, a failure's message did not say whether the script died at its first step or after
    most of the run, nor a timeout's whether it hung before training or mid-way. ``final``: the
    script failed and the count is exact (otherwise it may lag the run by up to
    PROGRESS_EVERY_S).
    """
    with state.progress_lock:
        ends = state.step_ends
        n = len(ends)
        if state.progress_final or (n == state.progress_written and not final):
            return
        last = time.time() - (time.perf_counter() - ends[-1]) if ends else None
        record = {"steps": n, "last_step_time": last, "final": final}
        path = _progress_path(cfg)
        try:
            with open(path + ".tmp", "w") as f:
                json.dump(record, f)
            os.replace(path + ".tmp", path)
        except OSError:
            return
        state.progress_written = n
        state.progress_final = final


def _start_progress(cfg: dict, state: _State) -> None:
    """Keep the progress file current from a daemon thread, off the training thread.

    The step hook only appends to a list; writing from it would put file I/O into the measured
    steps, and writing only every so often from it would leave a run that hangs after a quick
    burst of steps with an old count. The thread wakes every PROGRESS_EVERY_S and writes only
    when the count changed; the first write (0 steps) says that the harness got going.
    """
    def loop() -> None:
        while True:
            _write_progress(cfg, state)
            time.sleep(PROGRESS_EVERY_S)

    threading.Thread(target=loop, name="trainlint-verify-progress", daemon=True).start()


def _finish(cfg: dict, state: _State, status: str) -> None:
    """Write the rank's record (``<out_dir>/rank<R>.json``); after a stop, release the script's
    process group so that the rank exits cleanly."""
    result = _collect(state, status)
    out = os.path.join(cfg["out_dir"], f"rank{result['rank']}.json")
    tmp = out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(result, f)
    os.replace(tmp, out)
    if status == "stopped":
        import torch.distributed as dist

        # The script stopped mid-training; release its process group so the rank exits cleanly.
        if dist.is_available() and dist.is_initialized():
            try:
                dist.destroy_process_group()
            except Exception:
                pass


def _script_traceback(exc: BaseException) -> str:
    """exc's traceback from the script's first frame on: the frames above it (runpy, main,
    _execute) are the harness's own."""
    import traceback

    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != _executed_path:
        tb = tb.tb_next
    return "".join(traceback.format_exception(type(exc), exc, tb or exc.__traceback__))


_executed_path = ""  # the file _execute compiled the script under


def _rank_failed(cfg: dict, exit_code: int = 1) -> None:
    """A torchrun rank whose script raised: say so where the runner looks, then leave cleanly.

    Left to the interpreter, the rank's exception went through finalization with gloo's threads
    alive and the rank aborted ("terminate called without an active exception", SIGABRT), so
    torchrun's summary showed a signal and the script's own error was lost in its output. The
    traceback goes to stderr as usual and to ``rank<R>.error.json`` (with the time, so the runner
    can name the rank that failed first); the rank exits with status 1. The script's threads are
    not waited for: after a failure, its other threads may wait on ranks that are gone.

    A rank whose script calls ``sys.exit(N)`` with N non-zero is recorded alike, with N as its
    ``exit_code`` and its exit status: before, the rank left with no record, and the runner named
    the rank that then lost its peer ("Connection closed by peer") as the one that failed first.
    """
    exc = sys.exc_info()[1]
    text = _script_traceback(exc)
    if isinstance(exc, SystemExit):
        text += f"(the script called sys.exit({exc.code!r}): the rank's exit status {exit_code})\n"
    sys.stderr.write(text)
    rank = int(os.environ.get("RANK", "0"))
    record = {"rank": rank, "time": time.time(), "traceback": text, "exit_code": exit_code}
    if isinstance(exc, SystemExit):
        record["sys_exit"] = repr(exc.code)  # the runner's message names the call (runner._failure)
    try:
        with open(os.path.join(cfg["out_dir"], f"rank{rank}.error.json"), "w") as f:
            json.dump(record, f)
    except OSError:
        pass
    _exit_before_finalization(exit_code, wait_for_threads=False)


def _exit_before_finalization(code: int, wait_for_threads: bool = True) -> None:
    """End a torchrun rank once its results are written, doing what finalization does first.

    Interpreter finalization with gloo's worker threads alive (a DDP reducer still holds the
    group after ``destroy_process_group``) can abort the rank ("terminate called without an
    active exception") after it finished; that is torch's teardown, not the script. So: wait for
    the script's non-daemon threads and run its ``atexit`` handlers (a pending asynchronous
    checkpoint completes), flush, and leave with the script's exit code.
    """
    import atexit
    import threading

    for thread in threading.enumerate() if wait_for_threads else ():
        if thread is not threading.main_thread() and not thread.daemon:
            thread.join()
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    main()
