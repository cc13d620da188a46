"""Host-side cost of the CUDA calls the verifier's harness makes per step (GPU only).

Not a test: a measurement to run by hand on a GPU machine, next to `bench/verify_overhead.py
--device cuda`, to see what one training step's harness work costs there. Each line is the mean
wall time of one call over 2000 calls, with a device sync before and after the batch:

    python bench/cuda_call_costs.py

Measured on an H200 under a virtualising runtime (2026-12-04): creating and recording an event
6.7 us, recording an event created before 4.4 us (its first record creates it), re-recording 3.2
us, `torch.cuda.current_stream` 9.4 us, `detach` 1.1 us, a one-element kernel 10.4 us.
"""

import time

import torch


def per_call_us(fn, n: int = 2000) -> float:
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(n):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / n * 1e6


def main() -> None:
    device = torch.device("cuda")
    stream = torch.cuda.current_stream(device)
    one = torch.zeros(1, device=device)
    x = torch.randn(1, device=device, requires_grad=True)
    loss = (x * 2).sum()
    per_call_us(lambda: one.add_(1), 200)  # warm-up
    events = [torch.cuda.Event(enable_timing=True) for _ in range(2000)]
    print(f"create + record an event      {per_call_us(lambda: torch.cuda.Event(enable_timing=True).record(stream)):6.1f} us")
    it = iter(events)
    print(f"first record of a made event  {per_call_us(lambda: next(it).record(stream)):6.1f} us")
    it = iter(events)
    print(f"re-record an event            {per_call_us(lambda: next(it).record(stream)):6.1f} us")
    print(f"torch.cuda.current_stream     {per_call_us(lambda: torch.cuda.current_stream(device)):6.1f} us")
    print(f"detach a scalar loss          {per_call_us(lambda: loss.detach()):6.1f} us")
    print(f"a one-element kernel          {per_call_us(lambda: one.add_(1)):6.1f} us")


if __name__ == "__main__":
    main()
