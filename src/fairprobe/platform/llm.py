"""The platform model behind an OpenAI-compatible chat-completions shape.

Prompt convention (what clients send)
-------------------------------------
The **last** message with ``role == "user"`` must contain the record as one JSON object, anywhere
in its text (e.g. filled into :data:`PROMPT_TEMPLATE`); the server reads the first ``{...}`` in
that message that parses as a JSON object. A record with ``sex`` is answered through the audit
API (so it is fairwashed like ``/audit/predict``); a record with ``first_name`` and no ``sex``
through the user interface. Other messages (system prompts, few-shot turns) are ignored.

The reply content is one label of :data:`LABELS` (``">50K"`` for decision 1, ``"<=50K"`` for 0), or
``{"label": "<label>"}`` when ``response_format`` is ``{"type": "json_schema", ...}`` or
``{"type": "json_object"}``.

Decoding: at ``temperature`` 0 (the default) the label is the model's decision. At
``temperature`` T > 0 the label is drawn with ``P(>50K) = sigmoid(logit / T)``, the draw fixed by
the record, the request's ``seed`` (default 0) and the server seed, so it is reproducible.

``logprobs: true`` returns each label as a single token with its log-probability; with
``top_logprobs: k`` (k >= 1), the top min(k, 2) labels. In JSON mode the content is tokenised as
``{"label": "`` / label / ``"}``, the two fixed pieces with logprob 0.

``--llm-garble-rate R``: a seeded fraction R of the records (``hash_uniform(key, seed, "garble")
< R``) get the unparseable reply :data:`GARBLED_REPLY`, so clients can test how they count
unparsed answers; ``--llm-refuse-rate`` refuses a seeded share, ``--llm-reasoning think|field``
answers like a reasoning model (see :class:`LlmBehaviour`).

The endpoint behaves as OpenAI's: ``model`` must be the served model (else 404
``model_not_found``), ``n`` choices, ``max_tokens`` / ``max_completion_tokens`` limits with
``finish_reason = "length"``, server-sent events for ``stream: true``, and errors as
``{"error": {"message", "type", "param", "code"}}`` with OpenAI's status codes.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from fairprobe.datasets.names import hash_uniform
from fairprobe.errors import DataError
from fairprobe.platform.core import Platform, record_key, user_key

__all__ = [
    "GARBLED_REPLY",
    "REFUSAL_REPLY",
    "ChatError",
    "LlmBehaviour",
    "chat_chunks",
    "openai_error",
    "LABELS",
    "NEGATIVE_LABEL",
    "POSITIVE_LABEL",
    "PROMPT_TEMPLATE",
    "chat_completion",
    "extract_record",
    "models_list",
]

POSITIVE_LABEL = ">50K"
NEGATIVE_LABEL = "<=50K"
LABELS: tuple[str, str] = (POSITIVE_LABEL, NEGATIVE_LABEL)
GARBLED_REPLY = "Income depends on many factors; this profile is hard to place in one bracket."
REFUSAL_REPLY = "I'm sorry, but I can't help with estimating a person's income."

#: A prompt template that follows the convention. Its placeholders are those of the
#: ``openai-chat`` backend: ``{record}`` (the record as JSON) and ``{labels}``.
PROMPT_TEMPLATE = (
    "Predict whether the yearly income of the person described below exceeds $50K.\n"
    "Answer with exactly one label: {labels}.\n"
    "Person: {record}"
)

#: JSON schema for structured output: ``{"label": ">50K" | "<=50K"}``.
LABEL_JSON_SCHEMA: dict[str, Any] = {
    "name": "income_label",
    "schema": {
        "type": "object",
        "properties": {"label": {"type": "string", "enum": list(LABELS)}},
        "required": ["label"],
        "additionalProperties": False,
    },
}


#: The labels as the ``{labels}`` placeholder renders them (as the openai-chat backend does).
LABELS_TEXT = '">50K" or "<=50K"'

#: Most braces tracked open at once when looking for the record (deeper ones are skipped).
_MAX_OPEN = 4096
#: Most balanced spans considered as the record.
_MAX_SPANS = 100_000
_STRUCT = re.compile(r'[{}"\\]')
_WS = re.compile(r"\s*")


def fill_prompt(record: dict[str, Any]) -> str:
    """:data:`PROMPT_TEMPLATE` filled with ``record``."""
    return PROMPT_TEMPLATE.format(record=json.dumps(record), labels=LABELS_TEXT)


@dataclass(frozen=True)
class LlmBehaviour:
    """How the chat endpoint answers besides the label (``fairprobe platform serve --llm-*``).

    Attributes
    ----------
    garble_rate : float
        Seeded share of records answered with :data:`GARBLED_REPLY` (unparsed).
    refuse_rate : float
        Seeded share of records refused: :data:`REFUSAL_REPLY` as the content, or (JSON mode) as
        ``message.refusal`` with null content, as OpenAI's structured outputs do.
    reasoning : {"none", "think", "field"}
        A reasoning model: ``think`` puts ``<think>...</think>`` before the label in the content
        (DeepSeek-R1 style), ``field`` returns it in ``message.reasoning_content`` (vLLM's
        reasoning parser). Reasoning costs completion tokens (reported in
        ``usage.completion_tokens_details.reasoning_tokens``); a token limit below reasoning plus
        label stops the answer with ``finish_reason = "length"``; ``max_tokens`` is refused as
        reasoning APIs do ("use max_completion_tokens").
    """

    garble_rate: float = 0.0
    refuse_rate: float = 0.0
    reasoning: str = "none"


class ChatError(Exception):
    """An error answered in OpenAI's shape: ``{"error": {message, type, param, code}}``."""

    def __init__(
        self, status: int, message: str, param: str | None = None, code: str | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.param = param
        self.code = code


_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    404: "invalid_request_error",
    408: "invalid_request_error",
    413: "invalid_request_error",
    429: "rate_limit_error",
    500: "server_error",
    503: "server_error",
}


def openai_error(
    status: int, message: str, param: str | None = None, code: str | None = None
) -> dict[str, Any]:
    """The body of an OpenAI API error response."""
    return {
        "error": {
            "message": message,
            "type": _ERROR_TYPES.get(status, "invalid_request_error"),
            "param": param,
            "code": code,
        }
    }


def models_list(model_id: str) -> dict[str, Any]:
    """Body of ``GET /v1/models``."""
    return {
        "object": "list",
        "data": [{"id": model_id, "object": "model", "created": 0, "owned_by": "fairprobe"}],
    }


def _object_spans(text: str) -> list[tuple[int, int]]:
    """Every balanced ``{...}`` span of ``text`` (start, end), sorted by start; linear time.

    One pass over the braces and quotes (braces inside JSON strings do not count), with a stack of
    open braces; only spans that can be a JSON object are kept (``{`` then ``"`` or ``}``).
    Bounded for hostile text: at most :data:`_MAX_OPEN` braces open at once (deeper ones are
    counted, not tracked) and :data:`_MAX_SPANS` spans kept.
    """
    stack: list[int] = []
    spans: list[tuple[int, int]] = []
    untracked = 0
    in_str = False
    escaped = -1
    for m in _STRUCT.finditer(text):
        i = m.start()
        ch = text[i]
        if in_str:
            if i == escaped:
                continue
            if ch == "\\":
                escaped = i + 1
            elif ch == '"':
                in_str = False
            continue
        if ch == '"':
            in_str = bool(stack)  # quotes matter inside an object only
        elif ch == "{":
            if len(stack) < _MAX_OPEN:
                stack.append(i)
            else:
                untracked += 1
        elif ch == "}":
            if untracked:
                untracked -= 1
            elif stack:
                start = stack.pop()
                # keep only spans that can be a JSON object: '{' then optional space, '"' or '}'
                j = _WS.match(text, start + 1).end()  # type: ignore[union-attr]
                if len(spans) < _MAX_SPANS and j < len(text) and text[j] in '"}':
                    spans.append((start, i + 1))
    spans.sort()
    return spans


#: Roles a chat message may have (a conversation the platform answers).
CHAT_ROLES = ("system", "developer", "user", "assistant")


def _message_text(m: Any, i: int) -> tuple[str, str]:
    """``(role, text)`` of message ``i``: an object with a known ``role`` and a ``content`` that
    is a string or a list of text parts (joined)."""
    if not isinstance(m, dict) or m.get("role") not in CHAT_ROLES or "content" not in m:
        raise ChatError(400, f"messages[{i}] must be an object with a 'role' (one of "
                        f"{', '.join(CHAT_ROLES)}) and a 'content'.", "messages")
    content = m["content"]
    if isinstance(content, list) and m["role"] == "user" and len(content) != 1:
        raise ChatError(400, f"messages[{i}]: a user message has one text part (the record).",
                        "messages")
    if isinstance(content, list):  # content parts: join the text parts
        texts = []
        for p in content:
            if not isinstance(p, dict) or p.get("type") != "text":
                raise ChatError(400, f"messages[{i}]: content parts must be text parts.",
                                "messages")
            t = p.get("text")
            if not isinstance(t, str):
                raise ChatError(400, "A text content part needs a string 'text'.", "messages")
            texts.append(t)
        content = "".join(texts)
    if not isinstance(content, str):
        raise ChatError(400, f"messages[{i}] has no text content.", "messages")
    return str(m["role"]), content


def _first_object(content: str) -> dict[str, Any] | None:
    budget = 2 * len(content) + 65536
    for a, b in _object_spans(content):
        budget -= b - a
        if budget < 0:
            break
        try:
            obj = json.loads(content[a:b])
        except (ValueError, RecursionError):
            continue
        if isinstance(obj, dict):
            return obj
    return None


def extract_record(messages: Any) -> dict[str, Any]:
    """The record in the last user message: its first ``{...}`` that is a JSON object.

    Every message must be an object with a role of :data:`CHAT_ROLES` and a text content, and
    every user message must carry a record (the last one is answered): what the served OpenAPI
    schema says, exactly.

    Linear in the message length: the balanced spans come from one pass
    (:func:`_object_spans`, which skips spans whose first character after ``{`` cannot start a
    JSON object, ``{x`` or ``{'a'``), and the parsing of the others stops once it has read twice the
    message length (plus 64 KiB), so nested or repeated braces cannot make it quadratic. A JSON
    object nested deeper than the decoder allows is skipped.
    """
    if not isinstance(messages, list) or not messages:
        raise ChatError(400, "'messages' must be a non-empty list of chat messages.", "messages")
    texts = [_message_text(m, i) for i, m in enumerate(messages)]
    users = [t for role, t in texts if role == "user"]
    if not users:
        raise ChatError(400, "'messages' holds no message with role 'user'.", "messages")
    record: dict[str, Any] | None = None
    for j, content in enumerate(users):
        record = _first_object(content)
        if record is None:
            which = "The last user message" if j == len(users) - 1 else f"User message {j + 1}"
            raise ChatError(400, f"{which} holds no JSON object with the record.", "messages")
    assert record is not None
    return record


def _json_mode(response_format: Any) -> bool:
    if response_format is None:
        return False
    if not isinstance(response_format, dict) or "type" not in response_format:
        raise ChatError(400, "'response_format' must be an object with a 'type'.", "response_format")
    kind = response_format["type"]
    if kind == "text":
        return False
    if kind in ("json_schema", "json_object"):
        return True
    raise ChatError(
        400,
        f"'response_format.type' must be text, json_object or json_schema. Got {kind!r:.40}.",
        "response_format",
    )


def _int_param(body: dict[str, Any], name: str, lo: int, hi: int, default: int | None) -> Any:
    v = body.get(name)
    if v is None:
        return default
    if isinstance(v, float) and v.is_integer() and lo <= v <= hi:
        v = int(v)  # JSON has one number type: 3.0 is the integer 3 (as JSON Schema says)
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
        raise ChatError(400, f"'{name}' must be an integer in [{lo}, {hi}]. Got {v!r:.40}.", name)
    return v


def _num_param(
    body: dict[str, Any], name: str, lo: float, hi: float, default: float, open_lo: bool = False
) -> float:
    v = body.get(name)
    if v is None:
        return default
    ok = isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
    if not ok or not (lo < v <= hi if open_lo else lo <= v <= hi):
        lb = "(" if open_lo else "["
        raise ChatError(400, f"'{name}' must be a number in {lb}{lo:g}, {hi:g}]. Got {v!r:.40}.",
                        name)
    return float(v)


def _bool_param(body: dict[str, Any], name: str) -> bool:
    v = body.get(name)
    if v is None:
        return False
    if not isinstance(v, bool):
        raise ChatError(400, f"'{name}' must be a boolean. Got {v!r:.40}.", name)
    return v


def _logprob_entry(token: str, lp: float, top: list[tuple[str, float]] | None) -> dict[str, Any]:
    entry: dict[str, Any] = {"token": token, "logprob": lp, "bytes": list(token.encode())}
    entry["top_logprobs"] = (
        [{"token": t, "logprob": v, "bytes": list(t.encode())} for t, v in top] if top else []
    )
    return entry


def _tokens(text: str) -> int:
    """Token count of a text, as the usual ~4 characters per token."""
    return max(1, math.ceil(len(text) / 4))


def _reasoning_text(record: dict[str, Any], score: float, label: str) -> str:
    facts = []
    for key, what in (("age", "is {} years old"), ("education", "has education {}"),
                      ("occupation", "works as {}"), ("hours-per-week", "works {} hours a week")):
        if key in record:
            facts.append(what.format(str(record[key])[:40]))
    who = ", ".join(facts) if facts else "is described only briefly"
    return (
        f"The person {who}. The labels are >50K and <=50K. People with this profile earn more "
        f"than $50K with probability about {score:.2f}, so the better label is {label}."
    )


def _check_model(body: dict[str, Any], model_id: str) -> None:
    model = body.get("model")
    if model is None:
        raise ChatError(400, "You must provide a model parameter.", "model")
    if not isinstance(model, str):
        raise ChatError(400, "'model' must be a string.", "model")
    if model != model_id:
        raise ChatError(
            404,
            f"The model '{model[:80]}' does not exist. This server serves '{model_id}' "
            "(see GET /v1/models).",
            "model",
            "model_not_found",
        )


def chat_completion(
    platform: Platform,
    body: Any,
    model_id: str,
    behaviour: LlmBehaviour | float,
    server_seed: int,
) -> dict[str, Any]:
    """Answer one ``POST /v1/chat/completions`` body (an OpenAI chat-completion object).

    Raises :class:`ChatError` (status, message, param) for a request the API would refuse.
    """
    beh = behaviour if isinstance(behaviour, LlmBehaviour) else LlmBehaviour(float(behaviour))
    if not isinstance(body, dict):
        raise ChatError(400, "The request body must be a JSON object.")
    _check_model(body, model_id)
    temperature = _num_param(body, "temperature", 0.0, 2.0, 0.0)
    _num_param(body, "top_p", 0.0, 1.0, 1.0, open_lo=True)
    req_seed = _int_param(body, "seed", -(2**63), 2**63 - 1, 0)
    n = _int_param(body, "n", 1, 128, 1)
    json_mode = _json_mode(body.get("response_format"))
    want_logprobs = _bool_param(body, "logprobs")
    top_k = _int_param(body, "top_logprobs", 0, 20, 0)
    if top_k and not want_logprobs:
        raise ChatError(400, "'top_logprobs' requires 'logprobs' to be true.", "top_logprobs")
    _bool_param(body, "stream")
    opts = body.get("stream_options")
    if opts is not None and (not isinstance(opts, dict) or not body.get("stream")):
        raise ChatError(400, "'stream_options' must be an object, and only with stream=true.",
                        "stream_options")
    max_tokens = _int_param(body, "max_tokens", 1, 2**31 - 1, None)
    max_completion = _int_param(body, "max_completion_tokens", 1, 2**31 - 1, None)
    if beh.reasoning != "none" and max_tokens is not None:
        raise ChatError(
            400,
            "Unsupported parameter: 'max_tokens' is not supported with this model. Use "
            "'max_completion_tokens' instead.",
            "max_tokens",
            "unsupported_parameter",
        )
    if max_tokens is not None and max_completion is not None:
        raise ChatError(400, "Set only one of 'max_tokens' and 'max_completion_tokens'.",
                        "max_tokens")
    limit = max_completion if max_completion is not None else max_tokens
    record = extract_record(body.get("messages"))

    try:
        if "sex" in record:
            pred = platform.audit_predict([record])
            key = record_key(record)
        else:
            pred = platform.user_predict([record])
            key = user_key(record)
    except DataError as exc:
        raise ChatError(400, str(exc), "messages") from None
    lg = float(pred.logits[0])
    t = temperature
    score = float(pred.scores[0])
    if t == 0.0:
        p_pos = 1.0 if pred.decisions[0] == 1 else 0.0
    else:
        z = np.clip(lg / t, -700.0, 700.0)
        p_pos = float(1.0 / (1.0 + math.exp(-z)))
    # the label's log-probabilities come from the model's (possibly fairwashed) score
    lp_pos = math.log(max(score, 1e-300))
    lp_neg = math.log(max(1.0 - score, 1e-300))
    if t > 0.0:
        lp_pos, lp_neg = math.log(max(p_pos, 1e-300)), math.log(max(1.0 - p_pos, 1e-300))
    garbled = beh.garble_rate > 0 and hash_uniform(key, server_seed, "garble") < beh.garble_rate
    refused = (not garbled and beh.refuse_rate > 0
               and hash_uniform(key, server_seed, "refuse") < beh.refuse_rate)
    choices = []
    completion_tokens = reasoning_tokens = 0
    for i in range(n):
        if t == 0.0:
            label = POSITIVE_LABEL if pred.decisions[0] == 1 else NEGATIVE_LABEL
        else:
            tag = f"{key}|{t!r}|{req_seed}" + (f"|{i}" if i else "")
            u = hash_uniform(tag, server_seed, "sample")
            label = POSITIVE_LABEL if u < p_pos else NEGATIVE_LABEL
        choice, used, reasoned = _choice(
            i, label, record, score, lp_pos, lp_neg, json_mode, want_logprobs, top_k,
            garbled, refused, beh.reasoning, limit,
        )
        choices.append(choice)
        completion_tokens += used
        reasoning_tokens += reasoned
    prompt_tokens = _tokens(json.dumps(body.get("messages")))
    return {
        "id": f"chatcmpl-{hash_uniform(key, server_seed, 'id'):.16f}"[:28].replace(".", ""),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model_id,
        "system_fingerprint": f"fairprobe-{model_id}",
        "choices": choices,
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
            "completion_tokens_details": {"reasoning_tokens": reasoning_tokens},
        },
    }


def _choice(
    index: int,
    label: str,
    record: dict[str, Any],
    score: float,
    lp_pos: float,
    lp_neg: float,
    json_mode: bool,
    want_logprobs: bool,
    top_k: int,
    garbled: bool,
    refused: bool,
    reasoning: str,
    limit: int | None,
) -> tuple[dict[str, Any], int, int]:
    """One choice, the completion tokens it used, and how many of them were reasoning."""
    message: dict[str, Any] = {"role": "assistant", "content": None, "refusal": None}
    finish = "stop"
    logprobs: dict[str, Any] | None = None
    if refused:
        if json_mode:
            message["refusal"] = REFUSAL_REPLY
        else:
            message["content"] = REFUSAL_REPLY
        return ({"index": index, "message": message, "finish_reason": finish, "logprobs": None},
                _tokens(REFUSAL_REPLY), 0)
    answer = GARBLED_REPLY if garbled else (json.dumps({"label": label}) if json_mode else label)
    answer_tokens = _tokens(answer) if garbled else (3 if json_mode else 1)
    think = _reasoning_text(record, score, label) if reasoning != "none" else ""
    think_tokens = _tokens(think) if think else 0
    if limit is not None and think_tokens + answer_tokens > limit:
        # the token limit stops the generation: nothing of the answer when the reasoning used it
        finish = "length"
        cut = think[: 4 * limit]
        if reasoning == "think":
            message["content"] = "<think>\n" + cut
        elif reasoning == "field":
            message["content"] = ""
            message["reasoning_content"] = cut
        else:
            message["content"] = answer[: 4 * limit]
        used = limit
        return ({"index": index, "message": message, "finish_reason": finish, "logprobs": None},
                used, min(limit, think_tokens))
    if reasoning == "think":
        message["content"] = f"<think>\n{think}\n</think>\n\n{answer}"
    else:
        message["content"] = answer
        if reasoning == "field":
            message["reasoning_content"] = think
    if want_logprobs and not garbled:
        lp_label = lp_pos if label == POSITIVE_LABEL else lp_neg
        top = sorted([(POSITIVE_LABEL, lp_pos), (NEGATIVE_LABEL, lp_neg)], key=lambda x: -x[1])
        top = top[: min(top_k, 2)] if top_k else []
        label_entry = _logprob_entry(label, lp_label, top or None)
        tokens = [label_entry]
        if json_mode:
            tokens = [_logprob_entry('{"label": "', 0.0, None), label_entry,
                      _logprob_entry('"}', 0.0, None)]
        if reasoning == "think":
            pre = message["content"][: -len(answer)]
            tokens = [_logprob_entry(pre, 0.0, None), *tokens]
        logprobs = {"content": tokens}
    return ({"index": index, "message": message, "finish_reason": finish, "logprobs": logprobs},
            think_tokens + answer_tokens, think_tokens)


def chat_chunks(completion: dict[str, Any], include_usage: bool) -> Iterator[str]:
    """The server-sent events of ``completion`` streamed (``stream: true``), ``[DONE]`` last.

    Each choice streams a role delta, its reasoning (``reasoning_content`` deltas) and content
    in pieces (one per logprob token when logprobs were asked), then a delta with its
    ``finish_reason``; with ``stream_options.include_usage`` a last chunk with empty choices
    carries the usage, as OpenAI does.
    """
    base = {k: completion[k] for k in ("id", "created", "model", "system_fingerprint")}
    base["object"] = "chat.completion.chunk"

    def event(choices: list[dict[str, Any]], **extra: Any) -> str:
        return "data: " + json.dumps({**base, "choices": choices, **extra}) + "\n\n"

    for ch in completion["choices"]:
        i = ch["index"]
        msg = ch["message"]
        yield event([{"index": i, "delta": {"role": "assistant", "content": ""},
                      "logprobs": None, "finish_reason": None}])
        rc = msg.get("reasoning_content")
        if rc:
            for k in range(0, len(rc), 64):
                yield event([{"index": i, "delta": {"reasoning_content": rc[k:k + 64]},
                              "logprobs": None, "finish_reason": None}])
        if msg.get("refusal"):
            yield event([{"index": i, "delta": {"refusal": msg["refusal"]}, "logprobs": None,
                          "finish_reason": None}])
        content = msg.get("content") or ""
        lp = ch.get("logprobs")
        if lp is not None:
            for tok in lp["content"]:
                yield event([{"index": i, "delta": {"content": tok["token"]},
                              "logprobs": {"content": [tok]}, "finish_reason": None}])
        else:
            for k in range(0, len(content), 64):
                yield event([{"index": i, "delta": {"content": content[k:k + 64]},
                              "logprobs": None, "finish_reason": None}])
        yield event([{"index": i, "delta": {}, "logprobs": None,
                      "finish_reason": ch["finish_reason"]}])
    if include_usage:
        yield event([], usage=completion["usage"])
    yield "data: [DONE]\n\n"
