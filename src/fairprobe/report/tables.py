"""``--csv`` outputs: the by-group and per-finding tables a command prints, as CSV.

One row per group (every-group audits: size, ``too_small``, and per rate its value, denominator
and interval) or per finding (a metric's estimate, interval and verdict). Written through the
same atomic writer as ``--json`` (:func:`fairprobe.report.jsonio.write_text`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

__all__ = ["finding_row", "findings_table", "group_table", "spreadsheet_safe", "write_csv"]


#: A text cell starting with one of these is read as a formula by spreadsheets (OWASP's CSV
#: injection rule: ``=``, ``+``, ``-``, ``@``, tab, carriage return).
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
#: Characters that a terminal or a spreadsheet would act on instead of showing: C0 controls but
#: newline, DEL, C1 controls and the bidirectional overrides and isolates (U+202A-U+202E,
#: U+2066-U+2069), which can make a group label read as another.
_HIDDEN = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def spreadsheet_safe(cell: Any) -> Any:
    """A text cell as a spreadsheet shows it and never runs it.

    Hidden and control characters are written as ``\\uXXXX`` escapes; a cell that would start a
    formula gets a leading ``'`` (OWASP's rule), unless it is a number (``-0.343`` stays a
    number). Non-text cells are returned unchanged.
    """
    if not isinstance(cell, str):
        return cell
    text = _HIDDEN.sub(lambda m: f"\\u{ord(m.group()):04x}", cell)
    if text.startswith(_FORMULA_START):
        try:
            float(text)
        except ValueError:
            return "'" + text
    return text


def write_csv(path: str | os.PathLike[str], table: pd.DataFrame) -> Path:
    """Write ``table`` as CSV (no index column; floats as their shortest exact repr, the numbers
    the JSON holds). Text cells (group labels come from the audited data) pass through
    :func:`spreadsheet_safe`, so opening the file in a spreadsheet never runs a formula."""
    from fairprobe.report.jsonio import write_text

    safe = table.copy()
    safe.columns = [spreadsheet_safe(str(c)) for c in safe.columns]
    for col in safe.columns:
        if not pd.api.types.is_numeric_dtype(safe[col]):  # object or string dtype
            safe[col] = safe[col].map(spreadsheet_safe)
    return write_text(path, safe.to_csv(index=False, lineterminator="\n"), "CSV output")


def group_table(result: Any) -> pd.DataFrame:
    """The by-group table of an every-group audit (a :class:`~fairprobe.stats.frame.AuditFrame`):
    the group label, one column per group column, then :meth:`AuditFrame.to_frame`'s columns."""
    frame = result.to_frame()
    labels = [str(x) for x in result.groups.labels]
    out = pd.DataFrame({"group": labels})
    idx = frame.index
    if isinstance(idx, pd.MultiIndex):
        for i, name in enumerate(idx.names):
            out[str(name)] = [str(v) for v in idx.get_level_values(i)]
    elif idx.name is not None and str(idx.name) != "group":
        out[str(idx.name)] = [str(v) for v in idx]
    body = frame.reset_index(drop=True)
    return pd.concat([out, body], axis=1)


def _flatten(d: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, Mapping):
            out.update(_flatten(v, key + "."))
        elif isinstance(v, list | tuple):
            if all(not isinstance(x, Mapping | list | tuple) for x in v):
                out[key] = ", ".join(map(str, v))
        else:
            out[key] = v
    return out


def findings_table(rows: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """A per-finding table from dicts (one per metric or finding): nested keys become dotted
    columns (``interval.low``), lists of scalars are joined, lists of objects left out;
    columns in first-seen order."""
    return pd.DataFrame([_flatten(r) for r in rows])


def finding_row(d: Mapping[str, Any]) -> dict[str, Any]:
    """One row of a per-finding table from a metric's JSON (``estimate``, ``interval``,
    ``threshold``, ``verdict``, ``groups``, ``counts``), as the terminal prints it."""
    iv = d.get("interval") or {}
    groups = d.get("groups") or {}
    counts = d.get("counts") or {}
    row: dict[str, Any] = {
        "metric": d.get("metric"), "group_a": groups.get("a"), "group_b": groups.get("b"),
        "estimate": d.get("estimate"), "low": iv.get("low"), "high": iv.get("high"),
        "level": iv.get("level"), "interval": iv.get("method"), "threshold": d.get("threshold"),
        "verdict": d.get("verdict"),
    }
    row.update({f"count_{k}": v for k, v in counts.items()})
    return row
