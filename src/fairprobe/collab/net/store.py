"""SQLite persistence of a node: enough to resume after ``SIGKILL`` without counting twice.

One file per node (WAL journal; a committed transaction survives the death of the process):

``meta(key, value)``
    the node id and a fingerprint of its configuration; a restart with another configuration
    on the same file is refused.
``checkpoint(id=1, round, phase, state)``
    the node's whole protocol state as JSON (the core's auditor state: own counts, table with
    signatures, ``prev``, ``W``; the position in the query order; the table snapshot it sends for
    ``round``). ``phase`` is ``"stamped"`` once the own entry of ``round`` is signed and the
    snapshot fixed, ``"merged"`` once the neighbours' tables of ``round`` are merged and scored.
``own_entries(round, pos_a, n_a, pos_b, n_b, sig)``
    every entry this node signed, in order (a restarted node re-sends the same bytes, never a
    second, different entry for a round).
``inbox(sender, round, body)``
    neighbour tables received and acknowledged but not merged yet. A table is stored before the
    sender gets its ``204``, so an acknowledged table survives a crash.
``rejections(reason, count)``, ``counters(name, value)``
    what the node refused and a few event counts.
``result(id=1, body)``
    the final result, once the audit is over.
``proofs(accused, digest, body, done)``
    proofs of fraud received (verification of answers), checked at the next round.
``meta('state-lost')``
    set when the node found that its state is behind what its neighbours hold of it: every
    later start refuses, too (the state cannot be rebuilt from the neighbours).

The checkpoint and the inbox rows it consumes change in one transaction: after a crash the node
finds either the state before a merge with its inbox intact, or the state after it with the
inbox rows gone, never a mix.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from fairprobe._io import prepare_private_file
from fairprobe.errors import ConfigError

__all__ = ["NodeStore"]

_SCHEMA = [
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    """CREATE TABLE IF NOT EXISTS checkpoint (
        id INTEGER PRIMARY KEY CHECK (id = 1), round INTEGER NOT NULL, phase TEXT NOT NULL,
        state TEXT NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS own_entries (
        round INTEGER PRIMARY KEY, pos_a INTEGER NOT NULL, n_a INTEGER NOT NULL,
        pos_b INTEGER NOT NULL, n_b INTEGER NOT NULL, sig BLOB NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS inbox (
        sender TEXT NOT NULL, round INTEGER NOT NULL, body TEXT NOT NULL,
        PRIMARY KEY (sender, round))""",
    "CREATE TABLE IF NOT EXISTS rejections (reason TEXT PRIMARY KEY, count INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS result (id INTEGER PRIMARY KEY CHECK (id = 1), body TEXT)",
    """CREATE TABLE IF NOT EXISTS proofs (
        accused TEXT NOT NULL, digest TEXT NOT NULL, body TEXT NOT NULL,
        done INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (accused, digest))""",
]


class NodeStore:
    """The persistent state of one node (thread-safe; one connection under a lock)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        try:
            prepare_private_file(self.path, "node state database", ConfigError)  # 0600
            self._conn = sqlite3.connect(
                str(self.path), isolation_level=None, check_same_thread=False, timeout=30
            )
            self._conn.execute("PRAGMA journal_mode = WAL")
            self._conn.execute("PRAGMA synchronous = NORMAL")
            for stmt in _SCHEMA:
                self._conn.execute(stmt)
            bad = self._conn.execute("PRAGMA quick_check").fetchone()
        except (OSError, sqlite3.Error) as exc:
            raise ConfigError(
                f"Cannot open node state database {self.path}: {exc}; it is damaged or not a "
                "node database (restore it from a backup; the node cannot rebuild it)."
            ) from None
        if bad is None or bad[0] != "ok":
            raise ConfigError(
                f"Node state database {self.path} is damaged ({bad[0] if bad else '?'}); "
                "restore it from a backup (the node cannot rebuild it from its neighbours)."
            )
        self._lock = threading.RLock()

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    # -- helpers ------------------------------------------------------------------------------
    def _tx(self, stmts: Iterable[tuple[str, tuple[Any, ...]]]) -> None:
        with self._lock:
            c = self._conn
            c.execute("BEGIN IMMEDIATE")
            try:
                for sql, args in stmts:
                    c.execute(sql, args)
                c.execute("COMMIT")
            except BaseException:
                c.execute("ROLLBACK")
                raise

    def _one(self, sql: str, args: tuple[Any, ...] = ()) -> Any:
        with self._lock:
            return self._conn.execute(sql, args).fetchone()

    def _all(self, sql: str, args: tuple[Any, ...] = ()) -> list[Any]:
        with self._lock:
            return self._conn.execute(sql, args).fetchall()

    def _insert_new(self, sql: str, args: tuple[Any, ...]) -> bool:
        """Run one ``INSERT OR IGNORE``; whether it added a row."""
        with self._lock:
            before = self._conn.total_changes
            self._tx([(sql, args)])
            return self._conn.total_changes > before

    # -- identity -----------------------------------------------------------------------------
    def bind(self, node_id: str, fingerprint: str) -> None:
        """Record (or check) which node and configuration this file belongs to."""
        row = self._one("SELECT value FROM meta WHERE key = 'node'")
        value = json.dumps({"id": node_id, "config": fingerprint})
        if row is None:
            self._tx([("INSERT INTO meta (key, value) VALUES ('node', ?)", (value,))])
        elif row[0] != value:
            old = json.loads(row[0])
            raise ConfigError(
                f"State database {self.path} belongs to node {old['id']!r} with another "
                "configuration; use a fresh state_db path for a new audit."
            )

    # -- checkpoint ---------------------------------------------------------------------------
    def load_checkpoint(self) -> tuple[int, str, dict[str, Any]] | None:
        row = self._one("SELECT round, phase, state FROM checkpoint WHERE id = 1")
        if row is None:
            return None
        return int(row[0]), str(row[1]), json.loads(row[2])

    def save_stamped(
        self, round_: int, state: Mapping[str, Any], own: tuple[int, int, int, int], sig: bytes
    ) -> None:
        """Commit the state after the own entry of ``round_`` is stamped, with that entry."""
        self._tx(
            [
                (
                    "INSERT OR REPLACE INTO checkpoint (id, round, phase, state) "
                    "VALUES (1, ?, 'stamped', ?)",
                    (round_, json.dumps(state)),
                ),
                (
                    "INSERT OR REPLACE INTO own_entries (round, pos_a, n_a, pos_b, n_b, sig) "
                    "VALUES (?,?,?,?,?,?)",
                    (round_, *own, sig),
                ),
            ]
        )

    def save_merged(
        self,
        round_: int,
        state: Mapping[str, Any],
        consumed: Iterable[tuple[str, int]],
        rejections: Mapping[str, int],
        counters: Mapping[str, int],
    ) -> None:
        """Commit the state after the merge of ``round_``, dropping the consumed inbox rows."""
        stmts: list[tuple[str, tuple[Any, ...]]] = [
            (
                "INSERT OR REPLACE INTO checkpoint (id, round, phase, state) "
                "VALUES (1, ?, 'merged', ?)",
                (round_, json.dumps(state)),
            )
        ]
        stmts += [("DELETE FROM inbox WHERE sender = ? AND round = ?", k) for k in consumed]
        stmts += [
            ("INSERT OR REPLACE INTO rejections (reason, count) VALUES (?, ?)", (r, c))
            for r, c in rejections.items()
        ]
        stmts += [
            ("INSERT OR REPLACE INTO counters (name, value) VALUES (?, ?)", (k, v))
            for k, v in counters.items()
        ]
        self._tx(stmts)

    def own_entry(self, round_: int) -> tuple[tuple[int, int, int, int], bytes] | None:
        row = self._one(
            "SELECT pos_a, n_a, pos_b, n_b, sig FROM own_entries WHERE round = ?", (round_,)
        )
        if row is None:
            return None
        return (int(row[0]), int(row[1]), int(row[2]), int(row[3])), bytes(row[4])

    def mark_lost(self, why: str) -> None:
        self._tx([("INSERT OR REPLACE INTO meta (key, value) VALUES ('state-lost', ?)", (why,))])

    def lost(self) -> str | None:
        row = self._one("SELECT value FROM meta WHERE key = 'state-lost'")
        return None if row is None else str(row[0])

    def proof_put(self, accused: str, digest: str, body: str) -> bool:
        return self._insert_new(
            "INSERT OR IGNORE INTO proofs (accused, digest, body) VALUES (?, ?, ?)",
            (accused, digest, body),
        )

    def proofs_pending(self) -> list[tuple[str, str, str]]:
        rows = self._all("SELECT accused, digest, body FROM proofs WHERE done = 0 ORDER BY rowid")
        return [(str(a), str(d), str(b)) for a, d, b in rows]

    def proof_done(self, accused: str, digest: str) -> None:
        self._tx([("UPDATE proofs SET done = 1 WHERE accused = ? AND digest = ?",
                   (accused, digest))])

    def own_entries(self) -> list[tuple[int, int, int, int, int, bytes]]:
        rows = self._all("SELECT round, pos_a, n_a, pos_b, n_b, sig FROM own_entries ORDER BY round")
        return [(int(r), int(a), int(A), int(b), int(B), bytes(s)) for r, a, A, b, B, s in rows]

    # -- inbox --------------------------------------------------------------------------------
    def inbox_put(self, sender: str, round_: int, body: str) -> bool:
        """Store a received table; False if one from ``sender`` for ``round_`` is already in."""
        return self._insert_new(
            "INSERT OR IGNORE INTO inbox (sender, round, body) VALUES (?, ?, ?)",
            (sender, round_, body),
        )

    def inbox(self) -> list[tuple[str, int, str]]:
        rows = self._all("SELECT sender, round, body FROM inbox ORDER BY round, sender")
        return [(str(s), int(r), str(b)) for s, r, b in rows]

    # -- counters -----------------------------------------------------------------------------
    def rejections(self) -> dict[str, int]:
        rows = self._all("SELECT reason, count FROM rejections")
        return {str(r): int(c) for r, c in rows}

    def counters(self) -> dict[str, int]:
        rows = self._all("SELECT name, value FROM counters")
        return {str(r): int(c) for r, c in rows}

    # -- result -------------------------------------------------------------------------------
    def save_result(self, body: Mapping[str, Any]) -> None:
        self._tx([("INSERT OR REPLACE INTO result (id, body) VALUES (1, ?)", (json.dumps(body),))])

    def load_result(self) -> dict[str, Any] | None:
        row = self._one("SELECT body FROM result WHERE id = 1")
        return None if row is None else dict(json.loads(row[0]))
