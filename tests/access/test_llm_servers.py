"""OpenAIChatBackend against recorded response shapes of OpenAI, vLLM and Ollama.

The shapes (tests/access/fixtures/llm_shapes.json) are written from the servers' public API
documentation. A real HTTP server on 127.0.0.1 serves them (keyed by the requested model name) and
records every request, so the tests check both what the backend sends and how it reads answers.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from fairprobe.access import BlackBox, OpenAIChatBackend
from fairprobe.access.retry import RateLimitedError
from fairprobe.errors import AccessError

SHAPES = json.loads((Path(__file__).parent / "fixtures" / "llm_shapes.json").read_text())
INCOME = [">50K", "<=50K"]
RECORD = {"age": 52, "occupation": "Exec-managerial", "hours-per-week": 50}


class _Server:
    def __init__(self) -> None:
        self.requests: list[tuple[float, str, dict[str, Any]]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                n = int(self.headers.get("content-length", 0))
                body = json.loads(self.rfile.read(n) or b"{}")
                server.requests.append((time.monotonic(), self.path, body))
                if not self.path.startswith("/v1/"):
                    self._send(404, {}, b"404 page not found", "text/plain")  # as Ollama
                    return
                shape = SHAPES.get(body.get("model"))
                if shape is None:
                    self._send(404, {}, json.dumps(SHAPES["openai/unknown"]["body"]).encode())
                    return
                data = json.dumps(shape["body"]).encode()
                self._send(shape["status"], shape["headers"], data)

            def _send(self, status: int, headers: dict[str, str], data: bytes,
                      ctype: str = "application/json") -> None:
                self.send_response(status)
                self.send_header("content-type", ctype)
                self.send_header("content-length", str(len(data)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture(scope="module")
def server() -> Iterator[_Server]:
    s = _Server()
    try:
        yield s
    finally:
        s.close()


def backend(server: _Server, model: str, **kw: Any) -> OpenAIChatBackend:
    return OpenAIChatBackend(base_url=server.url + "/v1", model=model, labels=INCOME,
                             positive_labels=[">50K"], **kw)


def ask(server: _Server, model: str, **kw: Any) -> Any:
    be = backend(server, model, **kw)
    try:
        return be.ask([RECORD])[0], be
    finally:
        be.close()


def last_body(server: _Server) -> dict[str, Any]:
    return server.requests[-1][2]


def test_openai_answer_logprobs_over_three_tokens_and_usage(server: _Server) -> None:
    a, be = ask(server, "openai/gpt-4o-mini", logprobs=True, top_logprobs=2)
    assert (a.decision, a.outcome) == (0, "ok")
    # "<=" then "50" "K": the positive side is the alternative ">" at the first token
    assert a.score == pytest.approx(0.2 / (0.2 + 0.8), rel=1e-3)
    assert be.usage == {"requests": 1, "prompt_tokens": 61, "completion_tokens": 3,
                        "reasoning_tokens": 0}
    body = last_body(server)
    assert body["logprobs"] is True and body["top_logprobs"] == 2
    assert {"temperature", "seed", "max_tokens"} <= set(body)


def test_only_the_configured_parameters_are_sent(server: _Server) -> None:
    ask(server, "openai/gpt-4o-mini", max_completion_tokens=512, omit=["temperature", "seed"])
    body = last_body(server)
    assert set(body) == {"model", "messages", "max_completion_tokens"}
    assert body["max_completion_tokens"] == 512
    ask(server, "openai/gpt-4o-mini", top_p=0.5, extra_body={"reasoning_effort": "low"})
    body = last_body(server)
    assert set(body) == {"model", "messages", "temperature", "seed", "max_tokens", "top_p",
                         "reasoning_effort"}


def test_reasoning_api_rejecting_max_tokens_names_the_fix(server: _Server) -> None:
    with pytest.raises(AccessError, match="HTTP 400: Unsupported parameter: 'max_tokens'"):
        ask(server, "openai/o4-mini-max-tokens")


def test_openai_refusal_field_and_truncation(server: _Server) -> None:
    a, be = ask(server, "openai/o4-mini-refusal", max_completion_tokens=256, omit=["temperature"])
    assert (a.decision, a.outcome) == (None, "refused")
    assert a.raw == "I'm sorry, I cannot assist with that request."
    assert be.usage["reasoning_tokens"] == 128
    a, _ = ask(server, "openai/o4-mini-length", max_completion_tokens=64)
    assert (a.decision, a.outcome) == (None, "truncated")


def test_vllm_reasoning_content_and_think_block(server: _Server) -> None:
    a, _ = ask(server, "vllm/DeepSeek-R1-Distill-Qwen-1.5B")
    assert (a.decision, a.outcome) == (1, "ok")  # the reasoning names both labels: not used
    a, _ = ask(server, "vllm/qwen3-think-in-content")
    assert (a.decision, a.outcome) == (0, "ok")
    # without stripping the block, both labels occur: unparsed, as before this fix
    a, _ = ask(server, "vllm/qwen3-think-in-content", strip_reasoning=False)
    assert (a.decision, a.outcome) == (None, "unparsed")
    a, _ = ask(server, "vllm/reasoning-field-length")
    assert (a.decision, a.outcome) == (None, "truncated")


def test_ollama_prose_fenced_json_reasoning_field_and_text_refusal(server: _Server) -> None:
    assert ask(server, "ollama/llama3.2")[0].decision == 1
    assert ask(server, "ollama/llama3.2", parser="exact")[0].outcome == "unparsed"
    assert ask(server, "ollama/llama3.2-json")[0].decision == 0
    assert ask(server, "ollama/gpt-oss:20b")[0].decision == 0
    a, _ = ask(server, "ollama/refuses-in-text")
    assert a.outcome == "refused"
    a, _ = ask(server, "ollama/refuses-in-text", refusal_patterns=[])
    assert a.outcome == "unparsed"


@pytest.mark.parametrize(
    ("model", "message"),
    [
        ("openai/unknown", "The model `gpt-unknown` does not exist or you do not have access"),
        ("vllm/unknown", "The model `foo` does not exist."),
        ("ollama/unknown", 'model "llama9" not found, try pulling it first'),
    ],
)
def test_unknown_model_errors_show_the_server_message(
    server: _Server, model: str, message: str
) -> None:
    with pytest.raises(AccessError, match="HTTP 404: " + re.escape(message)) as exc:
        ask(server, model)
    assert "/v1" not in str(exc.value).split("HTTP 404")[1]  # no base-URL hint: it has /v1


def test_base_url_without_v1_gets_a_hint(server: _Server) -> None:
    be = OpenAIChatBackend(base_url=server.url, model="ollama/llama3.2", labels=INCOME,
                           positive_labels=[">50K"])
    with pytest.raises(AccessError, match=r"404.*try base_url = \"http://127\.0\.0\.1:\d+/v1\""):
        be.ask([RECORD])
    be.close()


def test_429_waits_for_the_exhausted_window(server: _Server) -> None:
    be = backend(server, "openai/rate-limited")
    with pytest.raises(RateLimitedError) as exc:
        be.ask([RECORD])
    # no Retry-After: the requests window is exhausted and resets in 1 s (the tokens one is not)
    assert exc.value.retry_after == pytest.approx(1.0)
    assert "Rate limit reached for requests" in str(exc.value)
    be.close()


def test_an_exhausted_window_delays_the_next_request(server: _Server) -> None:
    be = backend(server, "openai/window-exhausted")
    n0 = len(server.requests)
    with BlackBox(be, concurrency=1) as bb:
        out = bb.query([RECORD, {**RECORD, "age": 53}])
    assert out.decisions.tolist() == [1.0, 1.0]
    (t1, _, _), (t2, _, _) = server.requests[n0:n0 + 2]
    assert t2 - t1 >= 0.35  # x-ratelimit-reset-requests: 400ms after remaining-requests 0
    assert be._transport.throttled_s > 0.3
