"""Benchmark of the command line's startup and of ``fairprobe report``, median over repeats.

Run: ``.venv/bin/python benchmarks/bench_cli.py [--repeats 15]``

Prints the median (and min/max) wall time, each in a fresh process, of:

* ``python -c pass`` (the interpreter alone, the floor of everything below);
* ``python -c "import fairprobe"`` and ``import fairprobe.cli.main`` (the whole command tree);
* the import time of ``fairprobe.cli.main`` as ``python -X importtime`` reports it (cumulative
  microseconds of that module, the number the README's speed table quotes);
* ``fairprobe --help`` and ``fairprobe --version`` (the target: under 0.5 s);
* ``import fairprobe.audit.run`` and ``import fairprobe.sequential`` (the engines every audit and
  sequential command loads: numpy, pandas, scipy.special; not scipy.stats or scipy.optimize);
* ``fairprobe audit --predictions`` of a 1,000-row CSV (seeded), ``dp,eo``: a whole audit;
* ``fairprobe report`` of the bundled demo fixture to HTML (imports Jinja2 and matplotlib,
  draws 7 SVG figures).

fairprobe's bytecode is compiled first, as in an installed package. Each row gives the median
wall time (min, max) and the median CPU time (user + system) of the child: on a loaded machine
wall time includes waiting for a core, CPU time does not (on an idle machine the two agree).
Subprocesses use this interpreter.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "report" / "data" / "legacy-demo.json"


def _env() -> dict[str, str]:
    env = dict(os.environ)
    src = str(ROOT / "src")
    env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["COLUMNS"] = "100"
    return env


def _time(cmd: list[str], repeats: int) -> tuple[list[float], list[float]]:
    """Wall times and CPU times (user + system of the child) of ``repeats`` fresh runs."""
    env = _env()
    wall, cpu = [], []
    for _ in range(repeats):
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        wall.append(time.perf_counter() - t0)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime)
    return wall, cpu


def _importtime(module: str, repeats: int) -> list[float]:
    env = _env()
    out = []
    pat = re.compile(rf"import time:\s+\d+ \|\s+(\d+) \| {re.escape(module)}$", re.M)
    for _ in range(repeats):
        r = subprocess.run([sys.executable, "-X", "importtime", "-c", f"import {module}"],
                           check=True, env=env, capture_output=True, text=True)
        m = pat.search(r.stderr)
        if m is None:
            raise RuntimeError(f"no importtime line for {module}")
        out.append(int(m.group(1)) / 1e6)
    return out


def _row(name: str, times: tuple[list[float], list[float]] | list[float]) -> None:
    wall, cpu = times if isinstance(times, tuple) else (times, None)
    line = (f"{name:<50} {statistics.median(wall):7.3f} s (min {min(wall):.3f}, "
            f"max {max(wall):.3f})")
    if cpu is not None:
        line += f"   cpu {statistics.median(cpu):.3f} s"
    print(line + f"   n={len(wall)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=15)
    args = ap.parse_args()
    n = args.repeats
    py = sys.executable
    cli = [py, "-m", "fairprobe"]
    # an installed fairprobe has its bytecode compiled (pip compiles wheels on install); with
    # PYTHONDONTWRITEBYTECODE set, an uncompiled src/ would be compiled anew in every process
    subprocess.run([py, "-m", "compileall", "-q", str(ROOT / "src")], check=True,
                   stdout=subprocess.DEVNULL)
    print(f"python {sys.version.split()[0]}, {n} repeats, medians of fresh processes, "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    _row("python -c pass", _time([py, "-c", "pass"], n))
    _row("python -c 'import fairprobe'", _time([py, "-c", "import fairprobe"], n))
    _row("python -c 'import fairprobe.cli.main'", _time([py, "-c", "import fairprobe.cli.main"], n))
    _row("-X importtime: fairprobe.cli.main (cumulative)", _importtime("fairprobe.cli.main", n))
    _row("fairprobe --help", _time([*cli, "--help"], n))
    _row("fairprobe --version", _time([*cli, "--version"], n))
    for module in ("fairprobe.audit.run", "fairprobe.sequential"):
        _row(f"python -c 'import {module}'", _time([py, "-c", f"import {module}"], n))
    with tempfile.TemporaryDirectory() as tmp:
        preds = Path(tmp) / "preds.csv"
        rng = random.Random(0)
        rows = ["group,y_true,y_pred"] + [
            f"{rng.choice('ab')},{rng.randint(0, 1)},{rng.randint(0, 1)}" for _ in range(1000)]
        preds.write_text("\n".join(rows) + "\n", encoding="utf-8")
        _row("fairprobe audit --predictions (1,000 rows, dp,eo)",
             _time([*cli, "audit", "--predictions", str(preds), "--group-col", "group",
                    "--y-true-col", "y_true", "--y-pred-col", "y_pred", "--metric", "dp,eo",
                    "--no-progress"], n))
        out = Path(tmp) / "report.html"
        _row("fairprobe report demo.json --html (7 figures)",
             _time([*cli, "report", str(FIXTURE), "--html", str(out)], max(3, n // 5)))


if __name__ == "__main__":
    main()
