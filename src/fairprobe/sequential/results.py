"""Results of sequential audits: one audit (:class:`SequentialResult`) or many orders
(:class:`RepeatedAudit`). Both are frozen, keep the raw counts and serialise with ``to_dict``."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from fairprobe.sequential.base import OUTCOMES
from fairprobe.stats.finding import Finding, Question, Verdict
from fairprobe.stats.intervals import normal_quantile

__all__ = ["GroupTally", "RepeatedAudit", "SequentialResult"]


@dataclass(frozen=True)
class GroupTally:
    """Running sums of one group: count, sum and sum of squares of its observations."""

    n: int
    total: float
    total_sq: float

    @property
    def mean(self) -> float:
        return self.total / self.n if self.n else math.nan

    @property
    def var(self) -> float:
        return max(self.total_sq / self.n - self.mean**2, 0.0) if self.n else math.nan

    def to_dict(self) -> dict[str, float]:
        return {"n": self.n, "sum": self.total, "sum_sq": self.total_sq, "mean": self.mean}


@dataclass(frozen=True)
class SequentialResult:
    """One sequential audit: its outcome, the queries it used and the whole path.

    ``path`` holds, per query ``t = 1..queries``, the running statistics (``statistic_upper``
    is compared with ``boundaries["upper"]``, ``statistic_lower`` with ``boundaries["lower"]``;
    both are the GLR ``Lambda_t`` for the GLR test).
    """

    outcome: str
    queries: int
    params: dict[str, Any]
    metric: str
    budget: int
    boundaries: dict[str, float | None]
    group_a: GroupTally
    group_b: GroupTally
    group_names: tuple[str, str]
    path: dict[str, list[float]] = field(repr=False)
    queries_paid: int = 0
    queries_cached: int = 0
    unparsed: int = 0
    #: anytime-valid confidence sequence and e-values per completed pair (default test only)
    pairs: dict[str, list[float]] | None = field(default=None, repr=False)
    #: why an undecided audit stopped before its budget (a group of the pool used up)
    stopped: str | None = None
    #: queries of the budget left unspent because no new pair could form
    queries_saved: int = 0

    @property
    def gap_estimate(self) -> float:
        """``mean_a - mean_b`` of the observations used (rates for decision access)."""
        return self.group_a.mean - self.group_b.mean

    def confidence_interval(self, level: float = 0.95) -> tuple[float, float]:
        """Normal (Wald) interval for the gap at the stopping time.

        Fixed-sample semantics: it ignores the optional stopping, so it is only indicative.
        """
        a, b = self.group_a, self.group_b
        if a.n < 2 or b.n < 2:
            return (-1.0, 1.0) if self.params.get("access") != "logits" else (-math.inf, math.inf)
        se = math.sqrt(a.var / a.n + b.var / b.n)
        z = normal_quantile(level)
        g = self.gap_estimate
        return (g - z * se, g + z * se)

    def anytime_interval(self) -> tuple[float, float] | None:
        """The anytime-valid ``1 - alpha`` confidence sequence for the gap at the stopping time.

        Valid whatever the stopping rule (``None`` for tests without one)."""
        if not self.pairs or not self.pairs.get("cs_low"):
            return None
        return (self.pairs["cs_low"][-1], self.pairs["cs_high"][-1])

    def e_values(self) -> dict[str, float] | None:
        """E-values at the stopping time: against H0 (compliance) and against H1 (violation)."""
        if not self.pairs or not self.pairs.get("log_e_violation"):
            return None
        p = self.pairs
        return _e_values(p)

    @property
    def finding(self) -> Finding:
        """The verdict engine's finding (:mod:`fairprobe.stats.finding`).

        With a confidence sequence (the default test) the finding is that interval and its
        :func:`~fairprobe.stats.finding.decide` verdict, so it never contradicts it: when the
        e-process stopped on a decision that the sequence does not yet support, the finding is
        ``undetermined`` and says so (both are valid at level ``alpha``; the finding keeps what
        both support). Tests without one (``glr-wald``, ``betting``, ``fixed``) give their
        decision, with the normal interval at the stop (indicative: it ignores the stopping).
        """
        tol = float(self.params.get("tolerance", 0.0))
        alpha = float(self.params.get("alpha", 0.05))
        access = str(self.params.get("access", "decisions"))
        scale = "logit" if access == "logits" and self.params.get("observable") != "sigmoid" \
            else "probability"
        q = Question(metric=f"{self.metric}_gap", kind="difference", threshold=tol,
                     groups=tuple(self.group_names), scale=scale,
                     rates=("sequential:" + self.metric,))
        counts = {"queries": self.queries, "outcome": self.outcome}
        cs = self.anytime_interval()
        if cs is not None:
            f = Finding(q, self.gap_estimate, cs[0], cs[1], 1.0 - alpha,
                        "anytime-valid confidence sequence (mixture of bets)",
                        coverage="anytime-valid", counts=counts)
            said = _OUTCOME_VERDICT.get(self.outcome, "undetermined")
            if said != f.verdict:
                f = dataclasses.replace(
                    f, reason=(f"the test stopped on {self.outcome!r} but the confidence sequence "
                               f"[{cs[0]:.4g}, {cs[1]:.4g}] against the band +/-{tol:g} says "
                               f"{f.verdict}: the finding keeps what both support"))
            if self.stopped is not None and f.verdict == "undetermined":
                f = dataclasses.replace(f, reason=self.stopped)
            return f
        lo, hi = self.confidence_interval(1.0 - alpha)
        name = str(self.params.get("test", ""))
        return Finding(q, self.gap_estimate, lo, hi, 1.0 - alpha, "normal at the stop",
                       coverage="none" if name == "glr-wald" else "conditional",
                       counts=counts, forced=_OUTCOME_VERDICT.get(self.outcome, "undetermined"),
                       reason=f"the decision of the {name or 'sequential'} test")

    def to_dict(self) -> dict[str, Any]:
        lo, hi = self.confidence_interval()
        cs = self.anytime_interval()
        alpha = float(self.params.get("alpha", 0.05))
        return {
            "outcome": self.outcome,
            "queries": self.queries,
            "queries_paid": self.queries_paid,
            "queries_cached": self.queries_cached,
            "unparsed": self.unparsed,
            "stopped": self.stopped,
            "queries_saved": self.queries_saved,
            "metric": self.metric,
            "budget": self.budget,
            **self.params,
            "boundaries": self.boundaries,
            "groups": {
                self.group_names[0]: self.group_a.to_dict(),
                self.group_names[1]: self.group_b.to_dict(),
            },
            "gap_estimate": self.gap_estimate,
            "gap_interval_naive": [lo, hi],
            "gap_interval": None
            if cs is None
            else {
                "low": cs[0],
                "high": cs[1],
                "level": 1.0 - alpha,
                "method": "anytime-valid confidence sequence (mixture of bets)",
            },
            "e_values": self.e_values(),
            "finding": self.finding.to_dict(),
            "verdict": self.finding.verdict,
            "path": self.path,
            "pairs": self.pairs,
            # the keys of the pool mode, so that one reader handles both
            "mean_queries": float(self.queries),
            "outcomes": {o: float(o == self.outcome) for o in OUTCOMES},
        }


_OUTCOME_VERDICT: dict[str, Verdict] = {"violation": "unfair", "compliance": "fair",
                                        "compliant": "fair"}


def _e_values(p: dict[str, list[float]]) -> dict[str, float]:
    """E-values from the last entries of a pair path (log scale in the path)."""
    up = max(p["log_e_below_delta"])
    low = max(p["log_e_above_minus_delta"])
    return {
        "against_compliance": math.exp(p["log_e_violation"][-1]),
        "against_violation": math.exp(min(max(up, 0.0), max(low, 0.0))),
        "against_gap_above_delta": math.exp(up),
        "against_gap_below_minus_delta": math.exp(low),
    }


@dataclass(frozen=True)
class RepeatedOutcomes:
    """Summaries shared by results over many query orders: ``queries`` (per order), ``codes``
    (outcome index per order, into :data:`OUTCOMES`) and ``repeats``; the fields every such
    result has (its subclasses add theirs after these)."""

    params: dict[str, Any]
    metric: str
    budget: int
    budget_effective: int
    repeats: int
    seed: int
    queries: npt.NDArray[np.int64] = field(repr=False)
    codes: npt.NDArray[np.int8] = field(repr=False)

    def _summary_dict(self) -> dict[str, Any]:
        """The keys every repeated result's ``to_dict`` opens with: queries, outcome shares and
        the audit's parameters (one reader handles the two-group and several-group forms)."""
        q = self.queries
        return {
            "mean_queries": self.mean_queries,
            "queries": q.tolist(),
            "outcomes": self.shares,
            "outcome_counts": self.outcome_counts,
            "sd_queries": float(q.std(ddof=1)) if len(q) > 1 else 0.0,
            "median_queries": float(np.median(q)),
            "q10_queries": float(np.quantile(q, 0.1)),
            "q90_queries": float(np.quantile(q, 0.9)),
            "metric": self.metric,
            **self.params,
            "budget": self.budget,
            "budget_effective": self.budget_effective,
            "repeats": self.repeats,
            "seed": self.seed,
        }

    @property
    def mean_queries(self) -> float:
        return float(self.queries.mean())

    @property
    def shares(self) -> dict[str, float]:
        counts = np.bincount(self.codes, minlength=3)
        return {o: float(counts[i] / self.repeats) for i, o in enumerate(OUTCOMES)}

    @property
    def outcome_counts(self) -> dict[str, int]:
        counts = np.bincount(self.codes, minlength=3)
        return {o: int(counts[i]) for i, o in enumerate(OUTCOMES)}


@dataclass(frozen=True)
class RepeatedAudit(RepeatedOutcomes):
    """The same audit over many random query orders of one pool."""

    group_names: tuple[str, str]
    truth: dict[str, float]
    wald_bound: float
    #: the first order's whole path (statistics, boundaries, confidence sequence), for figures
    example: dict[str, Any] | None = field(default=None, repr=False)

    @property
    def ratio_to_wald(self) -> float:
        """Mean queries over Wald's lower bound (``nan`` when the bound is infinite)."""
        if not math.isfinite(self.wald_bound) or self.wald_bound <= 0:
            return math.nan
        return self.mean_queries / self.wald_bound

    def share_interval(self, outcome: str, level: float = 0.95) -> tuple[float, float]:
        """Wilson interval of the share of ``outcome`` over the orders."""
        k = self.outcome_counts[outcome]
        n = self.repeats
        z = normal_quantile(level)
        p = k / n
        den = 1 + z * z / n
        c = (p + z * z / (2 * n)) / den
        h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
        return (max(0.0, c - h), min(1.0, c + h))

    confidence_interval = share_interval

    def to_dict(self) -> dict[str, Any]:
        return {
            **self._summary_dict(),
            "group_a": self.group_names[0],
            "group_b": self.group_names[1],
            "pool": self.truth,
            "wald_lower_bound": self.wald_bound,
            "ratio_to_wald": self.ratio_to_wald,
            "outcome_per_repeat": [OUTCOMES[c] for c in self.codes.tolist()],
            "boundaries": self._boundaries(),
            "example_path": self.example,
        }

    def _boundaries(self) -> dict[str, float | None]:
        from fairprobe.sequential.base import get_test

        keys = ("tolerance", "access", "alpha", "beta")
        t = get_test(str(self.params["test"]), **{k: self.params[k] for k in keys})
        return t.boundaries.to_dict()
