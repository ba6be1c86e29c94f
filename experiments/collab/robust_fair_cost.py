"""What rule 5 of ``robust`` costs audits of *fair* models, and a liar who accuses one.

    .venv/bin/python experiments/collab/robust_fair_cost.py [--seeds 40] [--liar-seeds 10]

Rule 5 (the decisive screening) can only turn a "fair" verdict into "unfair", so its price falls
on audits of fair models, which the paper's six cases do not contain. Two fair populations are
built here from the Bias in Bios teacher case (group sizes of ``bios-near-fair``): ``fair-0``
(both groups at rate 0.080, DP = 0) and ``fair-edge`` (rates 0.065 / 0.098, DP = -0.033, inside
the band 0.05). They are added to :data:`fairprobe.datasets.populations.POPULATIONS` for this
process only. Measured, with N = 20 honest auditors:

* no attacker (``--seeds`` runs per case): the share of audits that call the fair model fair;
* the ``away`` liar (K = 1..5, ``--liar-seeds`` runs per K), registered here through
  ``register_attack``: the calibrated ``consistent`` liar, but aiming the pooled estimate at
  DP = -0.15 (to make a fair model look unfair) instead of 0; the share of audits it fails to
  fool (the model is still called fair).

Variants (same final views aggregated by each): ``median``, ``auditopus``, ``robust`` without
rule 5 (``c_decisive=None``; c = 4 and c = 2) and the default ``robust``. Writes
``experiments/results/collab/robust_fair_cost.json`` and prints "% called fair / MAE".
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

from fairprobe.collab.attacker import AttackContext, register_attack  # noqa: E402
from fairprobe.collab.baselines import get_aggregator  # noqa: E402
from fairprobe.collab.liars import ConsistentAttack, LiarPlan  # noqa: E402
from fairprobe.collab.robust import RobustParams, robust_estimate  # noqa: E402
from fairprobe.collab.simulate import SimConfig, prepare_honest, simulate  # noqa: E402
from fairprobe.datasets.populations import POPULATIONS, Population  # noqa: E402
from fairprobe.report.jsonio import write_json  # noqa: E402

TARGET = -0.15
FAIR = {
    "fair-0": Population("fair-0", "bios", "teacher sizes, equal rates", 71_261, 63_018,
                         0.080, 0.080, 0.0),
    "fair-edge": Population("fair-edge", "bios", "teacher sizes, DP -0.033", 71_261, 63_018,
                            0.065, 0.098, -0.033),
}


@register_attack
class AwayAttack(ConsistentAttack):
    """The ``consistent`` liar aiming at DP = ``TARGET`` (equal departures of both rates)."""

    name = "away"

    def _solve(self, ctx: AttackContext) -> LiarPlan:
        h = np.asarray(ctx.population.as_tuple(), dtype=np.float64)
        m = float(ctx.attackers * ctx.n * ctx.rounds)
        pi = h[1] / (h[1] + h[3])
        ma, mb = m * pi, m * (1 - pi)
        ra, rb = h[0] / h[1], h[2] / h[3]
        x = (ra - rb - TARGET) / 2
        qa = min(max(((ra - x) * (h[1] + ma) - h[0]) / ma, 0.0), 1.0)
        qb = min(max(((rb + x) * (h[3] + mb) - h[2]) / mb, 0.0), 1.0)
        a, b = h[0] + ma * qa, h[2] + mb * qb
        return LiarPlan(float(pi), qa, qb, int(m), float(a / (h[1] + ma) - b / (h[3] + mb)))


def _dp(t: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        return t[..., 0] / t[..., 1] - t[..., 2] / t[..., 3]


Variant = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]
VARIANTS: dict[str, Variant] = {
    "median": lambda W, T, h: get_aggregator("median")(T, h),
    "auditopus": lambda W, T, h: _dp(np.where(h[..., None], W, 0).sum(-2)),
    "robust c=4, no rule 5": lambda W, T, h: robust_estimate(
        W, T, h, RobustParams(c_decisive=None)
    ).estimate,
    "robust c=2, no rule 5": lambda W, T, h: robust_estimate(
        W, T, h, RobustParams(c=2.0, c_decisive=None)
    ).estimate,
    "robust (default)": lambda W, T, h: robust_estimate(W, T, h).estimate,
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=40)
    ap.add_argument("--liar-seeds", type=int, default=10)
    args = ap.parse_args()
    POPULATIONS.update(FAIR)
    acc: dict[tuple[str, str, str], list[tuple[bool, float]]] = defaultdict(list)
    for case in FAIR:
        for seed in range(max(args.seeds, args.liar_seeds)):
            setup = prepare_honest(SimConfig(case=case, seed=seed))
            ks = [0] if seed < args.seeds else []
            ks += list(range(1, 6)) if seed < args.liar_seeds else []
            for k in ks:
                cfg = SimConfig(case=case, seed=seed, attackers=k, attack="away")
                r = simulate(cfg, setup=setup, keep_views=True)
                assert r.views is not None
                v = r.views
                for name, f in VARIANTS.items():
                    per = f(v["weighted"], v["tables"], v["held"])
                    g = float(np.median(np.concatenate([per, np.zeros(k)])))
                    key = ("none (K=0)" if k == 0 else "away (K=1..5)", case, name)
                    acc[key].append((abs(g) <= 0.05, abs(g - r.true_dp)))
        print(f"{case} done", flush=True)
    rows = [
        {"attack": a, "case": c, "variant": n, "called_fair": 100 * float(np.mean([x for x, _ in v])),
         "mae": float(np.mean([e for _, e in v])), "runs": len(v)}
        for (a, c, n), v in acc.items()
    ]
    RESULTS.mkdir(parents=True, exist_ok=True)
    write_json(RESULTS / "robust_fair_cost.json",
               {"seeds": args.seeds, "liar_seeds": args.liar_seeds, "target": TARGET,
                "populations": {k: {"true_dp": p.true_dp} for k, p in FAIR.items()},
                "results": rows})
    by = {(str(r["attack"]), str(r["case"]), str(r["variant"])): r for r in rows}
    for attack in ("none (K=0)", "away (K=1..5)"):
        print(f"\n{attack}: % called fair / MAE")
        print(f"{'variant':24s}" + "".join(f"{c:>16s}" for c in FAIR))
        for n in VARIANTS:
            cells = [f"{float(by[(attack, c, n)]['called_fair']):5.1f} / "
                     f"{float(by[(attack, c, n)]['mae']):.3f}" for c in FAIR]
            print(f"{n:24s}" + "".join(f"{x:>16s}" for x in cells))


if __name__ == "__main__":
    main()
