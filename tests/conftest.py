"""Fixtures shared by the whole suite."""

from __future__ import annotations

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
