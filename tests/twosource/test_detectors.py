"""Detectors: one shared suite over every registered detector, plus exact computations."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
from scipy import stats as sps

from fairprobe.stats.counts import CountsVector
from fairprobe.twosource.detectors import (
    DETECTORS,
    DetectorOutcome,
    PairedEvidence,
    make_detector,
    poisson_binomial_sf,
)


def _evidence(flip: float, n: int = 400, seed: int = 0) -> PairedEvidence:
    """Pairs from a simulated honest-or-fairwashed platform with the name rule's structure."""
    rng = np.random.default_rng(seed)
    female = rng.random(n) < 0.35
    true = np.where(female, "Female", "Male").astype(object)
    p_true = rng.choice([1.0, 0.5, 0.0], size=n, p=[0.7, 0.2, 0.1])
    hit = rng.random(n) < p_true
    proxy = np.where(hit, true, np.where(female, "Male", "Female")).astype(object)
    score = rng.random(n) - 0.25 * female
    y_a = (score > 0.5).astype(float)
    b_hit = rng.random(n) < p_true  # the platform's own draw on B
    y_b = np.where(b_hit, y_a, ((score + 0.25 * np.where(female, 1, -1)) > 0.5).astype(float))
    flips = (rng.random(n) < flip) & female & (y_a == 0)
    y_a_seen = np.where(flips, 1.0, y_a)
    ca = CountsVector(int(y_a_seen[female].sum()), int(female.sum()),
                      int(y_a_seen[~female].sum()), int((~female).sum()))  # fmt: skip
    pf = proxy == "Female"
    cb = CountsVector(int(y_b[pf].sum()), int(pf.sum()), int(y_b[~pf].sum()), int((~pf).sum()))
    return PairedEvidence(true, y_a_seen, proxy, y_b, ca, cb, float(p_true.mean()), n, p_true)


@pytest.fixture(params=sorted(DETECTORS))
def name(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def test_outcome_shape_and_json(name: str) -> None:
    out = make_detector(name).decide(_evidence(0.0), 0.05)
    assert isinstance(out, DetectorOutcome) and out.detector == name
    assert json.dumps(out.to_dict())


def test_heavy_fairwashing_is_detected(name: str) -> None:
    assert make_detector(name).decide(_evidence(0.9, n=800), 0.05).detected


def test_false_alarms_stay_near_alpha(name: str) -> None:
    hits = [make_detector(name).decide(_evidence(0.0, seed=s), 0.05).detected
            for s in range(60)]  # fmt: skip
    assert np.mean(hits) <= 0.15  # 60 honest audits: at most a few false alarms


def test_poisson_binomial_sf_exact() -> None:
    rates = [0.1, 0.5, 0.0, 1.0, 0.3]
    for k in range(7):
        brute = sum(
            np.prod([r if x else 1 - r for r, x in zip(rates, xs, strict=True)])
            for xs in itertools.product([0, 1], repeat=len(rates))
            if sum(xs) >= k
        )
        assert poisson_binomial_sf(k, rates) == pytest.approx(brute, abs=1e-12)
    # equal rates: the binomial
    assert poisson_binomial_sf(7, [0.2] * 30) == pytest.approx(sps.binom.sf(6, 30, 0.2))


def test_conditional_detector_ignores_misses() -> None:
    ev = _evidence(0.0)
    out = make_detector("conditional").decide(ev, 0.05)
    hit = ev.check_group_proxy == ev.check_group_a
    p_true = np.asarray(ev.check_p_true)
    assert out.details["n_hits"] == int((hit & (p_true >= 0.9)).sum())
    loose = make_detector("conditional", min_p=0.0).decide(ev, 0.05)
    assert loose.details["n_hits"] == int(hit.sum())
    # deterministic right pairs can never disagree honestly
    p = np.asarray(ev.check_p_true)
    det_right = hit & (p == 1.0)
    assert not (det_right & (ev.check_decision_a != ev.check_decision_proxy)).any()
