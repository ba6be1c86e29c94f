"""Verification of answers in the simulator (docs/collab-network.md).

For each Bias in Bios case, attack, number of attackers K and seed, runs
:func:`fairprobe.collab.verify.simulate_verification` with attackers that back their fabricated
counts with records drawn like an honest auditor's (``random``: falsified answers) and with
records they chose so that true answers give their counts (``chosen``: what verification cannot
catch). Prints, per cell, how fast attackers are excluded, the attack success rate (ASR: the
median estimate lands in the fair band) and mean |error| of the recommended ``robust`` estimate
without and with verification (``auditopus`` ASR in the JSON), the extra queries, the bytes and the share of a private query set revealed.

    nice .venv/bin/python experiments/collab/verification.py --seeds 10
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import numpy as np

from fairprobe.collab.attacker import ATTACKS
from fairprobe.collab.simulate import SimConfig
from fairprobe.collab.verify import DEFAULT_RATE, VerifyConfig, simulate_verification

OUT = Path(__file__).resolve().parents[1] / "results" / "collab" / "verification.json"
CASES = ("bios-very-unfair", "bios-moderate", "bios-near-fair")


def _mean_se(x: list[float]) -> tuple[float, float]:
    a = np.asarray([v for v in x if v is not None and math.isfinite(v)], dtype=float)
    if a.size == 0:
        return math.nan, math.nan
    return float(a.mean()), float(a.std(ddof=1) / math.sqrt(a.size)) if a.size > 1 else 0.0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--attackers", default="1,2,5")
    ap.add_argument("--honest", type=int, default=20)
    ap.add_argument("--rate", type=float, default=DEFAULT_RATE)
    ap.add_argument("--attacks", default="adaptive,consistent")
    ap.add_argument("--json", type=Path, default=OUT)
    args = ap.parse_args()
    ks = [int(k) for k in args.attackers.split(",")]
    attacks = [a for a in args.attacks.split(",") if a in list(ATTACKS)]
    rows = []
    t0 = time.monotonic()
    for records in ("random", "chosen"):
        vc = VerifyConfig(rate=args.rate, records=records)  # type: ignore[arg-type]
        for attack in attacks:
            for case in CASES:
                for k in ks:
                    for seed in range(args.seeds):
                        cfg = SimConfig(case=case, attackers=k, seed=seed, honest=args.honest,
                                        attack=attack)
                        r = simulate_verification(cfg, vc)
                        r["attack"] = attack
                        r.pop("proven", None)  # the (N, V) exclusion matrix: not summarised
                        rows.append(r)
    wall = time.monotonic() - t0
    cells = []
    print(f"{len(rows)} runs in {wall:.0f} s; N = {args.honest}, rate = {args.rate}")
    head = (f"{'records':<7} {'attack':<11} {'case':<17} {'K':>2} {'caught':>7} "
            f"{'1st proof':>9} {'all excl.':>9} {'ASR off/on %':>13} {'|err| off/on':>14} "
            f"{'extra q %':>9} {'kB/node/rd':>10} {'revealed %':>10}")
    print(head)
    for records in ("random", "chosen"):
        for attack in attacks:
            for case in CASES:
                for k in ks:
                    rs = [r for r in rows if (r["records"], r["attack"], r["case"],
                                              r["attackers"]) == (records, attack, case, k)]
                    firsts = [x for r in rs for x in r["first_proof_round"] if x is not None]
                    alls = [x for r in rs for x in r["all_honest_excluded_round"]]
                    caught = sum(x is not None for x in alls) / max(1, len(alls))
                    tau = rs[0]["tau"]
                    asr_off = 100 * np.mean([abs(r["robust"]) <= tau for r in rs])
                    asr_on = 100 * np.mean([abs(r["robust_verified"]) <= tau for r in rs])
                    err_off = _mean_se([abs(r["robust"] - r["true_dp"]) for r in rs])
                    err_on = _mean_se([abs(r["robust_verified"] - r["true_dp"]) for r in rs])
                    a_asr_off = 100 * np.mean([abs(r["estimate"]) <= tau for r in rs])
                    a_asr_on = 100 * np.mean([abs(r["estimate_verified"]) <= tau for r in rs])
                    extra = _mean_se([100 * r["extra_query_fraction"] for r in rs])
                    cell = {
                        "records": records, "attack": attack, "case": case, "attackers": k,
                        "runs": len(rs), "caught_fraction": caught,
                        "first_proof_round_median": float(np.median(firsts)) if firsts else None,
                        "all_excluded_round_median": (
                            float(np.median([x for x in alls if x is not None]))
                            if any(x is not None for x in alls) else None),
                        "asr_without": float(asr_off), "asr_with": float(asr_on),
                        "auditopus_asr_without": float(a_asr_off),
                        "auditopus_asr_with": float(a_asr_on),
                        "abs_error_without": err_off, "abs_error_with": err_on,
                        "extra_query_pct": extra,
                        "extra_query_pct_max": float(max(100 * r["extra_query_fraction"]
                                                         for r in rs)),
                        "challenge_kb_per_node_round": float(np.median(
                            [r["challenge_bytes_per_node_round"] for r in rs]) / 1000),
                        "revealed_pct_median": float(100 * np.median(
                            [r["revealed_fraction_median"] for r in rs])),
                        "revealed_pct_max": float(100 * max(r["revealed_fraction_max"]
                                                            for r in rs)),
                    }
                    cells.append(cell)
                    fp = cell["first_proof_round_median"]
                    ae = cell["all_excluded_round_median"]
                    print(f"{records:<7} {attack:<11} {case:<17} {k:>2} {100 * caught:>6.0f}% "
                          f"{'-' if fp is None else f'{fp:.0f}':>9} "
                          f"{'-' if ae is None else f'{ae:.0f}':>9} "
                          f"{asr_off:>6.0f}/{asr_on:<6.0f} "
                          f"{err_off[0]:.3f}/{err_on[0]:.3f}   "
                          f"{extra[0]:>8.2f} {cell['challenge_kb_per_node_round']:>10.1f} "
                          f"{cell['revealed_pct_median']:>5.1f}/{cell['revealed_pct_max']:.1f}")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"kind": "collab-verification", "honest": args.honest,
                                     "rate": args.rate, "seeds": args.seeds, "cells": cells,
                                     "runs": rows, "seconds": wall}, indent=1))
    print(f"-> {args.json}")


if __name__ == "__main__":
    main()
