"""The node's binding of the protocol core to model access: one object per node, sans sockets.

:class:`Driver` owns the node's :class:`~fairprobe.collab.protocol.AuditorCore` (or
:class:`~fairprobe.collab.protocol.AttackerCore`), the :class:`~fairprobe.collab.protocol.QuerySampler`
over the node's private query set and, for an honest node, a :class:`fairprobe.access.BlackBox`
over the configured backend with a persistent response cache. It adds nothing to the protocol:
each call below is one step of the core.

Query sets (``[query_set]`` of ``node.toml``)
---------------------------------------------
``kind = "population"``
    This auditor's share of a bundled Table I population, exactly as the simulator partitions it
    (``case``, ``honest``, ``alpha``, ``seed``, ``min_per_group``, ``index``); the query order is
    the simulator's for that auditor. Records are ``{"query_id": row}``; answer them with the
    ``population`` backend (:mod:`fairprobe.collab.net.population`) or the generic ``replay``
    backend over :func:`fairprobe.datasets.populations.write_population_answers` output.
``kind = "adult"``
    This auditor's share of the bundled Adult records (``split``), for audits of the platform
    server (:func:`fairprobe.collab.net.plan.adult_share`); use the ``http-json`` backend.
``kind = "file"``
    A CSV/Parquet file of records (``path``), the group column (``group_column``) and the value
    meaning group A (``group_a``); every other column is sent to the model. The order is a
    permutation seeded by ``[audit] seed``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from fairprobe.collab.net.config import NodeConfig
from fairprobe.collab.net.roster import Roster
from fairprobe.collab.protocol import (
    AttackerCore,
    AuditorCore,
    Entry,
    EntrySigner,
    EntryVerifier,
    QuerySampler,
    core_from_dict,
)
from fairprobe.errors import ConfigError
from fairprobe.stats.counts import CountsVector, counts_from_decisions

__all__ = ["Driver", "load_query_set"]


def load_query_set(
    spec: Mapping[str, Any], audit_seed: int, replacement: bool
) -> tuple[list[dict[str, Any]], npt.NDArray[np.bool_], QuerySampler]:
    """Records, group-A mask and the sampler of one honest node's private query set."""
    kind = spec.get("kind")
    if kind == "population":
        from fairprobe.collab.net.plan import honest_share

        try:
            rows, in_a, sampler = honest_share(
                case=str(spec["case"]),
                honest=int(spec["honest"]),
                alpha=float(spec["alpha"]),
                seed=int(spec["seed"]),
                min_per_group=int(spec.get("min_per_group", 30)),
                index=int(spec["index"]),
                replacement=replacement,
            )
        except KeyError as exc:
            raise ConfigError(f"[query_set] kind = \"population\" needs {exc.args[0]!r}.") from None
        pop_records: list[dict[str, Any]] = [{"query_id": int(r)} for r in rows.tolist()]
        return pop_records, in_a, sampler
    if kind == "adult":
        from fairprobe.collab.net.plan import adult_share

        try:
            adult_records, in_a, sampler = adult_share(
                split=str(spec.get("split", "test")),
                honest=int(spec["honest"]),
                alpha=float(spec["alpha"]),
                seed=int(spec["seed"]),
                min_per_group=int(spec.get("min_per_group", 30)),
                index=int(spec["index"]),
                replacement=replacement,
            )
        except KeyError as exc:
            raise ConfigError(f"[query_set] kind = \"adult\" needs {exc.args[0]!r}.") from None
        return [dict(r) for r in adult_records], in_a, sampler
    if kind == "file":
        from fairprobe.datasets.queryset import read_table

        for k in ("path", "group_column", "group_a"):
            if k not in spec:
                raise ConfigError(f"[query_set] kind = \"file\" needs {k!r}.")
        df = read_table(spec["path"])
        gcol = str(spec["group_column"])
        if gcol not in df.columns:
            raise ConfigError(f"Query set {spec['path']} has no column {gcol!r}.")
        in_a = (df[gcol] == spec["group_a"]).to_numpy(dtype=bool)
        feats = df.drop(columns=[gcol])
        records = [{str(k): v for k, v in r.items()} for r in feats.to_dict(orient="records")]
        sampler = QuerySampler(len(records), audit_seed, replacement=replacement)
        return records, in_a, sampler
    raise ConfigError(
        f"[query_set] kind must be \"population\", \"adult\" or \"file\". Got {kind!r}."
    )


class Driver:
    """Core + sampler + model access of one node; every method is one protocol step."""

    def __init__(
        self,
        cfg: NodeConfig,
        roster: Roster,
        signer: EntrySigner,
        verifier: EntryVerifier,
    ) -> None:
        self.cfg = cfg
        self._signer = signer
        self._verifier = verifier
        a = cfg.audit
        self.core: AuditorCore | AttackerCore
        self.sampler: QuerySampler | None = None
        self.bb: Any = None
        if cfg.role == "honest":
            self.core = AuditorCore(
                cfg.id, roster.ids, n=a.n, tau=a.tau, z_max=a.z_max,
                signer=signer, verifier=verifier,
            )
            self.records, self.in_a, self.sampler = load_query_set(
                cfg.query_set, a.seed, a.replacement
            )
            self._open_backend()
        else:
            self.core = AttackerCore(
                cfg.id, roster.ids, n=a.n, tau=a.tau, signer=signer, verifier=verifier
            )

    def _open_backend(self) -> None:
        import fairprobe.collab.net.population  # noqa: F401 - registers kind "population"
        from fairprobe.access import BlackBox, load_backend

        be = dict(self.cfg.backend)
        if not be:
            raise ConfigError("An honest node needs a [backend] table (how to ask the model).")
        cache = be.pop("cache", None)
        self.bb = BlackBox(load_backend(be), cache=cache)

    def close(self) -> None:
        if self.bb is not None:
            self.bb.close()

    # -- steps --------------------------------------------------------------------------------
    def local_step(self, t: int) -> Entry:
        """Steps 1-2 (or Algorithm 2, Lines 3-4): open round ``t`` and stamp the own entry."""
        r = self.core.start_round()
        if r != t:
            raise ConfigError(f"Node state is at round {r - 1}, asked to run round {t}.")
        if isinstance(self.core, AttackerCore):
            return self.core.fabricate()
        assert self.sampler is not None
        if self.sampler.remaining == 0:
            return self.core.record_answers(CountsVector.zero())
        idx = self.sampler.draw(self.core.n)
        if idx.size == 0:
            return self.core.record_answers(CountsVector.zero())
        batch = self.bb.query([self.records[i] for i in idx.tolist()])
        ok = batch.parsed
        inc = counts_from_decisions(batch.decisions[ok], self.in_a[idx][ok])
        return self.core.record_answers(inc)

    def merge(self, entries: list[Entry]) -> list[tuple[str, str]]:
        """Step 4 (the core's merge); returns the rejected ``(auditor, reason)`` pairs."""
        return list(self.core.merge(entries).rejected)

    def end_round(self) -> None:
        """Steps 5-6 (the core's scoring, weighting and estimate)."""
        self.core.end_round()

    def held_round(self, auditor: str) -> int:
        h = self.core.held.get(auditor)
        return 0 if h is None else int(h.round)

    def held_counts(self, auditor: str) -> tuple[int, int, int, int] | None:
        h = self.core.held.get(auditor)
        return None if h is None else tuple(int(x) for x in h.counts)  # type: ignore[return-value]

    def table(self) -> list[Entry]:
        return self.core.table_entries()

    def estimate(self) -> float:
        return float(self.core.estimate())

    @property
    def queries_used(self) -> int:
        return 0 if self.sampler is None else int(self.sampler.position)

    @property
    def queries_left(self) -> int:
        return 0 if self.sampler is None else int(self.sampler.remaining)

    # -- persistence --------------------------------------------------------------------------
    def to_state(self) -> dict[str, Any]:
        """JSON-ready state; the query order is kept as a digest (it is rebuilt from the
        query set on load, which is deterministic), not as a list of every index."""
        sampler = None
        if self.sampler is not None:
            sampler = self.sampler.to_dict()
            order = sampler.pop("order")
            sampler["order_sha256"] = _digest(order)
        return {"core": self.core.to_dict(), "sampler": sampler}

    def load_state(self, state: Mapping[str, Any]) -> None:
        self.core = core_from_dict(state["core"], signer=self._signer, verifier=self._verifier)
        saved = state.get("sampler")
        if saved is not None:
            assert self.sampler is not None
            order = None if self.sampler.order is None else self.sampler.order.tolist()
            if _digest(order) != saved["order_sha256"]:
                raise ConfigError(
                    "The query set no longer gives the query order of the saved state; "
                    "restore the original query set or start a fresh state_db."
                )
            d = {k: v for k, v in saved.items() if k != "order_sha256"}
            self.sampler = QuerySampler.from_dict({**d, "order": order})


def _digest(order: list[int] | None) -> str | None:
    if order is None:
        return None
    return hashlib.sha256(np.asarray(order, dtype=np.int64).tobytes()).hexdigest()
