"""What shape of the harness's per-step hooks costs what, in the loop (not a test: run by hand).

The harness records each step's loss by wrapping ``torch.autograd.backward`` and each step's end
from a step hook. This times the tight loop of bench/verify_overhead.py with candidate shapes of
one of the two side by side, in one process, blocks alternating (rotated each round), so the
choice of shape rests on a measurement:

    OMP_NUM_THREADS=1 python bench/verify_hook_shapes.py [--part backward|step] [--rounds 300]
                                                         [--width 128]

--part backward (the default): the harness's wrapper as installed, a wrapper that records
nothing (generic ``*args, **kwargs``, and torch's explicit signature), and the capture with
``detach`` or ``.data``. --part step: the harness's step hook as installed (at
``Optimizer._optimizer_step_code`` where torch has it), the same hook as a global step
post-hook, an empty post-hook, and one that only calls ``perf_counter``. Both have "off again"
(the noise floor). Each row: the median of same-round ratios to "off" and the 95% t-interval of
their geometric mean. A single process's readings depend on where its memory landed: rerun it a
few times. Run it on a quiet machine: under load its rows swing by several percent.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

from verify_overhead import alternate, same_round, tight_loop


def backward_rows(harness, state, hooks) -> dict:
    """Candidate backward wrappers, each as install() -> undo()."""
    import torch

    installed = torch.autograd.backward
    hooks.disable()
    orig = torch.autograd.backward
    tensor_cls, kept = torch.Tensor, []

    def generic_pass(tensors, grad_tensors=None, *args, **kwargs):
        return orig(tensors, grad_tensors, *args, **kwargs)

    def generic_detach(tensors, grad_tensors=None, *args, **kwargs):
        if grad_tensors is None and tensors.__class__ is tensor_cls and tensors.numel() == 1:
            kept.append(tensors.detach())
        return orig(tensors, grad_tensors, *args, **kwargs)

    def generic_data(tensors, grad_tensors=None, *args, **kwargs):
        if grad_tensors is None and tensors.__class__ is tensor_cls and tensors.numel() == 1:
            kept.append(tensors.data)
        return orig(tensors, grad_tensors, *args, **kwargs)

    wrappers = {"off": orig, "off again": orig, "harness as installed": installed,
                "wrapper, records nothing": generic_pass, "detach": generic_detach,
                ".data": generic_data}
    # torch's own parameter list, spelled out: no argument tuple or keyword dict built per call.
    if harness._backward_parameters(orig) == harness.BACKWARD_PARAMETERS:
        def explicit_pass(tensors, grad_tensors=None, retain_graph=None, create_graph=False,
                          grad_variables=None, inputs=None):
            return orig(tensors, grad_tensors, retain_graph, create_graph, grad_variables, inputs)

        def explicit_detach(tensors, grad_tensors=None, retain_graph=None, create_graph=False,
                            grad_variables=None, inputs=None):
            if grad_tensors is None and tensors.__class__ is tensor_cls and tensors.numel() == 1:
                kept.append(tensors.detach())
            return orig(tensors, grad_tensors, retain_graph, create_graph, grad_variables, inputs)

        wrappers["explicit signature, records nothing"] = explicit_pass
        wrappers["explicit signature, detach"] = explicit_detach

    def row(wrapper):
        def install():
            torch.autograd.backward = wrapper

            def undo():
                torch.autograd.backward = orig
                kept.clear()
                state.losses.clear()
            return undo
        return install

    return {label: row(wrapper) for label, wrapper in wrappers.items()}


def step_rows(harness, state, hooks) -> dict:
    """Candidate step hooks, each as install() -> undo()."""
    from torch.optim.optimizer import register_optimizer_step_post_hook

    hooks.disable()
    entry_hook = next((new for _, _, name, _, new in hooks.patches
                       if name == "_optimizer_step_code"), hooks.step_hook)
    perf = time.perf_counter

    def nothing():
        return lambda: None

    def post_hook(fn):
        def install():
            handle = register_optimizer_step_post_hook(fn)

            def undo():
                handle.remove()
                state.step_ends.clear()
                state.step_marks.clear()
            return undo
        return install

    def as_installed():
        hooks.enable(("step",))

        def undo():
            hooks.disable()
            state.step_ends.clear()
            state.step_marks.clear()
        return undo

    return {"off": nothing, "off again": nothing, "harness as installed": as_installed,
            "the same hook as a global post-hook": post_hook(entry_hook),
            "empty post-hook": post_hook(lambda o, a, k: None),
            "post-hook calling perf_counter only": post_hook(lambda o, a, k: perf())}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--part", choices=("backward", "step"), default="backward")
    p.add_argument("--rounds", type=int, default=300)
    p.add_argument("--block-steps", type=int, default=50)
    p.add_argument("--width", type=int, default=128)
    a = p.parse_args()

    from trainlint.verify import harness

    block, clock = tight_loop(a.width, a.block_steps)
    cfg = {"steps": 10**9, "warmup": 1, "seed": 0}
    state = harness._State(cfg)
    hooks = harness._install(cfg, state)
    rows = (backward_rows if a.part == "backward" else step_rows)(harness, state, hooks)

    def run_block(label: str) -> float:
        undo = rows[label]()
        t = block()
        undo()
        return t

    for _ in range(5):
        block()
    times = alternate(list(rows), a.rounds, run_block)
    print(f"{a.rounds} rounds of {len(rows)} blocks of {a.block_steps} steps, width {a.width}, "
          f"{clock.__name__}: off {statistics.median(times['off']) * 1e6:.1f} us/step")
    for label in list(rows)[1:]:
        pair, low, high = same_round(times, label)
        print(f"{label:>36}: median of same-round ratios {(pair - 1) * 100:+.2f}%, "
              f"95% interval {(low - 1) * 100:+.2f}% to {(high - 1) * 100:+.2f}%")


if __name__ == "__main__":
    main()
