"""Proxy audits (race estimated by BISG/BIFSG): the bounds that decide, the other estimates with
their assumptions, the match rates and the proxy's calibration where race is recorded."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fairprobe.report._read import Doc, fmt, mapping
from fairprobe.report.document import Section, Table

__all__ = ["adapt_proxy", "comparison_rows", "match_sentence"]


def _iv(f: Mapping[str, Any]) -> str:
    iv = mapping(f.get("interval"))
    return f"[{fmt(iv.get('low'), 3)}, {fmt(iv.get('high'), 3)}]"


def match_sentence(match: Mapping[str, Any]) -> str:
    """The match rates as one sentence (terminal, report): what was found, what was done."""
    n = int(match.get("rows") or 0)
    parts = [f"surnames found for {fmt(match.get('surname_matched_rate'), 3)} of {n} rows",
             f"places for {fmt(match.get('geography_matched_rate'), 3)}"]
    if "first_name_matched_rate" in match:
        parts.append(f"first names for {fmt(match.get('first_name_matched_rate'), 3)}")
    parts.append(f"{int(match.get('excluded') or 0)} rows excluded (neither found)")
    return "; ".join(parts) + f". Unmatched rows: {match.get('unmatched_rule', '')}."


def comparison_rows(doc: Doc) -> list[list[str]]:
    """One row per comparison: groups, the bounds (decide), weighted, BIRDiE, verdict."""
    rows = []
    for c in doc.get("comparisons") or []:
        if not isinstance(c, Mapping):
            continue
        f = mapping(c.get("finding"))
        est = mapping(c.get("estimates"))
        w = mapping(mapping(est.get("weighted")).get("finding"))
        b = mapping(mapping(est.get("birdie")).get("finding"))
        reg = c.get("bounds", {}).get("region") if isinstance(c.get("bounds"), Mapping) else None
        rows.append([
            f"{c.get('group')} - {c.get('reference')}",
            f"[{fmt(reg[0], 3)}, {fmt(reg[1], 3)}]" if isinstance(reg, list) else "-",
            _iv(f),
            f"{fmt(w.get('estimate'), 3)} {_iv(w)}" if w else "-",
            f"{fmt(b.get('estimate'), 3)} {_iv(b)}" if b else "-",
            str(f.get("verdict", "")),
        ])
    return rows


def adapt_proxy(doc: Doc, source: str, label: str) -> Section:
    f = mapping(doc.get("finding"))
    verdict = str(doc.get("verdict") or f.get("verdict") or "")
    groups = mapping(f.get("question")).get("groups") or []
    method = str(doc.get("method", "bisg")).upper()
    sentence = (f"Race is not recorded; estimated by {method}. The gap in approval rates "
                f"{' - '.join(map(str, groups))} lies in {_iv(f)} at level "
                f"{fmt(mapping(f.get('interval')).get('level'), 3)} if the proxy is "
                f"calibrated: {verdict}.")
    if f.get("reason"):
        sentence += f" {f['reason']}."
    tables = [Table(
        caption=("Each comparison: the identification region estimated from the data, its "
                 "confidence interval (decides the verdict), the proxy-weighted and BIRDiE "
                 "estimates (shown, not counted: each rests on an assumption stated below)"),
        header=["gap", "region", "bounds interval", "weighted", "BIRDiE", "verdict"],
        rows=comparison_rows(doc))]
    val = mapping(doc.get("validation"))
    notes: list[str] = [match_sentence(mapping(doc.get("match")))]
    if val:
        cal = mapping(val.get("calibration"))
        notes.append(f"Calibration on {val.get('recorded')} rows with recorded race "
                     f"({val.get('column')}): Brier score {fmt(cal.get('brier'), 3)}; largest "
                     "gap between predicted and observed share by bin: "
                     + ", ".join(f"{k} {fmt(v, 3)}" for k, v in
                                 mapping(cal.get("max_gap")).items()) + ".")
        inb = mapping(val.get("in_bounds"))
        if inb:
            notes.append(f"The {inb.get('rows')} rows with recorded race enter the bounds as "
                         f"known races, which holds if {inb.get('assumption')}.")
        direct = val.get("direct")
        if isinstance(direct, list) and direct:
            tables.append(Table(
                caption="By recorded race (every row recorded): what the file says directly",
                header=["gap", "estimate", "interval", "verdict"],
                rows=[[f"{d.get('group')} - {d.get('reference')}", fmt(d.get("estimate"), 3),
                       f"[{fmt(d.get('low'), 3)}, {fmt(d.get('high'), 3)}]",
                       str(d.get("verdict"))] for d in direct if isinstance(d, Mapping)]))
    a = mapping(doc.get("assumptions"))
    assumptions = [f"Bounds (decide the verdict): {a.get('bounds', '')}.",
                   f"Weighted estimate: {a.get('weighted', '')}.",
                   f"BIRDiE estimate: {a.get('birdie', '')}."]
    return Section(kind="proxy", title=label or f"Audit by proxied race ({method})",
                   source=source, verdict=verdict, sentence=sentence,
                   short=f"{verdict} on the bounds {_iv(f)}", tables=tables,
                   assumptions=assumptions, notes=notes)
