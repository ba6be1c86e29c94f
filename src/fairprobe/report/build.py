"""Result files -> one :class:`~fairprobe.report.document.Report` (no rendering here).

The headline is one sentence: the overall verdict on the model's fairness, then each method's
short finding. Fairness verdicts combine as follows: all determinate verdicts agree -> that
verdict; they disagree -> ``conflicting``; none is determinate -> ``undetermined``. A two-source
finding of manipulation is stated next to it (it is about the audit API, not the model).
"""

from __future__ import annotations

import datetime as _dt
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from fairprobe import __version__
from fairprobe.errors import DataError
from fairprobe.report.adapters import adapt, provenance_of, split_document
from fairprobe.report.document import Report, Section, polarity
from fairprobe.report.jsonio import RESULT_KINDS, SCHEMA, read_json

__all__ = ["build_report", "load_results", "overall_verdict"]


def load_results(paths: Sequence[str | os.PathLike[str]]) -> list[tuple[str, Mapping[str, Any]]]:
    """Read every result file (all before any rendering), with one-line errors."""
    if not paths:
        raise DataError("Give at least one result JSON file (the --json output of a command).")
    out = []
    for p in paths:
        doc = read_json(p)
        if not isinstance(doc, Mapping):
            raise DataError(f"{p} is not a fairprobe result: expected a JSON object, found "
                            f"{type(doc).__name__}.")
        _check_schema(p, doc)
        out.append((Path(p).name, doc))
    return out


def _check_schema(path: str | os.PathLike[str], doc: Mapping[str, Any]) -> None:
    """Refuse a foreign schema version or an unknown kind (a legacy file has neither field)."""
    if "schema" in doc:
        if doc["schema"] != SCHEMA:
            raise DataError(f"{path} has schema {str(doc['schema'])[:60]!r}; this fairprobe "
                            f"reads {SCHEMA!r} (a newer or foreign file: upgrade fairprobe or "
                            f"regenerate the result).")
        if doc.get("kind") not in RESULT_KINDS:
            raise DataError(f"{path} has the unknown kind {str(doc.get('kind'))[:60]!r}; "
                            f"expected one of {', '.join(RESULT_KINDS)}.")


def overall_verdict(sections: Sequence[Section]) -> str:
    """``fair``, ``unfair``, ``conflicting`` or ``undetermined`` over the sections' verdicts."""
    signs = {polarity(s.verdict) for s in sections if s.counts} - {None, 0}
    if signs == {-1}:
        return "unfair"
    if signs == {1}:
        return "fair"
    if signs == {-1, 1}:
        return "conflicting"
    return "undetermined"


def _anchor(title: str, used: set[str]) -> str:
    base = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-") or "section"
    anchor, i = base, 2
    while anchor in used:
        anchor, i = f"{base}-{i}", i + 1
    used.add(anchor)
    return anchor


def _count(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _headline(sections: Sequence[Section], overall: str) -> str:
    """One sentence: the overall verdict, how many findings back it, and any manipulation."""
    pol = [p for p in (polarity(s.verdict) for s in sections if s.counts) if p is not None]
    unfair, fair, open_ = pol.count(-1), pol.count(1), pol.count(0)
    tally = (f"{unfair} of {_count(len(pol), 'fairness finding')} say unfair, {fair} say fair"
             + (f", {open_} {'is' if open_ == 1 else 'are'} undetermined" if open_ else ""))
    if overall == "conflicting":
        lead = f"The methods disagree on the model's fairness: {tally}"
    elif overall == "undetermined":
        lead = f"No method reaches a fairness verdict on the model ({tally})"
    else:
        lead = f"The audited model is judged {overall}: {tally}"
    manip = [s for s in sections if s.kind == "twosource" and s.verdict == "manipulated"]
    if manip:
        lead += "; the two-source audit finds that its audit API gives auditors manipulated answers"
    sims = sum(1 for s in sections if not s.counts)
    if sims:
        lead += (f" ({_count(sims, 'simulation')} with a known truth not counted: "
                 f"{'it evaluates' if sims == 1 else 'they evaluate'} the method, not this model)")
    return lead + "."


def build_report(results: Sequence[tuple[str, Mapping[str, Any]]], title: str | None = None,
                 now: _dt.datetime | None = None) -> Report:
    """A report of already-loaded ``(source name, document)`` pairs."""
    sections: list[Section] = []
    provenance = []
    unknown = []
    for source, doc in results:
        parts = list(split_document(doc, source))
        kinds = sorted({k for k, _, _ in parts})
        if kinds == ["unknown"] and "schema" not in doc:
            unknown.append(source)
            continue
        provenance.append(provenance_of(doc, source, "+".join(kinds) if len(kinds) > 1
                                        else kinds[0]))
        for kind, part, label in parts:
            sections.append(adapt(kind, part, source, label))
    if unknown:
        raise DataError(
            f"Cannot tell which fairprobe command wrote {', '.join(unknown)}: expected a result "
            f"JSON with 'schema' and 'kind' (the --json output of audit, sequential, radius, "
            f"twosource, collab or demo)."
        )
    used: set[str] = set()
    for s in sections:
        s.anchor = _anchor(s.title, used)
    overall = overall_verdict(sections)
    headline = _headline(sections, overall)
    models = {v for p in provenance for k, v in p.items if k == "model" and v != "n/a"}
    if len(models) > 1:
        headline += (f" These results concern {len(models)} different models (see the "
                     f"provenance).")
    stamp = (now or _dt.datetime.now(_dt.UTC)).strftime("%Y-%m-%d %H:%M UTC")
    return Report(
        title=title or "Fairness audit report",
        headline=headline,
        overall=overall,
        sections=sections,
        provenance=provenance,
        generated=stamp,
        fairprobe_version=__version__,
    )
