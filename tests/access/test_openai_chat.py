"""OpenAIChatBackend: answer parsing, logprob scores, request bodies (no server needed)."""

from __future__ import annotations

import math
from typing import Any

import pytest

from fairprobe.access import OpenAIChatBackend, parse_label
from fairprobe.access.openai_chat import label_score
from fairprobe.errors import AccessError, AnswerParseError, DataError

INCOME = [">50K", "<=50K"]
TOXIC = ["toxic", "non-toxic"]


@pytest.mark.parametrize(
    "text, labels, expected",
    [
        (">50K", INCOME, ">50K"),
        ("  <=50k\n", INCOME, "<=50K"),
        ('"<=50K".', INCOME, "<=50K"),
        ('{"label": ">50K"}', INCOME, ">50K"),
        ('{"label":"<=50k"}', INCOME, "<=50K"),
        ('```json\n{"label": ">50K"}\n```', INCOME, ">50K"),
        ('Sure! {"label": "<=50K"} is my answer', INCOME, "<=50K"),
        ('{"answer": ">50K"}', INCOME, ">50K"),
        ("The yearly income is <=50K.", INCOME, "<=50K"),  # ">50K" inside "<=50K" is not >50K
        ("Income: >50K", INCOME, ">50K"),
        (">50K or <=50K", INCOME, None),
        ("I am not able to assess this person's income.", INCOME, None),
        ("", INCOME, None),
        (None, INCOME, None),
        ('{"label": "maybe"}', INCOME, None),
        ("Non-Toxic", TOXIC, "non-toxic"),
        ("This comment is non-toxic.", TOXIC, "non-toxic"),  # "toxic" inside "non-toxic"
        ("This comment is toxic.", TOXIC, "toxic"),
        ("toxicity unclear", TOXIC, None),  # no whole-word label
        ("Nurse", ["nurse", "surgeon", "physician"], "nurse"),
    ],
)
def test_parse_label(text: str | None, labels: list[str], expected: str | None) -> None:
    assert parse_label(text, labels) == expected


def chat(content: str | None, logprobs: Any = None) -> dict[str, Any]:
    return {
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": content},
             "logprobs": logprobs}
        ]
    }


def tok(token: str, lp: float, top: list[tuple[str, float]] | None = None) -> dict[str, Any]:
    return {"token": token, "logprob": lp,
            "top_logprobs": [{"token": t, "logprob": v} for t, v in (top or [])]}


def test_label_score_plain_and_json_mode() -> None:
    lp_pos, lp_neg = math.log(0.3), math.log(0.7)
    toks = [tok("<=50K", lp_neg, [("<=50K", lp_neg), (">50K", lp_pos)])]
    s, z = label_score("<=50K", "<=50K", toks, INCOME, [">50K"])
    assert s == pytest.approx(0.3) and z == pytest.approx(math.log(0.3 / 0.7))
    toks = [tok('{"label": "', 0.0), tok(">", lp_pos, [(">", lp_pos), ("<=", lp_neg)]),
            tok("50K", 0.0), tok('"}', 0.0)]
    s, z = label_score('{"label": ">50K"}', ">50K", toks, INCOME, [">50K"])
    assert s == pytest.approx(0.3)
    # a multi-token label whose first token is shared ("non" vs "no") still discriminates
    toks = [tok("non", math.log(0.6), [("non", math.log(0.6)), ("tox", math.log(0.2)),
                                       ("the", math.log(0.1))]), tok("-toxic", 0.0)]
    s, z = label_score("non-toxic", "non-toxic", toks, TOXIC, ["toxic"])
    assert s == pytest.approx(0.2 / 0.8)
    # only the chosen side in the top-k: score 1 or 0, no finite logit
    s, z = label_score(">50K", ">50K", [tok(">50K", -0.01, [(">50K", -0.01)])], INCOME, [">50K"])
    assert (s, z) == (1.0, None)


def backend(**kw: Any) -> OpenAIChatBackend:
    base = {"base_url": "http://127.0.0.1:1/v1", "model": "m", "labels": INCOME,
            "positive_labels": [">50K"]}
    return OpenAIChatBackend(**{**base, **kw})


def test_request_body_defaults_are_deterministic() -> None:
    body = backend().request_body({"age": 39, "sex": "Male"})
    assert body["temperature"] == 0.0 and body["seed"] == 0 and body["max_tokens"] == 16
    assert body["messages"] == [{"role": "user", "content": '{"age": 39, "sex": "Male"}'}]
    assert "response_format" not in body and "logprobs" not in body


def test_request_body_structured_output_system_prompt_template() -> None:
    be = backend(structured_output=True, logprobs=True, top_logprobs=2,
                 system_prompt="You are a classifier.",
                 prompt_template="Age {age}, sex {sex}. Record: {record_json}")
    body = be.request_body({"age": 39, "sex": "Male"})
    assert body["messages"][0] == {"role": "system", "content": "You are a classifier."}
    assert body["messages"][1]["content"] == 'Age 39, sex Male. Record: {"age": 39, "sex": "Male"}'
    schema = body["response_format"]["json_schema"]["schema"]
    assert body["response_format"]["type"] == "json_schema"
    assert schema["properties"]["label"]["enum"] == INCOME and schema["required"] == ["label"]
    assert body["logprobs"] is True and body["top_logprobs"] == 2


def test_template_naming_an_absent_field() -> None:
    with pytest.raises(DataError, match="names field 'income', which a record lacks"):
        backend(prompt_template="{income}").request_body({"age": 1})


def test_parse_response() -> None:
    be = backend(logprobs=True)
    a = be.parse_response(chat(">50K", {"content": [
        tok(">50K", math.log(0.8), [(">50K", math.log(0.8)), ("<=50K", math.log(0.2))])]}))
    assert a.decision == 1 and a.score == pytest.approx(0.8)
    assert a.logit == pytest.approx(math.log(4.0)) and a.raw == ">50K"
    garbled = be.parse_response(chat("I cannot tell."))
    assert garbled.decision is None and garbled.raw == "I cannot tell."
    assert be.parse_response(chat(None)).decision is None
    with pytest.raises(AnswerParseError, match="without choices\\[0\\].message"):
        be.parse_response({"data": []})
    with pytest.raises(AnswerParseError, match="content is a list"):
        be.parse_response(chat([1]))  # type: ignore[arg-type]
    with pytest.raises(AccessError, match="answered with an error: model not found"):
        be.parse_response({"error": {"message": "model not found"}})


def test_identity_has_model_and_decoding_but_never_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAIRPROBE_TEST_KEY", "sk-very-secret")
    a = backend(api_key_env="FAIRPROBE_TEST_KEY")
    assert "sk-very-secret" not in a.identity
    assert a._transport.client().headers["Authorization"] == "Bearer sk-very-secret"
    assert a.identity == backend().identity  # the key does not change the model
    assert a.identity != backend(model="m2").identity
    assert a.identity != backend(temperature=0.7).identity
    assert a.identity != backend(prompt_template="Person: {record_json}").identity
    assert a.identity.startswith("openai-chat:http://127.0.0.1:1/v1 model=m#")
    a.close()


def test_template_with_format_spec_and_a_record_json_field() -> None:
    be = backend(prompt_template="age {age:>3}; {record_json}")
    assert be.prompt({"age": 7}) == 'age   7; {"age": 7}'
    # a record field called record_json does not clash with the placeholder
    assert backend().prompt({"record_json": 1}) == '{"record_json": 1}'
    with pytest.raises(DataError, match="cannot fill the prompt template"):
        backend(prompt_template="{age:d}").prompt({"age": "x"})


def test_config_checks_token_limits_parsers_and_urls() -> None:
    from fairprobe.errors import ConfigError

    with pytest.raises(ConfigError, match="one of max_tokens and max_completion_tokens"):
        backend(max_tokens=8, max_completion_tokens=64)
    assert "max_tokens" not in backend(max_completion_tokens=64).request_body({"a": 1})
    body = backend(max_tokens=8, max_completion_tokens=64, omit=["max_tokens"]).request_body({})
    assert body["max_completion_tokens"] == 64 and "max_tokens" not in body
    with pytest.raises(ConfigError, match="omit"):
        backend(omit=["model"])
    with pytest.raises(ConfigError, match="unknown parser 'regex'"):
        backend(parser="regex")
    with pytest.raises(ConfigError, match="unknown scorer"):
        backend(scorer="mean")
    with pytest.raises(ConfigError, match="not a regular expression"):
        backend(refusal_patterns=["(unclosed"])
    with pytest.raises(ConfigError, match="without /chat/completions"):
        backend(base_url="http://127.0.0.1:1/v1/chat/completions")
    with pytest.raises(ConfigError, match="extra_body must not set"):
        backend(extra_body={"messages": []})


def test_placeholders_record_and_labels() -> None:
    be = backend(prompt_template="{record} -> {labels}? age={age}")
    assert be.prompt({"age": 7}) == '{"age": 7} -> ">50K" or "<=50K"? age=7'
    assert backend(prompt_template="{record_json}").prompt({"a": 1}) == '{"a": 1}'
    with pytest.raises(DataError, match="placeholders \\['labels', 'record', 'record_json'\\]"):
        be.prompt({"x": 1})


def test_default_identity_is_unchanged_so_old_caches_stay_valid() -> None:
    # the identity of a config written before the new options existed, computed the old way
    import hashlib
    import json

    old = {"kind": "openai-chat", "base_url": "http://127.0.0.1:1/v1", "model": "m",
           "labels": INCOME, "positive_labels": [">50K"], "prompt_template": "{record_json}",
           "system_prompt": None, "temperature": 0.0, "seed": 0, "max_tokens": 16,
           "top_p": None, "structured_output": False, "logprobs": False, "top_logprobs": 5,
           "extra_body": {}, "cache_name": None}
    digest = hashlib.sha256(json.dumps(old, sort_keys=True).encode()).hexdigest()[:12]
    assert backend().identity == f"openai-chat:http://127.0.0.1:1/v1 model=m#{digest}"
    assert backend(prompt_template="{record_json}").identity == backend().identity
    assert backend(max_completion_tokens=64).identity != backend().identity
    assert backend(omit=["seed"]).identity != backend().identity


def test_provenance_names_exactly_what_is_sent() -> None:
    from fairprobe.access.identity import describe_backend

    d = describe_backend(backend(max_completion_tokens=64, omit=["temperature"]))
    assert d["kind"] == "openai-chat"
    assert d["llm"]["sent"] == {"seed": 0, "max_completion_tokens": 64}
    assert d["llm"]["parser"] == "auto" and d["usage"]["requests"] == 0
