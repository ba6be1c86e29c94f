"""The reader contract: how every engine (DuckDB, pandas, Dask) reads a source, in one place.

Whatever the engine, the same bytes give the same counts or the same one-line error
(``docs/scale.md``, "One reading of every file"; ``tests/scale/test_reader_contract.py`` and the
differential test ``tests/scale/test_reader_differential.py`` check it):

1. **Paths are literal.** A path that exists is read as named: glob characters in it are never
   expanded (DuckDB would expand ``model[1]`` or a file named ``*.parquet``; such files reach it
   through links of plain names, :func:`duckdb_paths`). Only a path that does not exist and
   contains ``*``, ``?`` or ``[`` is a glob.
2. **Each file once.** Files are identified by device and inode after resolving links
   (:func:`unique_files`): a link to a counted file, or a second hard link, is not counted again.
3. **No name collisions.** Generated SQL quotes every user column and names its own columns in
   the reserved namespace ``__fp_``; a user column in that namespace, or a group column named like
   a column of the counts table (``n``, ``sp``, ...), is refused (:func:`check_names`).
4. **Duplicate column names are refused** (:func:`check_headers`), in CSV headers and Parquet
   schemas alike.
5. **NaN, null and infinity** in a decision, label, score or weight column are refused with the
   column and the number of rows, on every engine (the engines count them as missing).
6. **``--pos-label``** means the same on booleans, integers and strings on every path: on a
   boolean column, ``0`` names ``False`` as the positive value.
7. **Group labels are kept as written**: a CSV's group columns are read as text by every engine,
   so ``02134`` stays ``02134`` and ``yes`` stays ``yes`` (Parquet columns keep their types).
"""

from __future__ import annotations

import os
import re
import tempfile
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from fairprobe.errors import DataError

__all__ = ["MAX_LABEL_CHARS", "RESERVED_PREFIX", "check_headers", "check_labels", "check_names",
           "duckdb_paths", "unique_files"]

#: The longest group label (characters): a longer value is not a group's name, and every
#: surface that prints it would grow with it.
MAX_LABEL_CHARS = 1000

#: The most columns a counted file may have.
MAX_COLUMNS = 10_000

#: Columns the engines create for themselves are named with this prefix.
RESERVED_PREFIX = "__fp_"

_GLOB = re.compile(r"[*?\[\]{}]")


def _is_count_name(name: str) -> bool:
    """A column name of the counts table or of the engines' check columns."""
    return (name in {"n", "sp", "st", "stp", "s1", "s2", "window", "fp_gid"}
            or name.startswith("fpc_") or re.fullmatch(r"s[wqc](0|1|00|01|10|11)", name) is not None)


def check_names(group_cols: Sequence[str], role_cols: Sequence[str | None]) -> None:
    """Refuse column names that would collide with the engines' own (one line naming them)."""
    for c in [*group_cols, *[r for r in role_cols if r is not None]]:
        if str(c).startswith(RESERVED_PREFIX):
            raise DataError(f"column {c!r}: names starting with {RESERVED_PREFIX!r} are reserved "
                            "for fairprobe's own columns; rename it.")
    for c in group_cols:
        if _is_count_name(str(c)):
            raise DataError(f"--group-col {c!r} has the name of a column of fairprobe's counts "
                            "(n, sp, st, stp, s1, s2, window, sw*, sq*, sc*): rename the column "
                            f"(e.g. {c}_group) and pass the new name.")


def check_labels(table: Any, group_cols: Sequence[str]) -> None:
    """Refuse a group value longer than :data:`MAX_LABEL_CHARS` (one line naming the column)."""
    for c in group_cols:
        col = table[c]
        if col.dtype != object and str(col.dtype) not in ("string", "str"):
            continue
        lengths = col.astype(str).str.len()
        if len(lengths) and int(lengths.max()) > MAX_LABEL_CHARS:
            raise DataError(f"--group-col {c!r} holds a value of {int(lengths.max()):,} "
                            f"characters (at most {MAX_LABEL_CHARS:,}): that is not a group's "
                            "name; check the column.")


def unique_files(paths: Sequence[Path]) -> list[Path]:
    """``paths`` resolved, each file once (by device and inode), sorted."""
    seen: dict[tuple[int, int], Path] = {}
    for p in paths:
        r = Path(p).resolve()
        st = r.stat()
        seen.setdefault((st.st_dev, st.st_ino), r)
    return sorted(seen.values())


def check_headers(files: Sequence[Path], fmt: str) -> None:
    """Refuse a file whose header (CSV) or schema (Parquet) names a column twice."""
    for f in files:
        if fmt == "parquet":
            try:
                import pyarrow.parquet as pq
            except ImportError:  # without pyarrow the pandas reader refuses Parquet itself
                return
            try:
                names = list(pq.read_schema(f).names)
            except Exception as exc:  # noqa: BLE001 - an unreadable file is one line
                raise DataError(f"cannot read {f.name}: {str(exc).splitlines()[0]}") from None
        else:
            from fairprobe._io import _check_header

            sep = "\t" if f.name.lower().endswith(".tsv") else ","
            _check_header(f, sep, "Predictions file")
            import pandas as pd

            names = list(pd.read_csv(f, sep=sep, nrows=0).columns)
        if len(names) > MAX_COLUMNS:  # describing them alone would take a minute
            raise DataError(f"Predictions file {f.name} has {len(names):,} columns (at most "
                            f"{MAX_COLUMNS:,}): write the columns the audit uses to a file.")
        dup = sorted(n for n, k in Counter(names).items() if k > 1)
        if dup:
            raise DataError(f"Predictions file {f.name} names the column {dup[0]!r} twice; "
                            "rename one (columns are read by name).")


@contextmanager
def duckdb_paths(files: Sequence[Path]) -> Iterator[list[str]]:
    """Paths DuckDB reads literally: a file whose path holds glob characters is passed as a
    link of a plain name in a private temporary folder (removed afterwards)."""
    if not any(_GLOB.search(str(f)) for f in files):
        yield [str(f) for f in files]
        return
    with tempfile.TemporaryDirectory(prefix="fairprobe-read-") as tmp:
        out: list[str] = []
        for i, f in enumerate(files):
            if _GLOB.search(str(f)):
                suffix = "".join(s for s in Path(f).suffixes if s.lower() in
                                 (".parquet", ".pq", ".csv", ".tsv", ".gz"))
                link = Path(tmp) / f"f{i}{suffix}"
                os.symlink(f, link)
                out.append(str(link))
            else:
                out.append(str(f))
        yield out
