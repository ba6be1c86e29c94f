"""Monitoring prediction logs as one call: what ``fairprobe monitor`` does.

Rerun on a growing directory, :func:`monitor_job` reads only the files its saved state has not
counted, looks at each window once it has closed, runs the betting e-process of
:mod:`fairprobe.scale.monitor` per metric, saves the state, and returns the audit of every row
counted with the windows and the monitors: the document ``fairprobe monitor --json`` writes.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from fairprobe import metrics as _metrics
from fairprobe._validation import split_names
from fairprobe.audit.model_options import PredictionColumns, TimeWindows, monitor_options
from fairprobe.documents import Job
from fairprobe.errors import InvalidParameterError
from fairprobe.options import AuditQuestion

__all__ = ["MonitorJob", "monitor_job"]


@dataclass(frozen=True)
class MonitorJob(Job):
    """A monitor run: :class:`~fairprobe.documents.Job` with the refresh, the monitors and the
    number of windows looked at, for the command's lines.

    ``result`` is the :class:`~fairprobe.audit.GroupAudit` of every row counted so far, or
    ``None`` when no row has been read yet (then there is no document: :meth:`to_dict` raises).
    """

    refresh: Any = None
    monitors: list[Any] = field(default_factory=list)
    looked_at: int = 0
    alpha: float = 0.05

    @property
    def alarm(self) -> bool:
        """Whether any metric's monitor alarmed (valid at level ``alpha`` over every look)."""
        return any(m.alarm is not None for m in self.monitors)

    def result_dict(self) -> Any:
        from fairprobe.errors import DataError

        if self.result is None:
            raise DataError("The monitor has read no rows yet: there is no audit to write.")
        return self.result.to_dict(per_instance=False)


def monitor_job(
    predictions: str | os.PathLike[str],
    *,
    state: str | os.PathLike[str],
    columns: PredictionColumns | None = None,
    windows: TimeWindows | None = None,
    question: AuditQuestion | None = None,
    alpha: float = 0.05,
    engine: str = "auto",
    now: Any = None,
    **flags: Any,
) -> MonitorJob:
    """Refresh the monitor of ``predictions`` (new files only), look at the closed windows,
    save ``state`` and return the audit of every row with the windows and the monitors.

    The options objects say what to monitor: ``columns`` the logs' columns (``y_pred_col``,
    ``group_col``, ``y_true_col``, ``score_col``, ``pos_label``), ``windows`` the timestamp
    column, the width and the origin (all its fields), ``question`` the metrics, the band
    ``tolerance`` and the floor ``threshold`` (``None``: 0.05 and 0.8) and ``min_group_size``.
    ``flags`` are their fields as flat keywords (the compatibility form,
    :func:`~fairprobe.audit.model_options.monitor_options`, with ``window="1D"``,
    ``metrics=("dp",)``, ``tolerance=0.05``, ``threshold=0.8``): ``y_pred_col``,
    ``group_col`` and ``time_col`` are required unless their object is given.

    ``metrics`` are full names or aliases (``dp``, ``eo``, ...) with a monitor
    (:data:`fairprobe.scale.monitor.MONITOR_METRICS`). ``now`` (a time; default the current
    UTC time) closes the windows that end at or before it. An alarm (the e-process crossing
    ``m / alpha``) makes the document's verdict ``unfair`` (its ``pooled_verdict`` keeps the
    audit of every row's own); the chance of any false alarm, over every rerun, is at most
    ``alpha``.

    Returns
    -------
    MonitorJob
        ``kind="audit"``; ``.result`` is ``None`` when no row has been read yet.
    """
    from fairprobe.provenance import Provenance
    from fairprobe.scale.engine import ENGINES
    from fairprobe.scale.state import MonitorState

    o = monitor_options(flags, columns=columns, windows=windows, question=question)
    c, q = o["columns"], o["question"]
    if engine not in ENGINES:
        raise InvalidParameterError(f"--engine must be one of {', '.join(ENGINES)}.")
    names = _monitor_metrics(q.metrics)
    cols = (split_names(c.group_col) or []) if isinstance(c.group_col, str) else list(c.group_col)
    spec = replace(c, group_col=cols, sample_weight_col=None).spec(o["windows"])
    t_now = _utc_time(now)
    st = MonitorState.load_or_new(state, spec)
    ref = st.refresh(predictions, now=t_now, engine=engine)
    st.save(state)
    prov = Provenance.capture(seed=0, backend={"kind": "predictions", "file": str(predictions)},
                              extra={"spec": st.spec.to_dict(),
                                     "files": 0 if st.counts is None else len(st.counts.sources)})
    if st.counts is None:
        return MonitorJob("audit", None, prov, refresh=ref, looked_at=len(st.order), alpha=alpha)
    return _monitored(st, names, q, alpha, prov, ref, f"predictions:{predictions}")


def _monitor_metrics(metrics: Sequence[str]) -> list[str]:
    """The metrics' full names, each one with a monitor (else one error line naming it)."""
    from fairprobe.scale.monitor import MONITOR_METRICS
    from fairprobe.stats.frame import fairness_metric_name

    names = list(dict.fromkeys(fairness_metric_name(m, "--metric") for m in metrics))
    if not names:
        raise InvalidParameterError("--metric names no metric; give e.g. --metric dp,eo.")
    for m in names:
        if m not in MONITOR_METRICS:
            _metrics.resolve(m, path="monitor")  # the error names the paths that can
            raise InvalidParameterError(f"--metric {m} has no monitor.")
    return names


def _utc_time(now: Any) -> Any:
    """``--now`` (default: the current time) as a naive UTC timestamp, the windows' clock."""
    import pandas as pd

    try:
        t_now = pd.Timestamp.now("UTC").tz_localize(None) if now is None else pd.Timestamp(now)
    except ValueError:
        raise InvalidParameterError(f"--now {now!r} is not an ISO time.") from None
    if t_now.tzinfo is not None:  # windows are in UTC (zoned log times are converted too)
        t_now = t_now.tz_convert("UTC").tz_localize(None)
    return t_now


def _monitored(st: Any, names: list[str], q: AuditQuestion, alpha: float, prov: Any, ref: Any,
               backend: str) -> MonitorJob:  # fmt: skip
    """The audit of every row counted, the windows' findings and the metrics' monitors."""
    from fairprobe.audit.run import GroupAudit
    from fairprobe.scale.monitor import monitor_counts
    from fairprobe.scale.timeseries import window_findings

    tolerance = 0.05 if q.tolerance is None else q.tolerance
    threshold = 0.8 if q.threshold is None else q.threshold
    options = {"min_group_size": q.min_group_size, "tolerance": tolerance, "threshold": threshold}
    windows = window_findings(st.counts, names, **options)
    monitors = [mon for mon in (
        monitor_counts(st.sealed, m, alpha=alpha, tolerance=tolerance, threshold=threshold,
                       min_group_size=q.min_group_size, order=st.order)
        if st.sealed is not None else None for m in names) if mon is not None]
    n = st.counts.total().n_rows
    audit = GroupAudit.from_counts(
        st.counts.total(),
        accounting={"metrics": names, "budget": n, "queried": n, "paid": 0, "cached": 0,
                    "unparsed": 0, "seed": 0, "backend": backend,
                    "group_cols": list(st.spec.group_cols), "unparsed_by_group": {}},
        **options)
    verdict = audit.verdict
    extra: dict[str, Any] = {"windows": windows,
                             "monitor": {m.metric: m.to_dict() for m in monitors},
                             "refresh": ref.to_dict(), "pooled_verdict": verdict}
    # the pooled audit can be fair while some window is not: an alarm (valid at level alpha
    # over every look) is the document's verdict, so a report or gate never shows it as fair
    if any(m.alarm is not None for m in monitors):
        extra["verdict"] = "unfair"
        extra["verdict_source"] = "monitor alarm (anytime-valid, false-alarm probability <= alpha)"
    return MonitorJob("audit", audit, prov, extra, refresh=ref, monitors=monitors,
                      looked_at=len(st.order), alpha=alpha)
