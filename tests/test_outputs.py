"""Every output path refuses to replace
anything but a regular file or a missing path, in one line, and files holding answers or keys
are created 0600. Real processes, real files (a device node, a FIFO, symbolic links).

Policy (``docs/threat-model.md``, "Output files"): a symbolic link as the output path is
refused, whatever it points to; links among the parent directories are followed.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from fairprobe.errors import DataError

from .report.hostile import audit_args, cli, replay_audit_files

RESULT = Path(__file__).parent / "data" / "results" / "audit.json"


def _specials(tmp: Path) -> dict[str, Path]:
    """A FIFO, a symbolic link to a file, a dangling link, a directory and (as root) a device
    node like /dev/null (major 1, minor 3), all inside ``tmp``."""
    out = {}
    os.mkfifo(tmp / "fifo")
    out["FIFO"] = tmp / "fifo"
    target = tmp / "target.txt"
    target.write_text("keep me\n")
    (tmp / "link").symlink_to(target)
    out["symbolic link"] = tmp / "link"
    (tmp / "dangling").symlink_to(tmp / "nowhere")
    out["dangling link"] = tmp / "dangling"
    (tmp / "dir").mkdir()
    out["directory"] = tmp / "dir"
    if os.geteuid() == 0:
        os.mknod(tmp / "null", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        out["device"] = tmp / "null"
    return out


def _kind(p: Path) -> int:
    return stat.S_IFMT(os.lstat(p).st_mode)


def test_audit_json_cache_and_csv_refuse_special_files(tmp_path: Path) -> None:
    # main: `audit --json /dev/full` (as root) replaced the device node with a regular file
    table, cfg = replay_audit_files(tmp_path, ["a", "b"])
    specials = _specials(tmp_path)
    for name, path in specials.items():
        before = _kind(path)
        for flag in ("--json", "--cache", "--csv"):
            args = audit_args(table, cfg, tmp_path / "ok.json", tmp_path / "ok.sqlite")
            if flag in args:
                args[args.index(flag) + 1] = str(path)
            else:
                args += [flag, str(path)]
            r = cli(*args, timeout=120)
            lines = r.stderr.strip().splitlines()
            assert r.returncode == 2, (name, flag, r.stderr)
            assert len(lines) == 1 and lines[0].startswith(f"error: {flag} "), (name, lines)
            assert _kind(path) == before, (name, flag)  # still the same kind of file
    assert (tmp_path / "target.txt").read_text() == "keep me\n"
    assert not (tmp_path / "nowhere").exists()


def test_report_outputs_refuse_special_files(tmp_path: Path) -> None:
    specials = _specials(tmp_path)
    for name, path in specials.items():
        before = _kind(path)
        for flag in ("--html", "--md"):
            r = cli("report", str(RESULT), flag, str(path), timeout=120)
            assert r.returncode == 2, (name, flag, r.stderr)
            line = r.stderr.strip()
            assert line.startswith(f"error: {flag} ") and "\n" not in line, (name, line)
            assert _kind(path) == before
    assert (tmp_path / "target.txt").read_text() == "keep me\n"


def test_the_one_writer(tmp_path: Path) -> None:
    """``fairprobe._io.write_file``: what every command (and ``--csv``) writes with."""
    from fairprobe._io import check_output, prepare_private_file, write_file

    specials = _specials(tmp_path)
    for name, path in specials.items():
        with pytest.raises(DataError, match=r"^--csv '.*' is (a|an) ") as e:
            write_file(path, "x", what="--csv")
        assert "\n" not in str(e.value), name
    ok = write_file(tmp_path / "sub" / "t.csv", "a,b\n", what="--csv")
    assert ok.read_text() == "a,b\n" and stat.S_ISREG(os.lstat(ok).st_mode)
    write_file(ok, "c,d\n", what="--csv")  # a regular file is replaced
    assert ok.read_text() == "c,d\n"
    old = os.umask(0o022)
    try:
        assert stat.S_IMODE(os.stat(write_file(tmp_path / "pub.json", "{}")).st_mode) == 0o644
        secret = write_file(tmp_path / "answers.json", "{}", private=True)
        assert stat.S_IMODE(os.stat(secret).st_mode) == 0o600
        db = prepare_private_file(tmp_path / "state" / "x.sqlite", "cache")
        assert stat.S_IMODE(os.stat(db).st_mode) == 0o600 and db.stat().st_size == 0
    finally:
        os.umask(old)
    assert check_output(tmp_path / "missing" / "new.json") == tmp_path / "missing" / "new.json"
    assert not list(tmp_path.glob(".*.csv.*"))  # no temporary file left behind


def test_answer_cache_is_created_0600(tmp_path: Path) -> None:
    # main: 0644 (umask 022)
    table, cfg = replay_audit_files(tmp_path, ["a", "b"])
    out, cache = tmp_path / "r.json", tmp_path / "cache.sqlite"
    r = cli(*audit_args(table, cfg, out, cache))
    assert r.returncode == 0, r.stderr
    assert stat.S_IMODE(os.stat(cache).st_mode) == 0o600
    for side in cache.parent.glob("cache.sqlite-*"):  # WAL files take the database's mode
        assert stat.S_IMODE(os.stat(side).st_mode) == 0o600, side
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o666 & ~_umask()


def _umask() -> int:
    m = os.umask(0)
    os.umask(m)
    return m


def test_replay_audit_columns_sent_exclude_the_decision_column(tmp_path: Path) -> None:
    # main: "columns sent: uid, x1, x2, decision"
    table, cfg = replay_audit_files(tmp_path, ["a", "b"])
    out = tmp_path / "r.json"
    r = cli(*audit_args(table, cfg, out, tmp_path / "c.sqlite"))
    assert r.returncode == 0, r.stderr
    assert "columns sent: uid, x1, x2; withheld: grp (sensitive), decision (answer)" in r.stdout
    cols = json.loads(out.read_text())["provenance"]["extra"]["columns"]
    assert cols["sent"] == ["uid", "x1", "x2"] and "decision" in cols["withheld"]
