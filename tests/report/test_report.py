"""``fairprobe report``: kind inference, tolerant adapters, self-contained accessible HTML, Markdown.

The legacy fixtures under ``data/`` are real outputs of today's commands (``fairprobe demo --json``,
``collab simulate --json``, ``collab sweep --json``), written before the result-JSON contract.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from fairprobe.errors import DataError
from fairprobe.report.adapters import adapt, infer_kind, split_document
from fairprobe.report.build import build_report, load_results, overall_verdict
from fairprobe.report.render import render_html, write_markdown

DATA = Path(__file__).parent / "data"
NOW = dt.datetime(2026, 1, 2, 3, 4, tzinfo=dt.UTC)


def _load(name: str) -> dict[str, Any]:
    return json.loads((DATA / name).read_text())


def test_legacy_kinds_are_inferred() -> None:
    demo = _load("legacy-demo.json")
    assert "schema" not in demo
    assert infer_kind(demo) == "demo"
    parts = [(k, label) for k, _, label in split_document(demo, "demo.json")]
    assert parts == [("audit", "disparate impact"), ("audit", "demographic parity"),
                     ("radius", ""), ("sequential", "decisions access"),
                     ("sequential", "scores access"), ("sequential", "logits access"),
                     ("twosource", "")]
    assert infer_kind(_load("legacy-collab-simulate.json")) == "collab-simulate"
    assert infer_kind(_load("legacy-collab-sweep.json")) == "collab-sweep"
    assert infer_kind(demo["audit"]["disparate_impact"]) == "audit"
    assert infer_kind({"schema": "fairprobe/1", "kind": "radius"}) == "radius"
    assert infer_kind({"what": 1}) is None


def test_demo_report_model() -> None:
    rep = build_report(load_results([DATA / "legacy-demo.json"]), now=NOW)
    # a legacy file carries verdict words but no finding (no interval with its coverage):
    # shown, never counted, so the headline cannot say more than undetermined
    assert rep.overall == "undetermined"
    assert rep.headline.startswith("No verdict on the audited model (0 of 2 questions about "
                                   "the model say unfair, 0 fair, 2 undetermined)")
    assert "5 findings are shown but not counted" in rep.headline
    assert "audit API gives auditors manipulated answers" in rep.headline
    audit = rep.sections[0]
    assert audit.verdict == "unfair" and "0.252" in audit.sentence
    # legacy counts: 75/650 Female, 619/1350 Male positives -> Wilson intervals, labelled as such
    fig = audit.figures[0].data
    assert [g["group"] for g in fig["groups"]] == ["Female", "Male"]
    assert fig["groups"][0]["rate"] == pytest.approx(75 / 650)
    assert fig["groups"][0]["low"] < 75 / 650 < fig["groups"][0]["high"]
    assert "wilson" in fig["groups"][0]["method"]
    assert fig["band"] == {"kind": "ratio", "low": 0.8, "high": None}  # the 80% rule, one-sided
    seq = [s for s in rep.sections if s.kind == "sequential"]
    assert [s.verdict for s in seq] == ["unfair"] * 3
    assert any("no confidence sequence" in n for n in seq[0].notes)  # said, not invented
    radius = next(s for s in rep.sections if s.kind == "radius")
    assert radius.figures[0].plot == "radius_shift"  # no curve in a legacy result
    assert any("no flip curve" in n for n in radius.notes)
    ts = next(s for s in rep.sections if s.kind == "twosource")
    assert ts.verdict == "manipulated" and "conditional fired" in ts.sentence
    assert rep.provenance[0].items[0][1].startswith("not recorded")


def _sec(v: str | None, coverage: str = "exact", q: str = "q") -> Any:
    from fairprobe.stats.finding import Finding, Question
    from fairprobe.stats.headline import Entry

    s = adapt("unknown", {"verdict": v} if v else {}, "x.json")
    bounds = {"fair": (-0.01, 0.01), "unfair": (0.2, 0.3), "undetermined": (-0.2, 0.2)}
    if v in bounds:
        f = Finding(Question("demographic_parity_difference", "difference", 0.05), 0.0,
                    *bounds[v], 0.95, "exact-difference", coverage=coverage)
        b = bounds[v]
        s.entries = [Entry(f"{q}{v}", f, v, refit=lambda level: b)]
    return s


def test_overall_verdict() -> None:
    sec = _sec
    assert overall_verdict([sec("unfair"), sec("undetermined")]) == "unfair"
    # unfair if any question is answered unfair, fair only if every one is fair
    assert overall_verdict([sec("fair"), sec("unfair")]) == "unfair"
    assert overall_verdict([sec("fair"), sec("undetermined")]) == "undetermined"
    assert overall_verdict([sec("inconclusive")]) == "undetermined"
    assert overall_verdict([sec("fair"), sec(None)]) == "fair"
    assert overall_verdict([]) == "undetermined"
    # only guarantees count: an asymptotic "unfair" or "fair" makes the headline undetermined
    assert overall_verdict([sec("unfair", "asymptotic")]) == "undetermined"
    assert overall_verdict([sec("fair"), sec("fair", "none", "r")]) == "undetermined"


def test_new_contract_fields_are_used() -> None:
    """Fields of the result contract (by-group table, confidence sequence, flip curve, nodes,
    suspicion, provenance) are drawn when present."""
    audit = {"schema": "fairprobe/1", "kind": "audit",
             "provenance": {"model": "local:m.skops#ab12", "created": "2026-11-30T12:00:00Z",
                            "seed": 3, "queries": {"paid": 10, "cached": 2}},
             "metric": {"metric": "demographic_parity_difference", "kind": "difference",
                        "estimate": 0.01, "interval": {"low": -0.02, "high": 0.03,
                                                       "level": 0.95, "method": "newcombe"},
                        "threshold": 0.05, "verdict": "fair"},
             "by_group": [{"group": "x", "rate": 0.4, "n": 50,
                           "interval": {"low": 0.3, "high": 0.5, "level": 0.95,
                                        "method": "wilson"}},
                          {"group": "y", "rate": 0.39, "n": 60,
                           "interval": {"low": 0.3, "high": 0.48}},
                          {"group": "z", "rate": 0.41, "n": 70}]}
    s = adapt("audit", audit, "a.json")
    assert [g["group"] for g in s.figures[0].data["groups"]] == ["x", "y", "z"]
    assert s.figures[0].data["groups"][2]["low"] is None  # no interval given: none drawn
    seq = {"kind": "sequential", "outcome": "compliant", "queries": 3, "tolerance": 0.1,
           "anytime_valid": True, "path": {"query": [1, 2, 3], "statistic": [0, -1, -2]},
           "confidence_sequence": {"query": [1, 2, 3], "low": [-1, -0.5, -0.05],
                                   "high": [1, 0.5, 0.05], "estimate": [0, 0, 0]}}
    s = adapt("sequential", seq, "s.json")
    assert [f.plot for f in s.figures] == ["sequential_path", "confidence_sequence"]
    assert s.verdict == "fair" and "Ville" in " ".join(s.assumptions)
    rad = {"kind": "radius", "radius": 0.1, "phi": 0.2, "tolerance": 0.05, "assessment": "unfair",
           "curve": [{"kl": 0.0, "phi": 0.2}, {"kl": 0.05, "phi": 0.1}, {"kl": 0.1, "phi": 0.05}]}
    s = adapt("radius", rad, "r.json")
    assert s.figures[0].plot == "radius_curve" and not s.notes
    assert s.figures[0].data["divergence_values"] == [0.0, 0.05, 0.1]
    collab = {"config": {"case": "c", "attackers": 1, "honest": 2, "tau": 0.05, "z_max": 8},
              "true_dp": -0.2, "runs": [{"method": "auditopus", "estimate": -0.19}],
              "nodes": [{"id": "0", "estimate": -0.2, "weight": 1.0},
                        {"id": "1", "estimate": -0.21, "weight": 0.9},
                        {"id": "2", "estimate": 0.0, "weight": 0.1, "attacker": True}],
              "suspicion": {"0": [0, 0.1], "1": [0, 0.2], "2": [3.0, 8.0]}}
    s = adapt("collab-simulate", collab, "c.json")
    assert [f.plot for f in s.figures] == ["collab_methods", "collab_nodes", "collab_suspicion"]
    assert s.figures[2].data["attackers"] == ["2"]
    rep = build_report([("a.json", audit)], now=NOW)
    prov = dict(rep.provenance[0].items)
    assert prov["model"] == "local:m.skops#ab12" and prov["queries.paid"] == "10"


def test_tolerant_to_missing_fields() -> None:
    for kind in ("audit", "sequential", "radius", "twosource", "twosource-plan",
                 "collab-simulate", "collab-sweep", "collab-nodes", "platform-info"):
        s = adapt(kind, {"schema": "fairprobe/1", "kind": kind}, "empty.json")
        assert s.sentence and s.title
    html = render_html(build_report([("e.json", {"schema": "fairprobe/1", "kind": "sequential"})],
                                    now=NOW))
    assert "no statistic path" in html


def test_bad_inputs_are_one_line_errors(tmp_path: Path) -> None:
    (tmp_path / "list.json").write_text("[1, 2]")
    (tmp_path / "odd.json").write_text('{"hello": 1}')
    (tmp_path / "broken.json").write_text("{")
    with pytest.raises(DataError, match="expected a JSON object"):
        load_results([tmp_path / "list.json"])
    with pytest.raises(DataError, match="not valid JSON"):
        load_results([tmp_path / "broken.json"])
    with pytest.raises(DataError, match="Cannot tell which fairprobe command wrote odd.json"):
        build_report(load_results([tmp_path / "odd.json"]))
    with pytest.raises(DataError, match="at least one"):
        load_results([])


class _Html(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.ids: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        self.tags.append((tag, a))
        if a.get("id"):
            self.ids.append(str(a["id"]))


def test_html_is_self_contained_and_accessible() -> None:
    paths = [DATA / n for n in ("legacy-demo.json", "legacy-collab-simulate.json",
                                "legacy-collab-sweep.json")]
    rep = build_report(load_results(paths), now=NOW)
    html = render_html(rep)
    p = _Html()
    p.feed(html)
    tags = [t for t, _ in p.tags]
    # nothing fetched at view time: no scripts, stylesheets, images or fonts from anywhere
    for tag, a in p.tags:
        assert tag not in ("script", "link", "img", "iframe", "object"), tag
        for attr in ("src", "href"):
            v = a.get(attr) or ""
            assert not v or v.startswith("#"), f"{tag} {attr}={v}"
    assert "@import" not in html and "url(http" not in html
    assert len(p.ids) == len(set(p.ids)), "duplicate element ids across figures"
    # structure: one h1, an h2 per section, captions on every table, lang set
    assert tags.count("h1") == 1
    assert ("html", {"lang": "en"}) in p.tags
    assert tags.count("table") == tags.count("caption")
    n_fig = sum(len(s.figures) for s in rep.sections)
    svgs = [a for t, a in p.tags if t == "svg"]
    assert len(svgs) == n_fig == tags.count("figure") == tags.count("figcaption")
    for a in svgs:
        assert a.get("role") == "img"
        title_id, desc_id = str(a["aria-labelledby"]).split()
        assert title_id in p.ids and desc_id in p.ids
    # the verdict comes first: before any section heading
    assert html.index('id="verdict"') < html.index("<h2")
    # deterministic for the same inputs and time
    assert render_html(build_report(load_results(paths), now=NOW)) == html


def test_markdown_with_figure_files(tmp_path: Path) -> None:
    rep = build_report(load_results([DATA / "legacy-demo.json"]), now=NOW)
    out = write_markdown(rep, tmp_path / "audit.md")
    text = out.read_text()
    assert text.startswith("# Fairness audit report\n\n**Verdict: undetermined.**")
    links = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text)
    assert len(links) == sum(len(s.figures) for s in rep.sections) == 7
    for rel in links:
        svg = (tmp_path / rel).read_text()
        assert svg.startswith("<svg") and 'xmlns="http://www.w3.org/2000/svg"' in svg
    # data is escaped for Markdown: the interval's brackets are written \[ \]
    assert ("\n| disparate impact (ratio of positive rates) | 0.252 \\[0.201, 0.313\\] (95%, "
            "score): unfair |\n") in text


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fairprobe", *args], capture_output=True,
                          text=True, timeout=180)


def test_cli_report(tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    r = _cli("report", str(DATA / "legacy-demo.json"), str(DATA / "legacy-collab-sweep.json"),
             "--html", str(out), "--title", "Audit of demo-platform")
    assert r.returncode == 0, r.stderr
    assert "verdict undetermined" in r.stderr  # legacy files: no finding, nothing counted
    html = out.read_text()
    assert "<title>Audit of demo-platform</title>" in html and html.count("<svg") == 8
    # no output flag: the HTML report beside the input, named after it, and the closing line
    shutil.copy(DATA / "legacy-demo.json", tmp_path / "demo.json")
    r = _cli("report", str(tmp_path / "demo.json"))
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "demo.html").read_text().startswith("<!DOCTYPE html>")
    assert r.stdout.splitlines()[-1].startswith("verdict: undetermined (")
    (tmp_path / "demo.html").unlink()
    (tmp_path / "demo.html").mkdir()  # only over a regular file or nothing
    r = _cli("report", str(tmp_path / "demo.json"))
    assert r.returncode == 2 and r.stderr.startswith("error: ") and "--html" in r.stderr
    r = _cli("report", str(tmp_path / "missing.json"), "--html", str(out))
    assert r.returncode == 2 and r.stderr.startswith("error: File not found")
    r = _cli("report", str(DATA / "legacy-demo.json"), "--md", str(tmp_path))
    assert r.returncode == 2 and "is a directory; give a file path" in r.stderr


def _fixtures() -> list[Path]:
    """Every representative result: the commands' own (tests/data/results, committed by each
    command's owner) and the copies kept here until those are merged."""
    shared = Path(__file__).parents[1] / "data" / "results"
    mine = DATA / "results"
    found = {p.name: p for p in sorted(mine.glob("*.json"))}
    found.update({p.name: p for p in sorted(shared.glob("*.json"))} if shared.is_dir() else {})
    return sorted(found.values())


@pytest.mark.parametrize("path", _fixtures(), ids=lambda p: p.name)
def test_every_command_fixture_renders(path: Path) -> None:
    doc = json.loads(path.read_text())
    kind = infer_kind(doc)
    assert kind is not None and kind == doc.get("kind", kind)
    assert path.name.split(".")[0].split("-")[0] in kind  # <kind>[-variant].json
    rep = build_report(load_results([path]), now=NOW)
    assert rep.sections and all(s.sentence for s in rep.sections)
    if "schema" in doc:
        assert doc["schema"] == "fairprobe/1"
        prov = dict(rep.provenance[0].items)
        assert "fairprobe version" in prov and "time (UTC)" in prov  # the contract's
    html = render_html(rep)
    assert html.count("<svg") == sum(len(s.figures) for s in rep.sections)


def test_multigroup_audit() -> None:
    rep = build_report(load_results([DATA / "results" / "audit-groups.json"]), now=NOW)
    (s,) = rep.sections
    assert s.verdict == "unfair"
    # several metrics: one chart of every per-group rate, one of every metric (no repeats)
    rates, metrics = s.figures
    assert rates.plot == "rates" and metrics.plot == "estimates"
    sel, tpr = rates.data["panels"]
    assert [g["group"] for g in sel["groups"]] == [
        "Amer-Indian-Eskimo", "Asian-Pac-Islander", "Black", "Other", "White"]
    assert tpr["rate"] == "true positive rate"
    assert [r["label"] for r in metrics.data["rows"]] == ["demographic parity difference",
                                                          "equal opportunity difference"]
    assert s.sentence.startswith("The largest demographic parity difference of "
                                 "Asian-Pac-Islander vs Amer-Indian-Eskimo is 0.413")
    assert any("Not compared in some metrics" in n and "Other" in n for n in s.notes)
    # the group x metric grid: every group a row, each comparison with the rest and its verdict
    assert s.grid is not None and [r[0] for r in s.grid.rows] == [
        "Amer-Indian-Eskimo", "Asian-Pac-Islander", "Black", "Other", "White"]
    assert s.grid.header[1:] == ["demographic parity difference", "equal opportunity difference"]
    assert "vs rest" in s.grid.rows[2][1] and s.grid.classes is not None
    assert "not compared" in s.grid.rows[3][1]


def test_sequential_mixture_and_repeats() -> None:
    live = json.loads((DATA / "results" / "sequential-live.json").read_text())
    s = adapt("sequential", live, "live.json")
    path, cs = s.figures
    assert path.plot == "sequential_path" and cs.plot == "confidence_sequence"
    upper, lower = path.data["series"]
    assert len(upper["x"]) == 108 and len(lower["x"]) == 54  # per pair: the pairs' queries
    assert lower["x"][:2] == [2.0, 4.0]
    assert cs.data["query"][-1] == 108 and cs.data["high"][-1] < -0.05
    assert "Ville" in " ".join(s.assumptions) and s.verdict == "unfair"
    rep = json.loads((DATA / "results" / "sequential.json").read_text())
    s = adapt("sequential", rep, "rep.json")
    assert [f.plot for f in s.figures] == ["sequential_path", "confidence_sequence",
                                          "sequential_repeats"]
    assert s.sentence.startswith("Over 100 random query orders")
    assert "violation 99%, compliant 1%" in s.sentence and s.verdict == "unfair"


def test_collab_simulate_sources() -> None:
    """The simulator's columnar 'sources' block: per-source estimate, weight, role, scores."""
    doc = json.loads((DATA / "results" / "collab-simulate.json").read_text())
    s = adapt("collab-simulate", doc, "c.json")
    assert [f.plot for f in s.figures] == ["collab_methods", "collab_nodes", "collab_suspicion"]
    nodes = s.figures[1].data["nodes"]
    assert len(nodes) == 23 and sum(n["attacker"] for n in nodes) == 3
    attackers = set(s.figures[2].data["attackers"])
    assert attackers == {n["id"] for n in nodes if n["attacker"]}
    assert max(n["weight"] for n in nodes if n["attacker"]) < min(
        n["weight"] for n in nodes if not n["attacker"])  # what the figure shows
    assert "robust estimates" in s.sentence and s.verdict == "unfair"


def test_radius_curve_twosource_checks_and_plan() -> None:
    rad = adapt("radius", json.loads((DATA / "results" / "radius.json").read_text()), "r.json")
    (fig,) = rad.figures
    assert fig.plot == "radius_curve" and not rad.notes
    xs, ys = fig.data["divergence_values"], fig.data["metric_values"]
    assert len(xs) == len(ys) > 10 and min(xs) == 0.0
    assert ys[xs.index(0.0)] == pytest.approx(fig.data["phi"])  # no shift: the audit's phi
    ts = adapt("twosource", json.loads((DATA / "results" / "twosource.json").read_text()),
               "t.json")
    checks = ts.figures[0].data["checks"]
    assert checks == {"checks": [25.0], "inconsistent": [8.0], "n_max": [83.0]}
    plan = adapt("twosource-plan",
                 json.loads((DATA / "results" / "twosource-plan.json").read_text()), "p.json")
    (fig,) = plan.figures
    assert len(fig.data["x"]) == 332 and plan.verdict is None


def test_llm_audit_extras_are_reported() -> None:
    """Shapes of the LLM audit's extras (llm branch): outcomes per group, name swap, prompts."""
    legacy = _load("legacy-demo.json")["audit"]["disparate_impact"]
    doc = dict(legacy, schema="fairprobe/1", kind="audit",
               outcomes_by_group={"Female": {"ok": 640, "unparsed": 3, "refused": 7,
                                             "truncated": 0},
                                  "Male": {"ok": 1350, "unparsed": 0, "refused": 0,
                                           "truncated": 0}},
               name_swap={"field": "first_name", "n_usable": 400, "n_flips": 36,
                          "flip_rate": 0.09, "interval": {"low": 0.066, "high": 0.122,
                                                          "level": 0.95, "method": "wilson"}},
               prompt_variation={"variants": [
                   {"name": "plain", "estimate": 0.25, "verdict": "unfair",
                    "interval": {"low": 0.2, "high": 0.31}, "unparsed": 0},
                   {"name": "polite", "estimate": 0.7, "verdict": "undetermined",
                    "interval": {"low": 0.55, "high": 0.9}, "unparsed": 4}],
                   "spread": 0.45, "verdicts_agree": False})
    s = adapt("audit", doc, "llm.json")
    assert [f.plot for f in s.figures] == ["audit", "estimates"]
    assert "flips 0.090 [0.066, 0.122] of the decisions" in s.sentence
    assert "verdicts DISAGREE" in s.sentence
    assert any("depends on the prompt's wording" in n for n in s.notes)
    captions = [t.caption for t in s.tables]
    assert any(c.startswith("Answer outcomes per group") for c in captions)
    html = render_html(build_report([("llm.json", doc)], now=NOW))
    assert html.count("<svg") == 2 and "<td>refused</td>" not in html


def test_collab_nodes_network_run() -> None:
    doc = json.loads((DATA / "results" / "collab-nodes.json").read_text())
    s = adapt("collab-nodes", doc, "n.json")
    assert [f.plot for f in s.figures] == ["collab_nodes", "collab_trajectory"]
    nodes = s.figures[0].data["nodes"]
    assert [n["attacker"] for n in nodes].count(True) == 1
    attacker = next(n for n in nodes if n["attacker"])
    honest_w = [n["weight"] for n in nodes if not n["attacker"]]
    assert attacker["weight"] < min(honest_w)  # mean weight the honest nodes give it
    assert s.sentence.startswith("6 auditor nodes (1 attacker) ran the protocol over HTTP")
    assert "not certified" in s.sentence and s.verdict == "unfair"


def test_contract_provenance_rows_and_table() -> None:
    rep = build_report(load_results([DATA / "results" / "audit-groups.json",
                                     DATA / "legacy-demo.json"]), now=NOW)
    prov = rep.provenance[0]
    items = dict(prov.items)
    assert items["model"].startswith("http-json:POST http://127.0.0.1:18765/audit/predict#")
    assert items["time (UTC)"] == "2026-11-30T12:05:40Z"
    assert items["command"].startswith("fairprobe audit --url http://127.0.0.1:18765")
    assert items["queries"].startswith("2,000 asked: 1,579 paid, 421 from the cache")
    (table,) = prov.tables
    assert table.header[:3] == ["group", "asked", "paid"]
    assert ["White", "1,719", "1,317", "402", "1,719", "0", "0", "0"] in table.rows
    assert "These results concern 2 different models" in rep.headline
    html = render_html(rep)
    assert "<caption>Answers per group: asked, paid, from the cache" in html


def test_multigroup_radius_and_sequential() -> None:
    rad = adapt("radius", _load("results/radius-multigroup.json"), "r.json")
    assert [f.plot for f in rad.figures] == ["radius_pairs"]
    rows = rad.figures[0].data["rows"]
    assert [r["label"] for r in rows] == ["a vs b", "a vs c", "b vs c"]
    assert rad.figures[0].data["radius"] == pytest.approx(max(r["radius"] for r in rows))
    seq = adapt("sequential", _load("results/sequential-groups.json"), "s.json")
    assert [f.plot for f in seq.figures] == ["sequential_path", "confidence_sequence",
                                            "sequential_repeats"]
    names = [s["name"] for s in seq.figures[0].data["series"]]
    assert "log_e_violation" in names
    facts = dict(seq.facts)
    assert facts["deciding pair (audits)"].startswith("A|C (95)")
    assert facts["pool"].startswith("sizes A 1,500, B 1,500, C 1,000;")
