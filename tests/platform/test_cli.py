"""``fairprobe platform info`` and the one-line errors of ``fairprobe platform serve``."""

from __future__ import annotations

import json
from pathlib import Path

import joblib
import pytest

from fairprobe.cli.main import main


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    out = capsys.readouterr()
    return int(exc.value.code or 0), out.out, out.err


def test_info_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "info.json"
    code, out, err = _run(["platform", "info", "--json", str(path)], capsys)
    assert code == 0, err
    d = json.loads(path.read_text())
    assert d["model"] == "adult-logreg-v1" and d["split"] == "test" and d["n"] == 16_281
    assert d["accuracy"] == pytest.approx(0.7602, abs=5e-4)
    assert d["disparate_impact_sex"] == pytest.approx(0.2571, abs=2e-3)
    assert d["disparate_impact_sex"] == pytest.approx(
        d["positive_rate_female"] / d["positive_rate_male"]
    )
    assert "accuracy 0.7602" in out and "disparate impact by sex 0.257" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["platform", "serve", "--gamma", "1.5", "--fairwash", "positive"], "'gamma' parameter"),
        (["platform", "serve", "--fairwash", "lie"], "'fairwash' parameter"),
        (["platform", "serve", "--fairwash-select", "best"], "'fairwash_select' parameter"),
        (["platform", "serve", "--fail-rate", "1"], "'fail_rate' parameter"),
        (["platform", "serve", "--host", "192.168.1.2"], "Refusing to serve on '192.168.1.2'"),
        (["platform", "info", "--split", "dev"], "'split' parameter"),
        (["platform", "info", "--model-file", "/nonexistent.joblib"], "does not exist"),
    ],
)
def test_bad_options_are_one_line(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = _run(argv, capsys)
    assert code != 0
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0]


def test_model_without_predict_proba(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.joblib"
    joblib.dump({"not": "a model"}, path)
    code, _, err = _run(["platform", "info", "--model-file", str(path)], capsys)
    assert code == 2 and "is a pickle" in err and "--allow-pickle" in err  # no opt-in: not loaded
    code, _, err = _run(["platform", "info", "--model-file", str(path), "--allow-pickle"], capsys)
    assert code == 2 and "without predict_proba()" in err
    garbage = tmp_path / "garbage.skops"
    garbage.write_bytes(b"nope")
    code, _, err = _run(["platform", "info", "--model-file", str(garbage)], capsys)
    assert code == 2 and "Cannot load model file" in err


def test_skops_model_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import skops.io as sio

    from fairprobe.platform.model import train_default_model

    path = tmp_path / "m.skops"
    sio.dump(train_default_model(), path)
    out_json = tmp_path / "i.json"
    code, _, err = _run(
        ["platform", "info", "--model-file", str(path), "--json", str(out_json)], capsys
    )
    assert code == 0, err
    d = json.loads(out_json.read_text())
    assert d["model"].startswith("file:m.skops:")
    # the same pipeline as the default model, so the same figures
    assert d["accuracy"] == pytest.approx(0.7602, abs=5e-4)


def test_serve_rejects_a_model_that_fails_on_the_schema(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A model file whose predict_proba breaks on the audit features fails at start-up, in one
    line, before any port is served."""
    from sklearn.linear_model import LogisticRegression

    from conftest import free_port

    model = LogisticRegression().fit([[0.0], [1.0]] * 2, [0, 1] * 2)  # wants 1 numeric column
    path = tmp_path / "dummy.joblib"
    joblib.dump(model, path)
    argv = ["platform", "serve", "--model-file", str(path), "--allow-pickle", "--port",
            str(free_port())]
    code, _, err = _run(argv, capsys)
    assert code == 2
    assert err.startswith("error: The model file:dummy.joblib:"), err
    assert "example record" in err
