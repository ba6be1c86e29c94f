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
from fairprobe.discover.fdr import _shape, harmonic, split_pvalues
from fairprobe.discover.unconditional import joint_interval, joint_pvalues


def _size(p: np.ndarray, ns: int, nr: int, ps: float, pr: float, a: float) -> float:
    """P(p <= a) at (ps, pr), by exact enumeration of both counts."""
    w = np.outer(binom.pmf(np.arange(ns + 1), ns, ps), binom.pmf(np.arange(nr + 1), nr, pr))
    return float(w[p <= a].sum())


@pytest.mark.parametrize("kind", ["box", "split", "joint"])
@pytest.mark.parametrize(("ns", "nr", "tau"), [(6, 9, 0.0), (8, 12, 0.1), (15, 10, 0.2),
                                               (12, 40, 0.05)])
def test_pvalues_are_exactly_valid_on_the_band(kind: str, ns: int, nr: int, tau: float) -> None:
    """P(p <= a) <= a at every null point tried (both edges of the band and its middle), by
    exact enumeration of both counts, for every construction."""
    ks, kr = np.meshgrid(np.arange(ns + 1), np.arange(nr + 1), indexing="ij")
    k1, k2 = ks.ravel(), kr.ravel()
    gamma = 0.01
    p = {"box": lambda: box_pvalues(k1, ns, k2, nr, tau),
         "split": lambda: split_pvalues(k1, ns, k2, nr, tau, gamma),
         "joint": lambda: joint_pvalues(k1, ns, k2, nr, tau, gamma)}[kind]().reshape(ks.shape)
    for pr in np.linspace(0.0, 1.0, 15):
        for d in (-tau, 0.0, tau):
            ps = pr + d
            if not 0.0 <= ps <= 1.0:
                continue
            for a in (0.005, 0.01, 0.05, 0.1, 0.2, 0.5):
                assert _size(p, ns, nr, ps, pr, a) <= a + 1e-12, (kind, ps, pr, a)


def test_joint_is_sharper_than_split_and_box_on_a_small_subgroup() -> None:
    """The planted case the search is measured on: a 2% subgroup 0.1 above a rest at 0.3,
    tolerance 0.05, at Holm's first threshold over 872 tests."""
    rng = np.random.default_rng(5)
    ns, nr = 2_000, 98_000
    ks, kr = rng.binomial(ns, 0.4, 300), rng.binomial(nr, 0.3, 300)
    a = 0.1 / 872
    got = {"joint": joint_pvalues(ks, ns, kr, nr, 0.05, a / 100, sharp_at=[a]),
           "split": split_pvalues(ks, ns, kr, nr, 0.05, a * 0.13),
           "box": box_pvalues(ks, ns, kr, nr, 0.05)}
    power = {k: float(np.mean(v <= a)) for k, v in got.items()}
    assert power["joint"] > power["split"] > power["box"], power
    assert power["joint"] > 0.6, power


def test_joint_interval_agrees_with_the_test() -> None:
    rng = np.random.default_rng(2)
    ns, nr, tau, gamma = 400, 5_000, 0.05, 1e-6
    ks, kr = rng.binomial(ns, 0.45, 40), rng.binomial(nr, 0.3, 40)
    a = 1e-3
    p = joint_pvalues(ks, ns, kr, nr, tau, gamma, sharp_at=[a])
    lo, hi = joint_interval(ks, ns, kr, nr, 1 - a, gamma, tau=tau)
    rejected = p <= a
    assert rejected.any() and (~rejected).any()
    assert np.all(lo[rejected] >= tau) and np.all(lo <= ks / ns - kr / nr)
    assert np.all(hi >= ks / ns - kr / nr)


def test_staged_joint_pvalues_reject_what_the_full_computation_rejects() -> None:
    """The staged computation (the p-values that can matter first) gives the same list."""
    rng = np.random.default_rng(9)
    m = 300
    ns = rng.integers(30, 3_000, m)
    nr = 100_000 - ns
    ks = rng.binomial(ns, np.where(rng.random(m) < 0.1, 0.42, 0.3))
    kr = rng.binomial(nr, 0.3)
    for method in ("holm", "reshaped", "by", "bh"):
        for tau in (0.0, 0.05):
            def settle(v: np.ndarray, mt: str = method) -> np.ndarray:
                return step_up(v, 0.1, mt)[0]

            # every p-value computed (refined where the decision needs it), then staged
            full = joint_pvalues(ks, ns, kr, nr, tau, 1e-7, cap=0.1, settle=settle)
            staged = joint_pvalues(ks, ns, kr, nr, tau, 1e-7, cap=0.1, settle=settle,
                                   first=0.1 / m)
            assert np.array_equal(step_up(full, 0.1, method)[0],
                                  step_up(staged, 0.1, method)[0]), (method, tau)


def test_step_up_matches_the_definition() -> None:
    rng = np.random.default_rng(3)
    for _ in range(200):
        m = int(rng.integers(1, 40))
        p = np.where(rng.random(m) < 0.3, rng.random(m) * 1e-3, rng.random(m))
        c = harmonic(m)
        thresholds = {"by": lambda k, m=m, c=c: k * 0.1 / (m * c),
                      "bh": lambda k, m=m, c=c: k * 0.1 / m,
                      "reshaped": lambda k, m=m, c=c: 0.1 * (0.5 + k / (2 * c)) / m}
        for method, thr in thresholds.items():
            reject, adj, _ = step_up(p, 0.1, method)
            srt = np.sort(p)
            ks = [k for k in range(1, m + 1) if srt[k - 1] <= thr(k)]
            k = max(ks) if ks else 0
            assert reject.sum() == k, method
            assert set(np.flatnonzero(reject)) == set(np.argsort(p, kind="stable")[:k])
            assert np.array_equal(adj <= 0.1, reject)
        # Holm: reject in order while p_(i) <= q / (m - i + 1)
        reject, adj, _ = step_up(p, 0.1, "holm")
        srt = np.sort(p)
        k = 0
        while k < m and srt[k] <= 0.1 / (m - k):
            k += 1
        assert reject.sum() == k and np.array_equal(adj <= 0.1, reject)
    assert np.allclose(_shape("by", 5), np.arange(1, 6) / harmonic(5))


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


def test_files_are_binned_and_counted_by_the_engine(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A Parquet file's quantile bins come from the engine and its binned features are
    derived in the same aggregation: no row is read into pandas (the reader is disabled), and
    the result equals the in-memory pandas engine's (edges to the last few ulps: DuckDB's and
    numpy's linear interpolations round differently)."""
    import fairprobe.discover.search as search
    import fairprobe.scale.engine as engine

    df = _data(30_000, 7, planted=0.2)
    df.loc[::7, "age"] = df.loc[::7, "age"].round()  # ties at some values
    df.to_parquet(tmp_path / "p.parquet")
    mem = discover_subgroups(df, y_pred="y_pred", y_true="y_true",
                             features=["region", "job", "tenure", "age"], engine="pandas")

    def refuse(*_: object, **__: object) -> None:
        raise AssertionError("rows read into pandas")

    monkeypatch.setattr(engine, "_to_pandas", refuse)
    monkeypatch.setattr(search, "_read", refuse)
    got = discover_subgroups(str(tmp_path / "p.parquet"), y_pred="y_pred", y_true="y_true",
                             features=["region", "job", "tenure", "age"])
    assert set(got.bins) == {"age"} and np.allclose(got.bins["age"], mem.bins["age"],
                                                    rtol=1e-12)
    assert got.tested == mem.tested and got.subgroups
    a, b = got.to_dict(), mem.to_dict()
    assert [s["label"] for s in a["subgroups"]] == [s["label"] for s in b["subgroups"]]
    assert [s["size"] for s in a["subgroups"]] == [s["size"] for s in b["subgroups"]]
    assert np.allclose([s["p_value"] for s in a["subgroups"]],
                       [s["p_value"] for s in b["subgroups"]])


def test_a_missing_numeric_value_is_one_line(tmp_path: Path) -> None:
    from fairprobe.errors import DataError

    df = _data(2_000, 3)
    df.loc[5, "age"] = np.nan
    df.to_parquet(tmp_path / "p.parquet")
    for src, eng in ((str(tmp_path / "p.parquet"), "auto"), (df, "pandas")):
        with pytest.raises(DataError, match="'age' holds 1 missing"):
            discover_subgroups(src, y_pred="y_pred", features=["region", "age"], engine=eng)


def _brute_sup(ks: int, ns: int, kr: int, nr: int, tau: float, gamma: float) -> float:
    """``gamma`` plus both sides' suprema over 1,001 rates evenly spread over the rest's
    interval ``C``, each probability by enumerating both counts: at most the exact p-value."""
    from scipy.stats import beta

    lo = beta.ppf(gamma / 2, kr, nr - kr + 1) if kr > 0 else 0.0
    hi = beta.ppf(1 - gamma / 2, kr + 1, nr - kr) if kr < nr else 1.0
    r = np.linspace(lo, hi, 1001)[:, None]
    x = abs(ks / ns - kr / nr)
    d = np.arange(ns + 1)[:, None] / ns - np.arange(nr + 1)[None, :] / nr
    total = gamma
    for sign in (1.0, -1.0):  # D >= x at (r + tau, r), then D <= -x at (r - tau, r)
        ps = np.clip(r + sign * tau, 0.0, 1.0)
        w_s = binom.pmf(np.arange(ns + 1)[None, :], ns, ps)
        w_r = binom.pmf(np.arange(nr + 1)[None, :], nr, r)
        mask = (sign * d >= x - 1e-12).astype(float)
        total += float(((w_s @ mask) * w_r).sum(axis=1).max())
    return total


@pytest.mark.parametrize(("ns", "nr", "tau"), [(5, 8, 0.0), (12, 25, 0.1), (30, 60, 0.05),
                                               (30, 12, 0.2)])
def test_joint_pvalue_is_the_exact_supremum_from_above(ns: int, nr: int, tau: float) -> None:
    """On small sizes, against the supremum found by brute force (a fine grid of the rest's
    rate, both counts enumerated): never below it (valid) and within 2% of it (sharp: the pieces
    are refined until their bounds are within ``SLACK`` of the largest value seen, 1%)."""
    rng = np.random.default_rng(ns * 100 + nr)
    ks = np.concatenate([[0, ns, 0, ns], rng.integers(0, ns + 1, 16)])
    kr = np.concatenate([[0, nr, nr, 0], rng.integers(0, nr + 1, 16)])
    gamma = 0.01
    got = joint_pvalues(ks, ns, kr, nr, tau, gamma)
    want = np.array([_brute_sup(int(a), ns, int(b), nr, tau, gamma)
                     for a, b in zip(ks, kr, strict=True)])
    assert np.all(got >= np.minimum(want, 1.0) - 1e-12), (got, want)
    below = want < 1.0  # the p-value is capped at 1
    excess = got[below] / want[below]
    assert below.sum() >= 8 and np.all(excess <= 1.02), excess
