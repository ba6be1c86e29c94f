"""Every command is one library call: its ``--json`` document equals what the function returns.

Each test runs the command as a real process and the library function in this process on the
same inputs, and compares the two documents with times, the command line and host facts removed
(they differ between any two runs). A field computed only in the CLI would make them differ.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fairprobe", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def _comparable(doc: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(json.dumps(doc))
    prov = out["provenance"]
    for key in ("created_utc", "command", "host", "python", "platform"):
        prov.pop(key, None)
    extra = prov.get("extra", {})
    if isinstance(extra.get("cache"), dict):
        extra["cache"].pop("path", None)
    elif "cache" in extra:
        extra.pop("cache")
    return out


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("cli-lib")
    rng = np.random.default_rng(11)
    n = 1200
    group = np.where(rng.random(n) < 0.5, "A", "B")
    dec = (rng.random(n) < np.where(group == "A", 0.35, 0.55)).astype(int)
    pd.DataFrame({"g": group, "dec": dec, "score": rng.random(n),
                  "value": dec.astype(float)}).to_csv(d / "pool.csv", index=False)
    return d


def test_radius(work: Path) -> None:
    from fairprobe.radius.job import radius_job

    r = _cli("radius", "--input", "pool.csv", "--value-col", "value", "--group-col", "g",
             "--tolerance", "0.05", "--json", "cli.json", cwd=work)
    assert r.returncode == 0, r.stderr
    job = radius_job(work / "pool.csv", 0.05, value_col="value", group_col="g")
    cli = _comparable(json.loads((work / "cli.json").read_text()))
    lib = _comparable(job.to_dict())
    cli["provenance"]["extra"].pop("input")  # the path as typed vs as passed
    lib["provenance"]["extra"].pop("input")
    assert lib == cli
    assert cli["kind"] == "radius"


def test_sequential_pool(work: Path) -> None:
    from fairprobe.sequential.job import sequential_job

    r = _cli("sequential", "--input", "pool.csv", "--group-col", "g", "--decision-col", "dec",
             "--repeats", "20", "--seed", "3", "--no-progress", "--json", "cli.json", cwd=work)
    assert r.returncode == 0, r.stderr
    job = sequential_job(input=work / "pool.csv", group_col="g", decision_col="dec", repeats=20,
                         seed=3)
    assert _comparable(job.to_dict()) == _comparable(json.loads((work / "cli.json").read_text()))


def test_twosource_plan(work: Path) -> None:
    from fairprobe.twosource.job import twosource_plan_job

    r = _cli("twosource", "plan", "--proxy-accuracy", "0.91", "--checks", "100", "--budget",
             "1000", "--epsilon", "0.1", "--json", "cli.json", cwd=work)
    assert r.returncode == 0, r.stderr
    job = twosource_plan_job(0.91, checks=100, budget=1000, epsilon=0.1)
    assert _comparable(job.to_dict()) == _comparable(json.loads((work / "cli.json").read_text()))


@pytest.fixture(scope="module")
def platform() -> Iterator[str]:
    from fairprobe.platform.process import PlatformProcess

    with PlatformProcess(seed=0) as plat:
        yield plat.url


def test_sequential_live_and_twosource(work: Path, platform: str) -> None:
    from fairprobe.access.http import HttpJsonBackend
    from fairprobe.sequential.job import sequential_job
    from fairprobe.twosource.job import platform_sources, twosource_job

    r = _cli("sequential", "--url", platform, "--budget", "300", "--seed", "1", "--no-progress",
             "--cache", "cli-seq.sqlite", "--json", "seq.json", cwd=work)
    assert r.returncode == 0, r.stderr
    job = sequential_job(backend=HttpJsonBackend(url=platform), budget=300, seed=1,
                         cache=work / "lib-seq.sqlite")  # its own cache: both pay, as two first runs
    assert _comparable(job.to_dict()) == _comparable(json.loads((work / "seq.json").read_text()))

    r = _cli("twosource", "--url", platform, "--budget", "400", "--seed", "2", "--no-progress",
             "--cache", "cli-ts.sqlite", "--json", "ts.json", cwd=work)
    assert r.returncode == 0, r.stderr
    job = twosource_job(*platform_sources(platform), budget=400, seed=2, cache=work / "lib-ts.sqlite")
    assert _comparable(job.to_dict()) == _comparable(json.loads((work / "ts.json").read_text()))
