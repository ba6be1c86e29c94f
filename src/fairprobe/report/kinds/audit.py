"""Fixed-budget audits: by-group rates with intervals, the metric against the fair band.

Two shapes are read:

* two groups (``metric``: one metric with ``groups`` a/b and raw ``counts``; legacy and current
  two-group audits): the by-group bars come from the result's ``by_group`` table if present,
  else from the counts with Wilson intervals computed here (and labelled as such);
* any number of groups (``summaries``: one entry per metric with the rate it compares, the
  largest gap's ``pair`` and simultaneous interval; ``by_group``: per group, per rate, value, n
  and interval): one figure per metric.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fairprobe import metrics as _metrics
from fairprobe.report import assumptions as A
from fairprobe.report._read import (
    Doc,
    extra_assumptions,
    fmt,
    fmt_interval,
    get,
    interval,
    mapping,
    num,
    wilson,
)
from fairprobe.report.document import FigureSpec, Section, Table

__all__ = ["adapt_audit", "metric_label"]

_METRIC_NAMES = {
    **{m.name: m.label for m in _metrics.METRICS.values() if m.label},
    # the sequential test's own names of its two criteria
    "sp": "statistical parity gap",
    _metrics.EO.short: "equal opportunity gap",
}

_RATE_NAMES = {r.name: r.label for r in _metrics.RATES.values()}


def metric_label(name: Any) -> str:
    return _METRIC_NAMES.get(str(name), str(name).replace("_", " "))


def _rate_label(name: Any) -> str:
    return _RATE_NAMES.get(str(name), str(name).replace("_", " "))


def _rows_from_table(table: Any, rate: str | None) -> list[dict[str, Any]]:
    """Per-group rows ``{group, rate, low, high, n, method}`` of a ``by_group`` table."""
    if isinstance(table, Mapping):
        table = [dict(v, group=k) if isinstance(v, Mapping) else {"group": k, "rate": v}
                 for k, v in table.items()]
    rows: list[dict[str, Any]] = []
    for r in table if isinstance(table, list) else []:
        if not isinstance(r, Mapping):
            continue
        entry: Mapping[str, Any] = r
        rates = mapping(r.get("rates"))
        if rates:
            entry = mapping(rates.get(rate or "selection_rate"))
            if not entry:
                continue
        value = num(entry.get("rate", entry.get("value", entry.get("estimate",
                                                                   entry.get("selection_rate")))))
        if value is None:
            continue
        iv = interval(entry.get("interval") or entry.get("ci"))
        rows.append({"group": str(r.get("group", r.get("name", "?"))), "rate": value,
                     "low": iv[0] if iv else None, "high": iv[1] if iv else None,
                     "n": entry.get("n", r.get("n", r.get("count"))),
                     "method": get(entry, "interval", "method") or "",
                     "too_small": bool(r.get("too_small"))})
    return rows


def _rows_from_counts(metric: Doc) -> list[dict[str, Any]]:
    counts, groups = mapping(metric.get("counts")), mapping(metric.get("groups"))
    rows = []
    for side, total_key in (("a", "A"), ("b", "B")):
        k, n = num(counts.get(side)), num(counts.get(total_key))
        if k is None or not n:
            continue
        lo, hi = wilson(k, n)
        rows.append({"group": str(groups.get(side, side)), "rate": k / n, "low": lo, "high": hi,
                     "n": int(n), "method": "wilson (computed for this report)",
                     "too_small": False})
    return rows


def _views(doc: Doc) -> list[dict[str, Any]]:
    """One view per metric: name, kind, estimate, interval, threshold, verdict, pair, by-group."""
    views = []
    summaries = doc.get("summaries")
    if isinstance(summaries, Mapping) and summaries:
        for name, s in summaries.items():
            if not isinstance(s, Mapping):
                continue
            rate = s.get("rate")
            views.append({
                "name": str(s.get("metric", name)), "kind": str(s.get("kind", "difference")),
                "estimate": num(s.get("estimate")), "interval": interval(s.get("interval")),
                "method": get(s, "interval", "method") or "",
                "level": num(get(s, "interval", "level")) or num(doc.get("confidence_level")),
                "threshold": num(s.get("threshold")), "verdict": str(s.get("verdict", "n/a")),
                "pair": [str(x) for x in s.get("pair") or []], "rate": rate,
                "rows": _rows_from_table(doc.get("by_group"), rate),
                "excluded": mapping(s.get("excluded")),
                "family_size": s.get("family_size"),
                "vs_rest": [x for x in s.get("vs_rest") or [] if isinstance(x, Mapping)],
                "vs_reference": [x for x in s.get("vs_reference") or []
                                 if isinstance(x, Mapping)],
                "more_queries": mapping(s.get("more_queries")),
            })
        return views
    metric = mapping(doc.get("metric")) or doc
    groups = mapping(metric.get("groups"))
    rows = _rows_from_table(doc.get("by_group") or metric.get("by_group"), None)
    views.append({
        "name": str(metric.get("metric", "metric")), "kind": str(metric.get("kind", "difference")),
        "estimate": num(metric.get("estimate")), "interval": interval(metric.get("interval")),
        "method": str(metric.get("method") or get(metric, "interval", "method") or ""),
        "level": num(metric.get("confidence_level") or get(metric, "interval", "level")),
        "threshold": num(metric.get("threshold")),
        "verdict": str(metric.get("verdict") or doc.get("verdict") or "undetermined"),
        "pair": [str(groups[k]) for k in ("a", "b") if k in groups], "rate": "selection_rate",
        "rows": rows or _rows_from_counts(metric), "excluded": {}, "family_size": None,
        "point_verdict": metric.get("point_verdict"),
    })
    return views


def _band(v: dict[str, Any]) -> dict[str, Any]:
    thr = v["threshold"]
    if thr is None:
        return {}
    if v["kind"] == "ratio":
        return {"kind": "ratio", "low": thr, "high": None}  # one-sided: ratio >= threshold
    return {"kind": "difference", "low": -thr, "high": thr}


def _rule(v: dict[str, Any]) -> str:
    thr = v["threshold"]
    if thr is None:
        return "n/a"
    if v["kind"] == "ratio":
        return f"fair if the ratio is at least {fmt(thr, 2)} (the 80% rule)"
    return f"fair if |difference| is at most {fmt(thr, 3)}"


def _figure(v: dict[str, Any]) -> FigureSpec:
    level = v["level"] or 0.95
    label = metric_label(v["name"])
    rows = v["rows"]
    rates = "; ".join(f"{r['group']} {fmt(r['rate'])} {fmt_interval((r['low'], r['high']))}"
                      if r["low"] is not None else f"{r['group']} {fmt(r['rate'])}" for r in rows)
    band = _band(v)
    pair = f" ({v['pair'][0]} vs {v['pair'][1]})" if len(v["pair"]) == 2 else ""
    return FigureSpec(
        plot="audit",
        data={"groups": _drawn(rows, v["pair"]), "n_groups": len(rows), "estimate": v["estimate"], "interval": v["interval"], "band": band,
              "metric": label, "pair": pair.strip(" ()"), "verdict": v["verdict"],
              "level": level, "rate": _rate_label(v["rate"]), "excluded": list(v["excluded"])},
        alt=(f"Left: {_rate_label(v['rate'])} per group with {level:.0%} intervals ({rates}). "
             f"Right: the {label}{pair} {fmt(v['estimate'])} with interval "
             f"{fmt_interval(v['interval'])} against the fair band "
             + (fmt_interval((band["low"], band["high"])) if band.get("high") is not None
                else _rule(v)) + f": {v['verdict']}."),
        caption=(f"{_rate_label(v['rate']).capitalize()} by group (bars, {level:.0%} intervals) "
                 f"and the {label}{pair} against the fair band (shaded): {v['verdict']}."),
    )


def _drawn(rows: list[dict[str, Any]], pair: list[str]) -> list[dict[str, Any]]:
    """At most ``MAX_GROUPS`` rows for the figure, the compared pair always among them (the
    figure says how many it shows; the table lists every group)."""
    from fairprobe.report.figures import MAX_GROUPS

    if len(rows) <= MAX_GROUPS:
        return rows
    keep = {i for i, r in enumerate(rows) if r["group"] in pair}
    for i in range(len(rows)):
        if len(keep) >= MAX_GROUPS:
            break
        keep.add(i)
    return [rows[i] for i in sorted(keep)]


def _sentence(v: dict[str, Any]) -> str:
    level = v["level"] or 0.95
    where = {"fair": "entirely inside", "unfair": "entirely outside"}.get(
        v["verdict"], "across the edge of")
    pair = f" of {v['pair'][0]} vs {v['pair'][1]}" if len(v["pair"]) == 2 else ""
    largest = "largest " if v["family_size"] else ""
    return (f"The {largest}{metric_label(v['name'])}{pair} is {fmt(v['estimate'])} "
            f"({level:.0%} interval {fmt_interval(v['interval'])}"
            f"{', ' + v['method'] if v['method'] else ''}), {where} the fair band: "
            f"{v['verdict']}.")


def adapt_audit(doc: Doc, source: str, label: str) -> Section:
    views = _views(doc)
    verdicts = [v["verdict"] for v in views]
    verdict = str(doc.get("verdict") or ("unfair" if "unfair" in verdicts else
                                         "fair" if verdicts and set(verdicts) == {"fair"}
                                         else "undetermined"))
    sentence = " ".join(_sentence(v) for v in views)
    short = f"{verdict}: " + "; ".join(
        f"{metric_label(v['name'])} {fmt(v['estimate'])} {fmt_interval(v['interval'])}"
        for v in views)
    figures, notes, tables = [], [], []
    gc = doc.get("group_col") or doc.get("sensitive_features") or "group"
    group_col = " x ".join(map(str, gc)) if isinstance(gc, list) else str(gc)
    many = len(views) > 1
    drawn_rates: set[str] = set()
    tabled_rates: set[str] = set()
    for v in views:
        # several metrics: each per-group rate is drawn and tabled once (DP and DI share the
        # selection rate), the metrics themselves in the small multiples below
        rate = str(v["rate"])
        if v["rows"] or (v["estimate"] is not None and v["interval"] is not None):
            if not many or rate not in drawn_rates:
                figures.append(_figure(v))
                drawn_rates.add(rate)
        else:
            notes.append(f"The {metric_label(v['name'])} carries no estimate with an interval "
                         f"and no by-group rates: no figure.")
        if v["rows"] and many and rate in tabled_rates:
            v = dict(v, rows=[])
        tabled_rates.add(rate)
        if v["rows"]:
            lvl = v["level"] or 0.95
            tables.append(Table(
                caption=f"{_rate_label(v['rate']).capitalize()} by group ({group_col})",
                header=["group", "records", "rate", f"{lvl:.0%} interval", "interval method"],
                rows=[[r["group"] + (" (too small, not compared)" if r["too_small"] else ""),
                       fmt(r["n"]) if r["n"] is not None else "n/a", fmt(r["rate"]),
                       fmt_interval((r["low"], r["high"]) if r["low"] is not None else None),
                       str(r["method"])] for r in v["rows"]],
            ))
        for g, why in v["excluded"].items():
            if not many:
                notes.append(f"{metric_label(v['name'])}: group {g} excluded ({why}).")
        more = v.get("more_queries") or {}
        if v["verdict"] == "undetermined" and more.get("budget") is not None:
            notes.append(f"{metric_label(v['name']).capitalize()} undetermined: about "
                         f"{fmt(more.get('more'))} more queries ({fmt(more.get('budget'))} in "
                         f"all) would likely decide it ({more.get('target')} with probability "
                         f"{fmt(more.get('power'))} if {more.get('assumes')}; "
                         f"{more.get('method')}).")
    facts: list[tuple[str, str]] = []
    for v in views:
        lvl = v["level"] or 0.95
        name = metric_label(v["name"])
        facts += [
            (name, f"{fmt(v['estimate'])} {fmt_interval(v['interval'])} ({lvl:.0%}"
                   f"{', ' + v['method'] if v['method'] else ''}): {v['verdict']}"),
            (f"{name}: rule", _rule(v)),
        ]
        if v.get("family_size"):
            facts.append((f"{name}: comparisons covered simultaneously", fmt(v["family_size"])))
        if v.get("point_verdict"):
            facts.append((f"{name}: verdict of the estimate alone", str(v["point_verdict"])))
    facts += [
        ("queries", f"{fmt(doc.get('queried', 'n/a'))} drawn, {fmt(doc.get('paid', 'n/a'))} "
                    f"paid, {fmt(doc.get('cached', 'n/a'))} from the cache, "
                    f"{fmt(doc.get('unparsed', 0))} unparsed"),
        ("model", str(doc.get("backend") or get(doc, "provenance", "backend", "identity")
                      or "n/a")),
    ]
    alloc = doc.get("allocation")
    if isinstance(alloc, Mapping) and alloc.get("method"):
        per = alloc.get("queries_by_group")
        split = (", ".join(f"{g} {fmt(n)}" for g, n in per.items())
                 if isinstance(per, Mapping) else "")
        facts.append(("allocation", str(alloc["method"]) + (f" ({split})" if split else "")))
        ad = alloc.get("adaptive")
        if isinstance(ad, Mapping):
            facts.append(("adaptive batches", f"{fmt(ad.get('batches'))} of "
                          f"{fmt(ad.get('max_batches'))}: {fmt(ad.get('queries_spent'))} queries "
                          f"spent, {fmt(ad.get('queries_saved'))} saved ({ad.get('stopped')})"))
    for key in ("min_group_size", "simultaneous_method", "group_interval", "reference"):
        if doc.get(key) is not None:
            facts.append((key.replace("_", " "), fmt(doc[key]) if not isinstance(doc[key], str)
                          else doc[key]))
    if many:
        out = sorted({g for v in views for g in v["excluded"]})
        if out:
            notes.append("Not compared in some metrics (too few instances; the grid says which): "
                         + ", ".join(out) + ".")
    if many:  # the grid holds every by-group number: one chart of the rates, one of the metrics
        figures[:] = [f for f in figures if f.plot != "audit"]
        tables[:] = [t for t in tables if not t.caption.endswith(f"by group ({group_col})")]
        figures[0:0] = [_rates_figure(views)] + _multiples(views)
    sentence += _llm_extras(doc, views, figures, tables, facts, notes)
    for c in doc.get("control") or []:  # the gap within strata of legitimate factors
        if not isinstance(c, Mapping) or not c.get("finding"):
            continue
        header, rows = control_rows(c)
        tables.append(Table(
            caption=f"{_rate_label(c.get('rate')).capitalize()} within strata of "
                    f"{', '.join(map(str, c.get('controls') or []))} (shown, not counted in the "
                    "headline: a different question, asked with legitimate factors held fixed)",
            header=header, rows=rows))
        notes.extend(control_lines(c))
    ppi = doc.get("ppi")
    if isinstance(ppi, Mapping):  # PPI++ from a label proxy on every row
        for m in ppi.get("metrics") or []:
            header, rows = ppi_rows(m)
            tables.append(Table(
                caption=f"{_rate_label(m.get('rate')).capitalize()} by PPI++ from the label "
                        f"proxy {ppi.get('proxy_col')} (asymptotic intervals: shown, not counted "
                        "in the headline)", header=header, rows=rows))
        notes.extend(ppi_lines(ppi))
    title = _title(doc, views) + (f": {label}" if label else "")
    sec = Section("audit", title, source, verdict, sentence, short, facts, figures, tables,
                  A.AUDIT + extra_assumptions(doc), notes)
    if many and any(v["rows"] for v in views):
        sec.grid = grid_table(views, group_col, doc.get("reference"))
    return sec


def _rates_figure(views: list[dict[str, Any]]) -> FigureSpec:
    """Small multiples of the per-group rates: one panel per rate, each drawn once."""
    panels, seen = [], set()
    for v in views:
        if v["rate"] in seen or not v["rows"]:
            continue
        seen.add(v["rate"])
        panels.append({"rate": _rate_label(v["rate"]), "groups": v["rows"]})
    level = next((v["level"] for v in views if v["level"]), 0.95)
    return FigureSpec(
        plot="rates", data={"panels": panels},
        alt="Per-group rates with their intervals: " + "; ".join(
            f"{p['rate']}: " + ", ".join(f"{g['group']} {fmt(g['rate'])}" for g in p["groups"])
            for p in panels) + ".",
        caption=f"Each per-group rate behind the metrics, with {level:.0%} intervals "
                "(grey: too small to compare).")


def _multiples(views: list[dict[str, Any]]) -> list[FigureSpec]:
    """Small multiples: every metric's estimate and simultaneous interval against its band,
    one panel per kind (differences share the band of +-tolerance, ratios the floor)."""
    out = []
    for kind in ("difference", "ratio"):
        vs = [v for v in views if v["kind"] == kind and v["estimate"] is not None]
        if not vs:
            continue
        ths = {v["threshold"] for v in vs}
        band = _band(vs[0]) if len(ths) == 1 else {}
        rows = [{"label": metric_label(v["name"]), "estimate": v["estimate"],
                 "interval": v["interval"], "verdict": v["verdict"]} for v in vs]
        what = "largest gap between groups" if kind == "difference" else "smallest ratio"
        out.append(FigureSpec(
            plot="estimates",
            data={"rows": rows, "band": band, "xlabel": what},
            alt=(f"The {what} of each metric with its simultaneous interval: " + "; ".join(
                f"{r['label']} {fmt(r['estimate'])} {fmt_interval(r['interval'])} "
                f"({r['verdict']})" for r in rows) + "."),
            caption=(f"Every {kind} metric at once: the {what} and its simultaneous interval "
                     f"against the fair band" + (" (shaded)" if band else "") + "."),
        ))
    return out


def grid_table(views: list[dict[str, Any]], group_col: str, reference: Any) -> Table:
    """The group x metric grid: each group's rate and interval, and its comparison with the
    reference group (when one is chosen) or with the rest, with the verdict of that
    comparison's simultaneous interval against the metric's threshold."""
    from fairprobe.stats.finding import decide

    # lookups by group, not a scan per group: with thousands of groups a scan is quadratic
    groups = list(dict.fromkeys(r["group"] for v in views for r in v["rows"]))
    ref = str(reference) if reference is not None else None

    def first_by_group(items: Any, rate: Any) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        for x in items or []:
            if x.get("rate") == rate:
                out.setdefault(str(x.get("group")), x)
        return out

    by_row: list[dict[str, dict[str, Any]]] = [{} for _ in views]
    for d, v in zip(by_row, views, strict=True):
        for x in v["rows"]:
            d.setdefault(x["group"], x)
    vs_ref = [first_by_group(v.get("vs_reference") if ref else None, v["rate"]) for v in views]
    vs_rest = [first_by_group(v.get("vs_rest"), v["rate"]) for v in views]
    header = [group_col] + [metric_label(v["name"]) for v in views]
    rows, classes = [], []
    for g in groups:
        row, cls = [g + (" (reference)" if g == ref else "")], [""]
        for vi, v in enumerate(views):
            r = by_row[vi].get(g)
            if r is None:
                row.append("n/a")
                cls.append("")
                continue
            text = f"{fmt(r['rate'], 2)} {fmt_interval((r['low'], r['high']), 2)}" \
                if r["low"] is not None else fmt(r["rate"], 2)
            if r["n"] is not None:
                text += f" n={fmt(r['n'])}"
            c0 = vs_ref[vi].get(g) or vs_rest[vi].get(g)
            comp = [c0] if c0 is not None else []
            verdict = ""
            if r["too_small"] or g in v["excluded"]:
                text += "; not compared"
            elif comp:
                c = comp[0]
                iv = interval(c.get("interval"))
                what = f"vs {ref}" if ref and v.get("vs_reference") else "vs rest"
                text += f"; {what} {fmt(num(c.get('estimate')), 2)} {fmt_interval(iv, 2)}"
                if iv is not None and v["threshold"] is not None:
                    verdict = decide(iv[0], iv[1], kind=v["kind"], threshold=v["threshold"])
                    text += f" ({verdict})"
            row.append(text)
            cls.append(f"v-{verdict}" if verdict else "")
        rows.append(row)
        classes.append(cls)
    return Table(
        caption=(f"Groups x metrics: each {group_col} group's rate with its interval, and its "
                 f"comparison with " + (f"the reference {ref}" if ref else "the rest")
                 + " (simultaneous interval, coloured by its verdict against the threshold)"),
        header=header, rows=rows, classes=classes)


def _title(doc: Doc, views: list[dict[str, Any]]) -> str:
    """What was audited: the metrics, the groups and the model (an LLM, a served model, a
    predictions file), e.g. ``Demographic parity difference by sex of LLM gpt-x``."""
    names = list(dict.fromkeys(metric_label(v["name"]) for v in views))
    what = ", ".join(names) if len(names) <= 2 else f"{len(names)} metrics"
    what = what or "Audit"
    what = what[:1].upper() + what[1:]
    cols = doc.get("group_col")
    by = ", ".join(map(str, cols)) if isinstance(cols, list) else (str(cols) if cols else "")
    backend = mapping(get(doc, "provenance", "backend")) or {}
    kind = str(backend.get("kind") or "")
    model = backend.get("model_id") or (mapping(backend.get("llm")) or {}).get("model")
    who = {"openai-chat": "LLM", "predictions": "predictions"}.get(kind, "model")
    if kind == "predictions":
        model = backend.get("file")
    return (f"{what}" + (f" by {by}" if by else "") + f" of {who}"
            + (f" {model}" if model else (f" ({kind})" if kind and who == "model" else "")))


def _llm_extras(doc: Doc, views: list[dict[str, Any]], figures: list[FigureSpec],
                tables: list[Table], facts: list[tuple[str, str]], notes: list[str]) -> str:
    """Answer outcomes per group, prompt sensitivity and the name-swap test (LLM audits)."""
    extra = ""
    outcomes = mapping(doc.get("outcomes_by_group"))
    if outcomes:
        kinds = ["ok", "unparsed", "refused", "truncated"]
        tables.append(Table(
            caption="Answer outcomes per group (unparsed, refused and truncated answers are "
                    "not counted in the metric)",
            header=["group", *kinds],
            rows=[[str(g), *[fmt(get(v, k, default=0)) for k in kinds]]
                  for g, v in outcomes.items()],
        ))
    ns = mapping(doc.get("name_swap"))
    if ns:
        iv = interval(ns.get("interval"))
        facts.append((f"name swap ({ns.get('field', 'name')})",
                      f"{fmt(ns.get('n_flips'))} of {fmt(ns.get('n_usable'))} usable pairs flip: "
                      f"rate {fmt(ns.get('flip_rate'))} {fmt_interval(iv)}"))
        extra += (f" Swapping the first name to the other sex flips {fmt(ns.get('flip_rate'))} "
                  f"{fmt_interval(iv)} of the decisions.")
    pv = mapping(doc.get("prompt_variation"))
    variants = [v for v in pv.get("variants") or [] if isinstance(v, Mapping)]
    if variants:
        agree = bool(pv.get("verdicts_agree"))
        extra += (f" Across {len(variants)} prompt wordings the verdicts "
                  f"{'agree' if agree else 'DISAGREE'} (spread of the estimate "
                  f"{fmt(pv.get('spread'))}).")
        if not agree:
            notes.append("The verdict depends on the prompt's wording: see the prompt "
                         "sensitivity table.")
        band = _band(views[0]) if views else {}
        figures.append(FigureSpec(
            plot="estimates",
            data={"rows": [{"label": str(v.get("name")), "estimate": num(v.get("estimate")),
                            "interval": interval(v.get("interval")),
                            "verdict": str(v.get("verdict"))} for v in variants],
                  "band": band, "xlabel": metric_label(views[0]["name"]) if views else "metric"},
            alt=("Estimate per prompt wording: " + ", ".join(
                f"{v.get('name')} {fmt(v.get('estimate'))} "
                f"{fmt_interval(interval(v.get('interval')))} ({v.get('verdict')})"
                for v in variants) + "."),
            caption="The estimate and its interval for each prompt wording, against the fair "
                    "band: does the verdict survive a rewording?",
        ))
        tables.append(Table(
            caption="Prompt sensitivity: the audit rerun with each prompt wording",
            header=["prompt", "estimate", "interval", "verdict", "unparsed"],
            rows=[[str(v.get("name")), fmt(v.get("estimate")),
                   fmt_interval(interval(v.get("interval"))), str(v.get("verdict")),
                   fmt(v.get("unparsed", 0))] for v in variants],
        ))
    return extra


def ppi_rows(m: Mapping[str, Any]) -> tuple[list[str], list[list[str]]]:
    """The per-group table of one PPI++ metric: labelled and unlabelled rows, lambda, the
    PPI++ rate and interval, the labelled-only one beside it."""
    header = ["group", "labelled", "unlabelled", "lambda", "rate (PPI++)", "interval",
              "labelled only", "interval (labelled only)"]
    rows = []
    for g, r in mapping(m.get("groups")).items():
        r = mapping(r)
        rows.append([str(g), fmt(r.get("n_labelled")), fmt(r.get("n_unlabelled")),
                     fmt(r.get("lambda"), 3), fmt(r.get("estimate"), 4),
                     f"[{fmt(r.get('low'), 3)}, {fmt(r.get('high'), 3)}]",
                     fmt(r.get("classical"), 4),
                     f"[{fmt(r.get('classical_low'), 3)}, {fmt(r.get('classical_high'), 3)}]"])
    return header, rows


def ppi_lines(ppi: Mapping[str, Any]) -> list[str]:
    """What PPI++ used and each metric's finding (:func:`fairprobe.report.verdict.finding_text`),
    for the terminal and the report's notes."""
    from fairprobe.report.verdict import finding_text
    from fairprobe.stats.finding import Finding

    lines = [f"PPI++ with label proxy {ppi.get('proxy_col')}: {fmt(ppi.get('n_labelled'))} "
             f"labelled, {fmt(ppi.get('n_unlabelled'))} unlabelled rows; the audit above uses "
             f"the labelled rows only. {ppi.get('method')}; asymptotic coverage, assuming "
             f"{ppi.get('assumes')}."]
    for m in ppi.get("metrics") or []:
        f = Finding.from_dict(m["finding"])
        lams = ", ".join(f"{g} {fmt(mapping(r).get('lambda'), 3)}"
                         for g, r in mapping(m.get("groups")).items())
        lines.append(f"PPI++ {metric_label(m.get('metric'))} ({' vs '.join(f.question.groups)}"
                     f", lambda {lams}): {finding_text(f)}")
    return lines


def control_rows(c: Mapping[str, Any]) -> tuple[list[str], list[list[str]]]:
    """The strata table of a within-strata comparison (``control`` of an audit document): each
    stratum's rows, each group's rate, the worst pair's gap in it with its interval; a stratum
    with one group only is listed and marked."""
    groups = sorted({g for s in c.get("strata") or [] for g in mapping(s.get("groups"))})
    pair = next((mapping(s.get("gap")).get("pair") for s in c.get("strata") or []
                 if s.get("gap")), None) or ["?", "?"]
    header = ["stratum", "rows", *[f"rate {g}" for g in groups],
              f"difference {pair[0]} - {pair[1]}", "interval"]
    rows = []
    for s in c.get("strata") or []:
        gs = mapping(s.get("groups"))
        gap = mapping(s.get("gap"))
        rows.append([
            str(s.get("stratum")), fmt(s.get("rows")),
            *[fmt(mapping(gs.get(g)).get("rate"), 3) if g in gs else "-" for g in groups],
            fmt(gap.get("estimate"), 3) if gap else (
                f"one group only ({s['one_group']}): not compared" if s.get("one_group")
                else "pair not both present"),
            f"[{fmt(gap.get('low'), 3)}, {fmt(gap.get('high'), 3)}]" if gap else "-"])
    return header, rows


def control_lines(c: Mapping[str, Any]) -> list[str]:
    """The within-strata finding beside the unconditional one, each rendered by
    :func:`fairprobe.report.verdict.finding_text`, the bins, and the share the strata explain."""
    from fairprobe.report.verdict import finding_text
    from fairprobe.stats.finding import Finding

    f = Finding.from_dict(c["finding"])
    ctl = ", ".join(map(str, c.get("controls") or []))
    lines = []
    for col, edges in mapping(c.get("bins")).items():
        lines.append(f"{col} cut at its quantiles into {len(edges) - 1} bins: edges "
                     + ", ".join(fmt(e, 4) for e in edges))
    u = mapping(c.get("unconditional"))
    if u.get("finding"):
        lines.append(f"unconditional {metric_label(c.get('metric'))}: "
                     f"{finding_text(Finding.from_dict(u['finding']))}")
    sep = " / " if f.question.kind == "ratio" else " - "
    lines.append(f"within strata of {ctl} ({sep.join(f.question.groups)}, "
                 f"{c.get('family_size')} pair(s), {c.get('method')}): {finding_text(f)}")
    if u:
        share = u.get("share_explained")
        lines.append(
            f"{sep.join(map(str, u.get('pair') or []))}: {fmt(u.get('gap'), 4)} overall, "
            f"{fmt(u.get('within_strata'), 4)} within strata; share explained by {ctl}: "
            + ("n/a (no gap)" if share is None else f"{fmt(share, 3)}"))
    one = [s for s in c.get("strata") or [] if s.get("one_group")]
    if one:
        lines.append(f"{len(one)} stratum(s) hold one group only (reported above, not in the "
                     f"combined estimate): " + ", ".join(str(s["stratum"]) for s in one))
    return lines
