"""The fixed-sample test on the whole budget (the paper's baseline).

All ``B`` queries are spent; then the signed GLR statistic ``Lambda_B`` of
:mod:`fairprobe.sequential.glr` (Bernoulli for decisions, Gaussian for scores and logits) is
compared once with ``z_{1-alpha}^2 / 2``. Its signed root ``sign * sqrt(2 |Lambda_B|)`` is
asymptotically standard normal at the boundary ``|g| = delta``, so declaring a *violation* when
``Lambda_B >= z_{1-alpha}^2 / 2`` is a level-``alpha`` test of H0 ``|g| <= delta``; otherwise the
test declares *compliant* (H0 not rejected — not a certificate: the fixed-sample test has no
control of ``beta`` beyond the power its budget buys). It is *inconclusive* only when a group got
no query at all.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from scipy.special import ndtri

from fairprobe.sequential.base import (
    COMPLIANT,
    INCONCLUSIVE,
    VIOLATION,
    OrdersOutcome,
    Stepper,
    check_budget,
    register_test,
)
from fairprobe.sequential.boundaries import Boundaries
from fairprobe.sequential.glr import GLRTest, _cumulative_glr, _GLRStepper

__all__ = ["FixedSampleTest"]


class _FixedStepper(_GLRStepper):
    def __init__(self, test: FixedSampleTest, budget: int) -> None:
        super().__init__(test, budget)
        self.threshold = test.boundaries.upper

    def _observe(self, in_group_a: bool, value: float) -> str | None:
        super()._observe(in_group_a, value)  # updates the running statistic; never stops
        return None

    def _at_budget(self) -> str:
        m = self.t.min_per_group
        if self.n1 < m or self.n2 < m:
            return "inconclusive"
        return "violation" if self.stat >= self.threshold else "compliant"


@register_test("fixed")
class FixedSampleTest(GLRTest):
    """Fixed-sample level-``alpha`` test of H0 ``|g| <= delta`` on the whole budget."""

    @property
    def boundaries(self) -> Boundaries:
        z = float(ndtri(1.0 - self.alpha))
        return Boundaries(0.5 * z * z, None)

    def stepper(self, budget: int) -> Stepper:
        return _FixedStepper(self, check_budget(budget, "FixedSampleTest.stepper"))

    def _run_orders(self, in_a: npt.NDArray[np.bool_], x: npt.NDArray[np.float64]) -> OrdersOutcome:
        stat = _cumulative_glr(self, in_a, x, final_only=True)
        n1 = in_a.sum(axis=1)
        n2 = in_a.shape[1] - n1
        enough = (n1 >= self.min_per_group) & (n2 >= self.min_per_group)
        codes = np.where(
            enough, np.where(stat >= self.boundaries.upper, VIOLATION, COMPLIANT), INCONCLUSIVE
        ).astype(np.int8)
        return OrdersOutcome(np.full(in_a.shape[0], in_a.shape[1], dtype=np.int64), codes)
