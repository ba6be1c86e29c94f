"""Queries to a verdict under each allocation of the black-box every-group audit (simulated).

Run: ``.venv/bin/python benchmarks/bench_queries.py [--reps 2000] [--check-reps 4000]``

For demographic parity with tolerance 0.1 over three groups at shares 0.34/0.33/0.33,
0.6/0.3/0.1, 0.9/0.05/0.05 and 0.97/0.02/0.01, every group at rate 0.5 but the smallest, at
0.5 + gap, with the gap inside (0.05), at (0.1) and beyond (0.2) the tolerance: for each
allocation (``uniform``, ``balanced``, ``neyman``, ``adaptive``), the smallest budget at which
the audit reaches the right verdict (``fair`` inside, ``unfair`` beyond) with probability 0.8
(doubling then bisection to 2%, ``--reps`` audits a budget), then ``--check-reps`` audits at
that budget on another seed: the share deciding right, the share deciding wrong, the coverage
of the largest gap's interval, the queries spent (adaptive: the mean; the budget is its cap),
each with its standard error. At the tolerance the audits run at the inside budget (``unfair``
is then wrong; nothing should decide ``fair`` often).

The audits are simulated, not sent over HTTP: Bernoulli answers drawn in numpy, vectorised over
the audits, through the audit's own allocation code (:func:`fairprobe.audit.run.allocate`,
:func:`~fairprobe.audit.run.neyman_split`, :mod:`fairprobe.stats.allocation`, whose
:func:`~fairprobe.stats.allocation.simulate_adaptive` runs the adaptive batches) and the default
exact family (:func:`fairprobe.stats.allocation.question_bounds`, the summary's interval). The
pool is taken as larger than any budget (no group is short).

It ends with the "done when" check: the default plan at 0.9/0.05/0.05 (gap 0, power 0.8)
against the balanced plan, and the simulated balanced audits at that budget.

Writes ``experiments/results/stats/bench_queries.json``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from fairprobe.audit.run import allocate, neyman_split
from fairprobe.stats import allocation as design
from fairprobe.stats.finding import decide_array
from fairprobe.stats.plan import plan_audit_budget

OUT = Path(__file__).resolve().parents[1] / "experiments" / "results" / "stats" / \
    "bench_queries.json"
SHARES = [(0.34, 0.33, 0.33), (0.6, 0.3, 0.1), (0.9, 0.05, 0.05), (0.97, 0.02, 0.01)]
GAPS = {"inside": 0.05, "at": 0.1, "beyond": 0.2}
ALLOCATIONS = ("uniform", "balanced", "neyman", "adaptive")
TOL, BASE, CONF, POWER = 0.1, 0.5, 0.95, 0.8


def simulate(allocation: str, shares: np.ndarray, budget: int, gap: float, reps: int,
             seed: int) -> dict[str, np.ndarray]:
    """``reps`` audits: each one's verdict, whether its interval holds the true gap, and the
    queries it spent."""
    rng = np.random.default_rng(seed)
    g = shares.size
    rates = np.full(g, BASE)
    rates[-1] = BASE + gap  # the smallest group
    big = [budget + 1] * g  # a pool larger than any budget
    level = CONF
    if allocation == "uniform":
        n = rng.multinomial(budget, shares, size=reps)
        k = rng.binomial(n, rates)
    elif allocation == "balanced":
        n = np.broadcast_to(np.asarray(allocate(big, budget, "balanced")), (reps, g)).copy()
        k = rng.binomial(n, rates)
    elif allocation == "neyman":
        pilot = np.asarray(allocate(big, max(g, math.ceil(budget * design.NEYMAN_PILOT)),
                                    "balanced"))
        k0 = rng.binomial(np.broadcast_to(pilot, (reps, g)), rates)
        w = design.neyman_weights((k0 + 0.5) / (pilot + 1.0))
        # one split per distinct pilot outcome (the audits share most of them)
        uniq, inv = np.unique(w.round(12), axis=0, return_inverse=True)
        tot = np.stack([neyman_split(big, budget, pilot, u) for u in uniq])[inv.ravel()]
        n = tot
        k = k0 + rng.binomial(tot - pilot, rates)
    else:
        totals = allocate(big, budget, "balanced")
        sim = design.simulate_adaptive(rates, totals, reps=reps, rng=rng, kind="difference",
                                       tolerance=TOL, confidence_level=CONF)
        gap_true = rates.max() - rates.min()
        return {"verdict": sim["verdict"],
                "covers": (sim["low"] <= gap_true) & (gap_true <= sim["high"]),
                "spent": sim["spent"]}
    lo, hi = design.question_bounds(k, np.maximum(n, 1), kind="difference",
                                    confidence_level=level)
    v = decide_array(lo, hi, kind="difference", threshold=TOL)
    v = np.where((n >= 1).all(axis=1), v, "undetermined")
    return {"verdict": v, "covers": (lo <= gap) & (gap <= hi),
            "spent": np.full(reps, float(budget))}


def _share(x: np.ndarray) -> tuple[float, float]:
    p = float(np.mean(x))
    return round(p, 4), round(math.sqrt(max(p * (1 - p), 1e-12) / x.size), 4)


def budget_for(allocation: str, shares: np.ndarray, gap: float, target: str, reps: int,
               seed: int) -> int:
    """Smallest budget whose simulated audits decide ``target`` with probability >= 0.8."""
    def power(n: int) -> float:
        return float(np.mean(simulate(allocation, shares, n, gap, reps, seed)["verdict"]
                             == target))

    lo, hi = 0, 64 * shares.size
    while power(hi) < POWER:
        lo, hi = hi, hi * 2
        if hi > 5_000_000:
            raise RuntimeError("no budget found")
    while hi - lo > max(1, math.ceil(hi * 0.02)):
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if power(mid) >= POWER else (mid, hi)
    return hi


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=2000)
    ap.add_argument("--check-reps", type=int, default=4000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    t0 = time.perf_counter()
    rows: list[dict[str, Any]] = []
    for sh in SHARES:
        shares = np.asarray(sh)
        label = "/".join(f"{s:g}" for s in sh)
        for alloc in ALLOCATIONS:
            budgets = {"inside": budget_for(alloc, shares, GAPS["inside"], "fair", args.reps,
                                            args.seed),
                       "beyond": budget_for(alloc, shares, GAPS["beyond"], "unfair", args.reps,
                                            args.seed)}
            budgets["at"] = budgets["inside"]
            for where, gap in GAPS.items():
                target, wrong = ("unfair", "fair") if where == "beyond" else ("fair", "unfair")
                r = simulate(alloc, shares, budgets[where], gap, args.check_reps, args.seed + 1)
                right, right_se = _share(r["verdict"] == target)
                bad, bad_se = _share(r["verdict"] == wrong)
                cov, cov_se = _share(r["covers"])
                spent = r["spent"]
                rows.append({
                    "shares": label, "allocation": alloc, "gap": where, "gap_value": gap,
                    "budget": budgets[where], "target": target,
                    "queries": round(float(spent.mean()), 1),
                    "queries_se": round(float(spent.std(ddof=1) / math.sqrt(spent.size)), 1),
                    "right": right, "right_se": right_se, "wrong": bad, "wrong_se": bad_se,
                    "coverage": cov, "coverage_se": cov_se})
                print(f"{label:>16} {alloc:>9} {where:>6}: budget {budgets[where]:>7,} "
                      f"queries {spent.mean():>9,.0f}  {target} {right:.3f}±{right_se:.3f}  "
                      f"wrong {bad:.3f}±{bad_se:.3f}  coverage {cov:.3f}±{cov_se:.3f}",
                      flush=True)
    # done when: the default plan at 0.9/0.05/0.05 against the balanced plan, realised audits
    sh = {"a": 0.9, "b": 0.05, "c": 0.05}
    default = plan_audit_budget("dp", TOL, sh, power=POWER, seed=args.seed)
    balanced = plan_audit_budget("dp", TOL, sh, power=POWER, seed=args.seed,
                                 allocation="balanced")
    uniform = plan_audit_budget("dp", TOL, sh, power=POWER, seed=args.seed,
                                allocation="uniform")
    r = simulate("balanced", np.asarray([0.9, 0.05, 0.05]), default.budget, 0.0,
                 args.check_reps, args.seed + 2)
    fair, fair_se = _share(r["verdict"] == "fair")
    unfair, unfair_se = _share(r["verdict"] == "unfair")
    done = {"shares": "0.9/0.05/0.05", "gap": 0.0, "default_allocation": default.allocation,
            "default_budget": default.budget, "balanced_budget": balanced.budget,
            "uniform_budget": uniform.budget,
            "ratio_default_to_balanced": round(default.budget / balanced.budget, 4),
            "decide_fair": fair, "decide_fair_se": fair_se, "wrong_unfair": unfair,
            "wrong_unfair_se": unfair_se, "reps": args.check_reps,
            "holds": bool(default.budget <= 1.15 * balanced.budget and fair >= POWER
                          and unfair <= 1 - CONF)}
    print(f"done when: default plan {default.budget:,} ({default.allocation}) vs balanced "
          f"{balanced.budget:,} (uniform {uniform.budget:,}); audits at it decide fair "
          f"{fair:.3f}±{fair_se:.3f}, unfair {unfair:.3f}±{unfair_se:.3f} -> {done['holds']}")
    out = {"benchmark": "bench_queries", "metric": "dp", "tolerance": TOL, "base_rate": BASE,
           "confidence_level": CONF, "power": POWER, "reps": args.reps,
           "check_reps": args.check_reps, "seed": args.seed,
           "adaptive_batches": design.ADAPTIVE_BATCHES, "neyman_pilot": design.NEYMAN_PILOT,
           "gap_on": "the smallest group", "rows": rows, "done_when": done,
           "max_wrong": max(r["wrong"] for r in rows),
           "min_coverage": min(r["coverage"] for r in rows),
           "seconds": round(time.perf_counter() - t0, 1), "load": list(os.getloadavg())}
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
