"""``fairprobe discover`` beside AIF360's MDSS scan and pysubgroup, on the same planted data.

    .venv/bin/python benchmarks/bench_discover.py [--runs 5] [--n 100000]
        [--peer-python /path/to/venv-with-aif360-and-pysubgroup/bin/python]

Each run draws 10 features (six categorical, four numeric cut into quartiles; correlated 0.5)
and decisions with one planted two-condition subgroup of ~2% of the rows whose selection rate
is 0.15 above the rest (experiments/discover/fdr.py's generator). fairprobe reports the
subgroups unfair at FDR 0.1 (tolerance 0.05); MDSS reports its highest-scoring subset;
pysubgroup its top 10 by WRAcc. For each: how often the planted subgroup is reported exactly,
how many reported subgroups are false (true gap within the tolerance), and the seconds.
Also the speed target: depth 2 over 10 features of 5 levels on 10^6 rows (median of 3).
The peers run in their own environment (``--peer-python``); without it only fairprobe runs.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("fdr_exp", HERE.parent / "experiments" /
                                               "discover" / "fdr.py")
assert _spec is not None and _spec.loader is not None
exp = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(exp)


def _true_gap(frame: pd.DataFrame, p: np.ndarray, conds: dict[str, list[str]]) -> float:
    m = np.ones(len(frame), dtype=bool)
    for f, vals in conds.items():
        m &= frame[f].astype(str).isin(vals).to_numpy()
    if m.all() or not m.any():
        return 0.0
    return float(p[m].mean() - p[~m].mean())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--peer-python", default=os.environ.get("FAIRPROBE_PEER_PYTHON"))
    ap.add_argument("--json", type=Path, default=None,
                    help="also write the table (e.g. experiments/results/discover/bench.json)")
    args = ap.parse_args()
    from fairprobe.discover import discover_subgroups
    from fairprobe.discover.search import _bin

    print(f"load average {os.getloadavg()[0]:.1f}")
    tally: dict[str, dict[str, list[float]]] = {}
    for r in range(args.runs):
        rng = np.random.default_rng([7, r])
        raw = exp.design(args.n, 0.5, rng)
        binned, _ = _bin(raw, exp.FEATURES, 4)
        mask, (fa, va, fb, vb) = exp.plant(binned, 0.02, rng)
        p = np.where(mask, 0.45, 0.3)
        frame = binned.astype(str).assign(y=(rng.random(args.n) < p).astype(int))
        planted = {fa: [str(va)], fb: [str(vb)]}
        t = time.perf_counter()
        res = discover_subgroups(frame, y_pred="y", features=list(exp.FEATURES))
        secs = time.perf_counter() - t
        found = [{c.feature: [str(c.value)] for c in s.conditions} for s in res.subgroups]
        reports = {"fairprobe": (found, secs)}
        if args.peer_python:
            with tempfile.TemporaryDirectory() as d:
                f = Path(d) / "data.csv"
                frame.to_csv(f, index=False)
                out = subprocess.run([args.peer_python, str(HERE / "_discover_peers.py"), str(f),
                                      ",".join(exp.FEATURES), "y"], capture_output=True,
                                     text=True, check=True)
                peers = json.loads(out.stdout.strip().splitlines()[-1])
            for name, v in peers.items():
                reports[name] = (v["subgroups"], v["seconds"])
        for name, (groups, s) in reports.items():
            t_ = tally.setdefault(name, {"found": [], "false": [], "reported": [], "seconds": []})
            t_["found"].append(float(planted in groups))
            t_["false"].append(float(sum(abs(_true_gap(frame, p, g)) <= 0.05 for g in groups)))
            t_["reported"].append(float(len(groups)))
            t_["seconds"].append(s)
    print(f"planted: ~2% of {args.n:,} rows, selection rate +0.15; {args.runs} runs")
    print(f"{'method':12s} {'found planted':>14s} {'false reported':>15s} {'reported':>9s} "
          f"{'median s':>9s}")
    for name, v in tally.items():
        print(f"{name:12s} {np.mean(v['found']):14.2f} {np.mean(v['false']):15.2f} "
              f"{np.mean(v['reported']):9.1f} {statistics.median(v['seconds']):9.2f}")
    # the speed target: 10 features of 5 levels, depth 2, 10^6 rows
    rng = np.random.default_rng(0)
    big = pd.DataFrame({f"f{i}": rng.integers(0, 5, 1_000_000) for i in range(10)})
    big["y"] = (rng.random(len(big)) < 0.3).astype(int)
    times = []
    for _ in range(3):
        t = time.perf_counter()
        res = discover_subgroups(big, y_pred="y", features=[f"f{i}" for i in range(10)])
        times.append(time.perf_counter() - t)
    load = os.getloadavg()[0]
    print(f"depth 2, 10 features x 5 levels, 10^6 rows: {res.tested} subgroups, median "
          f"{statistics.median(times):.2f} s of 3 (load {load:.1f})")
    if args.json is not None:
        from fairprobe.documents import write_json

        rows = {name: {"found_planted": float(np.mean(v["found"])),
                       "false_reported": float(np.mean(v["false"])),
                       "reported": float(np.mean(v["reported"])),
                       "median_seconds": statistics.median(v["seconds"])}
                for name, v in tally.items()}
        write_json(args.json, {"runs": args.runs, "n": args.n, "methods": rows,
                               "speed_1e6": {"subgroups": res.tested,
                                             "median_seconds": statistics.median(times),
                                             "load": load}})


if __name__ == "__main__":
    sys.exit(main())
