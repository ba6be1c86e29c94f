"""Benchmark of the statistics core: metrics on 10^6 decisions, median over repeats.

Run: ``.venv/bin/python benchmarks/bench_stats.py [--n 1000000] [--repeats 7]``

Prints the median wall time (and min/max) of each metric from raw columns (group selection,
validation, counting, interval, verdict), of the from-counts functions alone, and of the vectorised
intervals on 10^6 counts vectors at once. Times are medians because the machine is shared.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np
import pandas as pd

from fairprobe.stats import (
    CountsVector,
    compute_metric,
    demographic_parity_from_counts,
    disparate_impact_from_counts,
    newcombe_interval,
    score_ratio_interval,
    wilson_interval,
)


def timeit(fn: Callable[[], object], repeats: int) -> tuple[float, float, float]:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), min(times), max(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    n, reps = args.n, args.repeats
    rng = np.random.default_rng(args.seed)
    sex_str = rng.choice(np.array(["Female", "Male"], dtype=object), n)
    sex_cat = pd.Series(pd.Categorical(sex_str))
    sex_int = (sex_str == "Male").astype(np.int8)
    race = rng.choice(np.array(["White", "Black", "Asian", "Other", "Amer"], dtype=object), n)
    y_true = rng.integers(0, 2, n, dtype=np.int8)
    y_pred = rng.integers(0, 2, n, dtype=np.int8)
    correct = (y_true == y_pred).astype(np.float64)
    weights = rng.random(n)

    rows: list[tuple[str, Callable[[], object]]] = [
        ("DP, int8 groups", lambda: compute_metric(
            "dp", sensitive_features=sex_int, y_pred=y_pred)),
        ("DP, object str groups", lambda: compute_metric(
            "dp", sensitive_features=sex_str, y_pred=y_pred, group_a="Female")),
        ("DP, pandas categorical", lambda: compute_metric(
            "dp", sensitive_features=sex_cat, y_pred=y_pred, group_a="Female")),
        ("DP, 5 groups, one vs rest", lambda: compute_metric(
            "dp", sensitive_features=race, y_pred=y_pred, group_a="Black")),
        ("DI score, int8 groups", lambda: compute_metric(
            "di", sensitive_features=sex_int, y_pred=y_pred, group_b=1)),
        ("DI katz, int8 groups", lambda: compute_metric(
            "di", sensitive_features=sex_int, y_pred=y_pred, group_b=1, method="katz")),
        ("EO, int8 groups", lambda: compute_metric(
            "eo", sensitive_features=sex_int, y_pred=y_pred, y_true=y_true)),
        ("gap (Welch), int8 groups", lambda: compute_metric(
            "gap", sensitive_features=sex_int, values=correct)),
        ("gap weighted, int8 groups", lambda: compute_metric(
            "gap", sensitive_features=sex_int, values=correct, sample_weight=weights)),
    ]
    c = CountsVector(301_234, 500_000, 402_345, 500_000)
    rows += [
        ("DP from counts", lambda: demographic_parity_from_counts(c)),
        ("DI from counts (score)", lambda: disparate_impact_from_counts(c)),
    ]
    m = 1_000_000
    A = rng.integers(1, 500, m)
    B = rng.integers(1, 500, m)
    a = rng.integers(0, A + 1)
    b = rng.integers(0, B + 1)
    rows += [
        ("Wilson, 10^6 proportions", lambda: wilson_interval(a, A)),
        ("Newcombe, 10^6 counts vectors", lambda: newcombe_interval(a, A, b, B)),
        ("score ratio, 10^5 counts vectors", lambda: score_ratio_interval(
            a[:100_000], A[:100_000], b[:100_000], B[:100_000])),
    ]
    print(f"n = {n:,} decisions, {reps} repeats (median [min, max], milliseconds)")
    for name, fn in rows:
        med, lo, hi = timeit(fn, reps)
        print(f"  {name:<36s} {1e3 * med:9.2f}  [{1e3 * lo:8.2f}, {1e3 * hi:8.2f}]")


if __name__ == "__main__":
    main()
