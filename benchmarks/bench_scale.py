"""Benchmark of audits of prediction logs at 1e6, 1e7 and 1e8 rows, median of 3.

Run: ``.venv/bin/python benchmarks/bench_scale.py [--sizes 1e6,1e7,1e8] [--repeats 3]
[--dir DIR] [--fairlearn-max 1e7] [--json OUT]``

Data: Parquet files generated (seed 0) under ``--dir`` (default: a ``fairprobe-bench-scale``
folder in the temporary directory; kept between runs, never committed): columns ``sex`` (2
values), ``race`` (5), ``y`` and ``p`` (0/1), written in row groups of 2**20 rows, 1e7 rows per
file (1e8 rows: a directory of 10 files). Every measurement runs in a fresh process; its peak
memory is the child's maximum resident set size.

Columns, per size:

* ``fairprobe CLI``: ``fairprobe audit --predictions FILE --y-pred-col p --y-true-col y
  --group-col sex,race --metric dp,eo --min-group-size 1 --json OUT``, end to end (process
  start, imports, the pass over the rows, intervals, verdict, terminal table, JSON);
* ``library``: :func:`fairprobe.scale.count` + ``AuditFrame.from_counts`` + both summaries,
  timed inside the process after the imports (one call: its connection, the pass with the
  input checks, the intervals);
* ``DuckDB group-by``: the engine's bare ``SELECT sex, race, count(*), sum(p), sum(y),
  sum(p*y) ... GROUP BY ALL`` on the same files, timed inside the process (connection and
  query);
* ``overhead``: library / DuckDB group-by (the price of the checks and the statistics);
* ``pandas + fairlearn``: ``pd.read_parquet`` then ``MetricFrame`` of selection rate and TPR
  by sex x race with ``difference()`` (skipped above ``--fairlearn-max`` rows: at 1e8 rows it
  needs tens of GB).

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

ROOT = Path(__file__).resolve().parents[1]
PER_FILE = 10_000_000

LIBRARY = """
import sys, time
import duckdb, scipy.stats
import fairprobe.stats.frame
from fairprobe.scale import CountSpec, count
spec = CountSpec(group_cols=("sex", "race"), y_pred="p", y_true="y")
t0 = time.perf_counter()
frame = count(sys.argv[1], spec).frame(min_group_size=1)
s = [frame.summary(m) for m in ("dp", "eo")]
print(time.perf_counter() - t0)
"""

BARE = """
import sys, time, duckdb
from fairprobe.scale.engine import list_files
files = ", ".join(repr(str(f)) for f in list_files(sys.argv[1]))
t0 = time.perf_counter()
con = duckdb.connect()
con.execute(f"SELECT sex, race, count(*), sum(p), sum(y), sum(p * y) FROM "
            f"read_parquet([{files}]) GROUP BY ALL").fetchall()
print(time.perf_counter() - t0)
"""

FAIRLEARN = """
import sys, time
import pandas as pd
from fairlearn.metrics import MetricFrame, selection_rate, true_positive_rate
from fairprobe.scale.engine import list_files
t0 = time.perf_counter()
df = pd.concat([pd.read_parquet(f) for f in list_files(sys.argv[1])], ignore_index=True)
mf = MetricFrame(metrics={"sel": selection_rate, "tpr": true_positive_rate}, y_true=df["y"],
                 y_pred=df["p"], sensitive_features=df[["sex", "race"]])
mf.difference()
print(time.perf_counter() - t0)
"""


def _env() -> dict[str, str]:
    env = dict(os.environ)
    src = str(ROOT / "src")
    env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["COLUMNS"] = "120"
    return env


def generate(n: int, folder: Path) -> Path:
    """The Parquet data of ``n`` rows (seed 0): one file, or a directory of 1e7-row files."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    target = folder / (f"rows{n:.0e}.parquet" if n <= PER_FILE else f"rows{n:.0e}")
    if target.exists():
        return target
    rng = np.random.default_rng(0)
    paths = [target] if n <= PER_FILE else [target / f"part{i:03d}.parquet"
                                            for i in range(-(-n // PER_FILE))]
    tmp_dir = Path(tempfile.mkdtemp(dir=folder))
    for i, path in enumerate(paths):
        m = min(PER_FILE, n - i * PER_FILE)
        sex = pa.DictionaryArray.from_arrays(pa.array(rng.integers(0, 2, m, dtype=np.int8)),
                                             pa.array(["Female", "Male"]))
        race = pa.DictionaryArray.from_arrays(pa.array(rng.integers(0, 5, m, dtype=np.int8)),
                                              pa.array(["A", "B", "C", "D", "E"]))
        y = rng.random(m) < 0.3
        p = rng.random(m) < np.where(y, 0.6, 0.3)
        table = pa.table({"sex": sex, "race": race, "y": pa.array(y.astype(np.int8)),
                          "p": pa.array(p.astype(np.int8))})
        pq.write_table(table, tmp_dir / path.name, row_group_size=1 << 20)
    if n <= PER_FILE:
        (tmp_dir / target.name).rename(target)
        tmp_dir.rmdir()
    else:
        tmp_dir.rename(target)
    return target


def _measure(cmd: list[str], repeats: int) -> dict[str, float]:
    """Median wall time, median in-process time (the last stdout line, if a number) and the
    largest peak memory over ``repeats`` fresh processes."""
    walls, inner, peaks = [], [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                text=True, env=_env(), cwd=ROOT)
        assert proc.stdout is not None
        out = proc.stdout.read()
        _, status, usage = os.wait4(proc.pid, 0)
        walls.append(time.perf_counter() - t0)
        if status != 0:
            raise SystemExit(f"{' '.join(cmd[:5])} ... failed (status {status})")
        peaks.append(usage.ru_maxrss / 1024)  # kB -> MB
        last = out.strip().splitlines()[-1] if out.strip() else ""
        try:
            inner.append(float(last))
        except ValueError:
            pass
    return {"wall_s": statistics.median(walls),
            "inner_s": statistics.median(inner) if inner else float("nan"),
            "peak_mb": max(peaks)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1e6,1e7,1e8")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--dir", type=Path,
                    default=Path(tempfile.gettempdir()) / "fairprobe-bench-scale")
    ap.add_argument("--fairlearn-max", type=float, default=1e7)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    sizes = [int(float(s)) for s in args.sizes.split(",")]
    args.dir.mkdir(parents=True, exist_ok=True)
    py = sys.executable
    load0 = os.getloadavg()
    print(f"load average before: {load0[0]:.2f} {load0[1]:.2f} {load0[2]:.2f} "
          f"({os.cpu_count()} cores); median of {args.repeats} fresh processes")
    rows = []
    for n in sizes:
        t0 = time.perf_counter()
        data = generate(n, args.dir)
        gen = time.perf_counter() - t0
        out_json = args.dir / "bench-audit.json"
        cli = _measure([py, "-m", "fairprobe", "audit", "--predictions", str(data),
                        "--y-pred-col", "p", "--y-true-col", "y", "--group-col", "sex,race",
                        "--metric", "dp,eo", "--min-group-size", "1", "--json", str(out_json)],
                       args.repeats)
        lib = _measure([py, "-c", LIBRARY, str(data)], args.repeats)
        bare = _measure([py, "-c", BARE, str(data)], args.repeats)
        fl = (_measure([py, "-c", FAIRLEARN, str(data)], args.repeats)
              if n <= args.fairlearn_max else None)
        rows.append({"rows": n, "generate_s": gen, "cli": cli, "library": lib, "duckdb": bare,
                     "overhead": lib["inner_s"] / bare["inner_s"], "fairlearn": fl,
                     "json_bytes": out_json.stat().st_size})
        print(f"  {n:.0e} rows done (data {'generated' if gen > 1 else 'reused'})", flush=True)
    load1 = os.getloadavg()
    head = (f"{'rows':>6} | {'fairprobe CLI':>16} | {'library':>8} | {'DuckDB group-by':>15} | "
            f"{'overhead':>8} | {'pandas + fairlearn':>19} | {'JSON':>7}")
    print()
    print(head)
    print("-" * len(head))
    for r in rows:
        fl = r["fairlearn"]
        fls = (f"{fl['wall_s']:7.2f} s {fl['peak_mb']:6.0f} MB" if fl else
               f"{'skipped':>19}")
        print(f"{r['rows']:6.0e} | {r['cli']['wall_s']:6.2f} s {r['cli']['peak_mb']:6.0f} MB"
              f" | {r['library']['inner_s']:6.2f} s | {r['duckdb']['inner_s']:13.3f} s | "
              f"{r['overhead']:7.2f}x | {fls:>19} | {r['json_bytes'] / 1e3:5.0f} kB")
    print(f"\nload average after: {load1[0]:.2f} {load1[1]:.2f} {load1[2]:.2f}")
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"load_before": load0, "load_after": load1,
                                         "repeats": args.repeats, "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
