"""``fairprobe audit --predictions F --proxy bisg``: terminal, JSON, report and exit code agree;
bad input is one error line."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from fairprobe.bisg.simulate import draw_population
from fairprobe.cli.main import main


def run_cli(*args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    out, err = capsys.readouterr()
    return int(exc.value.code or 0), out, err


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("proxy")
    # a large gap that place alone does not explain: the bounds can decide "unfair"
    pop = draw_population(30000, seed=7, race_effect={"hispanic": -2.5}, income_effect=0.3)
    df = pop.frame.assign(race=pop.race)
    out = {"full": d / "full.csv", "partial": d / "partial.csv", "nomatch": d / "nomatch.csv"}
    df.to_csv(out["full"], index=False)
    part = df.copy()
    part.loc[part.index[3000:], "race"] = ""
    part.to_csv(out["partial"], index=False)
    pd.DataFrame({"surname": ["Zzqxwv", "Qqzzxw"], "zip": ["10027", "60637"],
                  "approved": [0, 1]}).to_csv(out["nomatch"], index=False)
    return out


def _args(path: Path, *more: str) -> list[str]:
    return ["audit", "--predictions", str(path), "--proxy", "bisg", "--y-pred-col", "approved",
            "--surname-col", "surname", "--zip-col", "zip", *more]


def test_unfair_on_the_bounds_gates_and_every_surface_agrees(files, tmp_path, capsys) -> None:
    js = tmp_path / "p.json"
    code, out, err = run_cli(*_args(files["full"], "--group-a", "hispanic", "--race-col", "race",
                                    "--json", str(js), "--fail-on", "unfair"), capsys=capsys)
    doc = json.loads(js.read_text())
    assert doc["kind"] == "proxy" and doc["verdict"] == "unfair"
    assert code == 5, err
    b = doc["comparisons"][0]["bounds"]
    assert b["high"] < -0.05 and {"low", "high", "level"} <= b.keys()
    text = " ".join(out.split())
    assert "verdict: unfair" in text and "surnames found for 1.000 of 30000 rows" in text
    assert "independent of race given surname and place" in text  # the weighted's assumption
    assert "by recorded race: hispanic - white" in text
    assert doc["validation"]["direct"][0]["verdict"] == "unfair"
    assert doc["match"]["surname_matched"] == 30000
    names = pd.read_csv(files["full"])["surname"].head(50)
    dumped = json.dumps(doc)
    assert not any(f'"{n}"' in dumped for n in names)  # no name enters the document
    from fairprobe.report.build import build_report
    from fairprobe.report.render import render_markdown

    rep = build_report([("p.json", doc)])
    assert rep.overall == "unfair"
    md, _ = render_markdown(rep, str(tmp_path))
    assert "if the proxy is calibrated: unfair" in md and "surnames found for" in md


def test_partial_race_column_checks_calibration(files, tmp_path, capsys) -> None:
    js = tmp_path / "p.json"
    code, out, _ = run_cli(*_args(files["partial"], "--race-col", "race", "--json", str(js)),
                           capsys=capsys)
    assert code == 0
    val = json.loads(js.read_text())["validation"]
    assert val["recorded"] == 3000 and "direct" not in val
    assert 0.0 < val["calibration"]["brier"] < 0.5
    assert "calibration on 3000 rows" in " ".join(out.split())


def test_recorded_races_in_the_bounds_tighten_them_and_say_so(files, tmp_path, capsys) -> None:
    runs = {}
    for name, more in (("proxy", ()), ("in", ("--race-in-bounds",))):
        js = tmp_path / f"{name}.json"
        code, out, _ = run_cli(*_args(files["partial"], "--race-col", "race", *more, "--json",
                                      str(js)), capsys=capsys)
        assert code in (0, 1)
        runs[name] = (json.loads(js.read_text()), " ".join(out.split()))
    doc, out = runs["in"]
    assert doc["validation"]["in_bounds"]["rows"] == 3000
    assert "depends on its surname and place only" in doc["validation"]["in_bounds"]["assumption"]
    assert "the 3000 rows with recorded race enter them as known" in out
    assert "in_bounds" not in runs["proxy"][0]["validation"]
    width = {k: v[0]["finding"]["interval"]["high"] - v[0]["finding"]["interval"]["low"]
             for k, v in runs.items()}
    assert width["in"] < width["proxy"]


@pytest.mark.parametrize(("extra", "needle"), [
    (("--race-in-bounds",), "--race-in-bounds puts recorded races into the bounds"),
    (("--surname-col", "nope"), "--surname-col 'nope' is not a column"),
    (("--race-col", "surname"), "--race-col holds"),
    (("--group-col", "zip"), "--group-col does not apply to --proxy"),
    (("--group-a", "martian"), "unknown race 'martian'"),
])
def test_bad_flags_are_one_error_line(files, capsys, extra, needle) -> None:
    code, out, err = run_cli(*_args(files["partial"]), *extra, capsys=capsys)
    assert code == 2
    assert needle in err and "Traceback" not in err and err.count("error:") == 1


def test_no_surname_matched_is_refused(files, capsys) -> None:
    code, _, err = run_cli(*_args(files["nomatch"]), capsys=capsys)
    assert code == 2 and "No surname of the 2 rows" in err and "--surname-col" in err


def test_proxy_columns_without_proxy_are_refused(files, capsys) -> None:
    code, _, err = run_cli("audit", "--predictions", str(files["full"]), "--y-pred-col",
                           "approved", "--group-col", "race", "--surname-col", "surname",
                           capsys=capsys)
    assert code == 2 and "go with --proxy" in err


MODEL_MODULE = '''
import numpy as np

SEEN = []


def approve(df):
    """Approves on the place's income and a hidden Hispanic penalty it cannot see: it only
    gets the columns it is sent (names and places never)."""
    SEEN.append(sorted(df.columns))
    return (df["zip_income"].to_numpy() > -0.2).astype(int)
'''


def test_a_model_is_audited_by_proxied_race_without_seeing_names(files, tmp_path, capsys,
                                                                 monkeypatch) -> None:
    (tmp_path / "proxy_model_mod.py").write_text(MODEL_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    cfg = tmp_path / "model.toml"
    cfg.write_text('kind = "local"\ncallable = "proxy_model_mod:approve"\nname = "approve"\n')
    js = tmp_path / "m.json"
    args = ["audit", "--backend-config", str(cfg), "--queries", str(files["partial"]),
            "--proxy", "bisg", "--surname-col", "surname", "--zip-col", "zip",
            "--race-col", "race", "--budget", "4000", "--cache", str(tmp_path / "c.sqlite")]
    code, out, err = run_cli(*args, "--json", str(js), capsys=capsys)
    assert code in (0, 1), err
    import proxy_model_mod  # the module the backend imported

    assert proxy_model_mod.SEEN and all(
        not {"surname", "zip", "race"} & set(cols) for cols in proxy_model_mod.SEEN)
    doc = json.loads(js.read_text())
    extra = doc["provenance"]["extra"]
    # identical records (the pool's few sent columns repeat) are asked once, then cached
    assert doc["kind"] == "proxy" and extra["paid"] + extra["cached"] == 4000
    assert doc["provenance"]["extra"]["sent_columns"] == ["zip_income", "approved"]
    assert "bounds" in doc["comparisons"][0] and doc["validation"]["recorded"] > 0
    # the same records again come from the cache: nothing paid
    code2, _, _ = run_cli(*args, "--json", str(js), capsys=capsys)
    assert code2 == code and json.loads(js.read_text())["provenance"]["extra"]["paid"] == 0
    # a name column among the features is refused, in one line
    code3, _, err3 = run_cli(*args, "--feature-cols", "zip_income,surname", capsys=capsys)
    assert code3 == 2 and "never sent to the model" in err3 and err3.count("error:") == 1
