"""Confidence intervals for proportions, their difference and ratio, and a difference of means.

Every function here is vectorised: counts may be scalars or numpy arrays of one shape, and the
bounds come back as float arrays of that shape (0-d for scalars; wrap them in ``float()``).
Inputs are assumed valid (``0 <= k <= n``, ``n >= 1``); the metric functions of
:mod:`fairprobe.stats.metrics` validate before they call in here.

References
----------
.. [W] E. B. Wilson (1927). Probable inference, the law of succession, and statistical inference.
   JASA 22(158), 209-212.
.. [N] R. G. Newcombe (1998). Interval estimation for the difference between independent
   proportions: comparison of eleven methods. Statistics in Medicine 17, 873-890 (method 10).
.. [K] P. A. R. Koopman (1984). Confidence intervals for the ratio of two binomial proportions.
   Biometrics 40, 513-517; constrained MLE in closed form from C. P. Farrington and
   G. Manning (1990), Statistics in Medicine 9, 1447-1454.
.. [KZ] D. Katz, J. Baptista, S. P. Azen, M. C. Pike (1978). Obtaining confidence intervals for
   the risk ratio in cohort studies. Biometrics 34, 469-474.
.. [WS] B. L. Welch (1947). The generalization of Student's problem when several different
   population variances are involved. Biometrika 34, 28-35.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

# scipy.special, not scipy.stats: stats.t.ppf and stats.norm.ppf are special.stdtrit and
# special.ndtri, and importing scipy.stats would add over a second to every command's start
from scipy import special

__all__ = [
    "katz_ratio_interval",
    "newcombe_interval",
    "normal_quantile",
    "score_ratio_interval",
    "welch_interval",
    "wilson_interval",
]

FloatArray = npt.NDArray[np.float64]

#: Bisection bracket of the score-ratio interval on the log scale: ratios in [e^-50, e^50].
_LOG_BRACKET = 50.0
_BISECT_STEPS = 60


def normal_quantile(confidence_level: float) -> float:
    """Two-sided standard-normal critical value ``z`` with ``P(|Z| <= z) = confidence_level``."""
    return float(special.ndtri(0.5 + confidence_level / 2.0))


def wilson_interval(
    k: npt.ArrayLike, n: npt.ArrayLike, confidence_level: float = 0.95
) -> tuple[FloatArray, FloatArray]:
    r"""Wilson score interval for a binomial proportion ``k / n`` [W]_.

    .. math::
        \frac{k + z^2/2}{n + z^2} \pm \frac{z}{n + z^2}\sqrt{\frac{k(n-k)}{n} + \frac{z^2}{4}}

    It inverts the score test and never leaves ``[0, 1]``; at ``k = 0`` the lower bound is
    exactly 0 and at ``k = n`` the upper is 1. Its coverage is close to nominal for rates away
    from 0 and 1, but its exact coverage dips to 0.84-0.86 for rates within ~0.02 of 0 or 1 at
    n = 10-100 (measured in ``docs/stats.md``); :func:`fairprobe.stats.exact.clopper_pearson_interval`
    keeps the level everywhere.
    """
    kf = np.asarray(k, dtype=np.float64)
    nf = np.asarray(n, dtype=np.float64)
    z = normal_quantile(confidence_level)
    z2 = z * z
    denom = nf + z2
    center = (kf + z2 / 2.0) / denom
    half = z / denom * np.sqrt(kf * (nf - kf) / nf + z2 / 4.0)
    lo = np.where(kf <= 0, 0.0, np.clip(center - half, 0.0, 1.0))
    hi = np.where(kf >= nf, 1.0, np.clip(center + half, 0.0, 1.0))
    return lo, hi


def newcombe_interval(
    a: npt.ArrayLike,
    A: npt.ArrayLike,
    b: npt.ArrayLike,
    B: npt.ArrayLike,
    confidence_level: float = 0.95,
) -> tuple[FloatArray, FloatArray]:
    r"""Newcombe's hybrid score interval for ``a/A - b/B`` (method 10 of [N]_).

    With Wilson intervals :math:`(l_1, u_1)` for :math:`\hat p_1 = a/A` and :math:`(l_2, u_2)` for
    :math:`\hat p_2 = b/B`, and :math:`\hat\delta = \hat p_1 - \hat p_2`:

    .. math::
        L = \hat\delta - \sqrt{(\hat p_1 - l_1)^2 + (u_2 - \hat p_2)^2},\qquad
        U = \hat\delta + \sqrt{(u_1 - \hat p_1)^2 + (\hat p_2 - l_2)^2}.

    Defined and inside ``[-1, 1]`` for every ``0 <= a <= A``, ``0 <= b <= B`` with ``A, B >= 1``,
    including 0 and all successes, where the Wald interval collapses to a point.
    """
    af = np.asarray(a, dtype=np.float64)
    Af = np.asarray(A, dtype=np.float64)
    bf = np.asarray(b, dtype=np.float64)
    Bf = np.asarray(B, dtype=np.float64)
    l1, u1 = wilson_interval(af, Af, confidence_level)
    l2, u2 = wilson_interval(bf, Bf, confidence_level)
    p1 = af / Af
    p2 = bf / Bf
    d = p1 - p2
    lo = d - np.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2)
    hi = d + np.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2)
    return np.clip(lo, -1.0, 1.0), np.clip(hi, -1.0, 1.0)


def float_counts(
    a: npt.ArrayLike, A: npt.ArrayLike, b: npt.ArrayLike, B: npt.ArrayLike
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """The counts ``(a, A, b, B)`` as float arrays broadcast to one shape (read-only views)."""
    af, Af, bf, Bf = np.broadcast_arrays(*(np.asarray(x, dtype=np.float64) for x in (a, A, b, B)))
    return af, Af, bf, Bf


def _ratio_score_z(
    theta: FloatArray, a: FloatArray, A: FloatArray, b: FloatArray, B: FloatArray
) -> FloatArray:
    r"""Score statistic of :math:`H_0: p_1 = \theta p_2` (Farrington-Manning form, no N/(N-1))."""
    n = A + B
    qa = n * theta
    qb = -(A * theta + a + B + b * theta)
    qc = a + b
    disc = np.maximum(qb * qb - 4.0 * qa * qc, 0.0)
    # Smaller root in the cancellation-free form 2c / (-b + sqrt(disc)).
    with np.errstate(divide="ignore", invalid="ignore"):
        p2 = np.where(qc > 0, 2.0 * qc / (-qb + np.sqrt(disc)), 0.0)
    p2 = np.clip(p2, 0.0, 1.0)
    p1 = np.clip(theta * p2, 0.0, 1.0)
    num = a / A - theta * (b / B)
    var = p1 * (1.0 - p1) / A + theta * theta * p2 * (1.0 - p2) / B
    with np.errstate(divide="ignore", invalid="ignore"):
        z = num / np.sqrt(var)
    z = np.where(var > 0, z, np.copysign(np.inf, num))
    return np.where(num == 0, 0.0, z)


def score_ratio_interval(
    a: npt.ArrayLike,
    A: npt.ArrayLike,
    b: npt.ArrayLike,
    B: npt.ArrayLike,
    confidence_level: float = 0.95,
) -> tuple[FloatArray, FloatArray]:
    r"""Koopman's score interval for the ratio ``(a/A) / (b/B)`` [K]_.

    The interval is :math:`\{\theta : z(\theta)^2 \le z_{1-\alpha/2}^2\}` with the score statistic

    .. math::
        z(\theta) = \frac{\hat p_1 - \theta \hat p_2}
        {\sqrt{\tilde p_1(1-\tilde p_1)/A + \theta^2 \tilde p_2 (1-\tilde p_2)/B}},

    where :math:`(\tilde p_1 = \theta\tilde p_2, \tilde p_2)` is the maximum-likelihood estimate
    under :math:`p_1 = \theta p_2` (closed form: the smaller root of
    :math:`N\theta p^2 - (A\theta + a + B + b\theta)p + (a + b) = 0`, :math:`N = A + B`).
    The bounds are found by a vectorised bisection on :math:`\log\theta` (60 halvings of
    ``[-50, 50]``; a scalar call uses Brent's method on the same bracket). No continuity correction is needed: ``a = 0`` gives lower bound 0, ``b = 0``
    gives upper bound ``+inf``, and ``a = b = 0`` gives ``(0, inf)`` (nothing is known).
    """
    af, Af, bf, Bf = float_counts(a, A, b, B)
    z = normal_quantile(confidence_level)
    if af.ndim == 0:
        lo_s, hi_s = _score_ratio_scalar(float(af), float(Af), float(bf), float(Bf), z)
        return np.asarray(lo_s), np.asarray(hi_s)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_est = np.log(af / Af) - np.log(bf / Bf)
    log_est = np.clip(np.nan_to_num(log_est, nan=0.0), -_LOG_BRACKET, _LOG_BRACKET)

    # Lower bound: smallest theta with z(theta) <= z; z decreases in theta.
    lo_in = np.full(af.shape, -_LOG_BRACKET)
    hi_in = log_est.copy()
    for _ in range(_BISECT_STEPS):
        mid = 0.5 * (lo_in + hi_in)
        above = _ratio_score_z(np.exp(mid), af, Af, bf, Bf) > z
        lo_in = np.where(above, mid, lo_in)
        hi_in = np.where(above, hi_in, mid)
    lower = np.exp(hi_in)
    # Upper bound: largest theta with z(theta) >= -z.
    lo_up = log_est.copy()
    hi_up = np.full(af.shape, _LOG_BRACKET)
    for _ in range(_BISECT_STEPS):
        mid = 0.5 * (lo_up + hi_up)
        inside = _ratio_score_z(np.exp(mid), af, Af, bf, Bf) >= -z
        lo_up = np.where(inside, mid, lo_up)
        hi_up = np.where(inside, hi_up, mid)
    upper = np.exp(lo_up)
    lower = np.where(af == 0, 0.0, lower)
    upper = np.where(bf == 0, np.inf, upper)
    return lower, upper


def _score_z_scalar(t: float, a: float, A: float, b: float, B: float) -> float:
    """Scalar twin of :func:`_ratio_score_z` in plain floats (no numpy overhead)."""
    theta = math.exp(t)
    qa = (A + B) * theta
    qb = -(A * theta + a + B + b * theta)
    disc = max(qb * qb - 4.0 * qa * (a + b), 0.0)
    qc = a + b
    p2 = min(max(2.0 * qc / (-qb + math.sqrt(disc)), 0.0), 1.0) if qc > 0 else 0.0
    p1 = min(max(theta * p2, 0.0), 1.0)
    num = a / A - theta * (b / B)
    if num == 0.0:
        return 0.0
    var = p1 * (1.0 - p1) / A + theta * theta * p2 * (1.0 - p2) / B
    return num / math.sqrt(var) if var > 0.0 else math.copysign(math.inf, num)


def _score_ratio_scalar(a: float, A: float, b: float, B: float, z: float) -> tuple[float, float]:
    # imported here: scipy.optimize costs most of a second to import, and only this ratio
    # interval needs it, so the audit commands that never ask for it start without it
    from scipy import optimize

    if a == 0.0 and b == 0.0:
        return 0.0, math.inf
    if a == 0.0:
        log_est = -_LOG_BRACKET
    elif b == 0.0:
        log_est = _LOG_BRACKET
    else:
        log_est = min(max(math.log(a / A) - math.log(b / B), -_LOG_BRACKET), _LOG_BRACKET)
    lower = 0.0
    if a > 0.0:
        f_lo = lambda t: _score_z_scalar(t, a, A, b, B) - z  # noqa: E731
        if f_lo(-_LOG_BRACKET) <= 0.0:
            lower = math.exp(-_LOG_BRACKET)
        else:
            lower = math.exp(optimize.brentq(f_lo, -_LOG_BRACKET, log_est, xtol=1e-13))
    upper = math.inf
    if b > 0.0:
        f_up = lambda t: _score_z_scalar(t, a, A, b, B) + z  # noqa: E731
        if f_up(_LOG_BRACKET) >= 0.0:
            upper = math.exp(_LOG_BRACKET)
        else:
            upper = math.exp(optimize.brentq(f_up, log_est, _LOG_BRACKET, xtol=1e-13))
    return lower, upper


def katz_ratio_interval(
    a: npt.ArrayLike,
    A: npt.ArrayLike,
    b: npt.ArrayLike,
    B: npt.ArrayLike,
    confidence_level: float = 0.95,
    correction: float = 0.5,
) -> tuple[FloatArray, FloatArray]:
    r"""Katz log-scale interval for the ratio ``(a/A) / (b/B)`` [KZ]_.

    .. math::
        \exp\Bigl(\log\hat\theta \pm z\sqrt{1/a - 1/A + 1/b - 1/B}\Bigr)

    When any cell of the 2x2 table is empty (``a = 0``, ``b = 0``, ``a = A`` or ``b = B``) the
    variance is infinite or degenerates to zero (an all-positive group gives ``1/a - 1/A = 0``
    and, with both groups all-positive, the point interval ``[1, 1]``). In that case, and only
    then, ``correction`` (default 0.5, the Haldane-Anscombe choice) is added to every cell of
    the 2x2 table of both groups: ``a -> a + c``, ``A -> A + 2c``, ``b -> b + c``,
    ``B -> B + 2c``, for both the centre and the variance of the interval. The point estimate
    reported by the metrics stays the uncorrected ratio. Prefer :func:`score_ratio_interval`
    (no correction needed) or, where coverage must hold at every rate,
    :func:`fairprobe.stats.exact.exact_ratio_interval`: Katz's exact coverage falls to 0 when a
    true rate is near 0 in a small group (``docs/stats.md``).
    """
    af, Af, bf, Bf = float_counts(a, A, b, B)
    zero = (af == 0) | (bf == 0) | (af == Af) | (bf == Bf)
    c = np.where(zero, correction, 0.0)
    a2, A2, b2, B2 = af + c, Af + 2 * c, bf + c, Bf + 2 * c
    z = normal_quantile(confidence_level)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_t = np.log(a2 / A2) - np.log(b2 / B2)
        se = np.sqrt(1.0 / a2 - 1.0 / A2 + 1.0 / b2 - 1.0 / B2)
    return np.exp(log_t - z * se), np.exp(log_t + z * se)


def welch_interval(
    mean_a: npt.ArrayLike,
    var_a: npt.ArrayLike,
    n_a: npt.ArrayLike,
    mean_b: npt.ArrayLike,
    var_b: npt.ArrayLike,
    n_b: npt.ArrayLike,
    confidence_level: float = 0.95,
) -> tuple[FloatArray, FloatArray]:
    r"""Welch's t interval for the difference of means ``mean_a - mean_b`` [WS]_.

    .. math::
        \bar m_a - \bar m_b \pm t_{\nu,\,1-\alpha/2}\sqrt{s_a^2/n_a + s_b^2/n_b},\qquad
        \nu = \frac{(s_a^2/n_a + s_b^2/n_b)^2}{\frac{(s_a^2/n_a)^2}{n_a - 1} +
        \frac{(s_b^2/n_b)^2}{n_b - 1}}

    ``var_*`` are unbiased sample variances; ``n_*`` may be Kish effective sizes (weighted data).
    Both groups need ``n > 1``. Zero standard error (both groups constant) gives a point interval.
    """
    ma, va, na, mb, vb, nb = (
        np.asarray(x, dtype=np.float64) for x in (mean_a, var_a, n_a, mean_b, var_b, n_b)
    )
    sa = va / na
    sb = vb / nb
    se2 = sa + sb
    with np.errstate(divide="ignore", invalid="ignore"):
        df = se2 * se2 / (sa * sa / (na - 1.0) + sb * sb / (nb - 1.0))
    df = np.where(se2 > 0, df, 1.0)
    t = special.stdtrit(df, 0.5 + confidence_level / 2.0)
    half = t * np.sqrt(se2)
    d = ma - mb
    return np.asarray(d - half, dtype=np.float64), np.asarray(d + half, dtype=np.float64)
