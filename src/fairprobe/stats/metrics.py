"""Fairness metrics from counts (or per-group means): estimate, interval and verdict.

These are the functions the audit methods call once they hold their evidence: the collaborative
protocol and the two-source audit work on counts vectors ``(a, A, b, B)``, the consistency radius
on per-instance values. The array-level entry points of :mod:`fairprobe.stats.api` reduce raw
answers to the same evidence and end here, so every path returns the same
:class:`~fairprobe.stats.result.MetricResult`.
"""

from __future__ import annotations

from typing import Any, TypedDict, Unpack

import numpy as np
import numpy.typing as npt

from fairprobe import metrics as _metrics
from fairprobe._defaults import DEFAULT_INTERVAL
from fairprobe._validation import check_choice, check_real
from fairprobe.errors import DataError, EmptyGroupError
from fairprobe.stats.counts import CountsVector
from fairprobe.stats.result import MeanStats, MetricResult

__all__ = [
    "DEFAULT_CONFIDENCE_LEVEL",
    "DEFAULT_DI_THRESHOLD",
    "DEFAULT_INTERVAL",
    "DEFAULT_TOLERANCE",
    "DifferenceOptions",
    "demographic_parity_from_counts",
    "disparate_impact_from_counts",
    "equal_opportunity_from_counts",
    "mean_stats",
    "performance_gap_from_stats",
]

#: Fair band half-width of the collaborative-auditing paper (Section VI: tau = 0.05).
DEFAULT_TOLERANCE = 0.05
#: The 80% rule (EEOC 1978; two-source paper, Definition 1).
DEFAULT_DI_THRESHOLD = 0.8
DEFAULT_CONFIDENCE_LEVEL = 0.95

RATIO_METHODS = ("exact", "box", "score", "katz")
DIFFERENCE_METHODS = ("exact", "box", "newcombe", "score")


def _difference_method(method: str, owner: str) -> str:
    m = check_choice(method, "method", owner, DIFFERENCE_METHODS)
    return {"exact": "exact-difference", "box": "box-difference", "score": "newcombe"}.get(m, m)


def check_confidence_level(value: Any, owner: str) -> float:
    return check_real(value, "confidence_level", owner, lo=0.0, hi=1.0, closed="neither")


def _check_counts(counts: Any, owner: str) -> CountsVector:
    if not isinstance(counts, CountsVector):
        raise DataError(
            f"{owner} needs a CountsVector (a, A, b, B); got {type(counts).__name__}. "
            "Build one with CountsVector(a, A, b, B) or counts_from_decisions(...)."
        )
    if counts.A == 0 or counts.B == 0:
        empty = "A" if counts.A == 0 else "B"
        raise EmptyGroupError(
            f"Group {empty} holds no instance in counts {counts.as_tuple()}: query both groups "
            "at least once."
        )
    return counts


def _groups(groups: tuple[str, str] | None) -> tuple[str, str]:
    return ("A", "B") if groups is None else (str(groups[0]), str(groups[1]))


class DifferenceOptions(TypedDict, total=False):
    """The keyword options of :func:`demographic_parity_from_counts` and
    :func:`equal_opportunity_from_counts` (defaults in brackets): ``tolerance`` [0.05],
    ``confidence_level`` [0.95], ``groups`` [``("A", "B")``], ``method`` [``"exact"``]."""

    tolerance: float
    confidence_level: float
    groups: tuple[str, str] | None
    method: str


def _difference_from_counts(
    metric: str,
    owner: str,
    counts: CountsVector,
    *,
    tolerance: float = DEFAULT_TOLERANCE,
    confidence_level: float = DEFAULT_CONFIDENCE_LEVEL,
    groups: tuple[str, str] | None = None,
    method: str = DEFAULT_INTERVAL,
) -> MetricResult:
    # DP and EO are one computation (EO is DP on the y_true = 1 rows); they differ only in the
    # metric's name and the function named in errors.
    c = _check_counts(counts, owner)
    tol = check_real(tolerance, "tolerance", owner, lo=0.0, hi=1.0)
    level = check_confidence_level(confidence_level, owner)
    m = _difference_method(method, owner)
    return MetricResult(metric, c.dp(), c, tol, level, m, _groups(groups))


def demographic_parity_from_counts(
    counts: CountsVector, **options: Unpack[DifferenceOptions]
) -> MetricResult:
    r"""Demographic parity difference :math:`\mathrm{DP} = a/A - b/B` with its interval.

    .. math:: \mathrm{DP}(f) = P(f(X)=1 \mid X \in \mathsf A) - P(f(X)=1 \mid X \in \mathsf B)

    (collaborative-auditing paper, Section II-A, Equation 3 on a counts vector). The interval is
    the exact one by default (coverage >= the level at every rate and size: see ``method``);
    the verdict compares it with the fair band ``[-tolerance, tolerance]``
    (:func:`fairprobe.stats.finding.decide`).

    Parameters
    ----------
    counts : CountsVector
        ``(a, A, b, B)``: positives and totals of group A and group B (both totals >= 1).

    Other Parameters
    ----------------
    tolerance : float in [0, 1]
        Half-width ``tau`` of the fair band (default 0.05, as in the collaborative paper).
    confidence_level : float in (0, 1)
        Default 0.95.
    groups : (str, str), optional
        Labels of group A and group B, for reports (default ``("A", "B")``).
    method : {"exact", "box", "newcombe", "score"}
        ``"exact"`` (default): the unconditional exact test inverted (coverage >= nominal at
        every rate and size, at about Newcombe's width; see
        :mod:`fairprobe.stats.unconditional`). ``"box"``: Clopper-Pearson intervals of both
        groups at level ``sqrt(confidence_level)`` combined (exact, wider;
        :func:`fairprobe.stats.exact.box_difference_interval`). ``"newcombe"`` (alias
        ``"score"``): Newcombe's hybrid score interval, narrower, but its exact coverage dips
        below nominal at rates near 0 or 1 in small groups (measured minima in
        ``docs/stats.md``).
    """
    return _difference_from_counts(
        _metrics.DP.name, "demographic_parity_from_counts", counts, **options
    )


def equal_opportunity_from_counts(
    counts: CountsVector, **options: Unpack[DifferenceOptions]
) -> MetricResult:
    r"""Equal-opportunity difference from counts taken on the ``y_true == 1`` sub-population.

    .. math:: \mathrm{EO}(f) = P(f=1 \mid Y=1, \mathsf A) - P(f=1 \mid Y=1, \mathsf B)

    (sequential-auditing summary, "Uguaglianza di Opportunità"): demographic parity of the
    true-positive sub-population, so ``counts`` must count only instances with ``y_true == 1``
    (``a`` true positives among ``A`` positives of group A, ...). Same options, interval and
    verdict as :func:`demographic_parity_from_counts` (:class:`DifferenceOptions`).
    """
    return _difference_from_counts(
        _metrics.EO.name, "equal_opportunity_from_counts", counts, **options
    )


def _ratio(a: int, A: int, b: int, B: int) -> float:
    if b == 0:
        return float("inf") if a > 0 else float("nan")
    return (a / A) / (b / B)


def disparate_impact_from_counts(
    counts: CountsVector,
    *,
    threshold: float = DEFAULT_DI_THRESHOLD,
    confidence_level: float = DEFAULT_CONFIDENCE_LEVEL,
    method: str = DEFAULT_INTERVAL,
    groups: tuple[str, str] | None = None,
) -> MetricResult:
    r"""Disparate-impact ratio :math:`\mu = (a/A) / (b/B)` with the 80% rule.

    .. math::
        \mu = \frac{P(Y=1 \mid X \notin \mathcal C)}{P(Y=1 \mid X \in \mathcal C)}

    (two-source paper, Definition 1): group A is the unprivileged group (numerator), group B the
    privileged group :math:`\mathcal C` (denominator). Fair when :math:`\mu \ge` ``threshold``.

    Parameters
    ----------
    counts : CountsVector
        ``(a, A, b, B)`` with group A unprivileged, group B privileged.
    threshold : float in (0, 1]
        Minimum acceptable ratio (0.8 for the 80% rule).
    method : {"exact", "box", "score", "katz"}
        ``"exact"`` (default): see below. ``"score"``: Koopman's score interval, no correction
        needed at zero counts; asymptotic, its coverage dips near rates 0 and 1.
        ``"katz"``: log-scale Katz interval, with 0.5 added to every cell when any cell of the
        2x2 table is empty (see :func:`fairprobe.stats.intervals.katz_ratio_interval`).
        ``"exact"``: the unconditional exact test (Koopman's statistic) inverted; coverage >=
        nominal at every rate and size, by construction (:mod:`fairprobe.stats.unconditional`).
        ``"box"``: Clopper-Pearson intervals of both groups at level ``sqrt(level)`` combined
        (exact, wider; :func:`fairprobe.stats.exact.box_ratio_interval`).

    Notes
    -----
    The estimate is ``inf`` when the privileged group has no positive and the unprivileged
    does, ``nan`` when neither has any (the interval is then ``(0, inf)`` and the verdict
    ``undetermined``).
    """
    owner = "disparate_impact_from_counts"
    c = _check_counts(counts, owner)
    th = check_real(threshold, "threshold", owner, lo=0.0, hi=1.0, closed="right")
    level = check_confidence_level(confidence_level, owner)
    m = check_choice(method, "method", owner, RATIO_METHODS)
    m = {"exact": "exact-ratio", "box": "box-ratio"}.get(m, m)
    return MetricResult(
        _metrics.DI.name, _ratio(c.a, c.A, c.b, c.B), c, th, level, m, _groups(groups)
    )


def mean_stats(
    values: npt.ArrayLike,
    in_a: npt.ArrayLike,
    in_b: npt.ArrayLike,
    weights: npt.ArrayLike | None = None,
) -> MeanStats:
    r"""Per-group mean, variance and (effective) size of ``values`` for masks ``in_a``, ``in_b``.

    With weights :math:`w`, the mean is :math:`\sum w m / \sum w`, the variance the unbiased
    reliability-weighted one :math:`\sum w (m - \bar m)^2 / (V_1 - V_2/V_1)` with
    :math:`V_1 = \sum w`, :math:`V_2 = \sum w^2`, and the effective size Kish's
    :math:`V_1^2 / V_2`. Without weights these are the usual mean, ``ddof=1`` variance and ``n``.
    Inputs are assumed validated (finite values, non-negative finite weights).
    """
    v = np.asarray(values, dtype=np.float64)
    ma = np.asarray(in_a, dtype=bool)
    mb = np.asarray(in_b, dtype=bool)
    w = None if weights is None else np.asarray(weights, dtype=np.float64)
    out: list[float] = []
    sizes: list[int] = []
    for mask, name in ((ma, "A"), (mb, "B")):
        x = v[mask]
        n = int(x.size)
        if w is None:
            if n < 2:
                _too_small(name, n)
            mean = float(x.mean())
            var = float(x.var(ddof=1))
            neff = float(n)
        else:
            ww = w[mask]
            v1 = float(ww.sum())
            v2 = float((ww * ww).sum())
            neff = v1 * v1 / v2 if v2 > 0 else 0.0
            if n < 2 or neff <= 1.0 + 1e-12:
                _too_small(name, n, weighted=True)
            mean = float((ww * x).sum() / v1)
            var = float((ww * (x - mean) ** 2).sum() / (v1 - v2 / v1))
        out += [mean, var, neff]
        sizes.append(n)
    return MeanStats(
        n_a=sizes[0], mean_a=out[0], var_a=out[1], neff_a=out[2],
        n_b=sizes[1], mean_b=out[3], var_b=out[4], neff_b=out[5],
    )


def _too_small(name: str, n: int, weighted: bool = False) -> None:
    what = "instances with positive weight" if weighted else "instances"
    cls = EmptyGroupError if n == 0 else DataError
    raise cls(
        f"Group {name} holds {n} instance(s); the performance gap's Welch interval needs at "
        f"least two {what} per group."
    )


def performance_gap_from_stats(
    stats: MeanStats,
    *,
    tolerance: float = DEFAULT_TOLERANCE,
    confidence_level: float = DEFAULT_CONFIDENCE_LEVEL,
    groups: tuple[str, str] | None = None,
) -> MetricResult:
    r"""Performance gap :math:`\varphi = \bar m_A - \bar m_B` with Welch's t interval.

    .. math::
        \varphi(P) = \frac{1}{|D_0|}\sum_{i \in D_0} m_i - \frac{1}{|D_1|}\sum_{i \in D_1} m_i

    with :math:`m_i = M(f(x_i), y_i)` any per-instance value, e.g. correctness (consistency-radius
    paper, Section 3.1); weighted means give :math:`\varphi(P_h)` under a reweighting ``h``
    (Section 3.2). The verdict compares the interval with ``[-tolerance, tolerance]``.
    """
    owner = "performance_gap_from_stats"
    if not isinstance(stats, MeanStats):
        raise DataError(f"{owner} needs a MeanStats; got {type(stats).__name__}.")
    tol = check_real(tolerance, "tolerance", owner, lo=0.0)
    level = check_confidence_level(confidence_level, owner)
    return MetricResult(
        "performance_gap", stats.mean_a - stats.mean_b, stats, tol, level, "welch",
        _groups(groups),
    )
