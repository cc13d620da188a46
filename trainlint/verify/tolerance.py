"""The loss guard rail: how closely the fixed version's loss curve must follow the original's.

Every rule states what its fix may change, and so how the curves are compared:
- "exact": the fix keeps numerics and data order; each step's loss must agree to 1e-6 relative
  (in practice they are bit-identical);
- "step": the fix changes floating-point order or precision; each step's loss must agree to the
  rule's relative tolerance;
- "curve": the fix legitimately changes which samples a step sees or the random streams of data
  workers; the curve is compared as means over windows of steps (a fifth of the run each), to
  the rule's relative tolerance.

The verifier pins every shuffling sampler's generator (in both versions), so loader changes such
as num_workers or persistent_workers keep the data order; they are "curve" only because worker
processes draw their random augmentations from other streams than the main process does. With a
deterministic dataset those fixes still come out bit-identical, and the report says so.

When the original itself is not deterministic run to run, the tolerance is widened to twice the
deviation seen between its own repeats, and the report states the widened value.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

EXACT_RTOL = 1e-6


@dataclass(frozen=True)
class Tolerance:
    kind: str  # "exact" | "step" | "curve"
    rtol: float
    reason: str

    def to_json(self) -> dict:
        return {"kind": self.kind, "rtol": self.rtol, "reason": self.reason}


_ORDER = {"exact": 0, "step": 1, "curve": 2}

_WORKER_RNG = "loader workers draw random augmentations from their own streams (data order pinned)"

POLICY: dict[str, Tolerance] = {
    "TL101": Tolerance("curve", 0.05, _WORKER_RNG),
    "TL102": Tolerance("exact", EXACT_RTOL, "pinned memory changes no values"),
    "TL103": Tolerance("curve", 0.05, _WORKER_RNG + "; persistent workers draw the base seed once"),
    "TL104": Tolerance("exact", EXACT_RTOL, "prefetch depth changes no values or order"),
    "TL105": Tolerance("curve", 0.10, "drop_last drops the ragged last batch of each epoch"),
    "TL106": Tolerance("curve", 0.05, _WORKER_RNG),
    "TL107": Tolerance("curve", 0.05, _WORKER_RNG),
    "TL108": Tolerance("exact", EXACT_RTOL, "non_blocking copies the same values"),
    "TL201": Tolerance("exact", EXACT_RTOL, "reading the value later changes no values"),
    "TL202": Tolerance("exact", EXACT_RTOL, "logging less often changes no values"),
    "TL203": Tolerance("exact", EXACT_RTOL, "removing a sync changes no values"),
    "TL204": Tolerance("exact", EXACT_RTOL, "an asynchronous check changes no values"),
    "TL301": Tolerance("step", 1e-4, "no_sync sums gradients locally before one all-reduce"),
    "TL302": Tolerance("exact", EXACT_RTOL, "bucket views hold the same gradients"),
    "TL303": Tolerance("step", 1e-4, "DDP reduces gradients in another order"),
    "TL401": Tolerance("exact", EXACT_RTOL, "the new autocast API computes the same"),
    "TL402": Tolerance("step", 0.05, "bfloat16 instead of float16 changes precision"),
    "TL403": Tolerance("step", 1e-3, "another initial loss scale can skip other steps early on"),
    "TL404": Tolerance("step", 0.02, "TF32 matmuls round the mantissa"),
    "TL501": Tolerance("exact", EXACT_RTOL, "saving asynchronously changes no training values"),
    "TL601": Tolerance("step", 1e-3, "fused attention kernels sum in another order"),
    "TL602": Tolerance("exact", EXACT_RTOL, "gradients set to None instead of zero"),
}

# A hand-written fixed file or a rule without a policy: the change is unknown, so the curve must
# hold step by step (--loss-rtol states another tolerance).
UNKNOWN = Tolerance("step", 1e-5, "unknown change: each step must match closely")


def for_rules(rules: list[str]) -> Tolerance:
    """The loosest tolerance among the rules (a combined fix may change all they change)."""
    if not rules:
        return UNKNOWN
    tols = [POLICY.get(code, UNKNOWN) for code in rules]
    kind = max((t.kind for t in tols), key=_ORDER.__getitem__)
    rtol = max(t.rtol for t in tols)
    reasons = "; ".join(f"{code}: {t.reason}" for code, t in zip(rules, tols))
    return Tolerance(kind, rtol, reasons)


def user_tolerance(rtol: float) -> Tolerance:
    return Tolerance("step", rtol, f"--loss-rtol {rtol:g} given on the command line")


def _rel(a: float, b: float) -> float:
    if a == b:
        return 0.0
    if math.isnan(a) or math.isnan(b):
        return math.inf
    return abs(b - a) / max(abs(a), 1e-12)


def _windows(xs: list[float], n_windows: int = 5) -> list[float]:
    size = max(1, math.ceil(len(xs) / n_windows))
    return [sum(xs[i : i + size]) / len(xs[i : i + size]) for i in range(0, len(xs), size)]


def _both_nan(x: float, y: float) -> bool:
    return math.isnan(x) and math.isnan(y)


def comparable(before: list[float], after: list[float]) -> tuple[list[float], list[float]]:
    """The steps where at least one version saw a loss (a step whose backward took no scalar,
    in both versions, has nothing to compare)."""
    pairs = [(x, y) for x, y in zip(before, after) if not _both_nan(x, y)]
    return [x for x, _ in pairs], [y for _, y in pairs]


def deviation(before: list[float], after: list[float], kind: str) -> float:
    """The largest relative difference between the curves, per step or per window."""
    a, b = comparable(before, after)
    if not a:
        return 0.0
    if kind == "curve":
        a, b = _windows(a), _windows(b)
    return max(_rel(x, y) for x, y in zip(a, b))


@dataclass
class LossCheck:
    identical: bool  # bit-identical per step over the compared steps
    max_deviation: float  # per step (relative), whatever the tolerance's kind
    compared_deviation: float  # in the tolerance's kind (per step or per window)
    allowed: float
    self_deviation: float  # between the original's own repeats
    tolerance: Tolerance
    steps_compared: int

    @property
    def within(self) -> bool:
        return self.compared_deviation <= self.allowed

    def describe(self) -> str:
        if self.steps_compared == 0:
            return "no loss seen at backward"
        if self.identical:
            return "identical"
        word = "within" if self.within else "outside"
        return f"max dev {self.max_deviation:.2g} ({word} {self.allowed:.2g} {self.tolerance.kind})"


def check(
    before_runs: list[list[float]], after_runs: list[list[float]], tolerance: Tolerance
) -> LossCheck:
    """Compare the first repeat of each version; the other repeats measure run-to-run noise."""
    a, b = before_runs[0], after_runs[0]
    n = len(comparable(a, b)[0])
    self_dev = 0.0
    for other in before_runs[1:]:
        self_dev = max(self_dev, deviation(a, other, tolerance.kind))
    allowed = max(tolerance.rtol, 2.0 * self_dev)
    return LossCheck(
        identical=n > 0 and comparable(a, b)[0] == comparable(a, b)[1],
        max_deviation=deviation(a, b, "step"),
        compared_deviation=deviation(a, b, tolerance.kind),
        allowed=allowed,
        self_deviation=self_dev,
        tolerance=tolerance,
        steps_compared=n,
    )
