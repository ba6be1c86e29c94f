"""Shared suite over every registered radius method, plus CoRe's surrogate weights."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fairprobe.radius import METHODS, consistency_radius
from fairprobe.radius._data import prepare
from fairprobe.radius.core import surrogate_weights
from fairprobe.radius.divergences import get_divergence

consistency_radius([0.0, 1.0], [0, 1], 0.5)  # populate the registry
ALL = sorted(METHODS)


def _data(seed=0, n=120):
    rng = np.random.default_rng(seed)
    g = rng.integers(0, 2, n)
    m = np.round(rng.random(n) + 0.15 * g, 2)
    return m, g


def test_registry_holds_the_four_methods():
    assert set(ALL) == {"exact", "core", "greedy", "worst-group"}


@pytest.mark.parametrize("method", ALL)
@pytest.mark.parametrize("eps", [0.05, 0.25])
def test_every_method_bounds_exact_from_above_and_flips(method, eps):
    m, g = _data()
    ex = consistency_radius(m, g, eps)
    r = consistency_radius(m, g, eps, method=method)
    assert r.method == method and r.fair == ex.fair and r.phi == pytest.approx(ex.phi)
    if r.infinite:
        assert r.h is None and r.to_dict()["radius"] is None
        return
    assert r.radius >= ex.radius - 1e-9
    p = np.full(m.size, 1 / m.size)
    assert get_divergence("kl").value(p, r.h) == pytest.approx(r.radius, rel=1e-9, abs=1e-12)
    d = prepare(m, g)
    assert abs(abs(d.phi(r.h)) - eps) < 1e-4  # on (or at 1e-5 of) the flip boundary
    assert set(r.to_dict()) >= {"radius", "phi", "fair", "phi_shifted", "pinsker_bound"}


@pytest.mark.parametrize("method", ["greedy", "worst-group"])
def test_heuristics_are_deterministic(method):
    m, g = _data(3)
    a = consistency_radius(m, g, 0.1, method=method)
    b = consistency_radius(m, g, 0.1, method=method)
    assert a.radius == b.radius


def test_surrogate_weights_distance_to_other_range():
    d = prepare([0.0, 0.5, 1.0, 0.4, 0.6], [0, 0, 0, 1, 1])
    w = surrogate_weights(d, delta0=0.0)
    by = dict(zip(zip(d.atom_values, d.atom_groups, strict=True), w, strict=True))
    assert by[(0.0, 0)] == pytest.approx(0.4)  # distance from 0 to [0.4, 0.6]
    assert by[(1.0, 0)] == pytest.approx(0.4)
    assert by[(0.5, 0)] == 0.0 and by[(0.4, 1)] == 0.0


def test_core_on_trinomial_close_to_exact():
    # the paper's own set-up: CoRe is meant to be accurate at small margins
    p = np.array([0.3, 0.3, 0.4])
    m = np.array([0.9, 0.2, 0.5])
    ex = consistency_radius(m, [0, 0, 1], 0.1, weights=p)
    co = consistency_radius(m, [0, 0, 1], 0.1, weights=p, method="core")
    assert math.isfinite(co.radius) and co.radius >= ex.radius - 1e-9


def test_worst_group_uses_given_subgroups():
    m, g = _data(5)
    sub = (np.arange(m.size) % 3).astype(int)
    r = consistency_radius(m, g, 0.05, method="worst-group", subgroups=sub)
    assert r.reweighting.get("subgroup") in (0, 1, 2) or r.infinite


def test_huge_weights_are_not_reported_as_zero_total_weight() -> None:
    """Weights near the float maximum sum to inf; the radius must equal the unit-weight one."""
    from fairprobe.radius import consistency_radius

    values, groups = [0.85, 0.17, 0.33, 0.92, 0.4, 0.6], [0, 0, 0, 1, 1, 1]
    unit = consistency_radius(values, groups, 0.05)
    huge = consistency_radius(values, groups, 0.05, weights=[1e308] * 6)
    assert huge.radius == pytest.approx(unit.radius, rel=1e-12)
