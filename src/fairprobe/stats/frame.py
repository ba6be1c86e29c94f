"""``AuditFrame``: per-group rates of any number of groups, and the fairness summaries over them.

fairlearn's ``MetricFrame`` shape (``by_group``, ``difference()``, ``ratio()``, ``group_max()``,
``group_min()``) with what an auditor also needs: each group's count and interval, groups too small
to judge listed rather than dropped, and the summaries (largest gap and smallest ratio with the
pair named, each group vs the rest, vs a reference group) with *simultaneous* intervals
(:mod:`fairprobe.stats.simultaneous`) and a verdict. The same object is what the black-box audit
returns (``fairprobe.audit.run_group_audit``). See ``docs/stats.md``.
"""

from __future__ import annotations

import functools
import html
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import numpy.typing as npt
import pandas as pd

from fairprobe import metrics as _metrics
from fairprobe._validation import check_choice, check_int, check_real, env_int
from fairprobe.errors import DataError
from fairprobe.stats.exact import clopper_pearson_interval
from fairprobe.stats.finding import Finding, Question, decide
from fairprobe.stats.frame_options import MAX_LISTED_PAIRS as MAX_LISTED_PAIRS
from fairprobe.stats.frame_options import FrameOptions, frame_options
from fairprobe.stats.groups import GroupLabels, as_1d, group_labels
from fairprobe.stats.intervals import wilson_interval
from fairprobe.stats.simultaneous import (
    FamilyIntervals,
    extreme_pairs,
    family_intervals,
    mean_family_intervals,
    worst_pair,
)

if TYPE_CHECKING:  # the module itself is imported where weights are used
    from fairprobe.stats import dropin

__all__ = [
    "FAIRNESS_METRICS",
    "FAIRNESS_ALIASES",
    "RATES",
    "AuditFrame",
    "GroupSummary",
    "fairness_metric_name",
]

#: Per-group rates: name -> (what it needs, description), read from the metric registry.
RATES: dict[str, tuple[tuple[str, ...], str]] = {
    r.name: (r.needs, r.description) for r in _metrics.RATES.values()}

class _LiveView(Mapping[str, Any]):
    """A read-only view rebuilt from the registry at each read, so that a metric registered
    after import (a plug-in, a test's toy metric) is known everywhere at once."""

    def __init__(self, build: Any) -> None:
        self._build = build

    def __getitem__(self, key: str) -> Any:
        return self._build()[key]

    def __iter__(self) -> Any:
        return iter(self._build())

    def __len__(self) -> int:
        return len(self._build())


#: Fairness metrics: name -> (per-group rate(s), difference or ratio), from the registry.
FAIRNESS_METRICS: Mapping[str, tuple[tuple[str, ...], Literal["difference", "ratio"]]] = (
    _LiveView(lambda: {m.name: (m.rates, m.kind) for m in _metrics.METRICS.values()}))

#: Other names (CLI ``--metric`` short names, fairlearn's names); matched case-insensitively.
FAIRNESS_ALIASES: Mapping[str, str] = _LiveView(_metrics.aliases)

#: fairlearn's aggregation names of ``MetricFrame.group_max`` & co. (``errors=``).
_ERRORS = ("raise", "coerce")

#: What the denominator of a conditional rate counts (for the reasons a group is left out).
_DENOMINATOR = {r.name: r.denominator for r in _metrics.RATES.values() if r.denominator}


def fairness_metric_name(metric: str, owner: str = "AuditFrame") -> str:
    """Full name of a fairness metric from its name or alias (case-insensitive)."""
    key = metric.strip().lower() if isinstance(metric, str) else metric
    name = FAIRNESS_ALIASES.get(key, key)
    check_choice(name, "metric", owner, tuple(FAIRNESS_METRICS) + tuple(FAIRNESS_ALIASES))
    return str(name)


def _binary_labels(values: Any, name: str, pos_label: Any) -> npt.NDArray[np.bool_]:
    """``values == pos_label`` after checking the column holds exactly two kinds of label."""
    arr = as_1d(values, name)
    null = np.asarray(pd.isna(arr), dtype=bool)
    if null.any():
        raise DataError(
            f"{name} contains {int(null.sum())} missing value(s) (NaN/None): drop or repair "
            "those rows (e.g. unparsed answers) first."
        )
    if pos_label is not None and not isinstance(pos_label, int | float | np.number) and (
            arr.dtype == bool or arr.dtype.kind in "iuf"):
        pos_label = None  # a 0/1 column next to string labels: 1 is its positive value
    if pos_label is None:
        if arr.dtype == bool:
            return arr
        if arr.dtype.kind in "iuf":
            bad = (arr != 0) & (arr != 1)
            if bad.any():
                shown = ", ".join(repr(v) for v in np.unique(arr[bad])[:5].tolist())
                raise DataError(f"{name} must hold 0/1 labels; found {shown}: map them to 0/1 "
                                "or pass pos_label.")
            return np.asarray(arr == 1, dtype=bool)
        shown = ", ".join(repr(v) for v in pd.unique(arr)[:5])
        raise DataError(
            f"{name} holds non-numeric labels ({shown}): name the positive one with --pos-label "
            "(pos_label in Python), e.g. --pos-label '>50K'."
        )
    uniq = pd.unique(arr)
    if len(uniq) > 2:
        shown = ", ".join(repr(v) for v in uniq[:5])
        raise DataError(f"{name} holds more than two labels ({shown}): binary labels only.")
    if len(uniq) == 2 and not any(_same_label(u, pos_label) for u in uniq):
        shown = " and ".join(repr(_plain(v)) for v in uniq)
        raise DataError(f"{name} holds {shown}; the positive label {pos_label!r} (--pos-label, "
                        "pos_label in Python) matches neither: name the positive one.")
    try:
        return np.asarray(arr == pos_label, dtype=bool)
    except (TypeError, ValueError):
        raise DataError(f"{name} cannot be compared with pos_label={pos_label!r}.") from None


def _same_label(u: Any, v: Any) -> bool:
    try:
        return bool(u == v)
    except (TypeError, ValueError):
        return False


#: Groups an audit compares at most (``max_groups``; on the command line the environment
#: variable ``FAIRPROBE_MAX_GROUPS``). A pairwise family keeps per-group arrays, so memory is
#: linear in the groups, and an exact family's worst pair and listing take O(k log k); but a
#: family computed pair by pair (``method="bonferroni"``, mean scores) takes time quadratic in
#: the groups (k(k-1)/2 score intervals), and the JSON lists every group. A larger grouping is
#: refused with the key to raise rather than running for hours.
MAX_GROUPS = 2000
MAX_GROUPS_ENV = "FAIRPROBE_MAX_GROUPS"


def check_group_limits(n_groups: int, max_groups: Any, max_listed_pairs: Any,
                       owner: str) -> tuple[int, int]:
    """Validate the two size limits and refuse a grouping of more than ``max_groups`` groups
    (default: ``$FAIRPROBE_MAX_GROUPS``, else :data:`MAX_GROUPS`) in one line naming the key."""
    if max_groups is None:
        max_groups = env_int(MAX_GROUPS_ENV, MAX_GROUPS, lo=2, what="an integer >= 2")
    mg = check_int(max_groups, "max_groups", owner, lo=2)
    mp = check_int(max_listed_pairs, "max_listed_pairs", owner, lo=1)
    if n_groups > mg:
        raise DataError(
            f"the sensitive features define {n_groups:,} groups, more than max_groups = {mg:,} "
            f"(environment variable {MAX_GROUPS_ENV}; the library's max_groups=): the pairwise "
            "families computed pair by pair take time quadratic in the groups. Raise it if "
            "that is intended, or audit a coarser grouping.")
    return mg, mp


def _listed_pairs(fams: Mapping[str, FamilyIntervals], cap: int) -> list[tuple[str, int, int]]:
    """``(rate, i1, i2)`` of the pairs a summary lists: all, in order, when they fit in
    ``cap``; else the ``cap`` largest gaps (differences, by absolute value) or smallest ratios
    (either orientation) over all rates, most extreme first, ties in rate order and then pair
    order (:func:`fairprobe.stats.simultaneous.extreme_pairs`, without forming the pairs)."""
    rates = list(fams)
    return [(rates[r], a, b) for r, a, b in extreme_pairs([fams[r] for r in rates], cap)]


def _json(x: float) -> float | None:
    return float(x) if x is not None and math.isfinite(float(x)) else None


def _interval(lo: float, hi: float, level: float, method: str) -> dict[str, Any]:
    return {"low": _json(lo), "high": _json(hi), "level": level, "method": method}


@dataclass(frozen=True)
class GroupSummary:
    """One fairness metric summarised over all groups large enough to judge.

    Attributes
    ----------
    metric : str
        Full metric name (``demographic_parity_difference``, ...).
    kind : {"difference", "ratio"}
    estimate : float
        Largest pairwise gap (differences; for equalized odds the larger of the TPR and FPR
        gaps) or smallest pairwise ratio.
    pair : (str, str)
        The groups attaining it (higher rate first for gaps; lower rate first for ratios).
    low, high : float
        Simultaneous interval of the estimate's true value.
    rate : str
        The per-group rate behind the attained pair.
    vs_rest : list of dict
        Each compared group vs every other instance: estimate and simultaneous interval.
    vs_reference : list of dict
        Each group vs the reference group (when one is chosen).
    pairs : list of dict
        Pairs of compared groups (each orientation once): estimate and simultaneous interval,
        per rate. Every pair when there are at most ``max_listed_pairs`` of them (all pairs of up
        to 14 groups), else the ``max_listed_pairs`` with the largest gaps (smallest ratios),
        largest first, ties in rate order then pair order: the verdict uses every pair, the listing keeps the output linear in
        the number of groups.
    pairs_total : int
        How many pairs there are over all rates (``len(pairs)`` when none was left out).
    threshold : float
        Tolerance (differences: fair when the gap is at most it) or floor (ratios).
    confidence_level : float
        Family-wise level of all intervals of this summary.
    method : str
        ``bonferroni`` or ``exact`` (see :mod:`fairprobe.stats.simultaneous`).
    family_size : int
        Intervals in the family the level holds over.
    compared, excluded : tuple of str
        Groups in the summary; groups left out (too small, or no instance the rate is defined on)
        with the reason.
    """

    metric: str
    kind: Literal["difference", "ratio"]
    estimate: float
    pair: tuple[str, str]
    low: float
    high: float
    rate: str
    vs_rest: list[dict[str, Any]]
    vs_reference: list[dict[str, Any]]
    threshold: float
    confidence_level: float
    method: str
    family_size: int
    compared: tuple[str, ...]
    excluded: dict[str, str] = field(default_factory=dict)
    pairs: list[dict[str, Any]] = field(default_factory=list)
    pairs_total: int = 0
    rest_family_size: int = 0
    rates: tuple[str, ...] = ()
    #: Each compared group's denominator of each rate (``{rate: {group: n}}``): what the reason
    #: of an undetermined verdict points at.
    denominators: dict[str, dict[str, float]] = field(default_factory=dict)
    #: With ``control_features``: the summary within each control level (at a Bonferroni share
    #: of the level, so that all of them hold at once); this one is the worst of them.
    by_control: dict[str, GroupSummary] = field(default_factory=dict)
    #: Groups compared without an interval of their own (weighted rates whose positives or
    #: negatives weigh as too few effective instances), with the reason.
    thin: dict[str, str] = field(default_factory=dict)
    #: What the planner needs to say how many more queries would likely decide an undetermined
    #: verdict (:func:`fairprobe.stats.plan.queries_to_decide`'s keywords); ``None``: not said.
    plan_inputs: dict[str, Any] | None = field(default=None, compare=False)

    @functools.cached_property
    def more_queries(self) -> dict[str, Any] | None:
        """How many more queries would likely decide this undetermined verdict (``None`` when
        it is decided, or for metrics the planner does not model): the planner on the observed
        rates, the estimate taken as the truth (:func:`fairprobe.stats.plan.queries_to_decide`)."""
        if self.verdict != "undetermined" or not self.plan_inputs or self.thin:
            return None
        from fairprobe.stats.plan import queries_to_decide

        return queries_to_decide(self.metric, self.threshold, self.estimate,
                                 confidence_level=self.confidence_level, **self.plan_inputs)

    @property
    def finding(self) -> Finding:
        """This summary as a :class:`~fairprobe.stats.finding.Finding` (the verdict engine)."""
        return Finding(
            question=Question(metric=self.metric, kind=self.kind, threshold=self.threshold,
                              groups=self.compared, rates=self.rates or (self.rate,),
                              scale="score" if self.rate == "mean_score" else "probability"),
            estimate=self.estimate, low=self.low, high=self.high,
            confidence_level=self.confidence_level,
            construction=f"{self.method}-simultaneous",
            coverage="exact" if self.method == "exact" and self.rate != "mean_score"
            else "asymptotic",
            counts={"family_size": self.family_size, "pair": list(self.pair)},
        )

    @property
    def verdict(self) -> str:
        """``fair`` / ``unfair`` / ``undetermined`` from the simultaneous interval, by
        :func:`fairprobe.stats.finding.decide` (a gap's interval ``[low, high]`` with
        ``low >= 0`` against the band; a ratio's against the floor)."""
        return decide(self.low, self.high, kind=self.kind, threshold=self.threshold)

    def confidence_interval(self) -> tuple[float, float]:
        return (self.low, self.high)

    @property
    def reason(self) -> str | None:
        """Why the verdict is ``undetermined`` (``None`` otherwise): where the interval lies
        against the band, and the compared groups with the least evidence (smallest
        denominators, whose intervals widen the summary's), which more data would decide."""
        if self.verdict != "undetermined":
            return None
        edge = (f"the fair band |gap| <= {self.threshold:g}" if self.kind == "difference"
                else f"the floor {self.threshold:g}")
        pct = f"{self.confidence_level:.0%}"
        why = (f"the {pct} simultaneous interval [{self.low:.4f}, {self.high:.4f}] straddles "
               f"{edge}")
        sizes: dict[str, float] = {}
        for r, per in self.denominators.items():
            for g, n in per.items():
                sizes[f"{g} ({r}: n={n:g})"] = n
        if self.thin:
            why += "; no interval for " + "; ".join(f"{g}: {r}" for g, r in self.thin.items())
        elif sizes:
            least = sorted(sizes, key=lambda k: sizes[k])[:3]
            why += f"; least evidence: {', '.join(least)}"
        more = self.more_queries
        if more and more.get("budget") is not None:
            why += (f"; about {more['more']:,} more queries ({more['budget']:,} in all) would "
                    f"likely decide it ({more['target']} with probability {more['power']:g} "
                    f"if {more['assumes']})")
        elif more:
            why += f"; no budget would likely decide it ({more['note']})"
        return why + "."

    def to_dict(self) -> dict[str, Any]:
        method = f"{self.method}-simultaneous"
        return {
            "metric": self.metric,
            "kind": self.kind,
            "rate": self.rate,
            "estimate": _json(self.estimate),
            "pair": list(self.pair),
            "interval": _interval(self.low, self.high, self.confidence_level, method),
            "threshold": self.threshold,
            "verdict": self.verdict,
            "reason": self.reason,
            "finding": self.finding.to_dict(),
            "family_size": self.family_size,
            "rest_family_size": self.rest_family_size,
            "compared": list(self.compared),
            "excluded": dict(self.excluded),
            "vs_rest": self.vs_rest,
            "vs_reference": self.vs_reference,
            "pairs": self.pairs,
            "pairs_total": self.pairs_total,
            **({"thin": dict(self.thin)} if self.thin else {}),
            "more_queries": self.more_queries,
            **({"by_control": {k: v.to_dict() for k, v in self.by_control.items()}}
               if self.by_control else {}),
        }


class AuditFrame:
    """Per-group rates of any number of groups (or intersections) and their fairness summaries.

    Parameters
    ----------
    y_pred : array-like
        Decisions, 0/1 (or labels with ``pos_label``).
    y_true : array-like, optional
        True labels; needed by TPR, FPR, PPV, accuracy and error rate.
    sensitive_features : Series, DataFrame, dict or array
        One group column, or several (each combination that occurs is a group); see
        :func:`fairprobe.stats.groups.group_labels`.
    scores : array-like of float, optional
        Model scores; enable ``mean_score``.
    sample_weight : array-like of float >= 0, optional
        Instance weights (also taken as fairlearn's ``sample_params={"sample_weight": w}``, or
        one ``{"sample_weight": w}`` per metric when all are the same): every rate is
        weighted, its interval chosen by ``weighted_interval``, and the summaries use
        ``method="bonferroni"`` on the effective counts (see :mod:`fairprobe.stats.dropin`;
        coverage measured in ``docs/stats.md``).
    metrics : callable, list or dict of callables, optional
        MetricFrame's ``metrics``: ``by_group`` then holds exactly these columns. fairlearn's and
        scikit-learn's rate functions are computed vectorised; other callables
        ``f(y_true, y_pred)`` per group, with percentile-bootstrap intervals.
    control_features : like ``sensitive_features``, optional
        Groups are control x sensitive intersections; the aggregates are computed within each
        control level.
    options : FrameOptions, optional
        Every keyword above but the data (``y_pred``, ``y_true``, ``sensitive_features``,
        ``scores``, ``sample_weight``, ``metrics``, ``control_features``, ``sample_params``)
        as one object (:class:`~fairprobe.stats.frame_options.FrameOptions`); a keyword given
        as well sets that field of it.

    Other Parameters
    ----------------
    pos_label : scalar, optional
        The positive label of ``y_true`` and ``y_pred`` when they are not 0/1 (a column that is
        0/1 or boolean keeps 1 as positive, so 0/1 decisions go with string labels).
    min_group_size : int, default 1
        By default every group is compared, as in fairlearn: a small group's interval is wide
        and can make a verdict ``undetermined`` (:attr:`GroupSummary.reason` names it), never
        silently left out. Larger values list groups below this size (or, for one rate, with
        fewer instances on which it is defined, e.g. ``y_true == 1`` for TPR) and leave them out
        of the summaries and aggregates, with the reason. A group with no instance on which a
        rate is defined always stays out of that rate's summary (it carries no evidence).
    confidence_level : float in (0, 1)
        Level of the per-group intervals and family-wise level of the summaries.
    group_interval : {"wilson", "exact"}
        Per-group interval: Wilson score or Clopper-Pearson.
    method : {"exact", "bonferroni"}
        Simultaneous construction of the summaries (:mod:`fairprobe.stats.simultaneous`):
        ``"exact"`` (default) keeps the family-wise level at every rate and size, by
        construction; ``"bonferroni"`` (Newcombe/Koopman at level ``1 - alpha/m``) is narrower
        and under-covers with small groups at rates near 0 (measured in ``docs/stats.md``).
    reference : group, optional
        Reference group of the ``vs_reference`` comparisons (label, value or tuple of values).
    tolerance, threshold : float
        Fair band of differences (default 0.05) and floor of ratios (default 0.8).
    weighted_interval : {"design", "korn-graubard", "kish-wilson"}
        Interval of a weighted rate: the union of Korn-Graubard's Clopper-Pearson at a design
        effective size and Hall's skewness-corrected t (default; undetermined where a side's
        weights are too few, :func:`fairprobe.stats.dropin.design_rates`), Korn-Graubard's
        alone, or Wilson's at Kish's effective size.
    zero_division : "warn", 0.0, 1.0 or nan
        Value of a rate whose denominator is 0 in ``by_group``, ``overall`` and the aggregates
        (scikit-learn's rule: ``"warn"`` gives 0.0 and an ``UndefinedMetricWarning``). Such a
        group carries no evidence on that rate and is left out of its summary, with the reason.
    n_boot, seed : int
        Bootstrap resamples of callable metrics, and their seed (``random_state`` is taken as
        ``seed``). With ``ci_quantiles``, fairlearn's meaning: ``n_boot`` resamples of all rows,
        drawn as fairlearn draws them, behind ``by_group_ci``, ``overall_ci``,
        ``group_min_ci()``, ``group_max_ci()``, ``difference_ci()``, ``ratio_ci()``.
    ci_quantiles : list of float, optional
        fairlearn's bootstrap quantiles (with ``n_boot`` and ``random_state``); the intervals of
        ``to_frame()`` and the summaries need no resampling.
    max_groups : int, optional
        Most groups compared (default ``$FAIRPROBE_MAX_GROUPS``, else 2,000): memory is
        linear in the groups, but a family computed pair by pair (Bonferroni, mean scores)
        takes time quadratic in them, so a larger grouping raises
        :class:`~fairprobe.errors.DataError` naming the key instead of running for hours.
    max_listed_pairs : int
        Most pairs a summary lists (default 100, every pair of up to 14 groups); the verdict and
        intervals use every pair whatever this is. Keeps the output linear in the groups.

    Notes
    -----
    Point estimates equal fairlearn's ``MetricFrame`` with ``selection_rate``,
    ``true_positive_rate``, ``false_positive_rate``, ``precision_score``, ``accuracy_score``
    (tested to 1e-12 on Adult), with and without ``sample_weight``; its documented examples run
    through ``AuditFrame`` on the defaults, only the import changed, in
    ``tests/stats/test_migration.py``.
    """

    #: Per weighted rate (design-based intervals), the groups whose interval is not reported
    #: (too few effective instances on one side of the rate): their rate is undetermined.
    #: Empty for unweighted rates.
    _thin: Mapping[str, npt.NDArray[np.bool_]] = MappingProxyType({})
    #: Per weighted rate (design-based intervals), the per-group sums its interval comes from.
    _design: Mapping[str, Any] = MappingProxyType({})

    def __init__(
        self,
        *,
        y_pred: Any,
        sensitive_features: Any,
        y_true: Any = None,
        scores: Any = None,
        sample_weight: Any = None,
        metrics: Any = None,
        control_features: Any = None,
        sample_params: Any = None,
        options: FrameOptions | None = None,
        **flags: Any,
    ) -> None:
        """The data are keywords; how the groups are judged is ``options``
        (:class:`~fairprobe.stats.frame_options.FrameOptions`, every field read) or its
        fields as flat keywords (``pos_label``, ``min_group_size``, ``confidence_level``,
        ``group_interval``, ``method``, ``reference``, ``tolerance``, ``threshold``,
        ``weighted_interval``, ``zero_division``, ``max_groups``, ``max_listed_pairs``,
        ``n_boot``, ``seed`` or ``random_state``, ``ci_quantiles``; the compatibility form),
        which set those fields. An unknown keyword is a :class:`TypeError`."""
        from fairprobe.stats import dropin

        opts = frame_options(options, flags)
        if sample_params is not None:
            sample_weight = _weight_of_sample_params(sample_params, sample_weight)
        self.zero_division = opts.zero_division
        self._init_args = {k: getattr(opts, k) for k in (
            "confidence_level", "group_interval", "method", "tolerance", "threshold",
            "min_group_size", "pos_label", "weighted_interval")}  # fmt: skip
        self._inputs = {"y_pred": y_pred, "y_true": y_true, "scores": scores,
                        "sample_weight": sample_weight}
        self._boot_args = {"metrics": metrics, "sensitive_features": sensitive_features,
                           "control_features": control_features}
        self._set_options(opts, weighted=sample_weight is not None)
        self._set_groups(sensitive_features, control_features, opts)
        pred, true, sc, w = self._columns_of_rows(y_pred, y_true, scores, sample_weight,
                                                  opts.pos_label)
        self.reference = None if opts.reference is None else self.groups.position(opts.reference)
        self._n_rows = self.groups.codes.shape[0]
        self._counts: dict[str, tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]] = {}
        self._means: tuple[npt.NDArray[np.float64], ...] | None = None
        self._rest_means: tuple[npt.NDArray[np.float64], ...] | None = None
        self._count_rows(pred, true, sc, w, dropin)
        self._columns = None if metrics is None else dropin.metric_columns(metrics)
        self._custom: dict[str, tuple[npt.NDArray[np.float64], ...]] = {}
        self._custom_fn: dict[str, Any] = {}
        self._raw = (None if y_true is None else np.asarray(as_1d(y_true, "y_true")),
                     np.asarray(as_1d(y_pred, "y_pred")))
        self._set_metric_columns(opts, w, dropin)
        self._ci_quantiles: list[float] | None = None
        self._replicates: list[AuditFrame] = []
        if opts.ci_quantiles is not None:
            self._bootstrap(opts.ci_quantiles, opts.n_boot, opts.seed)

    def _set_options(self, opts: FrameOptions, *, weighted: bool) -> None:
        """The checked options as attributes; the simultaneous method of weighted rates."""
        method = opts.method
        if method is None:
            method = "bonferroni" if weighted else "exact"
        elif method == "exact" and weighted:
            raise DataError("method='exact' enumerates integer counts; weighted rates take "
                            "method='bonferroni' (the default with sample_weight).")
        self.confidence_level = opts.confidence_level
        self.group_interval = opts.group_interval
        self.weighted_interval = opts.weighted_interval
        self.method = method
        self.tolerance = opts.tolerance
        self.threshold = opts.threshold

    def _set_groups(self, sensitive_features: Any, control_features: Any,
                    opts: FrameOptions) -> None:
        """The groups: the sensitive features' (or the control x sensitive intersections),
        within the size limits."""
        self.control_names: tuple[str, ...] = ()
        if control_features is not None:
            from fairprobe.stats.groups import _columns_of

            ccols, cnames = _columns_of(control_features)
            scols, snames = _columns_of(sensitive_features)
            if set(cnames) & set(snames):
                raise DataError("control_features and sensitive_features share a column name "
                                f"({sorted(set(cnames) & set(snames))}); rename one.")
            self.control_names = tuple(cnames)
            self._sensitive_only = dict(zip(snames, scols, strict=True))
            sensitive_features = dict(zip([*cnames, *snames], [*ccols, *scols], strict=True))
        self.groups: GroupLabels = group_labels(sensitive_features,
                                                min_group_size=opts.min_group_size)
        self.max_groups, self.max_listed_pairs = check_group_limits(
            self.groups.n_groups, opts.max_groups, opts.max_listed_pairs, "AuditFrame")

    def _columns_of_rows(self, y_pred: Any, y_true: Any, scores: Any, sample_weight: Any,
                         pos_label: Any) -> tuple[Any, Any, Any, Any]:
        """The decisions and labels as booleans, the scores and weights as floats, each
        checked, one entry per row; sets :attr:`sample_weight`."""
        n = self.groups.codes.shape[0]
        pred = _binary_labels(y_pred, "y_pred", pos_label)
        true = None if y_true is None else _binary_labels(y_true, "y_true", pos_label)
        sc = None
        if scores is not None:
            sc = np.asarray(as_1d(scores, "scores"), dtype=np.float64)
            if not np.isfinite(sc).all():
                raise DataError("scores contain NaN or infinite values: drop or repair them.")
        w = None
        if sample_weight is not None:
            w = np.asarray(as_1d(sample_weight, "sample_weight"), dtype=np.float64)
            if not np.isfinite(w).all() or (w < 0).any() or not (w > 0).any():
                raise DataError("sample_weight must hold finite weights >= 0, not all 0.")
            if sc is not None:
                raise DataError("scores with sample_weight are not supported yet: drop one.")
        self.sample_weight = w
        for name, col in (("y_pred", pred), ("y_true", true), ("scores", sc), ("sample_weight", w)):
            if col is not None and col.shape[0] != n:
                raise DataError(f"{name} has {col.shape[0]} entries but sensitive_features has "
                                f"{n}: pass one entry per instance.")
        return pred, true, sc, w

    def _count_rows(self, pred: npt.NDArray[np.bool_], true: Any, sc: Any, w: Any,
                    dropin: Any) -> None:
        """Each group's counts of every rate the columns allow (weighted: effective counts),
        and the moments of the scores."""
        g, codes = self.groups.n_groups, self.groups.codes

        def count(mask: npt.NDArray[np.bool_]) -> npt.NDArray[np.int64]:
            return np.bincount(codes, weights=mask.astype(np.float64), minlength=g).astype(
                np.int64)

        size = self.groups.sizes
        npos = count(pred)
        self._counts["selection_rate"] = (npos, size)
        if w is not None:  # weighted rates as effective counts (floats), from per-cell sums
            sums, cells = dropin.cell_sums(codes, g, pred, true, w)
            self._set_weighted(dropin.weighted_rates(sums, cells, true is not None,
                                                     self.weighted_interval,
                                                     self.confidence_level))
            true = None  # the unweighted counts below are not used
        if true is not None:
            tp = count(pred & true)
            ntrue = count(true)
            self._counts.update(_metrics.label_rate_counts(
                {"11": tp, "10": npos - tp, "01": ntrue - tp, "00": size - npos - ntrue + tp}))
        if sc is not None:
            self._set_score_moments(np.bincount(codes, weights=sc, minlength=g),
                                    np.bincount(codes, weights=sc * sc, minlength=g),
                                    size, float(sc.sum()), float((sc * sc).sum()))

    def _set_metric_columns(self, opts: FrameOptions, w: Any, dropin: Any) -> None:
        """MetricFrame's ``metrics``: the rate names checked, each callable computed per group
        with its bootstrap interval."""
        g, codes = self.groups.n_groups, self.groups.codes
        for cname, what in self._columns or []:
            if isinstance(what, str):
                if what != "count":
                    self._check_rate(what)
                continue
            self._custom_fn[cname] = what
            self._custom[cname] = dropin.bootstrap_by_group(
                what, self._raw[0], self._raw[1], codes, g, w,
                n_boot=opts.n_boot if opts.ci_quantiles is None else 0,
                confidence_level=self.confidence_level, seed=opts.seed)

    def _set_weighted(self, wr: dropin.WeightedRates) -> None:
        """Keep a frame's weighted rates (the in-memory frame and frames of counts alike)."""
        self._counts.update(wr.counts)  # type: ignore[arg-type]
        self._weighted = wr.sums
        self._thin, self._design = wr.thin, wr.design

    def _set_score_moments(self, s1: npt.NDArray[Any], s2: npt.NDArray[Any],
                           size: npt.NDArray[np.int64], tot1: float, tot2: float) -> None:
        """Each group's mean and variance of the scores, and the rest's, from the sums of
        scores and of squared scores (in-memory rows and saved counts alike)."""
        n = float(size.sum())
        nf = size.astype(np.float64)
        mean = s1 / nf
        with np.errstate(divide="ignore", invalid="ignore"):
            var = np.maximum(s2 - nf * mean * mean, 0.0) / (nf - 1.0)
        rn = n - nf
        with np.errstate(divide="ignore", invalid="ignore"):
            rmean = (tot1 - s1) / rn
            rvar = np.maximum((tot2 - s2) - rn * rmean * rmean, 0.0) / (rn - 1.0)
        self._means = (mean, var, nf)
        self._rest_means = (rmean, rvar, rn)
        self._scores_total = (tot1 / n,)

    @classmethod
    def from_counts(cls, counts: Any, **options: Any) -> Any:
        """The frame of a :class:`fairprobe.scale.GroupCounts` (sums per group counted by an
        engine over files or frames, merged, or loaded): the same by-group table, summaries and
        verdicts as the frame of the rows, without the rows. ``options``: ``min_group_size``,
        ``confidence_level``, ``group_interval``, ``method``, ``reference``, ``tolerance``,
        ``threshold``, ``max_groups``, ``max_listed_pairs``, ``weighted_interval`` (defaults as
        the constructor's; weighted counts keep the per-cell sums of ``w``, ``w^2``, ``w^3``
        that every ``weighted_interval`` needs). See :mod:`fairprobe.scale.frame`."""
        from fairprobe.scale.frame import frame_from_counts

        return frame_from_counts(cls, counts, **options)

    # --- the by-group table ------------------------------------------------------------------

    @property
    def rates(self) -> tuple[str, ...]:
        """The per-group rates available from the columns given."""
        out = tuple(self._counts)
        return out + (("mean_score",) if self._means is not None else ())

    def _rate_values(self, rate: str) -> npt.NDArray[np.float64]:
        if rate == "mean_score":
            assert self._means is not None
            return self._means[0]
        k, n = self._counts[rate]
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(n > 0, k / np.maximum(n, 1), np.nan)

    def _rate_interval(self, rate: str) -> tuple[npt.NDArray[np.float64], ...]:
        if rate == "mean_score":
            from scipy import special

            assert self._means is not None
            mean, var, nf = self._means
            with np.errstate(divide="ignore", invalid="ignore"):
                half = special.stdtrit(nf - 1, 0.5 + self.confidence_level / 2) * np.sqrt(var / nf)
            return mean - half, mean + half
        k, n = self._counts[rate]
        nn = np.maximum(n, 1)
        fn = wilson_interval if self.group_interval == "wilson" else clopper_pearson_interval
        if rate in self._design:  # weighted, design-based ([0, 1] where a side is too thin)
            d = self._design[rate].rates(self.confidence_level)
            lo, hi = d.low, d.high
        else:
            lo, hi = fn(k, nn, self.confidence_level)
        return np.where(n > 0, lo, np.nan), np.where(n > 0, hi, np.nan)

    def _check_rate(self, rate: str) -> str:
        if rate not in RATES:
            check_choice(rate, "rate", "AuditFrame", tuple(RATES))
        if rate not in self.rates:
            needs = " and ".join(RATES[rate][0])
            raise DataError(f"The rate {rate!r} needs {needs}; pass them to AuditFrame.")
        return rate

    def _column_values(self, name: str, what: Any) -> npt.NDArray[np.float64]:
        if not isinstance(what, str):
            return self._custom[name][0]
        if what == "count":
            return self.groups.sizes.astype(np.float64)
        return self._defined(what, self._rate_values(what), self._counts.get(what, (0, None))[1])

    def _defined(self, what: str, values: Any, denom: Any) -> Any:
        """``values`` with scikit-learn's ``zero_division`` where the denominator is 0."""
        if denom is None or what == "mean_score":
            return values
        zero = np.asarray(denom) == 0
        if not zero.any():
            return values
        if self.zero_division == "warn":
            import warnings

            try:
                from sklearn.exceptions import UndefinedMetricWarning as Warn
            except ImportError:  # pragma: no cover - scikit-learn is a dependency
                Warn = RuntimeWarning  # type: ignore[assignment]  # noqa: N806
            warnings.warn(f"{what} is ill-defined (no instance {_DENOMINATOR.get(what, '')}) "
                          "and set to 0.0; use zero_division to control this.", Warn,
                          stacklevel=3)
        fill = 0.0 if self.zero_division == "warn" else float(self.zero_division)
        return np.where(zero, fill, values)

    @property
    def by_group(self) -> pd.DataFrame:
        """Each group's rates (rows: groups, columns: rates), fairlearn's ``by_group`` shape;
        with ``metrics``, exactly those columns."""
        cols = self._columns if self._columns is not None else [(r, r) for r in self.rates]
        return pd.DataFrame({c: self._column_values(c, w) for c, w in cols},
                            index=self.groups.index())

    def to_frame(self) -> pd.DataFrame:
        """The full by-group table: size, ``too_small``, and per rate its value, denominator and
        interval (``<rate>``, ``<rate>_n``, ``<rate>_low``, ``<rate>_high``)."""
        cols: dict[str, Any] = {"n": self.groups.sizes, "too_small": self.groups.too_small}
        for r in self.rates:
            lo, hi = self._rate_interval(r)
            cols[r] = self._rate_values(r)
            cols[f"{r}_n"] = (self._counts[r][1] if r != "mean_score"
                              else self.groups.sizes)
            cols[f"{r}_low"] = lo
            cols[f"{r}_high"] = hi
        for c, (val, lo, hi) in self._custom.items():  # callables: bootstrap intervals
            cols[c], cols[f"{c}_n"], cols[f"{c}_low"], cols[f"{c}_high"] = (
                val, self.groups.sizes, lo, hi)
        return pd.DataFrame(cols, index=self.groups.index())

    def _overall_of(self, rows: npt.NDArray[np.bool_]) -> dict[str, float]:
        """Every column over the instances of the groups ``rows`` (a mask over groups)."""
        out: dict[str, float] = {}
        cols = self._columns if self._columns is not None else [(r, r) for r in self.rates]
        for c, what in cols:
            if not isinstance(what, str):
                inst = rows[self.groups.codes]
                yt = None if self._raw[0] is None else self._raw[0][inst]
                kw = {} if self.sample_weight is None or not _takes_weight(what) else {
                    "sample_weight": self.sample_weight[inst]}
                out[c] = float(what(yt, self._raw[1][inst], **kw))
            elif what == "count":
                out[c] = float(self.groups.sizes[rows].sum())
            elif what == "mean_score":
                out[c] = self._scores_total[0]
            else:  # weighted: sum(w x) / sum(w) over the groups, not the effective counts
                k, n = self._weighted[what] if self.sample_weight is not None \
                    else self._counts[what]
                total = n[rows].sum()
                out[c] = float(k[rows].sum() / total) if total > 0 else float(
                    self._defined(what, np.asarray([np.nan]), np.asarray([0]))[0])
        return out

    @property
    def overall(self) -> pd.Series | pd.DataFrame:
        """Each rate over all instances (fairlearn's ``overall``); with control features, one
        row per control level."""
        g = self.groups.n_groups
        if not self.control_names:
            return pd.Series(self._overall_of(np.ones(g, dtype=bool)))
        levels = self._control_levels()
        rows = {lev: self._overall_of(levels == lev) for lev in dict.fromkeys(levels.tolist())}
        return pd.DataFrame.from_dict(rows, orient="index").rename_axis(
            self.control_names[0] if len(self.control_names) == 1 else None)

    def _control_levels(self) -> npt.NDArray[np.object_]:
        k = len(self.control_names)
        keys = [key[:k] if k > 1 else key[0] for key in self.groups.keys]
        out = np.empty(len(keys), dtype=object)
        out[:] = keys
        return out

    # --- fairlearn-style aggregates (point estimates) ----------------------------------------

    def _eligible_values(self, errors: str = "raise", owner: str = "AuditFrame") -> pd.DataFrame:
        check_choice(errors, "errors", owner, _ERRORS)
        bg = self.by_group
        if errors == "coerce":  # fairlearn: a non-scalar result becomes NaN
            bg = bg.apply(pd.to_numeric, errors="coerce")
        return bg[self.groups.eligible]

    def _per_control(self, frame: pd.DataFrame, how: str) -> Any:
        if not self.control_names:
            return getattr(frame, how)()
        return getattr(frame.groupby(level=list(self.control_names)), how)()

    def group_max(self, errors: str = "raise") -> pd.Series | pd.DataFrame:
        """Largest rate over the groups (those of ``min_group_size`` or more; every group by
        default), per control level. ``errors`` as in fairlearn (``"raise"`` or ``"coerce"``:
        a non-numeric value becomes NaN)."""
        return self._per_control(self._eligible_values(errors, "AuditFrame.group_max"), "max")

    def group_min(self, errors: str = "raise") -> pd.Series | pd.DataFrame:
        """Smallest rate over the groups (as :meth:`group_max`)."""
        return self._per_control(self._eligible_values(errors, "AuditFrame.group_min"), "min")

    def _vs_overall(self, errors: str = "raise") -> tuple[pd.DataFrame, pd.DataFrame]:
        v = self._eligible_values(errors)
        o = self.overall
        if not self.control_names:
            return v, pd.DataFrame([o] * len(v), index=v.index)
        k = len(self.control_names)
        levels = [t[0] if k == 1 else tuple(t[:k]) for t in v.index]
        assert isinstance(o, pd.DataFrame)
        return v, pd.DataFrame(o.loc[levels].to_numpy(), index=v.index, columns=v.columns)

    def difference(self, method: str = "between_groups",
                   errors: str = "coerce") -> pd.Series | pd.DataFrame:
        """``between_groups``: max - min per rate; ``to_overall``: largest ``|rate - overall|``
        (per control level); ``errors`` as in fairlearn (default ``"coerce"``)."""
        check_choice(method, "method", "AuditFrame.difference", ("between_groups", "to_overall"))
        if method == "between_groups":
            return self.group_max(errors) - self.group_min(errors)
        v, o = self._vs_overall(errors)
        return self._per_control((v - o).abs(), "max")

    def ratio(self, method: str = "between_groups",
              errors: str = "coerce") -> pd.Series | pd.DataFrame:
        """``between_groups``: min / max per rate; ``to_overall``: smallest of rate/overall and
        overall/rate (per control level); ``errors`` as in :meth:`difference`."""
        check_choice(method, "method", "AuditFrame.ratio", ("between_groups", "to_overall"))
        if method == "between_groups":
            return self.group_min(errors) / self.group_max(errors)
        v, o = self._vs_overall(errors)
        with np.errstate(divide="ignore", invalid="ignore"):
            r = np.fmin(v / o, o / v)
        return self._per_control(pd.DataFrame(r, index=v.index, columns=v.columns), "min")

    # --- fairlearn's bootstrap (n_boot with ci_quantiles) ---------------------------------------

    def _bootstrap(self, ci_quantiles: Any, n_boot: Any, seed: Any) -> None:
        """fairlearn's ``MetricFrame`` bootstrap: ``n_boot`` resamples of all rows with
        replacement, drawn exactly as fairlearn draws them (a generator seeded with ``seed``
        gives one uint32 seed per resample; ``RandomState(seed_i).choice(n, n)`` its rows, as
        ``DataFrame.sample(frac=1, replace=True)`` does), so the ``*_ci`` quantiles equal
        fairlearn's for the same ``random_state``. Each resample is a full ``AuditFrame``."""
        from fairprobe.stats.groups import _columns_of

        qs = [check_real(q, "ci_quantiles", "AuditFrame", lo=0.0, hi=1.0, closed="both")
              for q in ci_quantiles]
        if not qs:
            raise DataError("ci_quantiles is empty: give the quantiles, e.g. [0.025, 0.975].")
        n_boot = check_int(n_boot, "n_boot", "AuditFrame", lo=1)
        n = self._n_rows
        seeds = np.random.default_rng(int(seed)).integers(
            low=0, high=np.iinfo(np.uint32).max, size=n_boot, dtype=np.uint32)
        scols, snames = _columns_of(self._boot_args["sensitive_features"])
        cf = self._boot_args["control_features"]
        ccols, cnames = _columns_of(cf) if cf is not None else ([], [])

        def take(x: Any, rows: Any) -> Any:
            return None if x is None else np.asarray(as_1d(x, "column"))[rows]

        args = {k: v for k, v in self._init_args.items() if k != "min_group_size"}
        for s in seeds.tolist():
            rows = np.random.RandomState(s).choice(n, size=n, replace=True)
            self._replicates.append(AuditFrame(
                y_pred=take(self._inputs["y_pred"], rows), y_true=take(self._inputs["y_true"], rows),
                scores=take(self._inputs["scores"], rows),
                sample_weight=take(self._inputs["sample_weight"], rows),
                sensitive_features={k: take(c, rows) for k, c in zip(snames, scols, strict=True)},
                control_features=None if cf is None else {
                    k: take(c, rows) for k, c in zip(cnames, ccols, strict=True)},
                metrics=self._boot_args["metrics"], zero_division=self.zero_division,
                min_group_size=self.groups.min_group_size, n_boot=0, **args))
        self._ci_quantiles = qs

    def _quantiles(self, values: list[Any]) -> list[Any]:
        if self._ci_quantiles is None:
            raise DataError("no bootstrap: pass n_boot and ci_quantiles to AuditFrame (as to "
                            "MetricFrame) for the *_ci quantiles.")
        first = values[0]
        if isinstance(first, pd.DataFrame | pd.Series):
            index = first.index
            for v in values[1:]:
                index = index.union(v.index)
            values = [v.reindex(index) for v in values]
        # as fairlearn: frames (where a resample may lack a group) skip NaN, series do not
        q = np.nanquantile if isinstance(first, pd.DataFrame) else np.quantile
        arr = q(np.stack([np.asarray(v, dtype=float) for v in values]), self._ci_quantiles,
                axis=0)
        if isinstance(first, pd.DataFrame):
            return [pd.DataFrame(a, index=values[0].index, columns=first.columns) for a in arr]
        if isinstance(first, pd.Series):
            return [pd.Series(a, index=values[0].index, name=first.name) for a in arr]
        return list(arr)

    @property
    def by_group_ci(self) -> list[pd.DataFrame]:
        """``by_group`` at each of ``ci_quantiles`` over the bootstrap resamples (fairlearn's)."""
        return self._quantiles([r.by_group for r in self._replicates])

    @property
    def overall_ci(self) -> list[Any]:
        """``overall`` at each of ``ci_quantiles`` (fairlearn's)."""
        return self._quantiles([r.overall for r in self._replicates])

    def group_min_ci(self) -> list[Any]:
        """``group_min()`` at each of ``ci_quantiles`` (fairlearn's)."""
        return self._quantiles([r.group_min() for r in self._replicates])

    def group_max_ci(self) -> list[Any]:
        """``group_max()`` at each of ``ci_quantiles`` (fairlearn's)."""
        return self._quantiles([r.group_max() for r in self._replicates])

    def difference_ci(self, method: str = "between_groups") -> list[Any]:
        """``difference(method)`` at each of ``ci_quantiles`` (fairlearn's)."""
        return self._quantiles([r.difference(method=method) for r in self._replicates])

    def ratio_ci(self, method: str = "between_groups") -> list[Any]:
        """``ratio(method)`` at each of ``ci_quantiles`` (fairlearn's)."""
        return self._quantiles([r.ratio(method=method) for r in self._replicates])

    # --- summaries with simultaneous intervals -----------------------------------------------

    def _family(self, rate: str, kind: Literal["difference", "ratio"], share: float,
                idx: npt.NDArray[np.int64]) -> FamilyIntervals:
        level = self.confidence_level
        if rate == "mean_score":
            assert self._means is not None and self._rest_means is not None
            m, v, nf = self._means
            rm, rv, rn = self._rest_means
            return mean_family_intervals(m[idx], v[idx], nf[idx], rm[idx], rv[idx], rn[idx],
                                         confidence_level=level, share=share)
        k, n = self._counts[rate]
        rk, rn_ = k.sum() - k, n.sum() - n
        fam = family_intervals(k[idx], n[idx], rk[idx], rn_[idx], kind=kind,
                               confidence_level=level, method=self.method, share=share)
        thin = self._thin.get(rate)
        if thin is None or not thin[idx].any():
            return fam
        # a group without a reported interval: each comparison it enters spans every value
        from dataclasses import replace

        t = thin[idx]
        full = (-1.0, 1.0) if kind == "difference" else (0.0, np.inf)
        return replace(fam, thin=t, rest_low=np.where(t, full[0], fam.rest_low),
                       rest_high=np.where(t, full[1], fam.rest_high))

    def _compared(self, rates: Sequence[str]) -> tuple[npt.NDArray[np.int64], dict[str, str]]:
        labels = self.groups.labels
        excluded: dict[str, str] = {}
        ok = self.groups.eligible.copy()
        for i in np.flatnonzero(~ok):
            excluded[labels[i]] = (f"too small: {int(self.groups.sizes[i])} < "
                                   f"min_group_size {self.groups.min_group_size}")
        for r in rates:
            if r == "mean_score":
                assert self._means is not None
                bad = self._means[2] < max(2, self.groups.min_group_size)
                why = "fewer than 2 scores"
            else:
                denom = self._counts[r][1]
                bad = (denom < self.groups.min_group_size) | (denom <= 0)
                if r in self._thin:  # compared without an interval, never silently left out
                    bad &= ~self._thin[r]
            for i in np.flatnonzero(ok & bad):
                if r != "mean_score" and denom[i] <= 0:
                    why = (f"no instance {_DENOMINATOR.get(r, '')}: {r} is undefined there "
                           "(no evidence to compare)")
                elif r != "mean_score":
                    why = (f"only {denom[i]:g} instance(s) {_DENOMINATOR.get(r, '')} for "
                           f"{r} (< min_group_size {self.groups.min_group_size})")
                excluded[labels[i]] = why
            ok &= ~bad
        return np.flatnonzero(ok), excluded

    def summary(self, metric: str, *, threshold: float | None = None) -> GroupSummary:
        """The summary of one fairness metric (name or alias, e.g. ``"dp"``, ``"eodds"``).

        ``threshold`` overrides the frame's tolerance (differences) or floor (ratios).
        """
        name = fairness_metric_name(metric, "AuditFrame.summary")
        # one computation per question: a report asks for the same summary several times
        # (verdict, JSON, not-summarised list), and with many groups each costs a pairwise
        # family. The key holds every public setting a summary depends on, so changing one
        # after construction recomputes.
        key = (name, threshold, self.tolerance, self.threshold, self.confidence_level,
               self.method, self.reference, self.max_listed_pairs,
               getattr(self, "weighted_interval", None))
        memo = self.__dict__.setdefault("_summary_memo", {})
        if key not in memo:
            try:
                memo[key] = self._summary(name, threshold)
            except DataError as exc:
                memo[key] = exc
        out = memo[key]
        if isinstance(out, DataError):
            raise out
        return out  # type: ignore[no-any-return]

    def _summary(self, name: str, threshold: float | None) -> GroupSummary:
        from fairprobe.stats.dropin import thin_reason

        if self.control_names:
            return self._control_summary(name, threshold)
        rates, kind = FAIRNESS_METRICS[name]
        for r in rates:
            self._check_rate(r)
        th = (self.threshold if kind == "ratio" else self.tolerance) if threshold is None \
            else check_real(threshold, "threshold", "AuditFrame.summary", lo=0.0)
        labels = self.groups.labels
        # one filtering rule: each rate compares the groups whose denominator for that rate
        # reaches min_group_size, so equalized odds >= max(EO, FPR gap) by construction
        idxs: dict[str, npt.NDArray[np.int64]] = {}
        excluded: dict[str, str] = {}
        for r in rates:
            idx_r, exc_r = self._compared((r,))
            if idx_r.size < 2:
                raise DataError(
                    f"{name} needs two groups large enough to compare on {r}; only "
                    f"{[labels[i] for i in idx_r]} qualify (excluded: {exc_r}). Lower "
                    "min_group_size (--min-group-size) or add data (--budget)."
                )
            idxs[r] = idx_r
            for lab, why in exc_r.items():
                if lab not in excluded:
                    excluded[lab] = why
                elif why not in excluded[lab]:
                    excluded[lab] = f"{excluded[lab]}; {why}"
        share = 1.0 / len(rates)
        fams = {r: self._family(r, kind, share, idxs[r]) for r in rates}
        worst = {r: worst_pair(f) for r, f in fams.items()}
        # several rates (equalized odds): the gap is the largest of the rates' gaps, the ratio
        # the smallest of their ratios, so the interval is the max (min) of their intervals
        pick = max if kind == "difference" else min
        top = pick(rates, key=lambda r: worst[r]["estimate"])
        w = worst[top]
        idx = idxs[top]
        low = pick(worst[r]["low"] for r in rates)
        high = pick(worst[r]["high"] for r in rates)
        pair = (labels[idx[w["pair"][0]]], labels[idx[w["pair"][1]]])
        smethod = f"{fams[top].method}-simultaneous"
        vs_rest: list[dict[str, Any]] = []
        vs_ref: list[dict[str, Any]] = []
        all_pairs: list[dict[str, Any]] = []
        pairs_total = sum(f.n_pairs for f in fams.values())
        listed = _listed_pairs(fams, self.max_listed_pairs)
        found: dict[tuple[str, int, int], tuple[float, float, float]] = {}
        for r, f in fams.items():  # the listed pairs' intervals, one call per rate
            a = np.array([q[1] for q in listed if q[0] == r], dtype=np.int64)
            b = np.array([q[2] for q in listed if q[0] == r], dtype=np.int64)
            if a.size:
                found.update(zip(((r, x, y) for x, y in zip(a.tolist(), b.tolist(),
                                                             strict=True)),
                                 zip(*f.pairs_for(a, b), strict=True), strict=True))
        for r, p1, p2 in listed:
            idx = idxs[r]
            e, lo_, hi_ = found[(r, p1, p2)]
            all_pairs.append({"groups": [labels[idx[p1]], labels[idx[p2]]], "rate": r,
                              "estimate": _json(e),
                              "interval": _interval(lo_, hi_, self.confidence_level, smethod)})
        for r, f in fams.items():
            idx = idxs[r]
            for j, gi in enumerate(idx):
                vs_rest.append({"group": labels[gi], "rate": r,
                                "estimate": _json(f.rest_est[j]),
                                "interval": _interval(f.rest_low[j], f.rest_high[j],
                                                      self.confidence_level, smethod)})
            if self.reference is not None and self.reference in idx:
                ref = int(np.flatnonzero(idx == self.reference)[0])
                # the ordered pairs (g, ref): the groups before the reference, then after it
                others = np.concatenate([np.arange(ref), np.arange(ref + 1, idx.size)])
                est, lo, hi = f.ordered_for(others, np.full(others.size, ref))
                for g_, e, lo_, hi_ in zip(others.tolist(), est.tolist(), lo.tolist(),
                                           hi.tolist(), strict=True):
                    vs_ref.append({"group": labels[idx[g_]], "reference": labels[idx[ref]],
                                   "rate": r, "estimate": _json(e),
                                   "interval": _interval(lo_, hi_,
                                                         self.confidence_level, smethod)})
        return GroupSummary(
            metric=name, kind=kind, estimate=float(w["estimate"]),
            pair=pair, low=float(low), high=float(high), rate=top, vs_rest=vs_rest,
            vs_reference=vs_ref, threshold=th, confidence_level=self.confidence_level,
            method=self.method, family_size=sum(f.family_size for f in fams.values()),
            compared=tuple(labels[i] for i in sorted(set().union(*(map(int, i) for i in
                                                                    idxs.values())))),
            excluded=excluded, pairs=all_pairs, pairs_total=pairs_total,
            rest_family_size=sum(f.rest_family_size for f in fams.values()),
            rates=tuple(rates),
            denominators={r: {labels[i]: self._denominator(r, i) for i in idxs[r]}
                          for r in rates},
            thin={labels[i]: thin_reason(r, d, i) for r in rates
                  if r in self._thin and self._thin[r][idxs[r]].any()
                  for d in (self._design[r].rates(self.confidence_level),)  # once a rate
                  for i in idxs[r] if self._thin[r][i]},
            plan_inputs=self._plan_inputs(top, idxs[top], kind),
        )

    def _plan_inputs(self, rate: str, idx: npt.NDArray[np.int64], kind: str
                     ) -> dict[str, Any] | None:
        """The observed shares, pooled rate and sizes the planner takes for ``rate`` over the
        compared groups ``idx``."""
        if rate == "mean_score" or rate not in ("selection_rate", "true_positive_rate"):
            return None
        k, n = (np.asarray(x, dtype=np.float64) for x in self._counts[rate])
        kk, nn = k[idx], n[idx]
        if nn.sum() <= 0:
            return None
        rows = float(self.groups.sizes[idx].sum())
        labels = self.groups.labels  # built once: it is a new tuple of k labels per access
        out: dict[str, Any] = {
            "shares": {labels[i]: float(x / nn.sum()) for i, x in zip(idx, nn, strict=True)},
            "base_rate": float(kk.sum() / nn.sum()), "queried": rows,
            "label_rate": float(nn.sum() / rows) if rate == "true_positive_rate" else 1.0,
}
        return out

    def _denominator(self, rate: str, i: int) -> float:
        n = (self.groups.sizes if rate == "mean_score" else self._counts[rate][1])[i]
        return int(n) if float(n).is_integer() else float(n)

    def _control_summary(self, name: str, threshold: float | None) -> GroupSummary:
        """The summary within each control level, each at level ``1 - alpha / L`` (Bonferroni
        over the ``L`` levels, so all hold at once), and their worst: the largest gap (or
        smallest ratio) over levels lies in ``[max low, max high]`` (``[min low, min high]``)
        whenever every level's interval covers its own."""
        levels = self._control_levels()
        order = list(dict.fromkeys(levels.tolist()))
        row_level = levels[self.groups.codes]
        alpha = 1.0 - self.confidence_level
        args = {**self._init_args, "confidence_level": 1.0 - alpha / len(order)}
        subs: dict[str, GroupSummary] = {}
        for lev in order:
            rows = np.flatnonzero(row_level == lev)

            def take(x: Any, rows: Any = rows) -> Any:
                return None if x is None else np.asarray(as_1d(x, "column"))[rows]

            sub = AuditFrame(
                y_pred=take(self._inputs["y_pred"]), y_true=take(self._inputs["y_true"]),
                scores=take(self._inputs["scores"]),
                sample_weight=take(self._inputs["sample_weight"]),
                sensitive_features={k: take(v) for k, v in self._sensitive_only.items()},
                zero_division=self.zero_division, **args)
            key = lev if isinstance(lev, str) else ", ".join(map(str, lev)) if isinstance(
                lev, tuple) else str(lev)
            try:
                subs[key] = sub.summary(name, threshold=threshold)
            except DataError as e:
                raise DataError(f"{name} within control level {key!r}: {e}") from None
        kind = FAIRNESS_METRICS[name][1]
        pick = max if kind == "difference" else min
        worst = pick(subs, key=lambda k: subs[k].estimate)
        w = subs[worst]
        from dataclasses import replace

        return replace(
            w, low=pick(x.low for x in subs.values()), high=pick(x.high for x in subs.values()),
            confidence_level=self.confidence_level,
            family_size=sum(x.family_size for x in subs.values()),
            pair=(f"{worst}: {w.pair[0]}", f"{worst}: {w.pair[1]}"), by_control=subs,
            plan_inputs=None,
            compared=tuple(f"{k}: {g}" for k, x in subs.items() for g in x.compared),
            excluded={f"{k}: {g}": why for k, x in subs.items() for g, why in x.excluded.items()},
            denominators={r: {f"{k}: {g}": n for k, x in subs.items()
                              for g, n in x.denominators.get(r, {}).items()}
                          for r in w.denominators})

    # --- output ------------------------------------------------------------------------------

    def by_group_records(self) -> list[dict[str, Any]]:
        """The by-group table as JSON-ready records (intervals in the shared shape)."""
        frame = self.to_frame()
        method = self.group_interval
        # columns as arrays once: indexing a DataFrame cell by cell costs ~20 us, which with
        # thousands of groups and several rates is most of an audit's time
        col = {c: frame[c].to_numpy() for c in frame.columns
               if any(c == r or c.startswith(f"{r}_") for r in self.rates)}
        out = []
        for i, lab in enumerate(self.groups.labels):
            row: dict[str, Any] = {
                "group": lab,
                "values": dict(zip(self.groups.names, map(_plain, self.groups.keys[i]),
                                   strict=True)),
                "n": int(self.groups.sizes[i]),
                "too_small": bool(self.groups.too_small[i]),
                "rates": {},
            }
            for r in self.rates:
                nr = float(col[f"{r}_n"][i])
                row["rates"][r] = {
                    "value": _json(col[r][i]),
                    "n": int(nr) if nr.is_integer() else nr,  # effective n when weighted
                    "interval": _interval(col[f"{r}_low"][i], col[f"{r}_high"][i],
                                          self.confidence_level,
                                          "t" if r == "mean_score" else method),
                }
            out.append(row)
        return out

    def to_dict(self, metrics: Sequence[str] | None = None) -> dict[str, Any]:
        """JSON-ready: columns, groups with counts/rates/intervals, summaries of ``metrics``
        (default: every fairness metric the columns allow)."""
        names = self._metrics(metrics)
        return {
            "sensitive_features": list(self.groups.names),
            "min_group_size": self.groups.min_group_size,
            "confidence_level": self.confidence_level,
            "group_interval": self.group_interval,
            "simultaneous_method": self.method,
            "reference": None if self.reference is None else self.groups.labels[self.reference],
            "by_group": self.by_group_records(),
            "summaries": {m: self.summary(m).to_dict() for m in names},
        }

    def _metrics(self, metrics: Sequence[str] | None) -> list[str]:
        if metrics is not None:
            return [fairness_metric_name(m) for m in metrics]
        return [m for m, (rates, _) in FAIRNESS_METRICS.items()
                if all(r in self.rates for r in rates)]

    def __repr__(self) -> str:
        return (f"AuditFrame({self.groups.n_groups} groups of {list(self.groups.names)}, "
                f"rates {list(self.rates)})\n{self.to_frame()!r}")

    def _repr_html_(self) -> str:
        table = self.to_frame().to_html(float_format=lambda x: f"{x:.4f}")
        rows = []
        for m in self._metrics(None):
            try:
                s = self.summary(m)
            except DataError as e:
                rows.append(f"<tr><td>{html.escape(m)}</td><td colspan=4>"
                            f"{html.escape(str(e))}</td></tr>")
                continue
            rows.append(
                f"<tr><td>{html.escape(m)}</td><td>{s.estimate:.4f}</td>"
                f"<td>[{s.low:.4f}, {s.high:.4f}]</td>"
                f"<td>{html.escape(' vs '.join(s.pair))}</td><td>{s.verdict}</td></tr>")
        pct = f"{self.confidence_level:.0%}"
        return (f"<div><b>AuditFrame</b>: {self.groups.n_groups} groups of "
                f"{html.escape(', '.join(self.groups.names))}{table}"
                f"<table><tr><th>metric</th><th>worst</th><th>{pct} simultaneous "
                f"({self.method})</th><th>pair</th><th>verdict</th></tr>{''.join(rows)}"
                "</table></div>")


def _takes_weight(f: Any) -> bool:
    from fairprobe.stats.dropin import _accepts_weight

    return _accepts_weight(f)


def _plain(v: Any) -> Any:
    return v.item() if isinstance(v, np.generic) else v



def _weight_of_sample_params(sample_params: Any, sample_weight: Any) -> Any:
    """The one weight column of fairlearn's ``sample_params``: ``{"sample_weight": w}`` or
    ``{metric: {"sample_weight": w}}`` with the same ``w`` for every metric (fairprobe weights
    every rate alike)."""
    from collections.abc import Mapping

    if not isinstance(sample_params, Mapping):
        raise DataError("sample_params must be a dict: {'sample_weight': w} or "
                        "{metric name: {'sample_weight': w}}.")
    if all(isinstance(v, Mapping) for v in sample_params.values()) and sample_params:
        per = list(sample_params.values())
    else:
        per = [sample_params]
    weights = []
    for p in per:
        other = sorted(set(p) - {"sample_weight"})
        if other:
            raise DataError(f"sample_params: only 'sample_weight' is taken (got {other}); pass "
                            "other per-metric arguments with functools.partial in metrics.")
        if "sample_weight" in p:
            weights.append(np.asarray(as_1d(p["sample_weight"], "sample_weight"), dtype=float))
    if not weights:
        return sample_weight
    if len(weights) != len(per) or any(
            w.shape != weights[0].shape or not np.array_equal(w, weights[0]) for w in weights):
        raise DataError("sample_params gives different sample_weight to different metrics; "
                        "fairprobe weights every rate alike: build one AuditFrame per weight.")
    if sample_weight is not None:
        raise DataError("give sample_weight or sample_params, not both.")
    return weights[0]
