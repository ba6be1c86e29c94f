"""Verification of answers: Merkle sum tree, openings, proofs of fraud, and the
simulator hook. Guarantees checked: an opening verifies iff it is the committed leaf at its position
with consistent counts; a proof of fraud verifies with the signatures alone and is confirmed only by a
model answer that differs; honest sources are never excluded; sources that falsify answers are."""

from __future__ import annotations

import numpy as np
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from fairprobe.collab.net.keys import Ed25519Signer, Ed25519Verifier
from fairprobe.collab.simulate import SimConfig, simulate
from fairprobe.collab.verify import (
    CommittingSigner,
    CommittingVerifier,
    FraudProof,
    LeafLog,
    MerkleSumTree,
    Opening,
    VerifyConfig,
    assign_claimed_answers,
    challenge_allocation,
    challenge_indices,
    challenge_message,
    leaf_counts,
    root_from_path,
    salt_key,
    simulate_verification,
    split_signature,
    verify_opening,
)
from fairprobe.errors import ProtocolError


def _keys(*ids):
    ks = {i: Ed25519PrivateKey.generate() for i in ids}
    return {i: Ed25519Signer(i, k) for i, k in ks.items()}, Ed25519Verifier(
        {i: k.public_key() for i, k in ks.items()})


@pytest.mark.parametrize("m", [1, 2, 3, 4, 5, 7, 8, 9, 31, 64, 100])
def test_incremental_tree_equals_built_tree_and_every_path_verifies(m):
    rng = np.random.default_rng(m)
    hs = [rng.bytes(32) for _ in range(m)]
    c = leaf_counts(rng.integers(0, 2, m), rng.integers(0, 2, m))
    t = MerkleSumTree()
    i = 0
    while i < m:
        k = int(rng.integers(1, 5))
        t.append(hs[i:i + k], c[i:i + k])
        i += k
    built = MerkleSumTree.build(hs, c)
    assert t.root() == built.root() and t.total() == tuple(c.sum(axis=0).tolist())
    for k in range(m):
        assert root_from_path(k, m, hs[k], c[k].tolist(), t.path(k)) == (t.root(), t.total())
        if m > 1:  # the same leaf claimed at another position does not verify
            assert root_from_path((k + 1) % m, m, hs[k], c[k].tolist(), t.path(k)) != (
                t.root(), t.total())


def _log(signer, n=40, seed=0):
    rng = np.random.default_rng(seed)
    records = [{"query_id": int(q)} for q in rng.permutation(1000)[:n]]
    log = LeafLog(salt_key(signer), records)
    g = rng.integers(0, 2, n)
    y = rng.integers(0, 2, n)
    log.add(np.arange(n // 2), g[: n // 2], y[: n // 2])
    log.add(np.arange(n // 2, n), g[n // 2:], y[n // 2:])
    return log, records, g, y


def test_openings_verify_against_the_signed_entry_and_tampering_is_detected():
    signers, verifier = _keys("p", "c")
    log, records, g, y = _log(signers["p"])
    counts = log.tree.total()
    cs = CommittingSigner(signers["p"])
    cs.pending_root = log.root()
    sig = cs.sign_entry(3, *counts)
    cv = CommittingVerifier(verifier)
    assert cv.verify_entry("p", 3, *counts, sig)
    assert not cv.verify_entry("p", 3, counts[0] + 1, *counts[1:], sig)
    assert not cv.verify_entry("p", 3, *counts, split_signature(sig)[0])  # root required
    _, root = split_signature(sig)
    chal_sig = signers["c"].sign(challenge_message("p", 3, root))
    idx = challenge_indices(chal_sig, 40, 5)
    assert idx == challenge_indices(chal_sig, 40, 5) and len(set(idx)) == 5
    ops = log.open("p", 3, 40, idx, signers["p"])
    for op in ops:
        assert verify_opening(op, counts, root)
        assert verifier.verify("p", op.message(), op.sig)
        assert Opening.from_dict(op.to_dict()) == op
        flipped = Opening(op.auditor, op.round, op.m, op.index, op.record, op.group_a,
                          1 - op.answer, op.salt, op.path, op.sig)
        assert not verify_opening(flipped, counts, root)
        other = Opening(op.auditor, op.round, op.m, op.index, b'{"query_id":-1}', op.group_a,
                        op.answer, op.salt, op.path, op.sig)
        assert not verify_opening(other, counts, root)
    # an older root (fewer leaves) is opened from the same log
    old = log.tree_at(20)
    assert log.open("p", 2, 20, [3], signers["p"])[0].path == old.path(3)
    # the log survives a restart exactly
    log2 = LeafLog(log.salt_key, records)
    log2.load_state(log.to_state())
    assert log2.root() == log.root()


def test_a_proof_of_fraud_is_transferable_and_a_false_accusation_is_not_confirmed():
    signers, verifier = _keys("p", "c", "x")
    log, records, g, y = _log(signers["p"])
    counts = log.tree.total()
    cs = CommittingSigner(signers["p"])
    cs.pending_root = log.root()
    esig = cs.sign_entry(3, *counts)
    op = log.open("p", 3, 40, [7], signers["p"])[0]
    truth = 1 - op.answer  # the model answers otherwise: the leaf is falsified
    proof = FraudProof("wrong-answer", "c", (3, *counts), esig, op, truth).signed(signers["c"])
    again = FraudProof.from_dict(proof.to_dict())
    assert again.check_signatures(verifier) is None
    assert again.confirmed_by(truth) and not again.confirmed_by(op.answer)
    # someone else's signature, a tampered observation, a tampered entry: refused
    forged = FraudProof("wrong-answer", "x", (3, *counts), esig, op, truth,
                        proof.challenger_sig)
    assert forged.check_signatures(verifier) == "bad-challenger-signature"
    bad_entry = FraudProof("wrong-answer", "c", (3, counts[0] + 1, *counts[1:]), esig, op,
                           truth).signed(signers["c"])
    assert bad_entry.check_signatures(verifier) == "bad-entry-signature"
    same = FraudProof("wrong-answer", "c", (3, *counts), esig, op, op.answer).signed(signers["c"])
    assert same.check_signatures(verifier) == "no-mismatch-claimed"
    # an opening signed by the prover that does not match its root proves fraud by itself
    bad = Opening(op.auditor, op.round, op.m, op.index, op.record, op.group_a, 1 - op.answer,
                  op.salt, op.path).signed(signers["p"])
    bp = FraudProof("bad-opening", "c", (3, *counts), esig, bad, None).signed(signers["c"])
    assert bp.check_signatures(verifier) is None and bp.confirmed_by(None)
    # ... but a consistent opening cannot be passed off as a bad one
    fake = FraudProof("bad-opening", "c", (3, *counts), esig, op, None).signed(signers["c"])
    assert fake.check_signatures(verifier) == "opening-is-consistent"
    with pytest.raises(ProtocolError):
        FraudProof.from_dict({"kind": "nonsense"})


def test_claimed_answers_random_records_lie_least_chosen_records_never_lie():
    truth_a = np.array([1, 0, 0, 1, 0, 0, 0, 0])
    truth_b = np.array([0, 1, 1, 0, 1, 1])
    pa, ca, pb, cb = assign_claimed_answers((5, 6, 0, 4), truth_a, truth_b)
    assert ca.sum() == 5 and cb.sum() == 0 and len(pa) == 6 and len(pb) == 4
    lies = int((ca != truth_a[pa]).sum() + (cb != truth_b[pb]).sum())
    assert lies == abs(5 - truth_a[:6].sum()) + abs(0 - truth_b[:4].sum())
    pa, ca, pb, cb = assign_claimed_answers((2, 4, 2, 3), truth_a, truth_b, records="chosen")
    assert (ca == truth_a[pa]).all() and (cb == truth_b[pb]).all() and ca.sum() == 2


def test_challenge_allocation_spreads_the_budget_in_turn():
    nb = ["a", "b", "c", "d"]
    assert challenge_allocation(9, nb, 0) == {"a": 3, "b": 2, "c": 2, "d": 2}
    assert challenge_allocation(2, nb, 1) == {"b": 1, "c": 1}
    assert sum(challenge_allocation(2, nb, t).get("a", 0) for t in range(4)) == 2
    assert challenge_allocation(5, [], 0) == {}


def test_simulator_hook_matches_simulate_and_excludes_only_fabricators():
    cfg = SimConfig(case="bios-moderate", attackers=2, seed=4, honest=12)
    res = simulate_verification(cfg)
    plain = simulate(cfg)
    assert res["estimate"] == plain.estimates["auditopus"]
    assert res["robust"] == plain.estimates["robust"]
    assert all(r is not None and r <= 3 for r in res["first_proof_round"])
    assert res["extra_query_fraction"] <= 0.05
    # the verified estimate is as close to the truth as the honest data allow
    assert abs(res["estimate_verified"] - res["true_dp"]) < abs(res["estimate"] - res["true_dp"])
    assert simulate_verification(cfg) == res  # same seed, same result
    # the consistent liar (calibrated by the platform) is caught too
    cons = simulate_verification(SimConfig(case="bios-moderate", attackers=2, seed=4, honest=12,
                                           attack="consistent"))
    assert all(r is not None for r in cons["all_honest_excluded_round"])
    assert abs(cons["robust_verified"]) > 0.05 >= abs(cons["robust"])
    chosen = simulate_verification(cfg, VerifyConfig(records="chosen"))
    assert chosen["first_proof_round"] == [None, None]  # cannot catch truthful chosen records
    assert chosen["estimate_verified"] == chosen["estimate"]
    honest_only = simulate_verification(SimConfig(case="bios-moderate", attackers=0, seed=4,
                                                  honest=12))
    assert honest_only["estimate_verified"] == honest_only["estimate"]
