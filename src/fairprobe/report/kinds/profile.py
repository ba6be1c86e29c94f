"""Regulatory profiles (``audit --predictions --profile``): one table per category family, laid
out as the rule's published summaries are, with fairprobe's additions in marked columns.

The same tables are the terminal output, the CSV (:func:`profile_frame`) and the report section.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from fairprobe.report._read import Doc, fmt
from fairprobe.report.document import Section, Table

__all__ = ["adapt_profile", "profile_frame", "profile_tables"]

#: The marker of a column the rule does not ask for.
ADDED = "[fairprobe]"

TITLES = {"nyc-ll144": "NYC Local Law 144 bias audit (6 RCNY §5-301)",
          "ugesp": "Four-fifths rule (29 CFR 1607.4(D))",
          "cfpb-air": "Fair-lending adverse impact ratio and SMD"}


def _families(doc: Doc) -> list[tuple[str, list[Mapping[str, Any]], Mapping[str, Any]]]:
    if doc.get("profile") == "nyc-ll144":
        return [(str(f.get("family")), [r for r in f.get("rows") or []], f)
                for f in doc.get("families") or [] if isinstance(f, Mapping)]
    return [(", ".join(map(str, doc.get("columns") or [])), list(doc.get("rows") or []), doc)]


def _iv(lo: Any, hi: Any) -> str:
    return "-" if lo is None or hi is None else f"[{fmt(lo, 3)}, {fmt(hi, 3)}]"


def _row(profile: str, r: Mapping[str, Any]) -> list[str]:
    ir = "excluded (<2%)" if r.get("excluded") else (
        "-" if r.get("impact_ratio") is None else f"{r['impact_ratio']:.3f}")
    base = [str(r.get("category")), fmt(r.get("n")), fmt(r.get("selected")),
            f"{r['rate']:.3f}", ir]
    if profile == "nyc-ll144":
        base.append("yes" if r.get("small") else "")
    elif profile == "ugesp":
        base += ["yes" if r.get("small") else "",
                 fmt(r.get("flagged")) if r.get("flagged") is not None else "-",
                 "-" if r.get("fisher_p") is None else fmt(r["fisher_p"], 3),
                 "-" if r.get("z") is None else f"{r['z']:.2f}",
                 "-" if r.get("shortfall") is None else fmt(r["shortfall"]),
                 "-" if r.get("one_flips") is None else fmt(r["one_flips"]),
                 "yes" if r.get("small_numbers") else ""]
    else:
        base += ["-" if r.get("air_flag") is None else fmt(r["air_flag"]),
                 "-" if r.get("fisher_p") is None else fmt(r["fisher_p"], 3),
                 "-" if r.get("shortfall") is None else fmt(r["shortfall"]),
                 "-" if r.get("mean_score") is None else f"{r['mean_score']:.3f}",
                 "-" if r.get("smd") is None else f"{r['smd']:.3f}",
                 "-" if r.get("t_p") is None else fmt(r["t_p"], 3),
                 "-" if r.get("smd_flag") is None else fmt(r["smd_flag"])]
    return base + [_iv(r.get("rate_low"), r.get("rate_high")),
                   _iv(r.get("ratio_low"), r.get("ratio_high")),
                   "yes" if r.get("decidably_below") else ""]


def _header(doc: Doc) -> list[str]:
    profile = str(doc.get("profile"))
    rate = "scoring rate" if doc.get("rate") == "scoring" else "selection rate"
    chosen = "scored above median" if doc.get("rate") == "scoring" else "selected"
    if profile == "cfpb-air":
        head = ["group", "applicants", "favourable", "rate", "AIR", "AIR flag", "Fisher p",
                "shortfall", "mean score", "SMD", "t-test p", "SMD flag"]
    else:
        head = ["category", "applicants", chosen, rate, "impact ratio"]
        head += (["under 2%"] if profile == "nyc-ll144" else
                 ["under 2%", "4/5 flag", "Fisher p", "Z", "shortfall", "one flips", "small numbers"])
    thr = doc.get("threshold", doc.get("air_threshold", 0.8))
    return head + [f"rate interval {ADDED}", f"ratio interval {ADDED}",
                   f"decidably < {fmt(thr)} {ADDED}"]


def profile_tables(doc: Doc) -> list[Table]:
    """One table per category family (a single table for UGESP and CFPB)."""
    profile = str(doc.get("profile"))
    out = []
    for fam, rows, meta in _families(doc):
        extra = ""
        if "unknown" in meta:
            extra = f"; {fmt(meta.get('unknown'))} individual(s) of unknown category left out"
        comp = meta.get("comparison", doc.get("highest", doc.get("reference")))
        out.append(Table(caption=f"{fam}: ratios against {comp}{extra}", header=_header(doc),
                         rows=[_row(profile, r) for r in rows if isinstance(r, Mapping)]))
    return out


def profile_frame(doc: Doc) -> pd.DataFrame:
    """Every row of every family, one CSV line each, with the raw counts and values."""
    recs = []
    for fam, rows, _ in _families(doc):
        for r in rows:
            recs.append({"profile": doc.get("profile"), "family": fam, **dict(r)})
    return pd.DataFrame(recs)


def _facts(doc: Doc) -> list[tuple[str, str]]:
    facts = [("profile", str(doc.get("profile"))), ("applicants", fmt(doc.get("applicants"))),
             ("unknown category (left out)", fmt(doc.get("unknown")))]
    if doc.get("median_score") is not None:
        facts.append(("median score of the sample", fmt(doc.get("median_score"), 4)))
    for k, v in (doc.get("summary") or {}).items():
        if v is not None:
            facts.append((k.replace("_", " "), str(v)))
    facts.append(("intervals [fairprobe]",
                  f"{doc.get('interval')} at {fmt(doc.get('confidence_level'))}"))
    return facts


def adapt_profile(doc: Doc, source: str, label: str) -> Section:
    profile = str(doc.get("profile"))
    below = [str(r.get("category")) for _, rows, _ in _families(doc) for r in rows
             if isinstance(r, Mapping) and r.get("decidably_below")]
    verdict = "unfair" if below else "undetermined"
    sentence = (f"The rule's numbers are the point values in the tables; fairprobe adds exact "
                f"intervals: {len(below)} ratio(s) decidably below the threshold"
                + (f" ({', '.join(below[:6])})." if below else "."))
    return Section("profile", label or TITLES.get(profile, profile), source, verdict, sentence,
                   f"{len(below)} ratio(s) decidably below the threshold", _facts(doc), [],
                   profile_tables(doc),
                   ["The rows are the individuals the tool assessed; the rates are their shares "
                    "(no sampling is needed for the rule's numbers). The intervals read the "
                    "rows as draws from the population the conclusion is about."], [])
