"""Auditing the fairprobe platform server, run as a real process, through both network backends."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from fairprobe.access import Backoff, BlackBox, HttpJsonBackend, OpenAIChatBackend
from fairprobe.datasets.names import hash_uniform
from fairprobe.platform.core import record_key

FAST = Backoff(base=0.01, cap=0.05)
N = 120
M = 48  # records asked through the chat shape (one request each)


def chat_backend(url: str, **kw: Any) -> OpenAIChatBackend:
    return OpenAIChatBackend(
        base_url=url + "/v1", model="adult-logreg-v1", labels=[">50K", "<=50K"],
        positive_labels=[">50K"], **kw,
    )


@pytest.fixture(scope="module")
def reference(platform_url: str, make_records: Any) -> Any:
    recs = make_records(N, seed=7)
    with BlackBox(HttpJsonBackend(url=platform_url), concurrency=2) as bb:
        out = bb.query(recs)
        assert bb.spent == N and out.n_unparsed == 0
    return recs, out


def test_http_audit_api(reference: Any) -> None:
    _, out = reference
    assert set(np.unique(out.decisions)) == {0.0, 1.0}
    assert np.all((out.scores >= 0) & (out.scores <= 1))
    # the platform's logistic regression: score = sigmoid(logit), decision = score >= 1/2
    np.testing.assert_allclose(out.scores, 1 / (1 + np.exp(-out.logits)), rtol=1e-9)
    np.testing.assert_array_equal(out.decisions, out.scores >= 0.5)


def test_user_interface_same_shape(platform_url: str, make_records: Any) -> None:
    recs = [{k: v for k, v in r.items() if k != "sex"} | {"first_name": "Mary"}
            for r in make_records(10, seed=3)]
    be = HttpJsonBackend(url=platform_url, path="/user/predict")
    out = BlackBox(be).query(recs)
    assert len(out) == 10 and out.n_unparsed == 0


@pytest.mark.parametrize("structured", [False, True])
def test_chat_backend_agrees_with_the_audit_api(
    platform_url: str, reference: Any, structured: bool
) -> None:
    recs, ref = reference
    be = chat_backend(platform_url, structured_output=structured, logprobs=True, top_logprobs=2)
    with BlackBox(be, concurrency=4) as bb:
        out = bb.query(recs[:M])
        assert bb.spent == M and bb.unparsed == 0
    np.testing.assert_array_equal(out.decisions, ref.decisions[:M])
    # the server's label logprobs come from the model's score, so the derived score is it
    np.testing.assert_allclose(out.scores, ref.scores[:M], rtol=1e-9, atol=1e-12)


def test_injected_failures_are_retried_and_change_nothing(
    faulty_platform_url: str, reference: Any
) -> None:
    recs, ref = reference
    with BlackBox(HttpJsonBackend(url=faulty_platform_url, max_batch=8), retries=10,
                  backoff=FAST, concurrency=3) as bb:
        out = bb.query(recs)
        assert bb.retried > 0  # 30% of requests answered 429/503
        assert bb.spent == N
    np.testing.assert_array_equal(out.decisions, ref.decisions)
    np.testing.assert_allclose(out.scores, ref.scores)


def test_garbled_llm_answers_are_dropped_and_counted(
    faulty_platform_url: str, reference: Any
) -> None:
    recs, ref = reference
    recs, dec = recs[:M], ref.decisions[:M]
    # the server garbles the records with hash_uniform(key, seed=0, "garble") < 0.1
    garbled = np.array([hash_uniform(record_key(r), 0, "garble") < 0.1 for r in recs])
    assert 0 < garbled.sum() < M
    with BlackBox(chat_backend(faulty_platform_url), retries=10, backoff=FAST,
                  concurrency=4) as bb:
        out = bb.query(recs)
        assert bb.unparsed == garbled.sum() == out.n_unparsed
        assert bb.retried > 0 and bb.spent == M
    np.testing.assert_array_equal(~out.parsed, garbled)
    np.testing.assert_array_equal(out.decisions[~garbled], dec[~garbled])
