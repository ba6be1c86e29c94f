"""OpenAI-compatible shape, model files, garbled answers and fault injection, on live servers."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import joblib
import numpy as np
import pytest

from fairprobe.datasets.adult import load_adult
from fairprobe.platform.core import EXAMPLE_AUDIT_RECORD, EXAMPLE_USER_RECORD
from fairprobe.platform.llm import GARBLED_REPLY, LABELS, fill_prompt
from fairprobe.platform.model import AUDIT_FEATURES
from fairprobe.platform.process import PlatformProcess

_CLIENT = httpx.Client(trust_env=False)


def _model_file(path: Path) -> Path:
    """A different model than the default: unweighted logistic regression on 3 features + sex."""
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    df = load_adult("train", names_seed=None).iloc[:5000]
    pre = ColumnTransformer(
        [("n", StandardScaler(), ["age", "education-num", "hours-per-week"]),
         ("c", OneHotEncoder(handle_unknown="ignore"), ["sex"])]
    )  # fmt: skip
    pipe = make_pipeline(pre, LogisticRegression(max_iter=500)).fit(df, df["income"])
    joblib.dump(pipe, path)
    return path


@pytest.fixture(scope="module")
def llm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PlatformProcess]:
    path = _model_file(tmp_path_factory.mktemp("model") / "m.joblib")
    with PlatformProcess(model_file=path, allow_pickle=True, llm_garble_rate=0.25, seed=3) as p:
        yield p


def _model_id(url: str) -> str:
    return str(_CLIENT.get(url + "/v1/models").json()["data"][0]["id"])


def _chat(url: str, record: dict, **extra: object) -> dict:
    body = {
        "model": _model_id(url),
        "messages": [
            {"role": "system", "content": "You classify census records. {not json"},
            {"role": "user", "content": fill_prompt(record)},
        ],
        "temperature": 0,
    } | extra
    r = _CLIENT.post(url + "/v1/chat/completions", json=body, timeout=30)
    assert r.status_code == 200, r.text
    return r.json()


def _records(n: int) -> list[dict]:
    df = load_adult("test", names_seed=2).drop_duplicates(subset=list(AUDIT_FEATURES))
    return df[list(AUDIT_FEATURES)].iloc[:n].to_dict("records")


def test_model_file_is_served(llm: PlatformProcess) -> None:
    h = httpx.get(llm.url + "/health").json()
    assert h["model"].startswith("file:m.joblib:")
    models = httpx.get(llm.url + "/v1/models").json()
    assert models["object"] == "list" and models["data"][0]["id"] == h["model"]


def test_chat_answers_match_the_audit_api(llm: PlatformProcess) -> None:
    recs = _records(60)
    audit = httpx.post(llm.url + "/audit/predict", json={"instances": recs}).json()["predictions"]
    contents = [_chat(llm.url, rec)["choices"][0]["message"]["content"] for rec in recs]
    for content, a in zip(contents, audit, strict=True):
        if content != GARBLED_REPLY:
            assert content == (">50K" if a["decision"] == 1 else "<=50K")
    # the garbled share is seeded per record (about 25%): a second pass garbles the same ones
    garbled = sum(c == GARBLED_REPLY for c in contents)
    assert 0.08 < garbled / len(recs) < 0.45
    again = [_chat(llm.url, rec)["choices"][0]["message"]["content"] for rec in recs[:25]]
    assert again == contents[:25]


def test_json_schema_and_logprobs(llm: PlatformProcess) -> None:
    rec = _records(30)
    fmt = {"type": "json_schema", "json_schema": {"name": "x", "schema": {}}}
    for r in rec:
        out = _chat(llm.url, r, response_format=fmt, logprobs=True, top_logprobs=2)
        content = out["choices"][0]["message"]["content"]
        if content == GARBLED_REPLY:
            assert out["choices"][0]["logprobs"] is None
            continue
        label = json.loads(content)["label"]
        assert label in LABELS
        toks = out["choices"][0]["logprobs"]["content"]
        assert "".join(t["token"] for t in toks) == content.replace(": ", ": ")
        top = {t["token"]: t["logprob"] for t in toks[1]["top_logprobs"]}
        assert set(top) == set(LABELS)
        assert np.exp(top[">50K"]) + np.exp(top["<=50K"]) == pytest.approx(1.0)
        assert max(top, key=lambda k: top[k]) == label


def test_temperature_sampling_is_seeded(llm: PlatformProcess) -> None:
    rec = EXAMPLE_AUDIT_RECORD | {"age": 45, "education-num": 12}
    a = [_chat(llm.url, rec, temperature=1.0, seed=s)["choices"][0]["message"]["content"]
         for s in range(12)]  # fmt: skip
    b = [_chat(llm.url, rec, temperature=1.0, seed=s)["choices"][0]["message"]["content"]
         for s in range(12)]  # fmt: skip
    assert a == b


def test_user_records_go_through_the_user_interface(llm: PlatformProcess) -> None:
    out = _chat(llm.url, EXAMPLE_USER_RECORD, logprobs=True, top_logprobs=1)
    user = httpx.post(llm.url + "/user/predict", json={"instances": [EXAMPLE_USER_RECORD]})
    d = user.json()["predictions"][0]["decision"]
    content = out["choices"][0]["message"]["content"]
    assert content in (GARBLED_REPLY, ">50K" if d else "<=50K")


@pytest.mark.parametrize(
    ("body", "match"),
    [
        ({"messages": []}, "non-empty"),
        ({"messages": [{"role": "system", "content": "{}"}]}, "no message with role 'user'"),
        ({"messages": [{"role": "user", "content": "no record here"}]}, "no JSON object"),
        ({"messages": [{"role": "user", "content": "{\"age\": 3}"}]}, "lacks feature"),
        ({"messages": [{"role": "user", "content": json.dumps(EXAMPLE_AUDIT_RECORD)}],
          "temperature": 5}, "temperature"),
        ({"messages": [{"role": "user", "content": json.dumps(EXAMPLE_AUDIT_RECORD)}],
          "response_format": {"type": "xml"}}, "response_format"),
        ({"messages": [{"role": "user", "content": [{"type": "text", "text": 5}]}]},
         "string 'text'"),
        ({"messages": [{"role": "user", "content": json.dumps(EXAMPLE_AUDIT_RECORD)}],
          "top_logprobs": 2}, "requires 'logprobs'"),
        ({"messages": [{"role": "user", "content": json.dumps(EXAMPLE_AUDIT_RECORD)}],
          "n": 0}, "'n' must be"),
    ],
)  # fmt: skip
def test_bad_chat_bodies(llm: PlatformProcess, body: dict, match: str) -> None:
    r = httpx.post(llm.url + "/v1/chat/completions", json={"model": _model_id(llm.url)} | body)
    assert r.status_code == 400, r.text
    err = r.json()["error"]
    assert match in err["message"] and err["type"] == "invalid_request_error"


def test_fault_injection() -> None:
    with PlatformProcess(fail_rate=0.5, delay_ms=100, seed=1) as p, httpx.Client() as c:
        codes = []
        t0 = time.perf_counter()
        for _ in range(24):
            r = c.post(p.url + "/audit/predict", json={"instances": [EXAMPLE_AUDIT_RECORD]})
            codes.append(r.status_code)
            if r.status_code == 429:
                assert r.headers["retry-after"] == "0"
        elapsed = time.perf_counter() - t0
        assert elapsed >= 24 * 0.1
        assert set(codes) == {200, 429, 503}
        assert 4 <= codes.count(200) <= 20
        # health is never failed, so launchers and clients can always probe it
        assert all(c.get(p.url + "/health").status_code == 200 for _ in range(10))
        proc = p.proc
    assert proc is not None and proc.poll() is not None  # terminated on exit
