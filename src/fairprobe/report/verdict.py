"""One rendering of a finding, for every surface.

The terminal's closing line of every command, the report's badges, headline and question table,
the question table of ``report --json`` and the ``--fail-on`` exit code all come from one
:class:`~fairprobe.report.document.Report` (:func:`fairprobe.report.build.build_report` of the
command's own result document) through the functions here, so they cannot disagree:

* :func:`finding_text` renders one :class:`~fairprobe.stats.finding.Finding`: its verdict word,
  estimate and interval, and where its interval lies against the band;
* :func:`section_line` renders one section (a result or part of one): its finding, and where
  the method's own word differs (a sequential test that stopped on "violation" while its
  confidence sequence still reaches the band), that word beside it;
* :func:`closing_lines` renders the report: one line per section, then the verdict gated on.

**A question** is one fairness comparison about the audited model on one set of answers: one
metric's per-group rates (DP and DI compare the same selection rates, so they are one
question), one sequential audit, one subgroup search, one monitored metric, one windowed
metric. A result can answer several; several results can answer the same one. The headline
counts questions; a finding is one answer to a question (a metric's interval at a level).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from fairprobe.stats.finding import Finding

__all__ = ["QUESTION_DEFINITION", "closing_lines", "finding_text", "question_rows",
           "section_line", "where_text"]

QUESTION_DEFINITION = (
    "A question is one fairness comparison about the audited model on one set of answers: one "
    "metric's per-group rates (DP and DI compare the same selection rates: one question), one "
    "sequential audit, one subgroup search, one monitored metric, one windowed metric. Each "
    "finding (an answer at a level) is a row below; the headline counts questions.")


def _num(x: float) -> str:
    if math.isnan(x):
        return "n/a"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return f"{x:.4g}"


def where_text(f: Finding) -> str:
    """Where the interval lies against the fair band (or floor), in words."""
    q = f.question
    if f.forced is not None:
        return f.reason or f"the decision of {f.construction}"
    band = (f"the floor {q.threshold:g}" if q.kind == "ratio"
            else f"the band +/-{q.threshold:g}")
    what = "the confidence sequence" if f.coverage == "anytime-valid" else "the interval"
    return {"fair": f"{what} lies inside {band}",
            "unfair": f"{what} lies outside {band}"}.get(f.verdict,
                                                         f"{what} still reaches {band}")


def finding_text(f: Finding) -> str:
    """``undetermined, 0.0312 [0.01, 0.06] at 95%: the interval still reaches the band +/-0.05``.

    The one rendering of a finding's verdict word, estimate and interval.
    """
    interval = interval_text(f)
    if not interval:
        return f"{f.verdict}: {where_text(f)}"
    return f"{f.verdict}, {interval}: {where_text(f)}"


def interval_text(f: Finding) -> str:
    """``0.0312 [0.01, 0.06] at 95%``: the estimate and interval of :func:`finding_text`, for
    tables that show the verdict beside it (empty when a forced verdict has no interval)."""
    if f.forced is not None and math.isinf(f.low) and math.isinf(f.high):
        return ""
    est = "" if math.isnan(f.estimate) else f"{_num(f.estimate)} "
    return f"{est}[{_num(f.low)}, {_num(f.high)}] at {f.confidence_level:.0%}"


def section_line(section: Any) -> str:
    """One section's closing line: its findings (``finding_text``), with the method's own word
    where it differs from the finding's."""
    findings = [e.finding for e in section.entries if e.finding is not None]
    said = getattr(section, "said", None)
    head = f"stopped: {said}; " if said else ""
    if not findings:
        return f"{head}{section.title}: {section.verdict or 'no verdict'}"
    parts = [f"{'finding' if len(section.entries) == 1 else (e.label or 'finding')}: "
             f"{finding_text(e.finding)}" if e.finding is not None else
             f"{e.label} ({e.not_counted and 'shown, not counted'})"
             for e in section.entries]
    return head + "; ".join(parts)


def question_rows(report: Any) -> list[dict[str, Any]]:
    """The question table: every finding offered to the headline, its question, whether it is
    counted, the level it was recomputed at and its verdict there (``Report.questions``)."""
    return list(report.questions)


def closing_lines(report: Any, sections: Sequence[Any] | None = None) -> list[str]:
    """The terminal's closing lines: one per section, then the verdict the exit code gates on."""
    lines = [section_line(s) for s in (sections if sections is not None else report.sections)
             if s.entries or s.verdict]
    lines.append(f"verdict: {report.overall} ({report.tally})")
    return lines
