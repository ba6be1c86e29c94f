"""Consistency radius: how much distribution shift an audit conclusion survives.

Implements "When Can We Trust Fairness Audits? Identifying Reliability Boundaries of Third-party
Audit Conclusions" (papers/consistency-radius.md): the exact radius (a certified global optimum,
docs/radius.md), the paper's CoRe (Section 4) and baselines (Section 5.1), the Local Misjudge Rate
(Section 5.3) and the blind auditing protocol (Section 6.2).

>>> from fairprobe.radius import consistency_radius
>>> r = consistency_radius(values, groups, tolerance=0.05)        # doctest: +SKIP
>>> r.radius, r.fair, r.pinsker_bound                              # doctest: +SKIP
"""

from fairprobe.radius.api import METHODS, consistency_radius, register_method
from fairprobe.radius.blind import BlindAuditProtocol, BlindAuditResult, blind_audit
from fairprobe.radius.lmr import LMRResult, local_misjudge_rate
from fairprobe.radius.result import RadiusResult

__all__ = [
    "METHODS",
    "BlindAuditProtocol",
    "BlindAuditResult",
    "LMRResult",
    "RadiusResult",
    "blind_audit",
    "consistency_radius",
    "local_misjudge_rate",
    "register_method",
]
