"""Command-line conventions: ``-h``, ``-`` for standard output and input, one label flag in both
modes, ``--group-a/--group-b`` with ``--predictions``, no default group column on the user's
data, and the errors that name the flag (each a real ``fairprobe`` process)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest


def _cli(*args: str, cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fairprobe", *args], cwd=cwd, input=stdin,
                          capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def preds(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rng = np.random.default_rng(3)
    n = 600
    g = rng.choice(["a", "b", "c"], n, p=[0.5, 0.4, 0.1])
    yt = rng.random(n) < 0.4
    yp = rng.random(n) < np.where(yt, 0.7, 0.2) + np.where(g == "c", 0.1, 0.0)
    d = tmp_path_factory.mktemp("conv")
    pd.DataFrame({"y_pred": yp.astype(int), "y_true": np.where(yt, "good", "bad"),
                  "grp": g, "x": rng.normal(size=n)}).to_csv(d / "preds.csv", index=False)
    return d


def test_h_is_help(tmp_path: Path) -> None:
    for args in (("-h",), ("audit", "-h"), ("report", "-h")):
        r = _cli(*args, cwd=tmp_path)
        assert r.returncode == 0 and "Usage" in r.stdout, (args, r.stderr)


def test_dash_is_stdin_and_stdout(preds: Path) -> None:
    text = (preds / "preds.csv").read_text()
    args = ("audit", "--predictions", "-", "--y-pred-col", "y_pred", "--y-true-col", "y_true",
            "--pos-label", "good", "--group-col", "grp", "--metric", "dp,eo")
    r = _cli(*args, "--json", "-", cwd=preds, stdin=text)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)  # stdout holds the document alone; the table went to stderr
    assert doc["kind"] == "audit" and doc["queried"] == 600 and "largest gap" in r.stderr
    assert not (preds / "-").exists()
    from_file = _cli(*args[:2], str(preds / "preds.csv"), *args[3:], "--json", "f.json",
                     cwd=preds)
    assert from_file.returncode == 0, from_file.stderr
    same = json.loads((preds / "f.json").read_text())
    assert doc["summaries"] == same["summaries"]
    import hashlib

    assert doc["provenance"]["backend"]["file_sha256"] == hashlib.sha256(
        text.encode()).hexdigest()
    r = _cli(*args, "--csv", "-", cwd=preds, stdin=text)
    assert r.returncode == 0 and r.stdout.startswith("group,") and not (preds / "-").exists()


def test_label_col_is_y_true_col_and_groups_work_with_predictions(preds: Path) -> None:
    base = ("audit", "--predictions", "preds.csv", "--y-pred-col", "y_pred", "--pos-label",
            "good", "--group-col", "grp", "--metric", "eo")
    a = _cli(*base, "--label-col", "y_true", "--json", "a.json", cwd=preds)
    b = _cli(*base, "--y-true-col", "y_true", "--json", "b.json", cwd=preds)
    assert a.returncode == 0 and b.returncode == 0, a.stderr + b.stderr
    da, db = (json.loads((preds / f).read_text()) for f in ("a.json", "b.json"))
    assert da["summaries"] == db["summaries"]
    two = _cli(*base, "--y-true-col", "y_true", "--group-a", "a", "--group-b", "c",
               "--json", "two.json", cwd=preds)
    assert two.returncode == 0, two.stderr
    s = json.loads((preds / "two.json").read_text())["summaries"][
        "equal_opportunity_difference"]
    assert sorted(s["compared"]) == ["a", "c"]
    df = pd.read_csv(preds / "preds.csv")
    tpr = {k: ((v.y_pred == 1) & (v.y_true == "good")).sum() / (v.y_true == "good").sum()
           for k, v in df.groupby("grp")}
    assert s["estimate"] == pytest.approx(abs(tpr["a"] - tpr["c"]), abs=1e-15)
    rest = _cli(*base, "--y-true-col", "y_true", "--group-a", "c", "--json", "r.json",
                cwd=preds)
    assert rest.returncode == 0, rest.stderr
    assert sorted(json.loads((preds / "r.json").read_text())["summaries"][
        "equal_opportunity_difference"]["compared"]) == ["c", "rest"]


@pytest.mark.parametrize("args, code, needles", [
    ((), 2, ["--group-col is required with --predictions", "its columns: y_pred, y_true, grp, x"]),
    (("--group-col", "grp", "--pos-label", "approve"), 2,
     ["holds 'bad' and 'good'", "--pos-label", "matches neither"]),
    (("--group-col", "grp", "--pos-label", "good", "--group-a", "zz"), 2,
     ["--group-a 'zz' is not a value of 'grp'"]),
])
def test_errors_name_the_flag(preds: Path, args: tuple[str, ...], code: int,
                              needles: list[str]) -> None:
    r = _cli("audit", "--predictions", "preds.csv", "--y-pred-col", "y_pred", "--y-true-col",
             "y_true", "--metric", "eo", *args, cwd=preds)
    assert r.returncode == code, r.stderr
    assert r.stderr.startswith("error: ") and r.stderr.count("\n") == 1, r.stderr
    for needle in needles:
        assert needle in r.stderr, (needle, r.stderr)


def test_a_metric_that_cannot_be_computed_is_an_error(preds: Path) -> None:
    df = pd.read_csv(preds / "preds.csv")
    df.loc[df.grp != "a", "y_true"] = "bad"  # only group a has positives: no EO to compare
    df.to_csv(preds / "one.csv", index=False)
    r = _cli("audit", "--predictions", "one.csv", "--y-pred-col", "y_pred", "--y-true-col",
             "y_true", "--pos-label", "good", "--group-col", "grp", "--metric", "dp,eo",
             "--json", "one.json", cwd=preds)
    assert r.returncode == 2 and "--metric equal_opportunity_difference cannot be computed" \
        in r.stderr, r.stderr
    doc = json.loads((preds / "one.json").read_text())  # what was computed is kept
    assert "demographic_parity_difference" in doc["summaries"]


def test_audit_model_takes_an_estimator_or_its_predict(tmp_path: Path) -> None:
    from sklearn.linear_model import LogisticRegression

    from fairprobe.audit.job import audit_model
    from fairprobe.errors import InvalidParameterError

    rng = np.random.default_rng(0)
    pool = pd.DataFrame({"x": rng.normal(size=400), "grp": rng.choice(["a", "b"], 400)})
    model = LogisticRegression().fit(pool[["x"]], (pool.x > 0.3).astype(int))
    kw: dict[str, Any] = {"queries": pool, "group_col": "grp", "metric": "dp",
                          "feature_cols": "x", "cache": None}
    by_est = audit_model(model, **kw).to_dict()
    by_predict = audit_model(model.predict, **kw).to_dict()
    by_callable = audit_model(lambda df: (df["x"] > 0.3).astype(int), **kw).to_dict()
    key = "summaries" if "summaries" in by_est else "metric"
    assert by_est[key] == by_predict[key]
    assert by_est["provenance"]["backend"]["kind"] == "local"
    assert by_callable["verdict"] in ("fair", "unfair", "undetermined")
    with pytest.raises(InvalidParameterError, match="fitted estimator.*callable"):
        audit_model(42, **kw)
    with pytest.raises(InvalidParameterError, match="group_col .--group-col. is required"):
        audit_model(model, queries=pool, metric="dp", cache=None)


def test_a_failed_audit_says_the_rerun_resumes(tmp_path: Path) -> None:
    """The endpoint dies after 3 batches: the error says how many answers were kept and that the
    rerun resumes; the rerun pays only for the rest."""
    from collections.abc import Sequence

    from fairprobe.access import Answer, Backend
    from fairprobe.access.base import TransientAccessError
    from fairprobe.audit.job import audit_model
    from fairprobe.errors import EndpointUnreachableError

    class Dies(Backend):
        kind = "dies"
        max_batch = 50

        def __init__(self, after: int | None) -> None:
            self.after, self.calls, self.paid = after, 0, 0

        @property
        def identity(self) -> str:
            return "dies:endpoint"

        def model_identity(self) -> Any:  # a reported identity: no sized check in this test
            from fairprobe.access.identity import identity_from_report

            return identity_from_report({"model": "m1"})

        def ask(self, records: Sequence[Any]) -> list[Answer]:
            self.calls += 1
            if self.after is not None and self.calls > self.after:
                raise TransientAccessError("connection refused")
            self.paid += len(records)
            return [Answer(int(r["x"] > 0), None) for r in records]

    rng = np.random.default_rng(1)
    pool = pd.DataFrame({"x": rng.normal(size=400), "grp": rng.choice(["a", "b"], 400)})
    kw: dict[str, Any] = {"queries": pool, "group_col": "grp", "metric": "dp",
                          "feature_cols": "x", "budget": "all", "retries": 0, "concurrency": 1,
                          "cache": tmp_path / "c.sqlite"}
    with pytest.raises(EndpointUnreachableError) as err:
        audit_model(Dies(after=3), **kw)
    msg = str(err.value)
    assert "still unreachable" in msg and "The 150 answer(s) paid for in this run are in the " \
        "cache" in msg and "rerun the same command to resume" in msg
    again = Dies(after=None)
    audit_model(again, **kw)
    assert again.paid == 400 - 150


def test_y_true_col_and_label_col_are_one_flag_in_model_audits(tmp_path: Path) -> None:
    import joblib
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(2)
    pool = pd.DataFrame({"x": rng.normal(size=300), "grp": rng.choice(["a", "b"], 300)})
    pool["label"] = (pool.x + rng.normal(scale=0.5, size=300) > 0).astype(int)
    pool.to_csv(tmp_path / "pool.csv", index=False)
    joblib.dump(LogisticRegression().fit(pool[["x"]], pool.label), tmp_path / "m.joblib")
    (tmp_path / "m.toml").write_text('kind = "local"\npath = "m.joblib"\nallow_pickle = true\n')
    docs = []
    for flag in ("--y-true-col", "--label-col"):
        out = f"{flag[2:]}.json"
        r = _cli("audit", "--backend-config", "m.toml", "--queries", "pool.csv", "--group-col",
                 "grp", "--metric", "eo", flag, "label", "--budget", "all", "--no-progress",
                 "--no-cache", "--json", out, cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        docs.append(json.loads((tmp_path / out).read_text()))
    assert docs[0]["summaries"] == docs[1]["summaries"]
    assert docs[0]["provenance"]["extra"]["columns"]["label"] == "label"
