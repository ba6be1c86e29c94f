"""``fairprobe sequential`` with the default test: JSON, summary, Ctrl-C, several groups."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fairprobe.sequential import available_tests


def _pool(path: Path, groups: dict[str, tuple[float, int]]) -> Path:
    frames = []
    for g, (rate, n) in groups.items():
        d = np.zeros(n, dtype=int)
        d[: int(round(rate * n))] = 1
        frames.append(pd.DataFrame({"g": g, "d": d}))
    f = path / "pool.csv"
    pd.concat(frames).to_csv(f, index=False)
    return f


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    from fairprobe.cli.main import main

    with pytest.raises(SystemExit) as exc:
        main(argv)
    out = capsys.readouterr()
    return int(exc.value.code or 0), out.out, out.err


BASE = ["sequential", "--group-col", "g", "--decision-col", "d", "--metric", "sp",
        "--tolerance", "0.1", "--access", "decisions", "--budget", "4000"]  # fmt: skip


def test_default_test_writes_queries_outcomes_and_the_figure_data(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = _pool(tmp_path, {"F": (0.5, 2000), "M": (0.3, 2000)})
    out = tmp_path / "out.json"
    code, stdout, err = _run([*BASE, "--input", str(f), "--repeats", "40", "--json", str(out)],
                             capsys)  # fmt: skip
    assert code == 0, err
    d = json.loads(out.read_text())
    assert d["test"] == "mixture" and d["anytime_valid"] is True
    assert len(d["queries"]) == 40 and d["mean_queries"] == pytest.approx(np.mean(d["queries"]))
    assert sum(d["outcomes"].values()) == pytest.approx(1.0)
    assert d["boundaries"]["upper"] == pytest.approx(math.log(20))
    ex = d["example_path"]
    assert len(ex["statistic_upper"]) == ex["queries"]
    assert len(ex["pairs"]["cs_low"]) == len(ex["pairs"]["cs_high"]) > 0
    # piped: the summary line with the outcome shares and the mean queries, then the closing
    # lines every command ends with (the finding, then the verdict the exit code gates on)
    lines = [ln for ln in stdout.splitlines() if ln.strip()]
    assert "mean queries" in lines[0] and "violation" in lines[0]
    assert lines[-1].startswith("verdict: ")


def test_test_choices_are_listed_and_case_insensitive(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from fairprobe.cli.sequential import TestChoice

    assert {c.value for c in TestChoice} == {*available_tests(), "glr"}
    f = _pool(tmp_path, {"F": (0.5, 500), "M": (0.3, 500)})
    code, stdout, err = _run([*BASE, "--input", str(f), "--repeats", "5", "--test", "GLR-Wald"],
                             capsys)  # fmt: skip
    assert code == 0, err and "glr-wald" in stdout
    code, _, err = _run([*BASE, "--input", str(f), "--test", "nope"], capsys)
    assert code != 0 and "nope" in err


def test_ctrl_c_writes_the_repeats_done(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import fairprobe.sequential.pool as pool_mod

    real = pool_mod.run_pool

    def interrupted(*args: object, **kw: object) -> object:
        def stop(done: int) -> None:
            raise KeyboardInterrupt

        kw["progress"] = stop  # Ctrl-C right after the first chunk of orders
        return real(*args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(pool_mod, "run_pool", interrupted)
    f = _pool(tmp_path, {"F": (0.5, 300), "M": (0.3, 300)})
    out = tmp_path / "partial.json"
    code, _, err = _run([*BASE, "--input", str(f), "--repeats", "700", "--json", str(out)],
                        capsys)  # fmt: skip
    assert code == 130
    assert err.strip().count("\n") == 0 and "500 of 700 repeats" in err
    d = json.loads(out.read_text())
    assert d["interrupted"] is True and d["repeats"] == 500 and len(d["queries"]) == 500


def test_three_groups_every_pair_with_bonferroni_or_a_chosen_pair(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = _pool(tmp_path, {"A": (0.30, 1500), "B": (0.33, 1500), "C": (0.55, 1000)})
    out = tmp_path / "g3.json"
    code, _, err = _run([*BASE, "--input", str(f), "--repeats", "30", "--json", str(out)], capsys)
    assert code == 0, err
    d = json.loads(out.read_text())
    assert d["pairs"] == 3 and d["alpha_per_pair"] == pytest.approx(0.05 / 3)
    assert d["outcomes"]["violation"] >= 0.9
    assert d["pool"]["worst_pair"] == "A|C"
    assert all(p in (None, "A|C", "B|C") for p in d["deciding_pair"])
    assert all(q % 3 == 0 for q in d["queries"])  # whole rounds of the three groups
    code, _, err = _run([*BASE, "--input", str(f), "--repeats", "30", "--pair", "A,B",
                         "--json", str(out)], capsys)  # fmt: skip
    assert code == 0, err
    d = json.loads(out.read_text())
    assert d["pairs"] == 1 and d["alpha_per_pair"] == 0.05
    assert d["outcomes"]["compliant"] >= 0.9
    code, _, err = _run([*BASE, "--input", str(f), "--test", "glr-wald"], capsys)
    assert code != 0 and "default test only" in err
