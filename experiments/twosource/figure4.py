"""Section 4.2's worked example and Figure 4's Pareto frontier (t = 100), from the formulas.

Worked example: p_phi = 0.91, t_fraud = 100, alpha = 5% -> n_max = 14, p_manip(10%) = 76%.

Figure 4: every split of t = 100 queries (Section 5.3: t*beta on A only, t(1-beta)/2 A/B pairs),
with its margin of error epsilon_A and the detection probability p_manip, and the Pareto frontier.
The paper's plot does not state sigma_A, z or gamma; its marked point (beta = 76%, epsilon_A =
4.2%, p_manip = 98%) is matched by the "paper convention" below: epsilon_A = sigma / sqrt(t_fair)
with sigma the standard deviation of one 0/1 decision (z = 1), and p_manip at the fixed gamma that
gives 98% at beta = 76% (solved here). The "fairprobe convention" is the DI's delta-method sigma,
z = 1.96, and Theorem 3's gamma (the cheapest fairwashing that makes A look fair at that margin).

Run: ``.venv/bin/python experiments/twosource/figure4.py`` (seconds).
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
from scipy import optimize

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import RESULTS, write  # noqa: E402

from fairprobe.twosource.theory import (  # noqa: E402
    allocate,
    detection_test,
    di_sigma,
    n_max,
    p_manip,
    pareto_frontier,
)

P_PHI = 0.91
T = 100
# Honest platform on the Adult test split (experiments/results/twosource/figure3.json).
RATE_F, RATE_M, SHARE_F = 0.1205, 0.4686, 0.333


def main() -> None:
    ex = detection_test(100, P_PHI, 0.05, gamma=0.10)
    print(f"Section 4.2: n_max = {ex.n_max} (paper 14), p_manip(10%) = {ex.p_manip:.4f} "
          f"(paper 76%), exact size {ex.size:.4f}")  # fmt: skip

    # ---- paper convention -------------------------------------------------------------------
    a76 = allocate(T, 0.76)
    sigma_dec = 0.042 * math.sqrt(a76.t_fair)  # eps = sigma / sqrt(t_fair) = 4.2% at beta 76%
    implied_rate = (1 - math.sqrt(1 - 4 * sigma_dec**2)) / 2
    g98 = float(optimize.brentq(lambda g: float(p_manip(a76.t_fraud, P_PHI, g)) - 0.98, 0, 1))
    # z = 1: margin_of_error uses alpha -> z; alpha = 0.3173 gives z = 1
    alpha_z1 = 2 * (1 - 0.8413447460685429)
    paper = pareto_frontier(T, P_PHI, sigma_dec, alpha_z1, g98)
    # p_manip itself at the paper's alpha = 5%
    pm5 = np.array([float(p_manip(int(k), P_PHI, g98, 0.05)) for k in paper.t_fraud])
    eps = paper.epsilon_a
    keep = _pareto(eps, pm5)
    i76 = int(np.flatnonzero(paper.t_fraud == a76.t_fraud)[0])
    print(
        f"\nFigure 4, paper convention: sigma = {sigma_dec:.3f} (a 0/1 decision with positive "
        f"rate {implied_rate:.3f}), z = 1, gamma = {g98:.3f} (share of checked answers flipped)"
    )
    print(
        f"  beta = 0.76 -> t_fair {a76.t_fair}, t_fraud {a76.t_fraud}, n_max "
        f"{n_max(a76.t_fraud, P_PHI)}, epsilon_A {eps[i76]:.4f} (paper 4.2%), p_manip "
        f"{pm5[i76]:.4f} (paper 98%), on the frontier: {bool(keep[i76])}"
    )
    # ---- fairprobe convention ---------------------------------------------------------------
    sig = di_sigma(RATE_F, RATE_M, SHARE_F)
    ours = pareto_frontier(T, P_PHI, sig, 0.05, rate_unprivileged=RATE_F,
                           rate_privileged=RATE_M, share_unprivileged=SHARE_F)  # fmt: skip
    print(
        f"\nFigure 4, fairprobe convention: DI sigma_A = {sig:.3f} (platform on Adult), "
        "z = 1.96, gamma from Theorem 3"
    )
    print("  t_fair t_fraud  beta  eps_A  gamma_chk  n_max  p_manip")
    for r in ours.pareto():
        print(
            f"  {r['t_fair']:6d} {r['t_fraud']:7d}  {r['beta']:.2f}  {r['epsilon_a']:.3f}"
            f"  {r['gamma']:.3f}  {r['n_max']:5d}  {r['p_manip']:.4f}"
        )
    write("figure4.json", {
        "worked_example": ex.to_dict(),
        "paper_convention": {
            "sigma": sigma_dec, "implied_positive_rate": implied_rate, "z": 1.0, "gamma": g98,
            "points": [{"t_fair": int(a), "t_fraud": int(b), "beta": float(c),
                        "epsilon_a": float(d), "p_manip": float(e), "pareto": bool(f)}
                       for a, b, c, d, e, f in zip(paper.t_fair, paper.t_fraud, paper.beta,
                                                   eps, pm5, keep, strict=True)],
            "beta_076": {"epsilon_a": float(eps[i76]), "p_manip": float(pm5[i76])},
            "paper": {"beta": 0.76, "epsilon_a": 0.042, "p_manip": 0.98},
        },
        "fairprobe_convention": ours.to_dict(),
    })  # fmt: skip
    _plot(paper.epsilon_a, pm5, keep, i76, ours)


def _pareto(eps: np.ndarray, pm: np.ndarray) -> np.ndarray:
    from fairprobe.twosource.theory import _pareto_mask

    return _pareto_mask(eps, pm)


def _plot(eps: np.ndarray, pm: np.ndarray, keep: np.ndarray, i76: int, ours: object) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    ax = axes[0]
    ax.scatter(eps, pm, s=10, color="grey", label="allocations")
    o = np.argsort(eps[keep])
    ax.plot(eps[keep][o], pm[keep][o], "-o", ms=3, color="tab:blue", label="Pareto frontier")
    ax.annotate("beta = 76%", (eps[i76], pm[i76]), xytext=(eps[i76] + 0.01, pm[i76] - 0.25),
                arrowprops={"arrowstyle": "->"})  # fmt: skip
    ax.set_xlabel("epsilon_A")
    ax.set_ylabel("p_manip")
    ax.set_title("paper convention (sigma of a decision, z = 1)")
    ax.legend(fontsize=8)
    ax = axes[1]
    e2, p2, k2 = ours.epsilon_a, ours.p_manip, ours.optimal  # type: ignore[attr-defined]
    ax.scatter(e2, p2, s=10, color="grey")
    o = np.argsort(e2[k2])
    ax.plot(e2[k2][o], p2[k2][o], "-o", ms=3, color="tab:blue")
    ax.set_xlabel("epsilon_A (DI, z = 1.96)")
    ax.set_title("fairprobe convention (Theorem 3 gamma)")
    fig.suptitle("Figure 4: Pareto frontier of p_manip vs epsilon_A, t = 100, p_phi = 0.91")
    fig.tight_layout()
    fig.savefig(RESULTS / "figure4.png", dpi=120)


if __name__ == "__main__":
    main()
