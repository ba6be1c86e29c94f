"""The set-up of a networked run, taken from the simulator so that both run the same audit.

A seed fixes the partition of the population, the graph, the attackers' positions and every
honest auditor's query order (:mod:`fairprobe.collab.simulate`). The launcher and each demo node
call the simulator's own set-up functions here -- nothing is re-implemented -- so that the final
estimate of every honest node can be compared, to the last digit, with the simulator's for the
same seed.

The only thing added is the mapping from an auditor's *local* inputs to concrete rows of the
population (the simulator only needs their cell types): local input ``k`` of auditor ``i`` is the
``k``-th input of :func:`fairprobe.collab.partition.item_types` order (positives of group A, then
negatives of A, positives of B, negatives of B), and each cell's rows are dealt to the auditors
in auditor order from the population's answer array (:meth:`fairprobe.datasets.Population.answers`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from fairprobe.collab import simulate as sim
from fairprobe.collab.partition import local_counts
from fairprobe.collab.protocol import QuerySampler
from fairprobe.datasets import get_population

__all__ = ["Plan", "auditor_ids", "honest_share", "plan_network", "sim_config"]


@dataclass(frozen=True)
class Plan:
    """Who is who in a networked run (indices are the simulator's auditor indices)."""

    ids: list[str]
    neighbours: list[list[int]]
    is_attacker: list[bool]
    honest_index: list[int]  # rank among honest auditors, -1 for an attacker
    rounds: int
    true_dp: float
    honest_dp: float


def auditor_ids(v: int) -> list[str]:
    """Node ids ``a00, a01, ...`` (zero-padded so that string order is index order)."""
    width = max(2, len(str(v - 1)))
    return [f"a{j:0{width}d}" for j in range(v)]


#: Where the defaults below come from: the simulator's (the class attributes of its config), since
#: a networked run must run the same audit as the simulation of its seed.
_DEFAULT = sim.SimConfig


def sim_config(
    *, case: str, honest: int, attackers: int, seed: int, n: int, alpha: float,
    max_rounds: int, min_per_group: int = _DEFAULT.min_per_group, tau: float = _DEFAULT.tau,
    z_max: float = _DEFAULT.z_max, replacement: bool = _DEFAULT.replacement,
    attack: str = _DEFAULT.attack,
) -> sim.SimConfig:
    return sim.SimConfig(
        case=case, attackers=attackers, seed=seed, honest=honest, alpha=alpha, n=n,
        max_rounds=max_rounds, tau=tau, z_max=z_max, replacement=replacement,
        min_per_group=min_per_group, attack=attack,
    )


def plan_network(
    *, case: str, honest: int, attackers: int, seed: int, n: int, alpha: float,
    max_rounds: int, rounds: int | None = None, min_per_group: int = _DEFAULT.min_per_group,
) -> Plan:
    """Ids, graph, roles and number of rounds of the simulator's run for this seed."""
    cfg = sim_config(case=case, honest=honest, attackers=attackers, seed=seed, n=n,
                     alpha=alpha, max_rounds=max_rounds, min_per_group=min_per_group)
    setup = sim.prepare_honest(cfg)
    adj, att = sim.graph_of(cfg)
    v = honest + attackers
    is_att = np.zeros(v, dtype=bool)
    is_att[att] = True
    hidx = np.cumsum(~is_att) - 1
    tot = local_counts(setup.cells).sum(axis=0)
    return Plan(
        ids=auditor_ids(v),
        neighbours=[np.flatnonzero(adj[i]).tolist() for i in range(v)],
        is_attacker=is_att.tolist(),
        honest_index=[-1 if a else int(h) for h, a in zip(hidx, is_att, strict=True)],
        rounds=int(setup.rounds if rounds is None else rounds),
        true_dp=float(get_population(case).true_dp),
        honest_dp=float(tot[0] / tot[1] - tot[2] / tot[3]),
    )


def honest_share(
    *, case: str, honest: int, alpha: float, seed: int, min_per_group: int, index: int,
    replacement: bool = _DEFAULT.replacement, n: int = _DEFAULT.n,
    max_rounds: int = _DEFAULT.max_rounds,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.bool_], QuerySampler]:
    """Population rows, their group-A mask, and the query sampler of honest auditor ``index``.

    The sampler is the simulator's (same seeded stream), over local indices into ``rows``.
    """
    cfg = sim_config(case=case, honest=honest, attackers=0, seed=seed, n=n, alpha=alpha,
                     max_rounds=max_rounds, min_per_group=min_per_group,
                     replacement=replacement)
    pop = get_population(case)
    cells = sim.prepare_honest(cfg).cells
    in_a, dec = pop.answers()
    cell_rows = [
        np.flatnonzero(in_a & (dec == 1)),
        np.flatnonzero(in_a & (dec == 0)),
        np.flatnonzero(~in_a & (dec == 1)),
        np.flatnonzero(~in_a & (dec == 0)),
    ]
    start = np.vstack([np.zeros((1, 4), np.int64), np.cumsum(cells, axis=0)])
    rows = np.concatenate(
        [cell_rows[c][start[index, c] : start[index + 1, c]] for c in range(4)]
    ).astype(np.int64)
    sampler = QuerySampler(rows.size, sim.honest_query_rng(cfg, index), replacement=replacement)
    return rows, in_a[rows], sampler


# -- the platform server's Adult records ---------------------------------------------------------
#: Group A of the platform audits (DP = P(>50K | Female) - P(>50K | Male)).
ADULT_GROUP_A = "Female"


def adult_share(
    *, split: str, honest: int, alpha: float, seed: int, min_per_group: int, index: int,
    replacement: bool = _DEFAULT.replacement,
) -> tuple[list[dict[str, object]], npt.NDArray[np.bool_], QuerySampler]:
    """Records, group-A mask and query sampler of honest auditor ``index`` over the Adult records
    the platform server answers (``fairprobe platform serve``, audit interface).

    The same construction as the simulator's (Appendix C-C), with the true ``income`` label in
    place of the model's decision, which auditors do not know before asking: each
    ``(sex, income)`` cell of the split is dealt to the ``honest`` auditors with
    :func:`fairprobe.collab.partition.dirichlet_partition` proportions (seeded stream 0 of
    ``SeedSequence(seed)``), its rows in a seeded random order (stream 1); auditor ``i``'s query
    order comes from child ``i`` of stream 2.
    """
    from fairprobe.collab.partition import dirichlet_partition
    from fairprobe.datasets.queryset import adult_queryset
    from fairprobe.stats.counts import CountsVector

    qs = adult_queryset(split)
    df = qs.frame
    in_a_all = (df[qs.group_col] == ADULT_GROUP_A).to_numpy()
    lab = df[qs.label_col].to_numpy().astype(bool) if qs.label_col else np.zeros(len(df), bool)
    part_ss, deal_ss, query_ss = np.random.SeedSequence(seed).spawn(3)
    cells = dirichlet_partition(
        CountsVector(int((in_a_all & lab).sum()), int(in_a_all.sum()),
                     int((~in_a_all & lab).sum()), int((~in_a_all).sum())),
        honest, alpha, np.random.default_rng(part_ss), min_per_group=min_per_group,
    )
    deal = np.random.default_rng(deal_ss)
    cell_rows = [deal.permutation(np.flatnonzero(m)) for m in
                 (in_a_all & lab, in_a_all & ~lab, ~in_a_all & lab, ~in_a_all & ~lab)]
    start = np.vstack([np.zeros((1, 4), np.int64), np.cumsum(cells, axis=0)])
    rows = np.concatenate(
        [cell_rows[c][start[index, c] : start[index + 1, c]] for c in range(4)]
    ).astype(np.int64)
    feats = df.loc[rows, list(qs.feature_cols)].to_dict(orient="records")
    records = [{str(k): v for k, v in r.items()} for r in feats]
    sampler = QuerySampler(rows.size, np.random.default_rng(query_ss.spawn(honest)[index]),
                           replacement=replacement)
    return records, in_a_all[rows], sampler


def adult_sizes(*, split: str, honest: int, alpha: float, seed: int,
                min_per_group: int) -> npt.NDArray[np.int64]:
    """Query-set size of every honest auditor of :func:`adult_share`."""
    return np.array([
        len(adult_share(split=split, honest=honest, alpha=alpha, seed=seed,
                        min_per_group=min_per_group, index=i)[0])
        for i in range(honest)
    ], dtype=np.int64)


def plan_platform_network(
    *, split: str, honest: int, attackers: int, seed: int, n: int, alpha: float,
    max_rounds: int, rounds: int | None = None, min_per_group: int = _DEFAULT.min_per_group,
) -> Plan:
    """Like :func:`plan_network` for an audit of the platform server over Adult records: the
    graph and the attackers' positions are the simulator's for this seed; the query sets are
    :func:`adult_share`'s. ``true_dp`` and ``honest_dp`` are NaN (only the platform knows)."""
    import math

    cfg = sim_config(case="bios-moderate", honest=honest, attackers=attackers, seed=seed, n=n,
                     alpha=alpha, max_rounds=max_rounds, min_per_group=min_per_group)
    adj, att = sim.graph_of(cfg)  # depends on seed, N, K and the degree only, not on the case
    v = honest + attackers
    is_att = np.zeros(v, dtype=bool)
    is_att[att] = True
    hidx = np.cumsum(~is_att) - 1
    sizes = adult_sizes(split=split, honest=honest, alpha=alpha, seed=seed,
                        min_per_group=min_per_group)
    r = min(math.ceil(int(sizes.max()) / n), max_rounds) if rounds is None else rounds
    return Plan(
        ids=auditor_ids(v),
        neighbours=[np.flatnonzero(adj[i]).tolist() for i in range(v)],
        is_attacker=is_att.tolist(),
        honest_index=[-1 if a else int(h) for h, a in zip(hidx, is_att, strict=True)],
        rounds=int(r),
        true_dp=math.nan,
        honest_dp=math.nan,
    )
