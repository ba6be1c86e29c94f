"""Assumption A4 of the escape bound on random networks: how often a liar has no honest
neighbour, and what the output says then.

A. For the simulator's networks (connected G(V, 4/(V-1)), attackers placed uniformly, the draw
   of :func:`fairprobe.collab.simulate._graph`) with 20 honest auditors and 1, 2, 3 or 5 liars,
   seeds ``0 .. S-1``: the share of networks in which some liar has no honest neighbour (the
   global check of :func:`fairprobe.collab.verify.a4_check`), with its standard error; and what
   the first honest node's *local* check (roster graph, its own honesty, no knowledge of who
   lies) certifies: the share of networks in which it names the liar without a challenger
   among its ``weakest`` sources, and the distribution of ``holds_unless_liars``.
B. On every such network (20 honest, 2 and 3 liars; declared K = 1, challenges at the default
   rate 0.008, the answer-level ``late`` liar and the count-level ``adaptive`` one, on two
   populations with decided verdicts): the verdict and escape bound the declared K would print
   (before the check), what is printed now (the fallback hull with the unchallenged liars
   counted, and its bound), whether the unchallenged liar was caught (never: nobody challenges
   it), and wrong decided verdicts against the population's DP.

    .venv/bin/python experiments/collab/a4_check.py --seeds 10000

Writes ``experiments/results/collab/a4_check.json``.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from fairprobe.collab import simulate as sim
from fairprobe.collab.verify import DEFAULT_RATE, a4_check

OUT = Path(__file__).resolve().parents[1] / "results" / "collab" / "a4_check.json"
HONEST = 20
CASES = ("civil-very-unfair", "bios-moderate")
ATTACKS = ("late", "adaptive")


def _share(k: int, n: int) -> dict[str, float]:
    p = k / n if n else math.nan
    return {"count": k, "of": n, "pct": round(100 * p, 3),
            "se_pct": round(100 * math.sqrt(p * (1 - p) / n), 3) if n else math.nan}


def networks(liars: int, seeds: int) -> dict[str, Any]:
    """Part A for one liar count."""
    gaps, met_all, met_gap, ls = [], 0, 0, []
    for seed in range(seeds):
        cfg = sim.SimConfig(case=CASES[0], honest=HONEST, attackers=liars, seed=seed)
        adj, att = sim._graph(cfg)
        lie = np.zeros(adj.shape[0], dtype=bool)
        lie[att] = True
        g = a4_check(adj, liars=lie)
        loc = a4_check(adj, me=int(np.flatnonzero(~lie)[0]))
        L = loc["holds_unless_liars"]
        ls.append(L)
        # the node's condition "fewer than L sources lie" is met by this many liars
        met = L is None or L > liars
        met_all += met
        if not g["holds"]:
            gaps.append(seed)
            met_gap += met  # must stay 0: the local check is sound
    vals = [x for x in ls if x is not None]
    hist = {str(v): vals.count(v) for v in sorted(set(vals))}
    return {"liars": liars, "without_challenger": _share(len(gaps), seeds),
            "gap_seeds": gaps,
            "local_condition_met": _share(met_all, seeds),
            "local_condition_met_where_a4_fails": _share(met_gap, len(gaps)),
            "local_holds_unless_liars_histogram": hist}


def outputs(liars: int, seeds: list[int]) -> list[dict[str, Any]]:
    """Part B: one row per (network, case, attack)."""
    rows = []
    for case in CASES:
        for attack in ATTACKS:
            for seed in seeds:
                cfg = sim.SimConfig(case=case, honest=HONEST, attackers=liars, seed=seed,
                                    attack=attack, max_liars=1, verify_rate=DEFAULT_RATE)
                r = sim.simulate(cfg, bounded_only=True)
                b = r.bounded
                a4 = b["a4"]
                truth = "fair" if abs(r.honest_dp) <= cfg.tau else "unfair"
                caught = b["verification"]["caught"]
                att = [int(j) for j in r.attacker_positions]
                rows.append({
                    "case": case, "attack": attack, "seed": seed, "liars": liars,
                    "without_challenger": a4["without_challenger"],
                    "declared_verdict": a4.get("declared_verdict"),
                    "declared_escape_bound": a4.get("declared_escape_bound"),
                    "declared_true_answer_verdict": a4.get("declared_true_answer_verdict"),
                    "verdict": b["verdict"], "max_liars_used": a4["max_liars"],
                    "escape_bound": b["escape_bound"],
                    "true_answer_verdict": b.get("true_answer_verdict"),
                    "truth": truth, "caught": caught, "attackers": att,
                    "declared_wrong": a4.get("declared_verdict") not in (truth, "undetermined"),
                    "wrong": b["verdict"] not in (truth, "undetermined"),
                })
    return rows


def _summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    n = len(rows)
    dec_before = [r for r in rows if r["declared_verdict"] != "undetermined"]
    # Theorem 3's event: decided, no proof found, other than the true answers' verdict
    esc_before = [r for r in dec_before if r["declared_true_answer_verdict"] is not None
                  and not any(r["caught"])
                  and r["declared_verdict"] != r["declared_true_answer_verdict"]]
    return {
        "runs": n,
        "declared_K_decided": _share(len(dec_before), n),
        "declared_K_bound_printed": sum(r["declared_escape_bound"] is not None for r in rows),
        "declared_K_bound_median": (float(np.median([r["declared_escape_bound"] for r in rows
                                                     if r["declared_escape_bound"] is not None]))
                                    if any(r["declared_escape_bound"] is not None for r in rows)
                                    else None),
        "declared_K_escaped": len(esc_before),
        "with_true_answers": sum(r["declared_true_answer_verdict"] is not None for r in rows),
        "declared_K_wrong": sum(r["declared_wrong"] for r in rows),
        "no_liar_caught": sum(not any(r["caught"]) for r in rows),
        "unchallenged_liar_caught": sum(
            any(c for j, c in zip(r["attackers"] or [], r["caught"], strict=False)
                if j in r["without_challenger"]) for r in rows),
        "fallback_decided": _share(sum(r["verdict"] != "undetermined" for r in rows), n),
        "fallback_wrong": sum(r["wrong"] for r in rows),
        "fallback_escaped": sum(r["verdict"] != "undetermined"
                                and r["true_answer_verdict"] is not None
                                and not any(r["caught"])
                                and r["verdict"] != r["true_answer_verdict"] for r in rows),
        "fallback_bound_median": (float(np.median([r["escape_bound"] for r in rows
                                                   if r["escape_bound"] is not None]))
                                  if any(r["escape_bound"] is not None for r in rows) else None),
        "fallback_bound_printed": sum(r["escape_bound"] is not None for r in rows),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=10000)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    part_a = {str(k): networks(k, args.seeds) for k in (1, 2, 3, 5)}
    for k, v in part_a.items():
        print(f"A: {HONEST} honest, {k} liars: without challenger "
              f"{v['without_challenger']['pct']}% +- {v['without_challenger']['se_pct']}",
              flush=True)
    part_b: dict[str, Any] = {}
    for k in (2, 3):
        rows = outputs(k, part_a[str(k)]["gap_seeds"])
        part_b[str(k)] = {"summary": _summary(rows), "rows": rows}
        print(f"B: {k} liars: {json.dumps(part_b[str(k)]['summary'])}", flush=True)
    out = {"honest": HONEST, "seeds": args.seeds, "verify_rate": DEFAULT_RATE,
           "declared_max_liars": 1, "cases": list(CASES), "attacks": list(ATTACKS),
           "networks": part_a, "outputs": part_b}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
