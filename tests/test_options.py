"""The shared options objects check every value once, with the error naming the option."""

from __future__ import annotations

import pytest

from fairprobe.errors import InvalidParameterError
from fairprobe.options import AccessOptions, AuditQuestion


def test_a_question_keeps_its_values_and_freezes() -> None:
    q = AuditQuestion(metrics="dp", tolerance=0.1, reference="a")
    assert q.metrics == ("dp",)
    assert (q.tolerance, q.threshold, q.confidence_level, q.min_group_size) == (0.1, None, 0.95, 1)
    with pytest.raises(AttributeError):
        q.tolerance = 0.2  # type: ignore[misc]


@pytest.mark.parametrize(
    ("field", "value"),
    [("confidence_level", 1.0), ("confidence_level", 0.0), ("tolerance", -0.01),
     ("threshold", 0.0), ("threshold", 1.5), ("min_group_size", 0), ("min_group_size", 2.5)],
)  # fmt: skip
def test_a_bad_value_names_the_option_and_the_function(field: str, value: float) -> None:
    with pytest.raises(InvalidParameterError, match=f"'{field}' parameter of run_audit"):
        AuditQuestion(**{field: value}, owner="run_audit")


def test_boundary_values_are_accepted() -> None:
    q = AuditQuestion(tolerance=0.0, threshold=1.0, min_group_size=1)
    assert (q.tolerance, q.threshold) == (0.0, 1.0)


def test_access_rejects_a_negative_seed_naming_the_flag() -> None:
    with pytest.raises(InvalidParameterError, match="--seed"):
        AccessOptions(seed=-1)
