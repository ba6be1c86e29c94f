"""The platform's OpenAI-compatible endpoint driven by the official ``openai`` client."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import openai
import pytest

from fairprobe.platform.core import EXAMPLE_AUDIT_RECORD
from fairprobe.platform.llm import LABELS, REFUSAL_REPLY, fill_prompt
from fairprobe.platform.process import PlatformProcess


@pytest.fixture(scope="module")
def plat() -> Iterator[PlatformProcess]:
    with PlatformProcess(seed=4) as p:
        yield p


@pytest.fixture(scope="module")
def reasoning() -> Iterator[PlatformProcess]:
    with PlatformProcess(seed=4, llm_reasoning="think", llm_refuse_rate=0.5) as p:
        yield p


def client(p: PlatformProcess) -> openai.OpenAI:
    return openai.OpenAI(base_url=p.url + "/v1", api_key="unused", max_retries=0, timeout=30,
                         http_client=httpx.Client(trust_env=False))


def user_msg(record: dict | None = None) -> list:
    return [{"role": "user", "content": fill_prompt(record or EXAMPLE_AUDIT_RECORD)}]


def model_id(c: openai.OpenAI) -> str:
    return c.models.list().data[0].id


def test_models_list_and_retrieve(plat: PlatformProcess) -> None:
    c = client(plat)
    models = c.models.list()
    assert [m.id for m in models.data] == [httpx.get(plat.url + "/health").json()["model"]]
    assert c.models.retrieve(models.data[0].id).id == models.data[0].id
    with pytest.raises(openai.NotFoundError):
        c.models.retrieve("gpt-nonexistent")


def test_completion_n_choices_usage(plat: PlatformProcess) -> None:
    c = client(plat)
    out = c.chat.completions.create(model=model_id(c), messages=user_msg(), n=3, temperature=0,
                                    max_completion_tokens=4)
    assert len(out.choices) == 3 and [ch.index for ch in out.choices] == [0, 1, 2]
    assert len({ch.message.content for ch in out.choices}) == 1  # greedy: all the same
    assert out.choices[0].message.content in LABELS
    assert out.choices[0].finish_reason == "stop"
    assert out.usage is not None and out.usage.completion_tokens == 3
    # at temperature 1 the n draws are independent (seeded per choice index)
    rec = EXAMPLE_AUDIT_RECORD | {"age": 45, "education-num": 13}
    out = c.chat.completions.create(model=model_id(c), messages=user_msg(rec), n=40,
                                    temperature=1.0, seed=1)
    assert {ch.message.content for ch in out.choices} == set(LABELS)


def test_streaming_yields_the_same_answer_in_chunks(plat: PlatformProcess) -> None:
    c = client(plat)
    m = model_id(c)
    full = c.chat.completions.create(model=m, messages=user_msg(), logprobs=True, top_logprobs=2)
    stream = c.chat.completions.create(model=m, messages=user_msg(), logprobs=True,
                                       top_logprobs=2, stream=True,
                                       stream_options={"include_usage": True})
    chunks = list(stream)
    assert len(chunks) >= 3
    text = "".join(ch.choices[0].delta.content or "" for ch in chunks if ch.choices)
    assert text == full.choices[0].message.content
    finish = [ch.choices[0].finish_reason for ch in chunks if ch.choices]
    assert finish[-1] == "stop" and all(f is None for f in finish[:-1])
    lps = [t for ch in chunks if ch.choices and ch.choices[0].logprobs
           for t in ch.choices[0].logprobs.content or []]
    assert [t.token for t in lps] == [full.choices[0].message.content]
    assert chunks[-1].choices == [] and chunks[-1].usage is not None
    # n > 1 streams every choice
    chunks = list(c.chat.completions.create(model=m, messages=user_msg(), n=2, stream=True))
    assert {ch.choices[0].index for ch in chunks if ch.choices} == {0, 1}


def test_errors_have_openai_shape_and_status(plat: PlatformProcess) -> None:
    c = client(plat)
    with pytest.raises(openai.NotFoundError) as nf:
        c.chat.completions.create(model="gpt-4o", messages=user_msg())
    assert nf.value.status_code == 404 and "does not exist" in nf.value.message
    assert nf.value.code == "model_not_found"
    with pytest.raises(openai.BadRequestError) as br:
        c.chat.completions.create(model=model_id(c), messages=user_msg(), temperature=3.0)
    assert "'temperature' must be a number in [0, 2]" in br.value.message
    assert br.value.param == "temperature"
    with pytest.raises(openai.BadRequestError, match="no JSON object"):
        c.chat.completions.create(model=model_id(c),
                                  messages=[{"role": "user", "content": "hello"}])
    with pytest.raises(openai.BadRequestError, match="provide a model"):
        httpx_post(plat, {"messages": user_msg()})


def httpx_post(p: PlatformProcess, body: dict) -> None:
    r = httpx.post(p.url + "/v1/chat/completions", json=body)
    if r.status_code == 400:
        raise openai.BadRequestError(r.json()["error"]["message"], response=r, body=r.json())


def test_reasoning_model_limits_refusals_and_truncation(reasoning: PlatformProcess) -> None:
    c = client(reasoning)
    m = model_id(c)
    with pytest.raises(openai.BadRequestError, match="Use 'max_completion_tokens'"):
        c.chat.completions.create(model=m, messages=user_msg(), max_tokens=64)
    contents, refusals, answered = [], 0, 0
    for age in range(20, 60, 2):
        rec = EXAMPLE_AUDIT_RECORD | {"age": age}
        out = c.chat.completions.create(model=m, messages=user_msg(rec),
                                        max_completion_tokens=512)
        msg = out.choices[0].message
        if msg.content == REFUSAL_REPLY:
            refusals += 1
            continue
        assert msg.content is not None and msg.content.startswith("<think>")
        assert msg.content.rsplit("</think>", 1)[1].strip() in LABELS
        assert out.usage is not None and out.usage.completion_tokens_details is not None
        assert out.usage.completion_tokens_details.reasoning_tokens > 10
        contents.append(msg.content)
        answered = age
    assert 3 <= refusals <= 17 and contents
    # JSON mode refuses through the refusal field, as OpenAI's structured outputs do
    fmt = {"type": "json_object"}
    kinds = set()
    for age in range(20, 40):
        out = c.chat.completions.create(model=m, messages=user_msg(EXAMPLE_AUDIT_RECORD |
                                        {"age": age}), response_format=fmt)  # type: ignore[arg-type]
        msg = out.choices[0].message
        kinds.add("refusal" if msg.refusal else "label")
        if msg.refusal:
            assert msg.content is None
        else:
            assert json.loads(msg.content.rsplit("</think>", 1)[1])["label"] in LABELS
    assert kinds == {"refusal", "label"}
    out = c.chat.completions.create(model=m, messages=user_msg(EXAMPLE_AUDIT_RECORD |
                                    {"age": answered}), max_completion_tokens=8)
    assert out.choices[0].finish_reason == "length"
    assert out.choices[0].message.content is not None
    assert "</think>" not in out.choices[0].message.content
    assert out.usage is not None and out.usage.completion_tokens == 8
