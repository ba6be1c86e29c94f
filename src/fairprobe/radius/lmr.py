"""Local Misjudge Rate (paper Section 5.3).

Around the critical shift ``h~`` a method reports (``|phi(P_h~)| = eps``), draw perturbed shifts
``h'``: add to the shifted distribution ``q~ = P * h~`` (a probability vector) a random direction
of Euclidean norm ``alpha`` and project back onto the probability simplex; ``h' = q' / P``. The LMR
is the fraction of ``h'`` that reverse the audit conclusion while ``d(h') < R`` (strictly inside
the method's radius). With ``relative=True`` (default) the noise norm is ``alpha * ||q~||_2``
(a relative perturbation); ``relative=False`` uses norm ``alpha`` on the simplex literally, which
for n = 1,000 moves every ``h'`` far outside every radius (LMR 0 for all methods). A valid radius has LMR 0: by definition no shift inside it flips the
assessment; the exact radius has LMR 0 by construction.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from fairprobe._validation import check_int, check_real
from fairprobe.errors import InvalidParameterError
from fairprobe.radius._data import phi_of, prepare
from fairprobe.radius.divergences import get_divergence
from fairprobe.radius.result import RadiusResult

__all__ = ["LMRResult", "local_misjudge_rate", "project_simplex"]


def project_simplex(x: NDArray[np.float64]) -> NDArray[np.float64]:
    """Euclidean projection onto ``{q >= 0, sum q = 1}`` (sort-based, O(n log n))."""
    u = np.sort(x)[::-1]
    css = np.cumsum(u) - 1.0
    k = np.arange(1, x.size + 1)
    rho = int(np.nonzero(u - css / k > 0)[0][-1])
    theta = css[rho] / (rho + 1.0)
    return np.maximum(x - theta, 0.0)


@dataclass(frozen=True)
class LMRResult:
    """LMR of one radius estimate: ``misjudged / perturbations``."""

    method: str
    noise: float
    perturbations: int
    misjudged: int
    flipped: int
    radius: float

    @property
    def rate(self) -> float:
        return self.misjudged / self.perturbations

    def to_dict(self) -> dict[str, Any]:
        return {"method": self.method, "noise": self.noise, "perturbations": self.perturbations,
                "misjudged": self.misjudged, "flipped": self.flipped, "lmr": self.rate,
                "radius": None if math.isinf(self.radius) else self.radius}


def local_misjudge_rate(
    values: Any,
    groups: Any,
    result: RadiusResult,
    noise: float,
    *,
    perturbations: int = 100,
    weights: Any = None,
    relative: bool = True,
    seed: int = 0,
) -> LMRResult:
    """LMR of ``result`` (from :func:`consistency_radius` on the same data) at noise ``alpha``."""
    owner = "local_misjudge_rate"
    noise = check_real(noise, "noise", owner, lo=0.0, closed="neither")
    perturbations = check_int(perturbations, "perturbations", owner, lo=1)
    if result.h is None:
        raise InvalidParameterError(
            f"The 'result' parameter of {owner} must carry a critical shift; the {result.method} "
            "radius is infinite, so there is no boundary to perturb."
        )
    data = prepare(values, groups, weights)
    if result.h.size != data.n:
        raise InvalidParameterError(
            f"The 'result' parameter of {owner} must come from the same data; its shift has "
            f"{result.h.size} entries for {data.n} points."
        )
    div = get_divergence(result.divergence)
    pos = data.probs > 0
    p = data.probs[pos]
    q_crit = p * result.h[pos]
    rng = np.random.default_rng(seed)
    scale = noise * float(np.linalg.norm(q_crit)) if relative else noise
    mis = flips = 0
    for _ in range(perturbations):
        u = rng.standard_normal(q_crit.size)
        u *= scale / float(np.linalg.norm(u))
        q = project_simplex(q_crit + u)
        h = q / p
        ph = phi_of(data.values[pos], data.groups[pos], q)
        if math.isnan(ph):
            continue
        flip = (abs(ph) < result.tolerance) != result.fair
        if flip:
            flips += 1
            if div.value(p, h) < result.radius:
                mis += 1
    return LMRResult(result.method, noise, perturbations, mis, flips, result.radius)
