"""A finding's interval recomputed at another level from its raw counts (for the headline).

The family-wise headline (:mod:`fairprobe.stats.headline`) recomputes each counted finding at
its Bonferroni share of the error budget. These functions rebuild the interval from the raw
evidence a result keeps: the two groups' counts of a two-group finding, and every group's
counts per rate of an every-group summary (the ``by_group`` table of an audit document). They
return ``None`` when the evidence is not there or is not integer counts (weighted rates).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from fairprobe.stats.finding import Finding
from fairprobe.stats.headline import Refit
from fairprobe.stats.region import RateBox
from fairprobe.stats.simultaneous import family_intervals, worst_pair

__all__ = ["family_summary_interval", "rate_box", "refit_family", "refit_two_group"]


def refit_two_group(finding: Finding) -> Refit | None:
    """``level -> (low, high)`` for a two-group finding with counts ``a, A, b, B``."""
    from fairprobe.stats.counts import CountsVector
    from fairprobe.stats.result import INTERVAL_METHODS

    c = finding.counts
    fn = INTERVAL_METHODS.get(finding.construction)
    if fn is None or not all(isinstance(c.get(x), int) for x in ("a", "A", "b", "B")):
        return None
    ev = CountsVector(int(c["a"]), int(c["A"]), int(c["b"]), int(c["B"]))

    def refit(level: float) -> tuple[float, float]:
        return fn(ev, level)

    return _checked(refit, finding)


def family_summary_interval(
    kind: str, per_rate: Mapping[str, tuple[Any, Any, Any, Any]], level: float, method: str,
) -> tuple[float, float]:
    """The interval of an every-group summary (largest gap or smallest ratio) at ``level``.

    ``per_rate[rate] = (k, n, rest_k, rest_n)`` over the compared groups; several rates
    (equalized odds) split the error budget equally and the gap is the largest over them,
    as :meth:`fairprobe.stats.frame.AuditFrame.summary` computes it.
    """
    share = 1.0 / len(per_rate)
    worst = [worst_pair(family_intervals(*(np.asarray(x, dtype=np.float64) for x in v),
                                         kind=kind,  # type: ignore[arg-type]
                                         confidence_level=level, method=method, share=share))
             for v in per_rate.values()]
    if kind == "difference":
        return max(w["low"] for w in worst), max(w["high"] for w in worst)
    return min(w["low"] for w in worst), min(w["high"] for w in worst)


def refit_family(
    finding: Finding, by_group: Sequence[Mapping[str, Any]], method: str,
) -> Refit | None:
    """``level -> (low, high)`` for an every-group summary finding of an audit document.

    ``by_group`` is the document's per-group table (``rates[rate] = {"value", "n"}``); the
    counts are ``round(value * n)`` and must be integers (unweighted), else ``None``.
    """
    if method != "exact" or finding.coverage != "exact":
        return None
    groups = list(finding.question.groups)
    table = _table(finding, by_group)
    if table is None:
        return None
    per_rate: dict[str, tuple[Any, Any, Any, Any]] = {}
    for r in finding.question.rates:
        cells = table[r]
        tk = sum(k for k, _ in cells.values())  # the rests: every reported group
        tn = sum(n for _, n in cells.values())
        ks = [cells[g][0] for g in groups]
        ns = [cells[g][1] for g in groups]
        per_rate[r] = (ks, ns, [tk - x for x in ks], [tn - x for x in ns])
    kind = finding.question.kind

    def refit(level: float) -> tuple[float, float]:
        return family_summary_interval(kind, per_rate, level, method)

    return _checked(refit, finding)


def _table(finding: Finding, by_group: Sequence[Mapping[str, Any]]
           ) -> dict[str, dict[str, tuple[int, int]]] | None:
    """``table[rate][group] = (k, n)`` from the document's ``by_group`` table
    (``k = round(value * n)``); ``None`` unless every compared group has integer (unweighted)
    counts for every rate of the finding."""
    groups = list(finding.question.groups)
    rates = list(finding.question.rates)
    if len(groups) < 2 or not rates:
        return None
    table: dict[str, dict[str, tuple[int, int]]] = {}
    for row in by_group:
        name = str(row.get("group"))
        for r in rates:
            cell = (row.get("rates") or {}).get(r)
            if not isinstance(cell, Mapping) or not isinstance(cell.get("n"), int):
                continue
            v, n = cell.get("value"), int(cell["n"])
            if n == 0:
                continue
            if not isinstance(v, int | float):
                return None
            k = round(float(v) * n)
            if abs(k - float(v) * n) > 1e-6:
                return None  # weighted (non-integer) counts: no exact refit
            table.setdefault(r, {})[name] = (k, n)
    for r in rates:
        if not all(g in table.get(r, {}) for g in groups):
            return None
    return table


def rate_box(finding: Finding, by_group: Sequence[Mapping[str, Any]],
             method: str) -> RateBox | None:
    """The shared region (:class:`fairprobe.stats.region.RateBox`) of an every-group summary
    finding (largest gap or smallest ratio of its rates over its groups), from the document's
    ``by_group`` counts; ``None`` where the finding is not an exact summary of integer counts.
    Two summaries of the same rates over the same groups get equal boxes, which the headline
    charges once. Two groups get none: their exact two-group intervals, each at half the share,
    are narrower than the box at the whole share (``fairprobe.stats.region``)."""
    if method != "exact" or finding.coverage != "exact" or len(finding.question.groups) < 3 \
            or finding.question.kind not in ("difference", "ratio"):
        return None
    table = _table(finding, by_group)
    if table is None:
        return None
    rates, groups = tuple(finding.question.rates), tuple(finding.question.groups)
    return RateBox(rates, groups, tuple(tuple(table[r][g] for g in groups) for r in rates))


def _checked(refit: Refit, finding: Finding) -> Refit | None:
    """``refit`` if it gives back the finding's own interval at the finding's level (the
    evidence read is the evidence the interval came from), else ``None``."""
    try:
        lo, hi = refit(float(finding.confidence_level))
    except (ValueError, ArithmeticError):
        return None
    same = all(
        (math.isinf(x) and math.isinf(y) and (x > 0) == (y > 0)) or abs(x - y) <= 1e-9
        for x, y in ((lo, float(finding.low)), (hi, float(finding.high)))
    )
    return refit if same else None
