"""Detection power p_manip(gamma) of the consistency test, measured against the platform server.

For each fairwashing rate of the server (positive discrimination, Lemma 1's gamma: the share of
the women's negative answers that A flips) one server process answers the whole Adult test pool
once (BlackBox + cache); then 500 audits per point (t_fraud in {50, 100, 200, 500} checks, all A
queries checked: budget 2 t_fraud, seeds 0..499 vary the query sample and the proxy draws) run
in process on those answers, with the name proxy.

Printed next to each measured power:
* Lemma 2 as printed, p_manip(t_fraud, p, gamma_chk), with gamma_chk the share of answers the
  server actually flipped on the pool;
* the binomial at the inconsistency rate measured exactly on the pool (what Lemma 2 becomes when
  its model of inconsistencies is replaced by the real one).
Two nulls: ``agree`` (the audit's default, p = p_agree) and ``accuracy`` (the paper's p_phi),
and the ``conditional`` detector (exact Poisson-binomial test on the pairs whose proxy draw hit).

Run: ``.venv/bin/python experiments/twosource/detection_power.py`` (about 30 minutes on the
shared 2-core machine).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (  # noqa: E402
    RowReplay,
    a_decisions,
    b_decisions,
    check_replay,
    platform_sources,
    pool,
    write,
)
from scipy import stats as sps  # noqa: E402

from fairprobe.access.cache import ResponseCache  # noqa: E402
from fairprobe.twosource import make_proxy, run_two_source_audit  # noqa: E402
from fairprobe.twosource.theory import n_max, p_manip  # noqa: E402

GAMMAS = (0.0, 0.1, 0.2, 0.35, 0.5, 0.75, 1.0)
T_FRAUD = (50, 100, 200, 500)
REPS = 500
ALPHA = 0.05


def main() -> None:
    t0 = time.time()
    P = pool()
    sex = P["sex"].to_numpy(dtype=object)
    proxy = make_proxy("name")
    acc = proxy.accuracy(P, sex)
    p_pf = proxy.probabilities(P)
    p_right = np.where(sex == "Female", p_pf[:, 0], p_pf[:, 1])  # P(draw = true sex)
    cache = ResponseCache(":memory:")
    honest_a = None
    rows = []
    for g in GAMMAS:
        mode = "none" if g == 0 else "positive"
        with platform_sources(cache, mode, g, warm=P) as (api, ui):
            ya, yb = a_decisions(api, P), b_decisions(ui, P)
            ra, rb = RowReplay(ya), RowReplay(yb)
            if g in (0.0, 0.35):
                check_replay(api, ui, ra, rb, P, proxy)
        if honest_a is None:
            honest_a = ya
        flip_share = float(np.mean(ya != honest_a))
        # exact per-row inconsistency probability: the draw misses the sex, or it hits and the
        # answers differ
        q_rate = float(np.mean((1 - p_right) + p_right * (ya != yb)))
        for t in T_FRAUD:
            n_inc = np.empty(REPS, dtype=np.int64)
            p_cond = np.empty(REPS)
            for s in range(REPS):
                r = run_two_source_audit(
                    ra, rb, P, proxy, budget=2 * t, t_fraud=t, seed=s, alpha=ALPHA,
                    detectors=("consistency", "conditional"), early_stop=False, batch_size=t,
                    proxy_accuracy=acc,
                )  # fmt: skip
                n_inc[s] = r.consistency.details["n_inconsistent"]  # type: ignore[union-attr]
                p_cond[s] = r.outcome("conditional").p_value  # type: ignore[union-attr]
            row = {
                "gamma": g,
                "strategy": mode,
                "flip_share": flip_share,
                "inconsistency_rate": q_rate,
                "t_fraud": t,
                "reps": REPS,
            }
            for null, p in (("agree", acc.p_agree), ("accuracy", acc.p_phi)):
                nm = n_max(t, p, ALPHA)
                det = n_inc > nm
                row[null] = {
                    "p": p,
                    "n_max": nm,
                    "measured": float(det.mean()),
                    "measured_se": float(det.std(ddof=1) / np.sqrt(REPS)),
                    "lemma2": float(p_manip(t, p, flip_share, ALPHA)),
                    "binomial_at_measured_rate": float(sps.binom.sf(nm, t, q_rate)),
                }
            det_c = p_cond < ALPHA
            row["conditional"] = {
                "measured": float(det_c.mean()),
                "measured_se": float(det_c.std(ddof=1) / np.sqrt(REPS)),
            }
            rows.append(row)
            print(
                f"gamma {g:4.2f} (flipped {flip_share:6.2%}) t_fraud {t:3d}: measured "
                f"{row['agree']['measured']:.3f} [agree] {row['accuracy']['measured']:.3f} "
                f"[paper null] {row['conditional']['measured']:.3f} [conditional] | Lemma 2 "
                f"{row['agree']['lemma2']:.3f} | binomial at measured "
                f"rate {row['agree']['binomial_at_measured_rate']:.3f}  ({time.time() - t0:.0f}s)",
                flush=True,
            )
    out = {
        "experiment": "detection power of the consistency test against the platform server",
        "proxy": acc.to_dict(),
        "alpha": ALPHA,
        "reps": REPS,
        "rows": rows,
        "seconds": time.time() - t0,
    }
    write("detection_power.json", out)
    _plot(rows, acc.p_agree)
    _table(rows, acc)


def _table(rows: list[dict], acc: object) -> None:
    print("\nDetection power (share of 500 audits concluding manipulation), name proxy,")
    print(f"p_phi = {acc.p_phi:.4f} (paper: 0.91), p_agree = {acc.p_agree:.4f}")  # type: ignore[attr-defined]
    print(
        " gamma  flipped  t_fraud | measured(agree)  Lemma2  binom@rate | paper null | conditional"
    )
    for r in rows:
        a, b = r["agree"], r["accuracy"]
        print(
            f" {r['gamma']:5.2f}  {r['flip_share']:6.2%}  {r['t_fraud']:7d} | "
            f"{a['measured']:8.3f}±{a['measured_se']:.3f}  {a['lemma2']:6.3f}  "
            f"{a['binomial_at_measured_rate']:9.3f} | {b['measured']:10.3f} | "
            f"{r['conditional']['measured']:.3f}"
        )


def _plot(rows: list[dict], p_agree: float) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    colors = dict(zip(T_FRAUD, ("tab:blue", "tab:orange", "tab:green", "tab:red"), strict=True))
    for t in T_FRAUD:
        rs = [r for r in rows if r["t_fraud"] == t]
        x = [r["flip_share"] for r in rs]
        ax.errorbar(x, [r["agree"]["measured"] for r in rs],
                    yerr=[1.96 * r["agree"]["measured_se"] for r in rs], fmt="o",
                    color=colors[t], label=f"measured, t_fraud={t}")  # fmt: skip
        xs = np.linspace(0, max(x), 100)
        ax.plot(xs, p_manip(t, p_agree, xs, ALPHA), "-", color=colors[t], alpha=0.6)
        ax.plot(x, [r["agree"]["binomial_at_measured_rate"] for r in rs], ":", color=colors[t])
        ax.plot(
            x, [r["conditional"]["measured"] for r in rs], "s--", ms=3, color=colors[t], alpha=0.5
        )
    ax.axhline(ALPHA, color="grey", lw=0.8)
    ax.set_xlabel("share of A's answers flipped by the server (positive discrimination)")
    ax.set_ylabel("p_manip")
    ax.set_title(
        "Power: dots measured (500 audits), lines Lemma 2, squares conditional test", fontsize=9
    )
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(
        Path(__file__).resolve().parents[1] / "results" / "twosource" / "detection_power.png",
        dpi=120,
    )


if __name__ == "__main__":
    main()
