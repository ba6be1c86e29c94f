"""``fairprobe audit`` against the platform server, run as real processes on 127.0.0.1."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fairprobe.platform.process import PlatformProcess


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "fairprobe", *args], cwd=cwd, capture_output=True, text=True,
        timeout=300,
    )


@pytest.fixture(scope="module")
def platform():
    with PlatformProcess(seed=0) as p:
        yield p


def test_audit_over_http_prints_and_writes_json(platform, tmp_path) -> None:
    out = tmp_path / "r.json"
    r = _cli("audit", "--url", platform.url, "--budget", "600", "--seed", "2", "--no-progress",
             "--cache", str(tmp_path / "c.sqlite"), "--json", str(out), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "disparate_impact_ratio" in r.stdout and "unfair" in r.stdout
    res = json.loads(out.read_text())
    assert res["schema"] == "fairprobe/1" and res["kind"] == "audit" and res["queried"] == 600
    c = res["metric"]["counts"]
    assert c["A"] + c["B"] == 600
    assert res["metric"]["estimate"] == pytest.approx(
        (c["a"] / c["A"]) / (c["b"] / c["B"]))
    # the rerun pays nothing and reaches the same numbers
    r2 = _cli("audit", "--url", platform.url, "--budget", "600", "--seed", "2", "--no-progress",
              "--cache", str(tmp_path / "c.sqlite"), "--json", str(out), cwd=tmp_path)
    assert r2.returncode == 0
    res2 = json.loads(out.read_text())
    assert res2["paid"] == 0 and res2["metric"]["counts"] == c


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--group-col", "nope"], "--group-col 'nope' is not a column of the pool"),
        (["--budget", "1"], "--budget must be an integer >= 2, got 1 (at least one query per group)"),
        (["--metric", "xyz"], "--metric must be one of dp, di"),
        (["--queries", "missing.csv"], "does not exist"),
    ],
)
def test_bad_input_is_one_line(platform, tmp_path, args, needle) -> None:
    r = _cli("audit", "--url", platform.url, "--no-progress", "--cache",
             str(tmp_path / "c.sqlite"), *args, cwd=tmp_path)
    assert r.returncode != 0
    assert needle in r.stderr
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_unreachable_endpoint_is_one_line(tmp_path) -> None:
    from conftest import free_port

    r = _cli("audit", "--url", f"http://127.0.0.1:{free_port()}", "--retries", "1",
             "--no-progress", "--cache", str(tmp_path / "c.sqlite"), cwd=tmp_path)
    assert r.returncode == 3
    assert "unreachable" in r.stderr and "Traceback" not in r.stderr


def test_nan_in_group_column_from_file(platform, tmp_path) -> None:
    from fairprobe.datasets import load_adult
    from fairprobe.platform.model import AUDIT_FEATURES

    df = load_adult("test", names_seed=None)[list(AUDIT_FEATURES)].head(200).copy()
    df.loc[5, "sex"] = None
    df.to_csv(tmp_path / "q.csv", index=False)
    r = _cli("audit", "--url", platform.url, "--queries", str(tmp_path / "q.csv"),
             "--group-col", "sex", "--no-progress", "--cache", str(tmp_path / "c.sqlite"),
             cwd=tmp_path)
    assert r.returncode == 2 and "missing values" in r.stderr
