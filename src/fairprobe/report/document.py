"""What a report is made of, independent of how it is rendered (HTML, Markdown).

A :class:`Report` is a headline sentence, one :class:`Section` per result (or per part of a
composite result such as the demo's), and the provenance of every input file. Sections carry
their verdict, facts, tables, the assumptions their guarantee rests on, and figure *specs*
(:class:`FigureSpec`: a plot kind and the data it needs); :mod:`fairprobe.report.figures` turns
specs into SVG. Pure Python: building a report model needs neither Jinja2 nor matplotlib.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["FigureSpec", "Provenance", "Report", "Section", "Table", "polarity"]

#: Verdict words and what they say about the model's fairness: -1 unfair, +1 fair, 0 open.
_POLARITY = {
    "unfair": -1,
    "violation": -1,
    "fair": 1,
    "compliant": 1,
    "compliance": 1,
    "undetermined": 0,
    "inconclusive": 0,
    "budget": 0,
}


def polarity(verdict: str | None) -> int | None:
    """-1 (unfair), +1 (fair), 0 (undetermined), or None (not a fairness verdict)."""
    if verdict is None:
        return None
    return _POLARITY.get(verdict.lower())


@dataclass
class Table:
    """A table with a caption (read first by screen readers) and a header row."""

    caption: str
    header: list[str]
    rows: list[list[str]]
    #: optional CSS class per cell (``v-fair`` ...), same shape as ``rows``
    classes: list[list[str]] | None = None


@dataclass
class FigureSpec:
    """A figure to draw: ``plot`` names a function of :mod:`fairprobe.report.figures`.

    ``alt`` is the text alternative (what the figure shows, with its key numbers), ``caption``
    the visible caption.
    """

    plot: str
    data: dict[str, Any]
    alt: str
    caption: str


@dataclass
class Section:
    """The evidence of one result: verdict sentence, facts, figures, tables, assumptions."""

    kind: str
    title: str
    source: str
    verdict: str | None
    sentence: str
    short: str
    facts: list[tuple[str, str]] = field(default_factory=list)
    figures: list[FigureSpec] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    assumptions: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    anchor: str = ""
    #: False for simulations with a known truth (method evaluations): shown, but not counted in
    #: the overall verdict on the audited model
    counts: bool = True
    #: problems with the result itself (numbers that are not numbers, a verdict no number
    #: backs): shown in the section and printed as warnings by ``fairprobe report``
    warnings: list[str] = field(default_factory=list)
    #: which question the section answers (sections with one key are one question) and the
    #: error level of its verdict; set by :func:`fairprobe.report.build.build_report`
    question: str = ""
    alpha: float | None = None
    #: the finding's fair / unfair / undetermined verdict, when the result carries a finding
    #: (it counts in the headline; ``verdict`` is the method's own word, for display)
    decided: str | None = None
    #: the group x metric grid of an every-group audit with several metrics (shown first)
    grid: Table | None = None
    #: the findings the section offers to the family-wise headline
    #: (:class:`fairprobe.stats.headline.Entry`), set by ``build_report``
    entries: list[Any] = field(default_factory=list)
    #: the method's own word where the finding says otherwise (a sequential stop on
    #: "violation" whose confidence sequence still reaches the band), for the closing line
    said: str | None = None
    #: one phrase per question over time ("... alarm since 2024-03-05")
    time_summaries: list[str] = field(default_factory=list)


@dataclass
class Provenance:
    """Where one input file came from: model identity, time, seeds, queries paid, versions."""

    source: str
    kind: str
    schema: str | None
    items: list[tuple[str, str]]
    tables: list[Table] = field(default_factory=list)


@dataclass
class Report:
    """A whole audit report."""

    title: str
    headline: str
    overall: str
    sections: list[Section]
    provenance: list[Provenance]
    generated: str
    fairprobe_version: str
    #: the question table: one row per finding offered to the headline
    #: (:func:`fairprobe.report.build.build_report`)
    questions: list[dict[str, Any]] = field(default_factory=list)
    #: the tally of the headline ("1 of 3 questions unfair, ...")
    tally: str = ""
