"""Assumption A4 of the escape bound (every liar has an honest challenger) checked on the
realised network: the global check of the simulator, the local check of a node, and the
fallback verdict where it fails."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

from fairprobe.collab import simulate as sim
from fairprobe.collab.verify import DEFAULT_RATE, a4_check
from fairprobe.errors import InvalidParameterError


def _path(edges, v):
    a = np.zeros((v, v), dtype=bool)
    for i, j in edges:
        a[i, j] = a[j, i] = True
    return a


def test_global_and_local_checks_on_a_small_graph():
    # 0 - 1 - 2 - 3 - 4, liars 0 and 1: liar 0's only neighbour lies
    adj = _path([(0, 1), (1, 2), (2, 3), (3, 4)], 5)
    lie = np.array([1, 1, 0, 0, 0], dtype=bool)
    g = a4_check(adj, liars=lie)
    assert not g["holds"] and g["without_challenger"] == [0]
    assert a4_check(adj, liars=np.array([1, 0, 0, 0, 0], dtype=bool))["holds"]
    # node 4 cannot know who lies: two colluders (0 and 1) can cut 0 off
    loc = a4_check(adj, me=4)
    assert loc["holds_unless_liars"] == 2 and loc["weakest"] == [0]
    assert loc["without_challenger"] == [] and not loc["holds"]
    # once 1 is proven, 0 has no honest neighbour for certain
    loc = a4_check(adj, me=4, proven=np.array([0, 1, 0, 0, 0], dtype=bool))
    assert loc["without_challenger"] == [0]
    # node 1's own neighbours are vouched for by itself
    assert 0 not in a4_check(adj, me=1)["weakest"]
    with pytest.raises(InvalidParameterError):
        a4_check(adj)


def _first_gap(liars, limit=2000):
    for seed in range(limit):
        adj, att = sim._graph(sim.SimConfig(case="civil-very-unfair", honest=20,
                                            attackers=liars, seed=seed))
        lie = np.zeros(adj.shape[0], dtype=bool)
        lie[att] = True
        if not a4_check(adj, liars=lie)["holds"]:
            return seed
    raise AssertionError("no network without a challenger")


def test_share_of_networks_without_a_challenger_is_the_measured_one():
    n, gaps = 1500, 0
    for seed in range(n):
        adj, att = sim._graph(sim.SimConfig(case="civil-very-unfair", honest=20, attackers=3,
                                            seed=seed))
        lie = np.zeros(adj.shape[0], dtype=bool)
        lie[att] = True
        gaps += not a4_check(adj, liars=lie)["holds"]
    # experiments/results/collab/a4_check.json: about 2% over 10,000 networks
    assert 0.008 < gaps / n < 0.04


@pytest.mark.parametrize("liars", [2, 3])
def test_the_simulator_withholds_the_declared_bound_where_a4_fails(liars):
    seed = _first_gap(liars)
    cfg = sim.SimConfig(case="civil-very-unfair", honest=20, attackers=liars, seed=seed,
                        attack="late", max_liars=1, verify_rate=DEFAULT_RATE)
    r = sim.simulate(cfg, bounded_only=True)
    a4 = r.bounded["a4"]
    assert not a4["holds"] and a4["without_challenger"]
    assert set(a4["without_challenger"]) <= set(r.attacker_positions)
    assert a4["max_liars"] == 1 + len(a4["without_challenger"])
    f = r.findings["bounded"]
    assert f["counts"]["max_liars"] == a4["max_liars"]
    assert f["counts"]["a4"]["holds"] is False
    # the unchallenged liar is never caught
    caught = dict(zip(r.attacker_positions, r.bounded["verification"]["caught"], strict=True))
    assert not any(caught[j] for j in a4["without_challenger"])
    truth = "fair" if abs(r.honest_dp) <= cfg.tau else "unfair"
    assert r.bounded["verdict"] in (truth, "undetermined")


def test_where_a4_holds_the_output_is_the_declared_one():
    cfg = sim.SimConfig(case="civil-very-unfair", honest=20, attackers=2, seed=3,
                        attack="late", max_liars=1, verify_rate=DEFAULT_RATE)
    r = sim.simulate(cfg, bounded_only=True)
    assert r.bounded["a4"]["holds"] and r.bounded["a4"]["max_liars"] == 1
    assert "declared_verdict" not in r.bounded["a4"]
    assert r.findings["bounded"]["counts"]["max_liars"] == 1


_SPEC = importlib.util.spec_from_file_location(
    "proof_flood", Path(__file__).resolve().parents[2] / "experiments" / "collab" / "proof_flood.py")
assert _SPEC is not None and _SPEC.loader is not None
flood_mod = importlib.util.module_from_spec(_SPEC)
sys.modules.setdefault("proof_flood", flood_mod)
_SPEC.loader.exec_module(flood_mod)


def test_a_node_checks_a4_on_its_roster_graph(tmp_path):
    net = flood_mod.Net(tmp_path, n=30, rounds=1)
    node = net.node("a1", "a4")
    try:
        d = node.driver
        c = d.a4()
        # a1 vouches for its neighbours a0 and a3; a5 (neighbours a2, a4) is the easiest to
        # cut off: by three colluders
        assert c["holds_unless_liars"] == 3 and c["weakest"] == ["a5"]
        assert "fewer than 3" in c["condition"] and not c["without_challenger"]
        d.local_step(1)
        d.end_round()
        base = d.bounded()
        assert base["max_liars"] == node.cfg.max_liars and base["a4"]["weakest"] == ["a5"]
        d.proven |= {"a2", "a4"}  # every neighbour of a5 proven: nobody challenges a5
        c = d.a4()
        assert c["without_challenger"] == ["a5"] and "a5" in c["condition"]
        assert d.bounded()["max_liars"] == node.cfg.max_liars + 1
    finally:
        flood_mod.close(node)
