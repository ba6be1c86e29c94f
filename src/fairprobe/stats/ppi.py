r"""Prediction-powered inference with power tuning (PPI++) for the per-group label rates.

An auditor often holds a cheap guess of the true label on every row of the pool (a second
model's, an LLM's) and the true label on a small subset only. PPI++ (Angelopoulos, Duchi and
Zrnic 2023, "PPI++: Efficient Prediction-Powered Inference", arXiv:2311.01453) uses the guesses
on every row and corrects their bias with the labelled subset; its tuning parameter
:math:`\lambda \in [0, 1]` is chosen from the data to minimise the variance, so the interval is
never wider than the labelled-only one in large samples (:math:`\lambda = 0` is the classical
interval, :math:`\lambda = 1` plain PPI).

**The estimand.** A label rate of group :math:`g` is a ratio of two means,
:math:`\theta = E[a] / E[b]`, with :math:`a = 1[(\hat y, y) \in \text{num}]` and
:math:`b = 1[(\hat y, y) \in \text{den}]` (the cells of :data:`fairprobe.metrics.RATES`: the
TPR is :math:`E[\hat y\, y] / E[y]`). It is the root of the estimating equation
:math:`E[a - \theta b] = 0`, a Z-estimator, so PPI++ for M-estimation (ADZ23, section 3)
applies: with :math:`\tilde a, \tilde b` the same cells computed from the proxy label,

.. math::

    \hat\theta_\lambda = \frac{\lambda\,\bar{\tilde a}_N + \overline{(a - \lambda \tilde a)}_n}
                              {\lambda\,\bar{\tilde b}_N + \overline{(b - \lambda \tilde b)}_n},

the ratio of two PPI means with one :math:`\lambda` (the delta method of that ratio and the
Z-estimator's sandwich are the same variance),

.. math::

    \widehat{se}^2 = \frac{1}{\hat H^2}\Big(\frac{\widehat{Var}_n(g - \lambda \tilde g)}{n}
                      + \frac{\lambda^2 \widehat{Var}_N(\tilde g)}{N}\Big), \quad
    g = a - \hat\theta b,\ \tilde g = \tilde a - \hat\theta \tilde b,

with :math:`\hat H` the denominator above, and the variance-minimising
:math:`\hat\lambda = \widehat{Cov}_n(g, \tilde g) / ((1 + n/N)\,\widehat{Var}_{n+N}(\tilde g))`
clipped to :math:`[0, 1]` (ADZ23, eq. (6), as ``ppi_py`` computes it, with :math:`g` at the
:math:`\lambda = 1` estimate). With :math:`b \equiv 1` this is ``ppi_py.ppi_mean_ci`` exactly
(:func:`ppi_mean`; the tests check both against it). :math:`n` counts the labelled rows of the
group, :math:`N` its other rows.

**Assumptions.** Within each group the labelled rows are a uniform random sample of the
group's rows (missing completely at random given the group), the rows are independent draws
from one distribution, and the groups' labelled samples are drawn independently. The proxy may
be biased or poor: that costs width, not validity. The interval is a normal (Wald) interval:
its coverage is **asymptotic** (it can dip below the level with few labelled positives in a
group). A gap between two groups adds their variances; several groups are compared pair by
pair at Bonferroni's level.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy.stats import norm

from fairprobe.errors import DataError

__all__ = ["PPIRate", "ppi_gap_findings", "ppi_mean", "ppi_rate", "ppi_ratio"]

Array = npt.NDArray[np.float64]


def _tuned_lambda(g: Array, g_hat: Array, g_hat_u: Array) -> float:
    """ADZ23's variance-minimising lambda for one coordinate, clipped to [0, 1]."""
    n, big_n = len(g), len(g_hat_u)
    if big_n == 0 or n < 2:
        return 0.0
    cov = float(np.mean((g - g.mean()) * (g_hat - g_hat.mean())))
    var = float(np.var(np.concatenate([g_hat, g_hat_u]), ddof=1))
    if var <= 0.0:
        return 0.0  # a constant proxy carries no information
    return float(np.clip(cov / ((1.0 + n / big_n) * var), 0.0, 1.0))


def ppi_ratio(a: npt.ArrayLike, b: npt.ArrayLike, a_hat: npt.ArrayLike, b_hat: npt.ArrayLike,
              a_hat_u: npt.ArrayLike, b_hat_u: npt.ArrayLike, *, lam: float | None = None
              ) -> tuple[float, float, float]:
    r"""PPI++ estimate of :math:`E[a] / E[b]`: ``(estimate, standard error, lambda)``.

    Parameters
    ----------
    a, b : array of float
        Numerator and denominator indicators on the labelled rows (true labels).
    a_hat, b_hat : array of float
        The same computed from the proxy label, on the labelled rows.
    a_hat_u, b_hat_u : array of float
        The same from the proxy label, on the unlabelled rows.
    lam : float, optional
        Fixed tuning parameter (0: labelled-only, 1: plain PPI); default tuned (module
        docstring).

    Returns
    -------
    tuple of float
        The estimate, its standard error and the lambda used; ``nan`` estimate and error when
        the denominator's estimate is not positive.
    """
    a, b, ah, bh, ahu, bhu = (np.asarray(x, dtype=np.float64) for x in
                              (a, b, a_hat, b_hat, a_hat_u, b_hat_u))
    n, big_n = len(a), len(ahu)
    mu_ahu = float(ahu.mean()) if big_n else 0.0
    mu_bhu = float(bhu.mean()) if big_n else 0.0

    def parts(lm: float) -> tuple[float, float]:
        num = lm * mu_ahu + float(np.mean(a - lm * ah))
        den = lm * mu_bhu + float(np.mean(b - lm * bh))
        return num, den

    if n == 0:
        return math.nan, math.nan, 0.0
    if lam is None:
        num1, den1 = parts(1.0)
        t1 = num1 / den1 if den1 > 0 else 0.0
        lam = _tuned_lambda(a - t1 * b, ah - t1 * bh, ahu - t1 * bhu)
    if big_n == 0:
        lam = 0.0
    num, den = parts(lam)
    if not den > 0:
        return math.nan, math.nan, float(lam)
    theta = num / den
    g, gh, ghu = a - theta * b, ah - theta * bh, ahu - theta * bhu
    var = float(np.var(g - lam * gh)) / n
    if big_n:
        var += float(np.var(lam * ghu)) / big_n
    return theta, math.sqrt(var) / den, float(lam)


def ppi_mean(y: npt.ArrayLike, y_hat: npt.ArrayLike, y_hat_u: npt.ArrayLike, *,
             lam: float | None = None) -> tuple[float, float, float]:
    """PPI++ estimate of :math:`E[y]`: ``(estimate, standard error, lambda)``.

    The ratio of :func:`ppi_ratio` with a denominator of ones; its Wald interval at level
    ``1 - alpha`` is ``ppi_py.ppi_mean_ci(y, y_hat, y_hat_u, alpha=alpha)``.
    """
    y = np.asarray(y, dtype=np.float64)
    u = np.asarray(y_hat_u, dtype=np.float64)
    return ppi_ratio(y, np.ones_like(y), y_hat, np.ones_like(y), u, np.ones_like(u), lam=lam)


@dataclass(frozen=True)
class PPIRate:
    """One group's rate by PPI++, with the labelled-only (classical) estimate beside it.

    Attributes
    ----------
    group : str
    estimate, se : float
        The PPI++ estimate and its standard error (``nan`` when undefined).
    lam : float
        The tuning parameter used.
    n_labelled, n_unlabelled : int
        Rows of the group with and without a true label.
    classical, classical_se : float
        The labelled-only estimate and its standard error (``lam = 0``).
    """

    group: str
    estimate: float
    se: float
    lam: float
    n_labelled: int
    n_unlabelled: int
    classical: float
    classical_se: float

    def to_dict(self, z: float) -> dict[str, Any]:
        def f(x: float) -> float | None:
            return float(x) if math.isfinite(x) else None

        return {"estimate": f(self.estimate), "se": f(self.se),
                "low": f(self.estimate - z * self.se), "high": f(self.estimate + z * self.se),
                "lambda": self.lam, "n_labelled": self.n_labelled,
                "n_unlabelled": self.n_unlabelled, "classical": f(self.classical),
                "classical_low": f(self.classical - z * self.classical_se),
                "classical_high": f(self.classical + z * self.classical_se)}


def ppi_rate(y_pred: npt.ArrayLike, y_true: npt.ArrayLike, proxy: npt.ArrayLike, *,
             num: Sequence[str], den: Sequence[str], group: str = "") -> PPIRate:
    """PPI++ of the rate ``sum(num cells) / sum(den cells)`` over one group's rows.

    ``y_true`` is ``nan`` on the unlabelled rows; cells are named ``"<y_pred><y_true>"`` as
    in :mod:`fairprobe.metrics`.
    """
    p = np.asarray(y_pred, dtype=np.float64)
    t = np.asarray(y_true, dtype=np.float64)
    s = np.asarray(proxy, dtype=np.float64)
    lab = ~np.isnan(t)

    def cells(pred: Array, true: Array, which: Sequence[str]) -> Array:
        out = np.zeros_like(pred)
        for c in which:
            out += (pred == int(c[0])) * (true == int(c[1]))
        return out

    pl, tl, sl, pu, su = p[lab], t[lab], s[lab], p[~lab], s[~lab]
    args = (cells(pl, tl, num), cells(pl, tl, den), cells(pl, sl, num), cells(pl, sl, den),
            cells(pu, su, num), cells(pu, su, den))
    est, se, lam = ppi_ratio(*args)
    c_est, c_se, _ = ppi_ratio(*args, lam=0.0)
    return PPIRate(group, est, se, lam, int(lab.sum()), int((~lab).sum()), c_est, c_se)


def ppi_gap_findings(y_pred: npt.ArrayLike, y_true: npt.ArrayLike, proxy: npt.ArrayLike,
                     groups: npt.ArrayLike, metrics: Sequence[str], *, tolerance: float,
                     confidence_level: float = 0.95, proxy_col: str = "proxy"
                     ) -> dict[str, Any]:
    """The PPI++ block of an audit document: per metric, every group's rate and the gap.

    Each difference metric of one label rate (:data:`fairprobe.metrics.METRICS`) is answered
    by a :class:`~fairprobe.stats.finding.Finding` with ``coverage="asymptotic"``: two groups,
    the signed difference (first minus second in sorted order); more, the largest absolute
    difference over every pair, each pair at Bonferroni's level ``1 - alpha / m``.

    Raises
    ------
    DataError
        A group without a labelled row (naming ``--y-true-col``).
    """
    from fairprobe.metrics import METRICS, RATES
    from fairprobe.stats.finding import Finding, Question

    g = np.asarray(groups, dtype=object).astype(str)
    t = np.asarray(y_true, dtype=np.float64)
    labels = sorted(set(g.tolist()))
    for lab in labels:
        if not (~np.isnan(t[g == lab])).any():
            raise DataError(f"--y-true-col has no labelled row in group {lab!r}: PPI++ "
                            "(--label-proxy-col) needs a random labelled sample in every group.")
    m = len(labels) * (len(labels) - 1) // 2
    alpha = 1.0 - confidence_level
    z_rate = float(norm.ppf(1 - alpha / 2))
    z_pair = float(norm.ppf(1 - alpha / (2 * max(m, 1))))
    out: list[dict[str, Any]] = []
    p, s = np.asarray(y_pred, dtype=np.float64), np.asarray(proxy, dtype=np.float64)
    for name in metrics:
        met = METRICS.get(name)
        if met is None or met.kind != "difference" or len(met.rates) != 1:
            continue
        rate = RATES[met.rates[0]]
        if "y_true" not in rate.needs or not rate.num:
            continue
        rates = {lab: ppi_rate(p[g == lab], t[g == lab], s[g == lab], num=rate.num,
                               den=rate.den, group=lab) for lab in labels}
        pairs = []
        for x, y in combinations(labels, 2):
            d = rates[x].estimate - rates[y].estimate
            se = math.hypot(rates[x].se, rates[y].se)
            pairs.append((x, y, d, d - z_pair * se, d + z_pair * se))
        if len(pairs) == 1:
            x, y, est, low, high = pairs[0]
            pair = (x, y)
        else:
            finite = [q for q in pairs if math.isfinite(q[2])]
            worst = max(finite, key=lambda q: abs(q[2])) if finite else pairs[0]
            pair = (worst[0], worst[1])
            est = abs(worst[2])
            if len(finite) < len(pairs):
                low = high = math.nan
            else:
                low = max(0.0 if lo <= 0 <= hi else min(abs(lo), abs(hi))
                          for *_, lo, hi in pairs)
                high = max(max(abs(lo), abs(hi)) for *_, lo, hi in pairs)
        undefined = [lab for lab, r in rates.items() if not math.isfinite(r.estimate)]
        finding = Finding(
            Question(name, "difference", tolerance, tuple(pair), rates=(rate.name,)),
            est, low if math.isfinite(low) else math.nan,
            high if math.isfinite(high) else math.nan, confidence_level, "ppi++",
            coverage="asymptotic",
            reason=(f"no labelled row {rate.denominator} in group(s) "
                    f"{', '.join(undefined)}: the rate is undefined" if undefined else None),
            counts={"n_labelled": {k: r.n_labelled for k, r in rates.items()},
                    "n_unlabelled": {k: r.n_unlabelled for k, r in rates.items()},
                    "lambda": {k: r.lam for k, r in rates.items()}})
        out.append({"metric": name, "rate": rate.name, "family_size": m,
                    "groups": {k: r.to_dict(z_rate) for k, r in rates.items()},
                    "finding": finding.to_dict()})
    return {"method": "PPI++ (Angelopoulos, Duchi and Zrnic 2023): the ratio estimand as a "
                      "Z-estimator, power-tuned lambda, Wald interval",
            "proxy_col": proxy_col, "coverage": "asymptotic",
            "assumes": "within each group the labelled rows are a uniform random sample of "
                       "the group's rows",
            "n_labelled": int((~np.isnan(t)).sum()), "n_unlabelled": int(np.isnan(t).sum()),
            "metrics": out}
