"""JSON results and human-readable reports."""

from fairprobe.report.jsonio import read_json, to_jsonable, write_json

__all__ = ["read_json", "to_jsonable", "write_json"]
