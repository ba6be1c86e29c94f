"""``--csv`` outputs: the by-group and per-finding tables a command prints, as CSV.

One row per group (every-group audits: size, ``too_small``, and per rate its value, denominator
and interval) or per finding (a metric's estimate, interval and verdict). Written through the
same atomic writer as ``--json`` (:func:`fairprobe.report.jsonio.write_text`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

__all__ = ["findings_table", "group_table", "write_csv"]


def write_csv(path: str | os.PathLike[str], table: pd.DataFrame) -> Path:
    """Write ``table`` as CSV (no index column, ``.17g`` floats: the numbers the JSON holds)."""
    from fairprobe.report.jsonio import write_text

    return write_text(path, table.to_csv(index=False, float_format="%.17g",
                                         lineterminator="\n"), "CSV output")


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


def findings_table(rows: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """A per-finding table from dicts (one per metric or finding), columns in first-seen order."""
    return pd.DataFrame([dict(r) for r in rows])
