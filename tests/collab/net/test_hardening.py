"""Hardening on real node processes (127.0.0.1): lost or rolled-back state, slow and broken
requests, SIGTERM, and a bounded fuzz test generated from the node's OpenAPI schema.

Guarantees checked: a node whose state database was deleted or rolled back never reports a
verdict (non-zero exit, one clear line) -- or, if it goes on, its estimate is exactly the
fault-free one; no request, however slow, broken or generated, gets a 5xx or a traceback, and
the node keeps serving; SIGTERM ends ``node run`` with one line and exit code 0.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
import time
from pathlib import Path

import httpx
import pytest

from fairprobe.collab import simulate as sim
from fairprobe.collab.net.launcher import DemoSpec, LocalNetwork
from fairprobe.collab.net.plan import sim_config

pytestmark = pytest.mark.timeout(300)

CASE = "civil-near-fair"


def _wait_up(net: LocalNetwork, nid: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if net.status(nid) is not None:
            return
        time.sleep(0.05)
    raise AssertionError(f"{nid} did not come up: {net.procs[nid].log.read_text()[-2000:]}")


def _exit_code(net: LocalNetwork, nid: str, timeout: float) -> int:
    p = net.procs[nid].popen
    assert p is not None
    return p.wait(timeout=timeout)


def _log_lines(net: LocalNetwork, nid: str) -> list[str]:
    return net.procs[nid].log.read_text(errors="replace").strip().splitlines()


# -- a lone node waiting for its neighbour: fuzzed, slowed, cut, and stopped -------------------
@pytest.fixture(scope="module")
def lone(tmp_path_factory):
    wd = tmp_path_factory.mktemp("lone")
    spec = DemoSpec(honest=2, attackers=0, seed=0, case=CASE, n=300, rounds=3,
                    round_timeout=280, request_timeout=1.0, verify=True)
    with LocalNetwork(spec, wd) as net:
        net.write()
        net.start(["a00"])  # a01 never starts: a00 serves while it waits in round 1
        _wait_up(net, "a00")
        yield net


def test_fuzz_the_node_from_its_openapi_schema(lone):
    """Every operation of the served schema, up to 40 generated requests each (bounded: 20 s)."""
    schemathesis = pytest.importorskip("schemathesis")
    from hypothesis import HealthCheck, given, settings

    url = lone.roster.member("a00").url
    schema = schemathesis.openapi.from_url(url + "/openapi.json")
    ops = [r.ok() for r in schema.get_all_operations()]
    labels = sorted(op.label for op in ops)
    assert labels == ["GET /v1/status", "POST /v1/challenge", "POST /v1/proof", "POST /v1/table"]
    seen: dict[str, set[int]] = {}
    deadline = time.monotonic() + 20
    def fuzz(op):
        @settings(max_examples=40, deadline=None, database=None,
                  suppress_health_check=list(HealthCheck))
        @given(case=op.as_strategy())
        def run(case):
            if time.monotonic() > deadline:
                return
            r = case.call(base_url=url, timeout=10)
            seen.setdefault(op.label, set()).add(r.status_code)
            assert r.status_code < 500, (op.label, r.status_code, r.text[:200])
            if r.status_code >= 400:  # a fixed reason, never an echo of the request
                assert set(r.json()) <= {"error", "detail"}

        run()

    for op in ops:
        fuzz(op)
    assert seen["GET /v1/status"] == {200}
    assert all(code < 500 for codes in seen.values() for code in codes)
    assert lone.status("a00") is not None
    assert "Traceback" not in lone.procs["a00"].log.read_text(errors="replace")


def _raw(port: int) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    s.settimeout(30)
    return s


def test_slow_headers_slow_body_and_a_disconnect_mid_body(lone):
    port = lone.roster.member("a00").port
    # 1. headers that never finish: the server closes the connection after its header deadline
    slow_h = _raw(port)
    slow_h.sendall(b"POST /v1/table HTTP/1.1\r\nHost: x\r\n")
    # 2. a body that never finishes: 408 after the body deadline
    slow_b = _raw(port)
    slow_b.sendall(b"POST /v1/table HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                   b"Content-Length: 400\r\n\r\n{\"sender\":")
    # 3. a client that disconnects mid-body
    for _ in range(3):
        cut = _raw(port)
        cut.sendall(b"POST /v1/table HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                    b"Content-Length: 400\r\n\r\n{\"sender\":")
        cut.close()
    t0 = time.monotonic()
    assert slow_h.recv(1024) == b""  # closed, no answer
    waited_h = time.monotonic() - t0
    reply = b""
    while b"body-timeout" not in reply and time.monotonic() - t0 < 25:
        part = slow_b.recv(4096)  # the status line and the body may come in separate packets
        if not part:
            break
        reply += part
    waited_b = time.monotonic() - t0
    assert reply.startswith(b"HTTP/1.1 408"), reply[:100]
    assert b"body-timeout" in reply
    assert waited_h < 20 and waited_b < 20
    slow_h.close()
    slow_b.close()
    # the node still answers and logged no traceback
    assert httpx.get(lone.roster.member("a00").url + "/v1/status", timeout=5).status_code == 200
    time.sleep(0.3)
    assert "Traceback" not in lone.procs["a00"].log.read_text(errors="replace")


def test_sigterm_ends_node_run_with_one_line(lone):
    lone.signal("a00", signal.SIGTERM)
    assert lone.procs["a00"].popen.returncode == 0
    lines = _log_lines(lone, "a00")
    assert lines and "stopped by SIGTERM in round 1" in lines[-1], lines[-3:]
    assert "run the same command to resume" in lines[-1]
    assert "Traceback" not in "\n".join(lines)


# -- state lost or rolled back -------------------------------------------------------------------
def _network(tmp_path: Path, **kw) -> LocalNetwork:
    spec = DemoSpec(honest=3, attackers=0, seed=2, case=CASE, n=300, round_timeout=60, **kw)
    return LocalNetwork(spec, tmp_path / "net")


def _victim(net: LocalNetwork) -> str:
    return next(k for k, p in net.procs.items() if p.role == "honest")


def test_a_node_whose_state_database_was_deleted_refuses_a_verdict(tmp_path):
    with _network(tmp_path) as net:
        net.write()
        assert net.plan.rounds >= 14
        v = _victim(net)
        net.start()
        net.wait_round(v, 8, timeout=120)
        net.signal(v, signal.SIGKILL)
        for f in (net.workdir / "state").glob(f"{v}.*sqlite*"):
            f.unlink()
        assert not list((net.workdir / "state").glob(f"{v}.sqlite*"))
        net.start([v])
        code = _exit_code(net, v, timeout=120)
        lines = _log_lines(net, v)
        assert code == 4, lines[-5:]
        assert lines[-1].startswith("error: node ") and "state is behind" in lines[-1]
        assert "gives no verdict" in lines[-1]
        assert not net.procs[v].result.exists()
        # (a second start refuses at once: tests/collab/net/test_verify_unit.py)


def test_a_node_whose_wal_is_corrupted_recovers_exactly_or_refuses(tmp_path):
    with _network(tmp_path) as net:
        net.write()
        v = _victim(net)
        net.start()
        net.wait_round(v, 8, timeout=120)
        net.signal(v, signal.SIGKILL)
        wal = net.workdir / "state" / f"{v}.sqlite-wal"
        assert wal.exists() and wal.stat().st_size > 32 + 24 + 4096
        with open(wal, "r+b") as fh:  # garble the first frame: SQLite drops the whole log
            fh.seek(32 + 24 + 100)
            fh.write(os.urandom(64))
        net.start([v])
        code = _exit_code(net, v, timeout=240)
        lines = _log_lines(net, v)
        if code == 0:  # it went on: then its estimate is exactly the fault-free one
            res = json.loads(net.procs[v].result.read_text())
            assert res["missing_tables"] == 0 and res["timeouts"] == 0
            cfg = sim_config(case=CASE, honest=3, attackers=0, seed=2, n=300, alpha=1.0,
                             max_rounds=150)
            ref = sim.simulate(cfg)
            i = [k for k, p in net.procs.items() if p.role == "honest"].index(v)
            assert res["estimate"] == ref.per_auditor["robust"][i]
        else:
            assert code == 4, lines[-5:]
            assert "state is behind" in lines[-1] and "gives no verdict" in lines[-1]


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
