"""Collaborative audits: per-method and per-node estimates, suspicion over rounds, sweeps."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from fairprobe import metrics as _metrics
from fairprobe.report import assumptions as A
from fairprobe.report._read import (
    Doc,
    extra_assumptions,
    floats,
    fmt,
    get,
    mapping,
    num,
    pct,
)
from fairprobe.report.document import FigureSpec, Section, Table

__all__ = ["adapt_collab_nodes", "adapt_collab_simulate", "adapt_collab_sweep"]


def _collab_sources(doc: Doc) -> list[dict[str, Any]]:
    """Per-source rows from the simulator's columnar ``sources`` block (ids, role, local_dp,
    weight, scores_by_round), or [] when absent."""
    src = mapping(doc.get("sources"))
    ids = src.get("ids")
    if not isinstance(ids, list) or not ids:
        return []

    def col(key: str) -> list[Any]:
        v = src.get(key)
        return v if isinstance(v, list) and len(v) == len(ids) else [None] * len(ids)

    out = []
    for i, role, dp, w, sc, q in zip(ids, col("role"), col("local_dp"), col("weight"),
                                     col("scores_by_round"), col("queries"), strict=True):
        out.append({"id": str(i), "estimate": num(dp), "weight": num(w),
                    "attacker": role == "attacker", "suspicion": floats(sc), "queries": q})
    return out


def _collab_nodes(doc: Doc) -> list[dict[str, Any]]:
    sources = _collab_sources(doc)
    if sources:
        return sources
    nodes = doc.get("nodes")
    if isinstance(nodes, Mapping):
        nodes = [dict(v, id=k) for k, v in nodes.items() if isinstance(v, Mapping)]
    out = []
    for i, n in enumerate(nodes if isinstance(nodes, list) else []):
        if not isinstance(n, Mapping):
            continue
        out.append({
            "id": str(n.get("id", n.get("node", i))),
            "estimate": num(n.get("estimate", n.get("local_estimate", n.get(_metrics.DP.short)))),
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
    if not attackers and isinstance(positions, list):  # indices, when roles are not given
        ids = [n["id"] for n in nodes]
        attackers = {ids[p] if isinstance(p, int) and 0 <= p < len(ids) else str(p)
                     for p in positions}
    return {"series": series, "attackers": sorted(attackers)}

def adapt_collab_simulate(doc: Doc, source: str, label: str) -> Section:
    cfg = mapping(doc.get("config"))
    tau = num(cfg.get("tau")) or num(doc.get("tau")) or num(get(doc, "band", "high"))
    true_dp = num(doc.get("true_dp"))
    runs = [r for r in doc.get("runs") or [] if isinstance(r, Mapping)]
    by_method = {str(r.get("method")): r for r in runs}
    default = str(doc.get("default_method") or "robust")
    main = next((by_method[m] for m in (default, "robust", "auditopus") if m in by_method),
                runs[-1] if runs else {})
    est = num(main.get("estimate")) if main else num(doc.get("estimate"))
    verdict = str(main.get("verdict") or _band_verdict(est, tau))
    true_verdict = _band_verdict(true_dp, tau)
    iv = mapping(main.get("interval"))
    sentence = (
        f"With {fmt(cfg.get('attackers'))} attacker(s) among {fmt(cfg.get('honest'))} honest "
        f"auditors ({cfg.get('case', 'population')}), {main.get('method', 'the protocol')} "
        + (f"puts the demographic parity gap in [{fmt(iv.get('low'))}, {fmt(iv.get('high'))}] "
           f"whichever {fmt(cfg.get('max_liars', 0))} auditor(s) lie" if iv else
           f"estimates the demographic parity gap at {fmt(est)}")
        + f" (true {fmt(true_dp)}; fair band +/-{fmt(tau, 2)}): {verdict}"
        + (" - undetermined is never wrong" if verdict == "undetermined"
           else " - the attackers did not flip the verdict" if verdict == true_verdict
           else f" - the attackers flipped the verdict (truth: {true_verdict})")
        + " (a simulation with a known truth: it evaluates the method, not the audited model)."
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
    traj = {str(k): f for k, v in mapping(doc.get("trajectory")).items()
            if (f := floats(v)) is not None}
    if traj:
        figures.append(FigureSpec(
            plot="collab_trajectory",
            data={"series": traj, "tau": tau, "true": true_dp},
            alt=("Median honest auditor's estimate over rounds: "
                 + ", ".join(f"{k} from {fmt(v[0])} to {fmt(v[-1])}" for k, v in traj.items())
                 + f"; fair band +/-{fmt(tau, 2)}, true gap {fmt(true_dp)}."),
            caption="Estimates over rounds against the verdict band (shaded) and the true gap.",
        ))
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
    cert = mapping(doc.get("certified_k"))
    facts = [("case", str(cfg.get("case", "n/a"))),
             ("honest auditors / attackers", f"{fmt(cfg.get('honest'))} / {fmt(cfg.get('attackers'))}"),
             ("attack", str(cfg.get("attack", "n/a"))),
             ("rounds", f"{fmt(doc.get('rounds'))} (cap {fmt(cfg.get('max_rounds'))})"),
             ("queries per auditor and round", fmt(cfg.get("n"))),
             ("fair band", f"|DP| <= {fmt(tau, 3)}"), ("true DP", fmt(true_dp)),
             ("seed", fmt(cfg.get("seed")))]
    for m, k in cert.items():
        if isinstance(k, int | float) and k >= 0:
            facts.append((f"certified: {m}'s verdict holds against up to", f"{fmt(k)} liars"))
    if iv:
        facts += [("declared liar bound K", fmt(cfg.get("max_liars", 0))),
                  ("flip mass (fabricated answers needed to flip)", fmt(main.get("flip_mass"))),
                  ("escape bound (1-c)^flip_mass", fmt(main.get("escape_bound"))
                   if main.get("escape_bound") is not None else "no verification")]
    tables = [Table(
        caption="Final estimate and verdict per aggregation method",
        header=["method", "estimate", "interval", "verdict", "wrong", "certified k"],
        rows=[[str(r.get("method")), fmt(r.get("estimate")),
               (f"[{fmt(get(r, 'interval', 'low'))}, {fmt(get(r, 'interval', 'high'))}]"
                if isinstance(r.get("interval"), Mapping) else "point"),
               str(r.get("verdict") or _band_verdict(num(r.get("estimate")), tau)),
               "yes" if r.get("wrong", r.get("fooled")) else "no",
               fmt(r.get("certified_k")) if (r.get("certified_k") or -1) >= 0 else "n/a"]
              for r in runs],
    )] if runs else []
    section = Section("collab-simulate",
                      "Collaborative audit (simulation)" + (f": {label}" if label else ""),
                      source, verdict, sentence,
                      f"{verdict}: estimate {fmt(est)} (true {fmt(true_dp)})",
                      facts, figures, tables, A.COLLAB + extra_assumptions(doc), notes)
    section.counts = False
    return section

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
    methods = {m for _, m in success}
    name = next((m for m in ("robust", "auditopus") if m in methods), None)
    ours = [max(d.values()) for (c, m), d in success.items() if m == name]
    worst = max(ours) if ours else None
    sentence = (f"Over {len(runs)} simulated runs ({len(seeds)} seeds per configuration), the "
                f"attackers' highest success rate against {name or 'the protocol'} was "
                f"{pct(worst)} (a simulation with a known truth: it evaluates the method, not "
                f"the audited model).")
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
    section = Section("collab-sweep",
                      "Collaborative audit sweep (simulation)" + (f": {label}" if label else ""),
                      source, verdict, sentence,
                      f"highest attack success on {name or 'the protocol'} {pct(worst)}",
                      facts, figures, tables, A.COLLAB + extra_assumptions(doc), [])
    section.counts = False
    return section

def _network_nodes(doc: Doc) -> list[dict[str, Any]]:
    """Rows of a networked run: each node's estimate, the mean weight honest nodes give it (its
    ``source_weights`` entry in every honest node's view), role, trajectory, exclusions."""
    raw = [n for n in doc.get("nodes") or [] if isinstance(n, Mapping)]
    honest = [n for n in raw if n.get("role") == "honest"]
    out = []
    for n in raw:
        nid = str(n.get("id"))
        ws = [w for h in honest if (w := num(mapping(h.get("source_weights")).get(nid)))
              is not None]
        out.append({
            "id": nid, "estimate": num(n.get("estimate")),
            "weight": sum(ws) / len(ws) if ws else None,
            "attacker": n.get("role") == "attacker", "suspicion": None,
            "trajectory": floats(n.get("trajectory")),
            "verdict": n.get("verdict"), "certified_k": n.get("certified_k"),
            "excluded_by": sum(1 for h in honest if nid in mapping(h.get("excluded"))),
        })
    return out


def _certified(k: Any) -> str:
    if k is None:
        return ""
    if k == 0:
        return " (not certified: one fabricating auditor could flip it)"
    return f", a verdict certified against up to {fmt(k)} fabricating auditors"


def adapt_collab_nodes(doc: Doc, source: str, label: str) -> Section:
    nodes = _network_nodes(doc) if any(
        isinstance(n, Mapping) and "role" in n for n in doc.get("nodes") or []
    ) else _collab_nodes(doc)
    est = num(doc.get("median", doc.get("estimate", get(doc, "result", "estimate"))))
    tau = num(doc.get("tau", get(doc, "config", "tau")))
    true_dp = num(doc.get("honest_dp", doc.get("true_dp")))
    verdict = str(doc.get("verdict") or _band_verdict(est, tau))
    n_att = sum(1 for n in nodes if n["attacker"])
    excl = mapping(doc.get("exclusions"))
    caught = [a for a, e in excl.items() if num(get(e, "excluded_by")) ]
    sentence = (
        f"{len(nodes)} auditor nodes ({n_att} attacker{'s' if n_att != 1 else ''}) ran the "
        f"protocol over HTTP for {fmt(doc.get('rounds'))} rounds; the median node estimate of "
        f"the demographic parity gap is {fmt(est)} (fair band +/-{fmt(tau, 2)}"
        + (f"; honest auditors' data {fmt(true_dp)}" if true_dp is not None else "")
        + f"): {verdict}"
        + (f" (bounded interval [{fmt(get(doc, 'interval', 'low'))}, "
           f"{fmt(get(doc, 'interval', 'high'))}] whichever {fmt(doc.get('max_liars'))} "
           f"auditor(s) lie; escape bound {fmt(doc.get('escape_bound'))})"
           if doc.get("default_method") == "bounded" else "")
        + _certified(doc.get("certified_k"))
        + (f"; {len(caught)} attacker(s) excluded on a proof of fraud" if caught else "")
        + "."
    )
    figures: list[FigureSpec] = []
    notes: list[str] = []
    if nodes and any(n["estimate"] is not None for n in nodes):
        have_w = any(n["weight"] is not None for n in nodes)
        figures.append(FigureSpec(
            plot="collab_nodes", data={"nodes": nodes, "tau": tau, "true": true_dp},
            alt=(f"Final estimate of each of {len(nodes)} nodes"
                 + (" and the mean weight honest nodes give it" if have_w else "") + ": "
                 + ", ".join(f"{n['id']}{' (attacker)' if n['attacker'] else ''} "
                             f"{fmt(n['estimate'])}" for n in nodes) + "."),
            caption=("Each node's estimate and the mean weight the honest nodes give its "
                     "statistics (attackers as crosses)."),
        ))
    traj = {n["id"] + (" (attacker)" if n["attacker"] else ""): n["trajectory"]
            for n in nodes if n.get("trajectory")}
    if traj:
        figures.append(FigureSpec(
            plot="collab_trajectory", data={"series": traj, "tau": tau, "true": true_dp},
            alt=(f"Estimate of each of {len(traj)} nodes over rounds, against the fair band "
                 f"+/-{fmt(tau, 2)}."),
            caption="Each node's estimate over rounds against the verdict band (shaded).",
        ))
    susp = _suspicion_over_rounds(doc, nodes)
    if susp:
        figures.append(FigureSpec(
            plot="collab_suspicion", data={**susp, "z_max": num(get(doc, "config", "z_max"))},
            alt=f"Suspicion score of {len(susp['series'])} nodes over rounds.",
            caption="Suspicion scores over rounds.",
        ))
    else:
        notes.append("This result carries no suspicion scores over rounds: no suspicion figure.")
    facts = [(k.replace("_", " "), fmt(v) if not isinstance(v, str) else v)
             for k, v in doc.items()
             if k not in ("schema", "kind") and not isinstance(v, Mapping | list)]
    tables = [Table(
        caption="Nodes: final estimate, verdict, certificate and exclusions",
        header=["node", "role", "estimate", "verdict", "certified k", "excluded by"],
        rows=[[n["id"], "attacker" if n["attacker"] else "honest", fmt(n["estimate"]),
               str(n.get("verdict") or _band_verdict(n["estimate"], tau)),
               fmt(n.get("certified_k")) if n.get("certified_k") is not None else "n/a",
               f"{n.get('excluded_by', 0)} honest nodes"] for n in nodes],
    )] if nodes else []
    section = Section("collab-nodes", "Collaborative audit over the network"
                      + (f": {label}" if label else ""), source, verdict, sentence,
                      f"{verdict}: median estimate {fmt(est)}", facts, figures, tables,
                      A.COLLAB + extra_assumptions(doc), notes)
    # a replay of a bundled population is a simulation: it does not count in the headline
    subject = get(doc, "finding", "question", "subject")
    section.counts = subject != "simulation"
    return section
