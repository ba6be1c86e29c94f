"""Query records: normalisation to JSON-native mappings and their canonical hash.

Every record a :class:`~fairprobe.access.BlackBox` sends is a JSON-serialisable mapping of field
names to values. Its cache key is the SHA-256 of its *canonical JSON*: keys sorted, no spaces,
UTF-8, no NaN. Two records that serialise to the same canonical JSON are the same query.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from fairprobe.errors import DataError

__all__ = ["Records", "canonical_json", "normalize_records", "record_key"]

Records = Sequence[Mapping[str, Any]] | pd.DataFrame

_DUMPS = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
).encode


class _NotNative(Exception):
    """A value that is not JSON-native was met (numpy scalar, NaN...)."""


def _strict_default(value: Any) -> Any:
    raise _NotNative


_FAST_DUMPS = json.JSONEncoder(
    sort_keys=True,
    separators=(",", ":"),
    ensure_ascii=False,
    allow_nan=False,
    default=_strict_default,
).encode


def _clean_value(value: Any, where: str) -> Any:
    """``value`` as a JSON-native value; NaN and None become None; raises on anything else."""
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        x = float(value)
        if math.isnan(x):
            return None
        if math.isinf(x):
            raise DataError(f"{where} is {x}; records must hold finite numbers.")
        return x
    if value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, Mapping):
        return {str(k): _clean_value(v, f"{where}[{k!r}]") for k, v in value.items()}
    if isinstance(value, list | tuple | np.ndarray):
        return [_clean_value(v, f"{where}[{i}]") for i, v in enumerate(value)]
    raise DataError(
        f"{where} holds a {type(value).__name__}, which is not JSON-serialisable; "
        "convert it to a string or a number."
    )


def _clean_record(rec: Any, i: int) -> dict[str, Any]:
    if not isinstance(rec, Mapping):
        raise DataError(
            f"record {i} is a {type(rec).__name__}, not a mapping of field names to values."
        )
    out: dict[str, Any] = {}
    for k, v in rec.items():
        if not isinstance(k, str):
            raise DataError(f"record {i} has a non-string field name {k!r}; use string names.")
        out[k] = _clean_value(v, f"field {k!r} of record {i}")
    return out


def canonical_json(record: Mapping[str, Any]) -> str:
    """The canonical JSON of a JSON-native record (keys sorted, compact, no NaN)."""
    try:
        return _DUMPS(record)
    except (ValueError, TypeError) as exc:
        raise DataError(f"record is not JSON-serialisable: {exc}") from None


def record_key(canonical: str) -> str:
    """SHA-256 (hex) of a record's canonical JSON: its cache key."""
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _as_dicts(records: Records) -> tuple[Sequence[Any], bool]:
    """The records as a sequence of mappings, and whether their keys are known to be strings."""
    if isinstance(records, pd.DataFrame):
        bad = [c for c in records.columns if not isinstance(c, str)]
        if bad:
            raise DataError(f"column names must be strings; got {bad[0]!r}.")
        if records.columns.duplicated().any():
            dup = records.columns[records.columns.duplicated()][0]
            raise DataError(f"column {dup!r} appears twice; column names must be unique.")
        names = [str(c) for c in records.columns]
        # column-wise tolist() yields Python scalars and is much faster than to_dict("records")
        columns = [records[c].tolist() for c in names]
        return [dict(zip(names, row, strict=True)) for row in zip(*columns, strict=True)], True
    if isinstance(records, Mapping | str | bytes) or not isinstance(records, Sequence):
        raise DataError(
            f"records must be a sequence of mappings or a pandas DataFrame; got a "
            f"{type(records).__name__}."
        )
    return records, False


def normalize_records(records: Records) -> tuple[list[dict[str, Any]], list[str]]:
    """Normalise ``records`` to JSON-native dicts and return them with their canonical JSON.

    numpy scalars become Python numbers, NaN / ``pd.NA`` become ``None`` (JSON ``null``), field
    order is kept in the returned dicts (the canonical JSON sorts keys). Anything else that JSON
    cannot hold raises :class:`~fairprobe.errors.DataError` naming the record and the field.
    """
    rows, str_keys = _as_dicts(records)
    dicts: list[dict[str, Any]] = []
    canon: list[str] = []
    fast = _FAST_DUMPS
    for i, rec in enumerate(rows):
        if type(rec) is dict and (str_keys or all(type(k) is str for k in rec)):
            try:  # fast path: already JSON-native
                s = fast(rec)
            except (_NotNative, ValueError, TypeError):
                pass
            else:
                dicts.append(rec)
                canon.append(s)
                continue
        clean = _clean_record(rec, i)
        dicts.append(clean)
        canon.append(canonical_json(clean))
    return dicts, canon
