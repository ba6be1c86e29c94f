"""A minimal TOML writer for the roster and node files, and their reader (:mod:`tomllib`).

Supports what those files hold: strings, ints, floats, bools, lists of scalars, one level of
tables and arrays of tables.
"""

from __future__ import annotations

import json
import math
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from fairprobe.errors import ConfigError

__all__ = ["dumps", "load"]


def load(p: Path, what: str) -> dict[str, Any]:
    """The TOML document in file ``p``, or a :class:`ConfigError` naming it (``what``, e.g.
    ``"roster"``): unreadable, not UTF-8 text, or not valid TOML."""
    try:
        return tomllib.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"Cannot read {what} {p}: {exc.strerror}.") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{what.capitalize()} {p} is not UTF-8 text (byte {exc.start}); save it as UTF-8."
        ) from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{what.capitalize()} {p} is not valid TOML: {exc}.") from exc


def _scalar(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            raise ValueError(f"TOML cannot hold {v!r} here")
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)  # a JSON string is a valid TOML basic string
    if isinstance(v, Sequence):
        return "[" + ", ".join(_scalar(x) for x in v) + "]"
    raise TypeError(f"cannot write {type(v).__name__} to TOML")


def _is_table(v: Any) -> bool:
    return isinstance(v, Mapping)


def _is_table_array(v: Any) -> bool:
    return isinstance(v, list) and bool(v) and all(isinstance(x, Mapping) for x in v)


def dumps(doc: Mapping[str, Any]) -> str:
    """Serialise ``doc`` (top-level scalars, then tables, then arrays of tables)."""
    lines: list[str] = []
    for k, v in doc.items():
        if v is None or _is_table(v) or _is_table_array(v):
            continue
        lines.append(f"{k} = {_scalar(v)}")
    for k, v in doc.items():
        if _is_table(v):
            lines.append("")
            lines.append(f"[{k}]")
            lines.extend(f"{kk} = {_scalar(vv)}" for kk, vv in v.items() if vv is not None)
    for k, v in doc.items():
        if _is_table_array(v):
            for item in v:
                lines.append("")
                lines.append(f"[[{k}]]")
                lines.extend(f"{kk} = {_scalar(vv)}" for kk, vv in item.items() if vv is not None)
    return "\n".join(lines).lstrip("\n") + "\n"
