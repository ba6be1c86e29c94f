"""Data on a terminal: what the CLI prints of group names, column names, notes and errors.

Light on purpose (the standard library and rich only): the CLI imports it at startup.
"""

from __future__ import annotations

from typing import Any

from rich.markup import escape

__all__ = ["term", "visible"]

#: Characters that must not reach a terminal raw from data: C0/C1 controls (escape sequences,
#: carriage returns, bells) and the Unicode bidirectional controls that reorder what is shown
#: (Trojan Source, CVE-2021-42574), plus the line and paragraph separators.
_UNSAFE = (*range(0x00, 0x20), *range(0x7F, 0xA0), 0x061C, 0x200E, 0x200F,
           *range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x2028, 0x2029)
_VISIBLE = {c: f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}" for c in _UNSAFE}


def visible(text: Any) -> str:
    """``text`` with control and bidi-override characters written as escapes (``\\u202e``)."""
    return str(text).translate(_VISIBLE)


def term(text: Any) -> str:
    """Data for a rich console: :func:`visible`, and rich markup (``[red]``) escaped."""
    return escape(visible(text))
