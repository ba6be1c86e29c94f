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
validation subsample to be a random subsample of the B sample (the audit draws it so).

**The interval: exact** (:func:`double_sampling_box`). Two exact intervals at
``1 - alpha/2`` each, intersected: the correction box (:func:`_correction_box`: simultaneous
Clopper-Pearson intervals for the four reclassification rates and the four cells of the B
answers, Bonferroni; the corrected rates are monotone in the rates and linear-fractional in the
cells, so their exact ranges over the box are read off its corners and vertices) and the exact
ratio of the checked records' rates by true group. Coverage ``>= level`` at every sample size
and rate, whatever the proxy's errors (``coverage="exact"``); always reported, open-ended (no
upper bound, the reason said) where the checks cannot keep the privileged group's corrected rate
away from 0. Measured by ``experiments/twosource/corrected_di_coverage.py``: the delta interval
:math:`\exp(\log\hat\mu_B \pm z\,\widehat{se})` (:func:`double_sampling_se`, kept for
comparison) printed where each group has at least :data:`MIN_CHECKED_POSITIVES` checked
positives covers as little as 0.725 among the audits it is printed for at 100 checks, missing
mostly above the truth; the exact interval covers >= 0.997 in every cell, where printed too.

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

from fairprobe import metrics as _metrics
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

#: The gate of the delta interval this module no longer prints (kept for the experiment that
#: measures it): fewest validated positives in each true group.
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


#: Share of the exact box interval's error level spent on the four cells of the B answers
#: (the rest goes to the four reclassification rates). Measured: moving it to 0.1 changes the
#: widths by under 5% either way, so the eight intervals share the level equally.
BOX_CELL_SHARE = 0.5


def _vertices(lo: FloatArray, hi: FloatArray) -> FloatArray:
    """The 16 vertices of the box ``[lo, hi]`` over the last two axes (2, 2): (..., 16, 2, 2)."""
    bits = (np.arange(16)[:, None] >> np.arange(4)[None, :]) & 1  # (16, 4)
    lo4 = lo.reshape(lo.shape[:-2] + (1, 4))
    hi4 = hi.reshape(hi.shape[:-2] + (1, 4))
    out = np.where(bits.astype(bool), hi4, lo4)
    return np.asarray(out.reshape(out.shape[:-1] + (2, 2)), dtype=np.float64)


def _rate_range(q_lo: FloatArray, q_hi: FloatArray, w_lo: FloatArray, w_hi: FloatArray
                ) -> tuple[FloatArray, FloatArray]:
    r"""Range of :math:`r = \sum_{\hat g} q_{\hat g 1} w_{\hat g 1} / \sum_{\hat g, y}
    q_{\hat g y} w_{\hat g y}` over the boxes of ``q`` and ``w`` (both (..., g_hat, y)).

    ``r`` increases in ``w(., 1)`` and decreases in ``w(., 0)`` whatever ``q >= 0``, so its
    extremes over ``w`` are two fixed corners; for a fixed ``w`` it is a ratio of linear
    functions of ``q`` (positive denominator), whose extremes over a box lie at its vertices.
    """
    qv = _vertices(q_lo, q_hi)  # (..., 16, g_hat, y)

    def at(w: FloatArray) -> FloatArray:
        num = (qv[..., 1] * w[..., None, :, 1]).sum(axis=-1)
        den = num + (qv[..., 0] * w[..., None, :, 0]).sum(axis=-1)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.asarray(num / den, dtype=np.float64)

    w_max = np.stack([w_lo[..., 0], w_hi[..., 1]], axis=-1)  # (g_hat, y): low for y=0, high y=1
    w_min = np.stack([w_hi[..., 0], w_lo[..., 1]], axis=-1)
    r_hi = np.nanmax(np.where(np.isnan(at(w_max)), 1.0, at(w_max)), axis=-1)
    r_lo = np.nanmin(np.where(np.isnan(at(w_min)), 0.0, at(w_min)), axis=-1)
    return np.asarray(r_lo, dtype=np.float64), np.asarray(r_hi, dtype=np.float64)


def _correction_box(u: npt.ArrayLike, v: npt.ArrayLike, confidence_level: float
                    ) -> tuple[FloatArray, FloatArray]:
    r"""The exact box interval ``(low, high)`` of the corrected DI, vectorised over leading axes.

    Simultaneous Clopper-Pearson intervals (each at :math:`1 - \alpha / 8`, Bonferroni) for
    the four reclassification rates :math:`v(u \mid \hat g, y)` (validated records of each
    column :math:`(\hat g, y)`; an empty column gives ``[0, 1]``) and the four cells
    :math:`q(\hat g, y)` of all B answers hold together with probability
    :math:`\ge 1 - \alpha`; on that event both corrected rates lie in their ranges over the
    box (:func:`_rate_range`: exact extremes) and :math:`\mu_B = r_u / r_p` lies in
    ``[min r_u / max r_p, max r_u / min r_p]``. So the interval covers with probability
    :math:`\ge` ``confidence_level`` at every sample size, rate and proxy error (differential
    or not), given only that the validated records are a random subsample of the B records.
    ``high`` is ``inf`` where the box lets the privileged group's rate reach 0.
    """
    from fairprobe.stats.exact import clopper_pearson_interval

    uu = np.asarray(u, dtype=np.float64)
    vv = np.asarray(v, dtype=np.float64)
    v3 = vv.reshape(vv.shape[:-1] + (2, 2, 2))  # (g, g_hat, y)
    col = v3.sum(axis=-3)
    a = 1.0 - confidence_level
    k_u = v3[..., 0, :, :]
    wl, wh = clopper_pearson_interval(k_u, np.maximum(col, 1.0),
                                      1.0 - a * (1.0 - BOX_CELL_SHARE) / 4)
    wl = np.where(col > 0, wl, 0.0)
    wh = np.where(col > 0, wh, 1.0)
    cells = uu.reshape(uu.shape[:-1] + (2, 2)) + col
    n = cells.sum(axis=(-2, -1))[..., None, None]
    ql, qh = clopper_pearson_interval(cells, np.maximum(n, 1.0), 1.0 - a * BOX_CELL_SHARE / 4)
    ru_lo, ru_hi = _rate_range(ql, qh, wl, wh)
    rp_lo, rp_hi = _rate_range(ql, qh, 1.0 - wh, 1.0 - wl)
    with np.errstate(divide="ignore", invalid="ignore"):
        low = np.where(rp_hi > 0, ru_lo / rp_hi, 0.0)
        high = np.where(rp_lo > 0, ru_hi / rp_lo, np.inf)
    return np.asarray(low, dtype=np.float64), np.asarray(high, dtype=np.float64)


def double_sampling_box(u: npt.ArrayLike, v: npt.ArrayLike, confidence_level: float = 0.95
                        ) -> tuple[FloatArray, FloatArray]:
    r"""The exact interval of the corrected DI: two exact intervals at :math:`1 - \alpha/2`,
    intersected (Bonferroni: both cover together with probability :math:`\ge 1 - \alpha`).

    * the correction box (:func:`_correction_box`), which uses every B answer through the
      reclassification rates — tight when few records are checked among many;
    * the exact ratio of the *checked* records' rates by true group
      (:func:`fairprobe.stats.exact.box_ratio_interval`; the checks are a random subsample of
      the B records with their true group known) — tight when most records are checked, where
      the box's eight separate intervals lose the records' joint information.
    """
    from fairprobe.stats.exact import box_ratio_interval

    half = 1.0 - (1.0 - confidence_level) / 2.0
    b_lo, b_hi = _correction_box(u, v, half)
    vv = np.asarray(v, dtype=np.float64)
    v3 = vv.reshape(vv.shape[:-1] + (2, 2, 2))
    pos = v3[..., 1].sum(axis=-1)  # (..., g): checked positives
    tot = v3.sum(axis=(-2, -1))  # (..., g): checked records
    ok = (tot > 0).all(axis=-1)
    d_lo, d_hi = box_ratio_interval(pos[..., 0], np.maximum(tot[..., 0], 1.0), pos[..., 1],
                                    np.maximum(tot[..., 1], 1.0), half)
    d_lo = np.where(ok, d_lo, 0.0)
    d_hi = np.where(ok, d_hi, np.inf)
    return (np.asarray(np.maximum(b_lo, d_lo), dtype=np.float64),
            np.asarray(np.minimum(b_hi, d_hi), dtype=np.float64))


def double_sampling_interval(u: npt.ArrayLike, v: npt.ArrayLike, confidence_level: float = 0.95
                             ) -> tuple[FloatArray, FloatArray, FloatArray,
                                        npt.NDArray[np.bool_]]:
    r"""``(estimate, low, high, open_ended)`` of the corrected DI, vectorised over leading axes.

    The interval is the exact box (:func:`double_sampling_box`); ``open_ended`` marks the
    audits where it has no finite upper bound (too few validated positives to keep the
    privileged group's corrected rate away from 0). Never undefined (NaN only in ``estimate``,
    where a group has no estimated positive).
    """
    lm = double_sampling_log_di(u, v)
    lo, hi = double_sampling_box(u, v, confidence_level)
    with np.errstate(over="ignore", invalid="ignore"):
        est = np.where(np.isfinite(lm), np.exp(np.where(np.isfinite(lm), lm, 0.0)), np.nan)
    return (np.asarray(est, dtype=np.float64), lo, hi, np.asarray(~np.isfinite(hi)))


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
            metric=_metrics.DI.name, kind="ratio", threshold=self.threshold,
            groups=self.groups, scale="ratio", subject=subject, rates=("selection_rate",),
        )  # fmt: skip
        reason = None
        checked = self.counts.get("checked_positives")
        if self.method == "double-sampling-exact-box" and not math.isfinite(self.high):
            few = "" if checked is None else f" ({min(checked):g} checked positive(s) in a group)"
            reason = ("the checked records cannot keep the privileged group's corrected positive "
                      f"rate away from 0{few}: the interval has no upper bound; more checks "
                      "would decide it")
        elif self.method != "double-sampling-exact-box" and not math.isfinite(self.se_log):
            reason = "the corrected estimate through B is undefined (a group without positives)"
        return Finding(
            question=q, estimate=self.estimate, low=self.low, high=self.high,
            confidence_level=self.confidence_level, construction=self.method,
            coverage=self.coverage, reason=reason, counts=self.counts,
            forced="undetermined" if reason and self.method != "double-sampling-exact-box" else None,
        )  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        def f(x: float) -> float | None:
            return float(x) if math.isfinite(x) else None

        return {
            "metric": _metrics.DI.name,
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
    """The double-sampling corrected DI through B with its exact box interval.

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
        confidence_level=lvl, method="double-sampling-exact-box", coverage="exact",
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
