"""Two-source audits: detect a fairwashed audit API with a second, trustworthy source.

Implements ``two-source-audits.md``: proxies linking the user interface B to the audit API A
(:mod:`~fairprobe.twosource.proxies`), the statistics of its Section 4
(:mod:`~fairprobe.twosource.theory`), the detectors (:mod:`~fairprobe.twosource.detectors`) and the
audit itself (:func:`run_two_source_audit`). See ``docs/twosource.md``.
"""

from fairprobe.twosource import proxies
from fairprobe.twosource.audit import (
    TwoSourceResult,
    platform_blackboxes,
    run_two_source_audit,
    stratified_sample,
)
from fairprobe.twosource.bandit import POLICIES, FixedSplit, ThompsonSplit, make_policy
from fairprobe.twosource.correction import CorrectedDI, double_sampling_di, matrix_corrected_di
from fairprobe.twosource.detectors import DETECTORS, Detector, DetectorOutcome, make_detector
from fairprobe.twosource.large import run_budgeted_audit, run_large_regime_audit
from fairprobe.twosource.proxies import *  # noqa: F403  (the whole proxy API, as proxies.__all__ says)
from fairprobe.twosource.theory import (
    allocate,
    detection_test,
    gamma_max,
    n_max,
    p_manip,
    pareto_frontier,
    theorem3,
)

__all__ = [
    "DETECTORS",
    "POLICIES",
    "CorrectedDI",
    "FixedSplit",
    "ThompsonSplit",
    "double_sampling_di",
    "make_policy",
    "matrix_corrected_di",
    "run_budgeted_audit",
    "run_large_regime_audit",
    "Detector",
    "DetectorOutcome",
    "TwoSourceResult",
    "allocate",
    "detection_test",
    "gamma_max",
    "make_detector",
    "n_max",
    "p_manip",
    "pareto_frontier",
    "platform_blackboxes",
    "run_two_source_audit",
    "stratified_sample",
    "theorem3",
    *proxies.__all__,
]
