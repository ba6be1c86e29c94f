"""The two-source audit against the platform's own logic (in process) and a live server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from fairprobe.access.blackbox import BlackBox
from fairprobe.access.cache import ResponseCache
from fairprobe.access.http import HttpJsonBackend
from fairprobe.datasets.adult import load_adult
from fairprobe.errors import BudgetError, DataError, EndpointUnreachableError
from fairprobe.twosource import (
    IdentityProxy,
    MappingProxy,
    make_proxy,
    n_max,
    run_two_source_audit,
)
from fairprobe.twosource.audit import default_columns


@pytest.fixture(scope="module")
def pool() -> pd.DataFrame:
    return load_adult("test").iloc[:6000].reset_index(drop=True)


def test_honest_platform_is_unfair_not_manipulated(fake: Any, pool: pd.DataFrame) -> None:
    api, ui = fake.sources(fake.platform())
    r = run_two_source_audit(api, ui, pool, make_proxy("name"), budget=800, seed=1)
    assert r.verdict == "unfair"
    assert r.detected_by == ()
    cons = r.consistency
    assert cons is not None and cons.details["n_inconsistent"] <= cons.details["n_max"]
    assert r.allocation.t_fraud == 200 and r.allocation.t_fair == 600
    assert r.queries_a == 600 and r.queries_b == 200
    # the proxy mixes groups, so DI through B is pulled towards 1 (attenuation)
    assert r.di_b is not None and r.di_b.estimate > r.di_a.estimate
    assert 0.74 < r.proxy_accuracy.p_phi < 0.80
    assert r.null == "agree" and r.p_test == pytest.approx(r.proxy_accuracy.p_agree)
    assert 0.70 < r.p_test < r.proxy_accuracy.p_phi
    d = r.to_dict()
    assert {"verdict", "di_a", "di_b_proxy", "n_inconsistent", "n_max", "p_value"} <= set(d)
    assert "UNFAIR" in str(r)
    # the figure's data: inconsistencies against n_max after each batch of checks
    path = d["checks_path"]
    assert path["checks"][-1] == r.queries_b and path["planned"] == 200
    assert path["inconsistencies"][-1] == cons.details["n_inconsistent"]
    assert path["n_max"][-1] == cons.details["n_max"]
    assert path["inconsistencies"] == sorted(path["inconsistencies"])


def test_same_seed_same_audit_other_seed_other_sample(fake: Any, pool: pd.DataFrame) -> None:
    api, ui = fake.sources(fake.platform("positive", 0.4))
    r1 = run_two_source_audit(api, ui, pool, make_proxy("name"), budget=400, seed=5)
    r2 = run_two_source_audit(api, ui, pool, make_proxy("name"), budget=400, seed=5)
    r3 = run_two_source_audit(api, ui, pool, make_proxy("name"), budget=400, seed=6)
    d1, d2 = r1.to_dict(), r2.to_dict()
    assert d2["queries"]["paid_a"] == 0  # the second run is answered by the cache
    assert {k: v for k, v in d1.items() if k != "queries"} == {
        k: v for k, v in d2.items() if k != "queries"
    }
    assert r1.di_a.counts != r3.di_a.counts


@pytest.mark.parametrize("mode", ["positive", "negative", "mixed"])
def test_heavy_fairwashing_is_caught_early(fake: Any, pool: pd.DataFrame, mode: str) -> None:
    api, ui = fake.sources(fake.platform(mode, 0.9))
    r = run_two_source_audit(api, ui, pool, make_proxy("name"), budget=1000, seed=2,
                             detectors=("consistency",))  # fmt: skip
    assert r.verdict == "manipulated"
    assert "consistency" in r.detected_by
    # with every detector on (the default), the conditional test fires at the first look
    rd = run_two_source_audit(api, ui, pool, make_proxy("name"), budget=1000, seed=2)
    assert "conditional" in rd.detected_by and rd.checks_to_detection == 25
    assert r.stop_reason == "detected" and r.stopped_early
    assert r.checks_to_detection is not None and r.checks_to_detection < 250
    # nothing of the A-only share is spent once manipulation is proved
    assert r.queries_a == r.queries_b < 250


def test_consistency_only_matches_the_paper_threshold(fake: Any, pool: pd.DataFrame) -> None:
    api, ui = fake.sources(fake.platform())
    r = run_two_source_audit(
        api, ui, pool, make_proxy("name"), budget=200, t_fraud=100, p_phi=0.91,
        detectors=("consistency",),
    )  # fmt: skip
    assert r.alpha_per_detector == 0.05
    cons = r.consistency
    assert cons is not None
    if r.stop_reason == "completed":
        assert cons.details["n_max"] == 14  # Section 4.2 with 100 checks


def test_cleared_early_stops_querying_b(fake: Any, pool: pd.DataFrame) -> None:
    # B exactly equal to A and a perfect proxy: no inconsistency can ever appear
    api, _ = fake.sources(fake.platform())
    ui = api
    r = run_two_source_audit(
        api, ui, pool, IdentityProxy("sex"), budget=400, detectors=("consistency",),
        ui_columns=default_columns()[0], batch_size=10,
    )  # fmt: skip
    # n_max = 0 with p_phi = 1: the test is never cleared before the last check
    assert r.consistency is not None and r.consistency.details["n_inconsistent"] == 0
    assert r.verdict == "unfair"
    # with a generous proxy error, clearing happens at the first look
    r2 = run_two_source_audit(
        api, ui, pool, IdentityProxy("sex"), budget=400, p_phi=0.5,
        detectors=("consistency",), batch_size=10, ui_columns=default_columns()[0],
    )  # fmt: skip
    nm = n_max(100, 0.5)  # 58: cleared once 0 + (100 - done) <= 58, i.e. at done = 50
    assert r2.stop_reason == "cleared" and r2.queries_b == 10 * -(-(100 - nm) // 10) == 50
    assert r2.queries_a == 300  # the A-only share is still spent


def test_answers_are_cached_nothing_paid_twice(
    fake: Any, pool: pd.DataFrame, tmp_path: Path
) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite")
    plat = fake.platform("positive", 0.2)
    api, ui = fake.sources(plat, cache)
    r1 = run_two_source_audit(api, ui, pool, make_proxy("name"), budget=300, seed=4)
    api2, ui2 = fake.sources(plat, cache)
    r2 = run_two_source_audit(api2, ui2, pool, make_proxy("name"), budget=300, seed=4)
    assert r1.paid_a + r1.paid_b > 0
    assert r2.paid_a == 0 and r2.paid_b == 0
    assert r1.verdict == r2.verdict


def test_unknown_groups_budget_and_columns(fake: Any, pool: pd.DataFrame) -> None:
    api, ui = fake.sources(fake.platform())
    bad = MappingProxy({"Jessica": "F"}, column="first_name", default={"M": 1.0})
    with pytest.raises(DataError, match="unknown group"):
        run_two_source_audit(api, ui, pool, bad, budget=100)
    with pytest.raises(BudgetError, match="too small for one query per group per source"):
        run_two_source_audit(api, ui, pool, make_proxy("name"), budget=4)
    with pytest.raises(DataError, match="lacks the column"):
        run_two_source_audit(api, ui, pool.drop(columns="first_name"), make_proxy("name"),
                             budget=100)  # fmt: skip
    three = pool.assign(sex=np.where(pool.index % 3 == 0, "Other", pool["sex"]))
    with pytest.raises(DataError, match="exactly two values"):
        run_two_source_audit(api, ui, three, make_proxy("random"), budget=100)


def test_unpairable_answers_one_clear_error(fake: Any, pool: pd.DataFrame) -> None:
    api, _ = fake.sources(fake.platform())
    ui = BlackBox(fake.Unparsed())
    with pytest.raises(DataError, match="could be paired"):
        run_two_source_audit(api, ui, pool, make_proxy("name"), budget=100)


def test_timeout_of_b_loses_nothing_paid(fake: Any, pool: pd.DataFrame, tmp_path: Path) -> None:
    from conftest import free_port

    cache = ResponseCache(tmp_path / "c.sqlite")
    api, ui_ok = fake.sources(fake.platform(), cache)
    dead = HttpJsonBackend(url=f"http://127.0.0.1:{free_port()}", path="/user/predict",
                           timeout=0.5)  # fmt: skip
    ui = BlackBox(dead, cache=cache, retries=0, backoff=0.0)
    with pytest.raises(EndpointUnreachableError, match="source B"):
        run_two_source_audit(api, ui, pool, make_proxy("name"), budget=200, seed=9)
    assert api.spent == 25  # one batch of checks reached A before B failed
    api2, _ = fake.sources(fake.platform(), cache)
    run_two_source_audit(api2, ui_ok, pool, make_proxy("name"), budget=200, seed=9)
    assert api2.from_cache >= 25  # the first batch came from the cache
    assert api.spent + api2.spent <= 150  # t_fair = 150: nothing of A paid twice


def test_live_platform_server(fake: Any, pool: pd.DataFrame, live_platform: Any) -> None:
    from fairprobe.twosource import platform_blackboxes

    api, ui = platform_blackboxes(live_platform.url)
    r = run_two_source_audit(api, ui, pool, make_proxy("name"), budget=600, seed=0)
    assert r.verdict == "manipulated"
    assert r.di_b is not None and r.di_a.estimate > r.di_b.estimate


def test_conditional_detector_stops_early_and_stays_quiet_when_honest(
    fake: Any, pool: pd.DataFrame
) -> None:
    api, ui = fake.sources(fake.platform("positive", 0.5))
    r = run_two_source_audit(api, ui, pool, make_proxy("name"), budget=1000, seed=3,
                             detectors=("conditional",))  # fmt: skip
    assert r.verdict == "manipulated" and r.stop_reason == "detected"
    assert r.checks_to_detection is not None and r.checks_to_detection <= 100
    assert r.queries_b == r.checks_to_detection < 250
    cond = r.outcome("conditional")
    assert cond is not None and cond.details["n_mismatch_on_hits"] > 0
    # interim looks spend half of alpha, the final look keeps the other half
    assert cond.alpha == pytest.approx(0.05 / 2)
    api, ui = fake.sources(fake.platform())
    honest = [
        run_two_source_audit(
            api, ui, pool, make_proxy("name"), budget=400, seed=s, detectors=("conditional",)
        ).verdict  # fmt: skip
        for s in range(5)
    ]
    assert honest == ["unfair"] * 5


def test_no_detector_is_an_error(fake: Any) -> None:
    from fairprobe.errors import InvalidParameterError
    from fairprobe.twosource import NameProxy, run_two_source_audit

    api, ui = fake.sources(fake.platform("positive", 0.4))
    pool = load_adult("test").head(400)
    with pytest.raises(InvalidParameterError, match="names no detector"):
        run_two_source_audit(api, ui, pool, NameProxy(), budget=200, detectors=())
