"""Benchmark of the consistency radius: exact at n = 100,000, and exact vs CoRe at n = 1,000/5,000.

Prints medians over repeated runs (wall-clock, one process). Inputs: continuous values
(m = sigmoid(x), groups x > 0 as in the paper's Gaussian set-up, no two values equal, so no
merging of points) and binary correctness (n points merge into 4 atoms). The machine may be
shared: compare medians, not single runs.

Run:  .venv/bin/python benchmarks/bench_radius.py [--quick]
"""

from __future__ import annotations

import statistics
import sys
import time
import warnings

import numpy as np

from fairprobe.radius import consistency_radius

warnings.filterwarnings("ignore")


def gaussian(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    x = np.random.default_rng(seed).standard_normal(n)
    return 1 / (1 + np.exp(-x)), (x > 0).astype(int)


def binary(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    g = (rng.random(n) < 0.4).astype(int)
    return (rng.random(n) < np.where(g == 1, 0.88, 0.82)).astype(float), g


def timed(fn, repeats: int) -> tuple[float, object]:
    times, res = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        res = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), res


def main() -> None:
    quick = "--quick" in sys.argv
    consistency_radius([0.0, 1.0, 0.5, 0.2], [0, 0, 1, 1], 0.1)  # warm-up (imports)
    print("exact radius, n = 100,000 (median of 7 runs, seconds)")
    for name, make in (("continuous", gaussian), ("binary", binary)):
        m, g = make(100_000)
        for eps in (0.1, 0.4) if name == "continuous" else (0.02, 0.1):
            for div in ("kl", "chi2"):
                t, r = timed(lambda m=m, g=g, eps=eps, div=div: consistency_radius(
                    m, g, eps, divergence=div), 7)
                print(f"  {name:<10} eps={eps:<5} {div:<4} {t:7.3f} s   radius={r.radius:.6g} "
                      f"({r.assessment})")
    print("\nexact vs CoRe, continuous values (median seconds; CoRe: 3 runs, exact: 7 runs)")
    sizes = (1000,) if quick else (1000, 5000)
    for n in sizes:
        m, g = gaussian(n)
        for eps in (0.25, 0.4) if n == 1000 else (0.25,):
            te, re = timed(lambda m=m, g=g, eps=eps: consistency_radius(m, g, eps), 7)
            tc, rc = timed(lambda m=m, g=g, eps=eps: consistency_radius(m, g, eps, method="core"),
                           1 if quick else 3)
            print(f"  n={n:<5} eps={eps:<5} exact {te:7.3f} s (R={re.radius:.5g})   "
                  f"core {tc:8.2f} s (R={rc.radius:.5g})   ratio {tc / te:8.0f}x")


if __name__ == "__main__":
    main()
