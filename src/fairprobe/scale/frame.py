"""An :class:`~fairprobe.stats.frame.AuditFrame` from counts, without the rows.

The frame's constructor reduces its rows to per-group sums (``np.bincount``) and computes every
rate, interval and summary from those sums only. Here the same sums come from a
:class:`~fairprobe.scale.counts.GroupCounts`: integer cells for the unweighted rates (so the
``exact`` simultaneous intervals apply unchanged), the weighted rates from the per-cell sums
of weights, squared and cubed weights through the constructor's own
:func:`fairprobe.stats.dropin.weighted_counts`, means and variances from the sums of scores and
squared scores. ``tests/scale/test_engine.py`` checks the findings equal the in-memory frame's.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fairprobe._validation import check_choice, check_int, check_real
from fairprobe.errors import DataError
from fairprobe.metrics import label_rate_counts
from fairprobe.scale.counts import WEIGHT_SUMS, GroupCounts

__all__ = ["FRAME_OPTIONS", "frame_from_counts"]

#: The constructor options that apply to a frame of counts.
FRAME_OPTIONS = ("min_group_size", "confidence_level", "group_interval", "method", "reference",
                 "tolerance", "threshold", "max_groups", "max_listed_pairs", "weighted_interval")


def frame_from_counts(cls: Any, counts: GroupCounts, **options: Any) -> Any:
    """An instance of ``cls`` (``AuditFrame`` or a subclass) built from ``counts``.

    Every attribute the constructor sets is set here from the sums; the attribute set is
    pinned against the constructor's by a test, so a new attribute there cannot be missed here.
    """
    from fairprobe.stats import dropin
    from fairprobe.stats.frame import check_group_limits
    from fairprobe.stats.frame_options import FrameOptions
    from fairprobe.stats.groups import GroupLabels
    from fairprobe.stats.simultaneous import SIMULTANEOUS_METHODS

    if not isinstance(counts, GroupCounts):
        raise DataError(f"from_counts takes GroupCounts, not {type(counts).__name__}.")
    unknown = sorted(set(options) - set(FRAME_OPTIONS))
    if unknown:
        raise DataError(f"from_counts does not take {unknown[0]!r}; options: "
                        f"{', '.join(FRAME_OPTIONS)}.")
    opt = {k: options.get(k, getattr(FrameOptions, k)) for k in FRAME_OPTIONS}
    owner = "AuditFrame.from_counts"
    spec = counts.spec
    weighted = spec.weight is not None
    method = opt["method"]
    if method is None:
        method = "bonferroni" if weighted else "exact"
    elif method == "exact" and weighted:
        raise DataError("method='exact' enumerates integer counts; weighted rates take "
                        "method='bonferroni' (the default with sample_weight).")
    if weighted and spec.score is not None:
        raise DataError("scores with sample_weight are not supported yet: drop one.")
    tab = counts.total().table
    if len(tab) < 2:
        shown = ", ".join(str(v) for v in tab[list(spec.group_cols)].iloc[0]) if len(tab) else ""
        raise DataError(f"sensitive_features holds a single group ({shown!r}): an audit needs "
                        "instances of at least two groups." if len(tab) else
                        "the counts hold no row: an audit needs instances of two groups.")
    obj = cls.__new__(cls)
    obj.confidence_level = check_real(opt["confidence_level"], "confidence_level", owner,
                                      lo=0.0, hi=1.0, closed="neither")
    obj.group_interval = check_choice(opt["group_interval"], "group_interval", owner,
                                      ("wilson", "exact"))
    obj.method = check_choice(method, "method", owner, SIMULTANEOUS_METHODS)
    obj.weighted_interval = check_choice(opt["weighted_interval"], "weighted_interval", owner,
                                         dropin.WEIGHTED_INTERVALS)
    obj.tolerance = check_real(opt["tolerance"], "tolerance", owner, lo=0.0)
    obj.threshold = check_real(opt["threshold"], "threshold", owner, lo=0.0, hi=1.0,
                               closed="right")
    obj.control_names = ()
    # what the constructor keeps for resampling and scikit-learn's zero_division rule: a frame
    # of counts has no rows to resample (the bootstrap methods refuse it), and undefined rates
    # follow the default rule
    obj.zero_division = "warn"
    obj._init_args = {k: opt[k] for k in ("confidence_level", "group_interval", "method",
                                          "tolerance", "threshold", "min_group_size")}
    obj._init_args["method"] = method
    obj._init_args["pos_label"] = spec.pos_label
    obj._inputs = {"y_pred": None, "y_true": None, "scores": None, "sample_weight": None}
    obj._boot_args = {"metrics": None, "sensitive_features": None, "control_features": None}
    obj._ci_quantiles = None
    obj._replicates = []
    size = tab["n"].to_numpy(dtype=np.int64)
    keys = tuple(tuple(v.item() if isinstance(v, np.generic) else v for v in row)
                 for row in tab[list(spec.group_cols)].itertuples(index=False, name=None))
    # no per-row group codes: the frame holds no rows (callable metrics and per-instance
    # output need rows and are refused on a frame of counts)
    obj.groups = GroupLabels(codes=np.zeros(0, dtype=np.int64), keys=keys,
                             names=spec.group_cols, sizes=size,
                             min_group_size=check_int(opt["min_group_size"], "min_group_size",
                                                      owner, lo=1))
    obj.max_groups, obj.max_listed_pairs = check_group_limits(
        len(keys), opt["max_groups"], opt["max_listed_pairs"], owner)
    obj.reference = None if opt["reference"] is None else obj.groups.position(opt["reference"])
    obj._n_rows = int(size.sum())
    obj._counts = {}
    obj._means = obj._rest_means = None
    npos = tab["sp"].to_numpy(dtype=np.int64)
    if weighted:
        # an empty weight array marks the frame weighted for the code that asks
        # ``sample_weight is not None``; no code indexes it without rows
        obj.sample_weight = np.zeros(0)
        col = {c: tab[c].to_numpy(dtype=np.float64) for c in tab.columns
               if c.startswith(WEIGHT_SUMS)}
        if spec.y_true is None:
            sp = tab["sp"].to_numpy(dtype=np.int64)
            rows = {"1": sp, "0": size - sp}
        else:  # the integer cells by inclusion-exclusion, y_pred first
            sp, st, stp = (tab[c].to_numpy(dtype=np.int64) for c in ("sp", "st", "stp"))
            rows = {"11": stp, "10": sp - stp, "01": st - stp, "00": size - sp - st + stp}
        # the constructor's computation, from the same per-cell sums
        obj._set_weighted(dropin.weighted_rates(col, rows, spec.y_true is not None,
                                                obj.weighted_interval, obj.confidence_level))
    else:
        obj.sample_weight = None
        obj._counts["selection_rate"] = (npos, size)
        if spec.y_true is not None:
            tp = tab["stp"].to_numpy(dtype=np.int64)
            ntrue = tab["st"].to_numpy(dtype=np.int64)
            obj._counts.update(label_rate_counts(
                {"11": tp, "10": npos - tp, "01": ntrue - tp, "00": size - npos - ntrue + tp}))
    if spec.score is not None:
        s1 = tab["s1"].to_numpy(dtype=np.float64)
        s2 = tab["s2"].to_numpy(dtype=np.float64)
        obj._set_score_moments(s1, s2, size, float(s1.sum()), float(s2.sum()))
    obj._columns = None
    obj._custom = {}
    obj._custom_fn = {}
    obj._raw = (None, np.zeros(0))
    return obj
