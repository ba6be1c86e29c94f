"""The window monitor's two tests, valid together: a one-window spike is caught on its window;
fair streams alarm at most alpha; the family is the unordered pairs.

Guarantees: each direction's one-window tail ``exp(-z^2 / 2)`` bounds the exact binomial tail
at the boundary (enumerated); on 300 simulated fair streams of 200 windows with every gap at
the tolerance the combined statistic crosses its line in at most alpha + 3 standard errors of
them (the 1,000-window measurement is ``experiments/monitor/tight.py``); a monitor state saved
by an earlier run is read back and its next run alarms on the spike's window, exit 5.
"""

from __future__ import annotations

import itertools
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from fairprobe.scale.monitor import _unordered_pairs, monitor_statistic, signed_z


def test_unordered_pairs_from_their_index() -> None:
    for g in range(2, 9):
        want = list(itertools.combinations(range(g), 2))
        got = [tuple(p) for p in _unordered_pairs(g, 0, len(want)).tolist()]
        assert got == want


@pytest.mark.parametrize("n_a, n_b, p_b", [(8, 6, 0.5), (40, 40, 0.3), (25, 60, 0.9)])
def test_one_window_tail_holds_at_the_boundary(n_a: int, n_b: int, p_b: float) -> None:
    eps = 0.05
    p_a = p_b + eps
    ka, kb = np.arange(n_a + 1), np.arange(n_b + 1)
    prob = np.outer(stats.binom.pmf(ka, n_a, p_a), stats.binom.pmf(kb, n_b, p_b))
    k = np.stack(np.broadcast_arrays(ka[:, None], kb[None, :]), axis=-1).astype(float)
    n = np.broadcast_to(np.array([n_a, n_b]), k.shape)
    zu, _, _, _ = signed_z(k, n, kind="difference", bound=eps)
    for x in (0.5, 1.0, 2.0, 3.0):
        assert float(prob[zu[..., 0] >= x].sum()) <= math.exp(-x * x / 2) + 1e-12


def test_fair_streams_alarm_at_most_alpha_and_a_spike_is_caught() -> None:
    rng = np.random.default_rng(11)
    reps, days, n, eps, alpha = 300, 200, 50, 0.05, 0.05
    rates = np.tile([0.50, 0.45], (days, 1))
    k = rng.binomial(n, np.broadcast_to(rates, (reps, days, 2))).astype(float)
    nn = np.full(k.shape, n)
    zu, zd, ok, pairs = signed_z(k, nn, kind="difference", bound=eps)
    assert pairs == [(0, 1)]
    line = math.log(len(pairs) / alpha)
    rate = float((monitor_statistic(zu, zd, ok).max(axis=-1) >= line).any(axis=-1).mean())
    assert rate <= alpha + 3 * math.sqrt(alpha * (1 - alpha) / reps)
    rates = np.tile([0.50, 0.50], (41, 1))
    rates[30, 0] = 0.05  # one window where group 0 is accepted at 0.05
    k = rng.binomial(1500, np.broadcast_to(rates, (50, 41, 2))).astype(float)
    zu, zd, ok, _ = signed_z(k, np.full(k.shape, 1500), kind="difference", bound=eps)
    crossed = monitor_statistic(zu, zd, ok).max(axis=-1) >= line
    first = np.where(crossed.any(axis=-1), crossed.argmax(axis=-1), 41)
    assert (first == 30).all()


def _day(day: int, n: int, p_q: float, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    g = rng.choice(["p", "q"], n)
    dec = rng.random(n) < np.where(g == "q", p_q, 0.5)
    ts = pd.Timestamp("2024-01-01") + pd.Timedelta(days=day) + pd.to_timedelta(
        rng.integers(0, 86400, n), unit="s")
    return pd.DataFrame({"ts": ts, "g": g, "d": dec.astype(int)})


def test_cli_catches_a_one_day_spike_from_a_saved_state(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    args = [sys.executable, "-m", "fairprobe", "monitor", "--predictions", str(logs),
            "--y-pred-col", "d", "--group-col", "g", "--time-col", "ts", "--window", "1D",
            "--state", str(tmp_path / "state.json"), "--now", "2030-01-01",
            "--json", str(tmp_path / "m.json"), "--fail-on", "unfair"]
    pd.concat([_day(d, 1000, 0.5, d) for d in range(30)]).to_parquet(
        logs / "a.parquet", index=False)
    r = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert json.loads((tmp_path / "state.json").read_text())  # the state the next run reads
    pd.concat([_day(30, 1000, 0.05, 30)] + [_day(d, 1000, 0.5, d) for d in range(31, 41)]
              ).to_parquet(logs / "b.parquet", index=False)
    r = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode == 5, r.stdout + r.stderr
    mon = json.loads((tmp_path / "m.json").read_text())["monitor"][
        "demographic_parity_difference"]
    assert mon["alarm"].startswith("2024-01-31") and mon["alarm_pair"][:2] == ["p", "q"]
    assert mon["family_size"] == 1
