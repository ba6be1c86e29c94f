"""Validity and power of ``fairprobe discover``: false-discovery rate, global null, planted groups.

    .venv/bin/python experiments/discover/fdr.py [--runs 500] [--n 100000] [--seed 0]
        [--workers 2]

Data: ``n`` rows, 10 features: six categorical (3 to 6 levels, cut from latent Gaussians at
quantiles) and four numeric (cut by the search into quartiles), all from one latent Gaussian
vector whose coordinates are independent (``indep``) or correlated 0.5 (``corr``). A new design
(features, and the planted subgroup) is drawn every ``--per-design`` runs (default 20, so 25
designs a cell of 500); the decisions are redrawn every run. Decisions are Bernoulli(p_i):

- ``null``: p_i = 0.3 for every row (the global null: no subgroup differs at all);
- ``boundary``: rows of one planted subgroup (two categorical conditions, ~5% of rows) get
  ``p = 0.3 + tau`` scaled so that its true gap to the rest is EXACTLY the tolerance: the worst
  null the search can face (every reported subgroup is a false discovery);
- ``planted``: the planted subgroup (share 2% or 5%) gets a gap of 0.1 or 0.2 over the rest.

A reported subgroup is a false discovery when its true gap (the mean of p_i over its rows minus
that over the rest, conditional on the design) is within the tolerance. Per cell: the share of
runs reporting any subgroup, the FDR (mean false share of the reported list, 0 when empty), the
power (the planted conjunction reported) and the mean number reported, with standard errors, for
every procedure and p-value construction shipped (``COMBOS``: Holm with exact p-values, the
default, first), at tolerance 0.05 (the default) and 0.

Counting: every grouping set's counts are ``np.bincount`` of its subgroup codes (the same sums
the engine's GROUPING SETS query returns; ``tests/discover/test_experiment.py`` checks they are
equal), then :func:`fairprobe.discover.search.decide`, the library's own decision.
Writes ``experiments/results/discover/fdr.json`` cell by cell (``complete`` says whether every
cell is in; a rerun with the same settings runs only the missing cells).
"""

from __future__ import annotations

import argparse
import itertools
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fairprobe.discover.search import (
    Condition,
    SubgroupCounts,
    _bin,
    _condition,
    decide,
    grouping_sets,
    search_pvalues,
)

OUT = Path("experiments/results/discover")
LEVELS = (3, 4, 5, 6, 4, 5)
CATS = tuple(f"cat{i}" for i in range(6))
NUMS = tuple(f"num{i}" for i in range(4))
FEATURES = CATS + NUMS
BASE = 0.3
#: (procedure, p-value construction) pairs measured: the default first, then every other
#: option shipped (the box kept for Holm and for BY, the earlier default).
COMBOS = (("holm", "joint"), ("reshaped", "joint"), ("by", "joint"), ("bh", "joint"),
          ("holm", "split"), ("by", "split"),
          ("holm", "box"), ("by", "box"))


def design(n: int, corr: float, rng: np.random.Generator) -> pd.DataFrame:
    d = len(FEATURES)
    cov = np.full((d, d), corr) + (1 - corr) * np.eye(d)
    z = rng.standard_normal((n, d)) @ np.linalg.cholesky(cov).T
    cols: dict[str, Any] = {}
    for j, (name, lv) in enumerate(zip(CATS, LEVELS, strict=True)):
        cuts = np.quantile(z[:, j], np.linspace(0, 1, lv + 1)[1:-1])
        cols[name] = np.digitize(z[:, j], cuts)
    for j, name in enumerate(NUMS, start=len(CATS)):
        cols[name] = 50 + 10 * z[:, j]
    return pd.DataFrame(cols)


def codes(frame: pd.DataFrame, sets: list[tuple[str, ...]]
          ) -> tuple[list[np.ndarray], list[list[tuple[int, ...]]]]:
    """Per grouping set: each row's mixed-radix code of its levels (every feature here is a
    small integer code), and the level tuple of every possible code."""
    cols = {f: frame[f].to_numpy(dtype=np.int64) for f in frame.columns}
    width = {f: int(v.max()) + 1 for f, v in cols.items()}
    out, levels = [], []
    for s in sets:
        code = np.zeros(len(frame), dtype=np.int64)
        for f in s:
            code = code * width[f] + cols[f]
        out.append(code)
        levels.append(list(itertools.product(*(range(width[f]) for f in s))))
    return out, levels


def counts_of(codes_: list[np.ndarray], levels: list[list[tuple[int, ...]]],
              sets: list[tuple[str, ...]], y: np.ndarray, edges: dict[str, list[float]]
              ) -> SubgroupCounts:
    """The engine's counts of every subgroup present (``np.bincount`` per grouping set)."""
    keys: list[tuple[Condition, ...]] = []
    ks, ns = [], []
    for c, lv, s in zip(codes_, levels, sets, strict=True):
        n = np.bincount(c, minlength=len(lv)).astype(float)
        k = np.bincount(c, weights=y, minlength=len(lv))
        present = np.flatnonzero(n > 0)  # the engine lists the groups that occur
        ns.append(n[present])
        ks.append(k[present])
        keys.extend(tuple(_condition(f, v, edges) for f, v in zip(s, lv[i], strict=True))
                    for i in present)
    n_all = np.concatenate(ns)
    return SubgroupCounts(tuple(keys), n_all.astype(np.int64), np.concatenate(ks), n_all,
                          float(y.sum()), float(len(y)), len(y))


def plant(frame: pd.DataFrame, share: float, rng: np.random.Generator
          ) -> tuple[np.ndarray, tuple[str, Any, str, Any]]:
    """The two-condition subgroup (two categorical features) whose share is closest to
    ``share``: its row mask and its conditions."""
    a, b = rng.choice(len(CATS), 2, replace=False)
    fa, fb = CATS[a], CATS[b]
    tab = pd.crosstab(frame[fa], frame[fb]) / len(frame)
    i, j = np.unravel_index(np.argmin(np.abs(tab.to_numpy() - share)), tab.shape)
    va, vb = tab.index[i], tab.columns[j]
    mask = ((frame[fa] == va) & (frame[fb] == vb)).to_numpy()
    return mask, (fa, va, fb, vb)


def run_cell(kind: str, corr: float, share: float, gap: float, runs: int, n: int, seed: int,
             per_design: int = 20) -> dict[str, Any]:
    sets = grouping_sets(FEATURES, 2)
    res: dict[tuple[str, str, float], dict[str, list[float]]] = {}
    shares = []
    for r in range(runs):
        rng = np.random.default_rng([seed, r])
        if r % per_design == 0:  # a new design: features, bins, codes, the planted subgroup
            drng = np.random.default_rng([seed, r, 1])
            raw = design(n, corr, drng)
            frame, edges = _bin(raw, FEATURES, 4)
            c, lv = codes(frame, sets)
            p = np.full(n, BASE)
            target = None
            if kind != "null":
                mask, target = plant(frame, share, drng)
                # boundary: the planted rows' gap to the rest (all at BASE) is exactly the
                # tolerance; planted: the gap asked for
                p[mask] = BASE + gap
            truth = counts_of(c, lv, sets, p, edges)  # sums of p_i: true rates per subgroup
            with np.errstate(invalid="ignore", divide="ignore"):
                true_gap = truth.k / truth.n - (truth.k_total - truth.k) / (
                    truth.n_total - truth.n)
            index = {k: i for i, k in enumerate(truth.keys)}
        if target is not None:
            shares.append(mask.mean())
        y = (rng.random(n) < p).astype(float)
        counts = counts_of(c, lv, sets, y, edges)
        for tau in (0.05, 0.0):
            # at tolerance 0 a planted subgroup's many sub-subgroups differ too: the options
            # but split (measured at 0.05) on the nulls, the default alone on the rest
            combos = COMBOS if tau > 0 else [c for c in COMBOS if c[1] != "split"]
            combos = combos if tau > 0 or kind != "planted" else COMBOS[:1]
            for method, pv in combos:
                pvals = search_pvalues(counts, tolerance=tau, fdr=0.1, method=method,
                                       min_size=30, pvalue=pv)
                out = decide(counts, metric="dp", fdr=0.1, tolerance=tau, method=method,
                             min_size=30, depth=2, features=FEATURES, bins=edges, pvalue=pv,
                             p_values=pvals, with_intervals=False)
                cell = res.setdefault((method, pv, tau), {"any": [], "fdp": [], "power": [],
                                                          "reported": [], "tested": []})
                rep = [index[s.conditions] for s in out.subgroups]
                false = [abs(true_gap[i]) <= tau + 1e-12 for i in rep]
                cell["any"].append(float(bool(rep)))
                cell["fdp"].append(float(np.mean(false)) if rep else 0.0)
                cell["reported"].append(float(len(rep)))
                cell["tested"].append(float(out.tested))
                if target is not None:
                    fa, va, fb, vb = target
                    want = {(fa, va), (fb, vb)}
                    found = any({(c_.feature, c_.value) for c_ in s.conditions} == want
                                for s in out.subgroups)
                    cell["power"].append(float(found))
    rows = []
    for (method, pv, tau), v in res.items():
        row: dict[str, Any] = {"kind": kind, "corr": corr, "share": share, "gap": gap,
                               "method": method, "pvalue": pv, "tolerance": tau, "runs": runs,
                               "n": n}
        for key in ("any", "fdp", "power", "reported", "tested"):
            arr = np.asarray(v[key])
            if arr.size:
                row[key] = float(arr.mean())
                row[key + "_se"] = float(arr.std(ddof=1) / np.sqrt(arr.size)) if arr.size > 1 else 0.0
        if shares:
            row["planted_share"] = float(np.mean(shares))
        rows.append(row)
    return {"rows": rows}


def _run(job: tuple[Any, ...]) -> dict[str, Any]:
    return run_cell(*job)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=500)
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--per-design", type=int, default=20)
    ap.add_argument("--workers", type=int, default=1, help="cells run in parallel processes")
    args = ap.parse_args()
    # the cells in order of importance (a run cut short keeps the first ones): the global null
    # with correlated features, every null subgroup at the tolerance, the planted ones
    cells = [("null", 0.5, 0.0, 0.0), ("boundary", 0.5, 0.05, 0.05),
             ("planted", 0.5, 0.02, 0.1), ("planted", 0.5, 0.05, 0.1),
             ("planted", 0.5, 0.02, 0.2), ("planted", 0.5, 0.05, 0.2),
             ("planted", 0.5, 0.03, 0.1), ("null", 0.0, 0.0, 0.0),
             ("planted", 0.5, 0.02, 0.15)]
    order = list(range(len(cells)))
    settings = {"runs": args.runs, "n": args.n, "seed": args.seed, "fdr": 0.1,
                "per_design": args.per_design, "features": list(FEATURES), "depth": 2,
                "combos": [list(c) for c in COMBOS]}
    path = OUT / "fdr.json"
    done: dict[str, Any] = {}
    if path.is_file():
        import json

        old = json.loads(path.read_text())
        if {k: old.get(k) for k in settings} == settings:
            done = dict(old.get("cells") or {})
    # cells are written to the JSON as they finish; a rerun with the same settings keeps the
    # finished ones and runs the others
    t0 = time.perf_counter()
    # each cell's seed is fixed by its position in the list, so workers change no figure
    jobs = [(*cells[i], args.runs, args.n, args.seed * 100 + i, args.per_design) for i in order
            if _key(cells[i]) not in done]
    if args.workers > 1:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(args.workers) as pool:
            for job, got in zip(jobs, pool.map(_run, jobs), strict=True):
                done[_key(job[:4])] = got["rows"]
                _save(path, settings, done, cells, t0)
    else:
        for job in jobs:
            done[_key(job[:4])] = _run(job)["rows"]
            _save(path, settings, done, cells, t0)
    for cell in cells:
        for r in done.get(_key(cell), []):
            print(f"{r['kind']:9s} corr {r['corr']:.1f} share {r['share']:.2f} gap {r['gap']:.2f} "
                  f"{r['method']:8s} {r['pvalue']:5s} tau {r['tolerance']:.2f}: any "
                  f"{r['any']:.3f} +- {r['any_se']:.3f}  FDR {r['fdp']:.3f} +- "
                  f"{r['fdp_se']:.3f}  power {r.get('power', float('nan')):.3f}  reported "
                  f"{r['reported']:.1f} of {r['tested']:.0f}", flush=True)


def _key(cell: tuple[Any, ...]) -> str:
    kind, corr, share, gap = cell
    return f"{kind} {corr} {share} {gap}"


def _save(path: Path, settings: dict[str, Any], done: dict[str, Any],
          cells: list[tuple[Any, ...]], t0: float) -> None:
    from fairprobe.documents import write_json

    OUT.mkdir(parents=True, exist_ok=True)
    rows = [r for c in cells for r in done.get(_key(c), [])]
    write_json(path, {**settings, "seconds": time.perf_counter() - t0,
                      "complete": all(_key(c) in done for c in cells), "cells": done,
                      "rows": rows})

if __name__ == "__main__":
    main()
