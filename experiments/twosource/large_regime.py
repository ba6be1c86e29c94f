"""The large-budget regime of Appendix B, measured on the platform: corrected DI through B.

One real platform server per configuration (honest; positive discrimination at server gamma
0.3, which brings the DI through A to the 80% line) answers the whole Adult test pool once
through BlackBox + cache (``_common.platform_sources``); the audits then replay those answers.

**Estimand.** The large regime estimates mu_B, the DI of B's decisions by *true* sex, on the
pool (B decides with the sex it infers from the first name, so mu_B = 0.478 while the honest A's
mu_A = 0.257: see ``docs/twosource.md``). Bias, RMSE and coverage are measured against mu_B.

**What runs.** For each audit seed the records, the proxy draws and the policy's purchases are
drawn exactly as :func:`fairprobe.twosource.run_large_regime_audit` draws them (same seed
streams; ``check_same_as_library`` asserts on a few seeds that the corrected estimate, its
interval and the detectors' decisions equal the library's), then the library's own estimator
(``double_sampling_log_di`` and the exact box of ``double_sampling_interval``) and detectors decide. The pareto regime
(t = 1000) runs :func:`run_two_source_audit` itself.

Measured, AUDITS audits per row, budget 3000 (large) and 1000 (pareto), epsilon 0.1, alpha 5%:

* corrected DI through B (the plan's fixed split: every B record checked; a fixed split with
  500 checks of 2,500 B records, 2,000 of which enter through the proxy only; Thompson): mean, bias, RMSE, coverage of the 95% interval (with standard
  errors), mean interval half-width next to the planned margin;
* the matrix method with the true per-group accuracies (errors assumed non-differential) and
  the uncorrected DI through B + proxy, for comparison;
* verdicts (fair / unfair / undetermined / manipulated) and detection power per regime and
  policy; the bandit's checks bought and its DI error against the fixed split.

Run: ``.venv/bin/python experiments/twosource/large_regime.py [--quick]`` (writes
``experiments/results/twosource/large_regime.json``; nothing is resumed from earlier runs).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (  # noqa: E402
    RowReplay,
    a_decisions,
    b_decisions,
    platform_sources,
    pool,
    write,
)

from fairprobe.access.cache import ResponseCache  # noqa: E402
from fairprobe.stats.counts import CountsVector  # noqa: E402
from fairprobe.twosource import make_proxy, run_budgeted_audit  # noqa: E402
from fairprobe.twosource.bandit import FixedSplit, PolicyState  # noqa: E402
from fairprobe.twosource.budget import plan_budget  # noqa: E402
from fairprobe.twosource.correction import (  # noqa: E402
    double_sampling_interval,
    double_sampling_log_di,
    matrix_log_di,
)
from fairprobe.twosource.detectors import PairedEvidence, make_detector  # noqa: E402
from fairprobe.twosource.large import per_group_accuracy, thompson_for  # noqa: E402

GAMMA = 0.3
EPS = 0.1
ALPHA = 0.05
T_LARGE = 3000
T_PARETO = 1000
DETECTORS = ("conditional", "consistency", "di")
Z = 1.959963984540054
FEW_CHECKS = 500  # a fixed split with 2,500 B queries, 2,000 of them grouped by the proxy only


def simulate_large(ya: np.ndarray, yb: np.ndarray, sex: np.ndarray, probs: np.ndarray,
                   proxy: Any, acc: Any, policy_name: str, k_fixed: int, seed: int,
                   rates: tuple[float, float, float]) -> dict[str, Any]:  # fmt: skip
    """One large-regime audit, drawn as the library draws it; returns the cells and decisions."""
    n = ya.size
    ss = np.random.SeedSequence(seed)
    rng_sample, rng_proxy = (np.random.default_rng(s) for s in ss.spawn(2))
    order = rng_sample.permutation(n)
    proxy_seed = int(rng_proxy.integers(2**63 - 1))
    rows = order[:T_LARGE]
    draws = proxy.draw(probs[rows], seed=proxy_seed)
    gt = sex[rows]
    pf = probs[rows, 0]
    p_true = np.where(gt == "Female", pf, 1.0 - pf)
    pol = FixedSplit(k_fixed) if policy_name == "fixed" else thompson_for(acc.p_agree, rates, seed=seed)
    nb = nc = ni = 0
    left = T_LARGE
    while left > 0:
        arm, k = pol.next_action(PolicyState(left, nb, nc, ni))
        k = max(1, min(int(k), left))
        if arm == "check":
            k = min(k, nb - nc)
            if k <= 0:
                arm, k = "b", 1
        if arm == "b":
            nb += k
        else:
            sl = slice(nc, nc + k)
            ni += int(np.sum((draws[sl] != gt[sl]) | (yb[rows[sl]] != ya[rows[sl]])))
            nc += k
        left -= k
    priv = np.asarray(draws[:nb] == "Male", dtype=int)
    yy = yb[rows[:nb]].astype(int)
    g = np.asarray(gt[:nb] == "Male", dtype=int)
    chk = np.arange(nb) < nc
    u = np.bincount((2 * priv + yy)[~chk], minlength=4)
    v = np.bincount((4 * g + 2 * priv + yy)[chk], minlength=8)
    return {"u": u, "v": v, "nb": nb, "nc": nc, "rows": rows, "draws": draws, "p_true": p_true}


def detect(sim: dict[str, Any], ya: np.ndarray, yb: np.ndarray, sex: np.ndarray,
           p_test: float) -> tuple[bool, ...]:  # fmt: skip
    rows, nb, nc = sim["rows"], sim["nb"], sim["nc"]
    gt, gp = sex[rows[:nc]], sim["draws"][:nc]
    da, db = ya[rows[:nc]].astype(float), yb[rows[:nc]].astype(float)

    def counts(groups: np.ndarray, d: np.ndarray) -> CountsVector:
        f = groups == "Female"
        return CountsVector(int(d[f].sum()), int(f.sum()), int(d[~f].sum()), int((~f).sum()))

    ev = PairedEvidence(
        check_group_a=gt, check_decision_a=da, check_group_proxy=gp, check_decision_proxy=db,
        counts_a=counts(gt, da), counts_b=counts(sim["draws"][:nb], yb[rows[:nb]].astype(float)),
        p_phi=p_test, n_planned_checks=nc, check_p_true=sim["p_true"][:nc],
    )  # fmt: skip
    return tuple(make_detector(d).decide(ev, ALPHA / len(DETECTORS)).detected for d in DETECTORS)


def check_same_as_library(P: Any, proxy: Any, acc: Any, ya: np.ndarray, yb: np.ndarray,
                          probs: np.ndarray, k_fixed: int, rates: Any) -> None:  # fmt: skip
    sex = P["sex"].to_numpy(dtype=object)
    for policy in ("fixed", "thompson"):
        for s in range(3):
            r = run_budgeted_audit(RowReplay(ya), RowReplay(yb), P, proxy, budget=T_LARGE,
                                   epsilon=EPS, policy=policy, seed=s, proxy_accuracy=acc,
                                   rates=rates[:2])  # fmt: skip
            sim = simulate_large(ya, yb, sex, probs, proxy, acc, policy, k_fixed, s, rates)
            lm = float(double_sampling_log_di(sim["u"], sim["v"]))
            corr = r.extra["di_b_corrected"]
            assert abs(np.exp(lm) - corr["estimate"]) < 1e-12, (policy, s)
            assert corr["counts"]["validated"] == sim["v"].tolist()
            assert tuple(o.detected for o in r.detectors) == detect(sim, ya, yb, sex, r.p_test)


def se(x: np.ndarray) -> float:
    return float(np.std(x, ddof=1) / np.sqrt(x.size))


def summarise_estimates(lm: np.ndarray, lo: np.ndarray, hi: np.ndarray, truth: float
                        ) -> dict[str, Any]:
    """The shipped interval's (``double_sampling_interval``: the exact box) coverage and width."""
    est = np.exp(lm)
    est = np.where(np.isfinite(est), est, np.nan)
    undefined = ~np.isfinite(lo) | ~np.isfinite(hi)
    cov = (lo <= truth) & (truth <= hi)  # an undefined interval does not cover
    verdict = np.where(lo >= 0.8, "fair", np.where(hi < 0.8, "unfair", "undetermined"))
    return {
        "mean": float(np.nanmean(est)), "bias": float(np.nanmean(est) - truth),
        "bias_se": se(est[np.isfinite(est)]),
        "rmse": float(np.sqrt(np.nanmean((est - truth) ** 2))),
        "coverage": float(cov.mean()), "coverage_se": se(cov.astype(float)),
        "mean_half_width": float(np.nanmean((hi - lo) / 2)),
        "undefined_intervals": float(undefined.mean()),
        "verdicts": {v: float(np.mean(verdict == v)) for v in ("fair", "unfair", "undetermined")},
    }  # fmt: skip


def main() -> None:
    quick = "--quick" in sys.argv
    audits = 200 if quick else 1000
    t0 = time.time()
    P = pool()
    sex = P["sex"].to_numpy(dtype=object)
    proxy = make_proxy("name")
    acc = proxy.accuracy(P, sex)
    probs = proxy.probabilities(P)
    au, ap = per_group_accuracy(acc, "Female", "Male")
    cache = ResponseCache(":memory:")
    answers: dict[str, np.ndarray] = {}
    yb = None
    for mode, g in (("none", 0.0), ("positive", GAMMA)):
        with platform_sources(cache, mode, g, warm=P) as (api, ui):
            answers[mode], yb = a_decisions(api, P), b_decisions(ui, P)
    assert yb is not None
    f = sex == "Female"
    ya0 = answers["none"]
    mu_a = float(ya0[f].mean() / ya0[~f].mean())
    mu_b = float(yb[f].mean() / yb[~f].mean())
    yfw = answers["positive"]
    mu_a_fw = float(yfw[f].mean() / yfw[~f].mean())
    rates = (float(ya0[f].mean()), float(ya0[~f].mean()), float(f.mean()))
    plan = plan_budget(T_LARGE, EPS, acc.p_phi, rates[0], rates[1], rates[2], gamma=None,
                       accuracy_unprivileged=au, accuracy_privileged=ap)  # fmt: skip
    k_fixed = int(plan.recommended["t_fraud"])
    print(f"pool: mu_A (honest A) {mu_a:.4f}, mu_B (B by true sex) {mu_b:.4f}; proxy accuracy "
          f"women {au:.3f}, men {ap:.3f} (p_phi {acc.p_phi:.4f}, p_agree {acc.p_agree:.4f}); "
          f"fairwashed A (server gamma {GAMMA}) shows DI {mu_a_fw:.4f}")
    print(f"plan t = {T_LARGE}, eps {EPS}: regime {plan.regime}, t_A {plan.t_a}, t_B {plan.t_b},"
          f" n_b {plan.recommended['n_b']}, checks {k_fixed}, planned margin "
          f"{plan.recommended['epsilon_b']:.4f}")  # fmt: skip
    for mode in answers:
        check_same_as_library(P, proxy, acc, answers[mode], yb, probs, k_fixed, rates)
    print("  the simulation draws and decides exactly as run_budgeted_audit (6 seeds checked)")

    out: dict[str, Any] = {
        "experiment": "Appendix B large regime: corrected DI through B, detection per regime",
        "mu_a_pool": mu_a, "mu_b_pool": mu_b, "mu_a_fairwashed_pool": mu_a_fw, "server_gamma": GAMMA, "epsilon": EPS,
        "alpha": ALPHA, "audits": audits, "proxy": acc.to_dict(),
        "accuracy_by_group": {"Female": au, "Male": ap}, "plan": plan.to_dict(), "rows": [],
    }  # fmt: skip
    print(f"\nLarge regime, t = {T_LARGE}, {audits} audits per row (SE in brackets):")
    # the plan's split (every B record checked), a split with most B records unchecked (the
    # correction then works through the proxy), and the bandit
    for policy, k in (("fixed", k_fixed), ("fixed", FEW_CHECKS), ("thompson", k_fixed)):
        for mode, ya in answers.items():
            sims = [simulate_large(ya, yb, sex, probs, proxy, acc, policy, k, s, rates)
                    for s in range(audits)]  # fmt: skip
            u = np.stack([x["u"] for x in sims])
            v = np.stack([x["v"] for x in sims])
            lm = double_sampling_log_di(u, v)
            _, lo, hi, _ = double_sampling_interval(u, v, 0.95)
            est = summarise_estimates(lm, lo, hi, mu_b)
            dets = np.array([detect(x, ya, yb, sex, acc.p_agree) for x in sims])
            any_det = dets.any(axis=1)
            o = u + v.reshape(-1, 2, 2, 2).sum(axis=1).reshape(-1, 4)
            mat = np.exp(matrix_log_di(o, np.broadcast_to([au, ap], (audits, 2))))
            unc = (o[:, 1] / o[:, :2].sum(1)) / (o[:, 3] / o[:, 2:].sum(1))
            row = {
                "regime": "large", "policy": policy, "server": mode, "budget": T_LARGE,
                "planned_checks": k if policy == "fixed" else None,
                "corrected": est, "detected_any": float(any_det.mean()),
                "detected_any_se": se(any_det.astype(float)),
                "detected_by": {d: float(dets[:, i].mean()) for i, d in enumerate(DETECTORS)},
                "mean_checks": float(np.mean([x["nc"] for x in sims])),
                "mean_b": float(np.mean([x["nb"] for x in sims])),
                "matrix_method_mean": float(np.nanmean(mat)),
                "uncorrected_mean": float(np.mean(unc)),
            }  # fmt: skip
            out["rows"].append(row)
            tag = f"{policy}-{k}" if policy == "fixed" else policy
            print(f"  {tag:<10} {mode:<8}: corrected DI {est['mean']:.4f} (bias "
                  f"{est['bias']:+.4f} [{est['bias_se']:.4f}], RMSE {est['rmse']:.4f}), coverage "
                  f"{est['coverage']:.3f} [{est['coverage_se']:.3f}], half-width "
                  f"{est['mean_half_width']:.4f} (undefined {est['undefined_intervals']:.3f}); verdict unfair {est['verdicts']['unfair']:.3f};"
                  f" detected {row['detected_any']:.3f} [{row['detected_any_se']:.3f}] "
                  f"(checks {row['mean_checks']:.0f}); matrix method {row['matrix_method_mean']:.4f}, "
                  f"uncorrected {row['uncorrected_mean']:.4f}", flush=True)  # fmt: skip

    print(f"\nPareto regime, t = {T_PARETO}, {audits} audits per row (run_budgeted_audit):")
    for mode, ya in answers.items():
        verdicts, det, est = [], [], []
        for s in range(audits):
            r = run_budgeted_audit(RowReplay(ya), RowReplay(yb), P, proxy, budget=T_PARETO,
                                   epsilon=EPS, seed=s, proxy_accuracy=acc,
                                   rates=rates[:2])  # fmt: skip
            verdicts.append(r.verdict)
            det.append(bool(r.detected_by))
            est.append(r.di_a.estimate)
        dd = np.array(det, dtype=float)
        fv = np.array(verdicts)
        row = {
            "regime": "pareto", "policy": "fixed", "server": mode, "budget": T_PARETO,
            "t_fraud": int(r.allocation.t_fraud), "detected_any": float(dd.mean()),
            "detected_any_se": se(dd), "di_a_mean": float(np.mean(est)),
            "di_a_rmse_vs_mu_a": float(np.sqrt(np.mean((np.array(est) - mu_a) ** 2))),
            "verdicts": {v: float(np.mean(fv == v))
                         for v in ("fair", "unfair", "undetermined", "manipulated")},
        }  # fmt: skip
        out["rows"].append(row)
        print(f"  {mode:<8}: {row['t_fraud']} checks; detected {row['detected_any']:.3f} "
              f"[{row['detected_any_se']:.3f}]; DI_A mean {row['di_a_mean']:.4f}; verdicts "
              f"{row['verdicts']}", flush=True)  # fmt: skip
    out["seconds"] = time.time() - t0
    path = write("large_regime_quick.json" if quick else "large_regime.json", out)
    print(f"({out['seconds']:.0f} s) wrote {path}")


if __name__ == "__main__":
    main()
