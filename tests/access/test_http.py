"""HttpJsonBackend against a real throwaway uvicorn process (tests/access/flaky_app.py)."""

from __future__ import annotations

import math
import uuid

import httpx
import numpy as np
import pytest

from fairprobe.access import Backoff, BlackBox, HttpJsonBackend
from fairprobe.errors import AccessError, AnswerParseError, EndpointUnreachableError

FAST = Backoff(base=0.01, cap=0.05)


def recs(n: int) -> list[dict[str, float]]:
    return [{"x": float(x)} for x in np.linspace(-2, 2, n)]


def served(url: str, path: str) -> int:
    return int(httpx.get(f"{url}/count{path}").json()["count"])


def test_batches_and_answers(flaky_url: str) -> None:
    be = HttpJsonBackend(url=flaky_url, path="/ok/predict", max_batch=4)
    before = served(flaky_url, "/ok/predict")
    with BlackBox(be, concurrency=3) as bb:
        out = bb.query(recs(10))
    xs = np.linspace(-2, 2, 10)
    np.testing.assert_array_equal(out.decisions, xs > 0)
    np.testing.assert_allclose(out.scores, 1 / (1 + np.exp(-xs)))
    np.testing.assert_allclose(out.logits, xs)
    assert served(flaky_url, "/ok/predict") - before == 3  # ceil(10 / 4) requests


@pytest.mark.parametrize("status", [429, 500, 502, 503, 504])
def test_transient_statuses_are_retried(flaky_url: str, status: int) -> None:
    path = f"/fail/2/{status}/{uuid.uuid4().hex}/predict"
    bb = BlackBox(HttpJsonBackend(url=flaky_url, path=path), retries=3, backoff=FAST)
    out = bb.query(recs(3))
    np.testing.assert_array_equal(out.decisions, [0, 0, 1])
    assert served(flaky_url, path) == 3 and bb.retried == 2 and bb.spent == 3


def test_still_failing_status_names_url_status_body_and_fields(flaky_url: str) -> None:
    """An endpoint that answers an error status is reachable: the error says what it answered
    (never "unreachable"), how often, and what was sent."""
    from fairprobe.errors import EndpointStatusError

    path = f"/fail/100/503/{uuid.uuid4().hex}/predict"
    bb = BlackBox(HttpJsonBackend(url=flaky_url, path=path), retries=2, backoff=FAST)
    with pytest.raises(EndpointStatusError) as e:
        bb.query(recs(2))
    msg = str(e.value)
    assert "\n" not in msg and f"{flaky_url}{path}" in msg and "unreachable" not in msg
    assert "on each of 3 attempts" in msg and "HTTP 503: injected" in msg
    assert "the request sent the fields x (--feature-cols chooses them)" in msg
    assert served(flaky_url, path) == 3
    assert e.value.exit_code == 3


def test_connection_refused(free_port_url: str) -> None:
    bb = BlackBox(HttpJsonBackend(url=free_port_url), retries=1, backoff=FAST)
    with pytest.raises(EndpointUnreachableError, match="connection refused") as e:
        bb.query(recs(1))
    assert f"{free_port_url}/audit/predict" in str(e.value)


def test_timeouts_are_retried_then_reported(flaky_url: str) -> None:
    be = HttpJsonBackend(url=flaky_url, path="/slow/2000/predict")
    bb = BlackBox(be, timeout=0.2, retries=1, backoff=FAST)
    with pytest.raises(EndpointUnreachableError, match="timed out after 0.2 s"):
        bb.query(recs(1))


def test_client_errors_are_not_retried(flaky_url: str) -> None:
    bb = BlackBox(HttpJsonBackend(url=flaky_url, path="/bad/400/predict"), backoff=FAST)
    before = served(flaky_url, "/bad/400/predict")
    with pytest.raises(AccessError, match="HTTP 400") as e:
        bb.query(recs(1))
    assert not isinstance(e.value, EndpointUnreachableError)
    assert served(flaky_url, "/bad/400/predict") - before == 1


@pytest.mark.parametrize(
    "kind, match",
    [
        ("missing", "answer 0: field 'decision' is missing"),
        ("nan", "answer 0: the decision is NaN"),
        ("string", "answer 0: decision 'yes' \\(str\\) is not 0 or 1"),
        ("two", "answer 0: decision 2 \\(int\\) is not 0 or 1"),
        ("score", "answer 0: score 1.5 is not a finite number in \\[0, 1\\]"),
        ("length", "returned 1 answers for 2 instances"),
        ("nokey", "answered without 'predictions'"),
        ("notjson", "body that is not JSON"),
    ],
)
def test_malformed_answers(flaky_url: str, kind: str, match: str) -> None:
    bb = BlackBox(HttpJsonBackend(url=flaky_url, path=f"/bad/{kind}/predict"))
    with pytest.raises(AnswerParseError, match=match) as e:
        bb.query(recs(2))
    assert "\n" not in str(e.value)


def test_malformed_answers_can_be_dropped(flaky_url: str) -> None:
    be = HttpJsonBackend(url=flaky_url, path="/bad/missing/predict", on_malformed="drop")
    bb = BlackBox(be)
    out = bb.query(recs(3))
    assert np.isnan(out.decisions[0]) and list(out.decisions[1:]) == [0, 1]
    assert bb.unparsed == 1


def test_string_labels(flaky_url: str) -> None:
    be = HttpJsonBackend(
        url=flaky_url, path="/bad/labels/predict", decision_field="label",
        score_field=None, logit_field=None, positive_values=[">50K"], negative_values=["<=50K"],
    )
    out = BlackBox(be).query(recs(4))
    np.testing.assert_array_equal(out.decisions, [0, 0, 1, 1])
    assert np.isnan(out.scores).all()


def test_score_only_with_threshold_and_dotted_path(flaky_url: str) -> None:
    be = HttpJsonBackend(
        url=flaky_url, path="/bad/nested/predict", answers_path="output.results",
        decision_field=None, score_field="p", logit_field=None, threshold=0.6,
    )
    xs = np.linspace(-2, 2, 5)
    out = BlackBox(be).query(recs(5))
    p = 1 / (1 + np.exp(-xs))
    np.testing.assert_array_equal(out.decisions, p >= 0.6)
    np.testing.assert_allclose(out.scores, p)


def test_identity_ignores_transport_settings_but_not_the_endpoint() -> None:
    a = HttpJsonBackend(url="http://127.0.0.1:1", headers={"X-Trace": "1"}, timeout=5)
    b = HttpJsonBackend(url="http://127.0.0.1:1/", max_batch=8)
    c = HttpJsonBackend(url="http://127.0.0.1:1", path="/user/predict")
    d = HttpJsonBackend(url="http://127.0.0.1:1", model="v2")
    assert a.identity == b.identity
    assert len({a.identity, c.identity, d.identity}) == 3
    assert a.identity.startswith("http-json:POST http://127.0.0.1:1/audit/predict#")


def test_secret_headers_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAIRPROBE_TEST_TOKEN", "s3cret")
    be = HttpJsonBackend(url="http://127.0.0.1:1", headers_env={"Authorization": "FAIRPROBE_TEST_TOKEN"})
    assert "s3cret" not in be.identity
    assert be._transport.client().headers["Authorization"] == "s3cret"
    be.close()
    assert math.isfinite(be.timeout)


def test_cache_name_replaces_the_url_in_the_identity() -> None:
    a = HttpJsonBackend(url="http://127.0.0.1:1", cache_name="platform-prod")
    b = HttpJsonBackend(url="http://127.0.0.1:2", cache_name="platform-prod")
    c = HttpJsonBackend(url="http://127.0.0.1:2", cache_name="platform-prod", path="/user/predict")
    assert a.identity == b.identity != c.identity
    assert "127.0.0.1" not in a.identity


def test_a_v2_config_at_a_server_without_v2_says_so_at_once(flaky_url: str) -> None:
    from fairprobe.access import load_backend
    from fairprobe.errors import AccessError, ConfigError

    bb = BlackBox(load_backend({"kind": "kserve-v2", "url": flaky_url, "model": "m"}),
                  retries=5, backoff=FAST)
    with pytest.raises(AccessError, match="no Open Inference Protocol v2 server at .*config key "
                                          "url") as e:
        bb.query(recs(1))
    assert not isinstance(e.value, EndpointUnreachableError)
    with pytest.raises(ConfigError, match=f"without '/v2': url = '{flaky_url}'"):
        load_backend({"kind": "kserve-v2", "url": flaky_url + "/v2", "model": "m"})
