"""A newcomer's path: errors name the flag or key that fixes them, --pos-label works in
two-group audits, help texts say what the flags are."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    from fairprobe.cli.main import main

    with pytest.raises(SystemExit) as exc:
        main(argv)
    out = capsys.readouterr()
    return int(exc.value.code or 0), out.out, out.err


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    import skops.io as sio
    from sklearn.linear_model import LogisticRegression

    d = tmp_path_factory.mktemp("newcomer")
    rng = np.random.default_rng(0)
    x = rng.normal(size=800)
    sex = rng.choice(["Female", "Male"], 800)
    y = (x + rng.normal(size=800) > 0).astype(int)
    sio.dump(LogisticRegression().fit(pd.DataFrame({"x": x}), y), d / "m.skops")
    (d / "m.toml").write_text('kind = "local"\npath = "m.skops"\nfeature_columns = ["x"]\n')
    pd.DataFrame({"x": x, "sex": sex, "y": y}).to_csv(d / "num.csv", index=False)
    pd.DataFrame({"x": x, "sex": sex, "y": np.where(y == 1, ">50K", "<=50K")}).to_csv(
        d / "str.csv", index=False)
    return d / "m.toml", d / "num.csv", d / "str.csv"


def test_pos_label_in_a_two_group_audit(setup, tmp_path, capsys) -> None:
    cfg, num, text = setup
    base = ["audit", "--backend-config", str(cfg), "--metric", "eo", "--label-col", "y",
            "--group-col", "sex", "--group-a", "Female", "--group-b", "Male", "--no-progress",
            "--no-cache"]
    code, _, err = _run([*base, "--queries", str(text)], capsys)
    assert code == 2 and "--pos-label" in err and "pos_label=" not in err
    code, _, err = _run([*base, "--queries", str(text), "--pos-label", ">50K", "--json",
                         str(tmp_path / "s.json")], capsys)
    assert code == 0, err
    code, _, err = _run([*base, "--queries", str(num), "--json", str(tmp_path / "n.json")],
                        capsys)
    assert code == 0, err
    s, n = (json.loads((tmp_path / f).read_text())["metric"] for f in ("s.json", "n.json"))
    assert s["estimate"] == n["estimate"] and s["interval"] == n["interval"]


def test_untrusted_skops_types_name_the_trusted_key(tmp_path) -> None:
    import skops.io as sio
    from sklearn.ensemble import HistGradientBoostingClassifier

    from fairprobe.access import load_backend
    from fairprobe.errors import ConfigError

    m = HistGradientBoostingClassifier(max_iter=3).fit([[0], [1], [2], [3]], [0, 1, 0, 1])
    sio.dump(m, tmp_path / "hgb.skops")
    untrusted = sio.get_untrusted_types(file=tmp_path / "hgb.skops")
    if not untrusted:
        pytest.skip("this skops version trusts every type of the model")
    with pytest.raises(ConfigError, match=re.escape("trusted = [") + re.escape(f'"{untrusted[0]}"')):
        load_backend({"kind": "local", "path": str(tmp_path / "hgb.skops")})
    be = load_backend({"kind": "local", "path": str(tmp_path / "hgb.skops"),
                       "trusted": untrusted})  # the line the message names works
    assert be.kind == "local"


def test_help_texts(capsys) -> None:
    code, out, _ = _run(["audit", "--help"], capsys)
    text = " ".join(out.replace("│", " ").split())  # the help's box borders out of the way
    assert code == 0
    assert "--no-cache" in text and "--no-no-cache" not in text and "--no-refresh" not in text
    for metric in ("eo", "fpr", "eodds", "ppv", "accuracy-gap", "error-rate"):
        assert metric in text.split("True-label column")[1][:200], metric
    assert "'all' for every row. [default: 2000" in text  # rich markup no longer eats it
    assert "TOML [templates] name" in text
