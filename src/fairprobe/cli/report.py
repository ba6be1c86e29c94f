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
    json_path: Annotated[
        Path | None,
        typer.Option("--json", help="Write the headline, the verdict and the question table "
                                    "(every finding, counted or not, its level and verdict) "
                                    "as JSON.", metavar="FILE"),
    ] = None,
    fail_on: FailOnOption = None,
) -> None:
    """Combine result JSON files into one audit report: verdict, evidence and figures, provenance.

    With neither --html nor --md, the HTML report is written beside the first input, named
    after it (results/audit.json -> results/audit.html), over a regular file or nothing.
    """
    from fairprobe.cli._common import check_output_path
    from fairprobe.errors import InvalidParameterError

    if html is None and md is None and results:
        html = results[0].with_suffix(".html")
    for out, flag in ((html, "--html"), (md, "--md"), (json_path, "--json")):
        if out is None:
            continue
        if out.resolve() in {p.resolve() for p in results}:
            raise InvalidParameterError(f"The report {out} ({flag}) would overwrite one of its "
                                        f"inputs.")
        check_output_path(out, flag)

    from fairprobe._extras import import_optional
    from fairprobe.report.build import build_report, load_results
    from fairprobe.report.verdict import QUESTION_DEFINITION

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
    if json_path is not None:
        from fairprobe.documents import write_json

        write_json(json_path, {
            "kind": "report", "overall": rep.overall, "headline": rep.headline,
            "tally": rep.tally, "question_definition": QUESTION_DEFINITION,
            "questions": rep.questions,
            "sections": [{"title": s.title, "source": s.source, "verdict": s.verdict,
                          "anchor": s.anchor} for s in rep.sections]})
    from fairprobe.cli.gate import print_closing

    print_closing(rep)
    gate_verdict(rep.overall, fail_on)


def register(app: typer.Typer) -> None:
    app.command("report")(report)
