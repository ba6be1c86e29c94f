r"""Simultaneous intervals over many groups: every pair, each group vs the rest, worst pair.

For one per-group rate (selection rate, TPR, ...) of :math:`k` groups the family of comparisons
is the :math:`\binom k2` pairwise differences (or ratios) and the :math:`k` comparisons of each
group with the rest; its intervals hold *all at once* with probability at least the confidence
level. Two constructions (``method``):

``"bonferroni"``
    Each of the :math:`m = \binom k2 + k` intervals at level :math:`1 - \alpha/m` (Bonferroni):
    Newcombe's hybrid score interval for differences, Koopman's score interval for ratios,
    Welch's interval for mean-score differences. Family-wise coverage
    :math:`\ge 1 - \sum_j \alpha_j` by the union bound when each interval keeps its level;
    measured by simulation in ``docs/stats.md``: it falls below nominal (0.93 at 95%) with
    groups of 20 at rates near 0, where Newcombe's and Koopman's intervals at high levels
    under-cover.
``"exact"`` (default of :class:`~fairprobe.stats.frame.AuditFrame`)
    Clopper-Pearson intervals for each of the :math:`s` distinct samples (the :math:`k` groups and
    their :math:`k` rests) at level :math:`1 - \alpha/s`; every comparison's interval is the range
    of the difference (ratio) over the two samples' intervals. All samples' rates lie in their
    intervals with probability :math:`\ge 1-\alpha` (union bound, exact binomial intervals), and
    then every interval of the family covers. For the groups this holds at every rate and size
    without asymptotics. A rest's count is a sum of binomials with different rates (its true
    rate: the size-weighted mean), whose tails are no heavier than the binomial's of the same
    mean (Hoeffding 1956) except within one unit of the mean; the measured coverage
    (``docs/stats.md``) stays >= 0.99 in every tested case. Wider than Bonferroni at large
    counts.

The worst pair's summary intervals follow from the family: the largest gap
:math:`\Delta = \max_{i,j}(p_i - p_j)` lies in
:math:`[\max(0, \max_{ij} l_{ij}),\ \max_{ij} u_{ij}]` and the smallest ratio
:math:`\rho = \min_{i,j} p_i/p_j` in :math:`[\min_{ij} l_{ij},\ \min(1, \min_{ij} u_{ij})]` over
ordered pairs, whenever the family covers.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from fairprobe.stats.exact import clopper_pearson_interval
from fairprobe.stats.intervals import newcombe_interval, score_ratio_interval, welch_interval

__all__ = ["SIMULTANEOUS_METHODS", "FamilyIntervals", "family_intervals"]

SIMULTANEOUS_METHODS = ("bonferroni", "exact")

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class FamilyIntervals:
    """Simultaneous intervals of one rate over ``k`` groups.

    ``pairs[j] = (i1, i2)`` with estimate ``est[j]`` of ``p_i1 - p_i2`` (or ``p_i1 / p_i2``)
    and interval ``[low[j], high[j]]``; ``rest_*`` the same for each group vs the rest.
    ``per_level`` is the level each single interval was computed at.
    """

    kind: Literal["difference", "ratio"]
    pairs: tuple[tuple[int, int], ...]
    est: FloatArray
    low: FloatArray
    high: FloatArray
    rest_est: FloatArray
    rest_low: FloatArray
    rest_high: FloatArray
    family_size: int
    per_level: float
    method: str

    def ordered(self) -> tuple[list[tuple[int, int]], FloatArray, FloatArray, FloatArray]:
        """Both orientations of every pair: ``(i, j)`` and ``(j, i)`` with their intervals."""
        pairs = list(self.pairs) + [(j, i) for i, j in self.pairs]
        if self.kind == "difference":
            est = np.concatenate([self.est, -self.est], axis=-1)
            lo = np.concatenate([self.low, -self.high], axis=-1)
            hi = np.concatenate([self.high, -self.low], axis=-1)
        else:
            with np.errstate(divide="ignore"):
                est = np.concatenate([self.est, 1.0 / self.est], axis=-1)
                lo = np.concatenate([self.low, 1.0 / self.high], axis=-1)
                hi = np.concatenate([self.high, 1.0 / self.low], axis=-1)
        return pairs, est, lo, hi


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
    pairs = tuple(itertools.combinations(range(g), 2))
    i1 = np.array([p[0] for p in pairs], dtype=np.int64)
    i2 = np.array([p[1] for p in pairs], dtype=np.int64)
    with_rest = rn > 0
    m = len(pairs) + int(with_rest.reshape(-1, g)[0].sum())
    alpha = (1.0 - confidence_level) * share
    p = kk / nn
    with np.errstate(divide="ignore", invalid="ignore"):
        pr = np.where(with_rest, rk / np.where(with_rest, rn, 1.0), np.nan)
    if kind == "difference":
        est, rest_est = p[..., i1] - p[..., i2], p - pr
    else:
        est, rest_est = _ratio(p[..., i1], p[..., i2]), _ratio(p, pr)
    if method == "bonferroni":
        level = 1.0 - alpha / max(m, 1)
        fn = newcombe_interval if kind == "difference" else score_ratio_interval
        lo, hi = fn(kk[..., i1], nn[..., i1], kk[..., i2], nn[..., i2], level)
        rn1 = np.maximum(rn, 1.0)
        rlo, rhi = fn(kk, nn, rk, rn1, level)
    elif method == "exact":
        # distinct samples: the g groups and the rests that are not themselves one of the groups
        # (with two groups and nothing else, each one's rest is the other group)
        two = g == 2 and bool(np.all(rn[..., 0] == nn[..., 1]) and np.all(rn[..., 1] == nn[..., 0]))
        s = g if two else g + int(with_rest.reshape(-1, g)[0].sum())
        level = 1.0 - alpha / max(s, 1)
        gl, gh = clopper_pearson_interval(kk, nn, level)
        rl, rh = clopper_pearson_interval(rk, np.maximum(rn, 1.0), level)
        if kind == "difference":
            lo, hi = gl[..., i1] - gh[..., i2], gh[..., i1] - gl[..., i2]
            rlo, rhi = gl - rh, gh - rl
        else:
            lo, hi = _ratio(gl[..., i1], gh[..., i2]), _ratio(gh[..., i1], gl[..., i2])
            rlo, rhi = _ratio(gl, rh), _ratio(gh, rl)
            hi = np.where(gl[..., i2] > 0, hi, np.inf)
            rhi = np.where(rl > 0, rhi, np.inf)
            lo = np.nan_to_num(lo, nan=0.0)
            rlo = np.nan_to_num(rlo, nan=0.0)
    else:
        raise ValueError(f"unknown simultaneous method {method!r}")
    rlo = np.where(with_rest, rlo, np.nan)
    rhi = np.where(with_rest, rhi, np.nan)
    return FamilyIntervals(
        kind=kind, pairs=pairs, est=np.asarray(est, dtype=np.float64),
        low=np.asarray(lo, dtype=np.float64), high=np.asarray(hi, dtype=np.float64),
        rest_est=np.asarray(rest_est, dtype=np.float64),
        rest_low=np.asarray(rlo, dtype=np.float64), rest_high=np.asarray(rhi, dtype=np.float64),
        family_size=m, per_level=float(level), method=method,
    )


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
    pairs = tuple(itertools.combinations(range(g), 2))
    i1 = np.array([p[0] for p in pairs], dtype=np.int64)
    i2 = np.array([p[1] for p in pairs], dtype=np.int64)
    with_rest = rn > 1
    m = len(pairs) + int(with_rest.sum())
    level = 1.0 - (1.0 - confidence_level) * share / max(m, 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        lo, hi = welch_interval(mu[i1], v[i1], nn[i1], mu[i2], v[i2], nn[i2], level)
        rlo, rhi = welch_interval(mu, v, nn, rmu, rv, np.maximum(rn, 2.0), level)
    return FamilyIntervals(
        kind="difference", pairs=pairs, est=mu[i1] - mu[i2], low=np.asarray(lo),
        high=np.asarray(hi), rest_est=mu - rmu,
        rest_low=np.where(with_rest, rlo, np.nan), rest_high=np.where(with_rest, rhi, np.nan),
        family_size=m, per_level=float(level), method="bonferroni",
    )


def worst_pair(fam: FamilyIntervals) -> dict[str, Any]:
    """The largest gap (difference) or smallest ratio over ordered pairs, with its interval.

    Returns ``{"estimate", "pair": (i, j), "low", "high"}`` (indices into the compared groups).
    """
    pairs, est, lo, hi = fam.ordered()
    if fam.kind == "difference":
        j = int(np.nanargmax(est))
        return {"estimate": float(est[j]), "pair": pairs[j],
                "low": max(0.0, float(np.nanmax(lo))), "high": float(np.nanmax(hi))}
    finite = np.where(np.isnan(est), np.inf, est)
    j = int(np.argmin(finite))
    return {"estimate": float(est[j]), "pair": pairs[j],
            "low": float(np.nanmin(lo)), "high": min(1.0, float(np.nanmin(hi)))}
