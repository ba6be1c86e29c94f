"""A liar honest until its last rounds, on real node processes and against the challenge rule.

The old rule (``max(1, floor(c x own queries))`` challenges a round, split over neighbours,
drawn uniformly over a neighbour's cumulative leaves) opens a leaf committed in the last round
with probability far below ``c``; the rule of :class:`fairprobe.collab.verify.ChallengeCore`
opens every new leaf with probability at least ``c``, closing rounds included, so the late
liar's falsified leaves are found and its proof excludes it at every honest node.
"""

from __future__ import annotations

import math

import pytest

from fairprobe.collab.net.launcher import DemoSpec, LocalNetwork
from fairprobe.collab.verify import ChallengeCore, VerifyConfig, challenge_allocation


def _old_rule_last_round_probability(rate: float, n: int, rounds: int, degree: int) -> float:
    """Chance that one leaf committed in the last round is ever opened by one challenger
    under the old rule (budget of the challenger's own queries, split over its ``degree``
    neighbours, uniform over the prover's cumulative leaves): challenged once, at round R."""
    alloc = challenge_allocation(VerifyConfig(rate=rate).budget(n), [str(u) for u in range(degree)],
                                 rounds)
    per = max(alloc.values())
    return per / (n * rounds)


def test_the_old_rule_misses_late_leaves_and_the_new_one_does_not():
    rate, n, rounds = 0.04, 300, 25
    old = _old_rule_last_round_probability(rate, n, rounds, degree=4)
    assert old < rate / 20  # 0.0004: a late lie of 1,000 answers escapes with chance ~0.67
    core = ChallengeCore(rate)
    opened = []
    for t in range(1, rounds + 1):  # one prover committing n leaves a round
        (req,) = core.plan({"p": n * t}, ["p"])
        core.covered("p", req.m)
        opened.append(req.count / (req.m - req.lo))
    assert min(opened) >= rate  # every round's new leaves, the last one too
    assert math.exp(1000 * math.log1p(-old)) > 0.6 and (1 - rate) ** 1000 < 1e-17


pytestmark = pytest.mark.timeout(300)


def test_a_late_liar_on_real_nodes_is_caught_and_the_verdict_holds(tmp_path):
    spec = DemoSpec(honest=4, attackers=1, seed=2, case="civil-very-unfair", n=10000,
                    round_timeout=120, verify=True, verify_rate=0.04, attack="late")
    with LocalNetwork(spec, tmp_path / "net") as net:
        net.write()
        (liar,) = [k for k, p in net.procs.items() if p.role == "attacker"]
        net.start()
        results = net.wait(timeout=280)
    rounds = net.plan.rounds
    honest = {k: r for k, r in results.items() if r["role"] == "honest"}
    for k, r in honest.items():
        # the liar lies only in its last ceil(0.2 R) rounds, and is excluded on a proof
        assert liar in r["excluded"], (k, r["excluded"], r["verification"])
        assert r["verdict"] in ("unfair", "undetermined"), r
    # a node that found the proof excluded the liar in a round the liar lied in; the others
    # record their own round when the proof reached them, which lags by up to their hops from
    # the finder (a node waits only for its neighbours' tables)
    finders = [k for k, r in honest.items() if r["verification"].get("proofs-made", 0) > 0]
    assert finders, {k: r["verification"] for k, r in honest.items()}
    for k in finders:
        assert honest[k]["excluded"][liar] > rounds - math.ceil(0.2 * rounds), honest[k]
    # the simulator runs the same challenge rule (ChallengeCore) on the same audit: same outcome
    from dataclasses import replace

    from fairprobe.collab.net.plan import sim_config
    from fairprobe.collab.simulate import simulate

    cfg = sim_config(case=spec.case, honest=spec.honest, attackers=1, seed=spec.seed, n=spec.n,
                     alpha=1.0, max_rounds=150, attack="late")
    res = simulate(replace(cfg, verify_rate=spec.verify_rate))
    assert res.bounded["verification"]["caught"] == [True]
    assert all(set(r["excluded"]) == {liar} for r in honest.values())
    assert res.verdicts["bounded"] != "fair"
