"""The first-name lists of Appendix D and the last-letter rule of Section 5.1."""

from __future__ import annotations

import numpy as np
import pytest

from fairprobe.datasets.names import (
    FEMALE,
    FEMALE_NAMES,
    MALE,
    MALE_NAMES,
    female_probability,
    hash_uniform,
    infer_sex,
    infer_sex_many,
    sex_of_name,
)
from fairprobe.errors import DataError


def test_lists_are_appendix_d() -> None:
    assert len(FEMALE_NAMES) == len(set(FEMALE_NAMES)) == 25
    assert len(MALE_NAMES) == len(set(MALE_NAMES)) == 25
    assert FEMALE_NAMES[:3] == ("Ashley", "Jessica", "Amanda")
    assert FEMALE_NAMES[-1] == "Michelle"
    assert MALE_NAMES[:3] == ("Michael", "Matthew", "Christopher")
    assert MALE_NAMES[-1] == "Timothy"


@pytest.mark.parametrize(
    ("name", "p"),
    [
        ("Jessica", 1.0), ("Nicole", 1.0), ("Joshua", 1.0), ("Kyle", 1.0), ("Naomi", 1.0),
        ("Sarah", 0.5), ("Ashley", 0.5), ("Noah", 0.5), ("Timothy", 0.5), ("Joseph", 0.5),
        ("Lauren", 0.0), ("Rachel", 0.0), ("Michael", 0.0), ("John", 0.0), ("Eric", 0.0),
        ("JESSICA", 1.0), (" noah ", 0.5), ("Anna-Marie", 1.0), ("Zoe.", 1.0),
    ],
)  # fmt: skip
def test_rule(name: str, p: float) -> None:
    assert female_probability(name) == p


def test_rule_accuracy_on_the_lists() -> None:
    """Expected accuracy of the rule per list: 16/25 female, 21/25 male (module docstring)."""
    f = sum(female_probability(n) for n in FEMALE_NAMES)
    m = sum(1 - female_probability(n) for n in MALE_NAMES)
    assert (f, m) == (16.0, 21.0)


@pytest.mark.parametrize("bad", ["", "  ", "123", None, 5])
def test_bad_names(bad: object) -> None:
    with pytest.raises(DataError):
        female_probability(bad)  # type: ignore[arg-type]


def test_sex_of_name() -> None:
    assert sex_of_name("Kyle") == MALE
    assert sex_of_name("Lauren") == FEMALE
    with pytest.raises(DataError, match="neither name list"):
        sex_of_name("Noah")


def test_infer_sex_threshold() -> None:
    assert infer_sex("Jessica", 0.999) == FEMALE
    assert infer_sex("Michael", 0.0) == MALE
    assert infer_sex("Noah", 0.4999) == FEMALE
    assert infer_sex("Noah", 0.5) == MALE


def test_hash_uniform_is_deterministic_and_uniform() -> None:
    assert hash_uniform("k", 1, "p") == hash_uniform("k", 1, "p")
    assert hash_uniform("k", 1, "p") != hash_uniform("k", 2, "p")
    assert hash_uniform("k", 1, "p") != hash_uniform("k", 1, "q")
    u = np.array([hash_uniform(str(i), 0, "t") for i in range(20_000)])
    assert ((u >= 0) & (u < 1)).all()
    # Kolmogorov-Smirnov distance to U(0,1) well inside the 0.1% critical value (1.95/sqrt(n))
    us = np.sort(u)
    d = np.max(np.abs(us - np.arange(1, u.size + 1) / u.size))
    assert d < 1.95 / np.sqrt(u.size)


def test_infer_sex_many() -> None:
    out = infer_sex_many(["Jessica", "Noah", "Noah", "Eric"], [0.9, 0.1, 0.9, 0.0])
    assert list(out) == [FEMALE, FEMALE, MALE, MALE]
    with pytest.raises(DataError):
        infer_sex_many(["Jessica"], [0.1, 0.2])
