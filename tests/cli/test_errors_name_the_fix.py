"""Errors that name the fix: a continuous column given as --group-col is refused in one line
naming the column and --max-groups, and audited when --max-groups allows it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest


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


@pytest.mark.parametrize("engine", ["duckdb", "pandas"])
def test_label_errors_name_the_fix_alike_in_every_reader(tmp_path: Path, engine: str) -> None:
    from fairprobe.errors import DataError
    from fairprobe.scale import CountSpec, count

    df = pd.DataFrame({"g": ["a", "b"] * 20, "y": [0, 1, 1, 0] * 10,
                       "s": [0.125, 0.5, 0.875, 0.25] * 10})
    df.to_csv(tmp_path / "p.csv", index=False)
    with pytest.raises(DataError, match="not 0/1 decisions: if they are scores") as e:
        count(tmp_path / "p.csv", CountSpec(group_cols=("g",), y_pred="s"), engine=engine)
    assert "[0.125, 0.875]" in str(e.value) and "--score-col" in str(e.value)
    with pytest.raises(DataError, match="--pos-label 'yes' names no value"):
        count(tmp_path / "p.csv", CountSpec(group_cols=("g",), y_pred="y", pos_label="yes"),
              engine=engine)
    (tmp_path / "c.csv").write_text("g,s\n" + "".join(f'{g},"0,{d}"\n' for g, d in
                                                       zip("ab" * 5, range(10), strict=True)))
    with pytest.raises(DataError, match="decimal comma \\(e.g. '0,0'\\)"):
        count(tmp_path / "c.csv", CountSpec(group_cols=("g",), y_pred="s"), engine=engine)
