"""Sequential audits: queries of the default test against the paper's GLR and Wald's bound,
and throughput (10^6 steps, per-step objects and vectorised orders).

    .venv/bin/python benchmarks/bench_sequential.py [--orders 2000] [--steps 1000000] [--runs 3]

Queries: on the pools of experiments/sequential/error_rates.py (2 x 5,000, decisions, SP, delta 0.1, alpha 0.05, beta 0.2,
budget 4,000; ``experiments/sequential/error_rates.synthetic_pool``), the mean queries of the
default test (``mixture``) at gaps delta + 0.05 and delta + 0.1 and at the centre of H0, as a
ratio to the paper's GLR (``glr-wald``, anytime-invalid) on the same pool, and to Wald's lower
bound ``kl(1 - beta, alpha) / I`` (``I`` the information per query of the balanced design)
and its version at the measured power, ``kl(power, alpha) / I``: no test with type-I error
``alpha`` at the boundary and that power can need fewer queries on average (Wald 1945).

Per-step: one :class:`~fairprobe.sequential.base.Stepper` ``update`` per query (the live path,
O(1) each; a new stepper starts whenever one stops). Vectorised: the same number of steps as
250 orders x 4,000 queries through ``run_orders`` (the experiment path). Prints the median over
``--runs`` runs (steps per second); the machine may be shared, so medians, not best times.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from fairprobe.sequential import get_test
from fairprobe.sequential.boundaries import _kl_bern
from fairprobe.sequential.pool import pool_truth, run_pool

CASES = (
    ("mixture", "decisions"),
    ("mixture", "scores"),
    ("glr-wald", "decisions"),
    ("glr-wald", "scores"),
    ("betting", "decisions"),
    ("fixed", "scores"),
)


def data(access: str, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    in_a = rng.random(n) < 0.33
    m = np.where(in_a, 0.30, 0.40)  # gap exactly delta: audits run long
    x = (rng.random(n) < m).astype(float) if access == "decisions" else rng.beta(m * 4, (1 - m) * 4)
    return in_a, x


def per_step(name: str, access: str, steps: int, seed: int) -> tuple[float, float]:
    in_a, x = data(access, steps, np.random.default_rng(seed))
    t = get_test(name, tolerance=0.1, access=access)
    g, v = in_a.tolist(), x.tolist()
    st = t.stepper(4000)
    t0, c0 = time.perf_counter(), time.process_time()
    for gi, vi in zip(g, v, strict=True):
        if st.update(gi, vi) is not None:
            st = t.stepper(4000)
    return time.perf_counter() - t0, time.process_time() - c0


def vectorised(name: str, access: str, steps: int, seed: int) -> tuple[float, float]:
    per = 4000
    in_a, x = data(access, steps, np.random.default_rng(seed))
    in_a, x = in_a.reshape(-1, per), x.reshape(-1, per)
    t = get_test(name, tolerance=0.1, access=access)
    t0, c0 = time.perf_counter(), time.process_time()
    t.run_orders(in_a, x)
    return time.perf_counter() - t0, time.process_time() - c0


def queries(orders: int) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "experiments" / "sequential"))
    from error_rates import synthetic_pool

    print(f"mean queries over {orders} orders (2 x 5,000 pool, decisions, SP, delta 0.1, "
          "budget 4,000)")  # fmt: skip
    print(f"{'gap':>5s} {'mixture':>9s} {'power':>6s} {'glr-wald':>9s} {'ratio':>6s} "
          f"{'Wald bound':>10s} {'ratio':>6s} {'bound at power':>14s} {'ratio':>6s}")  # fmt: skip
    for gap in (0.15, 0.2, 0.0):
        pool = synthetic_pool("decisions", gap)
        m = run_pool(pool, test="mixture", repeats=orders, seed=7)
        g = run_pool(pool, test="glr-wald", repeats=orders, seed=7)
        in_a, x = pool.observations("sp", "decisions")
        truth = pool_truth(in_a, x)
        # the balanced (alternating) design: half the queries in each group
        half = dataclasses.replace(truth, share_a=0.5)
        info = half.information(get_test("mixture", tolerance=0.1))
        viol = gap > 0.1
        p = m.shares["violation" if viol else "compliant"]
        a_err, b_err = 0.05, 0.2
        wald = _kl_bern(1 - b_err, a_err) if viol else _kl_bern(1 - a_err, b_err)
        err = a_err if viol else b_err
        at_p = _kl_bern(min(p, 1 - 1e-12), err) if p > err else 0.0
        wb, wp = wald / info, at_p / info
        print(f"{gap:5.2f} {m.mean_queries:9.1f} {p:6.3f} {g.mean_queries:9.1f} "
              f"{m.mean_queries / g.mean_queries:6.2f} {wb:10.1f} {m.mean_queries / wb:6.2f} "
              f"{wp:14.1f} {m.mean_queries / max(wp, 1e-9):6.2f}")  # fmt: skip
    print("(power = share of the correct decision: violation above delta, compliant at gap 0)\n")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--orders", type=int, default=2000)
    ap.add_argument("--steps", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    if a.orders:
        queries(a.orders)
    steps = a.steps // 4000 * 4000
    print(f"{steps:,} sequential steps, median of {a.runs} runs")
    print("wall = elapsed time, cpu = this process's CPU time (robust to a shared machine)")
    print(f"{'test':8s} {'access':10s} {'per-step wall s':>15s} {'cpu s':>7s} {'steps/s (cpu)':>14s}"
          f" {'vectorised wall s':>18s} {'cpu s':>7s} {'steps/s (cpu)':>14s}")  # fmt: skip
    for name, access in CASES:
        p = [per_step(name, access, steps, r) for r in range(a.runs)]
        v = [vectorised(name, access, steps, r) for r in range(a.runs)]
        pw, pc = statistics.median(x[0] for x in p), statistics.median(x[1] for x in p)
        vw, vc = statistics.median(x[0] for x in v), statistics.median(x[1] for x in v)
        print(f"{name:8s} {access:10s} {pw:15.2f} {pc:7.2f} {steps / pc:14,.0f}"
              f" {vw:18.3f} {vc:7.3f} {steps / max(vc, 1e-9):14,.0f}")


if __name__ == "__main__":
    main()
