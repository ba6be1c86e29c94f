"""``fairprobe radius``: the consistency radius of an audit conclusion (docs/radius.md)."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

#: Closed choices shown in --help (the registry of fairprobe.radius holds the same names; a test
#: keeps them equal without importing numpy here).
Method = Enum("Method", {m: m for m in ("exact", "core", "greedy", "worst-group")}, type=str)  # type: ignore[misc]
Divergence = Enum("Divergence", {d: d for d in ("kl", "chi2")}, type=str)  # type: ignore[misc]


def radius(
    input: Annotated[Path, typer.Option("--input", help="CSV/Parquet table, or JSON with a 'per_instance' list of {value, group[, weight]}.")],
    tolerance: Annotated[float, typer.Option("--tolerance", help="Fairness tolerance eps > 0 (fair iff |phi| < eps).")],
    value_col: Annotated[str | None, typer.Option("--value-col", help="Per-instance performance column (required for tables).")] = None,
    group_col: Annotated[str | None, typer.Option("--group-col", help="Group column (required for tables): two groups, or more (worst pair, or --pair).")] = None,
    weight_col: Annotated[str | None, typer.Option("--weight-col", help="Optional non-negative weights: the audit distribution P.")] = None,
    method: Annotated[Method, typer.Option("--method", help="Radius method: exact (certified) or the paper's CoRe and baselines.", case_sensitive=False)] = Method["exact"],
    divergence: Annotated[Divergence, typer.Option("--divergence", help="Divergence d(h).", case_sensitive=False)] = Divergence["kl"],
    pair: Annotated[str | None, typer.Option("--pair", help="With more than two groups: assess only these two, 'A,B' (default: the worst pair).")] = None,
    curve_points: Annotated[int, typer.Option("--curve-points", help="Points of the flip curve (divergence vs phi) in the JSON; 0 = none.")] = 21,
    json_path: Annotated[Path | None, typer.Option("--json", help="Write the result as JSON.")] = None,
    csv_path: Annotated[Path | None, typer.Option("--csv", help="Write the result (one row; per pair with several groups) as CSV.")] = None,
) -> None:
    """Smallest distribution shift (KL) that flips the fair/unfair assessment of the audit data."""
    from fairprobe.cli._common import check_output_path
    from fairprobe.documents import write_json
    from fairprobe.radius.job import radius_job

    check_output_path(csv_path, "--csv")
    job = radius_job(input, tolerance, value_col=value_col, group_col=group_col,
                     weight_col=weight_col, method=method.value, divergence=divergence.value,
                     pair=pair, curve_points=curve_points)
    res = job.result
    scope = job.extra.get("scope")
    if scope is not None:
        left = "; ".join(f"{g} ({why})" for g, why in scope["left_out"].items())
        typer.echo(f"groups as in the audit: {', '.join(scope['groups'])}; left out as the audit "
                   f"did: {left}")
    typer.echo(str(res))
    if res.pairs is not None or pair is not None:
        typer.echo(res.message)
    if res.lower_bound is not None and not res.fair and res.pairs is not None:
        typer.echo(f"certified: {res.lower_bound:.6g} <= radius <= {res.radius:.6g}")
    if res.infinite:
        typer.echo(f"radius: infinite — {res.message}")
    elif divergence.value == "kl" and res.radius is not None:
        typer.echo(kl_meaning(float(res.radius)))
    if csv_path is not None:
        from fairprobe.report.tables import findings_table, write_csv

        d = res.to_dict()
        pairs = d.get("pairs") if isinstance(d.get("pairs"), list) else None
        write_csv(csv_path, findings_table(pairs or [d]))
    if json_path is not None:
        write_json(json_path, job.to_dict())


def kl_meaning(r: float) -> str:
    """A KL radius in plain words: two facts that hold for any shift within it.

    Conditioning a population on an event ``A`` is a shift of KL ``-log P(A)`` (``Q = P | A``
    gives ``KL(Q || P) = log(1 / P(A))``), so a radius ``r`` is as large as keeping only a
    share ``exp(-r)`` of the audited population; and by Pinsker's inequality no event
    probability (no rate) moves by more than ``sqrt(r / 2)`` under a shift within it.
    """
    import math

    keep = math.exp(-r)
    return (f"in plain words: a KL radius of {r:.4g} nats is as large a shift as keeping only "
            f"{keep:.1%} of the audited population (dropping {1 - keep:.1%} of it, chosen in "
            f"the worst way); within it no rate can move by more than {math.sqrt(r / 2):.3g} "
            f"(Pinsker)")


def register(app: typer.Typer) -> None:
    app.command("radius")(radius)
