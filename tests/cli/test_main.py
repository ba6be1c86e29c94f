"""The CLI entry point: every command is registered and errors never show a traceback."""

from __future__ import annotations

import subprocess
import sys

import pytest


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


def test_runtime_warnings_stay_off_stderr() -> None:
    """Numpy RuntimeWarnings must not reach the user's terminal (pytest would capture them,
    so the command runs in a fresh process)."""
    import os

    code = (
        "import numpy as np\n"
        "from fairprobe.cli import main as m\n"
        "@m.app.command('warn-now', hidden=True)\n"
        "def _w() -> None:\n"
        "    print(np.float64(0.0) / np.float64(0.0), np.log(np.zeros(1)))\n"
        "m.main(['warn-now'])\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "FAIRPROBE_DEBUG"}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       timeout=60)
    assert r.returncode == 0 and "nan [-inf]" in r.stdout
    assert r.stderr == ""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env={**env, "FAIRPROBE_DEBUG": "1"}, timeout=60)
    assert "RuntimeWarning" in r.stderr  # still visible when debugging


@pytest.mark.parametrize("command", [["sequential"], ["twosource"], ["radius"], ["audit"],
                                     ["collab", "simulate"]])
def test_output_paths_are_checked_before_any_work(command, tmp_path, capsys) -> None:
    """A directory or unwritable --json/--cache gave 'error: unexpected ...' after the
    queries were paid; now every command refuses it first, in one line."""
    from fairprobe.cli.main import main

    blocker = tmp_path / "file"
    blocker.write_text("")
    for args, needle in (
        (["--json", str(tmp_path)], "is a directory; give a file path"),
        ([f"--json={blocker}/r.json"], "is a file, not a directory"),
        (["--cache", str(tmp_path)], "is a directory; give a file path"),
    ):
        with pytest.raises(SystemExit) as exc:
            main([*command, *args])
        err = capsys.readouterr().err
        assert exc.value.code == 2 and needle in err and len(err.strip().splitlines()) == 1
