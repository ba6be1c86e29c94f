"""Many groups: the output stays linear in the groups, the verdict uses every pair, and a grouping
past ``max_groups`` is refused in one line naming the key."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from itertools import combinations
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fairprobe import AuditFrame
from fairprobe.errors import DataError
from fairprobe.stats.frame import MAX_GROUPS_ENV, MAX_LISTED_PAIRS
from fairprobe.stats.simultaneous import family_intervals, worst_pair


def _data(groups: int, per: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    n = groups * per
    return pd.DataFrame({"g": np.repeat([f"g{i:04d}" for i in range(groups)], per),
                         "p": rng.random(n) < np.repeat(rng.uniform(0.1, 0.9, groups), per),
                         "y": rng.random(n) < 0.5})


def test_listing_is_capped_and_the_verdict_uses_every_pair() -> None:
    df = _data(60, 15)
    capped = AuditFrame(y_pred=df["p"], y_true=df["y"], sensitive_features=df["g"])
    full = AuditFrame(y_pred=df["p"], y_true=df["y"], sensitive_features=df["g"],
                      max_listed_pairs=10**6)
    for metric in ("dp", "eodds", "di"):
        a, b = capped.summary(metric), full.summary(metric)
        assert (a.estimate, a.low, a.high, a.pair, a.verdict) == \
            (b.estimate, b.low, b.high, b.pair, b.verdict)
        assert a.pairs_total == b.pairs_total == len(b.pairs) == \
            len(a.rates) * len(list(combinations(range(60), 2)))
        assert len(a.pairs) <= MAX_LISTED_PAIRS
        # the listed ones are the most extreme of the full listing
        key = (lambda p: abs(p["estimate"])) if a.kind == "difference" else \
            (lambda p: -min(p["estimate"], 1 / p["estimate"]) if p["estimate"] else np.inf)
        worst_full = sorted((key(p) for p in b.pairs), reverse=True)[:len(a.pairs)]
        assert sorted((key(p) for p in a.pairs), reverse=True) == pytest.approx(worst_full)
    small = _data(5, 30)
    s = AuditFrame(y_pred=small["p"], sensitive_features=small["g"]).summary("dp")
    assert len(s.pairs) == s.pairs_total == 10  # all pairs of few groups stay listed


@pytest.mark.parametrize("kind", ["difference", "ratio"])
@pytest.mark.parametrize("method", ["exact", "bonferroni"])
def test_worst_pair_and_reference_match_the_ordered_pairs(kind: str, method: str) -> None:
    rng = np.random.default_rng(3)
    for _ in range(20):
        g = int(rng.integers(2, 9))
        n = rng.integers(1, 40, g)
        k = rng.binomial(n, rng.uniform(0, 1, g))
        fam = family_intervals(k, n, k.sum() - k, n.sum() - n, kind=kind,  # type: ignore
                               method=method)
        pairs, est, lo, hi = fam.ordered()
        w = worst_pair(fam)
        if kind == "difference":
            j = int(np.nanargmax(est))
            assert w["low"] == max(0.0, float(np.nanmax(lo)))
        else:
            j = int(np.argmin(np.where(np.isnan(est), np.inf, est)))
            assert w["low"] == float(np.nanmin(lo))
        assert w["pair"] == pairs[j] and w["estimate"] == float(est[j])
    df = _data(6, 25, seed=1)
    frame = AuditFrame(y_pred=df["p"], sensitive_features=df["g"], reference="g0002")
    fam_pairs = frame.summary("dp").vs_reference
    assert sorted(p["group"] for p in fam_pairs) == ["g0000", "g0001", "g0003", "g0004", "g0005"]
    rates = frame.by_group["selection_rate"]
    for p in fam_pairs:
        assert p["estimate"] == pytest.approx(rates[p["group"]] - rates["g0002"])
        assert p["interval"]["low"] <= p["estimate"] <= p["interval"]["high"]


def test_too_many_groups_is_refused_naming_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    df = _data(30, 2)
    with pytest.raises(DataError, match="max_groups = 20"):
        AuditFrame(y_pred=df["p"], sensitive_features=df["g"], max_groups=20)
    monkeypatch.setenv(MAX_GROUPS_ENV, "25")
    with pytest.raises(DataError, match=MAX_GROUPS_ENV):
        AuditFrame(y_pred=df["p"], sensitive_features=df["g"])
    monkeypatch.setenv(MAX_GROUPS_ENV, "many")
    with pytest.raises(DataError, match="must be an integer"):
        AuditFrame(y_pred=df["p"], sensitive_features=df["g"])
    monkeypatch.setenv(MAX_GROUPS_ENV, "30")
    AuditFrame(y_pred=df["p"], sensitive_features=df["g"]).summary("dp")


def test_cli_many_groups_linear_output_and_one_line_refusal(tmp_path: Path) -> None:
    df = _data(300, 2)
    df.assign(p=df["p"].astype(int), y=df["y"].astype(int)).to_csv(tmp_path / "p.csv",
                                                                   index=False)
    cmd = [sys.executable, "-m", "fairprobe", "audit", "--predictions", str(tmp_path / "p.csv"),
           "--y-pred-col", "p", "--y-true-col", "y", "--group-col", "g", "--metric", "dp",
           "--json", str(tmp_path / "out.json")]
    env = {**os.environ, "COLUMNS": "100"}
    env.pop(MAX_GROUPS_ENV, None)
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode in (0, 1), r.stderr
    doc = json.loads((tmp_path / "out.json").read_text())
    s = doc["summaries"]["demographic_parity_difference"]
    assert s["pairs_total"] == 300 * 299 // 2 and len(s["pairs"]) == MAX_LISTED_PAIRS
    assert len(doc["by_group"]) == 300  # every group stays in the JSON
    assert "more groups not shown" in r.stdout
    assert r.stdout.count("\ng0") <= 45  # the terminal table is capped
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120,
                       env={**env, MAX_GROUPS_ENV: "100"})
    assert r.returncode == 2
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and MAX_GROUPS_ENV in lines[0] and "Traceback" not in r.stderr


def test_memory_is_linear_in_the_groups() -> None:
    """10,000 groups: the families of ``dp`` and ``eodds`` would hold 50 million pairs each
    (gigabytes as arrays); the summaries take a few MB, and agree with the cap's 100 pairs."""
    import tracemalloc

    df = _data(10_000, 2, seed=4)
    frame = AuditFrame(y_pred=df["p"], y_true=df["y"], sensitive_features=df["g"],
                       min_group_size=1, max_groups=10_000)
    tracemalloc.start()
    try:
        for metric in ("dp", "eodds"):
            s = frame.summary(metric)
            assert len(s.pairs) == MAX_LISTED_PAIRS and s.pairs_total >= 10_000 * 9_999 // 2
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 80e6, peak
