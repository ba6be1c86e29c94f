"""The ten liar sweeps behind ``docs/collab.md``'s section on the method ``robust``.

Consistent-liar families (``consistent``, ``consistent-exact``, ``selective``, K = 1..5) and the
adaptive attacker of Table II (K = 1..19), 20 seeds on the three Bias in Bios cases, for three
settings of ``robust``: rules 1-4 at ``c = 4`` (``--robust-c-decisive 0``), rules 1-4 at
``c = 2``, and the default (``c = 4`` with rule 5, ``c_decisive = 2``). Each sweep is the
``fairprobe collab sweep`` command stored beside its summary, run as a real process.

    python experiments/collab/liar_sweeps.py [--workers 2]

Writes ``experiments/results/collab/liar_sweeps.json``: for each sweep its ``command``,
``config`` and ``summary`` (the per-case, per-method rows the command writes), and the wall time
and load average of the whole run.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "results" / "collab" / "liar_sweeps.json"
CASES = "bios-very-unfair,bios-moderate,bios-near-fair"
SETTINGS: tuple[tuple[str, list[str]], ...] = (
    ("robust_c=4, no rule 5", ["--robust-c-decisive", "0"]),
    ("robust_c=2, no rule 5", ["--robust-c", "2", "--robust-c-decisive", "0"]),
    ("rule 5 (robust_c_decisive=2, default)", []),
)
ATTACKS = (("consistent", "1-5"), ("consistent-exact", "1-5"), ("selective", "1-5"),
           ("adaptive", "1-19"))
#: the rules-1-4 sweeps at c = 2 measured: the consistent liar and Table II's adaptive attacker
C2_ATTACKS = ("consistent", "adaptive")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=2)
    a = ap.parse_args()
    exe = Path(sys.executable).with_name("fairprobe")
    out: dict[str, object] = {}
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for setting, flags in SETTINGS:
            for attack, ks in ATTACKS:
                if setting.startswith("robust_c=2") and attack not in C2_ATTACKS:
                    continue
                path = Path(tmp) / f"{attack}-{len(out)}.json"
                args = ["collab", "sweep", "--cases", CASES, "--attackers", ks, "--attack",
                        attack, "--seeds", "20", *flags, "--workers", str(a.workers)]
                subprocess.run([str(exe), *args, "--json", str(path)], check=True,
                               stdout=subprocess.DEVNULL)
                doc = json.loads(path.read_text())
                name = f"{attack}, {setting}"
                out[name] = {"command": "fairprobe " + shlex.join(args) + " --json s.json",
                             "config": doc["config"], "summary": doc["summary"]}
                print(f"{name}: done at {time.perf_counter() - t0:.0f} s", flush=True)
    out["wall_seconds"] = round(time.perf_counter() - t0, 1)
    out["load_average"] = round(os.getloadavg()[0], 2)
    OUT.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
