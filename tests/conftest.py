"""Fixtures shared by the whole suite."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def shared_data() -> Path:
    """``../shared/data`` beside the repository (skips the test when it is absent)."""
    if not SHARED_DATA.exists():
        pytest.skip("../shared/data is not beside this checkout")
    return SHARED_DATA


#: The venvs ``make servers`` makes for tools whose pins conflict with ours (model servers, peers).
SERVERS = Path(os.environ.get("FAIRPROBE_SERVERS_VENV",
                              Path(__file__).resolve().parents[1] / ".venv-servers"))


def server_bin(name: str, exe: str) -> Path:
    """``exe`` of the ``make servers`` venv ``name``: skipped locally without it, a failure in
    CI (which must run these tests: ``.ci/run`` builds the venvs)."""
    path = SERVERS / name / "bin" / exe
    if not path.exists():
        msg = f"{name} is not installed in {SERVERS / name}: run `make servers`"
        if os.environ.get("CI"):
            pytest.fail(msg + " (CI must run these tests; .ci/run installs it)")
        pytest.skip(msg)
    return path
