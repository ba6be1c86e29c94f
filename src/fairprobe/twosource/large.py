"""The large-budget regime as an audit (Appendix B), and the budget-driven dispatcher.

:func:`run_large_regime_audit`: the disparate impact is estimated from the user interface B
(never fairwashed), corrected for the proxy's misclassification
(:mod:`fairprobe.twosource.correction`); A is asked only for checks, each on a record already
asked of B. The verdict: ``manipulated`` if a detector fires, else the verdict of the corrected
estimate's interval against the 80% rule (:func:`~fairprobe.stats.finding.decide`:
``fair`` / ``unfair`` / ``undetermined``). A fairwashed A cannot move that verdict.

:func:`run_budgeted_audit` follows the plan's regime (:func:`~fairprobe.twosource.budget.plan_budget`):
below ``t_A`` it refuses (:class:`~fairprobe.errors.BudgetError` saying why), between ``t_A`` and
``t_B`` it runs the paper's split (:func:`~fairprobe.twosource.audit.run_two_source_audit` with
the recommended ``t_fraud``; verdict from A), above ``t_B`` the large regime.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from fairprobe._validation import check_choice, check_int
from fairprobe.errors import BudgetError, DataError
from fairprobe.stats.metrics import disparate_impact_from_counts
from fairprobe.twosource.audit import (
    TwoSourceResult,
    _ask,
    _counts,
    inference_note,
    source_columns,
    two_groups,
)
from fairprobe.twosource.bandit import BudgetPolicy, FixedSplit, PolicyState, ThompsonSplit
from fairprobe.twosource.correction import (
    CorrectedDI,
    double_sampling_cells,
    double_sampling_di,
    matrix_corrected_di,
)
from fairprobe.twosource.detectors import PairedEvidence, make_detector
from fairprobe.twosource.options import LargeRegimeOptions, TwoSourceOptions, audit_options
from fairprobe.twosource.proxies import (
    Proxy,
    ProxyAccuracy,
    honest_consistency,
    resolve_inference,
    true_group_probabilities,
)
from fairprobe.twosource.theory import Allocation, flip_fraction, gamma_max

__all__ = ["B_GROUPS", "run_budgeted_audit", "run_large_regime_audit", "thompson_for"]

#: Which B records' true groups the correction may use: the checked ones, or all of them.
B_GROUPS = ("checks", "known")


def per_group_accuracy(
    acc: ProxyAccuracy, unprivileged: str, privileged: str
) -> tuple[float, float]:
    """``P(proxy = g | g)`` for the unprivileged and the privileged group, from the confusion."""
    out = []
    for g in (unprivileged, privileged):
        i = acc.groups.index(g)
        row = acc.confusion[i]
        out.append(float(row[i] / sum(row)) if sum(row) else float("nan"))
    return out[0], out[1]


def thompson_for(
    p_test: float, rates: tuple[float, float, float], *, seed: int = 0, m0: int = 25,
    batch: int = 25, threshold: float = 0.8,
) -> ThompsonSplit:  # fmt: skip
    """A :class:`ThompsonSplit` tuned to the platform's planning rates.

    ``q0 = 1 - p_test``; ``q1 = q0 + f (2 p_test - 1)`` with ``f`` the share of A's answers that
    positive discrimination must flip to bring A to the 80% line (Lemma 1 corrected, margin 0).
    """
    ru, rp, pu = rates
    g = gamma_max(ru, rp, 0.0, threshold=threshold)
    f = float(flip_fraction(1.0 if not np.isfinite(g) else min(g, 1.0), ru, rp, pu))
    q0 = 1.0 - p_test
    return ThompsonSplit(q0, min(1.0, q0 + f * (2 * p_test - 1)), m0=m0, batch=batch, seed=seed)


def run_large_regime_audit(
    api: Any,
    ui: Any,
    queries: pd.DataFrame,
    proxy: Proxy,
    *,
    budget: int,
    options: TwoSourceOptions | None = None,
    large: LargeRegimeOptions | None = None,
    **kwargs: Any,
) -> TwoSourceResult:
    r"""The large-regime audit: DI from B corrected for the proxy, A only for checks.

    Parameters
    ----------
    api, ui, queries, proxy
        As in :func:`~fairprobe.twosource.audit.run_two_source_audit`.
    budget : int
        Total queries: B queries plus checks (A queries on records already asked of B).
    options : TwoSourceOptions, optional
        The audit's question (group column, privileged value, columns, ``alpha``,
        ``threshold``, ``null``, ``proxy_accuracy``, ``detectors``, ``seed``, ``inference``), as
        in :func:`~fairprobe.twosource.audit.run_two_source_audit`; the split fields (``beta``,
        ``t_fraud``, ``batch_size``...) are not used.
    large : LargeRegimeOptions, optional
        ``n_checks`` (checks of the fixed split, default ``budget // 2``), ``policy``
        (:class:`~fairprobe.twosource.bandit.FixedSplit` or
        :class:`~fairprobe.twosource.bandit.ThompsonSplit`), ``b_groups`` (which B records the
        correction treats as validated: the checked ones, or all of them, ``"known"``: the
        estimate is then the plain ratio by true group), ``confusion`` (given per-group
        accuracies :math:`P(\hat g = g \mid g)`: the matrix method, valid only for errors
        independent of the decision) and ``confusion_sizes`` (records each was measured on).
    **kwargs
        The fields of both objects as keywords (the compatibility form).

    Returns
    -------
    TwoSourceResult
        ``di_a``: DI through A on the checked records; ``di_b``: the uncorrected DI through B
        and the proxy; ``extra`` holds ``regime``, ``di_b_corrected`` and ``finding``.
    """
    opts, lg = audit_options(options, kwargs, "run_large_regime_audit", large, with_large=True)
    owner = opts.owner
    t = check_int(budget, "budget", owner, lo=4)
    policy = lg.policy
    if policy is None:
        k = t // 2 if lg.n_checks is None else check_int(lg.n_checks, "n_checks", owner, lo=1,
                                                         hi=t // 2)  # fmt: skip
        policy = FixedSplit(k)
    cols = source_columns(queries, opts.api_columns, opts.ui_columns, opts.group_column, proxy)
    pool = queries.reset_index(drop=True)
    true_groups, unprivileged = two_groups(pool, opts.group_column, opts.privileged, proxy)
    if t > pool.shape[0]:
        raise BudgetError(f"The query pool holds {pool.shape[0]} records; the budget is {t}.")
    draw = _large_draw(pool, proxy, true_groups, t, opts)
    bought = _buy(api, ui, pool, policy, draw, true_groups, (list(cols[0]), list(cols[1])), t)
    groups = (unprivileged, opts.privileged)
    idx = draw.order[: bought.n_b]
    gt, gp, db = true_groups[idx], draw.draws[: bought.n_b], bought.dec_b[: bought.n_b]
    corrected = _corrected_di(gt, gp, db, bought.n_chk, lg, groups, opts)
    return _large_result(draw, bought, (gt, gp, db), corrected, policy, lg, groups, proxy, t, opts)


@dataclass
class _LargeDraw:
    """The order B records are bought in, the auditor's proxy group of each and the honest
    rates of the detectors."""

    order: npt.NDArray[np.int64]
    draws: npt.NDArray[Any]
    p_true: npt.NDArray[np.float64]
    p_test: float
    accuracy: ProxyAccuracy
    rule: Proxy


def _large_draw(pool: pd.DataFrame, proxy: Proxy, true_groups: npt.NDArray[Any], t: int,
                opts: TwoSourceOptions) -> _LargeDraw:  # fmt: skip
    rule = resolve_inference(proxy, opts.inference, opts.owner)
    acc = proxy.accuracy(pool, true_groups) if opts.proxy_accuracy is None else opts.proxy_accuracy
    if opts.null == "agree":
        pp = acc.p_agree if rule is proxy else honest_consistency(proxy, rule, pool, true_groups)
    else:
        pp = acc.p_phi
    ss = np.random.SeedSequence(opts.seed)
    rng_sample, rng_proxy = (np.random.default_rng(s) for s in ss.spawn(2))
    order = rng_sample.permutation(pool.shape[0])  # B records in the order they are bought
    proxy_seed = int(rng_proxy.integers(2**63 - 1))
    probs = proxy.probabilities(pool.iloc[order[:t]])
    draws = proxy.draw(probs, seed=proxy_seed)  # the auditor's proxy group of each B record
    if rule is proxy:  # P(B's inference = true group): the conditional detector's null
        p_true = np.zeros(t)
        for j, g in enumerate(proxy.groups):
            p_true = np.where(true_groups[order[:t]] == g, probs[:, j], p_true)
    else:
        p_true = true_group_probabilities(rule, pool.iloc[order[:t]], true_groups[order[:t]])
    return _LargeDraw(order, draws, p_true, pp, acc, rule)


@dataclass
class _Bought:
    """What the policy bought: B's and A's answers, the counts and what was paid."""

    dec_b: npt.NDArray[np.float64]
    dec_a: npt.NDArray[np.float64]
    n_b: int = 0
    n_chk: int = 0
    n_inc: int = 0
    paid_a: int = 0
    paid_b: int = 0


def _buy(api: Any, ui: Any, pool: pd.DataFrame, policy: BudgetPolicy, draw: _LargeDraw,
         true_groups: npt.NDArray[Any], cols: tuple[list[str], list[str]], t: int
         ) -> _Bought:  # fmt: skip
    """Spend ``t`` queries as ``policy`` says: B records, or checks of records bought of B."""
    order, draws = draw.order, draw.draws
    b = _Bought(np.full(t, np.nan), np.full(t, np.nan))
    left = t
    while left > 0:
        arm, k = policy.next_action(PolicyState(left, b.n_b, b.n_chk, b.n_inc))
        k = max(1, min(int(k), left))
        if arm == "check":
            k = min(k, b.n_b - b.n_chk)
            if k <= 0:
                arm, k = "b", 1
        if arm == "b":
            rows = pool.iloc[order[b.n_b : b.n_b + k]]
            ans, pb, _ = _ask(ui, rows[cols[1]], "B (user interface)")
            b.dec_b[b.n_b : b.n_b + k] = ans
            b.paid_b += pb
            b.n_b += k
        else:
            rows = pool.iloc[order[b.n_chk : b.n_chk + k]]
            ans, pa, _ = _ask(api, rows[cols[0]], "A (audit API)")
            b.dec_a[b.n_chk : b.n_chk + k] = ans
            b.paid_a += pa
            sl = slice(b.n_chk, b.n_chk + k)
            ok = ~np.isnan(ans) & ~np.isnan(b.dec_b[sl])
            inc = ok & ((draws[sl] != true_groups[order[sl]]) | (b.dec_b[sl] != ans))
            b.n_inc += int(inc.sum())
            b.n_chk += k
        left -= k
    return b


def _corrected_di(gt: npt.NDArray[Any], gp: npt.NDArray[Any], db: npt.NDArray[np.float64],
                  n_chk: int, lg: LargeRegimeOptions, groups: tuple[str, str],
                  opts: TwoSourceOptions) -> CorrectedDI:  # fmt: skip
    """The DI through B corrected for the proxy: double sampling, or the matrix method."""
    n_b, privileged = gt.size, opts.privileged
    a_lvl, th = opts.alpha, opts.threshold
    if lg.confusion is not None:
        obs, _ = double_sampling_cells(gt, gp, db, np.zeros(n_b, dtype=bool), privileged)
        return matrix_corrected_di(
            obs, lg.confusion, calibration_sizes=lg.confusion_sizes, confidence_level=1 - a_lvl,
            threshold=th, groups=groups,
        )  # fmt: skip
    chk = np.zeros(n_b, dtype=bool)
    chk[:n_chk] = True
    validated = np.ones(n_b, dtype=bool) if lg.b_groups == "known" else chk
    u, v = double_sampling_cells(gt, gp, db, validated, privileged)
    if v.sum() == 0:
        raise BudgetError(
            "The large-regime audit made no check, so no B record is validated and the "
            "proxy's confusion rates cannot be estimated; raise the budget or pass "
            "b_groups='known' / given confusion rates."
        )
    return double_sampling_di(u, v, confidence_level=1 - a_lvl, threshold=th, groups=groups)


def _large_result(draw: _LargeDraw, b: _Bought, answers: tuple[Any, Any, Any],
                  corrected: CorrectedDI, policy: BudgetPolicy, lg: LargeRegimeOptions,
                  groups: tuple[str, str], proxy: Proxy, t: int,
                  opts: TwoSourceOptions) -> TwoSourceResult:  # fmt: skip
    """The detectors on the checks, and the verdict from the corrected DI through B."""
    gt, gp, db = answers
    (unprivileged, privileged), n_chk = groups, b.n_chk
    a_lvl, th = opts.alpha, opts.threshold
    finding = corrected.finding()
    okp = ~np.isnan(b.dec_a[:n_chk]) & ~np.isnan(db[:n_chk])
    sel = np.flatnonzero(okp)
    counts_a = _counts(gt[:n_chk], b.dec_a[:n_chk], privileged)
    counts_b = _counts(gp, db, privileged)
    if counts_a.A == 0 or counts_a.B == 0:
        raise DataError("The checks hold no parsed A answer for one of the groups.")
    di_a = disparate_impact_from_counts(counts_a, threshold=min(th, 1.0),
                                        confidence_level=1 - a_lvl, groups=groups)  # fmt: skip
    di_b = None
    if counts_b.A and counts_b.B:
        di_b = disparate_impact_from_counts(counts_b, threshold=min(th, 1.0),
                                            confidence_level=1 - a_lvl, groups=groups)  # fmt: skip
    ev = PairedEvidence(
        check_group_a=gt[sel], check_decision_a=b.dec_a[sel], check_group_proxy=gp[sel],
        check_decision_proxy=db[sel], counts_a=counts_a, counts_b=counts_b, p_phi=draw.p_test,
        n_planned_checks=int(sel.size), check_p_true=draw.p_true[sel],
    )  # fmt: skip
    outcomes = tuple(make_detector(d).decide(ev, opts.alpha_each) for d in opts.detectors)
    verdict = "manipulated" if any(o.detected for o in outcomes) else finding.verdict
    au, ap = per_group_accuracy(draw.accuracy, unprivileged, privileged)
    extra = {
        "inference": inference_note(proxy, draw.rule),
        "regime": "large",
        "source_of_estimate": "B",
        "di_b_corrected": corrected.to_dict(),
        "finding": finding.to_dict(),
        "policy": policy.describe(),
        "b_groups": lg.b_groups if lg.confusion is None else "given-confusion",
        "proxy_accuracy_by_group": {unprivileged: au, privileged: ap},
        "large": {"n_b": b.n_b, "n_checks": n_chk, "n_inconsistent": b.n_inc},
    }
    return TwoSourceResult(
        verdict=verdict, threshold=th, alpha=a_lvl, alpha_per_detector=opts.alpha_each,
        di_a=di_a, di_b=di_b, detectors=outcomes, allocation=Allocation(t, b.n_b, n_chk),
        n_checked=int(sel.size), stop_reason="completed", queries_a=n_chk, queries_b=b.n_b,
        paid_a=b.paid_a, paid_b=b.paid_b, unpaired=int(n_chk - sel.size),
        proxy=proxy.describe(), proxy_accuracy=draw.accuracy, p_test=draw.p_test,
        null=opts.null, groups=groups, seed=opts.seed, extra=extra,
    )  # fmt: skip


def run_budgeted_audit(
    api: Any,
    ui: Any,
    queries: pd.DataFrame,
    proxy: Proxy,
    *,
    budget: int,
    epsilon: float,
    rates: tuple[float, float] = (0.1205, 0.4686),
    policy: str = "fixed",
    b_groups: str = "checks",
    options: TwoSourceOptions | None = None,
    **kwargs: Any,
) -> TwoSourceResult:
    """Follow the regime of ``budget`` for a DI margin ``epsilon`` (module docstring).

    ``rates``: the planning positive rates (unprivileged, privileged) — an assumption made
    before any query (default: the fairprobe platform's); the group shares and the proxy's
    per-group accuracies are measured on the pool. ``policy``: ``"fixed"`` or ``"thompson"``
    (large regime only); ``b_groups`` as in :func:`run_large_regime_audit`. ``options`` (or
    its fields as keywords, the compatibility form) is the audit's question, as in
    :func:`~fairprobe.twosource.audit.run_two_source_audit`; in the pareto regime its columns
    and batch size go to that audit, in the large regime its columns.
    """
    from fairprobe.twosource.audit import run_two_source_audit
    from fairprobe.twosource.budget import plan_budget

    owner = "run_budgeted_audit"
    check_choice(policy, "policy", owner, ["fixed", "thompson"])
    opts, lg = audit_options(options, kwargs, owner, LargeRegimeOptions(b_groups=b_groups))
    pool = queries.reset_index(drop=True)
    if opts.group_column not in pool.columns:
        raise DataError(f"The query pool lacks the group column {opts.group_column!r}.")
    true_groups, unprivileged = two_groups(pool, opts.group_column, opts.privileged, proxy)
    acc = proxy.accuracy(pool, true_groups) if opts.proxy_accuracy is None else opts.proxy_accuracy
    opts = replace(opts, proxy_accuracy=acc)
    au, ap = per_group_accuracy(acc, unprivileged, opts.privileged)
    share_u = float(np.mean(true_groups == unprivileged))
    plan = plan_budget(
        budget, epsilon, acc.p_phi, rates[0], rates[1], share_u, alpha=opts.alpha, gamma=None,
        threshold=opts.threshold, accuracy_unprivileged=au, accuracy_privileged=ap,
    )  # fmt: skip
    rec = plan.recommended
    if plan.regime == "pareto":
        res = run_two_source_audit(
            api, ui, pool, proxy, budget=budget,
            options=replace(opts, t_fraud=max(int(rec["t_fraud"]), 2)),
        )  # fmt: skip
    else:
        pol: BudgetPolicy
        if policy == "thompson":
            rule = resolve_inference(proxy, opts.inference, owner)
            if opts.null == "agree":
                pp = (acc.p_agree if rule is proxy
                      else honest_consistency(proxy, rule, pool, true_groups))  # fmt: skip
            else:
                pp = acc.p_phi
            pol = thompson_for(pp, (rates[0], rates[1], share_u), seed=opts.seed,
                               threshold=opts.threshold)  # fmt: skip
        else:
            pol = FixedSplit(int(rec["t_fraud"]))
        # the large regime reads the question and the columns only (its own split)
        large_opts = replace(opts, t_fraud=None, p_phi=None)
        res = run_large_regime_audit(
            api, ui, pool, proxy, budget=budget, options=large_opts,
            large=replace(lg, policy=pol),
        )  # fmt: skip
    res.extra["regime"] = plan.regime
    res.extra["plan"] = plan.to_dict()
    return res
