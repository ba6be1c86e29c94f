"""Subgroup discovery: which conjunctions of feature conditions does the model treat worst?

Every subgroup defined by up to ``depth`` conditions on the features (a categorical level, or a
quantile bin of a numeric feature) is compared with the rest of the rows on one rate, and the
subgroups whose gap is proven beyond the tolerance are reported, with a guaranteed
false-discovery rate (:mod:`fairprobe.discover.fdr`, ``docs/discover.md``).

Counting is one aggregation: the counts of every subgroup of every feature combination come from
one ``GROUPING SETS`` query of the counting engine (:func:`fairprobe.scale.count_grouping_sets`),
or one pandas ``groupby`` per feature combination without DuckDB; the rest's counts are the
totals minus the subgroup's. No Python loop runs over subgroups.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TypedDict

import numpy as np
import pandas as pd

from fairprobe import metrics as _metrics
from fairprobe.discover.fdr import (
    FDR_METHODS,
    PVALUES,
    first_threshold,
    intervals,
    pvalues,
    step_up,
)
from fairprobe.errors import DataError, InvalidParameterError

__all__ = ["METRICS", "Condition", "DiscoveryResult", "SearchOptions", "Subgroup",
           "discover_subgroups"]

#: The rates a discovery compares: (successes, denominator) from the counted sums.
#: (the registry's ``discover`` path: one-rate differences of decisions and labels)
METRICS = {m.short: f"{_metrics.RATES[m.rates[0]].label} ({m.label or m.name.replace('_', ' ')})"
           for m in _metrics.METRICS.values() if _metrics.PATHS["discover"].accepts(m)}
_NEEDS_LABELS = {m for m in METRICS if "y_true" in _metrics.resolve(m).needs}


@dataclass(frozen=True)
class Condition:
    """One condition of a subgroup: ``feature == value``, or ``low <= feature < high`` for a
    binned numeric feature (``op`` is ``"=="`` or ``"in"``; ``value`` the level or ``[low,
    high)``)."""

    feature: str
    op: str
    value: Any

    def __str__(self) -> str:
        if self.op == "in":
            lo, hi = self.value
            return f"{lo:g} <= {self.feature} < {hi:g}"
        return f"{self.feature} = {self.value}"

    def to_dict(self) -> dict[str, Any]:
        v = list(self.value) if self.op == "in" else self.value
        return {"feature": self.feature, "operator": self.op, "value": v}


@dataclass(frozen=True)
class Subgroup:
    """A reported (or tested) subgroup: its conditions, size, rates and the test of its gap.

    ``estimate`` is ``rate - rate_rest``; ``interval`` is the exact box interval of the gap at
    the level the procedure rejected at (``1 - k q / (m c)``), so a reported subgroup's interval
    lies outside ``[-tolerance, tolerance]``; ``adjusted_p`` is the FDR-adjusted p-value.
    """

    conditions: tuple[Condition, ...]
    size: int
    denominator: int
    rate: float
    rate_rest: float
    estimate: float
    interval: tuple[float, float]
    p_value: float
    adjusted_p: float
    verdict: str
    #: With control columns: the gap to the rest without them (``estimate`` is then the
    #: within-stratum gap, ``rate_rest`` the subgroup's rate minus it, ``denominator`` its
    #: rows in strata the rest shares; :mod:`fairprobe.discover.stratified`).
    unadjusted: float | None = None
    #: With a race proxy (:mod:`fairprobe.discover.proxy`): the race gap within the slice,
    #: ``group``, ``reference``, ``bounds`` (``low``, ``high``, ``level``, ``region``) and the
    #: ``weighted`` estimate with its assumption; ``estimate`` and ``interval`` are then the
    #: bounds' (rates are not shown: the races are not recorded).
    proxy: dict[str, Any] | None = None

    @property
    def slice_label(self) -> str:
        return " and ".join(str(c) for c in self.conditions)

    def __str__(self) -> str:
        if self.proxy is not None:
            return f"{self.slice_label}: {self.proxy['group']} - {self.proxy['reference']}"
        return self.slice_label

    def to_dict(self) -> dict[str, Any]:
        if self.proxy is not None:
            return {"conditions": [c.to_dict() for c in self.conditions], "label": str(self),
                    "slice": self.slice_label, "size": self.size, **self.proxy,
                    "estimate": self.estimate,
                    "interval": {"low": self.interval[0], "high": self.interval[1]},
                    "p_value": self.p_value, "adjusted_p": self.adjusted_p,
                    "verdict": self.verdict}
        out = {"conditions": [c.to_dict() for c in self.conditions], "label": str(self),
               "size": self.size, "denominator": self.denominator, "rate": self.rate,
               "rate_rest": self.rate_rest, "estimate": self.estimate,
               "interval": {"low": self.interval[0], "high": self.interval[1]},
               "p_value": self.p_value, "adjusted_p": self.adjusted_p, "verdict": self.verdict}
        if self.unadjusted is not None:
            out["unadjusted_estimate"] = self.unadjusted
        return out


@dataclass(frozen=True)
class DiscoveryResult:
    """The subgroups reported at a false-discovery rate, and what the search tested.

    The guarantee: the expected share of reported subgroups whose true gap is within the
    tolerance is at most ``fdr`` (``guarantee`` says what it rests on); with no subgroup beyond
    the tolerance, some subgroup is reported with probability at most ``fdr``.
    """

    subgroups: tuple[Subgroup, ...]
    metric: str
    tolerance: float
    fdr: float
    method: str
    depth: int
    features: tuple[str, ...]
    tested: int
    too_small: int
    rows: int
    level: float
    bins: dict[str, list[float]] = field(default_factory=dict)
    pvalue: str = "joint"
    #: With control columns: ``columns``, ``bins`` (their quantile edges), ``strata`` and the
    #: construction; empty without (:mod:`fairprobe.discover.stratified`).
    control: dict[str, Any] = field(default_factory=dict)
    #: With a race proxy: ``method``, ``match`` (the match rates), ``groups``, ``reference``,
    #: ``comparisons`` (slices x races tested), ``assumptions``, ``guarantee``, ``condition``;
    #: empty without (:mod:`fairprobe.discover.proxy`).
    proxy: dict[str, Any] = field(default_factory=dict)

    @property
    def guarantee(self) -> str:
        if self.proxy:
            return str(self.proxy["guarantee"])
        return FDR_METHODS[self.method]

    @property
    def verdict(self) -> str:
        """``unfair`` when a subgroup is reported; ``undetermined`` otherwise (finding none
        is not evidence that none exists)."""
        return "unfair" if self.subgroups else "undetermined"

    @property
    def finding(self) -> Any:
        """The search as one question for the verdict engine and the report's headline: "is
        some subgroup unfair?". Its error is at most ``fdr``: with no subgroup beyond the
        tolerance every report is false, and the procedure reports one with probability at
        most ``fdr`` (the global null). The interval shown is the top subgroup's; with none
        reported the finding is ``undetermined``."""
        from fairprobe.stats.finding import Finding, Question

        top = self.subgroups[0] if self.subgroups else None
        pair = (str(top), "rest") if top is not None else ("any subgroup", "rest")
        if self.proxy:  # a race gap within a slice
            pair = ((f"{top.slice_label}: {top.proxy['group']}",
                     f"{top.slice_label}: {self.proxy['reference']}") if top is not None and
                    top.proxy is not None else ("any race in a slice", self.proxy["reference"]))
        q = Question(metric=f"discover:{self.metric}", kind="difference",
                     threshold=self.tolerance, groups=pair)
        common = dict(confidence_level=1.0 - self.fdr,
                      construction=f"exact {self.pvalue} p-values, {self.method} at FDR "
                                   f"{self.fdr:g}",
                      coverage="conditional" if self.method == "bh" else "exact",
                      condition=None if self.method != "bh" else
                      "if the p-values are positively regression dependent (PRDS)")
        if self.proxy:
            common.update(construction=f"{self.proxy['method']} bounds in every slice, "
                                       f"{self.method} over {self.proxy['comparisons']} slice x "
                                       f"race comparisons at {self.fdr:g}",
                          coverage="conditional", condition=self.proxy["condition"])
        if top is None:
            return Finding(q, float("nan"), -float("inf"), float("inf"), forced="undetermined",
                           reason=f"no subgroup of {self.tested} is proven beyond the tolerance "
                                  "at the FDR level", **common)  # type: ignore[arg-type]
        return Finding(q, top.estimate, top.interval[0], top.interval[1],
                       reason=(f"'some subgroup is unfair' is wrong with probability at most "
                               f"{self.fdr:g} (no subgroup beyond the tolerance: the global "
                               f"null); the interval is the top subgroup's, at the level its "
                               f"rejection met ({self.level:.6g})"),
                       **common)  # type: ignore[arg-type]

    def __str__(self) -> str:
        if self.proxy:
            from fairprobe.discover.proxy import proxy_text

            return proxy_text(self)
        head = (f"{len(self.subgroups)} of {self.tested} subgroups (depth <= {self.depth}, "
                f"{len(self.features)} features) differ from the rest by more than "
                f"{self.tolerance:g} in {METRICS[self.metric]}, at FDR {self.fdr:g} "
                f"({self.method}: {self.guarantee})")
        if self.control:
            head += (f"; the gap is the one within the {self.control.get('strata')} strata of "
                     f"{', '.join(self.control.get('columns', []))} (Mantel-Haenszel weights, "
                     "Hoeffding p-values)")
        lines = [head]
        for s in self.subgroups[:20]:
            lines.append(f"  {s.estimate:+.4f} [{s.interval[0]:+.4f}, {s.interval[1]:+.4f}]  "
                         f"n={s.size}  {s}  (adjusted p {s.adjusted_p:.2g})")
        if len(self.subgroups) > 20:
            lines.append(f"  ... {len(self.subgroups) - 20} more in the JSON")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric, "tolerance": self.tolerance, "fdr": self.fdr,
            "method": self.method, "guarantee": self.guarantee, "pvalue": self.pvalue,
            "depth": self.depth,
            "features": list(self.features), "tested": self.tested,
            "too_small": self.too_small, "rows": self.rows, "level": self.level,
            "bins": self.bins, "verdict": self.verdict, "finding": self.finding.to_dict(),
            "subgroups": [s.to_dict() for s in self.subgroups],
            **({"control": self.control} if self.control else {}),
            **({"proxy": self.proxy} if self.proxy else {}),
        }


#: A numeric feature with more distinct values than this is cut into quantile bins; one with
#: fewer is a categorical feature (a count, a code, a rating) whose levels are conditions.
MAX_LEVELS = 20


def _bin(frame: pd.DataFrame, features: Sequence[str], bins: int
         ) -> tuple[pd.DataFrame, dict[str, list[float]]]:
    """Numeric features with more than :data:`MAX_LEVELS` values become ``bins`` quantile-bin
    indices, in memory (the pandas engine; the DuckDB engine derives the same bins in SQL,
    :func:`_sql_bins`); the edges are kept to name the conditions. Edges depend on the
    features only, never on the outcome, so the search's hypotheses are fixed before any
    outcome is looked at. A missing value stays missing (and is refused by the count)."""
    out = frame
    edges: dict[str, list[float]] = {}
    for f in features:
        col = frame[f]
        if pd.api.types.is_numeric_dtype(col) and not pd.api.types.is_bool_dtype(col) \
                and col.nunique(dropna=True) > MAX_LEVELS:
            v = col.to_numpy(dtype=float)
            qs = np.unique(np.nanquantile(v, np.linspace(0, 1, bins + 1)))
            if out is frame:
                out = frame.copy()
            idx = np.clip(np.searchsorted(qs, v, side="right") - 1, 0, len(qs) - 2)
            out[f] = idx.astype(np.int64) if not np.isnan(v).any() else np.where(
                np.isnan(v), np.nan, idx)
            edges[f] = [float(x) for x in qs]
    return out, edges


def _num(col: str) -> str:
    from fairprobe.scale.engine import _q

    return f"CAST({_q(col)} AS DOUBLE)"


def _sql_bins(con: Any, rel: str, features: Sequence[str], types: dict[str, str], bins: int
              ) -> tuple[dict[str, list[float]], dict[str, float]]:
    """The quantile-bin edges of every numeric feature with more than :data:`MAX_LEVELS`
    values, computed by the engine over the source: an approximate distinct count
    (HyperLogLog) of every feature in one pass; then, in a second, the exact distinct count of
    the numeric ones near :data:`MAX_LEVELS` and the exact quantiles (``quantile_cont``, the
    same linear interpolation as numpy's) of those with more values. Only the edges come back to Python, with
    every feature's approximate number of values (bins for a binned one), which
    :func:`_blocks` uses to plan the count."""
    from fairprobe.scale.engine import _duck_kind, _q

    numeric = [f for f in features if _duck_kind(types[f]) == "number"]
    ok = {f: f"NOT isnan({_num(f)})" for f in numeric}
    approx = con.execute("SELECT " + ", ".join(
        f"approx_count_distinct({_num(f)}) FILTER (WHERE {ok[f]})" if f in ok
        else f"approx_count_distinct({_q(f)})" for f in features) + f" FROM {rel}").fetchone()
    cards = {f: float(a or 1) for f, a in zip(features, approx, strict=True)}
    if not numeric:
        return {}, cards
    # HyperLogLog is near exact at a handful of values: only a count near the threshold is
    # checked exactly (a feature misjudged would change which subgroups are searched, fixed by
    # the features alone, never the guarantee)
    small = [f for f in numeric if MAX_LEVELS / 2 < cards[f] <= 2 * MAX_LEVELS]
    few = [f for f in numeric if cards[f] <= MAX_LEVELS / 2]
    large = [f for f in numeric if f not in small and f not in few]
    probs = "[" + ", ".join(repr(float(x)) for x in np.linspace(0, 1, bins + 1)) + "]"
    parts = [f"count(DISTINCT {_num(f)}) FILTER (WHERE {ok[f]})" for f in small] + [
        f"quantile_cont({_num(f)}, {probs}) FILTER (WHERE {ok[f]})" for f in large]
    row = con.execute("SELECT " + ", ".join(parts) + f" FROM {rel}").fetchone() if parts else ()
    distinct = dict(zip(small, row[:len(small)], strict=True))
    qs = dict(zip(large, row[len(small):], strict=True))
    to_bin = [f for f in numeric if f in qs or (distinct.get(f) or 0) > MAX_LEVELS]
    if any(f in distinct for f in to_bin):  # between MAX_LEVELS and the approximate bound
        extra = [f for f in to_bin if f in distinct]
        got = con.execute("SELECT " + ", ".join(
            f"quantile_cont({_num(f)}, {probs}) FILTER (WHERE {ok[f]})" for f in extra)
            + f" FROM {rel}").fetchone()
        qs.update(zip(extra, got, strict=True))
    edges = {f: [float(x) for x in np.unique(np.asarray(qs[f], dtype=float))] for f in to_bin
             if qs[f] is not None}
    cards.update({f: float(len(e) - 1) for f, e in edges.items()})
    return edges, cards


#: The most groups a counting block may have (the product of its features' numbers of values).
BLOCK_GROUPS = 5_000


def _blocks(sets: Sequence[tuple[str, ...]], cards: dict[str, float]) -> list[tuple[str, ...]]:
    """Feature blocks whose groupings hold every set: greedily, an uncovered set grown by the
    feature that covers most uncovered sets while the block's groups stay within
    :data:`BLOCK_GROUPS`. The engine runs one hash aggregate per grouping set, so counting a
    few blocks (e.g. 6 of 4-5 features for the 55 sets of depth 2 over 10 features) and
    taking each set as a marginal of its block costs a fraction of 55 aggregates; the counts
    are the same sums."""
    order = list(dict.fromkeys(f for st in sets for f in st))
    todo = [st for st in sorted(sets, key=len, reverse=True)]
    out: list[tuple[str, ...]] = []
    while todo:
        block = list(todo[0])
        size = float(np.prod([cards[f] for f in block]))
        while True:
            best, gain = None, 0
            for f in order:
                if f in block or size * cards[f] > BLOCK_GROUPS:
                    continue
                cand = set(block) | {f}
                g = sum(set(st) <= cand for st in todo)
                if g > gain:
                    best, gain = f, g
            if best is None:
                break
            block.append(best)
            size *= cards[best]
        inside = set(block)
        todo = [st for st in todo if not set(st) <= inside]
        out.append(tuple(f for f in order if f in inside))
    return out


def _bin_sql(feature: str, edges: list[float]) -> str:
    """The bin index of ``feature`` as SQL: ``j`` for ``e_j <= x < e_j+1``, the top bin
    holding the maximum, NULL for a missing value (the rule of :func:`_bin`). Edges are
    written as strings cast to DOUBLE, so each is exactly the float computed."""
    x = _num(feature)
    whens = " ".join(f"WHEN {x} < CAST('{e!r}' AS DOUBLE) THEN {j}"
                     for j, e in enumerate(edges[1:-1]))
    return (f"CASE WHEN {x} IS NULL OR isnan({x}) THEN NULL {whens} "
            f"ELSE {len(edges) - 2} END")


def _engine_counts(data: Any, features: tuple[str, ...], sets: list[tuple[str, ...]],
                   bins: int, y_pred: str, y_true: str | None, pos_label: Any
                   ) -> tuple[dict[tuple[str, ...], pd.DataFrame], dict[str, list[float]]]:
    """Bins and counts without the rows entering Python: the bins' edges from the engine's
    quantiles, the binned features as ``CASE`` expressions in the same ``GROUPING SETS``
    aggregation (:func:`fairprobe.scale.count_grouping_sets`)."""
    from fairprobe.scale.counts import CountSpec
    from fairprobe.scale.engine import (
        _column_types,
        _duckdb_connect,
        _from_sql,
        count_grouping_sets,
        resolve_source,
    )

    src = resolve_source(data)
    cols = [*features, y_pred] + ([y_true] if y_true is not None else [])
    con = _duckdb_connect(None, None)
    stack = contextlib.ExitStack()
    try:
        rel = _from_sql(con, src, stack)
        types = _column_types(con, rel, src)
        missing = [c for c in cols if c not in types]
        if missing:
            raise DataError(f"column {missing[0]!r} is not in {src.name}; it has "
                            f"{', '.join(list(types)[:20])}.")
        edges, cards = _sql_bins(con, rel, features, types, bins)
    finally:
        con.close()
        stack.close()
    spec = CountSpec(group_cols=features, y_pred=y_pred, y_true=y_true, pos_label=pos_label)
    blocks = _blocks(sets, cards)
    got = count_grouping_sets(data, spec, blocks,
                              group_exprs={f: _bin_sql(f, e) for f, e in edges.items()})
    home = {st: next(b for b in blocks if set(st) <= set(b)) for st in sets}
    return {st: got[st].table if home[st] == st else _marginal(got[home[st]].table, st)
            for st in sets}, edges


def _marginal(table: pd.DataFrame, cols: tuple[str, ...]) -> pd.DataFrame:
    """A block's counts summed to the grouping ``cols``: the sums of
    :meth:`GroupCounts.marginal`, in the same row order, by ``np.bincount`` over the block's
    (small) table rather than a pandas group-by per combination."""
    from fairprobe.scale.counts import sort_keys

    sums = [c for c in ("n", "sp", "st", "stp") if c in table.columns]
    codes = np.zeros(len(table), dtype=np.int64)
    for c in cols:
        f, u = pd.factorize(table[c], sort=False)
        codes = codes * max(len(u), 1) + f
    uniq, first, inverse = np.unique(codes, return_index=True, return_inverse=True)
    out = table.iloc[first][list(cols)].reset_index(drop=True)
    for c in sums:  # counts below 2**53 add exactly in float64
        out[c] = np.bincount(inverse, weights=table[c].to_numpy(dtype=np.float64),
                             minlength=len(uniq)).round().astype(np.int64)
    return sort_keys(out, list(cols))


def _counts(frame: pd.DataFrame, features: tuple[str, ...], sets: list[tuple[str, ...]],
            y_pred: str, y_true: str | None, pos_label: Any, engine: str
            ) -> dict[tuple[str, ...], pd.DataFrame]:
    """The pandas engine's counts: one groupby per feature combination, never per subgroup."""
    from fairprobe.scale.counts import CountSpec
    from fairprobe.scale.engine import count

    out = {}
    for s in sets:
        sub = CountSpec(group_cols=s, y_pred=y_pred, y_true=y_true, pos_label=pos_label)
        out[s] = count(frame, sub, engine=engine).table
    return out


class SearchOptions(TypedDict, total=False):
    """The search's keyword options, as :func:`discover_subgroups` takes them (its Parameters
    say what each means, its signature gives the defaults): the one list a caller that passes
    them through (:func:`fairprobe.discover.job.discover_job`) declares with ``Unpack``."""

    depth: int
    metric: str
    fdr: float
    tolerance: float
    method: str
    bins: int
    min_size: int
    pos_label: Any
    engine: str
    pvalue: str
    control_cols: Sequence[str]
    control_bins: int


def discover_subgroups(
    data: Any,
    *,
    y_pred: str,
    features: Sequence[str],
    y_true: str | None = None,
    depth: int = 2,
    metric: str = _metrics.DP.short,
    fdr: float = 0.1,
    tolerance: float = 0.05,
    method: str = "holm",
    bins: int = 4,
    min_size: int = 30,
    pos_label: Any = None,
    engine: str = "auto",
    pvalue: str = "joint",
    control_cols: Sequence[str] = (),
    control_bins: int = 4,
) -> DiscoveryResult:
    """Search the subgroups of up to ``depth`` conditions and report those unfair at FDR ``fdr``.

    Parameters
    ----------
    data : DataFrame, or a path, directory or glob of Parquet / CSV files
        One row per decision: ``y_pred``, the ``features`` and (for ``eo``, ``fpr``) ``y_true``.
    y_pred, y_true : str
        Decision and label columns (0/1, booleans, or labels with ``pos_label``).
    features : sequence of str
        Columns whose values define subgroups; a numeric column with more than ``bins``
        distinct values is cut at its quantiles into ``bins`` bins.
    depth : int
        Most conditions per subgroup (1 to 3).
    metric : {"dp", "eo", "fpr"}
        The rate compared between the subgroup and the rest.
    fdr : float
        The false-discovery rate ``q`` in (0, 1).
    tolerance : float
        A subgroup is unfair when its rate differs from the rest's by more than this (0: at all).
    method : {"holm", "reshaped", "by", "bh"}
        Holm (default), the reshaped step-up or Benjamini-Yekutieli, each valid under any
        dependence, or Benjamini-Hochberg (needs PRDS, not guaranteed here); measured side by
        side in ``docs/discover.md``.
    min_size : int
        Subgroups with fewer rows in the rate's denominator are not tested (sizes do not depend
        on the decisions, so leaving them out keeps the guarantee).
    engine : {"auto", "duckdb", "pandas"}
        The counting engine (:func:`fairprobe.scale.count`).
    pvalue : {"joint", "split", "box"}
        The p-value construction (:data:`fairprobe.discover.fdr.PVALUES`), all exact; ``joint``
        (default) is the sharpest.
    control_cols : sequence of str
        Legitimate factors (``--control-col``): each subgroup is then compared with the rest
        within the strata of these columns (numeric ones with more than ``control_bins``
        values cut at their quantiles), by Mantel-Haenszel weights with Hoeffding p-values
        (:mod:`fairprobe.discover.stratified`); counted in memory by pandas.
    control_bins : int
        Quantile bins of a numeric control column.

    Returns
    -------
    DiscoveryResult
        The reported subgroups, ranked by the size of the gap, each with conditions, size,
        estimate, interval, adjusted p-value and verdict.
    """
    from fairprobe._validation import check_choice

    owner = "discover_subgroups"
    check_choice(metric, "metric", owner, list(METRICS))
    check_choice(method, "method", owner, list(FDR_METHODS))
    check_choice(pvalue, "pvalue", owner, list(PVALUES))
    feats = check_search(features, depth=depth, bins=bins, min_size=min_size, fdr=fdr,
                         tolerance=tolerance)
    if metric in _NEEDS_LABELS and y_true is None:
        raise InvalidParameterError(f"--metric {metric} compares rates among true labels: give "
                                    "--y-true-col.")
    if y_pred in feats or (y_true is not None and y_true in feats):
        raise InvalidParameterError("--features must not include the decision or label column.")
    sets = grouping_sets(feats, depth)
    from fairprobe.scale.engine import engine_name

    if control_cols:
        return _discover_within_strata(data, feats, sets, y_pred=y_pred, y_true=y_true,
                                       metric=metric, fdr=fdr, tolerance=tolerance,
                                       method=method, bins=bins, min_size=min_size,
                                       pos_label=pos_label, depth=depth,
                                       control=(control_cols, control_bins))

    if engine_name(engine) == "duckdb":  # the rows never enter Python
        tables, edges = _engine_counts(data, feats, sets, bins, y_pred, y_true, pos_label)
    else:
        frame, edges = _bin(_read(data, feats, y_pred, y_true), feats, bins)
        tables = _counts(frame, feats, sets, y_pred, y_true, pos_label, engine)
    counts = subgroup_counts(tables, sets, metric, edges)
    return decide(counts, metric=metric, fdr=fdr, tolerance=tolerance, method=method,
                  min_size=min_size, depth=depth, features=feats, bins=edges, pvalue=pvalue)


def check_search(features: Sequence[str], *, depth: int, bins: int, min_size: int, fdr: float,
                 tolerance: float) -> tuple[str, ...]:
    """The options every search shares, checked by name; the features, deduplicated."""
    from fairprobe._validation import check_int, check_real

    owner = "discover_subgroups"
    check_int(depth, "depth", owner, lo=1, hi=3)
    check_int(bins, "bins", owner, lo=2, hi=100)
    check_int(min_size, "min_size", owner, lo=1)
    check_real(fdr, "fdr", owner, lo=0.0, hi=1.0, closed="neither")
    check_real(tolerance, "tolerance", owner, lo=0.0, hi=1.0, closed="left")
    feats = tuple(dict.fromkeys(str(f) for f in features))
    if not feats:
        raise InvalidParameterError("--features names no column; give e.g. --features age,region.")
    return feats


def _discover_within_strata(data: Any, feats: tuple[str, ...], sets: list[tuple[str, ...]], *,
                            y_pred: str, y_true: str | None, metric: str, fdr: float,
                            tolerance: float, method: str, bins: int, min_size: int,
                            pos_label: Any, depth: int,
                            control: tuple[Sequence[str], int]) -> DiscoveryResult:
    """The search within strata of the control columns (:mod:`fairprobe.discover.stratified`).
    The strata need every row's control values, so the rows are counted in memory (pandas)
    on every engine: one answer whichever engine is asked for."""
    from fairprobe._validation import check_int
    from fairprobe.discover.stratified import (
        check_controls,
        decide_stratified,
        stratified_subgroup_counts,
    )
    from fairprobe.stats.stratified import bin_controls

    ctl = check_controls(feats, control[0])
    check_int(control[1], "control_bins", "discover_subgroups", lo=2, hi=100)
    raw = _read(data, feats, y_pred, y_true, extra=ctl)
    strata, cedges = bin_controls(raw, ctl, control[1])
    frame, edges = _bin(raw[[c for c in raw.columns if c not in ctl or c in feats]], feats, bins)
    counts = stratified_subgroup_counts(frame, sets, metric, edges, strata, y_pred=y_pred,
                                        y_true=y_true, pos_label=pos_label, engine="pandas")
    info = {"columns": list(ctl), "bins": cedges,
            "construction": "Mantel-Haenszel-weighted within-stratum gap, Hoeffding p-values "
                            "(valid at every sample size)"}
    return decide_stratified(counts, metric=metric, fdr=fdr, tolerance=tolerance,
                             method=method, min_size=min_size, depth=depth, features=feats,
                             bins=edges, control=info)


def slice_rows(frame: pd.DataFrame, features: Sequence[str], depth: int,
               edges: dict[str, list[float]]) -> list[tuple[tuple[Condition, ...], np.ndarray]]:
    """Every subgroup of up to ``depth`` conditions of a binned ``frame`` (:func:`_bin`) with
    the positions of its rows, in the order of :func:`grouping_sets` and, within one, of the
    levels: for searches that need each subgroup's rows rather than its counts (the race
    proxy's bounds, :mod:`fairprobe.discover.proxy`). A missing value is refused, as the
    count refuses it."""
    feats = tuple(features)
    na = frame[list(feats)].isna().any()
    if na.any():
        raise DataError(f"--features column {na[na].index[0]!r} has missing values: fill or "
                        "drop those rows (a subgroup must be defined on every row).")
    out: list[tuple[tuple[Condition, ...], np.ndarray]] = []
    for s in grouping_sets(feats, depth):
        groups = frame.groupby(list(s), sort=True).indices
        for key, rows in groups.items():
            values = key if isinstance(key, tuple) else (key,)
            out.append((tuple(_condition(c, v, edges) for c, v in zip(s, values, strict=True)),
                        np.asarray(rows, dtype=np.int64)))
    return out


def grouping_sets(features: Sequence[str], depth: int) -> list[tuple[str, ...]]:
    """Every combination of 1 to ``depth`` features, in a fixed order (singles first)."""
    feats = tuple(features)
    return [c for d in range(1, min(depth, len(feats)) + 1)
            for c in itertools.combinations(feats, d)]


@dataclass(frozen=True)
class SubgroupCounts:
    """Every subgroup's conditions, rows, and the rate's successes and denominator, with the
    totals of all rows: what :func:`decide` needs, from one counting pass."""

    keys: tuple[tuple[Condition, ...], ...]
    size: np.ndarray
    k: np.ndarray
    n: np.ndarray
    k_total: float
    n_total: float
    rows: int


def subgroup_counts(tables: dict[tuple[str, ...], pd.DataFrame], sets: Sequence[tuple[str, ...]],
                    metric: str, edges: dict[str, list[float]]) -> SubgroupCounts:
    """Flatten the engine's per-combination count tables into one vector per quantity."""
    keys: list[tuple[Condition, ...]] = []
    ks, ns, sizes = [], [], []
    for s in sets:  # one vector per feature combination
        t = tables[s]
        k, n = _rate_counts(t, metric)
        ks.append(k)
        ns.append(n)
        sizes.append(t["n"].to_numpy())
        values = [t[c].tolist() for c in s]
        keys.extend(tuple(_condition(c, v, edges) for c, v in zip(s, combo, strict=True))
                    for combo in zip(*values, strict=True))
    first = tables[sets[0]]
    k_tot, n_tot = (float(x.sum()) for x in _rate_counts(first, metric))
    return SubgroupCounts(tuple(keys), np.concatenate(sizes), np.concatenate(ks).astype(float),
                          np.concatenate(ns).astype(float), k_tot, n_tot, int(first["n"].sum()))


def decide(counts: SubgroupCounts, *, metric: str, fdr: float, tolerance: float, method: str,
           min_size: int, depth: int, features: tuple[str, ...],
           bins: dict[str, list[float]] | None = None, pvalue: str = "joint",
           p_values: np.ndarray | None = None, with_intervals: bool = True) -> DiscoveryResult:
    """Test every subgroup against the rest and keep those the procedure rejects.

    ``p_values`` (one per subgroup, 1 for those not tested) skips their computation: an
    experiment that runs several procedures on one search computes them once
    (:func:`search_pvalues`); ``with_intervals=False`` leaves the reported intervals NaN, for
    one that only counts the reports."""
    keys, size_all = counts.keys, counts.size
    k_all, n_all = counts.k, counts.n
    kr, nr = counts.k_total - k_all, counts.n_total - n_all
    tested = _tested(counts, min_size)
    p = search_pvalues(counts, tolerance=tolerance, fdr=fdr, method=method, min_size=min_size,
                       pvalue=pvalue) if p_values is None else p_values
    reject, adjusted, m, a = run_procedure(p, tested, fdr, method)
    # each reported subgroup's interval at the level its rejection met: outside the band
    level = 1.0 - a
    idx = np.flatnonzero(reject)
    if with_intervals:
        lo, hi = intervals(pvalue, k_all[idx], n_all[idx], kr[idx], nr[idx], level,
                           method=method, q=fdr, m=m, tau=tolerance)
    else:
        lo = hi = np.full(idx.size, np.nan)
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = k_all / n_all
        rest = kr / nr
    est = rate - rest
    order = idx[np.argsort(-np.abs(est[idx]), kind="stable")]
    pos = {int(i): j for j, i in enumerate(idx)}
    out = tuple(
        Subgroup(conditions=keys[i], size=int(size_all[i]),
                 denominator=int(n_all[i]), rate=float(rate[i]), rate_rest=float(rest[i]),
                 estimate=float(est[i]), interval=(float(lo[pos[i]]), float(hi[pos[i]])),
                 p_value=float(p[i]), adjusted_p=float(adjusted[i]), verdict="unfair")
        for i in (int(x) for x in order))
    return DiscoveryResult(subgroups=out, metric=metric, tolerance=float(tolerance),
                           fdr=float(fdr), method=method, depth=int(depth), features=features,
                           tested=m, too_small=int((~tested).sum()), rows=counts.rows,
                           level=float(level), bins=dict(bins or {}), pvalue=pvalue)


def run_procedure(p: np.ndarray, tested: np.ndarray, fdr: float, method: str
                  ) -> tuple[np.ndarray, np.ndarray, int, float]:
    """``method`` at FDR ``fdr`` over the tested subgroups' p-values: which are rejected, the
    adjusted p-values (1 for the untested), the number tested and the per-test level every
    rejection met (the first threshold when none is)."""
    reject_t, adj_t, level_used = step_up(p[tested], fdr, method)
    reject = np.zeros(len(p), dtype=bool)
    adjusted = np.ones(len(p))
    reject[tested] = reject_t
    adjusted[tested] = adj_t
    m = int(tested.sum())
    return reject, adjusted, m, (level_used if level_used > 0
                                 else first_threshold(method, fdr, max(m, 1)))


def _tested(counts: SubgroupCounts, min_size: int) -> np.ndarray:
    # a subgroup equal to all rows (one level everywhere) has no rest to compare with
    return (counts.n >= min_size) & (counts.n_total - counts.n >= min_size)


def search_pvalues(counts: SubgroupCounts, *, tolerance: float, fdr: float, method: str,
                   min_size: int, pvalue: str = "joint") -> np.ndarray:
    """Every subgroup's p-value (1 for those not tested, and for those above ``fdr``, which
    no procedure rejects): :func:`fairprobe.discover.fdr.pvalues`."""
    tested = _tested(counts, min_size)
    k, n = counts.k[tested], counts.n[tested]
    p = np.ones_like(counts.k)
    p[tested] = pvalues(pvalue, k, n, counts.k_total - k, counts.n_total - n, tolerance,
                        method=method, q=fdr)
    return p


def _rate_counts(t: pd.DataFrame, metric: str) -> tuple[np.ndarray, np.ndarray]:
    if metric == _metrics.DP.short:
        return t["sp"].to_numpy(), t["n"].to_numpy()
    if metric == _metrics.EO.short:
        return t["stp"].to_numpy(), t["st"].to_numpy()
    return (t["sp"] - t["stp"]).to_numpy(), (t["n"] - t["st"]).to_numpy()


def _condition(feature: str, value: Any, edges: dict[str, list[float]]) -> Condition:
    if feature in edges:
        e = edges[feature]
        j = int(value)
        return Condition(feature, "in", (e[j], e[j + 1]))
    v = value.item() if hasattr(value, "item") else value
    return Condition(feature, "==", v)


def _read(data: Any, features: tuple[str, ...], y_pred: str, y_true: str | None,
          extra: Sequence[str] = (), flags: dict[str, str] | None = None) -> pd.DataFrame:
    """The needed columns as a frame, for the pandas engine (which counts in memory); a
    missing ``extra`` column is named by its flag in ``flags`` (``--control-col`` else)."""
    cols = [*features, y_pred] + ([y_true] if y_true is not None else []) + list(extra)
    if not isinstance(data, pd.DataFrame):
        from fairprobe.scale.engine import _to_pandas, resolve_source

        data = _to_pandas(resolve_source(data))
    missing = [c for c in cols if c not in data.columns]
    if missing:
        flag = ((flags or {}).get(missing[0], "--control-col") if missing[0] in extra
                else "--features/--y-pred-col/--y-true-col")
        raise DataError(f"{flag}: column {missing[0]!r} is not in the data; it has "
                        f"{', '.join(map(str, data.columns[:20]))}.")
    return data[cols]
