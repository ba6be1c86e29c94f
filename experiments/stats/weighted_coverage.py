"""Coverage of the weighted-rate interval of ``AuditFrame(sample_weight=...)``.

The interval is Wilson's at Kish's effective size (``fairprobe.stats.dropin.kish_counts``);
"raw n" is Wilson's at the unweighted count, the naive choice. For each setting, ``R`` samples of
``n`` Bernoulli(p) outcomes with lognormal(0, sigma) weights independent of the outcome (so the
weighted rate's target is ``p``); coverage = share of intervals that contain ``p``, with its
standard error. Seeded; run: ``.venv/bin/python experiments/stats/weighted_coverage.py``.
"""

from __future__ import annotations

import numpy as np

from fairprobe.stats.dropin import kish_counts
from fairprobe.stats.intervals import wilson_interval


def coverage(n: int, p: float, sigma: float, reps: int, seed: int, level: float = 0.95
             ) -> tuple[float, float]:
    """(Kish-Wilson coverage, raw-n Wilson coverage) over ``reps`` seeded samples."""
    rng = np.random.default_rng(seed)
    x = (rng.random(reps * n) < p).astype(np.float64)
    w = rng.lognormal(0.0, sigma, reps * n)
    codes = np.repeat(np.arange(reps), n)
    k_eff, n_eff, swx, sw = kish_counts(x, np.ones(reps * n, dtype=bool), w, codes, reps)
    lo, hi = wilson_interval(k_eff, n_eff, level)
    lo2, hi2 = wilson_interval(swx / sw * n, np.full(reps, float(n)), level)
    return float(np.mean((lo <= p) & (p <= hi))), float(np.mean((lo2 <= p) & (p <= hi2)))


def main(reps: int = 4000) -> None:
    print("sigma  n    p     Kish-Wilson  raw-n Wilson  (nominal 0.95; SE ~ 0.0035)")
    for sigma in (0.5, 1.0):
        for n in (50, 200):
            for p in (0.05, 0.1, 0.3, 0.5):
                kish, raw = coverage(n, p, sigma, reps, seed=int(1000 * sigma + n + 100 * p))
                print(f"{sigma:<6} {n:<4} {p:<5} {kish:.4f}       {raw:.4f}")


if __name__ == "__main__":
    main()
