"""``audit --predictions --label-proxy-col``: the PPI++ block in the JSON and the terminal,
and one error line naming the flag for each bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> Path:
    r = np.random.default_rng(1)
    n = 4000
    g = r.choice(["a", "b"], n)
    y = r.binomial(1, 0.4, n)
    p = np.where(y == 1, r.binomial(1, np.where(g == "a", 0.8, 0.7)), r.binomial(1, 0.2, n))
    proxy = np.where(r.random(n) < 0.9, y, 1 - y)
    lab = r.random(n) < 0.15
    path = tmp_path_factory.mktemp("ppi") / "p.csv"
    pd.DataFrame({"g": g, "p": p, "proxy": proxy, "bad": proxy * 2,
                  "y": np.where(lab, y, np.nan)}).to_csv(path, index=False)
    return path


def _in_process(table: Path, *extra: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """The command in this process (the bad-input cases: fast, the same error handler)."""
    from fairprobe.cli.main import main

    with pytest.raises(SystemExit) as exc:
        main(["audit", "--predictions", str(table), "--y-pred-col", "p", "--y-true-col", "y",
              "--group-col", "g", *extra])
    return int(exc.value.code or 0), capsys.readouterr().err


@pytest.fixture(scope="module")
def ppi_run(table: Path, tmp_path_factory: pytest.TempPathFactory
            ) -> tuple[subprocess.CompletedProcess[str], dict]:
    out = tmp_path_factory.mktemp("ppi-out") / "r.json"
    r = _audit(table, "--label-proxy-col", "proxy", "--metric", "eo,fpr", "--json", str(out))
    assert r.returncode == 0, r.stderr
    return r, json.loads(out.read_text())


def _audit(table: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "fairprobe", "audit", "--predictions", str(table),
         "--y-pred-col", "p", "--y-true-col", "y", "--group-col", "g", *extra],
        capture_output=True, text=True, timeout=120)


def test_json_and_terminal_say_ppi_was_used(ppi_run: tuple[subprocess.CompletedProcess[str],
                                                           dict]) -> None:
    r, doc = ppi_run
    ppi = doc["ppi"]
    assert ppi["proxy_col"] == "proxy" and ppi["coverage"] == "asymptotic"
    assert ppi["n_labelled"] + ppi["n_unlabelled"] == 4000
    assert ppi["n_labelled"] == doc["queried"]  # the audit: labelled rows only
    assert [m["metric"] for m in ppi["metrics"]] == ["equal_opportunity_difference",
                                                   "false_positive_rate_difference"]
    for m in ppi["metrics"]:
        assert m["finding"]["interval"]["construction"] == "ppi++"
        assert all(0.0 <= gr["lambda"] <= 1.0 for gr in m["groups"].values())
    assert "PPI++ with label proxy proxy" in r.stdout and "lambda a" in r.stdout


@pytest.mark.parametrize(("extra", "needle"), [
    (("--label-proxy-col", "nope", "--metric", "eo"), "--label-proxy-col 'nope' is not a column"),
    (("--label-proxy-col", "bad", "--metric", "eo"), "(--label-proxy-col) must hold 0/1"),
    (("--label-proxy-col", "proxy", "--metric", "dp"), "--label-proxy-col estimates label"),
    (("--label-proxy-col", "proxy", "--metric", "eo", "--budget", "100"),
     "--label-proxy-col goes with --y-true-col"),
])
def test_bad_input_is_one_error_line(table: Path, extra: tuple[str, ...], needle: str,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    code, err = _in_process(table, *extra, capsys=capsys)
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code != 0 and len(lines) == 1, err
    assert lines[0].startswith("error: ") and needle in lines[0], lines[0]


def test_group_without_labels_is_one_error_line(table: Path, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    df = pd.read_csv(table)
    df.loc[df["g"] == "b", "y"] = np.nan
    df.to_csv(tmp_path / "q.csv", index=False)
    code, err = _in_process(tmp_path / "q.csv", "--label-proxy-col", "proxy", "--metric", "eo",
                            capsys=capsys)
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code != 0 and len(lines) == 1, err
    assert "--y-true-col has no labelled row in group 'b'" in lines[0]


def test_report_shows_ppi_and_its_headline_counts_only_the_audit(
        ppi_run: tuple[subprocess.CompletedProcess[str], dict]) -> None:
    from fairprobe.report.build import build_report

    doc = ppi_run[1]
    rep = build_report([("r.json", doc)])
    sec = rep.sections[0]
    assert any("by PPI++ from the label proxy proxy" in t.caption for t in sec.tables)
    assert any(n.startswith("PPI++ equal opportunity difference") for n in sec.notes)
    # the asymptotic PPI++ finding is shown, never one of the headline's questions
    assert all("ppi++" not in json.dumps(q) for q in rep.questions)
    assert len(rep.questions) == 2  # eo and fpr of the labelled-rows audit
