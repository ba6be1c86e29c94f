"""fairlearn's documented ``MetricFrame`` examples run through ``AuditFrame``: every number equal.

The ``MetricFrame`` docstring's own doctest runs with only its import changed (``AuditFrame as
MetricFrame``) and must print fairlearn's expected output. The user guide's examples ("Performing
a Fairness Assessment", "Intersecting Groups", control features) are built with both classes from
the same arguments, on ``AuditFrame``'s defaults, and ``by_group``, ``overall``, ``group_min``,
``group_max``, ``difference`` and ``ratio`` (both methods, both ``errors``) are compared to
1e-12; so are fairlearn's summary functions (``demographic_parity_difference`` & co.) against
``summary(...).estimate``. Then ``sample_params`` on 5,000 random rows with three groups, a
callable fairlearn does not ship (bootstrap intervals, labelled as such), scikit-learn's
``zero_division``, and fairlearn's bootstrap (``n_boot``, ``ci_quantiles``, ``random_state``:
every ``*_ci`` quantile equal).
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
    af = AuditFrame(**kw)  # the same arguments, AuditFrame's defaults
    _same(af.by_group, mf.by_group)
    _same(af.overall, mf.overall)
    for errors in ("raise", "coerce"):
        for agg in ("group_min", "group_max"):
            _same(getattr(af, agg)(errors=errors), getattr(mf, agg)(errors=errors))
    for how in ("between_groups", "to_overall"):
        for errors in ("raise", "coerce"):
            _same(af.difference(method=how, errors=errors),
                  mf.difference(method=how, errors=errors))
            _same(af.ratio(method=how, errors=errors), mf.ratio(method=how, errors=errors))
    return af, mf


def test_the_metricframe_docstring_runs_with_only_the_import_changed() -> None:
    import doctest

    text = fl.MetricFrame.__doc__ or ""
    text = text[text.index("Examples"):]
    old = "from fairlearn.metrics import MetricFrame, selection_rate"
    assert old in text
    text = text.replace(old, "from fairprobe import AuditFrame as MetricFrame\n"
                             "    >>> from fairlearn.metrics import selection_rate")
    test = doctest.DocTestParser().get_doctest(text, {}, "MetricFrame", None, 0)
    assert len(test.examples) >= 10
    out: list[str] = []
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    result = runner.run(test, out=out.append)
    assert result.failed == 0, "".join(out)


@pytest.mark.parametrize("name, ours", [
    ("demographic_parity_difference", "dp"), ("demographic_parity_ratio", "di"),
    ("equal_opportunity_difference", "eo"), ("equal_opportunity_ratio", "eo-ratio"),
    ("equalized_odds_difference", "eodds"), ("equalized_odds_ratio", "eodds-ratio"),
    ("false_positive_rate_difference", "fpr"), ("false_positive_rate_ratio", "fpr-ratio")])
def test_fairlearn_summary_functions_equal_the_summaries(name: str, ours: str) -> None:
    rng = np.random.default_rng(11)
    g = rng.choice(["a", "b", "c", "d"], 400, p=[0.6, 0.3, 0.07, 0.03])  # 12-row group kept
    yt = rng.random(400) < 0.4
    yp = rng.random(400) < np.where(yt, 0.7, 0.25) + np.where(g == "d", 0.2, 0.0)
    want = getattr(fl, name)(yt, yp, sensitive_features=g)
    af = AuditFrame(y_true=yt, y_pred=yp, sensitive_features=g)
    for metric in (ours, name):  # our alias and fairlearn's own name
        s = af.summary(metric)
        assert s.estimate == pytest.approx(want, abs=1e-12) and s.low <= want <= s.high
        assert "d" in s.compared and not s.excluded  # the small group is in the estimate


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
    # the summary is computed within each control level and is the worst of them
    s = af.summary("accuracy-gap")
    assert set(s.by_control) == {"H", "L"}
    assert s.estimate == pytest.approx(0.55) and s.pair[0].startswith("H: ")
    assert s.low == max(x.low for x in s.by_control.values())
    assert all(x.confidence_level == pytest.approx(0.975) for x in s.by_control.values())
    assert s.by_control["L"].estimate == pytest.approx(0.2143, abs=1e-4)


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
    _compare(metrics=fl.selection_rate, **d, sample_params={"sample_weight": w})
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


def test_zero_division_follows_scikit_learn() -> None:
    # group "b" predicts no positive: precision is 0.0 with scikit-learn's warning, as in fairlearn
    from sklearn.exceptions import UndefinedMetricWarning

    yt, yp, g = [1, 0, 1, 1, 0, 1], [1, 1, 0, 0, 0, 0], ["a", "a", "a", "b", "b", "b"]
    with pytest.warns(UndefinedMetricWarning):
        af, _ = _compare(metrics={"p": precision_score}, y_true=yt, y_pred=yp,
                         sensitive_features=g)
    assert af.by_group["p"].tolist() == [0.5, 0.0]
    nan = AuditFrame(metrics={"p": precision_score}, y_true=yt, y_pred=yp, sensitive_features=g,
                     zero_division=np.nan)
    assert np.isnan(nan.by_group["p"].iloc[1])
    # no evidence on b's precision: its summary leaves b out and says so
    s = AuditFrame(y_true=yt, y_pred=yp, sensitive_features=g, zero_division=0.0)
    with pytest.raises(Exception, match="no instance with y_pred = 1"):
        s.summary("ppv")


def test_sample_params_forms_and_errors() -> None:
    from fairprobe.errors import DataError

    d = _weighted_data(300)
    w = d.pop("w")
    a = AuditFrame(**d, sample_params={"sample_weight": w}).by_group
    b = AuditFrame(**d, sample_weight=w).by_group
    pd.testing.assert_frame_equal(a, b)
    with pytest.raises(DataError, match="different sample_weight"):
        AuditFrame(**d, metrics={"s": fl.selection_rate, "a": accuracy_score},
                   sample_params={"s": {"sample_weight": w}, "a": {"sample_weight": w + 1}})
    with pytest.raises(DataError, match="only 'sample_weight'"):
        AuditFrame(**d, sample_params={"pos_label": 1})
    with pytest.raises(Exception, match="errors"):
        AuditFrame(**d).group_max(errors="ignore")


def test_small_group_is_kept_and_makes_the_verdict_undetermined_with_the_reason() -> None:
    rng = np.random.default_rng(5)
    g = np.array(["big"] * 2000 + ["other"] * 2000 + ["tiny"] * 15)
    yp = rng.random(g.size) < np.where(g == "tiny", 0.6, 0.3)
    af = AuditFrame(y_pred=yp, sensitive_features=g)
    s = af.summary("dp")
    assert "tiny" in s.compared and s.verdict == "undetermined"
    assert s.estimate == pytest.approx(float(fl.demographic_parity_difference(
        yp, yp, sensitive_features=g)), abs=1e-12)
    assert s.reason is not None and "tiny (selection_rate: n=15)" in s.reason
    assert s.to_dict()["reason"] == s.reason
    # min_group_size stays an option: the group is then left out, with the reason
    s20 = AuditFrame(y_pred=yp, sensitive_features=g, min_group_size=20).summary("dp")
    assert s20.excluded == {"tiny": "too small: 15 < min_group_size 20"}


@pytest.mark.parametrize("kw", [
    {"metrics": {"sel": fl.selection_rate, "acc": accuracy_score}, "y_true": Y_TRUE,
     "y_pred": Y_PRED, "sensitive_features": SF},
    {"metrics": {"tpr": recall_score, "count": fl.count}, "y_true": DECISION,
     "y_pred": PREDICTION, "sensitive_features": {"SF": SENSITIVE},
     "control_features": {"CF": CONTROL}},
])
def test_bootstrap_quantiles_are_fairlearns(kw: dict[str, Any]) -> None:
    """``n_boot``, ``ci_quantiles``, ``random_state``: the same resamples as fairlearn, so the
    same quantiles of every statistic."""
    boot = {"n_boot": 40, "ci_quantiles": [0.05, 0.5, 0.95], "random_state": 13}
    mf = fl.MetricFrame(**kw, **boot)
    af = AuditFrame(**kw, **boot)
    for ours, theirs in ((af.by_group_ci, mf.by_group_ci), (af.overall_ci, mf.overall_ci),
                         (af.group_min_ci(), mf.group_min_ci()),
                         (af.group_max_ci(), mf.group_max_ci()),
                         (af.difference_ci(), mf.difference_ci()),
                         (af.ratio_ci("to_overall"), mf.ratio_ci("to_overall"))):
        assert len(ours) == len(theirs) == 3
        for a, b in zip(ours, theirs, strict=True):
            _same(a, b)
    from fairprobe.errors import DataError

    with pytest.raises(DataError, match="n_boot and ci_quantiles"):
        AuditFrame(**kw).difference_ci()
