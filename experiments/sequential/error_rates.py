"""Measured error rates on synthetic pools with a known gap: at, below and above the tolerance.

    .venv/bin/python experiments/sequential/error_rates.py [--audits 2000] [--budget 4000]

For each access regime a pool of 20,000 members (a third in group a, as women in Adult) is built
deterministically from quantiles so that its gap in the audited functional is exactly
``delta - 0.05``, ``delta`` or ``delta + 0.05`` (delta = 0.1):

- decisions: exact counts of positives (rates 0.30 in group a, 0.30 + gap in group b);
- scores: Beta(4 m, 4 (1 - m)) quantiles (m = 0.30, 0.30 + gap), then shifted to the exact gap;
- logits: Normal(mu, 1.5) quantiles (mu = -0.8, -0.8 + gap), centred to the exact gap.

Each test runs ``--audits`` random orders (without replacement) with budget ``--budget``.
Type-I error = share of "violation" when the gap is <= delta; type-II error = share of
"compliant" when it is > delta. Writes ``error_rates.json`` and ``error_rates.png`` under
``experiments/results/sequential/``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from scipy.stats import beta as beta_dist
from scipy.stats import norm

from fairprobe.report import write_json
from fairprobe.sequential.pool import AuditPool, run_pool

OUT = Path("experiments/results/sequential")
N, SHARE_A, DELTA = 20_000, 1 / 3, 0.1


def synthetic_pool(access: str, gap: float) -> AuditPool:
    na = int(round(N * SHARE_A))
    nb = N - na
    in_a = np.zeros(N, dtype=bool)
    in_a[:na] = True
    u_a = (np.arange(na) + 0.5) / na
    u_b = (np.arange(nb) + 0.5) / nb
    if access == "decisions":
        xa = np.zeros(na)
        xa[: int(round(0.30 * na))] = 1
        xb = np.zeros(nb)
        xb[: int(round((0.30 + gap) * nb))] = 1
        return AuditPool(in_a=in_a, group_names=("a", "b"), decisions=np.r_[xa, xb])
    if access == "scores":
        ma, mb = 0.30, 0.30 + gap
        xa = beta_dist.ppf(u_a, 4 * ma, 4 * (1 - ma))
        xb = beta_dist.ppf(u_b, 4 * mb, 4 * (1 - mb))
        xa = xa - xa.mean() + ma
        xb = np.clip(xb - xb.mean() + mb, 0, 1)
        xb = xb - xb.mean() + mb  # tiny clip correction, still inside [0, 1]
        return AuditPool(in_a=in_a, group_names=("a", "b"), scores=np.r_[xa, xb])
    xa = norm.ppf(u_a, -0.8, 1.5)
    xb = norm.ppf(u_b, -0.8 + gap, 1.5)
    xa = xa - xa.mean() - 0.8
    xb = xb - xb.mean() - 0.8 + gap
    return AuditPool(in_a=in_a, group_names=("a", "b"), logits=np.r_[xa, xb])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--audits", type=int, default=2000)
    ap.add_argument("--budget", type=int, default=4000)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    rows = []
    t0 = time.perf_counter()
    for access in ("decisions", "scores", "logits"):
        for label, gap in (("below", DELTA - 0.05), ("at", DELTA), ("above", DELTA + 0.05)):
            pool = synthetic_pool(access, gap)
            for test in ("glr", "betting", "fixed"):
                if test == "betting" and access == "logits":
                    continue  # betting maps logits to sigmoid(z): a different functional
                res = run_pool(pool, access=access, test=test, tolerance=DELTA,
                               budget=a.budget, repeats=a.audits, seed=a.seed)  # fmt: skip
                d = res.to_dict()
                d.pop("outcome_per_repeat")
                d.pop("queries")
                d["case"] = label
                o = d["outcomes"]
                d["type_I"] = o["violation"] if label != "above" else None
                d["type_II"] = o["compliant"] if label == "above" else None
                k = "violation" if label != "above" else "compliant"
                d["error_interval"] = list(res.share_interval(k))
                rows.append(d)
    elapsed = time.perf_counter() - t0
    OUT.mkdir(parents=True, exist_ok=True)
    write_json(OUT / "error_rates.json", {"audits": a.audits, "budget": a.budget, "delta": DELTA,
                                          "alpha": 0.05, "beta": 0.2, "seed": a.seed,
                                          "seconds": elapsed, "rows": rows})  # fmt: skip
    print(f"{'access':9s} {'case':5s} {'gap':>6s} {'test':7s} {'typeI':>6s} {'typeII':>6s} "
          f"{'(alpha 0.05 / beta 0.20)':>24s} {'inc':>5s} {'meanQ':>7s} {'Wald':>7s} {'ratio':>6s}")
    for d in rows:
        o = d["outcomes"]
        lo, hi = d["error_interval"]
        t1 = "" if d["type_I"] is None else f"{d['type_I']:.3f}"
        t2 = "" if d["type_II"] is None else f"{d['type_II']:.3f}"
        wb, r = d["wald_lower_bound"], d["ratio_to_wald"]
        print(f"{d['access']:9s} {d['case']:5s} {d['pool']['gap']:6.3f} {d['test']:7s} "
              f"{t1:>6s} {t2:>6s} {f'95% CI [{lo:.3f}, {hi:.3f}]':>24s} "
              f"{o['inconclusive']:5.2f} {d['mean_queries']:7.1f} "
              f"{'inf' if wb is None else f'{wb:7.1f}':>7s} {'-' if r is None else f'{r:6.2f}':>6s}")
    plot(rows, OUT / "error_rates.png")
    print(f"\n{len(rows)} configurations x {a.audits} audits in {elapsed:.0f} s")


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    for ax, case, ref, what in zip(
        axes, ("below", "at", "above"), (0.05, 0.05, 0.2),
        ("type-I error (violation)", "type-I error (violation)", "type-II error (compliant)"),
        strict=True,
    ):  # fmt: skip
        sel = [d for d in rows if d["case"] == case]
        x = np.arange(len(sel))
        vals = [d["type_I"] if case != "above" else d["type_II"] for d in sel]
        ci = np.array([d["error_interval"] for d in sel])
        ax.bar(x, vals, color=["#2c3e50" if d["test"] == "glr" else "#2980b9"
                               if d["test"] == "betting" else "#7f8c8d" for d in sel])  # fmt: skip
        v = np.array(vals)
        ax.errorbar(x, vals, yerr=[np.maximum(v - ci[:, 0], 0), np.maximum(ci[:, 1] - v, 0)],
                    fmt="none", color="k", capsize=2)  # fmt: skip
        ax.axhline(ref, color="r", ls="--", label=f"nominal {ref}")
        ax.set_xticks(x, [f"{d['access'][:3]}\n{d['test']}" for d in sel], fontsize=7)
        ax.set_title(f"gap {case} delta: {what}", fontsize=9)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    main()
