"""Ask a model a seeded draw of a pool's records: what every method that audits a live model on
a pool of records (the proxy audit, the regulators' profiles, subgroup discovery) shares."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from fairprobe.errors import DataError

__all__ = ["DEFAULT_POOL_BUDGET", "PoolAnswers", "ask_pool", "read_pool"]


@dataclass(frozen=True)
class PoolAnswers:
    """The records drawn (every pool column, in draw order), the model's answers to the
    ``sent`` columns, and what the answers cost (``paid`` in this run, ``cached`` reused)."""

    sample: pd.DataFrame
    answers: Any
    sent: tuple[str, ...]
    paid: int
    cached: int


def read_pool(queries: str | os.PathLike[str] | pd.DataFrame) -> pd.DataFrame:
    """The ``--queries`` pool as a frame."""
    if isinstance(queries, pd.DataFrame):
        return queries
    from fairprobe._io import read_table

    return read_table(queries, "--queries file")


#: Records asked when ``--budget`` is not given (the whole pool if smaller), as ``audit`` does.
DEFAULT_POOL_BUDGET = 2000


def ask_pool(backend: Any, pool: pd.DataFrame, *, sent: Sequence[str],
             budget: int | str | None, seed: int,
             cache: str | os.PathLike[str] | None) -> PoolAnswers:
    """Draw ``budget`` records of ``pool`` (``"all"``: every one; ``None``:
    :data:`DEFAULT_POOL_BUDGET` or the whole pool if smaller; seeded, without replacement) and
    ask ``backend`` their ``sent`` columns through a :class:`~fairprobe.access.BlackBox`, with
    the answer cache at ``cache`` (none when ``None``) so that a rerun pays nothing."""
    from fairprobe.access.blackbox import BlackBox

    missing = [c for c in sent if c not in pool.columns]
    if missing:
        raise DataError(f"--feature-cols names {missing[0]!r}, which the --queries pool does "
                        "not have.")
    if isinstance(budget, int) and budget > len(pool):
        raise DataError(f"--budget {budget} is larger than the query pool ({len(pool)} rows); "
                        "lower it or give a larger --queries file.")
    n = (min(DEFAULT_POOL_BUDGET, len(pool)) if budget is None else
         len(pool) if isinstance(budget, str) else int(budget))
    sample = pool.sample(n=n, random_state=seed) if n < len(pool) else pool
    with BlackBox(backend, cache=None if cache is None else Path(cache), budget=n,
                  seed=seed) as bb:
        answers = bb.query(sample[list(sent)])
        return PoolAnswers(sample, answers, tuple(sent), int(bb.spent), int(bb.from_cache))
