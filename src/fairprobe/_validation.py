"""One validation shape for the whole public API.

Messages follow scikit-learn's ``validate_params`` wording so that every parameter error reads the
same way::

    The 'tolerance' parameter of demographic_parity must be a float in (0, 1). Got 1.5 instead.
"""

from __future__ import annotations

import math
from collections.abc import Collection
from numbers import Integral, Real
from typing import Any

from fairprobe.errors import InvalidParameterError

__all__ = ["check_choice", "check_int", "check_real", "param_error"]


def param_error(name: str, owner: str, expected: str, value: Any) -> InvalidParameterError:
    """Build the standard error for parameter ``name`` of ``owner``."""
    return InvalidParameterError(
        f"The {name!r} parameter of {owner} must be {expected}. Got {value!r} instead."
    )


def _interval(lo: float | None, hi: float | None, closed: str) -> str:
    left = "[" if closed in ("both", "left") else "("
    right = "]" if closed in ("both", "right") else ")"
    lo_s = "-inf" if lo is None else f"{lo:g}"
    hi_s = "inf" if hi is None else f"{hi:g}"
    return f"{left}{lo_s}, {hi_s}{right}"


def _inside(x: float, lo: float | None, hi: float | None, closed: str) -> bool:
    if lo is not None and (x < lo or (x == lo and closed not in ("both", "left"))):
        return False
    if hi is not None and (x > hi or (x == hi and closed not in ("both", "right"))):
        return False
    return True


def check_real(
    value: Any,
    name: str,
    owner: str,
    *,
    lo: float | None = None,
    hi: float | None = None,
    closed: str = "both",
) -> float:
    """Return ``value`` as a float after checking it is a finite real in the interval.

    ``closed`` is one of ``"both"``, ``"left"``, ``"right"``, ``"neither"``.
    """
    expected = "a float"
    if lo is not None or hi is not None:
        expected += f" in {_interval(lo, hi, closed)}"
    if isinstance(value, bool) or not isinstance(value, Real):
        raise param_error(name, owner, expected, value)
    x = float(value)
    if math.isnan(x) or not _inside(x, lo, hi, closed):
        raise param_error(name, owner, expected, value)
    return x


def check_int(
    value: Any,
    name: str,
    owner: str,
    *,
    lo: int | None = None,
    hi: int | None = None,
) -> int:
    """Return ``value`` as an int after checking it is an integer in ``[lo, hi]``."""
    expected = "an int"
    if lo is not None and hi is None:
        expected += f" >= {lo}"
    elif lo is not None or hi is not None:
        expected += f" in {_interval(lo, hi, 'both')}"
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise param_error(name, owner, expected, value)
    x = int(value)
    if not _inside(x, lo, hi, "both"):
        raise param_error(name, owner, expected, value)
    return x


def check_choice(value: Any, name: str, owner: str, choices: Collection[Any]) -> Any:
    """Check that ``value`` is one of ``choices`` and return it."""
    if value not in choices:
        listed = ", ".join(repr(c) for c in choices)
        raise param_error(name, owner, f"one of {{{listed}}}", value)
    return value


def parse_budget(value: Any, flag: str = "--budget") -> int | str | None:
    """A budget: ``None`` (the caller's default), ``"all"`` (every row of the pool or table) or
    an integer (its range is checked where it is used); anything else is one error line naming
    ``flag``. The one budget rule of every command and of the library calls behind them."""
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    v = str(value).strip().lower()
    if v == "all":
        return "all"
    try:
        return int(v)
    except ValueError:
        shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:18] + "..." + repr(value)[-8:]
        raise InvalidParameterError(
            f"{flag} must be a positive integer or 'all', got {shown}.") from None


def split_names(value: Any) -> list[str] | None:
    """``"a,b,c"`` (a flag's value) or a sequence as a list of names; ``None`` stays ``None``.
    The one rule for every comma-separated flag and its Python argument."""
    if value is None:
        return None
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    return [str(v) for v in value]


def env_int(name: str, default: int, *, lo: int, what: str) -> int:
    """The integer in environment variable ``name`` (``default`` when unset or blank); anything
    else, or a value below ``lo``, raises :class:`~fairprobe.errors.DataError` naming it and
    saying what it must be (``what``, e.g. ``"an integer >= 2"``)."""
    import os

    from fairprobe.errors import DataError

    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = lo - 1
    if value < lo:
        raise DataError(f"{name} must be {what}; got {raw!r}.")
    return value
