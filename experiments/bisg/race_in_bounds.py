"""``--race-in-bounds`` where its assumption holds and where it fails, over seeds.

``--race-in-bounds`` puts the rows whose race is recorded into the bounds
(:func:`fairprobe.bisg.job.recorded_in_bounds`); it assumes that whether a row's race is
recorded depends on its surname and place only (:data:`fairprobe.bisg.job.IN_BOUNDS_ASSUMPTION`).
Populations are drawn from the census tables (:mod:`fairprobe.bisg.simulate`, design ``place``:
decisions depend on race and on the place's income; BISG exactly calibrated), and race is
recorded

* *race-dependent*: for Black applicants at 20%, for every other applicant at 60%;
* *race-dependent-extreme*: for Black applicants at 5%, for every other applicant at 95%;
* *race-independent*: for every applicant at the same rate, 55% (about the overall share of the
  first scheme).

Each population is audited through the shipped path (``bisg_probabilities``, then
``proxy_audit`` on the proxy alone, and on ``recorded_in_bounds`` of it), and the printed bounds
interval is compared with the true gap: its coverage (with a standard error), mean interval and
the share of runs it decides (fair or unfair).

    python experiments/bisg/race_in_bounds.py [--seeds 200] [--n 20000]

writes ``experiments/results/bisg/race_in_bounds.json``.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path
from typing import Any

import numpy as np

from fairprobe.bisg.estimate import proxy_audit
from fairprobe.bisg.job import recorded_in_bounds
from fairprobe.bisg.simulate import DESIGNS, draw_population
from fairprobe.bisg.tables import RACES, bisg_probabilities

OUT = Path(__file__).resolve().parents[1] / "results" / "bisg" / "race_in_bounds.json"

#: Share of rows whose race is recorded, by race (``None``: every race alike).
SCHEMES: dict[str, dict[str, float]] = {
    "race-dependent": {"black": 0.20, "other": 0.60},
    "race-dependent-extreme": {"black": 0.05, "other": 0.95},
    "race-independent": {"black": 0.55, "other": 0.55},
}
GROUPS = ("black", "hispanic")


def recorded(race: np.ndarray, scheme: dict[str, float], seed: int) -> np.ndarray:
    """Index into RACES of each row's recorded race, -1 where it is not recorded (seeded)."""
    codes = np.searchsorted(np.asarray(RACES), race, sorter=np.argsort(RACES))
    codes = np.argsort(RACES)[codes]
    p = np.where(codes == RACES.index("black"), scheme["black"], scheme["other"])
    rng = np.random.default_rng([seed, 7])
    return np.where(rng.random(race.size) < p, codes, -1).astype(np.int64)


def one_seed(seed: int, n: int, tolerance: float) -> list[dict[str, Any]]:
    pop = draw_population(n, seed=seed, **DESIGNS["place"])  # type: ignore[arg-type]
    pp = bisg_probabilities(pop.frame["surname"], pop.frame["zip"])
    used = pp.used
    y = pop.frame["approved"].to_numpy(dtype=np.float64)[used]
    out: list[dict[str, Any]] = []

    def audit(q: np.ndarray, cells: np.ndarray | None) -> Any:
        return proxy_audit(y, q, groups=GROUPS, reference="white", tolerance=tolerance,
                           confidence_level=0.95, seed=seed, birdie=False, strata=cells)

    alone = audit(pp.q[used], None)  # the proxy alone does not read the recorded races
    for scheme, rates in SCHEMES.items():
        race = recorded(pop.race, rates, seed)[used]
        for variant, res in (("proxy_alone", alone),
                             ("race_in_bounds", audit(*recorded_in_bounds(pp.q[used], race,
                                                                          None)))):
            for c in res.comparisons:
                truth = pop.truth[c.group] - pop.truth["white"]
                f = c.finding
                out.append({"scheme": scheme, "variant": variant, "group": c.group,
                            "seed": seed, "truth": truth, "low": f.low, "high": f.high,
                            "recorded": float((race >= 0).mean()),
                            "covered": bool(f.low <= truth <= f.high),
                            "decided": f.verdict != "undetermined"})
    return out


def _share(hits: list[bool]) -> dict[str, float]:
    """A share of runs and its binomial standard error."""
    rate = sum(hits) / len(hits)
    return {"rate": rate, "se": math.sqrt(rate * (1.0 - rate) / len(hits))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for flag, kind, default in (("--seeds", int, 200), ("--n", int, 20000),
                                ("--tolerance", float, 0.05)):
        ap.add_argument(flag, type=kind, default=default)
    args = ap.parse_args()
    t0 = time.perf_counter()
    recs = [r for s in range(args.seeds) for r in one_seed(s, args.n, args.tolerance)]
    result: dict[str, Any] = {"seeds": args.seeds, "n": args.n, "tolerance": args.tolerance,
                              "confidence_level": 0.95, "design": "place",
                              "spec": DESIGNS["place"], "schemes": SCHEMES, "results": {}}
    for scheme in SCHEMES:
        for variant in ("proxy_alone", "race_in_bounds"):
            for g in GROUPS:
                rs = [r for r in recs if r["scheme"] == scheme and r["variant"] == variant
                      and r["group"] == g]
                s = {"truth": float(rs[0]["truth"]), "runs": len(rs),
                     "recorded_share": float(np.mean([r["recorded"] for r in rs])),
                     "coverage": _share([r["covered"] for r in rs]),
                     "decided": _share([r["decided"] for r in rs]),
                     "mean_bounds": [float(np.mean([r["low"] for r in rs])),
                                     float(np.mean([r["high"] for r in rs]))]}
                result["results"].setdefault(scheme, {}).setdefault(variant, {})[g] = s
                print(f"{scheme:24s} {variant:14s} {g:8s} truth {s['truth']:+.3f} cover "
                      f"{s['coverage']['rate']:.3f} +/- {s['coverage']['se']:.3f} mean "
                      f"[{s['mean_bounds'][0]:+.3f}, {s['mean_bounds'][1]:+.3f}] decided "
                      f"{s['decided']['rate']:.3f}", flush=True)
    result["seconds"] = round(time.perf_counter() - t0, 1)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {OUT} in {result['seconds']} s")


if __name__ == "__main__":
    main()
