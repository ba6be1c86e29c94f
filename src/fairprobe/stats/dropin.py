"""What makes :class:`~fairprobe.stats.frame.AuditFrame` a drop-in for fairlearn's ``MetricFrame``
inputs: ``sample_weight``, metric callables ``f(y_true, y_pred)``, ``control_features``.

Weighted rates
    A weighted rate of a group is ``p_w = sum(w x) / sum(w)`` over the instances its denominator
    counts (all of the group; ``y_true == 1`` for TPR; ...). Two interval constructions
    (``weighted_interval``):

    ``design`` (default; :func:`design_counts`)
        Korn & Graubard's (1998) Clopper-Pearson interval at a design effective size: the
        ratio estimator's linearisation variance ``v`` (which sees weights that depend on the
        outcome) gives ``n* = p_w (1 - p_w) / v``, capped by Kish's effective size and ``n``,
        then shrunk by ``(z / t_df)^2`` with ``df`` the smaller side's effective count minus 1.
        A group whose positives (or negatives) weigh as fewer than :data:`MIN_SIDE` effective
        instances gets no interval: the rate is undetermined there, with that reason (a few
        heavy weights decide the rate and no variance estimate sees their spread).
    ``kish-wilson``
        Wilson's interval at Kish's effective size ``n_eff = (sum w)^2 / sum(w^2)``,
        ``k_eff = p_w n_eff`` (Kish 1965, Survey Sampling, sec. 11.7). It ignores how the
        weights relate to the outcome and under-covers when they do (``docs/stats.md``).

    With equal weights both are the unweighted interval. Neither is exact: their coverage is
    measured in ``experiments/stats/weighted_coverage.py`` (``docs/stats.md``), and a weighted
    summary's finding is asymptotic (shown, not counted in a headline). Summaries of weighted
    rates use the ``bonferroni`` construction on the effective counts (the exact construction
    enumerates integer counts).
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
from typing import Any

import numpy as np
import numpy.typing as npt

from fairprobe.errors import DataError

__all__ = ["KNOWN_CALLABLES", "MIN_SIDE", "WEIGHTED_INTERVALS", "bootstrap_by_group",
           "design_counts", "kish_counts", "linearised_variance", "metric_columns"]

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


def kish_counts(values: npt.NDArray[np.float64], in_denominator: npt.NDArray[np.bool_],
                weights: npt.NDArray[np.float64], codes: npt.NDArray[np.int64], g: int
                ) -> tuple[npt.NDArray[np.float64], ...]:
    """Effective counts ``(k_eff, n_eff)`` per group of a weighted rate, and the weighted sums
    ``(sum w x, sum w)`` (for the rate over several groups).

    ``n_eff = (sum w)^2 / sum w^2`` and ``k_eff = p_w n_eff`` over the instances with
    ``in_denominator``, where ``p_w = sum(w x) / sum(w)``; zero where a group has none.
    """
    w = np.where(in_denominator, weights, 0.0)
    sw = np.bincount(codes, weights=w, minlength=g)
    sw2 = np.bincount(codes, weights=w * w, minlength=g)
    swx = np.bincount(codes, weights=w * values, minlength=g)
    with np.errstate(divide="ignore", invalid="ignore"):
        n_eff = np.where(sw2 > 0, sw * sw / sw2, 0.0)
        p = np.where(sw > 0, swx / sw, 0.0)
    return p * n_eff, n_eff, swx.astype(np.float64), sw.astype(np.float64)


#: Constructions of a weighted rate's interval; the first is the default.
WEIGHTED_INTERVALS = ("design", "kish-wilson")
#: Fewest effective instances (Kish's size of the positives' or the negatives' weights) on
#: either side of a weighted rate for the ``design`` interval; below it the rate is
#: undetermined. 5 is the smallest value whose measured coverage is >= 0.94 for outcome-dependent
#: lognormal weights at n = 50 to 200 (``experiments/stats/weighted_coverage.py``).
MIN_SIDE = 5.0


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
                  sq0: npt.ArrayLike, n: npt.ArrayLike, confidence_level: float = 0.95
                  ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64],
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
    less than :data:`MIN_SIDE` effective instances (:math:`\min(e_1, e_0)`, 0 when a side is
    empty): no interval is reported there.
    """
    from scipy import stats as sps

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
    ns = ns * (sps.norm.ppf(a2) / sps.t.ppf(a2, df)) ** 2
    # equal weights (Kish's size is n): the unweighted counts, whose interval is exact
    equal = (nn > 0) & (np.abs(kish - nn) <= 1e-9 * np.maximum(nn, 1.0))
    # at least one effective instance (fewer only where a side is thin, whose interval is not
    # reported): the rate k*/n* stays the weighted rate wherever rates divide by max(n, 1)
    ns = np.where(equal, nn, np.where(nn > 0, np.maximum(ns, 1.0), 0.0))
    k = np.where(equal, np.rint(p * nn), p * ns)
    thin = ~equal & (nn > 0) & (np.minimum(e1, e0) < MIN_SIDE)
    return k, ns, thin


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
