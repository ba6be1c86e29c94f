"""``fairprobe plan``: how many queries the default audit needs to decide (a sample-size plan)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from fairprobe import metrics as _metrics
from fairprobe.errors import ConfigError


def _shares(spec: str | None, queries: Path | None,
            group_col: str | None) -> tuple[dict[str, float], dict[str, int] | None]:
    if (spec is None) == (queries is None):
        raise ConfigError("plan: give --group-shares 'g1=0.5,g2=0.3,...' or --queries POOL "
                          "--group-col C (one of them).")
    if spec is not None:
        out: dict[str, float] = {}
        for part in spec.split(","):
            name, eq, val = part.partition("=")
            try:
                out[name.strip()] = float(val) if eq else float("nan")
            except ValueError:
                out[name.strip()] = float("nan")
            if not eq or not name.strip() or not out[name.strip()] > 0:
                raise ConfigError(f"plan: --group-shares entry {part!r} is not 'name=share' "
                                  "with a share > 0.")
        return out, None
    if group_col is None or queries is None:
        raise ConfigError("plan: --queries needs --group-col (the column of the groups).")
    from fairprobe._io import read_table

    table = read_table(queries, "--queries")
    cols = [c.strip() for c in group_col.split(",")]
    missing = [c for c in cols if c not in table.columns]
    if missing:
        raise ConfigError(f"plan: --group-col {', '.join(missing)} not in {queries} (columns: "
                          f"{', '.join(map(str, table.columns[:20]))}).")
    key = table[cols].astype(str).agg(" x ".join, axis=1) if len(cols) > 1 else \
        table[cols[0]].astype(str)
    counts = key.value_counts()
    total = float(counts.sum())
    return ({str(k): float(v) / total for k, v in counts.items()},
            {str(k): int(v) for k, v in counts.items()})


def plan(
    metric: Annotated[str, typer.Option("--metric", help=f"One of {_metrics.help_text('plan')}; for a ratio, --tolerance is the floor (e.g. 0.8).")] = _metrics.DP.short,
    tolerance: Annotated[float, typer.Option("--tolerance", help="Fair band half-width (dp, eo) or floor (di).")] = 0.05,
    group_shares: Annotated[str | None, typer.Option("--group-shares", help="Each group's share of the queries, 'g1=0.5,g2=0.3,g3=0.2'.")] = None,
    queries: Annotated[Path | None, typer.Option("--queries", help="The query pool (CSV/Parquet): group shares read from --group-col.")] = None,
    group_col: Annotated[str | None, typer.Option("--group-col", help="Group column(s) of --queries ('sex,race' for intersections).")] = None,
    gap: Annotated[float, typer.Option("--gap", help="True largest gap to plan for (di: one minus the smallest ratio). At most the tolerance: plan to decide fair; beyond: unfair.")] = 0.0,
    power: Annotated[float, typer.Option("--power", help="Probability of deciding that the plan must reach.")] = 0.8,
    base_rate: Annotated[float, typer.Option("--base-rate", help="The groups' common rate (0.5: the most variable).")] = 0.5,
    label_rate: Annotated[float, typer.Option("--label-rate", help="eo: the share of positive labels.")] = 0.5,
    confidence_level: Annotated[float, typer.Option("--confidence-level", help="Family-wise level of the audit's intervals.")] = 0.95,
    allocation: Annotated[str, typer.Option("--allocation", help="How the audit spreads its queries: balanced (the same number per group, drawn within each group), uniform (rows at random from the pool), neyman (per group, by the rate's standard deviation) or adaptive (at most 5 batches under a budget cap: the plan gives the cap and, simulated, the queries spent and the share decided).")] = "balanced",
    reps: Annotated[int, typer.Option("--reps", help="Simulated audits per budget of the search (two groups: judged by Newcombe's interval, then checked exactly at the chosen budget).")] = 2000,
    check_reps: Annotated[int | None, typer.Option("--check-reps", help="Simulated audits of the check at the chosen budget (default: 100 exact audits with two groups, --reps otherwise).")] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the simulation.")] = 0,
    json_path: Annotated[Path | None, typer.Option("--json", help="Write the plan as JSON (key 'budget').")] = None,
) -> None:
    """Budget at which the default audit decides fair (or unfair) with the given probability."""
    from fairprobe.stats.plan import plan_audit_budget

    if reps < 100:
        raise ConfigError("plan: --reps must be at least 100.")
    if check_reps is not None and check_reps < 20:
        raise ConfigError("plan: --check-reps must be at least 20.")
    shares, rows = _shares(group_shares, queries, group_col)
    p = plan_audit_budget(metric, tolerance, shares, gap=gap,
                          power=power, base_rate=base_rate, label_rate=label_rate,
                          confidence_level=confidence_level, reps=reps, seed=seed,
                          allocation=allocation, check_reps=check_reps, pool_rows=rows)
    typer.echo(p.sentence())
    if json_path is not None:
        from fairprobe.report.jsonio import write_json

        write_json(json_path, p.to_dict())


def register(app: typer.Typer) -> None:
    app.command("plan")(plan)
