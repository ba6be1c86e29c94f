"""``fairprobe audit --predictions``: predictions already made, audited through the every-group
verdict path; nothing is paid.

Guarantees: on the Adult data of fairlearn's quickstart (a logistic regression's predictions on
the test split) every by-group rate equals fairlearn's ``MetricFrame`` exactly, and the largest
gaps equal ``demographic_parity_difference`` / ``equal_opportunity_difference`` (between
groups); every row is used unless ``--budget`` says otherwise; the provenance holds the file's
SHA-256; the report renders.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

FEATURES = ["age", "education-num", "race", "capital-gain", "hours-per-week"]


@pytest.fixture(scope="module")
def preds(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from sklearn.compose import make_column_transformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    from fairprobe.datasets import load_adult

    train = load_adult("train", names_seed=None).head(5000)
    model = make_pipeline(
        make_column_transformer((OneHotEncoder(handle_unknown="ignore"), ["race"]),
                                remainder=StandardScaler()),
        LogisticRegression(max_iter=1000)).fit(train[FEATURES], train["income"])
    test = load_adult("test", names_seed=None).head(4000)
    out = pd.DataFrame({"p": model.predict(test[FEATURES]),
                        "score": model.predict_proba(test[FEATURES])[:, 1],
                        "y": test["income"], "race": test["race"], "sex": test["sex"],
                        "w": np.random.default_rng(0).lognormal(0.0, 0.5, len(test))})
    path = tmp_path_factory.mktemp("preds") / "preds.csv"
    out.to_csv(path, index=False)
    return path


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fairprobe", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def test_predictions_equal_fairlearn_and_the_report_renders(preds: Path, tmp_path: Path) -> None:
    from fairlearn.metrics import (
        MetricFrame,
        demographic_parity_difference,
        equal_opportunity_difference,
        selection_rate,
        true_positive_rate,
    )

    out, csv = tmp_path / "a.json", tmp_path / "t.csv"
    r = _cli("audit", "--predictions", str(preds), "--y-pred-col", "p", "--y-true-col", "y",
             "--group-col", "race", "--metric", "dp,eo", "--min-group-size", "1",
             "--json", str(out), "--csv", str(csv), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "nothing paid" in r.stdout
    doc = json.loads(out.read_text())
    df = pd.read_csv(preds)
    assert doc["paid"] == 0 and doc["queried"] == len(df) == 4000  # every row, not 2000
    mf = MetricFrame(metrics={"selection_rate": selection_rate, "tpr": true_positive_rate},
                     y_true=df["y"], y_pred=df["p"], sensitive_features=df["race"])
    by_group = {row["group"]: row for row in doc["by_group"]} if isinstance(
        doc["by_group"], list) else doc["by_group"]
    for g, row in mf.by_group.iterrows():
        got = by_group[str(g)]
        assert got["rates"]["selection_rate"]["value"] == row["selection_rate"]
        assert got["rates"]["true_positive_rate"]["value"] == row["tpr"]
    s = doc["summaries"]
    dp = demographic_parity_difference(df["y"], df["p"], sensitive_features=df["race"])
    eo = equal_opportunity_difference(df["y"], df["p"], sensitive_features=df["race"])
    assert s["demographic_parity_difference"]["estimate"] == pytest.approx(dp, abs=1e-15)
    assert s["equal_opportunity_difference"]["estimate"] == pytest.approx(eo, abs=1e-15)
    assert doc["verdict"] in ("fair", "unfair", "undetermined")
    prov = doc["provenance"]
    sha = hashlib.sha256(preds.read_bytes()).hexdigest()
    assert prov["query_pool"]["file_sha256"] == sha and prov["backend"]["kind"] == "predictions"
    assert doc["backend"].endswith(sha[:12])
    # the CSV is the by-group table the terminal prints, with the JSON's numbers
    table = pd.read_csv(csv)
    assert list(table["group"]) == [str(g) for g in mf.by_group.index]
    np.testing.assert_array_equal(table["selection_rate"].to_numpy(),
                                  mf.by_group["selection_rate"].to_numpy())
    rep = _cli("report", str(out), "--html", str(tmp_path / "r.html"), cwd=tmp_path)
    assert rep.returncode == 0, rep.stderr
    assert "race" in (tmp_path / "r.html").read_text()


def test_sample_weights_equal_fairlearn_sample_params(preds: Path, tmp_path: Path) -> None:
    from fairlearn.metrics import MetricFrame, selection_rate, true_positive_rate

    out = tmp_path / "w.json"
    r = _cli("audit", "--predictions", str(preds), "--y-pred-col", "p", "--y-true-col", "y",
             "--sample-weight-col", "w", "--group-col", "sex", "--metric", "dp,eo",
             "--json", str(out), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "design-based" in r.stdout and "Hall" in r.stdout
    doc = json.loads(out.read_text())
    df = pd.read_csv(preds)
    mf = MetricFrame(metrics={"sel": selection_rate, "tpr": true_positive_rate}, y_true=df["y"],
                     y_pred=df["p"], sensitive_features=df["sex"],
                     sample_params={"sel": {"sample_weight": df["w"]},
                                    "tpr": {"sample_weight": df["w"]}})
    got = {row["group"]: row["rates"] for row in doc["by_group"]}
    for g, row in mf.by_group.iterrows():
        assert got[str(g)]["selection_rate"]["value"] == pytest.approx(row["sel"], abs=1e-12)
        assert got[str(g)]["true_positive_rate"]["value"] == pytest.approx(row["tpr"], abs=1e-12)
    assert doc["simultaneous_method"] == "bonferroni"
    assert doc["provenance"]["extra"]["columns"]["sample_weight"] == "w"


def test_budget_draws_rows_and_all_takes_every_row(preds: Path, tmp_path: Path) -> None:
    for budget, rows in (("500", 500), ("all", 4000)):
        out = tmp_path / f"{budget}.json"
        r = _cli("audit", "--predictions", str(preds), "--y-pred-col", "p", "--group-col",
                 "sex", "--metric", "dp", "--budget", budget, "--json", str(out), cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        assert json.loads(out.read_text())["queried"] == rows


@pytest.mark.parametrize("args, needle", [
    (["--group-col", "sex"], "--predictions needs --y-pred-col"),
    (["--y-pred-col", "nope", "--group-col", "sex"], "--y-pred-col 'nope' is not a column"),
    (["--y-pred-col", "p", "--group-col", "sex", "--url", "http://127.0.0.1:9"],
     "--url does not apply to --predictions"),
    (["--y-pred-col", "p", "--group-col", "sex", "--budget", "lots"],
     "--budget must be a positive integer or 'all'"),
    (["--y-pred-col", "p", "--group-col", "sex", "--budget", "9999"], "--budget all"),
    (["--y-pred-col", "race", "--group-col", "sex"], "--pos-label"),
])
def test_bad_flags_name_the_flag(preds: Path, tmp_path: Path, args: list[str],
                                 needle: str) -> None:
    r = _cli("audit", "--predictions", str(preds), *args, cwd=tmp_path)
    assert r.returncode != 0 and needle in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


def test_predictions_flags_need_the_file(tmp_path: Path) -> None:
    r = _cli("audit", "--y-pred-col", "p", cwd=tmp_path)
    assert r.returncode == 2 and "--y-pred-col works with --predictions" in r.stderr
