"""The node's verification and state checks in-process (no sockets): challenges answered with
openings of the committed root, proofs of fraud checked (forged ones refused, false accusations
not confirmed by the model, proven ones excluding the source), and own entries relayed back that
the state database does not hold (state lost)."""

from __future__ import annotations

import asyncio
import base64

import pytest

from fairprobe.collab.net.config import AuditConfig, NodeConfig, VerifyNodeConfig
from fairprobe.collab.net.driver import Driver
from fairprobe.collab.net.keys import Ed25519Signer, generate_keypair, load_private_key
from fairprobe.collab.net.messages import ChallengeMessage, EntryMessage, ProofMessage, TableMessage
from fairprobe.collab.net.node import Node, NodeStateLostError
from fairprobe.collab.net.roster import Member, Roster
from fairprobe.collab.net.service import Refused
from fairprobe.collab.verify import (
    CommittingSigner,
    FraudProof,
    Opening,
    challenge_count,
    challenge_message,
    leaf_counts,
    leaf_hash,
    prefix_root,
    split_signature,
    verify_opening,
)
from fairprobe.errors import ProtocolError

CASE = "civil-near-fair"


@pytest.fixture
def trio(tmp_path):
    ids = ["a0", "a1", "a2"]
    kps = {i: generate_keypair(tmp_path / "k" / i) for i in ids}
    signers = {i: Ed25519Signer(i, load_private_key(kps[i].private_path)) for i in ids}
    edges = {"a0": ("a1",), "a1": ("a0", "a2"), "a2": ("a1",)}
    roster = Roster(tuple(
        Member(i, kps[i].public_key_b64, "127.0.0.1", 9500 + k, edges[i])
        for k, i in enumerate(ids)
    ))
    rp = roster.write(tmp_path / "roster.toml")
    nodes = {}
    for k, i in enumerate(ids[:2]):
        cfg = NodeConfig(
            id=i, key=kps[i].private_path, roster=rp, state_db=tmp_path / f"{i}.sqlite",
            audit=AuditConfig(n=50, rounds=5),
            query_set={"kind": "population", "case": CASE, "honest": 3, "alpha": 1.0,
                       "seed": 0, "index": k},
            backend={"kind": "population", "case": CASE,
                     "cache": str(tmp_path / f"{i}.answers.sqlite")},
            verify=VerifyNodeConfig(enabled=True),
        )
        nodes[i] = Node(cfg, roster, signers[i], Driver(cfg, roster, signers[i],
                                                        roster.verifier()))
    yield nodes, signers
    for n in nodes.values():
        n.store.close()
        n.driver.close()


def _stamp(node, t):
    e = node.driver.local_step(t)
    node.store.save_stamped(t, node._checkpoint_state(), e.counts.as_tuple(), e.sig)
    return e


def _challenge(signers, by, prover, e, count=2, lo=0):
    _, root = split_signature(e.sig)
    sig = signers[by].sign(challenge_message(prover, e.round, root))
    m = e.counts.A + e.counts.B
    return ChallengeMessage(challenger=by, prover=prover, round=e.round, m=m, lo=lo,
                            count=count, root=base64.b64encode(root).decode(),
                            sig=base64.b64encode(sig).decode()), root


def test_a_challenge_is_answered_with_openings_of_the_committed_root(trio):
    nodes, s = trio
    a0 = nodes["a0"]
    e1 = _stamp(a0, 1)
    a0.driver.end_round()
    e2 = _stamp(a0, 2)
    m1 = e1.counts.A + e1.counts.B
    cap = challenge_count(a0.cfg.verify.rate, m1)  # ceil(4% of 50 new leaves) = 2
    msg, _ = _challenge(s, "a1", "a0", e1, count=cap + 1)
    with pytest.raises(Refused) as exc:  # more than ceil(rate d) of d new leaves
        a0.answer_challenge(msg)
    assert exc.value.status == 429
    msg, root1 = _challenge(s, "a1", "a0", e1, count=cap)
    ops = [Opening.from_dict(o) for o in a0.answer_challenge(msg)["openings"]]
    assert len(ops) == cap and all(op.index < m1 for op in ops)
    assert all(verify_opening(op, e1.counts.as_tuple(), root1) for op in ops)
    assert all(a0.verifier.verify("a0", op.message(), op.sig) for op in ops)
    # the next challenge starts where the last one stopped: new leaves and the link leaf
    msg, _ = _challenge(s, "a1", "a0", e2, count=cap, lo=0)
    with pytest.raises(Refused) as exc:  # not where a1's previous challenge stopped
        a0.answer_challenge(msg)
    assert exc.value.status == 429
    msg, root2 = _challenge(s, "a1", "a0", e2, count=cap, lo=m1)
    ops = [Opening.from_dict(o) for o in a0.answer_challenge(msg)["openings"]]
    # a retried challenge (its response lost) is served again, the same leaves
    again = [Opening.from_dict(o) for o in a0.answer_challenge(msg)["openings"]]
    assert [op.index for op in again] == [op.index for op in ops]
    assert [op.index for op in ops][0] == m1 - 1 and all(op.index >= m1 for op in ops[1:])
    assert len(ops) == cap + 1
    assert all(verify_opening(op, e2.counts.as_tuple(), root2) for op in ops)
    link = ops[0]
    leaf = leaf_hash(link.record, link.group_a, link.answer, link.salt)
    lc = leaf_counts([int(link.group_a)], [link.answer])[0].tolist()
    # the link's path reproduces the earlier root: the first m1 leaves were not rewritten
    assert prefix_root(m1 - 1, link.m, leaf, lc, link.path) == (root1, e1.counts.as_tuple())
    msg, _ = _challenge(s, "a2", "a0", e2)  # a2 is not a0's neighbour
    with pytest.raises(Refused) as exc:
        a0.answer_challenge(msg)
    assert exc.value.status == 403
    msg, _ = _challenge(s, "a1", "a0", e2)
    with pytest.raises(Refused) as exc:  # the signature does not cover this round
        a0.answer_challenge(msg.model_copy(update={"round": 1}))
    assert exc.value.status == 401
    with pytest.raises(Refused) as exc:  # a root a0 never committed
        bad_root = base64.b64encode(b"\x01" * 32).decode()
        sig = s["a1"].sign(challenge_message("a0", 2, b"\x01" * 32))
        a0.answer_challenge(msg.model_copy(update={"root": bad_root,
                                                   "sig": base64.b64encode(sig).decode()}))
    assert exc.value.status == 409


def _proof(nodes, s, kind, accuser, *, flip=False, observed=None):
    a0 = nodes["a0"]
    e = _stamp(a0, 1)
    msg, root = _challenge(s, "a1", "a0", e, count=1)
    op = Opening.from_dict(a0.answer_challenge(msg)["openings"][0])
    if flip:  # a0 signs an opening of a leaf it does not hold
        op = Opening(op.auditor, op.round, op.m, op.index, op.record, op.group_a,
                     1 - op.answer, op.salt, op.path).signed(s["a0"])
    return FraudProof(kind, accuser, (1, *e.counts.as_tuple()), e.sig, op,
                      observed).signed(s[accuser]), op


def test_forged_proofs_are_refused_and_false_accusations_are_not_confirmed(trio):
    nodes, s = trio
    a1 = nodes["a1"]
    proof, op = _proof(nodes, s, "wrong-answer", "a2", observed=None)
    false = FraudProof("wrong-answer", "a2", proof.entry, proof.entry_sig, op,
                       1 - op.answer).signed(s["a2"])
    forged = FraudProof(false.kind, "a2", false.entry, false.entry_sig, op, false.observed,
                        s["a1"].sign(false.message()))  # a2's proof under a1's signature
    with pytest.raises(Refused) as exc:
        a1.accept_proof(ProofMessage(sender="a2", proof=forged.to_dict()))
    assert exc.value.status == 422 and a1.store.proofs_pending() == []
    with pytest.raises(Refused) as exc:  # not a roster member
        a1.accept_proof(ProofMessage(sender="a9", proof=false.to_dict()))
    a1.accept_proof(ProofMessage(sender="a2", proof=false.to_dict()))
    asyncio.run(a1._process_proofs(1))
    assert a1.driver.excluded == {} and a1.counters["verify:proof-not-confirmed"] == 1
    assert a1.counters["verify:reasked"] == 1 and a1.store.proofs_pending() == []


def test_a_proven_fraud_excludes_the_source_and_all_its_contributions(trio):
    nodes, s = trio
    a1 = nodes["a1"]
    proof, _ = _proof(nodes, s, "bad-opening", "a2", flip=True)
    _stamp(a1, 1)
    a1.driver.merge([nodes["a0"].driver.core.own_entry()])
    a1.driver.end_round()
    k = a1.driver.core.index["a0"]
    assert a1.driver.core.W[k].sum() > 0
    a1.accept_proof(ProofMessage(sender="a2", proof=proof.to_dict()))
    asyncio.run(a1._process_proofs(1))
    assert a1.driver.excluded == {"a0": 1}
    assert a1.driver.core.W[k].sum() == 0 and a1.counters["verify:reasked"] == 0
    assert [e.auditor for e in a1.driver.table()] == ["a1"]  # no longer relayed
    st = a1.driver.to_state()
    fresh = Driver(a1.cfg, a1.roster, s["a1"], a1.roster.verifier())
    fresh.load_state(st)  # survives a restart
    assert fresh.excluded == {"a0": 1} and fresh.core.W[k].sum() == 0
    fresh.close()


def _own_table(s, sender, to, r, entries):
    unsigned = TableMessage.model_construct(sender=sender, receiver=to, round=r, entries=entries,
                                            sig="")
    sig = base64.b64encode(s[sender].sign(unsigned.envelope())).decode()
    m = TableMessage(sender=sender, receiver=to, round=r, entries=entries, sig=sig)
    return m, m.model_dump_json()


def test_own_entries_the_state_does_not_hold_mean_lost_state(trio):
    nodes, s = trio
    a0 = nodes["a0"]
    e1 = _stamp(a0, 1)
    own = EntryMessage(**e1.to_dict())
    m, body = _own_table(s, "a1", "a0", 1, [own])
    a0.accept_table(m, body)  # its own entry, as held: fine
    assert a0.fatal is None
    # a forgery of a0's entry of round 5 (signed by a1): not evidence, rejected later
    cs1 = CommittingSigner(s["a1"])
    cs1.auditor_id = "a0"
    forged = EntryMessage(auditor="a0", round=5, a=1, A=2, b=1, B=2,
                          sig=base64.b64encode(cs1.sign_entry(5, 1, 2, 1, 2)).decode())
    m, body = _own_table(s, "a1", "a0", 5, [forged])
    a0.accept_table(m, body)
    assert a0.fatal is None
    # a0's genuine signature on round 4, which its database does not hold
    cs0 = CommittingSigner(s["a0"])
    genuine = EntryMessage(auditor="a0", round=4, a=1, A=2, b=1, B=2,
                           sig=base64.b64encode(cs0.sign_entry(4, 1, 2, 1, 2)).decode())
    m, body = _own_table(s, "a1", "a0", 4, [genuine])
    with pytest.raises(Refused) as exc:
        a0.accept_table(m, body)
    assert exc.value.status == 409
    assert isinstance(a0.fatal, NodeStateLostError) and "round 4" in str(a0.fatal)
    cfg, roster = a0.cfg, a0.roster
    a0.store.close()
    with pytest.raises(NodeStateLostError, match="state is behind"):
        Node(cfg, roster, s["a0"], Driver(cfg, roster, s["a0"], roster.verifier()))


def test_a_restart_recommits_the_same_records_root(trio):
    """Killed before its entry of round 2 was committed, a node redoes the round from its state of
    round 1 and signs the very same entry (same records, answers from the cache, same salts)."""
    nodes, s = trio
    a0 = nodes["a0"]
    _stamp(a0, 1)
    a0.driver.end_round()
    state = a0.driver.to_state()
    e2 = a0.driver.local_step(2)
    again = Driver(a0.cfg, a0.roster, s["a0"], a0.roster.verifier())
    again.load_state(state)
    assert again.log.root() == split_signature(
        a0.store.own_entry(1)[1])[1]  # the root of round 1, rebuilt from the persisted leaves
    e2b = again.local_step(2)
    assert e2b == e2 and split_signature(e2b.sig)[1] is not None
    again.close()


def test_an_attacker_node_backs_its_counts_with_leaves_and_restarts_the_same(tmp_path):
    from fairprobe.collab.verify import verify_opening as vo

    kp = generate_keypair(tmp_path / "k")
    signer = Ed25519Signer("x0", load_private_key(kp.private_path))
    kp2 = generate_keypair(tmp_path / "k2")
    roster = Roster((Member("x0", kp.public_key_b64, "127.0.0.1", 9601, ("x1",)),
                     Member("x1", kp2.public_key_b64, "127.0.0.1", 9602, ("x0",))))
    rp = roster.write(tmp_path / "roster.toml")
    cfg = NodeConfig(id="x0", key=kp.private_path, roster=rp, state_db=tmp_path / "x0.sqlite",
                     role="attacker", audit=AuditConfig(n=40, rounds=5),
                     query_set={"kind": "population-pool", "case": CASE, "seed": 3},
                     verify=VerifyNodeConfig(enabled=True))
    d = Driver(cfg, roster, signer, roster.verifier())
    e1 = d.local_step(1)
    d.end_round()
    state = d.to_state()
    e2 = d.local_step(2)
    assert d.log.tree.total() == e2.counts.as_tuple()  # the leaves add up to the counts
    # its leaves open consistently (and carry falsified answers where its counts needed them)
    ops = d.open_leaves(2, e2.counts.A + e2.counts.B, list(range(10)))
    root = split_signature(e2.sig)[1]
    assert all(vo(op, e2.counts.as_tuple(), root) for op in ops)
    again = Driver(cfg, roster, signer, roster.verifier())
    again.load_state(state)
    assert again.local_step(2) == e2 and e1.round == 1
    again.close()
    d.close()


def test_a_model_identity_error_is_not_a_refusal_of_the_record() -> None:
    """A server answering for another model (or a model swapped mid-audit) refuses every record
    alike: a challenger never turns that into a proof against the record's author."""
    from fairprobe.collab.verify import is_refusal
    from fairprobe.errors import AccessError, ModelIdentityError

    assert not is_refusal(ModelIdentityError("the model changed during the audit"))
    assert is_refusal(AccessError("a query_id lies outside population"))


def test_an_equivocation_proof_checks_two_signed_entries_of_one_round(tmp_path):
    from fairprobe.collab.net.keys import Ed25519Verifier
    from fairprobe.collab.verify import EquivocationProof, committed_entry_bytes, proof_from_dict

    kp = generate_keypair(tmp_path / "e")
    here, other = b"audit-1", b"audit-2"
    s = Ed25519Signer("x0", load_private_key(kp.private_path), context=here)
    v = Ed25519Verifier({"x0": s._key.public_key()}, context=here)
    r1, r2 = b"\x01" * 32, b"\x02" * 32

    def signed(c: tuple[int, int, int, int], root: bytes, signer: Ed25519Signer = s) -> bytes:
        return bytes(signer.sign(committed_entry_bytes("x0", 3, *c, root))) + root

    c = (5, 40, 9, 50)
    for second in ((c, r2), ((6, 40, 9, 50), r1)):  # another root; other counts
        p = EquivocationProof("x0", 3, c, signed(c, r1), second[0], signed(*second))
        assert p.check_signatures(v) is None
        q = proof_from_dict(p.to_dict())
        assert q == p and q.message() == p.message() and q.accused == "x0"
    same = EquivocationProof("x0", 3, c, signed(c, r1), c, signed(c, r1))
    assert same.check_signatures(v) == "not-an-equivocation"
    forged = EquivocationProof("x0", 3, c, signed(c, r1), (6, 40, 9, 50), signed(c, r2))
    assert forged.check_signatures(v) == "bad-entry-signature"  # counts not the signed ones
    s2 = Ed25519Signer("x0", load_private_key(kp.private_path), context=other)
    replayed = EquivocationProof("x0", 3, c, signed(c, r1, s2), c, signed(c, r2, s2))
    assert replayed.check_signatures(v) == "bad-entry-signature"  # another audit's pair
    with pytest.raises(ProtocolError):
        proof_from_dict({"kind": "equivocation", "auditor": "x0"})
