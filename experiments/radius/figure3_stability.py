"""Figure 3: stability of the radius with the audit size (paper Section 5.4).

Adult with the MLP of table2_lmr_adult.py (correctness, sex). For n in {100, 200, 500, 1000,
2000}, 20 audit sets drawn without replacement from the test split (seeds 0..19); reference:
n = 5,000. eps = 0.05 (and eps = 0.2, the other side of phi). Exact and CoRe radii; mean and
standard deviation per n.

Run:  .venv/bin/python experiments/radius/figure3_stability.py
"""

from __future__ import annotations

import math
import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _common import RESULTS, adult_correctness, save  # noqa: E402

from fairprobe.radius import consistency_radius  # noqa: E402

warnings.filterwarnings("ignore")

SIZES = (100, 200, 500, 1000, 2000)
EPS = (0.05, 0.2)
METHS = ("exact", "core")


def main() -> None:
    d = adult_correctness(n_train=10_000, seed=0)
    m, sex = d["correct"], d["sex"]
    out: dict[str, dict[str, dict[str, list[float]]]] = {}
    for eps in EPS:
        key = str(eps)
        out[key] = {}
        for meth in METHS:
            ref = [consistency_radius(m[i], sex[i], eps, method=meth).radius for i in
                   (np.random.default_rng(100 + s).choice(m.size, 5000, replace=False)
                    for s in range(5))]
            per: dict[str, list[float]] = {"ref5000": ref}
            for n in SIZES:
                per[str(n)] = [
                    consistency_radius(m[i], sex[i], eps, method=meth).radius
                    for i in (np.random.default_rng(s).choice(m.size, n, replace=False)
                              for s in range(20))
                ]
            out[key][meth] = per
            print(f"  eps={eps} {meth} done", flush=True)
    save("figure3_stability.json", {"sizes": SIZES, "eps": EPS, "radii": out,
                                    "note": "reference = mean over 5 draws of n=5000"})
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(EPS), figsize=(10, 3.8))
    print("\nFigure 3 - radius vs audit size n (mean +- sd over 20 draws; ref = n=5000)")
    for ax, eps in zip(axes, EPS, strict=True):
        for meth, col in zip(METHS, ("k", "tab:red"), strict=True):
            per = out[str(eps)][meth]
            mean = np.array([np.mean([x for x in per[str(n)] if math.isfinite(x)]) for n in SIZES])
            sd = np.array([np.std([x for x in per[str(n)] if math.isfinite(x)]) for n in SIZES])
            ref = float(np.mean(per["ref5000"]))
            ax.plot(SIZES, mean, "-o", color=col, label=meth)
            ax.fill_between(SIZES, mean - sd, mean + sd, color=col, alpha=0.15)
            ax.axhline(ref, color=col, ls="--", lw=1)
            print(f"eps={eps} {meth:<6} ref={ref:.4g}  " + "  ".join(
                f"n={n}: {mu:.4g}+-{s:.2g}" for n, mu, s in zip(SIZES, mean, sd, strict=True)))
        ax.set_xscale("log")
        ax.set_xlabel("audit size n")
        ax.set_ylabel("radius (KL)")
        ax.set_title(f"eps = {eps}")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(RESULTS / "figure3_stability.png", dpi=130)
    print("paper: the mean stabilises and reaches the n=5000 reference by n ~ 1,000; the spread "
          "shrinks with n.")


if __name__ == "__main__":
    main()
