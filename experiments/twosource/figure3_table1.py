"""Figure 3 and Table 1 (Appendix C) of the two-source paper, against the platform server.

Figure 3: the disparate impact through A as the server's fairwashing rate gamma grows (positive,
negative and mixed discrimination; one server process per rate, the whole Adult test pool sent
once), against the DI through B with the name, perfect and random proxies (B is never fairwashed:
flat lines). The smallest gamma that makes A look fair is read off the curve (interpolated) and
compared with Lemma 1 (corrected, see docs/twosource.md).

Table 1: audits of the honest platform with a budget of 1,500 queries per source, averaged over
200 seeds: DI through A, through B with the random, name and perfect (true sex) proxies, on the
whole pool D and on D-hat (records whose first name the rule maps, deterministically, to the true
sex: the proxy is perfect there).

Run: ``.venv/bin/python experiments/twosource/figure3_table1.py`` (about 8 minutes).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import RESULTS, a_decisions, b_decisions, platform_sources, pool, write  # noqa: E402

from fairprobe.access.cache import ResponseCache  # noqa: E402
from fairprobe.stats.counts import CountsVector  # noqa: E402
from fairprobe.stats.metrics import disparate_impact_from_counts  # noqa: E402
from fairprobe.twosource import make_proxy, stratified_sample  # noqa: E402
from fairprobe.twosource.theory import gamma_max  # noqa: E402

GRIDS = {
    "positive": np.round(np.arange(0.0, 0.601, 0.05), 3),
    "negative": np.round(np.arange(0.0, 1.001, 0.1), 3),
    "mixed": np.round(np.arange(0.0, 1.001, 0.1), 3),
}
MIX = 0.5
BUDGET = 1500
SEEDS = 200


def di(y: np.ndarray, female: np.ndarray) -> float:
    return float(y[female].mean() / y[~female].mean())


def soft_di(y: np.ndarray, p_female: np.ndarray) -> float:
    """Expected DI through B when the group of each answer is a proxy draw (large-pool limit)."""
    return float((p_female @ y / p_female.sum()) / ((1 - p_female) @ y / (1 - p_female).sum()))


def crossing(gs: np.ndarray, dis: np.ndarray, th: float = 0.8) -> float | None:
    above = np.flatnonzero(dis >= th)
    if not above.size:
        return None
    k = int(above[0])
    if k == 0:
        return 0.0
    g0, g1, d0, d1 = gs[k - 1], gs[k], dis[k - 1], dis[k]
    return float(g0 + (th - d0) * (g1 - g0) / (d1 - d0))


def main() -> None:
    t0 = time.time()
    P = pool()
    female = (P["sex"] == "Female").to_numpy()
    cache = ResponseCache(":memory:")
    curves: dict[str, list[dict]] = {}
    yb = honest = None
    for mode, grid in GRIDS.items():
        curves[mode] = []
        for g in grid:
            m = "none" if g == 0 else mode
            if g == 0 and honest is not None:
                ya = honest
            else:
                with platform_sources(cache, m, float(g), MIX, warm=P) as (api, ui):
                    ya = a_decisions(api, P)
                    if yb is None:
                        yb = b_decisions(ui, P)
            if g == 0:
                honest = ya
            # the 1,500-query audit sample (seed 0) and its interval
            idx = stratified_sample(P["sex"].to_numpy(), BUDGET, np.random.default_rng(0))
            fa, da = female[idx], ya[idx]
            c = CountsVector(int(da[fa].sum()), int(fa.sum()), int(da[~fa].sum()), int((~fa).sum()))
            res = disparate_impact_from_counts(c)
            lo, hi = res.interval
            curves[mode].append({
                "gamma": float(g), "di_a_pool": di(ya, female), "di_a_sample": res.estimate,
                "di_a_sample_ci": [lo, hi], "flip_share": float(np.mean(ya != honest)),
            })  # fmt: skip
            print(f"{mode:8s} gamma {g:4.2f}: DI_A pool {di(ya, female):.3f}  sample "
                  f"{res.estimate:.3f} [{lo:.3f}, {hi:.3f}]  ({time.time() - t0:.0f}s)",
                  flush=True)  # fmt: skip
    assert yb is not None and honest is not None
    name = make_proxy("name")
    pf = name.probabilities(P)[:, 0]
    di_b = {
        "name": soft_di(yb, pf),
        "perfect": di(yb, female),
        "random": soft_di(yb, np.full(len(P), 0.5)),
    }
    r_f, r_m = honest[female].mean(), honest[~female].mean()
    summary = {}
    for mode in GRIDS:
        gs = np.array([r["gamma"] for r in curves[mode]])
        emp = crossing(gs, np.array([r["di_a_pool"] for r in curves[mode]]))
        emp_sample = crossing(gs, np.array([r["di_a_sample"] for r in curves[mode]]))
        lemma = gamma_max(r_f, r_m, 0.0, 0.8, mode, MIX)
        summary[mode] = {"gamma_min_pool": emp, "gamma_min_sample": emp_sample,
                         "lemma1_corrected": lemma}  # fmt: skip
    fig3 = {
        "experiment": "Figure 3: DI through A vs fairwashing rate, against DI through B",
        "pool": "Adult test split, 16,281 records, seeded first names",
        "honest_rates": {"female": float(r_f), "male": float(r_m), "di": float(r_f / r_m)},
        "di_b": di_b,
        "curves": curves,
        "smallest_gamma_fair": summary,
        "paper": {"smallest_gamma_positive": 0.12, "di_honest": 0.55},
    }
    write("figure3.json", fig3)
    _plot(curves, di_b, summary)
    print("\nFigure 3 - smallest gamma making A look fair (DI_A >= 0.8); paper: about 12% "
          "(positive)")  # fmt: skip
    for mode, s in summary.items():
        print(
            f"  {mode:8s}: pool curve {s['gamma_min_pool']}, 1,500-query sample "
            f"{s['gamma_min_sample']}, Lemma 1 (corrected, eps=0) {s['lemma1_corrected']:.4f}"
        )
    print(
        f"  DI through B: name proxy {di_b['name']:.3f}, perfect {di_b['perfect']:.3f}, "
        f"random {di_b['random']:.3f}; honest DI through A {r_f / r_m:.3f} (paper 0.55)"
    )

    # ---- Table 1 ------------------------------------------------------------------------------
    sex = P["sex"].to_numpy(dtype=object)
    hat = (pf == 1.0) & female | (pf == 0.0) & ~female  # rule deterministic and right
    rnd = make_proxy("random")
    rows: dict[str, list[float]] = {k: [] for k in
        ("A|D", "B+random|D", "B+name|D", "B+perfect|D", "A|Dhat", "B+name|Dhat")}  # fmt: skip
    for s in range(SEEDS):
        for tag, mask in (("D", np.ones(len(P), bool)), ("Dhat", hat)):
            sub = np.flatnonzero(mask)
            rng = np.random.default_rng([s, 1 if tag == "D" else 2])
            ia = sub[stratified_sample(sex[sub], BUDGET, rng)]
            ib = sub[stratified_sample(sex[sub], BUDGET, rng)]
            rows[f"A|{tag}"].append(di(honest[ia], female[ia]))
            gname = name.predict_groups(P.iloc[ib], seed=s) == "Female"
            rows[f"B+name|{tag}"].append(di(yb[ib], gname))
            if tag == "D":
                grnd = rnd.predict_groups(P.iloc[ib], seed=s) == "Female"
                rows["B+random|D"].append(di(yb[ib], grnd))
                rows["B+perfect|D"].append(di(yb[ib], female[ib]))
    acc_d = name.accuracy(P, sex).p_phi
    acc_hat = name.accuracy(P[hat], sex[hat]).p_phi
    paper = {"A|D": 0.52, "B+random|D": 0.99, "B+name|D": 0.56, "A|Dhat": 0.55,
             "B+name|Dhat": 0.55, "B+perfect|D": None}  # fmt: skip
    eps_proxy = {"A|D": None, "B+random|D": 0.5, "B+name|D": 1 - acc_d, "B+perfect|D": 0.0,
                 "A|Dhat": None, "B+name|Dhat": 1 - acc_hat}  # fmt: skip
    table = []
    print(
        f"\nTable 1 - budget {BUDGET}, mean (sd) over {SEEDS} seeds; eps(DI) = |DI - DI_A| / DI_A"
    )
    print("  row            DI      sd     eps(DI)  Z  eps(proxy)  paper DI")
    for k, v in rows.items():
        ref = np.mean(rows["A|Dhat" if k.endswith("Dhat") else "A|D"])
        m = float(np.mean(v))
        row = {"row": k, "di_mean": m, "di_sd": float(np.std(v)), "eps_di": abs(m - ref) / ref,
               "Z": int(m >= 0.8), "eps_proxy": eps_proxy[k], "paper_di": paper[k]}  # fmt: skip
        table.append(row)
        ep = "-" if eps_proxy[k] is None else f"{eps_proxy[k]:.1%}"
        print(
            f"  {k:13s} {m:6.3f}  {row['di_sd']:.3f}  {row['eps_di']:7.1%}  {row['Z']}  "
            f"{ep:>9s}  {paper[k]}"
        )
    write("table1.json", {"experiment": "Table 1 of Appendix C", "budget": BUDGET,
                          "seeds": SEEDS, "dhat_size": int(hat.sum()), "rows": table})  # fmt: skip
    print(f"\n({time.time() - t0:.0f}s)")


def _plot(curves: dict, di_b: dict, summary: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    col = {"positive": "tab:blue", "negative": "tab:purple", "mixed": "tab:cyan"}
    for mode, rs in curves.items():
        g = [r["gamma"] for r in rs]
        ax.plot(g, [r["di_a_pool"] for r in rs], "-o", ms=3, color=col[mode],
                label=f"A, {mode} (pool)")  # fmt: skip
        lo = [r["di_a_sample_ci"][0] for r in rs]
        hi = [r["di_a_sample_ci"][1] for r in rs]
        ax.fill_between(g, lo, hi, color=col[mode], alpha=0.12)
        if summary[mode]["gamma_min_pool"] is not None:
            ax.axvline(summary[mode]["gamma_min_pool"], color=col[mode], ls=":", lw=1)
    for k, ls in (("name", "-"), ("perfect", "--"), ("random", ":")):
        ax.axhline(di_b[k], color="tab:red", ls=ls, label=f"B + {k} proxy")
    ax.axhspan(0.8, ax.get_ylim()[1] if ax.get_ylim()[1] > 0.8 else 1.2, color="grey", alpha=0.15)
    ax.set_xlabel("gamma (fairwashing rate of the server)")
    ax.set_ylabel("disparate impact")
    ax.set_title("Figure 3: DI through A as fairwashing grows (bands: 1,500-query 95% CI)")
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(RESULTS / "figure3.png", dpi=120)


if __name__ == "__main__":
    main()
