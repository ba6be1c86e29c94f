"""The ``bounded`` verdict: soundness by brute force, against every registered attack,
and the pieces of its certificate.

Guarantees checked: the interval contains ``DP`` of every hypothesis (any ``<= k`` sources
removed, any ``<= U`` unseen records added) on random small instances, exhaustively; hence the
true DP of the honest auditors whenever at most ``k`` sources lie; in the simulator, with the
declared bound equal to the number of liars, no verdict (any honest auditor's or the
regulator's) is ever wrong under any registered attack, and with no liar the Table I models are
called unfair; the regulator's interval covers whatever ``<= K`` reports say.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

from fairprobe.collab.attacker import ATTACKS
from fairprobe.collab.bounded import (
    bounded_intervals,
    dp_range,
    escape_bound,
    flip_masses,
    global_interval,
    unseen_mass,
)
from fairprobe.collab.certificate import _flip_mass
from fairprobe.collab.simulate import SimConfig, simulate


def _dp(t) -> Fraction | None:
    a, A, b, B = t
    if A == 0 or B == 0:
        return None
    return Fraction(a, A) - Fraction(b, B)


def _hypotheses(v: np.ndarray, k: int, U: int):
    """Every DP of the hull: <= k sources removed, <= U unseen records of any group/answer."""
    V = len(v)
    adds = [(x, X, y, Y) for X in range(U + 1) for Y in range(U + 1 - X)
            for x in range(X + 1) for y in range(Y + 1)]
    for r in range(k + 1):
        for S in itertools.combinations(range(V), r):
            keep = [j for j in range(V) if j not in S]
            t = v[keep].sum(axis=0) if keep else np.zeros(4, dtype=np.int64)
            for f in adds:
                d = _dp(tuple(int(a) + b for a, b in zip(t, f, strict=True)))
                if d is not None:
                    yield d


def _random_table(rng: np.random.Generator, V: int) -> np.ndarray:
    A = rng.integers(0, 7, V)
    B = rng.integers(0, 7, V)
    a = rng.integers(0, A + 1)
    b = rng.integers(0, B + 1)
    return np.stack([a, A, b, B], axis=1).astype(np.int64)


def test_the_interval_contains_every_hypothesis_brute_force():
    rng = np.random.default_rng(21)
    checked = 0
    for _ in range(300):
        V = int(rng.integers(2, 6))
        v = _random_table(rng, V)
        if v[:, 1].sum() == 0 or v[:, 3].sum() == 0:
            continue
        k = int(rng.integers(0, min(3, V)))
        U = int(rng.integers(0, 4))
        lo, hi = dp_range(v[None].astype(float), k, np.array([float(U)]))
        vals = list(_hypotheses(v, k, U))
        if math.isnan(lo[0]):
            continue  # no interval: undetermined, never wrong
        assert lo[0] <= min(vals) + 1e-12 and max(vals) <= hi[0] + 1e-12, (v, k, U)
        checked += 1
    assert checked > 200
    # k = 0, U = 0: the interval is the pooled DP itself
    v = np.array([[3, 10, 1, 5], [2, 4, 4, 6]])
    lo, hi = dp_range(v[None].astype(float), 0, np.zeros(1))
    assert lo[0] == pytest.approx(5 / 14 - 5 / 11) and hi[0] == pytest.approx(5 / 14 - 5 / 11)


def test_the_truth_is_covered_whatever_at_most_k_liars_report():
    """Honest sources report true counts (complete); liars anything, of any size."""
    rng = np.random.default_rng(7)
    for _ in range(400):
        n_h, n_l = int(rng.integers(2, 6)), int(rng.integers(0, 3))
        honest = _random_table(rng, n_h) * int(rng.integers(1, 30))
        if honest[:, 1].sum() == 0 or honest[:, 3].sum() == 0:
            continue
        liars = _random_table(rng, n_l) * int(rng.integers(1, 500)) if n_l else honest[:0]
        table = np.concatenate([honest, liars])[rng.permutation(n_h + n_l)]
        truth = float(_dp(tuple(honest.sum(axis=0))))
        for k in range(n_l, n_l + 2):
            est, lo, hi = bounded_intervals(table[None], np.full((1, len(table)), 5), n=10**6,
                                            rounds=5, max_liars=k)
            assert math.isnan(lo[0]) or lo[0] <= truth <= hi[0], (honest, liars, k)


def test_unseen_mass_and_proven_liars():
    c = np.array([[[1, 3, 1, 3], [0, 2, 1, 3], [0, 0, 0, 0]]])
    r = np.array([[2, 2, 0]])
    # 6 = n r: may go on, n (R - r) = 3 * 2; 5 < 6: ran out; nothing held: handled by the caller
    assert unseen_mass(c, r, 3, 4).tolist() == [[6.0, 0.0, 6.0 * 2 / 3 * 0 + 12.0]]
    tab = np.array([[[5, 10, 9, 10], [9, 10, 0, 10], [0, 0, 0, 0]]])
    held = np.array([[3, 3, 0]])
    _, lo, hi = bounded_intervals(tab, held, n=10, rounds=3, max_liars=0)
    assert lo[0] < 0.0 < 0.25 + 0.15 < hi[0]  # the unheld source may hold 30 records of anything
    proven = np.array([[False, True, False]])
    held2 = np.array([[3, 3, 3]])
    # the proven liar is dropped and does not use up K: K = 0 besides it, complete
    est, lo, hi = bounded_intervals(tab, held2, n=10, rounds=3, max_liars=0, proven=proven)
    assert lo[0] == pytest.approx(-0.4) and hi[0] == pytest.approx(-0.4)
    # with K = 1 besides the proven one (removing the only other source empties a group)
    _, lo1, hi1 = bounded_intervals(tab, held2, n=10, rounds=3, max_liars=1, proven=proven)
    assert lo1[0] <= -0.4 <= hi1[0]
    # a liar proven before any of its entries arrived adds no unseen mass
    held3 = np.array([[3, 0, 3]])
    _, lo, hi = bounded_intervals(tab, held3, n=10, rounds=3, max_liars=0, proven=proven)
    assert lo[0] == pytest.approx(-0.4) and hi[0] == pytest.approx(-0.4)


def test_the_regulators_interval_covers_whatever_k_reports_say():
    rng = np.random.default_rng(3)
    for _ in range(500):
        theta = float(rng.uniform(-0.5, 0.5))
        N, K = int(rng.integers(1, 8)), int(rng.integers(0, 4))
        lo = theta - rng.uniform(0, 0.2, N)
        hi = theta + rng.uniform(0, 0.2, N)
        fake_lo = rng.uniform(-1, 1, K)
        fake_hi = fake_lo + rng.uniform(-0.5, 0.5, K)
        g_lo, g_hi = global_interval(np.r_[lo, fake_lo], np.r_[hi, fake_hi], K)
        assert math.isnan(g_lo) or g_lo <= theta <= g_hi


def test_flip_mass_agrees_with_the_certificate_and_escape_bound():
    rng = np.random.default_rng(5)
    for _ in range(40):
        v = rng.integers(1, 2000, (6, 4)).astype(float)
        v[:, 0] = np.minimum(v[:, 0], v[:, 1])
        v[:, 2] = np.minimum(v[:, 2], v[:, 3])
        t = v.sum(0)
        est = t[0] / t[1] - t[2] / t[3]
        ver = "fair" if abs(est) <= 0.05 else "unfair"
        ours = float(flip_masses(v[None], 0.05, np.array([ver]))[0])
        ref = _flip_mass(v, 0.05, ver == "fair", est)
        assert ref is not None and ours == pytest.approx(ref, rel=0.01, abs=2.0)
    assert np.isnan(flip_masses(v[None], 0.05, np.array(["undetermined"]))[0])
    assert escape_bound(1700.0, 0.04) == pytest.approx(0.96 ** 1700)
    assert escape_bound(None, 0.04) is None and escape_bound(10.0, None) is None


CASES = ("bios-moderate", "civil-near-fair", "bios-very-unfair")


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_no_wrong_verdict_with_at_most_the_declared_liars_under_every_attack(attack):
    for case in CASES:
        for k in (1, 2):
            for seed in (0, 1):
                res = simulate(SimConfig(case, attackers=k, seed=seed, attack=attack,
                                         max_liars=k, honest=12))
                truth = "fair" if abs(res.honest_dp) <= 0.05 else "unfair"
                assert res.verdicts["bounded"] in (truth, "undetermined"), (case, k, seed)
                nv = res.node_verdicts["bounded"]
                assert set(nv.tolist()) <= {truth, "undetermined"}, (case, k, seed)
                lo, hi = res.bounded["low"], res.bounded["high"]
                ok = np.isnan(lo) | ((lo <= res.honest_dp) & (res.honest_dp <= hi))
                assert ok.all(), (case, k, seed)


@pytest.mark.parametrize("case", CASES)
def test_with_no_liar_the_unfair_models_are_called_unfair(case):
    for seed in range(3):
        res = simulate(SimConfig(case, seed=seed))
        assert res.verdicts["bounded"] == "unfair"
        assert (res.node_verdicts["bounded"] == "unfair").all()
        f = res.findings["bounded"]
        assert f["interval"]["construction"] == "liar-hull"
        assert f["question"]["subject"] == "simulation"
        assert res.default_method == "bounded"


def test_the_exact_hull_is_the_brute_force_hull_and_inside_the_relaxation():
    from fairprobe.collab.bounded import exact_hull

    rng = np.random.default_rng(27)
    exact_hits = checked = 0
    for _ in range(300):
        V = int(rng.integers(2, 6))
        v = _random_table(rng, V)
        if v[:, 1].sum() == 0 or v[:, 3].sum() == 0:
            continue
        k = int(rng.integers(0, min(4, V)))
        u = rng.integers(0, 2, V) * rng.integers(0, 2, V)  # per-source unseen mass, mostly 0
        lo, hi = exact_hull(v[None].astype(float), u[None].astype(float), k)
        vals = []
        for r in range(k + 1):
            for S in itertools.combinations(range(V), r):
                keep = [j for j in range(V) if j not in S]
                vals += list(_hypotheses(v[keep], 0, int(u[keep].sum()))) if keep else []
        if not vals:
            assert math.isnan(lo[0])
            continue
        assert lo[0] <= float(min(vals)) + 1e-12 and float(max(vals)) <= hi[0] + 1e-12
        if u.sum() == 0:  # no unseen mass: the hull is attained, exactly
            assert lo[0] == pytest.approx(float(min(vals)), abs=1e-9)
            assert hi[0] == pytest.approx(float(max(vals)), abs=1e-9)
            exact_hits += 1
        rlo, rhi = dp_range(v[None].astype(float), k, np.array([float(u.sum())]))
        if not math.isnan(rlo[0]):
            assert rlo[0] <= lo[0] + 1e-12 and hi[0] <= rhi[0] + 1e-12
        checked += 1
    assert checked > 200 and exact_hits > 100


def test_the_sample_hull_covers_the_model_whatever_one_liar_reports():
    from fairprobe.collab.bounded import sampling_hull

    rng = np.random.default_rng(5)
    pa, pb = 0.30, 0.22  # the model's rates: DP 0.08
    for k in (0, 1):
        covered = 0
        for _ in range(300):
            A, B = rng.integers(30, 120, 4), rng.integers(30, 120, 4)
            honest = np.stack([rng.binomial(A, pa), A, rng.binomial(B, pb), B], axis=1)
            liar = np.array([[0, 300, 300, 300]]) if k else honest[:0]
            v = np.concatenate([honest, liar])[None].astype(float)
            lo, hi = sampling_hull(v, k)
            covered += bool(lo[0] <= pa - pb <= hi[0])
        assert covered / 300 >= 0.95, (k, covered)


def test_fewer_falsified_answers_than_the_flip_bound_never_change_the_verdict():
    """``answer_flips``: ``F - 1`` flips, even the most effective ones (all in one group, all
    pushing the same way), leave every decided verdict as it is, with K = 0 and K = 1."""
    from fairprobe.collab.bounded import answer_flips
    from fairprobe.stats.finding import decide_array

    rng = np.random.default_rng(11)
    tau = 0.05
    checked = 0
    for _ in range(300):
        V, k = int(rng.integers(2, 5)), int(rng.integers(0, 2))
        A, B = rng.integers(40, 200, V), rng.integers(40, 200, V)
        t = np.stack([rng.binomial(A, rng.uniform(0.1, 0.9)), A,
                      rng.binomial(B, rng.uniform(0.1, 0.9)), B], axis=1)
        held = np.full((1, V), 3)
        _, lo, hi = bounded_intervals(t[None], held, n=10**6, rounds=3, max_liars=k)
        ver = decide_array(lo, hi, kind="difference", threshold=tau)
        F = answer_flips(t[None], held, lo, hi, ver, tau=tau, max_liars=k)[0]
        if not np.isfinite(F) or F < 1:
            continue
        f = int(F) - 1
        for j in range(V):  # flip f answers of source j, in every direction and group
            for col, sign in ((0, 1), (0, -1), (2, 1), (2, -1)):
                u = t.copy()
                room = (u[j, col + 1] - u[j, col]) if sign > 0 else u[j, col]
                u[j, col] += sign * min(f, int(room))
                _, lo2, hi2 = bounded_intervals(u[None], held, n=10**6, rounds=3, max_liars=k)
                assert decide_array(lo2, hi2, kind="difference", threshold=tau)[0] == ver[0]
        checked += 1
    assert checked > 100
