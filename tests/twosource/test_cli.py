"""``fairprobe twosource`` and ``fairprobe twosource plan`` through the real entry point."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fairprobe.cli.main import main


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    out = capsys.readouterr()
    return int(exc.value.code or 0), out.out, out.err


def test_plan_worked_example(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "plan.json"
    code, out, _ = run(
        ["twosource", "plan", "--proxy-accuracy", "0.91", "--checks", "100", "--alpha", "0.05",
         "--gamma", "0.1", "--json", str(path)],
        capsys,
    )  # fmt: skip
    assert code == 0 and "n_max   = 14" in out
    d = json.loads(path.read_text())
    assert d["n_max"] == 14 and round(d["p_manip"], 2) == 0.76


def test_plan_with_budget_lists_pareto_allocations(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "plan.json"
    code, out, _ = run(
        ["twosource", "plan", "--proxy-accuracy", "0.91", "--checks", "12", "--gamma", "0.3",
         "--budget", "100", "--json", str(path)],
        capsys,
    )  # fmt: skip
    assert code == 0 and "Pareto-optimal" in out
    d = json.loads(path.read_text())
    eps = [r["epsilon_a"] for r in d["pareto"]]
    pm = [r["p_manip"] for r in d["pareto"]]
    assert eps == sorted(eps) and pm == sorted(pm) and len(pm) > 3
    assert all(r["t_fair"] + r["t_fraud"] <= 100 for r in d["pareto"])


def test_plan_bad_input_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["twosource", "plan", "--proxy-accuracy", "1.5", "--checks", "10"], capsys)
    assert code != 0 and err.startswith("error: ") and err.count("\n") == 1


def test_audit_command_against_live_server(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], live_platform: Any
) -> None:
    path = tmp_path / "r.json"
    argv = ["twosource", "--url", live_platform.url, "--budget", "400", "--seed", "2",
            "--cache", str(tmp_path / "c.sqlite"), "--no-progress", "--json", str(path)]  # fmt: skip
    code, out, _ = run(argv, capsys)
    assert code == 0 and "MANIPULATED" in out
    d = json.loads(path.read_text())
    assert d["verdict"] == "manipulated" and d["detected_by"]
    assert d["n_max"] is not None and d["p_value"] is not None
    assert d["queries"]["paid_a"] > 0
    # the rerun is answered from the cache
    code, _, _ = run(argv, capsys)
    assert json.loads(path.read_text())["queries"]["paid_a"] == 0
    # a budget too small: one clear line, exit code non-zero
    code, _, err = run([*argv[:3], "--budget", "3", "--cache", str(tmp_path / "c.sqlite")], capsys)
    assert code != 0 and "too small for one query per group per source" in err
    assert err.count("\n") == 1


# --- Appendix B: the regime of a budget ------------------------------------------


def _plan(tmp_path: Path, capsys: pytest.CaptureFixture[str], budget: int) -> tuple[int, str, str, Any]:
    path = tmp_path / f"plan-{budget}.json"
    code, out, err = run(
        ["twosource", "plan", "--proxy-accuracy", "0.91", "--budget", str(budget),
         "--epsilon", "0.1", "--json", str(path)],
        capsys,
    )  # fmt: skip
    return code, out, err, json.loads(path.read_text()) if path.exists() else None


def test_plan_small_budget_is_refused_with_the_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err, d = _plan(tmp_path, capsys, 300)
    assert code != 0 and d is None
    assert err.startswith("error: ") and err.count("\n") == 1
    assert "small regime (t < t_A = 600)" in err and "needs 600 queries" in err


def test_plan_middle_budget_gives_the_pareto_frontier(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _, d = _plan(tmp_path, capsys, 1000)
    assert code == 0 and "regime 'pareto'" in out and "Pareto-optimal" in out
    assert d["regime"] == "pareto" and d["t_a"] == 600 and d["t_a"] <= 1000 <= d["t_b"]
    rec = d["recommended"]
    assert rec["source_of_estimate"] == "A" and rec["epsilon_a"] <= 0.1
    # the recommendation is the most powerful allocation within the requested margin
    assert rec["p_manip"] == max(r["p_manip"] for r in d["pareto"] if r["epsilon_a"] <= 0.1)


def test_plan_large_budget_estimates_from_b(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _, d = _plan(tmp_path, capsys, 3000)
    assert code == 0 and "regime 'large'" in out and "from B alone" in out
    assert d["regime"] == "large" and d["t_b"] < 3000
    rec = d["recommended"]
    assert rec["source_of_estimate"] == "B" and rec["n_b"] >= d["t_b"]
    assert rec["n_b"] + rec["n_a"] == 3000 and rec["t_fraud"] == rec["n_a"]
    assert rec["epsilon_b"] <= 0.1 and rec["b_estimator"] == "double-sampling"
    assert rec["epsilon_b"] <= 0.1 and "pareto" not in d


def test_plan_huge_inputs_are_fast_or_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # 10^12 checks: the binomial quantile in closed form, no array of 10^12 entries
    code, out, _ = run(["twosource", "plan", "--proxy-accuracy", "0.91",
                        "--checks", str(10**12)], capsys)  # fmt: skip
    assert code == 0 and "n_max" in out
    code, _, err = run(["twosource", "plan", "--proxy-accuracy", "0.91",
                        "--budget", str(10**13)], capsys)  # fmt: skip
    assert code != 0 and "budget" in err and err.count("\n") == 1


@pytest.mark.parametrize("spec", [",", "", "foo", "di,nope"])
def test_audit_detector_list_must_name_known_detectors(
    spec: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(["twosource", "--url", "http://127.0.0.1:9", "--detectors", spec], capsys)
    assert code != 0 and err.startswith("error: --detectors") and err.count("\n") == 1


@pytest.mark.parametrize(("flags", "want"), [
    (["--proxy", "learned", "--inference", "proxy"], "inference"),
    (["--proxy", "name", "--inference", "learned"], "--inference learned"),
])
def test_audit_inference_rule_refusals_are_one_line(
    flags: list[str], want: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A learned classifier is not the rule B infers the group with: refused before a query."""
    code, _, err = run(["twosource", "--url", "http://127.0.0.1:9", "--budget", "400",
                        "--cache", str(tmp_path / "c.sqlite"), *flags], capsys)
    assert code != 0 and err.startswith("error:") and want in err and err.count("\n") == 1
