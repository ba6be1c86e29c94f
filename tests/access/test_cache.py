"""ResponseCache: persistence, batching of lookups, threads and processes."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from fairprobe.access import Answer, ResponseCache
from fairprobe.errors import AccessError, InvalidParameterError


def test_roundtrip_and_persistence(tmp_path: Path) -> None:
    p = tmp_path / "c.sqlite"
    with ResponseCache(p) as c:
        assert c.put_many("m", [("k1", Answer(1, 0.75, 1.1)), ("k2", Answer(None, raw="??"))]) == 2
        assert c.put_many("other", [("k1", Answer(0))]) == 1
    with ResponseCache(p) as c:
        got = c.get_many("m", ["k1", "k2", "k3"])
        assert got == {"k1": Answer(1, 0.75, 1.1), "k2": Answer(None, raw="??")}
        assert c.get_many("other", ["k1"]) == {"k1": Answer(0)}
        assert len(c) == 3 and c.count("m") == 2
        assert c.identities() == {"m": 2, "other": 1}
        # the first answer stored for a key is kept
        assert c.put_many("m", [("k1", Answer(0))]) == 0
        assert c.get_many("m", ["k1"])["k1"].decision == 1
        assert c.clear("other") == 1 and len(c) == 2


def test_wal_mode_and_schema(tmp_path: Path) -> None:
    p = tmp_path / "c.sqlite"
    ResponseCache(p).close()
    con = sqlite3.connect(p)
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    cols = [r[1] for r in con.execute("PRAGMA table_info(answers)")]
    assert cols == ["identity", "key", "answer", "ts"]
    con.close()


def test_lookups_are_one_select_per_chunk(tmp_path: Path) -> None:
    c = ResponseCache(tmp_path / "c.sqlite")
    keys = [f"k{i}" for i in range(2500)]
    c.put_many("m", [(k, Answer(i % 2)) for i, k in enumerate(keys)])
    statements: list[str] = []
    assert c._conn is not None
    c._conn.set_trace_callback(statements.append)
    c._max_vars = 999  # as on SQLite < 3.32
    got = c.get_many("m", keys + ["absent"])
    selects = [s for s in statements if s.startswith("SELECT")]
    assert len(got) == 2500
    assert len(selects) == 3  # ceil(2501 / 999), not one per key
    c.close()


def test_many_threads_write_and_read(tmp_path: Path) -> None:
    c = ResponseCache(tmp_path / "c.sqlite")

    def work(t: int) -> None:
        for j in range(20):
            c.put_many("m", [(f"{t}-{j}-{i}", Answer(1)) for i in range(5)])
            c.get_many("m", [f"{t}-{j}-0"])

    threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert c.count("m") == 8 * 20 * 5
    c.close()


def test_several_processes_share_one_file(tmp_path: Path) -> None:
    p = tmp_path / "c.sqlite"
    script = textwrap.dedent(
        f"""
        import sys
        from fairprobe.access import Answer, ResponseCache
        w = int(sys.argv[1])
        with ResponseCache({str(p)!r}) as c:
            for j in range(40):
                c.put_many("m", [(f"{{w}}-{{j}}-{{i}}", Answer(w % 2)) for i in range(10)])
                c.put_many("m", [("shared", Answer(1))])
        """
    )
    procs = [subprocess.Popen([sys.executable, "-c", script, str(w)]) for w in range(4)]
    assert [pr.wait(60) for pr in procs] == [0, 0, 0, 0]
    with ResponseCache(p) as c:
        assert c.count("m") == 4 * 40 * 10 + 1


def test_closed_cache_and_bad_path(tmp_path: Path) -> None:
    c = ResponseCache(":memory:")
    c.close()
    c.close()  # idempotent
    with pytest.raises(AccessError, match="closed"):
        c.get_many("m", ["k"])
    with pytest.raises(InvalidParameterError, match="must be a file path"):
        ResponseCache(tmp_path)
    (tmp_path / "junk.sqlite").write_bytes(b"this is not a database" * 100)
    with pytest.raises(AccessError, match="cannot open response cache"):
        ResponseCache(tmp_path / "junk.sqlite")


def test_nan_answer_is_refused(tmp_path: Path) -> None:
    with ResponseCache(":memory:") as c, pytest.raises(ValueError):
        c.put_many("m", [("k", Answer(1, float("nan")))])
