"""One verdict on every surface: the terminal's closing line, the report's badges, headline and
question table, and the ``--fail-on`` exit code agree, for result documents of every kind.

Documents are generated (hypothesis): two-group audits with counts (recomputed at the
headline's share), sequential audits whose test stopped on a word the confidence sequence may
not support, monitors with or without an alarm, windowed audits, and legacy verdict words.
"""

from __future__ import annotations

import math
import re
from typing import Any

import pytest
import typer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fairprobe.cli.gate import gate_verdict
from fairprobe.report.build import build_report
from fairprobe.report.render import render_html
from fairprobe.report.verdict import closing_lines, finding_text, section_line
from fairprobe.stats.finding import Finding, Question, decide
from fairprobe.stats.headline import combine

pytest.importorskip("jinja2")

SCHEMA = "fairprobe/1"


@st.composite
def two_group(draw: Any) -> dict[str, Any]:
    A, B = draw(st.integers(20, 3000)), draw(st.integers(20, 3000))
    a, b = draw(st.integers(0, A)), draw(st.integers(0, B))
    from fairprobe.stats.counts import CountsVector
    from fairprobe.stats.result import INTERVAL_METHODS

    lo, hi = INTERVAL_METHODS["newcombe"](CountsVector(a, A, b, B), 0.95)
    tol = draw(st.sampled_from([0.02, 0.05, 0.1]))
    q = Question("demographic_parity_difference", "difference", tol, ("x", "y"),
                 rates=("selection_rate",))
    f = Finding(q, a / A - b / B, lo, hi, 0.95, "newcombe", coverage="exact",
                counts={"a": a, "A": A, "b": b, "B": B})
    return {"schema": SCHEMA, "kind": "audit", "metric": {
        "metric": q.metric, "kind": "difference", "estimate": f.estimate,
        "interval": {"low": lo, "high": hi, "level": 0.95, "method": "newcombe"},
        "threshold": tol, "verdict": f.verdict, "groups": {"a": "x", "b": "y"},
        "counts": {"a": a, "A": A, "b": b, "B": B}, "finding": f.to_dict()}}


@st.composite
def sequential(draw: Any) -> dict[str, Any]:
    tol = 0.1
    lo = draw(st.floats(-0.6, 0.5))
    hi = lo + draw(st.floats(0.01, 0.5))
    q = Question("sp_gap", "difference", tol, ("x", "y"), rates=("sequential:sp",))
    f = Finding(q, (lo + hi) / 2, lo, hi, 0.95, "anytime-valid confidence sequence",
                coverage="anytime-valid", counts={"queries": 100})
    outcome = draw(st.sampled_from(["violation", "compliance", "budget"]))
    return {"schema": SCHEMA, "kind": "sequential", "outcome": outcome, "metric": "sp",
            "queries": 100, "tolerance": tol, "finding": f.to_dict()}


@st.composite
def monitor(draw: Any) -> dict[str, Any]:
    doc = draw(two_group())
    n = draw(st.integers(3, 20))
    lw = draw(st.lists(st.floats(-3, 8), min_size=n, max_size=n))
    alpha, fam = 0.05, 2
    line = math.log(fam / alpha)
    crossed = [i for i, x in enumerate(lw) if x >= line]
    wins = [f"2024-01-{i + 1:02d}T00:00:00" for i in range(n)]
    verdicts = draw(st.lists(st.sampled_from(["fair", "unfair", "undetermined"]),
                             min_size=n, max_size=n))
    doc["windows"] = [{"start": w, "end": w, "n": 3000, "findings": {
        "demographic_parity_difference": {"estimate": 0.05, "pair": ["x", "y"], "low": 0.0,
                                          "high": 0.1, "level": 0.95, "verdict": v,
                                          "threshold": 0.05}}}
                      for w, v in zip(wins, verdicts, strict=True)]
    if draw(st.booleans()):
        doc["monitor"] = {"demographic_parity_difference": {
            "metric": "demographic_parity_difference", "kind": "difference", "bound": 0.05,
            "alpha": alpha, "alarm": wins[crossed[0]] if crossed else None,
            "family_size": fam, "log_threshold": line, "windows": wins, "log_wealth": lw,
            "groups": ["x", "y"]}}
    return doc


legacy = st.sampled_from(["fair", "unfair", "undetermined"]).map(
    lambda v: {"metric": {"metric": "dp", "estimate": 0.1, "verdict": v}, "budget": 10,
               "paid": 10})

documents = st.lists(st.one_of(two_group(), sequential(), monitor(), legacy),
                     min_size=1, max_size=4)


def _exit(verdict: str, fail_on: str) -> int:
    try:
        gate_verdict(verdict, fail_on)
    except typer.Exit as e:
        return int(e.exit_code)
    return 0


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents)
def test_every_surface_says_the_same(docs: list[dict[str, Any]]) -> None:
    rep = build_report([(f"r{i}.json", d) for i, d in enumerate(docs)])
    for s in rep.sections:
        s.figures = []  # the figures are tested elsewhere; the words are tested here
    html = render_html(rep)
    overall = rep.overall
    # the headline badge and sentence
    chip = re.search(r'<p class="headline v-(\w+)" id="verdict"><strong>Verdict: '
                     r'<span class="chip v-(\w+)">(\w+)</span>', html)
    assert chip is not None and chip.groups() == (overall, overall, overall)
    lead = {"unfair": "judged unfair", "fair": "judged fair",
            "undetermined": "No verdict on the audited model"}
    assert lead[overall] in rep.headline or (overall == "undetermined"
                                             and rep.headline.startswith("No finding"))
    # the terminal's closing line
    lines = closing_lines(rep)
    assert lines[-1].startswith(f"verdict: {overall} (")
    # the exit code
    assert _exit(overall, "unfair") == (5 if overall == "unfair" else 0)
    assert _exit(overall, "undetermined") == {"unfair": 5, "fair": 0, "undetermined": 6}[overall]
    # the question table reconciles with the headline: each question's verdict combines its
    # rows' verdicts at their headline level, and the headline combines the questions
    per_q: dict[int, list[str]] = {}
    for q in rep.questions:
        per_q.setdefault(q["question"], []).append(q["verdict_at_level"])
        if q["counted"] == "not counted":
            assert q["verdict_at_level"] == "undetermined" and q["level"] is None
    for q in rep.questions:
        assert q["question_verdict"] == combine(per_q[q["question"]])
    if rep.questions:
        assert overall == combine(combine(v) for v in per_q.values())
    assert f"{len(per_q)} question" in rep.tally
    for s, d in zip(rep.sections, docs, strict=True):
        # each section's badge is in the page, and its closing line carries its findings
        assert f'<span class="chip v-{s.verdict or "none"}">' in html
        line = section_line(s)
        for e in s.entries:
            if e.finding is not None:
                assert finding_text(e.finding) in line
        if d.get("kind") == "sequential":
            f = Finding.from_dict(d["finding"])
            assert s.verdict == f.verdict  # the badge is the finding, never the test's word
            assert line.startswith(f"stopped: {d['outcome']}; finding: {f.verdict}, ")
        mon = (d.get("monitor") or {}).get("demographic_parity_difference")
        if mon is not None:
            # an alarm makes the section and the report unfair
            assert (s.verdict == "unfair") == bool(
                mon["alarm"] or d["metric"]["finding"]["verdict"] == "unfair")
            row = next(q for q in rep.questions
                       if q["finding"].startswith("monitor") and q["source"] == s.source)
            # the alarm at the headline's share: a crossing of log(m / share), and then the
            # headline is unfair (a smaller share can undo an alarm at the monitor's own level)
            if row["verdict_at_level"] == "unfair":
                assert overall == "unfair" and mon["alarm"]
            if row["level"] is not None:  # recomputed: the crossing of log(m / share)
                line_at = math.log(2 / (1 - row["level"]))
                hit = any(x >= line_at for x in mon["log_wealth"])
                assert row["verdict_at_level"] == ("unfair" if hit else "undetermined")
        if d.get("windows"):
            assert any(q["finding"].startswith("windows:") and q["counted"] == "not counted"
                       for q in rep.questions)


def test_sequential_closing_line_reads_as_the_issue_says() -> None:
    q = Question("sp_gap", "difference", 0.1, ("x", "y"))
    f = Finding(q, -0.24, -0.395, -0.090, 0.95, "anytime-valid confidence sequence",
                coverage="anytime-valid")
    assert decide(f.low, f.high, kind="difference", threshold=0.1) == "undetermined"
    doc = {"schema": SCHEMA, "kind": "sequential", "outcome": "violation", "metric": "sp",
           "finding": f.to_dict()}
    rep = build_report([("s.json", doc)])
    assert closing_lines(rep)[0] == (
        "stopped: violation; finding: undetermined, -0.24 [-0.395, -0.09] at 95%: the "
        "confidence sequence still reaches the band +/-0.1")
    assert rep.overall == "undetermined" and rep.sections[0].verdict == "undetermined"
