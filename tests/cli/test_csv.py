"""``--csv PATH``: the by-group or per-finding table a command prints, with the JSON's numbers."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    from fairprobe.cli.main import main

    with pytest.raises(SystemExit) as exc:
        main(argv)
    out = capsys.readouterr()
    return int(exc.value.code or 0), out.out, out.err


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    import skops.io as sio
    from sklearn.linear_model import LogisticRegression

    d = tmp_path_factory.mktemp("csv")
    rng = np.random.default_rng(0)
    pool = pd.DataFrame({"x": rng.normal(size=600), "g": rng.choice(["a", "b", "c"], 600)})
    pool["y"] = (pool["x"] + rng.normal(size=600) > 0).astype(int)
    m = LogisticRegression().fit(pool[["x"]], pool["y"])
    sio.dump(m, d / "m.skops")
    (d / "m.toml").write_text('kind = "local"\npath = "m.skops"\n')
    pool.to_csv(d / "pool.csv", index=False)
    return d / "m.toml", d / "pool.csv"


def test_group_audit_csv_is_the_by_group_table(model, tmp_path, capsys) -> None:
    cfg, pool = model
    code, _, err = _run(["audit", "--backend-config", str(cfg), "--queries", str(pool),
                         "--group-col", "g", "--metric", "dp,eo", "--label-col", "y",
                         "--budget", "all", "--no-progress", "--no-cache", "--json",
                         str(tmp_path / "r.json"), "--csv", str(tmp_path / "t.csv")], capsys)
    assert code == 0, err
    table = pd.read_csv(tmp_path / "t.csv")
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["queried"] == 600  # --budget all
    assert list(table["group"]) == [row["group"] for row in doc["by_group"]]
    for row, (_, t) in zip(doc["by_group"], table.iterrows(), strict=True):
        assert t["n"] == row["n"]
        for rate in ("selection_rate", "true_positive_rate"):
            r = row["rates"][rate]
            assert (t[rate], t[f"{rate}_low"], t[f"{rate}_high"]) == (
                r["value"], r["interval"]["low"], r["interval"]["high"])


def test_two_group_audit_csv_is_one_finding_row(model, tmp_path, capsys) -> None:
    cfg, pool = model
    code, _, err = _run(["audit", "--backend-config", str(cfg), "--queries", str(pool),
                         "--group-col", "g", "--group-a", "a", "--metric", "dp",
                         "--no-progress", "--no-cache", "--json", str(tmp_path / "r.json"),
                         "--csv", str(tmp_path / "t.csv")], capsys)
    assert code == 0, err
    t = pd.read_csv(tmp_path / "t.csv")
    m = json.loads((tmp_path / "r.json").read_text())["metric"]
    assert len(t) == 1 and t.loc[0, "metric"] == m["metric"]
    assert (t.loc[0, "estimate"], t.loc[0, "low"], t.loc[0, "high"], t.loc[0, "verdict"]) == (
        m["estimate"], m["interval"]["low"], m["interval"]["high"], m["verdict"])


def test_sequential_csv(tmp_path, capsys) -> None:
    d = np.r_[np.ones(500), np.zeros(500), np.ones(300), np.zeros(700)].astype(int)
    f = tmp_path / "pool.csv"
    pd.DataFrame({"g": ["F"] * 1000 + ["M"] * 1000, "d": d}).to_csv(f, index=False)
    code, _, err = _run(["sequential", "--group-col", "g", "--decision-col", "d", "--input",
                         str(f), "--repeats", "10", "--budget", "all", "--json",
                         str(tmp_path / "s.json"),
                         "--csv", str(tmp_path / "s.csv")], capsys)
    assert code == 0, err
    t = pd.read_csv(tmp_path / "s.csv")
    doc = json.loads((tmp_path / "s.json").read_text())
    assert len(t) == 1 and t.loc[0, "mean_queries"] == doc["mean_queries"]
    assert doc["budget"] == 2000  # --budget all: every row of the pool


def test_csv_path_is_checked_before_anything_runs(model, tmp_path, capsys) -> None:
    cfg, pool = model
    code, _, err = _run(["audit", "--backend-config", str(cfg), "--queries", str(pool),
                         "--group-col", "g", "--metric", "dp", "--no-progress", "--no-cache",
                         "--csv", str(tmp_path)], capsys)
    assert code != 0 and "--csv" in err and "directory" in err


def test_radius_csv(tmp_path, capsys) -> None:
    rng = np.random.default_rng(0)
    f = tmp_path / "v.csv"
    pd.DataFrame({"v": rng.integers(0, 2, 400), "g": rng.choice(["a", "b"], 400)}).to_csv(
        f, index=False)
    code, _, err = _run(["radius", "--input", str(f), "--tolerance", "0.1", "--value-col", "v",
                         "--group-col", "g", "--json", str(tmp_path / "r.json"), "--csv",
                         str(tmp_path / "r.csv")], capsys)
    assert code == 0, err
    t = pd.read_csv(tmp_path / "r.csv")
    doc = json.loads((tmp_path / "r.json").read_text())
    assert len(t) == 1 and t.loc[0, "radius"] == pytest.approx(doc["radius"], rel=1e-12)


def test_collab_simulate_csv_is_the_method_table(tmp_path, capsys) -> None:
    code, _, err = _run(["collab", "simulate", "--case", "bios-moderate", "--attackers", "2",
                         "--seed", "1", "--json", str(tmp_path / "s.json"), "--csv",
                         str(tmp_path / "s.csv")], capsys)
    assert code == 0, err
    t = pd.read_csv(tmp_path / "s.csv")
    runs = json.loads((tmp_path / "s.json").read_text())["runs"]
    assert list(t["method"]) == [r["method"] for r in runs]
    assert list(t["fooled"]) == [r["fooled"] for r in runs]


def test_twosource_csv_lists_every_finding(tmp_path, capsys) -> None:
    from fairprobe.platform.process import PlatformProcess

    with PlatformProcess(fairwash="positive", gamma=0.6, seed=1) as plat:
        code, _, err = _run(["twosource", "--url", plat.url, "--budget", "400", "--seed", "2",
                             "--cache", str(tmp_path / "c.sqlite"), "--no-progress", "--json",
                             str(tmp_path / "t.json"), "--csv", str(tmp_path / "t.csv")], capsys)
    assert code == 0, err
    t = pd.read_csv(tmp_path / "t.csv")
    doc = json.loads((tmp_path / "t.json").read_text())
    assert t.loc[0, "row"] == "DI through A"
    assert [f for f in t["row"] if f.startswith("detector ")] == [
        f"detector {o['detector']}" for o in doc["detectors"]]
    assert list(t["detected"].dropna().astype(bool)) == [o["detected"] for o in doc["detectors"]]


def test_csv_cells_are_spreadsheet_safe(tmp_path: Path) -> None:
    """Group labels come from the audited data: a formula, a control character or a bidi
    override in one is written so that a spreadsheet shows it and never runs it."""
    import pandas as pd

    from fairprobe.report.tables import spreadsheet_safe, write_csv

    hostile = ['=HYPERLINK("http://x","y")', "+1+cmd|' /C calc'!A0", "@SUM(A1)", "\tx",
               "-2+3", "a\x1b[31mb", "abc\u202egpj", "x\u2066y", "nul\x00", "-0.343", "plain"]
    t = pd.DataFrame({"group": hostile, "value": [-0.5] * len(hostile)})
    write_csv(tmp_path / "t.csv", t)
    back = pd.read_csv(tmp_path / "t.csv", keep_default_na=False)
    cells = back["group"].tolist()
    for c in cells:
        assert not c.startswith(("=", "+", "@", "\t")), c
        assert not any(ch in c for ch in "\x1b\u202e\u2066\x00"), c
    assert cells[0] == "'" + hostile[0]
    assert cells[4] == "'-2+3"
    assert cells[5] == "a\\u001b[31mb"
    assert cells[9] == "-0.343" and cells[10] == "plain"  # numbers and plain text unchanged
    assert back["value"].tolist() == [-0.5] * len(hostile)
    assert spreadsheet_safe(3.5) == 3.5
