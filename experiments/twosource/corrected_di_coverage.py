"""Coverage of the corrected DI through B in sparse cells: the default (delta interval, none
reported with fewer than ``MIN_CHECKED_POSITIVES`` validated positives in a group), the delta
interval alone, and a profile-likelihood interval for comparison.

Simulated double-sampling audits (no platform): ``n_b`` B records, ``n_v`` of them validated (the
checks), groups with shares 0.35 / 0.65, positive rates ``(r_u, r_p)``, and a proxy whose errors
are *differential* (right for 0.75 of negative and 0.6 of positive women, 0.85 of men: the
adversary of every correction that assumes errors independent of the decision). The estimand is
``mu_B = r_u / r_p``. Cells: rates 0.02 / 0.05, 0.05 / 0.1 and 0.15 / 0.45; sizes 100 checks of
1,000, 500 of 3,000, 1,000 of 10,000 and 1,500 of 3,000.

Columns per construction: coverage of the 95% interval (an unreported interval, ``[0, inf]``,
covers) with its standard error; ``decided``: share of audits given an interval; ``undefined``:
share of NaN intervals (the delta interval alone, where a group has no estimated positive).

The profile-likelihood interval (``profile_interval`` below, a reference implementation: the
likelihood of the two multinomials maximised by EM under ``log mu = theta``, inverted at
chi-square(1)) is not part of the library: measured here, it is not better than the delta
interval (it under-covers where checked positives are few, as the delta interval does).

    python experiments/twosource/corrected_di_coverage.py [--reps 2000] [--seed 0]

Writes experiments/results/twosource/corrected_di_coverage.json; exits 1 if the default covers
less than 0.94 in any cell.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

import numpy as np
from scipy import special
from scipy import stats as sps

from fairprobe.twosource.correction import (
    double_sampling_interval,
    double_sampling_log_di,
    double_sampling_se,
)

OUT = Path(__file__).resolve().parents[1] / "results" / "twosource" / "corrected_di_coverage.json"
RATES = ((0.02, 0.05), (0.05, 0.1), (0.15, 0.45))
SIZES = ((1000, 100), (3000, 500), (10000, 1000), (3000, 1500))
#: P(proxy right | g, y): women 0.75 if negative, 0.6 if positive; men 0.85.
RIGHT = np.array([[0.75, 0.6], [0.85, 0.85]])
SHARE_U = 0.35


def draw(rng: np.random.Generator, reps: int, n_b: int, n_v: int, rates: tuple[float, float]
         ) -> tuple[np.ndarray, np.ndarray, float]:
    """``(u, v, mu)``: unvalidated (g_hat, y) and validated (g, g_hat, y) counts per audit."""
    cells = np.zeros((2, 2, 2))
    for g, pg in ((0, SHARE_U), (1, 1 - SHARE_U)):
        for y, py in ((0, 1 - rates[g]), (1, rates[g])):
            cells[g, g, y] = pg * py * RIGHT[g, y]
            cells[g, 1 - g, y] = pg * py * (1 - RIGHT[g, y])
    flat = cells.reshape(8)
    v = rng.multinomial(n_v, flat, size=reps)
    u = rng.multinomial(n_b - n_v, flat, size=reps).reshape(reps, 2, 2, 2).sum(axis=1)
    return u.reshape(reps, 4), v, rates[0] / rates[1]


def _loglik(P: np.ndarray, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    return np.asarray(special.xlogy(v, P).sum(axis=(-3, -2, -1))
                      + special.xlogy(u, P.sum(axis=-3)).sum(axis=(-2, -1)))


def _free_mle(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """The unconstrained maximum: the double-sampling cells q(g_hat, y) v(g | g_hat, y)."""
    col = v.sum(axis=-3)
    n = u.sum(axis=(-2, -1)) + v.sum(axis=(-3, -2, -1))
    q = (u + col) / n[..., None, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        rec = np.where(col[..., None, :, :] > 0, v / col[..., None, :, :], 0.5)
    return np.asarray(q[..., None, :, :] * rec)


def _constrained(u: np.ndarray, v: np.ndarray, theta: np.ndarray, P: np.ndarray,
                 steps: int = 200) -> np.ndarray:
    """EM for the maximum under r_u = e^theta r_p (the M-step's rates: Koopman's quadratic)."""
    mu = np.exp(theta)
    for _ in range(steps):
        m = P.sum(axis=-3, keepdims=True)
        with np.errstate(divide="ignore", invalid="ignore"):
            N = v + u[..., None, :, :] * np.where(m > 0, P / m, 0.5)
            ngy = N.sum(axis=-2)  # (g, y)
            c = np.where(ngy[..., :, None, :] > 0, N / ngy[..., :, None, :], 0.5)
        a, b, cc, d = ngy[..., 0, 1], ngy[..., 0, 0], ngy[..., 1, 1], ngy[..., 1, 0]
        tot = a + b + cc + d
        qa, qb, qc = mu * tot, (a + cc) * (1 + mu) + b * mu + d, a + cc
        with np.errstate(divide="ignore", invalid="ignore"):
            s = np.where(qc > 0, 2 * qc / (qb + np.sqrt(np.maximum(qb * qb - 4 * qa * qc, 0))),
                         0.0)
        s = np.clip(s, 0.0, np.minimum(1.0, 1.0 / mu))
        ru = mu * s
        rho = np.stack([np.stack([1 - ru, ru], -1), np.stack([1 - s, s], -1)], -2)
        pi = np.stack([(a + b) / tot, (cc + d) / tot], -1)
        P = pi[..., :, None, None] * rho[..., :, None, :] * c
    return P


def profile_interval(u: np.ndarray, v: np.ndarray, level: float = 0.95, bisect: int = 20,
                     lim: float = 8.0) -> tuple[np.ndarray, np.ndarray]:
    """Profile-likelihood interval of mu (bounds 0 / inf where the deviance stays below)."""
    uu = np.asarray(u, dtype=float).reshape(-1, 2, 2)
    vv = np.asarray(v, dtype=float).reshape(-1, 2, 2, 2)
    P_hat = _free_mle(uu, vv)
    l_hat = _loglik(P_hat, uu, vv)
    p = P_hat.sum(axis=-2)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = p[..., 1] / p.sum(axis=-1)
        th = np.clip(np.nan_to_num(np.log(r[..., 0]) - np.log(r[..., 1]), nan=0.0), -lim, lim)
    crit = float(sps.chi2.ppf(level, 1))
    bounds = []
    for side in (-1.0, 1.0):
        inside, outside = th.copy(), np.clip(th + 2 * side * lim, -2 * lim, 2 * lim)
        end_ok = 2 * (l_hat - _loglik(_constrained(uu, vv, outside, P_hat), uu, vv)) <= crit
        for _ in range(bisect):
            mid = 0.5 * (inside + outside)
            ok = 2 * (l_hat - _loglik(_constrained(uu, vv, mid, P_hat), uu, vv)) <= crit
            inside, outside = np.where(ok, mid, inside), np.where(ok, outside, mid)
        bounds.append(np.where(end_ok, 0.0 if side < 0 else np.inf, np.exp(outside)))
    return bounds[0], bounds[1]


def _cell(cov: np.ndarray, decided: np.ndarray, undefined: np.ndarray) -> dict[str, float]:
    c = float(cov.mean())
    return {"coverage": c, "se": float(np.sqrt(c * (1 - c) / cov.size)),
            "decided": float(decided.mean()), "undefined": float(undefined.mean())}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    t0 = time.perf_counter()
    z = float(sps.norm.ppf(0.975))
    rows: list[dict[str, Any]] = []
    print(f"corrected DI through B, 95% intervals, {args.reps} audits a cell (seed {args.seed}), "
          "differential proxy errors; coverage +- SE (decided share; undefined share)")
    print(f"{'rates':>12} {'checks/B':>11} | {'default':^24} | {'delta alone':^24} | "
          f"{'profile likelihood':^22}")
    for j, (rates, (n_b, n_v)) in enumerate((r, s) for r in RATES for s in SIZES):
        u, v, mu = draw(np.random.default_rng([args.seed, j]), args.reps, n_b, n_v, rates)
        _, lo, hi, thin = double_sampling_interval(u, v, 0.95)
        default = _cell((lo <= mu) & (mu <= hi), ~thin, np.zeros(thin.shape, dtype=bool))
        lm, se = double_sampling_log_di(u, v), double_sampling_se(u, v)
        with np.errstate(invalid="ignore", over="ignore"):
            dlo, dhi = np.exp(lm - z * se), np.exp(lm + z * se)
        undef = ~(np.isfinite(dlo) & np.isfinite(dhi))
        delta = _cell((dlo <= mu) & (mu <= dhi), ~undef, undef)
        plo, phi = profile_interval(u, v)
        prof = _cell((plo <= mu) & (mu <= phi), np.isfinite(phi) | (plo > 0),
                     np.zeros(plo.shape, dtype=bool))
        rows.append({"cell": f"{rates[0]:g}/{rates[1]:g}@{n_v}/{n_b}", "rates": list(rates),
                     "n_b": n_b, "checks": n_v, "mu": mu,
                     "default": default, "delta": delta, "profile": prof})
        print(f"{str(rates):>12} {f'{n_v}/{n_b}':>11} | "
              f"{default['coverage']:.4f}+-{default['se']:.4f} ({default['decided']:.2f}) | "
              f"{delta['coverage']:.4f}+-{delta['se']:.4f} ({delta['undefined']:.2f}) | "
              f"{prof['coverage']:.4f}+-{prof['se']:.4f}", flush=True)
    worst = min(rows, key=lambda r: r["default"]["coverage"])
    out = {"level": 0.95, "reps": args.reps, "seed": args.seed, "rows": rows,
           "min_default": {"coverage": worst["default"]["coverage"],
                           "se": worst["default"]["se"],
                           "at": [worst["rates"], worst["checks"], worst["n_b"]]},
           "min_delta": min(r["delta"]["coverage"] for r in rows),
           "min_profile": min(r["profile"]["coverage"] for r in rows)}
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(out, indent=1))
    print(f"\nminimum coverage: default {out['min_default']['coverage']:.4f} at "
          f"{out['min_default']['at']}; delta alone {out['min_delta']:.4f}; profile "
          f"{out['min_profile']:.4f}")
    print(f"({time.perf_counter() - t0:.1f} s; load average {os.getloadavg()[0]:.1f})")
    if out["min_default"]["coverage"] < 0.94:
        print("FAIL: the default covers less than 0.94 in a cell")
        raise SystemExit(1)


if __name__ == "__main__":
    main()
