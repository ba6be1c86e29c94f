"""The documentation site builds in strict mode, as CI's ``make docs`` builds it.

Strict mode fails on a broken link, a missing reference or a docstring griffe cannot match to
its signature (a documented parameter the function does not take); the suite runs the build so
that such a docstring fails ``make test`` on the machine that wrote it, not only CI's later step.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def test_the_site_builds_strict(tmp_path: Path) -> None:
    pytest.importorskip("mkdocs")
    pytest.importorskip("mkdocstrings")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300,
    )
    warnings = [line for line in proc.stderr.splitlines() if "WARNING" in line or "ERROR" in line]
    assert proc.returncode == 0, "\n".join(warnings) or proc.stderr[-2000:]
    assert (tmp_path / "site" / "index.html").is_file()
