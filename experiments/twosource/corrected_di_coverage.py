"""Coverage of the corrected DI through B: the shipped exact box interval against the delta
interval it replaces (none reported with fewer than 3 validated positives in a group) and the delta
interval alone, unconditionally and conditional on being printed.

Simulated double-sampling audits (no platform): ``n_b`` B records, ``n_v`` of them validated (the
checks), groups with shares 0.35 / 0.65, positive rates ``(r_u, r_p)``, and a proxy whose errors
are *differential* (right for 0.75 of negative and 0.6 of positive women, 0.85 of men: the
adversary of every correction that assumes errors independent of the decision). The estimand is
``mu_B = r_u / r_p``. Cells: rates 0.10 / 0.40, 0.02 / 0.05, 0.05 / 0.10, 0.15 / 0.45 and
0.30 / 0.40; validation sizes 100 and 250 checks of 1,000 B records, 1,500 of 3,000 and 1,000
of 10,000.

Per construction: ``coverage`` of the 95% interval over all audits (an unreported interval,
``[0, inf]``, covers) with its standard error; ``coverage_printed``: among the audits where a
finite interval is printed, with its standard error; ``printed``: that share; ``decided``: share
of audits whose interval decides the 80% rule (above or below 0.8); ``misses_above``: share of
the misses that lie above the truth (the side that makes the platform look fairer).

    python experiments/twosource/corrected_di_coverage.py [--reps 2000] [--seed 0]

Writes experiments/results/twosource/corrected_di_coverage.json; exits 1 if the shipped interval
covers less than 0.95 - 2 se in any cell, unconditionally or where printed.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats as sps

from fairprobe.twosource.correction import (
    checked_positives,
    double_sampling_interval,
    double_sampling_log_di,
    double_sampling_se,
)

OUT = Path(__file__).resolve().parents[1] / "results" / "twosource" / "corrected_di_coverage.json"
RATES = ((0.10, 0.40), (0.02, 0.05), (0.05, 0.1), (0.15, 0.45), (0.30, 0.40))
SIZES = ((1000, 100), (1000, 250), (3000, 1500), (10000, 1000))
#: P(proxy right | g, y): women 0.75 if negative, 0.6 if positive; men 0.85.
RIGHT = np.array([[0.75, 0.6], [0.85, 0.85]])
SHARE_U = 0.35


def draw(rng: np.random.Generator, reps: int, n_b: int, n_v: int, rates: tuple[float, float]
         ) -> tuple[np.ndarray, np.ndarray, float]:
    """``(u, v, mu)``: unvalidated (g_hat, y) and validated (g, g_hat, y) counts per audit."""
    cells = np.zeros((2, 2, 2))
    for g, pg in ((0, SHARE_U), (1, 1 - SHARE_U)):
        for y, py in ((0, 1 - rates[g]), (1, rates[g])):
            cells[g, g, y] = pg * py * RIGHT[g, y]
            cells[g, 1 - g, y] = pg * py * (1 - RIGHT[g, y])
    flat = cells.reshape(8)
    v = rng.multinomial(n_v, flat, size=reps)
    u = rng.multinomial(n_b - n_v, flat, size=reps).reshape(reps, 2, 2, 2).sum(axis=1)
    return u.reshape(reps, 4), v, rates[0] / rates[1]


def _cell(lo: np.ndarray, hi: np.ndarray, mu: float, printed: np.ndarray) -> dict[str, Any]:
    cov = (lo <= mu) & (mu <= hi)
    n, k = cov.size, int(printed.sum())
    c = float(cov.mean())
    cp = float(cov[printed].mean()) if k else None
    miss = ~cov
    return {"coverage": c, "se": float(np.sqrt(c * (1 - c) / n)),
            "coverage_printed": cp,
            "se_printed": None if cp is None else float(np.sqrt(max(cp * (1 - cp), 0) / k)),
            "printed": k / n,
            "decided": float(np.mean(printed & ((lo >= 0.8) | (hi < 0.8)))),
            "misses_above": float(np.mean(lo[miss] > mu)) if miss.any() else None}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    t0 = time.perf_counter()
    z = float(sps.norm.ppf(0.975))
    rows: list[dict[str, Any]] = []
    print(f"corrected DI through B, 95% intervals, {args.reps} audits a cell (seed {args.seed}), "
          "differential proxy errors; coverage | where printed (printed share, decided share)")
    for j, (rates, (n_b, n_v)) in enumerate((r, s) for r in RATES for s in SIZES):
        u, v, mu = draw(np.random.default_rng([args.seed, j]), args.reps, n_b, n_v, rates)
        _, lo, hi, open_ended = double_sampling_interval(u, v, 0.95)
        shipped = _cell(lo, hi, mu, ~open_ended)
        lm, se = double_sampling_log_di(u, v), double_sampling_se(u, v)
        with np.errstate(invalid="ignore", over="ignore"):
            dlo, dhi = np.exp(lm - z * se), np.exp(lm + z * se)
        ok = np.isfinite(dlo) & np.isfinite(dhi)
        alone = _cell(np.where(ok, dlo, np.nan), np.where(ok, dhi, np.nan), mu, ok)
        gated = ok & (checked_positives(v).min(axis=-1) >= 3)
        replaced = _cell(np.where(gated, dlo, 0.0), np.where(gated, dhi, np.inf), mu, gated)
        rows.append({"cell": f"{rates[0]:g}/{rates[1]:g}@{n_v}/{n_b}", "rates": list(rates),
                     "n_b": n_b, "checks": n_v, "mu": mu, "exact_box": shipped,
                     "delta_3_positives": replaced, "delta_alone": alone})

        def f(c: dict[str, Any]) -> str:
            cp = "  n/a " if c["coverage_printed"] is None else f"{c['coverage_printed']:.3f}"
            return f"{c['coverage']:.3f} | {cp} ({c['printed']:.2f}, {c['decided']:.2f})"

        print(f"{str(rates):>12} {f'{n_v}/{n_b}':>11}  box {f(shipped)}   delta>=3 "
              f"{f(replaced)}   delta {f(alone)}", flush=True)
    bad = [r["cell"] for r in rows
           if r["exact_box"]["coverage"] < 0.95 - 2 * r["exact_box"]["se"]
           or (r["exact_box"]["coverage_printed"] is not None
               and r["exact_box"]["coverage_printed"] < 0.95 - 2 * r["exact_box"]["se_printed"])]
    out = {"level": 0.95, "reps": args.reps, "seed": args.seed, "rows": rows,
           "min_exact_box": min(r["exact_box"]["coverage"] for r in rows),
           "min_exact_box_printed": min(r["exact_box"]["coverage_printed"] for r in rows
                                        if r["exact_box"]["coverage_printed"] is not None),
           "min_delta_3_positives_printed": min(
               r["delta_3_positives"]["coverage_printed"] for r in rows
               if r["delta_3_positives"]["coverage_printed"] is not None)}
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(out, indent=1) + "\n")
    print(f"\nminimum coverage where printed: exact box {out['min_exact_box_printed']:.4f}, "
          f"replaced delta {out['min_delta_3_positives_printed']:.4f}")
    print(f"({time.perf_counter() - t0:.1f} s; load average {os.getloadavg()[0]:.1f})")
    if bad:
        print(f"FAIL: the exact box covers less than 0.95 in {bad}")
        raise SystemExit(1)


if __name__ == "__main__":
    main()
