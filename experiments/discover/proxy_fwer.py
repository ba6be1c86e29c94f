"""``discover --proxy``: family-wise error and decided share over seeds, where its conditions
hold and where each one fails.

    .venv/bin/python experiments/discover/proxy_fwer.py [--seeds 200] [--planted-seeds 100]
        [--workers 2]

Populations are drawn from the census tables (:func:`fairprobe.bisg.simulate.draw_population`:
BISG calibrated by construction; decisions depend on an index of the ZCTA drawn independently
of its racial composition, ``place_effect`` 1.0) and searched through the shipped entry point
:func:`fairprobe.discover.proxy.discover_by_proxy` (Black and Hispanic against White, band
0.05, ``fdr`` 0.1, depth 2). The searched features are uniform categorical columns (``region``
a/b/c, ``product`` p/q) drawn independently of everything, so every slice's true race gap is
known exactly from the design:

* ``null`` (20,000 rows): no race effect; every slice's gap is the population's, under 0.01:
  every report is false.
* ``race-feature`` (20,000 rows): the same decisions, and a searched feature ``lang`` that tells
  races apart beyond surname and place (``x`` for 70% of Hispanic and 10% of other applicants):
  the decisions do not depend on it, so every slice's gap is still under 0.01, but the proxy is
  no longer calibrated within its slices, the condition the result states
  (:data:`~fairprobe.discover.proxy.PROXY_SLICE_CONDITION`). The adversary least suited to it.
* ``planted`` (60,000 rows): Black and Hispanic applicants approved far less often in region b
  (race effect -2.5 on the logit): the gap is the design's inside region b, about 0 in regions a
  and c, and a third of the former in slices without a region condition (regions are uniform and
  independent of race). A pair is true when its gap lies outside the band; the decided share is
  the share of true pairs reported.

Each population is searched on the proxy alone and with ``--race-in-bounds``
(:func:`fairprobe.bisg.job.recorded_in_bounds`), race recorded for 55% of rows at random (its
condition holds) or for 20% of Black and 60% of other applicants (it fails). Per cell: the share
of runs with any false report (the family-wise error, at most 0.1 where the conditions hold),
with its binomial standard error, the mean number reported and the decided share.
Writes ``experiments/results/discover/proxy_fwer.json``.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from fairprobe.bisg.simulate import draw_population
from fairprobe.discover.proxy import ProxyOptions, discover_by_proxy

OUT = Path(__file__).resolve().parents[1] / "results" / "discover" / "proxy_fwer.json"
FEATURES = {"region": ["a", "b", "c"], "product": ["p", "q"]}
GROUPS = ("black", "hispanic")
TOLERANCE, FDR = 0.05, 0.1
#: Share of rows whose race is recorded (``--race-in-bounds``), Black and other applicants.
RECORDING = {"random": (0.55, 0.55), "race-dependent": (0.20, 0.60)}
#: Per design: rows, the population's parameters, the searched features, the searches run.
DESIGNS: dict[str, dict[str, Any]] = {
    "null": {"n": 20_000, "spec": {"intercept": 0.3, "race_effect": {}, "income_effect": 0.0,
                                   "place_effect": 1.0},
             "configs": ("proxy", "in-bounds-random", "in-bounds-race-dependent")},
    "race-feature": {"n": 20_000, "spec": {"intercept": 0.3, "race_effect": {},
                                           "income_effect": 0.0, "place_effect": 1.0},
                     "lang": True, "configs": ("proxy",)},
    "planted": {"n": 60_000, "spec": {"intercept": 0.5,
                                      "race_effect": {"black": -2.5, "hispanic": -2.5},
                                      "income_effect": 0.0, "place_effect": 1.0},
                "planted": {"region": "b"},
                "configs": ("proxy", "in-bounds-random", "in-bounds-race-dependent")},
}


def _gap(truth: dict[str, float], group: str) -> float:
    return truth[group] - truth["white"]


def slice_gap(pop: Any, conditions: list[dict[str, Any]], group: str) -> float:
    """A slice's true race gap, exact from the design: the planted slice's rates inside region
    b, the others' in regions a and c, a third and two thirds of each without a region
    condition (regions are uniform and independent of race); no other feature moves it."""
    if not pop.truth_outside:
        return _gap(pop.truth, group)
    region = next((c["value"] for c in conditions if c["feature"] == "region"), None)
    inside, outside = _gap(pop.truth, group), _gap(pop.truth_outside, group)
    if region is None:
        return inside / 3.0 + 2.0 * outside / 3.0
    return inside if region == "b" else outside


def _recorded(race: np.ndarray, scheme: str, seed: int) -> np.ndarray:
    """The race column an auditor would get: the race where recorded (seeded), else empty."""
    black, other = RECORDING[scheme]
    p = np.where(race == "black", black, other)
    rng = np.random.default_rng([seed, 7])
    return np.where(rng.random(race.size) < p, race, "")


def one_run(design: str, seed: int) -> list[dict[str, Any]]:
    d = DESIGNS[design]
    pop = draw_population(d["n"], seed=seed, features=FEATURES, planted=d.get("planted"),
                          **d["spec"])
    frame, feats = pop.frame, ["region", "product"]
    if d.get("lang"):
        rng = np.random.default_rng([seed, 11])
        p = np.where(pop.race == "hispanic", 0.7, 0.1)
        frame = frame.assign(lang=np.where(rng.random(len(frame)) < p, "x", "y"))
        feats = [*feats, "lang"]
    # the true pairs: every slice of the search (depth 2 over region and product) and race
    # whose gap lies outside the band; a slice's gap depends on its region condition only
    slices = ([[{"feature": "region", "value": r}] for r in FEATURES["region"]]
              + [[] for _ in FEATURES["product"]]
              + [[{"feature": "region", "value": r}] for r in FEATURES["region"]
                 for _ in FEATURES["product"]])
    true_pairs = sum(abs(slice_gap(pop, c, g)) > TOLERANCE for c in slices for g in GROUPS)
    out = []
    for config in d["configs"]:
        opts: dict[str, Any] = {}
        data = frame
        if config.startswith("in-bounds"):
            data = frame.assign(race=_recorded(pop.race, config.removeprefix("in-bounds-"),
                                               seed))
            opts = {"race_col": "race", "race_in_bounds": True}
        res = discover_by_proxy(data, y_pred="approved", features=feats, depth=2, fdr=FDR,
                                tolerance=TOLERANCE, seed=seed,
                                proxy=ProxyOptions("bisg", "surname", "zip", groups=GROUPS,
                                                   **opts))
        gaps = [slice_gap(pop, [c.to_dict() for c in s.conditions], s.proxy["group"])
                for s in res.subgroups]
        covered = [s.proxy["bounds"]["low"] <= g <= s.proxy["bounds"]["high"]
                   for s, g in zip(res.subgroups, gaps, strict=True)]
        false = [abs(g) <= TOLERANCE for g in gaps]
        out.append({"design": design, "config": config, "seed": seed, "tested": res.tested,
                    "reported": len(res.subgroups), "false": int(sum(false)),
                    "true_reported": int(len(false) - sum(false)),
                    "true_pairs": int(true_pairs), "covered": int(sum(covered))})
    return out


def _share(hits: list[bool]) -> dict[str, float]:
    rate = sum(hits) / len(hits)
    return {"rate": rate, "se": math.sqrt(rate * (1.0 - rate) / len(hits))}


def _mean(xs: list[float]) -> dict[str, float]:
    a = np.asarray(xs, dtype=float)
    return {"mean": float(a.mean()),
            "se": float(a.std(ddof=1) / math.sqrt(a.size)) if a.size > 1 else 0.0}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=200)
    ap.add_argument("--planted-seeds", type=int, default=100)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    t0 = time.perf_counter()
    jobs = [(dn, s) for dn in DESIGNS
            for s in range(args.planted_seeds if dn == "planted" else args.seeds)]
    with ProcessPoolExecutor(args.workers) as ex:
        recs = [r for rs in ex.map(one_run, *zip(*jobs, strict=True)) for r in rs]
    result: dict[str, Any] = {
        "seeds": args.seeds, "planted_seeds": args.planted_seeds, "tolerance": TOLERANCE,
        "fdr": FDR, "groups": list(GROUPS), "recording": RECORDING,
        "designs": {k: {kk: vv for kk, vv in v.items() if kk != "configs"}
                    for k, v in DESIGNS.items()}, "results": {}}
    for dn, d in DESIGNS.items():
        for config in d["configs"]:
            rs = [r for r in recs if r["design"] == dn and r["config"] == config]
            reported = sum(r["reported"] for r in rs)
            cell = {"runs": len(rs), "tested": rs[0]["tested"],
                    "family_wise_error": _share([r["false"] > 0 for r in rs]),
                    "reported": _mean([r["reported"] for r in rs]),
                    "reports_covering_their_gap": (sum(r["covered"] for r in rs) / reported
                                                   if reported else None)}
            if rs[0]["true_pairs"]:
                cell["decided_share"] = _mean([r["true_reported"] / r["true_pairs"]
                                               for r in rs])
            result["results"].setdefault(dn, {})[config] = cell
            dec = cell.get("decided_share")
            print(f"{dn:13s} {config:25s} FWER {cell['family_wise_error']['rate']:.3f} +/- "
                  f"{cell['family_wise_error']['se']:.3f}  reported "
                  f"{cell['reported']['mean']:.2f}"
                  + (f"  decided {dec['mean']:.3f} +/- {dec['se']:.3f}" if dec else ""),
                  flush=True)
    result["seconds"] = round(time.perf_counter() - t0, 1)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {OUT} in {result['seconds']} s")


if __name__ == "__main__":
    main()
