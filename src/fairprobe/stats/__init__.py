"""Statistics core: counts vectors, fairness metrics, intervals and verdicts.

Three layers, one result type (:class:`MetricResult`):

* from evidence: :func:`demographic_parity_from_counts`, :func:`equal_opportunity_from_counts`,
  :func:`disparate_impact_from_counts` (on a :class:`CountsVector`), and
  :func:`performance_gap_from_stats` (on a :class:`MeanStats`);
* from raw columns, fairlearn style: :func:`demographic_parity_difference`,
  :func:`equal_opportunity_difference`, :func:`disparate_impact_ratio`,
  :func:`performance_gap`, all thin wrappers over the engine :func:`compute_metric`;
* the vectorised intervals of :mod:`fairprobe.stats.intervals` and the exact ones of
  :mod:`fairprobe.stats.exact`;
* any number of groups: :class:`AuditFrame` (by-group table, summaries with simultaneous
  intervals, :mod:`fairprobe.stats.simultaneous`) on :func:`group_labels`.

See ``docs/stats.md``.
"""

from typing import TYPE_CHECKING, Any

from fairprobe.stats.counts import CountsVector, counts_from_decisions

if TYPE_CHECKING:
    from fairprobe.stats.api import (
        METRICS,
        compute_metric,
        demographic_parity_difference,
        disparate_impact_ratio,
        equal_opportunity_difference,
        group_counts,
        performance_gap,
    )
    from fairprobe.stats.counts import CountsVector, counts_from_decisions
    from fairprobe.stats.exact import (
        clopper_pearson_interval,
        exact_difference_interval,
        exact_ratio_interval,
    )
    from fairprobe.stats.frame import AuditFrame, GroupSummary
    from fairprobe.stats.groups import (
        REST,
        GroupLabels,
        GroupSelection,
        group_labels,
        select_groups,
    )
    from fairprobe.stats.intervals import (
        katz_ratio_interval,
        newcombe_interval,
        normal_quantile,
        score_ratio_interval,
        welch_interval,
        wilson_interval,
    )
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
    from fairprobe.stats.result import ConfidenceInterval, MeanStats, MetricResult, Verdict
    from fairprobe.stats.simultaneous import family_intervals

# Everything but the counts vector loads on first use (PEP 562): importing fairprobe.stats.counts
# (auditor nodes, the collaborative simulator) must not pay for pandas and scipy.
_LAZY = {
    "AuditFrame": "fairprobe.stats.frame",
    "ConfidenceInterval": "fairprobe.stats.result",
    "GroupLabels": "fairprobe.stats.groups",
    "GroupSummary": "fairprobe.stats.frame",
    "clopper_pearson_interval": "fairprobe.stats.exact",
    "exact_difference_interval": "fairprobe.stats.exact",
    "exact_ratio_interval": "fairprobe.stats.exact",
    "family_intervals": "fairprobe.stats.simultaneous",
    "group_labels": "fairprobe.stats.groups",
    "DEFAULT_CONFIDENCE_LEVEL": "fairprobe.stats.metrics",
    "DEFAULT_DI_THRESHOLD": "fairprobe.stats.metrics",
    "DEFAULT_TOLERANCE": "fairprobe.stats.metrics",
    "GroupSelection": "fairprobe.stats.groups",
    "METRICS": "fairprobe.stats.api",
    "MeanStats": "fairprobe.stats.result",
    "MetricResult": "fairprobe.stats.result",
    "REST": "fairprobe.stats.groups",
    "Verdict": "fairprobe.stats.result",
    "compute_metric": "fairprobe.stats.api",
    "demographic_parity_difference": "fairprobe.stats.api",
    "demographic_parity_from_counts": "fairprobe.stats.metrics",
    "disparate_impact_from_counts": "fairprobe.stats.metrics",
    "disparate_impact_ratio": "fairprobe.stats.api",
    "equal_opportunity_difference": "fairprobe.stats.api",
    "equal_opportunity_from_counts": "fairprobe.stats.metrics",
    "group_counts": "fairprobe.stats.api",
    "katz_ratio_interval": "fairprobe.stats.intervals",
    "mean_stats": "fairprobe.stats.metrics",
    "newcombe_interval": "fairprobe.stats.intervals",
    "normal_quantile": "fairprobe.stats.intervals",
    "performance_gap": "fairprobe.stats.api",
    "performance_gap_from_stats": "fairprobe.stats.metrics",
    "score_ratio_interval": "fairprobe.stats.intervals",
    "select_groups": "fairprobe.stats.groups",
    "welch_interval": "fairprobe.stats.intervals",
    "wilson_interval": "fairprobe.stats.intervals",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'fairprobe.stats' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "DEFAULT_CONFIDENCE_LEVEL",
    "AuditFrame",
    "GroupLabels",
    "GroupSummary",
    "clopper_pearson_interval",
    "exact_difference_interval",
    "exact_ratio_interval",
    "family_intervals",
    "group_labels",
    "DEFAULT_DI_THRESHOLD",
    "DEFAULT_TOLERANCE",
    "METRICS",
    "REST",
    "ConfidenceInterval",
    "CountsVector",
    "GroupSelection",
    "MeanStats",
    "MetricResult",
    "Verdict",
    "compute_metric",
    "counts_from_decisions",
    "demographic_parity_difference",
    "demographic_parity_from_counts",
    "disparate_impact_from_counts",
    "disparate_impact_ratio",
    "equal_opportunity_difference",
    "equal_opportunity_from_counts",
    "group_counts",
    "katz_ratio_interval",
    "mean_stats",
    "newcombe_interval",
    "normal_quantile",
    "performance_gap",
    "performance_gap_from_stats",
    "score_ratio_interval",
    "select_groups",
    "welch_interval",
    "wilson_interval",
]
