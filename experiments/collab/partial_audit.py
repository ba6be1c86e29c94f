"""Audits that stop before the query sets are exhausted: is the verdict right about the
population's DP, and how often is it decided?

For each Table I case and the fair populations of ``_common.fair_populations`` (DP 0, +0.045,
+0.05 on the band's edge), ``--seeds`` seeds (0 .. seeds - 1) of the simulator with the rounds
capped at ``--rounds`` (no liar, declared K = ``--max-liars``): the share of runs whose
regulator's ``bounded`` verdict is wrong against the population's DP and the share decided, with
standard errors, for

* ``sampling`` (the default): the stratified sample hull at level 0.95
  (:func:`fairprobe.collab.bounded.stratified_hull`);
* ``worst-case``: the records never queried as unseen mass of any group and answer;
* ``records-as-population``: the interval of the records queried only (what the verdict would
  say if the queried records were the population; no guarantee about the population);
* the ``auditopus`` point estimate.

    python experiments/collab/partial_audit.py [--seeds 200] [--rounds 3] [--max-liars 0]

Writes ``experiments/results/collab/partial_audit.json`` (``partial_audit_k{K}.json`` for
``--max-liars K > 0``).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from dataclasses import replace

sys.path.insert(0, os.path.dirname(__file__))

from _common import RESULTS, fair_populations  # noqa: E402

from fairprobe.collab.simulate import SimConfig, bounded_run, closing_view, simulate  # noqa: E402
from fairprobe.datasets.populations import POPULATIONS  # noqa: E402
from fairprobe.report.jsonio import write_json  # noqa: E402

TABLE1 = ("bios-very-unfair", "bios-moderate", "bios-near-fair",
          "civil-very-unfair", "civil-moderate", "civil-near-fair")


def _se(p: float, n: int) -> float:
    return math.sqrt(p * (1 - p) / n) if n else math.nan


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--max-liars", type=int, default=0)
    a = ap.parse_args()
    fair = fair_populations()
    POPULATIONS.update(fair)
    out = []
    n = a.seeds
    t0 = time.time()
    print(f"{'population':18s} {'DP':>8s} | {'sampling wrong / decided %':>27s} | "
          f"{'worst-case w / d %':>18s} | {'records-only w / d %':>20s} | auditopus w %")
    for case in (*TABLE1, *fair):
        tally = {k: [0, 0] for k in ("sampling", "worst-case", "records")}
        w_pt = 0
        dp = math.nan
        for seed in range(a.seeds):
            cfg = SimConfig(case=case, seed=seed, max_rounds=a.rounds, max_liars=a.max_liars)
            r = simulate(cfg, keep_views=True)
            dp = r.true_dp
            truth = "fair" if abs(r.true_dp) <= cfg.tau else "unfair"
            wc = simulate(replace(cfg, partial="worst-case")).verdicts["bounded"]
            assert r.views is not None
            tabs, held = closing_view(r.views["H"], r.views["lag"], r.views["hon"])
            rec = bounded_run(cfg, r.rounds, tabs, held, 0)["verdict"]  # records as population
            for key, v in (("sampling", r.verdicts["bounded"]), ("worst-case", wc),
                           ("records", rec)):
                tally[key][0] += v not in ("undetermined", truth)
                tally[key][1] += v != "undetermined"
            w_pt += r.verdicts["auditopus"] != truth
        row: dict[str, object] = {"case": case, "true_dp": dp, "runs": n, "rounds": a.rounds,
                                  "max_liars": a.max_liars}
        for key, (w, d) in tally.items():
            pre = "" if key == "sampling" else (
                "worst_case_" if key == "worst-case" else "records_only_")
            row.update({pre + "wrong": w / n, pre + "wrong_se": _se(w / n, n),
                        pre + "decided": d / n, pre + "decided_se": _se(d / n, n)})
        row["auditopus_wrong"] = w_pt / n
        out.append(row)

        def cell(key: str, tally: dict[str, list[int]] = tally) -> str:
            w, d = tally[key]
            return (f"{100 * w / n:4.1f} ± {100 * _se(w / n, n):3.1f} / "
                    f"{100 * d / n:5.1f} ± {100 * _se(d / n, n):3.1f}")

        print(f"{case:18s} {dp:+8.4f} | {cell('sampling'):>27s} | "
              f"{100 * tally['worst-case'][0] / n:4.1f} / {100 * tally['worst-case'][1] / n:5.1f}"
              f"{'':6s} | {100 * tally['records'][0] / n:5.1f} / "
              f"{100 * tally['records'][1] / n:5.1f}{'':7s} | {100 * w_pt / n:5.1f}")
    print(f"{len(out) * a.seeds} audits x 2 constructions in {time.time() - t0:.0f} s")
    name = "partial_audit.json" if a.max_liars == 0 else f"partial_audit_k{a.max_liars}.json"
    write_json(RESULTS / name, {
        "experiment": "collab-partial-audit",
        "command": "python experiments/collab/partial_audit.py " + " ".join(sys.argv[1:]),
        "seeds": a.seeds, "rounds": a.rounds, "max_liars": a.max_liars, "level": 0.95,
        "cases": out,
    })


if __name__ == "__main__":
    main()
