import numpy as np
import pytest

from fairprobe.collab.baselines import (
    AGGREGATORS,
    get_aggregator,
    masked_median,
    masked_trimmed_mean,
)
from fairprobe.errors import DataError, InvalidParameterError

TABLE = np.array(
    [
        [10, 20, 5, 10],  # rates .5, .5
        [1, 10, 8, 10],  # .1, .8
        [9, 10, 2, 10],  # .9, .2
        [3, 10, 0, 0],  # .3, group B empty
        [0, 0, 4, 8],  # group A empty, .5
    ]
)


def test_none_is_the_pooled_dp() -> None:
    est = get_aggregator("none")(TABLE[None])
    tot = TABLE.sum(axis=0)
    assert est[0] == pytest.approx(tot[0] / tot[1] - tot[2] / tot[3])


def test_median_and_trimmed_mean_of_rates() -> None:
    ra = [0.5, 0.1, 0.9, 0.3]
    rb = [0.5, 0.8, 0.2, 0.5]
    assert get_aggregator("median")(TABLE[None])[0] == pytest.approx(np.median(ra) - np.median(rb))
    # beta = 0.25 drops floor(0.25 * 4) = 1 value at each end of each group
    tm = get_aggregator("trimmed-mean", 0.25)(TABLE[None])[0]
    assert tm == pytest.approx(np.mean([0.3, 0.5]) - np.mean([0.5, 0.5]))
    # beta = 0.2: floor(0.8) = 0, nothing dropped
    tm0 = get_aggregator("trimmed-mean", 0.2)(TABLE[None])[0]
    assert tm0 == pytest.approx(np.mean(ra) - np.mean(rb))


def test_local_dp_variants() -> None:
    local = [0.0, -0.7, 0.7]  # only sources with both groups
    assert get_aggregator("median-local-dp")(TABLE[None])[0] == pytest.approx(0.0)
    assert get_aggregator("trimmed-mean-local-dp", 0.34)(TABLE[None])[0] == pytest.approx(0.0)
    assert get_aggregator("trimmed-mean-local-dp", 0.0)(TABLE[None])[0] == pytest.approx(
        np.mean(local)
    )


def test_masked_helpers() -> None:
    v = np.array([[1.0, 5.0, 3.0, 100.0], [2.0, 2.0, 2.0, 2.0]])
    valid = np.array([[True, True, True, False], [False, False, False, False]])
    assert masked_median(v, valid)[0] == 3.0 and np.isnan(masked_median(v, valid)[1])
    assert masked_trimmed_mean(v, valid, 0.34)[0] == 3.0


@pytest.mark.parametrize("name", sorted(AGGREGATORS))
def test_aggregator_suite(name: str) -> None:
    rng = np.random.default_rng(0)
    A = rng.integers(30, 500, (3, 9))
    B = rng.integers(30, 500, (3, 9))
    t = np.stack([rng.integers(0, A + 1), A, rng.integers(0, B + 1), B], axis=-1)
    agg = get_aggregator(name)
    est = agg(t)
    assert est.shape == (3,) and np.isfinite(est).all() and (np.abs(est) <= 1).all()
    perm = rng.permutation(9)
    assert np.allclose(agg(t[:, perm]), est)  # order of sources does not matter
    # identical sources: every aggregator returns their common DP
    same = np.tile(np.array([30, 100, 50, 100]), (1, 7, 1))
    assert agg(same)[0] == pytest.approx(-0.2)
    # entries not held are ignored
    held = np.ones((3, 9), dtype=bool)
    held[:, 0] = False
    t2 = t.copy()
    t2[:, 0] = [0, 1000, 1000, 1000]
    assert np.allclose(agg(t2, held), agg(t[:, 1:]))


def test_bad_input() -> None:
    with pytest.raises(InvalidParameterError):
        get_aggregator("nope")
    with pytest.raises(InvalidParameterError):
        get_aggregator("trimmed-mean", 0.5)
    with pytest.raises(DataError):
        get_aggregator("median")(np.zeros((2, 3)))
