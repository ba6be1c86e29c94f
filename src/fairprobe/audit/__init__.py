"""The audit of one model, or of a file of its predictions: plan, run, job.

- :mod:`fairprobe.audit.run`: the fixed-budget run: the column plan, the seeded draw, the
  queries through a :class:`~fairprobe.access.BlackBox`, and the result types
  (:class:`~fairprobe.audit.run.AuditResult` of two groups,
  :class:`~fairprobe.audit.run.GroupAudit` of every group).
- :mod:`fairprobe.audit.job`: the job of ``fairprobe audit``: the plan and every check made
  before a query is paid, the run, the provenance and the document
  (:func:`~fairprobe.audit.job.audit_model`, :func:`~fairprobe.audit.job.audit_prompt_variants`).
- :mod:`fairprobe.audit.predictions`: the audit of predictions already made, counted in one
  pass (:func:`~fairprobe.audit.predictions.audit_predictions`,
  :func:`~fairprobe.audit.predictions.predictions_job`).
- :mod:`fairprobe.audit.monitor`: prediction logs over time, with an anytime-valid alarm
  (:func:`~fairprobe.audit.monitor.monitor_job`).

Every public name is importable from ``fairprobe.audit`` itself. They are loaded on first use
(PEP 562), so that importing the package (as the command line does at start-up) costs nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fairprobe._lazy import lazy_exports

if TYPE_CHECKING:
    from fairprobe.audit.job import (
        DEFAULT_CACHE,
        AuditJob,
        audit_model,
        audit_prompt_variants,
        audit_provenance,
        plan_audit,
        plan_group_audit,
        resolve_groups,
    )
    from fairprobe.audit.monitor import MonitorJob, monitor_job
    from fairprobe.audit.predictions import (
        PredictionsJob,
        audit_predictions,
        predictions_identity,
        predictions_job,
    )
    from fairprobe.audit.run import (
        METRIC_ALIASES,
        AuditResult,
        ColumnPlan,
        GroupAudit,
        check_group_audit,
        draw_queries,
        outcomes_by_group,
        plan_columns,
        run_audit,
        run_group_audit,
    )

#: Each public name and the module that defines it.
_WHERE = {
    **dict.fromkeys(("AuditResult", "ColumnPlan", "GroupAudit", "METRIC_ALIASES",
                     "check_group_audit", "draw_queries", "outcomes_by_group", "plan_columns",
                     "run_audit", "run_group_audit"), "run"),
    **dict.fromkeys(("DEFAULT_CACHE", "AuditJob", "audit_model", "audit_prompt_variants",
                     "audit_provenance", "plan_audit", "plan_group_audit", "resolve_groups"),
                    "job"),
    **dict.fromkeys(("PredictionsJob", "audit_predictions", "predictions_identity",
                     "predictions_job"), "predictions"),
    **dict.fromkeys(("MonitorJob", "monitor_job"), "monitor"),
}

__all__ = [
    "AuditJob",
    "AuditResult",
    "ColumnPlan",
    "DEFAULT_CACHE",
    "GroupAudit",
    "METRIC_ALIASES",
    "MonitorJob",
    "PredictionsJob",
    "audit_model",
    "audit_predictions",
    "audit_prompt_variants",
    "audit_provenance",
    "check_group_audit",
    "draw_queries",
    "monitor_job",
    "outcomes_by_group",
    "plan_audit",
    "plan_columns",
    "plan_group_audit",
    "predictions_identity",
    "predictions_job",
    "resolve_groups",
    "run_audit",
    "run_group_audit",
]


__getattr__, __dir__ = lazy_exports(__name__, _WHERE, globals())
