"""Sweeps of simulated audits on Dask, with progress and resumable JSON output.

A sweep is the grid ``cases x attackers x seeds`` over one base :class:`SimConfig`. The runs of one
``(case, seed)`` share their partition and honest query order (they do not depend on ``K``), so
they form one Dask task. Tasks run on a ``LocalCluster`` (one single-threaded worker process per
core) or on an existing scheduler (``scheduler="tcp://host:8786"``). Rows are appended as tasks
finish and the JSON file is rewritten atomically (at most every ``flush_every`` seconds, and at the
end); rerunning the same sweep on the same file skips the runs already in it.

Output (the keys other tools read)::

    {"schema": "fairprobe/1", "kind": "collab-sweep", "provenance": {...},
     "config": {...base SimConfig...}, "complete": bool,
     "summary": [{"case", "method", "runs", "asr", "mae", "certified_k", "attackers"}, ...],
     "runs": [{"case", "attackers", "seed", "method", "estimate", "true_dp", "error", "fooled",
               "honest", "rounds", "certified_k"}, ...]}

The dashboard of the local Dask cluster is off (``dashboard=True``: on 127.0.0.1 only), and a
grid whose largest run cannot fit in memory is refused before any work (:func:`check_feasible`).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from fairprobe._validation import check_choice, check_int
from fairprobe.collab.simulate import SimConfig, prepare_honest, simulate
from fairprobe.datasets.populations import POPULATIONS
from fairprobe.documents import read_json, to_jsonable
from fairprobe.errors import ConfigError, InvalidParameterError

__all__ = [
    "available_bytes",
    "check_feasible",
    "local_cluster_kwargs",
    "parse_int_range",
    "run_bytes",
    "run_group",
    "summarize",
    "sweep",
]

RunKey = tuple[str, int, int]

#: Version of the run rows: a file written by other code is never resumed (its rows would be
#: stale). Bump it whenever ``RunResult.rows`` changes what it writes.
ROWS_VERSION = "2026-12-issue21"

#: Keys every resumable row must carry.
ROW_KEYS = frozenset({"case", "attackers", "seed", "method", "estimate", "verdict", "wrong",
                      "undetermined", "fooled", "max_liars", "finding"})

#: Config fields that must match for a file to be resumed (the grid itself may grow).
_GRID_FIELDS = ("case", "attackers", "seed")


#: Largest attacker count and largest number of grid values a sweep accepts from text.
MAX_RANGE_VALUE = 1_000_000
MAX_RANGE_COUNT = 10_000


def parse_int_range(
    text: str,
    name: str = "attackers",
    *,
    max_value: int = MAX_RANGE_VALUE,
    max_count: int = MAX_RANGE_COUNT,
) -> list[int]:
    """``"1-19"``, ``"0,2,5"`` or ``"1-3,7"`` -> sorted unique ints (>= 0).

    Bounds are checked on the text before any range is expanded, so ``0-100000000`` is refused at
    once (no list of 10^8 ints is built).
    """
    spans: list[tuple[int, int]] = []
    try:
        for part in str(text).split(","):
            part = part.strip()
            if not part:
                continue
            if "-" in part[1:]:
                lo_s, hi_s = part.split("-", 1)
                lo, hi = int(lo_s), int(hi_s)
                if hi < lo:
                    raise ValueError
            else:
                lo = hi = int(part)
            spans.append((lo, hi))
    except ValueError:
        raise InvalidParameterError(
            f"The {name!r} parameter must look like '1-19' or '0,2,5'. Got {text!r} instead."
        ) from None
    if not spans or min(lo for lo, _ in spans) < 0:
        raise InvalidParameterError(
            f"The {name!r} parameter must list integers >= 0. Got {text!r} instead."
        )
    top = max(hi for _, hi in spans)
    if top > max_value:
        raise InvalidParameterError(
            f"The {name!r} parameter goes up to {top}; at most {max_value} is supported. "
            "Use a smaller range."
        )
    if sum(hi - lo + 1 for lo, hi in spans) > max_count:
        raise InvalidParameterError(
            f"The {name!r} parameter lists more than {max_count} values. Use a smaller range."
        )
    out: set[int] = set()
    for lo, hi in spans:
        out.update(range(lo, hi + 1))
    return sorted(out)


def run_bytes(honest: int, attackers: int, rounds: int) -> int:
    """Rough peak memory of one simulated run with ``honest + attackers`` auditors.

    The all-pairs graph arrays (adjacency, edge draws, hop distances, gossip lags: about
    ``30 V^2`` bytes) and the per-round vectors (about ``200 R V`` bytes), plus the honest
    auditors' tables (about ``200 N V`` bytes).
    """
    V = honest + attackers
    return int(30 * V * V + 200 * max(rounds, 1) * V + 200 * honest * V + 50_000_000)


def available_bytes() -> int | None:
    """``MemAvailable`` of this machine (None if unknown)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def check_feasible(base: SimConfig, attackers: Sequence[int], workers: int) -> None:
    """Refuse, before any work, a grid whose largest run cannot fit in this machine's memory."""
    kmax = max(attackers)
    need = run_bytes(base.honest, kmax, base.max_rounds) * max(workers, 1)
    avail = available_bytes()
    if avail is not None and need > 0.7 * avail:
        fit = 0
        lo, hi = 0, kmax
        while lo < hi:  # largest K that fits
            mid = (lo + hi + 1) // 2
            if run_bytes(base.honest, mid, base.max_rounds) * max(workers, 1) <= 0.7 * avail:
                lo = mid
            else:
                hi = mid - 1
        fit = lo
        raise InvalidParameterError(
            f"A run with {base.honest} honest auditors and {kmax} attackers needs about "
            f"{need / 1e9:.1f} GB with {workers} worker(s); this machine has "
            f"{avail / 1e9:.1f} GB available. Use --attackers up to {fit} (or fewer --workers)."
        )


def run_group(
    base: dict[str, Any], case: str, seed: int, ks: Sequence[int]
) -> list[dict[str, Any]]:
    """Simulate every ``K`` of ``ks`` for one ``(case, seed)``; returns the JSON rows."""
    cfg0 = SimConfig(
        **{
            **base,
            "case": case,
            "seed": seed,
            "attackers": 0,
            "extra_betas": tuple(base.get("extra_betas", ())),
        }
    )
    setup = prepare_honest(cfg0)
    rows: list[dict[str, Any]] = []
    for k in ks:
        rows.extend(simulate(replace(cfg0, attackers=int(k)), setup=setup).rows())
    return rows


def _write_compact(path: Path, doc: dict[str, Any]) -> None:
    """Atomic JSON write, one run row per line (cheap to rewrite as results arrive)."""
    from fairprobe._io import write_file

    head = json.dumps({k: v for k, v in doc.items() if k != "runs"}, allow_nan=False)[:-1]
    lines = ",\n".join(json.dumps(to_jsonable(r), allow_nan=False) for r in doc["runs"])
    text = f'{head}, "runs": [\n{lines}\n]}}\n'
    write_file(path, text, what="--json")


def _base_dict(base: SimConfig) -> dict[str, Any]:
    d = base.to_dict()
    for f in _GRID_FIELDS:
        d.pop(f, None)
    return d


def _load_done(path: Path, base: dict[str, Any]) -> tuple[list[dict[str, Any]], set[RunKey]]:
    if not path.exists():
        return [], set()
    doc = read_json(path)
    if not isinstance(doc, dict) or not isinstance(doc.get("runs"), list):
        raise ConfigError(f"{path} is not a sweep result (no 'runs' list); choose another path.")
    old = doc.get("config", {})
    if old != base:
        diff = sorted(k for k in set(old) | set(base) if old.get(k) != base.get(k))
        raise ConfigError(
            f"{path} holds a sweep with other settings ({', '.join(diff)}); "
            "use another --json path or the same settings to resume."
        )
    if doc.get("kind", "collab-sweep") != "collab-sweep":
        raise ConfigError(f"{path} holds a {doc.get('kind')!r} result, not a sweep.")
    rows = doc["runs"]
    if doc.get("rows_version") != ROWS_VERSION or any(
        not ROW_KEYS <= set(r) for r in rows
    ):
        raise ConfigError(
            f"{path} holds rows written by another version of the simulator (rows version "
            f"{doc.get('rows_version')!r}, this one writes {ROWS_VERSION!r}); it is not resumed: "
            "delete it or use another --json path."
        )
    return rows, {(r["case"], int(r["attackers"]), int(r["seed"])) for r in rows}


def sweep(
    base: SimConfig,
    cases: Iterable[str],
    attackers: Sequence[int],
    seeds: Sequence[int],
    *,
    json_path: str | os.PathLike[str] | None = None,
    scheduler: str | None = None,
    n_workers: int | None = None,
    flush_every: float = 5.0,
    on_progress: Callable[[int, int], None] | None = None,
    dashboard: bool = False,
) -> dict[str, Any]:
    """Run the grid on Dask and return ``{"config", "complete", "runs"}`` (also written to JSON).

    ``on_progress(done_runs, total_runs)`` is called as results arrive (e.g. to drive a progress
    bar).
    """
    cases = [check_choice(c, "cases", "sweep", list(POPULATIONS)) for c in cases]
    if not cases:
        raise InvalidParameterError("The 'cases' parameter of sweep must list at least one case.")
    ks = sorted({check_int(k, "attackers", "sweep", lo=0) for k in attackers})
    seed_list = sorted({check_int(s, "seeds", "sweep", lo=0) for s in seeds})
    if not ks or not seed_list:
        raise InvalidParameterError("A sweep needs at least one attacker count and one seed.")
    if n_workers is not None:
        n_workers = check_int(n_workers, "workers", "sweep", lo=1)
    workers = n_workers or max(1, os.cpu_count() or 1)
    check_feasible(base, ks, 1 if scheduler is not None else workers)
    bd = _base_dict(base)
    path = Path(json_path) if json_path is not None else None
    rows, done = _load_done(path, bd) if path is not None else ([], set())
    groups: list[tuple[str, int, list[int]]] = []
    for c in cases:
        for s in seed_list:
            todo = [k for k in ks if (c, k, s) not in done]
            if todo:
                groups.append((c, s, todo))
    total = len(cases) * len(ks) * len(seed_list)
    n_done = sum(1 for c in cases for k in ks for s in seed_list if (c, k, s) in done)
    if on_progress:
        on_progress(n_done, total)

    def flush(complete: bool) -> None:
        if path is not None:
            _write_compact(path, _envelope(bd, complete, rows))

    if groups:
        import dask
        from dask.distributed import Client, LocalCluster, as_completed

        # Tasks are pure numpy: the worker's statistical profiler (10 ms), GIL monitor (1 ms) and
        # fast monitoring ticks would only cost CPU on a small machine.
        quiet = dask.config.set(
            {
                "distributed.worker.profile.enabled": False,
                "distributed.admin.system-monitor.gil.enabled": False,
                "distributed.admin.system-monitor.interval": "5s",
                "distributed.admin.tick.interval": "500ms",
                "distributed.worker.memory.monitor-interval": "1s",
            }
        )
        quiet.__enter__()

        cluster = None
        if scheduler is None:
            cluster = LocalCluster(**local_cluster_kwargs(workers, dashboard))
            client = Client(cluster)
        else:
            try:
                client = Client(scheduler, timeout=10)
            except OSError as exc:
                raise ConfigError(
                    f"Cannot reach the Dask scheduler at {scheduler}: {exc}"
                ) from None
        try:
            futs = [client.submit(run_group, bd, c, s, todo, pure=False) for c, s, todo in groups]
            sizes = {f.key: len(g[2]) for f, g in zip(futs, groups, strict=True)}
            last = time.monotonic()
            spent = 0.0
            for fut in as_completed(futs):
                rows.extend(fut.result())
                n_done += sizes[fut.key]
                if on_progress:
                    on_progress(n_done, total)
                # rewriting the file costs more as rows pile up: at most ~10% of the wall time
                if time.monotonic() - last >= max(flush_every, 10 * spent):
                    t0 = time.monotonic()
                    flush(False)
                    last = time.monotonic()
                    spent = last - t0
        finally:
            client.close()
            if cluster is not None:
                cluster.close()
            quiet.__exit__(None, None, None)
    rows.sort(key=lambda r: (r["case"], r["attackers"], r["seed"], r["method"]))
    flush(True)
    return _envelope(bd, True, rows)


def local_cluster_kwargs(workers: int, dashboard: bool = False) -> dict[str, Any]:
    """Arguments of the sweep's ``LocalCluster``: everything on 127.0.0.1.

    The scheduler always runs an HTTP server (health and metrics routes); it listens on a free
    loopback port. The dashboard (no authentication) is served only with ``dashboard=True``, on
    that loopback server too.
    """
    return {
        "n_workers": workers,
        "threads_per_worker": 1,
        "processes": True,
        "host": "127.0.0.1",
        "dashboard_address": "127.0.0.1:0" if dashboard else None,
        "scheduler_kwargs": {"dashboard": dashboard, "dashboard_address": "127.0.0.1:0"},
        "silence_logs": 40,
    }


def _envelope(bd: dict[str, Any], complete: bool, rows: list[dict[str, Any]]) -> dict[str, Any]:
    from fairprobe.documents import SCHEMA
    from fairprobe.provenance import Provenance

    return {
        "schema": SCHEMA,
        "kind": "collab-sweep",
        "provenance": Provenance.capture().to_dict(),
        "config": bd,
        "rows_version": ROWS_VERSION,
        "complete": complete,
        "summary": summarize(rows, float(bd.get("tau", 0.05))),
        "runs": rows,
    }


def summarize(rows: Sequence[dict[str, Any]], tau: float = 0.05) -> list[dict[str, Any]]:
    """Table II layout: per case (and all cases) and method, attack success and mean error.

    ``asr`` is the share of runs whose verdict is "fair" (%: the attack success on the unfair
    Table I models; for point methods, the estimate in the band), ``wrong`` the share of wrong
    fair/unfair verdicts, ``undetermined`` the share of undetermined ones, ``mae`` the mean
    absolute error of the estimate, ``certified_k`` the mean certificate (methods that have one),
    over every run of the rows (all attacker counts in them).
    """
    from collections import defaultdict

    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        groups[(r["case"], r["method"])].append(r)
        groups[("all", r["method"])].append(r)
    out = []
    for (case, method), rs in groups.items():
        err = [abs(r["error"]) for r in rs if r.get("error") is not None]
        ks = [r["certified_k"] for r in rs if r.get("certified_k") is not None]
        out.append(
            {
                "case": case,
                "method": method,
                "runs": len(rs),
                "asr": 100.0 * sum(bool(r["fooled"]) for r in rs) / len(rs),
                "wrong": 100.0 * sum(bool(r.get("wrong")) for r in rs) / len(rs),
                "undetermined": 100.0 * sum(bool(r.get("undetermined")) for r in rs) / len(rs),
                "mae": sum(err) / len(err) if err else None,
                "certified_k": sum(ks) / len(ks) if ks else None,
                "attackers": sorted({int(r["attackers"]) for r in rs}),
            }
        )
    out.sort(key=lambda d: (d["case"] == "all", d["case"], d["method"]))
    return out
