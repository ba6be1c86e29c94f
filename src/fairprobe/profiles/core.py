r"""What the three regulatory profiles share: categories with unknowns set aside, counted rates,
impact ratios with fairprobe's exact intervals, and the shortfall to a ratio threshold.

A profile computes the numbers a rule names, as the rule defines them (point values from raw
counts), and adds, marked as fairprobe's addition, an exact interval beside each rate and ratio
and whether the ratio is *decidably* below the threshold (the interval's upper end under it).

* rate of a category: :math:`k / n` (selected over applicants), with its Clopper-Pearson
  interval (:func:`fairprobe.stats.exact.clopper_pearson_interval`);
* impact ratio: :math:`(k/n) / (k_r/n_r)` against a comparison category :math:`r`, with the
  exact unconditional interval (:func:`fairprobe.stats.exact.exact_ratio_interval`) or, with
  ``interval="score"``, Koopman's score interval
  (:func:`fairprobe.stats.intervals.score_ratio_interval`);
* shortfall to a ratio :math:`t`: the fewest extra selections :math:`s \ge 0` with
  :math:`(k + s)/n \ge t \cdot k_r/n_r`, i.e. :math:`\lceil t\,k_r\,n / n_r \rceil - k`, computed
  in exact rational arithmetic so that a ratio exactly at :math:`t` needs none.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd

from fairprobe.errors import DataError, InvalidParameterError

__all__ = ["UNKNOWN_VALUES", "CategoryRate", "category_labels", "ratio_intervals",
           "shortfall", "unknown_mask"]

#: Values that declare a category unknown (compared case-insensitively, stripped); a missing
#: value is unknown too. DCWP's rules count such individuals apart from the calculations.
UNKNOWN_VALUES = frozenset({"", "unknown", "not specified", "unspecified", "declined",
                            "decline to state", "prefer not to say", "not reported", "na",
                            "n/a", "none", "?"})


@dataclasses.dataclass(frozen=True)
class CategoryRate:
    """One category's counts, rate and impact ratio, with fairprobe's exact intervals.

    Attributes
    ----------
    category : str
        The category's label (an intersection joins its parts with ``", "``).
    n : int
        Individuals in the category (applicants).
    selected : int
        Of them, selected (or, for a scoring rate, scoring above the sample's median).
    share : float
        ``n`` over the individuals of the family with a known category.
    rate : float
        ``selected / n``.
    rate_low, rate_high : float
        fairprobe's addition: the Clopper-Pearson interval of ``rate``.
    impact_ratio : float or None
        ``rate`` over the comparison category's rate; None when the category is left out of the
        ratios (``excluded``) or the comparison rate is 0.
    ratio_low, ratio_high : float or None
        fairprobe's addition: the exact interval of ``impact_ratio`` (None for the comparison
        category itself, whose ratio is 1 by definition).
    decidably_below : bool
        fairprobe's addition: ``ratio_high`` < the threshold (the ratio is below it at the
        interval's level, not only in the point value).
    small : bool
        The category holds under the small-category share (2%) of the family's data.
    excluded : bool
        Left out of the impact ratios (``small`` and the exclusion was asked for).
    """

    category: str
    n: int
    selected: int
    share: float
    rate: float
    rate_low: float
    rate_high: float
    impact_ratio: float | None
    ratio_low: float | None
    ratio_high: float | None
    decidably_below: bool
    small: bool
    excluded: bool

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def unknown_mask(values: pd.Series) -> np.ndarray:
    """True where a category is missing or declared unknown (:data:`UNKNOWN_VALUES`)."""
    text = values.astype("string").str.strip().str.lower()
    return np.asarray(values.isna().to_numpy() | text.isin(UNKNOWN_VALUES).fillna(True)
                      .to_numpy(dtype=bool), dtype=bool)


def category_labels(df: pd.DataFrame, cols: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """The label of each row (parts joined by ``", "``) and the mask of rows with any part
    unknown."""
    unknown = np.zeros(len(df), dtype=bool)
    for c in cols:
        unknown |= unknown_mask(df[c])
    parts = [df[c].astype("string").str.strip().fillna("") for c in cols]
    label = parts[0]
    for p in parts[1:]:
        label = label + ", " + p
    return label.to_numpy(dtype=object), unknown


def outcome_column(df: pd.DataFrame, col: str, flag: str, pos_label: Any) -> np.ndarray:
    """The 0/1 decisions of ``col`` (``pos_label`` marks a selection when the labels are text)."""
    from fairprobe.stats.frame import _binary_labels

    if col not in df.columns:
        raise InvalidParameterError(f"{flag} {col} is not a column of the file; its columns: "
                                    f"{', '.join(map(str, df.columns[:20]))}.")
    return _binary_labels(df[col].to_numpy(), f"{flag} {col}", pos_label).astype(np.int64)


def score_column(df: pd.DataFrame, col: str) -> np.ndarray:
    """The numeric scores of ``--score-col`` (every row must hold one)."""
    if col not in df.columns:
        raise InvalidParameterError(f"--score-col {col} is not a column of the file; its "
                                    f"columns: {', '.join(map(str, df.columns[:20]))}.")
    s = pd.to_numeric(df[col], errors="coerce").to_numpy(dtype=np.float64)
    bad = ~np.isfinite(s)
    if bad.any():
        raise DataError(f"--score-col {col} holds {int(bad.sum())} value(s) that are not finite "
                        "numbers: fill or drop those rows.")
    return s


def ratio_intervals(a: np.ndarray, A: np.ndarray, b: int, B: int, confidence_level: float,
                    interval: str) -> tuple[np.ndarray, np.ndarray]:
    """Intervals of ``(a/A) / (b/B)`` for each category against one comparison category."""
    from fairprobe.stats.exact import exact_ratio_interval
    from fairprobe.stats.intervals import score_ratio_interval

    bb = np.full(len(a), b, dtype=np.float64)
    BB = np.full(len(a), B, dtype=np.float64)
    fn = exact_ratio_interval if interval == "exact" else score_ratio_interval
    lo, hi = fn(np.asarray(a, np.float64), np.asarray(A, np.float64), bb, BB, confidence_level)
    return np.asarray(lo, np.float64), np.asarray(hi, np.float64)


#: The JSON fields fairprobe adds to a profile's table (the rules ask for point values only).
FAIRPROBE_ADDITIONS = ("rate_low", "rate_high", "ratio_low", "ratio_high", "decidably_below",
                       "verdict")


def fisher_p(row: CategoryRate, top: CategoryRate) -> float:
    """Two-sided Fisher exact p-value of ``row``'s selections against ``top``'s (the 2x2 table
    of selected and not selected), as the four-fifths and fair-lending practice reports it."""
    from scipy import stats as sps

    return float(sps.fisher_exact([[row.selected, row.n - row.selected],
                                   [top.selected, top.n - top.selected]])[1])


def shortfall(k: int, n: int, k_ref: int, n_ref: int, threshold: float) -> int:
    """Fewest extra selections in a category (``k`` of ``n``) that bring its rate to
    ``threshold`` times the comparison rate ``k_ref / n_ref`` (0 if it is there already);
    exact rational arithmetic, capped at ``n - k``."""
    target = Fraction(threshold).limit_denominator(10**9) * Fraction(k_ref, n_ref) * n
    need = max(0, math.ceil(target) - k)
    return min(need, n - k)


def rate_table(labels: np.ndarray, hit: np.ndarray, *, order: Sequence[str] | None,
               small_share: float, exclude_small: bool, threshold: float,
               confidence_level: float, interval: str, comparison: str | None = None,
               ) -> tuple[list[CategoryRate], str]:
    """The rows of one category family: counts, rates, impact ratios against ``comparison``
    (default: the highest rate among the categories kept in the ratios).

    Returns the rows (in ``order``, or sorted by label) and the comparison category."""
    from fairprobe.stats.exact import clopper_pearson_interval

    frame = pd.DataFrame({"c": labels, "h": hit})
    g = frame.groupby("c", sort=True)["h"].agg(["size", "sum"])
    cats = [str(c) for c in g.index] if order is None else [c for c in order if c in g.index]
    if not cats:
        raise DataError("no individual with a known category: nothing to compute.")
    n = g.loc[cats, "size"].to_numpy(np.int64)
    k = g.loc[cats, "sum"].to_numpy(np.int64)
    total = int(n.sum())
    share = n / total
    small = share < small_share
    excluded = small & exclude_small
    rate = k / n
    lo, hi = clopper_pearson_interval(k, n, confidence_level)
    kept = ~excluded
    if comparison is None:
        if not kept.any():
            raise DataError("every category is under the small-category share: no impact ratio "
                            "can be computed; drop --exclude-small.")
        j = int(np.flatnonzero(kept)[np.argmax(rate[kept])])
    else:
        if comparison not in cats:
            raise InvalidParameterError(
                f"--reference {comparison!r} is not a category of the data; its categories: "
                f"{', '.join(cats[:20])}.")
        j = cats.index(comparison)
    kr, nr = int(k[j]), int(n[j])
    with np.errstate(divide="ignore", invalid="ignore"):
        ir = rate / rate[j] if kr > 0 else np.full(len(cats), np.nan)
    rlo, rhi = ratio_intervals(k, n, kr, nr, confidence_level, interval) if kr > 0 else (
        np.full(len(cats), np.nan), np.full(len(cats), np.nan))
    rows = []
    for i, c in enumerate(cats):
        has = bool(kept[i]) and kr > 0
        own = i == j
        rows.append(CategoryRate(
            category=c, n=int(n[i]), selected=int(k[i]), share=float(share[i]),
            rate=float(rate[i]), rate_low=float(lo[i]), rate_high=float(hi[i]),
            impact_ratio=float(ir[i]) if has else None,
            ratio_low=None if (own or not has) else float(rlo[i]),
            ratio_high=None if (own or not has) else float(rhi[i]),
            decidably_below=bool(has and not own and rhi[i] < threshold),
            small=bool(small[i]), excluded=bool(excluded[i])))
    return rows, cats[j]
