r"""Exact intervals for a difference or a ratio of two proportions: unconditional exact tests
inverted (Buehler 1957; Chan & Zhang 1999; Agresti & Min 2001). The default two-group interval.

For two independent groups, ``a ~ Bin(A, p1)`` and ``b ~ Bin(B, p2)``, and a parameter
:math:`\psi` (the difference :math:`p_1 - p_2` or the ratio :math:`p_1 / p_2`), the lower
bound comes from the one-sided tests of :math:`\psi = \psi_0` against larger values and the
upper bound from those against smaller values, each at level :math:`\alpha/2` (the *tail
method*). The outcomes are ordered by an approximate bound, as Buehler's construction does:

* the lower test by :math:`T_L(a, b)`, the lower bound of Newcombe's hybrid score interval
  (differences; :func:`fairprobe.stats.intervals.newcombe_interval`) or the log of the lower
  bound of Koopman's score interval (ratios), and the upper test by the upper bounds;
* the p-value of :math:`\psi_0` maximises the exact tail over the nuisance rate,

  .. math::
      P_L(\psi_0) = \sup_{p_2} \Pr_{\psi_0, p_2}\bigl(T_L \ge T_L(a, b)\bigr),

  a sum over every outcome (no normal approximation), and the same with :math:`T_U \le`.

Theorem (coverage :math:`\ge 1 - \alpha` at every rate and size). :math:`T_L` is
non-decreasing in ``a`` and non-increasing in ``b`` (Wilson's bounds are monotone in the count
and Newcombe's lower bound moves by at most the estimate's step; checked by enumeration in
``tests/stats/test_unconditional.py``), so :math:`\Pr_{p_1, p_2}(T_L \ge t)` is non-decreasing
in :math:`p_1` and non-increasing in :math:`p_2`. The nuisance rates are restricted to the
Berger-Boos box :math:`C` (Clopper-Pearson intervals of both rates at level
:math:`1 - \gamma/2`, :math:`\gamma` = :data:`GAMMA` :math:`\alpha`), which holds the true rates
with probability :math:`\ge 1 - \gamma`, and the p-value is :math:`\sup_C \Pr + \gamma`
(Berger & Boos 1994); on the values of :math:`\psi_0` whose line meets :math:`C` it is
non-decreasing in :math:`\psi_0`. The reported lower bound :math:`L` is a tested grid value
whose computed bound :math:`\hat P_L(L) \ge P_L(L)` is at most :math:`\alpha/2` (or the end of
the range): if the true :math:`\psi < L` then :math:`P_L(\psi) \le P_L(L) \le \alpha/2`, which
happens with probability at most :math:`\alpha/2 - \gamma` given the true rates in :math:`C`.
The same holds above; with the box's :math:`\gamma`, both sides together miss with probability
at most :math:`\alpha - \gamma`.

Computation. :math:`\psi_0` runs over a fixed grid (differences: step 0.002 on
:math:`[-1, 1]`; ratios: step 0.01 on :math:`\log\psi_0 \in [-7, 7]`, beyond which a bound is
0 or :math:`\infty`), searched by bisection on each side (the p-values are monotone); each bound
is the rejected grid value next to the accepted range. The supremum over the nuisance is
bounded *above* without approximation: the segment of the line :math:`\psi(p_1, p_2) = \psi_0`
inside the box is cut into pieces of :data:`SPACING` / :math:`\sqrt{\max(A, B)}` on the arcsine
scale, and on each piece the tail is at most its value at the piece's worst corner (largest
:math:`p_1`, smallest :math:`p_2` for the lower test). The rejection region is found row by
row (per ``a'``, the ``b'`` with :math:`T_L \ge t`: from a cached table of the statistic up to
250,000 outcomes, else by bisection over ``b'``), and each row's binomial mass is truncated at
10 standard deviations. Each outcome's interval is cached. Exact coverage is checked by
enumeration in ``experiments/stats/edge_coverage.py``.

References
----------
.. [Bu] R. J. Buehler (1957). Confidence intervals for the product of two binomial
   parameters. JASA 52, 482-493.
.. [CZ] I. S. F. Chan, Z. Zhang (1999). Test-based exact confidence intervals for the
   difference of two binomial proportions. Biometrics 55(4), 1202-1209.
.. [AM] A. Agresti, Y. Min (2001). On small-sample confidence intervals for parameters in
   discrete distributions. Biometrics 57(3), 963-971.
.. [BB] R. L. Berger, D. D. Boos (1994). P values maximised over a confidence set for the
   nuisance parameter. JASA 89, 1012-1016.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Literal

import numpy as np
import numpy.typing as npt
from scipy import special

from fairprobe.stats.intervals import (
    _ratio_score_z,
    float_counts,
    newcombe_interval,
    normal_quantile,
    score_ratio_interval,
)

__all__ = ["GAMMA", "unconditional_difference_interval",
           "unconditional_ratio_interval", "unconditional_verdicts"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
Kind = Literal["difference", "ratio"]

#: Grid of tested values: differences on [-1, 1], ratios on the log scale.
DIFF_GRID = np.linspace(-1.0, 1.0, 1001)
LOG_RATIO_GRID = np.linspace(-7.0, 7.0, 1401)
#: Share of alpha spent on the Berger-Boos nuisance box (gamma = GAMMA * alpha).
GAMMA = 0.02
#: Width of the nuisance pieces on the arcsine scale, times 1/sqrt(max(A, B)): an eighth of
#: the standard deviation of the arcsine of an estimated rate.
SPACING = 1.0 / 16.0
_ONES: OrderedDict[tuple[str, int, int, int, int, float], tuple[float, float]] = OrderedDict()


def _grid(kind: Kind) -> FloatArray:
    return DIFF_GRID if kind == "difference" else LOG_RATIO_GRID


def _order_stats(kind: Kind, a: FloatArray, A: FloatArray, b: FloatArray, B: FloatArray,
                 level: float) -> tuple[FloatArray, FloatArray]:
    """``(T_L, T_U)``: the approximate bounds that order the outcomes (rounded so that ties
    are ties on every path)."""
    if kind == "difference":
        lo, hi = newcombe_interval(a, A, b, B, level)
    else:
        lo, hi = score_ratio_interval(a, A, b, B, level)
        with np.errstate(divide="ignore"):
            lo, hi = np.log(lo), np.log(hi)
    tl = np.asarray(np.round(np.asarray(lo, dtype=np.float64), 10), dtype=np.float64)
    tu = np.asarray(np.round(np.asarray(hi, dtype=np.float64), 10), dtype=np.float64)
    return tl, tu


def _p1(kind: Kind, g: float, p2: FloatArray) -> FloatArray:
    return np.clip(p2 + g if kind == "difference" else float(np.exp(g)) * p2, 0.0, 1.0)


Tails = Callable[[FloatArray, FloatArray], FloatArray]
Box = tuple[float, float, float, float]


def _box(a: int, A: int, b: int, B: int, gamma: float) -> Box:
    """Clopper-Pearson intervals of both rates at level ``1 - gamma/2`` each: the nuisance
    region of Berger & Boos (1994), holding the true rates with probability >= 1 - gamma."""
    from fairprobe.stats.exact import clopper_pearson_interval

    l1, h1 = clopper_pearson_interval(a, A, 1.0 - gamma / 2.0)
    l2, h2 = clopper_pearson_interval(b, B, 1.0 - gamma / 2.0)
    return float(l1), float(h1), float(l2), float(h2)


def _decide(kind: Kind, g: float, lower: bool, tails: Tails, box: Box, spacing: float,
            alpha: float) -> bool:
    """Whether the parameter value ``g`` is accepted by the lower (or upper) test.

    The tail is maximised over the nuisance rates on the line ``psi(p1, p2) = g`` inside the
    Berger-Boos box. That segment is cut into pieces of :data:`SPACING` / sqrt(n) on the
    arcsine scale; on each the tail is at most its value at the piece's worst corner (lower
    test: largest p1, smallest p2), so the maximum over corners bounds the supremum from above.
    Accepted when that bound exceeds ``alpha/2 - gamma``.
    """
    l1, h1, l2, h2 = box
    if kind == "difference":
        lo, hi = max(l2, l1 - g, 0.0, -g), min(h2, h1 - g, 1.0, 1.0 - g)
    else:
        th = float(np.exp(g))
        lo, hi = max(l2, l1 / th), min(h2, h1 / th, 1.0 / th)
    if hi < lo:
        return False  # the line misses the box: p-value gamma, rejected
    u0, u1 = np.arcsin(np.sqrt(lo)), np.arcsin(np.sqrt(min(hi, 1.0)))
    n = max(1, int(np.ceil((u1 - u0) / spacing)))
    edges = np.sin(np.linspace(u0, u1, n + 1)) ** 2
    edges[0], edges[-1] = lo, hi
    if lower:  # the tail rises with p1 and falls with p2
        c1, c2 = _p1(kind, g, edges[1:]), edges[:-1]
    else:
        c1, c2 = _p1(kind, g, edges[:-1]), edges[1:]
    return bool(tails(c1, c2).max() > alpha / 2.0 - GAMMA * alpha)


def _outward(kind: Kind, jl: IntArray, ju: IntArray) -> tuple[FloatArray, FloatArray]:
    """Bounds at the rejected grid values next to the accepted range ``[jl, ju]``."""
    grid = _grid(kind)
    K = grid.size
    lo = grid[np.clip(jl - 1, 0, K - 1)]
    hi = grid[np.clip(ju + 1, 0, K - 1)]
    if kind == "difference":
        return np.where(jl > 0, lo, -1.0), np.where(ju < K - 1, hi, 1.0)
    return np.where(jl > 0, np.exp(lo), 0.0), np.where(ju < K - 1, np.exp(hi), np.inf)


# --- the one-outcome path ------------------------------------------------------------------


_STATS: OrderedDict[tuple[str, int, int, float], tuple[FloatArray, FloatArray]] = OrderedDict()
#: Tables of the ordering statistics are kept for size pairs of at most this many outcomes.
_STATS_MAX_CELLS = 250_000


def _stat_table(kind: Kind, A: int, B: int, level: float) -> tuple[FloatArray, FloatArray]:
    """``T_L`` and ``T_U`` of every outcome of sizes ``(A, B)``, shape ``(A+1, B+1)``, cached."""
    key = (kind, A, B, round(level, 12))
    if key not in _STATS:
        aa, bb = np.meshgrid(np.arange(A + 1.0), np.arange(B + 1.0), indexing="ij")
        tl, tu = _order_stats(kind, aa.ravel(), np.full(aa.size, float(A)), bb.ravel(),
                              np.full(aa.size, float(B)), level)
        _STATS[key] = (tl.reshape(aa.shape), tu.reshape(aa.shape))
        if len(_STATS) > 16:
            _STATS.popitem(last=False)
    return _STATS[key]


def _rows(kind: Kind, A: int, B: int, t: float, lower: bool, level: float,
          span: tuple[int, int] | None = None) -> IntArray:
    """Per row ``a'``: the number of ``b'`` (from 0) with ``T_L(a', b') >= t`` (``lower``),
    or the first ``b'`` with ``T_U(a', b') <= t``. ``T_L`` and ``T_U`` are non-increasing in
    ``b'``: from the cached table of the statistic, or by a bisection over ``b'`` in every row
    at once for large sizes."""
    if (A + 1) * (B + 1) <= _STATS_MAX_CELLS:
        tl, tu = _stat_table(kind, A, B, level)
        return np.asarray(((tl >= t) if lower else (tu > t)).sum(axis=1), dtype=np.int64)
    r0, r1 = span if span is not None else (0, A)
    rows = np.arange(r0, r1 + 1, dtype=np.float64)  # the rows the tails can reach
    lo = np.zeros(rows.size, dtype=np.int64)
    hi = np.full(rows.size, B + 1, dtype=np.int64)
    while True:
        open_ = lo < hi
        if not open_.any():
            out = np.zeros(A + 1, dtype=np.int64)
            out[r0:r1 + 1] = lo
            return out
        mid = (lo + hi) // 2
        bm = np.minimum(mid, B).astype(np.float64)
        if kind == "ratio":
            # Koopman's bounds against e^t without solving for them: the score statistic
            # decreases in theta, so "lower bound >= e^t" iff z(e^t) >= z_crit and "upper
            # bound > e^t" iff z(e^t) > -z_crit (a hair of slack puts ties, the observed
            # outcome among them, in the tail)
            zc = normal_quantile(level)
            if np.isinf(t):  # a bound of 0 or inf: every row's bound is >= 0, none is > inf
                sat = np.full(rows.size, t < 0) if lower else np.zeros(rows.size, dtype=bool)
            else:
                z = _ratio_score_z(np.full(rows.size, np.exp(t)), rows,
                                   np.full(rows.size, float(A)), bm, np.full(rows.size, float(B)))
                sat = (z >= zc - 1e-9) if lower else (z > -zc + 1e-9)
        else:
            tl, tu = _order_stats(kind, rows, np.full(rows.size, float(A)), bm,
                                  np.full(rows.size, float(B)), level)
            # lower: "T_L >= t" holds for small b'; upper: "T_U > t" holds for small b'
            sat = (tl >= t) if lower else (tu > t)
        lo = np.where(open_ & sat, mid + 1, lo)
        hi = np.where(open_ & ~sat, mid, hi)


def _row_tails(A: int, B: int, cut: IntArray, lower: bool) -> Tails:
    """``tails(p1, p2)`` of one outcome from its region's row cuts (rows truncated at 10
    standard deviations around ``A p1``, where the binomial mass beyond is below 1e-22)."""

    def tails(p1: FloatArray, p2: FloatArray) -> FloatArray:
        sd = np.sqrt(A * p1 * (1.0 - p1)) + 1.0
        start = np.clip(np.floor(A * p1 - 10.0 * sd), 0, A).astype(np.int64)
        width = int(np.max(np.clip(np.ceil(A * p1 + 10.0 * sd), 0, A) - start)) + 1
        k = start[:, None] + np.arange(width)[None, :]
        valid = k <= A
        k = np.minimum(k, A)
        pr = np.where(valid, _pmf_rows(k, A, p1), 0.0)
        c = cut[k]
        f = special.bdtr(np.maximum(c - 1, 0), B, p2[:, None])
        if lower:  # b' in [0, c - 1]
            f = np.where(c > 0, f, 0.0)
        else:  # b' in [c, B]
            f = np.where(c > 0, 1.0 - f, 1.0)
        return np.asarray((pr * f).sum(axis=1), dtype=np.float64)[:, None]

    return tails


def _pmf_rows(k: IntArray, n: int, p: FloatArray) -> FloatArray:
    kf = k.astype(np.float64)
    lc = special.gammaln(n + 1.0) - special.gammaln(kf + 1.0) - special.gammaln(n - kf + 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.exp(lc + special.xlogy(kf, p[:, None]) + special.xlog1py(n - kf, -p[:, None]))
    return np.asarray(out, dtype=np.float64)


class _Setup:
    """What both tests of one outcome need: its statistics, the Berger-Boos box, the pieces'
    spacing, the range the box allows and the rows the tails reach."""

    def __init__(self, kind: Kind, a: int, A: int, b: int, B: int, alpha: float) -> None:
        self.kind, self.A, self.B, self.alpha = kind, A, B, alpha
        self.grid = _grid(kind)
        self.level = level = 1.0 - alpha
        if (A + 1) * (B + 1) <= _STATS_MAX_CELLS:
            # the size pair's table holds this outcome's statistics (the same elementwise
            # computation, done once for every outcome instead of once per outcome)
            t_l, t_u = _stat_table(kind, A, B, level)
            tl, tu = t_l[a, b:b + 1], t_u[a, b:b + 1]
        else:
            tl, tu = _order_stats(kind, np.array([float(a)]), np.array([float(A)]),
                                  np.array([float(b)]), np.array([float(B)]), level)
        self.t = {True: float(tl[0]), False: float(tu[0])}
        self.box = _box(a, A, b, B, GAMMA * alpha)
        self.spacing = SPACING / np.sqrt(max(A, B))
        # the values the box allows: the lower search stays at or below the largest, the upper
        # at or above the smallest (outside, the line misses the box), where the p-values are
        # monotone
        l1, h1, l2, h2 = self.box
        if kind == "difference":
            vmin, vmax = l1 - h2, h1 - l2
        else:
            with np.errstate(divide="ignore"):
                vmin = float(np.log(l1 / h2)) if l1 > 0 else -np.inf
                vmax = float(np.log(h1 / l2)) if l2 > 0 else np.inf
        # rows a' the tails can reach: corners have p1 in [l1, h1], windows of 10 sd around A p1
        reach = 10.0 * (np.sqrt(A / 4.0) + 1.0) + 2.0
        self.span = (int(max(0, np.floor(A * l1 - reach))), int(min(A, np.ceil(A * h1 + reach))))
        self.top = int(np.searchsorted(self.grid, vmax, side="right"))  # first index above vmax
        self.bottom = int(np.searchsorted(self.grid, vmin, side="left")) - 1  # last below vmin
        self._tails: dict[bool, Tails] = {}

    def accepted(self, j: int, lower: bool) -> bool:
        """Whether the grid value ``j`` is accepted by the lower (upper) test."""
        if lower not in self._tails:
            self._tails[lower] = _row_tails(
                self.A, self.B, _rows(self.kind, self.A, self.B, self.t[lower], lower,
                                      self.level, self.span), lower)
        return _decide(self.kind, float(self.grid[j]), lower, self._tails[lower], self.box,
                       self.spacing, self.alpha)


def _one(kind: Kind, a: int, A: int, b: int, B: int, alpha: float) -> tuple[float, float]:
    st = _Setup(kind, a, A, b, B, alpha)
    K = st.grid.size
    # the smallest accepted index of the lower test, by bisection (rejected below it)
    lo, hi = -1, st.top  # lo rejected (-1: none tested); hi accepted (top: virtual)
    while hi - lo > 1:
        m = (lo + hi) // 2
        lo, hi = (lo, m) if st.accepted(m, True) else (m, hi)
    jl = hi
    # the largest accepted index of the upper test (rejected above it)
    lo, hi = st.bottom, K  # lo accepted (bottom: virtual); hi rejected (K: none tested)
    while hi - lo > 1:
        m = (lo + hi) // 2
        lo, hi = (m, hi) if st.accepted(m, False) else (lo, m)
    ju = lo
    lo_, hi_ = _outward(kind, np.array([jl]), np.array([ju]))
    return float(lo_[0]), float(hi_[0])


def _verdict_one(kind: Kind, a: int, A: int, b: int, B: int, alpha: float,
                 threshold: float) -> str:
    """The verdict of the two-group summary on this outcome, from at most four single tests.

    The bisections of :func:`_one` rely on the p-values being monotone on their search ranges
    (the module's theorem); under the same property a bound's side of a value ``c`` is the
    answer of one test at the grid value next to ``c``: the upper bound is ``<= c`` iff the
    largest grid value ``<= c`` is rejected by the upper test (inside its range), the lower
    bound ``>= c`` iff the smallest grid value ``>= c`` is rejected by the lower test. The
    verdict is then :func:`fairprobe.stats.finding.decide` of the worst orientation, as the
    summary reads it (``tests/stats/test_unconditional.py`` checks it against the intervals).
    """
    key = (kind, a, A, b, B, round(alpha, 12))
    if key in _ONES:
        from fairprobe.stats.finding import decide

        L, U = _ONES[key]
        if kind == "difference":
            return decide(max(0.0, L, -U), max(U, -L), kind=kind, threshold=threshold)
        with np.errstate(divide="ignore"):
            return decide(min(L, 1.0 / U), min(1.0, U, 1.0 / L if L > 0 else np.inf),
                          kind=kind, threshold=threshold)
    st = _Setup(kind, a, A, b, B, alpha)
    vals = st.grid if kind == "difference" else np.exp(st.grid)
    K = vals.size

    def low_ge(c: float, strict: bool = False) -> bool:  # lower bound >= c (> c if strict)
        j = int(np.searchsorted(vals, c, side="right" if strict else "left"))
        return j < st.top and not st.accepted(j, True)

    def up_le(c: float, strict: bool = False) -> bool:  # upper bound <= c (< c if strict)
        j = int(np.searchsorted(vals, c, side="left" if strict else "right")) - 1
        return st.bottom < j < K and not st.accepted(j, False)

    t = float(threshold)
    if kind == "difference":
        if up_le(t) and low_ge(-t):
            return "fair"
        return "unfair" if (low_ge(t, strict=True) or up_le(-t, strict=True)) else "undetermined"
    # ratios: the worst orientation is min(L, 1/U) .. min(1, U, 1/L) against the floor t
    if low_ge(t) and up_le(1.0 / t):
        return "fair"
    return "unfair" if (up_le(t, strict=True) or low_ge(1.0 / t, strict=True)) \
        else "undetermined"


def unconditional_verdicts(
    kind: Kind, a: npt.ArrayLike, A: npt.ArrayLike, b: npt.ArrayLike, B: npt.ArrayLike,
    threshold: float, confidence_level: float = 0.95,
) -> npt.NDArray[np.str_]:
    """The two-group summary's verdict (``fair`` / ``unfair`` / ``undetermined``) of each
    outcome under the exact default interval, without computing the interval: what a planner
    simulating thousands of audits needs (about a tenth of the interval's tests). Ratios are
    taken in the interval's canonical orientation (the verdict is symmetric in the groups)."""
    af, Af, bf, Bf = float_counts(a, A, b, B)
    shape = af.shape
    ai, Ai, bi, Bi = (np.rint(x).astype(np.int64).ravel() for x in (af, Af, bf, Bf))
    if kind == "ratio":
        swap = (Ai > Bi) | ((Ai == Bi) & (ai > bi))
        ai, Ai, bi, Bi = (np.where(swap, y, x) for x, y in ((ai, bi), (Ai, Bi), (bi, ai),
                                                            (Bi, Ai)))
    alpha = 1.0 - float(confidence_level)
    cells, inv = np.unique(np.stack([ai, Ai, bi, Bi], axis=1), axis=0, return_inverse=True)
    out = np.array([_verdict_one(kind, int(x), int(X), int(y), int(Y), alpha, threshold)
                    for x, X, y, Y in cells])
    return np.asarray(out[inv.ravel()].reshape(shape))


def _interval(kind: Kind, a: npt.ArrayLike, A: npt.ArrayLike, b: npt.ArrayLike,
              B: npt.ArrayLike, confidence_level: float) -> tuple[FloatArray, FloatArray]:
    af, Af, bf, Bf = float_counts(a, A, b, B)
    shape = af.shape
    ai, Ai, bi, Bi = (np.rint(x).astype(np.int64).ravel() for x in (af, Af, bf, Bf))
    alpha = 1.0 - float(confidence_level)
    lo = np.empty(ai.size)
    hi = np.empty(ai.size)
    sizes, inv = np.unique(np.stack([Ai, Bi], axis=1), axis=0, return_inverse=True)
    inv = inv.ravel()
    for s, (A0, B0) in enumerate(sizes):
        sel = np.flatnonzero(inv == s)
        cells, cinv = np.unique(np.stack([ai[sel], bi[sel]], axis=1), axis=0,
                                return_inverse=True)
        cinv = cinv.ravel()
        cl = np.empty(cells.shape[0])
        ch = np.empty(cells.shape[0])
        for c, (a0, b0) in enumerate(cells):
            key = (kind, int(a0), int(A0), int(b0), int(B0), round(alpha, 12))
            if key not in _ONES:
                _ONES[key] = _one(kind, int(a0), int(A0), int(b0), int(B0), alpha)
                if len(_ONES) > 20_000:
                    _ONES.popitem(last=False)
            cl[c], ch[c] = _ONES[key]
        lo[sel] = cl[cinv]
        hi[sel] = ch[cinv]
    return lo.reshape(shape), hi.reshape(shape)


def unconditional_difference_interval(
    a: npt.ArrayLike, A: npt.ArrayLike, b: npt.ArrayLike, B: npt.ArrayLike,
    confidence_level: float = 0.95,
) -> tuple[FloatArray, FloatArray]:
    r"""Exact interval for ``a/A - b/B``: unconditional exact tests ordered by Newcombe's
    bounds, inverted (module docstring).

    Coverage :math:`\ge` ``confidence_level`` at every pair of rates and sizes; vectorised
    over counts of any shape (integer counts, ``A, B >= 1``).
    """
    return _interval("difference", a, A, b, B, confidence_level)


def unconditional_ratio_interval(
    a: npt.ArrayLike, A: npt.ArrayLike, b: npt.ArrayLike, B: npt.ArrayLike,
    confidence_level: float = 0.95,
) -> tuple[FloatArray, FloatArray]:
    r"""Exact interval for ``(a/A) / (b/B)``: unconditional exact tests ordered by Koopman's
    score bounds, inverted. Lower bound 0 and upper ``inf`` where the data allow them.

    Symmetric in the orientation: the interval of ``(b/B) / (a/A)`` is the reciprocal of this
    one (each pair is computed in one canonical order, the other taken as its reciprocal), so
    the directional two-group ratio and the symmetric every-group one always agree.
    """
    af, Af, bf, Bf = float_counts(a, A, b, B)
    swap = (Af > Bf) | ((Af == Bf) & (af > bf))
    lo, hi = _interval("ratio", np.where(swap, bf, af), np.where(swap, Bf, Af),
                       np.where(swap, af, bf), np.where(swap, Af, Bf), confidence_level)
    with np.errstate(divide="ignore"):
        rlo = np.where(hi > 0, 1.0 / np.where(hi > 0, hi, 1.0), np.inf)
        rhi = np.where(lo > 0, 1.0 / np.where(lo > 0, lo, 1.0), np.inf)
    # identical counts: both orientations are the same data, and the inverted test is not
    # exactly reciprocal-equivariant (its p-values are maximised over a grid), so take the hull
    # of the interval and its reciprocal: it contains the exact interval (coverage kept) and is
    # its own reciprocal, as the two orientations of a tie must be
    tie = (Af == Bf) & (af == bf)
    lo = np.where(tie, np.minimum(lo, np.where(np.isinf(hi), 0.0, rlo)), lo)
    hi = np.where(tie, np.maximum(hi, rhi), hi)
    out_lo = np.asarray(np.where(swap, np.where(np.isinf(hi), 0.0, rlo), lo), dtype=np.float64)
    out_hi = np.asarray(np.where(swap, rhi, hi), dtype=np.float64)
    return out_lo, out_hi
