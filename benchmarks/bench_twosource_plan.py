"""Benchmark of the two-source planner: time and peak memory against the budget.

``pareto_frontier`` evaluates every split ``t_fraud = 0 .. t/2`` (an even grid of at most
20,001 splits above that) with binomial quantiles and tails in closed form and an O(n log n)
Pareto sweep; the former code built the cdf over ``0..t_fraud`` per split and an n x n dominance
matrix (roughly quadratic: > 100 s at t = 100,000, 575 MB at t = 20,000). ``n_max`` at 10^12
checks is one quantile. Prints the median wall-clock of repeated runs and the peak traced
memory (tracemalloc) per budget; the machine may be shared: compare medians, not single runs.

Run:  .venv/bin/python benchmarks/bench_twosource_plan.py [--quick]
"""

from __future__ import annotations

import statistics
import sys
import time
import tracemalloc

from fairprobe.twosource.budget import plan_budget
from fairprobe.twosource.theory import n_max, pareto_frontier

RATES = {"rate_unprivileged": 0.1205, "rate_privileged": 0.4686, "share_unprivileged": 0.333}


def run(t: int, theorem3: bool) -> None:
    pareto_frontier(t, 0.91, 1.25, 0.05, None if theorem3 else 0.1, **RATES)


def main() -> None:
    quick = "--quick" in sys.argv
    budgets = [100, 1_000, 20_000, 100_000] + ([] if quick else [1_000_000, 10**12])
    reps = 3 if quick else 5
    print(f"{'budget':>14} {'gamma':>9} {'median s':>9} {'peak MB':>8}")
    for t in budgets:
        for th3 in (False, True):
            times = []
            for _ in range(reps):
                t0 = time.perf_counter()
                run(t, th3)
                times.append(time.perf_counter() - t0)
            tracemalloc.start()
            run(t, th3)
            peak = tracemalloc.get_traced_memory()[1] / 2**20
            tracemalloc.stop()
            print(f"{t:>14,} {'theorem3' if th3 else '0.1':>9} {statistics.median(times):9.3f} "
                  f"{peak:8.1f}")
    for checks in (10**6, 10**12):
        t0 = time.perf_counter()
        nm = n_max(checks, 0.91, 0.05)
        print(f"n_max({checks:.0e} checks) = {nm} in {time.perf_counter() - t0:.4f} s")
    t0 = time.perf_counter()
    plan = plan_budget(100_000, 0.05, 0.91, **RATES)
    print(f"plan_budget(100,000, eps 0.05): regime {plan.regime} in "
          f"{time.perf_counter() - t0:.3f} s")


if __name__ == "__main__":
    main()
