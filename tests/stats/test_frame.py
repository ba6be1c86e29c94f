"""AuditFrame: any number of groups and intersections, cross-checked with fairlearn on Adult."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import fairlearn.metrics as flm
import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import accuracy_score, precision_score

from fairprobe import AuditFrame
from fairprobe.errors import DataError, EmptyGroupError, InvalidParameterError
from fairprobe.stats import group_labels
from fairprobe.stats.simultaneous import family_intervals

COLUMNS = ["age", "workclass", "fnlwgt", "education", "education-num", "marital-status",
           "occupation", "relationship", "race", "sex", "capital-gain", "capital-loss",
           "hours-per-week", "native-country", "income"]
RATES = ["selection_rate", "true_positive_rate", "false_positive_rate",
         "positive_predictive_value", "accuracy", "error_rate"]


@functools.cache
def _adult(path: Path) -> pd.DataFrame:
    df = pd.read_csv(path, header=None, names=COLUMNS, skipinitialspace=True)
    df["y_true"] = (df["income"] == ">50K").astype(int)
    df["y_pred"] = ((df["education-num"] >= 13) & (df["hours-per-week"] >= 40)
                    | (df["capital-gain"] > 5000)).astype(int)
    df["pred_label"] = np.where(df["y_pred"] == 1, ">50K", "<=50K")
    df["score"] = df["education-num"] / 16.0 + df["hours-per-week"] / 400.0
    return df


@pytest.fixture
def adult() -> pd.DataFrame:
    """UCI Adult training split (32,561 rows), labels as strings, a fixed rule as the model:
    from ../shared/data when beside the checkout, else the copy bundled with fairprobe."""
    import fairprobe.datasets
    from conftest import SHARED_DATA

    path = SHARED_DATA / "adult" / "adult.data.gz"
    if not path.exists():
        path = Path(fairprobe.datasets.__file__).parent / "data" / "adult.data.gz"
    return _adult(path).copy()


def _fairlearn_frame(df: pd.DataFrame, sf: pd.Series | pd.DataFrame) -> flm.MetricFrame:
    return flm.MetricFrame(
        metrics={
            "selection_rate": flm.selection_rate,
            "true_positive_rate": flm.true_positive_rate,
            "false_positive_rate": flm.false_positive_rate,
            "positive_predictive_value": functools.partial(precision_score, zero_division=0),
            "accuracy": accuracy_score,
            "error_rate": lambda yt, yp: 1.0 - accuracy_score(yt, yp),
        },
        y_true=df["y_true"], y_pred=df["y_pred"], sensitive_features=sf,
    )


@pytest.mark.parametrize("cols", [["race"], ["sex", "race"]])
def test_point_estimates_equal_fairlearn_metricframe(adult: pd.DataFrame, cols) -> None:
    sf = adult[cols[0]] if len(cols) == 1 else adult[cols]
    # string labels with pos_label, as an auditor holds them
    # min_group_size=1 compares every group, as fairlearn does (the default, 20, leaves out
    # groups too small to judge: the engine's one filtering rule)
    af = AuditFrame(y_pred=adult["pred_label"], y_true=adult["income"], pos_label=">50K",
                    sensitive_features=sf, scores=adult["score"], min_group_size=1)
    mf = _fairlearn_frame(adult, sf)
    ours = af.by_group[RATES]
    theirs = mf.by_group.loc[ours.index, RATES]
    assert ours.index.names == theirs.index.names
    np.testing.assert_allclose(ours.to_numpy(float), theirs.to_numpy(float), rtol=0, atol=1e-12)
    for name, fn in (("difference", "difference"), ("ratio", "ratio")):
        for method in ("between_groups", "to_overall"):
            a = getattr(af, fn)(method=method)[RATES].to_numpy(float)
            b = getattr(mf, fn)(method=method)[RATES].to_numpy(float)
            np.testing.assert_allclose(a, b, rtol=0, atol=1e-12, err_msg=f"{name} {method}")
    np.testing.assert_allclose(af.group_max()[RATES].to_numpy(float),
                               mf.group_max()[RATES].to_numpy(float), atol=1e-12, rtol=0)
    np.testing.assert_allclose(af.group_min()[RATES].to_numpy(float),
                               mf.group_min()[RATES].to_numpy(float), atol=1e-12, rtol=0)
    np.testing.assert_allclose(af.overall[RATES].to_numpy(float),
                               mf.overall[RATES].to_numpy(float), atol=1e-12, rtol=0)
    # fairlearn's one-number metrics = our worst-pair summaries
    yt, yp = adult["y_true"], adult["y_pred"]
    for ours_name, theirs_fn in (
        ("dp", flm.demographic_parity_difference), ("di", flm.demographic_parity_ratio),
        ("eodds", flm.equalized_odds_difference), ("eo", flm.equal_opportunity_difference),
    ):
        assert af.summary(ours_name).estimate == pytest.approx(
            theirs_fn(yt, yp, sensitive_features=sf), abs=1e-12)
    by = adult.groupby(cols)["score"].mean()
    np.testing.assert_allclose(af.by_group["mean_score"].to_numpy(),
                               by.loc[af.by_group.index].to_numpy(), atol=1e-12, rtol=0)


def test_intersections_too_small_groups_are_listed_not_dropped(adult: pd.DataFrame) -> None:
    sf = adult[["sex", "race"]]
    af = AuditFrame(y_pred=adult["y_pred"], y_true=adult["y_true"], sensitive_features=sf,
                    min_group_size=200)
    t = af.to_frame()
    assert len(t) == 10 and int(t["n"].sum()) == len(adult)
    small = t.index[t["too_small"]].tolist()
    assert ("Female", "Other") in small and ("Male", "White") not in small
    s = af.summary("dp")
    assert "Female, Other" in s.excluded and "Female, Other" not in s.compared
    assert set(s.compared) | set(s.excluded) == set(af.groups.labels)
    # the worst pair is computed over the compared groups only
    bg = af.by_group.loc[[g for g in t.index if g not in small], "selection_rate"]
    assert s.estimate == pytest.approx(bg.max() - bg.min(), abs=1e-12)
    assert s.pair == (", ".join(bg.idxmax()), ", ".join(bg.idxmin()))


def _small_frame(method: str = "exact", **kw) -> AuditFrame:
    rng = np.random.default_rng(4)
    g = np.repeat(np.array(["a", "b", "c", "d"]), [40, 80, 300, 30])
    p = {"a": 0.2, "b": 0.5, "c": 0.45, "d": 0.05}
    yp = (rng.random(g.size) < np.vectorize(p.get)(g)).astype(int)
    yt = rng.integers(0, 2, g.size)
    return AuditFrame(y_pred=yp, y_true=yt, sensitive_features=pd.Series(g, name="grp"),
                      method=method, **{"min_group_size": 1, **kw})


@pytest.mark.parametrize("method", ["exact", "bonferroni"])
def test_summary_intervals_cover_every_pair_and_name_the_worst(method) -> None:
    af = _small_frame(method, reference="c")
    s = af.summary("dp")
    rates = af.by_group["selection_rate"]
    assert s.pair == (rates.idxmax(), rates.idxmin())
    assert s.estimate == pytest.approx(rates.max() - rates.min())
    assert s.low <= s.estimate <= s.high
    assert s.family_size == 6  # the 6 distinct pairs; the vs-rest family is apart
    assert s.rest_family_size == 4
    # the worst-pair interval bounds every pairwise interval of the family
    t = af.to_frame()
    k, n = t["selection_rate"] * t["n"], t["n"]
    fam = family_intervals(k.round().to_numpy(), n.to_numpy(),
                           k.sum() - k.round().to_numpy(), n.sum() - n.to_numpy(),
                           method=method)
    assert s.high == pytest.approx(max(fam.high.max(), (-fam.low).max()))
    assert [r["group"] for r in s.vs_reference] == ["a", "b", "d"]
    # simultaneous intervals are wider than one unadjusted interval of the same pair
    from fairprobe.stats import CountsVector, demographic_parity_from_counts

    one = demographic_parity_from_counts(CountsVector(int(k["b"]), 80, int(k["d"]), 30),
                                         method="exact" if method == "exact" else "newcombe")
    j = fam.pairs.index((1, 3))
    assert fam.high[j] - fam.low[j] > one.interval.width
    di = af.summary("di")
    assert di.estimate == pytest.approx(rates.min() / rates.max())
    assert di.low <= di.estimate <= di.high <= 1.0
    eod = af.summary("eodds")
    assert eod.estimate == pytest.approx(max(af.difference()["true_positive_rate"],
                                             af.difference()["false_positive_rate"]))
    assert eod.family_size == 2 * 6


def test_verdicts_follow_the_interval_and_the_rule() -> None:
    af = _small_frame()
    s = af.summary("dp")
    assert s.verdict == "unfair" and s.low > 0.05
    assert af.summary("dp", threshold=0.99).verdict == "fair"
    assert af.summary("di", threshold=0.99).verdict == "unfair"
    di = af.summary("di")  # the pair family alone (Sidak over 4 groups): upper bound < 0.8
    assert di.verdict == "unfair" and di.high < 0.8


def test_to_dict_uses_the_shared_interval_shape_and_is_json() -> None:
    af = _small_frame()
    d = af.to_dict(["dp", "fpr"])
    json.dumps(d, allow_nan=False)
    iv = d["summaries"]["demographic_parity_difference"]["interval"]
    assert set(iv) == {"low", "high", "level", "method"} and iv["method"] == "exact-simultaneous"
    row = d["by_group"][0]
    assert row["group"] == "a" and row["n"] == 40
    assert set(row["rates"]["selection_rate"]["interval"]) == {"low", "high", "level", "method"}
    assert "false_positive_rate_difference" in d["summaries"]
    html = af._repr_html_()
    assert "<table" in html and "demographic_parity_difference" in html


def test_group_labels_shapes() -> None:
    rows = np.array([["F", "W"], ["M", "B"], ["F", "W"]], dtype=object)
    g = group_labels(rows)
    assert g.keys == (("F", "W"), ("M", "B")) and g.codes.tolist() == [0, 1, 0]
    assert g.names == ("sensitive_feature_0", "sensitive_feature_1")
    g2 = group_labels({"sex": ["F", "M", "F"], "race": ["W", "B", "B"]})
    assert g2.labels == ("F, B", "F, W", "M, B") and g2.position("F, W") == 1
    assert g2.position(("M", "B")) == 2
    with pytest.raises(EmptyGroupError, match="groups present"):
        g2.position("X")


@pytest.mark.parametrize(
    ("kwargs", "err", "match"),
    [
        ({"y_pred": [0, 1, np.nan, 1]}, DataError, "missing"),
        ({"y_pred": [0, 1, 2, 1]}, DataError, "0/1"),
        ({"y_pred": ["y", "n", "y", "n"]}, DataError, "pos_label"),
        ({"y_pred": [0, 1, 1]}, DataError, "one entry per instance"),
        ({"sensitive_features": ["a", None, "b", "a"]}, DataError, "missing"),
        ({"sensitive_features": ["a", "a", "a", "a"]}, DataError, "single group"),
        ({"min_group_size": 0}, InvalidParameterError, "min_group_size"),
        ({"method": "holm"}, InvalidParameterError, "'method' parameter"),
        ({"reference": "zz"}, EmptyGroupError, "does not occur"),
    ],
)
def test_bad_input_says_what_to_fix(kwargs, err, match) -> None:
    base = {"y_pred": [0, 1, 1, 0], "sensitive_features": ["a", "b", "a", "b"]}
    with pytest.raises(err, match=match):
        AuditFrame(**{**base, **kwargs})


def test_metric_needing_labels_and_groups_too_small_for_a_summary() -> None:
    af = AuditFrame(y_pred=[0, 1, 1, 0], sensitive_features=["a", "b", "a", "b"])
    with pytest.raises(DataError, match="needs y_pred and y_true"):
        af.summary("eo")
    with pytest.raises(InvalidParameterError, match="'metric' parameter"):
        af.summary("nope")
    af2 = AuditFrame(y_pred=[0, 1, 1, 0, 1], sensitive_features=["a", "b", "a", "b", "c"],
                     min_group_size=2)
    assert af2.summary("dp").excluded == {"c": "too small: 1 < min_group_size 2"}
    af3 = AuditFrame(y_pred=[0, 1, 1, 0], sensitive_features=["a", "b", "a", "b"],
                     min_group_size=3)
    with pytest.raises(DataError, match="two groups large enough"):
        af3.summary("dp")


def test_many_columns_fall_back_to_unique_rows() -> None:
    # 2^64 possible combinations: more than one int64 code can hold
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({f"c{j}": rng.integers(0, 2, 50) * (j + 1) for j in range(64)})
    frame["c0"] = np.arange(50) % 2
    g = group_labels(frame)
    assert int(g.sizes.sum()) == 50 and len(g.names) == 64
    # same grouping as pandas
    ng = frame.groupby(list(frame.columns), sort=True).ngroup().to_numpy()
    assert (g.codes == ng).all()


def test_pos_label_with_0_1_decisions_and_string_labels() -> None:
    y_true = np.array([">50K", "<=50K", ">50K", "<=50K", ">50K", "<=50K"])
    y_pred = np.array([1, 0, 0, 1, 1, 0])
    af = AuditFrame(y_pred=y_pred, y_true=y_true, pos_label=">50K",
                    sensitive_features=["a", "a", "a", "b", "b", "b"])
    assert af.by_group["selection_rate"].tolist() == [1 / 3, 2 / 3]
    assert af.by_group["true_positive_rate"].tolist() == [0.5, 1.0]


def test_every_pair_is_reported_with_its_simultaneous_interval() -> None:
    af = _small_frame()
    s = af.summary("dp")
    assert len(s.pairs) == 6 and s.pairs[0]["groups"] == ["a", "b"]
    rates = af.by_group["selection_rate"]
    for p in s.pairs:
        g1, g2 = p["groups"]
        assert p["estimate"] == pytest.approx(rates[g1] - rates[g2])
        assert p["interval"]["low"] <= p["estimate"] <= p["interval"]["high"]
        assert p["interval"]["high"] <= s.high + 1e-12
