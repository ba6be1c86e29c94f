"""Local Misjudge Rate and the blind auditing protocol."""

from __future__ import annotations

import numpy as np
import pytest

from fairprobe.errors import DataError, InvalidParameterError
from fairprobe.radius import (
    BlindAuditProtocol,
    blind_audit,
    consistency_radius,
    local_misjudge_rate,
)
from fairprobe.radius.lmr import project_simplex


def _data(seed=0, n=300):
    rng = np.random.default_rng(seed)
    g = rng.integers(0, 2, n)
    return rng.random(n) + 0.1 * g, g


def test_project_simplex():
    x = np.array([0.5, 0.7, -0.3])
    q = project_simplex(x)
    assert q.sum() == pytest.approx(1.0) and (q >= 0).all()
    assert q == pytest.approx([0.4, 0.6, 0.0])


@pytest.mark.parametrize("noise", [0.01, 0.05, 0.1])
def test_exact_radius_has_zero_lmr(noise):
    m, g = _data()
    r = consistency_radius(m, g, 0.05)
    res = local_misjudge_rate(m, g, r, noise, perturbations=60, seed=1)
    assert res.misjudged == 0 and res.rate == 0.0
    assert res.flipped > 0  # the perturbations do reach the other side


def test_overestimated_radius_is_caught():
    m, g = _data()
    r = consistency_radius(m, g, 0.05)
    from dataclasses import replace

    inflated = replace(r, radius=r.radius * 3)
    res = local_misjudge_rate(m, g, inflated, 0.01, perturbations=60, seed=1)
    assert res.rate > 0.2


def test_lmr_same_seed_same_result_and_bad_input():
    m, g = _data()
    r = consistency_radius(m, g, 0.05, method="worst-group")
    a = local_misjudge_rate(m, g, r, 0.01, seed=4)
    b = local_misjudge_rate(m, g, r, 0.01, seed=4)
    assert a == b
    with pytest.raises(InvalidParameterError, match="noise"):
        local_misjudge_rate(m, g, r, 0.0)
    with pytest.raises(InvalidParameterError, match="same data"):
        local_misjudge_rate(m[:10], g[:10], r, 0.01)


def test_blind_protocol_verdicts():
    m, g = _data()
    sets = {"A": {"values": m, "groups": g}, "B": {"values": m[:150], "groups": g[:150]}}
    proto = BlindAuditProtocol(sets, 0.05)
    assert proto.requests() == ["A", "B"]
    rA = consistency_radius(m, g, 0.05).radius
    rB = consistency_radius(m[:150], g[:150], 0.05).radius
    honest = proto.verdict({"A": rA / 2, "B": rB / 2})
    assert honest.verdict == "certified" and set(honest.verdicts.values()) == {"certified"}
    big = proto.verdict({"A": 10.0, "B": 10.0})
    assert big.verdict == "not certified" and big.certified_assessment is None
    mixed = blind_audit(sets, 0.05, {"A": rA * 2, "B": rB / 2})
    assert mixed.verdicts == {"A": "not certified", "B": "certified"}
    assert mixed.to_dict()["audit_sets"]["A"]["verdict"] == "not certified"
    with pytest.raises(DataError, match="no reported shift"):
        proto.verdict({"A": 0.1})
    with pytest.raises(InvalidParameterError):
        proto.verdict({"A": -1.0, "B": 0.1})
