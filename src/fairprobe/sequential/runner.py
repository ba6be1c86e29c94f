"""Live sequential audits: query a black box one answer at a time and stop when the test decides.

:func:`audit_live` draws a random order of the query pool (the ``Y = 1`` sub-pool for equal
opportunity) and asks the :class:`~fairprobe.access.BlackBox` for ``batch_size`` records at a
time (default 1: no answer is bought after the test has stopped); each answer is folded into the
test's per-step :class:`~fairprobe.sequential.base.Stepper` in O(1). It returns a
:class:`~fairprobe.sequential.results.SequentialResult` with the whole path.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Unpack

import numpy as np
import pandas as pd

from fairprobe._validation import check_choice, check_int
from fairprobe.errors import AccessError, DataError
from fairprobe.sequential.base import (
    SequentialTest,
    Stepper,
    TestChoice,
    check_budget,
    choose_test,
)
from fairprobe.sequential.mixture import MixtureBettingTest
from fairprobe.sequential.pool import METRICS, AuditPool
from fairprobe.sequential.results import GroupTally, SequentialResult

if TYPE_CHECKING:
    from fairprobe.access.base import AnswerBatch
    from fairprobe.access.blackbox import BlackBox

__all__ = ["StepInfo", "audit_live"]


class StepInfo:
    """What a live display needs after each answer (passed to ``on_step``)."""

    __slots__ = ("queries", "paid", "statistic_upper", "statistic_lower", "outcome", "budget")

    def __init__(
        self,
        queries: int,
        paid: int,
        up: float,
        low: float,
        outcome: str | None,
        budget: int,
    ) -> None:
        self.queries = queries
        self.paid = paid
        self.statistic_upper = up
        self.statistic_lower = low
        self.outcome = outcome
        self.budget = budget


def _observable(batch: AnswerBatch, access: str) -> np.ndarray:
    if access == "decisions":
        return np.asarray(batch.decisions, dtype=float)
    if access == "scores":
        return np.asarray(batch.scores, dtype=float)
    z = np.asarray(batch.logits, dtype=float)
    s = np.asarray(batch.scores, dtype=float)
    # a backend exposing scores but not logits: logit(score), clipped to [1e-12, 1 - 1e-12]
    miss = np.isnan(z) & ~np.isnan(s)
    if miss.any():
        q = np.clip(s[miss], 1e-12, 1 - 1e-12)
        z[miss] = np.log(q) - np.log1p(-q)
    return z


def audit_live(
    blackbox: BlackBox,
    queries: pd.DataFrame,
    *,
    group_col: str,
    metric: str = "sp",
    budget: int = 1000,
    seed: int = 0,
    label_col: str | None = None,
    feature_cols: Sequence[str] | None = None,
    group_a: Any = None,
    batch_size: int = 1,
    on_step: Callable[[StepInfo], None] | None = None,
    **choice: Unpack[TestChoice],
) -> SequentialResult:
    """Run one sequential audit against a live black box.

    Parameters
    ----------
    blackbox : fairprobe.access.BlackBox
        The model (cache and budget of the black box apply; cached answers are free).
    queries : DataFrame
        The held-out query pool: features, the group column and (for ``metric="eo"``) labels.
    group_col, group_a : the sensitive attribute; group a is ``group_a`` or the first value.
    metric : {"sp", "eo"}
    budget : int
        Most queries (capped at the size of the audited sub-pool).
    seed : int
        Seed of the random order.
    label_col : str, optional
        True labels (1 = favourable), needed for ``metric="eo"``; never sent to the model.
    feature_cols : sequence of str, optional
        Columns sent to the model (default: every column but ``label_col``).
    batch_size : int
        Records per request. Above 1, answers bought after the stopping time are paid for but
        unused (``queries_paid`` > ``queries``).
    on_step : callable, optional
        Called with a :class:`StepInfo` after every answer (live displays).
    **choice : TestChoice
        The test and its settings: ``test`` ({"mixture", "glr-wald", "betting", "fixed"} or a
        :class:`SequentialTest`; default ``mixture``, anytime-valid, queries the groups
        alternately), ``tolerance``, ``access``, ``alpha``, ``beta`` and ``test_options``
        (:class:`~fairprobe.sequential.base.TestChoice`).

    Returns
    -------
    SequentialResult
        With the default test (pairs, the groups queried alternately), an audit whose smaller
        group is used up before the budget stops there: if undecided, its ``stopped`` says
        "the pool has no more rows of group X", its finding is undetermined for that reason,
        and ``queries_saved`` counts the budget it did not spend.
    """
    owner = "audit_live"
    budget = check_budget(budget, owner)
    seed = check_int(seed, "seed", owner, lo=0)
    batch_size = check_int(batch_size, "batch_size", owner, lo=1)
    check_choice(metric, "metric", owner, METRICS)
    t = choose_test(**choice)
    if not isinstance(queries, pd.DataFrame):
        raise DataError("queries must be a pandas DataFrame of query records.")
    pool = AuditPool.from_frame(queries, group_col, label_col=label_col, group_a=group_a)
    idx_pool = np.flatnonzero(pool.subpool(metric))
    feats = _features(queries, label_col, feature_cols)
    sub_in_a = pool.in_a[idx_pool]
    # the test's finite population: the audited sub-pool's group sizes (and, for logits with the
    # default test, the range given or (-10, 10): the answers are not known in advance)
    t = (
        t.for_pool(sub_in_a, np.zeros(len(idx_pool)))
        if t.access != "logits"
        else _sizes(t, sub_in_a)
    )
    order, saved, exhausted = _query_order(t, pool, idx_pool, budget, seed)
    run = _LiveRun(t, pool.in_a, len(order))
    run.ask(blackbox, queries[feats], order, batch_size, on_step)
    outcome = run.stepper.finish()  # unparsed answers may leave the stepper short of its budget
    stopped = None
    if exhausted is not None and run.sent >= run.total and outcome == "inconclusive":
        stopped = f"the pool has no more rows of group {exhausted}"
    else:
        saved = 0
    pairs = _pair_paths(t, run)
    # with pairs, the path's lower list is the pairs' confidence sequence's lower bound (one
    # value per pair); without, the stepper's statistic
    lower = run.low if pairs is None else pairs["cs_low"]
    tallies = run.tallies
    return SequentialResult(
        outcome=outcome,
        queries=run.asked[-1] if run.asked else run.sent,
        params=t.params(),
        metric=metric,
        budget=run.total,
        boundaries=t.boundaries.to_dict(),
        group_a=GroupTally(int(tallies[0, 0]), float(tallies[0, 1]), float(tallies[0, 2])),
        group_b=GroupTally(int(tallies[1, 0]), float(tallies[1, 1]), float(tallies[1, 2])),
        group_names=pool.group_names,
        path={"query": [float(q) for q in run.asked], "statistic_upper": run.up,
              "statistic_lower": lower},  # fmt: skip
        queries_paid=run.paid,
        queries_cached=run.cached,
        unparsed=run.unparsed,
        pairs=pairs,
        stopped=stopped,
        queries_saved=saved,
    )


def _features(queries: pd.DataFrame, label_col: str | None,
              feature_cols: Sequence[str] | None) -> list[str]:
    """The columns sent to the model: ``feature_cols``, each checked, or all but the label."""
    if feature_cols is None:
        return [c for c in queries.columns if c != label_col]
    feats = list(feature_cols)
    absent = [c for c in feats if c not in queries.columns]
    if absent:
        raise DataError(f"Feature column(s) {', '.join(map(repr, absent))} not in the queries.")
    return feats


def _query_order(t: SequentialTest, pool: AuditPool, idx_pool: np.ndarray, budget: int,
                 seed: int) -> tuple[np.ndarray, int, str | None]:
    """The rows to ask, in order (at most ``budget``), the budget a test of pairs cannot use
    and the group whose rows run out first (``None`` when none does)."""
    rng = np.random.default_rng(seed)
    if t.sampling != "alternate":
        return idx_pool[rng.permutation(len(idx_pool))[: min(budget, len(idx_pool))]], 0, None
    from fairprobe.sequential.pool import alternate_order

    sub_in_a = pool.in_a[idx_pool]
    order = alternate_order(idx_pool[sub_in_a], idx_pool[~sub_in_a], rng)[:budget]
    # a test of pairs learns nothing once the smaller group is used up: stop there rather
    # than pay for rows of the larger group that can never be paired
    na = int(sub_in_a.sum())
    pairable = 2 * min(na, len(idx_pool) - na)
    if len(order) <= pairable:
        return order, 0, None
    exhausted = pool.group_names[0] if na <= len(idx_pool) - na else pool.group_names[1]
    return order[:pairable], len(order) - pairable, exhausted


@dataclass
class _LiveRun:
    """A live audit as its answers arrive: the test's stepper, the path (statistics and the
    query each was read at), each group's tally (n, sum, sum of squares), the answers kept for
    the pairs, and what was sent, paid, found cached or could not be read."""

    test: SequentialTest
    in_a: np.ndarray
    total: int
    stepper: Stepper = field(init=False)
    up: list[float] = field(default_factory=list)
    low: list[float] = field(default_factory=list)
    asked: list[int] = field(default_factory=list)
    seen_a: list[float] = field(default_factory=list)
    seen_b: list[float] = field(default_factory=list)
    asked_pair: list[int] = field(default_factory=list)
    tallies: np.ndarray = field(default_factory=lambda: np.zeros((2, 3)))
    paid: int = 0
    cached: int = 0
    unparsed: int = 0
    sent: int = 0

    def __post_init__(self) -> None:
        self.stepper = self.test.stepper(self.total)

    def ask(self, blackbox: BlackBox, records: pd.DataFrame, order: np.ndarray,
            batch_size: int, on_step: Callable[[StepInfo], None] | None) -> None:
        """Ask ``order`` ``batch_size`` rows at a time until the test stops or it runs out."""
        access = self.test.access
        while self.sent < self.total and not self.stepper.done:
            chunk = order[self.sent : self.sent + batch_size]
            self.sent += len(chunk)
            batch = blackbox.query(records.iloc[chunk])
            self.paid += int(batch.n_paid)
            self.cached += int(batch.n_cached)
            vals = _observable(batch, access)
            if access != "decisions" and np.isnan(vals).all() and \
                    not np.isnan(batch.decisions).all():
                raise AccessError(
                    f"The model does not expose {access}; audit it with access='decisions'."
                )
            self._fold(chunk, vals, self.sent - len(chunk), on_step)

    def _fold(self, chunk: np.ndarray, vals: np.ndarray, first: int,
              on_step: Callable[[StepInfo], None] | None) -> None:
        """Fold one batch's answers into the stepper, the path and the tallies, one by one, up
        to the answer that stops the test (an unreadable answer is counted, not folded)."""
        t, st = self.test, self.stepper
        sigmoid = t.sigmoid_logits and t.access == "logits"
        for k, (j, v) in enumerate(zip(chunk.tolist(), vals.tolist(), strict=True)):
            if np.isnan(v):
                self.unparsed += 1
                continue
            t.check_values(np.array([v]))
            g = bool(self.in_a[j])
            w = 1.0 / (1.0 + np.exp(-v)) if sigmoid else v  # the functional the test audits
            self.tallies[0 if g else 1] += (1.0, w, w * w)
            st.update(g, v)
            (self.seen_a if g else self.seen_b).append(v)
            if min(len(self.seen_a), len(self.seen_b)) > len(self.asked_pair):
                self.asked_pair.append(first + k + 1)
            self.up.append(st.statistic_upper)
            self.low.append(st.statistic_lower)
            self.asked.append(first + k + 1)
            if on_step is not None:
                on_step(StepInfo(st.n, self.paid, st.statistic_upper, st.statistic_lower,
                                 st.outcome, self.total))  # fmt: skip
            if st.done:
                break


def _pair_paths(t: SequentialTest, run: _LiveRun) -> dict[str, list[float]] | None:
    """The default test's paths over the answered pairs (the confidence sequence and the
    log e-processes), or ``None`` for another test or no complete pair."""
    if not isinstance(t, MixtureBettingTest):
        return None
    k = min(len(run.seen_a), len(run.seen_b))
    if not k:
        return None
    xa, xb = np.array(run.seen_a[:k]), np.array(run.seen_b[:k])
    low, high = (v_.tolist() for v_ in t.confidence_sequence(xa, xb))
    proc = {k_: v_.tolist() for k_, v_ in t.processes(xa, xb).items()}
    return {
        "query": [float(q) for q in run.asked_pair[:k]],
        "cs_low": low,
        "cs_high": high,
        "log_e_violation": proc["V"],
        "log_e_above_minus_delta": proc["C-"],
        "log_e_below_delta": proc["C+"],
    }


def _sizes(t: SequentialTest, sub_in_a: np.ndarray) -> SequentialTest:
    """Set the pool's group sizes only (logits: keep the test's own range)."""
    if isinstance(t, MixtureBettingTest):
        na = int(sub_in_a.sum())
        out: SequentialTest = t._copy(population=(na, len(sub_in_a) - na))
        return out
    return t
