"""``consistency_radius``: one entry point over every radius method."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from fairprobe._registry import Registry
from fairprobe._validation import check_choice, check_int
from fairprobe.errors import InvalidParameterError
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
    pair: tuple[Any, Any] | None = None,
    curve_points: int = 0,
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
        Group labels. Two labels: the paper's binary setting. More than two (``method="exact"``
        only): the worst pair (fair iff every pair of group means is within eps) or the ``pair``
        given; guarantees in :mod:`fairprobe.radius.multigroup` (exact for a pair and for a fair
        worst-pair audit; for an unfair worst-pair audit a certified lower bound and an achieved
        upper bound).
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
    pair : (label, label), optional
        Assess only these two groups (the others keep their share of the mass).
    curve_points : int, default 0
        If > 0, attach the flip curve (least divergence against the target phi on this many grid
        points, by the exact line solver) as ``result.curve`` (binary or pair audits).

    Returns
    -------
    RadiusResult
        ``radius`` is ``math.inf`` (``None`` in ``to_dict``) when no reweighting flips the
        assessment; ``result.message`` then says why.
    """
    owner = "consistency_radius"

    eps = check_tolerance(tolerance, owner)
    check_choice(method, "method", owner, tuple(METHODS))
    check_choice(divergence, "divergence", owner, ("kl", "chi2"))
    npts = check_int(curve_points, "curve_points", owner, lo=0, hi=10_000)
    labels = np.unique(np.asarray(groups)) if np.ndim(groups) == 1 else None
    if pair is not None or (labels is not None and labels.size > 2):
        from fairprobe.radius.multigroup import multigroup_radius

        if method != "exact":
            raise InvalidParameterError(
                f"More than two groups (or a chosen pair) need method='exact'; got {method!r}. "
                "CoRe and the baselines are defined for a binary attribute (paper Section 3.1)."
            )
        res = multigroup_radius(values, groups, eps, weights=weights, divergence=divergence,
                                pair=pair, **options)  # fmt: skip
        if npts and pair is not None:
            g = np.asarray(groups)
            sel = (g == pair[0]) | (g == pair[1])
            w_all = (np.full(g.size, 1.0) if weights is None
                     else np.asarray(weights, dtype=float))  # fmt: skip
            sub = prepare(np.asarray(values, dtype=float)[sel], g[sel], w_all[sel])
            outside = float(1.0 - w_all[sel].sum() / w_all.sum())
            res = replace(res, curve=_curve(sub, divergence, npts, outside))
        return res
    data: AuditData = prepare(values, groups, weights, subgroups if method == "worst-group" else None)
    res = METHODS[method](data, eps, divergence, **options)
    if npts:
        res = replace(res, curve=_curve(data, divergence, npts))
    return res


def _curve(data: AuditData, divergence: str, points: int, outside: float = 0.0) -> dict[str, Any]:
    from fairprobe.radius.exact import flip_curve

    return {**flip_curve(data, divergence, points, rtol=1e-6, outside=outside), "method": "exact"}


# The built-in methods register themselves on import (they import ``register_method`` from this
# module, which is defined above): ``list(METHODS)`` is complete as soon as this module is loaded.
import fairprobe.radius.baselines  # noqa: E402, F401  (registers greedy, worst-group)
import fairprobe.radius.core  # noqa: E402, F401  (registers core; cvxpy is imported lazily)
import fairprobe.radius.exact_method  # noqa: E402, F401  (registers exact)
