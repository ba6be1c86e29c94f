"""The platform as an HTTP service (FastAPI + uvicorn). See ``docs/platform.md`` for the contract.

Endpoints: ``GET /health``, ``GET /schema``, ``POST /audit/predict`` (audit API, may be
fairwashed), ``POST /user/predict`` (user interface, truthful, sex inferred from the first name),
``GET /v1/models`` and ``POST /v1/chat/completions`` (OpenAI-compatible shape).

Bad bodies get HTTP 400 (not JSON) or 422 (JSON of the wrong shape) with ``{"detail": "<one
line>"}``; bodies above ``max_body_bytes`` get 413; never a crash.
"""

from __future__ import annotations

import asyncio
import json
import sys
import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from fairprobe._validation import check_int, check_real
from fairprobe.errors import ConfigError, DataError
from fairprobe.platform.core import (
    EXAMPLE_AUDIT_RECORD,
    EXAMPLE_USER_RECORD,
    USER_FEATURES,
    Platform,
)
from fairprobe.platform.fairwash import FairwashConfig
from fairprobe.platform.llm import (
    LABEL_JSON_SCHEMA,
    LABELS,
    POSITIVE_LABEL,
    PROMPT_TEMPLATE,
    chat_completion,
    models_list,
)
from fairprobe.platform.model import AUDIT_FEATURES, CATEGORIES, NUMERIC_FEATURES, PlatformModel
from fairprobe.platform.netutil import bind_socket, check_host

__all__ = ["ServerConfig", "bind_socket", "check_host", "create_app", "serve"]

DEFAULT_PORT = 8765


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
        check_int(self.max_body_bytes, "max_body_bytes", owner, lo=1024)
        check_int(self.max_instances, "max_instances", owner, lo=1)
        check_host(self.host, self.allow_external)


class _BodyLimit:
    """ASGI middleware: 413 for bodies larger than ``limit`` bytes (declared or streamed)."""

    def __init__(self, app: Any, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", []):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    declared = -1
                if declared > self.limit:
                    await _raw_error(send, 413, f"Request body above {self.limit} bytes.")
                    return
        seen = 0

        async def limited_receive() -> Any:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    raise _TooLarge()
            return message

        try:
            await self.app(scope, limited_receive, send)
        except _TooLarge:
            await _raw_error(send, 413, f"Request body above {self.limit} bytes.")


class _TooLarge(Exception):
    pass


async def _raw_error(send: Any, status: int, detail: str) -> None:
    body = json.dumps({"detail": detail}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json")],
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
            "json_schema": LABEL_JSON_SCHEMA,
            "example": PROMPT_TEMPLATE.format(record=json.dumps(EXAMPLE_AUDIT_RECORD)),
        },
        "response": {"predictions": [{"decision": "0|1", "score": "[0,1]", "logit": "float"}]},
    }


def create_app(cfg: ServerConfig, model: PlatformModel) -> Any:
    """The FastAPI application serving ``model`` under ``cfg``."""
    platform = Platform(model=model, fairwash=cfg.fairwash, seed=cfg.seed)
    fail_rng = np.random.default_rng(np.random.SeedSequence([cfg.seed, 0xFA11]))
    fail_lock = threading.Lock()
    app = FastAPI(title="fairprobe platform", docs_url=None, redoc_url=None)

    def error(status: int, detail: str) -> JSONResponse:
        return JSONResponse({"detail": detail}, status_code=status)

    async def prelude(request: Request) -> tuple[Any, JSONResponse | None]:
        if cfg.delay_ms > 0:
            await asyncio.sleep(cfg.delay_ms / 1000.0)
        if cfg.fail_rate > 0:
            with fail_lock:
                u, which = fail_rng.random(), fail_rng.random()
            if u < cfg.fail_rate:
                if which < 0.5:
                    resp = error(429, "Too many requests (injected); retry later.")
                    resp.headers["Retry-After"] = "0"
                    return None, resp
                return None, error(503, "Service unavailable (injected); retry later.")
        raw = await request.body()
        try:
            body = json.loads(raw)
        except (ValueError, RecursionError):  # JSONDecodeError and UnicodeDecodeError included
            return None, error(400, "The request body is not valid JSON (or nested too deeply).")
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

    @app.post("/audit/predict")
    async def audit_predict(request: Request) -> Any:
        body, err = await prelude(request)
        if err is not None:
            return err
        try:
            pred = platform.audit_predict(instances_of(body))
        except DataError as exc:
            return error(422, str(exc))
        return {"predictions": pred.to_json()}

    @app.post("/user/predict")
    async def user_predict(request: Request) -> Any:
        body, err = await prelude(request)
        if err is not None:
            return err
        try:
            pred = platform.user_predict(instances_of(body))
        except DataError as exc:
            return error(422, str(exc))
        return {"predictions": pred.to_json()}

    @app.get("/v1/models")
    async def v1_models() -> dict[str, Any]:
        return models_list(model.model_id)

    @app.post("/v1/chat/completions")
    async def v1_chat(request: Request) -> Any:
        body, err = await prelude(request)
        if err is not None:
            return err
        try:
            return chat_completion(platform, body, model.model_id, cfg.llm_garble_rate, cfg.seed)
        except DataError as exc:
            return error(422, str(exc))

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        return error(500, f"Internal error: {type(exc).__name__}: {exc}")

    return _BodyLimit(app, cfg.max_body_bytes)


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
            app, log_level=log_level, access_log=False, timeout_graceful_shutdown=2
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
