r"""Simultaneous intervals over many groups: every pair, each group vs the rest, worst pair.

For one per-group rate (selection rate, TPR, ...) of :math:`k` groups there are two families:
the :math:`\binom k2` pairwise differences (or ratios), which the worst pair and the verdict come
from, and the :math:`k` comparisons of each group with the rest (a diagnostic). Each family's
intervals hold *all at once* with probability at least the confidence level; ``family_size``
counts the distinct pairwise comparisons only (with two groups: one). Two constructions
(``method``):

``"exact"`` (the default everywhere)
    With two groups, the pair's interval is the two-group exact interval (an unconditional
    exact test inverted, :mod:`fairprobe.stats.unconditional`). With :math:`k \ge 3`, the
    pairs: Clopper-Pearson intervals of the :math:`k` groups, independent samples, each at
    the Šidák level :math:`(1-\alpha)^{1/k}`; all :math:`k` rates lie in their intervals with
    probability :math:`\ge 1-\alpha`, and then every pair's interval (the range of the
    difference or ratio over the two groups' intervals) covers. This holds at every rate and
    size, by construction. The two-group and every-group forms of one question give the same
    interval and verdict. The rests overlap the groups:
    Clopper-Pearson intervals of the :math:`k` groups and their rests at the Bonferroni level
    :math:`1 - \alpha/s` (:math:`s` distinct samples). A rest's count is a sum of binomials with
    different rates (its true rate: the size-weighted mean), whose tails are no heavier than the
    binomial's of the same mean (Hoeffding 1956) except within one unit of the mean; the
    measured coverage (``docs/stats.md``) stays >= 0.99 in every tested case.
``"bonferroni"``
    Each of the :math:`\binom k2` pair intervals (and, separately, each of the rest intervals)
    at level :math:`1 - \alpha/m`: Newcombe's hybrid score interval for differences, Koopman's
    score interval for ratios, Welch's interval for mean-score differences. Narrower, but
    asymptotic: measured in ``docs/stats.md``, it falls below nominal (0.93 at 95%) with groups
    of 20 at rates near 0, where Newcombe's and Koopman's intervals under-cover.

The worst pair's summary intervals follow from the family: the largest gap
:math:`\Delta = \max_{i,j}(p_i - p_j)` lies in
:math:`[\max(0, \max_{ij} l_{ij}),\ \max_{ij} u_{ij}]` and the smallest ratio
:math:`\rho = \min_{i,j} p_i/p_j` in :math:`[\min_{ij} l_{ij},\ \min(1, \min_{ij} u_{ij})]` over
ordered pairs, whenever the family covers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from fairprobe.stats.exact import clopper_pearson_interval
from fairprobe.stats.intervals import newcombe_interval, score_ratio_interval, welch_interval
from fairprobe.stats.unconditional import (
    unconditional_difference_interval,
    unconditional_ratio_interval,
)

__all__ = ["SIMULTANEOUS_METHODS", "FamilyIntervals", "family_intervals"]

SIMULTANEOUS_METHODS = ("bonferroni", "exact")

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class FamilyIntervals:
    """Simultaneous intervals of one rate over ``k`` groups.

    ``pairs[j] = (i1, i2)`` with estimate ``est[j]`` of ``p_i1 - p_i2`` (or ``p_i1 / p_i2``)
    and interval ``[low[j], high[j]]``; ``rest_*`` the same for each group vs the rest.
    ``per_level`` is the level each single pair interval was computed at; ``family_size`` counts
    the distinct pairwise comparisons (the family the headline's level holds over). The
    each-vs-rest intervals are a second family (``rest_family_size`` comparisons, each at
    ``rest_level``), simultaneous at the same family-wise level; with two groups and nothing else
    a group's rest is the other group and they are the pair's interval, not new comparisons.
    """

    kind: Literal["difference", "ratio"]
    #: The pairs as two index arrays (``pairs[j] == (i1[j], i2[j])``): with many groups a tuple
    #: per pair would cost more memory than the intervals themselves.
    i1: npt.NDArray[np.int64]
    i2: npt.NDArray[np.int64]
    est: FloatArray
    low: FloatArray
    high: FloatArray
    rest_est: FloatArray
    rest_low: FloatArray
    rest_high: FloatArray
    family_size: int
    per_level: float
    method: str
    rest_family_size: int = 0
    rest_level: float = float("nan")

    @property
    def pairs(self) -> tuple[tuple[int, int], ...]:
        """Every pair ``(i1, i2)``, ``i1 < i2``, in the order of ``est``."""
        return tuple(zip(self.i1.tolist(), self.i2.tolist(), strict=True))

    def ordered(self) -> tuple[list[tuple[int, int]], FloatArray, FloatArray, FloatArray]:
        """Both orientations of every pair: ``(i, j)`` and ``(j, i)`` with their intervals."""
        pairs = list(self.pairs)
        pairs += [(j, i) for i, j in pairs]
        return (pairs, *self._ordered_arrays()[1:])

    def _ordered_arrays(self) -> tuple[None, FloatArray, FloatArray, FloatArray]:
        """:meth:`ordered` without the list of pairs: entry ``j < m`` is pair ``j``, entry
        ``m + j`` its reverse."""
        if self.kind == "difference":
            est = np.concatenate([self.est, -self.est], axis=-1)
            lo = np.concatenate([self.low, -self.high], axis=-1)
            hi = np.concatenate([self.high, -self.low], axis=-1)
        else:
            with np.errstate(divide="ignore"):
                est = np.concatenate([self.est, 1.0 / self.est], axis=-1)
                lo = np.concatenate([self.low, 1.0 / self.high], axis=-1)
                hi = np.concatenate([self.high, 1.0 / self.low], axis=-1)
        return None, est, lo, hi


def _pair_indices(g: int) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """``(i1, i2)`` of every pair ``i1 < i2`` of ``g`` groups, in ``itertools.combinations``
    order (row-major upper triangle)."""
    i1, i2 = np.triu_indices(g, k=1)
    return i1.astype(np.int64), i2.astype(np.int64)


def _ratio(x: FloatArray, y: FloatArray) -> FloatArray:
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(y > 0, x / np.where(y > 0, y, 1.0), np.where(x > 0, np.inf, np.nan))
    return np.asarray(r, dtype=np.float64)


def family_intervals(
    k: npt.ArrayLike,
    n: npt.ArrayLike,
    rest_k: npt.ArrayLike,
    rest_n: npt.ArrayLike,
    *,
    kind: Literal["difference", "ratio"] = "difference",
    confidence_level: float = 0.95,
    method: str = "bonferroni",
    extra_family: int = 0,
    share: float = 1.0,
) -> FamilyIntervals:
    """Simultaneous intervals of all pairs and each-vs-rest for proportions ``k / n``.

    Parameters
    ----------
    k, n : array of int, shape (..., g)
        Positives and totals of the ``g`` compared groups (``n >= 1``); leading axes are
        independent replicates (simulations) that share which rests are empty.
    rest_k, rest_n : array of int, shape (..., g)
        Positives and totals of each group's rest (every other instance, compared groups or not).
    kind : {"difference", "ratio"}
    confidence_level : float
        Family-wise level.
    method : {"bonferroni", "exact"}
    share : float in (0, 1]
        Fraction of the error budget ``alpha`` given to this family (e.g. 1/2 for each of the
        TPR and FPR families of equalized odds).
    """
    kk = np.asarray(k, dtype=np.float64)
    nn = np.asarray(n, dtype=np.float64)
    rk = np.asarray(rest_k, dtype=np.float64)
    rn = np.asarray(rest_n, dtype=np.float64)
    g = kk.shape[-1]
    i1, i2 = _pair_indices(g)
    with_rest = rn > 0
    # with two groups and nothing else, each one's rest is the other group: one comparison
    two = g == 2 and bool(np.all(rn[..., 0] == nn[..., 1]) and np.all(rn[..., 1] == nn[..., 0]))
    n_rest = 0 if two else int(with_rest.reshape(-1, g)[0].sum())
    m_pairs = int(i1.size)
    alpha = (1.0 - confidence_level) * share
    p = kk / nn
    with np.errstate(divide="ignore", invalid="ignore"):
        pr = np.where(with_rest, rk / np.where(with_rest, rn, 1.0), np.nan)
    if kind == "difference":
        est, rest_est = p[..., i1] - p[..., i2], p - pr
    else:
        est, rest_est = _ratio(p[..., i1], p[..., i2]), _ratio(p, pr)
    rn1 = np.maximum(rn, 1.0)
    if method == "bonferroni":
        level = 1.0 - alpha / max(m_pairs, 1)
        rest_level = level if two else 1.0 - alpha / max(n_rest, 1)
        fn = newcombe_interval if kind == "difference" else score_ratio_interval
        lo, hi = fn(kk[..., i1], nn[..., i1], kk[..., i2], nn[..., i2], level)
        rlo, rhi = fn(kk, nn, rk, rn1, rest_level)
    elif method == "exact" and g == 2:
        # one pair: the two-group exact interval (an unconditional exact test inverted), so
        # the two-group and every-group forms of a question give one interval and verdict
        level = 1.0 - alpha
        fn2 = unconditional_difference_interval if kind == "difference" \
            else unconditional_ratio_interval
        lo, hi = fn2(kk[..., :1], nn[..., :1], kk[..., 1:], nn[..., 1:], level)
        if two:
            rest_level = level
            if kind == "difference":
                rlo, rhi = np.concatenate([lo, -hi], -1), np.concatenate([hi, -lo], -1)
            else:
                with np.errstate(divide="ignore"):
                    rlo = np.concatenate([lo, 1.0 / hi], -1)
                    rhi = np.concatenate([hi, np.where(lo > 0, 1.0 / np.where(lo > 0, lo, 1.0),
                                                       np.inf)], -1)
        else:
            rest_level = 1.0 - alpha / max(g + n_rest, 1)
            sl, sh = clopper_pearson_interval(kk, nn, rest_level)
            rl, rh = clopper_pearson_interval(rk, rn1, rest_level)
            rlo, rhi = _box_contrast(sl, sh, rl, rh, kind)
    elif method == "exact":
        # the pairs: the g groups are independent samples, so Clopper-Pearson boxes at the
        # Sidak level (1 - alpha)^(1/g) hold all at once with probability >= 1 - alpha
        level = (1.0 - alpha) ** (1.0 / g)
        gl, gh = clopper_pearson_interval(kk, nn, level)
        lo, hi = _box_contrast(gl[..., i1], gh[..., i1], gl[..., i2], gh[..., i2], kind)
        if two:
            rest_level = level
            rlo, rhi = _box_contrast(gl, gh, gl[..., ::-1], gh[..., ::-1], kind)
        else:
            # a rest overlaps the groups: Bonferroni over the g groups and their n_rest rests
            rest_level = 1.0 - alpha / max(g + n_rest, 1)
            sl, sh = clopper_pearson_interval(kk, nn, rest_level)
            rl, rh = clopper_pearson_interval(rk, rn1, rest_level)
            rlo, rhi = _box_contrast(sl, sh, rl, rh, kind)
    else:
        raise ValueError(f"unknown simultaneous method {method!r}")
    rlo = np.where(with_rest, rlo, np.nan)
    rhi = np.where(with_rest, rhi, np.nan)
    return FamilyIntervals(
        kind=kind, i1=i1, i2=i2, est=np.asarray(est, dtype=np.float64),
        low=np.asarray(lo, dtype=np.float64), high=np.asarray(hi, dtype=np.float64),
        rest_est=np.asarray(rest_est, dtype=np.float64),
        rest_low=np.asarray(rlo, dtype=np.float64), rest_high=np.asarray(rhi, dtype=np.float64),
        family_size=m_pairs, per_level=float(level), method=method,
        rest_family_size=0 if two else n_rest, rest_level=float(rest_level),
    )


def _box_contrast(
    l1: FloatArray, u1: FloatArray, l2: FloatArray, u2: FloatArray,
    kind: Literal["difference", "ratio"],
) -> tuple[FloatArray, FloatArray]:
    """Range of ``p1 - p2`` (or ``p1 / p2``) over the box ``[l1, u1] x [l2, u2]``."""
    if kind == "difference":
        return l1 - u2, u1 - l2
    lo = np.nan_to_num(_ratio(l1, u2), nan=0.0)
    hi = np.where(l2 > 0, _ratio(u1, l2), np.inf)
    return np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)


def mean_family_intervals(
    mean: npt.ArrayLike, var: npt.ArrayLike, n: npt.ArrayLike,
    rest_mean: npt.ArrayLike, rest_var: npt.ArrayLike, rest_n: npt.ArrayLike,
    *,
    confidence_level: float = 0.95,
    share: float = 1.0,
) -> FamilyIntervals:
    """Bonferroni-adjusted Welch intervals of all pairwise and each-vs-rest mean differences."""
    mu, v, nn = (np.asarray(x, dtype=np.float64) for x in (mean, var, n))
    rmu, rv, rn = (np.asarray(x, dtype=np.float64) for x in (rest_mean, rest_var, rest_n))
    g = mu.shape[0]
    i1, i2 = _pair_indices(g)
    with_rest = rn > 1
    m = int(i1.size) + int(with_rest.sum())
    level = 1.0 - (1.0 - confidence_level) * share / max(m, 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        lo, hi = welch_interval(mu[i1], v[i1], nn[i1], mu[i2], v[i2], nn[i2], level)
        rlo, rhi = welch_interval(mu, v, nn, rmu, rv, np.maximum(rn, 2.0), level)
    return FamilyIntervals(
        kind="difference", i1=i1, i2=i2, est=mu[i1] - mu[i2], low=np.asarray(lo),
        high=np.asarray(hi), rest_est=mu - rmu,
        rest_low=np.where(with_rest, rlo, np.nan), rest_high=np.where(with_rest, rhi, np.nan),
        family_size=m, per_level=float(level), method="bonferroni",
    )


def worst_pair(fam: FamilyIntervals) -> dict[str, Any]:
    """The largest gap (difference) or smallest ratio over ordered pairs, with its interval.

    Returns ``{"estimate", "pair": (i, j), "low", "high"}`` (indices into the compared groups).
    """
    # over both orientations of every pair, as :meth:`FamilyIntervals.ordered`, but without a
    # tuple per pair (vectorised: it runs once per metric over up to max_groups^2 / 2 pairs)
    _, est, lo, hi = fam._ordered_arrays()
    m = fam.i1.size

    def pair(j: int) -> tuple[int, int]:
        a, b = int(fam.i1[j % m]), int(fam.i2[j % m])
        return (a, b) if j < m else (b, a)

    if fam.kind == "difference":
        j = int(np.nanargmax(est))
        return {"estimate": float(est[j]), "pair": pair(j),
                "low": max(0.0, float(np.nanmax(lo))), "high": float(np.nanmax(hi))}
    finite = np.where(np.isnan(est), np.inf, est)
    j = int(np.argmin(finite))
    return {"estimate": float(est[j]), "pair": pair(j),
            "low": float(np.nanmin(lo)), "high": min(1.0, float(np.nanmin(hi)))}
