"""The platform server as a real process on 127.0.0.1: both interfaces, fairwash, bad bodies."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import Iterator

import httpx
import numpy as np
import pytest

from conftest import free_port
from fairprobe.datasets.adult import load_adult
from fairprobe.errors import EndpointUnreachableError, InvalidParameterError, PortInUseError
from fairprobe.platform.core import EXAMPLE_AUDIT_RECORD, Platform
from fairprobe.platform.fairwash import FairwashConfig
from fairprobe.platform.model import AUDIT_FEATURES, PlatformModel
from fairprobe.platform.process import PlatformProcess

USER = ["age", "education-num", "race", "capital-gain", "capital-loss", "hours-per-week"]


@pytest.fixture(scope="module")
def plain() -> Iterator[PlatformProcess]:
    with PlatformProcess(seed=0) as p:
        yield p


@pytest.fixture(scope="module")
def washed() -> Iterator[PlatformProcess]:
    with PlatformProcess(fairwash="positive", gamma=0.3, seed=7) as p:
        yield p


@pytest.fixture(scope="module")
def rows() -> list[dict]:
    df = load_adult("all", names_seed=1)
    df = df.drop_duplicates(subset=list(AUDIT_FEATURES)).iloc[:4000]
    return df.to_dict("records")


def _audit(url: str, recs: list[dict]) -> list[dict]:
    r = httpx.post(url + "/audit/predict", json={"instances": recs}, timeout=30)
    assert r.status_code == 200, r.text
    return r.json()["predictions"]


def _user(url: str, recs: list[dict]) -> list[dict]:
    r = httpx.post(url + "/user/predict", json={"instances": recs}, timeout=30)
    assert r.status_code == 200, r.text
    return r.json()["predictions"]


def test_health_and_schema(plain: PlatformProcess) -> None:
    h = httpx.get(plain.url + "/health").json()
    assert h["status"] == "ok" and h["model"] == "adult-logreg-v1"
    assert h["fairwash"]["mode"] == "none"
    s = httpx.get(plain.url + "/schema").json()
    assert s["audit"]["features"] == list(AUDIT_FEATURES)
    assert "sex" not in s["user"]["features"] and "first_name" in s["user"]["features"]
    # the example records are accepted by their interfaces
    assert len(_audit(plain.url, [s["audit"]["example"]])) == 1
    assert len(_user(plain.url, [s["user"]["example"]])) == 1
    assert s["llm"]["labels"] == [">50K", "<=50K"]


def test_audit_api_matches_the_model(plain: PlatformProcess, rows: list[dict]) -> None:
    recs = [{k: r[k] for k in AUDIT_FEATURES} for r in rows[:1000]]
    got = _audit(plain.url, recs)
    ref = Platform(PlatformModel.default()).audit_predict(recs)
    assert [p["decision"] for p in got] == ref.decisions.tolist()
    assert np.array_equal([p["score"] for p in got], ref.scores)
    for p in got[:50]:
        assert p["decision"] in (0, 1) and 0.0 <= p["score"] <= 1.0
        assert p["logit"] == pytest.approx(np.log(p["score"] / (1 - p["score"])), abs=1e-6)


def test_user_interface_is_truthful_and_infers_sex(
    washed: PlatformProcess, rows: list[dict]
) -> None:
    """B never lies, even on a fairwashing server: its answer is the model's for the inferred sex."""
    recs = rows[:600]
    user = _user(
        washed.url, [{k: r[k] for k in USER} | {"first_name": r["first_name"]} for r in recs]
    )
    model = Platform(PlatformModel.default(), seed=7)
    f = model.audit_predict([{k: r[k] for k in USER} | {"sex": "Female"} for r in recs]).scores
    m = model.audit_predict([{k: r[k] for k in USER} | {"sex": "Male"} for r in recs]).scores
    scores = np.array([p["score"] for p in user])
    assert np.all((scores == f) | (scores == m))
    ends = np.array([r["first_name"][-1] for r in recs])
    distinct = f != m
    fem_end = np.isin(ends, list("aei")) & distinct
    male_end = ~np.isin(ends, list("aeihy")) & distinct
    assert np.array_equal(scores[fem_end], f[fem_end])
    assert np.array_equal(scores[male_end], m[male_end])
    # deterministic: the same query gets the same answer
    again = _user(
        washed.url, [{k: r[k] for k in USER} | {"first_name": r["first_name"]} for r in recs[:50]]
    )
    assert again == user[:50]


def test_fairwash_flip_share_and_determinism(
    plain: PlatformProcess, washed: PlatformProcess, rows: list[dict]
) -> None:
    recs = [{k: r[k] for k in AUDIT_FEATURES} for r in rows]
    truth = _audit(plain.url, recs)
    lied = _audit(washed.url, recs)
    t = np.array([p["decision"] for p in truth])
    a = np.array([p["decision"] for p in lied])
    female = np.array([r["sex"] == "Female" for r in recs])
    cand = female & (t == 0)
    assert not ((a != t) & ~cand).any()
    share = (a != t)[cand].mean()
    assert abs(share - 0.3) < 4 * np.sqrt(0.21 / cand.sum())
    # a repeated query, alone or in another batch order, gets the same answer
    assert _audit(washed.url, recs[::-1])[::-1] == lied
    assert _audit(washed.url, recs[5:6]) == lied[5:6]
    # the server's flips are those of an in-process platform with the same seed (any process)
    local = Platform(PlatformModel.default(), fairwash=FairwashConfig("positive", 0.3, seed=7))
    assert local.audit_predict(recs).decisions.tolist() == a.tolist()
    # flipped answers carry consistent scores
    for p in lied:
        assert p["decision"] == int(p["score"] >= 0.5)


@pytest.mark.parametrize(
    ("body", "status", "match"),
    [
        (b"not json", 400, "not valid JSON"),
        (b"[1, 2]", 422, "instances"),
        (b'{"instances": "x"}', 422, "must be a list"),
        (b'{"instances": []}', 422, "empty"),
        (b'{"instances": [{"age": 1}]}', 422, "lacks feature"),
        (b'{"instances": [{"age": NaN}]}', 422, "lacks feature"),
        (json.dumps({"instances": [EXAMPLE_AUDIT_RECORD | {"age": None}]}).encode(), 422, "finite"),
        (json.dumps({"instances": [EXAMPLE_AUDIT_RECORD | {"sex": "X"}]}).encode(), 422, "one of"),
        ("\udcff".encode("utf-8", "surrogatepass"), 400, "not valid JSON"),
        (b"[" * 100_000 + b"]" * 100_000, 400, "nested too deeply"),
        (b'{"instances": [{"age": 1' + b"0" * 400 + b"}]}", 422, "lacks feature"),
        (
            json.dumps({"instances": [EXAMPLE_AUDIT_RECORD | {"age": 10**400}]}).encode(),
            422,
            "finite",
        ),
        (b'{"instances": [{"age": Infinity}]}', 422, "lacks feature"),
    ],
)
def test_bad_bodies(plain: PlatformProcess, body: bytes, status: int, match: str) -> None:
    r = httpx.post(plain.url + "/audit/predict", content=body, timeout=10)
    assert r.status_code == status
    assert match in r.json()["detail"]
    assert httpx.get(plain.url + "/health").status_code == 200


def test_nan_value_is_rejected(plain: PlatformProcess) -> None:
    body = json.dumps({"instances": [EXAMPLE_AUDIT_RECORD | {"age": float("nan")}]}).encode()
    r = httpx.post(plain.url + "/audit/predict", content=body)
    assert r.status_code == 422 and "finite" in r.json()["detail"]


def test_body_and_batch_limits(plain: PlatformProcess) -> None:
    big = b'{"instances": [' + b"1," * (5 * 1024 * 1024) + b"1]}"
    r = httpx.post(plain.url + "/audit/predict", content=big, timeout=30)
    assert r.status_code == 413
    many = {"instances": [EXAMPLE_AUDIT_RECORD] * 10_001}
    r = httpx.post(plain.url + "/audit/predict", json=many, timeout=30)
    assert r.status_code == 422 and "at most 10000" in r.json()["detail"]
    r = httpx.post(plain.url + "/user/predict", json={"instances": [{"first_name": "Al"}]})
    assert r.status_code == 422
    assert httpx.get(plain.url + "/health").status_code == 200


def test_port_in_use(plain: PlatformProcess) -> None:
    with pytest.raises(PortInUseError, match="in use"):
        PlatformProcess(port=plain.port).start()


def test_port_in_use_cli_is_one_line() -> None:
    port = free_port()
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))
        s.listen()
        r = subprocess.run(
            [sys.executable, "-m", "fairprobe", "platform", "serve", "--port", str(port)],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    assert r.returncode == 3
    assert r.stderr.strip().splitlines() == [
        f"error: Port {port} on 127.0.0.1 is already in use; choose another with --port."
    ]


def test_non_loopback_host_is_refused() -> None:
    # the CLI's one-line error is tested in process in test_cli.py
    with pytest.raises(InvalidParameterError, match="loopback"):
        PlatformProcess(host="10.0.0.1")


def test_startup_failure_is_reported() -> None:
    with pytest.raises(EndpointUnreachableError, match="exited with code"):
        PlatformProcess(model_file="/nonexistent/model.joblib", startup_timeout=60).start()
