"""``fairprobe radius``: inputs, JSON keys, one error line."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from fairprobe.radius import consistency_radius


@pytest.fixture
def run(capsys):
    """Run ``fairprobe radius ARGS`` in-process through the real entry point (main())."""
    from fairprobe.cli.main import main

    def _run(*args):
        try:
            main(["radius", *args])
            code = 0
        except SystemExit as exc:
            code = int(exc.code or 0)
        out = capsys.readouterr()
        return SimpleNamespace(returncode=code, stdout=out.out, stderr=out.err)

    return _run


@pytest.fixture
def table(tmp_path):
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"ok": (rng.random(200) < 0.8).astype(int),
                       "sex": rng.choice(["F", "M"], 200), "w": rng.random(200)})
    path = tmp_path / "audit.csv"
    df.to_csv(path, index=False)
    return df, path


def test_csv_with_weights_writes_documented_json(run, table, tmp_path):
    df, path = table
    out = tmp_path / "r.json"
    p = run("--input", str(path), "--value-col", "ok", "--group-col", "sex", "--weight-col", "w",
            "--tolerance", "0.05", "--method", "exact", "--json", str(out))
    assert p.returncode == 0, p.stderr
    doc = json.loads(out.read_text())
    ref = consistency_radius(df.ok, df.sex, 0.05, weights=df.w)
    assert doc["radius"] == pytest.approx(ref.radius)
    for key in ("radius", "phi", "fair", "phi_shifted", "pinsker_bound", "method", "divergence"):
        assert key in doc
    assert doc["pinsker_bound"] == pytest.approx((ref.radius / 2) ** 0.5)
    # the KL value in plain words: the share of the population a conditioning keeps
    keep = np.exp(-ref.radius)
    assert f"as keeping only {keep:.1%} of the audited population" in p.stdout
    assert f"no rate can move by more than {(ref.radius / 2) ** 0.5:.3g}" in p.stdout


def test_per_instance_json_input_and_chi2(run, tmp_path):
    rows = [{"value": v, "group": g} for v, g in
            [(1, "a"), (0, "a"), (1, "a"), (1, "b"), (0, "b"), (0, "b")]]
    src = tmp_path / "audit.json"
    # the shape `fairprobe audit --json` writes (kind, metric, ..., per_instance)
    src.write_text(json.dumps({"kind": "fairprobe.audit", "verdict": "unfair", "per_instance": rows}))
    out = tmp_path / "r.json"
    p = run("--input", str(src), "--tolerance", "0.2", "--divergence", "chi2", "--json", str(out))
    assert p.returncode == 0, p.stderr
    doc = json.loads(out.read_text())
    assert doc["divergence"] == "chi2" and doc["fair"] is False


def test_infinite_radius_is_null(run, tmp_path):
    src = tmp_path / "a.csv"
    pd.DataFrame({"v": [1, 1, 0, 0], "g": [0, 0, 1, 1]}).to_csv(src, index=False)
    out = tmp_path / "r.json"
    p = run("--input", str(src), "--value-col", "v", "--group-col", "g", "--tolerance", "0.5",
            "--json", str(out))
    assert p.returncode == 0
    assert json.loads(out.read_text())["radius"] is None
    assert "infinite" in p.stdout


@pytest.mark.parametrize(
    ("extra", "text"),
    [(["--tolerance", "0"], "tolerance"), (["--tolerance", "0.1", "--value-col", "nope"], "no column")],
)
def test_bad_input_one_error_line(run, table, extra, text):
    _, path = table
    args = ["--input", str(path), "--value-col", "ok", "--group-col", "sex", *extra]
    if "--value-col" in extra:
        args = ["--input", str(path), "--group-col", "sex", *extra]
    p = run(*args)
    assert p.returncode != 0
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and text in lines[0]
    assert "Traceback" not in p.stderr


def test_nan_and_negative_weight_rows(run, tmp_path):
    src = tmp_path / "a.csv"
    pd.DataFrame({"v": [1, None, 0, 1], "g": [0, 0, 1, 1], "w": [1, 1, -1, 1]}).to_csv(src, index=False)
    p = run("--input", str(src), "--value-col", "v", "--group-col", "g", "--tolerance", "0.1")
    assert p.returncode != 0 and "NaN" in p.stderr and len(p.stderr.strip().splitlines()) == 1
    pd.DataFrame({"v": [1, 0, 0, 1], "g": [0, 0, 1, 1], "w": [1, 1, -1, 1]}).to_csv(src, index=False)
    p = run("--input", str(src), "--value-col", "v", "--group-col", "g", "--weight-col", "w",
            "--tolerance", "0.1")
    assert p.returncode != 0 and "non-negative" in p.stderr


def test_infinite_tolerance_is_rejected(run, table):
    _, src = table
    p = run("--input", str(src), "--value-col", "ok", "--group-col", "sex", "--tolerance", "inf")
    assert p.returncode != 0
    assert p.stderr.count("error:") == 1 and "finite" in p.stderr


def test_cli_choices_match_the_registries():
    import fairprobe.radius.baselines  # noqa: F401
    import fairprobe.radius.core  # noqa: F401
    import fairprobe.radius.exact_method  # noqa: F401
    from fairprobe.cli.radius import Divergence, Method
    from fairprobe.radius import METHODS

    assert sorted(m.value for m in Method) == sorted(METHODS)
    assert sorted(d.value for d in Divergence) == ["chi2", "kl"]


def test_unknown_method_is_a_usage_error_listing_the_choices(run, table):
    _, path = table
    p = run("--input", str(path), "--value-col", "ok", "--group-col", "sex", "--tolerance", "0.1",
            "--method", "x")
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert "--method" in p.stderr and "worst-group" in p.stderr
    # closed choices match case-insensitively
    p = run("--input", str(path), "--value-col", "ok", "--group-col", "sex", "--tolerance", "0.1",
            "--method", "EXACT", "--divergence", "KL")
    assert p.returncode == 0, p.stderr


def test_more_than_two_groups_worst_or_chosen_pair(run, tmp_path):
    rng = np.random.default_rng(1)
    g = rng.choice(["a", "b", "c"], 600)
    ok = (rng.random(600) < np.where(g == "a", 0.8, np.where(g == "b", 0.75, 0.7))).astype(int)
    src = tmp_path / "mg.csv"
    pd.DataFrame({"ok": ok, "race": g}).to_csv(src, index=False)
    out = tmp_path / "r.json"
    p = run("--input", str(src), "--value-col", "ok", "--group-col", "race", "--tolerance", "0.3",
            "--json", str(out))
    assert p.returncode == 0 and "worst pair of 3 groups" in p.stdout
    d = json.loads(out.read_text())
    assert len(d["pairs"]) == 3 and d["radius"] == min(x["radius"] for x in d["pairs"])
    p = run("--input", str(src), "--value-col", "ok", "--group-col", "race", "--tolerance", "0.3",
            "--pair", "a,c", "--json", str(out))
    d = json.loads(out.read_text())
    assert p.returncode == 0 and sorted(d["groups"]) == ["a", "c"]
    assert d["flip_curve"]["radius"] == d["radius"] and len(d["flip_curve"]["phi"]) >= 21
    p = run("--input", str(src), "--value-col", "ok", "--group-col", "race", "--tolerance", "0.3",
            "--pair", "a,zz")
    assert p.returncode != 0 and "not in the data" in p.stderr
