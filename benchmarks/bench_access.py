"""Speed of black-box access: the response cache and BlackBox on a local backend.

    .venv/bin/python benchmarks/bench_access.py [--n 100000] [--repeats 5]

Prints medians (and min-max) over repeats of:
- cache inserts/s: 10^5 answers written in batches of 64, one committed transaction per batch
  (what BlackBox does), and in one transaction;
- cache lookups/s: the same 10^5 keys read back with ``get_many`` (one SELECT per chunk);
- record hashing/s: normalisation + canonical JSON + SHA-256 of 10^5 Adult-like records;
- BlackBox queries/s on a local (vectorised callable) backend: cold (every query paid and
  committed to a file cache), warm (every query answered from the cache), and with the
  in-memory cache.
Rates are per wall-clock second (median, min - max) and per CPU-second of this process (median);
on a shared machine the CPU figure is the steadier one. Compare runs on the same machine only.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from fairprobe.access import Answer, BlackBox, LocalModelBackend, ResponseCache
from fairprobe.access.records import normalize_records, record_key


def records(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "age": rng.integers(17, 90, n),
            "education-num": rng.integers(1, 17, n),
            "race": rng.choice(["White", "Black", "Asian-Pac-Islander", "Other"], n),
            "capital-gain": rng.choice([0, 2174, 5178, 15024], n),
            "capital-loss": np.zeros(n, dtype=int),
            "hours-per-week": rng.integers(1, 99, n),
            "sex": rng.choice(["Female", "Male"], n),
            "id": np.arange(n),
        }
    )


def model(df: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    z = (df["age"].to_numpy() - 40) / 10 + (df["hours-per-week"].to_numpy() - 40) / 20
    p = 1 / (1 + np.exp(-z))
    return (p >= 0.5).astype(int), p


def timeit(fn: Callable[[], object], repeats: int) -> list[tuple[float, float]]:
    """(wall, CPU) seconds of each repeat; CPU time counts every thread of this process."""
    out = []
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        out.append((time.perf_counter() - t0, time.process_time() - c0))
    return out


def row(name: str, n: int, times: list[tuple[float, float]]) -> None:
    wall = sorted(n / w for w, _ in times)
    cpu = statistics.median(n / max(c, 1e-9) for _, c in times)
    print(
        f"{name:<48} {statistics.median(wall):>11,.0f} /s  ({wall[0]:>9,.0f} - {wall[-1]:>9,.0f})"
        f"  {cpu:>11,.0f} /s"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    n, reps = args.n, args.repeats
    df = records(n)
    keys = [record_key(c) for c in normalize_records(df)[1]]
    answers = [Answer(i % 2, 0.5, 0.0) for i in range(n)]
    print(f"n = {n:,} records, {reps} repeats")
    print(f"{'':<48} {'wall median':>13}  {'(min - max)':>23}  {'per CPU-second':>13}")
    with tempfile.TemporaryDirectory() as tmp:
        tmpd = Path(tmp)
        counter = iter(range(10**9))

        def fresh_cache() -> ResponseCache:
            return ResponseCache(tmpd / f"c{next(counter)}.sqlite")

        def insert_batched() -> None:
            with fresh_cache() as c:
                for lo in range(0, n, 64):
                    c.put_many("m", list(zip(keys[lo : lo + 64], answers[lo : lo + 64],
                                             strict=True)))

        def insert_one() -> None:
            with fresh_cache() as c:
                c.put_many("m", list(zip(keys, answers, strict=True)))

        row("cache inserts (batches of 64, commit each)", n, timeit(insert_batched, reps))
        row("cache inserts (one transaction)", n, timeit(insert_one, reps))
        warm = fresh_cache()
        warm.put_many("m", list(zip(keys, answers, strict=True)))
        row("cache lookups (get_many, all hits)", n, timeit(lambda: warm.get_many("m", keys), reps))
        row("cache lookups (get_many, all misses)", n,
            timeit(lambda: warm.get_many("other", keys), reps))
        warm.close()
        row("record normalisation + SHA-256 keys", n,
            timeit(lambda: [record_key(c) for c in normalize_records(df)[1]], reps))

        backend = LocalModelBackend(model, name="bench-model", max_batch=1024)

        def cold() -> None:
            with BlackBox(backend, cache=tmpd / f"bb{next(counter)}.sqlite") as bb:
                bb.query(df)
                assert bb.spent == n

        row("BlackBox cold (local backend, file cache)", n, timeit(cold, reps))
        path = tmpd / "bbwarm.sqlite"
        with BlackBox(backend, cache=path) as bb:
            bb.query(df)

        def warm_q() -> None:
            with BlackBox(backend, cache=path) as bb:
                out = bb.query(df)
                assert out.n_cached == n

        row("BlackBox warm (all answers from the cache)", n, timeit(warm_q, reps))

        def memory() -> None:
            bb = BlackBox(backend)
            bb.query(df)

        row("BlackBox cold (local backend, in-memory cache)", n, timeit(memory, reps))
        raw = timeit(lambda: model(df), reps)
        row("the model alone (vectorised callable)", n, raw)


if __name__ == "__main__":
    main()
