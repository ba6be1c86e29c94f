"""Does the plan's power hold wherever the gap falls? Audits at the printed budget.

At shares 0.6/0.3/0.1, demographic parity, tolerance 0.1 and a gap of 0.2, for the balanced
(per-group, the default) and the uniform allocation: ``plan_audit_budget`` gives a budget;
``--audits`` real default audits (``AuditFrame.summary``, exact simultaneous intervals) at that
budget, with the gap on each group in turn, give P(decide unfair) and its standard error.

    python experiments/stats/plan_placement.py [--audits 1000] [--seed 0]

Writes experiments/results/stats/plan_placement.json.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from fairprobe.stats import AuditFrame
from fairprobe.stats.plan import allocate, plan_audit_budget

OUT = Path(__file__).resolve().parents[1] / "results" / "stats" / "plan_placement.json"
SHARES = {"a": 0.6, "b": 0.3, "c": 0.1}
TOL, GAP, BASE = 0.1, 0.2, 0.5


def audit_power(allocation: str, budget: int, on: int, audits: int, seed: int) -> float:
    """Share of real default audits at ``budget`` that decide unfair, the gap on group ``on``:
    rows at random from the pool (uniform) or the same number from each group (balanced)."""
    rng = np.random.default_rng(seed)
    names = np.array(list(SHARES))
    p = np.array(list(SHARES.values()))
    rates = np.full(3, BASE)
    rates[on] += GAP
    fixed = np.repeat(np.arange(3), allocate(budget, np.full(3, 1 / 3)))
    hits = 0
    for _ in range(audits):
        g = rng.choice(3, size=budget, p=p) if allocation == "uniform" else fixed
        pred = (rng.random(budget) < rates[g]).astype(int)
        s = AuditFrame(y_pred=pred, sensitive_features=names[g], tolerance=TOL,
                       min_group_size=1).summary("dp")
        hits += s.verdict == "unfair"
    return hits / audits


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--audits", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    t0 = time.perf_counter()
    rows: list[dict[str, Any]] = []
    for allocation in ("balanced", "uniform"):
        plan = plan_audit_budget("dp", TOL, SHARES, gap=GAP, power=0.8, base_rate=BASE,
                                 seed=args.seed, allocation=allocation)
        for on, name in enumerate(SHARES):
            got = audit_power(allocation, plan.budget, on, args.audits, args.seed + 100 + on)
            se = float(np.sqrt(got * (1 - got) / args.audits))
            rows.append({"allocation": allocation, "budget": plan.budget,
                         "printed_power": plan.power, "gap_on": name,
                         "gap_on_share": SHARES[name], "p_unfair": got, "se": se})
            print(f"{allocation:9s} budget {plan.budget:6,}  gap on {name} ({SHARES[name]}): "
                  f"P(unfair) {got:.3f} +/- {se:.3f}  (printed {plan.power:.3f})")
    out = {"shares": SHARES, "tolerance": TOL, "gap": GAP, "base_rate": BASE,
           "audits": args.audits, "seed": args.seed, "rows": rows,
           "min_p_unfair": {a: min(r["p_unfair"] for r in rows if r["allocation"] == a)
                            for a in ("balanced", "uniform")},
           "seconds": round(time.perf_counter() - t0, 1),
           "load_average": round(os.getloadavg()[0], 2)}
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(out, indent=1))
    print(f"({out['seconds']} s; load average {out['load_average']})")


if __name__ == "__main__":
    main()
