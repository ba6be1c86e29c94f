"""Models served by real model servers: Seldon MLServer (Open Inference Protocol v2) and
``mlflow models serve``, each a real process on 127.0.0.1, audited through ``kind = "kserve-v2"``
/ ``kind = "mlflow"`` and compared with ``kind = "local"`` on the same model file.

The servers live in their own virtual environments (their pins conflict with ours), made by
``make servers`` (``.venv-servers/mlserver``, ``.venv-servers/mlflow``; CI runs it). Locally a
missing one skips its tests with the command that installs it; under CI (``CI=true``) a missing
server fails instead, so a green CI run always ran them.

Guarantees: the decisions of the served model equal the local model's exactly and the scores to
1e-12 on 600 Adult records; the CLI audit JSONs agree on every estimate, interval and verdict; the
cache identity is what the server reports (v2: name + version) or the sized check (MLflow, a v2 model
without a version); a model swapped behind one URL (94% agreement) never gets the old answers.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from conftest import free_port, server_bin
from fairprobe.access import BlackBox, load_backend

REPO = Path(__file__).resolve().parents[2]
FEATURES = ["age", "education-num", "race", "capital-gain", "hours-per-week"]
NUMERIC = ["age", "education-num", "capital-gain", "hours-per-week"]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A scikit-learn pipeline (one-hot race, scaled numbers, logistic regression) saved once
    with joblib, and the query pool it is audited on."""
    import joblib
    from sklearn.compose import make_column_transformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    from fairprobe.datasets import load_adult

    d = tmp_path_factory.mktemp("served")
    train = load_adult("train", names_seed=None).head(4000)
    model = make_pipeline(
        make_column_transformer((OneHotEncoder(handle_unknown="ignore"), ["race"]),
                                remainder=StandardScaler()),
        LogisticRegression(max_iter=1000),
    ).fit(train[FEATURES], train["income"])
    joblib.dump(model, d / "model.joblib")
    # a second model agreeing with the first on about 94% of the pool (the swap test)
    other = make_pipeline(
        make_column_transformer((OneHotEncoder(handle_unknown="ignore"), ["race"]),
                                remainder=StandardScaler()),
        LogisticRegression(max_iter=1000, class_weight={0: 1.0, 1: 1.4}),
    ).fit(train[FEATURES], train["income"])
    joblib.dump(other, d / "other.joblib")
    # a bare estimator on the numeric columns: it refuses any other column (the error test)
    joblib.dump(LogisticRegression(max_iter=1000).fit(train[NUMERIC], train["income"]),
                d / "strict.joblib")
    pool = load_adult("test", names_seed=None)[[*FEATURES, "sex", "income"]].head(1500)
    pool.to_csv(d / "pool.csv", index=False)
    return d


@pytest.fixture(scope="module")
def mlserver(model_dir: Path, wait_for_http: Any, stop_proc: Any) -> Iterator[str]:
    """MLServer 1.7.1 serving model.joblib as ``income`` version ``v1`` (and, with declared
    inputs, as ``income-declared``)."""
    exe = server_bin("mlserver", "mlserver")
    root = model_dir / "mlserver"
    port = free_port()
    for name, extra in (("income", {}), ("income-declared", {"inputs": [
            {"name": c, "datatype": "BYTES" if c == "race" else "INT64", "shape": [-1, 1]}
            for c in FEATURES]})):
        (root / name).mkdir(parents=True)
        (root / name / "model-settings.json").write_text(json.dumps({
            "name": name, "implementation": "mlserver_sklearn.SKLearnModel",
            "parameters": {"uri": str(model_dir / "model.joblib"), "version": "v1"}, **extra}))
    _swap_settings(root, model_dir / "model.joblib")
    (root / "strict").mkdir()
    (root / "strict" / "model-settings.json").write_text(json.dumps({
        "name": "strict", "implementation": "mlserver_sklearn.SKLearnModel",
        "parameters": {"uri": str(model_dir / "strict.joblib")}}))
    # parallel_workers = 0: MLServer 1.7.1's default worker pool dies at start on this machine
    (root / "settings.json").write_text(json.dumps({
        "parallel_workers": 0, "host": "127.0.0.1", "http_port": port,
        "grpc_port": free_port(), "metrics_port": free_port(), "metrics_endpoint": None}))
    log = (model_dir / "mlserver.log").open("wb")
    proc = subprocess.Popen([str(exe), "start", str(root)], cwd=root, stdout=log,
                            stderr=subprocess.STDOUT,
                            env={**os.environ, "PATH": f"{exe.parent}:{os.environ['PATH']}"})
    try:
        url = f"http://127.0.0.1:{port}"
        wait_for_http(url + "/v2/models/income/ready", proc, timeout=120)
        wait_for_http(url + "/v2/models/income-declared/ready", proc, timeout=60)
        yield url
    finally:
        stop_proc(proc, 15.0)
        log.close()


def _swap_settings(root: Path, uri: Path) -> None:
    """The model ``swap``, with no version (the server then reports nothing that identifies
    it), serving ``uri``."""
    (root / "swap").mkdir(parents=True, exist_ok=True)
    (root / "swap" / "model-settings.json").write_text(json.dumps({
        "name": "swap", "implementation": "mlserver_sklearn.SKLearnModel",
        "parameters": {"uri": str(uri)}}))


@pytest.fixture(scope="module")
def mlflow_url(model_dir: Path, wait_for_http: Any) -> Iterator[str]:
    """``mlflow models serve --env-manager local`` of the same pipeline (the joblib file loaded
    and saved as an MLflow model whose pyfunc predicts probabilities)."""
    exe = server_bin("mlflow", "mlflow")
    py = exe.parent / "python"
    out = model_dir / "mlflow-model"
    subprocess.run(
        [str(py), "-c",
         "import sys, joblib, mlflow.sklearn; mlflow.sklearn.save_model(joblib.load(sys.argv[1]),"
         " sys.argv[2], pyfunc_predict_fn='predict_proba', serialization_format='pickle')",
         str(model_dir / "model.joblib"), str(out)],
        check=True, capture_output=True, timeout=300)
    port = free_port()
    log = (model_dir / "mlflow.log").open("wb")
    proc = subprocess.Popen(
        [str(exe), "models", "serve", "-m", str(out), "--env-manager", "local", "-h",
         "127.0.0.1", "-p", str(port)], stdout=log, stderr=subprocess.STDOUT,
        env={**os.environ, "PATH": f"{exe.parent}:{os.environ['PATH']}"}, start_new_session=True)
    try:
        url = f"http://127.0.0.1:{port}"
        wait_for_http(url + "/ping", proc, timeout=120)
        yield url
    finally:
        os.killpg(proc.pid, 15)  # mlflow runs uvicorn as a child
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait()
        log.close()


def _local_config(model_dir: Path) -> dict[str, Any]:
    return {"kind": "local", "path": str(model_dir / "model.joblib"), "allow_pickle": True}


def _v2_config(url: str, **kw: Any) -> dict[str, Any]:
    return {"kind": "kserve-v2", "url": url, "model": "income", "version": "v1",
            "decision_output": "predict", "score_output": "predict_proba", **kw}


def _answers(config: dict[str, Any], records: list[dict[str, Any]]) -> Any:
    with BlackBox(load_backend(config)) as bb:
        check = bb.resolve_identity()
        return bb.query(records), check


def _records(model_dir: Path, n: int = 600) -> list[dict[str, Any]]:
    import pandas as pd

    return pd.read_csv(model_dir / "pool.csv")[FEATURES].head(n).to_dict("records")


def test_mlserver_answers_equal_the_local_model(mlserver: str, model_dir: Path) -> None:
    records = _records(model_dir)
    local, _ = _answers(_local_config(model_dir), records)
    served, check = _answers(_v2_config(mlserver, max_batch=128), records)
    np.testing.assert_array_equal(served.decisions, local.decisions)
    np.testing.assert_allclose(served.scores, local.scores, rtol=0, atol=1e-12)
    assert 0 < local.decisions.mean() < 1  # both classes occur: the comparison can fail
    assert served.n_paid == len({json.dumps(r, sort_keys=True) for r in records})  # unique
    # the identity is what the server reports: name and version
    assert check.source == "reported" and check.model_id == "income:v1"


def test_mlserver_declared_inputs_choose_the_columns(mlserver: str, model_dir: Path) -> None:
    from fairprobe.access import KServeV2Backend

    be = load_backend(_v2_config(mlserver, model="income-declared"))
    assert isinstance(be, KServeV2Backend)
    assert be.declared_inputs() == FEATURES
    # extra fields in the records are not sent: the declared inputs are
    records = [{**r, "sex": "Male", "noise": 1} for r in _records(model_dir, 50)]
    assert [i["name"] for i in be.request_body(records)["inputs"]] == FEATURES
    local, _ = _answers(_local_config(model_dir), _records(model_dir, 50))
    served, _ = _answers(_v2_config(mlserver, model="income-declared"), records)
    np.testing.assert_array_equal(served.decisions, local.decisions)
    from fairprobe.errors import DataError

    with pytest.raises(DataError, match="declares the input.*'race'.*--send-group"):
        be.request_body([{k: v for k, v in r.items() if k != "race"} for r in records])


def test_mlserver_unknown_model_names_the_config_key(mlserver: str) -> None:
    from fairprobe.errors import AccessError

    with pytest.raises(AccessError, match="config keys model / version"):
        load_backend(_v2_config(mlserver, model="nope")).declared_inputs()


def test_mlserver_without_version_is_fingerprinted(mlserver: str, model_dir: Path) -> None:
    records = _records(model_dir, 40)
    cfg = {**_v2_config(mlserver), "version": None}
    with BlackBox(load_backend(cfg)) as bb:
        check = bb.resolve_identity()
        bb.query(records)
    assert check.source in ("fingerprint", "unverified")


def test_mlflow_answers_equal_the_local_model(mlflow_url: str, model_dir: Path) -> None:
    records = _records(model_dir)
    local, _ = _answers(_local_config(model_dir), records)
    served, check = _answers({"kind": "mlflow", "url": mlflow_url, "max_batch": 200}, records)
    np.testing.assert_array_equal(served.decisions, local.decisions)
    np.testing.assert_allclose(served.scores, local.scores, rtol=0, atol=1e-12)
    assert check.source in ("fingerprint", "unverified")  # MLflow reports no model identity


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fairprobe", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def _audit(config: dict[str, Any], model_dir: Path, tmp: Path, name: str,
           *extra: str) -> dict[str, Any]:
    cfg = tmp / f"{name}.json"
    cfg.write_text(json.dumps(config))
    out = tmp / f"{name}-result.json"
    r = _cli("audit", "--backend-config", str(cfg), "--queries", str(model_dir / "pool.csv"),
             "--group-col", "sex", "--budget", "800", "--no-progress", "--cache",
             str(tmp / f"{name}.sqlite"), "--json", str(out), *extra, cwd=tmp)
    assert r.returncode == 0, r.stderr + r.stdout
    return dict(json.loads(out.read_text()))


def _verdicts(doc: dict[str, Any]) -> Any:
    skip = {"provenance", "backend", "paid", "cached", "created", "usage"}
    return {k: v for k, v in doc.items() if k not in skip}


@pytest.mark.parametrize("extra", [("--metric", "dp"),
                                   ("--group-col", "race", "--metric", "dp,eo",
                                    "--label-col", "income", "--send-group")])
def test_cli_audit_through_servers_equals_local(mlserver: str, mlflow_url: str, model_dir: Path,
                                                tmp_path: Path, extra: tuple[str, ...]) -> None:
    local = _audit(_local_config(model_dir), model_dir, tmp_path, "local", *extra)
    v2 = _audit(_v2_config(mlserver), model_dir, tmp_path, "v2", *extra)
    mlf = _audit({"kind": "mlflow", "url": mlflow_url}, model_dir, tmp_path, "mlflow", *extra)
    assert _verdicts(v2) == _verdicts(local)
    assert _verdicts(mlf) == _verdicts(local)
    assert v2["provenance"]["backend"]["kind"] == "kserve-v2"
    assert v2["provenance"]["backend"]["identity_source"] == "reported"


@pytest.fixture(scope="module")
def v1_url(model_dir: Path, wait_for_http: Any, stop_proc: Any) -> Iterator[str]:
    """tests/access/v1_app.py (TF-Serving's REST shapes over model.joblib) as a real process."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(Path(__file__).parent / "v1_app.py"), str(port),
                             str(model_dir / "model.joblib"), "income", ",".join(FEATURES)])
    try:
        url = f"http://127.0.0.1:{port}"
        wait_for_http(url + "/v1/models/income", proc)
        yield url
    finally:
        stop_proc(proc, 15.0)


@pytest.mark.parametrize("kind", ["kserve-v1", "tf-serving"])
def test_kserve_v1_answers_equal_the_local_model(v1_url: str, model_dir: Path,
                                                 kind: str) -> None:
    records = _records(model_dir, 300)
    local, _ = _answers(_local_config(model_dir), records)
    cfg = {"kind": kind, "url": v1_url, "model": "income", "feature_columns": FEATURES}
    served, check = _answers(cfg, records)
    np.testing.assert_array_equal(served.decisions, local.decisions)
    np.testing.assert_allclose(served.scores, local.scores, rtol=0, atol=1e-12)
    assert check.source == "reported" and check.detail["versions"] == ["1"]


def test_prediction_shapes_and_malformed_answers_name_the_config_key() -> None:
    """How answers are read (no server needed): labels, probability vectors, objects, and one
    error line naming the key that fixes a malformed answer."""
    from fairprobe.access.servers import MlflowConfig, _from_predictions
    from fairprobe.errors import AnswerParseError

    c = MlflowConfig(url="http://127.0.0.1:1")
    a = _from_predictions([[0.2, 0.8], [0.9, 0.1]], 2, c, "w", None, None)
    assert [(x.decision, x.score) for x in a] == [(1, 0.8), (0, 0.1)]
    lab = MlflowConfig(url="http://127.0.0.1:1", positive_values=[">50K"])
    assert [x.decision for x in _from_predictions([">50K", "<=50K"], 2, lab, "w", None, None)] \
        == [1, 0]
    obj = _from_predictions([{"label": 1, "p": 0.7}], 1, c, "w", "label", "p")
    assert (obj[0].decision, obj[0].score) == (1, 0.7)
    for preds, n, match in (([">50K"], 1, "positive_values"), ([[0.5, 0.7]], 1, "in \\[0, 1\\]"),
                            ([0, 1], 3, "2 predictions for 3"), ([{"a": 1}], 1, "decision_field"),
                            ([None], 1, "the decision is null")):
        with pytest.raises(AnswerParseError, match=match):
            vals = [[0.5, 1.7]] if match.startswith("in") else preds
            _from_predictions(vals, n, c, "w", None, None)


def test_a_model_swapped_behind_one_url_never_gets_the_old_answers(
        mlserver: str, model_dir: Path, tmp_path: Path) -> None:
    """Model A, then model B (94% agreement) behind the same MLServer URL and model name, no
    version: the second audit with the same cache reports B's answers, exactly as a local audit
    of B does; the sized check found the swap and dropped A's answers."""
    import httpx
    import pandas as pd

    feats = pd.read_csv(model_dir / "pool.csv")[FEATURES]
    import joblib

    a = joblib.load(model_dir / "model.joblib").predict(feats)
    b = joblib.load(model_dir / "other.joblib").predict(feats)
    assert 0.93 <= float((a == b).mean()) <= 0.96  # about 94% agreement
    cfg = {"kind": "kserve-v2", "url": mlserver, "model": "swap",
           "decision_output": "predict", "score_output": "predict_proba"}
    # every record of the pool (1500 rows), so that the check samples 688 of more
    args = ("--metric", "dp", "--budget", "all")
    cache = ("--cache", str(tmp_path / "shared.sqlite"))
    first = _audit(cfg, model_dir, tmp_path, "first", *args, *cache)
    local_a = _audit(_local_config(model_dir), model_dir, tmp_path, "local-a", *args)
    assert _verdicts(first) == _verdicts(local_a)
    # swap: unload, point the settings at model B, load (same URL, same name)
    root = model_dir / "mlserver"
    httpx.post(f"{mlserver}/v2/repository/models/swap/unload", timeout=60).raise_for_status()
    _swap_settings(root, model_dir / "other.joblib")
    httpx.post(f"{mlserver}/v2/repository/models/swap/load", timeout=120).raise_for_status()
    second = _audit(cfg, model_dir, tmp_path, "second", *args, *cache)
    local_b = _audit({**_local_config(model_dir), "path": str(model_dir / "other.joblib")},
                     model_dir, tmp_path, "local-b", *args)
    assert _verdicts(second) == _verdicts(local_b)
    assert _verdicts(second) != _verdicts(first)  # the models' estimates differ
    fp = second["provenance"]["backend"]["fingerprint"]
    assert second["provenance"]["backend"]["identity_source"] == "fingerprint"
    assert fp["reused_checked"] > 688 and fp["asked"] == 688 and fp["mismatched"] > 0
    assert second["provenance"]["backend"]["invalidated"] >= 688
    # and an unchanged model is reused after the check: the third run pays only the check
    third = _audit(cfg, model_dir, tmp_path, "third", *args, *cache)
    assert _verdicts(third) == _verdicts(local_b)
    assert third["paid"] == 0 and third["provenance"]["backend"]["fingerprint"] == {
        **fp, "mismatched": 0}


def test_server_errors_say_what_went_wrong(mlserver: str, model_dir: Path,
                                           tmp_path: Path) -> None:
    """A column the model never saw (MLServer answers 500), a base URL with the protocol's
    path, the platform shape at a model server: one line each, naming what to change, never
    "unreachable"; an audit that fails says the rerun resumes."""
    import pandas as pd

    pool = pd.read_csv(model_dir / "pool.csv").assign(zip=1000)
    pool.to_csv(tmp_path / "pool.csv", index=False)
    cfg = tmp_path / "v2.toml"
    cfg.write_text(f'kind = "kserve-v2"\nurl = "{mlserver}"\nmodel = "strict"\n')
    base = ("audit", "--queries", str(tmp_path / "pool.csv"), "--group-col", "sex",
            "--metric", "dp", "--budget", "50", "--no-progress", "--retries", "0",
            "--cache", str(tmp_path / "c.sqlite"))
    r = _cli(*base, "--backend-config", str(cfg), cwd=tmp_path)
    assert r.returncode == 3, r.stderr
    line = r.stderr.strip()
    assert line.count("\n") == 0 and "unreachable" not in line
    assert "answered HTTP 500" in line and "zip" in line and "--feature-cols" in line
    assert "feature names" in line  # the server's message (its traceback's last line)
    assert "Nothing was paid in this run." in line
    # the columns the model takes: it answers
    r = _cli(*base, "--backend-config", str(cfg), "--feature-cols", ",".join(NUMERIC),
             cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    cfg.write_text(f'kind = "kserve-v2"\nurl = "{mlserver}/v2"\nmodel = "income"\n')
    r = _cli(*base, "--backend-config", str(cfg), cwd=tmp_path)
    assert r.returncode == 2 and f"url = '{mlserver}'" in r.stderr and "/v2/v2" not in r.stderr
    # a model that declares its inputs gets only them; the provenance lists what reached it
    cfg.write_text(f'kind = "kserve-v2"\nurl = "{mlserver}"\nmodel = "income-declared"\n')
    r = _cli(*base, "--backend-config", str(cfg), "--json", "d.json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    cols = json.loads((tmp_path / "d.json").read_text())["provenance"]["extra"]["columns"]
    assert cols["sent"] == FEATURES and "zip" in cols["withheld"]
    assert f"columns sent: {', '.join(FEATURES)};" in " ".join(r.stdout.split())
    r = _cli(*base, "--url", mlserver, "--feature-cols", ",".join(FEATURES), cwd=tmp_path)
    assert r.returncode != 0 and "answered HTTP 404" in r.stderr
    assert 'kind = "kserve-v2"' in r.stderr and "Traceback" not in r.stderr
