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
    assert {r["method"] for r in doc["runs"]} >= {"none", "median", "trimmed-mean", "auditopus"}
    assert all(KEYS <= set(r) for r in doc["runs"])


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


@pytest.mark.timeout(240)
def test_sweep_on_an_existing_scheduler(tmp_path: Path) -> None:
    from dask.distributed import LocalCluster

    with LocalCluster(
        n_workers=1,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address=":0",
        silence_logs=40,
    ) as cluster:
        res = sweep(
            SimConfig(case="civil-near-fair", max_rounds=3),
            ["civil-near-fair"],
            [1],
            [0, 1],
            json_path=tmp_path / "s.json",
            scheduler=cluster.scheduler_address,
        )
    single = simulate_rows("civil-near-fair", 1, 1)
    assert [r for r in res["runs"] if r["seed"] == 1] == sorted(single, key=lambda r: r["method"])


def simulate_rows(case: str, k: int, seed: int) -> list[dict]:
    from fairprobe.collab.simulate import simulate

    return simulate(SimConfig(case=case, attackers=k, seed=seed, max_rounds=3)).rows()
