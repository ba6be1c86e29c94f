"""Exit codes for gating a release on a verdict: ``--fail-on unfair`` / ``--fail-on undetermined``.

Every command that gives a verdict, and ``report``, takes ``--fail-on``. The verdict gated on is
the report's headline of the command's own result document (:mod:`fairprobe.stats.headline`):
one rule for the terminal, the JSON, the report and the exit code. The exit codes:

====  =====================================================================================
0     the command ran (and the verdict did not trip ``--fail-on``)
1     an unexpected error (a bug: please report it)
2     bad input: one ``error:`` line names the flag, key or file to fix
3     an endpoint or port could not be used
4     an optional dependency is missing (the line names the extra)
5     the verdict is ``unfair`` and ``--fail-on`` is ``unfair`` or ``undetermined``
6     the verdict is ``undetermined`` and ``--fail-on`` is ``undetermined``
130   interrupted (Ctrl-C); what was paid for is kept in the cache
====  =====================================================================================

The result (terminal output and ``--json``) is written before the exit, so a CI job keeps it.
"""

from __future__ import annotations

import enum
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

import typer

__all__ = ["GATE_EXIT", "FailOn", "FailOnOption", "emit_job", "gate", "gate_verdict",
           "print_closing"]


class FailOn(enum.StrEnum):
    """Which verdicts make the command exit non-zero."""

    unfair = "unfair"
    undetermined = "undetermined"


#: Exit code by verdict when ``--fail-on`` trips.
GATE_EXIT = {"unfair": 5, "undetermined": 6}

FAIL_ON_HELP = ("Exit non-zero on the verdict, for gating a release in CI: 'unfair' exits 5 on "
                "an unfair verdict; 'undetermined' also exits 6 unless the verdict is fair.")

#: The ``--fail-on`` option of a command's signature (``fail_on: FailOnOption = None``).
FailOnOption = Annotated[FailOn | None, typer.Option(case_sensitive=False, help=FAIL_ON_HELP)]


def gate_verdict(verdict: str, fail_on: FailOn | str | None) -> None:
    """Raise ``typer.Exit`` with :data:`GATE_EXIT` when ``verdict`` trips ``fail_on``."""
    if fail_on is None:
        return
    level = fail_on.value if isinstance(fail_on, FailOn) else str(fail_on)
    trips = verdict == "unfair" or (level == "undetermined" and verdict != "fair")
    if trips:
        code = GATE_EXIT.get(verdict, GATE_EXIT["undetermined"])
        typer.echo(f"verdict {verdict}: exit {code} (--fail-on {level})", err=True)
        raise typer.Exit(code)


def gate(docs: list[tuple[str, Mapping[str, Any]]], fail_on: FailOn | str | None,
         *, closing: bool = False) -> str:
    """The headline verdict of result documents (as ``report`` states it), gated on.

    With ``closing``, the closing lines (:func:`fairprobe.report.verdict.closing_lines`: each
    finding's verdict word, estimate and interval, then the verdict) are printed first: the
    terminal shows what the exit code gates on, from the same report.
    """
    from fairprobe.report.build import build_report

    rep = build_report(docs)
    if closing:
        print_closing(rep)
    gate_verdict(rep.overall, fail_on)
    return rep.overall


def print_closing(rep: Any) -> None:
    """Print a report's closing lines on stdout, never wrapped by rich (the terminal wraps)."""
    from fairprobe._text import visible
    from fairprobe.cli._common import console
    from fairprobe.report.verdict import closing_lines

    for line in closing_lines(rep):
        console.print(visible(line), soft_wrap=True, markup=False)


def emit_job(json_path: str | os.PathLike[str] | None, job: Any,
             fail_on: FailOn | str | None) -> dict[str, Any]:
    """Write a library job's document (if ``--json``) and gate on its verdict (``--fail-on``)."""
    from fairprobe.documents import write_json

    doc: dict[str, Any] = job.to_dict()
    name = Path(json_path).name if json_path is not None else f"{doc['kind']}.json"
    if json_path is not None:
        write_json(json_path, doc)
    gate([(name, doc)], fail_on, closing=True)
    return doc
