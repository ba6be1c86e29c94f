"""Live audits through the access layer: local backend, CLI, and the platform server process."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fairprobe.access import BlackBox, LocalModelBackend
from fairprobe.errors import DataError, EmptyGroupError
from fairprobe.sequential.pool import AuditPool, run_pool
from fairprobe.sequential.runner import audit_live


def _queries(n: int = 2000, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "x": rng.normal(size=n),
            "grp": np.where(rng.random(n) < 0.6, "M", "F"),
            "y": (rng.random(n) < 0.4).astype(int),
        }
    )


def _model(df: pd.DataFrame):  # a callable black box: decisions, scores and logits
    z = df["x"].to_numpy() + np.where(df["grp"].to_numpy() == "M", 0.8, -0.4)
    s = 1 / (1 + np.exp(-z))
    return (z > 0).astype(int), s, z


@pytest.mark.parametrize("test", ["glr", "betting", "fixed"])
@pytest.mark.parametrize("access", ["decisions", "scores", "logits"])
def test_live_equals_pool_replay(test: str, access: str) -> None:
    """A live audit with seed s queries the order of repeat 0 of run_pool(seed=s)."""
    q = _queries()
    dec, sco, lgt = _model(q)
    pool = AuditPool(
        in_a=(q["grp"] == "F").to_numpy(), group_names=("F", "M"),
        decisions=dec.astype(float), scores=sco, logits=lgt, labels=q["y"].to_numpy(float),
    )  # fmt: skip
    for metric in ("sp", "eo"):
        ref = run_pool(pool, metric=metric, access=access, test=test, tolerance=0.1, budget=300,
                       repeats=1, seed=9)  # fmt: skip
        with BlackBox(LocalModelBackend(_model, name="toy")) as bb:
            res = audit_live(
                bb, q, group_col="grp", label_col="y", metric=metric, access=access, test=test,
                tolerance=0.1, budget=300, seed=9, feature_cols=["x", "grp"],
            )  # fmt: skip
            assert bb.spent == res.queries_paid == res.queries
        assert res.queries == int(ref.queries[0])
        assert res.outcome == ref.to_dict()["outcome_per_repeat"][0]
        d = res.to_dict()
        assert len(d["path"]["statistic_upper"]) == res.queries
        assert d["groups"]["F"]["n"] + d["groups"]["M"]["n"] == res.queries
        json.dumps(d, allow_nan=True)


def test_live_batches_pay_more_than_they_use() -> None:
    q = _queries()
    with BlackBox(LocalModelBackend(_model, name="toy")) as bb:
        res = audit_live(bb, q, group_col="grp", budget=500, seed=1, batch_size=50,
                         feature_cols=["x", "grp"])  # fmt: skip
    assert res.outcome == "violation"
    assert res.queries_paid >= res.queries and res.queries_paid % 50 == 0


def test_live_bad_input() -> None:
    q = _queries(100)
    with BlackBox(LocalModelBackend(_model, name="toy")) as bb:
        with pytest.raises(EmptyGroupError):
            audit_live(bb, q.assign(grp="M"), group_col="grp", budget=10)
        with pytest.raises(DataError, match="not in the queries"):
            audit_live(bb, q, group_col="grp", budget=10, feature_cols=["nope"])


def _run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    from fairprobe.cli.main import main

    with pytest.raises(SystemExit) as exc:
        main(argv)
    out = capsys.readouterr()
    return int(exc.value.code or 0), out.out, out.err


def test_cli_pool_mode_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    q = _queries()
    dec, sco, lgt = _model(q)
    q = q.assign(dec=dec, score=sco, logit=lgt)
    f = tmp_path / "pool.csv"
    q.to_csv(f, index=False)
    out = tmp_path / "res.json"
    code, _, err = _run_cli(
        ["sequential", "--input", str(f), "--group-col", "grp", "--decision-col", "dec",
         "--score-col", "score", "--logit-col", "logit", "--label-col", "y", "--metric", "eo",
         "--tolerance", "0.1", "--access", "logits", "--test", "glr", "--budget", "500",
         "--repeats", "25", "--seed", "3", "--json", str(out), "--no-progress"],
        capsys,
    )  # fmt: skip
    assert code == 0, err
    d = json.loads(out.read_text())
    assert len(d["queries"]) == 25
    assert d["mean_queries"] == pytest.approx(np.mean(d["queries"]))
    assert set(d["outcomes"]) == {"violation", "compliant", "inconclusive"}


@pytest.mark.parametrize(
    "extra,needle",
    [
        (["--tolerance", "1.5"], "'tolerance' parameter"),
        (["--tolerance", "0"], "'tolerance' parameter"),
        (["--budget", "0"], "'budget' parameter"),
        (["--access", "scores", "--score-col", "x"], "Scores must lie in [0, 1]"),
        (["--metric", "eo", "--label-col", "zero"], "Y=1 sub-pool is empty"),
        (["--group-col", "one"], "no member of group"),
    ],
)
def test_cli_bad_input_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], needle: str
) -> None:
    q = _queries(300).assign(zero=0, one="M")
    q["dec"] = _model(q)[0]
    f = tmp_path / "pool.csv"
    q.to_csv(f, index=False)
    argv = ["sequential", "--input", str(f), "--group-col", "grp", "--decision-col", "dec",
            "--repeats", "2", "--no-progress"]  # fmt: skip
    # later options win: the bad value overrides the defaults above
    code, _, err = _run_cli(argv + extra, capsys)
    assert code != 0
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and needle in lines[0], err


def test_cli_live_mode_with_backend_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Live mode through --backend-config (a local model file) and --queries."""
    import joblib
    from sklearn.linear_model import LogisticRegression

    q = _queries(1500)
    X = pd.DataFrame({"x": q["x"], "m": (q["grp"] == "M").astype(float)})
    y = ((X["x"] + 1.5 * X["m"]) > 0.5).astype(int)
    model = LogisticRegression().fit(X, y)
    joblib.dump(model, tmp_path / "m.joblib")
    (tmp_path / "backend.toml").write_text(
        'kind = "local"\npath = "m.joblib"\nallow_pickle = true\n'
    )
    q.assign(m=X["m"]).to_csv(tmp_path / "queries.csv", index=False)
    out = tmp_path / "live.json"
    code, _, err = _run_cli(
        ["sequential", "--backend-config", str(tmp_path / "backend.toml"), "--queries",
         str(tmp_path / "queries.csv"), "--feature-cols", "x,m", "--group-col", "grp",
         "--access", "scores", "--budget", "600", "--seed", "2", "--cache",
         str(tmp_path / "c.sqlite"), "--json", str(out), "--no-progress"],
        capsys,
    )  # fmt: skip
    assert code == 0, err
    d = json.loads(out.read_text())
    # the closing lines: the test's own word beside the finding, then the verdict gated on
    lines = [ln for ln in _.splitlines() if ln.strip()]
    fv = d["finding"]["verdict"]
    assert lines[-2].startswith(f"stopped: violation; finding: {fv}, "), lines[-2:]
    assert lines[-1].startswith(f"verdict: {fv} (")
    assert d["outcome"] == "violation" and d["queries"] == len(d["path"]["statistic_upper"])
    assert d["path"]["statistic_upper"][-1] >= d["boundaries"]["upper"]
    assert d["queries_paid"] == d["queries"]
    assert d["outcomes"]["violation"] == 1.0 and d["mean_queries"] == d["queries"]
    code, _, err = _run_cli(
        ["sequential", "--backend-config", str(tmp_path / "backend.toml"), "--input", "x.csv"],
        capsys,
    )
    assert code == 2 and err.startswith("error: Give --input") and len(err.splitlines()) == 1


def test_live_stops_when_the_smaller_group_is_used_up() -> None:
    """8% minority, budget 4,000: no pair forms after the minority's rows, so the audit stops
    there, undetermined for that reason, pays at most twice the minority's rows plus 100 and
    records the queries it saved."""
    rng = np.random.default_rng(4)
    n = 5000
    q = pd.DataFrame({"x": rng.normal(size=n),
                      "grp": np.where(rng.random(n) < 0.08, "F", "M")})  # fmt: skip
    minority = int((q["grp"] == "F").sum())

    def model(df: pd.DataFrame):  # the same rate in both groups: never unfair
        z = df["x"].to_numpy()
        return (z > 0).astype(int), 1 / (1 + np.exp(-z)), z

    with BlackBox(LocalModelBackend(model, name="toy")) as bb:
        res = audit_live(bb, q, group_col="grp", budget=4000, seed=3, tolerance=0.02,
                         feature_cols=["x"])  # fmt: skip
        assert bb.spent == res.queries_paid
    d = res.to_dict()
    assert res.queries_paid <= 2 * minority + 100, (res.queries_paid, minority)
    assert res.outcome == "inconclusive" and d["verdict"] == "undetermined"
    assert d["stopped"] == "the pool has no more rows of group F"
    assert d["finding"]["reason"] == "the pool has no more rows of group F"
    assert d["queries_saved"] == 4000 - res.queries_paid > 0
    # with rows to spare in both groups nothing is saved
    with BlackBox(LocalModelBackend(model, name="toy")) as bb:
        full = audit_live(bb, q, group_col="grp", budget=300, seed=3, tolerance=0.02,
                          feature_cols=["x"])  # fmt: skip
    assert full.queries_saved == 0 and full.stopped is None
