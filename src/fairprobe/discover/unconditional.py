"""The exact unconditional test of ``H0_S: |p_S - p_R| <= tau`` on the difference of the rates.

The statistic is the observed gap ``D = K_S / n_S - K_R / n_R``; the counts at least as extreme
as the observed ``d`` are ``E = {|D| >= |d|}``. Under a null point ``(p_S, p_R)`` with
``|p_S - p_R| <= tau``, ``P(D >= x)`` grows with ``p_S`` and falls with ``p_R`` (``D`` grows with
``K_S`` and falls with ``K_R``), so ``P(|D| >= x) <= P_(r + tau, r)(D >= x) +
P_(r - tau, r)(D <= -x)`` with ``r = p_R``. The rest's rate ``r`` is a nuisance; Berger and Boos
(1994) restrict it to its two-sided Clopper-Pearson interval ``C`` at ``1 - gamma``:

    p = gamma + sup_{r in C} P_(r + tau, r)(D >= |d|) + sup_{r in C} P_(r - tau, r)(D <= -|d|).

Under ``H0_S``, ``P(p <= a) <= P(p_R not in C) + P(F(|D|) <= a - gamma) <= a``, ``F`` the
survival function of ``|D|`` at the true point: exact, for any ``gamma`` fixed before the counts
are seen (a search fixes it from ``q`` and ``m``).

Unlike two separate intervals (the box, or the rest's interval then the subgroup's test), the
two counts' variances add in quadrature here, so the rest's uncertainty costs almost nothing
when the rest is large, and ``C``'s width matters only through how the probability varies
along the band's edge (slowly): ``gamma`` can be tiny.

Computation (every step bounds the probability from above, so ``p`` never errs small):
``C`` is cut into pieces ``[r_a, r_b]``; on a piece, ``P_(r + tau, r)(D >= x) <=
P_(r_b + tau, r_a)(D >= x)``. That is a sum over the rest's count ``j`` of
``P(K_R = j) P(K_S >= n_S (x + j / n_R))``; ``j`` is cut into blocks, each bounded by its
mass times the subgroup's tail at the block's first ``j`` (the tail falls with ``j``), and the
mass outside ``+-11`` standard deviations is added whole.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
from scipy.special import betainc, betaincinv

__all__ = ["joint_interval", "joint_pvalues"]

FloatArray = npt.NDArray[np.float64]

#: Pieces of the rest's interval, and blocks of the rest's count, in each bound.
PIECES = 16
BLOCKS = 40
#: The rest's count is summed over +-SPAN standard deviations (the mass beyond is added whole).
SPAN = 11.0


def _ge(c: FloatArray, n: FloatArray, p: FloatArray) -> FloatArray:
    """``P(K >= c)`` for ``K ~ Binomial(n, p)``, any real ``c`` (ceil taken)."""
    c = np.ceil(c)
    cc = np.clip(c, 1.0, np.maximum(n, 1.0))
    with np.errstate(invalid="ignore"):
        v = betainc(cc, n - cc + 1.0, np.clip(p, 0.0, 1.0))
    return np.where(c <= 0, 1.0, np.where(c > n, 0.0, np.nan_to_num(v, nan=1.0)))


def _le(c: FloatArray, n: FloatArray, p: FloatArray) -> FloatArray:
    """``P(K <= c)``, any real ``c`` (floor taken)."""
    c = np.floor(c)
    cc = np.clip(c, 0.0, np.maximum(n - 1.0, 0.0))
    with np.errstate(invalid="ignore"):
        v = betainc(n - cc, cc + 1.0, 1.0 - np.clip(p, 0.0, 1.0))
    return np.where(c < 0, 0.0, np.where(c >= n, 1.0, np.nan_to_num(v, nan=1.0)))


def _upper_tail(x: FloatArray, ns: FloatArray, nr: FloatArray, ps: FloatArray, pr: FloatArray
                ) -> FloatArray:
    """An upper bound on ``P(K_S / n_S - K_R / n_R >= x)`` at ``(ps, pr)`` (arrays broadcast;
    the last axis is free for blocks)."""
    sd = np.sqrt(nr * pr * (1.0 - pr))
    j0 = np.clip(np.floor(nr * pr - SPAN * sd - 1.0), 0.0, nr)
    j1 = np.clip(np.ceil(nr * pr + SPAN * sd + 1.0), 0.0, nr)
    edges = np.floor(j0[..., None] + (j1 - j0 + 1.0)[..., None]
                     * np.linspace(0.0, 1.0, BLOCKS + 1))  # block b: [edges_b, edges_b+1 - 1]
    cdf = _le(edges - 1.0, nr[..., None], pr[..., None])
    mass = np.clip(np.diff(cdf, axis=-1), 0.0, None)
    # the subgroup's count needed for D >= x, rounded down a hair so the boundary is included
    need = ns[..., None] * (x[..., None] + edges[..., :-1] / nr[..., None]) - 1e-9 * (
        1.0 + ns[..., None])
    tail = _ge(need, ns[..., None], ps[..., None])
    outside = cdf[..., 0] + (1.0 - cdf[..., -1])
    return np.minimum((mass * tail).sum(axis=-1) + outside, 1.0)


def _side(x: FloatArray, ns: FloatArray, nr: FloatArray, lo: FloatArray, hi: FloatArray,
          tau: float) -> FloatArray:
    """``sup_{r in [lo, hi]} P_(r + tau, r)(D >= x)``, bounded above piece by piece."""
    r = lo[:, None] + (hi - lo)[:, None] * np.linspace(0.0, 1.0, PIECES + 1)[None, :]
    ps = np.minimum(r[:, 1:] + tau, 1.0)  # the subgroup's rate at its piece's top
    pr = r[:, :-1]  # the rest's at its bottom
    b = _upper_tail(x[:, None] + 0.0 * pr, ns[:, None] + 0.0 * pr, nr[:, None] + 0.0 * pr, ps,
                    pr)
    return b.max(axis=1)


def _cp(k: FloatArray, n: FloatArray, a: FloatArray) -> tuple[FloatArray, FloatArray]:
    with np.errstate(invalid="ignore", divide="ignore"):
        lo = np.where(k > 0, betaincinv(k, n - k + 1, a / 2.0), 0.0)
        hi = np.where(k < n, betaincinv(k + 1, n - k, 1.0 - a / 2.0), 1.0)
    return lo, hi


def _p(ks: FloatArray, ns: FloatArray, kr: FloatArray, nr: FloatArray, tau: float | FloatArray,
       gamma: FloatArray) -> FloatArray:
    tau_ = np.broadcast_to(np.asarray(tau, dtype=np.float64), ks.shape)
    x = np.abs(ks / ns - kr / nr)
    lo, hi = _cp(kr, nr, gamma)
    out = np.empty(ks.shape)
    # the two sides by symmetry: counts reflected (K -> n - K) turn D <= -x into D >= x
    for t in np.unique(tau_):
        sel = tau_ == t
        up = _side(x[sel], ns[sel], nr[sel], lo[sel], hi[sel], float(t))
        down = _side(x[sel], ns[sel], nr[sel], 1.0 - hi[sel], 1.0 - lo[sel], float(t))
        out[sel] = up + down
    return np.minimum(gamma + out + 1e-12, 1.0)


def _floor(ks: FloatArray, ns: FloatArray, kr: FloatArray, nr: FloatArray, tau: float,
           gamma: FloatArray) -> FloatArray:
    """A cheap lower bound on the p-value: ``gamma + P_(r + tau, r)(K_S >= k_S) P(K_R <= k_R)``
    at ``r`` the rest's observed rate (it lies in ``C``; both events imply ``D >= d``),
    reflected when the subgroup's rate is below the rest's."""
    r = kr / nr
    above = ks / ns >= r
    k_near = np.where(above, ks, ns - ks)
    r_near = np.where(above, r, 1.0 - r)
    j_near = np.where(above, kr, nr - kr)
    return gamma + _ge(k_near, ns, np.minimum(r_near + tau, 1.0)) * _le(j_near, nr, r_near)


def joint_pvalues(ks: npt.ArrayLike, ns: npt.ArrayLike, kr: npt.ArrayLike, nr: npt.ArrayLike,
                  tau: float, gamma: npt.ArrayLike, *, cap: float = 1.0,
                  settle: Any = None, first: float | None = None) -> FloatArray:
    """Exact p-values of ``H0: |p_S - p_R| <= tau`` (module docstring), vectorised.

    ``cap``: a p-value above it is returned as 1 (a larger p-value, still valid); one whose
    cheap lower bound (:func:`_floor`) exceeds it is never computed. With ``settle`` (a
    function of a p-value vector returning the rejected set, monotone: smaller p-values reject
    a superset) and ``first`` (a threshold), only the p-values whose lower bound is at most
    ``first`` are computed at first; if ``settle`` rejects the same set with the others at
    their lower bounds and at 1, it rejects that set at their true values too, and they are
    returned as 1. Otherwise the bound is widened tenfold, up to ``cap``.
    """
    ks_, ns_, kr_, nr_, g_ = (np.ravel(v).astype(np.float64) for v in np.broadcast_arrays(
        *(np.asarray(v, dtype=np.float64) for v in (ks, ns, kr, nr, gamma))))
    shape = np.broadcast(*(np.asarray(v) for v in (ks, ns, kr, nr, gamma))).shape
    floor = _floor(ks_, ns_, kr_, nr_, tau, g_)
    p = np.ones(ks_.shape)
    done = np.zeros(ks_.shape, dtype=bool)
    stages = [cap]
    if settle is not None and first is not None:  # ten times wider each stage, up to cap
        stages = [c for c in first * 10.0 ** np.arange(8) if c < cap] + [cap]
    for i, c in enumerate(stages):
        todo = (floor <= c) & ~done
        if todo.any():
            p[todo] = _p(ks_[todo], ns_[todo], kr_[todo], nr_[todo], tau, g_[todo])
        done |= todo
        if i + 1 < len(stages):
            hi = np.where(done & (p <= cap), p, 1.0)
            lo = np.where(done, hi, floor)
            if np.array_equal(settle(lo), settle(hi)):
                break
    return np.where(done & (p <= cap), p, 1.0).reshape(shape)


def joint_interval(ks: npt.ArrayLike, ns: npt.ArrayLike, kr: npt.ArrayLike, nr: npt.ArrayLike,
                   level: float, gamma: npt.ArrayLike, *, tau: float = 0.0,
                   iterations: int = 24) -> tuple[FloatArray, FloatArray]:
    """The gap's interval at ``level`` matching the joint test: on the side of the observed
    gap, the largest ``t`` with ``p(t) <= 1 - level`` (found by bisection; the p-value grows
    with ``t``, and ``P(t_hat > |gap|) <= 1 - level``: a lower confidence bound on ``|gap|``);
    on the far side, the rates' Clopper-Pearson bounds at ``1 - (1 - level) / 2`` each. A
    subgroup rejected at ``a = 1 - level`` has its near end at or beyond ``tau`` (the search
    starts there when ``p(tau) <= a``)."""
    k1, n1, k2, n2, g = (np.ravel(v).astype(np.float64) for v in np.broadcast_arrays(
        *(np.asarray(v, dtype=np.float64) for v in (ks, ns, kr, nr, gamma))))
    a = 1.0 - float(level)
    d = k1 / n1 - k2 / n2
    hi_t = np.abs(d)
    at_tau = _p(k1, n1, k2, n2, np.minimum(tau, hi_t), g) <= a
    lo_t = np.where(at_tau, np.minimum(tau, hi_t), 0.0)
    ok0 = at_tau | (_p(k1, n1, k2, n2, np.zeros(k1.shape), g) <= a)
    for _ in range(iterations):
        mid = (lo_t + hi_t) / 2.0
        ok = _p(k1, n1, k2, n2, mid, g) <= a
        lo_t = np.where(ok, mid, lo_t)
        hi_t = np.where(ok, hi_t, mid)
    near = np.where(ok0, lo_t, 0.0)
    ls, hs = _cp(k1, n1, np.full(k1.shape, a))
    lr, hr = _cp(k2, n2, np.full(k1.shape, a))
    low = np.where(d >= 0, near, ls - hr)
    high = np.where(d >= 0, hs - lr, -near)
    return low, high
