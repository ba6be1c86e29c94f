"""Example 3's proxy: a probabilistic mapping from one observable to the sensitive attribute.

The paper's Example 3 (YouTube monetisation vs Reddit's controversy rate per topic) links the two
sources through a table estimated on an *external* source: each topic maps to "not monetised" with
the topic's controversy rate. The platform here has no topics; the analogue is a profile field the
auditor observes for every record, mapped to the sensitive attribute with rates taken from another
source: ``occupation -> {Female: r, Male: 1 - r}`` with ``r`` the share of women in that occupation
on the Adult *train* split (the audit pool is the test split; unseen occupations use the overall
rate). This is the generic ``MappingProxy`` (``--proxy mapping:PATH.json``), a weak proxy (the
paper: "only partly verified"), next to the name proxy of Section 5.

For each server (honest; positive discrimination at the server's gamma in GAMMAS) REPS audits
(budget 800, beta 0.5 -> 200 checks, all three detectors, family-wise 5%, the valid null) replay
the server's answers (fetched once through BlackBox + cache). Measured: the proxy's accuracy, the
DI through B + proxy against the DI through A, and each detector's detection / false-alarm rate,
for both proxies.

Run: ``.venv/bin/python experiments/twosource/example3_mapping.py [--quick]``.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import RESULTS, RowReplay, a_decisions, b_decisions, platform_sources, pool, write  # noqa: E402

from fairprobe.access.cache import ResponseCache  # noqa: E402
from fairprobe.datasets.adult import load_adult  # noqa: E402
from fairprobe.twosource import make_proxy, run_two_source_audit  # noqa: E402
from fairprobe.twosource.proxies import MappingProxy  # noqa: E402

GAMMAS = (0.0, 0.3, 0.6)
BUDGET = 800
DETECTORS = ("conditional", "consistency", "di")


def mapping_spec() -> dict[str, Any]:
    tr = load_adult("train")
    occ = tr["occupation"].fillna("missing").astype(str)
    fem = tr["sex"].astype(str) == "Female"
    rate = fem.groupby(occ).mean()
    overall = float(fem.mean())
    table = {k: {"Female": float(v), "Male": float(1 - v)} for k, v in rate.items()}
    return {"column": "occupation", "table": table,
            "default": {"Female": overall, "Male": 1 - overall}}


def main() -> None:
    quick = "--quick" in sys.argv
    reps = 40 if quick else 200
    t0 = time.time()
    P = pool().copy()
    P["occupation"] = P["occupation"].fillna("missing").astype(str)
    sex = P["sex"].to_numpy(dtype=object)
    spec = mapping_spec()
    spec_path = RESULTS / "example3_occupation_mapping.json"
    spec_path.write_text(json.dumps(spec, indent=1) + "\n")
    proxies = {"mapping(occupation)": MappingProxy.from_json(spec_path), "name": make_proxy("name")}
    accs = {k: px.accuracy(P, sex) for k, px in proxies.items()}
    for k, a in accs.items():
        print(f"proxy {k}: p_phi {a.p_phi:.4f}, p_agree {a.p_agree:.4f}")
    cache = ResponseCache(":memory:")
    rows = []
    for g in GAMMAS:
        mode = "none" if g == 0 else "positive"
        with platform_sources(cache, mode, g, warm=P) as (api, ui):
            ra, rb = RowReplay(a_decisions(api, P)), RowReplay(b_decisions(ui, P))
            # the replay gives the server's own answers: one audit through the live sources
            live = run_two_source_audit(api, ui, P, proxies["mapping(occupation)"], budget=400,
                                        seed=0, batch_size=50).to_dict()  # fmt: skip
            rep = run_two_source_audit(ra, rb, P, proxies["mapping(occupation)"], budget=400,
                                       seed=0, batch_size=50).to_dict()  # fmt: skip
            live.pop("queries"), rep.pop("queries")
            assert live == rep, "replay differs from the live server"
        for name, px in proxies.items():
            det = {d: np.zeros(reps, dtype=bool) for d in (*DETECTORS, "any")}
            di_a, di_b = np.empty(reps), np.full(reps, np.nan)
            for s in range(reps):
                r = run_two_source_audit(ra, rb, P, px, budget=BUDGET, beta=0.5, seed=s,
                                         detectors=DETECTORS, early_stop=False, batch_size=400,
                                         proxy_accuracy=accs[name])  # fmt: skip
                for o in r.detectors:
                    det[o.detector][s] = o.detected
                det["any"][s] = r.verdict == "manipulated"
                di_a[s] = r.di_a.estimate
                if r.di_b is not None:
                    di_b[s] = r.di_b.estimate
            row = {"server_gamma": g, "proxy": name, "reps": reps,
                   "di_a_mean": float(np.mean(di_a)), "di_b_proxy_mean": float(np.nanmean(di_b)),
                   "rates": {d: float(v.mean()) for d, v in det.items()},
                   "se": {d: float(v.std(ddof=1) / np.sqrt(reps)) for d, v in det.items()}}  # fmt: skip
            rows.append(row)
            print(f"  gamma {g:.1f} {name:<20}: DI_A {row['di_a_mean']:.3f}, DI_B+proxy "
                  f"{row['di_b_proxy_mean']:.3f} | " + ", ".join(
                      f"{d} {row['rates'][d]:.3f}" for d in (*DETECTORS, "any")), flush=True)
    out = {"experiment": "Example 3: mapping proxy (occupation -> sex, rates from Adult train)",
           "budget": BUDGET, "beta": 0.5, "detectors": DETECTORS, "mapping": spec,
           "proxies": {k: a.to_dict() for k, a in accs.items()}, "rows": rows,
           "seconds": time.time() - t0}  # fmt: skip
    write("example3_mapping_quick.json" if quick else "example3_mapping.json", out)
    print(f"({time.time() - t0:.0f} s) wrote {RESULTS}")


if __name__ == "__main__":
    main()
