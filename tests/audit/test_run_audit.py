"""The fixed-budget audit on an in-process model (no server) and its bad inputs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fairprobe.access.blackbox import BlackBox
from fairprobe.access.local import LocalModelBackend
from fairprobe.audit import draw_queries, run_audit
from fairprobe.errors import BudgetError, DataError, InvalidParameterError
from fairprobe.stats import CountsVector


def _pool(n: int = 400, seed: int = 1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "x": rng.normal(size=n),
            "g": np.where(np.arange(n) % 4 == 0, "a", "b"),
            "y": rng.integers(0, 2, n),
        }
    )


def _model(df: pd.DataFrame) -> np.ndarray:
    # positive iff x > 0 for group b, never for group a: a known, very unfair model
    return ((df["x"] > 0) & (df["g"] == "b")).astype(int).to_numpy()


def test_counts_match_a_direct_computation() -> None:
    pool = _pool()
    with BlackBox(LocalModelBackend(_model, name="m"), budget=1000) as bb:
        res = run_audit(bb, pool, group_col="g", group_a="a", group_b="b", metric="dp",
                        feature_cols=["x", "g"], budget=300, seed=3)
    sample = draw_queries(pool, 300, 3)
    d = _model(sample)
    in_a = (sample["g"] == "a").to_numpy()
    assert res.metric.counts == CountsVector(int(d[in_a].sum()), int(in_a.sum()),
                                             int(d[~in_a].sum()), int((~in_a).sum()))
    assert res.verdict == "unfair"
    assert res.queried == 300 and res.paid + res.cached == 300
    assert len(res.values) == 300 and res.in_group_a.sum() == in_a.sum()
    d2 = res.to_dict()
    assert d2["per_instance"][0].keys() == {"value", "group"}


def test_same_seed_same_result_and_cache_makes_second_run_free(tmp_path) -> None:
    pool = _pool()
    kw = dict(group_col="g", group_a="a", group_b="b", metric="di", feature_cols=["x", "g"],
              budget=200, seed=5)
    with BlackBox(LocalModelBackend(_model, name="m"), cache=tmp_path / "c.sqlite") as bb:
        r1 = run_audit(bb, pool, **kw)
    with BlackBox(LocalModelBackend(_model, name="m"), cache=tmp_path / "c.sqlite") as bb:
        r2 = run_audit(bb, pool, **kw)
    assert r1.metric.counts == r2.metric.counts
    assert r2.paid == 0 and r2.cached == 200


def test_equal_opportunity_and_accuracy_gap_need_labels() -> None:
    pool = _pool()
    with BlackBox(LocalModelBackend(_model, name="m")) as bb:
        with pytest.raises(DataError, match="label_col"):
            run_audit(bb, pool, group_col="g", metric="eo", group_a="a", budget=100)
        eo = run_audit(bb, pool, group_col="g", metric="eo", group_a="a", group_b="b",
                       label_col="y", feature_cols=["x", "g"], budget=400)
        gap = run_audit(bb, pool, group_col="g", metric="performance_gap", group_a="a",
                        group_b="b", label_col="y", feature_cols=["x", "g"], budget=400)
    assert eo.metric.counts.A == int(((pool["g"] == "a") & (pool["y"] == 1)).sum())
    assert len(eo.values) == int((pool["y"] == 1).sum())
    assert gap.metric.metric == "performance_gap"


@pytest.mark.parametrize(
    ("kwargs", "err", "match"),
    [
        ({"group_col": "missing"}, DataError, "no group column"),
        ({"budget": 1}, BudgetError, "below one query per group"),
        ({"budget": 0}, InvalidParameterError, "'budget' parameter"),
        ({"metric": "nope"}, InvalidParameterError, "'metric' parameter"),
        ({"feature_cols": ["x", "zz"]}, DataError, "no feature column 'zz'"),
        ({"group_a": "c"}, BudgetError, "no member of group 'c'"),
    ],
)
def test_bad_input(kwargs, err, match) -> None:
    base = dict(group_col="g", group_a="a", group_b="b", feature_cols=["x", "g"], budget=50)
    base.update(kwargs)
    with BlackBox(LocalModelBackend(_model, name="m")) as bb, pytest.raises(err, match=match):
        run_audit(bb, _pool(), **base)


def test_nan_group_is_refused() -> None:
    pool = _pool()
    pool.loc[3, "g"] = None
    with BlackBox(LocalModelBackend(_model, name="m")) as bb, pytest.raises(DataError, match="missing"):
        run_audit(bb, pool, group_col="g", group_a="a", feature_cols=["x", "g"], budget=50)
