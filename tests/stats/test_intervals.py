"""Intervals against published values, independent references, boundaries and simulated coverage."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import optimize
from scipy import stats as sps
from scipy.stats.contingency import relative_risk

from fairprobe.stats.intervals import (
    katz_ratio_interval,
    newcombe_interval,
    normal_quantile,
    score_ratio_interval,
    welch_interval,
    wilson_interval,
)


def _f(x: object) -> float:
    return float(np.asarray(x))


def test_normal_quantile() -> None:
    assert normal_quantile(0.95) == pytest.approx(1.959963984540054, abs=1e-12)
    assert normal_quantile(0.99) == pytest.approx(2.5758293035489004, abs=1e-12)


# Newcombe (1998), "Two-sided confidence intervals for the single proportion", Table I,
# method 3 (Wilson score without continuity correction).
@pytest.mark.parametrize(
    ("k", "n", "lo", "hi"),
    [(81, 263, 0.2553, 0.3662), (15, 148, 0.0624, 0.1605), (0, 20, 0.0, 0.1611),
     (1, 29, 0.0061, 0.1718)],
)
def test_wilson_published_values(k: int, n: int, lo: float, hi: float) -> None:
    got = wilson_interval(k, n)
    assert round(_f(got[0]), 4) == lo
    assert round(_f(got[1]), 4) == hi


def test_wilson_matches_scipy_on_a_grid() -> None:
    ks, ns = [], []
    for n in (1, 2, 3, 7, 20, 101):
        for k in range(n + 1):
            ks.append(k)
            ns.append(n)
    for level in (0.8, 0.95, 0.99):
        lo, hi = wilson_interval(np.array(ks), np.array(ns), level)
        for i, (k, n) in enumerate(zip(ks, ns, strict=True)):
            ref = sps.binomtest(k, n).proportion_ci(confidence_level=level, method="wilson")
            assert lo[i] == pytest.approx(ref.low, abs=1e-12)
            assert hi[i] == pytest.approx(ref.high, abs=1e-12)


def test_wilson_boundaries() -> None:
    lo, hi = wilson_interval(np.array([0, 5, 0, 1]), np.array([5, 5, 1, 1]))
    assert lo[0] == 0.0 and hi[1] == 1.0
    assert lo[2] == 0.0 and hi[3] == 1.0
    z2 = normal_quantile(0.95) ** 2
    # k = 0: upper bound is z^2 / (n + z^2) exactly; k = n: lower bound is n / (n + z^2).
    assert hi[0] == pytest.approx(z2 / (5 + z2), rel=1e-12)
    assert lo[1] == pytest.approx(5 / (5 + z2), rel=1e-12)
    assert hi[2] == pytest.approx(z2 / (1 + z2), rel=1e-12)
    assert 0.0 < lo[1] < 1.0 and 0.0 < hi[0] < 1.0


# Newcombe (1998), "Interval estimation for the difference between independent proportions",
# Table II, method 10 (score, no continuity correction), examples (a), (b), (d)-(h).
@pytest.mark.parametrize(
    ("counts", "lo", "hi"),
    [
        ((56, 70, 48, 80), 0.0524, 0.3339),
        ((9, 10, 3, 10), 0.1705, 0.8090),
        ((5, 56, 0, 29), -0.0381, 0.1926),
        ((0, 10, 0, 20), -0.1611, 0.2775),
        ((0, 10, 0, 10), -0.2775, 0.2775),
        ((10, 10, 0, 20), 0.6791, 1.0000),
        ((10, 10, 0, 10), 0.6075, 1.0000),
    ],
)
def test_newcombe_published_values(counts: tuple[int, int, int, int], lo: float,
                                   hi: float) -> None:
    got = newcombe_interval(*counts)
    assert round(_f(got[0]), 4) == lo
    assert round(_f(got[1]), 4) == hi


def test_newcombe_from_independent_wilson() -> None:
    rng = np.random.default_rng(3)
    A = rng.integers(1, 60, 200)
    B = rng.integers(1, 60, 200)
    a = rng.integers(0, A + 1)
    b = rng.integers(0, B + 1)
    lo, hi = newcombe_interval(a, A, b, B, 0.9)
    for i in range(0, 200, 7):
        c1 = sps.binomtest(int(a[i]), int(A[i])).proportion_ci(0.9, method="wilson")
        c2 = sps.binomtest(int(b[i]), int(B[i])).proportion_ci(0.9, method="wilson")
        p1, p2 = a[i] / A[i], b[i] / B[i]
        ref_lo = p1 - p2 - np.hypot(p1 - c1.low, c2.high - p2)
        ref_hi = p1 - p2 + np.hypot(c1.high - p1, p2 - c2.low)
        assert lo[i] == pytest.approx(ref_lo, abs=1e-12)
        assert hi[i] == pytest.approx(ref_hi, abs=1e-12)
    assert np.all(lo <= a / A - b / B) and np.all(a / A - b / B <= hi)
    assert np.all(lo >= -1) and np.all(hi <= 1)


def test_newcombe_single_instance_groups() -> None:
    lo, hi = newcombe_interval(np.array([0, 1, 1]), 1, np.array([0, 0, 1]), 1)
    assert np.all(np.isfinite(lo)) and np.all(np.isfinite(hi))
    assert np.all(lo < hi)
    assert lo[1] > -1.0 and hi[1] == 1.0  # 1/1 vs 0/1: estimate 1, interval reaches 1
    assert lo[0] == pytest.approx(-hi[0])  # 0/1 vs 0/1 is symmetric about 0


def _coverage(interval, p1: float, p2: float, A: int, B: int, truth: float,
              draws: int, seed: int) -> float:
    rng = np.random.default_rng(seed)
    a = rng.binomial(A, p1, draws)
    b = rng.binomial(B, p2, draws)
    lo, hi = interval(a, A, b, B, 0.95)
    return float(np.mean((lo <= truth) & (truth <= hi)))


@pytest.mark.parametrize(
    ("p1", "p2", "A", "B"), [(0.3, 0.5, 40, 60), (0.1, 0.15, 80, 120), (0.7, 0.4, 25, 30)]
)
def test_newcombe_coverage_by_simulation(p1: float, p2: float, A: int, B: int) -> None:
    cov = _coverage(newcombe_interval, p1, p2, A, B, p1 - p2, 4000, seed=11)
    assert 0.93 <= cov <= 0.97, cov


def test_wald_interval_would_fail_the_same_coverage_check() -> None:
    # The check can fail: the naive Wald interval undercovers at small counts.
    def wald(a, A, b, B, level):
        p1, p2 = a / A, b / B
        se = np.sqrt(p1 * (1 - p1) / A + p2 * (1 - p2) / B)
        z = normal_quantile(level)
        return p1 - p2 - z * se, p1 - p2 + z * se

    cov = _coverage(wald, 0.05, 0.1, 20, 20, -0.05, 4000, seed=11)
    assert cov < 0.93


# --- ratio -------------------------------------------------------------------------------------

def test_score_ratio_koopman_example() -> None:
    # Koopman (1984), Biometrics 40: 36/40 vs 16/80, ratio 4.5, score interval (2.94, 7.15).
    lo, hi = score_ratio_interval(36, 40, 16, 80)
    assert round(_f(lo), 2) == 2.94
    assert round(_f(hi), 2) == 7.15


def _koopman_chi2(theta: float, x1: int, n1: int, x2: int, n2: int) -> float:
    """Score chi-square of p1 = theta * p2 with the constrained MLE found numerically.

    Independent of the closed form in the library: the nuisance p2 maximises the binomial
    likelihood by bounded scalar search; the statistic is the squared score z of
    Farrington-Manning form, which equals Koopman's chi-square when the MLE is interior and
    stays defined when it sits on the boundary p1 = 1.
    """

    def negloglik(p2: float) -> float:
        p1 = theta * p2
        eps = 1e-300
        return -(x1 * np.log(p1 + eps) + (n1 - x1) * np.log(1 - p1 + eps)
                 + x2 * np.log(p2 + eps) + (n2 - x2) * np.log(1 - p2 + eps))

    upper = min(1.0, 1.0 / theta)
    res = optimize.minimize_scalar(negloglik, bounds=(1e-12, upper), method="bounded",
                                   options={"xatol": 1e-13})
    p2 = float(res.x)
    p1 = theta * p2
    var = p1 * (1 - p1) / n1 + theta**2 * p2 * (1 - p2) / n2
    return float((x1 / n1 - theta * x2 / n2) ** 2 / var)


def test_score_chi2_equals_koopmans_form_when_interior() -> None:
    # Koopman's own expression of the statistic, at an interior constrained MLE.
    x1, n1, x2, n2, theta = 36, 40, 16, 80, 3.0
    res = optimize.minimize_scalar(
        lambda p: -(x1 * np.log(theta * p) + (n1 - x1) * np.log(1 - theta * p)
                    + x2 * np.log(p) + (n2 - x2) * np.log(1 - p)),
        bounds=(1e-9, 1 / theta - 1e-9), method="bounded", options={"xatol": 1e-13})
    p1 = theta * res.x
    koopman = (x1 - n1 * p1) ** 2 / (n1 * p1 * (1 - p1)) * (1 + n1 * (theta - p1)
                                                            / (n2 * (1 - p1)))
    assert _koopman_chi2(theta, x1, n1, x2, n2) == pytest.approx(koopman, rel=1e-6)


@pytest.mark.parametrize(
    "counts", [(36, 40, 16, 80), (3, 17, 9, 12), (1, 50, 7, 50), (12, 12, 5, 9), (2, 5, 4, 4)]
)
def test_score_ratio_bounds_solve_koopmans_equation(counts: tuple[int, int, int, int]) -> None:
    x1, n1, x2, n2 = counts
    lo, hi = (_f(v) for v in score_ratio_interval(*counts))
    crit = normal_quantile(0.95) ** 2
    for bound in (lo, hi):
        assert _koopman_chi2(bound, x1, n1, x2, n2) == pytest.approx(crit, rel=1e-5)
    est = (x1 / n1) / (x2 / n2)
    assert lo < est < hi
    assert _koopman_chi2(lo * 0.99, x1, n1, x2, n2) > crit
    assert _koopman_chi2(hi * 1.01, x1, n1, x2, n2) > crit


def test_score_ratio_zero_counts() -> None:
    lo, hi = score_ratio_interval(np.array([0, 4, 0, 10]), 10, np.array([4, 0, 0, 10]), 10)
    assert lo[0] == 0.0 and np.isfinite(hi[0]) and hi[0] > 0
    assert hi[1] == np.inf and np.isfinite(lo[1]) and lo[1] > 0
    assert lo[2] == 0.0 and hi[2] == np.inf
    assert lo[3] < 1.0 < hi[3]
    # 0/10 vs 4/10: the upper bound still solves the score equation.
    assert _koopman_chi2(_f(hi[0]), 0, 10, 4, 10) == pytest.approx(
        normal_quantile(0.95) ** 2, rel=1e-5)


def test_score_ratio_coverage_by_simulation() -> None:
    cov = _coverage(score_ratio_interval, 0.3, 0.5, 50, 50, 0.6, 3000, seed=5)
    assert 0.93 <= cov <= 0.97, cov


def test_katz_matches_scipy_relative_risk_without_zeros() -> None:
    for counts in [(36, 40, 16, 80), (3, 17, 9, 12), (11, 12, 5, 9)]:
        lo, hi = katz_ratio_interval(*counts, confidence_level=0.9)
        ref = relative_risk(*counts).confidence_interval(confidence_level=0.9)
        assert _f(lo) == pytest.approx(ref.low, rel=1e-12)
        assert _f(hi) == pytest.approx(ref.high, rel=1e-12)


def test_katz_continuity_correction_at_zero() -> None:
    lo, hi = katz_ratio_interval(0, 10, 4, 10)
    # 0.5 added to each cell: a=0.5, A=11, b=4.5, B=11.
    log_t = np.log((0.5 / 11) / (4.5 / 11))
    se = np.sqrt(1 / 0.5 - 1 / 11 + 1 / 4.5 - 1 / 11)
    z = normal_quantile(0.95)
    assert _f(lo) == pytest.approx(np.exp(log_t - z * se), rel=1e-12)
    assert _f(hi) == pytest.approx(np.exp(log_t + z * se), rel=1e-12)
    assert 0 < _f(lo) < _f(hi) < np.inf


@pytest.mark.parametrize("counts", [(10, 10, 10, 10), (10, 10, 190, 200), (3, 10, 20, 20)])
def test_katz_correction_for_any_empty_cell(counts) -> None:
    # an all-positive group must not skip the correction; (10,10,10,10) gave
    # the point interval [1, 1] (zero variance), called "fair" at any sample size.
    a, A, b, B = counts
    lo, hi = katz_ratio_interval(*counts)
    c = 0.5
    log_t = np.log((a + c) / (A + 2 * c)) - np.log((b + c) / (B + 2 * c))
    se = np.sqrt(1 / (a + c) - 1 / (A + 2 * c) + 1 / (b + c) - 1 / (B + 2 * c))
    z = normal_quantile(0.95)
    assert _f(lo) == pytest.approx(np.exp(log_t - z * se), rel=1e-12)
    assert _f(hi) == pytest.approx(np.exp(log_t + z * se), rel=1e-12)
    assert _f(hi) - _f(lo) > 0.1


def test_katz_exact_coverage_with_all_positive_groups() -> None:
    # exact coverage at rates (.99, .995), sizes 10/200: 0.096 without the correction
    from fairprobe.stats.coverage import exact_coverage_two

    cov, _ = exact_coverage_two(katz_ratio_interval, 10, 200, np.array([0.99]),
                                np.array([0.995]), kind="ratio")
    assert cov[0] >= 0.95, cov


# --- Welch -------------------------------------------------------------------------------------

def test_welch_matches_scipy_ttest() -> None:
    rng = np.random.default_rng(2)
    x = rng.normal(0.3, 1.0, 17)
    y = rng.normal(0.0, 2.5, 40)
    ref = sps.ttest_ind(x, y, equal_var=False).confidence_interval(confidence_level=0.9)
    lo, hi = welch_interval(x.mean(), x.var(ddof=1), x.size, y.mean(), y.var(ddof=1), y.size, 0.9)
    assert _f(lo) == pytest.approx(ref.low, rel=1e-10)
    assert _f(hi) == pytest.approx(ref.high, rel=1e-10)


def test_welch_zero_variance_is_a_point() -> None:
    lo, hi = welch_interval(1.0, 0.0, 5, 0.25, 0.0, 7)
    assert _f(lo) == _f(hi) == 0.75


def test_score_ratio_scalar_and_vector_paths_agree() -> None:
    rng = np.random.default_rng(1)
    A = rng.integers(1, 300, 400)
    B = rng.integers(1, 300, 400)
    a = rng.integers(0, A + 1)
    b = rng.integers(0, B + 1)
    a[:20] = 0
    b[20:40] = 0
    a[40:60] = A[40:60]
    b[60:80] = B[60:80]
    A[80:90] = 1
    a[80:90] = rng.integers(0, 2, 10)
    lo, hi = score_ratio_interval(a, A, b, B)
    for i in range(400):
        sl, sh = score_ratio_interval(int(a[i]), int(A[i]), int(b[i]), int(B[i]))
        assert _f(sl) == pytest.approx(lo[i], rel=1e-9, abs=1e-300)
        assert _f(sh) == pytest.approx(hi[i], rel=1e-9)
    assert np.all(lo[:20] == 0.0) and np.all(np.isinf(hi[20:40]))
    # Extreme imbalance: the constrained MLE stays accurate at very large ratios.
    lo1, hi1 = score_ratio_interval(88, 91, 0, 3)
    assert _koopman_chi2(_f(lo1), 88, 91, 0, 3) == pytest.approx(
        normal_quantile(0.95) ** 2, rel=1e-5)
    assert hi1 == np.inf
