r"""The verdict engine: one question, one interval, one three-way verdict.

Every path that answers a fairness question (two-group and every-group ``audit``, ``sequential``,
``twosource``, ``radius``, ``collab``, the Python functions, ``AuditFrame`` and the report)
states its answer as a :class:`Finding` and takes its verdict from :func:`decide`, so the same
question on the same evidence gets the same verdict whichever way it is asked.

A finding is

* a :class:`Question`: the metric, the groups it compares, the threshold in the metric's own
  units (a tolerance for differences, a floor for ratios) and what it is about (the audited
  model, or a simulation / demonstration whose truth is known);
* an estimate and an interval ``[low, high]`` at ``confidence_level``, with the name of its
  construction and what its coverage rests on (:data:`COVERAGE`);
* the verdict of :func:`decide`, and a reason when it is ``undetermined``.

The verdict rule (:func:`decide`), for an interval that covers the true value with probability
at least ``confidence_level``:

* differences, judged against the fair band :math:`[-\tau, \tau]`: ``fair`` if
  :math:`-\tau \le \text{low}` and :math:`\text{high} \le \tau`; ``unfair`` if
  :math:`\text{high} < -\tau` or :math:`\text{low} > \tau`; ``undetermined`` otherwise (an
  interval of an absolute gap, ``low >= 0``, is judged by the same rule);
* ratios, judged against the floor :math:`\rho` (80% rule: 0.8): ``fair`` if
  :math:`\text{low} \ge \rho`, ``unfair`` if :math:`\text{high} < \rho`, ``undetermined``
  otherwise;
* an undefined bound (``nan``) is ``undetermined``.

If the interval covers, the verdict is right: "fair" needs the whole interval inside the band,
"unfair" the whole interval outside, so a wrong "fair" or "unfair" needs the interval to miss
the true value, which happens with probability at most ``1 - confidence_level``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from fairprobe.errors import InvalidParameterError

__all__ = [
    "COVERAGE",
    "SUBJECTS",
    "Finding",
    "Kind",
    "Question",
    "Verdict",
    "decide",
    "decide_array",
]

Verdict = Literal["fair", "unfair", "undetermined"]
Kind = Literal["difference", "ratio"]

#: What an interval's coverage rests on.
COVERAGE: dict[str, str] = {
    "exact": "at least the nominal level at every rate and sample size, by construction",
    "anytime-valid": "at least the nominal level at every stopping time (a confidence sequence)",
    "asymptotic": "the nominal level in large samples only; it can dip below it in small ones",
    "bootstrap": "the nominal level approximately (bootstrap); not guaranteed",
    "conditional": "the nominal level if the method's stated assumptions hold",
    "none": "no coverage statement: a point estimate against the threshold",
}

#: What a finding is about: the audited model counts in a report's headline, the others do not.
SUBJECTS = ("model", "simulation", "demonstration")


def decide(low: float, high: float, *, kind: Kind, threshold: float) -> Verdict:
    """The three-way verdict of an interval ``[low, high]`` (rule in the module docstring)."""
    lo, hi = float(low), float(high)
    if math.isnan(lo) or math.isnan(hi):
        return "undetermined"
    th = float(threshold)
    if kind == "ratio":
        if lo >= th:
            return "fair"
        return "unfair" if hi < th else "undetermined"
    if lo >= -th and hi <= th:
        return "fair"
    return "unfair" if (hi < -th or lo > th) else "undetermined"


def decide_array(
    low: npt.ArrayLike, high: npt.ArrayLike, *, kind: Kind, threshold: float
) -> npt.NDArray[np.str_]:
    """:func:`decide` over arrays of bounds (simulations): an array of verdict strings."""
    lo = np.asarray(low, dtype=np.float64)
    hi = np.asarray(high, dtype=np.float64)
    th = float(threshold)
    if kind == "ratio":
        fair, unfair = lo >= th, hi < th
    else:
        fair = (lo >= -th) & (hi <= th)
        unfair = (hi < -th) | (lo > th)
    out = np.where(fair, "fair", np.where(unfair, "unfair", "undetermined"))
    return np.where(np.isnan(lo) | np.isnan(hi), "undetermined", out)


@dataclass(frozen=True, slots=True)
class Question:
    """What is asked: a metric between groups, against a threshold in the metric's units.

    Attributes
    ----------
    metric : str
        Full metric name (``demographic_parity_difference``, ``disparate_impact_ratio``, ...).
    kind : {"difference", "ratio"}
        Judged against the band ``[-threshold, threshold]`` or the floor ``threshold``.
    threshold : float
        Tolerance (differences) or floor (ratios), in the units of ``scale``.
    groups : tuple of str
        The groups compared: two for a pairwise question, every compared group otherwise.
    scale : str
        Units of the metric and the threshold (``"probability"`` for rates and their
        differences, ``"ratio"``, ``"score"`` for mean scores).
    subject : {"model", "simulation", "demonstration"}
        ``"model"`` for a finding about the audited model; the others (a simulation or demo on
        data whose truth is known) are reported apart and never count in a headline.
    rates : tuple of str
        The per-group rates the metric compares (e.g. ``("selection_rate",)`` for both DP and
        DI): two findings on the same answers with the same rates are the same question.
    """

    metric: str
    kind: Kind
    threshold: float
    groups: tuple[str, ...] = ()
    scale: str = "probability"
    subject: str = "model"
    rates: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in ("difference", "ratio"):
            raise InvalidParameterError(
                f"Question.kind must be 'difference' or 'ratio'; got {self.kind!r}."
            )
        if self.subject not in SUBJECTS:
            raise InvalidParameterError(
                f"Question.subject must be one of {SUBJECTS}; got {self.subject!r}."
            )
        if not math.isfinite(float(self.threshold)) or float(self.threshold) < 0:
            raise InvalidParameterError(
                f"Question.threshold must be a finite number >= 0; got {self.threshold!r}."
            )

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "kind": self.kind,
            "threshold": float(self.threshold),
            "groups": list(self.groups),
            "scale": self.scale,
            "subject": self.subject,
            "rates": list(self.rates),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Question:
        return cls(
            metric=str(d["metric"]), kind=d["kind"], threshold=float(d["threshold"]),
            groups=tuple(str(g) for g in d.get("groups", ())),
            scale=str(d.get("scale", "probability")), subject=str(d.get("subject", "model")),
            rates=tuple(str(r) for r in d.get("rates", ())),
        )


def _json_float(x: float) -> float | None:
    return float(x) if math.isfinite(float(x)) else None


def _float(x: Any) -> float:
    return math.nan if x is None else float(x)


@dataclass(frozen=True)
class Finding:
    """One answered question: estimate, interval with its construction, and the verdict.

    Attributes
    ----------
    question : Question
    estimate : float
        Point estimate (``nan`` when undefined).
    low, high : float
        Interval for the true value at ``confidence_level`` (``-inf`` / ``inf`` allowed).
    confidence_level : float
        Level of the interval; for a family of findings, the family-wise level.
    construction : str
        How the interval is built (``"exact"``, ``"newcombe"``, ``"confidence-sequence"``, ...).
    coverage : str
        A key of :data:`COVERAGE`: what the coverage rests on.
    reason : str or None
        Why the verdict is what it is when that needs saying (always set when undetermined by a
        method that could not decide for a reason other than the interval, e.g. a budget).
    counts : mapping
        The raw evidence the interval is computed from (JSON-ready).
    condition : str or None
        For ``coverage="conditional"``: the condition the coverage rests on, stated as the
        headline states it (e.g. ``"at most 2 auditors lie"``). A conditional finding without
        a stated condition is shown but never counted in a report's headline.
    forced : {"fair", "unfair", "undetermined"} or None
        Set when the verdict does not come from the interval: ``undetermined`` when the method
        refuses to decide (e.g. too few answers), or the decision of a sequential test that has
        no confidence sequence (``coverage`` then says what its guarantee rests on); ``reason``
        says why.
    verdict : {"fair", "unfair", "undetermined"}
        :func:`decide` of the interval (or ``forced``).
    """

    question: Question
    estimate: float
    low: float
    high: float
    confidence_level: float
    construction: str
    coverage: str = "exact"
    reason: str | None = None
    counts: Mapping[str, Any] = field(default_factory=dict)
    forced: Verdict | None = None
    condition: str | None = None
    verdict: Verdict = field(init=False)

    def __post_init__(self) -> None:
        if self.coverage not in COVERAGE:
            raise InvalidParameterError(
                f"Finding.coverage must be one of {sorted(COVERAGE)}; got {self.coverage!r}."
            )
        if not 0.0 < float(self.confidence_level) < 1.0 and self.coverage != "none":
            raise InvalidParameterError(
                f"Finding.confidence_level must be in (0, 1); got {self.confidence_level!r}."
            )
        if self.forced is not None and self.forced not in ("fair", "unfair", "undetermined"):
            raise InvalidParameterError(
                f"Finding.forced must be fair, unfair, undetermined or None; got {self.forced!r}."
            )
        v: Verdict = (
            self.forced if self.forced is not None
            else decide(self.low, self.high, kind=self.question.kind,
                        threshold=self.question.threshold)
        )
        object.__setattr__(self, "verdict", v)

    def confidence_interval(self) -> tuple[float, float]:
        return (float(self.low), float(self.high))

    @property
    def subject(self) -> str:
        return self.question.subject

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape every result document uses for a finding."""
        return {
            "question": self.question.to_dict(),
            "estimate": _json_float(float(self.estimate)),
            "interval": {
                "low": _json_float(float(self.low)),
                "high": _json_float(float(self.high)),
                "level": float(self.confidence_level),
                "construction": self.construction,
                "coverage": self.coverage,
            },
            "verdict": self.verdict,
            "reason": self.reason,
            "forced": self.forced,
            "condition": self.condition,
            "counts": dict(self.counts),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Finding:
        """Rebuild a finding from :meth:`to_dict` (the verdict is recomputed, never trusted).

        ``null`` bounds come back as ``-inf`` (low) / ``inf`` (high), as written for
        unbounded intervals; a missing estimate as ``nan``.
        """
        iv = d["interval"]
        low = -math.inf if iv.get("low") is None else float(iv["low"])
        high = math.inf if iv.get("high") is None else float(iv["high"])
        return cls(
            question=Question.from_dict(d["question"]),
            estimate=_float(d.get("estimate")),
            low=low, high=high, confidence_level=float(iv["level"]),
            construction=str(iv.get("construction", "unknown")),
            coverage=str(iv.get("coverage", "none")),
            reason=d.get("reason"), counts=dict(d.get("counts") or {}),
            forced=d["forced"] if d.get("forced") in ("fair", "unfair", "undetermined") else None,
            condition=str(d["condition"]) if d.get("condition") else None,
        )

    @property
    def guarantee(self) -> Literal["guaranteed", "conditional"] | None:
        """Whether the verdict carries a guarantee a headline may count.

        ``"guaranteed"``: an ``exact`` or ``anytime-valid`` interval whose verdict is
        :func:`decide` of it (or a forced ``undetermined``, which is never wrong);
        ``"conditional"``: the same for a ``conditional`` interval with a stated
        :attr:`condition`; ``None`` otherwise (asymptotic, bootstrap, no coverage, a
        conditional one whose condition is not stated, or a verdict forced by a test that
        has no valid interval, such as a non-rejection read as "fair"). A forced ``unfair``
        with ``anytime-valid`` coverage is the rejection of an anytime-valid test (a
        monitor's alarm) and is ``"guaranteed"``.
        """
        if self.forced == "unfair" and self.coverage == "anytime-valid":
            # the rejection of an anytime-valid test (the monitor's e-process crossed m/alpha):
            # wrong with probability at most 1 - confidence_level whenever it is looked at
            return "guaranteed"
        if self.forced not in (None, "undetermined"):
            return None
        if self.coverage in ("exact", "anytime-valid"):
            return "guaranteed"
        if self.coverage == "conditional" and self.condition:
            return "conditional"
        return None
