"""The platform as an HTTP service (FastAPI + uvicorn). See ``docs/platform.md`` for the contract.

Endpoints: ``GET /health``, ``GET /schema``, ``POST /audit/predict`` (audit API, may be
fairwashed), ``POST /user/predict`` (user interface, truthful, sex inferred from the first name),
``GET /v1/models`` and ``POST /v1/chat/completions`` (OpenAI-compatible shape).

Bad bodies get HTTP 400 (not JSON) or 422 (JSON of the wrong shape) with ``{"detail": "<one
line>"}`` (the ``/v1`` endpoints answer in OpenAI's ``{"error": {...}}`` shape instead); bodies
above ``max_body_bytes`` get 413, declared or streamed; a request whose headers or body do not
arrive within ``header_timeout`` / ``body_timeout`` seconds is dropped (408 for a slow body).
A 500 never echoes exception text. Parsing and model calls run in worker threads, so that no
request holds the event loop (``/health`` answers while a large body is processed).
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect

from fairprobe._validation import check_choice, check_int, check_real
from fairprobe.errors import ConfigError, DataError
from fairprobe.platform.core import (
    EXAMPLE_AUDIT_RECORD,
    EXAMPLE_USER_RECORD,
    NAME_LETTER_PATTERN,
    USER_FEATURES,
    Platform,
)
from fairprobe.platform.fairwash import FairwashConfig
from fairprobe.platform.llm import (
    LABEL_JSON_SCHEMA,
    LABELS,
    POSITIVE_LABEL,
    PROMPT_TEMPLATE,
    ChatError,
    LlmBehaviour,
    chat_chunks,
    chat_completion,
    fill_prompt,
    models_list,
    openai_error,
)
from fairprobe.platform.model import AUDIT_FEATURES, CATEGORIES, NUMERIC_FEATURES, PlatformModel
from fairprobe.platform.netutil import bind_socket, check_host, header_timeout_protocol

__all__ = ["ServerConfig", "bind_socket", "check_host", "create_app", "serve"]

DEFAULT_PORT = 8765
REASONING_STYLES = ("none", "think", "field")

log = logging.getLogger("fairprobe.platform")


@dataclass(frozen=True)
class ServerConfig:
    """Everything ``fairprobe platform serve`` accepts."""

    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    fairwash: FairwashConfig = field(default_factory=FairwashConfig)
    seed: int = 0
    model_file: str | None = None
    allow_pickle: bool = False
    fail_rate: float = 0.0
    delay_ms: float = 0.0
    llm_garble_rate: float = 0.0
    llm_refuse_rate: float = 0.0
    llm_reasoning: str = "none"
    header_timeout: float = 10.0
    body_timeout: float = 30.0
    max_body_bytes: int = 8 * 1024 * 1024
    max_instances: int = 10_000
    allow_external: bool = False
    instance_token: str | None = None

    def __post_init__(self) -> None:
        owner = "platform serve"
        check_int(self.port, "port", owner, lo=0, hi=65535)
        check_int(self.seed, "seed", owner, lo=0)
        check_real(self.fail_rate, "fail_rate", owner, lo=0, hi=1, closed="left")
        check_real(self.delay_ms, "delay_ms", owner, lo=0)
        check_real(self.llm_garble_rate, "llm_garble_rate", owner, lo=0, hi=1)
        check_real(self.llm_refuse_rate, "llm_refuse_rate", owner, lo=0, hi=1)
        check_choice(self.llm_reasoning, "llm_reasoning", owner, list(REASONING_STYLES))
        check_real(self.header_timeout, "header_timeout", owner, lo=0, closed="neither")
        check_real(self.body_timeout, "body_timeout", owner, lo=0, closed="neither")
        check_int(self.max_body_bytes, "max_body_bytes", owner, lo=1024)
        check_int(self.max_instances, "max_instances", owner, lo=1)
        check_host(self.host, self.allow_external)


def _error_body(path: str, status: int, message: str) -> bytes:
    if path.startswith("/v1/"):
        return json.dumps(openai_error(status, message)).encode()
    return json.dumps({"detail": message}).encode()


class _Guard:
    """ASGI middleware bounding the request body in size and time.

    A body above ``limit`` bytes (declared in ``Content-Length`` or streamed in chunks) gets 413,
    a body not received in full within ``timeout`` seconds of its first read 408 (a deadline for
    the whole body, so a client trickling one byte at a time cannot hold a connection either); the middleware answers itself
    and tells the application the client left, so the application's own reply (if any) is
    dropped instead of turning into a 500.
    """

    def __init__(self, app: Any, limit: int, timeout: float) -> None:
        self.app = app
        self.limit = limit
        self.timeout = timeout

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = str(scope.get("path", ""))
        for name, value in scope.get("headers", []):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    declared = -1
                if declared > self.limit:
                    await _raw_error(
                        send, 413, _error_body(path, 413, f"Request body above {self.limit} bytes.")
                    )
                    return
        seen = 0
        answered = False
        deadline: float | None = None

        async def guarded_receive() -> Any:
            nonlocal seen, answered, deadline
            if answered:
                return {"type": "http.disconnect"}
            loop = asyncio.get_running_loop()
            if deadline is None:
                deadline = loop.time() + self.timeout
            try:
                message = await asyncio.wait_for(receive(), max(0.0, deadline - loop.time()))
            except TimeoutError:
                answered = True
                await _raw_error(send, 408, _error_body(
                    path, 408, f"Request body not received within {self.timeout:g} s."))
                return {"type": "http.disconnect"}
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    answered = True
                    await _raw_error(send, 413, _error_body(
                        path, 413, f"Request body above {self.limit} bytes."))
                    return {"type": "http.disconnect"}
            return message

        async def guarded_send(message: Any) -> None:
            if not answered:
                await send(message)

        await self.app(scope, guarded_receive, guarded_send)


async def _raw_error(send: Any, status: int, body: bytes) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"connection", b"close")],
        }
    )
    await send({"type": "http.response.body", "body": body})




def _schema(cfg: ServerConfig, model_id: str) -> dict[str, Any]:
    types = {f: ("number" if f in NUMERIC_FEATURES else "string") for f in AUDIT_FEATURES}
    return {
        "model": model_id,
        "max_instances": cfg.max_instances,
        "max_body_bytes": cfg.max_body_bytes,
        "audit": {
            "endpoint": "/audit/predict",
            "features": list(AUDIT_FEATURES),
            "types": types,
            "categories": {k: list(v) for k, v in CATEGORIES.items()},
            "protected": "sex",
            "privileged": "Male",
            "example": EXAMPLE_AUDIT_RECORD,
        },
        "user": {
            "endpoint": "/user/predict",
            "features": list(USER_FEATURES),
            "types": {f: types.get(f, "string") for f in USER_FEATURES},
            "categories": {"race": list(CATEGORIES["race"])},
            "example": EXAMPLE_USER_RECORD,
        },
        "llm": {
            "endpoint": "/v1/chat/completions",
            "labels": list(LABELS),
            "positive_label": POSITIVE_LABEL,
            "prompt_template": PROMPT_TEMPLATE,
            "placeholders": {
                "record": "the record as one JSON object",
                "labels": 'the labels, quoted and joined by "or"',
            },
            "reasoning": cfg.llm_reasoning,
            "token_limit": "max_completion_tokens" if cfg.llm_reasoning != "none"
            else "max_tokens or max_completion_tokens",
            "json_schema": LABEL_JSON_SCHEMA,
            "example": fill_prompt(EXAMPLE_AUDIT_RECORD),
        },
        "response": {"predictions": [{"decision": "0|1", "score": "[0,1]", "logit": "float"}]},
    }


def _record_schema(features: tuple[str, ...]) -> dict[str, Any]:
    props: dict[str, Any] = {}
    for f in features:
        if f in NUMERIC_FEATURES:
            props[f] = {"type": "number"}
        elif f in CATEGORIES:
            props[f] = {"type": "string", "enum": list(CATEGORIES[f])}
        else:  # first_name: a string with a letter of any script (unanchored pattern)
            props[f] = {"type": "string", "pattern": NAME_LETTER_PATTERN}
    return {"type": "object", "required": list(features), "properties": props}


def _json_body(schema: dict[str, Any]) -> dict[str, Any]:
    return {"required": True, "content": {"application/json": {"schema": schema}}}


def _instances_body(features: tuple[str, ...]) -> dict[str, Any]:
    return _json_body({
        "type": "object",
        "required": ["instances"],
        "properties": {"instances": {"type": "array", "minItems": 1,
                                     "items": _record_schema(features)}},
    })


_DETAIL = {"type": "object", "required": ["detail"], "properties": {"detail": {"type": "string"}}}
_OAI_ERROR = {"type": "object", "required": ["error"], "properties": {"error": {
    "type": "object", "required": ["message", "type", "param", "code"],
    "properties": {"message": {"type": "string"}, "type": {"type": "string"},
                   "param": {"type": ["string", "null"]}, "code": {"type": ["string", "null"]}}}}}
_WHY = {400: "The body is not JSON, is nested too deeply, or (OpenAI API) is malformed.",
        404: "Unknown model.",
        408: "The body did not arrive within the body timeout.",
        413: "The body is larger than --max-body-bytes.",
        422: "The body has the wrong shape, a NaN, an unknown category or too many instances.",
        429: "Injected rate limit (--fail-rate); retry after Retry-After.",
        503: "Injected unavailability (--fail-rate); retry."}


def _errors(*codes: int, openai: bool = False) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` for the error statuses an operation can answer, with their body."""
    schema = _OAI_ERROR if openai else _DETAIL
    return {c: {"description": _WHY[c], "content": {"application/json": {"schema": schema}}}
            for c in codes}


_NUMBER_RE = r"-?(?:0|[1-9][0-9]{0,5})(?:\.[0-9]{1,3})?"


def _record_pattern(features: tuple[str, ...]) -> str:
    """A regular expression of a chat message carrying one record of ``features`` as JSON (the
    documented prompt shape: some text, the record, some text)."""
    import re

    def _lit(text: str) -> str:  # a literal; '-' needs no escape outside a class (ECMA regex)
        return re.escape(text).replace("\\-", "-")

    parts = []
    for f in features:
        if f in NUMERIC_FEATURES:
            value = _NUMBER_RE
        elif f in CATEGORIES:
            value = '"(?:' + "|".join(_lit(c) for c in CATEGORIES[f]) + ')"'
        else:
            value = '"[A-Za-z]{1,20}"'
        parts.append(f'"{_lit(f)}": {value}')
    text = r"[A-Za-z0-9 .,:;!?'-]{0,60}"
    return f"^{text}\\{{{', '.join(parts)}\\}}{text}$"


def _chat_body(model_id: str, reasoning: bool = False) -> dict[str, Any]:
    """The request schema of ``/v1/chat/completions``: exactly what the endpoint answers with a
    200 (schemathesis checks that a schema-valid request is not refused). The last user message
    carries the record as a JSON object (user-interface fields, or audit fields with ``sex``)."""
    patterns = [_record_pattern(USER_FEATURES), _record_pattern(tuple(AUDIT_FEATURES))]
    record_text = {"type": "string", "anyOf": [{"pattern": p} for p in patterns]}
    one_part = {"type": "array", "minItems": 1, "maxItems": 1, "items": {
        "type": "object", "required": ["type", "text"],
        "properties": {"type": {"const": "text"}, "text": record_text}}}
    parts = {"type": "array", "items": {
        "type": "object", "required": ["type", "text"],
        "properties": {"type": {"const": "text"}, "text": {"type": "string"}}}}
    other = {
        "type": "object",
        "required": ["role", "content"],
        "properties": {"role": {"type": "string", "enum": ["system", "developer", "assistant"]},
                       "content": {"anyOf": [{"type": "string"}, parts]}},
    }
    user = {
        "type": "object",
        "required": ["role", "content"],
        "properties": {"role": {"type": "string", "enum": ["user"]},
                       "content": {"anyOf": [record_text, one_part]}},
    }
    def opt(schema: dict[str, Any]) -> dict[str, Any]:  # null means "not given"
        return {**schema, "type": [schema["type"], "null"]}

    integer = {"type": "integer"}
    props: dict[str, Any] = {
        "model": {"type": "string", "enum": [model_id]},
        # every user message carries a record: the last one is read
        "messages": {"type": "array", "minItems": 1,
                     "items": {"anyOf": [other, user]},
                     "contains": {"type": "object", "properties": {"role": {"enum": ["user"]}},
                                  "required": ["role"]}},
        "temperature": opt({"type": "number", "minimum": 0, "maximum": 2}),
        "top_p": opt({"type": "number", "exclusiveMinimum": 0, "maximum": 1}),
        "seed": opt({"type": "integer", "minimum": -(2**63), "maximum": 2**63 - 1}),
        "n": opt({"type": "integer", "minimum": 1, "maximum": 128}),
        "max_completion_tokens": opt({"type": "integer", "minimum": 1, "maximum": 2**31 - 1}),
        "logprobs": opt({"type": "boolean"}),
        "top_logprobs": opt({"type": "integer", "minimum": 0, "maximum": 20}),
        "stream": opt({"type": "boolean"}),
        "stream_options": opt({"type": "object"}),
        "response_format": opt({"type": "object", "required": ["type"], "properties": {
            "type": {"type": "string", "enum": ["text", "json_object", "json_schema"]}}}),
    }
    rules: list[dict[str, Any]] = [
        {"if": {"required": ["top_logprobs"],
                "properties": {"top_logprobs": {**integer, "minimum": 1}}},
         "then": {"required": ["logprobs"], "properties": {"logprobs": {"const": True}}}},
        {"if": {"required": ["stream_options"],
                "properties": {"stream_options": {"type": "object"}}},
         "then": {"required": ["stream"], "properties": {"stream": {"const": True}}}},
    ]
    if reasoning:  # reasoning models take max_completion_tokens only, like OpenAI's
        props["max_tokens"] = {"type": "null"}
    else:
        props["max_tokens"] = opt({"type": "integer", "minimum": 1, "maximum": 2**31 - 1})
        rules.append({"not": {"required": ["max_tokens", "max_completion_tokens"],
                              "properties": {"max_tokens": integer,
                                             "max_completion_tokens": integer}}})
    return _json_body({"type": "object", "required": ["model", "messages"],
                       "properties": props, "allOf": rules})


def create_app(cfg: ServerConfig, model: PlatformModel) -> Any:
    """The FastAPI application serving ``model`` under ``cfg``."""
    platform = Platform(model=model, fairwash=cfg.fairwash, seed=cfg.seed)
    fail_rng = np.random.default_rng(np.random.SeedSequence([cfg.seed, 0xFA11]))
    fail_lock = threading.Lock()
    behaviour = LlmBehaviour(cfg.llm_garble_rate, cfg.llm_refuse_rate, cfg.llm_reasoning)
    app = FastAPI(title="fairprobe platform", docs_url=None, redoc_url=None)

    def error(status: int, detail: str) -> JSONResponse:
        return JSONResponse({"detail": detail}, status_code=status)

    def oai_error(status: int, message: str, param: str | None = None,
                  code: str | None = None) -> JSONResponse:
        return JSONResponse(openai_error(status, message, param, code), status_code=status)

    async def prelude(request: Request, openai: bool = False) -> tuple[Any, JSONResponse | None]:
        def fail(status: int, msg: str, code: str | None = None) -> JSONResponse:
            return oai_error(status, msg, None, code) if openai else error(status, msg)

        if cfg.delay_ms > 0:
            await asyncio.sleep(cfg.delay_ms / 1000.0)
        if cfg.fail_rate > 0:
            with fail_lock:
                u, which = fail_rng.random(), fail_rng.random()
            if u < cfg.fail_rate:
                if which < 0.5:
                    resp = fail(429, "Too many requests (injected); retry later.",
                                "rate_limit_exceeded")
                    resp.headers["Retry-After"] = "0"
                    return None, resp
                return None, fail(503, "Service unavailable (injected); retry later.")
        raw = await request.body()
        try:
            # large bodies are decoded off the event loop
            body = json.loads(raw) if len(raw) < 65536 else await run_in_threadpool(json.loads, raw)
        except (ValueError, RecursionError):  # JSONDecodeError and UnicodeDecodeError included
            return None, fail(400, "The request body is not valid JSON (or nested too deeply).")
        return body, None

    def instances_of(body: Any) -> Any:
        if not isinstance(body, dict) or "instances" not in body:
            raise DataError('The body must be a JSON object {"instances": [...]}.')
        inst = body["instances"]
        if isinstance(inst, list) and len(inst) > cfg.max_instances:
            raise DataError(
                f"Too many instances ({len(inst)}); send at most {cfg.max_instances} per request."
            )
        return inst

    @app.get("/health")
    async def health() -> dict[str, Any]:
        out: dict[str, Any] = {
            "status": "ok",
            "model": model.model_id,
            "fairwash": cfg.fairwash.to_dict(),
        }
        if cfg.instance_token is not None:
            out["instance"] = cfg.instance_token
        return out

    @app.get("/schema")
    async def schema() -> dict[str, Any]:
        return _schema(cfg, model.model_id)

    def predict(body: Any, user: bool) -> Any:
        inst = instances_of(body)
        pred = platform.user_predict(inst) if user else platform.audit_predict(inst)
        return {"predictions": pred.to_json()}

    async def answer(request: Request, user: bool) -> Any:
        """Both predict routes: the checked body, the model's answers (or one error)."""
        body, err = await prelude(request)
        if err is not None:
            return err
        try:
            return await run_in_threadpool(predict, body, user)
        except DataError as exc:
            return error(422, str(exc))

    @app.post("/audit/predict", responses=_errors(400, 408, 413, 422, 429, 503),
              openapi_extra={"requestBody": _instances_body(tuple(AUDIT_FEATURES))})
    async def audit_predict(request: Request) -> Any:
        return await answer(request, False)

    @app.post("/user/predict", responses=_errors(400, 408, 413, 422, 429, 503),
              openapi_extra={"requestBody": _instances_body(USER_FEATURES)})
    async def user_predict(request: Request) -> Any:
        return await answer(request, True)

    @app.get("/v1/models")
    async def v1_models() -> dict[str, Any]:
        return models_list(model.model_id)

    @app.get("/v1/models/{model_name:path}", responses=_errors(404, openai=True))
    async def v1_model(model_name: str) -> Any:
        if model_name != model.model_id:
            return oai_error(404, f"The model '{model_name[:80]}' does not exist.", "model",
                             "model_not_found")
        return models_list(model.model_id)["data"][0]

    @app.post("/v1/chat/completions",
              responses={200: {"description": "A chat completion (a stream of server-sent "
                                                "events with stream=true).",
                               "content": {"application/json": {"schema": {"type": "object"}},
                                           "text/event-stream": {"schema": {}}}},
                         **_errors(400, 404, 408, 413, 422, 429, 503, openai=True)},
              openapi_extra={"requestBody": _chat_body(model.model_id,
                                                       cfg.llm_reasoning != "none")})
    async def v1_chat(request: Request) -> Any:
        body, err = await prelude(request, openai=True)
        if err is not None:
            return err
        try:
            out = await run_in_threadpool(
                chat_completion, platform, body, model.model_id, behaviour, cfg.seed
            )
        except ChatError as exc:
            return oai_error(exc.status, exc.message, exc.param, exc.code)
        if body.get("stream"):
            opts = body.get("stream_options") or {}
            return StreamingResponse(
                chat_chunks(out, bool(opts.get("include_usage"))),
                media_type="text/event-stream",
                headers={"cache-control": "no-cache"},
            )
        return out

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        # routing errors (unknown path, wrong method) in the shape of the API they hit
        msg = str(exc.detail)[:200]
        if request.url.path.startswith("/v1/"):
            resp = oai_error(exc.status_code, msg)
        else:
            resp = error(exc.status_code, msg)
        for k, v in (exc.headers or {}).items():
            resp.headers[k] = v
        return resp

    @app.exception_handler(ClientDisconnect)
    async def client_left(request: Request, exc: ClientDisconnect) -> Response:
        # a client that closes mid-body is not a server fault: one log line, no traceback (a
        # handler of this class runs in the exception middleware, which does not re-raise)
        log.info("client disconnected before its body ended on %s %s", request.method,
                 request.url.path)
        return Response(status_code=400)

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        # the exception text stays in the server log: it may echo request content
        log.error("internal error on %s %s", request.method, request.url.path, exc_info=exc)
        if request.url.path.startswith("/v1/"):
            return oai_error(500, "Internal server error.")
        return error(500, "Internal server error.")

    return _Guard(app, cfg.max_body_bytes, cfg.body_timeout)


def load_platform_model(cfg: ServerConfig) -> PlatformModel:
    """The model ``cfg`` asks for: a model file, or the default logistic regression."""
    model = (
        PlatformModel.from_file(cfg.model_file, allow_pickle=cfg.allow_pickle)
        if cfg.model_file
        else PlatformModel.default()
    )
    # warm-up: imports what the first request needs, and checks a model file fits the schema
    try:
        Platform(model).audit_predict([EXAMPLE_AUDIT_RECORD])
    except DataError as exc:
        raise ConfigError(f"The model {model.model_id} fails on the example record: {exc}") from exc
    return model


def serve(cfg: ServerConfig, *, log_level: str = "warning") -> None:
    """Bind the port (PortInUseError if taken), build the model, and serve until interrupted."""
    import uvicorn

    sock = bind_socket(cfg.host, cfg.port)  # bind first: a taken port fails fast and clearly
    try:
        model = load_platform_model(cfg)
        app = create_app(cfg, model)
        config = uvicorn.Config(
            app,
            log_level=log_level,
            access_log=False,
            timeout_graceful_shutdown=2,
            http=header_timeout_protocol(cfg.header_timeout),
        )
        server = uvicorn.Server(config)
        host, port = sock.getsockname()[:2]
        shown = f"[{host}]" if ":" in host else host
        fw = cfg.fairwash
        lie = "none" if fw.mode == "none" else f"{fw.mode}, gamma={fw.gamma:g}, {fw.select}"
        sys.stderr.write(
            f"fairprobe platform: model {model.model_id} on http://{shown}:{port} "
            f"(audit API fairwash: {lie}); Ctrl-C to stop\n"
        )
        sys.stderr.flush()
        server.run(sockets=[sock])
    finally:
        sock.close()
