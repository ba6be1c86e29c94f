"""PPI++ for the label rates: equal to ppi_py where the estimands coincide (a mean), the ratio
estimator reduces to the mean, lambda in [0, 1], and the coverage over seeds."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm

from fairprobe.stats.ppi import ppi_gap_findings, ppi_mean, ppi_rate, ppi_ratio

ppi_py = pytest.importorskip("ppi_py")


def _data(seed: int, n: int = 150, big_n: int = 2000, acc: float = 0.85
          ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r = np.random.default_rng(seed)
    y = r.binomial(1, 0.3, n).astype(float)
    yh = np.where(r.random(n) < acc, y, 1 - y)
    yu_true = r.binomial(1, 0.3, big_n)
    yu = np.where(r.random(big_n) < acc, yu_true, 1 - yu_true).astype(float)
    return y, yh, yu


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("lam", [None, 0.0, 0.4, 1.0])
def test_mean_interval_equals_ppi_py(seed: int, lam: float | None) -> None:
    y, yh, yu = _data(seed)
    est, se, used = ppi_mean(y, yh, yu, lam=lam)
    z = norm.ppf(0.95)
    lo, hi = ppi_py.ppi_mean_ci(y, yh, yu, alpha=0.1, lam=lam)
    assert est - z * se == pytest.approx(float(lo[0]), abs=1e-12)
    assert est + z * se == pytest.approx(float(hi[0]), abs=1e-12)
    assert 0.0 <= used <= 1.0
    if lam is None:  # the tuned lambda is ppi_py's: its interval at that lambda is the same
        lo2, hi2 = ppi_py.ppi_mean_ci(y, yh, yu, alpha=0.1, lam=used)
        assert (float(lo2[0]), float(hi2[0])) == pytest.approx((float(lo[0]), float(hi[0])))
        assert used > 0.3  # an 85%-accurate proxy carries information


def test_ratio_with_unit_denominator_is_the_mean() -> None:
    y, yh, yu = _data(5)
    one, one_u = np.ones_like(y), np.ones_like(yu)
    assert ppi_ratio(y, one, yh, one, yu, one_u) == pytest.approx(ppi_mean(y, yh, yu))


def test_rate_at_lambda_zero_is_the_labelled_rate_and_a_perfect_proxy_narrows() -> None:
    r = np.random.default_rng(3)
    n = 4000
    y = r.binomial(1, 0.4, n).astype(float)
    p = np.where(y == 1, r.binomial(1, 0.8, n), r.binomial(1, 0.2, n)).astype(float)
    lab = r.random(n) < 0.1
    t = np.where(lab, y, np.nan)
    res = ppi_rate(p, t, y, num=("11",), den=("01", "11"))  # the proxy is the truth
    tpr_lab = p[lab & (y == 1)].mean()
    assert res.classical == pytest.approx(tpr_lab)
    # a perfect proxy: lambda near ADZ23's optimum 1 / (1 + n/N) = 0.9 (estimated, clipped)
    assert res.lam >= 0.8
    assert res.se < res.classical_se / 2
    assert (res.n_labelled, res.n_unlabelled) == (int(lab.sum()), int((~lab).sum()))


def test_gap_coverage_over_seeds() -> None:
    """200 seeds (the experiment runs 1,000): the 95% interval of a TPR gap of 0.1 covers it
    at least 0.90 of the time, and is narrower than the labelled-only one on average."""
    cover, widths, classical = [], [], []
    z = norm.ppf(0.975)
    for seed in range(200):
        r = np.random.default_rng(seed)
        n = 1200
        g = np.repeat(["a", "b"], n // 2)
        y = r.binomial(1, 0.4, n)
        tpr = np.where(g == "a", 0.8, 0.7)
        p = np.where(y == 1, r.random(n) < tpr, r.random(n) < 0.2).astype(float)
        proxy = np.where(r.random(n) < 0.9, y, 1 - y)
        t = np.where(r.random(n) < 0.25, y, np.nan)
        block = ppi_gap_findings(p, t, proxy, g, ["equal_opportunity_difference"],
                                 tolerance=0.05)
        f = block["metrics"][0]["finding"]
        lo, hi = f["interval"]["low"], f["interval"]["high"]
        cover.append(lo <= 0.1 <= hi)
        widths.append(hi - lo)
        ga, gb = block["metrics"][0]["groups"]["a"], block["metrics"][0]["groups"]["b"]
        se_c = math.hypot((ga["classical_high"] - ga["classical"]) / z,
                          (gb["classical_high"] - gb["classical"]) / z)
        classical.append(2 * z * se_c)
    assert np.mean(cover) >= 0.90
    assert np.mean(widths) < 0.95 * np.mean(classical)
    assert f["interval"]["coverage"] == "asymptotic" and f["interval"]["construction"] == "ppi++"


def test_three_groups_bound_the_largest_gap_and_a_group_without_labels_is_refused() -> None:
    from fairprobe.errors import DataError
    from fairprobe.stats.finding import Finding

    r = np.random.default_rng(0)
    n = 3000
    g = r.choice(["a", "b", "c"], n)
    y = r.binomial(1, 0.5, n)
    p = np.where(g == "c", y, r.binomial(1, 0.5, n)).astype(float)
    t = np.where(r.random(n) < 0.3, y, np.nan)
    block = ppi_gap_findings(p, t, y, g, ["fpr", "false_positive_rate_difference"],
                             tolerance=0.05)
    assert len(block["metrics"]) == 1 and block["metrics"][0]["family_size"] == 3
    f = Finding.from_dict(block["metrics"][0]["finding"])
    assert f.low >= 0 and f.estimate >= f.low and f.verdict == "unfair"
    assert f.guarantee is None  # asymptotic: never counted as exact by a headline
    t[g == "b"] = np.nan
    with pytest.raises(DataError, match="--y-true-col has no labelled row in group 'b'"):
        ppi_gap_findings(p, t, y, g, ["false_positive_rate_difference"], tolerance=0.05)
