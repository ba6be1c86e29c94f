"""Hostile input files: what is not a regular file, and a CSV header naming a column twice,
each refused in one line (docs/threat-model.md, "Input files")."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from fairprobe._io import read_table
from fairprobe.errors import DataError


def test_a_directory_fifo_or_device_is_named_for_what_it_is(tmp_path: Path) -> None:
    fifo = tmp_path / "preds.csv"
    os.mkfifo(fifo)  # reading it would block until a writer comes: never opened
    cases = [(tmp_path, "is a directory"), (fifo, "is a FIFO (named pipe), not a regular file"),
             (Path("/dev/zero"), "is a device, not a regular file"),
             (tmp_path / "missing.csv", "does not exist")]
    for path, words in cases:
        with pytest.raises(DataError, match=words.replace("(", r"\(").replace(")", r"\)")):
            read_table(path, "--predictions")


def test_the_cli_gives_one_line_for_a_fifo(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "p.csv")
    r = subprocess.run([sys.executable, "-m", "fairprobe", "audit", "--predictions", "p.csv",
                        "--y-pred-col", "y_pred", "--group-col", "g"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "is a FIFO (named pipe)" in lines[0], r.stderr


def test_duplicate_csv_columns_are_refused_not_renamed(tmp_path: Path) -> None:
    p = tmp_path / "dup.csv"
    p.write_text("y_pred,g,y_pred\n1,a,0\n0,b,1\n")
    with pytest.raises(DataError, match="names the column 'y_pred' twice"):
        read_table(p, "--predictions")
    ok = tmp_path / "ok.csv"
    ok.write_text("y_pred,g,y_pred.1\n1,a,0\n")  # a genuine column named y_pred.1 is fine
    assert list(read_table(ok).columns) == ["y_pred", "g", "y_pred.1"]
