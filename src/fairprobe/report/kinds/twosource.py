"""Two-source audits: both DI estimates, the detectors, the checks against n_max."""

from __future__ import annotations

from collections.abc import Mapping

from fairprobe import metrics as _metrics
from fairprobe.report import assumptions as A
from fairprobe.report._read import (
    Doc,
    extra_assumptions,
    floats,
    fmt,
    fmt_interval,
    get,
    interval,
    num,
)
from fairprobe.report.document import FigureSpec, Section, Table

__all__ = ["adapt_twosource", "adapt_twosource_plan"]


def adapt_twosource(doc: Doc, source: str, label: str) -> Section:
    verdict = str(doc.get("verdict", "n/a"))
    di_a, di_b = doc.get("di_a") or {}, doc.get("di_b_proxy") or doc.get("di_b") or {}
    ea, eb = num(get(di_a, "estimate")), num(get(di_b, "estimate"))
    detectors = [d for d in doc.get("detectors") or [] if isinstance(d, Mapping)]
    fired = [str(d.get("detector")) for d in detectors if d.get("detected")]
    n_checked, n_max = doc.get("n_checked"), doc.get("n_max")
    sentence = (
        f"The audit API reports disparate impact {fmt(ea)} while the user interface read through "
        f"the {get(doc, 'proxy', 'name', default='proxy')} proxy gives {fmt(eb)}; "
        + (f"detector{'s' if len(fired) > 1 else ''} {', '.join(fired)} fired after "
           f"{fmt(n_checked)} checks: the audit API is {verdict}."
           if fired else f"no detector fired in {fmt(n_checked)} checks: {verdict}.")
    )
    short = f"audit API {verdict} ({', '.join(fired) or 'no detector'} fired after {fmt(n_checked)} checks)"
    figures = [FigureSpec(
        plot="twosource",
        data={
            _metrics.DI.short: [
                {"label": "A: audit API", "estimate": ea, "interval": interval(get(di_a, "interval"))},
                {"label": "B: UI + proxy", "estimate": eb,
                 "interval": interval(get(di_b, "interval"))},
            ],
            "threshold": num(doc.get("threshold")) or 0.8,
            "detectors": [{"name": str(d.get("detector")), "p": num(d.get("p_value")),
                           "alpha": num(d.get("alpha")), "detected": bool(d.get("detected"))}
                          for d in detectors],
            "checks": _checks_path(doc),
            "n_inconsistent": num(doc.get("n_inconsistent")),
            "n_max": num(n_max),
            "n_checked": num(n_checked),
        },
        alt=(f"Left: DI through the audit API {fmt(ea)} {fmt_interval(interval(get(di_a, 'interval')))} "
             f"and through the user interface {fmt(eb)} "
             f"{fmt_interval(interval(get(di_b, 'interval')))} vs the threshold "
             f"{fmt(doc.get('threshold'), 2)}. Middle: p-values "
             + ", ".join(f"{d.get('detector')} {fmt(d.get('p_value'))}" for d in detectors)
             + f". Right: {fmt(doc.get('n_inconsistent'))} inconsistent answers in "
               f"{fmt(n_checked)} checks against n_max {fmt(n_max)}."),
        caption=("The two DI estimates with their intervals, the detectors' p-values against "
                 "their levels, and the inconsistent checks against Lemma 2's n_max."),
    )]
    facts = [
        ("verdict", verdict),
        ("stop reason", str(doc.get("stop_reason", "n/a"))),
        ("DI via audit API (A)", f"{fmt(ea)} {fmt_interval(interval(get(di_a, 'interval')))}"),
        ("DI via user interface + proxy (B)",
         f"{fmt(eb)} {fmt_interval(interval(get(di_b, 'interval')))}"),
        ("false-alarm level", f"{fmt(doc.get('alpha'), 3)} "
                              f"({fmt(doc.get('alpha_per_detector'), 4)} per detector)"),
        ("checks", f"{fmt(n_checked)} (n_max {fmt(n_max)}, {fmt(doc.get('n_inconsistent'))} "
                   f"inconsistent)"),
        ("proxy", f"{get(doc, 'proxy', 'name', default='n/a')}: "
                  f"{get(doc, 'proxy', 'rule', default='')} (accuracy p_phi "
                  f"{fmt(get(doc, 'proxy', 'p_phi'))})"),
        ("queries", f"{fmt(get(doc, 'queries', 'paid_a'))} paid on A, "
                    f"{fmt(get(doc, 'queries', 'paid_b'))} paid on B"),
    ]
    tables = [Table(
        caption="Detectors: statistic, p-value and level",
        header=["detector", "statistic", "p-value", "level", "fired"],
        rows=[[str(d.get("detector")), fmt(d.get("statistic")), fmt(d.get("p_value"), 4),
               fmt(d.get("alpha"), 4), "yes" if d.get("detected") else "no"] for d in detectors],
    )] if detectors else []
    title = "Two-source audit" + (f": {label}" if label else "")
    return Section("twosource", title, source, verdict, sentence, short, facts, figures, tables,
                   A.TWOSOURCE + extra_assumptions(doc), [])

def _checks_path(doc: Doc) -> dict[str, list[float]] | None:
    path = doc.get("checks_path") or doc.get("path")
    if isinstance(path, Mapping):
        x = floats(path.get("checks") or path.get("n_checked"))
        y = floats(path.get("inconsistencies") or path.get("inconsistent")
                   or path.get("n_inconsistent"))
        if x and y and len(x) == len(y):
            out = {"checks": x, "inconsistent": y}
            nmax = floats(path.get("n_max"))
            if nmax and len(nmax) == len(x):
                out["n_max"] = nmax
            return out
    return None

def adapt_twosource_plan(doc: Doc, source: str, label: str) -> Section:
    n_max, p_manip = doc.get("n_max"), doc.get("p_manip")
    rows = [r for r in (doc.get("pareto") or doc.get("frontier") or [])
            if isinstance(r, Mapping)]
    parts = []
    if n_max is not None:
        parts.append(f"with {fmt(doc.get('t_fraud', doc.get('checks')))} checks Lemma 2 allows at "
                     f"most n_max = {fmt(n_max)} inconsistent answers and catches a manipulation "
                     f"with probability p_manip = {fmt(p_manip)}")
    if rows:
        parts.append(f"the budget {fmt(doc.get('budget'))} can be split {len(rows)} Pareto-optimal "
                     f"ways between the DI estimate (margin epsilon_A) and the checks (p_manip)")
    sentence = ("Plan: " + "; ".join(parts) + ".") if parts else \
        "Plan of a two-source audit (no n_max and no frontier in this result)."
    figures: list[FigureSpec] = []
    xs = [x for r in rows if (x := num(r.get("p_manip"))) is not None]
    ys = [y for r in rows if (y := num(r.get("epsilon_a"))) is not None]
    if rows and len(xs) == len(ys) == len(rows):
        best = max(rows, key=lambda r: num(r.get("p_manip")) or 0.0)
        figures.append(FigureSpec(
            plot="xy",
            data={"x": xs, "y": ys, "xlabel": "p_manip (probability to catch a manipulation)",
                  "ylabel": "epsilon_A (margin of error of DI via A)"},
            alt=(f"Pareto frontier of {len(rows)} budget splits: the margin of error of DI "
                 f"through A from {fmt(min(ys))} to {fmt(max(ys))} against the probability "
                 f"of catching a manipulation from {fmt(min(xs))} to {fmt(max(xs))} (reached "
                 f"with {fmt(best.get('t_fraud'))} checks)."),
            caption=("Pareto frontier of the budget split (Figure 4 of the two-source paper): "
                     "margin of error of the DI estimate against the chance of catching a "
                     "manipulation."),
        ))
    facts = [(k.replace("_", " "), fmt(v) if not isinstance(v, str) else v)
             for k, v in doc.items()
             if k not in ("schema", "kind", "provenance") and not isinstance(v, Mapping | list)]
    short = (f"n_max {fmt(n_max)}, p_manip {fmt(p_manip)}" if n_max is not None
             else f"{len(rows)} Pareto-optimal budget splits")
    return Section("twosource-plan", "Two-source audit plan" + (f": {label}" if label else ""),
                   source, None, sentence, short, facts, figures, [],
                   A.TWOSOURCE + extra_assumptions(doc), [])
