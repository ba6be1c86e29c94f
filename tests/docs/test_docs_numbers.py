"""Figures quoted in the docs match the committed results they come from.

A quoted figure names its source in an HTML comment right after it (invisible on the site and on
GitHub)::

    type-I **0.189 ± 0.004** <!-- src: sequential/error_rates.json glr_wald_at_delta_decisions.shares.violation glr_wald_at_delta_decisions.share_se.violation -->

The path is under ``experiments/results/``; each key path names one number, and the last that
many numbers before the comment on its line must equal them at the precision shown. A key path
is dot-separated; ``rows[test=mixture,gap=0.1]`` picks the list element whose fields match, and a
trailing ``*100`` reads a share as a percentage. Regenerating a result with other numbers fails
this test until the docs quote the new ones.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "experiments" / "results"
PAGES = sorted((REPO / "docs").rglob("*.md")) + [REPO / "README.md"]
COMMENT = re.compile(r"<!--\s*src:\s*(\S+)\s+([^>]*?)\s*-->")
NUMBER = re.compile(r"(?<![\w.])[-+−]?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?")


def _select(node: Any, segment: str) -> Any:
    m = re.fullmatch(r"([^\[\]]+)(?:\[(.*)\])?", segment)
    assert m, f"bad key segment {segment!r}"
    key, cond = m.group(1), m.group(2)
    node = node[int(key)] if isinstance(node, list) else node[key]
    if cond is None:
        return node
    wanted = dict(part.split("=", 1) for part in cond.split(","))
    hits = [el for el in node if all(str(el.get(k)) == v for k, v in wanted.items())]
    assert len(hits) == 1, f"{segment!r} matches {len(hits)} elements"
    return hits[0]


def resolve(doc: Any, path: str) -> float:
    scale = 1.0
    if path.endswith("*100"):
        path, scale = path[:-4], 100.0
    node = doc
    for segment in re.split(r"\.(?![^\[]*\])", path):
        node = _select(node, segment)
    return float(node) * scale


def _shown(text: str) -> tuple[float, float]:
    """The number as printed and half a unit of its last digit."""
    t = text.replace("−", "-").replace(",", "")
    if "e" in t.lower():
        mant = t.lower().split("e")[0]
        decimals = len(mant.split(".")[1]) if "." in mant else 0
        value = float(t)
        return value, 0.5 * 10 ** (math.floor(math.log10(abs(value))) - decimals) if value else 0.0
    decimals = len(t.split(".")[1]) if "." in t else 0
    return float(t), 0.5 * 10 ** (-decimals)


def _claims() -> list[tuple[str, int, str, str, list[str]]]:
    out = []
    for page in PAGES:
        for i, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            for m in COMMENT.finditer(line):
                before = re.sub(r"<!--.*?-->", "", line[: m.start()])
                out.append((str(page.relative_to(REPO)), i, m.group(1), m.group(2), [
                    x.group() for x in NUMBER.finditer(before)]))
    return out


CLAIMS = _claims()


def test_the_docs_name_their_sources() -> None:
    # the check is only worth something if the docs use it: the headline figures carry a source
    assert len(CLAIMS) >= 10, f"only {len(CLAIMS)} quoted figures name their source"


@pytest.mark.parametrize(("page", "line", "source", "keys", "numbers"), CLAIMS,
                         ids=[f"{c[0]}:{c[1]}" for c in CLAIMS])
def test_quoted_figure_matches_its_result(page: str, line: int, source: str, keys: str,
                                          numbers: list[str]) -> None:
    paths = keys.split()
    assert len(numbers) >= len(paths), f"{page}:{line}: fewer numbers than keys"
    doc = json.loads((RESULTS / source).read_text(encoding="utf-8"))
    for text, path in zip(numbers[-len(paths):], paths, strict=True):
        value = resolve(doc, path)
        shown, half = _shown(text)
        assert abs(value - shown) <= half + 1e-12, (
            f"{page}:{line} quotes {text} but {source} {path} is {value:.6g}")
