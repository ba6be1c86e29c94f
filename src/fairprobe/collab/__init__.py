"""Collaborative fairness audits robust to fairwashing auditors (Auditopus).

``collaborative-auditing-auditopus.md``: the per-auditor protocol core (:mod:`.protocol`, no
I/O), the suspicion score (:mod:`.score`), the adaptive attacker and other attack strategies
(:mod:`.attacker`), Theorem 2 (:mod:`.theory`), the robust-aggregation baselines
(:mod:`.baselines`) and a vectorised simulator with a Dask sweep (:mod:`.simulate`,
:mod:`.sweep`). The networked node lives in :mod:`fairprobe.collab.net`.
"""

from fairprobe.collab.attacker import (
    ATTACKS,
    AttackContext,
    AttackStrategy,
    get_attack,
    minimise_abs_dp,
    neutral_increment,
    register_attack,
)
from fairprobe.collab.liars import LiarPlan, plan_consistent, plan_selective
from fairprobe.collab.protocol import (
    AttackerCore,
    AuditorCore,
    Entry,
    EntrySigner,
    EntryVerifier,
    MergeReport,
    NullSigner,
    NullVerifier,
    QuerySampler,
    RoundReport,
    Verdict,
    core_from_dict,
    dp_of,
)
from fairprobe.collab.score import Z_MAX, ScoreResult, suspicion_scores

__all__ = [
    "ATTACKS",
    "AttackContext",
    "AttackStrategy",
    "AttackerCore",
    "AuditorCore",
    "Entry",
    "EntrySigner",
    "EntryVerifier",
    "LiarPlan",
    "MergeReport",
    "NullSigner",
    "NullVerifier",
    "QuerySampler",
    "RoundReport",
    "ScoreResult",
    "Verdict",
    "Z_MAX",
    "core_from_dict",
    "dp_of",
    "get_attack",
    "minimise_abs_dp",
    "neutral_increment",
    "plan_consistent",
    "plan_selective",
    "register_attack",
    "suspicion_scores",
]
