"""Weighted rates of ``AuditFrame(sample_weight=...)``: the design-based default, and the
Korn-Graubard and Kish constructions kept by name.

Guarantee measured (not proven; no interval can be for weights of unbounded spread): the
``design`` interval (the union of Korn-Graubard's Clopper-Pearson at a design effective size and
Hall's skewness-corrected t; no interval where a side weighs as fewer than 2 effective
instances) covers >= 0.94 in every cell of ``experiments/stats/weighted_coverage.py`` (4,000
samples each, ``docs/stats.md``). Here four cells with 1,500 samples must reach 0.93, and where
the weights depend on the outcome the constructions kept by name must be seen to fall short, so
the test tells them apart. The formulas are checked against a brute-force inversion on a tiny
sample, and the side rule exactly at its threshold.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from fairprobe import AuditFrame
from fairprobe.errors import DataError
from fairprobe.stats.dropin import (
    MIN_SIDE,
    design_counts,
    design_rates,
    hall_interval,
    linearised_skewness,
    linearised_variance,
)
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


@pytest.mark.parametrize("design, n, p, kept, below", [
    ("outcome", 1000, 0.05, "korn-graubard", 0.93), ("outcome", 200, 0.2, "korn-graubard", 0.935),
    ("outcome", 50, 0.05, "kish-wilson", 0.7), ("lognormal(2)", 200, 0.05, None, 0.0)])
def test_design_interval_covers_where_the_kept_constructions_fail(
        design: str, n: int, p: float, kept: str | None, below: float) -> None:
    cov, _ = _coverage(design, n, p, "design")
    assert cov >= 0.93, cov
    if kept is not None:
        other, _ = _coverage(design, n, p, kept)
        assert other < below, other


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


# a tiny sample: 8 positives (one weighs 6), 16 negatives, both sides above the side floor
_X = np.array([1] * 8 + [0] * 16, dtype=float)
_W = np.array([6.0] + [1 + 0.5 * (i % 5) for i in range(23)])


def _side_sums(x: np.ndarray, w: np.ndarray) -> list[float]:
    return [float((w ** k * s).sum()) for s in (x, 1 - x) for k in (1, 2, 3)]


def test_skewness_and_hall_interval_match_a_brute_force_inversion() -> None:
    from scipy import stats as sps

    x, w, n = _X, _W, len(_X)
    p = float((w * x).sum() / w.sum())
    z = w * (x - p)  # the linearised variable, computed per instance
    g_direct = float(np.mean(z ** 3) / np.mean(z ** 2) ** 1.5)
    s = _side_sums(x, w)
    g = float(linearised_skewness(*s, n))
    assert g == pytest.approx(g_direct, rel=1e-12)
    v = float(linearised_variance(s[0], s[1], s[3], s[4], n))
    assert v == pytest.approx(n / (n - 1) * float((z ** 2).sum()) / w.sum() ** 2, rel=1e-12)
    e = min(s[0] ** 2 / s[1], s[3] ** 2 / s[4])
    lo, hi = hall_interval(p, v, g, n, e - 1.0, 0.95)
    # brute force: every p' on a fine grid whose transformed statistic is within +-t
    t = sps.t.ppf(0.975, e - 1.0)
    grid = np.linspace(0.0, 1.0, 400_001)
    tt = (p - grid) / np.sqrt(v)
    a = g / np.sqrt(n)
    inside = grid[np.abs(tt + a * tt ** 2 / 3 + a * a * tt ** 3 / 27 + a / 6) <= t]
    assert float(lo) == pytest.approx(inside.min(), abs=3e-6)
    assert float(hi) == pytest.approx(inside.max(), abs=3e-6)
    # the design interval is the union with Korn-Graubard's Clopper-Pearson (pinned values)
    d = design_rates(*s, n=n, n1=8, confidence_level=0.95)
    k, ns, thin = design_counts(s[0], s[1], s[3], s[4], n)
    cl, ch = clopper_pearson_interval(k, ns, 0.95)
    assert not d.thin[()] and not thin[()]
    assert float(d.low) == pytest.approx(min(float(cl), float(lo)), abs=1e-12)
    assert float(d.high) == pytest.approx(max(float(ch), float(hi)), abs=1e-12)
    # Korn-Graubard gives the lower end, Hall's correction the upper (the heavy positive)
    assert (float(cl), float(ch)) == (pytest.approx(0.0920869, abs=1e-7),
                                      pytest.approx(0.7275345, abs=1e-7))
    assert (float(lo), float(hi)) == (pytest.approx(0.1157103, abs=1e-7),
                                      pytest.approx(0.8795270, abs=1e-7))
    assert g == pytest.approx(1.4953915, abs=1e-7)
    # the summaries' effective size: its Clopper-Pearson interval contains the union
    el, eh = clopper_pearson_interval(d.k, d.n, 0.95)
    assert float(el) <= float(d.low) + 1e-9 and float(eh) >= float(d.high) - 1e-9
    assert float(d.k / d.n) == pytest.approx(p, rel=1e-12) and float(d.n) <= float(ns) + 1e-12


def test_side_rule_exactly_at_its_threshold() -> None:
    neg = np.array([1.0, 2.0, 3.0, 0.5])
    for pos, thin in ((np.array([1.0, 1.0]), False), (np.array([1.0, 1.001]), True)):
        x = np.concatenate([np.ones(2), np.zeros(4)])
        w = np.concatenate([pos, neg])
        s = _side_sums(x, w)
        d = design_rates(*s, n=6, n1=2)
        assert float(d.side_size) == (pytest.approx(MIN_SIDE, abs=1e-12) if not thin
                                      else pytest.approx(MIN_SIDE, abs=1e-5))
        assert bool(d.thin[()]) is thin
    assert MIN_SIDE == 2.0  # Kish's size 2 is one degree of freedom for the t reference


def test_frame_interval_is_the_design_union_and_thin_groups_are_undetermined() -> None:
    rng = np.random.default_rng(1)
    g = rng.choice(["a", "b"], 600)
    y = rng.random(600) < 0.3
    w = rng.lognormal(0, 1, 600)
    f = AuditFrame(y_pred=y.astype(int), sensitive_features=g, sample_weight=w)
    t = f.to_frame()
    for i, lab in enumerate(f.groups.labels):
        m = g == lab
        xm, wm = y[m].astype(float), w[m]
        d = design_rates(*_side_sums(xm, wm), n=float(m.sum()), n1=float(xm.sum()))
        assert not d.thin[()]
        assert t["selection_rate_n"].iloc[i] == pytest.approx(float(d.n), rel=1e-9)
        assert (t["selection_rate_low"].iloc[i], t["selection_rate_high"].iloc[i]) == (
            pytest.approx(float(d.low), abs=1e-12), pytest.approx(float(d.high), abs=1e-12))
    # group c: outcome-dependent heavy weights, two positives of which one weighs 50 -> its
    # positives weigh as 1.04 effective instances: no interval, the summary is undetermined
    # and says why and how many more such rows would likely decide it
    g2 = np.concatenate([g, ["c"] * 40])
    y2 = np.concatenate([y, [1, 1] + [0] * 38]).astype(int)
    w2 = np.concatenate([w, [50.0, 1.0] + list(rng.lognormal(0, 0.3, 38))])
    s = AuditFrame(y_pred=y2, sensitive_features=g2, sample_weight=w2).summary("dp")
    assert s.verdict == "undetermined" and "c" in s.thin
    assert "no interval for c" in (s.reason or "")
    assert "2 instance(s) counted in its numerator weigh as 1.04 effective" in s.thin["c"]
    assert "about 2 more such instance(s)" in s.thin["c"]
    assert s.to_dict()["thin"] == s.thin
    # the same rows with the two positives' weights equal (Kish's size exactly 2): decided
    w3 = np.concatenate([w, [1.3, 1.3] + list(rng.lognormal(0, 0.3, 38))])
    assert "c" not in AuditFrame(y_pred=y2, sensitive_features=g2, sample_weight=w3
                                 ).summary("dp").thin


def test_frame_of_counts_takes_the_weighted_interval() -> None:
    import pandas as pd

    from fairprobe.scale import CountSpec, count

    rng = np.random.default_rng(5)
    n = 800
    df = pd.DataFrame({"g": rng.choice(["a", "b", "c"], n), "p": rng.integers(0, 2, n),
                       "y": rng.integers(0, 2, n), "w": rng.lognormal(0, 1.2, n)})
    spec = CountSpec(group_cols=("g",), y_pred="p", y_true="y", weight="w")
    counts = count(df, spec, engine="pandas")
    for wi in ("design", "korn-graubard", "kish-wilson"):
        mem = AuditFrame(y_pred=df["p"], y_true=df["y"], sensitive_features=df["g"],
                         sample_weight=df["w"], weighted_interval=wi).to_frame()
        got = AuditFrame.from_counts(counts, weighted_interval=wi).to_frame()
        np.testing.assert_allclose(got.to_numpy(dtype=float), mem.to_numpy(dtype=float),
                                   rtol=1e-9, atol=1e-12)
    with pytest.raises(ValueError, match="weighted_interval"):
        AuditFrame.from_counts(counts, weighted_interval="bogus")
    # weighted counts saved without the sums of cubed weights: one clear error, not a traceback
    doc = counts.to_dict()
    keep = [i for i, c in enumerate(doc["columns"]) if not c.startswith("sc")]
    doc["columns"] = [doc["columns"][i] for i in keep]
    doc["rows"] = [[r[i] for i in keep] for r in doc["rows"]]
    with pytest.raises(DataError, match="cubed weights"):
        type(counts).from_dict(doc)


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
    for wi, gi in (("design", "exact"), ("korn-graubard", "exact"), ("kish-wilson", "wilson")):
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
