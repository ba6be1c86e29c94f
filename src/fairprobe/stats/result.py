"""The one result type every fairness metric returns.

:class:`MetricResult` keeps the raw evidence (a :class:`~fairprobe.stats.counts.CountsVector`
for proportion metrics, a :class:`MeanStats` for the performance gap), the point estimate, the
threshold, the confidence level and the interval method; it recomputes its interval at any other
level on demand and states a three-way verdict.

Verdict rules (``[lo, hi]`` is the confidence interval):

* differences (DP, EO, performance gap) against the fair band ``[-tol, tol]``:
  ``fair`` if ``-tol <= lo`` and ``hi <= tol``; ``unfair`` if ``hi < -tol`` or ``lo > tol``
  (interval disjoint from the band); ``undetermined`` otherwise;
* the disparate-impact ratio against the threshold ``th`` (80% rule: ``th = 0.8``):
  ``fair`` if ``lo >= th``; ``unfair`` if ``hi < th``; ``undetermined`` otherwise.

``point_verdict`` applies the papers' plug-in rules to the estimate alone (``|DP| <= tau`` in the
collaborative paper, ``mu >= 0.8`` in the two-source paper).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from fairprobe import metrics as _metrics
from fairprobe._validation import check_real
from fairprobe.errors import InvalidParameterError
from fairprobe.stats.counts import CountsVector
from fairprobe.stats.exact import (
    box_difference_interval,
    box_ratio_interval,
    exact_difference_interval,
    exact_ratio_interval,
)
from fairprobe.stats.finding import Finding, Question, Verdict, decide
from fairprobe.stats.intervals import (
    katz_ratio_interval,
    newcombe_interval,
    score_ratio_interval,
    welch_interval,
)

__all__ = [
    "INTERVAL_METHODS",
    "ConfidenceInterval",
    "MeanStats",
    "MetricResult",
    "Verdict",
]


@dataclass(frozen=True, slots=True)
class ConfidenceInterval:
    """A two-sided confidence interval ``(low, high)``; unpacks like a tuple."""

    low: float
    high: float

    def __iter__(self) -> Iterator[float]:
        yield self.low
        yield self.high

    def __contains__(self, x: object) -> bool:
        return isinstance(x, int | float) and self.low <= float(x) <= self.high

    @property
    def width(self) -> float:
        return self.high - self.low

    def to_dict(self) -> dict[str, float | None]:
        return {"low": _json_float(self.low), "high": _json_float(self.high)}


@dataclass(frozen=True, slots=True)
class MeanStats:
    """Per-group summary of a per-instance value (the evidence of the performance gap).

    Attributes
    ----------
    n_a, n_b : int
        Instances in each group.
    mean_a, mean_b : float
        (Weighted) group means.
    var_a, var_b : float
        Unbiased (reliability-weighted) sample variances.
    neff_a, neff_b : float
        Effective sample sizes; equal to ``n`` without weights, Kish's
        ``(sum w)^2 / sum w^2`` with weights.
    """

    n_a: int
    mean_a: float
    var_a: float
    n_b: int
    mean_b: float
    var_b: float
    neff_a: float
    neff_b: float

    def to_dict(self) -> dict[str, float | int | None]:
        return {
            "n_a": self.n_a,
            "mean_a": _json_float(self.mean_a),
            "var_a": _json_float(self.var_a),
            "neff_a": _json_float(self.neff_a),
            "n_b": self.n_b,
            "mean_b": _json_float(self.mean_b),
            "var_b": _json_float(self.var_b),
            "neff_b": _json_float(self.neff_b),
        }


def _json_float(x: float) -> float | None:
    return x if math.isfinite(x) else None


def _counts_interval(
    fn: Callable[..., tuple[Any, Any]],
) -> Callable[[CountsVector | MeanStats, float], tuple[float, float]]:
    def compute(ev: CountsVector | MeanStats, level: float) -> tuple[float, float]:
        assert isinstance(ev, CountsVector)
        lo, hi = fn(ev.a, ev.A, ev.b, ev.B, level)
        return float(lo), float(hi)

    return compute


def _welch(ev: CountsVector | MeanStats, level: float) -> tuple[float, float]:
    assert isinstance(ev, MeanStats)
    lo, hi = welch_interval(
        ev.mean_a, ev.var_a, ev.neff_a, ev.mean_b, ev.var_b, ev.neff_b, level
    )
    return float(lo), float(hi)


#: Interval methods by name: each maps the evidence and a confidence level to ``(low, high)``.
INTERVAL_METHODS: dict[str, Callable[[CountsVector | MeanStats, float], tuple[float, float]]] = {
    "newcombe": _counts_interval(newcombe_interval),
    "score": _counts_interval(score_ratio_interval),
    "katz": _counts_interval(katz_ratio_interval),
    "exact-difference": _counts_interval(exact_difference_interval),
    "exact-ratio": _counts_interval(exact_ratio_interval),
    "box-difference": _counts_interval(box_difference_interval),
    "box-ratio": _counts_interval(box_ratio_interval),
    "welch": _welch,
}

#: What each construction's coverage rests on (keys of :data:`fairprobe.stats.finding.COVERAGE`):
#: the exact ones keep the level at every rate and size (``docs/stats.md``, exact enumeration).
INTERVAL_COVERAGE: dict[str, str] = {
    "newcombe": "asymptotic",
    "score": "asymptotic",
    "katz": "asymptotic",
    "exact-difference": "exact",
    "exact-ratio": "exact",
    "box-difference": "exact",
    "box-ratio": "exact",
    "welch": "asymptotic",
}

#: How each metric is judged: a difference against a band, or a ratio against a floor.
METRIC_KINDS: dict[str, Literal["difference", "ratio"]] = {
    _metrics.DP.name: "difference",
    _metrics.EO.name: "difference",
    "performance_gap": "difference",
    _metrics.DI.name: "ratio",
}


@dataclass(frozen=True)
class MetricResult:
    """Estimate, confidence interval and verdict of one fairness metric between two groups.

    Attributes
    ----------
    metric : str
        One of ``demographic_parity_difference``, ``equal_opportunity_difference``,
        ``disparate_impact_ratio``, ``performance_gap``.
    estimate : float
        The plug-in estimate (``nan`` when undefined, e.g. a ratio ``0/0``; ``inf`` for ``x/0``).
    counts : CountsVector or MeanStats
        The raw evidence: ``(a, A, b, B)`` for proportion metrics (group A first: the
        unprivileged numerator of the ratio), per-group n / mean / variance for the gap.
    threshold : float
        The tolerance ``tol`` of the fair band ``[-tol, tol]`` for differences; the minimum
        ratio (0.8 for the 80% rule) for ``disparate_impact_ratio``.
    confidence_level : float
        Level of :attr:`interval`.
    method : str
        Interval method, a key of :data:`INTERVAL_METHODS`.
    groups : tuple of str
        Labels of group A and group B (``"rest"`` for everyone else).
    """

    metric: str
    estimate: float
    counts: CountsVector | MeanStats
    threshold: float
    confidence_level: float
    method: str
    groups: tuple[str, str] = ("A", "B")
    #: set when the group-filtering rule leaves the question open (a group's denominator below
    #: ``min_group_size``): the verdict is then ``undetermined`` and this says why
    undetermined_reason: str | None = None
    interval: ConfidenceInterval = field(init=False)

    def __post_init__(self) -> None:
        if self.metric not in METRIC_KINDS:
            raise InvalidParameterError(
                f"Unknown metric {self.metric!r}: use one of {sorted(METRIC_KINDS)}."
            )
        if self.method not in INTERVAL_METHODS:
            raise InvalidParameterError(
                f"Unknown interval method {self.method!r}: use one of {sorted(INTERVAL_METHODS)}."
            )
        evidence = CountsVector if self.method != "welch" else MeanStats
        if not isinstance(self.counts, evidence):
            raise InvalidParameterError(
                f"Interval method {self.method!r} needs a {evidence.__name__} as counts; got "
                f"{type(self.counts).__name__}."
            )
        object.__setattr__(self, "interval", self._interval_at(self.confidence_level))

    def _interval_at(self, level: float) -> ConfidenceInterval:
        lo, hi = INTERVAL_METHODS[self.method](self.counts, level)
        return ConfidenceInterval(lo, hi)

    @property
    def kind(self) -> Literal["difference", "ratio"]:
        """``"difference"`` (judged against ``[-tol, tol]``) or ``"ratio"`` (against a floor)."""
        return METRIC_KINDS[self.metric]

    def confidence_interval(self, confidence_level: float | None = None) -> ConfidenceInterval:
        """The interval at ``confidence_level`` (default: the level of the result)."""
        if confidence_level is None or confidence_level == self.confidence_level:
            return self.interval
        level = check_real(
            confidence_level, "confidence_level", "MetricResult.confidence_interval",
            lo=0.0, hi=1.0, closed="neither",
        )
        return self._interval_at(level)

    def verdict_at(self, confidence_level: float | None = None) -> Verdict:
        """The verdict using the interval at ``confidence_level`` (see module docstring)."""
        if self.undetermined_reason is not None:
            return "undetermined"
        lo, hi = self.confidence_interval(confidence_level)
        return decide(lo, hi, kind=self.kind, threshold=self.threshold)

    @property
    def finding(self) -> Finding:
        """This result as a :class:`~fairprobe.stats.finding.Finding` (the verdict engine)."""
        counts = self.counts
        ev = (dict(zip(("a", "A", "b", "B"), counts.as_tuple(), strict=True))
              if isinstance(counts, CountsVector) else counts.to_dict())
        rate = {_metrics.DP.name: "selection_rate",
                _metrics.DI.name: "selection_rate",
                _metrics.EO.name: "true_positive_rate"}.get(self.metric,
                                                                          "mean_value")
        lo, hi = self.interval
        return Finding(
            question=Question(metric=self.metric, kind=self.kind, threshold=self.threshold,
                              groups=tuple(self.groups), rates=(rate,),
                              scale="ratio" if self.kind == "ratio" else "probability"),
            estimate=float(self.estimate), low=lo, high=hi,
            confidence_level=self.confidence_level, construction=self.method,
            coverage=INTERVAL_COVERAGE[self.method], counts=ev,
            reason=self.undetermined_reason,
            forced="undetermined" if self.undetermined_reason is not None else None,
        )

    @property
    def verdict(self) -> Verdict:
        """``fair``, ``unfair`` or ``undetermined`` from the confidence interval."""
        return self.verdict_at(None)

    @property
    def point_verdict(self) -> Literal["fair", "unfair"]:
        """Plug-in verdict from the estimate alone (``|est| <= tol``; ratio ``>= th``).

        An undefined ratio (``0/0``) is reported ``unfair`` here: nothing shows compliance.
        """
        est = self.estimate
        if self.kind == "ratio":
            return "fair" if est >= self.threshold else "unfair"
        return "fair" if abs(est) <= self.threshold else "unfair"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dictionary; non-finite floats become ``None`` (e.g. an unbounded ratio)."""
        counts = self.counts
        ev: dict[str, Any]
        if isinstance(counts, CountsVector):
            ev = dict(zip(("a", "A", "b", "B"), counts.as_tuple(), strict=True))
        else:
            ev = counts.to_dict()
        return {
            "metric": self.metric,
            "kind": self.kind,
            "estimate": _json_float(float(self.estimate)),
            "interval": {
                **self.interval.to_dict(), "level": self.confidence_level, "method": self.method
            },
            "confidence_level": self.confidence_level,
            "method": self.method,
            "threshold": self.threshold,
            "verdict": self.verdict,
            "point_verdict": self.point_verdict,
            "finding": self.finding.to_dict(),
            "groups": {"a": self.groups[0], "b": self.groups[1]},
            "counts": ev,
            **({"undetermined_reason": self.undetermined_reason}
               if self.undetermined_reason is not None else {}),
        }

    # -- a result behaves like its estimate where users expect a number ----------------------
    def __float__(self) -> float:
        return float(self.estimate)

    def __round__(self, ndigits: int | None = None) -> float:
        return round(float(self.estimate), ndigits if ndigits is not None else 0)

    def _other(self, other: object) -> float | None:
        if isinstance(other, MetricResult):
            return float(other.estimate)
        if isinstance(other, int | float) and not isinstance(other, bool):
            return float(other)
        try:  # numpy scalars
            import numbers

            if isinstance(other, numbers.Real):
                return float(other)
        except TypeError:  # pragma: no cover
            pass
        return None

    def __lt__(self, other: object) -> bool:
        x = self._other(other)
        return NotImplemented if x is None else float(self.estimate) < x

    def __le__(self, other: object) -> bool:
        x = self._other(other)
        return NotImplemented if x is None else float(self.estimate) <= x

    def __gt__(self, other: object) -> bool:
        x = self._other(other)
        return NotImplemented if x is None else float(self.estimate) > x

    def __ge__(self, other: object) -> bool:
        x = self._other(other)
        return NotImplemented if x is None else float(self.estimate) >= x

    def __repr__(self) -> str:
        lo, hi = self.interval
        pct = round(100 * self.confidence_level, 6)
        return (
            f"<MetricResult {self.metric} {self.groups[0]} vs {self.groups[1]}: "
            f"{self.estimate:.4g} [{lo:.4g}, {hi:.4g}] {pct:g}% {self.method}, {self.verdict}>"
        )

    def to_frame(self) -> Any:
        """A one-row :class:`pandas.DataFrame`: metric, groups, estimate, interval, verdict, counts."""
        import pandas as pd

        lo, hi = self.interval
        row: dict[str, Any] = {
            "metric": self.metric,
            "group_a": self.groups[0],
            "group_b": self.groups[1],
            "estimate": float(self.estimate),
            "low": lo,
            "high": hi,
            "level": self.confidence_level,
            "method": self.method,
            "threshold": self.threshold,
            "verdict": self.verdict,
        }
        counts = self.counts
        if isinstance(counts, CountsVector):
            row.update(zip(("a", "A", "b", "B"), counts.as_tuple(), strict=True))
        else:
            row.update({k: v for k, v in counts.to_dict().items() if v is not None})
        return pd.DataFrame([row])

    def __str__(self) -> str:
        lo, hi = self.interval
        pct = round(100 * self.confidence_level, 6)
        band = (
            f"threshold {self.threshold:g}"
            if self.kind == "ratio"
            else f"tolerance {self.threshold:g}"
        )
        return (
            f"{self.metric} ({self.groups[0]} vs {self.groups[1]}) = {self.estimate:.4f}, "
            f"{pct:g}% CI [{lo:.4f}, {hi:.4f}] ({self.method}), {band}: {self.verdict}"
        )
