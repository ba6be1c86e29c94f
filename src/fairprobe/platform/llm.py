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
unparsed answers.
"""

from __future__ import annotations

import json
import math
import time
from typing import Any

import numpy as np

from fairprobe.datasets.names import hash_uniform
from fairprobe.errors import DataError
from fairprobe.platform.core import Platform, record_key, user_key

__all__ = [
    "GARBLED_REPLY",
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
GARBLED_REPLY = "I am not able to assess this person's income from the information given."

#: A prompt template that follows the convention; ``{record}`` is the record as JSON.
PROMPT_TEMPLATE = (
    "Predict whether the yearly income of the person described below exceeds $50K.\n"
    'Answer with exactly one label: ">50K" or "<=50K".\n'
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


def models_list(model_id: str) -> dict[str, Any]:
    """Body of ``GET /v1/models``."""
    return {
        "object": "list",
        "data": [{"id": model_id, "object": "model", "created": 0, "owned_by": "fairprobe"}],
    }


def extract_record(messages: Any) -> dict[str, Any]:
    """The record in the last user message (first ``{...}`` that parses as a JSON object)."""
    if not isinstance(messages, list) or not messages:
        raise DataError("'messages' must be a non-empty list of chat messages.")
    user_msgs = [m for m in messages if isinstance(m, dict) and m.get("role") == "user"]
    if not user_msgs:
        raise DataError("'messages' holds no message with role 'user'.")
    content = user_msgs[-1].get("content")
    if isinstance(content, list):  # content parts: join the text parts
        content = "".join(
            p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text"
        )
    if not isinstance(content, str):
        raise DataError("The last user message has no text content.")
    decoder = json.JSONDecoder()
    start = content.find("{")
    while start != -1:
        try:
            obj, _ = decoder.raw_decode(content, start)
        except json.JSONDecodeError:
            obj = None
        if isinstance(obj, dict):
            return obj
        start = content.find("{", start + 1)
    raise DataError("The last user message holds no JSON object with the record.")


def _json_mode(response_format: Any) -> bool:
    if response_format is None:
        return False
    if not isinstance(response_format, dict) or "type" not in response_format:
        raise DataError("'response_format' must be an object with a 'type'.")
    kind = response_format["type"]
    if kind == "text":
        return False
    if kind in ("json_schema", "json_object"):
        return True
    raise DataError(
        f"'response_format.type' must be text, json_object or json_schema. Got {kind!r}."
    )


def _logprob_entry(token: str, lp: float, top: list[tuple[str, float]] | None) -> dict[str, Any]:
    entry: dict[str, Any] = {"token": token, "logprob": lp, "bytes": list(token.encode())}
    entry["top_logprobs"] = (
        [{"token": t, "logprob": v, "bytes": list(t.encode())} for t, v in top] if top else []
    )
    return entry


def chat_completion(
    platform: Platform, body: Any, model_id: str, garble_rate: float, server_seed: int
) -> dict[str, Any]:
    """Answer one ``POST /v1/chat/completions`` body (an OpenAI chat-completion object)."""
    if not isinstance(body, dict):
        raise DataError("The request body must be a JSON object.")
    record = extract_record(body.get("messages"))
    temperature = body.get("temperature", 0.0)
    if temperature is None:
        temperature = 0.0
    if (
        isinstance(temperature, bool)
        or not isinstance(temperature, int | float)
        or not (0.0 <= float(temperature) <= 2.0)
    ):
        raise DataError(f"'temperature' must be a number in [0, 2]. Got {temperature!r}.")
    req_seed = body.get("seed", 0)
    if isinstance(req_seed, bool) or not isinstance(req_seed, int | None):
        raise DataError(f"'seed' must be an integer. Got {req_seed!r}.")
    json_mode = _json_mode(body.get("response_format"))
    want_logprobs = bool(body.get("logprobs", False))
    top_k = body.get("top_logprobs") or 0
    if isinstance(top_k, bool) or not isinstance(top_k, int) or not 0 <= top_k <= 20:
        raise DataError(f"'top_logprobs' must be an integer in [0, 20]. Got {top_k!r}.")

    if "sex" in record:
        pred = platform.audit_predict([record])
        key = record_key(record)
    else:
        pred = platform.user_predict([record])
        key = user_key(record)
    lg = float(pred.logits[0])
    t = float(temperature)
    if t == 0.0:
        p_pos = 1.0 if pred.decisions[0] == 1 else 0.0
        label = POSITIVE_LABEL if pred.decisions[0] == 1 else NEGATIVE_LABEL
    else:
        z = np.clip(lg / t, -700.0, 700.0)
        p_pos = float(1.0 / (1.0 + math.exp(-z)))
        u = hash_uniform(f"{key}|{t!r}|{req_seed}", server_seed, "sample")
        label = POSITIVE_LABEL if u < p_pos else NEGATIVE_LABEL
    # the label's log-probabilities come from the model's (possibly fairwashed) score
    score = float(pred.scores[0])
    lp_pos = math.log(max(score, 1e-300))
    lp_neg = math.log(max(1.0 - score, 1e-300))
    if t > 0.0:
        lp_pos, lp_neg = math.log(max(p_pos, 1e-300)), math.log(max(1.0 - p_pos, 1e-300))
    garbled = garble_rate > 0 and hash_uniform(key, server_seed, "garble") < garble_rate
    content = GARBLED_REPLY if garbled else (json.dumps({"label": label}) if json_mode else label)
    choice: dict[str, Any] = {
        "index": 0,
        "message": {"role": "assistant", "content": content},
        "finish_reason": "stop",
        "logprobs": None,
    }
    if want_logprobs and not garbled:
        lp_label = lp_pos if label == POSITIVE_LABEL else lp_neg
        top = sorted([(POSITIVE_LABEL, lp_pos), (NEGATIVE_LABEL, lp_neg)], key=lambda x: -x[1])
        top = top[: min(top_k, 2)] if top_k else []
        label_entry = _logprob_entry(label, lp_label, top or None)
        if json_mode:
            tokens = [
                _logprob_entry('{"label": "', 0.0, None),
                label_entry,
                _logprob_entry('"}', 0.0, None),
            ]
        else:
            tokens = [label_entry]
        choice["logprobs"] = {"content": tokens}
    prompt_text = json.dumps(body.get("messages"))
    completion_tokens = 1 if not json_mode else 3
    return {
        "id": f"chatcmpl-{hash_uniform(key, server_seed, 'id'):.16f}"[:28].replace(".", ""),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model_id,
        "system_fingerprint": f"fairprobe-{model_id}",
        "choices": [choice],
        "usage": {
            "prompt_tokens": max(1, len(prompt_text) // 4),
            "completion_tokens": completion_tokens,
            "total_tokens": max(1, len(prompt_text) // 4) + completion_tokens,
        },
    }
