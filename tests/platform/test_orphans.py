"""A platform server never outlives the process that started it, even one killed by SIGKILL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

SCRIPT = """
import sys, time
from fairprobe.platform.process import PlatformProcess
p = PlatformProcess().start()
print(p.proc.pid, flush=True)
time.sleep(600)
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as fh:  # a zombie awaiting its reaper is gone too
        return fh.read().split()[2] != "Z"


def test_server_dies_with_its_parent() -> None:
    parent = subprocess.Popen([sys.executable, "-c", SCRIPT], stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        assert _alive(child)
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=30)
        deadline = time.monotonic() + 30
        while _alive(child) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _alive(child)
    finally:
        if parent.poll() is None:
            parent.kill()
