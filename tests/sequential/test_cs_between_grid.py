"""The default's confidence sequence covers gaps between its grid points (low-variance scores)."""

from __future__ import annotations

import numpy as np
import pytest

from fairprobe.sequential.mixture import _CS_POINTS, MixtureBettingTest


def _pool(rng: np.random.Generator, n: int, gap: float) -> tuple[np.ndarray, np.ndarray]:
    """Two groups of ``n`` scores, sd 0.03, whose pool means differ by exactly ``gap``."""
    a = rng.normal(0.5, 0.03, n)
    b = rng.normal(0.5, 0.03, n)
    return a - a.mean() + 0.5 + gap / 2, b - b.mean() + 0.5 - gap / 2


@pytest.mark.parametrize("gap", [0.07375, 0.10125, 0.075])
def test_whole_pool_audit_covers_a_gap_between_grid_points(gap: float) -> None:
    """Once the pool is used up the bounds close in on the pool's gap; on grid points alone the
    interval then shrank to the two neighbours' rejection and missed every midpoint gap."""
    step = 2.0 / (_CS_POINTS - 1)
    frac = gap / step - np.floor(gap / step + 1e-9)
    assert np.isclose(frac, 0.5) or np.isclose(frac, 0.0, atol=1e-9)  # midpoints, a grid point
    rng = np.random.default_rng(7)
    n = 2500
    t = MixtureBettingTest(0.1, "scores", population=(n, n))
    for _ in range(4):
        a, b = _pool(rng, n, gap)
        low, up = t.confidence_sequence(rng.permutation(a), rng.permutation(b))
        assert np.all(low <= gap + 1e-12) and np.all(up >= gap - 1e-12)
        assert np.all(np.diff(low) >= -1e-12) and np.all(np.diff(up) <= 1e-12)
        assert up[-1] - low[-1] <= 2 * step + 1e-9  # as tight as the grid allows


def test_iid_scores_between_grid_points_are_covered_at_the_level() -> None:
    rng = np.random.default_rng(11)
    t = MixtureBettingTest(0.1, "scores")
    gap, missed, reps = 0.07375, 0, 40
    for _ in range(reps):
        xa = np.clip(rng.normal(0.5 + gap / 2, 0.03, 600), 0, 1)
        xb = np.clip(rng.normal(0.5 - gap / 2, 0.03, 600), 0, 1)
        low, up = t.confidence_sequence(xa, xb)
        missed += bool(((low > gap) | (up < gap)).any())
    assert missed <= 5  # alpha = 0.05: 2 expected at most
