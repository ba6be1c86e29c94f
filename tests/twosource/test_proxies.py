"""Proxies of Section 3.3: one shared suite over every registered proxy, plus pinned values."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fairprobe.datasets.names import FEMALE_NAMES, MALE_NAMES
from fairprobe.errors import ConfigError, DataError, InvalidParameterError
from fairprobe.twosource.proxies import (
    PROXIES,
    LearnedProxy,
    MappingProxy,
    NameProxy,
    Proxy,
    RandomProxy,
    make_proxy,
    proxy_from_spec,
)


def _records(n: int = 400, seed: int = 1) -> tuple[pd.DataFrame, np.ndarray]:
    rng = np.random.default_rng(seed)
    sex = np.where(rng.random(n) < 0.4, "Female", "Male").astype(object)
    idx = rng.integers(0, 25, n)
    names = np.where(sex == "Female", np.array(FEMALE_NAMES)[idx], np.array(MALE_NAMES)[idx])
    df = pd.DataFrame(
        {"first_name": names, "sex": sex, "age": rng.integers(18, 80, n),
         "region": np.where(sex == "Female", "north", "south")}
    )  # fmt: skip
    return df, sex


def _learned() -> Proxy:
    df, sex = _records(600, seed=7)
    return LearnedProxy(features=("first_name",)).fit(df, sex)


FACTORIES: dict[str, Callable[[], Proxy]] = {
    "identity": lambda: make_proxy("identity", column="sex"),
    "name": lambda: make_proxy("name"),
    "mapping": lambda: MappingProxy(
        {"north": {"Female": 0.9, "Male": 0.1}, "south": "Male"}, column="region"
    ),
    "learned": _learned,
    "random": lambda: make_proxy("random"),
}


def test_every_registered_proxy_is_in_the_shared_suite() -> None:
    assert set(PROXIES) == set(FACTORIES)


@pytest.fixture(params=sorted(FACTORIES))
def proxy(request: pytest.FixtureRequest) -> Proxy:
    return FACTORIES[request.param]()


def test_probabilities_are_rows_of_a_distribution(proxy: Proxy) -> None:
    df, _ = _records()
    p = proxy._probabilities(df)
    assert p.shape == (len(df), len(proxy.groups))
    assert np.allclose(p.sum(1), 1) and (p >= 0).all()


def test_predictions_are_seeded_and_within_groups(proxy: Proxy) -> None:
    df, _ = _records()
    a = proxy.predict_groups(df, seed=3)
    b = proxy.predict_groups(df, seed=3)
    assert (a == b).all()
    assert set(a) <= set(proxy.groups)
    groups, decisions = proxy.predict(df, np.ones(len(df)), seed=3)
    assert (groups == a).all() and (decisions == 1).all()


def test_accuracy_is_the_expected_hit_rate(proxy: Proxy) -> None:
    df, sex = _records(3000, seed=2)
    acc = proxy.accuracy(df, sex)
    assert 0 <= acc.p_phi <= 1
    hits = [np.mean(proxy.predict_groups(df, seed=s) == sex) for s in range(1000, 1020)]
    assert np.mean(hits) == pytest.approx(acc.p_phi, abs=0.01)
    conf = np.array(acc.confusion)
    assert conf.sum() == pytest.approx(len(df))
    assert json.dumps(acc.to_dict())
    assert json.dumps(proxy.describe())


def test_empty_input(proxy: Proxy) -> None:
    df, _ = _records()
    out = proxy.predict_groups(df.iloc[:0])
    assert out.shape == (0,)
    with pytest.raises(DataError, match="at least one record"):
        proxy.accuracy(df.iloc[:0], np.array([], dtype=object))


def test_pinned_accuracies() -> None:
    df, sex = _records(5000, seed=5)
    assert make_proxy("identity").accuracy(df, sex).p_phi == 1.0
    assert make_proxy("random").accuracy(df, sex).p_phi == pytest.approx(0.5)
    # name rule: 16/25 female names right in expectation, 21/25 male names
    female = sex == "Female"
    expected = (female.mean() * 16 + (~female).mean() * 21) / 25
    assert NameProxy().accuracy(df, sex).p_phi == pytest.approx(expected, abs=0.015)
    # two independent draws both right: p_i^2, so 1/4 on the h/y names
    hy = df["first_name"].str[-1].isin(["h", "y"]).mean()
    acc = NameProxy().accuracy(df, sex)
    assert acc.p_agree == pytest.approx(acc.p_phi - 0.25 * hy)
    assert make_proxy("identity").accuracy(df, sex).p_agree == 1.0
    assert make_proxy("random").accuracy(df, sex).p_agree == pytest.approx(0.25)
    one = pd.DataFrame({"first_name": ["Jessica", "Noah", "John", "Kyle"]})
    assert NameProxy()._probabilities(one)[:, 0].tolist() == [1.0, 0.5, 0.0, 1.0]


def test_name_proxy_on_adult_names() -> None:
    from fairprobe.datasets.adult import load_adult

    df = load_adult("test")
    acc = NameProxy().accuracy(df, df["sex"].to_numpy())
    # about 0.77 with uniformly drawn names (the paper reports 0.91 with its own names)
    assert 0.74 < acc.p_phi < 0.80


def test_unknown_groups_are_one_clear_error() -> None:
    df, sex = _records()
    bad = MappingProxy({"north": "F", "south": "M"}, column="region")
    with pytest.raises(DataError, match="unknown group"):
        bad.check_groups(["Female", "Male"])
    with pytest.raises(DataError, match="unknown group"):
        make_proxy("identity", column="region").predict_groups(df)
    with pytest.raises(DataError, match="no entry"):
        MappingProxy({"north": "Female"}, column="region").predict_groups(df)
    with pytest.raises(DataError, match="column"):
        NameProxy(column="nickname").predict_groups(df)


def test_mapping_default_and_file(tmp_path: Path) -> None:
    df, _ = _records()
    m = MappingProxy({"north": "Female"}, column="region", default={"Female": 0.2, "Male": 0.8})
    p = m._probabilities(df)
    south = (df["region"] == "south").to_numpy()
    assert np.allclose(p[south], [0.2, 0.8]) and np.allclose(p[~south], [1, 0])
    f = tmp_path / "m.json"
    f.write_text(json.dumps({"column": "region", "table": {"north": "Female", "south": "Male"}}))
    assert proxy_from_spec(f"mapping:{f}").accuracy(df, df["sex"]).p_phi == 1.0
    (tmp_path / "bad.json").write_text("[1]")
    with pytest.raises(ConfigError):
        proxy_from_spec(f"mapping:{tmp_path / 'bad.json'}")
    with pytest.raises(InvalidParameterError, match="sum to 1"):
        MappingProxy({"north": {"Female": 0.5, "Male": 0.6}}, column="region")


def test_learned_proxy_learns_and_needs_fitting() -> None:
    df, sex = _records(2000, seed=4)
    lp = LearnedProxy(features=("first_name", "age")).fit(df, sex)
    assert lp.accuracy(df, sex).p_phi > 0.9  # names identify sex exactly on the lists
    with pytest.raises(DataError, match="not fitted"):
        LearnedProxy().predict_groups(df)
    with pytest.raises(DataError, match="two groups"):
        LearnedProxy().fit(df, np.array(["Male"] * len(df)))


def test_bad_parameters() -> None:
    with pytest.raises(InvalidParameterError):
        make_proxy("oracle")
    with pytest.raises(InvalidParameterError):
        RandomProxy(probabilities=[0.7, 0.7])
    with pytest.raises(InvalidParameterError):
        RandomProxy(groups=["only"])
    with pytest.raises(InvalidParameterError, match="mapping:PATH"):
        proxy_from_spec("mapping")
