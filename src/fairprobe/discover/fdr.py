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

Benjamini-Yekutieli (default, ``by``)
    Reject the ``k`` smallest p-values, ``k`` the largest with ``p_(k) <= k q / (m c_m)``,
    ``c_m = 1 + 1/2 + ... + 1/m``. The expected share of true nulls among the rejected is at most
    ``q m0 / m <= q`` under ANY dependence between the p-values (Benjamini and Yekutieli 2001,
    Theorem 1.3): overlapping subgroups share rows, so their p-values are dependent in ways no
    positivity condition covers (a subgroup and its complement's parts move in opposite
    directions).

Benjamini-Hochberg (``bh``)
    The same with ``c_m = 1``: its FDR bound needs the p-values to be positively regression
    dependent (PRDS), which the two-sided p-values of overlapping subgroups are not in general;
    kept under its own name, its guarantee stated as conditional.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from scipy.special import betaincinv

__all__ = ["FDR_METHODS", "box_pvalues", "box_interval", "harmonic", "step_up"]

FloatArray = npt.NDArray[np.float64]

#: The false-discovery-rate procedures, with what their bound rests on.
FDR_METHODS = {
    "by": "any dependence (Benjamini-Yekutieli 2001, Theorem 1.3)",
    "bh": "positive regression dependence (PRDS) of the p-values, not guaranteed for "
          "overlapping subgroups",
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
                tau: float, *, iterations: int = 36) -> FloatArray:
    """Exact p-values of ``H0: |p_S - p_R| <= tau`` (module docstring), vectorised.

    Found by bisection on ``log a`` (the box shrinks as ``a`` grows, so "outside the band" is
    monotone in ``a``): 36 halvings of ``[-745, 0]`` fix ``p`` to a relative 1e-8, and the
    returned value is the upper end of the bracket, so it never errs small. ``1`` where even the
    point estimates lie in the band (the box never leaves it): most subgroups of a fair model,
    which cost no bisection.
    """
    ks_, ns_, kr_, nr_ = np.broadcast_arrays(*(np.asarray(x, dtype=np.float64)
                                               for x in (ks, ns, kr, nr)))
    p = np.ones(ks_.shape)
    # a < 1 keeps the boxes non-degenerate; at a -> 1 they shrink to the point estimates
    live = _outside(ks_, ns_, kr_, nr_, np.full(ks_.shape, 1.0 - 1e-12), tau)
    if not live.any():
        return p
    k1, n1, k2, n2 = ks_[live], ns_[live], kr_[live], nr_[live]
    lo = np.full(k1.shape, -745.0)  # log of the smallest positive double
    hi = np.zeros(k1.shape)
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


def step_up(p: npt.ArrayLike, q: float, method: str = "by") -> tuple[npt.NDArray[np.bool_],
                                                                       FloatArray, float]:
    """The step-up procedure: which hypotheses are rejected at FDR ``q``, the adjusted p-values,
    and the level ``k q / (m c)`` that each rejected p-value met (0 when none is rejected)."""
    pv = np.asarray(p, dtype=np.float64)
    m = pv.size
    if m == 0:
        return np.zeros(0, dtype=bool), np.zeros(0), 0.0
    c = harmonic(m) if method == "by" else 1.0
    order = np.argsort(pv, kind="stable")
    ranked = pv[order]
    ranks = np.arange(1, m + 1)
    passes = ranked <= ranks * q / (m * c)
    k = int(ranks[passes].max()) if passes.any() else 0
    reject = np.zeros(m, dtype=bool)
    reject[order[:k]] = True
    adj_sorted = np.minimum.accumulate((ranked * m * c / ranks)[::-1])[::-1]
    adjusted = np.empty(m)
    adjusted[order] = np.minimum(adj_sorted, 1.0)
    return reject, adjusted, (k * q / (m * c) if k else 0.0)
