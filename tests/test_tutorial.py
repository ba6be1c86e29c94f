"""docs/index.md's ten-minute tutorial, run as written.

The files it shows (``tutorial/train.py``, ``tutorial/model.toml``) must equal the committed ones,
and every ``$ `` command of its console blocks runs, in order, from a copy of the repository's
``tutorial/`` folder with ``.venv`` linked in, and exits 0 (``make install`` runs in the
repository itself, where it is a no-op once installed). Then the outputs it promises exist: the
audit JSON and CSV, the predictions audit, the HTML report, and the gate's exit code matches the
verdict (5 for unfair).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DOC = (REPO / "docs" / "index.md").read_text(encoding="utf-8")


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", DOC, re.S)


def test_shown_files_are_the_committed_ones() -> None:
    shown = {}
    for lang in ("python", "toml"):
        for body in _blocks(lang):
            m = re.match(r"# (tutorial/\S+)\n", body)
            if m:
                shown[m.group(1)] = body
    assert set(shown) == {"tutorial/train.py", "tutorial/model.toml"}
    for rel, body in shown.items():
        assert (REPO / rel).read_text(encoding="utf-8") == body, rel


def test_tutorial_commands_run_as_written(tmp_path: Path) -> None:
    commands = [line[2:] for body in _blocks("console") for line in body.splitlines()
                if line.startswith("$ ")]
    assert len(commands) == 6, commands
    work = tmp_path / "repo"
    shutil.copytree(REPO / "tutorial", work / "tutorial",
                    ignore=shutil.ignore_patterns("*.csv", "*.json", "*.skops", "*.html"))
    venv = Path(sys.executable).parent.parent
    (work / ".venv").symlink_to(venv)
    env = {**os.environ, "COLUMNS": "100"}
    gate_code = None
    printed: dict[str, str] = {}
    for cmd in commands:
        cwd = REPO if cmd.startswith("make ") else work
        r = subprocess.run(shlex.split(cmd), cwd=cwd, capture_output=True, text=True,
                           timeout=600, env=env)
        printed[cmd] = r.stdout + r.stderr
        if "--fail-on" in cmd:  # the CI gate: its exit code is the verdict
            gate_code = r.returncode
            gate_out = r.stdout + r.stderr
            continue
        assert r.returncode == 0, f"{cmd}\n{r.stdout}\n{r.stderr}"
    out = work / "tutorial"
    audit = json.loads((out / "audit.json").read_text())
    assert audit["queried"] == 2000 and audit["verdict"] in ("fair", "unfair", "undetermined")
    assert (out / "audit.csv").read_text().startswith("group,")
    preds = json.loads((out / "preds.json").read_text())
    assert preds["paid"] == 0 and preds["queried"] == 16281  # every row of the test split
    assert (out / "report.html").stat().st_size > 10_000
    # the failing gate the tutorial shows, with the lines it shows
    assert audit["verdict"] == "undetermined" and gate_code == 6
    shown = re.search(r"```text\n(.*?)```", DOC[DOC.index("### 5. Gate"):], re.S)
    assert shown is not None
    for line in shown.group(1).splitlines():
        if line.strip() != "...":
            assert line.strip() in gate_out, line
    _predictions_are_fairlearns(out, next(v for k, v in printed.items() if "--predictions" in k))


def _predictions_are_fairlearns(out: Path, shown: str) -> None:
    """The predictions audit on the defaults gives fairlearn's DP, EO and equalized-odds
    differences: to 1e-15 in the JSON and at the printed precision on the terminal."""
    import pandas as pd
    from fairlearn import metrics as fl

    df = pd.read_csv(out / "preds.csv")
    doc = json.loads((out / "preds.json").read_text())
    assert doc["min_group_size"] == 1 and doc["summaries"]
    for name in ("demographic_parity_difference", "equal_opportunity_difference",
                 "equalized_odds_difference"):
        want = getattr(fl, name)(df["y_true"], df["y_pred"], sensitive_features=df["race"])
        got = doc["summaries"][name]
        assert abs(got["estimate"] - want) <= 1e-15 and not got["excluded"], name
        assert f"{name}: largest gap" in shown and f"{want:.4f}" in shown, name
