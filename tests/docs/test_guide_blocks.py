"""Every Python block of the user guide runs as written.

The pages are those of the site's "User guide" section (``mkdocs.yml``). A page's ``python``
blocks run in order in one namespace, in a fresh working directory, after the page's setup below,
which provides the names the page's text introduces in prose (a query pool, a running platform
server's ``url``, a model's decisions). A block that is not Python is fenced as ``text``. Console
blocks of the tutorial run in ``tests/test_tutorial.py``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]


def _guide_pages() -> list[str]:
    nav = yaml.safe_load((REPO / "mkdocs.yml").read_text(encoding="utf-8"))["nav"]
    for section in nav:
        if "User guide" in section:
            return [next(iter(p.values())) for p in section["User guide"]]
    raise AssertionError("mkdocs.yml has no 'User guide' section")


PAGES = _guide_pages()


def _blocks(page: str) -> list[str]:
    text = (REPO / "docs" / page).read_text(encoding="utf-8")
    return re.findall(r"^```python\n(.*?)^```", text, re.S | re.M)


# What each page's prose introduces before its blocks use it. ``url`` is a platform server the
# test starts; pages without Python blocks need no setup.
SETUP: dict[str, str] = {
    "sequential.md": """
import numpy as np
import pandas as pd
from fairprobe.datasets import load_adult
from fairprobe.datasets.adult import AUDIT_FEATURES
queries_df = load_adult("test", names_seed=None)[[*AUDIT_FEATURES, "income"]]
rng = np.random.default_rng(0)
df = queries_df.assign(dec=(rng.random(len(queries_df)) < 0.3).astype(int),
                       score=rng.random(len(queries_df)))
stream = zip(rng.random(500) < 0.5, (rng.random(500) < 0.3).astype(int))
""",
    "twosource.md": "URL = url\n",
    "radius.md": """
import numpy as np
rng = np.random.default_rng(0)
groups = np.repeat(["A", "B"], 200)
values = (rng.random(400) < np.where(groups == "A", 0.35, 0.5)).astype(float)
""",
    "platform.md": """
from fairprobe.platform.core import EXAMPLE_AUDIT_RECORD
record = EXAMPLE_AUDIT_RECORD
""",
}


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    from fairprobe.platform.process import PlatformProcess

    with PlatformProcess(seed=0) as plat:
        yield plat.url


def test_the_guide_has_runnable_blocks() -> None:
    assert sum(len(_blocks(p)) for p in PAGES) >= 5


@pytest.mark.parametrize("page", [p for p in PAGES if _blocks(p)])
def test_page_blocks_run(page: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    ns: dict[str, Any] = {"__name__": f"docs.{page}"}
    if "url" in SETUP.get(page, "") or any("url" in b for b in _blocks(page)):
        ns["url"] = request.getfixturevalue("url")
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        exec(compile(SETUP.get(page, ""), f"<setup of {page}>", "exec"), ns)
        for i, block in enumerate(_blocks(page), 1):
            exec(compile(block, f"docs/{page} (python block {i})", "exec"), ns)
    finally:
        os.chdir(cwd)
