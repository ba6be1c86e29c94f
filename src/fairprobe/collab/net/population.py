"""The bundled Table I populations as a model backend (answers replayed by row number).

A demo node holds a share of one population of Table I (its rows, as the simulator's partition
assigns them) and asks "the model" about a row through the access layer like about any other
input: the record is ``{"query_id": i}`` and the answer is the decision recorded for that input
(:meth:`fairprobe.datasets.Population.answers`, the same numbering as
:func:`~fairprobe.datasets.populations.write_population_answers`, so the generic ``replay`` backend
over that file gives the same answers). This backend only avoids building a 100,000-row replay
index in every node process: it looks rows up with numpy.

Registered as kind ``"population"`` with :func:`fairprobe.access.config.register_backend`::

    [backend]
    kind = "population"
    case = "bios-moderate"
    cache = "state/a00.answers.sqlite"   # the node's BlackBox response cache
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np

from fairprobe.access.base import Answer, Backend, Record
from fairprobe.access.config import BackendConfig, register_backend
from fairprobe.datasets import get_population
from fairprobe.errors import AccessError

__all__ = ["PopulationBackend", "PopulationConfig"]


class PopulationConfig(BackendConfig):
    """``kind = "population"``, ``case = "<Table I case>"``."""

    kind: Literal["population"] = "population"
    case: str
    max_batch: int = 4096


class PopulationBackend(Backend):
    """Replays the decisions of a Table I population; records are ``{"query_id": int}``."""

    kind = "population"

    def __init__(self, case: str, max_batch: int = 4096) -> None:
        self.population = get_population(case)
        self.in_group_a, dec = self.population.answers()
        self._decisions = dec.astype(np.int64)
        self.max_batch = max_batch

    @property
    def identity(self) -> str:
        p = self.population
        return f"population:{p.name}:{p.positives_a}/{p.size_a}/{p.positives_b}/{p.size_b}"

    def ask(self, records: Sequence[Record]) -> list[Answer]:
        try:
            rows = np.fromiter((int(r["query_id"]) for r in records), dtype=np.int64)
        except (KeyError, TypeError, ValueError) as exc:
            raise AccessError(f"population records are {{'query_id': int}}; got {exc!r}.") from None
        if rows.size and (rows.min() < 0 or rows.max() >= self._decisions.size):
            raise AccessError(f"a query_id lies outside population {self.population.name}.")
        return [Answer(int(d)) for d in self._decisions[rows].tolist()]


def _build(cfg: BackendConfig) -> Backend:
    assert isinstance(cfg, PopulationConfig)
    return PopulationBackend(cfg.case, cfg.max_batch)


register_backend("population", PopulationConfig, _build)
