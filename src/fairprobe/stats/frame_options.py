"""The options of an :class:`~fairprobe.stats.frame.AuditFrame`: how it judges the groups of
its rows (:class:`FrameOptions`).

The frame takes its data (decisions, labels, groups, scores, weights, metrics) as keywords and
its options either as one object or as flat keywords of the same names (the compatibility form,
MetricFrame's and the frame's keywords of always), sorted into the object by
:func:`frame_options`. The checks that need no data run in ``__post_init__``; the ones that
depend on the rows (the interval method of weighted rates, the groups, the reference) run in
the constructor.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from fairprobe._flat import with_fields
from fairprobe._validation import check_choice, check_real
from fairprobe.errors import DataError
from fairprobe.stats.groups import DEFAULT_MIN_GROUP_SIZE

__all__ = ["GROUP_INTERVALS", "MAX_LISTED_PAIRS", "FrameOptions", "frame_options"]

#: Per-group intervals (``group_interval``): Wilson score or Clopper-Pearson.
GROUP_INTERVALS = ("wilson", "exact")

#: Pairs a summary lists (``GroupSummary.pairs``) at most: k groups have k(k-1)/2 pairs, so a
#: full listing of 2,000 groups would be two million entries. 100 lists every pair of up to 14
#: groups (a pair per rate of equalized odds up to 10).
MAX_LISTED_PAIRS = 100

_OWNER = "AuditFrame"


@dataclass(frozen=True)
class FrameOptions:
    """How an :class:`~fairprobe.stats.frame.AuditFrame` judges its groups; each field is the
    frame's keyword of the same name (see the frame for the full meaning).

    Attributes
    ----------
    pos_label : scalar, optional
        The positive label of ``y_true`` and ``y_pred`` when they are not 0/1.
    min_group_size : int >= 1
        Groups below this size are listed, not compared (default 1: every group compared).
    confidence_level : float in (0, 1)
        Level of the per-group intervals and family-wise level of the summaries.
    group_interval : {"wilson", "exact"}
        Per-group interval.
    method : {"exact", "bonferroni"} or None
        Simultaneous construction of the summaries; ``None``: ``"exact"``, or ``"bonferroni"``
        with weights.
    reference : group, optional
        Reference group of the ``vs_reference`` comparisons.
    tolerance, threshold : float
        Fair band of differences (>= 0, default 0.05) and floor of ratios (in (0, 1], 0.8).
    weighted_interval : {"design", "korn-graubard", "kish-wilson"}
        Interval of a weighted rate.
    zero_division : "warn", 0.0, 1.0 or nan
        Value of a rate whose denominator is 0 (scikit-learn's rule).
    max_groups : int, optional
        Most groups compared (default ``$FAIRPROBE_MAX_GROUPS``, else 2,000).
    max_listed_pairs : int
        Most pairs a summary lists.
    n_boot, seed : int
        Bootstrap resamples of callable metrics (or fairlearn's with ``ci_quantiles``) and
        their seed (``random_state`` in the flat form).
    ci_quantiles : list of float, optional
        fairlearn's bootstrap quantiles.
    """

    pos_label: Any = None
    min_group_size: int = DEFAULT_MIN_GROUP_SIZE
    confidence_level: float = 0.95
    group_interval: str = "wilson"
    method: str | None = None
    reference: Any = None
    tolerance: float = 0.05
    threshold: float = 0.8
    weighted_interval: str = "design"
    zero_division: Any = "warn"
    max_groups: int | None = None
    max_listed_pairs: int = MAX_LISTED_PAIRS
    n_boot: int = 200
    seed: int = 0
    ci_quantiles: Any = None

    def __post_init__(self) -> None:
        from fairprobe.stats import dropin
        from fairprobe.stats.simultaneous import SIMULTANEOUS_METHODS

        zd = self.zero_division
        if isinstance(zd, str):
            check_choice(zd, "zero_division", _OWNER, ("warn",))
        elif not (isinstance(zd, int | float) and (math.isnan(zd) or zd in (0, 1))):
            raise DataError(
                f"zero_division must be 'warn', 0.0, 1.0 or nan (scikit-learn's "
                f"choices); got {zd!r}."
            )
        set_ = object.__setattr__
        set_(self, "confidence_level", check_real(
            self.confidence_level, "confidence_level", _OWNER, lo=0.0, hi=1.0, closed="neither"))  # fmt: skip
        check_choice(self.group_interval, "group_interval", _OWNER, GROUP_INTERVALS)
        check_choice(self.weighted_interval, "weighted_interval", _OWNER, dropin.WEIGHTED_INTERVALS)
        if self.method is not None:
            check_choice(self.method, "method", _OWNER, SIMULTANEOUS_METHODS)
        set_(self, "tolerance", check_real(self.tolerance, "tolerance", _OWNER, lo=0.0))
        set_(self, "threshold", check_real(
            self.threshold, "threshold", _OWNER, lo=0.0, hi=1.0, closed="right"))  # fmt: skip


_FIELDS = frozenset(f.name for f in fields(FrameOptions))


def frame_options(options: FrameOptions | None, flat: Mapping[str, Any]) -> FrameOptions:
    """``options`` (or the defaults) with the flat keywords of the compatibility form put in;
    ``random_state`` (MetricFrame's name) sets ``seed`` unless it is ``None``. An unknown
    keyword is a :class:`TypeError`, as for a normal function."""
    values = dict(flat)
    random_state = values.pop("random_state", None)
    if random_state is not None:
        values["seed"] = random_state
    unknown = sorted(set(values) - _FIELDS)
    if unknown:
        raise TypeError(f"AuditFrame.__init__() got an unexpected keyword argument {unknown[0]!r}")
    return with_fields(options, FrameOptions, values)
