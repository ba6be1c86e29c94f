"""What makes :class:`~fairprobe.stats.frame.AuditFrame` a drop-in for fairlearn's ``MetricFrame``
inputs: ``sample_weight``, metric callables ``f(y_true, y_pred)``, ``control_features``.

Weighted rates
    A weighted rate of a group is ``p_w = sum(w x) / sum(w)`` over the instances its denominator
    counts (all of the group; ``y_true == 1`` for TPR; ...). Its interval is the Wilson score
    interval at Kish's effective sample size ``n_eff = (sum w)^2 / sum(w^2)`` with
    ``k_eff = p_w n_eff`` (Kish 1965, Survey Sampling, sec. 11.7; Korn & Graubard 1998 use the
    same substitution for Clopper-Pearson). With equal weights ``n_eff = n`` and it is the
    unweighted interval. It is asymptotic, not exact: its coverage is measured in
    ``tests/stats/test_dropin.py`` and ``docs/stats.md`` (weights from a lognormal, rates 0.1 to
    0.5, groups of 50 to 400). Summaries of weighted rates use the ``bonferroni`` construction
    on the effective counts (the exact construction enumerates integer counts).
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

__all__ = ["KNOWN_CALLABLES", "bootstrap_by_group", "kish_counts", "metric_columns"]

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
