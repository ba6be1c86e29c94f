"""Statistics core: counts vectors, fairness metrics, intervals and verdicts.

Three layers, one result type (:class:`MetricResult`):

* from evidence: :func:`demographic_parity_from_counts`, :func:`equal_opportunity_from_counts`,
  :func:`disparate_impact_from_counts` (on a :class:`CountsVector`), and
  :func:`performance_gap_from_stats` (on a :class:`MeanStats`);
* from raw columns, fairlearn style: :func:`demographic_parity_difference`,
  :func:`equal_opportunity_difference`, :func:`disparate_impact_ratio`,
  :func:`performance_gap`, all thin wrappers over the engine :func:`compute_metric`;
* the vectorised intervals of :mod:`fairprobe.stats.intervals`.

See ``docs/stats.md``.
"""

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
from fairprobe.stats.groups import REST, GroupSelection, select_groups
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

__all__ = [
    "DEFAULT_CONFIDENCE_LEVEL",
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
