"""``fairprobe platform serve`` and ``fairprobe platform info``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer

__all__ = ["register"]

platform_app = typer.Typer(
    help="Play the audited platform: an HTTP service with a user interface and an audit API.",
    no_args_is_help=True,
)


@platform_app.command("serve")
def serve_cmd(
    ctx: typer.Context,
    host: str = typer.Option("127.0.0.1", help="Bind address (loopback only by default)."),
    port: int = typer.Option(8765, help="TCP port."),
    fairwash: str = typer.Option("none", help="none | positive | negative | mixed."),
    gamma: float = typer.Option(0.0, help="Share of manipulated answers (see docs/platform.md)."),
    mix: float = typer.Option(0.5, help="mixed mode: share of gamma spent on positive flips."),
    fairwash_select: str = typer.Option(
        "random", help="Which answers to flip: random (per-input hash) | margin (reject option)."
    ),
    seed: int = typer.Option(0, help="Seed of every server-side random choice."),
    model_file: Path | None = typer.Option(None, help="skops (or, with --allow-pickle, joblib) model with predict_proba."),
    allow_pickle: bool = typer.Option(False, help="Allow a pickle (.joblib/.pkl) --model-file: it can run code when loaded."),
    fail_rate: float = typer.Option(0.0, help="Seeded share of requests answered 429/503."),
    delay_ms: float = typer.Option(0.0, help="Delay added to every predict request (ms)."),
    llm_garble_rate: float = typer.Option(0.0, help="Seeded share of unparseable LLM replies."),
    llm_refuse_rate: float = typer.Option(0.0, help="Seeded share of refused LLM replies."),
    llm_reasoning: str = typer.Option(
        "none", help="Answer like a reasoning model: none | think (<think> in the content) | "
        "field (reasoning_content)."
    ),
    header_timeout: float = typer.Option(10.0, help="Seconds to receive a request's headers."),
    body_timeout: float = typer.Option(30.0, help="Seconds within which a whole request body must arrive (408 after)."),
    max_body_bytes: int = typer.Option(8 * 1024 * 1024, help="Largest request body accepted."),
    max_instances: int = typer.Option(10_000, help="Most instances per request."),
    allow_external: bool = typer.Option(False, help="Allow a non-loopback bind address."),
    instance_token: str | None = typer.Option(None, hidden=True),
) -> None:
    """Serve the platform model over HTTP until interrupted."""
    from fairprobe.platform.fairwash import FairwashConfig
    from fairprobe.platform.server import ServerConfig, serve

    # the flags are ServerConfig's fields, but for the fairwash ones (its FairwashConfig)
    flags = dict(ctx.params)
    fairwash_config = FairwashConfig(
        mode=flags.pop("fairwash"), gamma=flags.pop("gamma"), mix=flags.pop("mix"), seed=seed,
        select=flags.pop("fairwash_select"),
    )
    flags.update(
        fairwash=fairwash_config,
        model_file=str(model_file) if model_file is not None else None,
        llm_reasoning=llm_reasoning.lower(),
    )
    cfg = ServerConfig(**flags)
    serve(cfg)


@platform_app.command("info")
def info_cmd(
    model_file: Path | None = typer.Option(None, help="Evaluate this model instead."),
    allow_pickle: bool = typer.Option(False, help="Allow a pickle (.joblib/.pkl) --model-file."),
    split: str = typer.Option("test", help="Adult split: train | test | all."),
    json_path: Path | None = typer.Option(None, "--json", help="Write the figures as JSON."),
) -> None:
    """Print the platform model's accuracy and disparate impact by sex on an Adult split."""
    from fairprobe.platform.model import PlatformModel, evaluate_model

    model = (
        PlatformModel.from_file(model_file, allow_pickle=allow_pickle)
        if model_file
        else PlatformModel.default()
    )
    ev = evaluate_model(model, split)
    d = ev.to_dict()
    sys.stdout.write(
        f"model {d['model']} on Adult {split} (n={d['n']}): accuracy {d['accuracy']:.4f}, "
        f"positive rate female {d['positive_rate_female']:.4f} male "
        f"{d['positive_rate_male']:.4f}, disparate impact by sex {d['disparate_impact_sex']:.4f}\n"
    )
    if json_path is not None:
        from fairprobe._io import write_file

        write_file(json_path, json.dumps(d, indent=2) + "\n", what="--json")


def register(app: typer.Typer) -> None:
    """Add the ``platform`` command group to the main app."""
    app.add_typer(platform_app, name="platform")
