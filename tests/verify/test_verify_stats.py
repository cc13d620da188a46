"""Statistics and verdicts on given numbers (no timing here)."""

from __future__ import annotations

import random

import pytest

from trainlint.verify import stats


def _noisy(level: float, n: int, seed: int, spread: float = 0.05) -> list[float]:
    rng = random.Random(seed)
    return [level * (1 + rng.uniform(-spread, spread)) for _ in range(n)]


def test_median_and_mean():
    assert stats.median([3.0, 1.0, 2.0]) == 2.0
    assert stats.median([4.0, 1.0, 2.0, 3.0]) == 2.5
    assert stats.mean([1.0, 2.0, 6.0]) == 3.0
    with pytest.raises(ValueError):
        stats.median([])


def test_clear_speedup_is_faster():
    before = [_noisy(0.040, 20, k) for k in range(3)]
    after = [_noisy(0.020, 20, 10 + k) for k in range(3)]
    sp = stats.compare_steps(before, after)
    assert sp.verdict == stats.FASTER
    assert 1.8 < sp.speedup < 2.2
    assert 1.0 < sp.low <= sp.speedup <= sp.high


def test_clear_slowdown_is_slower():
    sp = stats.compare_steps([_noisy(0.02, 20, 1)] * 3, [_noisy(0.03, 20, 2)] * 3)
    assert sp.verdict == stats.SLOWER
    assert sp.high < 1.0


def test_same_distribution_is_no_measurable_change():
    # Many seeds: the spread must cover 1.0 for equal versions (no invented speedups).
    claims = 0
    for s in range(30):
        before = [_noisy(0.01, 20, 100 * s + k, 0.2) for k in range(3)]
        after = [_noisy(0.01, 20, 100 * s + 50 + k, 0.2) for k in range(3)]
        if stats.compare_steps(before, after).verdict != stats.NO_CHANGE:
            claims += 1
    assert claims == 0


def test_one_disagreeing_round_blocks_the_claim():
    before = [_noisy(0.04, 20, 1), _noisy(0.04, 20, 2), _noisy(0.04, 20, 3)]
    after = [_noisy(0.02, 20, 4), _noisy(0.05, 20, 5), _noisy(0.02, 20, 6)]
    sp = stats.compare_steps(before, after)
    assert sp.low < 1.0
    assert sp.verdict == stats.NO_CHANGE


def test_bursty_steps_use_the_mean():
    # Two loader workers hand over batches in pairs: steps alternate ~35 ms and ~1 ms. A per-step
    # median would jump between the modes; the run's mean step time is the throughput.
    bursty = [0.035, 0.001] * 10
    steady = [0.036] * 20
    sp = stats.compare_steps([steady] * 3, [bursty] * 3)
    assert sp.speedup == pytest.approx(0.036 / 0.018)


def test_same_numbers_same_verdict():
    before = [_noisy(0.01, 20, k, 0.3) for k in range(3)]
    after = [_noisy(0.009, 20, 9 + k, 0.3) for k in range(3)]
    a = stats.compare_steps(before, after)
    b = stats.compare_steps(before, after)
    assert (a.low, a.high, a.verdict) == (b.low, b.high, b.verdict)


def test_rounds_must_pair_up():
    with pytest.raises(ValueError):
        stats.compare_steps([[1.0]], [[1.0], [1.0]])


def test_data_wait_share():
    assert stats.data_wait_share([[1.0, 1.0]], [[0.5, 0.5]]) == 0.5
    assert stats.data_wait_share([[0.0]], [[0.0]]) == 0.0


def test_one_round_claims_nothing():
    # Even a clear difference within one pair of runs says nothing about run-to-run drift.
    sp = stats.compare_steps([_noisy(0.04, 20, 1)], [_noisy(0.02, 20, 2)])
    assert sp.low > 1.0
    assert sp.verdict == stats.NO_CHANGE


def test_rounds_that_agree_by_chance_claim_nothing():
    # Whole runs shifted by load: all three rounds on one side of 1.0 with tight steps inside
    # each run. Within-run intervals alone would call this "faster"; the rounds' t-interval not.
    before = [[0.010] * 20, [0.012] * 20, [0.010] * 20]
    after = [[0.0095] * 20, [0.0098] * 20, [0.0085] * 20]
    sp = stats.compare_steps(before, after)
    assert all(r > 1 for r in sp.pair_ratios)
    assert sp.low < 1.0 < sp.high
    assert sp.verdict == stats.NO_CHANGE


def test_rounds_interval():
    lo, hi = stats.rounds_interval([2.0, 2.0, 2.0])
    assert lo == pytest.approx(2.0) and hi == pytest.approx(2.0)
    lo, hi = stats.rounds_interval([2.2, 2.28, 2.09])  # measured on the loader fixture
    assert 1.5 < lo < 2.19 < hi < 3.0
