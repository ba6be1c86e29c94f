"""One meaning per metric name: every registered metric, computed on every path that accepts
it from the same rows, gives the same estimate and the same interval; FNR/TNR/NPV/FOR match
scikit-learn's confusion matrix; a toy metric registered in a fixture is accepted by every path.

The paths: the in-memory :class:`~fairprobe.stats.frame.AuditFrame` (the library), the
predictions audit (``fairprobe audit --predictions``, one command run as a process) and the
black-box audit of a local scikit-learn model (``fairprobe.audit.audit_model``, the call behind
``fairprobe audit --model``), every group and two groups (``--group-a``/``--group-b``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import confusion_matrix

from fairprobe import metrics as registry
from fairprobe.audit import audit_model
from fairprobe.audit.predictions import predictions_job
from fairprobe.errors import InvalidParameterError
from fairprobe.stats.frame import AuditFrame

SRC = str(Path(__file__).resolve().parents[1] / "src")


def _rows(seed: int = 3, n: int = 900) -> tuple[pd.DataFrame, LogisticRegression]:
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"g": rng.choice(["a", "b", "c"], n, p=[0.5, 0.3, 0.2]),
                       "x": rng.normal(size=n), "z": rng.normal(size=n)})
    df["y"] = (df["x"] + 0.8 * (df["g"] == "a") + rng.normal(size=n) > 0.3).astype(int)
    model = LogisticRegression().fit(df[["x", "z"]], df["y"])
    df["p"] = model.predict(df[["x", "z"]])
    df["s"] = model.predict_proba(df[["x", "z"]])[:, 1]
    return df, model


def _key(summary: object) -> tuple[float, float, float, tuple[str, ...]]:
    return (summary.estimate, summary.low, summary.high,  # type: ignore[attr-defined]
            tuple(summary.pair))  # type: ignore[attr-defined]


def _paths(df: pd.DataFrame, model: LogisticRegression, names: list[str],
           two: tuple[str, str] | None = None) -> dict[str, dict[str, tuple]]:
    """``{path: {metric: (estimate, low, high, pair)}}`` for every path accepting the metrics."""
    rows = df if two is None else df[df["g"].isin(two)].reset_index(drop=True)
    out: dict[str, dict[str, tuple]] = {}
    scored = [n for n in names if "scores" in registry.METRICS[n].needs]
    af = AuditFrame(y_pred=rows["p"], sensitive_features=rows["g"], y_true=rows["y"],
                    scores=rows["s"], min_group_size=5)
    out["library"] = {n: _key(af.summary(n)) for n in names}
    groups = {} if two is None else {"group_a": two[0], "group_b": two[1]}
    pj = predictions_job(df, y_pred_col="p", group_col="g", metrics=names, y_true_col="y",
                         score_col="s", min_group_size=5, **groups)
    out["audit --predictions"] = {n: _key(pj.result.summary(n)) for n in names}
    labelled = [n for n in names if n not in scored]
    job = audit_model(model, queries=df[["x", "z", "g", "y"]], group_col="g",
                      metric=labelled, label_col="y", feature_cols=["x", "z"], budget="all",
                      cache=None, min_group_size=5, every_group=two is None and None, **groups)
    out["audit"] = {n: _key(job.result.summary(n)) for n in labelled}
    return out


def _assert_same(out: dict[str, dict[str, tuple]]) -> int:
    compared = 0
    lib = out["library"]
    for path, got in out.items():
        for name, value in got.items():
            assert value[3] == lib[name][3], (path, name)  # the same worst pair
            np.testing.assert_allclose(value[:3], lib[name][:3], rtol=0, atol=1e-12,
                                       err_msg=f"{path} {name}")
            compared += 1
    return compared


def test_every_metric_same_estimate_and_interval_on_every_path() -> None:
    df, model = _rows()
    names = [m.name for m in registry.METRICS.values() if "library" in m.paths]
    out = _paths(df, model, names)
    # every path that accepts a metric computed it
    for m in registry.METRICS.values():
        for path in ("library", "audit --predictions", "audit"):
            assert (m.name in out[path]) == (path in m.paths), (path, m.name)
    from fairprobe.scale.monitor import MONITOR_METRICS

    assert set(MONITOR_METRICS) == set(registry.metric_names("monitor"))
    assert _assert_same(out) >= 2 * len(names) + len(out["audit"])


def test_two_groups_accuracy_gap_is_one_estimator() -> None:
    """``--metric accuracy-gap --group-a b --group-b a``: the same estimate and simultaneous
    interval through the predictions file and through the local model."""
    df, model = _rows(seed=5)
    out = _paths(df, model, ["accuracy_difference", "false_negative_rate_difference"],
                 two=("b", "a"))
    assert _assert_same(out) == 6
    job = audit_model(model, queries=df[["x", "z", "g", "y"]], group_col="g", group_a="b",
                      group_b="a", metric="accuracy-gap", label_col="y",
                      feature_cols=["x", "z"], budget="all", cache=None, min_group_size=5)
    s = job.result.summary("accuracy_difference")
    assert s.compared == ("a", "b") and s.method == "exact"


@pytest.mark.parametrize("short", ["for", "fnr", "npv", "tnr"])
def test_negative_rates_match_sklearn_confusion_matrix(short: str) -> None:
    df, model = _rows(seed=11)
    name = registry.resolve(short).name
    rate = registry.RATES[registry.METRICS[name].rates[0]]
    expected = {}
    for g, part in df.groupby("g"):
        tn, fp, fn, tp = confusion_matrix(part["y"], part["p"], labels=[0, 1]).ravel()
        expected[g] = {"false_omission_rate": fn / (fn + tn), "false_negative_rate": fn / (fn + tp),
                       "negative_predictive_value": tn / (tn + fn),
                       "true_negative_rate": tn / (tn + fp)}[rate.name]
    gap = max(expected.values()) - min(expected.values())
    pj = predictions_job(df, y_pred_col="p", group_col="g", metrics=[short], y_true_col="y",
                         min_group_size=5)
    job = audit_model(model, queries=df[["x", "z", "g", "y"]], group_col="g", metric=[short],
                      label_col="y", feature_cols=["x", "z"], budget="all", cache=None,
                      min_group_size=5)
    for result in (pj.result, job.result):
        got = result.by_group[rate.name]
        for g, v in expected.items():
            assert got.loc[g] == pytest.approx(v, abs=1e-12)
        assert result.summary(name).estimate == pytest.approx(gap, abs=1e-12)


def test_cli_predictions_negative_rates(tmp_path: Path) -> None:
    df, _ = _rows(seed=11)
    df.to_csv(tmp_path / "p.csv", index=False)
    r = subprocess.run(
        [sys.executable, "-m", "fairprobe", "audit", "--predictions", str(tmp_path / "p.csv"),
         "--y-pred-col", "p", "--y-true-col", "y", "--group-col", "g",
         "--metric", "for,fnr,npv,tnr", "--min-group-size", "5", "--json",
         str(tmp_path / "r.json")],
        capture_output=True, text=True, env={**os.environ, "PYTHONPATH": SRC}, timeout=120)
    assert r.returncode == 0, r.stderr
    doc = json.loads((tmp_path / "r.json").read_text())
    af = AuditFrame(y_pred=df["p"], sensitive_features=df["g"], y_true=df["y"], min_group_size=5)
    text = json.dumps(doc)
    for short in ("for", "fnr", "npv", "tnr"):
        name = registry.resolve(short).name
        assert name in text
        assert repr(af.summary(name).estimate)[:10] in text


def test_unknown_metric_lists_every_choice_in_one_line() -> None:
    r = subprocess.run(
        [sys.executable, "-m", "fairprobe", "audit", "--predictions", "x.csv", "--y-pred-col",
         "p", "--group-col", "g", "--metric", "bogus"],
        capture_output=True, text=True, env={**os.environ, "PYTHONPATH": SRC}, timeout=60)
    assert r.returncode != 0 and "Traceback" not in r.stderr
    line = r.stderr.strip()
    assert "\n" not in line and "--metric" in line
    for choice in registry.choices():
        assert choice in line
    with pytest.raises(InvalidParameterError, match="the paths that can: .*sequential"):
        registry.resolve("eo", path="sequential (decision access)")


@pytest.fixture
def toy_metric():
    """A toy metric following docs/architecture.md, "How to add a metric": the ratio of the
    false negative rates, registered for the test and removed after."""
    m = registry.register_metric(registry.Metric(
        "false_negative_rate_ratio", ("false_negative_rate",), "ratio", ("fnr-ratio",)))
    yield m
    registry.unregister_metric(m.name)


def test_toy_metric_is_accepted_by_every_path(toy_metric: registry.Metric) -> None:
    assert toy_metric.paths == ("library", "audit --predictions", "audit")
    df, model = _rows(seed=7)
    out = _paths(df, model, [toy_metric.name])
    assert _assert_same(out) == 3
    rates = AuditFrame(y_pred=df["p"], sensitive_features=df["g"], y_true=df["y"],
                       min_group_size=5).by_group["false_negative_rate"]
    assert out["library"][toy_metric.name][0] == pytest.approx(rates.min() / rates.max())
    assert "fnr-ratio" in registry.choices("audit")
