"""Table II (Bias in Bios) / Table IV (Civil Comments) and Figures 6 / 10: K = 1..19, 20 seeds.

    .venv/bin/python experiments/collab/table2_table4.py --dataset bios    # Table II + Fig. 6
    .venv/bin/python experiments/collab/table2_table4.py --dataset civil   # Table IV + Fig. 10

Runs the sweep on a local Dask cluster (resumable: the runs JSON is reused), then writes
``table2_summary.json`` / ``table4_summary.json`` and the per-K figure, and prints the table next to
the paper's numbers. Same as ``fairprobe collab sweep --cases ... --attackers 0-19 --seeds 20``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from _common import CASE_LABEL, LABELS, MAIN_METHODS, RESULTS, per_k, seed_spread, summarise  # noqa: E402

from fairprobe.collab.simulate import SimConfig  # noqa: E402
from fairprobe.collab.sweep import sweep  # noqa: E402
from fairprobe.report.jsonio import write_json  # noqa: E402

# Paper, Table II (Bias in Bios): ASR % and mean |error| over K = 1..19.
PAPER_T2 = {
    "bios-very-unfair": ((95, 5, 0, 0), (0.267, 0.137, 0.079, 0.060)),
    "bios-moderate": ((97, 46, 71, 0), (0.144, 0.189, 0.155, 0.034)),
    "bios-near-fair": ((100, 20, 53, 9), (0.062, 0.079, 0.037, 0.006)),
    "all": ((97, 24, 41, 3), (0.158, 0.135, 0.090, 0.034)),
}
# Paper, Appendix D-A (Civil Comments, Table IV as quoted in the text): only the "all" row.
PAPER_T4 = {
    "all": ((97, 48, 59, 26), (0.156, 0.180, 0.171, 0.034)),
}
CASES = {
    "bios": ["bios-very-unfair", "bios-moderate", "bios-near-fair"],
    "civil": ["civil-very-unfair", "civil-moderate", "civil-near-fair"],
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dataset", choices=sorted(CASES), default="bios")
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--kmax", type=int, default=19)
    ap.add_argument("--workers", type=int, default=None)
    args = ap.parse_args()
    cases = CASES[args.dataset]
    tag = "table2" if args.dataset == "bios" else "table4"
    # the run rows (~10 MB) are not committed: they go to results/collab/runs/ (git-ignored);
    # the sweep resumes from them only if the current code wrote them (sweep.ROWS_VERSION)
    runs_path = RESULTS / "runs" / f"{tag}_runs.json"
    t0, c0 = time.perf_counter(), time.process_time()
    res = sweep(
        SimConfig(case=cases[0]),
        cases,
        list(range(0, args.kmax + 1)),
        list(range(args.seeds)),
        json_path=runs_path,
        n_workers=args.workers,
    )
    wall = time.perf_counter() - t0
    rows = res["runs"]
    methods = [*MAIN_METHODS, "median-local-dp", "trimmed-mean-local-dp"]
    summ = summarise(rows, cases, methods, kmin=1)
    spread = {c: {m: seed_spread(rows, c, m) for m in MAIN_METHODS} for c in cases}
    paper = PAPER_T2 if tag == "table2" else PAPER_T4
    title = "Table II (Bias in Bios)" if tag == "table2" else "Table IV (Civil Comments)"
    print(f"{title}: runs with K = 1..{args.kmax}, {args.seeds} seeds; measured (paper)")
    print(
        f"{'case':28s} "
        + " ".join(f"{LABELS[m][:12]:>14s}" for m in MAIN_METHODS)
        + " | "
        + " ".join(f"{LABELS[m][:12]:>15s}" for m in MAIN_METHODS)
    )
    for c in [*cases, "all"]:
        p = paper.get(c)
        asr = " ".join(
            f"{summ[c][m]['asr']:6.1f}" + (f" ({p[0][i]:3d})" if p else "       ")
            for i, m in enumerate(MAIN_METHODS)
        )
        mae = " ".join(
            f"{summ[c][m]['mae']:.3f}" + (f" ({p[1][i]:.3f})" if p else "        ")
            for i, m in enumerate(MAIN_METHODS)
        )
        print(f"{CASE_LABEL.get(c, 'All three cases'):28s} {asr} | {mae}")
    print("seed spread (bootstrap std over seeds of ASR / MAE):")
    for c in cases:
        print(
            f"  {c:20s} "
            + "  ".join(f"{m}: {spread[c][m][0]:.1f} / {spread[c][m][1]:.4f}" for m in MAIN_METHODS)
        )
    print("local-DP variants (Appendix D-C), ASR % / MAE:")
    for c in [*cases, "all"]:
        print(
            f"  {c:20s} "
            + "  ".join(
                f"{m}: {summ[c][m]['asr']:.1f} / {summ[c][m]['mae']:.3f}"
                for m in ("median-local-dp", "trimmed-mean-local-dp")
            )
        )
    print(
        f"sweep wall time {wall:.1f} s (includes cluster start; this run's main-process CPU "
        f"{time.process_time() - c0:.1f} s; machine shared with other sessions)"
    )
    write_json(
        RESULTS / f"{tag}_summary.json",
        {
            "command": f"python experiments/collab/table2_table4.py --dataset {args.dataset}",
            "seeds": args.seeds,
            "kmax": args.kmax,
            "measured": summ,
            "seed_spread": spread,
            "paper": {c: {"asr": list(v[0]), "mae": list(v[1])} for c, v in paper.items()},
            "paper_methods": list(MAIN_METHODS),
            "sweep_wall_seconds": wall,
        },
    )
    fig, axes = plt.subplots(2, len(cases), figsize=(4.2 * len(cases), 6.5), sharex=True)
    for j, c in enumerate(cases):
        for m in MAIN_METHODS:
            ks, asr, me, sd = per_k(rows, c, m)
            axes[0, j].plot(ks, asr, marker="o", ms=3, label=LABELS[m])
            axes[1, j].errorbar(ks, me, yerr=sd, marker="o", ms=3, capsize=2, label=LABELS[m])
        true_dp = next(r["true_dp"] for r in rows if r["case"] == c)
        axes[1, j].axhline(abs(true_dp), ls="--", c="k", lw=0.8)
        axes[1, j].axhline(abs(true_dp) - 0.05, ls=":", c="r", lw=0.8)
        axes[0, j].set_title(CASE_LABEL[c])
        axes[1, j].set_xlabel("adversaries K")
    axes[0, 0].set_ylabel("attack success rate (%)")
    axes[1, 0].set_ylabel("DP estimation error")
    axes[0, 0].legend(fontsize=8)
    fig.tight_layout()
    fig_name = "fig6_bios_per_k.png" if tag == "table2" else "fig10_civil_per_k.png"
    fig.savefig(RESULTS / fig_name, dpi=120)
    print("wrote", RESULTS / f"{tag}_summary.json", RESULTS / fig_name)
    json.dumps(summ)


if __name__ == "__main__":
    main()
