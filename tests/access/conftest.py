"""Fixtures of the access tests: real local processes on 127.0.0.1, always terminated."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

HERE = Path(__file__).resolve().parent

try:
    from conftest import free_port  # type: ignore[import-not-found]
except ImportError:  # tests/ is not on sys.path: load tests/conftest.py by its path
    import importlib.util

    _spec = importlib.util.spec_from_file_location("_fairprobe_tests_conftest", HERE.parent / "conftest.py")
    assert _spec is not None and _spec.loader is not None
    _root = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_root)
    free_port = _root.free_port


def wait_http(url: str, proc: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with code {proc.returncode}")
        try:
            if httpx.get(url, timeout=1.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.05)
    raise RuntimeError(f"{url} did not come up in {timeout} s")


def stop_process(proc: subprocess.Popen[bytes], grace: float = 10.0) -> None:
    """SIGTERM, then SIGKILL after ``grace`` seconds: a test's server never outlives it."""
    proc.terminate()
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@pytest.fixture(scope="session")
def flaky_url() -> Iterator[str]:
    """Base URL of tests/access/flaky_app.py running as a real uvicorn subprocess."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(HERE / "flaky_app.py"), str(port)])
    try:
        url = f"http://127.0.0.1:{port}"
        wait_http(url + "/health", proc)
        yield url
    finally:
        stop_process(proc)


@pytest.fixture(scope="session")
def platform_url() -> Iterator[str]:
    """The fairprobe platform server (truthful, no injected faults) as a real process."""
    from fairprobe.platform.process import PlatformProcess

    with PlatformProcess(seed=0) as plat:
        yield plat.url


@pytest.fixture(scope="session")
def faulty_platform_url() -> Iterator[str]:
    """The platform server with 30% injected 429/503 and 10% garbled LLM answers."""
    from fairprobe.platform.process import PlatformProcess

    with PlatformProcess(seed=0, fail_rate=0.3, llm_garble_rate=0.1) as plat:
        yield plat.url


def adult_records(n: int, seed: int = 0) -> list[dict[str, Any]]:
    """``n`` distinct audit records with the platform's seven features."""
    rng = np.random.default_rng(seed)
    races = ["White", "Black", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other"]
    out = []
    for i in range(n):
        out.append(
            {
                "age": int(rng.integers(18, 80)),
                "education-num": int(rng.integers(1, 17)),
                "race": races[int(rng.integers(0, 5))],
                "capital-gain": int(rng.choice([0, 0, 0, 2174, 5178, 15024])),
                "capital-loss": 0,
                "hours-per-week": int(rng.integers(10, 70)),
                "sex": "Female" if rng.random() < 0.4 else "Male",
                "id": i,
            }
        )
    return out


@pytest.fixture(scope="session")
def make_records() -> Any:
    """The :func:`adult_records` generator."""
    return adult_records


@pytest.fixture
def free_port_url() -> str:
    """``http://127.0.0.1:P`` for a port P where nothing listens."""
    return f"http://127.0.0.1:{free_port()}"


@pytest.fixture(scope="session")
def wait_for_http() -> Any:
    """The :func:`wait_http` helper (for test modules, which cannot import this conftest)."""
    return wait_http


@pytest.fixture(scope="session")
def stop_proc() -> Any:
    """The :func:`stop_process` helper (for test modules)."""
    return stop_process
