"""The options of a sample-size plan (:mod:`fairprobe.stats.plan`): the audit it simulates
(:class:`PlannedAudit`) and how its search simulates (:class:`PlanSearch`).

:func:`~fairprobe.stats.plan.plan_audit_budget` and
:func:`~fairprobe.stats.plan.simulated_power` take them, or their fields as flat keywords (the
compatibility form, sorted into the objects by :func:`plan_objects`). The planner checks the
values, with messages naming the ``fairprobe plan`` flags, before it simulates anything; the
objects themselves only hold them, so that the power of one simulated budget (called many times
by a search) checks nothing twice.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fairprobe._flat import split_flat, with_fields

__all__ = ["PlanSearch", "PlannedAudit", "missing_arguments", "plan_objects"]


@dataclass(frozen=True)
class PlannedAudit:
    """The audit a plan simulates and the world it meets.

    Attributes
    ----------
    gap : float
        The true largest gap (ratios: one minus the smallest ratio), on one group (``--gap``).
    target : {"fair", "unfair"} or None
        The verdict whose probability is the power; ``None``: the planner's, ``fair`` when the
        gap is within the tolerance, ``unfair`` beyond it (``plan_audit_budget`` always sets
        it so).
    base_rate : float in (0, 1)
        Every group's rate but the one carrying the gap (``--base-rate``; 0.5: the most
        variable).
    label_rate : float in (0, 1]
        For ``eo``: the share of positive labels (``--label-rate``).
    confidence_level : float in (0, 1)
        Family-wise level of the audit's intervals (``--confidence-level``).
    allocation : {"balanced", "uniform", "neyman", "adaptive"}
        How the audit spreads its queries over the groups (``--allocation``; see
        :func:`~fairprobe.stats.plan.plan_audit_budget`).
    """

    gap: float = 0.0
    target: str | None = None
    base_rate: float = 0.5
    label_rate: float = 0.5
    confidence_level: float = 0.95
    allocation: str = "balanced"


@dataclass(frozen=True)
class PlanSearch:
    """How a plan searches for its budget.

    Attributes
    ----------
    power : float in (0, 1)
        The probability of the target verdict the budget must reach (``--power``).
    reps : int
        Simulated audits per budget of the search (``--reps``).
    seed : int
        Seed of the search; the check uses ``seed + 1``, an audit of the whole pool
        ``seed + 2`` (``--seed``).
    max_budget : int
        The largest budget tried before the plan is refused.
    resolution : float
        Relative resolution of the budget's bisection.
    stand_in : bool
        Two groups only: judge by Newcombe's (Koopman's) interval instead of the exact default.
    check_reps : int or None
        Simulated audits of the check at the chosen budget (``--check-reps``; ``None``: 100
        exact audits with two groups, ``reps`` otherwise).
    """

    power: float = 0.8
    reps: int = 2000
    seed: int = 0
    max_budget: int = 10_000_000
    resolution: float = 0.01
    stand_in: bool = False
    check_reps: int | None = None


#: The flat keywords of the planner (the compatibility form): the object and field each sets.
_FLAGS: dict[str, tuple[str, str]] = {
    **{f: ("model", f) for f in PlannedAudit.__dataclass_fields__},
    **{f: ("search", f) for f in PlanSearch.__dataclass_fields__},
}


def plan_objects(
    owner: str,
    flags: Mapping[str, Any],
    model: PlannedAudit | None = None,
    search: PlanSearch | None = None,
    *,
    accepted: frozenset[str] | None = None,
) -> tuple[PlannedAudit, PlanSearch]:
    """``model`` and ``search`` (or their defaults) with the flat keywords ``flags`` replacing
    their fields; a keyword outside ``accepted`` (default: every field) raises
    :class:`TypeError` naming ``owner``, as a function's unknown keyword does.
    """
    if accepted is not None:
        unknown = [key for key in flags if key not in accepted]
        if unknown:
            raise TypeError(f"{owner}() got an unexpected keyword argument {unknown[0]!r}")
    values = split_flat(flags, _FLAGS, owner)
    return (with_fields(model, PlannedAudit, values.get("model")),
            with_fields(search, PlanSearch, values.get("search")))


def missing_arguments(owner: str, names: list[str], kind: str = "keyword-only") -> TypeError:
    """The :class:`TypeError` Python raises when ``owner`` is called without the required
    arguments ``names`` (``kind``: ``positional`` or ``keyword-only``), worded the same: a
    compatibility form that takes them through ``**flags`` fails as the plain signature did."""
    quoted = [repr(n) for n in names]
    if len(quoted) == 1:
        listed = quoted[0]
    elif len(quoted) == 2:
        listed = f"{quoted[0]} and {quoted[1]}"
    else:
        listed = f"{', '.join(quoted[:-1])}, and {quoted[-1]}"
    s = "" if len(names) == 1 else "s"
    return TypeError(f"{owner}() missing {len(names)} required {kind} argument{s}: {listed}")
