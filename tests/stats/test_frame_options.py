"""AuditFrame takes its options as one object or as flat keywords, with the same frame."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fairprobe import AuditFrame
from fairprobe.errors import DataError, InvalidParameterError
from fairprobe.stats.frame_options import FrameOptions


def _data(n: int = 400, seed: int = 3) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    g = rng.choice(["a", "b", "c"], n)
    y = rng.integers(0, 2, n)
    p = (rng.random(n) < np.where(g == "a", 0.6, 0.4)).astype(int)
    return {"y_pred": p, "y_true": y, "sensitive_features": g}


@pytest.mark.parametrize(
    "flat",
    [
        {"min_group_size": 20, "reference": "b", "tolerance": 0.1, "threshold": 0.7},
        {"method": "bonferroni", "confidence_level": 0.9, "group_interval": "exact"},
        {"max_listed_pairs": 1, "zero_division": 1.0},
    ],
)
def test_the_object_and_the_flat_keywords_give_the_same_frame(flat: dict) -> None:
    d = _data()
    a = AuditFrame(**d, **flat)
    b = AuditFrame(**d, options=FrameOptions(**flat))
    assert a.to_dict(["dp", "eo"]) == b.to_dict(["dp", "eo"])
    pd.testing.assert_frame_equal(a.to_frame(), b.to_frame())


def test_flat_keywords_set_fields_of_the_object_and_random_state_is_the_seed() -> None:
    d = _data()
    a = AuditFrame(**d, options=FrameOptions(tolerance=0.3), tolerance=0.01)
    assert a.tolerance == 0.01
    boot = {"metrics": {"sel": lambda yt, yp: float(np.mean(yp))}, "n_boot": 20,
            "ci_quantiles": [0.1, 0.9]}  # fmt: skip
    b = AuditFrame(**d, **boot, random_state=7)
    c = AuditFrame(**d, **boot, options=FrameOptions(seed=7), random_state=None)
    pd.testing.assert_frame_equal(b.by_group_ci[0], c.by_group_ci[0])


def test_an_unknown_keyword_is_a_type_error() -> None:
    with pytest.raises(TypeError, match=r"AuditFrame.__init__\(\) got an unexpected keyword "):
        AuditFrame(**_data(), tolerence=0.1)


@pytest.mark.parametrize(
    ("field", "value", "err", "match"),
    [
        ("confidence_level", 1.0, InvalidParameterError, "'confidence_level' parameter of AuditFrame"),
        ("threshold", 0.0, InvalidParameterError, "'threshold' parameter of AuditFrame"),
        ("method", "holm", InvalidParameterError, "'method' parameter of AuditFrame"),
        ("zero_division", 0.5, DataError, "zero_division must be 'warn', 0.0, 1.0 or nan"),
    ],
)  # fmt: skip
def test_a_bad_value_gives_the_frames_message(field, value, err, match) -> None:
    with pytest.raises(err, match=match):
        FrameOptions(**{field: value})
    with pytest.raises(err, match=match):
        AuditFrame(**_data(), **{field: value})
