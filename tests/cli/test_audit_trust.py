"""Audits of a real model that cannot silently go wrong.

Each of the five problems seen is reproduced against real servers on 127.0.0.1 (the platform,
and a spy endpoint that records every request and every field it receives).
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from fairprobe.cli.main import main
from fairprobe.platform.process import PlatformProcess

HERE = Path(__file__).resolve().parent


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def spy() -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(HERE / "spy_app.py"), str(port)])
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(url + "/spy", timeout=1).raise_for_status()
                break
            except httpx.HTTPError:
                assert time.monotonic() < deadline and proc.poll() is None
                time.sleep(0.05)
        yield url
    finally:
        proc.terminate()
        proc.wait(10)


def spied(url: str) -> dict[str, Any]:
    return httpx.get(url + "/spy", timeout=5).json()


@pytest.fixture(scope="module")
def pool_csv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from fairprobe.datasets import load_adult
    from fairprobe.platform.model import AUDIT_FEATURES

    df = load_adult("test", names_seed=None)[[*AUDIT_FEATURES, "income"]].head(800)
    p = tmp_path_factory.mktemp("pool") / "pool.csv"
    df.to_csv(p, index=False)
    return p


def run_cli(*args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    out, err = capsys.readouterr()
    return int(exc.value.code or 0), out, err


# -- 2. the true label is never sent; the sensitive column only when asked ---------------------
def test_label_and_group_columns_never_leave(spy, pool_csv, tmp_path, capsys) -> None:
    httpx.post(spy + "/spy/reset")
    code, out, err = run_cli(
        "audit", "--url", spy, "--path", "/predict", "--queries", str(pool_csv), "--group-col", "sex",
        "--metric", "dp", "--budget", "300", "--no-progress", "--cache",
        str(tmp_path / "c.sqlite"), "--json", str(tmp_path / "r.json"), capsys=capsys)
    assert code == 0, err
    seen = spied(spy)
    assert seen["fields"] == sorted(
        ["age", "education-num", "race", "capital-gain", "capital-loss", "hours-per-week"])
    doc = json.loads((tmp_path / "r.json").read_text())
    assert seen["instances"] == doc["paid"] <= 300  # identical records are asked once
    cols = doc["provenance"]["extra"]["columns"]
    assert cols["withheld"]["income"].startswith("label") and "sex" in cols["withheld"]
    assert cols["group_sent"] is False
    assert "withheld: sex (sensitive), income (label)" in " ".join(out.split())

    httpx.post(spy + "/spy/reset")
    code, _, err = run_cli(
        "audit", "--url", spy, "--path", "/predict", "--queries", str(pool_csv), "--group-col", "sex",
        "--metric", "eo", "--label-col", "income", "--send-group", "--budget", "300",
        "--no-progress", "--no-cache", capsys=capsys)
    assert code == 0, err
    assert "sex" in spied(spy)["fields"] and "income" not in spied(spy)["fields"]


def test_label_in_feature_cols_is_refused(spy, pool_csv, capsys) -> None:
    httpx.post(spy + "/spy/reset")
    code, _, err = run_cli(
        "audit", "--url", spy, "--path", "/predict", "--queries", str(pool_csv), "--group-col", "sex", "--metric",
        "eo", "--label-col", "income", "--feature-cols", "age,income", "--no-cache", capsys=capsys)
    assert code == 2 and "includes the label column 'income'" in err
    code, _, err = run_cli(
        "audit", "--url", spy, "--path", "/predict", "--queries", str(pool_csv), "--group-col", "sex",
        "--feature-cols", "age,sex", "--no-cache", capsys=capsys)
    assert code == 2 and "--send-group" in err
    assert spied(spy)["requests"] == 0


# -- 3. every flag is validated before the first backend call, and the message names it --------
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--metric", "dp", "--tolerance", "5"], "--tolerance must be in (0, 1), got 5."),
        (["--confidence-level", "95"], "--confidence-level must be in (0, 1), got 95"),
        (["--metric", "XYZ"], "--metric must be one of dp, di"),
        (["--threshold", "0"], "--threshold must be in (0, 1], got 0."),
        (["--metric", "di", "--tolerance", "0.1"], "--tolerance applies to difference metrics"),
        (["--budget", "1"], "--budget must be an integer >= 2, got 1"),
        (["--budget", "5000"], "--budget 5000 is larger than the query pool (800 rows)"),
        (["--concurrency", "0"], "--concurrency must be an integer in [1, 256], got 0."),
        (["--timeout", "0"], "--timeout must be in (0, 86400], got 0."),
        (["--group-col", "race", "--group-a", "Whit"], "--group-a 'Whit' is not a value of 'race'"),
        (["--group-a", "Femal"], "--group-a 'Femal' is not a value of 'sex'"),
        (["--group-col", "nope"], "--group-col 'nope' is not a column of the pool"),
        (["--metric", "eo"], "--metric equal_opportunity_difference needs true labels"),
        (["--no-cache", "--refresh"], "--no-cache and --refresh exclude each other"),
        (["--json", "."], "--json '.' is a directory"),
        (["--cache", "POOL/c.sqlite"], "is a file, not a directory"),
        (["--cache", "POOL"], "is not a readable SQLite file (file is not a database); delete it"),
        (["--timeout", "1e308"], "--timeout must be in (0, 86400], got 1e+308."),
        (["--concurrency", "1000000000"], "--concurrency must be an integer in [1, 256]"),
        (["--retries", "1000000000000"], "--retries must be an integer in [0, 100]"),
        (["--feature-cols", ","], "--feature-cols names no column"),
        # the every-group form validates the same way
        (["--group-col", "race", "--concurrency", "0"], "--concurrency must be an integer in"),
        (["--metric", "dp,fpr", "--tolerance", "5"], "--tolerance must be in (0, 1), got 5."),
        (["--group-col", "sex,race", "--timeout", "1e308"], "--timeout must be in (0, 86400]"),
        (["--group-col", "race", "--metric", "fpr"], "--metric false_positive_rate_difference"),
        (["--json", "POOL/r.json"], "is a file, not a directory"),
    ],
)
def test_invalid_flags_cost_no_backend_call(spy, pool_csv, tmp_path, capsys, args, message):
    httpx.post(spy + "/spy/reset")
    base = ["audit", "--url", spy, "--path", "/predict", "--queries", str(pool_csv), "--group-col", "sex",
            "--no-progress"]
    if "--cache" not in args and "--no-cache" not in args:
        base += ["--cache", str(tmp_path / "c.sqlite")]
    args = [a.replace("POOL", str(pool_csv)) for a in args]
    code, _, err = run_cli(*base, *args, capsys=capsys)
    assert code == 2, err
    assert message in err and len(err.strip().splitlines()) == 1 and err.startswith("error: ")
    assert spied(spy)["requests"] == 0  # not even /health


def test_metric_names_are_case_insensitive(spy, pool_csv, capsys) -> None:
    code, out, err = run_cli(
        "audit", "--url", spy, "--path", "/predict", "--queries", str(pool_csv), "--group-col", "sex", "--metric", "DP",
        "--budget", "100", "--no-progress", "--no-cache", capsys=capsys)
    assert code == 0, err and "demographic_parity_difference" in out


# -- 4. group defaults follow --group-col; --group-b can mean every other value ----------------
def test_group_col_race_with_rest(spy, pool_csv, tmp_path, capsys) -> None:
    code, out, err = run_cli(
        "audit", "--url", spy, "--path", "/predict", "--queries", str(pool_csv), "--group-col", "sex", "--group-col",
        "race", "--group-a", "Black", "--group-b", "rest", "--budget", "400", "--no-progress",
        "--no-cache", "--json", str(tmp_path / "r.json"), capsys=capsys)
    assert code == 0, err
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["metric"]["groups"] == {"a": "Black", "b": "rest"}
    by_group = doc["provenance"]["answers"]["by_group"]
    assert set(by_group) >= {"Black", "White"}  # every value of race accounted for
    assert sum(g["asked"] for g in by_group.values()) == 400
    assert "race" in doc["provenance"]["extra"]["columns"]["withheld"]


# -- 1. another model behind the same URL never gets the old model's answers -------------------
def test_changed_model_behind_one_url_is_not_served_from_the_cache(tmp_path, capsys) -> None:
    """Two platform seeds (fairwashing differently) served one after the other on one port.

    Through ``--url`` the platform reports its identity (``/health``); through a backend config
    with ``identity_path = ""`` it reports none and is fingerprinted."""
    port = free_port()
    common = ["audit", "--budget", "1000", "--no-progress"]
    feats = ["--feature-cols",
             "age,education-num,race,capital-gain,capital-loss,hours-per-week,sex", "--send-group"]
    runs: dict[str, list[dict[str, Any]]] = {"reported": [], "fresh": [], "fingerprint": []}
    texts = []
    for seed in (0, 1):
        with PlatformProcess(port=port, seed=seed, fairwash="positive", gamma=0.4) as plat:
            cfg = tmp_path / "backend.toml"
            cfg.write_text(f'kind = "http-json"\nurl = "{plat.url}"\nidentity_path = ""\n')
            for kind, extra in (
                ("reported", ["--url", plat.url, "--cache", str(tmp_path / "a.sqlite")]),
                ("fresh", ["--url", plat.url, "--no-cache"]),
                ("fingerprint", ["--backend-config", str(cfg), "--cache",
                                 str(tmp_path / "b.sqlite"), *feats]),
            ):
                out = tmp_path / f"{kind}{seed}.json"
                code, text, err = run_cli(*common, *extra, "--json", str(out), capsys=capsys)
                assert code == 0, err
                runs[kind].append(json.loads(out.read_text()))
                texts.append(" ".join(text.split()))
    (first, second), (first_fresh, second_fresh) = runs["reported"], runs["fresh"]
    assert first["metric"]["estimate"] == first_fresh["metric"]["estimate"]
    # nothing replayed from seed 0: as many paid as without a cache (repeated records of the
    # draw are asked once and counted as cached in both)
    assert second["paid"] == second_fresh["paid"] == first["paid"] > 800
    assert second["metric"]["estimate"] == second_fresh["metric"]["estimate"]
    assert second["metric"]["estimate"] != first["metric"]["estimate"]
    b0, b1 = first["provenance"]["backend"], second["provenance"]["backend"]
    assert b0["identity_source"] == b1["identity_source"] == "reported"
    assert b0["reported"]["fairwash"]["seed"] == 0 and b1["reported"]["fairwash"]["seed"] == 1
    assert b0["cache_identity"] != b1["cache_identity"]
    assert "from the cache, of model adult-logreg-v1 (identity reported)" in texts[3]

    fp0, fp1 = runs["fingerprint"]
    assert fp0["provenance"]["backend"]["identity_source"] == "unverified"  # empty cache
    fp = fp1["provenance"]["backend"]
    assert fp["identity_source"] == "fingerprint" and fp["fingerprint"]["mismatched"] > 0
    assert fp["invalidated"] == fp0["paid"]
    assert "changed since its answers were cached" in texts[5]
    # only the 688 re-asked records (the sized check) are reused; everything else is paid again
    asked = fp["fingerprint"]["asked"]
    assert asked == min(688, fp0["paid"]) and fp["fingerprint"]["reused_checked"] == fp0["paid"]
    assert fp1["provenance"]["notes"] and fp1["paid"] == fp0["paid"] - asked
    assert fp1["metric"]["estimate"] == second_fresh["metric"]["estimate"]


# -- 5. Ctrl-C: one line, the cache kept, the rerun pays only the rest -------------------------
def test_ctrl_c_keeps_the_cache_and_says_so(tmp_path, capsys) -> None:
    cache = tmp_path / "c.sqlite"
    with PlatformProcess(seed=0, delay_ms=40) as plat:
        cmd = [sys.executable, "-m", "fairprobe", "audit", "--url", plat.url, "--budget", "1200",
               "--no-progress", "--cache", str(cache)]
        # a shell's background job (nohup, &) ignores SIGINT, and Python keeps an inherited
        # "ignore": give the child the default handling a user's terminal gives it
        proc = subprocess.Popen([*cmd, "--concurrency", "1"], cwd=tmp_path,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        deadline = time.monotonic() + 60
        while _rows(cache) < 128:
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 130
        assert err.strip().splitlines() == [err.strip()] and "interrupted" in err
        assert "cache" in err and "Traceback" not in err
        kept = _rows(cache)
        assert 128 <= kept < 1200
        code, _, err = run_cli(*cmd[3:], "--json", str(tmp_path / "r.json"), capsys=capsys)
        assert code == 0, err
    doc = json.loads((tmp_path / "r.json").read_text())
    # the rerun paid only what was missing: every paid answer is a new cache row
    assert doc["paid"] > 0 and _rows(cache) == kept + doc["paid"]
    assert doc["queried"] == 1200 and doc["cached"] >= kept


def _rows(cache: Path) -> int:
    if not cache.exists():
        return 0
    con = sqlite3.connect(cache, timeout=30)
    try:
        return int(con.execute("SELECT COUNT(*) FROM answers").fetchone()[0])
    except sqlite3.OperationalError:
        return 0
    finally:
        con.close()


# -- credentials in a URL are redacted everywhere ----------------------------------
def test_url_credentials_never_written(spy, pool_csv, tmp_path, capsys) -> None:
    secret = "s3cr3t-pw"
    url = spy.replace("http://", f"http://alice:{secret}@")
    cache, out = tmp_path / "c.sqlite", tmp_path / "r.json"
    code, text, err = run_cli(
        "audit", "--url", url, "--path", "/predict", "--queries", str(pool_csv), "--group-col", "sex", "--metric",
        "dp", "--budget", "100", "--no-progress", "--cache", str(cache), "--json", str(out),
        capsys=capsys)
    assert code == 0, err
    doc = out.read_text()
    assert secret not in doc and secret not in text and secret not in err
    assert "alice:***@" in json.loads(doc)["provenance"]["backend"]["url"]
    assert secret not in " ".join(json.loads(doc)["provenance"]["command"])
    raw = b"".join(p.read_bytes() for p in tmp_path.glob("c.sqlite*"))
    assert secret.encode() not in raw and b"alice:***@" in raw
    code, _, err = run_cli(
        "audit", "--url", f"http://alice:{secret}@127.0.0.1:{free_port()}", "--retries", "0",
        "--no-progress", "--no-cache", capsys=capsys)
    assert code == 3 and "unreachable" in err and secret not in err and "alice:***@" in err


# -- an endpoint that garbles one group's answers more often: shown, and the verdict says so ---
def test_unequal_unparsed_shares_qualify_the_verdict(spy, pool_csv, tmp_path, capsys) -> None:
    cfg = tmp_path / "biased.toml"
    cfg.write_text(f'kind = "http-json"\nurl = "{spy}"\npath = "/biased"\n'
                   'on_malformed = "drop"\n')
    out = tmp_path / "r.json"
    code, text, err = run_cli(
        "audit", "--backend-config", str(cfg), "--queries", str(pool_csv), "--group-col", "sex", "--group-col",
        "race", "--group-a", "Black", "--metric", "dp", "--budget", "800", "--no-progress",
        "--send-group", "--no-cache", "--json", str(out), capsys=capsys)
    assert code == 0, err
    prov = json.loads(out.read_text())["provenance"]
    black, white = prov["answers"]["by_group"]["Black"], prov["answers"]["by_group"]["White"]
    assert black["unparsed"] > 0 and white["unparsed"] == 0
    assert black["unparsed"] + black["ok"] == black["asked"]
    assert prov["answers"]["outcome_disparity_p_value"] < 0.05
    assert prov["notes"] and "differs significantly between groups" in prov["notes"][0]
    assert "differs significantly between groups" in " ".join(text.split())


# -- --url never assumes the platform's columns ---------------------------------------
def test_url_sends_what_the_endpoint_declares_or_every_feature(spy, tmp_path, capsys) -> None:
    """An endpoint at the platform's path that declares no inputs (no /schema) gets every column
    but the label and the sensitive one; the platform gets what its /schema declares."""
    import pandas as pd

    pool = tmp_path / "pool.csv"
    pd.DataFrame({"age": [30, 45, 50, 25] * 30, "tenure": [1, 2, 3, 4] * 30,
                  "grp": ["a", "b", "a", "b"] * 30, "y": [0, 1, 1, 0] * 30}).to_csv(pool, index=False)
    httpx.post(spy + "/spy/reset")
    code, out, err = run_cli(
        "audit", "--url", spy, "--queries", str(pool), "--group-col", "grp", "--group-a", "a",
        "--label-col", "y", "--metric", "dp", "--no-progress", "--no-cache", capsys=capsys)
    assert code == 0, err
    assert spied(spy)["fields"] == ["age", "tenure"]
    assert "sent: age, tenure" in out
    with PlatformProcess(seed=0) as plat:
        from fairprobe.access import HttpJsonBackend
        from fairprobe.platform.model import AUDIT_FEATURES

        assert HttpJsonBackend(url=plat.url).declared_inputs() == list(AUDIT_FEATURES)
        assert HttpJsonBackend(url=plat.url, path="/nope").declared_inputs() is None
