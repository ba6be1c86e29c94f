"""Ablation: the GLR burn-in ``min_per_group`` against its type-I error at the boundary.

    .venv/bin/python experiments/sequential/min_per_group.py [--audits 1000]

Pools from ``error_rates.synthetic_pool`` with the gap exactly at delta = 0.1 (H0 true, so every
"violation" is an error), budget 4,000. Writes ``min_per_group.json``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from error_rates import DELTA, OUT, synthetic_pool  # noqa: E402

from fairprobe.report import write_json  # noqa: E402
from fairprobe.sequential.pool import run_pool  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--audits", type=int, default=1000)
    ap.add_argument("--budget", type=int, default=4000)
    a = ap.parse_args()
    rows = []
    print(f"{'access':9s} {'min/group':>9s} {'type-I':>7s} {'compliant':>9s} {'inconcl.':>8s} "
          f"{'mean q':>7s}")  # fmt: skip
    for access in ("decisions", "scores"):
        pool = synthetic_pool(access, DELTA)
        for m in (1, 2, 5, 10, 20, 50):
            if access == "scores" and m < 2:
                continue
            res = run_pool(pool, access=access, test="glr", tolerance=DELTA, budget=a.budget,
                           repeats=a.audits, seed=0, test_options={"min_per_group": m})  # fmt: skip
            o = res.shares
            rows.append({"access": access, "min_per_group": m, "outcomes": o,
                         "mean_queries": res.mean_queries})  # fmt: skip
            print(f"{access:9s} {m:9d} {o['violation']:7.3f} {o['compliant']:9.3f} "
                  f"{o['inconclusive']:8.3f} {res.mean_queries:7.1f}")  # fmt: skip
    write_json(OUT / "min_per_group.json", {"audits": a.audits, "budget": a.budget, "rows": rows})


if __name__ == "__main__":
    main()
