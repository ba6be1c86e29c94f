"""A family holds per-group arrays, not its k(k-1)/2 pairs: the worst pair, the verdict's
interval, the listed pairs and the pairs against a reference equal, bit for bit, what the
materialised pairs give (every pair's interval formed from the same per-group intervals, both
orientations concatenated, ``nanargmax``/``nanmax``, a stable sort by severity).

The reference here forms every pair with the library's interval functions and nothing of
:mod:`fairprobe.stats.simultaneous`; the inputs are random with ties (rates of 0, 1/2 and 1,
groups of 1 to 6 and of 20 to 300), empty rests, groups without an interval, both kinds and both methods.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd
import pytest

from fairprobe import AuditFrame
from fairprobe.stats.exact import clopper_pearson_interval
from fairprobe.stats.intervals import newcombe_interval, score_ratio_interval
from fairprobe.stats.simultaneous import (
    FamilyIntervals,
    extreme_pairs,
    family_intervals,
    mean_family_intervals,
    worst_pair,
)
from fairprobe.stats.unconditional import (
    unconditional_difference_interval,
    unconditional_ratio_interval,
)


def _ratio(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(y > 0, x / np.where(y > 0, y, 1.0), np.where(x > 0, np.inf, np.nan))


def _reference(k: np.ndarray, n: np.ndarray, kind: str, method: str, share: float,
               thin: np.ndarray | None) -> tuple[np.ndarray, ...]:
    """Every pair ``i < j`` (row-major): ``i1, i2, est, low, high``, materialised."""
    kk, nn = k.astype(float), n.astype(float)
    g = kk.size
    i1, i2 = np.triu_indices(g, 1)
    p = kk / nn
    est = p[i1] - p[i2] if kind == "difference" else _ratio(p[i1], p[i2])
    alpha = 0.05 * share
    if method == "bonferroni":
        fn = newcombe_interval if kind == "difference" else score_ratio_interval
        lo, hi = fn(kk[i1], nn[i1], kk[i2], nn[i2], 1 - alpha / i1.size)
    elif g == 2:
        fn2 = unconditional_difference_interval if kind == "difference" \
            else unconditional_ratio_interval
        lo, hi = fn2(kk[:1], nn[:1], kk[1:], nn[1:], 1 - alpha)
    else:
        gl, gh = clopper_pearson_interval(kk, nn, (1 - alpha) ** (1 / g))
        if kind == "difference":
            lo, hi = gl[i1] - gh[i2], gh[i1] - gl[i2]
        else:
            lo = np.nan_to_num(_ratio(gl[i1], gh[i2]), nan=0.0)
            hi = np.where(gl[i2] > 0, _ratio(gh[i1], gl[i2]), np.inf)
    if thin is not None:
        pt = thin[i1] | thin[i2]
        full = (-1.0, 1.0) if kind == "difference" else (0.0, np.inf)
        lo, hi = np.where(pt, full[0], lo), np.where(pt, full[1], hi)
    return i1, i2, est, np.asarray(lo, float), np.asarray(hi, float)


def _ordered(kind: str, est: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, ...]:
    if kind == "difference":
        return (np.concatenate([est, -est]), np.concatenate([lo, -hi]),
                np.concatenate([hi, -lo]))
    with np.errstate(divide="ignore"):
        return (np.concatenate([est, 1 / est]), np.concatenate([lo, 1 / hi]),
                np.concatenate([hi, 1 / lo]))


def _ref_worst(kind: str, i1: np.ndarray, i2: np.ndarray, est: np.ndarray, lo: np.ndarray,
               hi: np.ndarray) -> dict[str, Any]:
    pairs = list(zip(i1.tolist(), i2.tolist(), strict=True))
    pairs += [(b, a) for a, b in pairs]
    e, olo, ohi = _ordered(kind, est, lo, hi)
    if kind == "difference":
        j = int(np.nanargmax(e))
        return {"estimate": float(e[j]), "pair": pairs[j],
                "low": max(0.0, float(np.nanmax(olo))), "high": float(np.nanmax(ohi))}
    j = int(np.argmin(np.where(np.isnan(e), np.inf, e)))
    return {"estimate": float(e[j]), "pair": pairs[j], "low": float(np.nanmin(olo)),
            "high": min(1.0, float(np.nanmin(ohi)))}


def _ref_listing(kind: str, refs: list[tuple[np.ndarray, ...]], cap: int) -> list[tuple]:
    """All pairs when they fit, else the cap most extreme, ties in family then pair order."""
    rows = [(r, a, b) for r, x in enumerate(refs)
            for a, b in zip(x[0].tolist(), x[1].tolist(), strict=True)]
    if len(rows) <= cap:
        return rows
    est = np.concatenate([x[2] for x in refs])
    with np.errstate(divide="ignore", invalid="ignore"):
        sev = np.abs(est) if kind == "difference" else -np.minimum(est, 1 / est)
    sev = np.where(np.isnan(sev), -np.inf, sev)
    return [rows[j] for j in np.argsort(-sev, kind="stable")[:cap]]


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or a == b
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[x], b[x]) for x in a)
    return bool(a == b)


def _draw(rng: np.random.Generator, g: int) -> tuple[np.ndarray, np.ndarray]:
    n = rng.integers(1, 7, g) if rng.random() < 0.6 else rng.integers(20, 300, g)
    style = rng.integers(3)
    rate = (rng.choice([0.0, 0.5, 1.0], g) if style == 0 else
            rng.choice([0.0, 1.0], g) if style == 1 else rng.uniform(0.05, 1, g))
    return rng.binomial(n, rate), n


@pytest.mark.parametrize("kind", ["difference", "ratio"])
@pytest.mark.parametrize("method", ["exact", "bonferroni"])
def test_lazy_family_equals_the_materialised_pairs(kind: str, method: str) -> None:
    rng = np.random.default_rng(11 if kind == "difference" else 12)
    for trial in range(40):
        g = int(rng.choice([2, 3, 4, 7, 12, 25]))
        k, n = _draw(rng, g)
        rest_n = np.where(rng.random(g) < 0.3, 0, n.sum() - n)  # some rests empty
        rest_k = np.minimum(k.sum() - k, rest_n)
        share = [1.0, 0.5][trial % 2]
        fam = family_intervals(k, n, rest_k, rest_n, kind=kind,  # type: ignore[arg-type]
                               method=method, share=share)
        thin = rng.random(g) < 0.2 if trial % 3 == 0 else None
        if thin is not None:
            fam = replace(fam, thin=thin)
        ref = _reference(k, n, kind, method, share, thin)
        for got, want in zip((fam.i1, fam.i2, fam.est, fam.low, fam.high), ref, strict=True):
            np.testing.assert_array_equal(got, want)
        assert np.isnan(fam.rest_low).tolist() == (rest_n == 0).tolist()
        w = worst_pair(fam)
        assert _same(w, _ref_worst(kind, *ref)), (trial, w, _ref_worst(kind, *ref))
        # pairs against a reference group, both orientations
        r0 = int(rng.integers(g))
        others = np.array([i for i in range(g) if i != r0])
        e, lo, hi = fam.ordered_for(others, np.full(others.size, r0))
        pairs = list(zip(ref[0].tolist(), ref[1].tolist(), strict=True))
        oe, olo, ohi = _ordered(kind, *ref[2:])
        at = [pairs.index((o, r0)) if o < r0 else len(pairs) + pairs.index((r0, o))
              for o in others.tolist()]
        for got, want in ((e, oe[at]), (lo, olo[at]), (hi, ohi[at])):
            np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("kind", ["difference", "ratio"])
def test_listing_equals_a_stable_sort_of_every_pair(kind: str) -> None:
    """One family (DP) and two (EO's TPR and FPR families): the listed pairs are the cap most
    extreme of all, most extreme first, ties in family order and then pair order; heavy ties
    (rates of 0 and 1 only) and caps of 1, 7 and 100."""
    rng = np.random.default_rng(21 if kind == "difference" else 22)
    for trial in range(30):
        fams: list[FamilyIntervals] = []
        refs = []
        for _ in range(1 + trial % 2):
            g = int(rng.choice([3, 9, 30, 80]))
            k, n = _draw(rng, g)
            fams.append(family_intervals(k, n, k.sum() - k, n.sum() - n,
                                         kind=kind,  # type: ignore[arg-type]
                                         method="exact", share=1 / (1 + trial % 2)))
            refs.append(_reference(k, n, kind, "exact", 1 / (1 + trial % 2), None))
        for cap in (1, 7, 100):
            assert extreme_pairs(fams, cap) == _ref_listing(kind, refs, cap), (trial, cap)


def test_mean_family_and_large_blocks_equal_the_materialised_pairs(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Welch families (mean scores) and a scan over several blocks of rows."""
    import fairprobe.stats.simultaneous as sim

    monkeypatch.setattr(sim, "PAIR_BLOCK", 50)
    rng = np.random.default_rng(5)
    for _ in range(10):
        g = int(rng.integers(3, 40))
        mu = np.round(rng.uniform(0, 1, g), 1)  # ties
        v = rng.uniform(0.01, 0.1, g)
        nn = rng.integers(2, 30, g).astype(float)
        fam = mean_family_intervals(mu, v, nn, mu[::-1], v[::-1], nn.sum() - nn)
        pairs, e, lo, hi = fam.ordered()
        j = int(np.nanargmax(e))
        assert worst_pair(fam) == {"estimate": float(e[j]), "pair": pairs[j],
                                   "low": max(0.0, float(np.nanmax(lo))),
                                   "high": float(np.nanmax(hi))}
        for method in ("bonferroni", "exact"):
            k, n = _draw(rng, g)
            f2 = family_intervals(k, n, k.sum() - k, n.sum() - n, method=method)
            assert _same(worst_pair(f2), _ref_worst("difference",
                                                    *_reference(k, n, "difference", method,
                                                                1.0, None)))
        ref = [(fam.i1, fam.i2, fam.est)]
        assert extreme_pairs([fam], 9) == _ref_listing("difference", ref, 9)


def test_summary_lists_the_reference_pairs_and_reads_them_from_the_family() -> None:
    """Through ``AuditFrame``: equalized odds over 40 groups of 3 (ties everywhere), the JSON's
    pairs are the reference listing of the two families with each pair's interval."""
    rng = np.random.default_rng(8)
    g, per = 40, 3
    df = pd.DataFrame({"g": np.repeat([f"g{i:02d}" for i in range(g)], per),
                       "p": rng.random(g * per) < 0.5, "y": np.tile([1, 1, 0], g)})
    frame = AuditFrame(y_pred=df["p"], y_true=df["y"], sensitive_features=df["g"],
                       min_group_size=1, max_listed_pairs=30)
    s = frame.summary("eodds")
    refs = []
    for r in s.rates:
        k, n = frame._counts[r]
        refs.append(_reference(np.asarray(k), np.asarray(n), "difference", "exact", 0.5, None))
    want = _ref_listing("difference", refs, 30)
    got = [(s.rates.index(p["rate"]), int(p["groups"][0][1:]), int(p["groups"][1][1:]))
           for p in s.pairs]
    assert got == want and s.pairs_total == 2 * g * (g - 1) // 2
    for p, (r, a, b) in zip(s.pairs, want, strict=True):
        j = list(zip(refs[r][0].tolist(), refs[r][1].tolist(), strict=True)).index((a, b))
        assert p["interval"]["low"] == refs[r][3][j] and p["interval"]["high"] == refs[r][4][j]


@pytest.mark.parametrize("kind", ["difference", "ratio"])
def test_exact_worst_pair_over_both_orientations_of_large_groups(kind: str) -> None:
    """Large groups at rates away from 0: every box has a positive lower end, so the extreme
    bound may sit in either orientation of a pair (the prefix extrema of both must be right)."""
    rng = np.random.default_rng(31)
    for _ in range(150):
        g = int(rng.integers(3, 12))
        n = rng.integers(20, 300, g)
        k = rng.binomial(n, rng.uniform(0.05, 1, g))
        fam = family_intervals(k, n, k.sum() - k, n.sum() - n,
                               kind=kind, method="exact")  # type: ignore[arg-type]
        assert _same(worst_pair(fam),
                     _ref_worst(kind, *_reference(k, n, kind, "exact", 1.0, None)))
