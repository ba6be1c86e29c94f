"""Budget regimes of Appendix B of ``two-source-audits.md``: which plan a budget ``t`` allows.

Two budgets frame the decision, both for a requested margin of error ``epsilon`` on the
disparate impact at level ``alpha`` (Section 4.1, :math:`\\epsilon = z_\\alpha\\sigma/\\sqrt{t}`):

* ``t_A = ceil((z_alpha sigma_A / epsilon)^2)``: queries to the audit API A alone;
* ``t_B``: the smallest budget at which the DI estimated from the user interface B reaches
  ``epsilon``. B's answers reach the auditor grouped only through the proxy; the large regime
  corrects that by double sampling (:mod:`fairprobe.twosource.correction`), the checked records
  being the validated ones, so ``t_B`` is the smallest ``t`` with a split ``n_B + n_checks = t``
  whose planned margin (:func:`large_regime_margin`, per-group proxy accuracies) is within
  ``epsilon``. With ``b_estimator="matrix"`` (B alone, known confusion rates) it is
  ``ceil((z_alpha sigma_B / epsilon)^2)`` with :func:`sigma_b`. Always ``t_B >= t_A``.

The regimes (Appendix B, Figure 5):

* ``t < t_A`` (**small**): refused. Even an unmanipulated A cannot reach the requested accuracy;
  the paper assumes this case cannot happen, so the planner says why and stops
  (:class:`~fairprobe.errors.BudgetError`).
* ``t_A <= t <= t_B`` (**pareto**): Section 5.3, the Pareto frontier of
  :func:`~fairprobe.twosource.theory.pareto_frontier`; the recommended allocation is the one with
  the largest ``p_manip`` among those whose margin through A is within ``epsilon``.
* ``t > t_B`` (**large**): mu is estimated from B (manipulation-free); A serves only the
  consistency checks, each an A query on a record already asked of B. Double sampling: the split
  with the most checks whose planned margin is within ``epsilon``; matrix:
  ``t_fraud = min(t - t_B, floor(t / 2))``.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from fairprobe._validation import check_int, check_real
from fairprobe.errors import BudgetError, InvalidParameterError
from fairprobe.twosource.theory import (
    MAX_BUDGET,
    Frontier,
    detection_test,
    di_sigma,
    pareto_frontier,
    z_quantile,
)

__all__ = [
    "B_ESTIMATORS",
    "REGIMES",
    "BudgetPlan",
    "PlanningRates",
    "large_regime_margin",
    "plan_budget",
    "required_budget",
    "sigma_b",
]

#: The three regimes of Appendix B, by increasing budget.
REGIMES: tuple[str, ...] = ("small", "pareto", "large")

#: How the large regime estimates the DI through B (:mod:`fairprobe.twosource.correction`).
B_ESTIMATORS: tuple[str, ...] = ("double-sampling", "matrix")


def _accuracies(
    p_phi: float, unprivileged: float | None, privileged: float | None, owner: str
) -> tuple[float, float]:
    """The proxy's accuracy in each group: ``p_phi`` where the group's own is not given."""
    au = p_phi if unprivileged is None else check_real(
        unprivileged, "accuracy_unprivileged", owner, lo=0.0, hi=1.0)
    ap = p_phi if privileged is None else check_real(
        privileged, "accuracy_privileged", owner, lo=0.0, hi=1.0)
    return au, ap


def sigma_b(
    rate_unprivileged: float,
    rate_privileged: float,
    share_unprivileged: float,
    p_phi: float,
    *,
    accuracy_unprivileged: float | None = None,
    accuracy_privileged: float | None = None,
) -> float:
    r"""Per-query standard deviation of the disparate impact estimated from B alone.

    Model: B answers carry no protected attribute; the auditor groups them with a proxy right
    with probability :math:`a_u` in the unprivileged and :math:`a_p` in the privileged group
    (both ``p_phi`` unless ``accuracy_unprivileged`` / ``accuracy_privileged`` are given; the
    first-name rule: 0.648 for women, 0.838 for men on the Adult pool), errors independent of the
    decision, and corrects the misclassification by inverting its 2x2 confusion matrix (shares
    :math:`\pi` known; the matrix method of :mod:`fairprobe.twosource.correction`). With
    positive masses :math:`s_g = \pi_g r_g`, the observed masses by proxy group are
    :math:`o = M s`, :math:`M = \begin{pmatrix} a_u & 1-a_p\\ 1-a_u & a_p\end{pmatrix}`,
    estimated from ``t`` multinomial answers (covariance :math:`(\mathrm{diag}(o) - o o^\top)/t`),
    and :math:`\mu = (s_u/\pi_u)/(s_p/\pi_p)`. The delta method gives

    .. math:: \sigma_B^2 = g^\top(\mathrm{diag}(o) - o o^\top) g, \qquad
              g = M^{-\top}\,\mu\,(1/s_u, -1/s_p).

    Infinite when :math:`a_u + a_p = 1` (a proxy no better than chance tells nothing about the
    groups).
    """
    owner = "sigma_b"
    ru = check_real(rate_unprivileged, "rate_unprivileged", owner, lo=0.0, hi=1.0, closed="right")
    rp = check_real(rate_privileged, "rate_privileged", owner, lo=0.0, hi=1.0, closed="right")
    pu = check_real(share_unprivileged, "share_unprivileged", owner, lo=0.0, hi=1.0,
                    closed="neither")  # fmt: skip
    p = check_real(p_phi, "p_phi", owner, lo=0.0, hi=1.0)
    au, ap = _accuracies(p, accuracy_unprivileged, accuracy_privileged, owner)
    if abs(au + ap - 1.0) < 1e-12:
        return math.inf
    s = np.array([pu * ru, (1.0 - pu) * rp])
    mu = ru / rp
    m = np.array([[au, 1.0 - ap], [1.0 - au, ap]])
    o = m @ s
    g = np.linalg.solve(m.T, mu * np.array([1.0 / s[0], -1.0 / s[1]]))
    cov = np.diag(o) - np.outer(o, o)
    return float(math.sqrt(max(float(g @ cov @ g), 0.0)))


def large_regime_margin(
    n_b: npt.ArrayLike,
    n_checks: npt.ArrayLike,
    cells: npt.ArrayLike,
    alpha: float = 0.05,
) -> npt.NDArray[np.float64]:
    r"""Planned margin of the double-sampling DI through B (vectorised over ``n_b, n_checks``).

    ``n_b`` B queries, ``n_checks`` of them checked on A and so validated (true group known);
    ``cells``: :math:`P(g, \hat g, y)` of the planning model
    (:func:`~fairprobe.twosource.correction.expected_cells`). The margin is
    :math:`z_\alpha\,\mu\,se(\log\hat\mu_B)` at the expected counts (delta method), the same
    formula the audit applies to its observed counts.
    """
    from fairprobe.twosource.correction import double_sampling_se

    nb = np.asarray(n_b, dtype=np.float64)
    nv = np.asarray(n_checks, dtype=np.float64)
    c = np.asarray(cells, dtype=np.float64)
    marg = c.reshape(2, 4).sum(axis=0)
    u = (nb - nv)[..., None] * marg
    v = nv[..., None] * c
    c3 = c.reshape(2, 2, 2).sum(axis=1)
    mu = (c3[0, 1] / c3[0].sum()) / (c3[1, 1] / c3[1].sum())
    return np.asarray(z_quantile(alpha) * mu * double_sampling_se(u, v), dtype=np.float64)


def _large_split(t: int, eps: float, cells: npt.NDArray[np.float64], alpha: float) -> int | None:
    """The most checks a budget ``t`` allows with the margin through B within ``eps`` (or None)."""
    hi = t // 2
    if hi < 1:
        return None
    grid = np.unique(np.linspace(1, hi, min(hi, 2001)).round().astype(np.int64))
    m = large_regime_margin(t - grid, grid, cells, alpha)
    ok = np.flatnonzero(m <= eps)
    return int(grid[ok[-1]]) if ok.size else None


def _large_threshold(t_a: int, eps: float, cells: npt.NDArray[np.float64], alpha: float) -> int:
    """Smallest budget whose best split reaches ``eps`` through B (bisection; capped)."""
    return _large_threshold_cached(t_a, eps, tuple(float(c) for c in cells), alpha)


@functools.lru_cache(maxsize=256)
def _large_threshold_cached(t_a: int, eps: float, cells_t: tuple[float, ...], alpha: float) -> int:
    cells = np.array(cells_t)
    lo, hi = max(t_a, 2), max(2 * t_a, 4)
    while _large_split(hi, eps, cells, alpha) is None:
        lo, hi = hi, 2 * hi
        if hi > MAX_BUDGET:
            return MAX_BUDGET + 1
    while lo < hi:
        mid = (lo + hi) // 2
        if _large_split(mid, eps, cells, alpha) is None:
            lo = mid + 1
        else:
            hi = mid
    return hi


def required_budget(sigma: float, epsilon: float, alpha: float = 0.05) -> int:
    r"""Queries for a margin of error ``epsilon``: :math:`\lceil (z_\alpha\sigma/\epsilon)^2\rceil`."""
    owner = "required_budget"
    sg = check_real(sigma, "sigma", owner, lo=0.0)
    e = check_real(epsilon, "epsilon", owner, lo=0.0, closed="neither")
    if math.isinf(sg):
        return MAX_BUDGET + 1
    n = (z_quantile(alpha) * sg / e) ** 2
    return int(min(math.ceil(n - 1e-9), MAX_BUDGET + 1))


@dataclass(frozen=True)
class BudgetPlan:
    """The regime of a budget and the plan it allows (Appendix B).

    Attributes
    ----------
    regime : {"pareto", "large"}
        (``small`` is refused with a :class:`~fairprobe.errors.BudgetError`.)
    t, epsilon, alpha, p_phi, gamma :
        The request (``gamma``: share of checked answers flipped, or ``None`` for Theorem 3's
        cheapest successful fairwashing).
    t_a, t_b, sigma_a, sigma_b :
        The two budget thresholds and the per-query standard deviations behind them.
    frontier :
        ``pareto`` regime: every allocation and the Pareto frontier.
    recommended :
        The allocation to use: ``pareto``: the largest ``p_manip`` with ``epsilon_a <= epsilon``;
        ``large``: ``n_b`` queries on B (the estimate), ``n_a = t_fraud`` on A (the checks).
    """

    regime: str
    t: int
    epsilon: float
    alpha: float
    p_phi: float
    gamma: float | None
    t_a: int
    t_b: int
    sigma_a: float
    sigma_b: float
    recommended: dict[str, Any]
    frontier: Frontier | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "regime": self.regime,
            "budget": self.t,
            "epsilon": self.epsilon,
            "alpha": self.alpha,
            "p_phi": self.p_phi,
            "gamma": self.gamma,
            "t_a": self.t_a,
            "t_b": self.t_b if self.t_b <= MAX_BUDGET else None,
            "sigma_a": self.sigma_a,
            "sigma_b": self.sigma_b if math.isfinite(self.sigma_b) else None,
            "recommended": self.recommended,
        }


@dataclass(frozen=True)
class PlanningRates:
    """The population a two-source budget is planned for, and the planning values that
    replace the model's.

    Attributes
    ----------
    rate_unprivileged, rate_privileged : float in (0, 1]
        Each group's positive rate (the DI's numerator and denominator).
    share_unprivileged : float in (0, 1)
        The unprivileged group's share of the pool.
    accuracy_unprivileged, accuracy_privileged : float in [0, 1] or None
        The proxy's accuracy in each group (``None``: ``p_phi``).
    sigma_a : float >= 0 or None
        Per-query standard deviation of the DI through A (``None``:
        :func:`~fairprobe.twosource.theory.di_sigma` of the rates).
    sigma_b : float >= 0 or None
        Per-query standard deviation of the DI through B alone (``None``: the model's; a value
        plans B as the matrix estimator, as ``b_estimator="matrix"``).

    The values are checked by :func:`plan_budget`, whose messages name them.
    """

    rate_unprivileged: float
    rate_privileged: float
    share_unprivileged: float
    accuracy_unprivileged: float | None = None
    accuracy_privileged: float | None = None
    sigma_a: float | None = None
    sigma_b: float | None = None


#: :func:`plan_budget`'s flat keywords (the compatibility form): the field of
#: :class:`PlanningRates` each sets.
_RATE_FLAGS: dict[str, tuple[str, str]] = {
    "sigma_a": ("rates", "sigma_a"),
    "sigma_b_value": ("rates", "sigma_b"),
    "accuracy_unprivileged": ("rates", "accuracy_unprivileged"),
    "accuracy_privileged": ("rates", "accuracy_privileged"),
}

_POSITIONAL_RATES = ("rate_unprivileged", "rate_privileged", "share_unprivileged")


def _planning_rates(positional: tuple[float | None, ...], rates: PlanningRates | None,
                    flags: dict[str, Any]) -> PlanningRates:
    """``rates`` (or a new object) with the positional rates and the flat keywords replacing
    its fields; without ``rates`` the three positional rates are required, as they were."""
    from fairprobe.options import split_flat, with_fields
    from fairprobe.stats.plan_options import missing_arguments

    values = split_flat(flags, _RATE_FLAGS, "plan_budget").get("rates", {})
    given = {k: v for k, v in zip(_POSITIONAL_RATES, positional, strict=True) if v is not None}
    if rates is None and len(given) < len(_POSITIONAL_RATES):
        missing = [k for k in _POSITIONAL_RATES if k not in given]
        raise missing_arguments("plan_budget", missing, "positional")
    return with_fields(rates, PlanningRates, {**given, **values}) if rates is not None else \
        PlanningRates(**given, **values)  # fmt: skip


def plan_budget(
    t: int,
    epsilon: float,
    p_phi: float,
    rate_unprivileged: float | None = None,
    rate_privileged: float | None = None,
    share_unprivileged: float | None = None,
    *,
    rates: PlanningRates | None = None,
    alpha: float = 0.05,
    gamma: float | None = 0.1,
    threshold: float = 0.8,
    b_estimator: str = "double-sampling",
    **flags: Any,
) -> BudgetPlan:
    """Classify ``t`` into the regimes of Appendix B and plan it (module docstring).

    The population is ``rates`` (:class:`PlanningRates`: the groups' rates, the unprivileged
    share, the proxy's per-group accuracies and the planning ``sigma_a`` / ``sigma_b``), or
    the three positional rates; ``flags`` are ``sigma_a``, ``sigma_b_value``,
    ``accuracy_unprivileged`` and ``accuracy_privileged`` as keywords (the compatibility form),
    replacing the object's fields, as the positional rates do.

    ``b_estimator`` sets ``t_B``: ``"double-sampling"`` (default; the audit's estimator, the
    checks validate the B answers they pair): the smallest budget with a split whose planned
    margin (:func:`large_regime_margin`, per-group accuracies) is within ``epsilon``, and the
    large-regime split is the one with the most checks within ``epsilon``; ``"matrix"`` (or a
    given ``sigma_b``): B alone with known confusion rates, ``t_B`` from :func:`sigma_b`,
    and ``t_fraud = min(t - t_B, t // 2)``.

    Raises
    ------
    BudgetError
        ``t < t_A``: the message says why the budget is refused and what would be enough.
    InvalidParameterError
        Out-of-range parameters (before any computation).
    """
    owner = "plan_budget"
    r = _planning_rates((rate_unprivileged, rate_privileged, share_unprivileged), rates, flags)
    tt = check_int(t, "t", owner, lo=2, hi=MAX_BUDGET)
    eps = check_real(epsilon, "epsilon", owner, lo=0.0, closed="neither")
    p = check_real(p_phi, "p_phi", owner, lo=0.0, hi=1.0)
    a = check_real(alpha, "alpha", owner, lo=0.0, hi=1.0, closed="neither")
    if gamma is not None:
        check_real(gamma, "gamma", owner, lo=0.0, hi=1.0)
    if not math.isfinite(eps):
        raise InvalidParameterError(f"The 'epsilon' parameter of {owner} must be finite.")
    th = _Thresholds.of(r, eps, p, a, b_estimator)
    base = dict(t=tt, epsilon=eps, alpha=a, p_phi=p, gamma=gamma, t_a=th.t_a, t_b=th.t_b,
                sigma_a=th.sigma_a, sigma_b=th.sigma_b)  # fmt: skip
    if tt < th.t_a:
        raise BudgetError(
            f"budget t={tt} is in the small regime (t < t_A = {th.t_a}): even an unmanipulated "
            f"audit API A needs {th.t_a} queries for a margin of error {eps:g} on the disparate "
            f"impact at alpha {a:g} (sigma_A {th.sigma_a:.3g}), so no split can both estimate "
            "mu and check A (Appendix B: this case must not happen). Raise the budget to at "
            f"least {th.t_a} or accept a larger --epsilon."
        )
    if tt <= th.t_b:
        front = pareto_frontier(
            tt, p, th.sigma_a, a, gamma, rate_unprivileged=r.rate_unprivileged,
            rate_privileged=r.rate_privileged, share_unprivileged=r.share_unprivileged,
            threshold=threshold,
        )  # fmt: skip
        rec = front.best_for_epsilon(eps)
        rec["source_of_estimate"] = "A"
        return BudgetPlan("pareto", recommended=rec, frontier=front, **base)  # type: ignore[arg-type]
    return BudgetPlan("large", recommended=th.large_split(tt, eps, p, a, gamma), **base)  # type: ignore[arg-type]


@dataclass(frozen=True)
class _Thresholds:
    """The two budget thresholds of a plan and what they rest on: ``t_A`` and ``sigma_A``,
    ``t_B`` and the per-B-query ``sigma_B`` (double sampling: at the threshold's best split),
    B's matrix-method sigma, the proxy's per-group accuracies and the expected cells."""

    t_a: int
    t_b: int
    sigma_a: float
    sigma_b: float
    sigma_b_matrix: float
    double: bool
    accuracies: tuple[float, float]
    cells: npt.NDArray[np.float64]

    @classmethod
    def of(cls, r: PlanningRates, eps: float, p: float, a: float, b_estimator: str
           ) -> _Thresholds:
        """The thresholds for the margin ``eps`` at level ``a`` (each value checked first)."""
        from fairprobe._validation import check_choice
        from fairprobe.twosource.correction import expected_cells

        owner = "plan_budget"
        ru, rp, pu = r.rate_unprivileged, r.rate_privileged, r.share_unprivileged
        sa = di_sigma(ru, rp, pu) if r.sigma_a is None else check_real(
            r.sigma_a, "sigma_a", owner, lo=0.0)  # fmt: skip
        check_choice(b_estimator, "b_estimator", owner, list(B_ESTIMATORS))
        au, ap = _accuracies(p, r.accuracy_unprivileged, r.accuracy_privileged, owner)
        sb_matrix = (
            sigma_b(ru, rp, pu, p, accuracy_unprivileged=au, accuracy_privileged=ap)
            if r.sigma_b is None
            else check_real(r.sigma_b, "sigma_b", owner, lo=0.0)
        )  # fmt: skip
        t_a = required_budget(sa, eps, a)
        double = b_estimator == "double-sampling" and r.sigma_b is None
        cells = expected_cells(ru, rp, pu, au, ap)
        if double:
            t_b = max(_large_threshold(t_a, eps, cells, a), t_a)
        else:
            t_b = max(required_budget(sb_matrix, eps, a), t_a)
        sb = sb_matrix
        if double and t_b <= MAX_BUDGET:  # per-B-query sd at the threshold's best split
            k = _large_split(t_b, eps, cells, a) or 1
            sb = (float(large_regime_margin(t_b - k, k, cells, a)) * math.sqrt(t_b - k)
                  / z_quantile(a))  # fmt: skip
        return cls(t_a, t_b, sa, sb, sb_matrix, double, (au, ap), cells)

    def large_split(self, tt: int, eps: float, p: float, a: float, gamma: float | None
                    ) -> dict[str, Any]:
        """The large regime's allocation of ``tt`` (``tt > t_B``): B estimates mu, A checks;
        double sampling: the split with the most checks within ``eps``; matrix:
        ``t_fraud = min(tt - t_B, tt // 2)``."""
        if self.double:
            t_fraud = _large_split(tt, eps, self.cells, a) or min(tt - self.t_b, tt // 2)
            n_b = tt - t_fraud
            eps_b = float(large_regime_margin(n_b, t_fraud, self.cells, a))
        else:
            t_fraud = min(tt - self.t_b, tt // 2)
            n_b = tt - t_fraud
            eps_b = float(z_quantile(a) * self.sigma_b / math.sqrt(n_b))
        g_eval = 0.1 if gamma is None else gamma
        test = detection_test(t_fraud, p, a, gamma=g_eval)
        au, ap = self.accuracies
        sbm = self.sigma_b_matrix
        return {
            "source_of_estimate": "B",
            "n_b": n_b,
            "n_a": t_fraud,
            "t_fraud": t_fraud,
            "epsilon_b": eps_b,
            "b_estimator": "double-sampling" if self.double else "matrix",
            "accuracy_unprivileged": au,
            "accuracy_privileged": ap,
            "sigma_b_proxy_only": sbm if math.isfinite(sbm) else None,
            "n_max": test.n_max,
            "size": test.size,
            "gamma": g_eval,
            "p_manip": test.p_manip,
        }
