"""An audit run as a subprocess by test_sigkill.py, to be killed with SIGKILL and resumed.

    python sigkill_audit.py local RECORDS CACHE OUT --log LOG [--hang-from K] [--concurrency C]
    python sigkill_audit.py http  RECORDS CACHE OUT --url URL [--max-batch B] [--concurrency C]

``local``: a slow in-process backend that appends the id of every record it answered to LOG
(one ``os.write`` per batch on an O_APPEND descriptor, so nothing is lost when the process is
killed). With ``--hang-from K``, its K-th call and all later ones write a line to LOG + ".hung"
and sleep forever: once ``C`` lines are there, every worker thread is asleep inside a call and
every earlier batch has been answered *and* committed — the parent kills at that moment.

``http``: audits the platform server's audit API. The final answers go to OUT as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import threading
import time
from collections.abc import Sequence
from typing import Any

from fairprobe.access import Answer, Backend, BlackBox, HttpJsonBackend
from fairprobe.access.base import Record
from fairprobe.access.identity import ModelIdentity


class SlowLogging(Backend):
    kind = "slow-logging"
    max_batch = 5

    def __init__(self, log: str, hang_from: int | None) -> None:
        self.fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self.hung = log + ".hung"
        self.hang_from = hang_from
        self.calls = 0
        self.lock = threading.Lock()

    @property
    def identity(self) -> str:
        return "slow-logging:v1"

    def model_identity(self) -> ModelIdentity:
        # the model is fixed by this script: nothing to fingerprint
        return ModelIdentity("slow-logging:v1", "v1", "code-hash")

    def ask(self, records: Sequence[Record]) -> list[Answer]:
        with self.lock:
            k = self.calls
            self.calls += 1
        if self.hang_from is not None and k >= self.hang_from:
            fd = os.open(self.hung, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            os.write(fd, f"{k}\n".encode())
            os.close(fd)
            time.sleep(3600)
        time.sleep(0.01)
        answers = [Answer(int(r["x"] % 3 == 0), (r["x"] % 10) / 10, float(r["x"])) for r in records]
        os.write(self.fd, "".join(f"{r['id']}\n" for r in records).encode())
        return answers


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["local", "http"])
    ap.add_argument("records")
    ap.add_argument("cache")
    ap.add_argument("out")
    ap.add_argument("--log")
    ap.add_argument("--hang-from", type=int)
    ap.add_argument("--url")
    ap.add_argument("--concurrency", type=int, default=2)
    ap.add_argument("--max-batch", type=int, default=4)
    args = ap.parse_args()
    with open(args.records) as f:
        records: list[dict[str, Any]] = json.load(f)
    backend: Backend
    if args.mode == "local":
        backend = SlowLogging(args.log, args.hang_from)
    else:
        backend = HttpJsonBackend(url=args.url, max_batch=args.max_batch)
    with BlackBox(backend, cache=args.cache, concurrency=args.concurrency, retries=20,
                  backoff=0.01) as bb:
        out = bb.query(records)
        result = {
            "decisions": out.decisions.tolist(),
            "scores": out.scores.tolist(),
            "logits": out.logits.tolist(),
            "spent": bb.spent,
            "n_paid": out.n_paid,
            "n_cached": out.n_cached,
            "resumed_in_flight": bb.resumed_in_flight,
        }
    with open(args.out, "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main()
