r"""The default collaborative verdict ``bounded``: an interval that holds whichever ``K`` lie.

Every other collaborative method compares a point estimate with the fair band; this
one gives an interval for the model's DP and the three-way verdict of
:func:`fairprobe.stats.finding.decide` on it, with a guarantee by construction.

Estimand. ``theta = DP(sum_{j in H} c_j)`` over the records the *honest* auditors ``H`` query in
the ``R`` rounds of the audit (with ``R = ceil(max_i |D_i| / n)``, as the simulator and the
launcher set it, that is every record of their query sets: the population's DP).

What an honest auditor holds. For every source ``j`` of the roster the latest signed cumulative
vector ``c_j = (a_j, A_j, b_j, B_j)`` of round ``r_j`` (gossip delays it by a few rounds).
An honest source issues ``n`` queries a round until its set runs out, so if ``A_j + B_j < n r_j``
it has finished and ``c_j`` is its whole contribution; otherwise it may still add at most
``u_j = n (R - r_j)`` records of unknown group and answer ("unseen" mass, ``U = sum_j u_j``).

The interval (declared liar bound ``K``). The liars are an unknown set ``S*`` of at most ``K``
sources; sources excluded on a *proof* of fraud are liars for certain and are dropped, which
do not use up ``K``: the assumption is "at most ``K`` liars besides the proven ones". For any
hypothesis ``S`` (``|S| <= K``) the truth is ``DP(sum_{j not in S} c_j + F)`` for some unseen
``F >= 0`` of mass at most ``U``. The interval is the hull of all of them::

    high = max_{|S| <= K, |F| <= U} DP(sum_{j not in S} c_j + F),
    low  = min_{...} (the same with the groups swapped, negated).

**Theorem.** If the honest auditors report their counts truthfully and at most ``K`` sources lie
(in any way: fabricate, choose records, collude, know everything), ``low <= theta <= high``.
*Proof.* ``S*`` is one of the hypotheses and ``theta = DP(sum_{j not in S*} c_j + F*)`` with
``F*`` the honest records not yet held, of mass at most ``U``; proven liars are in ``S*``.
Hence ``theta`` is one of the values the max and min range over. The verdict of ``decide`` on
``[low, high]`` is therefore never wrong: "fair" needs the whole interval inside the band,
"unfair" the whole interval outside, and ``theta`` is inside the interval. Liars can widen the
interval (make the verdict "undetermined"), never move it off ``theta``. ``[]``

No sampling enters (honest counts are exact, unseen mass is worst-cased), so with honest
auditors the probability of a wrong verdict is 0 for every model, inside, on or outside the
band: the coverage statement is "conditional" on the two assumptions (truthful honest reports,
at most ``K`` liars), not asymptotic.

Computation. ``high`` is bounded from above exactly as in :mod:`fairprobe.collab.certificate`:
extreme answers of the unseen mass are optimal (group-A positives ``X``, group-B negatives
``U - X``), the best removal of ``<= K'`` sources is chosen separately for each group (a
relaxation: it can only widen the interval) by Dinkelbach's iteration, and both terms are
monotone in ``X``, so a grid over ``X`` gives a bound over the whole segment, never an
approximation from inside. The interval is therefore a superset of the hull above and the
theorem applies to it. ``tests/collab/test_bounded.py`` checks it against a brute force over
every ``S`` and every integer unseen split on small instances, and against every registered
attack in the simulator.

``certified_k`` is the largest ``k`` for which the interval with ``k`` liars still gives the same
decided verdict (intervals grow with ``k``); ``flip_mass`` (:func:`answer_flips`) the least
number of committed answers that must be false for the verdict to differ from the one the true
answers give; with every committed answer challenged with probability at least ``c``
(:class:`fairprobe.collab.verify.ChallengeCore`) they all escape with probability at most
``(1 - c)^flip_mass`` (:func:`escape_bound`; proof in docs/collab.md). For ``K <= 3`` the
interval is the hull itself (:func:`exact_hull`); for a model audited through samples,
:func:`sampling_hull`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from fairprobe import metrics as _metrics
from fairprobe.collab.certificate import _ratio_max, _ratio_min
from fairprobe.stats.finding import Finding, Question, decide_array

__all__ = [
    "CONSTRUCTION",
    "answer_flips",
    "bounded_intervals",
    "certified_ks",
    "dp_range",
    "escape_bound",
    "exact_hull",
    "flip_masses",
    "global_interval",
    "make_finding",
    "sampling_hull",
    "stratified_hull",
    "stratified_sensitivity",
    "unseen_mass",
]

FloatArray = npt.NDArray[np.float64]

#: Name of the interval construction in every collaborative :class:`Finding`.
CONSTRUCTION = "liar-hull"

#: Grid of the unseen split (the bound is valid for every grid; finer is tighter).
GRID = 8

_EPS = 1e-12


def unseen_mass(
    counts: npt.ArrayLike, held_round: npt.ArrayLike, n: int, rounds: int,
    querying: int | None = None,
) -> FloatArray:
    """Records a source may still add after the held entry: ``n (R - r_j)`` unless it finished.

    ``counts``: (..., V, 4) held cumulative vectors; ``held_round``: (..., V) their rounds (0: no
    entry held). A source with ``A + B < n r`` ran out of records (an honest one issues ``n`` a
    round while it has any), so it adds nothing more. ``querying``: the last round in which
    queries were issued (default ``rounds``); an audit that stops before ``rounds`` (the
    rounds that exhaust every query set) leaves the records not queried unseen, and entries
    of the closing rounds count as of round ``querying``.
    """
    c = np.asarray(counts, dtype=np.float64)
    r = np.asarray(held_round, dtype=np.float64)
    if querying is not None:
        r = np.minimum(r, float(querying))
    m = c[..., 1] + c[..., 3]
    done = m < n * r
    out: FloatArray = np.where(done, 0.0, n * np.maximum(rounds - r, 0.0))
    return out


def _mirror(v: FloatArray) -> FloatArray:
    return v[..., [2, 3, 0, 1]]


def _upper(v: FloatArray, k: int, unseen: FloatArray, grid: int) -> FloatArray:
    """Upper bound of ``DP(sum_{j not in S} v_j + F)`` over ``|S| <= k``, ``|F| <= unseen``."""
    a, A, b, B = (v[..., i] for i in range(4))
    kk = min(k, v.shape[-2])
    frac = np.linspace(0.0, 1.0, grid + 1)
    U = unseen[..., None]
    X = frac * U  # (..., G+1)
    ra = _ratio_max(a, A, X, kk)  # nondecreasing in X
    rb = _ratio_min(b, B, U - X, kk)  # nondecreasing in X
    # on [X_i, X_{i+1}]: DP <= RA(X_{i+1}) - RB(U - X_i); with U = 0 every point is the same
    with np.errstate(invalid="ignore"):
        bound = ra[..., 1:] - rb[..., :-1]
    out: FloatArray = np.max(bound, axis=-1)
    return out


def _widened(
    lo: FloatArray, hi: FloatArray, bad: npt.NDArray[np.bool_]
) -> tuple[FloatArray, FloatArray]:
    """``(lo, hi)`` widened by ``_EPS`` against float round-off and clipped to ``[-1, 1]``;
    ``nan`` (no verdict) where ``bad``."""
    hi = np.where(bad, np.nan, np.minimum(hi + _EPS, 1.0))
    lo = np.where(bad, np.nan, np.maximum(lo - _EPS, -1.0))
    return lo, hi


def dp_range(
    vectors: npt.ArrayLike, k: int, unseen: npt.ArrayLike, *, grid: int = GRID
) -> tuple[FloatArray, FloatArray]:
    """``(low, high)`` with ``low <= DP(sum_{j not in S} v_j + F) <= high`` for every ``|S| <= k``
    and every ``F >= 0`` of mass ``<= unseen`` (module docstring). ``nan`` where a group can be
    empty (no verdict)."""
    v = np.asarray(vectors, dtype=np.float64)
    u = np.broadcast_to(np.asarray(unseen, dtype=np.float64), v.shape[:-2])
    hi = _upper(v, int(k), u, grid)
    lo = -_upper(_mirror(v), int(k), u, grid)
    return _widened(lo, hi, ~(np.isfinite(hi) & np.isfinite(lo)))


def bounded_intervals(
    tables: npt.ArrayLike,
    held_round: npt.ArrayLike,
    *,
    n: int,
    rounds: int,
    max_liars: int,
    proven: npt.ArrayLike | None = None,
    grid: int = GRID,
    querying: int | None = None,
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """``(estimate, low, high)`` per auditor (rows of ``tables``, shape (N, V, 4)).

    ``held_round`` (N, V): round of each held entry (0: none); ``proven`` (N, V): sources the
    auditor excluded on a proof of fraud (dropped; ``max_liars`` more may lie besides them).
    """
    t = np.asarray(tables, dtype=np.float64)
    hr = np.asarray(held_round)
    pr = np.zeros(hr.shape, dtype=bool) if proven is None else np.asarray(proven, dtype=bool)
    keep = (hr >= 1) & ~pr
    v = np.where(keep[..., None], t, 0.0)
    u = np.where(keep, unseen_mass(t, hr, n, rounds, querying), 0.0)
    # a source with no entry held yet may be honest with up to n R records (unless proven)
    us = np.where((hr < 1) & ~pr, float(n * rounds), u)  # per source
    u = us.sum(axis=-1)
    # proven liars are dropped and do not use up K: the assumption is "at most K liars
    # besides those proven", so catching liars never costs a verdict
    k_left = np.full(pr.shape[:-1], int(max_liars), dtype=np.int64)
    tot = v.sum(axis=-2)
    with np.errstate(all="ignore"):
        est = tot[..., 0] / tot[..., 1] - tot[..., 2] / tot[..., 3]
    if v.ndim == 3 and v.shape[0] > 1:
        # auditors holding the same view (after the closing rounds: all of them) share one
        # interval: compute it once per distinct (table, unseen mass, liars left)
        key = np.concatenate([v.reshape(v.shape[0], -1), us, k_left[:, None]], axis=1)
        _, first, inv = np.unique(key, axis=0, return_index=True, return_inverse=True)
        if first.size < v.shape[0]:
            lo_u, hi_u = _intervals(v[first], us[first], k_left[first], grid)
            inv = inv.reshape(-1)
            return est, lo_u[inv], hi_u[inv]
    lo, hi = _intervals(v, us, k_left, grid)
    return est, lo, hi


#: Largest declared ``K`` whose interval is the exact liar hull (every removal enumerated);
#: beyond it, the relaxation of :func:`dp_range` (a superset).
EXACT_MAX_K = 3

#: Largest number of removals the exact hull enumerates per view (else the relaxation).
EXACT_MAX_SETS = 50_000


def _intervals(
    v: FloatArray, us: FloatArray, k_left: npt.NDArray[np.int64], grid: int
) -> tuple[FloatArray, FloatArray]:
    lo = np.full(v.shape[:-2], np.nan)
    hi = np.full(v.shape[:-2], np.nan)
    u = us.sum(axis=-1)
    for k in np.unique(k_left[k_left >= 0]):
        rows_k = k_left == k
        if v.ndim == 3 and _n_sets(v.shape[-2], int(k)) <= EXACT_MAX_SETS and k <= EXACT_MAX_K:
            lo[rows_k], hi[rows_k] = exact_hull(v[rows_k], us[rows_k], int(k))
            continue
        for seen in (True, False):  # with no unseen mass one grid point is exact
            rows = rows_k & ((u == 0) == seen)
            if rows.any():
                lo[rows], hi[rows] = dp_range(v[rows], int(k), u[rows], grid=1 if seen else grid)
    return lo, hi


def _n_sets(v: int, k: int) -> int:
    return sum(math.comb(v, j) for j in range(min(k, v) + 1))


def _removals(v: int, k: int) -> npt.NDArray[np.int64]:
    """Every set of at most ``k`` of ``v`` sources as rows of indices, padded with ``v``."""
    from itertools import combinations

    w = max(k, 1)
    rows = [[v] * w]
    for j in range(1, min(k, v) + 1):
        rows += [[*c, *([v] * (w - j))] for c in combinations(range(v), j)]
    return np.asarray(rows, dtype=np.int64)


def exact_hull(
    vectors: npt.ArrayLike, unseen: npt.ArrayLike, k: int
) -> tuple[FloatArray, FloatArray]:
    """The liar hull itself: ``min``/``max`` over every removal ``S`` (``|S| <= k``) of
    ``DP(sum_{j not in S} v_j + F)`` with unseen records ``F >= 0`` of mass at most
    ``sum_{j not in S} u_j`` (a liar's own future records are no part of ``theta``).

    For a fixed ``S`` the maximum over ``F`` puts all unseen mass on group-A positives ``X``
    and group-B negatives ``U - X`` (each such record raises the DP), and
    ``(a + X)/(A + X) - b/(B + U - X)`` is concave in ``X``, maximised in closed form
    (:func:`_reach`); the minimum is the same with the groups swapped. Removals that leave a
    group with no record are skipped (the honest auditors hold both groups, or there is no DP
    at all); ``nan`` when every one does. ``vectors`` (B, V, 4), ``unseen`` (B, V)."""
    v = np.asarray(vectors, dtype=np.float64)
    u = np.asarray(unseen, dtype=np.float64)
    B, V = v.shape[0], v.shape[1]
    if B == 0:
        return np.zeros(0), np.zeros(0)
    idx = _removals(V, int(k))  # (nS, k)
    vv = np.concatenate([v, np.zeros((B, 1, 4))], axis=1)
    uu = np.concatenate([u, np.zeros((B, 1))], axis=1)
    rest = v.sum(axis=1)[:, None, :] - vv[:, idx].sum(axis=2)  # (B, nS, 4)
    rest = np.maximum(rest, 0.0)  # float round-off of the subtraction
    U = np.maximum(u.sum(axis=1)[:, None] - uu[:, idx].sum(axis=2), 0.0)  # (B, nS)
    ok = (rest[..., 1] + U > 0) & (rest[..., 3] + U > 0)
    up = _sup_reach(rest, U)
    down = -_sup_reach(_mirror(rest), U)
    with np.errstate(invalid="ignore"):
        hi = np.where(ok, up, -np.inf).max(axis=1)
        lo = np.where(ok, down, np.inf).min(axis=1)
    return _widened(lo, hi, ~ok.any(axis=1) | ~np.isfinite(hi) | ~np.isfinite(lo))


def certified_ks(
    tables: npt.ArrayLike,
    held_round: npt.ArrayLike,
    verdicts: npt.ArrayLike,
    *,
    n: int,
    rounds: int,
    tau: float,
    start: int,
    proven: npt.ArrayLike | None = None,
    max_k: int | None = None,
    grid: int = GRID,
) -> npt.NDArray[np.int64]:
    """Largest ``k >= start`` whose interval still gives each auditor's decided verdict (-1 for
    an undetermined one). Intervals grow with ``k``, so ``k = start, start + 1, ...`` are tried
    until every verdict has failed or ``max_k`` (default: the number of sources)."""
    ver = np.asarray(verdicts)
    t = np.asarray(tables)
    kmax = t.shape[-2] if max_k is None else int(max_k)
    out = np.where(ver == "undetermined", -1, start).astype(np.int64)
    alive = ver != "undetermined"
    k = start
    while alive.any() and k < kmax:
        k += 1
        idx = np.flatnonzero(alive)
        pr = None if proven is None else np.asarray(proven)[idx]
        _, lo, hi = bounded_intervals(
            t[idx], np.asarray(held_round)[idx], n=n, rounds=rounds, max_liars=k, proven=pr,
            grid=grid,
        )
        same = decide_array(lo, hi, kind="difference", threshold=tau) == ver[idx]
        out[idx[same]] = k
        alive[idx[~same]] = False
    return out


def _reach(t: FloatArray, m: FloatArray) -> FloatArray:
    """``max_{X in [0, m]} (a + X)/(A + X) - b/(B + m - X)`` (concave in ``X``: closed form)."""
    a, A, b, B = (t[..., i] for i in range(4))
    sa = np.sqrt(np.maximum(A - a, 0.0))
    sb = np.sqrt(np.maximum(b, 0.0))
    with np.errstate(all="ignore"):
        x = np.where(sa + sb > 0, (sa * (B + m) - A * sb) / (sa + sb), m)
        x = np.clip(np.nan_to_num(x, nan=0.0), 0.0, m)
        val = (a + x) / (A + x) - b / (B + m - x)
    return np.where(np.isfinite(val), val, -np.inf)


def sampling_hull(
    vectors: npt.ArrayLike, k: int, alpha: float = 0.05
) -> tuple[FloatArray, FloatArray]:
    """The liar hull of a **sample**: for every removal ``S`` (``|S| <= k``), the exact box of
    the remaining counts (Clopper-Pearson intervals at level ``1 - alpha/2`` for each group's
    positive rate, so ``DP in [lo_A - hi_B, hi_A - lo_B]`` with probability ``>= 1 - alpha``),
    and the hull of all of them.

    When the honest auditors' queries are independent draws from the model's inputs (the
    subject is the model, not the records queried), the true liar set ``S*`` is one of the
    removals and its box covers the model's DP with probability ``>= 1 - alpha``, so the hull
    does too, whatever the liars report. ``vectors`` (B, V, 4). For ``k`` above
    :data:`EXACT_MAX_K` the boxes use Hoeffding's bound at the smallest group counts any
    removal leaves, around the relaxation of :func:`dp_range`."""
    from scipy.stats import beta

    v = np.asarray(vectors, dtype=np.float64)
    B, V = v.shape[0], v.shape[1]
    if B == 0:
        return np.zeros(0), np.zeros(0)
    q = float(alpha) / 4.0  # two groups, two sides
    if int(k) <= EXACT_MAX_K and _n_sets(V, int(k)) <= EXACT_MAX_SETS:
        idx = _removals(V, int(k))
        vv = np.concatenate([v, np.zeros((B, 1, 4))], axis=1)
        rest = np.maximum(v.sum(axis=1)[:, None, :] - vv[:, idx].sum(axis=2), 0.0)
        rest = np.round(rest)
        a, A, b, Bn = (rest[..., i] for i in range(4))
        ok = (A > 0) & (Bn > 0)
        with np.errstate(all="ignore"):
            lo_a = np.where(a > 0, beta.ppf(q, a, A - a + 1), 0.0)
            hi_a = np.where(a < A, beta.ppf(1 - q, a + 1, A - a), 1.0)
            lo_b = np.where(b > 0, beta.ppf(q, b, Bn - b + 1), 0.0)
            hi_b = np.where(b < Bn, beta.ppf(1 - q, b + 1, Bn - b), 1.0)
            hi = np.where(ok, hi_a - lo_b, -np.inf).max(axis=1)
            lo = np.where(ok, lo_a - hi_b, np.inf).min(axis=1)
        bad = ~ok.any(axis=1)
        return np.where(bad, np.nan, lo - _EPS), np.where(bad, np.nan, hi + _EPS)
    lo0, hi0 = dp_range(v, int(k), np.zeros(B))
    mins = []
    for col in (1, 3):
        g = np.sort(v[..., col], axis=-1)
        mins.append(g.sum(axis=-1) - g[..., V - min(int(k), V):].sum(axis=-1))
    with np.errstate(all="ignore"):
        h = np.sqrt(np.log(1.0 / q) / (2.0 * np.maximum(mins[0], 0.0))) + np.sqrt(
            np.log(1.0 / q) / (2.0 * np.maximum(mins[1], 0.0)))
    bad = ~((mins[0] > 0) & (mins[1] > 0))
    return (np.where(bad, np.nan, np.maximum(lo0 - h, -1.0)),
            np.where(bad, np.nan, np.minimum(hi0 + h, 1.0)))


def _removed_sums(x: FloatArray, idx: npt.NDArray[np.int64]) -> FloatArray:
    """``sum_{j not in S} x_j`` for every removal row of ``idx``: (B, V, ...) -> (B, nS, ...)."""
    pad = np.zeros((x.shape[0], 1, *x.shape[2:]))
    xx = np.concatenate([x, pad], axis=1)
    out: FloatArray = np.maximum(x.sum(axis=1)[:, None] - xx[:, idx].sum(axis=2), 0.0)
    return out


def stratified_hull(
    vectors: npt.ArrayLike, sizes: npt.ArrayLike, k: int, alpha: float = 0.05, *,
    replacement: bool = False,
) -> tuple[FloatArray, FloatArray]:
    r"""The liar hull of a **stratified sample**: each source ``j`` queried ``A_j`` of the
    ``M_jA`` group-A records (``B_j`` of ``M_jB`` group-B ones) of its own query set, drawn
    uniformly (without replacement unless ``replacement``); the estimand is the DP of the
    union of the honest query sets (the population), whatever the sizes of the strata.

    For a removal ``S`` (``|S| <= k``) and group ``g``, the positives of the remaining strata
    ``P_g = sum_j P_jg`` are estimated by ``T_g = sum_j M_jg a_j / A_j`` (Horvitz-Thompson).
    Given the group counts of the sample, stratum ``j``'s group-``g`` records are a uniform
    sample of size ``A_j`` from ``M_jg`` records, independent across strata, so by Serfling's
    bound on the moment generating function of a without-replacement sum (each draw in
    ``[0, M_jg / A_j]``) and Chernoff, ``P(T_g - P_g >= t) <= exp(-2 t^2 / v_g)`` with
    ``v_g = sum_j M_jg^2 (1 - (A_j - 1) / M_jg) / A_j`` over the strata not exhausted (an
    exhausted stratum, ``A_j = M_jg``, is known exactly; with replacement the factor is 1);
    the same for the lower tail. A stratum with no group-``g`` record queried contributes any
    ``P_jg`` in ``[0, M_jg]``; and always ``x_g <= P_g <= x_g + M_g - m_g`` (queried positives
    plus the records not queried). With ``t_g = sqrt(v_g log(4/alpha) / 2)`` each of the four
    one-sided events fails with probability ``<= alpha/4``, so the box
    ``[lo_A - hi_B, hi_A - lo_B]`` of ``S`` covers its DP with probability ``>= 1 - alpha``.
    The true liar set is one of the removals, hence the hull covers the honest population's DP
    with probability ``>= 1 - alpha`` whatever the liars report (their declared sizes
    included). ``vectors`` (B, V, 4); ``sizes`` (B, V, 2) the declared ``(M_jA, M_jB)``
    (a source declaring its counts is a census of itself). ``nan`` where a group is empty."""
    v = np.asarray(vectors, dtype=np.float64)
    M = np.maximum(np.asarray(sizes, dtype=np.float64), v[..., [1, 3]])
    B, V = v.shape[0], v.shape[1]
    if B == 0:
        return np.zeros(0), np.zeros(0)
    idx = _removals(V, min(int(k), V))
    logq = math.log(4.0 / float(alpha))
    lows, highs = [], []
    for g in (0, 1):
        pos, cnt, m = v[..., 2 * g], v[..., 2 * g + 1], M[..., g]
        seen = cnt > 0
        exact = seen & (cnt >= m) & (not replacement)
        samp = seen & ~exact
        with np.errstate(all="ignore"):
            ht = np.where(samp, m * pos / np.where(seen, cnt, 1.0), 0.0)
            fpc = 1.0 if replacement else np.clip(1.0 - (cnt - 1.0) / np.where(m > 0, m, 1.0),
                                                  0.0, 1.0)
            var = np.where(samp, m * m * fpc / np.where(seen, cnt, 1.0), 0.0)
        cols = np.stack([
            np.where(exact, pos, 0.0), ht, var,
            np.where(~seen, m, 0.0),  # strata with nothing of this group queried: any count
            pos, cnt, m,
        ], axis=-1)  # (B, V, 7)
        r = _removed_sums(cols, idx)  # (B, nS, 7)
        ex, T, vv, free, x, mq, Mg = (r[..., i] for i in range(7))
        t = np.sqrt(vv * logq / 2.0)
        det_lo, det_hi = x, x + (Mg - mq)
        if replacement:
            det_lo, det_hi = np.zeros_like(x), Mg
        p_lo = np.maximum(ex + T - t, det_lo)
        p_hi = np.minimum(ex + T + t + free, det_hi)
        with np.errstate(all="ignore"):
            lows.append(np.where(Mg > 0, np.clip(p_lo / Mg, 0.0, 1.0), np.nan))
            highs.append(np.where(Mg > 0, np.clip(p_hi / Mg, 0.0, 1.0), np.nan))
    ok = np.isfinite(lows[0]) & np.isfinite(lows[1])
    with np.errstate(invalid="ignore"):
        hi = np.where(ok, highs[0] - lows[1], -np.inf).max(axis=1)
        lo = np.where(ok, lows[0] - highs[1], np.inf).min(axis=1)
    bad = ~ok.any(axis=1)
    return (np.where(bad, np.nan, np.maximum(lo - _EPS, -1.0)),
            np.where(bad, np.nan, np.minimum(hi + _EPS, 1.0)))


def stratified_estimate(vectors: npt.ArrayLike, sizes: npt.ArrayLike) -> FloatArray:
    """The point estimate that goes with :func:`stratified_hull`: each group's rate over the
    strata that queried it, ``sum_j T_jg / sum_j M_jg`` (an exhausted stratum counts its
    positives, a sampled one its Horvitz-Thompson ``M_jg a_j / A_j``), and their difference.
    The pooled DP of the queried records weighs each stratum by how much it happened to query,
    so it can lie outside the population interval; this weighs it by its declared size.
    ``vectors`` (B, V, 4), ``sizes`` (B, V, 2) -> (B,); ``nan`` where a group was never
    queried."""
    v = np.asarray(vectors, dtype=np.float64)
    M = np.maximum(np.asarray(sizes, dtype=np.float64), v[..., [1, 3]])
    rates = []
    for g in (0, 1):
        pos, cnt, m = v[..., 2 * g], v[..., 2 * g + 1], M[..., g]
        seen = cnt > 0
        with np.errstate(all="ignore"):
            t = np.where(seen, m * pos / np.where(seen, cnt, 1.0), 0.0).sum(axis=-1)
            mg = np.where(seen, m, 0.0).sum(axis=-1)
            rates.append(np.where(mg > 0, t / np.where(mg > 0, mg, 1.0), np.nan))
    return np.asarray(rates[0] - rates[1], dtype=np.float64)


def stratified_sensitivity(
    vectors: npt.ArrayLike, sizes: npt.ArrayLike, k: int
) -> FloatArray:
    """``1 / L``: the least number of answers one unit of movement of an endpoint of
    :func:`stratified_hull` needs. One flipped answer of stratum ``j``, group ``g`` moves
    ``T_g`` by ``M_jg / A_j`` and the deterministic bounds by 1 (the widths depend on the
    groups only, not on the answers), so every box endpoint, hence the hull's, by at most
    ``L = max_g max_j (M_jg / A_j) / M_g^-`` with ``M_g^-`` the least group size a removal of
    ``k`` sources leaves. (B, V, 4), (B, V, 2) -> (B,)."""
    v = np.asarray(vectors, dtype=np.float64)
    M = np.maximum(np.asarray(sizes, dtype=np.float64), v[..., [1, 3]])
    out = np.full(v.shape[0], np.inf)
    for g in (0, 1):
        cnt, m = v[..., 2 * g + 1], M[..., g]
        with np.errstate(all="ignore"):
            step = np.where(cnt > 0, m / np.where(cnt > 0, cnt, 1.0), 1.0).max(axis=-1)
        ms = np.sort(m, axis=-1)
        kk = min(int(k), m.shape[-1])
        rest = ms.sum(axis=-1) - (ms[..., m.shape[-1] - kk:].sum(axis=-1) if kk else 0.0)
        with np.errstate(all="ignore"):
            out = np.minimum(out, np.where(rest > 0, rest / np.maximum(step, 1.0), 0.0))
    res: FloatArray = out
    return res


def _sup_reach(t: FloatArray, m: FloatArray) -> FloatArray:
    """``sup_{X in [0, m]} (a + X)/(A + X) - b/(B + m - X)``, with the limits at the ends
    where a group is empty (``A = 0``: the A rate is 1 for every ``X > 0``; ``B = 0``: the B
    rate tends to 0 as ``X -> m``), so that an empty group never hides the supremum."""
    a, A, b, B = (t[..., i] for i in range(4))
    inner = _reach(t, m)
    with np.errstate(all="ignore"):
        ra0 = np.where(A > 0, a / A, np.where(m > 0, 1.0, np.nan))
        rb0 = np.where(B + m > 0, b / (B + m), np.nan)
        ra1 = np.where(A + m > 0, (a + m) / (A + m), np.nan)
        rb1 = np.where(B > 0, b / B, np.where(m > 0, 0.0, np.nan))
        ends = np.fmax(ra0 - rb0, ra1 - rb1)
    out: FloatArray = np.fmax(inner, np.where(np.isfinite(ends), ends, -np.inf))
    return out


def flip_masses(tables: npt.ArrayLike, tau: float, verdicts: npt.ArrayLike) -> FloatArray:
    """Least fabricated mass that, added to the pooled held counts (rows (..., V, 4) summed over
    sources), moves the estimate across the band: out of it for a "fair" verdict (either side),
    into it for an "unfair" one (continuous relaxation, so a lower bound); ``nan`` for an
    undetermined verdict or when no finite mass can. Vectorised bisection on the mass."""
    tot = np.asarray(tables, dtype=np.float64).sum(axis=-2)
    ver = np.asarray(verdicts)
    with np.errstate(all="ignore"):
        est = tot[..., 0] / tot[..., 1] - tot[..., 2] / tot[..., 3]
    fair = ver == "fair"
    mir = _mirror(tot)
    # the direction to push: for "unfair" towards the band, for "fair" both ways (least of two)
    up_t = np.where((est < 0)[..., None] | fair[..., None], tot, mir)
    scale = np.maximum(tot[..., 1] + tot[..., 3], 1.0)

    def solve(t: FloatArray, lim: FloatArray, strict: bool, scale: FloatArray) -> FloatArray:
        hi = scale * 64.0
        ok = (_reach(t, hi) > lim) if strict else (_reach(t, hi) >= lim)
        lo = np.zeros_like(hi)
        for _ in range(40):  # 2^-40 of 64 times the pooled mass: far below one answer
            mid = (lo + hi) / 2
            r = _reach(t, mid)
            f = (r > lim) if strict else (r >= lim)
            hi = np.where(f, mid, hi)
            lo = np.where(f, lo, mid)
        return np.where(ok, lo, np.nan)

    out: FloatArray = np.full(est.shape, np.nan)
    uf = ver == "unfair"
    if uf.any():
        out[uf] = solve(up_t[uf], np.full(int(uf.sum()), -float(tau)), False, scale[uf])
    if fair.any():
        lim, sc = np.full(int(fair.sum()), float(tau)), scale[fair]
        out[fair] = np.fmin(solve(tot[fair], lim, True, sc), solve(mir[fair], lim, True, sc))
    return out


def answer_flips(
    tables: npt.ArrayLike,
    held_round: npt.ArrayLike,
    low: npt.ArrayLike,
    high: npt.ArrayLike,
    verdicts: npt.ArrayLike,
    *,
    tau: float,
    max_liars: int,
    proven: npt.ArrayLike | None = None,
    m_min: npt.ArrayLike | None = None,
) -> FloatArray:
    r"""Least number of committed answers that must be false for the verdict to differ from
    the one the true answers give (a lower bound, ``nan`` for an undetermined verdict).

    Flipping one answer of group A changes that group's positives by one and nothing else, so
    for every hypothesis of the hull (a removal ``S`` of at most ``K`` sources and any unseen
    mass) it moves ``DP`` by at most ``1 / A_{-S}`` (``1 / B_{-S}`` for group B), where
    ``A_{-S}`` is the group-A count held outside ``S``. Hence ``f`` flips move each endpoint of
    the interval by at most ``f / m_min`` with ``m_min = min_S min(A_{-S}, B_{-S})`` (``S``
    the ``K`` largest holders of the group), and the verdict of ``decide`` can only change
    once an endpoint crosses a band edge: ``f >= gap * m_min`` where ``gap`` is the distance
    from the interval to the nearest band edge it must cross (``low - tau`` or ``-tau - high``
    for "unfair"; ``min(tau - high, low + tau)`` for "fair"). The true-answer view and the
    reported one differ by exactly the falsified answers, so if their verdicts differ at least
    ``floor(gap * m_min)`` answers were falsified, whoever falsified them. ``m_min`` may be
    given (a stratified interval: :func:`stratified_sensitivity`).
    """
    t = np.asarray(tables, dtype=np.float64)
    hr = np.asarray(held_round)
    pr = np.zeros(hr.shape, dtype=bool) if proven is None else np.asarray(proven, dtype=bool)
    keep = (hr >= 1) & ~pr
    v = np.where(keep[..., None], t, 0.0)
    k = max(int(max_liars), 0)
    out: FloatArray = np.full(v.shape[:-2], np.nan)
    mins = []
    for col in (1, 3):
        g = np.sort(v[..., col], axis=-1)  # ascending: the k largest are the last k
        tot = g.sum(axis=-1)
        top = g[..., g.shape[-1] - min(k, g.shape[-1]):].sum(axis=-1) if k else 0.0
        mins.append(tot - top)
    m_min = np.minimum(mins[0], mins[1]) if m_min is None else np.asarray(m_min, dtype=float)
    lo = np.asarray(low, dtype=np.float64)
    hi = np.asarray(high, dtype=np.float64)
    ver = np.asarray(verdicts)
    tau = float(tau)
    with np.errstate(invalid="ignore"):
        gap = np.where(
            ver == "fair", np.minimum(tau - hi, lo + tau),
            np.where(lo > tau, lo - tau, -tau - hi),
        )
    ok = (ver != "undetermined") & np.isfinite(gap) & (m_min > 0)
    out[ok] = np.floor(np.maximum(gap[ok], 0.0) * m_min[ok] + 1e-9)
    return out


def escape_bound(flip_mass: float | None, rate: float | None) -> float | None:
    """``(1 - c)^F``: the chance that ``F`` falsified answers, each challenged with probability
    at least ``c`` (:class:`fairprobe.collab.verify.ChallengeCore`), are all left unchallenged
    (None without verification). With ``F`` from :func:`answer_flips` it bounds the chance
    that this verdict differs from the true answers' verdict and no proof of fraud was found
    (docs/collab.md, "The escape bound")."""
    if rate is None or flip_mass is None or not math.isfinite(float(flip_mass)):
        return None
    return float(math.exp(float(flip_mass) * math.log1p(-float(rate)))) if rate < 1 else 0.0


def global_interval(
    lows: npt.ArrayLike, highs: npt.ArrayLike, max_liars: int, *, liar_reports: int = 0,
    majority: bool = True,
) -> tuple[float, float]:
    """The regulator's interval from the ``N`` honest intervals and ``liar_reports`` reports of
    ``[0, 0]`` (the attackers' "fair"): the ``(k+1)``-th largest low and ``(k+1)``-th smallest
    high, with ``k = max(K, floor((V - 1) / 2))`` over the ``V`` reports (``majority``; else
    ``k = K``). If at most ``k`` reports are fake and every honest one covers ``theta``, this
    covers it too, whatever the fake ones say: so ``K + 1 .. floor((V-1)/2)`` fake reports
    (an honest majority) cannot flip it. When the honest intervals agree (after the closing
    rounds they do) the wider allowance costs nothing: the ``(k+1)``-th statistic is still
    theirs. If the interval is empty, more than ``k`` reports lie: ``nan`` (undetermined).
    With ``majority``, the interval of ``k = K`` must be non-empty too: more than ``K``
    contradicting reports prove the declared bound wrong, and the verdict is then withheld
    rather than trusted to the honest majority alone."""
    lo = np.concatenate([np.asarray(lows, dtype=np.float64), np.zeros(liar_reports)])
    hi = np.concatenate([np.asarray(highs, dtype=np.float64), np.zeros(liar_reports)])
    k = int(max_liars)
    if majority and k >= 0 and (lo.size - 1) // 2 > k:
        if math.isnan(global_interval(lows, highs, k, liar_reports=liar_reports,
                                      majority=False)[0]):
            return math.nan, math.nan
        k = (lo.size - 1) // 2
    if k >= lo.size or np.isnan(lo).all():
        return math.nan, math.nan
    lo_s = np.sort(np.where(np.isnan(lo), -np.inf, lo))[::-1]
    hi_s = np.sort(np.where(np.isnan(hi), np.inf, hi))
    if lo_s[k] > hi_s[k]:
        # more than K reports contradict the others: more liars than declared, no verdict
        return math.nan, math.nan
    return float(lo_s[k]), float(hi_s[k])


def make_finding(
    estimate: float,
    low: float,
    high: float,
    *,
    tau: float,
    subject: str,
    max_liars: int,
    method: str = "bounded",
    counts: dict[str, Any] | None = None,
    reason: str | None = None,
    level: float = 0.95,
    construction: str = CONSTRUCTION,
) -> Finding:
    """The :class:`Finding` of one collaborative verdict (``bounded``: the liar hull, coverage
    conditional on at most ``max_liars`` liars; any other method: its point estimate, no
    coverage)."""
    q = Question(
        metric=_metrics.DP.name, kind="difference", threshold=float(tau),
        groups=("A", "B"), subject=subject, rates=("selection_rate",),
    )
    c = {"max_liars": int(max_liars), "method": method, **(counts or {})}
    if method == "bounded":
        # what the coverage is conditional on, in words (a report prints it)
        c["condition"] = (
            f"at most {int(max_liars)} auditor(s) lie besides those proven, and honest ones "
            "report their answers truthfully"
            + ("; the honest queries are independent draws from the model's inputs"
               if c.get("census") is False and subject == "model" else "")
            + ("; each honest auditor's queries are a uniform sample of its own query set, "
               "whose group sizes it declares truthfully"
               if construction.endswith("stratified-sample") else "")
        )
    if method != "bounded":
        return Finding(q, estimate, estimate, estimate, level, "point-estimate", "none",
                       reason=reason, counts=c)
    if reason is None and decide_array(low, high, kind="difference", threshold=tau) == \
            "undetermined":
        reason = (
            "the interval that holds whichever "
            f"{int(max_liars)} source(s) lie, "
            + ("at its level, for the records not queried" if construction != CONSTRUCTION
               else "with the records not yet held")
            + ", meets the band edge"
            if math.isfinite(low) and math.isfinite(high)
            else "no interval: a group with no data, or more reports contradict the others than the "
            "regulator's rule allows"
        )
    return Finding(q, estimate, low, high, level, construction, "conditional", reason=reason,
                   counts=c)
