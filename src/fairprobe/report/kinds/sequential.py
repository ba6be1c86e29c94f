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


_STAT_KEYS = ("statistic_upper", "statistic_lower", "statistic", "wealth", "log_wealth",
              "log_e_violation", "log_e_below_delta", "log_e_above_minus_delta")


def _series(path: Mapping[str, Any], pairs: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Statistic series with their own x (queries): the path's ``query`` when the lengths match,
    else the pairs' ``query`` (statistics updated once per pair of answers), else 1..n."""
    q = floats(path.get("query"))
    pq = floats(pairs.get("query"))
    out = []
    for k in _STAT_KEYS:
        ys = floats(path.get(k))
        if not ys:
            continue
        if q and len(q) == len(ys):
            x = q
        elif pq and len(pq) == len(ys):
            x = pq
        else:
            x = [float(i) for i in range(1, len(ys) + 1)]
        out.append({"name": k, "x": x, "y": ys})
    return out


def _verdict_of(outcome: str) -> str:
    return {"violation": "unfair", "compliant": "fair", "compliance": "fair"}.get(
        outcome, "undetermined")


def adapt_sequential(doc: Doc, source: str, label: str) -> Section:
    repeated = isinstance(doc.get("queries"), list) or (
        "outcome" not in doc and isinstance(doc.get("outcomes"), Mapping))
    outcomes = mapping(doc.get("outcomes"))
    metric = metric_label(doc.get("metric", "gap"))
    tol = num(doc.get("tolerance"))
    test = str(doc.get("test", "n/a"))
    alpha, beta = num(doc.get("alpha")), num(doc.get("beta"))
    access = doc.get("access")
    level = (f"H0: |gap| <= {fmt(tol, 2)}; alpha {fmt(alpha, 2)}, beta {fmt(beta, 2)}")
    if repeated:
        shares = {k: num(v) or 0.0 for k, v in outcomes.items()}
        outcome = max(shares, key=lambda k: shares[k]) if shares else "inconclusive"
        n_rep = doc.get("repeats") or len(doc.get("queries") or [])
        sentence = (
            f"Over {fmt(n_rep)} random query orders of the pool, the sequential "
            f"{test} test of the {metric} ({level}) ended in "
            + ", ".join(f"{k} {pct(v)}" for k, v in shares.items())
            + f", after {fmt(doc.get('mean_queries'), 1)} queries on average (median "
              f"{fmt(doc.get('median_queries'), 0)}); most often: {outcome}."
        )
        short = f"{outcome} in {pct(shares.get(outcome))} of {fmt(n_rep)} orders"
    else:
        outcome = str(doc.get("outcome", "inconclusive"))
        sentence = (
            f"The sequential {test} test of the {metric} stopped with '{outcome}' after "
            f"{fmt(doc.get('queries'))} queries ({level}; gap estimate "
            f"{fmt(doc.get('gap_estimate'))}"
            + (f", {fmt_interval(interval(doc.get('gap_interval')))} "
               f"{'anytime-valid' if doc.get('anytime_valid') else ''}"
               if interval(doc.get("gap_interval")) else "")
            + ")."
        )
        if not isinstance(doc.get("finding"), Mapping):  # a legacy file: the test's word only
            sentence = sentence[:-1] + f": {_verdict_of(outcome)}."
        short = f"{outcome} after {fmt(doc.get('queries'))} queries"
    verdict = _verdict_of(outcome)
    if access:
        short += f" ({access} access)"
    figures: list[FigureSpec] = []
    notes: list[str] = []
    example = mapping(doc.get("example_path"))
    path = example or mapping(doc.get("path"))
    pairs = mapping(path.get("pairs")) or mapping(doc.get("pairs"))
    bounds = mapping(doc.get("boundaries"))
    series = _series(path, pairs)
    which = " of one example order" if example else ""
    if example.get("pair"):
        which += f" (pair {example['pair']})"
    if series:
        end = series[0]["y"][-1]
        figures.append(FigureSpec(
            plot="sequential_path",
            data={"series": series, "upper": num(bounds.get("upper")),
                  "lower": num(bounds.get("lower")),
                  "outcome": str(example.get("outcome", outcome)) if example else outcome,
                  "queries": max(s["x"][-1] for s in series)},
            alt=(f"The test statistic{which} over {fmt(int(max(s['x'][-1] for s in series)))} "
                 f"queries against its boundaries (upper {fmt(num(bounds.get('upper')))}, lower "
                 f"{fmt(num(bounds.get('lower')))}); it ends at {fmt(end)}."),
            caption=f"The test statistic's path{which} against its stopping boundaries.",
        ))
    else:
        notes.append("This result carries no statistic path: no path figure.")
    cs = _confidence_sequence(doc, path, pairs)
    if cs is not None:
        figures.append(FigureSpec(
            plot="confidence_sequence",
            data={**cs, "tolerance": tol},
            alt=(f"Confidence sequence of the gap{which} over {fmt(int(cs['query'][-1]))} "
                 f"queries; at the end it is [{fmt(cs['low'][-1])}, {fmt(cs['high'][-1])}]; "
                 f"the compliance band is +/-{fmt(tol, 2)}."),
            caption=(f"Confidence sequence of the gap over queries{which} ("
                     + ("valid at every query simultaneously" if doc.get("anytime_valid")
                        else "not anytime-valid") + "), against the band +/- delta."),
        ))
    else:
        notes.append("This result carries no confidence sequence of the gap (fields "
                     "'confidence_sequence', 'pairs.cs_low/cs_high' or path 'cs_low'/'cs_high'): "
                     "no interval figure.")
    stops = floats(doc.get("queries")) if repeated else None
    per = doc.get("outcome_per_repeat")
    if stops and isinstance(per, list) and len(per) == len(stops):
        figures.append(FigureSpec(
            plot="sequential_repeats",
            data={"queries": stops, "outcomes": [str(o) for o in per],
                  "budget": num(doc.get("budget")),
                  "wald": num(doc.get("wald_lower_bound"))},
            alt=(f"Histogram of the number of queries at which each of {len(stops)} audits "
                 f"stopped, by outcome: " + ", ".join(f"{k} {pct(v)}" for k, v in outcomes.items())
                 + f"; mean {fmt(doc.get('mean_queries'), 1)}."),
            caption="Queries used by each repeated audit, by outcome.",
        ))
    groups = mapping(doc.get("groups"))
    anytime = "anytime-valid" if doc.get("anytime_valid") else "not anytime-valid"
    facts = [
        ("test", f"{test} ({anytime})"),
        ("metric", metric),
        ("hypotheses", level),
        ("access", str(access or "n/a")),
    ]
    for key in ("likelihood", "sampling"):
        if doc.get(key):
            facts.append((key, str(doc[key])))
    if repeated:
        facts += [
            ("repeats", fmt(doc.get("repeats"))),
            ("queries per audit", f"mean {fmt(doc.get('mean_queries'), 1)} (sd "
                                  f"{fmt(doc.get('sd_queries'), 1)}), median "
                                  f"{fmt(doc.get('median_queries'), 0)}, 10-90% "
                                  f"{fmt(doc.get('q10_queries'), 0)}-"
                                  f"{fmt(doc.get('q90_queries'), 0)}"),
            ("budget", fmt(doc.get("budget"))),
        ]
        if doc.get("wald_lower_bound") is not None:
            facts.append(("Wald's lower bound on mean queries",
                          f"{fmt(doc.get('wald_lower_bound'), 1)} (ratio "
                          f"{fmt(doc.get('ratio_to_wald'), 2)})"))
        pool = mapping(doc.get("pool"))
        if pool:
            facts.append(("pool", "; ".join(
                f"{k.replace('_', ' ')} " + (", ".join(f"{a} {fmt(b)}" for a, b in v.items())
                                             if isinstance(v, Mapping) else fmt(v))
                for k, v in pool.items())))
    else:
        facts += [
            ("outcome", outcome),
            ("queries", f"{fmt(doc.get('queries'))} of budget {fmt(doc.get('budget'))} "
                        f"({fmt(doc.get('queries_paid', 'n/a'))} paid, "
                        f"{fmt(doc.get('queries_cached', 'n/a'))} from the cache)"),
            ("gap estimate", fmt(doc.get("gap_estimate"))),
        ]
        giv = mapping(doc.get("gap_interval"))
        if interval(giv):
            facts.append((f"gap interval at stop ({pct(giv.get('level'))})",
                          f"{fmt_interval(interval(giv))} ({giv.get('method', 'n/a')})"))
        if interval(doc.get("gap_interval_naive")):
            facts.append(("naive 95% interval at stop (ignores optional stopping)",
                          fmt_interval(interval(doc.get("gap_interval_naive")))))
    deciding = doc.get("deciding_pair")
    if isinstance(deciding, list) and deciding:
        tally: dict[str, int] = {}
        for d in deciding:
            tally[str(d)] = tally.get(str(d), 0) + 1
        facts.append(("deciding pair (audits)", ", ".join(
            f"{k} ({v})" for k, v in sorted(tally.items(), key=lambda kv: -kv[1]))))
    if doc.get("correction"):
        facts.append(("multiple groups", f"{fmt(doc.get('pairs'))} pairs, {doc['correction']} "
                                         f"(alpha per pair {fmt(doc.get('alpha_per_pair'), 4)})"))
    for k, v in mapping(doc.get("e_values")).items():
        facts.append((f"e-value {k.replace('_', ' ')}", fmt(v)))
    tables = []
    if groups:
        tables.append(Table(
            caption="Answers per group at the stopping time",
            header=["group", "answers", "mean"],
            rows=[[str(g), fmt(get(v, "n")), fmt(get(v, "mean"))] for g, v in groups.items()],
        ))
    if repeated and outcomes:
        counts = mapping(doc.get("outcome_counts"))
        tables.append(Table(
            caption="Outcomes over repeated query orders",
            header=["outcome", "share", "audits"],
            rows=[[str(k), pct(v), fmt(counts.get(k, "n/a"))] for k, v in outcomes.items()],
        ))
    assumptions = list(A.SEQUENTIAL_ANYTIME if doc.get("anytime_valid") else A.SEQUENTIAL_GLR)
    title = "Sequential audit" + (f": {label}" if label else "")
    if repeated and not label:
        title += ": repeated query orders"
    return Section("sequential", title, source, verdict, sentence, short, facts, figures, tables,
                   assumptions + extra_assumptions(doc), notes)


def _confidence_sequence(doc: Doc, path: Mapping[str, Any],
                         pairs: Mapping[str, Any]) -> dict[str, Any] | None:
    cs = doc.get("confidence_sequence")
    if isinstance(cs, Mapping):
        src: Mapping[str, Any] = cs
        lo_key, hi_key = "low", "high"
    elif pairs and "cs_low" in pairs:
        src, lo_key, hi_key = pairs, "cs_low", "cs_high"
    else:
        src, lo_key, hi_key = path, "cs_low", "cs_high"
    q = floats(src.get("query") or src.get("queries") or src.get("t"))
    lo, hi = floats(src.get(lo_key)), floats(src.get(hi_key))
    est = floats(src.get("estimate") or src.get("gap") or src.get("gap_estimate"))
    if not q or not lo or not hi or not len(q) == len(lo) == len(hi):
        return None
    return {"query": q, "low": lo, "high": hi,
            "estimate": est if est and len(est) == len(q) else None}
