r"""The disparate impact through B, corrected for the proxy's misclassification (Appendix B).

In the large-budget regime of Appendix B the disparate impact is estimated from the user
interface B alone, whose answers carry no protected attribute: the auditor groups them with a
proxy :math:`\hat g` that is wrong for some records, and differently often in each group (the
first-name rule is right for 0.648 of the women and 0.838 of the men of the Adult pool). Grouping
by :math:`\hat g` and taking the ratio (``di_b_proxy``) is biased towards 1 (0.430 against the
0.478 of B's own decisions by true sex). This module removes that bias.

**Estimand.** :math:`\mu_B = P(Y_B = 1 \mid g = u) / P(Y_B = 1 \mid g = p)`: the disparate impact
of the decisions B gives, by *true* group. When the platform decides the same way on both sources
(the paper's model) it equals :math:`\mu_A` of an honest A. On the fairprobe platform B decides
with the sex it infers from the name, so :math:`\mu_B` (0.478 on the pool) is not the honest
:math:`\mu_A` (0.257): B measures what users actually get, A what the model does with the true
sex. No estimator through B can recover :math:`\mu_A` there (B never reveals the decision the
model would take with the true sex of a mis-inferred user).

**Default construction: double sampling** (:func:`double_sampling_di`, Tenenbein 1970). All
``n`` B answers give the cells :math:`q(\hat g, y)`; a *validation* subsample — records whose
true group the auditor knows, e.g. the checks, which she also sent to A with their group — gives
the reclassification rates :math:`v(g \mid \hat g, y)` (the per-group confusion rates, estimated
separately for each decision). Then

.. math::
    \hat p(g, y) = \sum_{\hat g} \hat q(\hat g, y)\, \hat v(g \mid \hat g, y), \qquad
    \hat r_g = \frac{\hat p(g, 1)}{\hat p(g, 0) + \hat p(g, 1)}, \qquad
    \hat\mu_B = \hat r_u / \hat r_p.

It assumes nothing about how the proxy's errors relate to the decision (they are *differential*
on the platform: a woman whose name the rule maps to "Male" is decided as a man); it needs the
validation subsample to be a random subsample of the B sample (the audit draws it so). The
interval is :math:`\exp(\log\hat\mu_B \pm z_{1-\alpha/2}\,\widehat{se})` with the delta-method
standard error over the two independent multinomials (validated cells :math:`(g, \hat g, y)`,
unvalidated cells :math:`(\hat g, y)`), gradients by central differences. Its coverage rests on
the normal approximation (``coverage="asymptotic"``); measured on the platform by
``experiments/twosource/large_regime.py`` and in sparse cells by
``experiments/twosource/corrected_di_coverage.py``. With every record validated it is the
plug-in ratio by true group with the Katz (log) standard error.

**Sparse cells.** The reclassification rates of the positives rest on the validated positives of
each true group. With fewer than :data:`MIN_CHECKED_POSITIVES` of them in a group (rates of a
few percent, a hundred checks), no interval is reported: ``[0, inf]``, the finding undetermined
with that reason (and no undefined interval, whatever the counts). Measured: with the rule the
95% interval covers >= 0.94 in every sparse cell of ``corrected_di_coverage.py``, where the
delta interval alone covers as little as 0.42 (half of its intervals undefined) and a profile
likelihood interval as little as 0.88 (``docs/twosource.md``).

**Given confusion rates: the matrix method** (:func:`matrix_corrected_di`). Per-group accuracies
:math:`a_g = P(\hat g = g \mid g)`, given (optionally with the sizes of the samples they were
estimated on, whose binomial uncertainty then enters the interval), and the 2x2 inversion
:math:`p(\cdot, y) = M^{-1} q(\cdot, y)` with :math:`M = \begin{pmatrix} a_u & 1-a_p \\
1-a_u & a_p\end{pmatrix}`. Valid only if the proxy's errors are *non-differential* (independent
of the decision given the group; ``coverage="conditional"``). On the platform they are not, and
the matrix method gives 0.037 for a true 0.478: kept under its own name, never the default.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from fairprobe._validation import check_real
from fairprobe.errors import DataError
from fairprobe.stats.finding import Finding, Question
from fairprobe.twosource.theory import z_quantile

__all__ = [
    "MIN_CHECKED_POSITIVES",
    "CorrectedDI",
    "double_sampling_cells",
    "double_sampling_di",
    "double_sampling_interval",
    "double_sampling_log_di",
    "double_sampling_se",
    "expected_cells",
    "matrix_corrected_di",
]

FloatArray = npt.NDArray[np.float64]

#: Fewest validated positives in each true group for the corrected DI's interval to be
#: reported (below: ``[0, inf]``, undetermined). 3 is the smallest value whose measured
#: coverage is >= 0.94 in every cell of ``experiments/twosource/corrected_di_coverage.py``.
MIN_CHECKED_POSITIVES = 3


# ---- the estimators, vectorised over leading axes ------------------------------------------------


def double_sampling_log_di(u: npt.ArrayLike, v: npt.ArrayLike) -> FloatArray:
    r""":math:`\log\hat\mu_B` of the double-sampling estimator (module docstring).

    Parameters
    ----------
    u : array (..., 4)
        Unvalidated B answers: counts of :math:`(\hat g, y)` at index ``2 * g_hat + y``
        (``g_hat`` 0 = unprivileged, 1 = privileged).
    v : array (..., 8)
        Validated B answers: counts of :math:`(g, \hat g, y)` at index ``4 * g + 2 * g_hat + y``.

    Notes
    -----
    A reclassification column :math:`(\hat g, y)` without validated record takes
    :math:`v(g \mid \hat g, y) = 1/2`; a group with no estimated positive gives ``-inf`` / ``inf``
    / ``nan`` (undefined ratio).
    """
    uu = np.asarray(u, dtype=np.float64)
    vv = np.asarray(v, dtype=np.float64)
    v3 = vv.reshape(vv.shape[:-1] + (2, 2, 2))
    col = v3.sum(axis=-3)  # (..., g_hat, y)
    n = uu.sum(axis=-1) + vv.sum(axis=-1)
    q = (uu.reshape(uu.shape[:-1] + (2, 2)) + col) / n[..., None, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        rec = np.where(col[..., None, :, :] > 0, v3 / col[..., None, :, :], 0.5)
        p = (q[..., None, :, :] * rec).sum(axis=-2)  # (..., g, y)
        r = p[..., 1] / p.sum(axis=-1)
        return np.asarray(np.log(r[..., 0]) - np.log(r[..., 1]), dtype=np.float64)


def _multinomial_delta_var(f: Any, cells: list[FloatArray]) -> FloatArray:
    """Delta-method variance of ``f(*cells)`` for independent multinomial count vectors."""
    base = [np.asarray(c, dtype=np.float64) for c in cells]
    var = np.zeros(base[0].shape[:-1])
    for j, c in enumerate(base):
        n = c.sum(axis=-1)
        theta = np.where(n[..., None] > 0, c / np.maximum(n[..., None], 1), 0.0)
        grads = []
        for i in range(c.shape[-1]):
            h = 1e-4 * np.maximum(c[..., i], 1.0)
            up = [b.copy() for b in base]
            dn = [b.copy() for b in base]
            up[j][..., i] += h
            dn[j][..., i] -= h
            with np.errstate(invalid="ignore"):
                grads.append((f(*up) - f(*dn)) / (2 * h))
        g = np.stack(grads, axis=-1)
        with np.errstate(invalid="ignore"):
            m1 = (theta * g).sum(axis=-1)
            var = var + n * ((theta * g * g).sum(axis=-1) - m1 * m1)
    return np.asarray(var, dtype=np.float64)


def double_sampling_se(u: npt.ArrayLike, v: npt.ArrayLike) -> FloatArray:
    """Delta-method standard error of :func:`double_sampling_log_di` (same shapes)."""
    uu = np.asarray(u, dtype=np.float64)
    vv = np.asarray(v, dtype=np.float64)
    var = _multinomial_delta_var(double_sampling_log_di, [uu, vv])
    return np.sqrt(np.maximum(var, 0.0))


def checked_positives(v: npt.ArrayLike) -> FloatArray:
    """Validated positives of each true group, shape ``(..., 2)`` (unprivileged, privileged)."""
    vv = np.asarray(v, dtype=np.float64)
    return np.asarray(vv.reshape(vv.shape[:-1] + (2, 2, 2))[..., 1].sum(axis=-1),
                      dtype=np.float64)


def double_sampling_interval(u: npt.ArrayLike, v: npt.ArrayLike, confidence_level: float = 0.95
                             ) -> tuple[FloatArray, FloatArray, FloatArray,
                                        npt.NDArray[np.bool_]]:
    r"""``(estimate, low, high, thin)`` of the corrected DI, vectorised over leading axes.

    The delta interval :math:`\exp(\log\hat\mu_B \pm z\,\widehat{se})` where each true
    group has at least :data:`MIN_CHECKED_POSITIVES` validated positives, else (``thin``)
    ``[0, inf]``; never undefined (NaN only in ``estimate``, where a group has no estimated
    positive).
    """
    lm = double_sampling_log_di(u, v)
    se = double_sampling_se(u, v)
    z = z_quantile(1.0 - confidence_level)
    thin = checked_positives(v).min(axis=-1) < MIN_CHECKED_POSITIVES
    ok = ~thin & np.isfinite(lm) & np.isfinite(se)
    with np.errstate(invalid="ignore", over="ignore"):
        lo = np.where(ok, np.exp(np.where(ok, lm - z * se, 0.0)), 0.0)
        hi = np.where(ok, np.exp(np.where(ok, lm + z * se, 0.0)), np.inf)
    with np.errstate(over="ignore", invalid="ignore"):
        est = np.where(np.isfinite(lm), np.exp(np.where(np.isfinite(lm), lm, 0.0)), np.nan)
    return (np.asarray(est, dtype=np.float64), np.asarray(lo, dtype=np.float64),
            np.asarray(hi, dtype=np.float64), np.asarray(thin | ~ok))


def double_sampling_cells(
    group_true: npt.ArrayLike,
    group_proxy: npt.ArrayLike,
    decisions: npt.ArrayLike,
    validated: npt.ArrayLike,
    privileged: str,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """The count vectors ``(u, v)`` of :func:`double_sampling_log_di` from per-record arrays.

    ``group_true`` is read only where ``validated``; records whose decision is NaN (unparsed
    answer) are dropped.
    """
    gt = np.asarray(group_true, dtype=object)
    gp = np.asarray(group_proxy, dtype=object)
    d = np.asarray(decisions, dtype=np.float64)
    val = np.asarray(validated, dtype=bool)
    ok = ~np.isnan(d)
    gh = (gp == privileged).astype(int)
    y = np.where(ok, d, 0).astype(int)
    u = np.bincount((2 * gh + y)[ok & ~val], minlength=4)
    g = (gt == privileged).astype(int)
    v = np.bincount((4 * g + 2 * gh + y)[ok & val], minlength=8)
    return u.astype(np.int64), v.astype(np.int64)


def expected_cells(
    rate_unprivileged: float,
    rate_privileged: float,
    share_unprivileged: float,
    acc_unprivileged: float,
    acc_privileged: float,
) -> FloatArray:
    r"""Cell probabilities :math:`P(g, \hat g, y)` (length 8) of the planning model.

    Groups with shares :math:`\pi`, positive rates :math:`r_g`, and a proxy right with
    probability :math:`a_g` in group :math:`g` independently of the decision (the planning
    assumption; the estimator does not need it).
    """
    pi = np.array([share_unprivileged, 1.0 - share_unprivileged])
    r = np.array([rate_unprivileged, rate_privileged])
    a = np.array([acc_unprivileged, acc_privileged])
    cells = np.zeros((2, 2, 2))
    for g in range(2):
        for gh in range(2):
            pg = a[g] if gh == g else 1.0 - a[g]
            cells[g, gh, 1] = pi[g] * r[g] * pg
            cells[g, gh, 0] = pi[g] * (1.0 - r[g]) * pg
    return cells.reshape(8)


def matrix_log_di(o: npt.ArrayLike, acc: npt.ArrayLike) -> FloatArray:
    r""":math:`\log\hat\mu` of the matrix method: ``o`` (..., 4) cells of :math:`(\hat g, y)`,
    ``acc`` (..., 2) per-group accuracies :math:`(a_u, a_p)`."""
    oo = np.asarray(o, dtype=np.float64)
    a = np.asarray(acc, dtype=np.float64)
    q = oo.reshape(oo.shape[:-1] + (2, 2)) / oo.sum(axis=-1)[..., None, None]
    au, ap = a[..., 0], a[..., 1]
    det = au + ap - 1.0
    with np.errstate(divide="ignore", invalid="ignore"):
        # inverse of [[au, 1-ap], [1-au, ap]] applied to q(., y)
        pu = (ap[..., None] * q[..., 0, :] - (1 - ap)[..., None] * q[..., 1, :]) / det[..., None]
        pp = (au[..., None] * q[..., 1, :] - (1 - au)[..., None] * q[..., 0, :]) / det[..., None]
        ru = pu[..., 1] / pu.sum(axis=-1)
        rp = pp[..., 1] / pp.sum(axis=-1)
        out = np.where((ru > 0) & (rp > 0), np.log(ru) - np.log(rp), np.nan)
    return np.asarray(out, dtype=np.float64)


# ---- the result ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class CorrectedDI:
    """The corrected disparate impact through B, with its interval (module docstring).

    ``counts`` keeps the raw cells (``unvalidated``: ``(g_hat, y)``, ``validated``:
    ``(g, g_hat, y)``, index order of :func:`double_sampling_log_di`; or ``observed`` and the
    given accuracies for the matrix method).
    """

    estimate: float
    low: float
    high: float
    se_log: float
    confidence_level: float
    method: str
    coverage: str
    groups: tuple[str, str]
    threshold: float
    counts: dict[str, Any] = field(default_factory=dict)

    def confidence_interval(self) -> tuple[float, float]:
        return (self.low, self.high)

    def finding(self, subject: str = "model") -> Finding:
        """The verdict on the 80% rule through B, as a :class:`~fairprobe.stats.finding.Finding`."""
        q = Question(
            metric="disparate_impact_ratio", kind="ratio", threshold=self.threshold,
            groups=self.groups, scale="ratio", subject=subject, rates=("selection_rate",),
        )  # fmt: skip
        reason = None
        checked = self.counts.get("checked_positives")
        if checked is not None and min(checked) < MIN_CHECKED_POSITIVES:
            reason = (f"only {min(checked):g} checked record(s) of a group are positive (fewer "
                      f"than {MIN_CHECKED_POSITIVES}): the correction's reclassification rates "
                      "rest on them, so no interval is reported; more checks would decide it")
        elif not math.isfinite(self.se_log):
            reason = "the corrected estimate through B is undefined (a group without positives)"
        return Finding(
            question=q, estimate=self.estimate, low=self.low, high=self.high,
            confidence_level=self.confidence_level, construction=self.method,
            coverage=self.coverage, reason=reason, counts=self.counts,
            forced="undetermined" if reason else None,
        )  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        def f(x: float) -> float | None:
            return float(x) if math.isfinite(x) else None

        return {
            "metric": "disparate_impact_ratio",
            "estimand": "DI of B's decisions by true group",
            "estimate": f(self.estimate),
            "interval": [f(self.low), f(self.high)],
            "se_log": f(self.se_log),
            "confidence_level": self.confidence_level,
            "method": self.method,
            "coverage": self.coverage,
            "groups": list(self.groups),
            "threshold": self.threshold,
            "counts": self.counts,
        }

    def __str__(self) -> str:
        return (
            f"{self.estimate:.3f} [{self.low:.3f}, {self.high:.3f}] ({self.method}, "
            f"{self.confidence_level:.0%})"
        )


def _interval(log_mu: float, se: float, level: float) -> tuple[float, float, float]:
    z = z_quantile(1.0 - level)
    if not (math.isfinite(log_mu) and math.isfinite(se)):
        return math.exp(log_mu) if math.isfinite(log_mu) else math.nan, math.nan, math.nan
    return math.exp(log_mu), math.exp(log_mu - z * se), math.exp(log_mu + z * se)


def double_sampling_di(
    u: npt.ArrayLike,
    v: npt.ArrayLike,
    *,
    confidence_level: float = 0.95,
    threshold: float = 0.8,
    groups: tuple[str, str] = ("unprivileged", "privileged"),
) -> CorrectedDI:
    """The double-sampling corrected DI through B with its delta-method interval.

    ``u``, ``v``: the count vectors of :func:`double_sampling_log_di` (e.g. from
    :func:`double_sampling_cells`). Raises :class:`~fairprobe.errors.DataError` without any
    validated record (nothing to estimate the confusion rates from).
    """
    owner = "double_sampling_di"
    lvl = check_real(confidence_level, "confidence_level", owner, lo=0.0, hi=1.0,
                     closed="neither")  # fmt: skip
    uu = np.asarray(u, dtype=np.float64).reshape(4)
    vv = np.asarray(v, dtype=np.float64).reshape(8)
    if vv.sum() <= 0:
        raise DataError(
            "The corrected DI through B needs validated records (true group known) to estimate "
            "the proxy's confusion rates; there are none. Give confusion rates instead "
            "(matrix_corrected_di) or check some records."
        )
    se = float(double_sampling_se(uu, vv))
    e, lo_a, hi_a, _ = double_sampling_interval(uu, vv, lvl)
    est, lo, hi = float(e), float(lo_a), float(hi_a)
    return CorrectedDI(
        estimate=est, low=lo, high=hi, se_log=se,
        confidence_level=lvl, method="double-sampling-delta", coverage="asymptotic",
        groups=groups, threshold=threshold,
        counts={"unvalidated": uu.astype(int).tolist(), "validated": vv.astype(int).tolist(),
                "checked_positives": checked_positives(vv).astype(int).tolist()},
    )  # fmt: skip


def matrix_corrected_di(
    observed: npt.ArrayLike,
    accuracies: tuple[float, float],
    *,
    calibration_sizes: tuple[int, int] | None = None,
    confidence_level: float = 0.95,
    threshold: float = 0.8,
    groups: tuple[str, str] = ("unprivileged", "privileged"),
) -> CorrectedDI:
    """The matrix-method corrected DI from given per-group accuracies (non-differential errors).

    ``observed``: counts of :math:`(\\hat g, y)` (index ``2 * g_hat + y``); ``accuracies``:
    :math:`(a_u, a_p)`; ``calibration_sizes``: the numbers of records of each group the
    accuracies were measured on (their binomial variance enters the interval; ``None``: treated
    as exact).
    """
    owner = "matrix_corrected_di"
    lvl = check_real(confidence_level, "confidence_level", owner, lo=0.0, hi=1.0,
                     closed="neither")  # fmt: skip
    a = np.array([check_real(x, "accuracies", owner, lo=0.0, hi=1.0) for x in accuracies])
    oo = np.asarray(observed, dtype=np.float64).reshape(4)
    lm = float(matrix_log_di(oo, a))

    def f_o(o: FloatArray) -> FloatArray:
        return matrix_log_di(o, np.broadcast_to(a, o.shape[:-1] + (2,)))

    var = float(_multinomial_delta_var(f_o, [oo]))
    if calibration_sizes is not None:
        for g, m in enumerate(calibration_sizes):
            h = 1e-6
            up, dn = a.copy(), a.copy()
            up[g] += h
            dn[g] -= h
            d = (float(matrix_log_di(oo, up)) - float(matrix_log_di(oo, dn))) / (2 * h)
            var += d * d * a[g] * (1 - a[g]) / max(int(m), 1)
    se = math.sqrt(var) if math.isfinite(var) and var >= 0 else math.nan
    est, lo, hi = _interval(lm, se, lvl)
    return CorrectedDI(
        estimate=est, low=lo, high=hi, se_log=se, confidence_level=lvl,
        method="matrix-delta", coverage="conditional", groups=groups, threshold=threshold,
        counts={"observed": oo.astype(int).tolist(), "accuracies": a.tolist(),
                "calibration_sizes": None if calibration_sizes is None
                else [int(m) for m in calibration_sizes]},
    )  # fmt: skip
