"""``fairprobe audit``: a fixed-budget black-box audit of every group (or intersection) with
several metrics, or of one metric between two groups.

Every flag is checked before the first backend call (:func:`check_audit_flags` and
:func:`plan_audit`), so a typo never costs a paid query; the messages name the flag. The result
JSON carries the provenance block (:mod:`fairprobe.provenance`).
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from fairprobe import metrics as _metrics
from fairprobe._defaults import DEFAULT_MIN_GROUP_SIZE
from fairprobe._text import term
from fairprobe.audit.job import (
    DEFAULT_CACHE,
    DEFAULT_GROUPS,
    METRIC_CHOICES,
    _two_group_metric,
    plan_audit,
    plan_group_audit,  # noqa: F401  (re-exported: the every-group plan)
)
from fairprobe.cli._common import (
    answer_columns,
    build_backend,
    check_flag_choice,
    check_flag_int,
    check_flag_real,
    check_output_path,
    console,
    split_list,
)
from fairprobe.cli.gate import FailOn, FailOnOption, emit_job

#: Upper bounds of the access flags (what one machine and a sane retry policy can do).
MAX_CONCURRENCY = 256
MAX_RETRIES = 100
MAX_TIMEOUT = 86_400.0


class Simultaneous(StrEnum):
    """Constructions of the simultaneous intervals (``fairprobe.stats.simultaneous``)."""

    exact = "exact"
    bonferroni = "bonferroni"


class Allocation(StrEnum):
    """``--allocation``: how an every-group audit splits its budget across the groups."""

    balanced = "balanced"
    uniform = "uniform"
    neyman = "neyman"
    adaptive = "adaptive"


class Interval(StrEnum):
    """``--interval``: the interval construction (coverage of each in ``docs/stats.md``)."""

    exact = "exact"
    score = "score"
    newcombe = "newcombe"
    katz = "katz"


def check_audit_flags(
    *,
    metric: str,
    budget: int | str | None,
    seed: int,
    tolerance: float | None,
    threshold: float | None,
    **access: Any,
) -> str:
    """Check every flag that needs no data; return the metric's full name. ``access`` holds the
    flags every audit form shares (:func:`check_access_flags`)."""
    from fairprobe.errors import InvalidParameterError

    name = check_flag_choice(metric, "--metric", METRIC_CHOICES)
    if isinstance(budget, int):
        check_flag_int(budget, "--budget", lo=2, hint=" (at least one query per group)")
    if name == _metrics.DI.name:
        if tolerance is not None:
            raise InvalidParameterError(
                "--tolerance applies to difference metrics (dp, eo, accuracy-gap); the ratio "
                "di is judged with --threshold."
            )
        if threshold is not None:
            check_flag_real(threshold, "--threshold", lo=0.0, hi=1.0, closed="right")
    else:
        if threshold is not None:
            raise InvalidParameterError(
                "--threshold applies to the ratio di; difference metrics are judged with "
                "--tolerance."
            )
        if tolerance is not None:
            check_flag_real(tolerance, "--tolerance", lo=0.0, hi=1.0)
    check_access_flags(seed=seed, **access)
    return name


def check_access_flags(
    *,
    seed: int,
    confidence_level: float,
    concurrency: int,
    retries: int,
    timeout: float | None,
    no_cache: bool,
    refresh: bool,
    json_path: Path | None,
    cache: Path,
) -> None:
    """The flags every audit form shares: seed, level, access, cache and output paths."""
    from fairprobe.errors import InvalidParameterError

    check_flag_int(seed, "--seed", lo=0, hi=2**63 - 1)
    hint = f" (a share: {confidence_level / 100:g} for {confidence_level:g}%)" if (
        1.0 < confidence_level < 100.0) else ""
    check_flag_real(confidence_level, "--confidence-level", lo=0.0, hi=1.0, hint=hint)
    check_flag_int(concurrency, "--concurrency", lo=1, hi=MAX_CONCURRENCY)
    check_flag_int(retries, "--retries", lo=0, hi=MAX_RETRIES)
    if timeout is not None:
        check_flag_real(timeout, "--timeout", lo=0.0, hi=MAX_TIMEOUT, closed="right")
    if no_cache and refresh:
        raise InvalidParameterError("--no-cache and --refresh exclude each other; give one.")
    check_output_path(json_path, "--json")
    if not no_cache:
        check_output_path(cache, "--cache")


def audit(
    url: Annotated[str | None, typer.Option(help="Base URL of an HTTP JSON model (platform shape).")] = None,
    backend_config: Annotated[str | None, typer.Option(help="Backend config file (TOML/JSON).")] = None,
    path: Annotated[str, typer.Option(help="Endpoint path used with --url.")] = "/audit/predict",
    queries: Annotated[str | None, typer.Option(help="Query pool (CSV/Parquet); default: bundled Adult test split.")] = None,
    group_col: Annotated[str | None, typer.Option(help="Sensitive column, or several comma-separated (sex,race: their intersections); required with --queries or --predictions (default sex only on the bundled Adult pool). Any column but sex, several columns or several metrics: every group is audited (by-group table, worst pair with simultaneous intervals).", show_default=False)] = None,
    group_a: Annotated[str | None, typer.Option(help="Two-group audit: group A value (the numerator of DI); default Female for --group-col sex.")] = None,
    group_b: Annotated[str | None, typer.Option(help="Two-group audit: group B value; 'rest' (or omit with --group-a) for every other value.")] = None,
    all_groups: Annotated[bool, typer.Option(help="Audit every group of --group-col even for sex (default there: Female vs Male).")] = False,
    label_col: Annotated[str | None, typer.Option("--y-true-col", "--label-col", help="True-label column (never sent; needed by eo, fpr, eodds, ppv, accuracy-gap, error-rate); --label-col is the same flag.")] = None,
    feature_cols: Annotated[str | None, typer.Option(help="Comma-separated columns sent to the model (default: all but the label and the sensitive column).")] = None,
    send_group: Annotated[bool, typer.Option(help="Also send the sensitive column to the model.")] = False,
    metric: Annotated[str, typer.Option(help=f"Comma-separated, case-insensitive, any of: {_metrics.help_text()}. Two-group audits take one; score-gap needs --predictions with --score-col.")] = _metrics.DI.short,
    budget: Annotated[str | None, typer.Option(help="Queries drawn from the pool: a number, or 'all' for every row. \\[default: 2000, or the whole pool if smaller; with --predictions: all]", show_default=False)] = None,
    seed: Annotated[int, typer.Option(help="Seed of the query draw.")] = 0,
    allocation: Annotated[Allocation, typer.Option(case_sensitive=False, help="Every-group audit: how the budget is split across the groups: balanced (equal queries per group, a smaller group taken whole and the rest spread over the others; each rate is estimated within its group) uniform (drawn over rows, so a group gets its share of the pool), neyman (a fifth split equally, then the rest by Neyman's split of the first metric's rate, each group at least half its equal share) or adaptive (up to 5 batches, each to the groups whose intervals still straddle the band edge, stopping once decided; the intervals hold under the stopping by a union bound over the batches).")] = Allocation.balanced,
    tolerance: Annotated[float | None, typer.Option(help="Fair band half-width of differences, in (0, 1).")] = None,
    threshold: Annotated[float | None, typer.Option(help="Minimum ratio of DI (80% rule), in (0, 1].")] = None,
    confidence_level: Annotated[float, typer.Option(help="Confidence level of the interval, in (0, 1).")] = 0.95,
    cache: Annotated[Path, typer.Option(help="Persistent answer cache (SQLite).")] = DEFAULT_CACHE,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Neither read nor write the answer cache.")] = False,
    refresh: Annotated[bool, typer.Option("--refresh", help="Ask the model again and overwrite cached answers.")] = False,
    concurrency: Annotated[int, typer.Option(help="Batches in flight.")] = 4,
    retries: Annotated[int, typer.Option(help="Retries of a failed batch.")] = 5,
    timeout: Annotated[float | None, typer.Option(help="Per-request timeout (s).")] = None,
    progress: Annotated[bool, typer.Option(help="Show a progress bar.")] = True,
    json_path: Annotated[Path | None, typer.Option("--json", help="Write the result as JSON.")] = None,
    max_groups: Annotated[int, typer.Option(help="--predictions: refuse a --group-col with more distinct values than this (a continuous column such as an age or an amount makes one group per value): bin the column, or raise the limit.")] = 500,
    min_group_size: Annotated[int, typer.Option(help="Groups (or a rate's denominator, e.g. y_true=1 answers for TPR) below this are listed and left out of the summaries; a two-group audit on such a group is undetermined. 1 compares every group (fairlearn).")] = DEFAULT_MIN_GROUP_SIZE,
    reference: Annotated[str | None, typer.Option(help="Every-group audit: also compare every group with this one (intersections: 'Male, White').")] = None,
    pos_label: Annotated[str | None, typer.Option(help="Positive value of --label-col (and of --y-pred-col with --predictions) when the labels are not 0/1, e.g. '>50K'.")] = None,
    interval: Annotated[Interval, typer.Option(case_sensitive=False, help="Interval construction: exact (default: coverage >= the level at every rate and size, by construction), score / newcombe (narrower, asymptotic: dips below the level near rates 0 and 1; every-group audits: Bonferroni-adjusted) or katz (two-group DI only). Coverage of each: docs/stats.md.")] = Interval.exact,
    simultaneous: Annotated[Simultaneous | None, typer.Option(case_sensitive=False, hidden=True, help="Deprecated: --interval exact / --interval score.")] = None,
    fail_on: FailOnOption = None,
    strict: Annotated[bool, typer.Option(help="Stop when a group's share of unusable answers (unparsed, refused, truncated) exceeds --max-unusable.")] = False,
    max_unusable: Annotated[float, typer.Option(help="Threshold of --strict (share in [0, 1)).")] = 0.05,
    prompt_variants: Annotated[Path | None, typer.Option(help="TOML \\[templates] name = \"template\": rerun the audit per prompt (openai-chat backends) and report the verdict's sensitivity.")] = None,
    name_swap: Annotated[str | None, typer.Option(help="Field holding a first name: also ask each record with the name swapped to the other sex and report the flip rate.")] = None,
    predictions: Annotated[str | None, typer.Option(help="Audit predictions already made (CSV/Parquet), asking no model: give --y-pred-col (and --y-true-col, --score-col); every row is used unless --budget says otherwise.")] = None,
    y_pred_col: Annotated[str | None, typer.Option(help="With --predictions: the column of decisions (0/1, or labels with --pos-label).")] = None,
    score_col: Annotated[str | None, typer.Option(help="With --predictions: the column of scores in [0, 1] (score-gap).")] = None,
    sample_weight_col: Annotated[str | None, typer.Option(help="With --predictions: the column of sample weights.")] = None,
    csv_path: Annotated[Path | None, typer.Option("--csv", help="Write the by-group (or per-metric) table as CSV.")] = None,
    engine: Annotated[str, typer.Option(help="With --predictions: the counting engine, auto (DuckDB when installed, else pandas), duckdb, pandas or dask.")] = "auto",
    scheduler: Annotated[str | None, typer.Option(help="With --engine dask: the scheduler address (default: a local cluster on 127.0.0.1).")] = None,
    time_col: Annotated[str | None, typer.Option(help="With --predictions: the timestamp column; with --window, findings per time window.")] = None,
    window: Annotated[str | None, typer.Option(help="With --time-col: the window width, e.g. 1D, 7D, 30D, 12H.")] = None,
    window_origin: Annotated[str | None, typer.Option(help="With --window: where windows start (an ISO time; windows are ORIGIN + k x width). Default: midnight UTC of the data's first day.")] = None,
    figure: Annotated[Path | None, typer.Option(help="With --time-col: write the figure of each metric over the windows (SVG, or PNG by the suffix).")] = None,
    per_instance: Annotated[bool, typer.Option("--per-instance", help="With --predictions: also write one JSON entry per row (per_instance; fairprobe radius reads it). Its size grows with the rows.")] = False,
    proxy: Annotated[str | None, typer.Option(help="With --predictions, when race is not recorded: estimate it by bisg (surname + place) or bifsg (+ first name) from the census tables; the verdict is decided on bounds that assume only the proxy's calibration (docs/proxy.md). --group-a: races compared (default black,hispanic,api), --group-b/--reference: the reference (default white).")] = None,
    surname_col: Annotated[str | None, typer.Option(help="With --proxy: the column of family names.")] = None,
    zip_col: Annotated[str | None, typer.Option(help="With --proxy: the column of 5-digit ZIP codes (used as ZCTAs).")] = None,
    tract_col: Annotated[str | None, typer.Option(help="With --proxy: the column of 11-digit census tract GEOIDs (instead of --zip-col).")] = None,
    first_name_col: Annotated[str | None, typer.Option(help="With --proxy bifsg: the column of first names.")] = None,
    proxy_strata: Annotated[str | None, typer.Option(help="With --proxy: comma-separated columns the decisions may depend on (the model's score, an income measure of the place): the bounds are computed within their cells (numeric: 10 quantile bins), which keeps them valid and tightens them.")] = None,
    race_col: Annotated[str | None, typer.Option(help="With --proxy: a column of recorded race (white, black, api, native, multiple, hispanic; empty where unknown): checks the proxy's calibration; recorded for every row, also the audit by recorded race.")] = None,
    race_in_bounds: Annotated[bool, typer.Option("--race-in-bounds", help="With --proxy and --race-col: the rows with recorded race enter the bounds as known races, which tightens them if recording depends on surname and place only (stated in the output).")] = False,
    profile: Annotated[str | None, typer.Option(help="With --predictions: lay the audit out as a rule does: nyc-ll144 (--group-col SEX,RACE; selection rates, or scoring rates with --score-col), ugesp (four-fifths rule), cfpb-air (AIR against --reference, SMD of --score-col). --threshold sets the ratio threshold (0.8). docs/regulatory.md.")] = None,
    exclude_small: Annotated[bool, typer.Option("--exclude-small", help="With --profile nyc-ll144 or ugesp: leave categories under 2% of the data out of the impact ratios (their counts and rates still shown).")] = False,
    smd_threshold: Annotated[float, typer.Option(help="With --profile cfpb-air: |SMD| above this is marked.")] = 0.3,
    data_source: Annotated[str | None, typer.Option(help="With --profile nyc-ll144: the source and explanation of the data (summary field).")] = None,
    audit_dates: Annotated[str | None, typer.Option(help="With --profile nyc-ll144: the date(s) of the audit or of the data (summary field).")] = None,
    distribution_date: Annotated[str | None, typer.Option(help="With --profile nyc-ll144: the tool's distribution date (summary field).")] = None,
    control_col: Annotated[str | None, typer.Option(help="With --predictions: legitimate factors, comma-separated (a credit score, a qualification): the gap within their strata (Mantel-Haenszel, Sato's variance) beside the unconditional one, and the share of the gap they explain. Numeric columns are cut into --control-bins quantile bins. docs/regulatory.md.")] = None,
    control_bins: Annotated[int, typer.Option(help="With --control-col: quantile bins of a numeric control with more distinct values.")] = 4,
    label_proxy_col: Annotated[str | None, typer.Option(help="With --predictions: a 0/1 guess of the true label on every row (a second model's, an LLM's), with --y-true-col filled on a random subset only: the label metrics' gaps by PPI++ (asymptotic intervals) beside the labelled-only audit. docs/audit.md.")] = None,
) -> None:
    """Audit a black-box model with a fixed budget: metrics, confidence intervals, verdict.

    Every group of --group-col (or every intersection of several columns) with a by-group table
    and, per metric, the worst pair with simultaneous intervals; or one metric between two
    groups (--group-a/--group-b, and the default Female vs Male for --group-col sex).
    With --predictions, the decisions in a file are audited the same way and nothing is paid.
    """
    if proxy is not None:
        from fairprobe.cli.proxy import proxy_audit_command

        proxy_audit_command(
            proxy=proxy, predictions=predictions, y_pred_col=y_pred_col,
            surname_col=surname_col, zip_col=zip_col, tract_col=tract_col,
            first_name_col=first_name_col, race_col=race_col, group_a=group_a,
            group_b=group_b, reference=reference, pos_label=pos_label, tolerance=tolerance,
            threshold=threshold, confidence_level=confidence_level, seed=seed,
            json_path=json_path, fail_on=fail_on, strata=proxy_strata,
            race_in_bounds=race_in_bounds,
            model=None if url is None and backend_config is None else {
                "url": url, "backend_config": backend_config, "path": path,
                "queries": queries, "budget": budget, "feature_cols": feature_cols,
                "cache": None if no_cache else cache},
            given={"--group-col": group_col, "--y-true-col": label_col,
                   "--score-col": score_col, "--sample-weight-col": sample_weight_col,
                   "--time-col": time_col, "--window": window,
                   "--window-origin": window_origin,
                   "--per-instance": per_instance, "--csv": csv_path, "--figure": figure,
                   **({"--budget": budget} if url is None and backend_config is None else {}),
                   **({"--queries": queries} if url is None and backend_config is None
                      else {})})
        return
    if race_in_bounds or any(v is not None for v in (surname_col, zip_col, tract_col,
                                                     first_name_col, race_col, proxy_strata)):
        from fairprobe.errors import InvalidParameterError

        raise InvalidParameterError("--surname-col, --zip-col, --tract-col, --first-name-col, "
                                    "--race-col, --race-in-bounds and --proxy-strata go with "
                                    "--proxy bisg|bifsg: "
                                    "add it.")
    if simultaneous is not None:  # the former flag: exact, or bonferroni (= score intervals)
        interval = Interval.exact if simultaneous.value == "exact" else Interval.score
    if group_col is None and (queries is not None or predictions is not None):
        _missing_group_col(queries, predictions)
    if group_col is None:
        group_col = "sex"  # the bundled Adult pool (the demo's data)
    from fairprobe.cli._common import parse_budget

    budget_n = parse_budget(budget)
    if profile is not None or exclude_small or any(
            v is not None for v in (data_source, audit_dates, distribution_date)):
        from fairprobe.cli.predictions import profile_audit

        profile_audit(
            profile=profile, predictions=predictions, group_col=group_col,
            y_pred_col=y_pred_col, score_col=score_col, reference=reference,
            pos_label=_label_value(pos_label), exclude_small=exclude_small,
            threshold=threshold, smd_threshold=smd_threshold,
            confidence_level=confidence_level, interval=interval.value, json_path=json_path,
            csv_path=csv_path, data_source=data_source, audit_dates=audit_dates,
            distribution_date=distribution_date, fail_on=fail_on,
            model=None if url is None and backend_config is None else {
                "url": url, "backend_config": backend_config, "path": path,
                "queries": queries, "budget": budget_n, "feature_cols": feature_cols,
                "send_group": send_group, "label_col": label_col, "seed": seed,
                "cache": None if no_cache else cache})
        return
    if (control_col is not None or control_bins != 4 or label_proxy_col is not None) \
            and predictions is None:
        from fairprobe.errors import InvalidParameterError

        raise InvalidParameterError("--control-col, --control-bins and --label-proxy-col go "
                                    "with --predictions FILE (they name columns of the file).")
    if predictions is not None:
        from fairprobe.cli.predictions import predictions_audit

        predictions_audit(
            predictions=predictions, y_pred_col=y_pred_col, y_true_col=label_col,
            group_a=group_a, group_b=group_b,
            score_col=score_col, sample_weight_col=sample_weight_col, group_col=group_col,
            metric=metric, budget=None if budget_n == "all" else budget_n,  # type: ignore[arg-type]
            seed=seed, tolerance=tolerance, threshold=threshold,
            confidence_level=confidence_level, json_path=json_path, csv_path=csv_path,
            min_group_size=min_group_size, reference=reference,
            pos_label=_label_value(pos_label),
            method="exact" if interval is Interval.exact else "bonferroni", fail_on=fail_on,
            given={"--url": url, "--backend-config": backend_config, "--queries": queries,
                   "--feature-cols": feature_cols, "--send-group": send_group,
                   "--prompt-variants": prompt_variants, "--name-swap": name_swap,
                   "--strict": strict, "--interval katz": interval is Interval.katz},
            engine=engine, scheduler=scheduler, time_col=time_col, window=window,
            window_origin=window_origin, figure=figure, per_instance=per_instance, max_groups=max_groups,
            control_col=control_col, control_bins=control_bins, label_proxy_col=label_proxy_col)
        return
    for flag, given in (("--y-pred-col", y_pred_col),
                        ("--score-col", score_col), ("--sample-weight-col", sample_weight_col),
                        ("--time-col", time_col), ("--window", window), ("--figure", figure),
                        ("--window-origin", window_origin),
                        ("--scheduler", scheduler), ("--per-instance", per_instance or None),
                        ("--engine", None if engine == "auto" else engine)):
        if given is not None:
            from fairprobe.errors import InvalidParameterError

            raise InvalidParameterError(f"{flag} works with --predictions FILE; give the file.")
    budget = budget_n  # type: ignore[assignment]
    check_output_path(csv_path, "--csv")
    if _wants_group_audit(group_col, group_a, group_b, metric, all_groups):
        if interval is Interval.katz:
            from fairprobe.errors import InvalidParameterError

            raise InvalidParameterError(
                "--interval katz is a two-group DI interval; every-group audits take exact or "
                "score (give --group-a/--group-b for katz).")
        _group_audit(
            url=url, backend_config=backend_config, path=path, queries=queries,
            group_col=group_col, label_col=label_col, feature_cols=feature_cols,
            send_group=send_group, metric=metric, budget=budget, seed=seed,
            tolerance=tolerance, threshold=threshold, confidence_level=confidence_level,
            cache=cache, no_cache=no_cache, refresh=refresh, concurrency=concurrency,
            retries=retries, timeout=timeout, progress=progress, json_path=json_path,
            min_group_size=min_group_size, reference=reference, pos_label=pos_label,
            method="exact" if interval is Interval.exact else "bonferroni", strict=strict,
            max_unusable=max_unusable, prompt_variants=prompt_variants, name_swap=name_swap,
            fail_on=fail_on, csv_path=csv_path, allocation=allocation.value,
            **({} if _two_group_metric(metric) else {"group_a": group_a, "group_b": group_b}),
        )
        return
    name = check_audit_flags(
        metric=metric, budget=budget, seed=seed, tolerance=tolerance, threshold=threshold,
        confidence_level=confidence_level, concurrency=concurrency, retries=retries,
        timeout=timeout, no_cache=no_cache, refresh=refresh, json_path=json_path, cache=cache,
    )
    limit = None
    if strict:
        limit = check_flag_real(max_unusable, "--max-unusable", lo=0.0, hi=1.0, closed="left")
    templates = None
    if prompt_variants is not None:
        from fairprobe.access.variation import read_templates

        templates = read_templates(str(prompt_variants))
    o = _model_audit_objects(
        queries=queries, group=group_col, group_a=group_a, group_b=group_b,
        label_col=label_col, feature_cols=feature_cols, send_group=send_group,
        pos_label=pos_label, metrics=(name,), tolerance=tolerance, threshold=threshold,
        confidence_level=confidence_level, min_group_size=min_group_size, reference=None,
        budget=budget, seed=seed, cache=None if no_cache else cache, retries=retries,
        timeout=timeout, progress=progress, every_group=False, interval=interval.value,
        allocation=Allocation.balanced.value, max_unusable_share=limit, refresh=refresh,
        concurrency=concurrency, name_swap=name_swap, url=url, path=path)
    plan = plan_audit(source=o["source"], columns=o["columns"], access=o["access"],
                      options=o["options"], metric=name, answer_cols=answer_columns(backend_config))
    backend = build_backend(url, backend_config, path)  # no network yet
    if no_cache:
        from fairprobe.cli import main as cli_main

        cli_main.INTERRUPT_MESSAGE = "interrupted; nothing was cached (--no-cache)."
    from fairprobe.audit.job import audit_prompt_variants
    from fairprobe.report.text import print_audit

    _two_group_interval(interval.value, name)  # checked once the plan is made, as always
    job = audit_prompt_variants(backend, prompt_templates=templates, **o)
    result, extra, requests = job.result, job.extra, job.requests
    print_audit(result, console)
    print_trust_summary(job.provenance, plan, console)  # the plan audit_model re-made
    print_llm_dimensions(extra, console)
    if "requests" in extra:
        console.print(
            f"all requests of this audit ({requests['runs']} run(s)"
            f"{', with name swaps' if name_swap is not None else ''}): {requests['paid']} paid, "
            f"{requests['cached']} from the cache")
    if csv_path is not None:
        from fairprobe.report.tables import finding_row, findings_table, write_csv

        d = result.to_dict(per_instance=False)
        write_csv(csv_path, findings_table([{**finding_row(d["metric"]), "queried": d["queried"],
                                             "paid": d["paid"], "cached": d["cached"]}]))
    emit_job(json_path, job, fail_on)


def _missing_group_col(queries: str | None, predictions: str | None) -> None:
    """No default group column outside the bundled data: the error lists the file's columns."""
    from fairprobe.errors import InvalidParameterError

    source = predictions if predictions is not None else queries
    flag = "--predictions" if predictions is not None else "--queries"
    have = ""
    if source is not None and source != "-":
        from fairprobe._io import read_table

        cols = [str(c) for c in read_table(source, flag).columns]  # a bad file: its own error
        have = f" (its columns: {', '.join(cols[:30])}{', ...' if len(cols) > 30 else ''})"
    raise InvalidParameterError(
        f"--group-col is required with {flag}: name the sensitive column(s) of {source}{have}, "
        "e.g. --group-col race, or --group-col sex,race for their intersections.")


def print_llm_dimensions(extra: dict[str, Any], out: Any) -> None:
    """The name-swap flip rate and the prompt sensitivity, when they were asked for."""
    ns = extra.get("name_swap")
    if ns is not None:
        out.print(
            f"name swap ({ns['field']}): {ns['n_flips']} of {ns['n_usable']} usable pairs flip, "
            f"rate {ns['flip_rate']:.4f} [{ns['interval']['low']:.4f}, "
            f"{ns['interval']['high']:.4f}]"
        )
    pv = extra.get("prompt_variation")
    if pv is not None:
        for v in pv["variants"]:
            out.print(f"prompt {term(v['name'])}: estimate {v['estimate']:.4f}, {v['verdict']}")
        out.print(
            f"prompt sensitivity: spread {pv['spread']:.4f}, verdicts "
            f"{'agree' if pv['verdicts_agree'] else 'DISAGREE'}"
        )


def print_trust_summary(prov: Any, plan: dict[str, Any], out: Any) -> None:
    """Where the answers came from (paid / cached, of which model), what was sent, the notes."""
    answers = prov.answers or {}
    total = answers.get("total", {})
    backend = prov.backend or {}
    who = backend.get("model_id") or backend.get("identity", "?")
    how = backend.get("identity_source", "?")
    out.print(
        f"answers: {total.get('paid', '?')} paid, {total.get('cached', '?')} from the cache, "
        f"of model {term(who)} (identity {term(how)})"
    )
    fp = backend.get("fingerprint") or {}
    if fp.get("asked"):
        out.print(
            f"identity check (the model reports no identity): {fp['asked']} cached answers asked "
            f"again (paid, outside the budget), {fp['mismatched']} differed; "
            f"{term(str(fp.get('detects') or ''))}")
    for g, c in answers.get("by_group", {}).items():
        out.print(
            f"  {term(plan['group_col'])}={term(g)}: {c['asked']} asked, {c['paid']} paid, "
            f"{c['cached']} cached, {c['unparsed']} unparsed, {c['refused']} refused, "
            f"{c.get('truncated', 0)} truncated"
        )
    cols = (prov.extra or {}).get("columns") or plan["columns"].to_dict()
    held = ", ".join(f"{c} ({why.split(':')[0]})" for c, why in cols["withheld"].items())
    out.print(f"columns sent: {term(', '.join(cols['sent']))}"
              + (f"; withheld: {term(held)}" if held else ""))
    for note in prov.notes:
        out.print(f"[bold yellow]note:[/] {term(note)}")


# --- every group: kept apart from the two-group path above ------------------------

def _wants_group_audit(group_col: str, group_a: str | None, group_b: str | None, metric: str,
                       all_groups: bool) -> bool:
    """Whether the command audits every group (else the two-group audit)."""
    from fairprobe.errors import InvalidParameterError

    several = "," in group_col or "," in metric
    if group_a is not None or group_b is not None:
        if all_groups:
            raise InvalidParameterError(
                "--all-groups audits every group; drop --group-a/--group-b (or --all-groups).")
        if several:
            raise InvalidParameterError(
                "A two-group audit (--group-a/--group-b) takes one metric and one --group-col; "
                "drop --group-a/--group-b to audit every group.")
        # a metric run_audit does not compute: the group audit of those two groups' rows
        return not _two_group_metric(metric)
    if all_groups or several or group_col.strip() not in DEFAULT_GROUPS:
        return True
    return not _two_group_metric(metric)


def _label_value(pos_label: str | None) -> object:
    """``--pos-label`` as given, or as a number when it reads as one (labels stored as ints)."""
    if pos_label is None:
        return None
    try:
        f = float(pos_label)
    except ValueError:
        return pos_label
    return int(f) if f.is_integer() else f


def _group_audit(
    *, url: str | None, backend_config: str | None, path: str, queries: str | None,
    group_col: str, label_col: str | None, feature_cols: str | None, send_group: bool,
    metric: str, budget: int | str | None, seed: int, tolerance: float | None,
    threshold: float | None, confidence_level: float, cache: Path, no_cache: bool,
    refresh: bool, concurrency: int, retries: int, timeout: float | None, progress: bool,
    json_path: Path | None, min_group_size: int, reference: str | None,
    pos_label: str | None, method: str, strict: bool = False, max_unusable: float = 0.05,
    prompt_variants: Path | None = None, name_swap: str | None = None,
    csv_path: Path | None = None, fail_on: FailOn | None = None,
    allocation: str = "balanced", group_a: str | None = None, group_b: str | None = None,
) -> None:
    """The every-group audit: flags, then the pool and columns, then the paid queries (with
    ``group_a``/``group_b``: of those two groups' rows only)."""
    from fairprobe.errors import InvalidParameterError

    for flag, given in (("--prompt-variants", prompt_variants), ("--name-swap", name_swap)):
        if given is not None:
            raise InvalidParameterError(
                f"{flag} works with two-group audits (--group-a/--group-b, or --group-col sex); "
                "drop it or audit two groups.")
    limit = (check_flag_real(max_unusable, "--max-unusable", lo=0.0, hi=1.0, closed="left")
             if strict else None)
    names = check_group_flags(metric=metric, min_group_size=min_group_size,
                              tolerance=tolerance, threshold=threshold)
    cols = split_list(group_col) or []
    if not cols or len(set(cols)) != len(cols):
        raise InvalidParameterError(f"--group-col must name distinct columns; got {group_col!r}.")
    if isinstance(budget, int):
        check_flag_int(budget, "--budget", lo=2, hint=" (at least one query per group)")
    check_access_flags(
        seed=seed, confidence_level=confidence_level, concurrency=concurrency, retries=retries,
        timeout=timeout, no_cache=no_cache, refresh=refresh, json_path=json_path, cache=cache,
    )
    backend = build_backend(url, backend_config, path)  # no network yet
    from fairprobe.audit.job import audit_model
    from fairprobe.report.groups import print_group_audit

    job = audit_model(backend, **_model_audit_objects(
        queries=queries, group=cols, group_a=group_a, group_b=group_b, label_col=label_col,
        feature_cols=feature_cols, send_group=send_group, pos_label=pos_label,
        metrics=tuple(names), tolerance=tolerance, threshold=threshold,
        confidence_level=confidence_level, min_group_size=min_group_size, reference=reference,
        budget=budget, seed=seed, cache=None if no_cache else cache, retries=retries,
        timeout=timeout, progress=progress, every_group=True,
        interval="exact" if method == "exact" else "score", allocation=allocation,
        max_unusable_share=limit, refresh=refresh, concurrency=concurrency, name_swap=None,
        url=url, path=path))
    result, prov, plan = job.result, job.provenance, job.plan
    print_group_audit(result, console)
    print_trust_summary(prov, plan, console)
    if csv_path is not None:
        from fairprobe.report.tables import group_table, write_csv

        write_csv(csv_path, group_table(result))
    emit_job_or_fail(json_path, job, fail_on, resume=True)


def _model_audit_objects(
    *, queries: str | None, group: str | list[str], group_a: str | None, group_b: str | None,
    label_col: str | None, feature_cols: str | None, send_group: bool, pos_label: str | None,
    metrics: tuple[str, ...], tolerance: float | None, threshold: float | None,
    confidence_level: float, min_group_size: int, reference: str | None,
    budget: int | str | None, seed: int, cache: Path | None, retries: int,
    timeout: float | None, progress: bool, every_group: bool, interval: str, allocation: str,
    max_unusable_share: float | None, refresh: bool, concurrency: int, name_swap: str | None,
    url: str | None, path: str,
) -> dict[str, Any]:
    """The options objects of :func:`~fairprobe.audit.audit_model` (keys ``source``,
    ``columns``, ``access``, ``question``, ``options``) from the command's flags, checked
    already; the question's messages name the check they always met."""
    from fairprobe.audit.model_options import QUESTION_OWNER, ModelAuditOptions, ModelColumns
    from fairprobe.options import AccessOptions, AuditQuestion, DataSource

    return {
        "source": DataSource(queries),
        "columns": ModelColumns(group=group, label=label_col, features=feature_cols,
                                pos_label=_label_value(pos_label), group_a=group_a,
                                group_b=group_b, send_group=send_group),
        "access": AccessOptions(budget=budget, seed=seed, cache=cache, retries=retries,
                                timeout=timeout, progress=progress),
        "question": AuditQuestion(metrics=metrics, tolerance=tolerance, threshold=threshold,
                                  confidence_level=confidence_level, reference=reference,
                                  min_group_size=min_group_size, owner=QUESTION_OWNER),
        "options": ModelAuditOptions(every_group=every_group, interval=interval,
                                     allocation=allocation, max_unusable_share=max_unusable_share,
                                     refresh=refresh, concurrency=concurrency,
                                     name_swap=name_swap, url=url, path=path),
    }


def check_group_flags(*, metric: str, min_group_size: int, tolerance: float | None,
                      threshold: float | None) -> list[str]:
    """The every-group audit's ``--metric`` list as full names, with ``--min-group-size``,
    ``--tolerance`` and ``--threshold`` checked: one rule for a model and a predictions file."""
    from fairprobe.errors import InvalidParameterError

    names = list(dict.fromkeys(_metrics.resolve(m).name for m in (split_list(metric) or [])))
    if not names:
        raise InvalidParameterError("--metric names no metric; give e.g. --metric dp,eo.")
    check_flag_int(min_group_size, "--min-group-size", lo=1)
    if tolerance is not None:
        check_flag_real(tolerance, "--tolerance", lo=0.0, hi=1.0)
    if threshold is not None:
        check_flag_real(threshold, "--threshold", lo=0.0, hi=1.0, closed="right")
    return names


def emit_job_or_fail(json_path: Path | None, job: Any, fail_on: FailOn | None,
                     resume: bool = False) -> None:
    """Write the job's document; a metric asked for that could not be computed is then an
    error (exit 2) naming it and why, never a silent omission."""
    missing = job.result.not_summarised()
    if not missing:
        emit_job(json_path, job, fail_on)
        return
    emit_job(json_path, job, None)
    from fairprobe.errors import DataError

    name, why = next(iter(missing.items()))
    more = f" (and {len(missing) - 1} more metric(s))" if len(missing) > 1 else ""
    tail = (" The answers are cached: a rerun with a larger --budget pays only for the new ones."
            if resume else "")
    raise DataError(f"--metric {name} cannot be computed{more}: {why.splitlines()[0]}{tail}")


def _two_group_interval(interval: str, metric: str) -> str:
    """``--interval`` for one two-group metric (one error line when it does not apply)."""
    from fairprobe.errors import InvalidParameterError

    ratio = metric == _metrics.DI.name
    if interval == "katz" and not ratio:
        raise InvalidParameterError("--interval katz is a ratio interval: use it with --metric di, "
                                    "or choose exact, score or newcombe.")
    if interval == "newcombe" and ratio:
        raise InvalidParameterError("--interval newcombe is a difference interval: for --metric "
                                    "di choose exact, score or katz.")
    return interval


def register(app: typer.Typer) -> None:
    app.command("audit")(audit)
