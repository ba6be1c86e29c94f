"""Two-source audits and their budget plans as one call each: what ``fairprobe twosource`` and
``fairprobe twosource plan`` do.

The commands parse their flags, call :func:`twosource_job` / :func:`twosource_plan_job` and print
and write what they return; a Python user gets the same documents.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import pandas as pd

from fairprobe._defaults import PLATFORM_RATE_FEMALE, PLATFORM_RATE_MALE, PLATFORM_SHARE_FEMALE
from fairprobe._validation import split_names
from fairprobe.documents import Job
from fairprobe.errors import ConfigError, InvalidParameterError
from fairprobe.options import DEFAULT_CACHE, AccessOptions, DataSource
from fairprobe.twosource.options import TwoSourceOptions

__all__ = [
    "DEFAULT_CACHE",
    "PLATFORM_RATE_FEMALE",
    "PLATFORM_RATE_MALE",
    "PLATFORM_SHARE_FEMALE",
    "ProxyChoice",
    "RegimeChoice",
    "TwoSourcePlan",
    "TwoSourcePlanOptions",
    "twosource_job",
    "twosource_options",
    "twosource_plan_job",
]

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


@dataclass(frozen=True)
class ProxyChoice:
    """Which proxy links B to A, and the rule B is assumed to infer the group with.

    Attributes
    ----------
    spec : str
        A proxy spec (``--proxy``): ``name``, ``identity``, ``random``, ``learned``,
        ``mapping:PATH.json``.
    features : sequence of str
        The B-side columns a ``learned`` proxy reads (``--proxy-features``).
    inference : str
        The rule B infers the group with (``--inference``), on which the detectors' honest rates
        rest: ``proxy`` (the proxy's own rule), a proxy spec, or ``auto`` (the proxy, but the
        name rule for a ``learned`` proxy, whose classifier is not B's rule).
    """

    spec: str = "name"
    features: str | Sequence[str] = ("first_name",)
    inference: str = "auto"

    def __post_init__(self) -> None:
        object.__setattr__(self, "features", tuple(split_names(self.features) or ["first_name"]))
        if not isinstance(self.spec, str) or not self.spec.strip():
            raise InvalidParameterError(
                f"--proxy must name a proxy (name, identity, random, learned, "
                f"mapping:PATH.json); got {self.spec!r}.")

    def build(self, pool: pd.DataFrame, group_col: str, seed: int) -> tuple[Any, Any]:
        """The proxy (fitted on ``pool`` when learned) and the inference rule (None: the proxy)."""
        from fairprobe.twosource import LearnedProxy, proxy_from_spec

        if self.spec == "learned":
            px: Any = LearnedProxy(features=list(self.features), seed=seed).fit(
                pool, pool[group_col].astype(str))
        elif self.spec == "identity":
            px = proxy_from_spec(self.spec, column=group_col)
        else:
            px = proxy_from_spec(self.spec)
        return px, inference_rule(self.inference, self.spec, px, pool, group_col)


@dataclass(frozen=True)
class RegimeChoice:
    """The budget's regime (Appendix B): without ``epsilon`` the paper's split of the budget;
    with it (the DI margin of error, ``--epsilon``) the regime the budget falls in, the large
    regime's ``policy`` (``--policy``: fixed or thompson) and ``b_groups`` (``--b-groups``), and
    the planning positive rates (``--rate-unprivileged``, ``--rate-privileged``)."""

    epsilon: float | None = None
    policy: str = "fixed"
    b_groups: str = "checks"
    rate_unprivileged: float = PLATFORM_RATE_FEMALE
    rate_privileged: float = PLATFORM_RATE_MALE

    def __post_init__(self) -> None:
        from fairprobe._validation import check_choice, check_real

        if self.epsilon is None:
            if self.policy != "fixed" or self.b_groups != "checks":
                raise InvalidParameterError(
                    "--policy and --b-groups need --epsilon (the large regime).")
            return
        check_real(self.epsilon, "epsilon", "twosource", lo=0.0, closed="neither")
        if self.epsilon == float("inf"):
            raise InvalidParameterError("--epsilon must be finite.")
        check_choice(self.policy, "policy", "twosource (--policy)", ["fixed", "thompson"])
        check_choice(self.b_groups, "b_groups", "twosource (--b-groups)", ["checks", "known"])
        for name in ("rate_unprivileged", "rate_privileged"):
            check_real(getattr(self, name), name, "twosource", lo=0.0, hi=1.0, closed="right")


#: The flat keywords of :func:`twosource_job` (``fairprobe twosource``'s flags): the options
#: object and field each one sets.
_JOB_FLAGS: dict[str, tuple[str, str]] = {
    "queries": ("source", "table"),
    "proxy": ("proxy_choice", "spec"),
    "proxy_features": ("proxy_choice", "features"),
    "inference": ("proxy_choice", "inference"),
    "group_col": ("options", "group_column"),
    "privileged": ("options", "privileged"),
    "api_cols": ("options", "api_columns"),
    "ui_cols": ("options", "ui_columns"),
    "beta": ("options", "beta"),
    "checks": ("options", "t_fraud"),
    "alpha": ("options", "alpha"),
    "threshold": ("options", "threshold"),
    "p_phi": ("options", "p_phi"),
    "null": ("options", "null"),
    "detectors": ("options", "detectors"),
    "batch_size": ("options", "batch_size"),
    "budget": ("access", "budget"),
    "seed": ("access", "seed"),
    "cache": ("access", "cache"),
    "retries": ("access", "retries"),
    "timeout": ("access", "timeout"),
    "progress": ("access", "progress"),
    "epsilon": ("regime", "epsilon"),
    "policy": ("regime", "policy"),
    "b_groups": ("regime", "b_groups"),
    "rate_unprivileged": ("regime", "rate_unprivileged"),
    "rate_privileged": ("regime", "rate_privileged"),
}


def _detector_names(value: str | Sequence[str]) -> tuple[str, ...]:
    """``--detectors`` as names; an empty or unknown name is an error, never "no detector" (a
    lone ',' must not audit with none)."""
    from fairprobe.twosource.detectors import DETECTORS

    dets = tuple(d.lower() for d in (split_names(value) or []))
    unknown = [d for d in dets if d not in DETECTORS]
    if not dets or unknown:
        what = f"unknown detector(s) {', '.join(map(repr, unknown))}" if unknown else "no detector"
        raise InvalidParameterError(
            f"--detectors names {what}; give a comma-separated list of {', '.join(DETECTORS)}.")
    return dets


def twosource_options(**flags: Any) -> dict[str, Any]:
    """The options objects of :func:`twosource_job` from its flat keywords (``fairprobe
    twosource``'s flags by their Python names), every value checked: keys ``source``,
    ``access``, ``options``, ``proxy_choice`` and ``regime``."""
    from fairprobe.options import AccessOptions, DataSource, split_flat
    from fairprobe.twosource.options import TwoSourceOptions

    parts = split_flat(flags, _JOB_FLAGS, "twosource_job")
    o = parts.get("options", {})
    if "detectors" in o:
        o["detectors"] = _detector_names(o["detectors"])
    for key in ("api_columns", "ui_columns"):
        if key in o:
            o[key] = split_names(o[key])
    regime = RegimeChoice(**parts.get("regime", {}))
    if regime.epsilon is not None and o.get("t_fraud") is not None:
        raise InvalidParameterError(
            "--checks and --epsilon exclude each other: with --epsilon the budget's regime "
            "sets the checks (see `fairprobe twosource plan --epsilon`).")
    access = parts.get("access", {})
    access.setdefault("budget", 1000)
    return {
        "source": DataSource(**parts.get("source", {})),
        "access": AccessOptions(**access),
        "options": TwoSourceOptions(**o),
        "proxy_choice": ProxyChoice(**parts.get("proxy_choice", {})),
        "regime": regime,
    }


def twosource_job(
    api_backend: Any,
    ui_backend: Any,
    *,
    source: DataSource | None = None,
    access: AccessOptions | None = None,
    options: TwoSourceOptions | None = None,
    proxy_choice: ProxyChoice | None = None,
    regime: RegimeChoice | None = None,
    **flags: Any,
) -> Job:
    """Audit source A (the audit API) against source B (the user interface) through a proxy.

    The options objects say what to audit: ``source`` the query pool (default: the bundled
    Adult test split with first names), ``access`` the budget (default 1000), seed, answer
    cache, retries and timeout, ``options`` the audit's question and split
    (:class:`~fairprobe.twosource.options.TwoSourceOptions`; its seed and progress are
    ``access``'s), ``proxy_choice`` the proxy and B's inference rule (:class:`ProxyChoice`),
    ``regime`` the budget's regime (:class:`RegimeChoice`). ``flags`` are ``fairprobe
    twosource``'s flags by their Python names (``docs/twosource.md``; the compatibility form,
    sorted into the objects by :func:`twosource_options`); they build the objects not given.

    Without ``epsilon`` it runs :func:`~fairprobe.twosource.run_two_source_audit` (the paper's
    split of ``budget`` between A alone and ``checks``); with ``epsilon`` (the DI margin of
    error) it follows the budget's regime (Appendix B,
    :func:`~fairprobe.twosource.run_budgeted_audit`). Everything is checked before a query is
    paid.

    Returns
    -------
    Job
        ``kind="twosource"``; ``.result`` is the :class:`~fairprobe.twosource.TwoSourceResult`
        (verdict fair / unfair / undetermined / manipulated with its evidence).
    """
    from fairprobe.access.identity import describe_backend
    from fairprobe.provenance import Provenance, pool_digest

    built = twosource_options(**flags)
    src: DataSource = source or built["source"]
    acc: AccessOptions = access or built["access"]
    chosen = proxy_choice or built["proxy_choice"]
    reg: RegimeChoice = regime or built["regime"]
    opts = replace(options or built["options"], seed=acc.seed, progress=acc.progress)

    def adult() -> pd.DataFrame:
        from fairprobe.datasets.adult import load_adult

        return load_adult("test")

    pool = src.load(adult)
    px, rule = chosen.build(pool, opts.group_column, acc.seed)
    opts = replace(opts, inference=rule)
    with acc.open(api_backend) as api, acc.open(ui_backend) as ui:
        result = _run_audit(api, ui, pool, px, acc, opts, reg)
    prov = Provenance.capture(
        seed=acc.seed,
        query_pool=pool_digest(pool, src.label("adult:test")),
        backend=describe_backend(api_backend),
        extra={"backend_b": describe_backend(ui_backend),
               "cache": None if acc.cache is None else str(acc.cache)},
    )  # fmt: skip
    return Job("twosource", result, prov)


def _run_audit(api: Any, ui: Any, pool: pd.DataFrame, proxy: Any, access: AccessOptions,
               opts: TwoSourceOptions, regime: RegimeChoice) -> Any:  # fmt: skip
    """The audit of the regime: the paper's split, or the budget's regime for ``epsilon``."""
    from fairprobe.twosource import run_budgeted_audit, run_two_source_audit

    budget = 1000 if access.budget is None else access.budget
    if isinstance(budget, str):  # "all": a two-source audit samples the pool, never reads it all
        raise InvalidParameterError(f"--budget must be a number of queries; got {budget!r}.")
    if regime.epsilon is None:
        return run_two_source_audit(api, ui, pool, proxy, budget=budget, options=opts)
    return run_budgeted_audit(
        api, ui, pool, proxy, budget=budget, epsilon=regime.epsilon,
        rates=(regime.rate_unprivileged, regime.rate_privileged), policy=regime.policy,
        b_groups=regime.b_groups, options=replace(opts, progress=False),
    )  # fmt: skip


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


@dataclass(frozen=True)
class TwoSourcePlanOptions:
    """What ``fairprobe twosource plan`` plans, each field its flag of the same name, checked
    once: ``checks`` (Lemma 2's test), ``budget`` and ``epsilon`` (the regime), ``alpha``,
    ``gamma`` (or ``theorem3``), the planning ``sigma_a`` / ``sigma_b``, rates, unprivileged
    share and per-group proxy accuracies, and the large regime's ``b_estimator``."""

    checks: int | None = None
    alpha: float = 0.05
    gamma: float = 0.10
    budget: int | None = None
    epsilon: float | None = None
    sigma_a: float | None = None
    sigma_b: float | None = None
    rate_unprivileged: float = PLATFORM_RATE_FEMALE
    rate_privileged: float = PLATFORM_RATE_MALE
    share_unprivileged: float = PLATFORM_SHARE_FEMALE
    theorem3: bool = False
    accuracy_unprivileged: float | None = None
    accuracy_privileged: float | None = None
    b_estimator: str = "double-sampling"

    def __post_init__(self) -> None:
        from fairprobe._validation import check_int, check_real
        from fairprobe.twosource.theory import MAX_BUDGET

        owner = "twosource plan"
        check_real(self.alpha, "alpha", owner, lo=0.0, hi=1.0, closed="neither")
        check_real(self.gamma, "gamma", owner, lo=0.0, hi=1.0)
        if self.checks is None and self.budget is None:
            raise InvalidParameterError("twosource plan needs --checks, --budget or both.")
        if self.checks is not None:
            check_int(self.checks, "checks", owner, lo=0, hi=MAX_BUDGET)
        if self.budget is not None:
            check_int(self.budget, "budget", owner, lo=2, hi=MAX_BUDGET)
        if self.epsilon is not None:
            check_real(self.epsilon, "epsilon", owner, lo=0.0, closed="neither")
            if self.epsilon == float("inf"):
                raise InvalidParameterError(
                    "The 'epsilon' parameter of twosource plan must be finite.")
            if self.budget is None:
                raise InvalidParameterError("--epsilon classifies a budget: give --budget too.")


def twosource_plan_job(
    proxy_accuracy: float, *, options: TwoSourcePlanOptions | None = None, **kwargs: Any
) -> Job:
    """Lemma 2's ``n_max`` and ``p_manip`` for ``checks``; with ``budget``, its regime
    (Appendix B, for the margin ``epsilon``) and the Pareto-optimal allocations (Figure 4).

    ``options`` (:class:`TwoSourcePlanOptions`), or its fields as keywords (the compatibility
    form, overriding those of ``options``), say what to plan. Regimes: ``t < t_A`` is refused
    (A alone cannot reach the margin); ``t_A <= t <= t_B`` gives the Pareto frontier of Section
    5.3; ``t > t_B`` estimates DI from B alone and spends the rest on checks. ``theorem3`` draws
    the frontier at Theorem 3's cheapest successful fairwashing instead of ``gamma``.

    Returns
    -------
    Job
        ``kind="twosource-plan"``; ``.result`` is a :class:`TwoSourcePlan`.
    """
    from fairprobe._validation import check_real
    from fairprobe.options import with_fields
    from fairprobe.provenance import Provenance
    from fairprobe.twosource.budget import plan_budget
    from fairprobe.twosource.theory import detection_test, di_sigma, pareto_frontier

    # every parameter is checked before any computation
    check_real(proxy_accuracy, "proxy_accuracy", "twosource plan", lo=0.0, hi=1.0)
    o: TwoSourcePlanOptions = with_fields(options, TwoSourcePlanOptions, kwargs)
    out: dict[str, Any] = {"proxy_accuracy": proxy_accuracy, "alpha": o.alpha}
    test = bp = front = None
    if o.checks is not None:
        test = detection_test(o.checks, proxy_accuracy, o.alpha, gamma=o.gamma)
        out.update(test.to_dict())
    if o.budget is not None:
        g_front = None if o.theorem3 else o.gamma
        if o.epsilon is not None:
            bp = plan_budget(
                o.budget, o.epsilon, proxy_accuracy, o.rate_unprivileged, o.rate_privileged,
                o.share_unprivileged, alpha=o.alpha, gamma=g_front, sigma_a=o.sigma_a,
                sigma_b_value=o.sigma_b, accuracy_unprivileged=o.accuracy_unprivileged,
                accuracy_privileged=o.accuracy_privileged, b_estimator=o.b_estimator,
            )  # fmt: skip
            out.update(bp.to_dict())
            if bp.regime != "large":
                front = bp.frontier
        else:
            sig = (di_sigma(o.rate_unprivileged, o.rate_privileged, o.share_unprivileged)
                   if o.sigma_a is None else o.sigma_a)  # fmt: skip
            front = pareto_frontier(
                o.budget, proxy_accuracy, sig, o.alpha, g_front,
                rate_unprivileged=o.rate_unprivileged, rate_privileged=o.rate_privileged,
                share_unprivileged=o.share_unprivileged,
            )  # fmt: skip
            out["budget"] = o.budget
            out["regime"] = None
        if front is not None:
            out["sigma_a"] = front.sigma_a
            out["frontier_gamma"] = "theorem3" if o.theorem3 else o.gamma
            out["pareto"] = front.pareto()
            out["frontier_points"] = int(front.t_fraud.size)
    return Job("twosource-plan", TwoSourcePlan(out, test, bp, front), Provenance.capture())
