"""``fairprobe monitor``: fairness of prediction logs over time, with an anytime-valid alarm.

Rerun daily on a growing directory: it reads only the files it has not counted (``--state``
keeps the counts), looks at each window once it has closed, and raises an alarm only when the
betting e-process of :mod:`fairprobe.scale.monitor` crosses ``m / alpha`` — so the chance of a
false alarm, over every day it is ever rerun, is at most ``--alpha``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from fairprobe import metrics as _metrics
from fairprobe._defaults import DEFAULT_MIN_GROUP_SIZE
from fairprobe.cli.gate import FailOnOption


def register(app: typer.Typer) -> None:
    app.command("monitor")(monitor)


def monitor(
    predictions: Annotated[str, typer.Option(help="Prediction logs: a Parquet/CSV file, a directory of them, or a glob.")],
    y_pred_col: Annotated[str, typer.Option(help="The column of decisions (0/1, or labels with --pos-label).")],
    group_col: Annotated[str, typer.Option(help="Sensitive column, or several comma-separated (their intersections).")],
    time_col: Annotated[str, typer.Option(help="The timestamp column.")],
    state: Annotated[Path, typer.Option(help="The monitor's saved counts (JSON); created on the first run, then only new files are read.")],
    window: Annotated[str, typer.Option(help="Window width, e.g. 1D, 7D, 30D, 12H.")] = "1D",
    window_origin: Annotated[str | None, typer.Option(help="Where windows start (an ISO time; windows are ORIGIN + k x width). Default: midnight UTC of the first day of the first rows counted; the state keeps it.")] = None,
    y_true_col: Annotated[str | None, typer.Option(help="The column of true labels (eo, fpr, eodds, ppv, accuracy-gap, error-rate).")] = None,
    score_col: Annotated[str | None, typer.Option(help="The column of scores in [0, 1] (score-gap).")] = None,
    metric: Annotated[str, typer.Option(help=f"Comma-separated: {_metrics.help_text('monitor')}.")] = _metrics.DP.short,
    alpha: Annotated[float, typer.Option(help="Probability of any false alarm, over every rerun, in (0, 1).")] = 0.05,
    tolerance: Annotated[float, typer.Option(help="Fair band of differences.")] = 0.05,
    threshold: Annotated[float, typer.Option(help="Floor of ratios (di).")] = 0.8,
    min_group_size: Annotated[int, typer.Option(help="A group with fewer rows in a window bets nothing in that window (and is left out of its findings).")] = DEFAULT_MIN_GROUP_SIZE,
    pos_label: Annotated[str | None, typer.Option(help="Positive value of the label columns when they are not 0/1.")] = None,
    engine: Annotated[str, typer.Option(help="Counting engine: auto, duckdb, pandas or dask.")] = "auto",
    now: Annotated[str | None, typer.Option(help="Windows ending at or before this time are closed and looked at (ISO time; default: the current UTC time).")] = None,
    json_path: Annotated[Path | None, typer.Option("--json", help="Write the audit of every row, the per-window findings and the monitor as JSON.")] = None,
    figure: Annotated[Path | None, typer.Option(help="Write the figure of each metric over the windows and the monitor's wealth (SVG, or PNG by the suffix).")] = None,
    fail_on: FailOnOption = None,
    fail_on_alarm: Annotated[bool, typer.Option("--fail-on-alarm", help="The same as --fail-on unfair (kept for existing jobs).")] = False,
) -> None:
    """Monitor prediction logs: per-window findings and an alarm valid at every look."""
    from fairprobe.audit.monitor import monitor_job
    from fairprobe.cli._common import check_flag_real, check_output_path, console
    from fairprobe.cli.predictions import print_windows

    check_flag_real(alpha, "--alpha", lo=0.0, hi=1.0)
    check_flag_real(tolerance, "--tolerance", lo=0.0, hi=1.0)
    check_flag_real(threshold, "--threshold", lo=0.0, hi=1.0, closed="right")
    check_output_path(json_path, "--json")
    job = monitor_job(predictions, state=state, alpha=alpha, engine=engine, now=now,
                      **_monitor_objects(
                          y_pred_col=y_pred_col, group_col=group_col, y_true_col=y_true_col,
                          score_col=score_col, pos_label=pos_label, time_col=time_col,
                          window=window, window_origin=window_origin, metric=metric,
                          tolerance=tolerance, threshold=threshold,
                          min_group_size=min_group_size))
    ref = job.refresh
    console.print(f"read {len(ref.files_read)} new file(s), {ref.rows_added} row(s); "
                  f"{job.looked_at} window(s) looked at ({len(ref.sealed_now)} new), "
                  f"{len(ref.open_windows)} still open")
    if ref.late_rows:
        console.print(f"{ref.late_rows} row(s) arrived after their window was looked at: in the "
                      "audit, not in the monitor")
    if job.result is None:
        console.print("no rows yet")
        return
    windows = job.extra["windows"]
    print_windows(windows[-7:], console)
    for mon in job.monitors:
        m = mon.metric
        last = mon.log_wealth[-1] if mon.log_wealth else 0.0
        if mon.alarm is not None:
            console.print(f"{m}: ALARM at the window of {mon.alarm[:16]} "
                          f"({' vs '.join(mon.alarm_pair[:2])}, {mon.alarm_pair[2]}): unfair in "
                          f"some window, false-alarm probability <= {alpha}")
        else:
            console.print(f"{m}: no alarm over {len(mon.windows)} window(s) (log wealth "
                          f"{last:.2f}, alarm line {mon.log_threshold:.2f}); not a proof of "
                          "fairness")
    if figure is not None:
        from fairprobe.scale.timeseries import plot_windows

        plot_windows(windows, figure, monitors=job.monitors, title=f"{predictions} by {window}")
        console.print(f"figure: {figure}")
    from fairprobe.cli.gate import FailOn, emit_job

    # the verdict gated on is the report's headline of this document, where an alarm counts
    # as unfair (anytime-valid at --alpha): --fail-on-alarm is --fail-on unfair
    emit_job(json_path, job, fail_on or (FailOn.unfair if fail_on_alarm else None))


def _monitor_objects(
    *, y_pred_col: str, group_col: str, y_true_col: str | None, score_col: str | None,
    pos_label: str | None, time_col: str, window: str, window_origin: str | None, metric: str,
    tolerance: float, threshold: float, min_group_size: int,
) -> dict[str, Any]:
    """The options objects of :func:`~fairprobe.audit.monitor_job` (keys ``columns``,
    ``windows``, ``question``) from the command's flags; the question's messages name the check
    they always met."""
    from fairprobe.audit.model_options import (
        MONITOR_QUESTION_OWNER,
        PredictionColumns,
        TimeWindows,
    )
    from fairprobe.cli._common import split_list
    from fairprobe.cli.audit import _label_value
    from fairprobe.options import AuditQuestion

    label = _label_value(pos_label)  # --pos-label read as every command reads it
    return {
        "columns": PredictionColumns(y_pred_col, split_list(group_col) or [],
                                     y_true_col=y_true_col, score_col=score_col, pos_label=label),
        "windows": TimeWindows(time_col, window, window_origin),
        "question": AuditQuestion(metrics=tuple(split_list(metric) or []), tolerance=tolerance,
                                  threshold=threshold, min_group_size=min_group_size,
                                  owner=MONITOR_QUESTION_OWNER),
    }
