"""Terminal rendering of a by-group audit (:class:`fairprobe.audit.GroupAudit`): the by-group
table with each group's count, rates and intervals, then one line per metric with the worst pair
and its simultaneous interval."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table

from fairprobe import metrics as _metrics
from fairprobe._text import term
from fairprobe.report.text import verdict_markup

if TYPE_CHECKING:
    from fairprobe.audit import GroupAudit

__all__ = ["print_group_audit"]

_SHORT = {r.name: r.short for r in _metrics.RATES.values()}


def _f(x: float) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.3f}"


#: Groups the terminal's by-group table shows at most; the JSON (``--json``) lists every group.
#: Past it, the table shows the groups of every metric's worst pair and then the first groups.
MAX_PRINTED_GROUPS = 40
_MAX_LEFT_OUT_LINES = 10


def _shown_groups(result: GroupAudit) -> list[int]:
    n = result.groups.n_groups
    if n <= MAX_PRINTED_GROUPS:
        return list(range(n))
    pos = {lab: i for i, lab in enumerate(result.groups.labels)}
    keep = {pos[g] for s in result.summaries().values() for g in s.pair if g in pos}
    for i in range(n):
        if len(keep) >= MAX_PRINTED_GROUPS:
            break
        keep.add(i)
    return sorted(keep)


def _print_reference(result: GroupAudit, console: Console, pct: str) -> None:
    """The ``--reference`` comparisons: each group vs the reference, per metric, with its
    simultaneous interval and verdict against the metric's rule."""
    from fairprobe.stats.finding import decide

    for m, s in result.summaries().items():
        rows = [x for x in s.vs_reference if isinstance(x, dict)]
        if not rows:
            continue
        table = Table(title=f"{m}: every group vs {term(rows[0].get('reference'))} ({pct} "
                            f"simultaneous intervals)", title_justify="left", box=None,
                      pad_edge=False)
        table.add_column("group", no_wrap=True, overflow="ellipsis", max_width=28)
        table.add_column("rate", no_wrap=True, overflow="ellipsis", max_width=14)
        table.add_column("estimate", justify="right", no_wrap=True)
        table.add_column(f"{pct} CI", no_wrap=True)
        table.add_column("verdict", no_wrap=True)
        for x in rows:
            iv = x.get("interval") or {}
            lo, hi = iv.get("low"), iv.get("high")
            v = (decide(lo, hi, kind=s.kind, threshold=s.threshold)
                 if isinstance(lo, int | float) and isinstance(hi, int | float)
                 else "undetermined")
            est = x.get("estimate")
            table.add_row(term(x.get("group")), _SHORT.get(str(x.get("rate")), str(x.get("rate"))),
                          _f(est) if isinstance(est, int | float) else "n/a",
                          f"[{_f(float(lo))}, {_f(float(hi))}]"
                          if isinstance(lo, int | float) and isinstance(hi, int | float)
                          else "n/a",
                          v)
        console.print(table)


def print_group_audit(result: GroupAudit, console: Console) -> None:
    """Print the by-group table, the metric summaries and the query accounting."""
    from fairprobe.stats.frame import FAIRNESS_METRICS

    rates: list[str] = []
    for m in result.metrics:
        for r in FAIRNESS_METRICS[m][0]:
            if r not in rates:
                rates.append(r)
    frame = result.to_frame()
    pct = f"{result.confidence_level:.0%}"
    shown = _shown_groups(result)
    # two rates per table, so each table fits 80 columns
    for c in range(0, len(rates), 2):
        chunk = rates[c:c + 2]
        title = (f"by group ({term(', '.join(result.group_cols))}): rates with {pct} intervals "
                 f"({result.group_interval})") if c == 0 else None
        table = Table(title=title, title_justify="left", box=None, pad_edge=False)
        # a label is cut with an ellipsis, never broken mid-word (the JSON keeps it whole)
        table.add_column("group", no_wrap=True, overflow="ellipsis", max_width=28)
        table.add_column("n", justify="right")
        for r in chunk:
            table.add_column(_SHORT.get(r, r), justify="right")
            if r not in ("selection_rate", "mean_score"):
                table.add_column("of", justify="right")
            table.add_column(f"{pct} CI", justify="left", no_wrap=True)
        for i in shown:
            label = result.groups.labels[i]
            row = frame.iloc[i]
            cells: list[str] = []
            for r in chunk:
                cells.append(_f(row[r]))
                if r not in ("selection_rate", "mean_score"):
                    cells.append(str(int(row[r + "_n"])))
                cells.append(f"[{_f(row[r + '_low'])}, {_f(row[r + '_high'])}]")
            small = " *" if bool(row["too_small"]) else ""
            table.add_row(f"{term(label)}{small}", str(int(row["n"])), *cells)
        console.print(table)
    if len(shown) < result.groups.n_groups:
        console.print(f"({result.groups.n_groups - len(shown):,} more groups not shown: the "
                      "JSON (--json) lists every group)", soft_wrap=True)
    if result.groups.too_small.any():
        console.print(f"* too small (< {result.groups.min_group_size} answers): listed, left out "
                      "of the summaries", soft_wrap=True)
    console.print(f"worst pair per metric, {pct} simultaneous intervals ({result.method}):")
    for m, s in result.summaries().items():
        rule = f">= {s.threshold:g}" if s.kind == "ratio" else f"<= {s.threshold:g}"
        what = "smallest ratio" if s.kind == "ratio" else "largest gap"
        rate = f" of {_SHORT.get(s.rate, s.rate)}" if len(s.rates) > 1 else ""
        console.print(
            f"  {m}: {what}{rate} {s.estimate:.4f} ({term(s.pair[0])} vs {term(s.pair[1])})  "
            f"[{_f(s.low)}, {_f(s.high)}]  rule {rule}: {verdict_markup(s.verdict)}",
            soft_wrap=True)
        if s.reason:  # why the data do not decide, and which groups have the least evidence
            console.print(f"    why: {term(s.reason)}", soft_wrap=True)
    for m, why_not in result.not_summarised().items():
        console.print(f"  {m}: not summarised: {term(why_not)}", soft_wrap=True)
    _print_reference(result, console, pct)
    for m, s in result.summaries().items():
        left = [(g, why) for g, why in s.excluded.items() if not why.startswith("too small")]
        for g, why in left[:_MAX_LEFT_OUT_LINES]:
            console.print(f"  left out of {m}: {term(g)} ({term(why)})", soft_wrap=True)
        if len(left) > _MAX_LEFT_OUT_LINES:
            console.print(f"  left out of {m}: {len(left) - _MAX_LEFT_OUT_LINES:,} more groups "
                          "(the JSON's summaries.<metric>.excluded lists them with the reason)",
                          soft_wrap=True)
    if str(result.backend).startswith("predictions"):  # a file of decisions: no model asked
        counted = getattr(result, "counts", None) is not None
        how = "counted (every row)" if counted else f"drawn (seed {result.seed})"
        console.print(f"rows: {result.queried} {how} from the predictions; no model asked",
                      soft_wrap=True)
    else:
        console.print(
            f"queries: {result.queried} drawn (seed {result.seed}"
            + (f", allocation {alloc['method']}" if (alloc := getattr(result, "allocation", None))
               else "")
            + (f", {ad['batches']} of {ad['max_batches']} batches, {ad['queries_saved']} "
               "queries saved" if alloc and (ad := alloc.get("adaptive")) else "")
            + f"): {result.paid} paid, "
            f"{result.cached} from the cache, {result.unparsed} unusable (unparsed, refused or truncated; dropped)", soft_wrap=True)
