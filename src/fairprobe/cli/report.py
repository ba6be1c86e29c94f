"""``fairprobe report``: result JSON files -> one self-contained HTML (or Markdown) audit report."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from fairprobe.cli.gate import FailOnOption, gate_verdict


def report(
    results: Annotated[
        list[Path],
        typer.Argument(help="Result JSON files (the --json output of any fairprobe command).",
                       show_default=False, metavar="RESULT.json"),
    ],
    html: Annotated[
        Path | None,
        typer.Option("--html", help="Write a self-contained HTML report here.",
                     metavar="FILE"),
    ] = None,
    md: Annotated[
        Path | None,
        typer.Option("--md", help="Write a Markdown report here (figures in <name>_figures/).",
                     metavar="FILE"),
    ] = None,
    title: Annotated[
        str | None, typer.Option("--title", help="Report title.")
    ] = None,
    fail_on: FailOnOption = None,
) -> None:
    """Combine result JSON files into one audit report: verdict, evidence and figures, provenance."""
    from fairprobe.cli._common import check_output_path
    from fairprobe.errors import InvalidParameterError

    if html is None and md is None:
        raise InvalidParameterError("Give --html FILE and/or --md FILE: where to write the report.")
    for out in (html, md):
        if out is None:
            continue
        if out.resolve() in {p.resolve() for p in results}:
            raise InvalidParameterError(f"The report {out} would overwrite one of its inputs.")
        check_output_path(out, "--html" if out is html else "--md")

    from fairprobe._extras import import_optional
    from fairprobe.report.build import build_report, load_results

    docs = load_results(results)  # every input validated before anything is drawn
    rep = build_report(docs, title=title)
    import_optional("jinja2", feature="fairprobe report")
    import_optional("matplotlib", feature="fairprobe report")
    from rich.console import Console

    from fairprobe._text import term
    from fairprobe.report.render import write_html, write_markdown

    console = Console(stderr=True, highlight=False, emoji=False)
    for s in rep.sections:
        for w in s.warnings:
            console.print(f"warning: {term(s.source)}: {term(w)}", soft_wrap=True)
    if html is not None:
        write_html(rep, html)
        console.print(f"report ({len(rep.sections)} sections, verdict {rep.overall}) -> {html}")
    if md is not None:
        write_markdown(rep, md)
        console.print(f"report ({len(rep.sections)} sections, verdict {rep.overall}) -> {md}")
    gate_verdict(rep.overall, fail_on)


def register(app: typer.Typer) -> None:
    app.command("report")(report)
