"""The HTTP face of a node (FastAPI): where neighbours deliver their tables.

Endpoints
---------
``POST /v1/table``
    body: a :class:`~fairprobe.collab.net.messages.TableMessage` (JSON). Answers ``204`` once the
    table is stored durably (a duplicate is answered ``204`` too), and otherwise

    * ``411`` without a ``Content-Length``; ``413`` for a body over the size bound (refused
      before it is read in full);
    * ``415`` for a content type other than JSON; ``422`` for a body that is not a valid table
      (schema, an entry listed twice, more entries than auditors, a round past the audit);
    * ``400`` for a table addressed to another node; ``403`` from a sender that is not a
      neighbour; ``401`` when the sender's envelope signature does not verify.

    Every refusal is counted by reason and the node goes on. Entries inside an accepted table
    are checked one by one later, at merge time (:mod:`fairprobe.collab.net.validate`).
``POST /v1/challenge`` (verification on)
    body: a :class:`~fairprobe.collab.net.messages.ChallengeMessage` from a neighbour; answers
    ``200`` with ``{"openings": [...]}``, the signed openings of the challenged leaves
    (:mod:`fairprobe.collab.verify`); ``403`` from a non-neighbour, ``401`` bad signature,
    ``409`` a round or root this node did not commit, ``404`` verification off.
``POST /v1/proof`` (verification on)
    body: a :class:`~fairprobe.collab.net.messages.ProofMessage` from any roster member (its
    finder sends a proof to everyone, others forward it to their neighbours); ``204`` once a well-signed
    proof of fraud is stored (checked against the model at the next round), ``422`` otherwise.
``GET /v1/status``
    ``{"id", "round", "phase", "done"}``, for the operator and the launcher (no counts).
``GET /openapi.json``
    the OpenAPI schema of these endpoints (the test suite fuzzes the node from it).

Every body is read with a deadline (``[timeouts] request`` seconds per read); a client that
disconnects mid-body is counted (``refused: client-disconnect``) and logged without a traceback.

Error bodies are a short fixed reason (``{"error": "..."}``), never an echo of the request.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ValidationError
from starlette.requests import ClientDisconnect

from fairprobe.collab.net.messages import (
    MAX_ENTRY_BYTES,
    ChallengeMessage,
    ProofMessage,
    TableMessage,
    max_body_bytes,
)
from fairprobe.platform.netutil import header_timeout_protocol

__all__ = ["Refused", "TableSink", "create_app", "header_timeout_protocol"]


class Refused(Exception):
    """A table the node will not store: HTTP status and a short fixed reason."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


class TableSink(Protocol):
    """What the service needs from the node."""

    max_body: int

    def accept_table(self, msg: TableMessage, body: str) -> None:
        """Check the envelope and store the table durably; raise :class:`Refused` if not."""

    def count_refusal(self, reason: str) -> None: ...

    def status(self) -> dict[str, Any]: ...

    def answer_challenge(self, msg: ChallengeMessage) -> dict[str, Any]:
        """Signed openings of the challenged leaves; raise :class:`Refused` if not."""

    def accept_proof(self, msg: ProofMessage) -> None:
        """Check and store a proof of fraud; raise :class:`Refused` if not."""


class StatusModel(BaseModel):
    id: str
    round: int
    phase: str
    done: bool


class OpeningsModel(BaseModel):
    openings: list[dict[str, Any]]


class ErrorModel(BaseModel):
    error: str


_REFUSALS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorModel, "description": why}
    for code, why in [
        (400, "misaddressed or bad Content-Length"), (401, "bad signature"),
        (403, "not a neighbour"), (404, "verification off"), (408, "body read timed out"),
        (409, "state conflict"), (411, "Content-Length required"), (413, "body too large"),
        (415, "JSON only"), (422, "malformed body"),
    ]
}


def _refuse(sink: TableSink, status: int, reason: str) -> Response:
    sink.count_refusal(reason)
    return JSONResponse({"error": reason}, status_code=status)


class _BodyTimeout(Exception):
    pass


async def _read_bounded(request: Request, limit: int, timeout: float) -> bytes | None:
    """The body, or None as soon as it grows over ``limit`` bytes; :class:`_BodyTimeout` when
    the whole body takes longer than ``timeout`` seconds; ``ClientDisconnect`` passes through."""
    chunks: list[bytes] = []
    size = 0

    async def read() -> bool:
        nonlocal size
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                return False
            chunks.append(chunk)
        return True

    try:
        ok = await asyncio.wait_for(read(), timeout)
    except TimeoutError:
        raise _BodyTimeout from None
    return b"".join(chunks) if ok else None


_TABLE_BODY = {
    "requestBody": {
        "required": True,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/TableMessage"}}},
    }
}
_CHALLENGE_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {"schema": {"$ref": "#/components/schemas/ChallengeMessage"}}
        },
    }
}
_PROOF_BODY = {
    "requestBody": {
        "required": True,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ProofMessage"}}},
    }
}


_M = TypeVar("_M", bound=BaseModel)

def create_app(
    sink: TableSink, on_table: Callable[[], None] | None = None, *, body_timeout: float = 10.0
) -> FastAPI:
    """The node's ASGI app; ``on_table`` is called after each table stored."""
    app = FastAPI(
        title="fairprobe auditor node", version="1", docs_url=None, redoc_url=None,
        openapi_url="/openapi.json",
    )

    async def body_of(request: Request, limit: int) -> bytes | Response:
        length = request.headers.get("content-length")
        if length is None:
            return _refuse(sink, 411, "length-required")
        try:
            n_bytes = int(length)
        except ValueError:
            return _refuse(sink, 400, "bad-content-length")
        if n_bytes < 0:
            return _refuse(sink, 400, "bad-content-length")
        if n_bytes > limit:
            return _refuse(sink, 413, "body-too-large")
        ctype = request.headers.get("content-type", "")
        if ctype.split(";")[0].strip().lower() != "application/json":
            return _refuse(sink, 415, "json-only")
        try:
            raw = await _read_bounded(request, min(n_bytes, limit), body_timeout)
        except _BodyTimeout:
            return _refuse(sink, 408, "body-timeout")
        except ClientDisconnect:
            sink.count_refusal("client-disconnect")
            return Response(status_code=400)
        if raw is None:
            return _refuse(sink, 413, "body-too-large")
        return raw

    async def message_of(
        request: Request, limit: int, model: type[_M], what: str
    ) -> tuple[_M, str] | Response:
        """The body read (:func:`body_of`) and parsed as ``model``, with its text; or the refusal
        (``malformed-<what>`` for a body that is not that message)."""
        raw = await body_of(request, limit)
        if isinstance(raw, Response):
            return raw
        try:
            text = raw.decode("utf-8")
            return model.model_validate_json(text), text
        except (UnicodeDecodeError, ValidationError, ValueError):
            return _refuse(sink, 422, f"malformed-{what}")

    @app.post(
        "/v1/challenge", response_model=OpeningsModel, responses=_REFUSALS,
        openapi_extra=_CHALLENGE_BODY,
    )
    async def post_challenge(request: Request) -> Response:
        got = await message_of(request, 4096, ChallengeMessage, "challenge")
        if isinstance(got, Response):
            return got
        try:
            out = await asyncio.to_thread(sink.answer_challenge, got[0])
        except Refused as exc:
            return _refuse(sink, exc.status, exc.reason)
        return JSONResponse(out)

    @app.post("/v1/proof", status_code=204, responses=_REFUSALS, openapi_extra=_PROOF_BODY)
    async def post_proof(request: Request) -> Response:
        got = await message_of(request, 65536, ProofMessage, "proof")
        if isinstance(got, Response):
            return got
        try:
            sink.accept_proof(got[0])
        except Refused as exc:
            return _refuse(sink, exc.status, exc.reason)
        return Response(status_code=204)

    @app.post("/v1/table", status_code=204, responses=_REFUSALS, openapi_extra=_TABLE_BODY)
    async def post_table(request: Request) -> Response:
        got = await message_of(request, sink.max_body, TableMessage, "table")
        if isinstance(got, Response):
            return got
        try:
            sink.accept_table(*got)
        except Refused as exc:
            return _refuse(sink, exc.status, exc.reason)
        if on_table is not None:
            on_table()
        return Response(status_code=204)

    @app.get("/v1/status", response_model=StatusModel)
    async def status() -> dict[str, Any]:
        return sink.status()

    schemas = {
        "TableMessage": TableMessage.model_json_schema(ref_template="#/components/schemas/{model}"),
        "ChallengeMessage": ChallengeMessage.model_json_schema(
            ref_template="#/components/schemas/{model}"),
        "ProofMessage": ProofMessage.model_json_schema(
            ref_template="#/components/schemas/{model}"),
    }

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            from fastapi.openapi.utils import get_openapi

            doc = get_openapi(title=app.title, version=app.version, routes=app.routes)
            comps = doc.setdefault("components", {}).setdefault("schemas", {})
            for name, sch in schemas.items():
                for k, v in sch.pop("$defs", {}).items():
                    comps.setdefault(k, v)
                comps[name] = sch
            # a message addressed to another node is refused: say which address this node has
            me = str(sink.status().get("id", ""))
            if me:
                comps["TableMessage"]["properties"]["receiver"]["enum"] = [me]
                comps["ChallengeMessage"]["properties"]["prover"]["enum"] = [me]
            # a table holds at most one entry per auditor: the body limit is sized for that
            n_auditors = max(1, (sink.max_body - max_body_bytes(0)) // MAX_ENTRY_BYTES)
            comps["TableMessage"]["properties"]["entries"]["maxItems"] = n_auditors
            app.openapi_schema = doc
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    return app
