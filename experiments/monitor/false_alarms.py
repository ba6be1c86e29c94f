"""False alarms over 365 daily looks, and the delay to detect a gap that appears on day 200.

Run: ``.venv/bin/python experiments/monitor/false_alarms.py [--reps 2000] [--seed 0]``
Writes ``experiments/results/monitor/false_alarms.json``.

Streams of daily window counts (binomial draws, seeded) of the monitor's model: ``n`` rows per
group per day, decisions independent given the group. Three monitors look at every day:

* ``e-process``: :func:`fairprobe.scale.monitor.monitor_statistic`, the monitor's statistic
  (signed e-process and per-window test per unordered pair; alarm when some pair's statistic
  crosses ``log(m / alpha)``; the probability of any false alarm is at most alpha);
* ``daily test``: each day, a valid one-look test at level alpha: for every ordered pair the
  lower bound of ``p_i - p_j`` from Clopper-Pearson bounds of both rates (Bonferroni over the
  pairs and both bounds) above the tolerance; looked at every day: valid for one look, not
  for 365;
* ``Bonferroni days``: the same daily test at level ``1 - alpha / 365`` (valid for a year
  known in advance, and only for it).

Scenarios (tolerance 0.05, alpha 0.05):

* ``boundary``: every day's gap exactly at the tolerance (rates 0.50 and 0.45): the least
  favourable fair stream, for the false-alarm rate (share of streams with any alarm in 365
  days, with its standard error; the claim is <= alpha + 2 SE);
* ``fair``: no gap (both 0.50), for the false-alarm rate of a typical fair stream;
* ``late gap``: no gap for days 1-199, then a gap of 0.10 (twice the tolerance) from day 200:
  false alarms before day 200, the share detected by day 365, and the delay (days from day 200
  to the alarm; median and 10/90 % quantiles over the detected streams);
* the same with 4 groups (6 unordered pairs) and with 200 rows per group per day;
* adversarial fair streams: a gap exactly at the tolerance whose sign flips every 3 days (the
  plug-in bet follows the last days, so it bets on the wrong side after each flip) with sizes
  drawn from 20 to 1,000 per group and day; and rare outcomes (rates 0.06 vs 0.01).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))

from fairprobe.scale.monitor import monitor_statistic, signed_z  # noqa: E402

DAYS, CHANGE, EPS, ALPHA = 365, 199, 0.05, 0.05  # CHANGE: 0-based index of day 200


def _daily_lower(k: np.ndarray, n: np.ndarray, level: float) -> np.ndarray:
    """Per day and ordered pair, a lower bound of ``p_i - p_j`` holding at ``level`` jointly
    over the pairs: the lower Clopper-Pearson bound of ``p_i`` minus the upper one of ``p_j``,
    each at ``(1 - level) / (2 m)``."""
    g = n.shape[-1]
    m = g * (g - 1)
    a = (1 - level) / m
    each = 1 - a / 2  # both one-sided bounds of the pair at a/2 each
    lo = np.where(k > 0, stats.beta.ppf(1 - each, k, n - k + 1), 0.0)
    hi = np.where(k < n, stats.beta.ppf(each, k + 1, n - k), 1.0)
    out = [lo[..., i] - hi[..., j] for i in range(g) for j in range(g) if i != j]
    return np.stack(out, axis=-1)


def _streams(rng: np.random.Generator, reps: int, n: Any, rates: np.ndarray
             ) -> tuple[np.ndarray, np.ndarray]:
    """Counts (reps, days, groups) for the per-day rates (days, groups) and sizes (a number,
    or an array of the rates' shape)."""
    nn = np.broadcast_to(np.asarray(n), (reps, *rates.shape))
    k = rng.binomial(nn, np.broadcast_to(rates, (reps, *rates.shape))).astype(float)
    return k, np.array(nn)


def _first(alarm: np.ndarray) -> np.ndarray:
    """First alarm day (0-based) per stream, DAYS when none."""
    return np.where(alarm.any(axis=-1), alarm.argmax(axis=-1), DAYS)


def _monitors(k: np.ndarray, n: np.ndarray) -> dict[str, np.ndarray]:
    zu, zd, ok, pairs = signed_z(k, n, kind="difference", bound=EPS)
    stat = monitor_statistic(zu, zd, ok)
    out = {"e-process": _first(stat.max(axis=-1) >= math.log(len(pairs) / ALPHA))}
    out["daily test"] = _first(_daily_lower(k, n, 1 - ALPHA).max(axis=-1) > EPS)
    out["Bonferroni days"] = _first(_daily_lower(k, n, 1 - ALPHA / DAYS).max(axis=-1) > EPS)
    return out


def _share(x: np.ndarray) -> dict[str, float]:
    p = float(x.mean())
    return {"rate": p, "se": math.sqrt(p * (1 - p) / x.size)}


def run(reps: int, seed: int) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    results: dict[str, Any] = {}
    for groups, n in ((2, 500), (4, 500), (2, 200)):
        tag = f"{groups} groups, {n} rows/group/day"
        base = np.full((DAYS, groups), 0.50)
        boundary = base.copy()
        boundary[:, 1:] = 0.45
        late = base.copy()
        late[CHANGE:, 1] = 0.40
        res: dict[str, Any] = {}
        for name, rates in (("boundary", boundary), ("fair", base)):
            firsts = _monitors(*_streams(rng, reps, n, rates))
            res[name] = {mon: {"false_alarm": _share(f < DAYS)} for mon, f in firsts.items()}
        firsts = _monitors(*_streams(rng, reps, n, late))
        res["late gap"] = {}
        for mon, f in firsts.items():
            det = (f >= CHANGE) & (f < DAYS)
            delay = f[det] - CHANGE
            res["late gap"][mon] = {
                "false_alarm_before_day_200": _share(f < CHANGE),
                "detected_by_day_365": _share(det),
                "delay_days": None if not det.any() else {
                    "median": float(np.median(delay)), "q10": float(np.quantile(delay, 0.1)),
                    "q90": float(np.quantile(delay, 0.9)), "mean": float(delay.mean())}}
        results[tag] = res
    # adversarial fair streams: the sign of a gap exactly at the tolerance flips every 3 days
    # (against the plug-in bet, which follows the last days), with sizes from 20 to 1,000 per
    # group and day; and rare outcomes (rates 0.06 vs 0.01) where Hoeffding is loosest
    days = np.arange(DAYS)
    flip = np.where((days // 3) % 2 == 0, 0.45, 0.55)
    switching = np.stack([np.full(DAYS, 0.50), flip], axis=1)
    sizes = rng.integers(20, 1001, (DAYS, 2))
    rare = np.stack([np.full(DAYS, 0.06), np.full(DAYS, 0.01)], axis=1)
    adv: dict[str, Any] = {}
    for name, rates, n_ in (("switching sign, sizes 20-1000", switching, sizes),
                            ("rare outcomes 0.06 vs 0.01, 500", rare, 500)):
        firsts = _monitors(*_streams(rng, reps, n_, rates))
        adv[name] = {mon: {"false_alarm": _share(f < DAYS)} for mon, f in firsts.items()}
    results["adversarial (2 groups, fair)"] = adv
    return results


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path,
                    default=ROOT / "experiments" / "results" / "monitor" / "false_alarms.json")
    args = ap.parse_args()
    t0 = time.perf_counter()
    res = run(args.reps, args.seed)
    doc = {"days": DAYS, "change_day": CHANGE + 1, "tolerance": EPS, "alpha": ALPHA,
           "reps": args.reps, "seed": args.seed, "results": res,
           "seconds": round(time.perf_counter() - t0, 1)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=2) + "\n")
    adv = res.pop("adversarial (2 groups, fair)")
    for tag, r in res.items():
        print(f"\n{tag}")
        print(f"  {'monitor':16} {'FA boundary':>15} {'FA fair':>15} {'FA < day 200':>13} "
              f"{'detected':>9} {'delay median [q10, q90]':>24}")
        for mon in r["boundary"]:
            fb = r["boundary"][mon]["false_alarm"]
            ff = r["fair"][mon]["false_alarm"]
            lg = r["late gap"][mon]
            d = lg["delay_days"]
            ds = "-" if d is None else f"{d['median']:.0f} [{d['q10']:.0f}, {d['q90']:.0f}]"
            print(f"  {mon:16} {fb['rate']:.3f} ± {fb['se']:.3f}   {ff['rate']:.3f} ± "
                  f"{ff['se']:.3f} {lg['false_alarm_before_day_200']['rate']:13.3f} "
                  f"{lg['detected_by_day_365']['rate']:9.3f} {ds:>24}")
    print("\nadversarial fair streams (2 groups): false alarms over 365 looks")
    for name, r in adv.items():
        print(f"  {name:34} " + "  ".join(f"{mon} {v['false_alarm']['rate']:.3f} ± "
                                           f"{v['false_alarm']['se']:.3f}"
                                           for mon, v in r.items()))
    print(f"\n{args.reps} streams per scenario, seed {args.seed}; wrote {args.out}")


if __name__ == "__main__":
    main()
