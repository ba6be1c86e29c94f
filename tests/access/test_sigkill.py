"""An audit killed with SIGKILL halfway resumes with no query repeated and the same answers."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from fairprobe.access import BlackBox, HttpJsonBackend

HERE = Path(__file__).resolve().parent
SCRIPT = str(HERE / "sigkill_audit.py")
_spec = importlib.util.spec_from_file_location("_sigkill_audit", SCRIPT)
assert _spec is not None and _spec.loader is not None
script = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(script)

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")


def cached(cache: Path) -> int:
    if not cache.exists():
        return 0
    con = sqlite3.connect(cache, timeout=30)
    try:
        return int(con.execute("SELECT COUNT(*) FROM answers").fetchone()[0])
    except sqlite3.OperationalError:  # table not created yet
        return 0
    finally:
        con.close()


def run(*args: str) -> dict[str, Any]:
    subprocess.run([sys.executable, SCRIPT, *args], check=True, timeout=120)
    return json.loads(Path(args[3]).read_text())


def wait_for(cond: Any, proc: subprocess.Popen[bytes], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert proc.poll() is None, "the audit finished before it could be killed"
        assert time.monotonic() < deadline, "the audit did not get halfway in time"
        time.sleep(0.01)


def kill(proc: subprocess.Popen[bytes]) -> None:
    os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait(30) == -signal.SIGKILL


def test_sigkill_local_backend_repeats_no_query(tmp_path: Path) -> None:
    n, concurrency, hang_from = 200, 2, 18  # 40 batches of 5; killed after 18 calls
    records = tmp_path / "records.json"
    records.write_text(json.dumps([{"id": i, "x": i * 7 % 101} for i in range(n)]))
    cache, log = tmp_path / "cache.sqlite", tmp_path / "asked.log"
    first = subprocess.Popen(
        [sys.executable, SCRIPT, "local", str(records), str(cache), str(tmp_path / "x.json"),
         "--log", str(log), "--hang-from", str(hang_from), "--concurrency", str(concurrency)]
    )
    try:
        hung = Path(str(log) + ".hung")
        wait_for(lambda: hung.exists() and len(hung.read_text().split()) >= concurrency, first)
        kill(first)
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    asked_before = log.read_text().split()
    in_cache = cached(cache)
    assert 0 < in_cache < n  # killed halfway
    assert in_cache == len(asked_before) == hang_from * 5  # every answer paid for was kept

    resumed = run("local", str(records), str(cache), str(tmp_path / "resumed.json"),
                  "--log", str(log))
    asked_after = log.read_text().split()[len(asked_before):]
    assert not set(asked_before) & set(asked_after)  # no query repeated
    assert len(asked_before) + len(asked_after) == n  # each of the n queries paid exactly once
    assert resumed["spent"] == n - in_cache and resumed["n_cached"] == in_cache
    # exactly the batches in flight at the kill (claimed, never answered) are reported as
    # asked again: concurrency x max_batch queries
    assert resumed["resumed_in_flight"] == concurrency * script.SlowLogging.max_batch

    # an uninterrupted run (in this process, with the same backend class) gives the same answers
    fresh_log = tmp_path / "fresh.log"
    with BlackBox(script.SlowLogging(str(fresh_log), None)) as bb:
        fresh = bb.query(json.loads(records.read_text()))
    assert len(fresh_log.read_text().split()) == n
    assert resumed["decisions"] == fresh.decisions.tolist()
    assert resumed["scores"] == fresh.scores.tolist()
    assert resumed["logits"] == fresh.logits.tolist()


def test_sigkill_platform_audit_resumes(
    tmp_path: Path, platform_url: str, make_records: Any
) -> None:
    n = 150
    records = tmp_path / "records.json"
    records.write_text(json.dumps(make_records(n, seed=11)))
    cache = tmp_path / "cache.sqlite"
    # one record per request, one request at a time, so that the kill lands mid-audit
    small = ["--url", platform_url, "--max-batch", "1", "--concurrency", "1"]
    first = subprocess.Popen(
        [sys.executable, SCRIPT, "http", str(records), str(cache), str(tmp_path / "x.json"), *small]
    )
    try:
        wait_for(lambda: cached(cache) >= n // 3, first)
        kill(first)
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    in_cache = cached(cache)
    assert 0 < in_cache < n
    resumed = run("http", str(records), str(cache), str(tmp_path / "r.json"), "--url", platform_url)
    assert resumed["spent"] == resumed["n_paid"] == n - in_cache  # only what was missing is paid
    assert resumed["n_cached"] == in_cache
    with BlackBox(HttpJsonBackend(url=platform_url)) as bb:  # an uninterrupted audit
        fresh = bb.query(json.loads(records.read_text()))
        assert bb.spent == n
    assert resumed["decisions"] == fresh.decisions.tolist()
    assert resumed["scores"] == fresh.scores.tolist()
    assert resumed["logits"] == fresh.logits.tolist()
