"""An OpenAI-compatible chat-completions endpoint used as a zero-shot classifier.

Works with OpenAI, vLLM, Ollama's OpenAI-compatible mode and the fairprobe platform server. Each
input becomes one request::

    POST {base_url}/chat/completions
    {"model": ..., "messages": [{"role": "system", ...}?, {"role": "user",
     "content": prompt_template filled from the record}],
     "temperature": 0, "seed": 0, "max_tokens": 16,        # the defaults; see `omit`
     "max_completion_tokens": n?,                         # instead of max_tokens when set
     "response_format": {"type": "json_schema", ...}?     # structured_output = true
     "logprobs": true, "top_logprobs": k?}                # logprobs = true

Only the parameters the config names are sent: the three defaults (``temperature = 0``, ``seed =
0``, ``max_tokens = 16``: greedy, seeded, at most 16 new tokens, as in the collaborative-auditing
paper, Appendix C) can each be removed with ``omit``, and ``max_completion_tokens`` (what reasoning
models take) replaces ``max_tokens``. Prompt placeholders (:data:`PLACEHOLDERS`): every record
field by name, ``{record}`` (the record as JSON; ``{record_json}`` is the same), and ``{labels}``.

The answer is classified by :func:`fairprobe.access.parsing.classify_answer` into an outcome
(``ok``, ``unparsed``, ``refused``, ``truncated``); the decision is 1 when the label found is one
of ``positive_labels``. Answers that are not ``ok`` have decision ``None``: BlackBox drops them and
counts them per outcome.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import string
import threading
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from fairprobe.access.base import Answer, Backend, Record
from fairprobe.access.config import BackendConfig, register_backend
from fairprobe.access.http import (
    TRANSPORT_KEYS,
    HttpBackend,
    HttpLimitsConfig,
    HttpStatusError,
    HttpTransport,
)
from fairprobe.access.parsing import (
    PARSERS,
    REFUSAL_PATTERNS,
    SCORERS,
    classify_answer,
    label_score,
    parse_label,
)
from fairprobe.errors import AccessError, AnswerParseError, ConfigError, DataError

__all__ = [
    "PLACEHOLDERS",
    "OpenAIChatBackend",
    "OpenAIChatConfig",
    "label_score",
    "parse_label",
]

#: The placeholders a prompt template may use besides the record's own fields.
PLACEHOLDERS: dict[str, str] = {
    "record": "the record as one JSON object",
    "record_json": "the same as {record} (older name)",
    "labels": 'the labels, quoted and joined by "or": ">50K" or "<=50K"',
}

#: Request parameters sent by default (removable with ``omit``).
DEFAULT_PARAMS: tuple[str, ...] = ("temperature", "seed", "max_tokens")

class OpenAIChatConfig(HttpLimitsConfig):
    """Config of :class:`OpenAIChatBackend`.

    Attributes
    ----------
    base_url : str
        Up to ``/v1`` (``http://127.0.0.1:8000/v1``); requests go to ``{base_url}/chat/completions``.
    model : str
    labels : list of str
        The fixed label set (at least two).
    positive_labels : list of str
        The labels counted as a positive decision (a non-empty proper subset of ``labels``).
    prompt_template : str
        ``str.format`` template of the user message over the record's fields and the placeholders
        ``{record}`` (the record as JSON; ``{record_json}`` is the same) and ``{labels}``.
        Default: the record as JSON.
    system_prompt : str, optional
    api_key_env : str, optional
        Name of the environment variable holding the API key (sent as a Bearer token; the key
        itself is never stored, logged or part of the cache identity).
    temperature, seed, max_tokens
        Sent by default (0, 0, 16: deterministic decoding); list a name in ``omit`` to not send it.
    max_completion_tokens : int, optional
        The token limit reasoning models take (it counts reasoning tokens too); when set,
        ``max_tokens`` is not sent unless the config names it as well.
    top_p : float, optional
        Sent when set.
    omit : list of str
        Default parameters not to send (``"temperature"``, ``"seed"``, ``"max_tokens"``), for
        APIs that reject them (reasoning models reject ``temperature`` other than 1).
    structured_output : bool
        Ask for ``{"label": <one of labels>}`` with ``response_format`` ``json_schema`` (vLLM,
        OpenAI and the platform server support it).
    logprobs : bool
        Ask for ``top_logprobs`` and derive a score for the positive labels (``scorer``).
    parser : str
        Label parser (:data:`fairprobe.access.parsing.PARSERS`): ``auto`` (default), ``exact``,
        ``json``, ``search`` or a registered plug-in.
    scorer : str
        Logprob scorer (:data:`fairprobe.access.parsing.SCORERS`): ``sequence`` (default; follows
        multi-token labels) or ``first-token``.
    strip_reasoning : bool
        Look for the label after a ``<think>...</think>`` block (default true).
    refusal_patterns : list of str, optional
        Regular expressions marking an unlabelled answer as a refusal (default
        :data:`fairprobe.access.parsing.REFUSAL_PATTERNS`; ``[]`` for none).
    extra_body : dict
        Further request fields, sent as they are (part of the cache identity).
    cache_name : str, optional
        Names the endpoint in the cache identity instead of ``base_url`` (the model, prompt,
        labels and decoding stay in it), so that cached answers survive a move of the server.
    timeout : float
        Total deadline of one request in seconds (default 60).
    max_response_bytes_per_record, max_rate_limit_pause, proxy_loopback
        Transport limits (:class:`fairprobe.access.http.HttpLimitsConfig`).
    """

    kind: Literal["openai-chat"] = "openai-chat"
    base_url: str
    model: str = Field(min_length=1)
    labels: list[str] = Field(min_length=2)
    positive_labels: list[str] = Field(min_length=1)
    prompt_template: str = "{record}"
    system_prompt: str | None = None
    api_key_env: str | None = None
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    seed: int = 0
    max_tokens: int = Field(default=16, ge=1)
    max_completion_tokens: int | None = Field(default=None, ge=1)
    top_p: float | None = Field(default=None, gt=0.0, le=1.0)
    omit: list[Literal["temperature", "seed", "max_tokens"]] = []
    structured_output: bool = False
    logprobs: bool = False
    top_logprobs: int = Field(default=5, ge=1, le=20)
    parser: str = "auto"
    scorer: str = "sequence"
    strip_reasoning: bool = True
    refusal_patterns: list[str] | None = None
    extra_body: dict[str, Any] = {}
    headers: dict[str, str] = {}
    cache_name: str | None = None
    max_batch: int = Field(default=1, ge=1)
    timeout: float = Field(default=60.0, gt=0.0)

    @field_validator("base_url")
    @classmethod
    def _check_url(cls, v: str) -> str:
        if not v.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://")
        v = v.rstrip("/")
        if v.endswith("/chat/completions"):
            raise ValueError(
                f"give the base URL without /chat/completions: {v[: -len('/chat/completions')]!r}"
            )
        return v

    @field_validator("parser", "scorer")
    @classmethod
    def _check_choice(cls, v: str, info: ValidationInfo) -> str:
        choices = PARSERS if info.field_name == "parser" else SCORERS
        if v not in choices:
            raise ValueError(f"unknown {info.field_name} {v!r}; choose one of {sorted(choices)}")
        return v

    @field_validator("refusal_patterns")
    @classmethod
    def _check_patterns(cls, v: list[str] | None) -> list[str] | None:
        for pat in v or []:
            try:
                re.compile(pat)
            except re.error as exc:
                raise ValueError(f"refusal pattern {pat!r} is not a regular expression: {exc}") from None
        return v

    @model_validator(mode="after")
    def _check_labels(self) -> OpenAIChatConfig:
        if len(set(self.labels)) != len(self.labels):
            raise ValueError("labels must be distinct")
        if any(not lab.strip() for lab in self.labels):
            raise ValueError("labels must not be empty")
        extra = [p for p in self.positive_labels if p not in self.labels]
        if extra:
            raise ValueError(f"positive label(s) {extra} are not in labels {self.labels}")
        if set(self.positive_labels) == set(self.labels):
            raise ValueError("positive_labels must leave at least one negative label")
        try:
            list(string.Formatter().parse(self.prompt_template))
        except ValueError as exc:
            raise ValueError(f"prompt_template is not a valid format string: {exc}") from None
        clash = sorted(set(self.extra_body) & {"model", "messages"})
        if clash:
            raise ValueError(f"extra_body must not set {clash}; they come from the config")
        if self.max_completion_tokens is not None and "max_tokens" in self.model_fields_set:
            if "max_tokens" not in self.omit:
                raise ValueError("set one of max_tokens and max_completion_tokens, not both")
        return self

    def sent_params(self) -> dict[str, Any]:
        """The decoding parameters a request carries (after ``omit`` and defaults)."""
        out: dict[str, Any] = {}
        use_max_tokens = self.max_completion_tokens is None or "max_tokens" in self.model_fields_set
        for name in DEFAULT_PARAMS:
            if name in self.omit or (name == "max_tokens" and not use_max_tokens):
                continue
            out[name] = getattr(self, name)
        if self.max_completion_tokens is not None:
            out["max_completion_tokens"] = self.max_completion_tokens
        if self.top_p is not None:
            out["top_p"] = self.top_p
        return out


def _labels_text(labels: Sequence[str]) -> str:
    quoted = [json.dumps(lab, ensure_ascii=False) for lab in labels]
    return ", ".join(quoted[:-1]) + " or " + quoted[-1]


class OpenAIChatBackend(HttpBackend):
    """An LLM behind an OpenAI-compatible chat-completions API, used as a zero-shot classifier.

    One request per input (``max_batch = 1``); :class:`~fairprobe.access.BlackBox` provides the
    concurrency. Build it from an :class:`OpenAIChatConfig`, keyword arguments or a config file::

        OpenAIChatBackend(base_url="http://127.0.0.1:8765/v1", model="platform-logreg",
                          labels=[">50K", "<=50K"], positive_labels=[">50K"])

    :attr:`usage` adds up the ``usage`` token counts the server reported for the requests this
    object paid (cached answers cost nothing).
    """

    kind = "openai-chat"

    def __init__(self, config: OpenAIChatConfig | None = None, **kwargs: Any) -> None:
        config = self._config_of(config, kwargs, revalidate=True)
        assert isinstance(config, OpenAIChatConfig)
        c = config
        self.config = c
        self.max_batch = c.max_batch
        self.url = c.base_url + "/chat/completions"
        headers = dict(c.headers)
        if c.api_key_env is not None:
            key = os.environ.get(c.api_key_env)
            if not key:
                raise ConfigError(f"environment variable {c.api_key_env} (the API key) is not set.")
            headers["Authorization"] = f"Bearer {key}"
        self._transport = HttpTransport(
            headers, c.timeout, base_url=self.url,
            max_response_bytes_per_record=c.max_response_bytes_per_record,
            max_rate_limit_pause=c.max_rate_limit_pause, proxy_loopback=c.proxy_loopback)
        transport = {"api_key_env", *TRANSPORT_KEYS}
        if c.cache_name is not None:
            transport |= {"base_url"}
        ident_d = c.model_dump(exclude=transport)
        # options added after the first release stay out of the identity at their defaults, so
        # that answers cached by earlier versions remain valid for the same requests
        for name, default in (("max_completion_tokens", None), ("omit", []), ("parser", "auto"),
                              ("scorer", "sequence"), ("strip_reasoning", True),
                              ("refusal_patterns", None)):
            if ident_d[name] == default:
                ident_d.pop(name)
        if ident_d["prompt_template"] == "{record}":  # the same prompt as "{record_json}"
            ident_d["prompt_template"] = "{record_json}"
        ident = json.dumps(ident_d, sort_keys=True, default=str)
        where = c.base_url if c.cache_name is None else c.cache_name
        self._identity = (
            f"openai-chat:{where} model={c.model}"
            f"#{hashlib.sha256(ident.encode()).hexdigest()[:12]}"
        )
        self._positive = set(c.positive_labels)
        self._patterns = tuple(REFUSAL_PATTERNS if c.refusal_patterns is None
                               else c.refusal_patterns)
        self._labels_text = _labels_text(c.labels)
        self._usage_lock = threading.Lock()
        self.usage: dict[str, int] = {
            "requests": 0, "prompt_tokens": 0, "completion_tokens": 0, "reasoning_tokens": 0,
        }

    def provenance_info(self) -> dict[str, Any]:
        """The ``llm`` block of the provenance: the prompt, what each request sends (exactly, after
        ``omit`` and defaults), how answers are read, and the tokens paid so far."""
        c = self.config
        llm: dict[str, Any] = {
            "model": c.model,
            "prompt_template": c.prompt_template,
            "system_prompt": c.system_prompt,
            "labels": list(c.labels),
            "positive_labels": list(c.positive_labels),
            "sent": c.sent_params(),
            "structured_output": c.structured_output,
            "logprobs": c.logprobs,
            "parser": c.parser,
            "scorer": c.scorer if c.logprobs else None,
            "strip_reasoning": c.strip_reasoning,
            "extra_body": dict(c.extra_body),
        }
        if c.logprobs:
            llm["top_logprobs"] = c.top_logprobs
        with self._usage_lock:
            usage = dict(self.usage)
        return {"llm": {k: v for k, v in llm.items() if v is not None}, "usage": usage}

    def prompt(self, record: Record) -> str:
        """The user message for ``record``."""
        rec_json = json.dumps(dict(record), ensure_ascii=False, separators=(", ", ": "))
        values = {**record, "record": rec_json, "record_json": rec_json,
                  "labels": self._labels_text}
        try:
            return self.config.prompt_template.format_map(values)
        except KeyError as exc:
            raise DataError(
                f"the prompt template names field {exc.args[0]!r}, which a record lacks; records "
                f"have {sorted(record)} (and the placeholders {sorted(PLACEHOLDERS)})."
            ) from None
        except (IndexError, ValueError, TypeError, AttributeError) as exc:
            raise DataError(f"cannot fill the prompt template: {exc}") from None

    def request_body(self, record: Record) -> dict[str, Any]:
        """The chat-completions request for one record: exactly what is sent."""
        c = self.config
        messages = []
        if c.system_prompt is not None:
            messages.append({"role": "system", "content": c.system_prompt})
        messages.append({"role": "user", "content": self.prompt(record)})
        body: dict[str, Any] = {
            **c.extra_body,
            "model": c.model,
            "messages": messages,
            **c.sent_params(),
        }
        if c.structured_output:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {
                    "name": "classification",
                    "strict": True,
                    "schema": {
                        "type": "object",
                        "properties": {"label": {"type": "string", "enum": list(c.labels)}},
                        "required": ["label"],
                        "additionalProperties": False,
                    },
                },
            }
        if c.logprobs:
            body["logprobs"] = True
            body["top_logprobs"] = c.top_logprobs
        return body

    def ask(self, records: Sequence[Record]) -> list[Answer]:
        return [self._ask_one(r) for r in records]

    def _ask_one(self, record: Record) -> Answer:
        try:
            data = self._transport.request_json("POST", self.url, self.request_body(record), 1)
        except HttpStatusError as exc:
            if exc.status == 404 and not self.config.base_url.endswith("/v1"):
                raise AccessError(
                    f"{exc} -- OpenAI-compatible servers (OpenAI, vLLM, Ollama) serve "
                    f"/v1/chat/completions: try base_url = \"{self.config.base_url}/v1\"."
                ) from None
            raise
        return self.parse_response(data)

    def _count_usage(self, data: Mapping[str, Any]) -> None:
        u = data.get("usage")
        if not isinstance(u, Mapping):
            with self._usage_lock:
                self.usage["requests"] += 1
            return
        det = u.get("completion_tokens_details")
        reasoning = det.get("reasoning_tokens") if isinstance(det, Mapping) else None
        with self._usage_lock:
            self.usage["requests"] += 1
            for name, v in (("prompt_tokens", u.get("prompt_tokens")),
                            ("completion_tokens", u.get("completion_tokens")),
                            ("reasoning_tokens", reasoning)):
                if isinstance(v, int) and not isinstance(v, bool) and v >= 0:
                    self.usage[name] += v

    def parse_response(self, data: Any) -> Answer:
        """One :class:`Answer` (with its outcome) from a chat-completions response body."""
        where = f"POST {self.url}"
        if isinstance(data, Mapping) and "error" in data and "choices" not in data:
            err = data["error"]
            msg = err.get("message", err) if isinstance(err, Mapping) else err
            raise AccessError(f"{where} answered with an error: {msg}")
        try:
            choice = data["choices"][0]
            message = choice["message"]
        except (KeyError, IndexError, TypeError):
            raise AnswerParseError(
                f"{where} answered without choices[0].message; is it a chat-completions API?"
            ) from None
        if not isinstance(message, Mapping):
            raise AnswerParseError(f"{where}: choices[0].message is not an object.")
        self._count_usage(data)
        content = message.get("content")
        if content is not None and not isinstance(content, str):
            raise AnswerParseError(
                f"{where}: message content is a {type(content).__name__}, not text."
            )
        refusal = message.get("refusal")
        finish = choice.get("finish_reason") if isinstance(choice, Mapping) else None
        c = self.config
        parsed = classify_answer(
            content,
            c.labels,
            parser=c.parser,
            finish_reason=finish if isinstance(finish, str) else None,
            refusal=refusal if isinstance(refusal, str) else None,
            refusal_patterns=self._patterns,
            strip_reasoning=c.strip_reasoning,
        )
        raw = content if content is not None else (refusal if isinstance(refusal, str) else None)
        if parsed.label is None:
            return Answer(None, raw=raw, outcome=parsed.outcome)
        label = parsed.label
        score = logit = None
        if c.logprobs:
            lp = choice.get("logprobs")
            toks = lp.get("content") if isinstance(lp, Mapping) else None
            if isinstance(toks, list) and toks and isinstance(content, str):
                try:
                    score, logit = SCORERS.create(
                        c.scorer, content, label, toks, c.labels, c.positive_labels
                    )
                except (TypeError, AttributeError, ValueError, OverflowError):
                    raise AnswerParseError(f"{where}: malformed logprobs.") from None
        return Answer(int(label in self._positive), score, logit, raw=raw, outcome="ok")


def _build(cfg: BackendConfig) -> Backend:
    assert isinstance(cfg, OpenAIChatConfig)
    return OpenAIChatBackend(cfg)


register_backend("openai-chat", OpenAIChatConfig, _build)
