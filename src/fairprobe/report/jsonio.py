"""The result documents' reader and writer, under the report's name.

They live in :mod:`fairprobe.documents` (below the methods, which write them); this module keeps
the name under which the report and older scripts import them.
"""

from fairprobe.documents import (
    MAX_BYTES,
    MAX_DEPTH,
    MAX_INT_DIGITS,
    MAX_VALUES,
    RESULT_KINDS,
    SCHEMA,
    interval_dict,
    read_json,
    read_result,
    result_document,
    to_jsonable,
    write_json,
    write_result,
    write_text,
)

__all__ = [
    "MAX_BYTES",
    "MAX_DEPTH",
    "MAX_INT_DIGITS",
    "MAX_VALUES",
    "RESULT_KINDS",
    "SCHEMA",
    "interval_dict",
    "read_json",
    "read_result",
    "result_document",
    "to_jsonable",
    "write_json",
    "write_result",
    "write_text",
]
