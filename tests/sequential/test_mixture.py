"""The default test: validity (measured), the finite-pool martingale, the confidence sequence."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fairprobe.errors import InvalidParameterError
from fairprobe.sequential import AuditPool, MixtureBettingTest, run_pool
from fairprobe.sequential.base import COMPLIANT, VIOLATION
from fairprobe.sequential.pool import make_orders

N = 3000


def _pool(gap: float, n_a: int = N, n_b: int = N, base: float = 0.3) -> AuditPool:
    xa = np.zeros(n_a)
    xa[: int(round((base + gap) * n_a))] = 1
    xb = np.zeros(n_b)
    xb[: int(round(base * n_b))] = 1
    in_a = np.r_[np.ones(n_a, bool), np.zeros(n_b, bool)]
    return AuditPool(in_a=in_a, group_names=("a", "b"), decisions=np.r_[xa, xb])


def _se(p: float, n: int) -> float:
    return math.sqrt(max(p * (1 - p), 0.05 * 0.95) / n)


@pytest.mark.parametrize(("n_a", "n_b"), [(N, N), (1000, 4000)])
def test_type_one_error_at_the_boundary_of_a_finite_pool(n_a: int, n_b: int) -> None:
    """Pool gap exactly delta (the worst case of H0), without replacement, budget = pool."""
    res = run_pool(_pool(0.1, n_a, n_b), tolerance=0.1, budget=n_a + n_b, repeats=400, seed=3)
    v = res.shares["violation"]
    assert v <= 0.05 + 2 * _se(0.05, 400)
    assert res.params["population"] == [n_a, n_b]


def test_type_two_error_just_above_the_boundary() -> None:
    """Pool gap delta + 0.01: 'compliant' at most beta of the time."""
    res = run_pool(_pool(0.11), tolerance=0.1, budget=2 * N, repeats=300, seed=4, beta=0.2)
    assert res.shares["compliant"] <= 0.2 + 2 * _se(0.2, 300)


def test_iid_draws_at_the_boundary_and_both_signs() -> None:
    rng = np.random.default_rng(7)
    t = MixtureBettingTest(0.1, "decisions")
    for pa, pb in [(0.4, 0.3), (0.3, 0.4)]:
        in_a = np.tile([True, False], (400, 1500))
        x = (rng.random(in_a.shape) < np.where(in_a, pa, pb)).astype(float)
        res = t.run_orders(in_a, x)
        assert (res.codes == VIOLATION).mean() <= 0.05 + 2 * _se(0.05, 400)


def test_decides_clear_cases_quickly_and_alternates_groups() -> None:
    far = run_pool(_pool(0.3), tolerance=0.1, budget=4000, repeats=100, seed=1)
    assert far.shares["violation"] == 1.0 and far.mean_queries < 400
    same = run_pool(_pool(0.0), tolerance=0.1, budget=4000, repeats=100, seed=1)
    assert same.shares["compliant"] == 1.0 and same.mean_queries < 1000
    pool = _pool(0.0, 50, 80)
    order = make_orders(130, 130, 1, 0, in_a=pool.in_a)[0]
    assert pool.in_a[order[:100:2]].all() and not pool.in_a[order[1:100:2]].any()
    assert sorted(order.tolist()) == list(range(130))


def test_confidence_sequence_covers_the_pool_gap() -> None:
    pool = _pool(0.05)
    t = MixtureBettingTest(0.1, "decisions").for_pool(pool.in_a, pool.decisions)
    orders = make_orders(2 * N, 1200, 24, 5, in_a=pool.in_a)
    missed = 0
    for o in orders:
        xa = pool.decisions[o][pool.in_a[o]]
        xb = pool.decisions[o][~pool.in_a[o]]
        low, up = t.confidence_sequence(xa, xb)
        assert np.all(np.diff(low) >= -1e-12) and np.all(np.diff(up) <= 1e-12)  # only shrinks
        missed += bool(((low > 0.05 + 1e-9) | (up < 0.05 - 1e-9)).any())
        assert up[-1] - low[-1] < 0.3
    assert missed <= 3  # alpha = 0.05: 1.2 expected at most


def test_path_carries_statistic_boundaries_and_confidence_sequence() -> None:
    res = run_pool(_pool(0.2), tolerance=0.1, budget=4000, repeats=20, seed=2)
    d = res.to_dict()
    ex = d["example_path"]
    assert ex["queries"] == len(ex["statistic_upper"]) == res.queries[0]
    pairs = ex["pairs"]
    assert len(pairs["cs_low"]) == len(pairs["log_e_violation"]) == ex["queries"] // 2
    assert d["boundaries"]["upper"] == pytest.approx(math.log(20))
    if ex["outcome"] == "violation":
        assert pairs["log_e_violation"][-1] >= math.log(20)


def test_stepper_with_population_matches_vectorised() -> None:
    pool = _pool(0.12, 900, 1400)
    t = MixtureBettingTest(0.1, "decisions").for_pool(pool.in_a, pool.decisions)
    orders = make_orders(2300, 2300, 8, 9, in_a=pool.in_a)
    res = t.run_orders(pool.in_a[orders], pool.decisions[orders])
    for r in range(8):
        path = t.run_path(pool.in_a[orders[r]], pool.decisions[orders[r]])
        assert path["queries"] == res.queries[r]
        assert (path["outcome"] == "violation") == (res.codes[r] == VIOLATION)
        assert (path["outcome"] == "compliant") == (res.codes[r] == COMPLIANT)


def test_parameters_are_checked() -> None:
    with pytest.raises(InvalidParameterError, match="bounds"):
        MixtureBettingTest(0.1, "logits", bounds=(2.0, 1.0))
    with pytest.raises(InvalidParameterError, match="sigmoid"):
        MixtureBettingTest(0.1, "scores", bounds=(-1.0, 1.0))
    with pytest.raises(InvalidParameterError, match="population"):
        MixtureBettingTest(0.1, population=(0, 5))
    # logit access audits sigmoid(logit), the probability-scale gap (tolerance in the
    # units of score access), so logits and the scores they come from give the same audit
    t = MixtureBettingTest(0.1, "logits")
    z = np.linspace(-3.0, 2.0, 10)
    assert t.for_pool(z > 0, z).bounds == (0.0, 1.0) and t.params()["observable"] == "sigmoid"
    rng = np.random.default_rng(1)
    zz = rng.normal(0.3, 1.0, 400)
    g = rng.random(400) < 0.5
    zz[g] -= 1.0
    by_logit = MixtureBettingTest(0.1, "logits").run_path(g, zz)
    by_score = MixtureBettingTest(0.1, "scores").run_path(g, 1 / (1 + np.exp(-zz)))
    assert by_logit["outcome"] == by_score["outcome"]
    assert by_logit["queries"] == by_score["queries"]
