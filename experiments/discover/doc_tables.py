"""Print the two tables of ``docs/discover.md`` from the committed results, each figure with
the ``<!-- src: FILE keypath -->`` comment that ``tests/docs/test_docs_numbers.py`` checks.

    .venv/bin/python experiments/discover/doc_tables.py fdr|power

``fdr``: ``experiments/results/discover/fdr.json`` (``fdr.py``); ``power``:
``experiments/results/discover/power_bound.json`` (``power_bound.py``). Paste the output over
the table of the same name after regenerating a result.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

OUT = Path("experiments/results/discover")
METHODS = {"holm": "Holm", "reshaped": "reshaped", "by": "BY", "bh": "BH"}


def _fmt(v: float) -> str:
    return f"{v:g}"


def _label(r: dict[str, Any]) -> str:
    if r["kind"] == "null":
        return ("global null, features correlated 0.5" if r["corr"] else
                "global null, independent features")
    share = f"{100 * r['planted_share']:.1f}%"
    if r["kind"] == "boundary":
        return f"one subgroup ({share}) exactly at the tolerance"
    return f"planted {share} of rows, gap {_fmt(r['gap'])}"


def fdr_table() -> str:
    doc = json.loads((OUT / "fdr.json").read_text())
    lines = ["| data | tolerance | method, p-value | any reported | FDR | power (planted found) "
             "| reported (of ~872) |", "|---|---|---|---|---|---|---|"]
    for r in doc["rows"]:
        key = (f"rows[kind={r['kind']},corr={r['corr']},share={r['share']},gap={r['gap']},"
               f"method={r['method']},pvalue={r['pvalue']},tolerance={r['tolerance']}]")

        def pm(name: str, r: dict[str, Any] = r, key: str = key) -> str:
            if name not in r:
                return ""
            return (f"{r[name]:.3f} ± {r[name + '_se']:.3f} <!-- src: discover/fdr.json "
                    f"{key}.{name} {key}.{name}_se -->")

        method = f"{METHODS[r['method']]}, {r['pvalue']}"
        if (r["method"], r["pvalue"]) == ("holm", "joint"):
            method += " (default)"
        tol = "0" if r["tolerance"] == 0 else _fmt(r["tolerance"])
        lines.append(f"| {_label(r)} | {tol} | {method} | {pm('any')} | {pm('fdp')} | "
                     f"{pm('power')} | {r['reported']:.1f} <!-- src: discover/fdr.json "
                     f"{key}.reported --> |")
    return "\n".join(lines)


def power_table() -> str:
    doc = json.loads((OUT / "power_bound.json").read_text())
    lines = ["| subgroup rows (share) | gap | tolerance | bound (oracle) | Holm, joint (default) "
             "| Holm, split | Holm, box | BY, joint | BY, box |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in doc["rows"]:
        key = f"rows[share={r['share']},gap={r['gap']},tolerance={r['tolerance']}]"
        cells = [f"{r['holm_oracle']:.3f} <!-- src: discover/power_bound.json "
                 f"{key}.holm_oracle -->"]
        for name in ("holm_joint", "holm_split", "holm_box", "by_joint", "by_box"):
            cells.append(f"{r[name]:.3f} ± {r[name + '_se']:.3f} <!-- src: "
                         f"discover/power_bound.json {key}.{name} {key}.{name}_se -->")
        lines.append(f"| {r['rows']:,} ({100 * r['share']:.1f}%) | {_fmt(r['gap'])} | "
                     f"{r['tolerance'] or 0.0} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(fdr_table() if sys.argv[1:] == ["fdr"] else power_table())
