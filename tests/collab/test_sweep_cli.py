import json
import subprocess
import sys
from pathlib import Path

import pytest

from fairprobe.collab.simulate import SimConfig
from fairprobe.collab.sweep import parse_int_range, run_group, sweep
from fairprobe.errors import ConfigError, InvalidParameterError

KEYS = {"case", "attackers", "seed", "method", "estimate", "true_dp", "error", "fooled"}


def test_parse_int_range() -> None:
    assert parse_int_range("1-4") == [1, 2, 3, 4]
    assert parse_int_range("0,2,5-6") == [0, 2, 5, 6]
    for bad in ("", "x", "4-1", "-2"):
        with pytest.raises(InvalidParameterError):
            parse_int_range(bad)


def test_run_group_matches_single_runs() -> None:
    from fairprobe.collab.simulate import simulate

    base = SimConfig(case="civil-near-fair", max_rounds=5)
    d = base.to_dict()
    rows = run_group(
        {k: v for k, v in d.items() if k not in ("case", "attackers", "seed")},
        "civil-near-fair",
        3,
        [0, 2],
    )
    single = simulate(SimConfig(case="civil-near-fair", attackers=2, seed=3, max_rounds=5)).rows()
    assert [r for r in rows if r["attackers"] == 2] == single


@pytest.mark.timeout(240)
def test_sweep_on_local_dask_cluster_resumes(tmp_path: Path) -> None:
    out = tmp_path / "sweep.json"
    base = SimConfig(case="civil-near-fair", max_rounds=4)
    seen: list[tuple[int, int]] = []
    res = sweep(
        base,
        ["civil-near-fair", "civil-moderate"],
        [0, 1],
        [0, 1],
        json_path=out,
        n_workers=1,
        on_progress=lambda d, t: seen.append((d, t)),
    )
    assert seen[-1] == (8, 8)
    doc = json.loads(out.read_text())
    assert doc["complete"] and len(doc["runs"]) == 8 * len(base.methods)
    assert all(KEYS <= set(r) for r in doc["runs"])
    assert res["runs"] == doc["runs"]
    # drop some runs as if interrupted: the rerun only computes the missing ones
    doc["runs"] = [r for r in doc["runs"] if not (r["case"] == "civil-moderate" and r["seed"] == 1)]
    doc["complete"] = False
    out.write_text(json.dumps(doc))
    seen.clear()
    res2 = sweep(
        base,
        ["civil-near-fair", "civil-moderate"],
        [0, 1],
        [0, 1],
        json_path=out,
        n_workers=1,
        on_progress=lambda d, t: seen.append((d, t)),
    )
    assert seen[0] == (6, 8) and seen[-1] == (8, 8)
    assert sorted(map(json.dumps, res2["runs"])) == sorted(map(json.dumps, res["runs"]))
    # already complete: nothing to do, no cluster started
    seen.clear()
    sweep(
        base,
        ["civil-near-fair", "civil-moderate"],
        [0, 1],
        [0, 1],
        json_path=out,
        on_progress=lambda d, t: seen.append((d, t)),
    )
    assert seen == [(8, 8)]
    with pytest.raises(ConfigError):
        sweep(
            SimConfig(case="civil-near-fair", max_rounds=5),
            ["civil-near-fair"],
            [0],
            [0],
            json_path=out,
        )


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "fairprobe", "collab", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_cli_simulate_json(tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    p = _cli(
        "simulate",
        "--case",
        "civil-near-fair",
        "--attackers",
        "2",
        "--seed",
        "1",
        "--rounds",
        "6",
        "--json",
        str(out),
    )
    assert p.returncode == 0, p.stderr
    doc = json.loads(out.read_text())
    assert doc["schema"] == "fairprobe/1" and doc["kind"] == "collab-simulate"
    assert {r["method"] for r in doc["runs"]} >= {
        "none", "median", "trimmed-mean", "auditopus", "robust"
    }
    assert all(KEYS <= set(r) for r in doc["runs"])
    # figure data: every node's estimate, every source's weight and scores over rounds, the band
    assert doc["band"] == {"low": -0.05, "high": 0.05}
    assert len(doc["nodes"]) == 20 and "robust" in doc["nodes"][0]["estimates"]
    src = doc["sources"]
    assert len(src["weight"]) == 22 and src["role"].count("attacker") == 2
    assert len(src["scores_by_round"][0]) == doc["rounds"]
    # the default method's certificate (the point methods' ones need legacy_certificates=True)
    assert "bounded" in doc["certified_k"] and doc["default_method"] == "bounded"
    b = next(r for r in doc["runs"] if r["method"] == "bounded")
    assert {"interval", "flip_mass", "escape_bound", "finding", "max_liars"} <= set(b)
    assert b["finding"]["verdict"] == b["verdict"] == doc["verdicts"]["bounded"]
    assert b["finding"]["question"]["subject"] == "simulation"


def test_cli_decisive_threshold_zero_is_the_previous_robust(tmp_path: Path) -> None:
    runs = {}
    for c in ("2", "0"):
        out = tmp_path / f"d{c}.json"
        p = _cli("simulate", "--case", "bios-moderate", "--attackers", "2", "--attack",
                 "consistent", "--seed", "1", "--robust-c-decisive", c, "--json", str(out))
        assert p.returncode == 0, p.stderr
        doc = json.loads(out.read_text())
        assert doc["config"]["robust_c_decisive"] == (2.0 if c == "2" else None)
        runs[c] = next(r for r in doc["runs"] if r["method"] == "robust")
    assert not runs["2"]["fooled"] and runs["0"]["fooled"]
    p = _cli("simulate", "--case", "bios-moderate", "--robust-c-decisive", "-1")
    assert p.returncode != 0 and p.stderr.count("\n") == 1 and "robust_c_decisive" in p.stderr


@pytest.mark.parametrize(
    "args",
    [
        ("simulate", "--case", "nope"),
        ("simulate", "--case", "bios-moderate", "--attackers", "-1"),
        ("simulate", "--case", "bios-moderate", "--honest", "0"),
        ("simulate", "--case", "bios-moderate", "--n", "0"),
        ("simulate", "--case", "bios-moderate", "--alpha", "0"),
        ("simulate", "--case", "civil-near-fair", "--honest", "900"),
        ("simulate", "--case", "bios-moderate", "--honest", "5", "--degree", "0.01"),
        ("sweep", "--cases", "bios-moderate,nope", "--seeds", "1", "--json", "x.json"),
        ("sweep", "--cases", "bios-moderate", "--attackers", "5-1", "--json", "x.json"),
        ("sweep", "--cases", "bios-moderate", "--attackers", "0-100000000", "--json", "x.json"),
        ("sweep", "--cases", "bios-moderate", "--attackers", "0-20000", "--json", "x.json"),
        ("sweep", "--cases", "bios-moderate", "--attackers", "900000", "--json", "x.json"),
        ("sweep", "--cases", "bios-moderate", "--workers", "0", "--json", "x.json"),
        ("simulate", "--case", "bios-moderate", "--attack", "nope"),
    ],
)
def test_cli_bad_input_is_one_line(
    args: tuple[str, ...], tmp_path: Path, capsys, monkeypatch
) -> None:
    from fairprobe.cli.main import main

    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exc:
        main(["collab", *args])
    assert exc.value.code != 0
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err
    assert not (tmp_path / "x.json").exists()  # refused before any work


def test_huge_attacker_range_is_refused_before_expanding_it() -> None:
    import time

    t0 = time.perf_counter()
    with pytest.raises(InvalidParameterError, match="at most"):
        parse_int_range("0-100000000")
    assert time.perf_counter() - t0 < 0.5


def test_summary_has_table_ii_layout() -> None:
    from fairprobe.collab.sweep import summarize

    rows = [
        {"case": c, "method": m, "attackers": k, "seed": 0, "fooled": f, "error": e,
         "certified_k": ck}
        for c, m, k, f, e, ck in [
            ("bios-moderate", "robust", 1, False, -0.02, 0),
            ("bios-moderate", "robust", 2, True, 0.12, 1),
            ("bios-near-fair", "robust", 1, False, 0.01, None),
        ]
    ]
    out = {(d["case"], d["method"]): d for d in summarize(rows)}
    assert out[("bios-moderate", "robust")]["asr"] == 50.0
    assert out[("bios-moderate", "robust")]["mae"] == pytest.approx(0.07)
    assert out[("all", "robust")]["runs"] == 3
    assert out[("all", "robust")]["certified_k"] == pytest.approx(0.5)


@pytest.mark.timeout(240)
def test_cli_sweep_prints_table_or_one_line_and_dashboard_is_off(tmp_path: Path) -> None:
    out = tmp_path / "s.json"
    p = _cli(
        "sweep", "--cases", "civil-near-fair", "--attackers", "1", "--seeds", "1",
        "--rounds", "3", "--workers", "1", "--attack", "Consistent", "--json", str(out),
    )
    assert p.returncode == 0, p.stderr
    lines = p.stdout.strip().splitlines()
    assert len(lines) == 2 and "robust ASR" in lines[0] and "-> " in lines[1]  # piped
    doc = json.loads(out.read_text())
    assert doc["schema"] == "fairprobe/1" and doc["kind"] == "collab-sweep"
    assert doc["config"]["attack"] == "consistent"
    assert {d["method"] for d in doc["summary"]} >= {"robust", "auditopus", "median"}
    assert all("certified_k" in r for r in doc["runs"])
    assert "dashboard" not in p.stderr.lower()


def test_local_cluster_gets_no_dashboard(monkeypatch, tmp_path: Path) -> None:
    import dask.distributed

    from fairprobe.collab.sweep import local_cluster_kwargs

    seen: dict = {}

    class Boom(Exception):
        pass

    def fake_cluster(**kw):
        seen.update(kw)
        raise Boom

    monkeypatch.setattr(dask.distributed, "LocalCluster", fake_cluster)
    with pytest.raises(Boom):
        sweep(SimConfig(case="civil-near-fair", max_rounds=3), ["civil-near-fair"], [0], [0],
              n_workers=1)
    assert seen == local_cluster_kwargs(1, False)
    with pytest.raises(Boom):
        sweep(SimConfig(case="civil-near-fair", max_rounds=3), ["civil-near-fair"], [0], [0],
              n_workers=1, dashboard=True)
    assert seen == local_cluster_kwargs(1, True)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("dashboard", [False, True])
def test_local_cluster_listens_on_loopback_only(dashboard: bool) -> None:
    from dask.distributed import LocalCluster

    from fairprobe.collab.sweep import local_cluster_kwargs

    kw = local_cluster_kwargs(1, dashboard)
    kw["n_workers"] = 0
    with LocalCluster(**kw) as cluster:
        http = cluster.scheduler.http_server
        assert http.address == "127.0.0.1"
        assert cluster.scheduler.address.startswith("tcp://127.0.0.1:")
        import httpx

        base = f"http://127.0.0.1:{http.port}"
        assert httpx.get(f"{base}/health", timeout=10).status_code == 200
        status = httpx.get(f"{base}/status", timeout=30).status_code
        assert (status == 200) == dashboard, status


def test_the_commands_defaults_are_the_simulators() -> None:
    # cli/collab.py writes the protocol options' defaults out (importing the simulator would
    # slow every command's start); this keeps them equal to SimConfig's, where they are defined
    import dataclasses

    from fairprobe.cli.collab import _PROTOCOL_OPTIONS

    fields = {f.name: f.default for f in dataclasses.fields(SimConfig)}
    cli_to_field = {"rounds": "max_rounds"}
    compared = 0
    for name, _, default in _PROTOCOL_OPTIONS:
        field = cli_to_field.get(name, name)
        if field in fields and name not in ("betas", "verify", "verify_rate"):
            assert default == fields[field], (name, default, fields[field])
            compared += 1
    assert compared >= 12
