"""The by-group black-box audit (run_group_audit) on an in-process model, and label checks."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fairprobe import AuditFrame
from fairprobe.access.blackbox import BlackBox
from fairprobe.access.local import LocalModelBackend
from fairprobe.audit import draw_queries, run_audit, run_group_audit
from fairprobe.errors import DataError, EmptyGroupError, InvalidParameterError


def _pool(n: int = 1200, seed: int = 1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "x": rng.normal(size=n),
        "race": rng.choice(["a", "b", "c", "d", "e"], n, p=[0.5, 0.2, 0.15, 0.1, 0.05]),
        "sex": rng.choice(["F", "M"], n),
        "y": rng.integers(0, 2, n),
    })


def _model(df: pd.DataFrame) -> np.ndarray:
    shift = df["race"].map({"a": 0.0, "b": 0.3, "c": 0.6, "d": 0.9, "e": 1.2}).to_numpy()
    return (df["x"].to_numpy() > shift).astype(int)


class _Counting:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, df: pd.DataFrame) -> np.ndarray:
        self.calls += len(df)
        return _model(df)


def test_group_audit_is_an_auditframe_of_the_answers(tmp_path) -> None:
    pool = _pool()
    with BlackBox(LocalModelBackend(_model, name="m"), cache=tmp_path / "c.sqlite") as bb:
        res = run_group_audit(bb, pool, group_col="race", metrics=["dp", "eo", "fpr", "eodds"],
                              label_col="y", feature_cols=["x", "race", "sex"], budget=800,
                              seed=3, min_group_size=30, reference="a")
    assert isinstance(res, AuditFrame)
    sample = draw_queries(pool, 800, 3, group_cols=["race"], allocation="balanced")
    direct = AuditFrame(y_pred=_model(sample), y_true=sample["y"],
                        sensitive_features=sample[["race"]], min_group_size=30, reference="a")
    pd.testing.assert_frame_equal(res.to_frame(), direct.to_frame())
    s = res.summary("dp")
    assert s.pair == ("a", "e") and s.verdict == "unfair"
    assert res.queried == 800 and res.paid + res.cached == 800
    d = res.to_dict()
    assert d["group_col"] == ["race"] and d["metrics"][0] == "demographic_parity_difference"
    assert set(d["summaries"]) == {"demographic_parity_difference",
                                   "equal_opportunity_difference",
                                   "false_positive_rate_difference",
                                   "equalized_odds_difference"}
    assert len(d["per_instance"]) == 800 and d["per_instance"][0].keys() == {
        "value", "group", "y_true"}
    assert {r["group"] for r in d["summaries"]["demographic_parity_difference"]
            ["vs_reference"]} == {"b", "c", "d", "e"}


def test_intersections_and_too_small_groups() -> None:
    pool = _pool()
    with BlackBox(LocalModelBackend(_model, name="m")) as bb:
        res = run_group_audit(bb, pool, group_col="sex,race", metrics=["di"],
                              feature_cols=["x", "race", "sex"], budget=600, seed=0,
                              min_group_size=40)
    t = res.to_frame()
    assert t.index.names == ["sex", "race"] and len(t) == 10
    small = {", ".join(k) for k in t.index[t["too_small"]]}
    assert small and small <= set(res.summary("di").excluded)


@pytest.mark.parametrize(
    ("labels", "match"),
    [
        ([0, 1, np.nan], "missing value"),
        ([0, 1, 2], "0/1"),
        (["no", "yes", "no"], "pos_label"),
    ],
)
def test_bad_labels_fail_before_any_query_is_paid(labels, match) -> None:
    # accuracy-gap audits must refuse NaN or non-0/1 labels, not exit 0
    pool = _pool(300)
    pool["y"] = pool["y"].astype(object)
    bad_rows = np.arange(len(pool)) % 3
    pool["y"] = [labels[i] for i in bad_rows]
    for run, kw in (
        (run_audit, {"group_col": "sex", "group_a": "F", "group_b": "M",
                     "metric": "performance_gap"}),
        (run_audit, {"group_col": "sex", "group_a": "F", "group_b": "M", "metric": "eo"}),
        (run_group_audit, {"group_col": "race", "metrics": ["accuracy-gap"]}),
    ):
        model = _Counting()
        with BlackBox(LocalModelBackend(model, name="m")) as bb, pytest.raises(
                DataError, match=match):
            run(bb, pool, label_col="y", feature_cols=["x", "race", "sex"], budget=200, **kw)
        assert model.calls == 0


def test_string_labels_with_pos_label() -> None:
    pool = _pool(400)
    pool["y"] = np.where(pool["y"] == 1, ">50K", "<=50K")
    with BlackBox(LocalModelBackend(_model, name="m")) as bb:
        res = run_group_audit(bb, pool, group_col="race", metrics=["accuracy-gap", "ppv"],
                              label_col="y", pos_label=">50K", feature_cols=["x", "race"],
                              budget=400, min_group_size=5)
        gap = run_audit(bb, pool, group_col="sex", group_a="F", group_b="M",
                        metric="performance_gap", label_col="y", pos_label=">50K",
                        feature_cols=["x", "race", "sex"], budget=400)
    y = (pool["y"] == ">50K").astype(int)
    acc = (pd.Series(_model(pool)) == y).groupby(pool["race"]).mean()
    np.testing.assert_allclose(res.by_group["accuracy"].to_numpy(), acc.to_numpy(), atol=1e-12)
    assert 0 <= gap.metric.counts.mean_a <= 1  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("kw", "err", "match"),
    [
        ({"metrics": ["eo"]}, DataError, "needs true labels"),
        ({"metrics": ["xyz"]}, InvalidParameterError, "'metric' parameter"),
        ({"group_col": "race,nope"}, DataError, "no group column 'nope'"),
        ({"min_group_size": 0}, InvalidParameterError, "min_group_size"),
        ({"method": "holm"}, InvalidParameterError, "'method' parameter"),
        ({"reference": "zz"}, EmptyGroupError, "does not occur"),
    ],
)
def test_parameters_checked_before_paying(kw, err, match) -> None:
    model = _Counting()
    args = {"group_col": "race", "metrics": ["dp"], "feature_cols": ["x", "race"],
            "budget": 100, **kw}
    with BlackBox(LocalModelBackend(model, name="m")) as bb, pytest.raises(err, match=match):
        run_group_audit(bb, _pool(300), **args)
    assert model.calls == 0


def test_metric_without_two_comparable_groups_is_reported_not_fatal() -> None:
    pool = _pool()
    with BlackBox(LocalModelBackend(_model, name="m")) as bb:
        res = run_group_audit(bb, pool, group_col="race", metrics=["dp", "eo"], label_col="y",
                              feature_cols=["x", "race"], budget=300, min_group_size=60)
    assert list(res.summaries()) == ["demographic_parity_difference"]
    why = res.not_summarised()["equal_opportunity_difference"]
    assert "two groups large enough" in why
    d = res.to_dict()
    assert "equal_opportunity_difference" in d["not_summarised"]
    assert set(d["summaries"]) == {"demographic_parity_difference"}
    assert res.verdict in ("undetermined", "unfair")
