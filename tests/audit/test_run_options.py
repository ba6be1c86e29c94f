"""The model audits take their options as objects or as flat keywords, with the same result."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fairprobe.access.blackbox import BlackBox
from fairprobe.access.local import LocalModelBackend
from fairprobe.audit import GroupAudit, check_group_audit, run_audit, run_group_audit
from fairprobe.audit.run_options import ModelColumns, QueryRun
from fairprobe.errors import InvalidParameterError
from fairprobe.options import AuditQuestion


def _pool(n: int = 600, seed: int = 2) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"x": rng.normal(size=n), "g": rng.choice(["a", "b", "c"], n),
                         "y": rng.integers(0, 2, n)})  # fmt: skip


def _model(df: pd.DataFrame) -> np.ndarray:
    shift = df["g"].map({"a": 0.0, "b": 0.4, "c": 0.8}).to_numpy()
    return (df["x"].to_numpy() > shift).astype(int)


def _bb() -> BlackBox:
    return BlackBox(LocalModelBackend(_model, name="m"))


@pytest.mark.parametrize("allocation", ["balanced", "adaptive"])
def test_group_audit_objects_equal_flat_keywords(allocation: str) -> None:
    pool = _pool()
    with _bb() as bb:
        flat = run_group_audit(
            bb,
            pool,
            group_col="g",
            metrics=["dp"],
            label_col="y",
            feature_cols=["x", "g"],
            budget=300,
            seed=4,
            reference="a",
            tolerance=0.1,
            allocation=allocation,
        )
    with _bb() as bb:
        obj = run_group_audit(
            bb, pool,
            question=AuditQuestion(metrics=("dp",), tolerance=0.1, reference="a"),
            columns=ModelColumns(group="g", label="y", features=["x", "g"]),
            run=QueryRun(budget=300, seed=4, allocation=allocation))  # fmt: skip
    assert obj.to_dict() == flat.to_dict()
    assert obj.paid == flat.paid and obj.allocation == flat.allocation


def test_flat_keywords_set_the_fields_of_the_objects_given() -> None:
    pool = _pool()
    with _bb() as bb:
        a = run_audit(
            bb,
            pool,
            group_a="a",
            metric="dp",
            group_col="g",
            feature_cols=["x", "g"],
            budget=200,
            seed=1,
        )
    with _bb() as bb:
        b = run_audit(
            bb,
            pool,
            group_a="a",
            metric="dp",
            columns=ModelColumns(group="zz"),
            run=QueryRun(budget=50),
            group_col="g",
            feature_cols=["x", "g"],
            budget=200,
            seed=1,
        )
    assert a.to_dict() == b.to_dict()
    assert a.metric.counts.A + a.metric.counts.B == 200


def test_an_unknown_keyword_or_no_group_column_is_a_type_error() -> None:
    pool = _pool()
    with _bb() as bb:
        with pytest.raises(
            TypeError, match="run_group_audit.. got an unexpected keyword argument 'interval'"
        ):
            run_group_audit(bb, pool, group_col="g", interval="exact")
        with pytest.raises(
            TypeError, match="run_audit.. got an unexpected keyword argument 'allocation'"
        ):
            run_audit(bb, pool, group_col="g", allocation="balanced")
        with pytest.raises(
            TypeError, match="missing 1 required keyword-only argument: 'group_col'"
        ):
            run_audit(bb, pool)
        assert bb.spent == 0
    with pytest.raises(TypeError, match="check_group_audit.. got an unexpected keyword"):
        check_group_audit(pool, group_col="g", reference="a")
    with pytest.raises(TypeError, match="missing 1 required keyword-only argument: 'budget'"):
        GroupAudit(
            metrics=["dp"],
            queried=2,
            paid=0,
            cached=0,
            unparsed=0,
            seed=0,
            backend="m",
            group_cols=["g"],
            unparsed_by_group={},
            y_pred=[0, 1],
            sensitive_features=["a", "b"],
        )


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda p: check_group_audit(p, group_col="g", metrics=["dp"], budget=10,
                                     confidence_level=1.0),
         "'confidence_level' parameter of run_group_audit"),
        (lambda p: check_group_audit(p, group_col="g", metrics=["dp"], budget=10,
                                     allocation="bad"), "'allocation' parameter of run_group_audit"),
        (lambda p: run_group_audit(None, p, group_col="g", max_unusable_share=1.0),
         "'max_unusable_share' parameter of run_group_audit"),
        (lambda p: run_audit(None, p, group_col="g", max_unusable_share=-0.1),
         "'max_unusable_share' parameter of run_audit"),
        (lambda p: QueryRun(max_unusable_share=2.0), "'max_unusable_share' parameter of QueryRun"),
    ],
)  # fmt: skip
def test_a_bad_value_names_the_function(call, match: str) -> None:
    with pytest.raises(InvalidParameterError, match=match):
        call(_pool())


def test_check_group_audit_keeps_its_uniform_default_and_returns_the_columns() -> None:
    pool = _pool()
    cols, names, feats = check_group_audit(pool, group_col="g", metrics="dp", budget=10)
    assert (cols, names, feats) == (["g"], ["demographic_parity_difference"], ["x"])
    with pytest.raises(InvalidParameterError, match="adaptive stops on the first metric"):
        check_group_audit(
            pool, group_col="g", metrics=["eodds"], label_col="y", budget=10, allocation="adaptive"
        )
