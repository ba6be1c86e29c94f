"""``fairprobe demo`` end to end (platform server as a real process on 127.0.0.1)."""

from __future__ import annotations

import json
import subprocess
import sys


def test_demo_audit_and_radius(tmp_path) -> None:
    out = tmp_path / "demo.json"
    r = subprocess.run(
        [sys.executable, "-m", "fairprobe", "demo", "--port", "0", "--budget", "500",
         "--sections", "audit,radius", "--cache-dir", str(tmp_path / "c"), "--json", str(out)],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )
    assert r.returncode == 0, r.stderr
    assert "disparate_impact_ratio" in r.stdout and "Consistency radius" in r.stdout
    res = json.loads(out.read_text())
    di = res["audit"]["disparate_impact"]
    assert di["verdict"] == "unfair" and di["queried"] == 500
    rad = res["radius"]
    assert rad["fair"] is False and rad["radius"] > 0
    assert abs(abs(rad["phi_shifted"]) - 0.05) < 1e-6


def test_demo_rejects_unknown_section(tmp_path) -> None:
    r = subprocess.run([sys.executable, "-m", "fairprobe", "demo", "--sections", "nope"],
                       capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert r.returncode == 2 and "'sections' parameter" in r.stderr


def test_second_install_is_a_no_op() -> None:
    """``make install`` is stamped on pyproject.toml: once installed, a second ``make demo``
    runs no pip (``make -q`` exits 0 when the target is up to date)."""
    from pathlib import Path

    import pytest

    repo = Path(__file__).resolve().parents[2]
    if not (repo / ".venv" / ".installed-all").exists():
        pytest.skip("this checkout's .venv was not made by make install / install-dev")
    r = subprocess.run(["make", "-q", "install"], cwd=repo, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
