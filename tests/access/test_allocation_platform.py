"""The budget split across groups, against the platform server run as a real process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fairprobe.audit.run import allocate, draw_queries


def test_allocate_takes_small_groups_whole_and_spreads_the_rest() -> None:
    out = allocate([10_000, 50, 400], 600, "balanced")
    assert out[1] == 50 and sum(out) == 600 and abs(out[0] - out[2]) <= 1
    assert allocate([10, 20], 100, "balanced") == [10, 20]
    uni = allocate([900, 50, 50], 100, "uniform")
    assert uni == [90, 5, 5]


def test_balanced_draw_is_seeded_and_within_group() -> None:
    rng = np.random.default_rng(1)
    pool = pd.DataFrame({"g": rng.choice(["a", "b", "c"], 5000, p=[0.9, 0.07, 0.03]),
                         "x": np.arange(5000)})
    one = draw_queries(pool, 600, 3, group_cols=["g"], allocation="balanced")
    two = draw_queries(pool, 600, 3, group_cols=["g"], allocation="balanced")
    pd.testing.assert_frame_equal(one, two)
    counts = one["g"].value_counts()
    assert len(one) == 600 and one["x"].is_unique
    # c (fewer rows than a third of the budget) is taken whole, the rest split over a and b
    assert counts["c"] == (pool["g"] == "c").sum() < 200
    assert abs(counts["a"] - counts["b"]) <= 1
    other = draw_queries(pool, 600, 4, group_cols=["g"], allocation="balanced")
    assert set(other["x"]) != set(one["x"])


@pytest.mark.parametrize("allocation", ["balanced", "uniform"])
def test_platform_race_audit_budget_1500(platform_url: str, tmp_path: Path,
                                         allocation: str) -> None:
    out = tmp_path / "a.json"
    cmd = [sys.executable, "-m", "fairprobe", "audit", "--url", platform_url,
           "--group-col", "race", "--metric", "dp", "--budget", "1500", "--no-cache",
           "--no-progress", "--json", str(out), "--allocation", allocation]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode in (0, 1), done.stderr
    doc = json.loads(out.read_text())
    result = doc.get("result", doc)
    alloc = result["allocation"]
    assert alloc["method"] == allocation
    q = alloc["queries_by_group"]
    assert sum(q.values()) == 1500 and len(q) == 5
    share = min(q.values()) / 1500
    if allocation == "balanced":
        assert share >= 0.08, q
    else:
        assert share < 0.08, q  # the draw over rows starves the smallest group
