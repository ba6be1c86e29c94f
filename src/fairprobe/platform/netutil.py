"""Bind-address checks and socket binding shared by the server and its launcher."""

from __future__ import annotations

import errno
import ipaddress
import socket

from fairprobe.errors import ConfigError, InvalidParameterError, PortInUseError

__all__ = ["bind_socket", "check_host"]


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
