"""Throughput of sequential audits: 10^6 steps, per-step objects and vectorised orders.

    .venv/bin/python benchmarks/bench_sequential.py [--steps 1000000] [--runs 3]

Per-step: one :class:`~fairprobe.sequential.base.Stepper` ``update`` per query (the live path,
O(1) each; a new stepper starts whenever one stops). Vectorised: the same number of steps as
250 orders x 4,000 queries through ``run_orders`` (the experiment path). Prints the median over
``--runs`` runs (steps per second); the machine may be shared, so medians, not best times.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from fairprobe.sequential import get_test

CASES = (("glr", "decisions"), ("glr", "scores"), ("betting", "decisions"), ("fixed", "scores"))


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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
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
