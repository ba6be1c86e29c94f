"""Coverage of the default's confidence sequence at gaps between its grid points (sd 0.03 scores).

The default (mixture of bets) tests ``g <= c`` and ``g >= c`` on a grid of 801 points (step
0.0025). Two constructions of the bounds from the same tests:

* ``grid points`` — the outermost grid points never rejected (the construction replaced);
* ``neighbour`` (shipped) — those widened by one grid step, which covers every gap: for a gap in
  ``(c_j, c_{j+1}]`` the far neighbour's hypothesis is true.

Pools: two groups of ``--n`` scores each, Normal(0.5, sd 0.03), centred so that the pool's gap is
exactly the cell's gap: 0.07375 and 0.10125 (midway between grid points), 0.075 and 0.1 (on the
grid), 0.05; tolerance 0.1, alpha 0.05, beta 0.2, the pool's without-replacement martingale.
Per cell ``--orders`` random alternating orders; for each, two horizons:

* ``stop``: the audit as run, budget ``--budget`` — its decision, stopping time, and the
  sequence up to the stop (the interval the finding prints, and whether the gap ever left it);
* ``pool``: every pair of the pool (budget ``2 n``): uniform coverage over the whole path.

Reports coverage (the gap never outside the sequence) with binomial standard errors, the test's
decision shares and median stopping time (the decision never reads the sequence, so they are the
same for both constructions), the finding's verdict shares (fair / unfair / undetermined from the
printed interval against the band), and the wrong "unfair" share where ``|g| <= delta``.

    python experiments/sequential/cs_between_grid.py [--orders 200] [--n 2500] [--budget 2000]

Writes experiments/results/sequential/cs_between_grid.json; exits 1 if the shipped construction
covers less than 0.95 - 2 se in any cell.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path
from typing import Any

import numpy as np

from fairprobe.sequential.base import COMPLIANT, VIOLATION
from fairprobe.sequential.mixture import _CS_POINTS, MixtureBettingTest, pair_orders
from fairprobe.sequential.pool import make_orders
from fairprobe.stats.finding import decide

OUT = Path(__file__).resolve().parents[1] / "results" / "sequential" / "cs_between_grid.json"
GAPS = (0.07375, 0.10125, 0.075, 0.1, 0.05)
DELTA, ALPHA, SD = 0.1, 0.05, 0.03


def bounds(test: MixtureBettingTest, xa: np.ndarray, xb: np.ndarray
           ) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Both constructions' running bounds from one set of grid tests."""
    new = test.confidence_sequence(xa, xb)
    grid, rej_low, rej_up, est = test.grid_rejections(xa, xb)
    g = np.broadcast_to(grid, rej_low.shape)
    keep = ~(rej_low | rej_up)
    lo = np.where(keep, g, np.inf).min(axis=0)
    up = np.where(keep, g, -np.inf).max(axis=0)
    empty = ~np.isfinite(lo)
    old = (np.where(empty, est, lo), np.where(empty, est, up))
    return {"grid points": old, "neighbour": new}


def share(k: int, n: int) -> dict[str, float]:
    p = k / n
    return {"share": p, "se": math.sqrt(max(p * (1 - p), 1e-12) / n)}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--orders", type=int, default=200)
    ap.add_argument("--n", type=int, default=2500)
    ap.add_argument("--budget", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    t0 = time.time()
    n, step = args.n, 2.0 / (_CS_POINTS - 1)
    rows: list[dict[str, Any]] = []
    for ci, gap in enumerate(GAPS):
        rng = np.random.default_rng([args.seed, ci])
        a, b = rng.normal(0.5, SD, n), rng.normal(0.5, SD, n)
        x = np.concatenate([a - a.mean() + 0.5 + gap / 2, b - b.mean() + 0.5 - gap / 2])
        in_a = np.arange(2 * n) < n
        test = MixtureBettingTest(DELTA, "scores").for_pool(in_a, x)
        orders = make_orders(2 * n, 2 * n, args.orders, args.seed * 1000 + ci, in_a=in_a)
        run = test.run_orders(in_a[orders[:, :args.budget]], x[orders[:, :args.budget]])
        xa, xb, _, when = pair_orders(in_a[orders], x[orders])
        cover = {k: {"stop": 0, "pool": 0} for k in ("grid points", "neighbour")}
        verdicts = {k: {"fair": 0, "unfair": 0, "undetermined": 0} for k in cover}
        width = {k: [] for k in cover}
        for r in range(args.orders):
            k_stop = int(np.searchsorted(when[r], run.queries[r], side="right"))
            for name, (lo, up) in bounds(test, xa[r], xb[r]).items():
                out = (lo > gap + 1e-12) | (up < gap - 1e-12)
                cover[name]["pool"] += not out.any()
                cover[name]["stop"] += not out[:k_stop].any()
                ls, us = (float(lo[k_stop - 1]), float(up[k_stop - 1])) if k_stop else (-1.0, 1.0)
                verdicts[name][decide(ls, us, kind="difference", threshold=DELTA)] += 1
                width[name].append(us - ls)
        m = args.orders
        row = {
            "gap": gap, "gap_in_grid_steps": gap / step,
            "decision": {"violation": share(int((run.codes == VIOLATION).sum()), m),
                         "compliant": share(int((run.codes == COMPLIANT).sum()), m),
                         "median_queries": float(np.median(run.queries))},
            "constructions": {k: {
                "coverage_until_stop": share(cover[k]["stop"], m),
                "coverage_whole_pool": share(cover[k]["pool"], m),
                "finding": {v: share(c, m) for v, c in verdicts[k].items()},
                "median_width_at_stop": float(np.median(width[k])),
            } for k in cover},
        }
        rows.append(row)
        c = row["constructions"]
        print(f"gap {gap:.5f} ({gap / step:5.2f} steps): violation "
              f"{row['decision']['violation']['share']:.3f}, median queries "
              f"{row['decision']['median_queries']:.0f}; coverage stop/pool grid points "
              f"{c['grid points']['coverage_until_stop']['share']:.3f}/"
              f"{c['grid points']['coverage_whole_pool']['share']:.3f}, neighbour "
              f"{c['neighbour']['coverage_until_stop']['share']:.3f}/"
              f"{c['neighbour']['coverage_whole_pool']['share']:.3f}; finding decided "
              f"{1 - c['grid points']['finding']['undetermined']['share']:.3f} -> "
              f"{1 - c['neighbour']['finding']['undetermined']['share']:.3f}", flush=True)
    bad = [r for r in rows for h in ("coverage_until_stop", "coverage_whole_pool")
           if r["constructions"]["neighbour"][h]["share"]
           < 0.95 - 2 * r["constructions"]["neighbour"][h]["se"]]
    OUT.write_text(json.dumps({
        "experiment": "coverage of the mixture confidence sequence between grid points",
        "sd": SD, "n_per_group": n, "budget": args.budget, "orders": args.orders,
        "delta": DELTA, "alpha": ALPHA, "grid_step": step, "seed": args.seed, "rows": rows,
        "seconds": round(time.time() - t0, 1),
    }, indent=1) + "\n")
    print(f"wrote {OUT} in {time.time() - t0:.0f}s")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
