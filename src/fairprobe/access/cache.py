"""The persistent response cache: every answer a model gave, so that none is ever paid twice.

One SQLite file (stdlib :mod:`sqlite3`, WAL journal) holds one row per answer::

    answers(identity TEXT, key TEXT, answer TEXT, ts REAL, PRIMARY KEY (identity, key))

``identity`` is :attr:`Backend.identity <fairprobe.access.Backend.identity>` (backend, endpoint and
model; never a secret), ``key`` the SHA-256 of the record's canonical JSON
(:func:`fairprobe.access.records.record_key`), ``answer`` the :class:`~fairprobe.access.Answer` as
JSON and ``ts`` the Unix time it was stored.

Durability. :meth:`ResponseCache.put_many` commits before it returns, and
:class:`~fairprobe.access.BlackBox` calls it as soon as a batch of answers comes back. In WAL mode a
committed transaction survives the death of the process (even ``SIGKILL``); with
``durable=True`` (``PRAGMA synchronous=FULL``) it also survives a power cut, at some cost in speed.

Concurrency. One connection per cache object, shared by threads under a lock; several processes
may share a file (WAL readers never block the writer; writers wait up to ``busy_timeout``). When
two writers store an answer to the same query, the first one is kept.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from types import TracebackType

from fairprobe.access.base import Answer
from fairprobe.errors import AccessError, InvalidParameterError

__all__ = ["ResponseCache"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS answers (
    identity TEXT NOT NULL,
    key      TEXT NOT NULL,
    answer   TEXT NOT NULL,
    ts       REAL NOT NULL,
    PRIMARY KEY (identity, key)
) WITHOUT ROWID
"""


_ENCODE = json.JSONEncoder(allow_nan=False, separators=(",", ":")).encode


class ResponseCache:
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

    Examples
    --------
    >>> from fairprobe.access import Answer, ResponseCache
    >>> with ResponseCache(":memory:") as cache:
    ...     cache.put_many("model-a", [("k1", Answer(1, 0.9, 2.2))])
    ...     cache.get_many("model-a", ["k1", "k2"])
    {'k1': Answer(decision=1, score=0.9, logit=2.2, raw=None)}
    """

    def __init__(
        self, path: str | os.PathLike[str], *, durable: bool = False, busy_timeout: float = 60.0
    ) -> None:
        self.path = str(path)
        if self.path != ":memory:":
            p = Path(self.path)
            if p.is_dir():
                raise InvalidParameterError(
                    f"The 'path' parameter of ResponseCache must be a file path. Got the "
                    f"directory {self.path!r} instead."
                )
            p.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        try:
            self._conn: sqlite3.Connection | None = sqlite3.connect(
                self.path, timeout=busy_timeout, isolation_level=None, check_same_thread=False
            )
            self._conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
            if self.path != ":memory:":
                self._conn.execute("PRAGMA journal_mode = WAL")
            self._conn.execute(f"PRAGMA synchronous = {'FULL' if durable else 'NORMAL'}")
            self._conn.execute(_SCHEMA)
        except sqlite3.Error as exc:
            raise AccessError(f"cannot open response cache {self.path!r}: {exc}") from None
        self._max_vars = max(1, self._conn.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER) - 1)

    # -- access -----------------------------------------------------------------------------
    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise AccessError(f"response cache {self.path!r} is closed.")
        return self._conn

    def get_many(self, identity: str, keys: Sequence[str]) -> dict[str, Answer]:
        """Answers stored for ``keys`` under ``identity`` (absent keys are left out).

        One ``SELECT ... WHERE key IN (...)`` per chunk of up to SQLite's variable limit
        (32,766 parameters on SQLite >= 3.32), not one per key.
        """
        out: dict[str, Answer] = {}
        if not keys:
            return out
        step = self._max_vars
        with self._lock:
            conn = self._connection()
            for lo in range(0, len(keys), step):
                chunk = list(keys[lo : lo + step])
                marks = ",".join("?" * len(chunk))
                rows = conn.execute(
                    f"SELECT key, answer FROM answers WHERE identity = ? AND key IN ({marks})",
                    [identity, *chunk],
                ).fetchall()
                if not rows:
                    continue
                # one C-level parse of all the answers, not one json.loads call per row
                parsed = json.loads("[" + ",".join(r[1] for r in rows) + "]")
                for (k, _), d in zip(rows, parsed, strict=True):
                    out[k] = Answer.from_json(d)
        return out

    def put_many(self, identity: str, items: Iterable[tuple[str, Answer]]) -> int:
        """Store answers in one committed transaction; return how many were new.

        An answer already stored for the same ``(identity, key)`` is kept as it is.
        """
        now = time.time()
        enc = _ENCODE
        rows = [(identity, k, enc(a.to_json()), now) for k, a in items]
        if not rows:
            return 0
        with self._lock:
            conn = self._connection()
            before = conn.total_changes
            try:
                conn.execute("BEGIN IMMEDIATE")
                conn.executemany(
                    "INSERT OR IGNORE INTO answers (identity, key, answer, ts) VALUES (?,?,?,?)",
                    rows,
                )
                conn.execute("COMMIT")
            except sqlite3.Error as exc:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise AccessError(f"cannot write response cache {self.path!r}: {exc}") from None
            return conn.total_changes - before

    def count(self, identity: str | None = None) -> int:
        """Number of stored answers, for one identity or in all."""
        with self._lock:
            conn = self._connection()
            if identity is None:
                row = conn.execute("SELECT COUNT(*) FROM answers").fetchone()
            else:
                row = conn.execute(
                    "SELECT COUNT(*) FROM answers WHERE identity = ?", (identity,)
                ).fetchone()
        return int(row[0])

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
            else:
                cur = conn.execute("DELETE FROM answers WHERE identity = ?", (identity,))
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

    def __enter__(self) -> ResponseCache:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"ResponseCache({self.path!r})"
