"""A metric's name lives in one place: its canonical name and its short name (first alias)
appear as a string literal in at most two source files, the registry (``fairprobe/metrics.py``)
and one compatibility table; every other module reads them from the registry
(``_metrics.DP.name``, ``_metrics.DP.short``, :func:`fairprobe.metrics.resolve`).

Not counted: the names of public functions in ``__all__`` and in a package's lazy-import map
(``{"demographic_parity_difference": "fairprobe.stats.api"}``): those are Python identifiers
of fairlearn-style functions, not metric names.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

from fairprobe import metrics as registry

SRC = Path(__file__).resolve().parents[1] / "src" / "fairprobe"

def _identifier_constants(tree: ast.AST) -> set[int]:
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            out |= {id(c) for c in ast.walk(node.value)}
        if isinstance(node, ast.Dict) and node.values and all(
                isinstance(v, ast.Constant) and isinstance(v.value, str)
                and v.value.startswith("fairprobe.") for v in node.values):
            out |= {id(k) for k in node.keys if k is not None}
    return out


def _literal_files() -> dict[str, set[str]]:
    names = set()
    for m in registry.METRICS.values():
        names |= {m.name, m.short}
    found: dict[str, set[str]] = defaultdict(set)
    for path in SRC.rglob("*.py"):
        rel = path.relative_to(SRC).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skip = _identifier_constants(tree)
        for node in ast.walk(tree):
            if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                    and node.value in names and id(node) not in skip):
                found[node.value].add(rel)
    return found


def test_each_metric_name_is_spelled_in_at_most_two_files() -> None:
    found = _literal_files()
    assert found["demographic_parity_difference"] >= {"metrics.py"}  # the scan sees literals
    too_many = {name: sorted(files) for name, files in found.items()
                if len(files) > 2}
    assert not too_many, f"metric names spelled outside the registry: {too_many}"


def test_the_registry_spells_every_name() -> None:
    found = _literal_files()
    for m in registry.METRICS.values():
        assert "metrics.py" in found[m.name], m.name
