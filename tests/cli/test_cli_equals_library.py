"""Every command is one library call: its ``--json`` document equals what the function returns.

Each test runs the command as a real process and the library function in this process on the
same inputs, and compares the two documents with times, the command line and host facts removed
(they differ between any two runs). A field computed only in the CLI would make them differ.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fairprobe", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def _comparable(doc: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(json.dumps(doc))
    prov = out["provenance"]
    for key in ("created_utc", "command", "host", "python", "platform"):
        prov.pop(key, None)
    extra = prov.get("extra", {})
    if isinstance(extra.get("cache"), dict):
        extra["cache"].pop("path", None)
    elif "cache" in extra:
        extra.pop("cache")
    return out


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("cli-lib")
    rng = np.random.default_rng(11)
    n = 1200
    group = np.where(rng.random(n) < 0.5, "A", "B")
    dec = (rng.random(n) < np.where(group == "A", 0.35, 0.55)).astype(int)
    pd.DataFrame({"g": group, "dec": dec, "score": rng.random(n),
                  "value": dec.astype(float)}).to_csv(d / "pool.csv", index=False)
    return d


def test_radius(work: Path) -> None:
    from fairprobe.radius.job import radius_job

    r = _cli("radius", "--input", "pool.csv", "--value-col", "value", "--group-col", "g",
             "--tolerance", "0.05", "--json", "cli.json", cwd=work)
    assert r.returncode == 0, r.stderr
    job = radius_job(work / "pool.csv", 0.05, value_col="value", group_col="g")
    cli = _comparable(json.loads((work / "cli.json").read_text()))
    lib = _comparable(job.to_dict())
    cli["provenance"]["extra"].pop("input")  # the path as typed vs as passed
    lib["provenance"]["extra"].pop("input")
    assert lib == cli
    assert cli["kind"] == "radius"


def test_sequential_pool(work: Path) -> None:
    from fairprobe.sequential.job import sequential_job

    r = _cli("sequential", "--input", "pool.csv", "--group-col", "g", "--decision-col", "dec",
             "--repeats", "20", "--seed", "3", "--no-progress", "--json", "cli.json", cwd=work)
    assert r.returncode == 0, r.stderr
    job = sequential_job(input=work / "pool.csv", group_col="g", decision_col="dec", repeats=20,
                         seed=3)
    assert _comparable(job.to_dict()) == _comparable(json.loads((work / "cli.json").read_text()))


def test_twosource_plan(work: Path) -> None:
    from fairprobe.twosource.job import twosource_plan_job

    r = _cli("twosource", "plan", "--proxy-accuracy", "0.91", "--checks", "100", "--budget",
             "1000", "--epsilon", "0.1", "--json", "cli.json", cwd=work)
    assert r.returncode == 0, r.stderr
    job = twosource_plan_job(0.91, checks=100, budget=1000, epsilon=0.1)
    assert _comparable(job.to_dict()) == _comparable(json.loads((work / "cli.json").read_text()))


@pytest.fixture(scope="module")
def platform() -> Iterator[str]:
    from fairprobe.platform.process import PlatformProcess

    with PlatformProcess(seed=0) as plat:
        yield plat.url


def test_sequential_live_and_twosource(work: Path, platform: str) -> None:
    from fairprobe.access.http import HttpJsonBackend
    from fairprobe.sequential.job import sequential_job
    from fairprobe.twosource.job import platform_sources, twosource_job

    r = _cli("sequential", "--url", platform, "--budget", "300", "--seed", "1", "--no-progress",
             "--cache", "cli-seq.sqlite", "--json", "seq.json", cwd=work)
    assert r.returncode == 0, r.stderr
    job = sequential_job(backend=HttpJsonBackend(url=platform), budget=300, seed=1,
                         cache=work / "lib-seq.sqlite")  # its own cache: both pay, as two first runs
    assert _comparable(job.to_dict()) == _comparable(json.loads((work / "seq.json").read_text()))

    r = _cli("twosource", "--url", platform, "--budget", "400", "--seed", "2", "--no-progress",
             "--cache", "cli-ts.sqlite", "--json", "ts.json", cwd=work)
    assert r.returncode == 0, r.stderr
    job = twosource_job(*platform_sources(platform), budget=400, seed=2, cache=work / "lib-ts.sqlite")
    assert _comparable(job.to_dict()) == _comparable(json.loads((work / "ts.json").read_text()))


def _same(cli_json: Path, lib_doc: dict[str, Any]) -> dict[str, Any]:
    cli = _comparable(json.loads(cli_json.read_text()))
    assert _comparable(lib_doc) == cli
    return cli


def test_audit_predictions(work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from fairprobe.audit.predictions import predictions_job

    r = _cli("audit", "--predictions", "pool.csv", "--y-pred-col", "dec", "--group-col", "g",
             "--metric", "dp,di", "--json", "cli.json", cwd=work)
    assert r.returncode == 0, r.stderr
    monkeypatch.chdir(work)  # the file as the command names it
    job = predictions_job("pool.csv", y_pred_col="dec", group_col="g", metrics=["dp", "di"])
    doc = _same(work / "cli.json", job.to_dict())
    assert doc["kind"] == "audit" and doc["provenance"]["backend"]["kind"] == "predictions"
    # a file is counted, not drawn: the terminal says which
    assert "rows: 1200 counted (every row) from the predictions" in r.stdout
    assert "drawn" not in r.stdout

    r = _cli("audit", "--predictions", "pool.csv", "--y-pred-col", "dec", "--group-col", "g",
             "--group-a", "A", "--budget", "500", "--seed", "4", "--json", "cli2.json", cwd=work)
    assert r.returncode == 0, r.stderr
    job = predictions_job("pool.csv", y_pred_col="dec", group_col="g", group_a="A", budget=500,
                          seed=4, metrics=["disparate_impact_ratio"])
    _same(work / "cli2.json", job.to_dict())
    assert "rows: 500 drawn (seed 4) from the predictions" in r.stdout


def test_audit_predictions_proxy(work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from fairprobe.bisg.job import proxy_job
    from fairprobe.bisg.simulate import draw_population

    draw_population(3000, seed=2).frame.to_csv(work / "apps.csv", index=False)
    r = _cli("audit", "--predictions", "apps.csv", "--proxy", "bisg", "--y-pred-col",
             "approved", "--surname-col", "surname", "--zip-col", "zip", "--group-a", "black",
             "--json", "proxy.json", cwd=work)
    assert r.returncode == 0, r.stderr
    monkeypatch.chdir(work)
    job = proxy_job("apps.csv", y_pred_col="approved", surname_col="surname", zip_col="zip",
                    groups=["black"])
    assert _same(work / "proxy.json", job.to_dict())["kind"] == "proxy"


def test_monitor(work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from fairprobe.audit.monitor import monitor_job

    rng = np.random.default_rng(5)
    n = 3000
    group = np.where(rng.random(n) < 0.5, "A", "B")
    logs = work / "logs"
    logs.mkdir()
    pd.DataFrame({
        "t": pd.Timestamp("2026-01-01") + pd.to_timedelta(rng.integers(0, 10 * 24, n), "h"),
        "g": group, "dec": (rng.random(n) < np.where(group == "A", 0.3, 0.6)).astype(int),
    }).to_csv(logs / "day.csv", index=False)
    args = ("monitor", "--predictions", "logs", "--y-pred-col", "dec", "--group-col", "g",
            "--time-col", "t", "--now", "2026-01-09")
    r = _cli(*args, "--state", "cli-state.json", "--json", "mon.json", cwd=work)
    assert r.returncode == 0, r.stderr
    monkeypatch.chdir(work)
    job = monitor_job("logs", y_pred_col="dec", group_col="g", time_col="t",
                      state="lib-state.json", now="2026-01-09")
    doc = _same(work / "mon.json", job.to_dict())
    assert doc["windows"] and "demographic_parity_difference" in doc["monitor"]
    assert doc["verdict"] == "unfair" and doc["verdict_source"].startswith("monitor alarm")
    # the rerun reads nothing new, on both sides
    r = _cli(*args, "--state", "cli-state.json", "--json", "mon2.json", cwd=work)
    assert r.returncode == 0, r.stderr
    job = monitor_job("logs", y_pred_col="dec", group_col="g", time_col="t",
                      state="lib-state.json", now="2026-01-09")
    assert _same(work / "mon2.json", job.to_dict())["refresh"]["files_read"] == []


def test_collab_simulate(work: Path) -> None:
    from fairprobe.collab.job import simulate_job
    from fairprobe.collab.simulate import SimConfig

    r = _cli("collab", "simulate", "--case", "bios-moderate", "--attackers", "2", "--honest",
             "6", "--rounds", "3", "--seed", "1", "--json", "sim.json", cwd=work)
    assert r.returncode == 0, r.stderr
    job = simulate_job(SimConfig(case="bios-moderate", attackers=2, honest=6, max_rounds=3,
                                 seed=1))
    assert _same(work / "sim.json", job.to_dict())["kind"] == "collab-simulate"


def test_collab_sweep(work: Path) -> None:
    from fairprobe.collab.simulate import SimConfig
    from fairprobe.collab.sweep import sweep

    r = _cli("collab", "sweep", "--cases", "civil-near-fair", "--attackers", "0-1", "--seeds",
             "1", "--rounds", "3", "--workers", "1", "--json", "sweep.json", cwd=work)
    assert r.returncode == 0, r.stderr
    sweep(SimConfig(case="civil-near-fair", max_rounds=3), ["civil-near-fair"], [0, 1], [0],
          json_path=work / "lib-sweep.json", n_workers=1)

    def runs(path: Path) -> dict[str, Any]:
        doc = _comparable(json.loads(path.read_text()))
        doc["runs"].sort(key=lambda row: json.dumps(row, sort_keys=True))  # arrival order
        return doc

    assert runs(work / "lib-sweep.json") == runs(work / "sweep.json")


def test_collab_demo_nodes(work: Path) -> None:
    from fairprobe.collab.job import nodes_job
    from fairprobe.collab.net.launcher import DemoSpec

    r = _cli("collab", "demo", "--honest", "2", "--attackers", "1", "--case", "civil-near-fair",
             "--rounds", "2", "--seed", "3", "--round-timeout", "60", "--json", "nodes.json",
             cwd=work)
    assert r.returncode == 0, r.stderr
    job = nodes_job(DemoSpec(honest=2, attackers=1, case="civil-near-fair", rounds=2, seed=3,
                             round_timeout=60.0, verify=True))
    cli, lib = json.loads((work / "nodes.json").read_text()), job.to_dict()
    for d in (cli, lib):
        # traffic counters, and the round in which a proof reaches a node (hence the round of
        # an exclusion, and the estimates of the rounds before it), depend on the gossip's
        # timing, as times do; who is excluded, and the final estimate, do not
        for node in d["nodes"]:
            node.pop("verification")
            node["excluded"] = sorted(node["excluded"])
            node["trajectory"] = node["trajectory"][-1:]
        for ex in d["exclusions"].values():
            ex.pop("last_round")
    assert _comparable(lib) == _comparable(cli)
    assert cli["kind"] == "collab-nodes" and job.verdict == cli["verdict"]


def test_audit_model_two_groups_and_every_group(work: Path, platform: str) -> None:
    from fairprobe.access.http import HttpJsonBackend
    from fairprobe.audit.job import audit_model

    r = _cli("audit", "--url", platform, "--budget", "300", "--seed", "1", "--no-progress",
             "--cache", "cli-a.sqlite", "--json", "a2.json", cwd=work)
    assert r.returncode == 0, r.stderr
    job = audit_model(HttpJsonBackend(url=platform), budget=300, seed=1, url=platform,
                      cache=work / "lib-a.sqlite")
    assert _same(work / "a2.json", job.to_dict())["metric"]["metric"] == "disparate_impact_ratio"

    r = _cli("audit", "--url", platform, "--group-col", "sex,race", "--metric", "dp,eo",
             "--y-true-col", "income", "--budget", "400", "--seed", "2", "--no-progress",
             "--cache", "cli-g.sqlite", "--json", "ag.json", cwd=work)
    assert r.returncode == 0, r.stderr
    job = audit_model(HttpJsonBackend(url=platform), group_col=["sex", "race"],
                      metric=["dp", "eo"], label_col="income", budget=400, seed=2,
                      url=platform, cache=work / "lib-g.sqlite")
    assert _same(work / "ag.json", job.to_dict())["group_col"] == ["sex", "race"]


def test_discover(work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from fairprobe.discover.job import discover_job

    rng = np.random.default_rng(2)
    n = 4000
    df = pd.DataFrame({"region": rng.choice(list("NSEW"), n), "job": rng.choice(list("xyz"), n),
                       "age": rng.integers(18, 80, n)})
    df["y_pred"] = (rng.random(n) < np.where(df["region"] == "N", 0.2, 0.5)).astype(int)
    df.to_csv(work / "disc.csv", index=False)
    r = _cli("discover", "--predictions", "disc.csv", "--y-pred-col", "y_pred", "--features",
             "region,job,age", "--json", "disc.json", cwd=work)
    assert r.returncode == 0, r.stderr
    monkeypatch.chdir(work)
    job = discover_job("disc.csv", features="region,job,age", y_pred="y_pred")
    assert _same(work / "disc.json", job.to_dict())["kind"] == "discover"


def test_demo(work: Path) -> None:
    from fairprobe.demo import DemoConfig, demo_job

    r = _cli("demo", "--sections", "audit,radius", "--budget", "300", "--port", "0",
             "--cache-dir", "cli-demo", "--json", "demo.json", cwd=work)
    assert r.returncode == 0, r.stderr
    job = demo_job(DemoConfig(budget=300, port=None, sections=("audit", "radius"),
                              cache_dir=work / "lib-demo"))
    assert _same(work / "demo.json", job.to_dict())["kind"] == "demo"


def test_plan(work: Path) -> None:
    from fairprobe.stats.plan import plan_audit_budget

    r = _cli("plan", "--metric", "dp", "--tolerance", "0.1", "--group-shares", "a=0.6,b=0.4",
             "--reps", "100", "--json", "plan.json", cwd=work)
    assert r.returncode == 0, r.stderr
    lib = plan_audit_budget("dp", 0.1, {"a": 0.6, "b": 0.4}, reps=100)
    assert json.loads(json.dumps(lib.to_dict())) == json.loads((work / "plan.json").read_text())


def test_platform_info(work: Path) -> None:
    from fairprobe.platform.model import PlatformModel, evaluate_model

    r = _cli("platform", "info", "--json", "info.json", cwd=work)
    assert r.returncode == 0, r.stderr
    lib = evaluate_model(PlatformModel.default(), "test").to_dict()
    assert json.loads(json.dumps(lib)) == json.loads((work / "info.json").read_text())


def test_report(work: Path) -> None:
    from fairprobe.report.build import build_report, load_results
    from fairprobe.report.render import write_markdown

    r = _cli("radius", "--input", "pool.csv", "--value-col", "value", "--group-col", "g",
             "--tolerance", "0.05", "--json", "rad.json", cwd=work)
    assert r.returncode == 0, r.stderr
    (work / "cli-rep").mkdir()
    (work / "lib-rep").mkdir()
    r = _cli("report", "rad.json", "--md", "cli-rep/report.md", cwd=work)
    assert r.returncode == 0, r.stderr
    write_markdown(build_report(load_results([work / "rad.json"])), work / "lib-rep" / "report.md")
    assert (work / "lib-rep" / "report.md").read_text() == \
        (work / "cli-rep" / "report.md").read_text()


def test_audit_llm_prompt_variants_and_name_swap(work: Path, platform: str) -> None:
    from fairprobe.access.config import load_backend
    from fairprobe.access.variation import read_templates
    from fairprobe.audit.job import audit_prompt_variants

    (work / "llm.toml").write_text("\n".join([
        'kind = "openai-chat"', f'base_url = "{platform}/v1"', 'model = "adult-logreg-v1"',
        'labels = [">50K", "<=50K"]', 'positive_labels = [">50K"]',
        'prompt_template = "Person: {record}. Answer with one label: {labels}."']) + "\n")
    (work / "variants.toml").write_text('[templates]\nplain = "Person: {record}. Answer '
                                        '{labels}."\nterse = "{record}\\nLabel ({labels}):"\n')
    r = _cli("audit", "--backend-config", "llm.toml", "--budget", "30", "--no-progress",
             "--prompt-variants", "variants.toml", "--name-swap", "first_name",
             "--cache", "cli-llm.sqlite", "--json", "llm.json", cwd=work)
    assert r.returncode == 0, r.stderr
    job = audit_prompt_variants(
        load_backend(str(work / "llm.toml")),
        prompt_templates=read_templates(str(work / "variants.toml")), budget=30,
        name_swap="first_name", cache=work / "lib-llm.sqlite")
    doc = _same(work / "llm.json", job.to_dict())
    assert doc["requests"]["runs"] == 3 and doc["prompt_variation"]["variants"]
