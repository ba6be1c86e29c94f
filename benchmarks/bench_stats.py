"""Benchmark of the statistics core: metrics on 10^6 decisions, median over repeats.

Run: ``.venv/bin/python benchmarks/bench_stats.py [--n 1000000] [--repeats 7]``
     ``.venv/bin/python benchmarks/bench_stats.py --coverage [--draws 20000]``
     ``.venv/bin/python benchmarks/bench_stats.py --vs-fairlearn [--fairlearn-repeats 3]``

Prints the median wall time (and min/max) of each metric from raw columns (group selection,
validation, counting, interval, verdict), of the from-counts functions alone, and of the vectorised
intervals on 10^6 counts vectors at once. Times are medians because the machine is shared.
With ``--coverage`` it prints instead the simulated coverage of the 95% intervals (seeded).
It ends (unless ``--no-fairlearn``; alone with ``--vs-fairlearn``) with ``AuditFrame`` against fairlearn's ``MetricFrame`` on the same
rows (sex x race, 10 groups) and the same metrics (selection rate, TPR, FPR, given to both as
fairlearn's callables), with and without ``sample_weight``: medians and the ratio
MetricFrame / AuditFrame, with the load average before and after (the machine is shared).
"""

from __future__ import annotations

import argparse
import os
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
    katz_ratio_interval,
    newcombe_interval,
    normal_quantile,
    score_ratio_interval,
    wilson_interval,
)

COVERAGE_CASES = [
    # (p_A, p_B, A, B)
    (0.05, 0.10, 20, 20),
    (0.30, 0.50, 40, 60),
    (0.10, 0.15, 80, 120),
    (0.70, 0.40, 25, 30),
    (0.24, 0.13, 300, 300),
    (0.02, 0.05, 500, 500),
]


def wald_interval(a, A, b, B, level):  # type: ignore[no-untyped-def]
    p1, p2 = a / A, b / B
    se = np.sqrt(p1 * (1 - p1) / A + p2 * (1 - p2) / B)
    z = normal_quantile(level)
    return p1 - p2 - z * se, p1 - p2 + z * se


def coverage(draws: int, seed: int) -> None:
    """Print simulated coverage (and mean width) of the 95% intervals, one line per case."""
    print(f"simulated coverage of 95% intervals, {draws:,} draws per case, seed {seed}")
    print(f"  {'p_A':>5s} {'p_B':>5s} {'A':>4s} {'B':>4s} | {'Newcombe':>8s} {'Wald':>8s} | "
          f"{'score':>8s} {'Katz':>8s}")
    for p1, p2, A, B in COVERAGE_CASES:
        rng = np.random.default_rng(seed)
        a = rng.binomial(A, p1, draws)
        b = rng.binomial(B, p2, draws)
        out = []
        for fn, truth in ((newcombe_interval, p1 - p2), (wald_interval, p1 - p2),
                          (score_ratio_interval, p1 / p2), (katz_ratio_interval, p1 / p2)):
            lo, hi = fn(a, A, b, B, 0.95)
            out.append(float(np.mean((lo <= truth) & (truth <= hi))))
        print(f"  {p1:5.2f} {p2:5.2f} {A:4d} {B:4d} | {out[0]:8.4f} {out[1]:8.4f} | "
              f"{out[2]:8.4f} {out[3]:8.4f}")


def timeit(fn: Callable[[], object], repeats: int, warm_up: bool = True
           ) -> tuple[float, float, float]:
    if warm_up:
        fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), min(times), max(times)


def vs_fairlearn(n: int, repeats: int, seed: int) -> None:
    """AuditFrame vs MetricFrame, same rows and metrics, with and without sample_weight."""
    import os

    from fairlearn.metrics import MetricFrame, false_positive_rate, selection_rate
    from fairlearn.metrics import true_positive_rate as tpr

    from fairprobe.stats.frame import AuditFrame

    rng = np.random.default_rng(seed)
    sf = pd.DataFrame({
        "sex": pd.Categorical(rng.choice(np.array(["Female", "Male"], dtype=object), n)),
        "race": pd.Categorical(rng.choice(
            np.array(["White", "Black", "Asian", "Other", "Amer"], dtype=object), n))})
    y_true = rng.integers(0, 2, n, dtype=np.int8)
    y_pred = rng.integers(0, 2, n, dtype=np.int8)
    w = rng.lognormal(0.0, 0.5, n)
    metrics = {"selection_rate": selection_rate, "tpr": tpr, "fpr": false_positive_rate}

    print(f"AuditFrame vs MetricFrame: n = {n:,}, sex x race (10 groups), 3 rates, {repeats} "
          f"repeats each (median [min, max], seconds); load average before: "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for label, kw_af, kw_mf in (
            ("unweighted", {}, {}),
            ("sample_weight", {"sample_weight": w},
             {"sample_params": {k: {"sample_weight": w} for k in metrics}})):
        af = timeit(lambda: AuditFrame(metrics=metrics, y_true=y_true, y_pred=y_pred,  # noqa: B023
                                     sensitive_features=sf, **kw_af).by_group,  # noqa: B023
                    repeats, warm_up=False)
        mf = timeit(lambda: MetricFrame(metrics=metrics, y_true=y_true, y_pred=y_pred,  # noqa: B023
                                      sensitive_features=sf, **kw_mf).by_group,  # noqa: B023
                    repeats, warm_up=False)
        print(f"  {label:<14s} AuditFrame {af[0]:8.3f} [{af[1]:.3f}, {af[2]:.3f}]   MetricFrame "
              f"{mf[0]:8.3f} [{mf[1]:.3f}, {mf[2]:.3f}]   ratio {mf[0] / af[0]:7.1f}x")
    print(f"  load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


def intervals(repeats: int) -> None:
    """Median time of one two-group interval, uncached, by construction and group size."""
    from fairprobe.stats import unconditional
    from fairprobe.stats.exact import (
        box_difference_interval,
        exact_difference_interval,
        exact_ratio_interval,
    )
    from fairprobe.stats.intervals import newcombe_interval

    print(f"one 95% interval at rates 0.3 / 0.35, uncached, median of {repeats} "
          f"(load average {os.getloadavg()[0]:.1f})")
    print(f"{'per group':>10} | {'exact diff':>11} {'exact ratio':>12} {'box':>9} {'newcombe':>9}")
    for n in (50, 500, 5_000, 30_000):
        a, b = int(0.3 * n), int(0.35 * n)
        cells = []
        for fn in (exact_difference_interval, exact_ratio_interval, box_difference_interval,
                   newcombe_interval):
            def call(fn=fn, a=a, b=b, n=n) -> object:  # type: ignore[no-untyped-def]
                unconditional._ONES.clear()
                unconditional._STATS.clear()
                return fn(a, n, b, n)
            med, _, _ = timeit(call, repeats, warm_up=False)
            cells.append(f"{med * 1e3:9.2f}ms")
        print(f"{n:>10} | {cells[0]:>11} {cells[1]:>12} {cells[2]:>9} {cells[3]:>9}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--coverage", action="store_true", help="print simulated coverage instead")
    ap.add_argument("--draws", type=int, default=20_000)
    ap.add_argument("--vs-fairlearn", action="store_true",
                    help="print AuditFrame vs fairlearn's MetricFrame instead")
    ap.add_argument("--fairlearn-repeats", type=int, default=3)
    ap.add_argument("--no-fairlearn", action="store_true",
                    help="skip the AuditFrame vs MetricFrame comparison (minutes on 10^6 rows)")
    ap.add_argument("--intervals", action="store_true",
                    help="time one uncached two-group interval per construction and size")
    args = ap.parse_args()
    if args.intervals:
        intervals(args.repeats)
        return
    if args.vs_fairlearn:
        vs_fairlearn(args.n, args.fairlearn_repeats, args.seed)
        return
    if args.coverage:
        coverage(args.draws, args.seed)
        return
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
    from fairprobe.stats.frame import AuditFrame

    race_cat = pd.Series(pd.Categorical(race), name="race")
    sexrace = pd.DataFrame({"sex": sex_cat, "race": race_cat})
    af = AuditFrame(y_pred=y_pred, y_true=y_true, sensitive_features=race_cat)
    rows += [
        ("AuditFrame, 5 groups, all rates", lambda: AuditFrame(
            y_pred=y_pred, y_true=y_true, sensitive_features=race_cat)),
        ("AuditFrame, sex x race (10 groups)", lambda: AuditFrame(
            y_pred=y_pred, y_true=y_true, sensitive_features=sexrace)),
        ("  summary dp + eodds, exact", lambda: (af.summary("dp"), af.summary("eodds"))),
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
    if not args.no_fairlearn:
        vs_fairlearn(n, args.fairlearn_repeats, args.seed)


if __name__ == "__main__":
    main()
