"""Time and peak memory of ``fairprobe report`` on large results.

Each case is one ``fairprobe report FILE --html OUT --md OUT`` run in a fresh process (the
every-group audit of the committed fixture, scaled to N groups; one case with a 5 MB group
name). Peak memory is the child's maximum resident set size (``os.wait4``). Median of
``--repeats`` runs. Prints one line per case and the load average.
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
sys.path.insert(0, str(ROOT))

from tests.report.hostile import many_groups  # noqa: E402


def run_once(path: Path, out: Path) -> tuple[float, float]:
    """(seconds, peak RSS in MiB) of one report run in its own process."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "fairprobe", "report", str(path), "--html", str(out / "r.html"),
         "--md", str(out / "r.md")], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    dt = time.perf_counter() - t0
    err = proc.stderr.read().decode() if proc.stderr else ""
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"report failed on {path.name}: {err.strip()}")
    return dt, usage.ru_maxrss / 1024  # kilobytes on Linux


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    cases = [(f"{n:,} groups", many_groups(n)) for n in (10, 100, 1000, 2000)]
    cases.append(("5 MB group name (10 groups)", many_groups(10, label="x" * (5 * 2**20))))
    print(f"load average before: {Path('/proc/loadavg').read_text().split()[:3]}")
    print(f"{'case':<30} {'median s':>9} {'min s':>7} {'peak RSS MiB':>13} {'input MB':>9}")
    with tempfile.TemporaryDirectory() as tmp:
        for name, doc in cases:
            path = Path(tmp) / "result.json"
            path.write_text(json.dumps(doc))
            times, peaks = [], []
            for _ in range(args.repeats):
                dt, peak = run_once(path, Path(tmp))
                times.append(dt)
                peaks.append(peak)
            print(f"{name:<30} {statistics.median(times):>9.2f} {min(times):>7.2f} "
                  f"{max(peaks):>13.0f} {path.stat().st_size / 1e6:>9.1f}", flush=True)
    print(f"load average after: {Path('/proc/loadavg').read_text().split()[:3]}")


if __name__ == "__main__":
    main()
