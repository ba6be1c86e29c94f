"""Hostile and oversized result files for the report's hardening tests and its benchmark.

Every document is derived from a committed result (``tests/data/results/``) that a real command
wrote, so it has the real shape; only group names, strings and sizes are changed.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parents[1] / "data" / "results"

#: Strings that mean something to a browser, a Markdown converter, matplotlib or a terminal.
PAYLOADS = (
    "<script>document.title='pwned'</script>",
    "<img src=x onerror=\"document.title='pwned'\">",
    "<svg onload=\"document.title='pwned'\"></svg>",
    "[click](javascript:document.title='pwned')",
    "![x](javascript:document.title='pwned')",
    "<a href=\"javascript:document.title='pwned'\">a</a>",
    "\"><script>document.title='pwned'</script>",
    "</title><script>document.title='pwned'</script>",
    "`<script>document.title='pwned'</script>`",
    "$\\frac{a}{$",
    "$50K-$75K",
    "a|b\\|c",
    "\u202eevil\u202c\u2066x\u2069",
    "\x1b[31mred\x1b[0m\x07\r",
    "{{ 7*7 }} {% raw %}",
    "# heading\n- item\n1. one",
)


def load(name: str) -> dict[str, Any]:
    return json.loads((RESULTS / name).read_text())


def write(path: Path, doc: Any) -> Path:
    path.write_text(json.dumps(doc))
    return path


def many_groups(n: int, label: str | None = None) -> dict[str, Any]:
    """The committed every-group audit (Adult, by race) with ``n`` groups: each group copies
    the counts and rates of one of the five real groups; ``label``, if given, names the first."""
    doc = load("audit-groups.json")
    real = doc["by_group"]
    names = [f"group-{i:05d}" for i in range(n)]
    if label is not None:
        names[0] = label
    col = doc["group_col"][0]
    doc["by_group"] = []
    for i, name in enumerate(names):
        row = copy.deepcopy(real[i % len(real)])
        row["group"] = name
        row["values"] = {col: name}
        doc["by_group"].append(row)
    by = doc["provenance"]["answers"]["by_group"]
    base = list(by.values())
    doc["provenance"]["answers"]["by_group"] = {nm: base[i % len(base)]
                                                for i, nm in enumerate(names)}
    for s in doc["summaries"].values():
        s["pair"] = names[:2]
        s["compared"] = names
        s["excluded"] = {}
        s["vs_rest"] = []
        s["pairs"] = []
        s["family_size"] = n * (n - 1) // 2
    doc["per_instance"] = None
    return doc


def rename_groups(doc: Any, mapping: dict[str, str]) -> Any:
    """``doc`` with every string equal to a key of ``mapping`` (and every such object key)
    replaced: a group renamed everywhere, as if the data had carried that name."""
    if isinstance(doc, dict):
        return {mapping.get(k, k): rename_groups(v, mapping) for k, v in doc.items()}
    if isinstance(doc, list):
        return [rename_groups(v, mapping) for v in doc]
    if isinstance(doc, str):
        return mapping.get(doc, doc)
    return doc
