r"""Budget policies of the large regime: the fixed split, and a two-armed Thompson-sampling bandit.

In the large regime (Appendix B of ``two-source-audits.md``) every B answer enters the estimate
of the disparate impact and A is used only for checks. The budget ``t`` buys two kinds of query:

* a **B query** (cost 1) on a new record: one more answer for the estimate through B;
* a **check** (cost 1) — an A query on a record already asked of B: one more pair for the
  fairwashing detectors, and (the auditor knows the group of the records she sends to A) one more
  validated record for the misclassification correction.

Appendix B says only: "As in the case dealt with in section 5.3, it is possible to find the best
possible budget arbitration by modeling two-armed bandits" (no algorithm; Section 5.3 itself has
the fixed split ``beta`` and never mentions bandits). fairprobe offers:

* :class:`FixedSplit` — the planner's split (:func:`~fairprobe.twosource.budget.plan_budget`):
  ``n_b`` B queries, ``n_checks`` checks. The default.
* :class:`ThompsonSplit` — ours: after ``m0`` B queries and ``m0`` checks, each round draws
  :math:`q \sim \mathrm{Beta}(1 + n_{inc}, 1 + n_{chk} - n_{inc})` from the posterior of the
  inconsistency rate and buys ``batch`` checks if :math:`q` exceeds the midpoint ``q_mid`` between
  the honest rate :math:`q_0 = 1 - p` and the rate :math:`q_1` of a fairwashing that brings A to
  the 80% line, else ``batch`` B queries (a check needs an unchecked B record; when none is left
  a B query is bought). Measured against the fixed split by
  ``experiments/twosource/large_regime.py``. The number of checks then depends on the data; the
  detectors test at the realised number (their size under this adaptive stop is measured, not
  proved).

A policy is a sans-I/O state machine: :meth:`BudgetPolicy.next_action` takes the counts so far
and returns the next purchase; the live audit and the simulations run the same object.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from fairprobe._validation import check_int, check_real
from fairprobe.errors import InvalidParameterError

__all__ = ["POLICIES", "BudgetPolicy", "FixedSplit", "PolicyState", "ThompsonSplit", "make_policy"]


@dataclass(frozen=True)
class PolicyState:
    """What a policy sees: budget left, B records bought, checks made, inconsistencies found."""

    budget_left: int
    n_b: int
    n_checks: int
    n_inconsistent: int


class BudgetPolicy(ABC):
    """Decides the next purchase: ``("b", k)`` B queries or ``("check", k)`` checks."""

    name: ClassVar[str] = "policy"

    @abstractmethod
    def next_action(self, state: PolicyState) -> tuple[str, int]:
        """The next purchase; ``k >= 1`` and within the budget left."""

    def describe(self) -> dict[str, Any]:
        return {"policy": self.name}


class FixedSplit(BudgetPolicy):
    """The planner's split: ``n_checks`` checks, the rest of the budget on B (B first)."""

    name = "fixed"

    def __init__(self, n_checks: int) -> None:
        self.n_checks = check_int(n_checks, "n_checks", "FixedSplit", lo=0)

    def next_action(self, state: PolicyState) -> tuple[str, int]:
        want_b = state.n_b + state.n_checks + state.budget_left - self.n_checks
        if state.n_b < want_b:
            return "b", want_b - state.n_b
        return "check", state.budget_left

    def describe(self) -> dict[str, Any]:
        return {"policy": self.name, "n_checks": self.n_checks}


class ThompsonSplit(BudgetPolicy):
    """Two-armed Thompson sampling on the inconsistency rate (module docstring)."""

    name = "thompson"

    def __init__(self, q0: float, q1: float, *, m0: int = 25, batch: int = 25,
                 seed: int = 0) -> None:  # fmt: skip
        owner = "ThompsonSplit"
        self.q0 = check_real(q0, "q0", owner, lo=0.0, hi=1.0)
        self.q1 = check_real(q1, "q1", owner, lo=0.0, hi=1.0)
        if self.q1 < self.q0:
            raise InvalidParameterError(
                f"The 'q1' parameter of {owner} (rate under fairwashing, {q1:g}) must not be "
                f"below 'q0' (honest rate, {q0:g})."
            )
        self.m0 = check_int(m0, "m0", owner, lo=1)
        self.batch = check_int(batch, "batch", owner, lo=1)
        self.seed = check_int(seed, "seed", owner, lo=0)
        self._rng = np.random.default_rng(self.seed)

    @property
    def q_mid(self) -> float:
        return 0.5 * (self.q0 + self.q1)

    def next_action(self, state: PolicyState) -> tuple[str, int]:
        left = state.budget_left
        if state.n_b < self.m0:
            return "b", min(self.m0 - state.n_b, left)
        room = state.n_b - state.n_checks
        if state.n_checks < self.m0 and room > 0:
            return "check", min(self.m0 - state.n_checks, room, left)
        q = self._rng.beta(1 + state.n_inconsistent, 1 + state.n_checks - state.n_inconsistent)
        if q > self.q_mid and room > 0:
            return "check", min(self.batch, room, left)
        return "b", min(self.batch, left)

    def describe(self) -> dict[str, Any]:
        return {"policy": self.name, "q0": self.q0, "q1": self.q1, "q_mid": self.q_mid,
                "m0": self.m0, "batch": self.batch, "seed": self.seed}  # fmt: skip


#: Policy names selectable from the CLI (``--policy``).
POLICIES: tuple[str, ...] = ("fixed", "thompson")


def make_policy(name: str, **kwargs: Any) -> BudgetPolicy:
    """``"fixed"`` (kwargs of :class:`FixedSplit`) or ``"thompson"`` (of :class:`ThompsonSplit`)."""
    if name == "fixed":
        return FixedSplit(**kwargs)
    if name == "thompson":
        return ThompsonSplit(**kwargs)
    raise InvalidParameterError(f"Unknown policy {name!r}: use one of {', '.join(POLICIES)}.")
