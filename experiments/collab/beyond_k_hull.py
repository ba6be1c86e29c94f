"""More liars than the declared K: what the ``bounded`` verdict does against hull-aware liars.

The ``hull-aware`` liars (:func:`fairprobe.collab.liars.plan_hull_aware`) know the declared
``K``, every honest auditor's final counts and their own number, and all report the fixed
rates that put the ``K``-liar hull on the side of the band opposite to the truth. For every
bundled population, declared ``K`` = 0, 1, 2 and ``K + 1``, ``K + 2`` liars, 20 honest
auditors, seeds ``0 .. S-1``:

* without verification, the regulator's verdict at the declared ``K`` (wrong / decided) and
  the share of honest nodes whose own verdict is wrong;
* the same audits with the liars' number declared (``K`` = liars: Theorem 1's condition met);
* with verification at the default rate (declared ``K``);
* honest audits (no liar): the decided share at declared ``K`` = 0 .. 3, i.e. what declaring
  one or two more liars costs.

    .venv/bin/python experiments/collab/beyond_k_hull.py --seeds 20

Writes ``experiments/results/collab/beyond_k_hull.json``.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from fairprobe.collab import simulate as sim
from fairprobe.collab.verify import DEFAULT_RATE
from fairprobe.datasets.populations import POPULATIONS

OUT = Path(__file__).resolve().parents[1] / "results" / "collab" / "beyond_k_hull.json"
HONEST = 20


def _pct(k: float, n: int) -> dict[str, float]:
    p = k / n if n else math.nan
    return {"pct": round(100 * p, 2), "se": round(100 * math.sqrt(p * (1 - p) / n), 2)}


def cell(case: str, liars: int, declared: int, seeds: int, *,
         verify: float | None = None) -> dict[str, Any]:
    wrong = decided = 0
    node_wrong = []
    for seed in range(seeds):
        cfg = sim.SimConfig(case=case, honest=HONEST, attackers=liars, seed=seed,
                            attack="hull-aware" if liars else "adaptive", max_liars=declared,
                            verify_rate=verify)
        r = sim.simulate(cfg, bounded_only=True)
        truth = "fair" if abs(r.honest_dp) <= cfg.tau else "unfair"
        v = r.bounded["verdict"]
        decided += v != "undetermined"
        wrong += v not in (truth, "undetermined")
        nv = np.asarray(r.bounded["verdicts"])
        node_wrong.append(float(np.mean((nv != truth) & (nv != "undetermined"))))
    return {"case": case, "liars": liars, "declared": declared, "verify_rate": verify,
            "runs": seeds, "wrong": _pct(wrong, seeds), "decided": _pct(decided, seeds),
            "node_wrong_pct": round(100 * float(np.mean(node_wrong)), 2)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--cases", default=",".join(POPULATIONS))
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    rows: list[dict[str, Any]] = []
    for case in args.cases.split(","):
        for k in (0, 1, 2):
            for liars in (k + 1, k + 2):
                for declared, verify in ((k, None), (liars, None), (k, DEFAULT_RATE)):
                    row = {**cell(case, liars, declared, args.seeds, verify=verify),
                           "K": k, "setting": ("declared K" if declared == k and verify is None
                                               else "K = liars" if verify is None
                                               else "declared K, verified")}
                    rows.append(row)
                    print(json.dumps(row), flush=True)
        for declared in range(4):
            row = {**cell(case, 0, declared, args.seeds), "K": declared, "setting": "honest"}
            rows.append(row)
            print(json.dumps(row), flush=True)
    out = {"honest": HONEST, "seeds": args.seeds, "attack": "hull-aware",
           "verify_rate": DEFAULT_RATE, "rows": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
