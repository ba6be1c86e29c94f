"""``fairprobe audit``: a fixed-budget black-box audit of one fairness metric."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from fairprobe.cli._common import build_backend, console, read_table, split_list

DEFAULT_CACHE = Path(".fairprobe") / "cache.sqlite"


def audit(
    url: Annotated[str | None, typer.Option(help="Base URL of an HTTP JSON model (platform shape).")] = None,
    backend_config: Annotated[str | None, typer.Option(help="Backend config file (TOML/JSON).")] = None,
    path: Annotated[str, typer.Option(help="Endpoint path used with --url.")] = "/audit/predict",
    queries: Annotated[str | None, typer.Option(help="Query pool (CSV/Parquet); default: bundled Adult test split.")] = None,
    group_col: Annotated[str, typer.Option(help="Sensitive attribute column.")] = "sex",
    group_a: Annotated[str | None, typer.Option(help="Group A value (the numerator of DI).")] = "Female",
    group_b: Annotated[str | None, typer.Option(help="Group B value; omit for 'every other value'.")] = "Male",
    label_col: Annotated[str | None, typer.Option(help="True-label column (eo, accuracy-gap).")] = None,
    feature_cols: Annotated[str | None, typer.Option(help="Comma-separated columns sent to the model.")] = None,
    metric: Annotated[str, typer.Option(help="di | dp | eo | accuracy-gap")] = "di",
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
) -> None:
    """Audit a black-box model with a fixed budget: metric, confidence interval, verdict."""
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
        )
    print_audit(result, console)
    if json_path is not None:
        write_json(json_path, result)


def register(app: typer.Typer) -> None:
    app.command("audit")(audit)
