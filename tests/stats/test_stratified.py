"""Gaps within strata of a legitimate factor (``--control-col``): the Mantel-Haenszel estimate
against a hand computation, and the verdicts on data whose gap the factor explains or not."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from fairprobe.errors import DataError
from fairprobe.stats.stratified import mantel_haenszel_difference, stratified_gaps


def _population(seed: int, n: int, planted: float) -> pd.DataFrame:
    """Group A sits mostly in the high tier; decisions depend on the tier only, minus
    ``planted`` for group B in every tier."""
    rng = np.random.default_rng(seed)
    group = np.where(rng.random(n) < 0.5, "A", "B")
    p_tier = {"A": [0.2, 0.3, 0.5], "B": [0.5, 0.3, 0.2]}
    u = rng.random(n)
    tier = np.where(group == "A",
                    np.searchsorted(np.cumsum(p_tier["A"]), u, side="right"),
                    np.searchsorted(np.cumsum(p_tier["B"]), u, side="right"))
    rate = np.array([0.2, 0.5, 0.8])[tier] - planted * (group == "B")
    y = (rng.random(n) < rate).astype(int)
    return pd.DataFrame({"group": group, "tier": tier, "y_pred": y})


def test_mantel_haenszel_difference_by_hand() -> None:
    # two strata: (a, n1, b, n0) = (30, 50, 20, 50) and (10, 20, 12, 40)
    a, n1, b, n0 = (np.array(v) for v in ([30, 10], [50, 20], [20, 12], [50, 40]))
    big_n = n1 + n0
    w = n1 * n0 / big_n
    want = float(((a * n0 - b * n1) / big_n).sum() / w.sum())
    est, var, sw = mantel_haenszel_difference(a, n1, b, n0)
    assert est == pytest.approx(want, abs=1e-12)
    assert sw == pytest.approx(float(w.sum()), abs=1e-12)
    p = (n1**2 * b - n0**2 * a + n1 * n0 * (n0 - n1) / 2) / big_n**2
    q = (a * (n0 - b) + b * (n1 - a)) / (2 * big_n)
    assert var == pytest.approx(float((want * p.sum() + q.sum()) / w.sum() ** 2), rel=1e-12)


def test_factor_explains_the_gap_within_strata_fair_while_unconditional_unfair() -> None:
    df = _population(seed=1, n=20_000, planted=0.0)
    crude = df.groupby("group")["y_pred"].mean()
    assert crude["A"] - crude["B"] > 0.15  # the unconditional gap is far outside 0.05
    out = stratified_gaps(df, y_pred=df["y_pred"], groups=df["group"], controls=["tier"],
                          tolerance=0.05)
    assert out.finding.verdict == "fair", out.finding
    assert abs(out.finding.estimate) < 0.03
    assert len(out.strata) == 3


def test_planted_gap_within_strata_is_unfair() -> None:
    df = _population(seed=2, n=20_000, planted=0.15)
    out = stratified_gaps(df, y_pred=df["y_pred"], groups=df["group"], controls=["tier"],
                          tolerance=0.05)
    assert out.finding.verdict == "unfair"
    assert out.finding.estimate == pytest.approx(0.15, abs=0.03)
    assert out.finding.low > 0.05


def test_one_group_strata_are_listed_not_dropped() -> None:
    df = _population(seed=3, n=4_000, planted=0.0)
    df.loc[df["tier"] == 2, "group"] = "A"  # the top tier holds group A only
    out = stratified_gaps(df, y_pred=df["y_pred"], groups=df["group"], controls=["tier"],
                          tolerance=0.05)
    one = [s for s in out.strata if "one_group" in s]
    assert [s["one_group"] for s in one] == ["A"]
    assert one[0]["rows"] == int((df["tier"] == 2).sum())


def test_no_stratum_with_two_groups_is_one_clear_error() -> None:
    df = pd.DataFrame({"group": ["A"] * 20 + ["B"] * 20, "tier": [0] * 20 + [1] * 20,
                       "y_pred": [1, 0] * 20})
    with pytest.raises(DataError, match="--control-col"):
        stratified_gaps(df, y_pred=df["y_pred"], groups=df["group"], controls=["tier"])


def test_cli_reports_both_gaps(tmp_path) -> None:
    df = _population(seed=1, n=20_000, planted=0.0)
    path = tmp_path / "preds.csv"
    df.to_csv(path, index=False)
    out = tmp_path / "out.json"
    r = subprocess.run(
        [sys.executable, "-m", "fairprobe", "audit", "--predictions", str(path),
         "--y-pred-col", "y_pred", "--group-col", "group", "--metric", "dp",
         "--tolerance", "0.05", "--control-col", "tier", "--json", str(out)],
        capture_output=True, text=True, timeout=120)
    assert "Traceback" not in r.stderr, r.stderr
    doc = json.loads(out.read_text())
    (ctl,) = doc["control"]
    assert ctl["verdict"] == "fair"
    assert ctl["unconditional"]["finding"]["verdict"] == "unfair"
    assert 0.8 < ctl["unconditional"]["share_explained"] <= 1.2
    assert "tier" in r.stdout
    bad = subprocess.run(
        [sys.executable, "-m", "fairprobe", "audit", "--predictions", str(path),
         "--y-pred-col", "y_pred", "--group-col", "group", "--control-col", "nope"],
        capture_output=True, text=True, timeout=120)
    assert bad.returncode != 0 and "Traceback" not in bad.stderr
    assert "nope" in (bad.stderr + bad.stdout)
