"""At 80 columns the terminal never breaks a number or a group label: labels too long for their
column are cut with an ellipsis (the JSON keeps them whole), intervals stay on one line, and
``--reference`` comparisons are printed."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd


def test_80_columns_keep_numbers_and_labels_whole(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    long = "Amer-Indian-Eskimo-and-a-much-longer-group-name"
    g = rng.choice([long, "White", "Black"], 3000)
    y = (rng.random(3000) < np.where(g == "White", 0.5, 0.3)).astype(int)
    pd.DataFrame({"g": g, "y": y}).to_csv(tmp_path / "p.csv", index=False)
    r = subprocess.run(
        [sys.executable, "-m", "fairprobe", "audit", "--predictions", str(tmp_path / "p.csv"),
         "--y-pred-col", "y", "--group-col", "g", "--metric", "dp", "--reference", "White",
         "--json", str(tmp_path / "a.json")],
        capture_output=True, text=True, timeout=120, env={**os.environ, "COLUMNS": "80"})
    assert r.returncode == 0, r.stderr
    table_lines = [ln for ln in r.stdout.splitlines() if ln.startswith(("Amer", "White", "Black"))]
    assert table_lines and all(len(ln) <= 80 for ln in table_lines)
    assert any("…" in ln and ln.startswith("Amer-Indian-Eskimo") for ln in table_lines)
    for ln in table_lines:  # every interval printed is whole: [low, high]
        assert ln.count("[") == ln.count("]")
        for iv in re.findall(r"\[[^\]]*\]", ln):
            assert re.fullmatch(r"\[-?\d\.\d+, -?\d\.\d+\]", iv), iv
    assert "every group vs White" in r.stdout  # the --reference comparisons
    doc = json.loads((tmp_path / "a.json").read_text())
    assert long in {row["group"] for row in doc["by_group"]}  # whole in the JSON
