"""Statistics core: counts vectors, fairness metrics, intervals and verdicts."""

from fairprobe.stats.counts import CountsVector, counts_from_decisions

__all__ = ["CountsVector", "counts_from_decisions"]
