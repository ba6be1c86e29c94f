"""Reading an audit set for the radius: a table, or a fairprobe audit result with per-instance values.

Accepted inputs:

* CSV (``.csv``, ``.tsv``) or Parquet (``.parquet``, ``.pq``): columns named by ``value_col``,
  ``group_col`` and optionally ``weight_col``;
* JSON with a ``per_instance`` list — the per-instance section any fairprobe audit result may
  carry — of objects ``{"value": float, "group": label[, "weight": float]}``; ``value_col`` /
  ``group_col`` / ``weight_col`` name the keys when they differ (defaults ``value``, ``group``,
  ``weight``). A top-level JSON list of such objects is accepted as well. An every-group audit
  result is read with the audit's own scope: only the groups its demographic-parity summary
  compared (groups it left out as too small are left out here too, and
  :func:`read_audit_scope` lists them), so the radius examines the conclusion the audit states.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fairprobe import metrics as _metrics
from fairprobe.errors import DataError

__all__ = ["read_audit_input", "read_audit_scope"]


def _scope_of(doc: Any) -> tuple[list[str], dict[str, str]] | None:
    """Groups compared and left out by an every-group audit's selection-rate summary."""
    sums = doc.get("summaries") if isinstance(doc, dict) else None
    if not isinstance(sums, dict):
        return None
    for name in (_metrics.DP.name, _metrics.DI.name):
        s = sums.get(name)
        if isinstance(s, dict) and isinstance(s.get("compared"), list):
            exc = s.get("excluded")
            if not isinstance(exc, dict):
                exc = {}
            return [str(g) for g in s["compared"]], {str(k): str(v) for k, v in exc.items()}
    return None


def read_audit_scope(path: str | Path) -> tuple[list[str], dict[str, str]] | None:
    """``(compared groups, {left-out group: reason})`` of an every-group audit result, or None
    for any other input."""
    p = Path(path)
    if p.suffix.lower() != ".json" or not p.exists():
        return None
    try:
        with open(p, encoding="utf-8") as fh:
            return _scope_of(json.load(fh))
    except (OSError, ValueError):
        return None


def _frame(path: Path) -> pd.DataFrame:
    suffix = path.suffix.lower()
    try:
        if suffix in (".parquet", ".pq"):
            return pd.read_parquet(path)
        if suffix == ".json":
            with open(path, encoding="utf-8") as fh:
                doc = json.load(fh)
            rows: Any = doc.get("per_instance") if isinstance(doc, dict) else doc
            if not isinstance(rows, list) or not rows:
                raise DataError(
                    f"{path} holds no 'per_instance' list of {{value, group}} objects; write the "
                    "audit result with per-instance values or give a CSV/Parquet table."
                )
            df = pd.DataFrame(rows)
            scope = _scope_of(doc)
            if scope is not None and "group" in df.columns:
                df = df[df["group"].astype(str).isin(scope[0])].reset_index(drop=True)
            return df
        return pd.read_csv(path, sep="\t" if suffix == ".tsv" else ",")
    except DataError:
        raise
    except json.JSONDecodeError as exc:
        raise DataError(f"{path} is not valid JSON: {exc.msg} at line {exc.lineno}.") from None
    except (ValueError, OSError, pd.errors.ParserError) as exc:
        raise DataError(f"Cannot read {path}: {str(exc).splitlines()[0]}") from None


def read_audit_input(
    path: str | Path,
    value_col: str | None = None,
    group_col: str | None = None,
    weight_col: str | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """``(values, groups, weights or None)`` from a table or a per-instance JSON (see module)."""
    p = Path(path)
    if not p.exists():
        raise DataError(f"File not found: {p}.")
    is_json = p.suffix.lower() == ".json"
    if not is_json and (value_col is None or group_col is None):
        raise DataError("--value-col and --group-col are required for a table input.")
    df = _frame(p)
    vcol = value_col or "value"
    gcol = group_col or "group"
    wcol = weight_col or ("weight" if is_json and "weight" in df.columns else None)
    for col, flag in ((vcol, "--value-col"), (gcol, "--group-col"), (wcol, "--weight-col")):
        if col is not None and col not in df.columns:
            listed = ", ".join(map(str, df.columns[:12]))
            raise DataError(f"{p} has no column {col!r} ({flag}); columns: {listed}.")
    try:
        values = pd.to_numeric(df[vcol], errors="raise").to_numpy(dtype=float)
    except (ValueError, TypeError):
        raise DataError(f"column {vcol!r} of {p} must be numeric.") from None
    weights = None
    if wcol is not None:
        try:
            weights = pd.to_numeric(df[wcol], errors="raise").to_numpy(dtype=float)
        except (ValueError, TypeError):
            raise DataError(f"column {wcol!r} of {p} must be numeric.") from None
    groups = df[gcol].to_numpy()
    if pd.isna(df[gcol]).any():
        raise DataError(f"column {gcol!r} of {p} has missing groups; every row needs one.")
    return values, groups, weights
