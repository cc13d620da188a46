"""Speedup statistics over interleaved repeats, and the verdict they allow.

A run's step time is its measured time divided by its measured steps (the mean step time):
throughput is what a fix buys, and a per-step median would hide periodic work (a checkpoint every
5th step) and jumps between modes when loader workers hand over batches in bursts (one step
waits ~35 ms, the next ~1 ms). Each version's step time is the median of its runs' step times over
the repeats, and the speedup is the ratio of those medians, original over fixed.

Its spread has to cover two kinds of noise:
- drift between runs (other load on the machine, clocks, caches), which can move a whole run:
  the rounds give one ratio per A/B pair, and a 95% Student-t interval of their mean log ratio
  says how far the speedup can be trusted across runs. Min/max of the pair ratios would not do:
  with three rounds, equally fast code puts all three on one side of 1.0 a quarter of the time
  (seen here, on a loaded machine, as a "faster" verdict for a comment-only change);
- jitter between steps inside a run: a bootstrap interval for each pair's ratio (resampling its
  steps, with a fixed seed so the same numbers always give the same verdict).
The reported spread is the union of both; "faster" is claimed only when the whole spread lies
above 1.0, "slower" only when it lies below; anything else is "no measurable change". Fewer than
three rounds seldom support a claim (the t quantile for two rounds is 12.7); one claims nothing.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

FASTER = "faster"
SLOWER = "slower"
NO_CHANGE = "no measurable change"
REJECTED = "rejected"
# The loss guard rail cannot tell: the original does not reproduce its own curve (tolerance).
INCONCLUSIVE = "inconclusive"

MIN_ROUNDS_FOR_CLAIM = 2

# Two-sided 95% quantiles of Student's t by degrees of freedom (rounds - 1); beyond the table the
# next smaller entry's value is used, which only widens the interval.
_T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306,
        9: 2.262, 10: 2.228, 12: 2.179, 15: 2.131, 20: 2.086, 30: 2.042, 60: 2.000}


def _t95(df: int) -> float:
    return _T95[max(k for k in _T95 if k <= df)]


def rounds_interval(pair_ratios: list[float]) -> tuple[float, float]:
    """95% t-interval of the geometric mean of the rounds' ratios (needs two rounds)."""
    k = len(pair_ratios)
    logs = [math.log(r) for r in pair_ratios]
    m = sum(logs) / k
    if k < 2:
        return math.exp(m), math.exp(m)
    sd = math.sqrt(sum((x - m) ** 2 for x in logs) / (k - 1))
    half = _t95(k - 1) * sd / math.sqrt(k)
    return math.exp(m - half), math.exp(m + half)

# Fixed so that the same measurements always give the same verdict.
_BOOTSTRAP_SEED = 20240229
_BOOTSTRAP_SAMPLES = 500


def median(xs: list[float]) -> float:
    if not xs:
        raise ValueError("median of no values")
    s = sorted(xs)
    n = len(s)
    mid = n // 2
    return s[mid] if n % 2 else (s[mid - 1] + s[mid]) / 2.0


def mean(xs: list[float]) -> float:
    if not xs:
        raise ValueError("mean of no values")
    return sum(xs) / len(xs)


def _percentile(sorted_xs: list[float], q: float) -> float:
    # Linear interpolation between closest ranks.
    if len(sorted_xs) == 1:
        return sorted_xs[0]
    pos = q * (len(sorted_xs) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(sorted_xs) - 1)
    return sorted_xs[lo] + (sorted_xs[hi] - sorted_xs[lo]) * (pos - lo)


def ratio_interval(
    before: list[float],
    after: list[float],
    *,
    confidence: float = 0.95,
    samples: int = _BOOTSTRAP_SAMPLES,
    rng: random.Random | None = None,
) -> tuple[float, float]:
    """Percentile-bootstrap interval of mean(before) / mean(after) from one A/B pair."""
    rng = rng or random.Random(_BOOTSTRAP_SEED)
    ratios = []
    nb, na = len(before), len(after)
    for _ in range(samples):
        mb = sum(before[rng.randrange(nb)] for _ in range(nb)) / nb
        ma = sum(after[rng.randrange(na)] for _ in range(na)) / na
        ratios.append(mb / ma)
    ratios.sort()
    tail = (1.0 - confidence) / 2.0
    return _percentile(ratios, tail), _percentile(ratios, 1.0 - tail)


@dataclass
class Speedup:
    speedup: float
    low: float
    high: float
    pair_ratios: list[float]
    before_median_s: float
    after_median_s: float

    @property
    def verdict(self) -> str:
        # One round says nothing about how much two runs of the same code differ (measured here
        # on a loaded machine: 11% between two runs of equally fast code), so it claims nothing.
        if len(self.pair_ratios) < MIN_ROUNDS_FOR_CLAIM:
            return NO_CHANGE
        if self.low > 1.0:
            return FASTER
        if self.high < 1.0:
            return SLOWER
        return NO_CHANGE


def compare_steps(before_runs: list[list[float]], after_runs: list[list[float]]) -> Speedup:
    """before_runs[k] and after_runs[k] are the measured step times of round k."""
    if not before_runs or len(before_runs) != len(after_runs):
        raise ValueError("need the same number of rounds for both versions")
    rng = random.Random(_BOOTSTRAP_SEED)
    pair_ratios = []
    lows, highs = [], []
    for b, a in zip(before_runs, after_runs):
        pair_ratios.append(mean(b) / mean(a))
        lo, hi = ratio_interval(b, a, rng=rng)
        lows.append(lo)
        highs.append(hi)
    before_med = median([mean(b) for b in before_runs])
    after_med = median([mean(a) for a in after_runs])
    t_low, t_high = rounds_interval(pair_ratios)
    return Speedup(
        speedup=before_med / after_med,
        low=min(lows + pair_ratios + [t_low]),
        high=max(highs + pair_ratios + [t_high]),
        pair_ratios=pair_ratios,
        before_median_s=before_med,
        after_median_s=after_med,
    )


def data_wait_share(step_runs: list[list[float]], wait_runs: list[list[float]]) -> float:
    """Share of measured step time spent waiting for the DataLoader, over all repeats."""
    total = sum(sum(r) for r in step_runs)
    wait = sum(sum(r) for r in wait_runs)
    return min(1.0, wait / total) if total > 0 else 0.0
