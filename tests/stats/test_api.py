"""Array-level entry points: validation, and a cross-check against fairlearn on UCI Adult."""

from __future__ import annotations

import functools
import itertools
from pathlib import Path

import fairlearn.metrics as flm
import numpy as np
import pandas as pd
import pytest

from fairprobe.errors import DataError, EmptyGroupError, InvalidParameterError
from fairprobe.stats import (
    CountsVector,
    compute_metric,
    demographic_parity_difference,
    demographic_parity_from_counts,
    disparate_impact_ratio,
    equal_opportunity_difference,
    group_counts,
    performance_gap,
)

COLUMNS = ["age", "workclass", "fnlwgt", "education", "education-num", "marital-status",
           "occupation", "relationship", "race", "sex", "capital-gain", "capital-loss",
           "hours-per-week", "native-country", "income"]


@functools.cache
def _load_adult(path: Path) -> pd.DataFrame:
    df = pd.read_csv(path, header=None, names=COLUMNS, skipinitialspace=True)
    df["y_true"] = (df["income"] == ">50K").astype(int)
    # A fixed, deterministic classifier: a simple rule on education and hours (no training).
    df["y_pred"] = ((df["education-num"] >= 13) & (df["hours-per-week"] >= 40)
                    | (df["capital-gain"] > 5000)).astype(int)
    return df


@pytest.fixture
def adult(shared_data: Path) -> pd.DataFrame:
    """UCI Adult training split (32,561 rows) read with pandas, plus y_true and y_pred."""
    return _load_adult(shared_data / "adult" / "adult.data.gz").copy()


def test_fairlearn_cross_check_on_adult_sex(adult: pd.DataFrame) -> None:
    yt, yp, sex = adult["y_true"], adult["y_pred"], adult["sex"]
    assert sorted(sex.unique()) == ["Female", "Male"]

    dp = demographic_parity_difference(yt, yp, sensitive_features=sex)
    assert dp.groups == ("Female", "Male")
    ref = flm.demographic_parity_difference(yt, yp, sensitive_features=sex)
    assert abs(dp.estimate) == pytest.approx(ref, abs=1e-12)  # fairlearn: |max - min|
    assert dp.estimate < 0  # women are selected less by this rule

    di = disparate_impact_ratio(yt, yp, sensitive_features=sex, group_b="Male")
    ref_ratio = flm.demographic_parity_ratio(yt, yp, sensitive_features=sex)  # min / max
    assert di.estimate == pytest.approx(ref_ratio, rel=1e-12)
    assert di.groups == ("rest", "Male")
    assert di.verdict == "unfair" and di.interval.high < 0.8

    eo = equal_opportunity_difference(yt, yp, sensitive_features=sex, group_a="Female")
    ref_eo = flm.equal_opportunity_difference(yt, yp, sensitive_features=sex)
    assert abs(eo.estimate) == pytest.approx(ref_eo, abs=1e-12)

    # Counts agree with pandas.
    c = dp.counts
    assert isinstance(c, CountsVector)
    assert c.A == int((sex == "Female").sum()) and c.a == int(yp[sex == "Female"].sum())


def test_fairlearn_cross_check_on_adult_race_pairwise(adult: pd.DataFrame) -> None:
    # fairlearn's between-groups difference is the largest pairwise gap over all groups.
    yt, yp, race = adult["y_true"], adult["y_pred"], adult["race"]
    values = sorted(race.unique())
    assert len(values) == 5
    gaps = [demographic_parity_difference(yt, yp, sensitive_features=race, group_a=u,
                                          group_b=v).estimate
            for u, v in itertools.combinations(values, 2)]
    ref = flm.demographic_parity_difference(yt, yp, sensitive_features=race)
    assert max(abs(g) for g in gaps) == pytest.approx(ref, abs=1e-12)
    eo_gaps = [equal_opportunity_difference(yt, yp, sensitive_features=race, group_a=u,
                                            group_b=v).estimate
               for u, v in itertools.combinations(values, 2)]
    ref_eo = flm.equal_opportunity_difference(yt, yp, sensitive_features=race)
    assert max(abs(g) for g in eo_gaps) == pytest.approx(ref_eo, abs=1e-12)


def test_performance_gap_on_adult(adult: pd.DataFrame) -> None:
    correct = (adult["y_true"] == adult["y_pred"]).astype(float)
    r = performance_gap(correct, sensitive_features=adult["sex"], group_a="Female",
                        tolerance=0.01)
    by = correct.groupby(adult["sex"]).mean()
    assert r.estimate == pytest.approx(by["Female"] - by["Male"], abs=1e-12)
    assert r.interval.low < r.estimate < r.interval.high
    w = np.where(adult["age"] > 40, 2.0, 1.0)
    rw = performance_gap(correct, sensitive_features=adult["sex"], group_a="Female",
                         sample_weight=w)
    f = adult["sex"] == "Female"
    exp = np.average(correct[f], weights=w[f]) - np.average(correct[~f], weights=w[~f])
    assert rw.estimate == pytest.approx(exp, abs=1e-12)


def test_arrays_and_counts_paths_agree() -> None:
    rng = np.random.default_rng(7)
    g = rng.choice(["a", "b", "c"], 500)
    p = rng.integers(0, 2, 500)
    r = demographic_parity_difference(None, p, sensitive_features=g, group_a="a", group_b="c",
                                      tolerance=0.1, confidence_level=0.9)
    c = group_counts(p, g, group_a="a", group_b="c")
    assert r.counts == c
    assert r == demographic_parity_from_counts(c, tolerance=0.1, confidence_level=0.9,
                                               groups=("a", "c"))


def test_compute_metric_aliases_and_errors() -> None:
    g = ["x", "y"] * 10
    p = [1, 0, 0, 1] * 5
    t = [1, 1, 0, 1] * 5
    assert compute_metric("dp", sensitive_features=g, y_pred=p).metric == (
        "demographic_parity_difference")
    assert compute_metric("di", sensitive_features=g, y_pred=p, method="katz").method == "katz"
    assert compute_metric("eo", sensitive_features=g, y_pred=p, y_true=t).counts == (
        CountsVector(5, 5, 5, 10))
    with pytest.raises(InvalidParameterError, match="'metric' parameter"):
        compute_metric("accuracy", sensitive_features=g, y_pred=p)
    with pytest.raises(DataError, match="needs y_true"):
        compute_metric("eo", sensitive_features=g, y_pred=p)
    with pytest.raises(InvalidParameterError, match="'method' parameter"):
        compute_metric("dp", sensitive_features=g, y_pred=p, method="katz")
    with pytest.raises(DataError, match="not performance_gap"):
        compute_metric("gap", sensitive_features=g, values=np.asarray(p, float), method="exact")
    ex = compute_metric("dp", sensitive_features=g, y_pred=p, method="exact")
    assert ex.method == "exact-difference" and ex.interval.width > compute_metric(
        "dp", sensitive_features=g, y_pred=p, method="newcombe").interval.width
    assert compute_metric("dp", sensitive_features=g, y_pred=p).interval == ex.interval
    with pytest.raises(DataError, match="sample_weight is supported by performance_gap only"):
        compute_metric("dp", sensitive_features=g, y_pred=p, sample_weight=np.ones(20))


@pytest.mark.parametrize(
    ("y_pred", "match"),
    [
        ([1.0, np.nan, 0.0, 1.0], "y_pred contains 1 NaN value"),
        ([1, 2, 0, 1], r"y_pred must hold 0/1 decisions; found 2"),
        (["yes", "no", "yes", "no"], r"found values 'yes', 'no'"),
        ([1, None, 0, 1], "y_pred contains 1 NaN value"),
        ([1, 0, 1], "y_pred has 3 entries but sensitive_features has 4"),
    ],
)
def test_bad_decisions(y_pred: list[object], match: str) -> None:
    with pytest.raises(DataError, match=match):
        demographic_parity_difference(None, y_pred, sensitive_features=["a", "b", "a", "b"])


def test_boolean_and_float_decisions_are_accepted() -> None:
    g = ["a", "b", "a", "b"]
    r1 = demographic_parity_difference(None, [True, False, True, True], sensitive_features=g)
    r2 = demographic_parity_difference(None, [1.0, 0.0, 1.0, 1.0], sensitive_features=g)
    assert r1.counts == r2.counts == CountsVector(2, 2, 1, 2)


def test_eo_empty_positive_subgroup() -> None:
    g = ["a", "a", "b", "b"]
    with pytest.raises(EmptyGroupError, match="Group 'b' has no instance with y_true == 1"):
        equal_opportunity_difference([1, 0, 0, 0], [1, 1, 0, 1], sensitive_features=g)
    with pytest.raises(DataError, match="y_true contains 1 NaN"):
        equal_opportunity_difference([1, np.nan, 1, 0], [1, 1, 0, 1], sensitive_features=g)


def test_performance_gap_bad_values() -> None:
    g = ["a", "a", "b", "b"]
    with pytest.raises(DataError, match="values contains 1 NaN or infinite"):
        performance_gap([1.0, np.inf, 0.0, 1.0], sensitive_features=g)
    with pytest.raises(DataError, match="non-negative"):
        performance_gap([1.0, 0.0, 0.0, 1.0], sensitive_features=g,
                        sample_weight=[1.0, -1.0, 1.0, 1.0])
    with pytest.raises(DataError, match="needs at least two"):
        performance_gap([1.0, 0.0, 0.0, 1.0], sensitive_features=["a", "b", "b", "b"])


def test_missing_group_and_nan_groups_through_api() -> None:
    with pytest.raises(EmptyGroupError, match="group_a='z'"):
        disparate_impact_ratio(None, [1, 0], sensitive_features=["a", "b"], group_a="z")
    with pytest.raises(DataError, match="missing value"):
        disparate_impact_ratio(None, [1, 0, 1], sensitive_features=["a", np.nan, "b"])
    with pytest.raises(DataError, match="single value"):
        disparate_impact_ratio(None, [1, 0], sensitive_features=["a", "a"])
