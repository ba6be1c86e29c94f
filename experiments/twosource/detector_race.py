"""Which detector catches which fairwashing strategy first (beyond the paper).

Three strategies of the platform server — positive discrimination (flip women's negatives),
negative discrimination (flip men's positives) and mixed (half of each) — each at the smallest rate
that makes the DI through A pass the 80% rule on the pool (Lemma 1, corrected, from the honest
rates; one server process per strategy), plus the honest server. For budgets t in
{100, 200, 400, 800, 1600} (beta = 0.5: t/4 checks), 200 audits per point with the name proxy;
each detector decides at alpha = 5% on the same answers:
``consistency`` (Lemma 2 with the audit's valid null), ``consistency-paper`` (Lemma 2 with the
paper's p_phi: its false alarms exceed 5%, see docs), ``conditional`` and ``di``.
"First" is the smallest budget at which a detector's power reaches 80%.

Run: ``.venv/bin/python experiments/twosource/detector_race.py`` (about 10 minutes).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import RowReplay, a_decisions, b_decisions, platform_sources, pool, write  # noqa: E402

from fairprobe.access.cache import ResponseCache  # noqa: E402
from fairprobe.twosource import make_proxy, run_two_source_audit  # noqa: E402
from fairprobe.twosource.theory import gamma_max, n_max  # noqa: E402

BUDGETS = (100, 200, 400, 800, 1600)
REPS = 200
ALPHA = 0.05
DETS = ("consistency", "conditional", "di")
RATE_F, RATE_M = 0.1205, 0.4686  # honest platform on the pool (figure3.json)


def main() -> None:
    t0 = time.time()
    P = pool()
    proxy = make_proxy("name")
    acc = proxy.accuracy(P, P["sex"].to_numpy(dtype=object))
    strategies = {"none": 0.0}
    for s in ("positive", "negative", "mixed"):
        strategies[s] = float(np.ceil(gamma_max(RATE_F, RATE_M, 0.0, 0.8, s, 0.5) * 100) / 100)
    cache = ResponseCache(":memory:")
    table = []
    for strat, g in strategies.items():
        with platform_sources(cache, strat, g, 0.5, warm=P) as (api, ui):
            ra, rb = RowReplay(a_decisions(api, P)), RowReplay(b_decisions(ui, P))
        f = (P["sex"] == "Female").to_numpy()
        di_pool = float(ra.decisions[f].mean() / ra.decisions[~f].mean())
        for t in BUDGETS:
            hits = {d: 0 for d in (*DETS, "consistency-paper")}
            for s in range(REPS):
                r = run_two_source_audit(
                    ra, rb, P, proxy, budget=t, beta=0.5, seed=s, alpha=ALPHA * len(DETS),
                    detectors=DETS, early_stop=False, proxy_accuracy=acc, batch_size=t,
                )  # fmt: skip
                for d in DETS:
                    hits[d] += bool(r.outcome(d).detected)  # type: ignore[union-attr]
                c = r.consistency.details  # type: ignore[union-attr]
                hits["consistency-paper"] += c["n_inconsistent"] > n_max(
                    c["n_checked"], acc.p_phi, ALPHA
                )
            row = {"strategy": strat, "gamma": g, "di_a_pool": di_pool, "budget": t,
                   "checks": t // 4, **{d: h / REPS for d, h in hits.items()}}  # fmt: skip
            table.append(row)
            print(f"{strat:8s} gamma {g:.2f} (DI_A {di_pool:.3f}) t {t:5d}: "
                  + "  ".join(f"{d} {row[d]:.3f}" for d in hits)
                  + f"  ({time.time() - t0:.0f}s)", flush=True)  # fmt: skip
    first = {}
    for strat in strategies:
        if strat == "none":
            continue
        first[strat] = {}
        for d in (*DETS, "consistency-paper"):
            ok = [r["budget"] for r in table if r["strategy"] == strat and r[d] >= 0.8]
            first[strat][d] = min(ok) if ok else None
    print("\nSmallest budget with 80% power (None: not within 1,600):")
    for strat, v in first.items():
        print(f"  {strat:8s}: " + ", ".join(f"{d} {b}" for d, b in v.items()))
    write("detector_race.json", {"experiment": "which detector catches which strategy first",
                                 "reps": REPS, "alpha": ALPHA, "proxy": acc.to_dict(),
                                 "rows": table, "first_budget_80": first})  # fmt: skip


if __name__ == "__main__":
    main()
