"""Metrics from counts: estimates, the result type, verdict boundaries and bad parameters."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats as sps

from fairprobe.errors import DataError, EmptyGroupError, InvalidParameterError
from fairprobe.stats import (
    ConfidenceInterval,
    CountsVector,
    MeanStats,
    MetricResult,
    demographic_parity_from_counts,
    disparate_impact_from_counts,
    equal_opportunity_from_counts,
    mean_stats,
    performance_gap_from_stats,
)


def test_dp_from_counts_newcombe_example() -> None:
    r = demographic_parity_from_counts(CountsVector(56, 70, 48, 80), tolerance=0.05,
                                       method="newcombe")
    assert r.metric == "demographic_parity_difference"
    assert r.estimate == pytest.approx(0.2)
    assert r.method == "newcombe"
    assert r.counts == CountsVector(56, 70, 48, 80)
    lo, hi = r.confidence_interval()
    assert (round(lo, 4), round(hi, 4)) == (0.0524, 0.3339)
    assert r.verdict == "unfair"  # [0.0524, 0.3339] lies above 0.05
    assert r.point_verdict == "unfair"
    assert float(r) == r.estimate


def test_confidence_interval_at_other_levels() -> None:
    r = demographic_parity_from_counts(CountsVector(56, 70, 48, 80))
    i95 = r.confidence_interval()
    i99 = r.confidence_interval(0.99)
    i80 = r.confidence_interval(0.8)
    assert i99.low < i95.low < i80.low < r.estimate < i80.high < i95.high < i99.high
    assert r.confidence_interval(0.95) == i95 == r.interval
    assert isinstance(i99, ConfidenceInterval)
    with pytest.raises(InvalidParameterError, match="'confidence_level' parameter"):
        r.confidence_interval(1.0)
    # The verdict can depend on the level: at 99.9% the lower bound crosses 0.05.
    assert r.verdict_at(0.999) == "undetermined"


def _dp(counts: tuple[int, int, int, int], tol: float) -> MetricResult:
    return demographic_parity_from_counts(CountsVector(*counts), tolerance=tol, method="newcombe")


def test_difference_verdict_boundaries() -> None:
    counts = (56, 70, 48, 80)
    lo, hi = _dp(counts, 0.0).interval
    assert _dp(counts, hi).verdict == "fair"  # band edge equal to the upper bound: inside
    assert _dp(counts, np.nextafter(hi, 0.0)).verdict == "undetermined"
    assert _dp(counts, lo).verdict == "undetermined"  # touching the band is not disjoint
    assert _dp(counts, np.nextafter(lo, 0.0)).verdict == "unfair"
    assert _dp(counts, 0.0).verdict == "unfair"  # tolerance 0: interval excludes 0
    # Negative side: swap groups.
    assert _dp((48, 80, 56, 70), np.nextafter(lo, 0.0)).verdict == "unfair"
    assert _dp((48, 80, 56, 70), hi).verdict == "fair"


def test_difference_undetermined_when_interval_straddles_band() -> None:
    r = _dp((5, 10, 4, 10), 0.05)
    assert r.interval.low < -0.05 and r.interval.high > 0.05
    assert r.verdict == "undetermined"
    assert r.point_verdict == "unfair"  # |0.1| > 0.05
    assert _dp((500_000, 1_000_000, 499_000, 1_000_000), 0.05).verdict == "fair"


def test_ratio_verdict_boundaries() -> None:
    c = CountsVector(300, 1000, 450, 1000)  # ratio 2/3
    r = disparate_impact_from_counts(c, method="score")
    lo, hi = r.interval
    assert r.estimate == pytest.approx(2 / 3)
    assert hi < 0.8 and r.verdict == "unfair" and r.point_verdict == "unfair"

    def verdict(th: float) -> str:
        return disparate_impact_from_counts(c, threshold=th, method="score").verdict

    assert verdict(lo) == "fair"
    assert verdict(np.nextafter(lo, 1.0)) == "undetermined"
    assert verdict(hi) == "undetermined"
    assert verdict(np.nextafter(hi, 1.0)) == "unfair"


def test_ratio_point_verdict_at_threshold() -> None:
    r = disparate_impact_from_counts(CountsVector(8, 10, 10, 10))
    assert r.estimate == pytest.approx(0.8)
    assert r.point_verdict == "fair"  # mu >= 0.8 (two-source paper, Definition 1)


def test_di_zero_counts() -> None:
    r = disparate_impact_from_counts(CountsVector(3, 10, 0, 10), method="score")
    assert r.estimate == math.inf and r.interval.high == math.inf
    assert r.verdict == "fair"  # lower bound 0.924 >= 0.8
    assert disparate_impact_from_counts(CountsVector(1, 10, 0, 10), method="score").verdict == (
        "undetermined")
    # the exact default cannot say fair from 3/10 vs 0/10: its lower bound is below 0.8
    assert disparate_impact_from_counts(CountsVector(3, 10, 0, 10)).verdict == "undetermined"
    r0 = disparate_impact_from_counts(CountsVector(0, 10, 0, 10))
    assert math.isnan(r0.estimate)
    assert tuple(r0.interval) == (0.0, math.inf)
    assert r0.verdict == "undetermined"
    assert r0.point_verdict == "unfair"
    d = r0.to_dict()
    assert d["estimate"] is None
    assert d["interval"] == {"low": 0.0, "high": None, "level": 0.95, "method": r0.method}
    json.dumps(d, allow_nan=False)
    rz = disparate_impact_from_counts(CountsVector(0, 10, 5, 10), method="score")
    assert rz.estimate == 0.0 and rz.interval.low == 0.0 and rz.verdict == "unfair"
    # exact (the unconditional test inverted): 0/10 vs 5/10 bounds the ratio below 0.8
    rx = disparate_impact_from_counts(CountsVector(0, 10, 5, 10))
    assert rx.interval.low == 0.0 and rx.interval.high < 0.8 and rx.verdict == "unfair"
    # the Clopper-Pearson box still allows a ratio up to 2.23
    rb = disparate_impact_from_counts(CountsVector(0, 10, 5, 10), method="box")
    assert rb.interval.low == 0.0 and rb.interval.high == pytest.approx(2.2266, abs=1e-4)
    assert rb.verdict == "undetermined" and rb.finding.coverage == "exact"


def test_di_katz_method() -> None:
    c = CountsVector(16, 80, 36, 40)
    rs = disparate_impact_from_counts(c, method="score")
    rk = disparate_impact_from_counts(c, method="katz")
    assert rs.method == "score" and rk.method == "katz"
    assert rs.estimate == rk.estimate == pytest.approx(0.2 / 0.9)
    assert rk.interval != rs.interval
    # Same ratio as Koopman's example, inverted: bounds are the reciprocals.
    assert rs.interval.low == pytest.approx(1 / 7.15222343, rel=1e-6)
    assert rs.interval.high == pytest.approx(1 / 2.93956919, rel=1e-6)
    with pytest.raises(InvalidParameterError, match="'method' parameter"):
        disparate_impact_from_counts(c, method="wald")


def test_eo_from_counts_is_dp_on_positives() -> None:
    c = CountsVector(9, 10, 3, 10)
    eo = equal_opportunity_from_counts(c, tolerance=0.1)
    dp = demographic_parity_from_counts(c, tolerance=0.1)
    assert eo.metric == "equal_opportunity_difference"
    assert eo.estimate == dp.estimate and eo.interval == dp.interval
    assert eo.verdict == "unfair"  # the exact default decides at 10 per group
    box = equal_opportunity_from_counts(c, tolerance=0.1, method="box")
    assert box.verdict == "undetermined" and box.interval.low < 0.1  # the box does not
    assert equal_opportunity_from_counts(c, tolerance=0.1, method="newcombe").verdict == "unfair"
    assert eo.method == "exact-difference" and eo.finding.coverage == "exact"


@pytest.mark.parametrize(
    "fn", [demographic_parity_from_counts, equal_opportunity_from_counts,
           disparate_impact_from_counts]
)
def test_empty_group_in_counts(fn) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(EmptyGroupError, match="Group B holds no instance"):
        fn(CountsVector(1, 3, 0, 0))
    with pytest.raises(EmptyGroupError, match="Group A holds no instance"):
        fn(CountsVector(0, 0, 1, 3))
    with pytest.raises(DataError, match="CountsVector"):
        fn((1, 2, 3, 4))


def test_boundary_counts() -> None:
    for counts in [(0, 1, 0, 1), (1, 1, 0, 1), (1, 1, 1, 1), (0, 7, 7, 7), (7, 7, 7, 7)]:
        r = demographic_parity_from_counts(CountsVector(*counts))
        assert -1 <= r.interval.low <= r.estimate <= r.interval.high <= 1
        assert r.verdict in ("fair", "unfair", "undetermined")
    # n = 1 per group can never certify fairness at tolerance 0.05.
    assert demographic_parity_from_counts(CountsVector(1, 1, 1, 1)).verdict == "undetermined"


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"tolerance": 1.5}, r"The 'tolerance' parameter of demographic_parity_from_counts must "
                             r"be a float in \[0, 1\]. Got 1.5 instead."),
        ({"tolerance": -0.1}, "'tolerance' parameter"),
        ({"tolerance": float("nan")}, "'tolerance' parameter"),
        ({"tolerance": "0.05"}, "'tolerance' parameter"),
        ({"confidence_level": 0.0}, "'confidence_level' parameter"),
        ({"confidence_level": 95}, "'confidence_level' parameter"),
    ],
)
def test_bad_parameters(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(InvalidParameterError, match=match):
        demographic_parity_from_counts(CountsVector(1, 2, 1, 2), **kwargs)  # type: ignore[arg-type]


def test_bad_threshold() -> None:
    for th in (0.0, 1.2, -1.0):
        with pytest.raises(InvalidParameterError, match="'threshold' parameter"):
            disparate_impact_from_counts(CountsVector(1, 2, 1, 2), threshold=th)
    assert disparate_impact_from_counts(CountsVector(1, 2, 1, 2), threshold=1.0).threshold == 1.0


def test_to_dict_is_json_ready_and_complete() -> None:
    r = demographic_parity_from_counts(CountsVector(3, 10, 1, 4), groups=("F", "M"))
    d = r.to_dict()
    assert set(d) == {"metric", "kind", "estimate", "interval", "confidence_level", "method",
                      "threshold", "verdict", "point_verdict", "groups", "counts", "finding"}
    f = d["finding"]
    assert f["verdict"] == d["verdict"] and f["interval"]["low"] == d["interval"]["low"]
    assert f["question"]["groups"] == ["F", "M"] and f["counts"] == d["counts"]
    assert d["counts"] == {"a": 3, "A": 10, "b": 1, "B": 4}
    assert d["groups"] == {"a": "F", "b": "M"}
    assert d["kind"] == "difference"
    assert json.loads(json.dumps(d, allow_nan=False)) == d
    assert "F vs M" in str(r)


def test_result_is_frozen() -> None:
    r = demographic_parity_from_counts(CountsVector(3, 10, 1, 4))
    with pytest.raises(AttributeError):
        r.estimate = 0.0  # type: ignore[misc]


# --- performance gap ---------------------------------------------------------------------------

def test_mean_stats_unweighted_and_constant_weights() -> None:
    rng = np.random.default_rng(0)
    v = rng.normal(size=50)
    in_a = np.arange(50) < 20
    s = mean_stats(v, in_a, ~in_a)
    assert s.n_a == 20 and s.n_b == 30 and s.neff_a == 20.0
    assert s.mean_a == pytest.approx(v[:20].mean())
    assert s.var_b == pytest.approx(v[20:].var(ddof=1))
    sw = mean_stats(v, in_a, ~in_a, np.full(50, 3.7))
    for f in ("mean_a", "var_a", "neff_a", "mean_b", "var_b", "neff_b"):
        assert getattr(sw, f) == pytest.approx(getattr(s, f), rel=1e-12)


def test_mean_stats_weighted_by_hand() -> None:
    v = np.array([1.0, 0.0, 1.0, 0.0, 1.0])
    w = np.array([1.0, 3.0, 2.0, 1.0, 1.0])
    in_a = np.array([True, True, True, False, False])
    s = mean_stats(v, in_a, ~in_a, w)
    # Group A: V1 = 6, V2 = 14, mean = 3/6, var = (1*.25 + 3*.25 + 2*.25) / (6 - 14/6).
    assert s.mean_a == pytest.approx(0.5)
    assert s.var_a == pytest.approx(1.5 / (6 - 14 / 6))
    assert s.neff_a == pytest.approx(36 / 14)
    assert s.mean_b == pytest.approx(0.5) and s.neff_b == pytest.approx(2.0)


def test_mean_stats_too_small() -> None:
    v = np.array([1.0, 0.0, 1.0])
    with pytest.raises(DataError, match="needs at least two"):
        mean_stats(v, np.array([True, False, False]), np.array([False, True, True]))
    with pytest.raises(EmptyGroupError):
        mean_stats(v, np.zeros(3, bool), np.ones(3, bool))
    with pytest.raises(DataError, match="positive weight"):
        mean_stats(np.arange(4.0), np.array([1, 1, 0, 0], bool), np.array([0, 0, 1, 1], bool),
                   np.array([1.0, 0.0, 1.0, 1.0]))


def test_performance_gap_from_stats() -> None:
    s = MeanStats(n_a=1000, mean_a=0.8, var_a=0.16, n_b=1000, mean_b=0.7, var_b=0.21,
                  neff_a=1000.0, neff_b=1000.0)
    r = performance_gap_from_stats(s, tolerance=0.02)
    assert r.metric == "performance_gap" and r.method == "welch"
    assert r.estimate == pytest.approx(0.1)
    sa, sb = 0.16 / 1000, 0.21 / 1000
    df = (sa + sb) ** 2 / (sa**2 / 999 + sb**2 / 999)  # Welch-Satterthwaite, about 1962
    half = sps.t.ppf(0.975, df) * math.sqrt(sa + sb)
    assert r.interval.low == pytest.approx(0.1 - half, rel=1e-12)
    assert r.interval.high == pytest.approx(0.1 + half, rel=1e-12)
    assert r.verdict == "unfair"
    assert r.to_dict()["counts"]["mean_a"] == 0.8
    assert performance_gap_from_stats(s, tolerance=3.0).verdict == "fair"
    with pytest.raises(InvalidParameterError, match="'tolerance' parameter"):
        performance_gap_from_stats(s, tolerance=-1.0)


def test_replace_threshold_and_direct_construction() -> None:
    import dataclasses

    r = demographic_parity_from_counts(CountsVector(56, 70, 48, 80), tolerance=0.05,
                                       method="newcombe")
    r2 = dataclasses.replace(r, threshold=0.4)
    assert r2.interval == r.interval and r2.verdict == "fair"
    with pytest.raises(InvalidParameterError, match="Unknown metric"):
        MetricResult("accuracy", 0.1, CountsVector(1, 2, 1, 2), 0.05, 0.95, "newcombe")
    with pytest.raises(InvalidParameterError, match="needs a MeanStats"):
        MetricResult("performance_gap", 0.1, CountsVector(1, 2, 1, 2), 0.05, 0.95, "welch")
