"""Does a proof of fraud reach every honest node? Real node processes against late liars.

A node posts its next table only after every proof it found has been delivered, so a proof found
in round ``r`` reaches each node within ``L - r`` hops of its finder before that node stops
(``docs/collab-network.md``, the paragraph on proofs; ``L`` the last round, closing rounds
included). The liars this suits least lie as late as they can: ``late`` (honest until its last
``ceil(0.2 R)`` querying rounds) and ``late-records`` (every lie in the last querying round's
records). For each attack and seed this runs one network of node processes on 127.0.0.1 (6
honest auditors, 1 liar, ``civil-very-unfair``, ``n = 10,000``, challenge rate 0.04) and records,
per honest node: whether it excluded the liar, in which of its rounds, its hops from the nearest
finder, and its verdict.

    .venv/bin/python experiments/collab/proof_delivery.py --seeds 5

Writes ``experiments/results/collab/proof_delivery.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections import deque
from pathlib import Path

from fairprobe.collab.net.launcher import DemoSpec, LocalNetwork

OUT = Path(__file__).resolve().parents[1] / "results" / "collab" / "proof_delivery.json"
ATTACKS = ("late", "late-records")


def _hops(neighbours: list[list[int]], sources: list[int]) -> list[int]:
    """Breadth-first distance of every node from the nearest of ``sources`` (-1: unreachable)."""
    dist = [-1] * len(neighbours)
    queue = deque(sources)
    for s in sources:
        dist[s] = 0
    while queue:
        u = queue.popleft()
        for v in neighbours[u]:
            if dist[v] < 0:
                dist[v] = dist[u] + 1
                queue.append(v)
    return dist


def run_one(attack: str, seed: int, honest: int) -> dict[str, object]:
    spec = DemoSpec(honest=honest, attackers=1, seed=seed, case="civil-very-unfair", n=10000,
                    round_timeout=120, verify=True, verify_rate=0.04, attack=attack)
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp, LocalNetwork(spec, Path(tmp) / "net") as net:
        net.write()
        net.start()
        results = net.wait(timeout=600)
        plan = net.plan
    index = {nid: i for i, nid in enumerate(plan.ids)}
    (liar,) = [nid for nid, bad in zip(plan.ids, plan.is_attacker, strict=True) if bad]
    honest_ids = [nid for nid in plan.ids if results[nid]["role"] == "honest"]
    finders = [nid for nid in honest_ids
               if results[nid]["verification"].get("proofs-made", 0) > 0]
    hops = _hops(plan.neighbours, [index[f] for f in finders]) if finders else None
    nodes = []
    for nid in honest_ids:
        r = results[nid]
        nodes.append({
            "id": nid,
            "excluded_round": r["excluded"].get(liar),
            "hops_from_finder": None if hops is None else hops[index[nid]],
            "finder": nid in finders,
            "verdict": r["verdict"],
            "proof_flush_timeouts": r["verification"].get("proof-flush-timeouts", 0),
        })
    return {
        "attack": attack, "seed": seed, "rounds": plan.rounds, "liar": liar,
        "finders": finders, "nodes": nodes,
        "all_excluded": all(n["excluded_round"] is not None for n in nodes),
        "wall_s": round(time.monotonic() - t0, 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--honest", type=int, default=6)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    load_start = os.getloadavg()[0]
    runs = []
    for attack in ATTACKS:
        for seed in range(args.seeds):
            run = run_one(attack, seed, args.honest)
            runs.append(run)
            excl = sum(n["excluded_round"] is not None for n in run["nodes"])
            print(f"{attack:<13} seed {seed}: {len(run['finders'])} finder(s), liar excluded at "
                  f"{excl}/{len(run['nodes'])} honest nodes, verdicts "
                  f"{sorted({n['verdict'] for n in run['nodes']})}, {run['wall_s']} s",
                  flush=True)
    summary = {}
    for attack in ATTACKS:
        nodes = [n for r in runs if r["attack"] == attack for n in r["nodes"]]
        summary[attack] = {
            "runs": sum(r["attack"] == attack for r in runs),
            "runs_with_a_finder": sum(r["attack"] == attack and bool(r["finders"]) for r in runs),
            "honest_nodes": len(nodes),
            "excluded": sum(n["excluded_round"] is not None for n in nodes),
            "fair_verdicts": sum(n["verdict"] == "fair" for n in nodes),
            "proof_flush_timeouts": sum(n["proof_flush_timeouts"] for n in nodes),
            "max_hops_from_finder": max((n["hops_from_finder"] or 0) for n in nodes),
        }
        print(f"{attack}: {summary[attack]}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({
        "config": {"seeds": args.seeds, "honest": args.honest, "attackers": 1,
                   "case": "civil-very-unfair", "n": 10000, "verify_rate": 0.04,
                   "load_average": [load_start, os.getloadavg()[0]]},
        "summary": summary, "runs": runs}, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
