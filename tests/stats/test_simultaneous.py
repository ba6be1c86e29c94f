"""Simultaneous and exact intervals: coverage measured, and the docs' tables pinned.

The full tables come from ``experiments/stats/coverage_groups.py`` and
``experiments/stats/edge_coverage.py`` (JSON under ``experiments/results/stats/``); these tests
re-run a few of their cells with the same seeds and require the same numbers, and check the
guarantees on every stored row.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import binomtest

from fairprobe.stats.coverage import exact_coverage_two, simultaneous_coverage
from fairprobe.stats.exact import (
    clopper_pearson_interval,
    exact_difference_interval,
    exact_ratio_interval,
)
from fairprobe.stats.intervals import newcombe_interval

RESULTS = Path(__file__).resolve().parents[2] / "experiments" / "results" / "stats"
SIZES = {"20 each": [20] * 5, "20..2000": [20, 50, 200, 1000, 2000],
         "2000 x4, 20": [2000, 2000, 2000, 2000, 20], "2000 each": [2000] * 5}
RATES = {"0.01..0.05": [0.01, 0.01, 0.02, 0.03, 0.05], "all 0.5": [0.5] * 5,
         "all 0.02": [0.02] * 5}


def _rows() -> list[dict]:
    return json.loads((RESULTS / "coverage_groups.json").read_text())["rows"]


def test_exact_family_keeps_its_level_in_every_stored_cell() -> None:
    rows = [r for r in _rows() if r["method"] == "exact"]
    assert len(rows) == 60  # 6 size settings x 5 rate settings x (difference, ratio)
    for r in rows:
        assert r["family"] >= 0.95 - 2 * r["se_family"], r
        assert r["worst"] >= 0.95 - 2 * r["se_worst"], r


def test_bonferroni_shortfall_is_where_the_docs_say() -> None:
    bad = {(r["sizes"], r["rates"], r["kind"]) for r in _rows()
           if r["method"] == "bonferroni" and r["family"] < 0.95 - 2 * r["se_family"]}
    # small groups with rates near 0 or 1 only (docs/stats.md)
    assert bad and all(s in ("20 each", "20..2000") for s, _, _ in bad)
    assert all(rt in ("0.01..0.05", "0.95..0.99", "all 0.02") for _, rt, _ in bad)


@pytest.mark.parametrize(
    ("sizes", "rates", "kind", "method"),
    [
        ("20..2000", "0.01..0.05", "difference", "exact"),
        ("20..2000", "0.01..0.05", "difference", "bonferroni"),
        ("20 each", "0.01..0.05", "ratio", "bonferroni"),
        ("2000 each", "all 0.5", "difference", "exact"),
    ],
)
def test_stored_cells_reproduce_exactly(sizes, rates, kind, method) -> None:
    row = next(r for r in _rows() if (r["sizes"], r["rates"], r["kind"], r["method"])
               == (sizes, rates, kind, method))
    res = simultaneous_coverage(RATES[rates], SIZES[sizes], reps=row["reps"], seed=row["seed"],
                                method=method, kind=kind)
    assert res["family"] == row["family"] and res["worst"] == row["worst"]


def test_small_unbalanced_exact_coverage_fresh_seed() -> None:
    # an independent draw (not the stored seed): 2,000 audits of 5 groups, 20 to 2,000 each
    res = simultaneous_coverage([0.01, 0.02, 0.5, 0.03, 0.05], [20, 50, 200, 1000, 2000],
                                reps=2000, seed=12345, method="exact")
    assert res["family"] >= 0.95 - 2 * res["se_family"]


def test_clopper_pearson_matches_scipy() -> None:
    for k, n in [(0, 10), (3, 10), (10, 10), (1, 29), (81, 263)]:
        lo, hi = clopper_pearson_interval(k, n, 0.9)
        ref = binomtest(k, n).proportion_ci(0.9, method="exact")
        assert float(lo) == pytest.approx(ref.low, abs=1e-12)
        assert float(hi) == pytest.approx(ref.high, abs=1e-12)


@pytest.mark.parametrize(("A", "B"), [(10, 10), (10, 50)])
def test_exact_two_group_intervals_cover_everywhere(A, B) -> None:
    edge = np.array([0.001, 0.01, 0.03, 0.1, 0.3, 0.5, 0.7, 0.9, 0.97, 0.99, 0.999])
    p1, p2 = (x.ravel() for x in np.meshgrid(edge, edge, indexing="ij"))
    cov_d, _ = exact_coverage_two(exact_difference_interval, A, B, p1, p2)
    cov_r, _ = exact_coverage_two(exact_ratio_interval, A, B, p1, p2, kind="ratio")
    assert cov_d.min() >= 0.95 and cov_r.min() >= 0.95
    cov_n, _ = exact_coverage_two(newcombe_interval, A, B, p1, p2)
    assert cov_n.min() < 0.935  # Newcombe dips at the edges (docs/stats.md)


def test_edge_table_is_pinned() -> None:
    # the committed sweep of experiments/stats/edge_coverage.py, recomputed at one size
    doc = json.loads((RESULTS / "edge_coverage.json").read_text())["two"]
    p = np.asarray(doc["grid"])
    assert p[0] == 0.0 and p[-1] == 1.0
    p1, p2 = (x.ravel() for x in np.meshgrid(p, p, indexing="ij"))
    for name, fn in (("newcombe", newcombe_interval), ("exact", exact_difference_interval)):
        row = next(r for r in doc["rows"] if r["kind"] == "difference"
                   and r["construction"] == name)
        cell = next(c for c in row["by_size"] if (c["A"], c["B"]) == (20, 20))
        cov, wid = exact_coverage_two(fn, 20, 20, p1, p2)
        assert cov.min() == pytest.approx(cell["min"], abs=1e-12)
        assert wid.mean() == pytest.approx(cell["mean_width"], abs=1e-12)


def test_default_constructions_keep_the_level_in_the_whole_sweep() -> None:
    # exact enumeration over n = 5..100 and rates incl. 0 and 1; the default (exact) never
    # dips below 0.95, the asymptotic ones do; the default is at most 1.25x Newcombe's width
    full = json.loads((RESULTS / "edge_coverage.json").read_text())
    doc = full["two"]
    by = {(r["kind"], r["construction"]): r for r in doc["rows"]}
    assert [5, 5] in doc["sizes"] and [100, 100] in doc["sizes"]
    assert full["width_ratios"]["difference: exact / newcombe"]["mean"] <= 1.25
    assert by[("difference", "exact")]["default"] and by[("ratio", "exact")]["default"]
    assert by[("difference", "exact")]["min"] >= 0.95
    assert by[("ratio", "exact")]["min"] >= 0.95
    assert by[("difference", "newcombe")]["min"] < 0.9
    assert by[("ratio", "score")]["min"] < 0.9
    # and recomputed here at the smallest size, rates 0 and 1 included
    p = np.asarray(doc["grid"])
    p1, p2 = (x.ravel() for x in np.meshgrid(p, p, indexing="ij"))
    cov, _ = exact_coverage_two(exact_difference_interval, 5, 5, p1, p2)
    assert cov.min() >= 0.95
    keep = p2 > 0
    cov_r, _ = exact_coverage_two(exact_ratio_interval, 5, 5, p1[keep], p2[keep], kind="ratio")
    assert cov_r.min() >= 0.95
