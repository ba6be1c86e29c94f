"""Weighted rates of ``AuditFrame(sample_weight=...)``: the design-based default and the Kish
effective-size interval kept by name.

Guarantee measured (not proven): the ``design`` interval (Korn-Graubard's Clopper-Pearson at a
design effective size, no interval where a side weighs as fewer than 5 effective instances)
covers >= 0.94 for heavy-tailed (lognormal 2) and outcome-dependent weights in the cells
``experiments/stats/weighted_coverage.py`` claims (4,000 samples each, ``docs/stats.md``); here
two of them with 1,500 samples must reach 0.93, and Wilson at Kish's size must be seen to fail
with outcome-dependent weights (below 0.7), so the test tells the two apart.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from fairprobe import AuditFrame
from fairprobe.errors import DataError
from fairprobe.stats.dropin import design_counts, linearised_variance
from fairprobe.stats.exact import clopper_pearson_interval
from fairprobe.stats.intervals import wilson_interval

_spec = importlib.util.spec_from_file_location(
    "weighted_coverage",
    Path(__file__).resolve().parents[2] / "experiments" / "stats" / "weighted_coverage.py")
assert _spec is not None and _spec.loader is not None
wc = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(wc)


def _coverage(design: str, n: int, p: float, construction: str, reps: int = 1500
              ) -> tuple[float, float]:
    x, w, target = wc.draw(design, n, p, reps, np.random.default_rng(11))
    lo, hi, dec = wc.intervals(x, w, construction)
    return float(np.mean((lo <= target) & (target <= hi))), float(dec.mean())


@pytest.mark.parametrize("design, n, p", [("outcome", 50, 0.05), ("lognormal(2)", 200, 0.05),
                                          ("outcome", 200, 0.05)])
def test_design_interval_covers_where_kish_wilson_fails(design: str, n: int, p: float) -> None:
    cov, _ = _coverage(design, n, p, "design")
    assert cov >= 0.93, cov
    if design == "outcome":
        kish, _ = _coverage(design, n, p, "kish-wilson")
        assert kish < 0.7, kish


def test_design_interval_decides_with_enough_weight() -> None:
    cov, decided = _coverage("lognormal(1)", 1000, 0.3, "design", reps=400)
    assert decided > 0.99 and cov >= 0.93


def test_linearised_variance_is_samplics_taylor_variance() -> None:
    # samplics 0.6.1: TaylorEstimator(PopParam.mean).estimate(y=x, samp_weight=w).variance on
    # these 50 draws gave 0.007500324851687467 (one instance per PSU, no strata)
    rng = np.random.default_rng(3)
    x = (rng.random(50) < 0.2).astype(float)
    w = rng.lognormal(0, 1, 50)
    v = linearised_variance((w * x).sum(), (w * w * x).sum(), (w * (1 - x)).sum(),
                            (w * w * (1 - x)).sum(), 50)
    assert float(v) == pytest.approx(0.007500324851687467, rel=1e-12)


def test_design_counts_boundaries() -> None:
    # equal weights: the unweighted counts exactly; a side with no instance: thin
    k, ns, thin = design_counts([6.0, 0.0], [12.0, 0.0], [14.0, 20.0], [28.0, 20.0],
                                [10.0, 20.0])
    assert (k.tolist(), ns.tolist(), thin.tolist()) == ([3.0, 0.0], [10.0, 20.0], [False, False])
    k, ns, thin = design_counts([5.0], [25.0], [10.0], [10.1], [11.0])
    assert thin.tolist() == [True]  # one heavy positive: Kish size 1 on that side


def test_frame_interval_is_korn_graubard_and_thin_groups_are_undetermined() -> None:
    rng = np.random.default_rng(1)
    g = rng.choice(["a", "b"], 600)
    y = rng.random(600) < 0.3
    w = rng.lognormal(0, 1, 600)
    f = AuditFrame(y_pred=y.astype(int), sensitive_features=g, sample_weight=w)
    t = f.to_frame()
    for i, lab in enumerate(f.groups.labels):
        m = g == lab
        xm, wm = y[m].astype(float), w[m]
        k, ns, thin = design_counts([(wm * xm).sum()], [(wm * wm * xm).sum()],
                                    [(wm * (1 - xm)).sum()], [(wm * wm * (1 - xm)).sum()],
                                    [float(m.sum())])
        lo, hi = clopper_pearson_interval(k, ns, 0.95)
        assert not thin[0]
        assert t["selection_rate_n"].iloc[i] == pytest.approx(ns[0], abs=1e-9)
        assert (t["selection_rate_low"].iloc[i], t["selection_rate_high"].iloc[i]) == (
            pytest.approx(lo[0], abs=1e-12), pytest.approx(hi[0], abs=1e-12))
    # group c: one positive carrying most of the weight -> no interval, summary undetermined
    g2 = np.concatenate([g, ["c"] * 40])
    y2 = np.concatenate([y, [1] + [0] * 39]).astype(int)
    w2 = np.concatenate([w, [50.0] + [1.0] * 39])
    s = AuditFrame(y_pred=y2, sensitive_features=g2, sample_weight=w2).summary("dp")
    assert s.verdict == "undetermined" and "c" in s.thin
    assert "no interval for c" in (s.reason or "")
    assert s.to_dict()["thin"] == s.thin


def test_frame_kish_wilson_is_kept_by_name() -> None:
    rng = np.random.default_rng(1)
    g = rng.choice(["a", "b"], 300)
    y = rng.random(300) < 0.3
    w = rng.lognormal(0, 1, 300)
    f = AuditFrame(y_pred=y.astype(int), sensitive_features=g, sample_weight=w,
                   weighted_interval="kish-wilson")
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
    with pytest.raises(ValueError, match="weighted_interval"):
        AuditFrame(y_pred=y.astype(int), sensitive_features=g, sample_weight=w,
                   weighted_interval="bogus")


def test_equal_weights_give_the_unweighted_rates_and_intervals() -> None:
    rng = np.random.default_rng(2)
    g, y = rng.choice(["a", "b", "c"], 500), rng.integers(0, 2, 500)
    yt = rng.integers(0, 2, 500)
    for wi, gi in (("design", "exact"), ("kish-wilson", "wilson")):
        a = AuditFrame(y_pred=y, y_true=yt, sensitive_features=g, method="bonferroni",
                       group_interval=gi).to_frame()
        b = AuditFrame(y_pred=y, y_true=yt, sensitive_features=g, weighted_interval=wi,
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
