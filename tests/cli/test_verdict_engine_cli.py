"""One question, one verdict, from every command, end to end in real processes.

Checked: the two-group and every-group forms of one question print the same interval and
verdict; ``radius --input`` examines the groups the audit compared; ``--fail-on`` exits 5 on an
unfair model and 0 on a fair one; ``report`` never says "fair" when a finding is undetermined and
does not count a simulation; the headline reads the same in headless Chromium.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import skops.io as sio
from sklearn.linear_model import LogisticRegression

from fairprobe.platform.process import PlatformProcess

REPORT_DATA = Path(__file__).parents[1] / "report" / "data"


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fairprobe", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A released/held model of its own: x1 depends on colour (unfair), x2 does not."""
    d = tmp_path_factory.mktemp("engine")
    rng = np.random.default_rng(3)
    n = 2613
    colour = np.where(rng.random(n) < 0.55, "White", "Black")
    colour[:15] = "Other"  # a group too small to judge (min_group_size 20)
    x1 = rng.normal(0, 1, n) + 0.5 * (colour == "White")
    x2 = rng.normal(0, 1, n)
    released = (rng.random(n) < 1 / (1 + np.exp(-(x1 + x2)))).astype(int)
    pool = pd.DataFrame({"x1": x1, "x2": x2, "colour": colour, "released": released})
    pool.to_csv(d / "pool.csv", index=False)
    for name, cols in (("unfair", ["x1", "x2"]), ("fair", ["x2"])):
        lr = LogisticRegression().fit(pool[cols], released)
        sio.dump(lr, d / f"{name}.skops")
        (d / f"{name}.toml").write_text(f'kind = "local"\npath = "{name}.skops"\n')
    return d


def _audit(work: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return _cli("audit", "--backend-config", "unfair.toml", "--queries", "pool.csv",
                "--feature-cols", "x1,x2", "--label-col", "released", "--budget", "2613", "--no-progress", "--cache", "c.sqlite", *args, cwd=work)


def test_two_group_and_every_group_forms_agree(work: Path) -> None:
    pair = _audit(work, "--group-col", "colour", "--group-a", "Black", "--group-b", "White",
                  "--metric", "eo", "--json", "eo2.json")
    assert pair.returncode == 0, pair.stderr
    every = _audit(work, "--group-col", "colour", "--metric", "eo", "--min-group-size", "20",
                   "--json", "all.json")
    assert every.returncode == 0, every.stderr
    two = json.loads((work / "eo2.json").read_text())["metric"]
    s = json.loads((work / "all.json").read_text())["summaries"]["equal_opportunity_difference"]
    lo, hi = two["interval"]["low"], two["interval"]["high"]
    assert s["compared"] == ["Black", "White"] and "Other" in s["excluded"]
    assert s["family_size"] == 1
    assert s["interval"]["high"] == pytest.approx(max(hi, -lo), abs=1e-12)
    assert s["interval"]["low"] == pytest.approx(max(0.0, lo, -hi), abs=1e-12)
    assert s["verdict"] == two["verdict"] == two["finding"]["verdict"]
    assert two["method"] == "exact-difference" and two["finding"]["interval"]["coverage"] == (
        "exact")


def test_report_of_both_never_says_more_than_its_findings(work: Path) -> None:
    if not (work / "all.json").exists():
        test_two_group_and_every_group_forms_agree(work)
    dp = _audit(work, "--group-col", "colour", "--metric", "dp", "--min-group-size", "1",
                "--json", "dp.json")
    assert dp.returncode == 0, dp.stderr
    r = _cli("report", "all.json", "eo2.json", "--html", "both.html", cwd=work)
    assert r.returncode == 0, r.stderr
    verdict = json.loads((work / "all.json").read_text())["verdict"]
    assert f"verdict {verdict}" in r.stderr
    html = (work / "both.html").read_text()
    if verdict != "fair":
        assert "judged fair" not in html
    # a simulation with a known truth is shown but not counted
    r = _cli("report", "all.json", str(REPORT_DATA / "results" / "collab-nodes.json"), "--md",
             "with-nodes.md", cwd=work)
    assert r.returncode == 0, r.stderr
    md = (work / "with-nodes.md").read_text()
    assert "1 question about the model" in md and "not counted" in md


def test_radius_reads_the_groups_the_audit_compared(work: Path) -> None:
    r = _audit(work, "--group-col", "colour", "--metric", "dp", "--min-group-size", "20",
               "--json", "g.json")
    assert r.returncode == 0, r.stderr
    s = json.loads((work / "g.json").read_text())["summaries"]["demographic_parity_difference"]
    assert "Other" in s["excluded"]
    rad = _cli("radius", "--input", "g.json", "--tolerance", "0.05", "--json", "rad.json",
               cwd=work)
    assert rad.returncode == 0, rad.stderr
    assert "left out as the audit did: Other" in rad.stdout
    doc = json.loads((work / "rad.json").read_text())
    assert abs(doc["phi"]) == pytest.approx(s["estimate"], abs=1e-9)  # the same gap


def test_fail_on_gates_a_release(work: Path, tmp_path: Path) -> None:
    with PlatformProcess(seed=0) as p:
        r = _cli("audit", "--url", p.url, "--metric", "di", "--no-progress", "--cache",
                 str(tmp_path / "c.sqlite"), "--json", str(tmp_path / "p.json"), "--fail-on",
                 "unfair", cwd=tmp_path)
    assert r.returncode == 5, (r.returncode, r.stderr)
    assert "verdict unfair: exit 5 (--fail-on unfair)" in r.stderr
    assert json.loads((tmp_path / "p.json").read_text())["verdict"] == "unfair"  # written first
    rep = _cli("report", str(tmp_path / "p.json"), "--md", str(tmp_path / "p.md"), "--fail-on",
               "unfair", cwd=tmp_path)
    assert rep.returncode == 5, rep.stderr
    fair = _cli("audit", "--backend-config", "fair.toml", "--queries", "pool.csv",
                "--feature-cols", "x2", "--group-col", "colour", "--group-a", "Black",
                "--group-b", "White", "--metric", "dp", "--tolerance", "0.1", "--budget",
                "2613", "--no-progress", "--cache", "c.sqlite", "--json", "fair.json",
                "--fail-on", "undetermined", cwd=work)
    assert json.loads((work / "fair.json").read_text())["verdict"] == "fair"
    assert fair.returncode == 0, fair.stderr
    und = _cli("audit", "--backend-config", "fair.toml", "--queries", "pool.csv",
               "--feature-cols", "x2", "--group-col", "colour", "--group-a", "Black",
               "--group-b", "White", "--metric", "dp", "--tolerance", "0.001", "--budget", "200",
               "--no-progress", "--cache", "c.sqlite", "--fail-on", "undetermined", cwd=work)
    assert und.returncode == 6, und.stderr


def _comparable(doc: dict) -> dict:
    """A result document without what differs between two runs of one audit: times, the command
    line, the cache file's path and the host."""
    out = json.loads(json.dumps(doc))
    prov = out["provenance"]
    for key in ("created_utc", "created", "time", "started", "finished", "command", "argv", "host",
                "python", "platform"):
        prov.pop(key, None)
    prov.get("extra", {}).get("cache", {}).pop("path", None)
    return out


@pytest.mark.parametrize("form", ["every-group", "two-group"])
def test_library_returns_the_document_the_cli_writes(work: Path, form: str) -> None:
    import os

    from fairprobe.access.config import load_backend
    from fairprobe.audit.job import audit_model

    args = (["--group-col", "colour", "--metric", "dp,eo"] if form == "every-group" else
            ["--group-col", "colour", "--group-a", "Black", "--group-b", "White", "--metric",
             "eo"])
    r = _cli("audit", "--backend-config", "unfair.toml", "--queries", "pool.csv",
             "--label-col", "released", "--budget", "1500", "--seed", "4", "--no-progress",
             "--cache", f"cli-{form}.sqlite", "--json", f"cli-{form}.json", *args, cwd=work)
    assert r.returncode == 0, r.stderr
    cwd = os.getcwd()
    os.chdir(work)  # the config names its model file relative to the working directory
    try:
        job = audit_model(
            load_backend("unfair.toml"), queries="pool.csv", group_col="colour",
            metric="dp,eo" if form == "every-group" else "eo",
            group_a=None if form == "every-group" else "Black",
            group_b=None if form == "every-group" else "White", label_col="released",
            budget=1500, seed=4, cache=f"lib-{form}.sqlite")
    finally:
        os.chdir(cwd)
    cli = _comparable(json.loads((work / f"cli-{form}.json").read_text()))
    lib = _comparable(job.to_dict())
    assert lib == cli
    assert job.verdict == cli["verdict"]


def test_collab_simulate_gates_on_its_default_verdict(tmp_path: Path) -> None:
    r = _cli("collab", "simulate", "--case", "bios-moderate", "--seed", "1", "--json",
             "s.json", "--fail-on", "unfair", cwd=tmp_path)
    doc = json.loads((tmp_path / "s.json").read_text())
    assert doc["default_method"] == "bounded"
    verdict = doc["verdicts"][doc["default_method"]]
    assert r.returncode == {"unfair": 5}.get(verdict, 0), (r.returncode, verdict, r.stderr)
