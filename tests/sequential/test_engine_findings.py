"""Sequential results through the verdict engine.

Checked: Wald's bound is computed for the sampling scheme the test uses (alternating groups:
shares 1/2; random order: the pool's shares), on a 9,000 : 1,000 pool; a finding never
contradicts its own confidence sequence; logit access decides the probability-scale gap.
"""

from __future__ import annotations

import numpy as np
import pytest

from fairprobe.sequential import wald_lower_bound
from fairprobe.sequential.base import get_test
from fairprobe.sequential.pool import AuditPool, pool_truth, run_pool
from fairprobe.sequential.results import GroupTally, SequentialResult
from fairprobe.stats.finding import decide


def _pool(n_a: int = 9000, n_b: int = 1000, seed: int = 0) -> AuditPool:
    rng = np.random.default_rng(seed)
    in_a = np.r_[np.ones(n_a, bool), np.zeros(n_b, bool)]
    p = np.where(in_a, 0.55, 0.30)
    d = (rng.random(in_a.size) < p).astype(float)
    return AuditPool(in_a=in_a, group_names=("A", "B"), decisions=d)


def test_wald_bound_is_that_of_the_sampling_scheme() -> None:
    pool = _pool()
    res = run_pool(pool, test="mixture", tolerance=0.1, budget=4000, repeats=5, seed=0)
    t = get_test("mixture", tolerance=0.1)
    assert t.sampling == "alternate"
    in_a, x = pool.observations("sp", "decisions")
    truth = pool_truth(in_a, x)
    from fairprobe.sequential.glr import bernoulli_divergence

    half = min(bernoulli_divergence(0.5, truth.mean_a, 0.5, truth.mean_b, d) for d in (0.1, -0.1))
    want = wald_lower_bound(0.05, 0.2, half, violation=True)
    assert res.to_dict()["wald_lower_bound"] == pytest.approx(want, rel=1e-9)
    prop = min(bernoulli_divergence(0.9, truth.mean_a, 0.1, truth.mean_b, d) for d in (0.1, -0.1))
    assert want < wald_lower_bound(0.05, 0.2, prop, violation=True)  # 9:1 needs more queries
    glr = run_pool(pool, test="glr", tolerance=0.1, budget=4000, repeats=5, seed=0)
    assert glr.to_dict()["wald_lower_bound"] == pytest.approx(
        wald_lower_bound(0.05, 0.2, prop, violation=True), rel=1e-9)


def _result(outcome: str, cs: tuple[float, float], test: str = "mixture") -> SequentialResult:
    return SequentialResult(
        outcome=outcome, queries=100, params={"test": test, "tolerance": 0.1, "alpha": 0.05,
                                              "access": "decisions"},
        metric="sp", budget=4000, boundaries={}, group_a=GroupTally(50, 30.0, 30.0),
        group_b=GroupTally(50, 10.0, 10.0), group_names=("A", "B"), path={},
        pairs={"cs_low": [cs[0]], "cs_high": [cs[1]]} if test == "mixture" else None)


@pytest.mark.parametrize(
    ("outcome", "cs", "want"),
    [("violation", (0.2, 0.6), "unfair"), ("violation", (0.05, 0.6), "undetermined"),
     ("compliant", (-0.05, 0.08), "fair"), ("inconclusive", (0.15, 0.5), "unfair"),
     ("compliant", (-0.05, 0.2), "undetermined")],
)
def test_finding_never_contradicts_its_confidence_sequence(outcome, cs, want) -> None:
    f = _result(outcome, cs).finding
    assert f.verdict == want == decide(cs[0], cs[1], kind="difference", threshold=0.1)
    assert f.coverage == "anytime-valid"
    if want != {"violation": "unfair", "compliant": "fair"}.get(outcome, "undetermined"):
        assert f.reason and "confidence sequence" in f.reason
    d = _result(outcome, cs).to_dict()
    assert d["verdict"] == d["finding"]["verdict"] == want


def test_tests_without_a_sequence_state_their_decision() -> None:
    f = _result("violation", (0, 0), test="glr-wald").finding
    assert f.verdict == "unfair" and f.coverage == "none" and "glr-wald" in (f.reason or "")


def test_logit_access_decides_the_probability_scale_gap() -> None:
    rng = np.random.default_rng(2)
    n = 4000
    in_a = rng.random(n) < 0.5
    z = rng.normal(np.where(in_a, 0.4, -0.4), 1.0)
    pool = AuditPool(in_a=in_a, group_names=("A", "B"), scores=1 / (1 + np.exp(-z)), logits=z)
    by_logit = run_pool(pool, access="logits", tolerance=0.1, budget=2000, repeats=20, seed=3)
    by_score = run_pool(pool, access="scores", tolerance=0.1, budget=2000, repeats=20, seed=3)
    assert by_logit.to_dict()["queries"] == by_score.to_dict()["queries"]
    assert by_logit.to_dict()["outcomes"] == by_score.to_dict()["outcomes"]
