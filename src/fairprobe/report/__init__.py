"""JSON results and human-readable reports."""

from fairprobe.report.jsonio import (
    RESULT_KINDS,
    SCHEMA,
    interval_dict,
    read_json,
    read_result,
    to_jsonable,
    write_json,
    write_result,
)

__all__ = [
    "RESULT_KINDS",
    "SCHEMA",
    "interval_dict",
    "read_json",
    "read_result",
    "to_jsonable",
    "write_json",
    "write_result",
]
