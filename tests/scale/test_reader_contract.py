"""The reader contract (fairprobe.scale.contract): the same bytes give the same counts, or the same
error, on DuckDB, pandas and Dask. Each case is one a user met where the engines disagreed."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fairprobe.errors import DataError
from fairprobe.scale import CountSpec, count

ENGINES = ("duckdb", "pandas", "dask")


@pytest.fixture(scope="module")
def client() -> Iterator[object]:
    distributed = pytest.importorskip("distributed")
    # in-process workers (inproc transport, no socket): the partitions run as on a cluster
    cluster = distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                       dashboard_address=None)
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()


def outcome(src: object, spec: CountSpec, engine: str, client: object) -> object:
    try:
        gc = count(src, spec, engine=engine, scheduler=client if engine == "dask" else None)
    except DataError as e:
        return f"error: {e}"
    t = gc.table
    return [tuple(map(str, r)) for r in t[[*spec.group_cols, "n", "sp"]].to_numpy().tolist()]


def same_everywhere(src: object, spec: CountSpec, client: object) -> object:
    got = {e: outcome(src, spec, e, client) for e in ENGINES}
    assert got["duckdb"] == got["pandas"] == got["dask"], got
    return got["duckdb"]


def _frame(rng: np.random.Generator, n: int, pa: float, pb: float, g: str = "g") -> pd.DataFrame:
    grp = np.where(rng.random(n) < 0.5, "a", "b")
    p = (rng.random(n) < np.where(grp == "a", pa, pb)).astype(int)
    return pd.DataFrame({g: grp, "p": p})


def test_glob_characters_in_a_path_are_literal(tmp_path: Path, client: object) -> None:
    rng = np.random.default_rng(0)
    (tmp_path / "model[1]").mkdir()
    (tmp_path / "model1").mkdir()
    named = _frame(rng, 400, 0.8, 0.4)
    named.to_parquet(tmp_path / "model[1]" / "preds.parquet")
    _frame(rng, 400, 0.5, 0.5).to_parquet(tmp_path / "model1" / "preds.parquet")
    got = same_everywhere(str(tmp_path / "model[1]" / "preds.parquet"), CountSpec(("g",), "p"),
                          client)
    want = named.groupby("g")["p"].agg(["size", "sum"])
    assert [int(r[1]) for r in got] == want["size"].tolist()  # type: ignore[union-attr]


def test_a_file_named_like_a_glob_is_counted_once(tmp_path: Path, client: object) -> None:
    rng = np.random.default_rng(1)
    _frame(rng, 100, 0.5, 0.5).to_parquet(tmp_path / "*.parquet")
    _frame(rng, 100, 0.5, 0.5).to_parquet(tmp_path / "b.parquet")
    got = same_everywhere(str(tmp_path), CountSpec(("g",), "p"), client)
    assert sum(int(r[1]) for r in got) == 200  # type: ignore[union-attr]


def test_a_link_to_a_counted_file_is_not_counted_again(tmp_path: Path, client: object) -> None:
    rng = np.random.default_rng(2)
    _frame(rng, 300, 0.5, 0.5).to_parquet(tmp_path / "day1.parquet")
    _frame(rng, 300, 0.5, 0.5).to_parquet(tmp_path / "day2.parquet")
    os.symlink(tmp_path / "day2.parquet", tmp_path / "latest.parquet")
    os.link(tmp_path / "day1.parquet", tmp_path / "copy.parquet")
    got = same_everywhere(str(tmp_path), CountSpec(("g",), "p"), client)
    assert sum(int(r[1]) for r in got) == 600  # type: ignore[union-attr]


@pytest.mark.parametrize("name", ["s", "t", "p_", "w", "select", 'a"b', "r_y_pred"])
def test_group_columns_named_like_internal_aliases_are_read_as_theirs(
        tmp_path: Path, client: object, name: str) -> None:
    df = _frame(np.random.default_rng(3), 400, 0.8, 0.2, g=name)
    df.to_csv(tmp_path / "f.csv", index=False)
    got = same_everywhere(str(tmp_path / "f.csv"), CountSpec((name,), "p"), client)
    want = df.groupby(name)["p"].sum().tolist()
    assert [int(r[2]) for r in got] == want  # type: ignore[union-attr]


@pytest.mark.parametrize("name", ["n", "sp", "__fp_p"])
def test_reserved_names_are_refused_on_every_engine(tmp_path: Path, client: object,
                                                    name: str) -> None:
    _frame(np.random.default_rng(4), 50, 0.5, 0.5, g=name).to_csv(tmp_path / "f.csv",
                                                                 index=False)
    got = same_everywhere(str(tmp_path / "f.csv"), CountSpec((name,), "p"), client)
    assert str(got).startswith("error:") and "rename" in str(got)


def test_nan_and_inf_are_refused_with_the_count(tmp_path: Path, client: object) -> None:
    rng = np.random.default_rng(5)
    df = _frame(rng, 200, 0.8, 0.4)
    df["sc"] = rng.random(200)
    df.loc[3, "sc"] = np.nan
    df.to_parquet(tmp_path / "s.parquet")
    got = same_everywhere(str(tmp_path / "s.parquet"), CountSpec(("g",), "p", score="sc"),
                          client)
    assert "--score-col" in str(got) and "1 missing" in str(got)
    df2 = _frame(rng, 200, 0.8, 0.4).astype({"p": float})
    df2.loc[:20, "p"] = np.nan
    df2.to_parquet(tmp_path / "p.parquet")
    got = same_everywhere(str(tmp_path / "p.parquet"), CountSpec(("g",), "p"), client)
    assert "21 missing" in str(got)
    (tmp_path / "t.csv").write_text("g,p\na,1\na,nan\nb,0\n")
    assert "1 missing" in str(same_everywhere(str(tmp_path / "t.csv"), CountSpec(("g",), "p"),
                                               client))


def test_duplicate_columns_are_refused(tmp_path: Path, client: object) -> None:
    (tmp_path / "d.csv").write_text("g,p,p\na,1,0\nb,0,1\n")
    got = same_everywhere(str(tmp_path / "d.csv"), CountSpec(("g",), "p"), client)
    assert "twice" in str(got)
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table([["a", "b"], [1, 0], [0, 1]], names=["g", "p", "p"]),
                   tmp_path / "d.parquet")
    assert "twice" in str(same_everywhere(str(tmp_path / "d.parquet"), CountSpec(("g",), "p"),
                                          client))


def test_pos_label_zero_on_booleans_names_false(tmp_path: Path, client: object) -> None:
    df = pd.DataFrame({"g": ["a"] * 20 + ["b"] * 20,
                       "p": [True] * 19 + [False] + [True] * 16 + [False] * 4})
    df.to_parquet(tmp_path / "b.parquet")
    got = same_everywhere(str(tmp_path / "b.parquet"), CountSpec(("g",), "p", pos_label=0),
                          client)
    assert [int(r[2]) for r in got] == [1, 4]  # type: ignore[union-attr]
    from fairprobe.stats.frame import _binary_labels

    mem = _binary_labels(df["p"].to_numpy(), "p", 0)  # the in-memory (--budget) path agrees
    assert int(mem[:20].sum()) == 1 and int(mem[20:].sum()) == 4


def test_group_labels_stay_as_written(tmp_path: Path, client: object) -> None:
    (tmp_path / "l.csv").write_text("g,p\nyes,1\nno,0\n02134,1\n")
    got = same_everywhere(str(tmp_path / "l.csv"), CountSpec(("g",), "p"), client)
    assert [r[0] for r in got] == ["02134", "no", "yes"]  # type: ignore[union-attr]


def test_bounded_labels_windows_and_times(tmp_path: Path) -> None:
    pd.DataFrame({"g": ["x" * 5000, "b"], "p": [1, 0]}).to_parquet(tmp_path / "big.parquet")
    with pytest.raises(DataError, match="5,000 characters"):
        count(str(tmp_path / "big.parquet"), CountSpec(("g",), "p"), engine="duckdb")
    from fairprobe.scale.counts import window_width

    with pytest.raises(DataError, match="wider than 100 years"):
        window_width("100000W")


def test_a_file_with_too_many_columns_is_one_line(tmp_path: Path) -> None:
    from fairprobe.scale.contract import MAX_COLUMNS

    cols = ["g", "p", *[f"c{i}" for i in range(MAX_COLUMNS)]]
    (tmp_path / "wide.csv").write_text(",".join(cols) + "\n" + ",".join(["a", "1"] + ["0"] * MAX_COLUMNS) + "\n")
    with pytest.raises(DataError, match="columns .at most"):
        count(str(tmp_path / "wide.csv"), CountSpec(("g",), "p"), engine="duckdb")


def test_rows_appended_while_counting_are_refused_not_marked_counted(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from fairprobe.scale import engine

    path = tmp_path / "log.csv"
    path.write_text("g,p\n" + "a,1\nb,0\n" * 50)
    real = engine._pandas_partial

    def append_during_the_pass(df: pd.DataFrame, spec: CountSpec) -> object:
        with path.open("a") as fh:  # a writer appends while the rows are being counted
            fh.write("a,1\n" * 10)
        return real(df, spec)

    monkeypatch.setattr(engine, "_pandas_partial", append_during_the_pass)
    with pytest.raises(DataError, match="changed while it was being counted"):
        count(str(path), CountSpec(("g",), "p"), engine="pandas")
