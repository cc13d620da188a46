"""The loss guard rail's per-rule tolerances and comparisons."""

from __future__ import annotations

import math

from trainlint.verify import tolerance


def test_policy_covers_every_catalog_rule():
    codes = {f"TL{n}" for n in (101, 102, 103, 104, 105, 106, 107, 108, 201, 202, 203, 204,
                                301, 302, 303, 401, 402, 403, 404, 501, 601, 602)}
    assert codes <= set(tolerance.POLICY)
    for t in tolerance.POLICY.values():
        assert t.kind in ("exact", "step", "curve") and t.rtol >= 0 and t.reason


def test_combined_rules_take_the_loosest():
    t = tolerance.for_rules(["TL102", "TL301"])
    assert t.kind == "step" and t.rtol == tolerance.POLICY["TL301"].rtol
    t = tolerance.for_rules(["TL101", "TL301"])
    assert t.kind == "curve"
    assert tolerance.for_rules([]) == tolerance.UNKNOWN
    assert tolerance.for_rules(["TL999"]).rtol == tolerance.UNKNOWN.rtol


def test_identical_curves():
    c = tolerance.check([[1.0, 0.9, 0.8]], [[1.0, 0.9, 0.8]], tolerance.POLICY["TL102"])
    assert c.identical and c.within and c.max_deviation == 0.0
    assert c.describe() == "identical"


def test_exact_rejects_small_drift():
    c = tolerance.check([[1.0, 0.9]], [[1.0, 0.9001]], tolerance.POLICY["TL102"])
    assert not c.identical and not c.within
    assert math.isclose(c.max_deviation, 0.0001 / 0.9, rel_tol=1e-6)


def test_curve_compares_windows():
    # Reordered samples: single steps differ a lot, window means agree.
    before = [1.0, 0.6, 0.9, 0.5, 0.8, 0.4, 0.7, 0.3, 0.6, 0.2]
    after = [0.6, 1.0, 0.5, 0.9, 0.4, 0.8, 0.3, 0.7, 0.2, 0.6]
    c = tolerance.check([before], [after], tolerance.POLICY["TL105"])
    assert c.max_deviation > 0.5
    assert c.compared_deviation < 1e-9
    assert c.within


def test_nondeterministic_original_widens_the_tolerance():
    runs = [[1.0, 0.9, 0.8], [1.0, 0.91, 0.8]]
    c = tolerance.check(runs, [[1.0, 0.905, 0.8]], tolerance.UNKNOWN)
    assert c.self_deviation > 0
    assert c.allowed == 2 * c.self_deviation
    assert c.within


def test_user_tolerance():
    t = tolerance.user_tolerance(0.1)
    c = tolerance.check([[1.0, 1.0]], [[1.0, 1.05]], t)
    assert c.within and "--loss-rtol" in t.reason


def test_nan_is_a_deviation():
    c = tolerance.check([[1.0, 0.5]], [[1.0, float("nan")]], tolerance.UNKNOWN)
    assert not c.within


def test_steps_without_a_loss_are_not_compared():
    nan = float("nan")
    c = tolerance.check([[nan, nan]], [[nan, nan]], tolerance.UNKNOWN)
    assert c.steps_compared == 0 and c.within and c.describe() == "no loss seen at backward"
    c = tolerance.check([[nan, 1.0]], [[nan, 1.0]], tolerance.POLICY["TL102"])
    assert c.steps_compared == 1 and c.identical
    c = tolerance.check([[1.0, 1.0]], [[nan, 1.0]], tolerance.UNKNOWN)
    assert not c.within  # a loss lost in one version is a difference
