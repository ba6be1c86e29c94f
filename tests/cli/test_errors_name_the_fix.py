"""Errors that name the fix: a continuous column given as --group-col is refused in one line
naming the column and --max-groups, and audited when --max-groups allows it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd


def _audit(tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "fairprobe", "audit", "--predictions", str(tmp_path / "p.csv"),
         "--y-pred-col", "y", "--group-col", "income", "--metric", "dp", "--min-group-size",
         "1", *extra], capture_output=True, text=True, timeout=120)


def test_continuous_group_column_is_refused_unless_max_groups(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    pd.DataFrame({"income": np.round(rng.lognormal(10, 1, 520), 2),
                  "y": rng.integers(0, 2, 520)}).to_csv(tmp_path / "p.csv", index=False)
    r = _audit(tmp_path)
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert r.returncode == 2 and len(lines) == 1, r.stderr
    assert lines[0].startswith("error: --group-col income has 520 distinct values")
    assert "--max-groups 520" in lines[0] and "Traceback" not in r.stderr
    r = _audit(tmp_path, "--max-groups", "520")
    assert r.returncode == 0, r.stderr
