"""The vectorised simulator of a collaborative audit (Section VI-A, Appendix C).

One run: the population of a Table I case is split across ``N`` honest auditors
(:mod:`.partition`), ``K`` attackers join at random positions of a connected Erdős-Rényi graph
(:mod:`.graph`), and everyone runs ``R = min(ceil(max_i |D_i| / n), T)`` synchronous rounds. The
seed fixes the partition, the graph and the query order (three independent child streams of
``SeedSequence(seed)``; the partition and query order do not depend on ``K``).

How the vectorised path works. With synchronous rounds on a static graph, honest auditor ``i``
holds ``c_j(t - lag_ij)`` for every source ``j`` at the end of round ``t``
(:func:`fairprobe.collab.graph.gossip_lags`); it therefore sees each of ``j``'s per-round
increments exactly once, in order, and the weight it assigns to increment ``s`` of ``j`` depends only
on ``c_j(s-1)`` and ``c_j(s)``, not on ``i``. So the simulator

1. builds the cumulative vectors ``H[t, j]`` of every auditor: honest ones from their query
   order, attackers round by round from their own views ``C_k(t) = sum_j H[t-1-lag_kj, j]``
   (all attackers of a round in one vectorised call of the strategy);
2. scores all ``R x V`` increments in one call of Algorithm 3 and accumulates
   ``CW[s, j] = sum_{u <= s} w_j(u) delta_j(u)`` with a cumulative sum;
3. gives auditor ``i`` the estimate ``DP(sum_j CW[R - lag_ij, j])`` and the baseline tables
   ``H[R - lag_ij, j]``.

:func:`simulate_reference` runs the same audit with one :class:`AuditorCore` /
:class:`AttackerCore` per auditor exchanging tables over the graph; a test checks that both give
identical estimates. The attack does not depend on the defense, so one run yields every method's
estimate. The global estimate is the median of the ``N + K`` final estimates, attackers sending 0.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np
import numpy.typing as npt

import fairprobe.collab.liars  # noqa: F401 - registers the self-consistent liars
from fairprobe._validation import check_choice, check_int, check_real
from fairprobe.collab.attacker import ATTACKS, AttackContext, AttackStrategy, get_attack
from fairprobe.collab.baselines import get_aggregator
from fairprobe.collab.bounded import (
    CONSTRUCTION,
    EXACT_MAX_K,
    EXACT_MAX_SETS,
    _n_sets,
    answer_flips,
    bounded_intervals,
    escape_bound,
    global_interval,
    make_finding,
    stratified_estimate,
    stratified_hull,
    stratified_sensitivity,
)
from fairprobe.collab.certificate import certify_many, global_certified_k, robust_certified_k
from fairprobe.collab.graph import connected_erdos_renyi, gossip_lags
from fairprobe.collab.partition import (
    dirichlet_partition,
    increments_per_round,
    item_types,
)
from fairprobe.collab.protocol import (
    PROTOCOL,
    AttackerCore,
    AuditorCore,
    QuerySampler,
    dp_of,
    query_order,
)
from fairprobe.collab.robust import RobustParams, robust_estimate
from fairprobe.collab.score import suspicion_scores
from fairprobe.datasets.populations import POPULATIONS, get_population
from fairprobe.stats.counts import CountsVector
from fairprobe.stats.finding import decide_array

__all__ = [
    "BASE_METHODS",
    "DEFAULT_METHOD",
    "AuditPlan",
    "RunResult",
    "SimConfig",
    "attack_strategy",
    "audit_plan",
    "graph_of",
    "honest_query_rng",
    "prepare_honest",
    "simulate",
    "simulate_reference",
]

#: Methods every run reports (``trimmed-mean@B`` variants are added by ``SimConfig.extra_betas``).
BASE_METHODS = (
    "none",
    "median",
    "trimmed-mean",
    "median-local-dp",
    "trimmed-mean-local-dp",
    "auditopus",
    "robust",
    "bounded",
)

#: The method the CLI, the nodes and the report use when none is named.
DEFAULT_METHOD = "bounded"

#: Methods whose verdict comes from a point estimate against the band (no interval).
POINT_METHODS = BASE_METHODS[:-1]

#: The robust-aggregation baselines over raw tables (:mod:`.baselines`).
AGGREGATORS = BASE_METHODS[:5]

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]

#: Intervals of an audit that stops before the query sets are exhausted: ``sampling`` (the
#: stratified sample hull at level 0.95, :func:`fairprobe.collab.bounded.stratified_hull`) or
#: ``worst-case`` (the records never queried as unseen mass of any group and answer: level 1,
#: rarely decided).
PARTIAL_INTERVALS = ("sampling", "worst-case")

#: Coverage of the ``sampling`` interval of a partial audit.
PARTIAL_LEVEL = 0.95

#: Largest audit (N + K) whose runs carry certificates.
CERTIFY_MAX_AUDITORS = 100


@dataclass(frozen=True)
class SimConfig:
    """Parameters of one simulated audit (defaults: Section VI-A; those of the protocol's own
    parameters, ``n``, ``tau``, ``z_max`` and ``replacement``, are ``PROTOCOL``'s)."""

    case: str
    attackers: int = 0
    seed: int = 0
    honest: int = 20
    alpha: float = 1.0
    n: int = PROTOCOL.n
    max_rounds: int = 150
    tau: float = PROTOCOL.tau
    z_max: float = PROTOCOL.z_max
    beta: float = 0.2
    replacement: bool = PROTOCOL.replacement
    degree: float = 4.0
    min_per_group: int = 30
    attack: str = "adaptive"
    extra_betas: tuple[float, ...] = field(default_factory=tuple)
    max_redraws: int = 1000
    robust_c: float = 4.0
    robust_c_decisive: float | None = 2.0
    max_liars: int = 0
    verify_rate: float | None = None
    legacy_certificates: bool = False
    partial: str = "sampling"

    def __post_init__(self) -> None:
        o = "SimConfig"
        check_choice(self.case, "case", o, list(POPULATIONS))
        check_int(self.attackers, "attackers", o, lo=0)
        check_int(self.seed, "seed", o, lo=0)
        check_int(self.honest, "honest", o, lo=1)
        check_real(self.alpha, "alpha", o, lo=0.0, closed="neither")
        check_int(self.n, "n", o, lo=1)
        check_int(self.max_rounds, "max_rounds", o, lo=1)
        check_real(self.tau, "tau", o, lo=0.0, hi=1.0)
        check_real(self.z_max, "z_max", o, lo=0.0, closed="neither")
        check_real(self.beta, "beta", o, lo=0.0, hi=0.5, closed="left")
        check_real(self.degree, "degree", o, lo=0.0, closed="neither")
        check_int(self.min_per_group, "min_per_group", o, lo=0)
        check_choice(self.attack, "attack", o, list(ATTACKS))
        for b in self.extra_betas:
            check_real(b, "extra_betas", o, lo=0.0, hi=0.5, closed="left")
        check_int(self.max_redraws, "max_redraws", o, lo=1)
        check_real(self.robust_c, "robust_c", o, lo=0.0)
        if self.robust_c_decisive is not None:
            check_real(self.robust_c_decisive, "robust_c_decisive", o, lo=0.0, closed="neither")
        check_int(self.max_liars, "max_liars", o, lo=0)
        if self.verify_rate is not None:
            check_real(self.verify_rate, "verify_rate", o, lo=0.0, hi=1.0)
        check_choice(self.partial, "partial", o, list(PARTIAL_INTERVALS))

    @property
    def robust_params(self) -> RobustParams:
        """The :class:`~fairprobe.collab.robust.RobustParams` of the ``robust`` method."""
        return RobustParams(c=self.robust_c, c_decisive=self.robust_c_decisive, tau=self.tau)

    @property
    def methods(self) -> tuple[str, ...]:
        return BASE_METHODS + tuple(f"trimmed-mean@{b:g}" for b in self.extra_betas)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["extra_betas"] = list(self.extra_betas)
        return d


@dataclass(frozen=True)
class HonestSetup:
    """What a seed fixes independently of ``K``: the partition and the honest increments."""

    cells: IntArray  # (N, 4) pos_a, neg_a, pos_b, neg_b
    rounds: int
    increments: IntArray  # (R, N, 4) per-round honest increments (a, A, b, B)


@dataclass(frozen=True)
class RunResult:
    """Outcome of one simulated audit.

    ``estimates[m]`` is the global estimate of method ``m`` (median over the ``N + K`` auditors,
    attackers reporting 0); ``per_auditor[m]`` the honest auditors' own estimates.
    """

    config: SimConfig
    true_dp: float
    honest_dp: float
    rounds: int
    estimates: dict[str, float]
    per_auditor: dict[str, FloatArray]
    attacker_positions: tuple[int, ...]
    trajectory: dict[str, FloatArray] | None = None
    views: dict[str, Any] | None = None
    certified: dict[str, int] = field(default_factory=dict)
    node_certified: dict[str, npt.NDArray[np.int64]] = field(default_factory=dict)
    sources: dict[str, Any] = field(default_factory=dict)
    verdicts: dict[str, str] = field(default_factory=dict)
    node_verdicts: dict[str, npt.NDArray[np.str_]] = field(default_factory=dict)
    findings: dict[str, dict[str, Any]] = field(default_factory=dict)
    bounded: dict[str, Any] = field(default_factory=dict)
    default_method: str = DEFAULT_METHOD

    @property
    def escape_bound(self) -> float | None:
        """``(1 - c)^F`` of the default verdict (None without verification or when it is
        undetermined): the chance it differs from the true answers' verdict and no proof of
        fraud was found (:func:`fairprobe.collab.bounded.escape_bound`)."""
        return self.bounded.get("escape_bound") if self.bounded else None

    def nodes(self) -> list[dict[str, Any]]:
        """Each honest auditor's estimate per method and its ``certified_k`` (figure data)."""
        hon = [j for j in range(self.config.honest + self.config.attackers)
               if j not in set(self.attacker_positions)]
        out = []
        for i, j in enumerate(hon):
            est = {
                m: (None if math.isnan(float(v[i])) else float(v[i]))
                for m, v in self.per_auditor.items()
            }
            out.append(
                {
                    "index": j,
                    "id": f"a{j:04d}",
                    "estimates": est,
                    "certified_k": {m: int(k[i]) for m, k in self.node_certified.items()},
                    "verdicts": {m: str(v[i]) for m, v in self.node_verdicts.items()},
                    "interval": (
                        {"low": _num(self.bounded["low"][i]), "high": _num(self.bounded["high"][i]),
                         "flip_mass": _num(self.bounded["node_flip_mass"][i])}
                        if self.bounded else None
                    ),
                }
            )
        return out

    def rows(self) -> list[dict[str, Any]]:
        """One JSON-ready row per method (the keys of ``fairprobe collab simulate --json``)."""
        c = self.config
        out = []
        truth = "fair" if abs(self.honest_dp) <= c.tau else "unfair"
        for m, est in self.estimates.items():
            e = None if math.isnan(est) else float(est)
            verdict = self.verdicts.get(m)
            out.append(
                {
                    "case": c.case,
                    "attackers": c.attackers,
                    "seed": c.seed,
                    "method": m,
                    "estimate": e,
                    "true_dp": self.true_dp,
                    "error": None if e is None else e - self.true_dp,
                    "fooled": verdict == "fair" if verdict else bool(
                        e is not None and abs(e) <= c.tau),
                    "verdict": verdict,
                    "wrong": verdict in ("fair", "unfair") and verdict != truth,
                    "undetermined": verdict == "undetermined",
                    "honest": c.honest,
                    "rounds": self.rounds,
                    "certified_k": self.certified.get(m),
                    "max_liars": c.max_liars,
                    "finding": self.findings.get(m),
                }
            )
            if m == "bounded" and self.bounded:
                out[-1].update({k: self.bounded[k] for k in (
                    "interval", "flip_mass", "verification_rate", "escape_bound")})
                out[-1]["true_answer_verdict"] = self.bounded.get("true_answer_verdict")
                ver = self.bounded.get("verification")
                if ver is not None:
                    out[-1].update({
                        "caught": any(ver["caught"]),
                        "extra_query_fraction": ver["extra_query_fraction"],
                        "lies": sum(ver["lies"]),
                    })
        return out

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "config": self.config.to_dict(),
            "true_dp": self.true_dp,
            "honest_dp": self.honest_dp,
            "rounds": self.rounds,
            "attacker_positions": list(self.attacker_positions),
            "band": {"low": -self.config.tau, "high": self.config.tau},
            "runs": self.rows(),
            "certified_k": dict(self.certified),
            "verdicts": dict(self.verdicts),
            "default_method": self.default_method,
            "max_liars": self.config.max_liars,
            "finding": self.findings.get(self.default_method),
            "nodes": self.nodes(),
            "sources": self.sources,
        }
        if self.trajectory is not None:
            d["trajectory"] = {k: v.tolist() for k, v in self.trajectory.items()}
        return d


def _num(x: Any) -> float | None:
    return None if x is None or not math.isfinite(float(x)) else float(x)


def _streams(seed: int) -> tuple[np.random.Generator, np.random.Generator, np.random.SeedSequence]:
    part, graph, query = np.random.SeedSequence(seed).spawn(3)
    return np.random.default_rng(part), np.random.default_rng(graph), query


def prepare_honest(cfg: SimConfig) -> HonestSetup:
    """Partition and honest per-round increments of ``cfg`` (independent of ``cfg.attackers``)."""
    pop = get_population(cfg.case)
    part_rng, _, query_ss = _streams(cfg.seed)
    cells = dirichlet_partition(
        pop.counts,
        cfg.honest,
        cfg.alpha,
        part_rng,
        min_per_group=cfg.min_per_group,
        max_redraws=cfg.max_redraws,
    )
    sizes = cells.sum(axis=1)
    rounds = int(min(math.ceil(int(sizes.max()) / cfg.n), cfg.max_rounds))
    inc = np.zeros((rounds, cfg.honest, 4), dtype=np.int64)
    for i, child in enumerate(query_ss.spawn(cfg.honest)):
        rng = np.random.default_rng(child)
        types = item_types(cells[i])
        if cfg.replacement:
            draws = np.concatenate([rng.integers(0, types.size, cfg.n) for _ in range(rounds)])
            inc[:, i] = increments_per_round(types[draws], cfg.n, rounds)
        else:
            inc[:, i] = increments_per_round(types[query_order(rng, types.size)], cfg.n, rounds)
    return HonestSetup(cells, rounds, inc)


def _graph(cfg: SimConfig) -> tuple[npt.NDArray[np.bool_], IntArray]:
    _, g_rng, _ = _streams(cfg.seed)
    v = cfg.honest + cfg.attackers
    adj = connected_erdos_renyi(v, cfg.degree, g_rng, max_redraws=cfg.max_redraws)
    att = np.sort(g_rng.choice(v, size=cfg.attackers, replace=False)).astype(np.int64)
    return adj, att


@dataclass(frozen=True)
class AuditPlan:
    """Everything a seed fixes, for running the same audit elsewhere (e.g. on real nodes).

    ``roster[j]`` is auditor ``j``'s id; ``adjacency`` the graph; ``attackers`` the attacker
    indices; honest auditor ``j = honest_index[i]`` holds ``cells[i]`` inputs per
    (group, label) cell (:data:`fairprobe.collab.partition.CELLS`), in local index order given by
    :func:`fairprobe.collab.partition.item_types`, and draws them with
    ``QuerySampler(size, np.random.default_rng(query_seeds[i]), replacement=...)``. Neighbours'
    tables are merged in increasing index order. With these, :func:`simulate_reference` (and a
    node network following the same plan) reproduces :func:`simulate` exactly.
    """

    config: SimConfig
    roster: tuple[str, ...]
    adjacency: npt.NDArray[np.bool_]
    attackers: tuple[int, ...]
    honest_index: tuple[int, ...]
    cells: IntArray
    query_seeds: tuple[np.random.SeedSequence, ...]
    rounds: int

    def neighbours(self, j: int) -> list[int]:
        return [int(u) for u in np.flatnonzero(self.adjacency[j])]


def audit_plan(cfg: SimConfig, *, setup: HonestSetup | None = None) -> AuditPlan:
    """The partition, graph, roles, ids and query streams ``cfg`` fixes."""
    setup = setup or prepare_honest(cfg)
    adj, att = _graph(cfg)
    v = cfg.honest + cfg.attackers
    is_att = np.zeros(v, dtype=bool)
    is_att[att] = True
    _, _, query_ss = _streams(cfg.seed)
    return AuditPlan(
        config=cfg,
        roster=tuple(f"a{j:04d}" for j in range(v)),
        adjacency=adj,
        attackers=tuple(int(x) for x in att),
        honest_index=tuple(int(x) for x in np.flatnonzero(~is_att)),
        cells=setup.cells,
        query_seeds=tuple(query_ss.spawn(cfg.honest)),
        rounds=setup.rounds,
    )


def graph_of(cfg: SimConfig) -> tuple[npt.NDArray[np.bool_], IntArray]:
    """The adjacency and the sorted attacker indices ``cfg``'s seed fixes (public hook)."""
    return _graph(cfg)


def honest_query_rng(cfg: SimConfig, i: int) -> np.random.Generator:
    """The query-order generator of the ``i``-th honest auditor (in index order) for ``cfg``.

    ``QuerySampler(size, honest_query_rng(cfg, i), replacement=cfg.replacement)`` draws exactly
    the queries the simulator issues for that auditor.
    """
    check_int(i, "i", "honest_query_rng", lo=0, hi=cfg.honest - 1)
    _, _, query_ss = _streams(cfg.seed)
    return np.random.default_rng(query_ss.spawn(cfg.honest)[i])


def attack_strategy(
    cfg: SimConfig, rounds: int, ids: tuple[int, ...] | None = None
) -> AttackStrategy:
    """``cfg.attack`` calibrated with what the platform knows (:class:`AttackContext`).

    ``ids`` are the attacker indices of the view rows (default: all attackers of ``cfg``'s
    graph, in increasing order, as the simulator calls the strategy); a networked attacker node
    passes its own index.
    """
    if ids is None:
        ids = tuple(int(x) for x in _graph(cfg)[1])
    honest_counts: tuple[tuple[int, int, int, int], ...] = ()
    if getattr(get_attack(cfg.attack), "needs_honest_counts", False):
        cells = prepare_honest(cfg).cells
        honest_counts = tuple((int(pa), int(pa + na), int(pb), int(pb + nb))
                              for pa, na, pb, nb in cells)
    ctx = AttackContext(
        population=get_population(cfg.case).counts,
        n=cfg.n,
        rounds=rounds,
        attackers=cfg.attackers,
        honest=cfg.honest,
        tau=cfg.tau,
        seed=cfg.seed,
        ids=tuple(ids),
        max_liars=cfg.max_liars,
        honest_counts=honest_counts,
    )
    return get_attack(cfg.attack).calibrate(ctx)


def _global(per_honest: FloatArray, k: int) -> float:
    vals = np.concatenate([per_honest, np.zeros(k)])
    return float(np.median(vals))


@dataclass(frozen=True)
class Histories:
    """Every auditor's cumulative counts and suspicion-weighted counts over the rounds (the
    vectorised core of :func:`simulate`, shared with the verification layer).

    Attributes
    ----------
    adj, att, lag, hon
        The gossip graph, the attackers' indices, the gossip lags, the honest auditors' indices.
    H : ndarray (R + 1, V, 4)
        Cumulative count vectors of every auditor after each round (honest: their increments;
        attackers: what their strategy fabricates from the views they hold).
    delta : ndarray (R, V, 4)
        The increments ``H[t] - H[t - 1]``.
    score, weight : ndarray (R * V,), ndarray (R, V)
        Each increment's suspicion score (flat, round-major) and weight.
    CW : ndarray (R + 1, V, 4)
        Cumulative weighted increments.
    """

    adj: npt.NDArray[np.bool_]
    att: IntArray
    lag: IntArray
    hon: IntArray
    H: IntArray
    delta: IntArray
    score: FloatArray
    weight: FloatArray
    CW: FloatArray
    lies: IntArray | None = None  # (R, K) answers each attacker falsified in each round
    truth: IntArray | None = None  # (R + 1, K, 4) attackers' counts with their true answers

    @property
    def is_att(self) -> npt.NDArray[np.bool_]:
        out = np.zeros(self.H.shape[1], dtype=bool)
        out[self.att] = True
        return out


def histories(cfg: SimConfig, setup: HonestSetup) -> Histories:
    """The cumulative and weighted histories of one audit (see :class:`Histories`)."""
    R, N, K = setup.rounds, cfg.honest, cfg.attackers
    V = N + K
    adj, att = _graph(cfg)
    lag = gossip_lags(adj)
    is_att = np.zeros(V, dtype=bool)
    is_att[att] = True
    hon = np.flatnonzero(~is_att)
    H = np.zeros((R + 1, V, 4), dtype=np.int64)
    H[1:, hon] = np.cumsum(setup.increments, axis=0)
    lies = truth = None
    if K:
        strategy = attack_strategy(cfg, R, tuple(int(x) for x in att))
        lag_k = lag[att]  # (K, V)
        cols = np.arange(V)[None, :]
        if strategy.level == "answers":
            lies, truth = _answer_histories(strategy, cfg.n, R, H, att)
        else:
            for t in range(1, R + 1):
                views = H[np.maximum(t - 1 - lag_k, 0), cols].sum(axis=1)
                H[t, att] = H[t - 1, att] + strategy.fabricate(views, cfg.n, t)
    prev = H[:-1]
    delta = H[1:] - prev
    sc = suspicion_scores(prev.reshape(-1, 4), delta.reshape(-1, 4), cfg.z_max)
    w = sc.weight.reshape(R, V)
    CW = np.zeros((R + 1, V, 4), dtype=np.float64)
    np.cumsum(w[:, :, None] * delta.astype(np.float64), axis=0, out=CW[1:])
    return Histories(adj, att, lag, hon, H, delta, sc.score, w, CW, lies, truth)


def _answer_histories(
    strategy: AttackStrategy, n: int, R: int, H: IntArray, att: IntArray
) -> tuple[IntArray, IntArray]:
    """Fill the attackers' rows of ``H`` from an answer-level strategy (records drawn, answers
    reported) and return the falsified answers per round and the true-answer counts."""
    K = att.size
    lies = np.zeros((R, K), dtype=np.int64)
    truth = np.zeros((R + 1, K, 4), dtype=np.int64)
    ones = [strategy.for_ids((int(j),)) for j in att.tolist()]
    for t in range(1, R + 1):
        for kk, one in enumerate(ones):
            g, y = one.records(t, one.draws(n, t))  # type: ignore[attr-defined]
            rep = one.answers(g, y, t)
            inc = (int((rep * g).sum()), int(g.sum()), int((rep * (1 - g)).sum()),
                   int((1 - g).sum()))
            tru = (int((y * g).sum()), inc[1], int((y * (1 - g)).sum()), inc[3])
            H[t, att[kk]] = H[t - 1, att[kk]] + np.asarray(inc, dtype=np.int64)
            truth[t, kk] = truth[t - 1, kk] + np.asarray(tru, dtype=np.int64)
            lies[t - 1, kk] = int((rep != y).sum())
    return lies, truth


def simulate(
    cfg: SimConfig,
    *,
    setup: HonestSetup | None = None,
    trajectory: bool = False,
    keep_views: bool = False,
    bounded_only: bool = False,
) -> RunResult:
    """Simulate one audit with the vectorised path (see the module docstring).

    ``bounded_only``: compute the default ``bounded`` verdict only (no point method, no
    source summaries): the same ``bounded`` result in a fraction of the time, for experiments
    that measure nothing else."""
    setup = setup or prepare_honest(cfg)
    R, N, K = setup.rounds, cfg.honest, cfg.attackers
    V = N + K
    hist = histories(cfg, setup)
    att, lag, hon, H, w, CW = hist.att, hist.lag, hist.hon, hist.H, hist.weight, hist.CW
    s_idx = np.maximum(R - lag[hon], 0)  # (N, V): round of j's entry that i holds at the end
    cols = np.arange(V)[None, :]
    weighted = CW[s_idx, cols]  # (N, V, 4)
    per: dict[str, FloatArray] = {}
    tables = H[s_idx, cols]
    held = s_idx >= 1
    if not bounded_only:
        tot = weighted.sum(axis=1)
        with np.errstate(all="ignore"):
            per["auditopus"] = np.array([dp_of(r) for r in tot])
        per["robust"] = robust_estimate(weighted, tables, held, cfg.robust_params).estimate
        for m in AGGREGATORS:
            per[m] = get_aggregator(m, cfg.beta)(tables, held)
        for b in cfg.extra_betas:
            per[f"trimmed-mean@{b:g}"] = get_aggregator("trimmed-mean", b)(tables, held)
    b_tables, b_round = closing_view(H, lag, hon)
    pop = get_population(cfg.case)
    checks: dict[str, Any] | None = None
    proven = None
    if cfg.verify_rate is not None:
        from fairprobe.collab.verify import simulate_challenges

        checks = simulate_challenges(hist, cfg, cfg.verify_rate, population=pop)
        proven = checks.pop("proven")
    # the estimand is the population's DP: when the rounds stop before the query sets are
    # exhausted, the records never queried are unseen mass (worst-cased), so the verdict is
    # about the population and never about the queried records only
    horizon = census_rounds(cfg, setup)
    sizes = stratum_sizes(cfg, setup, H, hon, horizon, R)
    bres = bounded_run(cfg, horizon, b_tables, b_round, K, proven=proven, querying=R,
                       sizes=sizes)
    b_cfg = cfg
    if proven is not None:
        # A4 on the realised network (the simulator knows the liars: the global check). Where a
        # liar has no honest neighbour its answers are never challenged: the escape bound of
        # the declared K does not hold, and the verdict falls back to the hull that counts the
        # unchallenged liars among the sources that may lie undetected (K + their number),
        # with the escape bound of that hull for the others
        from fairprobe.collab.verify import a4_check

        a4 = a4_check(hist.adj, liars=hist.is_att, proven=proven.all(axis=0))
        a4["without_challenger"] = [int(j) for j in a4["without_challenger"]]
        if not a4["holds"]:
            b_cfg = replace(cfg, max_liars=cfg.max_liars + len(a4["without_challenger"]))
            declared = bres
            bres = bounded_run(b_cfg, horizon, b_tables, b_round, K, proven=proven,
                               querying=R, sizes=sizes)
            a4["declared_verdict"] = declared["verdict"]
            a4["declared_node_verdicts"] = [str(x) for x in declared["verdicts"]]
            a4["declared_escape_bound"] = declared["escape_bound"]
        a4["max_liars"] = b_cfg.max_liars
        bres["a4"] = a4
    if hist.truth is not None:
        # what the same audit decides on the attackers' true answers (only a simulation knows)
        H_true = H.copy()
        H_true[:, att] = hist.truth
        t_tables, t_round = closing_view(H_true, lag, hon)
        t_sizes = None if sizes is None else stratum_sizes(cfg, setup, H_true, hon, horizon, R)
        tres = bounded_run(b_cfg, horizon, t_tables, t_round, K, querying=R, sizes=t_sizes)
        if b_cfg is not cfg:
            bres["a4"]["declared_true_answer_verdict"] = bounded_run(
                cfg, horizon, t_tables, t_round, K, querying=R, sizes=t_sizes)["verdict"]
        bres["true_answer_verdict"] = tres["verdict"]
        bres["true_answer_node_verdicts"] = tres["verdicts"]
    if proven is not None:
        bres["node_caught"] = proven.any(axis=1)
    if checks is not None:
        base_q = int(H[R, hon][:, [1, 3]].sum())
        caught = [x is not None for x in checks["first_proof_round"]]
        bres["verification"] = {
            **checks, "base_queries": base_q,
            "extra_query_fraction": (checks["challenges"] + checks["proof_checks"])
            / max(base_q, 1),
            "caught": caught,
        }
    per["bounded"] = bres.pop("estimate")
    estimates = {m: _global(per[m], K) for m in cfg.methods if m in per}
    node_k, glob_k = (
        _certificates(cfg, R, per, weighted, tables, held)
        if cfg.legacy_certificates and not bounded_only else ({}, {})
    )
    node_k["bounded"] = bres.pop("node_certified_k")
    glob_k["bounded"] = int(bres["certified_k"]) if bres["certified_k"] is not None else -1
    verdicts, node_verdicts, findings = _verdicts(cfg, estimates, per, bres)
    sources = {} if bounded_only else _sources(cfg, hist, weighted, tables, held)
    traj = None
    if trajectory:
        ts = np.arange(1, R + 1)
        sidx = np.maximum(ts[:, None, None] - lag[hon][None], 0)  # (R, N, V)
        tw = CW[sidx, cols[None]].sum(axis=2)  # (R, N, 4)
        tn = H[sidx, cols[None]].sum(axis=2)
        with np.errstate(all="ignore"):
            dpw = tw[..., 0] / tw[..., 1] - tw[..., 2] / tw[..., 3]
            dpn = tn[..., 0] / tn[..., 1] - tn[..., 2] / tn[..., 3]
        zk = np.zeros((R, K))
        traj = {
            "auditopus": np.median(np.concatenate([dpw, zk], axis=1), axis=1),
            "none": np.median(np.concatenate([dpn, zk], axis=1), axis=1),
        }
    return _run_result(
        cfg, setup, R, estimates, per, att, bres,
        trajectory=traj,
        certified=glob_k,
        node_certified=node_k,
        sources=sources,
        verdicts=verdicts,
        node_verdicts=node_verdicts,
        findings=findings,
        views=(
            {"tables": tables, "weighted": weighted, "held": held, "w": w, "score": hist.score,
             "H": H, "lag": lag, "hon": hon}
            if keep_views
            else None
        ),
    )


def _sources(
    cfg: SimConfig, hist: Histories, weighted: FloatArray, tables: IntArray,
    held: npt.NDArray[np.bool_],
) -> dict[str, Any]:
    """Per-source summaries of a run (queries, weights, local DP, scores by round)."""
    H, CW, delta, w, is_att = hist.H, hist.CW, hist.delta, hist.weight, hist.is_att
    R, V = H.shape[0] - 1, H.shape[1]
    rob0 = robust_estimate(weighted[:1], tables[:1], held[:1], cfg.robust_params)
    empty = (delta[..., 1] + delta[..., 3]) == 0  # (R, V)
    raw_mass = (H[R, :, 1] + H[R, :, 3]).astype(np.float64)
    w_mass = CW[R, :, 1] + CW[R, :, 3]
    return {
        "ids": [f"a{j:04d}" for j in range(V)],
        "role": ["attacker" if is_att[j] else "honest" for j in range(V)],
        "queries": raw_mass.astype(np.int64).tolist(),
        "weighted_queries": w_mass.tolist(),
        "weight": np.where(raw_mass > 0, w_mass / np.where(raw_mass > 0, raw_mass, 1), 0).tolist(),
        "local_dp": [None if math.isnan(x) else x for x in (dp_of(H[R, j]) for j in range(V))],
        "robust_kept_by_first_auditor": rob0.kept[0].tolist(),
        # None where the source added nothing that round (its query set had run out)
        "scores_by_round": _masked(hist.score.reshape(R, V).T, empty.T, 4),
        "weights_by_round": _masked(w.T, empty.T, 6),
    }


def _query_set_counts(setup: HonestSetup) -> IntArray:
    """``(a, A, b, B)`` of the honest auditors' whole query sets (the population)."""
    pa, na, pb, nb = (int(x) for x in setup.cells.sum(axis=0))
    return np.array([pa, pa + na, pb, pb + nb], dtype=np.int64)


def stratum_sizes(
    cfg: SimConfig, setup: HonestSetup, H: IntArray, hon: IntArray, horizon: int, R: int
) -> FloatArray | None:
    """Each source's declared query-set group sizes ``(M_jA, M_jB)`` (V, 2) for the
    ``sampling`` interval of a partial audit, or None for a census (the rounds exhausted every
    query set without replacement) or the ``worst-case`` construction. An honest auditor knows
    its records' groups without asking the model (a group is read off the record); an attacker
    declares its own counts (a census of itself: the claim that weighs most in the hull; any
    claim is covered, since the true liar set is one of the removals)."""
    if cfg.partial != "sampling" or (horizon <= R and not cfg.replacement):
        return None
    out = H[R][:, [1, 3]].astype(np.float64)
    out[hon] = np.stack([setup.cells[:, 0] + setup.cells[:, 1],
                         setup.cells[:, 2] + setup.cells[:, 3]], axis=1)
    return out


def census_rounds(cfg: SimConfig, setup: HonestSetup) -> int:
    """Rounds that exhaust every honest query set: ``ceil(max_i |D_i| / n)`` (the audit runs
    ``min`` of it and ``max_rounds``). Sources may add up to ``n`` records a round until then."""
    return int(math.ceil(int(setup.cells.sum(axis=1).max()) / cfg.n))


def closing_view(
    H: IntArray, lag: IntArray, hon: IntArray
) -> tuple[IntArray, IntArray]:
    """What honest auditors hold after the closing rounds of ``bounded`` (the largest gossip lag
    ``D`` rounds after the last querying round ``R``, in which nobody adds queries): every
    source's round-``R`` counts, held from round ``R + D - lag_ij >= R``. The nodes run the same
    closing rounds (``[audit] closing``); attackers add nothing in them (entries counting more
    than ``n R`` queries are refused)."""
    R = H.shape[0] - 1
    D = int(lag.max()) if lag.size else 0
    rounds = (R + D - lag[hon]).astype(np.int64)  # (N, V)
    tables = np.broadcast_to(H[R][None], (hon.size, *H[R].shape)).copy()
    return tables, np.where(rounds >= 1, rounds, 0)


def bounded_run(
    cfg: SimConfig,
    rounds: int,
    tables: IntArray,
    held_round: IntArray,
    attackers: int,
    *,
    proven: npt.NDArray[np.bool_] | None = None,
    verify_rate: float | None = None,
    querying: int | None = None,
    sizes: FloatArray | None = None,
) -> dict[str, Any]:
    """The ``bounded`` verdicts of one audit (:mod:`fairprobe.collab.bounded`): each honest
    auditor's interval from its final table, the regulator's interval (attackers report
    ``[0, 0]``), ``certified_k`` (per auditor and global) and the verification bound.

    ``sizes`` (V, 2): the sources' declared query-set group sizes of a partial audit
    (:func:`stratum_sizes`): the intervals are then the stratified sample hull at level
    :data:`PARTIAL_LEVEL` (every removal of at most ``K <= 3`` sources; larger ``K`` falls
    back to the worst case)."""
    K = cfg.max_liars
    kw: dict[str, Any] = {"n": cfg.n, "rounds": rounds, "querying": querying}
    if sizes is not None and (K > EXACT_MAX_K or _n_sets(tables.shape[1], K) > EXACT_MAX_SETS):
        sizes = None
    sz = None if sizes is None else np.broadcast_to(sizes, (*tables.shape[:2], 2))

    def intervals(rows: npt.NDArray[np.int64] | slice, k: int) -> tuple[
            FloatArray, FloatArray, FloatArray]:
        pr = None if proven is None else proven[rows]
        e, lo_, hi_ = bounded_intervals(tables[rows], held_round[rows], max_liars=k,
                                        proven=pr, **kw)
        if sz is not None:
            keep = held_round[rows] >= 1
            if pr is not None:
                keep &= ~pr
            v = np.where(keep[..., None], tables[rows], 0)
            szk = np.where(keep[..., None], sz[rows], 0)
            lo_s, hi_s = stratified_hull(v, szk, k, 1.0 - PARTIAL_LEVEL,
                                         replacement=cfg.replacement)
            # a source with no entry held has unknown records: the worst case stays valid
            full = keep.any(axis=-1) & ((held_round[rows] >= 1) | (
                pr if pr is not None else False)).all(axis=-1)
            lo_, hi_ = np.where(full, lo_s, lo_), np.where(full, hi_s, hi_)
            # the estimate of the same population as the interval (not the queried records')
            e_s = stratified_estimate(v, szk)
            e = np.where(full & np.isfinite(e_s), e_s, e)
        return e, lo_, hi_

    est, lo, hi = intervals(slice(None), K)
    ver = decide_array(lo, hi, kind="difference", threshold=cfg.tau)
    # proofs are transferable: the regulator drops the reports of proven liars (each one uses
    # not count against K: "at most K liars besides the proven ones")
    n_proven = int(proven.any(axis=0).sum()) if proven is not None else 0
    K_reg, reports = K, attackers - n_proven
    g_lo, g_hi = (global_interval(lo, hi, K_reg, liar_reports=reports) if K_reg >= 0
                  else (math.nan, math.nan))
    g_ver = str(decide_array(g_lo, g_hi, kind="difference", threshold=cfg.tau))
    # certified_k, per auditor and of the regulator's rule: intervals grow with k, so one pass
    # k = K + 1, K + 2, ... until every decided verdict has failed
    kmax = min(tables.shape[1], CERTIFY_MAX_AUDITORS)
    if sz is not None:  # the stratified hull enumerates removals: k <= 3
        kmax = min(kmax, EXACT_MAX_K)
    node_k = np.where(ver == "undetermined", -1, K).astype(np.int64)
    alive = ver != "undetermined"
    g_k: int | None = None if g_ver == "undetermined" else K
    g_alive = g_k is not None
    k = K
    while (alive.any() or g_alive) and k < kmax:
        k += 1
        rows = np.flatnonzero(alive) if not g_alive else np.arange(ver.size)
        _, lo_k, hi_k = intervals(rows, k)
        same = decide_array(lo_k, hi_k, kind="difference", threshold=cfg.tau) == ver[rows]
        same &= alive[rows]
        node_k[rows[same]] = k
        alive[rows[~same]] = False
        if g_alive:
            gl, gh = global_interval(lo_k, hi_k, k, liar_reports=reports)
            if str(decide_array(gl, gh, kind="difference", threshold=cfg.tau)) == g_ver:
                g_k = k
            else:
                g_alive = False
    # answers that must be false for a verdict to differ from the true answers' verdict
    m_min = None
    if sz is not None:
        keep = (held_round >= 1) & (~proven if proven is not None else True)
        m_min = stratified_sensitivity(np.where(keep[..., None], tables, 0),
                                       np.where(keep[..., None], sz, 0), K)
    flip = answer_flips(tables, held_round, lo, hi, ver, tau=cfg.tau, max_liars=K,
                        proven=proven, m_min=m_min)
    g_flip = (
        float(np.nanmin(flip[ver == g_ver])) if g_ver != "undetermined" and (ver == g_ver).any()
        else math.nan
    )
    rate = verify_rate if verify_rate is not None else cfg.verify_rate
    return {
        "estimate": est, "low": lo, "high": hi, "verdicts": ver, "node_certified_k": node_k,
        "interval": {"low": _num(g_lo), "high": _num(g_hi)},
        "verdict": g_ver, "certified_k": g_k,
        "flip_mass": _num(g_flip), "node_flip_mass": flip,
        "verification_rate": rate,
        "escape_bound": escape_bound(_num(g_flip), rate),
        "census": sizes is None and (querying is None or rounds <= querying),
        "construction": CONSTRUCTION if sz is None else CONSTRUCTION + "+stratified-sample",
        "level": PARTIAL_LEVEL,  # a census or worst-case interval covers with probability 1
    }


def _verdicts(
    cfg: SimConfig, estimates: dict[str, float], per: dict[str, FloatArray], b: dict[str, Any]
) -> tuple[dict[str, str], dict[str, npt.NDArray[np.str_]], dict[str, dict[str, Any]]]:
    """Every method's verdict (point methods: their estimate against the band; ``bounded``: its
    interval), per honest auditor too, and the findings (subject "simulation": the truth is
    known)."""
    verdicts: dict[str, str] = {}
    node: dict[str, npt.NDArray[np.str_]] = {}
    findings: dict[str, dict[str, Any]] = {}
    for m, e in estimates.items():
        if m == "bounded":
            iv = b["interval"]
            lo = math.nan if iv["low"] is None else iv["low"]
            hi = math.nan if iv["high"] is None else iv["high"]
            node[m] = b["verdicts"]
            level = float(b.get("level", PARTIAL_LEVEL))
            construction = str(b.get("construction", CONSTRUCTION))
            counts = {"certified_k": b["certified_k"], "flip_mass": b["flip_mass"],
                      "census": b.get("census"),
                      "verification_rate": b["verification_rate"],
                      "escape_bound": b["escape_bound"]}
            if "a4" in b:
                counts["a4"] = {k: b["a4"][k] for k in (
                    "check", "holds", "without_challenger", "max_liars")}
        else:
            lo = hi = e
            node[m] = decide_array(per[m], per[m], kind="difference", threshold=cfg.tau)
            counts = {}
            level, construction = 0.95, CONSTRUCTION
        k_used = int(b["a4"]["max_liars"]) if m == "bounded" and "a4" in b else cfg.max_liars
        f = make_finding(e, lo, hi, tau=cfg.tau, subject="simulation", max_liars=k_used,
                         method="bounded" if m == "bounded" else m, counts=counts,
                         level=level, construction=construction)
        verdicts[m] = f.verdict
        findings[m] = f.to_dict()
    return verdicts, node, findings


def _masked(x: FloatArray, mask: npt.NDArray[np.bool_], digits: int) -> list[list[float | None]]:
    return [
        [None if m else round(float(v), digits) for v, m in zip(row, mrow, strict=True)]
        for row, mrow in zip(x, mask, strict=True)
    ]


def _certificates(
    cfg: SimConfig,
    rounds: int,
    per: dict[str, FloatArray],
    weighted: npt.NDArray[np.float64],
    tables: IntArray,
    held: npt.NDArray[np.bool_],
) -> tuple[dict[str, npt.NDArray[np.int64]], dict[str, int]]:
    """Per-auditor and global ``certified_k`` of the pooled methods (none, auditopus, robust).

    Computed for audits of at most :data:`CERTIFY_MAX_AUDITORS` auditors (the bound costs
    ``O(N V^2)`` per ``k``); larger audits report no certificate (``certified_k`` None).
    """
    if tables.shape[1] > CERTIFY_MAX_AUDITORS:
        return {}, {}
    budget = cfg.n * rounds
    node = {
        "none": certify_many(tables, budget, cfg.tau, held),
        "auditopus": certify_many(weighted, budget, cfg.tau, held),
    }
    node["robust"] = robust_certified_k(per["robust"], per["auditopus"], node["auditopus"], cfg.tau)
    glob = {
        m: global_certified_k(per[m], np.maximum(ks, 0), cfg.attackers, cfg.tau)
        for m, ks in node.items()
    }
    return node, glob


def simulate_reference(cfg: SimConfig, *, setup: HonestSetup | None = None) -> RunResult:
    """The same audit run by one protocol core per auditor exchanging tables (slow; for tests).

    Honest auditors draw their queries with :class:`QuerySampler` from the same seeded streams as
    the vectorised path, merge their neighbours' tables in increasing id order, and score with
    :class:`AuditorCore`; attackers run :class:`AttackerCore`.
    """
    setup = setup or prepare_honest(cfg)
    plan = audit_plan(cfg, setup=setup)
    R, K = setup.rounds, cfg.attackers
    V = cfg.honest + K
    adj = plan.adjacency
    att = np.array(plan.attackers, dtype=np.int64)
    roster = list(plan.roster)
    cores: list[AuditorCore | AttackerCore] = []
    samplers: dict[int, tuple[QuerySampler, npt.NDArray[np.int8]]] = {}
    for j in range(V):
        if j in plan.attackers:
            strat = attack_strategy(cfg, R, (j,))
            cores.append(AttackerCore(roster[j], roster, n=cfg.n, tau=cfg.tau, strategy=strat))
        else:
            i = plan.honest_index.index(j)
            cores.append(AuditorCore(roster[j], roster, n=cfg.n, tau=cfg.tau, z_max=cfg.z_max))
            types = item_types(plan.cells[i])
            sampler = QuerySampler(
                types.size, np.random.default_rng(plan.query_seeds[i]), replacement=cfg.replacement
            )
            samplers[j] = (sampler, types)
    nbrs = [np.flatnonzero(adj[j]) for j in range(V)]
    for _t in range(1, R + 1):
        for j, core in enumerate(cores):
            core.start_round()
            if isinstance(core, AttackerCore):
                core.fabricate()
            else:
                sampler, types = samplers[j]
                idx = sampler.draw(cfg.n)
                t_ = types[idx]
                pa, na, pb, nb = (int((t_ == k).sum()) for k in range(4))
                core.record_answers(CountsVector(pa, pa + na, pb, pb + nb))
        tables = [core.table_entries() for core in cores]
        for j, core in enumerate(cores):
            for u in nbrs[j]:
                core.merge(tables[u])
            core.end_round()
    per: dict[str, FloatArray] = {}
    honest_cores = [c for c in cores if isinstance(c, AuditorCore)]
    per["auditopus"] = np.array([c.estimate() for c in honest_cores])
    tables_arr = np.stack([c.table_counts() for c in honest_cores])
    held = np.stack([np.array([c.held[a].round >= 1 for a in roster]) for c in honest_cores])
    per["robust"] = np.array(
        [c.robust_estimate(cfg.robust_params) for c in honest_cores]
    )
    for m in AGGREGATORS:
        per[m] = get_aggregator(m, cfg.beta)(tables_arr, held)
    for b in cfg.extra_betas:
        per[f"trimmed-mean@{b:g}"] = get_aggregator("trimmed-mean", b)(tables_arr, held)
    # bounded: the closing rounds (no queries) after the last querying round
    D = int(gossip_lags(adj).max()) if V > 1 else 0
    for c in cores:
        c.max_round = R  # type: ignore[union-attr]
    for _t in range(R + 1, R + D + 1):
        for core in cores:
            core.start_round()
            core.pass_round()
        tabs = [core.table_entries() for core in cores]
        for j, core in enumerate(cores):
            for u in nbrs[j]:
                core.merge(tabs[u])
            core.end_round()
    held_round = np.stack([np.array([c.held[a].round for a in roster]) for c in honest_cores])
    b_tables = np.stack([c.table_counts() for c in honest_cores])
    horizon = census_rounds(cfg, setup)
    H_R = np.zeros((2, V, 4), dtype=np.int64)
    H_R[1] = b_tables[0]
    hon_idx = np.array(plan.honest_index, dtype=np.int64)
    sizes = stratum_sizes(cfg, setup, H_R, hon_idx, horizon, 1 if horizon <= R else 0)
    bres = bounded_run(cfg, horizon, b_tables, held_round, K, querying=R, sizes=sizes)
    per["bounded"] = bres.pop("estimate")
    estimates = {m: _global(per[m], K) for m in cfg.methods}
    return _run_result(cfg, setup, R, estimates, per, att, bres)


def _run_result(
    cfg: SimConfig, setup: HonestSetup, rounds: int, estimates: dict[str, float],
    per: dict[str, FloatArray], attackers: IntArray, bounded: dict[str, Any],
    **paths: Any,
) -> RunResult:
    """The :class:`RunResult` of either path (``paths``: what only the vectorised one has)."""
    return RunResult(
        config=cfg,
        true_dp=get_population(cfg.case).true_dp,
        # the estimand: the DP of the honest auditors' whole query sets (the population), also
        # when the rounds stop before they are exhausted or queries repeat records
        honest_dp=dp_of(_query_set_counts(setup)),
        rounds=rounds,
        estimates=estimates,
        per_auditor=per,
        attacker_positions=tuple(int(x) for x in attackers),
        bounded=bounded,
        **paths,
    )
