"""The monitor's saved state is bound to its source and to each file's identity, and checked."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fairprobe.errors import DataError
from fairprobe.scale import CountSpec
from fairprobe.scale.state import MonitorState

SPEC = CountSpec(("g",), "p", time_col="ts", window="1D")
NOW = pd.Timestamp("2024-02-01")


def _day(folder: Path, day: int, n: int = 100) -> Path:
    rng = np.random.default_rng(day)
    df = pd.DataFrame({"g": np.where(rng.random(n) < 0.5, "a", "b"),
                       "p": (rng.random(n) < 0.5).astype(int),
                       "ts": pd.Timestamp("2024-01-01") + pd.Timedelta(days=day)})
    folder.mkdir(exist_ok=True)
    path = folder / f"day{day}.parquet"
    df.to_parquet(path)
    return path


def test_a_state_of_another_directory_is_refused(tmp_path: Path) -> None:
    _day(tmp_path / "A", 1)
    _day(tmp_path / "B", 1)
    st = MonitorState.load_or_new(tmp_path / "s.json", SPEC)
    st.refresh(str(tmp_path / "A"), now=NOW)
    st.save(tmp_path / "s.json")
    again = MonitorState.load_or_new(tmp_path / "s.json", SPEC)
    with pytest.raises(DataError, match="describes .*A, not .*B"):
        again.refresh(str(tmp_path / "B"), now=NOW)


def test_an_edited_state_is_refused(tmp_path: Path) -> None:
    _day(tmp_path / "A", 1)
    st = MonitorState.load_or_new(tmp_path / "s.json", SPEC)
    st.refresh(str(tmp_path / "A"), now=NOW)
    st.save(tmp_path / "s.json")
    doc = json.loads((tmp_path / "s.json").read_text())
    doc["order"] = []  # forget the windows already looked at
    (tmp_path / "s.json").write_text(json.dumps(doc))
    with pytest.raises(DataError, match="does not match its digest"):
        MonitorState.load_or_new(tmp_path / "s.json", SPEC)


def test_a_renamed_counted_file_is_not_counted_again(tmp_path: Path) -> None:
    f = _day(tmp_path / "A", 1)
    st = MonitorState.load_or_new(tmp_path / "s.json", SPEC)
    first = st.refresh(str(tmp_path / "A"), now=NOW)
    assert first.rows_added == 100
    f.rename(f.with_name("renamed.parquet"))
    _day(tmp_path / "A", 2)
    second = st.refresh(str(tmp_path / "A"), now=NOW)
    assert second.rows_added == 100 and len(second.files_read) == 1
    assert st.counts is not None and st.counts.n_rows == 200
