"""The stratified sample hull of a partial audit: coverage, census strata, liars, sensitivity."""

from __future__ import annotations

import math
from itertools import combinations

import numpy as np

from fairprobe.collab.bounded import stratified_estimate, stratified_hull, stratified_sensitivity
from fairprobe.collab.simulate import SimConfig, simulate


def _strata(rng: np.random.Generator, V: int) -> np.ndarray:
    """(V, 4) population cells per stratum: heterogeneous sizes and rates."""
    sizes = rng.integers(50, 2_000, size=(V, 2))
    rates = rng.uniform(0.02, 0.6, size=(V, 2))
    pos = rng.binomial(sizes, rates)
    return np.stack([pos[:, 0], sizes[:, 0], pos[:, 1], sizes[:, 1]], axis=1)


def _sample(rng: np.random.Generator, cells: np.ndarray, m: np.ndarray) -> np.ndarray:
    """Each stratum draws ``m_j`` of its records uniformly without replacement."""
    out = np.zeros_like(cells)
    for j, (a, A, b, B) in enumerate(cells):
        lab = np.concatenate([np.ones(a), np.zeros(A - a), 2 + np.ones(b), 2 + np.zeros(B - b)])
        d = rng.permutation(lab)[: min(int(m[j]), lab.size)]
        out[j] = [(d == 1).sum(), (d <= 1).sum(), (d == 3).sum(), (d >= 2).sum()]
    return out


def _dp(c: np.ndarray) -> float:
    t = c.sum(axis=0)
    return float(t[0] / t[1] - t[2] / t[3])


def _brute(v: np.ndarray, M: np.ndarray, k: int, alpha: float) -> tuple[float, float]:
    """The same hull, one removal and one stratum at a time (plain Python)."""
    V = len(v)
    lo, hi = math.inf, -math.inf
    for j in range(k + 1):
        for S in combinations(range(V), j):
            rest = [i for i in range(V) if i not in S]
            box = []
            for g in (0, 1):
                T = var = ex = free = x = mq = Mg = 0.0
                for i in rest:
                    pos, cnt, m = v[i][2 * g], v[i][2 * g + 1], max(M[i][g], v[i][2 * g + 1])
                    x, mq, Mg = x + pos, mq + cnt, Mg + m
                    if cnt == 0:
                        free += m
                    elif cnt >= m:
                        ex += pos
                    else:
                        T += m * pos / cnt
                        var += m * m * (1 - (cnt - 1) / m) / cnt
                t = math.sqrt(var * math.log(4 / alpha) / 2)
                box.append((max(ex + T - t, x) / Mg, min(ex + T + t + free, x + Mg - mq) / Mg))
            lo, hi = min(lo, box[0][0] - box[1][1]), max(hi, box[0][1] - box[1][0])
    return lo, hi


def test_matches_a_plain_computation_of_the_formula() -> None:
    rng = np.random.default_rng(3)
    for _ in range(20):
        V = int(rng.integers(3, 6))
        cells = _strata(rng, V)
        m = rng.integers(0, 1_500, size=V)
        m[0] = cells[0, 1] + cells[0, 3]  # a census stratum
        v = _sample(rng, cells, m)
        M = cells[:, [1, 3]]
        for k in (0, 1, 2):
            lo, hi = stratified_hull(v[None], M[None], k, 0.05)
            blo, bhi = _brute(v, M, k, 0.05)
            assert math.isclose(lo[0], max(blo, -1.0), abs_tol=1e-9)
            assert math.isclose(hi[0], min(bhi, 1.0), abs_tol=1e-9)


def test_covers_the_population_dp_at_its_level_and_a_census_is_exact() -> None:
    rng = np.random.default_rng(7)
    cover = 0
    trials = 300
    for _ in range(trials):
        cells = _strata(rng, 8)
        v = _sample(rng, cells, rng.integers(20, 600, size=8))
        lo, hi = stratified_hull(v[None], cells[None][..., [1, 3]], 0, 0.05)
        cover += bool(lo[0] <= _dp(cells) <= hi[0])
    assert cover >= 0.95 * trials
    cells = _strata(rng, 5)
    lo, hi = stratified_hull(cells[None], cells[None][..., [1, 3]], 0, 0.05)
    assert abs(lo[0] - _dp(cells)) < 1e-9 and abs(hi[0] - _dp(cells)) < 1e-9


def test_covers_whatever_one_liar_reports_and_declares() -> None:
    rng = np.random.default_rng(11)
    for _ in range(100):
        cells = _strata(rng, 6)
        v = _sample(rng, cells, rng.integers(50, 800, size=6))
        M = cells[:, [1, 3]].astype(float)
        liar = np.array([[int(rng.integers(0, 5_000))] * 2 + [0, int(rng.integers(1, 5_000))]])
        liar[0, 1] = max(liar[0, 1], liar[0, 0])
        vl = np.concatenate([v, liar])
        Ml = np.concatenate([M, rng.integers(0, 10_000, size=(1, 2)).astype(float)])
        lo, hi = stratified_hull(vl[None], Ml[None], 1, 0.05)
        lo0, hi0 = stratified_hull(v[None], M[None], 0, 0.05)
        assert lo[0] <= lo0[0] + 1e-12 and hi0[0] <= hi[0] + 1e-12  # the honest box inside


def test_flipped_answers_move_the_endpoints_by_at_most_their_sensitivity() -> None:
    rng = np.random.default_rng(5)
    for _ in range(50):
        cells = _strata(rng, 6)
        v = _sample(rng, cells, rng.integers(100, 900, size=6))
        M = cells[:, [1, 3]]
        per = stratified_sensitivity(v[None], M[None], 1)[0]
        lo, hi = stratified_hull(v[None], M[None], 1, 0.05)
        w = v.copy()
        f = 0
        for j in rng.choice(6, size=3):
            g = int(rng.integers(0, 2))
            d = int(min(w[j, 2 * g + 1] - w[j, 2 * g], rng.integers(0, 20)))
            w[j, 2 * g] += d
            f += d
        lo2, hi2 = stratified_hull(w[None], M[None], 1, 0.05)
        assert abs(lo2[0] - lo[0]) <= f / per + 1e-9 and abs(hi2[0] - hi[0]) <= f / per + 1e-9


def test_a_partial_simulated_audit_is_judged_against_the_population() -> None:
    r = simulate(SimConfig(case="civil-near-fair", seed=1, max_rounds=3))
    f = r.findings["bounded"]
    assert r.verdicts["bounded"] != "fair" and r.bounded["census"] is False
    assert f["interval"]["construction"].endswith("stratified-sample")
    lo, hi = r.bounded["interval"]["low"], r.bounded["interval"]["high"]
    assert lo <= r.true_dp <= hi
    r = simulate(SimConfig(case="bios-moderate", seed=1, max_rounds=3))
    assert r.verdicts["bounded"] == "unfair"
    r = simulate(SimConfig(case="bios-moderate", seed=1, max_rounds=3, partial="worst-case"))
    assert r.verdicts["bounded"] == "undetermined" and r.bounded["census"] is False


def test_a_partial_audits_estimate_is_of_the_population_its_interval_is_about() -> None:
    # the pooled DP of the queried records weighs each query set by how much it queried; the
    # stratified estimate weighs it by its size, as the interval does
    for case in ("civil-near-fair", "bios-moderate"):
        for seed in range(3):
            r = simulate(SimConfig(case=case, seed=seed, max_rounds=3))
            est = r.estimates["bounded"]
            lo, hi = r.bounded["interval"]["low"], r.bounded["interval"]["high"]
            assert lo <= est <= hi, (case, seed, est, lo, hi)
            assert abs(est - r.true_dp) < 0.03
    v = np.array([[[3, 10, 1, 10], [5, 5, 0, 20]]], dtype=float)
    sizes = np.array([[[100, 100], [5, 200]]], dtype=float)
    # group A: (100 * 3/10 + 5 * 5/5) / 105, group B: (100 * 1/10 + 200 * 0/20) / 300
    assert stratified_estimate(v, sizes)[0] == (35 / 105) - (10 / 300)
