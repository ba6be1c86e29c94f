"""Self-consistent liars: calibration, budget feasibility, true records, reproducibility.

Guarantees tested: a calibrated liar's expected reports put the pooled estimate at 0 when that is
reachable (``pooled_dp`` ~ 0); every increment is in ``X_n``; ``consistent-exact`` has cumulative
counts equal to the rounded plan; ``selective`` never claims more records of a kind than the
population holds; noise is reproducible per (seed, attacker, round); the consistent liar defeats
Auditopus (the issue's finding) on a small simulated audit.
"""

from __future__ import annotations

import numpy as np
import pytest

from fairprobe.collab.attacker import AttackContext, get_attack
from fairprobe.collab.liars import plan_consistent, plan_selective
from fairprobe.collab.simulate import SimConfig, simulate
from fairprobe.datasets.populations import get_population
from fairprobe.errors import ConfigError
from fairprobe.stats.counts import CountsVector


def _ctx(case: str = "bios-moderate", K: int = 2, R: int = 30, ids=(0, 1)) -> AttackContext:
    return AttackContext(get_population(case).counts, 300, R, K, 20, 0.05, 11, tuple(ids))


@pytest.mark.parametrize("case", ["bios-very-unfair", "bios-moderate", "bios-near-fair"])
@pytest.mark.parametrize("K", [1, 2, 5])
def test_plans_reach_zero_when_reachable(case: str, K: int) -> None:
    pop = get_population(case).counts
    for name, plan in (("c", plan_consistent(_ctx(case, K))), ("s", plan_selective(_ctx(case, K)))):
        assert 0 <= plan.pi <= 1 and 0 <= plan.q_a <= 1 and 0 <= plan.q_b <= 1
        assert pop.dp() < plan.pooled_dp  # moved towards 0
        if K >= 2:
            # consistent rates hit 0; extreme true labels may overshoot, but stay in the band
            assert abs(plan.pooled_dp) < (1e-6 if name == "c" else 0.05)


def test_consistent_exact_cumulates_the_plan_exactly() -> None:
    s = get_attack("consistent-exact").calibrate(_ctx(ids=(0,)))
    p = s.plan
    tot = np.zeros(4, dtype=np.int64)
    for t in range(1, 31):
        d = s.fabricate(np.zeros((1, 4)), 300, t)[0]
        assert d[1] + d[3] == 300 and 0 <= d[0] <= d[1] and 0 <= d[2] <= d[3]
        tot += d
        assert abs(tot[1] - t * 300 * p.pi) <= 0.5 + 1e-9
        assert abs(tot[0] - tot[1] * p.q_a) <= 0.5 + 1e-9


@pytest.mark.parametrize("K", [2, 5])
def test_selective_uses_only_records_the_population_holds(K: int) -> None:
    ctx = _ctx("bios-very-unfair", K=K, R=40)
    s = get_attack("selective").calibrate(ctx)
    pop = ctx.population
    tot = np.zeros(4, dtype=np.int64)
    for t in range(1, 41):
        d = s.fabricate(np.zeros((2, 4)), 300, t)[0]
        assert (d >= 0).all() and d[1] + d[3] == 300
        tot += d
    assert tot[0] <= pop.a and tot[1] - tot[0] <= pop.A - pop.a
    assert tot[2] <= pop.b and tot[3] - tot[2] <= pop.B - pop.b
    if K == 2:  # extreme records: it exhausts the group-A positives (the few male nurses)
        assert s.plan.q_a == 1.0 and tot[0] == pop.a


def test_noise_is_per_attacker_and_round_and_reproducible() -> None:
    s = get_attack("consistent").calibrate(_ctx(ids=(3, 8)))
    d1 = s.fabricate(np.zeros((2, 4)), 300, 4)
    d2 = s.fabricate(np.zeros((2, 4)), 300, 4)
    assert np.array_equal(d1, d2) and not np.array_equal(d1[0], d1[1])
    one = s.for_ids((8,)).fabricate_one(CountsVector.zero(), 300, 4)
    assert one.as_tuple() == tuple(int(x) for x in d1[1])


def test_uncalibrated_liar_is_a_clear_error() -> None:
    with pytest.raises(ConfigError, match="calibrat"):
        get_attack("consistent").fabricate(np.zeros((1, 4)), 300, 1)
    s = get_attack("consistent").calibrate(_ctx(ids=(0,)))
    with pytest.raises(ConfigError, match="rows"):
        s.fabricate(np.zeros((2, 4)), 300, 1)


def test_context_round_trips() -> None:
    c = _ctx()
    assert AttackContext.from_dict(c.to_dict()) == c


def test_consistent_liar_defeats_auditopus_but_not_robust_on_very_unfair() -> None:
    """Calibrated liars on a small audit (bios very unfair, 2 liars): Auditopus is pushed to or
    past 0; the recommended method keeps the verdict."""
    fooled_a = moved_r = 0
    for seed in range(3):
        r = simulate(SimConfig(case="bios-very-unfair", attackers=2, seed=seed,
                               attack="consistent"))
        fooled_a += r.estimates["auditopus"] > -0.05
        moved_r += r.estimates["robust"] > -0.05
    assert fooled_a == 3 and moved_r == 0


def test_attacker_core_persists_its_calibration() -> None:
    from fairprobe.collab.protocol import AttackerCore, core_from_dict
    from fairprobe.collab.simulate import attack_strategy

    cfg = SimConfig(case="bios-moderate", attackers=2, seed=1, attack="consistent")
    strat = attack_strategy(cfg, 20, (3,))
    roster = [f"a{i}" for i in range(5)]
    core = AttackerCore("a3", roster, n=300, strategy=strat)
    core.start_round()
    e1 = core.fabricate()
    core.end_round()
    back = core_from_dict(core.to_dict())
    assert isinstance(back, AttackerCore) and back.strategy.context == strat.context
    core.start_round()
    back.start_round()
    assert core.fabricate().counts == back.fabricate().counts != e1.counts
