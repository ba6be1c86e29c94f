"""Query sets: the inputs an auditor sends, with a group column and optional true labels.

A :class:`QuerySet` is a validated DataFrame plus the names of its group, label and feature
columns. Load one from CSV or Parquet with :func:`load_queryset`, build one from a DataFrame with
:meth:`QuerySet.from_frame`, or take the bundled Adult one with :func:`adult_queryset`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from fairprobe._io import read_table as _read_table
from fairprobe._validation import check_choice, check_int
from fairprobe.errors import DataError, EmptyGroupError

__all__ = ["QuerySet", "adult_queryset", "load_queryset", "read_table"]



def read_table(path: str | Path) -> pd.DataFrame:
    """Read a query set file (CSV, TSV or Parquet); see :func:`fairprobe._io.read_table`."""
    return _read_table(path, "Query set file")


def _first_bad_row(mask: npt.NDArray[np.bool_]) -> int:
    return int(np.flatnonzero(mask)[0])


def _to_binary(values: pd.Series, col: str) -> npt.NDArray[np.int64]:
    if values.dtype == bool:
        return values.to_numpy().astype(np.int64)
    num = pd.to_numeric(values, errors="coerce")
    bad = num.isna().to_numpy() | ~num.isin([0, 1]).to_numpy()
    if bad.any():
        i = _first_bad_row(bad)
        v = values.iloc[i]
        v = v.item() if isinstance(v, np.generic) else v
        raise DataError(f"Label column {col!r} must hold 0/1 values; row {i} holds {v!r}.")
    return num.to_numpy().astype(np.int64)


@dataclass(frozen=True)
class QuerySet:
    """A validated table of queries.

    Attributes
    ----------
    frame : pandas.DataFrame
        One row per query (index reset to 0..n-1). Do not mutate it.
    group_col : str
        Column with each query's group (the protected attribute); no NaN, >= 2 distinct values.
    label_col : str or None
        Column with true labels as 0/1 (needed by equal opportunity), or None.
    feature_cols : tuple of str
        The columns sent to the model (may include ``group_col``, e.g. ``sex`` for an audit API
        that takes it); none of them holds NaN.
    """

    frame: pd.DataFrame
    group_col: str
    label_col: str | None
    feature_cols: tuple[str, ...]

    @classmethod
    def from_frame(
        cls,
        frame: pd.DataFrame,
        group_col: str,
        label_col: str | None = None,
        feature_cols: Sequence[str] | None = None,
        *,
        source: str = "query set",
    ) -> QuerySet:
        """Validate ``frame`` and wrap it.

        ``feature_cols`` defaults to every column but ``label_col`` (the group column included).
        Raises :class:`~fairprobe.errors.DataError` for a missing column, a NaN in a used column
        or a label other than 0/1, and :class:`~fairprobe.errors.EmptyGroupError` for an empty
        table or a group column with a single value.
        """
        if not isinstance(frame, pd.DataFrame):
            raise DataError(f"{source}: expected a pandas DataFrame, got {type(frame).__name__}.")
        if not isinstance(group_col, str):
            raise DataError(f"{source}: group_col must be a column name. Got {group_col!r}.")
        cols = [str(c) for c in frame.columns]
        needed = [group_col] + ([label_col] if label_col is not None else [])
        if feature_cols is None:
            feature_cols = [c for c in cols if c != label_col]
        else:
            if isinstance(feature_cols, str):
                feature_cols = [feature_cols]
            feature_cols = list(feature_cols)
            if not feature_cols:
                raise DataError(f"{source}: feature_cols is empty; name at least one column.")
            if label_col is not None and label_col in feature_cols:
                raise DataError(
                    f"{source}: the label column {label_col!r} cannot be a feature sent to the "
                    "model."
                )
        missing = [c for c in dict.fromkeys(needed + list(feature_cols)) if c not in cols]
        if missing:
            raise DataError(
                f"{source}: missing column(s) {missing}; the columns are {cols[:20]}"
                + ("..." if len(cols) > 20 else ".")
            )
        if len(frame) == 0:
            raise EmptyGroupError(f"{source}: the table has no rows.")
        df = frame.reset_index(drop=True)
        for c in dict.fromkeys(needed + list(feature_cols)):
            na = df[c].isna().to_numpy()
            if na.any():
                raise DataError(
                    f"{source}: column {c!r} has {int(na.sum())} missing value(s) (first at row "
                    f"{_first_bad_row(na)}); drop or fill them first."
                )
        n_groups = df[group_col].nunique()
        if n_groups < 2:
            raise EmptyGroupError(
                f"{source}: group column {group_col!r} has a single value "
                f"{df[group_col].iloc[0]!r}; an audit needs at least two groups."
            )
        if label_col is not None:
            df[label_col] = _to_binary(df[label_col], label_col)
        return cls(df, group_col, label_col, tuple(feature_cols))

    def __len__(self) -> int:
        return len(self.frame)

    @property
    def groups(self) -> npt.NDArray[Any]:
        """The group of each query."""
        return self.frame[self.group_col].to_numpy()

    @property
    def labels(self) -> npt.NDArray[np.int64]:
        """True labels 0/1 (DataError if the query set has none)."""
        if self.label_col is None:
            raise DataError("This query set has no label column; pass label_col when loading it.")
        return self.frame[self.label_col].to_numpy().astype(np.int64)

    def group_counts(self) -> dict[Any, int]:
        """Queries per group value."""
        return {k: int(v) for k, v in self.frame[self.group_col].value_counts().items()}

    def group_mask(self, value: Any, other: Any | None = None) -> npt.NDArray[np.bool_]:
        """Mask of the queries in group ``value`` (EmptyGroupError if there are none).

        With ``other`` given, also checks that group is non-empty (two-group comparisons).
        """
        g = self.frame[self.group_col]
        mask = (g == value).to_numpy()
        if not mask.any():
            raise EmptyGroupError(
                f"Group {value!r} has no query in column {self.group_col!r}; its values are "
                f"{sorted(map(str, g.unique()))[:10]}."
            )
        if other is not None and not (g == other).to_numpy().any():
            raise EmptyGroupError(f"Group {other!r} has no query in column {self.group_col!r}.")
        return np.asarray(mask, dtype=bool)

    def records(self) -> list[dict[str, Any]]:
        """The feature columns of each query as JSON-ready dicts (numpy scalars unboxed)."""
        recs = self.frame[list(self.feature_cols)].to_dict("records")
        return [{str(k): (v.item() if isinstance(v, np.generic) else v) for k, v in r.items()}
                for r in recs]  # fmt: skip

    def subset(self, index: npt.ArrayLike) -> QuerySet:
        """The queries at positions ``index`` (validated again)."""
        idx = np.asarray(index)
        return QuerySet.from_frame(
            self.frame.iloc[idx], self.group_col, self.label_col, self.feature_cols
        )

    def sample(self, n: int, seed: int | None = 0, *, stratify: bool = False) -> QuerySet:
        """``n`` queries drawn without replacement with ``default_rng(seed)``.

        ``stratify=True`` keeps the group proportions (largest remainders).
        """
        n = check_int(n, "n", "QuerySet.sample", lo=1, hi=len(self))
        rng = np.random.default_rng(seed)
        if not stratify:
            return self.subset(np.sort(rng.choice(len(self), size=n, replace=False)))
        g = self.groups
        values, counts = np.unique(g.astype(str), return_inverse=False, return_counts=True)
        quota = counts / counts.sum() * n
        take = np.floor(quota).astype(int)
        rest = n - int(take.sum())
        take[np.argsort(-(quota - take), kind="stable")[:rest]] += 1
        g_str = g.astype(str)
        chosen = [
            rng.choice(np.flatnonzero(g_str == v), size=k, replace=False)
            for v, k in zip(values, take, strict=True)
        ]
        return self.subset(np.sort(np.concatenate(chosen)))

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready description (not the rows)."""
        return {
            "n": len(self),
            "group_col": self.group_col,
            "label_col": self.label_col,
            "feature_cols": list(self.feature_cols),
            "group_counts": {str(k): v for k, v in self.group_counts().items()},
        }


def load_queryset(
    path: str | Path,
    group_col: str,
    label_col: str | None = None,
    feature_cols: Sequence[str] | None = None,
) -> QuerySet:
    """Load and validate a query set from a ``.csv`` or ``.parquet`` file.

    See :meth:`QuerySet.from_frame` for the checks and defaults.
    """
    frame = read_table(path)
    return QuerySet.from_frame(
        frame, group_col, label_col, feature_cols, source=f"query set {Path(path).name}"
    )


def adult_queryset(split: str = "test", interface: str = "audit", names_seed: int = 0) -> QuerySet:
    """The bundled Adult data as a query set for the platform server.

    ``interface="audit"`` sends the audit features (with ``sex``); ``"user"`` sends the user
    interface's (``first_name`` instead of ``sex``). The group column is ``sex`` and the label
    ``income`` in both cases.
    """
    from fairprobe.datasets.adult import AUDIT_FEATURES, USER_FEATURES, load_adult

    check_choice(interface, "interface", "adult_queryset", ["audit", "user"])
    df = load_adult(split, names_seed=names_seed)
    features = AUDIT_FEATURES if interface == "audit" else USER_FEATURES
    return QuerySet.from_frame(df, "sex", "income", features, source=f"Adult {split}")
