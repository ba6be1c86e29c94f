r"""One confidence region for a question's per-group rates, every summary read off it.

The headline (:mod:`fairprobe.stats.headline`) charges a question once when all its findings
are functions of the same per-group rates on the same answers (demographic parity and disparate
impact of the same selection rates). That is valid only if their intervals come from **one**
region that covers all the rates at once: when it covers, every interval read off it covers.

:class:`RateBox` is that region, a simultaneous box. For :math:`r` rates over :math:`k` groups
with counts :math:`x_{gj}` of :math:`n_{gj}`, each cell gets an exact Clopper-Pearson interval
:math:`[l_{gj}, u_{gj}]` at level :math:`(1 - \alpha/r)^{1/k}`: the :math:`k` groups are
independent samples, so all :math:`k` intervals of one rate hold at once with probability
:math:`\ge 1-\alpha/r` (Šidák 1967, exact for independent events), and by Bonferroni over the
rates (which may share rows) all :math:`rk` hold with probability :math:`\ge 1 - \alpha`.
Whenever every :math:`p_{gj} \in [l_{gj}, u_{gj}]`:

* the largest gap :math:`\Delta_j = \max_g p_{gj} - \min_g p_{gj}` lies in
  :math:`[\max(0, \max_{g \ne h} l_{gj} - u_{hj}),\ \max_{g \ne h} u_{gj} - l_{hj}]`, because
  :math:`\Delta_j \ge p_{gj} - p_{hj} \ge l_{gj} - u_{hj}` for every pair and
  :math:`\Delta_j = p_{gj} - p_{hj} \le u_{gj} - l_{hj}` for the pair attaining it;
* the smallest ratio :math:`\rho_j = \min_g p_{gj} / \max_g p_{gj}` lies in
  :math:`[\min_{g \ne h} l_{gj} / u_{hj},\ \min(1, \min_{g \ne h} u_{gj} / l_{hj})]` by the
  same argument;
* over several rates (equalized odds) the summary is the largest gap (smallest ratio) over
  them, whose interval is the largest (smallest) of the endpoints.

With :math:`k \ge 3` groups these are exactly the worst-pair summaries of the ``"exact"``
family of :mod:`fairprobe.stats.simultaneous` (the same box), so sharing costs no width. With two
groups the family uses the tighter two-group exact interval instead (the unconditional test
inverted), which at half the level is still narrower than this box at the full level; the
report therefore builds a shared region only for three or more groups
(:func:`fairprobe.stats.refit.rate_box`), a choice fixed by the design, not by the data.

References
----------
.. [CP] C. J. Clopper, E. S. Pearson (1934). Biometrika 26(4), 404-413.
.. [S] Z. Šidák (1967). Rectangular confidence regions for the means of multivariate normal
   distributions. JASA 62, 626-633.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from fairprobe.errors import InvalidParameterError
from fairprobe.stats.exact import clopper_pearson_interval

__all__ = ["RateBox"]

FloatArray = npt.NDArray[np.float64]


def _max_pair(x: FloatArray, y: FloatArray, sign: float) -> float:
    """``max_{g != h} sign * f`` for ``f = x[g] - y[h]`` (``sign`` 1) — O(k) by the two best of
    each side."""
    ix = np.argsort(-x, kind="stable")[:2]
    iy = np.argsort(y, kind="stable")[:2]
    best = -math.inf
    for g in ix:
        for h in iy:
            if g != h:
                best = max(best, float(x[g] - y[h]))
    return sign * best


def _min_ratio(x: FloatArray, y: FloatArray) -> float:
    """``min_{g != h} x[g] / y[h]`` with ``x >= 0, y >= 0`` (``x/0 = inf``, ``0/0 = inf``)."""
    ix = np.argsort(x, kind="stable")[:2]
    iy = np.argsort(-y, kind="stable")[:2]
    best = math.inf
    for g in ix:
        for h in iy:
            if g != h:
                best = min(best, float(x[g]) / float(y[h]) if y[h] > 0 else math.inf)
    return best


@dataclass(frozen=True)
class RateBox:
    """The counts one region is built from: ``counts[j][g] = (x, n)`` for rate ``rates[j]`` and
    group ``groups[g]``. Equal boxes are the same region (the headline's test for "same rates on
    the same answers")."""

    rates: tuple[str, ...]
    groups: tuple[str, ...]
    counts: tuple[tuple[tuple[int, int], ...], ...]

    def __post_init__(self) -> None:
        if len(self.groups) < 2 or not self.rates or len(self.counts) != len(self.rates) or any(
                len(c) != len(self.groups) for c in self.counts):
            raise InvalidParameterError("RateBox: one (x, n) per group and rate, >= 2 groups.")
        if any(n < 1 or not 0 <= x <= n for c in self.counts for x, n in c):
            raise InvalidParameterError("RateBox: every cell needs n >= 1 and 0 <= x <= n.")

    def box(self, confidence_level: float) -> tuple[FloatArray, FloatArray]:
        """``(low, high)``, arrays of shape ``(rates, groups)``: all cells covered at once with
        probability ``>= confidence_level``."""
        a = 1.0 - float(confidence_level)
        each = (1.0 - a / len(self.rates)) ** (1.0 / len(self.groups))
        c = np.asarray(self.counts, dtype=np.float64)
        lo, hi = clopper_pearson_interval(c[..., 0], c[..., 1], each)
        return lo, hi

    def interval(self, kind: Literal["difference", "ratio"],
                 confidence_level: float) -> tuple[float, float]:
        """The largest gap's (``difference``) or the smallest ratio's (``ratio``) interval read
        off the box at ``confidence_level`` (formulas in the module docstring)."""
        lo, hi = self.box(confidence_level)
        if kind == "difference":
            lows = [max(0.0, _max_pair(lo[j], hi[j], 1.0)) for j in range(len(self.rates))]
            highs = [_max_pair(hi[j], lo[j], 1.0) for j in range(len(self.rates))]
            return max(lows), max(highs)
        if kind == "ratio":
            lows = [_min_ratio(lo[j], hi[j]) for j in range(len(self.rates))]
            highs = [min(1.0, _min_ratio(hi[j], lo[j])) for j in range(len(self.rates))]
            return min(lows), min(highs)
        raise InvalidParameterError(f"RateBox.interval: kind {kind!r} is not difference/ratio.")

    def estimate(self, kind: Literal["difference", "ratio"]) -> float:
        """The point summary (largest gap or smallest ratio) of the observed rates."""
        c = np.asarray(self.counts, dtype=np.float64)
        p = c[..., 0] / c[..., 1]
        if kind == "difference":
            return float(np.max(p.max(axis=1) - p.min(axis=1)))
        with np.errstate(divide="ignore", invalid="ignore"):
            r = np.where(p.max(axis=1) > 0, p.min(axis=1) / p.max(axis=1), 1.0)
        return float(np.min(r))
