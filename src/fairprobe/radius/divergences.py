"""The divergences d(h) between P_h and P, and the closed-form split of mass between groups.

For a reweighting ``h`` of the audit distribution ``P`` (``h >= 0``, ``E_P[h] = 1``):

* ``kl``:   ``KL(P_h || P) = sum_i P_i h_i log h_i`` (the paper's d(h), Definition 1);
* ``chi2``: ``chi^2(P_h || P) = sum_i P_i (h_i - 1)^2``.

Both split over the two groups. Write ``pi_g`` for the audit mass of group g, ``q_g`` for its mass
after the shift and ``c_g`` for the divergence of the within-group reweighting. Then

* KL:   ``d = sum_g q_g log(q_g / pi_g) + sum_g q_g c_g``, minimised over ``q`` by
  ``q_g ∝ pi_g exp(-c_g)`` with value ``-log(sum_g pi_g exp(-c_g))`` (Gibbs variational principle);
* chi2: ``1 + d = sum_g (q_g^2 / pi_g)(1 + c_g)``, minimised by ``q_g ∝ pi_g / (1 + c_g)`` with
  value ``1 / sum_g pi_g / (1 + c_g) - 1`` (Cauchy-Schwarz).

So both have the form ``d = T(F)`` with ``F = sum_g pi_g psi(c_g)``, ``psi`` decreasing and convex,
``T`` decreasing: minimising d means maximising F. See docs/radius.md.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

__all__ = ["DIVERGENCES", "Divergence", "get_divergence", "pinsker_bound"]

DivergenceName = Literal["kl", "chi2"]


def _kl(p: NDArray[np.float64], h: NDArray[np.float64]) -> float:
    pos = h > 0
    return float(np.sum(p[pos] * h[pos] * np.log(h[pos])))


def _chi2(p: NDArray[np.float64], h: NDArray[np.float64]) -> float:
    return float(np.sum(p * (h - 1.0) ** 2))


@dataclass(frozen=True)
class Divergence:
    """A divergence with its group-split transform (see module docstring)."""

    name: str
    value: Callable[[NDArray[np.float64], NDArray[np.float64]], float]
    psi: Callable[[NDArray[np.float64]], NDArray[np.float64]]
    total: Callable[[float], float]

    def split(self, pi: tuple[float, float], c: tuple[float, float]) -> tuple[float, float, float]:
        """Optimal group masses ``(q_0, q_1)`` and total divergence for within-group costs c."""
        f0 = pi[0] * float(self.psi(np.asarray(c[0])))
        f1 = pi[1] * float(self.psi(np.asarray(c[1])))
        f = f0 + f1
        return f0 / f, f1 / f, self.total(f)


def _psi_kl(c: NDArray[np.float64]) -> NDArray[np.float64]:
    return np.exp(-np.asarray(c, dtype=float))


def _psi_chi2(c: NDArray[np.float64]) -> NDArray[np.float64]:
    return 1.0 / (1.0 + np.asarray(c, dtype=float))


def _total_kl(f: float) -> float:
    return max(0.0, -math.log(f)) if f > 0 else math.inf


def _total_chi2(f: float) -> float:
    return max(0.0, 1.0 / f - 1.0) if f > 0 else math.inf


DIVERGENCES: dict[str, Divergence] = {
    "kl": Divergence("kl", _kl, _psi_kl, _total_kl),
    "chi2": Divergence("chi2", _chi2, _psi_chi2, _total_chi2),
}


def get_divergence(name: str) -> Divergence:
    return DIVERGENCES[name]


def pinsker_bound(radius: float, divergence: str = "kl") -> float:
    """Largest change of any event probability a shift inside the radius allows.

    KL: Pinsker, ``TV <= sqrt(KL / 2)``. chi2: ``KL <= log(1 + chi2)`` so
    ``TV <= sqrt(log(1 + chi2) / 2)``. Capped at 1 (TV never exceeds 1).
    """
    if math.isinf(radius):
        return 1.0
    kl = radius if divergence == "kl" else math.log1p(radius)
    return min(1.0, math.sqrt(max(kl, 0.0) / 2.0))
