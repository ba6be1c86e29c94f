"""The planner's predicted power against the audit itself, simulated at the planned budget."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from fairprobe.errors import InvalidParameterError
from fairprobe.stats import AuditFrame
from fairprobe.stats.plan import plan_audit_budget


def _audit_power(budget: int, shares: dict[str, float], rates: list[float], tol: float,
                 target: str, reps: int, seed: int) -> float:
    """Share of real AuditFrame audits (rows drawn at random) whose DP verdict is ``target``."""
    rng = np.random.default_rng(seed)
    names = list(shares)
    p = np.array(list(shares.values()))
    hits = 0
    for _ in range(reps):
        g = rng.choice(len(names), size=budget, p=p / p.sum())
        pred = (rng.random(budget) < np.asarray(rates)[g]).astype(int)
        s = AuditFrame(y_pred=pred, sensitive_features=np.asarray(names)[g], tolerance=tol,
                       min_group_size=1).summary("dp")
        hits += s.verdict == target
    return hits / reps


@pytest.mark.parametrize(("gap", "target"), [(0.0, "fair"), (0.35, "unfair")])
def test_predicted_power_matches_the_audit(gap: float, target: str) -> None:
    """Rows drawn at random (uniform allocation): the printed power holds with the gap on any
    group, and it is the power of the hardest placement."""
    shares = {"a": 0.5, "b": 0.3, "c": 0.2}
    plan = plan_audit_budget("dp", 0.2, shares, gap=gap, power=0.8, reps=2000, seed=3,
                             allocation="uniform")
    assert plan.target == target and plan.power >= 0.8
    se = np.sqrt(0.16 / 400)
    got = []
    for on in range(3 if gap else 1):
        rates = [0.5] * 3
        rates[on] += gap
        got.append(_audit_power(plan.budget, shares, rates, 0.2, target, reps=400, seed=11))
    assert min(got) >= 0.8 - 2 * se - 0.01, (plan.budget, got)
    assert abs(min(got) - plan.power) <= 0.03 + 2 * se, (plan.budget, got)
    # and at half the budget the audit decides clearly less often
    rates = [0.5] * 3
    rates[["a", "b", "c"].index(plan.hardest_group)] += gap
    assert _audit_power(plan.budget // 2, shares, rates, 0.2, target, 200, 12) < 0.7


def test_plan_validates() -> None:
    with pytest.raises(InvalidParameterError, match="two groups"):
        plan_audit_budget("dp", 0.1, {"a": 1.0})
    with pytest.raises(InvalidParameterError, match="metric"):
        plan_audit_budget("accuracy", 0.1, {"a": 0.5, "b": 0.5})
    with pytest.raises(InvalidParameterError, match="exactly at the tolerance"):
        plan_audit_budget("dp", 0.1, {"a": 0.5, "b": 0.5}, gap=0.1)


def test_cli_plan_json(tmp_path: Path) -> None:
    out = tmp_path / "plan.json"
    r = subprocess.run([sys.executable, "-m", "fairprobe", "plan", "--metric", "dp",
                        "--tolerance", "0.2", "--group-shares", "a=0.5,b=0.3,c=0.2", "--reps", "400",
                        "--json", str(out)], capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    assert doc["budget"] > 0 and doc["target_verdict"] == "fair" and doc["power"] >= 0.8
    bad = subprocess.run([sys.executable, "-m", "fairprobe", "plan", "--group-shares", "a"],
                         capture_output=True, text=True, check=False)
    assert bad.returncode != 0 and "Traceback" not in bad.stderr
    assert "--group-shares" in bad.stderr


def test_two_group_plan_is_checked_on_the_exact_default() -> None:
    """Two groups: the printed power is the share of real default audits (AuditFrame, exact
    two-group interval) on the check's draws (balanced allocation: fixed group sizes, the
    check's seed is the plan's plus one)."""
    shares = {"a": 0.6, "b": 0.4}
    plan = plan_audit_budget("dp", 0.25, shares, power=0.8, reps=300, seed=3, check_reps=60)
    assert plan.target == "fair" and plan.check_reps == 60
    assert "exact default interval" in plan.to_dict()["method"]
    na, nb = plan.group_sizes["a"], plan.group_sizes["b"]
    assert na + nb == plan.budget and abs(na - nb) <= 1
    rng = np.random.default_rng(4)
    k = rng.binomial(np.broadcast_to([na, nb], (60, 2)), 0.5)
    hits = 0
    for ka, kb in k:
        g = np.array(["a"] * na + ["b"] * nb)
        pred = np.array([1] * ka + [0] * (na - ka) + [1] * kb + [0] * (nb - kb))
        hits += AuditFrame(y_pred=pred, sensitive_features=g, tolerance=0.25).summary(
            "dp").verdict == "fair"
    assert hits / 60 == pytest.approx(plan.power, abs=1e-12)
    assert plan.power >= 0.8


def test_the_order_of_the_shares_never_changes_the_plan() -> None:
    import itertools

    spec = {"a": 0.6, "b": 0.3, "c": 0.1}
    for allocation in ("uniform", "balanced"):
        plans = [plan_audit_budget("dp", 0.1, {k: spec[k] for k in order}, gap=0.2,
                                   reps=300, seed=1, allocation=allocation).to_dict()
                 for order in itertools.permutations(spec)]
        assert all(p == plans[0] for p in plans), allocation
    assert plans[0]["gap_placement"].startswith("every group")


def test_balanced_plan_is_the_lower_bound_and_the_default() -> None:
    shares = {"a": 0.9, "b": 0.05, "c": 0.05}
    bal = plan_audit_budget("dp", 0.1, shares, reps=500)
    uni = plan_audit_budget("dp", 0.1, shares, reps=500, allocation="uniform")
    assert bal.allocation == "balanced" and bal.budget * 3 < uni.budget
    with pytest.raises(InvalidParameterError, match="--allocation"):
        plan_audit_budget("dp", 0.1, shares, allocation="adaptve")  # adaptive is planned: test_plan_adaptive.py


def test_a_pool_too_small_for_a_group_is_flagged(tmp_path: Path) -> None:
    """A 2,000-row pool at 85/15: the plan says per group how many rows it needs, flags the
    groups it cannot supply and the power of an audit of the whole pool, in seconds."""
    import time

    import pandas as pd

    pool = tmp_path / "pool.csv"
    pd.DataFrame({"sex": ["m"] * 1700 + ["f"] * 300}).to_csv(pool, index=False)
    out = tmp_path / "plan.json"
    t = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "fairprobe", "plan", "--metric", "dp",
                        "--tolerance", "0.1", "--queries", str(pool), "--group-col", "sex",
                        "--json", str(out)], capture_output=True, text=True, check=False)
    took = time.monotonic() - t
    assert r.returncode == 0, r.stderr
    assert took < 10 * max(1.0, os.getloadavg()[0] / 2), took
    d = json.loads(out.read_text())
    assert d["pool"]["f"]["rows"] == 300 and d["pool"]["m"]["rows"] == 1700
    assert d["pool"]["f"]["short"] == (d["pool"]["f"]["needed"] > 300)
    assert d["pool"]["f"]["short"] and "cannot supply f" in r.stdout
    assert d["reachable"]["queries"] == 2000 and 0.0 <= d["reachable"]["power"] <= 1.0


def test_undetermined_reason_says_how_many_more_queries_decide_it() -> None:
    """An undetermined summary's reason and JSON carry the planner's budget at the observed
    rates; real audits at that budget (same rates) decide as predicted, at the current one not."""
    shares = {"a": 0.4, "b": 0.3, "c": 0.2, "d": 0.1}
    rng = np.random.default_rng(4)
    g = rng.choice(list(shares), size=2000, p=list(shares.values()))
    pred = (rng.random(2000) < 0.5).astype(int)
    s = AuditFrame(y_pred=pred, sensitive_features=g, tolerance=0.1).summary("dp")
    assert s.verdict == "undetermined"
    more = s.more_queries
    assert more is not None and more["target"] == "fair" and more["budget"] > 2000
    assert more["more"] == more["budget"] - 2000
    assert f"about {more['more']:,} more queries" in (s.reason or "")
    assert s.to_dict()["more_queries"] == more
    # the observed gap is the assumed truth: audits with those rates at the planned budget
    gap = more["gap"]
    obs = {k: float(np.mean(g == k)) for k in shares}
    rates = [0.5, 0.5, 0.5, 0.5 + gap]  # on the smallest group, d
    got = _audit_power(more["budget"], obs, rates, 0.1, "fair", reps=120, seed=5)
    assert got >= 0.8 - 0.03 - 2 * np.sqrt(0.16 / 120), got
    assert _audit_power(2000, obs, rates, 0.1, "fair", reps=60, seed=6) < 0.5
    # decided: nothing to plan; two groups: the stand-in scaled by the exact width ratio
    fair = AuditFrame(y_pred=pred, sensitive_features=g, tolerance=0.3).summary("dp")
    assert fair.verdict == "fair" and fair.to_dict()["more_queries"] is None
    two = AuditFrame(y_pred=pred[:300], sensitive_features=np.where(g[:300] == "a", "a", "b"),
                     tolerance=0.15).summary("dp")
    assert two.verdict == "undetermined" and two.more_queries is not None
    assert "exact interval's squared width ratio" in two.more_queries["method"]


def test_report_notes_how_many_more_queries() -> None:
    from fairprobe.report.kinds.audit import adapt_audit

    rng = np.random.default_rng(4)
    g = rng.choice(["a", "b", "c"], size=1500)
    pred = (rng.random(1500) < 0.5).astype(int)
    doc = AuditFrame(y_pred=pred, sensitive_features=g, tolerance=0.1).to_dict(["dp"])
    more = doc["summaries"]["demographic_parity_difference"]["more_queries"]
    assert doc["summaries"]["demographic_parity_difference"]["verdict"] == "undetermined"
    sec = adapt_audit(doc, "audit.json", "")
    assert any(f"{more['more']:,} more queries" in n for n in sec.notes), sec.notes


def test_terminal_prints_how_many_more_queries() -> None:
    import io

    import pandas as pd
    from rich.console import Console

    from fairprobe.audit.predictions import audit_predictions
    from fairprobe.report.groups import print_group_audit

    rng = np.random.default_rng(4)
    df = pd.DataFrame({"g": rng.choice(["a", "b", "c"], size=1500),
                       "p": (rng.random(1500) < 0.5).astype(int)})
    res = audit_predictions(df, y_pred_col="p", group_col="g", metrics=("dp",), tolerance=0.1)
    buf = io.StringIO()
    print_group_audit(res, Console(file=buf, width=400))
    s = res.summaries()["demographic_parity_difference"]
    assert s.verdict == "undetermined" and s.more_queries is not None
    assert f"about {s.more_queries['more']:,} more queries" in buf.getvalue()


def test_more_queries_hint_for_many_groups_is_a_closed_form_in_constant_memory() -> None:
    import time

    from fairprobe.stats.plan import queries_to_decide

    shares = {f"g{i}": 1.0 + (i % 7) for i in range(1000)}
    t = time.perf_counter()
    got = queries_to_decide("demographic_parity_difference", 0.05, 0.3, shares, base_rate=0.3,
                            queried=20000)
    assert time.perf_counter() - t < 1.0
    assert got is not None and got["budget"] > 20000 and "closed form" in got["method"]
    assert got["target"] == "unfair"


def test_a_plan_over_too_many_groups_is_one_clear_error() -> None:
    from fairprobe.errors import InvalidParameterError
    from fairprobe.stats.plan import plan_audit_budget

    with pytest.raises(InvalidParameterError, match="more than the planner simulates"):
        plan_audit_budget("dp", 0.05, {f"g{i}": 1.0 for i in range(5000)})


def test_the_printed_power_holds_wherever_the_gap_falls() -> None:
    """Shares 0.6/0.3/0.1, gap 0.2, the default (balanced) allocation: real audits at the
    printed budget decide unfair with the printed power, the gap on each group in turn (the
    experiment experiments/stats/plan_placement.py runs 1,000 audits a placement)."""
    from fairprobe.stats.plan import allocate

    shares = {"a": 0.6, "b": 0.3, "c": 0.1}
    plan = plan_audit_budget("dp", 0.1, shares, gap=0.2, reps=1000, seed=5)
    g = np.repeat(np.arange(3), allocate(plan.budget, np.full(3, 1 / 3)))
    names = np.array(list(shares))[g]
    rng = np.random.default_rng(8)
    reps = 150
    for on in range(3):
        rates = np.full(3, 0.5)
        rates[on] += 0.2
        hits = sum(AuditFrame(y_pred=(rng.random(g.size) < rates[g]).astype(int),
                              sensitive_features=names, tolerance=0.1,
                              min_group_size=1).summary("dp").verdict == "unfair"
                   for _ in range(reps))
        assert hits / reps >= 0.8 - 3 * np.sqrt(0.16 / reps), (on, hits)
    assert plan.power >= 0.8
