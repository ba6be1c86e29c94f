r"""The four-fifths rule of the Uniform Guidelines on Employee Selection Procedures (29 CFR 1607).

Implemented (29 CFR 1607.4(D)): each group's selection rate over the rate of the group with the
highest rate (the impact ratio); a ratio under four-fifths (0.8) "will generally be regarded"
as evidence of adverse impact; smaller differences may be adverse impact when significant "in
both statistical and practical terms", and greater ones may not be when "based on small numbers
and ... not statistically significant". As practised:

* statistical significance: Fisher's exact test (two-sided) of the group against the highest
  group, and the two-standard-deviation Z test, the pooled two-proportion statistic
  :math:`Z = (p_1 - p_h) / \sqrt{P(1-P)(1/n_1 + 1/n_h)}`, :math:`P = (k_1 + k_h)/(n_1 + n_h)`,
  significant when :math:`|Z| > 2`;
* practical significance: the shortfall, the fewest extra selections in the group that bring
  its ratio to 0.8, and whether one selection more (a flagged group) or one fewer (an unflagged
  group) changes the four-fifths flag;
* small numbers: a warning when the flag and Fisher's test disagree, or a group (or the highest
  group) has fewer than ``small_n`` applicants.

Groups under 2%: 29 CFR 1607.15(A)(2) lets a user keep no separate records for a group under
2% of the labour force of the relevant area. The file does not hold the labour force, so the
group's share of the applicants stands in for it: such groups are marked, and with
``exclude_small`` left out of the ratios (their counts still shown).

fairprobe adds the exact interval of each rate and ratio and whether the ratio is decidably
below 0.8.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from fairprobe.errors import InvalidParameterError
from fairprobe.profiles.core import (
    FAIRPROBE_ADDITIONS,
    CategoryRate,
    category_labels,
    fisher_p,
    outcome_column,
    rate_table,
    shortfall,
)

__all__ = ["FourFifthsRow", "UGESPResult", "four_fifths", "ugesp_profile"]


@dataclasses.dataclass(frozen=True)
class FourFifthsRow:
    """One group against the highest-rate group.

    Attributes
    ----------
    rate : CategoryRate
        Counts, rate, impact ratio and fairprobe's intervals.
    flagged : bool or None
        Impact ratio under the threshold (None: the group is left out of the ratios).
    fisher_p : float or None
        Two-sided Fisher exact p-value against the highest group.
    z : float or None
        The pooled two-proportion Z statistic (group minus highest).
    two_sd : bool or None
        ``|z| > 2``.
    shortfall : int or None
        Extra selections the group needs to reach the threshold ratio.
    one_flips : bool or None
        One selection more (flagged) or fewer (not flagged) changes the flag.
    small_numbers : bool
        Warning: the flag and Fisher's test disagree at ``alpha``, or too few applicants.
    """

    rate: CategoryRate
    flagged: bool | None
    fisher_p: float | None
    z: float | None
    two_sd: bool | None
    shortfall: int | None
    one_flips: bool | None
    small_numbers: bool

    def to_dict(self) -> dict[str, Any]:
        return {**self.rate.to_dict(), **{f.name: getattr(self, f.name)
                                          for f in dataclasses.fields(self) if f.name != "rate"}}


@dataclasses.dataclass(frozen=True)
class UGESPResult:
    """The four-fifths analysis of 29 CFR 1607.4(D) (module docstring)."""

    columns: tuple[str, ...]
    rows: tuple[FourFifthsRow, ...]
    highest: str
    unknown: int
    applicants: int
    threshold: float
    alpha: float
    small_n: int
    small_share: float
    exclude_small: bool
    confidence_level: float
    interval: str
    profile: str = "ugesp"

    @property
    def verdict(self) -> str:
        """``unfair`` when a ratio is decidably below the threshold (fairprobe's reading)."""
        return "unfair" if any(r.rate.decidably_below for r in self.rows) else "undetermined"

    def to_dict(self) -> dict[str, Any]:
        return {"profile": self.profile, "columns": list(self.columns), "highest": self.highest,
                "unknown": self.unknown, "applicants": self.applicants,
                "threshold": self.threshold, "alpha": self.alpha, "small_n": self.small_n,
                "small_share": self.small_share, "exclude_small": self.exclude_small,
                "confidence_level": self.confidence_level, "interval": self.interval,
                "verdict": self.verdict,
                "fairprobe_additions": list(FAIRPROBE_ADDITIONS),
                "rows": [r.to_dict() for r in self.rows]}


def two_sd_z(k1: int, n1: int, k2: int, n2: int) -> float:
    """Pooled two-proportion Z of ``k1/n1 - k2/n2`` (0 when every or no one is selected)."""
    pooled = (k1 + k2) / (n1 + n2)
    var = pooled * (1.0 - pooled) * (1.0 / n1 + 1.0 / n2)
    return 0.0 if var <= 0.0 else float((k1 / n1 - k2 / n2) / np.sqrt(var))


def four_fifths(rows: Sequence[CategoryRate], highest: str, *, threshold: float = 0.8,
                alpha: float = 0.05, small_n: int = 30) -> list[FourFifthsRow]:
    """The tests of the module docstring for every group against ``highest``."""
    top = next(r for r in rows if r.category == highest)
    out = []
    for r in rows:
        if r.impact_ratio is None or r.category == highest:
            out.append(FourFifthsRow(r, None if r.impact_ratio is None else False, None, None,
                                     None, None if r.impact_ratio is None else 0, None,
                                     r.n < small_n))
            continue
        flagged = r.impact_ratio < threshold
        p = fisher_p(r, top)
        z = two_sd_z(r.selected, r.n, top.selected, top.n)
        need = shortfall(r.selected, r.n, top.selected, top.n, threshold)
        step = 1 if flagged else -1
        k2 = r.selected + step
        flips = bool(0 <= k2 <= r.n and ((k2 / r.n) / top.rate < threshold) != flagged)
        small = bool(r.n < small_n or top.n < small_n or flagged != (p < alpha))
        out.append(FourFifthsRow(r, flagged, p, z, abs(z) > 2.0, need, flips, small))
    return out


def ugesp_profile(
    df: pd.DataFrame, *, group_cols: Sequence[str], y_pred_col: str, pos_label: Any = None,
    threshold: float = 0.8, alpha: float = 0.05, small_n: int = 30, small_share: float = 0.02,
    exclude_small: bool = False, confidence_level: float = 0.95, interval: str = "exact",
) -> UGESPResult:
    """Impact ratios against the highest-rate group, with the four-fifths flag and its tests."""
    for c in group_cols:
        if c not in df.columns:
            raise InvalidParameterError(f"--group-col {c} is not a column of the file; its "
                                        f"columns: {', '.join(map(str, df.columns[:20]))}.")
    hit = outcome_column(df, y_pred_col, "--y-pred-col", pos_label)
    labels, unknown = category_labels(df, group_cols)
    rows, highest = rate_table(labels[~unknown], hit[~unknown], order=None,
                               small_share=small_share, exclude_small=exclude_small,
                               threshold=threshold, confidence_level=confidence_level,
                               interval=interval)
    return UGESPResult(
        columns=tuple(group_cols), rows=tuple(four_fifths(rows, highest, threshold=threshold,
                                                          alpha=alpha, small_n=small_n)),
        highest=highest, unknown=int(unknown.sum()), applicants=len(df), threshold=threshold,
        alpha=alpha, small_n=small_n, small_share=small_share, exclude_small=exclude_small,
        confidence_level=confidence_level, interval=interval)
