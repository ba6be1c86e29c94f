"""Appendix B budget regimes: t_A, t_B, sigma_B and the plan of each regime."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fairprobe.errors import BudgetError, InvalidParameterError
from fairprobe.twosource.budget import plan_budget, required_budget, sigma_b
from fairprobe.twosource.theory import di_sigma, z_quantile

RATES = (0.1205, 0.4686, 0.333)


def test_sigma_b_matches_a_simulation_of_the_corrected_estimator():
    """The delta-method sd against the sd of the misclassification-corrected DI, simulated."""
    ru, rp, pu = RATES
    p, t, reps = 0.91, 20_000, 4_000
    rng = np.random.default_rng(0)
    # one record: true group, decision, proxy hit -> the three observable cells, drawn as a
    # multinomial over t records
    pos_u, pos_p = pu * ru, (1 - pu) * rp
    cells = [p * pos_u + (1 - p) * pos_p, (1 - p) * pos_u + p * pos_p]
    counts = rng.multinomial(t, [*cells, 1 - sum(cells)], size=reps)
    o = (counts[:, :2] / t).T
    m = np.array([[p, 1 - p], [1 - p, p]])
    s = np.linalg.solve(m, o)
    mu_hat = (s[0] / pu) / (s[1] / (1 - pu))
    assert np.std(mu_hat) * math.sqrt(t) == pytest.approx(sigma_b(ru, rp, pu, p), rel=0.06)
    assert np.mean(mu_hat) == pytest.approx(ru / rp, abs=0.01)  # the correction removes the bias


def test_sigma_b_grows_as_the_proxy_weakens_and_is_infinite_at_chance():
    vals = [sigma_b(*RATES, p) for p in (1.0, 0.95, 0.8, 0.6)]
    assert vals == sorted(vals)
    assert math.isinf(sigma_b(*RATES, 0.5))
    # a perfect proxy: B is a (non-stratified) A
    assert vals[0] >= di_sigma(*RATES) * 0.99


def test_thresholds_and_boundaries_of_the_matrix_model():
    """B alone with known confusion rates (``b_estimator="matrix"``): t_B from sigma_B."""
    sa, sb = di_sigma(*RATES), sigma_b(*RATES, 0.91)
    t_a = required_budget(sa, 0.1)
    assert t_a == math.ceil((z_quantile(0.05) * sa / 0.1) ** 2 - 1e-9)
    t_b = required_budget(sb, 0.1)
    kw = {"b_estimator": "matrix"}
    assert plan_budget(t_a, 0.1, 0.91, *RATES, **kw).regime == "pareto"
    assert plan_budget(t_b, 0.1, 0.91, *RATES, **kw).regime == "pareto"
    big = plan_budget(t_b + 1, 0.1, 0.91, *RATES, **kw)
    assert big.regime == "large" and big.recommended["t_fraud"] == 1
    with pytest.raises(BudgetError, match=f"t_A = {t_a}"):
        plan_budget(t_a - 1, 0.1, 0.91, *RATES, **kw)
    # t > 2 t_B: half the budget on each side, every B answer checked
    huge = plan_budget(10 * t_b, 0.1, 0.91, *RATES, **kw)
    assert huge.recommended["n_b"] == huge.recommended["n_a"] == 5 * t_b


def test_sigma_b_from_per_group_accuracies():
    """Per-group accuracies enter sigma_B; equal ones give the single-p_phi model."""
    both = sigma_b(*RATES, 0.8, accuracy_unprivileged=0.8, accuracy_privileged=0.8)
    assert both == pytest.approx(sigma_b(*RATES, 0.8), rel=1e-12)
    # the first-name rule on the Adult pool: 0.648 (women), 0.838 (men)
    per_group = sigma_b(*RATES, 0.775, accuracy_unprivileged=0.648, accuracy_privileged=0.838)
    assert per_group > sigma_b(*RATES, 0.775)
    assert math.isinf(sigma_b(*RATES, 0.7, accuracy_unprivileged=0.3, accuracy_privileged=0.7))


def test_double_sampling_threshold_is_the_smallest_budget_reaching_epsilon():
    """Default planner: t_B is the smallest t with a split whose planned margin <= epsilon."""
    from fairprobe.twosource.budget import large_regime_margin
    from fairprobe.twosource.correction import expected_cells

    kw = {"accuracy_unprivileged": 0.648, "accuracy_privileged": 0.838}
    plan = plan_budget(3000, 0.1, 0.775, *RATES, **kw)
    assert plan.regime == "large" and plan.recommended["b_estimator"] == "double-sampling"
    t_b = plan.t_b
    cells = expected_cells(*RATES, 0.648, 0.838)
    k = np.arange(1, (t_b - 1) // 2 + 1)
    assert (large_regime_margin(t_b - 1 - k, k, cells) > 0.1).all()  # t_B - 1: no split works
    rec = plan.recommended
    assert rec["n_b"] + rec["n_a"] == 3000 and rec["n_a"] <= rec["n_b"]
    assert rec["epsilon_b"] <= 0.1
    assert plan_budget(t_b - 1, 0.1, 0.775, *RATES, **kw).regime == "pareto"
    assert plan_budget(t_b, 0.1, 0.775, *RATES, **kw).regime == "pareto"
    assert plan_budget(t_b + 1, 0.1, 0.775, *RATES, **kw).regime == "large"


def test_bad_parameters_before_any_work():
    with pytest.raises(InvalidParameterError):
        plan_budget(1000, 0.0, 0.91, *RATES)
    with pytest.raises(InvalidParameterError):
        plan_budget(10**13, 0.1, 0.91, *RATES)
    with pytest.raises(InvalidParameterError):
        plan_budget(1000, math.inf, 0.91, *RATES)
