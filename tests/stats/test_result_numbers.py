"""MetricResult behaves like a number where users expect one."""

import numpy as np
import pytest

from fairprobe.stats import compute_metric


@pytest.fixture
def di():
    g = np.array(["F"] * 100 + ["M"] * 100)
    y = np.r_[np.ones(20), np.zeros(80), np.ones(40), np.zeros(60)]
    return compute_metric("disparate_impact_ratio", sensitive_features=g, y_pred=y,
                          group_a="F", group_b="M", method="score")


def test_float_round_and_comparisons(di) -> None:
    assert float(di) == pytest.approx(0.5)
    assert round(di, 2) == 0.5 and round(di) == 0.0
    assert di < 0.8 and di <= 0.5 and di > 0.4 and di >= 0.5 and not di > 0.5
    assert di < np.float64(0.8) and 0.8 > di  # numpy scalars and reflected comparisons
    assert sorted([di, 0.9, 0.1], key=float)[1] is di
    with pytest.raises(TypeError):
        _ = di < "0.8"


def test_short_repr_and_frames(di) -> None:
    r = repr(di)
    assert r.startswith("<MetricResult disparate_impact_ratio F vs M: 0.5 [")
    assert r.endswith("unfair>") and len(r) < 120
    frame = di.to_frame()
    assert frame.shape[0] == 1
    row = frame.iloc[0]
    assert row["estimate"] == pytest.approx(0.5) and row["verdict"] == "unfair"
    assert (row["a"], row["A"], row["b"], row["B"]) == (20, 100, 40, 100)
    assert row["low"] < 0.5 < row["high"]
    assert di.to_dict()["estimate"] == pytest.approx(0.5)
