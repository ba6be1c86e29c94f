"""Reading tables: the one place every command and module reads CSV or Parquet files."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from fairprobe.errors import DataError, FairprobeError

__all__ = ["read_table"]

_CSV_SUFFIXES = (".csv", ".csv.gz", ".csv.bz2", ".csv.xz", ".csv.zst", ".tsv")
_PARQUET_SUFFIXES = (".parquet", ".pq")


def read_table(path: str | os.PathLike[str], what: str = "Table file") -> pd.DataFrame:
    """Read a CSV (optionally compressed; ``.tsv`` tab-separated) or Parquet file.

    Raises :class:`~fairprobe.errors.DataError` in one line when the file does not exist, has
    another suffix, is empty or cannot be parsed; ``what`` names the file in the message.
    """
    p = Path(path)
    if not p.is_file():
        raise DataError(f"{what} {str(p)!r} does not exist.")
    name = p.name.lower()
    try:
        if name.endswith(_PARQUET_SUFFIXES):
            from fairprobe._extras import import_optional

            import_optional("pyarrow", feature=f"reading {p.name}")
            return pd.read_parquet(p)
        if name.endswith(_CSV_SUFFIXES):
            return pd.read_csv(p, sep="\t" if name.endswith(".tsv") else ",")
    except FairprobeError:
        raise
    except pd.errors.EmptyDataError:
        raise DataError(f"{what} {p.name} is empty.") from None
    except Exception as exc:  # noqa: BLE001 - any parser failure becomes one line
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise DataError(f"Cannot read {what.lower()} {p.name}: {first}") from None
    raise DataError(f"{what} {p.name} must end in .csv, .tsv or .parquet.")
