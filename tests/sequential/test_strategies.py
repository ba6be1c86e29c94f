"""The shared suite over every registered sequential test and access regime."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fairprobe.errors import DataError, InvalidParameterError
from fairprobe.sequential import OUTCOMES, available_tests, get_test
from fairprobe.sequential.base import COMPLIANT, VIOLATION

TESTS = available_tests()
ACCESS = ("decisions", "scores", "logits")


def _draw(rng: np.random.Generator, access: str, ma: float, mb: float, shape: tuple[int, int]):
    in_a = rng.random(shape) < 0.6
    m = np.where(in_a, ma, mb)
    if access == "decisions":
        x = (rng.random(shape) < m).astype(float)
    elif access == "scores":
        x = rng.beta(m * 6, (1 - m) * 6)
    else:
        x = rng.normal(6.0 * (m - 0.5), 0.5)  # logit gap 6x the rate gap
    return in_a, x


def _test(name: str, access: str, **kw):
    return get_test(name, tolerance=0.1, access=access, **kw)


def test_registry_holds_the_four_tests() -> None:
    assert set(TESTS) == {"mixture", "glr-wald", "betting", "fixed"}
    assert TESTS[0] == "mixture"  # the default first
    assert get_test("GLR", tolerance=0.1).name == "glr-wald"  # former name, any case
    assert get_test(tolerance=0.1).name == "mixture"
    with pytest.raises(InvalidParameterError, match="'test' parameter"):
        get_test("nope", tolerance=0.1)


@pytest.mark.parametrize("name", TESTS)
@pytest.mark.parametrize("access", ACCESS)
def test_stepper_equals_vectorised(name: str, access: str) -> None:
    rng = np.random.default_rng(11)
    t = _test(name, access)
    for ma, mb in [(0.3, 0.2), (0.5, 0.2), (0.4, 0.38)]:
        in_a, x = _draw(rng, access, ma, mb, (12, 700))
        res = t.run_orders(in_a, x)
        for r in range(in_a.shape[0]):
            path = t.run_path(in_a[r], x[r])
            assert path["queries"] == res.queries[r]
            assert path["outcome"] == OUTCOMES[res.codes[r]]
            assert len(path["statistic_upper"]) == path["queries"]


@pytest.mark.parametrize("name", TESTS)
@pytest.mark.parametrize("access", ACCESS)
def test_clear_cases_are_decided(name: str, access: str) -> None:
    rng = np.random.default_rng(5)
    t = _test(name, access)
    in_a, x = _draw(rng, access, 0.7, 0.2, (40, 1500))  # gap 0.5 >> delta
    res = t.run_orders(in_a, x)
    assert (res.codes == VIOLATION).mean() >= 0.95
    assert (res.queries <= 1500).all()
    in_a, x = _draw(rng, access, 0.4, 0.4, (40, 3000))  # gap 0 << delta
    res = t.run_orders(in_a, x)
    assert (res.codes == COMPLIANT).mean() >= 0.9
    if name != "fixed":  # sequential tests stop early on clear cases
        assert np.median(res.queries) < 1500


@pytest.mark.parametrize("name", TESTS)
def test_deterministic_and_budget_respected(name: str) -> None:
    rng = np.random.default_rng(2)
    in_a, x = _draw(rng, "scores", 0.35, 0.25, (30, 400))
    t = get_test(name, tolerance=0.1, access="scores")
    a, b = t.run_orders(in_a, x), t.run_orders(in_a, x)
    np.testing.assert_array_equal(a.queries, b.queries)
    np.testing.assert_array_equal(a.codes, b.codes)
    assert a.queries.max() <= 400 and a.queries.min() >= 1
    if name == "fixed":
        assert (a.queries == 400).all()


@pytest.mark.parametrize("name", TESTS)
@pytest.mark.parametrize("tol", [0.0, 1.0, 1.5, -0.2, math.nan])
def test_tolerance_outside_unit_interval(name: str, tol: float) -> None:
    with pytest.raises(InvalidParameterError, match="'tolerance' parameter .* must be a float in"):
        get_test(name, tolerance=tol)


@pytest.mark.parametrize("name", TESTS)
def test_bad_parameters_and_values(name: str) -> None:
    with pytest.raises(InvalidParameterError):
        get_test(name, tolerance=0.1, access="probabilities")
    with pytest.raises(InvalidParameterError):
        get_test(name, tolerance=0.1, alpha=0.0)
    t = get_test(name, tolerance=0.1, access="scores")
    with pytest.raises(DataError, match=r"\[0, 1\]"):
        t.run_orders(np.array([[True, False]]), np.array([[0.5, 1.2]]))
    with pytest.raises(InvalidParameterError, match="'budget'"):
        t.stepper(0)
    d = get_test(name, tolerance=0.1, access="decisions")
    with pytest.raises(DataError, match="0 or 1"):
        d.run_orders(np.array([[True, False]]), np.array([[0.5, 1.0]]))
    st = d.stepper(1)
    st.update(True, 1.0)
    assert st.done and st.outcome == "inconclusive"
    with pytest.raises(InvalidParameterError, match="already stopped"):
        st.update(False, 0.0)


def test_betting_type_one_error_at_the_boundary() -> None:
    """Anytime validity: at gap = delta, P(violation) <= alpha whatever the budget."""
    rng = np.random.default_rng(7)
    t = get_test("betting", tolerance=0.1, access="decisions", alpha=0.05)
    in_a, x = _draw(rng, "decisions", 0.35, 0.25, (800, 2000))
    res = t.run_orders(in_a, x)
    rate = (res.codes == VIOLATION).mean()
    assert rate <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / 800)
    # and under a clear violation it rarely declares compliance (beta = 0.2)
    in_a, x = _draw(rng, "decisions", 0.45, 0.25, (300, 2000))
    res = t.run_orders(in_a, x)
    assert (res.codes == COMPLIANT).mean() <= 0.2


def test_fixed_test_level_at_the_boundary() -> None:
    rng = np.random.default_rng(8)
    t = get_test("fixed", tolerance=0.1, access="scores", alpha=0.05)
    in_a, x = _draw(rng, "scores", 0.35, 0.25, (1500, 1000))
    rate = (t.run_orders(in_a, x).codes == VIOLATION).mean()
    assert abs(rate - 0.05) <= 4 * math.sqrt(0.05 * 0.95 / 1500)


def test_glr_boundary_crossing_logic() -> None:
    t = get_test("glr", tolerance=0.1)
    b = t.boundaries
    assert b.upper == pytest.approx(math.log(16)) and b.lower == pytest.approx(math.log(0.2 / 0.95))
    # group a all ones, group b all zeros: violation as soon as the statistic passes log 16
    st = t.stepper(100)
    seq = [(True, 1.0), (False, 0.0)] * 10
    for g, v in seq:
        if st.update(g, v):
            break
    assert st.outcome == "violation" and st.statistic_upper >= b.upper
    assert st.n < 20
