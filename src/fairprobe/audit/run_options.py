"""The options of a fixed-budget model audit: which columns of the pool it reads
(:class:`ModelColumns`) and how it draws, asks and builds its intervals (:class:`QueryRun`).

:class:`ModelColumns` is the one columns object of a model audit: the job
(:func:`~fairprobe.audit.audit_model` and its plans, through
:mod:`fairprobe.audit.model_options`, which re-exports it) reads every field, the library's run
all but the job's ``group_a``, ``group_b`` and ``send_group``.

:func:`~fairprobe.audit.run_audit`, :func:`~fairprobe.audit.run_group_audit` and
:func:`~fairprobe.audit.check_group_audit` take them with the shared
:class:`~fairprobe.options.AuditQuestion` (metrics, band, level, reference, smallest group);
they also take every field as a flat keyword (the compatibility form, their keywords of
always), sorted into the objects by :func:`model_audit_options`. The question checks its values
in ``__post_init__``; the columns and the draw are checked by the function that reads them,
against the pool and naming that function, before any query is paid.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from fairprobe._defaults import DEFAULT_INTERVAL
from fairprobe._validation import check_real
from fairprobe.errors import InvalidParameterError
from fairprobe.options import AuditQuestion, split_flat, with_fields

__all__ = ["DEFAULT_ALLOCATION", "ModelColumns", "QueryRun", "model_audit_options"]

#: The default split of the budget when the pool carries the group column: equal queries per
#: group, the split that minimises the widest group interval (and so the largest-gap or
#: smallest-ratio interval) when nothing is known of the rates before paying.
DEFAULT_ALLOCATION = "balanced"


@dataclass(frozen=True)
class ModelColumns:
    """The columns of a model audit's query pool: one object for the library's run
    (:func:`~fairprobe.audit.run_audit`, :func:`~fairprobe.audit.run_group_audit`,
    :func:`~fairprobe.audit.check_group_audit`) and for the job of ``fairprobe audit``
    (:func:`~fairprobe.audit.audit_model`, :func:`~fairprobe.audit.plan_audit`,
    :func:`~fairprobe.audit.plan_group_audit`).

    Attributes
    ----------
    group : str, sequence of str or None
        The sensitive column(s) (flat keyword ``group_col``, ``group_cols`` of
        :func:`~fairprobe.audit.plan_group_audit`; flag ``--group-col``); several, as
        ``["sex", "race"]`` or ``"sex,race"``, audit their intersections (every-group audits;
        :func:`~fairprobe.audit.run_audit` takes one). Read by every function above. ``None``:
        the job audits ``sex`` on the bundled Adult pool and needs the column with a pool of
        your own; the library functions always need it.
    label : str or None
        The true-label column (``label_col``, ``--y-true-col``/``--label-col``), never sent to
        the model; read by every function above.
    features : str, sequence of str or None
        The columns sent to the model (``feature_cols``, ``--feature-cols``; a string is split
        at commas); default every column but the label and the group
        (:func:`~fairprobe.audit.plan_columns`). Read by every function above.
    pos_label : any
        The positive value of ``label`` when its labels are not 0/1 (``pos_label``,
        ``--pos-label``); read by every function above.
    group_a, group_b : str or None
        The two groups compared, as written on the command line (``group_a``/``group_b``,
        ``--group-a``/``--group-b``; ``rest``: every other value); read by the job
        (:func:`~fairprobe.audit.audit_model` and its plans), which finds them in the pool.
        :func:`~fairprobe.audit.run_audit` takes the pool's values as its own ``group_a`` and
        ``group_b`` parameters, and the library functions refuse these fields.
    send_group : bool
        Send the group column(s) to the model too (``send_group``, ``--send-group``); read by
        the job. The library functions send ``features`` (list the group column there).
    """

    group: str | Sequence[str] | None = None
    label: str | None = None
    features: str | Sequence[str] | None = None
    pos_label: Any = None
    group_a: str | None = None
    group_b: str | None = None
    send_group: bool = False


@dataclass(frozen=True)
class QueryRun:
    """How a model audit draws its queries, asks them and builds its intervals.

    Attributes
    ----------
    budget : int >= 2
        Queries drawn from the pool without replacement (``budget``).
    seed : int >= 0
        Seed of the draw (``seed``).
    allocation : {"uniform", "balanced", "neyman", "adaptive"}
        The split of the budget over the groups (``allocation``; read by
        :func:`~fairprobe.audit.run_group_audit`, see :func:`~fairprobe.audit.run.allocate`;
        :func:`~fairprobe.audit.run_audit` draws over rows).
    interval : {"exact", "score", "newcombe", "katz"}
        The two-group interval (``interval``, read by :func:`~fairprobe.audit.run_audit`).
    method : {"exact", "bonferroni"}
        The simultaneous intervals of every group (``method``, read by
        :func:`~fairprobe.audit.run_group_audit`).
    max_unusable_share : float in [0, 1) or None
        Strict mode: stop once a group's share of unusable answers exceeds this
        (``max_unusable_share``).
    owner : str
        The function named in an error message.
    """

    budget: int = 1000
    seed: int = 0
    allocation: str = DEFAULT_ALLOCATION
    interval: str = DEFAULT_INTERVAL
    method: str = "exact"
    max_unusable_share: float | None = None
    owner: str = field(default="QueryRun", compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.max_unusable_share is not None:
            object.__setattr__(self, "max_unusable_share", check_real(
                self.max_unusable_share, "max_unusable_share", self.owner, lo=0.0, hi=1.0,
                closed="left"))  # fmt: skip


_COLUMNS = {
    "group_col": "group",
    "label_col": "label",
    "feature_cols": "features",
    "pos_label": "pos_label",
}
_QUESTION = ("tolerance", "threshold", "confidence_level", "min_group_size", "reference")
_RUN = ("budget", "seed", "allocation", "interval", "method", "max_unusable_share")

#: The flat keywords of the model audits: the options object and field each one sets
#: (``metric``, run_audit's one metric, and ``metrics`` both set the question's metrics).
MODEL_AUDIT_FLAGS: dict[str, tuple[str, str]] = {
    **{k: ("columns", v) for k, v in _COLUMNS.items()},
    "metric": ("question", "metrics"),
    "metrics": ("question", "metrics"),
    **{k: ("question", k) for k in _QUESTION},
    **{k: ("run", k) for k in _RUN},
}


def model_audit_options(
    owner: str,
    flat: Mapping[str, Any],
    accepted: Sequence[str],
    objects: tuple[AuditQuestion | None, ModelColumns | None, QueryRun | None],
    defaults: Mapping[str, Any] | None = None,
    *,
    caller: str | None = None,
) -> tuple[AuditQuestion, ModelColumns, QueryRun]:
    """The options objects of a call of ``caller`` (default ``owner``, the function the
    objects' error messages name): the objects given (or built from ``defaults``, the
    function's own defaults of its flat keywords) with the flat keywords put in. A keyword not
    in ``accepted`` is a :class:`TypeError` naming ``caller``, as for a normal function; so is
    a call without the group column."""
    caller = caller or owner
    allowed = {k: MODEL_AUDIT_FLAGS[k] for k in accepted}
    question, columns, run = objects
    start = {k: v for k, v in (defaults or {}).items()
             if (allowed[k][0] == "question" and question is None)
             or (allowed[k][0] == "run" and run is None)}  # fmt: skip
    parts = split_flat({**start, **flat}, allowed, caller)
    if columns is None and "group" not in parts.get("columns", {}):
        raise TypeError(f"{caller}() missing 1 required keyword-only argument: 'group_col'")
    for name, obj in (("question", question), ("run", run)):
        if obj is None:
            parts.setdefault(name, {})["owner"] = owner
    c = with_fields(columns, ModelColumns, parts.get("columns"))
    _check_library_columns(c, caller)
    return (
        with_fields(question, AuditQuestion, parts.get("question")),
        c,
        with_fields(run, QueryRun, parts.get("run")),
    )


def _check_library_columns(c: ModelColumns, caller: str) -> None:
    """The library's run reads the group, label, features and positive label of the columns;
    a job-only field set is refused rather than silently not read."""
    if c.group is None:
        raise InvalidParameterError(
            f"{caller} needs the group column: columns.group (group_col) is None; name the "
            "pool's sensitive column(s).")
    pair = "give the pool's values as run_audit's group_a=/group_b=" if caller == "run_audit" \
        else "keep those two groups' rows in the pool"
    for name, fix in (("group_a", pair), ("group_b", pair),
                      ("send_group", "list the group column in columns.features")):
        if getattr(c, name):
            raise InvalidParameterError(
                f"{caller} does not read columns.{name} (the job's --{name.replace('_', '-')}, "
                f"read by audit_model): {fix}, or audit with audit_model.")
