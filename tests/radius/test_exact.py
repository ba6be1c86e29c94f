"""The exact solver against brute force, closed forms and its own certificate."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import minimize

from fairprobe.errors import DataError, EmptyGroupError, InvalidParameterError
from fairprobe.radius import consistency_radius
from fairprobe.radius.curves import Chi2Curve, KLCurve
from fairprobe.radius.divergences import get_divergence


def _phi(p, h, v, g):
    q = p * h
    return q[g == 0] @ v[g == 0] / q[g == 0].sum() - q[g == 1] @ v[g == 1] / q[g == 1].sum()


def brute_force(v, g, p, eps, div, starts=12, seed=0):
    """Multi-start SLSQP on h over the atoms, constrained to |phi| = +-eps (boundary)."""
    d = get_divergence(div)
    rng = np.random.default_rng(seed)
    phi0 = _phi(p, np.ones_like(p), v, g)
    targets = [eps, -eps] if abs(phi0) < eps else [math.copysign(eps, phi0)]
    best = math.inf
    for t in targets:
        for _ in range(starts):
            x0 = rng.dirichlet(np.ones(p.size)) / p
            x0 = x0 / (p @ x0)
            cons = [{"type": "eq", "fun": lambda h: p @ h - 1.0},
                    {"type": "eq", "fun": lambda h, t=t: _phi(p, np.maximum(h, 1e-300), v, g) - t}]
            res = minimize(lambda h: d.value(p, np.maximum(h, 0.0)), x0, method="SLSQP",
                           bounds=[(1e-12, None)] * p.size, constraints=cons,
                           options={"maxiter": 150, "ftol": 1e-13})
            h = np.maximum(res.x, 0)
            if res.success and abs(p @ h - 1) < 1e-7 and abs(_phi(p, h, v, g) - t) < 1e-7:
                best = min(best, d.value(p, h))
    return best


@pytest.mark.parametrize("div", ["kl", "chi2"])
@pytest.mark.parametrize("seed", range(5))
def test_matches_multistart_brute_force(div, seed):
    rng = np.random.default_rng(seed)
    k0, k1 = rng.integers(2, 4), rng.integers(2, 4)
    v = np.round(rng.random(k0 + k1), 3)
    g = np.array([0] * k0 + [1] * k1)
    p = rng.dirichlet(np.ones(k0 + k1))
    phi0 = _phi(p, np.ones_like(p), v, g)
    eps = float(abs(phi0) * rng.choice([0.5, 1.5]) + 0.01)
    r = consistency_radius(v, g, eps, weights=p, divergence=div)
    bf = brute_force(v, g, p, eps, div)
    assert r.infinite == math.isinf(bf)  # both agree when no shift can flip
    if r.infinite:
        return
    assert r.radius <= bf + 1e-7  # never worse than any local optimum found
    assert r.radius >= bf - 1e-6 * max(1, bf)  # and the brute force reaches it


def trinomial_truth(p, m, eps):
    """Ground truth of the paper's trinomial set-up by exhaustive search over q0 (1e6 grid)."""
    best = math.inf
    for target in (m[2] + eps, m[2] - eps):
        if not (min(m[0], m[1]) <= target <= max(m[0], m[1])):
            continue
        # q1 / q0 fixed by the group-0 mean; scan q0 on a fine grid
        ratio = (m[0] - target) / (target - m[1])
        q0 = np.linspace(1e-9, 1, 1_000_001) / (1 + ratio)
        q1 = ratio * q0
        q2 = 1 - q0 - q1
        ok = q2 > 0
        q = np.stack([q0[ok], q1[ok], q2[ok]])
        with np.errstate(divide="ignore", invalid="ignore"):
            kl = np.nansum(np.where(q > 0, q * np.log(q / p[:, None]), 0.0), axis=0)
        best = min(best, float(kl.min()))
    return best


@pytest.mark.parametrize("seed", range(5))
def test_trinomial_exhaustive(seed):
    rng = np.random.default_rng(100 + seed)
    m = rng.random(3)
    p = rng.dirichlet(np.ones(3))
    lo, hi = sorted((m[0] - m[2], m[1] - m[2]))
    phi0 = (p[0] * m[0] + p[1] * m[1]) / (p[0] + p[1]) - m[2]
    for eps in np.linspace(max(lo, 0) + 1e-3, max(abs(lo), abs(hi)) - 1e-3, 4):
        if eps <= 0 or abs(abs(phi0) - eps) < 1e-6:
            continue
        r = consistency_radius(m, [0, 0, 1], eps, weights=p)
        truth = trinomial_truth(p, m, eps)
        if math.isinf(truth):
            assert r.infinite
        else:
            assert r.radius == pytest.approx(truth, rel=1e-5, abs=1e-9)
            assert r.radius <= truth + 1e-12  # the grid can only overestimate the minimum


def test_bimodal_line_takes_global_optimum():
    # Two separated bumps: moving group 0 or moving group 1 are both local optima.
    v = np.array([0.0, 1.0, 0.45, 0.55, 0.0, 1.0])
    g = np.array([0, 0, 0, 1, 1, 1])
    p = np.array([0.02, 0.02, 0.46, 0.46, 0.02, 0.02])
    eps = 0.3
    r = consistency_radius(v, g, eps, weights=p)
    # dense scan of the line a - b = +-eps with exact within-group costs
    c0 = KLCurve(np.array([0.0, 0.45, 1.0]), np.array([0.02, 0.46, 0.02]) / 0.5)
    c1 = KLCurve(np.array([0.0, 0.55, 1.0]), np.array([0.02, 0.46, 0.02]) / 0.5)
    best = math.inf
    for t in (eps, -eps):
        a = np.linspace(max(0.0, t), min(1.0, 1 + t), 20001)[1:-1]
        _, k0, _ = c0.eval(c0.solve(a))
        _, k1, _ = c1.eval(c1.solve(a - t))
        best = min(best, float(np.min(-np.log(0.5 * np.exp(-k0) + 0.5 * np.exp(-k1)))))
    assert r.radius <= best + 1e-12
    assert r.radius == pytest.approx(best, rel=1e-6)


@pytest.mark.parametrize("div", ["kl", "chi2"])
def test_result_is_consistent(div):
    rng = np.random.default_rng(7)
    n = 400
    g = rng.integers(0, 2, n)
    m = rng.random(n) + 0.15 * g
    w = rng.random(n)
    for eps in (0.05, 0.1, 0.3):
        r = consistency_radius(m, g, eps, weights=w, divergence=div)
        p = w / w.sum()
        assert r.lower_bound <= r.radius <= r.lower_bound + 1e-8
        assert get_divergence(div).value(p, r.h) == pytest.approx(r.radius, rel=1e-8, abs=1e-12)
        assert p @ r.h == pytest.approx(1.0)
        assert abs(_phi(p, r.h, m, g)) == pytest.approx(eps, abs=1e-9)
        assert r.phi_shifted == pytest.approx(math.copysign(eps, r.phi_shifted))
        assert r.fair == (abs(r.phi) < eps)
        assert r.pinsker_bound == pytest.approx(
            math.sqrt((r.radius if div == "kl" else math.log1p(r.radius)) / 2))


def test_chi2_within_group_matches_qp():
    import cvxpy as cp

    rng = np.random.default_rng(3)
    v = np.sort(rng.random(12))
    p = rng.dirichlet(np.ones(12))
    c = Chi2Curve(v, p)
    for a in (0.2, 0.5, c.mean + 0.01, 0.9):
        if not c.lo < a < c.hi:
            continue
        r = cp.Variable(12, nonneg=True)
        prob = cp.Problem(cp.Minimize(p @ cp.square(r - 1)), [p @ r == 1, (p * v) @ r == a])
        prob.solve(solver="CLARABEL")
        _, cost, _ = c.eval(c.solve(np.array([a])))
        assert cost[0] == pytest.approx(prob.value, rel=1e-5, abs=1e-8)


def test_weights_equal_duplicated_points():
    v = [0.1, 0.5, 0.9, 0.3, 0.7]
    g = [0, 0, 0, 1, 1]
    a = consistency_radius(v, g, 0.05, weights=[2, 1, 1, 1, 3])
    b = consistency_radius([0.1, 0.1, 0.5, 0.9, 0.3, 0.7, 0.7, 0.7], [0, 0, 0, 0, 1, 1, 1, 1], 0.05)
    assert a.radius == pytest.approx(b.radius, rel=1e-9)
    c = consistency_radius(v, g, 0.05, weights=[20, 10, 10, 10, 30])
    assert c.radius == pytest.approx(a.radius, rel=1e-12)


def test_labels_order_and_binary_correctness_large():
    rng = np.random.default_rng(0)
    n = 100_000
    sex = np.where(rng.random(n) < 0.6, "Male", "Female")
    correct = (rng.random(n) < np.where(sex == "Male", 0.82, 0.88)).astype(float)
    r = consistency_radius(correct, sex, 0.03)
    assert r.groups == ("Female", "Male")
    assert r.phi == pytest.approx(correct[sex == "Female"].mean() - correct[sex == "Male"].mean())
    assert not r.fair and 0 < r.radius < 0.01


def test_boundary_phi_equal_eps_gives_zero():
    v, g = [1.0, 0.0, 1.0, 0.0], [0, 0, 1, 1]
    w = [3.0, 1.0, 1.0, 1.0]
    r = consistency_radius(v, g, 0.25, weights=w)  # phi = 0.75 - 0.5 = 0.25 -> unfair
    assert not r.fair
    assert r.radius == pytest.approx(0.0, abs=1e-12)


def test_constant_group_moves_only_the_other():
    v = [0.2, 0.4, 0.9, 0.5, 0.5]
    g = [0, 0, 0, 1, 1]
    r = consistency_radius(v, g, 0.2)
    assert r.fair and math.isfinite(r.radius)
    assert r.reweighting["group_mean_after"][1] == pytest.approx(0.5)


def test_infinite_radius_is_reported_not_raised():
    # both groups constant: phi can never change
    r = consistency_radius([1.0, 1.0, 0.0, 0.0], [0, 0, 1, 1], 0.5)
    assert r.infinite and r.to_dict()["radius"] is None and "infinite" in r.message
    # fair, and the group supports can never differ by eps
    r = consistency_radius([0.4, 0.5, 0.45, 0.5], [0, 0, 1, 1], 0.2)
    assert r.fair and r.infinite and r.to_dict()["pinsker_bound"] is None
    # unfair with disjoint supports farther apart than eps
    r = consistency_radius([0.9, 1.0, 0.0, 0.1], [0, 0, 1, 1], 0.5)
    assert not r.fair and r.infinite


@pytest.mark.parametrize(
    ("kwargs", "err", "text"),
    [
        ({"values": [0.1, math.nan, 0.3, 0.2], "groups": [0, 0, 1, 1]}, DataError, "NaN"),
        ({"weights": [1, -1, 1, 1]}, DataError, "non-negative"),
        ({"weights": [1, 1, 0, 0]}, EmptyGroupError, "zero total weight"),
        ({"groups": [0, 0, 0, 0]}, EmptyGroupError, "only one group"),
        ({"groups": [0, 1, 2, 2], "method": "greedy"}, InvalidParameterError, "method='exact'"),
        ({"tolerance": math.inf}, InvalidParameterError, "finite"),
        ({"tolerance": 0.0}, InvalidParameterError, "tolerance"),
        ({"tolerance": -0.1}, InvalidParameterError, "tolerance"),
        ({"method": "nope"}, InvalidParameterError, "method"),
        ({"divergence": "tv"}, InvalidParameterError, "divergence"),
        ({"values": [0.1, 0.2, 0.3]}, DataError, "same length"),
    ],
)
def test_bad_input_one_clear_error(kwargs, err, text):
    args = {"values": [0.1, 0.2, 0.3, 0.9], "groups": [0, 0, 1, 1], "tolerance": 0.1}
    args.update(kwargs)
    with pytest.raises(err, match=text) as info:
        consistency_radius(args.pop("values"), args.pop("groups"), args.pop("tolerance"), **args)
    assert "\n" not in str(info.value)


def test_zero_weight_points_do_not_extend_the_support():
    # the zero-weight point at 1.0 must not let group 0 reach mean 1.0
    with_zero = consistency_radius([0.2, 0.4, 1.0, 0.3, 0.35], [0, 0, 0, 1, 1], 0.3,
                                   weights=[1, 1, 0, 1, 1])
    without = consistency_radius([0.2, 0.4, 0.3, 0.35], [0, 0, 1, 1], 0.3)
    assert with_zero.infinite and without.infinite
    a = consistency_radius([0.2, 0.4, 1.0, 0.3, 0.35], [0, 0, 0, 1, 1], 0.05, weights=[1, 1, 0, 1, 1])
    b = consistency_radius([0.2, 0.4, 0.3, 0.35], [0, 0, 1, 1], 0.05)
    assert a.radius == pytest.approx(b.radius, rel=1e-9)


def _line_scan(v, g, p, eps, div, points=4001):
    """Dense scan of the boundary lines with exact within-group costs (an upper bound on R)."""
    from fairprobe.radius._data import prepare
    from fairprobe.radius.curves import make_curve

    d = prepare(v, g, p)
    pi = d.group_mass()
    D = get_divergence(div)
    c = [make_curve(div, *d.group_atoms(k)) for k in (0, 1)]
    phi = c[0].mean - c[1].mean
    best = math.inf
    for t in ([eps, -eps] if abs(phi) < eps else [math.copysign(eps, phi)]):
        lo, hi = max(c[0].lo, c[1].lo + t), min(c[0].hi, c[1].hi + t)
        if lo > hi:
            continue
        a = np.linspace(lo, hi, points)
        k0 = c[0].eval_full(c[0].solve(a))[1]
        k1 = c[1].eval_full(c[1].solve(a - t))[1]
        best = min(best, D.total(float(np.max(pi[0] * D.psi(k0) + pi[1] * D.psi(k1)))))
    return best


@pytest.mark.parametrize(
    ("v", "g", "p", "eps", "div"),
    [
        # chi2: the within-group curve is flat beyond its end parameter (regression)
        ([0.04117342, 0.47516977, 0.00212861, 0.54037274, 0.00203212, 0.08783481, 0.20670464,
          0.79508261], [0, 0, 0, 0, 0, 1, 1, 1],
         [2.75072789e-01, 2.55137409e-03, 6.90195898e-02, 2.52763281e-01, 1.97471740e-04,
          3.84587374e-01, 1.53626305e-02, 4.45490790e-04], 0.30058574604847854, "chi2"),
        # KL: a nearly empty support end makes the tilt curve extremely steep (regression)
        ([1.33338619e-01, 3.44501743e-01, 1.43178004e-04, 9.93060636e-01, 9.52463010e-02],
         [0, 0, 1, 1, 1], [1.62728820e-06, 6.46005169e-01, 3.49352222e-01, 1.11355365e-05,
                           4.62984653e-03], 0.45475055463732494, "kl"),
    ],
)
def test_hard_cases_converge_and_beat_dense_scan(v, g, p, eps, div):
    r = consistency_radius(v, g, eps, weights=p, divergence=div)
    scan = _line_scan(np.array(v), np.array(g), np.array(p), eps, div)
    assert r.radius <= scan + 1e-9
    assert r.radius - r.lower_bound <= 1e-8 * r.radius + 1e-12


@pytest.mark.parametrize("seed", range(3))
def test_random_problems_beat_dense_scan(seed):
    rng = np.random.default_rng(1000 + seed)
    for _ in range(8):
        k0, k1 = rng.integers(1, 7, 2)
        v = rng.random(k0 + k1) ** rng.uniform(0.3, 3)
        g = np.array([0] * k0 + [1] * k1)
        p = rng.dirichlet(np.ones(k0 + k1) * rng.uniform(0.2, 3))
        eps = float(rng.uniform(0.01, 0.6))
        for div in ("kl", "chi2"):
            r = consistency_radius(v, g, eps, weights=p, divergence=div)
            scan = _line_scan(v, g, p, eps, div, points=1001)
            assert r.infinite == math.isinf(scan)
            if not r.infinite:
                assert r.radius <= scan + 1e-9
                assert r.radius - r.lower_bound <= 1e-8 * r.radius + 1e-12


# --- optimum at the end of a group's value range ---------------------------


def _slsqp_radius(v, g, p, eps, restarts=8, seed=0):
    """Independent solver: SLSQP over the shifted distribution q = softmax(u) (restarts).

    Minimises KL(q || p) on the boundary lines phi(q) = +-eps; softmax keeps q > 0, so optima
    at a support end are approached from inside (the value converges, the logits diverge).
    """
    from scipy.special import logsumexp

    rng = np.random.default_rng(seed)
    phi0 = _phi(p, np.ones_like(p), v, g)
    lines = [eps, -eps] if abs(phi0) < eps else [math.copysign(eps, phi0)]
    logp = np.log(p)

    def q_of(u):
        return np.exp(u - logsumexp(u))

    def kl(u):
        q = q_of(u)
        return float(q @ (np.log(q) - logp))

    def kl_jac(u):
        q = q_of(u)
        w = np.log(q) - logp
        return q * (w - q @ w)

    def phi_q(u):
        return _phi(q_of(u), np.ones_like(p), v, g)

    def phi_jac(u):
        q = q_of(u)
        q0, q1 = q[g == 0].sum(), q[g == 1].sum()
        m0, m1 = q[g == 0] @ v[g == 0] / q0, q[g == 1] @ v[g == 1] / q1
        w = np.where(g == 0, (v - m0) / q0, -(v - m1) / q1)
        return q * (w - q @ w)

    best = math.inf
    for t in lines:
        for _ in range(restarts):
            u0 = logp + rng.normal(0, 3, p.size)
            res = minimize(kl, u0, jac=kl_jac, method="SLSQP",
                           constraints=[{"type": "eq", "fun": lambda u, t=t: phi_q(u) - t,
                                         "jac": phi_jac}],
                           options={"maxiter": 300, "ftol": 1e-15})
            if abs(phi_q(res.x) - t) < 1e-9:
                best = min(best, kl(res.x))
    return best


def test_end_of_range_example():
    r = consistency_radius([0.85, 0.17, 0.33, 0.92], [0, 0, 1, 1], 0.721627)
    assert r.radius == pytest.approx(0.5849988475, abs=1e-9)  # SLSQP and a 50-digit search: 0.58500
    assert r.lower_bound == pytest.approx(r.radius, rel=1e-8)
    p = np.full(4, 0.25)
    assert get_divergence("kl").value(p, r.h) == pytest.approx(r.radius, rel=1e-12)
    v, g = np.array([0.85, 0.17, 0.33, 0.92]), np.array([0, 0, 1, 1])
    assert abs(_phi(p, r.h, v, g)) == pytest.approx(0.721627, abs=1e-12)


@pytest.mark.parametrize("seed", range(2))
def test_end_of_range_against_independent_solver(seed):
    """Random problems whose tolerance is 0.85-0.999 of the largest achievable |phi|: the
    optimum sits at or next to a support end. The certified bound must stay below the SLSQP
    optimum, and the radius must be achieved by the returned shift."""
    rng = np.random.default_rng(7000 + seed)
    kl = get_divergence("kl")
    checked = 0
    while checked < 6:
        k0, k1 = rng.integers(2, 4, 2)
        v = np.round(rng.random(k0 + k1), 2)
        g = np.array([0] * k0 + [1] * k1)
        p = rng.dirichlet(np.ones(k0 + k1))
        d_max = max(v[g == 0].max() - v[g == 1].min(), v[g == 1].max() - v[g == 0].min())
        eps = float(d_max * rng.uniform(0.85, 0.999))
        phi0 = _phi(p, np.ones_like(p), v, g)
        if abs(phi0) >= eps or d_max <= 0:
            continue
        r = consistency_radius(v, g, eps, weights=p)
        ref = _slsqp_radius(v, g, p, eps, seed=seed)
        assert math.isfinite(ref) and not r.infinite
        # never an overestimate: at most what an independent solver reaches
        assert r.lower_bound <= r.radius <= ref + 1e-7
        # never an underestimate: the returned shift is feasible (on the boundary) and its KL
        # is the radius, so the radius is achieved (the bug reported a KL the h did not have)
        assert kl.value(p, r.h) == pytest.approx(r.radius, rel=1e-10)
        assert abs(_phi(p, r.h, v, g)) == pytest.approx(eps, abs=1e-9)
        assert r.radius - r.lower_bound <= 1e-8 * (1 + r.radius)
        checked += 1
