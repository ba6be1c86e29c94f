import math

import numpy as np
import pytest

from fairprobe.collab.score import Z_MAX, kt_estimates, suspicion_scores, weights_from_scores
from fairprobe.errors import DataError, InvalidParameterError


def test_kt_estimates_pinned() -> None:
    pi, qa, qb = kt_estimates([[3, 10, 1, 6]])
    assert pi[0] == pytest.approx(10.5 / 17)
    assert qa[0] == pytest.approx(3.5 / 11)
    assert qb[0] == pytest.approx(1.5 / 7)


def test_three_z_scores_by_hand() -> None:
    prev = np.array([40, 100, 30, 100])
    delta = np.array([12, 20, 5, 10])
    res = suspicion_scores(prev, delta)
    pi, qa, qb = 100.5 / 201, 40.5 / 101, 30.5 / 101
    z1 = (20 - 30 * pi) / math.sqrt(30 * pi * (1 - pi))
    z2 = (12 - 20 * qa) / math.sqrt(20 * qa * (1 - qa))
    z3 = (5 - 10 * qb) / math.sqrt(10 * qb * (1 - qb))
    assert res.z[0] == pytest.approx([z1, z2, z3])
    s = max(abs(z1), abs(z2), abs(z3))
    assert res.score[0] == pytest.approx(s)
    assert res.weight[0] == pytest.approx((1 + s) ** -2)


def test_paper_example_attacker_after_neutral_report() -> None:
    # Section V-B: after the neutral first report, claiming every A query positive gives
    # z2 = sqrt(dA (1 - q_A) / q_A) ~ sqrt(dA) ~ 12 for 150 group-A queries: capped at 8.
    prev = np.array([75, 150, 75, 150])
    delta = np.array([150, 150, 0, 150])
    res = suspicion_scores(prev, delta)
    qa = 75.5 / 151
    assert res.z[0, 1] == pytest.approx(math.sqrt(150 * (1 - qa) / qa))
    assert res.z[0, 1] == pytest.approx(12.2, abs=0.1)
    assert res.score[0] == Z_MAX
    assert res.weight[0] == pytest.approx(1 / 81)


def test_undefined_z_scores_are_skipped() -> None:
    # no group-A query in the increment: z2 undefined; no query at all: S = 0, weight 1
    res = suspicion_scores([[5, 10, 5, 10], [5, 10, 5, 10]], [[0, 0, 3, 6], [0, 0, 0, 0]])
    assert math.isnan(res.z[0, 1]) and not math.isnan(res.z[0, 2])
    assert np.isnan(res.z[1]).all()
    assert res.score[1] == 0.0 and res.weight[1] == 1.0


def test_first_increment_has_weight_one() -> None:
    res = suspicion_scores([[0, 0, 0, 0]], [[300, 300, 0, 0]])
    assert res.first[0] and res.weight[0] == 1.0 and res.score[0] == 0.0


def test_cap_and_weights() -> None:
    res = suspicion_scores([[1, 1000, 1, 1000]], [[300, 300, 0, 0]], z_max=3.0)
    assert res.score[0] == 3.0
    assert res.weight[0] == 1 / 16
    assert weights_from_scores([0.0, 1.0])[1] == 0.25


def test_honest_increment_scores_low() -> None:
    rng = np.random.default_rng(3)
    prev = np.array([3000, 10000, 2000, 5000])
    a_ = rng.binomial(300, 10000 / 15000, 2000)
    da = rng.binomial(a_, 0.3)
    db = rng.binomial(300 - a_, 0.4)
    res = suspicion_scores(np.tile(prev, (2000, 1)), np.stack([da, a_, db, 300 - a_], axis=1))
    assert np.median(res.score) < 1.5  # honest increments follow the binomial model


def test_bad_input() -> None:
    with pytest.raises(DataError):
        suspicion_scores([[1, 2, 3]], [[1, 2, 3]])
    with pytest.raises(DataError):
        suspicion_scores([[1, 2, 3, 4]], [[1, 2, 3, 4], [1, 2, 3, 4]])
    with pytest.raises(InvalidParameterError):
        suspicion_scores([[1, 2, 3, 4]], [[1, 2, 3, 4]], z_max=0)
