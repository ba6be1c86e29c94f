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
    "collab.md": """
import numpy as np
from fairprobe.collab import NullSigner, NullVerifier
from fairprobe.stats.counts import CountsVector
rng = np.random.default_rng(0)
roster = ["a00", "a01"]
s, v = NullSigner(), NullVerifier()           # a node signs with Ed25519 keys instead
T = 3
my_queries = np.arange(1000)                  # this auditor's private query set
group = rng.random(1000) < 0.5
answers = np.stack([group, rng.random(1000) < np.where(group, 0.3, 0.4)], axis=1)
def counts_of(ans):
    g, d = ans[:, 0], ans[:, 1]
    return CountsVector(int((d & g).sum()), int(g.sum()), int((d & ~g).sum()), int((~g).sum()))
outbox = []
send = outbox.append
received_entries = []                         # the neighbours' tables of this round
""",
    "scale.md": """
import os
import numpy as np
import pandas as pd
from fairprobe.scale import CountSpec, count
rng = np.random.default_rng(0)
def day(n):
    return pd.DataFrame({"sex": rng.choice(["F", "M"], n), "race": rng.choice(list("abc"), n),
                         "p": rng.integers(0, 2, n), "y": rng.integers(0, 2, n)})
os.makedirs("logs", exist_ok=True)
os.makedirs("new", exist_ok=True)
day(2000).to_parquet("logs/2024-06-01.parquet")
day(500).to_parquet("new/2024-06-02.parquet")
_spec = CountSpec(group_cols=("sex", "race"), y_pred="p", y_true="y")
part_a, part_b = count(day(300), _spec), count(day(300), _spec)
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


#: A page's blocks may name the platform at its documented address; the test's server stands in.
DOC_URL = "http://127.0.0.1:8765"


@pytest.mark.parametrize("page", [p for p in PAGES if _blocks(p)])
def test_page_blocks_run(page: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    ns: dict[str, Any] = {"__name__": f"docs.{page}"}
    blocks = _blocks(page)
    url = None
    if "url" in SETUP.get(page, "") or any("url" in b or DOC_URL in b for b in blocks):
        url = request.getfixturevalue("url")
        ns["url"] = url
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        exec(compile(SETUP.get(page, ""), f"<setup of {page}>", "exec"), ns)
        for i, block in enumerate(blocks, 1):
            if url is not None:
                block = block.replace(DOC_URL, url)
            exec(compile(block, f"docs/{page} (python block {i})", "exec"), ns)
    finally:
        os.chdir(cwd)
