"""``GroupCounts``: the sufficient statistics of every fairness rate, per group (and window).

Every rate an audit reports is a ratio of sums over the rows of a group: counts of the
``(y_pred, y_true)`` cells, weighted sums and sums of squared weights (Kish's effective size),
sums of scores and of squared scores. Those sums are all a :class:`~fairprobe.stats.frame.AuditFrame`
needs, they add (the counts of two batches are the sum of their counts), and their size is the
number of groups, not of rows. This module holds them; :mod:`fairprobe.scale.engine` computes
them in one pass with DuckDB, pandas or Dask.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fairprobe.errors import DataError

__all__ = ["COUNTS_SCHEMA", "WINDOW", "CountSpec", "GroupCounts", "sum_columns", "weight_cells"]

#: Schema tag of a saved counts file.
COUNTS_SCHEMA = "fairprobe.counts/1"
#: Name of the window-start key column (when a time column is given).
WINDOW = "window"


@dataclass(frozen=True)
class CountSpec:
    """Which columns are counted, and how.

    Attributes
    ----------
    group_cols : tuple of str
        Sensitive columns; each combination that occurs is a group.
    y_pred : str
        Decisions column (0/1, booleans, or labels with ``pos_label``).
    y_true, score, weight : str, optional
        True labels, scores, instance weights.
    pos_label : scalar, optional
        The positive label of ``y_pred`` and ``y_true`` (as in :class:`AuditFrame`).
    time_col, window : str, optional
        Timestamp column and window width (``"1D"``, ``"7D"``, ``"12H"``, ``"2W"``).
    window_origin : str, optional
        Where windows start: ``window_origin + k * width`` (an ISO time, ``--window-origin``).
        Unset, :func:`fairprobe.scale.count` sets it to midnight (UTC) of the data's first day,
        so that ``--window 7D`` on data starting on a Wednesday gives windows from that
        Wednesday; the counts it returns record the origin used (a monitor keeps it).
    """

    group_cols: tuple[str, ...]
    y_pred: str
    y_true: str | None = None
    score: str | None = None
    weight: str | None = None
    pos_label: Any = None
    time_col: str | None = None
    window: str | None = None
    window_origin: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "group_cols", tuple(str(c) for c in self.group_cols))
        if not self.group_cols or len(set(self.group_cols)) != len(self.group_cols):
            raise DataError(f"group columns must be one or more distinct names; got "
                            f"{list(self.group_cols)}.")
        if (self.time_col is None) != (self.window is None):
            raise DataError("a time column and a window go together: give both (--time-col and "
                            "--window) or neither.")
        if self.window is not None:
            window_width(self.window)
        if self.window_origin is not None:
            if self.window is None:
                raise DataError("--window-origin goes with --time-col and --window.")
            object.__setattr__(self, "window_origin", parse_origin(self.window_origin))
        if WINDOW in self.group_cols:
            raise DataError(f"{WINDOW!r} is reserved for the window start: rename that column.")

    @property
    def keys(self) -> tuple[str, ...]:
        """Key columns of the counts table (the window first, when there is one)."""
        return ((WINDOW,) if self.window is not None else ()) + self.group_cols

    def to_dict(self) -> dict[str, Any]:
        return {"group_cols": list(self.group_cols), "y_pred": self.y_pred,
                "y_true": self.y_true, "score": self.score, "weight": self.weight,
                "pos_label": _plain(self.pos_label), "time_col": self.time_col,
                "window": self.window, "window_origin": self.window_origin}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CountSpec:
        return cls(group_cols=tuple(d["group_cols"]), y_pred=d["y_pred"], y_true=d.get("y_true"),
                   score=d.get("score"), weight=d.get("weight"), pos_label=d.get("pos_label"),
                   time_col=d.get("time_col"), window=d.get("window"),
                   # documents written before windows had an origin bucketed from the epoch
                   window_origin=d.get("window_origin", "1970-01-01T00:00:00"
                                       if d.get("window") else None))


def parse_origin(origin: Any) -> str:
    """``--window-origin`` as a naive UTC ISO time (``2025-01-06T00:00:00``)."""
    try:
        t: Any = pd.Timestamp(origin)
    except (ValueError, TypeError):
        t = pd.NaT
    if pd.isna(t):
        raise DataError(f"--window-origin {origin!r} is not an ISO time such as 2025-01-06 or "
                        "2025-01-06T08:00.")
    if t.tzinfo is not None:
        t = t.tz_convert("UTC").tz_localize(None)
    return str(t.isoformat())


def window_width(window: str) -> pd.Timedelta:
    """``"7D"`` -> 7 days; hours (H), days (D) and weeks (W) only (fixed widths)."""
    import re

    m = re.fullmatch(r"\s*(\d+)\s*([HhDdWw])\s*", str(window))
    if m is None or int(m.group(1)) == 0:
        raise DataError(f"--window {window!r} is not a width such as 1D, 7D, 30D, 12H or 2W.")
    hours = {"h": 1, "d": 24, "w": 168}[m.group(2).lower()] * int(m.group(1))
    if hours > _MAX_WINDOW_HOURS:  # wider than any log; pandas' timestamps end in 2262
        raise DataError(f"--window {window!r} is wider than 100 years: give a width such as "
                        "1D, 7D, 30D, 12H or 2W.")
    return pd.Timedelta(hours=hours)


#: The widest window (100 years, in hours).
_MAX_WINDOW_HOURS = 100 * 366 * 24


def sum_columns(spec: CountSpec) -> tuple[str, ...]:
    """The sums kept per group for ``spec``.

    ``n`` rows, ``sp`` = sum(y_pred), ``st`` = sum(y_true), ``stp`` = sum(y_pred y_true) (the
    integer cells follow exactly by inclusion-exclusion); with weights, ``sw<cell>`` = sum(w),
    ``sq<cell>`` = sum(w^2) and ``sc<cell>`` = sum(w^3) over each ``(y_pred, y_true)`` cell
    (:func:`weight_cells`; kept per cell, not as differences, so that no float sum cancels; the
    cubes give the skewness the weighted intervals correct for); with scores ``s1`` = sum(s),
    ``s2`` = sum(s^2).
    """
    cols = ["n", "sp"]
    if spec.y_true is not None:
        cols += ["st", "stp"]
    if spec.weight is not None:
        cells = [c for c, _, _ in weight_cells(spec)]
        cols += [f"{pre}{c}" for pre in WEIGHT_SUMS for c in cells]
    if spec.score is not None:
        cols += ["s1", "s2"]
    return tuple(cols)


def weight_cells(spec: CountSpec) -> list[tuple[str, int, int | None]]:
    """The cells weighted sums are kept over: ``(suffix, y_pred, y_true)``; ``y_true`` None
    without labels (cells ``0``, ``1`` of y_pred), else ``00, 01, 10, 11`` (y_pred first)."""
    if spec.y_true is None:
        return [("0", 0, None), ("1", 1, None)]
    return [(f"{p}{t}", p, t) for p in (0, 1) for t in (0, 1)]


#: The weighted sums kept per cell: sum(w), sum(w^2), sum(w^3).
WEIGHT_SUMS = ("sw", "sq", "sc")
#: Sums that are integer counts (kept as int64, exact).
INTEGER_SUMS = frozenset({"n", "sp", "st", "stp"})


@dataclass(frozen=True)
class GroupCounts:
    """Sums per group (and window) of one set of columns; they merge by addition.

    Attributes
    ----------
    spec : CountSpec
        The columns counted.
    table : DataFrame
        One row per (window,) group that occurs: the key columns (``spec.keys``) and the sums
        (:func:`sum_columns`), sorted by key.
    sources : tuple of dict
        Files counted (``path``, ``size``, ``mtime_ns``), so that a rerun on a growing directory
        reads only new files; empty for in-memory frames.
    """

    spec: CountSpec
    table: pd.DataFrame
    sources: tuple[dict[str, Any], ...] = field(default=())

    def __post_init__(self) -> None:
        want = list(self.spec.keys) + list(sum_columns(self.spec))
        if list(self.table.columns) != want:
            raise DataError(f"counts table has columns {list(self.table.columns)}; expected {want}.")

    # --- sizes -----------------------------------------------------------------------------
    @property
    def n_rows(self) -> int:
        """Rows counted."""
        return int(self.table["n"].sum())

    @property
    def n_cells(self) -> int:
        """Rows of the counts table: (window,) groups that occur."""
        return len(self.table)

    # --- combining -------------------------------------------------------------------------
    def merge(self, other: GroupCounts) -> GroupCounts:
        """The counts of both: sums added per key. Both must count the same columns, and no
        file may be counted twice."""
        if not isinstance(other, GroupCounts):
            raise DataError(f"merge takes GroupCounts, not {type(other).__name__}.")
        if other.spec != self.spec:
            raise DataError(f"cannot merge counts of different columns: {self.spec.to_dict()} "
                            f"vs {other.spec.to_dict()}.")
        seen = {s["path"] for s in self.sources}
        twice = sorted(s["path"] for s in other.sources if s["path"] in seen)
        if twice:
            raise DataError(f"{twice[0]} is counted in both: merging would count it twice.")
        table = combine_tables([self.table, other.table], self.spec)
        return GroupCounts(self.spec, table, self.sources + other.sources)

    __add__ = merge

    def update(self, batch: Any, **engine_options: Any) -> GroupCounts:
        """These counts plus those of ``batch`` (a frame, a file, a directory or a glob),
        counted with :func:`fairprobe.scale.count` (``engine_options`` go there)."""
        from fairprobe.scale.engine import count

        return self.merge(count(batch, self.spec, **engine_options))

    # --- windows ---------------------------------------------------------------------------
    def windows(self) -> list[pd.Timestamp]:
        """Window starts present, in order (empty without a time column)."""
        if self.spec.window is None:
            return []
        return [pd.Timestamp(w) for w in sorted(self.table[WINDOW].unique())]

    def window(self, start: Any) -> GroupCounts:
        """The counts of one window (without the window key)."""
        if self.spec.window is None:
            raise DataError("these counts have no time windows: count with a time column.")
        sel = self.table[self.table[WINDOW] == pd.Timestamp(start)]
        if sel.empty:
            raise DataError(f"no row falls in the window starting {start}.")
        return GroupCounts(replace(self.spec, time_col=None, window=None, window_origin=None),
                           sel.drop(columns=[WINDOW]).reset_index(drop=True), self.sources)

    def marginal(self, group_cols: Sequence[str]) -> GroupCounts:
        """The counts grouped by a subset of the group columns (the window kept): sums over
        the finer groups, exact because the sums add. Count the finest groups once, then
        every coarser grouping (a subgroup search's conjunctions of features) is a small
        group-by over this table, not another pass over the rows."""
        cols = tuple(str(c) for c in group_cols)
        extra = sorted(set(cols) - set(self.spec.group_cols))
        if extra or not cols:
            raise DataError(f"marginal takes a non-empty subset of {list(self.spec.group_cols)};"
                            f" got {list(cols)}.")
        spec = replace(self.spec, group_cols=cols)
        keep = list(spec.keys) + list(sum_columns(spec))
        return GroupCounts(spec, combine_tables([self.table[keep]], spec), self.sources)

    def total(self) -> GroupCounts:
        """The counts over every window (the same counts when there is no time column)."""
        if self.spec.window is None:
            return self
        spec = replace(self.spec, time_col=None, window=None, window_origin=None)
        return GroupCounts(spec, combine_tables([self.table.drop(columns=[WINDOW])], spec),
                           self.sources)

    # --- the audit -------------------------------------------------------------------------
    def frame(self, **options: Any) -> Any:
        """An :class:`~fairprobe.stats.frame.AuditFrame` of these counts (over every window);
        ``options`` as :meth:`AuditFrame.from_counts`."""
        from fairprobe.stats.frame import AuditFrame

        return AuditFrame.from_counts(self, **options)

    # --- saving ----------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        rows = []
        for rec in self.table.itertuples(index=False):  # one row per group: small
            rows.append([_plain(v) for v in rec])
        if self.spec.window is not None:
            for r in rows:
                r[0] = pd.Timestamp(r[0]).isoformat()
        return {"schema": COUNTS_SCHEMA, "spec": self.spec.to_dict(),
                "columns": list(self.table.columns), "rows": rows,
                "sources": [dict(s) for s in self.sources]}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> GroupCounts:
        if not isinstance(d, dict) or d.get("schema") != COUNTS_SCHEMA:
            raise DataError(f"not a fairprobe counts document (schema {COUNTS_SCHEMA!r}).")
        spec = CountSpec.from_dict(d["spec"])
        if spec.weight is not None and not any(str(c).startswith("sc") for c in d["columns"]):
            raise DataError("these weighted counts lack the per-cell sums of cubed weights (sc...) "
                            "the weighted intervals need: count the rows again.")
        table = pd.DataFrame(d["rows"], columns=d["columns"])
        if spec.window is not None and len(table):
            table[WINDOW] = pd.to_datetime(table[WINDOW])
        return cls(spec, _typed(table, spec), tuple(d.get("sources", ())))

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the counts as JSON (integer counts exact, floats round-trip exactly)."""
        from fairprobe._io import write_file

        return write_file(path, json.dumps(self.to_dict()).encode(), what="counts file")

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> GroupCounts:
        p = Path(path)
        if not p.is_file():
            raise DataError(f"counts file {str(p)!r} does not exist.")
        try:
            doc = json.loads(p.read_text())
        except (OSError, ValueError) as exc:
            raise DataError(f"cannot read counts file {p.name}: {exc}") from None
        return cls.from_dict(doc)


def combine_tables(tables: Iterable[pd.DataFrame], spec: CountSpec) -> pd.DataFrame:
    """Partial counts tables (any key order, repeated keys) as one sorted counts table."""
    keys = list(spec.keys)
    frames = [t for t in tables if len(t)]
    cols = keys + list(sum_columns(spec))
    if not frames:
        return _typed(pd.DataFrame(columns=cols), spec)
    allt = pd.concat(frames, ignore_index=True)
    out = allt.groupby(keys, sort=False, dropna=False, observed=True)[
        list(sum_columns(spec))].sum().reset_index()
    if out[keys].isna().any().any():  # missing keys: left unsorted for the caller's error
        return _typed(out[cols], spec)
    return _typed(sort_keys(out, keys)[cols], spec)


def sort_keys(table: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    """Rows in the order :func:`fairprobe.stats.groups.group_labels` gives groups: by each key
    column's sorted values, the first column first."""
    from fairprobe.stats.groups import _sort_key

    ranks = []
    for k in keys:
        vals = [_plain(v) for v in table[k].tolist()]
        uniq = list(dict.fromkeys(vals))
        order = sorted(range(len(uniq)), key=_sort_key(uniq))
        rank = {uniq[i]: r for r, i in enumerate(order)}
        ranks.append(np.array([rank[v] for v in vals], dtype=np.int64))
    idx = np.lexsort(ranks[::-1]) if ranks else np.arange(len(table))
    return table.iloc[idx].reset_index(drop=True)


def _typed(table: pd.DataFrame, spec: CountSpec) -> pd.DataFrame:
    """One dtype per column whatever the engine: group keys as Python values (object), the
    window as ``datetime64[ns]``, integer sums int64, float sums float64."""
    for k in spec.keys:
        if k == WINDOW:
            table[k] = pd.to_datetime(table[k]).astype("datetime64[ns]")
        else:  # astype(object) holds Python scalars; missing values become None
            col = table[k]
            table[k] = col.astype(object).where(col.notna().to_numpy(), None)
    for c in sum_columns(spec):
        table[c] = table[c].astype(np.int64 if c in INTEGER_SUMS else np.float64)
    return table.reset_index(drop=True)


def _plain(v: Any) -> Any:
    if isinstance(v, np.generic):
        return v.item()
    return v
