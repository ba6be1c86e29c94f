"""``collab demo --workdir wd`` with a relative
path (main: ``node a00 exited with code 2: Cannot read roster .../wd/nodes/wd/roster.toml``), and
the node state and answer caches it leaves are 0600; at umask 000 every file the demo writes in
its workdir is 0600 (results excepted: they follow the umask) and every folder 0700; a symbolic
link placed in the workdir is refused, never written through. Real node processes on 127.0.0.1."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

DEMO = [sys.executable, "-m", "fairprobe", "collab", "demo", "--honest", "2", "--attackers", "0",
        "--case", "civil-near-fair", "--n", "300", "--rounds", "2", "--round-timeout", "60"]


def test_relative_workdir_and_private_state_files(tmp_path: Path) -> None:
    old = os.umask(0o000)
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
    wd = tmp_path / "wd"
    assert stat.S_IMODE(os.stat(wd).st_mode) == 0o700
    for p in wd.rglob("*"):
        mode = stat.S_IMODE(os.lstat(p).st_mode)
        if p.is_dir():
            assert mode == 0o700, p
        elif p.parent.name != "results" and p.name != "node.pub":
            assert mode == 0o600, (p, oct(mode))


@pytest.mark.parametrize("where", ["roster.toml", "nodes", "logs", "pids"])
def test_a_symlink_placed_in_the_workdir_is_refused(tmp_path: Path, where: str) -> None:
    wd = tmp_path / "wd"
    wd.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    target = outside / "victim"
    target.write_text("keep\n")
    (wd / where).symlink_to(target if where.endswith(".toml") else outside)
    r = subprocess.run([*DEMO, "--workdir", str(wd)], cwd=tmp_path, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode != 0
    assert "Traceback" not in r.stderr and "symbolic link" in r.stderr, r.stderr[-2000:]
    assert target.read_text() == "keep\n" and sorted(os.listdir(outside)) == ["victim"]
