"""Proxy estimates: the bounds against a linear program, the finite-sample bounds' coverage
over seeds on populations drawn from the census tables, the weighted estimate's bias."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import linprog

from fairprobe.bisg.estimate import empirical_bernstein, proxy_audit, rate_bounds, ratio_bound
from fairprobe.bisg.simulate import DESIGNS, evaluate_seed, true_rates
from fairprobe.errors import DataError, InvalidParameterError


def _population(seed: int, cells: int = 6, per: int = 50):
    """Rows in cells sharing one q vector each, with a share eta of approvals per cell."""
    rng = np.random.default_rng(seed)
    q_cell = rng.dirichlet(np.full(6, 0.6), size=cells)
    eta = rng.integers(0, per + 1, size=cells) / per
    q = np.repeat(q_cell, per, axis=0)
    y = np.concatenate([np.r_[np.ones(int(round(e * per))), np.zeros(per - int(round(e * per)))]
                        for e in eta])
    return y, q, np.repeat(np.arange(cells), per), q_cell, eta


def _lp_gap(q_cell: np.ndarray, eta: np.ndarray, a: int, b: int, sense: float) -> float:
    """max (sense=1) or min (sense=-1) of mu_a - mu_b over every joint law the data allow."""
    k, r = q_cell.shape
    p = np.full(k, 1.0 / k)
    pi = p @ q_cell
    c = np.zeros((k, r))
    c[:, a] = p / pi[a]
    c[:, b] -= p / pi[b]
    a_eq = np.zeros((k, k * r))
    for w in range(k):
        a_eq[w, w * r:(w + 1) * r] = 1.0
    res = linprog(-sense * c.ravel(), A_eq=a_eq, b_eq=eta,
                  bounds=list(zip(np.zeros(k * r), q_cell.ravel(), strict=True)))
    assert res.success
    return float(sense * -res.fun)


@pytest.mark.parametrize("seed", range(8))
def test_identification_region_is_the_linear_programs_optimum(seed: int) -> None:
    y, q, cells, q_cell, eta = _population(seed)
    fold = np.random.default_rng(seed).random(y.size) < 0.5
    ra = rate_bounds(y, q[:, 1], cells, "black", 0.05, fold)
    rb = rate_bounds(y, q[:, 0], cells, "white", 0.05, fold)
    hi, lo = ra.region[1] - rb.region[0], ra.region[0] - rb.region[1]
    assert hi == pytest.approx(_lp_gap(q_cell, eta, 1, 0, 1.0), abs=1e-9)
    assert lo == pytest.approx(_lp_gap(q_cell, eta, 1, 0, -1.0), abs=1e-9)
    # the finite-sample bounds lie outside the region they bound
    assert ra.low <= ra.region[0] + 1e-12 and ra.high >= ra.region[1] - 1e-12


def test_empirical_bernstein_and_ratio_bounds_cover() -> None:
    rng = np.random.default_rng(5)
    miss_eb, miss_ratio = 0, 0
    runs = 400
    for _ in range(runs):
        x = (rng.random(300) < 0.3).astype(float)
        miss_eb += empirical_bernstein(x, 0.05, 1.0, "upper") < 0.3
        q = rng.random(300) * 0.4
        v = (rng.random(300) < q * 0.5).astype(float)  # E[v] / E[q] = 0.5
        miss_ratio += ratio_bound(v, q, 0.05, 1.0, "upper") < 0.5
    assert miss_eb / runs <= 0.05 and miss_ratio / runs <= 0.05


def test_true_rates_of_the_designs_are_exact_sums() -> None:
    t = true_rates(0.0, {}, 0.0)
    assert all(v == pytest.approx(0.5) for v in t.values())


def _runs(design: str, seeds: int, n: int) -> list[dict]:
    return [r for s in range(seeds) for r in evaluate_seed(design, s, n, birdie=False)]


def test_bounds_cover_when_decisions_depend_on_place_beyond_race() -> None:
    """200 seeds: the printed bounds cover the true gap at >= 0.95, never "fair" while the true
    gap is outside the band; the proxy-weighted estimate is biased towards no gap."""
    recs = _runs("place", 200, 2000)
    truth = recs[0]["truth"]
    assert abs(truth) > 0.05
    assert np.mean([r["covered"] for r in recs]) >= 0.95
    assert not any(r["verdict"] == "fair" for r in recs)
    bias = np.mean([r["weighted"] for r in recs]) - truth
    se = np.std([r["weighted"] for r in recs]) / np.sqrt(len(recs))
    assert bias > 5 * se  # attenuated: a share of the disparity disappears
    assert np.mean([r["weighted_covered"] for r in recs]) < 0.9


def test_race_only_decisions_bounds_contain_truth_and_birdie_covers() -> None:
    recs = [r for s in range(40) for r in evaluate_seed("race-only", s, 3000)]
    truth = recs[0]["truth"]
    assert np.mean([r["covered"] for r in recs]) >= 0.95
    assert np.mean([r["region_covers"] for r in recs]) >= 0.9
    assert np.mean([r["birdie_covered"] for r in recs]) >= 0.85
    # weighting attenuates the gap when decisions depend on race
    assert np.mean([r["weighted"] for r in recs]) > truth + 0.03


def test_recorded_races_in_the_bounds_keep_coverage_and_narrow_them() -> None:
    """30 seeds, decisions depending on place beyond race, race recorded for a random 30% of
    rows (so recording depends on nothing): the tightened bounds cover the true gap at >= 0.95
    and are narrower on average than the proxy's alone."""
    from fairprobe.bisg.job import recorded_in_bounds
    from fairprobe.bisg.simulate import DESIGNS, draw_population
    from fairprobe.bisg.tables import RACES, bisg_probabilities

    covered, narrower = [], []
    for seed in range(30):
        pop = draw_population(2000, seed=seed, **DESIGNS["place"])  # type: ignore[arg-type]
        pp = bisg_probabilities(pop.frame["surname"], pop.frame["zip"])
        y = pop.frame["approved"].to_numpy(dtype=float)[pp.used]
        race = np.array([RACES.index(r) for r in pop.race])[pp.used]
        race = np.where(np.random.default_rng(seed).random(race.size) < 0.3, race, -1)
        truth = pop.truth["black"] - pop.truth["white"]
        plain = proxy_audit(y, pp.q[pp.used], groups=("black",), seed=seed,
                            birdie=False).comparisons[0].finding
        q2, cells = recorded_in_bounds(pp.q[pp.used], race, None)
        tight = proxy_audit(y, q2, groups=("black",), seed=seed, birdie=False,
                            strata=cells).comparisons[0].finding
        covered.append(tight.low <= truth <= tight.high)
        narrower.append((plain.high - plain.low) - (tight.high - tight.low))
    assert np.mean(covered) >= 0.95
    assert np.mean(narrower) > 0.02


def test_recorded_in_bounds_pins_recorded_rows() -> None:
    from fairprobe.bisg.job import recorded_in_bounds

    q = np.full((4, 6), 1 / 6)
    q2, cells = recorded_in_bounds(q, np.array([-1, 1, 1, 0]), np.array([0, 0, 1, 1]))
    assert (q2[0] == q[0]).all() and q2[1].tolist() == [0, 1, 0, 0, 0, 0]
    assert q2[3].tolist() == [1, 0, 0, 0, 0, 0]
    assert len(set(cells.tolist())) == 4  # recorded rows get cells of their own


def test_designs_are_what_their_names_say() -> None:
    assert DESIGNS["race-only"]["income_effect"] == 0.0
    assert DESIGNS["place-only"]["race_effect"] == {}


def test_bad_inputs_raise_typed_errors() -> None:
    q = np.full((4, 6), 1 / 6)
    with pytest.raises(DataError, match="0/1"):
        proxy_audit(np.array([0, 1, 2, 0]), q)
    with pytest.raises(InvalidParameterError, match="unknown race"):
        proxy_audit(np.array([0, 1, 1, 0]), q, groups=("martian",))
    with pytest.raises(InvalidParameterError, match="shape"):
        proxy_audit(np.array([0, 1, 1]), q)
