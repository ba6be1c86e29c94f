"""A liar cannot turn the verification layer into a weapon (real node processes, 127.0.0.1).

Guarantees checked:

1. a liar whose committed records the model refuses (a query id outside the population, a
   record without one) and that answers challenges with genuine signed openings is excluded on
   a ``refused-record`` proof; every honest node finishes with a verdict and excludes no
   honest node;
2. a proof of fraud from another audit over the same roster and keys (signed under another
   audit id) is refused on receipt as a bad signature and excludes nobody, although the same
   proof signed in this audit would check;
3. a node's own signed entry from another audit, relayed by a neighbour, is not taken for lost
   state: the node finishes with a verdict (no exit 4);
4. an author's two entries of one round with the same counts and different records roots, or
   with different counts, are ``equivocation`` (never ``bad-signature``: the committed
   96-byte signatures are checked with the committing verifier); the node that sees it
   excludes the author as proven and forwards the two signed entries as a proof, on which
   every other honest node excludes it too.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import time

import httpx
import pytest

from fairprobe.collab.net.config import load_node_config
from fairprobe.collab.net.keys import Ed25519Signer, load_private_key
from fairprobe.collab.net.launcher import DemoSpec, LocalNetwork
from fairprobe.collab.net.messages import EntryMessage, TableMessage
from fairprobe.collab.net.node import audit_id
from fairprobe.collab.verify import (
    FraudProof,
    MerkleSumTree,
    Opening,
    committed_entry_bytes,
    leaf_counts,
    leaf_hash,
)

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


# -- 2-4: another audit's signatures, and equivocations -------------------------------------------
def _signer(net: LocalNetwork, nid: str, context: bytes) -> Ed25519Signer:
    cfg = load_node_config(net.procs[nid].config)
    return Ed25519Signer(nid, load_private_key(cfg.key), context=context)


def _entry(s: Ed25519Signer, r: int, c: tuple[int, int, int, int], root: bytes) -> EntryMessage:
    sig = bytes(s.sign(committed_entry_bytes(s.auditor_id, r, *c, root))) + root
    a, A, b, B = c
    return EntryMessage(auditor=s.auditor_id, round=r, a=a, A=A, b=b, B=B,
                        sig=base64.b64encode(sig).decode())


def _table(s: Ed25519Signer, to: str, r: int, entries: list[EntryMessage]) -> bytes:
    unsigned = TableMessage.model_construct(sender=s.auditor_id, receiver=to, round=r,
                                            entries=entries, sig="")
    sig = base64.b64encode(s.sign(unsigned.envelope())).decode()
    return TableMessage(sender=s.auditor_id, receiver=to, round=r, entries=entries,
                        sig=sig).model_dump_json().encode()


def _post(url: str, body: bytes) -> int:
    return httpx.post(url, content=body, headers={"content-type": "application/json"},
                      timeout=10, trust_env=False).status_code


def _wrong_answer_proof(accused: Ed25519Signer, challenger: Ed25519Signer) -> FraudProof:
    """A complete ``wrong-answer`` proof: one committed leaf, answer 1, the model said 0."""
    nid = accused.auditor_id
    record, salt = json.dumps({"query_id": 5}).encode(), b"\x02" * 16
    tree = MerkleSumTree.build([leaf_hash(record, True, 1, salt)], leaf_counts([1], [1]))
    root, counts = tree.root(), (1, 1, 0, 0)
    esig = bytes(accused.sign(committed_entry_bytes(nid, 1, *counts, root))) + root
    op = Opening(nid, 1, 1, 0, record, True, 1, salt, tree.path(0)).signed(accused)
    return FraudProof("wrong-answer", challenger.auditor_id, (1, *counts), esig, op, 0
                      ).signed(challenger)


def test_another_audits_signatures_exclude_nobody_and_equivocations_are_proven(tmp_path):
    spec = DemoSpec(honest=5, attackers=0, seed=3, case=CASE, n=200, rounds=3,
                    round_timeout=60, verify=True, verify_rate=0.0)
    with LocalNetwork(spec, tmp_path / "net") as net:
        net.write()
        assert net.roster is not None
        here = net.audit_id()
        cfg0 = load_node_config(net.procs[sorted(net.procs)[0]].config)
        other = audit_id(dataclasses.replace(
            cfg0, audit=dataclasses.replace(cfg0.audit, label="an-earlier-audit")), net.roster)
        assert other != here
        ids = sorted(net.procs)
        # the ghost: a roster member the test plays (its process never starts)
        ghost = max(ids, key=lambda k: len(net.roster.member(k).neighbours))
        started = [k for k in ids if k != ghost]
        t_node = net.roster.member(ghost).neighbours[0]
        victim = next(k for k in net.roster.member(ghost).neighbours if k != t_node)
        accused = next(k for k in started if k not in (victim, t_node))
        challenger = next(k for k in started if k != accused)
        last = cfg0.audit.rounds + cfg0.audit.closing
        # T excludes the ghost at its round-2 merge and delivers the proof before it posts its
        # round-3 table; a neighbour of T merges round 3 only once it holds that table, so it
        # has the proof by its last merge (round 3 here) whatever the machine's load
        assert last >= 3
        assert all(k in net.roster.member(t_node).neighbours for k in started if k != t_node)
        net.start(started)
        deadline = time.monotonic() + 60
        while any(net.status(k) is None for k in started) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert all(net.status(k) is not None for k in started), "a node did not start serving"
        url = {k: net.roster.member(k).url for k in ids}

        r1, r2, r3 = b"\x01" * 32, b"\x02" * 32, b"\x03" * 32
        # (until the ghost sends its tables, its neighbours wait for it: in round 1, the victim
        # in round 2 once it holds the ghost's round-1 table of 3.)
        # 3. the victim's own round-1 entry from another audit, relayed by a neighbour: the
        # ghost, in its round-1 table. Never in a table signed with a started node's key: a
        # table of a later round from that node would end the victim's waits for it, and the
        # victim could finish its last round before the proof that node sends ahead of its
        # next table reaches it
        old_entry = _entry(_signer(net, victim, other), 1, (3, 40, 5, 40), r1)
        body = _table(_signer(net, ghost, here), victim, 1, [old_entry])
        assert _post(url[victim] + "/v1/table", body) == 204

        # 2. a complete proof against an honest node, from another audit with the same keys
        old = _wrong_answer_proof(_signer(net, accused, other), _signer(net, challenger, other))
        assert old.check_signatures(net.roster.verifier(other)) is None  # valid where made
        new = _wrong_answer_proof(_signer(net, accused, here), _signer(net, challenger, here))
        assert new.check_signatures(net.roster.verifier(here)) is None  # would check here
        for k in [x for x in started if x not in (accused, challenger)][:2]:
            msg = json.dumps({"sender": challenger, "proof": old.to_dict()}).encode()
            assert _post(url[k] + "/v1/proof", msg) == 422
        # 4. (the nodes wait for the ghost until now) equivocations by the ghost, sent to its
        # neighbour T round by round
        g = _signer(net, ghost, here)
        c = (10, 40, 20, 40)
        # round 2: other counts (the core's check), round 3: the same counts, another root
        # (the precheck; it runs before the exclusion the first one caused)
        for r, e in ((1, _entry(g, 1, c, r1)), (2, _entry(g, 1, (11, 40, 20, 40), r3)),
                     (3, _entry(g, 1, c, r2))):
            assert _post(url[t_node] + "/v1/table", _table(g, t_node, r, [e])) == 204
        for u in net.roster.member(ghost).neighbours:  # nobody waits for the ghost
            if u != t_node or last > 3:
                assert _post(url[u] + "/v1/table",
                             _table(g, u, last, [_entry(g, 1, c, r1)])) == 204

        results = net.wait(timeout=240)

    assert set(results) == set(started)  # every started node finished (no exit 4, no crash)
    for k, r in results.items():
        # the equivocating ghost is excluded by the node that saw it equivocate, and by every
        # other node on the two signed entries it forwarded as a proof
        assert set(r["excluded"]) == {ghost}, (k, r["excluded"], r["verification"],
                                                r["rejected"], r["timeouts"], r["refused"])
        if k != t_node:
            assert r["verification"].get("excluded", 0) >= 1, (k, r["verification"])
        assert "state-lost" not in r["refused"], (k, r["refused"])
        assert r["finding"]["verdict"] in ("fair", "unfair", "undetermined")
    refused = sum(r["verification"].get("proof-refused:bad-entry-signature", 0)
                  for r in results.values())
    assert refused == 2, {k: (r["verification"], r["refused"], r["timeouts"]) for k, r in results.items()}
    rej = results[t_node]["rejected"]
    assert rej.get("equivocation", 0) == 2, rej
    assert rej.get("bad-signature", 0) == 0, rej
    assert results[t_node]["verification"].get("excluded-equivocation") == 1
    assert ghost in results[t_node]["bounded"]["proven_liars"]
