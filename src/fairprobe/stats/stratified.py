"""Gaps within strata of legitimate factors: is the gap between groups explained by the controls?

The rows are cut into strata by the control columns (a numeric column with more distinct values
than ``bins`` into quantile bins, the edges kept), and within each stratum the groups' rates are
compared. The gap that remains within strata is the Mantel-Haenszel common risk difference
(Greenland and Robins 1985, "Estimation of a common effect parameter from sparse follow-up
data", Biometrics 41):

.. math::
    \\hat\\delta_{MH} = \\frac{\\sum_h (a_h n_{0h} - b_h n_{1h}) / N_h}{\\sum_h w_h},\\qquad
    w_h = \\frac{n_{1h} n_{0h}}{N_h},

``a_h`` of ``n_{1h}`` rows of the first group and ``b_h`` of ``n_{0h}`` of the second positive in
stratum ``h``, ``N_h = n_{1h} + n_{0h}``. Its variance is Sato's (1989, "On the variance estimator
for the Mantel-Haenszel risk difference", Biometrics 45), consistent both with many small strata
and with few large ones:

.. math::
    \\widehat{\\mathrm{Var}} = \\frac{\\hat\\delta_{MH} \\sum_h P_h + \\sum_h Q_h}{(\\sum_h w_h)^2},
    \\quad P_h = \\frac{n_{1h}^2 b_h - n_{0h}^2 a_h + n_{1h} n_{0h} (n_{0h} - n_{1h}) / 2}{N_h^2},
    \\quad Q_h = \\frac{a_h (n_{0h} - b_h) + b_h (n_{1h} - a_h)}{2 N_h}.

The interval is Wald's on it (``coverage="asymptotic"``): an exact stratified interval of a risk
difference has no closed form, and the MH estimate with Sato's variance is the one fair-lending
and epidemiology practice reports. Every pair of groups is compared, each interval at the
Bonferroni share ``1 - alpha / m`` of the ``m`` pairs, so the verdict (fair when every pair's
interval lies inside the band, unfair when one lies outside) holds for all pairs at once. A
stratum holding one group only carries no within-stratum comparison (``w_h = 0``): it is listed,
with its rows, and adds nothing to the estimate.

For the disparate impact ratio the common risk ratio is MH's too, ``sum(a_h n_{0h} / N_h) /
sum(b_h n_{1h} / N_h)``, with the Greenland-Robins variance of its logarithm, the interval
``exp(log RR +- z se)`` and the floor ``threshold`` as the band.

The share of the gap the strata explain is ``1 - delta_MH / delta`` for the pair with the largest
unconditional gap ``delta``: 1 when the gap vanishes within strata, 0 when it is unchanged,
negative when it grows (Simpson's reversal shows as a share above 1); for the ratio the same on
the log scale, ``1 - log RR_MH / log RR``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

from fairprobe import metrics as _metrics
from fairprobe.errors import DataError, InvalidParameterError
from fairprobe.stats.finding import Finding, Question

__all__ = ["CONTROL_RATES", "ControlAnalysis", "bin_controls", "mantel_haenszel_difference",
           "stratified_gaps"]

#: The metrics a stratified comparison supports: the rate's rows (``None``: every row, or the
#: rows of that true label) and the rate's name.
CONTROL_RATES: dict[str, tuple[int | None, str]] = {
    _metrics.DI.name: (None, "selection_rate"),
    _metrics.DP.name: (None, "selection_rate"),
    _metrics.EO.name: (1, "true_positive_rate"),
    _metrics.FPR.name: (0, "false_positive_rate"),
}


def bin_controls(df: pd.DataFrame, cols: Sequence[str], bins: int
                 ) -> tuple[pd.Series, dict[str, list[float]]]:
    """Each row's stratum label (``col=value`` joined by ``, ``), numeric columns with more than
    ``bins`` distinct values cut at their quantiles (``[lo, hi)``, the top bin closed); the edges
    of each binned column. Missing values form a stratum of their own (``col=missing``). The
    labels are an ordered categorical: bins in their numeric order, levels sorted."""
    codes = np.zeros(len(df), dtype=np.int64)
    label: Any = None
    edges: dict[str, list[float]] = {}
    for c in cols:
        if c not in df.columns:
            have = ", ".join(map(str, df.columns[:12]))
            raise DataError(f"--control-col {c!r} is not a column of the data (columns: {have}).")
        s = df[c]
        if pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s) and \
                s.nunique(dropna=True) > bins:
            x = s.to_numpy(dtype=float)
            e = np.unique(np.nanquantile(x, np.linspace(0.0, 1.0, bins + 1)))
            edges[c] = [float(v) for v in e]
            j = np.clip(np.searchsorted(e, x, side="right") - 1, 0, len(e) - 2)
            names = [f"{c} in [{e[i]:g}, {e[i + 1]:g}{']' if i == len(e) - 2 else ')'}"
                     for i in range(len(e) - 1)] + [f"{c}=missing"]
            j = np.where(np.isnan(x), len(e) - 1, j)
        else:
            f, u = pd.factorize(s, sort=True)
            names = [f"{c}={v}" for v in u] + [f"{c}=missing"]
            j = np.where(f < 0, len(u), f)
        lab = np.asarray(names, dtype=object)[j]
        codes = codes * len(names) + j
        label = lab if label is None else label + ", " + lab
    order = pd.Series(codes).groupby(np.asarray(label)).first().sort_values()
    cat = pd.Categorical(label, categories=list(order.index), ordered=True)
    return pd.Series(cat, index=df.index), edges


def mantel_haenszel_difference(a: Any, n1: Any, b: Any, n0: Any) -> tuple[float, float, float]:
    """The MH common risk difference, Sato's variance and ``sum w_h`` (module docstring) of the
    per-stratum counts; strata with an empty side carry no weight. NaNs when no stratum holds
    both groups."""
    a, n1, b, n0 = (np.asarray(x, dtype=np.float64) for x in (a, n1, b, n0))
    keep = (n1 > 0) & (n0 > 0)
    a, n1, b, n0 = a[keep], n1[keep], b[keep], n0[keep]
    if not keep.any():
        return math.nan, math.nan, 0.0
    big = n1 + n0
    w = n1 * n0 / big
    sw = float(w.sum())
    est = float(((a * n0 - b * n1) / big).sum() / sw)
    p = (n1**2 * b - n0**2 * a + n1 * n0 * (n0 - n1) / 2.0) / big**2
    q = (a * (n0 - b) + b * (n1 - a)) / (2.0 * big)
    var = (est * float(p.sum()) + float(q.sum())) / sw**2
    return est, max(var, 0.0), sw


def mantel_haenszel_ratio(a: Any, n1: Any, b: Any, n0: Any) -> tuple[float, float]:
    """The MH common risk ratio and the variance of its logarithm (Greenland and Robins 1985):
    ``RR = sum(a n0 / N) / sum(b n1 / N)``, ``Var(log RR) = sum((n1 n0 (a + b) - a b N) / N^2)
    / (sum(a n0 / N) sum(b n1 / N))``. NaNs when no stratum holds both groups or a side has no
    positive."""
    a, n1, b, n0 = (np.asarray(x, dtype=np.float64) for x in (a, n1, b, n0))
    keep = (n1 > 0) & (n0 > 0)
    a, n1, b, n0 = a[keep], n1[keep], b[keep], n0[keep]
    big = n1 + n0
    r, s = float((a * n0 / big).sum()), float((b * n1 / big).sum())
    if not keep.any() or r <= 0 or s <= 0:
        return math.nan, math.nan
    v = float(((n1 * n0 * (a + b) - a * b * big) / big**2).sum()) / (r * s)
    return r / s, max(v, 0.0)


@dataclass(frozen=True)
class ControlAnalysis:
    """The gap between groups within strata of the control columns, beside the unconditional one.

    Attributes
    ----------
    metric, rate : str
        The metric compared and the per-group rate behind it.
    controls : tuple of str
        The control columns; ``bins`` the quantile edges of those that were binned.
    strata : list of dict
        Per stratum: its label, rows, each group's ``k``/``n``/rate, and, with two groups or
        more, the gap of the reported pair with its interval (Newcombe's, at the family level);
        ``one_group`` names the only group of a stratum with one, which adds nothing.
    pairs : list of dict
        Every compared pair: the MH estimate, Sato's standard error and the Bonferroni interval.
    finding : Finding
        The largest within-strata gap (worst pair) at the family level: the verdict.
    unconditional : dict
        The unconditional worst pair, its gap, its MH gap and the share the strata explain.
    """

    metric: str
    rate: str
    controls: tuple[str, ...]
    bins: dict[str, list[float]]
    strata: list[dict[str, Any]]
    pairs: list[dict[str, Any]]
    finding: Finding
    unconditional: dict[str, Any]
    confidence_level: float
    family_size: int
    method: str = ""
    excluded: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"metric": self.metric, "rate": self.rate, "controls": list(self.controls),
                "bins": self.bins, "method": self.method, "confidence_level":
                self.confidence_level, "family_size": self.family_size,
                "finding": self.finding.to_dict(), "verdict": self.finding.verdict,
                "unconditional": self.unconditional, "pairs": self.pairs,
                "strata": self.strata, "excluded": self.excluded}


def stratified_gaps(df: pd.DataFrame, *, y_pred: Any, groups: pd.Series, y_true: Any = None,
                    controls: Sequence[str], metric: str = _metrics.DP.name,
                    bins: int = 4, tolerance: float = 0.05, confidence_level: float = 0.95,
                    min_group_size: int = 1, unconditional: Finding | None = None
                    ) -> ControlAnalysis:
    """Compare the groups within strata of ``controls`` (module docstring).

    Parameters
    ----------
    df : DataFrame
        The rows, holding the control columns.
    y_pred, y_true : array-like of 0/1
        Decisions and (for ``eo``/FPR) true labels, one per row of ``df``.
    groups : Series of str
        Each row's group label.
    controls : sequence of str
        The control columns; numeric ones with more than ``bins`` values are binned.
    metric : str
        A key of :data:`CONTROL_RATES`.
    tolerance : float
        The fair band ``[-tolerance, tolerance]`` of the within-strata gap; for
        ``disparate_impact_ratio``, the floor of the within-strata ratio (MH risk ratio, lower
        rate over higher, interval ``exp(log RR +- z se)``).
    min_group_size : int
        Groups with fewer rows in the rate's denominator (over all strata) are left out
        (``excluded``), as in the unconditional audit.
    unconditional : Finding, optional
        The unconditional audit's finding on the same metric, shown beside this one.
    """
    if metric not in CONTROL_RATES:
        raise InvalidParameterError(
            f"--control-col compares rates within strata: the metric {metric} is not one of "
            "di, dp, eo, fpr; give --metric dp (or di, eo, fpr).")
    label, rate = CONTROL_RATES[metric]
    if label is not None and y_true is None:
        raise InvalidParameterError(f"--control-col with {metric} needs --y-true-col.")
    strata, edges = bin_controls(df, controls, bins)
    t = _stratum_counts(strata, y_pred, groups, y_true, label, min_group_size)
    ratio = metric == _metrics.DI.name
    m = len(t.gs) * (len(t.gs) - 1) // 2
    share = (1.0 - confidence_level) / m  # each pair's share of alpha (Bonferroni)
    pairs = _compare_pairs(t, ratio, share)
    decided = [p for p in pairs if not math.isnan(p["estimate"])]
    if not decided:
        raise DataError("--control-col: no stratum holds two of the groups; the gap within "
                        "strata is not defined (coarser --control-bins, or fewer controls).")
    worst = (min(decided, key=lambda p: p["estimate"]) if ratio
             else max(decided, key=lambda p: p["estimate"]))
    finding = _family_finding(pairs, worst, metric, rate, ratio, tolerance, confidence_level,
                              {"strata": int(t.n.shape[0]), "pairs": m,
                               "controls": list(controls)})
    uncond = {} if unconditional is None else _beside_unconditional(t, unconditional, ratio)
    how = ("Mantel-Haenszel common risk ratio, Greenland-Robins variance of its log (1985)"
           if ratio else "Mantel-Haenszel common risk difference (Greenland-Robins 1985), "
           "Sato's variance (1989)")
    return ControlAnalysis(method=f"{how}, Wald interval, Bonferroni over the pairs",
                           metric=metric, rate=rate, controls=tuple(controls), bins=edges,
                           strata=_strata_rows(t, worst["pair"], 1.0 - share), pairs=pairs,
                           finding=finding, unconditional=uncond,
                           confidence_level=confidence_level, family_size=m,
                           excluded=t.excluded)


@dataclass(frozen=True)
class _StratumCounts:
    """Positives ``k`` and rows ``n`` per stratum (index) and group (columns), the groups
    compared ``gs`` (large enough) and those left out, with the reason."""

    k: pd.DataFrame
    n: pd.DataFrame
    gs: list[str]
    excluded: dict[str, str]


def _stratum_counts(strata: pd.Series, y_pred: Any, groups: pd.Series, y_true: Any,
                    label: int | None, min_group_size: int) -> _StratumCounts:
    """The per-stratum counts of the rate's rows (every row, or those of true label
    ``label``); fewer than two groups of ``min_group_size`` rows is a :class:`DataError`."""
    yp = np.asarray(y_pred, dtype=np.int64)
    keep = np.ones(len(yp), dtype=bool) if label is None else (
        np.asarray(y_true, dtype=np.int64) == label)
    frame = pd.DataFrame({"s": strata[keep].reset_index(drop=True),
                          "g": np.asarray(groups)[keep].astype(str), "y": yp[keep]})
    tab = frame.groupby(["s", "g"], sort=True, observed=True)["y"].agg(["sum", "count"])
    k = tab["sum"].unstack(fill_value=0)
    n = tab["count"].unstack(fill_value=0)
    totals = n.sum(axis=0)
    excluded = {str(g): f"{int(totals[g])} rows in the rate's denominator, under "
                        f"--min-group-size {min_group_size}"
                for g in n.columns if totals[g] < min_group_size}
    gs = [str(g) for g in n.columns if str(g) not in excluded]
    if len(gs) < 2:
        raise DataError("--control-col: fewer than two groups large enough to compare.")
    return _StratumCounts(k, n, gs, excluded)


def _compare_pairs(t: _StratumCounts, ratio: bool, share: float) -> list[dict[str, Any]]:
    """Every pair's MH estimate and Wald interval at ``1 - share`` (``share``: the pair's
    Bonferroni share of alpha):
    the ratio lower rate over higher, the difference higher rate first, as the unconditional
    summary orients its pair."""
    from scipy.stats import norm

    z = float(norm.ppf(1.0 - share / 2.0))
    k, n = t.k, t.n
    pairs: list[dict[str, Any]] = []
    for g1, g2 in itertools.combinations(t.gs, 2):
        if ratio:
            rr, lv = mantel_haenszel_ratio(k[g1], n[g1], k[g2], n[g2])
            if rr > 1:
                g1, g2, rr = g2, g1, 1.0 / rr
            se = math.sqrt(lv) if not math.isnan(lv) else math.nan
            lo, hi = ((rr * math.exp(-z * se), min(rr * math.exp(z * se), math.inf))
                      if not math.isnan(rr) else (0.0, math.inf))
            pairs.append({"pair": [g1, g2], "estimate": rr, "se_log": se, "low": lo,
                          "high": hi})
            continue
        est, var, sw = mantel_haenszel_difference(k[g1], n[g1], k[g2], n[g2])
        if est < 0:
            g1, g2, est = g2, g1, -est
        se = math.sqrt(var)
        lo, hi = (est - z * se, est + z * se) if sw > 0 else (-math.inf, math.inf)
        pairs.append({"pair": [g1, g2], "estimate": est, "se": se, "weight": sw,
                      "low": max(lo, -1.0), "high": min(hi, 1.0)})
    return pairs


def _family_finding(pairs: list[dict[str, Any]], worst: dict[str, Any], metric: str, rate: str,
                    ratio: bool, tolerance: float, confidence_level: float,
                    counts: dict[str, Any]) -> Finding:
    """The family's verdict on the worst pair's interval: unfair if some pair is proven
    outside the band, fair only if every pair is inside; where the worst pair's own word
    differs, the family's is forced with the reason."""
    from fairprobe.stats.finding import decide

    kind: Any = "ratio" if ratio else "difference"
    words = {decide(p["low"], p["high"], kind=kind, threshold=tolerance) for p in pairs}
    family: Literal["fair", "unfair", "undetermined"] = (
        "unfair" if "unfair" in words else "fair" if words == {"fair"}
              else "undetermined")
    own = decide(worst["low"], worst["high"], kind=kind, threshold=tolerance)
    forced = None if own == family else family
    q = Question(metric=metric, kind=kind, threshold=float(tolerance),
                 groups=tuple(worst["pair"]), rates=(rate,))
    return Finding(
        q, worst["estimate"], worst["low"], worst["high"], confidence_level, "mantel-haenszel",
        coverage="asymptotic", forced=forced,
        reason=None if forced is None else (
            "another pair's within-strata interval decides the family" if forced == "unfair"
            else "some pair's within-strata interval still reaches the band"),
        counts=counts)


def _strata_rows(t: _StratumCounts, pair: list[str], level: float) -> list[dict[str, Any]]:
    """The per-stratum table: rows, each present group's counts, the only group of a
    one-group stratum, and the reported pair's gap with Newcombe's interval at ``level``."""
    from fairprobe.stats.intervals import newcombe_interval

    g1, g2 = pair
    k, n = t.k, t.n
    a_iv = newcombe_interval(k[g1].to_numpy(), np.maximum(n[g1].to_numpy(), 1),
                             k[g2].to_numpy(), np.maximum(n[g2].to_numpy(), 1), level)
    # plain integer arrays for the per-stratum table (pandas' scalar types are too loose here)
    kk, nn = k.to_numpy(dtype=np.int64), n.to_numpy(dtype=np.int64)
    col = {str(g): j for j, g in enumerate(n.columns)}
    j1, j2 = col[g1], col[g2]
    rows: list[dict[str, Any]] = []
    for i, s in enumerate(n.index):
        present = [g for g in t.gs if nn[i, col[g]] > 0]
        row: dict[str, Any] = {
            "stratum": str(s), "rows": int(nn[i].sum()),
            "groups": {g: {"k": int(kk[i, col[g]]), "n": int(nn[i, col[g]]),
                           "rate": float(kk[i, col[g]] / nn[i, col[g]])} for g in present}}
        if len(present) == 1:
            row["one_group"] = present[0]
        if nn[i, j1] > 0 and nn[i, j2] > 0:
            row["gap"] = {"pair": [g1, g2],
                          "estimate": float(kk[i, j1] / nn[i, j1] - kk[i, j2] / nn[i, j2]),
                          "low": float(a_iv[0][i]), "high": float(a_iv[1][i]),
                          "method": "newcombe"}
        rows.append(row)
    return rows


def _beside_unconditional(t: _StratumCounts, unconditional: Finding, ratio: bool
                          ) -> dict[str, Any]:
    """The unconditional pair's crude gap, its within-strata gap and the share the strata
    explain (empty when a group of the pair is not compared here)."""
    pair = unconditional.counts.get("pair") or unconditional.question.groups[:2]
    u1, u2 = (str(x) for x in pair)
    if u1 not in t.gs or u2 not in t.gs:
        return {}
    k, n = t.k, t.n
    r1, r2 = float(k[u1].sum() / n[u1].sum()), float(k[u2].sum() / n[u2].sum())
    if ratio:  # on the log scale, where a ratio of 1 is no gap
        crude = r1 / r2 if r2 > 0 else math.nan
        within = mantel_haenszel_ratio(k[u1], n[u1], k[u2], n[u2])[0]
        c, w = math.log(crude) if crude > 0 else math.nan, (
            math.log(within) if within > 0 else math.nan)
    else:
        crude = r1 - r2
        within = mantel_haenszel_difference(k[u1], n[u1], k[u2], n[u2])[0]
        c, w = crude, within
    share = (1.0 - w / c) if c != 0 and math.isfinite(c) and math.isfinite(w) else None
    return {"finding": unconditional.to_dict(), "pair": [u1, u2], "gap": crude,
            "within_strata": within, "share_explained": share}
