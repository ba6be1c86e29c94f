"""Figure 2 of the collaborative-auditing paper: how heterogeneous the partition makes the auditors.

    .venv/bin/python experiments/collab/fig2_heterogeneity.py [--seeds 20]

The paper (Sections II-B, D-C and Appendix C-C) describes what its Dirichlet(alpha = 1) partition
over N = 20 honest auditors produces: query sets of very different sizes, group compositions so
skewed that "heterogeneous data can produce a group-B-only query set", and local DPs "spread
widely around the true DP": across cases, the 5th percentile of an auditor's local DP is between
-0.55 and -0.84 and the 95th between +0.08 and +0.66 (Appendix C-C). For every Table I case and
seed this script draws the partition the simulator uses and measures, per auditor, its query-set
size (relative to the mean), its share of group A, and its local DP; it writes
``experiments/results/collab/fig2_heterogeneity.{json,png}`` (histograms pooled over seeds) and
prints the numbers next to the paper's.
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from _common import CASE_LABEL, RESULTS  # noqa: E402

from fairprobe.collab.partition import local_counts  # noqa: E402
from fairprobe.collab.simulate import SimConfig, prepare_honest  # noqa: E402
from fairprobe.datasets.populations import get_population  # noqa: E402
from fairprobe.report.jsonio import write_json  # noqa: E402

CASES = list(CASE_LABEL)
#: Appendix C-C: range over cases of the 5th and 95th percentiles of the local DP.
PAPER_P5 = (-0.84, -0.55)
PAPER_P95 = (0.08, 0.66)


def measure(case: str, seeds: int, honest: int = 20, alpha: float = 1.0) -> dict[str, object]:
    sizes, share_a, local_dp, rel = [], [], [], []
    for s in range(seeds):
        cells = prepare_honest(SimConfig(case=case, seed=s, honest=honest, alpha=alpha)).cells
        c = local_counts(cells).astype(np.float64)
        n = c[:, 1] + c[:, 3]
        sizes.extend(n.tolist())
        rel.extend((n / n.mean()).tolist())
        share_a.extend((c[:, 1] / n).tolist())
        local_dp.extend((c[:, 0] / c[:, 1] - c[:, 2] / c[:, 3]).tolist())
    sz, sa, ld, rl = (np.asarray(x) for x in (sizes, share_a, local_dp, rel))
    q = [0, 5, 25, 50, 75, 95, 100]
    return {
        "case": case,
        "true_dp": get_population(case).true_dp,
        "auditors": int(sz.size),
        "size_quantiles": dict(zip(map(str, q), np.percentile(sz, q).tolist(), strict=True)),
        "size_max_over_median": float(np.percentile(rl, 100) / np.percentile(rl, 50)),
        "size_relative": rl.tolist(),
        "share_a_quantiles": dict(zip(map(str, q), np.percentile(sa, q).tolist(), strict=True)),
        "share_a_below_10pct": float(np.mean(sa < 0.1)),
        "share_a_above_90pct": float(np.mean(sa > 0.9)),
        "share_a": sa.tolist(),
        "local_dp_p5": float(np.percentile(ld, 5)),
        "local_dp_p95": float(np.percentile(ld, 95)),
        "local_dp": ld.tolist(),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=20)
    args = ap.parse_args()
    res = [measure(c, args.seeds) for c in CASES]
    RESULTS.mkdir(parents=True, exist_ok=True)
    fig, axes = plt.subplots(1, 3, figsize=(14, 4))
    bins_s = np.linspace(0, 4, 41)
    bins_a = np.linspace(0, 1, 41)
    bins_d = np.linspace(-1, 1, 41)
    for r in res:
        lab = CASE_LABEL[str(r["case"])]
        axes[0].hist(r["size_relative"], bins=bins_s, histtype="step", label=lab)
        axes[1].hist(r["share_a"], bins=bins_a, histtype="step", label=lab)
        axes[2].hist(r["local_dp"], bins=bins_d, histtype="step", label=lab)
    axes[0].set(xlabel="query-set size / mean size", ylabel="auditors (20 seeds x 20)",
                title="Query-set sizes")
    axes[1].set(xlabel="share of group A in the query set", title="Group composition")
    axes[2].set(xlabel="local DP a/A - b/B", title="Local DP (true DP: dotted)")
    for r in res:
        axes[2].axvline(float(r["true_dp"]), ls=":", lw=0.8, color="grey")
    axes[2].axvspan(-0.05, 0.05, color="green", alpha=0.08)
    axes[0].legend(fontsize=7)
    fig.suptitle("Figure 2: heterogeneity of the Dirichlet(1) partition, N = 20 honest auditors")
    fig.tight_layout()
    fig.savefig(RESULTS / "fig2_heterogeneity.png", dpi=120)
    slim = [
        {k: v for k, v in r.items() if k not in ("size_relative", "share_a", "local_dp")}
        for r in res
    ]
    write_json(
        RESULTS / "fig2_heterogeneity.json",
        {"seeds": args.seeds, "honest": 20, "alpha": 1.0, "cases": slim,
         "histograms": {str(r["case"]): {
             "size_relative": np.histogram(r["size_relative"], bins_s)[0].tolist(),
             "share_a": np.histogram(r["share_a"], bins_a)[0].tolist(),
             "local_dp": np.histogram(r["local_dp"], bins_d)[0].tolist(),
         } for r in res},
         "bins": {"size_relative": bins_s.tolist(), "share_a": bins_a.tolist(),
                  "local_dp": bins_d.tolist()},
         "paper": {"local_dp_p5_range": PAPER_P5, "local_dp_p95_range": PAPER_P95}},
    )
    print(f"Figure 2 / Appendix C-C ({args.seeds} seeds x 20 auditors, alpha = 1):")
    print(f"{'case':28s} {'size p5/med/p95 (max/med)':>30s} {'A-share p5-p95':>15s} "
          f"{'<10%/>90% A':>12s} {'local DP p5':>11s} {'p95':>6s}")
    for r in res:
        sq, aq = r["size_quantiles"], r["share_a_quantiles"]
        assert isinstance(sq, dict) and isinstance(aq, dict)
        print(
            f"{CASE_LABEL[str(r['case'])]:28s} "
            f"{sq['5']:7.0f}/{sq['50']:6.0f}/{sq['95']:6.0f} ({r['size_max_over_median']:.1f}x)"
            f"{aq['5']:9.2f}-{aq['95']:.2f} "
            f"{100 * float(r['share_a_below_10pct']):5.1f}/{100 * float(r['share_a_above_90pct']):4.1f}% "
            f"{float(r['local_dp_p5']):+11.2f} {float(r['local_dp_p95']):+6.2f}"
        )
    p5 = [float(r["local_dp_p5"]) for r in res]
    p95 = [float(r["local_dp_p95"]) for r in res]
    print(f"local DP 5th percentile over cases: {min(p5):+.2f} to {max(p5):+.2f} "
          f"(paper {PAPER_P5[0]:+.2f} to {PAPER_P5[1]:+.2f})")
    print(f"local DP 95th percentile over cases: {min(p95):+.2f} to {max(p95):+.2f} "
          f"(paper {PAPER_P95[0]:+.2f} to {PAPER_P95[1]:+.2f})")


if __name__ == "__main__":
    main()
