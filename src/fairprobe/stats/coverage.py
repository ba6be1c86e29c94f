"""Measured coverage: exact (by enumeration) for two groups, simulated for many groups.

Used by ``experiments/stats/`` (the full tables of ``docs/stats.md``) and by the tests that pin
them. Exact coverage of an interval method at rates ``(p1, p2)`` and sizes ``(A, B)`` is
``sum_{a,b} Bin(a; A, p1) Bin(b; B, p2) 1[theta(p1, p2) in CI(a, b)]``: every outcome enumerated,
no simulation error.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy import stats as sps

from fairprobe.stats.simultaneous import family_intervals

__all__ = ["exact_coverage_one", "exact_coverage_two", "simultaneous_coverage"]

FloatArray = npt.NDArray[np.float64]


def exact_coverage_one(
    method: Callable[..., tuple[Any, Any]], n: int, p: FloatArray, level: float = 0.95,
) -> tuple[FloatArray, FloatArray]:
    """Exact coverage and expected width of a one-proportion interval at each rate of ``p``."""
    k = np.arange(n + 1)
    lo, hi = method(k, np.full(n + 1, n), level)
    pmf = sps.binom.pmf(k[None, :], n, p[:, None])
    cover = (lo[None, :] <= p[:, None]) & (p[:, None] <= hi[None, :])
    return (pmf * cover).sum(axis=1), pmf @ (hi - lo)


def exact_coverage_two(
    method: Callable[..., tuple[Any, Any]],
    A: int,
    B: int,
    p1: FloatArray,
    p2: FloatArray,
    kind: str = "difference",
    level: float = 0.95,
) -> tuple[FloatArray, FloatArray]:
    """Exact coverage and expected (finite-capped) width at each rate pair ``(p1[i], p2[i])``.

    ``kind`` is ``"difference"`` (``theta = p1 - p2``) or ``"ratio"`` (``theta = p1 / p2``).
    Widths of ratio intervals are measured on the log scale, with infinite bounds capped at
    ``e^{+-10}``.
    """
    a, b = np.meshgrid(np.arange(A + 1), np.arange(B + 1), indexing="ij")
    lo, hi = method(a.ravel(), np.full(a.size, A), b.ravel(), np.full(a.size, B), level)
    lo = np.asarray(lo, dtype=np.float64).reshape(a.shape)
    hi = np.asarray(hi, dtype=np.float64).reshape(a.shape)
    pa = sps.binom.pmf(np.arange(A + 1)[None, :], A, p1[:, None])  # (m, A+1)
    pb = sps.binom.pmf(np.arange(B + 1)[None, :], B, p2[:, None])  # (m, B+1)
    theta = p1 - p2 if kind == "difference" else p1 / p2
    if kind == "difference":
        width = hi - lo
    else:
        with np.errstate(divide="ignore"):
            width = np.clip(np.log(hi), -10, 10) - np.clip(np.log(lo), -10, 10)
    cov = np.empty(p1.shape[0])
    wid = np.empty(p1.shape[0])
    for i in range(p1.shape[0]):  # one (A+1) x (B+1) table per rate pair, all outcomes at once
        joint = np.outer(pa[i], pb[i])
        inside = (lo <= theta[i]) & (theta[i] <= hi)
        cov[i] = float((joint * inside).sum())
        wid[i] = float((joint * width).sum())
    return cov, wid


def simultaneous_coverage(
    rates: npt.ArrayLike,
    sizes: npt.ArrayLike,
    *,
    reps: int,
    seed: int | list[int],
    method: str = "bonferroni",
    kind: str = "difference",
    level: float = 0.95,
) -> dict[str, float]:
    """Simulated family-wise coverage of the simultaneous intervals of ``k`` groups.

    Draws ``reps`` independent audits (binomial counts per group), builds the two families
    (:func:`family_intervals`): all pairwise comparisons, and each group vs the rest. Counts
    the draws where every pair interval covers its true value (``family``: the family the
    verdict comes from), where every rest interval covers (``rest_family``; the rest's true rate
    is the size-weighted mean of the other groups' rates), and where the worst-pair interval
    (largest gap, smallest ratio) covers the true worst value.

    Returns ``{"family", "rest_family", "worst"}`` coverages, their standard errors
    (``se_*``) and ``"width_worst"`` (mean width).
    """
    p = np.asarray(rates, dtype=np.float64)
    n = np.asarray(sizes, dtype=np.int64)
    g = p.shape[0]
    rng = np.random.default_rng(seed)
    k = rng.binomial(n[None, :], p[None, :], size=(reps, g))
    nn = np.broadcast_to(n, (reps, g))
    rk = k.sum(axis=1, keepdims=True) - k
    rn = nn.sum(axis=1, keepdims=True) - nn
    fam = family_intervals(k, nn, rk, rn, kind=kind,  # type: ignore[arg-type]
                           confidence_level=level, method=method)
    rest_p = (n * p).sum() - n * p
    rest_p = rest_p / (n.sum() - n)
    pairs, _, lo, hi = fam.ordered()
    i1 = np.array([q[0] for q in pairs])
    i2 = np.array([q[1] for q in pairs])
    if kind == "difference":
        true_pair = p[i1] - p[i2]
        true_rest = p - rest_p
        worst_true = p.max() - p.min()
        w_lo = np.maximum(0.0, lo.max(axis=1))
        w_hi = hi.max(axis=1)
    else:
        true_pair = p[i1] / p[i2]
        true_rest = p / rest_p
        worst_true = p.min() / p.max()
        w_lo = np.nan_to_num(lo, nan=0.0).min(axis=1)
        w_hi = np.minimum(1.0, np.nan_to_num(hi, nan=np.inf).min(axis=1))
    tol = 1e-12
    ok_pairs = ((lo <= true_pair + tol) & (true_pair - tol <= hi)).all(axis=1)
    ok_rest = ((fam.rest_low <= true_rest + tol) & (true_rest - tol <= fam.rest_high)).all(axis=1)
    fam_cov = float(ok_pairs.mean())
    rest_cov = float(ok_rest.mean())
    worst_cov = float(((w_lo <= worst_true + tol) & (worst_true - tol <= w_hi)).mean())
    width = w_hi - w_lo
    if kind == "ratio":
        width = np.where(np.isfinite(width), width, np.nan)
    return {
        "family": fam_cov,
        "rest_family": rest_cov,
        "worst": worst_cov,
        "se_family": float(np.sqrt(fam_cov * (1 - fam_cov) / reps)),
        "se_rest_family": float(np.sqrt(rest_cov * (1 - rest_cov) / reps)),
        "se_worst": float(np.sqrt(worst_cov * (1 - worst_cov) / reps)),
        "width_worst": float(np.nanmean(width)),
    }
