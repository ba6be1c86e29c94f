"""Child processes that never outlive the process that started them."""

from __future__ import annotations

import ctypes
import ctypes.util
import signal
import sys

__all__ = ["die_with_parent"]

_PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """``preexec_fn`` for :class:`subprocess.Popen`: SIGTERM the child when its parent dies.

    Servers and auditor nodes started by fairprobe (tests, experiments, the demo) are then ended
    even when their parent is killed without a chance to clean up (SIGKILL, an orphaned run).
    Linux only (``prctl(PR_SET_PDEATHSIG)``); a no-op elsewhere.
    """
    if not sys.platform.startswith("linux"):
        return
    libc_name = ctypes.util.find_library("c") or "libc.so.6"
    try:
        libc = ctypes.CDLL(libc_name, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
    except OSError:
        return
