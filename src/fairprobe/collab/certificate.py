"""A certificate on a collaborative verdict: how many fabricating sources it withstands.

Setting. An auditor's estimate is the DP of a sum of per-source vectors,
``theta = DP(sum_j v_j)``, ``v_j = (a_j, A_j, b_j, B_j)``: the raw counts for ``none``, the
Auditopus-weighted vectors ``W_j`` for ``auditopus`` (the weights of a source depend only on its own
increments, Section V-D, so nobody else's fabrication changes them). A *budget-feasible
fabrication* by one source is any vector its entries could carry: at most ``n`` queries per round,
so at most ``M = n R`` queries after ``R`` rounds, any labels; under Auditopus its weighted vector is
``sum_t w_t delta_t`` with ``w_t <= 1``, inside the same set
``F_M = {(x, X, y, Y) real : 0 <= x <= X, 0 <= y <= Y, X + Y <= M}``.

``certified_k`` is the largest ``k`` such that no fabrication by ``k`` sources, each **added** to
the roster or **replacing** an existing source (any ``k`` of them, the auditor does not know which
are honest), moves the estimate across the fair band: an unfair verdict stays unfair, a fair one
fair. It is a proven lower bound on the true number (the bound below over-estimates what an
adversary can do, never under-estimates it):

For an unfair verdict with ``theta < -tau`` (the case ``theta > tau`` is the same after swapping the
groups), ``k`` sources replacing the set ``S`` (``|S| <= k``; ``S`` empty is "added") and adding
``F`` with mass ``<= k M`` reach at most::

    max_{S, F} DP(sum_{j not in S} v_j + F)
        <= max_{X in [0, kM]}  [ max_S (a - a_S + X) / (A - A_S + X)
                                - min_S (b - b_S) / (B - B_S + kM - X) ]

(extreme labels are optimal for any fixed ``S``, Lemma 1 of the paper; choosing ``S`` separately
per group can only help the adversary). Each inner optimum over ``|S| <= k`` is a fractional
program solved exactly by Dinkelbach's iteration (for a given ratio ``rho`` the best ``S`` is the
``k`` largest positive ``rho A_j - a_j``). Both inner terms are monotone in ``X``, so on a grid
``X_0 < ... < X_G`` the bound ``max_i [RA(X_{i+1}) - RB(kM - X_i)]`` is an upper bound over the
whole interval, not an approximation. The verdict holds against ``k`` sources if that bound is
``< -tau``; a fair verdict holds if the bounds in both directions stay ``<= tau``.

``flip_mass`` is the least fabricated query mass (added sources, continuous relaxation, so a lower
bound) that could move the estimate across the band: bisection on ``m`` of
``max_X (a + X)/(A + X) - b/(B + m - X)``.

The global verdict of a simulated audit is the median of the ``N + K`` reported estimates
(attackers report 0); :func:`global_certified_k` turns the per-auditor certificates into a sound
bound for it (see there).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from fairprobe._validation import check_int, check_real
from fairprobe.errors import DataError

__all__ = [
    "Certificate",
    "certify",
    "certify_many",
    "global_certified_k",
    "max_dp_bound",
    "robust_certified_k",
]

FloatArray = npt.NDArray[np.float64]

#: Safety margin on the bound (float rounding of the ratios).
_EPS = 1e-12


@dataclass(frozen=True)
class Certificate:
    """How many fabricating sources a verdict withstands.

    Attributes
    ----------
    estimate, tau : float
        The estimate and the half-width of the fair band.
    fair : bool
        The verdict ``|estimate| <= tau``.
    certified_k : int
        No fabrication by up to ``certified_k`` sources (added or replacing any of them), each
        with at most ``budget`` queries, moves the estimate across the band (proven lower bound).
    max_k : int
        The largest ``k`` examined (``certified_k == max_k`` means "at least").
    flip_mass : float or None
        Least fabricated query mass (added) that could move the estimate across the band
        (lower bound); None when no finite mass can.
    budget : int
        Queries one source can have reported (``n`` per round times the rounds).
    sources : int
        Number of sources in the estimate.
    """

    estimate: float
    tau: float
    fair: bool
    certified_k: int
    max_k: int
    flip_mass: float | None
    budget: int
    sources: int
    method: str = "pooled"

    def to_dict(self) -> dict[str, Any]:
        return {
            "estimate": None if math.isnan(self.estimate) else self.estimate,
            "tau": self.tau,
            "verdict": "fair" if self.fair else "unfair",
            "certified_k": self.certified_k,
            "max_k": self.max_k,
            "flip_mass": self.flip_mass,
            "budget": self.budget,
            "sources": self.sources,
            "method": self.method,
            "statement": (
                f"{'fair' if self.fair else 'unfair'}, holds against up to {self.certified_k} "
                f"fabricating auditors ({self.budget} queries each)"
            ),
        }


def _top_k_sums(
    gain: FloatArray, x: FloatArray, y: FloatArray, k: int
) -> tuple[FloatArray, FloatArray]:
    """Sums of ``x`` and ``y`` over the (at most ``k``) sources with the largest positive gain,
    per grid point (``gain``: (..., G, V); ``x``, ``y``: (..., V))."""
    V = gain.shape[-1]
    if k >= V:
        take = gain > 0
    else:
        kth = -np.partition(-gain, k - 1, axis=-1)[..., k - 1 : k]  # k-th largest gain
        greater = (gain > 0) & (gain > kth)
        tied = (gain > 0) & (gain == kth)
        # all gains above the k-th value, then as many tied ones as fit (equal gains: any will do)
        need = k - greater.sum(axis=-1, keepdims=True)
        take = greater | (tied & (np.cumsum(tied, axis=-1) <= need))
    xs = np.where(take, x[..., None, :], 0.0).sum(axis=-1)
    ys = np.where(take, y[..., None, :], 0.0).sum(axis=-1)
    return xs, ys


def _ratio_max(a: FloatArray, A: FloatArray, X: FloatArray, k: int) -> FloatArray:
    """``max_{|S| <= k} (sum a - a_S + X) / (sum A - A_S + X)`` per grid point (Dinkelbach).

    ``a``, ``A``: (..., V); ``X``: (..., G). Returns (..., G); ``-inf`` where every choice leaves
    the group empty.
    """
    sa = a.sum(axis=-1)[..., None]
    sA = A.sum(axis=-1)[..., None]
    with np.errstate(all="ignore"):
        rho = np.where(sA + X > 0, (sa + X) / (sA + X), 0.0)
    if k == 0:
        return np.where(sA + X > 0, rho, -np.inf)
    for _ in range(a.shape[-1] + 2):
        gain = rho[..., :, None] * A[..., None, :] - a[..., None, :]  # (..., G, V)
        a_s, A_s = _top_k_sums(gain, a, A, k)  # the chosen S: the k largest positive gains
        den = sA - A_s + X
        with np.errstate(all="ignore"):
            new = np.where(den > 0, (sa - a_s + X) / den, rho)
        if np.all(new <= rho + 1e-15):
            rho = np.maximum(rho, new)
            break
        rho = np.maximum(rho, new)
    # safety: rho is the optimum of the relaxed fractional program; guard emptiness
    return rho


def _ratio_min(b: FloatArray, B: FloatArray, Y: FloatArray, k: int) -> FloatArray:
    """``min_{|S| <= k} (sum b - b_S) / (sum B - B_S + Y)`` per grid point (Dinkelbach)."""
    sb = b.sum(axis=-1)[..., None]
    sB = B.sum(axis=-1)[..., None]
    with np.errstate(all="ignore"):
        rho = np.where(sB + Y > 0, sb / (sB + Y), 0.0)
    if k == 0:
        return rho
    for _ in range(b.shape[-1] + 2):
        gain = b[..., None, :] - rho[..., :, None] * B[..., None, :]  # removing j lowers ratio
        b_s, B_s = _top_k_sums(gain, b, B, k)
        den = sB - B_s + Y
        with np.errstate(all="ignore"):
            new = np.where(den > 0, (sb - b_s) / den, rho)
        if np.all(new >= rho - 1e-15):
            rho = np.minimum(rho, new)
            break
        rho = np.minimum(rho, new)
    return rho


def max_dp_bound(vectors: npt.ArrayLike, k: int, budget: float, grid: int = 128) -> FloatArray:
    """Upper bound on ``DP`` after ``k`` sources (of the ``V`` rows) are replaced or added with
    fabrications of at most ``budget`` queries each (see the module docstring).

    ``vectors``: (..., V, 4). Returns shape ``vectors.shape[:-2]``.
    """
    v = np.asarray(vectors, dtype=np.float64)
    k = check_int(k, "k", "max_dp_bound", lo=0)
    m = float(k) * float(budget)
    G = max(int(grid), 1) if m > 0 else 0
    xs = np.linspace(0.0, m, G + 1) if m > 0 else np.zeros(1)
    lead = v.shape[:-2]
    X = np.broadcast_to(xs, lead + xs.shape)
    a, A, b, B = (v[..., i] for i in range(4))
    kk = min(k, v.shape[-2])
    ra = _ratio_max(a, A, X, kk)  # nondecreasing in X
    rb = _ratio_min(b, B, m - X, kk)  # value at Y = m - X; nondecreasing in X
    if m == 0:
        out: FloatArray = (ra - rb)[..., 0]
        return out
    # on [X_i, X_{i+1}]: DP <= RA(X_{i+1}) - RB(m - X_i)
    bound = ra[..., 1:] - rb[..., :-1]
    res: FloatArray = np.max(bound, axis=-1)
    return res


def _mirror(v: FloatArray) -> FloatArray:
    return v[..., [2, 3, 0, 1]]


def _flip_mass(v: FloatArray, tau: float, fair: bool, est: float) -> float | None:
    """Least added mass (no replacement) that moves the estimate across the band."""
    tot = v.sum(axis=0)

    def reach(t: FloatArray, m: float) -> float:  # max DP(t + F), |F| <= m, concave in X
        xs = np.linspace(0.0, m, 257)
        with np.errstate(all="ignore"):
            vals = (t[0] + xs) / (t[1] + xs) - t[2] / (t[3] + m - xs)
        vals = np.where(np.isfinite(vals), vals, -np.inf)
        return float(vals.max())

    if fair:
        targets = [(tot, tau), (_mirror(tot[None])[0], tau)]  # push above +tau either way
    else:
        t = tot if est < 0 else _mirror(tot[None])[0]
        targets = [(t, -tau)]
    best: float | None = None
    for t, lim in targets:
        def flips(m: float, t: FloatArray = t, lim: float = lim) -> bool:
            r = reach(t, m)
            return r > lim if fair else r >= lim

        hi = max(float(t[1] + t[3]), 1.0)
        while not flips(hi):
            hi *= 2
            if hi > 1e15:
                break
        if not flips(hi):
            continue
        lo = 0.0
        for _ in range(60):
            mid = (lo + hi) / 2
            if flips(mid):
                hi = mid
            else:
                lo = mid
        best = lo if best is None else min(best, lo)
    return best


def certify(
    vectors: npt.ArrayLike,
    budget: int,
    tau: float = 0.05,
    *,
    max_k: int | None = None,
    grid: int = 128,
    method: str = "pooled",
) -> Certificate:
    """The certificate of the verdict ``|DP(sum_j v_j)| <= tau`` of one auditor.

    Parameters
    ----------
    vectors : array_like, shape (V, 4)
        The per-source vectors the estimate sums (raw counts, or Auditopus-weighted ``W_j``).
    budget : int
        Queries a single source can have reported: ``n`` times the number of rounds.
    tau : float
        Half-width of the fair band.
    max_k : int, optional
        Largest ``k`` examined (default: the number of sources).
    """
    v = np.asarray(vectors, dtype=np.float64)
    if v.ndim != 2 or v.shape[1] != 4:
        raise DataError(f"vectors must have shape (V, 4). Got {v.shape}.")
    if not np.isfinite(v).all() or (v < 0).any():
        raise DataError("vectors must hold finite, non-negative counts.")
    budget = check_int(budget, "budget", "certify", lo=0)
    tau = check_real(tau, "tau", "certify", lo=0.0, hi=1.0)
    V = v.shape[0]
    kmax = V if max_k is None else check_int(max_k, "max_k", "certify", lo=0)
    with np.errstate(over="ignore"):
        tot = v.sum(axis=0)
    if not np.isfinite(tot).all() or not np.isfinite(float(budget) * V):
        raise DataError("The counts are too large to add up in floating point; rescale them.")
    if tot[1] <= 0 or tot[3] <= 0:
        raise DataError("No statistics of one group: there is no verdict to certify.")
    est = float(tot[0] / tot[1] - tot[2] / tot[3])
    fair = abs(est) <= tau

    def holds(k: int) -> bool:
        if fair:
            up = float(max_dp_bound(v, k, budget, grid))
            down = float(max_dp_bound(_mirror(v), k, budget, grid))
            return up <= tau - _EPS and down <= tau - _EPS
        w = v if est < 0 else _mirror(v)
        return float(max_dp_bound(w, k, budget, grid)) < -tau - _EPS

    # holds(k) is monotone in k (more sources, more mass): bisection on [0, kmax]
    lo, hi = 0, kmax
    if holds(0):
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if holds(mid):
                lo = mid
            else:
                hi = mid - 1
    cert = lo
    return Certificate(
        estimate=est,
        tau=tau,
        fair=fair,
        certified_k=cert,
        max_k=kmax,
        flip_mass=_flip_mass(v, tau, fair, est),
        budget=budget,
        sources=V,
        method=method,
    )


def certify_many(
    vectors: npt.ArrayLike,
    budget: int,
    tau: float = 0.05,
    held: npt.ArrayLike | None = None,
    *,
    max_k: int | None = None,
    grid: int = 64,
) -> npt.NDArray[np.int64]:
    """``certified_k`` of each auditor (rows of ``vectors``, shape (N, V, 4)); -1 if no verdict.

    The same bound as :func:`certify`, evaluated for all auditors at once (``k = 0, 1, ...`` until
    every verdict has failed or ``max_k``).
    """
    v = np.asarray(vectors, dtype=np.float64)
    if v.ndim != 3 or v.shape[-1] != 4:
        raise DataError(f"vectors must have shape (N, V, 4). Got {v.shape}.")
    h = np.ones(v.shape[:-1], dtype=bool) if held is None else np.asarray(held, dtype=bool)
    v = np.where(h[..., None] & np.isfinite(v), v, 0.0)
    kmax = v.shape[1] if max_k is None else int(max_k)
    tot = v.sum(axis=1)
    ok = (tot[:, 1] > 0) & (tot[:, 3] > 0)
    with np.errstate(all="ignore"):
        est = np.where(ok, tot[:, 0] / tot[:, 1] - tot[:, 2] / tot[:, 3], 0.0)
    fair = np.abs(est) <= tau
    oriented = np.where((est > 0)[:, None, None], _mirror(v), v)
    out = np.where(ok, 0, -1).astype(np.int64)
    alive = ok.copy()
    for k in range(1, kmax + 1):
        if not alive.any():
            break
        idx = np.flatnonzero(alive)
        up = max_dp_bound(oriented[idx], k, budget, grid)
        holds = up < -tau - _EPS
        f = fair[idx]
        if f.any():
            up_f = max_dp_bound(v[idx], k, budget, grid)
            down_f = max_dp_bound(_mirror(v[idx]), k, budget, grid)
            holds = np.where(f, (up_f <= tau - _EPS) & (down_f <= tau - _EPS), holds)
        out[idx[holds]] = k
        alive[idx[~holds]] = False
    return out


def robust_certified_k(
    robust_est: npt.ArrayLike, auditopus_est: npt.ArrayLike, auditopus_k: npt.ArrayLike, tau: float
) -> npt.NDArray[np.int64]:
    """Certificates of ``robust`` verdicts from those of the Auditopus estimate (same weights).

    ``robust`` never reports an estimate closer to 0 than the Auditopus estimate over all sources
    (:mod:`fairprobe.collab.robust`), so while that one stays out of the band on its side, the
    ``robust`` verdict stays unfair: an unfair ``robust`` verdict whose Auditopus estimate is
    unfair on the same side inherits its ``certified_k``. Any other verdict gets 0 (no guarantee).
    """
    r = np.asarray(robust_est, dtype=np.float64)
    a = np.asarray(auditopus_est, dtype=np.float64)
    k = np.asarray(auditopus_k, dtype=np.int64)
    same = (np.abs(r) > tau) & (np.abs(a) > tau) & (np.sign(r) == np.sign(a))
    return np.where(np.isfinite(r), np.where(same, np.maximum(k, 0), 0), -1).astype(np.int64)


def global_certified_k(
    honest_estimates: npt.ArrayLike, honest_k: npt.ArrayLike, attackers: int, tau: float
) -> int:
    """Sound ``certified_k`` of the median-of-estimates verdict of a simulated audit.

    The global estimate is the median of the ``N`` honest estimates and ``K`` zeros. Against
    ``k`` more fabricating sources, an honest auditor whose own certificate is ``>= k`` keeps its
    side of the band; any other may move anywhere. Sources added report 0 too (``m = N + K + k``
    values); sources replacing honest auditors remove the ``k`` best-placed ones. The verdict
    "unfair" (median ``< -tau``, or ``> tau``) holds if more than half of the ``m`` values stay on
    its side; "fair" holds if fewer than half can be pushed out on either side.
    """
    est = np.asarray(honest_estimates, dtype=np.float64)
    ks = np.asarray(honest_k, dtype=np.int64)
    N = est.size
    vals = np.concatenate([est, np.zeros(attackers)])
    g = float(np.median(vals))
    best = 0
    for k in range(0, N + attackers + 1):
        keep = ks >= k
        ok = True
        for m_total, replaced in ((N + attackers + k, 0), (N + attackers, k)):
            need = m_total // 2 + 1
            if abs(g) > tau:
                side = est < -tau if g < 0 else est > tau
                stay = int((side & keep).sum()) - replaced
                ok &= stay >= need
            else:
                # fair: values in the band that stay (honest certified + zeros of attackers)
                inband = (np.abs(est) <= tau) & keep
                stay = int(inband.sum()) - replaced + attackers + (k if replaced == 0 else 0)
                ok &= stay >= need
        if not ok:
            break
        best = k
    return best
