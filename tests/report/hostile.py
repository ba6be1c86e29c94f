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


def replay_audit_files(folder: Path, groups: list[str], per_group: int = 40,
                       seed: int = 0) -> tuple[Path, Path]:
    """A query pool whose group column holds ``groups`` and a replay backend answering it.

    The pool (``pool.csv``: ``uid``, two features, ``grp``, ``decision``) is also the replay
    table, matched on ``uid``: a real audit (``fairprobe audit --backend-config replay.toml
    --queries pool.csv --group-col grp``) over the hostile group names, no model needed.
    """
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(seed)
    n = per_group * len(groups)
    grp = np.repeat(np.array(groups, dtype=object), per_group)
    rate = np.repeat(np.linspace(0.2, 0.8, len(groups)), per_group)
    pool = pd.DataFrame({"uid": [f"u{i:05d}" for i in range(n)],
                         "x1": rng.normal(size=n).round(3), "x2": rng.integers(0, 9, n),
                         "grp": grp, "decision": (rng.random(n) < rate).astype(int)})
    table = folder / "pool.csv"
    pool.to_csv(table, index=False)
    cfg = folder / "replay.toml"
    cfg.write_text(f'kind = "replay"\npath = "{table.name}"\nkey_column = "uid"\n')
    return table, cfg


def cli(*args: str, cwd: Path | None = None, timeout: float = 300) -> Any:
    """``python -m fairprobe ARGS`` as a real process."""
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "fairprobe", *args], capture_output=True,
                          text=True, timeout=timeout, cwd=cwd)


def audit_args(table: Path, cfg: Path, out: Path, cache: Path) -> list[str]:
    return ["audit", "--backend-config", str(cfg), "--queries", str(table), "--group-col",
            "grp", "--metric", "dp", "--no-progress", "--cache", str(cache), "--json", str(out)]
