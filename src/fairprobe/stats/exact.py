r"""Intervals whose coverage is at least nominal at every rate and size (no asymptotics).

* :func:`clopper_pearson_interval`: the exact binomial interval (Clopper & Pearson 1934) from
  beta quantiles, :math:`[B_{\alpha/2}(k, n-k+1),\ B_{1-\alpha/2}(k+1, n-k)]`; its coverage is
  :math:`\ge 1-\alpha` for every :math:`p` and :math:`n`.
* :func:`exact_difference_interval`, :func:`exact_ratio_interval` (the defaults): unconditional
  exact tests inverted (:mod:`fairprobe.stats.unconditional`); coverage :math:`\ge 1-\alpha`
  everywhere at about Newcombe's / Koopman's width.
* :func:`box_difference_interval`, :func:`box_ratio_interval` (``"box"``): for two independent
  groups, Clopper-Pearson intervals :math:`[l_1, u_1]`, :math:`[l_2, u_2]` each at level
  :math:`\sqrt{1-\alpha}` (Šidák); both hold at once with probability
  :math:`\ge \sqrt{1-\alpha}^2 = 1-\alpha`, and then :math:`p_1 - p_2 \in [l_1 - u_2, u_1 - l_2]`
  and :math:`p_1/p_2 \in [l_1/u_2, u_1/l_2]`. Coverage :math:`\ge 1-\alpha` everywhere, by
  construction; the price is width (1.5x Newcombe's on average, ``docs/stats.md``).

References
----------
.. [CP] C. J. Clopper, E. S. Pearson (1934). The use of confidence or fiducial limits illustrated
   in the case of the binomial. Biometrika 26(4), 404-413.
.. [S] Z. Šidák (1967). Rectangular confidence regions for the means of multivariate normal
   distributions. JASA 62, 626-633.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from scipy import special

# The default exact intervals are the unconditional exact tests inverted, under the names of
# this family of every-rate-coverage intervals.
from fairprobe.stats.unconditional import (
    unconditional_difference_interval as exact_difference_interval,
)
from fairprobe.stats.unconditional import (
    unconditional_ratio_interval as exact_ratio_interval,
)

__all__ = ["box_difference_interval", "box_ratio_interval", "clopper_pearson_interval",
           "exact_difference_interval", "exact_ratio_interval"]

FloatArray = npt.NDArray[np.float64]


def clopper_pearson_interval(
    k: npt.ArrayLike, n: npt.ArrayLike, confidence_level: float = 0.95
) -> tuple[FloatArray, FloatArray]:
    """Exact (Clopper-Pearson) interval for ``k / n``; vectorised, ``n >= 1``."""
    kf = np.asarray(k, dtype=np.float64)
    nf = np.asarray(n, dtype=np.float64)
    alpha = 1.0 - confidence_level
    with np.errstate(divide="ignore", invalid="ignore"):
        lo = np.where(kf <= 0, 0.0, special.betaincinv(np.maximum(kf, 1e-300), nf - kf + 1.0,
                                                       alpha / 2.0))
        hi = np.where(kf >= nf, 1.0, special.betaincinv(kf + 1.0, np.maximum(nf - kf, 1e-300),
                                                        1.0 - alpha / 2.0))
    return np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)


def _boxes(
    a: npt.ArrayLike, A: npt.ArrayLike, b: npt.ArrayLike, B: npt.ArrayLike,
    confidence_level: float,
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    each = float(np.sqrt(confidence_level))
    l1, u1 = clopper_pearson_interval(a, A, each)
    l2, u2 = clopper_pearson_interval(b, B, each)
    return l1, u1, l2, u2


def box_difference_interval(
    a: npt.ArrayLike, A: npt.ArrayLike, b: npt.ArrayLike, B: npt.ArrayLike,
    confidence_level: float = 0.95,
) -> tuple[FloatArray, FloatArray]:
    r"""Interval for ``a/A - b/B`` with coverage :math:`\ge` ``confidence_level`` at every rate.

    :math:`[l_1 - u_2,\ u_1 - l_2]` from Clopper-Pearson intervals at level
    :math:`\sqrt{\text{confidence\_level}}` each (see the module docstring).
    """
    l1, u1, l2, u2 = _boxes(a, A, b, B, confidence_level)
    return l1 - u2, u1 - l2


def box_ratio_interval(
    a: npt.ArrayLike, A: npt.ArrayLike, b: npt.ArrayLike, B: npt.ArrayLike,
    confidence_level: float = 0.95,
) -> tuple[FloatArray, FloatArray]:
    r"""Interval for ``(a/A) / (b/B)`` with coverage :math:`\ge` ``confidence_level`` everywhere.

    :math:`[l_1 / u_2,\ u_1 / l_2]` (upper bound ``inf`` when ``b = 0``).
    """
    l1, u1, l2, u2 = _boxes(a, A, b, B, confidence_level)
    with np.errstate(divide="ignore", invalid="ignore"):
        hi = np.where(l2 > 0, u1 / np.where(l2 > 0, l2, 1.0), np.inf)
    return l1 / u2, np.asarray(hi, dtype=np.float64)
