"""The large-budget regime (Appendix B): corrected DI through B, policies, and the three regimes.

Guarantees tested here:

* the double-sampling estimator equals the plug-in ratio by true group (and its Katz standard
  error) when every record is validated, and is unbiased with about nominal coverage under
  *differential* misclassification, where the matrix method is biased (simulation, 4,000 draws);
* the fixed split spends exactly the planned budget; Thompson sampling buys more checks when
  the inconsistency rate is high;
* ``fairprobe twosource --budget T --epsilon 0.1`` on a real platform process follows the regime
  of T: refused below t_A, the paper's split between t_A and t_B, the corrected DI through B
  above t_B (its JSON: regime, corrected DI with interval, the checks, a ``finding``).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from fairprobe.cli.main import main
from fairprobe.stats.finding import Finding
from fairprobe.twosource.bandit import FixedSplit, PolicyState, ThompsonSplit
from fairprobe.twosource.correction import (
    checked_positives,
    double_sampling_di,
    double_sampling_interval,
    double_sampling_log_di,
    double_sampling_se,
    matrix_log_di,
)


def _draw_cells(rng: np.random.Generator, reps: int, n_b: int, n_v: int) -> tuple[Any, Any, float]:
    """Differential misclassification: the proxy errs more often for positive women."""
    pi_u, r = 0.35, np.array([0.15, 0.45])
    # P(proxy right | g, y): women 0.6 if positive, 0.75 if negative; men 0.85 both
    right = np.array([[0.75, 0.6], [0.85, 0.85]])
    cells = np.zeros((2, 2, 2))
    for g, pg in ((0, pi_u), (1, 1 - pi_u)):
        for y, py in ((0, 1 - r[g]), (1, r[g])):
            cells[g, g, y] = pg * py * right[g, y]
            cells[g, 1 - g, y] = pg * py * (1 - right[g, y])
    flat = cells.reshape(8)
    v = rng.multinomial(n_v, flat, size=reps)
    u_full = rng.multinomial(n_b - n_v, flat, size=reps).reshape(reps, 2, 2, 2).sum(axis=1)
    return u_full.reshape(reps, 4), v, float(r[0] / r[1])


def test_all_validated_is_the_plug_in_ratio_with_the_katz_error() -> None:
    v = np.array([30, 10, 5, 15, 200, 120, 40, 180])  # (g, g_hat, y)
    u = np.zeros(4)
    by_g = v.reshape(2, 2, 2).sum(axis=1)
    ru, rp = by_g[0, 1] / by_g[0].sum(), by_g[1, 1] / by_g[1].sum()
    assert math.exp(float(double_sampling_log_di(u, v))) == pytest.approx(ru / rp, rel=1e-12)
    katz = math.sqrt((1 - ru) / (ru * by_g[0].sum()) + (1 - rp) / (rp * by_g[1].sum()))
    assert float(double_sampling_se(u, v)) == pytest.approx(katz, rel=1e-5)


def test_double_sampling_is_unbiased_and_covers_under_differential_errors() -> None:
    rng = np.random.default_rng(7)
    u, v, mu = _draw_cells(rng, 4000, 3000, 1500)
    lm = double_sampling_log_di(u, v)
    se = double_sampling_se(u, v)
    z = 1.959963984540054
    cover = np.mean((lm - z * se <= math.log(mu)) & (math.log(mu) <= lm + z * se))
    assert abs(np.mean(np.exp(lm)) - mu) < 0.01  # the bias is gone (true DI 0.333)
    assert 0.93 <= cover <= 0.97  # nominal 95%; SE of the estimate 0.0034
    # the matrix method with the true per-group accuracies is biased here (errors differential)
    acc = np.broadcast_to(np.array([0.72, 0.85]), (u.shape[0], 2))
    o = u + v.reshape(-1, 2, 2, 2).sum(axis=1).reshape(-1, 4)
    assert abs(np.nanmean(np.exp(matrix_log_di(o, acc))) - mu) > 0.03


def test_corrected_interval_covers_where_printed_in_sparse_cells() -> None:
    """Rates 0.10 / 0.40 and 0.02 / 0.05 with 100 checks of 1,000, differential proxy errors:
    the delta interval, printed where each group has >= 3 checked positives, covers well below
    0.95 among the audits it is printed for; the exact box covers >= 0.95 among all audits and
    among the printed ones (docs/twosource.md, corrected_di_coverage.py)."""
    import importlib.util

    path = Path(__file__).resolve().parents[2] / "experiments" / "twosource" / \
        "corrected_di_coverage.py"
    spec = importlib.util.spec_from_file_location("corrected_di_coverage", path)
    assert spec is not None and spec.loader is not None
    exp = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(exp)
    for rates in ((0.10, 0.40), (0.02, 0.05)):
        u, v, mu = exp.draw(np.random.default_rng(3), 1000, 1000, 100, rates)
        _, lo, hi, open_ended = double_sampling_interval(u, v, 0.95)
        assert not (np.isnan(lo) | np.isnan(hi)).any()
        cov = (lo <= mu) & (mu <= hi)
        assert cov.mean() >= 0.95 and cov[~open_ended].mean() >= 0.95
        assert np.isinf(hi[open_ended]).all() and np.isfinite(hi[~open_ended]).all()
        lm, se = double_sampling_log_di(u, v), double_sampling_se(u, v)
        with np.errstate(invalid="ignore", over="ignore"):
            dlo, dhi = np.exp(lm - 1.96 * se), np.exp(lm + 1.96 * se)
        printed = np.isfinite(dlo) & np.isfinite(dhi) & (checked_positives(v).min(axis=-1) >= 3)
        assert np.mean(((dlo <= mu) & (mu <= dhi))[printed]) < 0.94
    # one audit with a single checked positive woman: an interval, but no upper bound
    res = double_sampling_di([300, 10, 500, 40], [30, 1, 3, 0, 5, 0, 55, 6])
    assert res.counts["checked_positives"] == [1, 6]
    assert res.coverage == "exact" and res.low >= 0.0
    f = res.finding()
    if math.isinf(res.high):
        assert "no upper bound" in (f.reason or "")
    assert f.verdict in ("undetermined", "fair")


def test_corrected_result_states_its_finding() -> None:
    v = 4 * np.array([50, 5, 10, 2, 200, 120, 40, 180])  # women 7/67 positive, men 300/540
    res = double_sampling_di(4 * np.array([50, 20, 30, 60]), v)
    f = res.finding()
    assert isinstance(f, Finding) and f.question.subject == "model"
    assert f.verdict == "unfair" and f.high < 0.8 and f.coverage == "exact"
    assert Finding.from_dict(f.to_dict()).verdict == f.verdict
    with pytest.raises(Exception, match="validated"):
        double_sampling_di([50, 20, 30, 60], np.zeros(8))


def test_fixed_split_spends_the_plan_and_thompson_follows_the_evidence() -> None:
    pol = FixedSplit(400)
    assert pol.next_action(PolicyState(1000, 0, 0, 0)) == ("b", 600)
    assert pol.next_action(PolicyState(400, 600, 0, 0)) == ("check", 400)

    def run(rate: float) -> int:
        pol = ThompsonSplit(0.25, 0.35, m0=20, batch=20, seed=3)
        rng = np.random.default_rng(0)
        left, nb, nc, ni = 2000, 0, 0, 0
        while left > 0:
            arm, k = pol.next_action(PolicyState(left, nb, nc, ni))
            if arm == "b":
                nb += k
            else:
                ni += int(rng.binomial(k, rate))
                nc += k
            left -= k
        assert nc <= nb and nb + nc == 2000
        return nc

    assert run(0.45) > 800 > run(0.15)


# ---- the three regimes end to end on a real platform process --------------------------------


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    out = capsys.readouterr()
    return int(exc.value.code or 0), out.out, out.err


def test_budget_follows_its_regime_on_the_fairwashing_platform(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], live_platform: Any
) -> None:
    base = ["twosource", "--url", live_platform.url, "--epsilon", "0.1", "--seed", "1",
            "--cache", str(tmp_path / "c.sqlite"), "--no-progress"]  # fmt: skip
    # small: refused with the reason, one line, nothing asked
    code, _, err = _run([*base, "--budget", "300"], capsys)
    assert code != 0 and "small regime" in err and "t_A" in err and err.count("\n") == 1
    # between t_A and t_B: the paper's split, verdict through A
    p = tmp_path / "mid.json"
    code, out, _ = _run([*base, "--budget", "1000", "--json", str(p)], capsys)
    d = json.loads(p.read_text())
    assert code == 0 and d["regime"] == "pareto" and d["source_of_estimate"] == "A"
    assert d["plan"]["t_a"] <= 1000 <= d["plan"]["t_b"]
    assert d["allocation"]["t_fraud"] == d["plan"]["recommended"]["t_fraud"]
    assert d["finding"]["question"]["subject"] == "model" and "di_b_corrected" not in d
    # A was caught fairwashing: its DI is no evidence about the model, never a "fair" finding
    assert d["verdict"] == "manipulated" and d["finding"]["verdict"] == "undetermined"
    assert "manipulated" in d["finding"]["reason"]
    assert d["finding"]["interval"]["coverage"] == "conditional"
    # above t_B: the corrected DI through B decides, A only checks
    p = tmp_path / "ts.json"
    csv = tmp_path / "ts.csv"
    code, out, _ = _run([*base, "--budget", "3000", "--json", str(p), "--csv", str(csv)], capsys)
    assert "DI through B, corrected" in csv.read_text()
    d = json.loads(p.read_text())
    assert code == 0 and d["regime"] == "large" and d["source_of_estimate"] == "B"
    assert "regime               : large" in out and "corrected" in out
    corr = d["di_b_corrected"]
    lo, hi = corr["interval"]
    assert corr["method"] == "double-sampling-exact-box" and lo < corr["estimate"] < hi
    # B's decisions by true sex on the whole pool: DI 0.478 (the platform decides on the sex
    # it infers); the fairwashed A at gamma 0.6 would say about 1.4
    # the exact interval (coverage >= 95% at every sample size) holds the truth
    assert lo < 0.478 < hi
    assert d["finding"]["verdict"] == ("unfair" if hi < 0.8 else "undetermined")
    assert d["finding"]["question"]["subject"] == "model"
    assert d["finding"]["interval"]["low"] == pytest.approx(lo)
    assert d["verdict"] == "manipulated" and "conditional" in d["detected_by"]
    assert d["queries"]["a"] == d["large"]["n_checks"] == d["plan"]["recommended"]["n_a"]
    assert d["queries"]["b"] + d["queries"]["a"] == 3000 and d["n_checked"] > 1000
    # the corrected DI's interval is exact, so its finding counts in the gate: unfair trips it
    assert d["finding"]["interval"]["coverage"] == "exact"
    code, _, err = _run([*base, "--budget", "3000", "--fail-on", "unfair"], capsys)
    assert (code != 0) == (d["finding"]["verdict"] == "unfair")
    code, _, err = _run([*base, "--budget", "1000", "--fail-on", "undetermined"], capsys)
    assert code == 6 and "verdict undetermined: exit 6" in err
    # the bandit is selectable, and the same budget is spent
    p = tmp_path / "bandit.json"
    code, _, _ = _run([*base, "--budget", "3000", "--policy", "thompson", "--json", str(p)],
                      capsys)  # fmt: skip
    d = json.loads(p.read_text())
    assert code == 0 and d["policy"]["policy"] == "thompson" and d["regime"] == "large"
    assert d["queries"]["b"] + d["queries"]["a"] == 3000 and d["verdict"] == "manipulated"
    # a closed choice: one line naming the flag; --checks cannot override the plan
    code, _, err = _run([*base, "--budget", "3000", "--policy", "greedy"], capsys)
    assert code != 0 and "policy" in err and err.count("\n") == 1
    code, _, err = _run([*base, "--budget", "3000", "--checks", "10"], capsys)
    assert code != 0 and "--checks" in err and err.count("\n") == 1
