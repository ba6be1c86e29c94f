"""Choosing two groups from any group column: value vs value, or one value vs the rest."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from fairprobe._defaults import DEFAULT_MIN_GROUP_SIZE
from fairprobe.errors import DataError, EmptyGroupError, InvalidParameterError

__all__ = [
    "DEFAULT_MIN_GROUP_SIZE",
    "REST",
    "GroupLabels",
    "GroupSelection",
    "as_1d",
    "group_labels",
    "select_groups",
]

#: Label of the complement group when one side is "everyone else".
REST = "rest"


@dataclass(frozen=True)
class GroupSelection:
    """Boolean masks of the two chosen groups and their labels.

    ``in_a`` and ``in_b`` are disjoint; rows in neither (other values, when both groups are
    named) are ignored by the metrics.
    """

    in_a: npt.NDArray[np.bool_]
    in_b: npt.NDArray[np.bool_]
    label_a: str
    label_b: str

    @property
    def labels(self) -> tuple[str, str]:
        return (self.label_a, self.label_b)


def as_1d(values: Any, name: str) -> npt.NDArray[Any]:
    """``values`` (list, numpy array, pandas Series or one-column frame) as a 1-d numpy array."""
    if isinstance(values, pd.DataFrame):
        if values.shape[1] != 1:
            raise DataError(
                f"{name} must be one column; got a frame with columns {list(values.columns)}. "
                "Pass the single column to use."
            )
        values = values.iloc[:, 0]
    if isinstance(values, pd.Series):
        arr = values.to_numpy()
    else:
        arr = np.asarray(values)
        if arr.ndim == 1 and isinstance(values, list | tuple):
            # Keep None/NaN as missing (numpy would turn ["a", nan] into the string "nan").
            arr = pd.Series(list(values)).to_numpy()
    if arr.ndim == 2 and 1 in arr.shape:
        arr = arr.ravel()
    if arr.ndim != 1:
        raise DataError(f"{name} must be one-dimensional; got shape {arr.shape}.")
    return arr


def _label(v: Any) -> str:
    return str(v.item() if isinstance(v, np.generic) else v)


def select_groups(
    groups: Any,
    group_a: Any = None,
    group_b: Any = None,
) -> GroupSelection:
    """Masks of group A and group B in the group column ``groups``.

    Parameters
    ----------
    groups : array-like
        One group value per instance (strings, ints, categories, booleans...). No missing values.
    group_a, group_b : value or None
        The two groups. At most one may be ``None``: it then means "every other value" (one vs
        the rest, e.g. the privileged group vs everyone else of the two-source paper). With both
        ``None`` the column must hold exactly two values; group A is the smaller in sorted order.

    Raises
    ------
    DataError
        ``groups`` is empty, holds missing values, or holds a single value.
    EmptyGroupError
        A named group does not occur in ``groups``.
    InvalidParameterError
        ``group_a == group_b``, or both ``None`` with more than two values present.
    """
    col: Any
    if isinstance(groups, pd.DataFrame) and groups.shape[1] == 1:
        col = groups.iloc[:, 0]
    elif isinstance(groups, pd.Series):
        col = groups  # kept as a Series: categoricals factorise from their codes
    else:
        col = as_1d(groups, "The group column")
    # One factorisation pass: integer codes (-1 for missing), then integer comparisons only.
    try:
        codes, uniques = pd.factorize(col, use_na_sentinel=True)
    except TypeError:
        raise DataError(
            "The group column must hold hashable scalars (strings, numbers, booleans); "
            "convert lists or dicts to a label first."
        ) from None
    codes = np.asarray(codes)
    if codes.size == 0:
        raise DataError("The group column is empty: pass one group value per instance.")
    n_missing = int(np.count_nonzero(codes < 0))
    if n_missing:
        raise DataError(
            f"The group column holds {n_missing} missing value(s) (NaN/None): drop or "
            "label those rows first."
        )
    values = list(uniques)
    if len(values) < 2:
        raise DataError(
            f"The group column holds a single value ({_label(values[0])!r}): an audit needs "
            "instances of two groups."
        )
    present = ", ".join(repr(_label(v)) for v in _sorted(values)[:20])

    def mask_of(v: Any, which: str) -> npt.NDArray[np.bool_]:
        for i, u in enumerate(values):
            if _same(u, v):
                return np.asarray(codes == i)
        raise EmptyGroupError(
            f"{which}={v!r} does not occur in the group column; values present: {present}."
        )

    if group_a is None and group_b is None:
        if len(values) != 2:
            raise InvalidParameterError(
                f"The group column holds {len(values)} values ({present}): name group_a (and "
                "group_b, or leave it None for 'all the others')."
            )
        va, vb = _sorted(values)
        return GroupSelection(mask_of(va, "group_a"), mask_of(vb, "group_b"),
                              _label(va), _label(vb))
    if group_a is not None and group_b is not None:
        if _same(group_a, group_b):
            raise InvalidParameterError(
                f"group_a and group_b are the same value ({group_a!r}): choose two groups."
            )
        return GroupSelection(mask_of(group_a, "group_a"), mask_of(group_b, "group_b"),
                              _label(group_a), _label(group_b))
    if group_a is not None:
        ma = mask_of(group_a, "group_a")
        return GroupSelection(ma, ~ma, _label(group_a), REST)
    mb = mask_of(group_b, "group_b")
    return GroupSelection(~mb, mb, REST, _label(group_b))


def _same(x: Any, y: Any) -> bool:
    try:
        return bool(x == y)
    except (TypeError, ValueError):
        return False


def _sorted(values: list[Any]) -> list[Any]:
    plain = [v.item() if isinstance(v, np.generic) else v for v in values]
    try:
        return sorted(plain)
    except TypeError:
        return sorted(plain, key=str)


# --- any number of groups and their intersections ------------------------------------------------

# DEFAULT_MIN_GROUP_SIZE (the one group-filtering rule's default) lives in fairprobe._defaults,
# which the CLI imports without numpy/pandas; re-exported here.


@dataclass(frozen=True)
class GroupLabels:
    """Every instance's group among any number of groups (intersections of several columns).

    Attributes
    ----------
    codes : ndarray of int
        Group index of each instance into ``keys`` (``0 .. n_groups - 1``).
    keys : tuple of tuple
        Each group's value per sensitive column (one-tuples for a single column), sorted.
    names : tuple of str
        Names of the sensitive columns (``"sensitive_feature_0"``, ... when unnamed, as fairlearn).
    sizes : ndarray of int
        Instances per group.
    min_group_size : int
        Groups below this size are ``too_small``: listed with their counts, left out of the
        summaries (gaps, ratios, vs rest), never dropped silently.
    """

    codes: npt.NDArray[np.int64]
    keys: tuple[tuple[Any, ...], ...]
    names: tuple[str, ...]
    sizes: npt.NDArray[np.int64]
    min_group_size: int

    @property
    def n_groups(self) -> int:
        return len(self.keys)

    @property
    def labels(self) -> tuple[str, ...]:
        """One string per group: the value, or the values joined by ``", "`` for intersections."""
        return tuple(", ".join(_label(v) for v in k) for k in self.keys)

    @property
    def too_small(self) -> npt.NDArray[np.bool_]:
        return np.asarray(self.sizes < self.min_group_size)

    @property
    def eligible(self) -> npt.NDArray[np.bool_]:
        """Groups large enough to enter the summaries."""
        return ~self.too_small

    def index(self) -> pd.Index:
        """A pandas index of the groups, fairlearn's shape: a MultiIndex for several columns."""
        if len(self.names) == 1:
            return pd.Index([k[0] for k in self.keys], name=self.names[0])
        return pd.MultiIndex.from_tuples(list(self.keys), names=list(self.names))

    def mask(self, group: Any) -> npt.NDArray[np.bool_]:
        """Boolean mask of one group, given by label, value, or tuple of values."""
        return np.asarray(self.codes == self.position(group))

    def position(self, group: Any) -> int:
        """Index of ``group`` (label string, single value, or tuple of values) in ``keys``."""
        key = group if isinstance(group, tuple) else (group,)
        for i, k in enumerate(self.keys):
            if len(k) == len(key) and all(_same(x, y) for x, y in zip(k, key, strict=True)):
                return i
        for i, lab in enumerate(self.labels):
            if lab == str(group):
                return i
        shown = ", ".join(repr(x) for x in self.labels[:20])
        raise EmptyGroupError(f"Group {group!r} does not occur; groups present: {shown}.")


def _columns_of(sensitive_features: Any) -> tuple[list[Any], list[str]]:
    """The sensitive columns as a list of 1-d columns and their names (fairlearn's rules)."""
    sf = sensitive_features
    if isinstance(sf, pd.DataFrame):
        if sf.shape[1] == 0:
            raise DataError("sensitive_features has no column: pass at least one group column.")
        return [sf.iloc[:, j] for j in range(sf.shape[1])], [str(c) for c in sf.columns]
    if isinstance(sf, pd.Series):
        return [sf], [str(sf.name) if sf.name is not None else "sensitive_feature_0"]
    if isinstance(sf, dict):
        if not sf:
            raise DataError("sensitive_features is an empty dict: pass at least one column.")
        return [as_1d(v, f"sensitive_features[{k!r}]") for k, v in sf.items()], [
            str(k) for k in sf
        ]
    if isinstance(sf, list | tuple) and sf and all(
        isinstance(c, list | tuple | np.ndarray | pd.Series) for c in sf
    ):
        # a list of columns (fairlearn also takes a list of rows: a 2-d array is taken as rows)
        return [as_1d(c, "sensitive_features") for c in sf], [
            f"sensitive_feature_{j}" for j in range(len(sf))
        ]
    arr = np.asarray(sf) if not isinstance(sf, list | tuple) else pd.Series(list(sf)).to_numpy()
    if arr.ndim == 2 and arr.shape[1] > 1:
        return [arr[:, j] for j in range(arr.shape[1])], [
            f"sensitive_feature_{j}" for j in range(arr.shape[1])
        ]
    return [as_1d(sf, "sensitive_features")], ["sensitive_feature_0"]


def group_labels(
    sensitive_features: Any,
    *,
    min_group_size: int = DEFAULT_MIN_GROUP_SIZE,
) -> GroupLabels:
    """Group of every instance: the values of one column, or the intersections of several.

    Parameters
    ----------
    sensitive_features : Series, DataFrame, dict of columns, 1-d or 2-d array
        One group value per instance (1-d), or one column per sensitive attribute (a frame, a
        dict, or a 2-d array with one row per instance): each distinct combination of values
        that occurs is a group (an intersection such as ``("Female", "Black")``).
    min_group_size : int >= 1
        Groups with fewer instances are flagged ``too_small``: they stay in the by-group table
        with their counts and are left out of the summaries. Nothing is dropped silently.

    Raises
    ------
    DataError
        Empty column, missing values, columns of different lengths, unhashable values, or fewer
        than two groups.
    """
    from fairprobe._validation import check_int

    mgs = check_int(min_group_size, "min_group_size", "group_labels", lo=1)
    cols, names = _columns_of(sensitive_features)
    n = len(cols[0])
    if n == 0:
        raise DataError("sensitive_features is empty: pass one group value per instance.")
    codes_per: list[npt.NDArray[np.int64]] = []
    uniq_per: list[list[Any]] = []
    for col, name in zip(cols, names, strict=True):
        if len(col) != n:
            raise DataError(
                f"The sensitive columns differ in length ({name!r} has {len(col)}, the first "
                f"{n}): pass one value per instance in each."
            )
        try:
            codes, uniques = pd.factorize(col, use_na_sentinel=True)
        except TypeError:
            raise DataError(
                f"The sensitive column {name!r} must hold hashable scalars (strings, numbers, "
                "booleans); convert lists or dicts to a label first."
            ) from None
        codes = np.asarray(codes, dtype=np.int64)
        missing = int(np.count_nonzero(codes < 0))
        if missing:
            raise DataError(
                f"The sensitive column {name!r} holds {missing} missing value(s) (NaN/None): "
                "drop or label those rows first."
            )
        # recode in sorted order of the values so groups come out sorted, as in fairlearn
        vals = [u.item() if isinstance(u, np.generic) else u for u in list(uniques)]
        order = sorted(range(len(vals)), key=_sort_key(vals))
        rank = np.empty(len(vals), dtype=np.int64)
        rank[order] = np.arange(len(vals))
        codes_per.append(rank[codes])
        uniq_per.append([vals[i] for i in order])
    keys: list[tuple[Any, ...]] = []
    if float(np.prod([float(len(u)) for u in uniq_per])) < 2.0**62:
        # mixed-radix code of the combination, then the combinations that occur (sorted)
        combo = np.zeros(n, dtype=np.int64)
        for c, u in zip(codes_per, uniq_per, strict=True):
            combo = combo * len(u) + c
        present, inverse, sizes = np.unique(combo, return_inverse=True, return_counts=True)
        for code in present.tolist():
            parts: list[Any] = []
            for u in reversed(uniq_per):
                parts.append(u[code % len(u)])
                code //= len(u)
            keys.append(tuple(reversed(parts)))
    else:  # too many combinations for one int64 code: unique rows of the code matrix
        rows, inverse, sizes = np.unique(np.stack(codes_per, axis=1), axis=0,
                                         return_inverse=True, return_counts=True)
        keys = [tuple(u[c] for u, c in zip(uniq_per, r, strict=True)) for r in rows.tolist()]
    if len(keys) < 2:
        raise DataError(
            f"sensitive_features holds a single group ({', '.join(map(_label, keys[0]))!r}): "
            "an audit needs instances of at least two groups."
        )
    return GroupLabels(
        codes=np.asarray(inverse, dtype=np.int64).ravel(),
        keys=tuple(keys),
        names=tuple(names),
        sizes=np.asarray(sizes, dtype=np.int64),
        min_group_size=mgs,
    )


def _sort_key(vals: list[Any]) -> Any:
    try:
        sorted(vals)
    except TypeError:
        return lambda i: str(vals[i])
    return lambda i: vals[i]
