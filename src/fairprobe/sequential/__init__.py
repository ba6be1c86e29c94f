"""Sequential fairness audits: stop as soon as the evidence decides.

Pitsiorlas, Sourla and Kountouris, *Sequential Fairness Auditing with Limited Output Access*
(EWAF 2026): GLR tests of the tolerance hypotheses ``|g| <= delta`` for statistical parity and
equal opportunity under decision, score and logit access, with Wald-style boundaries
(``glr-wald``, anytime-invalid); the default ``mixture``, an anytime-valid mixture-of-bets
e-process on balanced pairs with a without-replacement martingale and a confidence sequence;
the betting test of Chugg et al. (NeurIPS 2023) and the fixed-sample baseline.
See ``docs/sequential.md``.
"""

from fairprobe.sequential.base import (
    ACCESS_REGIMES,
    DEFAULT_TEST,
    OUTCOMES,
    SequentialTest,
    Stepper,
    available_tests,
    get_test,
    register_test,
)
from fairprobe.sequential.betting import BettingTest
from fairprobe.sequential.boundaries import Boundaries, wald_boundaries, wald_lower_bound
from fairprobe.sequential.fixed import FixedSampleTest
from fairprobe.sequential.glr import GLRTest
from fairprobe.sequential.mixture import MixtureBettingTest
from fairprobe.sequential.pool import AuditPool, run_pool
from fairprobe.sequential.results import RepeatedAudit, SequentialResult
from fairprobe.sequential.runner import StepInfo, audit_live

__all__ = [
    "ACCESS_REGIMES",
    "DEFAULT_TEST",
    "OUTCOMES",
    "AuditPool",
    "RepeatedAudit",
    "SequentialResult",
    "StepInfo",
    "audit_live",
    "run_pool",
    "BettingTest",
    "Boundaries",
    "FixedSampleTest",
    "GLRTest",
    "MixtureBettingTest",
    "SequentialTest",
    "Stepper",
    "available_tests",
    "get_test",
    "register_test",
    "wald_boundaries",
    "wald_lower_bound",
]
