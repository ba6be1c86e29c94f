"""How often the default ``bounded`` verdict is fair / unfair / undetermined,
and that it is never wrong with at most the declared number of liars.

Populations: the six Table I cases (all unfair) and three fair ones built from the teacher case's
group sizes (``fair-0``: DP = 0; ``fair-edge``: DP = -0.033; ``fair-edge+``: DP = +0.033, inside
the band tau = 0.05). Part A: no liar, ``--fair-seeds`` (>= 200) seeds per fair population and
``--seeds`` per Table I case, declared K = 0, 1, 2: shares with standard errors, next to the
point-estimate methods (``robust``, ``auditopus``, ``median``). Part B: K = 1, 2, 5 liars of
every registered attack (``away``, a liar pushing a fair model out of the band, included),
declared K = the number of liars and K = 0, without and with verification (challenges at rate
``--rate``, by default the product's ``verify.DEFAULT_RATE``; the ``selective`` liar answers truthfully on records it chose, so verification cannot
catch it): in the Table II layout, "attack success" is a wrong "fair" (on the unfair cases), and
"wrong" any wrong fair/unfair verdict, next to the undetermined share; ``certified_k`` and the
verification bound ``(1 - c)^flip_mass`` over the decided runs.

    python experiments/collab/verdict_guarantees.py [--fair-seeds 200] [--seeds 10]

Writes ``experiments/results/collab/verdict_guarantees.json`` (the tables; every run's row in
``runs/verdict_guarantees_runs.json``, not committed); regenerated, never resumed.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from collections import defaultdict
from concurrent.futures import ProcessPoolExecutor
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))

import numpy as np  # noqa: E402
from _common import RESULTS  # noqa: E402
from robust_fair_cost import AwayAttack  # noqa: E402, F401 - registers the "away" liar

from fairprobe.collab.attacker import ATTACKS  # noqa: E402
from fairprobe.collab.simulate import (  # noqa: E402
    SimConfig,
    bounded_run,
    closing_view,
    simulate,
)
from fairprobe.collab.verify import (  # noqa: E402
    DEFAULT_RATE,
    VerifyConfig,
    simulate_verification,
)
from fairprobe.datasets.populations import POPULATIONS, Population  # noqa: E402
from fairprobe.errors import FairprobeError  # noqa: E402
from fairprobe.report.jsonio import write_json  # noqa: E402

TABLE1 = ("bios-very-unfair", "bios-moderate", "bios-near-fair",
          "civil-very-unfair", "civil-moderate", "civil-near-fair")
FAIR = {
    "fair-0": Population("fair-0", "bios", "teacher sizes, equal rates", 71_261, 63_018,
                         0.080, 0.080, 0.0),
    "fair-edge": Population("fair-edge", "bios", "teacher sizes, DP -0.033", 71_261, 63_018,
                            0.065, 0.098, -0.033),
    "fair-edge+": Population("fair-edge+", "bios", "teacher sizes, DP +0.033", 71_261, 63_018,
                             0.098, 0.065, 0.033),
}
POINT = ("robust", "auditopus", "median")


def _truth(dp: float, tau: float = 0.05) -> str:
    return "fair" if abs(dp) <= tau else "unfair"


def _no_liar(args: tuple[str, int, tuple[int, ...]]) -> list[dict[str, Any]]:
    case, seed, declared = args
    out = []
    for k in declared:
        try:
            r = simulate(SimConfig(case=case, seed=seed, max_liars=k))
        except FairprobeError:
            return []
        row = {"case": case, "seed": seed, "declared": k, "truth": _truth(r.honest_dp),
               "bounded": r.verdicts["bounded"], "certified_k": r.certified["bounded"],
               "flip_mass": r.bounded["flip_mass"]}
        if k == 0:
            row.update({m: r.verdicts[m] for m in POINT})
        out.append(row)
    return out


def _liars(args: tuple[str, str, int, int, float]) -> list[dict[str, Any]]:
    case, attack, k, seed, rate = args
    out = []
    try:
        cfg = SimConfig(case=case, seed=seed, attackers=k, attack=attack)
        r = simulate(cfg, keep_views=True)
        vcfg = VerifyConfig(rate=rate, records="chosen" if attack == "selective" else "random")
        ver = simulate_verification(cfg, vcfg)
    except FairprobeError:
        return []
    assert r.views is not None
    H, lag, hon = r.views["H"], r.views["lag"], r.views["hon"]
    tabs, rounds = closing_view(H, lag, hon)
    proven = np.array(ver["proven"], dtype=bool)
    truth = _truth(r.honest_dp)
    for declared in sorted({0, k}):
        for verified in (False, True):
            c = SimConfig(case=case, seed=seed, attackers=k, attack=attack, max_liars=declared)
            b = bounded_run(c, r.rounds, tabs, rounds, k,
                            proven=proven if verified else None,
                            verify_rate=rate if verified else None)
            nodes = b["verdicts"]
            out.append({
                "case": case, "attack": attack, "liars": k, "seed": seed, "declared": declared,
                "verified": verified, "truth": truth, "bounded": b["verdict"],
                "node_wrong": float(np.mean([v not in ("undetermined", truth) for v in nodes])),
                "certified_k": b["certified_k"], "flip_mass": b["flip_mass"],
                "escape_bound": b["escape_bound"],
                "extra_query_fraction": ver["extra_query_fraction"] if verified else 0.0,
                "proven_share": float(proven[:, list(r.attacker_positions)].mean())
                if verified else 0.0,
                **({m: r.verdicts[m] for m in POINT} if declared == k and not verified else {}),
            })
    return out


def _shares(rows: list[dict[str, Any]], key: str = "bounded") -> dict[str, Any]:
    n = len(rows)
    d: dict[str, Any] = {"runs": n}
    for v in ("fair", "unfair", "undetermined"):
        p = sum(r[key] == v for r in rows) / n if n else math.nan
        d[v] = 100 * p
        d[f"{v}_se"] = 100 * math.sqrt(p * (1 - p) / n) if n else math.nan
    w = sum(r[key] not in ("undetermined", r["truth"]) for r in rows) / n if n else math.nan
    d["wrong"] = 100 * w
    d["wrong_se"] = 100 * math.sqrt(w * (1 - w) / n) if n else math.nan
    return d


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fair-seeds", type=int, default=200)
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--rate", type=float, default=DEFAULT_RATE)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    a = ap.parse_args()
    POPULATIONS.update(FAIR)  # before the pool forks: the workers see them too
    t0 = time.monotonic()
    jobs_a = [(c, s, (0, 1, 2)) for c in FAIR for s in range(a.fair_seeds)]
    jobs_a += [(c, s, (0, 1, 2)) for c in TABLE1 for s in range(a.seeds)]
    attacks = sorted(ATTACKS)
    jobs_b = [(c, at, k, s, a.rate) for c in (*TABLE1, *FAIR) for at in attacks
              for k in (1, 2, 5) for s in range(a.seeds)]
    with ProcessPoolExecutor(max_workers=a.workers) as ex:
        rows_a = [r for rs in ex.map(_no_liar, jobs_a, chunksize=8) for r in rs]
        rows_b = [r for rs in ex.map(_liars, jobs_b, chunksize=4) for r in rs]
    wall = time.monotonic() - t0

    print("A. No liar: shares of bounded verdicts (%, +- SE), and false verdicts of point methods")
    print(f"{'population':18s} {'K':>2s} {'runs':>5s} {'fair':>13s} {'unfair':>13s} "
          f"{'undetermined':>13s} {'wrong':>12s}   robust / auditopus / median wrong %")
    part_a = []
    by_a: dict[tuple[str, int], list[dict[str, Any]]] = defaultdict(list)
    for r in rows_a:
        by_a[(r["case"], r["declared"])].append(r)
    for (case, k), rs in sorted(by_a.items(), key=lambda x: (x[0][0] not in FAIR, x[0])):
        s = _shares(rs)
        pt = {m: _shares(rs, m)["wrong"] for m in POINT} if k == 0 else {}
        ks = [r["certified_k"] for r in rs if r["certified_k"] is not None and r["certified_k"] >= 0]
        part_a.append({"case": case, "declared": k, **s, "point_wrong": pt,
                       "certified_k": dict(sorted(_hist(ks).items()))})
        print(f"{case:18s} {k:2d} {s['runs']:5d} "
              + " ".join(f"{s[v]:6.1f} +-{s[v + '_se']:4.1f}" for v in
                         ("fair", "unfair", "undetermined"))
              + f" {s['wrong']:5.1f} +-{s['wrong_se']:4.1f}"
              + ("   " + " / ".join(f"{pt[m]:.1f}" for m in POINT) if pt else ""))

    print("\nB. Liars (K = 1, 2, 5 of each attack): wrong verdicts / undetermined (%) of the "
          "regulator's bounded verdict;\n   'fooled' = wrong 'fair' on an unfair case (Table II "
          "attack success); robust / median wrong for comparison")
    part_b = []
    by_b: dict[tuple[str, str, int, bool], list[dict[str, Any]]] = defaultdict(list)
    for r in rows_b:
        fam = "fair" if r["case"] in FAIR else "table1"
        by_b[(fam, r["attack"], r["declared"] == r["liars"], r["verified"])].append(r)
    print(f"{'cases':7s} {'attack':17s} {'declared':>9s} {'verify':>6s} {'runs':>5s} "
          f"{'wrong':>7s} {'fooled':>7s} {'undet.':>7s} {'node wrong':>10s} {'cert_k med':>10s} "
          f"{'escape med':>10s}   robust / median wrong")
    for (fam, at, dk, vf), rs in sorted(by_b.items()):
        s = _shares(rs)
        fooled = 100 * float(np.mean([r["bounded"] == "fair" and r["truth"] == "unfair"
                                      for r in rs]))
        ks = [r["certified_k"] for r in rs if r["certified_k"] is not None]
        eb = [r["escape_bound"] for r in rs if r["escape_bound"] is not None]
        nw = 100 * float(np.mean([r["node_wrong"] for r in rs]))
        pts = {m: 100 * float(np.mean([r[m] not in ("undetermined", r["truth"])
                                       for r in rs if m in r])) for m in ("robust", "median")
               if any(m in r for r in rs)}
        part_b.append({"cases": fam, "attack": at, "declared": "K=liars" if dk else "K=0",
                       "verified": vf, **s, "fooled": fooled, "node_wrong": nw,
                       "certified_k": dict(sorted(_hist(ks).items())),
                       "escape_bound_median": float(np.median(eb)) if eb else None,
                       "extra_query_fraction": float(np.mean([r["extra_query_fraction"]
                                                              for r in rs])),
                       "point_wrong": pts})
        print(f"{fam:7s} {at:17s} {'K=liars' if dk else 'K=0':>9s} {'yes' if vf else 'no':>6s} "
              f"{len(rs):5d} {s['wrong']:7.1f} {fooled:7.1f} {s['undetermined']:7.1f} "
              f"{nw:10.1f} {np.median(ks) if ks else float('nan'):10.1f} "
              f"{(np.median(eb) if eb else float('nan')):10.2g}"
              + ("   " + " / ".join(f"{pts[m]:.1f}" for m in pts) if pts else ""))
    wrong_declared = sum(r["bounded"] not in ("undetermined", r["truth"])
                         for r in rows_b if r["declared"] == r["liars"])
    print(f"\nwrong bounded verdicts with <= the declared liars: {wrong_declared} of "
          f"{sum(r['declared'] == r['liars'] for r in rows_b)} (regulator); "
          f"wall {wall:.0f} s, load average {os.getloadavg()[0]:.1f}")
    (RESULTS / "runs").mkdir(parents=True, exist_ok=True)
    write_json(RESULTS / "verdict_guarantees.json", {
        "command": "python experiments/collab/verdict_guarantees.py "
                   f"--fair-seeds {a.fair_seeds} --seeds {a.seeds} --rate {a.rate}",
        "populations": {k: {"true_dp": p.true_dp} for k, p in FAIR.items()},
        "no_liar": part_a, "liars": part_b, "wrong_with_declared_liars": wrong_declared,
        "wall_seconds": wall, "load_average": list(os.getloadavg()),
    })
    # every run's row (~4 MB): next to the other sweeps' rows, git-ignored
    write_json(RESULTS / "runs" / "verdict_guarantees_runs.json",
               {"no_liar": rows_a, "liars": rows_b})


def _hist(xs: list[int]) -> dict[int, int]:
    out: dict[int, int] = defaultdict(int)
    for x in xs:
        out[int(x)] += 1
    return dict(out)


if __name__ == "__main__":
    main()
