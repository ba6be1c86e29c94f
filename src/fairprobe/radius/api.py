"""``consistency_radius``: one entry point over every radius method."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fairprobe._registry import Registry
from fairprobe._validation import check_choice
from fairprobe.radius._data import AuditData, check_tolerance, prepare
from fairprobe.radius.result import RadiusResult

__all__ = ["METHODS", "consistency_radius", "register_method"]

Solver = Callable[..., RadiusResult]
METHODS: Registry[Solver] = Registry("method", "consistency_radius")


def register_method(name: str) -> Callable[[Solver], Solver]:
    """Register ``fn(data: AuditData, tolerance, divergence, **options) -> RadiusResult``."""
    return METHODS.register_as(name)


def consistency_radius(
    values: Any,
    groups: Any,
    tolerance: float,
    *,
    weights: Any = None,
    method: str = "exact",
    divergence: str = "kl",
    subgroups: Any = None,
    **options: Any,
) -> RadiusResult:
    """Consistency radius ``R(f, P, eps)`` of the assessment ``|phi(P)| < eps`` (paper Def. 1).

    ``R = min { d(h) : h >= 0, E_P[h] = 1, A(f, P_h, eps) != A(f, P, eps) }`` where
    ``phi(P_h)`` is the h-weighted mean of ``values`` in group ``groups[0]`` (the sorted first
    label) minus that in the other group, and ``d`` is ``KL(P_h || P) = sum_i P_i h_i log h_i``
    (default) or the chi-square divergence.

    Parameters
    ----------
    values : array-like of float, shape (n,)
        Per-instance performance ``m_i`` (e.g. correctness 0/1).
    groups : array-like, shape (n,)
        Exactly two distinct labels.
    tolerance : float > 0
        The fairness tolerance eps.
    weights : array-like of float >= 0, optional
        The audit distribution P as weighted points (default: uniform ``1/n``).
    method : {"exact", "core", "greedy", "worst-group"}
        ``exact`` is the certified global optimum (docs/radius.md); ``core`` is the paper's CoRe
        (Section 4, cvxpy); ``greedy`` and ``worst-group`` are the paper's baselines (Sec. 5.1).
    divergence : {"kl", "chi2"}
    subgroups : array-like, optional
        Subgroup labels for ``worst-group`` (default: distinct values, or value quintiles).

    Returns
    -------
    RadiusResult
        ``radius`` is ``math.inf`` (``None`` in ``to_dict``) when no reweighting flips the
        assessment; ``result.message`` then says why.
    """
    owner = "consistency_radius"
    import fairprobe.radius.baselines  # noqa: F401  (registers greedy, worst-group)
    import fairprobe.radius.core  # noqa: F401  (registers core)
    import fairprobe.radius.exact_method  # noqa: F401  (registers exact)

    eps = check_tolerance(tolerance, owner)
    check_choice(method, "method", owner, tuple(METHODS))
    check_choice(divergence, "divergence", owner, ("kl", "chi2"))
    data: AuditData = prepare(values, groups, weights, subgroups if method == "worst-group" else None)
    return METHODS[method](data, eps, divergence, **options)
