"""Hostile strings through every result kind into every renderer.

Every committed result (one per kind and shape, written by real commands) gets its strings (group
names, labels, notes, provenance, object keys) replaced by strings hypothesis draws from
known payloads (HTML, Markdown, mathtext, Jinja, terminal escapes, bidi overrides) mixed with
arbitrary text. The report is rendered as HTML and as Markdown (converted with Python-Markdown,
as a reader's tool would), and the terminal form of every string is checked:

* HTML and Markdown->HTML: no script element, no event-handler attribute, no ``javascript:``
  URL, parsed by the standard library; then all pages are loaded in headless Chromium, where no
  payload may run (``window.__pwned`` stays undefined, no console message);
* Markdown escaping is exact: a table cell converts back to the very string;
* SVG: every figure renders (no mathtext from data);
* terminal: :func:`fairprobe._text.term` leaves no control or bidi character and rich prints
  it literally (no markup from data).
"""

from __future__ import annotations

import copy
import io
import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fairprobe._text import term, visible
from fairprobe.report.build import build_report
from fairprobe.report.render import _md_cell, render_html, render_markdown

from .chromium import Chromium, find_chromium

markdown = pytest.importorskip("markdown")

HERE = Path(__file__).parent
FIXTURES = sorted((HERE.parent / "data" / "results").glob("*.json")) + [HERE / "data" / "demo.json"]
#: Examples per fixture (each renders a whole report with its figures, twice).
EXAMPLES = 4
PAYLOADS = [
    "<script>window.__pwned=1</script>",
    "<img src=x onerror=\"window.__pwned=1\">",
    "<svg onload=\"window.__pwned=1\"></svg>",
    "\"><script>window.__pwned=1</script>",
    "</title></desc></text><script>window.__pwned=1</script>",
    "<a href=\"javascript:window.__pwned=1\">x</a>",
    "[x](javascript:window.__pwned=1)",
    "![x](javascript:window.__pwned=1)",
    "<javascript:window.__pwned=1>",
    "`<script>window.__pwned=1</script>`",
    "<!-- --><script>window.__pwned=1</script>",
    "$\\frac{a}{$", "$50K-$75K", "$x$", "\\$", "a|b\\|c", "*_~`#", "- x", "1. y", "> q",
    "{{ 7*7 }}{% raw %}", "[red]r[/red]", "\u202eevil\u202c", "\u2066\u2067x\u2069",
    "\x1b[2J\x1b[31mred", "\x07\x08\r\x00", "line\nbreak", "&lt;script&gt;", "&amp;",
]
HOSTILE = st.one_of(
    st.sampled_from(PAYLOADS),
    st.builds(lambda a, b, c: a + b + c, st.text(max_size=8), st.sampled_from(PAYLOADS),
              st.text(max_size=8)),
    st.text(alphabet=st.characters(codec="utf-8"), max_size=24),
)
_KEEP = {"schema", "kind"}
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
PAGES: list[Path] = []


def _substitute(doc: Any, pool: list[str], i: list[int]) -> Any:
    """``doc`` with every string and object key (but ``schema``/``kind``) replaced, cyclically,
    by the strings of ``pool``."""
    def nxt() -> str:
        i[0] += 1
        return pool[i[0] % len(pool)]

    if isinstance(doc, dict):
        out = {}
        for k, v in doc.items():
            if k in _KEEP:
                out[k] = v
                continue
            # keys of mappings of names (groups, nodes) are data; field names stay
            key = nxt() if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_ -]*", k) or k[:1].isupper() \
                else k
            out[key if key not in out else k] = _substitute(v, pool, i)
        return out
    if isinstance(doc, list):
        return [_substitute(v, pool, i) for v in doc]
    if isinstance(doc, str):
        return nxt()
    return doc


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.scripts = 0
        self.handlers: list[str] = []
        self.js_urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "script":
            self.scripts += 1
        for name, value in attrs:
            if name.startswith("on"):
                self.handlers.append(f"{tag} {name}")
            if name in ("href", "src", "xlink:href", "action") and value and \
                    value.strip().lower().startswith(("javascript:", "data:text/html")):
                self.js_urls.append(value)


def _inert(html: str, where: str) -> None:
    page = _Page()
    page.feed(html)
    assert page.scripts == 0, where
    assert page.handlers == [], (where, page.handlers)
    assert page.js_urls == [], (where, page.js_urls)


def _case_id(p: Path) -> str:
    return p.stem


@pytest.mark.parametrize("fixture", FIXTURES, ids=_case_id)
def test_hostile_strings_through_every_renderer(fixture: Path, tmp_path_factory) -> None:
    base = json.loads(fixture.read_text())
    out = tmp_path_factory.mktemp(fixture.stem)
    seen = [0]

    @settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(pool=st.lists(HOSTILE, min_size=1, max_size=12), title=HOSTILE)
    def run(pool: list[str], title: str) -> None:
        doc = _substitute(copy.deepcopy(base), pool, [0])
        rep = build_report([(pool[0][:40] or "r.json", doc)], title=title)
        html = render_html(rep)
        _inert(html, f"{fixture.name} html")
        text, figures = render_markdown(rep, "figs")
        md_html = markdown.markdown(text, extensions=["tables"])
        _inert(md_html, f"{fixture.name} md")
        for svg in figures.values():
            _inert(svg, f"{fixture.name} svg")
        for s in pool + [title]:  # Markdown escaping is exact (one table cell, converted)
            cell = markdown.markdown(f"| a |\n|---|\n| {_md_cell(s)} |", extensions=["tables"])
            got = re.search(r"<td>(.*?)</td>", cell, flags=re.S)
            want = re.sub(r"[\x00-\x1f\x7f]", " ", s).strip()
            shown = _unescape(got.group(1)).strip() if got else ""
            assert re.sub(r"\s+", " ", shown) == re.sub(r"\s+", " ", want), (s, cell)
            _terminal(s)
        n = seen[0] = seen[0] + 1
        if n <= 2:  # two pages per fixture for the browser
            (out / f"{n}.html").write_text(html)
            (out / f"{n}-md.html").write_text(f"<!doctype html><title>md</title>{md_html}")
            for rel, svg in figures.items():  # the figures the Markdown links to
                (out / rel).parent.mkdir(exist_ok=True)
                (out / rel).write_text(svg)
            PAGES.extend([out / f"{n}.html", out / f"{n}-md.html"])

    run()


def _unescape(html: str) -> str:
    import html as h

    return h.unescape(html)


def _terminal(s: str) -> None:
    from rich.console import Console

    shown = term(s)
    assert not _UNSAFE.search(shown), repr(s)
    buf = io.StringIO()
    Console(file=buf, width=10_000, color_system=None, soft_wrap=True, emoji=False,
            highlight=False).print(shown, end="")
    assert buf.getvalue() == visible(s), s


@pytest.mark.skipif(find_chromium() is None, reason="no Chromium binary (apt-get install -y "
                                                     "chromium)")
def test_no_payload_runs_in_chromium() -> None:
    """Runs after the property test (same module): every saved page in one Chromium."""
    if not PAGES:
        pytest.skip("run with test_hostile_strings_through_every_renderer")
    binary = find_chromium()
    assert binary is not None
    with Chromium(binary) as browser:
        for page in PAGES:
            browser.open(page.as_uri())
            assert browser.evaluate("document.readyState") == "complete", page
            assert browser.evaluate("typeof window.__pwned") == "undefined", page
            assert browser.evaluate("document.querySelectorAll('script').length") == 0, page
        assert browser.problems() == [], browser.problems()
