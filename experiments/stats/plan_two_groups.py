"""Two-group plans against the real default audit, and the quick estimate an undetermined
reason quotes against the full plan.

For each setting, ``plan_audit_budget`` (two groups: the exact default's verdicts, simulated)
gives a budget and its predicted power; ``AUDITS`` independent real audits (``AuditFrame`` on
rows drawn with the setting's shares and rates, the default exact two-group interval; seeds
differ from the planner's) measure the power at that budget, with its standard error. The
reason's estimate (``queries_to_decide``: Newcombe's / Koopman's plan scaled by the squared
width ratio) is printed beside the full plan's budget.

    python experiments/stats/plan_two_groups.py [--reps 1000] [--audits 600]

Writes experiments/results/stats/plan_two_groups.json.
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
from fairprobe.stats.plan import plan_audit_budget, queries_to_decide

OUT = Path(__file__).resolve().parents[1] / "results" / "stats" / "plan_two_groups.json"
#: (metric, tolerance or floor, shares of a and b, gap, base rate)
SETTINGS = (
    ("dp", 0.1, (0.5, 0.5), 0.0, 0.5),
    ("dp", 0.1, (0.7, 0.3), 0.03, 0.4),
    ("dp", 0.1, (0.5, 0.5), 0.2, 0.4),
    ("di", 0.8, (0.6, 0.4), 0.05, 0.5),
)


def audit_power(metric: str, tol: float, shares: tuple[float, float], rates: np.ndarray,
                budget: int, target: str, audits: int, seed: int) -> float:
    """Share of real default audits at ``budget`` whose verdict is ``target``."""
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(audits):
        g = rng.choice(2, size=budget, p=np.asarray(shares))
        pred = (rng.random(budget) < rates[g]).astype(int)
        kw = {"threshold": tol} if metric == "di" else {"tolerance": tol}
        s = AuditFrame(y_pred=pred, sensitive_features=np.array(["a", "b"])[g], **kw)
        hits += s.summary(metric).verdict == target
    return hits / audits


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=1000)
    ap.add_argument("--audits", type=int, default=600)
    args = ap.parse_args()
    t0 = time.perf_counter()
    rows: list[dict[str, Any]] = []
    print(f"two-group plans (power goal 0.8, {args.reps} simulated audits a budget, seed 0) "
          f"against {args.audits} real default audits")
    print(f"{'metric':>6} {'tol':>5} {'shares':>11} {'gap':>5} | {'budget':>7} {'predicted':>9} "
          f"{'audited':>15} | {'reason estimate':>15}")
    for j, (metric, tol, shares, gap, base) in enumerate(SETTINGS):
        sh = {"a": shares[0], "b": shares[1]}
        # rows drawn at random from the pool, as audit_power draws them
        plan = plan_audit_budget(metric, tol, sh, gap=gap, base_rate=base, reps=args.reps,
                                 seed=0, allocation="uniform")
        rates = np.array([base * (1 - gap) if metric == "di" else base + gap, base])
        got = audit_power(metric, tol, shares, rates, plan.budget, plan.target, args.audits,
                          seed=100 + j)
        se = float(np.sqrt(got * (1 - got) / args.audits))
        quick = queries_to_decide(
            "demographic_parity_difference" if metric == "dp" else "disparate_impact_ratio",
            tol, float(gap if metric == "dp" else 1.0 - gap), sh, base_rate=base, queried=0)
        rows.append({"metric": metric, "tolerance": tol, "shares": list(shares), "gap": gap,
                     "base_rate": base, "target": plan.target, "budget": plan.budget,
                     "predicted": plan.power, "audited": got, "se": se,
                     "reason_budget": None if quick is None else quick["budget"]})
        print(f"{metric:>6} {tol:>5} {str(shares):>11} {gap:>5} | {plan.budget:>7,} "
              f"{plan.power:>9.3f} {got:>8.3f} +- {se:.3f} | "
              f"{(quick or {}).get('budget')!s:>15}", flush=True)
    worst = max(abs(r["predicted"] - r["audited"]) for r in rows)
    out = {"reps": args.reps, "audits": args.audits, "rows": rows, "max_abs_error": worst}
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(out, indent=1))
    print(f"\nlargest |predicted - audited|: {worst:.3f}")
    print(f"({time.perf_counter() - t0:.1f} s; load average {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
