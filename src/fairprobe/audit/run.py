"""The fixed-budget black-box audit: draw queries, ask the model, compute the metrics.

:func:`run_group_audit` audits every group of one column (or every intersection of several) and
returns a :class:`GroupAudit`, an :class:`~fairprobe.stats.frame.AuditFrame` of the answers with
the query accounting; :func:`run_audit` computes one metric between two groups.

This is the first main job of fairprobe (``fairprobe audit``). It draws ``budget`` queries
without replacement from a query pool (seeded; the every-group form per group, see
:func:`allocate`, in stages for ``neyman`` and ``adaptive``), asks the model through a
:class:`~fairprobe.access.BlackBox` (so every answer is cached and an interrupted audit resumes
without paying twice), drops and counts the answers that do not parse, and computes the metric
with its confidence interval and verdict through :func:`fairprobe.stats.compute_metric`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt
import pandas as pd

from fairprobe import metrics as _metrics
from fairprobe._validation import check_choice, check_int, split_names
from fairprobe.access import AnswerBatch
from fairprobe.access.base import OUTCOMES
from fairprobe.access.blackbox import BlackBox
from fairprobe.audit.run_options import (
    DEFAULT_ALLOCATION,
    ModelColumns,
    QueryRun,
    model_audit_options,
)
from fairprobe.errors import AnswerParseError, BudgetError, DataError
from fairprobe.options import AuditQuestion
from fairprobe.stats import METRICS, MetricResult, compute_metric, select_groups
from fairprobe.stats.frame import AuditFrame, GroupSummary, fairness_metric_name
from fairprobe.stats.groups import DEFAULT_MIN_GROUP_SIZE

__all__ = [
    "AuditResult",
    "ColumnPlan",
    "GroupAudit",
    "ALLOCATIONS",
    "allocate",
    "neyman_split",
    "draw_queries",
    "plan_columns",
    "TWO_GROUP_METRICS",
    "run_audit",
    "run_group_audit",
]

#: The metrics :func:`run_audit` computes as one :class:`MetricResult` between two groups: the
#: registered ones :func:`fairprobe.stats.compute_metric` has, and ``performance_gap`` (a mean of
#: per-instance correctness with Welch's interval, under its own name). Every other registered
#: metric between two groups is the group audit of those two groups
#: (:func:`fairprobe.audit.audit_model`), the estimator of every other path.
TWO_GROUP_METRICS = tuple(m for m in METRICS if m in _metrics.METRICS) + ("performance_gap",)
#: Short names of :data:`TWO_GROUP_METRICS` (compatibility table; the registry holds them all).
METRIC_ALIASES = {**{a: n for a, n in _metrics.aliases().items() if n in TWO_GROUP_METRICS},
                  "gap": "performance_gap"}


def _metric_name(metric: str) -> str:
    key = str(metric).strip().lower()
    if key in METRICS:
        return key
    name = _metrics.resolve(metric, flag="the 'metric' parameter of run_audit (--metric)").name
    if name not in TWO_GROUP_METRICS:
        from fairprobe.errors import InvalidParameterError

        shorts = ", ".join(_metrics.short_name(m) for m in TWO_GROUP_METRICS
                           if m in _metrics.METRICS)
        raise InvalidParameterError(
            f"--metric {metric}: run_audit computes {shorts} or performance_gap between two "
            f"groups; {name} is computed by run_group_audit (audit_model with group_a/group_b "
            "audits those two groups with it).")
    return name


@dataclass(frozen=True)
class AuditResult:
    """The outcome of a fixed-budget audit.

    Attributes
    ----------
    metric : MetricResult
        Estimate, raw counts, confidence interval and verdict.
    budget : int
        Queries the audit was allowed.
    queried : int
        Queries asked (paid now or answered from the cache).
    paid, cached : int
        Of those, answers paid for in this run, and answers replayed from the cache.
    unparsed : int
        Answers that did not parse: dropped from the metric and reported.
    seed : int
        Seed of the query draw.
    backend : str
        Identity of the audited backend.
    group_col : str
        The group column.
    values, in_group_a : ndarray
        Per-instance value behind the metric (the decision for DP/DI/EO, the per-instance value
        for the performance gap) and group membership, for the consistency radius.
    """

    metric: MetricResult
    budget: int
    queried: int
    paid: int
    cached: int
    unparsed: int
    seed: int
    backend: str
    group_col: str
    values: npt.NDArray[np.float64] = field(repr=False)
    in_group_a: npt.NDArray[np.bool_] = field(repr=False)
    outcomes_by_group: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def verdict(self) -> str:
        return str(self.metric.verdict)

    def confidence_interval(self, confidence_level: float | None = None) -> Any:
        return self.metric.confidence_interval(confidence_level)

    def to_dict(self, per_instance: bool = True) -> dict[str, Any]:
        """JSON-ready dict; the keys are documented in ``docs/audit.md``."""
        out: dict[str, Any] = {
            "kind": "fairprobe.audit",
            "metric": self.metric.to_dict(),
            "verdict": self.verdict,
            "budget": self.budget,
            "queried": self.queried,
            "paid": self.paid,
            "cached": self.cached,
            "unparsed": self.unparsed,
            "seed": self.seed,
            "backend": self.backend,
            "group_col": self.group_col,
        }
        if self.outcomes_by_group:
            out["outcomes_by_group"] = self.outcomes_by_group
        if per_instance:
            groups = self.metric.groups
            out["per_instance"] = [
                {"value": float(v), "group": groups[0] if g else groups[1]}
                for v, g in zip(self.values.tolist(), self.in_group_a.tolist(), strict=True)
            ]
        return out


#: How a fixed budget is split across the groups of the pool (``--allocation``).
ALLOCATIONS = ("uniform", "balanced", "neyman", "adaptive")


def allocate(sizes: Sequence[int], budget: int, allocation: str = DEFAULT_ALLOCATION,
             weights: Sequence[float] | None = None) -> list[int]:
    """Queries per group for a fixed budget.

    ``uniform``: the budget drawn over rows, so each group gets its share of the pool in
    expectation (this returns that expectation, rounded down).
    ``balanced`` (and ``adaptive``, whose batches never spend more than this): equal queries
    per group; a group smaller than its share is taken whole and the rest is spread over the
    others (water-filling: ``n_g = min(N_g, c)`` with the largest ``c`` such that
    ``sum n_g <= budget``, leftovers one each to the largest groups).
    ``neyman``: the same water-filling with ``n_g = min(N_g, c w_g)`` for Neyman's weights
    ``weights`` (:func:`fairprobe.stats.allocation.neyman_weights`; without them every rate
    is taken as 0.5, the conservative rate, and the split is equal), leftovers by largest
    remainders.
    """
    check_choice(allocation, "allocation", "allocate", ALLOCATIONS)
    n = np.asarray(sizes, dtype=np.int64)
    if budget >= int(n.sum()):
        return [int(v) for v in n]
    if allocation == "uniform":
        return [int(v) for v in n * budget // int(n.sum())]
    if allocation == "neyman" and weights is not None:
        return _water_fill(n, int(budget), np.asarray(weights, dtype=np.float64))
    order = np.argsort(n, kind="stable")
    out = np.zeros_like(n)
    left, k = int(budget), len(n)
    for i, g in enumerate(order):
        share = left // (k - i)
        out[g] = min(int(n[g]), share)
        left -= int(out[g])
    # leftover queries (from integer division), one each to groups with rows to spare
    for g in order[::-1]:
        if left <= 0:
            break
        if out[g] < n[g]:
            out[g] += 1
            left -= 1
    return [int(v) for v in out]


def _water_fill(n: npt.NDArray[np.int64], budget: int, w: npt.NDArray[np.float64]) -> list[int]:
    """``min(N_g, c w_g)`` with the largest ``c`` that spends ``budget`` (groups taken whole
    first), the free groups' integer sizes by largest remainders."""
    from fairprobe.stats.allocation import apportion

    out = np.zeros_like(n)
    free = np.ones(n.size, dtype=bool)
    left = budget
    while free.any():
        c = left / float(w[free].sum())
        whole = free & (n <= c * w)
        if not whole.any():
            break
        out[whole] = n[whole]
        left -= int(n[whole].sum())
        free &= ~whole
    if free.any():
        out[free] = apportion(left, w[free] / w[free].sum())
    return [int(v) for v in out]


def neyman_split(sizes: npt.ArrayLike, budget: int, asked: npt.ArrayLike,
                 weights: npt.ArrayLike) -> npt.NDArray[np.int64]:
    """Each group's total after a pilot: Neyman's water-filled split of ``budget``
    (:func:`allocate`), never below what the pilot ``asked``, the excess (a pilot above a
    group's share) taken from the largest totals."""
    got = np.asarray(asked, dtype=np.int64)
    total = np.maximum(np.asarray(allocate(list(np.asarray(sizes).tolist()), budget, "neyman",
                                           np.asarray(weights).tolist()), dtype=np.int64), got)
    over = int(total.sum() - budget)
    for g in np.argsort(-total, kind="stable"):
        if over <= 0:
            break
        cut = min(over, int(total[g] - got[g]))
        total[g] -= cut
        over -= cut
    return total


def _group_order(pool: pd.DataFrame, group_cols: Sequence[str], rng: np.random.Generator,
                 ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], list[str],
                            npt.NDArray[np.int64]]:
    """Each row's group code, the group sizes and labels, and each row's rank in its group's
    seeded order: the first ``m`` rows of a group in that order are a uniform sample without
    replacement within it, and a larger ``m`` extends a smaller one (the staged draws of
    ``neyman`` and ``adaptive`` ask the same rows again, from the cache, on a rerun)."""
    codes, uniques = pd.factorize(pool[list(group_cols)].astype(str).agg(", ".join, axis=1),
                                  sort=True)
    sizes = np.bincount(codes, minlength=len(uniques))
    perm = rng.permutation(len(pool))
    rank = np.empty(len(pool), dtype=np.int64)
    order = np.argsort(codes[perm], kind="stable")
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    rank[perm[order]] = np.arange(len(pool)) - np.repeat(starts, sizes)
    return (np.asarray(codes, dtype=np.int64), np.asarray(sizes, dtype=np.int64),
            [str(u) for u in uniques], rank)


def draw_queries(pool: pd.DataFrame, budget: int, seed: int, *,
                 group_cols: Sequence[str] | None = None,
                 allocation: str = "uniform") -> pd.DataFrame:
    """``budget`` rows of ``pool`` drawn without replacement (all rows if fewer), seeded.

    ``allocation="uniform"`` draws over rows; ``"balanced"`` (with ``group_cols``) draws
    within each group the number of rows :func:`allocate` gives it, so every group's rate is
    estimated within that group. ``"neyman"`` and ``"adaptive"`` draw in stages that depend on
    the answers (:func:`run_group_audit`); here they give the balanced draw, the most an
    adaptive audit asks.
    """
    budget = check_int(budget, "budget", "draw_queries", lo=1)
    seed = check_int(seed, "seed", "draw_queries", lo=0)
    check_choice(allocation, "allocation", "draw_queries", ALLOCATIONS)
    if len(pool) == 0:
        raise DataError("The query pool is empty.")
    rng = np.random.default_rng(seed)
    if allocation == "uniform" or not group_cols or budget >= len(pool):
        order = rng.permutation(len(pool))[: min(budget, len(pool))]
        return pool.iloc[np.sort(order)].reset_index(drop=True)
    codes, sizes, _, rank = _group_order(pool, group_cols, rng)
    want = allocate(sizes.tolist(), budget, "balanced")
    keep = rank < np.asarray(want)[codes]
    return pool.iloc[np.flatnonzero(keep)].reset_index(drop=True)


def allocation_record(pool: pd.DataFrame, sample: pd.DataFrame, group_cols: Sequence[str],
                      allocation: str) -> dict[str, Any]:
    """The JSON record of a draw: the method, queries and pool rows per group."""
    def counts(df: pd.DataFrame) -> dict[str, int]:
        lab = df[list(group_cols)].astype(str).agg(", ".join, axis=1)
        return {str(k): int(v) for k, v in lab.value_counts().sort_index().items()}

    rows, drawn = counts(pool), counts(sample)
    return {"method": allocation,
            "queries_by_group": {g: drawn.get(g, 0) for g in rows},
            "pool_rows_by_group": rows,
            "note": ("each group's rate is estimated within its group; a figure over the "
                     "whole population would be reweighted to the pool's shares")}


def _check_columns(pool: pd.DataFrame, cols: Sequence[str], what: str) -> None:
    missing = [c for c in cols if c not in pool.columns]
    if missing:
        have = ", ".join(map(str, pool.columns[:12]))
        raise DataError(f"The query pool has no {what} column {missing[0]!r} (columns: {have}).")


#: Column names taken for the true label when no label column is named (never sent).
LABEL_NAMES = ("income", "label", "labels", "target", "y", "y_true", "class", "outcome",
               "ground_truth", "truth")


@dataclass(frozen=True)
class ColumnPlan:
    """Which columns of the query pool are sent to the model, and which are withheld.

    Attributes
    ----------
    sent : list of str
        The columns every query carries (nothing else leaves the process).
    label : str or None
        The true-label column (never sent).
    groups : list of str
        The sensitive column(s).
    group_sent : bool
        Whether a sensitive column is among ``sent`` (``send_group`` or an endpoint that needs
        it).
    withheld : dict
        Every column not sent, with the reason.
    """

    sent: list[str]
    label: str | None
    groups: list[str]
    group_sent: bool
    withheld: dict[str, str]

    def to_dict(self) -> dict[str, Any]:
        return {
            "sent": list(self.sent),
            "label": self.label,
            "groups": list(self.groups),
            "group_sent": self.group_sent,
            "withheld": dict(self.withheld),
        }

    def summary(self) -> str:
        """``sent: age, race; withheld: income (label), sex (sensitive)``."""
        held = ", ".join(f"{c} ({why.split(':')[0]})" for c, why in self.withheld.items())
        return f"sent: {', '.join(self.sent)}" + (f"; withheld: {held}" if held else "")


def plan_columns(
    pool: pd.DataFrame,
    *,
    group_cols: Sequence[str],
    label_col: str | None = None,
    feature_cols: Sequence[str] | None = None,
    send_group: bool = False,
    required: Sequence[str] | None = None,
    answer_cols: Sequence[str] = (),
) -> ColumnPlan:
    """Decide which columns leave the process: the features, never the label.

    Parameters
    ----------
    pool : DataFrame
        The query pool.
    group_cols : sequence of str
        The sensitive column(s): sent only with ``send_group``, when listed in ``required``
        (an endpoint whose input schema needs them, like the platform's audit API), or when
        named in ``feature_cols`` together with ``send_group``.
    label_col : str, optional
        The true-label column: never sent. Without it, a column named like a label
        (:data:`LABEL_NAMES`, e.g. ``income``) is taken as the label and withheld.
    feature_cols : sequence of str, optional
        Exactly the columns to send. Default: ``required`` if given, else every column but the
        label(s) and the sensitive column(s).
    send_group : bool
        Send the sensitive column(s) too (``--send-group``).
    required : sequence of str, optional
        The input fields of a known endpoint shape (e.g. the platform's ``AUDIT_FEATURES``).
    answer_cols : sequence of str
        Columns holding recorded answers (a replay table's decision, score and logit columns,
        when the pool is that table): withheld by default, like the label.

    Raises
    ------
    DataError
        A named column is missing, the label is listed among the features, or a sensitive column
        is listed without ``send_group`` (the message says which flag to use).
    """
    groups = [str(c) for c in group_cols]
    _check_columns(pool, groups, "group")
    if label_col is not None:
        _check_columns(pool, [label_col], "label")
    labels = [label_col] if label_col is not None else [
        str(c) for c in pool.columns if str(c).lower() in LABEL_NAMES and str(c) not in groups
    ]
    withheld: dict[str, str] = {}
    if feature_cols is not None:
        sent = list(dict.fromkeys(str(c) for c in feature_cols))
        _check_columns(pool, sent, "feature")
        leak = [c for c in sent if c == label_col]
        if leak:
            raise DataError(
                f"--feature-cols includes the label column {leak[0]!r}: the model must not see "
                "the answer; drop it from --feature-cols."
            )
        named = [c for c in sent if c in groups]
        needed = set(required or ())
        if named and not send_group and not set(named) <= needed:
            raise DataError(
                f"--feature-cols includes the sensitive column {named[0]!r}; pass --send-group "
                "to send it to the model, or drop it from --feature-cols."
            )
    elif required is not None:
        missing = [c for c in required if c not in pool.columns]
        if missing:
            raise DataError(
                f"The endpoint needs the column(s) {', '.join(map(repr, missing))}, absent from "
                "the query pool; add them or give --feature-cols."
            )
        sent = [c for c in required if c not in labels or c in groups]
    else:
        answers = set(map(str, answer_cols)) - set(groups)
        sent = [str(c) for c in pool.columns
                if str(c) not in labels and str(c) not in answers
                and (send_group or str(c) not in groups)]
        if send_group:
            sent += [g for g in groups if g not in sent]
    if not sent:
        if feature_cols is not None:
            raise DataError("--feature-cols names no column; list the columns to send.")
        raise DataError("No column is left to send to the model; give --feature-cols.")
    for c in map(str, pool.columns):
        if c in sent:
            continue
        if c == label_col:
            withheld[c] = "label: never sent"
        elif c in labels:
            withheld[c] = "label: named like a label; pass --label-col or --feature-cols to choose"
        elif c in groups:
            withheld[c] = "sensitive: pass --send-group to send it"
        elif c in answer_cols:
            withheld[c] = "answer: the replay table's recorded answers"
        else:
            withheld[c] = "not a feature"
    return ColumnPlan(
        sent=sent,
        label=label_col if label_col is not None else (labels[0] if labels else None),
        groups=groups,
        group_sent=any(g in sent for g in groups),
        withheld=withheld,
    )


#: run_audit's flat keywords (the compatibility form) of its columns and its draw.
_RUN_AUDIT_FLAGS = ("group_col", "label_col", "feature_cols", "pos_label", "budget", "seed",
                    "max_unusable_share", "interval")


def run_audit(
    blackbox: BlackBox,
    pool: pd.DataFrame,
    *,
    group_a: Any = None,
    group_b: Any = None,
    metric: str = _metrics.DI.short,
    tolerance: float | None = None,
    threshold: float | None = None,
    confidence_level: float = 0.95,
    min_group_size: int = DEFAULT_MIN_GROUP_SIZE,
    columns: ModelColumns | None = None,
    run: QueryRun | None = None,
    **flags: Any,
) -> AuditResult:
    """Run a fixed-budget black-box audit of one fairness metric.

    The question (the metric, its band, level and smallest group) is given as keywords and
    passed to the metric's estimator unchanged, which checks them as every two-group metric
    does. The options objects say what is read and drawn: ``columns`` the pool's ``group``,
    ``label``, ``features`` and ``pos_label``
    (:class:`~fairprobe.audit.run_options.ModelColumns`), ``run`` the ``budget``, ``seed``,
    ``interval`` and ``max_unusable_share`` (:class:`~fairprobe.audit.run_options.QueryRun`).
    ``flags`` are the same values as flat keywords, the names below (the compatibility form);
    they set those fields of the objects.

    Parameters
    ----------
    blackbox : BlackBox
        The audited model, with its cache and budget.
    pool : DataFrame
        The query pool: feature columns, the group column, and the label column if the metric
        needs true labels.
    group_a, group_b : value, optional
        The two groups compared (``None``: every other value).
    metric : str
        ``disparate_impact`` (``di``), ``demographic_parity`` (``dp``/``sp``),
        ``equal_opportunity`` (``eo``, needs ``label_col``) or ``performance_gap``
        (mean correctness with Welch's interval, needs ``label_col``). Other registered
        metrics (``accuracy-gap``, ``fpr``, ...) are :func:`run_group_audit`'s.
    tolerance, threshold, confidence_level : float
        The fair band half-width of differences, the threshold of the ratio (80% rule), and the
        confidence level of the interval.
    min_group_size : int
        The one group-filtering rule: a group with fewer answers than this on which the metric
        is defined leaves the verdict ``undetermined``, with the reason.

    Other Parameters
    ----------------
    group_col : str
        The sensitive attribute (required without ``columns``).
    feature_cols : sequence of str, optional
        Columns sent to the model; default every column but the label (``label_col``, or a
        column named like one) and the group column (see :func:`plan_columns`).
    label_col, pos_label : optional
        The true-label column, and its positive value when its labels are not 0/1 (e.g.
        ``">50K"``).
    budget, seed : int
        Queries drawn from the pool (default 1000), uniformly without replacement, with this
        seed (default 0).
    max_unusable_share : float, optional
        Strict mode: stop with :class:`~fairprobe.errors.AnswerParseError` as soon as a group's
        share of unusable answers (unparsed, refused or truncated) exceeds this, checked after
        each tenth of the queries once the group has 20 answers, and on all answers at the end.
        Answers paid before the stop stay in the cache.
    interval : {"exact", "score", "newcombe", "katz"}
        Construction of the interval (:func:`fairprobe.stats.api.compute_metric`'s ``method``):
        ``exact`` (default) keeps the level at every rate and size.

    Raises
    ------
    DataError
        A missing column, NaN in the group or label column, labels that are not 0/1 (without
        ``pos_label``), a group absent from the pool. Raised before any query is paid.
    BudgetError
        A budget below one query per group.
    TypeError
        An unknown keyword, or no group column.
    """
    _, c, r = model_audit_options("run_audit", flags, _RUN_AUDIT_FLAGS, (None, columns, run))
    q = _TwoGroupQuestion(tolerance, threshold, confidence_level, min_group_size)
    name = _metric_name(metric)
    budget = check_int(r.budget, "budget", "run_audit", lo=1)
    feats = _check_two_group_pool(pool, name, c, budget)
    sample = draw_queries(pool, budget, r.seed)
    if c.label is not None and name in _LABELLED:
        _check_labels(sample[c.label], c.label, c.pos_label)
    group_col: Any = c.group  # one column: a label of the pool
    if group_a is not None and not (sample[group_col] == group_a).any():
        raise BudgetError(
            f"The {budget} queries drawn hold no member of group {group_a!r}: raise the budget "
            f"or check that {group_a!r} is a value of {group_col!r}."
        )
    before_paid, before_cached = blackbox.spent, blackbox.from_cache
    answers = _query(blackbox, sample[feats], sample[group_col], r.max_unusable_share)
    if not answers.parsed.any():
        raise _no_usable_answer(answers)
    result, values, used, in_a = _two_group_metric(name, sample, answers, (group_a, group_b),
                                                   q, c, r)
    return AuditResult(
        metric=result,
        budget=budget,
        queried=len(sample),
        paid=blackbox.spent - before_paid,
        cached=blackbox.from_cache - before_cached,
        unparsed=int((~answers.parsed).sum()),
        seed=r.seed,
        backend=blackbox.identity,
        group_col=group_col,
        values=np.asarray(values, dtype=float)[used],
        in_group_a=in_a[used],
        outcomes_by_group=outcomes_by_group(answers, sample[group_col].to_numpy()),
    )


#: The two-group metrics that need true labels.
_LABELLED = (_metrics.EO.name, "performance_gap")


class _TwoGroupQuestion(NamedTuple):
    """run_audit's band, level and smallest group, as given (its estimator checks them)."""

    tolerance: float | None
    threshold: float | None
    confidence_level: float
    min_group_size: int


def _check_two_group_pool(pool: pd.DataFrame, name: str, c: ModelColumns,
                          budget: int) -> list[str]:
    """run_audit's checks of the pool before the draw; the feature columns."""
    if name in _LABELLED and c.label is None:
        raise DataError(f"The metric {name!r} needs true labels: give --y-true-col (label_col in Python).")
    group_col: Any = c.group
    _check_columns(pool, [group_col], "group")
    if c.label is not None:
        _check_columns(pool, [c.label], "label")
    feats = _features(c) if c.features is not None else plan_columns(
        pool, group_cols=[group_col], label_col=c.label
    ).sent
    _check_columns(pool, feats, "feature")
    if pool[group_col].isna().any():
        raise DataError(f"The group column {group_col!r} has missing values; drop those rows.")
    if budget < 2:
        raise BudgetError(f"A budget of {budget} is below one query per group (at least 2).")
    return feats


def _features(c: ModelColumns) -> list[Any]:
    """The columns sent: ``features`` as given (a string split at commas by the flags' one
    rule, :func:`~fairprobe._validation.split_names`; a sequence keeps its labels' types)."""
    if isinstance(c.features, str):
        return split_names(c.features) or []
    return list(c.features or [])


def _no_usable_answer(answers: AnswerBatch) -> DataError:
    """The error of an audit none of whose answers parsed, with the likely fix."""
    counts = answers.outcome_counts()
    what = ", ".join(f"{v} {k}" for k, v in counts.items() if v and k != "ok")
    hint = {
        "truncated": "raise the token limit (max_completion_tokens for reasoning models)",
        "refused": "the model refuses the task: rephrase the prompt",
    }.get(max(counts, key=lambda k: counts[k]), "check the prompt and the backend's parser")
    return DataError(f"No answer of the model could be used ({what}): {hint}.")


def _two_group_metric(
    name: str, sample: pd.DataFrame, answers: AnswerBatch, pair: tuple[Any, Any],
    q: _TwoGroupQuestion, c: ModelColumns, r: QueryRun,
) -> tuple[MetricResult, npt.NDArray[Any], npt.NDArray[np.bool_], npt.NDArray[np.bool_]]:
    """The metric on the parsed answers, the per-instance values behind it, which of them the
    metric used (both groups; ``y_true == 1`` for equal opportunity) and which are group A."""
    keep = answers.parsed
    decisions = answers.decisions[keep]
    kept = sample.loc[keep].reset_index(drop=True)
    group_values = kept[c.group].to_numpy()
    y_true = None if c.label is None or name not in _LABELLED else _check_labels(
        kept[c.label], c.label, c.pos_label).astype(float)
    values = decisions
    if name == "performance_gap":
        assert y_true is not None
        values = (decisions == y_true.astype(float)).astype(float)
    result = compute_metric(
        name,
        sensitive_features=group_values,
        y_pred=decisions,
        y_true=y_true if name == _metrics.EO.name else None,
        values=values if name == "performance_gap" else None,
        group_a=pair[0],
        group_b=pair[1],
        threshold=q.threshold if name == _metrics.DI.name else q.tolerance,
        confidence_level=q.confidence_level,
        method=None if name == "performance_gap" else r.interval,
        min_group_size=q.min_group_size,
    )
    sel = select_groups(group_values, pair[0], pair[1])
    used = sel.in_a | sel.in_b
    if name == _metrics.EO.name:
        assert y_true is not None
        used &= y_true.astype(float) == 1.0
    return result, values, used, sel.in_a


def outcomes_by_group(answers: AnswerBatch, groups: npt.ArrayLike) -> dict[str, dict[str, int]]:
    """Answers per outcome (``ok``, ``unparsed``, ``refused``, ``truncated``) per group value."""
    g = np.asarray(groups)
    oc = answers.outcomes
    assert oc is not None
    out: dict[str, dict[str, int]] = {}
    for value in sorted(set(g.tolist()), key=str):
        m = g == value
        out[str(value)] = {o: int(np.count_nonzero(oc[m] == o)) for o in OUTCOMES}
    return out


#: Answers a group needs before strict mode may stop the audit early.
STRICT_MIN_ANSWERS = 20


def _strict_check(
    answers: list[AnswerBatch], groups: pd.Series, limit: float, final: bool
) -> None:
    oc = np.concatenate([a.outcomes for a in answers if a.outcomes is not None])
    g = groups.to_numpy()[: len(oc)]
    for value in sorted(set(g.tolist()), key=str):
        m = g == value
        n = int(m.sum())
        if n == 0 or (not final and n < STRICT_MIN_ANSWERS):
            continue
        counts = {o: int(np.count_nonzero(oc[m] == o)) for o in OUTCOMES}
        bad = n - counts["ok"]
        if bad / n > limit:
            raise AnswerParseError(
                f"strict mode: {bad} of {n} answers for group {value!r} ({bad / n:.1%}) are not "
                f"usable (unparsed {counts['unparsed']}, refused {counts['refused']}, truncated "
                f"{counts['truncated']}), above the limit of {limit:.1%}; the {len(oc)} answers "
                "so far are cached: fix the prompt, the parser or the token limit and rerun."
            )


def _query(
    blackbox: BlackBox, records: pd.DataFrame, groups: pd.Series, limit: float | None
) -> AnswerBatch:
    """All answers; in strict mode by tenths, stopping when a group's unusable share is too high."""
    if limit is None:
        return blackbox.query(records)
    blackbox.check_cached(records)  # one identity check for all the parts below
    n = len(records)
    step = max(STRICT_MIN_ANSWERS, -(-n // 10))
    parts: list[AnswerBatch] = []
    for lo in range(0, n, step):
        parts.append(blackbox.query(records.iloc[lo : lo + step]))
        _strict_check(parts, groups, limit, final=lo + step >= n)
    return _concat(parts)


def _concat(parts: Sequence[AnswerBatch]) -> AnswerBatch:
    """One batch of the answers of several, in order."""
    return AnswerBatch(
        np.concatenate([p.decisions for p in parts]),
        np.concatenate([p.scores for p in parts]),
        np.concatenate([p.logits for p in parts]),
        sum(p.n_paid for p in parts),
        sum(p.n_cached for p in parts),
        np.concatenate([p.outcomes for p in parts if p.outcomes is not None]),
        np.concatenate([p.cached for p in parts if p.cached is not None]),
    )


# --- any number of groups: the by-group audit ----------------------------------------------------

def _check_labels(labels: Any, label_col: str, pos_label: Any) -> npt.NDArray[np.bool_]:
    """True labels as booleans; NaN, missing or non-0/1 labels (without ``pos_label``) raise."""
    from fairprobe.stats.frame import _binary_labels

    return _binary_labels(labels, f"The label column {label_col!r} (--y-true-col)", pos_label)


class GroupAudit(AuditFrame):
    """The outcome of a black-box audit of any number of groups: an :class:`AuditFrame` of the
    model's answers (by-group table, summaries with simultaneous intervals) plus the query
    accounting.

    Attributes (besides :class:`~fairprobe.stats.frame.AuditFrame`'s)
    ----------------------------------------------------------------
    metrics : tuple of str
        The fairness metrics asked for (full names).
    budget, queried, paid, cached, unparsed, seed, backend
        As in :class:`AuditResult`.
    group_cols : tuple of str
        The sensitive columns (several: their intersections).
    unparsed_by_group : dict
        Unparsed (dropped) answers per group label.
    answer_counts : dict
        Per group label, :class:`fairprobe.provenance.AnswerCounts` (paid / cached / outcome of
        every answer, kept or dropped), for the result's provenance.
    per_instance : list of dict
        ``{value, group, y_true}`` per kept answer (the decision), for ``fairprobe radius``.
    """

    def __init__(self, *, queried_groups: Any = None, **fields: Any) -> None:
        """``fields``: the query accounting (:meth:`_set_accounting`'s keywords: ``metrics``,
        ``budget``, ``queried``, ``paid``, ``cached``, ``unparsed``, ``seed``, ``backend``,
        ``group_cols``, ``unparsed_by_group``, and optionally ``answer_counts`` and
        ``allocation``) and the frame's keywords (:class:`AuditFrame`), told apart by name;
        ``queried_groups``: the group label of every query asked, in the order asked."""
        accounting = _accounting(fields)
        super().__init__(**fields)
        #: group label of every query asked, in the order asked (for the provenance)
        self.queried_groups = queried_groups
        self._set_accounting(**accounting)
        self._y_pred: Any = np.asarray(fields["y_pred"], dtype=float)
        self._y_true = fields.get("y_true")

    def _set_accounting(self, *, metrics: Sequence[str], budget: int, queried: int, paid: int,
                        cached: int, unparsed: int, seed: int, backend: str,
                        group_cols: Sequence[str], unparsed_by_group: dict[str, int],
                        answer_counts: dict[str, Any] | None = None,
                        allocation: dict[str, Any] | None = None) -> None:
        self.allocation = None if allocation is None else dict(allocation)
        self.metrics = tuple(fairness_metric_name(m, "run_group_audit") for m in metrics)
        self.budget, self.queried, self.paid, self.cached = budget, queried, paid, cached
        self.unparsed, self.seed, self.backend = unparsed, seed, backend
        self.group_cols = tuple(group_cols)
        self.unparsed_by_group = dict(unparsed_by_group)
        self.answer_counts = dict(answer_counts or {})

    @classmethod
    def from_counts(cls, counts: Any, *, accounting: dict[str, Any],  # type: ignore[override]
                    **options: Any) -> GroupAudit:
        """The audit of counted rows (:class:`fairprobe.scale.GroupCounts`): ``accounting``
        holds this class's own arguments (metrics, budget, ...), ``options`` the frame's. It
        holds no rows, so its JSON has no ``per_instance`` list."""
        obj = super().from_counts(counts, **options)
        obj._set_accounting(**accounting)
        obj._y_pred = obj._y_true = None
        return obj  # type: ignore[no-any-return]

    def summaries(self) -> dict[str, GroupSummary]:
        """The summary of every metric asked for that has two groups large enough to compare
        (the others are in :meth:`not_summarised`)."""
        out = {}
        for m in self.metrics:
            try:
                out[m] = self.summary(m)
            except DataError:
                continue
        return out

    def not_summarised(self) -> dict[str, str]:
        """Metrics asked for that could not be summarised, with the reason (e.g. fewer than two
        groups with enough ``y_true == 1`` answers): reported, never dropped silently."""
        out = {}
        for m in self.metrics:
            try:
                self.summary(m)
            except DataError as e:
                out[m] = str(e)
        return out

    @property
    def verdict(self) -> str:
        """The worst verdict over the metrics: unfair > undetermined > fair; ``undetermined``
        when a metric could not be summarised."""
        from fairprobe.stats.headline import combine

        verdicts = [s.verdict for s in self.summaries().values()]
        if self.not_summarised():
            verdicts.append("undetermined")
        return combine(verdicts)

    def to_dict(self, metrics: Sequence[str] | None = None,  # type: ignore[override]
                per_instance: bool = True) -> dict[str, Any]:
        """JSON-ready dict; the keys are documented in ``docs/audit.md``."""
        out: dict[str, Any] = {
            "kind": "fairprobe.audit",
            "group_col": list(self.group_cols),
            "metrics": list(self.metrics),
            "verdict": self.verdict,
            **super().to_dict([m for m in (self.metrics if metrics is None else metrics)
                               if m not in self.not_summarised()]),
            "not_summarised": self.not_summarised(),
            "budget": self.budget,
            "queried": self.queried,
            "paid": self.paid,
            "cached": self.cached,
            "unparsed": self.unparsed,
            "unparsed_by_group": self.unparsed_by_group,
            "seed": self.seed,
            "backend": self.backend,
        }
        if self.allocation is not None:
            out["allocation"] = self.allocation
        if per_instance and self._y_pred is None:
            raise DataError("per-instance entries need the rows; this audit was counted "
                            "without them (ask for them when counting: --per-instance).")
        if per_instance:
            labels = np.asarray(self.groups.labels, dtype=object)[self.groups.codes]
            yt = (None if self._y_true is None
                  else np.asarray(self._y_true, dtype=float).tolist())
            out["per_instance"] = [
                {"value": v, "group": g, **({} if yt is None else {"y_true": yt[i]})}
                for i, (v, g) in enumerate(zip(self._y_pred.tolist(), labels.tolist(),
                                               strict=True))
            ]
        return out


#: The accounting keywords of :class:`GroupAudit` (the others are the frame's), and which of
#: them a call must give.
_ACCOUNTING = ("metrics", "budget", "queried", "paid", "cached", "unparsed", "seed", "backend",
               "group_cols", "unparsed_by_group", "answer_counts", "allocation")
_ACCOUNTING_REQUIRED = _ACCOUNTING[:-2]


def _accounting(fields: dict[str, Any]) -> dict[str, Any]:
    """The accounting keywords of a :class:`GroupAudit` call, taken out of ``fields``; a
    missing one is a :class:`TypeError`, as for a normal function."""
    missing = [k for k in _ACCOUNTING_REQUIRED if k not in fields]
    if missing:
        s = "s" if len(missing) > 1 else ""
        shown = [repr(m) for m in missing]
        names = (" and ".join(shown) if len(shown) < 3
                 else ", ".join(shown[:-1]) + f", and {shown[-1]}")
        raise TypeError(f"GroupAudit.__init__() missing {len(missing)} required keyword-only "
                        f"argument{s}: {names}")
    return {k: fields.pop(k) for k in _ACCOUNTING if k in fields}


def _group_columns(group_col: str | Sequence[str]) -> list[str]:
    cols = [c.strip() for c in group_col.split(",")] if isinstance(group_col, str) \
        else [str(c) for c in group_col]
    cols = [c for c in cols if c]
    if not cols or len(set(cols)) != len(cols):
        raise DataError(f"--group-col (group_col) must name one or more distinct columns; got {group_col!r}.")
    return cols


#: check_group_audit's flat keywords (the compatibility form), and run_group_audit's.
_CHECK_FLAGS = ("group_col", "metrics", "label_col", "feature_cols", "budget", "seed",
                "min_group_size", "confidence_level", "method", "tolerance", "threshold",
                "allocation")
_GROUP_FLAGS = (*_CHECK_FLAGS, "pos_label", "reference", "max_unusable_share")


def check_group_audit(
    pool: pd.DataFrame,
    *,
    question: AuditQuestion | None = None,
    columns: ModelColumns | None = None,
    run: QueryRun | None = None,
    **flags: Any,
) -> tuple[list[str], list[str], list[str]]:
    """Validate every parameter of :func:`run_group_audit` before anything is paid.

    Takes the options objects of :func:`run_group_audit` (``question``: metrics, tolerance,
    threshold, confidence_level, min_group_size; ``columns``: group, label, features;
    ``run``: budget, seed, method, allocation) or their fields as its flat keywords
    (``group_col``, ``metrics``, ``label_col``, ``feature_cols``, ``budget``, ``seed``,
    ``min_group_size``, ``confidence_level``, ``method``, ``tolerance``, ``threshold``,
    ``allocation``, default ``"uniform"``); the messages name ``run_group_audit``.

    Returns the group columns, the full metric names and the feature columns.
    """
    q, c, r = model_audit_options("run_group_audit", flags, _CHECK_FLAGS,
                                  (question, columns, run), {"allocation": "uniform"},
                                  caller="check_group_audit")
    return _check_group(pool, q, c, r)


def _check_group(pool: pd.DataFrame, q: AuditQuestion, c: ModelColumns,
                 r: QueryRun) -> tuple[list[str], list[str], list[str]]:
    """The checks of :func:`check_group_audit` the options objects do not make themselves."""
    from fairprobe.stats.frame import FAIRNESS_METRICS, RATES
    from fairprobe.stats.simultaneous import SIMULTANEOUS_METHODS

    owner = "run_group_audit"
    cols = _group_columns(c.group or "")  # never None here: model_audit_options refuses it
    names = [fairness_metric_name(m, owner) for m in q.metrics]
    if not names:
        raise DataError("Name at least one metric (e.g. dp, di, eo, fpr, eodds).")
    check_int(r.budget, "budget", owner, lo=1)
    if r.budget < 2:
        raise BudgetError(f"A budget of {r.budget} is below one query per group (at least 2).")
    check_int(r.seed, "seed", owner, lo=0)
    check_choice(r.method, "method", owner, SIMULTANEOUS_METHODS)
    check_choice(r.allocation, "allocation", owner, ALLOCATIONS)
    if r.allocation == "adaptive":
        question_rate(names[0])
    needs_label = [n for n in names if any("y_true" in RATES[rate][0]
                                           for rate in FAIRNESS_METRICS[n][0])]
    if needs_label and c.label is None:
        raise DataError(f"The metric {needs_label[0]!r} needs true labels: give --y-true-col (label_col in Python).")
    _check_columns(pool, cols, "group")
    if c.label is not None:
        _check_columns(pool, [c.label], "label")
    feats = _features(c) if c.features is not None else plan_columns(
        pool, group_cols=cols, label_col=c.label
    ).sent
    _check_columns(pool, feats, "feature")
    for col in cols:
        if pool[col].isna().any():
            raise DataError(f"The group column {col!r} has missing values; drop those rows.")
    return cols, names, feats


def _frame_options(q: AuditQuestion, r: QueryRun) -> dict[str, Any]:
    """The frame keywords of a group audit's answers (the band's defaults filled in); its
    confidence level is the audit's (the adaptive draw's look level), given apart."""
    return dict(min_group_size=q.min_group_size, method=r.method, reference=q.reference,
                tolerance=0.05 if q.tolerance is None else q.tolerance,
                threshold=0.8 if q.threshold is None else q.threshold)


def run_group_audit(
    blackbox: BlackBox,
    pool: pd.DataFrame,
    *,
    question: AuditQuestion | None = None,
    columns: ModelColumns | None = None,
    run: QueryRun | None = None,
    **flags: Any,
) -> GroupAudit:
    """Black-box audit of every group of one column, or of the intersections of several.

    Draws ``budget`` queries without replacement (seeded; ``allocation="balanced"``, the
    default, gives every group an equal number and takes a smaller group whole, ``"uniform"``
    draws over rows, ``"neyman"`` spends a pilot (:data:`~fairprobe.stats.allocation.NEYMAN_PILOT`
    of the budget, equal per group) and then Neyman's split of the first metric's rate,
    ``"adaptive"`` spends at most :data:`~fairprobe.stats.allocation.ADAPTIVE_BATCHES`
    batches on the groups still open and stops once the first metric is decided, its
    intervals at the look level of :func:`~fairprobe.stats.allocation.adaptive_levels`, valid
    under the stopping by a union bound; see :func:`allocate` and
    :mod:`fairprobe.stats.allocation`), asks the model through
    ``blackbox`` (cached, resumable), and returns a :class:`GroupAudit`: the
    :class:`~fairprobe.stats.frame.AuditFrame` of the answers (each group's count, rates and
    interval; groups below ``min_group_size`` listed as too small) and, for each metric, the
    largest gap or smallest ratio with the pair named, each group vs the rest and vs
    ``reference``, all with simultaneous intervals at ``confidence_level`` (``method``:
    ``"exact"`` keeps the level at every rate and size, ``"bonferroni"`` is narrower; see
    :mod:`fairprobe.stats.simultaneous`).

    The options objects say what to audit: ``question`` the ``metrics``, ``tolerance``,
    ``threshold``, ``confidence_level``, ``reference`` and ``min_group_size``
    (:class:`~fairprobe.options.AuditQuestion`), ``columns`` the pool's ``group``, ``label``,
    ``features`` and ``pos_label`` (:class:`~fairprobe.audit.run_options.ModelColumns`),
    ``run`` the ``budget``, ``seed``, ``allocation``, ``method`` and ``max_unusable_share``
    (:class:`~fairprobe.audit.run_options.QueryRun`). ``flags`` are the same values as flat
    keywords (the compatibility form): ``group_col`` (required without ``columns``),
    ``metrics`` (default ``("dp",)``), ``label_col``, ``pos_label``, ``feature_cols``,
    ``budget`` (1000), ``seed`` (0), ``min_group_size``, ``reference``, ``tolerance``,
    ``threshold``, ``confidence_level`` (0.95), ``method`` (``"exact"``),
    ``max_unusable_share``, ``allocation`` (``"balanced"``); they set those fields.

    Parameters
    ----------
    blackbox : BlackBox
        The audited model's access (cached, resumable).
    pool : DataFrame
        The query pool: the features sent to the model, the group column(s) and any labels.
    question : AuditQuestion, optional
        What is asked (:class:`~fairprobe.options.AuditQuestion`).
    columns : ModelColumns, optional
        The pool's columns (:class:`~fairprobe.audit.run_options.ModelColumns`).
    run : QueryRun, optional
        How the queries are drawn and the intervals built
        (:class:`~fairprobe.audit.run_options.QueryRun`).

    Other Parameters
    ----------------
    group_col : str or sequence of str
        One sensitive column (``"race"``), or several (``["sex", "race"]`` or ``"sex,race"``).
    metrics : sequence of str
        Fairness metrics by name or alias: ``dp``, ``di``, ``eo`` (TPR), ``fpr``, ``eodds``
        (equalized odds), ``ppv`` (predictive parity), ``accuracy-gap``, ``error-rate``,
        ``score-gap`` (mean score, when the backend returns scores).
    max_unusable_share : float, optional
        Strict mode, as in :func:`run_audit`: stop as soon as a group's share of unusable answers
        (unparsed, refused, truncated) exceeds this.
    label_col, pos_label : str and scalar, optional
        True labels (needed by every metric but ``dp``/``di``/``score-gap``) and their positive
        value when not 0/1. NaN or non-binary labels raise before any query is paid.

    Notes
    -----
    Every parameter is validated before the first query is paid; an unknown keyword is a
    :class:`TypeError`.
    """
    q, c, r = model_audit_options("run_group_audit", flags, _GROUP_FLAGS, (question, columns, run),
                                  {"metrics": (_metrics.DP.short,)})
    cols, names, feats = _check_group(pool, q, c, r)
    staged = r.allocation in ("neyman", "adaptive")
    if staged:  # the rows depend on the answers: every check is made on the pool first
        _check_pool_answers_free(pool, cols, q, c)
    before_paid, before_cached = blackbox.spent, blackbox.from_cache
    level = q.confidence_level
    if staged:
        sample, answers, stages, level = _staged_queries(blackbox, pool, (cols, feats),
                                                         names[0], q, c, r)
    else:
        sample = draw_queries(pool, r.budget, r.seed, group_cols=cols, allocation=r.allocation)
        stages = {}
    y_true_all = None
    if c.label is not None:
        y_true_all = _check_labels(sample[c.label], c.label, c.pos_label)
    sens_all = sample[cols]
    if q.reference is not None and not staged:
        from fairprobe.stats.groups import group_labels

        group_labels(sens_all).position(q.reference)  # an unknown reference fails before paying
    all_labels = sens_all.astype(str).agg(", ".join, axis=1).to_numpy()
    if not staged:
        answers = _query(blackbox, sample[feats], pd.Series(all_labels), r.max_unusable_share)
    keep = answers.parsed
    if not keep.any():
        raise DataError("No answer of the model could be parsed: check the backend's parsing.")
    from fairprobe.provenance import answer_counts_by_group

    return GroupAudit(
        metrics=names, budget=r.budget, queried=len(sample), paid=blackbox.spent - before_paid,
        cached=blackbox.from_cache - before_cached, unparsed=int((~keep).sum()), seed=r.seed,
        backend=blackbox.identity, group_cols=cols,
        unparsed_by_group=_unparsed_by_group(all_labels, keep),
        answer_counts=answer_counts_by_group(all_labels, answers.outcomes, answers.cached),
        allocation={**allocation_record(pool, sample, cols, r.allocation), **stages},
        queried_groups=all_labels, **_answer_columns(answers, sens_all, y_true_all, names),
        confidence_level=level, **_frame_options(q, r),
    )


def _check_pool_answers_free(pool: pd.DataFrame, cols: list[str], q: AuditQuestion,
                             c: ModelColumns) -> None:
    """The checks a staged draw makes on the whole pool (its rows depend on the answers): the
    labels and the reference group."""
    if c.label is not None:
        _check_labels(pool[c.label], c.label, c.pos_label)
    if q.reference is not None:
        from fairprobe.stats.groups import group_labels

        group_labels(pool[cols]).position(q.reference)


def _unparsed_by_group(labels: npt.NDArray[Any], keep: npt.NDArray[np.bool_]) -> dict[str, int]:
    """Unparsed (dropped) answers per group label."""
    if not (~keep).any():
        return {}
    lost = pd.Series(labels[~keep]).value_counts()
    return {str(k): int(v) for k, v in lost.items()}


def _answer_columns(answers: AnswerBatch, sens: pd.DataFrame, y_true: Any,
                    names: Sequence[str]) -> dict[str, Any]:
    """The frame's data keywords from the parsed answers: decisions, labels, groups, scores
    (kept when a metric needs them or every answer has one)."""
    keep = answers.parsed
    scores = answers.scores[keep]
    needs_scores = _metrics.SCORE_GAP.name in names
    if needs_scores and np.isnan(scores).any():
        raise DataError("score-gap needs scores, and the backend returned none for some "
                        "answers: use a backend that exposes scores.")
    return dict(y_pred=answers.decisions[keep].astype(np.int64),
                y_true=None if y_true is None else y_true[keep].astype(np.int64),
                sensitive_features=sens.loc[keep].reset_index(drop=True),
                scores=scores if needs_scores or not np.isnan(scores).any() else None)


def question_rate(metric: str) -> tuple[str, str]:
    """``(rate, kind)`` of a one-rate metric whose denominator does not depend on the answers
    (selection rate, TPR, FPR, accuracy, ...): the metrics an adaptive audit can stop on."""
    from fairprobe import metrics as _metrics
    from fairprobe.errors import InvalidParameterError
    from fairprobe.stats.frame import FAIRNESS_METRICS

    rates, kind = FAIRNESS_METRICS[metric]
    den = set(_metrics.RATES[rates[0]].den) if len(rates) == 1 else set()
    # the denominator counts rows by the label alone (both decisions of each of its cells)
    if len(rates) != 1 or not den or {("1" if c[0] == "0" else "0") + c[1] for c in den} != den:
        raise InvalidParameterError(
            f"--allocation adaptive stops on the first metric, a rate whose denominator the "
            f"answers do not change (dp, di, eo, fpr, accuracy-gap, ...); {metric!r} is not "
            "one: list such a metric first, or use --allocation balanced.")
    return rates[0], kind


def _rate_counts(rate: str, y_pred: npt.NDArray[np.float64], y_true: Any,
                 codes: npt.NDArray[np.int64], groups: int
                 ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Per group, the rate's numerator and denominator over the parsed answers."""
    r = _metrics.RATES[rate]
    ok = ~np.isnan(y_pred)
    pred = np.where(ok, y_pred, 0.0).astype(np.int64)
    true = np.zeros_like(pred) if y_true is None else np.asarray(y_true, dtype=np.int64)
    cell = 2 * pred + true  # index into CELLS ("00", "01", "10", "11"; y_pred first)
    num = np.isin(cell, [_metrics.CELLS.index(c) for c in r.num]) & ok
    den = np.isin(cell, [_metrics.CELLS.index(c) for c in r.den]) & ok
    return (np.bincount(codes[num], minlength=groups).astype(np.int64),
            np.bincount(codes[den], minlength=groups).astype(np.int64))


class _Stages:
    """The rows a staged draw (``neyman``, ``adaptive``) has asked so far and their answers.

    Every stage asks the next rows of each group's seeded order (:func:`_group_order`) through
    ``blackbox``, so every answer is cached and a rerun asks the same rows again, from the
    cache.
    """

    def __init__(self, blackbox: BlackBox, pool: pd.DataFrame, cols_feats: tuple[
            Sequence[str], Sequence[str]], c: ModelColumns, r: QueryRun) -> None:
        self.blackbox, self.pool, self.limit = blackbox, pool, r.max_unusable_share
        self.cols, self.feats = (list(x) for x in cols_feats)
        self.codes, self.sizes, self.labels, self.rank = _group_order(
            pool, self.cols, np.random.default_rng(r.seed))
        self.k = len(self.labels)
        self.y_all = None if c.label is None else _check_labels(pool[c.label], c.label,
                                                                c.pos_label)
        self.asked = np.zeros(self.k, dtype=np.int64)
        self.rows: list[npt.NDArray[np.int64]] = []
        self.parts: list[AnswerBatch] = []

    def ask(self, upto: npt.NDArray[np.int64]) -> None:
        """Ask each group's rows up to ``upto`` in its order (those not asked yet)."""
        rank, codes = self.rank, self.codes
        take = np.flatnonzero((rank >= self.asked[codes]) & (rank < upto[codes]))
        self.asked[:] = np.maximum(self.asked, upto)
        if take.size == 0:
            return
        part = self.pool.iloc[take]
        lab = part[self.cols].astype(str).agg(", ".join, axis=1).reset_index(drop=True)
        self.parts.append(_query(self.blackbox, part[self.feats], lab, self.limit))
        self.rows.append(take)

    def index(self) -> npt.NDArray[np.int64]:
        """The pool rows asked, in the order asked."""
        return np.concatenate(self.rows) if self.rows else np.zeros(0, dtype=np.int64)

    def counts(self, rate: str) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """Per group, the rate's numerator and denominator over the answers so far."""
        idx = self.index()
        dec = _concat(self.parts).decisions if self.parts else np.zeros(0)
        yt = None if self.y_all is None else self.y_all[idx]
        return _rate_counts(rate, dec, yt, self.codes[idx], self.k)


def _staged_queries(
    blackbox: BlackBox, pool: pd.DataFrame, cols_feats: tuple[Sequence[str], Sequence[str]],
    metric: str, q: AuditQuestion, c: ModelColumns, r: QueryRun,
) -> tuple[pd.DataFrame, AnswerBatch, dict[str, Any], float]:
    """The draws of ``neyman`` (a pilot, then Neyman's split) and ``adaptive`` (batches until
    the question is decided): the rows asked in order, their answers, the JSON record of the
    stages and the confidence level the audit's intervals take (``cols_feats``: the group and
    feature columns; ``metric``: the first metric's full name)."""
    st = _Stages(blackbox, pool, cols_feats, c, r)
    if r.allocation == "neyman":
        record, level = _neyman_stages(st, metric, r.budget), q.confidence_level
    else:
        record, level = _adaptive_stages(st, metric, q, r)
    return pool.iloc[st.index()].reset_index(drop=True), _concat(st.parts), record, level


def _neyman_stages(st: _Stages, metric: str, budget: int) -> dict[str, Any]:
    """A pilot of the budget split equally, then the rest by Neyman's weights; the record."""
    from fairprobe.errors import InvalidParameterError
    from fairprobe.stats import allocation as design

    # the rate Neyman's split needs: the first metric's, or the selection rate
    try:
        rate, _ = question_rate(metric)
    except InvalidParameterError:
        rate = "selection_rate"
    pilot_budget = max(st.k, int(math.ceil(budget * design.NEYMAN_PILOT)))
    pilot = np.asarray(allocate(st.sizes.tolist(), pilot_budget, "balanced"), dtype=np.int64)
    st.ask(pilot)
    num, den = st.counts(rate)
    est = (num + 0.5) / (den + 1.0)  # shrunk to 0.5 so that no weight is 0
    w = design.neyman_weights(est)
    st.ask(neyman_split(st.sizes, budget, st.asked.copy(), w))
    return {"neyman": {
        "pilot_queries": int(pilot.sum()), "pilot_share": design.NEYMAN_PILOT,
        "rate": rate, "floor": design.NEYMAN_FLOOR,
        "pilot_rates": dict(zip(st.labels, est.round(6).tolist(), strict=True)),
        "weights": dict(zip(st.labels, w.round(6).tolist(), strict=True)),
        "rule": ("a pilot of the budget split equally estimates each group's rate "
                 "((k + 0.5) / (n + 1)); the rest goes by Neyman's weights "
                 "sqrt(p (1 - p)), every group at least the floor times its equal share; "
                 "the intervals are those of fixed-size samples (the split's dependence "
                 "on the pilot is not adjusted for; coverage measured in "
                 "experiments/results/stats/bench_queries.json)")}}


def _adaptive_stages(st: _Stages, metric: str, q: AuditQuestion,
                     r: QueryRun) -> tuple[dict[str, Any], float]:
    """Batches on the groups still open until the first metric is decided; the record and
    the look level the audit's intervals take."""
    from fairprobe.stats import allocation as design

    rate, kind = question_rate(metric)
    batches, k = design.ADAPTIVE_BATCHES, st.k
    fam_level, grp_level = design.adaptive_levels(q.confidence_level, k, batches)
    totals = np.asarray(allocate(st.sizes.tolist(), r.budget, "balanced"), dtype=np.int64)
    grid = design.adaptive_grid(totals, batches)
    frame_opts = _frame_options(q, r)
    band = frame_opts["threshold"] if kind == "ratio" else frame_opts["tolerance"]
    steps = np.zeros(k, dtype=np.int64)
    looks: list[dict[str, Any]] = []
    verdict, stop = "undetermined", "budget spent"
    open_ = np.ones(k, dtype=bool)
    for _ in range(batches):
        move = open_ & (steps < batches)
        if not move.any():
            stop = "every open group has spent its share"
            break
        upto = np.where(move, grid[np.minimum(steps, batches - 1), np.arange(k)], st.asked)
        steps += move
        st.ask(upto)
        idx = st.index()
        verdict = _look_verdict(st.pool.iloc[idx], _concat(st.parts), st.cols,
                                None if st.y_all is None else st.y_all[idx],
                                metric, fam_level, frame_opts)
        num, den = st.counts(rate)
        # a group below the minimum size is left out of the summary: it stays open, and a
        # "fair" verdict waits until every group is compared or has spent its share
        small = (den < frame_opts["min_group_size"]) & (st.asked < totals)
        open_ = small | (np.ones(k, dtype=bool) if k == 2 else
                         design.open_groups(num, den, kind=kind,  # type: ignore[arg-type]
                                            tolerance=band, group_level=grp_level))
        looks.append({"queries": int(st.asked.sum()),
                      "asked": [st.labels[g] for g in np.flatnonzero(move)],
                      "verdict": verdict})
        if verdict == "unfair" or (verdict == "fair" and not small.any()):
            stop = "decided"
            break
    spent = int(st.asked.sum())
    return {"adaptive": {
        "batches": len(looks), "max_batches": batches, "queries_spent": spent,
        "queries_saved": int(totals.sum()) - spent,
        "stopped": stop, "verdict": verdict, "metric": metric,
        "nominal_confidence_level": q.confidence_level, "look_confidence_level": fam_level,
        "group_confidence_level": grp_level,
        "validity": design.adaptive_description(k, batches, q.confidence_level),
        "looks": looks}}, fam_level


def _look_verdict(rows: pd.DataFrame, answers: AnswerBatch, cols: Sequence[str], y_true: Any,
                  metric: str, level: float, frame_opts: dict[str, Any]) -> str:
    """The summary's verdict of ``metric`` on the answers so far, at the look's level."""
    keep = answers.parsed
    if not keep.any():
        return "undetermined"
    frame = AuditFrame(y_pred=answers.decisions[keep].astype(np.int64),
                       y_true=None if y_true is None else np.asarray(y_true)[keep].astype(
                           np.int64),
                       sensitive_features=rows[list(cols)].loc[keep].reset_index(drop=True),
                       confidence_level=level, **frame_opts)
    try:
        return str(frame.summary(metric).verdict)
    except DataError:
        return "undetermined"
