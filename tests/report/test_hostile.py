"""Reports of real audits whose data is hostile, and hostile or odd
result files. Real processes (``python -m fairprobe``), real files, headless Chromium.

* 1: the Markdown report escapes every value (group names, ``--title``); converted with
  Python-Markdown and opened in Chromium, no script runs (``document.title`` stays).
* 2: ``$`` in a group name is text in the figures, never mathtext (no crash, no italics).
* 3: every malformed result file is one ``error:`` line naming the file, exit 2; foreign
  schemas and kinds are refused; non-numbers are warned about; 2,000 groups and a 5 MB label
  render (figures capped, the table keeps every group).
* 6: bidi overrides and control characters never reach the terminal raw; matplotlib's warnings
  never reach stderr.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .chromium import Chromium, find_chromium
from .hostile import audit_args, cli, many_groups, replay_audit_files, write

markdown = pytest.importorskip("markdown")

BINARY = find_chromium()
TITLE_PAYLOAD = "<script>document.title='pwned'</script><img src=x onerror=\"document.title='pwned'\">"
GROUPS = [
    "<script>document.title='pwned'</script>",
    "<img src=x onerror=\"document.title='pwned'\">",
    "[x](javascript:document.title='pwned')",
    "$\\frac{a}{$",
    "$50K-$75K",
    "\u202eevil\u202c \x1b[31mred\x1b[0m",
]
UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


@pytest.fixture(scope="module")
def audited(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """A real every-group audit (replay backend) of a pool with hostile group names."""
    d = tmp_path_factory.mktemp("hostile-audit")
    table, cfg = replay_audit_files(d, GROUPS)
    out = d / "r.json"
    r = cli(*audit_args(table, cfg, out, d / "c.sqlite"))
    assert r.returncode == 0, r.stderr
    return out, r


def _no_script_ran(path: Path, title: str) -> None:
    """Chromium loads the page: the title is what the page says (a payload sets it to
    'pwned'), no script element, no event handler, no javascript: URL, no console message."""
    assert BINARY is not None
    with Chromium(BINARY) as browser:
        browser.open(path.as_uri())
        assert browser.evaluate("document.readyState") == "complete"
        assert browser.evaluate("document.title") == title
        assert browser.evaluate("document.querySelectorAll('script').length") == 0
        handlers = browser.evaluate(
            "Array.from(document.querySelectorAll('*')).flatMap(e => Array.from(e.attributes)"
            ".filter(a => a.name.startsWith('on')).map(a => e.tagName + ' ' + a.name))")
        assert handlers == []
        links = browser.evaluate(
            "Array.from(document.querySelectorAll('[href],[src]')).map(e => "
            "e.getAttribute('href') || e.getAttribute('src'))")
        assert not [u for u in links if u.strip().lower().startswith("javascript:")], links
        assert browser.problems() == [], browser.problems()


# -- finding 1: Markdown scripts -------------------------------------------------------------
def test_markdown_report_of_hostile_groups_runs_no_script(audited, tmp_path: Path) -> None:
    result, _ = audited
    md = tmp_path / "report.md"
    r = cli("report", str(result), "--md", str(md), "--title", TITLE_PAYLOAD)
    assert r.returncode == 0, r.stderr
    text = md.read_text()
    assert "<script" not in text and "<img" not in text
    assert not re.search(r"(?<!\\)\]\(javascript", text)  # an unescaped ']' would make a link
    body = markdown.markdown(text, extensions=["tables"])
    html = tmp_path / "report-md.html"
    html.write_text(f"<!doctype html><html><head><title>md</title></head><body>{body}</body>"
                    "</html>")
    # the escaping is exact: the converted page shows the names as they are
    for g in GROUPS[:3]:
        assert g.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace(
            '"', "&quot;") in body
    if BINARY is None:
        pytest.skip("no Chromium binary (apt-get install -y chromium)")
    _no_script_ran(html, "md")


def test_html_report_of_hostile_groups_runs_no_script(audited, tmp_path: Path) -> None:
    result, _ = audited
    out = tmp_path / "report.html"
    r = cli("report", str(result), "--html", str(out), "--title", TITLE_PAYLOAD)
    assert r.returncode == 0, r.stderr
    if BINARY is None:
        pytest.skip("no Chromium binary (apt-get install -y chromium)")
    _no_script_ran(out, TITLE_PAYLOAD)


# -- finding 2: '$' is text, not mathtext ----------------------------------------------------
def test_dollar_signs_in_group_names_are_drawn_as_text(audited, tmp_path: Path) -> None:
    result, _ = audited
    out = tmp_path / "r.html"
    r = cli("report", str(result), "--html", str(out))
    assert r.returncode == 0, r.stderr  # mathtext must not parse a label
    svg_texts = re.findall(r"<text[^>]*>([^<]*)</text>", out.read_text())
    assert "$50K-$75K" in svg_texts  # not "50K-75K" in italics
    assert "$\\frac{a}{$" in svg_texts
    assert not any("font-style: italic" in t for t in re.findall(r"<text[^>]*>", out.read_text()))


# -- finding 6: the terminal and stderr ------------------------------------------------------
def test_terminal_output_shows_control_and_bidi_characters_escaped(audited) -> None:
    _, r = audited
    for stream in (r.stdout, r.stderr):
        assert not UNSAFE.search(stream), repr(UNSAFE.search(stream))
    assert "\\u202eevil\\u202c \\x1b[31mred\\x1b[0m" in r.stdout.replace("\n", "")
    assert "<script>document.title='pwned'</script>" in r.stdout  # rich markup not eaten


def test_error_lines_escape_control_and_bidi_characters(tmp_path: Path) -> None:
    table, cfg = replay_audit_files(tmp_path, ["a", "b"])
    r = cli("audit", "--backend-config", str(cfg), "--queries", str(table), "--group-col", "grp",
            "--group-a", "\u202eevil\x1b[2J", "--no-progress", "--cache", str(tmp_path / "c"))
    assert r.returncode == 2
    assert not UNSAFE.search(r.stderr) and "\\u202eevil\\x1b[2J" in r.stderr


def test_matplotlib_warnings_do_not_reach_stderr(tmp_path: Path) -> None:
    # long labels on many groups are what made constrained layout warn on main
    doc = many_groups(60, label="L" * 300)
    path = write(tmp_path / "r.json", doc)
    r = cli("report", str(path), "--html", str(tmp_path / "r.html"))
    assert r.returncode == 0, r.stderr
    assert "Warning" not in r.stderr and ".py:" not in r.stderr, r.stderr


# -- finding 3: hostile and odd result files -------------------------------------------------
def _bad_files(tmp: Path) -> dict[str, tuple[Path, str]]:
    ok = json.loads((Path(__file__).parents[1] / "data/results/audit.json").read_text())
    files: dict[str, tuple[Path, str]] = {}

    def put(name: str, text: str | bytes, expect: str) -> None:
        p = tmp / name
        p.write_bytes(text if isinstance(text, bytes) else text.encode())
        files[name] = (p, expect)

    put("deep.json", "[" * 100_000 + "]" * 100_000, "nesting deeper than 64")
    put("deep-ok-for-python.json", "[" * 500 + "]" * 500, "nesting deeper than 64")
    put("huge-float.json", json.dumps(ok).replace('"estimate": ', '"estimate": 1e400, "x": ', 1),
        "outside the range of a float")
    put("long-int.json", json.dumps(ok).replace('"seed": 0', '"seed": ' + "9" * 5000, 1),
        "an integer of 5,000 digits")
    put("latin1.json", json.dumps({"schema": "fairprobe/1", "kind": "audit",
                                   "group": "caf\u00e9"}, ensure_ascii=False).encode("latin-1"),
        "is not UTF-8")
    put("nan.json", json.dumps(ok).replace('"estimate": ', '"estimate": NaN, "y": ', 1),
        "NaN, which is not JSON")
    put("schema99.json", json.dumps({**ok, "schema": "fairprobe/99"}), "has schema 'fairprobe/99'")
    put("kind.json", json.dumps({**ok, "kind": "horoscope"}), "unknown kind 'horoscope'")
    (tmp / "adir").mkdir()
    files["adir"] = (tmp / "adir", "is a directory")
    os.mkfifo(tmp / "fifo.json")
    files["fifo.json"] = (tmp / "fifo.json", "is not a regular file")
    return files


def test_malformed_result_files_are_one_line_exit_2(tmp_path: Path) -> None:
    for name, (path, expect) in _bad_files(tmp_path).items():
        r = cli("report", str(path), "--html", str(tmp_path / "out.html"), timeout=60)
        lines = r.stderr.strip().splitlines()
        assert r.returncode == 2, (name, r.returncode, r.stderr[-500:])
        assert len(lines) == 1 and lines[0].startswith("error: "), (name, r.stderr[-500:])
        assert str(path) in lines[0] and expect in lines[0], (name, lines[0])
        assert "unexpected" not in lines[0]


def test_non_numbers_where_numbers_belong_are_warned_about(tmp_path: Path) -> None:
    ok = json.loads((Path(__file__).parents[1] / "data/results/audit.json").read_text())
    cases = {}
    for name, value in (("string", "0.3"), ("list", [0.3]), ("null", None)):
        doc = json.loads(json.dumps(ok))
        doc["metric"]["estimate"] = value
        cases[name] = write(tmp_path / f"{name}.json", doc)
    for name, path in cases.items():
        r = cli("report", str(path), "--html", str(tmp_path / f"{name}.html"))
        assert r.returncode == 0, r.stderr
        warn = [ln for ln in r.stderr.splitlines() if ln.startswith("warning: ")]
        assert warn and f"{path.name}:" in warn[0], (name, r.stderr)
        assert "not checked" in warn[-1]
        assert "Warning: " in (tmp_path / f"{name}.html").read_text()  # in the report too


def test_committed_results_give_no_warning(tmp_path: Path) -> None:
    files = sorted((Path(__file__).parents[1] / "data/results").glob("*.json"))
    r = cli("report", *map(str, files), "--html", str(tmp_path / "all.html"))
    assert r.returncode == 0 and "warning:" not in r.stderr, r.stderr


#: Runs the CLI and writes the process's own peak resident set (``VmHWM``, kB) to the file named
#: by ``FAIRPROBE_TEST_HWM``. ``ru_maxrss`` from ``wait4`` would not do: Linux carries the
#: parent's resident set across fork and exec into the child's maximum, so a pytest worker
#: that has grown to 1 GB would make every child look 1 GB large.
_MEASURED = (
    "import os, runpy, sys\n"
    "sys.argv = ['fairprobe', *sys.argv[1:]]\n"
    "try:\n"
    "    runpy.run_module('fairprobe', run_name='__main__')\n"
    "finally:\n"
    "    hwm = open('/proc/self/status').read().split('VmHWM:')[1].split()[0]\n"
    "    open(os.environ['FAIRPROBE_TEST_HWM'], 'w').write(hwm)\n"
)


def _report_stats(path: Path, out: Path, timeout: float = 180) -> tuple[int, float, float]:
    """Exit code, seconds and peak RSS (MiB) of one ``report`` process, killed after
    ``timeout`` seconds (a killed run reports a peak of infinity)."""
    hwm = out.with_suffix(".hwm")
    env = {**os.environ, "FAIRPROBE_TEST_HWM": str(hwm)}
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", _MEASURED, "report", str(path), "--html",
                             str(out), "--md", str(out.with_suffix(".md"))],
                            stderr=subprocess.DEVNULL, env=env)
    try:
        code = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        code = proc.wait()
    seconds = time.perf_counter() - t0
    peak = int(hwm.read_text()) / 1024 if hwm.exists() else float("inf")
    return code, seconds, peak


def test_two_thousand_groups_render_with_capped_figures(tmp_path: Path) -> None:
    # Speed is measured in benchmarks/bench_report.py; here the
    # run must end and the figures must be capped while the table keeps every group.
    path = write(tmp_path / "r.json", many_groups(2000))
    code, _, _ = _report_stats(path, tmp_path / "r.html")
    assert code == 0
    html = (tmp_path / "r.html").read_text()
    assert html.count("group-01999") >= 1  # the table keeps the last group
    MAX_GROUPS = 30  # fairprobe.report.figures.MAX_GROUPS
    svgs = re.findall(r"<svg.*?</svg>", html, flags=re.S)
    ticks = {t for s in svgs for t in re.findall(r"<text[^>]*>(group-\d{5})</text>", s)}
    assert 0 < len(ticks) <= MAX_GROUPS
    assert f"shows the first {MAX_GROUPS} of 2,000" in html


def test_five_megabyte_label_renders_in_bounded_memory(tmp_path: Path) -> None:
    label = "x" * (5 * 2**20)
    path = write(tmp_path / "r.json", many_groups(10, label=label))
    code, _, peak_mib = _report_stats(path, tmp_path / "r.html")
    assert code == 0
    assert peak_mib < 1024, peak_mib  # measured: about 305 MiB (benchmarks/bench_report.py)
    html = (tmp_path / "r.html").read_text()
    assert label in html  # the table keeps the whole name
    svgs = re.findall(r"<svg.*?</svg>", html, flags=re.S)
    assert all(len(s) < 200_000 for s in svgs)  # figures draw it cut
