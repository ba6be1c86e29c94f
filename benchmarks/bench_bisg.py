"""Benchmark of BISG proxy audits: 1e5 and 1e6 rows end to end, median of 3.

Run: ``.venv/bin/python benchmarks/bench_bisg.py [--sizes 1e5,1e6] [--repeats 3] [--json OUT]``
(the figures quoted in the README: ``--json experiments/results/bisg/bench.json``)

Data: applicants drawn from the census tables (``fairprobe.bisg.simulate.draw_population``,
seed 0, the ``place`` design), written once as CSV to a temporary folder. Each measurement runs
``fairprobe audit --predictions FILE --proxy bisg --y-pred-col approved --surname-col surname
--zip-col zip --json OUT`` in a fresh process: reading the file, the census tables, every row's
posterior, the bounds on every coarsening, the weighted and BIRDiE estimates, the verdict and the
JSON. Peak memory is the child's maximum resident set size. The load average is printed before
and after: timings on a loaded machine are upper bounds.
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

CHILD = """
import resource, sys, time
from fairprobe.cli.main import main
t = time.perf_counter()
try:
    main(sys.argv[1:])
except SystemExit as e:
    code = e.code or 0
print("BENCH", time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
      code, file=sys.stderr)
"""


def make_file(n: int, folder: Path) -> Path:
    path = folder / f"applicants_{n}.csv"
    if not path.exists():
        from fairprobe.bisg.simulate import DESIGNS, draw_population

        pop = draw_population(n, seed=0, **DESIGNS["place"])  # type: ignore[arg-type]
        pop.frame.to_csv(path, index=False)
    return path


def run_once(path: Path, out: Path) -> tuple[float, float]:
    args = ["audit", "--predictions", str(path), "--proxy", "bisg", "--y-pred-col", "approved",
            "--surname-col", "surname", "--zip-col", "zip", "--json", str(out)]
    t = time.perf_counter()
    p = subprocess.run([sys.executable, "-c", CHILD, *args], capture_output=True, text=True,
                       env={**os.environ, "COLUMNS": "100"}, check=False)
    wall = time.perf_counter() - t
    line = [x for x in p.stderr.splitlines() if x.startswith("BENCH")]
    if not line or line[-1].split()[3] != "0":
        raise SystemExit(f"benchmark run failed:\n{p.stderr[-2000:]}")
    return wall, int(line[-1].split()[2]) / 1024.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1e5,1e6")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    print(f"load average before: {os.getloadavg()}")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for n in (int(float(s)) for s in args.sizes.split(",")):
            path = make_file(n, folder)
            runs = [run_once(path, folder / "out.json") for _ in range(args.repeats)]
            row = {"rows": n, "median_seconds": statistics.median(r[0] for r in runs),
                   "peak_rss_mb": max(r[1] for r in runs), "repeats": args.repeats}
            rows.append(row)
            print(f"{n:>9,} rows: median {row['median_seconds']:.2f} s end to end, "
                  f"peak memory {row['peak_rss_mb']:.0f} MB", flush=True)
    load = os.getloadavg()
    print(f"load average after: {load}")
    if args.json is not None:
        args.json.write_text(json.dumps({"rows": rows, "load_after": load}, indent=1) + "\n")


if __name__ == "__main__":
    main()
