"""``fairprobe audit --backend-config llm.toml`` against the platform's chat endpoint, end to end.

The platform answers like a reasoning model (``<think>`` blocks, ``max_tokens`` refused), refuses
and garbles seeded shares of the records. The audit's JSON must count exactly the refusals and
unparsed answers the server produced, per group (recomputed here from the server's seeded hash).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from fairprobe.audit import draw_queries
from fairprobe.datasets import load_adult
from fairprobe.datasets.names import hash_uniform
from fairprobe.platform.core import record_key
from fairprobe.platform.model import AUDIT_FEATURES
from fairprobe.platform.process import PlatformProcess

SEED, REFUSE, GARBLE, BUDGET = 6, 0.08, 0.05, 160


@pytest.fixture(scope="module")
def plat() -> Iterator[PlatformProcess]:
    with PlatformProcess(seed=SEED, llm_reasoning="think", llm_refuse_rate=REFUSE,
                         llm_garble_rate=GARBLE) as p:
        yield p


def config(tmp: Path, url: str, **extra: str) -> Path:
    lines = [
        'kind = "openai-chat"', f'base_url = "{url}/v1"', 'model = "adult-logreg-v1"',
        'labels = [">50K", "<=50K"]', 'positive_labels = [">50K"]',
        'prompt_template = """Predict whether the yearly income of this person exceeds $50K.',
        'Answer with exactly one label: {labels}.', 'Person: {record}"""',
        *(f"{k} = {v}" for k, v in extra.items()),
    ]
    path = tmp / "llm.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fairprobe", "audit", *args],
                          capture_output=True, text=True, timeout=300, env=os.environ.copy())


def expected_outcomes() -> dict[str, dict[str, int]]:
    pool = load_adult("test", names_seed=None)[[*AUDIT_FEATURES, "income"]]
    sample = draw_queries(pool, BUDGET, 0)
    out: dict[str, dict[str, int]] = {}
    for rec in sample.to_dict("records"):
        key = record_key(rec)
        garbled = hash_uniform(key, SEED, "garble") < GARBLE
        refused = not garbled and hash_uniform(key, SEED, "refuse") < REFUSE
        kind = "unparsed" if garbled else "refused" if refused else "ok"
        g = out.setdefault(rec["sex"], dict.fromkeys(("ok", "unparsed", "refused", "truncated"), 0))
        g[kind] += 1
    return out


def test_reasoning_config_counts_refusals_and_unparsed_per_group(
    plat: PlatformProcess, tmp_path: Path
) -> None:
    cfg = config(tmp_path, plat.url, max_completion_tokens="256")
    out = tmp_path / "audit.json"
    r = run("--backend-config", str(cfg), "--budget", str(BUDGET), "--cache",
            str(tmp_path / "c.sqlite"), "--no-progress", "--json", str(out), "--send-group")
    assert r.returncode == 0, r.stderr
    d = json.loads(out.read_text())
    assert d["kind"] == "audit" and d["schema"] == "fairprobe/1"
    # the provenance block (helper "trust") counts the same refusals per group
    by_group = d["provenance"]["answers"]["by_group"]
    assert {g: c["refused"] for g, c in by_group.items()} == {
        g: c["refused"] for g, c in expected_outcomes().items()}
    want = expected_outcomes()
    assert d["outcomes_by_group"] == want
    assert all(g["refused"] > 0 for g in want.values())  # the test shows something
    assert d["unparsed"] == sum(g["unparsed"] + g["refused"] for g in want.values())
    assert d["usage"]["reasoning_tokens"] > 20 * d["usage"]["requests"]
    # max_tokens is what reasoning APIs refuse: the error says what to use instead
    bad = config(tmp_path, plat.url)
    r = run("--backend-config", str(bad), "--budget", "20", "--cache",
            str(tmp_path / "c2.sqlite"), "--no-progress", "--send-group")
    assert r.returncode != 0 and "Use 'max_completion_tokens'" in r.stderr
    assert "Traceback" not in r.stderr


def test_strict_stops_early_on_truncation(
    plat: PlatformProcess, tmp_path: Path
) -> None:
    cache = str(tmp_path / "c.sqlite")
    short = config(tmp_path, plat.url, max_completion_tokens="20")
    r = run("--backend-config", str(short), "--budget", str(BUDGET), "--cache", cache,
            "--no-progress", "--strict", "--send-group")
    assert r.returncode != 0
    assert "strict mode:" in r.stderr and "truncated" in r.stderr
    assert r.stderr.count("\n") <= 2 and "Traceback" not in r.stderr
    # it stopped early: only the first tenth was paid
    import sqlite3

    with sqlite3.connect(cache) as conn:
        (n,) = conn.execute("SELECT COUNT(*) FROM answers").fetchone()
    assert 20 <= n <= BUDGET // 2


def test_prompt_variants_and_name_swap_from_the_cli(plat: PlatformProcess, tmp_path: Path) -> None:
    cfg = config(tmp_path, plat.url, max_completion_tokens="256")
    variants = tmp_path / "variants.toml"
    variants.write_text('[templates]\nplain = "Person: {record}. Answer {labels}."\n'
                        'terse = "{record}\\nLabel ({labels}):"\n')
    out = tmp_path / "a.json"
    r = run("--backend-config", str(cfg), "--budget", "60", "--cache", str(tmp_path / "c.sqlite"),
            "--no-progress", "--json", str(out), "--prompt-variants", str(variants),
            "--name-swap", "first_name")
    assert r.returncode == 0, r.stderr
    d = json.loads(out.read_text())
    pv = d["prompt_variation"]
    assert [v["name"] for v in pv["variants"]] == ["plain", "terse"]
    assert len({v["identity"] for v in pv["variants"]} | {d["backend"]}) == 3  # 3 namespaces
    # the platform reads only the record: the wording changes nothing, and the result says so
    assert pv["spread"] == 0.0 and pv["verdicts_agree"] is True
    ns = d["name_swap"]
    assert ns["n_pairs"] == 60 and ns["n_usable"] <= 60
    # the user interface infers sex from the name: swapping names flips some decisions
    assert 0 < ns["n_flips"] < ns["n_usable"]
    assert ns["interval"]["low"] <= ns["flip_rate"] <= ns["interval"]["high"]
    assert "name swap (first_name)" in r.stdout
    # one source of truth for the counters: the terminal's request line is the JSON's
    # `requests`, and every paid request is one the server reported usage for
    req = d["requests"]
    assert req["runs"] == 3 and req["paid"] == d["usage"]["requests"] > 60
    assert (f"all requests of this audit (3 run(s), with name swaps): {req['paid']} paid, "
            f"{req['cached']} from the cache") in " ".join(r.stdout.split())
