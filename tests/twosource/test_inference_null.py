"""The detectors' null rests on B's inference rule, never on a learned proxy's probabilities."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

from fairprobe.datasets.adult import load_adult
from fairprobe.errors import InvalidParameterError
from fairprobe.twosource import (
    LearnedProxy,
    NameProxy,
    honest_consistency,
    run_two_source_audit,
)


@pytest.fixture(scope="module")
def pool() -> pd.DataFrame:
    return load_adult("test").iloc[:6000].reset_index(drop=True)


@pytest.fixture(scope="module")
def learned(pool: pd.DataFrame) -> LearnedProxy:
    return LearnedProxy(features=("first_name",)).fit(pool, pool["sex"].astype(str))


def test_learned_proxy_without_an_inference_rule_is_refused(fake: Any, pool: pd.DataFrame,
                                                            learned: LearnedProxy) -> None:
    api, ui = fake.sources(fake.platform())
    with pytest.raises(InvalidParameterError, match="inference"):
        run_two_source_audit(api, ui, pool, learned, budget=400, seed=0)


def test_learned_proxy_on_an_honest_platform_is_not_flagged(fake: Any, pool: pd.DataFrame,
                                                            learned: LearnedProxy) -> None:
    """With the learned proxy's own probabilities as the null the conditional detector fired on
    most honest audits (the learned rule is sure of names B's rule is not); with B's rule as
    the null, honest audits are flagged at most at alpha."""
    api, ui = fake.sources(fake.platform())
    acc = learned.accuracy(pool, pool["sex"].astype(str).to_numpy(object))
    flagged = 0
    for seed in range(12):
        r = run_two_source_audit(api, ui, pool, learned, budget=1200, seed=seed,
                                 proxy_accuracy=acc, inference=NameProxy())
        flagged += r.verdict == "manipulated"
        assert r.extra["inference"]["rule"]["name"] == "name"
        assert "holds only if B infers the group with the 'name' rule" in str(r)
    assert flagged <= 1
    # the consistency null mixes the two rules: mean of p_i r_i, below both p_agree's
    p = honest_consistency(learned, NameProxy(), pool, pool["sex"].astype(str))
    assert 0.5 < p < acc.p_phi
    assert r.p_test == pytest.approx(p)


def test_learned_proxy_still_detects_fairwashing(fake: Any, pool: pd.DataFrame,
                                                 learned: LearnedProxy) -> None:
    api, ui = fake.sources(fake.platform("positive", 0.4))
    hits = [run_two_source_audit(api, ui, pool, learned, budget=1200, seed=s,
                                 inference=NameProxy()).verdict == "manipulated"
            for s in range(3)]
    assert all(hits)


def test_conditional_rates_come_from_the_inference_rule(fake: Any, pool: pd.DataFrame,
                                                        learned: LearnedProxy) -> None:
    """A pair enters the conditional test only where B's rule is sure (p >= 0.9)."""
    api, ui = fake.sources(fake.platform())
    r = run_two_source_audit(api, ui, pool, learned, budget=800, seed=3, inference=NameProxy(),
                             detectors=("conditional",))
    d = r.outcome("conditional")
    assert d is not None
    # the name rule is sure (p = 1) or a coin (1/2): no honest mismatch is allowed on sure pairs
    assert d.details["expected_if_honest_at_most"] == pytest.approx(0.0)
    assert np.isfinite(d.details["n_hits"]) and d.details["n_hits"] > 0


def test_cli_default_rule_for_a_learned_proxy_is_the_name_rule(pool: pd.DataFrame,
                                                               learned: LearnedProxy) -> None:
    from fairprobe.twosource.job import inference_rule

    assert isinstance(inference_rule("auto", "learned", learned, pool, "sex"), NameProxy)
    assert inference_rule("auto", "name", NameProxy(), pool, "sex") is None
    assert inference_rule("proxy", "learned", learned, pool, "sex") is None  # refused later
    with pytest.raises(InvalidParameterError, match="first_name"):
        inference_rule("auto", "learned", learned, pool.drop(columns="first_name"), "sex")
