"""Figure 4: properties of the consistency radius (paper Section 6.3, the experts' two questions).

Synthetic audit datasets "with balanced binary groups and randomly sampled metric values"; the
tolerance is eps ~ U(0.01, 0.3); radii are exact (KL, certified) for every dataset. Two set-ups:

* ``literal`` (the primary result: the paper's words read literally): 100 points per group,
  every metric value drawn uniformly on [0, 1], each dataset drawn independently;
* ``heterogeneous`` (our extension, not the paper's set-up): each group's values from its own
  Beta(a, b) with a, b ~ U(0.5, 5) drawn per group and dataset, so group means (and phi) vary
  widely between datasets.

* **4a** (Query 1, "can the audit margin serve as a safety proxy?"): Kendall's tau between the
  audit margin ``||phi(P)| - eps|`` and the radius over DATASETS datasets, with its p-value, for
  all datasets and separately for fair and unfair ones.
* **4b** (Query 2, "does consensus guarantee larger radii?"): pairs of datasets with the
  same eps and the same conclusion are merged (the union of their points, uniform weights); the
  radius of the merge r_merge is compared with the smaller (r_min) and larger (r_max) radius of
  the two: shares below r_min, between, above r_max. A merge can change the conclusion (two
  unfair audits with opposite signs of phi merge into a fair one); those pairs are counted and
  reported apart (their radius answers another question). Two variants, since the paper does not
  say how its datasets relate, the heterogeneous set-up has two variants: *independent* (each
  dataset its own population) and *same_population* (two audit samples of one population); in
  the literal set-up every dataset is an independent sample of one population (U[0, 1]).

Run:  .venv/bin/python experiments/radius/figure4_properties.py [--quick]
"""

from __future__ import annotations

import math
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).parent))
from _common import RESULTS, save  # noqa: E402

from fairprobe.radius import consistency_radius  # noqa: E402

warnings.filterwarnings("ignore")

PER_GROUP = 100
SEED = 2026


SETUPS = {
    "literal": "U(0,1) for every value, both groups (the paper's words)",
    "heterogeneous": "Beta(a,b), a,b~U(0.5,5) per group and dataset (our extension)",
}


def population(rng: np.random.Generator, setup: str = "heterogeneous") -> np.ndarray:
    """Beta parameters (a0, b0, a1, b1) of the two groups (literal: Beta(1, 1) = U(0, 1))."""
    return np.ones(4) if setup == "literal" else rng.uniform(0.5, 5, 4)


def dataset(rng: np.random.Generator, pop: np.ndarray | None = None,
            setup: str = "heterogeneous") -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    a0, b0, a1, b1 = population(rng, setup) if pop is None else pop
    if setup == "literal":
        v = rng.uniform(0.0, 1.0, 2 * PER_GROUP)
    else:
        v = np.concatenate([rng.beta(a0, b0, PER_GROUP), rng.beta(a1, b1, PER_GROUP)])
    return v, np.repeat([0, 1], PER_GROUP)


def main() -> None:
    quick = "--quick" in sys.argv
    results = {setup: run(setup, quick) for setup in SETUPS}
    print("\nPrimary result: the literal set-up; heterogeneous is our extension.")
    name = "figure4_properties.json" if not quick else "figure4_properties_quick.json"
    path = save(name, {"primary": "literal", **results})
    print(f"wrote {path}")


def run(setup: str, quick: bool) -> dict[str, object]:
    n_datasets, n_pairs = (60, 40) if quick else (400, 300)
    rng = np.random.default_rng(SEED)
    t0 = time.perf_counter()
    print(f"=== set-up {setup!r}: {SETUPS[setup]}")

    # ---- 4a: margin vs radius ----------------------------------------------------------------
    rows = []
    for _ in range(n_datasets):
        v, g = dataset(rng, setup=setup)
        eps = float(rng.uniform(0.01, 0.3))
        r = consistency_radius(v, g, eps)
        rows.append({"phi": r.phi, "eps": eps, "margin": abs(abs(r.phi) - eps),
                     "fair": r.fair, "radius": r.radius})
    fin = [x for x in rows if math.isfinite(x["radius"])]
    tau_all = stats.kendalltau([x["margin"] for x in fin], [x["radius"] for x in fin])
    by: dict[str, dict[str, float]] = {}
    for name, sel in (("fair", True), ("unfair", False)):
        sub = [x for x in fin if x["fair"] == sel]
        t = stats.kendalltau([x["margin"] for x in sub], [x["radius"] for x in sub])
        by[name] = {"n": len(sub), "tau": float(t.statistic), "p_value": float(t.pvalue)}
    fig4a = {"n_datasets": n_datasets, "n_finite": len(fin),
             "tau": float(tau_all.statistic), "p_value": float(tau_all.pvalue), "by": by}

    # ---- 4b: merging two datasets with the same conclusion -----------------------------------
    def merge_pairs(same_population: bool) -> list[dict[str, float]]:
        out: list[dict[str, float]] = []
        tries = 0
        while len(out) < n_pairs and tries < 20 * n_pairs:
            tries += 1
            eps = float(rng.uniform(0.01, 0.3))
            pop = population(rng, setup) if same_population else None
            (v1, g1), (v2, g2) = dataset(rng, pop, setup), dataset(rng, pop, setup)
            r1 = consistency_radius(v1, g1, eps)
            r2 = consistency_radius(v2, g2, eps)
            if r1.fair != r2.fair or r1.infinite or r2.infinite:
                continue
            rm = consistency_radius(np.concatenate([v1, v2]), np.concatenate([g1, g2]), eps)
            out.append({"eps": eps, "fair": r1.fair, "merged_fair": rm.fair,
                        "r1": r1.radius, "r2": r2.radius, "r_min": min(r1.radius, r2.radius),
                        "r_max": max(r1.radius, r2.radius), "r_merge": rm.radius})
        return out

    def shares(ps: list[dict[str, float]]) -> dict[str, float]:
        n = max(len(ps), 1)
        below = sum(p["r_merge"] < p["r_min"] for p in ps)
        above = sum(p["r_merge"] > p["r_max"] for p in ps)
        return {"n": len(ps), "below_r_min": below / n, "between": (len(ps) - below - above) / n,
                "above_r_max": above / n}

    fig4b: dict[str, dict[str, object]] = {}
    all_pairs: dict[str, list[dict[str, float]]] = {}
    variants = (("independent", False),) if setup == "literal" else (
        ("independent", False), ("same_population", True))
    for variant, same_pop in variants:
        pairs = merge_pairs(same_pop)
        same = [p for p in pairs if p["merged_fair"] == p["fair"]]
        all_pairs[variant] = pairs
        fig4b[variant] = {
            "n_pairs": len(pairs), "conclusion_changed_by_merge": len(pairs) - len(same),
            "shares": shares(same), "shares_fair": shares([p for p in same if p["fair"]]),
            "shares_unfair": shares([p for p in same if not p["fair"]]),
        }
    same = [p for p in all_pairs["independent"] if p["merged_fair"] == p["fair"]]
    secs = time.perf_counter() - t0
    paper = {"4a": "significant positive Kendall correlation between margin and radius",
             "4b": "r_merge surpasses r_min but not necessarily r_max; part between"}
    result: dict[str, object] = {
        "setup": {"per_group": PER_GROUP, "values": SETUPS[setup], "eps": "U(0.01,0.3)",
                  "seed": SEED, "method": "exact (KL)"},
        "fig4a": fig4a, "fig4b": fig4b, "paper": paper, "seconds": secs,
        "datasets": rows, "pairs": all_pairs,
    }  # fmt: skip

    print(f"Figure 4a - Kendall tau(margin, radius) over {len(fin)} datasets "
          f"({n_datasets - len(fin)} with infinite radius left out)")
    print(f"  all   : tau {fig4a['tau']:+.3f}, p {fig4a['p_value']:.2g}")
    for name, t in by.items():
        print(f"  {name:<6}: tau {t['tau']:+.3f}, p {t['p_value']:.2g} (n {t['n']})")
    print(f"  paper : {paper['4a']}")
    for variant, res in fig4b.items():
        s = res["shares"]  # type: ignore[assignment]
        print(f"Figure 4b ({variant} datasets) - {res['n_pairs']} pairs with the same conclusion "
              f"({res['conclusion_changed_by_merge']} merges changed it, left out)")
        print(f"  r_merge < r_min {s['below_r_min']:.1%}, between {s['between']:.1%}, "
              f"> r_max {s['above_r_max']:.1%}  (n {s['n']})")
        for name in ("fair", "unfair"):
            t = res[f"shares_{name}"]  # type: ignore[assignment]
            print(f"  {name:<6}: below {t['below_r_min']:.1%}, between {t['between']:.1%}, "
                  f"above {t['above_r_max']:.1%} (n {t['n']})")
    s = fig4b["independent"]["shares"]  # type: ignore[assignment]
    print(f"  paper : {paper['4b']}")
    print(f"({secs:.0f} s)")

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(13, 4))
    ax = axes[0]
    for sel, col in ((True, "tab:blue"), (False, "tab:red")):
        sub = [x for x in fin if x["fair"] == sel]
        ax.scatter([x["margin"] for x in sub], [x["radius"] for x in sub], s=8, c=col,
                   alpha=0.6, label="fair" if sel else "unfair")
    ax.set_yscale("log")
    ax.set_xlabel("audit margin ||phi(P)| - eps|")
    ax.set_ylabel("consistency radius (KL)")
    ax.set_title(f"(a) Kendall tau {fig4a['tau']:.2f}, p {fig4a['p_value']:.1g}")
    ax.legend()
    for ax, key, lab in ((axes[1], "r_min", "r_min"), (axes[2], "r_max", "r_max")):
        x = np.array([p[key] for p in same])
        y = np.array([p["r_merge"] for p in same])
        ax.scatter(x, y, s=8, alpha=0.6)
        lim = [max(min(x.min(), y.min()), 1e-6), max(x.max(), y.max())] if x.size else [1e-3, 1]
        ax.plot(lim, lim, "k--", lw=1)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(lab)
        ax.set_ylabel("r_merge")
    axes[1].set_title(f"(b) vs r_min: {s['below_r_min']:.0%} below")
    axes[2].set_title(f"(b) vs r_max: {s['above_r_max']:.0%} above")
    fig.tight_layout()
    fig.suptitle(f"set-up: {setup} ({SETUPS[setup]})", fontsize=9)
    fig.tight_layout()
    stem = "figure4_properties" if setup == "literal" else f"figure4_properties_{setup}"
    png = RESULTS / (f"{stem}.png" if not quick else f"{stem}_quick.png")
    fig.savefig(png, dpi=120)
    plt.close(fig)
    print(f"wrote {png}")
    return result


if __name__ == "__main__":
    main()
