"""Result documents: one writer for every command, atomic and numpy-aware, and one reader.

Every method writes its result through :func:`write_result` (the ``fairprobe/1`` envelope with
provenance); the report reads them back with :func:`read_result`. It sits below the methods and
the report so that both can use it (``docs/architecture.md``).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fairprobe._jsonable import to_jsonable
from fairprobe.errors import DataError, InvalidParameterError
from fairprobe.provenance import SCHEMA

if TYPE_CHECKING:
    from fairprobe.provenance import Provenance

__all__ = [
    "Job",
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
    "discover",
    "platform-info",
    "proxy",
    "profile",
)


def write_json(path: str | os.PathLike[str], obj: Any, what: str = "JSON output") -> Path:
    """Write ``obj`` as indented JSON to ``path`` atomically (:func:`fairprobe._io.write_file`:
    only a missing path or a regular file is replaced)."""
    from fairprobe._io import check_output, write_file

    check_output(path, what)
    data = json.dumps(to_jsonable(obj), indent=2, allow_nan=False)
    return write_file(path, data + "\n", what=what)


def write_text(path: str | os.PathLike[str], data: str, what: str = "output") -> Path:
    """Write ``data`` to ``path`` atomically: the one writer of ``--json`` and ``--csv``
    outputs (:func:`fairprobe._io.write_file`: only a missing path or a regular file is
    replaced, in one line otherwise)."""
    from fairprobe._io import write_file

    return write_file(path, data, what=what)


def interval_dict(low: float, high: float, level: float, method: str) -> dict[str, Any]:
    """The one JSON shape of a confidence interval: ``{"low", "high", "level", "method"}``."""
    return {"low": float(low), "high": float(high), "level": float(level), "method": str(method)}


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


#: Bounds of :func:`read_json` (a result file is far inside them; a hostile one is refused).
MAX_BYTES = 256 * 1024 * 1024
MAX_DEPTH = 64
MAX_VALUES = 5_000_000
MAX_INT_DIGITS = 30


class _Refused(Exception):
    """A number :func:`read_json` refuses (raised from the decoder's hooks)."""


def _parse_int(s: str) -> int:
    if len(s.lstrip("-")) > MAX_INT_DIGITS:
        raise _Refused(f"an integer of {len(s.lstrip('-')):,} digits (at most {MAX_INT_DIGITS})")
    return int(s)


def _parse_float(s: str) -> float:
    f = float(s)
    if not math.isfinite(f):
        raise _Refused(f"the number {s[:40]} is outside the range of a float")
    return f


def _parse_constant(s: str) -> Any:
    raise _Refused(f"{s}, which is not JSON (write null for a missing number)")


def _check_shape(doc: Any) -> None:
    """Depth at most :data:`MAX_DEPTH`, at most :data:`MAX_VALUES` values (iterative walk)."""
    stack: list[tuple[Any, int]] = [(doc, 1)]
    count = 0
    while stack:
        node, depth = stack.pop()
        count += 1
        if count > MAX_VALUES:
            raise _Refused(f"more than {MAX_VALUES:,} values")
        if isinstance(node, dict | list):
            if depth > MAX_DEPTH:
                raise _Refused(f"nesting deeper than {MAX_DEPTH} levels")
            children = node.values() if isinstance(node, dict) else node
            stack.extend((c, depth + 1) for c in children if isinstance(c, dict | list))
            count += sum(1 for c in children if not isinstance(c, dict | list))


def read_json(path: str | os.PathLike[str]) -> Any:
    """Read a JSON file within bounds, raising :class:`DataError` in one line naming the file.

    Refused: a missing file, a directory or any other non-regular file (a FIFO would block),
    more than :data:`MAX_BYTES` bytes, text that is not UTF-8 or not JSON, nesting deeper than
    :data:`MAX_DEPTH`, more than :data:`MAX_VALUES` values, integers of more than
    :data:`MAX_INT_DIGITS` digits, numbers beyond the float range (``1e400``) and the non-JSON
    constants ``NaN``/``Infinity``.
    """
    from fairprobe._io import stat_regular

    name = os.fspath(path)
    st = stat_regular(path, {
        "missing": f"File not found: {name}.",
        "unreadable": f"Cannot read {name}: {{detail}}.",
        "directory": f"{name} is a directory, not a result JSON file.",
        "special": f"{name} is not a regular file (a device, FIFO or socket); give a result JSON "
                   "file.",
    })
    if st.st_size > MAX_BYTES:
        raise DataError(f"{name} is {st.st_size / 2**20:,.0f} MiB; result files are read up to "
                        f"{MAX_BYTES // 2**20} MiB.")
    try:
        with open(path, "rb") as fh:
            raw = fh.read(MAX_BYTES + 1)
    except OSError as exc:
        raise DataError(f"Cannot read {name}: {exc.strerror or exc}.") from None
    if len(raw) > MAX_BYTES:
        raise DataError(f"{name} is larger than {MAX_BYTES // 2**20} MiB; result files are read "
                        f"up to that size.")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DataError(f"{name} is not UTF-8 text (byte {exc.start:,}); give a result JSON "
                        f"file.") from None
    try:
        doc = json.loads(text, parse_int=_parse_int, parse_float=_parse_float,
                         parse_constant=_parse_constant)
        _check_shape(doc)
    except json.JSONDecodeError as exc:
        raise DataError(f"{name} is not valid JSON: {exc.msg} at line {exc.lineno}.") from None
    except RecursionError:
        raise DataError(f"{name} is refused: nesting deeper than {MAX_DEPTH} levels.") from None
    except _Refused as exc:
        raise DataError(f"{name} is refused: it holds {exc}.") from None
    return doc


@dataclasses.dataclass(frozen=True)
class Job:
    """A finished command: its result, what it was computed from, and the document of both.

    Every command's work is one library call that returns a ``Job`` (``audit_model`` returns its
    subclass :class:`~fairprobe.audit.job.AuditJob`); the command only parses flags, calls it, prints ``result`` and writes
    :meth:`to_dict`, so a Python user gets exactly what ``--json`` writes.

    Attributes
    ----------
    kind : str
        One of :data:`RESULT_KINDS`.
    result : object
        The method's result (it has ``to_dict()``; most have ``verdict`` and ``finding``).
    provenance : Provenance
        What the result was computed from (seed, pool, backend, answers paid and cached).
    extra : dict
        Fields the document holds beside the result's own.
    """

    kind: str
    result: Any
    provenance: Any
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def verdict(self) -> str | None:
        """The result's verdict, when it has one."""
        v = (self.result.get("verdict") if isinstance(self.result, dict)
             else getattr(self.result, "verdict", None))
        return None if v is None else str(v)

    def result_dict(self) -> Any:
        """The result's own fields (a subclass may choose, e.g. without one entry per row)."""
        return to_jsonable(self.result)

    def body(self) -> dict[str, Any]:
        """The result's fields and :attr:`extra`: the document without its envelope."""
        out = self.result_dict()
        if not isinstance(out, dict):
            raise InvalidParameterError(
                f"The result of a {self.kind} job must convert to a mapping; got "
                f"{type(self.result).__name__}.")
        out.update(to_jsonable(self.extra))
        return out

    def to_dict(self) -> dict[str, Any]:
        """The result document ``{"schema", "kind", "provenance", ...}`` the command writes."""
        return result_document(self.kind, self.body(), self.provenance)
