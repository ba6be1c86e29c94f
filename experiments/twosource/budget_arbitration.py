"""Figure 4 of the two-source paper (Section 5.3) by Monte Carlo on the platform server.

One server per configuration (honest; positive discrimination at the server's gamma GAMMA)
answers the whole Adult test pool once through BlackBox + cache; the audits then replay those
answers by row (``RowReplay``, checked against the live BlackBoxes on three seeds).

Budget t = 100 (the paper's), every split t_fraud in {0, 5, ..., 50} (t_fair = t - t_fraud),
REPS audits each (``run_two_source_audit``, consistency detector only, no early stop, the
paper's null p_phi). Measured: p_manip on the fairwashing server (share of audits concluding
manipulation) and epsilon_A on the honest server (the 95% quantile of |DI_A - DI of the whole
pool|). Next to them, three predictions, all at the same n_max (the paper's test):

* Lemma 2 as printed: a binomial at p^gamma = gamma p + (1 - gamma)(1 - p), gamma the share of
  A's answers the server flipped;
* the binomial at the per-check inconsistency rate measured exactly on the pool
  (``1 - mean_i p_i 1[y_A,i = y_B,i]``, p_i the proxy's chance to draw the true group);
* the same with the checks' group counts fixed, as the audit stratifies them: one binomial per
  group at that group's measured rate (women's pairs are inconsistent far more often: a less
  accurate proxy, and only their answers are flipped);
* Section 4.1's epsilon_A = z sigma_A / sqrt(t_fair).

The gap between Lemma 2 and the measured rate is split exactly into its two causes: the honest
inconsistency rate exceeds 1 - p (the auditor's and the platform's coins on h/y names), and a
flip changes the inconsistency of a pair by p_i (2 1[y_A = y_B] - 1), not by 2p - 1 on average
(Lemma 2 assumes a flip on a pair the proxy got wrong makes it consistent; it stays inconsistent).

The two-armed bandit of Appendix B is a library policy now
(:class:`fairprobe.twosource.bandit.ThompsonSplit`); it is measured in the large regime by
``experiments/twosource/large_regime.py``.

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
    di_sigma,
    margin_of_error,
    n_max,
    p_manip,
)

GAMMA = 0.6  # the server's positive-discrimination rate (Lemma 1's gamma)
ALPHA = 0.05
T1 = 100


def part1(P: Any, proxy: Any, acc: Any, replays: dict[str, tuple[RowReplay, RowReplay]],
          di_pool: float, flip_share: float, reps: int, q_true: float,
          q_by_group: dict[str, float]) -> list[dict[str, Any]]:  # fmt: skip
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
            "p_manip_binomial_true_rate": _binom_power(t_fraud, q_true, acc.p_phi),
            "p_manip_stratified_true_rates": _stratified_power(
                t_fraud, q_by_group, P["sex"].to_numpy(dtype=object), acc.p_phi),
            "n_max": n_max(t_fraud, acc.p_phi, ALPHA),
            "epsilon_a_measured": float(np.nanquantile(np.abs(err), 0.95)),
            "epsilon_a_formula": float(margin_of_error(sig, t_fair, ALPHA)),
        })  # fmt: skip
        print(f"  t_fraud {t_fraud:3d}: p_manip {rows[-1]['p_manip_measured']:.3f} "
              f"+- {rows[-1]['p_manip_se']:.3f} (Lemma 2 {rows[-1]['p_manip_lemma2']:.3f}, "
              f"binomial at the true rate {rows[-1]['p_manip_binomial_true_rate']:.3f}, stratified "
              f"{rows[-1]['p_manip_stratified_true_rates']:.3f}), eps_A {rows[-1]['epsilon_a_measured']:.3f} "
              f"(formula {rows[-1]['epsilon_a_formula']:.3f})", flush=True)  # fmt: skip
    return rows


def _stratified_power(t_fraud: int, q_by_group: dict[str, float], sex: np.ndarray,
                      p_phi: float) -> float:  # fmt: skip
    """P(more than n_max inconsistencies) when the checks are stratified by group, as the audit
    draws them: a sum of one binomial per group at its own rate (fixed group counts)."""
    from scipy import stats

    if t_fraud == 0:
        return 0.0
    rng = np.random.default_rng(0)  # the group counts of the sample do not depend on the seed
    a_idx = stratified_sample(sex, T1 - t_fraud, rng)
    chk = a_idx[stratified_sample(sex[a_idx], t_fraud, rng)]
    pmf = np.ones(1)
    for g, q in q_by_group.items():
        n = int(np.sum(sex[chk] == g))
        pmf = np.convolve(pmf, stats.binom.pmf(np.arange(n + 1), n, q))
    return float(pmf[n_max(t_fraud, p_phi, ALPHA) + 1:].sum())


def _binom_power(t_fraud: int, q: float, p_phi: float) -> float:
    """P(more than n_max inconsistencies) for a binomial at rate q (the paper's n_max)."""
    from scipy import stats

    if t_fraud == 0:
        return 0.0
    return float(stats.binom.sf(n_max(t_fraud, p_phi, ALPHA), t_fraud, q))


def _rates(ya: np.ndarray, P: Any) -> tuple[float, float, float]:
    f = P["sex"].to_numpy() == "Female"
    return float(ya[f].mean()), float(ya[~f].mean()), float(f.mean())


def _di(ya: np.ndarray, sex: np.ndarray) -> float:
    f = sex == "Female"
    rm = ya[~f].mean()
    return float(ya[f].mean() / rm) if rm > 0 and f.any() else float("nan")


def main() -> None:
    quick = "--quick" in sys.argv
    reps1 = 40 if quick else 120
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
    flipped = answers["positive"] != answers["none"]
    flip_share = float(np.mean(flipped))
    p = acc.p_phi
    # per-check inconsistency rates, exact over the pool (the proxy's coin integrated out)
    q_honest = float(1 - np.mean(p_right * (answers["none"] == yb)))
    q_true = float(1 - np.mean(p_right * (answers["positive"] == yb)))
    q_lemma2 = flip_share * p + (1 - flip_share) * (1 - p)
    inc_fw = 1 - p_right * (answers["positive"] == yb)
    q_by_group = {g: float(inc_fw[sex == g].mean()) for g in ("Female", "Male")}
    causes = {
        "honest_rate_above_1_minus_p": q_honest - (1 - p),
        "flip_effect_true_minus_lemma2": (q_true - q_honest) - flip_share * (2 * p - 1),
    }
    print(f"pool DI (honest A) {di_pool:.4f}; server gamma {GAMMA} flips {flip_share:.2%} of the "
          f"answers; p_phi {acc.p_phi:.4f}, p_agree {acc.p_agree:.4f}")  # fmt: skip
    print(f"per-check inconsistency rate: honest {q_honest:.4f} (1 - p_phi {1 - p:.4f}); under "
          f"fairwashing {q_true:.4f} against Lemma 2's {q_lemma2:.4f}; gap "
          f"{q_true - q_lemma2:+.4f} = honest rate {causes['honest_rate_above_1_minus_p']:+.4f} "
          f"+ flips {causes['flip_effect_true_minus_lemma2']:+.4f}")  # fmt: skip
    print(f"Figure 4 by Monte Carlo (t = {T1}, {reps1} audits per split)")
    print(f"  by group under fairwashing: women {q_by_group['Female']:.4f}, men "
          f"{q_by_group['Male']:.4f} (the audit stratifies its checks by group)")
    rows1 = part1(P, proxy, acc, replays, di_pool, flip_share, reps1, q_true, q_by_group)
    out = {
        "experiment": "Figure 4 by Monte Carlo, with Lemma 2 and the binomial at the true rate",
        "server_gamma": GAMMA, "flip_share": flip_share, "pool_di": di_pool,
        "proxy": acc.to_dict(), "alpha": ALPHA,
        "inconsistency_rate": {"honest": q_honest, "fairwashed": q_true, "lemma2": q_lemma2,
                               "one_minus_p_phi": 1 - p, "gap_causes": causes,
                               "fairwashed_by_group": q_by_group},
        "part1": {"t": T1, "reps": reps1, "rows": rows1,
                  "paper": {"beta": 0.76, "epsilon_a": 0.042, "p_manip": 0.98}},
        "seconds": time.time() - t0,
    }  # fmt: skip
    name = "budget_arbitration_quick" if quick else "budget_arbitration"
    write(f"{name}.json", out)
    _plot(rows1, RESULTS / f"{name}.png", q_true, q_lemma2)
    print(f"({time.time() - t0:.0f} s) wrote {RESULTS / (name + '.json')}")


def _plot(rows: list[dict[str, Any]], path: Path, q_true: float, q_lemma2: float) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    r = [x for x in rows if x["t_fraud"] > 0]
    k = [x["t_fraud"] for x in r]
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(11, 4.3))
    ax.errorbar(k, [x["p_manip_measured"] for x in r], yerr=[1.96 * x["p_manip_se"] for x in r],
                fmt="o", color="black", label="measured on the server (95% bars)")  # fmt: skip
    ax.plot(k, [x["p_manip_lemma2"] for x in r], "s--", label=f"Lemma 2 (rate {q_lemma2:.3f})")
    ax.plot(k, [x["p_manip_binomial_true_rate"] for x in r], "^:",
            label=f"binomial at the measured rate {q_true:.3f}")  # fmt: skip
    ax.plot(k, [x["p_manip_stratified_true_rates"] for x in r], "v-.",
            label="binomials per group (stratified checks)")  # fmt: skip
    ax.set_xlabel("checks t_fraud (t = 100; same n_max for every curve)")
    ax.set_ylabel("p_manip")
    ax.set_title("(a) detection: measured vs predictions", fontsize=10)
    ax.legend(fontsize=8)
    bx.plot([x["epsilon_a_measured"] for x in r], [x["p_manip_measured"] for x in r], "o",
            color="black", label="measured (eps_A: 95% quantile on the honest server)")  # fmt: skip
    bx.plot([x["epsilon_a_formula"] for x in r], [x["p_manip_lemma2"] for x in r], "s--",
            label="Sec. 4.1 eps_A, Lemma 2 p_manip")  # fmt: skip
    bx.set_xlabel("epsilon_A (DI margin, 95%)")
    bx.set_ylabel("p_manip")
    bx.set_title("(b) the Figure 4 plane", fontsize=10)
    bx.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    main()
