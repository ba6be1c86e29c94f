"""Subgroup discovery with false-discovery-rate control: where is the model unfair?

:func:`discover_subgroups` searches the conjunctions of up to ``depth`` feature conditions and
reports the subgroups whose rate is proven to differ from the rest's by more than the tolerance,
so that the expected share of false discoveries among them is at most the FDR level under any
dependence between overlapping subgroups. See ``docs/discover.md``.
"""

from fairprobe.discover.fdr import FDR_METHODS, box_pvalues, step_up
from fairprobe.discover.search import (
    METRICS,
    Condition,
    DiscoveryResult,
    Subgroup,
    discover_subgroups,
)

__all__ = [
    "FDR_METHODS",
    "METRICS",
    "Condition",
    "DiscoveryResult",
    "Subgroup",
    "box_pvalues",
    "discover_subgroups",
    "step_up",
]
