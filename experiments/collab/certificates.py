"""Collaborative certificates against every registered liar: is each printed guarantee true?

For every registered attack (the count-level ones and the answer-level ``late``,
``late-records`` and ``late-edge`` liars), on the six Table I populations and two fair ones
built from the teacher case's group sizes (``fair-0``: DP 0; ``fair+0.045``: DP +0.045, inside
the band 0.05), and for the configurations (declared ``K``, liars) = (0, 1), (1, 1) and (1, 2)
(``K + 1`` colluders), it runs ``--seeds`` simulated audits with verification on (challenge
rate ``--rate``, :class:`fairprobe.collab.verify.ChallengeCore`) and reports, per cell, with
standard errors:

* ``wrong``: the regulator's default ``bounded`` verdict is decided and differs from the
  population's (``|DP| <= tau``: fair);
* ``decided``: share of decided verdicts;
* ``escaped``: decided, no liar caught, and different from the verdict the same audit gives on
  the liars' *true* answers (answer-level liars; for count-level ones, from the truth);
* ``bound``: the mean reported escape bound ``(1 - c)^F`` (0 for an undetermined verdict,
  which cannot escape); the claim checked is ``escaped <= bound + 2 SE`` in every cell;
* ``node_escaped`` / ``node_bound``: the same for the first honest node's own verdict, proofs
  and bound (Theorem 3 is about each node's verdict; the regulator withholds a verdict when an
  uncaught liar's report contradicts the honest ones, so it rarely escapes at all);
* ``extra``: the challenges and proof checks as a share of the audit's queries.

Escape cells (``--escape-cells``, on by default): the ``late-edge`` liar (the fewest false
answers that move the verdict) against ``unfair-edge`` (DP -0.0502, just outside the band) at
declared ``K = 0`` and challenge rates 0.001 and 0.003, where few answers are false, the bound
is far from 0 and escapes do happen, so the bound is tested rather than trivially met.

    python experiments/collab/certificates.py [--seeds 200] [--rate 0.008] [--workers 2]
    python experiments/collab/certificates.py --rate 0 --out certificates_noverify.json ...

(``--rate 0``: no verification, the escape bound is then 1 for every decided verdict.)

Runs on a local process pool (one run is ~0.04 s of numpy). Writes
``experiments/results/collab/certificates.json`` (regenerated, never resumed); seeds
``0 .. seeds - 1`` in every cell.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))

from _common import RESULTS, fair_populations  # noqa: E402

from fairprobe.collab.attacker import ATTACKS  # noqa: E402
from fairprobe.collab.bounded import escape_bound  # noqa: E402
from fairprobe.collab.simulate import SimConfig, simulate  # noqa: E402
from fairprobe.collab.verify import DEFAULT_RATE  # noqa: E402
from fairprobe.datasets.populations import POPULATIONS, Population  # noqa: E402
from fairprobe.errors import FairprobeError  # noqa: E402
from fairprobe.report.jsonio import write_json  # noqa: E402

TABLE1 = ("bios-very-unfair", "bios-moderate", "bios-near-fair",
          "civil-very-unfair", "civil-moderate", "civil-near-fair")
FAIR = {k: v for k, v in fair_populations().items() if k in ("fair-0", "fair+0.045")}
EDGE = Population("unfair-edge", "bios", "teacher sizes, DP -0.0502", 71_261, 63_018,
                  0.0575, 0.1077, -0.0502)
#: (declared K, liars): within the default K, K + 1 colluders, one liar beyond K = 0.
CONFIGS = ((1, 1), (1, 2), (0, 1))
#: (case, attack, declared K, liars, rate) of the cells where escapes happen.
ESCAPE_CELLS = tuple(("unfair-edge", "late-edge", 0, 1, r) for r in (0.001, 0.003))


def _run(args: tuple[str, str, int, int, int, float]) -> dict[str, Any] | None:
    case, attack, declared, liars, seed, rate = args
    try:
        r = simulate(SimConfig(case=case, seed=seed, attackers=liars, attack=attack,
                               max_liars=declared, verify_rate=rate if rate > 0 else None),
                     bounded_only=True)
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
    # the first honest node: its verdict, its proofs, its bound
    nv = str(b["verdicts"][0])
    n_dec = nv != "undetermined"
    n_ref = str(b["true_answer_node_verdicts"][0]) if "true_answer_node_verdicts" in b else truth
    n_caught = bool(b["node_caught"][0]) if "node_caught" in b else False
    nb = escape_bound(float(b["node_flip_mass"][0]), rate if rate > 0 else None)
    n_bound = (1.0 if nb is None else nb) if n_dec else 0.0
    return {
        "case": case, "attack": attack, "declared": declared, "liars": liars, "seed": seed,
        "rate": rate, "verdict": ver, "wrong": decided and ver != truth, "decided": decided,
        "escaped": decided and not caught and ver != ref, "bound": float(bound),
        "node_wrong": n_dec and nv != truth, "node_decided": n_dec,
        "node_escaped": n_dec and not n_caught and nv != n_ref, "node_bound": float(n_bound),
        "caught": caught, "extra": float(checks["extra_query_fraction"]),
    }


def _share(xs: list[float]) -> tuple[float, float]:
    n = len(xs)
    if not n:
        return math.nan, math.nan
    m = sum(xs) / n
    var = sum((x - m) ** 2 for x in xs) / max(n - 1, 1)
    return m, math.sqrt(var / n)


def _summarise(rs: list[dict[str, Any]], key: tuple[str, str, int, int, float]
               ) -> dict[str, Any]:
    case, attack, k, liars, rate = key
    d: dict[str, Any] = {"case": case, "attack": attack, "declared": k, "liars": liars,
                         "rate": rate, "runs": len(rs)}
    for name in ("wrong", "decided", "escaped", "bound", "node_wrong", "node_decided",
                 "node_escaped", "node_bound", "caught", "extra"):
        m, se = _share([float(r[name]) for r in rs])
        d[name], d[f"{name}_se"] = m, se
    d["bound_holds"] = (d["escaped"] <= d["bound"] + 2 * d["escaped_se"] + 1e-12
                        and d["node_escaped"] <= d["node_bound"]
                        + 2 * d["node_escaped_se"] + 1e-12)
    return d


def _write(a: argparse.Namespace, table: list[dict[str, Any]], planned: int, runs: int,
           elapsed: float) -> dict[str, Any]:
    within = [d for d in table if d["liars"] <= d["declared"]]
    verified = [d for d in table if d["rate"] == a.rate]
    summary = {
        "cells": len(table), "cells_planned": planned, "complete": len(table) == planned,
        "runs": runs,
        "bound_holds_everywhere": all(d["bound_holds"] for d in table),
        "cells_where_bound_fails": [
            {k: d[k] for k in ("case", "attack", "declared", "liars", "rate", "escaped",
                               "bound")}
            for d in table if not d["bound_holds"]],
        "wrong_within_k": sum(round(d["wrong"] * d["runs"]) for d in within),
        "node_wrong_within_k": sum(round(d["node_wrong"] * d["runs"]) for d in within),
        "runs_within_k": sum(d["runs"] for d in within),
        "max_wrong_beyond_k": max((d["wrong"] for d in table if d["liars"] > d["declared"]),
                                  default=math.nan),
        "max_extra": max((d["extra"] for d in verified), default=math.nan),
        "cells_with_escapes": sum(1 for d in table if d["escaped"] + d["node_escaped"] > 0),
    }
    write_json(RESULTS / a.out, {
        "experiment": "collab-certificates",
        "command": "python experiments/collab/certificates.py " + " ".join(sys.argv[1:]),
        "seeds": a.seeds, "rate": a.rate,
        "populations": {k: {"true_dp": p.true_dp} for k, p in (*FAIR.items(),
                                                                 (EDGE.name, EDGE))},
        "elapsed_s": round(elapsed, 1), "load_average": list(os.getloadavg()),
        "summary": summary, "cells": table,
    })
    return summary


def _cells(a: argparse.Namespace) -> list[tuple[str, str, int, int, float]]:
    """Every cell, in the order they run (the file is rewritten as cells complete, so an
    interrupted run keeps the first ones): escape cells, the first configuration for every
    (population, liar), the second, three late liars, beyond K unverified, the rest."""
    attacks = [x for x in a.attacks.split(",") if x]
    cases = [x for x in a.cases.split(",") if x]
    configs = [tuple(int(x) for x in c.split(":")) for c in a.configs.split(",") if c]
    grid = [[(c, at, k, n, a.rate) for c in cases for at in attacks] for k, n in configs]
    out: list[tuple[str, str, int, int, float]] = []
    if a.escape_cells:
        out += list(ESCAPE_CELLS)
    out += [x for g in grid[:2] for x in g]
    if a.extra_cells:
        out += [(c, at, 1, 3, a.rate) for c in TABLE1 if not c.endswith("near-fair")
                for at in ("late", "late-records", "late-edge")]
        out += [(c, at, k, n, 0.0) for k, n in ((1, 2), (2, 4)) for c in cases
                for at in ("adaptive", "consistent", "late")]
    out += [x for g in grid[2:] for x in g]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=200)
    ap.add_argument("--rate", type=float, default=DEFAULT_RATE)
    ap.add_argument("--escape-cells", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument("--extra-cells", action=argparse.BooleanOptionalAction, default=True,
                    help="three late liars (K = 1) on the very unfair and moderate cases, and "
                    "K + 1 .. 2K liars without verification")
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
    POPULATIONS[EDGE.name] = EDGE
    cells = _cells(a)
    jobs = [(*cell[:4], s, cell[4]) for cell in cells for s in range(a.seeds)]
    print(f"{len(jobs)} runs in {len(cells)} cells on {a.workers} worker(s)", flush=True)
    t0 = last = time.time()
    table: list[dict[str, Any]] = []
    pending: list[dict[str, Any] | None] = []
    n_runs = 0
    with ProcessPoolExecutor(max_workers=a.workers) as ex:
        for out in ex.map(_run, jobs, chunksize=8):  # in job order: cells complete in turn
            pending.append(out)
            if len(pending) == a.seeds:
                rs = [r for r in pending if r is not None]
                if rs:
                    table.append(_summarise(rs, cells[len(table)]))
                else:
                    table.append({**_summarise([], cells[len(table)]), "runs": 0})
                n_runs += len(rs)
                pending = []
                if time.time() - last > 60:
                    _write(a, table, len(cells), n_runs, time.time() - t0)
                    last = time.time()
                    print(f"{len(table)}/{len(cells)} cells, {time.time() - t0:.0f} s",
                          flush=True)
    summary = _write(a, table, len(cells), n_runs, time.time() - t0)
    print(f"{'case':17s} {'attack':16s} K L  rate   wrong%  decided%  escaped% bound%  "
          f"node: wrong% escaped% bound%  extra%")
    for d in table:
        print(f"{d['case']:17s} {d['attack']:16s} {d['declared']} {d['liars']}  "
              f"{d['rate']:<6g} {100 * d['wrong']:5.1f}  {100 * d['decided']:7.1f}  "
              f"{100 * d['escaped']:7.2f} {100 * d['bound']:6.2f}  "
              f"{100 * d['node_wrong']:10.1f} {100 * d['node_escaped']:8.2f} "
              f"{100 * d['node_bound']:6.2f}  {100 * d['extra']:6.2f}")
    print({k: v for k, v in summary.items() if k != "cells_where_bound_fails"})


if __name__ == "__main__":
    main()
