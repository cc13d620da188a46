"""The torch.profiler breakdown of a few steps on a GPU, and the compute-time ratio.

Categories (shares of the profiled wall time):
- kernels: device kernels other than copies and communication;
- memcpy: device copies and memsets;
- communication: collective kernels (NCCL and friends);
- data loader: host time inside the DataLoader iterator's ``__next__``;
- other: wall time covered by none of the above (host overhead, idle device).
Categories can overlap in time (the device computes while the host loads data), so they need not
sum to one; "other" is what the union of all of them leaves uncovered.

The compute-time ratio is the seed article's "actual compute time": time in matmul, convolution
and attention kernels (overlaps merged) over wall time.

This module imports nothing from torch at import time; the classification is a pure function so
it can be checked on a machine without a GPU.
"""

from __future__ import annotations

from dataclasses import dataclass

KERNEL = "kernels"
MEMCPY = "memcpy"
COMM = "communication"
LOADER = "data loader"
OTHER = "other"
CATEGORIES = (KERNEL, MEMCPY, COMM, LOADER, OTHER)
DEVICE_CATEGORIES = (KERNEL, MEMCPY, COMM)  # seen only in device spans

_MEMCPY_MARKS = ("memcpy", "memset")
_COMM_MARKS = ("nccl", "allreduce", "all_reduce", "allgather", "all_gather", "reducescatter",
               "reduce_scatter", "broadcast", "sendrecv", "alltoall", "all_to_all")
# Kernel-name fragments of the matrix engines' work: cuBLAS/cuBLASLt (gemm, nvjet, xmma, wgmma),
# CUTLASS, cuDNN convolutions, fused attention (flash, fmha, efficient attention).
_COMPUTE_MARKS = ("gemm", "gemv", "matmul", "cutlass", "cublas", "xmma", "wgmma", "nvjet",
                  "conv", "cudnn", "winograd", "flash", "fmha", "attention", "attn", "sdpa",
                  "mma_")
_LOADER_MARK = "enumerate(dataloader)"


@dataclass(frozen=True)
class Span:
    """One profiled interval: on the device (a kernel or copy) or on the host (a loader call)."""

    name: str
    start_us: float
    end_us: float
    on_device: bool


def classify(span: Span) -> str | None:
    name = span.name.lower()
    if not span.on_device:
        return LOADER if name.startswith(_LOADER_MARK) else None
    if any(m in name for m in _MEMCPY_MARKS):
        return MEMCPY
    if any(m in name for m in _COMM_MARKS):
        return COMM
    return KERNEL


def is_compute_kernel(span: Span) -> bool:
    name = span.name.lower()
    return span.on_device and classify(span) == KERNEL and any(m in name for m in _COMPUTE_MARKS)


def _union_us(intervals: list[tuple[float, float]]) -> float:
    total = 0.0
    end = None
    start = None
    for s, e in sorted(intervals):
        if end is None or s > end:
            if end is not None:
                total += end - start
            start, end = s, e
        else:
            end = max(end, e)
    if end is not None:
        total += end - start
    return total


def breakdown(spans: list[Span], wall_s: float, steps: int) -> dict:
    """Shares of wall time per category, and the compute-time ratio, for `steps` profiled steps."""
    wall_us = wall_s * 1e6
    per: dict[str, list[tuple[float, float]]] = {c: [] for c in CATEGORIES if c != OTHER}
    compute: list[tuple[float, float]] = []
    for sp in spans:
        cat = classify(sp)
        if cat is None:
            continue
        per[cat].append((sp.start_us, sp.end_us))
        if is_compute_kernel(sp):
            compute.append((sp.start_us, sp.end_us))
    shares = {c: (_union_us(iv) / wall_us if wall_us > 0 else 0.0) for c, iv in per.items()}
    covered = _union_us([iv for ivs in per.values() for iv in ivs])
    shares[OTHER] = max(0.0, 1.0 - covered / wall_us) if wall_us > 0 else 0.0
    # Without a single device span (a CPU run) the device shares and the compute-time ratio are
    # not zero but unknown: None, never a 0% that reads as "the GPU did nothing".
    device = any(sp.on_device for sp in spans)
    return {
        "steps": steps,
        "wall_s": wall_s,
        "device": device,
        "shares": {c: None if not device and c in DEVICE_CATEGORIES else min(1.0, shares[c]) for c in CATEGORIES},
        "compute_time_ratio": (min(1.0, _union_us(compute) / wall_us) if wall_us > 0 else 0.0) if device else None,
        "top_compute_kernels": _top(spans, compute_only=True),
    }


def _top(spans: list[Span], compute_only: bool, n: int = 5) -> list[dict]:
    totals: dict[str, float] = {}
    for sp in spans:
        if compute_only and not is_compute_kernel(sp):
            continue
        totals[sp.name] = totals.get(sp.name, 0.0) + (sp.end_us - sp.start_us)
    top = sorted(totals.items(), key=lambda kv: -kv[1])[:n]
    return [{"name": k[:120], "total_us": round(v, 1)} for k, v in top]


def spans_from_profiler(prof) -> list[Span]:
    """Turn a finished torch.profiler.profile's events into Spans (runs in the harness only)."""
    from torch.autograd import DeviceType

    spans = []
    for evt in prof.events():
        on_device = evt.device_type in (DeviceType.CUDA, getattr(DeviceType, "PrivateUse1", None))
        tr = evt.time_range
        if not on_device and not evt.name.lower().startswith(_LOADER_MARK):
            continue
        spans.append(Span(evt.name, float(tr.start), float(tr.end), on_device))
    return spans


def breakdown_from_profiler(prof, wall_s: float, steps: int) -> dict:
    return breakdown(spans_from_profiler(prof), wall_s, steps)
