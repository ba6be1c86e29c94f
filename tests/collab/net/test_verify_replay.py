"""A liar cannot turn the verification layer into a weapon (real node processes, 127.0.0.1).

Guarantees checked:

1. a liar whose committed records the model refuses (a query id outside the population, a
   record without one) and that answers challenges with genuine signed openings is excluded on
   a ``refused-record`` proof; every honest node finishes with a verdict and excludes no
   honest node;
"""

from __future__ import annotations

import dataclasses

import pytest

from fairprobe.collab.net.config import load_node_config
from fairprobe.collab.net.launcher import DemoSpec, LocalNetwork

pytestmark = pytest.mark.timeout(300)

CASE = "civil-near-fair"


def test_poisoned_openings_exclude_the_liar_and_never_stop_a_challenger(tmp_path):
    spec = DemoSpec(honest=3, attackers=1, seed=4, case=CASE, n=200, rounds=4,
                    round_timeout=120, verify=True, verify_rate=0.05, attack="consistent",
                    max_liars=1)
    with LocalNetwork(spec, tmp_path / "net") as net:
        net.write()
        liar = next(k for k, p in net.procs.items() if p.role == "attacker")
        p = net.procs[liar].config
        cfg = load_node_config(p)
        dataclasses.replace(cfg, verify=dataclasses.replace(cfg.verify, records="poisoned")
                            ).write(p)
        net.start()
        results = net.wait(timeout=280)
    honest = {k: r for k, r in results.items() if r["role"] == "honest"}
    assert len(honest) == 3  # every honest node gave a result
    assert net.roster is not None
    nb = [k for k in net.roster.member(liar).neighbours if k in honest]
    assert nb
    for k, r in honest.items():
        assert set(r["excluded"]) <= {liar}, (k, r["excluded"])
        assert r["finding"]["verdict"] in ("fair", "unfair", "undetermined")
    finders = [k for k in nb if honest[k]["verification"].get("proofs-made", 0)]
    assert finders, {k: honest[k]["verification"] for k in nb}
    for k in finders:
        assert honest[k]["verification"].get("reask-refused-record", 0) >= 1
        assert liar in honest[k]["excluded"]
    # the proof is transferable: every honest node excludes the liar as proven
    for k, r in honest.items():
        assert liar in r["excluded"], (k, r["verification"])
        assert liar in r["bounded"]["proven_liars"], (k, r["bounded"])
