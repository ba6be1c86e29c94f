"""Sequential audits: the statistic path against its boundaries, the confidence sequence."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fairprobe.report import assumptions as A
from fairprobe.report._read import (
    Doc,
    extra_assumptions,
    floats,
    fmt,
    fmt_interval,
    get,
    interval,
    mapping,
    num,
    pct,
)
from fairprobe.report.document import FigureSpec, Section, Table
from fairprobe.report.kinds.audit import metric_label

__all__ = ["adapt_sequential"]


def adapt_sequential(doc: Doc, source: str, label: str) -> Section:
    outcome = str(doc.get("outcome", "inconclusive"))
    verdict = {"violation": "unfair", "compliant": "fair", "compliance": "fair"}.get(
        outcome, "undetermined")
    queries = doc.get("queries")
    metric = metric_label(doc.get("metric", "gap"))
    tol = num(doc.get("tolerance"))
    test = str(doc.get("test", "n/a"))
    alpha, beta = num(doc.get("alpha")), num(doc.get("beta"))
    gap = num(doc.get("gap_estimate"))
    access = doc.get("access")
    sentence = (
        f"The sequential {test.upper()} test of the {metric} stopped with '{outcome}' after "
        f"{fmt(queries)} queries (H0: |gap| <= {fmt(tol, 2)}; alpha {fmt(alpha, 2)}, "
        f"beta {fmt(beta, 2)}; gap estimate {fmt(gap)}): {verdict}."
    )
    short = f"{outcome} after {fmt(queries)} queries"
    if access:
        short += f" ({access} access)"
    figures: list[FigureSpec] = []
    notes: list[str] = []
    path = mapping(doc.get("path"))
    q = floats(path.get("query")) if path else None
    bounds = mapping(doc.get("boundaries"))
    stats: dict[str, list[float]] = {}
    for k in ("statistic_upper", "statistic_lower", "statistic", "wealth", "log_wealth"):
        ys = floats(path.get(k))
        if ys is not None and q and len(ys) == len(q):
            stats[k] = ys
    if q and stats:
        figures.append(FigureSpec(
            plot="sequential_path",
            data={"query": q, "stats": stats, "upper": num(bounds.get("upper")),
                  "lower": num(bounds.get("lower")), "outcome": outcome},
            alt=(f"The test statistic over {len(q)} queries against its boundaries "
                 f"(upper {fmt(num(bounds.get('upper')))}, lower "
                 f"{fmt(num(bounds.get('lower')))}); it ends at "
                 f"{fmt(next(iter(stats.values()))[-1])}: {outcome}."),
            caption="The test statistic's path against its stopping boundaries.",
        ))
    else:
        notes.append("This result carries no statistic path: no path figure.")
    cs = _confidence_sequence(doc, path)
    if cs is not None:
        figures.append(FigureSpec(
            plot="confidence_sequence",
            data={**cs, "tolerance": tol},
            alt=(f"Confidence sequence of the gap over {len(cs['query'])} queries; at the end it "
                 f"is [{fmt(cs['low'][-1])}, {fmt(cs['high'][-1])}] with estimate "
                 f"{fmt(cs['estimate'][-1]) if cs.get('estimate') else 'n/a'}; the compliance "
                 f"band is +/-{fmt(tol, 2)}."),
            caption=("Confidence sequence of the gap over queries (valid at every query "
                     "simultaneously if the test is anytime-valid), against the band +/- delta."),
        ))
    else:
        notes.append("This result carries no confidence sequence of the gap (fields "
                     "'confidence_sequence' or path 'cs_low'/'cs_high'): no interval figure; the "
                     "naive interval at the stopping time is in the facts table.")
    groups = mapping(doc.get("groups"))
    facts = [
        ("test", f"{test} ({'anytime-valid' if doc.get('anytime_valid') else 'not anytime-valid'})"),
        ("metric", metric),
        ("access", str(access or "n/a")),
        ("likelihood", str(doc.get("likelihood", "n/a"))),
        ("outcome", outcome),
        ("queries", f"{fmt(queries)} of budget {fmt(doc.get('budget'))} "
                    f"({fmt(doc.get('queries_paid', 'n/a'))} paid, "
                    f"{fmt(doc.get('queries_cached', 'n/a'))} from the cache)"),
        ("gap estimate", fmt(gap)),
        ("naive 95% interval at stop", fmt_interval(interval(doc.get("gap_interval_naive")))),
    ]
    outcomes = doc.get("outcomes")
    tables = []
    if groups:
        tables.append(Table(
            caption="Answers per group at the stopping time",
            header=["group", "answers", "mean"],
            rows=[[str(g), fmt(get(v, "n")), fmt(get(v, "mean"))] for g, v in groups.items()],
        ))
    if isinstance(outcomes, Mapping) and num(doc.get("repeats") or 0):
        tables.append(Table(
            caption="Share of outcomes over repeated query orders",
            header=["outcome", "share"],
            rows=[[str(k), pct(v)] for k, v in outcomes.items()],
        ))
    assumptions = list(A.SEQUENTIAL_ANYTIME if doc.get("anytime_valid") else A.SEQUENTIAL_GLR)
    title = "Sequential audit" + (f": {label}" if label else "")
    return Section("sequential", title, source, verdict, sentence, short, facts, figures, tables,
                   assumptions + extra_assumptions(doc), notes)

def _confidence_sequence(doc: Doc, path: Mapping[str, Any]) -> dict[str, Any] | None:
    cs = doc.get("confidence_sequence")
    if isinstance(cs, Mapping):
        q = floats(cs.get("query") or cs.get("queries") or cs.get("t"))
        lo, hi = floats(cs.get("low")), floats(cs.get("high"))
        est = floats(cs.get("estimate") or cs.get("gap"))
    else:
        q = floats(path.get("query")) if path else None
        lo = floats(path.get("cs_low")) if path else None
        hi = floats(path.get("cs_high")) if path else None
        est = floats(path.get("gap") or path.get("gap_estimate")) if path else None
    if not q or not lo or not hi or not len(q) == len(lo) == len(hi):
        return None
    return {"query": q, "low": lo, "high": hi,
            "estimate": est if est and len(est) == len(q) else None}
