"""Ctrl-C as the command line sees it, shared with the access layer.

The CLI's SIGINT handler raises :class:`Interrupted` in the main thread. Python runs a signal
handler between bytecodes of whatever the main thread executes, and an exception raised while
that is a finaliser (a ``__del__``, a weakref callback, a generator's close) is printed and
lost: the audit would go on paying. So the handler also sets :data:`REQUESTED`, which the
access layer checks before each paid batch and answers by raising :class:`Interrupted` itself.
Only the CLI sets it; a library caller's run is never stopped by it.
"""

from __future__ import annotations

import threading

__all__ = ["REQUESTED", "Interrupted", "check"]


class Interrupted(BaseException):
    """Ctrl-C, raised by the CLI's SIGINT handler (click would turn a KeyboardInterrupt into a
    silent exit code 130)."""


#: Set by the CLI's SIGINT handler; cleared when a command starts.
REQUESTED = threading.Event()


def check() -> None:
    """Raise :class:`Interrupted` if Ctrl-C was pressed during this command."""
    if REQUESTED.is_set():
        raise Interrupted
