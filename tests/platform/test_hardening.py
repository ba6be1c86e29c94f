"""Hostile requests never freeze, crash or leak from the platform server."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import httpx
import pytest

from fairprobe.platform.process import PlatformProcess

LIMIT = 2 * 1024 * 1024


@pytest.fixture(scope="module")
def plat() -> Iterator[PlatformProcess]:
    with PlatformProcess(seed=2, extra_args=[
        "--max-body-bytes", str(LIMIT), "--header-timeout", "1", "--body-timeout", "1",
    ]) as p:
        yield p


def model_id(p: PlatformProcess) -> str:
    return str(httpx.get(p.url + "/v1/models").json()["data"][0]["id"])


@pytest.mark.parametrize(
    "content",
    [
        "{" * 1_000_000,  # was O(n^2): about 5 minutes with every endpoint stalled
        '{"a":' * 50_000 + "1" + "}" * 50_000,  # was a RecursionError (500)
        "{" * 100_000 + '{"x": "}' * 20_000,
    ],
    ids=["open-braces", "deep-nesting", "braces-in-strings"],
)
def test_health_answers_while_a_hostile_chat_body_is_processed(
    plat: PlatformProcess, content: str
) -> None:
    body = {"model": model_id(plat), "messages": [{"role": "user", "content": content}]}
    result: dict[str, object] = {}

    def post() -> None:
        t0 = time.perf_counter()
        r = httpx.post(plat.url + "/v1/chat/completions", json=body, timeout=120)
        result["status"], result["json"] = r.status_code, r.json()
        result["seconds"] = time.perf_counter() - t0

    th = threading.Thread(target=post)
    th.start()
    worst = 0.0
    with httpx.Client(timeout=10) as c:
        while th.is_alive():
            t0 = time.perf_counter()
            assert c.get(plat.url + "/health").status_code == 200
            worst = max(worst, time.perf_counter() - t0)
            time.sleep(0.02)
    th.join()
    assert result["status"] == 400, result
    assert "no JSON object" in str(result["json"])
    # generous bounds for a shared 2-core machine; the old code took minutes
    assert worst < 2.0 and float(str(result["seconds"])) < 30.0


def test_a_record_after_a_stray_brace_is_still_found(plat: PlatformProcess) -> None:
    content = 'Use { and } carefully. Person: {"age": 39, "workclass": "State-gov"'
    r = httpx.post(plat.url + "/v1/chat/completions", json={
        "model": model_id(plat),
        "messages": [{"role": "user", "content": "Note {x: Person {'a'}. " +
                      httpx.get(plat.url + "/schema").json()["llm"]["example"]}]})
    assert r.status_code == 200, r.text
    r = httpx.post(plat.url + "/v1/chat/completions", json={
        "model": model_id(plat), "messages": [{"role": "user", "content": content}]})
    assert r.status_code == 400  # the record never closes: no object, a 400 and not a hang


def test_chunked_body_over_the_limit_is_413(plat: PlatformProcess) -> None:
    small = plat

    def chunks() -> Iterator[bytes]:
        yield b'{"instances": ['
        for _ in range(LIMIT // 1000 + 50):
            yield b'{"age": 39, "pad": "' + b"x" * 1000 + b'"},'
        yield b"{}]}"

    for path in ("/audit/predict", "/v1/chat/completions"):
        r = httpx.post(small.url + path, content=chunks(),
                       headers={"content-type": "application/json"})
        assert r.status_code == 413, (path, r.status_code, r.text)
        assert f"above {LIMIT} bytes" in r.text
        if path.startswith("/v1"):
            assert r.json()["error"]["type"] == "invalid_request_error"
    assert httpx.get(small.url + "/health").status_code == 200


def _raw(p: PlatformProcess) -> socket.socket:
    host, port = p.url.removeprefix("http://").rsplit(":", 1)
    s = socket.create_connection((host, int(port)), timeout=10)
    return s


def test_slow_headers_are_dropped(plat: PlatformProcess) -> None:
    s = _raw(plat)
    try:
        s.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # headers never finish
        t0 = time.perf_counter()
        data = s.recv(1024)
        assert data == b""  # closed by the server
        assert 0.5 < time.perf_counter() - t0 < 8.0
    finally:
        s.close()


def test_slow_body_gets_408(plat: PlatformProcess) -> None:
    s = _raw(plat)
    try:
        s.sendall(b"POST /audit/predict HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                  b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"inst")
        t0 = time.perf_counter()
        data = b""
        while b"\r\n\r\n" not in data:
            part = s.recv(4096)
            if not part:
                break
            data += part
        assert data.startswith(b"HTTP/1.1 408"), data[:80]
        assert 0.5 < time.perf_counter() - t0 < 8.0
    finally:
        s.close()
    assert httpx.get(plat.url + "/health").status_code == 200


def test_trickled_body_gets_408_at_the_whole_body_deadline(plat: PlatformProcess) -> None:
    """One byte every 0.4 s never stalls 1 s between chunks, but the whole body has 1 s."""
    s = _raw(plat)
    s.settimeout(0.05)
    try:
        s.sendall(b"POST /audit/predict HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                  b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
        t0 = time.perf_counter()
        data = b""
        while b"\r\n\r\n" not in data and time.perf_counter() - t0 < 8.0:
            try:
                s.sendall(b" ")
            except OSError:
                pass
            try:
                part = s.recv(4096)
                if not part:
                    break
                data += part
            except TimeoutError:
                time.sleep(0.35)
        assert data.startswith(b"HTTP/1.1 408"), data[:80]
        assert time.perf_counter() - t0 < 4.0
    finally:
        s.close()
    assert httpx.get(plat.url + "/health").status_code == 200


def test_a_500_never_echoes_the_exception() -> None:
    from starlette.testclient import TestClient

    from fairprobe.platform.model import PlatformModel
    from fairprobe.platform.server import ServerConfig, create_app

    guard = create_app(ServerConfig(), PlatformModel.default())
    app = guard.app

    @app.get("/boom")
    async def boom() -> None:
        raise RuntimeError("secret-in-exception-text sk-123")

    @app.get("/v1/boom")
    async def boom_v1() -> None:
        raise KeyError("secret-in-exception-text")

    with TestClient(guard, raise_server_exceptions=False) as c:
        r = c.get("/boom")
        assert r.status_code == 500 and r.json() == {"detail": "Internal server error."}
        r = c.get("/v1/boom")
        assert r.status_code == 500
        assert r.json()["error"]["message"] == "Internal server error."
        assert "secret" not in r.text


@pytest.mark.parametrize(
    ("content", "record"),
    [
        ('Details {Person: {"age": 3}}', {"age": 3}),  # prose braces around the record
        ('Use { and } with care. {"age": 4}', {"age": 4}),  # a stray brace before it
        ("{ " * 10 + '{"age": 5}', {"age": 5}),  # many unclosed braces before it
        ("{x} " * 250_000 + '{"age": 6}', {"age": 6}),  # a million characters of prose braces
        ('x {"a": "b}\\"{", "age": 7} y', {"a": 'b}"{', "age": 7}),  # braces inside strings
    ],
)
def test_record_extraction_finds_the_record(content: str, record: dict) -> None:
    from fairprobe.platform.llm import extract_record

    assert extract_record([{"role": "user", "content": content}]) == record


def test_a_client_leaving_mid_body_logs_no_traceback(tmp_path) -> None:
    """A client that closes its connection before its declared body ends is not a server fault:
    the platform logs no traceback and keeps serving."""
    import socket
    import subprocess
    import sys
    import time

    import httpx

    from conftest import free_port

    port = free_port()
    log = tmp_path / "server.log"
    with open(log, "wb") as fh:
        proc = subprocess.Popen([sys.executable, "-m", "fairprobe", "platform", "serve", "--port",
                                 str(port)], stdout=fh, stderr=subprocess.STDOUT)
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(url + "/health", timeout=1.0)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline and proc.poll() is None, log.read_text()
                time.sleep(0.2)
        for _ in range(3):
            s = socket.create_connection(("127.0.0.1", port))
            s.sendall(b"POST /audit/predict HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
                      b"\r\nContent-Length: 1000\r\n\r\n{\"instances\": [")
            s.close()
        time.sleep(0.5)
        assert httpx.get(url + "/health", timeout=5.0).status_code == 200
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    text = log.read_text()
    assert "Traceback" not in text and "Exception in ASGI" not in text, text
