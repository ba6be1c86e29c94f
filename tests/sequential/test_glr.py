"""Exact values of the GLR statistics, the restricted MLE and the boundaries."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import minimize_scalar
from scipy.special import xlogy

from fairprobe.errors import InvalidParameterError
from fairprobe.sequential.boundaries import wald_boundaries, wald_lower_bound, wald_numerator
from fairprobe.sequential.glr import (
    bernoulli_divergence,
    bernoulli_glr,
    bernoulli_glr_scalar,
    bernoulli_restricted_mle,
    bernoulli_restricted_mle_scalar,
    gaussian_glr,
    gaussian_glr_scalar,
)


def test_wald_boundaries_paper_values() -> None:
    b = wald_boundaries(0.05, 0.2)
    assert b.upper == pytest.approx(math.log(16.0))  # log(0.8 / 0.05)
    assert b.lower == pytest.approx(math.log(0.2 / 0.95))
    assert b.lower == pytest.approx(-1.5581446180465499)


@pytest.mark.parametrize("alpha,beta", [(0.0, 0.2), (0.05, 1.0), (0.6, 0.5), (-0.1, 0.2)])
def test_bad_error_rates(alpha: float, beta: float) -> None:
    with pytest.raises(InvalidParameterError):
        wald_boundaries(alpha, beta)


def _brute_restricted(n1: float, p1: float, n2: float, p2: float, c: float) -> float:
    def nll(x: float) -> float:
        a = min(max(x, 1e-12), 1 - 1e-12)
        b = min(max(x - c, 1e-12), 1 - 1e-12)
        return -float(
            xlogy(n1 * p1, a) + xlogy(n1 * (1 - p1), 1 - a)
            + xlogy(n2 * p2, b) + xlogy(n2 * (1 - p2), 1 - b)
        )  # fmt: skip

    lo, hi = max(0.0, c), min(1.0, 1.0 + c)
    grid = np.linspace(lo, hi, 2001)
    x0 = grid[np.argmin([nll(g) for g in grid])]
    res = minimize_scalar(
        nll, bounds=(max(lo, x0 - 1e-3), min(hi, x0 + 1e-3)), method="bounded",
        options={"xatol": 1e-12},
    )  # fmt: skip
    return float(res.fun)


def test_restricted_mle_matches_brute_force() -> None:
    rng = np.random.default_rng(3)
    for _ in range(60):
        n1, n2 = int(rng.integers(1, 60)), int(rng.integers(1, 60))
        p1, p2 = rng.integers(0, n1 + 1) / n1, rng.integers(0, n2 + 1) / n2
        c = float(rng.choice([0.1, -0.1, 0.05, 0.3, -0.45]))
        t1, t2 = bernoulli_restricted_mle(n1, p1, n2, p2, c)
        assert float(t1) - float(t2) == pytest.approx(c)
        d_ours = float(bernoulli_divergence(n1, p1, n2, p2, c))
        top = -float(xlogy(n1 * p1, p1) + xlogy(n1 * (1 - p1), 1 - p1)
                     + xlogy(n2 * p2, p2) + xlogy(n2 * (1 - p2), 1 - p2))  # fmt: skip
        d_brute = _brute_restricted(n1, p1, n2, p2, c) - top
        # ours is the exact maximum: never worse than the numerical search, at most its slack
        assert d_brute - 1e-5 <= d_ours <= d_brute + 1e-9
        s1, s2 = bernoulli_restricted_mle_scalar(n1, p1, n2, p2, c)
        assert s1 == pytest.approx(float(t1), abs=1e-12)


def test_bernoulli_glr_hand_value() -> None:
    # one query per group, a says 1, b says 0: g_hat = 1 > delta = 0.1; the constrained
    # optimum is p_a = 0.55, p_b = 0.45, so Lambda = -2 log 0.55.
    lam = bernoulli_glr_scalar(1, 1, 1, 0, 0.1)
    assert lam == pytest.approx(-2 * math.log(0.55))
    # both say 0: g_hat = 0 < delta; nearest boundary point p_a = 0.1, p_b = 0: -log(0.9)
    assert bernoulli_glr_scalar(1, 0, 1, 0, 0.1) == pytest.approx(math.log(0.9))
    # a group below min_per_group: no evidence
    assert bernoulli_glr_scalar(0, 0, 5, 3, 0.1) == 0.0
    assert bernoulli_glr_scalar(3, 1, 3, 2, 0.1, min_per_group=4) == 0.0


def test_bernoulli_glr_sign_and_symmetry() -> None:
    # the statistic depends on |g| only: swapping the groups keeps it
    a = bernoulli_glr_scalar(40, 30, 60, 10, 0.1)
    b = bernoulli_glr_scalar(60, 10, 40, 30, 0.1)
    assert a > 0 and a == pytest.approx(b)
    assert bernoulli_glr_scalar(40, 10, 60, 15, 0.1) < 0  # equal rates: compliance evidence


def test_scalar_and_vector_versions_agree() -> None:
    rng = np.random.default_rng(0)
    n1 = rng.integers(0, 80, 400)
    n2 = rng.integers(0, 80, 400)
    x1 = np.array([rng.integers(0, k + 1) for k in n1])
    x2 = np.array([rng.integers(0, k + 1) for k in n2])
    vec = bernoulli_glr(n1, x1, n2, x2, 0.07)
    sca = [bernoulli_glr_scalar(*map(float, t), 0.07) for t in zip(n1, x1, n2, x2, strict=True)]
    np.testing.assert_allclose(vec, sca, rtol=1e-9, atol=1e-9)
    s1, s2 = rng.random(400) * n1, rng.random(400) * n2
    q1, q2 = s1 * 0.8 + 0.1 * n1, s2 * 0.7 + 0.2 * n2
    vec = gaussian_glr(n1, s1, q1, n2, s2, q2, 0.1, 2)
    sca = [
        gaussian_glr_scalar(*map(float, t), 0.1, 2)
        for t in zip(n1, s1, q1, n2, s2, q2, strict=True)
    ]
    np.testing.assert_allclose(vec, sca, rtol=1e-9, atol=1e-12)


def test_gaussian_glr_formula() -> None:
    xa = np.array([0.9, 0.7, 0.8, 0.6])
    xb = np.array([0.2, 0.4, 0.3])
    lam = gaussian_glr_scalar(4, xa.sum(), (xa**2).sum(), 3, xb.sum(), (xb**2).sum(), 0.1, 2)
    var = xa.var() / 4 + xb.var() / 3
    assert lam == pytest.approx((xa.mean() - xb.mean() - 0.1) ** 2 / (2 * var))


def test_wald_bound_numerators() -> None:
    # kl(0.8, 0.05) and kl(0.95, 0.2)
    v = 0.8 * math.log(0.8 / 0.05) + 0.2 * math.log(0.2 / 0.95)
    c = 0.95 * math.log(0.95 / 0.2) + 0.05 * math.log(0.05 / 0.8)
    assert wald_numerator(0.05, 0.2, violation=True) == pytest.approx(v)
    assert wald_numerator(0.05, 0.2, violation=False) == pytest.approx(c)
    assert wald_lower_bound(0.05, 0.2, 0.01, violation=True) == pytest.approx(v / 0.01)
    assert math.isinf(wald_lower_bound(0.05, 0.2, 0.0, violation=True))


def test_information_is_kl_to_the_boundary() -> None:
    # shares 1/2, rates 0.5 and 0.2 (gap 0.3 > 0.1): D equals the KL to the nearest p_a-p_b=0.1
    d = float(bernoulli_divergence(0.5, 0.5, 0.5, 0.2, 0.1))

    def kl(p: float, q: float) -> float:
        return p * math.log(p / q) + (1 - p) * math.log((1 - p) / (1 - q))

    grid = np.linspace(0.1001, 0.9999, 20001)
    best = min(0.5 * kl(0.5, x) + 0.5 * kl(0.2, x - 0.1) for x in grid)
    assert d == pytest.approx(best, rel=1e-6)
