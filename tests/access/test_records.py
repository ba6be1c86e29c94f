"""Record normalisation and the canonical hash (the cache key)."""

from __future__ import annotations

import hashlib
import math

import numpy as np
import pandas as pd
import pytest

from fairprobe.access.records import canonical_json, normalize_records, record_key
from fairprobe.errors import DataError


def test_canonical_json_sorts_keys_compact_utf8() -> None:
    s = canonical_json({"b": 1, "a": "é", "c": [1.5, None]})
    assert s == '{"a":"é","b":1,"c":[1.5,null]}'
    assert record_key(s) == hashlib.sha256(s.encode()).hexdigest()


def test_key_independent_of_field_order_and_numpy_types() -> None:
    recs = [{"a": 1, "b": 2.5}, {"b": np.float64(2.5), "a": np.int64(1)}]
    dicts, canon = normalize_records(recs)
    assert canon[0] == canon[1]
    assert type(dicts[1]["a"]) is int and type(dicts[1]["b"]) is float
    # field order of the sent record is kept
    assert list(dicts[1]) == ["b", "a"]


def test_dataframe_and_list_give_the_same_keys() -> None:
    df = pd.DataFrame({"age": [39, 50], "sex": ["Male", "Female"], "w": [1.25, np.nan]})
    dicts, canon = normalize_records(df)
    _, canon2 = normalize_records(
        [{"age": 39, "sex": "Male", "w": 1.25}, {"age": 50, "sex": "Female", "w": None}]
    )
    assert canon == canon2
    assert dicts[1]["w"] is None  # NaN becomes JSON null


def test_distinct_values_distinct_keys() -> None:
    _, canon = normalize_records([{"a": 1}, {"a": 1.0}, {"a": "1"}, {"a": True}])
    assert len(set(canon)) == 4


@pytest.mark.parametrize(
    "bad, match",
    [
        ([{"a": math.inf}], "finite"),
        ([{"a": object()}], "not JSON-serialisable"),
        ([[1, 2]], "not a mapping"),
        ([{1: "x"}], "non-string field name"),
        ({"a": 1}, "sequence of mappings"),
        ("abc", "sequence of mappings"),
    ],
)
def test_bad_records_raise_one_line_data_error(bad: object, match: str) -> None:
    with pytest.raises(DataError, match=match) as exc:
        normalize_records(bad)  # type: ignore[arg-type]
    assert "\n" not in str(exc.value)


def test_duplicate_dataframe_columns_refused() -> None:
    df = pd.DataFrame([[1, 2]], columns=["a", "a"])
    with pytest.raises(DataError, match="appears twice"):
        normalize_records(df)


def test_empty() -> None:
    assert normalize_records([]) == ([], [])
    assert normalize_records(pd.DataFrame({"a": []})) == ([], [])
