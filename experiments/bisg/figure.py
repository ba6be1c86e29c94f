"""The figure of ``docs/proxy.md``: each estimate of the Black-White gap against the truth.

Reads ``experiments/results/bisg/coverage.json`` (``experiments/bisg/coverage.py``) and writes
``docs/proxy-bias.svg``: per design, the true gap, the mean proxy-weighted and BIRDiE estimates
and the mean bounds interval over the seeds.

    python experiments/bisg/figure.py
"""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
matplotlib.rcParams["svg.hashsalt"] = "fairprobe-proxy"  # the same SVG on every run
import matplotlib.pyplot as plt  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "experiments" / "results" / "bisg" / "coverage.json"
OUT = ROOT / "docs" / "proxy-bias.svg"


def main() -> None:
    res = json.loads(SRC.read_text())
    designs = list(res["designs"])
    fig, ax = plt.subplots(figsize=(7.5, 3.6))
    for i, d in enumerate(designs):
        g = res["designs"][d]["groups"]["black"]
        lo, hi = g["mean_bounds"]
        ax.plot([lo, hi], [i, i], color="0.6", lw=6, solid_capstyle="butt",
                label="mean bounds interval" if i == 0 else None)
        ax.plot(g["truth"], i, "k|", ms=22, mew=3, label="true gap" if i == 0 else None)
        ax.plot(g["weighted_mean"], i + 0.18, "o", color="tab:red",
                label="proxy-weighted (mean)" if i == 0 else None)
        ax.plot(g["birdie_mean"], i - 0.18, "s", color="tab:blue",
                label="BIRDiE (mean)" if i == 0 else None)
    ax.axvspan(-res["tolerance"], res["tolerance"], color="tab:green", alpha=0.12,
               label="fair band")
    ax.set_yticks(range(len(designs)), [d.replace("-", " ") for d in designs])
    ax.set_xlabel("Black - White approval-rate gap")
    ax.set_title(f"{res['seeds']} seeds of {res['n']:,} applicants drawn from the census tables",
                 fontsize=10)
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=8, frameon=False)
    fig.tight_layout()
    fig.savefig(OUT, metadata={"Date": None})
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
