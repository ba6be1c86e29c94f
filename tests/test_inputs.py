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


def test_a_table_past_the_size_cap_is_refused_before_it_is_parsed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import bz2
    import gzip

    import pandas as pd

    from fairprobe._io import MAX_TABLE_BYTES_ENV

    body = "g,y_pred\n" + "a,1\nb,0\n" * 50_000  # 800 kB of text
    (tmp_path / "t.csv").write_text(body)
    with gzip.open(tmp_path / "t.csv.gz", "wt") as f:
        f.write(body)  # a few kB on disk: measured as it decompresses
    with bz2.open(tmp_path / "t.csv.bz2", "wt") as f:
        f.write(body)
    pd.DataFrame({"g": ["a", "b"] * 50_000, "y_pred": [1, 0] * 50_000}).to_parquet(
        tmp_path / "t.parquet")
    monkeypatch.setenv(MAX_TABLE_BYTES_ENV, "100000")
    for name in ("t.csv", "t.csv.gz", "t.csv.bz2", "t.parquet"):
        with pytest.raises(DataError, match=MAX_TABLE_BYTES_ENV):
            read_table(tmp_path / name, "--queries file")
    monkeypatch.setenv(MAX_TABLE_BYTES_ENV, "10000000")
    for name in ("t.csv", "t.csv.gz", "t.csv.bz2", "t.parquet"):
        assert len(read_table(tmp_path / name)) == 100_000
    monkeypatch.setenv(MAX_TABLE_BYTES_ENV, "lots")
    with pytest.raises(DataError, match="positive number of bytes"):
        read_table(tmp_path / "t.csv")
    # the CLI: one line naming the key, exit 2 (a query set is read into memory)
    r = subprocess.run([sys.executable, "-m", "fairprobe", "audit", "--url", "http://127.0.0.1:9",
                        "--queries", "t.csv.gz", "--group-col", "g"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=120,
                       env={**os.environ, MAX_TABLE_BYTES_ENV: "100000"})
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1 and MAX_TABLE_BYTES_ENV in lines[0], r.stderr
