"""Figures 3, 5, 7, 11 and RQ4-RQ6 of the collaborative-auditing paper.

    .venv/bin/python experiments/collab/figures.py fig5      # estimate over rounds, K = 0..3
    .venv/bin/python experiments/collab/figures.py fig5n     # Figure 5, K = 1, vs rounds
    .venv/bin/python experiments/collab/figures.py fig3      # the one-shot protocol
    .venv/bin/python experiments/collab/figures.py fig7      # N x alpha, K = 30% of N
    .venv/bin/python experiments/collab/figures.py rq4       # with vs without replacement
    .venv/bin/python experiments/collab/figures.py rq5       # trimming 10-40%, local DP
    .venv/bin/python experiments/collab/figures.py rq6       # budget n from 100 to 3,000
    .venv/bin/python experiments/collab/figures.py all

Each writes ``experiments/results/collab/<name>.json`` and ``<name>.png`` and prints its numbers
next to the paper's.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import defaultdict

sys.path.insert(0, os.path.dirname(__file__))

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from _common import CASE_LABEL, LABELS, MAIN_METHODS, RESULTS, summarise  # noqa: E402
from _pool import run_many  # noqa: E402

from fairprobe.collab.attacker import maximise_dp, minimise_abs_dp  # noqa: E402
from fairprobe.collab.partition import local_counts  # noqa: E402
from fairprobe.collab.simulate import SimConfig, prepare_honest  # noqa: E402
from fairprobe.report.jsonio import write_json  # noqa: E402

SEEDS = 20
ALL_CASES = [
    "bios-very-unfair",
    "bios-moderate",
    "bios-near-fair",
    "civil-very-unfair",
    "civil-moderate",
    "civil-near-fair",
]


def fig5() -> None:
    """Section IV-D: no-defense estimate over rounds on Civil Comments (very unfair), K = 0..3."""
    cfgs = [
        SimConfig(case="civil-very-unfair", attackers=k, seed=s)
        for k in range(4)
        for s in range(SEEDS)
    ]
    res = run_many(cfgs, trajectory=True)
    out: dict[str, object] = {}
    fig, ax = plt.subplots(figsize=(6, 4))
    print(
        "Figure 5 (Civil very unfair, N = 20, no defense): first round in the fair band, as a "
        "share of the audit (mean over seeds); paper: K=1 ~80%, K=2 ~25%, K=3 ~10%"
    )
    for k in range(4):
        trs = [np.array(r["trajectory"]["none"]) for r in res if r["config"]["attackers"] == k]
        fracs = []
        for tr in trs:
            inside = np.flatnonzero(np.abs(tr) <= 0.05)
            fracs.append((inside[0] + 1) / tr.size if inside.size else np.nan)
        # plot on a normalised time axis (rounds differ across seeds)
        grid = np.linspace(0, 1, 101)
        interp = np.array([np.interp(grid, np.arange(1, tr.size + 1) / tr.size, tr) for tr in trs])
        ax.plot(grid * 100, interp.mean(axis=0), label=f"K = {k}")
        mean_frac = float(np.nanmean(fracs)) if np.isfinite(fracs).any() else None
        out[f"K={k}"] = {
            "enter_band_fraction": fracs,
            "mean": mean_frac,
            "final_mean": float(interp[:, -1].mean()),
        }
        fr = "never" if mean_frac is None else f"{100 * mean_frac:.0f}%"
        print(
            f"  K = {k}: enters band at {fr} of rounds (entered in "
            f"{int(np.isfinite(fracs).sum())}/{len(fracs)} seeds); final estimate "
            f"{interp[:, -1].mean():+.3f}"
        )
    ax.axhspan(-0.05, 0.05, color="g", alpha=0.1)
    ax.set_xlabel("audit progress (% of rounds)")
    ax.set_ylabel("estimated DP (no defense, median)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(RESULTS / "fig5_rounds.png", dpi=120)
    write_json(RESULTS / "fig5_rounds.json", out)


def fig5n() -> None:
    """Why Figure 5 differs: one attacker's reach grows with the number of rounds.

    Same as Figure 5 (Civil very unfair, N = 20, no defense, K = 1) with smaller budgets n, i.e.
    more rounds (the partition is unchanged); prints the final estimate and the share of seeds
    whose final estimate is in the fair band.
    """
    out = {}
    print("Figure 5, K = 1, vs the number of rounds (smaller n => more rounds):")
    for n in (300, 150, 100):
        res = run_many(
            [
                SimConfig(case="civil-very-unfair", attackers=1, seed=s, n=n, max_rounds=45000 // n)
                for s in range(SEEDS)
            ]
        )
        fin = [next(r2["estimate"] for r2 in r["rows"] if r2["method"] == "none") for r in res]
        rounds = [r["rounds"] for r in res]
        fooled = float(np.mean([abs(f) <= 0.05 for f in fin]))
        out[str(n)] = {"rounds": rounds, "final_mean": float(np.mean(fin)), "fooled": fooled}
        print(
            f"  n = {n:3d}: rounds {min(rounds)}-{max(rounds)} (median {np.median(rounds):.0f}),"
            f" final estimate {np.mean(fin):+.3f}, in the band in {100 * fooled:.0f}% of seeds"
        )
    write_json(RESULTS / "fig5_rounds_vs_budget.json", out)


def fig3() -> None:
    """Section II-B: the one-shot protocol, N = 20 honest auditors on Civil very unfair.

    Each honest auditor sends its whole query set's counts once. Each attacker (non-colluding)
    sends one fabricated vector from the honest aggregate, with a budget equal to the largest
    honest query set (a plausible size): either the Lemma 1 move (extreme labels, maximal push)
    or the exact minimiser of |DP|.
    """
    out: dict[str, list[list[float]]] = {"extreme": [], "exact": []}
    for s in range(SEEDS):
        st = prepare_honest(SimConfig(case="civil-very-unfair", seed=s))
        lc = local_counts(st.cells)
        honest = lc.sum(axis=0)
        budget = int((lc[:, 1] + lc[:, 3]).max())
        for kind, fn in (("extreme", maximise_dp), ("exact", minimise_abs_dp)):
            d = fn(honest[None, :], budget)[0]
            row = []
            for k in range(6):
                tot = honest + k * d
                row.append(float(tot[0] / tot[1] - tot[2] / tot[3]))
            out[kind].append(row)
    fig, ax = plt.subplots(figsize=(5, 3.6))
    print(
        "Figure 3 (one-shot, Civil very unfair, N = 20): estimate vs K (mean over seeds); "
        "paper: -0.23 at K=0, in the band at K=2, past 0 at K=3"
    )
    for kind in ("extreme", "exact"):
        arr = np.array(out[kind])
        ax.errorbar(
            range(6),
            arr.mean(0),
            yerr=arr.std(0),
            marker="o",
            capsize=3,
            label=f"attackers: {kind}",
        )
        print(f"  {kind:8s}: " + "  ".join(f"K={k}: {arr[:, k].mean():+.3f}" for k in range(6)))
    ax.axhspan(-0.05, 0.05, color="g", alpha=0.1)
    ax.set_xlabel("adversaries K")
    ax.set_ylabel("estimated DP (one shot)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(RESULTS / "fig3_one_shot.png", dpi=120)
    write_json(RESULTS / "fig3_one_shot.json", out)


def fig7() -> None:
    """Section VI-C: bios-moderate, N in {10, 20, 30}, alpha from 100 to 0.2, K = 30% of N."""
    alphas = [100.0, 10.0, 5.0, 1.0, 0.5, 0.3, 0.2]
    ns = [10, 20, 30]
    cfgs = [
        SimConfig(case="bios-moderate", honest=n, attackers=round(0.3 * n), seed=s, alpha=a)
        for n in ns
        for a in alphas
        for s in range(SEEDS)
    ]
    res = run_many(cfgs)
    cell: dict[tuple[int, float, str], list[float]] = defaultdict(list)
    missing: dict[str, int] = defaultdict(int)
    for r in res:
        c = r["config"]
        if "error" in r:
            missing[f"N={c['honest']},alpha={c['alpha']:g}"] += 1
            continue
        for row in r["rows"]:
            cell[(c["honest"], c["alpha"], row["method"])].append(abs(row["error"]))
    out = {f"N={n},alpha={a:g},{m}": float(np.mean(cell[(n, a, m)])) for (n, a, m) in cell}
    fig, axes = plt.subplots(1, 4, figsize=(16, 3.8), sharey=True)
    print(
        "Figure 7 (bios moderate, K = 30% of N): mean |error|; paper: Auditopus 0.019-0.045 "
        "everywhere; median/trimmed < 0.03 at alpha=100, up to 0.26/0.17 at N=10, alpha=0.2"
    )
    print(f"{'N':>3s} {'alpha':>6s} " + " ".join(f"{LABELS[m][:12]:>13s}" for m in MAIN_METHODS))
    for j, m in enumerate(MAIN_METHODS):
        mat = np.full((len(ns), len(alphas)), np.nan)
        for a_i, a in enumerate(alphas):
            for n_i, n in enumerate(ns):
                v = cell.get((n, a, m))
                if v and len(v) == SEEDS:
                    mat[n_i, a_i] = np.mean(v)
        im = axes[j].imshow(mat, cmap="viridis", vmin=0, vmax=0.3)
        for n_i in range(len(ns)):
            for a_i in range(len(alphas)):
                if np.isfinite(mat[n_i, a_i]):
                    axes[j].text(
                        a_i,
                        n_i,
                        f"{mat[n_i, a_i]:.3f}",
                        ha="center",
                        va="center",
                        fontsize=7,
                        color="w",
                    )
        axes[j].set_xticks(range(len(alphas)), [f"{a:g}" for a in alphas])
        axes[j].set_yticks(range(len(ns)), [str(n) for n in ns])
        axes[j].set_title(LABELS[m])
        axes[j].set_xlabel("alpha")
    axes[0].set_ylabel("honest auditors N")
    fig.colorbar(im, ax=axes, shrink=0.8)
    for n in ns:
        for a in alphas:
            vals = []
            for m in MAIN_METHODS:
                v = cell.get((n, a, m))
                vals.append(
                    f"{np.mean(v):13.3f}" if v and len(v) == SEEDS else f"{'(left out)':>13s}"
                )
            print(f"{n:3d} {a:6g} " + " ".join(vals))
    if missing:
        print(
            "  seeds without a feasible partition (cells left out, as in the paper):", dict(missing)
        )
    fig.savefig(RESULTS / "fig7_heterogeneity.png", dpi=120, bbox_inches="tight")
    write_json(RESULTS / "fig7_heterogeneity.json", {"mae": out, "missing": dict(missing)})


def rq4() -> None:
    """Appendix D-B: with vs without replacement, no adversary (Figure 11 and the alpha sweep)."""
    out: dict[str, object] = {}
    print(
        "RQ4 (Figure 11): Civil very unfair, K = 0, no-defense estimate (median of honest "
        "auditors), mean over seeds; paper with replacement: -0.151 after round 1, -0.157 at "
        "the end, true -0.228"
    )
    fig, ax = plt.subplots(figsize=(6, 4))
    for rep in (False, True):
        res = run_many(
            [SimConfig(case="civil-very-unfair", seed=s, replacement=rep) for s in range(SEEDS)],
            trajectory=True,
        )
        trs = [np.array(r["trajectory"]["none"]) for r in res]
        grid = np.linspace(0, 1, 101)
        interp = np.array([np.interp(grid, np.arange(1, t.size + 1) / t.size, t) for t in trs])
        first = float(np.mean([t[0] for t in trs]))
        last = float(np.mean([t[-1] for t in trs]))
        name = "with replacement" if rep else "without replacement"
        ax.plot(grid * 100, interp.mean(0), label=name)
        out[name] = {"first_round": first, "final": last, "true_dp": res[0]["true_dp"]}
        print(
            f"  {name:20s}: after round 1 {first:+.3f}, at the end {last:+.3f} "
            f"(true {res[0]['true_dp']:+.3f})"
        )
    ax.axhline(out["without replacement"]["true_dp"], ls="--", c="k", lw=0.8)  # type: ignore[index]
    ax.set_xlabel("audit progress (% of rounds)")
    ax.set_ylabel("estimated DP (honest only)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(RESULTS / "rq4_replacement.png", dpi=120)
    print(
        "  final error with replacement vs alpha (paper: <=0.001 at 100, +0.012 at 5, "
        "+0.072 at 1, +0.117 at 0.3):"
    )
    alpha_err = {}
    for a in (100.0, 5.0, 1.0, 0.3):
        res = run_many(
            [
                SimConfig(case="civil-very-unfair", seed=s, replacement=True, alpha=a)
                for s in range(SEEDS)
            ]
        )
        errs = [
            row["error"] for r in res if "rows" in r for row in r["rows"] if row["method"] == "none"
        ]
        alpha_err[f"{a:g}"] = float(np.mean(errs))
        print(f"    alpha = {a:5g}: mean error {np.mean(errs):+.3f} over {len(errs)} seeds")
    out["error_vs_alpha_with_replacement"] = alpha_err
    write_json(RESULTS / "rq4_replacement.json", out)


def rq5() -> None:
    """Appendix D-C: trimming fraction 10-40% and aggregation of local DPs, K = 0..19."""
    betas = (0.1, 0.3, 0.4)
    cfgs = [
        SimConfig(case=c, attackers=k, seed=s, extra_betas=betas)
        for c in ALL_CASES
        for k in range(20)
        for s in range(SEEDS)
    ]
    res = run_many(cfgs)
    rows = [row for r in res for row in r["rows"]]
    methods = [
        "trimmed-mean@0.1",
        "trimmed-mean",
        "trimmed-mean@0.3",
        "trimmed-mean@0.4",
        "median",
        "median-local-dp",
        "trimmed-mean-local-dp",
        "auditopus",
    ]
    summ = summarise(rows, ALL_CASES, methods, kmin=1)
    k0 = summarise(rows, ALL_CASES, methods, kmin=0)
    zero = {
        c: {
            m: 100
            * float(
                np.mean(
                    [
                        r["fooled"]
                        for r in rows
                        if r["case"] == c and r["method"] == m and r["attackers"] == 0
                    ]
                )
            )
            for m in methods
        }
        for c in ALL_CASES
    }
    print(
        "RQ5: ASR % over K = 1..19 (paper, best beta per case: trimmed mean fooled 47% "
        "Chr/Mus, 32% Chr/Jew, 48% physician, 25% teacher; 0% nurse; 73% Black/White; "
        "Auditopus at most 9% except Black/White 78%)"
    )
    print(f"{'case':18s} " + " ".join(f"{m.replace('trimmed-mean', 'tm'):>12s}" for m in methods))
    for c in ALL_CASES:
        print(f"{c:18s} " + " ".join(f"{summ[c][m]['asr']:12.1f}" for m in methods))
    print(
        "best trimming fraction per case: "
        + ", ".join(f"{c}: {min(summ[c][m]['asr'] for m in methods[:4]):.0f}%" for c in ALL_CASES)
    )
    print("ASR % at K = 0 (paper: local-DP median fair in 60% on teacher, 35% on physician):")
    for c in ALL_CASES:
        print(
            f"  {c:18s} "
            + " ".join(f"{m.replace('trimmed-mean', 'tm')}={zero[c][m]:.0f}" for m in methods)
        )
    fig, ax = plt.subplots(figsize=(9, 4))
    x = np.arange(len(ALL_CASES))
    wdt = 0.8 / len(methods)
    for i, m in enumerate(methods):
        ax.bar(x + i * wdt, [summ[c][m]["asr"] for c in ALL_CASES], wdt, label=m)
    ax.set_xticks(x + 0.4, [CASE_LABEL[c] for c in ALL_CASES], rotation=20, fontsize=7)
    ax.set_ylabel("ASR (%), K = 1..19")
    ax.legend(fontsize=6, ncol=2)
    fig.tight_layout()
    fig.savefig(RESULTS / "rq5_baselines.png", dpi=120)
    write_json(RESULTS / "rq5_baselines.json", {"asr_k1_19": summ, "all_k": k0, "asr_k0": zero})


def rq6() -> None:
    """Appendix D-D: budget n from 100 to 3,000 with K = 6, N = 20 (cap T = 45,000 / n)."""
    budgets = [100, 300, 500, 1000, 2000, 3000]
    cfgs = [
        SimConfig(case=c, attackers=6, seed=s, n=n, max_rounds=max(1, 45000 // n))
        for c in ALL_CASES
        for n in budgets
        for s in range(SEEDS)
    ]
    res = run_many(cfgs)
    asr: dict[str, dict[str, dict[str, float]]] = defaultdict(dict)
    rounds: dict[str, dict[str, list[int]]] = defaultdict(dict)
    for c in ALL_CASES:
        for n in budgets:
            rs = [r for r in res if r["config"]["case"] == c and r["config"]["n"] == n]
            rounds[c][str(n)] = [r["rounds"] for r in rs]
            asr[c][str(n)] = {
                m: 100
                * float(
                    np.mean([row["fooled"] for r in rs for row in r["rows"] if row["method"] == m])
                )
                for m in MAIN_METHODS
            }
    print(
        "RQ6 (Figure 14): ASR % of no-defense / Auditopus, K = 6 (paper: Auditopus never fooled "
        "on very unfair/moderate; teacher <=15% up to 2,000, 40% at 3,000; Black/White 65-95%; "
        "no-defense >=80% up to 2,000, less at 3,000)"
    )
    print(f"{'case':18s} " + " ".join(f"{'n=' + str(n):>13s}" for n in budgets))
    for c in ALL_CASES:
        print(
            f"{c:18s} "
            + " ".join(
                f"{asr[c][str(n)]['none']:5.0f} / {asr[c][str(n)]['auditopus']:4.0f} "
                for n in budgets
            )
        )
    print(
        "rounds (min-max over seeds): "
        + "; ".join(
            f"n={n}: {min(min(rounds[c][str(n)]) for c in ALL_CASES)}-"
            f"{max(max(rounds[c][str(n)]) for c in ALL_CASES)}"
            for n in budgets
        )
    )
    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    for c in ALL_CASES:
        for j, m in enumerate(("none", "auditopus")):
            axes[j].plot(
                budgets, [asr[c][str(n)][m] for n in budgets], marker="o", label=CASE_LABEL[c]
            )
            axes[j].set_title(LABELS[m])
            axes[j].set_xscale("log")
            axes[j].set_xlabel("queries per round n")
    axes[0].set_ylabel("ASR (%)")
    axes[1].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(RESULTS / "rq6_budget.png", dpi=120)
    write_json(RESULTS / "rq6_budget.json", {"asr": asr, "rounds": rounds})


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["fig3", "fig5", "fig5n", "fig7", "rq4", "rq5", "rq6", "all"])
    args = ap.parse_args()
    RESULTS.mkdir(parents=True, exist_ok=True)
    todo = (
        ["fig3", "fig5", "fig5n", "fig7", "rq4", "rq5", "rq6"]
        if args.what == "all"
        else [args.what]
    )
    for w in todo:
        globals()[w]()


if __name__ == "__main__":
    main()
