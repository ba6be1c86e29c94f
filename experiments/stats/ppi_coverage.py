"""Coverage and width of PPI++ gap intervals (``--label-proxy-col``) against labelled-only ones.

Two groups of 5,000 rows each; base rate 0.4; TPR 0.8 vs 0.7 (a true equal-opportunity gap of
0.1) and FPR 0.2 vs 0.2; in each group ``n`` rows drawn uniformly at random carry the true
label. The proxy label equals the true one with probability ``acc`` (per group: a proxy worse in
one group is biased there, which PPI++ corrects). For each cell, ``--reps`` seeds: the share of
seeds where the 95% interval of the gap covers the true gap, with its standard error, for PPI++
(:func:`fairprobe.stats.ppi.ppi_gap_findings`) and for the labelled-only Wald interval
(lambda = 0, the classical one), the mean widths, and their ratio.

    python experiments/stats/ppi_coverage.py              # full: 1,000 seeds per cell
    python experiments/stats/ppi_coverage.py --reps 100   # quick

Writes experiments/results/stats/ppi_coverage.json and prints the table of docs/audit.md.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import numpy as np
from scipy.stats import norm

from fairprobe.stats.ppi import ppi_gap_findings

OUT = Path(__file__).resolve().parents[1] / "results" / "stats" / "ppi_coverage.json"
ROWS = 5000
TPR = {"a": 0.8, "b": 0.7}
FPR = {"a": 0.2, "b": 0.2}
TRUTH = {"equal_opportunity_difference": TPR["a"] - TPR["b"],
         "false_positive_rate_difference": FPR["a"] - FPR["b"]}
CELLS = [  # (labelled per group, proxy accuracy in a, in b)
    (100, 0.9, 0.9), (400, 0.9, 0.9), (100, 0.75, 0.75), (400, 0.75, 0.75),
    (100, 0.95, 0.8), (400, 0.95, 0.8),
]


def one(seed: int, n: int, acc_a: float, acc_b: float) -> dict[str, tuple[float, ...]]:
    r = np.random.default_rng(seed)
    g = np.repeat(["a", "b"], ROWS)
    y = r.binomial(1, 0.4, 2 * ROWS)
    tpr = np.where(g == "a", TPR["a"], TPR["b"])
    fpr = np.where(g == "a", FPR["a"], FPR["b"])
    pred = np.where(y == 1, r.random(2 * ROWS) < tpr, r.random(2 * ROWS) < fpr).astype(float)
    acc = np.where(g == "a", acc_a, acc_b)
    proxy = np.where(r.random(2 * ROWS) < acc, y, 1 - y)
    labelled = np.zeros(2 * ROWS, dtype=bool)
    for k in range(2):  # n rows of each group, uniformly at random
        labelled[k * ROWS + r.choice(ROWS, n, replace=False)] = True
    t = np.where(labelled, y, np.nan)
    block = ppi_gap_findings(pred, t, proxy, g, list(TRUTH), tolerance=0.05)
    z = float(norm.ppf(0.975))
    out = {}
    for m in block["metrics"]:
        iv = m["finding"]["interval"]
        ga, gb = m["groups"]["a"], m["groups"]["b"]
        d_c = ga["classical"] - gb["classical"]
        se_c = math.hypot((ga["classical_high"] - ga["classical"]) / z,
                          (gb["classical_high"] - gb["classical"]) / z)
        truth = TRUTH[m["metric"]]
        out[m["metric"]] = (float(iv["low"] <= truth <= iv["high"]), iv["high"] - iv["low"],
                            float(abs(d_c - truth) <= z * se_c), 2 * z * se_c,
                            (ga["lambda"] + gb["lambda"]) / 2)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=1000)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    t0 = time.time()
    rows = []
    for n, acc_a, acc_b in CELLS:
        draws = [one(seed, n, acc_a, acc_b) for seed in range(args.reps)]
        for metric in TRUTH:
            a = np.array([d[metric] for d in draws])
            cov_p, cov_c = a[:, 0].mean(), a[:, 2].mean()
            rows.append({
                "metric": metric, "labelled_per_group": n, "unlabelled_per_group": ROWS - n,
                "proxy_accuracy": f"{acc_a}/{acc_b}", "truth": TRUTH[metric],
                "ppi_coverage": cov_p, "ppi_coverage_se": math.sqrt(cov_p * (1 - cov_p) / len(a)),
                "classical_coverage": cov_c,
                "classical_coverage_se": math.sqrt(cov_c * (1 - cov_c) / len(a)),
                "ppi_width": a[:, 1].mean(), "classical_width": a[:, 3].mean(),
                "width_ratio": a[:, 1].mean() / a[:, 3].mean(), "mean_lambda": a[:, 4].mean()})
            r = rows[-1]
            print(f"{metric[:24]:24} n={n:4} acc={r['proxy_accuracy']:9} "
                  f"PPI++ {cov_p:.3f}±{r['ppi_coverage_se']:.3f} w={r['ppi_width']:.4f}  "
                  f"labelled-only {cov_c:.3f}±{r['classical_coverage_se']:.3f} "
                  f"w={r['classical_width']:.4f}  ratio {r['width_ratio']:.3f} "
                  f"lambda {r['mean_lambda']:.3f}")
    doc = {"experiment": "PPI++ gap intervals vs labelled-only Wald intervals",
           "reps": args.reps, "rows_per_group": ROWS, "confidence_level": 0.95,
           "seeds": f"0..{args.reps - 1}", "rows": rows, "seconds": round(time.time() - t0, 1)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
