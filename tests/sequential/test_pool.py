"""Pools, repeated audits over random orders, bad input, JSON keys."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from fairprobe.errors import DataError, EmptyGroupError, InvalidParameterError
from fairprobe.sequential.pool import AuditPool, make_orders, run_pool


def _frame(n: int = 3000, seed: int = 0, gap: float = 0.25) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    g = np.where(rng.random(n) < 0.65, "M", "F")
    s = np.clip(rng.beta(2, 5, n) + np.where(g == "M", gap, 0.0), 0, 1)
    return pd.DataFrame(
        {
            "g": g,
            "d": (s > 0.5).astype(int),
            "s": s,
            "z": np.log(np.clip(s, 1e-9, 1) / np.clip(1 - s, 1e-9, 1)),
            "y": (rng.random(n) < s).astype(int),
        }
    )


def _pool(df: pd.DataFrame) -> AuditPool:
    return AuditPool.from_frame(
        df, "g", decision_col="d", score_col="s", logit_col="z", label_col="y"
    )


def test_repeated_audit_keys_and_values() -> None:
    res = run_pool(_pool(_frame()), metric="sp", access="decisions", test="glr", tolerance=0.1,
                   budget=1000, repeats=40, seed=1)  # fmt: skip
    d = res.to_dict()
    assert set(d) >= {"mean_queries", "queries", "outcomes"}
    assert len(d["queries"]) == 40
    assert d["mean_queries"] == pytest.approx(np.mean(d["queries"]))
    assert set(d["outcomes"]) == {"violation", "compliant", "inconclusive"}
    assert sum(d["outcomes"].values()) == pytest.approx(1.0)
    assert d["outcomes"]["violation"] >= 0.9
    assert d["wald_lower_bound"] > 0 and d["ratio_to_wald"] == pytest.approx(
        d["mean_queries"] / d["wald_lower_bound"]
    )
    lo, hi = res.confidence_interval("violation")
    assert lo <= d["outcomes"]["violation"] <= hi


def test_same_seed_same_result_and_orders_are_chunk_free() -> None:
    pool = _pool(_frame())
    a = run_pool(pool, budget=600, repeats=30, seed=4, access="scores")
    b = run_pool(pool, budget=600, repeats=30, seed=4, access="scores")
    np.testing.assert_array_equal(a.queries, b.queries)
    c = run_pool(pool, budget=600, repeats=30, seed=5, access="scores")
    assert not np.array_equal(a.queries, c.queries)
    o = make_orders(100, 10, 5, seed=3)
    assert (make_orders(100, 10, 3, seed=3) == o[:3]).all()
    assert all(len(set(row)) == 10 for row in o.tolist())  # without replacement


def test_eo_uses_the_y1_subpool_and_budget_is_capped() -> None:
    df = _frame(800)
    res = run_pool(_pool(df), metric="eo", test="fixed", budget=10_000, repeats=3, seed=0)
    n1 = int((df["y"] == 1).sum())
    assert res.budget_effective == n1
    assert (res.queries == n1).all()
    assert res.truth["size"] == n1


def test_no_member_of_a_group() -> None:
    df = _frame(200)
    df["g"] = "M"
    with pytest.raises(EmptyGroupError, match="no member of group"):
        _pool(df)


def test_empty_y1_subpool() -> None:
    df = _frame(200)
    df["y"] = 0
    with pytest.raises(EmptyGroupError, match="Y=1 sub-pool is empty"):
        run_pool(_pool(df), metric="eo", budget=100, repeats=2)
    df = _frame(200)
    df.loc[df["g"] == "F", "y"] = 0
    with pytest.raises(EmptyGroupError, match="Y=1 sub-pool has no member"):
        run_pool(_pool(df), metric="eo", budget=100, repeats=2)


def test_scores_outside_unit_interval_and_bad_values() -> None:
    df = _frame(200)
    df.loc[3, "s"] = 1.3
    with pytest.raises(DataError, match=r"Scores must lie in \[0, 1\]"):
        _pool(df)
    df = _frame(200)
    df.loc[3, "d"] = 2
    with pytest.raises(DataError, match="0 or 1"):
        _pool(df)
    with pytest.raises(DataError, match="not in the pool"):
        AuditPool.from_frame(_frame(50), "sex")
    df = _frame(200)
    df.loc[0, "g"] = "X"
    with pytest.raises(DataError, match="group_a"):
        AuditPool.from_frame(df, "g", decision_col="d")


@pytest.mark.parametrize("budget", [0, -3, 1.5])
def test_bad_budget(budget: float) -> None:
    with pytest.raises(InvalidParameterError, match="'budget' parameter"):
        run_pool(_pool(_frame(100)), budget=budget, repeats=2)  # type: ignore[arg-type]


def test_missing_access_column_and_labels() -> None:
    pool = AuditPool.from_frame(_frame(100), "g", decision_col="d")
    with pytest.raises(InvalidParameterError, match="--score-col"):
        run_pool(pool, access="scores", budget=10, repeats=1)
    with pytest.raises(InvalidParameterError, match="--label-col"):
        run_pool(pool, metric="eo", budget=10, repeats=1)


def test_wald_bound_is_infinite_at_delta_and_ratio_nan() -> None:
    n = 2000
    in_a = np.arange(n) < 1000
    dec = np.zeros(n)
    dec[:300] = 1  # rate a 0.3
    dec[1000:1200] = 1  # rate b 0.2: gap exactly 0.1
    pool = AuditPool(in_a=in_a, group_names=("a", "b"), decisions=dec)
    res = run_pool(pool, tolerance=0.1, budget=200, repeats=5)
    assert res.truth["gap"] == pytest.approx(0.1)
    assert math.isinf(res.wald_bound) and math.isnan(res.ratio_to_wald)
