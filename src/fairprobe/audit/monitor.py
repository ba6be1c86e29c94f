"""Monitoring prediction logs as one call: what ``fairprobe monitor`` does.

Rerun on a growing directory, :func:`monitor_job` reads only the files its saved state has not
counted, looks at each window once it has closed, runs the betting e-process of
:mod:`fairprobe.scale.monitor` per metric, saves the state, and returns the audit of every row
counted with the windows and the monitors: the document ``fairprobe monitor --json`` writes.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from fairprobe import metrics as _metrics
from fairprobe._defaults import DEFAULT_MIN_GROUP_SIZE
from fairprobe.documents import Job

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
    y_pred_col: str,
    group_col: str | Sequence[str],
    time_col: str,
    state: str | os.PathLike[str],
    window: str = "1D",
    window_origin: str | None = None,
    y_true_col: str | None = None,
    score_col: str | None = None,
    metrics: Sequence[str] = (_metrics.DP.short,),
    alpha: float = 0.05,
    tolerance: float = 0.05,
    threshold: float = 0.8,
    min_group_size: int = DEFAULT_MIN_GROUP_SIZE,
    pos_label: Any = None,
    engine: str = "auto",
    now: Any = None,
) -> MonitorJob:
    """Refresh the monitor of ``predictions`` (new files only), look at the closed windows,
    save ``state`` and return the audit of every row with the windows and the monitors.

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
    import pandas as pd

    from fairprobe._validation import split_names
    from fairprobe.audit.predictions import prediction_spec
    from fairprobe.audit.run import GroupAudit
    from fairprobe.errors import InvalidParameterError
    from fairprobe.provenance import Provenance
    from fairprobe.scale.engine import ENGINES
    from fairprobe.scale.monitor import MONITOR_METRICS, monitor_counts
    from fairprobe.scale.state import MonitorState
    from fairprobe.scale.timeseries import window_findings
    from fairprobe.stats.frame import fairness_metric_name

    if engine not in ENGINES:
        raise InvalidParameterError(f"--engine must be one of {', '.join(ENGINES)}.")
    names = list(dict.fromkeys(fairness_metric_name(m, "--metric") for m in metrics))
    if not names:
        raise InvalidParameterError("--metric names no metric; give e.g. --metric dp,eo.")
    for m in names:
        if m not in MONITOR_METRICS:
            _metrics.resolve(m, path="monitor")  # the error names the paths that can
            raise InvalidParameterError(f"--metric {m} has no monitor.")
    cols = (split_names(group_col) or []) if isinstance(group_col, str) else list(group_col)
    spec = prediction_spec(y_pred_col=y_pred_col, group_col=cols, y_true_col=y_true_col,
                           score_col=score_col, pos_label=pos_label, time_col=time_col,
                           window=window, window_origin=window_origin)
    try:
        t_now = pd.Timestamp.now("UTC").tz_localize(None) if now is None else pd.Timestamp(now)
    except ValueError:
        raise InvalidParameterError(f"--now {now!r} is not an ISO time.") from None
    if t_now.tzinfo is not None:  # windows are in UTC (zoned log times are converted too)
        t_now = t_now.tz_convert("UTC").tz_localize(None)
    st = MonitorState.load_or_new(state, spec)
    ref = st.refresh(predictions, now=t_now, engine=engine)
    st.save(state)
    prov = Provenance.capture(seed=0, backend={"kind": "predictions", "file": str(predictions)},
                              extra={"spec": st.spec.to_dict(),
                                     "files": 0 if st.counts is None else len(st.counts.sources)})
    if st.counts is None:
        return MonitorJob("audit", None, prov, refresh=ref, looked_at=len(st.order), alpha=alpha)
    options = {"min_group_size": min_group_size, "tolerance": tolerance, "threshold": threshold}
    windows = window_findings(st.counts, names, **options)
    monitors = [mon for mon in (
        monitor_counts(st.sealed, m, alpha=alpha, tolerance=tolerance, threshold=threshold,
                       min_group_size=min_group_size, order=st.order)
        if st.sealed is not None else None for m in names) if mon is not None]
    n = st.counts.total().n_rows
    audit = GroupAudit.from_counts(
        st.counts.total(),
        accounting={"metrics": names, "budget": n, "queried": n, "paid": 0, "cached": 0,
                    "unparsed": 0, "seed": 0, "backend": f"predictions:{predictions}",
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
