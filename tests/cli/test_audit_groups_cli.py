"""``fairprobe audit`` over every group / intersection against the platform server (real
processes on 127.0.0.1)."""

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


def test_race_dp_eo_by_group_table_and_worst_pair(platform, tmp_path) -> None:
    out = tmp_path / "r.json"
    r = _cli("audit", "--url", platform.url, "--group-col", "race", "--metric", "dp,EO",
             "--budget", "3000", "--seed", "1", "--no-progress", "--cache",
             str(tmp_path / "c.sqlite"), "--json", str(out), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    for needle in ("by group (race)", "White", "Black", "Asian-Pac-Islander",
                   "simultaneous intervals (exact)", "demographic_parity_difference: largest gap",
                   "equal_opportunity_difference"):
        assert needle in r.stdout, needle
    d = json.loads(out.read_text())
    assert d["schema"] == "fairprobe/1" and d["kind"] == "audit" and d["group_col"] == ["race"]
    assert d["provenance"]["answers"]["total"]["asked"] == 3000
    assert {g["group"] for g in d["by_group"]} == {
        "White", "Black", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other"}
    assert sum(g["n"] for g in d["by_group"]) == 3000
    s = d["summaries"]["demographic_parity_difference"]
    assert set(s["interval"]) == {"low", "high", "level", "method"}
    assert s["interval"]["method"] == "exact-simultaneous" and len(s["pair"]) == 2
    assert s["interval"]["low"] <= s["estimate"] <= s["interval"]["high"]
    rates = {g["group"]: g["rates"]["selection_rate"]["value"] for g in d["by_group"]
             if g["group"] in s["compared"]}
    assert s["estimate"] == pytest.approx(max(rates.values()) - min(rates.values()))
    assert s["pair"] == [max(rates, key=rates.get), min(rates, key=rates.get)]


def test_intersections_sex_race(platform, tmp_path) -> None:
    out = tmp_path / "r.json"
    r = _cli("audit", "--url", platform.url, "--group-col", "sex,race", "--metric", "di",
             # a draw over rows leaves some intersections under the minimum size
             "--budget", "800", "--allocation", "uniform", "--min-group-size", "30",
             "--simultaneous", "BONFERRONI",
             "--reference", "Male, White", "--no-progress", "--cache",
             str(tmp_path / "c.sqlite"), "--json", str(out), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    d = json.loads(out.read_text())
    groups = {g["group"]: g for g in d["by_group"]}
    assert "Female, Black" in groups and groups["Female, Black"]["values"] == {
        "sex": "Female", "race": "Black"}
    small = [g for g, v in groups.items() if v["too_small"]]
    assert small and all(f"{g} *" in r.stdout for g in small) and "* too small" in r.stdout
    s = d["summaries"]["disparate_impact_ratio"]
    assert s["interval"]["method"] == "bonferroni-simultaneous"
    assert {v["reference"] for v in s["vs_reference"]} == {"Male, White"}


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--group-col", "race", "--metric", "dp,nope"], "--metric must be one of"),
        (["--group-col", "race,nope"], "--group-col 'nope' is not a column of the pool"),
        (["--group-col", "race", "--min-group-size", "0"], "--min-group-size"),
        (["--group-col", "race", "--metric", "eo", "--queries", "q.csv"], "needs true labels"),
        (["--group-col", "race", "--reference", "Martian"], "does not occur"),
        (["--group-col", "race", "--metric", "dp,eo", "--group-a", "White"],
         "takes one metric"),
        (["--group-col", "race", "--simultaneous", "holm"], "holm"),
    ],
)
def test_bad_input_is_one_line(platform, tmp_path, capsys, monkeypatch, args, needle) -> None:
    # in-process through the same entry point (fast); nothing is paid: all fail validation
    from fairprobe.cli.main import main

    monkeypatch.chdir(tmp_path)
    from fairprobe.datasets import load_adult
    from fairprobe.platform.model import AUDIT_FEATURES

    load_adult("test", names_seed=None)[list(AUDIT_FEATURES)].head(300).to_csv(
        tmp_path / "q.csv", index=False)
    with pytest.raises(SystemExit) as exc:
        main(["audit", "--url", platform.url, "--no-progress", "--budget", "200", "--cache",
              str(tmp_path / "c.sqlite"), *args])
    assert exc.value.code != 0
    err = capsys.readouterr().err
    assert needle in err, err
    assert "Traceback" not in err


def test_every_group_audit_caps_the_access_flags_like_the_two_group_form(capsys) -> None:
    """The every-group form shares the two-group form's flag checks (upper bounds included)."""
    from fairprobe.cli.main import main

    for args, msg in ((["--concurrency", "100000"], "--concurrency must be an integer in [1, "),
                      (["--retries", "1000000000000"], "--retries must be an integer in [0, ")):
        with pytest.raises(SystemExit) as e:
            main(["audit", "--url", "http://127.0.0.1:9", "--group-col", "race", *args])
        assert e.value.code == 2
        err = capsys.readouterr().err
        assert msg in err and len(err.strip().splitlines()) == 1


def test_adaptive_allocation_stops_early_and_records_it(platform, tmp_path) -> None:
    out = tmp_path / "a.json"
    r = _cli("audit", "--url", platform.url, "--group-col", "race", "--metric", "dp",
             "--budget", "1500", "--allocation", "adaptive", "--no-progress", "--cache",
             str(tmp_path / "c.sqlite"), "--json", str(out), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    d = json.loads(out.read_text())
    ad = d["allocation"]["adaptive"]
    assert d["allocation"]["method"] == "adaptive" and ad["stopped"] == "decided"
    assert ad["queries_spent"] == d["queried"] < 1500 and ad["queries_saved"] == 1500 - d["queried"]
    assert d["provenance"]["answers"]["total"]["asked"] == d["queried"]
    assert f"{ad['queries_saved']} queries saved" in r.stdout
