"""Benchmark of audits over many groups: time, peak memory and JSON size, median of 3.

Run: ``.venv/bin/python benchmarks/bench_groups.py [--groups 100,500,1000,2000,5000,20000]
[--per 2,20] [--repeats 3] [--json OUT]``

Data (seed 0, written to a temporary folder): ``groups`` groups of ``per`` rows each, columns
``g`` (the group), ``p`` and ``y`` (0/1 decisions and labels, rates drawn per group). Each
measurement is one fresh process running ``fairprobe audit --predictions FILE --y-pred-col p
--y-true-col y --group-col g --metric dp,eo,eodds --json OUT`` end to end (imports, counting,
the three pairwise families, terminal table, JSON); peak memory is the child's maximum resident
set size. ``FAIRPROBE_MAX_GROUPS`` is set to the largest grouping measured, so points past the
default cap run too. The pairwise families keep per-group arrays (exact method: the worst pair
and the listed pairs come from sorted per-group boxes, never the k(k-1)/2 pairs); the JSON lists
at most 100 pairs a metric and every group, so its size grows linearly with the groups.

The load average is printed before and after: timings on a loaded machine are upper bounds.
"""

from __future__ import annotations

import argparse
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


def _data(path: Path, groups: int, per: int) -> None:
    rng = np.random.default_rng(0)
    n = groups * per
    rate = np.repeat(rng.uniform(0.1, 0.9, groups), per)
    pd.DataFrame({"g": np.repeat([f"g{i}" for i in range(groups)], per),
                  "p": (rng.random(n) < rate).astype(int),
                  "y": (rng.random(n) < 0.5).astype(int)}).to_csv(path, index=False)


def _run(csv: Path, out: Path, max_groups: int) -> tuple[float, float]:
    cmd = [sys.executable, "-m", "fairprobe", "audit", "--predictions", str(csv),
           "--y-pred-col", "p", "--y-true-col", "y", "--group-col", "g",
           "--metric", "dp,eo,eodds", "--json", str(out)]
    log = out.with_suffix(".log")
    with log.open("w") as fh:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT,
                                env={**os.environ, "FAIRPROBE_MAX_GROUPS": str(max_groups)})
        _, status, usage = os.wait4(proc.pid, 0)  # this child's own peak memory
        wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"audit failed ({proc.returncode}): {log.read_text()[-500:]}")
    return wall, usage.ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--groups", default="100,500,1000,2000,5000,20000")
    ap.add_argument("--per", default="2,20")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", type=Path, default=None)
    a = ap.parse_args()
    print(f"load average before: {os.getloadavg()}")
    rows = []
    cap = max(int(x) for x in a.groups.split(","))
    with tempfile.TemporaryDirectory() as d:
        for per in (int(x) for x in a.per.split(",")):
            for g in (int(x) for x in a.groups.split(",")):
                csv, out = Path(d) / f"g{g}x{per}.csv", Path(d) / "out.json"
                _data(csv, g, per)
                runs = [_run(csv, out, cap) for _ in range(a.repeats)]
                row = {"groups": g, "rows_per_group": per, "pairs": g * (g - 1) // 2,
                       "wall_s_median": statistics.median(r[0] for r in runs),
                       "peak_mb": max(r[1] for r in runs),
                       "json_kb": out.stat().st_size / 1024}
                rows.append(row)
                print(f"{g:>6} groups x {per:>3} rows  {row['pairs']:>9,} pairs  "
                      f"{row['wall_s_median']:6.2f} s  {row['peak_mb']:7.0f} MB peak  "
                      f"{row['json_kb']:8.0f} kB JSON", flush=True)
    load = os.getloadavg()
    print(f"load average after: {load}")
    if a.json:
        a.json.parent.mkdir(parents=True, exist_ok=True)
        a.json.write_text(json.dumps({"command": " ".join(sys.argv), "repeats": a.repeats,
                                      "load_average_after": list(load), "rows": rows},
                                     indent=2) + "\n")


if __name__ == "__main__":
    main()
