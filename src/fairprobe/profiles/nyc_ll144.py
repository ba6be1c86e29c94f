r"""NYC Local Law 144 bias audit of an automated employment decision tool (DCWP rules, 6 RCNY
§5-300 to §5-304).

Definitions implemented (6 RCNY §5-300):

* **selection rate** of a category: the share of its individuals selected to move forward or
  assigned a classification, :math:`k_c / n_c`;
* **scoring rate** (with a score): the share of a category's individuals whose score is above
  the sample's median score, :math:`\#\{i \in c: s_i > \operatorname{median}(s)\} / n_c`, the
  median taken over every individual of the sample (known and unknown categories);
* **impact ratio**: the category's selection (scoring) rate over the rate of the most selected
  (highest scoring) category.

Calculations (§5-301): separately for sex, race/ethnicity and their intersections; a category
under 2% of the data may be excluded from the impact ratios (``exclude_small``), its number of
applicants and rate still reported. Summary (§5-303): the number of applicants per category, the
number of individuals in an unknown category (left out of every calculation), the date of the
audit, the data's source, and the tool's distribution date.

fairprobe adds (marked so in every output) the exact interval of each rate and ratio and whether
each ratio is decidably below 0.8; the rule asks for the point values only.
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
    outcome_column,
    rate_table,
    score_column,
)

__all__ = ["FAMILIES", "LL144Family", "LL144Result", "ll144_profile"]

#: The EEO-1 race/ethnicity categories, in the order DCWP's published summaries list them.
EEO1_RACES = ("Hispanic or Latino", "White", "Black or African American",
              "Native Hawaiian or Pacific Islander", "Asian",
              "Native American or Alaska Native", "Two or More Races")

FAMILIES = ("sex", "race/ethnicity", "intersectional")


@dataclasses.dataclass(frozen=True)
class LL144Family:
    """One table of the summary: a category family's rows, its unknowns and its comparison.

    Attributes
    ----------
    family : str
        ``sex``, ``race/ethnicity`` or ``intersectional``.
    columns : tuple of str
        The data columns the categories come from.
    rows : tuple of CategoryRate
    unknown : int
        Individuals whose category in this family is missing or declared unknown, left out.
    comparison : str
        The most selected (highest scoring) category, the denominator of the impact ratios.
    """

    family: str
    columns: tuple[str, ...]
    rows: tuple[CategoryRate, ...]
    unknown: int
    comparison: str

    def to_dict(self) -> dict[str, Any]:
        return {"family": self.family, "columns": list(self.columns), "unknown": self.unknown,
                "comparison": self.comparison, "rows": [r.to_dict() for r in self.rows]}


@dataclasses.dataclass(frozen=True)
class LL144Result:
    """The bias audit of 6 RCNY §5-301, one table per category family.

    Attributes
    ----------
    rate : str
        ``selection`` (decisions) or ``scoring`` (scores above the sample's median).
    families : tuple of LL144Family
    applicants : int
        Every individual in the data.
    unknown : int
        Individuals with an unknown sex or race/ethnicity (not in the intersectional table).
    median_score : float or None
        The sample's median score (scoring rates only).
    exclude_small : bool
        Whether categories under ``small_share`` are left out of the impact ratios.
    small_share, threshold, confidence_level : float
    interval : str
        fairprobe's interval construction (``exact`` or ``score``).
    summary : dict
        Summary fields of §5-303 given as options (data source, audit dates, distribution date).
    """

    rate: str
    families: tuple[LL144Family, ...]
    applicants: int
    unknown: int
    median_score: float | None
    exclude_small: bool
    small_share: float
    threshold: float
    confidence_level: float
    interval: str
    summary: dict[str, str | None]
    profile: str = "nyc-ll144"

    @property
    def verdict(self) -> str:
        """``unfair`` when some impact ratio is decidably below the threshold, otherwise
        ``undetermined`` (the rule sets no pass mark; this is fairprobe's reading)."""
        below = any(r.decidably_below for f in self.families for r in f.rows)
        return "unfair" if below else "undetermined"

    def to_dict(self) -> dict[str, Any]:
        return {"profile": self.profile, "rate": self.rate, "applicants": self.applicants,
                "unknown": self.unknown, "median_score": self.median_score,
                "exclude_small": self.exclude_small, "small_share": self.small_share,
                "threshold": self.threshold, "confidence_level": self.confidence_level,
                "interval": self.interval, "summary": dict(self.summary),
                "verdict": self.verdict,
                "fairprobe_additions": list(FAIRPROBE_ADDITIONS),
                "families": [f.to_dict() for f in self.families]}


def ll144_profile(
    df: pd.DataFrame, *, sex_col: str, race_col: str, y_pred_col: str | None = None,
    score_col: str | None = None, pos_label: Any = None, exclude_small: bool = False,
    small_share: float = 0.02, threshold: float = 0.8, confidence_level: float = 0.95,
    interval: str = "exact", data_source: str | None = None, audit_dates: str | None = None,
    distribution_date: str | None = None,
) -> LL144Result:
    """Selection (or scoring) rates and impact ratios per 6 RCNY §5-301 (module docstring).

    Parameters
    ----------
    df : DataFrame
        One row per individual the tool assessed.
    sex_col, race_col : str
        The sex and race/ethnicity columns (missing or declared-unknown values are unknown).
    y_pred_col : str, optional
        The decision column (selection rates). Exactly one of it and ``score_col``.
    score_col : str, optional
        The score column (scoring rates: above the whole sample's median).
    exclude_small : bool
        Leave categories under ``small_share`` of their family out of the impact ratios.
    """
    if (y_pred_col is None) == (score_col is None):
        raise InvalidParameterError("--profile nyc-ll144 takes --y-pred-col (selection rates) "
                                    "or --score-col (scoring rates): give one of them.")
    for col in (sex_col, race_col):
        if col not in df.columns:
            raise InvalidParameterError(f"--group-col {col} is not a column of the file; its "
                                        f"columns: {', '.join(map(str, df.columns[:20]))}.")
    median: float | None = None
    if score_col is not None:
        s = score_column(df, score_col)
        median = float(np.median(s))
        hit = (s > median).astype(np.int64)
    else:
        assert y_pred_col is not None
        hit = outcome_column(df, y_pred_col, "--y-pred-col", pos_label)
    families = []
    specs: Sequence[tuple[str, tuple[str, ...]]] = (
        ("sex", (sex_col,)), ("race/ethnicity", (race_col,)),
        ("intersectional", (sex_col, race_col)))
    unknown_any = 0
    for fam, cols in specs:
        labels, unknown = category_labels(df, cols)
        known = ~unknown
        order = _order(labels[known], fam)
        rows, comp = rate_table(labels[known], hit[known], order=order, small_share=small_share,
                                exclude_small=exclude_small, threshold=threshold,
                                confidence_level=confidence_level, interval=interval)
        families.append(LL144Family(fam, cols, tuple(rows), int(unknown.sum()), comp))
        if fam == "intersectional":
            unknown_any = int(unknown.sum())
    return LL144Result(
        rate="scoring" if score_col is not None else "selection", families=tuple(families),
        applicants=len(df), unknown=unknown_any, median_score=median,
        exclude_small=exclude_small, small_share=small_share, threshold=threshold,
        confidence_level=confidence_level, interval=interval,
        summary={"data_source": data_source, "audit_dates": audit_dates,
                 "distribution_date": distribution_date})


def _order(labels: np.ndarray, family: str) -> list[str]:
    """Categories in the published summaries' order where they are EEO-1's, else sorted."""
    present = sorted({str(x) for x in labels})
    if family == "race/ethnicity":
        known = [r for r in EEO1_RACES if r in present]
        return known + [r for r in present if r not in known]
    if family == "intersectional":
        def key(c: str) -> tuple[str, int, str]:
            sex, _, race = c.partition(", ")
            return (sex, EEO1_RACES.index(race) if race in EEO1_RACES else 99, race)
        return sorted(present, key=key)
    return present
