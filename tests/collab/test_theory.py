from fractions import Fraction

import numpy as np
import pytest

from fairprobe.collab.theory import fair_splits_bruteforce, phi_exact, theorem2
from fairprobe.errors import DataError, InvalidParameterError
from fairprobe.stats.counts import CountsVector


def test_theorem2_matches_brute_force_over_all_splits() -> None:
    rng = np.random.default_rng(0)
    checked = feasible = 0
    for _ in range(1500):
        A, B = (int(x) for x in rng.integers(1, 400, 2))
        c = CountsVector(int(rng.integers(0, A + 1)), A, int(rng.integers(0, B + 1)), B)
        n = int(rng.integers(1, 150))
        tau = float(rng.choice([0.05, 0.1, 0.02]))
        r = theorem2(c, n, tau)
        # I+ in closed form equals the brute-force set {y : phi(y) > -tau}
        ip = [y for y in range(n + 1) if phi_exact(c, n, y) > -Fraction(tau)]
        assert (r.splits is not None) == bool(ip)
        if ip:
            assert r.splits == (ip[0], ip[-1]) and len(ip) == ip[-1] - ip[0] + 1
        if r.assumption:
            checked += 1
            bf = bool(fair_splits_bruteforce(c, n, tau))
            feasible += bf
            assert bf == r.fairwashable
    assert checked > 200 and 0 < feasible < checked  # both outcomes exercised


def test_lemma5_condition1_is_mild() -> None:
    # DP(C) < -tau and max(A, B) >= n (1/(2 tau) - 1) imply condition 1
    rng = np.random.default_rng(1)
    for _ in range(500):
        n = int(rng.integers(1, 300))
        big = int(n * 9 + rng.integers(0, 5000))
        small = int(rng.integers(10, 5000))
        A, B = (big, small) if rng.random() < 0.5 else (small, big)
        a = int(rng.integers(0, A // 3 + 1))
        b = int(rng.integers(B // 2, B + 1))
        c = CountsVector(a, A, b, B)
        if a / A - b / B < -0.05:
            assert theorem2(c, n, 0.05).condition1


def test_pinned_far_and_near() -> None:
    # far from the band with a small budget: impossible; near the band: possible
    far = theorem2(CountsVector(100, 1000, 400, 1000), 300, 0.05)
    assert far.assumption and not far.fairwashable
    near = theorem2(CountsVector(300, 1000, 360, 1000), 300, 0.05)
    assert near.assumption and near.fairwashable
    assert near.to_dict()["fairwashable"] is True


def test_bad_input() -> None:
    with pytest.raises(DataError):
        theorem2(CountsVector(0, 0, 1, 2), 10)
    with pytest.raises(InvalidParameterError):
        theorem2(CountsVector(1, 2, 1, 2), 0)
    with pytest.raises(InvalidParameterError):
        theorem2(CountsVector(1, 2, 1, 2), 10, tau=0.0)
