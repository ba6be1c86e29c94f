"""The CFPB profile against solas-ai, the fair-lending peer, on the same data.

solas-ai's pins (pandas<3, pydantic<2) conflict with ours, so it lives in its own venv made by
``make servers`` (``.venv-servers/solas``; CI runs it) and is driven as a subprocess: it reads
the same CSV and prints its AIR and SMD as JSON. Locally without that venv the test skips; in CI
it must run.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from conftest import server_bin
from fairprobe.profiles.cfpb_air import cfpb_air_profile

from .test_profiles import _lending

PEER = r'''
import json, sys
import pandas as pd
from solas_disparity import adverse_impact_ratio, standardized_mean_difference

df = pd.read_csv(sys.argv[1])
onehot = pd.get_dummies(df["race"]).astype(int)
groups = ["Black", "Hispanic", "Asian"]
kw = dict(group_data=onehot, protected_groups=groups, reference_groups=["White"] * 3,
          group_categories=["race"] * 3)
air = adverse_impact_ratio(outcome=df["approved"], air_threshold=0.8,
                           percent_difference_threshold=0.0, **kw).summary_table
smd = standardized_mean_difference(outcome=df["score"], smd_threshold=-0.3,
                                   lower_score_favorable=False, **kw).summary_table


def at(table, group, col):
    t = table if "Group" in table.columns else table.reset_index()
    return float(t.loc[t["Group"] == group, col].iloc[0])


out = {g: {"air": at(air, g, "AIR"), "smd": at(smd, g, "SMD")} for g in groups}
print(json.dumps(out))
'''


def test_air_and_smd_equal_solas_ai(tmp_path: Path) -> None:
    exe = server_bin("solas", "python")
    df = _lending()
    df.to_csv(tmp_path / "lending.csv", index=False)
    r = subprocess.run([str(exe), "-W", "ignore", "-c", PEER, str(tmp_path / "lending.csv")],
                       capture_output=True, text=True, timeout=300, check=False)
    assert r.returncode == 0, r.stderr[-2000:]
    theirs = json.loads(r.stdout.strip().splitlines()[-1])
    ours = {row.rate.category: row for row in cfpb_air_profile(
        df, group_cols=["race"], y_pred_col="approved", reference="White",
        score_col="score").rows}
    for g, v in theirs.items():
        assert ours[g].rate.impact_ratio == pytest.approx(v["air"], abs=1e-9), g
        # solas-ai prints the SMD in percent of a standard deviation
        assert 100.0 * ours[g].smd == pytest.approx(v["smd"], abs=1e-9), g
