"""Two groups from any group column, and the errors that say what to fix."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fairprobe.errors import DataError, EmptyGroupError, InvalidParameterError
from fairprobe.stats import REST, select_groups

G = np.array(["F", "M", "X", "F", "M", "M"])


def test_value_vs_value_ignores_others() -> None:
    s = select_groups(G, "F", "M")
    assert s.in_a.tolist() == [True, False, False, True, False, False]
    assert s.in_b.tolist() == [False, True, False, False, True, True]
    assert s.labels == ("F", "M")


def test_value_vs_rest_either_side() -> None:
    s = select_groups(G, "F")
    assert s.in_b.tolist() == [False, True, True, False, True, True]
    assert s.labels == ("F", REST)
    s2 = select_groups(G, group_b="M")  # privileged group vs the rest (two-source paper)
    assert s2.in_a.tolist() == [True, False, True, True, False, False]
    assert s2.labels == (REST, "M")
    assert not (s2.in_a & s2.in_b).any()


def test_both_none_needs_exactly_two_values() -> None:
    s = select_groups(["b", "a", "b"])
    assert s.labels == ("a", "b") and s.in_a.tolist() == [False, True, False]
    s_int = select_groups(np.array([1, 0, 1, 0]))
    assert s_int.labels == ("0", "1")
    with pytest.raises(InvalidParameterError, match="holds 3 values .* name group_a"):
        select_groups(G)


def test_missing_group_names_the_values_present() -> None:
    with pytest.raises(EmptyGroupError, match=r"group_a='W' does not occur .* 'F', 'M', 'X'"):
        select_groups(G, "W")
    with pytest.raises(EmptyGroupError, match="group_b='W'"):
        select_groups(G, "F", "W")


def test_bad_group_columns() -> None:
    with pytest.raises(DataError, match="empty"):
        select_groups(np.array([], dtype=str), "F")
    with pytest.raises(DataError, match=r"single value \('F'\)"):
        select_groups(["F", "F"], "F")
    with pytest.raises(DataError, match="single value"):
        select_groups(["F", "F"])
    with pytest.raises(DataError, match="1 missing value"):
        select_groups(["F", None, "M"], "F")
    with pytest.raises(DataError, match="2 missing value"):
        select_groups(np.array([0.0, np.nan, 1.0, np.nan]), 0.0)
    with pytest.raises(DataError, match="one-dimensional"):
        select_groups(np.zeros((3, 2)), 0.0)
    with pytest.raises(InvalidParameterError, match="same value"):
        select_groups(G, "F", "F")


def test_pandas_inputs() -> None:
    cat = pd.Series(pd.Categorical(["F", "M", "M"]))
    assert select_groups(cat, "F").in_a.tolist() == [True, False, False]
    frame = pd.DataFrame({"sex": ["F", "M", "M"]})
    assert select_groups(frame, group_b="M").labels == (REST, "M")
    with pytest.raises(DataError, match="one column"):
        select_groups(pd.DataFrame({"a": [1, 2], "b": [3, 4]}), 1)
    with pytest.raises(DataError, match="missing value"):
        select_groups(pd.Series(["F", pd.NA, "M"], dtype="string"), "F")


def test_unhashable_group_values() -> None:
    g = np.empty(3, dtype=object)
    g[:] = [[1], [2], [1]]
    with pytest.raises(DataError, match="hashable scalars"):
        select_groups(g, "x")
