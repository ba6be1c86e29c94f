"""A flood of unconfirmable proofs of fraud costs an honest node a bounded number of queries.

Two colluding insiders sign false ``wrong-answer`` accusations of consistent, true openings (of
each other, and of an honest node whose openings one of them received), each one distinct and
well signed; the honest node's :class:`~fairprobe.collab.verify.ProofBudget` stores one per
(signer, accused), spends at most ``cap`` queries per signer on proofs that do not confirm, then
blames the signer and refuses or drops the rest unchecked. A true proof of another signer is
still confirmed. In-process nodes (SQLite stores, Ed25519 keys, the population backend).
"""

from __future__ import annotations

import asyncio
import importlib.util
import sys
from pathlib import Path

import pytest

from fairprobe.collab.net.messages import ProofMessage
from fairprobe.collab.net.service import Refused
from fairprobe.collab.verify import FraudProof, Opening, ProofBudget
from fairprobe.errors import InvalidParameterError

_SPEC = importlib.util.spec_from_file_location(
    "proof_flood", Path(__file__).resolve().parents[3] / "experiments" / "collab" / "proof_flood.py")
assert _SPEC is not None and _SPEC.loader is not None
flood_mod = importlib.util.module_from_spec(_SPEC)
sys.modules["proof_flood"] = flood_mod
_SPEC.loader.exec_module(flood_mod)


@pytest.fixture(scope="module")
def pool(tmp_path_factory):
    net = flood_mod.Net(tmp_path_factory.mktemp("flood"), n=40, rounds=2)
    nodes = net.stamped()
    proofs = flood_mod.false_proofs(nodes, net.signers, 300)
    # a true proof of an honest challenger (a3) against a0: a leaf with its answer flipped
    a0 = nodes["a0"]
    counts, esig = a0.store.own_entry(1)
    op = a0.driver.open_leaves(1, counts[1] + counts[3], [0])[0]
    bad = Opening(op.auditor, op.round, op.m, op.index, op.record, op.group_a, 1 - op.answer,
                  op.salt, op.path).signed(net.signers["a0"])
    true = FraudProof("bad-opening", "a3", (1, *counts), esig, bad, None).signed(
        net.signers["a3"]).to_dict()
    for node in nodes.values():
        flood_mod.close(node)
    return net, proofs, true


@pytest.mark.parametrize("size", [30, 300])
def test_an_honest_nodes_cost_does_not_grow_with_the_flood(pool, size):
    net, proofs, true = pool
    target = net.node("a1", f"t{size}")
    try:
        row = flood_mod.flood(target, proofs[:size], budget=True)
        cap = target.proof_budget.cap
        # at most cap queries per insider, one stored proof per (signer, accused) pair
        assert row["proof_queries"] == 2 * cap, row
        assert row["stored"] == 8 and row["refused"] == size - 8
        assert row["blamed"] == ["a0", "a2"] and row["excluded"] == []
        # a blamed signer's later proofs are refused on receipt
        with pytest.raises(Refused) as exc:
            target.accept_proof(ProofMessage(sender="a0", proof=proofs[-1]))
        assert exc.value.status == 429
        # the budget never stops a true proof of another signer
        target.accept_proof(ProofMessage(sender="a3", proof=true))
        asyncio.run(target._process_proofs(2))
        assert "a0" in target.driver.excluded
    finally:
        flood_mod.close(target)


def test_without_the_budget_the_cost_is_one_query_per_proof(pool):
    net, proofs, _ = pool
    target = net.node("a1", "nobudget")
    try:
        row = flood_mod.flood(target, proofs[:60], budget=False)
        assert row["proof_queries"] == 60 and row["stored"] == 60
    finally:
        flood_mod.close(target)


def test_budget_rules_and_state():
    b = ProofBudget(2)
    assert b.admit("x", "y", "d1") is None
    b.taken("x", "y", "d1")
    assert b.admit("x", "y", "d1") is None  # a relayed copy of the same proof
    assert b.admit("x", "y", "d2") == "proof-pair-taken"
    assert b.admit(None, "y", "e1") is None  # equivocation proofs: one per accused
    assert not b.charge("x", 1) and b.charge("x", 2) and not b.charge("x", 3)
    assert b.admit("x", "z", "d3") == "proof-signer-blamed"
    assert ProofBudget.from_dict(b.to_dict()) == b
    with pytest.raises(InvalidParameterError):
        ProofBudget(0)
