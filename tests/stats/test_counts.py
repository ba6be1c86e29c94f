import numpy as np
import pytest

from fairprobe.errors import DataError, EmptyGroupError
from fairprobe.stats import CountsVector, counts_from_decisions


def test_dp_and_arithmetic() -> None:
    c = CountsVector(3, 10, 1, 4)
    assert c.dp() == pytest.approx(0.3 - 0.25)
    assert (c + c).as_tuple() == (6, 20, 2, 8)
    assert (c - c) == CountsVector.zero()
    assert CountsVector.from_array(c.as_array()) == c


def test_invalid_counts_raise() -> None:
    with pytest.raises(DataError, match="cannot exceed"):
        CountsVector(5, 4, 0, 1)
    with pytest.raises(DataError, match="non-negative"):
        CountsVector(-1, 4, 0, 1)


def test_empty_group() -> None:
    with pytest.raises(EmptyGroupError):
        CountsVector(0, 0, 1, 2).dp()
    assert CountsVector(0, 0, 1, 2).dp(default=0.0) == 0.0


def test_counts_from_decisions() -> None:
    d = np.array([1, 0, 1, 1, 0])
    g = np.array([True, True, False, False, False])
    assert counts_from_decisions(d, g).as_tuple() == (1, 2, 2, 3)
    with pytest.raises(DataError, match="NaN"):
        counts_from_decisions(np.array([np.nan, 1.0]), np.array([True, False]))
