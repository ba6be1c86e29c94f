"""``fairprobe discover --proxy bisg``: slices searched for race gaps when race is not recorded.

Populations from the census tables (:func:`fairprobe.bisg.simulate.draw_population`: BISG
calibrated by construction, the searched features independent of race given surname and place,
true rates exact): a race gap planted in one slice, decisions depending on the place's income
everywhere; and a null population, decisions depending on place but no race gap in any slice.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from bisg.test_proxy_cli import run_cli  # the CLI in-process, its exit code and streams
from fairprobe.bisg.simulate import draw_population

FEATURES = {"region": ["a", "b", "c"], "product": ["p", "q"]}
GROUPS = ("black", "hispanic")


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object]:
    # Black and Hispanic applicants approved far less often in region b only; everywhere the
    # decisions also depend on the place's income (a gap of about -0.27 from place alone)
    pop = draw_population(60_000, seed=3, intercept=0.5,
                          race_effect={"black": -2.5, "hispanic": -2.5}, income_effect=0.8,
                          features=FEATURES, planted={"region": "b"})
    path = tmp_path_factory.mktemp("pd") / "planted.csv"
    pop.frame.to_csv(path, index=False)
    return path, pop


def _args(path: Path, *more: str) -> list[str]:
    return ["discover", "--predictions", str(path), "--y-pred-col", "approved",
            "--features", "region,product", "--proxy", "bisg", "--surname-col",
            "surname", "--zip-col", "zip", "--group-a", ",".join(GROUPS), *more]


def test_the_planted_slice_is_found_and_its_bounds_cover_the_true_gap(planted, tmp_path,
                                                                      capsys) -> None:
    path, pop = planted
    js = tmp_path / "d.json"
    code, out, err = run_cli(*_args(path, "--json", str(js), "--fail-on", "unfair"),
                             capsys=capsys)
    assert code == 5, err
    doc = json.loads(js.read_text())
    assert doc["kind"] == "discover" and doc["verdict"] == "unfair"
    px = doc["proxy"]
    assert px["method"] == "bisg" and px["match"]["surname_matched_rate"] == 1.0
    assert px["comparisons"] == doc["tested"] * 2 and "within every slice" in px["condition"]
    assert set(px["assumptions"]) == {"bounds", "slices", "weighted"}
    subs = doc["subgroups"]
    assert subs, "the planted slice is not found"
    # every report is inside the planted slice (no slice outside it differs by race)
    assert all({"feature": "region", "operator": "==", "value": "b"} in s["conditions"]
               for s in subs)
    top = next(s for s in subs if s["slice"] == "region = b")
    truth = pop.truth[top["group"]] - pop.truth["white"]
    b = top["bounds"]
    assert b["low"] <= truth <= b["high"] and b["high"] < -0.05
    assert b["level"] == pytest.approx(1 - 0.1 / (doc["tested"] * 2))
    assert top["interval"] == {"low": b["low"], "high": b["high"]}
    assert "independent of race given surname and place" in top["weighted"]["assumption"]
    assert top["adjusted_p"] <= 0.1
    # the terminal shows the bounds, the match rates once, and closes on the same verdict
    text = " ".join(out.split())
    assert "region = b: " in text and "bounds [" in text and "verdict: unfair" in text
    assert text.count("surnames found for 1.000 of 60000 rows") == 1
    names = pd.read_csv(path)["surname"].head(50)
    assert not any(f'"{n}"' in js.read_text() for n in names)  # no name enters the document
    from fairprobe.report.build import build_report
    from fairprobe.report.render import render_markdown

    rep = build_report([("d.json", doc)])
    assert rep.overall == "unfair"
    md, _ = render_markdown(rep, str(tmp_path))
    assert "by proxied race (BISG)" in md and "surnames found for" in md
    assert "calibrated within every slice" in md


def test_no_slice_is_reported_without_a_race_gap() -> None:
    # decisions depend on place (an index of the ZCTA drawn independently of its racial
    # composition) and on nothing else: every slice's race gaps are within 0.01 of 0;
    # 3 seeds of 20,000 rows (the family-wise error is at most 0.1 each)
    from fairprobe.discover.proxy import ProxyOptions, discover_by_proxy

    for seed in range(3):
        pop = draw_population(20_000, seed=100 + seed, intercept=0.3, race_effect={},
                              income_effect=0.0, place_effect=1.0, features=FEATURES)
        gaps = [pop.truth[g] - pop.truth["white"] for g in GROUPS]
        assert max(abs(x) for x in gaps) < 0.01
        res = discover_by_proxy(pop.frame, y_pred="approved",
                                features=["region", "product", "zip_income"],
                                proxy=ProxyOptions("bisg", "surname", "zip", groups=GROUPS),
                                seed=seed)
        assert res.tested > 20 and res.subgroups == () and res.verdict == "undetermined"


MODEL_MODULE = '''
SEEN = []


def approve(df):
    """Approves on the place's income and the product: it only gets the columns it is sent."""
    SEEN.append(sorted(df.columns))
    return ((df["zip_income"].to_numpy() > -0.3) | (df["product"].to_numpy() == "q")).astype(int)
'''


def test_a_model_gets_the_document_its_decisions_get_in_a_file(planted, tmp_path, capsys,
                                                               monkeypatch) -> None:
    path, pop = planted
    first = pd.Series(["MARIA", "JAMES", "JOSE", "MARY"] * 2000)
    pool = pop.frame.drop(columns=["approved"]).head(8000).assign(
        first_name=first, race=pd.Series(pop.race[:8000]).where(lambda r: r.index < 2000, ""))
    pool.to_csv(tmp_path / "pool.csv", index=False)
    (tmp_path / "proxy_disc_mod.py").write_text(MODEL_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    cfg = tmp_path / "model.toml"
    cfg.write_text('kind = "local"\ncallable = "proxy_disc_mod:approve"\nname = "approve"\n')
    base = ["--features", "region,product,zip_income", "--proxy", "bifsg", "--surname-col",
            "surname", "--zip-col", "zip", "--first-name-col", "first_name", "--race-col",
            "race", "--group-a", "hispanic"]
    code, _, err = run_cli("discover", "--backend-config", str(cfg), "--queries",
                           str(tmp_path / "pool.csv"), "--cache", str(tmp_path / "c.sqlite"),
                           *base, "--json", str(tmp_path / "m.json"), capsys=capsys)
    assert code == 0, err
    import proxy_disc_mod  # the module the backend imported

    assert proxy_disc_mod.SEEN and all(
        not {"surname", "first_name", "zip", "race"} & set(cols) for cols in proxy_disc_mod.SEEN)
    decided = pool.assign(model=((pool["zip_income"] > -0.3) | (pool["product"] == "q"))
                          .astype(int))
    decided.to_csv(tmp_path / "f.csv", index=False)
    code2, _, err2 = run_cli("discover", "--predictions", str(tmp_path / "f.csv"),
                             "--y-pred-col", "model", *base, "--json", str(tmp_path / "f.json"),
                             capsys=capsys)
    assert code2 == code, err2
    model, file = (json.loads((tmp_path / n).read_text()) for n in ("m.json", "f.json"))
    extra = model["provenance"]["extra"]
    assert extra["sent_columns"] == ["zip_income", "region", "product"]
    assert extra["paid"] + extra["cached"] == 8000
    assert model["proxy"]["validation"]["recorded"] == 2000
    for d in (model, file):
        d.pop("provenance")
    assert model == file


def _empirical_gap(pop: object, conditions: list[dict], group: str) -> float:
    """A slice's race gap in the drawn population, by the hidden race (the truth the bounds
    target, up to the sampling error of tens of thousands of rows)."""
    import numpy as np

    f, race = pop.frame, pop.race  # type: ignore[attr-defined]
    m = np.ones(len(f), dtype=bool)
    for c in conditions:
        m &= (f[c["feature"]].astype(str) == str(c["value"])).to_numpy()
    y = f["approved"].to_numpy()
    return float(y[m & (race == group)].mean() - y[m & (race == "white")].mean())


def test_recorded_races_and_strata_tighten_every_slice_and_still_cover(planted, tmp_path,
                                                                        capsys) -> None:
    import numpy as np

    path, pop = planted
    # race recorded for half the rows, at random: recording depends on nothing, so the
    # condition --race-in-bounds states holds
    rng = np.random.default_rng(11)
    recorded = pop.frame.assign(race=np.where(rng.random(len(pop.frame)) < 0.5, pop.race, ""))
    rec_path = tmp_path / "recorded.csv"
    recorded.to_csv(rec_path, index=False)
    plain, tight = tmp_path / "plain.json", tmp_path / "tight.json"
    code, _, err = run_cli(*_args(rec_path, "--json", str(plain)), capsys=capsys)
    assert code == 0, err
    code, out, err = run_cli(*_args(rec_path, "--race-col", "race", "--race-in-bounds",
                                    "--proxy-strata", "zip_income", "--json", str(tight)),
                             capsys=capsys)
    assert code == 0, err
    doc = json.loads(tight.read_text())
    px = doc["proxy"]
    assert px["strata"] == ["zip_income"] and "cells of zip_income" in px["assumptions"]["bounds"]
    assert "recorded depends on its surname and place only" in px["assumptions"]["in_bounds"]
    assert px["validation"]["in_bounds"]["rows"] == int((recorded["race"] != "").sum())
    # every reported pair's bounds cover its slice's gap, which lies outside the band
    assert doc["subgroups"]
    for s in doc["subgroups"]:
        gap = _empirical_gap(pop, s["conditions"], s["group"])
        assert s["bounds"]["low"] - 0.01 <= gap <= s["bounds"]["high"] + 0.01, s["slice"]
        assert abs(gap) > 0.05
    # the planted slice's bounds are tighter than on the proxy alone, and more is decided
    def top(d: dict) -> dict:
        return next(s for s in d["subgroups"] if s["slice"] == "region = b"
                    and s["group"] == "hispanic")["bounds"]
    before = json.loads(plain.read_text())
    assert top(doc)["high"] - top(doc)["low"] < top(before)["high"] - top(before)["low"]
    assert len(doc["subgroups"]) > len(before["subgroups"])
    text = " ".join(out.split())
    assert "recorded races in the bounds: hold if whether a row's race is recorded" in text
    from fairprobe.report.build import build_report
    from fairprobe.report.render import render_markdown

    md, _ = render_markdown(build_report([("t.json", doc)]), str(tmp_path))
    assert "Recorded races in the bounds: whether a row's race is recorded" in md


@pytest.mark.parametrize(("extra", "needle"), [
    (("--race-in-bounds",), "--race-in-bounds puts recorded races into the bounds: give "
                            "--race-col"),
    (("--proxy-strata", "nope"), "--proxy-strata: column 'nope' is not in the data"),
    (("--surname-col", "nope"), "--surname-col: column 'nope' is not in the data"),
    (("--control-col", "zip_income"), "--control-col does not apply to --proxy"),
    (("--metric", "eo", "--y-true-col", "approved"), "--metric does not apply to --proxy"),
    (("--group-a", "martian"), "unknown race 'martian'"),
    (("--proxy", "bifsg"), "--proxy bifsg needs --first-name-col"),
])
def test_bad_flags_are_one_error_line(planted, capsys, extra, needle) -> None:
    code, _, err = run_cli(*_args(planted[0], *extra), capsys=capsys)
    assert code == 2, err
    assert needle in err and "Traceback" not in err and err.count("error:") == 1


def test_no_surname_matched_and_proxy_flags_alone_are_refused(tmp_path, capsys) -> None:
    bad = tmp_path / "nomatch.csv"
    pd.DataFrame({"surname": ["Zzqxwv", "Qqzzxw"] * 20, "zip": ["10027", "60637"] * 20,
                  "region": ["a", "b"] * 20, "approved": [0, 1] * 20}).to_csv(bad, index=False)
    code, _, err = run_cli("discover", "--predictions", str(bad), "--y-pred-col", "approved",
                           "--features", "region", "--proxy", "bisg", "--surname-col",
                           "surname", "--zip-col", "zip", capsys=capsys)
    assert code == 2 and "No surname of the 40 rows" in err and "--surname-col" in err
    code, _, err = run_cli("discover", "--predictions", str(bad), "--y-pred-col", "approved",
                           "--features", "region", "--surname-col", "surname", capsys=capsys)
    assert code == 2 and "--surname-col goes with --proxy" in err and err.count("error:") == 1
    code, _, err = run_cli("discover", "--predictions", str(bad), "--y-pred-col", "approved",
                           "--features", "region", "--race-in-bounds", capsys=capsys)
    assert code == 2 and "--race-in-bounds goes with --proxy" in err and err.count("error:") == 1
