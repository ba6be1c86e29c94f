"""Hostile text costs linear time: the platform's record extraction and the answer parser.

    .venv/bin/python benchmarks/bench_llm_parsing.py [--repeats 5]

For each hostile input family and sizes n, 2n, 4n, 8n it prints the median CPU time of
``fairprobe.platform.llm.extract_record`` (a chat message, up to 1 MB) and of
``fairprobe.access.parsing.classify_answer`` (a model answer, capped at 64 KiB), and the ratio of
successive medians: about 2 for linear work, about 4 for quadratic work. CPU time of this process, so
other load on a shared machine matters less than for wall time.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from fairprobe.access.parsing import classify_answer
from fairprobe.platform.llm import ChatError, extract_record

FAMILIES: dict[str, Callable[[int], str]] = {
    "open braces": lambda n: "{" * n,
    "deep nesting": lambda n: '{"a":' * (n // 5) + "1" + "}" * (n // 5),
    "brace pairs then record": lambda n: "{x} " * (n // 4) + '{"age": 3}',
    "braces in strings": lambda n: '{"x": "}' * (n // 8),
}


def cpu(f: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.process_time()
        f()
        times.append(time.process_time() - t0)
    return statistics.median(times)


def extract(text: str) -> object:
    try:
        return extract_record([{"role": "user", "content": text}])
    except ChatError:
        return None


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    sizes = [125_000, 250_000, 500_000, 1_000_000]
    for what, fn in (("extract_record", extract),
                     ("classify_answer", lambda t: classify_answer(t, [">50K", "<=50K"]))):
        print(f"{what}: median CPU seconds over {args.repeats} runs (ratio to the half size)")
        for fam, make in FAMILIES.items():
            row, prev = [], None
            for n in sizes:
                text = make(n)
                t = cpu(lambda text=text, fn=fn: fn(text), args.repeats)  # type: ignore[misc]
                row.append(f"{n:>9,}: {t:7.4f}" + (f" (x{t / prev:4.2f})" if prev else "        "))
                prev = max(t, 1e-9)
            print(f"  {fam:<24} " + "  ".join(row))


if __name__ == "__main__":
    main()
