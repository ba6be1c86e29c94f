"""The counting engines: one streaming pass of group-by sums over files or frames.

Three engines compute the same :class:`~fairprobe.scale.counts.GroupCounts`:

* ``duckdb`` (default when installed): one ``GROUP BY`` (or ``GROUPING SETS``) query over
  ``read_parquet`` / ``read_csv`` of a file, a directory or a glob, or over a pandas / Arrow /
  Polars frame in place. DuckDB streams the row groups through a hash aggregate on every core;
  memory is bounded by the number of groups (and ``memory_limit``), never by the rows.
* ``pandas``: the same sums with ``groupby().sum()`` on a frame in memory (the light core).
* ``dask``: the pandas sums on every partition of a ``dask.dataframe`` (on a ``LocalCluster`` or
  the scheduler given), merged on the client: the partial counts add.

The input checks of :class:`~fairprobe.stats.frame.AuditFrame` (missing values, labels other
than 0/1, more than two labels, missing group values) are aggregates of the same pass, so bad
input fails in one line without a second read. Why DuckDB rather than Polars: ``docs/scale.md``.
"""

from __future__ import annotations

import contextlib
import glob as _glob
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fairprobe.errors import DataError, InvalidParameterError
from fairprobe.scale.contract import RESERVED_PREFIX
from fairprobe.scale.counts import (
    WINDOW,
    CountSpec,
    GroupCounts,
    combine_tables,
    sum_columns,
    weight_cells,
    window_width,
)

__all__ = ["ENGINES", "Source", "count", "count_grouping_sets", "engine_name", "resolve_source"]

ENGINES = ("auto", "duckdb", "pandas", "dask")
_PARQUET = (".parquet", ".pq")
_CSV = (".csv", ".csv.gz", ".tsv")
#: The epoch the engines bucket time from; a count with ``window_origin`` unset buckets by
#: :func:`_atom_spec` from here and rolls the atoms up into windows from the data's first day.
_ORIGIN = pd.Timestamp("1970-01-01")

#: A text time value the contract accepts: ISO 8601 date, optional time (hours 00-23) and
#: optional UTC offset. Both engines test this one pattern before parsing, so that a value
#: one parser would guess at (``21/02/2025``, ``20250101``, ``24:00``) is refused by both.
TIME_PATTERN = (r"\s*\d{4}-\d{1,2}-\d{1,2}"
                r"([T ]([01]\d|2[0-3]):[0-5]\d(:[0-5]\d(\.\d{1,9})?)?)?"
                r"\s*(Z|[+-]([01]\d|2[0-3])(:?[0-5]\d)?)?\s*")

#: The flag of each counted column's role, for one-line errors.
_ROLES = {"y_pred": ("The prediction column", "--y-pred-col"),
          "y_true": ("The label column", "--y-true-col"),
          "score": ("The score column", "--score-col"),
          "weight": ("The weight column", "--sample-weight-col"),
          "time_col": ("The time column", "--time-col")}


def _role(spec: CountSpec, role: str) -> str:
    what, flag = _ROLES[role]
    return f"{what} {getattr(spec, role)!r} ({flag})"


# --- sources ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Source:
    """What to count: files of one format, or a frame in memory."""

    files: tuple[Path, ...] = ()
    fmt: str = ""  # "parquet" or "csv" for files
    frame: Any = None  # pandas DataFrame or Arrow table
    name: str = "frame"

    def describe(self) -> list[dict[str, Any]]:
        """``path``, ``size``, ``mtime_ns``, ``dev`` and ``ino`` of every file (what a rerun
        compares)."""
        out = []
        for f in self.files:
            st = f.stat()
            # device and inode identify the file whatever its name (a renamed or linked file)
            out.append({"path": str(f), "size": st.st_size, "mtime_ns": st.st_mtime_ns,
                        "dev": st.st_dev, "ino": st.st_ino})
        return out


def _format_of(path: Path) -> str | None:
    name = path.name.lower()
    if name.endswith(_PARQUET):
        return "parquet"
    if name.endswith(_CSV):
        return "csv"
    return None


def list_files(source: str | os.PathLike[str]) -> list[Path]:
    """The data files of a file, a directory (every Parquet/CSV file below it) or a glob."""
    s = str(source)
    p = Path(s)
    if p.is_file():  # a file that exists is read as named, glob characters and all
        return [p.resolve()]
    if os.path.lexists(p) and not p.is_dir():
        # a FIFO (which would block), a device or a socket: the table reader's one check
        from fairprobe._io import _check_input

        _check_input(p, "--predictions")
    if p.is_dir():
        found = [q for q in p.rglob("*") if q.is_file() and _format_of(q) is not None
                 and not q.name.startswith((".", "_"))]
    elif any(ch in s for ch in "*?["):
        found = [Path(q) for q in _glob.glob(s, recursive=True) if Path(q).is_file()]
    else:
        raise DataError(f"--predictions {s!r} is not a file, a directory or a glob that exists.")
    if not found:
        raise DataError(f"--predictions {s!r} holds no .parquet or .csv file.")
    from fairprobe.scale.contract import unique_files

    return unique_files(found)


def resolve_source(source: Any, files: Sequence[Path] | None = None) -> Source:
    """A path, directory, glob, pandas / Arrow / Polars frame as a :class:`Source`."""
    if files is not None or isinstance(source, str | os.PathLike):
        paths = list(files) if files is not None else list_files(source)
        fmts = {_format_of(p) for p in paths}
        if None in fmts:
            bad = next(p for p in paths if _format_of(p) is None)
            raise DataError(f"{bad.name} must end in .parquet or .csv (.csv.gz, .tsv).")
        if len(fmts) > 1:
            raise DataError(f"{source} mixes Parquet and CSV files: keep one format per source.")
        from fairprobe.scale.contract import check_headers, unique_files

        fmt = str(fmts.pop()) if fmts else "parquet"
        paths = unique_files(paths)
        check_headers(paths, fmt)
        return Source(files=tuple(paths), fmt=fmt, name=str(source))
    if isinstance(source, pd.DataFrame):
        return Source(frame=source)
    mod = type(source).__module__.split(".")[0]
    if mod == "polars" and hasattr(source, "to_arrow"):
        return Source(frame=source.to_arrow(), name="polars frame")
    if mod == "pyarrow" and hasattr(source, "schema"):
        return Source(frame=source, name="arrow table")
    raise DataError(f"cannot count a {type(source).__name__}: pass a path, a directory, a glob, "
                    "or a pandas / Arrow / Polars frame.")


def engine_name(engine: str) -> str:
    """``auto`` -> ``duckdb`` when installed, else ``pandas``."""
    if engine not in ENGINES:
        raise InvalidParameterError(f"--engine must be one of {', '.join(ENGINES)}; got "
                                    f"{engine!r}.")
    if engine != "auto":
        return engine
    try:
        import duckdb  # noqa: F401
    except ImportError:
        return "pandas"
    return "duckdb"


def count(source: Any, spec: CountSpec, *, engine: str = "auto", scheduler: Any = None,
          files: Sequence[Path] | None = None, threads: int | None = None,
          memory_limit: str | None = None) -> GroupCounts:
    """The :class:`GroupCounts` of ``source`` in one pass.

    Parameters
    ----------
    source : path, directory, glob, or pandas / Arrow / Polars frame
        The rows (one decision each).
    spec : CountSpec
        Which columns to count.
    engine : {"auto", "duckdb", "pandas", "dask"}
        ``auto`` is DuckDB when installed, else pandas (in memory).
    scheduler : str or distributed.Client, optional
        With ``engine="dask"``: a scheduler address (``tcp://host:8786``) or a client; default a
        ``LocalCluster`` of two worker processes on 127.0.0.1.
    files : list of Path, optional
        Count exactly these files (a monitor's new files), instead of listing ``source``.
    threads, memory_limit : optional
        DuckDB's ``threads`` and ``memory_limit`` (e.g. ``"1GB"``).
    """
    src = resolve_source(source, files)
    name = engine_name(engine)
    final = spec
    if spec.window is not None and spec.window_origin is None:
        spec = _atom_spec(spec)
    # what is recorded as counted is what the files were before the pass; a file that grows or
    # changes during it is refused, so rows appended meanwhile are never marked as counted
    before = src.describe()
    if name == "duckdb":
        table, checks = _duckdb_counts(src, spec, [spec.group_cols], threads, memory_limit)[0]
    elif name == "pandas":
        table, checks = _pandas_partial(_to_pandas(src, [*spec.group_cols, *_time_text(spec)]),
                                        spec)
        table = combine_tables([table], spec)
    else:
        table, checks = _dask_counts(src, spec, scheduler)
    _raise_on_checks(checks, spec)
    _check_keys(table, spec)
    from fairprobe.scale.contract import check_labels

    check_labels(table, spec.group_cols)
    _unchanged(src, before)
    if final is not spec:
        final, table = _roll_up(table, final)
    return GroupCounts(final, table, tuple(before))


def _time_text(spec: CountSpec) -> list[str]:
    """The time column, read from a CSV as text by every reader: the contract parses text
    times itself (DuckDB's sniffer would otherwise guess day-first dates that pandas reads as
    text)."""
    return [spec.time_col] if spec.window is not None and spec.time_col is not None else []


def _atom_spec(spec: CountSpec) -> CountSpec:
    """``spec`` bucketed from the epoch by the largest width dividing both a day and the window
    (a day for whole-day windows): the atoms roll up into windows from any midnight."""
    import math

    hours = int(window_width(str(spec.window)) / pd.Timedelta(hours=1))
    return replace(spec, window=f"{math.gcd(hours, 24)}H", window_origin=str(_ORIGIN.isoformat()))


def _roll_up(table: pd.DataFrame, spec: CountSpec) -> tuple[CountSpec, pd.DataFrame]:
    """Atom counts as the windows of ``spec`` from midnight (UTC) of the first atom's day, the
    origin recorded in the returned spec (unset when there are no rows)."""
    if not len(table):
        return spec, combine_tables([table], spec)
    origin = pd.Timestamp(table[WINDOW].min()).normalize()
    out = replace(spec, window_origin=str(origin.isoformat()))
    width = window_width(str(spec.window))
    t = table.copy()
    t[WINDOW] = origin + ((pd.to_datetime(t[WINDOW]) - origin) // width) * width
    return out, combine_tables([t], out)


def _unchanged(src: Source, before: list[dict[str, Any]]) -> None:
    """Refuse a count during which a file changed (its size or modification time moved)."""
    for was, now in zip(before, src.describe(), strict=True):
        if was != now:
            raise DataError(f"{Path(was['path']).name} changed while it was being counted "
                            f"({was['size']} -> {now['size']} bytes): rerun when writes to it "
                            "have finished; nothing was recorded.")


def count_grouping_sets(source: Any, spec: CountSpec, sets: Sequence[Sequence[str]], *,
                        threads: int | None = None, memory_limit: str | None = None,
                        group_exprs: dict[str, str] | None = None
                        ) -> dict[tuple[str, ...], GroupCounts]:
    """Counts of several groupings in ONE pass (DuckDB ``GROUPING SETS``).

    ``group_exprs`` maps a grouping column to a SQL expression over the source's columns that
    replaces it in the same pass (e.g. a numeric column's quantile bin as a ``CASE``), so a
    derived grouping never leaves the engine.

    ``sets`` lists column tuples (each a subset of the columns to group by, e.g. every pair of
    ten features); the result maps each tuple to its :class:`GroupCounts`, equal to
    :func:`count` with ``group_cols`` set to it. When the product of the columns' numbers of
    values is small, counting the finest groups once and taking
    :meth:`GroupCounts.marginal` of each set gives the same counts from one cheaper
    aggregation (DuckDB runs one hash aggregate per grouping set).
    """
    norm = [tuple(str(c) for c in s) for s in sets]
    if not norm or any(not s for s in norm):
        raise DataError("grouping sets must be non-empty column lists.")
    src = resolve_source(source)
    final = spec
    if spec.window is not None and spec.window_origin is None:
        spec = _atom_spec(spec)
    results = _duckdb_counts(src, spec, norm, threads, memory_limit, group_exprs)
    out = {}
    for cols, (table, checks) in zip(norm, results, strict=True):
        sub = replace(spec, group_cols=cols)
        _raise_on_checks(checks, sub)
        _check_keys(table, sub)
        if final is not spec:
            sub, table = _roll_up(table, replace(final, group_cols=cols))
        out[cols] = GroupCounts(sub, table, tuple(src.describe()))
    return out


# --- label modes (the rules of AuditFrame's binary labels) -----------------------------------

def _label_mode(kind: str, pos_label: Any) -> str:
    """``bool``, ``01`` (0/1 numbers) or ``label`` (compare with pos_label), from the column's
    kind (``bool``, ``number``, ``other``), as ``fairprobe.stats.frame._binary_labels``."""
    numeric_pos = isinstance(pos_label, int | float | np.number) and not isinstance(pos_label,
                                                                                     bool)
    if kind == "bool":  # 0 (or False) as --pos-label names False as the positive value
        flips = (pos_label is not None and not isinstance(pos_label, str)
                 and bool(pos_label == 0))
        return "boolneg" if flips else "bool"
    if kind == "number":
        return "label" if pos_label is not None and numeric_pos else "01"
    return "label"


def _raise_on_checks(checks: dict[str, dict[str, Any]], spec: CountSpec) -> None:
    label_modes = [checks[r].get("mode") for r in ("y_pred", "y_true") if r in checks]
    if (isinstance(spec.pos_label, str) and label_modes
            and all(m in ("01", "bool", "boolneg") for m in label_modes)):
        # a text positive label that no column compares with would be silently ignored
        raise DataError(f"--pos-label {spec.pos_label!r} names no value of the label columns, "
                        "which hold 0/1 (or true/false): drop --pos-label (1 counts as the "
                        "positive decision), or point --y-pred-col at the column that holds "
                        f"{spec.pos_label!r}.")
    for role, c in checks.items():
        who = _role(spec, role)
        if c.get("nulls", 0):
            raise DataError(f"{who} contains {int(c['nulls'])} missing value(s) (NaN/None): "
                            "drop or repair those rows (e.g. unparsed answers) first.")
        if role in ("y_pred", "y_true"):
            if c.get("mode") == "label" and spec.pos_label is None:
                eg = c.get("omin")
                if isinstance(eg, str) and re.fullmatch(r"\s*[-+]?\d*,\d+\s*", eg):
                    raise DataError(f"{who} holds numbers written with a decimal comma (e.g. "
                                    f"{eg!r}), read as text: write the file with decimal "
                                    "points (0.5), or convert the column, then rerun.")
                raise DataError(f"{who} holds non-numeric labels: name the positive one with "
                                "--pos-label (pos_label in Python), e.g. --pos-label '>50K'.")
            lo01, hi01 = c.get("min"), c.get("max")
            if c.get("bad", 0) or (lo01 is not None and lo01 < 0) or (hi01 is not None
                                                                        and hi01 > 1):
                if (role == "y_pred" and lo01 is not None and hi01 is not None
                        and lo01 >= 0 and hi01 <= 1):
                    raise DataError(f"{who} holds values in [{lo01}, {hi01}], not 0/1 "
                                    "decisions: if they are scores, turn them into the "
                                    "decisions the system takes (score >= its threshold) in a "
                                    "column of their own and give that as --y-pred-col; give "
                                    "the scores as --score-col for the score gap.")
                raise DataError(f"{who} must hold 0/1 labels; found values in [{lo01}, {hi01}]"
                                ": map them to 0/1 or pass pos_label.")
            lo, hi = c.get("omin"), c.get("omax")
            if lo is not None and hi is not None and lo != hi:
                # the counts cannot tell a positive label that matches no row from a third
                # label, so the line names both readings, as the in-memory frame's checks do
                raise DataError(f"{who} holds {lo!r} and {hi!r} besides the positive label "
                                f"{spec.pos_label!r} (--pos-label, pos_label in Python): if it "
                                "matches neither, name the positive one; otherwise the column "
                                "has more than two labels (binary labels only).")
        if role == "time_col" and c.get("bad", 0):
            raise DataError(f"{who} holds {int(c['bad'])} value(s) that are not ISO 8601 times, "
                            f"e.g. {c.get('eg')!r}: write them as YYYY-MM-DD or YYYY-MM-DD "
                            "HH:MM[:SS] (an optional UTC offset such as +01:00), or give "
                            "another --time-col.")
        if role == "score" and c.get("min") is not None and not (
                c["min"] >= 0 and c["max"] <= 1):
            raise DataError(f"{who} must hold numbers in [0, 1] on every row; found values in "
                            f"[{c['min']}, {c['max']}].")
        if role in ("score", "weight") and not all(
                c.get(k) is None or np.isfinite(c[k]) for k in ("min", "max")):
            raise DataError(f"{who} holds NaN or infinite values: drop or repair them.")
        if role == "weight":
            if c.get("min") is not None and c["min"] < 0:
                raise DataError(f"{who} must hold weights >= 0; found {c['min']}.")
            if c.get("max") is not None and not c["max"] > 0:
                raise DataError(f"{who} holds only zero weights: at least one must be > 0.")


def _check_keys(table: pd.DataFrame, spec: CountSpec) -> None:
    for k in spec.keys:
        miss = table[k].isna().to_numpy()
        if miss.any():
            k_rows = int(table.loc[miss, "n"].sum())
            if k == WINDOW:
                raise DataError(f"{_role(spec, 'time_col')} holds {k_rows} missing value(s): "
                                "drop those rows or fill them.")
            raise DataError(f"The sensitive column {k!r} holds {k_rows} missing value(s) "
                            "(NaN/None): drop or label those rows first.")


def _merge_checks(parts: Sequence[dict[str, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for p in parts:
        for role, c in p.items():
            acc = out.setdefault(role, {})
            for k, v in c.items():
                if v is None or (isinstance(v, float) and np.isnan(v)):
                    continue
                if k in ("nulls", "bad"):
                    acc[k] = acc.get(k, 0) + v
                elif k in ("omin", "min", "eg"):
                    acc[k] = v if acc.get(k) is None else min(acc[k], v)
                elif k in ("omax", "max"):
                    acc[k] = v if acc.get(k) is None else max(acc[k], v)
                else:
                    acc[k] = v
    return out


# --- DuckDB ----------------------------------------------------------------------------------

#: The engines' own column names, in the reserved namespace (no user column can take them).
_P, _T, _S, _W = (f"{RESERVED_PREFIX}{x}" for x in ("p", "t", "s", "w"))


def _contract_names(spec: CountSpec, group_cols: Sequence[str]) -> None:
    from fairprobe.scale.contract import check_names

    check_names(group_cols, [spec.y_pred, spec.y_true, spec.score, spec.weight, spec.time_col])


def _q(name: str) -> str:
    return '"' + str(name).replace('"', '""') + '"'


def _lit(s: str) -> str:
    return "'" + str(s).replace("'", "''") + "'"


def _duck_kind(t: str) -> str:
    t = t.upper()
    if t == "BOOLEAN":
        return "bool"
    if re.match(r"^(U?(TINY|SMALL|BIG|HUGE)?INT(EGER)?|FLOAT|DOUBLE|REAL|DECIMAL.*)$", t):
        return "number"
    return "other"


def _duckdb_connect(threads: int | None, memory_limit: str | None) -> Any:
    from fairprobe._extras import import_optional

    duckdb = import_optional("duckdb", extra="scale", feature="the DuckDB counting engine")
    config: dict[str, Any] = {}
    if threads is not None:
        config["threads"] = int(threads)
    if memory_limit is not None:
        config["memory_limit"] = str(memory_limit)
    con = duckdb.connect(config=config)
    # DuckDB's own progress bar writes to stdout, where a JSON answer (--json -) may go
    con.execute("SET enable_progress_bar = false")
    # text times without an offset are UTC, as the pandas reader takes them
    con.execute("SET TimeZone = 'UTC'")
    return con


def _from_sql(con: Any, src: Source, stack: contextlib.ExitStack[Any],
              text_cols: Sequence[str] = ()) -> str:
    """The relation of ``src`` for DuckDB, read by the reader contract
    (:mod:`fairprobe.scale.contract`): literal paths (``stack`` keeps the links of paths with
    glob characters alive), and a CSV's ``text_cols`` (the group columns) read as text."""
    if src.frame is not None:
        con.register("fp_rows", src.frame)
        return "fp_rows"
    from fairprobe.scale.contract import duckdb_paths

    paths = stack.enter_context(duckdb_paths(src.files))
    files = "[" + ", ".join(_lit(p) for p in paths) + "]"
    if src.fmt == "parquet":
        return f"read_parquet({files}, union_by_name = true)"
    tsv = all(f.name.lower().endswith(".tsv") for f in src.files)
    types = ""
    if text_cols:
        types = ", types = {" + ", ".join(f"{_lit(c)}: 'VARCHAR'" for c in text_cols) + "}"
    return f"read_csv({files}, union_by_name = true, header = true{types}" + (
        ", delim = '\\t')" if tsv else ")")


def _column_types(con: Any, rel: str, src: Source) -> dict[str, str]:
    """DuckDB's type of every column of ``rel`` (``src`` read through :func:`_from_sql`), by
    name; a file DuckDB cannot read is one :class:`DataError` line naming it."""
    try:
        described = con.execute(f"DESCRIBE SELECT * FROM {rel}").fetchall()
    except Exception as exc:  # noqa: BLE001 - an unreadable file is one line
        first = str(exc).splitlines()[0]
        raise DataError(f"cannot read {src.name}: {first}") from None
    return {str(r[0]): str(r[1]) for r in described}


def _duckdb_counts(src: Source, spec: CountSpec, sets: Sequence[tuple[str, ...]],
                   threads: int | None, memory_limit: str | None,
                   group_exprs: dict[str, str] | None = None
                   ) -> list[tuple[pd.DataFrame, dict[str, dict[str, Any]]]]:
    """One query; per grouping set its sorted counts table and input checks."""
    con = _duckdb_connect(threads, memory_limit)
    stack = contextlib.ExitStack()
    try:
        group_union = list(dict.fromkeys(c for s in sets for c in s))
        _contract_names(spec, group_union)
        rel = _from_sql(con, src, stack, [c for c in group_union
                                          if not (group_exprs or {}).get(c)]
                        + _time_text(spec))
        types = _column_types(con, rel, src)
        _check_columns(spec, group_union, list(types), src.name)
        inner, aggs, params = _duckdb_exprs(spec, types)
        keys = ([WINDOW] if spec.window is not None else []) + group_union
        derived = group_exprs or {}
        inner_sql = ", ".join(inner + [f"{derived.get(c, _q(c))} AS {_q(c)}"
                                       for c in group_union])
        if len(sets) == 1:
            group_sql = "GROUP BY " + ", ".join(_q(k) for k in keys)
            gid = ""
        else:
            head = [WINDOW] if spec.window is not None else []
            group_sql = "GROUP BY GROUPING SETS (" + ", ".join(
                "(" + ", ".join(_q(k) for k in head + list(s)) + ")" for s in sets) + ")"
            gid = ", GROUPING(" + ", ".join(_q(c) for c in group_union) + ") AS fp_gid"
        sql = (f"SELECT {', '.join(_q(k) for k in keys)}, {', '.join(aggs)}{gid} "
               f"FROM (SELECT {inner_sql} FROM {rel}) {group_sql}")
        try:
            res = con.execute(sql, params).df()
        except Exception as exc:  # noqa: BLE001 - a cast or read failure is one line
            first = str(exc).splitlines()[0]
            raise DataError(f"cannot count {src.name}: {first}") from None
    finally:
        con.close()
        stack.close()
    out = []
    for s in sets:
        part = res
        if len(sets) > 1:  # GROUPING() bit i is 1 when column i is aggregated away
            bits = sum(1 << (len(group_union) - 1 - i)
                       for i, c in enumerate(group_union) if c not in s)
            part = res[res["fp_gid"] == bits]
        sub = CountSpec(group_cols=tuple(s), y_pred=spec.y_pred, y_true=spec.y_true,
                        score=spec.score, weight=spec.weight, pos_label=spec.pos_label,
                        time_col=spec.time_col, window=spec.window,
                        window_origin=spec.window_origin)
        if len(sets) > 1:
            part = part.copy()
            for k in sub.keys:  # NULL-padded key columns came back nullable (Int64, boolean)
                dt = part[k].dtype
                if hasattr(dt, "numpy_dtype") and not part[k].isna().any():
                    part[k] = part[k].astype(dt.numpy_dtype)
        checks = _checks_from(part, spec, types)
        table = combine_tables([part[list(sub.keys) + list(sum_columns(sub))]], sub)
        out.append((table, checks))
    return out


def _duckdb_exprs(spec: CountSpec, types: dict[str, str]
                  ) -> tuple[list[str], list[str], dict[str, Any]]:
    """Inner projections, aggregates (sums, then ``fpc_*`` checks), parameters."""
    inner: list[str] = []
    aggs = ["count(*) AS n"]
    params: dict[str, Any] = {}
    checks: list[str] = []
    for role, alias in (("y_pred", _P), ("y_true", _T)):
        col = getattr(spec, role)
        if col is None:
            continue
        c = _q(col)
        # the raw column, for the checks (the aggregate sees the projection)
        r = f"{RESERVED_PREFIX}r_{role}"
        inner.append(f"{c} AS {r}")
        mode = _label_mode(_duck_kind(types[col]), spec.pos_label)
        # checks as cheap aggregates: nulls from count(), 0/1 from min/max (integer columns)
        nan = (f" + count(*) FILTER (WHERE isnan(CAST({r} AS DOUBLE)))"
               if _duck_kind(types[col]) == "number" and not re.match(
                   r"^U?(TINY|SMALL|BIG|HUGE)?INT", types[col].upper()) else "")
        checks.append(f"count(*) - count({r}){nan} AS fpc_{role}_nulls")
        if mode == "bool":
            inner.append(f"CAST({c} AS INTEGER) AS {alias}")
        elif mode == "boolneg":
            inner.append(f"CAST(NOT {c} AS INTEGER) AS {alias}")
        elif mode == "01":
            inner.append(f"CAST({c} = 1 AS INTEGER) AS {alias}")
            checks += [f"min({r}) AS fpc_{role}_min", f"max({r}) AS fpc_{role}_max"]
            if not re.match(r"^U?(TINY|SMALL|BIG|HUGE)?INT", types[col].upper()):
                checks.append(f"count(*) FILTER (WHERE {r} <> 0 AND {r} <> 1) AS "
                              f"fpc_{role}_bad")
        else:
            if spec.pos_label is None:
                inner.append(f"0 AS {alias}")
                checks.append(f"min(CAST({r} AS VARCHAR)) AS fpc_{role}_omin")
            else:
                params["pos"] = spec.pos_label if _duck_kind(types[col]) == "number" \
                    else str(spec.pos_label)
                cv = c if _duck_kind(types[col]) == "number" else f"CAST({c} AS VARCHAR)"
                rv = r if _duck_kind(types[col]) == "number" else f"CAST({r} AS VARCHAR)"
                inner.append(f"CAST({cv} = $pos AS INTEGER) AS {alias}")
                checks.append(f"min({rv}) FILTER (WHERE {rv} <> $pos) AS fpc_{role}_omin")
                checks.append(f"max({rv}) FILTER (WHERE {rv} <> $pos) AS fpc_{role}_omax")
        checks.append(f"'{mode}' AS fpc_{role}_mode")
    sums = {"sp": _P, "st": _T, "stp": f"{_P} * {_T}"}
    for name in ("sp", "st", "stp"):
        if name in sum_columns(spec):
            aggs.append(f"CAST(sum({sums[name]}) AS BIGINT) AS {name}")
    if spec.weight is not None:
        c = _q(spec.weight)
        inner.append(f"CAST({c} AS DOUBLE) AS {_W}")
        checks += [f"count(*) - count({_W}) + count(*) FILTER (WHERE isnan({_W}) OR "
                   f"isinf({_W})) AS fpc_weight_nulls", f"min({_W}) AS fpc_weight_min",
                   f"max({_W}) AS fpc_weight_max"]
        cells = weight_cells(spec)
        for pre, w in (("sw", _W), ("sq", f"{_W} * {_W}"), ("sc", f"{_W} * {_W} * {_W}")):
            for suffix, pv, tv in cells:
                aggs.append(f"fsum({w} * {_cell_sql(pv, tv)}) AS {pre}{suffix}")
    if spec.score is not None:
        c = _q(spec.score)
        inner.append(f"CAST({c} AS DOUBLE) AS {_S}")
        aggs += [f"fsum({_S}) AS s1", f"fsum({_S} * {_S}) AS s2"]
        checks += [f"count(*) - count({_S}) + count(*) FILTER (WHERE isnan({_S}) OR "
                   f"isinf({_S})) AS fpc_score_nulls", f"min({_S}) AS fpc_score_min",
                   f"max({_S}) AS fpc_score_max"]
    if spec.window is not None:
        assert spec.time_col is not None
        width = window_width(spec.window)
        secs = int(width.total_seconds())
        tc = _q(spec.time_col)
        kind = types[spec.time_col].upper()
        # zoned timestamps in UTC whatever the machine's zone (a plain CAST would use the
        # session's zone); naive ones as they are
        if "TIME ZONE" in kind:
            ts = f"make_timestamp(epoch_us({tc}))"
        elif kind.startswith("TIMESTAMP") or kind == "DATE":
            ts = f"CAST({tc} AS TIMESTAMP)"
        elif kind == "VARCHAR":
            # text: the contract's ISO pattern, then TIMESTAMPTZ (the session zone is UTC, so
            # a naive value is UTC and an offset is applied), as UTC wall time
            params["fp_time_re"] = TIME_PATTERN
            ts = (f"CASE WHEN regexp_full_match({tc}, $fp_time_re) THEN make_timestamp("
                  f"epoch_us(try_cast(trim({tc}) AS TIMESTAMPTZ))) END")
        else:
            raise DataError(f"{_role(spec, 'time_col')} holds {kind.lower()} values, not times: "
                            "give a column of timestamps or ISO 8601 text (YYYY-MM-DD "
                            "[HH:MM[:SS]]).")
        bad = f"({tc} IS NOT NULL AND ({ts}) IS NULL)"
        inner += [f"{bad} AS {RESERVED_PREFIX}r_timebad",
                  f"CASE WHEN {bad} THEN CAST({tc} AS VARCHAR) END AS {RESERVED_PREFIX}r_timeeg"]
        checks += [f"count(*) FILTER (WHERE {RESERVED_PREFIX}r_timebad) AS fpc_time_col_bad",
                   f"min({RESERVED_PREFIX}r_timeeg) AS fpc_time_col_eg"]
        origin = pd.Timestamp(spec.window_origin or _ORIGIN).isoformat(sep=" ")
        inner.append(f"time_bucket(INTERVAL '{secs} seconds', {ts}, TIMESTAMP '{origin}') "
                     f"AS {_q(WINDOW)}")
    return inner, aggs + checks, params


def _cell_sql(pv: int, tv: int | None) -> str:
    """The 0/1 indicator of a (y_pred, y_true) cell, as a product (exact for 0/1 values)."""
    p = _P if pv else f"(1 - {_P})"
    return p if tv is None else f"{p} * {_T if tv else f'(1 - {_T})'}"


def _checks_from(res: pd.DataFrame, spec: CountSpec, types: dict[str, str]
                 ) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for col in res.columns:
        if not str(col).startswith("fpc_"):
            continue
        role, what = str(col)[4:].rsplit("_", 1)
        vals = res[col].dropna()
        acc = out.setdefault(role, {})
        if what == "mode":
            acc[what] = vals.iloc[0] if len(vals) else None
        elif what in ("nulls", "bad"):
            acc[what] = int(vals.sum())
        elif what in ("omin", "min", "eg"):
            acc[what] = _plain(vals.min()) if len(vals) else None
        else:
            acc[what] = _plain(vals.max()) if len(vals) else None
    return out


def _plain(v: Any) -> Any:
    return v.item() if isinstance(v, np.generic) else v


def _check_columns(spec: CountSpec, group_cols: Sequence[str], have: Sequence[str],
                   name: str) -> None:
    shown = ", ".join(list(have)[:12])
    for role in ("y_pred", "y_true", "score", "weight", "time_col"):
        col = getattr(spec, role)
        if col is not None and col not in have:
            raise DataError(f"{_ROLES[role][1]} {col!r} is not a column of {name} (columns: "
                            f"{shown}).")
    for c in group_cols:
        if c not in have:
            raise DataError(f"--group-col {c!r} is not a column of {name} (columns: {shown}).")


# --- pandas (and Dask partitions) ------------------------------------------------------------

def _to_pandas(src: Source, text_cols: Sequence[str] = ()) -> pd.DataFrame:
    """The rows of ``src`` in memory; a CSV's ``text_cols`` (the group columns) read as text, as
    DuckDB reads them (the reader contract)."""
    if src.frame is not None:
        return src.frame if isinstance(src.frame, pd.DataFrame) else src.frame.to_pandas()
    from fairprobe._io import read_table

    dtype = {c: str for c in text_cols} if src.fmt == "csv" else None
    frames = [read_table(f, "Predictions file", dtype=dtype) for f in src.files]
    return frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)


def _pd_times(s: pd.Series, spec: CountSpec) -> tuple[pd.Series, int, str | None]:
    """Naive UTC times of a time column by the reader contract (as :func:`_duckdb_exprs`):
    timestamps as they are (zoned ones in UTC), text by :data:`TIME_PATTERN`; the number of
    values that are not times, and the first of them."""
    if pd.api.types.is_datetime64_any_dtype(s.dtype):
        ts = pd.to_datetime(s)
        if getattr(ts.dt, "tz", None) is not None:
            ts = ts.dt.tz_convert("UTC").dt.tz_localize(None)
        return ts, 0, None
    if pd.api.types.is_numeric_dtype(s.dtype) or pd.api.types.is_bool_dtype(s.dtype):
        raise DataError(f"{_role(spec, 'time_col')} holds {s.dtype} values, not times: give a "
                        "column of timestamps or ISO 8601 text (YYYY-MM-DD [HH:MM[:SS]]).")
    obj = s.astype(object)
    # date / datetime objects (a Parquet DATE read by pandas) print as ISO text, so one
    # vectorised path serves them and strings alike
    strs = obj.where(obj.notna()).astype("string")
    ok = strs.str.fullmatch(TIME_PATTERN).fillna(False).astype(bool)
    parsed = pd.to_datetime(strs.where(ok).str.strip(), format="ISO8601", errors="coerce",
                            utc=True)
    ts = parsed.dt.tz_localize(None)
    badm = obj.notna().to_numpy() & ts.isna().to_numpy()
    first = None
    if badm.any():
        first = str(min(str(v) for v in obj[badm]))
    return ts, int(badm.sum()), first


def _pd_kind(s: pd.Series) -> str:
    if pd.api.types.is_bool_dtype(s.dtype):
        return "bool"
    if pd.api.types.is_numeric_dtype(s.dtype):
        return "number"
    return "other"


def _pd_labels(s: pd.Series, pos_label: Any, mode_out: dict[str, Any]
               ) -> np.ndarray[Any, Any]:
    mode = _label_mode(_pd_kind(s), pos_label)
    null = s.isna().to_numpy()
    mode_out.update(mode=mode, nulls=int(null.sum()))
    if mode == "bool":
        return s.fillna(False).to_numpy(dtype=np.int64)
    if mode == "boolneg":
        return (~s.fillna(True).astype(bool)).to_numpy(dtype=np.int64)
    if mode == "01":
        v = s.to_numpy(dtype=np.float64, na_value=np.nan)
        mode_out["bad"] = int(((v != 0) & (v != 1) & ~null).sum())
        if (~null).any():  # as DuckDB's min/max checks, for the same error line
            mode_out["min"], mode_out["max"] = _plain(s[~null].min()), _plain(s[~null].max())
        return (v == 1).astype(np.int64)
    if pos_label is None:
        some = s[~null]
        if len(some):  # for the error: the column's first value in order, as DuckDB's min
            mode_out["omin"] = _plain(min(str(x) for x in some))
        return np.zeros(len(s), dtype=np.int64)
    vals = s if _pd_kind(s) == "number" else s.astype(object).where(~s.isna(), None)
    pos = pos_label if _pd_kind(s) == "number" else str(pos_label)
    arr = vals.to_numpy(dtype=object) if _pd_kind(s) != "number" else vals.to_numpy()
    if _pd_kind(s) != "number":
        arr = np.array([None if x is None else str(x) for x in arr], dtype=object)
    is_pos = np.asarray(arr == pos, dtype=bool)
    others = arr[~is_pos & ~null]
    if others.size:
        mode_out["omin"], mode_out["omax"] = _plain(min(others)), _plain(max(others))
    return is_pos.astype(np.int64)


def _pandas_partial(df: pd.DataFrame, spec: CountSpec
                    ) -> tuple[pd.DataFrame, dict[str, dict[str, Any]]]:
    """The counts table (unsorted, unmerged) and checks of one in-memory frame."""
    _contract_names(spec, spec.group_cols)
    if df.columns.duplicated().any():
        dup = str(df.columns[df.columns.duplicated()][0])
        raise DataError(f"the predictions name the column {dup!r} twice; rename one (columns "
                        "are read by name).")
    _check_columns(spec, spec.group_cols, [str(c) for c in df.columns], "the predictions")
    checks: dict[str, dict[str, Any]] = {}
    cols: dict[str, Any] = {}
    if spec.window is not None:
        assert spec.time_col is not None
        ts, bad, eg = _pd_times(df[spec.time_col], spec)
        checks["time_col"] = {"bad": bad, "eg": eg}
        width = window_width(spec.window)
        origin = pd.Timestamp(spec.window_origin or _ORIGIN)
        cols[WINDOW] = origin + ((ts - origin) // width) * width
    for c in spec.group_cols:
        g = df[c]
        cols[c] = g.astype(object).where(~g.isna(), None) if isinstance(
            g.dtype, pd.CategoricalDtype) else g
    n = len(df)
    cols["n"] = np.ones(n, dtype=np.int64)
    checks["y_pred"] = {}
    p = _pd_labels(df[spec.y_pred], spec.pos_label, checks["y_pred"])
    cols["sp"] = p
    t = None
    if spec.y_true is not None:
        checks["y_true"] = {}
        t = _pd_labels(df[spec.y_true], spec.pos_label, checks["y_true"])
        cols["st"], cols["stp"] = t, p * t
    if spec.weight is not None:
        w = pd.to_numeric(df[spec.weight], errors="coerce").to_numpy(dtype=np.float64)
        nulls = int(np.isnan(w).sum())
        checks["weight"] = {"nulls": nulls, "min": float(np.nanmin(w)) if n > nulls else None,
                            "max": float(np.nanmax(w)) if n > nulls else None}
        for pre, wx in (("sw", w), ("sq", w * w), ("sc", w * w * w)):
            for suffix, pv, tv in weight_cells(spec):
                ind = p if pv else 1 - p
                if tv is not None:
                    assert t is not None
                    ind = ind * (t if tv else 1 - t)
                cols[f"{pre}{suffix}"] = wx * ind
    if spec.score is not None:
        s = pd.to_numeric(df[spec.score], errors="coerce").to_numpy(dtype=np.float64)
        sn = int(np.isnan(s).sum())
        checks["score"] = {"nulls": sn, "min": float(np.nanmin(s)) if n > sn else None,
                           "max": float(np.nanmax(s)) if n > sn else None}
        cols["s1"], cols["s2"] = s, s * s
    frame = pd.DataFrame(cols)
    keys = list(spec.keys)
    if n == 0:
        return frame[keys + list(sum_columns(spec))].iloc[:0], checks
    table = frame.groupby(keys, sort=False, dropna=False, observed=True)[
        list(sum_columns(spec))].sum().reset_index()
    return table, checks


# --- Dask ------------------------------------------------------------------------------------

def _dask_counts(src: Source, spec: CountSpec, scheduler: Any
                 ) -> tuple[pd.DataFrame, dict[str, dict[str, Any]]]:
    """The pandas sums of every partition, computed on the cluster, added on the client."""
    from fairprobe._extras import import_optional

    dask = import_optional("dask", extra="scale", feature="--engine dask")
    dd = import_optional("dask.dataframe", extra="scale", feature="--engine dask")
    distributed = import_optional("distributed", extra="scale", feature="--engine dask")
    if src.frame is not None:
        pdf = _to_pandas(src, spec.group_cols)
        ddf = dd.from_pandas(pdf, npartitions=max(1, min(8, len(pdf) // 100_000 or 1)))
    else:  # literal paths, as DuckDB reads them (fsspec would expand glob characters)
        from fairprobe.scale.contract import duckdb_paths

        links = contextlib.ExitStack()
        paths = links.enter_context(duckdb_paths(src.files))
        if src.fmt == "parquet":
            ddf = dd.read_parquet(paths)
        else:
            ddf = dd.read_csv(paths, dtype={c: str for c in [*spec.group_cols,
                                                              *_time_text(spec)]})
    tasks = [dask.delayed(_pandas_partial)(part, spec) for part in ddf.to_delayed()]
    own = None
    client = scheduler
    if not isinstance(scheduler, distributed.Client):
        if scheduler is None:
            own = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                           host="127.0.0.1", dashboard_address=None)
            client = distributed.Client(own)
        else:
            try:
                client = distributed.Client(str(scheduler), timeout=10)
            except OSError as exc:
                raise DataError(f"--scheduler {scheduler!r} is unreachable: {exc}") from None
    try:
        parts = client.gather(client.compute(tasks))
    finally:
        if client is not scheduler:
            client.close()
        if own is not None:
            own.close()
        if src.frame is None:
            links.close()
    table = combine_tables([t for t, _ in parts], spec)
    return table, _merge_checks([c for _, c in parts])


def per_instance_rows(source: Any, spec: CountSpec, engine: str = "auto"
                      ) -> tuple[np.ndarray[Any, Any], pd.DataFrame, np.ndarray[Any, Any] | None]:
    """The decisions (0/1), group values and labels of every row, in file order: only for the
    opt-in ``per_instance`` list of the JSON (its size grows with the rows)."""
    src = resolve_source(source)
    if engine_name(engine) == "duckdb":
        con = _duckdb_connect(None, None)
        stack = contextlib.ExitStack()
        try:
            _contract_names(spec, spec.group_cols)
            rel = _from_sql(con, src, stack, spec.group_cols)
            types = _column_types(con, rel, src)
            inner, _, params = _duckdb_exprs(spec, types)
            keep = [x for x in inner if x.endswith((f" AS {_P}", f" AS {_T}"))]
            df = con.execute(f"SELECT {', '.join(keep + [_q(c) for c in spec.group_cols])} "
                             f"FROM {rel}", params).df()
        finally:
            con.close()
            stack.close()
        p = df[_P].to_numpy(dtype=np.int64)
        t = None if spec.y_true is None else df[_T].to_numpy(dtype=np.int64)
        return p, df[list(spec.group_cols)], t
    pdf = _to_pandas(src, spec.group_cols)
    p = _pd_labels(pdf[spec.y_pred], spec.pos_label, {})
    t = None if spec.y_true is None else _pd_labels(pdf[spec.y_true], spec.pos_label, {})
    return p, pdf[list(spec.group_cols)], t
