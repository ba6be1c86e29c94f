"""Generalized likelihood ratio statistics for the tolerance hypotheses ``|g| <= delta``.

The auditor tests H0: ``|g| <= delta`` (compliant) against H1: ``|g| > delta`` (violation), where
``g = theta_a - theta_b`` is the difference of a group-conditional parameter: the positive rate
(decision access, Bernoulli likelihood) or the mean score / mean logit (score and logit access,
Gaussian likelihood — a proxy audit), as in Section "Methodology" of Pitsiorlas, Sourla and
Kountouris, *Sequential Fairness Auditing with Limited Output Access* (EWAF 2026).

Both hypotheses are composite. Their generalized likelihood ratio is computed exactly: the
log-likelihood is concave in ``g`` along its profile, so the supremum over the hypothesis that does
*not* contain the unconstrained maximum ``g_hat`` is attained on the boundary ``|g| = delta``::

    D(c)    = l(theta_hat) - max { l(theta) : theta_a - theta_b = c }         (>= 0)
    Lambda  = sign(|g_hat| - delta) * min(D(+delta), D(-delta))

``Lambda > 0`` is evidence of a violation, ``Lambda < 0`` of compliance. For the Bernoulli model the
constrained maximum is the Farrington–Manning restricted MLE (closed form, a trigonometric root of
a cubic); for the Gaussian model with plug-in group variances ``D(c) = (g_hat - c)^2 / (2 V)`` with
``V = s_a^2 / n_a + s_b^2 / n_b``. Every function here takes running sums, so one step costs O(1);
each exists in a numpy version (any shape, used over many random orders at once) and a pure-Python
scalar version (used by the per-step auditors; the two are tested against each other).

With fractional "counts" equal to the group shares ``pi_a, pi_b`` and the true parameters, ``D``
is the Kullback–Leibler information per query between the truth and the nearest point of the other
hypothesis: the denominator of Wald's lower bound on the expected sample size
(:func:`fairprobe.sequential.boundaries.wald_lower_bound`).
"""

from __future__ import annotations

import math
from typing import TypeVar

import numpy as np
import numpy.typing as npt
from scipy.special import xlogy

from fairprobe._validation import check_int, check_real

__all__ = [
    "bernoulli_divergence",
    "bernoulli_divergence_scalar",
    "bernoulli_glr",
    "bernoulli_glr_scalar",
    "bernoulli_restricted_mle",
    "bernoulli_restricted_mle_scalar",
    "gaussian_glr",
    "gaussian_glr_scalar",
]

FloatArray = npt.NDArray[np.float64]
_Num = TypeVar("_Num", float, FloatArray)
_EPS = 1e-12


# --------------------------------------------------------------------------- Bernoulli (decisions)
def _fm_cubic(theta: _Num, p1: _Num, p2: _Num, c: float) -> tuple[_Num, _Num, _Num, _Num]:
    """Coefficients ``a, b, cc`` of Farrington & Manning's cubic in ``p1~`` and the ``v`` of its
    trigonometric root, with ``theta = n2 / n1``.

    Plain arithmetic, so floats (per-step) and arrays (vectorised) share the formulas and give
    the same bits; the root itself is taken per path (``math`` or ``numpy``).
    """
    a = 1.0 + theta
    b = -(1.0 + theta + p1 + theta * p2 + c * (theta + 2.0))
    cc = c * c + c * (2.0 * p1 + theta + 1.0) + p1 + theta * p2
    d = -p1 * c * (1.0 + c)
    v = b**3 / (27.0 * a**3) - b * cc / (6.0 * a**2) + d / (2.0 * a)
    return a, b, cc, v


def bernoulli_restricted_mle(
    n1: npt.ArrayLike, p1: npt.ArrayLike, n2: npt.ArrayLike, p2: npt.ArrayLike, c: float
) -> tuple[FloatArray, FloatArray]:
    """Maximum likelihood ``(p1~, p2~)`` of two binomials under ``p1 - p2 = c``.

    Farrington & Manning (1990), Statistics in Medicine 9(12): the score equation is a cubic in
    ``p1~`` whose relevant root is ``2 u cos(w) - b / (3 a)``. ``n1, n2 > 0`` may be fractional.
    """
    n1a = np.asarray(n1, dtype=float)
    n2a = np.asarray(n2, dtype=float)
    q1 = np.asarray(p1, dtype=float)
    q2 = np.asarray(p2, dtype=float)
    a, b, cc, v = _fm_cubic(n2a / n1a, q1, q2, c)
    disc = np.maximum(b**2 / (9.0 * a**2) - cc / (3.0 * a), 0.0)
    u = np.where(v >= 0, 1.0, -1.0) * np.sqrt(disc)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(u != 0, v / np.where(u != 0, u**3, 1.0), 0.0)
    w = (np.pi + np.arccos(np.clip(ratio, -1.0, 1.0))) / 3.0
    t1 = 2.0 * u * np.cos(w) - b / (3.0 * a)
    lo, hi = max(0.0, c), min(1.0, 1.0 + c)
    t1 = np.clip(t1, lo, hi)
    return t1, t1 - c


def bernoulli_restricted_mle_scalar(
    n1: float, p1: float, n2: float, p2: float, c: float
) -> tuple[float, float]:
    """Scalar twin of :func:`bernoulli_restricted_mle` (pure Python, for per-step use)."""
    a, b, cc, v = _fm_cubic(n2 / n1, p1, p2, c)
    u = (1.0 if v >= 0 else -1.0) * math.sqrt(max(b * b / (9.0 * a * a) - cc / (3.0 * a), 0.0))
    ratio = v / u**3 if u != 0 else 0.0
    w = (math.pi + math.acos(min(1.0, max(-1.0, ratio)))) / 3.0
    t1 = 2.0 * u * math.cos(w) - b / (3.0 * a)
    t1 = min(min(1.0, 1.0 + c), max(max(0.0, c), t1))
    return t1, t1 - c


def _loglik(n: FloatArray, phat: FloatArray, p: FloatArray) -> FloatArray:
    p = np.clip(p, _EPS, 1.0 - _EPS)
    out: FloatArray = xlogy(n * phat, p) + xlogy(n * (1.0 - phat), 1.0 - p)
    return out


def bernoulli_divergence(
    n1: npt.ArrayLike, p1: npt.ArrayLike, n2: npt.ArrayLike, p2: npt.ArrayLike, c: float
) -> FloatArray:
    """``D(c)``: log-likelihood at the MLE minus the maximum under ``p1 - p2 = c`` (>= 0)."""
    n1a = np.asarray(n1, dtype=float)
    n2a = np.asarray(n2, dtype=float)
    q1 = np.asarray(p1, dtype=float)
    q2 = np.asarray(p2, dtype=float)
    t1, t2 = bernoulli_restricted_mle(n1a, q1, n2a, q2, c)
    # n * phat * log(phat / p~) + n * (1 - phat) * log((1 - phat) / (1 - p~)), with 0 log 0 = 0
    top = _loglik(n1a, q1, q1) + _loglik(n2a, q2, q2)
    con = _loglik(n1a, q1, t1) + _loglik(n2a, q2, t2)
    out: FloatArray = np.maximum(top - con, 0.0)
    return out


def _ll_scalar(n: float, phat: float, p: float) -> float:
    p = min(1.0 - _EPS, max(_EPS, p))
    out = 0.0
    if phat > 0.0:
        out += n * phat * math.log(p)
    if phat < 1.0:
        out += n * (1.0 - phat) * math.log(1.0 - p)
    return out


def bernoulli_divergence_scalar(n1: float, p1: float, n2: float, p2: float, c: float) -> float:
    """Scalar twin of :func:`bernoulli_divergence`."""
    t1, t2 = bernoulli_restricted_mle_scalar(n1, p1, n2, p2, c)
    top = _ll_scalar(n1, p1, p1) + _ll_scalar(n2, p2, p2)
    con = _ll_scalar(n1, p1, t1) + _ll_scalar(n2, p2, t2)
    return max(top - con, 0.0)


def bernoulli_glr(
    n1: npt.ArrayLike,
    x1: npt.ArrayLike,
    n2: npt.ArrayLike,
    x2: npt.ArrayLike,
    delta: float,
    min_per_group: int = 1,
) -> FloatArray:
    """Signed GLR statistic ``Lambda`` of H1 ``|p1 - p2| > delta`` against H0 ``<= delta``.

    ``n1, x1`` (``n2, x2``) are the queries and positive decisions of group a (b) so far. Where a
    group has fewer than ``min_per_group`` queries the statistic is 0 (no evidence yet).
    """
    n1a = np.asarray(n1, dtype=float)
    n2a = np.asarray(n2, dtype=float)
    ok = (n1a >= max(min_per_group, 1)) & (n2a >= max(min_per_group, 1))
    s1 = np.where(ok, n1a, 1.0)
    s2 = np.where(ok, n2a, 1.0)
    q1 = np.where(ok, np.asarray(x1, dtype=float) / s1, 0.5)
    q2 = np.where(ok, np.asarray(x2, dtype=float) / s2, 0.5)
    dplus = bernoulli_divergence(s1, q1, s2, q2, delta)
    dminus = bernoulli_divergence(s1, q1, s2, q2, -delta)
    sign = np.sign(np.abs(q1 - q2) - delta)
    out: FloatArray = np.where(ok, sign * np.minimum(dplus, dminus), 0.0)
    return out


def bernoulli_glr_scalar(
    n1: float, x1: float, n2: float, x2: float, delta: float, min_per_group: int = 1
) -> float:
    """Scalar twin of :func:`bernoulli_glr`."""
    m = max(min_per_group, 1)
    if n1 < m or n2 < m:
        return 0.0
    q1, q2 = x1 / n1, x2 / n2
    gap = abs(q1 - q2)
    if gap == delta:
        return 0.0
    if gap > delta:
        # the profile log-likelihood is concave in c = p1 - p2 with its maximum at q1 - q2, so
        # the boundary point on the same side is the nearer one: one restricted MLE suffices
        return bernoulli_divergence_scalar(n1, q1, n2, q2, delta if q1 > q2 else -delta)
    d = min(
        bernoulli_divergence_scalar(n1, q1, n2, q2, delta),
        bernoulli_divergence_scalar(n1, q1, n2, q2, -delta),
    )
    return d if gap > delta else -d


# --------------------------------------------------------------------- Gaussian (scores, logits)
def gaussian_glr(
    n1: npt.ArrayLike,
    s1: npt.ArrayLike,
    q1: npt.ArrayLike,
    n2: npt.ArrayLike,
    s2: npt.ArrayLike,
    q2: npt.ArrayLike,
    delta: float,
    min_per_group: int = 2,
    var_floor: float = 1e-6,
) -> FloatArray:
    """Signed GLR statistic for the group-conditional means of a Gaussian working model.

    ``n, s, q`` are the count, sum and sum of squares of each group's observations. The group
    variances are the running maximum-likelihood estimates (floored at ``var_floor``), plugged in;
    then ``D(c) = (g_hat - c)^2 / (2 V)`` with ``V = s_a^2 / n_a + s_b^2 / n_b`` and ``Lambda =
    sign(|g_hat| - delta) * min(D(delta), D(-delta)) = sign * (|g_hat| - delta)^2 / (2 V)``.
    """
    n1a = np.asarray(n1, dtype=float)
    n2a = np.asarray(n2, dtype=float)
    m = max(min_per_group, 1)
    ok = (n1a >= m) & (n2a >= m)
    c1 = np.where(ok, n1a, 1.0)
    c2 = np.where(ok, n2a, 1.0)
    m1 = np.asarray(s1, dtype=float) / c1
    m2 = np.asarray(s2, dtype=float) / c2
    v1 = np.maximum(np.asarray(q1, dtype=float) / c1 - m1 * m1, var_floor)
    v2 = np.maximum(np.asarray(q2, dtype=float) / c2 - m2 * m2, var_floor)
    var = v1 / c1 + v2 / c2
    excess = np.abs(m1 - m2) - delta
    out: FloatArray = np.where(ok, np.sign(excess) * excess * excess / (2.0 * var), 0.0)
    return out


def gaussian_glr_scalar(
    n1: float,
    s1: float,
    q1: float,
    n2: float,
    s2: float,
    q2: float,
    delta: float,
    min_per_group: int = 2,
    var_floor: float = 1e-6,
) -> float:
    """Scalar twin of :func:`gaussian_glr`."""
    m = max(min_per_group, 1)
    if n1 < m or n2 < m:
        return 0.0
    m1, m2 = s1 / n1, s2 / n2
    v1 = max(q1 / n1 - m1 * m1, var_floor)
    v2 = max(q2 / n2 - m2 * m2, var_floor)
    excess = abs(m1 - m2) - delta
    stat = excess * excess / (2.0 * (v1 / n1 + v2 / n2))
    return stat if excess > 0 else -stat


# ------------------------------------------------------------------------------- the GLR test
from fairprobe.sequential.base import (  # noqa: E402  (the statistics above stand alone)
    OrdersOutcome,
    SequentialTest,
    Stepper,
    check_budget,
    first_crossing,
    register_test,
)
from fairprobe.sequential.boundaries import Boundaries, wald_boundaries  # noqa: E402


def _cumulative_glr(
    test: GLRTest, in_a: npt.NDArray[np.bool_], x: FloatArray, final_only: bool = False
) -> FloatArray:
    """Signed GLR statistic after every query of every order (shape of ``x``).

    With ``final_only`` only the statistic after the last query (one per order) is computed.
    """

    def acc(v: FloatArray) -> FloatArray:
        out: FloatArray = v.sum(axis=-1) if final_only else np.cumsum(v, axis=-1)
        return out

    a = in_a.astype(float)
    b = 1.0 - a
    n1 = acc(a)
    n2 = acc(b)
    if test.access == "decisions":
        return bernoulli_glr(n1, acc(a * x), n2, acc(b * x), test.tolerance, test.min_per_group)
    xx = x * x
    return gaussian_glr(
        n1, acc(a * x), acc(a * xx), n2, acc(b * x), acc(b * xx),
        test.tolerance, test.min_per_group, test.var_floor,
    )  # fmt: skip


class _GLRStepper(Stepper):
    def __init__(self, test: GLRTest, budget: int) -> None:
        super().__init__(budget)
        self.t = test
        self.bnd = test.boundaries
        self.n1 = self.n2 = 0
        self.s1 = self.s2 = self.q1 = self.q2 = 0.0
        self.stat = 0.0

    @property
    def statistic_upper(self) -> float:
        return self.stat

    @property
    def statistic_lower(self) -> float:
        return self.stat

    def _observe(self, in_group_a: bool, value: float) -> str | None:
        if in_group_a:
            self.n1 += 1
            self.s1 += value
            self.q1 += value * value
        else:
            self.n2 += 1
            self.s2 += value
            self.q2 += value * value
        t = self.t
        if t.access == "decisions":
            self.stat = bernoulli_glr_scalar(
                self.n1, self.s1, self.n2, self.s2, t.tolerance, t.min_per_group
            )
        else:
            self.stat = gaussian_glr_scalar(
                self.n1, self.s1, self.q1, self.n2, self.s2, self.q2,
                t.tolerance, t.min_per_group, t.var_floor,
            )  # fmt: skip
        if self.stat >= self.bnd.upper:
            return "violation"
        if self.bnd.lower is not None and self.stat <= self.bnd.lower:
            return "compliant"
        return None


@register_test("glr-wald")
class GLRTest(SequentialTest):
    """The paper's sequential GLR test with Wald-style boundaries.

    After each query the signed statistic ``Lambda_t`` (module docstring) is compared with
    ``u = log((1 - beta) / alpha)`` (stop: violation) and ``l = log(beta / (1 - alpha))``
    (stop: compliant); at the budget the audit is inconclusive. Decisions use the Bernoulli
    likelihood (an exact audit of the decision gap); scores and logits the Gaussian working
    model for the group means (a proxy audit). The boundaries are Wald's approximations: the
    error rates are operational targets, not guarantees (measured in ``experiments/sequential``).

    Parameters
    ----------
    min_per_group : int, optional
        Queries each group needs before the statistic may move: default 1 for decisions (the
        Bernoulli likelihood has nothing to estimate) and 10 for scores and logits (the plug-in
        variances need a sample; with 2, a couple of close values make the statistic jump —
        measured type-I error at the boundary 0.27 instead of 0.12 on a Beta pool, see
        ``experiments/sequential/min_per_group.py``).
    var_floor : float
        Floor of the plug-in group variances of the Gaussian model.
    """

    def __init__(
        self,
        tolerance: float,
        access: str = "decisions",
        alpha: float = 0.05,
        beta: float = 0.2,
        min_per_group: int | None = None,
        var_floor: float = 1e-6,
    ) -> None:
        super().__init__(tolerance, access, alpha, beta)
        default = 1 if self.access == "decisions" else 10
        self.min_per_group = (
            default
            if min_per_group is None
            else check_int(min_per_group, "min_per_group", type(self).__name__, lo=1)
        )
        self.var_floor = check_real(var_floor, "var_floor", type(self).__name__, lo=0.0,
                                    closed="neither")  # fmt: skip

    @property
    def boundaries(self) -> Boundaries:
        return wald_boundaries(self.alpha, self.beta)

    def params(self) -> dict[str, object]:
        out = super().params()
        out["min_per_group"] = self.min_per_group
        out["likelihood"] = "bernoulli" if self.access == "decisions" else "gaussian"
        return out

    def stepper(self, budget: int) -> Stepper:
        return _GLRStepper(self, check_budget(budget, "GLRTest.stepper"))

    def _run_orders(self, in_a: npt.NDArray[np.bool_], x: FloatArray) -> OrdersOutcome:
        stat = _cumulative_glr(self, in_a, x)
        bnd = self.boundaries
        up = stat >= bnd.upper
        low = stat <= bnd.lower if bnd.lower is not None else np.zeros_like(up)
        return first_crossing(up, low, stat.shape[1])
