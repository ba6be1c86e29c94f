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
``GET /v1/status``
    ``{"id", "round", "phase", "done"}``, for the operator and the launcher (no counts).

Error bodies are a short fixed reason (``{"error": "..."}``), never an echo of the request.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse
from pydantic import ValidationError

from fairprobe.collab.net.messages import TableMessage

__all__ = ["Refused", "TableSink", "create_app"]


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


def _refuse(sink: TableSink, status: int, reason: str) -> Response:
    sink.count_refusal(reason)
    return JSONResponse({"error": reason}, status_code=status)


async def _read_bounded(request: Request, limit: int) -> bytes | None:
    """The body, or None as soon as it grows over ``limit`` bytes."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def create_app(sink: TableSink, on_table: Callable[[], None] | None = None) -> FastAPI:
    """The node's ASGI app; ``on_table`` is called after each table stored."""
    app = FastAPI(docs_url=None, redoc_url=None, openapi_url=None)

    @app.post("/v1/table")
    async def post_table(request: Request) -> Response:
        length = request.headers.get("content-length")
        if length is None:
            return _refuse(sink, 411, "length-required")
        try:
            n_bytes = int(length)
        except ValueError:
            return _refuse(sink, 400, "bad-content-length")
        if n_bytes > sink.max_body:
            return _refuse(sink, 413, "body-too-large")
        ctype = request.headers.get("content-type", "")
        if ctype.split(";")[0].strip().lower() != "application/json":
            return _refuse(sink, 415, "json-only")
        raw = await _read_bounded(request, min(n_bytes, sink.max_body))
        if raw is None:
            return _refuse(sink, 413, "body-too-large")
        try:
            text = raw.decode("utf-8")
            msg = TableMessage.model_validate_json(text)
        except (UnicodeDecodeError, ValidationError, ValueError):
            return _refuse(sink, 422, "malformed-table")
        try:
            sink.accept_table(msg, text)
        except Refused as exc:
            return _refuse(sink, exc.status, exc.reason)
        if on_table is not None:
            on_table()
        return Response(status_code=204)

    @app.get("/v1/status")
    async def status() -> dict[str, Any]:
        return sink.status()

    return app
