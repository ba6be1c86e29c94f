"""Consistency radius with more than two groups: a chosen pair and the worst pair."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import logsumexp

from fairprobe.errors import InvalidParameterError
from fairprobe.radius import consistency_radius
from fairprobe.radius.divergences import get_divergence


def _means(q, v, g, k):
    return np.array([q[g == j] @ v[g == j] / q[g == j].sum() for j in range(k)])


def _slsqp(v, g, p, k, constraints, restarts=4, seed=0):
    """Independent solver: min KL(q || p) over q = softmax(u), analytic gradients.

    ``constraints``: ``(type, coef, const)`` meaning ``coef @ group_means + const`` ``== 0``
    (``"eq"``) or ``>= 0`` (``"ineq"``).
    """
    rng = np.random.default_rng(seed)
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

    def lin(coef, const):
        coef = np.asarray(coef, dtype=float)

        def fun(u):
            return float(coef @ _means(q_of(u), v, g, k) + const)

        def jac(u):
            q = q_of(u)
            mass = np.array([q[g == j].sum() for j in range(k)])
            mm = _means(q, v, g, k)
            w = coef[g] * (v - mm[g]) / mass[g]
            return q * (w - q @ w)

        return fun, jac

    best = math.inf
    for _ in range(restarts):
        cons = []
        for t, coef, const in constraints:
            f, j = lin(coef, const)
            cons.append({"type": t, "fun": f, "jac": j})
        res = minimize(kl, logp + rng.normal(0, 2, p.size), jac=kl_jac, method="SLSQP",
                       constraints=cons, options={"maxiter": 400, "ftol": 1e-14})
        ok = all((c["fun"](res.x) >= -1e-8) if c["type"] == "ineq" else abs(c["fun"](res.x)) < 1e-8
                 for c in cons)
        if ok:
            best = min(best, kl(res.x))
    return best


def _pair_coef(k, i, j):
    c = np.zeros(k)
    c[i], c[j] = 1.0, -1.0
    return c


def _problem(seed, k=3, per=3):
    rng = np.random.default_rng(seed)
    v = np.round(rng.random(k * per), 2)
    g = np.repeat(np.arange(k), per)
    p = rng.dirichlet(np.ones(k * per))
    return v, g, p


@pytest.mark.parametrize("seed", range(2))
def test_chosen_pair_is_exact_with_the_other_groups_in_the_mass_split(seed):
    v, g, p = _problem(seed)
    m = _means(p, v, g, 3)
    eps = abs(m[0] - m[2]) * 0.5 + 0.02
    r = consistency_radius(v, g, eps, weights=p, pair=(0, 2))
    fair = abs(m[0] - m[2]) < eps
    assert r.fair == fair
    lines = [eps, -eps] if fair else [math.copysign(eps, m[0] - m[2])]
    ref = min(_slsqp(v, g, p, 3, [("eq", _pair_coef(3, 0, 2), -t)]) for t in lines)
    assert r.lower_bound <= r.radius <= ref + 1e-7
    assert r.radius >= ref - 1e-6 * (1 + ref)
    # the returned h covers every point and achieves the radius on the pair's boundary
    kl = get_divergence("kl")
    assert r.h is not None and r.h.size == v.size
    assert kl.value(p, r.h) == pytest.approx(r.radius, rel=1e-9)
    mm = _means(p * r.h, v, g, 3)
    assert abs(mm[0] - mm[2]) == pytest.approx(eps, abs=1e-9)


def test_worst_pair_fair_audit_is_the_cheapest_pair():
    v, g, p = _problem(3)
    m = _means(p, v, g, 3)
    eps = (m.max() - m.min()) * 1.3 + 0.01
    r = consistency_radius(v, g, eps, weights=p)
    assert r.fair and len(r.pairs) == 3
    assert r.radius == pytest.approx(min(x["radius"] for x in r.pairs))
    cons = [("eq", _pair_coef(3, i, j), -s * eps)
            for i, j in itertools.combinations(range(3), 2) for s in (1, -1)]
    ref = min(_slsqp(v, g, p, 3, [c], restarts=3) for c in cons)
    assert r.radius <= ref + 1e-7 and r.radius >= ref - 1e-6 * (1 + ref)
    assert sum(x["decides"] for x in r.pairs) == 1


@pytest.mark.parametrize("seed", [0])
def test_worst_pair_unfair_audit_brackets_the_joint_optimum(seed):
    v, g, p = _problem(10 + seed, k=4, per=2)
    m = _means(p, v, g, 4)
    eps = (m.max() - m.min()) * 0.6
    r = consistency_radius(v, g, eps, weights=p)
    assert not r.fair
    cons = [("ineq", -_pair_coef(4, i, j), eps) for i in range(4) for j in range(4) if i != j]
    ref = _slsqp(v, g, p, 4, cons, restarts=6)
    # certified lower bound <= the joint optimum <= the achieved shift's divergence
    assert r.lower_bound <= ref + 1e-7
    assert r.radius >= ref - 1e-6 * (1 + ref)
    kl = get_divergence("kl")
    assert kl.value(p, r.h) == pytest.approx(r.radius, rel=1e-9)
    mm = _means(p * r.h, v, g, 4)
    assert mm.max() - mm.min() <= eps + 1e-9
    assert r.radius - r.lower_bound <= 1e-8 * (1 + r.radius)  # the window search is certified


def test_pair_of_a_binary_audit_is_the_binary_radius_and_other_methods_refuse():
    v, g, p = _problem(5, k=2)
    r2 = consistency_radius(v, g, 0.1, weights=p)
    rp = consistency_radius(v, g, 0.1, weights=p, pair=(0, 1))
    assert rp.radius == pytest.approx(r2.radius, rel=1e-9)
    v3, g3, p3 = _problem(5)
    with pytest.raises(InvalidParameterError, match="method='exact'"):
        consistency_radius(v3, g3, 0.1, weights=p3, method="core")
    with pytest.raises(InvalidParameterError, match="not in the data"):
        consistency_radius(v3, g3, 0.1, weights=p3, pair=(0, 7))


def test_flip_curve_passes_through_the_radius():
    v, g, p = _problem(6, k=2, per=4)
    r = consistency_radius(v, g, 0.05, weights=p, curve_points=21)
    c = r.to_dict()["flip_curve"]
    assert c["radius"] == pytest.approx(r.radius) and len(c["phi"]) >= 21
    # the radius is the curve's least divergence over the flipping targets (up to its grid)
    phi, d = np.array(c["phi"]), np.array([np.inf if x is None else x for x in c["divergence"]])
    flip = np.abs(phi) >= 0.05 if r.fair else np.abs(phi) <= 0.05
    assert r.radius <= d[flip].min() + 1e-9
    assert d[np.argmin(np.abs(phi - r.phi))] == pytest.approx(0.0, abs=1e-12)
