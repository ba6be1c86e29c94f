"""docs/index.md's "Audit your prediction logs" section, run as written.

Every ``$ `` command of its ``shell`` blocks runs in order from a copy of ``tutorial/`` (with
``.venv`` linked in) and exits 0, then its Python block runs; the outputs it promises exist:
the audit of every row (small JSON, no per-row entries), one finding per week, the monitor's
alarm a few days after the gap appears on day 60 (2024-03-01) and not before, the figures.
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

REPO = Path(__file__).resolve().parents[2]
DOC = (REPO / "docs" / "index.md").read_text(encoding="utf-8")
SECTION = DOC[DOC.index("### 6. Audit your prediction logs"):DOC.index("## Glossary")]


def test_the_log_audit_section_runs_as_written(tmp_path: Path) -> None:
    commands = [line[2:] for body in re.findall(r"```shell\n(.*?)```", SECTION, re.S)
                for line in body.splitlines() if line.startswith("$ ")]
    assert len(commands) == 7, commands
    work = tmp_path / "repo"
    shutil.copytree(REPO / "tutorial", work / "tutorial",
                    ignore=shutil.ignore_patterns("*.csv", "*.json", "*.skops", "*.html",
                                                  "logs"))
    (work / ".venv").symlink_to(Path(sys.executable).parent.parent)
    for cmd in commands:
        r = subprocess.run(shlex.split(cmd), cwd=work, capture_output=True, text=True,
                           timeout=300, env={"COLUMNS": "100", "PATH": "/usr/bin:/bin",
                                             **{k: v for k, v in os.environ.items()
                                                if k == "PYTHONPATH"}})
        if "--fail-on unfair" in cmd:  # the gate the section shows: the monitor alarmed
            assert r.returncode == 5, f"{cmd}\n{r.stdout}\n{r.stderr}"
            assert r.stdout.splitlines()[-1].startswith("verdict: unfair (")
            assert "alarm at the window of 2024-03" in r.stdout
            continue
        assert r.returncode == 0, f"{cmd}\n{r.stdout}\n{r.stderr}"
    (code,) = re.findall(r"```python\n(.*?)```", SECTION, re.S)
    r = subprocess.run([sys.executable, "-c", code], cwd=work, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() in ("fair", "unfair", "undetermined")
    t = work / "tutorial"
    audit = json.loads((t / "logs-audit.json").read_text())
    assert audit["queried"] == 90 * 3000 and "per_instance" not in audit
    assert (t / "logs-audit.json").stat().st_size < 200_000
    weekly = json.loads((t / "weekly.json").read_text())
    assert len(weekly["windows"]) == 13  # 90 days over 7-day windows from the first day
    assert weekly["windows"][0]["start"] == "2024-01-01T00:00:00"
    mon = json.loads((t / "monitor.json").read_text())["monitor"]
    alarm = mon["demographic_parity_difference"]["alarm"]
    assert alarm is not None and "2024-03-01" <= alarm <= "2024-03-15", alarm
    assert (t / "monitor.svg").stat().st_size > 1000 and (t / "weekly.svg").exists()
    assert (t / "q1-counts.json").stat().st_size < 20_000
    rep = json.loads((t / "logs-report.json").read_text())
    assert rep["overall"] == "unfair" and "alarm since 2024-03" in rep["headline"]
    rows = {q["finding"].split(":")[0]: q for q in rep["questions"]}
    assert rows["monitor demographic_parity_difference"]["counted"] == "counted"
    assert rows["monitor demographic_parity_difference"]["verdict_at_level"] == "unfair"
    assert rows["windows"]["counted"] == "not counted"
    html = (t / "logs-report.html").read_text()
    assert "per window" in html and 'id="questions"' in html
    assert (t / "where.html").read_text().startswith("<!DOCTYPE html>")
    where = json.loads((t / "where.json").read_text())
    assert where["kind"] == "discover"
    assert [s["label"] for s in where["subgroups"]][:1] in (["sex = Female"], ["sex = Male"])
