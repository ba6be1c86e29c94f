"""``plan --allocation adaptive``: the cap is searched on simulated adaptive audits, and the plan
says, simulated with standard errors, the queries spent and the share decided."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from fairprobe.stats.plan import adaptive_outcome, plan_audit_budget

SHARES = {"a": 0.4, "b": 0.3, "c": 0.3}


def test_adaptive_cap_reaches_the_power_and_spends_less_when_far() -> None:
    p = plan_audit_budget("dp", 0.1, SHARES, gap=0.25, power=0.8, reps=400, seed=0,
                          allocation="adaptive")
    a = p.adaptive
    assert a is not None and a["simulated"] and a["cap"] == p.budget
    assert a["target_share"] == p.power and p.power >= 0.8
    # far from the tolerance the batches stop early: fewer queries than the cap on average
    assert a["expected_queries"] + 3 * a["expected_queries_se"] < p.budget
    assert a["decided"] >= a["target_share"]
    # the same design on another seed agrees within the standard errors
    again = adaptive_outcome("dp", 0.1, 3, p.budget, gap=0.25, target="unfair", reps=400,
                             seed=7, on=0)
    assert abs(again["target_share"] - a["target_share"]) < 4 * (a["target_share_se"] + 0.02)
    # the looks' union bound widens the intervals: the cap is no smaller than balanced's budget
    bal = plan_audit_budget("dp", 0.1, SHARES, gap=0.25, power=0.8, reps=400, seed=0,
                            allocation="balanced")
    assert p.budget >= bal.budget and bal.adaptive is None


def test_plan_cli_adaptive_json_and_sentence(tmp_path: Path) -> None:
    out = tmp_path / "plan.json"
    r = subprocess.run(
        [sys.executable, "-m", "fairprobe", "plan", "--metric", "dp", "--tolerance", "0.1",
         "--group-shares", "a=0.4,b=0.3,c=0.3", "--allocation", "adaptive", "--reps", "200",
         "--json", str(out)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    assert doc["allocation"] == "adaptive" and doc["adaptive"]["cap"] == doc["budget"]
    assert doc["adaptive"]["batches"] == 5 and doc["adaptive"]["reps"] == 200
    assert "simulated over 200 audits" in r.stdout and "queries spent on average" in r.stdout
    r = subprocess.run([sys.executable, "-m", "fairprobe", "plan", "--group-shares", "a=1,b=1",
                        "--allocation", "adaptve"], capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "--allocation must be one of" in r.stderr
