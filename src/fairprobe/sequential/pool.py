"""Audit pools: answers already collected for a held-out pool, audited over random orders.

The paper's protocol queries a fixed held-out pool (or, for equal opportunity, its ``Y = 1``
sub-pool) in random order without replacement. An :class:`AuditPool` holds the group of every
pool member and its decision, score and logit (whichever exist); :func:`run_pool` replays the
audit over ``R`` random orders, all of them evaluated at once (vectorised), and returns a
:class:`~fairprobe.sequential.results.RepeatedAudit`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Unpack

import numpy as np
import numpy.typing as npt
import pandas as pd

from fairprobe import metrics as _metrics
from fairprobe._validation import check_choice, check_int
from fairprobe.errors import DataError, EmptyGroupError, InvalidParameterError
from fairprobe.sequential.base import (
    ACCESS_REGIMES,
    SequentialTest,
    TestChoice,
    check_budget,
    choose_test,
)
from fairprobe.sequential.boundaries import wald_lower_bound
from fairprobe.sequential.glr import bernoulli_divergence
from fairprobe.sequential.results import RepeatedAudit

__all__ = ["METRICS", "AuditPool", "PoolTruth", "make_orders", "pool_truth", "run_pool"]

METRICS: tuple[str, ...] = ("sp", _metrics.EO.short)
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class AuditPool:
    """Group membership, labels and answers of every pool member (arrays of equal length).

    ``in_a`` is True for group a (``group_names[0]``). ``decisions``, ``scores``, ``logits`` and
    ``labels`` are ``None`` when unavailable.
    """

    in_a: BoolArray
    group_names: tuple[str, str]
    decisions: FloatArray | None = None
    scores: FloatArray | None = None
    logits: FloatArray | None = None
    labels: FloatArray | None = None

    def __post_init__(self) -> None:
        n = len(self.in_a)
        for name in ("decisions", "scores", "logits", "labels"):
            arr = getattr(self, name)
            if arr is not None and len(arr) != n:
                raise DataError(f"Pool column {name!r} has {len(arr)} entries, expected {n}.")
        if n == 0:
            raise DataError("The audit pool is empty.")
        _check_both_groups(self.in_a, self.group_names, "the pool")
        if self.labels is not None and not np.isin(self.labels, (0.0, 1.0)).all():
            raise DataError("Labels must be 0 or 1 (1 = the favourable true outcome).")
        if self.decisions is not None and not np.isin(self.decisions, (0.0, 1.0)).all():
            if np.isnan(self.decisions).any():
                raise DataError("Decisions contain NaN (unparsed answers?): drop those rows.")
            raise DataError("Decisions must be 0 or 1; pass probabilities as scores.")
        if self.scores is not None:
            s = self.scores
            if np.isnan(s).any() or (s < 0).any() or (s > 1).any():
                raise DataError(
                    f"Scores must lie in [0, 1] (no NaN); got values in "
                    f"[{np.nanmin(s):g}, {np.nanmax(s):g}]. Pass logits as logits."
                )
        if self.logits is not None and not np.isfinite(self.logits).all():
            raise DataError("Logits must be finite numbers (no NaN or infinity).")

    def __len__(self) -> int:
        return len(self.in_a)

    @classmethod
    def from_frame(
        cls,
        df: pd.DataFrame,
        group_col: str,
        *,
        decision_col: str | None = None,
        score_col: str | None = None,
        logit_col: str | None = None,
        label_col: str | None = None,
        group_a: Any = None,
    ) -> AuditPool:
        """Build a pool from a table; group a is ``group_a`` or the first of the two values."""
        for col in (group_col, decision_col, score_col, logit_col, label_col):
            if col is not None and col not in df.columns:
                raise DataError(
                    f"Column {col!r} is not in the pool; it has {', '.join(map(str, df.columns))}."
                )
        if df[group_col].isna().any():
            raise DataError(f"Group column {group_col!r} has missing values; drop those rows.")
        groups = df[group_col].to_numpy()
        values = sorted({str(v) for v in groups})
        if group_a is None:
            if len(values) > 2:
                raise DataError(
                    f"Group column {group_col!r} holds {len(values)} values ({', '.join(values)}); "
                    "name the audited group with group_a (--group-a) to compare it with the rest."
                )
            a_name = values[0]
        else:
            a_name = str(group_a)
        in_a = np.array([str(v) == a_name for v in groups], dtype=bool)
        others = [v for v in values if v != a_name]
        b_name = others[0] if len(others) == 1 else ("rest" if others else "other")

        def num(col: str | None) -> FloatArray | None:
            if col is None:
                return None
            try:
                return np.asarray(df[col].astype(float).to_numpy(), dtype=np.float64)
            except (TypeError, ValueError) as exc:
                raise DataError(f"Column {col!r} must be numeric: {exc}.") from exc

        return cls(
            in_a=in_a,
            group_names=(a_name, b_name),
            decisions=num(decision_col),
            scores=num(score_col),
            logits=num(logit_col),
            labels=num(label_col),
        )

    def values(self, access: str) -> FloatArray:
        """The observable of one access regime for every pool member."""
        check_choice(access, "access", "AuditPool.values", ACCESS_REGIMES)
        arr = {"decisions": self.decisions, "scores": self.scores, "logits": self.logits}[access]
        if arr is None:
            flag = {"decisions": "decision", "scores": "score", "logits": "logit"}[access]
            raise InvalidParameterError(
                f"access={access!r} needs the pool's {access}: pass --{flag}-col."
            )
        return arr

    def subpool(self, metric: str) -> BoolArray:
        """Mask of the members audited for ``metric``: everyone (SP) or ``Y = 1`` (EO)."""
        check_choice(metric, "metric", "AuditPool.subpool", METRICS)
        if metric == "sp":
            return np.ones(len(self), dtype=bool)
        if self.labels is None:
            raise InvalidParameterError(
                "metric='eo' audits the Y=1 sub-pool and needs true labels: pass --label-col."
            )
        mask = self.labels == 1.0
        if not mask.any():
            raise EmptyGroupError(
                "The Y=1 sub-pool is empty: no pool member has label 1, so equal opportunity "
                "cannot be audited."
            )
        _check_both_groups(self.in_a[mask], self.group_names, "the Y=1 sub-pool")
        return mask

    def observations(self, metric: str, access: str) -> tuple[BoolArray, FloatArray]:
        """Group mask and observable of the audited (sub-)pool."""
        mask = self.subpool(metric)
        return self.in_a[mask], self.values(access)[mask]


def _check_both_groups(in_a: BoolArray, names: tuple[str, str], where: str) -> None:
    if not in_a.any():
        raise EmptyGroupError(
            f"{where} has no member of group {names[0]!r}; both groups are needed."
        )
    if in_a.all():
        raise EmptyGroupError(
            f"{where} has no member of group {names[1]!r} (every member is {names[0]!r}); "
            "both groups are needed."
        )


@dataclass(frozen=True)
class PoolTruth:
    """The audited pool's own parameters: shares, group means, variances and the gap."""

    share_a: float
    mean_a: float
    mean_b: float
    var_a: float
    var_b: float
    size: int

    @property
    def gap(self) -> float:
        return abs(self.mean_a - self.mean_b)

    def information(self, test: SequentialTest) -> float:
        """KL information per query to the nearest law of the other hypothesis.

        The Bernoulli model for decisions, the Gaussian working model otherwise (for the
        betting test with logit access, the audited observable is ``sigmoid(logit)``; pass the
        truth of the scores then). The group shares are those of the test's sampling scheme:
        the pool's shares for proportional sampling, one half each for a test that alternates
        the groups (``sampling = "alternate"``), so that Wald's bound is the bound of the scheme
        the test actually uses.
        """
        if getattr(test, "sampling", "proportional") == "alternate":
            pa = pb = 0.5
        else:
            pa, pb = self.share_a, 1.0 - self.share_a
        delta = test.tolerance
        if abs(self.gap - delta) <= 1e-9:
            return 0.0  # gap at delta (up to rounding): no test separates the hypotheses
        if test.access == "decisions":
            return float(
                min(
                    bernoulli_divergence(pa, self.mean_a, pb, self.mean_b, delta),
                    bernoulli_divergence(pa, self.mean_a, pb, self.mean_b, -delta),
                )
            )
        var = self.var_a / pa + self.var_b / pb
        if var <= 0:
            return math.inf
        return (self.gap - delta) ** 2 / (2.0 * var)

    def to_dict(self) -> dict[str, float]:
        return {
            "share_a": self.share_a,
            "mean_a": self.mean_a,
            "mean_b": self.mean_b,
            "gap": self.gap,
            "size": self.size,
        }


def pool_truth(in_a: BoolArray, x: FloatArray) -> PoolTruth:
    """Parameters of the finite pool (the truth the audit estimates)."""
    xa, xb = x[in_a], x[~in_a]
    return PoolTruth(
        share_a=float(in_a.mean()),
        mean_a=float(xa.mean()),
        mean_b=float(xb.mean()),
        var_a=float(xa.var()),
        var_b=float(xb.var()),
        size=len(x),
    )


def alternate_order(
    idx_a: npt.NDArray[np.int64], idx_b: npt.NDArray[np.int64], rng: np.random.Generator
) -> npt.NDArray[np.int64]:
    """Groups a and b alternately (a first), each in a random order without replacement; once
    the smaller group is used up, the rest of the larger one in random order."""
    pa = idx_a[rng.permutation(len(idx_a))]
    pb = idx_b[rng.permutation(len(idx_b))]
    m = min(len(pa), len(pb))
    both = np.empty(2 * m, dtype=np.int64)
    both[0::2], both[1::2] = pa[:m], pb[:m]
    return np.concatenate([both, pa[m:], pb[m:]])


def make_orders(
    n: int,
    budget: int,
    repeats: int,
    seed: int,
    in_a: BoolArray | None = None,
) -> npt.NDArray[np.int64]:
    """``repeats`` random orders without replacement of ``n`` items, first ``budget`` of each.

    With ``in_a`` the orders alternate the two groups (:func:`alternate_order`). Repeat ``i``
    depends only on ``seed`` and ``i`` (orders are drawn one after another from
    ``numpy.random.default_rng(seed)``), so results do not depend on how they are chunked.
    """
    rng = np.random.default_rng(seed)
    t = min(budget, n)
    out = np.empty((repeats, t), dtype=np.int64)
    if in_a is not None:
        ia, ib = np.flatnonzero(in_a), np.flatnonzero(~in_a)
        for i in range(repeats):
            out[i] = alternate_order(ia, ib, rng)[:t]
        return out
    for i in range(repeats):
        out[i] = rng.permutation(n)[:t]
    return out


def run_pool(
    pool: AuditPool,
    *,
    metric: str = "sp",
    budget: int = 4000,
    repeats: int = 200,
    seed: int = 0,
    progress: Callable[[int], None] | None = None,
    partial: list[RepeatedAudit] | None = None,
    **choice: Unpack[TestChoice],
) -> RepeatedAudit:
    """Audit ``pool`` over ``repeats`` random query orders (vectorised).

    Each order queries the (sub-)pool without replacement — in a random order, or alternating
    the groups for tests with ``sampling = "alternate"`` (the default test); the budget is capped
    at the size of the (sub-)pool (``budget_effective``). The test and its settings (``test``,
    ``tolerance``, ``access``, ``alpha``, ``beta``, ``test_options``) are the keywords of
    :class:`~fairprobe.sequential.base.TestChoice`; ``test`` defaults to the default test
    (``mixture``). ``progress`` is called with the number of orders done; with ``partial``
    (a list), the result of the orders done so far is appended to it before a
    ``KeyboardInterrupt`` propagates (Ctrl-C keeps what was computed).
    """
    owner = "run_pool"
    budget = check_budget(budget, owner)
    repeats = check_int(repeats, "repeats", owner, lo=1)
    seed = check_int(seed, "seed", owner, lo=0)
    t = choose_test(**choice)
    check_choice(metric, "metric", owner, METRICS)
    in_a, x = pool.observations(metric, t.access)
    t = t.for_pool(in_a, x)
    truth = pool_truth(in_a, x)
    if t.access == "logits" and t.sigmoid_logits:
        truth = pool_truth(in_a, 1.0 / (1.0 + np.exp(-x)))
    alternate = in_a if t.sampling == "alternate" else None
    orders = make_orders(len(x), budget, repeats, seed, in_a=alternate)
    tt = orders.shape[1]
    chunk = max(1, min(500, 2_000_000 // max(tt, 1)))
    queries = np.empty(repeats, dtype=np.int64)
    codes = np.empty(repeats, dtype=np.int8)
    info = truth.information(t)
    violation = truth.gap > t.tolerance
    bound = wald_lower_bound(t.alpha, t.beta, info, violation=violation)

    def result(done: int) -> RepeatedAudit:
        return RepeatedAudit(
            params=t.params(),
            metric=metric,
            group_names=pool.group_names,
            budget=budget,
            budget_effective=tt,
            repeats=done,
            seed=seed,
            queries=queries[:done].copy(),
            codes=codes[:done].copy(),
            truth=truth.to_dict(),
            wald_bound=bound,
            example=example,
        )

    example = t.run_path(in_a[orders[0]], x[orders[0]])
    done = 0
    try:
        for lo in range(0, repeats, chunk):
            idx = orders[lo : lo + chunk]
            res = t.run_orders(in_a[idx], x[idx])
            queries[lo : lo + chunk] = res.queries
            codes[lo : lo + chunk] = res.codes
            done = min(lo + chunk, repeats)
            if progress is not None:
                progress(done)
    except KeyboardInterrupt:
        if partial is not None and done > 0:
            partial.append(result(done))
        raise
    return result(repeats)
