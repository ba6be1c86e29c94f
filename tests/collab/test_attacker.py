from fractions import Fraction

import numpy as np
import pytest

from fairprobe.collab.attacker import (
    ATTACKS,
    AttackContext,
    AttackStrategy,
    get_attack,
    maximise_dp,
    minimise_abs_dp,
    neutral_increment,
    register_attack,
)
from fairprobe.errors import DataError, InvalidParameterError
from fairprobe.stats.counts import CountsVector


def _abs_dp(c, d) -> Fraction:
    return abs(Fraction(c[0] + d[0], c[1] + d[1]) - Fraction(c[2] + d[2], c[3] + d[3]))


def _brute_min(c, n) -> Fraction:
    a, A, b, B = c
    best = None
    for y in range(n + 1):
        if A + y == 0 or B + n - y == 0:
            continue
        for u in range(y + 1):
            for v in range(n - y + 1):
                val = abs(Fraction(a + u, A + y) - Fraction(b + v, B + n - y))
                if best is None or val < best:
                    best = val
    return best


def _views(rng: np.random.Generator, k: int, hi: int = 5000) -> np.ndarray:
    A = rng.integers(1, hi, k)
    B = rng.integers(1, hi, k)
    return np.stack([rng.integers(0, A + 1), A, rng.integers(0, B + 1), B], axis=1)


def _strategy(name: str, k: int, n: int = 300):
    """The registered strategy, calibrated (if it needs it) for ``k`` attacker rows."""
    ctx = AttackContext(
        population=CountsVector(1281, 45742, 14696, 48985),
        n=n,
        rounds=40,
        attackers=max(k, 1),
        honest=20,
        seed=3,
        ids=tuple(range(k)),
    )
    return get_attack(name).calibrate(ctx)


# ---- shared suite over every registered strategy -------------------------------------------
@pytest.mark.parametrize("name", sorted(ATTACKS))
@pytest.mark.parametrize("round_", [1, 2, 7])
def test_strategy_moves_are_in_X_n(name: str, round_: int) -> None:
    rng = np.random.default_rng(round_)
    for n in (1, 2, 17, 300):
        strat = _strategy(name, 25, n)
        views = _views(rng, 25)
        d = strat.fabricate(views, n, round_)
        assert d.shape == (25, 4) and d.dtype == np.int64
        assert (d >= 0).all() and (d[:, 1] + d[:, 3] == n).all()
        assert (d[:, 0] <= d[:, 1]).all() and (d[:, 2] <= d[:, 3]).all()


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_strategy_vectorised_equals_scalar_and_is_deterministic(name: str) -> None:
    rng = np.random.default_rng(5)
    strat = _strategy(name, 12)
    views = _views(rng, 12)
    d1 = strat.fabricate(views, 300, 3)
    d2 = _strategy(name, 12).fabricate(views, 300, 3)
    assert np.array_equal(d1, d2)
    for r in range(12):
        one = strat.for_ids((r,)).fabricate_one(CountsVector.from_array(views[r]), 300, 3)
        assert one.as_tuple() == tuple(int(x) for x in d1[r])


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_strategy_rejects_invalid_views(name: str) -> None:
    strat = _strategy(name, 1, 10)
    with pytest.raises(DataError):
        strat.fabricate([[5, 3, 0, 1]], 10, 2)  # a > A
    with pytest.raises(DataError):
        strat.fabricate([[1, 2, 3]], 10, 2)


# ---- the adaptive attacker (Algorithm 2) ----------------------------------------------------
def test_neutral_first_report() -> None:
    assert neutral_increment(300) == (75, 150, 75, 150)
    assert neutral_increment(7) == (1, 3, 2, 4)
    d = get_attack("adaptive").fabricate([[10, 100, 50, 100]], 300, 1)
    assert tuple(d[0]) == (75, 150, 75, 150)


def test_adaptive_is_the_exact_minimiser_brute_force() -> None:
    rng = np.random.default_rng(11)
    for _ in range(300):
        n = int(rng.integers(1, 10))
        A, B = (int(x) for x in rng.integers(0, 30, 2))
        if A + B == 0:
            continue
        c = (int(rng.integers(0, A + 1)), A, int(rng.integers(0, B + 1)), B)
        d = minimise_abs_dp([c], n)[0]
        assert _abs_dp(c, d) == _brute_min(c, n)


def test_adaptive_exact_on_large_views_against_per_split_enumeration() -> None:
    # realistic sizes: compare with an enumeration over (split, da) with the best db per da
    rng = np.random.default_rng(12)
    n = 40
    for _ in range(20):
        c = tuple(int(x) for x in _views(rng, 1, 60000)[0])
        best = None
        a, A, b, B = c
        for y in range(n + 1):
            for u in range(y + 1):
                X, P, Q = a + u, A + y, B + n - y
                for Y in {min(max(X * Q // P + e, b), b + n - y) for e in (0, 1)}:
                    val = abs(Fraction(X, P) - Fraction(Y, Q))
                    best = val if best is None or val < best else best
        d = minimise_abs_dp([c], n)[0]
        assert _abs_dp(c, d) == best


def test_lemma1_regime_claims_extreme_labels() -> None:
    # far below the band the minimiser maximises DP: every A query positive, every B negative
    c = [[100, 1000, 600, 1000]]
    d = minimise_abs_dp(c, 300)[0]
    assert d[0] == d[1] and d[2] == 0
    assert np.array_equal(d, maximise_dp(c, 300)[0])


def test_overshoot_regime_uses_intermediate_labels() -> None:
    c = [[480, 1000, 500, 1000]]  # DP = -0.02: extreme labels would overshoot above 0
    d = minimise_abs_dp(c, 300)[0]
    assert _abs_dp(c[0], d) < Fraction(1, 10**6)
    assert not (d[0] == d[1] and d[2] == 0)


def test_empty_group_views() -> None:
    d = minimise_abs_dp([[0, 0, 0, 0]], 4)[0]
    assert d[1] >= 1 and d[3] >= 1
    with pytest.raises(DataError):
        minimise_abs_dp([[0, 0, 0, 0]], 1)  # every split leaves a group empty
    with pytest.raises(InvalidParameterError):
        minimise_abs_dp([[0, 10, 0, 10]], 0)


def test_registry_plugs_in_a_new_strategy() -> None:
    @register_attack
    class _AllB(AttackStrategy):
        name = "_test-all-b"

        def fabricate(self, views, n, round_):
            v = np.asarray(views).reshape(-1, 4)
            return np.tile(np.array([0, 0, 0, n], dtype=np.int64), (v.shape[0], 1))

    try:
        assert get_attack("_test-all-b").fabricate_one(CountsVector(1, 2, 1, 2), 5, 1).B == 5
    finally:
        del ATTACKS["_test-all-b"]
    with pytest.raises(InvalidParameterError):
        get_attack("nope")
