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
``kind = "population-pool"`` / ``kind = "adult-pool"``
    An attacker node's pool of records to back its fabricated counts with when verification is
    on: every row of a Table I population (answers known from the replay), or every bundled
    Adult record of ``split`` (answers asked of the attacker's own ``[backend]``, the audited
    platform it colludes with), in an order seeded by ``seed``.
``kind = "file"``
    A CSV/Parquet file of records (``path``), the group column (``group_column``) and the value
    meaning group A (``group_a``); every other column is sent to the model. The order is a
    permutation seeded by ``[audit] seed``.
"""

from __future__ import annotations

import hashlib
import threading
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
    if kind in ("population", "adult"):
        from fairprobe.collab.net.plan import adult_share, honest_share

        _check_index(spec)
        try:
            where = ({"case": str(spec["case"])} if kind == "population"
                     else {"split": str(spec.get("split", "test"))})  # fmt: skip
            share: dict[str, Any] = dict(
                where,
                honest=int(spec["honest"]),
                alpha=float(spec["alpha"]),
                seed=int(spec["seed"]),
                min_per_group=int(spec.get("min_per_group", 30)),
                index=int(spec["index"]),
                replacement=replacement,
            )
            if kind == "population":
                rows, in_a, sampler = honest_share(**share)
                pop_records: list[dict[str, Any]] = [{"query_id": int(r)} for r in rows.tolist()]
                return pop_records, in_a, sampler
            adult_records, in_a, sampler = adult_share(**share)
        except KeyError as exc:
            raise ConfigError(f"[query_set] kind = \"{kind}\" needs {exc.args[0]!r}.") from None
        return [dict(r) for r in adult_records], in_a, sampler
    if kind == "population-pool":
        # an attacker node's pool of records to back fabricated counts with (verification on):
        # every row of the population, in a seeded order; it colludes with the platform, so it
        # knows the true answers
        from fairprobe.datasets.populations import POPULATIONS, get_population

        case = spec.get("case")
        if case not in POPULATIONS:
            raise ConfigError(
                f"[query_set] kind = \"population-pool\" needs case, one of {sorted(POPULATIONS)}."
            )
        pop = get_population(str(case))
        in_a_all, _ = pop.answers()
        order = np.random.default_rng(int(spec.get("seed", audit_seed))).permutation(in_a_all.size)
        return (
            [{"query_id": int(r)} for r in order.tolist()],
            in_a_all[order],
            QuerySampler(0, 0, replacement=True),
        )
    if kind == "adult-pool":
        from fairprobe.collab.net.plan import ADULT_GROUP_A
        from fairprobe.datasets.queryset import adult_queryset

        qs = adult_queryset(str(spec.get("split", "test")))
        df = qs.frame
        order = np.random.default_rng(int(spec.get("seed", audit_seed))).permutation(len(df))
        pool = df.loc[order, list(qs.feature_cols)].to_dict(orient="records")
        return (
            [{str(k): v for k, v in r.items()} for r in pool],
            (df[qs.group_col] == ADULT_GROUP_A).to_numpy()[order],
            QuerySampler(0, 0, replacement=True),
        )
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


def _attack_strategy(cfg: NodeConfig) -> Any:
    """The attacker node's strategy, calibrated with ``attack_context`` when it needs one."""
    from fairprobe.collab.attacker import AttackContext, get_attack

    strat = get_attack(cfg.attack)
    if strat.needs_context:
        if not cfg.attack_context:
            raise ConfigError(
                f"attack = {cfg.attack!r} needs an [attack_context] table (what the platform "
                "tells the attacker: population, n, rounds, attackers, honest, tau, seed, ids)."
            )
        try:
            ctx = AttackContext.from_dict(cfg.attack_context)
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(f"[attack_context] is incomplete or invalid: {exc}.") from None
        strat = strat.calibrate(ctx)
    return strat


def _check_index(spec: Mapping[str, Any]) -> None:
    """``index`` must name one of the ``honest`` auditors of the partition."""
    try:
        index, honest = spec["index"], spec["honest"]
    except KeyError as exc:
        raise ConfigError(f"[query_set] kind = {spec.get('kind')!r} needs {exc.args[0]!r}.") from None
    if not isinstance(honest, int) or isinstance(honest, bool) or honest < 1:
        raise ConfigError(f"[query_set] honest must be an int >= 1. Got {honest!r}.")
    if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < honest:
        raise ConfigError(
            f"[query_set] index must be an int in [0, {honest - 1}] (this auditor's rank among "
            f"the {honest} honest auditors of the partition). Got {index!r}."
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
        # the roster graph (every member's neighbours): what this node can check of A4
        self._ids = tuple(roster.ids)
        self._adj = np.zeros((len(self._ids), len(self._ids)), dtype=bool)
        for i, u in enumerate(self._ids):
            for w in roster.member(u).neighbours:
                self._adj[i, self._ids.index(w)] = True
        self.lock = threading.RLock()
        self.method = cfg.method
        self.verifying = cfg.verify.enabled
        self.log: Any = None
        self.excluded: dict[str, int] = {}
        self.proven: set[str] = set()  # excluded on a proof of fraud (the others: a failed challenge)
        self.pool_pos = [0, 0]
        self.issued_last = 0
        self.trajectory: list[float | None] = []
        if self.verifying:
            from fairprobe.collab.verify import CommittingSigner, CommittingVerifier

            signer = CommittingSigner(signer, root_for=self._root_for)
            verifier = CommittingVerifier(verifier)
        self._signer = signer
        self._verifier = verifier
        self._base_signer: Any = getattr(signer, "base", signer)
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
            self._strategy = _attack_strategy(cfg)
            self.core = AttackerCore(
                cfg.id, roster.ids, n=a.n, tau=a.tau, strategy=self._strategy,
                signer=signer, verifier=verifier,
            )
            if self.verifying:
                pool = cfg.query_set.get("kind")
                if pool not in ("population-pool", "adult-pool"):
                    raise ConfigError(
                        "An attacker node with [verify] on needs [query_set] kind = "
                        "\"population-pool\" or \"adult-pool\" (records to back its counts "
                        "with)."
                    )
                self.records, self.in_a, _ = load_query_set(cfg.query_set, a.seed, False)
                self.truth: npt.NDArray[np.int64]
                if pool == "adult-pool":
                    # it colludes with the platform: it asks it for the true answers
                    self._open_backend()
                    assert self.bb is not None
                    batch = self.bb.query(self.records)
                    self.truth = np.where(batch.parsed, batch.decisions, 0).astype(np.int64)
                else:
                    from fairprobe.collab.net.population import PopulationBackend

                    be = PopulationBackend(str(cfg.query_set["case"]))
                    rows = np.array([r["query_id"] for r in self.records], dtype=np.int64)
                    self.truth = be._decisions[rows]
                self.pool_a = np.flatnonzero(self.in_a)
                self.pool_b = np.flatnonzero(~self.in_a)
                if cfg.verify.records == "poisoned":
                    # committed records the model refuses (the truth above stays the real one)
                    self.records = [{"query_id": 10**7 + i} if i % 2 == 0 else {"x": i}
                                    for i in range(len(self.records))]
        if self.verifying:
            from fairprobe.collab.verify import LeafLog, salt_key

            self.log = LeafLog(salt_key(self._base_signer), self.records)
        self._set_closing()

    def _open_backend(self) -> None:
        import fairprobe.collab.net.population  # noqa: F401 - registers kind "population"
        from fairprobe.access import BlackBox, load_backend

        be = dict(self.cfg.backend)
        if not be:
            raise ConfigError("An honest node needs a [backend] table (how to ask the model).")
        cache = be.pop("cache", None)
        if isinstance(cache, str) and cache not in ("", ":memory:"):
            from fairprobe._io import prepare_private_file

            # the cached answers reveal the private query set: 0600
            prepare_private_file(cache, "node answer cache", ConfigError)
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
        self.issued_last = 0
        if t > self.cfg.audit.rounds:  # a closing round: nobody adds queries
            with self.lock:
                return self.core.pass_round()
        if isinstance(self.core, AttackerCore):
            with self.lock:  # its leaves are built while the entry is signed
                if self.log is not None and self._strategy.level == "answers":
                    return self._answer_step(t)
                return self.core.fabricate()
        assert self.sampler is not None
        if self.sampler.remaining == 0:
            with self.lock:
                return self.core.record_answers(CountsVector.zero())
        idx = self.sampler.draw(self.core.n)
        if idx.size == 0:
            with self.lock:
                return self.core.record_answers(CountsVector.zero())
        # the model is asked without the lock: challenges are answered meanwhile
        batch = self.bb.query([self.records[i] for i in idx.tolist()])
        ok = batch.parsed
        inc = counts_from_decisions(batch.decisions[ok], self.in_a[idx][ok])
        self.issued_last = int(idx.size)
        with self.lock:
            if self.log is not None:
                self.log.add(idx[ok], self.in_a[idx][ok], batch.decisions[ok])
            return self.core.record_answers(inc)

    def merge(self, entries: list[Entry]) -> list[tuple[str, str]]:
        """Step 4 (the core's merge); returns the rejected ``(auditor, reason)`` pairs."""
        if self.excluded:
            entries = [e for e in entries if e.auditor not in self.excluded]
        return list(self.core.merge(entries).rejected)

    def end_round(self) -> None:
        """Steps 5-6 (the core's scoring, weighting and estimate)."""
        self.core.end_round()
        if isinstance(self.core, AuditorCore):
            est = self.estimate()
            self.trajectory.append(None if est != est else est)

    def source_weights(self) -> dict[str, float]:
        """Per source, its weighted query mass over its raw mass (``|W_j| / |c_j|``): 1 for a
        source never down-weighted, 0 for an excluded one."""
        core = self.core
        if not isinstance(core, AuditorCore):
            return {}
        raw = core.table_counts()
        out = {}
        for k, a in enumerate(core.roster):
            m = float(raw[k, 1] + raw[k, 3])
            if a in self.excluded:
                out[a] = 0.0
            elif m > 0:
                out[a] = float(core.W[k, 1] + core.W[k, 3]) / m
        return out

    def held_round(self, auditor: str) -> int:
        h = self.core.held.get(auditor)
        return 0 if h is None else int(h.round)

    def held_counts(self, auditor: str) -> tuple[int, int, int, int] | None:
        h = self.core.held.get(auditor)
        return None if h is None else tuple(int(x) for x in h.counts)  # type: ignore[return-value]

    def held_sig(self, auditor: str) -> bytes | None:
        h = self.core.held.get(auditor)
        return None if h is None else bytes(h.sig)

    def table(self) -> list[Entry]:
        return [e for e in self.core.table_entries() if e.auditor not in self.excluded]

    # -- verification of answers (fairprobe.collab.verify) ------------------------------------
    def _root_for(self, round_: int, counts: tuple[int, int, int, int]) -> bytes:
        """The records root signed with the own entry of ``round_`` (``counts`` cumulative)."""
        assert self.log is not None
        if isinstance(self.core, AttackerCore) and tuple(self.log.tree.total()) != tuple(counts):
            # a count-level attacker: back the fabricated increment with leaves now
            from fairprobe.collab.verify import assign_claimed_answers

            have = self.log.tree.total()
            inc = [c - h for c, h in zip(counts, have, strict=True)]
            pa, pb = self.pool_pos
            ta = self.truth[self.pool_a[pa:]]
            tb = self.truth[self.pool_b[pb:]]
            ia, ca, ib, cb = assign_claimed_answers(
                inc, ta, tb,
                records="chosen" if self.cfg.verify.records == "chosen" else "random",
            )
            rec = np.concatenate([self.pool_a[pa:][ia], self.pool_b[pb:][ib]])
            grp = np.concatenate([np.ones(ia.size, np.int64), np.zeros(ib.size, np.int64)])
            self.log.add(rec, grp, np.concatenate([ca, cb]))
            # records used are never reused (chosen ones may skip some: advance past the last)
            self.pool_pos = [pa + (int(ia.max()) + 1 if ia.size else 0),
                             pb + (int(ib.max()) + 1 if ib.size else 0)]
        if tuple(self.log.tree.total()) != tuple(counts):
            raise ConfigError(
                f"The committed records give counts {self.log.tree.total()}, the entry {counts}."
            )
        return bytes(self.log.root())

    def _answer_step(self, t: int) -> Entry:
        """An answer-level liar's round: the next records of its pool (in order), the answers
        its strategy reports for them as leaves, the counts of those answers as its entry."""
        assert self.log is not None and isinstance(self.core, AttackerCore)
        start = len(self.log.items)
        k = int(self._strategy.draws(self.core.n, t))
        idx = np.arange(start, min(start + k, len(self.records)), dtype=np.int64)
        g = self.in_a[idx].astype(np.int64)
        reported = self._strategy.answers(g, self.truth[idx], t)
        self.log.add(idx, g, reported)
        inc = counts_from_decisions(reported, self.in_a[idx])
        return self.core.record_answers(inc)

    def open_leaves(self, round_: int, m: int, indices: list[int]) -> list[Any]:
        """Signed openings of leaves of the own root over ``m`` leaves of ``round_``."""
        assert self.log is not None
        return list(self.log.open(self.cfg.id, round_, m, indices, self._base_signer))

    def truthful_leaf(self, k: int) -> bool:
        """Whether leaf ``k`` of an attacker's log carries the model's true answer."""
        assert self.log is not None
        ri, _, y = self.log.items[k]
        truth = getattr(self, "truth", None)
        return truth is not None and int(truth[ri]) == int(y)

    def reask(self, records: list[dict[str, Any]]) -> list[int | None]:
        """The model's answers to opened records (None when unparsed); honest nodes only."""
        if self.bb is None or not records:
            return [None] * len(records)
        batch = self.bb.query(records)
        return [int(d) if ok else None
                for d, ok in zip(batch.decisions.tolist(), batch.parsed.tolist(), strict=True)]

    def exclude(self, auditor: str, round_: int, *, proven: bool = False) -> None:
        """Stop merging and relaying ``auditor``'s entries and drop its weighted vector.
        ``proven``: on a checked proof of fraud (``bounded`` then drops it as a certain liar);
        else on a failed challenge (``bounded`` keeps its last counts: it may be honest)."""
        from fairprobe.collab.verify import exclude_source

        if auditor == self.cfg.id:
            return
        if proven:
            self.proven.add(auditor)
        if auditor in self.excluded:
            return
        self.excluded[auditor] = round_
        if isinstance(self.core, AuditorCore):
            exclude_source(self.core, auditor)

    def _held_mask(self) -> npt.NDArray[np.bool_]:
        core = self.core
        return np.array(
            [core.held[a].round >= 1 and a not in self.excluded for a in core.roster]
        )

    def estimate(self) -> float:
        """This node's estimate by ``method`` (``robust`` by default), excluded sources left out
        (their weighted vectors are zero; baselines over raw tables mask them)."""
        core = self.core
        if not isinstance(core, AuditorCore):
            return 0.0
        if self.method == "bounded":
            return float(self.bounded(certify=False)["estimate"])
        if self.method in ("auditopus", "robust") or not self.excluded:
            return float(core.estimate_of(self.method))
        from fairprobe.collab.baselines import get_aggregator

        agg = get_aggregator(self.method)
        return float(agg(core.table_counts()[None], self._held_mask()[None])[0])

    def bounded(self, *, certify: bool = True) -> dict[str, Any]:
        """This node's ``bounded`` interval, verdict and certificate
        (:mod:`fairprobe.collab.bounded`): every held source counts (one excluded on a failed
        challenge too: it may be honest), sources excluded on a proof are certain liars (dropped;
        ``max_liars`` more may lie besides them). For a model (not a replayed population) the
        interval is :func:`~fairprobe.collab.bounded.sampling_hull`: exact boxes of the honest
        sample inside the liar hull, level 0.95."""
        from fairprobe.collab.bounded import (
            answer_flips,
            bounded_intervals,
            certified_ks,
            escape_bound,
            sampling_hull,
        )
        from fairprobe.stats.finding import decide_array

        core = self.core
        assert isinstance(core, AuditorCore)
        tab = core.table_counts()[None]
        hr = np.array([[core.held[a].round for a in core.roster]], dtype=np.int64)
        pr = np.array([[a in self.proven for a in core.roster]])
        kw: dict[str, Any] = {"n": core.n, "rounds": self.cfg.audit.rounds, "proven": pr}
        K = self.cfg.max_liars
        a4 = self.a4() if self.verifying else None
        if a4 is not None and a4["without_challenger"]:
            # sources whose every neighbour is a proven liar: nobody challenges their answers,
            # so they may lie undetected; the verdict counts them among those that may lie
            K += len(a4["without_challenger"])
        est, lo, hi = bounded_intervals(tab, hr, max_liars=K, **kw)
        census = self.census
        if not census:  # the query sets are samples of the model's inputs
            v = np.where(((hr >= 1) & ~pr)[..., None], tab, 0)
            lo, hi = sampling_hull(v, K)
        if not certify:  # the estimate after each round (trajectory): no certificate
            return {"estimate": float(est[0]), "low": float(lo[0]), "high": float(hi[0])}
        ver = decide_array(lo, hi, kind="difference", threshold=core.tau)
        if census:
            ck = certified_ks(tab, hr, ver, tau=core.tau, start=K, max_k=len(core.roster), **kw)
        else:
            ck = np.array([-1 if ver[0] == "undetermined" else K])
            # the exact sample hull: k <= 3; an undetermined verdict certifies nothing
            for k in range(K + 1, min(len(core.roster), 4) if ck[0] >= 0 else 0):
                if decide_array(*sampling_hull(v, k), kind="difference",
                                threshold=core.tau)[0] != ver[0]:
                    break
                ck[0] = k
        # answers that must be false for the verdict to differ from the true answers' verdict
        flip = answer_flips(tab, hr, lo, hi, ver, tau=core.tau, max_liars=K, proven=pr)
        rate = self.cfg.verify.rate if self.verifying else None
        fm = None if not np.isfinite(flip[0]) else float(flip[0])
        return {
            "estimate": float(est[0]), "low": float(lo[0]), "high": float(hi[0]),
            "verdict": str(ver[0]), "certified_k": None if ck[0] < 0 else int(ck[0]),
            "max_liars": K, "proven_liars": sorted(self.proven), "flip_mass": fm,
            "verification_rate": rate, "escape_bound": escape_bound(fm, rate),
            "census": census, "a4": a4,
        }

    def a4(self) -> dict[str, Any]:
        """This node's check of the escape bound's assumption A4 on the roster graph
        (:func:`fairprobe.collab.verify.a4_check`, local: it knows it is honest and which
        sources are proven, not who else lies), with source ids and the condition in words."""
        from fairprobe.collab.verify import a4_check

        pr = np.array([u in self.proven for u in self._ids])
        c = a4_check(self._adj, me=self._ids.index(self.cfg.id), proven=pr)
        gaps = [self._ids[j] for j in c["without_challenger"]]
        weak = [self._ids[j] for j in c["weakest"]]
        L = c["holds_unless_liars"]
        if gaps:
            cond = ("no honest challenger for " + ", ".join(gaps) + " (every neighbour a proven "
                    "liar): the verdict counts them among the sources that may lie")
        elif L is None:
            cond = "every source is challenged by this node or proven"
        else:
            cond = (f"holds if fewer than {L} sources lie besides the proven ones, or if each of "
                    + ", ".join(weak) + " has an honest neighbour")
        return {"check": "local", "holds": bool(c["holds"]), "without_challenger": gaps,
                "holds_unless_liars": L, "weakest": weak, "condition": cond}

    @property
    def census(self) -> bool:
        """Whether this node's verdict is about the records of a finite population (a replayed
        bundled one: the partitions are the population) rather than about the model, whose
        inputs the query sets only sample (the interval then carries sampling uncertainty)."""
        return self.cfg.backend.get("kind") == "population"

    def certified_k(self) -> int | None:
        """``certified_k`` of this node's verdict (:mod:`fairprobe.collab.certificate`): no
        fabrication by that many sources (added, or replacing any), each with at most ``n``
        queries per round, moves the estimate across the fair band. None for the median-type
        baselines, which have no certificate."""
        from fairprobe.collab.certificate import certify_many, robust_certified_k
        from fairprobe.collab.protocol import dp_of

        core = self.core
        if isinstance(core, AuditorCore) and self.method == "bounded":
            k = self.bounded()["certified_k"]
            return None if k is None else int(k)
        if not isinstance(core, AuditorCore) or self.method not in ("auditopus", "robust", "none"):
            return None
        budget = core.n * core.round
        held = self._held_mask()
        if self.method == "none":
            vec = np.where(held[:, None], core.table_counts(), 0).astype(np.float64)
        else:
            vec = np.where(held[:, None], core.W, 0.0)
        # the simulator's function on this node's vectors: the same certificate, digit for digit
        k = int(certify_many(vec[None], budget, core.tau, held[None])[0])
        if k < 0:
            return None
        if self.method != "robust":
            return k
        r = robust_certified_k(
            np.array([self.estimate()]), np.array([dp_of(vec.sum(axis=0))]), np.array([k]),
            core.tau,
        )
        return int(r[0])

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
        out: dict[str, Any] = {
            "core": self.core.to_dict(), "sampler": sampler, "trajectory": self.trajectory,
        }
        if self.log is not None:
            out["verify"] = {
                "log": self.log.to_state(), "excluded": self.excluded, "pool_pos": self.pool_pos,
                "proven": sorted(self.proven),
            }
        return out

    def _set_closing(self) -> None:
        """With closing rounds, no entry may count more than ``n`` times the querying rounds."""
        if self.cfg.audit.closing:
            self.core.max_round = self.cfg.audit.rounds  # type: ignore[union-attr]

    def load_state(self, state: Mapping[str, Any]) -> None:
        self.core = core_from_dict(state["core"], signer=self._signer, verifier=self._verifier)
        self._set_closing()
        if isinstance(self.core, AttackerCore):
            self.core.strategy = self._strategy  # calibrated (the state stores only its name)
        self.trajectory = list(state.get("trajectory", []))
        v = state.get("verify")
        if v is not None and self.log is not None:
            self.log.load_state(v["log"])
            self.excluded = {str(k): int(x) for k, x in v["excluded"].items()}
            # states written by earlier versions knew only proofs
            self.proven = set(v.get("proven", list(self.excluded)))
            self.pool_pos = [int(x) for x in v["pool_pos"]]
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
