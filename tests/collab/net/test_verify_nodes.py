"""Verification of answers on real node processes.

Guarantees checked: a source that falsifies answers is excluded by every honest node (also by
those that never challenged it: the proof of fraud is transferable); a source that backs its
counts with truthful answers on records it chose is never excluded (what verification cannot
catch); no honest node is ever excluded; the extra queries stay within the budget
(``ceil(rate d)`` of the ``d`` leaves each neighbour committed since the last challenge, plus
one per proof checked).
"""

from __future__ import annotations

import dataclasses
import json

import pytest

from fairprobe.collab import simulate as sim
from fairprobe.collab.net.config import load_node_config
from fairprobe.collab.net.launcher import DemoSpec, LocalNetwork, summarise
from fairprobe.collab.net.plan import sim_config

pytestmark = pytest.mark.timeout(300)

CASE = "civil-near-fair"


def test_fabricators_are_excluded_network_wide_and_cherry_pickers_are_not(tmp_path):
    spec = DemoSpec(honest=6, attackers=2, seed=4, case=CASE, n=800, round_timeout=120,
                    verify=True, verify_rate=0.04, method="robust")
    with LocalNetwork(spec, tmp_path / "net") as net:
        net.write()
        attackers = [k for k, p in net.procs.items() if p.role == "attacker"]
        liar, picker = attackers
        # the second attacker backs its counts with truthful answers on records it chose
        p = net.procs[picker].config
        cfg = load_node_config(p)
        dataclasses.replace(
            cfg, verify=dataclasses.replace(cfg.verify, records="chosen")
        ).write(p)
        net.start()
        results = net.wait(timeout=280)
    honest = {k: r for k, r in results.items() if r["role"] == "honest"}
    rounds = net.plan.rounds
    for k, r in honest.items():
        assert set(r["excluded"]) == {liar}, (k, r["excluded"])
        assert 1 <= r["excluded"][liar] <= rounds
        v = r["verification"]
        # budget: ceil(4%) of each neighbour's new leaves per challenge, plus one re-ask per
        # proof checked (link leaves are not re-asked)
        nbr_leaves = sum(results[u]["queries_used"] if results[u]["role"] == "honest"
                         else spec.n * rounds for u in net.roster.member(k).neighbours)
        assert v["reasked"] <= 0.04 * nbr_leaves + v["challenges-sent"] + 2, v
        assert v.get("proof-not-confirmed", 0) == 0
    # transferable: nodes that are not the liar's neighbours excluded it on a forwarded proof
    nb = set(net.roster.member(liar).neighbours)
    far = [k for k in honest if k not in nb]
    assert far and all(liar in honest[k]["excluded"] for k in far)
    assert all(honest[k]["verification"].get("proofs-made", 0) == 0 for k in far)
    assert sum(honest[k]["verification"].get("proofs-made", 0) for k in nb) >= 1
    # the picker was challenged and answered, and never caught
    assert sum(honest[k]["verification"].get("leaves-checked", 0) for k in
               set(net.roster.member(picker).neighbours) & set(honest)) > 0
    out = summarise(results, spec.tau)
    assert out["exclusions"][liar]["excluded_by"] == len(honest)
    assert out["exclusions"][picker]["excluded_by"] == 0
    # excluding the liar moves every honest estimate away from the attackers' pull toward 0
    cfg = sim_config(case=CASE, honest=6, attackers=2, seed=4, n=800, alpha=1.0, max_rounds=150)
    plain = sim.simulate(cfg).per_auditor["auditopus"]
    for i, k in enumerate(sorted(honest)):
        assert honest[k]["estimate"] < plain[i], (k, honest[k]["estimate"], plain[i])
    json.dumps(out)
