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
    assert cols == ["identity", "key", "answer", "ts", "record", "checksum"]
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
    with pytest.raises(InvalidParameterError, match="is a directory; give a file path"):
        ResponseCache(tmp_path)
    (tmp_path / "junk.sqlite").write_bytes(b"this is not a database" * 100)
    with pytest.raises(AccessError, match="not a readable SQLite file.*delete it"):
        ResponseCache(tmp_path / "junk.sqlite")


def test_nan_answer_is_refused(tmp_path: Path) -> None:
    with ResponseCache(":memory:") as c, pytest.raises(ValueError):
        c.put_many("m", [("k", Answer(1, float("nan")))])


# -- integrity (tampered answers and a foreign schema are refused) ----------------------------------
def _tamper(path: Path, sql: str) -> None:
    con = sqlite3.connect(path)
    con.execute(sql)
    con.commit()
    con.close()


def test_tampered_answer_is_detected(tmp_path: Path) -> None:
    from fairprobe.errors import CacheError

    p = tmp_path / "c.sqlite"
    with ResponseCache(p) as c:
        c.put_many("m", [("k1", Answer(0, 0.2)), ("k2", Answer(1, 0.9))])
    # flip a stored decision by hand, as the adversarial review did
    _tamper(p, """UPDATE answers SET answer = replace(answer, '"decision":0', '"decision":1')
                  WHERE key = 'k1'""")
    with ResponseCache(p) as c:
        assert c.get_many("m", ["k2"]) == {"k2": Answer(1, 0.9)}  # untouched rows still read
        with pytest.raises(CacheError, match=r"1 answer\(s\) whose checksum does not match.*--refresh"):
            c.get_many("m", ["k1", "k2"])


def test_record_that_does_not_hash_to_its_key_is_detected(tmp_path: Path) -> None:
    from fairprobe.access.cache import row_checksum
    from fairprobe.access.records import record_key
    from fairprobe.errors import CacheError

    p = tmp_path / "c.sqlite"
    rec = '{"x":1}'
    k = record_key(rec)
    with ResponseCache(p) as c:
        c.put_many("m", [(k, Answer(1))], records={k: rec})
        assert c.get_many("m", [k]) == {k: Answer(1)}
    # a forger who recomputes the checksum but swaps the record is still caught by the key
    fake = '{"x":2}'
    con = sqlite3.connect(p)
    stored = con.execute("SELECT answer FROM answers").fetchone()[0]
    con.close()
    _tamper(p, f"UPDATE answers SET record = '{fake}', "
               f"checksum = '{row_checksum('m', k, stored, fake)}'")
    with ResponseCache(p) as c, pytest.raises(CacheError, match="checksum"):
        c.get_many("m", [k])


def test_foreign_sqlite_files_are_refused(tmp_path: Path) -> None:
    from fairprobe.errors import CacheError

    other = tmp_path / "other.sqlite"
    con = sqlite3.connect(other)
    con.execute("CREATE TABLE users (name TEXT)")
    con.commit()
    con.close()
    with pytest.raises(CacheError, match="another program.*users.*--cache"):
        ResponseCache(other)
    newer = tmp_path / "newer.sqlite"
    ResponseCache(newer).close()
    _tamper(newer, "UPDATE meta SET value = 'fairprobe-cache/9' WHERE name = 'schema'")
    with pytest.raises(CacheError, match="schema 'fairprobe-cache/9'"):
        ResponseCache(newer)


def test_first_schema_cache_is_upgraded_with_its_answers(tmp_path: Path) -> None:
    p = tmp_path / "v1.sqlite"
    con = sqlite3.connect(p)
    con.execute("CREATE TABLE answers (identity TEXT NOT NULL, key TEXT NOT NULL, "
                "answer TEXT NOT NULL, ts REAL NOT NULL, PRIMARY KEY (identity, key)) WITHOUT ROWID")
    con.execute("""INSERT INTO answers VALUES ('m', 'k', '{"decision":1,"score":0.7}', 0)""")
    con.commit()
    con.close()
    with ResponseCache(p) as c:
        assert c.get_many("m", ["k"]) == {"k": Answer(1, 0.7)}


def test_claims_keep_two_caches_from_paying_the_same_key(tmp_path: Path) -> None:
    p = tmp_path / "c.sqlite"
    with ResponseCache(p) as a, ResponseCache(p) as b:
        ra = a.claim("m", ["k1", "k2"])
        assert ra.claimed == ["k1", "k2"] and not ra.busy
        rb = b.claim("m", ["k1", "k2", "k3"])
        assert rb.claimed == ["k3"] and rb.busy == ["k1", "k2"]  # a is alive: b waits
        a.put_many("m", [("k1", Answer(1))])  # answers and releases k1
        rb2 = b.claim("m", ["k1", "k2"])
        assert rb2.answered == {"k1": Answer(1)} and rb2.busy == ["k2"]
        a.release("m", ["k2"])
        assert b.claim("m", ["k2"]).claimed == ["k2"]


def test_claims_of_a_dead_process_are_taken_over(tmp_path: Path) -> None:
    import subprocess
    import sys

    p = tmp_path / "c.sqlite"
    code = ("import sys; from fairprobe.access.cache import ResponseCache; "
            "c = ResponseCache(sys.argv[1]); c.claim('m', ['k1', 'k2']); print(c.owner)")
    owner = subprocess.run([sys.executable, "-c", code, str(p)], check=True,
                           capture_output=True, text=True).stdout.strip()
    with ResponseCache(p) as c:
        assert c.in_flight("m") == 2
        r = c.claim("m", ["k1", "k2"])
        assert r.claimed == ["k1", "k2"] and r.taken_over == 2, owner


def test_a_cache_file_planted_by_another_account_is_refused(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    from fairprobe.errors import CacheError

    path = tmp_path / "planted.sqlite"
    ResponseCache(path).close()  # a valid cache, as another account could prepare one
    os.chmod(path, 0o666)
    if os.geteuid() == 0:
        os.chown(path, 65534, 65534)  # nobody
    else:  # not root: the file is ours, so we become someone else for the check
        me = os.geteuid()
        monkeypatch.setattr(os, "geteuid", lambda: me + 1)
    with pytest.raises(CacheError, match="belongs to another account"):
        ResponseCache(path)
    assert os.stat(path).st_mode & 0o777 == 0o666  # refused, not adopted: left as it was
