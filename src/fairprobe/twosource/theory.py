"""The statistics of Section 4 of ``two-source-audits.md``: Lemmas 1 and 2, Theorem 3, allocation.

Notation (paper, Sections 3.2-4): the auditor spends ``t_fair`` queries on the audit API **A**
(all of them enter the disparate-impact estimate) and ``t_fraud`` queries on the user interface
**B**, each paired with one of the A queries and checked through a proxy of accuracy ``p_phi``.
``gamma`` is a manipulation rate; ``alpha`` the error level of both decisions.

Two deliberate departures from the printed paper, both explained in ``docs/twosource.md``:

* **Lemma 1 erratum.** Equation (2), ``gamma_max = eps_A / (th - 1/Y_B)``, is negative for every
  ``Y_B <= 1`` (since ``1/Y_B >= 1 > th``): Appendix A replaces ``mu_B`` by its upper bound ``th``
  inside a lower bound. Solving the same necessary condition
  ``mu_B (1 - gamma) + gamma / Y_B + eps_A >= th`` for ``gamma`` without that step gives
  :func:`gamma_max` = ``(th - mu_B - eps_A) / (1/Y_B - mu_B)``.
* **Two meanings of gamma.** Lemma 1's gamma is the share of the unprivileged group's negative
  answers that are flipped; Lemma 2's gamma is the share of *checked* answers that are flipped.
  :func:`flip_fraction` converts the first into the second (for uniformly drawn checks);
  Theorem 3 (:func:`theorem3`) applies it before Lemma 2, where the paper plugs one into the other.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy import optimize, special
from scipy import stats as sps

from fairprobe._validation import check_choice, check_int, check_real
from fairprobe.errors import InvalidParameterError

__all__ = [
    "STRATEGIES",
    "Allocation",
    "DetectionTest",
    "Frontier",
    "Theorem3",
    "allocate",
    "consistency_p_value",
    "detection_test",
    "di_sigma",
    "fairwashed_di",
    "fairwashed_rates",
    "flip_fraction",
    "gamma_max",
    "inconsistency_probability",
    "margin_of_error",
    "n_max",
    "p_manip",
    "pareto_frontier",
    "theorem3",
    "z_quantile",
]

#: Largest total budget the planner accepts: binomial tails stay exact in float64 well beyond it
#: and the frontier is evaluated on at most ``max_points`` allocations whatever the budget.
MAX_BUDGET = 10**12

#: Fairwashing strategies of the platform (Section 3.2 plus the mixed one left to future work).
STRATEGIES: tuple[str, ...] = ("none", "positive", "negative", "mixed")

FloatArray = npt.NDArray[np.float64]


# --------------------------------------------------------------------------------------------
# Lemma 2: the consistency test
# --------------------------------------------------------------------------------------------


def _check_p(p_phi: float, owner: str) -> float:
    return check_real(p_phi, "p_phi", owner, lo=0.0, hi=1.0)


def _check_alpha(alpha: float, owner: str) -> float:
    return check_real(alpha, "alpha", owner, lo=0.0, hi=1.0, closed="neither")


def n_max(t_fraud: int, p_phi: float, alpha: float = 0.05) -> int:
    r"""Largest number of inconsistencies an honest platform explains (Lemma 2).

    Under no manipulation the number of inconsistencies among ``t_fraud`` checks is
    :math:`n \sim \mathcal{B}(t_{fraud}, 1 - p_\phi)`. The threshold is the smallest ``n`` with

    .. math:: F_{\mathcal{B}(t_{fraud}, 1-p_\phi)}(n) \ge 1 - \alpha,

    computed from the exact binomial distribution, so that ``P(n(t_fraud) > n_max) <= alpha``:
    the auditor concludes manipulation when she sees more than ``n_max`` inconsistencies. The
    paper's worked example (Section 4.2): ``n_max(100, 0.91, 0.05) == 14``.
    """
    owner = "n_max"
    t = check_int(t_fraud, "t_fraud", owner, lo=0)
    p = _check_p(p_phi, owner)
    a = _check_alpha(alpha, owner)
    return _n_max(t, p, a)


@lru_cache(maxsize=4096)
def _n_max(t: int, p: float, a: float) -> int:
    return int(_n_max_vec(np.asarray([t], dtype=np.int64), p, a)[0])


def _n_max_vec(t: npt.NDArray[np.int64], p: float, a: float) -> npt.NDArray[np.int64]:
    """``n_max`` for many ``t`` at once: the binomial quantile (closed-form search in scipy).

    ``binom.ppf(q)`` is the smallest ``n`` with ``cdf(n) >= q``: O(1) memory per ``t``, where a
    cdf over ``0..t`` would take O(t) (``--checks 1e12`` would not fit in memory).
    """
    q = (1.0 - a) - 1e-12  # guard against rounding of 1 - alpha, as before
    t = np.asarray(t, dtype=np.int64)
    out = np.zeros(t.shape, dtype=np.int64)
    pos = t > 0
    if np.any(pos):
        nm = sps.binom.ppf(q, t[pos], 1.0 - p)
        nm = np.where(np.isfinite(nm), nm, t[pos])
        nm = np.clip(nm, 0, t[pos]).astype(np.int64)
        # ppf is computed in floats: step once down/up where the cdf says so (exact criterion)
        down = (nm > 0) & (sps.binom.cdf(nm - 1, t[pos], 1.0 - p) >= q)
        nm = np.where(down, nm - 1, nm)
        up = (nm < t[pos]) & (sps.binom.cdf(nm, t[pos], 1.0 - p) < q)
        out[pos] = np.where(up, nm + 1, nm)
    return out


def inconsistency_probability(p_phi: float, gamma: npt.ArrayLike) -> FloatArray:
    r"""Probability that a checked pair is inconsistent when a share ``gamma`` is flipped.

    .. math:: p_\phi^\gamma = \gamma p_\phi + (1 - \gamma)(1 - p_\phi)

    (Lemma 2): a flipped answer is inconsistent when the proxy was right, an unflipped one when
    it was wrong. ``gamma`` here is the share of *checked* answers flipped (see
    :func:`flip_fraction`).
    """
    g = np.asarray(gamma, dtype=np.float64)
    return np.asarray(g * p_phi + (1.0 - g) * (1.0 - p_phi), dtype=np.float64)


def p_manip(
    t_fraud: npt.ArrayLike, p_phi: float, gamma: npt.ArrayLike, alpha: float = 0.05
) -> FloatArray:
    r"""Probability that the consistency test proves manipulation (Lemma 2).

    .. math:: p_{manip} = 1 - F_{\mathcal{B}(t_{fraud}, p_\phi^\gamma)}(n_{max})

    Vectorised over ``t_fraud`` and ``gamma`` (numpy broadcasting). ``gamma = 0`` gives the
    test's exact size (``<= alpha``). The worked example of Section 4.2:
    ``p_manip(100, 0.91, 0.10) ~= 0.758``.
    """
    owner = "p_manip"
    p = _check_p(p_phi, owner)
    _check_alpha(alpha, owner)
    t_arr, g_arr = np.broadcast_arrays(
        np.asarray(t_fraud, dtype=np.int64), np.asarray(gamma, dtype=np.float64)
    )
    if np.any(t_arr < 0):
        raise InvalidParameterError(
            f"The 't_fraud' parameter of p_manip must be an int >= 0. Got {t_fraud!r} instead."
        )
    if np.any(~np.isfinite(g_arr)) or np.any((g_arr < 0) | (g_arr > 1)):
        raise InvalidParameterError(
            f"The 'gamma' parameter of p_manip must be a float in [0, 1]. Got {gamma!r} instead."
        )
    nm = _n_max_vec(t_arr.ravel(), p, float(alpha)).reshape(t_arr.shape)
    q = inconsistency_probability(p, g_arr)
    out = sps.binom.sf(nm, t_arr, q)
    return np.asarray(np.where(t_arr == 0, 0.0, out), dtype=np.float64)


def consistency_p_value(n_inconsistent: int, t_fraud: int, p_phi: float) -> float:
    r"""Exact one-sided p-value of ``n_inconsistent`` inconsistencies among ``t_fraud`` checks.

    :math:`P(\mathcal{B}(t_{fraud}, 1 - p_\phi) \ge n)`: the chance that an honest platform shows
    at least this many inconsistencies, given the proxy's own error rate.
    """
    owner = "consistency_p_value"
    t = check_int(t_fraud, "t_fraud", owner, lo=0)
    n = check_int(n_inconsistent, "n_inconsistent", owner, lo=0, hi=t)
    p = _check_p(p_phi, owner)
    if n == 0:
        return 1.0
    return float(sps.binom.sf(n - 1, t, 1.0 - p))


@dataclass(frozen=True)
class DetectionTest:
    """The consistency test of Lemma 2 for one plan (``t_fraud`` checks, accuracy, level).

    Attributes
    ----------
    t_fraud, p_phi, alpha :
        The plan.
    n_max : int
        Conclude manipulation when strictly more inconsistencies are seen.
    size : float
        Exact false-alarm probability ``P(B(t_fraud, 1 - p_phi) > n_max) <= alpha``.
    gamma : float or None
        Manipulation rate (share of checked answers flipped) at which ``p_manip`` is given.
    p_manip : float or None
        Detection probability at ``gamma``.
    """

    t_fraud: int
    p_phi: float
    alpha: float
    n_max: int
    size: float
    gamma: float | None = None
    p_manip: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "t_fraud": self.t_fraud,
            "p_phi": self.p_phi,
            "alpha": self.alpha,
            "n_max": self.n_max,
            "size": self.size,
            "gamma": self.gamma,
            "p_manip": self.p_manip,
        }


def detection_test(
    t_fraud: int, p_phi: float, alpha: float = 0.05, gamma: float | None = None
) -> DetectionTest:
    """Build the :class:`DetectionTest` of Lemma 2 (and ``p_manip`` at ``gamma`` if given)."""
    nm = n_max(t_fraud, p_phi, alpha)
    size = float(sps.binom.sf(nm, t_fraud, 1.0 - p_phi)) if t_fraud else 0.0
    pm = None
    if gamma is not None:
        check_real(gamma, "gamma", "detection_test", lo=0.0, hi=1.0)
        pm = float(p_manip(t_fraud, p_phi, gamma, alpha))
    return DetectionTest(int(t_fraud), float(p_phi), float(alpha), nm, size, gamma, pm)


# --------------------------------------------------------------------------------------------
# Section 4.1 and Lemma 1: the fairness estimate and the manipulation needed to pass it
# --------------------------------------------------------------------------------------------


def z_quantile(alpha: float) -> float:
    """Two-sided normal quantile ``z_alpha`` with ``P(|Z| <= z) = 1 - alpha`` (1.96 at 5%)."""
    a = _check_alpha(alpha, "z_quantile")
    return float(special.ndtri(1.0 - a / 2.0))


def di_sigma(rate_unprivileged: float, rate_privileged: float, share_unprivileged: float) -> float:
    r"""Per-query standard deviation :math:`\sigma_A` of the disparate-impact estimate.

    Delta method for :math:`\hat\mu = \hat r_u / \hat r_p` with ``t`` uniformly drawn queries, a
    share :math:`\pi_u` of them unprivileged:

    .. math::
        \sigma_A = \mu\sqrt{\frac{1 - r_u}{r_u \pi_u} + \frac{1 - r_p}{r_p (1 - \pi_u)}},
        \qquad \mathrm{sd}(\hat\mu) \approx \sigma_A / \sqrt{t}.
    """
    owner = "di_sigma"
    ru = check_real(rate_unprivileged, "rate_unprivileged", owner, lo=0.0, hi=1.0, closed="right")
    rp = check_real(rate_privileged, "rate_privileged", owner, lo=0.0, hi=1.0, closed="right")
    pu = check_real(share_unprivileged, "share_unprivileged", owner, lo=0.0, hi=1.0,
                    closed="neither")  # fmt: skip
    mu = ru / rp
    return float(mu * math.sqrt((1 - ru) / (ru * pu) + (1 - rp) / (rp * (1 - pu))))


def margin_of_error(sigma_a: float, t_fair: npt.ArrayLike, alpha: float = 0.05) -> FloatArray:
    r"""Margin of error of the DI estimate through A (Section 4.1).

    .. math:: \epsilon_A = z_\alpha \frac{\sigma_A}{\sqrt{t_{fair}}}
    """
    s = check_real(sigma_a, "sigma_a", "margin_of_error", lo=0.0)
    t = np.asarray(t_fair, dtype=np.float64)
    if np.any(t <= 0):
        raise InvalidParameterError(
            f"The 't_fair' parameter of margin_of_error must be an int >= 1. Got {t_fair!r} "
            "instead."
        )
    return np.asarray(z_quantile(alpha) * s / np.sqrt(t), dtype=np.float64)


def _check_strategy(strategy: str, mix: float, owner: str) -> tuple[str, float]:
    check_choice(strategy, "strategy", owner, STRATEGIES)
    m = check_real(mix, "mix", owner, lo=0.0, hi=1.0)
    return strategy, m


def fairwashed_rates(
    rate_unprivileged: npt.ArrayLike,
    rate_privileged: npt.ArrayLike,
    gamma: npt.ArrayLike,
    strategy: str = "positive",
    mix: float = 0.5,
) -> tuple[FloatArray, FloatArray]:
    r"""Positive rates seen through A when the platform fairwashes at rate ``gamma``.

    * ``positive`` (Lemma 1, Appendix A): each unprivileged negative is flipped to positive with
      probability :math:`\gamma`: :math:`r_u' = r_u + \gamma(1 - r_u)`, :math:`r_p' = r_p`.
    * ``negative`` (Section 3.2): each privileged positive is flipped to negative with probability
      :math:`\gamma`: :math:`r_p' = (1 - \gamma) r_p`.
    * ``mixed``: both at once, positive flips at rate :math:`m\gamma` and negative flips at rate
      :math:`(1 - m)\gamma` (``mix = m``; the platform server's ``--mix``).
    * ``none``: unchanged.
    """
    s, m = _check_strategy(strategy, mix, "fairwashed_rates")
    ru = np.asarray(rate_unprivileged, dtype=np.float64)
    rp = np.asarray(rate_privileged, dtype=np.float64)
    g = np.asarray(gamma, dtype=np.float64)
    if s == "none":
        g_pos, g_neg = 0.0 * g, 0.0 * g
    elif s == "positive":
        g_pos, g_neg = g, 0.0 * g
    elif s == "negative":
        g_pos, g_neg = 0.0 * g, g
    else:
        g_pos, g_neg = m * g, (1.0 - m) * g
    return (
        np.asarray(ru + g_pos * (1.0 - ru), dtype=np.float64),
        np.asarray(rp * (1.0 - g_neg), dtype=np.float64),
    )


def fairwashed_di(
    rate_unprivileged: npt.ArrayLike,
    rate_privileged: npt.ArrayLike,
    gamma: npt.ArrayLike,
    strategy: str = "positive",
    mix: float = 0.5,
) -> FloatArray:
    r"""Disparate impact :math:`\mu_A` seen through A under fairwashing (Appendix A).

    For ``positive``: :math:`\mu_A = \mu_B (1 - \gamma) + \gamma / Y_B` with
    :math:`Y_B = r_p` the privileged positive rate.
    """
    ru, rp = fairwashed_rates(rate_unprivileged, rate_privileged, gamma, strategy, mix)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(ru / rp, dtype=np.float64)


def gamma_max(
    rate_unprivileged: float,
    rate_privileged: float,
    epsilon_a: float = 0.0,
    threshold: float = 0.8,
    strategy: str = "positive",
    mix: float = 0.5,
) -> float:
    r"""Lemma 1 (corrected): the manipulation rate the auditor is robust to.

    The platform can only look fair when :math:`\mu_A + \epsilon_A \ge th`. For positive
    discrimination (:math:`\mu_A = \mu_B(1-\gamma) + \gamma/Y_B`) this needs

    .. math:: \gamma \ge \gamma_{max} = \frac{th - \mu_B - \epsilon_A}{1/Y_B - \mu_B},

    for negative discrimination (:math:`\mu_A = \mu_B / (1 - \gamma)`)
    :math:`\gamma_{max} = 1 - \mu_B / (th - \epsilon_A)`, and for ``mixed`` the root of
    :math:`\mu_A(\gamma) = th - \epsilon_A`, found numerically. Below ``gamma_max`` the auditor
    still concludes unfair; the result is 0 when :math:`\mu_B + \epsilon_A \ge th` already, and
    ``inf`` when no rate in [0, 1] reaches the threshold.
    """
    owner = "gamma_max"
    ru = check_real(rate_unprivileged, "rate_unprivileged", owner, lo=0.0, hi=1.0)
    rp = check_real(rate_privileged, "rate_privileged", owner, lo=0.0, hi=1.0, closed="right")
    eps = check_real(epsilon_a, "epsilon_a", owner, lo=0.0)
    th = check_real(threshold, "threshold", owner, lo=0.0, closed="neither")
    s, m = _check_strategy(strategy, mix, owner)
    target = th - eps
    mu_b = ru / rp
    if mu_b >= target:
        return 0.0
    if s == "none":
        return math.inf
    if s == "positive":
        g = (target - mu_b) / (1.0 / rp - mu_b)
    elif s == "negative":
        if mu_b <= 0.0:  # nothing positive to show for the unprivileged group
            return math.inf
        g = 1.0 - mu_b / target if target > 0 else 0.0
    else:

        def gap(x: float) -> float:
            return float(fairwashed_di(ru, rp, x, "mixed", m)) - target

        top = 1.0 - 1e-12
        if gap(top) < 0:
            return math.inf
        g = float(optimize.brentq(gap, 0.0, top, xtol=1e-12))
    return float(g) if 0.0 <= g <= 1.0 else math.inf


def flip_fraction(
    gamma: npt.ArrayLike,
    rate_unprivileged: float,
    rate_privileged: float,
    share_unprivileged: float,
    strategy: str = "positive",
    mix: float = 0.5,
) -> FloatArray:
    r"""Share of all answers flipped, from Lemma 1's per-group rate ``gamma``.

    Positive discrimination flips a share :math:`\gamma` of the unprivileged negatives, i.e.
    :math:`\gamma \pi_u (1 - r_u)` of all answers; negative discrimination
    :math:`\gamma (1 - \pi_u) r_p`; ``mixed`` the sum with rates :math:`m\gamma` and
    :math:`(1-m)\gamma`. For uniformly drawn checks this is the ``gamma`` of Lemma 2.
    """
    owner = "flip_fraction"
    ru = check_real(rate_unprivileged, "rate_unprivileged", owner, lo=0.0, hi=1.0)
    rp = check_real(rate_privileged, "rate_privileged", owner, lo=0.0, hi=1.0)
    pu = check_real(share_unprivileged, "share_unprivileged", owner, lo=0.0, hi=1.0)
    s, m = _check_strategy(strategy, mix, owner)
    g = np.asarray(gamma, dtype=np.float64)
    pos = {"none": 0.0, "positive": 1.0, "negative": 0.0, "mixed": m}[s]
    neg = {"none": 0.0, "positive": 0.0, "negative": 1.0, "mixed": 1.0 - m}[s]
    return np.asarray(g * (pos * pu * (1 - ru) + neg * (1 - pu) * rp), dtype=np.float64)


# --------------------------------------------------------------------------------------------
# Theorem 3 and the budget allocation of Section 5.3
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Allocation:
    """A split of the total budget ``t`` (Section 5.3).

    ``beta`` is the share of ``t`` spent on the first share (A only); the rest buys
    ``t_fraud = floor(t (1 - beta) / 2)`` checks, each one A query and one B query. All A
    answers enter the DI estimate: ``t_fair = t - 2 t_fraud + t_fraud``.
    """

    t: int
    t_fair: int
    t_fraud: int

    @property
    def beta(self) -> float:
        return (self.t - 2 * self.t_fraud) / self.t if self.t else 1.0

    @property
    def spent(self) -> int:
        return self.t_fair + self.t_fraud

    def to_dict(self) -> dict[str, Any]:
        return {
            "t": self.t,
            "t_fair": self.t_fair,
            "t_fraud": self.t_fraud,
            "beta": self.beta,
            "spent": self.spent,
        }


def allocate(t: int, beta: float) -> Allocation:
    """Split ``t`` queries: ``t beta`` on A only, the rest into A/B pairs (Section 5.3).

    Respects the constraints of Section 3.2: ``0 <= t_fraud <= t_fair`` and
    ``t_fair + t_fraud <= t``.
    """
    tt = check_int(t, "t", "allocate", lo=1)
    b = check_real(beta, "beta", "allocate", lo=0.0, hi=1.0)
    t_fraud = int(math.floor(tt * (1.0 - b) / 2.0 + 1e-9))
    return Allocation(tt, tt - t_fraud, t_fraud) if t_fraud else Allocation(tt, tt, 0)


@dataclass(frozen=True)
class Theorem3:
    """Theorem 3 evaluated for one allocation.

    ``gamma_min`` is Lemma 1's smallest per-group rate that lets the platform look fair with
    margin ``epsilon_a``; ``gamma_checked`` the share of checked answers it flips
    (:func:`flip_fraction`); ``miss_probability`` is
    :math:`F_{\\mathcal{B}(t_{fraud}, p_\\phi^{\\gamma})}(n_{max}) = 1 - p_{manip}`; the audit
    succeeds when it is at most ``alpha``.
    """

    allocation: Allocation
    epsilon_a: float
    gamma_min: float
    gamma_checked: float
    n_max: int
    p_manip: float
    alpha: float

    @property
    def miss_probability(self) -> float:
        return 1.0 - self.p_manip

    @property
    def succeeds(self) -> bool:
        return self.miss_probability <= self.alpha

    def to_dict(self) -> dict[str, Any]:
        d = self.allocation.to_dict()
        d.update(
            epsilon_a=self.epsilon_a,
            gamma_min=self.gamma_min,
            gamma_checked=self.gamma_checked,
            n_max=self.n_max,
            p_manip=self.p_manip,
            miss_probability=self.miss_probability,
            succeeds=self.succeeds,
        )
        return d


def theorem3(
    allocation: Allocation,
    p_phi: float,
    rate_unprivileged: float,
    rate_privileged: float,
    share_unprivileged: float,
    alpha: float = 0.05,
    threshold: float = 0.8,
    strategy: str = "positive",
    mix: float = 0.5,
    sigma_a: float | None = None,
) -> Theorem3:
    r"""Theorem 3: the detection probability against the cheapest successful fairwashing.

    .. math::
        \mathcal{B}_{t_{fair}, t_{fraud}} = \mathcal{B}\bigl(t_{fraud},\,
        p_\phi^{\gamma(t_{fair})}\bigr),\quad
        \gamma(t_{fair}) = \mathrm{flip}\bigl(\gamma_{max}(\epsilon_A(t_{fair}))\bigr)

    with :math:`\epsilon_A = z_\alpha \sigma_A / \sqrt{t_{fair}}` (``sigma_a`` defaults to
    :func:`di_sigma` of the given rates) and :func:`gamma_max` the corrected Lemma 1.
    """
    sig = (
        di_sigma(rate_unprivileged, rate_privileged, share_unprivileged)
        if sigma_a is None
        else float(sigma_a)
    )
    eps = float(margin_of_error(sig, allocation.t_fair, alpha))
    g = gamma_max(rate_unprivileged, rate_privileged, eps, threshold, strategy, mix)
    g_eff = 1.0 if math.isinf(g) else g
    g_chk = float(
        flip_fraction(g_eff, rate_unprivileged, rate_privileged, share_unprivileged, strategy, mix)
    )
    nm = n_max(allocation.t_fraud, p_phi, alpha)
    pm = float(p_manip(allocation.t_fraud, p_phi, g_chk, alpha)) if allocation.t_fraud else 0.0
    return Theorem3(allocation, eps, g, g_chk, nm, pm, float(alpha))


@dataclass(frozen=True)
class Frontier:
    """All allocations of a budget ``t`` and its Pareto frontier (Figure 4).

    Arrays hold one entry per ``t_fraud`` in ``0 .. t // 2``. A point is Pareto-optimal when no
    other point has both a smaller ``epsilon_a`` and a larger ``p_manip`` (ties kept once).
    """

    t: int
    p_phi: float
    alpha: float
    sigma_a: float
    gamma: FloatArray
    t_fraud: npt.NDArray[np.int64]
    t_fair: npt.NDArray[np.int64]
    beta: FloatArray
    epsilon_a: FloatArray
    p_manip: FloatArray
    n_max: npt.NDArray[np.int64]
    optimal: npt.NDArray[np.bool_] = field(repr=False)

    def pareto(self) -> list[dict[str, Any]]:
        """The Pareto-optimal allocations, by increasing ``epsilon_a``."""
        idx = np.flatnonzero(self.optimal)
        idx = idx[np.argsort(self.epsilon_a[idx], kind="stable")]
        return [self._row(int(i)) for i in idx]

    def _row(self, i: int) -> dict[str, Any]:
        return {
            "t_fair": int(self.t_fair[i]),
            "t_fraud": int(self.t_fraud[i]),
            "beta": float(self.beta[i]),
            "epsilon_a": float(self.epsilon_a[i]),
            "gamma": float(self.gamma[i]),
            "n_max": int(self.n_max[i]),
            "p_manip": float(self.p_manip[i]),
        }

    def best_for_epsilon(self, epsilon_a: float) -> dict[str, Any]:
        """The allocation with the largest ``p_manip`` whose margin is at most ``epsilon_a``."""
        ok = np.flatnonzero(self.epsilon_a <= epsilon_a + 1e-12)
        if not ok.size:
            raise InvalidParameterError(
                f"No allocation of t={self.t} reaches epsilon_a <= {epsilon_a:g}; the smallest "
                f"is {float(self.epsilon_a.min()):.4g}."
            )
        i = ok[np.argmax(self.p_manip[ok])]
        return self._row(int(i))

    def to_dict(self) -> dict[str, Any]:
        return {
            "t": self.t,
            "p_phi": self.p_phi,
            "alpha": self.alpha,
            "sigma_a": self.sigma_a,
            "points": [self._row(i) for i in range(self.t_fraud.size)],
            "pareto": self.pareto(),
        }


def _pareto_mask(eps: FloatArray, pm: FloatArray) -> npt.NDArray[np.bool_]:
    """Non-dominated points for (minimise eps, maximise pm), exact duplicates kept once.

    Sweep by increasing ``eps`` (ties: largest ``pm`` first): a point is on the frontier iff its
    ``pm`` beats every point before it. O(n log n) time, O(n) memory (was O(n^2)).
    """
    order = np.lexsort((-pm, eps))
    pm_sorted = pm[order]
    best_before = np.concatenate([[-np.inf], np.maximum.accumulate(pm_sorted)[:-1]])
    keep_sorted = pm_sorted > best_before
    keep = np.zeros(eps.size, dtype=bool)
    keep[order[keep_sorted]] = True
    return keep


def _gamma_max_vec(
    ru: float, rp: float, eps: FloatArray, threshold: float, strategy: str, mix: float
) -> FloatArray:
    r""":func:`gamma_max` for many margins at once (all three strategies in closed form).

    ``mixed``: :math:`r_u + m\gamma(1-r_u) = \tau r_p (1 - (1-m)\gamma)` is linear in
    :math:`\gamma`, with :math:`\tau = th - \epsilon_A`.
    """
    s, m = _check_strategy(strategy, mix, "gamma_max")
    target = threshold - np.asarray(eps, dtype=np.float64)
    mu_b = ru / rp
    with np.errstate(divide="ignore", invalid="ignore"):
        if s == "none":
            g = np.full(target.shape, np.inf)
        elif s == "positive":
            g = (target - mu_b) / (1.0 / rp - mu_b)
        elif s == "negative":
            g = np.where(target > 0, 1.0 - mu_b / target, 0.0) if mu_b > 0 else np.inf + target
        else:
            g = (target * rp - ru) / (m * (1.0 - ru) + target * rp * (1.0 - m))
    g = np.where((g >= 0.0) & (g <= 1.0), g, np.inf)
    return np.asarray(np.where(mu_b >= target, 0.0, g), dtype=np.float64)


def pareto_frontier(
    t: int,
    p_phi: float,
    sigma_a: float,
    alpha: float = 0.05,
    gamma: float | None = None,
    *,
    rate_unprivileged: float | None = None,
    rate_privileged: float | None = None,
    share_unprivileged: float | None = None,
    threshold: float = 0.8,
    strategy: str = "positive",
    mix: float = 0.5,
    max_points: int = 20_001,
) -> Frontier:
    r"""Every split of ``t`` into ``(t_fair, t_fraud)`` with its margin and detection power.

    For ``t_fraud = 0 .. t // 2`` (``t_fair = t - t_fraud``, see :func:`allocate`):
    :math:`\epsilon_A = z_\alpha\sigma_A/\sqrt{t_{fair}}` and :math:`p_{manip}` from Lemma 2.
    With ``gamma`` given, ``p_manip`` is at that fixed share of checked answers flipped;
    otherwise at Theorem 3's cheapest successful fairwashing for each ``t_fair`` (which needs the
    three rates). Returns a :class:`Frontier` whose ``optimal`` mask marks the Pareto frontier of
    Figure 4. Everything is vectorised (binomial quantiles and tails in closed form, an
    O(n log n) Pareto sweep); above ``max_points`` allocations an even grid of ``t_fraud`` is
    used, so time and memory stay bounded for any budget up to :data:`MAX_BUDGET`.
    """
    owner = "pareto_frontier"
    tt = check_int(t, "t", owner, lo=2, hi=MAX_BUDGET)
    p = _check_p(p_phi, owner)
    sig = check_real(sigma_a, "sigma_a", owner, lo=0.0)
    _check_alpha(alpha, owner)
    pts = check_int(max_points, "max_points", owner, lo=2)
    if tt // 2 + 1 <= pts:
        t_fraud = np.arange(0, tt // 2 + 1, dtype=np.int64)
    else:  # an even grid of allocations (both ends kept): memory stays bounded for any t
        t_fraud = np.unique(np.round(np.linspace(0, tt // 2, pts)).astype(np.int64))
    t_fair = tt - t_fraud
    eps = margin_of_error(sig, t_fair, alpha)
    if gamma is not None:
        g = np.full(t_fraud.shape, check_real(gamma, "gamma", owner, lo=0.0, hi=1.0))
    else:
        if rate_unprivileged is None or rate_privileged is None or share_unprivileged is None:
            raise InvalidParameterError(
                "pareto_frontier needs either 'gamma' or the three rates rate_unprivileged, "
                "rate_privileged and share_unprivileged (Theorem 3)."
            )
        gm = _gamma_max_vec(
            rate_unprivileged, rate_privileged, eps, threshold, strategy, mix
        )
        gm = np.where(np.isinf(gm), 1.0, gm)
        g = flip_fraction(gm, rate_unprivileged, rate_privileged, share_unprivileged, strategy, mix)
    nm = _n_max_vec(t_fraud, p, float(alpha))
    q = inconsistency_probability(p, g)
    pm = np.where(t_fraud == 0, 0.0, sps.binom.sf(nm, t_fraud, q))
    beta = (tt - 2 * t_fraud) / tt
    return Frontier(
        tt, p, float(alpha), sig, np.asarray(g, dtype=np.float64), t_fraud, t_fair,
        np.asarray(beta, dtype=np.float64), eps, pm, nm, _pareto_mask(eps, pm),
    )  # fmt: skip
