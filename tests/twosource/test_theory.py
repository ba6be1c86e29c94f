"""Section 4 of two-source-audits.md: pinned values and exact computations."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from fairprobe.errors import InvalidParameterError
from fairprobe.twosource import theory as th


def test_worked_example_section_4_2() -> None:
    # p_gender = 0.91, 100 checks, alpha = 5% -> n_max = 14; gamma = 10% -> p_manip = 76%.
    assert th.n_max(100, 0.91, 0.05) == 14
    pm = float(th.p_manip(100, 0.91, 0.10, 0.05))
    assert round(pm, 2) == 0.76
    assert pm == pytest.approx(0.758324, abs=1e-6)
    test = th.detection_test(100, 0.91, 0.05, gamma=0.10)
    assert test.n_max == 14 and test.p_manip == pytest.approx(pm)
    assert test.size <= 0.05


@pytest.mark.parametrize("t", [1, 5, 20, 100, 333])
@pytest.mark.parametrize("p", [0.5, 0.77, 0.91, 0.99])
@pytest.mark.parametrize("alpha", [0.01, 0.05, 0.2])
def test_n_max_is_the_smallest_valid_threshold(t: int, p: float, alpha: float) -> None:
    n = th.n_max(t, p, alpha)
    assert sps.binom.sf(n, t, 1 - p) <= alpha + 1e-12  # size at most alpha
    if n > 0:  # one less would exceed alpha
        assert sps.binom.sf(n - 1, t, 1 - p) > alpha


def test_n_max_boundaries() -> None:
    assert th.n_max(0, 0.9) == 0
    assert th.n_max(50, 1.0) == 0  # perfect proxy: any inconsistency is proof
    assert th.n_max(50, 0.0) == 50  # always wrong proxy: never conclude


def test_inconsistency_probability_formula() -> None:
    assert float(th.inconsistency_probability(0.91, 0.1)) == pytest.approx(0.172)
    assert float(th.inconsistency_probability(0.91, 0.0)) == pytest.approx(0.09)
    assert float(th.inconsistency_probability(0.91, 1.0)) == pytest.approx(0.91)
    # a random proxy (p = 1/2) cannot see manipulation at all
    assert np.allclose(th.inconsistency_probability(0.5, [0, 0.3, 1]), 0.5)


def test_p_manip_at_zero_is_the_exact_size_and_grows_with_gamma() -> None:
    size = th.detection_test(100, 0.91).size
    assert float(th.p_manip(100, 0.91, 0.0)) == pytest.approx(size)
    g = np.linspace(0, 1, 21)
    pm = th.p_manip(100, 0.91, g)
    assert np.all(np.diff(pm) >= -1e-12)
    # vectorised over t and gamma: same as scalar calls
    tt = np.array([50, 100, 200, 500])
    grid = th.p_manip(tt[:, None], 0.91, g[None, :])
    assert grid.shape == (4, 21)
    assert grid[2, 4] == pytest.approx(float(th.p_manip(200, 0.91, g[4])))
    # more checks, more power at a fixed gamma
    assert np.all(np.diff(grid[:, 6]) > 0)


def test_p_value() -> None:
    assert th.consistency_p_value(0, 100, 0.91) == 1.0
    assert th.consistency_p_value(15, 100, 0.91) == pytest.approx(sps.binom.sf(14, 100, 0.09))
    assert th.consistency_p_value(15, 100, 0.91) <= 0.05 < th.consistency_p_value(14, 100, 0.91)
    with pytest.raises(InvalidParameterError, match="n_inconsistent"):
        th.consistency_p_value(101, 100, 0.91)


def test_margin_and_sigma() -> None:
    assert th.z_quantile(0.05) == pytest.approx(1.959964, abs=1e-6)
    s = th.di_sigma(0.2, 0.4, 0.5)
    mu = 0.5
    assert s == pytest.approx(mu * math.sqrt(0.8 / 0.1 + 0.6 / 0.2))
    eps = th.margin_of_error(s, [100, 400])
    assert eps[0] == pytest.approx(2 * eps[1])
    # delta-method sigma agrees with simulation
    rng = np.random.default_rng(0)
    n, reps = 2000, 4000
    groups = rng.random((reps, n)) < 0.5
    y = np.where(groups, rng.random((reps, n)) < 0.2, rng.random((reps, n)) < 0.4)
    di = (y & groups).sum(1) / groups.sum(1) / ((y & ~groups).sum(1) / (~groups).sum(1))
    assert np.std(di) * math.sqrt(n) == pytest.approx(s, rel=0.05)


def test_fairwashed_di_matches_appendix_a() -> None:
    ru, rp, g = 0.12, 0.30, 0.1
    mu_b = ru / rp
    assert float(th.fairwashed_di(ru, rp, g, "positive")) == pytest.approx(mu_b * (1 - g) + g / rp)
    assert float(th.fairwashed_di(ru, rp, g, "negative")) == pytest.approx(mu_b / (1 - g))
    assert float(th.fairwashed_di(ru, rp, g, "none")) == pytest.approx(mu_b)
    mixed = float(th.fairwashed_di(ru, rp, g, "mixed", mix=0.25))
    assert mixed == pytest.approx((ru + 0.025 * (1 - ru)) / (rp * (1 - 0.075)))


@pytest.mark.parametrize("strategy", ["positive", "negative", "mixed"])
@pytest.mark.parametrize("eps", [0.0, 0.05])
def test_gamma_max_solves_the_lemma_1_condition(strategy: str, eps: float) -> None:
    ru, rp = 0.12, 0.30
    g = th.gamma_max(ru, rp, eps, 0.8, strategy, mix=0.3)
    assert 0 < g < 1
    assert float(th.fairwashed_di(ru, rp, g, strategy, 0.3)) + eps == pytest.approx(0.8)
    assert float(th.fairwashed_di(ru, rp, 0.9 * g, strategy, 0.3)) + eps < 0.8


def test_gamma_max_closed_form_and_edges() -> None:
    ru, rp, eps = 0.12, 0.30, 0.02
    mu_b = ru / rp
    assert th.gamma_max(ru, rp, eps) == pytest.approx((0.8 - mu_b - eps) / (1 / rp - mu_b))
    # the printed Eq. (2) would be negative: eps / (th - 1/Y_B) < 0
    assert eps / (0.8 - 1 / rp) < 0
    assert th.gamma_max(0.3, 0.3) == 0.0  # already fair
    assert th.gamma_max(0.0, 1.0, strategy="positive") == pytest.approx(0.8)  # mu_A = gamma
    assert th.gamma_max(0.0, 0.5, strategy="negative") == math.inf  # 0 / anything stays 0
    assert th.gamma_max(0.1, 0.5, strategy="none") == math.inf


def test_flip_fraction() -> None:
    f = float(th.flip_fraction(0.1, 0.1, 0.3, 0.33, "positive"))
    assert f == pytest.approx(0.1 * 0.33 * 0.9)
    f = float(th.flip_fraction(0.1, 0.1, 0.3, 0.33, "negative"))
    assert f == pytest.approx(0.1 * 0.67 * 0.3)
    f = float(th.flip_fraction(0.1, 0.1, 0.3, 0.33, "mixed", mix=0.5))
    assert f == pytest.approx(0.05 * 0.33 * 0.9 + 0.05 * 0.67 * 0.3)


def test_allocate_respects_section_3_2_constraints() -> None:
    for t in (2, 7, 100, 1500):
        for beta in np.linspace(0, 1, 11):
            a = th.allocate(t, float(beta))
            assert 0 <= a.t_fraud <= a.t_fair
            assert a.t_fair + a.t_fraud <= t
    a = th.allocate(100, 0.76)
    assert (a.t_fair, a.t_fraud) == (88, 12) and a.beta == pytest.approx(0.76)
    assert th.allocate(100, 1.0).t_fraud == 0


def test_theorem3_combines_lemmas() -> None:
    a = th.allocate(1000, 0.5)
    r = th.theorem3(a, 0.91, 0.12, 0.30, 0.33)
    eps = float(th.margin_of_error(th.di_sigma(0.12, 0.30, 0.33), a.t_fair))
    assert r.epsilon_a == pytest.approx(eps)
    assert r.gamma_min == pytest.approx(th.gamma_max(0.12, 0.30, eps))
    assert r.p_manip == pytest.approx(float(th.p_manip(a.t_fraud, 0.91, r.gamma_checked)))
    assert r.succeeds == (1 - r.p_manip <= 0.05)
    assert set(r.to_dict()) >= {"t_fair", "t_fraud", "epsilon_a", "gamma_min", "p_manip"}


def test_pareto_frontier() -> None:
    f = th.pareto_frontier(100, 0.91, sigma_a=0.4, gamma=0.2)
    assert f.t_fraud[0] == 0 and f.t_fraud[-1] == 50
    pts = f.pareto()
    assert pts, "a frontier is never empty"
    eps = [p["epsilon_a"] for p in pts]
    pm = [p["p_manip"] for p in pts]
    assert eps == sorted(eps) and pm == sorted(pm)  # trade-off: more margin buys power
    # no point dominates a frontier point
    for p in pts:
        better = (f.epsilon_a < p["epsilon_a"]) & (f.p_manip > p["p_manip"])
        assert not better.any()
    best = f.best_for_epsilon(0.1)
    assert best["epsilon_a"] <= 0.1
    with pytest.raises(InvalidParameterError, match="No allocation"):
        f.best_for_epsilon(1e-6)
    # Theorem 3 variant needs the rates
    with pytest.raises(InvalidParameterError, match="rates"):
        th.pareto_frontier(100, 0.91, sigma_a=0.4)
    g = th.pareto_frontier(100, 0.91, 2.0, rate_unprivileged=0.12, rate_privileged=0.3,
                           share_unprivileged=0.33)  # fmt: skip
    assert np.all(g.gamma >= 0)


@pytest.mark.parametrize(
    "call",
    [
        lambda: th.n_max(-1, 0.9),
        lambda: th.n_max(10, 1.5),
        lambda: th.n_max(10, 0.9, alpha=0.0),
        lambda: th.p_manip(10, 0.9, 1.5),
        lambda: th.p_manip(-3, 0.9, 0.1),
        lambda: th.gamma_max(0.1, 0.3, strategy="sneaky"),
        lambda: th.allocate(0, 0.5),
        lambda: th.margin_of_error(1.0, 0),
    ],
)
def test_bad_parameters(call) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InvalidParameterError, match="parameter of|needs"):
        call()
