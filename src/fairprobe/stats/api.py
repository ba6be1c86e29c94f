"""Array-level entry points, fairlearn style: ``(y_true, y_pred, *, sensitive_features)``.

One engine, :func:`compute_metric`, validates the columns, picks the two groups, reduces the
answers to evidence (a counts vector or per-group means) and hands it to the ``*_from_counts``
functions of :mod:`fairprobe.stats.metrics`. The named functions are thin wrappers over it.

Unlike fairlearn, whose ``demographic_parity_difference`` is the absolute max-min gap over all
groups and returns a float, these return a signed group-A-minus-group-B
:class:`~fairprobe.stats.result.MetricResult` with its interval and verdict
(``float(result)`` gives the estimate).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypedDict, Unpack

import numpy as np
import numpy.typing as npt
import pandas as pd

from fairprobe import metrics as _metrics
from fairprobe._validation import check_choice, check_int
from fairprobe.errors import DataError, EmptyGroupError
from fairprobe.stats.counts import CountsVector
from fairprobe.stats.groups import DEFAULT_MIN_GROUP_SIZE, GroupSelection, as_1d, select_groups
from fairprobe.stats.metrics import (
    DEFAULT_CONFIDENCE_LEVEL,
    DEFAULT_DI_THRESHOLD,
    DEFAULT_TOLERANCE,
    demographic_parity_from_counts,
    disparate_impact_from_counts,
    equal_opportunity_from_counts,
    mean_stats,
    performance_gap_from_stats,
)
from fairprobe.stats.result import MeanStats, MetricResult

__all__ = [
    "METRICS",
    "MetricOptions",
    "ProportionOptions",
    "compute_metric",
    "demographic_parity_difference",
    "disparate_impact_ratio",
    "equal_opportunity_difference",
    "group_counts",
    "performance_gap",
]


def _binary(values: Any, name: str) -> npt.NDArray[np.bool_]:
    """0/1 (or boolean) column as a boolean array; NaN or other values raise DataError."""
    arr = as_1d(values, name)
    if arr.dtype == bool:
        return arr
    if arr.dtype.kind in "iu":
        bad = (arr != 0) & (arr != 1)
    elif arr.dtype.kind == "f":
        nan = np.isnan(arr)
        if nan.any():
            raise DataError(
                f"{name} contains {int(nan.sum())} NaN value(s): drop or repair those rows "
                "(e.g. unparsed answers) first."
            )
        bad = (arr != 0.0) & (arr != 1.0)
    else:
        null = np.asarray(pd.isna(arr), dtype=bool)
        if null.any():
            raise DataError(
                f"{name} contains {int(null.sum())} missing value(s): drop or repair those rows "
                "(e.g. unparsed answers) first."
            )
        try:
            num = arr.astype(np.float64)
        except (TypeError, ValueError):
            shown = ", ".join(repr(v) for v in pd.unique(arr)[:5])
            raise DataError(
                f"{name} must hold 0/1 decisions; found values {shown}: map them to 0/1 first."
            ) from None
        return _binary(num, name)
    if bad.any():
        shown = ", ".join(repr(v.item()) for v in np.unique(arr[bad])[:5])
        raise DataError(
            f"{name} must hold 0/1 decisions; found {shown}: map them to 0/1 first."
        )
    return np.asarray(arr == 1, dtype=bool)


def _real(values: Any, name: str) -> npt.NDArray[np.float64]:
    arr = as_1d(values, name)
    try:
        x = arr.astype(np.float64)
    except (TypeError, ValueError):
        raise DataError(f"{name} must be numeric; got dtype {arr.dtype}.") from None
    bad = ~np.isfinite(x)
    if bad.any():
        raise DataError(
            f"{name} contains {int(bad.sum())} NaN or infinite value(s): drop or repair those "
            "rows first."
        )
    return x


def _same_length(n: int, **cols: npt.NDArray[Any] | None) -> None:
    for name, col in cols.items():
        if col is not None and col.shape[0] != n:
            raise DataError(
                f"{name} has {col.shape[0]} entries but sensitive_features has {n}: pass one "
                "entry per instance."
            )


def _counts(decision: npt.NDArray[np.bool_], sel: GroupSelection,
            within: npt.NDArray[np.bool_] | None = None) -> CountsVector:
    in_a, in_b = sel.in_a, sel.in_b
    if within is not None:
        in_a = in_a & within
        in_b = in_b & within
    return CountsVector(
        int(np.count_nonzero(decision & in_a)), int(np.count_nonzero(in_a)),
        int(np.count_nonzero(decision & in_b)), int(np.count_nonzero(in_b)),
    )


def group_counts(
    y_pred: Any,
    sensitive_features: Any,
    *,
    group_a: Any = None,
    group_b: Any = None,
) -> CountsVector:
    """Counts vector ``(a, A, b, B)`` of 0/1 decisions ``y_pred`` for the two chosen groups.

    Group selection as in :func:`fairprobe.stats.groups.select_groups` (value vs value, or one
    value vs the rest when the other is ``None``).
    """
    sel = select_groups(sensitive_features, group_a, group_b)
    d = _binary(y_pred, "y_pred")
    _same_length(sel.in_a.shape[0], y_pred=d)
    return _counts(d, sel)


# --- criteria: small functions from (columns, groups) to evidence --------------------------------

@dataclass(frozen=True)
class _Columns:
    y_true: npt.NDArray[np.bool_] | None
    y_pred: npt.NDArray[np.bool_] | None
    values: npt.NDArray[np.float64] | None
    weights: npt.NDArray[np.float64] | None


def _dp_evidence(cols: _Columns, sel: GroupSelection) -> CountsVector:
    assert cols.y_pred is not None
    return _counts(cols.y_pred, sel)


def _eo_evidence(cols: _Columns, sel: GroupSelection) -> CountsVector:
    assert cols.y_pred is not None and cols.y_true is not None
    c = _counts(cols.y_pred, sel, within=cols.y_true)
    for n, label in ((c.A, sel.label_a), (c.B, sel.label_b)):
        if n == 0:
            raise EmptyGroupError(
                f"Group {label!r} has no instance with y_true == 1: equal opportunity is "
                "undefined; query more positives of that group or use demographic parity."
            )
    return c


def _gap_evidence(cols: _Columns, sel: GroupSelection) -> MeanStats:
    assert cols.values is not None
    return mean_stats(cols.values, sel.in_a, sel.in_b, cols.weights)


@dataclass(frozen=True)
class _Criterion:
    needs: tuple[str, ...]
    evidence: Callable[[_Columns, GroupSelection], CountsVector | MeanStats]
    finish: Callable[..., MetricResult]
    threshold_name: str
    default_threshold: float


#: The metrics :func:`compute_metric` knows, by name.
METRICS: dict[str, _Criterion] = {
    _metrics.DP.name: _Criterion(
        ("y_pred",), _dp_evidence, demographic_parity_from_counts, "tolerance",
        DEFAULT_TOLERANCE,
    ),
    _metrics.EO.name: _Criterion(
        ("y_true", "y_pred"), _eo_evidence, equal_opportunity_from_counts, "tolerance",
        DEFAULT_TOLERANCE,
    ),
    _metrics.DI.name: _Criterion(
        ("y_pred",), _dp_evidence, disparate_impact_from_counts, "threshold",
        DEFAULT_DI_THRESHOLD,
    ),
    "performance_gap": _Criterion(
        ("values",), _gap_evidence, performance_gap_from_stats, "tolerance", DEFAULT_TOLERANCE,
    ),
}

#: Short aliases accepted by :func:`compute_metric` (e.g. from the CLI).
ALIASES = {
    _metrics.DP.short: _metrics.DP.name,
    "sp": _metrics.DP.name,
    _metrics.EO.short: _metrics.EO.name,
    _metrics.DI.short: _metrics.DI.name,
    "gap": "performance_gap",
}


def compute_metric(
    metric: str,
    *,
    sensitive_features: Any,
    y_pred: Any = None,
    y_true: Any = None,
    values: Any = None,
    sample_weight: Any = None,
    group_a: Any = None,
    group_b: Any = None,
    threshold: float | None = None,
    confidence_level: float = DEFAULT_CONFIDENCE_LEVEL,
    method: str | None = None,
    min_group_size: int = DEFAULT_MIN_GROUP_SIZE,
) -> MetricResult:
    """The engine: any metric of :data:`METRICS` (or alias dp/sp/eo/di/gap) on raw columns.

    Parameters
    ----------
    metric : str
        ``demographic_parity_difference``, ``equal_opportunity_difference``,
        ``disparate_impact_ratio``, ``performance_gap``, or an alias.
    sensitive_features : array-like
        Group value of each instance.
    y_pred, y_true : array-like of 0/1, optional
        Decisions and true labels (``y_true`` only for equal opportunity).
    values : array-like of float, optional
        Per-instance values for the performance gap (e.g. correctness ``y_pred == y_true``).
    sample_weight : array-like of float, optional
        Non-negative weights, performance gap only.
    group_a, group_b : value or None
        The two groups; ``None`` on one side means all other values.
    threshold : float, optional
        Tolerance of the fair band for differences, minimum ratio for disparate impact
        (defaults 0.05 and 0.8).
    confidence_level : float in (0, 1)
    method : str, optional
        Interval method: ``"newcombe"`` (default) or ``"exact"`` for demographic parity and
        equal opportunity; ``"score"`` (default), ``"katz"`` or ``"exact"`` for disparate
        impact. ``"exact"`` (default) keeps coverage >= the level at every rate
        (``docs/stats.md``).
    min_group_size : int >= 1
        The one group-filtering rule (:data:`~fairprobe.stats.groups.DEFAULT_MIN_GROUP_SIZE`,
        as in :class:`~fairprobe.stats.frame.AuditFrame`): when a group holds fewer instances
        than this on which the metric is defined (``y_true = 1`` ones for equal opportunity),
        the result keeps its estimate and interval but its verdict is ``undetermined``, with
        ``undetermined_reason`` saying which group is too small.
    """
    name = ALIASES.get(metric, metric) if isinstance(metric, str) else metric
    check_choice(name, "metric", "compute_metric", tuple(METRICS) + tuple(ALIASES))
    crit = METRICS[name]
    sel = select_groups(sensitive_features, group_a, group_b)
    n = sel.in_a.shape[0]
    given = {"y_pred": y_pred, "y_true": y_true, "values": values}
    for need in crit.needs:
        if given[need] is None:
            raise DataError(f"{name} needs {need}; pass one entry per instance.")
    cols = _Columns(
        y_true=None if y_true is None or "y_true" not in crit.needs
        else _binary(y_true, "y_true"),
        y_pred=None if y_pred is None or "y_pred" not in crit.needs
        else _binary(y_pred, "y_pred"),
        values=None if values is None or "values" not in crit.needs
        else _real(values, "values"),
        weights=None,
    )
    if sample_weight is not None:
        if name != "performance_gap":
            raise DataError(
                f"sample_weight is supported by performance_gap only; {name} works on counts."
            )
        w = _real(sample_weight, "sample_weight")
        if (w < 0).any():
            raise DataError("sample_weight must be non-negative.")
        cols = _Columns(cols.y_true, cols.y_pred, cols.values, w)
    _same_length(n, y_true=cols.y_true, y_pred=cols.y_pred, values=cols.values,
                 sample_weight=cols.weights)
    evidence = crit.evidence(cols, sel)
    kwargs: dict[str, Any] = {
        crit.threshold_name: crit.default_threshold if threshold is None else threshold,
        "confidence_level": confidence_level,
        "groups": sel.labels,
    }
    if method is not None:
        if name == "performance_gap":
            raise DataError("method applies to the proportion metrics (dp, eo, di), not "
                            "performance_gap (Welch's interval).")
        kwargs["method"] = method
    res = crit.finish(evidence, **kwargs)
    mgs = check_int(min_group_size, "min_group_size", "compute_metric", lo=1)
    sizes = ((evidence.A, evidence.B) if isinstance(evidence, CountsVector)
             else (evidence.n_a, evidence.n_b))
    small = [(lab, int(n)) for lab, n in zip(sel.labels, sizes, strict=True) if n < mgs]
    if small:
        what = "instances with y_true = 1" if name == _metrics.EO.name else (
            "instances")
        why = "; ".join(f"group {lab!r} has {n} {what} (< min_group_size {mgs})"
                        for lab, n in small)
        res = dataclasses.replace(res, undetermined_reason=why)
    return res


class MetricOptions(TypedDict, total=False):
    """The keyword options the named metrics pass to :func:`compute_metric` unchanged: its
    defaults and meaning hold (``group_a``, ``group_b``: the two groups, ``None`` on one side
    for all other values; ``confidence_level``; ``min_group_size``: the group-filtering
    rule)."""

    group_a: Any
    group_b: Any
    confidence_level: float
    min_group_size: int


class ProportionOptions(MetricOptions, total=False):
    """:class:`MetricOptions` and the interval ``method`` of the proportion metrics (as in
    :func:`compute_metric`; exact by default)."""

    method: str | None


def demographic_parity_difference(
    y_true: Any,
    y_pred: Any,
    *,
    sensitive_features: Any,
    tolerance: float = DEFAULT_TOLERANCE,
    **options: Unpack[ProportionOptions],
) -> MetricResult:
    """Signed ``P(y_pred=1 | group_a) - P(y_pred=1 | group_b)`` with its interval (exact by
    default; ``options`` as in :func:`compute_metric`: :class:`ProportionOptions`).

    ``y_true`` is ignored (kept for fairlearn's signature; pass ``None``). See
    :func:`fairprobe.stats.metrics.demographic_parity_from_counts`.
    """
    return compute_metric(
        _metrics.DP.name, sensitive_features=sensitive_features, y_pred=y_pred,
        threshold=tolerance, **options,
    )


def equal_opportunity_difference(
    y_true: Any,
    y_pred: Any,
    *,
    sensitive_features: Any,
    tolerance: float = DEFAULT_TOLERANCE,
    **options: Unpack[ProportionOptions],
) -> MetricResult:
    """Signed true-positive-rate difference ``P(y_pred=1 | y_true=1, A) - (same, B)``.

    A group with no ``y_true == 1`` instance raises :class:`EmptyGroupError`. See
    :func:`fairprobe.stats.metrics.equal_opportunity_from_counts`.
    """
    return compute_metric(
        _metrics.EO.name, sensitive_features=sensitive_features, y_pred=y_pred,
        y_true=y_true, threshold=tolerance, **options,
    )


def disparate_impact_ratio(
    y_true: Any,
    y_pred: Any,
    *,
    sensitive_features: Any,
    threshold: float = DEFAULT_DI_THRESHOLD,
    **options: Unpack[ProportionOptions],
) -> MetricResult:
    """``P(y_pred=1 | group_a) / P(y_pred=1 | group_b)`` against the 80% rule.

    Group A is the unprivileged group (numerator), group B the privileged one; for the
    two-source paper's "privileged group vs the rest", pass ``group_b=<privileged>`` and leave
    ``group_a=None``. ``y_true`` is ignored. See
    :func:`fairprobe.stats.metrics.disparate_impact_from_counts`.
    """
    return compute_metric(
        _metrics.DI.name, sensitive_features=sensitive_features, y_pred=y_pred,
        threshold=threshold, **options,
    )


def performance_gap(
    values: Any,
    *,
    sensitive_features: Any,
    tolerance: float = DEFAULT_TOLERANCE,
    sample_weight: Any = None,
    **options: Unpack[MetricOptions],
) -> MetricResult:
    """Difference of group means of per-instance ``values`` (e.g. correctness) with Welch's
    interval; optional non-negative ``sample_weight``. See
    :func:`fairprobe.stats.metrics.performance_gap_from_stats`.
    """
    return compute_metric(
        "performance_gap", sensitive_features=sensitive_features, values=values,
        sample_weight=sample_weight, threshold=tolerance, **options,
    )
