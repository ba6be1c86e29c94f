r"""Fair-lending disparity measures as examiners and model-risk teams compute them: the adverse
impact ratio (AIR) and the standardised mean difference (SMD) of a score.

* AIR of a protected group :math:`g` against the reference group :math:`r`:
  :math:`(k_g / n_g) / (k_r / n_r)`, the favourable-outcome rates (approvals); practically
  significant when under ``air_threshold`` (0.8), statistically by Fisher's exact test
  (two-sided); the shortfall is the fewest extra favourable outcomes in :math:`g` that bring the
  AIR to the threshold (and, beside it, to parity with :math:`r`).
* SMD of a score: :math:`(\bar s_g - \bar s_r) / \sigma`, with :math:`\sigma` the standard
  deviation of the score over every individual with a known group (``smd_denominator=
  "population"``, the fair-lending convention of Hall et al. 2021) or the pooled standard
  deviation of the two groups (``"pooled"``); sample standard deviations (``ddof=1``).
  Practically significant when :math:`|SMD|` exceeds ``smd_threshold`` (0.3), statistically by
  Welch's t-test (two-sided).

These follow the practice of CFPB fair-lending supervision (ECOA / Regulation B, disparate-impact
review of credit models); the measures and thresholds are practice, not text of a regulation.
fairprobe adds the exact interval of each rate and AIR and whether the AIR is decidably below
the threshold.

References
----------
.. [H] P. Hall, B. Cox, S. Dickerson, A. Ravi Kannan, R. Kulkarni, N. Schmidt (2021). A United
   States fair lending perspective on machine learning. Frontiers in Artificial Intelligence 4.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as sps

from fairprobe.errors import DataError, InvalidParameterError
from fairprobe.profiles.core import (
    FAIRPROBE_ADDITIONS,
    CategoryRate,
    category_labels,
    fisher_p,
    outcome_column,
    rate_table,
    score_column,
    shortfall,
)

__all__ = ["AIRRow", "CFPBResult", "cfpb_air_profile", "standardized_mean_difference"]


@dataclasses.dataclass(frozen=True)
class AIRRow:
    """One protected group against the reference group.

    Attributes
    ----------
    rate : CategoryRate
        Counts, rate, AIR (``impact_ratio``) and fairprobe's intervals.
    air_flag : bool or None
        AIR < ``air_threshold`` (None for the reference group).
    fisher_p : float or None
    shortfall : int or None
        Extra favourable outcomes to reach the AIR threshold.
    shortfall_parity : int or None
        Extra favourable outcomes to reach the reference group's rate.
    mean_score, smd, t_p : float or None
        The group's mean score, its SMD against the reference and Welch's p-value.
    smd_flag : bool or None
        ``|smd|`` > ``smd_threshold``.
    """

    rate: CategoryRate
    air_flag: bool | None
    fisher_p: float | None
    shortfall: int | None
    shortfall_parity: int | None
    mean_score: float | None
    smd: float | None
    t_p: float | None
    smd_flag: bool | None

    def to_dict(self) -> dict[str, Any]:
        d = {**self.rate.to_dict(), **{f.name: getattr(self, f.name)
                                       for f in dataclasses.fields(self) if f.name != "rate"}}
        d["air"] = d["impact_ratio"]
        return d


@dataclasses.dataclass(frozen=True)
class CFPBResult:
    """AIR and SMD of every group against ``reference`` (module docstring)."""

    columns: tuple[str, ...]
    reference: str
    rows: tuple[AIRRow, ...]
    unknown: int
    applicants: int
    air_threshold: float
    smd_threshold: float
    smd_denominator: str
    score_sd: float | None
    confidence_level: float
    interval: str
    profile: str = "cfpb-air"

    @property
    def verdict(self) -> str:
        """``unfair`` when an AIR is decidably below the threshold (fairprobe's reading)."""
        return "unfair" if any(r.rate.decidably_below for r in self.rows) else "undetermined"

    def to_dict(self) -> dict[str, Any]:
        return {"profile": self.profile, "columns": list(self.columns),
                "reference": self.reference, "unknown": self.unknown,
                "applicants": self.applicants, "air_threshold": self.air_threshold,
                "smd_threshold": self.smd_threshold, "smd_denominator": self.smd_denominator,
                "score_sd": self.score_sd, "confidence_level": self.confidence_level,
                "interval": self.interval, "verdict": self.verdict,
                "fairprobe_additions": list(FAIRPROBE_ADDITIONS),
                "rows": [r.to_dict() for r in self.rows]}


def standardized_mean_difference(scores: np.ndarray, in_group: np.ndarray, in_ref: np.ndarray,
                                 denominator: str = "population") -> tuple[float, float]:
    """SMD of a group against the reference and the standard deviation it divides by."""
    g, r = scores[in_group], scores[in_ref]
    if denominator == "population":
        sd = float(np.std(scores, ddof=1))
    else:
        ng, nr = len(g), len(r)
        sd = float(np.sqrt(((ng - 1) * np.var(g, ddof=1) + (nr - 1) * np.var(r, ddof=1))
                           / (ng + nr - 2)))
    return (float(np.mean(g) - np.mean(r)) / sd if sd > 0 else float("nan")), sd


def cfpb_air_profile(
    df: pd.DataFrame, *, group_cols: Sequence[str], y_pred_col: str, reference: str | None,
    score_col: str | None = None, pos_label: Any = None, air_threshold: float = 0.8,
    smd_threshold: float = 0.3, smd_denominator: str = "population",
    confidence_level: float = 0.95, interval: str = "exact",
) -> CFPBResult:
    """AIR (and, with ``score_col``, SMD) of every group against ``reference``."""
    if reference is None:
        raise InvalidParameterError("--profile cfpb-air compares every group with a reference "
                                    "group: give --reference (e.g. --reference White).")
    if smd_denominator not in ("population", "pooled"):
        raise InvalidParameterError("--smd-denominator must be population or pooled.")
    for c in group_cols:
        if c not in df.columns:
            raise InvalidParameterError(f"--group-col {c} is not a column of the file; its "
                                        f"columns: {', '.join(map(str, df.columns[:20]))}.")
    hit = outcome_column(df, y_pred_col, "--y-pred-col", pos_label)
    labels, unknown = category_labels(df, group_cols)
    known = ~unknown
    rows, ref = rate_table(labels[known], hit[known], order=None, small_share=0.0,
                           exclude_small=False, threshold=air_threshold,
                           confidence_level=confidence_level, interval=interval,
                           comparison=reference)
    scores = None if score_col is None else score_column(df, score_col)[known]
    lab = labels[known]
    top = next(r for r in rows if r.category == ref)
    out, sd = [], None
    for r in rows:
        own = r.category == ref
        mean = smd = tp = None
        if scores is not None:
            mean = float(np.mean(scores[lab == r.category]))
            if not own:
                g, rr = lab == r.category, lab == ref
                if g.sum() < 2 or rr.sum() < 2:
                    raise DataError(f"group {r.category!r} or the reference has fewer than two "
                                    "scores: no SMD.")
                smd, sd = standardized_mean_difference(scores, g, rr, smd_denominator)
                tp = float(sps.ttest_ind(scores[g], scores[rr], equal_var=False).pvalue)
        if own:
            out.append(AIRRow(r, None, None, None, None, mean, None, None, None))
            continue
        p = fisher_p(r, top)
        air_flag = None if r.impact_ratio is None else r.impact_ratio < air_threshold
        out.append(AIRRow(
            r, air_flag, p, shortfall(r.selected, r.n, top.selected, top.n, air_threshold),
            shortfall(r.selected, r.n, top.selected, top.n, 1.0), mean, smd, tp,
            None if smd is None else abs(smd) > smd_threshold))
    return CFPBResult(
        columns=tuple(group_cols), reference=ref, rows=tuple(out), unknown=int(unknown.sum()),
        applicants=len(df), air_threshold=air_threshold, smd_threshold=smd_threshold,
        smd_denominator=smd_denominator, score_sd=sd, confidence_level=confidence_level,
        interval=interval)
