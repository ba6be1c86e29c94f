"""Weighted rates of ``AuditFrame(sample_weight=...)``: the Kish effective-size interval.

Guarantee measured (not proven): the Wilson interval at Kish's effective size covers a weighted
rate at about its level for lognormal weights (sigma 0.5 and 1.0), groups of 50 and 200, rates
0.05 to 0.5 -- 0.9425 to 0.9607 at 95% over 4,000 seeded samples each
(``experiments/stats/weighted_coverage.py``); here three of those settings with 2,000 samples must
reach 0.93 (3.5 standard errors below 0.95), and the naive interval at the raw count must be seen
to fail (below 0.87 at sigma 1), so the test can tell the two apart.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from fairprobe import AuditFrame
from fairprobe.errors import DataError
from fairprobe.stats.intervals import wilson_interval

_spec = importlib.util.spec_from_file_location(
    "weighted_coverage",
    Path(__file__).resolve().parents[2] / "experiments" / "stats" / "weighted_coverage.py")
assert _spec is not None and _spec.loader is not None
wc = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(wc)


@pytest.mark.parametrize("n, p, sigma", [(50, 0.1, 1.0), (200, 0.5, 1.0), (50, 0.05, 0.5)])
def test_kish_interval_covers_and_the_raw_count_does_not(n: int, p: float, sigma: float) -> None:
    kish, raw = wc.coverage(n, p, sigma, reps=2000, seed=7)
    assert kish >= 0.93, kish
    if sigma == 1.0:
        assert raw < 0.87, raw


def test_frame_interval_is_the_kish_wilson_interval() -> None:
    rng = np.random.default_rng(1)
    g = rng.choice(["a", "b"], 300)
    y = rng.random(300) < 0.3
    w = rng.lognormal(0, 1, 300)
    f = AuditFrame(y_pred=y.astype(int), sensitive_features=g, sample_weight=w)
    t = f.to_frame()
    for i, lab in enumerate(f.groups.labels):
        m = g == lab
        pw = float((w[m] * y[m]).sum() / w[m].sum())
        neff = float(w[m].sum() ** 2 / (w[m] ** 2).sum())
        lo, hi = wilson_interval(np.array([pw * neff]), np.array([neff]), 0.95)
        assert t["selection_rate"].iloc[i] == pytest.approx(pw, abs=1e-12)
        assert t["selection_rate_n"].iloc[i] == pytest.approx(neff, abs=1e-9)
        assert (t["selection_rate_low"].iloc[i], t["selection_rate_high"].iloc[i]) == (
            pytest.approx(lo[0], abs=1e-12), pytest.approx(hi[0], abs=1e-12))


def test_equal_weights_give_the_unweighted_rates_and_intervals() -> None:
    rng = np.random.default_rng(2)
    g, y = rng.choice(["a", "b", "c"], 500), rng.integers(0, 2, 500)
    yt = rng.integers(0, 2, 500)
    a = AuditFrame(y_pred=y, y_true=yt, sensitive_features=g, method="bonferroni").to_frame()
    b = AuditFrame(y_pred=y, y_true=yt, sensitive_features=g,
                   sample_weight=np.full(500, 2.5)).to_frame()
    np.testing.assert_allclose(b.to_numpy(dtype=float), a.to_numpy(dtype=float), atol=1e-9)


def test_bad_weights_and_exact_method_are_refused() -> None:
    g, y = ["a", "b"] * 20, [0, 1] * 20
    with pytest.raises(DataError, match="method='bonferroni'"):
        AuditFrame(y_pred=y, sensitive_features=g, sample_weight=[1.0] * 40, method="exact")
    with pytest.raises(DataError, match="finite weights"):
        AuditFrame(y_pred=y, sensitive_features=g, sample_weight=[-1.0] * 40)
    with pytest.raises(DataError, match="39 entries but sensitive_features has 40"):
        AuditFrame(y_pred=y, sensitive_features=g, sample_weight=[1.0] * 39)
