r"""Where a fixed budget of queries goes: Neyman's split and the adaptive batches' design.

The black-box audit (:mod:`fairprobe.audit.run`), the planner (:mod:`fairprobe.stats.plan`) and
the query benchmark (``benchmarks/bench_queries.py``) share these functions, so that "neyman"
and "adaptive" mean one thing everywhere.

Neyman's allocation
    For a difference of two rates each estimated within its group, the variance
    :math:`p_1(1-p_1)/n_1 + p_2(1-p_2)/n_2` under :math:`n_1 + n_2 = N` is smallest at
    :math:`n_i \propto \sqrt{p_i(1-p_i)}` (Neyman 1934); over :math:`k` groups the same weights
    minimise the sum of the group variances, which bounds every pair's. Every group keeps at
    least :data:`NEYMAN_FLOOR` of its equal share, so that a group whose rate looks near 0 or 1
    is still measured.

The adaptive design
    The budget is spent in at most :math:`B` batches (:data:`ADAPTIVE_BATCHES`). Group
    :math:`g` has a fixed grid of sizes :math:`n_{g,j} = \lceil j T_g / B \rceil`,
    :math:`j = 1..B`, with :math:`T_g` its share of the whole budget under the balanced split
    (a group short of rows is taken whole); a batch moves every group that is still *open*
    one step up its grid, and the audit stops as soon as the question is decided. The
    intervals stay valid although the sizes depend on the answers: a union bound over the
    grid.

    * :math:`k \ge 3` groups: each group's Clopper-Pearson interval at miss level
      :math:`\beta = (1 - (1-\alpha)^{1/k}) / B` holds at all :math:`B` sizes of its grid at
      once with probability :math:`\ge 1 - B\beta` (Bonferroni over a group's looks); the
      groups are independent samples, so all hold at every look with probability
      :math:`\ge (1 - B\beta)^k = 1 - \alpha` (Šidák over the groups). Every pair's interval
      is the range over the two groups' intervals, the construction of the default
      ``exact`` family (:mod:`fairprobe.stats.simultaneous`) at the family level
      :math:`(1-\beta)^k`, so the audit's own summary at that level is the adaptive interval.
    * two groups: while the question is undecided its one pair is open, so both groups move
      at every batch and the sizes at look :math:`t` are fixed in advance; the default
      two-group exact interval at level :math:`1 - \alpha/B` at each look then holds at all
      looks with probability :math:`\ge 1 - \alpha` (Bonferroni over the :math:`B` looks).

    A group is open while it belongs to a pair whose interval is not yet inside the fair
    band (a pair already decided unfair decides the question, and the audit stops).
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from fairprobe.stats.exact import clopper_pearson_interval

__all__ = ["ADAPTIVE_BATCHES", "NEYMAN_FLOOR", "NEYMAN_PILOT", "adaptive_description", "adaptive_levels",
           "adaptive_grid", "apportion", "neyman_weights", "open_groups", "question_bounds", "simulate_adaptive"]

#: Every group's least share of the budget under Neyman's split, as a fraction of its equal
#: share ``1 / k``.
NEYMAN_FLOOR = 0.5
#: Share of the budget the audit spends first, split equally, to estimate the rates Neyman's
#: split needs (nothing is known of them before paying).
NEYMAN_PILOT = 0.2
#: The most batches an adaptive audit spends its budget in (the union bound's ``B``).
ADAPTIVE_BATCHES = 5

Kind = Literal["difference", "ratio"]
FloatArray = npt.NDArray[np.float64]


def neyman_weights(rates: npt.ArrayLike, floor: float = NEYMAN_FLOOR) -> FloatArray:
    r"""Neyman's weights :math:`w_i \propto \sqrt{p_i(1-p_i)}`, each at least ``floor / k``.

    Over the last axis (leading axes: independent cases). The floor is water-filled: groups
    below it are raised to it and the rest of the mass is shared in proportion to the
    standard deviations of the others.
    """
    p = np.asarray(rates, dtype=np.float64)
    k = p.shape[-1]
    sd = np.sqrt(np.clip(p * (1.0 - p), 1e-12, None))
    low = float(floor) / k
    fixed = np.zeros(p.shape, dtype=bool)
    w = sd / sd.sum(axis=-1, keepdims=True)
    for _ in range(k):
        free_sd = np.where(fixed, 0.0, sd)
        mass = 1.0 - low * fixed.sum(axis=-1, keepdims=True)
        w = np.where(fixed, low, mass * free_sd / free_sd.sum(axis=-1, keepdims=True))
        newly = ~fixed & (w < low)
        if not newly.any():
            break
        fixed |= newly
    return np.asarray(w, dtype=np.float64)


def apportion(budget: int, weights: npt.ArrayLike) -> npt.NDArray[np.int64]:
    """Integer sizes summing to ``budget``: the largest remainders of ``budget * weights``."""
    raw = budget * np.asarray(weights, dtype=np.float64)
    n = np.floor(raw).astype(np.int64)
    short = int(budget - n.sum())
    if short > 0:
        n[np.argsort(-(raw - n), kind="stable")[:short]] += 1
    return n


def adaptive_levels(confidence_level: float, groups: int,
                    batches: int = ADAPTIVE_BATCHES) -> tuple[float, float]:
    """``(family level of each look, each group's interval level)`` of the adaptive design.

    Two groups: ``1 - alpha / B`` for the pair (the group level is not used). More: each
    group's Clopper-Pearson level ``1 - beta`` with ``beta = (1 - (1 - alpha)**(1/k)) / B``,
    and the family level ``(1 - beta)**k`` at which the default exact family uses it.
    """
    alpha = 1.0 - float(confidence_level)
    if groups <= 2:
        return 1.0 - alpha / batches, 1.0 - alpha / batches
    beta = (1.0 - (1.0 - alpha) ** (1.0 / groups)) / batches
    return (1.0 - beta) ** groups, 1.0 - beta


def adaptive_grid(totals: npt.ArrayLike, batches: int = ADAPTIVE_BATCHES) -> npt.NDArray[np.int64]:
    """Each group's sizes at steps ``1..B``: ``ceil(j * T_g / B)``, shape ``(B, k)``."""
    t = np.asarray(totals, dtype=np.int64)
    j = np.arange(1, batches + 1, dtype=np.int64)[:, None]
    return np.asarray(-(-(j * t[None, :]) // batches), dtype=np.int64)


def open_groups(k: npt.ArrayLike, n: npt.ArrayLike, *, kind: Kind, tolerance: float,
                group_level: float) -> npt.NDArray[np.bool_]:
    """Groups in a pair whose interval is not yet inside the fair band, over the last axis.

    The pair's interval is the range over the two groups' Clopper-Pearson intervals at
    ``group_level`` (differences: fair when ``max(u_i - l_j, u_j - l_i) <= tolerance``;
    ratios: fair when ``min(l_i / u_j, l_j / u_i) >= tolerance``). A group without answers
    is open.
    """
    kk = np.asarray(k, dtype=np.float64)
    nn = np.asarray(n, dtype=np.float64)
    has = nn > 0
    lo, hi = clopper_pearson_interval(kk, np.maximum(nn, 1.0), group_level)
    lo = np.where(has, lo, 0.0)
    hi = np.where(has, hi, 1.0)
    li, lj = lo[..., :, None], lo[..., None, :]
    ui, uj = hi[..., :, None], hi[..., None, :]
    if kind == "difference":
        settled = np.maximum(ui - lj, uj - li) <= tolerance
    else:
        with np.errstate(divide="ignore", invalid="ignore"):
            r1 = np.where(uj > 0, li / np.where(uj > 0, uj, 1.0), np.inf)
            r2 = np.where(ui > 0, lj / np.where(ui > 0, ui, 1.0), np.inf)
        settled = np.minimum(r1, r2) >= tolerance
    g = kk.shape[-1]
    eye = np.eye(g, dtype=bool)
    unsettled = ~settled & ~eye
    return np.asarray(unsettled.any(axis=-1) | ~has, dtype=bool)


def question_bounds(k: npt.ArrayLike, n: npt.ArrayLike, *, kind: Kind,
                    confidence_level: float) -> tuple[FloatArray, FloatArray]:
    """The default exact family's interval of the largest gap (smallest ratio), per case.

    ``k``, ``n`` of shape ``(..., g)`` with ``g >= 3`` and ``n >= 1`` (two groups: the exact
    two-group interval, which :func:`fairprobe.stats.unconditional.unconditional_verdicts`
    judges without computing). The same bounds as the audit's summary reads from the family
    (:func:`fairprobe.stats.simultaneous.worst_pair`)."""
    from fairprobe.stats.simultaneous import family_intervals

    kk = np.asarray(k, dtype=np.int64)
    nn = np.asarray(n, dtype=np.int64)
    fam = family_intervals(kk, nn, kk.sum(-1, keepdims=True) - kk,
                           nn.sum(-1, keepdims=True) - nn, kind=kind,
                           confidence_level=confidence_level, method="exact")
    _, _, olo, ohi = fam.ordered()
    if kind == "difference":
        return np.maximum(0.0, olo.max(axis=-1)), ohi.max(axis=-1)
    lo = np.nanmin(olo, axis=-1)
    hi = np.minimum(1.0, np.nanmin(np.nan_to_num(ohi, nan=np.inf), axis=-1))
    return lo, hi


def adaptive_description(groups: int, batches: int, confidence_level: float) -> str:
    """The validity statement recorded in an adaptive audit's JSON."""
    fam, per = adaptive_levels(confidence_level, groups, batches)
    if groups <= 2:
        return (f"union bound over at most {batches} looks: both groups move at every batch "
                f"(sizes fixed in advance), the exact two-group interval at level "
                f"{fam:.6g} = 1 - alpha/{batches} at each look; all looks hold at once with "
                f"probability >= {confidence_level:g}")
    return (f"union bound over each group's {batches} grid sizes: exact Clopper-Pearson per "
            f"group at level {per:.6g} (miss (1 - (1 - alpha)^(1/{groups}))/{batches}), "
            f"Bonferroni over a group's looks and Sidak over the {groups} independent groups; "
            f"every look's intervals hold at once with probability >= {confidence_level:g}")



def simulate_adaptive(rates: npt.ArrayLike, totals: npt.ArrayLike, *, reps: int,
                      rng: np.random.Generator, kind: Kind, tolerance: float,
                      confidence_level: float = 0.95, batches: int = ADAPTIVE_BATCHES,
                      ) -> dict[str, npt.NDArray[Any]]:
    """``reps`` adaptive audits of groups with true ``rates`` and balanced shares ``totals``
    (three groups or more), vectorised: Bernoulli answers, the design's grid, open groups and
    look level, each look judged by the default exact family (:func:`question_bounds`).

    Returns ``verdict``, the last look's ``low``/``high`` bounds of the largest gap (smallest
    ratio) and the queries ``spent`` of each audit. Every group is taken as larger than its
    share and at least the minimum size at the first look (the benchmark's setting)."""
    from fairprobe.stats.finding import decide_array

    p = np.asarray(rates, dtype=np.float64)
    g = p.size
    fam, per = adaptive_levels(confidence_level, g, batches)
    grid = adaptive_grid(totals, batches)
    n = np.zeros((reps, g), dtype=np.int64)
    k = np.zeros((reps, g), dtype=np.int64)
    steps = np.zeros((reps, g), dtype=np.int64)
    open_ = np.ones((reps, g), dtype=bool)
    done = np.zeros(reps, dtype=bool)
    verdict = np.full(reps, "undetermined", dtype=object)
    lo, hi = np.zeros(reps), np.ones(reps)
    for _ in range(batches):
        move = open_ & (steps < batches) & ~done[:, None]
        live = move.any(axis=1)
        if not live.any():
            break
        upto = np.where(move, grid[np.minimum(steps, batches - 1), np.arange(g)[None, :]], n)
        k += rng.binomial(upto - n, p)
        n = upto
        steps += move
        l_, h_ = question_bounds(k[live], np.maximum(n[live], 1), kind=kind,
                                 confidence_level=fam)
        lo[live], hi[live] = l_, h_
        verdict[live] = decide_array(l_, h_, kind=kind, threshold=tolerance)
        open_[live] = open_groups(k[live], n[live], kind=kind, tolerance=tolerance,
                                  group_level=per)
        done |= verdict != "undetermined"
    return {"verdict": verdict.astype(str), "low": lo, "high": hi,
            "spent": n.sum(axis=1).astype(np.float64)}
