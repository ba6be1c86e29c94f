"""Sequential audits of more than two groups: every pair (Bonferroni) or one chosen pair.

H0 is ``max_{i<j} |mu_i - mu_j| <= delta`` (every pair compliant), H1 that some pair's gap
exceeds ``delta``. The groups are queried in rounds (one random, not yet queried member of each
group per round, without replacement), so the k-th answers of any two groups form their k-th pair
and each pair runs the default test (:class:`~fairprobe.sequential.mixture.MixtureBettingTest`,
with the pair's group sizes) on the shared answers:

- **violation** as soon as one pair's ``V`` reaches ``m / alpha`` (``m = K (K - 1) / 2`` pairs):
  under H0 every pair is null, and by Ville's inequality and the union bound (Bonferroni)
  ``P(any pair ever) <= m * alpha / m = alpha``;
- **compliant** once every pair has been declared compliant at ``beta``
  (intersection-union: if some pair violates, declaring *all* compliant needs that pair's false
  compliance, probability ``<= beta``; no correction needed);
- **inconclusive** at the budget or once the smallest group is used up.

A chosen pair (``pair=(g1, g2)``, fixed before the data) is a plain two-group audit at ``alpha``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any, Unpack

import numpy as np
import numpy.typing as npt
import pandas as pd

from fairprobe._validation import check_choice, check_int
from fairprobe.errors import DataError, EmptyGroupError, InvalidParameterError
from fairprobe.sequential.base import (
    COMPLIANT,
    INCONCLUSIVE,
    OUTCOMES,
    VIOLATION,
    FloatArray,
    TestSettings,
    check_budget,
    choose_test,
)
from fairprobe.sequential.mixture import MixtureBettingTest
from fairprobe.sequential.pool import METRICS
from fairprobe.sequential.results import RepeatedOutcomes

__all__ = ["MultiGroupAudit", "run_groups"]


@dataclass(frozen=True)
class MultiGroupAudit(RepeatedOutcomes):
    """All pairs of ``K >= 3`` groups audited together over many query orders."""

    groups: tuple[str, ...]
    sizes: tuple[int, ...]
    means: tuple[float, ...]
    deciding_pair: list[str | None] = field(repr=False)
    example: dict[str, Any] | None = field(default=None, repr=False)

    def to_dict(self) -> dict[str, Any]:
        gaps = {
            f"{a}|{b}": self.means[i] - self.means[j]
            for (i, a), (j, b) in combinations(enumerate(self.groups), 2)
        }
        worst = max(gaps, key=lambda k: abs(gaps[k]))
        return {
            **self._summary_dict(),
            "groups": list(self.groups),
            "pool": {
                "sizes": dict(zip(self.groups, self.sizes, strict=True)),
                "means": dict(zip(self.groups, self.means, strict=True)),
                "pair_gaps": gaps,
                "worst_pair": worst,
                "gap": abs(gaps[worst]),
            },
            "wald_lower_bound": None,
            "ratio_to_wald": None,
            "deciding_pair": self.deciding_pair,
            "outcome_per_repeat": [OUTCOMES[c] for c in self.codes.tolist()],
            "boundaries": {
                "upper": math.log(1.0 / self.params["alpha_per_pair"]),
                "lower": math.log(self.params["beta"]),
            },  # fmt: skip
            "example_path": self.example,
        }


def _round_orders(
    members: list[npt.NDArray[np.int64]], budget: int, repeats: int, seed: int
) -> npt.NDArray[np.int64]:
    """Round-robin orders: each round one random unqueried member of every group, in turn."""
    rng = np.random.default_rng(seed)
    k = len(members)
    rounds = min(min(len(m) for m in members), budget // k)
    out = np.empty((repeats, rounds * k), dtype=np.int64)
    for r in range(repeats):
        for g, m in enumerate(members):
            out[r, g::k] = m[rng.permutation(len(m))[:rounds]]
    return out


def run_groups(
    frame: pd.DataFrame,
    group_col: str,
    value_col: str,
    *,
    metric: str = "sp",
    label_col: str | None = None,
    pair: tuple[str, str] | None = None,
    budget: int = 4000,
    repeats: int = 200,
    seed: int = 0,
    progress: Callable[[int], None] | None = None,
    partial: list[MultiGroupAudit] | None = None,
    **settings: Unpack[TestSettings],
) -> MultiGroupAudit:
    """Audit every pair of the groups in ``group_col`` (or the chosen ``pair``) with the default
    test over ``repeats`` round-robin query orders (see the module docstring). ``tolerance``,
    ``access``, ``alpha`` and ``beta`` are the keywords of
    :class:`~fairprobe.sequential.base.TestSettings`; ``alpha`` is the family-wise level."""
    owner = "run_groups"
    budget = check_budget(budget, owner)
    repeats = check_int(repeats, "repeats", owner, lo=1)
    seed = check_int(seed, "seed", owner, lo=0)
    check_choice(metric, "metric", owner, METRICS)
    names, groups, x = _pool_values(frame, (group_col, value_col, label_col), metric, pair, owner)
    probe = choose_test("mixture", **settings)
    probe.check_values(x)
    tolerance, access, alpha, beta = probe.tolerance, probe.access, probe.alpha, probe.beta
    members = [np.flatnonzero(names == g) for g in groups]
    pairs = list(combinations(range(len(groups)), 2))
    m = len(pairs)
    a_pair = alpha / m
    orders = _round_orders(members, budget, repeats, seed)
    k = len(groups)
    rounds = orders.shape[1] // k
    if rounds < 1:
        raise InvalidParameterError(
            f"{owner}: budget {budget} is below one query per group ({k} groups)."
        )
    tests = {}
    for i, j in pairs:
        sub = np.r_[members[i], members[j]]
        in_a = np.r_[np.ones(len(members[i]), bool), np.zeros(len(members[j]), bool)]
        base = MixtureBettingTest(tolerance, access, a_pair, beta)
        tests[(i, j)] = base.for_pool(in_a, x[sub])
    plan = _Rounds(orders, x, groups, pairs, tests, math.log(1.0 / a_pair), math.log(1.0 / beta),
                   rounds)  # fmt: skip
    tally = _Tally.empty(repeats, rounds * k)
    queries = tally.queries
    means = tuple(float(x[mm].mean()) for mm in members)
    params = probe.params()
    params.pop("population", None)
    params.update(alpha_per_pair=a_pair, pairs=m, correction="bonferroni" if m > 1 else "none",
                  sampling="round-robin")  # fmt: skip

    def result(done: int, example: dict[str, Any] | None) -> MultiGroupAudit:
        return MultiGroupAudit(
            params=params,
            metric=metric,
            groups=tuple(groups),
            sizes=tuple(len(mm) for mm in members),
            means=means,
            budget=budget,
            budget_effective=rounds * k,
            repeats=done,
            seed=seed,
            queries=queries[:done].copy(),
            codes=tally.codes[:done].copy(),
            deciding_pair=tally.deciding[:done],
            example=example,
        )

    done = 0
    try:
        done = _run_chunks(plan, tally, progress)
    except KeyboardInterrupt:
        if partial is not None and tally.done > 0:
            partial.append(result(tally.done, None))
        raise
    # the first order's path for the pair with the largest pool gap (for figures)
    wi, wj = max(pairs, key=lambda ij: abs(means[ij[0]] - means[ij[1]]))
    tw = tests[(wi, wj)]
    stop_round = max(1, int(queries[0]) // k)  # the path up to the first order's stop
    xa, xb = x[orders[0, wi::k]][:stop_round], x[orders[0, wj::k]][:stop_round]
    pr = tw.processes(xa, xb)
    low, high = tw.confidence_sequence(xa, xb, level=1.0 - alpha / m)
    example = {
        "pair": f"{groups[wi]}|{groups[wj]}",
        "stopped_at_query": int(queries[0]),
        "query": [float((n + 1) * k) for n in range(len(xa))],
        "log_e_violation": pr["V"].tolist(),
        "log_e_below_delta": pr["C+"].tolist(),
        "log_e_above_minus_delta": pr["C-"].tolist(),
        "cs_low": low.tolist(),
        "cs_high": high.tolist(),
        "cs_level": 1.0 - alpha / m,
    }
    return result(done, example)


def _pool_values(
    frame: pd.DataFrame,
    cols: tuple[str, str, str | None],
    metric: str,
    pair: tuple[str, str] | None,
    owner: str,
) -> tuple[npt.NDArray[np.str_], list[str], npt.NDArray[np.float64]]:
    """The pool's group names, the groups audited (all, or ``pair``) and the answer values,
    on the rows the metric reads (EO: the ``label = 1`` rows); every column check runs here."""
    group_col, value_col, label_col = cols
    for col in (group_col, value_col, label_col):
        if col is not None and col not in frame.columns:
            raise DataError(f"Column {col!r} is not in the pool.")
    df = frame
    if metric == "eo":
        if label_col is None:
            raise InvalidParameterError("metric='eo' needs true labels: pass --label-col.")
        df = frame[frame[label_col].astype(float) == 1.0]
    if df[group_col].isna().any():
        raise DataError(f"Group column {group_col!r} has missing values; drop those rows.")
    names = np.array([str(v) for v in df[group_col].to_numpy()])
    groups = sorted(set(names.tolist()))
    if pair is not None:
        for g in pair:
            check_choice(g, "pair", owner, groups)
        if pair[0] == pair[1]:
            raise InvalidParameterError(f"{owner}: the pair needs two different groups.")
        groups = list(pair)
    if len(groups) < 2:
        raise EmptyGroupError(f"{owner}: at least two groups are needed; got {groups}.")
    x = np.asarray(df[value_col].astype(float).to_numpy(), dtype=float)
    return names, groups, x


@dataclass(frozen=True)
class _Rounds:
    """What every chunk of a round-robin run reads: the query orders, the answer values, the
    groups and their pairs with each pair's test, the log-boundaries (violation at
    ``la = log(m / alpha)``, compliance at ``lb = log(1 / beta)``), the rounds per order and
    the orders evaluated at once."""

    orders: npt.NDArray[np.int64]
    x: FloatArray
    groups: list[str]
    pairs: list[tuple[int, int]]
    tests: dict[tuple[int, int], MixtureBettingTest]
    la: float
    lb: float
    rounds: int
    chunk: int = 250


@dataclass
class _Tally:
    """Each order's queries, outcome code and deciding pair, filled in chunk by chunk;
    ``done`` counts the orders finished (what an interrupted run keeps)."""

    queries: npt.NDArray[np.int64]
    codes: npt.NDArray[np.int8]
    deciding: list[str | None]
    done: int = 0

    @classmethod
    def empty(cls, repeats: int, queries: int) -> _Tally:
        """``repeats`` orders, each inconclusive after ``queries`` queries until evaluated."""
        return cls(np.full(repeats, queries, dtype=np.int64),
                   np.full(repeats, INCONCLUSIVE, dtype=np.int8), [None] * repeats)  # fmt: skip


def _run_chunks(
    plan: _Rounds, tally: _Tally, progress: Callable[[int], None] | None
) -> int:
    """Evaluate the orders chunk by chunk into ``tally``; ``tally.done`` counts the orders
    finished. Returns the number of orders."""
    orders, x, pairs, rounds, chunk = plan.orders, plan.x, plan.pairs, plan.rounds, plan.chunk
    k = len(plan.groups)
    repeats = orders.shape[0]
    m = len(pairs)
    tally.done = 0
    for lo in range(0, repeats, chunk):
        o = orders[lo : lo + chunk]
        xs = [x[o[:, g::k]] for g in range(k)]
        r = o.shape[0]
        first_v = np.full((m, r), rounds, dtype=np.int64)
        first_c = np.full((m, r), rounds, dtype=np.int64)
        for p, (i, j) in enumerate(pairs):
            pr = plan.tests[(i, j)].processes(xs[i], xs[j])
            v = pr["V"] >= plan.la
            c = (np.maximum.accumulate(pr["C+"], 1) >= plan.lb) & (
                np.maximum.accumulate(pr["C-"], 1) >= plan.lb
            )
            first_v[p] = np.where(v.any(1), np.argmax(v, 1), rounds)
            first_c[p] = np.where(c.any(1), np.argmax(c, 1), rounds)
        tv = first_v.min(0)
        tc = first_c.max(0)
        viol = (tv < rounds) & (tv <= tc)
        comp = ~viol & (tc < rounds)
        stop = np.where(viol, tv, np.where(comp, tc, rounds - 1))
        tally.queries[lo : lo + r] = np.where(viol | comp, (stop + 1) * k, rounds * k)
        tally.codes[lo : lo + r] = np.where(
            viol, VIOLATION, np.where(comp, COMPLIANT, INCONCLUSIVE)
        )
        which = first_v.argmin(0)
        for q in np.flatnonzero(viol):
            i, j = pairs[int(which[q])]
            tally.deciding[lo + q] = f"{plan.groups[i]}|{plan.groups[j]}"
        tally.done = min(lo + chunk, repeats)
        if progress is not None:
            progress(tally.done)
    return repeats
