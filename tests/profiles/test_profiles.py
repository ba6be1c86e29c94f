"""The regulatory profiles against independent computations from the rules' definitions."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fairprobe.profiles import profile_job
from fairprobe.profiles.cfpb_air import cfpb_air_profile
from fairprobe.profiles.ugesp import ugesp_profile

REPO = Path(__file__).resolve().parents[2]
RACES = ["Hispanic or Latino", "White", "Black or African American",
         "Native Hawaiian or Pacific Islander", "Asian", "Native American or Alaska Native",
         "Two or More Races"]


def _ll144_file(path: Path) -> pd.DataFrame:
    """6,000 rows, sex x 7 EEO-1 races, one race under 2%, 150 unknowns (100 race, 50 sex)."""
    rng = np.random.default_rng(144)
    n = 6000
    p = np.array([0.2, 0.35, 0.2, 0.012, 0.12, 0.05, 0.068])
    df = pd.DataFrame({"sex": rng.choice(["Female", "Male"], n).astype(object),
                       "race": rng.choice(RACES, n, p=p / p.sum()).astype(object)})
    df.loc[rng.choice(n, 100, replace=False), "race"] = "Unknown"
    known_race = np.flatnonzero(df["race"] != "Unknown")
    df.loc[rng.choice(known_race, 50, replace=False), "sex"] = None
    lift = df["race"].map(dict(zip(RACES, [0.0, 0.4, -0.1, -0.3, 0.2, 0.0, 0.1], strict=True))).fillna(0)
    df["score"] = rng.normal(size=n) + lift.to_numpy()
    df["hired"] = (df["score"] + rng.normal(size=n) > 0.8).astype(int)
    df.to_csv(path, index=False)
    return df


def _by_hand(sexes: list, races: list, hits: list[int], family: str) -> dict[str, tuple]:
    """Rates and impact ratios from the DCWP definitions, with plain Python over the rows."""
    counts: dict[str, list[int]] = {}
    for s, r, h in zip(sexes, races, hits, strict=True):
        if family == "sex":
            key = s
        elif family == "race/ethnicity":
            key = r
        else:
            key = None if s is None or r is None else f"{s}, {r}"
        if key is None:
            continue
        c = counts.setdefault(key, [0, 0])
        c[0] += 1
        c[1] += h
    rates = {k: c[1] / c[0] for k, c in counts.items()}
    best = max(rates.values())
    return {k: (counts[k][0], rates[k], rates[k] / best) for k in counts}


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fairprobe", "audit", *args],
                          capture_output=True, text=True, cwd=REPO, timeout=120,
                          env={"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin",
                               "COLUMNS": "200"})


@pytest.mark.parametrize("rate", ["selection", "scoring"])
def test_ll144_equals_the_rule_computed_by_hand(tmp_path: Path, rate: str) -> None:
    df = _ll144_file(tmp_path / "aedt.csv")
    out = tmp_path / "ll144.json"
    col = ["--y-pred-col", "hired"] if rate == "selection" else ["--score-col", "score"]
    r = _run("--predictions", str(tmp_path / "aedt.csv"), "--group-col", "sex,race", *col,
             "--profile", "nyc-ll144", "--interval", "score", "--json", str(out),
             "--csv", str(tmp_path / "ll144.csv"), "--data-source", "seeded test data")
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    assert doc["kind"] == "profile" and doc["rate"] == rate
    sexes = [None if isinstance(s, float) else s for s in df["sex"]]
    races = [None if r == "Unknown" else r for r in df["race"]]
    if rate == "selection":
        hits = [int(h) for h in df["hired"]]
    else:
        scores = sorted(float(s) for s in df["score"])
        median = (scores[2999] + scores[3000]) / 2  # 6,000 scores: the mean of the middle two
        hits = [int(float(s) > median) for s in df["score"]]
        assert doc["median_score"] == pytest.approx(median, abs=1e-12)
    unknown = {"sex": 50, "race/ethnicity": 100, "intersectional": 150}
    for fam in doc["families"]:
        want = _by_hand(sexes, races, hits, fam["family"])
        assert fam["unknown"] == unknown[fam["family"]]
        assert {row["category"] for row in fam["rows"]} == set(want)
        for row in fam["rows"]:
            n, rate_, ratio = want[row["category"]]
            assert row["n"] == n
            assert abs(row["rate"] - rate_) <= 1e-9
            assert abs(row["impact_ratio"] - ratio) <= 1e-9
            assert row["small"] == (n / sum(w[0] for w in want.values()) < 0.02)
    assert doc["unknown"] == 150
    race = next(f for f in doc["families"] if f["family"] == "race/ethnicity")
    assert [row["category"] for row in race["rows"] if row["small"]] == [
        "Native Hawaiian or Pacific Islander"]
    assert doc["summary"]["data_source"] == "seeded test data"
    assert "decidably_below" in doc["fairprobe_additions"]
    csv = pd.read_csv(tmp_path / "ll144.csv")
    assert len(csv) == sum(len(f["rows"]) for f in doc["families"])
    assert "[fairprobe]" in r.stdout


def test_ll144_exclude_small_keeps_counts_and_drops_the_ratio(tmp_path: Path) -> None:
    df = _ll144_file(tmp_path / "aedt.csv")
    res = profile_job(df, profile="nyc-ll144", group_cols=["sex", "race"], y_pred_col="hired",
                      exclude_small=True, interval="score").result
    race = next(f for f in res.families if f.family == "race/ethnicity")
    small = next(r for r in race.rows if r.small)
    assert small.excluded and small.impact_ratio is None and small.n > 0
    assert all(r.impact_ratio is not None for r in race.rows if not r.small)


def _four_fifths_data() -> pd.DataFrame:
    """A: 60 of 100 selected, B: 30 of 80, C: 23 of 50, D: 1 of 3 (under 2% of 233)."""
    rows = []
    for g, n, k in (("A", 100, 60), ("B", 80, 30), ("C", 50, 23), ("D", 3, 1)):
        rows += [(g, int(i < k)) for i in range(n)]
    return pd.DataFrame(rows, columns=["group", "sel"])


def test_ugesp_reproduces_the_hand_worked_four_fifths_example() -> None:
    res = ugesp_profile(_four_fifths_data(), group_cols=["group"], y_pred_col="sel")
    rows = {r.rate.category: r for r in res.rows}
    assert res.highest == "A"
    b, c, d = rows["B"], rows["C"], rows["D"]
    # B: 0.375 / 0.6 = 0.625 < 0.8; 0.8 x 0.6 x 80 = 38.4 -> 39 selections, 9 more; one more
    # (31 / 80 = 0.3875, ratio 0.646) does not flip; pooled P = 90/180, SE 0.075, Z = -3
    assert b.rate.impact_ratio == pytest.approx(0.625, abs=1e-12) and b.flagged
    assert b.shortfall == 9 and b.one_flips is False
    assert b.z == pytest.approx(-3.0, abs=1e-12) and b.two_sd
    # C: 0.46 / 0.6 = 0.7667; 0.8 x 0.6 x 50 = 24 exactly: one more selection reaches 0.8
    assert c.rate.impact_ratio == pytest.approx(0.46 / 0.6, abs=1e-12) and c.flagged
    assert c.shortfall == 1 and c.one_flips is True
    assert b.fisher_p is not None and b.fisher_p < 0.05
    assert c.small_numbers == (c.fisher_p is not None and c.fisher_p >= 0.05)
    # D: 3 of 233 applicants (1.3%), and 3 < 30: the small-numbers warning
    assert d.rate.small and d.small_numbers
    excl = {r.rate.category: r for r in ugesp_profile(
        _four_fifths_data(), group_cols=["group"], y_pred_col="sel", exclude_small=True).rows}
    assert excl["D"].rate.excluded and excl["D"].flagged is None and excl["D"].rate.n == 3


def _lending(seed: int = 7) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    n = 3000
    g = rng.choice(["White", "Black", "Hispanic", "Asian"], n, p=[0.55, 0.2, 0.15, 0.1])
    shift = pd.Series(g).map({"White": 0.0, "Black": -0.6, "Hispanic": -0.2, "Asian": 0.05})
    score = rng.normal(650, 60, n) + 60 * shift.to_numpy()
    return pd.DataFrame({"race": g, "score": score, "approved": (score > 640).astype(int)})


def test_cfpb_air_and_smd_equal_the_textbook_formulas() -> None:
    df = _lending()
    res = cfpb_air_profile(df, group_cols=["race"], y_pred_col="approved", reference="White",
                           score_col="score")
    groups = list(df["race"])
    approved = [int(a) for a in df["approved"]]
    scores = [float(s) for s in df["score"]]
    sd = statistics.stdev(scores)  # the population of applicants, n - 1 denominator

    def rate(g: str) -> float:
        sel = [a for x, a in zip(groups, approved, strict=True) if x == g]
        return sum(sel) / len(sel)

    def mean(g: str) -> float:
        return statistics.fmean(s for x, s in zip(groups, scores, strict=True) if x == g)

    for r in res.rows:
        g = r.rate.category
        assert abs(r.rate.impact_ratio - rate(g) / rate("White")) <= 1e-9
        if g == "White":
            assert r.smd is None and r.air_flag is None
            continue
        assert abs(r.smd - (mean(g) - mean("White")) / sd) <= 1e-9
        assert r.air_flag == (rate(g) / rate("White") < 0.8)
        assert r.smd_flag == (abs(r.smd) > 0.3)
        need = r.shortfall
        n_g = groups.count(g)
        k_g = round(rate(g) * n_g)
        assert (k_g + need) / n_g >= 0.8 * rate("White") - 1e-12
        assert need == 0 or (k_g + need - 1) / n_g < 0.8 * rate("White")
    black = next(r for r in res.rows if r.rate.category == "Black")
    assert black.air_flag and black.smd_flag and black.rate.decidably_below


@pytest.mark.parametrize(("args", "needle"), [
    (["--profile", "nyc-ll144", "--group-col", "race"], "--group-col SEX,RACE"),
    (["--profile", "cfpb-air", "--group-col", "race"], "--reference"),
    (["--profile", "bogus", "--group-col", "race"], "--profile"),
    (["--exclude-small", "--group-col", "race"], "--profile"),
])
def test_bad_profile_flags_name_the_fix(tmp_path: Path, args: list[str], needle: str) -> None:
    _four_fifths_data().rename(columns={"group": "race"}).to_csv(tmp_path / "f.csv",
                                                                 index=False)
    r = _run("--predictions", str(tmp_path / "f.csv"), "--y-pred-col", "sel", *args)
    assert r.returncode != 0 and "Traceback" not in r.stderr
    assert needle in r.stderr + r.stdout


def test_the_command_writes_what_the_library_returns(tmp_path: Path) -> None:
    df = _lending()
    df.to_csv(tmp_path / "d.csv", index=False)
    r = _run("--predictions", str(tmp_path / "d.csv"), "--group-col", "race", "--y-pred-col",
             "approved", "--score-col", "score", "--reference", "White", "--profile",
             "cfpb-air", "--json", str(tmp_path / "air.json"))
    assert r.returncode == 0, r.stderr
    cli = json.loads((tmp_path / "air.json").read_text())
    lib = profile_job(str(tmp_path / "d.csv"), profile="cfpb-air", group_cols=["race"],
                      y_pred_col="approved", score_col="score", reference="White").to_dict()
    cli.pop("provenance")
    lib.pop("provenance")
    assert cli == json.loads(json.dumps(lib))


MODEL = '''
import numpy as np


def hire(df):
    """Hires on the score alone; raises if the protected columns reach it."""
    assert not {"sex", "race"} & set(df.columns), sorted(df.columns)
    return (df["score"].to_numpy() > 0.8).astype(int)
'''


def test_a_model_gets_the_profile_its_decisions_get_in_a_file(tmp_path: Path) -> None:
    # one answer on both paths: the profile of a black-box model's answers equals the profile of
    # a file holding the same decisions; the protected columns are never sent to the model
    df = _ll144_file(tmp_path / "pool.csv")
    (tmp_path / "hire_model.py").write_text(MODEL)
    cfg = tmp_path / "model.toml"
    cfg.write_text('kind = "local"\ncallable = "hire_model:hire"\nname = "hire"\n')
    env = {"PYTHONPATH": f"{REPO / 'src'}:{tmp_path}", "PATH": "/usr/bin:/bin", "COLUMNS": "200"}
    base = ["--group-col", "sex,race", "--profile", "nyc-ll144"]
    r = subprocess.run([sys.executable, "-m", "fairprobe", "audit", "--backend-config", str(cfg),
                        "--queries", str(tmp_path / "pool.csv"), "--budget", "all", "--cache",
                        str(tmp_path / "c.sqlite"), *base, "--json", str(tmp_path / "m.json")],
                       capture_output=True, text=True, cwd=REPO, timeout=120, env=env)
    assert r.returncode in (0, 1), r.stderr
    df.assign(model=(df["score"] > 0.8).astype(int)).to_csv(tmp_path / "f.csv", index=False)
    r2 = _run("--predictions", str(tmp_path / "f.csv"), "--y-pred-col", "model", *base,
              "--json", str(tmp_path / "f.json"))
    assert r2.returncode == r.returncode, r2.stderr
    model, file = (json.loads((tmp_path / n).read_text()) for n in ("m.json", "f.json"))
    assert model["provenance"]["extra"]["sent_columns"] == ["score", "hired"]
    assert model["provenance"]["extra"]["paid"] + model["provenance"]["extra"]["cached"] == 6000
    for d in (model, file):
        d.pop("provenance")
    assert model == file
    bad = subprocess.run([sys.executable, "-m", "fairprobe", "audit", "--backend-config",
                          str(cfg), *base], capture_output=True, text=True, cwd=REPO,
                         timeout=120, env=env)
    assert bad.returncode == 2 and "--queries" in bad.stderr and "Traceback" not in bad.stderr
