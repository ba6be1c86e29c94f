"""The node's table handling in-process (no sockets): envelope checks, prechecks, core merge."""

from __future__ import annotations

import base64

import pytest

from fairprobe.collab.net.config import AuditConfig, NodeConfig
from fairprobe.collab.net.driver import Driver
from fairprobe.collab.net.keys import Ed25519Signer, entry_bytes, generate_keypair, load_private_key
from fairprobe.collab.net.messages import EntryMessage, TableMessage
from fairprobe.collab.net.node import Node
from fairprobe.collab.net.roster import Member, Roster
from fairprobe.collab.net.service import Refused

N = 10


@pytest.fixture
def net(tmp_path):
    ids = ["a0", "a1", "a2", "a3"]
    kps = {i: generate_keypair(tmp_path / "k" / i) for i in ids}
    signers = {i: Ed25519Signer(i, load_private_key(kps[i].private_path)) for i in ids}
    edges = {"a0": ("a1",), "a1": ("a0", "a2"), "a2": ("a1", "a3"), "a3": ("a2",)}
    roster = Roster(tuple(
        Member(i, kps[i].public_key_b64, "127.0.0.1", 9400 + k, edges[i])
        for k, i in enumerate(ids)
    ))
    roster.write(tmp_path / "roster.toml")
    cfg = NodeConfig(id="a1", key=kps["a1"].private_path, roster=tmp_path / "roster.toml",
                     state_db=tmp_path / "a1.sqlite", role="attacker",
                     audit=AuditConfig(n=N, rounds=5))
    node = Node(cfg, roster, signers["a1"], Driver(cfg, roster, signers["a1"], roster.verifier()))
    yield node, signers
    node.store.close()


def entry(s, r, c, *, auditor=None, sig=None):
    a, A, b, B = c
    sig = sig if sig is not None else s.sign(entry_bytes(auditor or s.auditor_id, r, *c))
    return EntryMessage(auditor=auditor or s.auditor_id, round=r, a=a, A=A, b=b, B=B,
                        sig=base64.b64encode(sig).decode())


def table(s, to, r, entries):
    unsigned = TableMessage.model_construct(sender=s.auditor_id, receiver=to, round=r,
                                            entries=entries, sig="")
    sig = base64.b64encode(s.sign(unsigned.envelope())).decode()
    m = TableMessage(sender=s.auditor_id, receiver=to, round=r, entries=entries, sig=sig)
    return m, m.model_dump_json()


def finish(node, t):
    """Merge and score round ``t`` and commit it, as the node's round loop does."""
    consumed = node._merge(t)
    node.driver.end_round()
    node.store.save_merged(t, node._checkpoint_state(), consumed, node.rejections,
                           node.counters)


def test_envelope_refusals(net):
    node, s = net
    m, body = table(s["a0"], "a1", 1, [])
    node.accept_table(m, body)                                   # fine
    for msg, status in [
        (table(s["a0"], "a2", 1, [])[0], 400),                    # misaddressed
        (table(s["a3"], "a1", 1, [])[0], 403),                    # not a neighbour
        (table(s["a0"], "a1", 6, [])[0], 422),                    # past the last round
        (m.model_copy(update={"round": 2}), 401),                 # envelope no longer matches
        (table(s["a2"], "a1", 1, [entry(s["a0"], 1, (0, 1, 0, 1))] * 2)[0], 422),  # duplicate
    ]:
        with pytest.raises(Refused) as exc:
            node.accept_table(msg, msg.model_dump_json())
        assert exc.value.status == status
    # a forged envelope: a0's table signed by a2's key
    forged = m.model_copy(update={"sig": table(s["a2"], "a1", 1, [])[0].sig})
    with pytest.raises(Refused) as exc:
        node.accept_table(forged, forged.model_dump_json())
    assert exc.value.status == 401


def test_merge_counts_every_reason_and_keeps_only_true_entries(net):
    node, s = net
    node.driver.local_step(1)
    g0 = entry(s["a0"], 1, (2, 5, 1, 5))                       # genuine
    g2 = entry(s["a2"], 1, (3, 4, 2, 6))                       # genuine, relayed by a0
    m, body = table(s["a0"], "a1", 1, [g0, g2])
    node.accept_table(m, body)
    finish(node, 1)
    assert node.rejections == {}
    held = {e.auditor: e for e in node.driver.table()}
    assert held["a0"].counts.as_tuple() == (2, 5, 1, 5) and held["a2"].round == 1

    node.driver.local_step(2)
    # from a0, round 2: a forged entry of a2 (a0's signature), a3's entry under a2's signature
    m, body = table(s["a0"], "a1", 2, [
        entry(s["a0"], 2, (9, 15, 1, 5), auditor="a2"),
        entry(s["a3"], 2, (1, 3, 1, 3), sig=g2.signature),
    ])
    node.accept_table(m, body)
    # from a2, round 2: a tampered same-round copy of a0's entry, a > A, a shrinking count,
    # and a1's own entry of round 1 relayed back (older than held)
    m, body = table(s["a2"], "a1", 2, [
        entry(s["a0"], 1, (2, 5, 1, 6), sig=g0.signature),
        entry(s["a3"], 2, (4, 3, 0, 0)),
        entry(s["a2"], 2, (2, 8, 2, 8)),
        entry(s["a1"], 1, (0, 0, 0, 0)),
    ])
    node.accept_table(m, body)
    # from a0, a late (replayed) round-1 table: more than n * round queries, an entry newer than
    # its table, and a duplicate of a held entry
    m, body = table(s["a0"], "a1", 1, [
        entry(s["a3"], 1, (0, 11, 0, 11)),
        entry(s["a0"], 2, (2, 6, 1, 6)),
        g2,
    ])
    node.accept_table(m, body)
    # from a2, round 3: a0's genuine signature on bumped counts; waits in the inbox for round 3
    m3, body3 = table(s["a2"], "a1", 3, [entry(s["a0"], 3, (3, 9, 1, 6), sig=g0.signature)])
    node.accept_table(m3, body3)
    finish(node, 2)
    assert node.rejections == {
        "bad-signature": 3,
        "impossible-counts": 2,
        "shrinking-totals": 1,
        "bad-round": 1,
    }
    assert node.counters["stale-entries"] == 1 and node.counters["late-tables"] == 1
    held = {e.auditor: e for e in node.driver.table()}
    assert held["a0"].counts.as_tuple() == (2, 5, 1, 5)      # unchanged by every attempt
    assert held["a2"].counts.as_tuple() == (3, 4, 2, 6)
    assert "a3" not in held
    assert [(snd, r) for snd, r, _ in node.store.inbox()] == [("a2", 3)]
    node.driver.local_step(3)
    finish(node, 3)
    assert node.rejections["bad-signature"] == 4
    assert node.store.inbox() == []


def test_a_restarted_node_resumes_its_committed_state(net, tmp_path):
    node, s = net
    e = node.driver.local_step(1)
    node.store.save_stamped(1, node._checkpoint_state(), e.counts.as_tuple(), e.sig)
    m, body = table(s["a0"], "a1", 1, [entry(s["a0"], 1, (2, 5, 1, 5))])
    node.accept_table(m, body)                       # acknowledged, not merged: a crash here
    cfg, roster = node.cfg, node.roster
    node.store.close()

    def restart():
        d = Driver(cfg, roster, s["a1"], roster.verifier())
        return Node(cfg, roster, s["a1"], d)

    again = restart()
    assert again._resume() == (1, "stamped")
    assert [x.to_dict() for x in again.driver.table()] == [e.to_dict()]
    assert again.latest_from["a0"] == 1               # the stored table counts as received
    finish(again, 1)
    table_after = [x.to_dict() for x in again.driver.table()]
    assert [x["auditor"] for x in table_after] == ["a0", "a1"]
    again.store.close()
    third = restart()
    assert third._resume() == (1, "merged")
    assert [x.to_dict() for x in third.driver.table()] == table_after
    assert third.driver.core.to_dict() == again.driver.core.to_dict()
    assert third.store.own_entries() == [(1, *e.counts.as_tuple(), e.sig)]
    third.store.close()
