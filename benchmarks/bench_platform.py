"""Speed of the platform server: answers per second over HTTP, and server start-up time.

    .venv/bin/python benchmarks/bench_platform.py [--repeats 5]

Prints medians (and min-max) over repeats of:
- start-up: ``PlatformProcess`` from launch to the first ``/health`` (imports + model training);
- in process: ``Platform.audit_predict`` / ``user_predict`` records/s at batch 1 and 1,000;
- over HTTP (one keep-alive client): ``/audit/predict`` records/s at batch sizes 1, 64, 1,000
  and 10,000 (the largest allowed), ``/user/predict`` at 1,000, ``/v1/chat/completions`` requests/s,
  and ``/audit/predict`` at batch 1,000 with ``--fairwash positive --gamma 0.3`` (hashing cost).
The machine may be shared: the script prints the load average; compare runs on one machine only.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable

import httpx

from fairprobe.datasets.adult import load_adult
from fairprobe.platform import AUDIT_FEATURES, USER_FEATURES, Platform, PlatformModel
from fairprobe.platform.llm import fill_prompt
from fairprobe.platform.process import PlatformProcess


def _median(f: Callable[[], float], repeats: int) -> tuple[float, float, float]:
    vals = [f() for _ in range(repeats)]
    return statistics.median(vals), min(vals), max(vals)


def _rate(n_records: int, f: Callable[[], object], calls: int) -> Callable[[], float]:
    def run() -> float:
        t = time.perf_counter()
        for _ in range(calls):
            f()
        return n_records * calls / (time.perf_counter() - t)

    return run


def _show(label: str, stats: tuple[float, float, float], unit: str) -> None:
    med, lo, hi = stats
    print(f"{label:58s} {med:12,.0f} {unit}  (min {lo:,.0f}, max {hi:,.0f})")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    print(f"load average: {os.getloadavg()}")
    df = load_adult("test", names_seed=0)
    audit = df[list(AUDIT_FEATURES)].to_dict("records")
    user = df[list(USER_FEATURES)].to_dict("records")

    def startup() -> float:
        t = time.perf_counter()
        with PlatformProcess():
            return time.perf_counter() - t

    med, lo, hi = _median(startup, max(1, args.repeats // 2))
    print(f"{'start-up to first /health (s)':58s} {med:12.2f} s  (min {lo:.2f}, max {hi:.2f})")

    plat = Platform(PlatformModel.default())
    for b in (1, 1000):
        _show(f"in process audit_predict, batch {b}",
              _median(_rate(b, lambda b=b: plat.audit_predict(audit[:b]), max(1, 200 // b)),
                      args.repeats), "records/s")  # fmt: skip
    _show("in process user_predict, batch 1000",
          _median(_rate(1000, lambda: plat.user_predict(user[:1000]), 2), args.repeats),
          "records/s")  # fmt: skip

    with PlatformProcess() as p, httpx.Client(trust_env=False, timeout=60) as c:
        for b, calls in ((1, 100), (64, 30), (1000, 5), (10_000, 1)):
            body = {"instances": audit[:b]}
            _show(f"HTTP /audit/predict, batch {b}",
                  _median(_rate(b, lambda body=body: c.post(p.url + "/audit/predict", json=body),
                                calls), args.repeats), "records/s")  # fmt: skip
        body = {"instances": user[:1000]}
        _show("HTTP /user/predict, batch 1000",
              _median(_rate(1000, lambda: c.post(p.url + "/user/predict", json=body), 5),
                      args.repeats), "records/s")  # fmt: skip
        model_id = c.get(p.url + "/v1/models").json()["data"][0]["id"]
        chat = {"model": model_id,
                "messages": [{"role": "user", "content": fill_prompt(audit[0])}]}

        def ask_chat() -> None:
            r = c.post(p.url + "/v1/chat/completions", json=chat)
            r.raise_for_status()

        _show("HTTP /v1/chat/completions (one record per request)",
              _median(_rate(1, ask_chat, 50), args.repeats), "requests/s")  # fmt: skip
    with PlatformProcess(fairwash="positive", gamma=0.3) as p, httpx.Client(timeout=60) as c:
        body = {"instances": audit[:1000]}
        _show("HTTP /audit/predict, batch 1000, fairwash positive 0.3",
              _median(_rate(1000, lambda: c.post(p.url + "/audit/predict", json=body), 5),
                      args.repeats), "records/s")  # fmt: skip
    print(f"load average: {os.getloadavg()}")


if __name__ == "__main__":
    main()
