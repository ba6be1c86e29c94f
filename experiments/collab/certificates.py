"""Collaborative certificates against every registered liar: is each printed guarantee true?

For every registered attack (the count-level ones and the answer-level ``late`` and
``late-records`` liars), on the six Table I populations and two fair ones built from the teacher
case's group sizes (``fair-0``: DP 0; ``fair+0.045``: DP +0.045, inside the band 0.05), and for
the configurations (declared ``K``, liars) = (0, 1), (1, 1), (1, 2) (``K + 1`` colluders) and
(2, 4) (``2K``, an honest majority), it runs ``--seeds`` simulated audits with verification on
(challenge rate ``--rate``, :class:`fairprobe.collab.verify.ChallengeCore`) and reports, per
cell, with standard errors:

* ``wrong``: the regulator's default ``bounded`` verdict is decided and differs from the
  population's (``|DP| <= tau``: fair);
* ``decided``: share of decided verdicts;
* ``escaped``: decided, no liar caught, and different from the verdict the same audit gives on
  the liars' *true* answers (answer-level liars; for count-level ones, from the truth);
* ``mean_bound``: the mean reported escape bound ``(1 - c)^F`` (0 for an undetermined verdict,
  which cannot escape); the claim checked is ``escaped <= mean_bound + 2 SE`` in every cell;
* ``extra``: the challenges and proof checks as a share of the audit's queries.

    python experiments/collab/certificates.py [--seeds 200] [--rate 0.01] [--workers 2]
    python experiments/collab/certificates.py --rate 0 --out certificates_noverify.json ...

(``--rate 0``: no verification, the escape bound is then 1 for every decided verdict.)

Runs on a local process pool (one run is ~0.03 s of numpy). Writes ``experiments/results/collab/certificates.json``
(regenerated, never resumed); seeds ``0 .. seeds - 1`` in every cell.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from collections import defaultdict
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))

from _common import RESULTS  # noqa: E402

from fairprobe.collab.attacker import ATTACKS  # noqa: E402
from fairprobe.collab.simulate import SimConfig, simulate  # noqa: E402
from fairprobe.datasets.populations import POPULATIONS, Population  # noqa: E402
from fairprobe.errors import FairprobeError  # noqa: E402
from fairprobe.report.jsonio import write_json  # noqa: E402

TABLE1 = ("bios-very-unfair", "bios-moderate", "bios-near-fair",
          "civil-very-unfair", "civil-moderate", "civil-near-fair")
FAIR = {
    "fair-0": Population("fair-0", "bios", "teacher sizes, equal rates", 71_261, 63_018,
                         0.080, 0.080, 0.0),
    "fair+0.045": Population("fair+0.045", "bios", "teacher sizes, DP +0.045", 71_261, 63_018,
                             0.1025, 0.0575, 0.045),
}
#: (declared K, liars): within K, K + 1 colluders, 2K (honest majority).
CONFIGS = ((0, 1), (1, 1), (1, 2), (2, 4))


def _run(args: tuple[str, str, int, int, int, float]) -> dict[str, Any] | None:
    case, attack, declared, liars, seed, rate = args
    try:
        r = simulate(SimConfig(case=case, seed=seed, attackers=liars, attack=attack,
                               max_liars=declared, verify_rate=rate if rate > 0 else None))
    except FairprobeError:
        return None
    b = r.bounded
    truth = "fair" if abs(r.true_dp) <= r.config.tau else "unfair"
    ver = b["verdict"]
    decided = ver != "undetermined"
    checks = b.get("verification") or {"caught": [], "extra_query_fraction": 0.0}
    caught = any(checks["caught"])
    ref = b.get("true_answer_verdict") or truth
    bound = b["escape_bound"] if decided and b["escape_bound"] is not None else (
        1.0 if decided else 0.0)
    return {
        "case": case, "attack": attack, "declared": declared, "liars": liars, "seed": seed,
        "verdict": ver, "wrong": decided and ver != truth, "decided": decided,
        "escaped": decided and not caught and ver != ref, "bound": float(bound),
        "caught": caught, "extra": float(checks["extra_query_fraction"]),
    }


def _share(xs: list[float]) -> tuple[float, float]:
    n = len(xs)
    if not n:
        return math.nan, math.nan
    m = sum(xs) / n
    var = sum((x - m) ** 2 for x in xs) / max(n - 1, 1)
    return m, math.sqrt(var / n)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=200)
    ap.add_argument("--rate", type=float, default=0.01)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--attacks", default=",".join(ATTACKS))
    ap.add_argument("--cases", default=",".join((*TABLE1, *FAIR)))
    ap.add_argument("--configs", default=",".join(f"{k}:{n}" for k, n in CONFIGS),
                    help="declared K : liars, comma-separated")
    ap.add_argument("--out", default="certificates.json",
                    help="file name under experiments/results/collab/ (--rate 0: no verification)")
    a = ap.parse_args()
    from concurrent.futures import ProcessPoolExecutor

    POPULATIONS.update(FAIR)  # before the pool forks: the workers see them too
    attacks = [x for x in a.attacks.split(",") if x]
    cases = [x for x in a.cases.split(",") if x]
    configs = [tuple(int(x) for x in c.split(":")) for c in a.configs.split(",") if c]
    jobs = [(c, at, k, liars, s, a.rate) for c in cases for at in attacks
            for k, liars in configs for s in range(a.seeds)]
    t0 = time.time()
    with ProcessPoolExecutor(max_workers=a.workers) as ex:
        rows = [x for x in ex.map(_run, jobs, chunksize=16) if x is not None]
    elapsed = time.time() - t0
    cells: dict[tuple[str, str, int, int], list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        cells[(r["case"], r["attack"], r["declared"], r["liars"])].append(r)
    table = []
    for (case, attack, k, liars), rs in sorted(cells.items()):
        d: dict[str, Any] = {"case": case, "attack": attack, "declared": k, "liars": liars,
                             "runs": len(rs)}
        for key in ("wrong", "decided", "escaped", "bound", "caught", "extra"):
            m, se = _share([float(r[key]) for r in rs])
            d[key], d[f"{key}_se"] = m, se
        d["bound_holds"] = d["escaped"] <= d["bound"] + 2 * d["escaped_se"] + 1e-12
        table.append(d)
    within = [d for d in table if d["liars"] <= d["declared"]]
    summary = {
        "cells": len(table), "runs": len(rows),
        "bound_holds_everywhere": all(d["bound_holds"] for d in table),
        "cells_where_bound_fails": [
            {k: d[k] for k in ("case", "attack", "declared", "liars", "escaped", "bound")}
            for d in table if not d["bound_holds"]],
        "wrong_within_k": sum(round(d["wrong"] * d["runs"]) for d in within),
        "runs_within_k": sum(d["runs"] for d in within),
        "max_wrong_beyond_k": max((d["wrong"] for d in table if d["liars"] > d["declared"]),
                                  default=math.nan),
        "max_extra": max((d["extra"] for d in table), default=math.nan),
    }
    print(f"{'case':18s} {'attack':17s} K  L  wrong%  decided%  escaped%  bound%   extra%")
    for d in table:
        print(f"{d['case']:18s} {d['attack']:17s} {d['declared']}  {d['liars']}  "
              f"{100 * d['wrong']:5.1f}  {100 * d['decided']:7.1f}  {100 * d['escaped']:7.2f}  "
              f"{100 * d['bound']:6.2f}  {100 * d['extra']:6.2f}")
    print({k: v for k, v in summary.items() if k != "cells_where_bound_fails"})
    write_json(RESULTS / a.out, {
        "experiment": "collab-certificates",
        "command": "python experiments/collab/certificates.py " + " ".join(sys.argv[1:]),
        "seeds": a.seeds, "rate": a.rate, "configs": [list(c) for c in configs],
        "populations": {k: {"true_dp": p.true_dp} for k, p in FAIR.items()},
        "elapsed_s": round(elapsed, 1), "load_average": list(os.getloadavg()),
        "summary": summary, "cells": table,
    })


if __name__ == "__main__":
    main()
