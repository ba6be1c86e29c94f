"""Theorem 2: when can one attacker bring the estimate into the fair band? (Section IV-C, App. B)

Fix the attacker's view ``C = (a, A, b, B)`` with ``DP(C) < -tau`` and its budget ``n``. By Lemma 1
the best move for raising DP claims extreme labels, so the attacker controls one variable, the split
``y = dA``::

    phi(y) = (a + y) / (A + y) - b / (B + n - y),      y in {0, ..., n}.

Theorem 2: under ``min(A, B) + 1 > 1 / (2 tau)`` (11), some split gives ``|phi(y)| < tau`` iff

1. ``min(phi(0), phi(n)) < tau`` and
2. ``phi(y) > -tau`` for some ``y``.

Condition 2 in closed form (Appendix B-B): ``phi(y) + tau = Gamma(y) / ((A + y)(B + n - y))`` with
``Gamma(y) = -(1 + tau) y^2 + g1 y + g0``,
``g1 = (B + n - a) - b + tau (B + n - A)``, ``g0 = a (B + n) - b A + tau A (B + n)``,
discriminant ``Lambda = g1^2 + 4 (1 + tau) g0`` and roots ``rho_{1,2} = (g1 -+ sqrt(Lambda)) /
(2 (1 + tau))``; ``I+ = {y^-, ..., y^+}`` with ``y^- = max(0, floor(rho1) + 1)`` and
``y^+ = min(n, ceil(rho2) - 1)``; condition 2 holds iff ``Lambda > 0`` and ``y^- <= y^+``. The
integer bounds are checked against the sign of ``Gamma`` at the boundary so that floating-point
roots never misplace them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from fairprobe import metrics as _metrics
from fairprobe._validation import check_int, check_real
from fairprobe.errors import DataError
from fairprobe.stats.counts import CountsVector

__all__ = ["Theorem2", "fair_splits_bruteforce", "gamma", "phi", "phi_exact", "theorem2"]


def phi(c: CountsVector, n: int, y: int) -> float:
    """``DP`` after the extreme-label move with split ``y`` (eq. 9)."""
    return (c.a + y) / (c.A + y) - c.b / (c.B + n - y)


def gamma(c: CountsVector, n: int, tau: float, y: int) -> Fraction:
    """``Gamma(y) = (phi(y) + tau) (A + y)(B + n - y)`` (Appendix B-B), exact in the float tau."""
    a, A, b, B = c.as_tuple()
    t = Fraction(tau)
    return (a + y) * (B + n - y) - b * (A + y) + t * (A + y) * (B + n - y)


@dataclass(frozen=True)
class Theorem2:
    """Closed-form answer of Theorem 2 for one view, budget and band."""

    dp: float
    assumption: bool  # (11): min(A, B) + 1 > 1 / (2 tau), and DP(C) < -tau
    condition1: bool
    condition2: bool
    discriminant: float
    roots: tuple[float, float] | None
    splits: tuple[int, int] | None  # I+ = {y^-, ..., y^+} when non-empty

    @property
    def fairwashable(self) -> bool:
        """Conditions 1 and 2 (equivalent to a split with ``|phi| < tau`` under the assumption)."""
        return self.condition1 and self.condition2

    def to_dict(self) -> dict[str, Any]:
        return {
            _metrics.DP.short: self.dp,
            "assumption": self.assumption,
            "condition1": self.condition1,
            "condition2": self.condition2,
            "fairwashable": self.fairwashable,
            "discriminant": self.discriminant,
            "roots": None if self.roots is None else list(self.roots),
            "splits": None if self.splits is None else list(self.splits),
        }


def theorem2(c: CountsVector, n: int, tau: float = 0.05) -> Theorem2:
    """Evaluate Theorem 2 for view ``c``, budget ``n`` and band ``tau`` in closed form."""
    n = check_int(n, "n", "theorem2", lo=1)
    tau = check_real(tau, "tau", "theorem2", lo=0.0, hi=1.0, closed="neither")
    if c.A == 0 or c.B == 0:
        raise DataError("Theorem 2 needs a view with both groups (A > 0 and B > 0).")
    a, A, b, B = c.as_tuple()
    dp = a / A - b / B
    assumption = (min(A, B) + 1 > 1 / (2 * tau)) and dp < -tau
    cond1 = min(phi_exact(c, n, 0), phi_exact(c, n, n)) < Fraction(tau)
    g1 = (B + n - a) - b + tau * (B + n - A)
    g0 = a * (B + n) - b * A + tau * A * (B + n)
    lam = g1 * g1 + 4 * (1 + tau) * g0
    roots: tuple[float, float] | None = None
    splits: tuple[int, int] | None = None
    if lam > 0:
        s = math.sqrt(lam)
        r1, r2 = (g1 - s) / (2 * (1 + tau)), (g1 + s) / (2 * (1 + tau))
        roots = (r1, r2)
        lo = max(0, math.floor(r1) + 1)
        hi = min(n, math.ceil(r2) - 1)
        # guard the integer bounds against rounding of the roots
        while lo > 0 and gamma(c, n, tau, lo - 1) > 0:
            lo -= 1
        while lo <= n and gamma(c, n, tau, lo) <= 0 and lo <= hi:
            lo += 1
        while hi < n and gamma(c, n, tau, hi + 1) > 0:
            hi += 1
        while hi >= 0 and gamma(c, n, tau, hi) <= 0 and hi >= lo:
            hi -= 1
        if lo <= hi:
            splits = (lo, hi)
    return Theorem2(dp, assumption, cond1, splits is not None, lam, roots, splits)


def phi_exact(c: CountsVector, n: int, y: int) -> Fraction:
    """``phi(y)`` as an exact rational."""
    return Fraction(c.a + y, c.A + y) - Fraction(c.b, c.B + n - y)


def fair_splits_bruteforce(c: CountsVector, n: int, tau: float = 0.05) -> list[int]:
    """Every split ``y`` with ``|phi(y)| < tau``, exactly (reference for tests and docs)."""
    t = Fraction(tau)
    return [
        y for y in range(n + 1) if c.A + y > 0 and c.B + n - y > 0 and abs(phi_exact(c, n, y)) < t
    ]
