"""Human-readable rendering of results (rich)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table

from fairprobe._text import term

if TYPE_CHECKING:
    from fairprobe.audit import AuditResult
    from fairprobe.stats import MetricResult

_VERDICT_STYLE = {"fair": "green", "unfair": "red", "undetermined": "yellow"}


def verdict_markup(verdict: str) -> str:
    style = _VERDICT_STYLE.get(verdict, "bold")
    return f"[bold {style}]{verdict}[/]"


def metric_line(m: MetricResult) -> str:
    """``disparate_impact_ratio = 0.301 [0.27, 0.33] (95%) vs >= 0.8: unfair``."""
    ci = m.confidence_interval()
    rule = f">= {m.threshold:g}" if m.kind == "ratio" else f"|.| <= {m.threshold:g}"
    return (
        f"{m.metric} ({term(m.groups[0])} vs {term(m.groups[1])}) = {m.estimate:.4f}  "
        f"[{ci.low:.4f}, {ci.high:.4f}] ({m.confidence_level:.0%} CI, {m.method})  "
        f"rule {rule}: {verdict_markup(str(m.verdict))}"
    )


def print_audit(result: AuditResult, console: Console) -> None:
    """Print an audit result: the metric line and the query accounting."""
    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_row("metric", metric_line(result.metric))
    table.add_row(
        "queries",
        f"{result.queried} drawn (seed {result.seed}): {result.paid} paid, "
        f"{result.cached} from the cache (repeated records or earlier runs), "
        f"{result.unparsed} unusable (unparsed, refused or truncated; dropped)",
    )
    table.add_row("model", term(result.backend))
    console.print(table)
