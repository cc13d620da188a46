"""What shape of loss capture at backward costs what, in the loop (not a test: run by hand).

The harness records each step's loss by wrapping ``torch.autograd.backward``. This times the
tight loop of bench/verify_overhead.py with candidate wrappers side by side, in one process,
blocks alternating (rotated each round), so the choice of shape rests on a measurement:

    OMP_NUM_THREADS=1 python bench/verify_capture_shapes.py [--rounds 300] [--width 128]

Rows: "off again" (the noise floor), the harness's own wrapper as installed, a wrapper that
records nothing (generic ``*args, **kwargs``, and torch's explicit signature), and the capture
with ``detach`` or ``.data``, generic or explicit. Each row: the median of same-round ratios to
"off" and the 95% t-interval of their geometric mean (trainlint.verify.stats.rounds_interval).
Run it on a quiet machine: under load its rows swing by several percent.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=300)
    p.add_argument("--block-steps", type=int, default=50)
    p.add_argument("--width", type=int, default=128)
    a = p.parse_args()

    import torch
    from torch import nn

    from trainlint.verify import harness, stats

    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(a.width, a.width), nn.Tanh(), nn.Linear(a.width, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(32, a.width), torch.randn(32, 1)

    cfg = {"steps": 10**9, "warmup": 1, "seed": 0}
    state = harness._State(cfg)
    hooks = harness._install(cfg, state)
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

    rows = {"off": orig, "off again": orig, "harness as installed": installed,
            "wrapper, records nothing": generic_pass, "detach": generic_detach, ".data": generic_data}
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

        rows["explicit signature, records nothing"] = explicit_pass
        rows["explicit signature, detach"] = explicit_detach

    def block() -> float:
        t = time.process_time()
        for _ in range(a.block_steps):
            opt.zero_grad()
            nn.functional.mse_loss(model(x), y).backward()
            opt.step()
        return (time.process_time() - t) / a.block_steps

    for _ in range(5):
        block()
    names = list(rows)
    times: dict[str, list[float]] = {name: [] for name in names}
    for k in range(a.rounds):
        for name in names[k % len(names):] + names[:k % len(names)]:
            torch.autograd.backward = rows[name]
            times[name].append(block())
            kept.clear()
            state.losses.clear()
    torch.autograd.backward = orig
    off = times["off"]
    print(f"{a.rounds} rounds of {len(names)} blocks of {a.block_steps} steps, width {a.width}, "
          f"process_time: off {statistics.median(off) * 1e6:.1f} us/step")
    for name in names[1:]:
        pairs = [on / base for on, base in zip(times[name], off)]
        low, high = stats.rounds_interval(pairs)
        print(f"{name:>36}: median of same-round ratios {(statistics.median(pairs) - 1) * 100:+.2f}%, "
              f"95% interval {(low - 1) * 100:+.2f}% to {(high - 1) * 100:+.2f}%")


if __name__ == "__main__":
    main()
