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

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from fairprobe._validation import check_choice, check_int, check_real
from fairprobe.errors import BudgetError, DataError, InvalidParameterError
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
from fairprobe.twosource.detectors import DETECTORS, PairedEvidence, make_detector
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
    n_checks: int | None = None,
    policy: BudgetPolicy | None = None,
    b_groups: str = "checks",
    confusion: tuple[float, float] | None = None,
    confusion_sizes: tuple[int, int] | None = None,
    group_column: str = "sex",
    privileged: str = "Male",
    api_columns: Sequence[str] | None = None,
    ui_columns: Sequence[str] | None = None,
    alpha: float = 0.05,
    threshold: float = 0.8,
    null: str = "agree",
    proxy_accuracy: ProxyAccuracy | None = None,
    detectors: Sequence[str] = ("conditional", "consistency", "di"),
    seed: int = 0,
    inference: Proxy | None = None,
) -> TwoSourceResult:
    r"""The large-regime audit: DI from B corrected for the proxy, A only for checks.

    Parameters
    ----------
    api, ui, queries, proxy, group_column, privileged, api_columns, ui_columns, alpha,
    threshold, null, proxy_accuracy, detectors, seed, inference
        As in :func:`~fairprobe.twosource.audit.run_two_source_audit`.
    budget : int
        Total queries: B queries plus checks (A queries on records already asked of B).
    n_checks : int, optional
        Checks of the fixed split (default ``budget // 2``, every B record checked). Ignored
        when ``policy`` is given.
    policy : BudgetPolicy, optional
        :class:`~fairprobe.twosource.bandit.FixedSplit` (default) or
        :class:`~fairprobe.twosource.bandit.ThompsonSplit`.
    b_groups : {"checks", "known"}
        Which B records the correction treats as validated (true group known): the checked ones
        (default: the other B records are grouped by the proxy only), or all of them (the
        auditor knows the group of every record she sends to B; the estimate is then the
        plain ratio by true group).
    confusion : (float, float), optional
        Given per-group accuracies :math:`P(\hat g = g \mid g)` (unprivileged, privileged): the
        matrix method, valid only for errors independent of the decision; ``confusion_sizes``
        (records each was measured on) carries their uncertainty into the interval.

    Returns
    -------
    TwoSourceResult
        ``di_a``: DI through A on the checked records; ``di_b``: the uncorrected DI through B
        and the proxy; ``extra`` holds ``regime``, ``di_b_corrected`` and ``finding``.
    """
    owner = "run_large_regime_audit"
    t = check_int(budget, "budget", owner, lo=4)
    a_lvl = check_real(alpha, "alpha", owner, lo=0.0, hi=1.0, closed="neither")
    th = check_real(threshold, "threshold", owner, lo=0.0, closed="neither")
    seed = check_int(seed, "seed", owner, lo=0)
    check_choice(b_groups, "b_groups", owner, list(B_GROUPS))
    check_choice(null, "null", owner, ("agree", "accuracy"))
    dets = tuple(detectors)
    if not dets:
        raise InvalidParameterError(
            f"The 'detectors' parameter of {owner} names no detector; give at least one of "
            f"{', '.join(DETECTORS)}."
        )
    for d in dets:
        check_choice(d, "detectors", owner, list(DETECTORS))
    if policy is None:
        k = t // 2 if n_checks is None else check_int(n_checks, "n_checks", owner, lo=1, hi=t // 2)
        policy = FixedSplit(k)
    a_cols, b_cols = source_columns(queries, api_columns, ui_columns, group_column, proxy)
    pool = queries.reset_index(drop=True)
    true_groups, unprivileged = two_groups(pool, group_column, privileged, proxy)
    if t > pool.shape[0]:
        raise BudgetError(f"The query pool holds {pool.shape[0]} records; the budget is {t}.")
    rule = resolve_inference(proxy, inference, owner)
    acc = proxy.accuracy(pool, true_groups) if proxy_accuracy is None else proxy_accuracy
    if null == "agree":
        pp = acc.p_agree if rule is proxy else honest_consistency(proxy, rule, pool, true_groups)
    else:
        pp = acc.p_phi
    alpha_each = a_lvl / len(dets)

    ss = np.random.SeedSequence(seed)
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

    dec_b = np.full(t, np.nan)
    dec_a = np.full(t, np.nan)
    n_b = n_chk = n_inc = 0
    paid_a = paid_b = 0
    left = t
    while left > 0:
        arm, k = policy.next_action(PolicyState(left, n_b, n_chk, n_inc))
        k = max(1, min(int(k), left))
        if arm == "check":
            k = min(k, n_b - n_chk)
            if k <= 0:
                arm, k = "b", 1
        if arm == "b":
            rows = pool.iloc[order[n_b : n_b + k]]
            ans, pb, _ = _ask(ui, rows[b_cols], "B (user interface)")
            dec_b[n_b : n_b + k] = ans
            paid_b += pb
            n_b += k
        else:
            rows = pool.iloc[order[n_chk : n_chk + k]]
            ans, pa, _ = _ask(api, rows[a_cols], "A (audit API)")
            dec_a[n_chk : n_chk + k] = ans
            paid_a += pa
            sl = slice(n_chk, n_chk + k)
            ok = ~np.isnan(ans) & ~np.isnan(dec_b[sl])
            inc = ok & ((draws[sl] != true_groups[order[sl]]) | (dec_b[sl] != ans))
            n_inc += int(inc.sum())
            n_chk += k
        left -= k

    idx = order[:n_b]
    gt, gp, db = true_groups[idx], draws[:n_b], dec_b[:n_b]
    chk = np.zeros(n_b, dtype=bool)
    chk[:n_chk] = True
    groups = (unprivileged, privileged)
    corrected: CorrectedDI
    if confusion is not None:
        obs, _ = double_sampling_cells(gt, gp, db, np.zeros(n_b, dtype=bool), privileged)
        corrected = matrix_corrected_di(
            obs, confusion, calibration_sizes=confusion_sizes, confidence_level=1 - a_lvl,
            threshold=th, groups=groups,
        )  # fmt: skip
    else:
        validated = np.ones(n_b, dtype=bool) if b_groups == "known" else chk
        u, v = double_sampling_cells(gt, gp, db, validated, privileged)
        if v.sum() == 0:
            raise BudgetError(
                "The large-regime audit made no check, so no B record is validated and the "
                "proxy's confusion rates cannot be estimated; raise the budget or pass "
                "b_groups='known' / given confusion rates."
            )
        corrected = double_sampling_di(u, v, confidence_level=1 - a_lvl, threshold=th,
                                       groups=groups)  # fmt: skip
    finding = corrected.finding()

    okp = ~np.isnan(dec_a[:n_chk]) & ~np.isnan(db[:n_chk])
    sel = np.flatnonzero(okp)
    counts_a = _counts(gt[:n_chk], dec_a[:n_chk], privileged)
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
        check_group_a=gt[sel], check_decision_a=dec_a[sel], check_group_proxy=gp[sel],
        check_decision_proxy=db[sel], counts_a=counts_a, counts_b=counts_b, p_phi=pp,
        n_planned_checks=int(sel.size), check_p_true=p_true[sel],
    )  # fmt: skip
    outcomes = tuple(make_detector(d).decide(ev, alpha_each) for d in dets)
    verdict = "manipulated" if any(o.detected for o in outcomes) else finding.verdict
    au, ap = per_group_accuracy(acc, unprivileged, privileged)
    extra = {
        "inference": inference_note(proxy, rule),
        "regime": "large",
        "source_of_estimate": "B",
        "di_b_corrected": corrected.to_dict(),
        "finding": finding.to_dict(),
        "policy": policy.describe(),
        "b_groups": b_groups if confusion is None else "given-confusion",
        "proxy_accuracy_by_group": {unprivileged: au, privileged: ap},
        "large": {"n_b": n_b, "n_checks": n_chk, "n_inconsistent": n_inc},
    }
    return TwoSourceResult(
        verdict=verdict, threshold=th, alpha=a_lvl, alpha_per_detector=alpha_each, di_a=di_a,
        di_b=di_b, detectors=outcomes, allocation=Allocation(t, n_b, n_chk),
        n_checked=int(sel.size), stop_reason="completed", queries_a=n_chk, queries_b=n_b,
        paid_a=paid_a, paid_b=paid_b, unpaired=int(n_chk - sel.size), proxy=proxy.describe(),
        proxy_accuracy=acc, p_test=pp, null=null, groups=groups, seed=seed, extra=extra,
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
    group_column: str = "sex",
    privileged: str = "Male",
    alpha: float = 0.05,
    threshold: float = 0.8,
    null: str = "agree",
    proxy_accuracy: ProxyAccuracy | None = None,
    detectors: Sequence[str] = ("conditional", "consistency", "di"),
    seed: int = 0,
    inference: Proxy | None = None,
    **audit_kwargs: Any,
) -> TwoSourceResult:
    """Follow the regime of ``budget`` for a DI margin ``epsilon`` (module docstring).

    ``rates``: the planning positive rates (unprivileged, privileged) — an assumption made
    before any query (default: the fairprobe platform's); the group shares and the proxy's
    per-group accuracies are measured on the pool. ``policy``: ``"fixed"`` or ``"thompson"``
    (large regime only). ``audit_kwargs`` go to the audit of the regime (columns, batch size).
    """
    from fairprobe.twosource.audit import run_two_source_audit
    from fairprobe.twosource.budget import plan_budget

    owner = "run_budgeted_audit"
    check_choice(policy, "policy", owner, ["fixed", "thompson"])
    pool = queries.reset_index(drop=True)
    if group_column not in pool.columns:
        raise DataError(f"The query pool lacks the group column {group_column!r}.")
    true_groups, unprivileged = two_groups(pool, group_column, privileged, proxy)
    acc = proxy.accuracy(pool, true_groups) if proxy_accuracy is None else proxy_accuracy
    au, ap = per_group_accuracy(acc, unprivileged, privileged)
    share_u = float(np.mean(true_groups == unprivileged))
    plan = plan_budget(
        budget, epsilon, acc.p_phi, rates[0], rates[1], share_u, alpha=alpha, gamma=None,
        threshold=threshold, accuracy_unprivileged=au, accuracy_privileged=ap,
    )  # fmt: skip
    common: dict[str, Any] = dict(group_column=group_column, privileged=privileged, alpha=alpha,
                  threshold=threshold, null=null, proxy_accuracy=acc, detectors=detectors,
                  seed=seed, inference=inference)  # fmt: skip
    rec = plan.recommended
    if plan.regime == "pareto":
        res = run_two_source_audit(api, ui, pool, proxy, budget=budget,
                                   t_fraud=max(int(rec["t_fraud"]), 2), **common,
                                   **audit_kwargs)  # fmt: skip
    else:
        pol: BudgetPolicy
        if policy == "thompson":
            rule = resolve_inference(proxy, inference, owner)
            if null == "agree":
                pp = (acc.p_agree if rule is proxy
                      else honest_consistency(proxy, rule, pool, true_groups))
            else:
                pp = acc.p_phi
            pol = thompson_for(pp, (rates[0], rates[1], share_u), seed=seed, threshold=threshold)
        else:
            pol = FixedSplit(int(rec["t_fraud"]))
        large_kw = {k: v for k, v in audit_kwargs.items() if k in ("api_columns", "ui_columns")}
        res = run_large_regime_audit(
            api, ui, pool, proxy, budget=budget, policy=pol, b_groups=b_groups, **common, **large_kw
        )  # type: ignore[arg-type]
    res.extra["regime"] = plan.regime
    res.extra["plan"] = plan.to_dict()
    return res
