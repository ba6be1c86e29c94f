import numpy as np
import pytest

from fairprobe.collab.graph import (
    DisconnectedGraphError,
    connected_erdos_renyi,
    gossip_lags,
    hop_distances,
)
from fairprobe.collab.partition import dirichlet_partition, increments_per_round, local_counts
from fairprobe.collab.robust import robust_estimate
from fairprobe.collab.simulate import SimConfig, prepare_honest, simulate, simulate_reference
from fairprobe.datasets.populations import get_population
from fairprobe.errors import DataError, InvalidParameterError
from fairprobe.stats.counts import CountsVector


@pytest.mark.parametrize(
    ("case", "honest", "attackers", "seed", "replacement", "degree", "attack"),
    [
        ("civil-near-fair", 5, 0, 0, False, 4.0, "adaptive"),
        ("civil-near-fair", 6, 2, 1, False, 4.0, "adaptive"),
        ("bios-moderate", 8, 3, 2, False, 2.2, "adaptive"),  # sparse: multi-hop gossip delays
        ("civil-moderate", 4, 2, 3, True, 4.0, "adaptive"),
        ("bios-near-fair", 5, 1, 4, False, 2.0, "adaptive"),
        ("bios-moderate", 6, 2, 5, False, 2.5, "consistent"),  # noise per (seed, index, round)
        ("bios-near-fair", 6, 2, 6, False, 4.0, "consistent-exact"),
        ("bios-very-unfair", 6, 1, 7, False, 4.0, "selective"),
    ],
)
def test_vectorised_path_equals_protocol_cores(
    case, honest, attackers, seed, replacement, degree, attack
):
    cfg = SimConfig(
        case=case,
        honest=honest,
        attackers=attackers,
        seed=seed,
        replacement=replacement,
        degree=degree,
        max_rounds=14,
        n=300,
        attack=attack,
    )
    fast = simulate(cfg)
    ref = simulate_reference(cfg)
    assert fast.rounds == ref.rounds
    for m in cfg.methods:
        assert np.array_equal(fast.per_auditor[m], ref.per_auditor[m], equal_nan=True), m
        assert fast.estimates[m] == ref.estimates[m]
    assert fast.honest_dp == ref.honest_dp


def test_full_audit_recovers_true_dp_without_attackers() -> None:
    # without replacement every input is queried once: the honest GAS vector has the true DP;
    # each auditor misses only the last few rounds of far-away auditors (gossip delay)
    r = simulate(SimConfig(case="bios-moderate", honest=20, attackers=0, seed=0))
    assert r.honest_dp == pytest.approx(r.true_dp, abs=1e-12)
    assert r.estimates["none"] == pytest.approx(r.true_dp, abs=2e-3)
    full = simulate(SimConfig(case="bios-moderate", honest=20, attackers=0, seed=0, degree=19.0))
    assert full.estimates["none"] == pytest.approx(full.true_dp, abs=1e-12)  # complete graph
    assert abs(r.estimates["auditopus"] - r.true_dp) < 0.06


def test_attack_fools_no_defense_but_not_auditopus() -> None:
    r = simulate(SimConfig(case="bios-moderate", attackers=5, seed=1))
    assert abs(r.estimates["none"]) <= 0.05
    assert r.estimates["auditopus"] < -0.05
    rows = r.rows()
    assert {row["method"] for row in rows} == set(r.config.methods)
    for row in rows:
        assert set(row) >= {
            "case",
            "attackers",
            "seed",
            "method",
            "estimate",
            "true_dp",
            "error",
            "fooled",
        }
        assert row["error"] == pytest.approx(row["estimate"] - row["true_dp"])


def test_same_seed_same_result_and_partition_independent_of_k() -> None:
    a = simulate(SimConfig(case="civil-moderate", attackers=2, seed=7))
    b = simulate(SimConfig(case="civil-moderate", attackers=2, seed=7))
    assert a.estimates == b.estimates and a.attacker_positions == b.attacker_positions
    s0 = prepare_honest(SimConfig(case="civil-moderate", attackers=0, seed=7))
    s5 = prepare_honest(SimConfig(case="civil-moderate", attackers=5, seed=7))
    assert np.array_equal(s0.cells, s5.cells) and np.array_equal(s0.increments, s5.increments)


def test_trajectory_and_extra_betas() -> None:
    r = simulate(
        SimConfig(case="civil-near-fair", attackers=1, seed=0, extra_betas=(0.1, 0.3)),
        trajectory=True,
    )
    assert r.trajectory is not None and r.trajectory["none"].shape == (r.rounds,)
    assert r.trajectory["none"][-1] == pytest.approx(r.estimates["none"])
    assert r.trajectory["auditopus"][-1] == pytest.approx(r.estimates["auditopus"])
    assert "trimmed-mean@0.1" in r.estimates and "trimmed-mean@0.3" in r.estimates


def test_partition_constraints() -> None:
    pop = get_population("civil-moderate")
    cells = dirichlet_partition(pop.counts, 20, 1.0, np.random.default_rng(0))
    assert np.array_equal(
        cells.sum(axis=0),
        [pop.counts.a, pop.counts.A - pop.counts.a, pop.counts.b, pop.counts.B - pop.counts.b],
    )
    lc = local_counts(cells)
    assert (lc[:, 1] >= 30).all() and (lc[:, 3] >= 30).all()
    inc = increments_per_round(np.array([0, 1, 2, 3, 3, 0, 2], dtype=np.int8), 3, 4)
    assert inc.tolist() == [[1, 2, 1, 1], [1, 1, 0, 2], [0, 0, 1, 1], [0, 0, 0, 0]]


def test_graph() -> None:
    rng = np.random.default_rng(0)
    adj = connected_erdos_renyi(40, 4.0, rng)
    assert (adj == adj.T).all() and not adj.diagonal().any()
    d = hop_distances(adj)
    lag = gossip_lags(adj)
    assert (lag == np.maximum(d - 1, 0)).all() and lag.diagonal().sum() == 0
    assert connected_erdos_renyi(1, 4.0, rng).shape == (1, 1)
    with pytest.raises(DisconnectedGraphError):
        connected_erdos_renyi(30, 0.01, rng, max_redraws=20)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"honest": 0},
        {"attackers": -1},
        {"n": 0},
        {"alpha": 0.0},
        {"alpha": -1.0},
        {"case": "unknown"},
        {"beta": 0.5},
        {"attack": "nope"},
    ],
)
def test_bad_config(kwargs) -> None:
    base = {"case": "bios-moderate"}
    with pytest.raises(InvalidParameterError):
        SimConfig(**{**base, **kwargs})


def test_population_too_small_is_one_error() -> None:
    with pytest.raises(DataError, match="too few"):
        simulate(SimConfig(case="civil-near-fair", honest=1000))
    with pytest.raises(DataError, match="draws"):
        dirichlet_partition(
            CountsVector(500, 1000, 500, 1000), 30, 0.05, np.random.default_rng(0), max_redraws=5
        )


def test_disconnected_graph_is_one_error() -> None:
    with pytest.raises(DisconnectedGraphError):
        simulate(
            SimConfig(case="bios-moderate", honest=10, attackers=2, degree=0.05, max_redraws=10)
        )


def test_public_setup_hooks_match_the_plan() -> None:
    from fairprobe.collab.protocol import QuerySampler
    from fairprobe.collab.simulate import audit_plan, graph_of, honest_query_rng

    cfg = SimConfig(case="civil-near-fair", honest=6, attackers=3, seed=5)
    plan = audit_plan(cfg)
    adj, att = graph_of(cfg)
    assert np.array_equal(adj, plan.adjacency) and tuple(att) == plan.attackers
    assert [int(x) for x in plan.neighbours(0)] == [int(u) for u in np.flatnonzero(adj[0])]
    size = int(plan.cells[2].sum())
    a = QuerySampler(size, honest_query_rng(cfg, 2)).draw(size)
    b = QuerySampler(size, np.random.default_rng(plan.query_seeds[2])).draw(size)
    assert np.array_equal(a, b)
    with pytest.raises(InvalidParameterError):
        honest_query_rng(cfg, 6)


def test_robust_threshold_is_a_config_field_and_cores_agree() -> None:
    cfg = SimConfig(case="bios-moderate", honest=6, attackers=2, seed=5, max_rounds=10,
                    attack="consistent", robust_c=2.0)
    fast, ref = simulate(cfg), simulate_reference(cfg)
    assert np.array_equal(fast.per_auditor["robust"], ref.per_auditor["robust"], equal_nan=True)
    assert cfg.to_dict()["robust_c"] == 2.0
    with pytest.raises(InvalidParameterError):
        SimConfig(case="bios-moderate", robust_c=-1.0)


def test_decisive_screening_stops_two_consistent_liars() -> None:
    # two calibrated liars on the moderate case fool robust without rule 5 (estimate in
    # the band), not with it; simulator and one core per auditor agree on both
    cfg = SimConfig(case="bios-moderate", attackers=2, seed=1, attack="consistent")
    old = SimConfig(case="bios-moderate", attackers=2, seed=1, attack="consistent",
                    robust_c_decisive=None)
    assert abs(simulate(old).estimates["robust"]) <= cfg.tau
    assert abs(simulate(cfg).estimates["robust"]) > cfg.tau
    assert cfg.to_dict()["robust_c_decisive"] == 2.0 and old.to_dict()["robust_c_decisive"] is None
    small = SimConfig(case="bios-moderate", attackers=2, seed=2, max_rounds=15,
                      attack="consistent")
    fast, ref = simulate(small, keep_views=True), simulate_reference(small)
    assert fast.views is not None
    v = fast.views
    assert robust_estimate(v["weighted"], v["tables"], v["held"], small.robust_params).decisive.any()
    assert np.array_equal(fast.per_auditor["robust"], ref.per_auditor["robust"], equal_nan=True)
    for bad in (0.0, -1.0):
        with pytest.raises(InvalidParameterError):
            SimConfig(case="bios-moderate", robust_c_decisive=bad)


@pytest.mark.parametrize("attack", ["late", "late-records"])
def test_answer_level_liars_run_the_same_in_both_paths_and_know_their_lies(attack) -> None:
    cfg = SimConfig(case="bios-moderate", honest=6, attackers=2, seed=3, max_rounds=10,
                    attack=attack)
    fast, ref = simulate(cfg), simulate_reference(cfg)
    for m in ("auditopus", "bounded"):
        assert np.array_equal(fast.per_auditor[m], ref.per_auditor[m], equal_nan=True)
    from fairprobe.collab.simulate import histories

    h = histories(cfg, prepare_honest(cfg))
    assert h.lies is not None and h.truth is not None
    R = h.lies.shape[0]
    # truthful before its last rounds, lying in them; the true-answer counts share the groups
    assert (h.lies[: R - 2].sum() == 0) and h.lies[R - 1].sum() > 0
    assert np.array_equal(h.truth[:, :, [1, 3]], h.H[:, h.att][:, :, [1, 3]])
