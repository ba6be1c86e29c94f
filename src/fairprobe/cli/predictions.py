"""``fairprobe audit --predictions FILE``: audit predictions already made (nothing is paid).

The table is read once, hashed (the file's SHA-256 enters the provenance and the result's
``backend``), and audited by :func:`fairprobe.predictions.audit_predictions` through the
every-group verdict path; the terminal table, the JSON and the report are those of an audit of a
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
    read_table,
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
    per_instance: bool = False,
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
    from fairprobe.stats.frame import FAIRNESS_ALIASES, FAIRNESS_METRICS

    choices = {"di": "disparate_impact_ratio", "dp": "demographic_parity_difference",
               **FAIRNESS_ALIASES, **{m: m for m in FAIRNESS_METRICS}}
    names = list(dict.fromkeys(check_flag_choice(m, "--metric", choices)
                               for m in (split_list(metric) or [])))
    if not names:
        raise InvalidParameterError("--metric names no metric; give e.g. --metric dp,eo.")
    if budget is not None:
        check_flag_int(budget, "--budget", lo=2)
    check_flag_int(seed, "--seed", lo=0, hi=2**63 - 1)
    check_flag_int(min_group_size, "--min-group-size", lo=1)
    check_flag_real(confidence_level, "--confidence-level", lo=0.0, hi=1.0)
    if tolerance is not None:
        check_flag_real(tolerance, "--tolerance", lo=0.0, hi=1.0)
    if threshold is not None:
        check_flag_real(threshold, "--threshold", lo=0.0, hi=1.0, closed="right")
    check_output_path(json_path, "--json")
    check_output_path(csv_path, "--csv")
    check_output_path(figure, "--figure")
    from fairprobe.scale.engine import ENGINES

    check_flag_choice(engine, "--engine", {e: e for e in ENGINES})
    if scheduler is not None and engine != "dask":
        raise InvalidParameterError("--scheduler is the Dask scheduler: add --engine dask.")
    if (time_col is None) != (window is None):
        raise InvalidParameterError("--time-col and --window go together: give both.")
    if figure is not None and time_col is None:
        raise InvalidParameterError("--figure plots the windows: add --time-col and --window.")
    if budget is not None and (time_col is not None or engine != "auto"):
        raise InvalidParameterError("--budget draws a sample in memory; --time-col/--engine "
                                    "count every row: drop one.")

    import pandas as pd

    from fairprobe.access.local import file_sha256
    from fairprobe.predictions import audit_predictions, predictions_identity
    from fairprobe.provenance import Provenance, pool_digest, redact_text
    from fairprobe.report.groups import print_group_audit
    from fairprobe.scale.engine import engine_name, list_files

    files: list[Path] = []
    source: Any = predictions
    if predictions == "-":  # standard input: the bytes read are what is hashed
        import hashlib

        from fairprobe._io import read_stdin_csv

        source, raw = read_stdin_csv("--predictions - (standard input)")
        sha = hashlib.sha256(raw).hexdigest()
    else:
        files = list_files(predictions)
        sha = file_sha256(files[0]) if len(files) == 1 else files_sha256(files)
        if budget is not None:  # a sample of rows, drawn in memory
            source = read_table(predictions) if len(files) == 1 else None
    cols = split_list(group_col) or []
    if group_a is not None:  # two groups of one column: their rows, in memory
        if not isinstance(source, pd.DataFrame):
            from fairprobe.scale.engine import _to_pandas, resolve_source

            source = _to_pandas(resolve_source(predictions))
        source = _two_groups(source, cols, group_a, group_b)
    result = audit_predictions(
        source if source is not None else predictions, y_pred_col=y_pred_col,
        y_true_col=y_true_col, score_col=score_col, sample_weight_col=sample_weight_col,
        group_col=cols, metrics=names, pos_label=pos_label, budget=budget, seed=seed,
        min_group_size=min_group_size, reference=reference, tolerance=tolerance,
        threshold=threshold, confidence_level=confidence_level, method=method,
        backend=predictions_identity(Path(predictions).name, sha), engine=engine,
        scheduler=scheduler, time_col=time_col, window=window)
    used = [c for c in (y_pred_col, y_true_col, score_col, sample_weight_col, time_col, *cols)
            if c is not None]
    pool = (pool_digest(source, predictions) if isinstance(source, pd.DataFrame) else
            {"sha256": sha, "rows": result.queried, "columns": used,
             "source": redact_text(predictions), "files": len(files)})
    prov = Provenance.capture(
        seed=seed,
        query_pool={**pool, "file_sha256": sha},
        backend={"kind": "predictions", "identity": result.backend, "file": predictions,
                 "file_sha256": sha},
        extra={"columns": {"y_pred": y_pred_col, "y_true": y_true_col, "score": score_col,
                           "sample_weight": sample_weight_col, "groups": cols, "used": used,
                           "time": time_col},
               "engine": engine_name(engine) if budget is None else "pandas (sample)"},
    )
    print_group_audit(result, console)
    if sample_weight_col is not None:
        console.print(f"weighted by {sample_weight_col}: rates are weighted, their intervals "
                      "Korn-Graubard's Clopper-Pearson at a design effective size (capped by "
                      "Kish's; asymptotic, none where a side weighs under 5 effective "
                      "instances), summaries bonferroni", soft_wrap=True)
    total = result.queried if source is None or not isinstance(source, pd.DataFrame) \
        else len(source)
    console.print(f"predictions: {result.queried} of {total} rows of {predictions} "
                  f"({len(files)} file(s), sha256 {sha[:12]}...), nothing paid")
    body: dict[str, Any] = result.to_dict(per_instance=per_instance and result.counts is None)
    if per_instance and result.counts is not None:  # counted: the rows are read back in order
        from fairprobe.predictions import per_instance_records, prediction_spec

        body["per_instance"] = per_instance_records(
            source if isinstance(source, pd.DataFrame) else predictions,
            prediction_spec(y_pred_col=y_pred_col, group_col=cols, y_true_col=y_true_col,
                            pos_label=pos_label), engine)
    if time_col is not None:
        from fairprobe.scale.timeseries import plot_windows, window_findings

        body["windows"] = window_findings(
            result.counts, result.metrics, min_group_size=min_group_size,
            confidence_level=confidence_level, method=result.method, reference=reference,
            tolerance=result.tolerance, threshold=result.threshold)
        print_windows(body["windows"], console)
        if figure is not None:
            plot_windows(body["windows"], figure, title=f"{predictions} by {window}")
            console.print(f"figure: {figure}")
    if csv_path is not None:
        from fairprobe.report.tables import group_table, write_csv

        write_csv(csv_path, group_table(result))
    from fairprobe.cli.audit import emit_or_fail

    emit_or_fail(json_path, result, prov, fail_on, body=body)  # writes --json, then gates


def _two_groups(df: Any, cols: list[str], group_a: str, group_b: str | None) -> Any:
    """The rows of ``--group-a`` and ``--group-b`` (``rest`` or none: every other row, relabelled
    ``rest``), so that the every-group audit compares exactly these two groups."""
    from fairprobe.auditing import REST_WORDS, _group_value
    from fairprobe.errors import InvalidParameterError

    if len(cols) != 1:
        raise InvalidParameterError("--group-a/--group-b compare two values of one --group-col; "
                                    "drop them to audit every intersection.")
    col = cols[0]
    if col not in df.columns:
        return df  # the audit names the missing column
    a = _group_value(df, col, group_a, "--group-a")
    if group_b is None or group_b.strip().lower() in REST_WORDS:
        out = df.copy()
        out[col] = out[col].where(out[col] == a, "rest")
        return out
    b = _group_value(df, col, group_b, "--group-b")
    if a == b:
        raise InvalidParameterError("--group-a and --group-b name the same group; give two.")
    return df[df[col].isin([a, b])].reset_index(drop=True)


def files_sha256(files: list[Path]) -> str:
    """One SHA-256 over several files: of each file's name and SHA-256, in path order."""
    import hashlib

    from fairprobe.access.local import file_sha256

    h = hashlib.sha256()
    for f in files:
        h.update(f"{f.name}\x1f{file_sha256(f)}\n".encode())
    return h.hexdigest()


def print_windows(windows: list[dict[str, Any]], out: Any) -> None:
    """One line per window and metric: the worst gap, its interval and verdict."""
    from rich.table import Table

    from fairprobe.stats.frame import FAIRNESS_ALIASES

    short: dict[str, str] = {}
    for alias, full in FAIRNESS_ALIASES.items():
        short.setdefault(full, alias)
    table = Table(title="per window (each interval at the level for its own window)")
    for c in ("window", "rows", "metric", "estimate", "interval", "pair", "verdict"):
        table.add_column(c)
    for w in windows:
        for m, f in w["findings"].items():
            est = "-" if f["estimate"] is None else f"{f['estimate']:.4f}"
            iv = "-" if f["low"] is None else f"[{f['low']:.4f}, {f['high']:.4f}]"
            table.add_row(w["start"][:16], str(w["n"]), short.get(m, m), est, iv,
                          " vs ".join(f["pair"]), f["verdict"])
        for m, why in w.get("not_summarised", {}).items():
            table.add_row(w["start"][:16], str(w["n"]), short.get(m, m), "-", "-", "-",
                          f"not summarised: {why[:60]}")
    out.print(table)
