"""Differential test of the readers: hostile files (glob characters in names, links, column names
like the engines' own or like SQL, NaN, booleans, leading-zero and yes/no labels, CSV and Parquet)
give identical by-group counts, or the same error, on DuckDB, pandas and Dask.

``make test`` runs a short fixed-seed budget; a release runs more examples with
``FAIRPROBE_DIFFERENTIAL_EXAMPLES=2000`` (``docs/scale.md``).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pandas as pd
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from fairprobe.scale import CountSpec

from .test_reader_contract import client, outcome  # noqa: F401  (the module's cluster)

EXAMPLES = int(os.environ.get("FAIRPROBE_DIFFERENTIAL_EXAMPLES", "25"))

NAMES = st.sampled_from(["g", "s", "t", "p", "w", "select", "n ame", 'a"b', "r_y_pred", "n",
                         "GROUP"])
LABELS = st.sampled_from(["a", "b", "02134", "2134", "yes", "no", "True", "1", "x y", "é"])
FILE = st.sampled_from(["f.csv", "f[1].csv", "*.csv", "f.parquet", "m[1].parquet",
                        "?.parquet"])


@st.composite
def files(draw: st.DrawFn) -> dict[str, object]:
    n = draw(st.integers(2, 12))
    gname = draw(NAMES)
    decisions = draw(st.sampled_from(["int", "bool", "float-nan", "text"]))
    rows = draw(st.lists(st.tuples(LABELS, st.booleans()), min_size=n, max_size=n))
    g = [r[0] for r in rows]
    d = [r[1] for r in rows]
    if decisions == "int":
        p: list[object] = [int(x) for x in d]
    elif decisions == "bool":
        p = list(d)
    elif decisions == "float-nan":
        p = [float(x) for x in d]
        p[draw(st.integers(0, n - 1))] = float("nan")
    else:
        p = ["Y" if x else "N" for x in d]
    pos = draw(st.sampled_from([None, 0, 1, "Y"]))
    return {"frame": pd.DataFrame({gname: g, "dec": p}), "group": gname, "pos": pos,
            "file": draw(FILE), "link": draw(st.booleans())}


@seed(20261206)
@settings(max_examples=EXAMPLES, deadline=None, derandomize=False,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(case=files())
def test_engines_agree_on_hostile_files(case: dict[str, object], client: object) -> None:  # noqa: F811
    tmp = Path(tempfile.mkdtemp(prefix="fp-diff-"))
    try:
        frame = case["frame"]
        assert isinstance(frame, pd.DataFrame)
        name = str(case["file"])
        path = tmp / name
        if name.endswith(".csv"):
            frame.to_csv(path, index=False)
        else:
            frame.to_parquet(path)
        if case["link"]:
            os.symlink(path, tmp / ("link" + path.suffix))
        spec = CountSpec((str(case["group"]),), "dec", pos_label=case["pos"])
        got = {e: outcome(str(path if not case["link"] else tmp), spec, e, client)
               for e in ("duckdb", "pandas", "dask")}
        assert got["duckdb"] == got["pandas"] == got["dask"], (case, got)
        if not str(got["duckdb"]).startswith("error:"):
            assert sum(int(r[1]) for r in got["duckdb"]) == len(frame)  # type: ignore[union-attr]
    finally:
        shutil.rmtree(tmp)

