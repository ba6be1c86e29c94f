"""The options objects of a model audit, a predictions audit and the monitor: the columns each
reads, the way a model audit is run, and the time windows of a log.

:func:`~fairprobe.audit.audit_model`, :func:`~fairprobe.audit.audit_predictions` and
:func:`~fairprobe.audit.monitor_job` take these (with the shared
:class:`~fairprobe.options.AccessOptions`, :class:`~fairprobe.options.DataSource` and
:class:`~fairprobe.options.AuditQuestion`) or their fields as flat keywords, the compatibility
form. A model audit's columns are :class:`~fairprobe.audit.run_options.ModelColumns`, the one
object the library's run reads too (defined with the run, re-exported here).
:func:`audit_model_options`, :func:`prediction_options` and :func:`monitor_options` sort
the keywords into the objects, an unknown one being a :class:`TypeError`. The objects hold the
values as given: each is checked where it is used, with the message that names its flag.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from numbers import Integral
from typing import Any

from fairprobe import metrics as _metrics
from fairprobe._validation import split_names
from fairprobe.audit.run_options import ModelColumns
from fairprobe.options import AccessOptions, AuditQuestion, DataSource, split_flat, with_fields

__all__ = [
    "ModelAuditOptions",
    "ModelColumns",
    "PredictionColumns",
    "TimeWindows",
    "audit_model_options",
    "monitor_options",
    "prediction_options",
]

#: The owner named in the question's messages: the check every path shared before the options
#: objects (``run_group_audit``'s), so a bad value reads as it always has.
QUESTION_OWNER = "run_group_audit"
#: The owner named in the monitor's question messages: the check a bad value always met.
MONITOR_QUESTION_OWNER = "AuditFrame.from_counts"


@dataclass(frozen=True)
class ModelAuditOptions:
    """How a model audit is run: its form, interval, allocation, strictness, name swap, and
    the endpoint whose declared inputs the plan reads.

    Attributes
    ----------
    every_group : bool, optional
        ``True``: every group; ``False``: two groups; ``None``: two groups when ``group_a`` /
        ``group_b`` are given or for the ``sex`` column with one two-group metric.
    interval : {"exact", "score", "newcombe", "katz"}
        The interval construction (``--interval``; ``katz``: two-group DI only; an every-group
        audit's ``score`` is the ``bonferroni`` simultaneous construction).
    allocation : {"balanced", "uniform", "neyman", "adaptive"}
        How an every-group audit splits its budget across the groups (``--allocation``).
    max_unusable_share : float in [0, 1), optional
        Strict mode: stop once a group's share of unusable answers exceeds it.
    refresh, concurrency : bool, int
        Ask again what the cache holds (``--refresh``); requests in flight (``--concurrency``).
    name_swap : str, optional
        Two-group form: the field holding a first name, asked again swapped to the other sex.
    run_name_swap : bool
        ``False``: the records carry the names but are not asked again swapped.
    url, path : str
        The endpoint (``--url``, ``--path``) whose declared inputs the plan reads.
    """

    every_group: bool | None = None
    interval: str = "exact"
    allocation: str = "balanced"
    max_unusable_share: float | None = None
    refresh: bool = False
    concurrency: int = 4
    name_swap: str | None = None
    run_name_swap: bool = True
    url: str | None = None
    path: str = "/audit/predict"


@dataclass(frozen=True)
class PredictionColumns:
    """The columns of a table of predictions (a predictions audit, the monitor's logs).

    Attributes
    ----------
    y_pred_col : str
        The decisions (``--y-pred-col``): 0/1, booleans, or labels with ``pos_label``.
    group_col : str or sequence of str
        Sensitive column(s) (``--group-col``); several audit their intersections.
    y_true_col, score_col, sample_weight_col : str, optional
        True labels, scores in [0, 1] and instance weights (``--y-true-col``, ``--score-col``,
        ``--sample-weight-col``).
    pos_label : scalar, optional
        The positive value of the decisions and labels when they hold labels (``--pos-label``).
    """

    y_pred_col: str
    group_col: str | Sequence[str]
    y_true_col: str | None = None
    score_col: str | None = None
    sample_weight_col: str | None = None
    pos_label: Any = None

    def spec(self, windows: TimeWindows | None = None) -> Any:
        """The :class:`~fairprobe.scale.CountSpec` counting these columns (per window too)."""
        from fairprobe.audit.run import _group_columns
        from fairprobe.scale import CountSpec

        w = windows or TimeWindows()
        return CountSpec(group_cols=tuple(_group_columns(self.group_col)), y_pred=self.y_pred_col,
                         y_true=self.y_true_col, score=self.score_col,
                         weight=self.sample_weight_col, pos_label=self.pos_label,
                         time_col=w.time_col, window=w.window, window_origin=w.window_origin)


@dataclass(frozen=True)
class TimeWindows:
    """Counting per time window: the timestamp column (``--time-col``), the width
    (``--window``, e.g. ``"1D"``) and where windows start (``--window-origin``, an ISO time;
    default midnight UTC of the data's first day)."""

    time_col: str | None = None
    window: str | None = None
    window_origin: str | None = None


#: The flat keywords of a model audit's columns -> the field of :class:`ModelColumns` each sets.
_COLUMNS = {"group_col": "group", "group_a": "group_a", "group_b": "group_b", "label_col": "label",
            "feature_cols": "features", "send_group": "send_group", "pos_label": "pos_label"}
_QUESTION = ("tolerance", "threshold", "confidence_level", "reference", "min_group_size")
_ACCESS = ("budget", "seed", "cache", "retries", "timeout", "progress")
_RUN = ("every_group", "interval", "allocation", "max_unusable_share", "refresh", "concurrency",
        "name_swap", "run_name_swap", "url", "path")  # fmt: skip
_PREDICTION_COLUMNS = ("y_pred_col", "group_col", "y_true_col", "score_col",
                       "sample_weight_col", "pos_label")  # fmt: skip
_WINDOWS = ("time_col", "window", "window_origin")


def _targets(**groups: Sequence[str]) -> dict[str, tuple[str, str]]:
    return {name: (obj, name) for obj, names in groups.items() for name in names}


#: ``audit_model``'s flat keywords: the options object and field each one sets.
MODEL_FLAGS = {**_targets(question=_QUESTION, access=_ACCESS, options=_RUN),
               **{k: ("columns", v) for k, v in _COLUMNS.items()},
               "queries": ("source", "table"), "metric": ("question", "metrics")}
#: ``plan_audit``'s flat keywords (its metric is a parameter of its own).
PLAN_FLAGS = {k: MODEL_FLAGS[k] for k in (*_COLUMNS, "queries", "budget", "seed", "url", "path",
                                          "name_swap")}
#: ``plan_group_audit``'s flat keywords (its interval ``method`` is a parameter of its own).
GROUP_PLAN_FLAGS = {**{k: MODEL_FLAGS[k] for k in (
    "group_a", "group_b", "label_col", "feature_cols", "send_group", "tolerance", "threshold",
    "confidence_level", "min_group_size", "queries", "budget", "seed", "url", "path",
    "allocation")},
                    "group_cols": ("columns", "group"), "metrics": ("question", "metrics")}
#: ``audit_predictions``'s flat keywords.
PREDICTION_FLAGS = _targets(columns=_PREDICTION_COLUMNS, question=(*_QUESTION, "metrics"),
                            windows=_WINDOWS)
#: ``monitor_job``'s flat keywords.
MONITOR_FLAGS = _targets(columns=("y_pred_col", "group_col", "y_true_col", "score_col",
                                  "pos_label"),
                         question=("metrics", "tolerance", "threshold", "min_group_size"),
                         windows=_WINDOWS)


def _objects(parts: Mapping[str, dict[str, Any]], given: Mapping[str, tuple[Any, type]]
             ) -> dict[str, Any]:  # fmt: skip
    """Each object given with the flat keywords put in (or built from them alone)."""
    return {name: with_fields(obj, cls, parts.get(name)) for name, (obj, cls) in given.items()}


def _require(obj: Any, values: Mapping[str, Any], names: Sequence[str], owner: str) -> None:
    """A required keyword missing (no object gives it) is the TypeError a function raises."""
    if obj is None:
        for name in names:
            if name not in values:
                raise TypeError(f"{owner}() missing 1 required keyword-only argument: {name!r}")


def audit_model_options(flags: Mapping[str, Any], *, targets: Mapping[str, tuple[str, str]],
                        source: DataSource | None = None,
                        access: AccessOptions | None = None,
                        question: AuditQuestion | None = None,
                        columns: ModelColumns | None = None,
                        options: ModelAuditOptions | None = None,
                        owner: str = "audit_model") -> dict[str, Any]:
    """The options objects of :func:`~fairprobe.audit.audit_model` and its plans (keys
    ``source``, ``access``, ``question``, ``columns``, ``options``): those given, with ``flags``
    (the flat keywords ``targets`` accepts: :data:`MODEL_FLAGS`, :data:`PLAN_FLAGS`,
    :data:`GROUP_PLAN_FLAGS`) put in. A ``metric`` string is split at commas (``"dp,eo"``);
    without a question or a ``metric`` the question asks ``di``."""
    parts = split_flat(flags, targets, owner)
    acc = parts.get("access", {})
    for key in ("seed", "retries"):  # a numpy integer is an integer, as the checks it replaces
        if isinstance(acc.get(key), Integral) and not isinstance(acc[key], bool):
            acc[key] = int(acc[key])
    q = parts.setdefault("question", {})
    if "metrics" in q:
        m = q["metrics"]
        q["metrics"] = tuple(split_names(m) or ()) if isinstance(m, str) else tuple(m)
    elif question is None:
        q["metrics"] = (_metrics.DI.short,)
    if question is None:
        q["owner"] = QUESTION_OWNER
    return _objects(parts, {
        "source": (source, DataSource), "access": (access, AccessOptions),
        "question": (question, AuditQuestion), "columns": (columns, ModelColumns),
        "options": (options, ModelAuditOptions)})  # fmt: skip


def prediction_options(flags: Mapping[str, Any], *, columns: PredictionColumns | None = None,
                       question: AuditQuestion | None = None,
                       windows: TimeWindows | None = None,
                       owner: str = "audit_predictions") -> dict[str, Any]:
    """The options objects of :func:`~fairprobe.audit.audit_predictions` (keys ``columns``,
    ``question``, ``windows``) from those given and its flat keywords
    (:data:`PREDICTION_FLAGS`); without a question or ``metrics`` it asks ``dp``."""
    parts = split_flat(flags, PREDICTION_FLAGS, owner)
    _require(columns, parts.get("columns", {}), ("y_pred_col", "group_col"), owner)
    q = parts.setdefault("question", {})
    if question is None:
        q.setdefault("metrics", (_metrics.DP.short,))
        q["owner"] = QUESTION_OWNER
    return _objects(parts, {"columns": (columns, PredictionColumns),
                            "question": (question, AuditQuestion),
                            "windows": (windows, TimeWindows)})  # fmt: skip


def monitor_options(flags: Mapping[str, Any], *, columns: PredictionColumns | None = None,
                    question: AuditQuestion | None = None,
                    windows: TimeWindows | None = None) -> dict[str, Any]:
    """The options objects of :func:`~fairprobe.audit.monitor_job` from those given and its
    flat keywords (:data:`MONITOR_FLAGS`): windows of ``"1D"`` and a question of ``dp`` with
    the band 0.05 and the floor 0.8 unless told otherwise."""
    owner = "monitor_job"
    parts = split_flat(flags, MONITOR_FLAGS, owner)
    _require(columns, parts.get("columns", {}), ("y_pred_col", "group_col"), owner)
    _require(windows, parts.get("windows", {}), ("time_col",), owner)
    if windows is None:
        parts.setdefault("windows", {}).setdefault("window", "1D")
    if question is None:
        q = parts.setdefault("question", {})
        for key, value in (("metrics", (_metrics.DP.short,)), ("tolerance", 0.05),
                           ("threshold", 0.8)):
            q.setdefault(key, value)
        q["owner"] = MONITOR_QUESTION_OWNER
    return _objects(parts, {"columns": (columns, PredictionColumns),
                            "question": (question, AuditQuestion),
                            "windows": (windows, TimeWindows)})  # fmt: skip
