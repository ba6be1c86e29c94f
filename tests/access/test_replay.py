"""ReplayBackend: recorded answers from CSV / Parquet / DataFrames."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fairprobe.access import BlackBox, ReplayBackend, load_backend
from fairprobe.errors import AccessError, ConfigError, DataError


@pytest.fixture
def table() -> pd.DataFrame:
    rng = np.random.default_rng(1)
    n = 50
    df = pd.DataFrame(
        {
            "uid": [f"u{i}" for i in range(n)],
            "age": rng.integers(18, 80, n),
            "hours": rng.normal(40, 10, n).round(3),
            "sex": rng.choice(["Female", "Male"], n),
        }
    )
    df.loc[3, "hours"] = np.nan  # makes the column float in the CSV
    df["score"] = rng.random(n)
    df["decision"] = (df["score"] > 0.5).astype(int)
    df["logit"] = np.log(df["score"] / (1 - df["score"]))
    return df


@pytest.mark.parametrize("suffix", ["csv", "parquet", "csv.gz"])
def test_replays_by_feature_hash(tmp_path: Path, table: pd.DataFrame, suffix: str) -> None:
    path = tmp_path / f"answers.{suffix}"
    if suffix == "parquet":
        table.to_parquet(path)
    else:
        table.to_csv(path, index=False)
    be = ReplayBackend(path, feature_columns=["age", "hours", "sex"])
    assert len(be) == 50
    queries = table[["sex", "age", "hours"]].iloc[::-1]  # other order, other column order
    out = BlackBox(be).query(queries)
    np.testing.assert_array_equal(out.decisions, table["decision"].iloc[::-1])
    np.testing.assert_allclose(out.scores, table["score"].iloc[::-1])
    np.testing.assert_allclose(out.logits, table["logit"].iloc[::-1])


def test_replays_by_key_column(tmp_path: Path, table: pd.DataFrame) -> None:
    table.to_csv(tmp_path / "a.csv", index=False)
    be = ReplayBackend(tmp_path / "a.csv", key_column="uid")
    out = BlackBox(be).query([{"uid": "u7", "anything": 1}, {"uid": "u0"}])
    np.testing.assert_array_equal(out.decisions, table["decision"].iloc[[7, 0]])


def test_absent_input_is_named(tmp_path: Path, table: pd.DataFrame) -> None:
    table.to_csv(tmp_path / "a.csv", index=False)
    by_key = ReplayBackend(tmp_path / "a.csv", key_column="uid")
    with pytest.raises(AccessError, match="input uid = 'u999' is not in replay table a.csv") as e:
        BlackBox(by_key).query([{"uid": "u1"}, {"uid": "u999"}])
    assert "\n" not in str(e.value)
    by_hash = ReplayBackend(tmp_path / "a.csv", feature_columns=["age", "hours", "sex"])
    with pytest.raises(AccessError, match='input {"age": 1000, "hours": 1, "sex": "Male"} is not'):
        BlackBox(by_hash).query([{"age": 1000, "hours": 1, "sex": "Male"}])
    with pytest.raises(AccessError, match="lacks field 'hours'"):
        BlackBox(by_hash).query([{"age": 30, "sex": "Male"}])


def test_string_labels_and_unparsed(tmp_path: Path) -> None:
    df = pd.DataFrame({"id": [1, 2, 3], "answer": [">50K", "<=50K", None]})
    df.to_csv(tmp_path / "llm.csv", index=False)
    with pytest.raises(DataError, match="missing \\(NaN\\) decision in row 2"):
        ReplayBackend(tmp_path / "llm.csv", key_column="id", decision_column="answer",
                      positive_values=[">50K"])
    be = ReplayBackend(tmp_path / "llm.csv", key_column="id", decision_column="answer",
                       positive_values=[">50K"], allow_unparsed=True)
    bb = BlackBox(be)
    out = bb.query([{"id": 1}, {"id": 2}, {"id": 3}])
    np.testing.assert_array_equal(out.decisions[:2], [1, 0])
    assert np.isnan(out.decisions[2]) and bb.unparsed == 1


def test_dataframe_source_and_identity(table: pd.DataFrame) -> None:
    a = ReplayBackend(table, key_column="uid")
    b = ReplayBackend(table.copy(), key_column="uid")
    c = ReplayBackend(table.assign(decision=1 - table["decision"]), key_column="uid")
    assert a.identity == b.identity != c.identity
    assert a.identity != ReplayBackend(table, feature_columns=["age", "sex", "hours"]).identity


@pytest.mark.parametrize(
    "mutate, match",
    [
        (lambda d: d.drop(columns="decision"), "has no decision column 'decision'"),
        (lambda d: d.assign(decision=2), "decision 2 in row 0; decisions must be 0 or 1"),
        (lambda d: d.assign(score=1.5), "score 1.5 in row 0"),
        (lambda d: d.assign(logit=np.inf), "logit inf in row 0"),
        (lambda d: pd.concat([d, d.iloc[[0]].assign(decision=1 - d["decision"].iloc[0])]),
         "different answers to the same input in rows 0 and 50"),
    ],
)
def test_bad_tables(table: pd.DataFrame, mutate: object, match: str) -> None:
    with pytest.raises(DataError, match=match) as e:
        ReplayBackend(mutate(table), key_column="uid")  # type: ignore[operator]
    assert "\n" not in str(e.value)


def test_duplicate_rows_with_same_answer_are_fine(table: pd.DataFrame) -> None:
    be = ReplayBackend(pd.concat([table, table]), key_column="uid")
    assert len(be) == 50


def test_bad_files(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="does not exist"):
        ReplayBackend(tmp_path / "none.csv")
    (tmp_path / "a.json").write_text("{}")
    with pytest.raises(DataError, match=r"must end in \.csv, \.tsv or \.parquet"):
        ReplayBackend(tmp_path / "a.json")
    (tmp_path / "b.parquet").write_text("not parquet")
    with pytest.raises(DataError, match="Cannot read replay file b.parquet"):
        ReplayBackend(tmp_path / "b.parquet")
    with pytest.raises(DataError, match="no key column 'nope'"):
        ReplayBackend(pd.DataFrame({"decision": [1]}), key_column="nope")
    with pytest.raises(DataError, match="lacks feature column"):
        ReplayBackend(pd.DataFrame({"decision": [1]}), feature_columns=["a"])
    with pytest.raises(DataError, match="no feature column"):
        ReplayBackend(pd.DataFrame({"decision": [1]}))


def test_from_config(tmp_path: Path, table: pd.DataFrame) -> None:
    table.to_parquet(tmp_path / "a.parquet")
    (tmp_path / "replay.json").write_text('{"kind": "replay", "path": "a.parquet", "key_column": "uid"}')
    be = load_backend(tmp_path / "replay.json")
    assert isinstance(be, ReplayBackend)
    with pytest.raises(ConfigError, match="'key_colum'.*Extra inputs are not permitted"):
        load_backend({"kind": "replay", "path": "a.parquet", "key_colum": "uid"})


def test_config_fields_are_backend_keywords() -> None:
    """The replay config is handed to ReplayBackend field by field, under the same names."""
    import inspect

    from fairprobe.access.config import ReplayConfig

    keywords = set(inspect.signature(ReplayBackend).parameters) - {"table"}
    assert set(ReplayConfig.model_fields) - {"kind", "path"} == keywords
