"""Model servers that lie, as a real process on 127.0.0.1 (tests/access/hostile_app.py).

Each test reproduces one way a server could turn garbage into a verdict, exhaust memory or time,
or leak a secret, and checks the one-line refusal (docs/threat-model.md, "Model servers").
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import free_port
from fairprobe.access import TransientAccessError
from fairprobe.access.http import HttpJsonBackend, parse_decision
from fairprobe.access.servers import KServeV1Backend, KServeV2Backend, MlflowBackend
from fairprobe.errors import AccessError, AnswerParseError

HERE = Path(__file__).resolve().parent
RECORDS = [{"x": v} for v in (1.0, -1.0, 2.0, -3.0)]
HONEST = [1, 0, 1, 0]


@pytest.fixture(scope="module")
def hostile(wait_for_http: Any, stop_proc: Any) -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(HERE / "hostile_app.py"), str(port)])
    try:
        url = f"http://127.0.0.1:{port}"
        wait_for_http(url + "/health", proc)
        yield url
    finally:
        stop_proc(proc)


def v2(url: str, model: str, **kw: Any) -> KServeV2Backend:
    return KServeV2Backend(url=url, model=model, decision_output="predict", **kw)


def decisions(backend: Any) -> list[int]:
    return [a.decision for a in backend.ask(RECORDS)]


# -- answers that do not match what was asked or declared ---------------------------------------

def test_v2_honest_server_is_read(hostile: str) -> None:
    assert decisions(v2(hostile, "honest")) == HONEST


@pytest.mark.parametrize(("model", "words"), [
    ("wronglen", "holds 8 values for 4 records"),
    ("dupnames", "returned output 'predict' twice"),
    ("wrongtype", "the model declares INT64"),
    ("badshape", "declares shape [4, 2] and holds 4 values"),
    ("othermodel", "not the model asked"),
])
def test_v2_answers_that_differ_from_the_request_are_refused(hostile: str, model: str,
                                                             words: str) -> None:
    with pytest.raises((AnswerParseError, AccessError)) as exc:
        v2(hostile, model).ask(RECORDS)
    assert words in str(exc.value)


def test_v2_model_swapped_mid_audit_is_detected(hostile: str) -> None:
    be = v2(hostile, "swap")
    assert decisions(be) == HONEST
    with pytest.raises(AccessError, match="the model changed during the audit"):
        be.ask(RECORDS)


def test_v2_version_other_than_asked_is_refused(hostile: str) -> None:
    be = v2(hostile, "honest", version="7")  # the server answers version 1
    with pytest.raises(AccessError, match="not the version asked"):
        be.ask(RECORDS)


def test_v1_model_swapped_mid_audit_is_detected(hostile: str) -> None:
    be = KServeV1Backend(url=hostile, model="swap")
    assert be.model_identity() is not None
    assert decisions(be) == HONEST
    with pytest.raises(AccessError, match="the model changed during the audit"):
        be.ask(RECORDS)


# -- null, NaN and garbage decisions are unusable, never negatives -------------------------------

@pytest.mark.parametrize("make", [
    lambda u: v2(u, "nulls", positive_values=[">50K"]),
    lambda u: KServeV1Backend(url=u, model="nulls", positive_values=[">50K"]),
    lambda u: MlflowBackend(url=u, path="/nulls/invocations", positive_values=[">50K"]),
])
def test_null_nan_garbage_decisions_are_unusable_with_positive_values_only(hostile: str,
                                                                           make: Any) -> None:
    with pytest.raises(AnswerParseError, match="answer 0: the decision is null"):
        make(hostile).ask(RECORDS)


@pytest.mark.parametrize("value", [None, float("nan"), float("inf"), 0.5, [1], {"a": 1}])
def test_one_decision_rule_with_positive_values_only(value: Any) -> None:
    with pytest.raises(AnswerParseError):
        parse_decision(value, [">50K"], None)
    assert parse_decision("<=50K", [">50K"], None) == 0
    assert parse_decision(">50K", [">50K"], None) == 1


@pytest.mark.parametrize("value", [" 1.0e0 ", "-0", "1", "0", float("nan"), 2, -1, None])
def test_text_and_odd_numbers_are_not_decisions(value: Any) -> None:
    with pytest.raises(AnswerParseError):
        parse_decision(value, None, None)
    assert parse_decision(-0.0, None, None) == 0 and parse_decision(True, None, None) == 1


# -- bounded bytes, a total deadline, rate-limit headers that cannot stall ------------------------

def hj(url: str, kind: str, **kw: Any) -> HttpJsonBackend:
    return HttpJsonBackend(url=url, path=f"/h/{kind}/predict", identity_path=None, **kw)


def test_a_large_body_is_refused(hostile: str) -> None:
    with pytest.raises(AnswerParseError, match="max_response_bytes_per_record"):
        hj(hostile, "big").ask(RECORDS)
    # the key raises the cap: 5 MB for 4 records is 1.25 MB each
    assert decisions(hj(hostile, "big", max_response_bytes_per_record=2_000_000)) == HONEST


def test_json_nested_too_deeply_is_an_unusable_answer(hostile: str) -> None:
    with pytest.raises(AnswerParseError, match="nested too deeply"):
        hj(hostile, "deep", max_response_bytes_per_record=1_000_000).ask(RECORDS)


def test_a_gzip_bomb_is_refused_without_expanding_it(hostile: str) -> None:
    import resource

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(AnswerParseError, match="answered more than"):
        hj(hostile, "gzipbomb").ask(RECORDS)
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grown_kib < 10_000  # 20 MB decompressed would show; the cap is 1.25 MB


def test_the_timeout_is_a_total_deadline_against_a_dripping_server(hostile: str) -> None:
    t0 = time.monotonic()
    with pytest.raises(TransientAccessError, match="timed out after 1 s"):
        hj(hostile, "drip", timeout=1.0).ask(RECORDS)
    assert time.monotonic() - t0 < 1.5  # each byte comes in 0.2 s: a per-read timeout never fires


def test_a_read_started_just_before_the_deadline_does_not_extend_it(hostile: str) -> None:
    # the first chunk comes at 0.8 s; a per-read timeout of 1 s would wait until 1.8 s
    t0 = time.monotonic()
    with pytest.raises(TransientAccessError, match="timed out after 1 s"):
        hj(hostile, "late", timeout=1.0).ask(RECORDS)
    assert time.monotonic() - t0 < 1.4
    # the abandoned exchange does not hold the client: the next request is answered at once
    be = hj(hostile, "ok", timeout=1.0)
    t1 = time.monotonic()
    assert decisions(be) == HONEST and time.monotonic() - t1 < 1.0


def test_an_exhausted_window_on_successes_does_not_stall_every_request(hostile: str) -> None:
    be = hj(hostile, "ratelimit", max_rate_limit_pause=0.5)
    t0 = time.monotonic()
    for _ in range(5):
        assert decisions(be) == HONEST
    assert time.monotonic() - t0 < 2.5  # one pause of 0.5 s at most, not 300 s per request
    assert be._transport.throttled_s <= 0.6


def test_a_redirect_with_a_json_body_is_not_an_answer(hostile: str) -> None:
    with pytest.raises(AccessError, match="HTTP 302 .*never follows"):
        hj(hostile, "redirect").ask(RECORDS)


# -- secrets ---------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["echo401", "echo429", "echodecision"])
def test_echoed_secrets_never_enter_an_error_line(hostile: str, kind: str,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FP_HOSTILE_TOKEN", "Bearer SECRET-TOKEN-4f1c9e")
    be = hj(hostile, kind, headers_env={"Authorization": "FP_HOSTILE_TOKEN"})
    with pytest.raises((AccessError, AnswerParseError)) as exc:
        be.ask(RECORDS)
    assert "SECRET-TOKEN" not in str(exc.value) and "***" in str(exc.value)


def test_url_credentials_and_their_basic_header_are_scrubbed(hostile: str) -> None:
    import base64

    url = hostile.replace("http://", "http://auditor:pa55-w0rd-xyz@")
    with pytest.raises(AccessError) as exc:
        hj(url, "echo401").ask(RECORDS)
    line = str(exc.value)
    assert "pa55-w0rd-xyz" not in line
    assert base64.b64encode(b"auditor:pa55-w0rd-xyz").decode() not in line
    assert "401" in line


def test_a_proxy_in_the_environment_is_not_used_for_loopback(hostile: str, free_port_url: str,
                                                             monkeypatch: pytest.MonkeyPatch
                                                             ) -> None:
    monkeypatch.setenv("HTTP_PROXY", free_port_url)  # nothing listens there
    monkeypatch.setenv("http_proxy", free_port_url)
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    assert decisions(hj(hostile, "ok")) == HONEST
    with pytest.raises(TransientAccessError):  # asked for: the (dead) proxy is used
        hj(hostile, "ok", proxy_loopback=True).ask(RECORDS)


@pytest.mark.parametrize("value", ["", " ", "NaN", "nan", "null", "N/A"])
def test_empty_and_nan_text_is_unparsed_never_negative(value: str) -> None:
    with pytest.raises(AnswerParseError, match="no label"):
        parse_decision(value, [">50K"], None)


def test_a_batch_matching_no_positive_value_is_refused_naming_the_key() -> None:
    from fairprobe.access.servers import KServeV2Config, _decisions
    from fairprobe.errors import ConfigError

    c = KServeV2Config(kind="kserve-v2", url="http://127.0.0.1:1", model="m",
                       positive_values=[">50K"])
    with pytest.raises(ConfigError, match="positive_values"):
        _decisions([">50k", "<=50k", "<=50k"], c, "m")
    assert _decisions([">50K", "<=50K"], c, "m").tolist() == [1, 0]
    declared = KServeV2Config(kind="kserve-v2", url="http://127.0.0.1:1", model="m",
                              positive_values=[">50K"], negative_values=["<=50K"])
    assert _decisions(["<=50K", "<=50K"], declared, "m").tolist() == [0, 0]
