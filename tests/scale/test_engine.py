"""The counting engines give the in-memory ``AuditFrame``'s findings, on random data sets.

Guarantees: on 10 random data sets (1 or 2 sensitive columns, 2 to 12 groups of very different
sizes, some tiny; rates near 0 and 1; with and without weights and scores), the frame built
from DuckDB's counts over a Parquet file, over the pandas frame and over an Arrow table, and
from the pandas engine's, has the in-memory frame's by-group table (integer counts exactly,
floats to 1e-12) and every summary's estimate, pair, interval and verdict. A frame of counts sets exactly the constructor's
attributes. Bad input fails with the same one-line errors in every engine.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from fairprobe.errors import DataError
from fairprobe.scale import CountSpec, count, count_grouping_sets
from fairprobe.stats.frame import AuditFrame


def _data(seed: int) -> tuple[pd.DataFrame, dict[str, Any]]:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(300, 3000))
    two = seed % 2 == 1
    k1 = int(rng.integers(2, 5))
    probs = rng.dirichlet(np.full(k1, 0.6))
    df = pd.DataFrame({"g1": rng.choice([f"v{i}" for i in range(k1)], n, p=probs)})
    if two:
        df["g2"] = rng.integers(0, 3, n)
    base = rng.choice([0.02, 0.3, 0.6, 0.97])
    df["y"] = (rng.random(n) < rng.uniform(0.1, 0.9)).astype(np.int64)
    df["p"] = (rng.random(n) < np.clip(base + 0.2 * df["y"], 0, 1)).astype(np.int64)
    opts: dict[str, Any] = {"groups": ["g1", "g2"] if two else ["g1"]}
    if seed % 3 == 0:
        df["w"] = rng.lognormal(0.0, 0.7, n)
        opts["weight"] = "w"
    elif seed % 3 == 1:
        df["s"] = rng.beta(2, 5, n)
        opts["score"] = "s"
    return df, opts


def _memory_frame(df: pd.DataFrame, opts: dict[str, Any], mgs: int) -> AuditFrame:
    return AuditFrame(y_pred=df["p"], y_true=df["y"], sensitive_features=df[opts["groups"]],
                      sample_weight=df["w"] if "weight" in opts else None,
                      scores=df["s"] if "score" in opts else None, min_group_size=mgs)


def _same(a: AuditFrame, b: AuditFrame) -> None:
    fa, fb = a.to_frame(), b.to_frame()
    pd.testing.assert_frame_equal(fa, fb, rtol=1e-12, atol=1e-12)
    assert a.method == b.method and a.groups.labels == b.groups.labels
    for m in a._metrics(None):
        try:
            sa = a.summary(m)
        except DataError as exc:
            with pytest.raises(DataError, match=str(exc)[:30].replace("(", r"\(")):
                b.summary(m)
            continue
        sb = b.summary(m)
        assert sa.verdict == sb.verdict and sa.pair == sb.pair, m
        assert sa.compared == sb.compared and sa.excluded == sb.excluded, m
        np.testing.assert_allclose([sa.estimate, sa.low, sa.high],
                                   [sb.estimate, sb.low, sb.high], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("seed", range(10))
def test_every_engine_gives_the_in_memory_findings(seed: int, tmp_path: Path) -> None:
    df, opts = _data(seed)
    mgs = [1, 5, 20][seed % 3]
    path = tmp_path / "preds.parquet"
    df.to_parquet(path, index=False)
    spec = CountSpec(group_cols=tuple(opts["groups"]), y_pred="p", y_true="y",
                     weight=opts.get("weight"), score=opts.get("score"))
    mem = _memory_frame(df, opts, mgs)
    import pyarrow as pa

    arrow = pa.Table.from_pandas(df, preserve_index=False)
    for source, engine in ((path, "duckdb"), (df, "duckdb"), (df, "pandas"), (arrow, "duckdb")):
        counts = count(source, spec, engine=engine)
        assert counts.n_rows == len(df) and counts.n_cells == mem.groups.n_groups
        _same(mem, counts.frame(min_group_size=mgs))


def test_a_frame_of_counts_sets_the_constructors_attributes() -> None:
    df, opts = _data(3)  # weighted
    for kw in ({}, {"weight": "w"}):
        spec = CountSpec(group_cols=("g1", "g2"), y_pred="p", y_true="y", **kw)
        mem = AuditFrame(y_pred=df["p"], y_true=df["y"], sensitive_features=df[["g1", "g2"]],
                         sample_weight=df["w"] if kw else None)
        assert set(vars(count(df, spec).frame())) == set(vars(mem))


def test_labels_with_pos_label_and_booleans(tmp_path: Path) -> None:
    rng = np.random.default_rng(4)
    n = 500
    df = pd.DataFrame({"g": rng.choice(["a", "b", "c"], n),
                       "p": rng.choice([">50K", "<=50K"], n), "y": rng.random(n) < 0.4})
    mem = AuditFrame(y_pred=df["p"], y_true=df["y"], sensitive_features=df["g"],
                     pos_label=">50K", min_group_size=1)
    spec = CountSpec(group_cols=("g",), y_pred="p", y_true="y", pos_label=">50K")
    df.to_csv(tmp_path / "p.csv", index=False)
    for source, engine in ((tmp_path / "p.csv", "duckdb"), (df, "pandas")):
        _same(mem, count(source, spec, engine=engine).frame(min_group_size=1))


@pytest.mark.parametrize("engine", ["duckdb", "pandas"])
@pytest.mark.parametrize("change, needle", [
    (lambda d: d.assign(p=d["p"].where(d.index != 3)), "1 missing value"),
    (lambda d: d.assign(p=d["p"] * 2), "must hold 0/1 labels"),
    (lambda d: d.assign(g=d["g"].where(d.index != 5)), "sensitive column 'g' holds 1 missing"),
    (lambda d: d.assign(p=np.where(d.index % 2 == 0, "yes", "no")), "--pos-label"),
    (lambda d: d.drop(columns=["y"]), "--y-true-col 'y' is not a column"),
    (lambda d: d.assign(s=d["s"] + 1.0), "must hold numbers in [0, 1]"),
])
def test_bad_input_is_one_line_in_every_engine(engine: str, change: Any, needle: str) -> None:
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"g": rng.choice(["a", "b"], 200), "p": rng.integers(0, 2, 200),
                       "y": rng.integers(0, 2, 200), "s": rng.random(200)})
    spec = CountSpec(group_cols=("g",), y_pred="p", y_true="y", score="s")
    with pytest.raises(DataError, match=needle.replace("[", r"\[").replace("]", r"\]")):
        count(change(df), spec, engine=engine)


def test_more_than_two_labels_is_refused() -> None:
    df = pd.DataFrame({"g": ["a", "b"] * 50, "p": ["x", "y", "z", "x"] * 25})
    spec = CountSpec(group_cols=("g",), y_pred="p", pos_label="x")
    for engine in ("duckdb", "pandas"):
        with pytest.raises(DataError, match="more than two labels"):
            count(df, spec, engine=engine)


def test_grouping_sets_and_marginals_equal_separate_counts(tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    n = 4000
    df = pd.DataFrame({"a": rng.integers(0, 3, n), "b": rng.choice(["x", "y"], n),
                       "c": rng.choice(["u", "v", "w"], n), "p": rng.integers(0, 2, n),
                       "y": rng.integers(0, 2, n)})
    df.to_parquet(tmp_path / "d.parquet", index=False)
    spec = CountSpec(group_cols=("a",), y_pred="p", y_true="y")
    sets = [("a",), ("b",), ("a", "b"), ("b", "c"), ("a", "b", "c")]
    got = count_grouping_sets(tmp_path / "d.parquet", spec, sets)
    finest = count(df, CountSpec(group_cols=("a", "b", "c"), y_pred="p", y_true="y"))
    for s in sets:
        alone = count(df, CountSpec(group_cols=s, y_pred="p", y_true="y"), engine="pandas")
        pd.testing.assert_frame_equal(got[s].table, alone.table)
        pd.testing.assert_frame_equal(finest.marginal(s).table, alone.table)


def test_without_duckdb_auto_is_pandas_and_duckdb_names_the_extra(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from fairprobe.errors import MissingExtraError

    monkeypatch.setitem(sys.modules, "duckdb", None)
    df = pd.DataFrame({"g": ["a", "b"] * 20, "p": [0, 1, 1, 0] * 10})
    spec = CountSpec(group_cols=("g",), y_pred="p")
    assert count(df, spec).n_rows == 40
    with pytest.raises(MissingExtraError, match=r"fairprobe\[scale\]"):
        count(df, spec, engine="duckdb")
