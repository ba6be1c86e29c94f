"""The unconditional exact default: the monotonicity its theorem rests on, one answer by both
paths, exact coverage at small sizes, and narrower than the Clopper-Pearson box."""

from __future__ import annotations

import numpy as np
import pytest

from fairprobe.stats import unconditional as u
from fairprobe.stats.coverage import exact_coverage_two
from fairprobe.stats.exact import box_difference_interval, exact_difference_interval


@pytest.mark.parametrize("kind", ["difference", "ratio"])
@pytest.mark.parametrize(("A", "B"), [(5, 7), (12, 9), (40, 25)])
def test_ordering_bounds_are_monotone_in_each_count(kind, A, B) -> None:
    # the theorem needs T_L, T_U non-decreasing in a and non-increasing in b
    aa, bb = np.meshgrid(np.arange(A + 1.0), np.arange(B + 1.0), indexing="ij")
    tl, tu = u._order_stats(kind, aa.ravel(), np.full(aa.size, float(A)), bb.ravel(),
                            np.full(aa.size, float(B)), 0.95)
    for t in (tl.reshape(aa.shape), tu.reshape(aa.shape)):
        assert (t[1:, :] >= t[:-1, :] - 1e-9).all()  # infinite bounds compare as equal
        assert (t[:, 1:] <= t[:, :-1] + 1e-9).all()


@pytest.mark.parametrize("kind", ["difference", "ratio"])
def test_table_and_row_paths_agree(kind, monkeypatch) -> None:
    A, B = 9, 12
    table = [u._one(kind, a, A, b, B, 0.05) for a in range(A + 1) for b in range(0, B + 1, 3)]
    u._ONES.clear()
    monkeypatch.setattr(u, "_STATS_MAX_CELLS", 0)  # the row-by-row bisection of large sizes
    rows = [u._one(kind, a, A, b, B, 0.05) for a in range(A + 1) for b in range(0, B + 1, 3)]
    u._ONES.clear()
    assert np.allclose(np.asarray(table), np.asarray(rows), equal_nan=True)


def test_exact_coverage_and_width_at_small_sizes() -> None:
    p = np.array([0.0, 0.01, 0.05, 0.2, 0.5, 0.8, 0.95, 0.99, 1.0])
    p1, p2 = (x.ravel() for x in np.meshgrid(p, p, indexing="ij"))
    cov, wid = exact_coverage_two(exact_difference_interval, 8, 11, p1, p2)
    _, wbox = exact_coverage_two(box_difference_interval, 8, 11, p1, p2)
    assert cov.min() >= 0.95
    assert wid.mean() < 0.85 * wbox.mean()
    lo, hi = exact_difference_interval(np.array([0, 8]), 8, np.array([11, 0]), 11)
    assert lo[0] == -1.0 or lo[0] < -0.6  # all-or-nothing outcomes stay defined
    assert hi[1] == 1.0 or hi[1] > 0.6


@pytest.mark.parametrize(("kind", "th"), [("difference", 0.15), ("ratio", 0.8)])
def test_verdicts_are_the_intervals_verdicts(kind, th) -> None:
    """The planner's verdict-only path gives the summary's verdict of the full interval."""
    from fairprobe.stats.finding import decide_array
    from fairprobe.stats.simultaneous import family_intervals

    rng = np.random.default_rng(5)
    A, B, m = 60, 40, 60
    p = rng.uniform(0.05, 0.95, m)
    a = rng.binomial(A, p)
    b = rng.binomial(B, np.clip(p + rng.normal(0, 0.08, m), 0.01, 0.99))
    u._ONES.clear()  # no interval cached: every verdict from its own tests
    v = u.unconditional_verdicts(kind, a, A, b, B, threshold=th)
    k, n = np.stack([a, b], 1), np.stack([np.full(m, A), np.full(m, B)], 1)
    fam = family_intervals(k, n, k[:, ::-1], n[:, ::-1], kind=kind, method="exact")
    _, _, olo, ohi = fam.ordered()
    if kind == "difference":
        lo, hi = np.maximum(0, olo.max(1)), ohi.max(1)
    else:
        lo, hi = np.nanmin(olo, 1), np.minimum(1, np.nanmin(np.nan_to_num(ohi, nan=np.inf), 1))
    want = decide_array(lo, hi, kind=kind, threshold=th)
    assert (v == want).all()
    assert len(set(want.tolist())) >= 2  # the cases are not all alike
    # and from the cache (the intervals just computed) the same verdicts
    assert (u.unconditional_verdicts(kind, a, A, b, B, threshold=th) == want).all()


@pytest.mark.parametrize(("k", "n"), [(18, 18), (0, 18), (7, 30), (1, 5)])
def test_ratio_of_identical_counts_is_its_own_reciprocal(k: int, n: int) -> None:
    # both orientations of a tie are the same data: the interval must equal its reciprocal,
    # else the two-group and every-group forms of one question give different verdicts
    lo, hi = (float(x) for x in u.unconditional_ratio_interval(k, n, k, n, 0.95))
    assert lo <= 1.0 <= hi
    if k == 0:
        assert (lo, hi) == (0.0, np.inf)
    else:
        assert lo == pytest.approx(1.0 / hi, rel=1e-12)
    # the hull contains the untied neighbours' reach: it is never narrower than the interval
    # computed natively in either orientation, so coverage is kept
    nlo, nhi = (float(np.ravel(x)[0]) for x in u._interval(
        "ratio", *(np.array([float(v)]) for v in (k, n, k, n)), 0.95))
    assert lo <= nlo and hi >= nhi


def test_two_group_di_all_selected_agrees_across_paths() -> None:
    # 18 + 18 rows, every decision 1: both pair orientations and the every-group summary agree
    from fairprobe.stats import AuditFrame
    from fairprobe.stats.api import disparate_impact_ratio

    y = np.ones(36, dtype=int)
    g = np.array(["g0"] * 18 + ["g1"] * 18)
    s = AuditFrame(y_pred=y, sensitive_features=g).summary("di")
    ab = disparate_impact_ratio(None, y, sensitive_features=g, group_a="g0", group_b="g1")
    ba = disparate_impact_ratio(None, y, sensitive_features=g, group_a="g1", group_b="g0")
    assert ab.interval == ba.interval
    assert s.low == pytest.approx(ab.interval.low, rel=1e-12)
    assert s.verdict == ab.verdict == ba.verdict
