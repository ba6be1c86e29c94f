"""A model audit, a predictions audit and the monitor take options objects or their fields as
flat keywords (the compatibility form): both forms give the same document, a keyword no object
has is a TypeError as for any function, and a bad value is one error line naming its flag."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from fairprobe.audit import audit_model, audit_predictions, monitor_job
from fairprobe.audit.model_options import (
    ModelAuditOptions,
    ModelColumns,
    PredictionColumns,
    TimeWindows,
)
from fairprobe.errors import InvalidParameterError
from fairprobe.options import AccessOptions, AuditQuestion, DataSource


@pytest.fixture(scope="module")
def pool() -> pd.DataFrame:
    rng = np.random.default_rng(3)
    n = 600
    g = rng.choice(["a", "b", "c"], n)
    x = rng.random(n) + (g == "a") * 0.2
    return pd.DataFrame({"x": x, "g": g, "y": (rng.random(n) < x).astype(int)})


def _model(df: pd.DataFrame) -> Any:
    return (df["x"] > 0.6).astype(int)


def _body(job: Any) -> dict[str, Any]:
    d = job.to_dict()
    d.pop("provenance")  # its times differ between two runs
    return dict(d)


def test_a_model_audit_of_objects_equals_its_flat_form(pool: pd.DataFrame) -> None:
    flat = _body(audit_model(
        _model, queries=pool, group_col="g", metric="dp,eo", label_col="y", budget=400, seed=2,
        tolerance=0.1, min_group_size=5, cache=None, allocation="uniform"))  # fmt: skip
    objects = _body(audit_model(
        _model, source=DataSource(pool), access=AccessOptions(budget=400, seed=2, cache=None),
        question=AuditQuestion(metrics=("dp", "eo"), tolerance=0.1, min_group_size=5),
        columns=ModelColumns(group="g", label="y"),
        options=ModelAuditOptions(allocation="uniform")))  # fmt: skip
    assert objects == flat
    assert set(flat["summaries"]) == {"demographic_parity_difference",
                                      "equal_opportunity_difference"}  # fmt: skip


def test_a_two_group_audit_of_objects_equals_its_flat_form(pool: pd.DataFrame) -> None:
    flat = _body(audit_model(_model, queries=pool, group_col="g", group_a="a", group_b="b",
                             metric="dp", interval="score", cache=None))  # fmt: skip
    objects = _body(audit_model(
        _model, source=DataSource(pool), access=AccessOptions(cache=None),
        question=AuditQuestion(metrics="dp"),
        columns=ModelColumns(group="g", group_a="a", group_b="b"),
        options=ModelAuditOptions(interval="score")))  # fmt: skip
    assert objects == flat
    assert "metric" in flat  # the two-group form's document (one metric, not summaries)


def test_a_flat_keyword_overrides_the_field_of_an_object(pool: pd.DataFrame) -> None:
    base = {"queries": pool, "group_col": "g", "metric": "dp", "cache": None}
    both = _body(audit_model(_model, access=AccessOptions(budget=300, cache=None), seed=4,
                             **{k: v for k, v in base.items() if k != "cache"}))  # fmt: skip
    # a numpy integer seed is an integer, as it was for the checks the objects replace
    assert both == _body(audit_model(_model, budget=300, seed=np.int64(4), **base))
    assert both["budget"] == 300


@pytest.mark.parametrize(
    ("call", "keyword"),
    [(lambda **kw: audit_model(_model, **kw), "audit_model"),
     (lambda **kw: audit_predictions(pd.DataFrame(), y_pred_col="p", group_col="g", **kw),
      "audit_predictions"),
     (lambda **kw: monitor_job("logs", state="s.json", y_pred_col="p", group_col="g",
                               time_col="t", **kw), "monitor_job")],
)  # fmt: skip
def test_an_unknown_keyword_is_a_type_error(call: Any, keyword: str) -> None:
    with pytest.raises(TypeError, match=rf"^{keyword}\(\) got an unexpected keyword argument "
                                        "'colour'$"):  # fmt: skip
        call(colour="red")


def test_a_missing_required_column_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="audit_predictions.. missing 1 required keyword-only "
                                        "argument: 'y_pred_col'"):  # fmt: skip
        audit_predictions(pd.DataFrame(), group_col="g")
    with pytest.raises(TypeError, match="monitor_job.. missing .* 'time_col'"):
        monitor_job("logs", state="s.json", y_pred_col="p", group_col="g")


@pytest.mark.parametrize(
    ("kw", "message"),
    [({"seed": -1}, "--seed must be an integer >= 0"),
     ({"retries": -2}, "--retries must be an integer >= 0"),
     ({"budget": "lots"}, "--budget must be a positive integer or 'all'"),
     ({"confidence_level": 1.2}, "'confidence_level' parameter of run_group_audit"),
     ({"queries": 3}, "--queries must be a table path or a pandas DataFrame")],
)  # fmt: skip
def test_a_bad_value_names_what_to_fix_before_a_query(kw: dict[str, Any], message: str) -> None:
    asked: list[int] = []

    def model(df: pd.DataFrame) -> Any:
        asked.append(len(df))
        return np.zeros(len(df), dtype=int)

    args = {"queries": pd.DataFrame({"x": [0.1, 0.2], "g": ["a", "b"]}), "group_col": "g",
            "metric": "dp", "cache": None, **kw}  # fmt: skip
    with pytest.raises(InvalidParameterError, match=message):
        audit_model(model, **args)
    assert asked == []


def test_a_predictions_audit_of_objects_equals_its_flat_form(pool: pd.DataFrame) -> None:
    df = pool.assign(p=_model(pool))
    for budget in (None, 500):
        flat = audit_predictions(df, y_pred_col="p", group_col="g", y_true_col="y",
                                 metrics=["dp", "eo"], tolerance=0.1, budget=budget, seed=1)
        objects = audit_predictions(
            df, columns=PredictionColumns("p", "g", y_true_col="y"),
            question=AuditQuestion(metrics=("dp", "eo"), tolerance=0.1), budget=budget, seed=1)
        assert objects.to_dict(per_instance=False) == flat.to_dict(per_instance=False)


def test_the_monitor_of_objects_equals_its_flat_form(pool: pd.DataFrame, tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    df = pool.assign(p=_model(pool), t=pd.date_range("2024-01-01", periods=len(pool), freq="h"))
    df.to_csv(logs / "a.csv", index=False)
    flat = monitor_job(logs, state=tmp_path / "flat.json", y_pred_col="p", group_col="g",
                       time_col="t", window="2D", metrics=["dp"], now="2024-02-01")
    objects = monitor_job(
        logs, state=tmp_path / "objects.json", columns=PredictionColumns("p", "g"),
        windows=TimeWindows("t", "2D"), question=AuditQuestion(metrics="dp"), now="2024-02-01")
    assert _body(objects) == _body(flat)
    assert flat.looked_at == objects.looked_at > 0


def test_the_job_and_the_run_read_one_model_columns_object(pool: pd.DataFrame) -> None:
    from fairprobe.access.blackbox import BlackBox
    from fairprobe.access.local import LocalModelBackend
    from fairprobe.audit import model_options, run_group_audit, run_options

    assert model_options.ModelColumns is run_options.ModelColumns
    columns = ModelColumns(group="g", label="y", features="x")  # a string: split at commas
    job = audit_model(_model, source=DataSource(pool), columns=columns,
                      access=AccessOptions(budget=300, seed=1, cache=None),
                      question=AuditQuestion(metrics=("dp", "eo")),
                      options=ModelAuditOptions(allocation="uniform"))  # fmt: skip
    with BlackBox(LocalModelBackend(_model)) as bb:
        run = run_group_audit(bb, pool, columns=columns, metrics=["dp", "eo"], budget=300,
                              seed=1, allocation="uniform")  # fmt: skip
    assert tuple(job.result.group_cols) == tuple(run.group_cols) == ("g",)
    assert job.plan["columns"].sent == ["x"]
    assert job.result.to_dict() == run.to_dict()


@pytest.mark.parametrize("field", ["group_a", "send_group"])
def test_the_run_refuses_the_job_only_columns(pool: pd.DataFrame, field: str) -> None:
    from fairprobe.audit import run_group_audit

    value: Any = True if field == "send_group" else "a"
    with pytest.raises(InvalidParameterError, match=rf"run_group_audit does not read "
                                                    rf"columns\.{field}"):  # fmt: skip
        run_group_audit(None, pool, columns=ModelColumns(group="g", **{field: value}))
    with pytest.raises(InvalidParameterError, match="columns.group .group_col. is None"):
        run_group_audit(None, pool, columns=ModelColumns(label="y"))
