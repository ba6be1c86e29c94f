"""Family-wise coverage of the simultaneous intervals over 5 groups.

Five groups, sizes 20..2,000 per group (balanced and unbalanced), rates near 0 and near 0.5
(and near 1 for ratios); both constructions of :mod:`fairprobe.stats.simultaneous`. For each
cell, ``--reps`` simulated audits: the fraction where every pairwise interval covers ("family",
the family the verdict comes from), where every each-vs-rest interval covers ("rest", the second
family) and where the worst-pair interval covers ("worst"), with standard errors.

    python experiments/stats/coverage_groups.py            # full: 4,000 draws per cell
    python experiments/stats/coverage_groups.py --reps 500 # quick

Writes experiments/results/stats/coverage_groups.json and prints the table of docs/stats.md.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from fairprobe.stats.coverage import simultaneous_coverage

SIZES = {
    "20 each": [20] * 5,
    "50 each": [50] * 5,
    "200 each": [200] * 5,
    "2000 each": [2000] * 5,
    "20..2000": [20, 50, 200, 1000, 2000],
    "2000 x4, 20": [2000, 2000, 2000, 2000, 20],
}
RATES = {
    "all 0.5": [0.5] * 5,
    "0.4..0.6": [0.4, 0.45, 0.5, 0.55, 0.6],
    "all 0.02": [0.02] * 5,
    "0.01..0.05": [0.01, 0.01, 0.02, 0.03, 0.05],
    "0.95..0.99": [0.99, 0.99, 0.98, 0.97, 0.95],
}
METHODS = ("exact", "bonferroni")
KINDS = ("difference", "ratio")
OUT = Path(__file__).resolve().parents[1] / "results" / "stats" / "coverage_groups.json"


def cells() -> list[tuple[int, str, str, str, str]]:
    out = []
    i = 0
    for sname in SIZES:
        for rname in RATES:
            for kind in KINDS:
                for method in METHODS:
                    out.append((i, sname, rname, kind, method))
                    i += 1
    return out


def run_cell(i: int, sname: str, rname: str, kind: str, method: str, reps: int,
             seed: int) -> dict[str, object]:
    res = simultaneous_coverage(RATES[rname], SIZES[sname], reps=reps, seed=[seed, i],
                                method=method, kind=kind)
    return {"cell": i, "sizes": sname, "rates": rname, "kind": kind, "method": method,
            "reps": reps, "seed": [seed, i], **res}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=4000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    t0 = time.perf_counter()
    rows = [run_cell(*c, reps=args.reps, seed=args.seed) for c in cells()]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"level": 0.95, "groups": 5, "rows": rows}, indent=1))
    print(f"family-wise coverage of 95% simultaneous intervals, 5 groups, {args.reps} draws per "
          f"cell, seed {args.seed} (fam = all 10 pairs cover; rest = all 5 vs-rest cover; worst = "
          "the largest gap / smallest ratio covers; '*' = below 0.95 - 2 s.e.)")
    print(f"{'sizes':>12} {'rates':>11} {'kind':>10} | {'exact fam':>9} {'rest':>6} {'worst':>6} "
          f"{'width':>6} | {'bonf fam':>9} {'rest':>6} {'worst':>6} {'width':>6}")
    by = {(r["sizes"], r["rates"], r["kind"], r["method"]): r for r in rows}
    for sname in SIZES:
        for rname in RATES:
            for kind in KINDS:
                cols = []
                for method in METHODS:
                    r = by[(sname, rname, kind, method)]
                    flag = "*" if float(r["family"]) < 0.95 - 2 * float(r["se_family"]) else " "
                    cols.append(f"{r['family']:8.4f}{flag} {r['rest_family']:6.3f} "
                                f"{r['worst']:6.3f} "
                                f"{r['width_worst']:6.3f}")
                print(f"{sname:>12} {rname:>11} {kind:>10} | {cols[0]} | {cols[1]}")
    print(f"({time.perf_counter() - t0:.1f} s; widths: worst-pair interval, ratio on the "
          "ratio scale)")


if __name__ == "__main__":
    main()
