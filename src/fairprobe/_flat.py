"""Sorting a call's flat keywords (the compatibility form) into its options objects.

It imports nothing but the errors, so every floor (the statistics included, which may not reach
the access floor that :mod:`fairprobe.options` loads lazily) shares one copy.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from fairprobe.errors import InvalidParameterError

__all__ = ["split_flat", "with_fields"]


def split_flat(
    flat: Mapping[str, Any],
    targets: Mapping[str, tuple[str, str]],
    owner: str,
) -> dict[str, dict[str, Any]]:
    """Sort the flat keywords of a compatibility form into one dict per options object.

    ``targets`` maps each accepted keyword to ``(object name, field name)``; an unknown keyword
    raises :class:`TypeError`, as a function's unknown keyword does.
    """
    out: dict[str, dict[str, Any]] = {}
    for key, value in flat.items():
        if key not in targets:
            raise TypeError(f"{owner}() got an unexpected keyword argument {key!r}")
        obj, name = targets[key]
        out.setdefault(obj, {})[name] = value
    return out


def with_fields(obj: Any, cls: type, values: Mapping[str, Any] | None) -> Any:
    """``obj`` (an instance of ``cls``, or ``None``: the defaults) with ``values`` replaced."""
    values = dict(values or {})
    if obj is None:
        return cls(**values)
    if not isinstance(obj, cls):
        raise InvalidParameterError(f"Expected a {cls.__name__}, got {type(obj).__name__}.")
    out: Any = obj
    return dataclasses.replace(out, **values) if values else out
