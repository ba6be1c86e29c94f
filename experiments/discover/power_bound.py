"""How far a planted subgroup can be found: each p-value construction against the bound.

    .venv/bin/python experiments/discover/power_bound.py [--draws 1000] [--seed 0]

A search of ``m = 872`` subgroups (``experiments/discover/fdr.py``'s design) with one planted
subgroup reports it when its p-value meets the procedure's first threshold (Holm: ``q / m``;
Benjamini-Yekutieli: ``q / (m c_m)``; ``q = 0.1``), so that is the power measured here, for a
subgroup of ``share * n`` rows (``n = 100,000``) whose rate is ``0.3 + gap`` against a rest at
0.3: ``--draws`` draws of both counts per cell, for the joint, split and box constructions.

The bound: an oracle that knows the rest's rate exactly and the direction of the gap, testing
the subgroup's count alone with a one-sided normal test at the edge of the band at level
``q / m`` (the level a single true discovery among ``m`` must meet in any procedure that bounds
the global null's any-report rate by ``q`` and treats the ``m`` subgroups alike; Holm and BH
both test their first at exactly it). No valid method of this kind does better, up to the
normal approximation. Writes ``experiments/results/discover/power_bound.json``.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np
from scipy.stats import norm

from fairprobe.discover.fdr import box_pvalues, first_gamma, harmonic, joint_gamma, split_pvalues
from fairprobe.discover.unconditional import joint_pvalues

OUT = Path("experiments/results/discover")
N, M, Q, BASE = 100_000, 872, 0.1, 0.3


def oracle(ns: int, gap: float, tau: float, level: float) -> float:
    """One-sided normal test of ``p_S <= p_R + tau`` with ``p_R`` known, at ``level``."""
    edge = BASE + tau
    crit = edge + norm.isf(level) * np.sqrt(edge * (1 - edge) / ns)
    p = BASE + gap
    return float(norm.sf((crit - p) / np.sqrt(p * (1 - p) / ns)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--draws", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rows: list[dict[str, Any]] = []
    print(f"{'share':>6s} {'gap':>5s} {'tol':>5s} {'oracle':>7s} {'holm joint':>11s} "
          f"{'holm split':>11s} {'holm box':>9s} {'by joint':>9s} {'by box':>7s}")
    # the default tolerance finely (1.9% is fdr.py's planted 2% cell); 0.02 and 0 where the
    # smallest subgroup and gap are hardest
    grid = [(s, g, 0.05) for s in (0.015, 0.019, 0.02, 0.025, 0.03, 0.05)
            for g in (0.1, 0.15, 0.2)]
    grid += [(s, 0.1, t) for t in (0.02, 0.0) for s in (0.015, 0.02, 0.05)]
    for i, (share, gap, tau) in enumerate(grid):
        rng = np.random.default_rng([args.seed, i])
        ns = int(round(share * N))
        nr = N - ns
        ks = rng.binomial(ns, BASE + gap, args.draws)
        kr = rng.binomial(nr, BASE, args.draws)
        row: dict[str, Any] = {"share": share, "gap": gap, "tolerance": tau, "rows": ns,
                               "draws": args.draws, "m": M, "fdr": Q}
        # refined wherever the bracket of a p-value holds one of the two thresholds
        joint = joint_pvalues(ks, ns, kr, nr, tau, joint_gamma(Q, M), cap=Q,
                              sharp_at=[Q / M, Q / (M * harmonic(M))])
        box = box_pvalues(ks, ns, kr, nr, tau, cap=Q)
        for method, first in (("holm", Q / M), ("by", Q / (M * harmonic(M)))):
            split = split_pvalues(ks, ns, kr, nr, tau, first_gamma(method, Q, M, ns, nr))
            for name, p in (("joint", joint), ("split", split), ("box", box)):
                v = float(np.mean(p <= first))
                row[f"{method}_{name}"] = v
                row[f"{method}_{name}_se"] = float(np.sqrt(v * (1 - v) / args.draws))
            row[f"{method}_oracle"] = oracle(ns, gap, tau, first)
        rows.append(row)
        print(f"{share:6.2f} {gap:5.2f} {tau:5.2f} {row['holm_oracle']:7.3f} "
              f"{row['holm_joint']:11.3f} {row['holm_split']:11.3f} {row['holm_box']:9.3f} "
              f"{row['by_joint']:9.3f} {row['by_box']:7.3f}", flush=True)
    from fairprobe.documents import write_json

    OUT.mkdir(parents=True, exist_ok=True)
    write_json(OUT / "power_bound.json", {"n": N, "m": M, "fdr": Q, "base": BASE,
                                          "draws": args.draws, "seed": args.seed,
                                          "rows": rows})


if __name__ == "__main__":
    main()
