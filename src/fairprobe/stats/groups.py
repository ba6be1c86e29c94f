"""Choosing two groups from any group column: value vs value, or one value vs the rest."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from fairprobe.errors import DataError, EmptyGroupError, InvalidParameterError

__all__ = ["REST", "GroupSelection", "as_1d", "select_groups"]

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
