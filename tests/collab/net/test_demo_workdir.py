"""Issue 23, finding 5 and the modes of finding 6: ``collab demo --workdir wd`` with a relative
path (main: ``node a00 exited with code 2: Cannot read roster .../wd/nodes/wd/roster.toml``), and
the node state and answer caches it leaves are 0600. Real node processes on 127.0.0.1."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path


def test_relative_workdir_and_private_state_files(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        r = subprocess.run(
            [sys.executable, "-m", "fairprobe", "collab", "demo", "--honest", "2",
             "--attackers", "0", "--case", "civil-near-fair", "--n", "300", "--rounds", "2",
             "--round-timeout", "60", "--workdir", "wd", "--json", "out.json"],
            cwd=tmp_path, capture_output=True, text=True, timeout=300)
    finally:
        os.umask(old)
    assert r.returncode == 0, r.stderr[-2000:]
    doc = json.loads((tmp_path / "out.json").read_text())
    assert len(doc["nodes"]) == 2
    state = sorted((tmp_path / "wd" / "state").glob("*.sqlite"))
    assert {p.name for p in state} == {"a00.sqlite", "a01.sqlite", "a00.answers.sqlite",
                                       "a01.answers.sqlite"}
    for p in state:
        assert stat.S_IMODE(os.stat(p).st_mode) == 0o600, p
    key = tmp_path / "wd" / "keys" / "a00" / "node.key"
    assert stat.S_IMODE(os.stat(key).st_mode) == 0o600
