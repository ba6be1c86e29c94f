"""The auditor node: synchronous gossip rounds over HTTP around the sans-I/O protocol core.

Each round ``t`` (``collaborative-auditing-auditopus.md``, Section III-C, Algorithm 1):

1. *local step* -- an honest node draws its next ``n`` queries, asks the model through the access
   layer (answers cached, so a restart never pays twice) and adds the counts to its own vector;
   an attacker fabricates its increment (Algorithm 2). The new own entry is signed and stamped
   with ``t``; the state and the entry are committed (phase ``stamped``).
2. *send* -- the table (every entry held, each with its author's signature) goes to every
   neighbour, in a message signed by the sender. Each neighbour gets every table, in round order,
   each retried until acknowledged.
3. *wait* -- until every neighbour's table for round ``t`` (or a later one) is held, or
   ``timeouts.round`` seconds have passed.
4. *merge, score* -- every stored table of a round ``<= t`` is merged entry by entry (each entry
   verified first, :mod:`fairprobe.collab.net.validate`); tables of later rounds wait for their
   round, so that in a run without faults a node merges exactly what the simulator merges. A
   table that arrives after its round is merged at the next merge: the round comparison makes
   that safe. Then the core scores, weights and updates ``prev``; the state is committed
   (phase ``merged``) together with the removal of the consumed tables.

After the last round the node reports its estimate and verdict (an attacker reports 0, as in
Section VI-A), optionally POSTs the signed result to a collector, finishes delivering its last
table and stops.

Only tables leave a node: entries ``(auditor, round, a, A, b, B, sig)`` and the envelope
``(sender, receiver, round, sig)``. Queries, answers and estimates never go to a neighbour.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import logging
import signal
import socket
import sys
import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TextIO

import httpx
import uvicorn

from fairprobe.collab.net.config import NodeConfig
from fairprobe.collab.net.driver import Driver
from fairprobe.collab.net.keys import Ed25519Signer, load_private_key
from fairprobe.collab.net.messages import (
    ChallengeMessage,
    EntryMessage,
    NodeResult,
    ProofMessage,
    ResultMessage,
    TableMessage,
    max_body_bytes,
)
from fairprobe.collab.net.roster import Roster, load_roster, parse_address
from fairprobe.collab.net.service import Refused, create_app, header_timeout_protocol
from fairprobe.collab.net.store import NodeStore
from fairprobe.collab.net.validate import Reason, precheck
from fairprobe.collab.protocol import Entry
from fairprobe.errors import ConfigError, FairprobeError, PortInUseError, ProtocolError
from fairprobe.stats.counts import CountsVector

__all__ = ["Node", "NodeStateLostError", "NodeStopped", "audit_id", "run_node"]

log = logging.getLogger("fairprobe.collab.node")


class NodeStateLostError(ProtocolError):
    """The node's state is behind what its neighbours hold of it (lost or rolled-back database):
    it cannot rebuild its weights from them, so it gives no verdict."""

    exit_code = 4


class NodeStopped(FairprobeError):
    """The node was stopped by a signal; its state is saved and a rerun resumes it."""

    exit_code = 143


class _QuietServer(uvicorn.Server):
    """uvicorn without its own signal handling: the node decides when to stop."""

    @contextlib.contextmanager
    def capture_signals(self):  # type: ignore[no-untyped-def, override]
        yield


@dataclass
class _Mail:
    round: int
    body: bytes
    entries: int


class Node:
    """One auditor node (see the module docstring for the round structure)."""

    def __init__(
        self,
        cfg: NodeConfig,
        roster: Roster,
        signer: Ed25519Signer,
        driver: Driver,
        *,
        out: TextIO | None = None,
    ) -> None:
        if cfg.id not in roster:
            raise ConfigError(f"Node {cfg.id!r} is not in roster {cfg.roster}.")
        me = roster.member(cfg.id)
        if me.public_key_b64 != signer.public_key_b64:
            raise ConfigError(
                f"The key {cfg.key} does not match the public key of {cfg.id!r} in the roster."
            )
        self.cfg = cfg
        self.id = cfg.id
        self.roster = roster
        self.signer = signer
        self.driver = driver
        self.out = out if out is not None else sys.stdout
        self.neighbours: tuple[str, ...] = me.neighbours
        # the audit id every signature binds (build_node: audit_id); the same for the checks
        self.verifier = roster.verifier(context=getattr(signer, "context", b""))
        self.max_body = max_body_bytes(len(roster))
        self.n = cfg.audit.n
        self.last_round = cfg.audit.rounds + cfg.audit.closing  # closing rounds: no queries
        listen = cfg.listen or me.address
        self.host, self.port = parse_address(listen, allow_remote=roster.allow_remote)
        self.store = NodeStore(cfg.state_db)
        self.store.bind(cfg.id, cfg.fingerprint())
        lost = self.store.lost()
        if lost is not None:
            self.store.close()
            raise NodeStateLostError(lost)
        self.fatal: FairprobeError | None = None
        self.entry_verifier: Any = driver._verifier
        self._client: httpx.AsyncClient | None = None
        self._bg: set[asyncio.Task[None]] = set()
        # (leaves, root, counts) of each neighbour's root when last challenged, and the
        # challenge rule (fairprobe.collab.verify.ChallengeCore, shared with the simulator)
        self._challenged: dict[str, tuple[int, bytes, tuple[int, ...]]] = {}
        from fairprobe.collab.verify import ChallengeCore

        self._challenge_core = ChallengeCore(float(cfg.verify.rate))
        # what this node spends on any one signer's proofs (ProofBudget: shared rule, no I/O)
        from fairprobe.collab.verify import ProofBudget

        self.proof_budget = ProofBudget(int(cfg.verify.proof_cap))
        self.rejections: Counter[str] = Counter(self.store.rejections())
        self.counters: Counter[str] = Counter(self.store.counters())
        self.latest_from: dict[str, int] = dict.fromkeys(self.neighbours, 0)
        self.round = 0
        self.phase = "start"
        self.done = False
        self._table_event: asyncio.Event | None = None
        self._stop: asyncio.Event | None = None
        self._queues: dict[str, deque[_Mail]] = {u: deque() for u in self.neighbours}
        self._mail_events: dict[str, asyncio.Event] = {}

    # -- TableSink (called by the HTTP service, in the event loop) ----------------------------
    def accept_table(self, msg: TableMessage, body: str) -> None:
        if msg.receiver != self.id:
            raise Refused(400, "misaddressed")
        if msg.sender not in self.latest_from:
            raise Refused(403, "not-a-neighbour")
        if msg.round > self.last_round:
            raise Refused(422, "round-out-of-range")
        if len(msg.entries) > len(self.roster):
            raise Refused(422, "too-many-entries")
        if len({e.auditor for e in msg.entries}) != len(msg.entries):
            raise Refused(422, "duplicate-auditor")
        if not self.verifier.verify(msg.sender, msg.envelope(), msg.signature):
            raise Refused(401, "bad-envelope-signature")
        self._check_own_entries(msg)
        self.store.inbox_put(msg.sender, msg.round, body)
        if msg.round > self.latest_from[msg.sender]:
            self.latest_from[msg.sender] = msg.round

    def _check_own_entries(self, msg: TableMessage) -> None:
        """A neighbour relays this node's own entry: it must be one this node's state holds.

        An entry signed with this node's key that the state database does not hold (or holds
        otherwise) means the database was lost, replaced or rolled back: the node stops and
        refuses to give a verdict (its weights cannot be rebuilt from what neighbours hold).
        """
        for e in msg.entries:
            if e.auditor != self.id:
                continue
            a, A, b, B = e.counts
            if not self.entry_verifier.verify_entry(self.id, e.round, a, A, b, B, e.signature):
                return  # not signed by this node: a forgery, rejected at merge
            mine = self.store.own_entry(e.round)
            held = self.driver.held_round(self.id)
            if e.round <= held and (mine is None or mine == ((a, A, b, B), e.signature)):
                return
            why = (
                f"node {self.id}'s state is behind what its neighbours hold of it: {msg.sender} "
                f"relays its signed entry of round {e.round}, its state database "
                f"{self.cfg.state_db} holds rounds up to {held}"
                + ("" if mine is None else " and another entry for that round")
                + "; the state was lost or rolled back and cannot be rebuilt from the neighbours,"
                " so this node gives no verdict (restore the database, or rerun the audit with "
                "fresh state on every node)"
            )
            self.store.mark_lost(why)
            self.fatal = NodeStateLostError(why)
            if self._stop is not None:
                self._stop.set()
            raise Refused(409, "state-lost")

    def count_refusal(self, reason: str) -> None:
        self.counters[f"refused:{reason}"] += 1

    def status(self) -> dict[str, Any]:
        return {"id": self.id, "round": self.round, "phase": self.phase, "done": self.done}

    def _notify(self) -> None:
        if self._table_event is not None:
            self._table_event.set()

    # -- wire ---------------------------------------------------------------------------------
    # -- verification of answers (fairprobe.collab.verify) -------------------------------------
    def answer_challenge(self, msg: ChallengeMessage) -> dict[str, Any]:
        from fairprobe.collab.verify import (
            challenge_indices,
            challenge_message,
            max_openings,
            split_signature,
        )

        if not self.driver.verifying:
            raise Refused(404, "verification-off")
        if msg.prover != self.id:
            raise Refused(400, "misaddressed")
        if msg.challenger not in self.latest_from:
            raise Refused(403, "not-a-neighbour")
        try:
            root = base64.b64decode(msg.root, validate=True)
        except ValueError:
            raise Refused(422, "malformed-challenge") from None
        sig = base64.b64decode(msg.sig)
        if not self.verifier.verify(msg.challenger, challenge_message(self.id, msg.round, root),
                                    sig):
            raise Refused(401, "bad-challenge-signature")
        mine = self.store.own_entry(msg.round)
        if mine is None:
            raise Refused(409, "no-such-round")
        counts, esig = mine
        if split_signature(esig)[1] != root or counts[1] + counts[3] != msg.m:
            raise Refused(409, "no-such-root")
        # a challenger opens ceil(rate d) of the d leaves new since its last challenge, plus
        # the link leaf: it must start where it stopped, so over the audit it sees at most
        # that share of the records (and one link per challenge), whatever it asks
        start = self.counters[f"verify:covered:{msg.challenger}"]
        prev = self.counters[f"verify:covered-from:{msg.challenger}"]
        # a retried challenge (same range: the same indices, nothing new revealed) is served
        # again, so a lost response never turns into a failed challenge
        replay = msg.m == start and msg.lo == prev and start > 0
        if (msg.lo != start and not replay) or msg.m <= msg.lo or msg.count > max_openings(
                self.cfg.verify.rate, msg.lo, msg.m) - (1 if msg.lo else 0):
            self.counters["verify:challenges-over-budget"] += 1
            raise Refused(429, "challenge-budget")
        if not replay:
            self.counters[f"verify:covered-from:{msg.challenger}"] = msg.lo
            self.counters[f"verify:covered:{msg.challenger}"] = msg.m
            self.counters[f"verify:served:{msg.challenger}"] += msg.count
        idx = challenge_indices(sig, msg.m, msg.count, lo=msg.lo)
        if self.cfg.role == "attacker" and self.cfg.verify.answers != "all":
            # an attacker that hides its falsified leaves
            keep = [] if self.cfg.verify.answers == "none" else [
                k for k in idx if self.driver.truthful_leaf(k)]
            idx = keep
        if msg.lo:
            idx = [msg.lo - 1, *idx]  # the link leaf (prefix consistency with the earlier root)
        with self.driver.lock:
            ops = self.driver.open_leaves(msg.round, msg.m, idx)
        self.counters["verify:openings-served"] += len(ops)
        out = {"openings": [op.to_dict() for op in ops]}
        self.counters["verify:opening-bytes-sent"] += len(json.dumps(out))
        return out

    def accept_proof(self, msg: ProofMessage) -> None:
        from fairprobe.collab.verify import FraudProof, proof_from_dict

        if not self.driver.verifying:
            raise Refused(404, "verification-off")
        if msg.sender not in self.roster or msg.sender == self.id:
            raise Refused(403, "not-a-member")
        try:
            proof = proof_from_dict(msg.proof)
        except ProtocolError:
            raise Refused(422, "malformed-proof") from None
        if proof.accused not in self.roster or (
                isinstance(proof, FraudProof) and proof.challenger not in self.roster):
            raise Refused(422, "unknown-auditor")
        signer = proof.challenger if isinstance(proof, FraudProof) else None
        digest = proof.message().hex()
        # before the signatures are checked: a flood past the budget costs a hash per proof
        refuse = self.proof_budget.admit(signer, proof.accused, digest)
        if refuse is not None:
            self.counters[f"verify:{refuse}"] += 1
            raise Refused(429, refuse)
        why = proof.check_signatures(self.verifier)
        if why is not None:
            self.counters[f"verify:proof-refused:{why}"] += 1
            raise Refused(422, "invalid-proof")
        self.counters["verify:proof-bytes-received"] += len(json.dumps(msg.proof))
        self.store.proof_put(proof.accused, digest, json.dumps(msg.proof))
        self.proof_budget.taken(signer, proof.accused, digest)

    async def _post_json(self, u: str, path: str, body: bytes) -> httpx.Response | None:
        assert self._client is not None
        try:
            return await self._client.post(
                self.roster.member(u).url + path, content=body,
                headers={"content-type": "application/json"},
            )
        except httpx.HTTPError:
            return None

    def _forward_proof(
        self, proof_dict: dict[str, Any], skip: set[str], *, everyone: bool = False
    ) -> None:
        """Send a proof to the neighbours (``everyone``: to every roster member, as its finder
        does, so that a proof reaches honest nodes that attackers cut off)."""
        if self._client is None:  # not serving (in-process use): nothing to forward with
            return
        body = ProofMessage(sender=self.id, proof=proof_dict).model_dump_json().encode()

        async def send(u: str) -> None:
            # A node that refuses connections is down: a few tries, then given up (the flush must
            # not wait a round for it). A node that is up but slow (a timeout, a 5xx: busy
            # querying its model on a loaded machine) is retried until the round's deadline,
            # as tables are: a proof given up on a live honest node lets it finish without
            # excluding a proven liar.
            assert self._client is not None
            url = self.roster.member(u).url + "/v1/proof"
            deadline = time.monotonic() + self.cfg.timeouts.round
            refused, delay = 0, 0.1
            while True:
                try:
                    r: httpx.Response | None = await self._client.post(
                        url, content=body, headers={"content-type": "application/json"})
                except httpx.ConnectError:
                    r, refused = None, refused + 1
                except httpx.HTTPError:
                    r = None
                if r is not None and r.status_code < 500:
                    self.counters["verify:proof-bytes-sent"] += len(body)
                    return
                if refused >= 8 or time.monotonic() + delay > deadline:
                    self.counters["verify:proof-send-given-up"] += 1
                    return
                await asyncio.sleep(delay)
                delay = min(delay * 2, 0.5)

        targets = [m for m in self.roster.ids if m != self.id] if everyone else self.neighbours
        for u in targets:
            if u in skip:
                continue
            task = asyncio.create_task(send(u))
            self._bg.add(task)
            task.add_done_callback(self._bg.discard)

    async def _flush_proofs(self) -> None:
        """Wait until every proof this node sent is delivered (or given up) before it posts its
        next table.

        The order is what makes a proof network-wide: a node merges round ``t`` only after its
        neighbours' tables of round ``t``, so a node ``d`` hops from the finder merges round
        ``r + d`` only after the finder's table of round ``r + 1``, hence after the proof, and
        ``_process_proofs`` runs before that merge. Sent in the background only, the proof could
        lose the race to the table and reach a node after its last round.
        """
        assert self._stop is not None
        deadline = time.monotonic() + self.cfg.timeouts.round
        while self._bg and not self._stop.is_set():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self.counters["verify:proof-flush-timeouts"] += 1
                return
            await asyncio.wait(set(self._bg), timeout=remaining)

    async def _process_proofs(self, t: int) -> None:
        """Check stored proofs (one model query each for ``wrong-answer``); exclude, forward."""
        from fairprobe.collab.verify import FraudProof, proof_from_dict

        for accused, digest, body in self.store.proofs_pending():
            try:
                d = json.loads(body)
                proof = proof_from_dict(d)
                why = proof.check_signatures(self.verifier)
                if why is not None:
                    raise ProtocolError(why)
                signer = proof.challenger if isinstance(proof, FraudProof) else None
                if signer is not None and signer in self.proof_budget.blamed:
                    # received before its signer was blamed: dropped unchecked, no query
                    self.counters["verify:proof-dropped-signer-blamed"] += 1
                elif accused not in self.driver.proven and accused != self.id:
                    answer, refused, queried = None, False, False
                    if isinstance(proof, FraudProof) and proof.needs_query:
                        queried = True
                        try:
                            got = await self._reask([proof.opening.record_dict()])
                        finally:
                            self.counters["verify:proof-queries"] += 1
                        answer, refused = got[0]
                    # two signatures of one round prove an equivocation by themselves
                    if not isinstance(proof, FraudProof) or proof.confirmed_by(
                            answer, refused=refused):
                        self._exclude(accused, t, d)
                    else:
                        # the query was spent whether or not the model answered: it counts
                        if queried and signer is not None and self.proof_budget.charge(
                                signer, t):
                            self.counters[f"verify:proof-signer-blamed:{signer}"] = t
                            log.warning(
                                "%s: %d proofs signed by %s did not confirm: its further "
                                "proofs are dropped unchecked", self.id,
                                self.proof_budget.cap, signer)
                        if answer is None and not refused and proof.kind == "refused-record":
                            raise ProtocolError("the model could not be asked the record")
                        self.counters["verify:proof-not-confirmed"] += 1
            except Exception as exc:  # noqa: BLE001 - a proof must never stop the node
                # discarded, never retried: a proof that cannot be processed is not evidence
                reason = type(exc).__name__
                self.counters[f"verify:proof-discarded:{reason}"] += 1
                log.warning("%s: discarded a proof against %s that cannot be processed (%s: %s)",
                            self.id, accused, reason, exc)
            self.store.proof_done(accused, digest)

    def _exclude(
        self, accused: str, t: int, proof_dict: dict[str, Any], *, found: bool = False
    ) -> None:
        with self.driver.lock:
            self.driver.exclude(accused, t, proven=True)
        self.counters["verify:excluded"] += 1
        log.warning("%s: excluded %s at round %d on a proof of fraud", self.id, accused, t)
        self._forward_proof(proof_dict, skip={accused}, everyone=found)

    async def _challenge_round(self, t: int) -> None:
        """Challenge neighbours' latest roots (budget: ``rate`` of this round's queries)."""
        if not self.driver.verifying or self.cfg.role != "honest":
            return
        core = self._challenge_core
        held = {u: int(h.counts[1] + h.counts[3]) for u in self.neighbours
                if (h := self.driver.core.held.get(u)) is not None and h.round >= 1}
        live = [u for u in self.neighbours if u not in self.driver.excluded]
        reqs = core.plan(held, live)
        got = await asyncio.gather(*(self._challenge(r) for r in reqs))
        pending = [x for g in got for x in g]
        if not pending:
            return
        from fairprobe.collab.verify import record_of

        # one batch per prover: a liar's records the model refuses must not cost the
        # challenger the answers of the other provers' records (nor stop it)
        by_prover: dict[str, list[tuple[Any, bytes, Any]]] = {}
        for u, entry, esig, op in pending:
            by_prover.setdefault(u, []).append((entry, esig, op))
        for u, items in by_prover.items():
            bad = [it for it in items if record_of(it[2].record) is None]
            if bad:  # not a JSON object: no model answers it, proven by the signatures alone
                entry, esig, op = bad[0]
                self._make_proof("refused-record", entry, esig, op, None, t)
                continue
            replies = await self._reask([op.record_dict() for _, _, op in items])
            for (entry, esig, op), (ans, refused) in zip(items, replies, strict=True):
                if u in self.driver.excluded:
                    break
                if refused:
                    self._make_proof("refused-record", entry, esig, op, None, t)
                elif ans is not None and ans != op.answer:
                    self._make_proof("wrong-answer", entry, esig, op, ans, t)

    async def _reask(self, records: list[dict[str, Any]]) -> list[tuple[int | None, bool]]:
        """``(answer, refused)`` per record: the model's answer (None: unparsed or not asked),
        and whether the model refused that record for good (:func:`~fairprobe.collab.verify.
        is_refusal`). A refused batch is asked again record by record, to find the refused
        ones; a failure that may pass or is this node's own (unreachable model, credentials)
        is logged and counted, never turned into an accusation, and never stops the node."""
        from fairprobe.collab.verify import is_refusal

        async def ask(batch: list[dict[str, Any]]) -> list[int | None]:
            out = await asyncio.to_thread(self.driver.reask, batch)
            self.counters["verify:reasked"] += len(batch)
            return out

        try:
            return [(a, False) for a in await ask(records)]
        except FairprobeError as exc:
            if not is_refusal(exc) or len(records) == 1:
                return [self._reask_failed(exc)] * len(records)
        out: list[tuple[int | None, bool]] = []
        for rec in records:
            try:
                out.append(((await ask([rec]))[0], False))
            except FairprobeError as exc:
                out.append(self._reask_failed(exc))
        return out

    def _reask_failed(self, exc: FairprobeError) -> tuple[None, bool]:
        from fairprobe.collab.verify import is_refusal

        refused = is_refusal(exc)
        key = "refused-record" if refused else f"unavailable:{type(exc).__name__}"
        self.counters[f"verify:reask-{key}"] += 1
        log.warning("%s: re-asking an opened record failed (%s): %s", self.id, key, exc)
        return None, refused

    def _make_proof(self, kind: str, entry: tuple[int, int, int, int, int], esig: bytes,
                    op: Any, observed: int | None, t: int) -> None:
        from fairprobe.collab.verify import FraudProof

        proof = FraudProof(kind, self.id, entry, esig, op, observed)  # type: ignore[arg-type]
        proof = proof.signed(self.signer)
        self.counters["verify:proofs-made"] += 1
        self._exclude(op.auditor, t, proof.to_dict(), found=True)

    async def _challenge(self, req: Any) -> list[tuple[str, Any, bytes, Any]]:
        from fairprobe.collab.verify import (
            Opening,
            challenge_indices,
            challenge_message,
            leaf_counts,
            leaf_hash,
            prefix_root,
            split_signature,
            verify_opening,
        )

        u = req.prover
        h = self.driver.core.held.get(u)
        if h is None or h.round < 1:
            return []
        _, root = split_signature(h.sig)
        m = int(h.counts[1] + h.counts[3])
        if root is None or m == 0 or m != req.m:
            return []
        earlier = self._challenged.get(u)  # (m, root, counts) of the last challenged root
        self._challenge_core.covered(u, m)
        self._challenged[u] = (m, root, tuple(int(x) for x in h.counts))
        csig = self.signer.sign(challenge_message(u, h.round, root))
        msg = ChallengeMessage(
            challenger=self.id, prover=u, round=h.round, m=m, lo=req.lo,
            count=min(req.count, 4096),
            root=base64.b64encode(root).decode("ascii"), sig=base64.b64encode(csig).decode(),
        )
        body = msg.model_dump_json().encode()
        self.counters["verify:challenges-sent"] += 1
        self.counters["verify:challenge-bytes-sent"] += len(body)
        r = None
        for attempt in range(2):  # one retry: a slow honest node is not a liar
            r = await self._post_json(u, "/v1/challenge", body)
            if r is not None and r.status_code < 500:
                break
            await asyncio.sleep(0.2 * (attempt + 1))
        if r is None or r.status_code != 200:
            return self._failed(u, h.round, "no-answer" if r is None else f"http-{r.status_code}")
        self.counters["verify:opening-bytes-received"] += len(r.content)
        want = set(challenge_indices(csig, m, msg.count, lo=req.lo))
        link = req.link
        try:
            ops = [Opening.from_dict(o) for o in r.json()["openings"]]
        except (ValueError, KeyError, TypeError, ProtocolError):
            return self._failed(u, h.round, "malformed")
        entry = (h.round, *h.counts)
        out = []
        opened: set[int] = set()
        for op in ops:
            if op.auditor != u or not self.verifier.verify(u, op.message(), op.sig):
                self.counters["verify:openings-unsigned"] += 1
                continue
            if op.round != h.round or op.m != m:
                continue
            if link is not None and op.index == link:
                if not verify_opening(op, h.counts, root):
                    self._make_proof("bad-opening", entry, h.sig, op, None, self.round)
                    return []
                leaf = leaf_hash(op.record, op.group_a, op.answer, op.salt)
                lc = leaf_counts([int(op.group_a)], [op.answer])[0].tolist()
                old = prefix_root(link, m, leaf, lc, op.path)
                if earlier is None or old is None or old != (earlier[1], earlier[2]):
                    # the new root does not extend the one challenged before: the earlier
                    # leaves were rewritten, and they are not drawn again
                    return self._failed(u, h.round, "history-rewritten")
                link = None
                continue
            if op.index not in want:
                continue
            self.counters["verify:leaves-checked"] += 1
            if not verify_opening(op, h.counts, root):
                self._make_proof("bad-opening", entry, h.sig, op, None, self.round)
                return []
            if op.index not in opened:
                opened.add(op.index)
                out.append((u, entry, h.sig, op))
        if opened != want or link is not None:
            # every requested leaf must be opened: a selective answer hides the falsified ones
            return self._failed(u, h.round, "missing-openings")
        return out

    def _failed(self, u: str, round_: int, reason: str) -> list[tuple[str, Any, bytes, Any]]:
        """A challenge not (fully) answered counts as failed: the source is excluded here (not
        network-wide: there is no transferable proof), counted per reason."""
        self.counters["verify:challenges-unanswered"] += 1
        self.counters[f"verify:challenge-failed:{reason}"] += 1
        log.warning("%s: challenge of %s round %d failed (%s): excluded", self.id, u, round_,
                    reason)
        with self.driver.lock:
            self.driver.exclude(u, self.round)
        self.counters["verify:excluded-failed-challenge"] += 1
        return []

    def _table_entries(self) -> list[EntryMessage]:
        return [EntryMessage.model_validate(e.to_dict()) for e in self.driver.table()]

    def _table_for(self, receiver: str, round_: int, entries: list[EntryMessage]) -> bytes:
        unsigned = TableMessage.model_construct(
            sender=self.id, receiver=receiver, round=round_, entries=entries, sig=""
        )
        sig = self.signer.sign(unsigned.envelope())
        msg = TableMessage(
            sender=self.id,
            receiver=receiver,
            round=round_,
            entries=entries,
            sig=base64.b64encode(sig).decode("ascii"),
        )
        return msg.model_dump_json().encode("utf-8")

    def _post_mail(self, round_: int) -> None:
        entries = self._table_entries()
        for u in self.neighbours:
            self._queues[u].append(_Mail(round_, self._table_for(u, round_, entries), len(entries)))
            self._mail_events[u].set()

    async def _deliver(self, client: httpx.AsyncClient, u: str) -> None:
        """Deliver every table to neighbour ``u``, in round order, each until acknowledged.

        Tables are never skipped: a neighbour that holds a later table of ours also holds every
        earlier one (unless it refused it), so its merge of a round sees exactly our table of that
        round, as the simulator's does. A 4xx answer drops the table (and is counted).
        """
        url = self.roster.member(u).url + "/v1/table"
        q = self._queues[u]
        ev = self._mail_events[u]
        while True:
            while not q:
                ev.clear()
                await ev.wait()
            mail = q[0]
            delay = 0.02
            while True:
                try:
                    r = await client.post(
                        url, content=mail.body, headers={"content-type": "application/json"}
                    )
                except httpx.HTTPError:
                    r = None
                if r is not None and r.status_code < 500:
                    if r.status_code >= 400:
                        self.counters[f"delivery-refused:{r.status_code}"] += 1
                    else:
                        self.counters["sent-tables"] += 1
                        self.counters["sent-entries"] += mail.entries
                        self.counters["sent-body-bytes"] += len(mail.body)
                        self.counters["last-table-entries"] = mail.entries
                        self.counters["last-table-bytes"] = len(mail.body)
                    break
                await asyncio.sleep(delay)
                delay = min(delay * 2, 0.5)
            q.popleft()

    # -- rounds -------------------------------------------------------------------------------
    def _merge(self, t: int) -> list[tuple[str, int]]:
        """Merge every stored table of a round ``<= t``; return the consumed inbox keys."""
        consumed: list[tuple[str, int]] = []
        on_time: set[str] = set()
        for sender, r, body in self.store.inbox():
            if r > t:
                continue
            consumed.append((sender, r))
            self.counters["merged-tables"] += 1
            if r == t:
                on_time.add(sender)
            if r < t:
                self.counters["late-tables"] += 1
            msg = TableMessage.model_validate_json(body)
            passed: list[Entry] = []
            held_before: dict[str, tuple[tuple[int, int, int, int], bytes]] = {}
            for e in msg.entries:
                reason = precheck(
                    e,
                    known=e.auditor in self.roster,
                    last_round=self.last_round,
                    carrier_round=msg.round,
                    held_round=self.driver.held_round(e.auditor),
                    held_counts=self.driver.held_counts(e.auditor),
                    # the entry verifier (with verification on, signatures carry the root)
                    verifier=self.entry_verifier,
                    held_sig=self.driver.held_sig(e.auditor),
                )
                if reason is Reason.STALE_ROUND:
                    self.counters["stale-entries"] += 1
                    continue
                if reason is not None:
                    self.rejections[str(reason)] += 1
                    if reason is Reason.EQUIVOCATION:
                        self._equivocated(e.auditor, t, e.round, tuple(e.counts), e.signature)
                    continue
                hc, hs = self.driver.held_counts(e.auditor), self.driver.held_sig(e.auditor)
                if hc is not None and hs is not None and e.auditor not in held_before:
                    held_before[e.auditor] = (hc, hs)
                passed.append(
                    Entry(e.auditor, e.round, CountsVector(*e.counts), e.signature)
                )
            for auditor, why in self.driver.merge(passed):
                self.rejections[why] += 1
                if why == "equivocation":
                    other = next((p for p in passed if p.auditor == auditor), None)
                    if other is not None:
                        self._equivocated(auditor, t, other.round,
                                          tuple(int(x) for x in other.counts.as_tuple()),
                                          bytes(other.sig),
                                          held=held_before.get(auditor))
        # neighbours whose table of this very round is not part of this merge (down, slow, or
        # refused): the run then departs from the fault-free schedule the simulator follows
        self.counters["missing-tables"] += len(set(self.neighbours) - on_time)
        return consumed

    def _equivocated(
        self, auditor: str, t: int, round_: int, counts: tuple[int, ...], sig: bytes,
        held: tuple[tuple[int, int, int, int], bytes] | None = None,
    ) -> None:
        """Two entries of one round, both signed by ``auditor`` in this audit: no honest node
        signs twice for a round (a restarted one re-signs the same bytes), so with verification
        on the author is excluded here as proven, and the two signed entries are sent to every
        roster member as an :class:`~fairprobe.collab.verify.EquivocationProof`, so that every
        honest node excludes it too."""
        from fairprobe.collab.verify import EquivocationProof

        if not self.driver.verifying or auditor == self.id or auditor in self.driver.proven:
            return
        if held is None:
            hc, hs = self.driver.held_counts(auditor), self.driver.held_sig(auditor)
            held = None if hc is None or hs is None else (hc, hs)
        self.counters["verify:excluded-equivocation"] += 1
        log.warning("%s: excluded %s at round %d: it signed two entries for one round",
                    self.id, auditor, t)
        proof = None if held is None else EquivocationProof(
            auditor, int(round_), held[0], held[1],
            tuple(int(x) for x in counts), bytes(sig))  # type: ignore[arg-type]
        if proof is None or proof.check_signatures(self.verifier) is not None:
            with self.driver.lock:  # excluded here; nothing transferable to send
                self.driver.exclude(auditor, t, proven=True)
            return
        self._exclude(auditor, t, proof.to_dict(), found=True)

    async def _wait_for_neighbours(self, t: int) -> None:
        assert self._table_event is not None and self._stop is not None
        deadline = time.monotonic() + self.cfg.timeouts.round

        def ready() -> bool:
            return all(self.latest_from[u] >= t for u in self.neighbours)

        while not ready():
            self._table_event.clear()
            if ready():
                break
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self.counters["round-timeouts"] += 1
                log.warning("%s: round %d timed out waiting for neighbours", self.id, t)
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._table_event.wait(), remaining)

    def _checkpoint_state(self) -> dict[str, Any]:
        return {
            "driver": self.driver.to_state(), "latest_from": self.latest_from,
            "proof_budget": self.proof_budget.to_dict(),
            "challenges": {
                "core": self._challenge_core.to_dict(),
                "roots": {u: [m, base64.b64encode(r).decode("ascii"), list(c)]
                          for u, (m, r, c) in self._challenged.items()},
            },
        }

    def _resume(self) -> tuple[int, str]:
        cp = self.store.load_checkpoint()
        if cp is None:
            return 0, "merged"
        r, phase, state = cp
        self.driver.load_state(state["driver"])
        if state.get("proof_budget"):
            from fairprobe.collab.verify import ProofBudget

            pb = ProofBudget.from_dict(state["proof_budget"])
            pb.cap = self.proof_budget.cap
            self.proof_budget = pb
        ch = state.get("challenges")
        if ch:  # the challenge rule resumes where it stopped (provers check ``lo``)
            from fairprobe.collab.verify import ChallengeCore

            self._challenge_core = ChallengeCore.from_dict(ch["core"])
            self._challenged = {u: (int(v[0]), base64.b64decode(v[1]), tuple(int(x) for x in v[2]))
                                for u, v in ch["roots"].items()}
        for u, v in state.get("latest_from", {}).items():
            if u in self.latest_from:
                self.latest_from[u] = max(self.latest_from[u], int(v))
        for sender, rr, _ in self.store.inbox():
            if sender in self.latest_from:
                self.latest_from[sender] = max(self.latest_from[sender], rr)
        self.counters["restarts"] += 1
        return r, phase

    async def _local_step(self, t: int) -> None:
        entry = await asyncio.to_thread(self.driver.local_step, t)
        self.store.save_stamped(t, self._checkpoint_state(), entry.counts.as_tuple(), entry.sig)

    async def _rounds(self) -> NodeResult:
        assert self._stop is not None
        r0, phase = self._resume()
        t = r0 if phase == "stamped" else r0 + 1
        started = time.monotonic()
        first = t
        while t <= self.last_round:
            self.round = t
            t0 = time.monotonic()
            if not (t == r0 and phase == "stamped"):
                self.phase = "querying"
                await self._local_step(t)
            self.phase = "waiting"
            await self._flush_proofs()
            self._post_mail(t)
            await self._wait_for_neighbours(t)
            self.phase = "merging"
            if self.driver.verifying:
                await self._process_proofs(t)
            consumed = self._merge(t)
            with self.driver.lock:
                self.driver.end_round()
            if self.driver.verifying:
                self.phase = "challenging"
                await self._challenge_round(t)
            self.store.save_merged(
                t, self._checkpoint_state(), consumed, self.rejections, self.counters
            )
            log.info("%s: round %d done in %.3f s", self.id, t, time.monotonic() - t0)
            t += 1
        done = t - first
        if self.neighbours and done > 0 and self.counters["merged-tables"] == 0:
            raise ProtocolError(
                f"node {self.id} merged no table from any of its neighbours "
                f"{', '.join(self.neighbours)} in {done} rounds: its estimate would rest on its "
                "own data alone, so it gives no verdict (check that the neighbours run and "
                "reach this node's address)."
            )
        if done > 0:
            self.counters["round-ms-total"] += int(1000 * (time.monotonic() - started))
            self.counters["rounds-run"] += done
        return self._result()

    def _result(self) -> NodeResult:
        from fairprobe.collab.bounded import make_finding

        honest = self.cfg.role == "honest"
        est = float(self.driver.estimate()) if honest else 0.0
        tau = self.cfg.audit.tau
        # a replayed bundled population is a simulation (its truth is known), a platform a model
        subject = "simulation" if self.cfg.backend.get("kind") == "population" else "model"
        b = self.driver.bounded() if honest and self.driver.method == "bounded" else None
        if b is not None:
            finding = make_finding(
                est, b["low"], b["high"], tau=tau, subject=subject, max_liars=b["max_liars"],
                counts={k: b[k] for k in ("certified_k", "flip_mass", "verification_rate",
                                          "escape_bound", "proven_liars", "census", "a4")},
            )
        else:
            finding = make_finding(est, est, est, tau=tau, subject=subject,
                                   max_liars=self.cfg.max_liars, method=self.driver.method)
        return NodeResult(
            id=self.id,
            role="honest" if honest else "attacker",
            rounds=self.last_round,
            estimate=est,
            verdict=finding.verdict,
            tau=self.cfg.audit.tau,
            rejected=dict(sorted(self.rejections.items())),
            stale=self.counters["stale-entries"],
            refused={
                k.split(":", 1)[1]: v
                for k, v in sorted(self.counters.items())
                if k.startswith("refused:")
            },
            late_tables=self.counters["late-tables"],
            missing_tables=self.counters["missing-tables"],
            timeouts=self.counters["round-timeouts"],
            restarts=self.counters["restarts"],
            sent_tables=self.counters["sent-tables"],
            sent_entries=self.counters["sent-entries"],
            sent_body_bytes=self.counters["sent-body-bytes"],
            last_table_entries=self.counters["last-table-entries"],
            last_table_bytes=self.counters["last-table-bytes"],
            seconds_per_round=(
                self.counters["round-ms-total"] / 1000 / max(1, self.counters["rounds-run"])
            ),
            queries_used=self.driver.queries_used,
            queries_left=self.driver.queries_left,
            method=self.driver.method,
            certified_k=self.driver.certified_k() if honest else None,
            excluded=dict(sorted(self.driver.excluded.items())),
            trajectory=list(self.driver.trajectory),
            source_weights=self.driver.source_weights(),
            verification={
                k.split(":", 1)[1]: v for k, v in sorted(self.counters.items())
                if k.startswith("verify:") and not k.startswith(("verify:served:", "verify:covered"))
            },
            finding=finding.to_dict(),
            max_liars=self.cfg.max_liars,
            bounded=(
                None if b is None else {k: (None if isinstance(v, float) and v != v else v)
                                        for k, v in b.items() if k != "estimate"}
            ),
        )

    async def _post_result(self, client: httpx.AsyncClient, result: NodeResult) -> None:
        if not self.cfg.collector_url:
            return
        body = result.model_dump_json().encode()
        sig = base64.b64encode(self.signer.sign(b"fairprobe/collab/result/v1\x00" + body))
        msg = ResultMessage(result=result, sig=sig.decode("ascii"))
        for attempt in range(5):
            try:
                r = await client.post(self.cfg.collector_url, json=msg.model_dump())
                if r.status_code < 500:
                    return
            except httpx.HTTPError:
                pass
            await asyncio.sleep(0.2 * (attempt + 1))
        log.warning("%s: the collector did not take the result", self.id)

    async def _drain(self) -> None:
        """Keep delivering the last table until every neighbour has it (bounded); with
        verification on, keep serving until every neighbour is done too (its last challenges
        are for this node's last root)."""
        deadline = time.monotonic() + self.cfg.timeouts.finish
        while time.monotonic() < deadline and any(self._queues.values()):
            await asyncio.sleep(0.02)
        if not self.driver.verifying or self._client is None:
            return
        pending = set(self.neighbours)
        while pending and time.monotonic() < deadline:
            for u in list(pending):
                try:
                    r = await self._client.get(self.roster.member(u).url + "/v1/status")
                    if r.json().get("done"):
                        pending.discard(u)
                except (httpx.HTTPError, ValueError, AttributeError):
                    pending.discard(u)  # gone: nothing more to answer
            if pending:
                await asyncio.sleep(0.1)

    async def run(self) -> NodeResult:
        """Serve, run every remaining round, report; return the result."""
        self._table_event = asyncio.Event()
        self._stop = asyncio.Event()
        self._mail_events = {u: asyncio.Event() for u in self.neighbours}
        loop = asyncio.get_running_loop()
        stop_signal: list[str] = []

        def on_signal(name: str) -> None:
            stop_signal.append(name)
            assert self._stop is not None
            self._stop.set()

        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.add_signal_handler(sig, on_signal, sig.name)
        # IPPROTO_TCP so that asyncio sets TCP_NODELAY on accepted connections (no ~40 ms stalls)
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((self.host, self.port))
        except OSError as exc:
            sock.close()
            raise PortInUseError(
                f"Node {self.id!r} cannot listen on {self.host}:{self.port} ({exc.strerror}); "
                "free the port or change the roster address."
            ) from None
        t_req = self.cfg.timeouts.request
        app = create_app(self, on_table=self._notify, body_timeout=max(5.0, 2 * t_req))
        server = _QuietServer(
            uvicorn.Config(
                app, log_level="warning", access_log=False, lifespan="off",
                http=header_timeout_protocol(max(5.0, 2 * t_req)),
            )
        )
        serve_task = asyncio.create_task(server.serve(sockets=[sock]))
        limits = httpx.Limits(max_connections=4 * max(1, len(self.neighbours)))
        timeout = httpx.Timeout(self.cfg.timeouts.request)
        async with httpx.AsyncClient(timeout=timeout, limits=limits, trust_env=False) as client:
            self._client = client
            senders = [asyncio.create_task(self._deliver(client, u)) for u in self.neighbours]
            try:
                stored = self.store.load_result()
                if stored is not None:
                    result = NodeResult.model_validate(stored)
                else:
                    rounds = asyncio.create_task(self._rounds())
                    stopper = asyncio.create_task(self._stop.wait())
                    await asyncio.wait({rounds, stopper}, return_when=asyncio.FIRST_COMPLETED)
                    if not rounds.done():
                        rounds.cancel()
                        with contextlib.suppress(asyncio.CancelledError):
                            await rounds
                        if self.fatal is not None:
                            raise self.fatal
                        raise NodeStopped(
                            f"node {self.id} stopped by {stop_signal[0] if stop_signal else 'a signal'}"
                            f" in round {self.round}; its state is saved in {self.cfg.state_db}, "
                            "run the same command to resume."
                        )
                    stopper.cancel()
                    result = rounds.result()
                    if self.fatal is not None:
                        raise self.fatal
                    self.store.save_result(result.model_dump())
                self.done = True
                self.phase = "done"
                await self._post_result(client, result)
                await self._drain()
            finally:
                for s in [*senders, *self._bg]:
                    s.cancel()
                await asyncio.gather(*senders, *self._bg, return_exceptions=True)
                server.should_exit = True
                await serve_task
                self.store.close()
                self.driver.close()
        return result


def audit_id(cfg: NodeConfig, roster: Roster) -> bytes:
    """The id of an audit: SHA-256 of the roster (ids, public keys, neighbours; not the
    addresses, which a node may see otherwise, e.g. through a proxy or a NAT), the
    ``[audit]`` table (counts, rounds, tolerance, seed, closing rounds, ``label``) and the
    verification settings every node shares -- what all auditors agree on before round 1.

    Every signature a node makes binds it (:func:`~fairprobe.collab.net.keys.bind_audit`), and
    the round is inside each signed message (entries, tables, challenges, openings, the entry a
    proof carries): an entry, table, challenge or proof of another audit with the same keys
    does not verify, so it is refused as a bad signature and never excludes anyone."""
    import hashlib

    members = [[m.id, m.public_key_b64, list(m.neighbours)] for m in roster.members]
    doc: dict[str, Any] = {"roster": members, "audit": cfg.audit.to_dict()}
    if cfg.verify.enabled:
        doc["verify"] = {"rate": cfg.verify.rate}
    raw = json.dumps(doc, sort_keys=True, separators=(",", ":"), default=str).encode()
    return hashlib.sha256(b"fairprobe/collab/audit-id/v1\x00" + raw).digest()


def build_node(cfg: NodeConfig, *, out: TextIO | None = None) -> Node:
    """A node from its configuration: roster, key, driver (core + model access)."""
    roster = load_roster(cfg.roster)
    ctx = audit_id(cfg, roster)
    signer = Ed25519Signer(cfg.id, load_private_key(cfg.key), context=ctx)
    driver = Driver(cfg, roster, signer, roster.verifier(context=ctx))
    return Node(cfg, roster, signer, driver, out=out)


def run_node(cfg: NodeConfig, *, echo: Callable[[str], None] | None = None) -> NodeResult:
    """Run a node to the end of the audit and return its result."""
    node = build_node(cfg)
    result = asyncio.run(node.run())
    if echo is not None:
        echo(json.dumps(result.model_dump()))
    return result
