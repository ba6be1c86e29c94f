"""Tolerant readers of result JSON and number formatting shared by the report's adapters."""

from __future__ import annotations

import contextvars
import math
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

__all__ = ["floats", "non_numbers", "fmt", "fmt_interval", "get", "interval", "mapping", "num", "pct", "wilson"]

Doc = Mapping[str, Any]


def get(d: Any, *path: str | int, default: Any = None) -> Any:
    """``d[p0][p1]...`` or ``default`` when any step is missing or of the wrong type."""
    cur = d
    for p in path:
        if isinstance(p, int):
            if not isinstance(cur, list | tuple) or not -len(cur) <= p < len(cur):
                return default
            cur = cur[p]
        else:
            if not isinstance(cur, Mapping) or p not in cur:
                return default
            cur = cur[p]
    return default if cur is None else cur

def mapping(x: Any) -> Mapping[str, Any]:
    """``x`` if it is a JSON object, else an empty one."""
    return x if isinstance(x, Mapping) else {}

_NON_NUMBERS: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar(
    "non_numbers", default=None)


@contextmanager
def non_numbers() -> Iterator[list[str]]:
    """Collect the values :func:`num` was given where a number belongs but that are text, lists
    or objects (a hand-edited or hostile result): the report warns about them."""
    token = _NON_NUMBERS.set([])
    try:
        yield _NON_NUMBERS.get() or []
    finally:
        _NON_NUMBERS.reset(token)


def _record_non_number(x: Any) -> None:
    seen = _NON_NUMBERS.get()
    if seen is not None and isinstance(x, str | list | tuple | Mapping):
        text = repr(x) if isinstance(x, str) else type(x).__name__ if not x else (
            "a list" if isinstance(x, list | tuple) else "an object")
        seen.append(text if len(text) <= 40 else text[:37] + "...")


def num(x: Any) -> float | None:
    """A finite float, or None (text, lists and objects are recorded for :func:`non_numbers`)."""
    if isinstance(x, bool) or not isinstance(x, int | float):
        _record_non_number(x)
        return None
    f = float(x)
    return f if math.isfinite(f) else None

def fmt(x: Any, digits: int = 3) -> str:
    """A number for people: ``0.252``, ``1.2e-05``, ``1,579``; anything else as text."""
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, int):
        return f"{x:,}"
    f = num(x)
    if f is None:
        return "n/a" if x is None or isinstance(x, float) else str(x)
    if f != 0 and (abs(f) < 10 ** (-digits) or abs(f) >= 1e6):
        return f"{f:.2e}"
    return f"{f:.{digits}f}"

def pct(x: Any) -> str:
    f = num(x)
    return "n/a" if f is None else f"{f:.0%}"

def interval(d: Any) -> tuple[float, float] | None:
    """``(low, high)`` from ``{"low", "high"}`` or a two-element list."""
    if isinstance(d, Mapping):
        lo, hi = num(d.get("low")), num(d.get("high"))
    elif isinstance(d, list | tuple) and len(d) == 2:
        lo, hi = num(d[0]), num(d[1])
    else:
        return None
    return None if lo is None or hi is None else (lo, hi)

def fmt_interval(iv: tuple[float, float] | None, digits: int = 3) -> str:
    return "n/a" if iv is None else f"[{fmt(iv[0], digits)}, {fmt(iv[1], digits)}]"

def wilson(k: float, n: float, z: float = 1.959963984540054) -> tuple[float, float]:
    """Wilson score interval of a proportion ``k/n`` (for by-group bars of legacy results)."""
    if n <= 0:
        return (0.0, 1.0)
    p = k / n
    den = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return (max(0.0, centre - half), min(1.0, centre + half))

def floats(xs: Any) -> list[float] | None:
    """A list of numbers (None kept as NaN), or None if ``xs`` is not a list of numbers."""
    if not isinstance(xs, list) or not xs:
        return None
    out = []
    for x in xs:
        f = num(x)
        if f is None and x is not None and not isinstance(x, float):
            return None
        out.append(math.nan if f is None else f)
    return out


def extra_assumptions(doc: Doc) -> list[str]:
    """Assumptions a result states itself (field ``assumptions``), shown after the method's."""
    extra = doc.get("assumptions")
    if isinstance(extra, list):
        return [str(x) for x in extra if x]
    if isinstance(extra, Mapping):
        return [f"{k}: {v}" for k, v in extra.items()]
    return []
