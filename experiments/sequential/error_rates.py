"""Measured error rates and queries of every sequential test on finite pools of 2 x 5,000.

    .venv/bin/python experiments/sequential/error_rates.py [--audits 500] [--seeds 4]

Pools (the paper's setting): two groups of 5,000 members built deterministically from quantiles,
so that the pool's gap in the audited functional is exactly ``0``, ``delta - 0.05``, ``delta``
(H0: every "violation" is a type-I error), ``delta + 0.05`` or ``delta + 0.1`` (H1: every
"compliant" is a type-II error); delta = 0.1, alpha = 0.05, beta = 0.2, budget 4,000, SP:

- decisions: exact counts of positives (rates 0.30 + gap in group a, 0.30 in group b);
- scores: Beta(4 m, 4 (1 - m)) quantiles (m = 0.30 + gap, 0.30), shifted to the exact gap;
- logits: Normal(mu, 1.5) quantiles (mu = -0.8 + gap, -0.8), centred to the exact gap
  (the gap is in logit units).

Tests: ``mixture`` (the default), ``glr-wald`` (the paper), ``betting`` (Chugg et al.),
``fixed`` (all 4,000 queries) and ``prpl-eb``, a faithful reimplementation of the predictable
plug-in empirical-Bernstein confidence sequence of Waudby-Smith and Ramdas (JRSSB 2024, eq. (13)
to (15), ``c = 1/2``) on the paired differences of alternating queries, used as a tolerance
test (violation once the 1 - alpha CS misses ``[-delta, delta]``; compliant once the 1 - beta CS
lies inside it).

Each cell: ``--seeds`` seeds x ``--audits`` random query orders (>= 2,000 audits); shares pooled
over seeds with their binomial standard error, mean queries with the standard error of the mean.
Also the paper's GLR at gap = delta for decisions over ``--glr-boundary-audits`` orders (the
figure quoted in the docs). Writes ``error_rates.json`` and ``error_rates.png`` under
``experiments/results/sequential/`` and prints the table.
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path
from typing import Any

import numpy as np
from scipy.stats import beta as beta_dist
from scipy.stats import norm

from fairprobe.report import write_json
from fairprobe.sequential.base import COMPLIANT, INCONCLUSIVE, VIOLATION
from fairprobe.sequential.mixture import pair_orders
from fairprobe.sequential.pool import AuditPool, make_orders, run_pool

OUT = Path("experiments/results/sequential")
N_GROUP, DELTA, ALPHA, BETA = 5_000, 0.1, 0.05, 0.2
GAPS = (("centre", 0.0), ("below", DELTA - 0.05), ("at", DELTA), ("above", DELTA + 0.05),
        ("far", DELTA + 0.1))  # fmt: skip
TESTS = ("mixture", "glr-wald", "betting", "fixed", "prpl-eb")
# the first measurement of these tests (decisions, 200 orders each), printed beside the new one
ISSUE = {
    ("glr-wald", "centre"): "0.12 / 446 q",
    ("glr-wald", "at"): "0.184 +- 0.004",
    ("glr-wald", "above"): "power 0.97 / 1,302 q",
    ("glr-wald", "far"): "394 q",
    ("betting", "above"): "power 0.52 / 2,862 q",
    ("betting", "far"): "949 q",
}


def synthetic_pool(access: str, gap: float, n: int = N_GROUP) -> AuditPool:
    """Two groups of ``n``: group a (first) has the higher mean, by exactly ``gap``."""
    in_a = np.r_[np.ones(n, dtype=bool), np.zeros(n, dtype=bool)]
    u = (np.arange(n) + 0.5) / n
    if access == "decisions":
        xa = np.zeros(n)
        xa[: int(round((0.30 + gap) * n))] = 1
        xb = np.zeros(n)
        xb[: int(round(0.30 * n))] = 1
        return AuditPool(in_a=in_a, group_names=("a", "b"), decisions=np.r_[xa, xb])
    if access == "scores":
        ma, mb = 0.30 + gap, 0.30
        xa = beta_dist.ppf(u, 4 * ma, 4 * (1 - ma))
        xb = beta_dist.ppf(u, 4 * mb, 4 * (1 - mb))
        xa = np.clip(xa - xa.mean() + ma, 0, 1)
        xa = xa - xa.mean() + ma  # tiny clip correction, still inside [0, 1]
        xb = xb - xb.mean() + mb
        return AuditPool(in_a=in_a, group_names=("a", "b"), scores=np.r_[xa, xb])
    xa = norm.ppf(u, -0.8 + gap, 1.5)
    xb = norm.ppf(u, -0.8, 1.5)
    xa = xa - xa.mean() - 0.8 + gap
    xb = xb - xb.mean() - 0.8
    return AuditPool(in_a=in_a, group_names=("a", "b"), logits=np.r_[xa, xb])


# ------------------------------------------------------------- the published CS, reimplemented
def prpl_eb_bounds(y: np.ndarray, alpha: float, c: float = 0.5) -> tuple[np.ndarray, np.ndarray]:
    """Predictable plug-in empirical-Bernstein CS for the mean of ``y`` in [0, 1] (per row).

    Waudby-Smith and Ramdas (2024), eq. (13)-(15): ``mu_t = (1/2 + sum x) / (t + 1)``,
    ``sigma2_t = (1/4 + sum (x_i - mu_i)^2) / (t + 1)``, ``lambda_t = min(sqrt(2 log(2 / alpha)
    / (sigma2_{t-1} t log(1 + t))), c)``, ``v_i = 4 (x_i - mu_{i-1})^2``, ``psi_E(l) = (-log(1 -
    l) - l) / 4``, centre ``sum l x / sum l``, half-width ``(log(2 / alpha) + sum v psi_E(l)) /
    sum l``; running intersection.
    """
    r, k = y.shape
    t = np.arange(1, k + 1, dtype=float)
    mu = (0.5 + np.cumsum(y, 1)) / (t + 1)
    mu_prev = np.concatenate([np.full((r, 1), 0.5), mu[:, :-1]], 1)
    s2 = (0.25 + np.cumsum((y - mu) ** 2, 1)) / (t + 1)
    s2_prev = np.concatenate([np.full((r, 1), 0.25), s2[:, :-1]], 1)
    lam = np.minimum(np.sqrt(2 * math.log(2 / alpha) / (s2_prev * t * np.log1p(t))), c)
    v = 4 * (y - mu_prev) ** 2
    psi = (-np.log1p(-lam) - lam) / 4
    sl = np.cumsum(lam, 1)
    centre = np.cumsum(lam * y, 1) / sl
    half = (math.log(2 / alpha) + np.cumsum(v * psi, 1)) / sl
    low = np.maximum.accumulate(centre - half, 1)
    high = np.minimum.accumulate(centre + half, 1)
    return low, high


def run_prpl_eb(pool: AuditPool, access: str, budget: int, repeats: int, seed: int) -> dict:
    in_a, x = pool.observations("sp", access)
    lo, hi = (0.0, 1.0) if access != "logits" else (float(x.min()), float(x.max()))
    w = hi - lo
    orders = make_orders(len(x), budget, repeats, seed, in_a=in_a)
    queries = np.empty(repeats, dtype=np.int64)
    codes = np.empty(repeats, dtype=np.int8)
    for s in range(0, repeats, 500):
        o = orders[s : s + 500]
        xa, xb, n_pairs, when = pair_orders(in_a[o], x[o])
        y = (xa - xb + w) / (2 * w)  # the gap g maps to (g + w) / (2 w) in [0, 1]
        out = []
        for level in (ALPHA, BETA):
            low, high = prpl_eb_bounds(y, level)
            out.append((low * 2 * w - w, high * 2 * w - w))
        (la, ha), (lb, hb) = out
        viol = (la > DELTA) | (ha < -DELTA)
        comp = (lb >= -DELTA) & (hb <= DELTA)
        stop = viol | comp
        has = stop.any(1)
        kk = np.argmax(stop, 1)
        rows = np.arange(len(o))
        queries[s : s + 500] = np.where(has, when[rows, kk], o.shape[1])
        codes[s : s + 500] = np.where(
            has, np.where(viol[rows, kk], VIOLATION, COMPLIANT), INCONCLUSIVE
        )
    return {"queries": queries, "codes": codes}


# ------------------------------------------------------------------------------------ the run
def cell(test: str, pool: AuditPool, access: str, budget: int, audits: int, seeds: int) -> dict:
    qs, cs = [], []
    for s in range(seeds):
        if test == "prpl-eb":
            r = run_prpl_eb(pool, access, budget, audits, seed=1000 + s)
            qs.append(r["queries"])
            cs.append(r["codes"])
        else:
            res = run_pool(pool, metric="sp", access=access, test=test, tolerance=DELTA,
                           budget=budget, repeats=audits, seed=1000 + s, alpha=ALPHA, beta=BETA)  # fmt: skip
            qs.append(res.queries)
            cs.append(res.codes)
    q = np.concatenate(qs).astype(float)
    c = np.concatenate(cs)
    n = len(q)
    shares = {o: float((c == i).mean()) for i, o in enumerate(("violation", "compliant",
                                                                  "inconclusive"))}  # fmt: skip
    return {
        "audits": n,
        "seeds": seeds,
        "shares": shares,
        "share_se": {o: math.sqrt(p * (1 - p) / n) for o, p in shares.items()},
        "per_seed_violation": [float((x == VIOLATION).mean()) for x in cs],
        "mean_queries": float(q.mean()),
        "mean_queries_se": float(q.std(ddof=1) / math.sqrt(n)),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--audits", type=int, default=500, help="orders per seed and cell")
    ap.add_argument("--seeds", type=int, default=4)
    ap.add_argument("--budget", type=int, default=4000)
    ap.add_argument("--glr-boundary-audits", type=int, default=10_000)
    ap.add_argument("--access", default="decisions,scores,logits")
    a = ap.parse_args()
    t0 = time.perf_counter()
    rows: list[dict[str, Any]] = []
    for access in a.access.split(","):
        for label, gap in GAPS:
            pool = synthetic_pool(access, gap)
            for test in TESTS:
                d = cell(test, pool, access, a.budget, a.audits, a.seeds)
                d.update(access=access, case=label, gap=gap, test=test)
                rows.append(d)
                print(_line(d), flush=True)
    glr_at = None
    if a.glr_boundary_audits and "decisions" in a.access:
        k = max(1, a.glr_boundary_audits // 2000)
        glr_at = cell("glr-wald", synthetic_pool("decisions", DELTA), "decisions", a.budget,
                      a.glr_boundary_audits // k, k)  # fmt: skip
        p, se = glr_at["shares"]["violation"], glr_at["share_se"]["violation"]
        print(f"\nglr-wald, decisions, gap = delta: type-I {p:.3f} +- {se:.3f} over "
              f"{glr_at['audits']} audits ({k} seeds; per seed "
              f"{', '.join(f'{v:.3f}' for v in glr_at['per_seed_violation'])})")  # fmt: skip
    elapsed = time.perf_counter() - t0
    OUT.mkdir(parents=True, exist_ok=True)
    write_json(OUT / "error_rates.json", {
        "pool": f"2 x {N_GROUP}", "delta": DELTA, "alpha": ALPHA, "beta": BETA,
        "budget": a.budget, "audits_per_seed": a.audits, "seeds": a.seeds, "seconds": elapsed,
        "rows": rows, "glr_wald_at_delta_decisions": glr_at,
    })  # fmt: skip
    summary(rows)
    plot(rows, OUT / "error_rates.png")
    print(f"\n{len(rows)} cells in {elapsed:.0f} s")


def _line(d: dict[str, Any]) -> str:
    sh, se = d["shares"], d["share_se"]
    err = "type-I" if d["gap"] <= DELTA else "power"
    val = sh["violation"]
    extra = f"  type-II {sh['compliant']:.3f}" if d["gap"] > DELTA else ""
    issue = ISSUE.get((d["test"], d["case"])) if d["access"] == "decisions" else None
    return (f"{d['access']:9s} {d['case']:6s} gap {d['gap']:.2f} {d['test']:8s} {err:6s} "
            f"{val:.3f} +- {se['violation']:.3f}{extra}  inconclusive {sh['inconclusive']:.3f}  "
            f"mean queries {d['mean_queries']:7.1f} +- {d['mean_queries_se']:.1f}"
            + (f"   [first measured: {issue}]" if issue else ""))  # fmt: skip


def summary(rows: list[dict[str, Any]]) -> None:
    by = {(d["access"], d["case"], d["test"]): d for d in rows}
    print("\nthe default against the targets (decisions):")
    m, g = by.get(("decisions", "far", "mixture")), by.get(("decisions", "far", "glr-wald"))
    if m and g:
        print(f"  mean queries at delta + 0.1: mixture {m['mean_queries']:.0f}, glr-wald "
              f"{g['mean_queries']:.0f}, ratio {m['mean_queries'] / g['mean_queries']:.2f} "
              "(target <= 1.5)")  # fmt: skip
    m = by.get(("decisions", "above", "mixture"))
    if m:
        print(f"  power at delta + 0.05 within the budget: {m['shares']['violation']:.3f} "
              f"+- {m['share_se']['violation']:.3f} (target >= 0.8)")  # fmt: skip


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    accesses = sorted({d["access"] for d in rows}, key=["decisions", "scores", "logits"].index)
    fig, axes = plt.subplots(2, len(accesses), figsize=(4.6 * len(accesses), 7), squeeze=False)
    colours = dict(zip(TESTS, ("#c0392b", "#2c3e50", "#2980b9", "#7f8c8d", "#8e44ad"),
                       strict=True))  # fmt: skip
    for j, access in enumerate(accesses):
        for test in TESTS:
            sel = [d for d in rows if d["access"] == access and d["test"] == test]
            gaps = [d["gap"] for d in sel]
            v = [d["shares"]["violation"] for d in sel]
            e = [2 * d["share_se"]["violation"] for d in sel]
            axes[0, j].errorbar(gaps, v, yerr=e, marker="o", label=test, color=colours[test],
                                capsize=2)  # fmt: skip
            axes[1, j].plot(gaps, [d["mean_queries"] for d in sel], marker="o", label=test,
                            color=colours[test])  # fmt: skip
        axes[0, j].axhline(ALPHA, color="r", ls=":", lw=1)
        axes[0, j].axhline(1 - BETA, color="g", ls=":", lw=1)
        axes[0, j].axvline(DELTA, color="k", ls="--", lw=0.8)
        axes[1, j].axvline(DELTA, color="k", ls="--", lw=0.8)
        axes[0, j].set_title(f"{access}: share 'violation' (+- 2 s.e.)", fontsize=9)
        axes[1, j].set_title(f"{access}: mean queries (budget 4,000)", fontsize=9)
        axes[1, j].set_xlabel("pool gap")
    axes[0, 0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    main()
