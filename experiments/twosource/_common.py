"""Shared plumbing of the two-source experiments: platform processes, warm caches, the pool.

Every experiment runs the real platform server (``fairprobe platform serve``) through
:class:`fairprobe.platform.process.PlatformProcess` and talks to it with the access layer
(HttpJsonBackend + BlackBox). Each fairwashing configuration gets one server process; the whole
query pool is sent to it once and the answers go into a response cache, so the hundreds of audits
run per point afterwards are answered from the cache (identical, deterministic answers, as the
server's flips are a function of the input).
"""

from __future__ import annotations

import socket
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fairprobe.access.blackbox import BlackBox
from fairprobe.access.cache import ResponseCache
from fairprobe.access.http import HttpJsonBackend
from fairprobe.datasets.adult import load_adult
from fairprobe.platform.core import USER_FEATURES
from fairprobe.platform.model import AUDIT_FEATURES
from fairprobe.platform.process import PlatformProcess

RESULTS = Path(__file__).resolve().parents[1] / "results" / "twosource"
RESULTS.mkdir(parents=True, exist_ok=True)


def pool() -> pd.DataFrame:
    """The query pool: the Adult test split with seeded first names (16,281 records)."""
    return load_adult("test")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


_PORT = free_port()  # one port for every server: B's cache identity stays the same


def config_name(mode: str, gamma: float, mix: float) -> str:
    return f"fairwash={mode},gamma={gamma:g},mix={mix:g}"


@contextmanager
def platform_sources(
    cache: ResponseCache,
    mode: str = "none",
    gamma: float = 0.0,
    mix: float = 0.5,
    warm: pd.DataFrame | None = None,
) -> Iterator[tuple[BlackBox, BlackBox]]:
    """A server with this fairwashing, and BlackBoxes for A and B sharing ``cache``.

    A's cache identity names the configuration (``model=...``), B's is the same for every
    configuration (B is never fairwashed). With ``warm``, the whole frame is sent once to both.
    """
    t0 = time.time()
    with PlatformProcess(port=_PORT, fairwash=mode, gamma=gamma, mix=mix, seed=1) as plat:
        api = BlackBox(
            HttpJsonBackend(url=plat.url, model=config_name(mode, gamma, mix), max_batch=512),
            cache=cache,
            concurrency=2,
        )
        ui = BlackBox(
            HttpJsonBackend(url=plat.url, path="/user/predict", model="user", max_batch=512),
            cache=cache,
            concurrency=2,
        )
        if warm is not None:
            api.query(warm[list(AUDIT_FEATURES)])
            ui.query(warm[list(USER_FEATURES)])
        print(
            f"  [{config_name(mode, gamma, mix)}] server up and pool cached in "
            f"{time.time() - t0:.1f}s (paid A {api.spent}, B {ui.spent})",
            file=sys.stderr,
        )
        yield api, ui


def a_decisions(api: BlackBox, frame: pd.DataFrame) -> np.ndarray:
    return np.asarray(api.query(frame[list(AUDIT_FEATURES)]).decisions)


def b_decisions(ui: BlackBox, frame: pd.DataFrame) -> np.ndarray:
    return np.asarray(ui.query(frame[list(USER_FEATURES)]).decisions)


def write(name: str, obj: Any) -> Path:
    from fairprobe.report import write_json

    return write_json(RESULTS / name, obj)


class RowReplay:
    """Answers fetched once from a server, replayed by pool row (``frame.index``).

    A source for :func:`run_two_source_audit` (it only needs ``query(frame) -> AnswerBatch``):
    every answer is the server's, fetched through BlackBox + cache for the whole pool; replaying
    by row avoids re-normalising records hundreds of times per point. ``check_replay`` verifies
    that audits through it and through the BlackBox agree exactly.
    """

    def __init__(self, decisions: np.ndarray) -> None:
        self.decisions = np.asarray(decisions, dtype=np.float64)

    def query(self, frame: pd.DataFrame) -> Any:
        from fairprobe.access.base import AnswerBatch

        d = self.decisions[frame.index.to_numpy()]
        nan = np.full(d.shape, np.nan)
        return AnswerBatch(d, nan, nan.copy(), 0, int(d.size))


def check_replay(api: BlackBox, ui: BlackBox, replay_a: RowReplay, replay_b: RowReplay,
                 frame: pd.DataFrame, proxy: Any, seeds: range = range(3)) -> None:  # fmt: skip
    """Assert that audits through the replay and through the BlackBoxes give the same result."""
    from fairprobe.twosource import run_two_source_audit

    for s in seeds:
        kw = dict(budget=600, seed=s, batch_size=50)
        r1 = run_two_source_audit(api, ui, frame, proxy, **kw).to_dict()  # type: ignore[arg-type]
        r2 = run_two_source_audit(replay_a, replay_b, frame, proxy, **kw).to_dict()  # type: ignore[arg-type]
        r1.pop("queries"), r2.pop("queries")
        assert r1 == r2, f"replay differs from the server at seed {s}"
