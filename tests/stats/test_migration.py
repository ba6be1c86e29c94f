"""fairlearn's documented ``MetricFrame`` examples run through ``AuditFrame``: every number equal.

The inputs are those of fairlearn 0.15's documentation (the ``MetricFrame`` docstring and the
user guide's "Performing a Fairness Assessment" and "Intersecting Groups" pages); each example is
built with both classes from the same arguments (``min_group_size=1`` on ``AuditFrame``, which by
default leaves groups under 20 out of the aggregates) and ``by_group``, ``overall``,
``group_min``, ``group_max``, ``difference`` and ``ratio`` (both methods) are compared to 1e-12.
Then ``sample_weight`` (fairlearn's ``sample_params``) on 5,000 random rows with three groups,
and a callable fairlearn does not ship (bootstrap intervals, labelled as such).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

fl = pytest.importorskip("fairlearn.metrics")
from sklearn.metrics import accuracy_score, precision_score, recall_score  # noqa: E402

from fairprobe import AuditFrame  # noqa: E402

Y_TRUE = [0, 1, 1, 1, 1, 0, 1, 0, 1, 0, 0, 0, 1, 1, 1, 1, 1, 1]
Y_PRED = [0, 0, 1, 0, 1, 1, 1, 0, 0, 1, 1, 1, 1, 0, 0, 1, 1, 0]
SF = ["b", "b", "a", "b", "b", "c", "c", "c", "a", "a", "c", "a", "b", "c", "c", "b", "c", "c"]
G2 = [8, 6, 8, 8, 8, 8, 6, 6, 6, 8, 6, 6, 6, 6, 8, 6, 6, 6]
DECISION = [0, 0, 0, 1, 1, 0, 1, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 1, 0, 1, 1, 1, 1,
            1, 0]
PREDICTION = [1, 1, 0, 1, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 1, 1, 0, 0, 0, 1, 1, 1, 0, 0, 1, 1,
              0, 0, 1]
CONTROL = list("HLHLHLLHHLLHHLLHLLHHLHLLHHLLHL")
SENSITIVE = list("ABBCCBAABACBCACCBBCABBCABABBAA")


def _frame(x: Any) -> pd.DataFrame:
    return x.to_frame() if isinstance(x, pd.Series) else x


def _same(a: Any, b: Any) -> None:
    if np.ndim(b) == 0:  # one metric given as a bare callable: fairlearn returns a scalar
        assert np.asarray(a, dtype=float).size == 1
        assert float(np.asarray(a, dtype=float).ravel()[0]) == pytest.approx(float(b), abs=1e-12)
        return
    fa, fb = _frame(a), _frame(b)
    if isinstance(b, pd.Series) and isinstance(a, pd.DataFrame) and b.name is not None:
        fb = fb.rename(columns={b.name: a.columns[0]}) if a.shape[1] == 1 else fb
    np.testing.assert_allclose(np.asarray(fa, dtype=float), np.asarray(fb, dtype=float),
                               rtol=0, atol=1e-12)
    assert [str(i) for i in fa.index] == [str(i) for i in fb.index]


def _compare(**kw: Any) -> tuple[Any, Any]:
    mf = fl.MetricFrame(**kw)
    extra = {}
    if "sample_params" in kw:
        kw = dict(kw)
        params = kw.pop("sample_params")
        extra["sample_weight"] = next(iter(params.values()))["sample_weight"]
    af = AuditFrame(**kw, **extra, min_group_size=1)
    _same(af.by_group, mf.by_group)
    _same(af.overall(), mf.overall)
    for agg in ("group_min", "group_max"):
        _same(getattr(af, agg)(), getattr(mf, agg)())
    for how in ("between_groups", "to_overall"):
        _same(af.difference(method=how), mf.difference(method=how))
        _same(af.ratio(method=how), mf.ratio(method=how))
    return af, mf


def test_docstring_examples() -> None:
    y_true = [1, 1, 1, 1, 1, 0, 0, 1, 1, 0]
    y_pred = [0, 1, 1, 1, 1, 0, 0, 0, 1, 1]
    sex = ["Female"] * 5 + ["Male"] * 5
    af, _ = _compare(metrics={"selection_rate": fl.selection_rate}, y_true=y_true,
                     y_pred=y_pred, sensitive_features=sex)
    assert af.difference().iloc[0] == pytest.approx(0.4) and af.ratio().iloc[0] == 0.5
    _compare(metrics={"accuracy": accuracy_score, "selection_rate": fl.selection_rate},
             y_true=y_true, y_pred=y_pred, sensitive_features=sex)


def test_perform_fairness_assessment_example() -> None:
    m = {"tpr": recall_score, "fpr": fl.false_positive_rate, "sel": fl.selection_rate,
         "count": fl.count}
    af, _ = _compare(metrics=m, y_true=Y_TRUE, y_pred=Y_PRED, sensitive_features=SF)
    assert list(af.by_group["count"]) == [4.0, 6.0, 8.0]


def test_intersecting_groups_examples() -> None:
    sf2 = pd.DataFrame(np.stack([SF, G2], axis=1), columns=["SF 0", "SF 1"])
    _compare(metrics=recall_score, y_true=Y_TRUE, y_pred=Y_PRED, sensitive_features=sf2)
    _compare(metrics={"precision": precision_score, "recall": recall_score, "count": fl.count},
             y_true=Y_TRUE, y_pred=Y_PRED, sensitive_features=sf2)


def test_control_features_example() -> None:
    af, mf = _compare(metrics=accuracy_score, y_true=DECISION, y_pred=PREDICTION,
                      sensitive_features={"SF": SENSITIVE}, control_features={"CF": CONTROL})
    assert af.difference().iloc[:, 0].round(4).tolist() == [0.55, 0.2143]
    from fairprobe.errors import DataError

    with pytest.raises(DataError, match="one AuditFrame per control level"):
        af.summary("accuracy-gap")


def _weighted_data(n: int = 5000, seed: int = 3) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    g = rng.choice(["x", "y", "z"], n, p=[0.5, 0.3, 0.2])
    yt = rng.random(n) < np.where(g == "x", 0.4, 0.3)
    yp = rng.random(n) < np.where(yt, 0.7, 0.2) + np.where(g == "z", 0.1, 0.0)
    return {"y_true": yt.astype(int), "y_pred": yp.astype(int), "sensitive_features": g,
            "w": rng.lognormal(0.0, 0.8, n)}


def test_sample_weight_equals_fairlearn_sample_params() -> None:
    d = _weighted_data()
    m = {"sel": fl.selection_rate, "tpr": recall_score, "fpr": fl.false_positive_rate,
         "ppv": precision_score, "acc": accuracy_score}
    w = d.pop("w")
    _compare(metrics=m, **d, sample_params={k: {"sample_weight": w} for k in m})
    # the rates without `metrics`: weighted, with Kish-effective intervals and bonferroni summaries
    af = AuditFrame(**d, sample_weight=w)
    mf = fl.MetricFrame(metrics=fl.selection_rate, **d, sample_params={"sample_weight": w})
    np.testing.assert_allclose(af.by_group["selection_rate"], mf.by_group, rtol=0, atol=1e-12)
    s = af.summary("dp")
    assert s.method == "bonferroni" and s.estimate == pytest.approx(float(mf.difference()))
    rec = af.by_group_records()[0]["rates"]["selection_rate"]
    assert isinstance(rec["n"], float) and rec["n"] < af.groups.sizes[0]  # effective size


def test_callable_metric_gets_a_bootstrap_interval() -> None:
    d = _weighted_data(2000)
    d.pop("w")

    def balanced_error(y_true: Any, y_pred: Any) -> float:
        yt, yp = np.asarray(y_true), np.asarray(y_pred)
        return float(0.5 * ((yp[yt == 1] == 0).mean() + (yp[yt == 0] == 1).mean()))

    af, _ = _compare(metrics={"ber": balanced_error}, **d)
    t = af.to_frame()
    assert ((t["ber_low"] <= t["ber"]) & (t["ber"] <= t["ber_high"])).all()
    again = AuditFrame(metrics={"ber": balanced_error}, **d).to_frame()
    np.testing.assert_array_equal(again["ber_low"], t["ber_low"])  # seeded
