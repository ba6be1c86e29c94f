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

from fairprobe._defaults import DEFAULT_MIN_GROUP_SIZE


def register(app: typer.Typer) -> None:
    app.command("monitor")(monitor)


def monitor(
    predictions: Annotated[str, typer.Option(help="Prediction logs: a Parquet/CSV file, a directory of them, or a glob.")],
    y_pred_col: Annotated[str, typer.Option(help="The column of decisions (0/1, or labels with --pos-label).")],
    group_col: Annotated[str, typer.Option(help="Sensitive column, or several comma-separated (their intersections).")],
    time_col: Annotated[str, typer.Option(help="The timestamp column.")],
    state: Annotated[Path, typer.Option(help="The monitor's saved counts (JSON); created on the first run, then only new files are read.")],
    window: Annotated[str, typer.Option(help="Window width, e.g. 1D, 7D, 30D, 12H.")] = "1D",
    y_true_col: Annotated[str | None, typer.Option(help="The column of true labels (eo, fpr, eodds, ppv, accuracy-gap, error-rate).")] = None,
    score_col: Annotated[str | None, typer.Option(help="The column of scores in [0, 1] (score-gap).")] = None,
    metric: Annotated[str, typer.Option(help="Comma-separated: dp, di, eo, fpr, eodds, ppv, accuracy-gap, error-rate, score-gap.")] = "dp",
    alpha: Annotated[float, typer.Option(help="Probability of any false alarm, over every rerun, in (0, 1).")] = 0.05,
    tolerance: Annotated[float, typer.Option(help="Fair band of differences.")] = 0.05,
    threshold: Annotated[float, typer.Option(help="Floor of ratios (di).")] = 0.8,
    min_group_size: Annotated[int, typer.Option(help="A group with fewer rows in a window bets nothing in that window (and is left out of its findings).")] = DEFAULT_MIN_GROUP_SIZE,
    pos_label: Annotated[str | None, typer.Option(help="Positive value of the label columns when they are not 0/1.")] = None,
    engine: Annotated[str, typer.Option(help="Counting engine: auto, duckdb, pandas or dask.")] = "auto",
    now: Annotated[str | None, typer.Option(help="Windows ending at or before this time are closed and looked at (ISO time; default: the current UTC time).")] = None,
    json_path: Annotated[Path | None, typer.Option("--json", help="Write the audit of every row, the per-window findings and the monitor as JSON.")] = None,
    figure: Annotated[Path | None, typer.Option(help="Write the figure of each metric over the windows and the monitor's wealth (SVG, or PNG by the suffix).")] = None,
    fail_on_alarm: Annotated[bool, typer.Option("--fail-on-alarm", help="Exit with the unfair gate code when the monitor alarms.")] = False,
) -> None:
    """Monitor prediction logs: per-window findings and an alarm valid at every look."""
    import pandas as pd

    from fairprobe.cli._common import check_flag_real, console, split_list
    from fairprobe.cli.predictions import print_windows
    from fairprobe.errors import InvalidParameterError
    from fairprobe.predictions import prediction_spec
    from fairprobe.scale.engine import ENGINES
    from fairprobe.scale.monitor import MONITOR_METRICS, monitor_counts
    from fairprobe.scale.state import MonitorState
    from fairprobe.scale.timeseries import plot_windows, window_findings
    from fairprobe.stats.frame import fairness_metric_name

    check_flag_real(alpha, "--alpha", lo=0.0, hi=1.0)
    check_flag_real(tolerance, "--tolerance", lo=0.0, hi=1.0)
    check_flag_real(threshold, "--threshold", lo=0.0, hi=1.0, closed="right")
    if engine not in ENGINES:
        raise InvalidParameterError(f"--engine must be one of {', '.join(ENGINES)}.")
    names = list(dict.fromkeys(fairness_metric_name(m, "--metric")
                               for m in (split_list(metric) or [])))
    if not names:
        raise InvalidParameterError("--metric names no metric; give e.g. --metric dp,eo.")
    for m in names:
        if m not in MONITOR_METRICS:
            raise InvalidParameterError(f"--metric {m} has no monitor.")
    label = None if pos_label is None else (int(pos_label) if pos_label.lstrip("-").isdigit()
                                            else pos_label)
    spec = prediction_spec(y_pred_col=y_pred_col, group_col=split_list(group_col) or [],
                           y_true_col=y_true_col, score_col=score_col, pos_label=label,
                           time_col=time_col, window=window)
    try:
        t_now = pd.Timestamp.now("UTC").tz_localize(None) if now is None else pd.Timestamp(now)
    except ValueError:
        raise InvalidParameterError(f"--now {now!r} is not an ISO time.") from None
    st = MonitorState.load_or_new(state, spec)
    ref = st.refresh(predictions, now=t_now, engine=engine)
    st.save(state)
    console.print(f"read {len(ref.files_read)} new file(s), {ref.rows_added} row(s); "
                  f"{len(st.order)} window(s) looked at ({len(ref.sealed_now)} new), "
                  f"{len(ref.open_windows)} still open")
    if ref.late_rows:
        console.print(f"{ref.late_rows} row(s) arrived after their window was looked at: in the "
                      "audit, not in the monitor")
    if st.counts is None:
        console.print("no rows yet")
        return
    options = {"min_group_size": min_group_size, "tolerance": tolerance,
               "threshold": threshold}
    windows = window_findings(st.counts, names, **options)
    print_windows(windows[-7:], console)
    monitors = []
    for m in names:
        mon = (monitor_counts(st.sealed, m, alpha=alpha, tolerance=tolerance,
                              threshold=threshold, min_group_size=min_group_size,
                              order=st.order) if st.sealed is not None else None)
        if mon is None:
            continue
        monitors.append(mon)
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
        plot_windows(windows, figure, monitors=monitors, title=f"{predictions} by {window}")
        console.print(f"figure: {figure}")
    if json_path is not None:
        _write(json_path, st, names, windows, monitors, ref, options, predictions)
    if fail_on_alarm and any(m.alarm is not None for m in monitors):
        from fairprobe.cli.gate import GATE_EXIT

        typer.echo("monitor alarm: exit (--fail-on-alarm)", err=True)
        raise typer.Exit(GATE_EXIT["unfair"])


def _write(json_path: Path, st: Any, names: list[str], windows: list[dict[str, Any]],
           monitors: list[Any], ref: Any, options: dict[str, Any], predictions: str) -> None:
    """An audit document of every row counted, with the windows and the monitor."""
    from fairprobe.audit import GroupAudit
    from fairprobe.provenance import Provenance
    from fairprobe.report.jsonio import result_document, write_json
    from fairprobe.scale.state import MonitorState

    assert isinstance(st, MonitorState) and st.counts is not None
    total = st.counts.total()
    n = total.n_rows
    audit = GroupAudit.from_counts(
        total, accounting={"metrics": names, "budget": n, "queried": n, "paid": 0, "cached": 0,
                           "unparsed": 0, "seed": 0, "backend": f"predictions:{predictions}",
                           "group_cols": list(st.spec.group_cols), "unparsed_by_group": {}},
        **options)
    body = audit.to_dict(per_instance=False)
    body["windows"] = windows
    body["monitor"] = {m.metric: m.to_dict() for m in monitors}
    body["refresh"] = ref.to_dict()
    # the pooled audit can be fair while some window is not: an alarm (valid at level alpha
    # over every look) is the document's verdict, so a report or gate never shows it as fair
    body["pooled_verdict"] = body["verdict"]
    if any(m.alarm is not None for m in monitors):
        body["verdict"] = "unfair"
        body["verdict_source"] = "monitor alarm (anytime-valid, false-alarm probability <= alpha)"
    prov = Provenance.capture(seed=0, backend={"kind": "predictions", "file": predictions},
                              extra={"spec": st.spec.to_dict(), "files": len(st.counts.sources)})
    write_json(json_path, result_document("audit", body, prov))
