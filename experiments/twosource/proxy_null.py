"""False alarms and power of the two-source audit for the name and the learned proxy.

The detectors' honest rates are the chances that B's own inference misses the true group. The
learned proxy (a logistic regression of sex on the first name, fitted on the pool) is not B's
rule, so its audits take the name rule (the bundled platform's, Section 5.1) as ``inference``;
the rows ``learned, null from the proxy`` repeat the audit with the learned proxy's own
probabilities as the null (``inference=proxy``), the construction this replaces.

In process, not over HTTP (stated in ``docs/twosource.md``): the bundled platform's own logic
(:class:`fairprobe.platform.core.Platform` with the default model, the server's code path) is
called through :class:`~fairprobe.access.local.LocalModelBackend`, its answers on the whole pool
precomputed once per configuration and looked up per record (the answers are a function of the
record, so this is the server's answers exactly). 200 audits per cell; budgets 500-4,000;
platforms ``--fairwash none`` and positive fairwashing at the smallest rate bringing the DI
through A to the 80% line (Lemma 1, corrected).

    python experiments/twosource/proxy_null.py [--reps 200] [--seed 0]

Writes experiments/results/twosource/proxy_null.json; exits 1 if a false-alarm rate of a
shipped construction exceeds alpha by more than two standard errors.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fairprobe.access.blackbox import BlackBox
from fairprobe.access.local import LocalModelBackend
from fairprobe.datasets.adult import load_adult
from fairprobe.platform.core import USER_FEATURES, Platform
from fairprobe.platform.fairwash import FairwashConfig
from fairprobe.platform.model import AUDIT_FEATURES, PlatformModel
from fairprobe.twosource import LearnedProxy, NameProxy, run_two_source_audit
from fairprobe.twosource.theory import gamma_max

OUT = Path(__file__).resolve().parents[1] / "results" / "twosource" / "proxy_null.json"
BUDGETS = (500, 1000, 2000, 4000)
ALPHA = 0.05


def lookup_backend(frame: pd.DataFrame, decisions: np.ndarray, name: str) -> BlackBox:
    """A backend answering each record with the platform's precomputed answer on it."""
    table = dict(zip(map(tuple, frame.astype(object).to_numpy()), decisions.tolist(),
                     strict=True))  # identical records get identical answers on the platform

    def answer(df: pd.DataFrame) -> np.ndarray:
        return np.array([table[tuple(r)] for r in df.astype(object).to_numpy()], dtype=float)

    return BlackBox(LocalModelBackend(answer, name=name))


def sources(pool: pd.DataFrame, model: PlatformModel, mode: str, gamma: float
            ) -> tuple[BlackBox, BlackBox]:
    plat = Platform(model=model, fairwash=FairwashConfig(mode, gamma, 0.5, seed=1), seed=1)
    a_frame, b_frame = pool[list(AUDIT_FEATURES)], pool[list(USER_FEATURES)]
    da = plat.audit_predict(a_frame.to_dict("records")).decisions
    db = plat.user_predict(b_frame.to_dict("records")).decisions
    return (lookup_backend(a_frame, da, f"A-{mode}-{gamma}"),
            lookup_backend(b_frame, db, "B"))


def rate(k: int, n: int) -> dict[str, float]:
    p = k / n
    return {"rate": p, "se": math.sqrt(max(p * (1 - p), 1e-12) / n), "n": n}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    t0 = time.time()
    pool = load_adult("test")
    groups = pool["sex"].astype(str).to_numpy(object)
    model = PlatformModel.default()
    honest = Platform(model=model, fairwash=FairwashConfig("none", 0.0, 0.5, seed=1), seed=1)
    da = honest.audit_predict(pool[list(AUDIT_FEATURES)].to_dict("records")).decisions
    female = groups == "Female"
    r_f, r_m = float(da[female].mean()), float(da[~female].mean())
    g_fw = float(gamma_max(r_f, r_m, 0.0, 0.8))
    learned = LearnedProxy(features=("first_name",), seed=0).fit(pool, groups)
    name = NameProxy()
    acc = {"name": name.accuracy(pool, groups), "learned": learned.accuracy(pool, groups)}
    setups = [("name", name, None), ("learned", learned, name),
              ("learned, null from the proxy", learned, learned)]
    rows: list[dict[str, Any]] = []
    for mode, gamma in (("none", 0.0), ("positive", g_fw)):
        api, ui = sources(pool, model, mode, gamma)
        for label, px, rule in setups:
            if mode != "none" and rule is learned:
                continue  # the replaced construction: only its false alarms are at stake
            for budget in BUDGETS:
                counts = {"any": 0, "conditional": 0, "consistency": 0, "di": 0}
                for rep in range(args.reps):
                    r = run_two_source_audit(
                        api, ui, pool, px, budget=budget, seed=args.seed * 100_000 + rep,
                        alpha=ALPHA, proxy_accuracy=acc["learned" if px is learned else "name"],
                        inference=rule,
                    )  # fmt: skip
                    counts["any"] += r.verdict == "manipulated"
                    for d in r.detected_by:
                        counts[d] += 1
                row = {"platform": mode, "gamma": gamma, "proxy": label, "budget": budget,
                       **{k: rate(v, args.reps) for k, v in counts.items()}}
                rows.append(row)
                print(f"{mode:>8} {label:<30} t={budget:>5}: manipulated "
                      f"{row['any']['rate']:.3f} +- {row['any']['se']:.3f} (conditional "
                      f"{row['conditional']['rate']:.3f}, consistency "
                      f"{row['consistency']['rate']:.3f}, di {row['di']['rate']:.3f})",
                      flush=True)
    bad = [r for r in rows if r["platform"] == "none" and r["proxy"] != "learned, null from the proxy"
           and r["any"]["rate"] > ALPHA + 2 * r["any"]["se"]]
    OUT.write_text(json.dumps({
        "experiment": "two-source false alarms (honest platform) and power (fairwashing at the "
                      "80% line) for the name and the learned proxy",
        "access": "in process: the platform's own logic, answers precomputed per record",
        "alpha": ALPHA, "reps": args.reps, "seed": args.seed, "gamma_fairwash": g_fw,
        "rates_honest_a": [r_f, r_m],
        "p_phi": {k: v.p_phi for k, v in acc.items()},
        "rows": rows, "seconds": round(time.time() - t0, 1),
    }, indent=1) + "\n")
    print(f"wrote {OUT} in {time.time() - t0:.0f}s")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
