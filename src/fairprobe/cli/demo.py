"""``fairprobe demo``: the main job of ``make demo``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from fairprobe.cli.gate import FailOnOption, emit_job


def demo(
    seed: Annotated[int, typer.Option(help="Seed of every random choice.")] = 0,
    port: Annotated[int, typer.Option(help="Port of the platform server (0: any free port).")] = 8765,
    budget: Annotated[int, typer.Option(help="Queries of the fixed-budget audit.")] = 2000,
    cache_dir: Annotated[Path, typer.Option(help="Where answers are cached.")] = Path(".fairprobe"),
    sections: Annotated[str, typer.Option(help="Comma-separated steps to run.")] = (
        "audit,radius,sequential,twosource"
    ),
    json_path: Annotated[Path | None, typer.Option("--json", help="Write all results as JSON.")] = None,
    fail_on: FailOnOption = None,
) -> None:
    """Audit the bundled platform server on 127.0.0.1 with each of fairprobe's methods."""
    from fairprobe._validation import check_choice
    from fairprobe.cli._common import split_list
    from fairprobe.demo import SECTIONS, DemoConfig, demo_job

    steps = tuple(split_list(sections) or [])
    for step in steps:
        check_choice(step, "sections", "fairprobe demo", list(SECTIONS))
    cfg = DemoConfig(seed=seed, port=port or None, budget=budget, cache_dir=cache_dir,
                     sections=steps)
    emit_job(json_path, demo_job(cfg), fail_on)


def register(app: typer.Typer) -> None:
    app.command("demo")(demo)
