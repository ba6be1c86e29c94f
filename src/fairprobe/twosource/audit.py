"""The two-source audit (Sections 3-5 of ``two-source-audits.md``): one engine, one result type.

:func:`run_two_source_audit` queries the audit API **A** and the user interface **B** of a platform
through two :class:`~fairprobe.access.BlackBox` objects (so every answer goes through the response
cache and nothing paid for is lost), pairs the answers through a proxy, and concludes ``fair``,
``unfair`` or ``manipulated``:

1. The budget ``t`` is split as in Section 5.3 (:func:`~fairprobe.twosource.theory.allocate`):
   ``t_fair`` records go to A, ``t_fraud`` of them are also sent (in their B form) to B.
   Records are drawn from the query pool without replacement, stratified by group (each group
   gets its proportional share and at least one query on each source).
2. Checks run in batches. After each batch the consistency detector (Lemma 2) compares the
   inconsistencies with ``n_max``; the audit stops as soon as they pass it (manipulation proved:
   the rest of the budget is not spent) or can no longer pass it (B is then no longer queried
   unless another detector needs B's answers).
3. The remaining A-only queries are sent; the disparate impact through A (all A answers, true
   groups) and through B with the proxy (B answers, proxy groups) are computed with Koopman
   score intervals, and every requested detector decides (Bonferroni: each at
   ``alpha / len(detectors)``).
4. Verdict: ``manipulated`` if any detector fires; otherwise the verdict of the DI through A as a
   :class:`~fairprobe.stats.finding.Finding` (``di_a.finding``): ``fair`` if its interval lies
   above the threshold, ``unfair`` if below, ``undetermined`` if it straddles it (the paper's
   rule compares the point estimate, Section 4.1).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from fairprobe._validation import check_int
from fairprobe.errors import (
    AccessError,
    BudgetError,
    DataError,
    FairprobeError,
    InvalidParameterError,
)
from fairprobe.stats.counts import CountsVector
from fairprobe.stats.metrics import disparate_impact_from_counts
from fairprobe.stats.result import MetricResult
from fairprobe.twosource.detectors import (
    ConditionalDetector,
    ConsistencyDetector,
    DetectorOutcome,
    PairedEvidence,
    make_detector,
)
from fairprobe.twosource.options import TwoSourceOptions, audit_options
from fairprobe.twosource.proxies import (
    Proxy,
    ProxyAccuracy,
    honest_consistency,
    resolve_inference,
    true_group_probabilities,
)
from fairprobe.twosource.theory import Allocation, allocate, n_max

__all__ = [
    "TwoSourceResult",
    "default_columns",
    "platform_blackboxes",
    "run_two_source_audit",
    "stratified_sample",
]

VERDICTS = ("fair", "unfair", "undetermined", "manipulated")


def a_route_finding(finding: Any, manipulated: bool) -> Any:
    """The DI-through-A finding of a two-source audit, with what its coverage rests on.

    Its interval covers the platform's DI only if A answered truthfully (no fairwashing that
    escaped the detectors): ``coverage="conditional"``. When a detector proved manipulation the
    answers of A are no evidence about the model: the finding is forced ``undetermined``.
    """
    import dataclasses

    if manipulated:
        return dataclasses.replace(
            finding, coverage="conditional", forced="undetermined",
            reason="the audit API A was found manipulated (a fairwashing detector fired): its "
            "answers are no evidence about the model's disparate impact",
        )  # fmt: skip
    return dataclasses.replace(finding, coverage="conditional")


def inference_note(proxy: Proxy, rule: Proxy) -> dict[str, Any]:
    """What the detectors' honest rates assume about B, as printed and in the JSON."""
    return {
        "rule": rule.describe(),
        "same_as_proxy": rule is proxy,
        "assumes": f"B infers the group with the {rule.name!r} rule; the detectors' false-alarm "
        "level holds only if it does (it cannot be checked from A and B alone: a mismatch is "
        "what a fairwashed A also shows)",
    }


def default_columns() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The platform server's audit-API and user-interface features (A side, B side)."""
    from fairprobe.platform.core import USER_FEATURES
    from fairprobe.platform.model import AUDIT_FEATURES

    return tuple(AUDIT_FEATURES), tuple(USER_FEATURES)


def platform_blackboxes(url: str, cache: Any = None, **blackbox_kwargs: Any) -> tuple[Any, Any]:
    """BlackBoxes for the two interfaces of a platform server at ``url`` (A, then B).

    ``cache`` (a path or :class:`~fairprobe.access.cache.ResponseCache`) is shared by both;
    ``blackbox_kwargs`` (``retries``, ``timeout``, ``budget``...) go to both BlackBoxes.
    """
    from fairprobe.access.blackbox import BlackBox
    from fairprobe.access.cache import ResponseCache
    from fairprobe.access.http import HttpJsonBackend

    if cache is not None and not isinstance(cache, ResponseCache):
        cache = ResponseCache(cache)
    api = BlackBox(HttpJsonBackend(url=url), cache=cache, **blackbox_kwargs)
    ui = BlackBox(HttpJsonBackend(url=url, path="/user/predict"), cache=cache, **blackbox_kwargs)
    return api, ui


def stratified_sample(
    groups: npt.ArrayLike, n: int, rng: np.random.Generator
) -> npt.NDArray[np.intp]:
    """``n`` distinct indices, each group getting its proportional share and at least one.

    Largest-remainder rounding of ``n * share``; within a group, a uniform draw without
    replacement. Returned in random order.
    """
    g = np.asarray(groups, dtype=object)
    labels, inv = np.unique(g.astype(str), return_inverse=True)
    sizes = np.bincount(inv, minlength=labels.size)
    if n < labels.size:
        raise BudgetError(f"{n} queries cannot cover the {labels.size} groups once each.")
    if n > g.size:
        raise BudgetError(f"The query pool holds {g.size} records; the plan needs {n} of them.")
    exact = n * sizes / sizes.sum()
    take = np.maximum(np.floor(exact).astype(int), 1)
    take = np.minimum(take, sizes)
    while take.sum() < n:  # largest remainder among groups with room left
        room = take < sizes
        rem = np.where(room, exact - take, -np.inf)
        take[int(np.argmax(rem))] += 1
    while take.sum() > n:
        over = np.where(take > 1, take - exact, -np.inf)
        take[int(np.argmax(over))] -= 1
    parts = [rng.choice(np.flatnonzero(inv == k), size=int(take[k]), replace=False)
             for k in range(labels.size)]  # fmt: skip
    out = np.concatenate(parts)
    rng.shuffle(out)
    return out.astype(np.intp)


@dataclass(frozen=True)
class TwoSourceResult:
    """Verdict and evidence of a two-source audit.

    Attributes
    ----------
    verdict : {"fair", "unfair", "undetermined", "manipulated"}
    di_a : MetricResult
        Disparate impact through A (all A answers, true groups), Koopman interval.
    di_b : MetricResult or None
        Disparate impact through B with the proxy's groups (``None`` without checks).
    detectors : tuple of DetectorOutcome
        Each detector's decision; ``consistency`` carries ``n_inconsistent``, ``n_max`` and the
        exact p-value.
    allocation : Allocation
        The planned split of the budget.
    n_checked : int
        Checks actually made (fewer than planned after an early stop).
    stop_reason : str
        ``"completed"``, ``"detected"`` (inconsistencies passed ``n_max``) or ``"cleared"``
        (they could no longer pass it).
    queries_a, queries_b : int
        Records asked of each source (paid plus answered from the cache).
    paid_a, paid_b : int
        Of those, the answers paid for in this run.
    unpaired : int
        Checks dropped because one of the two answers did not parse.
    """

    verdict: str
    threshold: float
    alpha: float
    alpha_per_detector: float
    di_a: MetricResult
    di_b: MetricResult | None
    detectors: tuple[DetectorOutcome, ...]
    allocation: Allocation
    n_checked: int
    stop_reason: str
    queries_a: int
    queries_b: int
    paid_a: int
    paid_b: int
    unpaired: int
    proxy: dict[str, Any]
    proxy_accuracy: ProxyAccuracy
    p_test: float
    null: str
    groups: tuple[str, str]
    seed: int
    checks_to_detection: int | None = None
    checks_path: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def stopped_early(self) -> bool:
        return self.stop_reason != "completed"

    def outcome(self, name: str) -> DetectorOutcome | None:
        """The outcome of detector ``name`` (``None`` if it did not run)."""
        return next((o for o in self.detectors if o.detector == name), None)

    @property
    def consistency(self) -> DetectorOutcome | None:
        return self.outcome("consistency")

    @property
    def detected_by(self) -> tuple[str, ...]:
        return tuple(o.detector for o in self.detectors if o.detected)

    def confidence_interval(self, confidence_level: float | None = None) -> Any:
        """Interval of the DI through A (a :class:`~fairprobe.stats.ConfidenceInterval`)."""
        return self.di_a.confidence_interval(confidence_level)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict; keys documented in ``docs/twosource.md``."""
        cons = self.consistency
        return {
            "verdict": self.verdict,
            "threshold": self.threshold,
            "alpha": self.alpha,
            "alpha_per_detector": self.alpha_per_detector,
            "groups": {"unprivileged": self.groups[0], "privileged": self.groups[1]},
            "di_a": self.di_a.to_dict(),
            "di_b_proxy": None if self.di_b is None else self.di_b.to_dict(),
            "detected_by": list(self.detected_by),
            "detectors": [o.to_dict() for o in self.detectors],
            "n_inconsistent": None if cons is None else cons.details["n_inconsistent"],
            "n_max": None if cons is None else cons.details["n_max"],
            "p_value": None if cons is None else cons.to_dict()["p_value"],
            "allocation": self.allocation.to_dict(),
            "n_checked": self.n_checked,
            "checks_to_detection": self.checks_to_detection,
            "checks_path": self.checks_path,
            "stop_reason": self.stop_reason,
            "queries": {
                "a": self.queries_a,
                "b": self.queries_b,
                "paid_a": self.paid_a,
                "paid_b": self.paid_b,
                "total": self.queries_a + self.queries_b,
            },
            "unpaired": self.unpaired,
            "proxy": {
                **self.proxy,
                "p_phi": self.proxy_accuracy.p_phi,
                "p_agree": self.proxy_accuracy.p_agree,
                "accuracy": self.proxy_accuracy.to_dict(),
            },
            "p_test": self.p_test,
            "null": self.null,
            "seed": self.seed,
            **self.extra,
        }

    def __str__(self) -> str:
        cons = self.consistency
        lines = [f"two-source audit: {self.verdict.upper()}"]
        if "regime" in self.extra:
            lines.append(
                f"  regime               : {self.extra['regime']} (estimate through "
                f"{self.extra.get('source_of_estimate', 'A')})"
            )
        corr = self.extra.get("di_b_corrected")
        if corr is not None:
            iv = corr["interval"]
            ivs = "undefined" if None in iv else f"[{iv[0]:.3f}, {iv[1]:.3f}]"
            est = "n/a" if corr["estimate"] is None else f"{corr['estimate']:.3f}"
            lines.append(
                f"  DI through B, corrected: {est} {ivs} ({corr['method']}, "
                f"{corr['confidence_level']:.0%}) -> {self.extra['finding']['verdict']}"
            )
        lines.append(f"  DI through A         : {self.di_a}")
        inf = self.extra.get("inference")
        if inf is not None:
            lines.append(f"  detectors' null      : holds only if B infers the group with the "
                         f"{inf['rule']['name']!r} rule")
        if self.di_b is not None:
            lines.append(f"  DI through B + proxy : {self.di_b}")
        if cons is not None:
            d = cons.details
            pv = cons.p_value
            lines.append(
                f"  consistency          : {d['n_inconsistent']} inconsistencies in "
                f"{d['n_checked']} checks (n_max {d['n_max']} of {d['n_planned']}, "
                f"honest rate {self.p_test:.3f}), p-value {pv if pv is None else f'{pv:.3g}'}"
                f"{' -> DETECTED' if cons.detected else ''}"
            )
        for o in self.detectors:
            if o.detector == "conditional" and "n_hits" in o.details:
                d = o.details
                pvs = "n/a" if o.p_value is None else f"{o.p_value:.3g}"
                lines.append(
                    f"  conditional          : {d['n_mismatch_on_hits']} decision mismatches on "
                    f"{d['n_hits']} sure proxy hits (honest <= "
                    f"{d['expected_if_honest_at_most']:.1f} expected), p-value {pvs}"
                    f"{' -> DETECTED' if o.detected else ''}"
                )
            elif o.detector != "consistency":
                z = "n/a" if o.statistic is None else f"{o.statistic:.2f}"
                pvs = "n/a" if o.p_value is None else f"{o.p_value:.3g}"
                lines.append(
                    f"  {o.detector:<21}: z {z}, p-value {pvs}"
                    f"{' -> DETECTED' if o.detected else ''}"
                )
        lines.append(
            f"  queries              : A {self.queries_a} (paid {self.paid_a}), "
            f"B {self.queries_b} (paid {self.paid_b}); stop: {self.stop_reason}"
        )
        return "\n".join(lines)


def source_columns(queries: pd.DataFrame, api_columns: Sequence[str] | None,
                   ui_columns: Sequence[str] | None, group_column: str,
                   proxy: Any) -> tuple[list[str], list[str]]:
    """The columns sent to A and to B (defaults: :func:`default_columns`), all present in the
    pool together with the group column and what the proxy reads."""
    dflt_a, dflt_b = default_columns()
    a_cols = list(dflt_a if api_columns is None else api_columns)
    b_cols = list(dflt_b if ui_columns is None else ui_columns)
    needed = sorted({*a_cols, *b_cols, group_column, *proxy.required_columns})
    missing = [c for c in needed if c not in queries.columns]
    if missing:
        raise DataError(f"The query pool lacks the column(s) {missing}.")
    return a_cols, b_cols


def two_groups(pool: pd.DataFrame, group_column: str, privileged: str,
               proxy: Any) -> tuple[npt.NDArray[np.object_], str]:
    """Each record's true group (as text) and the unprivileged label; the column must hold
    exactly two values including ``privileged``, both of which ``proxy`` can tell."""
    true_groups = pool[group_column].astype(str).to_numpy(dtype=object)
    labels = sorted(set(true_groups))
    if len(labels) != 2 or privileged not in labels:
        raise DataError(
            f"The group column {group_column!r} must hold exactly two values including the "
            f"privileged {privileged!r}. Got {labels}."
        )
    proxy.check_groups(labels)
    return true_groups, next(x for x in labels if x != privileged)


def _source_error(exc: FairprobeError, source: str) -> FairprobeError:
    msg = (
        f"source {source}: {str(exc).rstrip('.')}; answers paid for so far are in the cache, "
        "rerun with the same seed to resume."
    )
    try:
        new = type(exc)(msg)
    except TypeError:
        new = AccessError(msg)
    return new


def _ask(bb: Any, frame: pd.DataFrame, source: str) -> tuple[npt.NDArray[np.float64], int, int]:
    if frame.empty:
        return np.empty(0), 0, 0
    try:
        ans = bb.query(frame)
    except FairprobeError as exc:
        raise _source_error(exc, source) from exc
    if len(ans) != len(frame):
        raise DataError(
            f"source {source} returned {len(ans)} answers for {len(frame)} queries: the answers "
            "of A and B cannot be paired."
        )
    return np.asarray(ans.decisions, dtype=np.float64), int(ans.n_paid), int(ans.n_cached)


def _counts(groups: npt.NDArray[np.object_], decisions: npt.NDArray[np.float64],
            privileged: str) -> CountsVector:  # fmt: skip
    ok = ~np.isnan(decisions)
    g, d = groups[ok], decisions[ok]
    unpriv = g != privileged
    return CountsVector(
        int(d[unpriv].sum()), int(unpriv.sum()), int(d[~unpriv].sum()), int((~unpriv).sum())
    )


def run_two_source_audit(
    api: Any,
    ui: Any,
    queries: pd.DataFrame,
    proxy: Proxy,
    *,
    budget: int,
    options: TwoSourceOptions | None = None,
    **kwargs: Any,
) -> TwoSourceResult:
    r"""Run a two-source audit of a platform (Sections 3-5 of the two-source paper).

    Parameters
    ----------
    api, ui : fairprobe.access.BlackBox
        The audit API A (possibly fairwashed) and the user interface B (trusted). Any object with
        ``query(DataFrame) -> AnswerBatch`` works; BlackBox adds the cache, budget and retries.
    queries : pandas.DataFrame
        The pool of records the auditor may ask about, with both sides known: the A-side columns
        (including ``group_column``) and the B-side columns (e.g. ``first_name``). Rows are paired
        by position: row ``i`` is sent to A as ``queries[api_columns]`` and to B as
        ``queries[ui_columns]``.
    proxy : Proxy
        Links B to A (:mod:`fairprobe.twosource.proxies`); it reads its columns from the pool.
    budget : int
        Total queries ``t`` over both sources.
    options : TwoSourceOptions, optional
        What the audit asks and how it splits ``budget`` (group column and privileged value,
        columns sent to each source, ``alpha``, ``threshold``, ``null``, ``detectors``,
        ``beta`` or ``t_fraud``, ``batch_size``, ``early_stop``, ``seed``, ``inference``...;
        see :class:`~fairprobe.twosource.options.TwoSourceOptions`). ``null="agree"``
        (default) takes the honest inconsistency rate of Lemma 2 from
        :attr:`ProxyAccuracy.p_agree`, valid when the platform infers the group on B with the
        proxy's rule and its own coin; ``"accuracy"`` uses the paper's :math:`p_\phi`, which
        under-states honest inconsistencies of a randomised proxy (see ``docs/twosource.md``).
        The detectors' honest rates are the chances that ``inference`` (default: the proxy,
        Section 5.1's assumption; required with a
        :class:`~fairprobe.twosource.proxies.LearnedProxy`) misses the true group.
    **kwargs
        The fields of :class:`~fairprobe.twosource.options.TwoSourceOptions` as keywords (the
        compatibility form, e.g. ``beta=0.5, seed=3``); they override those of ``options``.

    Returns
    -------
    TwoSourceResult

    Raises
    ------
    DataError
        Missing columns, not exactly two groups, a proxy mapping to unknown groups, answers that
        cannot be paired.
    BudgetError
        A budget too small for one query per group per source (or a BlackBox budget exhausted).
    EndpointUnreachableError, AccessError
        A source failed (e.g. timed out) after its retries; what was paid is in the cache.
    """
    opts, _ = audit_options(options, kwargs, "run_two_source_audit")
    t = check_int(budget, "budget", opts.owner, lo=1)
    pool, cols, true_groups, groups = _prepare_pool(queries, proxy, opts)
    plan = _plan_checks(pool, proxy, true_groups, _allocation(t, opts), cols, opts)
    run = _cross_check(api, ui, plan, true_groups, cols, opts)
    if run.stop_reason == "detected":  # the A-only share is skipped once manipulation is proved
        a_rows_idx = plan.check_idx[: run.done]
        dec_a_all = run.dec_a[: run.done]
    else:
        pos = {c: i for i, c in enumerate(pool.columns)}
        only = pool.iloc[plan.only_idx, [pos[c] for c in cols[0]]]
        da, pa, _ = _ask(api, only, "A (audit API)")
        run.paid_a += pa
        a_rows_idx = np.concatenate([plan.check_idx, plan.only_idx])
        dec_a_all = np.concatenate([run.dec_a, da])
    return _two_source_result(plan, run, true_groups, groups, a_rows_idx, dec_a_all, proxy, opts)


def _prepare_pool(
    queries: pd.DataFrame, proxy: Proxy, opts: TwoSourceOptions
) -> tuple[pd.DataFrame, tuple[list[str], list[str]], npt.NDArray[Any], tuple[str, str]]:
    """The pool (positionally indexed), the columns sent to A and B, the true groups and the
    (unprivileged, privileged) pair; every check on the pool runs here."""
    owner, group_column = opts.owner, opts.group_column
    if not isinstance(proxy, Proxy):
        raise InvalidParameterError(
            f"The 'proxy' parameter of {owner} must be a fairprobe.twosource Proxy. Got "
            f"{type(proxy).__name__} instead."
        )
    if not isinstance(queries, pd.DataFrame):
        raise DataError(f"{owner} needs the query pool as a pandas DataFrame.")
    a_cols, b_cols = source_columns(queries, opts.api_columns, opts.ui_columns, group_column, proxy)
    if group_column not in a_cols:
        raise DataError(f"The group column {group_column!r} must be sent to A (api_columns).")
    pool = queries
    if not (
        isinstance(pool.index, pd.RangeIndex) and pool.index.start == 0 and pool.index.step == 1
    ):
        pool = queries.reset_index(drop=True)
    if pool[group_column].isna().any():
        raise DataError(f"The group column {group_column!r} has missing values.")
    true_groups, unprivileged = two_groups(pool, group_column, opts.privileged, proxy)
    return pool, (list(a_cols), list(b_cols)), true_groups, (unprivileged, opts.privileged)


def _allocation(t: int, opts: TwoSourceOptions) -> Allocation:
    """The split of ``t`` between A alone and the checks: ``t_fraud`` checks, or ``beta``."""
    if opts.t_fraud is None:
        alloc = allocate(t, opts.beta)
    else:
        k = check_int(opts.t_fraud, "t_fraud", opts.owner, lo=0, hi=t // 2)
        alloc = Allocation(t, t - k, k)
    need = 2  # one query per group at least
    if alloc.t_fair < need or alloc.t_fraud < need:
        raise BudgetError(
            f"A budget of {t} (t_fair={alloc.t_fair} on A, t_fraud={alloc.t_fraud} checks on B) "
            f"is too small for one query per group per source: need t_fair >= {need} and "
            f"t_fraud >= {need}; raise the budget or lower beta."
        )
    return alloc


@dataclass
class _CheckPlan:
    """Which records are checked (asked of A and B) and which go to A only, with the proxy's
    draws and the honest rates the detectors test against."""

    alloc: Allocation
    check_idx: npt.NDArray[np.int64]
    only_idx: npt.NDArray[np.int64]
    check_frame: pd.DataFrame
    proxy_groups: npt.NDArray[Any]
    p_true: npt.NDArray[np.float64]
    p_test: float
    accuracy: ProxyAccuracy
    rule: Proxy


def _plan_checks(pool: pd.DataFrame, proxy: Proxy, true_groups: npt.NDArray[Any],
                 alloc: Allocation, cols: tuple[list[str], list[str]],
                 opts: TwoSourceOptions) -> _CheckPlan:  # fmt: skip
    """Draw the sample, the checks among it and the proxy's groups of the checked records."""
    rule = resolve_inference(proxy, opts.inference, opts.owner)
    acc = proxy.accuracy(pool, true_groups) if opts.proxy_accuracy is None else opts.proxy_accuracy
    if opts.p_phi is not None:
        pp = opts.p_phi
    elif opts.null == "agree":
        pp = acc.p_agree if rule is proxy else honest_consistency(proxy, rule, pool, true_groups)
    else:
        pp = acc.p_phi
    ss = np.random.SeedSequence(opts.seed)
    rng_sample, rng_proxy = (np.random.default_rng(s) for s in ss.spawn(2))
    a_idx = stratified_sample(true_groups, alloc.t_fair, rng_sample)
    if alloc.t_fraud:
        pick = stratified_sample(true_groups[a_idx], alloc.t_fraud, rng_sample)
        check_idx = a_idx[pick]
        only_idx = np.setdiff1d(a_idx, check_idx, assume_unique=True)
        only_idx = a_idx[np.isin(a_idx, only_idx)]  # keep the random order
    else:
        check_idx, only_idx = a_idx[:0], a_idx
    proxy_seed = int(rng_proxy.integers(2**63 - 1))
    pos = {c: i for i, c in enumerate(pool.columns)}
    used = list(dict.fromkeys([*cols[0], *cols[1], opts.group_column, *proxy.required_columns,
                               *rule.required_columns]))  # fmt: skip
    check_frame = pool.iloc[check_idx, [pos[c] for c in used]]  # only the columns needed
    probs = proxy.probabilities(check_frame)
    proxy_groups = proxy.draw(probs, seed=proxy_seed)
    # P(B's inference = true group), per check: the conditional detector's honest rates are
    # 1 - p_true, whatever the auditor's proxy (it only picks which pairs enter)
    if rule is proxy:
        p_true = np.zeros(check_idx.size)
        for j, g in enumerate(proxy.groups):
            p_true = np.where(true_groups[check_idx] == g, probs[:, j], p_true)
    else:
        p_true = true_group_probabilities(rule, check_frame, true_groups[check_idx])
    return _CheckPlan(alloc, check_idx, only_idx, check_frame, proxy_groups, p_true, pp, acc, rule)


@dataclass
class _CheckRun:
    """The checks' answers so far and the state of the early stop."""

    dec_a: npt.NDArray[np.float64]
    dec_b: npt.NDArray[np.float64]
    alpha_cond_final: float
    alpha_cond_look: float
    paid_a: int = 0
    paid_b: int = 0
    done: int = 0
    status: str = "open"
    checks_to_detection: int | None = None
    query_b: bool = True
    stop_reason: str = "completed"


def _cross_check(api: Any, ui: Any, plan: _CheckPlan, true_groups: npt.NDArray[Any],
                 cols: tuple[list[str], list[str]], opts: TwoSourceOptions) -> _CheckRun:  # fmt: skip
    """Ask A and B the checked records in batches, with the early stop of Lemma 2."""
    n, bs = plan.check_idx.size, opts.batch_size
    alpha_each = opts.alpha_each
    # Early stop on the conditional test: alpha spending over the looks (interim looks share
    # half of its level, the final look keeps the other half) keeps its size at alpha_each.
    n_looks = -(-n // bs) if n else 0
    cond = ConditionalDetector() if "conditional" in opts.detectors else None
    cond_sequential = bool(opts.early_stop and cond is not None and n_looks > 1)
    run = _CheckRun(
        np.full(n, np.nan), np.full(n, np.nan),
        alpha_each / 2 if cond_sequential else alpha_each,
        alpha_each / (2 * (n_looks - 1)) if cond_sequential else 0.0,
    )  # fmt: skip
    with _Progress(opts.progress, n) as prog:
        while run.done < n:
            hi = min(run.done + bs, n)
            rows = plan.check_frame.iloc[run.done : hi]
            da, pa, _ = _ask(api, rows[cols[0]], "A (audit API)")
            run.dec_a[run.done : hi] = da
            run.paid_a += pa
            if run.query_b:
                db, pb, _ = _ask(ui, rows[cols[1]], "B (user interface)")
                run.dec_b[run.done : hi] = db
                run.paid_b += pb
            run.done = hi
            prog.advance(hi)
            if cond_sequential and hi < n and run.query_b:
                assert cond is not None
                if _conditional_look(cond, plan, run, true_groups) < run.alpha_cond_look:
                    run.status = "detected"
                    run.checks_to_detection = hi
                    break
            if "consistency" in opts.detectors and run.query_b and _consistency_look(
                plan, run, true_groups, opts
            ):
                break
    if opts.early_stop and run.status == "detected" and run.done < n:
        run.stop_reason = "detected"
    elif opts.early_stop and not run.query_b:
        run.stop_reason = "cleared"
    return run


def _conditional_look(cond: ConditionalDetector, plan: _CheckPlan, run: _CheckRun,
                      true_groups: npt.NDArray[Any]) -> float:  # fmt: skip
    """The conditional test's p-value on the pairs so far (an interim look)."""
    d = run.done
    okc = ~np.isnan(run.dec_a[:d]) & ~np.isnan(run.dec_b[:d])
    _, _, _, p_look = cond.test(
        true_groups[plan.check_idx[:d]][okc], run.dec_a[:d][okc],
        plan.proxy_groups[:d][okc], run.dec_b[:d][okc], plan.p_true[:d][okc],
    )  # fmt: skip
    return float(p_look)


def _consistency_look(plan: _CheckPlan, run: _CheckRun, true_groups: npt.NDArray[Any],
                      opts: TwoSourceOptions) -> bool:  # fmt: skip
    """Update the consistency test's status after a batch; true when the checks stop."""
    d, n = run.done, plan.check_idx.size
    ok = ~np.isnan(run.dec_a[:d]) & ~np.isnan(run.dec_b[:d])
    inc = ok & (
        (plan.proxy_groups[:d] != true_groups[plan.check_idx[:d]])
        | (run.dec_b[:d] != run.dec_a[:d])
    )
    usable_left = int(ok.sum()) + (n - d)
    threshold_n = n_max(usable_left, plan.p_test, opts.alpha_each)
    run.status = ConsistencyDetector.status(int(inc.sum()), int(ok.sum()), usable_left, threshold_n)
    if run.status == "detected" and run.checks_to_detection is None:
        run.checks_to_detection = d
    if opts.early_stop and run.status == "detected":
        return True
    if opts.early_stop and run.status == "cleared" and opts.detectors == ("consistency",):
        run.query_b = False  # B's answers can no longer change anything
    return False


def _two_source_result(plan: _CheckPlan, run: _CheckRun, true_groups: npt.NDArray[Any],
                       groups: tuple[str, str], a_rows_idx: npt.NDArray[np.int64],
                       dec_a_all: npt.NDArray[np.float64], proxy: Proxy,
                       opts: TwoSourceOptions) -> TwoSourceResult:  # fmt: skip
    """The evidence of both sources, the detectors' outcomes and the verdict."""
    privileged, th, a_lvl = opts.privileged, opts.threshold, opts.alpha
    dec_a_chk, dec_b_chk, check_idx = run.dec_a, run.dec_b, plan.check_idx
    b_done = (run.done if run.query_b
              else int(np.flatnonzero(~np.isnan(dec_b_chk)).max(initial=-1) + 1))  # fmt: skip
    counts_a = _counts(true_groups[a_rows_idx], dec_a_all, privileged)
    if counts_a.A == 0 or counts_a.B == 0:
        raise DataError(
            "No parsed answer from A for one of the groups: the disparate impact is undefined."
        )
    di_a = disparate_impact_from_counts(
        counts_a, threshold=min(th, 1.0), confidence_level=1 - a_lvl, groups=groups,
    )  # fmt: skip
    ok_pairs = ~np.isnan(dec_a_chk[:b_done]) & ~np.isnan(dec_b_chk[:b_done])
    unpaired = int(b_done - ok_pairs.sum())
    if b_done and not ok_pairs.any():
        raise DataError(
            f"None of the {b_done} checks could be paired: every pair lacks a parsed answer from "
            "A or B. Check the sources' answer format."
        )
    counts_b = _counts(plan.proxy_groups[:b_done], dec_b_chk[:b_done], privileged)
    di_b = None
    if counts_b.A and counts_b.B:
        di_b = disparate_impact_from_counts(
            counts_b, threshold=min(th, 1.0), confidence_level=1 - a_lvl, groups=groups,
        )  # fmt: skip
    sel = np.flatnonzero(ok_pairs)
    ev = PairedEvidence(
        check_group_a=true_groups[check_idx[sel]], check_decision_a=dec_a_chk[sel],
        check_group_proxy=plan.proxy_groups[sel], check_decision_proxy=dec_b_chk[sel],
        counts_a=counts_a, counts_b=counts_b, p_phi=plan.p_test,
        n_planned_checks=plan.alloc.t_fraud - unpaired, check_p_true=plan.p_true[sel],
    )  # fmt: skip
    outcomes = tuple(
        make_detector(d).decide(ev, run.alpha_cond_final if d == "conditional" else opts.alpha_each)
        for d in opts.detectors
    )
    checks_path = _checks_path(
        dec_a_chk[:b_done], dec_b_chk[:b_done], plan.proxy_groups[:b_done],
        true_groups[check_idx[:b_done]], check_idx.size, opts.batch_size, plan.p_test,
        opts.alpha_each,
    )  # fmt: skip
    finding = a_route_finding(di_a.finding, any(o.detected for o in outcomes))
    verdict = "manipulated" if any(o.detected for o in outcomes) else finding.verdict
    return TwoSourceResult(
        verdict=verdict, threshold=th, alpha=a_lvl, alpha_per_detector=opts.alpha_each,
        di_a=di_a, di_b=di_b, detectors=outcomes, allocation=plan.alloc,
        n_checked=int(ok_pairs.sum()), stop_reason=run.stop_reason,
        queries_a=int(a_rows_idx.size), queries_b=b_done, paid_a=run.paid_a, paid_b=run.paid_b,
        unpaired=unpaired, proxy=proxy.describe(), proxy_accuracy=plan.accuracy,
        p_test=plan.p_test, null=opts.null if opts.p_phi is None else "given", groups=groups,
        seed=opts.seed, checks_to_detection=run.checks_to_detection, checks_path=checks_path,
        extra={"source_of_estimate": "A", "finding": finding.to_dict(),
               "inference": inference_note(proxy, plan.rule)},
    )  # fmt: skip


def _checks_path(
    dec_a: npt.NDArray[np.float64],
    dec_b: npt.NDArray[np.float64],
    proxy_groups: npt.NDArray[Any],
    true_groups: npt.NDArray[Any],
    planned: int,
    batch: int,
    p_test: float,
    alpha_each: float,
) -> dict[str, Any]:
    """Inconsistencies against ``n_max`` after each batch of checks (the figure's data).

    At a look after ``k`` checks, ``n_max`` is Lemma 2's threshold for the checks still usable
    (paired so far plus those not yet made), as the early stop uses it.
    """
    from fairprobe.twosource.theory import _n_max_vec

    ok = ~np.isnan(dec_a) & ~np.isnan(dec_b)
    inc = ok & ((proxy_groups != true_groups) | (dec_b != dec_a))
    k = np.unique(np.append(np.arange(batch, dec_a.size + 1, batch), dec_a.size))
    k = k[k > 0]
    cum_ok = np.cumsum(ok)[k - 1] if k.size else np.empty(0, dtype=np.int64)
    cum_inc = np.cumsum(inc)[k - 1] if k.size else np.empty(0, dtype=np.int64)
    usable = cum_ok + (planned - k)
    nmax = _n_max_vec(usable.astype(np.int64), p_test, alpha_each)
    return {
        "checks": k.tolist(),
        "paired": cum_ok.astype(int).tolist(),
        "inconsistencies": cum_inc.astype(int).tolist(),
        "n_max": nmax.astype(int).tolist(),
        "planned": int(planned),
    }


class _Progress:
    """A rich progress bar over the checks (no-op when disabled)."""

    def __init__(self, enabled: bool, total: int) -> None:
        self.enabled = enabled and total > 0
        self.total = total
        self._bar: Any = None
        self._task: Any = None

    def __enter__(self) -> _Progress:
        if self.enabled:
            from rich.progress import Progress

            self._bar = Progress(transient=True)
            self._bar.__enter__()
            self._task = self._bar.add_task("cross-checking A against B", total=self.total)
        return self

    def advance(self, done: int) -> None:
        if self._bar is not None:
            self._bar.update(self._task, completed=done)

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.__exit__(None, None, None)
