"""The Table I populations as replayable answer sets."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from fairprobe.datasets.populations import POPULATIONS, get_population, write_population_answers
from fairprobe.errors import DataError, InvalidParameterError


def test_six_cases() -> None:
    assert len(POPULATIONS) == 6
    p = get_population("bios-moderate")
    assert (p.size_a, p.size_b, p.positives_a, p.positives_b) == (48_985, 45_742, 20_721, 26_119)


@pytest.mark.parametrize("name", sorted(POPULATIONS))
@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_written_answers_reproduce_the_counts(tmp_path: Path, name: str, suffix: str) -> None:
    pop = get_population(name)
    path = write_population_answers(name, tmp_path / f"ans{suffix}", seed=3)
    df = pd.read_csv(path) if suffix == ".csv" else pd.read_parquet(path)
    assert list(df.columns) == ["query_id", "group", "decision"]
    assert len(df) == pop.size_a + pop.size_b
    assert df["query_id"].is_unique
    grp = df.groupby("group")["decision"].agg(["sum", "count"])
    assert (int(grp.loc["A", "sum"]), int(grp.loc["A", "count"])) == (pop.positives_a, pop.size_a)
    assert (int(grp.loc["B", "sum"]), int(grp.loc["B", "count"])) == (pop.positives_b, pop.size_b)
    assert abs(pop.true_dp - pop.paper_true_dp) < 0.0015


def test_shuffle_is_seeded() -> None:
    pop = get_population("civil-near-fair")
    a, b = pop.answers_frame(seed=1), pop.answers_frame(seed=1)
    pd.testing.assert_frame_equal(a, b)
    assert not a.equals(pop.answers_frame(seed=2))
    plain = pop.answers_frame()
    assert plain["group"].iloc[0] == "A" and plain["decision"].iloc[0] == 1


def test_bad_inputs(tmp_path: Path) -> None:
    with pytest.raises(InvalidParameterError, match="case"):
        get_population("nope")
    with pytest.raises(DataError, match="must end in"):
        write_population_answers("bios-moderate", tmp_path / "x.xlsx")


def test_answer_sets_replay_through_the_replay_backend(tmp_path: Path) -> None:
    """The written file is usable as is by fairprobe.access.ReplayBackend (key query_id)."""
    from fairprobe.access.replay import ReplayBackend

    pop = get_population("civil-moderate")
    path = write_population_answers("civil-moderate", tmp_path / "ans.parquet", seed=1)
    backend = ReplayBackend(path, key_column="query_id")
    frame = pop.answers_frame(seed=1)
    queries = [{"query_id": int(q)} for q in frame["query_id"].iloc[:500]]
    answers = backend.ask(queries)
    assert [a.decision for a in answers] == frame["decision"].iloc[:500].tolist()
