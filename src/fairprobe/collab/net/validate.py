"""Entry checks a node makes before handing an entry to the protocol core.

Every entry a node receives, its own or relayed, goes through two stages:

1. :func:`precheck` (here) -- what the wire allows but the core's types cannot hold or the core
   does not know: a negative count, ``a > A`` or ``b > B`` (``impossible-counts``; such a vector
   is not even a :class:`~fairprobe.stats.counts.CountsVector`), round 0, a round past the audit's
   last round or newer than the round of the table carrying it (``bad-round``), an auditor
   outside the roster (``unknown-auditor``), and an entry older than the one held
   (``stale-round``; the core ignores these silently, the node counts them).
2. :meth:`fairprobe.collab.protocol.AuditorCore.merge` -- the protocol's own merge (Section
   III-C, Step 4): a strictly newer round wins if its author's signature verifies
   (``bad-signature``), and it rejects ``equivocation`` (same round, other counts),
   ``shrinking-totals``, ``over-budget`` (more than ``n`` new queries per elapsed round) and
   totals above ``n`` times the round (``impossible-counts``).

A duplicate of the entry held (same round and counts) is neither merged again nor counted as a
rejection: gossip delivers the same entry along several paths.

The reasons are the strings of ``fairprobe.collab.protocol.REJECT_REASONS`` plus
``stale-round``.
"""

from __future__ import annotations

from enum import StrEnum

from fairprobe.collab.net.messages import EntryMessage
from fairprobe.collab.protocol import EntryVerifier

__all__ = ["Reason", "precheck"]


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


def precheck(
    e: EntryMessage,
    *,
    known: bool,
    last_round: int,
    carrier_round: int,
    held_round: int,
    held_counts: tuple[int, int, int, int] | None = None,
    verifier: EntryVerifier | None = None,
    held_sig: bytes | None = None,
) -> Reason | None:
    """Checks of one received entry that come before the core's merge.

    Parameters
    ----------
    e : EntryMessage
    known : bool
        Whether ``e.auditor`` is in the roster.
    last_round : int
        The audit's last round ``T``.
    carrier_round : int
        Round of the table that carried ``e`` (its sender cannot relay a newer entry).
    held_round : int
        Round of the entry held for ``e.auditor`` (0 if none).
    held_counts, verifier : optional
        With both given, an entry of the held round with other counts is checked for its
        signature here (``bad-signature``): the core would call it an ``equivocation`` without
        verifying, which would blame a tampered relayed copy on its author.
    held_sig : bytes, optional
        The signature field of the held entry. A copy of the held round with the same counts
        but another signature field is verified (``bad-signature`` if it does not verify); if
        it does and carries another records root (:mod:`fairprobe.collab.verify`), its author
        signed two commitments for one round: ``equivocation``. (Ed25519 signatures are
        deterministic: a genuine copy of the same entry has the same field, and is a duplicate.)
    """
    if not known:
        return Reason.UNKNOWN_AUDITOR
    a, A, b, B = e.counts
    if min(a, A, b, B) < 0 or a > A or b > B:
        return Reason.IMPOSSIBLE_COUNTS
    if e.round < 1 or e.round > last_round or e.round > carrier_round:
        return Reason.BAD_ROUND
    if e.round < held_round:
        return Reason.STALE_ROUND
    if (
        e.round == held_round
        and held_counts is not None
        and verifier is not None
        and e.counts != held_counts
        and not verifier.verify_entry(e.auditor, e.round, a, A, b, B, e.signature)
    ):
        return Reason.BAD_SIGNATURE
    if (
        e.round == held_round
        and e.counts == held_counts
        and held_sig is not None
        and verifier is not None
        and e.signature != held_sig
    ):
        from fairprobe.collab.verify import split_signature

        if not verifier.verify_entry(e.auditor, e.round, a, A, b, B, e.signature):
            return Reason.BAD_SIGNATURE
        if split_signature(e.signature)[1] != split_signature(held_sig)[1]:
            return Reason.EQUIVOCATION
    return None
