"""An OpenAI-compatible chat-completions endpoint used as a zero-shot classifier.

Works with vLLM, hosted APIs and the fairprobe platform server. Each input becomes one request::

    POST {base_url}/chat/completions
    {"model": ..., "messages": [{"role": "system", ...}?, {"role": "user",
     "content": prompt_template.format(**record, record_json=<record as JSON>)}],
     "temperature": 0, "seed": 0, "max_tokens": 16,
     "response_format": {"type": "json_schema", ...}?   # structured_output = true
     "logprobs": true, "top_logprobs": k?}               # logprobs = true

Decoding is deterministic by default (temperature 0, fixed seed), as in the collaborative-auditing
paper (Appendix C: greedy decoding, fixed seed, at most 16 new tokens, structured outputs restricting
the answer to the label set). The answer text is parsed into one of ``labels`` by
:func:`parse_label`; the decision is 1 when that label is one of ``positive_labels``. An answer that
cannot be parsed has decision ``None``: BlackBox drops and counts it (the paper dropped 4 of
182,176 Civil Comments answers).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import string
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from fairprobe.access.base import Answer, Backend, Record
from fairprobe.access.config import BackendConfig, register_backend
from fairprobe.access.http import HttpBackend, HttpTransport
from fairprobe.errors import AccessError, AnswerParseError, ConfigError, DataError

__all__ = [
    "OpenAIChatBackend",
    "OpenAIChatConfig",
    "label_score",
    "parse_label",
]

_STRIP = " \t\r\n\"'`.,;:!*"
_FENCE = re.compile(r"^```[a-zA-Z]*\s*(.*?)\s*```$", re.DOTALL)
_OBJECT = re.compile(r"\{[^{}]*\}", re.DOTALL)


def _match_label(value: str, labels: Sequence[str]) -> str | None:
    v = value.strip(_STRIP).casefold()
    v = " ".join(v.split())
    for lab in labels:
        if " ".join(lab.casefold().split()) == v:
            return lab
    return None


def _from_json(obj: Any, labels: Sequence[str]) -> str | None:
    if isinstance(obj, str):
        return _match_label(obj, labels)
    if isinstance(obj, Mapping):
        if "label" in obj and isinstance(obj["label"], str):
            return _match_label(obj["label"], labels)
        if len(obj) == 1:
            (only,) = obj.values()
            if isinstance(only, str):
                return _match_label(only, labels)
    return None


def _occurrences(text: str, labels: Sequence[str]) -> list[tuple[int, int, str]]:
    low = text.casefold()
    spans: list[tuple[int, int, str]] = []
    for lab in labels:
        needle = lab.casefold()
        start = low.find(needle)
        while start >= 0:
            end = start + len(needle)
            left_ok = not (needle[0].isalnum() and start > 0 and low[start - 1].isalnum())
            right_ok = not (needle[-1].isalnum() and end < len(low) and low[end].isalnum())
            if left_ok and right_ok:
                spans.append((start, end, lab))
            start = low.find(needle, start + 1)
    # an occurrence inside the occurrence of a longer label is part of that label (">50K" in
    # "<=50K")
    return [
        s
        for s in spans
        if not any(
            o != s and o[0] <= s[0] and s[1] <= o[1] and o[1] - o[0] > s[1] - s[0] for o in spans
        )
    ]


def parse_label(text: str | None, labels: Sequence[str]) -> str | None:
    """The label an answer text names, or ``None`` when it names none or several.

    Tried in order: (1) the whole text is a label, ignoring case, surrounding whitespace, quotes
    and punctuation; (2) the text (or a ``{...}`` object inside it, or a fenced code block) is
    JSON: a string label, ``{"label": ...}`` or a one-key object; (3) exactly one label occurs in
    the text as a whole word (occurrences inside a longer label's occurrence do not count).

    Examples
    --------
    >>> labs = [">50K", "<=50K"]
    >>> parse_label(" <=50k. ", labs), parse_label('{"label": ">50K"}', labs)
    ('<=50K', '>50K')
    >>> parse_label("The income is <=50K.", labs), parse_label(">50K or <=50K", labs)
    ('<=50K', None)
    """
    if text is None:
        return None
    lab = _match_label(text, labels)
    if lab is not None:
        return lab
    body = text.strip()
    m = _FENCE.match(body)
    if m:
        body = m.group(1)
    candidates = [body, *(mo.group(0) for mo in _OBJECT.finditer(body))]
    for cand in candidates:
        try:
            obj = json.loads(cand)
        except (json.JSONDecodeError, ValueError):
            continue
        lab = _from_json(obj, labels)
        if lab is not None:
            return lab
    found = {s[2] for s in _occurrences(text, labels)}
    if len(found) == 1:
        return found.pop()
    return None


def label_score(
    content: str,
    label: str,
    token_logprobs: Sequence[Mapping[str, Any]],
    labels: Sequence[str],
    positive: Sequence[str],
) -> tuple[float | None, float | None]:
    """Score and logit of the positive labels from the logprobs of the label's first token.

    At the token where the chosen label starts, every alternative among ``top_logprobs`` that is
    consistent with positive labels only adds its probability to :math:`P_+`, one consistent with
    negative labels only to :math:`P_-` (alternatives consistent with both, or none, are
    ignored). Then ``score`` :math:`= P_+/(P_+ + P_-)` and ``logit`` :math:`= \\log P_+ - \\log
    P_-` (``None`` when one side is 0). This is the usual next-token approximation: it ignores
    labels that only diverge after their first token and alternatives outside the top ``k``.
    """
    if not token_logprobs:
        return None, None
    toks = [str(t.get("token", "")) for t in token_logprobs]
    text = "".join(toks)
    if text != content:
        content = text  # the tokens are the ground truth for offsets
    low = content.casefold()
    spans = [s for s in _occurrences(content, labels) if s[2] == label]
    start = spans[-1][0] if spans else low.rfind(label.casefold())
    if start < 0:
        return None, None
    pos = 0
    idx = None
    for i, t in enumerate(toks):
        if pos <= start < pos + len(t):
            idx = i
            break
        pos += len(t)
    if idx is None:
        return None, None
    pre = content[pos:start].casefold()
    pos_set = {p.casefold() for p in positive}
    p_pos = p_neg = 0.0
    alts = token_logprobs[idx].get("top_logprobs") or [
        {"token": toks[idx], "logprob": token_logprobs[idx].get("logprob", 0.0)}
    ]
    for alt in alts:
        tok = str(alt.get("token", "")).casefold()
        lp = alt.get("logprob")
        if not isinstance(lp, int | float) or not tok.startswith(pre):
            continue
        rest = tok[len(pre) :]
        if not rest:
            continue
        consistent = {
            lab.casefold()
            for lab in labels
            if lab.casefold().startswith(rest) or rest.startswith(lab.casefold())
        }
        if not consistent:
            continue
        if consistent <= pos_set:
            p_pos += math.exp(lp)
        elif not consistent & pos_set:
            p_neg += math.exp(lp)
    if p_pos + p_neg == 0.0:
        return None, None
    score = p_pos / (p_pos + p_neg)
    logit = math.log(p_pos) - math.log(p_neg) if p_pos > 0 and p_neg > 0 else None
    return score, logit


class OpenAIChatConfig(BackendConfig):
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
        ``str.format`` template of the user message over the record's fields, plus
        ``{record_json}`` (the record as JSON). Default: the record as JSON.
    system_prompt : str, optional
    api_key_env : str, optional
        Name of the environment variable holding the API key (sent as a Bearer token; the key
        itself is never stored, logged or part of the cache identity).
    temperature, seed, max_tokens, top_p
        Decoding; deterministic by default (temperature 0, seed 0, 16 tokens).
    structured_output : bool
        Ask for ``{"label": <one of labels>}`` with ``response_format`` ``json_schema`` (vLLM,
        OpenAI and the platform server support it).
    logprobs : bool
        Ask for ``top_logprobs`` and derive a score for the positive labels (:func:`label_score`).
    cache_name : str, optional
        Names the endpoint in the cache identity instead of ``base_url`` (the model, prompt,
        labels and decoding stay in it), so that cached answers survive a move of the server.
    """

    kind: Literal["openai-chat"] = "openai-chat"
    base_url: str
    model: str
    labels: list[str] = Field(min_length=2)
    positive_labels: list[str] = Field(min_length=1)
    prompt_template: str = "{record_json}"
    system_prompt: str | None = None
    api_key_env: str | None = None
    temperature: float = Field(default=0.0, ge=0.0)
    seed: int | None = 0
    max_tokens: int = Field(default=16, ge=1)
    top_p: float | None = Field(default=None, gt=0.0, le=1.0)
    structured_output: bool = False
    logprobs: bool = False
    top_logprobs: int = Field(default=5, ge=1, le=20)
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
        return v.rstrip("/")

    @model_validator(mode="after")
    def _check_labels(self) -> OpenAIChatConfig:
        if len(set(self.labels)) != len(self.labels):
            raise ValueError("labels must be distinct")
        extra = [p for p in self.positive_labels if p not in self.labels]
        if extra:
            raise ValueError(f"positive label(s) {extra} are not in labels {self.labels}")
        if set(self.positive_labels) == set(self.labels):
            raise ValueError("positive_labels must leave at least one negative label")
        try:
            list(string.Formatter().parse(self.prompt_template))
        except ValueError as exc:
            raise ValueError(f"prompt_template is not a valid format string: {exc}") from None
        return self


class OpenAIChatBackend(HttpBackend):
    """An LLM behind an OpenAI-compatible chat-completions API, used as a zero-shot classifier.

    One request per input (``max_batch = 1``); :class:`~fairprobe.access.BlackBox` provides the
    concurrency. Build it from an :class:`OpenAIChatConfig`, keyword arguments or a config file::

        OpenAIChatBackend(base_url="http://127.0.0.1:8765/v1", model="platform-logreg",
                          labels=[">50K", "<=50K"], positive_labels=[">50K"])
    """

    kind = "openai-chat"

    def __init__(self, config: OpenAIChatConfig | None = None, **kwargs: Any) -> None:
        if config is None:
            from fairprobe.access.config import parse_config

            config = parse_config({"kind": self.kind, **kwargs})  # type: ignore[assignment]
        elif kwargs:
            config = OpenAIChatConfig.model_validate({**config.model_dump(), **kwargs})
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
        self._transport = HttpTransport(headers, c.timeout)
        self._fields = [f for _, f, _, _ in string.Formatter().parse(c.prompt_template) if f]
        transport = {"api_key_env", "headers", "timeout", "max_batch"}
        if c.cache_name is not None:
            transport |= {"base_url"}
        ident = json.dumps(c.model_dump(exclude=transport), sort_keys=True, default=str)
        where = c.base_url if c.cache_name is None else c.cache_name
        self._identity = (
            f"openai-chat:{where} model={c.model}"
            f"#{hashlib.sha256(ident.encode()).hexdigest()[:12]}"
        )
        self._positive = set(c.positive_labels)

    def prompt(self, record: Record) -> str:
        """The user message for ``record``."""
        rec_json = json.dumps(dict(record), ensure_ascii=False, separators=(", ", ": "))
        try:
            return self.config.prompt_template.format_map({**record, "record_json": rec_json})
        except KeyError as exc:
            raise DataError(
                f"the prompt template names field {exc.args[0]!r}, which a record lacks; records "
                f"have {sorted(record)}."
            ) from None
        except (IndexError, ValueError, TypeError, AttributeError) as exc:
            raise DataError(f"cannot fill the prompt template: {exc}") from None

    def request_body(self, record: Record) -> dict[str, Any]:
        """The chat-completions request for one record."""
        c = self.config
        messages = []
        if c.system_prompt is not None:
            messages.append({"role": "system", "content": c.system_prompt})
        messages.append({"role": "user", "content": self.prompt(record)})
        body: dict[str, Any] = {
            **c.extra_body,
            "model": c.model,
            "messages": messages,
            "temperature": c.temperature,
            "max_tokens": c.max_tokens,
        }
        if c.seed is not None:
            body["seed"] = c.seed
        if c.top_p is not None:
            body["top_p"] = c.top_p
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
        data = self._transport.request_json("POST", self.url, self.request_body(record))
        return self.parse_response(data)

    def parse_response(self, data: Any) -> Answer:
        """One :class:`Answer` from a chat-completions response body."""
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
        content = message.get("content") if isinstance(message, Mapping) else None
        if content is not None and not isinstance(content, str):
            raise AnswerParseError(
                f"{where}: message content is a {type(content).__name__}, not text."
            )
        label = parse_label(content, self.config.labels)
        if label is None:
            return Answer(None, raw=content)
        score = logit = None
        if self.config.logprobs:
            lp = choice.get("logprobs") if isinstance(choice, Mapping) else None
            toks = lp.get("content") if isinstance(lp, Mapping) else None
            if isinstance(toks, list) and toks and isinstance(content, str):
                score, logit = label_score(
                    content, label, toks, self.config.labels, self.config.positive_labels
                )
        return Answer(int(label in self._positive), score, logit, raw=content)



def _build(cfg: BackendConfig) -> Backend:
    assert isinstance(cfg, OpenAIChatConfig)
    return OpenAIChatBackend(cfg)


register_backend("openai-chat", OpenAIChatConfig, _build)
