"""Self-consistent liars: attackers the history-based score of Auditopus cannot see.

The adaptive attacker of Algorithm 2 re-optimises its increment every round, and that is what
betrays it (Section V-A). These strategies instead keep one *fixed* behaviour from round 1, so
their increments are as self-consistent as an honest auditor's:

``consistent``
    Each round the liar reports ``dA ~ Bin(n, pi)`` group-A queries, ``da ~ Bin(dA, q_A)`` and
    ``db ~ Bin(n - dA, q_B)`` positives: exactly the null model of Algorithm 3, so its suspicion
    scores are those of an honest source sampling with replacement.
``consistent-exact``
    The same fixed rates without noise: cumulative counts are ``round(t n pi)``,
    ``round(q_A A_t)``, ``round(q_B B_t)`` (its z-scores are ~0, weight ~1 every round).
``hull-aware``
    Knows the declared liar bound ``K``, every honest auditor's final counts (the platform
    answers every query) and how many liars it runs; all of them report the same fixed
    rates, chosen so that the ``K``-liar hull of the final view (:func:`fairprobe.collab.
    bounded.exact_hull`) gives the verdict opposite to the truth ("fair" for an unfair
    population, "unfair" for a fair one) -- or, where none does, comes closest. With more
    liars than ``K`` every removal of ``K`` sources leaves one of them: the attack the
    verdict's guarantee does not cover.
``selective``
    Answers are *true*: the liar queries the model on real records it picked, group-A positives
    and group-B negatives (for a model that disfavours group A; mirrored otherwise), in a fixed
    split, as long as the population holds such records (it may reuse records other auditors hold:
    nobody sees anyone's queries), then fills up with the other records; when the extreme records
    would push the pooled estimate past 0 it picks a fixed mix of all kinds instead. A
    verification layer that re-asks the model cannot catch it.

Calibration (the platform's knowledge). The liar colludes with the platform, which knows the
population's true counts ``C_h = (a_h, A_h, b_h, B_h)`` (the honest auditors' pooled counts at
the end of the audit), the audit length ``R`` and how many liars it runs (``K``); the liars do not
talk to each other, but the platform gives each the same instruction. With total fabricated mass
``M = K n R``, the rates solve ``DP(C_h + M (pi q_A, pi, (1-pi) q_B, 1-pi)) = 0``:

* ``consistent``: ``pi = A_h / (A_h + B_h)`` (the liar's group mix looks like the population's)
  and the common rate ``r`` that both pooled group rates are moved to is the one that makes the
  liar's rates depart least from the true ones (``max(|q_A - r_A|, |q_B - r_B|)`` minimal),
  clipped so that ``q_A, q_B`` stay in [0, 1]; if no ``r`` is feasible the liar falls back to the
  extreme labels of Lemma 1 with the best split;
* ``selective``: labels are extreme (``q_A = 1, q_B = 0``, or mirrored) and ``pi`` puts the
  pooled DP closest to 0 (grid search and golden-section refinement); if it still overshoots past
  0, the liar takes the ``consistent`` rates with true records of every kind.

Noise is drawn from ``default_rng([seed, attacker index, round])``, so the vectorised simulator
and one :class:`~fairprobe.collab.protocol.AttackerCore` per liar fabricate the same increments.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from dataclasses import asdict, dataclass, replace
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from fairprobe.collab.attacker import (
    AttackContext,
    AttackStrategy,
    _check_views,
    register_attack,
)
from fairprobe.errors import ConfigError

__all__ = [
    "AnswerLiar",
    "ConsistentAttack",
    "LateAttack",
    "LateRecordsAttack",
    "ConsistentExactAttack",
    "HullAwareAttack",
    "LiarPlan",
    "SelectiveAttack",
    "plan_consistent",
    "plan_selective",
]

IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class LiarPlan:
    """The fixed behaviour of a calibrated liar: split ``pi`` and rates ``q_A``, ``q_B``."""

    pi: float
    q_a: float
    q_b: float
    mass: int  # total fabricated mass M = K n R the plan was solved for
    pooled_dp: float  # DP of C_h plus the expected fabricated counts (0 when reachable)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _pooled_dp(h: npt.NDArray[np.float64], m: float, pi: float, qa: float, qb: float) -> float:
    a = h[0] + m * pi * qa
    A = h[1] + m * pi
    b = h[2] + m * (1 - pi) * qb
    B = h[3] + m * (1 - pi)
    return float(a / A - b / B) if A > 0 and B > 0 else math.nan


def _sign(h: npt.NDArray[np.float64]) -> float:
    dp = h[0] / h[1] - h[2] / h[3]
    return -1.0 if dp < 0 else 1.0


def _extreme_split(h: npt.NDArray[np.float64], m: float, qa: float, qb: float) -> float:
    """Split ``pi`` in [0, 1] putting the pooled DP closest to 0 with fixed labels (a grid of
    2,001 splits, then a golden-section refinement around the best one)."""
    grid = np.linspace(0.0, 1.0, 2001)
    vals = np.array([_pooled_dp(h, m, p, qa, qb) for p in grid])
    vals = np.where(np.isfinite(vals), vals, np.inf)
    k = int(np.argmin(np.abs(vals)))
    lo, hi = max(k - 1, 0), min(k + 1, grid.size - 1)
    a_lo, a_hi = grid[lo], grid[hi]
    for _ in range(60):  # golden-section refine |DP| around the best grid point
        m1 = a_lo + (a_hi - a_lo) * 0.382
        m2 = a_lo + (a_hi - a_lo) * 0.618
        if abs(_pooled_dp(h, m, m1, qa, qb)) <= abs(_pooled_dp(h, m, m2, qa, qb)):
            a_hi = m2
        else:
            a_lo = m1
    return float((a_lo + a_hi) / 2)


def plan_consistent(ctx: AttackContext) -> LiarPlan:
    """Rates of the ``consistent`` liar for ``ctx`` (see the module docstring)."""
    h = np.asarray(ctx.population.as_tuple(), dtype=np.float64)
    m = float(ctx.attackers * ctx.n * ctx.rounds)
    s = _sign(h)
    pi = h[1] / (h[1] + h[3])
    ra, rb = h[0] / h[1], h[2] / h[3]
    mA, mB = m * pi, m * (1 - pi)
    # feasible common rates r: q_A = (r (A_h + mA) - a_h) / mA in [0, 1], same for B
    lo = max(h[0] / (h[1] + mA), h[2] / (h[3] + mB))
    hi = min((h[0] + mA) / (h[1] + mA), (h[2] + mB) / (h[3] + mB))
    if mA > 0 and mB > 0 and lo <= hi:
        # equal departures |q_A - r_A| = |q_B - r_B| (the liar moves both rates evenly)
        ka, kb = (h[1] + mA) / mA, (h[3] + mB) / mB
        r = (ka * ra + kb * rb) / (ka + kb)
        r = min(max(r, lo), hi)
        qa = min(max((r * (h[1] + mA) - h[0]) / mA, 0.0), 1.0)
        qb = min(max((r * (h[3] + mB) - h[2]) / mB, 0.0), 1.0)
        return LiarPlan(float(pi), float(qa), float(qb), int(m), _pooled_dp(h, m, pi, qa, qb))
    qa, qb = (1.0, 0.0) if s < 0 else (0.0, 1.0)
    pi = _extreme_split(h, m, qa, qb)
    return LiarPlan(pi, qa, qb, int(m), _pooled_dp(h, m, pi, qa, qb))


def plan_selective(ctx: AttackContext) -> LiarPlan:
    """Record mix of the ``selective`` liar: extreme true labels (only records that pull towards
    0) with the split ``pi`` that brings the pooled DP closest to 0; if even that overshoots past
    0, the mixed rates of :func:`plan_consistent` (it then also picks records of the other kinds)."""
    h = np.asarray(ctx.population.as_tuple(), dtype=np.float64)
    m = float(ctx.attackers * ctx.n * ctx.rounds)
    s = _sign(h)
    qa, qb = (1.0, 0.0) if s < 0 else (0.0, 1.0)
    pi = _extreme_split(h, m, qa, qb)
    dp = _pooled_dp(h, m, pi, qa, qb)
    if dp * s < 0:  # overshoots past 0 even at the best split: mix records
        return plan_consistent(ctx)
    return LiarPlan(pi, qa, qb, int(m), dp)


def _carry(total: npt.NDArray[np.float64]) -> IntArray:
    return np.asarray(np.floor(total + 0.5), dtype=np.int64)


class _Calibrated(AttackStrategy):
    """A strategy whose behaviour is fixed by :meth:`calibrate` (the platform's instruction)."""

    needs_context: ClassVar[bool] = True

    def __init__(self) -> None:
        self.context: AttackContext | None = None
        self.plan: LiarPlan | None = None

    @abstractmethod
    def _solve(self, ctx: AttackContext) -> LiarPlan:
        """The liar's plan for this audit (what the platform instructs it to report)."""

    def calibrate(self, ctx: AttackContext) -> AttackStrategy:
        new = type(self)()
        new.context = ctx
        new.plan = self._solve(ctx)
        return new

    @property
    def _ctx(self) -> AttackContext:
        """The platform's instruction; a clear error before :meth:`calibrate`."""
        if self.context is None or self.plan is None:
            raise ConfigError(
                f"The {self.name!r} attack needs the platform's calibration: call "
                "strategy.calibrate(AttackContext(...)) first (the simulator does)."
            )
        return self.context

    def _ready(self, k: int) -> tuple[AttackContext, LiarPlan]:
        ctx = self._ctx
        assert self.plan is not None  # set with the context by calibrate
        if len(ctx.ids) != k:
            raise ConfigError(
                f"The {self.name!r} attack was calibrated for {len(ctx.ids)} attacker "
                f"rows, not {k}: give AttackContext.ids the attacker index of each view row."
            )
        return ctx, self.plan

    def fabricate(self, views: npt.ArrayLike, n: int, round_: int) -> IntArray:
        v = _check_views(views, n)
        ctx, plan = self._ready(v.shape[0])
        return self._fabricate(ctx, plan, v.shape[0], n, round_)

    @abstractmethod
    def _fabricate(
        self, ctx: AttackContext, plan: LiarPlan, k: int, n: int, round_: int
    ) -> IntArray:
        """The ``(k, 4)`` increments of round ``round_`` of the calibrated liar (``n`` queries)."""

    def for_ids(self, ids: tuple[int, ...]) -> AttackStrategy:
        """The same calibrated liar fabricating for the attackers ``ids`` (one per view row)."""
        new = type(self)()
        new.context = None if self.context is None else replace(self.context, ids=tuple(ids))
        new.plan = self.plan
        return new

    def __repr__(self) -> str:
        return f"{type(self).__name__}(plan={self.plan})"


class _ConsistentRates(_Calibrated):
    """A liar reporting the fixed rates of :func:`plan_consistent` from round 1."""

    def _solve(self, ctx: AttackContext) -> LiarPlan:
        return plan_consistent(ctx)


@register_attack
class ConsistentAttack(_ConsistentRates):
    """Fixed calibrated rates from round 1, binomial noise (indistinguishable from honest)."""

    name = "consistent"

    def _fabricate(
        self, ctx: AttackContext, p: LiarPlan, k: int, n: int, round_: int
    ) -> IntArray:
        out = np.zeros((k, 4), dtype=np.int64)
        for r, j in enumerate(ctx.ids):
            rng = np.random.default_rng([ctx.seed, int(j), int(round_)])
            dA = int(rng.binomial(n, p.pi))
            out[r] = (rng.binomial(dA, p.q_a), dA, rng.binomial(n - dA, p.q_b), n - dA)
        return out


@register_attack
class ConsistentExactAttack(_ConsistentRates):
    """Fixed calibrated rates from round 1 without noise (cumulative rounding)."""

    name = "consistent-exact"

    def _fabricate(
        self, ctx: AttackContext, p: LiarPlan, k: int, n: int, round_: int
    ) -> IntArray:
        t = np.array([round_ - 1, round_], dtype=np.float64)
        A = _carry(t * n * p.pi)
        B = t.astype(np.int64) * n - A
        a = _carry(np.asarray(A * p.q_a, dtype=np.float64))
        b = _carry(np.asarray(B * p.q_b, dtype=np.float64))
        row = np.array([a[1] - a[0], A[1] - A[0], b[1] - b[0], B[1] - B[0]], dtype=np.int64)
        return np.tile(row, (k, 1))


def plan_hull_aware(ctx: AttackContext, grid: int = 21) -> LiarPlan:
    """Rates of the ``hull-aware`` liar: the fixed ``(pi, q_A, q_B)`` of a grid (``pi`` in
    ``grid`` steps, each rate in ``grid // 2 + 1``) whose ``K``-liar hull over the honest
    auditors' final counts plus ``ctx.attackers`` copies of the liar's ``n R`` records is
    deepest on the side opposite to the truth (inside the band for an unfair population,
    outside it for a fair one). Without ``honest_counts`` the population counts as one honest
    source."""
    from fairprobe.collab.bounded import EXACT_MAX_K, exact_hull

    h = np.asarray(ctx.honest_counts or (ctx.population.as_tuple(),), dtype=np.float64)
    pool = h.sum(axis=0)
    m = float(ctx.n * ctx.rounds)
    k = min(int(ctx.max_liars), EXACT_MAX_K)
    tau = float(ctx.tau)
    target_fair = abs(pool[0] / pool[1] - pool[2] / pool[3]) > tau
    pis = np.linspace(0.0, 1.0, grid)
    qs = np.linspace(0.0, 1.0, grid // 2 + 1)
    P, QA, QB = (x.ravel() for x in np.meshgrid(pis, qs, qs, indexing="ij"))
    A = np.floor(m * P + 0.5)
    B = m - A
    liar = np.stack([np.floor(A * QA + 0.5), A, np.floor(B * QB + 0.5), B], axis=1)
    views = np.concatenate([np.broadcast_to(h, (P.size, *h.shape)),
                            np.repeat(liar[:, None, :], int(ctx.attackers), axis=1)], axis=1)
    lo, hi = exact_hull(views, np.zeros(views.shape[:2]), k)
    with np.errstate(invalid="ignore"):
        # depth inside the band (fair) or outside it (unfair) of the whole interval
        depth = (np.minimum(tau - hi, lo + tau) if target_fair
                 else np.maximum(lo - tau, -tau - hi))
    depth = np.where(np.isfinite(depth), depth, -np.inf)
    best = int(np.argmax(depth))
    v = views[best].sum(axis=0)
    return LiarPlan(float(P[best]), float(QA[best]), float(QB[best]), int(m),
                    float(v[0] / v[1] - v[2] / v[3]))


@register_attack
class HullAwareAttack(ConsistentExactAttack):
    """Fixed rates of :func:`plan_hull_aware` from round 1, without noise: the liars' final
    counts put the ``K``-liar hull on the side opposite to the truth where they can."""

    name = "hull-aware"
    needs_honest_counts: ClassVar[bool] = True

    def _solve(self, ctx: AttackContext) -> LiarPlan:
        return plan_hull_aware(ctx)


@register_attack
class SelectiveAttack(_Calibrated):
    """True answers on chosen records: group-A positives and group-B negatives (or mirrored).

    The records come from the population (``ctx.population``), at most as many of each kind as it
    holds; when the chosen kinds run out, the liar fills its ``n`` queries with the kinds that
    remain (still true answers), first of the other group, then of the same group.
    """

    name = "selective"

    def _solve(self, ctx: AttackContext) -> LiarPlan:
        return plan_selective(ctx)

    def _fabricate(
        self, ctx: AttackContext, p: LiarPlan, k: int, n: int, round_: int
    ) -> IntArray:
        pop = ctx.population
        cum = [self._cumulative(pop.as_tuple(), p, n, t) for t in (round_ - 1, round_)]
        row = np.array(cum[1], dtype=np.int64) - np.array(cum[0], dtype=np.int64)
        return np.tile(row, (k, 1))

    @staticmethod
    def _cumulative(
        pop: tuple[int, int, int, int], p: LiarPlan, n: int, t: int
    ) -> tuple[int, int, int, int]:
        """Cumulative counts after ``t`` rounds: fixed record mix, capped by the records held."""
        a_h, A_h, b_h, B_h = pop
        supply = [a_h, A_h - a_h, b_h, B_h - b_h]  # (pos A, neg A, pos B, neg B)
        frac = [p.pi * p.q_a, p.pi * (1 - p.q_a), (1 - p.pi) * p.q_b, (1 - p.pi) * (1 - p.q_b)]
        total = t * n
        cum = np.cumsum(frac)
        edges = [0] + [int(math.floor(total * c + 0.5)) for c in cum[:-1]] + [total]
        want = [edges[i + 1] - edges[i] for i in range(4)]
        take = [min(w, sp) for w, sp in zip(want, supply, strict=True)]
        left = total - sum(take)
        # fill: the cells that pull towards 0 first (A positives, B negatives, or mirrored)
        pull = (0, 3) if p.q_a >= p.q_b else (1, 2)
        for c in (*pull, *(c for c in range(4) if c not in pull)):
            if left <= 0:
                break
            more = min(left, supply[c] - take[c])
            take[c] += more
            left -= more
        return (take[0], take[0] + take[1], take[2], take[2] + take[3])


# -- answer-level liars ---------------------------------------------------------------------------
#: Share of the audit's rounds in which the ``late`` liar lies (its last rounds).
LATE_SHARE = 0.2


def late_rounds(rounds: int) -> int:
    """Rounds at the end of an audit of ``rounds`` in which the ``late`` liar lies."""
    return max(1, int(math.ceil(LATE_SHARE * int(rounds))))


def flip_share(ctx: AttackContext, lying: float, target: float = 0.0) -> float:
    """Share ``phi`` of the falsifiable answers the liars flip so that the pooled DP of the
    population plus every liar's records (at the population's rates, ``lying`` of them with
    flips) is ``target`` (0; or, for :class:`LateEdgeAttack`, just inside the band): group-A
    negatives claimed positive and group-B positives claimed negative (mirrored for a model
    that favours group A). Linear in ``phi``, clipped to [0, 1]."""
    h = np.asarray(ctx.population.as_tuple(), dtype=np.float64)
    pa, pb = h[0] / h[1], h[2] / h[3]
    pi = h[1] / (h[1] + h[3])
    m = float(ctx.attackers * ctx.n * ctx.rounds)
    nA, nB = m * pi, m * (1 - pi)
    A, B = h[1] + nA, h[3] + nB
    dp0 = (h[0] + pa * nA) / A - (h[2] + pb * nB) / B
    if dp0 < 0:  # push up: A negatives -> 1, B positives -> 0
        slope = lying * ((1 - pa) * nA / A + pb * nB / B)
    else:
        slope = lying * (pa * nA / A + (1 - pb) * nB / B)
    if slope <= 0:
        return 0.0
    gap = abs(dp0) - min(abs(float(target)), abs(dp0))
    return float(min(max(gap / slope, 0.0), 1.0))


class AnswerLiar(_Calibrated):
    """An answer-level liar: draws real records, reports an answer for each.

    Its records are drawn from the population (``AttackContext.population``) at its rates
    (:meth:`records`, seeded by ``(seed, attacker, round)``); a networked liar draws them from
    its pool instead and calls :meth:`answers` the same way. :meth:`fabricate` is the count
    form of the same behaviour, so every count-level path (the protocol core, the sweep) runs
    it too."""

    level = "answers"

    def _solve(self, ctx: AttackContext) -> LiarPlan:
        return LiarPlan(0.0, 0.0, 0.0, int(ctx.attackers * ctx.n * ctx.rounds), math.nan)

    def _push_up(self) -> bool:
        ctx = self._ctx
        a, A, b, B = ctx.population.as_tuple()
        return a / A - b / B < 0

    def lies_in(self, round_: int) -> bool:
        """Whether this liar falsifies answers in round ``round_``."""
        return True

    def share(self) -> float:
        """Share of the falsifiable answers flipped in a lying round."""
        return 1.0

    def answers(
        self, groups: npt.ArrayLike, truth: npt.ArrayLike, round_: int
    ) -> npt.NDArray[np.int64]:
        g = np.asarray(groups, dtype=np.int64)
        y = np.asarray(truth, dtype=np.int64).copy()
        ctx = self.context
        if ctx is None or not self.lies_in(round_) or y.size == 0:
            return y
        rng = np.random.default_rng([ctx.seed, int(ctx.ids[0]), int(round_), 0xA5])
        flip = rng.random(y.size) < self.share()
        if self._push_up():
            want = np.where(g == 1, 1, 0)
        else:
            want = np.where(g == 1, 0, 1)
        return np.where(flip, want, y).astype(np.int64)

    def records(self, round_: int, count: int, row: int = 0) -> tuple[IntArray, IntArray]:
        """``(groups, truth)`` of the ``count`` records attacker ``ids[row]`` draws in round
        ``round_``: independent draws at the population's cell shares."""
        ctx = self._ctx
        a, A, b, B = ctx.population.as_tuple()
        p = np.array([a, A - a, b, B - b], dtype=np.float64)
        rng = np.random.default_rng([ctx.seed, int(ctx.ids[row]), int(round_), 0x5EC])
        cells = rng.choice(4, size=int(count), p=p / p.sum())
        groups = (cells <= 1).astype(np.int64)
        truth = ((cells == 0) | (cells == 2)).astype(np.int64)
        return groups, truth

    def _fabricate(
        self, ctx: AttackContext, plan: LiarPlan, k: int, n: int, round_: int
    ) -> IntArray:
        out = np.zeros((k, 4), dtype=np.int64)
        for r in range(k):
            one = self.for_ids((ctx.ids[r],))
            g, y = one.records(round_, one.draws(n, round_))  # type: ignore[attr-defined]
            rep = one.answers(g, y, round_)
            out[r] = (int((rep * g).sum()), int(g.sum()), int((rep * (1 - g)).sum()),
                      int((1 - g).sum()))
        return out


@register_attack
class LateAttack(AnswerLiar):
    """Truthful, then in its last :func:`late_rounds` rounds it flips just enough answers
    (a share :func:`flip_share` of the falsifiable ones, every liar the same) for the pooled
    DP to reach 0: the liar the old round-uniform challenges almost never caught."""

    name = "late"

    def lies_in(self, round_: int) -> bool:
        ctx = self._ctx
        return int(round_) > ctx.rounds - late_rounds(ctx.rounds)

    def share(self) -> float:
        ctx = self._ctx
        return flip_share(ctx, late_rounds(ctx.rounds) / ctx.rounds)


@register_attack
class LateRecordsAttack(AnswerLiar):
    """Truthful on every record it drew before its last querying round; on the records of
    that round it flips a share :func:`flip_share` of the falsifiable answers (usually all of
    them): every lie sits in the last leaves it commits. (A liar cannot save its budget and
    commit ``n R`` records at once: a table entry that adds more than ``n`` queries per round
    elapsed since the last one held is refused as ``over-budget``.)"""

    name = "late-records"

    def lies_in(self, round_: int) -> bool:
        ctx = self._ctx
        return int(round_) == ctx.rounds

    def share(self) -> float:
        ctx = self._ctx
        return flip_share(ctx, 1.0 / ctx.rounds)


@register_attack
class LateEdgeAttack(LateAttack):
    """:class:`LateAttack` that falsifies the fewest answers it can: in its last rounds it
    brings the pooled DP just inside the band (``0.99 tau`` on the population's side), not to
    0. Against a model just outside the band it needs few false answers, the case in which
    the escape bound ``(1 - c)^F`` is far from 0 and escapes are observed."""

    name = "late-edge"

    def share(self) -> float:
        ctx = self._ctx
        return flip_share(ctx, late_rounds(ctx.rounds) / ctx.rounds, target=0.99 * ctx.tau)
