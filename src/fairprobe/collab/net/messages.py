"""Wire schemas of the auditor network (pydantic, strict).

One message type travels between neighbours: a :class:`TableMessage`, the sender's whole table
``M_u`` of one round (``collaborative-auditing-auditopus.md``, Section III-C, Step 3), i.e. a list
of signed entries ``(auditor, round, a, A, b, B, sig)``, plus the sender's signature over the
envelope. Nothing else is in it: no query, no answer, no estimate. The result a node reports at the
end (:class:`ResultMessage`) goes only to the collector configured by its operator.

Schemas are strict (no type coercion, no extra keys) and bounded: a body larger than
:func:`max_body_bytes` is refused before it is parsed. Counts are only checked for being integers
of at most 63 bits here; whether they are possible (non-negative, ``a <= A``...) is decided entry by
entry in :mod:`fairprobe.collab.net.validate`, so that one impossible entry is rejected and counted
without discarding the rest of the table.
"""

from __future__ import annotations

import base64
import binascii
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictInt,
    StrictStr,
    field_validator,
)

from fairprobe.collab.net.keys import entry_bytes, envelope_bytes

__all__ = [
    "MAX_ENTRY_BYTES",
    "ChallengeMessage",
    "EntryMessage",
    "NodeResult",
    "ProofMessage",
    "ResultMessage",
    "TableMessage",
    "max_body_bytes",
]

def _integral(v: Any) -> Any:
    """JSON Schema's integers include ``28.0``: accept an integral float as that integer (text,
    booleans and fractions stay refused)."""
    if isinstance(v, float) and v.is_integer() and abs(v) < 2.0**64:
        return int(v)
    return v


I63 = Annotated[StrictInt, Field(ge=-(2**63), le=2**63 - 1)]
IdStr = Annotated[StrictStr, Field(pattern=r"^[A-Za-z0-9_.-]{1,64}$")]
#: Base64 of 64 bytes (an Ed25519 signature); the pattern lets the served schema say exactly
#: what is accepted (schemathesis checks that schema-valid bodies are not refused as malformed).
SigStr = Annotated[StrictStr, Field(min_length=88, max_length=88,
                                    pattern=r"^[A-Za-z0-9+/]{86}==$")]
#: An entry's signature field: 64 bytes, or 96 with the records root of the verification layer.
EntrySigStr = Annotated[StrictStr, Field(min_length=88, max_length=128,
                                         pattern=r"^(?:[A-Za-z0-9+/]{86}==|[A-Za-z0-9+/]{128})$")]

#: Upper bound on the JSON size of one entry (64-char id, 19-digit integers, 88-char signature).
MAX_ENTRY_BYTES = 400
_ENVELOPE_BYTES = 600


def max_body_bytes(n_auditors: int) -> int:
    """Largest table body a node accepts in a network of ``n_auditors``."""
    return _ENVELOPE_BYTES + MAX_ENTRY_BYTES * n_auditors


def _b64_64(v: str) -> str:
    try:
        raw = base64.b64decode(v, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ValueError("signature must be base64") from exc
    if len(raw) != 64:
        raise ValueError("signature must encode 64 bytes")
    return v


def _b64_entry_sig(v: str) -> str:
    try:
        raw = base64.b64decode(v, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ValueError("signature must be base64") from exc
    if len(raw) not in (64, 96):
        raise ValueError("an entry signature encodes 64 bytes (96 with a records root)")
    return v


class EntryMessage(BaseModel):
    """One signed entry ``M[j] = (c, r)`` of a table, as sent on the wire."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    auditor: IdStr
    round: I63
    a: I63
    A: I63
    b: I63
    B: I63
    sig: EntrySigStr

    _check_sig = field_validator("sig")(classmethod(lambda cls, v: _b64_entry_sig(v)))
    _ints = field_validator("round", "a", "A", "b", "B", mode="before")(
        classmethod(lambda cls, v: _integral(v)))

    @property
    def signature(self) -> bytes:
        return base64.b64decode(self.sig)

    @property
    def counts(self) -> tuple[int, int, int, int]:
        return (self.a, self.A, self.b, self.B)

    def signed_bytes(self) -> bytes:
        """Canonical bytes the author signed (raises ProtocolError for out-of-range fields)."""
        return entry_bytes(self.auditor, self.round, self.a, self.A, self.b, self.B)

    def wire_bytes(self) -> bytes:
        """Canonical bytes plus signature: what the envelope digest covers."""
        try:
            body = self.signed_bytes()
        except Exception:  # noqa: BLE001 - impossible entries still get a stable digest
            body = repr((self.auditor, self.round, *self.counts)).encode()
        return body + self.signature


class TableMessage(BaseModel):
    """The whole table of ``sender`` at round ``round``, addressed to ``receiver``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    sender: IdStr
    receiver: IdStr
    round: Annotated[StrictInt, Field(ge=1, le=2**31)]
    entries: list[EntryMessage] = Field(max_length=100_000)
    sig: SigStr

    _check_sig = field_validator("sig")(classmethod(lambda cls, v: _b64_64(v)))
    _ints = field_validator("round", mode="before")(classmethod(lambda cls, v: _integral(v)))

    @property
    def signature(self) -> bytes:
        return base64.b64decode(self.sig)

    def envelope(self) -> bytes:
        return envelope_bytes(
            self.sender, self.receiver, self.round, (e.wire_bytes() for e in self.entries)
        )


class NodeResult(BaseModel):
    """What a node reports after its last round (stdout, ``--json`` and the collector)."""

    model_config = ConfigDict(extra="forbid")

    id: str
    role: Literal["honest", "attacker"]
    rounds: int
    estimate: float
    verdict: Literal["fair", "unfair", "undetermined"]
    tau: float
    #: Entries rejected, by reason (see :class:`fairprobe.collab.net.validate.Reason`).
    rejected: dict[str, int]
    #: Entries older than the one held, dropped (routine in gossip: a neighbour relays what it
    #: holds, which may lag behind what this node already has). Counted, not an alarm.
    stale: int
    #: Table messages answered 4xx, by reason (malformed, oversized, bad envelope signature...).
    refused: dict[str, int]
    #: Neighbour tables that arrived after the round they belong to had moved on.
    late_tables: int
    #: (neighbour, round) pairs whose table was not merged in its own round. Zero means the run
    #: followed the fault-free schedule, whose estimates equal the simulator's.
    missing_tables: int
    #: Rounds this node left on a timeout rather than with every neighbour's table.
    timeouts: int
    #: Times this node resumed from its state database (after a crash or a stop).
    restarts: int
    #: Tables delivered to neighbours, the entries they held, and their JSON body bytes
    #: (HTTP framing not included).
    sent_tables: int
    sent_entries: int
    sent_body_bytes: int
    #: Entries and body bytes of the last table delivered (the steady state: ``|V|`` entries).
    last_table_entries: int
    last_table_bytes: int
    #: Mean wall time of one round of this node (since its last start).
    seconds_per_round: float
    queries_used: int
    queries_left: int
    #: Aggregation method of the estimate (``auditopus``, or ``robust`` once available).
    method: str = "auditopus"
    #: Least number of fabricating sources that could move the verdict (None if not computed).
    certified_k: int | None = None
    #: Sources this node excluded on a proof of fraud: ``{auditor: round}``.
    excluded: dict[str, int] = Field(default_factory=dict)
    #: Verification counters (challenges, leaves re-asked, openings served, proofs, bytes).
    verification: dict[str, int] = Field(default_factory=dict)
    #: This node's estimate after each round (its method; None while a group is empty).
    trajectory: list[float | None] = Field(default_factory=list)
    #: Per source, weighted over raw query mass as this node weighs it (0 once excluded).
    source_weights: dict[str, float] = Field(default_factory=dict)
    #: The verdict's finding (``fairprobe.stats.finding.Finding.to_dict()``): question,
    #: estimate, interval with its construction, three-way verdict.
    finding: dict[str, Any] | None = None
    #: Declared liar bound of the ``bounded`` verdict.
    max_liars: int = 0
    #: The ``bounded`` interval, certificate and verification bound (None for other methods):
    #: ``{low, high, certified_k, max_liars, proven_liars, flip_mass, verification_rate,
    #: escape_bound}``.
    bounded: dict[str, Any] | None = None


class ChallengeMessage(BaseModel):
    """``challenger`` asks ``prover`` to open ``count`` leaves of its root over ``m`` leaves of
    ``round``; the indices are drawn from the SHA-256 of ``sig`` (fairprobe.collab.verify)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    challenger: IdStr
    prover: IdStr
    round: Annotated[StrictInt, Field(ge=1, le=2**31)]
    m: Annotated[StrictInt, Field(ge=1, le=2**40)]
    #: leaves ``[0, lo)`` were covered by this challenger's earlier challenges: the indices are
    #: drawn in ``[lo, m)`` and leaf ``lo - 1`` is opened as the link to the earlier root
    lo: Annotated[StrictInt, Field(ge=0, le=2**40)] = 0
    count: Annotated[StrictInt, Field(ge=1, le=4096)]
    root: Annotated[StrictStr, Field(min_length=44, max_length=44,
                                     pattern=r"^[A-Za-z0-9+/]{43}=$")]
    sig: SigStr

    _check_sig = field_validator("sig")(classmethod(lambda cls, v: _b64_64(v)))
    _ints = field_validator("round", "m", "lo", "count", mode="before")(
        classmethod(lambda cls, v: _integral(v)))


class ProofMessage(BaseModel):
    """A proof of fraud as forwarded between neighbours (``FraudProof.to_dict()``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    sender: IdStr
    proof: dict[str, Any]


class ResultMessage(BaseModel):
    """The result as POSTed to a collector: the node result signed by the node."""

    model_config = ConfigDict(extra="forbid")

    result: NodeResult
    sig: str
