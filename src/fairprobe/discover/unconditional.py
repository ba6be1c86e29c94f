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

* On a piece ``[r_a, r_b]`` of ``C``, ``P_(r + tau, r)(D >= x) <= P_(r_b + tau, r_a)(D >= x)``
  (the corner of the piece). That is ``sum_j P(K_R = j) P(K_S >= c(j))``, ``c(j) =
  ceil(n_S (x + j / n_R))``, summed exactly over every ``j`` within ``+-SPAN`` standard
  deviations of the rest's count (binomial masses from log-gamma, the subgroup's tails as
  cumulative sums of its masses); the rest's mass beyond is added whole (the tail there is at
  most 1), and the subgroup's tails beyond its own ``+-SPAN`` are bounded by 1 below and by
  the tail at the edge above.
* The corner moves the gap's mean by the piece's width, which costs a factor ``exp(z w /
  sd(D))`` at ``z`` standard deviations; the supremum is found by refinement: ``C`` is cut into
  ``PIECES``, the probability is also evaluated exactly at every cut (a lower bound of the
  supremum), and a piece whose corner bound exceeds the best such value by more than
  ``SLACK`` (and ``SLACK * gamma``) is cut into ``REFINE``, up to ``LEVELS`` times. The result
  is the largest bound over the final pieces, a valid bound whichever pieces are refined; the
  refinement makes it within about ``SLACK`` of the supremum.
* The summed probabilities are raised by a relative ``ULP`` (and ``1e-15 n log n`` for the
  log-gamma differences) and the p-value by an absolute ``ABSOLUTE``, for floating-point error.

``tests/discover/test_discover.py`` checks the p-value against a brute-force supremum (a fine
grid of ``r``, both counts enumerated): never below it, and within a few percent of it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy.special import betainc, betaincinv, gammaln

__all__ = ["joint_interval", "joint_pvalues"]

FloatArray = npt.NDArray[np.float64]

#: Pieces of the rest's interval ``C`` at the first pass; a piece whose bound can still raise
#: the supremum by more than ``SLACK`` is cut into ``REFINE`` pieces, up to ``LEVELS`` times.
PIECES = 16
REFINE = 8
LEVELS = 3
SLACK = 0.01
#: Both counts are summed over +-SPAN standard deviations (the rest's mass beyond is added
#: whole; the subgroup's tails beyond are bounded by 1 below and their edge value above).
SPAN = 7.0
#: Relative allowance for the floating-point error of the summed probabilities (log-gamma
#: differences are accurate to about 3e-16 n log n, 5e-9 at a million rows; that term is added
#: too), and the absolute one (cumulative sums of masses below 1).
ULP = 1e-6
ABSOLUTE = 1e-11
#: Elements per array in one batch of rows (the memory of the vectorised sums).
BUDGET = 1_500_000


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


def _need(x: FloatArray, ns: FloatArray, nr: FloatArray, j: FloatArray) -> FloatArray:
    """``c(j)``: the subgroup's count needed for ``D >= x`` when the rest's is ``j``, rounded
    down a hair so the boundary is included (a smaller ``c`` only raises the bound)."""
    return np.ceil(ns * (x + j / nr) - 1e-9 * (1.0 + ns))


def _sd(n: FloatArray, lo: FloatArray, hi: FloatArray) -> FloatArray:
    """The largest binomial standard deviation for rates in ``[lo, hi]``."""
    m = np.clip(0.5, lo, hi)
    return np.sqrt(n * m * (1.0 - m))


def _chunks(length: FloatArray, width: int) -> list[npt.NDArray[np.intp]]:
    """Rows grouped by length (shortest first) so that each group's padded arrays hold at
    most ``BUDGET`` elements (a group of one row may hold more)."""
    order = np.argsort(length, kind="stable")
    ls = length[order] * width
    out, s = [], 0
    while s < order.size:
        cost = np.arange(1, order.size - s + 1) * ls[s:]  # rows s..e at the longest's length
        e = s + max(1, int(np.searchsorted(cost, BUDGET, side="right")))
        out.append(order[s:e])
        s = e
    return out


def _logc(n: FloatArray, k: FloatArray) -> FloatArray:
    """``log C(n, k)``, ``-inf`` where ``k`` is outside ``[0, n]`` or NaN (padding)."""
    with np.errstate(invalid="ignore"):
        v = gammaln(n + 1.0) - gammaln(k + 1.0) - gammaln(n - k + 1.0)
    return np.where((k >= 0) & (k <= n), v, -np.inf)


def _masses(logc: FloatArray, k: FloatArray, n: FloatArray, p: FloatArray) -> FloatArray:
    """Binomial masses at the rates ``p`` (B, G) of the counts ``k`` (B, K): (B, G, K). The
    rate is kept inside ``(0, 1)`` (at most a relative ``n * 1e-16`` off, within ``ULP``)."""
    p = np.clip(p, 1e-300, np.nextafter(1.0, 0.0))
    lq = np.log1p(-p)
    kk = np.nan_to_num(k, nan=0.0)
    out = kk[:, None, :] * (np.log(p) - lq)[:, :, None]
    out += logc[:, None, :]
    out += (n * lq)[:, :, None]
    with np.errstate(over="ignore", invalid="ignore"):
        return np.exp(out, out=out)


def _bounds(x: FloatArray, ns: FloatArray, nr: FloatArray, tau: FloatArray, lo: FloatArray,
            hi: FloatArray, pieces: int) -> tuple[FloatArray, FloatArray]:
    """On each row, ``[lo, hi]`` cut into ``pieces``: the corner bound of every piece (an upper
    bound of ``sup P_(r + tau, r)(D >= x)`` over it) and the probability at every cut (a value
    the supremum attains, up to rounding; it decides what to refine and is the lower end of
    the p-value's bracket)."""
    b = x.size
    g = pieces + 1
    upper, point = np.zeros((b, pieces)), np.zeros((b, g))
    if b == 0:
        return upper, point
    sdr = _sd(nr, lo, hi)
    j0 = np.clip(np.floor(nr * lo - SPAN * sdr - 1.0), 0.0, nr)
    j1 = np.clip(np.ceil(nr * hi + SPAN * sdr + 1.0), 0.0, nr)
    plo, phi = np.minimum(lo + tau, 1.0), np.minimum(hi + tau, 1.0)
    sds = _sd(ns, plo, phi)
    c0 = np.clip(np.maximum(_need(x, ns, nr, j0), np.floor(ns * plo - SPAN * sds - 1.0)),
                 0.0, ns + 1.0)
    c1 = np.clip(np.minimum(_need(x, ns, nr, j1), np.ceil(ns * phi + SPAN * sds + 1.0)),
                 0.0, ns + 1.0)
    c1 = np.maximum(c1, c0)
    lr, lm = j1 - j0 + 1.0, c1 - c0 + 1.0
    for rows in _chunks(lr + lm, g):
        nb = rows.size
        r = lo[rows, None] + (hi - lo)[rows, None] * np.linspace(0.0, 1.0, g)  # (B, G)
        ps = np.minimum(r + tau[rows, None], 1.0)
        n_r, n_s = nr[rows, None], ns[rows, None]
        # the rest's masses over its span (B, G, L); its mass outside is added whole
        jl = int(lr[rows].max())
        j = j0[rows, None] + np.arange(jl, dtype=np.float64)
        j = np.where(j <= j1[rows, None], j, np.nan)
        mass = _masses(_logc(n_r, j), j, n_r, r)
        outside = _le(j0[rows, None] - 1.0, n_r, r) + (1.0 - _le(j1[rows, None], n_r, r))
        # the subgroup's tails T(c) = P(K_S >= c), c in [c0, c1], summed from the top; below
        # c0 bounded by 1, above c1 by T(c1 + 1): ext[..., 0] = 1, ext[..., 1 + c - c0] =
        # T(c), ext[..., ml + 1] = T(c1 + 1)
        ml = int(lm[rows].max())
        k = c0[rows, None] + np.arange(ml, dtype=np.float64)
        k = np.where(k <= c1[rows, None], k, np.nan)
        smass = _masses(_logc(n_s, k), k, n_s, ps)
        beyond = _ge(c1[rows, None] + 1.0, n_s, ps)  # (B, G)
        tail = np.cumsum(smass[:, :, ::-1], axis=2)[:, :, ::-1] + beyond[:, :, None]
        ext = np.concatenate([np.ones((nb, g, 1)), tail, beyond[:, :, None]], axis=2)
        # each j's c(j) as an index into ext (non-decreasing in j); the j sharing an index
        # form one block, whose mass is a difference of the rest's cumulative masses
        need = _need(x[rows, None], n_s, n_r, np.nan_to_num(j, nan=0.0))
        idx = np.where(need > c1[rows, None], ml + 1.0,
                       np.clip(need - c0[rows, None] + 1.0, 0.0, ml + 1.0))
        idx = np.where(np.isnan(j), ml + 2.0, idx)  # padding sorts last, in no block
        width = ml + 3.0
        base = width * np.arange(nb)[:, None]
        first = np.searchsorted((idx + base).ravel(), (np.arange(width)[None, :] + base).ravel()
                                ).reshape(nb, ml + 3) - jl * np.arange(nb)[:, None]
        cum = np.concatenate([np.zeros((nb, g, 1)), np.cumsum(mass, axis=2)], axis=2)
        at = np.take_along_axis(cum, np.broadcast_to(first[:, None, :], (nb, g, ml + 3)),
                                axis=2)
        block = np.clip(np.diff(at, axis=2)[:, :, : ml + 2], 0.0, None)  # (B, G, ml + 2)
        upper[rows] = (block[:, :-1, :] * ext[:, 1:, :]).sum(axis=2) + outside[:, :-1]
        point[rows] = (block * ext).sum(axis=2) + outside
    # log-gamma differences of counts near n carry an absolute error of about 3e-16 n log n
    n = ns + nr
    return upper * (1.0 + ULP + 1e-15 * n * np.log1p(n))[:, None], point


def _side(x: FloatArray, ns: FloatArray, nr: FloatArray, lo: FloatArray, hi: FloatArray,
          tau: FloatArray, gamma: FloatArray, levels: int) -> tuple[FloatArray, FloatArray]:
    """``sup_{r in [lo, hi]} P_(r + tau, r)(D >= x)``: an upper bound, refined up to
    ``levels`` times (module docstring), and the largest value seen at a cut (the supremum is
    at least that, up to rounding)."""
    up, pt = _bounds(x, ns, nr, tau, lo, hi, PIECES)
    row = np.arange(x.size)
    a = lo[:, None] + (hi - lo)[:, None] * np.linspace(0.0, 1.0, PIECES + 1)
    best = pt.max(axis=1)
    result = np.zeros(x.size)
    for level in range(levels + 1):
        # a piece is cut when its bound could raise the supremum by more than SLACK (or it
        # matters beside gamma); on the last level every piece's bound is final
        refine = up > np.maximum(best[row] * (1.0 + SLACK), SLACK * gamma[row])[:, None]
        if level == levels:
            refine[:] = False
        np.maximum.at(result, row, np.where(refine, 0.0, up).max(axis=1))
        ri, pi = np.nonzero(refine)
        if ri.size == 0:
            break
        row = row[ri]
        lo_, hi_ = a[ri, pi], a[ri, pi + 1]
        up, pt = _bounds(x[row], ns[row], nr[row], tau[row], lo_, hi_, REFINE)
        a = lo_[:, None] + (hi_ - lo_)[:, None] * np.linspace(0.0, 1.0, REFINE + 1)
        np.maximum.at(best, row, pt.max(axis=1))
    return np.minimum(result, 1.0), np.minimum(best, 1.0)


def _cp(k: FloatArray, n: FloatArray, a: FloatArray) -> tuple[FloatArray, FloatArray]:
    with np.errstate(invalid="ignore", divide="ignore"):
        lo = np.where(k > 0, betaincinv(k, n - k + 1, a / 2.0), 0.0)
        hi = np.where(k < n, betaincinv(k + 1, n - k, 1.0 - a / 2.0), 1.0)
    return lo, hi


def _p(ks: FloatArray, ns: FloatArray, kr: FloatArray, nr: FloatArray, tau: float | FloatArray,
       gamma: FloatArray, levels: int = LEVELS) -> tuple[FloatArray, FloatArray]:
    """The p-value (an upper bound of the exact one, refined ``levels`` times) and the lower
    end of its bracket (``gamma`` plus the largest probabilities seen at the cuts)."""
    tau_ = np.broadcast_to(np.asarray(tau, dtype=np.float64), ks.shape)
    x = np.abs(ks / ns - kr / nr)
    lo, hi = _cp(kr, nr, gamma)
    # the two sides at once, by symmetry: counts reflected (K -> n - K) turn D <= -x into
    # D >= x, and the rest's interval into [1 - hi, 1 - lo]
    two = np.concatenate
    up, seen = _side(two([x, x]), two([ns, ns]), two([nr, nr]), two([lo, 1.0 - hi]),
                     two([hi, 1.0 - lo]), two([tau_, tau_]), two([gamma, gamma]), levels)
    m = ks.size
    return (np.minimum(gamma + up[:m] + up[m:] + ABSOLUTE, 1.0),
            np.minimum(gamma + seen[:m] + seen[m:], 1.0))


def _decided(ks: FloatArray, ns: FloatArray, kr: FloatArray, nr: FloatArray,
             tau: float | FloatArray, gamma: FloatArray, a: float, levels: int = LEVELS
             ) -> npt.NDArray[np.bool_]:
    """``p <= a``, refining (``levels`` times) only the p-values whose bracket holds ``a``."""
    p, low = _p(ks, ns, kr, nr, tau, gamma, levels=0)
    near = (low <= a) & (p > a)
    if near.any():
        t = np.broadcast_to(np.asarray(tau, dtype=np.float64), ks.shape)[near]
        p[near] = _p(ks[near], ns[near], kr[near], nr[near], t, gamma[near], levels)[0]
    return p <= a


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
                  settle: Any = None, first: float | None = None,
                  sharp_at: Sequence[float] | None = None) -> FloatArray:
    """Exact p-values of ``H0: |p_S - p_R| <= tau`` (module docstring), vectorised.

    Every returned value is at least the exact p-value, however far it is refined. ``cap``: a
    p-value above it is returned as 1 (a larger p-value, still valid); one whose cheap lower
    bound (:func:`_floor`) exceeds it is never computed. With ``settle`` (a function of a
    p-value vector returning the rejected set, monotone: smaller p-values reject a superset)
    and ``first`` (a threshold), only the p-values whose lower bound is at most ``first`` are
    computed at first; if ``settle`` rejects the same set with the others at their lower
    bounds and at 1, it rejects that set at their true values too, and they are returned as
    1. Otherwise the bound is widened tenfold, up to ``cap``.

    Sharpness: each p-value is first bounded on ``PIECES`` pieces of ``C`` (with a bracket
    ``[low, p]`` around the exact value) and refined only where that can change a decision:
    with ``settle``, the p-values ``settle`` rejects at their lower ends but not at their upper
    ends; with ``sharp_at`` (thresholds), those whose bracket holds one; with neither, all
    (each within about ``SLACK`` of the exact p-value).
    """
    ks_, ns_, kr_, nr_, g_ = (np.ravel(v).astype(np.float64) for v in np.broadcast_arrays(
        *(np.asarray(v, dtype=np.float64) for v in (ks, ns, kr, nr, gamma))))
    shape = np.broadcast(*(np.asarray(v) for v in (ks, ns, kr, nr, gamma))).shape
    floor = _floor(ks_, ns_, kr_, nr_, tau, g_)
    p = np.ones(ks_.shape)
    low = np.ones(ks_.shape)
    done = np.zeros(ks_.shape, dtype=bool)
    fine = np.zeros(ks_.shape, dtype=bool)

    def compute(sel: npt.NDArray[np.bool_], levels: int) -> None:
        p[sel], low[sel] = _p(ks_[sel], ns_[sel], kr_[sel], nr_[sel], tau, g_[sel], levels)

    def sharpen() -> None:
        if settle is None:
            want = done & ~fine & (low <= cap)
            if sharp_at is not None:
                t = np.asarray(sharp_at, dtype=np.float64)[:, None]
                want &= ((low <= t) & (p > t)).any(axis=0)
            if want.any():
                compute(want, LEVELS)
                fine[want] = True
            return
        for _ in range(4):  # each round refines what could still join the rejected set
            hi = np.where(done & (p <= cap), p, 1.0)
            want = done & ~fine & settle(np.where(done & ~fine, low, hi)) & ~settle(hi)
            if not want.any():
                return
            compute(want, LEVELS)
            fine[want] = True

    stages = [cap]
    if settle is not None and first is not None:  # ten times wider each stage, up to cap
        stages = [c for c in first * 10.0 ** np.arange(8) if c < cap] + [cap]
    for i, c in enumerate(stages):
        todo = (floor <= c) & ~done
        if todo.any():
            compute(todo, 0)
        done |= todo
        sharpen()
        if i + 1 < len(stages):
            hi = np.where(done & (p <= cap), p, 1.0)
            lo = np.where(done, hi, floor)
            if np.array_equal(settle(lo), settle(hi)):
                break
    return np.where(done & (p <= cap), p, 1.0).reshape(shape)


def joint_interval(ks: npt.ArrayLike, ns: npt.ArrayLike, kr: npt.ArrayLike, nr: npt.ArrayLike,
                   level: float, gamma: npt.ArrayLike, *, tau: float = 0.0,
                   iterations: int = 16) -> tuple[FloatArray, FloatArray]:
    """The gap's interval at ``level`` matching the joint test: on the side of the observed
    gap, the largest ``t`` with ``p(t) <= 1 - level`` (found by bisection to ``|gap| / 2^16``,
    below the fourth decimal, from below, so never too far out; the p-value grows
    with ``t``, and ``P(t_hat > |gap|) <= 1 - level``: a lower confidence bound on ``|gap|``);
    on the far side, the rates' Clopper-Pearson bounds at ``1 - (1 - level) / 2`` each. A
    subgroup rejected at ``a = 1 - level`` has its near end at or beyond ``tau`` (the search
    starts there when ``p(tau) <= a``)."""
    k1, n1, k2, n2, g = (np.ravel(v).astype(np.float64) for v in np.broadcast_arrays(
        *(np.asarray(v, dtype=np.float64) for v in (ks, ns, kr, nr, gamma))))
    a = 1.0 - float(level)
    d = k1 / n1 - k2 / n2
    hi_t = np.abs(d)
    at_tau = _decided(k1, n1, k2, n2, np.minimum(tau, hi_t), g, a)
    lo_t = np.where(at_tau, np.minimum(tau, hi_t), 0.0)
    ok0 = at_tau | _decided(k1, n1, k2, n2, np.zeros(k1.shape), g, a)
    for _ in range(iterations):
        # unrefined: a larger p-value only moves the near end towards zero (still valid), by
        # a fraction of a standard error, at a sixteenth of the cost
        mid = (lo_t + hi_t) / 2.0
        ok = _decided(k1, n1, k2, n2, mid, g, a, levels=0)
        lo_t = np.where(ok, mid, lo_t)
        hi_t = np.where(ok, hi_t, mid)
    near = np.where(ok0, lo_t, 0.0)
    ls, hs = _cp(k1, n1, np.full(k1.shape, a))
    lr, hr = _cp(k2, n2, np.full(k1.shape, a))
    low = np.where(d >= 0, near, ls - hr)
    high = np.where(d >= 0, hs - lr, -near)
    return low, high
