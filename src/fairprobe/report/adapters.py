"""Result documents -> report sections: kind inference and one tolerant adapter per kind.

Every ``--json`` output of fairprobe is a document ``{"schema": "fairprobe/1", "kind": ...,
"provenance": {...}, ...}``. Documents written before that contract (no ``schema``) get their kind
inferred from their keys (:func:`infer_kind`); the demo's composite document is split into its
parts. Each adapter reads what is present and says plainly what is missing: a field that a
figure needs but the result does not carry becomes a note in the report, never an invented value.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from fairprobe.report import assumptions as A
from fairprobe.report.document import FigureSpec, Provenance, Section, Table

__all__ = ["KINDS", "adapt", "infer_kind", "provenance_of", "split_document"]

Doc = Mapping[str, Any]

#: Every kind a report can render (``kind`` of the result JSON contract).
KINDS = (
    "audit",
    "sequential",
    "radius",
    "twosource",
    "twosource-plan",
    "collab-simulate",
    "collab-sweep",
    "collab-nodes",
    "demo",
    "platform-info",
)

# --------------------------------------------------------------------------------------------
# small tolerant readers


def get(d: Any, *path: str | int, default: Any = None) -> Any:
    """``d[p0][p1]...`` or ``default`` when any step is missing or of the wrong type."""
    cur = d
    for p in path:
        if isinstance(p, int):
            if not isinstance(cur, list | tuple) or not -len(cur) <= p < len(cur):
                return default
            cur = cur[p]
        else:
            if not isinstance(cur, Mapping) or p not in cur:
                return default
            cur = cur[p]
    return default if cur is None else cur


def mapping(x: Any) -> Mapping[str, Any]:
    """``x`` if it is a JSON object, else an empty one."""
    return x if isinstance(x, Mapping) else {}


def num(x: Any) -> float | None:
    """A finite float, or None."""
    if isinstance(x, bool) or not isinstance(x, int | float):
        return None
    f = float(x)
    return f if math.isfinite(f) else None


def fmt(x: Any, digits: int = 3) -> str:
    """A number for people: ``0.252``, ``1.2e-05``, ``1,579``; anything else as text."""
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, int):
        return f"{x:,}"
    f = num(x)
    if f is None:
        return "n/a" if x is None or isinstance(x, float) else str(x)
    if f != 0 and (abs(f) < 10 ** (-digits) or abs(f) >= 1e6):
        return f"{f:.2e}"
    return f"{f:.{digits}f}"


def pct(x: Any) -> str:
    f = num(x)
    return "n/a" if f is None else f"{f:.0%}"


def interval(d: Any) -> tuple[float, float] | None:
    """``(low, high)`` from ``{"low", "high"}`` or a two-element list."""
    if isinstance(d, Mapping):
        lo, hi = num(d.get("low")), num(d.get("high"))
    elif isinstance(d, list | tuple) and len(d) == 2:
        lo, hi = num(d[0]), num(d[1])
    else:
        return None
    return None if lo is None or hi is None else (lo, hi)


def fmt_interval(iv: tuple[float, float] | None, digits: int = 3) -> str:
    return "n/a" if iv is None else f"[{fmt(iv[0], digits)}, {fmt(iv[1], digits)}]"


def wilson(k: float, n: float, z: float = 1.959963984540054) -> tuple[float, float]:
    """Wilson score interval of a proportion ``k/n`` (for by-group bars of legacy results)."""
    if n <= 0:
        return (0.0, 1.0)
    p = k / n
    den = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return (max(0.0, centre - half), min(1.0, centre + half))


def floats(xs: Any) -> list[float] | None:
    """A list of numbers (None kept as NaN), or None if ``xs`` is not a list of numbers."""
    if not isinstance(xs, list) or not xs:
        return None
    out = []
    for x in xs:
        f = num(x)
        if f is None and x is not None and not isinstance(x, float):
            return None
        out.append(math.nan if f is None else f)
    return out


# --------------------------------------------------------------------------------------------
# kinds


def infer_kind(doc: Doc) -> str | None:
    """The kind of a result document: its ``kind`` field, or inferred from a legacy shape."""
    kind = doc.get("kind")
    if isinstance(kind, str) and kind in KINDS:
        return kind
    if kind == "fairprobe.audit" or ("metric" in doc and "budget" in doc and "paid" in doc):
        return "audit"
    if {"audit", "sequential"} <= doc.keys() or {"audit", "radius"} <= doc.keys():
        return "demo"
    if "radius" in doc and ("phi" in doc or "assessment" in doc):
        return "radius"
    if "outcome" in doc and ("boundaries" in doc or "path" in doc or "outcomes" in doc):
        return "sequential"
    if "detectors" in doc and ("di_a" in doc or "verdict" in doc):
        return "twosource"
    if "n_max" in doc and ("p_manip" in doc or "frontier" in doc):
        return "twosource-plan"
    if "runs" in doc and "config" in doc:
        runs = doc.get("runs")
        cfg = doc.get("config") or {}
        if isinstance(cfg, Mapping) and "case" in cfg and "attackers" in cfg:
            return "collab-simulate"
        if isinstance(runs, list):
            return "collab-sweep"
    if "nodes" in doc and ("verdict" in doc or "rounds" in doc):
        return "collab-nodes"
    if "accuracy" in doc and ("disparate_impact" in doc or "di" in doc):
        return "platform-info"
    return None


def split_document(doc: Doc, source: str) -> Iterator[tuple[str, Doc, str]]:
    """``(kind, part, label)`` for each part of a document; composite documents give several."""
    kind = infer_kind(doc)
    if kind != "demo":
        yield (kind or "unknown", doc, "")
        return
    audits = doc.get("audit")
    if isinstance(audits, Mapping):
        if infer_kind(audits) == "audit":
            yield ("audit", audits, "")
        else:
            for name, part in audits.items():
                if isinstance(part, Mapping):
                    yield ("audit", part, str(name).replace("_", " "))
    if isinstance(doc.get("radius"), Mapping):
        yield ("radius", doc["radius"], "")
    seqs = doc.get("sequential")
    if isinstance(seqs, Mapping):
        if infer_kind(seqs) == "sequential":
            yield ("sequential", seqs, "")
        else:
            for name, part in seqs.items():
                if isinstance(part, Mapping):
                    yield ("sequential", part, f"{name} access")
    for key in ("twosource", "collab", "collab_simulate"):
        part = doc.get(key)
        if isinstance(part, Mapping):
            yield (infer_kind(part) or "unknown", part, "")


# --------------------------------------------------------------------------------------------
# provenance

_PROVENANCE_ORDER = (
    "model",
    "model_identity",
    "backend",
    "endpoint",
    "created",
    "time",
    "started",
    "finished",
    "command",
    "argv",
    "seed",
    "seeds",
    "queries",
    "paid",
    "cached",
    "unparsed",
    "refused",
    "truncated",
    "by_group",
    "data",
    "dataset",
    "fairprobe_version",
    "version",
    "python",
    "platform",
    "host",
)


def _flatten(d: Any, prefix: str = "", depth: int = 0) -> Iterator[tuple[str, str]]:
    if isinstance(d, Mapping) and depth < 3:
        for k, v in d.items():
            yield from _flatten(v, f"{prefix}{k}.", depth + 1)
    elif isinstance(d, list) and all(not isinstance(x, Mapping | list) for x in d):
        yield (prefix.rstrip("."), ", ".join(fmt(x) for x in d) if d else "none")
    elif isinstance(d, list):
        yield (prefix.rstrip("."), f"{len(d)} entries")
    else:
        yield (prefix.rstrip("."), fmt(d) if not isinstance(d, str) else d)


def provenance_of(doc: Doc, source: str, kind: str) -> Provenance:
    """Provenance rows: the document's ``provenance`` (whatever keys it has), else legacy fields."""
    prov = doc.get("provenance")
    items: list[tuple[str, str]] = []
    if isinstance(prov, Mapping) and prov:
        keys = sorted(prov, key=lambda k: (_PROVENANCE_ORDER.index(k)
                                           if k in _PROVENANCE_ORDER else 99, k))
        for k in keys:
            for name, value in _flatten(prov[k], f"{k}."):
                items.append((name.replace("_", " "), value))
    else:
        items.append(("provenance", "not recorded (result written before the provenance "
                                    "contract); fields below are read from the result itself"))
        for label, path in (
            ("model", ("backend",)),
            ("model", ("config", "case")),
            ("seed", ("seed",)),
            ("seed", ("config", "seed")),
            ("queries drawn", ("queried",)),
            ("queries paid", ("paid",)),
            ("queries from the cache", ("cached",)),
            ("unparsed answers", ("unparsed",)),
            ("queries paid", ("queries_paid",)),
            ("queries from the cache", ("queries_cached",)),
            ("queries paid", ("queries", "total")),
        ):
            v = get(doc, *path)
            if v is not None and not isinstance(v, Mapping | list):
                items.append((label, fmt(v) if not isinstance(v, str) else v))
    schema = doc.get("schema") if isinstance(doc.get("schema"), str) else None
    return Provenance(source=source, kind=kind, schema=schema, items=items)


# --------------------------------------------------------------------------------------------
# adapters

_METRIC_NAMES = {
    "disparate_impact_ratio": "disparate impact (ratio of positive rates)",
    "demographic_parity_difference": "demographic parity difference",
    "equal_opportunity_difference": "equal opportunity difference",
    "accuracy_difference": "accuracy difference",
    "sp": "statistical parity gap",
    "eo": "equal opportunity gap",
}


def _metric_label(name: Any) -> str:
    return _METRIC_NAMES.get(str(name), str(name).replace("_", " "))


def _extra_assumptions(doc: Doc) -> list[str]:
    extra = doc.get("assumptions")
    if isinstance(extra, list):
        return [str(x) for x in extra if x]
    if isinstance(extra, Mapping):
        return [f"{k}: {v}" for k, v in extra.items()]
    return []


def _by_group_rows(doc: Doc, metric: Doc) -> list[dict[str, Any]]:
    """Per-group rates with intervals: the result's ``by_group`` table, or from the legacy counts.

    Legacy results store, for groups a and b, ``a`` positives among ``A`` records (``b``/``B``);
    their rates get Wilson 95% intervals computed here and labelled as such.
    """
    rows: list[dict[str, Any]] = []
    table = doc.get("by_group") or metric.get("by_group")
    if isinstance(table, Mapping):
        table = [dict(v, group=k) if isinstance(v, Mapping) else {"group": k, "rate": v}
                 for k, v in table.items()]
    if isinstance(table, list):
        for r in table:
            if not isinstance(r, Mapping):
                continue
            rate = num(r.get("rate", r.get("value", r.get("estimate", r.get("selection_rate")))))
            if rate is None:
                continue
            iv = interval(r.get("interval") or r.get("ci"))
            n = r.get("n", r.get("count"))
            rows.append({"group": str(r.get("group", r.get("name", "?"))), "rate": rate,
                         "low": iv[0] if iv else None, "high": iv[1] if iv else None,
                         "n": n, "method": get(r, "interval", "method") or ""})
        if rows:
            return rows
    counts, groups = metric.get("counts"), metric.get("groups")
    if isinstance(counts, Mapping) and isinstance(groups, Mapping):
        for side, total_key in (("a", "A"), ("b", "B")):
            k, n = num(counts.get(side)), num(counts.get(total_key))
            if k is None or not n:
                continue
            lo, hi = wilson(k, n)
            rows.append({"group": str(groups.get(side, side)), "rate": k / n, "low": lo,
                         "high": hi, "n": int(n), "method": "wilson (computed for this report)"})
    return rows


def _fair_band(kind: str, threshold: float | None, tolerance: float | None) -> dict[str, Any]:
    if kind == "ratio" and threshold is not None:
        return {"kind": "ratio", "low": threshold, "high": 1 / threshold if threshold > 0 else None}
    if tolerance is not None:
        return {"kind": "difference", "low": -tolerance, "high": tolerance}
    return {}


def adapt_audit(doc: Doc, source: str, label: str) -> Section:
    metric = mapping(doc.get("metric")) or doc
    name = metric.get("metric", "metric")
    mkind = str(metric.get("kind", "difference"))
    est = num(metric.get("estimate"))
    iv = interval(metric.get("interval"))
    level = num(metric.get("confidence_level") or get(metric, "interval", "level")) or 0.95
    thr = num(metric.get("threshold"))
    verdict = str(metric.get("verdict") or doc.get("verdict") or "undetermined")
    groups = metric.get("groups") or {}
    ga, gb = get(groups, "a", default="a"), get(groups, "b", default="b")
    if mkind == "ratio":
        rule = f"fair if the ratio is at least {fmt(thr, 2)} (the 80% rule)" if thr else ""
    else:
        rule = f"fair if |difference| is at most {fmt(thr, 3)}" if thr else ""
    where = "entirely inside" if verdict == "fair" else (
        "entirely outside" if verdict == "unfair" else "across the edge of")
    sentence = (
        f"The {_metric_label(name)} of {ga} vs {gb} is {fmt(est)} "
        f"({level:.0%} interval {fmt_interval(iv)}, {metric.get('method', 'n/a')}), {where} the "
        f"fair band: {verdict}."
    )
    short = f"{verdict}: {_metric_label(name)} {fmt(est)} {fmt_interval(iv)}"
    by_group = _by_group_rows(doc, metric)
    band = _fair_band(mkind, thr, thr if mkind != "ratio" else None)
    figures: list[FigureSpec] = []
    notes: list[str] = []
    if by_group or (est is not None and iv is not None):
        rates = "; ".join(f"{r['group']} {fmt(r['rate'])} [{fmt(r['low'])}, {fmt(r['high'])}]"
                          for r in by_group)
        figures.append(FigureSpec(
            plot="audit",
            data={"groups": by_group, "estimate": est, "interval": iv, "band": band,
                  "metric": _metric_label(name), "verdict": verdict, "level": level},
            alt=(f"Left: positive-decision rate per group with {level:.0%} intervals ({rates}). "
                 f"Right: the {_metric_label(name)} {fmt(est)} with interval "
                 f"{fmt_interval(iv)} against the fair band "
                 f"{fmt_interval((band['low'], band['high'])) if band.get('high') else rule}."),
            caption=(f"Positive-decision rate by group (bars, {level:.0%} intervals) and the "
                     f"{_metric_label(name)} against the fair band (shaded): {verdict}."),
        ))
    else:
        notes.append("This result carries no estimate with an interval: no figure.")
    facts = [
        ("metric", _metric_label(name)),
        ("estimate", fmt(est)),
        (f"{level:.0%} interval", f"{fmt_interval(iv)} ({metric.get('method', 'n/a')})"),
        ("rule", rule or "n/a"),
        ("point verdict (estimate alone)", str(metric.get("point_verdict", "n/a"))),
        ("queries", f"{fmt(doc.get('queried', 'n/a'))} drawn, {fmt(doc.get('paid', 'n/a'))} paid, "
                    f"{fmt(doc.get('cached', 'n/a'))} from the cache, "
                    f"{fmt(doc.get('unparsed', 0))} unparsed"),
        ("model", str(doc.get("backend", "n/a"))),
    ]
    tables = []
    if by_group:
        tables.append(Table(
            caption=f"Positive-decision rate by group ({doc.get('group_col', 'group')})",
            header=["group", "records", "rate", f"{level:.0%} interval", "interval method"],
            rows=[[r["group"], fmt(r["n"]) if r["n"] is not None else "n/a", fmt(r["rate"]),
                   fmt_interval((r["low"], r["high"]) if r["low"] is not None else None),
                   str(r["method"])] for r in by_group],
        ))
    title = "Fixed-budget audit" + (f": {label}" if label else "")
    return Section("audit", title, source, verdict, sentence, short, facts, figures, tables,
                   A.AUDIT + _extra_assumptions(doc), notes)


def adapt_sequential(doc: Doc, source: str, label: str) -> Section:
    outcome = str(doc.get("outcome", "inconclusive"))
    verdict = {"violation": "unfair", "compliant": "fair", "compliance": "fair"}.get(
        outcome, "undetermined")
    queries = doc.get("queries")
    metric = _metric_label(doc.get("metric", "gap"))
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
                   assumptions + _extra_assumptions(doc), notes)


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


def adapt_radius(doc: Doc, source: str, label: str) -> Section:
    r = num(doc.get("radius"))
    infinite = bool(doc.get("radius_infinite"))
    assessment = str(doc.get("assessment") or ("fair" if doc.get("fair") else "unfair"))
    phi, tol = num(doc.get("phi")), num(doc.get("tolerance"))
    div = str(doc.get("divergence", "kl")).upper()
    if infinite:
        sentence = (f"The '{assessment}' conclusion (phi = {fmt(phi)}, tolerance {fmt(tol, 3)}) "
                    f"cannot be flipped by any reweighting of the audit data.")
    else:
        sentence = (
            f"The '{assessment}' conclusion (phi = {fmt(phi)}, fair iff |phi| < {fmt(tol, 3)}) "
            f"flips only under a shift of the audit distribution with {div} >= {fmt(r, 4)}"
            + (f"; by Pinsker no event's probability moves by more than "
               f"{fmt(doc.get('pinsker_bound'))} before that." if doc.get("pinsker_bound") else ".")
        )
    short = f"'{assessment}' holds up to {div} {fmt(r, 4)}"
    figures: list[FigureSpec] = []
    notes: list[str] = []
    curve = _flip_curve(doc)
    if curve is not None:
        figures.append(FigureSpec(
            plot="radius_curve",
            data={**curve, "radius": r, "tolerance": tol, "phi": phi, "divergence": div},
            alt=(f"Metric reachable under a shift of at most a given {div} (x axis) for "
                 f"{len(curve['divergence_values'])} values up to "
                 f"{fmt(max(curve['divergence_values']), 3)}; it meets the tolerance "
                 f"{fmt(tol, 3)} at the radius {fmt(r, 4)}."),
            caption=(f"Flip curve: the metric reachable within a {div} budget, with the fair "
                     f"band (shaded) and the consistency radius (dashed)."),
        ))
    else:
        rw = mapping(doc.get("reweighting"))
        before, after = floats(rw.get("group_mean_before")), floats(rw.get("group_mean_after"))
        groups = doc.get("groups") if isinstance(doc.get("groups"), list) else None
        if before and after and groups and len(before) == len(after) == len(groups):
            figures.append(FigureSpec(
                plot="radius_shift",
                data={"groups": [str(g) for g in groups], "before": before, "after": after,
                      "phi": phi, "phi_shifted": num(doc.get("phi_shifted")), "radius": r,
                      "tolerance": tol, "divergence": div},
                alt=(f"Group means in the audit data ({', '.join(fmt(b) for b in before)}) and "
                     f"after the smallest flipping shift ({', '.join(fmt(a) for a in after)}); "
                     f"phi moves from {fmt(phi)} to {fmt(doc.get('phi_shifted'))} at "
                     f"{div} {fmt(r, 4)}."),
                caption=("Group means before and after the least shift that flips the "
                         "conclusion (the radius); the result carries no flip curve."),
            ))
        notes.append("This result carries no flip curve (field 'curve' with divergence and "
                     "metric values): the figure shows the shift at the radius only.")
    facts = [
        ("metric phi on the audit data", fmt(phi)),
        ("fair iff", f"|phi| < {fmt(tol, 3)}"),
        ("assessment", assessment),
        (f"radius ({div})", "infinite" if infinite else fmt(r, 5)),
        ("certified lower bound", fmt(doc.get("lower_bound"), 5)),
        ("phi at the radius", fmt(doc.get("phi_shifted"))),
        ("Pinsker bound on any event", fmt(doc.get("pinsker_bound"))),
        ("method", str(doc.get("method", "n/a"))),
        ("records", fmt(doc.get("n"))),
    ]
    if doc.get("message"):
        facts.append(("note", str(doc["message"])))
    title = "Consistency radius" + (f": {label}" if label else "")
    return Section("radius", title, source, assessment, sentence, short, facts, figures, [],
                   A.RADIUS + _extra_assumptions(doc), notes)


def _flip_curve(doc: Doc) -> dict[str, Any] | None:
    curve = doc.get("curve") or doc.get("flip_curve")
    xs = ys = None
    if isinstance(curve, Mapping):
        xs = floats(curve.get("divergence") or curve.get("kl") or curve.get("radius")
                    or curve.get("budget") or curve.get("x"))
        ys = floats(curve.get("metric") or curve.get("phi") or curve.get("value")
                    or curve.get("y"))
        ys_hi = floats(curve.get("metric_high") or curve.get("phi_max"))
        ys_lo = floats(curve.get("metric_low") or curve.get("phi_min"))
        if ys is None and ys_hi and ys_lo:
            ys = ys_lo
    elif isinstance(curve, list) and curve and isinstance(curve[0], Mapping):
        keys = curve[0].keys()
        xk = next((k for k in ("divergence", "kl", "budget", "radius", "x") if k in keys), None)
        yk = next((k for k in ("metric", "phi", "value", "y") if k in keys), None)
        if xk and yk:
            xs, ys = floats([c.get(xk) for c in curve]), floats([c.get(yk) for c in curve])
        ys_hi = ys_lo = None
    else:
        return None
    if not xs or not ys or len(xs) != len(ys):
        return None
    out: dict[str, Any] = {"divergence_values": xs, "metric_values": ys}
    if ys_hi and ys_lo and len(ys_hi) == len(ys_lo) == len(xs):
        out.update(metric_low=ys_lo, metric_high=ys_hi)
    return out


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
            "di": [
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
                   A.TWOSOURCE + _extra_assumptions(doc), [])


def _checks_path(doc: Doc) -> dict[str, list[float]] | None:
    path = doc.get("checks_path") or doc.get("path")
    if isinstance(path, Mapping):
        x = floats(path.get("checks") or path.get("n_checked"))
        y = floats(path.get("inconsistent") or path.get("n_inconsistent"))
        if x and y and len(x) == len(y):
            out = {"checks": x, "inconsistent": y}
            nmax = floats(path.get("n_max"))
            if nmax and len(nmax) == len(x):
                out["n_max"] = nmax
            return out
    return None


def adapt_twosource_plan(doc: Doc, source: str, label: str) -> Section:
    n_max, p_manip = doc.get("n_max"), doc.get("p_manip")
    sentence = (f"Plan: with these parameters Lemma 2 allows at most n_max = {fmt(n_max)} "
                f"inconsistent answers among the checks; a manipulation is caught with "
                f"probability p_manip = {fmt(p_manip)} per check.")
    frontier = doc.get("frontier")
    figures: list[FigureSpec] = []
    if isinstance(frontier, list) and frontier and isinstance(frontier[0], Mapping):
        keys = list(frontier[0].keys())
        nums = [k for k in keys if num(frontier[0].get(k)) is not None]
        if len(nums) >= 2:
            xk, yk = nums[0], nums[1]
            figures.append(FigureSpec(
                plot="xy",
                data={"x": [num(r.get(xk)) for r in frontier], "y": [num(r.get(yk)) for r in frontier],
                      "xlabel": xk, "ylabel": yk},
                alt=f"Pareto frontier of {yk} against {xk} over {len(frontier)} allocations.",
                caption=f"Pareto frontier: {yk} against {xk}.",
            ))
    facts = [(k.replace("_", " "), fmt(v) if not isinstance(v, str) else v)
             for k, v in doc.items()
             if k not in ("schema", "kind", "provenance", "frontier") and not isinstance(v, Mapping | list)]
    return Section("twosource-plan", "Two-source audit plan" + (f": {label}" if label else ""),
                   source, None, sentence, f"n_max {fmt(n_max)}, p_manip {fmt(p_manip)}", facts, figures,
                   [], A.TWOSOURCE + _extra_assumptions(doc), [])


def _collab_nodes(doc: Doc) -> list[dict[str, Any]]:
    nodes = doc.get("nodes")
    if isinstance(nodes, Mapping):
        nodes = [dict(v, id=k) for k, v in nodes.items() if isinstance(v, Mapping)]
    out = []
    for i, n in enumerate(nodes if isinstance(nodes, list) else []):
        if not isinstance(n, Mapping):
            continue
        out.append({
            "id": str(n.get("id", n.get("node", i))),
            "estimate": num(n.get("estimate", n.get("local_estimate", n.get("dp")))),
            "weight": num(n.get("weight", n.get("trust"))),
            "attacker": bool(n.get("attacker", n.get("is_attacker", n.get("role") == "attacker"))),
            "suspicion": floats(n.get("suspicion") or n.get("suspicion_scores")),
        })
    return out


def _suspicion_over_rounds(doc: Doc, nodes: list[dict[str, Any]]) -> dict[str, Any] | None:
    s = doc.get("suspicion") or doc.get("suspicion_scores")
    series: dict[str, list[float]] = {}
    if isinstance(s, Mapping):
        for k, v in s.items():
            f = floats(v)
            if f:
                series[str(k)] = f
    elif isinstance(s, list) and s and isinstance(s[0], list):
        for i, v in enumerate(s):  # rounds x nodes
            f = floats(v)
            if f:
                for j, x in enumerate(f):
                    series.setdefault(str(j), [math.nan] * len(s))[i] = x
    for n in nodes:
        if n["suspicion"] and n["id"] not in series:
            series[n["id"]] = n["suspicion"]
    if not series:
        return None
    attackers = {n["id"] for n in nodes if n["attacker"]}
    positions = doc.get("attacker_positions")
    if isinstance(positions, list):
        attackers |= {str(p) for p in positions}
    return {"series": series, "attackers": sorted(attackers)}


def adapt_collab_simulate(doc: Doc, source: str, label: str) -> Section:
    cfg = mapping(doc.get("config"))
    tau = num(cfg.get("tau")) or num(doc.get("tau"))
    true_dp = num(doc.get("true_dp"))
    runs = [r for r in doc.get("runs") or [] if isinstance(r, Mapping)]
    main = next((r for r in runs if r.get("method") == "auditopus"), runs[-1] if runs else {})
    est = num(main.get("estimate")) if main else num(doc.get("estimate"))
    verdict = _band_verdict(est, tau)
    true_verdict = _band_verdict(true_dp, tau)
    sentence = (
        f"With {fmt(cfg.get('attackers'))} attacker(s) among {fmt(cfg.get('honest'))} honest "
        f"auditors ({cfg.get('case', 'population')}), {main.get('method', 'the protocol')} "
        f"estimates the demographic parity gap at {fmt(est)} (true {fmt(true_dp)}; fair band "
        f"+/-{fmt(tau, 2)}): {verdict}"
        + (" - the attackers did not flip the verdict." if verdict == true_verdict
           else " - the attackers flipped the verdict.")
    )
    nodes = _collab_nodes(doc)
    figures = [FigureSpec(
        plot="collab_methods",
        data={"methods": [{"method": str(r.get("method")), "estimate": num(r.get("estimate")),
                           "fooled": bool(r.get("fooled"))} for r in runs],
              "true": true_dp, "tau": tau},
        alt=("Final estimate of each aggregation method: "
             + ", ".join(f"{r.get('method')} {fmt(r.get('estimate'))}"
                         f"{' (fooled)' if r.get('fooled') else ''}" for r in runs)
             + f"; true gap {fmt(true_dp)}, fair band +/-{fmt(tau, 2)}."),
        caption="Each method's final estimate against the true gap and the fair band (shaded).",
    )] if runs else []
    notes = []
    if nodes and any(n["estimate"] is not None for n in nodes):
        figures.append(FigureSpec(
            plot="collab_nodes",
            data={"nodes": nodes, "tau": tau, "true": true_dp},
            alt=(f"Estimate and weight of each of {len(nodes)} nodes; "
                 f"{sum(n['attacker'] for n in nodes)} attackers marked with crosses."),
            caption="Each node's local estimate and the weight the protocol gives it.",
        ))
    else:
        notes.append("This result carries no per-node estimates and weights (field 'nodes'): "
                     "no node figure.")
    susp = _suspicion_over_rounds(doc, nodes)
    if susp:
        figures.append(FigureSpec(
            plot="collab_suspicion",
            data={**susp, "z_max": num(cfg.get("z_max"))},
            alt=(f"Suspicion score of {len(susp['series'])} nodes over rounds; attackers "
                 f"({', '.join(susp['attackers']) or 'none marked'}) drawn in red."),
            caption="Suspicion scores over rounds (attackers in red, honest nodes in grey).",
        ))
    else:
        notes.append("This result carries no suspicion scores over rounds (field 'suspicion'): "
                     "no suspicion figure.")
    facts = [("case", str(cfg.get("case", "n/a"))),
             ("honest auditors / attackers", f"{fmt(cfg.get('honest'))} / {fmt(cfg.get('attackers'))}"),
             ("attack", str(cfg.get("attack", "n/a"))),
             ("rounds", f"{fmt(doc.get('rounds'))} (cap {fmt(cfg.get('max_rounds'))})"),
             ("queries per auditor and round", fmt(cfg.get("n"))),
             ("fair band", f"|DP| <= {fmt(tau, 3)}"), ("true DP", fmt(true_dp)),
             ("seed", fmt(cfg.get("seed")))]
    tables = [Table(
        caption="Final estimate per aggregation method",
        header=["method", "estimate", "error", "verdict", "fooled"],
        rows=[[str(r.get("method")), fmt(r.get("estimate")), fmt(r.get("error")),
               _band_verdict(num(r.get("estimate")), tau), "yes" if r.get("fooled") else "no"]
              for r in runs],
    )] if runs else []
    return Section("collab-simulate", "Collaborative audit" + (f": {label}" if label else ""),
                   source, verdict, sentence, f"{verdict}: estimate {fmt(est)} (true {fmt(true_dp)})",
                   facts, figures, tables, A.COLLAB + _extra_assumptions(doc), notes)


def _band_verdict(x: float | None, tau: float | None) -> str:
    if x is None or tau is None:
        return "undetermined"
    return "fair" if abs(x) <= tau else "unfair"


def adapt_collab_sweep(doc: Doc, source: str, label: str) -> Section:
    runs = [r for r in doc.get("runs") or [] if isinstance(r, Mapping)]
    table: dict[tuple[str, str], dict[int, list[bool]]] = {}
    for r in runs:
        k = num(r.get("attackers"))
        if k is None:
            continue
        table.setdefault((str(r.get("case")), str(r.get("method"))), {}).setdefault(
            int(k), []).append(bool(r.get("fooled")))
    success = {key: {k: sum(v) / len(v) for k, v in sorted(d.items())} for key, d in table.items()}
    seeds = {num(r.get("seed")) for r in runs}
    auditopus = [max(d.values()) for (c, m), d in success.items() if m == "auditopus"]
    worst = max(auditopus) if auditopus else None
    sentence = (f"Over {len(runs)} runs ({len(seeds)} seeds per configuration), the attackers' "
                f"highest success rate against Auditopus was {pct(worst)}.")
    figures = [FigureSpec(
        plot="collab_sweep",
        data={"success": {f"{c} / {m}": {str(k): v for k, v in d.items()}
                          for (c, m), d in success.items()}},
        alt=("Attack success rate by number of attackers for each case and method: "
             + "; ".join(f"{c}/{m} max {pct(max(d.values()))}" for (c, m), d in success.items())
             + "."),
        caption="Attack success (share of runs whose verdict the attackers flipped) by the "
                "number of attackers.",
    )] if success else []
    ks = sorted({k for d in table.values() for k in d})
    tables = [Table(
        caption="Attack success rate per case and method (rows) and number of attackers (columns)",
        header=["case", "method", *[str(k) for k in ks]],
        rows=[[c, m, *[pct(success[(c, m)].get(k)) if k in success[(c, m)] else "" for k in ks]]
              for (c, m) in sorted(success)],
    )] if success else []
    facts = [("runs", fmt(len(runs))), ("complete", fmt(doc.get("complete", "n/a")))]
    cfg = mapping(doc.get("config"))
    facts += [(k.replace("_", " "), fmt(v)) for k, v in cfg.items() if not isinstance(v, Mapping | list)]
    verdict = None if worst is None else ("robust" if worst == 0 else "fooled")
    return Section("collab-sweep", "Collaborative audit sweep" + (f": {label}" if label else ""),
                   source, verdict, sentence,
                   f"highest attack success on Auditopus {pct(worst)}", facts, figures,
                   tables, A.COLLAB + _extra_assumptions(doc), [])


def adapt_collab_nodes(doc: Doc, source: str, label: str) -> Section:
    nodes = _collab_nodes(doc)
    est = num(doc.get("estimate", get(doc, "result", "estimate")))
    tau = num(doc.get("tau", get(doc, "config", "tau")))
    verdict = str(doc.get("verdict") or _band_verdict(est, tau))
    sentence = (f"{len(nodes)} auditor nodes reached the estimate {fmt(est)} over "
                f"{fmt(doc.get('rounds'))} rounds (fair band +/-{fmt(tau, 2)}): {verdict}.")
    figures = []
    if nodes and any(n["estimate"] is not None for n in nodes):
        figures.append(FigureSpec(
            plot="collab_nodes", data={"nodes": nodes, "tau": tau, "true": None},
            alt=f"Estimate and weight of each of {len(nodes)} nodes.",
            caption="Each node's local estimate and the weight the protocol gives it.",
        ))
    susp = _suspicion_over_rounds(doc, nodes)
    if susp:
        figures.append(FigureSpec(
            plot="collab_suspicion", data={**susp, "z_max": num(get(doc, "config", "z_max"))},
            alt=f"Suspicion score of {len(susp['series'])} nodes over rounds.",
            caption="Suspicion scores over rounds.",
        ))
    facts = [(k.replace("_", " "), fmt(v) if not isinstance(v, str) else v)
             for k, v in doc.items()
             if k not in ("schema", "kind") and not isinstance(v, Mapping | list)]
    return Section("collab-nodes", "Collaborative audit over the network", source, verdict,
                   sentence, f"{verdict}: estimate {fmt(est)}", facts, figures, [],
                   A.COLLAB + _extra_assumptions(doc), [])


def adapt_generic(doc: Doc, source: str, label: str, kind: str) -> Section:
    facts = [(k.replace("_", " "), fmt(v) if not isinstance(v, str) else v)
             for k, v in doc.items()
             if k not in ("schema", "kind", "provenance") and not isinstance(v, Mapping | list)]
    title = {"platform-info": "Platform model"}.get(kind, f"Result ({kind})")
    verdict = doc.get("verdict") if isinstance(doc.get("verdict"), str) else None
    return Section(kind, title, source, verdict,
                   f"{title}: {len(facts)} recorded values (no figure for this kind).",
                   title.lower(), facts, [], [], _extra_assumptions(doc), [])


_ADAPTERS: dict[str, Callable[[Doc, str, str], Section]] = {
    "audit": adapt_audit,
    "sequential": adapt_sequential,
    "radius": adapt_radius,
    "twosource": adapt_twosource,
    "twosource-plan": adapt_twosource_plan,
    "collab-simulate": adapt_collab_simulate,
    "collab-sweep": adapt_collab_sweep,
    "collab-nodes": adapt_collab_nodes,
}


def adapt(kind: str, doc: Doc, source: str, label: str = "") -> Section:
    """The report section of one result (part) of a given kind."""
    fn = _ADAPTERS.get(kind)
    if fn is None:
        return adapt_generic(doc, source, label, kind)
    return fn(doc, source, label)
