r"""Approval-rate gaps between races that are not recorded, from a BISG/BIFSG proxy.

Write :math:`Y` for the decision (1 = approved), :math:`R` for the unrecorded race,
:math:`Z = (S, G)` for surname and place, and :math:`q_r(Z)` for the proxy's posterior
probability of race :math:`r`. The target is the gap :math:`\mu_a - \mu_b` (and the ratio
:math:`\mu_a / \mu_b`) of :math:`\mu_r = P(Y = 1 \mid R = r)`. Three estimates are computed,
each valid under its own assumption, which the result states beside it:

**Bounds** (:func:`rate_bounds`; Kallus, Mao & Zhou 2022, *Assessing algorithmic fairness with
unobserved protected class using data combination*, Management Science, section 3). Assumed only:
the proxy is *calibrated*, :math:`P(R = r \mid Z) = q_r(Z)`. Then
:math:`\pi_r = P(R = r) = E[q_r(Z)]` and, for any coarsening :math:`W = w(Z)` with
:math:`\eta(W) = P(Y = 1 \mid W)` and :math:`\bar q_r(W) = E[q_r(Z) \mid W]`, the joint
probability :math:`\gamma_r(W) = P(Y = 1, R = r \mid W)` can be anything with
:math:`0 \le \gamma_r \le \bar q_r` and :math:`\sum_r \gamma_r = \eta`. Hence the sharp bounds
on the coarsened data

.. math::

    \mu_r \in \Big[\frac{E[\max(0,\ \eta(W) - 1 + \bar q_r(W))]}{\pi_r},
                  \frac{E[\min(\eta(W),\ \bar q_r(W))]}{\pi_r}\Big],

and, because the upper end for :math:`a` and the lower end for :math:`b` are attained by one
joint distribution, the gap lies in :math:`[\mu_a^- - \mu_b^+,\ \mu_a^+ - \mu_b^-]` and the
ratio in :math:`[\mu_a^- / \mu_b^+,\ \mu_a^+ / \mu_b^-]`, both sharp given :math:`W`. Here
:math:`W` is the cell of a row in a grid of quantile bins of :math:`(q_a, q_b)`: any
coarsening gives valid bounds (the finer, the tighter).

*Finite-sample interval for the bounds.* The min and max are not smooth, so they are replaced by
linear statistics that bound them on the right side: in each cell a *branch* is chosen on one
half of the rows (``min`` takes :math:`\eta` or :math:`\bar q_r`; ``max`` takes 0 or
:math:`\eta - 1 + \bar q_r`) and evaluated on the other half, where
:math:`E[\text{chosen branch}] \ge E[\min]` and :math:`\le E[\max]` whichever branch was chosen.
Each end of a rate is the ratio of such a mean to :math:`\pi_r = E[q_r]`; its one-sided bound
inverts an empirical-Bernstein bound (Maurer & Pontil 2009, theorem 4) on the mean of
:math:`X - t q_r` over candidate rates :math:`t` (:func:`ratio_bound`), both halves swapped and
the better bound kept; the error levels sum to :math:`\alpha` by a union bound, so ``[low, high]`` covers the true gap with probability at least
``confidence_level`` whenever the proxy is calibrated, at every sample size.

**Weighted estimate** (:func:`weighted_rates`): :math:`\hat\mu_r = \sum_i q_{ir} Y_i /
\sum_i q_{ir}`, the proxy-weighted approval rate regulators compute. It is unbiased when the
decision is independent of race given surname and place (:math:`Y \perp R \mid Z`; Chen, Kallus,
Mao, Svacha & Udell 2019, *Fairness under unawareness*, proposition 1). When decisions depend on
race, it is biased towards no gap (each group's estimate mixes in the others' rates); when they
depend on place beyond race, it can be biased either way. Its interval is the delta method's.

**BIRDiE, complete pooling** (:func:`birdie_rates`; McCartan, Goldin, Ho & Imai 2024, section
3): assumes the decision is independent of surname *and place* given race
(:math:`Y \perp Z \mid R`) and fits :math:`\theta_r = P(Y = 1 \mid R = r)` by maximum likelihood on the mixture
likelihood :math:`\prod_i \sum_r q_{ir} \theta_r^{Y_i} (1-\theta_r)^{1-Y_i}`, with a Wald
interval from the observed information. It is consistent when decisions depend on race only and
biased when they depend on place.

The verdict is taken from the bounds' interval (:func:`fairprobe.stats.finding.decide`): "fair"
only if all of it is inside the band, "unfair" only if all of it is outside.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from fairprobe import metrics as _metrics
from fairprobe.bisg.tables import RACES
from fairprobe.errors import DataError, InvalidParameterError
from fairprobe.stats.finding import Finding, Question
from fairprobe.stats.intervals import normal_quantile
from fairprobe.stats.metrics import DEFAULT_DI_THRESHOLD, DEFAULT_TOLERANCE

__all__ = [
    "BISG_CONDITION",
    "ProxyAudit",
    "ProxyComparison",
    "RateBounds",
    "birdie_rates",
    "check_races",
    "empirical_bernstein",
    "proxy_audit",
    "rate_bounds",
    "weighted_rates",
]

FloatArray = npt.NDArray[np.float64]

#: The condition the bounds' coverage rests on, as the headline states it.
BISG_CONDITION = "the BISG probabilities are calibrated: P(race | surname, place) = q"

#: What the weighted and the BIRDiE estimates assume, as every surface prints it.
WEIGHTED_ASSUMPTION = ("unbiased only if the decision is independent of race given surname and "
                       "place; biased towards no gap when decisions depend on race")
BIRDIE_ASSUMPTION = ("consistent only if the decision is independent of surname and place given "
                     "race (complete pooling)")


def empirical_bernstein(x: FloatArray, delta: float, value_range: float,
                        side: str) -> float:
    r"""One-sided empirical-Bernstein bound on :math:`E[X]` from iid ``x`` in a range of width
    ``value_range`` (Maurer & Pontil 2009, theorem 4): with probability at least
    :math:`1 - \delta`,

    .. math:: E X \le \bar X + \sqrt{2 V_n \ln(2/\delta) / n} + \frac{7 R \ln(2/\delta)}{3(n-1)}

    (``side="upper"``; ``"lower"`` is the mirror), with :math:`V_n` the sample variance.
    Infinite when ``n < 2``.
    """
    n = int(x.size)
    if n < 2:
        return math.inf if side == "upper" else -math.inf
    log = math.log(2.0 / delta)
    width = math.sqrt(2.0 * float(np.var(x, ddof=1)) * log / n) + 7.0 * value_range * log / (
        3.0 * (n - 1))
    m = float(np.mean(x))
    return m + width if side == "upper" else m - width


def _cells(qa: FloatArray, qb: FloatArray, bins: int,
           strata: npt.NDArray[np.int64] | None = None) -> npt.NDArray[np.int64]:
    """Cell of each row in a grid of quantile bins of ``(q_a, q_b)`` (ties share a bin), crossed
    with ``strata`` (codes ``0..k-1``) when given; cell ids are made dense."""
    def binned(v: FloatArray) -> npt.NDArray[np.int64]:
        edges = np.unique(np.quantile(v, np.linspace(0, 1, bins + 1)[1:-1]))
        return np.searchsorted(edges, v, side="right").astype(np.int64)
    cell = binned(qa) * (bins + 1) + binned(qb)
    if strata is not None:
        cell = cell * (int(strata.max()) + 1) + strata
    return np.unique(cell, return_inverse=True)[1].astype(np.int64)


def _cell_means(cells: npt.NDArray[np.int64], mask: npt.NDArray[np.bool_], *cols: FloatArray
                ) -> tuple[npt.NDArray[np.int64], list[FloatArray]]:
    """Per-cell sums of ``cols`` over ``mask`` rows, as means indexed by cell id (0 if empty)."""
    k = int(cells.max()) + 1 if cells.size else 1
    n = np.bincount(cells[mask], minlength=k).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = [np.bincount(cells[mask], weights=c[mask], minlength=k) / n for c in cols]
    return n.astype(np.int64), [np.nan_to_num(m) for m in means]


@dataclass(frozen=True)
class RateBounds:
    """Identified region and its confidence bounds for one race's approval rate.

    ``region`` is the plug-in estimate of :math:`[\\mu_r^-, \\mu_r^+]`; ``low``/``high`` the
    finite-sample confidence bounds (``low`` below :math:`\\mu_r^-`, ``high`` above
    :math:`\\mu_r^+`), each holding with the probability its share of :math:`\\alpha` allows.
    """

    race: str
    share: float
    region: tuple[float, float]
    low: float
    high: float

    def to_dict(self) -> dict[str, Any]:
        return {"race": self.race, "share": self.share, "region": list(self.region),
                "low": self.low, "high": self.high}


def _branch_stats(y: FloatArray, q: FloatArray, cells: npt.NDArray[np.int64],
                  sel: npt.NDArray[np.bool_]) -> tuple[FloatArray, FloatArray]:
    """Per-row linear statistics on the rows not in ``sel``, branches chosen on ``sel``.

    ``upper``: :math:`Y` where the selection half has :math:`\\hat\\eta \\le \\bar q` in the
    row's cell, else :math:`q` (mean >= :math:`E[\\min(\\eta, \\bar q)]`); ``lower``:
    :math:`Y - 1 + q` where :math:`\\hat\\eta - 1 + \\bar q > 0`, else 0 (mean <=
    :math:`E[\\max(0, \\eta - 1 + \\bar q)]`).
    """
    _, (eta, qbar) = _cell_means(cells, sel, y, q)
    c = cells[~sel]
    pick_eta = eta[c] <= qbar[c]
    upper = np.where(pick_eta, y[~sel], q[~sel])
    pick_pos = eta[c] - 1.0 + qbar[c] > 0
    lower = np.where(pick_pos, y[~sel] - 1.0 + q[~sel], 0.0)
    return upper, lower


#: Grid of candidate rates for the ratio bounds (:func:`ratio_bound`): a bound is the grid point
#: beyond the last candidate the data cannot reject, so it errs outwards by at most one step.
_RATE_GRID = np.linspace(0.0, 1.0, 20001)


def ratio_bound(x: FloatArray, q: FloatArray, delta: float, x_range: float, side: str) -> float:
    r"""One-sided confidence bound on the ratio of means :math:`\rho = E[X] / E[q]` in [0, 1].

    For each candidate :math:`t` the mean of :math:`X - t q` is zero at :math:`t = \rho`, so
    the candidates an empirical-Bernstein bound (:func:`empirical_bernstein`) on that mean does
    not reject form a confidence set at error ``delta`` (Fieller's construction with a
    finite-sample bound in place of the normal one). ``side="upper"`` returns the largest
    candidate :math:`t` with :math:`\overline{X - tq} + w(t) \ge 0`, ``"lower"`` the smallest
    with :math:`\overline{X - tq} - w(t) \le 0`. The variance of :math:`X - tq` is
    :math:`V_X - 2t\,C_{Xq} + t^2 V_q`, so every candidate costs O(1) after one pass.
    """
    n = int(x.size)
    if n < 2:
        return 1.0 if side == "upper" else 0.0
    t = _RATE_GRID
    mx, mq = float(x.mean()), float(q.mean())
    cov = np.cov(x, q, ddof=1)
    var = np.maximum(cov[0, 0] - 2 * t * cov[0, 1] + t * t * cov[1, 1], 0.0)
    log = math.log(2.0 / delta)
    width = np.sqrt(2.0 * var * log / n) + 7.0 * (x_range + t) * log / (3.0 * (n - 1))
    mean = mx - t * mq
    if side == "upper":
        ok = np.flatnonzero(mean + width >= 0)
        if ok.size == 0:
            return 0.0
        return float(t[min(int(ok[-1]) + 1, t.size - 1)])
    ok = np.flatnonzero(mean - width <= 0)
    if ok.size == 0:
        return 1.0
    return float(t[max(int(ok[0]) - 1, 0)])


def rate_bounds(y: FloatArray, q: FloatArray, cells: npt.NDArray[np.int64], race: str,
                delta: float, fold: npt.NDArray[np.bool_]) -> RateBounds:
    r"""Bounds on :math:`\mu_r` under calibration alone (module docstring), at error ``delta``.

    ``delta`` is split over four statements: the upper end and the lower end, each from both
    cross-fitting halves (:func:`ratio_bound` at ``delta/4`` each; the better half is kept).
    """
    k = int(cells.max()) + 1
    n_w = np.bincount(cells, minlength=k).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        eta = np.nan_to_num(np.bincount(cells, weights=y, minlength=k) / n_w)
        qbar = np.nan_to_num(np.bincount(cells, weights=q, minlength=k) / n_w)
    p_w = n_w / n_w.sum()
    pi = float(q.mean())
    hi_num = float(np.sum(p_w * np.minimum(eta, qbar)))
    lo_num = float(np.sum(p_w * np.maximum(0.0, eta - 1.0 + qbar)))
    region = ((lo_num / pi, hi_num / pi) if pi > 0 else (0.0, 1.0))
    high, low = 1.0, 0.0
    for sel in (fold, ~fold):  # both halves: the better of the two bounds
        if sel.all() or not sel.any():
            continue
        up, lo = _branch_stats(y, q, cells, sel)
        qe = q[~sel]
        high = min(high, ratio_bound(up, qe, delta / 4, 1.0, "upper"))
        low = max(low, ratio_bound(lo, qe, delta / 4, 2.0, "lower"))
    return RateBounds(race=race, share=pi, region=(min(region), max(region)), low=low,
                      high=max(high, low))


def weighted_rates(y: FloatArray, q: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Proxy-weighted rates :math:`\\sum q_r Y / \\sum q_r` and the covariance of their
    delta-method (ratio-of-means) estimates, one column of ``q`` per race."""
    n = y.size
    s = q.sum(axis=0)
    mu = np.divide(q.T @ y, s, out=np.full(q.shape[1], np.nan), where=s > 0)
    infl = q * (y[:, None] - mu[None, :]) / np.where(s > 0, s / n, np.nan)[None, :]
    cov = (infl.T @ infl) / (n * n)
    return mu, cov


def birdie_rates(y: FloatArray, q: FloatArray, *, tol: float = 1e-10, max_iter: int = 500
                 ) -> tuple[FloatArray, FloatArray, int]:
    r"""Maximum likelihood for :math:`\theta_r = P(Y=1 \mid R=r)` under :math:`Y \perp Z \mid R`
    (module docstring); returns ``(theta, cov, iterations)``.

    The log-likelihood :math:`\ell(\theta) = \sum_i \log L_i`, with
    :math:`L_i = q_i^\top\theta` for an approval and :math:`1 - q_i^\top\theta` otherwise, is
    a sum of logs of affine functions, hence concave: it is maximised over the box
    :math:`[10^{-9}, 1 - 10^{-9}]^6` by L-BFGS-B with the exact gradient
    :math:`\sum_i \pm q_i / L_i` (the EM of BIRDiE's complete-pooling model reaches the same
    maximum, in hundreds of iterations instead of tens). ``cov`` is the inverse observed
    information :math:`(\sum_i q_i q_i^\top / L_i^2)^{-1}` (pseudo-inverse; races with no
    weight get nan).
    """
    from scipy.optimize import minimize

    sign = np.where(y > 0.5, 1.0, -1.0)
    base = np.where(y > 0.5, 0.0, 1.0)
    n = max(y.size, 1)

    def negll(theta: FloatArray) -> tuple[float, FloatArray]:
        lik = np.maximum(base + sign * (q @ theta), 1e-300)
        grad = (q * (sign / lik)[:, None]).sum(axis=0)
        return -float(np.log(lik).sum()) / n, -grad / n

    start, _ = weighted_rates(y, q)
    start = np.clip(np.nan_to_num(start, nan=0.5), 1e-6, 1 - 1e-6)
    res = minimize(negll, start, jac=True, method="L-BFGS-B",
                   bounds=[(1e-9, 1 - 1e-9)] * q.shape[1],
                   options={"maxiter": max_iter, "ftol": tol * 1e-3, "gtol": tol})
    theta = np.asarray(res.x, dtype=np.float64)
    lik = np.maximum(base + sign * (q @ theta), 1e-300)
    w = q / lik[:, None]
    info = w.T @ w
    present = q.sum(axis=0) > 0
    cov = np.full((q.shape[1], q.shape[1]), np.nan)
    cov[np.ix_(present, present)] = np.linalg.pinv(info[np.ix_(present, present)])
    theta = np.where(present, theta, np.nan)
    return theta, cov, int(res.nit)


@dataclass(frozen=True)
class ProxyComparison:
    """One comparison (race ``group`` against ``reference``): the three estimates and findings.

    ``finding`` (difference) and ``ratio_finding`` are decided on the bounds; ``weighted`` and
    ``birdie`` are findings of the other two estimates, shown with their assumptions and never
    counted in a headline (their coverage is asymptotic and rests on an untestable assumption).
    """

    group: str
    reference: str
    bounds: dict[str, Any]
    finding: Finding
    ratio_finding: Finding
    weighted: Finding
    birdie: Finding | None
    rates: dict[str, RateBounds]

    def to_dict(self) -> dict[str, Any]:
        return {
            "group": self.group, "reference": self.reference,
            "bounds": self.bounds,
            "finding": self.finding.to_dict(),
            "ratio_finding": self.ratio_finding.to_dict(),
            "estimates": {
                "bounds": {"assumption": BISG_CONDITION, **self.bounds},
                "weighted": {"assumption": WEIGHTED_ASSUMPTION,
                             "finding": self.weighted.to_dict()},
                "birdie": (None if self.birdie is None else
                           {"assumption": BIRDIE_ASSUMPTION, "finding": self.birdie.to_dict()}),
            },
            "rates": {k: v.to_dict() for k, v in self.rates.items()},
        }


@dataclass(frozen=True)
class ProxyAudit:
    """The audit of decisions by a proxied race: one :class:`ProxyComparison` per group.

    ``verdict`` is the worst verdict of the comparisons' bound findings (any unfair -> unfair;
    all fair -> fair; otherwise undetermined), each at the family-wise level ``confidence_level``
    (Bonferroni over comparisons).
    """

    comparisons: tuple[ProxyComparison, ...]
    confidence_level: float
    tolerance: float
    threshold: float
    rows: int
    rows_used: int
    method: str
    bins: int
    seed: int
    validation: dict[str, Any] | None = None
    match: dict[str, Any] = field(default_factory=dict)

    @property
    def findings(self) -> list[Finding]:
        return [c.finding for c in self.comparisons]

    @property
    def verdict(self) -> str:
        vs = [f.verdict for f in self.findings]
        if "unfair" in vs:
            return "unfair"
        return "fair" if vs and all(v == "fair" for v in vs) else "undetermined"

    @property
    def finding(self) -> Finding:
        """The comparison that decides :attr:`verdict` (the first unfair, else the first
        undetermined, else the first)."""
        for v in ("unfair", "undetermined"):
            for f in self.findings:
                if f.verdict == v:
                    return f
        return self.findings[0]

    def to_dict(self) -> dict[str, Any]:
        return {
            "method": self.method, "verdict": self.verdict,
            "finding": self.finding.to_dict(),
            "findings": [f.to_dict() for f in self.findings],
            "confidence_level": self.confidence_level, "tolerance": self.tolerance,
            "threshold": self.threshold, "rows": self.rows, "rows_used": self.rows_used,
            "bins": self.bins, "seed": self.seed, "match": self.match,
            "assumptions": {"bounds": BISG_CONDITION, "weighted": WEIGHTED_ASSUMPTION,
                            "birdie": BIRDIE_ASSUMPTION},
            "comparisons": [c.to_dict() for c in self.comparisons],
            "validation": self.validation,
        }


def _menu(n: int, n_strata: int, bins: int | None) -> list[tuple[int, bool]]:
    """The coarsenings tried: ``(bins per axis, crossed with the strata)``.

    Finer cells give a tighter identification region, but each cell's branch is chosen on half
    of its rows, and on a few rows the choice is noise, which loosens the finite-sample bound;
    which side of that trade wins depends on the data. So each bound is computed on every
    coarsening of this menu, at an equal share of the error, and the tightest is kept (a union
    bound over the menu: the result holds at the stated level whichever wins). The menu: 3, 6,
    12, 24 and 48 bins per axis while the cells average at least 20 rows, each with and without
    the strata when strata are given; ``bins`` fixes one.
    """
    if bins is not None:
        return [(int(bins), n_strata > 1)]
    out: list[tuple[int, bool]] = []
    for b in (3, 6, 12, 24, 48):
        for crossed in ((False, True) if n_strata > 1 else (False,)):
            cells = b * b * (n_strata if crossed else 1)
            if b == 3 or n / cells >= 20:
                out.append((b, crossed))
    return out


def _tightest(found: list[RateBounds]) -> RateBounds:
    """The intersection of one rate's bounds over the coarsenings tried (each valid at its share
    of the error, so their intersection is valid at the sum; each region is a superset of the
    sharp one, so is their intersection)."""
    lo = max(r.low for r in found)
    hi = min(r.high for r in found)
    reg = (max(r.region[0] for r in found), min(r.region[1] for r in found))
    return RateBounds(race=found[0].race, share=found[0].share,
                      region=(reg[0], max(reg)), low=min(lo, reg[0]), high=max(hi, reg[1]))


def _finding(metric: str, kind: str, threshold: float, groups: tuple[str, str], est: float,
             lo: float, hi: float, level: float, construction: str, coverage: str,
             condition: str | None, reason: str | None, counts: dict[str, Any]) -> Finding:
    return Finding(
        question=Question(metric=metric, kind=kind,  # type: ignore[arg-type]
                          threshold=threshold, groups=groups,
                          scale="ratio" if kind == "ratio" else "probability",
                          rates=("selection_rate",)),
        estimate=est, low=lo, high=hi, confidence_level=level, construction=construction,
        coverage=coverage, condition=condition, reason=reason, counts=counts)


def _bounds_reason(region: tuple[float, float], lo: float, hi: float, tol: float) -> str | None:
    """Why a bounds interval does not decide: the proxy itself, or the sample size."""
    inside = -tol <= lo and hi <= tol
    outside = hi < -tol or lo > tol
    if inside or outside:
        return None
    r_in = -tol <= region[0] and region[1] <= tol
    r_out = region[1] < -tol or region[0] > tol
    if not (r_in or r_out):
        return (f"the proxy cannot separate the groups: even with unlimited rows the estimated "
                f"identification region [{region[0]:.3f}, {region[1]:.3f}] reaches beyond the "
                f"band [-{tol:g}, {tol:g}]")
    return (f"the estimated identification region [{region[0]:.3f}, {region[1]:.3f}] decides, "
            "but its confidence interval still reaches the band: more rows would decide")


def check_races(groups: Sequence[str], reference: str) -> None:
    """The compared races and the reference: census categories, the reference not compared
    with itself (``--group-a``, ``--group-b``)."""
    for g in (*groups, reference):
        if g not in RACES:
            raise InvalidParameterError(
                f"unknown race {g!r} for --group-a/--group-b: one of {', '.join(RACES)}.")
    if reference in groups:
        raise InvalidParameterError(f"the reference {reference!r} is also a compared group.")


def proxy_audit(y: npt.ArrayLike, q: npt.ArrayLike, *, groups: Sequence[str] = ("black",
                                                                             "hispanic", "api"),
                reference: str = "white", tolerance: float = DEFAULT_TOLERANCE,
                threshold: float = DEFAULT_DI_THRESHOLD,
                confidence_level: float = 0.95, bins: int | None = None, seed: int = 0,
                birdie: bool = True, method: str = "bisg",
                match: dict[str, Any] | None = None,
                strata: npt.ArrayLike | None = None) -> ProxyAudit:
    """Audit 0/1 decisions ``y`` between proxied races (module docstring for the estimates).

    Parameters
    ----------
    y : array of 0/1, shape (n,)
    q : array, shape (n, 6)
        Posterior probabilities over :data:`~fairprobe.bisg.tables.RACES` (rows of excluded
        rows, all zero, must be removed beforehand).
    groups, reference : race names
        Each group is compared with the reference: gap ``rate(group) - rate(reference)``,
        ratio ``rate(group) / rate(reference)``.
    tolerance, threshold : float
        The fair band of the gap and the floor of the ratio.
    confidence_level : float
        Family-wise over the comparisons (Bonferroni).
    bins : int, optional
        Quantile bins per axis of the coarsening (default :func:`_default_bins`).
    seed : int
        Seed of the cross-fitting split.
    strata : array of int codes, shape (n,), optional
        Further cells of the coarsening :math:`W` (e.g. bins of the model's score, or of a
        place-level covariate the decisions depend on): any :math:`W` gives valid bounds, and
        one that carries what the decisions depend on gives tighter ones.
    """
    yy = np.asarray(y, dtype=np.float64)
    qq = np.asarray(q, dtype=np.float64)
    if qq.ndim != 2 or qq.shape[1] != len(RACES) or qq.shape[0] != yy.size:
        raise InvalidParameterError(f"q must have shape (n, {len(RACES)}) with n = len(y).")
    if yy.size < 2:
        raise DataError(f"{yy.size} usable rows: a proxy audit needs at least 2.")
    if not np.isin(yy, (0.0, 1.0)).all():
        raise DataError("decisions must be 0/1 (give --pos-label for other values).")
    check_races(groups, reference)
    st = None if strata is None else np.asarray(strata, dtype=np.int64)
    if st is not None and (st.shape != yy.shape or (st < 0).any()):
        raise InvalidParameterError("strata must hold one code >= 0 per row.")
    level = float(confidence_level)
    m = len(groups)
    alpha_each = (1.0 - level) / m
    n_strata = 1 if st is None else int(st.max()) + 1
    menu = _menu(yy.size, n_strata, bins)
    rng = np.random.default_rng(seed)
    fold = rng.random(yy.size) < 0.5
    idx = {r: i for i, r in enumerate(RACES)}
    mu_w, cov_w = weighted_rates(yy, qq)
    th_b, cov_b, iters = (birdie_rates(yy, qq) if birdie else (None, None, 0))
    z = normal_quantile(1.0 - alpha_each)
    comps: list[ProxyComparison] = []
    for g in groups:
        a, b = idx[g], idx[reference]
        # each rate's bounds at half the comparison's error, shared over the menu
        each = alpha_each / 2 / len(menu)
        tried = []
        for nb, crossed in menu:
            cells = _cells(qq[:, a], qq[:, b], nb, st if crossed else None)
            tried.append((nb, crossed, int(cells.max()) + 1,
                          rate_bounds(yy, qq[:, a], cells, g, each, fold),
                          rate_bounds(yy, qq[:, b], cells, reference, each, fold)))
        ra = _tightest([t[3] for t in tried])
        rb = _tightest([t[4] for t in tried])
        region = (ra.region[0] - rb.region[1], ra.region[1] - rb.region[0])
        lo, hi = ra.low - rb.high, ra.high - rb.low
        mid = 0.5 * (region[0] + region[1])
        bounds = {"low": lo, "high": hi, "level": 1.0 - alpha_each,
                  "region": list(region),
                  "coarsenings": [{"bins": t[0], "strata": t[1], "cells": t[2],
                                   "low": t[3].low - t[4].high, "high": t[3].high - t[4].low}
                                  for t in tried]}
        cnt = {"rows": int(yy.size), "share_group": ra.share, "share_reference": rb.share}
        groups_pair = (g, reference)
        fd = _finding(_metrics.DP.name, "difference", tolerance, groups_pair, mid,
                      lo, hi, 1.0 - alpha_each, "bisg-bounds", "conditional", BISG_CONDITION,
                      _bounds_reason(region, lo, hi, tolerance), cnt)
        rreg = (ra.region[0] / rb.region[1] if rb.region[1] > 0 else 0.0,
                ra.region[1] / rb.region[0] if rb.region[0] > 0 else math.inf)
        rlo = ra.low / rb.high if rb.high > 0 else 0.0
        rhi = ra.high / rb.low if rb.low > 0 else math.inf
        rmid = (0.5 * (rreg[0] + rreg[1]) if math.isfinite(rreg[1]) else rreg[0])
        fr = _finding(_metrics.DI.name, "ratio", threshold, groups_pair, rmid, rlo, rhi,
                      1.0 - alpha_each, "bisg-bounds", "conditional", BISG_CONDITION, None,
                      {**cnt, "region": [rreg[0], rreg[1]]})
        d = float(mu_w[a] - mu_w[b])
        se = math.sqrt(max(float(cov_w[a, a] + cov_w[b, b] - 2 * cov_w[a, b]), 0.0))
        fw = _finding(_metrics.DP.name, "difference", tolerance, groups_pair, d,
                      d - z * se, d + z * se, 1.0 - alpha_each, "bisg-weighted", "asymptotic",
                      None, WEIGHTED_ASSUMPTION,
                      {"rate_group": float(mu_w[a]), "rate_reference": float(mu_w[b])})
        fb: Finding | None = None
        if th_b is not None and cov_b is not None:
            db = float(th_b[a] - th_b[b])
            seb = math.sqrt(max(float(cov_b[a, a] + cov_b[b, b] - 2 * cov_b[a, b]), 0.0))
            fb = _finding(_metrics.DP.name, "difference", tolerance, groups_pair,
                          db, db - z * seb, db + z * seb, 1.0 - alpha_each, "birdie-pooled",
                          "asymptotic", None, BIRDIE_ASSUMPTION,
                          {"rate_group": float(th_b[a]), "rate_reference": float(th_b[b]),
                           "em_iterations": iters})
        comps.append(ProxyComparison(group=g, reference=reference, bounds=bounds, finding=fd,
                                     ratio_finding=fr, weighted=fw, birdie=fb,
                                     rates={g: ra, reference: rb}))
    return ProxyAudit(comparisons=tuple(comps), confidence_level=level, tolerance=tolerance,
                      threshold=threshold, rows=int(yy.size), rows_used=int(yy.size),
                      method=method, bins=len(menu), seed=seed, match=dict(match or {}))
