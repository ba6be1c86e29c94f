"""Exact coverage of the two-group intervals at the edges (rates near 0 or 1), and width cost.

Every outcome is enumerated (no simulation error): coverage at rates (p1, p2) is
sum_{a,b} Bin(a; A, p1) Bin(b; B, p2) 1[theta in CI(a, b)]. Rates on a grid dense near 0 and 1;
the minimum over the grid is reported with where it occurs, and the expected width averaged over
the grid (log-scale width for ratios, infinite bounds capped at e^+-10).

    python experiments/stats/edge_coverage.py

Writes experiments/results/stats/edge_coverage.json and prints the tables of docs/stats.md.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from fairprobe.stats.coverage import exact_coverage_one, exact_coverage_two
from fairprobe.stats.exact import (
    clopper_pearson_interval,
    exact_difference_interval,
    exact_ratio_interval,
)
from fairprobe.stats.intervals import (
    katz_ratio_interval,
    newcombe_interval,
    normal_quantile,
    score_ratio_interval,
    wilson_interval,
)

OUT = Path(__file__).resolve().parents[1] / "results" / "stats" / "edge_coverage.json"
SIZES_ONE = (10, 20, 50, 100)
SIZES_TWO = ((10, 10), (20, 20), (50, 50), (10, 50), (10, 200))


def katz_before_fix(a: Any, A: Any, b: Any, B: Any, level: float = 0.95) -> Any:
    """The Katz interval as it was before issue 16 item 7 (correction only when a or b is 0)."""
    af, Af, bf, Bf = (np.asarray(x, dtype=float) for x in (a, A, b, B))
    c = np.where((af == 0) | (bf == 0), 0.5, 0.0)
    a2, A2, b2, B2 = af + c, Af + 2 * c, bf + c, Bf + 2 * c
    z = normal_quantile(level)
    with np.errstate(divide="ignore", invalid="ignore"):
        lt = np.log(a2 / A2) - np.log(b2 / B2)
        se = np.sqrt(1 / a2 - 1 / A2 + 1 / b2 - 1 / B2)
    return np.exp(lt - z * se), np.exp(lt + z * se)


def grid() -> np.ndarray:
    edge = np.array([0.001, 0.002, 0.005, 0.01, 0.015, 0.02, 0.03, 0.04, 0.05, 0.07, 0.1])
    mid = np.linspace(0.15, 0.85, 15)
    return np.unique(np.concatenate([edge, mid, 1 - edge]))


def main() -> None:
    t0 = time.perf_counter()
    p = grid()
    fine = np.linspace(0.0005, 0.9995, 1999)
    out: dict[str, Any] = {"level": 0.95, "grid": p.tolist(), "one": [], "two": []}
    print("exact coverage of 95% intervals (every outcome enumerated)")
    print("\none proportion: minimum over 1,999 rates in [0.0005, 0.9995]")
    print(f"{'n':>5} | {'Wilson min':>10} {'at p':>7} {'width':>6} | {'C-P min':>8} {'at p':>7} "
          f"{'width':>6}")
    for n in SIZES_ONE:
        row: dict[str, Any] = {"n": n}
        cells = []
        for name, fn in (("wilson", wilson_interval), ("clopper_pearson", clopper_pearson_interval)):
            cov, wid = exact_coverage_one(fn, n, fine)
            j = int(np.argmin(cov))
            row[name] = {"min": float(cov[j]), "at": float(fine[j]), "mean_width": float(wid.mean())}
            cells.append(f"{cov[j]:10.4f} {fine[j]:7.4f} {wid.mean():6.3f}")
        out["one"].append(row)
        print(f"{n:>5} | {cells[0]} | {cells[1]}")
    p1, p2 = (x.ravel() for x in np.meshgrid(p, p, indexing="ij"))
    methods = {
        "difference": (("newcombe", newcombe_interval), ("exact", exact_difference_interval)),
        "ratio": (("score", score_ratio_interval), ("katz", katz_ratio_interval),
                  ("katz_before_fix", katz_before_fix), ("exact", exact_ratio_interval)),
    }
    for kind, ms in methods.items():
        print(f"\n{kind}: minimum over {p1.size} rate pairs (grid of {p.size} rates, dense near "
              "0 and 1); width = expected width averaged over the grid"
              + (" (log scale)" if kind == "ratio" else ""))
        print(f"{'A':>4} {'B':>4} | " + " | ".join(f"{m:>15} min  (p1, p2)       width"
                                                for m, _ in ms))
        for A, B in SIZES_TWO:
            row = {"kind": kind, "A": A, "B": B}
            cells = []
            for name, fn in ms:
                cov, wid = exact_coverage_two(fn, A, B, p1, p2, kind=kind)
                j = int(np.argmin(cov))
                row[name] = {"min": float(cov[j]), "at": [float(p1[j]), float(p2[j])],
                             "mean_width": float(wid.mean())}
                cells.append(f"{cov[j]:19.4f}  ({p1[j]:.3f}, {p2[j]:.3f}) {wid.mean():6.3f}")
            out["two"].append(row)
            print(f"{A:>4} {B:>4} | " + " | ".join(cells))
    # issue 16 item 7: the all-positive collapse of Katz, before and after the fix
    q1, q2 = np.array([0.99, 0.9, 0.99]), np.array([0.995, 0.995, 0.9])
    out["katz_all_positive"] = []
    print("\nKatz with near-all-positive groups, sizes 10/200 (issue 16 item 7)")
    for name, fn in (("katz_before_fix", katz_before_fix), ("katz", katz_ratio_interval),
                     ("score", score_ratio_interval), ("exact", exact_ratio_interval)):
        cov, _ = exact_coverage_two(fn, 10, 200, q1, q2, kind="ratio")
        out["katz_all_positive"].append({"method": name, "rates": [q1.tolist(), q2.tolist()],
                                         "coverage": cov.tolist()})
        print(f"  {name:>16}: " + "  ".join(f"({a:.3f}, {b:.3f}) {c:.4f}"
                                             for a, b, c in zip(q1, q2, cov, strict=True)))
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(out, indent=1))
    print(f"\n({time.perf_counter() - t0:.1f} s)")


if __name__ == "__main__":
    main()
