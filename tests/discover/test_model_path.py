"""Discovery over a model's answers: the platform server as a real process on 127.0.0.1 serves a
model with a planted unfair subgroup; ``fairprobe discover --url ... --queries ... --budget``
asks it and finds the subgroup, and a rerun takes every answer from the cache."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("sklearn")

RACES = ["White", "Black", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other"]


def _pool(n: int, seed: int) -> pd.DataFrame:
    """Records with the platform's seven features."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "age": rng.integers(18, 80, n), "education-num": rng.integers(1, 17, n),
        "race": np.array(RACES)[rng.integers(0, 5, n)],
        "capital-gain": rng.choice([0, 0, 0, 2174, 5178], n), "capital-loss": np.zeros(n, int),
        "hours-per-week": rng.integers(10, 70, n),
        "sex": np.where(rng.random(n) < 0.4, "Female", "Male"),
    })


def _planted(pool: pd.DataFrame) -> np.ndarray:
    """The served model's decisions: positive when hours-per-week > 50 (about a third of the
    rows), and always for Black women (about 8% of the rows): the planted subgroup."""
    return ((pool["hours-per-week"] > 50) | ((pool["race"] == "Black")
                                              & (pool["sex"] == "Female"))).to_numpy()


@pytest.fixture(scope="module")
def planted_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import joblib
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder
    from sklearn.tree import DecisionTreeClassifier

    train = _pool(4_000, 11)
    pre = ColumnTransformer([("c", OneHotEncoder(handle_unknown="ignore"), ["race", "sex"]),
                             ("n", "passthrough", ["hours-per-week"])])
    pipe = make_pipeline(pre, DecisionTreeClassifier(random_state=0)).fit(
        train, _planted(train).astype(int))
    path = tmp_path_factory.mktemp("planted") / "planted.joblib"
    joblib.dump(pipe, path)
    return path


def test_discover_over_a_served_model_finds_the_planted_subgroup(planted_model: Path,
                                                                 tmp_path: Path) -> None:
    from fairprobe.platform.process import PlatformProcess

    pool = _pool(3_000, 5)
    pool.to_csv(tmp_path / "pool.csv", index=False)
    cmd = [sys.executable, "-m", "fairprobe", "discover", "--queries", str(tmp_path / "pool.csv"),
           "--budget", "1500", "--features", "race,sex", "--seed", "3", "--cache",
           str(tmp_path / "cache.sqlite")]
    with PlatformProcess(model_file=planted_model, allow_pickle=True, seed=0) as plat:
        first = subprocess.run([*cmd, "--url", plat.url, "--json", str(tmp_path / "a.json")],
                               capture_output=True, text=True, timeout=300)
        again = subprocess.run([*cmd, "--url", plat.url, "--json", str(tmp_path / "b.json")],
                               capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr
    assert again.returncode == 0, again.stderr
    doc = json.loads((tmp_path / "a.json").read_text())
    assert doc["kind"] == "discover" and doc["rows"] == 1500
    top = doc["subgroups"][0]
    assert {(c["feature"], c["value"]) for c in top["conditions"]} == {("race", "Black"),
                                                                      ("sex", "Female")}
    assert top["rate"] == 1.0 and top["interval"]["low"] > doc["tolerance"]
    # every subgroup reported truly differs by more than the tolerance on this pool
    truth = pd.Series(_planted(pool), index=pool.index)
    for s in doc["subgroups"]:
        m = np.ones(len(pool), dtype=bool)
        for c in s["conditions"]:
            m &= (pool[c["feature"]] == c["value"]).to_numpy()
        assert abs(truth[m].mean() - truth[~m].mean()) > doc["tolerance"], s["label"]
    extra = doc["provenance"]["extra"]
    assert extra["paid"] == 1500
    rerun = json.loads((tmp_path / "b.json").read_text())
    assert rerun["provenance"]["extra"]["paid"] == 0  # every answer from the cache
    assert rerun["subgroups"] == doc["subgroups"]
