"""Neyman's split and the adaptive batches of the black-box every-group audit."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fairprobe.access.blackbox import BlackBox
from fairprobe.access.local import LocalModelBackend
from fairprobe.audit import run_group_audit
from fairprobe.audit.run import allocate
from fairprobe.errors import InvalidParameterError
from fairprobe.stats import plan as plan_mod
from fairprobe.stats.allocation import neyman_weights

RATES = {"a": 0.30, "b": 0.45, "c": 0.60}


def _pool(n: int, seed: int, shares=(0.6, 0.3, 0.1)) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"u": rng.random(n), "g": rng.choice(list(RATES), n, p=list(shares))})


def _model(df: pd.DataFrame) -> np.ndarray:
    return (df["u"].to_numpy() < df["g"].map(RATES).to_numpy()).astype(int)


def test_neyman_weights_against_a_hand_computation() -> None:
    # sd = sqrt(p(1-p)): 0.5, 0.3, 0.3 -> 5/11, 3/11, 3/11 (the floor 0.5/3 does not bind)
    np.testing.assert_allclose(neyman_weights([0.5, 0.1, 0.9]), [5 / 11, 3 / 11, 3 / 11])
    # sd 0.5 and sqrt(0.0099) = 0.0995: 0.834 / 0.166, below the floor 0.5/2 -> 0.75 / 0.25
    np.testing.assert_allclose(neyman_weights([0.5, 0.01]), [0.75, 0.25])
    # the planner's neyman split is the same function
    r = np.array([0.5, 0.2, 0.7])
    np.testing.assert_allclose(plan_mod._weights("neyman", np.ones(3) / 3, r), neyman_weights(r))


def test_neyman_water_filling_against_a_hand_computation() -> None:
    # c = 600: group 3 (50 rows <= 0.25 * 600) is taken whole; 550 left over weights
    # 0.5 / 0.25 -> 366.67 / 183.33 -> 367 / 183 by largest remainders
    assert allocate([1000, 1000, 50], 600, "neyman", [0.5, 0.25, 0.25]) == [367, 183, 50]
    # no weights: every rate taken as 0.5, the equal split
    assert allocate([1000, 1000, 50], 600, "neyman") == allocate([1000, 1000, 50], 600,
                                                                  "balanced")


def test_adaptive_stops_early_records_it_and_replays_from_the_cache(tmp_path) -> None:
    pool = _pool(6000, 1)
    calls = []

    def counted(df: pd.DataFrame) -> np.ndarray:
        calls.append(len(df))
        return _model(df)

    kw = dict(group_col="g", metrics=["dp"], feature_cols=["u", "g"], budget=3000, seed=2,
              tolerance=0.1, allocation="adaptive")
    with BlackBox(LocalModelBackend(counted, name="m"), cache=tmp_path / "c.sqlite") as bb:
        res = run_group_audit(bb, pool, **kw)
    d = res.to_dict()
    ad = d["allocation"]["adaptive"]
    assert d["allocation"]["method"] == "adaptive" and res.verdict == "unfair"
    assert ad["stopped"] == "decided" and ad["batches"] < ad["max_batches"]
    assert res.queried == ad["queries_spent"] < 3000 and ad["queries_saved"] == 3000 - res.queried
    assert sum(calls) == res.paid == res.queried
    assert sum(d["allocation"]["queries_by_group"].values()) == res.queried
    assert "union bound" in ad["validity"]
    with BlackBox(LocalModelBackend(counted, name="m"), cache=tmp_path / "c.sqlite") as bb:
        again = run_group_audit(bb, pool, **kw)
    assert again.paid == 0 and again.cached == res.queried and again.verdict == res.verdict


def test_neyman_records_the_pilot_and_spends_the_budget(tmp_path) -> None:
    pool = _pool(6000, 3)
    with BlackBox(LocalModelBackend(_model, name="m"), cache=None) as bb:
        res = run_group_audit(bb, pool, group_col="g", metrics=["dp"], feature_cols=["u", "g"],
                              budget=1200, seed=0, tolerance=0.1, allocation="neyman")
    ny = res.to_dict()["allocation"]["neyman"]
    assert res.queried == 1200 and ny["pilot_queries"] == 240
    w = np.array(list(ny["weights"].values()))
    np.testing.assert_allclose(w, neyman_weights(list(ny["pilot_rates"].values())), atol=1e-5)


def test_adaptive_keeps_coverage_on_a_seeded_sweep() -> None:
    # each audit's interval of the largest gap (at the look's level) must hold the pool's own
    # gap (about 0.3) although the audit stopped when its intervals allowed
    misses, early = 0, 0
    for seed in range(20):
        pool = _pool(1500, 100 + seed)
        truth = _model(pool)
        rates = pd.Series(truth).groupby(pool["g"].to_numpy()).mean()
        gap = float(rates.max() - rates.min())
        with BlackBox(LocalModelBackend(_model, name="m"), cache=None) as bb:
            res = run_group_audit(bb, pool, group_col="g", metrics=["dp"],
                                  feature_cols=["u", "g"], budget=900, seed=seed,
                                  tolerance=0.1, allocation="adaptive")
        s = res.summary("dp")
        misses += not (s.low <= gap <= s.high)
        early += res.queried < 900
    # nominal miss rate 0.05: 20 audits miss at most 4 times with probability > 0.99
    assert misses <= 4
    assert early >= 5  # 7 of the 20 stop before the budget at these seeds


def test_adaptive_refuses_a_metric_it_cannot_stop_on() -> None:
    pool = _pool(300, 0).assign(y=1)
    with BlackBox(LocalModelBackend(_model, name="m"), cache=None) as bb, \
            pytest.raises(InvalidParameterError, match="--allocation adaptive"):
        run_group_audit(bb, pool, group_col="g", metrics=["ppv"], label_col="y",
                        feature_cols=["u", "g"], budget=200, allocation="adaptive")
        assert bb.spent == 0


def test_adaptive_does_not_stop_fair_before_a_small_group_is_compared() -> None:
    rng = np.random.default_rng(5)
    pool = pd.DataFrame({"u": rng.random(3100),
                         "g": np.repeat(["a", "b", "c"], [1500, 1500, 100])})

    def same(df: pd.DataFrame) -> np.ndarray:
        return (df["u"].to_numpy() < 0.5).astype(int)

    with BlackBox(LocalModelBackend(same, name="m"), cache=None) as bb:
        res = run_group_audit(bb, pool, group_col="g", metrics=["dp"], feature_cols=["u", "g"],
                              budget=3000, seed=0, tolerance=0.4, min_group_size=30,
                              allocation="adaptive")
    ad = res.allocation["adaptive"]
    # c has 20 answers after the first batch, below the minimum: a and b alone look fair
    assert ad["looks"][0]["verdict"] == "fair" and ad["batches"] >= 2
    assert res.verdict == "fair" and set(res.summary("dp").compared) == {"a", "b", "c"}
