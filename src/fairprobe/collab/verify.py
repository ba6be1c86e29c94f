"""Verification of answers: committed records, random challenges, transferable proofs of fraud.

An optional layer over the collaborative audit (``collaborative-auditing-auditopus.md``,
Section III-B signs counts; this layer is fairprobe's). The paper's auditors cannot check
another auditor's counts: they never see its queries. Here each auditor **commits**, inside the
entry it signs every round, to the records behind its counts, and its neighbours **challenge** a
few random records each round and re-ask the model.

Commitment: a Merkle *sum* tree
    Leaf ``k`` is the ``k``-th record the auditor counted: ``(record, group, answer, salt_k)``,
    hashed as ``H(0x00 || salt || group || answer || len || record)``; its counts are
    ``(answer*g, g, answer*(1-g), 1-g)`` with ``g = 1`` for group A. An inner node is
    ``H(0x01 || left || right || a || A || b || B)`` with the *sum* of its children's counts; a
    lone last node of a level is promoted unchanged. The root's counts are the cumulative counts
    ``c = (a, A, b, B)`` of the entry, so the root binds the counts to the records: a root whose
    leaves do not add up to the signed counts cannot be opened consistently. The entry of round
    ``t`` signs ``(id, t, a, A, b, B, root)`` (:func:`committed_entry_bytes`); the 32-byte root
    travels inside the entry's signature field (:class:`CommittingSigner`), so it is relayed and
    verified with the entry, network-wide, and the protocol core needs no change.
Challenge
    Neighbour ``i`` of ``j`` signs ``(j, r, root)`` for the latest entry of ``j`` it holds; the
    SHA-256 of that signature seeds the choice of ``c`` leaf indices (:func:`challenge_indices`),
    unpredictable to ``j`` when it committed and recomputable by anyone. ``j`` answers with one
    signed :class:`Opening` per index (the record, its group, answer, salt and the Merkle path
    with the siblings' counts). ``i`` checks the path against ``j``'s signed entry and re-asks the
    model the opened records.
Proof of fraud (:class:`FraudProof`)
    ``j``'s signed entry and ``j``'s signed opening, plus the challenger's signature. Anyone can
    check it: ``bad-opening`` (the signed opening does not match the signed root or its counts) is
    proven by the signatures alone; ``wrong-answer`` (the opening is consistent, but the model
    answers the record otherwise) costs the checker one query. A node that accepts a proof
    excludes ``j`` -- drops its entries and removes every contribution of ``j`` from its estimate
    (:func:`exclude_source`) -- and forwards the proof to its neighbours.

What it catches, what it cannot (docs/collab-network.md, "Verification of answers")
    It catches a source that counts answers the model did not give, on records it committed to,
    with probability about ``1 - (1 - f)^(challenges)`` for a fraction ``f`` of such records. It
    cannot catch a source that answers **truthfully on records it chose** (the ``selective``
    attack, or any cherry-picked sample), nor a wrong *group* label when the group cannot be read
    off the record, and it assumes the model answers a record the same way every time (a sampled
    LLM must run at temperature 0 or be cached by the platform; otherwise an honest source can be
    accused).

:func:`simulate_verification` runs the layer in the simulator (vectorised over attackers and
rounds) and measures how fast fabricators are excluded, the extra queries and the bytes.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import math
import struct
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, cast

import numpy as np
import numpy.typing as npt

from fairprobe._validation import check_int, check_real
from fairprobe.errors import InvalidParameterError, ProtocolError

__all__ = [
    "ROOT_BYTES",
    "ChallengeCore",
    "ChallengeRequest",
    "ChallengeSpec",
    "CommittingSigner",
    "CommittingVerifier",
    "EquivocationProof",
    "FraudProof",
    "LeafLog",
    "MerkleSumTree",
    "Opening",
    "ProofBudget",
    "VerifyConfig",
    "a4_check",
    "assign_claimed_answers",
    "challenge_allocation",
    "challenge_count",
    "challenge_indices",
    "challenge_message",
    "committed_entry_bytes",
    "exclude_source",
    "leaf_counts",
    "leaf_hash",
    "max_openings",
    "prefix_root",
    "proof_from_dict",
    "simulate_challenges",
    "simulate_verification",
    "verify_opening",
]

ROOT_BYTES = 32
SIG_BYTES = 64
COMMIT_TAG = b"fairprobe/collab/entry/v2+root\x00"
CHALLENGE_TAG = b"fairprobe/collab/challenge/v1\x00"
OPENING_TAG = b"fairprobe/collab/opening/v1\x00"
PROOF_TAG = b"fairprobe/collab/fraud/v1\x00"
SALT_TAG = b"fairprobe/collab/leaf-salt-key/v1\x00"
_LEAF = b"\x00"
_NODE = b"\x01"
_EMPTY = hashlib.sha256(b"fairprobe/collab/empty-tree/v1").digest()
_U64 = (1 << 64) - 1

IntArray = npt.NDArray[np.int64]


class Signer(Protocol):
    def sign(self, message: bytes) -> bytes: ...


class Verifier(Protocol):
    def verify(self, auditor_id: str, message: bytes, signature: bytes) -> bool: ...


# -- leaves and the Merkle sum tree ---------------------------------------------------------------
def canonical_record(record: Mapping[str, Any]) -> bytes:
    """The bytes of a record that its leaf commits to (sorted-key compact JSON, UTF-8)."""
    return json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      default=str).encode("utf-8")


def leaf_hash(record: bytes, group_a: bool, answer: int, salt: bytes) -> bytes:
    """``H(0x00 || salt || group || answer || len(record) || record)``."""
    if answer not in (0, 1):
        raise ProtocolError(f"A committed answer is 0 or 1. Got {answer!r}.")
    return hashlib.sha256(
        _LEAF + salt + bytes((int(bool(group_a)), int(answer)))
        + struct.pack(">I", len(record)) + record
    ).digest()


def leaf_counts(group_a: npt.ArrayLike, answer: npt.ArrayLike) -> IntArray:
    """Counts ``(a, A, b, B)`` of each leaf, shape ``(m, 4)``."""
    g = np.asarray(group_a, dtype=np.int64)
    y = np.asarray(answer, dtype=np.int64)
    return np.stack([y * g, g, y * (1 - g), 1 - g], axis=-1).astype(np.int64)


def _node_hash(left: bytes, right: bytes, counts: Sequence[int]) -> bytes:
    return hashlib.sha256(_NODE + left + right + struct.pack(">4Q", *counts)).digest()


def _counts_ok(c: Sequence[int], size: int) -> bool:
    a, A, b, B = (int(x) for x in c)
    return 0 <= a <= A and 0 <= b <= B and A + B == size


class MerkleSumTree:
    """A Merkle sum tree over leaves appended in order (see the module docstring).

    Appending ``k`` leaves to ``m`` recomputes only the right edge: ``O(k + log m)`` hashes.
    """

    def __init__(self) -> None:
        self._hashes: list[list[bytes]] = [[]]
        self._counts: list[list[tuple[int, int, int, int]]] = [[]]

    @classmethod
    def build(cls, hashes: Sequence[bytes], counts: npt.ArrayLike) -> MerkleSumTree:
        t = cls()
        t.append(hashes, counts)
        return t

    @property
    def size(self) -> int:
        return len(self._hashes[0])

    def append(self, hashes: Sequence[bytes], counts: npt.ArrayLike) -> None:
        c = np.asarray(counts, dtype=np.int64).reshape(-1, 4)
        if len(hashes) != c.shape[0]:
            raise ProtocolError("append: one counts row per leaf hash.")
        if not len(hashes):
            return
        start = self.size
        self._hashes[0].extend(bytes(h) for h in hashes)
        self._counts[0].extend(tuple(int(x) for x in row) for row in c.tolist())  # type: ignore[misc]
        h = 0
        while len(self._hashes[h]) > 1:
            lo = start // 2
            hs, cs = self._hashes[h], self._counts[h]
            if len(self._hashes) == h + 1:
                self._hashes.append([])
                self._counts.append([])
            up_h, up_c = self._hashes[h + 1], self._counts[h + 1]
            del up_h[lo:]
            del up_c[lo:]
            for j in range(lo, (len(hs) + 1) // 2):
                if 2 * j + 1 < len(hs):
                    s = tuple(x + y for x, y in zip(cs[2 * j], cs[2 * j + 1], strict=True))
                    up_h.append(_node_hash(hs[2 * j], hs[2 * j + 1], s))
                    up_c.append(s)  # type: ignore[arg-type]
                else:  # a lone last node is promoted
                    up_h.append(hs[2 * j])
                    up_c.append(cs[2 * j])
            start = lo
            h += 1
        del self._hashes[h + 1:]
        del self._counts[h + 1:]

    def root(self) -> bytes:
        return _EMPTY if self.size == 0 else self._hashes[-1][0]

    def total(self) -> tuple[int, int, int, int]:
        return (0, 0, 0, 0) if self.size == 0 else self._counts[-1][0]

    def path(self, k: int) -> list[tuple[bytes, tuple[int, int, int, int]]]:
        """Siblings ``(hash, counts)`` from leaf ``k`` up (levels where ``k``'s node is promoted
        have no sibling and no element)."""
        if not 0 <= k < self.size:
            raise ProtocolError(f"Leaf {k} is not in a tree of {self.size} leaves.")
        out = []
        for h in range(len(self._hashes) - 1):
            s = k ^ 1
            if s < len(self._hashes[h]):
                out.append((self._hashes[h][s], self._counts[h][s]))
            k //= 2
        return out


def _path_steps(
    k: int, m: int, path: Sequence[tuple[bytes, Sequence[int]]]
) -> list[tuple[int, int, bytes, Sequence[int]]] | None:
    """The opening of leaf ``k`` of ``m`` matched to its levels, bottom up: ``(level, index of
    the path's node at that level, sibling hash, sibling counts)`` for each level where the
    node has a sibling (an odd last node is promoted without one); None if the path has more or
    fewer entries than the tree's shape gives position ``k``."""
    steps = []
    it = iter(path)
    width, level = m, 0
    while width > 1:
        if (k ^ 1) < width:
            try:
                sh, sc = next(it)
            except StopIteration:
                return None
            steps.append((level, k, bytes(sh), sc))
        k //= 2
        width = (width + 1) // 2
        level += 1
    if next(it, None) is not None:
        return None
    return steps


def root_from_path(
    k: int, m: int, leaf: bytes, counts: Sequence[int],
    path: Sequence[tuple[bytes, Sequence[int]]],
) -> tuple[bytes, tuple[int, int, int, int]] | None:
    """Recompute ``(root, total counts)`` from leaf ``k`` of ``m`` and its path; None if the
    path has the wrong shape for position ``k`` or a sibling's counts are impossible for the
    number of leaves under it."""
    if not 0 <= k < m:
        return None
    steps = _path_steps(k, m, path)
    if steps is None:
        return None
    h_ = leaf
    c = tuple(int(x) for x in counts)
    for level, node, sh, sc in steps:
        lo = (node ^ 1) << level
        size = min(1 << level, m - lo)
        if not _counts_ok(sc, size):
            return None
        scs = tuple(int(x) for x in sc)
        c2 = tuple(x + y for x, y in zip(c, scs, strict=True))
        if any(x > _U64 for x in c2):
            return None
        h_ = _node_hash(h_, sh, c2) if node % 2 == 0 else _node_hash(sh, h_, c2)
        c = c2
    return h_, c  # type: ignore[return-value]


def prefix_root(
    k: int, m: int, leaf: bytes, counts: Sequence[int],
    path: Sequence[tuple[bytes, Sequence[int]]],
) -> tuple[bytes, tuple[int, int, int, int]] | None:
    """``(root, total counts)`` of the tree over the first ``k + 1`` leaves, from the path of
    leaf ``k`` in the tree over ``m > k`` leaves (None if the path has the wrong shape).

    Leaf ``k`` is the last leaf of the smaller tree: at each level its node there has a sibling
    exactly when its index is odd (a full left subtree, the same node in both trees); otherwise
    it is promoted. So the left siblings of the path, folded in order, give the smaller root.
    With :func:`root_from_path` on the same opening this proves that the first ``k + 1`` leaves
    under both roots are the same (collision resistance of SHA-256)."""
    if not 0 <= k < m:
        return None
    steps = _path_steps(k, m, path)
    if steps is None:
        return None
    h_, c = leaf, tuple(int(x) for x in counts)
    for level, node, sh, sc in steps:
        if node % 2 == 1:  # a left sibling: in the smaller tree too
            lo = (node ^ 1) << level
            if not _counts_ok(sc, 1 << level) or lo + (1 << level) > k + 1:
                return None
            c = tuple(x + int(y) for x, y in zip(c, sc, strict=True))
            h_ = _node_hash(sh, h_, c)
    return h_, c  # type: ignore[return-value]


# -- salts and the leaf log of one auditor --------------------------------------------------------
def salt_key(signer: Signer) -> bytes:
    """A per-auditor secret for leaf salts, derived from its private key (deterministic, so a
    restarted node rebuilds the same tree)."""
    return hashlib.sha256(signer.sign(SALT_TAG)).digest()


def leaf_salt(key: bytes, k: int) -> bytes:
    return hmac.new(key, struct.pack(">Q", k), hashlib.sha256).digest()[:16]


#: Default challenge rate ``c`` of the nodes and the demo: every committed answer is opened
#: with probability >= c. With degree 4 it costs about ``c x degree`` of the audit's queries
#: plus one link leaf per neighbour and round (0.008: 3.9-4.9% measured with 0-3 liars,
#: experiments/collab/certificates.py).
DEFAULT_RATE = 0.008

#: Default declared liar bound ``K`` of the nodes and the demo: the verdict holds whichever
#: one source lies besides those proven (a liar verification cannot catch: truthful answers
#: on records it chose, or refused challenges), on top of the falsifiers verification proves.
DEFAULT_MAX_LIARS = 1

#: Earlier-round trees a :class:`LeafLog` keeps (challenges of old rounds).
TREE_CACHE = 8


@dataclass
class LeafLog:
    """The records an auditor has counted, in order, and its Merkle sum tree over them.

    ``items[k] = (record_index, group_a, answer)``; the record bytes come from ``records``
    (the auditor's private query set) through :func:`canonical_record`.
    """

    salt_key: bytes
    records: Sequence[Mapping[str, Any]]
    items: list[tuple[int, int, int]] = field(default_factory=list)
    tree: MerkleSumTree = field(default_factory=MerkleSumTree)

    def _leaf(self, k: int) -> bytes:
        ri, g, y = self.items[k]
        return leaf_hash(canonical_record(self.records[ri]), bool(g), y, leaf_salt(self.salt_key, k))

    def add(self, record_index: npt.ArrayLike, group_a: npt.ArrayLike, answer: npt.ArrayLike) -> None:
        ri = np.asarray(record_index, dtype=np.int64).ravel()
        g = np.asarray(group_a, dtype=np.int64).ravel()
        y = np.asarray(answer, dtype=np.int64).ravel()
        start = len(self.items)
        self.items.extend(zip(ri.tolist(), g.tolist(), y.tolist(), strict=True))
        hashes = [self._leaf(k) for k in range(start, len(self.items))]
        self.tree.append(hashes, leaf_counts(g, y))

    def root(self) -> bytes:
        return self.tree.root()

    def tree_at(self, m: int) -> MerkleSumTree:
        """The tree over the first ``m`` leaves (the root of an earlier round).

        Earlier trees are cached (the last :data:`TREE_CACHE` sizes asked for): a challenge of
        an old round rebuilds its tree once, not on every request."""
        if m == self.tree.size:
            return self.tree
        if not 0 <= m <= self.tree.size:
            raise ProtocolError(f"No root over {m} leaves: {self.tree.size} counted.")
        cache = self.__dict__.setdefault("_trees", {})
        if m in cache:
            cache[m] = cache.pop(m)  # most recently used last
            return cast(MerkleSumTree, cache[m])
        hashes = [self._leaf(k) for k in range(m)]
        g = [it[1] for it in self.items[:m]]
        y = [it[2] for it in self.items[:m]]
        tree = MerkleSumTree.build(hashes, leaf_counts(g, y))
        cache[m] = tree
        while len(cache) > TREE_CACHE:
            cache.pop(next(iter(cache)))
        return tree

    def open(self, auditor: str, round_: int, m: int, indices: Iterable[int], signer: Signer
             ) -> list[Opening]:
        tree = self.tree_at(m)
        out = []
        for k in indices:
            ri, g, y = self.items[k]
            op = Opening(
                auditor=auditor, round=round_, m=m, index=int(k),
                record=canonical_record(self.records[ri]), group_a=bool(g), answer=int(y),
                salt=leaf_salt(self.salt_key, int(k)), path=tree.path(int(k)),
            )
            out.append(op.signed(signer))
        return out

    def to_state(self) -> dict[str, Any]:
        arr = np.asarray(self.items, dtype=np.int64).reshape(-1, 3)
        return {"items": base64.b64encode(arr.astype("<i8").tobytes()).decode("ascii")}

    def load_state(self, d: Mapping[str, Any]) -> None:
        raw = base64.b64decode(d["items"])
        arr = np.frombuffer(raw, dtype="<i8").reshape(-1, 3)
        self.items = []
        self.tree = MerkleSumTree()
        self.__dict__.pop("_trees", None)
        if arr.size:
            self.add(arr[:, 0], arr[:, 1], arr[:, 2])


# -- the commitment inside the signed entry -------------------------------------------------------
def committed_entry_bytes(auditor: str, round_: int, a: int, A: int, b: int, B: int,
                          root: bytes) -> bytes:
    """What an auditor signs with verification on: its entry and the root of its records."""
    from fairprobe.collab.net.keys import entry_bytes

    if len(root) != ROOT_BYTES:
        raise ProtocolError("A records root is 32 bytes.")
    return COMMIT_TAG + entry_bytes(auditor, round_, a, A, b, B) + root


def split_signature(sig: bytes) -> tuple[bytes, bytes | None]:
    """``(ed25519 signature, root)`` of an entry's signature field (root None without one)."""
    if len(sig) == SIG_BYTES + ROOT_BYTES:
        return sig[:SIG_BYTES], sig[SIG_BYTES:]
    return sig, None


class CommittingSigner:
    """An ``EntrySigner`` that signs ``(entry, root)`` and appends the root to the signature.

    ``root_for(round, counts)`` returns the root over the records behind the cumulative
    ``counts`` being signed (a fabricator builds its leaves there); without it,
    :attr:`pending_root` is used.
    """

    def __init__(self, base: Any, root_for: Any = None) -> None:
        self.base = base
        self.auditor_id: str = base.auditor_id
        self.pending_root: bytes = _EMPTY
        self.root_for = root_for

    def sign(self, message: bytes) -> bytes:
        return bytes(self.base.sign(message))

    def sign_entry(self, round_: int, a: int, A: int, b: int, B: int) -> bytes:
        root = self.pending_root if self.root_for is None else self.root_for(round_, (a, A, b, B))
        msg = committed_entry_bytes(self.auditor_id, round_, a, A, b, B, root)
        return bytes(self.base.sign(msg)) + root

    def __getattr__(self, name: str) -> Any:
        return getattr(self.base, name)


class CommittingVerifier:
    """An ``EntryVerifier`` that accepts only entries carrying a records root (``require``)."""

    def __init__(self, base: Any, *, require: bool = True) -> None:
        self.base = base
        self.require = require

    def knows(self, auditor_id: str) -> bool:
        return bool(self.base.knows(auditor_id))

    def verify(self, auditor_id: str, message: bytes, signature: bytes) -> bool:
        return bool(self.base.verify(auditor_id, message, signature))

    def verify_entry(self, auditor: str, round_: int, a: int, A: int, b: int, B: int,
                     signature: bytes) -> bool:
        sig, root = split_signature(signature)
        if root is None:
            return not self.require and bool(
                self.base.verify_entry(auditor, round_, a, A, b, B, signature))
        try:
            msg = committed_entry_bytes(auditor, round_, a, A, b, B, root)
        except ProtocolError:
            return False
        return bool(self.base.verify(auditor, msg, sig))


# -- challenges -----------------------------------------------------------------------------------
def challenge_message(prover: str, round_: int, root: bytes) -> bytes:
    """What a challenger signs; the SHA-256 of its signature seeds the challenged indices."""
    raw = prover.encode("utf-8")
    return CHALLENGE_TAG + struct.pack(">H", len(raw)) + raw + struct.pack(">Q", round_) + root


def challenge_indices(seed: bytes | int, m: int, c: int, lo: int = 0) -> list[int]:
    """``min(c, m - lo)`` distinct leaf indices in ``[lo, m)``, drawn from ``seed`` (sorted).

    ``lo`` is where the challenger's previous challenge of this prover ended
    (:class:`ChallengeCore`): only leaves committed since then are drawn, uniformly."""
    check_int(m, "m", "challenge_indices", lo=0)
    check_int(c, "c", "challenge_indices", lo=0)
    check_int(lo, "lo", "challenge_indices", lo=0)
    width = m - lo
    if width <= 0 or c == 0:
        return []
    s = int.from_bytes(hashlib.sha256(seed).digest(), "big") if isinstance(seed, bytes) else seed
    rng = np.random.default_rng(s)
    return sorted(lo + int(x) for x in rng.choice(width, size=min(c, width), replace=False))


def challenge_count(rate: float, new_leaves: int) -> int:
    """Leaves a challenger opens among ``new_leaves`` leaves committed since its last challenge
    of the prover: ``ceil(rate * new_leaves)`` (0 when there are none).

    Drawn uniformly without replacement, each new leaf is opened with probability
    ``ceil(rate d) / d >= rate``, whatever round it was committed in (the rule behind
    :func:`fairprobe.collab.bounded.escape_bound`, proof in docs/collab.md)."""
    d = int(new_leaves)
    if d <= 0 or rate <= 0:
        return 0
    return min(d, int(math.ceil(float(rate) * d - 1e-9)))


@dataclass(frozen=True)
class ChallengeRequest:
    """One planned challenge: open ``count`` leaves of ``prover``'s root over ``m`` leaves
    among ``[lo, m)``, plus the link leaf ``lo - 1`` when ``lo > 0`` (prefix consistency)."""

    prover: str
    lo: int
    m: int
    count: int

    @property
    def link(self) -> int | None:
        return self.lo - 1 if self.lo > 0 else None


@dataclass
class ChallengeCore:
    """The challenge rule of one honest challenger, free of I/O (simulator and nodes run it).

    Every round (closing rounds included), for each live neighbour ``u`` whose latest held root
    covers ``m > lo`` leaves, ``lo`` being the leaves covered by this challenger's previous
    challenge of ``u``, it plans :func:`challenge_count` ``(rate, m - lo)`` leaves drawn
    uniformly in ``[lo, m)``, and the link leaf ``lo - 1``: its path must reproduce both the new
    root and the root over ``lo`` leaves it challenged before (:func:`prefix_root`), so a prover
    cannot rewrite leaves it committed earlier. :meth:`covered` is called once the challenge
    has been answered (or has failed: the caller then widens, see ``bounded``).
    """

    rate: float
    checked: dict[str, int] = field(default_factory=dict)

    def plan(self, held: Mapping[str, int], live: Iterable[str]) -> list[ChallengeRequest]:
        """Requests for the neighbours ``live`` (in that order); ``held[u]`` is the number of
        leaves under ``u``'s latest held root."""
        out = []
        for u in live:
            m = int(held.get(u, 0))
            lo = int(self.checked.get(u, 0))
            if m > lo:
                c = challenge_count(self.rate, m - lo)
                if c:
                    out.append(ChallengeRequest(u, lo, m, c))
        return out

    def covered(self, prover: str, m: int) -> None:
        """Leaves ``[0, m)`` of ``prover`` have been challenged."""
        self.checked[prover] = max(int(m), int(self.checked.get(prover, 0)))

    def to_dict(self) -> dict[str, Any]:
        return {"rate": self.rate, "checked": dict(self.checked)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ChallengeCore:
        return cls(float(d["rate"]), {str(k): int(v) for k, v in d.get("checked", {}).items()})


def max_openings(rate: float, lo: int, m: int) -> int:
    """Openings a prover serves for one challenge of ``[lo, m)``: the drawn leaves and the
    link leaf (a challenger that asks more is refused)."""
    return challenge_count(rate, m - lo) + (1 if lo > 0 else 0)


@dataclass(frozen=True)
class ChallengeSpec:
    """A challenge as sent: ``challenger`` asks ``prover`` to open ``count`` leaves of its root
    of ``round``; ``sig`` is the challenger's signature of :func:`challenge_message`."""

    challenger: str
    prover: str
    round: int
    m: int
    count: int
    root: bytes
    sig: bytes

    def indices(self) -> list[int]:
        return challenge_indices(self.sig, self.m, self.count)


@dataclass(frozen=True)
class Opening:
    """Leaf ``index`` of ``auditor``'s root over ``m`` leaves of ``round``, signed by ``auditor``."""

    auditor: str
    round: int
    m: int
    index: int
    record: bytes
    group_a: bool
    answer: int
    salt: bytes
    path: list[tuple[bytes, tuple[int, int, int, int]]]
    sig: bytes = b""

    def message(self) -> bytes:
        body = {
            "auditor": self.auditor, "round": self.round, "m": self.m, "index": self.index,
            "record": base64.b64encode(self.record).decode(), "group_a": self.group_a,
            "answer": self.answer, "salt": self.salt.hex(),
            "path": [[h.hex(), list(c)] for h, c in self.path],
        }
        return OPENING_TAG + hashlib.sha256(
            json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).digest()

    def signed(self, signer: Signer) -> Opening:
        return Opening(self.auditor, self.round, self.m, self.index, self.record, self.group_a,
                       self.answer, self.salt, self.path, bytes(signer.sign(self.message())))

    def record_dict(self) -> dict[str, Any]:
        """The opened record as a JSON object (:class:`ProtocolError` if it is not one)."""
        rec = record_of(self.record)
        if rec is None:
            raise ProtocolError("The opened record is not a UTF-8 JSON object.")
        return rec


    def to_dict(self) -> dict[str, Any]:
        """Wire form: bytes in base64 (the signed :meth:`message` does not depend on it)."""

        def b64(x: bytes) -> str:
            return base64.b64encode(x).decode("ascii")

        return {
            "auditor": self.auditor, "round": self.round, "m": self.m, "index": self.index,
            "record": b64(self.record), "group_a": self.group_a, "answer": self.answer,
            "salt": b64(self.salt), "path": [[b64(h), *c] for h, c in self.path],
            "sig": b64(self.sig),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Opening:
        try:
            path = []
            for el in d["path"]:
                h = base64.b64decode(el[0], validate=True)
                c = tuple(int(x) for x in el[1:])
                if len(h) != 32 or len(c) != 4:
                    raise ValueError("path element")
                path.append((h, c))
            return cls(
                auditor=str(d["auditor"]), round=int(d["round"]), m=int(d["m"]),
                index=int(d["index"]), record=base64.b64decode(d["record"], validate=True),
                group_a=bool(d["group_a"]), answer=int(d["answer"]),
                salt=base64.b64decode(d["salt"], validate=True), path=path,  # type: ignore[arg-type]
                sig=base64.b64decode(d["sig"], validate=True),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ProtocolError(f"Malformed opening: {exc}.") from None


def record_of(raw: bytes) -> dict[str, Any] | None:
    """``raw`` decoded as a UTF-8 JSON object, or None (what a proof's record must be: the
    checker re-asks the model with it)."""
    try:
        d = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    return d if isinstance(d, dict) else None


def verify_opening(op: Opening, counts: Sequence[int], root: bytes) -> bool:
    """True iff ``op`` opens a leaf of the root committed with ``counts`` (``m = A + B``)."""
    if op.m != int(counts[1]) + int(counts[3]) or op.answer not in (0, 1):
        return False
    leaf = leaf_hash(op.record, op.group_a, op.answer, op.salt)
    lc = leaf_counts([int(op.group_a)], [op.answer])[0]
    got = root_from_path(op.index, op.m, leaf, lc.tolist(), op.path)
    return got is not None and got[0] == root and got[1] == tuple(int(x) for x in counts)


FraudKind = Literal["bad-opening", "wrong-answer", "refused-record"]
#: Proof kinds; ``refused-record``: the opening is consistent, but its record is not one the
#: model answers (not a JSON object, or refused for good by the model: a query id outside the
#: population, a missing field) -- the source counted an answer the model never gave.
FRAUD_KINDS = ("bad-opening", "wrong-answer", "refused-record")


def is_refusal(exc: BaseException) -> bool:
    """Whether a model-access error is the model refusing the record itself, for good.

    Failures that may pass or that are the asker's own (unreachable endpoint, retried statuses,
    the cache, a 401/403/407 on the asker's credentials) are not: they never prove anything
    about the record's author."""
    from fairprobe.errors import (
        AccessError,
        CacheError,
        EndpointStatusError,
        EndpointUnreachableError,
        ModelIdentityError,
    )

    if not isinstance(exc, AccessError):
        return False
    # a server answering for another model, or a model swapped mid-audit, refuses every
    # record alike: it says nothing about the record's author
    if isinstance(exc, (EndpointUnreachableError, EndpointStatusError, CacheError,
                        ModelIdentityError)):
        return False
    return getattr(exc, "status", None) not in (401, 403, 407)


@dataclass(frozen=True)
class FraudProof:
    """A signed, transferable proof that ``opening.auditor`` fabricated (see module docstring).

    ``entry = (round, a, A, b, B, entry_sig)`` is the accused's signed entry (its signature
    field carries the root); ``observed`` the model's answer the challenger got for the opened
    record; ``challenger_sig`` the challenger's signature over everything.
    """

    kind: FraudKind
    challenger: str
    entry: tuple[int, int, int, int, int]
    entry_sig: bytes
    opening: Opening
    observed: int | None
    challenger_sig: bytes = b""

    @property
    def accused(self) -> str:
        return self.opening.auditor

    def message(self) -> bytes:
        body = {
            "kind": self.kind, "challenger": self.challenger, "entry": list(self.entry),
            "entry_sig": self.entry_sig.hex(), "opening": self.opening.message().hex(),
            "opening_sig": self.opening.sig.hex(), "observed": self.observed,
        }
        return PROOF_TAG + hashlib.sha256(
            json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).digest()

    def signed(self, signer: Signer) -> FraudProof:
        return FraudProof(self.kind, self.challenger, self.entry, self.entry_sig, self.opening,
                          self.observed, bytes(signer.sign(self.message())))

    def check_signatures(self, verifier: Verifier) -> str | None:
        """None if the proof is well formed and signed; else why not. For ``wrong-answer`` the
        caller still re-asks the model (:meth:`confirmed_by`)."""
        op = self.opening
        r, a, A, b, B = self.entry
        if op.round != r:
            return "round-mismatch"
        sig, root = split_signature(self.entry_sig)
        if root is None:
            return "no-commitment"
        try:
            msg = committed_entry_bytes(op.auditor, r, a, A, b, B, root)
        except ProtocolError:
            return "bad-entry"
        if not verifier.verify(op.auditor, msg, sig):
            return "bad-entry-signature"
        if not verifier.verify(op.auditor, op.message(), op.sig):
            return "bad-opening-signature"
        if not verifier.verify(self.challenger, self.message(), self.challenger_sig):
            return "bad-challenger-signature"
        if self.challenger == op.auditor:
            return "self-accusation"
        if r < 1 or not 0 <= op.index < op.m or op.m != A + B:
            return "no-such-leaf"
        consistent = verify_opening(op, (a, A, b, B), root)
        if self.kind == "wrong-answer" and consistent and record_of(op.record) is None:
            return "undecodable-record"
        if self.kind == "refused-record":
            if not consistent:
                return "opening-is-inconsistent"
            return None if self.observed is None else "answer-claimed"
        if self.kind == "bad-opening":
            return None if not consistent else "opening-is-consistent"
        if not consistent:
            return "opening-is-inconsistent"
        if self.observed not in (0, 1) or self.observed == op.answer:
            return "no-mismatch-claimed"
        return None

    @property
    def needs_query(self) -> bool:
        """Whether the checker must ask the model the opened record (:meth:`confirmed_by`)."""
        return self.kind != "bad-opening" and record_of(self.opening.record) is not None

    def confirmed_by(self, model_answer: int | None, *, refused: bool = False) -> bool:
        """Whether the checker's own answer for the record confirms the fraud (``refused``:
        the checker's model refused the record for good, :func:`is_refusal`)."""
        if self.kind == "bad-opening":
            return True
        if self.kind == "refused-record":
            return refused or record_of(self.opening.record) is None
        return not refused and model_answer is not None and model_answer != self.opening.answer

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind, "challenger": self.challenger, "entry": list(self.entry),
            "entry_sig": base64.b64encode(self.entry_sig).decode("ascii"),
            "opening": self.opening.to_dict(), "observed": self.observed,
            "challenger_sig": base64.b64encode(self.challenger_sig).decode("ascii"),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> FraudProof:
        try:
            kind = str(d["kind"])
            if kind not in FRAUD_KINDS:
                raise ValueError(f"kind {kind!r}")
            entry = tuple(int(x) for x in d["entry"])
            if len(entry) != 5:
                raise ValueError("entry")
            obs = d.get("observed")
            return cls(
                kind=kind,  # type: ignore[arg-type]
                challenger=str(d["challenger"]), entry=entry,  # type: ignore[arg-type]
                entry_sig=base64.b64decode(d["entry_sig"], validate=True),
                opening=Opening.from_dict(d["opening"]),
                observed=None if obs is None else int(obs),
                challenger_sig=base64.b64decode(d["challenger_sig"], validate=True),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ProtocolError(f"Malformed proof of fraud: {exc}.") from None


@dataclass(frozen=True)
class EquivocationProof:
    """Two entries of one round, both signed by ``auditor`` with its records root, that differ
    (other counts or another root): no honest node signs twice for a round (a restarted one
    re-signs the same bytes: Ed25519 is deterministic), so the two signatures alone prove the
    author a liar. Transferable without a finder's signature or a model query; the signatures
    bind the audit (the verifier's context), so a pair from another audit does not verify."""

    auditor: str
    round: int
    first: tuple[int, int, int, int]
    first_sig: bytes
    second: tuple[int, int, int, int]
    second_sig: bytes
    kind: str = "equivocation"

    @property
    def accused(self) -> str:
        return self.auditor

    def message(self) -> bytes:
        """A digest naming the pair (order-free: the same two entries give the same key)."""
        parts = sorted([(list(self.first), self.first_sig.hex()),
                        (list(self.second), self.second_sig.hex())])
        body = {"kind": self.kind, "auditor": self.auditor, "round": self.round,
                "entries": parts}
        return PROOF_TAG + hashlib.sha256(
            json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).digest()

    def check_signatures(self, verifier: Verifier) -> str | None:
        """None if both entries verify as ``auditor``'s commitments of ``round`` and differ."""
        roots = []
        for counts, full in ((self.first, self.first_sig), (self.second, self.second_sig)):
            sig, root = split_signature(full)
            if root is None:
                return "no-commitment"
            try:
                msg = committed_entry_bytes(self.auditor, self.round, *counts, root)
            except ProtocolError:
                return "bad-entry"
            if not verifier.verify(self.auditor, msg, sig):
                return "bad-entry-signature"
            roots.append(root)
        if self.round < 1:
            return "bad-round"
        if self.first == self.second and roots[0] == roots[1]:
            return "not-an-equivocation"
        return None

    @property
    def needs_query(self) -> bool:
        return False

    def to_dict(self) -> dict[str, Any]:
        b64 = base64.b64encode
        return {"kind": self.kind, "auditor": self.auditor, "round": self.round,
                "first": list(self.first), "first_sig": b64(self.first_sig).decode("ascii"),
                "second": list(self.second), "second_sig": b64(self.second_sig).decode("ascii")}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> EquivocationProof:
        try:
            if d.get("kind") != "equivocation":
                raise ValueError("kind")
            first = tuple(int(x) for x in d["first"])
            second = tuple(int(x) for x in d["second"])
            if len(first) != 4 or len(second) != 4:
                raise ValueError("entry")
            return cls(
                auditor=str(d["auditor"]), round=int(d["round"]),
                first=first, second=second,  # type: ignore[arg-type]
                first_sig=base64.b64decode(d["first_sig"], validate=True),
                second_sig=base64.b64decode(d["second_sig"], validate=True),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ProtocolError(f"Malformed proof of equivocation: {exc}.") from None


#: Proofs a node checks at the cost of a model query, per signer, that do not confirm before
#: it blames the signer (:class:`ProofBudget`).
DEFAULT_PROOF_CAP = 3


@dataclass
class ProofBudget:
    """How many model queries a node spends on any one signer's proofs (no I/O).

    A ``wrong-answer`` or ``refused-record`` proof costs its checker one model query. The
    signer that can make a checker pay is the proof's *challenger* (its signature covers the
    proof; the HTTP sender only relays it, and honest nodes relay only proofs they confirmed),
    and the accused: a colluding accused signs openings of consistent leaves, and its
    accomplice signs false accusations of them that no model confirms. Two rules bound it:

    * **one proof per (challenger, accused)**: an honest challenger signs at most one proof
      against a source -- it excludes the source on it and never challenges it again -- so a
      second, different proof of the same pair is refused on receipt, before its signatures
      are checked (``admit``); an equivocation proof (no challenger) is kept once per accused.
      Copies of the same proof (same digest, relayed by several neighbours) are accepted;
    * **a cap on proofs that do not confirm**: each query-costing proof of a challenger that
      the checker's own model does not confirm counts against it (``charge``); at ``cap`` the
      challenger is *blamed*: its further proofs are refused on receipt and its pending ones
      dropped unchecked. Under A2 (the model answers a record the same way every time) an
      honest challenger's proof is always confirmed, so it is blamed only if the checker's
      model fails ``cap`` times on its proofs.

    So a node spends at most ``cap`` queries on the unconfirmed proofs of each of the ``V - 1``
    other members and one per source it excludes on a confirmed proof, and stores at most one
    proof per (challenger, accused) pair: at most ``(V - 1) (cap + 1)`` queries whatever the
    number of proofs sent to it.
    """

    cap: int = DEFAULT_PROOF_CAP
    spent: dict[str, int] = field(default_factory=dict)
    blamed: dict[str, int] = field(default_factory=dict)
    pairs: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.cap = check_int(self.cap, "cap", "ProofBudget", lo=1)

    @staticmethod
    def _pair(challenger: str | None, accused: str) -> str:
        return f"{challenger or ''}\x00{accused}"

    def admit(self, challenger: str | None, accused: str, digest: str) -> str | None:
        """None if a proof of ``challenger`` (None: an equivocation proof) against ``accused``
        with this digest may be stored; else the reason to refuse it."""
        if challenger is not None and challenger in self.blamed:
            return "proof-signer-blamed"
        held = self.pairs.get(self._pair(challenger, accused))
        if held is not None and held != digest:
            return "proof-pair-taken"
        return None

    def taken(self, challenger: str | None, accused: str, digest: str) -> None:
        """Record a stored proof (the first of its pair)."""
        self.pairs.setdefault(self._pair(challenger, accused), digest)

    def charge(self, challenger: str, round_: int) -> bool:
        """Count one query-costing proof of ``challenger`` that did not confirm; True if this
        blames it (the ``cap``-th)."""
        self.spent[challenger] = self.spent.get(challenger, 0) + 1
        if self.spent[challenger] >= self.cap and challenger not in self.blamed:
            self.blamed[challenger] = int(round_)
            return True
        return False

    def to_dict(self) -> dict[str, Any]:
        return {"cap": self.cap, "spent": dict(self.spent), "blamed": dict(self.blamed),
                "pairs": dict(self.pairs)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ProofBudget:
        return cls(int(d.get("cap", DEFAULT_PROOF_CAP)),
                   {str(k): int(v) for k, v in d.get("spent", {}).items()},
                   {str(k): int(v) for k, v in d.get("blamed", {}).items()},
                   {str(k): str(v) for k, v in d.get("pairs", {}).items()})


def a4_check(
    adj: npt.ArrayLike, *, liars: npt.ArrayLike | None = None, me: int | None = None,
    proven: npt.ArrayLike | None = None,
) -> dict[str, Any]:
    """Assumption A4 of the escape bound on the realised network: every source that could lie
    has an *honest-reachable challenger*, an honest neighbour that challenges every leaf it
    commits (:class:`ChallengeCore`, closing rounds included) and whose proofs reach the node
    (the finder sends a proof to every roster member, so any honest neighbour's proof reaches
    every honest node that is still running).

    ``adj`` (V, V): the symmetric adjacency of the roster (every node holds it: the roster
    lists each member's neighbours). ``proven`` (V,): sources excluded on a proof (their
    entries are dropped: they need no challenger any more).

    **Global check** (``liars`` (V,) given: the simulator, which knows who lies). A4 holds iff
    every unproven liar has at least one honest neighbour. ``without_challenger``: the unproven
    liars all of whose neighbours lie.

    **Local check** (``me`` given: a node, which knows the roster graph, that it is honest
    itself and which sources are proven, but not who else lies). It can vouch for its own
    neighbours (it challenges them) and the proven sources; for any other source ``u`` the
    smallest set of unproven liars that leaves ``u`` with no honest challenger is ``u`` and its
    unproven neighbours, of size ``1 + |N(u) \\ proven|``. So ``without_challenger`` lists
    the sources whose neighbours are all proven liars (no honest challenger for certain), and
    ``holds_unless_liars`` ``L`` is the least such coalition over the others: A4 holds whenever
    fewer than ``L`` sources lie besides the proven ones, and otherwise only if each source of
    ``weakest`` (those with the least unproven neighbours) has an honest neighbour -- which no
    node can check: honesty is not observable. ``holds`` is True only if every source is
    vouched for (``L`` is None).

    Returns ``check``, ``holds``, ``without_challenger`` (indices), ``holds_unless_liars``,
    ``weakest`` (indices; local check only).
    """
    a = np.asarray(adj, dtype=bool)
    v = a.shape[0]
    pr = np.zeros(v, dtype=bool) if proven is None else np.asarray(proven, dtype=bool)
    if liars is not None:
        lie = np.asarray(liars, dtype=bool)
        has = (a & ~lie[None, :]).any(axis=1)
        gaps = np.flatnonzero(lie & ~pr & ~has)
        return {"check": "global", "holds": gaps.size == 0,
                "without_challenger": gaps.tolist(), "holds_unless_liars": None, "weakest": []}
    if me is None:
        raise InvalidParameterError("a4_check needs the liars (global check) or me (local).")
    vouched = pr | a[int(me)]
    vouched[int(me)] = True
    unproven_nbrs = (a & ~pr[None, :]).sum(axis=1)
    gaps = np.flatnonzero(~vouched & (unproven_nbrs == 0))
    need = np.where(vouched | (unproven_nbrs == 0), np.iinfo(np.int64).max, 1 + unproven_nbrs)
    L = int(need.min()) if (need < np.iinfo(np.int64).max).any() else None
    weakest = np.flatnonzero(need == L).tolist() if L is not None else []
    return {"check": "local", "holds": gaps.size == 0 and L is None,
            "without_challenger": gaps.tolist(), "holds_unless_liars": L, "weakest": weakest}


def proof_from_dict(d: Mapping[str, Any]) -> FraudProof | EquivocationProof:
    """A forwarded proof of either kind (``kind`` says which)."""
    if isinstance(d, Mapping) and d.get("kind") == "equivocation":
        return EquivocationProof.from_dict(d)
    return FraudProof.from_dict(d)


# -- exclusion (a hook on the protocol core, kept outside it) -------------------------------------
def exclude_source(core: Any, auditor: str) -> None:
    """Remove every contribution of ``auditor`` from an ``AuditorCore``'s estimate.

    Zeroes its weighted vector ``W_j`` (the weights are locked, so a proven fabricator's past
    increments go too); the caller stops merging and relaying its entries.
    """
    k = core.index.get(auditor)
    if k is None:
        raise ProtocolError(f"{auditor!r} is not in the roster.")
    if hasattr(core, "W"):
        core.W[k] = 0.0


# -- how a fabricating source fills its leaves ----------------------------------------------------
def assign_claimed_answers(
    increment: Sequence[int], truth_a: npt.ArrayLike, truth_b: npt.ArrayLike,
    *, records: Literal["random", "chosen"] = "random",
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Claimed answers of a fabricator that must back the increment ``(da, dA, db, dB)`` with
    leaves, given the true answers of the records it could use.

    ``records="random"``: it takes the first ``dA`` (``dB``) records as drawn and lies as little
    as possible: claims positive the truly positive ones first. Returns
    ``(picked_a, claimed_a, picked_b, claimed_b)`` (positions into ``truth_a``/``truth_b``).
    ``records="chosen"``: it picks records whose true answers already give the increment (the
    cherry-picked sample verification cannot catch); raises if the pool is too small.
    """
    da, dA, db, dB = (int(x) for x in increment)
    out: list[npt.NDArray[np.int64]] = []
    for d_pos, d_tot, truth in ((da, dA, truth_a), (db, dB, truth_b)):
        t = np.asarray(truth, dtype=np.int64)
        if records == "random":
            if d_tot > t.size:
                raise InvalidParameterError(f"The record pool holds {t.size} < {d_tot} records.")
            pick = np.arange(d_tot, dtype=np.int64)
            tv = t[:d_tot]
            order = np.argsort(-tv, kind="stable")  # truly positive first
            claim = np.zeros(d_tot, dtype=np.int64)
            claim[order[:d_pos]] = 1
        else:
            pos, neg = np.flatnonzero(t == 1), np.flatnonzero(t == 0)
            if pos.size < d_pos or neg.size < d_tot - d_pos:
                raise InvalidParameterError("The record pool cannot back this increment truthfully.")
            pick = np.concatenate([pos[:d_pos], neg[: d_tot - d_pos]]).astype(np.int64)
            claim = t[pick]
        out += [pick, claim]
    return out[0], out[1], out[2], out[3]


# -- configuration and the simulator hook ---------------------------------------------------------
@dataclass(frozen=True)
class VerifyConfig:
    """Parameters of the verification layer.

    ``rate``: the share of each neighbour's new leaves a challenger opens
    (:class:`ChallengeCore`): the extra queries are about ``rate`` times the degree of the
    audit's. ``records``: how a fabricating source
    backs its counts with leaves (``random``: records drawn like an honest auditor's, answers
    falsified where needed; ``chosen``: records picked so that true answers give its counts --
    undetectable).
    """

    rate: float = 0.01
    records: Literal["random", "chosen"] = "random"

    def __post_init__(self) -> None:
        check_real(self.rate, "rate", "VerifyConfig", lo=0.0, hi=1.0)
        if self.records not in ("random", "chosen"):
            raise InvalidParameterError(
                f"The 'records' parameter of VerifyConfig must be 'random' or 'chosen'. "
                f"Got {self.records!r} instead.")

    def budget(self, issued: int) -> int:
        """The round-budget rule: ``max(1, floor(rate x issued))`` leaves a round, a share of
        the challenger's own queries (with :func:`challenge_allocation`). It opens a leaf
        committed late with probability far below ``rate`` (docs/collab.md, "The escape
        bound"); nothing challenges by it, the tests measure what it misses."""
        return max(1, int(math.floor(self.rate * issued)))


def opening_cap(rate: float, n: int) -> int:
    """``max(1, ceil(rate n))``: the leaves :class:`ChallengeCore` opens of one round of ``n``
    new leaves (a share ``rate`` of a node's records per challenger)."""
    return max(1, int(math.ceil(float(rate) * int(n))))


def challenge_allocation(budget: int, neighbours: Sequence[str], round_: int) -> dict[str, int]:
    """Split ``budget`` challenges over ``neighbours`` (in the given order), rotating by round:
    each gets ``budget // d``, and the ``budget % d`` neighbours after offset ``round_ % d``
    one more. Neighbours with 0 are left out."""
    d = len(neighbours)
    if d == 0 or budget <= 0:
        return {}
    base, extra = divmod(budget, d)
    out = {}
    for r in range(d):
        u = neighbours[(round_ + r) % d]
        c = base + (1 if r < extra else 0)
        if c:
            out[u] = c
    return out


#: Wire sizes used by the simulator's byte estimate, measured on the node's JSON
#: (``Opening.to_dict``, ``ChallengeMessage``): an opening is ~255 bytes plus its record in
#: base64 plus ~66 bytes per tree level (a base64 hash and four counts); a challenge ~215 bytes.
OPENING_FIXED_BYTES = 255
PATH_LEVEL_BYTES = 66
CHALLENGE_BYTES = 215
INF_ROUND = np.iinfo(np.int64).max // 4


def simulate_verification(
    cfg: Any, vcfg: VerifyConfig | None = None, *, record_bytes: int = 24,
) -> dict[str, Any]:
    """Run the verification layer on one simulated audit.

    The audit is the simulator's (:func:`fairprobe.collab.simulate.simulate`: same partition,
    graph, attackers and fabricated increments for ``cfg.seed``; a test checks that the estimate
    without verification equals ``simulate``'s ``auditopus``). Each attacker backs its increment
    of each round with leaves drawn from the population (``vcfg.records="random"``: it falsifies
    the fewest answers; ``"chosen"``: none). Each round every honest auditor challenges
    leaves by the rule of :class:`ChallengeCore` (closing rounds included: ``max(1, largest
    gossip lag)``), ``ceil(rate d)`` of the ``d`` leaves each neighbour committed since it last
    challenged it (for an attacker a hypergeometric draw of its falsified leaves in that range;
    an honest auditor has none). A proof
    found at round ``t`` excludes the source at its finder in round ``t`` and, sent to every
    roster member, at every other honest auditor in round ``t + 1`` (checked before its merge);
    each then drops every contribution of the source (:func:`exclude_source`) and stops
    challenging it.

    Returns per attacker the first proof round and the round by which every honest auditor
    excluded it (None if not by the end), the final ``auditopus`` (``estimate``) and ``robust``
    estimates with and without verification (median over ``N + K``, attackers reporting 0), the extra queries (challenges
    plus one query per proof checked) as a fraction of the audit's, and the challenge bytes per
    honest node and round.
    """
    from fairprobe.collab.protocol import dp_of
    from fairprobe.collab.robust import robust_estimate
    from fairprobe.collab.simulate import histories, prepare_honest
    from fairprobe.datasets.populations import get_population

    vcfg = vcfg or VerifyConfig()
    setup = prepare_honest(cfg)
    R, N, K = setup.rounds, cfg.honest, cfg.attackers
    V = N + K
    # the cumulative and weighted vectors of every auditor, exactly as simulate() builds them
    hist = histories(cfg, setup)
    adj, att, lag, hon, H, delta, CW = (
        hist.adj, hist.att, hist.lag, hist.hon, hist.H, hist.delta, hist.CW
    )
    is_att = hist.is_att

    # falsified leaves per attacker and round: records drawn from the population at its rates
    pop = get_population(cfg.case)
    pa = pop.positives_a / pop.size_a
    pb = pop.positives_b / pop.size_b
    rng = np.random.default_rng(np.random.SeedSequence([cfg.seed, 0x5EED, 15]))
    d_att = delta[:, att]  # (R, K, 4)
    if vcfg.records == "chosen":
        lies = np.zeros((R, K), dtype=np.int64)
    else:
        xa = rng.binomial(d_att[..., 1], pa)
        xb = rng.binomial(d_att[..., 3], pb)
        lies = np.abs(d_att[..., 0] - xa) + np.abs(d_att[..., 2] - xb)
    L = np.cumsum(lies, axis=0)  # (R, K) falsified leaves under the root of round t
    M = H[1:, att, 1] + H[1:, att, 3]  # (R, K) leaves under the root of round t
    kk_of = {int(j): kk for kk, j in enumerate(att.tolist())}
    Lc = np.zeros((R + 1, K), dtype=np.int64)
    Lc[1:] = L
    Mall = H[:, :, 1] + H[:, :, 3]  # (R + 1, V)
    D = max(1, int(lag.max()) if lag.size else 1)  # closing rounds: the last roots challenged
    excl = np.full((N, K), INF_ROUND, dtype=np.int64)  # round honest i excluded attacker k
    first = np.full(K, INF_ROUND, dtype=np.int64)
    nbrs = {int(i): [int(u) for u in np.flatnonzero(adj[i])] for i in hon.tolist()}
    cores = {int(i): ChallengeCore(vcfg.rate) for i in hon.tolist()}
    challenges = 0
    node_round_bytes: list[float] = []
    # opened[u, t]: leaves of u opened at round t (for the expected distinct leaves revealed)
    opened = np.zeros((V, R + D), dtype=np.int64)
    depth = max(1, math.ceil(math.log2(max(2, int((H[R, :, 1] + H[R, :, 3]).max())))))
    per_opening = OPENING_FIXED_BYTES + record_bytes + depth * PATH_LEVEL_BYTES
    for t in range(1, R + D + 1):
        for h, i in enumerate(hon.tolist()):
            live = [u for u in nbrs[i] if not (is_att[u] and excl[h, kk_of[u]] <= t)]
            leaves = {str(u): int(Mall[min(max(t - int(lag[i, u]), 0), R), u]) for u in live}
            reqs = cores[i].plan(leaves, [str(u) for u in live])
            spent = 0
            for req in reqs:
                u = int(req.prover)
                cores[i].covered(req.prover, req.m)
                spent += req.count
                opened[u, t - 1] += req.count + (1 if req.link is not None else 0)
                if not is_att[u]:
                    continue
                kk = kk_of[u]
                col = Mall[:, u]
                bad = int(Lc[int(np.searchsorted(col, req.m)), kk]
                          - Lc[int(np.searchsorted(col, req.lo)), kk])
                d = req.m - req.lo
                if bad and rng.hypergeometric(bad, d - bad, req.count) > 0:
                    # the finder excludes now and sends the proof to every roster member, who
                    # checks it at its next round
                    first[kk] = min(first[kk], t)
                    excl[:, kk] = np.minimum(excl[:, kk], t + 1)
                    excl[h, kk] = min(excl[h, kk], t)
            challenges += spent
            node_round_bytes.append(
                CHALLENGE_BYTES * len(reqs)
                + (spent + sum(r.link is not None for r in reqs)) * per_opening)
    done = excl <= R + D
    proof_checks = int(done.sum())  # an upper bound: a finder re-asked the record already
    base_queries = int(H[R, hon][:, [1, 3]].sum())
    s_idx = np.maximum(R - lag[hon], 0)
    cols = np.arange(V)[None, :]
    weighted = CW[s_idx, cols]  # (N, V, 4)
    keep = np.ones((N, V), dtype=bool)
    for kk, j in enumerate(att.tolist()):
        keep[:, j] = ~done[:, kk]
    tables = H[s_idx, cols]
    held = s_idx >= 1
    with np.errstate(all="ignore"):
        plain = np.array([dp_of(r) for r in weighted.sum(axis=1)])
        verified = np.array([dp_of(r) for r in (weighted * keep[:, :, None]).sum(axis=1)])
    rob = robust_estimate(weighted, tables, held).estimate
    rob_v = robust_estimate(weighted * keep[:, :, None], tables, held & keep).estimate
    zk = np.zeros(K)
    extra = challenges + proof_checks
    # leaves of each honest source opened, at most (each challenger opens disjoint ranges of
    # new leaves, plus one link per challenge; challengers may overlap): an upper bound
    distinct = np.minimum(opened.sum(axis=1), H[R, :, 1] + H[R, :, 3]).astype(np.float64)
    sizes = H[R, hon][:, [1, 3]].sum(axis=1)
    rev = distinct[hon] / np.maximum(sizes, 1)
    return {
        "case": cfg.case, "seed": cfg.seed, "attackers": K, "attack": cfg.attack, "honest": N,
        "rounds": R, "records": vcfg.records, "rate": vcfg.rate,
        "first_proof_round": [None if x >= INF_ROUND else int(x) for x in first],
        "all_honest_excluded_round": [
            None if not done[:, kk].all() else int(excl[:, kk].max()) for kk in range(K)],
        "falsified_fraction": [float(L[-1, kk] / max(1, M[-1, kk])) for kk in range(K)],
        "estimate": float(np.median(np.concatenate([plain, zk]))),
        "estimate_verified": float(np.median(np.concatenate([verified, zk]))),
        "robust": float(np.median(np.concatenate([rob, zk]))),
        "robust_verified": float(np.median(np.concatenate([rob_v, zk]))),
        "true_dp": float(pop.true_dp),
        "tau": float(cfg.tau),
        "challenges": challenges,
        "proof_checks": proof_checks,
        "base_queries": base_queries,
        "extra_query_fraction": extra / max(1, base_queries),
        "challenge_bytes_per_node_round": float(np.mean(node_round_bytes)),
        # share of an honest auditor's records shown in clear to its challengers (at most:
        # leaves opened / its query set)
        "revealed_fraction_median": float(np.median(rev)),
        "revealed_fraction_max": float(rev.max()),
        # proven[i][j]: honest auditor i excluded source j on a proof by the end (the
        # bounded verdict drops it as a certain liar)
        "proven": (~keep).tolist(),
    }


def simulate_challenges(
    hist: Any, cfg: Any, rate: float, *, population: Any,
) -> dict[str, Any]:
    """The challenges of one simulated audit, by the rule of :class:`ChallengeCore`.

    ``hist`` is the simulator's :class:`~fairprobe.collab.simulate.Histories`. Every honest
    auditor runs one :class:`ChallengeCore` over its neighbours, at the end of every round
    ``t = 1 .. R + D`` (``D`` closing rounds: the largest gossip lag, at least 1), on the
    entry of each neighbour it then holds (round ``t`` for a neighbour, capped at ``R``).
    An attacker's falsified answers are known exactly for an answer-level strategy
    (``hist.lies``); a count-level one backs each increment with records drawn at the
    population's rates and falsifies the fewest answers (``|da - Bin(dA, p_A)| + ...``). A
    challenge of ``count`` leaves among ``d`` new ones of which ``f`` are false finds a proof
    with the hypergeometric probability ``1 - C(d - f, count) / C(d, count)``; the finder
    excludes the source at once, every other honest auditor one round later (the proof is
    sent to every roster member), if that is still within the audit.

    Returns ``proven`` (N, V): honest auditor ``i`` excluded source ``j`` on a proof by the end;
    ``first_proof_round`` per attacker (None: never); ``challenges`` (opened leaves re-asked:
    the extra queries); ``links`` (link openings, not re-asked); ``lies`` per attacker.
    """
    R = hist.H.shape[0] - 1
    V = hist.H.shape[1]
    att, hon, lag, adj = hist.att, hist.hon, hist.lag, hist.adj
    K, N = att.size, hon.size
    rng = np.random.default_rng(np.random.SeedSequence([int(cfg.seed), 0x5EED, 27]))
    if hist.lies is not None:
        lies = np.asarray(hist.lies, dtype=np.int64)
    else:
        pa = population.positives_a / population.size_a
        pb = population.positives_b / population.size_b
        d_att = hist.delta[:, att]
        xa = rng.binomial(d_att[..., 1], pa)
        xb = rng.binomial(d_att[..., 3], pb)
        lies = np.abs(d_att[..., 0] - xa) + np.abs(d_att[..., 2] - xb)
    Lc = np.zeros((R + 1, K), dtype=np.int64)
    Lc[1:] = np.cumsum(lies, axis=0)  # falsified leaves under each attacker's round-t root
    M = hist.H[:, :, 1] + hist.H[:, :, 3]  # (R + 1, V) leaves under each round's root
    D = max(1, int(lag.max()) if lag.size else 1)
    kk_of = {int(j): kk for kk, j in enumerate(att.tolist())}
    excl = np.full((N, K), INF_ROUND, dtype=np.int64)
    first = np.full(K, INF_ROUND, dtype=np.int64)
    cores = [ChallengeCore(float(rate)) for _ in range(N)]
    nbrs = [[int(u) for u in np.flatnonzero(adj[i])] for i in hon.tolist()]
    challenges = links = 0
    for t in range(1, R + D + 1):
        for h, i in enumerate(hon.tolist()):
            live = [u for u in nbrs[h] if not (u in kk_of and excl[h, kk_of[u]] <= t)]
            s_of = {u: min(max(t - int(lag[i, u]), 0), R) for u in live}
            held = {str(u): int(M[s_of[u], u]) for u in live}
            for req in cores[h].plan(held, [str(u) for u in live]):
                u = int(req.prover)
                challenges += req.count
                links += 1 if req.link is not None else 0
                cores[h].covered(req.prover, req.m)
                kk = kk_of.get(u)
                if kk is None:
                    continue
                col = M[:, u]
                s_hi = int(np.searchsorted(col, req.m, side="left"))
                s_lo = int(np.searchsorted(col, req.lo, side="left"))
                bad = int(Lc[s_hi, kk] - Lc[s_lo, kk])
                d = req.m - req.lo
                if bad and rng.hypergeometric(bad, d - bad, req.count) > 0:
                    first[kk] = min(first[kk], t)
                    excl[:, kk] = np.minimum(excl[:, kk], t + 1)
                    excl[h, kk] = min(excl[h, kk], t)
    done = excl <= R + D
    proven = np.zeros((N, V), dtype=bool)
    proven[:, att] = done
    return {
        "proven": proven,
        "first_proof_round": [None if x >= INF_ROUND else int(x) for x in first],
        "challenges": int(challenges),
        "links": int(links),
        "proof_checks": int(done.sum()),
        "lies": [int(x) for x in Lc[R]],
        "closing_rounds": D,
    }
