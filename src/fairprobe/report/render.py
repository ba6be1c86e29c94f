"""Render a :class:`~fairprobe.report.document.Report` as one self-contained HTML file or Markdown.

HTML: Jinja2 template ``templates/report.html.j2`` with inline CSS and the figures as inline SVG
(nothing is fetched at view time). Markdown: ``templates/report.md.j2``, figures written as SVG
files in a folder next to the Markdown file (``report.md`` -> ``report_figures/``), linked
relatively, so the pair can be published in a repository.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from fairprobe._extras import import_optional
from fairprobe.report.document import Report
from fairprobe.report.verdict import QUESTION_DEFINITION

__all__ = ["render_html", "render_markdown", "write_html", "write_markdown"]


def _env(autoescape: bool) -> Any:
    jinja2 = import_optional("jinja2", feature="fairprobe report")
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("fairprobe.report", "templates"),
        autoescape=autoescape,
        trim_blocks=False,
        lstrip_blocks=False,
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters["md"] = _md_cell
    env.filters["alt"] = _md_alt
    env.filters["href"] = _md_href
    return env, jinja2


#: Data -> inert Markdown text: HTML special characters as entities, the ASCII punctuation that
#: Markdown gives a meaning backslash-escaped (CommonMark escapes any punctuation; these are the
#: characters Python-Markdown's escapes and its tables extension know), line breaks and other
#: control characters as spaces (parentheses make a link only after an unescaped ``]``, and
#: there is none). ``-``, ``+`` and ``1.`` mean something only at the start of a
#: line (a list item), where ``_MD_LEAD`` escapes them; every value is one line.
_MD_TABLE = str.maketrans({
    **{c: "\\" + c for c in "\\`*_{}[]#!|"},
    "&": "&amp;", "<": "&lt;", ">": "&gt;",
    **{chr(i): " " for i in (*range(32), 127)},
})

_MD_LEAD = re.compile(r"^(\s*|\s*\d+)((?<=\d)\.|(?<!\d)[-+])(?=\s|$)")


def _md_cell(value: Any) -> str:
    """``value`` as Markdown text that renders as exactly that text (see ``_MD_TABLE``).

    Everything a report shows comes from result files (group names, titles, notes), so every
    value goes through this filter: no raw HTML, link, image, emphasis, heading or table-cell
    boundary can come from data.
    """
    return _MD_LEAD.sub(r"\1\\\2", str(value).translate(_MD_TABLE))


def _md_alt(value: Any) -> str:
    # square brackets would end the image's alt text early: intervals are written (a, b) there
    return _md_cell(str(value).replace("[", "(").replace("]", ")"))


def _md_href(path: str) -> str:
    from urllib.parse import quote

    return quote(path)


def _svgs(report: Report) -> list[list[str]]:
    from fairprobe.report.figures import render_svg

    return [[render_svg(f, f"{s.anchor}-fig{j + 1}") for j, f in enumerate(s.figures)]
            for s in report.sections]


def render_html(report: Report) -> str:
    """The report as one HTML document (a string)."""
    env, jinja2 = _env(autoescape=True)
    svgs = [[jinja2.utils.markupsafe.Markup(svg) for svg in row] for row in _svgs(report)]
    return str(env.get_template("report.html.j2").render(
        report=report, svgs=svgs, question_definition=QUESTION_DEFINITION))


def render_markdown(report: Report, figure_dir: str) -> tuple[str, dict[str, str]]:
    """The report as Markdown and its figures ``{relative path: svg}`` under ``figure_dir``."""
    env, _ = _env(autoescape=False)
    files: dict[str, str] = {}
    paths: list[list[str]] = []
    for s, row in zip(report.sections, _svgs(report), strict=True):
        names = []
        for j, svg in enumerate(row):
            rel = f"{figure_dir}/{s.anchor}-{j + 1}.svg"
            files[rel] = svg + "\n"  # matplotlib's SVG root carries its xmlns
            names.append(rel)
        paths.append(names)
    text = env.get_template("report.md.j2").render(report=report, figure_paths=paths,
                                                   question_definition=QUESTION_DEFINITION)
    return str(text), files


def _atomic_write(path: Path, text: str, what: str) -> None:
    from fairprobe._io import write_file

    write_file(path, text, what=what)


def write_html(report: Report, path: str | os.PathLike[str]) -> Path:
    """Write the HTML report to ``path`` (atomically)."""
    target = Path(path)
    _atomic_write(target, render_html(report), "--html")
    return target


def write_markdown(report: Report, path: str | os.PathLike[str]) -> Path:
    """Write the Markdown report to ``path`` and its SVG figures to ``<stem>_figures/``."""
    target = Path(path)
    text, files = render_markdown(report, f"{target.stem}_figures")
    from fairprobe._io import check_output

    check_output(target, "--md")  # refused before any figure file is written
    for rel, svg in files.items():
        _atomic_write(target.parent / rel, svg, "--md figure")
    _atomic_write(target, text, "--md")
    return target
