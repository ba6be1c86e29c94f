"""The one result type every radius method returns."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from fairprobe.radius.divergences import pinsker_bound

__all__ = ["RadiusResult"]


@dataclass(frozen=True)
class RadiusResult:
    """Consistency radius of one fairness assessment (paper Definition 1).

    Attributes
    ----------
    radius:
        ``R(f, P, eps)``: the smallest divergence ``d(h)`` of a reweighting that flips the
        assessment (an infimum); ``math.inf`` when no reweighting can flip it. For ``exact`` it is
        the global optimum (certified to ``radius - lower_bound``); for the heuristics it is the
        divergence of the flipping shift they found, an upper bound on the true radius.
    phi:
        ``phi(P)``: mean value of group ``groups[0]`` minus that of ``groups[1]`` before the shift.
    fair:
        The assessment before the shift, ``|phi| < tolerance``.
    phi_shifted:
        ``phi(P_h)`` at the optimal (critical) shift; on the boundary ``|phi| = tolerance``.
        ``None`` when the radius is infinite.
    tolerance, method, divergence, n, groups:
        The inputs: eps, solver name, ``"kl"`` or ``"chi2"``, number of points, the two labels.
    reweighting:
        Summary of the critical shift: group masses and means before/after, the within-group
        tilt parameters, the smallest and largest ``h_i``.
    lower_bound:
        A certified lower bound on the true radius (``exact`` only; else ``None``).
    message:
        Why the radius is infinite, or notes from the method.
    h:
        The critical reweighting per input point (mean 1 under P); not in ``to_dict``.
    curve:
        The flip curve (figure data): least divergence that moves ``phi`` to each target on a
        grid, ``{"phi": [...], "divergence": [...]}`` (see :func:`~.exact.flip_curve`).
    pairs:
        More than two groups: one entry per pair (labels, phi, radius, which is the worst).
    """

    radius: float
    phi: float
    fair: bool
    phi_shifted: float | None
    tolerance: float
    method: str
    divergence: str
    n: int
    groups: tuple[Any, Any]
    reweighting: dict[str, Any] = field(default_factory=dict)
    lower_bound: float | None = None
    message: str = ""
    h: NDArray[np.float64] | None = field(default=None, repr=False, compare=False)
    curve: dict[str, Any] | None = field(default=None, repr=False, compare=False)
    pairs: list[dict[str, Any]] | None = field(default=None, repr=False, compare=False)

    @property
    def infinite(self) -> bool:
        """True when no reweighting of the audit points can flip the assessment."""
        return math.isinf(self.radius)

    @property
    def assessment(self) -> str:
        return "fair" if self.fair else "unfair"

    @property
    def pinsker_bound(self) -> float:
        """``sqrt(R / 2)`` (KL; ``sqrt(log(1 + R) / 2)`` for chi2): the largest change of any
        event probability that every shift inside the radius respects (capped at 1)."""
        return pinsker_bound(self.radius, self.divergence)

    def certifies(self, shift: float) -> bool:
        """True when a deployment shift of divergence ``shift`` cannot flip the assessment."""
        return shift < self.radius

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict; ``radius`` is ``None`` (JSON null) when infinite."""
        return {
            "radius": None if self.infinite else float(self.radius),
            "radius_infinite": self.infinite,
            "phi": float(self.phi),
            "fair": bool(self.fair),
            "assessment": self.assessment,
            "phi_shifted": None if self.phi_shifted is None else float(self.phi_shifted),
            "pinsker_bound": None if self.infinite else float(self.pinsker_bound),
            "tolerance": float(self.tolerance),
            "method": self.method,
            "divergence": self.divergence,
            "n": int(self.n),
            "groups": [_plain(g) for g in self.groups],
            "reweighting": {k: _plain(v) for k, v in self.reweighting.items()},
            "lower_bound": None if self.lower_bound is None else float(self.lower_bound),
            "message": self.message,
            "flip_curve": None if self.curve is None else {
                **self.curve,
                "radius": None if self.infinite else float(self.radius),
                "tolerance": float(self.tolerance),
                "phi0": float(self.phi),
            },
            "pairs": self.pairs,
        }

    def __str__(self) -> str:
        r = "infinite" if self.infinite else f"{self.radius:.6g}"
        return (
            f"consistency radius ({self.method}, {self.divergence}) = {r}; phi = {self.phi:.6g}, "
            f"assessment {self.assessment} at eps = {self.tolerance:g}"
            + ("" if self.infinite else f"; Pinsker bound {self.pinsker_bound:.4g}")
        )


def _plain(x: Any) -> Any:
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, list | tuple):
        return [_plain(y) for y in x]
    return x
