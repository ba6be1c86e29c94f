"""The HTML report in a real browser: headless Chromium loads it from disk (no server, no network).

Checked: no console error, warning or uncaught exception; no request but the file itself; every
figure present, rendered with a real size, visible and inside the page width; figures named for
screen readers; the skip link is the first Tab stop; a screenshot is saved (to
``$FAIRPROBE_SCREENSHOT_DIR`` if set, else the test's temporary directory).

Skipped only when no Chromium binary exists (install it with ``apt-get install -y chromium``;
``.ci/run`` does so on CI).
"""

from __future__ import annotations

import datetime as dt
import os
import struct
from pathlib import Path

import pytest

from fairprobe.report.build import build_report, load_results
from fairprobe.report.render import write_html

from .chromium import Chromium, find_chromium

DATA = Path(__file__).parent / "data"
BINARY = find_chromium()
pytestmark = pytest.mark.skipif(
    BINARY is None,
    reason="no Chromium binary on PATH (apt-get install -y chromium; .ci/run installs it)",
)

_FIGURES_JS = """
(() => Array.from(document.querySelectorAll('figure')).map(f => {
  const svg = f.querySelector('svg');
  if (!svg) return {svg: false};
  const r = svg.getBoundingClientRect();
  const st = getComputedStyle(svg);
  const ids = (svg.getAttribute('aria-labelledby') || '').split(' ');
  const named = ids.map(i => document.getElementById(i)).filter(e => e && e.textContent.trim());
  return {svg: true, width: r.width, height: r.height, left: r.left, right: r.right,
          display: st.display, visibility: st.visibility, opacity: parseFloat(st.opacity),
          marks: svg.querySelectorAll('path, use, rect, line, polyline').length,
          texts: svg.querySelectorAll('text').length, named: named.length,
          caption: (f.querySelector('figcaption') || {}).textContent || ''};
}))()
"""


def _png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", head[16:24])


def test_report_in_headless_chromium(tmp_path: Path) -> None:
    paths = [DATA / n for n in ("demo.json", "results/collab-nodes.json",
                                "results/collab-simulate.json")]
    rep = build_report(load_results(paths), title="Audit of the demo platform",
                       now=dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.UTC))
    page = write_html(rep, tmp_path / "report.html")
    n_figures = sum(len(s.figures) for s in rep.sections)
    assert n_figures >= 12
    shots = Path(os.environ.get("FAIRPROBE_SCREENSHOT_DIR") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    assert BINARY is not None
    with Chromium(BINARY, width=1100, height=1500) as browser:
        browser.open(page.as_uri())
        assert browser.evaluate("document.readyState") == "complete"
        assert browser.evaluate("document.title") == "Audit of the demo platform"
        figures = browser.evaluate(_FIGURES_JS)
        assert len(figures) == n_figures
        page_width = browser.evaluate("document.documentElement.clientWidth")
        for i, f in enumerate(figures):
            assert f["svg"], f"figure {i} has no SVG"
            assert f["width"] > 300 and f["height"] > 100, (i, f)
            assert f["display"] != "none" and f["visibility"] == "visible" and f["opacity"] > 0
            assert 0 <= f["left"] and f["right"] <= page_width, (i, f)
            assert f["marks"] > 10 and f["texts"] > 3, (i, f)  # really drawn, labelled axes
            assert f["named"] == 2 and f["caption"].startswith("Figure ")
        # verdict is the first thing read after the title
        first = browser.evaluate("document.querySelector('header p.headline').textContent")
        # the bundled demo result is legacy: no finding, nothing counted
        assert first.startswith("Verdict: undetermined No verdict on the audited model")
        top = browser.screenshot(shots / "report-top.png", full_page=False)
        # keyboard: the first Tab stop is the skip link, and it becomes visible on focus
        for kind in ("keyDown", "keyUp"):
            browser.call("Input.dispatchKeyEvent", {"type": kind, "key": "Tab", "code": "Tab",
                                                    "windowsVirtualKeyCode": 9})
        focused = browser.evaluate(
            "(() => { const e = document.activeElement; const r = e.getBoundingClientRect();"
            " return {cls: e.className, href: e.getAttribute('href'), left: r.left}; })()")
        assert focused["cls"] == "skip" and focused["href"] == "#main" and focused["left"] >= 0
        full = browser.screenshot(shots / "report-full.png", full_page=True)
        assert browser.problems() == []
        assert browser.requests() == [page.as_uri()]  # nothing else fetched
    w, h = _png_size(top)
    assert (w, h) == (1100, 1500)
    w, h = _png_size(full)
    assert w == 1100 and h > 5000


def _audit_doc(verdict_low: float, verdict_high: float) -> dict:
    """A two-group EO audit result carrying its finding (the verdict engine's shape)."""
    from fairprobe.stats.finding import Finding, Question

    f = Finding(Question("equal_opportunity_difference", "difference", 0.05, ("Black", "White"),
                         rates=("true_positive_rate",)),
                -0.0275, verdict_low, verdict_high, 0.95, "exact-difference")
    return {"schema": "fairprobe/1", "kind": "audit", "provenance": {},
            "metric": {"metric": "equal_opportunity_difference", "kind": "difference",
                       "estimate": -0.0275, "threshold": 0.05, "verdict": f.verdict,
                       "interval": {"low": verdict_low, "high": verdict_high, "level": 0.95,
                                    "method": "exact-difference"}},
            "verdict": f.verdict, "finding": f.to_dict()}


@pytest.mark.parametrize(
    ("docs", "starts", "absent"),
    [
        # one fair and one undetermined finding never make a "fair" headline
        ([_audit_doc(-0.0495, -0.0119), _audit_doc(-0.058, 0.003)],
         "Verdict: undetermined No verdict on the audited model", "judged fair"),
        # a simulation (collaborative demo on bundled data) is shown but not counted
        ([_audit_doc(-0.0495, -0.0119), "results/collab-nodes.json"],
         "Verdict: fair The audited model is judged fair: every one of 1 question", "2 questions"),
    ],
)
def test_headline_in_headless_chromium(tmp_path: Path, docs, starts, absent) -> None:
    import json

    paths = []
    for i, d in enumerate(docs):
        if isinstance(d, str):
            paths.append(DATA / d)
        else:
            p = tmp_path / f"r{i}.json"
            p.write_text(json.dumps(d))
            paths.append(p)
    rep = build_report(load_results(paths), now=dt.datetime(2026, 12, 1, tzinfo=dt.UTC))
    page = write_html(rep, tmp_path / "h.html")
    assert BINARY is not None
    with Chromium(BINARY, width=1000, height=800) as browser:
        browser.open(page.as_uri())
        text = browser.evaluate("document.querySelector('header p.headline').textContent")
        assert browser.problems() == []
    text = " ".join(text.split())
    assert text.startswith(starts), text
    assert absent not in text


_SVGS_JS = """
(() => Array.from(document.querySelectorAll('figure svg')).map(s => s.innerHTML
  .replace(/id="[^"]*"/g, '').replace(/url\\(#[^)]*\\)/g, '').replace(/href="#[^"]*"/g, '')
  .replace(/aria-labelledby="[^"]*"/g, '')))()
"""


def test_six_metrics_grid_short_page_no_repeated_chart(tmp_path: Path) -> None:
    """Two every-group audits with six metrics each: the group x metric grid comes first, the
    page stays under 6,000 px, and no chart is drawn twice."""
    paths = [DATA / "results" / "audit-six-race.json", DATA / "results" / "audit-six-sex.json"]
    rep = build_report(load_results(paths), now=dt.datetime(2026, 12, 1, tzinfo=dt.UTC))
    page = write_html(rep, tmp_path / "six.html")
    assert BINARY is not None
    with Chromium(BINARY, width=1100, height=900) as browser:
        browser.open(page.as_uri())
        height = browser.evaluate("document.documentElement.scrollHeight")
        grids = browser.evaluate(
            "Array.from(document.querySelectorAll('table.grid')).map(t => ({"
            "rows: t.querySelectorAll('tbody tr').length,"
            "cols: t.querySelectorAll('thead th').length,"
            "coloured: t.querySelectorAll('td.v-unfair, td.v-fair, td.v-undetermined').length,"
            "top: t.getBoundingClientRect().top}))")
        first_section = browser.evaluate(
            "document.querySelector('main section:not([aria-labelledby=overview])')"
            ".getBoundingClientRect().top")
        svgs = browser.evaluate(_SVGS_JS)
        titles = browser.evaluate(
            "Array.from(document.querySelectorAll('main section h2')).map(h => h.textContent)")
        assert browser.problems() == []
    assert height < 6000, height
    assert len(grids) == 2
    race, sex = grids
    assert race["rows"] == 5 and sex["rows"] == 2  # every group a row
    assert race["cols"] == sex["cols"] == 7  # the group column and six metrics
    assert race["coloured"] > 10 and sex["coloured"] >= 6  # each comparison coloured
    assert race["top"] < first_section  # the grid comes before the sections
    assert len(svgs) == len(set(svgs)) >= 4, "a chart is repeated"
    assert all(len(t) < 80 for t in titles), titles  # short titles
