"""Helpers for the network tests: a recording TCP proxy and an HTTP/1.1 stream parser."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Recording:
    """Bytes seen by proxies: ``chunks[(conn_id, direction)]``; direction 'up' = client->server."""

    chunks: dict[tuple[int, str], bytearray] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, key: tuple[int, str], data: bytes) -> None:
        with self.lock:
            self.chunks.setdefault(key, bytearray()).extend(data)


class RecordingProxy:
    """TCP forwarders on 127.0.0.1, recording every byte in both directions.

    ``add(listen_port, target_port, tag)`` forwards ``listen_port`` to ``target_port``; bytes are
    recorded under ``(tag, conn, 'up')`` (client to server) and ``(tag, conn, 'down')``.
    """

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.servers: list[asyncio.base_events.Server] = []
        self.records: dict[str, Recording] = {}
        self._conn = 0

    def add(self, listen_port: int, target_port: int, tag: str) -> None:
        rec = self.records.setdefault(tag, Recording())

        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            self._conn += 1
            cid = self._conn
            try:
                r2, w2 = await asyncio.open_connection("127.0.0.1", target_port)
            except OSError:
                writer.close()
                return

            async def pump(src: asyncio.StreamReader, dst: asyncio.StreamWriter, d: str) -> None:
                try:
                    while data := await src.read(65536):
                        rec.add((cid, d), data)
                        dst.write(data)
                        await dst.drain()
                except (ConnectionError, OSError):
                    pass
                finally:
                    with contextlib.suppress(Exception):
                        dst.close()

            await asyncio.gather(pump(reader, w2, "up"), pump(r2, writer, "down"))

        async def start() -> None:
            srv = await asyncio.start_server(handle, "127.0.0.1", listen_port)
            self.servers.append(srv)

        asyncio.run_coroutine_threadsafe(start(), self.loop).result(10)

    def close(self) -> None:
        async def stop() -> None:
            for s in self.servers:
                s.close()

        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(stop(), self.loop).result(5)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


def parse_http_stream(data: bytes) -> list[tuple[str, dict[str, str], bytes]]:
    """Split an HTTP/1.1 byte stream into ``(start_line, headers, body)`` messages.

    Only Content-Length framing is accepted (the node never sends chunked bodies); anything else
    fails the test.
    """
    out = []
    i = 0
    while i < len(data):
        end = data.index(b"\r\n\r\n", i)
        head = data[i:end].decode("latin-1").split("\r\n")
        headers: dict[str, str] = {}
        for line in head[1:]:
            k, v = line.split(":", 1)
            headers[k.strip().lower()] = v.strip()
        assert "transfer-encoding" not in headers, headers
        n = int(headers.get("content-length", "0"))
        body = data[end + 4 : end + 4 + n]
        assert len(body) == n, "truncated message"
        out.append((head[0], headers, body))
        i = end + 4 + n
    return out


def own_entries(db: Path) -> dict[int, tuple[int, int, int, int, bytes]]:
    with contextlib.closing(sqlite3.connect(db)) as c:
        rows = c.execute("SELECT round, pos_a, n_a, pos_b, n_b, sig FROM own_entries").fetchall()
    return {int(r): (a, A, b, B, bytes(s)) for r, a, A, b, B, s in rows}


def checkpoint(db: Path) -> tuple[int, str, dict[str, Any]]:
    with contextlib.closing(sqlite3.connect(db)) as c:
        r, phase, state = c.execute("SELECT round, phase, state FROM checkpoint").fetchone()
    return int(r), str(phase), json.loads(state)
