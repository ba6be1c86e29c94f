"""``fairprobe audit --predictions FILE``: audit predictions already made (nothing is paid).

The command checks its flags and calls :func:`fairprobe.audit.predictions.predictions_job`, which
hashes the table (the file's SHA-256 enters the provenance and the result's ``backend``) and
audits it through the every-group verdict path; the terminal table, the JSON and the report are those of an audit of a
live model.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fairprobe.cli._common import (
    check_flag_choice,
    check_flag_int,
    check_flag_real,
    check_output_path,
    console,
    split_list,
)

#: Flags that ask a model, meaningless with --predictions.
MODEL_FLAGS = ("--url", "--backend-config", "--queries", "--feature-cols", "--send-group",
               "--prompt-variants", "--name-swap", "--strict")


def predictions_audit(
    *, predictions: str, y_pred_col: str | None, y_true_col: str | None, score_col: str | None,
    sample_weight_col: str | None, group_col: str, metric: str, budget: int | None, seed: int,
    tolerance: float | None, threshold: float | None, confidence_level: float,
    json_path: Path | None, csv_path: Path | None, min_group_size: int,
    reference: str | None, pos_label: Any, method: str, given: dict[str, Any],
    fail_on: Any = None, group_a: str | None = None, group_b: str | None = None,
    engine: str = "auto", scheduler: str | None = None,
    time_col: str | None = None, window: str | None = None, figure: Path | None = None,
    window_origin: str | None = None,
    per_instance: bool = False, max_groups: int = 500,
    control_col: str | None = None, control_bins: int = 4, label_proxy_col: str | None = None,
) -> None:
    """Flags first, then the file, then the audit; one ``error:`` line for any bad input."""
    from fairprobe.errors import InvalidParameterError

    for flag, value in given.items():
        if value:
            raise InvalidParameterError(
                f"{flag} does not apply to --predictions (it audits the decisions in the file): "
                f"drop {flag}; the columns are --y-pred-col, --y-true-col, --score-col, "
                "--group-col.")
    if group_b is not None and group_a is None:
        raise InvalidParameterError("--group-b needs --group-a (the two groups compared).")
    if y_pred_col is None:
        raise InvalidParameterError("--predictions needs --y-pred-col, the column of decisions.")
    from fairprobe.cli.audit import check_group_flags

    names = check_group_flags(metric=metric, min_group_size=min_group_size,
                              tolerance=tolerance, threshold=threshold)
    if budget is not None:
        check_flag_int(budget, "--budget", lo=2)
    check_flag_int(seed, "--seed", lo=0, hi=2**63 - 1)
    check_flag_int(max_groups, "--max-groups", lo=2)
    check_flag_int(control_bins, "--control-bins", lo=2, hi=100)
    if control_col is not None and not split_list(control_col):
        raise InvalidParameterError("--control-col names no column; give e.g. --control-col "
                                    "credit_score.")
    if control_col is not None and (budget is not None or sample_weight_col is not None
                                    or group_a is not None):
        raise InvalidParameterError("--control-col compares every row's groups within strata: "
                                    "drop --budget, --sample-weight-col and --group-a/--group-b.")
    if label_proxy_col is not None and (y_true_col is None or budget is not None
                                        or sample_weight_col is not None or time_col is not None):
        raise InvalidParameterError("--label-proxy-col goes with --y-true-col (filled on the "
                                    "labelled rows only) and every row: drop --budget, "
                                    "--sample-weight-col and --time-col.")
    check_flag_real(confidence_level, "--confidence-level", lo=0.0, hi=1.0)
    check_output_path(json_path, "--json")
    check_output_path(csv_path, "--csv")
    check_output_path(figure, "--figure")
    from fairprobe.scale.engine import ENGINES

    check_flag_choice(engine, "--engine", {e: e for e in ENGINES})
    if scheduler is not None and engine != "dask":
        raise InvalidParameterError("--scheduler is the Dask scheduler: add --engine dask.")
    if (time_col is None) != (window is None):
        raise InvalidParameterError("--time-col and --window go together: give both.")
    if window_origin is not None and window is None:
        raise InvalidParameterError("--window-origin goes with --time-col and --window.")
    if figure is not None and time_col is None:
        raise InvalidParameterError("--figure plots the windows: add --time-col and --window.")
    if budget is not None and (time_col is not None or engine != "auto"):
        raise InvalidParameterError("--budget draws a sample in memory; --time-col/--engine "
                                    "count every row: drop one.")

    from fairprobe.audit.predictions import predictions_job
    from fairprobe.report.groups import print_group_audit

    name, sha256 = None, None
    source: Any = predictions
    if predictions == "-":  # standard input: the bytes read are what is hashed
        import hashlib

        from fairprobe._io import read_stdin_csv

        source, raw = read_stdin_csv("--predictions - (standard input)")
        name, sha256 = "-", hashlib.sha256(raw).hexdigest()
    job = predictions_job(
        source, y_pred_col=y_pred_col, y_true_col=y_true_col, score_col=score_col,
        sample_weight_col=sample_weight_col, group_col=split_list(group_col) or [],
        metrics=names, pos_label=pos_label, budget=budget, seed=seed,
        min_group_size=min_group_size, reference=reference, tolerance=tolerance,
        threshold=threshold, confidence_level=confidence_level, method=method,
        group_a=group_a, group_b=group_b, engine=engine, scheduler=scheduler,
        time_col=time_col, window=window, window_origin=window_origin, per_instance=per_instance,
        name=name, sha256=sha256, control_cols=split_list(control_col) if control_col else None,
        control_bins=control_bins, label_proxy_col=label_proxy_col)
    result = job.result
    _check_group_count(result, group_col, max_groups)
    print_group_audit(result, console)
    if sample_weight_col is not None:
        console.print(f"weighted by {sample_weight_col}: rates are weighted, their intervals "
                      "design-based (Korn-Graubard's Clopper-Pearson at a design effective "
                      "size joined with Hall's skewness-corrected t; asymptotic, none where a "
                      "side weighs under 2 effective instances), summaries bonferroni",
                      soft_wrap=True)
    console.print(f"predictions: {result.queried} of {job.rows} rows of {predictions} "
                  f"({job.files} file(s), sha256 {job.sha256[:12]}...), nothing paid")
    for c in job.extra.get("control", []):
        print_control(c, console)
    if "ppi" in job.extra:
        from fairprobe.report.kinds.audit import ppi_lines

        for line in ppi_lines(job.extra["ppi"]):
            console.print(line, soft_wrap=True, markup=False)
    if time_col is not None:
        print_windows(job.extra["windows"], console)
        if figure is not None:
            from fairprobe.scale.timeseries import plot_windows

            plot_windows(job.extra["windows"], figure, title=f"{predictions} by {window}")
            console.print(f"figure: {figure}")
    if csv_path is not None:
        from fairprobe.report.tables import group_table, write_csv

        write_csv(csv_path, group_table(result))
    from fairprobe.cli.audit import emit_job_or_fail

    emit_job_or_fail(json_path, job, fail_on)  # writes --json, then gates


def _check_group_count(result: Any, group_col: str, max_groups: int) -> None:
    """Refuse a group column with more distinct values than ``--max-groups``: such a column is
    most often continuous (an age, an amount), each value its own group of a row or two, and
    no comparison between such groups means anything."""
    from fairprobe.errors import DataError

    n = int(result.groups.n_groups)
    if n <= max_groups:
        return
    sizes = result.to_frame()["n"]
    raise DataError(
        f"--group-col {group_col} has {n:,} distinct values (median group size "
        f"{float(sizes.median()):g} rows): a continuous column? Bin it into a few groups first, "
        f"or give --max-groups {n} to audit every value as its own group.")


def print_control(c: dict[str, Any], out: Any) -> None:
    """The within-strata comparison: the strata table, the bins, and the two findings side by
    side (each through :func:`fairprobe.report.verdict.finding_text`), then the share
    explained."""
    from rich.table import Table

    from fairprobe.report.kinds.audit import control_lines, control_rows

    table = Table(title=f"{c['rate'].replace('_', ' ')} within strata of "
                        f"{', '.join(c['controls'])}", title_justify="left", box=None,
                  pad_edge=False, padding=(0, 1))
    header, rows = control_rows(c)
    for h in header:
        table.add_column(h, overflow="fold")
    for r in rows:
        table.add_row(*r)
    out.print(table)
    for line in control_lines(c):
        out.print(line, soft_wrap=True, markup=False)


def print_windows(windows: list[dict[str, Any]], out: Any) -> None:
    """One line per window and metric: the worst gap, its interval and verdict."""
    from rich.table import Table

    from fairprobe.stats.frame import FAIRNESS_ALIASES

    short: dict[str, str] = {}
    for alias, full in FAIRNESS_ALIASES.items():
        short.setdefault(full, alias)
    table = Table(title="per window (each interval at the level for its own window)",
                  title_justify="left", box=None, pad_edge=False, padding=(0, 1))
    # numbers keep their width; only the pair is cut with an ellipsis when the terminal is
    # narrow, never broken inside a number or a label (the JSON keeps every value whole)
    widths = {"window": 10, "rows": 6, "metric": 6, "estimate": 8, "interval": 14,
              "verdict": 12}
    for c in ("window", "rows", "metric", "estimate", "interval", "verdict", "pair"):
        table.add_column(c, no_wrap=True, overflow="ellipsis", min_width=widths.get(c))
    for w in windows:
        for m, f in w["findings"].items():
            est = "-" if f["estimate"] is None else f"{f['estimate']:.4f}"
            iv = "-" if f["low"] is None else f"[{f['low']:.3f}, {f['high']:.3f}]"
            table.add_row(w["start"][:10], str(w["n"]), short.get(m, m), est, iv,
                          f["verdict"], " vs ".join(f["pair"]))
        for m, why in w.get("not_summarised", {}).items():
            table.add_row(w["start"][:10], str(w["n"]), short.get(m, m), "-", "-",
                          f"not summarised: {why[:60]}", "-")
    out.print(table)


def profile_audit(
    *, profile: str | None, predictions: str | None, group_col: str, y_pred_col: str | None,
    score_col: str | None, reference: str | None, pos_label: Any, exclude_small: bool,
    threshold: float | None, smd_threshold: float, confidence_level: float, interval: str,
    json_path: Path | None, csv_path: Path | None, data_source: str | None,
    audit_dates: str | None, distribution_date: str | None, fail_on: Any = None,
    model: dict[str, Any] | None = None,
) -> None:
    """``audit --predictions FILE --profile NAME`` (or a model: ``--url``/``--backend-config``
    with ``--queries``): the rule's tables, JSON and CSV."""
    from fairprobe.errors import InvalidParameterError
    from fairprobe.profiles.job import PROFILES

    if profile is None:
        raise InvalidParameterError("--exclude-small, --data-source, --audit-dates and "
                                    "--distribution-date go with --profile: add it.")
    check_flag_choice(profile, "--profile", {p: p for p in PROFILES})
    from fairprobe.cli._common import check_file_or_model

    check_file_or_model("--profile", predictions, model, y_pred_col,
                        "with the --group-col columns")
    if model is not None and score_col not in (None, "model"):
        raise InvalidParameterError("with a model, --score-col model uses its scores (the "
                                    f"scoring rate, the SMD); got --score-col {score_col}.")
    if interval not in ("exact", "score"):
        raise InvalidParameterError("--profile takes --interval exact or score.")
    check_flag_real(confidence_level, "--confidence-level", lo=0.0, hi=1.0)
    if threshold is not None:
        check_flag_real(threshold, "--threshold", lo=0.0, hi=1.0, closed="right")
    check_flag_real(smd_threshold, "--smd-threshold", lo=0.0, hi=10.0)
    check_output_path(json_path, "--json")
    check_output_path(csv_path, "--csv")
    from fairprobe.profiles.job import profile_job
    from fairprobe.report.kinds.profile import TITLES, profile_frame, profile_tables

    common: dict[str, Any] = dict(
        profile=profile, group_cols=split_list(group_col) or [], reference=reference,
        exclude_small=exclude_small, air_threshold=0.8 if threshold is None else threshold,
        smd_threshold=smd_threshold, confidence_level=confidence_level, interval=interval,
        data_source=data_source, audit_dates=audit_dates, distribution_date=distribution_date)
    if model is not None:
        from fairprobe.cli._common import build_backend
        from fairprobe.profiles.job import profile_model_job

        job = profile_model_job(
            build_backend(model["url"], model["backend_config"], model["path"]),
            model["queries"], budget=model["budget"],
            seed=model["seed"], cache=model["cache"],
            feature_cols=split_list(model["feature_cols"]), send_group=model["send_group"],
            label_col=model["label_col"], model_scores=score_col == "model", **common)
    else:
        job = profile_job(predictions, y_pred_col=y_pred_col, score_col=score_col,
                          pos_label=pos_label, **common)
    doc = job.to_dict()
    from rich.table import Table

    console.print(f"{TITLES[profile]}: {doc['applicants']} individuals, {doc['unknown']} of "
                  "unknown category left out", soft_wrap=True)
    for t in profile_tables(doc):
        table = Table(title=t.caption, title_justify="left", box=None, pad_edge=False,
                      padding=(0, 1))
        for h in t.header:
            table.add_column(h, overflow="fold")
        for r in t.rows:
            table.add_row(*r)
        console.print(table)
    console.print(f"{'[fairprobe]'} columns are fairprobe's additions (the rule asks for the "
                  f"point values): {interval} intervals at {confidence_level:g}; "
                  f"verdict {job.verdict}.", soft_wrap=True, markup=False)
    if csv_path is not None:
        from fairprobe.report.tables import write_csv

        write_csv(csv_path, profile_frame(doc))
    from fairprobe.cli.gate import emit_job

    emit_job(json_path, job, fail_on)
