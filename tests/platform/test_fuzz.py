"""Bounded fuzzing of the platform server from its own OpenAPI schema (schemathesis)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx
import pytest

schemathesis = pytest.importorskip("schemathesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402

from fairprobe.platform.process import PlatformProcess  # noqa: E402

#: Examples per operation; the whole test stays under about 20 s on a busy 2-core machine.
EXAMPLES = 15


@pytest.fixture(scope="module")
def plat() -> Iterator[PlatformProcess]:
    with PlatformProcess(seed=5, llm_reasoning="field", llm_refuse_rate=0.2) as p:
        yield p


def test_generated_requests_never_get_a_5xx(plat: PlatformProcess) -> None:
    schema = schemathesis.openapi.from_url(plat.url + "/openapi.json")
    ops = [r.ok() for r in schema.get_all_operations()]
    paths = {op.path for op in ops}
    assert {"/audit/predict", "/user/predict", "/v1/chat/completions", "/v1/models"} <= paths
    seen: dict[str, set[int]] = {}
    t_end = time.monotonic() + 15.0  # a hard bound, whatever hypothesis decides

    for op in ops:

        @settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=True,
                  suppress_health_check=list(HealthCheck))
        @given(case=op.as_strategy())
        def run(case: schemathesis.Case) -> None:
            if time.monotonic() > t_end:
                return
            resp = case.call(base_url=plat.url, timeout=30)
            seen.setdefault(f"{case.method.upper()} {case.path}", set()).add(resp.status_code)
            assert resp.status_code < 500, (case.path, case.body, resp.text[:300])
            if resp.status_code >= 400 and case.path.startswith("/v1/"):
                assert "error" in resp.json(), (case.path, case.path_parameters, resp.status_code, resp.text[:200])
                err = resp.json()["error"]
                assert set(err) == {"message", "type", "param", "code"}
            assert "Traceback" not in resp.text

        run()
    for path in ("/v1/models/", "/v1/nothing", "/v1/chat/completions"):
        r = httpx.get(plat.url + path)  # unknown paths and wrong methods: OpenAI's shape too
        assert r.status_code in (404, 405) and "message" in r.json()["error"], (path, r.text)
    # the generator reached the handlers, not only the routing layer: the schema says exactly
    # what is answered, so generated (schema-valid) chats are answered
    assert 200 in seen["POST /v1/chat/completions"], seen
