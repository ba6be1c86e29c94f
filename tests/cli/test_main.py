"""The CLI entry point: every command is registered and errors never show a traceback."""

from __future__ import annotations

import subprocess
import sys


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fairprobe", *args], capture_output=True,
                          text=True, timeout=120)


def test_help_lists_the_commands() -> None:
    r = _run("--help")
    assert r.returncode == 0
    for cmd in ("audit", "platform", "demo", "collab", "node", "sequential", "twosource",
                "radius"):
        assert cmd in r.stdout


def test_unknown_option_is_a_usage_error() -> None:
    r = _run("audit", "--no-such-option")
    assert r.returncode == 2
    assert "Traceback" not in r.stderr
