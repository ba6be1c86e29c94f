"""Replay of recorded answers from a CSV or Parquet file (or a DataFrame)."""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fairprobe._io import read_table as _read_table
from fairprobe.access.base import Answer, Backend, Record
from fairprobe.access.local import file_sha256
from fairprobe.errors import AccessError, DataError

__all__ = ["ReplayBackend", "loose_key", "read_table"]


def _loose(v: Any) -> Any:
    """A value normalised for matching across file formats: integral floats become ints."""
    if isinstance(v, np.generic):
        v = v.item()
    if v is None or v is pd.NA or v is pd.NaT:
        return None
    if isinstance(v, float):
        if math.isnan(v):
            return None
        if v.is_integer():
            return int(v)
    return v


def _loose_repr(v: Any) -> str:
    return repr(v.item() if isinstance(v, np.generic) else v)


def loose_key(values: Mapping[str, Any]) -> str:
    """SHA-256 of the canonical JSON of ``values`` after :func:`_loose` normalisation.

    Reading a CSV turns ``39`` into ``39.0`` in a column with missing values; this key matches
    both, so a file written from a DataFrame replays the records it came from.
    """
    clean = {k: _loose(v) for k, v in values.items()}
    s = json.dumps(clean, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(s.encode("utf-8")).hexdigest()


def read_table(path: str | os.PathLike[str]) -> pd.DataFrame:
    """Read a recorded-answers file (CSV or Parquet); see :func:`fairprobe._io.read_table`."""
    return _read_table(path, "Replay file")


class ReplayBackend(Backend):
    """Answers recorded earlier, replayed without asking any model.

    Parameters
    ----------
    table : str, PathLike or pandas.DataFrame
        A CSV or Parquet file, or a DataFrame, with one row per recorded answer.
    key_column : str, optional
        Column identifying an input; a record is matched on its value of this field. Without it,
        records are matched on the hash of ``feature_columns`` (see :func:`loose_key`).
    feature_columns : sequence of str, optional
        Columns hashed to match records when there is no ``key_column``. Default: every column
        but the answer columns.
    decision_column, score_column, logit_column : str
        Answer columns; score and logit are optional (absent column: not exposed).
    positive_values : sequence, optional
        Values of ``decision_column`` meaning a positive decision when it holds labels (e.g.
        ``[">50K"]``); every other non-missing value is negative. Without it, decisions must be
        0/1 (or booleans).
    allow_unparsed : bool, default=False
        Whether missing decisions replay as unparsed answers (dropped and counted) rather than
        being refused as a data error.
    max_batch : int, default=4096

    Raises
    ------
    DataError
        Missing columns, decisions that are not 0/1, scores outside [0, 1], or two rows giving
        different answers to the same input.
    AccessError
        At query time, for an input absent from the table (named in the message).
    """

    kind = "replay"

    def __init__(
        self,
        table: str | os.PathLike[str] | pd.DataFrame,
        *,
        key_column: str | None = None,
        feature_columns: Sequence[str] | None = None,
        decision_column: str = "decision",
        score_column: str = "score",
        logit_column: str = "logit",
        positive_values: Sequence[Any] | None = None,
        allow_unparsed: bool = False,
        max_batch: int = 4096,
    ) -> None:
        if isinstance(table, pd.DataFrame):
            df = table.reset_index(drop=True)
            self.source = "DataFrame"
            digest = hashlib.sha256(
                pd.util.hash_pandas_object(df, index=False).to_numpy().tobytes()
                + repr(list(df.columns)).encode()
            ).hexdigest()[:16]
        else:
            df = read_table(table)
            self.source = Path(table).name
            digest = file_sha256(table)[:16]
        self.max_batch = max_batch
        self.key_column = key_column
        #: the recorded-answer columns: withheld from the queries when the table is the pool
        self.answer_columns = (decision_column, score_column, logit_column)
        answer_cols = set(self.answer_columns)
        if decision_column not in df.columns:
            raise DataError(
                f"replay table {self.source} has no decision column {decision_column!r}; "
                f"columns are {list(map(str, df.columns))}."
            )
        if key_column is not None:
            if key_column not in df.columns:
                raise DataError(f"replay table {self.source} has no key column {key_column!r}.")
            self.feature_columns: list[str] = []
        else:
            if feature_columns is None:
                feature_columns = [str(c) for c in df.columns if c not in answer_cols]
            absent = [c for c in feature_columns if c not in df.columns]
            if absent:
                raise DataError(
                    f"replay table {self.source} lacks feature column(s) "
                    f"{', '.join(map(repr, absent))}."
                )
            if not feature_columns:
                raise DataError(f"replay table {self.source} has no feature column to match on.")
            self.feature_columns = list(feature_columns)
        self._answers = self._parse_answers(
            df, decision_column, score_column, logit_column, positive_values, allow_unparsed
        )
        self._index = self._build_index(df)
        cfg = json.dumps(
            [
                key_column,
                self.feature_columns,
                decision_column,
                score_column,
                logit_column,
                None if positive_values is None else [str(v) for v in positive_values],
            ],
        )
        self._identity = (
            f"replay:{self.source}#{digest}:{hashlib.sha256(cfg.encode()).hexdigest()[:8]}"
        )

    def _parse_answers(
        self,
        df: pd.DataFrame,
        dcol: str,
        scol: str,
        lcol: str,
        positive_values: Sequence[Any] | None,
        allow_unparsed: bool,
    ) -> list[Answer]:
        raw = df[dcol]
        missing = raw.isna().to_numpy()
        if missing.any() and not allow_unparsed:
            row = int(np.flatnonzero(missing)[0])
            raise DataError(
                f"replay table {self.source} has a missing (NaN) decision in row {row}; fix it or "
                "set allow_unparsed to replay it as an unparsed answer."
            )
        if positive_values is not None:
            dec = raw.isin(list(positive_values)).to_numpy().astype(np.float64)
        else:
            num = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
            bad = ~missing & ~np.isin(num, (0.0, 1.0))
            if bad.any():
                row = int(np.flatnonzero(bad)[0])
                raise DataError(
                    f"replay table {self.source} has decision {_loose_repr(raw.iloc[row])} in row {row}; "
                    "decisions must be 0 or 1 (or set positive_values for labels)."
                )
            dec = num
        dec[missing] = np.nan
        n = len(df)
        sco = np.full(n, np.nan)
        lgt = np.full(n, np.nan)
        if scol in df.columns:
            sco = pd.to_numeric(df[scol], errors="coerce").to_numpy(np.float64, na_value=np.nan)
            bad = ~np.isnan(sco) & ((sco < 0) | (sco > 1))
            if bad.any() or (df[scol].notna().to_numpy() & np.isnan(sco)).any():
                row = int(np.flatnonzero(bad | (df[scol].notna().to_numpy() & np.isnan(sco)))[0])
                raise DataError(
                    f"replay table {self.source} has score {_loose_repr(df[scol].iloc[row])} in row {row}; "
                    "scores must be numbers in [0, 1]."
                )
        if lcol in df.columns:
            lgt = pd.to_numeric(df[lcol], errors="coerce").to_numpy(np.float64, na_value=np.nan)
            bad = np.isinf(lgt) | (df[lcol].notna().to_numpy() & np.isnan(lgt))
            if bad.any():
                row = int(np.flatnonzero(bad)[0])
                raise DataError(
                    f"replay table {self.source} has logit {_loose_repr(df[lcol].iloc[row])} in row {row}; "
                    "logits must be finite numbers."
                )

        def f(x: float, as_int: bool = False) -> Any:
            return None if math.isnan(x) else (int(x) if as_int else float(x))

        return [
            Answer(f(d, True), f(s), f(z))
            for d, s, z in zip(dec.tolist(), sco.tolist(), lgt.tolist(), strict=True)
        ]

    def _row_key(self, row: Mapping[Any, Any]) -> str:
        if self.key_column is not None:
            return json.dumps(_loose(row[self.key_column]), default=str)
        return loose_key({c: row[c] for c in self.feature_columns})

    def _build_index(self, df: pd.DataFrame) -> dict[str, int]:
        cols = [self.key_column] if self.key_column is not None else self.feature_columns
        index: dict[str, int] = {}
        for i, row in enumerate(df[cols].to_dict(orient="records")):
            k = self._row_key(row)
            j = index.setdefault(k, i)
            if j != i and self._answers[j] != self._answers[i]:
                raise DataError(
                    f"replay table {self.source} gives different answers to the same input in "
                    f"rows {j} and {i}."
                )
        return index

    # -- Backend ----------------------------------------------------------------------------
    @property
    def identity(self) -> str:
        return self._identity

    def model_identity(self) -> Any:
        """Recorded answers are identified by their file's hash (part of the identity)."""
        from fairprobe.access.identity import ModelIdentity

        return ModelIdentity(
            model_id=str(self.source),
            digest=hashlib.sha256(self._identity.encode()).hexdigest()[:16],
            source="file-hash",
        )

    @property
    def endpoint(self) -> str:
        return f"replay table {self.source}"

    def __len__(self) -> int:
        return len(self._index)

    def ask(self, records: Sequence[Record]) -> list[Answer]:
        out: list[Answer] = []
        for i, rec in enumerate(records):
            try:
                k = self._row_key(rec)
            except KeyError as exc:
                raise AccessError(
                    f"record {i} of the batch lacks field {exc.args[0]!r}, which the replay "
                    f"table {self.source} is matched on."
                ) from None
            j = self._index.get(k)
            if j is None:
                what = (
                    f"{self.key_column} = {rec[self.key_column]!r}"
                    if self.key_column is not None
                    else json.dumps({c: rec[c] for c in self.feature_columns}, default=str)[:120]
                )
                raise AccessError(
                    f"input {what} is not in replay table {self.source}; replay answers only the "
                    "inputs it recorded."
                )
            out.append(self._answers[j])
        return out
