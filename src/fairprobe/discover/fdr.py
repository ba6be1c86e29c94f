"""p-values for tolerance hypotheses and the false-discovery-rate procedures of the search.

Each subgroup ``S`` is compared with the rest ``R`` of the rows: its null hypothesis is that the
two rates differ by at most the tolerance, ``H0_S: |p_S - p_R| <= tau`` (``tau = 0``: the rates
are equal). Proofs and assumptions: ``docs/discover.md``.

p-value (exact, from Clopper-Pearson boxes)
    For a level ``1 - a``, the Clopper-Pearson intervals of ``p_S`` and ``p_R``, each at level
    ``sqrt(1 - a)`` (Sidak: the two counts are independent binomials given the sizes, since the
    rows of ``S`` and ``R`` are disjoint), form a box that holds ``(p_S, p_R)`` with probability
    at least ``1 - a``. Under ``H0_S`` the true point lies in the band ``|x - y| <= tau``, so the
    box lies wholly outside the band with probability at most ``a``. The p-value is the smallest
    ``a`` at which it does: ``P(p <= a) <= a`` under ``H0_S``, with no approximation.

p-value (exact, ``split``: Berger-Boos over the rest's rate, then the subgroup's count)
    The box spends the level on four tails although, with a positive tolerance, only the two on
    the side the data fall can produce a rejection near the band's edge, and it splits it evenly
    although the rest ``R`` is usually far larger than ``S``. The exact construction fixes a
    share ``gamma`` (from the sizes, ``m`` and ``q`` only: ``w`` times the procedure's first
    threshold, ``w = sqrt(n_S) / (sqrt(n_S) + sqrt(n_R))``) and takes the two-sided
    Clopper-Pearson interval ``[L_R, U_R]`` of ``p_R`` at ``1 - gamma``; when it holds ``p_R``,
    every null ``p_S`` lies in ``[lo, hi] = [L_R - tau, U_R + tau]``. Then
    ``p = gamma + sup_{p in [lo, hi]} P_p(K_S in E)``, ``E`` the counts at least as extreme as
    the observed one (by the smaller of the upper tail at ``hi`` and the lower tail at ``lo``:
    ``E = {K >= c1} | {K <= c2}``). The supremum is bounded above on a grid of ``[lo, hi]``
    (each tail is monotone in ``p``), so it never errs small. Under ``H0_S``,
    ``P(p <= a) <= P(p_R not in [L_R, U_R]) + (a - gamma) <= a`` (Berger and Boos 1994): given
    ``K_R``, the set ``{k: sup P(E(k)) <= a - gamma}`` lies in one ``E(k0)``. Near the band's
    edge the lower tail at ``lo`` is negligible, so the subgroup's count meets one tail at
    nearly the whole level, where the box gives it a quarter.

p-value (exact, ``joint``, the default)
    The exact unconditional test of the gap itself, Berger-Boos over the rest's rate
    (:mod:`fairprobe.discover.unconditional`): the two counts' variances add in quadrature, so
    a large rest costs almost nothing, where ``split`` adds its interval's half-width.

Benjamini-Yekutieli (``by``)
    Reject the ``k`` smallest p-values, ``k`` the largest with ``p_(k) <= k q / (m c_m)``,
    ``c_m = 1 + 1/2 + ... + 1/m``. The expected share of true nulls among the rejected is at most
    ``q m0 / m <= q`` under ANY dependence between the p-values (Benjamini and Yekutieli 2001,
    Theorem 1.3): overlapping subgroups share rows, so their p-values are dependent in ways no
    positivity condition covers (a subgroup and its complement's parts move in opposite
    directions).

Holm (``holm``, the default)
    Step-down: reject ``p_(1) <= q / m``, then ``p_(2) <= q / (m - 1)``, ... and stop at the
    first that fails. The family-wise error (some true null rejected) is at most ``q`` under any
    dependence (Holm 1979), and the FDR is at most the family-wise error: with no true
    rejection the false share is 0, else at most 1. When few subgroups are unfair (the common
    case at a positive tolerance) its first threshold ``q / m`` is ``c_m`` times BY's
    (7.3 times for 872 tests), which is what finds small subgroups.

Reshaped step-up (``reshaped``)
    Step-up with thresholds ``q beta(k) / m``, ``beta(k) = 1/2 + k / (2 c_m)``: the shape
    function of the probability ``nu = (delta_1 + nu_BY) / 2``, so Theorem 3.2 of Blanchard and
    Roquain (2008, "Two simple sufficient conditions for FDR control") bounds its FDR by ``q``
    under any dependence. It has half Holm's first threshold and half BY's slope: between the
    two when many subgroups are unfair.

Benjamini-Hochberg (``bh``)
    The same with ``c_m = 1``: its FDR bound needs the p-values to be positively regression
    dependent (PRDS), which the two-sided p-values of overlapping subgroups are not in general;
    kept under its own name, its guarantee stated as conditional.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from scipy.special import betainc, betaincinv
from scipy.stats import binom

__all__ = ["FDR_METHODS", "PVALUES", "box_interval", "box_pvalues", "split_interval",
           "split_pvalues", "first_gamma", "first_threshold", "harmonic", "joint_gamma", "intervals", "pvalues", "step_up"]

FloatArray = npt.NDArray[np.float64]

#: The false-discovery-rate procedures, with what their bound rests on.
FDR_METHODS = {
    "holm": "any dependence (Holm 1979: the family-wise error, which bounds the FDR, is at most "
            "the level)",
    "reshaped": "any dependence (Blanchard and Roquain 2008, Theorem 3.2; shape 1/2 + k/(2 c_m))",
    "by": "any dependence (Benjamini-Yekutieli 2001, Theorem 1.3)",
    "bh": "positive regression dependence (PRDS) of the p-values, not guaranteed for "
          "overlapping subgroups",
}


#: The p-value constructions of ``H0_S: |p_S - p_R| <= tau``, both exact.
PVALUES = {
    "joint": "exact unconditional test of the gap (Berger-Boos over the rest's rate): the two "
             "counts' variances add",
    "split": "Berger-Boos: the rest's Clopper-Pearson interval, then an exact binomial test of "
             "the subgroup's count over the null band",
    "box": "two Clopper-Pearson intervals (a Sidak box) wholly outside the band",
}


def _cp(k: FloatArray, n: FloatArray, level: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Two-sided Clopper-Pearson bounds at ``level`` (arrays broadcast)."""
    a = (1.0 - level) / 2.0
    with np.errstate(invalid="ignore", divide="ignore"):
        lo = np.where(k > 0, betaincinv(k, n - k + 1, a), 0.0)
        hi = np.where(k < n, betaincinv(k + 1, n - k, 1.0 - a), 1.0)
    return lo, hi


def _outside(ks: FloatArray, ns: FloatArray, kr: FloatArray, nr: FloatArray, a: FloatArray,
             tau: float) -> npt.NDArray[np.bool_]:
    per = np.sqrt(1.0 - a)
    ls, hs = _cp(ks, ns, per)
    lr, hr = _cp(kr, nr, per)
    return (ls - hr > tau) | (lr - hs > tau)


def box_pvalues(ks: npt.ArrayLike, ns: npt.ArrayLike, kr: npt.ArrayLike, nr: npt.ArrayLike,
                tau: float, *, iterations: int = 36, cap: float = 1.0 - 1e-12) -> FloatArray:
    """Exact p-values of ``H0: |p_S - p_R| <= tau`` (module docstring), vectorised.

    Found by bisection on ``log a`` (the box shrinks as ``a`` grows, so "outside the band" is
    monotone in ``a``): 36 halvings of ``[-745, 0]`` fix ``p`` to a relative 1e-8, and the
    returned value is the upper end of the bracket, so it never errs small. ``1`` where even the
    point estimates lie in the band (the box never leaves it): most subgroups of a fair model,
    which cost no bisection; so do those above ``cap`` (returned as 1, a larger p-value).
    """
    ks_, ns_, kr_, nr_ = np.broadcast_arrays(*(np.asarray(x, dtype=np.float64)
                                               for x in (ks, ns, kr, nr)))
    p = np.ones(ks_.shape)
    # a < 1 keeps the boxes non-degenerate; at a -> 1 they shrink to the point estimates
    live = _outside(ks_, ns_, kr_, nr_, np.full(ks_.shape, cap), tau)
    if not live.any():
        return p
    k1, n1, k2, n2 = ks_[live], ns_[live], kr_[live], nr_[live]
    lo = np.full(k1.shape, -745.0)  # log of the smallest positive double
    hi = np.full(k1.shape, np.log(cap))
    for _ in range(iterations):
        mid = (lo + hi) / 2.0
        out = _outside(k1, n1, k2, n2, np.exp(mid), tau)
        hi = np.where(out, mid, hi)
        lo = np.where(out, lo, mid)
    p[live] = np.minimum(np.exp(hi), 1.0)
    return p


def box_interval(ks: npt.ArrayLike, ns: npt.ArrayLike, kr: npt.ArrayLike, nr: npt.ArrayLike,
                 level: float | FloatArray) -> tuple[FloatArray, FloatArray]:
    """The interval of ``p_S - p_R`` that the box at ``level`` gives: ``[l_S - h_R, h_S - l_R]``."""
    per = np.sqrt(np.asarray(level, dtype=np.float64))
    ls, hs = _cp(np.asarray(ks, float), np.asarray(ns, float), per)
    lr, hr = _cp(np.asarray(kr, float), np.asarray(nr, float), per)
    return ls - hr, hs - lr


def harmonic(m: int) -> float:
    """``c_m = 1 + 1/2 + ... + 1/m`` (Benjamini-Yekutieli's dependence factor)."""
    return float(np.sum(1.0 / np.arange(1, m + 1))) if m > 0 else 1.0


def _shape(method: str, m: int) -> FloatArray:
    """``beta(k)`` for ``k = 1..m``: each step-up's threshold is ``q beta(k) / m``."""
    k = np.arange(1, m + 1, dtype=np.float64)
    if method == "bh":
        return k
    if method == "by":
        return k / harmonic(m)
    return 0.5 + k / (2.0 * harmonic(m))  # reshaped: nu = (delta_1 + nu_BY) / 2


def step_up(p: npt.ArrayLike, q: float, method: str = "holm") -> tuple[npt.NDArray[np.bool_],
                                                                         FloatArray, float]:
    """Which hypotheses ``method`` rejects at FDR ``q``, the adjusted p-values (rejected exactly
    when ``<= q``, at every ``q``), and the per-test level every rejected p-value met (the last
    rejection's threshold; 0 when none is rejected).

    ``holm`` is Holm's step-down (thresholds ``q / (m - i + 1)``); ``by``, ``bh`` and
    ``reshaped`` are step-up procedures with thresholds ``q beta(k) / m`` (module docstring).
    """
    pv = np.asarray(p, dtype=np.float64)
    m = pv.size
    if m == 0:
        return np.zeros(0, dtype=bool), np.zeros(0), 0.0
    order = np.argsort(pv, kind="stable")
    ranked = pv[order]
    ranks = np.arange(1, m + 1)
    reject = np.zeros(m, dtype=bool)
    adjusted = np.empty(m)
    if method == "holm":
        thresholds = q / (m - ranks + 1.0)
        fails = np.flatnonzero(ranked > thresholds)
        k = int(fails[0]) if fails.size else m
        adj_sorted = np.maximum.accumulate(ranked * (m - ranks + 1.0))
    else:
        # BY and BH as k q / (m c_m) and k q / m, in that order of operations
        c = harmonic(m) if method == "by" else 1.0
        thresholds = (ranks * q / (m * c) if method in ("by", "bh")
                      else q * _shape(method, m) / m)
        passes = ranked <= thresholds
        k = int(ranks[passes].max()) if passes.any() else 0
        adj_sorted = np.minimum.accumulate((ranked * m / _shape(method, m))[::-1])[::-1]
    reject[order[:k]] = True
    adjusted[order] = np.minimum(adj_sorted, 1.0)
    return reject, adjusted, (float(thresholds[k - 1]) if k else 0.0)


def _split(ns: FloatArray, nr: FloatArray) -> FloatArray:
    """The rest's share ``w`` of the first threshold: its standard error's share,
    ``sqrt(n_S) / (sqrt(n_S) + sqrt(n_R))``, fixed by the sizes alone (never by the counts)."""
    a, b = np.sqrt(ns), np.sqrt(nr)
    return np.clip(a / (a + b), 0.02, 0.98)


def _tail_ge(c: FloatArray, n: FloatArray, p: FloatArray) -> FloatArray:
    """``P(K >= c)``, ``K ~ Binomial(n, p)`` (1 for ``c <= 0``, 0 for ``c > n``)."""
    cc = np.clip(c, 1.0, np.maximum(n, 1.0))
    with np.errstate(invalid="ignore"):
        v = betainc(cc, n - cc + 1.0, p)  # I_p(c, n - c + 1)
    return np.where(c <= 0, 1.0, np.where(c > n, 0.0, np.nan_to_num(v, nan=0.0)))


def _tail_le(c: FloatArray, n: FloatArray, p: FloatArray) -> FloatArray:
    """``P(K <= c)`` (0 for ``c < 0``, 1 for ``c >= n``)."""
    cc = np.clip(c, 0.0, np.maximum(n - 1.0, 0.0))
    with np.errstate(invalid="ignore"):
        v = betainc(n - cc, cc + 1.0, 1.0 - p)  # I_{1-p}(n - c, c + 1)
    return np.where(c < 0, 0.0, np.where(c >= n, 1.0, np.nan_to_num(v, nan=1.0)))


#: Grid pieces of ``[lo, hi]`` on which the supremum of the two tails is bounded.
_GRID = 16


def split_pvalues(ks: npt.ArrayLike, ns: npt.ArrayLike, kr: npt.ArrayLike, nr: npt.ArrayLike,
                  tau: float, gamma: npt.ArrayLike) -> FloatArray:
    """Exact p-values of ``H0: |p_S - p_R| <= tau`` by the Berger-Boos construction (module
    docstring), vectorised: ``p = gamma + sup_{p in [lo, hi]} P_p(K_S as extreme)``, with
    ``[lo, hi]`` the rest's two-sided Clopper-Pearson interval at ``1 - gamma`` widened by
    ``tau``.

    ``gamma`` (the rest's share, at least the smallest p-value possible) must not depend on the
    counts; any such choice gives ``P(p <= a) <= a`` under ``H0``. A search sets it to ``w``
    times its procedure's first threshold (:func:`first_gamma`).
    """
    ks_, ns_, kr_, nr_, g_ = (np.ravel(x) for x in np.broadcast_arrays(
        *(np.asarray(x, dtype=np.float64) for x in (ks, ns, kr, nr, gamma))))
    shape = np.broadcast(*(np.asarray(x) for x in (ks, ns, kr, nr, gamma))).shape
    lr, hr = _cp(kr_, nr_, 1.0 - g_)
    lo = np.clip(lr - tau, 0.0, 1.0)
    hi = np.clip(hr + tau, 0.0, 1.0)
    up = _tail_ge(ks_, ns_, hi)  # the observed count's upper tail at the band's top
    down = _tail_le(ks_, ns_, lo)  # and its lower tail at the band's bottom
    t = np.minimum(up, down)
    upper = up <= down
    # the counts as extreme as the observed one on the other side: those whose tail there is
    # <= t, found by a quantile taken one step wide, so the region bounded is never smaller
    # than the true one
    with np.errstate(invalid="ignore"):
        c2 = np.where(upper, np.nan_to_num(binom.ppf(t, ns_, lo), nan=-1.0) + 1.0, ks_)
        isf = np.asarray(binom.isf(t, ns_, hi), dtype=np.float64)
        c1 = np.where(upper, ks_, np.where(np.isnan(isf), ns_ + 1.0, isf))
    c2 = np.where(upper & (lo <= 0.0), -1.0, c2)  # at p = 0 no count lies below 0
    c1 = np.where(~upper & (hi >= 1.0), ns_ + 1.0, c1)  # at p = 1 none above n
    # each tail is monotone in p: on a piece [g_j, g_j+1] their sum is at most the upper
    # tail at g_j+1 plus the lower tail at g_j
    grid = lo[:, None] + (hi - lo)[:, None] * np.linspace(0.0, 1.0, _GRID + 1)[None, :]
    top = _tail_ge(c1[:, None], ns_[:, None], grid[:, 1:])
    bottom = _tail_le(c2[:, None], ns_[:, None], grid[:, :-1])
    sup = np.maximum((top + bottom).max(axis=1), t)
    return np.minimum(g_ + sup, 1.0).reshape(shape)


def first_gamma(method: str, q: float, m: int, ns: npt.ArrayLike, nr: npt.ArrayLike
                ) -> FloatArray:
    """The rest's share of the exact p-values: ``w`` times the procedure's first threshold
    ``q beta(1) / m`` (Holm and BH ``q / m``), so a subgroup can meet it; fixed by ``q``, ``m``
    and the sizes, never by the counts."""
    return _split(np.asarray(ns, dtype=np.float64), np.asarray(nr, dtype=np.float64)) * \
        first_threshold(method, q, m)


def first_threshold(method: str, q: float, m: int) -> float:
    """The smallest p-value threshold ``method`` uses over ``m`` tests at FDR ``q``: the
    per-test level its first rejection meets."""
    return q / m if method == "holm" else q * float(_shape(method, m)[0]) / m


def split_interval(ks: npt.ArrayLike, ns: npt.ArrayLike, kr: npt.ArrayLike, nr: npt.ArrayLike,
                   level: float | FloatArray, gamma: npt.ArrayLike
                   ) -> tuple[FloatArray, FloatArray]:
    """The interval of ``p_S - p_R`` that matches the exact p-value at ``a = 1 - level``:
    ``[L_S - U_R, U_S - L_R]``, the rest's bounds two-sided at ``1 - gamma``, the subgroup's
    each one-sided at ``1 - (a - gamma)``. An exact p-value ``<= a`` puts this interval
    outside the band; it covers the gap with probability at least ``1 - 2a``."""
    k1, n1, k2, n2 = (np.asarray(x, dtype=np.float64) for x in (ks, ns, kr, nr))
    a = 1.0 - np.asarray(level, dtype=np.float64)
    g = np.asarray(gamma, dtype=np.float64)
    lr, hr = _cp(k2, n2, 1.0 - g)
    ls, hs = _cp(k1, n1, 1.0 - 2.0 * np.clip(a - g, 0.0, 0.5))  # one-sided at a - gamma
    return ls - hr, hs - lr


def pvalues(kind: str, ks: npt.ArrayLike, ns: npt.ArrayLike, kr: npt.ArrayLike,
            nr: npt.ArrayLike, tau: float, *, method: str, q: float) -> FloatArray:
    """The p-values of construction ``kind`` (:data:`PVALUES`) for a search at FDR ``q`` with
    ``method``; those above ``q`` are returned as 1 (a larger p-value is still valid, and no
    procedure's threshold exceeds ``q``, so nothing rejected changes)."""
    ks_ = np.asarray(ks, dtype=np.float64)
    m = max(ks_.size, 1)
    if kind == "box":
        p = box_pvalues(ks, ns, kr, nr, tau, cap=min(q, 1.0 - 1e-12))
    elif kind == "joint":
        from fairprobe.discover.unconditional import joint_pvalues

        # the p-values that can matter first; the rest only if they could change the list
        p = joint_pvalues(ks, ns, kr, nr, tau, joint_gamma(q, m), cap=q,
                          settle=lambda v: step_up(v, q, method)[0],
                          first=20.0 * first_threshold(method, q, m))
    else:
        p = split_pvalues(ks, ns, kr, nr, tau, first_gamma(method, q, max(ks_.size, 1), ns, nr))
    return np.where(p <= q, p, 1.0)


def joint_gamma(q: float, m: int) -> float:
    """The rest's share of the joint test's level: a hundredth of the smallest first threshold
    of any procedure (BY's ``q / (m c_m)``), fixed by ``q`` and ``m``. The joint test hardly
    depends on it (module docstring of :mod:`fairprobe.discover.unconditional`)."""
    return q / (100.0 * m * harmonic(m))


def intervals(kind: str, ks: npt.ArrayLike, ns: npt.ArrayLike, kr: npt.ArrayLike,
              nr: npt.ArrayLike, level: float, *, method: str, q: float, m: int,
              tau: float = 0.0) -> tuple[FloatArray, FloatArray]:
    """The gap's interval matching construction ``kind`` at ``level`` (``m`` tests)."""
    if kind == "box":
        return box_interval(ks, ns, kr, nr, level)
    if kind == "joint":
        from fairprobe.discover.unconditional import joint_interval

        return joint_interval(ks, ns, kr, nr, level, joint_gamma(q, max(m, 1)), tau=tau)
    return split_interval(ks, ns, kr, nr, level, first_gamma(method, q, max(m, 1), ns, nr))
