"""Speed of the collaborative-audit simulator (medians over repeats; wall and CPU time).

    .venv/bin/python benchmarks/bench_collab.py [--repeats 5] [--quick]

Prints: one run with 39 auditors (N = 20, K = 19); single-process runs per second over a sample of
the Table II grid and the implied Table II time on 2 worker processes; how one run's cost grows
with the number of auditors (up to 1,000) and with the number of rounds; and the vectorised path
against the per-auditor protocol cores. The machine may be shared: the load average is printed and
CPU time (process_time) is reported next to wall time.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import time
from collections.abc import Callable

from fairprobe.collab.simulate import SimConfig, prepare_honest, simulate, simulate_reference


def timed(fn: Callable[[], object], repeats: int) -> tuple[float, float]:
    wall, cpu = [], []
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return statistics.median(wall), statistics.median(cpu)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="fewer sizes (for a smoke run)")
    args = ap.parse_args()
    r = args.repeats
    print(f"load average at start: {os.getloadavg()}; cpus: {os.cpu_count()}")

    print("\n== one run, N = 20 honest + K = 19 attackers (39 auditors), n = 300 ==")
    for case in ("bios-moderate", "bios-near-fair"):
        cfg = SimConfig(case=case, attackers=19, seed=0)
        rounds = prepare_honest(cfg).rounds
        w, c = timed(lambda cfg=cfg: simulate(cfg), r)
        print(f"{case:16s} {rounds:3d} rounds: median wall {w:.3f} s, CPU {c:.3f} s")

    print("\n== one run with verification (challenge rule of ChallengeCore, rate 0.01) ==")
    for case, attack, k in (("bios-moderate", "adaptive", 19), ("bios-moderate", "late", 3)):
        base = SimConfig(case=case, attackers=k, seed=0, attack=attack)
        ver = SimConfig(case=case, attackers=k, seed=0, attack=attack, verify_rate=0.01)
        w0, c0_ = timed(lambda cfg=base: simulate(cfg), r)
        w1, c1 = timed(lambda cfg=ver: simulate(cfg), r)
        print(f"{case} {attack:8s} K={k:2d}: CPU {c0_:.3f} s without, {c1:.3f} s with "
              f"verification (x{c1 / max(c0_, 1e-9):.1f}); wall {w0:.3f} / {w1:.3f} s")

    print("\n== runs per second, one process, sample of the Table II grid ==")
    sample = [
        (case, k, s)
        for case in ("bios-very-unfair", "bios-moderate", "bios-near-fair")
        for k in (1, 5, 10, 15, 19)
        for s in (0, 1)
    ]
    t0, c0 = time.perf_counter(), time.process_time()
    for case, k, s in sample:
        simulate(SimConfig(case=case, attackers=k, seed=s))
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    print(
        f"{len(sample)} runs: {len(sample) / wall:.2f} runs/s wall, {len(sample) / cpu:.2f} "
        f"runs/s CPU; Table II (1,140 runs) on 2 worker processes ~ {1140 / (len(sample) / cpu) / 2:.0f} s"
        " of CPU-bound wall time (plus ~5 s cluster start)"
    )

    print(
        "\n== cost of one run vs number of auditors (K = 30% of N, alpha = 100, n = 20, 8 rounds;"
        " expected degree max(4, ln V + 4) so that G(V, p) can be connected) =="
    )
    sizes = (20, 77, 154, 385, 770) if not args.quick else (20, 77)
    for n_h in sizes:
        k = round(0.3 * n_h)
        v = n_h + k
        cfg = SimConfig(
            case="bios-near-fair",
            honest=n_h,
            attackers=k,
            seed=0,
            alpha=100.0,
            n=20,
            max_rounds=8,
            min_per_group=10,
            degree=4.0 if v <= 60 else math.log(v) + 4.0,
        )
        st = prepare_honest(cfg)
        w, c = timed(lambda cfg=cfg, st=st: simulate(cfg, setup=st), max(1, r // 2))
        print(
            f"V = {n_h + k:4d} auditors ({k:3d} attackers), {st.rounds} rounds: wall {w:.3f} s, "
            f"CPU {c:.3f} s, {1000 * c / st.rounds:.1f} ms CPU per round"
        )

    print("\n== cost of one run vs number of rounds (bios-near-fair, n = 100, N = 20, K = 6) ==")
    caps = (25, 50, 100, 200) if not args.quick else (25, 50)
    for cap in caps:
        cfg = SimConfig(case="bios-near-fair", attackers=6, seed=0, n=100, max_rounds=cap)
        st = prepare_honest(cfg)
        w, c = timed(lambda cfg=cfg, st=st: simulate(cfg, setup=st), r)
        print(
            f"{st.rounds:4d} rounds: wall {w:.3f} s, CPU {c:.3f} s, "
            f"{1000 * c / st.rounds:.2f} ms CPU per round"
        )

    print("\n== vectorised simulator vs one protocol core per auditor (same estimates) ==")
    cfg = SimConfig(case="bios-moderate", honest=20, attackers=5, seed=0, max_rounds=20)
    st = prepare_honest(cfg)
    wv, cv = timed(lambda: simulate(cfg, setup=st), r)
    wr, cr = timed(lambda: simulate_reference(cfg, setup=st), max(1, r // 2))
    print(
        f"N = 20, K = 5, {st.rounds} rounds: vectorised CPU {cv:.3f} s, cores CPU {cr:.3f} s "
        f"(x{cr / cv:.0f})"
    )
    print("\n== the recommended method and the certificates (N = 20, K = 19, 39 sources) ==")
    import numpy as np

    from fairprobe.collab.certificate import certify_many
    from fairprobe.collab.robust import robust_estimate

    cfg = SimConfig(case="bios-moderate", attackers=19, seed=0, attack="consistent")
    run = simulate(cfg, keep_views=True)
    assert run.views is not None
    v = run.views
    w, c = timed(lambda: robust_estimate(v["weighted"], v["tables"], v["held"]), r)
    print(f"robust, 20 auditors' views: wall {1000 * w:.1f} ms, CPU {1000 * c:.1f} ms")
    budget = cfg.n * run.rounds
    w, c = timed(lambda: certify_many(v["weighted"], budget, 0.05, v["held"]), r)
    print(f"certified_k of 20 auditors (Auditopus weights): wall {1000 * w:.1f} ms, "
          f"CPU {1000 * c:.1f} ms")
    big = np.repeat(v["tables"][:1].astype(float) * 30, 20, axis=0)  # verdicts that hold longer
    w, c = timed(lambda: certify_many(big, budget, 0.05, v["held"]), max(1, r // 2))
    ks = certify_many(big, budget, 0.05, v["held"])
    print(f"certified_k = {int(ks[0])} (30x the counts): wall {1000 * w:.1f} ms, "
          f"CPU {1000 * c:.1f} ms for 20 auditors")
    print(f"\nload average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
