"""A discovery in the report: a ranked table and a figure, and one headline question counted at
its share of the error budget (refit from the adjusted p-values)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from fairprobe.discover import discover_subgroups
from fairprobe.documents import Job
from fairprobe.provenance import Provenance
from fairprobe.report.build import build_report


def _doc(planted: float) -> dict:
    rng = np.random.default_rng(2)
    n = 30_000
    df = pd.DataFrame({"a": rng.choice(list("xyz"), n), "b": rng.choice(list("pq"), n)})
    df["y"] = (rng.random(n) < np.where((df.a == "x") & (df.b == "p"), 0.3 + planted, 0.3)
               ).astype(int)
    res = discover_subgroups(df, y_pred="y", features=["a", "b"])
    return Job("discover", res, Provenance.capture(seed=0)).to_dict()


def test_discovery_is_one_counted_question() -> None:
    rep = build_report([("d.json", _doc(0.2))])
    assert rep.overall == "unfair"
    sec = next(s for s in rep.sections if s.kind == "discover")
    assert sec.tables and sec.tables[0].rows[0][0] == "a = x and b = p"
    assert sec.figures and sec.figures[0].plot == "estimates"


def test_no_discovery_is_undetermined_never_fair() -> None:
    rep = build_report([("d.json", _doc(0.0))])
    assert rep.overall == "undetermined"
