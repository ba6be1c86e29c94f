"""How fast can any valid monitor detect a 0.15 step at 50 rows a group? An oracle's delay.

The monitor's null is "every window fair": ``p_a - p_b <= eps`` (``eps = 0.05``) in every window.
After a step to rates 0.50 and 0.35 (gap 0.15), the fastest e-process against that composite
null grows at most at the rate of the smallest Kullback-Leibler divergence from the step's law
to a fair law (the growth-optimal, numeraire e-value: Grünwald, de Heide and Koolen, "Safe
testing", JRSS-B 2024; Larsson, Ramdas and Ruf, "The numeraire e-variable", 2024). Per window of
``n`` rows per group that is

    KL* = min_{q_a - q_b = eps} n [KL(0.50 || q_a) + KL(0.35 || q_b)],

at the projection ``(q_a, q_b)``: any level-``a`` test's expected delay is at least about
``log(1/a) / KL*`` (Wald's and Lai's lower bound, up to the overshoot). The oracle below *knows*
the step's rates and bets the likelihood ratio of the step against that projection, the
fastest growth an e-process can have here; its delay (windows from the step to
``log LR >= log(1/a)``) is a reference a monitor that does not know the rates cannot beat on
average. Reported at ``a = alpha`` (the whole budget, one pair) and ``a = 0.8 alpha`` (the
shipped monitor's drift share). Binomial counts, seeded.

    python experiments/monitor/oracle_delay.py [--reps 20000] [--seed 0]

Writes experiments/results/monitor/oracle_delay.json.
"""

from __future__ import annotations

import argparse
import json
import math
import os
from pathlib import Path

import numpy as np
from scipy.optimize import minimize_scalar

OUT = Path(__file__).resolve().parents[1] / "results" / "monitor" / "oracle_delay.json"
EPS, ALPHA, N, P_A, P_B, T = 0.05, 0.05, 50, 0.50, 0.35, 200


def _kl(p: float, q: float) -> float:
    return p * math.log(p / q) + (1 - p) * math.log((1 - p) / (1 - q))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    proj = minimize_scalar(lambda qa: N * (_kl(P_A, qa) + _kl(P_B, qa - EPS)),
                           bounds=(EPS + 1e-6, 1 - 1e-6), method="bounded", options={"xatol": 1e-10})
    qa, qb, kl = float(proj.x), float(proj.x) - EPS, float(proj.fun)
    rng = np.random.default_rng(args.seed)
    ka = rng.binomial(N, P_A, (args.reps, T))
    kb = rng.binomial(N, P_B, (args.reps, T))

    def ll(k: np.ndarray, p: float) -> np.ndarray:
        return k * math.log(p) + (N - k) * math.log(1 - p)

    log_lr = np.cumsum(ll(ka, P_A) - ll(ka, qa) + ll(kb, P_B) - ll(kb, qb), axis=1)
    rows = []
    for name, a in (("alpha", ALPHA), ("drift share 0.8 alpha", 0.8 * ALPHA)):
        hit = log_lr >= math.log(1 / a)
        t = np.where(hit.any(axis=1), hit.argmax(axis=1) + 1, T + 1)
        rows.append({"level": name, "a": a, "median": float(np.median(t)),
                     "q10": float(np.quantile(t, 0.1)), "q90": float(np.quantile(t, 0.9)),
                     "mean": float(t.mean()), "se_mean": float(t.std(ddof=1) / math.sqrt(len(t))),
                     "wald_mean_bound": math.log(1 / a) / kl})
        print(f"oracle at a = {a:.3g}: median delay {rows[-1]['median']:.0f} windows "
              f"(10%-90%: {rows[-1]['q10']:.0f}-{rows[-1]['q90']:.0f}), mean "
              f"{rows[-1]['mean']:.2f} +- {rows[-1]['se_mean']:.2f}; log(1/a)/KL* = "
              f"{rows[-1]['wald_mean_bound']:.2f}")
    out = {"eps": EPS, "rows_per_group": N, "step_rates": [P_A, P_B], "projection": [qa, qb],
           "kl_per_window": kl, "reps": args.reps, "seed": args.seed, "windows": T,
           "delays": rows, "load_average": os.getloadavg()[0]}
    print(f"KL* = {kl:.4f} per window at the projection ({qa:.4f}, {qb:.4f})")
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(out, indent=1))
    print(f"-> {OUT}")


if __name__ == "__main__":
    main()
