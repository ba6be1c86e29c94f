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

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.rule import Rule

from fairprobe import metrics as _metrics
from fairprobe._validation import check_int
from fairprobe.documents import Job

__all__ = ["DemoConfig", "demo_job", "run_demo"]


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
    from fairprobe.report.text import metric_line, print_audit
    from fairprobe.stats import CountsVector, demographic_parity_from_counts

    console.print(
        f"Fixed-budget audit of the platform's audit API at {ctx['url']}: disparate impact by "
        f"sex (Female vs Male, 80% rule), {cfg.budget} queries drawn from Adult's test split."
    )
    backend = HttpJsonBackend(url=ctx["url"], path="/audit/predict",
                              cache_name=f"demo-platform-seed{cfg.seed}-audit")
    with BlackBox(backend, cache=cfg.cache_dir / "demo-cache.sqlite", progress=True,
                  seed=cfg.seed) as bb:
        di = run_audit(bb, ctx["pool"], group_col="sex", group_a="Female", group_b="Male",
                       metric=_metrics.DI.short, feature_cols=ctx["features"], budget=cfg.budget,
                       seed=cfg.seed)
    # the same answers give the demographic-parity difference: no second query
    counts = di.metric.counts
    assert isinstance(counts, CountsVector)
    dp = dataclasses.replace(di, metric=demographic_parity_from_counts(
        counts, tolerance=cfg.tolerance, groups=di.metric.groups))
    print_audit(di, console)

    console.print(f"         {metric_line(dp.metric)}")
    ctx["dp_audit"] = dp
    return {"disparate_impact": di.to_dict(per_instance=False),
            "demographic_parity": dp.to_dict(per_instance=False)}


def _radius_section(ctx: dict[str, Any], cfg: DemoConfig, console: Console) -> dict[str, Any]:
    from fairprobe.radius import consistency_radius

    dp = ctx["dp_audit"]
    groups = [dp.metric.groups[0] if g else dp.metric.groups[1] for g in dp.in_group_a]
    res = consistency_radius(dp.values, groups, cfg.tolerance, method="exact")
    verdict = "fair" if res.fair else "unfair"
    if res.radius == float("inf"):
        console.print(f"No distribution shift can flip the '{verdict}' conclusion ({res.message}).")
    else:
        console.print(
            f"The '{verdict}' conclusion (|DP| < {cfg.tolerance:g} is "
            f"{'met' if res.fair else 'not met'}: phi = {res.phi:.4f}) flips only under a shift of "
            f"the audit distribution with KL >= [bold]{res.radius:.4f}[/] nats "
            f"(phi would reach {res.phi_shifted:.4f}); by Pinsker, no event's probability moves "
            f"by more than {res.pinsker_bound:.3f} before that."
        )
    return res.to_dict()


def _sequential_section(ctx: dict[str, Any], cfg: DemoConfig, console: Console) -> dict[str, Any]:
    from fairprobe.access.blackbox import BlackBox
    from fairprobe.access.http import HttpJsonBackend
    from fairprobe.sequential.runner import audit_live

    tol = 0.1
    console.print(
        f"Sequential audit of statistical parity by sex (H0: |SP| <= {tol:g}) with the default "
        "anytime-valid test (mixture of bets on alternating Female/Male queries): a 'violation' "
        "is wrong with probability <= 5% and a 'compliant' with probability <= 20%, whenever "
        "the audit stops. Querying the same platform one record at a time, each access level:"
    )
    out: dict[str, Any] = {}
    backend = HttpJsonBackend(url=ctx["url"], path="/audit/predict",
                              cache_name=f"demo-platform-seed{cfg.seed}-audit")
    with BlackBox(backend, cache=cfg.cache_dir / "demo-cache.sqlite", seed=cfg.seed) as bb:
        for access in ("decisions", "scores", "logits"):
            res = audit_live(bb, ctx["pool"], group_col="sex", metric="sp", access=access,
                             tolerance=tol, budget=4000, seed=cfg.seed,
                             feature_cols=ctx["features"])
            cs = res.anytime_interval()
            ev = res.e_values()
            extra = ""
            if cs is not None and ev is not None:
                extra = (f"; 95% confidence sequence [{cs[0]:+.3f}, {cs[1]:+.3f}], e-value "
                         f"against compliance {ev['against_compliance']:.3g}")
            f = res.finding
            said = {"violation": "unfair", "compliant": "fair"}.get(res.outcome, "undetermined")
            if f.verdict != said:  # the finding keeps what the confidence sequence supports
                extra += (f"; finding {f.verdict}: the sequence still reaches the band "
                          f"+/-{tol:g}")
            console.print(
                f"  {access:<9}: [bold]{res.outcome}[/] after {res.queries} queries "
                f"(gap estimate {res.gap_estimate:+.3f}{extra}; budget 4000)"
            )
            out[access] = res.to_dict()
    console.print(
        "  (the paper's GLR with Wald boundaries, --test glr-wald, decides sooner but its "
        "measured false-violation rate at |SP| = 0.1 is 0.19, not 0.05: docs/sequential.md)"
    )
    return out


def _twosource_section(ctx: dict[str, Any], cfg: DemoConfig, console: Console) -> dict[str, Any]:
    from fairprobe.access.blackbox import BlackBox
    from fairprobe.access.http import HttpJsonBackend
    from fairprobe.platform.process import PlatformProcess
    from fairprobe.twosource import proxy_from_spec, run_two_source_audit

    gamma = cfg.fairwash_gamma
    with PlatformProcess(fairwash="positive", gamma=gamma, seed=cfg.seed) as washer:
        console.print(
            f"A second platform at {washer.url} fairwashes its audit API (positive "
            f"discrimination, gamma = {gamma:g}); its user interface stays truthful. Two-source "
            "audit with the first-name proxy, budget 1000:"
        )
        name = f"demo-washer-seed{cfg.seed}-positive-gamma{gamma:g}"
        api = HttpJsonBackend(url=washer.url, path="/audit/predict", cache_name=f"{name}-audit")
        ui = HttpJsonBackend(url=washer.url, path="/user/predict", cache_name=f"{name}-user")
        cache = cfg.cache_dir / "demo-cache.sqlite"
        with BlackBox(api, cache=cache, seed=cfg.seed) as a, BlackBox(ui, cache=cache,
                                                                      seed=cfg.seed) as b:
            res = run_two_source_audit(a, b, ctx["pool"], proxy_from_spec("name"), budget=1000,
                                       seed=cfg.seed)
    di_b = "n/a" if res.di_b is None else f"{res.di_b.estimate:.3f}"
    console.print(
        f"  DI through the audit API: {res.di_a.estimate:.3f} ({res.di_a.verdict} by itself); "
        f"DI through the user interface + proxy: {di_b}"
    )
    for d in res.detectors:
        p = "n/a" if d.p_value is None else (
            "< 1e-16" if d.p_value < 1e-16 else f"= {d.p_value:.2g}")
        extra = ""
        if "n_inconsistent" in d.details:
            extra = f", {d.details['n_inconsistent']} inconsistencies vs n_max {d.details.get('n_max')}"
        console.print(
            f"  detector {d.detector}: {'FIRED' if d.detected else 'silent'} (p {p}{extra})"
        )
    console.print(f"  verdict: [bold]{res.verdict}[/] ({res.n_checked} checks, {res.stop_reason})")
    return res.to_dict()


SECTIONS: dict[str, tuple[str, Callable[[dict[str, Any], DemoConfig, Console], dict[str, Any]]]] = {
    "audit": ("1. Fixed-budget audit", _audit_section),
    "radius": ("2. Consistency radius of the conclusion", _radius_section),
    "sequential": ("3. Sequential audit", _sequential_section),
    "twosource": ("4. Two-source audit of a fairwashing platform", _twosource_section),
}


def run_demo(cfg: DemoConfig, console: Console | None = None) -> dict[str, Any]:
    """Run the demo and return every section's result as a JSON-ready dict."""
    from fairprobe.datasets import load_adult
    from fairprobe.platform.model import AUDIT_FEATURES
    from fairprobe.platform.process import PlatformProcess

    console = console or Console(highlight=False, emoji=False)
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


def demo_job(cfg: DemoConfig, console: Console | None = None) -> Job:
    """:func:`run_demo` with its provenance: the document ``fairprobe demo --json`` writes."""
    from fairprobe.provenance import Provenance

    result = run_demo(cfg, console)
    prov = Provenance.capture(seed=cfg.seed,
                              extra={"sections": list(cfg.sections), "budget": cfg.budget})
    return Job("demo", result, prov)
