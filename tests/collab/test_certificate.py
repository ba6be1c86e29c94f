"""The verdict certificate: soundness by brute force on small instances, and its bookkeeping.

Guarantee tested: no budget-feasible fabrication by ``certified_k`` sources (added to the roster,
or replacing any ``certified_k`` of them) moves the pooled estimate across the fair band. The
brute force enumerates every integer fabrication ``(x, X, y, Y)``, ``X + Y <= budget``, of every
fabricating source and every choice of replaced sources.
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest

from fairprobe.collab.certificate import certify, global_certified_k, max_dp_bound
from fairprobe.errors import DataError


def _fabrications(budget: int) -> list[tuple[int, int, int, int]]:
    out = []
    for X in range(budget + 1):
        for Y in range(budget + 1 - X):
            for x in range(X + 1):
                for y in range(Y + 1):
                    out.append((x, X, y, Y))
    return out


def _dp(t) -> Fraction | None:
    if t[1] == 0 or t[3] == 0:
        return None
    return Fraction(t[0], t[1]) - Fraction(t[2], t[3])


def _flips(vecs: np.ndarray, k: int, budget: int, tau: Fraction, fair: bool) -> bool:
    """Can k fabricating sources (added, or replacing any k rows) cross the band?"""
    fabs = _fabrications(budget)
    V = len(vecs)
    # the best fabrication of k sources only matters through its sum; enumerate sums of k
    sums = {(0, 0, 0, 0)}
    for _ in range(k):
        sums = {tuple(s + f for s, f in zip(a, b, strict=True)) for a in sums for b in fabs}
    for r in range(0, min(k, V) + 1):
        for S in itertools.combinations(range(V), r):
            keep = [vecs[j] for j in range(V) if j not in S]
            base = tuple(int(sum(v[i] for v in keep)) for i in range(4))
            for f in sums:
                d = _dp(tuple(b + x for b, x in zip(base, f, strict=True)))
                if d is None:
                    continue
                if fair and abs(d) > tau:
                    return True
                if not fair and abs(d) <= tau:
                    return True
    return False


def _instance(rng: np.random.Generator, V: int, fair: bool = False) -> np.ndarray:
    lo, hi = (60, 150) if fair else (8, 40)
    A = rng.integers(lo, hi, V)
    B = rng.integers(lo, hi, V)
    qa, qb = rng.uniform(0, 1, 2)
    if fair:
        qb = qa
    return np.stack([rng.binomial(A, qa), A, rng.binomial(B, qb), B], axis=1)


_SEEDS = range(60)


def _case(seed: int):
    rng = np.random.default_rng(seed)
    vecs = _instance(rng, int(rng.integers(2, 5)), fair=seed % 3 == 0)
    budget = int(rng.integers(1, 5))
    tau = float(rng.choice([0.05, 0.1]))
    return vecs, budget, tau


@pytest.mark.parametrize("seed", _SEEDS)
def test_certificate_is_sound_by_brute_force(seed: int) -> None:
    vecs, budget, tau = _case(seed)
    cert = certify(vecs, budget, tau, max_k=2)
    k = cert.certified_k
    if k >= 1:
        assert not _flips(vecs, k, budget, Fraction(tau), cert.fair), (vecs, budget, tau, cert)


def test_soundness_instances_exercise_k_1_and_2_and_both_verdicts() -> None:
    got = [certify(*_case(s)[:2], _case(s)[2], max_k=2) for s in _SEEDS]
    ks = [c.certified_k for c in got]
    assert ks.count(1) >= 5 and ks.count(2) >= 5
    assert any(c.fair and c.certified_k >= 1 for c in got)
    assert any(not c.fair and c.certified_k >= 1 for c in got)


def test_certificate_is_not_vacuous() -> None:
    """On random instances the certificate is often >= 1, and often tight (k + 1 flips)."""
    rng = np.random.default_rng(7)
    pos = tight = 0
    for _ in range(30):
        vecs = _instance(rng, 3)
        cert = certify(vecs, 2, 0.05, max_k=2)
        if cert.certified_k >= 1:
            pos += 1
        if cert.certified_k < 2 and _flips(vecs, cert.certified_k + 1, 2, Fraction(1, 20), cert.fair):
            tight += 1
    assert pos >= 5 and tight >= 10


def test_bound_is_exact_without_removal_for_one_source() -> None:
    """k = 1 added with extreme labels: the bound is at least the true best split."""
    v = np.array([[10, 100, 40, 100], [5, 60, 30, 90]], dtype=float)
    M = 50
    best = max(
        (15 + y) / (160 + y) - 70 / (190 + M - y) for y in range(M + 1)
    )
    assert float(max_dp_bound(v, 1, M, grid=512)) >= best - 1e-12
    assert float(max_dp_bound(v, 0, M)) == pytest.approx(15 / 160 - 70 / 190)


def test_certificate_grows_with_margin_and_shrinks_with_budget() -> None:
    big = np.array([[100, 1000, 400, 1000]] * 10, dtype=float)  # DP = -0.3, 10 sources
    c1 = certify(big, 300, 0.05)
    c2 = certify(big, 3000, 0.05)
    assert c1.certified_k > c2.certified_k >= 0
    assert c1.flip_mass is not None and c1.flip_mass > 0
    d = c1.to_dict()
    assert d["verdict"] == "unfair" and "holds against up to" in d["statement"]


def test_certificate_rejects_bad_input() -> None:
    with pytest.raises(DataError):
        certify(np.zeros((3, 4)), 10)
    with pytest.raises(DataError):
        certify(np.ones((3, 3)), 10)
    with pytest.raises(DataError, match="too large"):
        certify(np.full((2, 4), 1e308), 10)  # overflows to inf, not "no statistics"


def test_global_certificate_counts_nodes() -> None:
    est = np.full(20, -0.2)
    ks = np.full(20, 3)
    # 20 honest + 2 attackers reporting 0: the median stays unfair while certified nodes hold
    g = global_certified_k(est, ks, 2, 0.05)
    assert g == 3
    ks2 = np.array([0] * 12 + [5] * 8)
    assert global_certified_k(est, ks2, 2, 0.05) == 0


def test_protocol_core_verdict_carries_its_certificate() -> None:
    """A node asks its core for the verdict of a method with its certificate (the nodes' API)."""
    from fairprobe.collab.protocol import AuditorCore, Entry
    from fairprobe.stats.counts import CountsVector

    roster = [f"a{i}" for i in range(4)]
    core = AuditorCore("a0", roster, n=100, tau=0.05)
    rng = np.random.default_rng(0)
    tot = {a: np.zeros(4, dtype=np.int64) for a in roster}
    for t in range(1, 9):
        core.start_round()
        entries = []
        for a in roster:
            dA = int(rng.binomial(100, 0.5))
            inc = np.array([rng.binomial(dA, 0.1), dA, rng.binomial(100 - dA, 0.5), 100 - dA])
            tot[a] += inc
            if a == "a0":
                core.record_answers(CountsVector.from_array(inc))
            else:
                entries.append(Entry(a, t, CountsVector.from_array(tot[a])))
        core.merge(entries)
        core.end_round()
    for method in ("auditopus", "robust", "none"):
        v = core.verdict(method, certify=True)
        d = v.to_dict()
        assert d["method"] == method and d["verdict"] == "unfair"
        assert d["certified_k"] == v.certified_k >= 0
    ref = certify(core.W, 100 * 8, 0.05)
    assert core.certificate("auditopus").certified_k == ref.certified_k
    assert core.certificate("robust").certified_k <= ref.certified_k
    with pytest.raises(Exception, match="method"):
        core.certificate("median")
