"""Result files -> one :class:`~fairprobe.report.document.Report` (no rendering here).

The headline is one sentence: the combined verdict on the audited model
(:mod:`fairprobe.stats.headline`: ``unfair`` if a question about the model is answered unfair,
``fair`` only if every one is fair, otherwise ``undetermined``), its tally over distinct
questions and the bound on its error. Results about simulations or demonstrations with a known
truth are shown but not counted. A two-source finding of manipulation is stated next to it (it
is about the audit API, not the model).
"""

from __future__ import annotations

import datetime as _dt
import math
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from fairprobe import __version__
from fairprobe import metrics as _metrics
from fairprobe.errors import DataError, InvalidParameterError
from fairprobe.report._read import get
from fairprobe.report.adapters import adapt, provenance_of, split_document
from fairprobe.report.document import Report, Section, polarity
from fairprobe.report.figures import bounded_spec
from fairprobe.report.jsonio import RESULT_KINDS, SCHEMA, read_json
from fairprobe.stats.finding import Finding
from fairprobe.stats.headline import DEFAULT_ALPHA, Entry, Headline, family_headline
from fairprobe.stats.refit import rate_box, refit_family, refit_two_group

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


def overall_verdict(sections: Sequence[Section], alpha: float = DEFAULT_ALPHA) -> str:
    """``fair``, ``unfair`` or ``undetermined``: the family-wise headline
    (:func:`fairprobe.stats.headline.family_headline`) over the sections' findings about the
    audited model."""
    return _combined(sections, alpha).verdict


def _combined(sections: Sequence[Section], alpha: float = DEFAULT_ALPHA) -> Headline:
    entries = [e for s in sections
               if s.counts and s.kind not in _NOT_VERDICTS for e in s.entries]
    return family_headline(entries, alpha)


def _entries(kind: str, part: Mapping[str, Any], question: str, label: str,
             verdict: str | None) -> list[Entry]:
    """The findings of one part, each with how to recompute it at another level."""
    out: list[Entry] = []
    bg = part.get("by_group")
    by_group: list[Mapping[str, Any]] = [r for r in bg if isinstance(r, Mapping)] \
        if isinstance(bg, list) else []
    method = str(part.get("simultaneous_method") or "")
    sums = part.get("summaries")
    if isinstance(sums, Mapping):
        for name, summ in sums.items():
            fd = summ.get("finding") if isinstance(summ, Mapping) else None
            if not isinstance(fd, Mapping):
                continue
            f = _finding(fd)
            if f is None:
                continue
            key = f"{question.rsplit('|', 1)[0]}|{','.join(f.question.rates) or name}"
            refit = refit_family(f, by_group, method)
            # a shared region only from counts checked to give back the finding's own interval
            region = rate_box(f, by_group, method) if refit is not None else None
            out.append(Entry(key, f, f.verdict, refit, label=str(name), region=region))
    if kind == "discover" and isinstance(part.get("finding"), Mapping):
        f = _finding(part["finding"])
        if f is not None:
            out.append(Entry(question, f, f.verdict, _discover_refit(f, part),
                             label=label or kind))
            return out
    for holder in (part, part.get("metric"), part.get("extra")):
        fd = holder.get("finding") if isinstance(holder, Mapping) else None
        if isinstance(fd, Mapping):
            f = _finding(fd)
            if f is not None:
                out.append(Entry(question, f, f.verdict, refit_two_group(f),
                                 label=label or kind))
                break
    if not out and polarity(verdict) is not None:
        out.append(Entry(question, None, verdict or "", None, label=label or kind))
    return out


def _add_time(sec: Section, part: Mapping[str, Any], source: str) -> None:
    """A windowed audit's and a monitor's questions over time (:mod:`fairprobe.report.timeline`):
    their entries, the per-window tables and signed charts, and a badge that says what the
    section's findings say together (an alarm makes it unfair)."""
    from fairprobe.report.timeline import time_questions
    from fairprobe.stats.headline import combine

    tqs = time_questions(part, source)
    if not tqs:
        return
    own = [e.finding.verdict for e in sec.entries if e.finding is not None]
    sec.entries.extend(t.entry for t in tqs)
    sec.time_summaries = [t.summary for t in tqs]
    for t in tqs:
        if t.figure is not None:
            sec.figures.append(t.figure)
        if t.table is not None:
            sec.tables.append(t.table)
    said = "; ".join(f"{t.summary} ({'anytime-valid, false alarm at most ' + _pct(part, t)}"
                     f"{')' if t.kind == 'monitor' else ''}" if t.kind == "monitor" else
                     f"{t.summary} (shown, not counted: each window's interval holds for its "
                     f"own window only)" for t in tqs)
    sec.sentence = f"Pooled over every row: {sec.sentence} Over time: {said}."
    counted = [t.verdict for t in tqs if t.kind == "monitor"]
    sec.verdict = combine(own + counted + ["undetermined"] * (len(tqs) - len(counted)))
    sec.short = f"{sec.verdict}: {'; '.join(t.summary for t in tqs)}; pooled {sec.short}"


def _pct(part: Mapping[str, Any], t: Any) -> str:
    a = get(part, "monitor", t.metric, "alpha")
    return f"{float(a):g}" if isinstance(a, int | float) else "alpha"


def _discover_refit(f: Finding, part: Mapping[str, Any]) -> Any:
    """A discovery at a smaller level: every shipped procedure (Holm, Benjamini-Yekutieli,
    Benjamini-Hochberg, the reshaped step-up) rejects at level ``q`` exactly the subgroups whose
    adjusted p-value is at most ``q``, so some subgroup is reported exactly when the smallest
    adjusted p-value is at most ``q``; the interval is then the top subgroup's, else unbounded
    (undetermined)."""
    adj = [float(s["adjusted_p"]) for s in part.get("subgroups") or []
           if isinstance(s, Mapping) and isinstance(s.get("adjusted_p"), int | float)]
    best = min(adj, default=math.inf)

    def refit(level: float) -> tuple[float, float]:
        return (f.low, f.high) if best <= 1.0 - level + 1e-15 else (-math.inf, math.inf)

    return refit


def _finding(d: Mapping[str, Any]) -> Finding | None:
    try:
        f = Finding.from_dict(d)
    except (KeyError, TypeError, ValueError, InvalidParameterError):
        return None
    return f if f.subject == "model" else None


#: Sections whose verdict word is not a finding of their own: the consistency radius says how
#: far another finding's conclusion survives a shift (a point computation, no error level).
_NOT_VERDICTS = frozenset({"radius"})


#: The selection-rate metrics (DP and DI ask the same question of the same answers) by any of
#: their names (the registry's), and the older spellings result documents may hold.
_RATES = {**{n: m.rates[0] for m in _metrics.METRICS.values() if m.rates == ("selection_rate",)
             for n in (m.name, *m.aliases)},
          "statistical_parity": "selection_rate", "disparate_impact": "selection_rate",
          "demographic_parity": "selection_rate"}


def _question(kind: str, part: Mapping[str, Any], source: str, label: str) -> str:
    """Which question a part answers: same answers and same per-group rates -> same key."""
    f = part.get("finding")
    if kind == "sequential":  # the access levels of one sequential audit: one question
        return f"{source}|sequential|{part.get('metric', '')}"
    if kind == "audit":
        m = part.get("metric")
        m = m.get("metric") if isinstance(m, Mapping) else m
        metric = str(m or label or "").lower().replace(" ", "_")
        if isinstance(f, Mapping) and isinstance(f.get("question"), Mapping):
            rates = f["question"].get("rates") or []
            if rates:
                return f"{source}|audit|{','.join(map(str, rates))}"
        return f"{source}|audit|{_RATES.get(metric, metric)}"
    return f"{source}|{kind}|{label}"


def _alpha(part: Mapping[str, Any]) -> float:
    """The error level of a part's verdict (0.05 when the part does not say)."""
    lvl = get(part, "finding", "interval", "level")
    if isinstance(lvl, int | float):
        return 1.0 - float(lvl)
    sums = part.get("summaries")
    if isinstance(sums, Mapping) and sums:
        lv = [get(v, "interval", "level") for v in sums.values() if isinstance(v, Mapping)]
        return sum(1.0 - float(x) for x in lv if isinstance(x, int | float)) or 0.05
    for key in ("alpha",):
        if isinstance(part.get(key), int | float):
            return float(part[key])
    cl = part.get("confidence_level")
    return 1.0 - float(cl) if isinstance(cl, int | float) and 0 < cl < 1 else 0.05


def _about_model(kind: str, part: Mapping[str, Any]) -> bool:
    """Whether a part is a finding about the audited model (simulations and demos are not)."""
    subject = get(part, "finding", "question", "subject")
    if isinstance(subject, str):
        return subject == "model"
    return not kind.startswith("collab")  # collaborative runs on bundled populations


def _anchor(title: str, used: set[str]) -> str:
    base = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-") or "section"
    anchor, i = base, 2
    while anchor in used:
        anchor, i = f"{base}-{i}", i + 1
    used.add(anchor)
    return anchor


def _count(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _note_headline_use(sections: Sequence[Section]) -> None:
    """Say in each section what the headline did with its findings (counted at which level,
    or why not)."""
    pairs = [(s, e) for s in sections if s.counts and s.kind not in _NOT_VERDICTS
             for e in s.entries]
    hd = family_headline([e for _, e in pairs])
    said: dict[int, list[str]] = {}
    for (sec, _), c in zip(pairs, hd.entries, strict=True):
        if c.status == "not counted":
            said.setdefault(id(sec), []).append(f"{c.label} shown, not counted ({c.why})")
        else:
            said.setdefault(id(sec), []).append(
                f"{c.label} counted{' (conditional)' if c.status == 'conditional' else ''}"
                f" at error share {c.alpha:.3g} ({c.why}: [{c.low:.4g}, {c.high:.4g}], "
                f"{c.verdict})")
    for sec in sections:
        if id(sec) in said:
            sec.notes.append("In the headline: " + "; ".join(said[id(sec)]) + ".")


def _headline(sections: Sequence[Section]) -> str:
    """One sentence: the combined verdict, its tally and error bound, and any manipulation."""
    lead = _combined(sections).sentence().rstrip(".")
    over_time = [t for s in sections if s.counts for t in s.time_summaries]
    if over_time:
        lead += "; over time: " + "; ".join(over_time)
    manip = [s for s in sections if s.kind == "twosource" and s.verdict == "manipulated"]
    if manip:
        lead += "; the two-source audit finds that its audit API gives auditors manipulated answers"
    sims = sum(1 for s in sections if not s.counts)
    if sims:
        lead += (f" ({_count(sims, 'result')} about a simulation or demonstration with a known "
                 f"truth not counted: {'it evaluates' if sims == 1 else 'they evaluate'} the "
                 "method, not this model)")
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
            sec = adapt(kind, part, source, label)
            sec.question = _question(kind, part, source, label)
            if kind == "sequential" and isinstance(part.get("outcome"), str):
                sec.said = str(part["outcome"])  # the test's own word, beside the finding
            sec.alpha = _alpha(part)
            fv = get(part, "finding", "verdict")
            if isinstance(fv, str):  # the verdict engine's verdict, where the result has one
                sec.decided = fv
                if polarity(sec.verdict) is not None and polarity(sec.verdict) != polarity(fv):
                    # a method's word the finding does not support (a sequential stop the
                    # confidence sequence does not back yet): the finding is what is shown
                    sec.said = sec.said or sec.verdict
                    sec.short = f"{sec.short}; finding {fv}"
                    sec.sentence = (f"{sec.sentence} The test's word is '{sec.said}'; the "
                                    f"finding is {fv}: "
                                    f"{get(part, 'finding', 'reason') or 'see its interval'}.")
                    sec.verdict = fv
                elif kind == "sequential":
                    sec.sentence = f"{sec.sentence} The finding is {fv}."
            sec.counts = sec.counts and _about_model(kind, part)
            if sec.counts:
                sec.entries = _entries(kind, part, sec.question, label or kind,
                                       sec.decided or sec.verdict)
                if kind == "audit":
                    _add_time(sec, part, source)
            sections.append(sec)
    if unknown:
        raise DataError(
            f"Cannot tell which fairprobe command wrote {', '.join(unknown)}: expected a result "
            f"JSON with 'schema' and 'kind' (the --json output of audit, sequential, radius, "
            f"twosource, collab or demo)."
        )
    used: set[str] = set()
    for s in sections:
        s.anchor = _anchor(s.title, used)
        s.figures = [bounded_spec(f) for f in s.figures]  # captions and alt text cut
    _note_headline_use(sections)
    overall = overall_verdict(sections)
    headline = _headline(sections)
    questions, tally = _question_table(sections)
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
        questions=questions,
        tally=tally,
    )


def _question_table(sections: Sequence[Section]) -> tuple[list[dict[str, Any]], str]:
    """One row per finding offered to the headline, numbered by question: the section it is in,
    its finding at its own level, whether it is counted, the level it was recomputed at and
    its verdict there, and the question's combined verdict."""
    from fairprobe.report.verdict import finding_text, interval_text
    from fairprobe.stats.headline import combine

    pairs = [(s, e) for s in sections if s.counts and s.kind not in _NOT_VERDICTS
             for e in s.entries]
    hd = family_headline([e for _, e in pairs])
    number: dict[str, int] = {}
    per_q: dict[str, list[str]] = {}
    for c in hd.entries:
        number.setdefault(c.question, len(number) + 1)
        per_q.setdefault(c.question, []).append(c.verdict)
    rows = []
    for (sec, e), c in zip(pairs, hd.entries, strict=True):
        f = e.finding
        rows.append({
            "question": number[c.question],
            "finding": c.label or sec.kind,
            "section": sec.title,
            "anchor": sec.anchor,
            "source": sec.source,
            "own": finding_text(f) if f is not None else (e.label or e.verdict or "no finding"),
            "own_interval": interval_text(f) if f is not None else "",
            "own_verdict": f.verdict if f is not None else (e.verdict or "undetermined"),
            "counted": c.status,
            "why": c.why,
            "level": (1.0 - c.alpha) if c.status != "not counted" else None,
            "verdict_at_level": c.verdict,
            "question_verdict": combine(per_q[c.question]),
        })
    tally = (f"{hd.questions} question{'' if hd.questions == 1 else 's'}: {hd.unfair} unfair, "
             f"{hd.fair} fair, {hd.undetermined} undetermined")
    return rows, tally
