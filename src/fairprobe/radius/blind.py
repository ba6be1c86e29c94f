"""Blind auditing protocol (paper Section 6.2).

The auditor holds several audit sets and computes the radius of each one's conclusion, keeping the
radii (and the conclusions) to itself. The model provider, blind to them, reports for each audit
set the divergence between its private deployment distribution and that audit set. An audit
set's conclusion is **certified** when the reported shift is strictly inside its radius (no shift
that small can flip it) and **not certified** otherwise. Overall verdict: ``certified`` when at
least one set is certified and all certified sets agree on the conclusion (that conclusion is the
certified one); ``not certified`` otherwise.

Over-reporting shifts to void an "unfair" conclusion also voids the "fair" ones (indiscriminate
denial), and without the radii the provider cannot tell the smallest falsification that escapes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fairprobe._validation import check_real
from fairprobe.errors import DataError
from fairprobe.radius.api import consistency_radius
from fairprobe.radius.result import RadiusResult

__all__ = ["BlindAuditProtocol", "BlindAuditResult", "blind_audit"]


@dataclass(frozen=True)
class BlindAuditResult:
    """Per-set radii, reported shifts and verdicts, and the overall verdict."""

    tolerance: float
    radii: dict[str, RadiusResult]
    reported: dict[str, float]
    verdicts: dict[str, str]
    verdict: str
    certified_assessment: str | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "tolerance": self.tolerance,
            "verdict": self.verdict,
            "certified_assessment": self.certified_assessment,
            "audit_sets": {
                k: {"assessment": r.assessment, "phi": r.phi,
                    "radius": None if math.isinf(r.radius) else r.radius,
                    "reported_shift": self.reported[k], "verdict": self.verdicts[k]}
                for k, r in self.radii.items()
            },
        }


class BlindAuditProtocol:
    """Holds the audit sets' radii privately; ``requests()`` is what the provider sees."""

    def __init__(self, audit_sets: Mapping[str, Mapping[str, Any]], tolerance: float, *,
                 method: str = "exact", divergence: str = "kl") -> None:
        if not audit_sets:
            raise DataError("the blind auditing protocol needs at least one audit set.")
        self.tolerance = tolerance
        self._radii = {
            name: consistency_radius(s["values"], s["groups"], tolerance,
                                     weights=s.get("weights"), method=method,
                                     divergence=divergence)
            for name, s in audit_sets.items()
        }

    def requests(self) -> list[str]:
        """Names of the audit sets whose shift the provider must report (nothing else)."""
        return list(self._radii)

    def verdict(self, reported: Mapping[str, float]) -> BlindAuditResult:
        missing = set(self._radii) - set(reported)
        if missing:
            raise DataError(f"no reported shift for audit set(s) {sorted(missing)}; report all.")
        rep = {k: check_real(reported[k], f"reported[{k!r}]", "BlindAuditProtocol.verdict",
                             lo=0.0) for k in self._radii}
        verdicts = {k: "certified" if r.certifies(rep[k]) else "not certified"
                    for k, r in self._radii.items()}
        concl = {self._radii[k].assessment for k, v in verdicts.items() if v == "certified"}
        ok = len(concl) == 1
        return BlindAuditResult(self.tolerance, dict(self._radii), rep, verdicts,
                                "certified" if ok else "not certified",
                                concl.pop() if ok else None)


def blind_audit(audit_sets: Mapping[str, Mapping[str, Any]], tolerance: float,
                reported: Mapping[str, float], **kw: Any) -> BlindAuditResult:
    """One-call form: radii of every audit set, then verdicts for the reported shifts."""
    return BlindAuditProtocol(audit_sets, tolerance, **kw).verdict(reported)
