"""What makes :class:`~fairprobe.stats.frame.AuditFrame` a drop-in for fairlearn's ``MetricFrame``
inputs: ``sample_weight``, metric callables ``f(y_true, y_pred)``, ``control_features``.

Weighted rates
    A weighted rate of a group is ``p_w = sum(w x) / sum(w)`` over the instances its denominator
    counts (all of the group; ``y_true == 1`` for TPR; ...). Three interval constructions
    (``weighted_interval``):

    ``design`` (default; :func:`design_rates`)
        The union of two second-order intervals from one set of per-group sums: Korn &
        Graubard's (1998) Clopper-Pearson interval at a design effective size (the ratio
        estimator's linearisation variance, which sees weights that depend on the outcome,
        gives ``n* = p_w (1 - p_w) / v``, capped by Kish's size and ``n``, shrunk by
        ``(z / t_df)^2``), and Hall's (1992) skewness-corrected t interval on the linearised
        variable ``z_i = w_i (x_i - p_w)`` (its sample skewness from the sums of ``w``, ``w^2``,
        ``w^3`` on each side). The first keeps a rate near 0 or 1 inside ``[0, 1]`` and honest
        at small effective sizes; the second moves the interval toward the long tail that a
        sample without its heaviest weights under-states. A group whose positives (or
        negatives) weigh as fewer than :data:`MIN_SIDE` effective instances gets no interval
        (the t reference has fewer than one degree of freedom): the rate is undetermined
        there, with that reason (:func:`thin_reason`).
    ``korn-graubard``
        Korn & Graubard's interval alone, with its side rule at :data:`KG_MIN_SIDE`. Narrower,
        but it misses above when heavy weights fall on one outcome (``docs/stats.md``).
    ``kish-wilson``
        Wilson's interval at Kish's effective size ``n_eff = (sum w)^2 / sum(w^2)``,
        ``k_eff = p_w n_eff`` (Kish 1965, Survey Sampling, sec. 11.7). It ignores how the
        weights relate to the outcome and under-covers when they do (``docs/stats.md``).

    With equal weights all three are the unweighted interval. None is exact (no interval can
    be, for weights of unbounded spread: Bahadur & Savage 1956): their coverage is measured in
    ``experiments/stats/weighted_coverage.py`` (``docs/stats.md``), and a weighted summary's
    finding is asymptotic (shown, not counted in a headline). Summaries of weighted rates use
    the ``bonferroni`` construction on effective counts (the exact construction enumerates
    integer counts): for ``design``, the largest effective size at most ``n*`` whose
    Clopper-Pearson interval contains the group's design interval.
Metric callables
    ``metrics`` takes what ``MetricFrame`` takes: one callable, a list, or a dict name ->
    callable with fairlearn's signature ``f(y_true, y_pred[, sample_weight=...])``. The
    callables fairlearn and scikit-learn ship for rates fairprobe computes (``selection_rate``,
    ``true_positive_rate`` / ``recall_score``, ``false_positive_rate``, ``precision_score``,
    ``accuracy_score``, ``count``) are computed vectorised, with the rates' intervals; any other
    is called once per group, and its interval is a seeded percentile bootstrap over the group's
    instances (``n_boot`` resamples), labelled ``bootstrap-percentile``.
Control features
    Groups are the intersections of the control and the sensitive features, control first (as in
    ``MetricFrame``); ``overall``, ``group_min``, ``group_max``, ``difference`` and ``ratio`` are
    computed within each control level. The simultaneous summaries compare groups across the
    whole frame, so they refuse control features (audit each level separately).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np
import numpy.typing as npt

from fairprobe import metrics as _metrics
from fairprobe.errors import DataError

__all__ = ["KG_MIN_SIDE", "KNOWN_CALLABLES", "MIN_SIDE", "WEIGHTED_INTERVALS", "DesignRates",
           "DesignSums", "RATE_CELLS", "cell_sums", "weighted_counts",
           "bootstrap_by_group", "design_counts", "design_rates", "hall_interval",
           "linearised_skewness", "linearised_variance", "metric_columns", "thin_reason"]

#: ``__name__`` of fairlearn / scikit-learn metric functions -> the rate fairprobe computes.
KNOWN_CALLABLES = {
    "selection_rate": "selection_rate",
    "true_positive_rate": "true_positive_rate",
    "recall_score": "true_positive_rate",
    "false_positive_rate": "false_positive_rate",
    "precision_score": "positive_predictive_value",
    "accuracy_score": "accuracy",
    "count": "count",
}


def _known(f: Callable[..., Any]) -> str | None:
    mod = getattr(f, "__module__", "") or ""
    if not (mod.startswith("fairlearn") or mod.startswith("sklearn")):
        return None
    return KNOWN_CALLABLES.get(getattr(f, "__name__", ""))


def metric_columns(metrics: Any) -> list[tuple[str, str | Callable[..., Any]]]:
    """``(column name, rate name or callable)`` for ``metrics`` in MetricFrame's forms."""
    if callable(metrics):
        items: list[tuple[str, Any]] = [(getattr(metrics, "__name__", "metric"), metrics)]
    elif isinstance(metrics, Mapping):
        items = [(str(k), v) for k, v in metrics.items()]
    elif isinstance(metrics, Sequence) and not isinstance(metrics, str):
        items = [(getattr(f, "__name__", f"metric_{i}"), f) for i, f in enumerate(metrics)]
    else:
        raise DataError("metrics must be a callable f(y_true, y_pred), a list of them or a dict "
                        f"name -> callable; got {type(metrics).__name__}.")
    out: list[tuple[str, str | Callable[..., Any]]] = []
    for name, f in items:
        if not callable(f):
            raise DataError(f"metrics[{name!r}] is not callable; pass f(y_true, y_pred).")
        out.append((name, _known(f) or f))
    if len({n for n, _ in out}) != len(out):
        raise DataError("metrics name two columns alike; pass a dict with distinct names.")
    return out


#: Constructions of a weighted rate's interval; the first is the default.
WEIGHTED_INTERVALS = ("design", "korn-graubard", "kish-wilson")
#: Fewest effective instances (Kish's size of the positives' or the negatives' weights) on
#: either side of a weighted rate for the ``design`` interval; below it the rate is
#: undetermined. Its t reference has ``min(e1, e0) - 1`` degrees of freedom, and 2 is where
#: that reaches one; the measured coverage among the decided stays >= 0.95 at this floor
#: (``experiments/stats/weighted_coverage.py``).
MIN_SIDE = 2.0
#: The side rule of the ``korn-graubard`` construction alone: the smallest value whose
#: measured coverage is >= 0.94 for outcome-dependent lognormal weights at n = 50 to 200.
KG_MIN_SIDE = 5.0


def linearised_variance(sw1: npt.ArrayLike, sq1: npt.ArrayLike, sw0: npt.ArrayLike,
                        sq0: npt.ArrayLike, n: npt.ArrayLike) -> npt.NDArray[np.float64]:
    r"""Taylor-linearisation variance of the weighted rate ``sum(w x) / sum(w)`` from its
    per-group sums (:func:`design_counts`): :math:`\frac{n}{n-1}\sum_i w_i^2 (x_i - \hat
    p)^2 / (\sum_i w_i)^2`, each instance its own primary sampling unit. Equals samplics'
    ``TaylorEstimator(PopParam.mean)`` variance (pinned in ``tests/stats/test_dropin.py``)."""
    w1, q1, w0, q0, nn = (np.asarray(x, dtype=np.float64) for x in (sw1, sq1, sw0, sq0, n))
    s = w1 + w0
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.where(s > 0, w1 / s, 0.0)
        v = nn / np.maximum(nn - 1.0, 1.0) * ((1 - p) ** 2 * q1 + p * p * q0) / (s * s)
    return np.asarray(np.where(s > 0, v, 0.0), dtype=np.float64)


def design_counts(sw1: npt.ArrayLike, sq1: npt.ArrayLike, sw0: npt.ArrayLike,
                  sq0: npt.ArrayLike, n: npt.ArrayLike, confidence_level: float = 0.95,
                  min_side: float = MIN_SIDE) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64],
                             npt.NDArray[np.bool_]]:
    r"""Design effective counts ``(k*, n*)`` of weighted rates, and which are too thin.

    From per-group sums only (one streaming pass): ``sw1 = sum w``, ``sq1 = sum w^2`` over the
    instances with ``x = 1``, ``sw0``, ``sq0`` over those with ``x = 0``, ``n`` their number.
    With :math:`S = s_{w1} + s_{w0}` and :math:`\hat p = s_{w1} / S`, the linearisation
    (ratio-estimator, with-replacement) variance is

    .. math::
        v = \frac{n}{n-1} \frac{(1-\hat p)^2 s_{q1} + \hat p^2 s_{q0}}{S^2},

    the design effective size :math:`n^* = \min(\hat p(1-\hat p)/v,\ S^2/(s_{q1}+s_{q0}),\ n)`
    (Kish's size when :math:`v = 0`), shrunk by :math:`(z_{1-\alpha/2}/t_{d,1-\alpha/2})^2`
    with :math:`d = \max(\min(e_1, e_0) - 1, 1)`, :math:`e_j = s_{wj}^2 / s_{qj}` (Korn &
    Graubard 1998, sec. 2; the cap at Kish's size keeps heavy-tailed weights from reporting more
    than their spread allows), and :math:`k^* = \hat p n^*`. Clopper-Pearson at
    :math:`(k^*, n^*)` is the interval. Equal weights in a group give ``(k, n)`` exactly, the
    unweighted counts. ``thin`` marks groups whose weights vary and whose smaller side weighs
    less than ``min_side`` effective instances (:math:`\min(e_1, e_0)`, 0 when a side is
    empty): no interval is reported there.
    """
    from scipy import special

    from fairprobe.stats.intervals import normal_quantile

    w1, q1, w0, q0, nn = (np.asarray(x, dtype=np.float64) for x in (sw1, sq1, sw0, sq0, n))
    s = w1 + w0
    q = q1 + q0
    v = linearised_variance(w1, q1, w0, q0, nn)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.where(s > 0, w1 / s, 0.0)
        kish = np.where(q > 0, s * s / q, 0.0)
        ns = np.where(v > 0, p * (1 - p) / v, kish)
        e1 = np.where(q1 > 0, w1 * w1 / q1, 0.0)
        e0 = np.where(q0 > 0, w0 * w0 / q0, 0.0)
    ns = np.minimum(np.minimum(np.nan_to_num(ns), kish), nn)
    a2 = 0.5 + confidence_level / 2.0
    df = np.maximum(np.minimum(e1, e0) - 1.0, 1.0)
    ns = ns * (normal_quantile(confidence_level) / special.stdtrit(df, a2)) ** 2
    # equal weights (Kish's size is n): the unweighted counts, whose interval is exact
    equal = (nn > 0) & (np.abs(kish - nn) <= 1e-9 * np.maximum(nn, 1.0))
    # at least one effective instance (fewer only where a side is thin, whose interval is not
    # reported): the rate k*/n* stays the weighted rate wherever rates divide by max(n, 1)
    ns = np.where(equal, nn, np.where(nn > 0, np.maximum(ns, 1.0), 0.0))
    k = np.where(equal, np.rint(p * nn), p * ns)
    thin = ~equal & (nn > 0) & (np.minimum(e1, e0) < min_side)
    return k, ns, thin


def linearised_skewness(sw1: npt.ArrayLike, sq1: npt.ArrayLike, sc1: npt.ArrayLike,
                        sw0: npt.ArrayLike, sq0: npt.ArrayLike, sc0: npt.ArrayLike,
                        n: npt.ArrayLike) -> npt.NDArray[np.float64]:
    r"""Sample skewness of the weighted rate's linearised variable :math:`z_i = w_i (x_i -
    \hat p)` over its ``n`` instances, from per-group sums (``sc = sum w^3`` on each side, the
    rest as :func:`design_counts`). As :math:`\sum_i z_i = 0`,

    .. math::
        \hat\gamma = \frac{m_3}{m_2^{3/2}}, \quad
        m_2 = \frac{(1-\hat p)^2 s_{q1} + \hat p^2 s_{q0}}{n}, \quad
        m_3 = \frac{(1-\hat p)^3 s_{c1} - \hat p^3 s_{c0}}{n},

    0 where :math:`m_2 = 0`. Heavy weights on the positives make it large and positive, on the
    negatives large and negative; it is at most :math:`\sqrt{n}` in size."""
    w1, q1, c1, w0, q0, c0, nn = (np.asarray(x, dtype=np.float64)
                                  for x in (sw1, sq1, sc1, sw0, sq0, sc0, n))
    s = w1 + w0
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.where(s > 0, w1 / s, 0.0)
        m2 = ((1 - p) ** 2 * q1 + p * p * q0) / np.maximum(nn, 1.0)
        m3 = ((1 - p) ** 3 * c1 - p ** 3 * c0) / np.maximum(nn, 1.0)
        g = np.where(m2 > 0, m3 / np.maximum(m2, 1e-300) ** 1.5, 0.0)
    return np.asarray(g, dtype=np.float64)


def hall_interval(p: npt.ArrayLike, v: npt.ArrayLike, skew: npt.ArrayLike, n: npt.ArrayLike,
                  df: npt.ArrayLike, confidence_level: float = 0.95
                  ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    r"""Hall's (1992, "On the removal of skewness by transformation", JRSS B 54) interval for
    a mean ``p`` with variance estimate ``v``, from the sample skewness ``skew`` of the ``n``
    summed variables, at Student's quantile with ``df`` degrees of freedom; clipped to [0, 1].

    With :math:`T = (\hat p - p)/\sqrt{v}` and :math:`a = \hat\gamma / \sqrt{n}`, the
    transformation :math:`g(T) = T + a T^2/3 + a^2 T^3/27 + a/6` removes the
    :math:`n^{-1/2}` skewness term of :math:`T`'s Edgeworth expansion (Johnson's 1978
    modified t plus a cubic that makes it monotone). As :math:`g(T) = ((1 + aT/3)^3 - 1)/a +
    a/6`, its inverse is :math:`g^{-1}(x) = \frac{3}{a}\{(1 + a(x - a/6))^{1/3} - 1\}`
    (real cube root; :math:`x` at :math:`a = 0`), and the interval is
    :math:`[\hat p - \sqrt{v}\, g^{-1}(t),\ \hat p - \sqrt{v}\, g^{-1}(-t)]`,
    :math:`t = t_{df, (1+\text{level})/2}`. Positive skewness stretches it upward.
    """
    from scipy import special

    pp, vv, gg, nn, dd = (np.asarray(x, dtype=np.float64) for x in (p, v, skew, n, df))
    t = special.stdtrit(np.maximum(dd, 1.0), 0.5 + confidence_level / 2.0)
    a = gg / np.sqrt(np.maximum(nn, 1.0))
    flat = np.abs(a) < 1e-12
    aa = np.where(flat, 1.0, a)

    def inverse(x: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        r = 3.0 / aa * (np.cbrt(1.0 + aa * (x - aa / 6.0)) - 1.0)
        return np.asarray(np.where(flat, x, r), dtype=np.float64)

    se = np.sqrt(np.maximum(vv, 0.0))
    lo = np.clip(pp - se * inverse(t), 0.0, 1.0)
    hi = np.clip(pp - se * inverse(-t), 0.0, 1.0)
    return lo, hi


@dataclass(frozen=True)
class DesignRates:
    """A weighted rate's design-based interval per group (:func:`design_rates`).

    Attributes
    ----------
    k, n : ndarray
        Effective counts the summaries use (``k / n`` is the weighted rate; the unweighted
        integer counts where a group's weights are equal).
    low, high : ndarray
        The group's interval (``[0, 1]`` where ``thin``).
    thin : ndarray of bool
        No interval: a side weighs as fewer than the construction's side floor.
    side_size, side_rows : ndarray
        Kish's size of the thinner side's weights and its number of instances.
    side_hits : ndarray of bool
        Whether the thinner side is the instances the numerator counts (``x = 1``).
    min_side : float
        The side floor.
    """

    k: npt.NDArray[np.float64]
    n: npt.NDArray[np.float64]
    low: npt.NDArray[np.float64]
    high: npt.NDArray[np.float64]
    thin: npt.NDArray[np.bool_]
    side_size: npt.NDArray[np.float64]
    side_rows: npt.NDArray[np.float64]
    side_hits: npt.NDArray[np.bool_]
    min_side: float


def design_rates(sw1: npt.ArrayLike, sq1: npt.ArrayLike, sc1: npt.ArrayLike,
                 sw0: npt.ArrayLike, sq0: npt.ArrayLike, sc0: npt.ArrayLike, n: npt.ArrayLike,
                 n1: npt.ArrayLike, confidence_level: float = 0.95,
                 construction: str = "design") -> DesignRates:
    r"""Design-based intervals of weighted rates from per-group sums (one streaming pass).

    ``sw``, ``sq``, ``sc`` are the sums of ``w``, ``w^2``, ``w^3`` over the instances with
    ``x = 1`` (suffix 1) and ``x = 0`` (suffix 0), ``n`` the instances, ``n1`` those with
    ``x = 1``. ``construction``:

    ``"design"``
        The union of Korn-Graubard's Clopper-Pearson interval at :func:`design_counts`'
        ``(k*, n*)`` and :func:`hall_interval` on the linearised variable (variance
        :func:`linearised_variance`, skewness :func:`linearised_skewness`, Student's ``t``
        with :math:`\min(e_1, e_0) - 1` degrees of freedom as Korn-Graubard's), side floor
        :data:`MIN_SIDE`. Each is second-order accurate under its own model (a binomial at the
        effective size; a smooth mean with three moments); the union covers when either holds.
        The summaries' effective size is the largest :math:`n' \le n^*` whose Clopper-Pearson
        interval at :math:`(\hat p n', n')` contains the union (found by bisection on
        :math:`\log n'`, at least 1).
    ``"korn-graubard"``
        Clopper-Pearson at ``(k*, n*)`` alone, side floor :data:`KG_MIN_SIDE`.

    Equal weights in a group give the unweighted counts and their Clopper-Pearson interval.
    """
    from fairprobe.stats.exact import clopper_pearson_interval

    w1, q1, c1, w0, q0, c0, nn, h1 = (np.asarray(x, dtype=np.float64)
                                      for x in (sw1, sq1, sc1, sw0, sq0, sc0, n, n1))
    floor = MIN_SIDE if construction == "design" else KG_MIN_SIDE
    k, ns, thin = design_counts(w1, q1, w0, q0, nn, confidence_level, min_side=floor)
    lo, hi = clopper_pearson_interval(k, np.maximum(ns, 1.0), confidence_level)
    with np.errstate(divide="ignore", invalid="ignore"):
        e1 = np.where(q1 > 0, w1 * w1 / q1, 0.0)
        e0 = np.where(q0 > 0, w0 * w0 / q0, 0.0)
        s = w1 + w0
        kish = np.where(q1 + q0 > 0, s * s / (q1 + q0), 0.0)
        p = np.where(s > 0, w1 / s, 0.0)
    equal = (nn > 0) & (np.abs(kish - nn) <= 1e-9 * np.maximum(nn, 1.0))
    if construction == "design":
        v = linearised_variance(w1, q1, w0, q0, nn)
        g = linearised_skewness(w1, q1, c1, w0, q0, c0, nn)
        a, b = hall_interval(p, v, g, nn, np.minimum(e1, e0) - 1.0, confidence_level)
        mix = ~equal & ~thin & (nn > 0)
        lo, hi = np.where(mix, np.minimum(lo, a), lo), np.where(mix, np.maximum(hi, b), hi)
        # the summaries' effective size: the largest n' <= n* whose Clopper-Pearson interval
        # contains the union; the bounds move monotonically in n' at a fixed rate
        top = np.maximum(ns, 1.0)
        inside = np.ones_like(top)
        for _ in range(48):
            mid = np.sqrt(inside * top)
            lm, hm = clopper_pearson_interval(p * mid, mid, confidence_level)
            ok = (lm <= lo + 1e-12) & (hm >= hi - 1e-12)
            inside, top = np.where(ok, mid, inside), np.where(ok, top, mid)
        l0, h0 = clopper_pearson_interval(p * ns, np.maximum(ns, 1.0), confidence_level)
        whole = (l0 <= lo + 1e-12) & (h0 >= hi - 1e-12)
        ns = np.where(mix & ~whole, inside, ns)
        k = np.where(mix, p * ns, k)
    lo, hi = np.where(thin, 0.0, lo), np.where(thin, 1.0, hi)
    hits = e1 <= e0
    return DesignRates(k=k, n=ns, low=lo, high=hi, thin=thin,
                       side_size=np.where(hits, e1, e0),
                       side_rows=np.where(hits, h1, nn - h1), side_hits=hits, min_side=floor)


@dataclass(frozen=True)
class DesignSums:
    """Per-group sums a weighted rate's design-based interval is computed from (one streaming
    pass): ``sw``, ``sq``, ``sc`` = sums of ``w``, ``w^2``, ``w^3`` over the instances the
    numerator counts (suffix 1) and the others (suffix 0), ``n`` the instances, ``n1`` those the
    numerator counts; ``construction`` one of ``"design"``, ``"korn-graubard"``. Kept rather
    than the interval so that the interval follows the frame's ``confidence_level``."""

    sw1: npt.NDArray[np.float64]
    sq1: npt.NDArray[np.float64]
    sc1: npt.NDArray[np.float64]
    sw0: npt.NDArray[np.float64]
    sq0: npt.NDArray[np.float64]
    sc0: npt.NDArray[np.float64]
    n: npt.NDArray[np.float64]
    n1: npt.NDArray[np.float64]
    construction: str = "design"

    def rates(self, confidence_level: float) -> DesignRates:
        """:func:`design_rates` of these sums."""
        return design_rates(self.sw1, self.sq1, self.sc1, self.sw0, self.sq0, self.sc0, self.n,
                            self.n1, confidence_level, self.construction)


def thin_reason(rate: str, d: DesignRates, i: int) -> str:
    """Why group ``i``'s weighted ``rate`` has no interval, and how many more instances of its
    thinner side would likely give it one (Kish's size of a side grows in proportion to its
    instances at the same spread of weights)."""
    side = ("counted in its numerator" if d.side_hits[i] else "outside its numerator")
    e, rows = float(d.side_size[i]), int(round(float(d.side_rows[i])))
    if rows == 0 or e <= 0:
        return (f"the weighted {rate} has no instance {side} (and unequal weights): the spread "
                "of that side's weights is unseen, so no interval is reported")
    more = int(np.ceil(rows * (d.min_side / e - 1.0)))
    return (f"the weighted {rate}'s {rows} instance(s) {side} weigh as {e:.3g} effective "
            f"instances (Kish's size), fewer than {d.min_side:g}: the variance and skewness "
            f"estimates have no degree of freedom; about {more} more such instance(s) at the "
            "same spread of weights would likely give it an interval")


#: Each rate's ``(numerator cells, denominator cells)`` over the ``(y_pred, y_true)`` cells
#: ``"pt"`` (``"0"``, ``"1"`` of y_pred without labels), in the frame's order of rates.
RATE_CELLS: dict[bool, dict[str, tuple[tuple[str, ...], tuple[str, ...]]]] = {
    False: {"selection_rate": (("1",), ("0", "1"))},
    True: {r.name: (r.num, r.den) for r in _metrics.RATES.values()
           if r.num and "scores" not in r.needs},
}


def cell_sums(codes: npt.NDArray[np.int64], g: int, pred: npt.NDArray[np.bool_],
              true: npt.NDArray[np.bool_] | None, weights: npt.NDArray[np.float64]
              ) -> tuple[dict[str, npt.NDArray[np.float64]], dict[str, npt.NDArray[np.int64]]]:
    """Per group and ``(y_pred, y_true)`` cell: ``sw<cell>``, ``sq<cell>``, ``sc<cell>`` (sums
    of ``w``, ``w^2``, ``w^3``) and the instances, as the counts tables of
    :mod:`fairprobe.scale` keep them; four bincounts over the rows, whatever the rates."""
    names = ("00", "01", "10", "11") if true is not None else ("0", "1")
    cell = pred.astype(np.int64) * 2 + true.astype(np.int64) if true is not None \
        else pred.astype(np.int64)
    key = codes * len(names) + cell
    out: dict[str, npt.NDArray[np.float64]] = {}
    power = weights
    for pre in ("sw", "sq", "sc"):
        tab = np.asarray(np.bincount(key, weights=power, minlength=g * len(names)),
                         dtype=np.float64).reshape(g, len(names))
        out.update({f"{pre}{c}": tab[:, j] for j, c in enumerate(names)})
        power = power * weights
    cnt = np.bincount(key, minlength=g * len(names)).reshape(g, len(names))
    return out, {c: cnt[:, j].astype(np.int64) for j, c in enumerate(names)}


def weighted_counts(sums: Mapping[str, npt.NDArray[np.float64]],
                    rows: Mapping[str, npt.NDArray[np.int64]], num: Sequence[str],
                    den: Sequence[str], construction: str, confidence_level: float
                    ) -> tuple[tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]],
                               tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]],
                               DesignSums | None, npt.NDArray[np.bool_] | None]:
    """One weighted rate from per-cell sums (:func:`cell_sums`, or a counts table): its
    effective counts ``(k, n)`` (Kish's for ``kish-wilson``, :func:`design_rates`' otherwise),
    its weighted sums ``(sum w x, sum w)``, the sums its design interval comes from and the
    groups without an interval (both None for ``kish-wilson``)."""
    def total(pre: str, cells: Sequence[str]) -> npt.NDArray[np.float64]:
        return np.asarray(sum(sums[f"{pre}{c}"] for c in cells), dtype=np.float64)

    rest = [c for c in den if c not in num]
    sw1, sw0 = total("sw", num), total("sw", rest)
    sw = sw1 + sw0
    n_den = np.asarray(sum(rows[c] for c in den), dtype=np.float64)
    if construction == "kish-wilson":
        sq = total("sq", den)
        with np.errstate(divide="ignore", invalid="ignore"):
            ok = (n_den > 0) & (sq > 0)
            n_eff = np.where(ok, sw * sw / sq, 0.0)
            p = np.where(ok & (sw > 0), sw1 / sw, 0.0)
        return (p * n_eff, n_eff), (sw1, sw), None, None
    d = DesignSums(sw1, total("sq", num), total("sc", num), sw0, total("sq", rest),
                   total("sc", rest), n=n_den,
                   n1=np.asarray(sum(rows[c] for c in num), dtype=np.float64),
                   construction=construction)
    r = d.rates(confidence_level)
    return (r.k, r.n), (sw1, sw), d, r.thin


@dataclass(frozen=True)
class WeightedRates:
    """Every weighted rate of a frame, from one set of per-cell sums: ``counts[rate]`` the
    effective ``(k, n)``, ``sums[rate]`` the weighted ``(sum w x, sum w)``, and for the design
    constructions ``design[rate]`` (:class:`DesignSums`) and ``thin[rate]`` (the groups without
    an interval)."""

    counts: dict[str, tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]]
    sums: dict[str, tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]]
    design: Mapping[str, DesignSums]
    thin: Mapping[str, npt.NDArray[np.bool_]]


def weighted_rates(sums: Mapping[str, npt.NDArray[np.float64]],
                   rows: Mapping[str, npt.NDArray[np.int64]], with_true: bool,
                   construction: str, confidence_level: float) -> WeightedRates:
    """:func:`weighted_counts` of every rate of :data:`RATE_CELLS`: what the in-memory frame
    and a frame of counts both keep, computed by one function from the same sums."""
    counts, wsums = {}, {}
    design: dict[str, DesignSums] = {}
    thin: dict[str, npt.NDArray[np.bool_]] = {}
    for rate, (num, den) in RATE_CELLS[with_true].items():
        counts[rate], wsums[rate], d, th = weighted_counts(sums, rows, num, den, construction,
                                                           confidence_level)
        if d is not None and th is not None:
            design[rate], thin[rate] = d, th
    return WeightedRates(counts, wsums, MappingProxyType(design), MappingProxyType(thin))


def _accepts_weight(f: Callable[..., Any]) -> bool:
    try:
        return "sample_weight" in inspect.signature(f).parameters
    except (TypeError, ValueError):
        return False


def bootstrap_by_group(
    f: Callable[..., Any], y_true: Any, y_pred: Any, codes: npt.NDArray[np.int64], g: int,
    weights: npt.NDArray[np.float64] | None, *, n_boot: int, confidence_level: float, seed: int,
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Value of ``f`` on each group and its percentile-bootstrap interval.

    Each group's instances are resampled with replacement ``n_boot`` times (one seeded
    generator, groups in order); the interval is the ``(1 -+ level) / 2`` quantiles of the
    resampled values (NaN where ``f`` fails on every resample).
    """
    yt = None if y_true is None else np.asarray(y_true)
    yp = np.asarray(y_pred)
    use_w = weights is not None and _accepts_weight(f)
    rng = np.random.default_rng(seed)
    order = np.argsort(codes, kind="stable")
    starts = np.searchsorted(codes[order], np.arange(g + 1))
    val = np.full(g, np.nan)
    lo = np.full(g, np.nan)
    hi = np.full(g, np.nan)
    a = (1.0 - confidence_level) / 2.0

    def call(idx: npt.NDArray[np.int64]) -> float:
        kw = {"sample_weight": weights[idx]} if use_w and weights is not None else {}
        return float(f(None if yt is None else yt[idx], yp[idx], **kw))

    for j in range(g):
        idx = order[starts[j]:starts[j + 1]]
        if idx.size == 0:
            continue
        val[j] = call(idx)
        draws = rng.integers(0, idx.size, size=(n_boot, idx.size))
        reps = []
        for d in draws:  # the callable is user Python: one call per resample is inherent
            try:
                reps.append(call(idx[d]))
            except (ValueError, ZeroDivisionError):
                continue
        r = np.asarray([x for x in reps if np.isfinite(x)])
        if r.size:
            lo[j], hi[j] = np.quantile(r, [a, 1.0 - a])
    return val, lo, hi
