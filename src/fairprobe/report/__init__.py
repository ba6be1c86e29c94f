"""JSON results and human-readable reports."""

# The result documents' reader and writer, under the report's name: the names are listed once,
# in fairprobe.report.jsonio.__all__, so this package cannot drift from that module.
from fairprobe.report import jsonio
from fairprobe.report.jsonio import *  # noqa: F403

__all__: list[str] = []
__all__ += jsonio.__all__
