"""JSON results: one writer for every command, atomic and numpy-aware."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from fairprobe.errors import DataError, InvalidParameterError
from fairprobe.provenance import SCHEMA

if TYPE_CHECKING:
    from fairprobe.provenance import Provenance

__all__ = [
    "RESULT_KINDS",
    "SCHEMA",
    "result_document",
    "interval_dict",
    "read_json",
    "read_result",
    "to_jsonable",
    "write_json",
    "write_result",
]


#: The ``kind`` of every result a fairprobe command writes.
RESULT_KINDS = (
    "audit",
    "sequential",
    "radius",
    "twosource",
    "twosource-plan",
    "collab-simulate",
    "collab-sweep",
    "collab-nodes",
    "demo",
    "platform-info",
)


def to_jsonable(obj: Any) -> Any:
    """Convert ``obj`` into plain JSON types.

    Objects with a ``to_dict()`` method, dataclasses, numpy scalars and arrays, paths and sets are
    converted; non-finite floats become ``null`` (JSON has no NaN or infinity).
    """
    if hasattr(obj, "to_dict") and callable(obj.to_dict):
        return to_jsonable(obj.to_dict())
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, Mapping):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple | set | frozenset):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return [to_jsonable(v) for v in obj.tolist()]
    if isinstance(obj, np.generic):
        return to_jsonable(obj.item())
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, Path):
        return str(obj)
    return obj


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_json(path: str | os.PathLike[str], obj: Any) -> Path:
    """Write ``obj`` as indented JSON to ``path`` atomically (temporary file, then rename)."""
    return write_text(path, json.dumps(to_jsonable(obj), indent=2, allow_nan=False) + "\n",
                      "JSON output")


def write_text(path: str | os.PathLike[str], data: str, what: str = "output") -> Path:
    """Write ``data`` to ``path`` atomically (temporary file, then rename): the one writer of
    ``--json`` and ``--csv`` outputs."""
    target = Path(path)
    _check_writable(target, what)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    except OSError as exc:
        raise DataError(
            f"cannot write {what} {target}: {exc.strerror or exc}; choose another path."
        ) from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(data)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp creates 0600; results follow the umask
        os.replace(tmp, target)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise DataError(
            f"cannot write {what} {target}: {exc.strerror or exc}; choose another path."
        ) from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def interval_dict(low: float, high: float, level: float, method: str) -> dict[str, Any]:
    """The one JSON shape of a confidence interval: ``{"low", "high", "level", "method"}``."""
    return {"low": float(low), "high": float(high), "level": float(level), "method": str(method)}


def _check_writable(target: Path, what: str) -> None:
    if target.is_dir():
        raise DataError(f"{what} {target} is a directory; give a file path.")
    parent = target.parent.absolute()
    for p in (parent, *parent.parents):
        if p.exists():
            if not p.is_dir():
                raise DataError(f"{what} {target}: {p} is a file, not a directory.")
            if not os.access(p, os.W_OK | os.X_OK):
                raise DataError(
                    f"{what} {target}: the directory {p} is not writable; choose another path."
                )
            break


def write_result(
    path: str | os.PathLike[str],
    kind: str,
    body: Any,
    provenance: Provenance | None = None,
) -> Path:
    """Write one result document ``{"schema": "fairprobe/1", "kind", "provenance", **body}``.

    Parameters
    ----------
    path : str or PathLike
        The ``--json`` file (written atomically; its directory is created).
    kind : str
        One of :data:`RESULT_KINDS` (a ``-variant`` suffix is not part of the kind).
    body : mapping or object with ``to_dict()``
        The command's own fields. A ``"kind"`` key in it is replaced by ``kind``; ``"schema"``
        and ``"provenance"`` keys are not allowed (they belong to the envelope).
    provenance : Provenance, optional
        What the result was computed from; default :meth:`Provenance.capture` (version, command
        line, UTC time only).

    Raises
    ------
    DataError
        ``path`` is a directory or cannot be written (the message says which).
    """
    return write_json(path, result_document(kind, body, provenance))


def result_document(kind: str, body: Any, provenance: Provenance | None = None) -> dict[str, Any]:
    """The document :func:`write_result` writes, without writing it (see there)."""
    from fairprobe.provenance import Provenance

    if kind not in RESULT_KINDS:
        raise InvalidParameterError(
            f"The 'kind' parameter of write_result must be one of {{{', '.join(RESULT_KINDS)}}}. "
            f"Got {kind!r} instead."
        )
    data = to_jsonable(body)
    if not isinstance(data, dict):
        raise InvalidParameterError(
            f"The 'body' parameter of write_result must be a mapping (or have to_dict()). Got a "
            f"{type(body).__name__} instead."
        )
    for key in ("schema", "provenance"):
        if key in data:
            raise InvalidParameterError(
                f"The 'body' of write_result has a {key!r} key; it belongs to the envelope."
            )
    data.pop("kind", None)
    prov = provenance if provenance is not None else Provenance.capture()
    return {"schema": SCHEMA, "kind": kind, "provenance": prov.to_dict(), **data}


def read_result(path: str | os.PathLike[str], kind: str | None = None) -> dict[str, Any]:
    """Read a result document and check its schema (and kind, if given).

    Raises
    ------
    DataError
        Not a fairprobe result, a foreign schema version, or another kind than ``kind``.
    """
    doc = read_json(path)
    if not isinstance(doc, dict) or "schema" not in doc:
        raise DataError(f"{path} is not a fairprobe result (no 'schema' field).")
    if doc["schema"] != SCHEMA:
        raise DataError(
            f"{path} has schema {doc['schema']!r}; this fairprobe reads {SCHEMA!r}."
        )
    if kind is not None and doc.get("kind") != kind:
        raise DataError(f"{path} holds a {doc.get('kind')!r} result, not {kind!r}.")
    return doc


def read_json(path: str | os.PathLike[str]) -> Any:
    """Read a JSON file, raising :class:`DataError` with the path on any failure."""
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except FileNotFoundError:
        raise DataError(f"File not found: {path}.") from None
    except json.JSONDecodeError as exc:
        raise DataError(f"{path} is not valid JSON: {exc.msg} at line {exc.lineno}.") from None
