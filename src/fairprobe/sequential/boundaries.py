"""Stopping boundaries and Wald's lower bound on the expected number of queries.

Wald-style boundaries (paper, "Procedura Sequenziale"): stop with *violation* when the statistic
reaches ``u = log((1 - beta) / alpha)`` and with *compliant* when it falls to
``l = log(beta / (1 - alpha))``. With alpha = 0.05 and beta = 0.2, ``u = log 16 = 2.773`` and
``l = log(0.2 / 0.95) = -1.558``. These are Wald's approximations for a test between two *simple*
hypotheses; used with a GLR statistic and composite hypotheses they are operational, not a
guarantee (see ``docs/sequential.md``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from fairprobe._validation import check_real

__all__ = [
    "Boundaries",
    "check_error_rates",
    "wald_boundaries",
    "wald_lower_bound",
    "wald_numerator",
]


@dataclass(frozen=True, slots=True)
class Boundaries:
    """Upper (violation) and lower (compliant) thresholds of a running statistic.

    ``lower`` is ``None`` when the test never stops for compliance before its budget.
    """

    upper: float
    lower: float | None

    def to_dict(self) -> dict[str, float | None]:
        return {"upper": self.upper, "lower": self.lower}


def check_error_rates(alpha: float, beta: float, owner: str) -> tuple[float, float]:
    """Validate nominal error rates: both in (0, 1) with ``alpha + beta < 1``."""
    a = check_real(alpha, "alpha", owner, lo=0.0, hi=1.0, closed="neither")
    b = check_real(beta, "beta", owner, lo=0.0, hi=1.0 - a, closed="neither")
    return a, b


def wald_boundaries(alpha: float = 0.05, beta: float = 0.2) -> Boundaries:
    """Wald's boundaries ``u = log((1 - beta) / alpha)``, ``l = log(beta / (1 - alpha))``."""
    a, b = check_error_rates(alpha, beta, "wald_boundaries")
    return Boundaries(math.log((1.0 - b) / a), math.log(b / (1.0 - a)))


def _kl_bern(x: float, y: float) -> float:
    out = 0.0
    if x > 0:
        out += x * math.log(x / y)
    if x < 1:
        out += (1 - x) * math.log((1 - x) / (1 - y))
    return out


def wald_numerator(alpha: float, beta: float, *, violation: bool) -> float:
    """Numerator of Wald's bound: the KL divergence between the two decision laws.

    Under a violation (H1 true) any test with error rates ``alpha`` (type I) and ``beta``
    (type II) needs ``E[N] * I >= kl(1 - beta, alpha) = (1 - beta) log((1 - beta) / alpha) +
    beta log(beta / (1 - alpha))``; under compliance ``kl(1 - alpha, beta)``.
    """
    a, b = check_error_rates(alpha, beta, "wald_numerator")
    return _kl_bern(1 - b, a) if violation else _kl_bern(1 - a, b)


def wald_lower_bound(alpha: float, beta: float, information: float, *, violation: bool) -> float:
    """Wald's lower bound on the expected sample size of any test with these error rates.

    ``information`` is the Kullback–Leibler divergence per query between the true law and the
    nearest law of the other hypothesis (``D`` of :mod:`fairprobe.sequential.glr` evaluated at
    the group shares and true parameters). Returns ``inf`` when it is 0 (true gap at ``delta``).
    (Wald 1945, Hoeffding 1960; the composite version takes the infimum over the other
    hypothesis.)
    """
    num = wald_numerator(alpha, beta, violation=violation)
    if information <= 0:
        return math.inf
    return num / information
