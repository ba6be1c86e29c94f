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

Memory is linear in the groups: a family keeps per-group arrays (rates, and with ``"exact"`` the
Clopper-Pearson boxes) and computes a pair's interval when asked (:meth:`FamilyIntervals.pairs_for`).
The worst pair of an exact family comes from prefix extrema of the boxes in :math:`O(k)`; a
Bonferroni family's is a scan over blocks of rows (:math:`O(k^2)` time, :math:`O(k)` memory).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from fairprobe.stats.exact import clopper_pearson_interval
from fairprobe.stats.intervals import newcombe_interval, score_ratio_interval, welch_interval
from fairprobe.stats.unconditional import (
    unconditional_difference_interval,
    unconditional_ratio_interval,
)

__all__ = ["SIMULTANEOUS_METHODS", "FamilyIntervals", "extreme_pairs", "family_intervals",
           "worst_pair"]

SIMULTANEOUS_METHODS = ("bonferroni", "exact")

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
Kind = Literal["difference", "ratio"]
#: ``(i1, i2) -> (low, high)``: the intervals of the pairs ``(i1[j], i2[j])``, ``i1 < i2``.
IntervalFn = Callable[[IntArray, IntArray], tuple[FloatArray, FloatArray]]
Triple = tuple[FloatArray, FloatArray, FloatArray]

#: Pairs computed at once when a family is scanned pair by pair (a Bonferroni family's worst
#: pair, the listing of the most extreme pairs): the scan's memory is a few arrays this long.
PAIR_BLOCK = 1 << 18


def _ratio(x: FloatArray, y: FloatArray) -> FloatArray:
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(y > 0, x / np.where(y > 0, y, 1.0), np.where(x > 0, np.inf, np.nan))
    return np.asarray(r, dtype=np.float64)


def _contrast(x: FloatArray, y: FloatArray, kind: Kind) -> FloatArray:
    """A pair's estimate from the two groups' estimates: ``x - y`` or ``x / y``."""
    return np.asarray(x - y, dtype=np.float64) if kind == "difference" else _ratio(x, y)


def _reverse(kind: Kind, est: FloatArray, lo: FloatArray, hi: FloatArray) -> Triple:
    """The pairs read the other way round, ``(j, i)`` for ``(i, j)``."""
    if kind == "difference":
        return -est, -hi, -lo
    with np.errstate(divide="ignore"):
        return 1.0 / est, 1.0 / hi, 1.0 / lo


def _pair_indices(g: int) -> tuple[IntArray, IntArray]:
    """``(i1, i2)`` of every pair ``i1 < i2`` of ``g`` groups, in ``itertools.combinations``
    order (row-major upper triangle)."""
    i1, i2 = np.triu_indices(g, k=1)
    return i1.astype(np.int64), i2.astype(np.int64)


def _row_pairs(rows: IntArray, g: int) -> tuple[IntArray, IntArray]:
    """Every pair ``(i, j)``, ``j > i``, of the given rows ``i``, row after row: with ascending
    rows, a stretch of :func:`_pair_indices`' order."""
    rows = np.asarray(rows, dtype=np.int64)
    cnt = g - 1 - rows
    i1 = np.repeat(rows, cnt)
    start = np.repeat(np.cumsum(cnt) - cnt, cnt)
    return i1, i1 + 1 + (np.arange(i1.size, dtype=np.int64) - start)


def _row_blocks(rows: IntArray, g: int, block: int = PAIR_BLOCK) -> Iterator[IntArray]:
    """Consecutive runs of ``rows`` holding about ``block`` pairs each (at least one row)."""
    cum = np.cumsum(g - 1 - rows)
    a = 0
    while a < rows.size:
        base = cum[a - 1] if a else 0
        b = max(int(np.searchsorted(cum, base + block, side="right")), a + 1)
        yield rows[a:b]
        a = b


@dataclass(frozen=True)
class FamilyIntervals:
    """Simultaneous intervals of one rate over ``k`` groups.

    The pairs are not stored: :meth:`pairs_for` computes the estimate of ``p_i1 - p_i2`` (or
    ``p_i1 / p_i2``) and the interval of any pairs from per-group arrays, so a family takes
    memory linear in ``k``. ``rest_*`` are each group vs the rest. ``per_level`` is the level
    each single pair interval was computed at; ``family_size`` counts the distinct pairwise
    comparisons (the family the headline's level holds over). The each-vs-rest intervals are a
    second family (``rest_family_size`` comparisons, each at ``rest_level``), simultaneous at
    the same family-wise level; with two groups and nothing else a group's rest is the other
    group and they are the pair's interval, not new comparisons.

    ``i1``, ``i2``, ``est``, ``low``, ``high``, :attr:`pairs` and :meth:`ordered` materialise all
    ``k(k-1)/2`` pairs (for few groups and simulations); :func:`worst_pair` and
    :func:`extreme_pairs` do not.
    """

    kind: Kind
    #: Each group's estimate (rate or mean), shape ``(..., k)`` (leading axes: replicates).
    values: FloatArray
    rest_est: FloatArray
    rest_low: FloatArray
    rest_high: FloatArray
    family_size: int
    per_level: float
    method: str
    rest_family_size: int = 0
    rest_level: float = float("nan")
    #: The pairs' intervals from the groups' indices (not used when ``boxes`` is set).
    interval_fn: IntervalFn | None = field(default=None, repr=False, compare=False)
    #: Exact families of ``k >= 3``: each group's simultaneous box ``(low, high)``; a pair's
    #: interval is the range of the contrast over its two boxes (:func:`_box_contrast`).
    boxes: tuple[FloatArray, FloatArray] | None = field(default=None, repr=False,
                                                        compare=False)
    #: Groups without a reported interval: every pair one of them enters spans every value.
    thin: npt.NDArray[np.bool_] | None = field(default=None, repr=False, compare=False)

    @property
    def n_groups(self) -> int:
        return int(self.values.shape[-1])

    @property
    def n_pairs(self) -> int:
        """``k(k-1)/2``, the pairs :meth:`pairs_for` can be asked about."""
        return self.n_groups * (self.n_groups - 1) // 2

    def pairs_for(self, i1: npt.ArrayLike, i2: npt.ArrayLike) -> Triple:
        """``(estimate, low, high)`` of the pairs ``(i1[j], i2[j])`` (``i1 < i2``, 1-d arrays)."""
        a = np.asarray(i1, dtype=np.int64).reshape(-1)
        b = np.asarray(i2, dtype=np.int64).reshape(-1)
        est = _contrast(self.values[..., a], self.values[..., b], self.kind)
        if self.boxes is not None:
            gl, gh = self.boxes
            lo, hi = _box_contrast(gl[..., a], gh[..., a], gl[..., b], gh[..., b], self.kind)
        else:
            assert self.interval_fn is not None
            lo, hi = self.interval_fn(a, b)
        if self.thin is not None:
            pt = self.thin[a] | self.thin[b]
            full = (-1.0, 1.0) if self.kind == "difference" else (0.0, np.inf)
            lo, hi = np.where(pt, full[0], lo), np.where(pt, full[1], hi)
        return (est, np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64))

    def ordered_for(self, a: npt.ArrayLike, b: npt.ArrayLike) -> Triple:
        """``(estimate, low, high)`` of the ordered pairs ``a[j] -> b[j]`` (``a != b``): the pair
        ``(min, max)`` read the other way round where ``a > b``, as in :meth:`ordered`."""
        aa = np.asarray(a, dtype=np.int64).reshape(-1)
        bb = np.asarray(b, dtype=np.int64).reshape(-1)
        fwd = self.pairs_for(np.minimum(aa, bb), np.maximum(aa, bb))
        rev = _reverse(self.kind, *fwd)
        flip = aa > bb
        e, lo, hi = (np.where(flip, r, f) for f, r in zip(fwd, rev, strict=True))
        return e, lo, hi

    @functools.cached_property
    def _all(self) -> tuple[IntArray, IntArray, FloatArray, FloatArray, FloatArray]:
        i1, i2 = _pair_indices(self.n_groups)
        return (i1, i2, *self.pairs_for(i1, i2))

    @property
    def i1(self) -> IntArray:
        """First group of every pair (materialised): ``pairs[j] == (i1[j], i2[j])``."""
        return self._all[0]

    @property
    def i2(self) -> IntArray:
        return self._all[1]

    @property
    def est(self) -> FloatArray:
        return self._all[2]

    @property
    def low(self) -> FloatArray:
        return self._all[3]

    @property
    def high(self) -> FloatArray:
        return self._all[4]

    @property
    def pairs(self) -> tuple[tuple[int, int], ...]:
        """Every pair ``(i1, i2)``, ``i1 < i2``, in the order of ``est``."""
        return tuple(zip(self.i1.tolist(), self.i2.tolist(), strict=True))

    def ordered(self) -> tuple[list[tuple[int, int]], FloatArray, FloatArray, FloatArray]:
        """Both orientations of every pair: ``(i, j)`` and ``(j, i)`` with their intervals
        (materialised: entry ``j < m`` is pair ``j``, entry ``m + j`` its reverse)."""
        pairs = list(self.pairs)
        pairs += [(j, i) for i, j in pairs]
        rev = _reverse(self.kind, self.est, self.low, self.high)
        est, lo, hi = (np.concatenate([f, r], axis=-1)
                       for f, r in zip((self.est, self.low, self.high), rev, strict=True))
        return pairs, est, lo, hi


def family_intervals(
    k: npt.ArrayLike,
    n: npt.ArrayLike,
    rest_k: npt.ArrayLike,
    rest_n: npt.ArrayLike,
    *,
    kind: Kind = "difference",
    confidence_level: float = 0.95,
    method: str = "bonferroni",
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
    with_rest = rn > 0
    # with two groups and nothing else, each one's rest is the other group: one comparison
    two = g == 2 and bool(np.all(rn[..., 0] == nn[..., 1]) and np.all(rn[..., 1] == nn[..., 0]))
    n_rest = 0 if two else int(with_rest.reshape(-1, g)[0].sum())
    m_pairs = g * (g - 1) // 2
    alpha = (1.0 - confidence_level) * share
    p = kk / nn
    with np.errstate(divide="ignore", invalid="ignore"):
        pr = np.where(with_rest, rk / np.where(with_rest, rn, 1.0), np.nan)
    rest_est = _contrast(p, pr, kind)
    rn1 = np.maximum(rn, 1.0)
    interval_fn: IntervalFn | None = None
    boxes: tuple[FloatArray, FloatArray] | None = None
    if method == "bonferroni":
        level = 1.0 - alpha / max(m_pairs, 1)
        rest_level = level if two else 1.0 - alpha / max(n_rest, 1)
        fn = newcombe_interval if kind == "difference" else score_ratio_interval

        def interval_fn(a: IntArray, b: IntArray) -> tuple[FloatArray, FloatArray]:
            return fn(kk[..., a], nn[..., a], kk[..., b], nn[..., b], level)

        rlo, rhi = fn(kk, nn, rk, rn1, rest_level)
    elif method == "exact" and g == 2:
        # one pair: the two-group exact interval (an unconditional exact test inverted), so
        # the two-group and every-group forms of a question give one interval and verdict
        level = 1.0 - alpha
        fn2 = unconditional_difference_interval if kind == "difference" \
            else unconditional_ratio_interval
        lo, hi = fn2(kk[..., :1], nn[..., :1], kk[..., 1:], nn[..., 1:], level)
        lo, hi = np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)

        def interval_fn(a: IntArray, b: IntArray) -> tuple[FloatArray, FloatArray]:
            j = np.zeros(a.size, dtype=np.int64)  # the one pair (0, 1)
            return lo[..., j], hi[..., j]

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
        boxes = (np.asarray(gl, dtype=np.float64), np.asarray(gh, dtype=np.float64))
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
        kind=kind, values=p, rest_est=np.asarray(rest_est, dtype=np.float64),
        rest_low=np.asarray(rlo, dtype=np.float64), rest_high=np.asarray(rhi, dtype=np.float64),
        family_size=m_pairs, per_level=float(level), method=method,
        rest_family_size=0 if two else n_rest, rest_level=float(rest_level),
        interval_fn=interval_fn, boxes=boxes,
    )


def _box_lo(l1: FloatArray, u2: FloatArray) -> FloatArray:
    """Smallest ratio ``p1 / p2`` over ``p1 >= l1``, ``p2 <= u2``."""
    return np.asarray(np.nan_to_num(_ratio(l1, u2), nan=0.0), dtype=np.float64)


def _box_hi(u1: FloatArray, l2: FloatArray) -> FloatArray:
    """Largest ratio ``p1 / p2`` over ``p1 <= u1``, ``p2 >= l2``."""
    return np.asarray(np.where(l2 > 0, _ratio(u1, l2), np.inf), dtype=np.float64)


def _box_contrast(
    l1: FloatArray, u1: FloatArray, l2: FloatArray, u2: FloatArray, kind: Kind,
) -> tuple[FloatArray, FloatArray]:
    """Range of ``p1 - p2`` (or ``p1 / p2``) over the box ``[l1, u1] x [l2, u2]``."""
    if kind == "difference":
        return l1 - u2, u1 - l2
    return _box_lo(l1, u2), _box_hi(u1, l2)


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
    with_rest = rn > 1
    m = g * (g - 1) // 2 + int(with_rest.sum())
    level = 1.0 - (1.0 - confidence_level) * share / max(m, 1)

    def interval_fn(a: IntArray, b: IntArray) -> tuple[FloatArray, FloatArray]:
        with np.errstate(divide="ignore", invalid="ignore"):
            lo, hi = welch_interval(mu[a], v[a], nn[a], mu[b], v[b], nn[b], level)
        return np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)

    with np.errstate(divide="ignore", invalid="ignore"):
        rlo, rhi = welch_interval(mu, v, nn, rmu, rv, np.maximum(rn, 2.0), level)
    return FamilyIntervals(
        kind="difference", values=mu, rest_est=mu - rmu,
        rest_low=np.where(with_rest, rlo, np.nan), rest_high=np.where(with_rest, rhi, np.nan),
        family_size=m, per_level=float(level), method="bonferroni", interval_fn=interval_fn,
    )


# --- worst pair and most extreme pairs without forming the pairs ------------------------------
#
# Every pair quantity below is f(x_i, y_j) over i < j with f monotone in each argument (a
# difference, a ratio, a box bound). Rounding is monotone too, so the extreme of f over i < j is
# f(prefix extreme of x, y_j) at some j, computed with the very operations that would give
# each pair's value: the results equal those of the materialised pairs bit for bit.

_PairFn = Callable[[FloatArray, FloatArray], FloatArray]


def _accumulate(x: FloatArray, best: str) -> FloatArray:
    return (np.maximum if best == "max" else np.minimum).accumulate(x)


def _suffix(x: FloatArray, best: str) -> FloatArray:
    return _accumulate(x[::-1], best)[::-1]


def _upper_extreme(x: FloatArray, y: FloatArray, f: _PairFn, xbest: str, want: str) -> float:
    """``want`` (max or min) of ``f(x[i], y[j])`` over ``i < j``, where ``f`` is monotone in
    its first argument so that the ``xbest`` of ``x[:j]`` is the best partner of every ``y[j]``."""
    with np.errstate(divide="ignore", invalid="ignore"):
        v = f(_accumulate(x, xbest)[:-1], y[1:])
    return float(np.max(v) if want == "max" else np.min(v))


def _first_upper(p: FloatArray, f: _PairFn, ybest: str, target: float) -> tuple[int, int]:
    """The first pair ``(i, j)``, ``i < j`` in :func:`_pair_indices` order, with
    ``f(p[i], p[j]) == target`` (an extreme of ``f``; the ``ybest`` of ``p[i+1:]`` attains
    row ``i``'s own extreme)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        rows = f(p[:-1], _suffix(p, ybest)[1:])
        i = int(np.flatnonzero(rows == target)[0])
        j = i + 1 + int(np.flatnonzero(f(p[i:i + 1], p[i + 1:]) == target)[0])
    return i, j


def _inf_for_nan(x: FloatArray) -> FloatArray:
    return np.where(np.isnan(x), np.inf, x)


def _sub(x: FloatArray, y: FloatArray) -> FloatArray:
    return x - y


def _neg_sub(x: FloatArray, y: FloatArray) -> FloatArray:
    return -(x - y)


def _ratio_min(x: FloatArray, y: FloatArray) -> FloatArray:
    return _inf_for_nan(_ratio(x, y))


def _inv_ratio_min(x: FloatArray, y: FloatArray) -> FloatArray:
    return _inf_for_nan(1.0 / _ratio(x, y))


def _inv_box_hi(x: FloatArray, y: FloatArray) -> FloatArray:
    return 1.0 / _box_hi(x, y)


def _inv_box_lo(x: FloatArray, y: FloatArray) -> FloatArray:
    return 1.0 / _box_lo(x, y)


def _bound_extremes(fam: FamilyIntervals) -> tuple[float, float]:
    """Extremes of the low and high ends over both orientations of every pair: the largest
    (differences) or smallest (ratios) of each, NaN ignored, as ``nanmax``/``nanmin`` of
    :meth:`FamilyIntervals.ordered`'s arrays."""
    diff = fam.kind == "difference"
    g = fam.n_groups
    if fam.boxes is None:  # a scan over blocks of rows: O(k^2) time, O(k) memory
        red = np.fmax.reduce if diff else np.fmin.reduce  # NaN-ignoring, as nanmax / nanmin
        los, his = [], []
        for rows in _row_blocks(np.arange(g - 1, dtype=np.int64), g):
            fwd = fam.pairs_for(*_row_pairs(rows, g))
            _, rlo, rhi = _reverse(fam.kind, *fwd)
            los.append(red(np.concatenate([fwd[1], rlo])))
            his.append(red(np.concatenate([fwd[2], rhi])))
        return float(red(np.array(los))), float(red(np.array(his)))
    lb, ub = fam.boxes
    thin = fam.thin
    if thin is not None:
        keep = np.flatnonzero(~thin)
        lb, ub = lb[keep], ub[keep]
    lo_c: list[float] = []
    hi_c: list[float] = []
    if thin is not None and thin.any():  # a pair with a thin group spans every value
        lo_c.append(-1.0 if diff else 0.0)
        hi_c.append(1.0 if diff else np.inf)
    if lb.size >= 2:
        if diff:  # low ends: l_i - u_j and -(u_i - l_j); high ends: u_i - l_j, -(l_i - u_j)
            lo_c += [_upper_extreme(lb, ub, _sub, "max", "max"),
                     _upper_extreme(ub, lb, _neg_sub, "min", "max")]
            hi_c += [_upper_extreme(ub, lb, _sub, "max", "max"),
                     _upper_extreme(lb, ub, _neg_sub, "min", "max")]
        else:  # low ends: lo(l_i, u_j) and 1 / hi(u_i, l_j); high ends: hi(u_i, l_j), 1 / lo
            lo_c += [_upper_extreme(lb, ub, _box_lo, "min", "min"),
                     _upper_extreme(ub, lb, _inv_box_hi, "max", "min")]
            hi_c += [_upper_extreme(ub, lb, _box_hi, "min", "min"),
                     _upper_extreme(lb, ub, _inv_box_lo, "max", "min")]
    pick = max if diff else min
    return pick(lo_c), pick(hi_c)


def _worst_pair_materialised(fam: FamilyIntervals) -> dict[str, Any]:
    pairs, est, lo, hi = fam.ordered()
    if fam.kind == "difference":
        j = int(np.nanargmax(est))
        return {"estimate": float(est[j]), "pair": pairs[j],
                "low": max(0.0, float(np.nanmax(lo))), "high": float(np.nanmax(hi))}
    j = int(np.argmin(np.where(np.isnan(est), np.inf, est)))
    return {"estimate": float(est[j]), "pair": pairs[j],
            "low": float(np.nanmin(lo)), "high": min(1.0, float(np.nanmin(hi)))}


def worst_pair(fam: FamilyIntervals) -> dict[str, Any]:
    """The largest gap (difference) or smallest ratio over ordered pairs, with its interval.

    Returns ``{"estimate", "pair": (i, j), "low", "high"}`` (indices into the compared groups):
    the first extreme pair in :meth:`FamilyIntervals.ordered`'s order (every pair ``(i, j)``,
    ``i < j``, then every reversed pair), and the interval
    ``[max(0, max low), max high]`` (``[min low, min(1, min high)]`` for ratios) over both
    orientations of every pair. Without forming the pairs: :math:`O(k)` for the estimate and
    for an exact family's interval, a scan over blocks of rows for a Bonferroni family's.
    """
    p = fam.values
    if p.ndim != 1:  # replicates (simulations of few groups)
        return _worst_pair_materialised(fam)
    if fam.kind == "difference":
        f_fwd, f_rev, ybest = _sub, _neg_sub, ("min", "max")
        m_fwd = _upper_extreme(p, p, _sub, "max", "max")
        m_rev = _upper_extreme(p, p, _neg_sub, "min", "max")
        use_rev = m_rev > m_fwd
    else:
        f_fwd, f_rev, ybest = _ratio_min, _inv_ratio_min, ("max", "min")
        m_fwd = _upper_extreme(p, p, _ratio_min, "min", "min")
        m_rev = _upper_extreme(p, p, _inv_ratio_min, "max", "min")
        use_rev = m_rev < m_fwd
    a, b = _first_upper(p, f_rev if use_rev else f_fwd, ybest[1] if use_rev else ybest[0],
                        m_rev if use_rev else m_fwd)
    est = _contrast(p[[a]], p[[b]], fam.kind)
    if use_rev:
        est = _reverse(fam.kind, est, est, est)[0]
    lo, hi = _bound_extremes(fam)
    if fam.kind == "difference":
        return {"estimate": float(est[0]), "pair": (b, a) if use_rev else (a, b),
                "low": max(0.0, lo), "high": hi}
    return {"estimate": float(est[0]), "pair": (b, a) if use_rev else (a, b),
            "low": lo, "high": min(1.0, hi)}


def _severity(est: FloatArray, kind: Kind) -> FloatArray:
    """How extreme a pair is: ``|gap|``, or ``-min(ratio, 1/ratio)`` (NaN: least extreme)."""
    if kind == "difference":
        sev = np.abs(est)
    else:
        with np.errstate(divide="ignore", invalid="ignore"):
            sev = -np.minimum(est, 1.0 / est)
    return np.where(np.isnan(sev), -np.inf, sev)


def extreme_pairs(fams: Sequence[FamilyIntervals], cap: int) -> list[tuple[int, int, int]]:
    """``(family, i, j)`` of the pairs a summary lists over several families of 1-d values.

    Every pair, family after family in :func:`_pair_indices` order, when there are at most
    ``cap``; else the ``cap`` most extreme (largest ``|gap|``, or smallest ratio in either
    orientation, by :func:`_severity`), most extreme first, ties in family order and then pair
    order. Without forming the pairs: a pair's severity is V-shaped in its partner's value
    (largest at the smallest or largest), so each row's largest severity over later partners
    comes from suffix extrema; rows that cannot beat the current ``cap``-th are skipped, the
    others scanned in blocks.
    """
    if sum(f.n_pairs for f in fams) <= cap:
        out: list[tuple[int, int, int]] = []
        for r, f in enumerate(fams):
            i1, i2 = _pair_indices(f.n_groups)
            out += [(r, a, b) for a, b in zip(i1.tolist(), i2.tolist(), strict=True)]
        return out

    def sev(f: FamilyIntervals, x: FloatArray, y: FloatArray) -> FloatArray:
        return _severity(_contrast(x, y, f.kind), f.kind)

    # a floor under the cap-th largest severity: the pairs among each family's few lowest and
    # highest values (real pairs, so at least cap of them reach it)
    seeds = []
    for f in fams:
        c = min(cap, f.n_groups, 256)
        order = np.argsort(f.values, kind="stable")
        s = np.unique(np.concatenate([order[:c], order[-c:]]))
        a, b = np.triu_indices(s.size, k=1)
        seeds.append(sev(f, f.values[s[a]], f.values[s[b]]))
    seed = np.concatenate(seeds)
    floor = float(np.sort(seed)[-cap]) if seed.size >= cap else -np.inf
    k_sev = np.empty(0)
    k_r = np.empty(0, dtype=np.int64)
    k_i = np.empty(0, dtype=np.int64)
    k_j = np.empty(0, dtype=np.int64)
    for r, f in enumerate(fams):
        p, g = f.values, f.n_groups
        rows = np.arange(g - 1, dtype=np.int64)
        bound = np.maximum(sev(f, p[:-1], _suffix(p, "min")[1:]),
                           sev(f, p[:-1], _suffix(p, "max")[1:]))
        cand = rows[bound >= floor]
        pos = 0
        while pos < cand.size:
            full = k_sev.size >= cap
            thr = float(k_sev[cap - 1]) if full else floor
            rest = cand[pos:]
            # once full, a later pair must beat the cap-th outright (ties go to the earlier)
            rest = rest[bound[rest] > thr] if full else rest[bound[rest] >= thr]
            if rest.size == 0:
                break
            blk = next(_row_blocks(rest, g))
            pos = int(np.searchsorted(cand, blk[-1], side="right"))
            i1, i2 = _row_pairs(blk, g)
            s_ = sev(f, p[i1], p[i2])
            m = s_ > thr if full else s_ >= thr
            k_sev = np.concatenate([k_sev, s_[m]])
            k_r = np.concatenate([k_r, np.full(int(m.sum()), r, dtype=np.int64)])
            k_i = np.concatenate([k_i, i1[m]])
            k_j = np.concatenate([k_j, i2[m]])
            top = np.lexsort((k_j, k_i, k_r, -k_sev))[:cap]
            k_sev, k_r, k_i, k_j = k_sev[top], k_r[top], k_i[top], k_j[top]
    return list(zip(k_r.tolist(), k_i.tolist(), k_j.tolist(), strict=True))
