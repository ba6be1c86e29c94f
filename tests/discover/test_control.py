"""``discover --control-col``: a gap a legitimate factor explains is not a finding, a gap left
within its strata is, and the within-strata test keeps the search's error control."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from fairprobe.discover import discover_subgroups
from fairprobe.discover.stratified import hoeffding_pvalues
from fairprobe.errors import DataError

FEATURES = ["region", "occupation", "age"]


def _population(n: int, seed: int, planted: float, *, discrete: bool = False) -> pd.DataFrame:
    """Decisions depend on income, which depends on the region; ``planted`` lowers the drivers'
    approval at every income. ``discrete``: income is a grade of 4 levels (so within a stratum
    decisions do not depend on the region at all)."""
    rng = np.random.default_rng(seed)
    region = rng.choice(list("ABCDE"), n)
    base = pd.Series({"A": 80.0, "B": 60.0, "C": 50.0, "D": 40.0, "E": 25.0})
    income = base[region].to_numpy() + rng.normal(0.0, 10.0, n)
    if discrete:
        income = np.digitize(income, [35.0, 50.0, 65.0]).astype(float)
        p = 0.15 + 0.22 * income
    else:
        p = np.clip(0.1 + 0.8 * (income - 10.0) / 90.0, 0.02, 0.98)
    occ = rng.choice(["clerk", "nurse", "driver", "teacher"], n)
    age = rng.choice(["young", "mid", "old"], n)
    p = np.clip(p - planted * (occ == "driver"), 0.0, 1.0)
    y = (rng.random(n) < p).astype(int)
    return pd.DataFrame({"region": region, "income": income, "occupation": occ, "age": age,
                         "approved": y})


def test_planted_subgroup_ranks_first_only_within_strata() -> None:
    df = _population(6000, 0, 0.2)
    plain = discover_subgroups(df, y_pred="approved", features=FEATURES, depth=2)
    assert plain.subgroups and plain.subgroups[0].conditions[0].feature == "region"
    ctl = discover_subgroups(df, y_pred="approved", features=FEATURES, depth=2,
                             control_cols=["income"])
    assert str(ctl.subgroups[0]) == "occupation = driver"
    assert all("driver" in str(s) for s in ctl.subgroups)
    top = ctl.subgroups[0]
    assert top.interval[1] < -0.05 and top.unadjusted is not None
    assert ctl.control["columns"] == ["income"] and ctl.control["strata"] == 4


def test_legitimate_factor_alone_gives_no_finding() -> None:
    df = _population(6000, 1, 0.0)
    plain = discover_subgroups(df, y_pred="approved", features=FEATURES, depth=2)
    assert plain.verdict == "unfair"  # the regions' income shows up without the control
    ctl = discover_subgroups(df, y_pred="approved", features=FEATURES, depth=2,
                             control_cols=["income"], control_bins=6)
    assert ctl.verdict == "undetermined" and ctl.subgroups == ()


def test_within_strata_gap_and_variance_match_a_direct_computation() -> None:
    df = _population(3000, 2, 0.1, discrete=True)
    res = discover_subgroups(df, y_pred="approved", features=["occupation"], depth=1,
                             control_cols=["income"], tolerance=0.0, fdr=0.5)
    got = {str(s): s for s in res.subgroups}
    s = got["occupation = driver"]
    num = den = v = 0.0
    for _, h in df.groupby("income"):
        ins, out = h[h.occupation == "driver"], h[h.occupation != "driver"]
        if len(ins) and len(out):
            w = len(ins) * len(out) / (len(ins) + len(out))
            num += w * (ins.approved.mean() - out.approved.mean())
            den += w
            v += w * w * (1 / len(ins) + 1 / len(out))
    est, var = num / den, v / den**2
    assert s.estimate == pytest.approx(est, abs=1e-12)
    assert s.p_value == pytest.approx(min(1.0, 2 * np.exp(-2 * abs(est) ** 2 / var)), rel=1e-9)
    # the interval matches the p-value: at the level the rejection met it excludes the band
    a = 1.0 - res.level
    assert s.interval[1] - s.estimate == pytest.approx(np.sqrt(var * np.log(2 / a) / 2), rel=1e-9)


def test_hoeffding_pvalue_is_valid_by_exact_enumeration() -> None:
    # one stratum, 6 vs 7 rows, every rate pair on a grid with |p1 - p2| <= tau: the exact
    # probability that the p-value is <= a never exceeds a
    from scipy import stats

    n1, n2, tau = 6, 7, 0.1
    k1, k2 = np.meshgrid(np.arange(n1 + 1), np.arange(n2 + 1), indexing="ij")
    w = n1 * n2 / (n1 + n2)
    var = np.full(k1.shape, (1 / n1 + 1 / n2))  # (w / W)^2 = 1 with one stratum
    p = hoeffding_pvalues(k1 / n1 - k2 / n2, var, tau)
    assert w > 0
    for p1 in np.linspace(0.0, 1.0, 21):
        for p2 in (p1 - tau, p1, p1 + tau):
            if not 0.0 <= p2 <= 1.0:
                continue
            prob = np.outer(stats.binom.pmf(np.arange(n1 + 1), n1, p1),
                            stats.binom.pmf(np.arange(n2 + 1), n2, p2))
            for a in (0.05, 0.2, 0.5):
                assert prob[p <= a].sum() <= a + 1e-12


def test_no_within_strata_gap_reports_at_most_fdr_over_seeds() -> None:
    # decisions depend on the grade alone: every subgroup's within-stratum gap is 0, so any
    # report is false; over 150 seeds the share of searches reporting one stays <= the FDR
    hits = [bool(discover_subgroups(_population(1500, s, 0.0, discrete=True),
                                    y_pred="approved", features=FEATURES, depth=2,
                                    tolerance=0.0, fdr=0.1,
                                    control_cols=["income"]).subgroups) for s in range(150)]
    rate = float(np.mean(hits))
    assert rate <= 0.1 + 2 * np.sqrt(0.1 * 0.9 / 150), rate


def test_control_on_a_feature_or_a_missing_column_is_one_error() -> None:
    df = _population(500, 3, 0.0)
    with pytest.raises(DataError, match="--control-col 'income' is also in --features"):
        discover_subgroups(df, y_pred="approved", features=["income", "region"],
                           control_cols=["income"])
    with pytest.raises(DataError, match="--control-col"):
        discover_subgroups(df, y_pred="approved", features=["region"], control_cols=["incme"])


def test_cli_prints_writes_and_refuses(tmp_path) -> None:
    path = tmp_path / "d.csv"
    _population(4000, 4, 0.2).to_csv(path, index=False)
    out = tmp_path / "o.json"
    base = [sys.executable, "-m", "fairprobe", "discover", "--predictions", str(path),
            "--y-pred-col", "approved", "--features", "region,occupation,age"]
    r = subprocess.run([*base, "--control-col", "income", "--json", str(out)],
                       capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stderr
    assert "within the 4 strata of income" in r.stdout
    doc = json.loads(out.read_text())
    assert doc["control"]["columns"] == ["income"]
    labels = [s["label"] for s in doc["subgroups"]]
    assert "occupation = driver" in labels and all("driver" in x for x in labels)
    assert "unadjusted_estimate" in doc["subgroups"][0]
    bad = subprocess.run([*base, "--control-col", "incme"], capture_output=True, text=True,
                         check=False)
    assert bad.returncode != 0 and "Traceback" not in bad.stderr
    assert bad.stderr.strip().count("\n") == 0 and "--control-col" in bad.stderr
