"""Figure 4 by Monte Carlo, and budget arbitration as a two-armed bandit (Section 5.3, App. B).

Both parts run against the real platform server (``fairprobe platform serve``): one server per
configuration (honest; positive discrimination at the server's gamma GAMMA) answers the whole
Adult test pool once through BlackBox + cache; the audits then replay those answers by row
(``RowReplay``, checked against the live BlackBoxes on three seeds).

**Part 1 — Figure 4 estimated.** Budget t = 100 (the paper's), every split t_fraud in
{0, 5, ..., 50} (t_fair = t - t_fraud), REPS audits each (``run_two_source_audit``, consistency
detector only, no early stop, the paper's null p_phi). Measured: p_manip on the fairwashing server
(share of audits concluding manipulation) and epsilon_A on the honest server (the 95% quantile of
|DI_A - DI of the whole pool|). Next to them: Lemma 2's p_manip at the share of checked answers the
server flipped, and Section 4.1's epsilon_A = z sigma_A / sqrt(t_fair).

**Part 2 — two-armed bandit vs the fixed Pareto allocation**, budget T2, REPS audits per policy
and server. Arms: an A-only query (cost 1: sharpens the DI estimate) and a check (cost 2: one A
and one B answer; enters the DI estimate and the consistency count). Fixed policies: the splits
beta in BETAS (Section 5.3). The bandit (Thompson sampling on the inconsistency rate): after an
initial M0 checks, each round draws q from the Beta(1 + inconsistencies, 1 + consistent)
posterior and buys a batch of checks if q exceeds the midpoint between the honest rate
q0 = 1 - p and the rate q1 = q0 + gamma_chk (2p - 1) that Theorem 3's cheapest successful
fairwashing would produce, else a batch of A-only queries. The final test is Lemma 2's at the
realised number of checks (the valid null p = p_agree, alpha = 5%). Measured at equal budget:
detection probability (fairwashing server), false-alarm rate and DI RMSE (honest server), mean
checks bought.

Run: ``.venv/bin/python experiments/twosource/budget_arbitration.py [--quick]``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (  # noqa: E402
    RESULTS,
    RowReplay,
    a_decisions,
    b_decisions,
    check_replay,
    platform_sources,
    pool,
    write,
)

from fairprobe.access.cache import ResponseCache  # noqa: E402
from fairprobe.twosource import make_proxy, run_two_source_audit  # noqa: E402
from fairprobe.twosource.audit import stratified_sample  # noqa: E402
from fairprobe.twosource.theory import (  # noqa: E402
    _n_max_vec,
    di_sigma,
    flip_fraction,
    gamma_max,
    margin_of_error,
    n_max,
    p_manip,
)

GAMMA = 0.6  # the server's positive-discrimination rate (Lemma 1's gamma)
ALPHA = 0.05
T1 = 100
T2 = 400
BETAS = (0.2, 0.5, 0.76)
M0 = 10  # initial checks of the bandit
BATCH = 10  # budget units per bandit round


def part1(P: Any, proxy: Any, acc: Any, replays: dict[str, tuple[RowReplay, RowReplay]],
          di_pool: float, flip_share: float, reps: int) -> list[dict[str, Any]]:  # fmt: skip
    rows = []
    sig = di_sigma(*_rates(replays["none"][0].decisions, P))
    for t_fraud in range(0, T1 // 2 + 1, 5):
        det = np.zeros(reps, dtype=bool)
        err = np.empty(reps)
        for s in range(reps):
            ra, rb = replays["positive"]
            if t_fraud:
                r = run_two_source_audit(
                    ra, rb, P, proxy, budget=T1, t_fraud=t_fraud, seed=s, alpha=ALPHA,
                    detectors=("consistency",), early_stop=False, batch_size=max(t_fraud, 1),
                    null="accuracy", proxy_accuracy=acc,
                )  # fmt: skip
                det[s] = bool(r.detected_by)
            ha, hb = replays["none"]
            h = run_two_source_audit(
                ha, hb, P, proxy, budget=T1, t_fraud=t_fraud, seed=s, alpha=ALPHA,
                detectors=("consistency",), early_stop=False, batch_size=t_fraud,
                null="accuracy", proxy_accuracy=acc,
            ) if t_fraud else None  # fmt: skip
            if h is None:  # t_fraud = 0: the DI of t A-only answers
                idx = stratified_sample(P["sex"].to_numpy(dtype=object), T1,
                                        np.random.default_rng(s))
                err[s] = _di(ha.decisions[idx], P["sex"].to_numpy()[idx]) - di_pool
            else:
                err[s] = h.di_a.estimate - di_pool
        t_fair = T1 - t_fraud
        rows.append({
            "t_fraud": t_fraud, "t_fair": t_fair, "beta": (T1 - 2 * t_fraud) / T1,
            "p_manip_measured": float(det.mean()),
            "p_manip_se": float(det.std(ddof=1) / np.sqrt(reps)) if t_fraud else 0.0,
            "p_manip_lemma2": float(p_manip(t_fraud, acc.p_phi, flip_share, ALPHA)),
            "n_max": n_max(t_fraud, acc.p_phi, ALPHA),
            "epsilon_a_measured": float(np.nanquantile(np.abs(err), 0.95)),
            "epsilon_a_formula": float(margin_of_error(sig, t_fair, ALPHA)),
        })  # fmt: skip
        print(f"  t_fraud {t_fraud:3d}: p_manip {rows[-1]['p_manip_measured']:.3f} "
              f"(Lemma 2 {rows[-1]['p_manip_lemma2']:.3f}), eps_A {rows[-1]['epsilon_a_measured']:.3f} "
              f"(formula {rows[-1]['epsilon_a_formula']:.3f})", flush=True)  # fmt: skip
    return rows


def _rates(ya: np.ndarray, P: Any) -> tuple[float, float, float]:
    f = P["sex"].to_numpy() == "Female"
    return float(ya[f].mean()), float(ya[~f].mean()), float(f.mean())


def _di(ya: np.ndarray, sex: np.ndarray) -> float:
    f = sex == "Female"
    rm = ya[~f].mean()
    return float(ya[f].mean() / rm) if rm > 0 and f.any() else float("nan")


def simulate(policy: str, ya: np.ndarray, yb: np.ndarray, sex: np.ndarray, p_right: np.ndarray,
             p_test: float, q_mid: float, t: int, rng: np.random.Generator) -> tuple[bool, float, int]:  # fmt: skip
    """One audit of budget t under ``policy`` ("beta=x" or "bandit"): (detected, DI_A, checks)."""
    order = rng.permutation(ya.size)
    pos = 0
    a_rows: list[int] = []
    n_chk = n_inc = 0

    def check(k: int) -> None:
        nonlocal pos, n_chk, n_inc
        rows = order[pos: pos + k]
        pos += k
        hit = rng.random(k) < p_right[rows]  # the proxy's draw equals the true group
        n_inc += int(np.sum(~hit | (ya[rows] != yb[rows])))
        n_chk += k
        a_rows.extend(rows.tolist())

    def a_only(k: int) -> None:
        nonlocal pos
        a_rows.extend(order[pos: pos + k].tolist())
        pos += k

    if policy.startswith("beta="):
        beta = float(policy[5:])
        k = int(np.floor(t * (1 - beta) / 2 + 1e-9))
        check(k)
        a_only(t - 2 * k)
    else:
        budget = t
        check(min(M0, budget // 2))
        budget -= 2 * n_chk
        while budget >= 1:
            q = rng.beta(1 + n_inc, 1 + n_chk - n_inc)
            if q > q_mid and budget >= 2:
                k = min(BATCH // 2, budget // 2)
                check(k)
                budget -= 2 * k
            else:
                k = min(BATCH, budget)
                a_only(k)
                budget -= k
    detected = n_chk > 0 and n_inc > int(_n_max_vec(np.array([n_chk]), p_test, ALPHA)[0])
    rows = np.asarray(a_rows)
    return detected, _di(ya[rows], sex[rows]), n_chk


def part2(P: Any, acc: Any, answers: dict[str, np.ndarray], yb: np.ndarray, p_right: np.ndarray,
          di_pool: float, reps: int) -> dict[str, Any]:  # fmt: skip
    sex = P["sex"].to_numpy()
    p = acc.p_agree
    ru, rp, pu = _rates(answers["none"], P)
    eps_full = float(margin_of_error(di_sigma(ru, rp, pu), T2, ALPHA))
    g = gamma_max(ru, rp, eps_full)
    g_chk = float(flip_fraction(1.0 if np.isinf(g) else g, ru, rp, pu))
    q0 = 1 - p
    q_mid = q0 + 0.5 * g_chk * (2 * p - 1)
    out: dict[str, Any] = {"q0": q0, "q_mid": q_mid, "gamma_chk_theorem3": g_chk, "policies": {}}
    for policy in [f"beta={b}" for b in BETAS] + ["bandit"]:
        res: dict[str, Any] = {}
        for cfg, ya in answers.items():
            rng = np.random.default_rng(12345)
            sims = [simulate(policy, ya, yb, sex, p_right, p, q_mid, T2, rng) for _ in range(reps)]
            det = np.array([s[0] for s in sims])
            di = np.array([s[1] for s in sims])
            chk = np.array([s[2] for s in sims])
            res[cfg] = {
                "detection_rate": float(det.mean()),
                "detection_se": float(det.std(ddof=1) / np.sqrt(reps)),
                "di_rmse": float(np.sqrt(np.nanmean((di - di_pool) ** 2))),
                "di_bias": float(np.nanmean(di) - di_pool),
                "mean_checks": float(chk.mean()),
            }
        out["policies"][policy] = res
        h, m = res["none"], res["positive"]
        print(f"  {policy:<9}: detection {m['detection_rate']:.3f}±{m['detection_se']:.3f} "
              f"(checks {m['mean_checks']:.0f}) | honest: false alarms {h['detection_rate']:.3f}, "
              f"DI RMSE {h['di_rmse']:.4f} (checks {h['mean_checks']:.0f})", flush=True)
    return out


def main() -> None:
    quick = "--quick" in sys.argv
    reps1, reps2 = (40, 100) if quick else (120, 600)
    t0 = time.time()
    P = pool()
    sex = P["sex"].to_numpy(dtype=object)
    proxy = make_proxy("name")
    acc = proxy.accuracy(P, sex)
    p_pf = proxy.probabilities(P)
    p_right = np.where(sex == "Female", p_pf[:, 0], p_pf[:, 1])
    cache = ResponseCache(":memory:")
    replays: dict[str, tuple[RowReplay, RowReplay]] = {}
    answers: dict[str, np.ndarray] = {}
    yb = None
    for mode, g in (("none", 0.0), ("positive", GAMMA)):
        with platform_sources(cache, mode, g, warm=P) as (api, ui):
            ya, yb = a_decisions(api, P), b_decisions(ui, P)
            replays[mode] = (RowReplay(ya), RowReplay(yb))
            answers[mode] = ya
            check_replay(api, ui, *replays[mode], P, proxy)
    assert yb is not None
    di_pool = _di(answers["none"], P["sex"].to_numpy())
    flip_share = float(np.mean(answers["positive"] != answers["none"]))
    print(f"pool DI (honest A) {di_pool:.4f}; server gamma {GAMMA} flips {flip_share:.2%} of the "
          f"answers; p_phi {acc.p_phi:.4f}, p_agree {acc.p_agree:.4f}")  # fmt: skip
    print(f"Part 1 - Figure 4 by Monte Carlo (t = {T1}, {reps1} audits per split)")
    rows1 = part1(P, proxy, acc, replays, di_pool, flip_share, reps1)
    print(f"Part 2 - bandit vs fixed allocations (t = {T2}, {reps2} audits per policy and server)")
    res2 = part2(P, acc, answers, yb, p_right, di_pool, reps2)
    out = {
        "experiment": "Figure 4 by Monte Carlo; two-armed bandit vs fixed Pareto allocation",
        "server_gamma": GAMMA, "flip_share": flip_share, "pool_di": di_pool,
        "proxy": acc.to_dict(), "alpha": ALPHA,
        "part1": {"t": T1, "reps": reps1, "rows": rows1,
                  "paper": {"beta": 0.76, "epsilon_a": 0.042, "p_manip": 0.98}},
        "part2": {"t": T2, "reps": reps2, "m0": M0, "batch": BATCH, **res2},
        "seconds": time.time() - t0,
    }  # fmt: skip
    name = "budget_arbitration_quick" if quick else "budget_arbitration"
    write(f"{name}.json", out)
    _plot(rows1, RESULTS / f"{name}.png")
    print(f"({time.time() - t0:.0f} s) wrote {RESULTS / (name + '.json')}")


def _plot(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4.3))
    r = [x for x in rows if x["t_fraud"] > 0]
    ax.errorbar([x["epsilon_a_measured"] for x in r], [x["p_manip_measured"] for x in r],
                yerr=[1.96 * x["p_manip_se"] for x in r], fmt="o", label="measured on the server")
    ax.plot([x["epsilon_a_formula"] for x in r], [x["p_manip_lemma2"] for x in r], "s--",
            label="formulas (Sec. 4.1 eps_A, Lemma 2 p_manip)")  # fmt: skip
    ax.set_xlabel("epsilon_A (DI margin, 95%)")
    ax.set_ylabel("p_manip")
    ax.set_title("Figure 4 estimated: t = 100, splits t_fraud = 5..50", fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    main()
