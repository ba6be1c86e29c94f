"""The later version's operating point: 70% detection power with 127 cross-checks out of 750.

Source caveat: this operating point (94.2% proxy, 127 of 750 checks) is from a later version of
the two-source paper that is NOT in ../shared/papers/ (two-source-audits.md there reports a 91%
proxy and t = 100); it is reproduced as stated, not checked against a text.

That version reports a name proxy of 94.2% accuracy. With the bundled name lists the rule is
right for 77.5% of Adult (see docs/twosource.md), so the query pool here is a seeded subset of the
Adult test split on which the name rule's accuracy is 94.2%: every record whose first name the rule
maps deterministically to the right sex, plus a uniform share of the others.

Formula: the share of checked answers flipped at which p_manip(127, 0.942) = 70%.
Measured: 500 audits per server rate (budget 750, t_fraud = 127; the consistency detector with
both nulls and the conditional detector, each at 5%) against
platform servers fairwashing by positive discrimination; the flip share at which the measured power
crosses 70% is interpolated.

Run: ``.venv/bin/python experiments/twosource/operating_point.py`` (about 3 minutes).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
from scipy import optimize

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import RowReplay, a_decisions, b_decisions, platform_sources, pool, write  # noqa: E402

from fairprobe.access.cache import ResponseCache  # noqa: E402
from fairprobe.twosource import make_proxy, run_two_source_audit  # noqa: E402
from fairprobe.twosource.theory import n_max, p_manip  # noqa: E402

TARGET_ACC = 0.942
BUDGET, CHECKS = 750, 127
GAMMAS = (0.0, 0.1, 0.2, 0.25, 0.3, 0.4, 0.5)
REPS = 500


def main() -> None:
    t0 = time.time()
    full = pool()
    name = make_proxy("name")
    sex = full["sex"].to_numpy(dtype=object)
    pf = name.probabilities(full)[:, 0]
    p_right = np.where(sex == "Female", pf, 1 - pf)
    hat = p_right == 1.0
    others = np.flatnonzero(~hat)
    a_o = p_right[others].mean()
    k = int(round(hat.sum() * (1 - TARGET_ACC) / (TARGET_ACC - a_o)))
    rng = np.random.default_rng(0)
    keep = np.sort(np.concatenate([np.flatnonzero(hat), rng.choice(others, k, replace=False)]))
    P = full.iloc[keep].reset_index(drop=True)
    acc = name.accuracy(P, P["sex"].to_numpy(dtype=object))
    g70 = float(optimize.brentq(lambda g: float(p_manip(CHECKS, acc.p_phi, g)) - 0.70, 0, 1))
    g70_paper = float(optimize.brentq(lambda g: float(p_manip(CHECKS, TARGET_ACC, g)) - 0.70, 0, 1))
    print("source caveat: 94.2% / 127 of 750 are from a later paper version not in ../shared/papers/")
    print(f"pool: {len(P)} records, name-proxy p_phi {acc.p_phi:.4f} (target {TARGET_ACC}), "
          f"p_agree {acc.p_agree:.4f}")  # fmt: skip
    print(f"formula: n_max(127, 0.942) = {n_max(CHECKS, TARGET_ACC)}, 70% power needs "
          f"{g70_paper:.4f} of the checked answers flipped")  # fmt: skip
    cache = ResponseCache(":memory:")
    rows = []
    honest = None
    for g in GAMMAS:
        with platform_sources(cache, "none" if g == 0 else "positive", g, warm=P) as (api, ui):
            ya, yb = a_decisions(api, P), b_decisions(ui, P)
        honest = ya if honest is None else honest
        ra, rb = RowReplay(ya), RowReplay(yb)
        runs = [
            run_two_source_audit(ra, rb, P, name, budget=BUDGET, t_fraud=CHECKS, seed=s,
                                 detectors=("consistency", "conditional"), early_stop=False,
                                 batch_size=CHECKS, proxy_accuracy=acc, alpha=0.10)
            for s in range(REPS)
        ]  # fmt: skip
        n_inc = np.array([r.consistency.details["n_inconsistent"] for r in runs])  # type: ignore[union-attr]
        cond = float(np.mean([r.outcome("conditional").detected for r in runs]))  # type: ignore[union-attr]
        flip = float(np.mean(ya != honest))
        row = {"gamma": g, "flip_share": flip, "conditional": cond}
        for null, p in (("agree", acc.p_agree), ("accuracy", acc.p_phi)):
            nm = n_max(CHECKS, p)
            row[null] = {"n_max": nm, "measured": float((n_inc > nm).mean()),
                         "lemma2": float(p_manip(CHECKS, p, flip))}  # fmt: skip
        rows.append(row)
        print(f"gamma {g:4.2f}: flipped {flip:6.2%}  measured power {row['agree']['measured']:.3f}"
              f" [agree null]  {row['accuracy']['measured']:.3f} [paper null]  {cond:.3f} [conditional]"
              f"  Lemma 2 "
              f"{row['accuracy']['lemma2']:.3f}  ({time.time() - t0:.0f}s)", flush=True)  # fmt: skip
    cross = {}
    for null in ("agree", "accuracy"):
        xs = np.array([r["flip_share"] for r in rows])
        ys = np.array([r[null]["measured"] for r in rows])
        i = np.flatnonzero(ys >= 0.70)
        cross[null] = None if not i.size else float(np.interp(0.70, ys[: i[0] + 1], xs[: i[0] + 1]))
    print(
        f"\n70% power reached at a flip share of {cross['accuracy']} (paper null) and "
        f"{cross['agree']} (agree null); Lemma 2 says {g70:.4f} at this pool's p_phi"
    )
    write("operating_point.json", {
        "experiment": "later version's operating point: 70% power, 127 checks of 750",
        "pool_size": len(P), "proxy": acc.to_dict(), "budget": BUDGET, "checks": CHECKS,
        "formula_flip_share_for_70": g70_paper, "formula_flip_share_for_70_pool": g70,
        "measured_flip_share_for_70": cross, "rows": rows, "reps": REPS,
    })  # fmt: skip


if __name__ == "__main__":
    main()
