"""What a flood of unconfirmable proofs of fraud costs an honest node.

Two colluding insiders ``a0`` and ``a2`` sign false accusations: ``wrong-answer`` proofs whose
opening is consistent and true (the accused signed it: its accomplice ``a0``, or an honest node
whose signed openings an insider received by challenging it), so that no checker's model confirms
them, and post them to the honest node ``a1``. Every proof is well signed and distinct (another
leaf or round), so each one passes every check of ``/v1/proof`` that needs no model query.

For flood sizes ``F`` it runs the real :class:`~fairprobe.collab.net.node.Node` of ``a1``
in-process (its SQLite store, Ed25519 signatures, its model backend: the bundled population
``civil-near-fair``) -- ``accept_proof`` for every proof, as the HTTP service calls it, then the
proof check of one round (``_process_proofs``) -- and records the model queries ``a1`` spends on
proofs, the proofs it stores, the requests it refuses and the CPU time, with the node's
:class:`~fairprobe.collab.verify.ProofBudget` (default cap) and without one (every proof stored
and checked, for comparison).

    .venv/bin/python experiments/collab/proof_flood.py

Writes ``experiments/results/collab/proof_flood.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from fairprobe.collab.net.config import AuditConfig, NodeConfig, VerifyNodeConfig
from fairprobe.collab.net.driver import Driver
from fairprobe.collab.net.keys import Ed25519Signer, generate_keypair, load_private_key
from fairprobe.collab.net.messages import ProofMessage
from fairprobe.collab.net.node import Node
from fairprobe.collab.net.roster import Member, Roster
from fairprobe.collab.net.service import Refused
from fairprobe.collab.verify import DEFAULT_PROOF_CAP, FraudProof, ProofBudget

OUT = Path(__file__).resolve().parents[1] / "results" / "collab" / "proof_flood.json"
CASE = "civil-near-fair"
IDS = ["a0", "a1", "a2", "a3", "a4", "a5"]
INSIDERS = ("a0", "a2")
EDGES = {"a0": ("a1", "a2"), "a1": ("a0", "a3"), "a2": ("a0", "a4", "a5"),
         "a3": ("a1", "a4"), "a4": ("a2", "a3", "a5"), "a5": ("a2", "a4")}


class Unbudgeted(ProofBudget):
    """Every proof stored and checked (what a node without a budget does)."""

    def admit(self, challenger: str | None, accused: str, digest: str) -> str | None:
        return None

    def charge(self, challenger: str, round_: int) -> bool:
        return False


class Net:
    """Keys, roster and node configs of six members (``a0 .. a5``) in ``tmp``."""

    def __init__(self, tmp: Path, *, n: int, rounds: int) -> None:
        self.tmp, self.n, self.rounds = tmp, n, rounds
        kps = {i: generate_keypair(tmp / "k" / i) for i in IDS}
        self.kps = kps
        self.signers = {i: Ed25519Signer(i, load_private_key(kps[i].private_path)) for i in IDS}
        self.roster = Roster(tuple(Member(i, kps[i].public_key_b64, "127.0.0.1", 9600 + k,
                                          EDGES[i]) for k, i in enumerate(IDS)))
        self.rp = self.roster.write(tmp / "roster.toml")

    def node(self, i: str, state: str) -> Node:
        """A fresh node ``i`` with its own state database ``<state>-<i>.sqlite``."""
        cfg = NodeConfig(
            id=i, key=self.kps[i].private_path, roster=self.rp,
            state_db=self.tmp / f"{state}-{i}.sqlite",
            audit=AuditConfig(n=self.n, rounds=self.rounds),
            query_set={"kind": "population", "case": CASE, "honest": len(IDS), "alpha": 1.0,
                       "seed": 0, "index": IDS.index(i)},
            backend={"kind": "population", "case": CASE,
                     "cache": str(self.tmp / f"{state}-{i}.answers.sqlite")},
            verify=VerifyNodeConfig(enabled=True),
        )
        s = self.signers[i]
        return Node(cfg, self.roster, s, Driver(cfg, self.roster, s, self.roster.verifier()))

    def stamped(self) -> dict[str, Node]:
        """Every member's node after ``rounds`` rounds (entries with records roots)."""
        nodes = {i: self.node(i, "src") for i in IDS}
        for t in range(1, self.rounds + 1):
            for node in nodes.values():
                e = node.driver.local_step(t)
                node.store.save_stamped(t, node._checkpoint_state(), e.counts.as_tuple(), e.sig)
                node.driver.end_round()
        return nodes


def close(node: Node) -> None:
    node.store.close()
    node.driver.close()


def false_proofs(nodes: dict[str, Node], signers: dict[str, Any], count: int) -> list[dict[str, Any]]:
    """``count`` distinct, well-signed ``wrong-answer`` proofs that no model confirms: each
    insider accuses the other insider and the honest nodes other than the target ``a1``,
    round-robin over accused, rounds and leaves."""
    pairs = [(c, u) for c in INSIDERS for u in IDS if u not in (c, "a1")]
    streams = []
    for c, u in pairs:
        node = nodes[u]
        rounds = node.cfg.audit.rounds

        def gen(c: str = c, node: Node = node, rounds: int = rounds) -> Iterator[dict[str, Any]]:
            for r in range(rounds, 0, -1):
                counts, esig = node.store.own_entry(r)
                m = counts[1] + counts[3]
                for k in range(m):
                    op = node.driver.open_leaves(r, m, [k])[0]
                    yield FraudProof("wrong-answer", c, (r, *counts), esig, op,
                                     1 - op.answer).signed(signers[c]).to_dict()

        streams.append(gen())
    out: list[dict[str, Any]] = []
    for batch in itertools.zip_longest(*streams):
        for p in batch:
            if p is not None and len(out) < count:
                out.append(p)
        if len(out) >= count:
            break
    if len(out) < count:
        raise SystemExit(f"only {len(out)} distinct proofs: raise n or rounds")
    return out


def flood(target: Node, proofs: list[dict[str, Any]], *, budget: bool) -> dict[str, Any]:
    """Post every proof to ``target`` (as the HTTP service does), then check them (one round)."""
    if not budget:
        target.proof_budget = Unbudgeted()
    before = dict(target.counters)
    t0 = time.process_time()
    refused = 0
    for k, p in enumerate(proofs):
        sender = INSIDERS[k % 2]
        try:
            target.accept_proof(ProofMessage(sender=sender, proof=p))
        except Refused:
            refused += 1
    t1 = time.process_time()
    stored = len(target.store.proofs_pending())
    asyncio.run(target._process_proofs(1))
    t2 = time.process_time()
    d = {k: target.counters[k] - before.get(k, 0) for k in target.counters}
    return {
        "flood": len(proofs), "budget": budget, "refused": refused, "stored": stored,
        "proof_queries": d.get("verify:proof-queries", 0), "reasked": d.get("verify:reasked", 0),
        "not_confirmed": d.get("verify:proof-not-confirmed", 0),
        "dropped_unchecked": d.get("verify:proof-dropped-signer-blamed", 0),
        "blamed": sorted(target.proof_budget.blamed),
        "excluded": sorted(target.driver.excluded),
        "cpu_s_receive": round(t1 - t0, 4), "cpu_s_check": round(t2 - t1, 4),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--floods", default="0,10,100,1000,5000")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    sizes = [int(x) for x in args.floods.split(",")]
    rows = []
    with tempfile.TemporaryDirectory() as d:
        net = Net(Path(d), n=200, rounds=5)
        nodes = net.stamped()
        pool = false_proofs(nodes, net.signers, max(sizes))
        for node in nodes.values():
            close(node)
        for size in sizes:
            for budget in (True, False):
                target = net.node("a1", f"run{size}-{int(budget)}")
                row = flood(target, pool[:size], budget=budget)
                close(target)
                rows.append(row)
                print(json.dumps(row), flush=True)
    out = {
        "case": CASE, "cap": DEFAULT_PROOF_CAP, "insiders": list(INSIDERS), "target": "a1",
        "members": len(IDS),
        "bound": "proof queries <= (members - 1) * (cap + 1); stored <= one per (signer, accused)",
        "rows": rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
