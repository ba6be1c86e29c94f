"""``fairprobe audit``: a fixed-budget black-box audit of every group (or intersection) with
several metrics, or of one metric between two groups (``--group-a``/``--group-b``)."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from fairprobe.cli._common import build_backend, console, read_table, split_list

DEFAULT_CACHE = Path(".fairprobe") / "cache.sqlite"


class Simultaneous(StrEnum):
    """Constructions of the simultaneous intervals (``fairprobe.stats.simultaneous``)."""

    exact = "exact"
    bonferroni = "bonferroni"


def audit(
    url: Annotated[str | None, typer.Option(help="Base URL of an HTTP JSON model (platform shape).")] = None,
    backend_config: Annotated[str | None, typer.Option(help="Backend config file (TOML/JSON).")] = None,
    path: Annotated[str, typer.Option(help="Endpoint path used with --url.")] = "/audit/predict",
    queries: Annotated[str | None, typer.Option(help="Query pool (CSV/Parquet); default: bundled Adult test split.")] = None,
    group_col: Annotated[str, typer.Option(help="Sensitive column, or several comma-separated (sex,race: their intersections). Without --group-a/--group-b every group is audited.")] = "sex",
    group_a: Annotated[str | None, typer.Option(help="Two-group audit: group A value (the numerator of DI).")] = None,
    group_b: Annotated[str | None, typer.Option(help="Two-group audit: group B value; with --group-a only, A vs every other value.")] = None,
    label_col: Annotated[str | None, typer.Option(help="True-label column (eo, accuracy-gap).")] = None,
    feature_cols: Annotated[str | None, typer.Option(help="Comma-separated columns sent to the model.")] = None,
    metric: Annotated[str, typer.Option(help="Comma-separated, any of: di, dp, eo (TPR), fpr, eodds (equalized odds), ppv (predictive parity), accuracy-gap, error-rate, score-gap. Two-group audits: one of di, dp, eo, accuracy-gap.")] = "di",
    budget: Annotated[int, typer.Option(help="Queries drawn from the pool.")] = 2000,
    seed: Annotated[int, typer.Option(help="Seed of the query draw.")] = 0,
    tolerance: Annotated[float | None, typer.Option(help="Fair band half-width of differences.")] = None,
    threshold: Annotated[float | None, typer.Option(help="Minimum ratio of DI (80% rule).")] = None,
    confidence_level: Annotated[float, typer.Option(help="Confidence level of the interval.")] = 0.95,
    cache: Annotated[Path, typer.Option(help="Persistent answer cache (SQLite).")] = DEFAULT_CACHE,
    concurrency: Annotated[int, typer.Option(help="Batches in flight.")] = 4,
    retries: Annotated[int, typer.Option(help="Retries of a failed batch.")] = 5,
    timeout: Annotated[float | None, typer.Option(help="Per-request timeout (s).")] = None,
    progress: Annotated[bool, typer.Option(help="Show a progress bar.")] = True,
    json_path: Annotated[Path | None, typer.Option("--json", help="Write the result as JSON.")] = None,
    min_group_size: Annotated[int, typer.Option(help="Groups with fewer answers are listed as too small and left out of the summaries.")] = 20,
    reference: Annotated[str | None, typer.Option(help="Reference group: every group is also compared with it (intersections: 'Female, White').")] = None,
    pos_label: Annotated[str | None, typer.Option(help="Positive value of --label-col when labels are not 0/1.")] = None,
    simultaneous: Annotated[Simultaneous, typer.Option(case_sensitive=False, help="Simultaneous intervals of the summaries: exact (level kept at every rate and size) or bonferroni (narrower).")] = Simultaneous.exact,
) -> None:
    """Audit a black-box model with a fixed budget: metrics, confidence intervals, verdict.

    Without --group-a/--group-b: every group of --group-col (or every intersection of several
    columns) with a by-group table and, per metric, the worst pair with simultaneous intervals.
    """
    if group_a is None and group_b is None:
        _group_audit(
            url=url, backend_config=backend_config, path=path, queries=queries,
            group_col=group_col, label_col=label_col, feature_cols=feature_cols, metric=metric,
            budget=budget, seed=seed, tolerance=tolerance, threshold=threshold,
            confidence_level=confidence_level, cache=cache, concurrency=concurrency,
            retries=retries, timeout=timeout, progress=progress, json_path=json_path,
            min_group_size=min_group_size, reference=reference, pos_label=pos_label,
            method=simultaneous.value,
        )
        return
    from fairprobe.errors import DataError

    if "," in metric or "," in group_col:
        raise DataError("A two-group audit (--group-a/--group-b) takes one metric and one group "
                        "column; drop --group-a/--group-b to audit every group.")
    from fairprobe.access.blackbox import BlackBox
    from fairprobe.audit import run_audit
    from fairprobe.report import write_json
    from fairprobe.report.text import print_audit

    if queries is None:
        from fairprobe.datasets import load_adult
        from fairprobe.platform.model import AUDIT_FEATURES

        pool = load_adult("test", names_seed=None)[[*AUDIT_FEATURES, "income"]]
        feats: list[str] | None = split_list(feature_cols) or list(AUDIT_FEATURES)
        label = label_col or ("income" if metric in ("eo", "accuracy-gap") else None)
        pos_label = None if label_col is None else pos_label
    else:
        pool = read_table(queries)
        feats = split_list(feature_cols)
        label = label_col
    backend = build_backend(url, backend_config, path)
    cache.parent.mkdir(parents=True, exist_ok=True)
    with BlackBox(
        backend, cache=cache, budget=budget, retries=retries, timeout=timeout,
        concurrency=concurrency, progress=progress, seed=seed,
    ) as bb:
        result = run_audit(
            bb, pool, group_col=group_col, metric=metric, group_a=group_a, group_b=group_b,
            label_col=label, feature_cols=feats, budget=budget, seed=seed,
            tolerance=tolerance, threshold=threshold, confidence_level=confidence_level,
            pos_label=_label_value(pos_label),
        )
    print_audit(result, console)
    if json_path is not None:
        write_json(json_path, result)


def _label_value(pos_label: str | None) -> object:
    """``--pos-label`` as given, or as a number when it reads as one (labels 0/1 stored as ints)."""
    if pos_label is None:
        return None
    try:
        f = float(pos_label)
    except ValueError:
        return pos_label
    return int(f) if f.is_integer() else f


def _group_audit(
    *, url: str | None, backend_config: str | None, path: str, queries: str | None,
    group_col: str, label_col: str | None, feature_cols: str | None, metric: str, budget: int,
    seed: int, tolerance: float | None, threshold: float | None, confidence_level: float,
    cache: Path, concurrency: int, retries: int, timeout: float | None, progress: bool,
    json_path: Path | None, min_group_size: int, reference: str | None,
    pos_label: str | None, method: str,
) -> None:
    """The by-group audit of ``fairprobe audit`` (no --group-a/--group-b)."""
    from fairprobe.access.blackbox import BlackBox
    from fairprobe.audit import check_group_audit, run_group_audit
    from fairprobe.provenance import Provenance, pool_digest
    from fairprobe.report.groups import print_group_audit
    from fairprobe.report.jsonio import write_result
    from fairprobe.stats.frame import FAIRNESS_METRICS, RATES, fairness_metric_name

    metrics = split_list(metric) or []
    names = [fairness_metric_name(m, "fairprobe audit") for m in metrics]
    label = label_col
    if queries is None:
        from fairprobe.datasets import load_adult
        from fairprobe.platform.model import AUDIT_FEATURES

        pool = load_adult("test", names_seed=None)[[*AUDIT_FEATURES, "income"]]
        feats: list[str] | None = split_list(feature_cols) or list(AUDIT_FEATURES)
        needs = any("y_true" in RATES[r][0] for n in names for r in FAIRNESS_METRICS[n][0])
        label = label_col or ("income" if needs else None)
    else:
        pool = read_table(queries)
        feats = split_list(feature_cols)
    cols = split_list(group_col) or []
    kwargs = dict(group_col=cols, metrics=names, label_col=label, feature_cols=feats,
                  budget=budget, seed=seed, min_group_size=min_group_size,
                  confidence_level=confidence_level, method=method, tolerance=tolerance,
                  threshold=threshold)
    check_group_audit(pool, **kwargs)  # type: ignore[arg-type]
    backend = build_backend(url, backend_config, path)
    cache.parent.mkdir(parents=True, exist_ok=True)
    with BlackBox(
        backend, cache=cache, budget=budget, retries=retries, timeout=timeout,
        concurrency=concurrency, progress=progress, seed=seed,
    ) as bb:
        result = run_group_audit(bb, pool, reference=reference,
                                 pos_label=_label_value(pos_label), **kwargs)  # type: ignore[arg-type]
    print_group_audit(result, console)
    if json_path is not None:
        prov = Provenance.capture(
            seed=seed,
            query_pool=pool_digest(pool, queries or "bundled Adult test split"),
            backend={"identity": result.backend},
            extra={"cache": str(cache)},
        ).with_answers(result.answer_counts)
        write_result(json_path, "audit", result, provenance=prov)


def register(app: typer.Typer) -> None:
    app.command("audit")(audit)
