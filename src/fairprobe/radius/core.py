"""CoRe: Convex Relaxation for Consistency Radius Estimation (paper Section 4, Algorithm 1).

1. Surrogate weights (Eq. 8): ``w*_i = dist(m_i, R_not(g_i)) + delta(m_i)`` where ``R_not(g)`` is
   the range ``[min, max]`` of the values of the other group and ``dist(x, [a, b]) =
   max(0, a - x, x - b)``; the residual ``delta`` gives points in the overlap a small positive
   weight. The paper leaves ``delta`` unspecified; here ``delta(m) = delta0 * spread *
   |f_0(m) - f_1(m)| / (f_0(m) + f_1(m))`` for overlapping points, with ``f_g`` the within-group
   frequency of the value (50-bin histogram when a group has more than 50 distinct values), as in
   the authors' released ``compute_weights_by_hist``.
2. Inner convex problem (Eq. 9), solved with cvxpy: minimise
   ``KL(P_h || P) + lam * (mass_0(h) - mass_1(h))^2`` over ``h >= 0``, ``E_P[h] = 1`` with
   ``E_P[w* h] <= eps_proxy`` (audit unfair: move mass off points far from the other group) or
   ``>= eps_proxy`` (audit fair). Masses are normalised (fractions of P), so the paper's
   ``lam ((1-g)'h - g'h)^2`` with ``1'h = n`` is ``lam n^2 (mass_0 - mass_1)^2`` here.
3. Outer bisection on ``eps_proxy``, started (the paper does not say how) from the bracket found by
   scanning ``eps_proxy`` in ``scan`` equal steps from the audit value ``E_P[w*]`` towards the
   extreme ``min w*`` (or ``max w*``), until ``| |phi(P_h)| - eps | < 1e-5`` (Algorithm 1); the radius
   is ``d(h)`` of the last shift that flips the assessment.

The authors' ``opt_for_r.py`` differs: its objective is ``||h - 1||^2`` (quadratic, not KL) and
its "regulariser" ``(|g0 - g1|' h)^2 = (1'h)^2 = n^2`` is a constant. This module follows the paper.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from fairprobe._validation import check_int, check_real
from fairprobe.radius._data import AuditData
from fairprobe.radius.api import register_method
from fairprobe.radius.divergences import get_divergence
from fairprobe.radius.result import RadiusResult

__all__ = ["core_radius", "surrogate_weights"]

FloatArray = NDArray[np.float64]


def _freq(values: FloatArray, probs: FloatArray, at: FloatArray, bins: FloatArray | None) -> FloatArray:
    if bins is None:
        u, inv = np.unique(values, return_inverse=True)
        f = np.bincount(inv, weights=probs, minlength=u.size) / probs.sum()
        idx = np.searchsorted(u, at)
        ok = (idx < u.size) & (u[np.minimum(idx, u.size - 1)] == at)
        return np.where(ok, f[np.minimum(idx, u.size - 1)], 0.0)
    hist, _ = np.histogram(values, bins=bins, weights=probs / probs.sum())
    k = np.clip(np.digitize(at, bins) - 1, 0, bins.size - 2)
    return hist[k]


def surrogate_weights(data: AuditData, delta0: float = 0.05) -> FloatArray:
    """``w*`` of Eq. 8 per atom (see module docstring)."""
    v, g, p = data.atom_values, data.atom_groups, data.atom_probs
    ranges = [(v[g == k].min(), v[g == k].max()) for k in (0, 1)]
    lo_other = np.where(g == 0, ranges[1][0], ranges[0][0])
    hi_other = np.where(g == 0, ranges[1][1], ranges[0][1])
    dist = np.maximum.reduce([np.zeros_like(v), lo_other - v, v - hi_other])
    spread = float(v.max() - v.min()) or 1.0
    many = max(np.unique(v[g == 0]).size, np.unique(v[g == 1]).size) > 50
    bins = np.linspace(v.min(), v.max(), 51) if many else None
    f0 = _freq(v[g == 0], p[g == 0], v, bins)
    f1 = _freq(v[g == 1], p[g == 1], v, bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        contrast = np.where(f0 + f1 > 0, np.abs(f0 - f1) / (f0 + f1), 0.0)
    return dist + np.where(dist == 0, delta0 * spread * contrast, 0.0)


def _phi_atoms(data: AuditData, h: FloatArray) -> float:
    q = data.atom_probs * h
    s0 = q[data.atom_groups == 0].sum()
    s1 = q[data.atom_groups == 1].sum()
    if s0 <= 1e-15 or s1 <= 1e-15:
        return math.nan
    v = data.atom_values
    return float(q[data.atom_groups == 0] @ v[data.atom_groups == 0] / s0
                 - q[data.atom_groups == 1] @ v[data.atom_groups == 1] / s1)


@register_method("core")
def core_radius(
    data: AuditData,
    tolerance: float,
    divergence: str = "kl",
    *,
    lam: float = 1e-3,
    delta0: float = 0.05,
    max_iter: int = 40,
    scan: int = 16,
    tol: float = 1e-5,
    solver: str = "CLARABEL",
    **_opts: Any,
) -> RadiusResult:
    """CoRe estimate of the radius (an upper bound on the exact one; see module docstring)."""
    import cvxpy as cp  # imported here: cvxpy takes seconds to import

    owner = "core_radius"
    lam = check_real(lam, "lam", owner, lo=0.0)
    max_iter = check_int(max_iter, "max_iter", owner, lo=1)
    scan = check_int(scan, "scan", owner, lo=1)
    div = get_divergence(divergence)
    p = data.atom_probs
    g = data.atom_groups
    w = surrogate_weights(data, delta0)
    phi0 = data.phi()
    fair = abs(phi0) < tolerance
    base = dict(phi=phi0, fair=fair, tolerance=tolerance, method="core", divergence=divergence,
                n=data.n, groups=data.labels)  # fmt: skip
    k = p.size
    h = cp.Variable(k, nonneg=True)
    c = cp.Parameter()
    obj_div = (cp.sum(cp.multiply(p, -cp.entr(h))) if divergence == "kl"
               else cp.sum(cp.multiply(p, cp.square(h - 1))))
    gap = (p * (g == 0)) @ h - (p * (g == 1)) @ h
    proxy = (p * w) @ h
    cons = [p @ h == 1, proxy <= c] if not fair else [p @ h == 1, proxy >= c]
    prob = cp.Problem(cp.Minimize(obj_div + lam * cp.square(gap)), cons)

    def flipped(x: float) -> bool:
        return (abs(x) < tolerance) if not fair else (abs(x) >= tolerance)

    def solve(val: float) -> FloatArray | None:
        c.value = val
        try:
            prob.solve(solver=solver)
        except cp.SolverError:
            try:
                prob.solve(solver="SCS")
            except cp.SolverError:
                return None
        if prob.status not in ("optimal", "optimal_inaccurate"):
            return None
        if h.value is None:
            return None
        x = np.maximum(np.asarray(h.value, dtype=float), 0.0)
        return x / float(p @ x)

    w_bar = float(p @ w)
    extreme = float(w.min()) if not fair else float(w.max())
    # Initial bracket of Algorithm 1: scan eps_proxy from the audit value w_bar towards the
    # extreme value in `scan` steps and keep the first value whose shift flips the assessment.
    flip_c, keep_c, h_flip = extreme, w_bar, None
    if abs(extreme - w_bar) > 1e-15:
        for val in np.linspace(w_bar, extreme, scan + 1)[1:]:
            hv = solve(float(val))
            if hv is not None and flipped(_phi_atoms(data, hv)):
                flip_c, h_flip = float(val), hv
                break
            keep_c = float(val)
    if h_flip is None:
        return RadiusResult(radius=math.inf, phi_shifted=None,
                            message="CoRe found no flipping shift (the proxy constraint cannot "
                                    "flip the assessment); the exact radius may still be finite",
                            **base)  # type: ignore[arg-type]
    iters = 0
    for iters in range(1, max_iter + 1):  # noqa: B007
        mid = 0.5 * (flip_c + keep_c)
        hm = solve(mid)
        if hm is None:
            break
        ph = _phi_atoms(data, hm)
        if not math.isnan(ph) and flipped(ph):
            flip_c, h_flip = mid, hm
        else:
            keep_c = mid
        if not math.isnan(ph) and abs(abs(ph) - tolerance) < tol and flipped(ph):
            break
    phi_s = _phi_atoms(data, h_flip)
    h_pt = h_flip[data.atom_of]
    radius = div.value(data.probs, h_pt)
    return RadiusResult(
        radius=radius, phi_shifted=phi_s, h=h_pt,
        reweighting={"eps_proxy": flip_c, "bisection_iterations": iters, "lam": lam,
                     "h_min": float(h_pt.min()), "h_max": float(h_pt.max())},
        message="CoRe estimate (upper bound on the exact radius)", **base,  # type: ignore[arg-type]
    )
