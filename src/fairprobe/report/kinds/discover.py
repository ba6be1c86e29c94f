"""Subgroup discovery: the reported subgroups ranked by their gap, with their intervals."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fairprobe import metrics as _metrics
from fairprobe.report._read import Doc, extra_assumptions, fmt, mapping, num
from fairprobe.report.document import FigureSpec, Section, Table

__all__ = ["adapt_discover"]

#: What the discovery's guarantee rests on (docs/discover.md).
ASSUMPTIONS = [
    "The rows are independent draws from the population the conclusion is about; a "
    "subgroup's rate is that population's.",
    "The features and the search (depth, bins, minimum size) were chosen before looking at "
    "these decisions; the bins' cut points come from the features alone.",
    "Holm (the default), the reshaped step-up and Benjamini-Yekutieli bound the expected share "
    "of false discoveries under any dependence between overlapping subgroups; "
    "Benjamini-Hochberg (if chosen) needs positive dependence.",
]


def adapt_discover(doc: Doc, source: str, label: str) -> Section:
    if isinstance(doc.get("proxy"), Mapping):
        return _adapt_proxy(doc, source, label)
    subs = [s for s in doc.get("subgroups") or [] if isinstance(s, Mapping)]
    tol, fdr = num(doc.get("tolerance")), num(doc.get("fdr"))
    tested = doc.get("tested")
    metric = str(doc.get("metric", _metrics.DP.short))
    verdict = "unfair" if subs else "undetermined"
    if subs:
        sentence = (f"{len(subs)} of {tested} subgroups differ from the rest by more than "
                    f"{fmt(tol, 3)} in {metric}; the expected share of false discoveries "
                    f"among them is at most {fmt(fdr, 3)} ({doc.get('guarantee')}).")
    else:
        sentence = (f"No subgroup of {tested} is proven to differ from the rest by more than "
                    f"{fmt(tol, 3)} in {metric} at FDR {fmt(fdr, 3)}: undetermined (finding "
                    "none is not evidence that none exists).")
    control = doc.get("control") if isinstance(doc.get("control"), Mapping) else None
    if control:
        sentence += (f" Each gap is the one left within the {fmt(control.get('strata'))} strata "
                     f"of {', '.join(map(str, control.get('columns') or []))} (legitimate "
                     f"factors): {control.get('construction')}.")
    short = f"{len(subs)} unfair subgroup(s) at FDR {fmt(fdr, 3)}"
    rows = [{"label": str(s.get("label")), "estimate": num(s.get("estimate")),
             "interval": [num((s.get("interval") or {}).get("low")),
                          num((s.get("interval") or {}).get("high"))],
             "verdict": str(s.get("verdict"))} for s in subs[:30]]
    figures = []
    if rows:
        figures.append(FigureSpec(
            plot="estimates",
            data={"rows": rows, "band": {"low": -(tol or 0.0), "high": tol or 0.0},
                  "xlabel": f"{metric}: subgroup minus the rest"},
            alt=("Gap of each reported subgroup to the rest, with its interval: " + "; ".join(
                f"{r['label']} {fmt(r['estimate'])}" for r in rows) + "."),
            caption=(f"The reported subgroups (at most 30), their gap to the rest and its exact "
                     f"interval, against the fair band |gap| <= {fmt(tol, 3)}."),
        ))
    tables = [Table(
        caption="Subgroups reported, ranked by the size of the gap",
        header=["subgroup", "rows", "rate", "rest", "gap", "interval", "adjusted p"]
        + (["gap without controls"] if control else []),
        rows=[[str(s.get("label")), fmt(s.get("size")), fmt(s.get("rate")),
               fmt(s.get("rate_rest")), fmt(s.get("estimate")),
               f"[{fmt((s.get('interval') or {}).get('low'))}, "
               f"{fmt((s.get('interval') or {}).get('high'))}]", fmt(s.get("adjusted_p"), 3)]
              + ([fmt(s.get("unadjusted_estimate"))] if control else [])
              for s in subs],
    )] if subs else []
    facts = [("metric", metric), ("tolerance", fmt(tol, 3)), ("FDR", fmt(fdr, 3)),
             ("method", str(doc.get("method"))), ("subgroups tested", fmt(tested)),
             ("too small to test", fmt(doc.get("too_small"))), ("rows", fmt(doc.get("rows"))),
             ("depth", fmt(doc.get("depth"))),
             ("features", ", ".join(map(str, doc.get("features") or [])))]
    if control:
        facts.append(("controls", f"{', '.join(map(str, control.get('columns') or []))} "
                                  f"({fmt(control.get('strata'))} strata)"))
    title = "Subgroup discovery" + (f": {label}" if label else "")
    return Section("discover", title, source, verdict, sentence, short, facts, figures, tables,
                   ASSUMPTIONS + extra_assumptions(doc), [])


def _adapt_proxy(doc: Doc, source: str, label: str) -> Section:
    """A discovery by proxied race (``discover --proxy``): each reported slice and race pair
    with its bounds (decide) and weighted estimate (shown, not counted), the match rates once,
    and what the bounds assume."""
    from fairprobe.report.kinds.proxy import match_sentence

    px = mapping(doc.get("proxy"))
    subs = [s for s in doc.get("subgroups") or [] if isinstance(s, Mapping)]
    tol, fdr = num(doc.get("tolerance")), num(doc.get("fdr"))
    method = str(px.get("method", "bisg")).upper()
    verdict = "unfair" if subs else "undetermined"
    what = (f"race gaps in approval rate ({', '.join(map(str, px.get('groups') or []))} vs "
            f"{px.get('reference')}) within {fmt(doc.get('tested'))} slices, race estimated by "
            f"{method}")
    sentence = (f"{len(subs)} of {fmt(px.get('comparisons'))} {what}, lie beyond "
                f"{fmt(tol, 3)} on the bounds; {px.get('guarantee')}." if subs else
                f"No slice of {what}, is proven beyond {fmt(tol, 3)} on the bounds: "
                "undetermined (finding none is not evidence that none exists).")
    rows = []
    for s in subs:
        b, w = mapping(s.get("bounds")), mapping(s.get("weighted"))
        got = b.get("region")
        reg: list[Any] = list(got) if isinstance(got, list) and len(got) == 2 else [None, None]
        rows.append([str(s.get("slice")), f"{s.get('group')} - {s.get('reference')}",
                     fmt(s.get("size")), f"[{fmt(reg[0], 3)}, {fmt(reg[1], 3)}]",
                     f"[{fmt(b.get('low'), 3)}, {fmt(b.get('high'), 3)}] at "
                     f"{fmt(b.get('level'), 4)}", fmt(w.get("estimate"), 3),
                     fmt(s.get("adjusted_p"), 3)])
    tables = [Table(caption=("Slices reported: the identification region, its confidence "
                             "interval (decides), the proxy-weighted estimate (shown, not "
                             "counted)"),
                    header=["slice", "gap", "rows", "region", "bounds interval", "weighted",
                            "adjusted p"], rows=rows)] if rows else []
    a = mapping(px.get("assumptions"))
    assumptions = [f"Bounds (decide the verdict): {a.get('bounds', '')}.",
                   f"Slices: {a.get('slices', '')}.",
                   f"Weighted estimate: {a.get('weighted', '')}.", ASSUMPTIONS[0], ASSUMPTIONS[1]]
    if a.get("in_bounds"):
        assumptions.insert(2, f"Recorded races in the bounds: {a['in_bounds']}.")
    notes = [match_sentence(mapping(px.get("match")))]
    facts = [("proxy", method), ("tolerance", fmt(tol, 3)), ("family-wise error", fmt(fdr, 3)),
             ("slices tested", fmt(doc.get("tested"))),
             ("too small to test", fmt(doc.get("too_small"))), ("rows", fmt(doc.get("rows"))),
             ("depth", fmt(doc.get("depth"))),
             ("features", ", ".join(map(str, doc.get("features") or [])))]
    title = f"Subgroup discovery by proxied race ({method})" + (f": {label}" if label else "")
    return Section("discover", title, source, verdict, sentence,
                   f"{len(subs)} unfair slice x race gap(s) on the bounds", facts, [], tables,
                   assumptions + extra_assumptions(doc), notes)
