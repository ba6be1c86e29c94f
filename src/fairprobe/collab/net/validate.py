"""Entry validation: every entry a node receives, its own or relayed, is checked before merging.

``collaborative-auditing-auditopus.md``, Section III-C, Step 4 merges an entry only if it is newer
and "carries a valid signature of j". A node on a real network checks more, because an entry is all
it ever sees of another auditor. An entry is rejected (and counted under its :class:`Reason`) when

* it names an auditor outside the roster (``unknown-auditor``);
* its signature does not verify against its author's key (``bad-signature``);
* its counts are impossible in themselves: a negative field, ``a > A``, ``b > B``, or more queries
  than ``n`` per round up to its round (``impossible-counts``); or its round is 0, later than the
  audit's last round or later than the round of the table carrying it (``bad-round``);
* compared with the entry held for the same auditor: its round is older (``stale-round``); the same
  round with other counts, which only a double-signing author produces (``equivocation``); a
  count that shrinks (``shrinking-totals``); or more new queries than ``n`` per elapsed round
  (``over-budget``).

An entry equal to the held one is a duplicate (gossip delivers the same entry along several paths):
it is neither merged again nor counted as a rejection. Its signature was verified when it was first
accepted; :func:`check_static` still verifies any entry whose bytes differ from the held one.

An increment that passes these checks may still be fabricated; judging it is the suspicion score's
job (Section V), not this module's.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from fairprobe.collab.net.keys import Ed25519Verifier
from fairprobe.collab.net.messages import EntryMessage

__all__ = ["HeldEntry", "Reason", "check_against_held", "check_static", "is_duplicate"]


class Reason(StrEnum):
    """Why an entry was rejected."""

    UNKNOWN_AUDITOR = "unknown-auditor"
    BAD_SIGNATURE = "bad-signature"
    IMPOSSIBLE_COUNTS = "impossible-counts"
    BAD_ROUND = "bad-round"
    STALE_ROUND = "stale-round"
    EQUIVOCATION = "equivocation"
    SHRINKING_TOTALS = "shrinking-totals"
    OVER_BUDGET = "over-budget"


@dataclass(frozen=True, slots=True)
class HeldEntry:
    """The entry a node holds for one auditor (round 0 and zero counts before any)."""

    round: int
    a: int
    A: int
    b: int
    B: int
    sig: bytes = b""

    @property
    def counts(self) -> tuple[int, int, int, int]:
        return (self.a, self.A, self.b, self.B)


def is_duplicate(e: EntryMessage, held: HeldEntry | None) -> bool:
    """True iff ``e`` is byte-for-byte the entry already held (same round, counts, signature)."""
    return (
        held is not None
        and e.round == held.round
        and e.counts == held.counts
        and e.signature == held.sig
    )


def check_static(
    e: EntryMessage,
    *,
    verifier: Ed25519Verifier,
    n: int,
    last_round: int,
    carrier_round: int,
) -> Reason | None:
    """Checks that need nothing but the entry, the roster and the audit parameters."""
    if not verifier.knows(e.auditor):
        return Reason.UNKNOWN_AUDITOR
    a, A, b, B = e.counts
    if e.round < 1 or e.round > last_round or e.round > carrier_round:
        return Reason.BAD_ROUND
    if min(a, A, b, B) < 0 or a > A or b > B or A + B > n * e.round:
        return Reason.IMPOSSIBLE_COUNTS
    if not verifier.verify_entry(e.auditor, e.round, a, A, b, B, e.signature):
        return Reason.BAD_SIGNATURE
    return None


def check_against_held(e: EntryMessage, held: HeldEntry | None, *, n: int) -> Reason | None:
    """Checks of ``e`` against the entry held for its author (``None``: nothing held yet)."""
    if held is None or held.round == 0:
        return None
    if e.round < held.round:
        return Reason.STALE_ROUND
    if e.round == held.round:
        return None if e.counts == held.counts else Reason.EQUIVOCATION
    a, A, b, B = e.counts
    if a < held.a or A < held.A or b < held.b or B < held.B:
        return Reason.SHRINKING_TOTALS
    if (A + B) - (held.A + held.B) > n * (e.round - held.round):
        return Reason.OVER_BUDGET
    return None
