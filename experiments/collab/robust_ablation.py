"""What each ingredient of the recommended method ``robust`` buys.

    .venv/bin/python experiments/collab/robust_ablation.py [--seeds 10]

Bias in Bios, N = 20 honest auditors. For each run the simulator keeps every honest auditor's
final view (raw table ``M[j].c`` and Auditopus-weighted vectors ``W_j``); the same views are then
aggregated by each variant, so the variants differ only in the aggregation:

* ``none``, ``median``, ``auditopus``: the paper's methods;
* ``mass-cap``: Auditopus weights, each source's weighted mass capped at 2x the median source's
  (bounding each source's share of the pooled counts);
* ``cell-cap``: Auditopus weights, each (group, label) cell of a source capped at 3x the median
  source's (no source claims more positives of a group than a few typical sources together);
* ``screen-raw``: influence screening on raw counts, without the Auditopus weights;
* ``two-sided``: Auditopus weights + screening of both tails of the influence;
* ``no-forward``: one-sided screening started from all sources instead of the core (masking);
* ``two-sided c=2``, ``c=2, away c=3``: lower thresholds, screening (also) the sources pulling
  away from the band, which offsets the bias of removing only one tail;
* ``robust c=2/3/4/5``: rules 1-4 of ``robust`` alone and their threshold;
* ``c=4 + decisive ...``: rule 5 with a one-sided or a lower decisive screening;
* ``robust (default)``: the recommended method (c = 4, rule 5 with a two-sided c = 2 screening).

Attacks: the self-consistent liars (``consistent``, ``consistent-exact``, ``selective``) with
K = 1..5, and the paper's adaptive attacker with K = 1..19 (Table II). Writes
``experiments/results/collab/robust_ablation.json`` and prints ASR % / MAE per case and variant.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import defaultdict
from collections.abc import Callable

sys.path.insert(0, os.path.dirname(__file__))

import numpy as np  # noqa: E402
from _common import RESULTS  # noqa: E402

from fairprobe.collab.baselines import get_aggregator  # noqa: E402
from fairprobe.collab.robust import RobustParams, robust_estimate  # noqa: E402
from fairprobe.collab.simulate import SimConfig, prepare_honest, simulate  # noqa: E402
from fairprobe.report.jsonio import write_json  # noqa: E402

CASES = ("bios-very-unfair", "bios-moderate", "bios-near-fair")
ATTACKS = {
    "consistent": range(1, 6),
    "consistent-exact": range(1, 6),
    "selective": range(1, 6),
    "adaptive": range(1, 20),
}


def _dp(t: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        return t[..., 0] / t[..., 1] - t[..., 2] / t[..., 3]


def _med(x: np.ndarray, ok: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        return np.nanmedian(np.where(ok, x, np.nan), axis=-1)


def mass_cap(W: np.ndarray, held: np.ndarray, k: float = 2.0) -> np.ndarray:
    m = W[..., 1] + W[..., 3]
    cap = k * _med(m, held & (m > 0))[..., None]
    s = np.minimum(1.0, cap / np.maximum(m, 1e-300))
    return _dp(np.where(held[..., None], W * s[..., None], 0).sum(-2))


def cell_cap(W: np.ndarray, held: np.ndarray, k: float = 3.0) -> np.ndarray:
    C = np.stack([W[..., 0], W[..., 1] - W[..., 0], W[..., 2], W[..., 3] - W[..., 2]], -1)
    cap = np.stack([_med(C[..., c], held) for c in range(4)], -1)[..., None, :] * k
    C = np.minimum(C, cap)
    V = np.stack([C[..., 0], C[..., 0] + C[..., 1], C[..., 2], C[..., 2] + C[..., 3]], -1)
    return _dp(np.where(held[..., None], V, 0).sum(-2))


Variant = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]
OFF = {"c_decisive": None}  # the variants of rules 1-4 alone (rule 5 off)
VARIANTS: dict[str, Variant] = {
    "none": lambda W, T, h: get_aggregator("none")(T, h),
    "median": lambda W, T, h: get_aggregator("median")(T, h),
    "auditopus": lambda W, T, h: _dp(np.where(h[..., None], W, 0).sum(-2)),
    "mass-cap": lambda W, T, h: mass_cap(W, h),
    "cell-cap": lambda W, T, h: cell_cap(W, h),
    "screen-raw": lambda W, T, h: robust_estimate(T, T, h, RobustParams(**OFF)).estimate,
    "two-sided": lambda W, T, h: robust_estimate(
        W, T, h, RobustParams(one_sided=False, **OFF)
    ).estimate,
    "no-forward": lambda W, T, h: robust_estimate(
        W, T, h, RobustParams(forward=False, **OFF)
    ).estimate,
    "two-sided c=2": lambda W, T, h: robust_estimate(
        W, T, h, RobustParams(c=2.0, one_sided=False, **OFF)
    ).estimate,
    "c=2, away c=3": lambda W, T, h: robust_estimate(
        W, T, h, RobustParams(c=2.0, c_away=3.0, **OFF)
    ).estimate,
    **{
        f"robust c={c:g}": (
            lambda W, T, h, c=c: robust_estimate(W, T, h, RobustParams(c=c, **OFF)).estimate
        )
        for c in (2.0, 3.0, 4.0, 5.0)
    },
    "c=4 + decisive one-sided c=2": lambda W, T, h: robust_estimate(
        W, T, h, RobustParams(decisive_two_sided=False)
    ).estimate,
    "c=4 + decisive c=1.5": lambda W, T, h: robust_estimate(
        W, T, h, RobustParams(c_decisive=1.5)
    ).estimate,
    "robust (default)": lambda W, T, h: robust_estimate(W, T, h).estimate,
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=10)
    args = ap.parse_args()
    acc: dict[tuple[str, str, str], list[tuple[bool, float]]] = defaultdict(list)
    k0: dict[tuple[str, str], list[tuple[bool, float]]] = defaultdict(list)
    for case in CASES:
        for seed in range(args.seeds):
            setup = prepare_honest(SimConfig(case=case, seed=seed))
            base = simulate(SimConfig(case=case, seed=seed), setup=setup, keep_views=True)
            assert base.views is not None
            v = base.views
            for name, f in VARIANTS.items():
                g = float(np.median(f(v["weighted"], v["tables"], v["held"])))
                k0[(case, name)].append((abs(g) <= 0.05, abs(g - base.true_dp)))
            for attack, ks in ATTACKS.items():
                for k in ks:
                    r = simulate(
                        SimConfig(case=case, seed=seed, attackers=k, attack=attack),
                        setup=setup,
                        keep_views=True,
                    )
                    assert r.views is not None
                    v = r.views
                    for name, f in VARIANTS.items():
                        per = f(v["weighted"], v["tables"], v["held"])
                        g = float(np.median(np.concatenate([per, np.zeros(k)])))
                        acc[(attack, case, name)].append((abs(g) <= 0.05, abs(g - r.true_dp)))
        print(f"{case} done", flush=True)
    out: dict[str, object] = {"seeds": args.seeds, "variants": list(VARIANTS), "results": []}
    rows: list[dict[str, object]] = []
    for (attack, case, name), vals in acc.items():
        rows.append({"attack": attack, "case": case, "variant": name,
                     "asr": 100 * float(np.mean([a for a, _ in vals])),
                     "mae": float(np.mean([e for _, e in vals])), "runs": len(vals)})
    for (case, name), vals in k0.items():
        rows.append({"attack": "none (K=0)", "case": case, "variant": name,
                     "asr": 100 * float(np.mean([a for a, _ in vals])),
                     "mae": float(np.mean([e for _, e in vals])), "runs": len(vals)})
    out["results"] = rows
    RESULTS.mkdir(parents=True, exist_ok=True)
    write_json(RESULTS / "robust_ablation.json", out)
    by = {(str(r["attack"]), str(r["case"]), str(r["variant"])): r for r in rows}
    names = list(VARIANTS)
    for attack in ["none (K=0)", *ATTACKS]:
        print(f"\n{attack}: ASR % / MAE ({args.seeds} seeds)")
        print(f"{'variant':30s}" + "".join(f"{c[5:]:>18s}" for c in CASES))
        for n in names:
            cells = []
            for c in CASES:
                r = by[(attack, c, n)]
                cells.append(f"{float(r['asr']):6.1f} / {float(r['mae']):.3f}")
            print(f"{n:30s}" + "".join(f"{x:>18s}" for x in cells))


if __name__ == "__main__":
    main()
