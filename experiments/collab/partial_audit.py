"""Audits that stop before the query sets are exhausted: is the verdict right about the
population's DP?

For each Table I case, ``--seeds`` seeds (0 .. seeds - 1) of the simulator with the rounds
capped at ``--rounds`` (no liar, declared K = 0): the share of runs whose default ``bounded``
verdict is wrong against the population's DP, the share decided, and, for comparison, the same
for ``bounded`` taken as a verdict about the queried records only (the interval of the records
held, without the records not queried: what the verdict would say if the queried records were
the population) and for the ``auditopus`` point estimate.

    python experiments/collab/partial_audit.py [--seeds 200] [--rounds 3]

Writes ``experiments/results/collab/partial_audit.json``.
"""

from __future__ import annotations

import argparse
import math
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))

from _common import RESULTS  # noqa: E402

from fairprobe.collab.simulate import SimConfig, bounded_run, closing_view, simulate  # noqa: E402
from fairprobe.report.jsonio import write_json  # noqa: E402

TABLE1 = ("bios-very-unfair", "bios-moderate", "bios-near-fair",
          "civil-very-unfair", "civil-moderate", "civil-near-fair")


def _se(p: float, n: int) -> float:
    return math.sqrt(p * (1 - p) / n) if n else math.nan


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    out = []
    for case in TABLE1:
        w = d = w_rec = d_rec = w_pt = 0
        for seed in range(a.seeds):
            cfg = SimConfig(case=case, seed=seed, max_rounds=a.rounds)
            r = simulate(cfg, keep_views=True)
            truth = "fair" if abs(r.true_dp) <= cfg.tau else "unfair"
            v = r.verdicts["bounded"]
            d += v != "undetermined"
            w += v not in ("undetermined", truth)
            assert r.views is not None
            tabs, held = closing_view(r.views["H"], r.views["lag"], r.views["hon"])
            rec = bounded_run(cfg, r.rounds, tabs, held, 0)["verdict"]  # records as population
            d_rec += rec != "undetermined"
            w_rec += rec not in ("undetermined", truth)
            w_pt += r.verdicts["auditopus"] != truth
        n = a.seeds
        row = {"case": case, "runs": n, "rounds": a.rounds,
               "wrong": w / n, "wrong_se": _se(w / n, n), "decided": d / n,
               "records_only_wrong": w_rec / n, "records_only_wrong_se": _se(w_rec / n, n),
               "records_only_decided": d_rec / n, "auditopus_wrong": w_pt / n}
        out.append(row)
        print(f"{case:18s} bounded wrong {100 * row['wrong']:5.1f}% decided "
              f"{100 * row['decided']:5.1f}% | records-as-population wrong "
              f"{100 * row['records_only_wrong']:5.1f}% decided "
              f"{100 * row['records_only_decided']:5.1f}% | auditopus wrong "
              f"{100 * row['auditopus_wrong']:5.1f}%")
    write_json(RESULTS / "partial_audit.json", {
        "experiment": "collab-partial-audit",
        "command": "python experiments/collab/partial_audit.py " + " ".join(sys.argv[1:]),
        "seeds": a.seeds, "rounds": a.rounds, "cases": out,
    })


if __name__ == "__main__":
    main()
