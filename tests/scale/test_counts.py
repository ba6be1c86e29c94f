"""Counts are incremental: halves merge into the whole, a batch updates, save/load round-trips.

Guarantees: the counts of two halves of a data set, merged, equal the counts of the whole (and
so give the same findings), whatever the split; ``update`` with a batch equals the merge; a
saved and loaded counts file is equal (integer counts exact, floats bit for bit), windows
included; the same file is never counted twice; counts of other columns do not merge; the
Dask engine on a LocalCluster of two worker processes gives the local engine's counts.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fairprobe.errors import DataError
from fairprobe.scale import CountSpec, GroupCounts, count


def _logs(n: int = 6000, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    ts = pd.Timestamp("2024-03-01") + pd.to_timedelta(rng.integers(0, 20 * 86400, n), unit="s")
    return pd.DataFrame({"ts": ts, "sex": rng.choice(["F", "M"], n),
                         "race": rng.choice(["a", "b", "c"], n, p=[0.7, 0.25, 0.05]),
                         "p": rng.integers(0, 2, n), "y": rng.integers(0, 2, n),
                         "w": rng.lognormal(0, 0.5, n), "s": rng.random(n)})


SPEC = CountSpec(group_cols=("sex", "race"), y_pred="p", y_true="y", weight="w")


@pytest.mark.parametrize("cut", [1, 2000, 5999])
def test_merged_halves_equal_the_whole(cut: int, tmp_path: Path) -> None:
    df = _logs()
    df.iloc[:cut].to_parquet(tmp_path / "a.parquet", index=False)
    df.iloc[cut:].to_parquet(tmp_path / "b.parquet", index=False)
    whole = count(df, SPEC)
    merged = count(tmp_path / "a.parquet", SPEC).merge(count(tmp_path / "b.parquet", SPEC))
    pd.testing.assert_frame_equal(merged.table, whole.table, rtol=1e-12)
    assert merged.n_rows == len(df) and len(merged.sources) == 2
    a, b = whole.frame(), merged.frame()
    for m in ("dp", "eo", "eodds"):
        sa, sb = a.summary(m), b.summary(m)
        assert (sa.verdict, sa.pair, sa.compared) == (sb.verdict, sb.pair, sb.compared)
        np.testing.assert_allclose([sa.estimate, sa.low, sa.high],
                                   [sb.estimate, sb.low, sb.high], rtol=1e-10)
    # update with a batch is the same merge
    up = count(tmp_path / "a.parquet", SPEC).update(tmp_path / "b.parquet")
    pd.testing.assert_frame_equal(up.table, merged.table)


def test_a_file_is_never_counted_twice(tmp_path: Path) -> None:
    _logs().to_parquet(tmp_path / "a.parquet", index=False)
    c = count(tmp_path / "a.parquet", SPEC)
    with pytest.raises(DataError, match="counted in both"):
        c.merge(count(tmp_path / "a.parquet", SPEC))
    with pytest.raises(DataError, match="different columns"):
        c.merge(count(tmp_path / "a.parquet", CountSpec(group_cols=("sex",), y_pred="p")))


def test_save_and_load_round_trip_with_windows(tmp_path: Path) -> None:
    df = _logs()
    spec = CountSpec(group_cols=("sex", "race"), y_pred="p", y_true="y", score="s",
                     time_col="ts", window="7D")
    c = count(df, spec)
    c.save(tmp_path / "c.json")
    back = GroupCounts.load(tmp_path / "c.json")
    assert back.spec == c.spec
    pd.testing.assert_frame_equal(back.table, c.table, check_exact=True,
                                  check_dtype=False)
    assert back.windows() == c.windows()
    # per-window counts add up to the total, and the total equals the unwindowed count
    plain = count(df, CountSpec(group_cols=("sex", "race"), y_pred="p", y_true="y", score="s"))
    pd.testing.assert_frame_equal(c.total().table, plain.table, rtol=1e-12)
    assert sum(c.window(w).n_rows for w in c.windows()) == len(df)


def test_windows_are_the_same_in_every_engine(tmp_path: Path) -> None:
    df = _logs()
    df.to_csv(tmp_path / "l.csv", index=False)
    spec = CountSpec(group_cols=("sex",), y_pred="p", time_col="ts", window="3D")
    a = count(tmp_path / "l.csv", spec, engine="duckdb")
    b = count(df, spec, engine="pandas")
    pd.testing.assert_frame_equal(a.table, b.table, check_dtype=False)
    starts = a.windows()
    first = pd.Timestamp(df["ts"].min()).normalize()
    assert starts[0] == first and a.spec.window_origin == first.isoformat()
    assert all((w - first) % pd.Timedelta("3D") == pd.Timedelta(0) for w in starts)
    # an explicit origin is kept, and a window holds exactly the rows in [start, start + 3D)
    fixed = CountSpec(group_cols=("sex",), y_pred="p", time_col="ts", window="3D",
                      window_origin="1970-01-01")
    e = count(df, fixed, engine="pandas")
    assert e.spec.window_origin == "1970-01-01T00:00:00"
    for w in e.windows():
        assert (w - pd.Timestamp("1970-01-01")) % pd.Timedelta("3D") == pd.Timedelta(0)
        inside = (df["ts"] >= w) & (df["ts"] < w + pd.Timedelta("3D"))
        assert e.window(w).n_rows == int(inside.sum())
    # zoned timestamps fall in their UTC window in every engine, whatever the machine's zone
    zoned = df.assign(ts=df["ts"].dt.tz_localize("UTC").dt.tz_convert("Asia/Tokyo"))
    zoned.to_parquet(tmp_path / "z.parquet", index=False)
    pd.testing.assert_frame_equal(count(tmp_path / "z.parquet", spec).table, b.table,
                                  check_dtype=False)
    pd.testing.assert_frame_equal(count(zoned, spec, engine="pandas").table, b.table,
                                  check_dtype=False)


def test_dask_local_cluster_equals_the_local_engine(tmp_path: Path) -> None:
    pytest.importorskip("distributed")
    df = _logs(9000, seed=3)
    for i in range(3):
        df.iloc[i * 3000:(i + 1) * 3000].to_parquet(tmp_path / f"part{i}.parquet", index=False)
    local = count(tmp_path, SPEC, engine="duckdb")
    on_dask = count(tmp_path, SPEC, engine="dask")  # LocalCluster: 2 worker processes
    pd.testing.assert_frame_equal(on_dask.table, local.table, rtol=1e-12)
    a, b = local.frame(), on_dask.frame()
    for m in ("dp", "eo"):
        assert a.summary(m).verdict == b.summary(m).verdict
        assert a.summary(m).estimate == pytest.approx(b.summary(m).estimate, abs=1e-12)


@pytest.mark.parametrize("values", [
    ["21/02/2025", "22/02/2025"],            # day-first: pandas would guess, DuckDB refuses
    ["2025-02-21 24:00:00", "2025-02-21"],   # hour 24: DuckDB would roll it over
    ["20250221", "2025-02-21"],              # no separators: pandas would parse it
    ["2025-02-21 10", "2025-02-21"],         # an hour without minutes
])
def test_text_times_outside_iso_are_refused_by_every_engine(tmp_path: Path,
                                                            values: list[str]) -> None:
    df = pd.DataFrame({"ts": values * 5, "g": ["a", "b"] * 5, "p": [0, 1] * 5})
    df.to_csv(tmp_path / "t.csv", index=False)
    spec = CountSpec(group_cols=("g",), y_pred="p", time_col="ts", window="1D")
    msgs = []
    for engine in ("duckdb", "pandas"):
        with pytest.raises(DataError, match="--time-col") as exc:
            count(tmp_path / "t.csv", spec, engine=engine)
        msgs.append(str(exc.value))
    assert msgs[0] == msgs[1] and "not ISO 8601" in msgs[0]


def test_iso_text_times_with_offsets_fall_in_the_same_utc_window(tmp_path: Path) -> None:
    vals = ["2025-02-21T23:30:00+02:00", "2025-02-21 21:30", "2025-02-22T00:30:00Z",
            "2025-02-21", " 2025-2-3 ", "2025-02-21T10:00:05.123"]
    df = pd.DataFrame({"ts": vals * 2, "g": ["a", "b"] * 6, "p": [0, 1, 1] * 4})
    df.to_csv(tmp_path / "t.csv", index=False)
    spec = CountSpec(group_cols=("g",), y_pred="p", time_col="ts", window="1D")
    a = count(tmp_path / "t.csv", spec, engine="duckdb")
    b = count(tmp_path / "t.csv", spec, engine="pandas")
    pd.testing.assert_frame_equal(a.table, b.table, check_dtype=False)
    assert a.spec == b.spec and a.spec.window_origin == "2025-02-03T00:00:00"
    # +02:00 at 23:30 is 21:30 UTC on the 21st: three rows a day on the 21st, one on the 22nd
    days = {w.strftime("%m-%d"): a.window(w).n_rows for w in a.windows()}
    assert days == {"02-03": 2, "02-21": 8, "02-22": 2}


def test_window_origin_flag_is_checked() -> None:
    with pytest.raises(DataError, match="--window-origin"):
        CountSpec(group_cols=("g",), y_pred="p", time_col="ts", window="1D",
                  window_origin="next monday")
    with pytest.raises(DataError, match="--window-origin"):
        CountSpec(group_cols=("g",), y_pred="p", window_origin="2025-01-01")
