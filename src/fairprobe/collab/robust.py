"""The recommended aggregation ``robust``: Auditopus weights plus influence screening.

Auditopus (Section V) down-weights sources whose increments are inconsistent with their
own history; a liar that is *self-consistent* from round 1 keeps its weight, and with the maximal
mass ``n R`` it can steer the pooled estimate anywhere. ``robust`` keeps the Auditopus weights
``W_j`` (so the adaptive attacker stays neutralised) and adds a cross-source check of each
source's *influence* on the estimate, the quantity a fairwasher must make large:

1. **Trusted sources** for the scale: those whose Auditopus weight ratio
   ``|W_j| / |c_j|`` (weighted over raw queries) is at least ``rmin`` times the median ratio; the
   adaptive attacker's ratio is ~1/10 of an honest one, so it does not shrink the scale.
2. **Core.** The ``core`` fraction of trusted sources whose per-group rates ``W_a/W_A``,
   ``W_b/W_B`` are closest (L1) to the coordinate-wise median rates; its pooled estimate
   ``theta_0 = DP(sum_{j in core} W_j)`` fixes the direction ``s = sign(theta_0)`` a fairwasher
   pushes against.
3. **Forward search.** With ``S`` the current set, the *toward-the-band influence* of source ``j``
   is ``I_j = -s [DP(sum_S W + W_j 1[j not in S]) - DP(sum_S W - W_j 1[j in S])]`` (what including
   ``j`` does to the estimate, positive when it moves it towards 0). ``S`` becomes the sources
   with ``I_j - med <= c * 1.4826 * MAD`` (median and MAD of ``I`` over trusted sources of ``S``),
   repeated until ``S`` is stable (at most ``iters`` times). Starting from the core, not from all
   sources, avoids masking: several liars inflate the scale of the influences they are measured
   against.
4. The estimate is ``DP(sum_{j in S} W_j)``, unless that is closer to 0 than the Auditopus
   estimate ``DP(sum_j W_j)`` over all sources, which is then kept: the screening never moves the
   estimate *towards* the band. This makes every Auditopus certificate
   (:mod:`fairprobe.collab.certificate`) a certificate of an unfair ``robust`` verdict too.

5. **Decisive screening.** If that estimate is in the fair band ``[-tau, tau]``, the screening is
   run again with the lower threshold ``c_decisive`` (default 2) on *both* tails of the
   influence (rules 3-4 otherwise unchanged); if that estimate is out of the band, it is
   reported instead. Several calibrated liars with moderate rates stay within ``c`` MADs of
   heterogeneous honest auditors; the lower threshold catches them, and applying it only when it
   decides the verdict keeps the accuracy of ``c`` everywhere else (Table II unchanged). Rule 4
   still holds for both screenings, so the estimate is never closer to 0 than the Auditopus one.
   The price is asymmetric and stated in ``docs/collab.md``: rule 5 can only turn "fair" into
   "unfair", so an honest audit of a *fair* model is called unfair more often (measured: 20% on
   a model with DP = 0, 48% at DP = -0.033, against 0% and 15% without rule 5), and a liar
   pushing *away* from the band, to accuse a fair model, is never hindered by it.
   ``c_decisive=None`` gives the method without rule 5.

The screening is one-sided on purpose (the threat model is fairwashing: making an unfair model
look fair): an honest source pulling away from the band is never removed, so the screening never
moves the estimate *towards* the band; the price is a small bias away from it (measured in
``docs/collab.md``, with what each ingredient buys).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from fairprobe._validation import check_int, check_real
from fairprobe.errors import DataError

__all__ = ["RobustParams", "RobustResult", "robust_estimate"]

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class RobustParams:
    """Parameters of :func:`robust_estimate` (defaults: the recommended method)."""

    c: float = 4.0
    core: float = 0.5
    rmin: float = 0.5
    iters: int = 20
    one_sided: bool = True  # ablation: False screens both tails of the influence
    c_away: float | None = None  # threshold for sources pulling away from the band (None: none)
    forward: bool = True  # ablation: False starts the screening from all sources (masking)
    c_decisive: float | None = 2.0  # rule 5: threshold of the decisive screening (None: off)
    decisive_two_sided: bool = True  # rule 5 screens both tails (False: one tail, as rule 3)
    tau: float = 0.05  # half-width of the fair band (rule 5 only)

    def __post_init__(self) -> None:
        o = "RobustParams"
        check_real(self.c, "c", o, lo=0.0)
        if self.c_decisive is not None:
            check_real(self.c_decisive, "c_decisive", o, lo=0.0)
        check_real(self.tau, "tau", o, lo=0.0, hi=1.0)
        check_real(self.core, "core", o, lo=0.0, hi=1.0, closed="right")
        check_real(self.rmin, "rmin", o, lo=0.0)
        check_int(self.iters, "iters", o, lo=1)


@dataclass(frozen=True)
class RobustResult:
    """Estimates and the sources kept, vectorised over the leading axes of the input."""

    estimate: FloatArray
    kept: BoolArray
    core: BoolArray
    influence: FloatArray  # toward-the-band influence at the last iteration
    auditopus: FloatArray  # DP(sum_j W_j) over all held sources
    decisive: BoolArray  # where rule 5 reported the screening at ``c_decisive``


def _dp(t: FloatArray) -> FloatArray:
    with np.errstate(all="ignore"):
        out: FloatArray = t[..., 0] / t[..., 1] - t[..., 2] / t[..., 3]
    return np.where((t[..., 1] > 0) & (t[..., 3] > 0), out, np.nan)


def _nanmedian(x: FloatArray, ok: BoolArray) -> FloatArray:
    v = np.where(ok, x, np.nan)
    out = np.full(v.shape[:-1], np.nan)
    rows = ok.any(axis=-1)
    if rows.any():
        out[rows] = np.nanmedian(v[rows], axis=-1)
    return out


def robust_estimate(
    weighted: npt.ArrayLike,
    tables: npt.ArrayLike,
    held: npt.ArrayLike | None = None,
    params: RobustParams | None = None,
) -> RobustResult:
    """The ``robust`` estimate of each auditor (see the module docstring).

    Parameters
    ----------
    weighted : array_like, shape (..., V, 4)
        The Auditopus-weighted vectors ``W_j`` of every source.
    tables : array_like, shape (..., V, 4)
        The raw counts ``M[j].c`` held for every source (same round as ``W_j``).
    held : array_like of bool, shape (..., V), optional
        Sources actually received (default: all).
    params : RobustParams, optional
    """
    p = params or RobustParams()
    W = np.asarray(weighted, dtype=np.float64)
    T = np.asarray(tables, dtype=np.float64)
    if W.shape != T.shape or W.ndim < 2 or W.shape[-1] != 4:
        raise DataError(
            f"weighted and tables must both have shape (..., V, 4). Got {W.shape} and {T.shape}."
        )
    h = np.ones(W.shape[:-1], dtype=bool) if held is None else np.asarray(held, dtype=bool)
    h = h & np.isfinite(W).all(axis=-1) & ((W[..., 1] + W[..., 3]) > 0)
    est, kept, core, infl, full = _screen(W, T, h, p, p.c, p.one_sided)
    decisive = np.zeros(est.shape, dtype=bool)
    if p.c_decisive is not None:
        in_band = np.isfinite(est) & (np.abs(est) <= p.tau)
        if in_band.any():
            est2, kept2, _, infl2, _ = _screen(
                W, T, h, p, p.c_decisive, not p.decisive_two_sided
            )
            decisive = in_band & np.isfinite(est2) & (np.abs(est2) > p.tau)
            est = np.where(decisive, est2, est)
            kept = np.where(decisive[..., None], kept2, kept)
            infl = np.where(decisive[..., None], infl2, infl)
    return RobustResult(
        estimate=est, kept=kept, core=core, influence=infl, auditopus=full, decisive=decisive
    )


def _screen(
    W: FloatArray, T: FloatArray, h: BoolArray, p: RobustParams, c: float, one_sided: bool
) -> tuple[FloatArray, BoolArray, BoolArray, FloatArray, FloatArray]:
    """Rules 1-4 with threshold ``c``: (estimate, kept, core, influence, Auditopus estimate)."""
    m = W[..., 1] + W[..., 3]
    mt = T[..., 1] + T[..., 3]
    ratio = np.where(mt > 0, m / np.where(mt > 0, mt, 1.0), 0.0)
    trusted = h & (ratio >= p.rmin * _nanmedian(ratio, h)[..., None])
    with np.errstate(all="ignore"):
        ra = np.where(W[..., 1] > 0, W[..., 0] / W[..., 1], np.nan)
        rb = np.where(W[..., 3] > 0, W[..., 2] / W[..., 3], np.nan)
    ok = trusted & np.isfinite(ra) & np.isfinite(rb)
    dist = np.abs(ra - _nanmedian(ra, ok)[..., None]) + np.abs(rb - _nanmedian(rb, ok)[..., None])
    dist = np.where(ok, dist, np.inf)
    n_core = np.maximum(np.ceil(p.core * ok.sum(axis=-1)).astype(np.int64), 1)
    kth = np.take_along_axis(np.sort(dist, axis=-1), (n_core - 1)[..., None], axis=-1)
    core = ok & (dist <= kth)
    Wh = np.where(h[..., None], W, 0.0)
    sgn = np.nan_to_num(np.sign(_dp(np.where(core[..., None], Wh, 0.0).sum(axis=-2))))
    if not one_sided:
        sgn = np.where(sgn == 0, 1.0, sgn)
    act = core.copy() if p.forward else h.copy()
    infl = np.zeros(W.shape[:-1])
    screen = sgn != 0
    for _ in range(p.iters):
        base = np.where(act[..., None], Wh, 0.0)
        tot = base.sum(axis=-2, keepdims=True)
        with_j = tot - base + Wh
        without_j = tot - base
        infl = -sgn[..., None] * (_dp(with_j) - _dp(without_j))
        infl = np.where(np.isfinite(infl), infl, 0.0)
        ref = act & trusted
        med = _nanmedian(infl, ref)
        mad = 1.4826 * _nanmedian(np.abs(infl - med[..., None]), ref)
        lim = np.where(np.isfinite(med), c * np.nan_to_num(mad), np.inf)[..., None]
        dev = infl - np.nan_to_num(med)[..., None]
        if p.c_away is not None:
            lim_away = np.where(np.isfinite(med), p.c_away * np.nan_to_num(mad), np.inf)
            inside = (dev <= lim) & (-dev <= lim_away[..., None])
        elif one_sided:
            inside = dev <= lim
        else:
            inside = np.abs(dev) <= lim
        new = h & (inside | ~screen[..., None])
        if np.array_equal(new, act):
            break
        act = new
    screened = _dp(np.where(act[..., None], Wh, 0.0).sum(axis=-2))
    full = _dp(Wh.sum(axis=-2))
    use_full = np.isfinite(full) & ~(np.abs(screened) >= np.abs(full))
    est = np.where(use_full, full, screened)
    kept = np.where(use_full[..., None], h, act)
    return est, kept, core, infl, full
