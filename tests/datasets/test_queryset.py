"""Query sets from CSV/Parquet: validation with clear errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fairprobe.datasets.queryset import QuerySet, adult_queryset, load_queryset
from fairprobe.errors import DataError, EmptyGroupError, InvalidParameterError


def _frame() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "age": [25, 38, 28, 44, 18, 34],
            "sex": ["Male", "Female", "Male", "Female", "Female", "Male"],
            "y": [0, 1, 1, 0, 0, 1],
            "note": ["a", "b", "c", "d", "e", "f"],
        }
    )


@pytest.mark.parametrize("suffix", [".csv", ".csv.gz", ".parquet", ".tsv"])
def test_roundtrip(tmp_path: Path, suffix: str) -> None:
    p = tmp_path / f"q{suffix}"
    if suffix == ".parquet":
        _frame().to_parquet(p)
    else:
        _frame().to_csv(p, index=False, sep="\t" if suffix == ".tsv" else ",")
    qs = load_queryset(p, group_col="sex", label_col="y", feature_cols=["age", "sex"])
    assert len(qs) == 6
    assert qs.feature_cols == ("age", "sex")
    assert qs.group_counts() == {"Male": 3, "Female": 3}
    assert list(qs.labels) == [0, 1, 1, 0, 0, 1]
    recs = qs.records()
    assert recs[0] == {"age": 25, "sex": "Male"}
    assert type(recs[0]["age"]) is int  # JSON-ready, not numpy
    assert list(qs.group_mask("Female")) == [False, True, False, True, True, False]


def test_default_features_exclude_label_only() -> None:
    qs = QuerySet.from_frame(_frame(), "sex", "y")
    assert qs.feature_cols == ("age", "sex", "note")
    assert qs.label_col == "y"
    with pytest.raises(DataError, match="no label column"):
        _ = QuerySet.from_frame(_frame(), "sex").labels


def test_missing_column(tmp_path: Path) -> None:
    p = tmp_path / "q.csv"
    _frame().to_csv(p, index=False)
    with pytest.raises(DataError, match=r"missing column\(s\) \['gender'\]"):
        load_queryset(p, group_col="gender")
    with pytest.raises(DataError, match=r"missing column\(s\) \['label'\]"):
        load_queryset(p, group_col="sex", label_col="label")
    with pytest.raises(DataError, match=r"missing column\(s\) \['income'\]"):
        load_queryset(p, group_col="sex", feature_cols=["age", "income"])


def test_nan_is_rejected_with_row() -> None:
    df = _frame()
    df.loc[3, "age"] = np.nan
    with pytest.raises(
        DataError, match=r"column 'age' has 1 missing value\(s\) \(first at row 3\)"
    ):
        QuerySet.from_frame(df, "sex", "y")
    df = _frame()
    df.loc[2, "sex"] = None
    with pytest.raises(DataError, match="column 'sex'"):
        QuerySet.from_frame(df, "sex", "y")
    # a NaN in a column that is not used does not matter
    df = _frame()
    df.loc[1, "note"] = None
    assert len(QuerySet.from_frame(df, "sex", "y", ["age"])) == 6


def test_single_valued_and_empty_groups() -> None:
    df = _frame().assign(sex="Male")
    with pytest.raises(EmptyGroupError, match="single value 'Male'"):
        QuerySet.from_frame(df, "sex")
    with pytest.raises(EmptyGroupError, match="no rows"):
        QuerySet.from_frame(_frame().iloc[:0], "sex")
    qs = QuerySet.from_frame(_frame(), "sex")
    with pytest.raises(EmptyGroupError, match="Group 'Other' has no query"):
        qs.group_mask("Other")
    with pytest.raises(EmptyGroupError, match="Group 'X'"):
        qs.group_mask("Male", "X")


def test_bad_labels() -> None:
    df = _frame()
    df.loc[4, "y"] = 2
    with pytest.raises(DataError, match="0/1 values; row 4 holds 2"):
        QuerySet.from_frame(df, "sex", "y")
    df = _frame().assign(y=["yes"] * 6)
    with pytest.raises(DataError, match="0/1"):
        QuerySet.from_frame(df, "sex", "y")
    ok = QuerySet.from_frame(_frame().assign(y=[True, False] * 3), "sex", "y")
    assert list(ok.labels) == [1, 0, 1, 0, 1, 0]
    with pytest.raises(DataError, match="cannot be a feature"):
        QuerySet.from_frame(_frame(), "sex", "y", ["age", "y"])


def test_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="does not exist"):
        load_queryset(tmp_path / "nope.csv", "sex")
    (tmp_path / "q.json").write_text("{}")
    with pytest.raises(DataError, match=r"must end in \.csv"):
        load_queryset(tmp_path / "q.json", "sex")
    (tmp_path / "empty.csv").write_text("")
    with pytest.raises(DataError, match="empty"):
        load_queryset(tmp_path / "empty.csv", "sex")
    (tmp_path / "bad.parquet").write_bytes(b"not parquet")
    with pytest.raises(DataError, match="Cannot read"):
        load_queryset(tmp_path / "bad.parquet", "sex")


def test_sample_is_seeded_and_stratified() -> None:
    qs = adult_queryset("test", "audit")
    a = qs.sample(300, seed=5, stratify=True)
    b = qs.sample(300, seed=5, stratify=True)
    pd.testing.assert_frame_equal(a.frame, b.frame)
    share = (qs.groups == "Female").mean()
    assert a.group_counts()["Female"] == round(300 * share)
    assert len(qs.sample(10, seed=1)) == 10
    with pytest.raises(InvalidParameterError, match="'n' parameter"):
        qs.sample(0)


def test_adult_querysets() -> None:
    audit = adult_queryset("test", "audit")
    user = adult_queryset("test", "user", names_seed=2)
    assert "sex" in audit.feature_cols and "first_name" not in audit.feature_cols
    assert "sex" not in user.feature_cols and "first_name" in user.feature_cols
    assert user.group_col == "sex" and user.label_col == "income"
    assert len(audit) == len(user) == 16_281
    with pytest.raises(InvalidParameterError, match="interface"):
        adult_queryset("test", "api")
