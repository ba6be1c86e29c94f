"""Fairwashing detectors of the two-source audit: pluggable, one shared evidence type.

* ``consistency`` — Lemma 2 of ``two-source-audits.md``: count the checked pairs where the proxy's
  prediction :math:`\\phi(x_B, y_B)` differs from the A sample :math:`(x_A, y_A)` and compare
  with :math:`n_{max}` of :math:`\\mathcal{B}(t_{fraud}, 1 - p_\\phi)` (exact binomial). The count
  only grows, so stopping as soon as it passes ``n_max`` (or can no longer pass it) decides
  exactly as the full test would.
* ``conditional`` — beyond the paper: Lemma 2's binomial treats every pair alike, but the
  auditor knows, pair by pair, what the proxy said. A pair whose proxy draw missed the true group
  is inconsistent whatever the platform does (no information); a pair whose draw hit it can only
  be inconsistent through B's own inference of the group, with probability at most
  :math:`1 - p_i` (:math:`p_i = P(\\phi(x_{B,i}) = g_i)`, the platform inferring with the proxy's
  rule, as Section 5.1 assumes). Under honesty the decision mismatches among the hit pairs are
  thus dominated by a Poisson-binomial with rates :math:`1 - p_i` (zero for a deterministic,
  right proxy): an exact, valid test that keeps the power the binomial wastes on misses. Only
  pairs with :math:`p_i \\ge` ``min_p`` (default 0.9) enter: uncertain pairs add more null
  variance than signal (for the name rule, the h/y names with :math:`p_i = 1/2`).
* ``di`` — beyond the paper: compare the disparate impact through A with the one through B and
  the proxy. A proxy that mixes groups pulls the DI through B towards 1, so an honest platform
  shows :math:`\\mu_A \\le \\mu_B` (for :math:`\\mu_B < 1`), while every fairwashing strategy
  pushes :math:`\\mu_A` up. One-sided test on the log ratio with Katz standard errors:
  :math:`z = (\\log\\hat\\mu_A - \\log\\hat\\mu_B)/\\sqrt{se_A^2 + se_B^2}`.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt
from scipy import special

from fairprobe import metrics as _metrics
from fairprobe._registry import ClassRegistry
from fairprobe.stats.counts import CountsVector
from fairprobe.twosource.theory import consistency_p_value, n_max

__all__ = [
    "DETECTORS",
    "ConsistencyDetector",
    "ConditionalDetector",
    "DIGapDetector",
    "Detector",
    "DetectorOutcome",
    "PairedEvidence",
    "make_detector",
    "poisson_binomial_sf",
    "register_detector",
]

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class PairedEvidence:
    """What the auditor collected, as arrays.

    ``check_*`` hold one entry per usable checked pair (both answers parsed); ``counts_a`` is the
    DI evidence through A (all A answers, true groups) and ``counts_b`` through B (B answers,
    groups predicted by the proxy), both ``(a, A, b, B)`` with the unprivileged group first.
    """

    check_group_a: npt.NDArray[np.object_]
    check_decision_a: FloatArray
    check_group_proxy: npt.NDArray[np.object_]
    check_decision_proxy: FloatArray
    counts_a: CountsVector
    counts_b: CountsVector
    p_phi: float
    n_planned_checks: int
    check_p_true: FloatArray | None = None

    @property
    def inconsistent(self) -> npt.NDArray[np.bool_]:
        """Pairs where :math:`\\phi(x_B, y_B) \\ne (x_A, y_A)`."""
        return np.asarray(
            (self.check_group_proxy != self.check_group_a)
            | (self.check_decision_proxy != self.check_decision_a),
            dtype=bool,
        )

    @property
    def n_checked(self) -> int:
        return int(self.check_decision_a.shape[0])


@dataclass(frozen=True)
class DetectorOutcome:
    """One detector's decision with its evidence (``details`` is JSON-ready)."""

    detector: str
    detected: bool
    statistic: float | None
    p_value: float | None
    alpha: float
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        def f(x: float | None) -> float | None:
            return None if x is None or not math.isfinite(x) else float(x)

        return {
            "detector": self.detector,
            "detected": self.detected,
            "statistic": f(self.statistic),
            "p_value": f(self.p_value),
            "alpha": self.alpha,
            **self.details,
        }


class Detector(ABC):
    """A fairwashing detector: evidence in, :class:`DetectorOutcome` out."""

    name: ClassVar[str] = "detector"

    @abstractmethod
    def decide(self, evidence: PairedEvidence, alpha: float) -> DetectorOutcome:
        """Decide at level ``alpha`` whether the evidence proves manipulation."""


#: The registry of detectors, by name.
DETECTORS: ClassRegistry[Detector] = ClassRegistry("detector", "make_detector")
register_detector = DETECTORS.register
"""Class decorator adding a :class:`Detector` subclass to :data:`DETECTORS` under its ``name``."""
make_detector = DETECTORS.make
"""Build the registered detector ``name`` (keyword arguments go to its constructor)."""


@register_detector
class ConsistencyDetector(Detector):
    """Lemma 2: inconsistencies against ``n_max`` of the planned number of checks."""

    name = "consistency"

    @staticmethod
    def status(n_inconsistent: int, n_checked: int, n_planned: int, threshold: int) -> str:
        """``"detected"``, ``"cleared"`` (can no longer pass ``threshold``) or ``"open"``."""
        if n_inconsistent > threshold:
            return "detected"
        if n_inconsistent + (n_planned - n_checked) <= threshold:
            return "cleared"
        return "open"

    def decide(self, evidence: PairedEvidence, alpha: float) -> DetectorOutcome:
        planned = max(evidence.n_planned_checks, evidence.n_checked)
        nm = n_max(planned, evidence.p_phi, alpha)
        n_inc = int(evidence.inconsistent.sum())
        n = evidence.n_checked
        detected = n_inc > nm
        # p-value over the checks actually made (early stops leave fewer)
        p = consistency_p_value(n_inc, n, evidence.p_phi) if n else None
        return DetectorOutcome(
            self.name,
            bool(detected),
            float(n_inc),
            p,
            float(alpha),
            {
                "n_inconsistent": n_inc,
                "n_checked": n,
                "n_planned": planned,
                "n_max": nm,
                "p_phi": evidence.p_phi,
                "expected_if_honest": (1.0 - evidence.p_phi) * n,
            },
        )


def poisson_binomial_sf(k: int, rates: npt.ArrayLike) -> float:
    """``P(N >= k)`` for a sum ``N`` of independent Bernoulli(``rates``): exact, by convolution.

    Rates of exactly 0 or 1 are taken out first (they shift or vanish); the rest is a dynamic
    programme over the pmf, vectorised per pair.
    """
    r = np.asarray(rates, dtype=np.float64)
    ones = int((r >= 1.0).sum())
    r = r[(r > 0.0) & (r < 1.0)]
    k = k - ones
    if k <= 0:
        return 1.0
    if k > r.size:
        return 0.0
    pmf = np.zeros(r.size + 1)
    pmf[0] = 1.0
    for i, q in enumerate(r):
        pmf[1 : i + 2] = pmf[1 : i + 2] * (1.0 - q) + pmf[: i + 1] * q
        pmf[0] *= 1.0 - q
    return float(min(1.0, max(0.0, pmf[k:].sum())))


@register_detector
class ConditionalDetector(Detector):
    """Decision mismatches among the pairs whose proxy draw hit the true group (exact test)."""

    name = "conditional"

    def __init__(self, min_p: float = 0.9) -> None:
        from fairprobe._validation import check_real

        self.min_p = check_real(min_p, "min_p", "ConditionalDetector", lo=0.0, hi=1.0)

    def test(
        self,
        group_a: npt.ArrayLike,
        decision_a: npt.ArrayLike,
        group_proxy: npt.ArrayLike,
        decision_proxy: npt.ArrayLike,
        p_true: npt.ArrayLike,
    ) -> tuple[int, npt.NDArray[np.bool_], FloatArray, float]:
        """Mismatches on sure hits, the hit mask, their honest rates, and the exact p-value."""
        pt = np.asarray(p_true, dtype=np.float64)
        hit = (np.asarray(group_proxy) == np.asarray(group_a)) & (pt >= self.min_p)
        mismatch = hit & (np.asarray(decision_proxy) != np.asarray(decision_a))
        n = int(mismatch.sum())
        rates = np.asarray(1.0 - pt[hit], dtype=np.float64)
        return n, hit, rates, (poisson_binomial_sf(n, rates) if n else 1.0)

    def decide(self, evidence: PairedEvidence, alpha: float) -> DetectorOutcome:
        if evidence.check_p_true is None:
            return DetectorOutcome(
                self.name, False, None, None, float(alpha),
                {"reason": "the evidence lacks the proxy's per-pair probabilities"},
            )  # fmt: skip
        n, hit, rates, p = self.test(
            evidence.check_group_a, evidence.check_decision_a, evidence.check_group_proxy,
            evidence.check_decision_proxy, evidence.check_p_true,
        )  # fmt: skip
        return DetectorOutcome(
            self.name,
            bool(p < alpha),
            float(n),
            p,
            float(alpha),
            {
                "n_mismatch_on_hits": n,
                "n_hits": int(hit.sum()),
                "min_p": self.min_p,
                "expected_if_honest_at_most": float(rates.sum()),
                "n_checked": evidence.n_checked,
            },
        )


def _log_ratio_and_se(c: CountsVector) -> tuple[float, float]:
    """``log((a/A)/(b/B))`` and its Katz standard error (0.5 added to every cell at a zero)."""
    a, A, b, B = (float(x) for x in c.as_tuple())
    if a == 0 or b == 0 or a == A or b == B:
        a, A, b, B = a + 0.5, A + 1.0, b + 0.5, B + 1.0
    return math.log(a / A) - math.log(b / B), math.sqrt(1 / a - 1 / A + 1 / b - 1 / B)


@register_detector
class DIGapDetector(Detector):
    """Beyond the paper: DI through A significantly above DI through B with the proxy."""

    name = _metrics.DI.short

    def decide(self, evidence: PairedEvidence, alpha: float) -> DetectorOutcome:
        ca, cb = evidence.counts_a, evidence.counts_b
        if min(ca.A, ca.B, cb.A, cb.B) == 0:
            return DetectorOutcome(
                self.name, False, None, None, float(alpha),
                {"reason": "a group is empty on one source; the DI comparison is undefined"},
            )  # fmt: skip
        la, sa = _log_ratio_and_se(ca)
        lb, sb = _log_ratio_and_se(cb)
        z = (la - lb) / math.sqrt(sa * sa + sb * sb)
        p = float(0.5 * special.erfc(z / math.sqrt(2.0)))  # one-sided P(Z >= z)
        # only meaningful while B shows the unprivileged group disadvantaged (mu_B < 1)
        applicable = lb < 0.0
        return DetectorOutcome(
            self.name,
            bool(applicable and p < alpha),
            z,
            p,
            float(alpha),
            {
                "log_di_a": la,
                "log_di_b": lb,
                "se_a": sa,
                "se_b": sb,
                "applicable": applicable,
            },
        )
