"""Two-source audits and their budget plans as one call each: what ``fairprobe twosource`` and
``fairprobe twosource plan`` do.

The commands parse their flags, call :func:`twosource_job` / :func:`twosource_plan_job` and print
and write what they return; a Python user gets the same documents.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from fairprobe._defaults import PLATFORM_RATE_FEMALE, PLATFORM_RATE_MALE, PLATFORM_SHARE_FEMALE
from fairprobe._validation import split_names
from fairprobe.documents import Job
from fairprobe.errors import ConfigError, InvalidParameterError

__all__ = [
    "DEFAULT_CACHE",
    "PLATFORM_RATE_FEMALE",
    "PLATFORM_RATE_MALE",
    "PLATFORM_SHARE_FEMALE",
    "TwoSourcePlan",
    "twosource_job",
    "twosource_plan_job",
]

DEFAULT_CACHE = Path(".fairprobe") / "cache.sqlite"


def platform_sources(url: str | None, api_backend: Any = None, ui_backend: Any = None
                     ) -> tuple[Any, Any]:
    """Sources A and B: a platform server's two paths, or two backends given apart."""
    from fairprobe.access.http import HttpJsonBackend

    if url is not None and (api_backend is not None or ui_backend is not None):
        raise ConfigError("Give either --url or both --api-config and --ui-config, not both.")
    if url is not None:
        return HttpJsonBackend(url=url), HttpJsonBackend(url=url, path="/user/predict")
    if api_backend is None or ui_backend is None:
        raise ConfigError("Give --url (a platform server) or both --api-config and --ui-config.")
    return api_backend, ui_backend


def twosource_job(
    api_backend: Any,
    ui_backend: Any,
    *,
    queries: str | os.PathLike[str] | pd.DataFrame | None = None,
    proxy: str = "name",
    proxy_features: str | Sequence[str] = "first_name",
    group_col: str = "sex",
    privileged: str = "Male",
    api_cols: str | Sequence[str] | None = None,
    ui_cols: str | Sequence[str] | None = None,
    budget: int = 1000,
    beta: float = 0.5,
    checks: int | None = None,
    alpha: float = 0.05,
    threshold: float = 0.8,
    p_phi: float | None = None,
    null: str = "agree",
    detectors: str | Sequence[str] = "conditional,consistency,di",
    batch_size: int = 25,
    seed: int = 0,
    cache: str | os.PathLike[str] | None = DEFAULT_CACHE,
    retries: int = 5,
    timeout: float | None = None,
    progress: bool = False,
    epsilon: float | None = None,
    policy: str = "fixed",
    b_groups: str = "checks",
    rate_unprivileged: float = PLATFORM_RATE_FEMALE,
    rate_privileged: float = PLATFORM_RATE_MALE,
    inference: str = "auto",
) -> Job:
    """Audit source A (the audit API) against source B (the user interface) through a proxy.

    Parameters mirror ``fairprobe twosource``'s flags (``docs/twosource.md``). Without
    ``epsilon`` it runs :func:`~fairprobe.twosource.run_two_source_audit` (the paper's split of
    ``budget`` between A alone and ``checks``); with ``epsilon`` (the DI margin of error) it
    follows the budget's regime (Appendix B, :func:`~fairprobe.twosource.run_budgeted_audit`).
    ``queries`` defaults to the bundled Adult test split with first names; ``proxy`` is a
    proxy spec (``name``, ``identity``, ``random``, ``learned``, ``mapping:PATH.json``).
    ``inference`` is the rule B is assumed to infer the group with, on which the detectors'
    honest rates rest: ``proxy`` (the proxy's own rule), a proxy spec, or ``auto`` (the proxy,
    but the name rule for a ``learned`` proxy, whose classifier is not B's rule).
    Everything is checked before a query is paid.

    Returns
    -------
    Job
        ``kind="twosource"``; ``.result`` is the :class:`~fairprobe.twosource.TwoSourceResult`
        (verdict fair / unfair / undetermined / manipulated with its evidence).
    """
    from fairprobe.access.blackbox import BlackBox
    from fairprobe.access.identity import describe_backend
    from fairprobe.provenance import Provenance, pool_digest
    from fairprobe.twosource import LearnedProxy, proxy_from_spec, run_two_source_audit
    from fairprobe.twosource.detectors import DETECTORS

    # the detector list is checked before the pool is read or a query is paid: an empty or
    # unknown name is an error, never "no detector" (a lone ',' must not audit with none)
    dets = tuple(d.lower() for d in (split_names(detectors) or []))
    unknown = [d for d in dets if d not in DETECTORS]
    if not dets or unknown:
        what = f"unknown detector(s) {', '.join(map(repr, unknown))}" if unknown else "no detector"
        raise InvalidParameterError(
            f"--detectors names {what}; give a comma-separated list of {', '.join(DETECTORS)}.")
    if epsilon is not None:
        from fairprobe._validation import check_choice, check_real

        check_real(epsilon, "epsilon", "twosource", lo=0.0, closed="neither")
        if epsilon == float("inf"):
            raise InvalidParameterError("--epsilon must be finite.")
        if checks is not None:
            raise InvalidParameterError(
                "--checks and --epsilon exclude each other: with --epsilon the budget's regime "
                "sets the checks (see `fairprobe twosource plan --epsilon`).")
        check_choice(policy, "policy", "twosource (--policy)", ["fixed", "thompson"])
        check_choice(b_groups, "b_groups", "twosource (--b-groups)", ["checks", "known"])
        check_real(rate_unprivileged, "rate_unprivileged", "twosource", lo=0.0, hi=1.0,
                   closed="right")  # fmt: skip
        check_real(rate_privileged, "rate_privileged", "twosource", lo=0.0, hi=1.0,
                   closed="right")  # fmt: skip
    elif policy != "fixed" or b_groups != "checks":
        raise InvalidParameterError("--policy and --b-groups need --epsilon (the large regime).")

    if queries is None:
        from fairprobe.datasets.adult import load_adult

        pool = load_adult("test")
    elif isinstance(queries, pd.DataFrame):
        pool = queries
    else:
        from fairprobe._io import read_table

        pool = read_table(queries, "--queries file")
    if proxy == "learned":
        feats = split_names(proxy_features) or ["first_name"]
        px: Any = LearnedProxy(features=feats, seed=seed).fit(pool, pool[group_col].astype(str))
    elif proxy == "identity":
        px = proxy_from_spec(proxy, column=group_col)
    else:
        px = proxy_from_spec(proxy)
    rule = inference_rule(inference, proxy, px, pool, group_col)
    cache_path = None if cache is None else Path(cache)
    if cache_path is not None:
        cache_path.parent.mkdir(parents=True, exist_ok=True)
    with (
        BlackBox(api_backend, cache=cache_path, retries=retries, timeout=timeout, seed=seed) as api,
        BlackBox(ui_backend, cache=cache_path, retries=retries, timeout=timeout, seed=seed) as ui,
    ):
        if epsilon is not None:
            from fairprobe.twosource import run_budgeted_audit

            result: Any = run_budgeted_audit(
                api, ui, pool, px, budget=budget, epsilon=epsilon,
                rates=(rate_unprivileged, rate_privileged), policy=policy, b_groups=b_groups,
                group_column=group_col, privileged=privileged, alpha=alpha,
                threshold=threshold, null=null, detectors=dets, seed=seed,
                api_columns=split_names(api_cols), ui_columns=split_names(ui_cols),
                inference=rule,
            )  # fmt: skip
        else:
            result = run_two_source_audit(
                api, ui, pool, px, budget=budget, beta=beta, t_fraud=checks,
                group_column=group_col, privileged=privileged, api_columns=split_names(api_cols),
                ui_columns=split_names(ui_cols), alpha=alpha, threshold=threshold, p_phi=p_phi,
                null=null, detectors=dets, batch_size=batch_size, seed=seed, progress=progress,
                inference=rule,
            )  # fmt: skip
    source = "adult:test" if queries is None else (
        "DataFrame" if isinstance(queries, pd.DataFrame) else str(queries))
    prov = Provenance.capture(
        seed=seed,
        query_pool=pool_digest(pool, source),
        backend=describe_backend(api_backend),
        extra={"backend_b": describe_backend(ui_backend),
               "cache": None if cache_path is None else str(cache_path)},
    )
    return Job("twosource", result, prov)


def inference_rule(spec: str, proxy_spec: str, proxy: Any, pool: pd.DataFrame,
                   group_col: str) -> Any:
    """The rule B is assumed to infer the group with (``--inference``), or None: the proxy's."""
    from fairprobe.twosource import proxy_from_spec

    s = str(spec).strip().lower() if not str(spec).startswith("mapping:") else str(spec)
    if s == "proxy":
        return None  # run_two_source_audit refuses a learned proxy here, saying why
    if s == "auto":
        if proxy_spec != "learned":
            return None
        if "first_name" not in pool.columns:
            raise InvalidParameterError(
                "--proxy learned: the detectors' honest rates need the rule B uses to infer the "
                "group, and the learned classifier is not it (its errors are not B's); the pool "
                "has no first_name column for the name rule. Give --inference (name, identity, "
                "mapping:PATH.json) for the rule B uses.")
        s = "name"
    if s == "learned":
        raise InvalidParameterError(
            "--inference learned: a classifier fitted by the auditor is not the rule B uses to "
            "infer the group; give name, identity, mapping:PATH.json or proxy.")
    if s == "identity":
        return proxy_from_spec(s, column=group_col)
    return proxy_from_spec(s)


@dataclass(frozen=True)
class TwoSourcePlan:
    """A two-source budget plan: Lemma 2's test, the budget's regime and the allocations.

    ``test`` is the consistency test for ``checks`` (or None), ``budget_plan`` the regime of the
    budget for a margin ``epsilon`` (or None), ``frontier`` the Pareto frontier of allocations
    (or None); :meth:`to_dict` is the document's body.
    """

    body: dict[str, Any]
    test: Any = None
    budget_plan: Any = None
    frontier: Any = field(default=None, repr=False)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.body)


def twosource_plan_job(
    proxy_accuracy: float,
    *,
    checks: int | None = None,
    alpha: float = 0.05,
    gamma: float = 0.10,
    budget: int | None = None,
    epsilon: float | None = None,
    sigma_a: float | None = None,
    sigma_b: float | None = None,
    rate_unprivileged: float = PLATFORM_RATE_FEMALE,
    rate_privileged: float = PLATFORM_RATE_MALE,
    share_unprivileged: float = PLATFORM_SHARE_FEMALE,
    theorem3: bool = False,
    accuracy_unprivileged: float | None = None,
    accuracy_privileged: float | None = None,
    b_estimator: str = "double-sampling",
) -> Job:
    """Lemma 2's ``n_max`` and ``p_manip`` for ``checks``; with ``budget``, its regime
    (Appendix B, for the margin ``epsilon``) and the Pareto-optimal allocations (Figure 4).

    Regimes: ``t < t_A`` is refused (A alone cannot reach the margin); ``t_A <= t <= t_B`` gives
    the Pareto frontier of Section 5.3; ``t > t_B`` estimates DI from B alone and spends the rest
    on checks. ``theorem3`` draws the frontier at Theorem 3's cheapest successful fairwashing
    instead of ``gamma``.

    Returns
    -------
    Job
        ``kind="twosource-plan"``; ``.result`` is a :class:`TwoSourcePlan`.
    """
    from fairprobe._validation import check_int, check_real
    from fairprobe.provenance import Provenance
    from fairprobe.twosource.budget import plan_budget
    from fairprobe.twosource.theory import MAX_BUDGET, detection_test, di_sigma, pareto_frontier

    owner = "twosource plan"
    # every parameter is checked before any computation
    check_real(proxy_accuracy, "proxy_accuracy", owner, lo=0.0, hi=1.0)
    check_real(alpha, "alpha", owner, lo=0.0, hi=1.0, closed="neither")
    check_real(gamma, "gamma", owner, lo=0.0, hi=1.0)
    if checks is None and budget is None:
        raise InvalidParameterError("twosource plan needs --checks, --budget or both.")
    if checks is not None:
        check_int(checks, "checks", owner, lo=0, hi=MAX_BUDGET)
    if budget is not None:
        check_int(budget, "budget", owner, lo=2, hi=MAX_BUDGET)
    if epsilon is not None:
        check_real(epsilon, "epsilon", owner, lo=0.0, closed="neither")
        if epsilon == float("inf"):
            raise InvalidParameterError("The 'epsilon' parameter of twosource plan must be finite.")
        if budget is None:
            raise InvalidParameterError("--epsilon classifies a budget: give --budget too.")
    out: dict[str, Any] = {"proxy_accuracy": proxy_accuracy, "alpha": alpha}
    test = bp = front = None
    if checks is not None:
        test = detection_test(checks, proxy_accuracy, alpha, gamma=gamma)
        out.update(test.to_dict())
    if budget is not None:
        g_front = None if theorem3 else gamma
        if epsilon is not None:
            bp = plan_budget(
                budget, epsilon, proxy_accuracy, rate_unprivileged, rate_privileged,
                share_unprivileged, alpha=alpha, gamma=g_front, sigma_a=sigma_a,
                sigma_b_value=sigma_b, accuracy_unprivileged=accuracy_unprivileged,
                accuracy_privileged=accuracy_privileged, b_estimator=b_estimator,
            )  # fmt: skip
            out.update(bp.to_dict())
            if bp.regime != "large":
                front = bp.frontier
        else:
            sig = (di_sigma(rate_unprivileged, rate_privileged, share_unprivileged)
                   if sigma_a is None else sigma_a)  # fmt: skip
            front = pareto_frontier(
                budget, proxy_accuracy, sig, alpha, g_front,
                rate_unprivileged=rate_unprivileged, rate_privileged=rate_privileged,
                share_unprivileged=share_unprivileged,
            )  # fmt: skip
            out["budget"] = budget
            out["regime"] = None
        if front is not None:
            out["sigma_a"] = front.sigma_a
            out["frontier_gamma"] = "theorem3" if theorem3 else gamma
            out["pareto"] = front.pareto()
            out["frontier_points"] = int(front.t_fraud.size)
    return Job("twosource-plan", TwoSourcePlan(out, test, bp, front), Provenance.capture())
