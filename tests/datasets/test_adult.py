"""The bundled Adult data: row counts, checksums, cleaning, and reproducible first names."""

from __future__ import annotations

import gzip
import hashlib
from importlib import resources

import numpy as np
import pandas as pd
import pytest

from fairprobe.datasets import adult as adult_mod
from fairprobe.datasets.adult import ADULT_COLUMNS, ADULT_SHA256, load_adult
from fairprobe.datasets.names import FEMALE_NAMES, MALE_NAMES
from fairprobe.errors import DataError, InvalidParameterError


def test_row_counts() -> None:
    assert len(load_adult("train")) == 32_561
    assert len(load_adult("test")) == 16_281
    assert len(load_adult("all")) == 48_842


def test_bundled_files_match_published_sha256() -> None:
    for split, fname in (("train", "adult.data.gz"), ("test", "adult.test.gz")):
        packed = resources.files("fairprobe.datasets").joinpath("data", fname).read_bytes()
        assert hashlib.sha256(gzip.decompress(packed)).hexdigest() == ADULT_SHA256[split]


def test_bundled_files_equal_shared_copy(shared_data) -> None:  # type: ignore[no-untyped-def]
    for fname in ("adult.data.gz", "adult.test.gz"):
        ours = resources.files("fairprobe.datasets").joinpath("data", fname).read_bytes()
        theirs = (shared_data / "adult" / fname).read_bytes()
        assert gzip.decompress(ours) == gzip.decompress(theirs)


def test_attribution_note_is_bundled() -> None:
    text = resources.files("fairprobe.datasets").joinpath("data", "ATTRIBUTION.md").read_text()
    assert "CC BY 4.0" in text and "10.24432/C5XW20" in text and "Kohavi" in text


def test_checksum_mismatch_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    adult_mod._load_split.cache_clear()
    monkeypatch.setitem(adult_mod.ADULT_SHA256, "train", "0" * 64)
    try:
        with pytest.raises(DataError, match="sha256"):
            load_adult("train")
    finally:
        adult_mod._load_split.cache_clear()


def test_cleaning() -> None:
    df = load_adult("test")
    assert list(df.columns[:15]) == list(ADULT_COLUMNS)
    # no value keeps a leading space, '?' is NaN, labels are 0/1 without the test-split period
    for col in ("workclass", "race", "sex", "native-country"):
        vals = df[col].dropna()
        assert not vals.str.startswith(" ").any()
        assert not (vals == "?").any()
    assert set(df["income"].unique()) == {0, 1}
    assert df["income"].dtype == np.int64
    assert df["age"].dtype == np.int64
    # known figures of the UCI test split: 3,846 positives; 963 rows with missing workclass
    assert int(df["income"].sum()) == 3846
    assert int(df["workclass"].isna().sum()) == 963
    first = df.iloc[0]
    assert (first["age"], first["race"], first["sex"], first["income"]) == (25, "Black", "Male", 0)


def test_train_split_known_figures() -> None:
    df = load_adult("train")
    assert int(df["income"].sum()) == 7841
    assert int((df["sex"] == "Female").sum()) == 10_771
    assert int(df["workclass"].isna().sum()) == 1836
    assert len(load_adult("train", dropna=True)) == 30_162


def test_first_names_match_sex_and_are_reproducible() -> None:
    a = load_adult("train", names_seed=7)
    b = load_adult("train", names_seed=7)
    c = load_adult("train", names_seed=8)
    pd.testing.assert_series_equal(a["first_name"], b["first_name"])
    assert (a["first_name"] != c["first_name"]).mean() > 0.9
    fem = a["sex"] == "Female"
    assert a.loc[fem, "first_name"].isin(FEMALE_NAMES).all()
    assert a.loc[~fem, "first_name"].isin(MALE_NAMES).all()
    # every name is used, roughly uniformly (25 names per sex)
    counts = a.loc[~fem, "first_name"].value_counts()
    assert len(counts) == 25
    assert counts.min() > 0.7 * counts.mean()


def test_all_is_train_then_test() -> None:
    both = load_adult("all", names_seed=3)
    tr = load_adult("train", names_seed=3)
    te = load_adult("test", names_seed=3)
    assert list(both["split"].unique()) == ["train", "test"]
    assert (both["first_name"].iloc[: len(tr)].to_numpy() == tr["first_name"].to_numpy()).all()
    assert (both["first_name"].iloc[len(tr) :].to_numpy() == te["first_name"].to_numpy()).all()


def test_names_seed_none_omits_the_column() -> None:
    assert "first_name" not in load_adult("test", names_seed=None).columns


def test_loader_returns_a_copy() -> None:
    df = load_adult("test")
    df.loc[0, "age"] = -1
    assert load_adult("test").loc[0, "age"] == 25


@pytest.mark.parametrize("bad", ["validation", "", None])
def test_bad_split(bad: object) -> None:
    with pytest.raises(InvalidParameterError, match="'split' parameter of load_adult"):
        load_adult(bad)  # type: ignore[arg-type]


def test_bad_names_seed() -> None:
    with pytest.raises(InvalidParameterError, match="names_seed"):
        load_adult("test", names_seed=-1)
