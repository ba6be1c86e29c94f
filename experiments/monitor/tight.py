"""The window monitor against the ordered-pair construction: false alarms, step delay, spikes.

Run: ``python experiments/monitor/tight.py --reps 2000 --seed 0``; writes
``experiments/results/monitor/tight.json``. Tolerance 0.05 (demographic-parity difference),
alpha 0.05. Three scenarios, each simulated from binomial window counts:

* ``false_alarms``: 1,000 fair windows with every gap exactly at the tolerance (rates 0.50 and
  0.45, the least favourable fair stream), 50 and 500 rows per group and window, 2 groups;
  and 4 groups (rates 0.50, 0.45, 0.45, 0.50) at 50 rows. Share of runs that ever alarm, with
  its standard error.
* ``step``: a gap of 0.15 (rates 0.50 and 0.35) from the first window, or after 30 windows
  without a gap; 50 rows per group and window. Looks from the step to the alarm (the step's
  own window is look 1): median and 10% / 90% quantiles, and the share detected within 100.
* ``spike``: 30 fair windows (no gap), one window where group q is accepted at 0.05 against
  0.50 for the other (3,000 rows, 1,500 per group), 10 fair windows; 3,000 rows per window.
  Share of runs alarming at all, on the spike's window, and before it (a false alarm).

``monitor`` is :func:`fairprobe.scale.monitor.monitor_statistic` (signed e-process per unordered
pair plus per-window test); ``ordered`` is :func:`pair_z` with :func:`log_wealth` and a union
over ordered pairs. Both alarm at ``log(m / alpha)`` with their own ``m``.

In the step scenarios a third column, ``sequential``, runs the sequential audit's default test
(:class:`fairprobe.sequential.mixture.MixtureBettingTest`, its process ``V``, i.i.d. form) on the
same stream row by row: the k-th row of each group in a window is paired, the process runs from
the first window on, and it alarms at ``log(1 / alpha)`` (the whole alpha, no per-window share:
the most favourable setting for it). It answers whether the sequential default's test would
detect the step sooner than the monitor's window bets.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

from fairprobe.scale.monitor import log_wealth, monitor_statistic, pair_z, signed_z  # noqa: E402
from fairprobe.sequential.mixture import MixtureBettingTest  # noqa: E402

EPS, ALPHA = 0.05, 0.05


def _counts(rng: np.random.Generator, reps: int, n: int, rates: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray]:
    """``rates`` of shape ``(T, G)``: binomial sums ``(reps, T, G)`` and the sizes."""
    k = rng.binomial(n, np.broadcast_to(rates, (reps, *rates.shape))).astype(float)
    return k, np.full(k.shape, n)


def _alarms(k: np.ndarray, n: np.ndarray) -> dict[str, np.ndarray]:
    """Per run and window: has each monitor crossed its line (``(reps, T)`` booleans)."""
    z, ok, pairs = pair_z(k, n, kind="difference", bound=EPS)
    old = log_wealth(z, ok)[0].max(axis=-1) >= math.log(len(pairs) / ALPHA)
    zu, zd, ok2, upairs = signed_z(k, n, kind="difference", bound=EPS)
    new = monitor_statistic(zu, zd, ok2).max(axis=-1) >= math.log(len(upairs) / ALPHA)
    return {"monitor": new, "ordered": old}


def _sequential_first(rng: np.random.Generator, reps: int, n: int, rates: np.ndarray,
                      chunk: int = 250) -> np.ndarray:
    """Per run: the window (0-based) in which the sequential default's ``V`` first reaches
    ``1 / alpha`` on the same stream drawn row by row (``rates[t]`` of window ``t``, ``n`` rows
    per group and window, paired in order); ``T`` when it never does."""
    t_len = rates.shape[0]
    test = MixtureBettingTest(EPS, alpha=ALPHA)
    out = []
    for start in range(0, reps, chunk):  # chunks bound the memory (rows x runs floats)
        r = min(chunk, reps - start)
        pa = np.repeat(rates[:, 0], n)
        pb = np.repeat(rates[:, 1], n)
        xa = (rng.random((r, t_len * n)) < pa).astype(float)
        xb = (rng.random((r, t_len * n)) < pb).astype(float)
        cross = test.processes(xa, xb)["V"] >= math.log(1 / ALPHA)
        first = np.where(cross.any(axis=-1), cross.argmax(axis=-1) // n, t_len)
        out.append(first)
    return np.concatenate(out)


def _first(cross: np.ndarray) -> np.ndarray:
    return np.where(cross.any(axis=-1), cross.argmax(axis=-1), cross.shape[-1])


def _rate(x: np.ndarray) -> dict[str, float]:
    p = float(np.mean(x))
    return {"rate": p, "se": math.sqrt(p * (1 - p) / x.size)}


def run(reps: int, seed: int) -> dict[str, Any]:
    """One row per scenario and monitor (flat, so the docs can quote it by its fields)."""
    rng = np.random.default_rng(seed)
    rows: list[dict[str, Any]] = []
    for groups, n, base in ((2, 50, [0.50, 0.45]), (2, 500, [0.50, 0.45]),
                            (4, 50, [0.50, 0.45, 0.45, 0.50])):
        k, nn = _counts(rng, reps, n, np.tile(base, (1000, 1)))
        for m, a in _alarms(k, nn).items():
            fa = _rate(a.any(axis=-1))
            rows.append({"scenario": "false_alarm", "groups": groups, "rows": n, "monitor": m,
                         "windows": 1000, "rate": round(fa["rate"], 4),
                         "se": round(fa["se"], 4)})
    for pre in (0, 30):
        t_len = pre + 100
        rates = np.tile([0.50, 0.50], (t_len, 1))
        rates[pre:, 1] = 0.35
        k, nn = _counts(rng, reps, 50, rates)
        firsts = {m: _first(a) for m, a in _alarms(k, nn).items()}
        firsts["sequential"] = _sequential_first(rng, reps, 50, rates)
        for m, f in firsts.items():
            d = (f - pre + 1)[(f < t_len) & (f >= pre)].astype(float)
            rows.append({"scenario": "step", "groups": 2, "rows": 50, "monitor": m,
                         "fair_before": pre, "gap": 0.15,
                         "median_looks": float(np.median(d)) if d.size else None,
                         "q10": float(np.quantile(d, 0.1)) if d.size else None,
                         "q90": float(np.quantile(d, 0.9)) if d.size else None,
                         "detected": float(np.mean(f < t_len)),
                         "before_step": float(np.mean(f < pre))})
    rates = np.tile([0.50, 0.50], (41, 1))
    rates[30, 1] = 0.05
    k, nn = _counts(rng, reps, 1500, rates)
    for m, a in _alarms(k, nn).items():
        f = _first(a)
        rows.append({"scenario": "spike", "groups": 2, "rows": 1500, "monitor": m,
                     "fair_before": 30, "fair_after": 10,
                     "alarm": float(np.mean(f < 41)), "on_spike_window": float(np.mean(f == 30)),
                     "before_spike": float(np.mean(f < 30))})
    return {"reps": reps, "seed": seed, "alpha": ALPHA, "tolerance": EPS, "rows": rows}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=str(Path(__file__).resolve().parents[1]
                                         / "results" / "monitor" / "tight.json"))
    args = ap.parse_args()
    res = run(args.reps, args.seed)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(res, indent=2) + "\n")
    print(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
