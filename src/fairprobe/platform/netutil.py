"""Bind-address checks and socket binding shared by the server and its launcher."""

from __future__ import annotations

import errno
import ipaddress
import socket
from typing import Any

from fairprobe.errors import ConfigError, InvalidParameterError, PortInUseError

__all__ = ["bind_socket", "check_host", "header_timeout_protocol"]


def check_host(host: str, allow_external: bool) -> None:
    """Refuse a non-loopback bind address unless ``allow_external``."""
    if allow_external:
        return
    if host == "localhost":
        return
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        raise InvalidParameterError(
            f"Refusing to serve on {host!r}: only loopback addresses (127.0.0.1, ::1, localhost) "
            "are allowed without --allow-external."
        )


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening-ready TCP socket bound to ``(host, port)``; PortInUseError if taken."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto must be IPPROTO_TCP: asyncio only sets TCP_NODELAY on accepted sockets whose proto
    # says TCP, and without it every small response waits ~40 ms (Nagle + delayed ACK).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        if exc.errno in (errno.EADDRINUSE, errno.EACCES):
            raise PortInUseError(
                f"Port {port} on {host} is already in use; choose another with --port."
            ) from exc
        raise ConfigError(f"Cannot bind {host}:{port}: {exc.strerror or exc}.") from exc
    return sock


def header_timeout_protocol(header_timeout: float) -> Any:
    """uvicorn's h11 protocol with a deadline for a request's headers.

    The timer starts with the connection (or the first byte of a next request) and stops once
    the headers are complete; a client that trickles its headers slower than that is
    disconnected. uvicorn itself only times out idle keep-alive connections; the body has its
    own deadline (the platform's body guard, the node's handlers). Shared by both servers.
    """
    import asyncio

    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class HeaderTimeoutH11(H11Protocol):  # type: ignore[misc]
        _header_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._arm()

        def _arm(self) -> None:
            if self._header_timer is None:
                self._header_timer = self.loop.call_later(header_timeout, self._expire)

        def _disarm(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _expire(self) -> None:
            self._header_timer = None
            if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
                self.transport.close()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
                self._arm()
            else:
                self._disarm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

    return HeaderTimeoutH11
