"""Subgroup discovery: exact validity of the p-values, the step-up procedure, planted and null
searches, engines and the command."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binom

from fairprobe.discover import box_pvalues, discover_subgroups, step_up
from fairprobe.discover.fdr import harmonic


@pytest.mark.parametrize(("ns", "nr", "tau"), [(6, 9, 0.0), (8, 12, 0.1), (15, 10, 0.2)])
def test_box_pvalue_is_exactly_valid_on_the_band(ns: int, nr: int, tau: float) -> None:
    """P(p <= a) <= a at every point of the band's edge, by exact enumeration of both counts."""
    ks, kr = np.meshgrid(np.arange(ns + 1), np.arange(nr + 1), indexing="ij")
    p = box_pvalues(ks.ravel(), ns, kr.ravel(), nr, tau).reshape(ks.shape)
    for pr in np.linspace(0.0, 1.0 - tau, 13):
        ps = pr + tau  # the worst null point: the gap exactly at the tolerance
        w = np.outer(binom.pmf(np.arange(ns + 1), ns, ps), binom.pmf(np.arange(nr + 1), nr, pr))
        for a in (0.001, 0.01, 0.05, 0.1, 0.2, 0.5):
            assert w[p <= a].sum() <= a + 1e-12, (ps, pr, a)


def test_step_up_matches_the_definition() -> None:
    rng = np.random.default_rng(3)
    for _ in range(200):
        m = int(rng.integers(1, 40))
        p = np.where(rng.random(m) < 0.3, rng.random(m) * 1e-3, rng.random(m))
        for method, c in (("by", harmonic(m)), ("bh", 1.0)):
            reject, adj, _ = step_up(p, 0.1, method)
            srt = np.sort(p)
            ks = [k for k in range(1, m + 1) if srt[k - 1] <= k * 0.1 / (m * c)]
            k = max(ks) if ks else 0
            assert reject.sum() == k
            assert set(np.flatnonzero(reject)) == set(np.argsort(p, kind="stable")[:k])
            assert np.array_equal(adj <= 0.1, reject)


def _data(n: int, seed: int, planted: float = 0.0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, 3))
    df = pd.DataFrame({
        "region": np.array(list("abcde"))[np.digitize(z[:, 0], [-1, -0.3, 0.3, 1])],
        "job": np.array(list("pqrs"))[np.digitize(z[:, 0] * 0.6 + z[:, 1] * 0.8, [-0.7, 0, 0.7])],
        "tenure": rng.integers(0, 4, n),
        "age": 40 + 10 * (0.5 * z[:, 1] + z[:, 2]),
    })
    p = np.full(n, 0.3)
    p[(df.region == "b") & (df.job == "q").to_numpy()] += planted
    df["y_pred"] = (rng.random(n) < p).astype(int)
    df["y_true"] = (rng.random(n) < 0.4).astype(int)
    return df


def test_finds_a_planted_subgroup() -> None:
    r = discover_subgroups(_data(40_000, 1, planted=0.2), y_pred="y_pred",
                           features=["region", "job", "tenure", "age"])
    labels = [str(s) for s in r.subgroups]
    assert "region = b and job = q" in labels
    top = r.subgroups[0]
    assert top.estimate > 0.1 and top.interval[0] > r.tolerance and top.verdict == "unfair"
    assert r.verdict == "unfair"
    doc = r.to_dict()
    assert doc["subgroups"][0]["conditions"][0]["operator"] == "=="


def test_null_data_reports_none_at_the_stated_rate() -> None:
    """No subgroup differs: some subgroup is reported in at most ~fdr of the searches (here
    none of 20 expected; 6 or more would reject fdr 0.1 at the 1% level)."""
    hits = sum(bool(discover_subgroups(_data(20_000, s), y_pred="y_pred", fdr=0.1,
                                       features=["region", "job", "tenure", "age"]).subgroups)
               for s in range(20))
    assert hits <= 5


def test_engines_agree_and_labels_metrics_work() -> None:
    df = _data(20_000, 2, planted=0.15)
    a = discover_subgroups(df, y_pred="y_pred", y_true="y_true", metric="eo",
                           features=["region", "job"], engine="pandas")
    b = discover_subgroups(df, y_pred="y_pred", y_true="y_true", metric="eo",
                           features=["region", "job"], engine="duckdb")
    assert a.to_dict() == b.to_dict()
    assert a.tested > 0


def test_bad_input_is_one_line(tmp_path: Path) -> None:
    from fairprobe.errors import FairprobeError

    df = _data(1000, 0)
    with pytest.raises(FairprobeError, match="y-true-col"):
        discover_subgroups(df, y_pred="y_pred", features=["region"], metric="eo")
    with pytest.raises(FairprobeError, match="nope"):
        discover_subgroups(df, y_pred="y_pred", features=["nope"])


def test_command_writes_the_subgroups(tmp_path: Path) -> None:
    _data(30_000, 5, planted=0.2).to_parquet(tmp_path / "p.parquet")
    r = subprocess.run([sys.executable, "-m", "fairprobe", "discover", "--predictions",
                        str(tmp_path / "p.parquet"), "--y-pred-col", "y_pred", "--features",
                        "region,job,age", "--json", str(tmp_path / "d.json"), "--fail-on",
                        "unfair"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 5, r.stderr
    doc = json.loads((tmp_path / "d.json").read_text())
    assert doc["kind"] == "discover" and doc["subgroups"]
    assert {"conditions", "size", "estimate", "interval", "verdict"} <= set(doc["subgroups"][0])
    bad = subprocess.run([sys.executable, "-m", "fairprobe", "discover", "--predictions",
                          str(tmp_path / "p.parquet"), "--features", "region"],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "--y-pred-col" in bad.stderr and "Traceback" not in bad.stderr
