"""The per-auditor protocol core of the collaborative audit, free of I/O (Algorithms 1 and 2).

``collaborative-auditing-auditopus.md``, Section III-C. One :class:`AuditorCore` is the whole
state of one honest auditor ``i`` and the steps it takes each round; it never opens a socket,
reads a clock or touches a file (the "sans-I/O" pattern), so the simulator and a networked node
run the very same code and a node can persist it as JSON (:meth:`AuditorCore.to_dict`).

State (Lines 1-2 of Algorithm 1)
    ``c`` the own cumulative counts vector; the table ``M[j] = (c_j, r_j, sig_j)`` of the latest
    entry held per auditor; ``prev_j`` (and the round it came from); the weighted vectors ``W_j``.

One round ``t``::

    core.start_round()                        # t <- t + 1
    idx = sampler.draw(core.n)                # Step 1 (QuerySampler, also sans-I/O)
    core.record_answers(counts_of(idx))       # Step 2: c += stats, M[i] = (c, t, sign(c, t))
    send(core.table_entries())                # Step 3 (the caller's I/O)
    core.merge(received_entries)              # Step 4: newer round wins, bad signatures rejected
    report = core.end_round()                 # Steps 5-6: score, weight, estimate
    ...
    core.verdict()                            # |estimate| <= tau -> fair

Scoring (Step 5): for each source ``j`` whose entry was replaced since the previous round,
``delta = M[j].c - prev_j`` is scored by Algorithm 3 (:mod:`fairprobe.collab.score`) and added to
``W_j`` with weight ``(1 + S)^-2`` (weight 1 for a first increment, ``prev_j = 0``); ``prev_j``
is set to ``M[j].c`` every round; weights are never revised. The estimate is ``DP(sum_j W_j)``
summed in roster order.

An :class:`AttackerCore` (Algorithm 2) keeps the same table and merges the same way, but
fabricates its increment from its view ``C = sum_j M[j].c`` with an
:class:`~fairprobe.collab.attacker.AttackStrategy`, skips scoring and reports 0 as its estimate.

Signing goes through :class:`EntrySigner` / :class:`EntryVerifier` (the method names of
``fairprobe.collab.net.keys.Ed25519Signer`` / ``Ed25519Verifier``); the simulator uses
:class:`NullSigner` / :class:`NullVerifier`.
"""

from __future__ import annotations

import base64
import hashlib
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, Required, Self, TypedDict, Unpack

import numpy as np
import numpy.typing as npt

from fairprobe._validation import check_int, check_real
from fairprobe.collab.attacker import AttackStrategy, get_attack
from fairprobe.collab.score import Z_MAX, suspicion_scores
from fairprobe.errors import EmptyGroupError, InvalidParameterError, ProtocolError
from fairprobe.stats.counts import CountsVector

__all__ = [
    "PROTOCOL",
    "AttackerCore",
    "AuditorCore",
    "CoreOptions",
    "Entry",
    "EntrySigner",
    "EntryVerifier",
    "MergeReport",
    "NullSigner",
    "NullVerifier",
    "ProtocolParams",
    "QuerySampler",
    "RoundReport",
    "Verdict",
    "core_from_dict",
    "dp_of",
]

#: Reasons for rejecting an entry (same strings as ``fairprobe.collab.net.validate.Reason``).
REJECT_REASONS = (
    "unknown-auditor",
    "bad-signature",
    "impossible-counts",
    "bad-round",
    "equivocation",
    "shrinking-totals",
    "over-budget",
)


@dataclass(frozen=True)
class ProtocolParams:
    """The parameters every auditor of one audit runs the protocol with (Section III-C).

    Their defaults are those of Section VI-A. Each record that declares these parameters -- the
    simulator's ``SimConfig``, a node's ``[audit]`` table (``AuditConfig``), the cores -- takes
    its defaults from :data:`PROTOCOL`, so that a simulated run, a networked run and a core
    built by hand agree unless told otherwise.

    Attributes
    ----------
    n : int
        Query budget per round.
    tau : float
        Half-width of the fair band.
    z_max : float
        Cap of the suspicion score (Algorithm 3).
    replacement : bool
        Whether an honest auditor samples its queries with replacement.
    """

    n: int = 300
    tau: float = 0.05
    z_max: float = Z_MAX
    replacement: bool = False


#: The protocol's default parameters.
PROTOCOL = ProtocolParams()


def dp_of(total: npt.ArrayLike) -> float:
    """``a/A - b/B`` of a (possibly weighted) vector; NaN when a group is empty."""
    t = np.asarray(total, dtype=np.float64)
    if t[1] <= 0 or t[3] <= 0:
        return math.nan
    return float(t[0] / t[1] - t[2] / t[3])


class EntrySigner(Protocol):
    """Signs the own entry ``(round, a, A, b, B)`` of one auditor."""

    def sign_entry(self, round_: int, a: int, A: int, b: int, B: int) -> bytes: ...


class EntryVerifier(Protocol):
    """Verifies the signature of any auditor's entry."""

    def knows(self, auditor_id: str) -> bool: ...

    def verify_entry(
        self, auditor: str, round_: int, a: int, A: int, b: int, B: int, signature: bytes
    ) -> bool: ...


class NullSigner:
    """Signs nothing (the simulator's signer): the signature is ``b""``."""

    def sign_entry(self, round_: int, a: int, A: int, b: int, B: int) -> bytes:
        return b""

    def __repr__(self) -> str:
        return "NullSigner()"


class NullVerifier:
    """Accepts every signature of every auditor (the core still checks the roster)."""

    def knows(self, auditor_id: str) -> bool:
        return True

    def verify_entry(
        self, auditor: str, round_: int, a: int, A: int, b: int, B: int, signature: bytes
    ) -> bool:
        return True

    def __repr__(self) -> str:
        return "NullVerifier()"


@dataclass(frozen=True, slots=True)
class Entry:
    """One signed entry ``M[j] = (c, r)``: auditor ``j``'s counts vector stamped with round ``r``."""

    auditor: str
    round: int
    counts: CountsVector
    sig: bytes = b""

    def to_dict(self) -> dict[str, Any]:
        a, A, b, B = self.counts.as_tuple()
        return {
            "auditor": self.auditor,
            "round": self.round,
            "a": a,
            "A": A,
            "b": b,
            "B": B,
            "sig": base64.b64encode(self.sig).decode("ascii"),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Entry:
        try:
            return cls(
                auditor=str(d["auditor"]),
                round=int(d["round"]),
                counts=CountsVector(int(d["a"]), int(d["A"]), int(d["b"]), int(d["B"])),
                sig=base64.b64decode(d.get("sig", "")),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ProtocolError(f"Malformed entry {dict(d)!r}: {exc}.") from exc


@dataclass(frozen=True)
class MergeReport:
    """What :meth:`AuditorCore.merge` did with a batch of received entries."""

    accepted: tuple[str, ...]
    rejected: tuple[tuple[str, str], ...]  # (auditor, reason)
    ignored: int  # stale or duplicate entries (not an error: gossip repeats entries)

    def to_dict(self) -> dict[str, Any]:
        return {
            "accepted": list(self.accepted),
            "rejected": [list(r) for r in self.rejected],
            "ignored": self.ignored,
        }


@dataclass(frozen=True)
class RoundReport:
    """Result of :meth:`AuditorCore.end_round`: the scores, weights and estimate of round ``t``."""

    round: int
    scores: dict[str, float]
    weights: dict[str, float]
    estimate: float

    def to_dict(self) -> dict[str, Any]:
        est = None if math.isnan(self.estimate) else self.estimate
        return {
            "round": self.round,
            "scores": self.scores,
            "weights": self.weights,
            "estimate": est,
        }


@dataclass(frozen=True)
class Verdict:
    """Final estimate and verdict of one auditor: fair iff ``|estimate| <= tau``."""

    auditor: str
    role: str
    rounds: int
    estimate: float
    tau: float
    method: str = "auditopus"
    certificate: Any = None  # fairprobe.collab.certificate.Certificate, when requested

    @property
    def fair(self) -> bool:
        return abs(self.estimate) <= self.tau

    @property
    def certified_k(self) -> int | None:
        return None if self.certificate is None else int(self.certificate.certified_k)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "auditor": self.auditor,
            "role": self.role,
            "rounds": self.rounds,
            "estimate": self.estimate,
            "tau": self.tau,
            "verdict": "fair" if self.fair else "unfair",
            "method": self.method,
        }
        if self.certificate is not None:
            d["certified_k"] = self.certificate.certified_k
            d["certificate"] = self.certificate.to_dict()
        return d


class QuerySampler:
    """Which of an auditor's ``size`` queries to issue each round (Step 1), sans I/O.

    Without replacement (the paper's default) the order is one seeded permutation of
    ``range(size)``, consumed ``n`` at a time until exhausted; with replacement (RQ4) each round
    draws ``n`` indices uniformly. ``position`` (and the generator state) is all there is to
    persist.
    """

    def __init__(
        self, size: int, seed: int | np.random.Generator | None = 0, *, replacement: bool = False
    ) -> None:
        self.size = check_int(size, "size", "QuerySampler", lo=0)
        self.replacement = bool(replacement)
        self._rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
        self.order: npt.NDArray[np.int64] | None = (
            None if self.replacement else query_order(self._rng, self.size)
        )
        self.position = 0

    @property
    def remaining(self) -> int:
        return self.size if self.replacement else self.size - self.position

    def draw(self, n: int) -> npt.NDArray[np.int64]:
        """Indices of the next ``n`` queries (fewer once the set runs out; none after)."""
        n = check_int(n, "n", "QuerySampler.draw", lo=1)
        if self.replacement:
            if self.size == 0:
                return np.zeros(0, dtype=np.int64)
            return self._rng.integers(0, self.size, n).astype(np.int64)
        assert self.order is not None
        out = self.order[self.position : self.position + n]
        self.position += out.size
        return out

    def order_digest(self) -> str | None:
        """SHA-256 of the query order (None with replacement)."""
        if self.order is None:
            return None
        return hashlib.sha256(np.ascontiguousarray(self.order, dtype="<i8").tobytes()).hexdigest()

    def to_dict(self, *, include_order: bool = True) -> dict[str, Any]:
        """JSON-ready state; ``include_order=False`` stores only the order's digest (the caller
        then passes the order back to :meth:`from_dict`, e.g. rebuilt from the same seed)."""
        return {
            "size": self.size,
            "replacement": self.replacement,
            "position": self.position,
            "order": None if self.order is None or not include_order else self.order.tolist(),
            "order_sha256": self.order_digest(),
            "rng": self._rng.bit_generator.state,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], *, order: npt.ArrayLike | None = None) -> QuerySampler:
        """Rebuild from :meth:`to_dict`; ``order`` is required if it was not stored."""
        s = cls(0, 0, replacement=bool(d["replacement"]))
        s.size = int(d["size"])
        s.position = int(d["position"])
        if s.replacement:
            s.order = None
        else:
            src = d.get("order") if d.get("order") is not None else order
            if src is None:
                raise ProtocolError("This sampler state holds no query order: pass order=...")
            s.order = np.asarray(src, dtype=np.int64)
            want = d.get("order_sha256")
            if want is not None and s.order_digest() != want:
                raise ProtocolError(
                    "The query order does not match the one the state was saved with."
                )
            if s.order.size != s.size:
                raise ProtocolError(f"The query order has {s.order.size} entries, not {s.size}.")
        s._rng.bit_generator.state = d["rng"]
        return s


def query_order(rng: np.random.Generator, size: int) -> npt.NDArray[np.int64]:
    """The seeded query order of an auditor: a permutation of ``range(size)``."""
    return rng.permutation(size).astype(np.int64)


@dataclass
class _Held:
    round: int = 0
    counts: tuple[int, int, int, int] = (0, 0, 0, 0)
    sig: bytes = b""


class CoreOptions(TypedDict, total=False):
    """The keyword parameters both kinds of core take, with the shared constructor's defaults.

    Attributes
    ----------
    n : int
        Query budget per round (required; an increment larger than ``n`` per elapsed round is
        rejected).
    tau : float
        Half-width of the fair band (default ``PROTOCOL.tau``).
    signer : EntrySigner or None
        Signs the own entries (None: a :class:`NullSigner`).
    verifier : EntryVerifier or None
        Checks the entries received (None: a :class:`NullVerifier`).
    """

    n: Required[int]
    tau: float
    signer: EntrySigner | None
    verifier: EntryVerifier | None


@dataclass
class _Base:
    """The table, merge and persistence both roles share; its constructor is the one both
    cores' constructors pass :class:`CoreOptions` through to."""

    auditor_id: str
    roster: tuple[str, ...]
    n: int
    tau: float = PROTOCOL.tau
    signer: Any = None  # None: a NullSigner
    verifier: Any = None  # None: a NullVerifier
    round: int = 0
    own: tuple[int, int, int, int] = (0, 0, 0, 0)
    held: dict[str, _Held] = field(default_factory=dict)
    phase: str = "idle"  # idle -> open (after start_round) -> stamped -> idle (after end_round)
    role: ClassVar[str] = ""

    def __post_init__(self) -> None:
        # None means the null implementation; a given signer or verifier is kept even if falsy
        if self.signer is None:
            self.signer = NullSigner()
        if self.verifier is None:
            self.verifier = NullVerifier()
        if not self.roster:
            raise InvalidParameterError("The roster must list at least one auditor.")
        if len(set(self.roster)) != len(self.roster):
            raise InvalidParameterError("The roster lists an auditor twice.")
        if self.auditor_id not in self.roster:
            raise InvalidParameterError(f"Auditor {self.auditor_id!r} is not in the roster.")
        self.n = check_int(self.n, "n", type(self).__name__, lo=1)
        self.tau = check_real(self.tau, "tau", type(self).__name__, lo=0.0, hi=1.0)
        self.index = {a: k for k, a in enumerate(self.roster)}
        for a in self.roster:
            self.held.setdefault(a, _Held())

    # -- Step 1/2 helpers -------------------------------------------------------------------
    def start_round(self) -> int:
        """Open round ``t + 1`` and return it."""
        if self.phase != "idle":
            raise ProtocolError(f"start_round called in phase {self.phase!r}; end the round first.")
        self.round += 1
        self.phase = "open"
        return self.round

    def _stamp(self, inc: tuple[int, int, int, int]) -> Entry:
        if self.phase != "open":
            raise ProtocolError("The own entry is stamped once per round, after start_round.")
        if inc[1] + inc[3] > self.n:
            raise ProtocolError(f"An increment holds at most n = {self.n} queries. Got {inc}.")
        c = tuple(x + d for x, d in zip(self.own, inc, strict=True))
        cv = CountsVector(*c)
        sig = bytes(self.signer.sign_entry(self.round, *cv.as_tuple()))
        self.own = cv.as_tuple()
        self.held[self.auditor_id] = _Held(self.round, self.own, sig)
        self.phase = "stamped"
        return self.own_entry()

    def record_answers(self, increment: CountsVector | Sequence[int]) -> Entry:
        """Step 2: add this round's statistics to ``c`` and stamp the own entry with round t (an
        attacker: the counts of the answers an answer-level liar reports this round, its
        :meth:`~fairprobe.collab.attacker.AttackStrategy.answers` on records it drew)."""
        inc = increment if isinstance(increment, CountsVector) else CountsVector(*increment)
        return self._stamp(inc.as_tuple())

    def pass_round(self) -> Entry:
        """Stamp an empty increment (a closing round: the counts stay as they are)."""
        return self._stamp((0, 0, 0, 0))

    def own_entry(self) -> Entry:
        h = self.held[self.auditor_id]
        return Entry(self.auditor_id, h.round, CountsVector(*h.counts), h.sig)

    def table_entries(self) -> list[Entry]:
        """The table ``M_i`` to send: every entry held (round >= 1), in roster order."""
        return [
            Entry(a, h.round, CountsVector(*h.counts), h.sig)
            for a in self.roster
            if (h := self.held[a]).round >= 1
        ]

    # -- Step 4 -----------------------------------------------------------------------------
    def merge(self, entries: Iterable[Entry]) -> MergeReport:
        """Merge received entries one by one: a valid entry of a strictly newer round wins."""
        accepted: list[str] = []
        rejected: list[tuple[str, str]] = []
        ignored = 0
        for e in entries:
            reason = self._check(e)
            if reason == "ignore":
                ignored += 1
            elif reason is not None:
                rejected.append((e.auditor, reason))
            else:
                self.held[e.auditor] = _Held(e.round, e.counts.as_tuple(), e.sig)
                accepted.append(e.auditor)
        return MergeReport(tuple(accepted), tuple(rejected), ignored)

    def _check(self, e: Entry) -> str | None:
        if e.auditor not in self.index or not self.verifier.knows(e.auditor):
            return "unknown-auditor"
        h = self.held[e.auditor]
        c = e.counts.as_tuple()
        if e.round < 1:
            return "bad-round"
        if e.auditor == self.auditor_id:
            # nobody else can produce my entry; a relayed copy is at best a stale duplicate
            return (
                "ignore"
                if (e.round, c) == (h.round, h.counts) or e.round < h.round
                else ("bad-round")
            )
        if e.round < h.round:
            return "ignore"
        if e.round == h.round and c == h.counts:
            return "ignore"  # the same entry along another path
        cap = getattr(self, "max_round", None)
        if c[1] + c[3] > self.n * (e.round if cap is None else min(e.round, cap)):
            return "impossible-counts"  # (after the last querying round, no more queries)
        # verify before blaming the author: a tampered relayed copy is a bad signature
        if not self.verifier.verify_entry(e.auditor, e.round, *c, e.sig):
            return "bad-signature"
        if e.round == h.round:
            return "equivocation"  # the author signed two vectors for one round
        if any(x < y for x, y in zip(c, h.counts, strict=True)):
            return "shrinking-totals"
        if (c[1] + c[3]) - (h.counts[1] + h.counts[3]) > self.n * (e.round - h.round):
            return "over-budget"
        return None

    def _base_dict(self) -> dict[str, Any]:
        return {
            "auditor_id": self.auditor_id,
            "roster": list(self.roster),
            "n": self.n,
            "tau": self.tau,
            "round": self.round,
            "phase": self.phase,
            "own": list(self.own),
            "table": {
                a: {
                    "round": h.round,
                    "counts": list(h.counts),
                    "sig": base64.b64encode(h.sig).decode("ascii"),
                }
                for a, h in self.held.items()
            },
        }

    # -- persistence: to_dict / from_dict, with per-role hooks ----------------------------
    def to_dict(self) -> dict[str, Any]:
        """The whole state as JSON-ready data (a node persists it every round)."""
        d = self._base_dict()
        d["role"] = self.role
        d.update(self._extra_dict())
        return d

    def _extra_dict(self) -> dict[str, Any]:
        return {}

    @classmethod
    def _extra_init(cls, d: Mapping[str, Any]) -> dict[str, Any]:
        return {}

    def _load_extra(self, d: Mapping[str, Any]) -> None:
        return None

    @classmethod
    def from_dict(
        cls,
        d: Mapping[str, Any],
        *,
        signer: EntrySigner | None = None,
        verifier: EntryVerifier | None = None,
    ) -> Self:
        """Rebuild a core of this role from :meth:`to_dict` output."""
        build: Any = cls  # subclasses take keyword-only protocol parameters
        core: Self = build(
            str(d["auditor_id"]),
            list(d["roster"]),
            n=int(d["n"]),
            tau=float(d["tau"]),
            signer=signer,
            verifier=verifier,
            **cls._extra_init(d),
        )
        core._load_base(d)
        core._load_extra(d)
        return core

    def _load_base(self, d: Mapping[str, Any]) -> None:
        self.round = int(d["round"])
        self.phase = str(d["phase"])
        self.own = tuple(int(x) for x in d["own"])  # type: ignore[assignment]
        for a, h in d["table"].items():
            self.held[a] = _Held(
                int(h["round"]),
                tuple(int(x) for x in h["counts"]),  # type: ignore[arg-type]
                base64.b64decode(h["sig"]),
            )


class AuditorCore(_Base):
    """State machine of one honest auditor (Algorithm 1).

    Parameters
    ----------
    auditor_id : str
        This auditor's id; must appear in ``roster``.
    roster : sequence of str
        Every auditor of the audit (the permissioned network), in a fixed order; sums over
        auditors follow this order.
    z_max : float
        Cap of the suspicion score.

    Other Parameters
    ----------------
    n : int
        Query budget per round (an increment larger than ``n`` per elapsed round is rejected).
    tau : float
        Half-width of the fair band.
    signer : EntrySigner or None
        Signs the own entries (None: a :class:`NullSigner`).
    verifier : EntryVerifier or None
        Checks the entries received (None: a :class:`NullVerifier`). These four are
        :class:`CoreOptions`, the keyword parameters both cores pass to the constructor they share.
    """

    role = "honest"

    def __init__(
        self,
        auditor_id: str,
        roster: Sequence[str],
        *,
        z_max: float = PROTOCOL.z_max,
        **options: Unpack[CoreOptions],
    ) -> None:
        super().__init__(auditor_id, tuple(roster), **options)
        self.z_max = check_real(z_max, "z_max", "AuditorCore", lo=0.0, closed="neither")
        v = len(self.roster)
        self.prev = np.zeros((v, 4), dtype=np.int64)
        self.prev_round = np.zeros(v, dtype=np.int64)
        self.W = np.zeros((v, 4), dtype=np.float64)
        self.last_report: RoundReport | None = None

    def end_round(self) -> RoundReport:
        """Steps 5-6: score and weight every replaced entry, update ``prev``, estimate."""
        if self.phase == "open":  # an auditor with no query left still stamps its round
            self._stamp((0, 0, 0, 0))
        if self.phase != "stamped":
            raise ProtocolError(f"end_round called in phase {self.phase!r}.")
        rows = [k for k, a in enumerate(self.roster) if self.held[a].round > self.prev_round[k]]
        scores: dict[str, float] = {}
        weights: dict[str, float] = {}
        if rows:
            cur = np.array([self.held[self.roster[k]].counts for k in rows], dtype=np.int64)
            prev = self.prev[rows]
            delta = cur - prev
            res = suspicion_scores(prev, delta, self.z_max)
            for r, k in enumerate(rows):
                self.W[k] = self.W[k] + res.weight[r] * delta[r].astype(np.float64)
                self.prev[k] = cur[r]
                self.prev_round[k] = self.held[self.roster[k]].round
                scores[self.roster[k]] = float(res.score[r])
                weights[self.roster[k]] = float(res.weight[r])
        self.phase = "idle"
        self.last_report = RoundReport(self.round, scores, weights, self.estimate())
        return self.last_report

    def weighted_total(self) -> npt.NDArray[np.float64]:
        """``sum_j W_j`` in roster order."""
        return np.asarray(self.W.sum(axis=0))

    def estimate(self) -> float:
        """Step 6: ``DP(sum_j W_j)`` (NaN while a group has no data)."""
        return dp_of(self.weighted_total())

    def robust_estimate(self, params: Any = None) -> float:
        """The recommended ``robust`` estimate (:mod:`fairprobe.collab.robust`): the Auditopus
        weights plus influence screening and the decisive screening (rule 5), on this auditor's
        table (``params``: a :class:`~fairprobe.collab.robust.RobustParams`, default the
        recommended ones with this auditor's band ``tau``)."""
        from fairprobe.collab.robust import RobustParams, robust_estimate

        held = np.array([self.held[a].round >= 1 for a in self.roster])
        p = params if params is not None else RobustParams(tau=self.tau)
        return float(robust_estimate(self.W, self.table_counts(), held, p).estimate)

    def estimate_of(self, method: str = "auditopus") -> float:
        """This auditor's estimate by ``method``: ``auditopus`` (Step 6), ``robust``, or any
        registered baseline aggregator (``none``, ``median``, ...) over its table."""
        if method == "auditopus":
            return self.estimate()
        if method == "robust":
            return self.robust_estimate()
        from fairprobe.collab.baselines import get_aggregator

        held = np.array([self.held[a].round >= 1 for a in self.roster])
        return float(get_aggregator(method)(self.table_counts()[None], held[None])[0])

    def table_counts(self) -> npt.NDArray[np.int64]:
        """The latest counts vector held per auditor, roster order, shape (V, 4)."""
        return np.array([self.held[a].counts for a in self.roster], dtype=np.int64)

    def verdict(self, method: str = "auditopus", *, certify: bool = False) -> Verdict:
        """Final verdict by ``method`` (``auditopus``, ``robust``, or a baseline), optionally
        with its certificate (:meth:`certificate`)."""
        est = self.estimate_of(method)
        if math.isnan(est):
            raise EmptyGroupError("No statistics of one group have arrived yet: no verdict.")
        cert = self.certificate(method) if certify else None
        return Verdict(self.auditor_id, self.role, self.round, est, self.tau, method, cert)

    def certificate(self, method: str = "robust") -> Any:
        """How many fabricating auditors this auditor's verdict withstands.

        :func:`fairprobe.collab.certificate.certify` on the vectors the estimate sums (``W_j``
        for ``auditopus``, the table for ``none``), each fabricator holding at most ``n`` queries
        per round elapsed; ``robust`` inherits the Auditopus certificate when both verdicts are
        unfair on the same side (:func:`~fairprobe.collab.certificate.robust_certified_k`), else
        0. Other methods have no certificate (:class:`InvalidParameterError`).
        """
        from dataclasses import replace as _replace

        from fairprobe.collab.certificate import certify

        held = np.array([self.held[a].round >= 1 for a in self.roster])
        budget = self.n * max(self.round, 1)
        if method == "none":
            return certify(self.table_counts()[held], budget, self.tau, method="none")
        if method not in ("auditopus", "robust"):
            raise InvalidParameterError(
                f"The 'method' parameter of certificate must be one of auditopus, robust, none. "
                f"Got {method!r} instead."
            )
        cert = certify(self.W[held], budget, self.tau, method="auditopus")
        if method == "auditopus":
            return cert
        rob = self.robust_estimate()
        same = abs(rob) > self.tau and not cert.fair and (rob < 0) == (cert.estimate < 0)
        return _replace(
            cert,
            estimate=rob,
            fair=abs(rob) <= self.tau,
            certified_k=cert.certified_k if same else 0,
            method="robust",
        )

    def _extra_dict(self) -> dict[str, Any]:
        return {
            "z_max": self.z_max,
            "prev": self.prev.tolist(),
            "prev_round": self.prev_round.tolist(),
            "W": self.W.tolist(),
        }

    @classmethod
    def _extra_init(cls, d: Mapping[str, Any]) -> dict[str, Any]:
        return {"z_max": float(d["z_max"])}

    def _load_extra(self, d: Mapping[str, Any]) -> None:
        self.prev = np.asarray(d["prev"], dtype=np.int64).reshape(-1, 4)
        self.prev_round = np.asarray(d["prev_round"], dtype=np.int64)
        self.W = np.asarray(d["W"], dtype=np.float64).reshape(-1, 4)


class AttackerCore(_Base):
    """A non-colluding attacker (Algorithm 2): same table and merge, fabricated own entry.

    It reports 0 as its final estimate (Section VI-A).
    """

    role = "attacker"

    def __init__(
        self,
        auditor_id: str,
        roster: Sequence[str],
        *,
        strategy: AttackStrategy | str = "adaptive",
        **options: Unpack[CoreOptions],
    ) -> None:
        super().__init__(auditor_id, tuple(roster), **options)
        self.strategy = get_attack(strategy) if isinstance(strategy, str) else strategy

    def view(self) -> CountsVector:
        """``C = sum_j M_k[j].c``: the attacker's view of the global counts vector (eq. 5)."""
        tot = np.zeros(4, dtype=np.int64)
        for a in self.roster:
            tot += np.asarray(self.held[a].counts, dtype=np.int64)
        return CountsVector.from_array(tot)

    def fabricate(self) -> Entry:
        """Lines 3-4: fabricate this round's increment from the view and stamp the own entry."""
        if self.phase != "open":
            raise ProtocolError("fabricate is called once per round, after start_round.")
        inc = self.strategy.fabricate_one(self.view(), self.n, self.round)
        return self._stamp(inc.as_tuple())

    def end_round(self) -> RoundReport:
        if self.phase == "open":
            self.fabricate()
        if self.phase != "stamped":
            raise ProtocolError(f"end_round called in phase {self.phase!r}.")
        self.phase = "idle"
        return RoundReport(self.round, {}, {}, 0.0)

    def estimate(self) -> float:
        return 0.0

    def verdict(self) -> Verdict:
        return Verdict(self.auditor_id, self.role, self.round, 0.0, self.tau)

    def _extra_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"strategy": self.strategy.name}
        ctx = getattr(self.strategy, "context", None)
        if ctx is not None:  # a calibrated liar: persist the platform's instruction too
            d["attack_context"] = ctx.to_dict()
        return d

    @classmethod
    def _extra_init(cls, d: Mapping[str, Any]) -> dict[str, Any]:
        name = str(d["strategy"])
        if d.get("attack_context") is None:
            return {"strategy": name}
        from fairprobe.collab.attacker import AttackContext

        ctx = AttackContext.from_dict(dict(d["attack_context"]))
        return {"strategy": get_attack(name).calibrate(ctx)}


def core_from_dict(
    d: Mapping[str, Any],
    *,
    signer: EntrySigner | None = None,
    verifier: EntryVerifier | None = None,
) -> AuditorCore | AttackerCore:
    """Rebuild either kind of core from :meth:`to_dict` output."""
    if d.get("role") == "attacker":
        return AttackerCore.from_dict(d, signer=signer, verifier=verifier)
    return AuditorCore.from_dict(d, signer=signer, verifier=verifier)
