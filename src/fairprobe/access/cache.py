"""The persistent response cache: every answer a model gave, so that none is ever paid twice.

One SQLite file (stdlib :mod:`sqlite3`, WAL journal) holds the schema tag and two tables::

    meta(name TEXT PRIMARY KEY, value TEXT)        -- name 'schema' = 'fairprobe-cache/2'
    answers(identity TEXT, key TEXT, answer TEXT, ts REAL, record TEXT, checksum TEXT,
            PRIMARY KEY (identity, key))
    claims(identity TEXT, key TEXT, owner TEXT, ts REAL, PRIMARY KEY (identity, key))

``identity`` is the answer identity (backend, endpoint and model; see
:meth:`fairprobe.access.BlackBox.resolve_identity`; never a secret), ``key`` the SHA-256 of the
record's canonical JSON (:func:`fairprobe.access.records.record_key`), ``answer`` the
:class:`~fairprobe.access.Answer` as JSON, ``ts`` the Unix time it was stored, ``record`` the
canonical JSON of the record asked (so that a later run can re-ask a few of them to check that the
model behind an endpoint did not change), and ``checksum`` a SHA-256 over identity, key, answer
and record.

Integrity. Every row read is checked against its checksum, and its record against its key; a
mismatch (a corrupt file, an answer edited by hand) raises :class:`~fairprobe.errors.CacheError`
naming how many rows failed, instead of entering a verdict. The checksum is not a signature: it
detects corruption and edits that do not recompute it, not a deliberate forgery by someone who
can rewrite the file (keep a cache you rely on where only you can write it). A file whose schema
is not this one (another program's SQLite file, a newer fairprobe) is refused; a cache of the
first fairprobe schema (no checksums) is upgraded in place.

Durability. :meth:`ResponseCache.put_many` commits before it returns, and
:class:`~fairprobe.access.BlackBox` calls it as soon as a batch of answers comes back. In WAL mode a
committed transaction survives the death of the process (even ``SIGKILL``); with
``durable=True`` (``PRAGMA synchronous=FULL``) it also survives a power cut, at some cost in speed.
A batch whose request was sent but whose answers had not come back when the process died is
asked again by the next run (at most ``concurrency`` batches); :meth:`claim` reports how many.

Concurrency. One connection per cache object, shared by threads under a lock; several processes
may share a file (WAL readers never block the writer; writers wait up to ``busy_timeout``). Before
paying for a batch, :class:`~fairprobe.access.BlackBox` *claims* its keys (:meth:`claim`): a key
another live process has claimed is waited for instead of paid again, so concurrent audits sharing
one cache never pay the same record twice. A claim of a process that died (same host, pid gone)
or older than its lease is taken over.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from fairprobe._closing import Closing
from fairprobe.access.base import Answer
from fairprobe.errors import AccessError, CacheError, InvalidParameterError

__all__ = ["CACHE_SCHEMA", "ClaimResult", "ResponseCache"]

#: The schema tag stored in every cache file.
CACHE_SCHEMA = "fairprobe-cache/2"

_TABLES = (
    """CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS answers (
    identity TEXT NOT NULL,
    key      TEXT NOT NULL,
    answer   TEXT NOT NULL,
    ts       REAL NOT NULL,
    record   TEXT,
    checksum TEXT NOT NULL,
    PRIMARY KEY (identity, key)
) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS claims (
    identity TEXT NOT NULL,
    key      TEXT NOT NULL,
    owner    TEXT NOT NULL,
    ts       REAL NOT NULL,
    PRIMARY KEY (identity, key)
) WITHOUT ROWID""",
)

_ENCODE = json.JSONEncoder(allow_nan=False, separators=(",", ":")).encode
_HOST = socket.gethostname()


def row_checksum(identity: str, key: str, answer: str, record: str | None) -> str:
    """SHA-256 (first 32 hex digits) over one cache row's identity, key, answer and record."""
    h = hashlib.sha256()
    for part in (identity, key, answer, record or ""):
        h.update(part.encode("utf-8"))
        h.update(b"\x1f")
    return h.hexdigest()[:32]


def _owner_alive(owner: str) -> bool:
    """Whether the process that holds a claim may still be running (``host:pid:token``)."""
    host, _, rest = owner.partition(":")
    pid_s = rest.split(":", 1)[0]
    if host != _HOST or not pid_s.isdigit():
        return True  # another machine: rely on the lease
    try:
        os.kill(int(pid_s), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@dataclass
class ClaimResult:
    """What :meth:`ResponseCache.claim` found for a batch of keys.

    Attributes
    ----------
    claimed : list of str
        Keys now claimed by the caller: it should pay for them and :meth:`ResponseCache.put_many`.
    answered : dict
        Keys another process answered meanwhile, with their answers.
    busy : list of str
        Keys a live process is paying for right now: wait and claim again.
    taken_over : int
        Of ``claimed``, keys whose earlier claim belonged to a process that died or whose lease
        ran out (their answer was paid for but lost: they are asked again).
    """

    claimed: list[str] = field(default_factory=list)
    answered: dict[str, Answer] = field(default_factory=dict)
    busy: list[str] = field(default_factory=list)
    taken_over: int = 0


class ResponseCache(Closing):
    """A persistent, process- and thread-safe store of model answers.

    Parameters
    ----------
    path : str or Path
        SQLite file (created with its parent directory if missing), or ``":memory:"`` for a
        cache that lives as long as this object.
    durable : bool, default=False
        ``PRAGMA synchronous=FULL`` instead of ``NORMAL``: answers also survive a power cut
        (``NORMAL`` already survives a killed process).
    busy_timeout : float, default=60.0
        Seconds a writer waits for another process holding the write lock.
    lease : float, default=600.0
        Seconds after which a claim of a process that may still be alive (another host) is
        considered abandoned.

    Raises
    ------
    CacheError
        The file is not a SQLite database, is another program's database, has a foreign schema,
        or cannot be created (the message says what to do).

    Examples
    --------
    >>> from fairprobe.access import Answer, ResponseCache
    >>> with ResponseCache(":memory:") as cache:
    ...     cache.put_many("model-a", [("k1", Answer(1, 0.9, 2.2))])
    ...     cache.get_many("model-a", ["k1", "k2"])
    1
    {'k1': Answer(decision=1, score=0.9, logit=2.2, raw=None, outcome='ok')}
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        durable: bool = False,
        busy_timeout: float = 60.0,
        lease: float = 600.0,
    ) -> None:
        self.path = str(path)
        self.lease = float(lease)
        self.owner = f"{_HOST}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        if self.path != ":memory:":
            p = Path(self.path)
            if p.is_dir():
                raise InvalidParameterError(
                    f"The cache path {self.path!r} is a directory; give a file path "
                    f"(e.g. {str(p / 'cache.sqlite')!r})."
                )
            try:
                p.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise CacheError(
                    f"cannot create the directory of cache {self.path!r}: "
                    f"{exc.strerror or exc}; choose another --cache path."
                ) from None
            if p.exists() and not os.access(p, os.R_OK | os.W_OK):
                raise CacheError(
                    f"cache {self.path!r} is not readable and writable by you; fix its "
                    "permissions or choose another --cache path."
                )
            if not p.exists() and not os.access(p.parent, os.W_OK | os.X_OK):
                raise CacheError(
                    f"cannot create cache {self.path!r}: the directory {str(p.parent)!r} is not "
                    "writable; choose another --cache path."
                )
            from fairprobe._io import prepare_private_file

            prepare_private_file(p, "cache", CacheError)  # answers: 0600, regular files only
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        try:
            self._conn = sqlite3.connect(
                self.path, timeout=busy_timeout, isolation_level=None, check_same_thread=False
            )
            self._conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
            if self.path != ":memory:":
                self._conn.execute("PRAGMA journal_mode = WAL")
            self._conn.execute(f"PRAGMA synchronous = {'FULL' if durable else 'NORMAL'}")
            self._init_schema(self._conn)
        except CacheError:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
            raise
        except sqlite3.DatabaseError as exc:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
            msg = str(exc)
            if "not a database" in msg or "malformed" in msg:
                raise CacheError(
                    f"cache {self.path!r} is not a readable SQLite file ({msg}); delete it or "
                    "choose another --cache path."
                ) from None
            raise CacheError(
                f"cannot open response cache {self.path!r}: {msg}; choose another --cache path."
            ) from None
        self._max_vars = max(1, self._conn.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER) - 2)

    def _init_schema(self, conn: sqlite3.Connection) -> None:
        conn.execute("BEGIN IMMEDIATE")
        try:
            tables = {
                r[0]
                for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            }
            if "meta" in tables:
                row = conn.execute("SELECT value FROM meta WHERE name = 'schema'").fetchone()
                if row is None or row[0] != CACHE_SCHEMA:
                    found = None if row is None else row[0]
                    raise CacheError(
                        f"cache {self.path!r} has schema {found!r}, not {CACHE_SCHEMA!r} (another "
                        "program's file or another fairprobe version); choose another --cache "
                        "path."
                    )
            elif tables == {"answers"} and self._columns(conn, "answers") == [
                "identity", "key", "answer", "ts"
            ]:
                self._upgrade_v1(conn)
            elif tables:
                raise CacheError(
                    f"{self.path!r} is a SQLite file of another program (tables: "
                    f"{', '.join(sorted(tables))}), not a fairprobe answer cache; choose another "
                    "--cache path."
                )
            for ddl in _TABLES:
                conn.execute(ddl)
            conn.execute(
                "INSERT OR IGNORE INTO meta (name, value) VALUES ('schema', ?)", (CACHE_SCHEMA,)
            )
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    @staticmethod
    def _columns(conn: sqlite3.Connection, table: str) -> list[str]:
        return [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]

    @staticmethod
    def _upgrade_v1(conn: sqlite3.Connection) -> None:
        """Add the record and checksum columns to a first-schema cache (answers are kept)."""
        conn.execute("ALTER TABLE answers ADD COLUMN record TEXT")
        conn.execute("ALTER TABLE answers ADD COLUMN checksum TEXT NOT NULL DEFAULT ''")
        rows = conn.execute("SELECT identity, key, answer FROM answers").fetchall()
        conn.executemany(
            "UPDATE answers SET checksum = ? WHERE identity = ? AND key = ?",
            [(row_checksum(i, k, a, None), i, k) for i, k, a in rows],
        )

    # -- access -----------------------------------------------------------------------------
    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise AccessError(f"response cache {self.path!r} is closed.")
        return self._conn

    def _chunks(self, keys: Sequence[str]) -> Iterable[list[str]]:
        step = self._max_vars
        for lo in range(0, len(keys), step):
            yield list(keys[lo : lo + step])

    def _select(
        self, conn: sqlite3.Connection, identity: str, keys: Sequence[str]
    ) -> dict[str, Answer]:
        """Verified answers of ``keys`` (caller holds the lock)."""
        out: dict[str, Answer] = {}
        bad = 0
        for chunk in self._chunks(keys):
            marks = ",".join("?" * len(chunk))
            rows = conn.execute(
                "SELECT key, answer, record, checksum FROM answers "
                f"WHERE identity = ? AND key IN ({marks})",
                [identity, *chunk],
            ).fetchall()
            if not rows:
                continue
            good = []
            for k, a, rec, chk in rows:
                if chk != row_checksum(identity, k, a, rec) or (
                    rec is not None and hashlib.sha256(rec.encode("utf-8")).hexdigest() != k
                ):
                    bad += 1
                else:
                    good.append((k, a))
            if bad:
                continue
            # one C-level parse of all the answers, not one json.loads call per row
            try:
                parsed = json.loads("[" + ",".join(a for _, a in good) + "]")
                for (k, _), d in zip(good, parsed, strict=True):
                    out[k] = Answer.from_json(d)
            except (ValueError, TypeError, AttributeError):
                bad += len(good)
        if bad:
            raise CacheError(
                f"cache {self.path!r} holds {bad} answer(s) whose checksum does not match "
                "(corrupted or edited); rerun with --refresh to ask the model again, or delete "
                "the file."
            )
        return out

    def get_many(self, identity: str, keys: Sequence[str]) -> dict[str, Answer]:
        """Answers stored for ``keys`` under ``identity`` (absent keys are left out).

        One ``SELECT ... WHERE key IN (...)`` per chunk of up to SQLite's variable limit
        (32,766 parameters on SQLite >= 3.32), not one per key. Every row is checked against
        its checksum.

        Raises
        ------
        CacheError
            A row's checksum does not match (the cache was corrupted or edited).
        """
        if not keys:
            return {}
        with self._lock:
            return self._select(self._connection(), identity, keys)

    def put_many(
        self,
        identity: str,
        items: Iterable[tuple[str, Answer]],
        *,
        records: Mapping[str, str] | None = None,
        replace: bool = False,
    ) -> int:
        """Store answers in one committed transaction; return how many were written.

        An answer already stored for the same ``(identity, key)`` is kept as it is, unless
        ``replace`` (``--refresh``). ``records`` maps keys to the canonical JSON of the records
        asked (kept for identity checks). Claims this cache object holds on the keys are
        released in the same transaction.
        """
        now = time.time()
        enc = _ENCODE
        recs = records or {}
        rows = []
        for k, a in items:
            text = enc(a.to_json())
            rec = recs.get(k)
            rows.append((identity, k, text, now, rec, row_checksum(identity, k, text, rec)))
        if not rows:
            return 0
        verb = "INSERT OR REPLACE" if replace else "INSERT OR IGNORE"
        with self._lock:
            conn = self._connection()
            before = conn.total_changes
            try:
                conn.execute("BEGIN IMMEDIATE")
                conn.executemany(
                    f"{verb} INTO answers (identity, key, answer, ts, record, checksum) "
                    "VALUES (?,?,?,?,?,?)",
                    rows,
                )
                written = conn.total_changes - before
                conn.executemany(
                    "DELETE FROM claims WHERE identity = ? AND key = ? AND owner = ?",
                    [(identity, r[1], self.owner) for r in rows],
                )
                conn.execute("COMMIT")
            except sqlite3.Error as exc:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise CacheError(f"cannot write response cache {self.path!r}: {exc}") from None
            return written

    # -- claims of in-flight keys -----------------------------------------------------------
    def claim(
        self, identity: str, keys: Sequence[str], *, skip_answered: bool = True
    ) -> ClaimResult:
        """Claim ``keys`` for paying: in one write transaction, return which keys are answered
        already, which another live process is paying for, and claim the rest.

        A claim whose owner died (same host, pid gone) or is older than ``lease`` seconds is
        taken over and counted in ``taken_over``. With ``skip_answered=False`` (``--refresh``)
        answered keys are claimed too.
        """
        res = ClaimResult()
        if not keys:
            return res
        now = time.time()
        with self._lock:
            conn = self._connection()
            try:
                conn.execute("BEGIN IMMEDIATE")
                todo = list(keys)
                if skip_answered:
                    res.answered = self._select(conn, identity, todo)
                    todo = [k for k in todo if k not in res.answered]
                held: dict[str, tuple[str, float]] = {}
                for chunk in self._chunks(todo):
                    marks = ",".join("?" * len(chunk))
                    for k, owner, ts in conn.execute(
                        f"SELECT key, owner, ts FROM claims WHERE identity = ? AND key IN ({marks})",
                        [identity, *chunk],
                    ):
                        held[k] = (owner, ts)
                alive: dict[str, bool] = {}
                grab: list[str] = []
                for k in todo:
                    h = held.get(k)
                    if h is None or h[0] == self.owner:
                        grab.append(k)
                        continue
                    owner, ts = h
                    if owner not in alive:
                        alive[owner] = _owner_alive(owner)
                    if alive[owner] and now - ts < self.lease:
                        res.busy.append(k)
                    else:
                        grab.append(k)
                        res.taken_over += 1
                conn.executemany(
                    "INSERT OR REPLACE INTO claims (identity, key, owner, ts) VALUES (?,?,?,?)",
                    [(identity, k, self.owner, now) for k in grab],
                )
                conn.execute("COMMIT")
            except sqlite3.Error as exc:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise CacheError(f"cannot write response cache {self.path!r}: {exc}") from None
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
        res.claimed = grab
        return res

    def release(self, identity: str, keys: Sequence[str]) -> None:
        """Drop this object's claims on ``keys`` (a batch that failed is left for others)."""
        if not keys or self._conn is None:
            return
        with self._lock:
            conn = self._connection()
            try:
                conn.executemany(
                    "DELETE FROM claims WHERE identity = ? AND key = ? AND owner = ?",
                    [(identity, k, self.owner) for k in keys],
                )
            except sqlite3.Error:  # pragma: no cover - a stale claim only delays others
                pass

    def in_flight(self, identity: str | None = None) -> int:
        """Claims currently held (by any process) on keys not answered yet."""
        return self._count("claims", identity)

    def _count(self, table: str, identity: str | None) -> int:
        """Rows of ``table`` (``answers`` or ``claims``, never user input), of one identity or
        in all."""
        sql = f"SELECT COUNT(*) FROM {table}" + ("" if identity is None else " WHERE identity = ?")
        with self._lock:
            row = self._connection().execute(sql, () if identity is None else (identity,)
                                             ).fetchone()
        return int(row[0])

    def count(self, identity: str | None = None) -> int:
        """Number of stored answers, for one identity or in all."""
        return self._count("answers", identity)

    def identities(self) -> dict[str, int]:
        """Every backend identity in the cache with its number of answers."""
        with self._lock:
            rows = (
                self._connection()
                .execute("SELECT identity, COUNT(*) FROM answers GROUP BY identity")
                .fetchall()
            )
        return {str(i): int(n) for i, n in rows}

    def clear(self, identity: str | None = None) -> int:
        """Delete the answers of one identity (or all); return how many were deleted."""
        with self._lock:
            conn = self._connection()
            if identity is None:
                cur = conn.execute("DELETE FROM answers")
                conn.execute("DELETE FROM claims")
            else:
                cur = conn.execute("DELETE FROM answers WHERE identity = ?", (identity,))
                conn.execute("DELETE FROM claims WHERE identity = ?", (identity,))
        return int(cur.rowcount)

    def __len__(self) -> int:
        return self.count()

    # -- lifecycle --------------------------------------------------------------------------
    def close(self) -> None:
        """Close the connection (idempotent)."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __repr__(self) -> str:
        return f"ResponseCache({self.path!r})"
