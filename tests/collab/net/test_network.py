"""Real node processes on 127.0.0.1: agreement with the simulator, faults, and what leaves a node.

Every process is started through :class:`LocalNetwork` (or the ``fairprobe collab demo`` CLI,
whose node pids are recorded in ``<workdir>/pids``) and ended by id at the end of each test,
also when it fails.
"""

from __future__ import annotations

import base64
import contextlib
import http.server
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import numpy as np
import pytest

from conftest import free_port
from fairprobe.collab import simulate as sim
from fairprobe.collab.net.keys import (
    Ed25519Signer,
    entry_bytes,
    load_private_key,
)
from fairprobe.collab.net.launcher import DemoSpec, LocalNetwork
from fairprobe.collab.net.messages import (
    EntryMessage,
    ResultMessage,
    TableMessage,
    max_body_bytes,
)
from fairprobe.collab.net.plan import sim_config
from fairprobe.collab.partition import local_counts

pytestmark = pytest.mark.timeout(300)


def _load_netutil():  # a helper module beside this file (tests are not a package)
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "collab_net_netutil", Path(__file__).with_name("netutil.py")
    )
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


_nu = _load_netutil()
RecordingProxy = _nu.RecordingProxy
checkpoint = _nu.checkpoint
own_entries = _nu.own_entries
parse_http_stream = _nu.parse_http_stream

CASE = "civil-near-fair"  # the smallest Table I population (26,311 inputs): short audits


def _kill_recorded(workdir: Path) -> None:
    """End node processes recorded by a launcher in ``workdir`` that still run (by pid)."""
    for f in (workdir / "pids").glob("*.pid") if (workdir / "pids").exists() else []:
        pid = int(f.read_text())
        with contextlib.suppress(OSError):
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
            if str(workdir).encode() in cmd:
                os.kill(pid, signal.SIGKILL)


# -- 1. agreement with the simulator, through the CLI ---------------------------------------------
def test_fourteen_node_processes_match_the_simulator_to_the_last_digit(tmp_path):
    wd = tmp_path / "net"
    out_json = tmp_path / "demo.json"
    honest, attackers, seed, n = 12, 2, 4, 800
    cmd = [
        sys.executable, "-m", "fairprobe", "collab", "demo",
        "--honest", str(honest), "--attackers", str(attackers), "--seed", str(seed),
        "--case", CASE, "--n", str(n), "--round-timeout", "120",
        "--workdir", str(wd), "--json", str(out_json),
        # the protocol itself, digit for digit: no challenges (they exclude the attackers)
        "--no-verify", "--max-liars", "0",
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        stdout, stderr = proc.communicate(timeout=240)
    finally:
        if proc.poll() is None:
            proc.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(15)
        if proc.poll() is None:
            proc.kill()
        _kill_recorded(wd)
    assert proc.returncode == 0, stderr.decode()[-2000:]
    out = json.loads(out_json.read_text())
    nodes = out["nodes"]
    assert len(nodes) == honest + attackers
    assert all({"id", "role", "estimate"} <= set(x) for x in nodes)
    assert isinstance(out["median"], float)
    assert out["verdict"] in ("fair", "unfair", "undetermined")

    cfg = sim_config(case=CASE, honest=honest, attackers=attackers, seed=seed, n=n,
                     alpha=1.0, max_rounds=150)
    vec = sim.simulate(cfg)
    ref = sim.simulate_reference(cfg)
    # same roles at the same graph positions
    assert [i for i, x in enumerate(nodes) if x["role"] == "attacker"] == list(
        vec.attacker_positions
    )
    for x in nodes:  # the fault-free schedule was followed (else the comparison is moot)
        r = json.loads((wd / "results" / f"{x['id']}.json").read_text())
        assert r["missing_tables"] == 0 and r["timeouts"] == 0, r
    hon = [x for x in nodes if x["role"] == "honest"]
    got = [x["estimate"] for x in hon]
    # to the last digit: float equality, not approx (the nodes run the default method,
    # bounded, after the closing rounds; the simulator's closing view is the same)
    assert got == vec.per_auditor["bounded"].tolist()
    assert got == ref.per_auditor["bounded"].tolist()
    lows = [x["bounded"]["low"] for x in hon]
    highs = [x["bounded"]["high"] for x in hon]
    assert lows == vec.bounded["low"].tolist() and highs == vec.bounded["high"].tolist()
    assert [x["finding"]["verdict"] for x in hon] == vec.node_verdicts["bounded"].tolist()
    ks = [-1 if x["certified_k"] is None else x["certified_k"] for x in hon]
    assert ks == vec.node_certified["bounded"].tolist()
    assert out["interval"] == vec.bounded["interval"]
    assert out["verdict"] == vec.verdicts["bounded"]
    assert all(x["method"] == "bounded" for x in hon)
    assert all(x["estimate"] == 0.0 for x in nodes if x["role"] == "attacker")
    # ran until every query set was used up (plus the closing rounds), no timeout, no rejection
    for x in nodes:
        r = json.loads((wd / "results" / f"{x['id']}.json").read_text())
        assert r["rounds"] > vec.rounds and r["timeouts"] == 0 and r["rejected"] == {}
        assert r["missing_tables"] == 0 and r["late_tables"] == 0
        if x["role"] == "honest":
            assert r["queries_left"] == 0 and r["queries_used"] > 0
    assert vec.rounds > 1
    assert "verdict (bounded" in stdout.decode() and "certificate:" in stdout.decode()


# -- 2. faults ------------------------------------------------------------------------------------
def _signer(net: LocalNetwork, nid: str) -> Ed25519Signer:
    return Ed25519Signer(nid, load_private_key(net.workdir / "keys" / nid / "node.key"),
                         context=net.audit_id())


def _entry(auditor: str, r: int, c: tuple[int, ...], sig: bytes) -> EntryMessage:
    a, A, b, B = c
    return EntryMessage(auditor=auditor, round=r, a=a, A=A, b=b, B=B,
                        sig=base64.b64encode(sig).decode())


def _table(signer: Ed25519Signer, to: str, r: int, entries: list[EntryMessage]) -> bytes:
    unsigned = TableMessage.model_construct(sender=signer.auditor_id, receiver=to, round=r,
                                            entries=entries, sig="")
    sig = base64.b64encode(signer.sign(unsigned.envelope())).decode()
    return TableMessage(sender=signer.auditor_id, receiver=to, round=r, entries=entries,
                        sig=sig).model_dump_json().encode()


def _post(url: str, body: bytes, ctype: str = "application/json") -> int:
    r = httpx.post(url, content=body, headers={"content-type": ctype}, timeout=10,
                   trust_env=False)
    return r.status_code


def _raw(port: int, payload: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(payload)
        return s.recv(4096)


def _latest(db: Path) -> tuple[int, tuple[int, int, int, int, bytes]]:
    rows = own_entries(db)
    r = max(rows)
    return r, rows[r]


def test_forged_tampered_replayed_malformed_oversized_down_and_sigkilled(tmp_path):
    spec = DemoSpec(honest=5, attackers=1, seed=2, case=CASE, n=600, round_timeout=1.5,
                    request_timeout=1.0, finish_timeout=2.0, method="robust")
    net = LocalNetwork(spec, tmp_path)
    with net:
        net.write()
        plan = net.plan
        assert net.roster is not None
        ids = plan.ids
        att = ids[plan.is_attacker.index(True)]
        honest = [i for i in ids if i != att]
        t_id = ids[plan.neighbours[ids.index(att)][0]]           # the attacker's neighbour
        assert t_id != att and not plan.is_attacker[ids.index(t_id)]
        t_nb = [ids[j] for j in plan.neighbours[ids.index(t_id)]]
        x_id = next((u for u in t_nb if u != att), next(u for u in honest if u != t_id))
        authors = [u for u in honest if u not in (t_id,)]
        state = net.workdir / "state"
        url = net.roster.member(t_id).url + "/v1/table"
        port = net.roster.member(t_id).port
        last = plan.rounds
        assert last >= 6

        net.start()
        for u in ids:
            net.wait_round(u, 2, timeout=120)                          # every node has signed
        net.signal(x_id, signal.SIGKILL)                           # X dies mid-audit
        killed_at = checkpoint(state / f"{x_id}.sqlite")[0]
        t_round = net.status(t_id)["round"]
        # the attacker node runs at most one round ahead of its neighbour T: tables for rounds
        # t+2 and later are not in T's inbox yet (one table per sender and round is kept)
        r1 = t_round + 2
        assert r1 + 2 <= last
        a_signer = _signer(net, att)
        h1, h2, h3 = authors[0], authors[1], authors[2 % len(authors)]

        # (a) forged: an entry of h1, one round newer than anything held, signed by the attacker
        rr, (a, A, b, B, _) = _latest(state / f"{h1}.sqlite")
        forged = _entry(h1, r1, (a, A + 10, b, B + 10),
                        a_signer.sign(entry_bytes(h1, r1, a, A + 10, b, B + 10)))
        # (b) tampered relays: h2's genuine entry with its counts changed, and with its round bumped
        rr2, (a2, A2, b2, B2, sig2) = _latest(state / f"{h2}.sqlite")
        tampered_round = _entry(h2, r1, (a2, A2, b2, B2), sig2)
        # (c) replayed old entries: the target's own round-1 entry, and h3's round-1 entry
        t_old = own_entries(state / f"{t_id}.sqlite")[1]
        h3_old = own_entries(state / f"{h3}.sqlite")[1]
        replay_own = _entry(t_id, 1, t_old[:4], t_old[4])
        # (d) impossible counts, unknown auditor, round newer than its table
        impossible = _entry(h3, r1, (5, 4, 0, 0), a_signer.sign_entry(r1, 0, 0, 0, 0))
        unknown = _entry("zz", 1, (0, 1, 0, 1), a_signer.sign_entry(1, 0, 1, 0, 1))
        bad_round = _entry(att, r1 + 3, (0, 1, 0, 1), a_signer.sign_entry(1, 0, 1, 0, 1))
        assert _post(url, _table(a_signer, t_id, r1, [forged, tampered_round, replay_own,
                                                        impossible, unknown])) == 204
        r2 = r1 + 1
        tampered_counts = _entry(h2, rr2, (a2 + 1, A2 + 1, b2, B2), sig2)
        replay_h3 = _entry(h3, 1, h3_old[:4], h3_old[4])
        assert _post(url, _table(a_signer, t_id, r2, [tampered_counts, replay_h3])) == 204
        assert _post(url, _table(a_signer, t_id, r2 + 1, [bad_round])) == 204
        # (e) malformed and oversized bodies, bad envelopes: answered 4xx, node goes on
        good = _table(a_signer, t_id, last, [])
        assert _post(url, b"\x00\xffnot json") == 422
        assert _post(url, b'{"sender": "x"}') == 422
        assert _post(url, json.dumps({**json.loads(good), "round": "3"}).encode()) == 422
        assert _post(url, good, ctype="text/plain") == 415
        assert _post(url, b"{" + b" " * max_body_bytes(len(ids)) + b"}") == 413
        forged_env = json.loads(good)
        forged_env["sig"] = base64.b64encode(b"\x01" * 64).decode()
        assert _post(url, json.dumps(forged_env).encode()) == 401
        for not_nb in [u for u in ids if u not in t_nb and u != t_id][:1]:
            assert _post(url, _table(_signer(net, not_nb), t_id, last, [])) == 403
        stranger = Ed25519Signer("zz", load_private_key(net.workdir / "keys" / att / "node.key"),
                                 context=net.audit_id())
        assert _post(url, _table(stranger, t_id, last, [])) == 403
        assert _post(url, _table(a_signer, att, last, [])) == 400           # misaddressed
        reply = _raw(port, b"POST /v1/table HTTP/1.1\r\nHost: x\r\nContent-Type: application/"
                           b"json\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n")
        assert reply.startswith(b"HTTP/1.1 411")
        reply = _raw(port, b"POST /v1/table HTTP/1.1\r\nHost: x\r\nContent-Type: application/"
                           b"json\r\nContent-Length: 99999999\r\n\r\n{")
        assert reply.startswith(b"HTTP/1.1 413")
        assert net.status(t_id) is not None                                   # still serving

        # X stays down for some rounds, then restarts and resumes from its state
        deadline = time.monotonic() + 60
        while net.status(t_id)["round"] < t_round + 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        net.start([x_id])
        results = net.wait(timeout=240)

    # no honest node crashed: every node ran every round and reported
    assert set(results) == set(ids)
    assert all(r["rounds"] == last for r in results.values())
    rt = results[t_id]
    rej = rt["rejected"]
    # the forged entry and the round-bumped relay fail their signature; the relay with tampered
    # counts fails it too, or is dropped as stale if T holds a newer entry of h2 by then
    assert rej.get("bad-signature", 0) >= 2, rt
    assert rej.get("impossible-counts", 0) >= 1, rt
    assert rej.get("unknown-auditor", 0) >= 1, rt
    assert rej.get("bad-round", 0) >= 1, rt
    assert rt["stale"] >= 2, rt                        # the replayed old entries
    refused = rt["refused"]
    for reason in ["malformed-table", "json-only", "body-too-large", "bad-envelope-signature",
                   "not-a-neighbour", "misaddressed", "length-required"]:
        assert refused.get(reason, 0) >= 1, (reason, refused)
    assert results[x_id]["restarts"] >= 1 and killed_at >= 1
    assert any(results[u]["timeouts"] >= 1 for u in t_nb if u != x_id) or rt["timeouts"] >= 1

    # no accepted entry is false: every entry held anywhere is its author's signed entry
    verifier = net.roster.verifier(net.audit_id())
    own = {u: own_entries(state / f"{u}.sqlite") for u in ids}
    for u in ids:
        _, phase, st = checkpoint(state / f"{u}.sqlite")
        assert phase == "merged"
        for author, h in st["driver"]["core"]["table"].items():
            if h["round"] == 0:
                continue
            sig = base64.b64decode(h["sig"])
            assert own[author][h["round"]] == (*h["counts"], sig), (u, author, h)
            assert verifier.verify_entry(author, h["round"], *h["counts"], sig)

    # X counted nothing twice: one entry per round, and its final counts are exactly its query set
    xe = own[x_id]
    assert sorted(xe) == list(range(1, last + 1))
    cum = np.array([xe[r][:4] for r in sorted(xe)])
    inc = np.diff(np.vstack([np.zeros(4, np.int64), cum]), axis=0)
    assert (inc >= 0).all() and (inc[:, 1] + inc[:, 3] <= spec.n).all()
    cfg = sim_config(case=CASE, honest=spec.honest, attackers=spec.attackers, seed=spec.seed,
                     n=spec.n, alpha=spec.alpha, max_rounds=spec.max_rounds)
    cells = sim.prepare_honest(cfg).cells
    xi = plan.honest_index[ids.index(x_id)]
    assert tuple(cum[-1]) == tuple(local_counts(cells[xi]))
    assert results[x_id]["queries_left"] == 0


# -- 3. only counts vectors, rounds and signatures leave a node ----------------------------------
def test_every_byte_a_node_sends_is_counts_rounds_and_signatures(tmp_path):
    """Audit of the platform server by 2 honest nodes and 1 attacker, with node X's every
    connection to its neighbours recorded, and the results sent to a collector."""
    collected: list[bytes] = []

    class Collector(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            collected.append(self.rfile.read(int(self.headers["content-length"])))
            self.send_response(204)
            self.end_headers()

        def log_message(self, *a: object) -> None:
            pass

    from fairprobe.access import BlackBox, HttpJsonBackend
    from fairprobe.datasets.queryset import adult_queryset
    from fairprobe.platform import PlatformProcess

    collector = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), Collector)
    threading.Thread(target=collector.serve_forever, daemon=True).start()
    proxy = RecordingProxy()
    plat = PlatformProcess()   # the audited model: the platform server over Adult records
    try:
        plat.__enter__()
        spec = DemoSpec(honest=2, attackers=1, seed=1, n=3000, round_timeout=60,
                        platform_url=plat.url, method="robust",
                        collector_url=f"http://127.0.0.1:{collector.server_address[1]}/results")
        with LocalNetwork(spec, tmp_path) as net:
            net.write()
            assert net.roster is not None
            plan = net.plan
            x = next(i for i, a in zip(plan.ids, plan.is_attacker, strict=True) if not a)
            x_port = net.roster.member(x).port
            real = free_port()
            # X listens on `real`; the roster address of X is a proxy recording X's replies
            proxy.add(x_port, real, "in")
            net.listen_override[x] = real
            from fairprobe.collab.net.config import load_node_config

            cfgp = net.procs[x].config
            import dataclasses

            dataclasses.replace(load_node_config(cfgp), listen=f"127.0.0.1:{real}").write(cfgp)
            # X reaches each neighbour through a proxy recording what X sends
            ports = {}
            for u in net.roster.member(x).neighbours:
                p = free_port()
                proxy.add(p, net.roster.member(u).port, "out")
                ports[u] = p
            net.override_peers(x, ports)
            net.start()
            results = net.wait(timeout=180)
        qs = adult_queryset("test")
        with BlackBox(HttpJsonBackend(url=plat.url)) as bb:
            dec = bb.query(qs.frame[list(qs.feature_cols)]).decisions
    finally:
        proxy.close()
        collector.shutdown()
        plat.__exit__(None, None, None)
    assert results[x]["rounds"] == plan.rounds
    # the final results went to the collector, signed by each node, and nowhere else
    got = {}
    for raw in collected:
        m = ResultMessage.model_validate_json(raw)
        body = b"fairprobe/collab/result/v1\x00" + m.result.model_dump_json().encode()
        assert net.roster.verifier(net.audit_id()).verify(m.result.id, body, base64.b64decode(m.sig))
        got[m.result.id] = m.result.estimate
    assert got == {k: v["estimate"] for k, v in results.items()}

    verifier = net.roster.verifier(net.audit_id())
    n_tables = 0
    out = proxy.records["out"].chunks
    allowed_req_headers = {"host", "accept", "accept-encoding", "connection", "user-agent",
                           "content-length", "content-type"}
    sent_by_x = b"".join(bytes(v) for (c, d), v in out.items() if d == "up")
    assert sent_by_x
    for (_, d), data in out.items():
        if d != "up":
            continue
        for start, headers, body in parse_http_stream(bytes(data)):
            assert start.startswith("POST /v1/table HTTP/1.1"), start
            assert set(headers) <= allowed_req_headers, headers
            msg = json.loads(body)
            assert set(msg) == {"sender", "receiver", "round", "entries", "sig"}
            assert msg["sender"] == x
            tm = TableMessage.model_validate(msg)
            assert verifier.verify(x, tm.envelope(), tm.signature)
            for e in msg["entries"]:
                assert set(e) == {"auditor", "round", "a", "A", "b", "B", "sig"}
                assert all(type(e[k]) is int for k in ("round", "a", "A", "b", "B"))
                assert verifier.verify_entry(e["auditor"], e["round"], e["a"], e["A"], e["b"],
                                             e["B"], base64.b64decode(e["sig"]))
            n_tables += 1
    deg = len(net.roster.member(x).neighbours)
    assert n_tables >= plan.rounds * deg
    # X's replies to its neighbours: status lines and empty bodies only
    for (_, d), data in proxy.records["in"].chunks.items():
        if d != "down":
            continue
        for start, headers, body in parse_http_stream(bytes(data)):
            assert start.startswith("HTTP/1.1 204"), start
            assert body == b""
            assert set(headers) <= {"date", "server"}, headers
    # and nothing of the queries: no record field or model answer appears anywhere
    everything = sent_by_x + b"".join(
        bytes(v) for (c, d), v in proxy.records["in"].chunks.items() if d == "down"
    )
    # (words of 5+ characters: a base64 signature may contain a short word by chance)
    for word in (b"query_id", b"decision", b"estimate", b"verdict", b"score",
                 b"hours-per-week", b"education", b"Female", b"instances", b"predictions"):
        assert word not in everything

    # the audit itself: every Adult record asked once, by one honest node, through the platform
    female = (qs.frame["sex"] == "Female").to_numpy()
    platform_dp = dec[female].mean() - dec[~female].mean()
    honest = [k for k, r in results.items() if r["role"] == "honest"]
    totals = np.sum([own_entries(tmp_path / "state" / f"{k}.sqlite")[plan.rounds][:4]
                     for k in honest], axis=0)
    assert (totals[1], totals[3]) == (female.sum(), (~female).sum())
    assert totals[0] / totals[1] - totals[2] / totals[3] == pytest.approx(platform_dp, abs=1e-12)
    for k in honest:  # one attacker pulls the defended estimate toward 0, not into the band
        assert platform_dp < results[k]["estimate"] < -0.05
        assert results[k]["missing_tables"] == 0

