"""The shared allocation design: Neyman's weights, the adaptive levels, grid and open groups."""

from __future__ import annotations

import math

import numpy as np

from fairprobe.stats import allocation as design


def test_adaptive_levels_spend_alpha_over_the_looks() -> None:
    fam, per = design.adaptive_levels(0.95, 3, 5)
    beta = (1 - 0.95 ** (1 / 3)) / 5
    assert per == 1 - beta and math.isclose(fam, (1 - beta) ** 3)
    # the union bound: every group's 5 looks hold at once, the groups independent
    assert math.isclose((1 - 5 * beta) ** 3, 0.95)
    assert design.adaptive_levels(0.95, 2, 5) == (0.99, 0.99)


def test_grid_is_fixed_and_ends_at_the_share() -> None:
    np.testing.assert_array_equal(design.adaptive_grid([10, 7], 5),
                                  [[2, 2], [4, 3], [6, 5], [8, 6], [10, 7]])


def test_open_groups_by_hand() -> None:
    # b and c are close and well measured; a is far from both: the pairs with a are open
    k = np.array([100, 500, 505])
    n = np.array([1000, 1000, 1000])
    o = design.open_groups(k, n, kind="difference", tolerance=0.1, group_level=0.99)
    assert o.tolist() == [True, True, True]
    o = design.open_groups(k[1:], n[1:], kind="difference", tolerance=0.1, group_level=0.99)
    assert o.tolist() == [False, False]
    # a group without answers is open
    assert design.open_groups([5, 0], [10, 0], kind="ratio", tolerance=0.8,
                              group_level=0.99).tolist() == [True, True]


def test_simulated_adaptive_audits_keep_coverage_and_the_error_rate() -> None:
    # the gap exactly at the tolerance (fair by the rule): unfair is the wrong verdict
    rates = np.array([0.5, 0.5, 0.6])
    sim = design.simulate_adaptive(rates, [400, 400, 400], reps=4000,
                                   rng=np.random.default_rng(0), kind="difference",
                                   tolerance=0.1)
    covers = (sim["low"] <= 0.1) & (0.1 <= sim["high"])
    se = math.sqrt(0.05 * 0.95 / covers.size)
    assert covers.mean() >= 0.95 - 2 * se
    assert (sim["verdict"] == "unfair").mean() <= 0.05 + 2 * se
    # far from the tolerance it stops early
    far = design.simulate_adaptive(np.array([0.2, 0.5, 0.8]), [400, 400, 400], reps=500,
                                   rng=np.random.default_rng(1), kind="difference",
                                   tolerance=0.1)
    assert (far["verdict"] == "unfair").all() and far["spent"].mean() < 1200 / 2
