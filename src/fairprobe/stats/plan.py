r"""How many queries does a verdict need? A sample-size planner for the default audit.

:func:`plan_audit_budget` finds the smallest budget :math:`N` at which the default every-group
audit (:meth:`fairprobe.stats.frame.AuditFrame.summary`: the exact simultaneous intervals of
:mod:`fairprobe.stats.simultaneous`, judged by :func:`fairprobe.stats.finding.decide`) says

* ``fair`` with probability at least ``power`` when the largest true gap is ``gap``
  (:math:`\le` the tolerance; default 0: every group at the same rate), or
* ``unfair`` with probability at least ``power`` when ``gap`` exceeds the tolerance.

The model of an audit: the :math:`N` queries fall into the groups by a multinomial draw with
the given shares (a random sample of the query pool), each answer is positive with its group's
rate (``base_rate`` for every group but one, whose rate is ``base_rate + gap``; for
equal opportunity the rate is the true positive rate among the ``label_rate`` share of
positives), and the summary's interval is computed exactly as the audit computes it. The power
at a budget is the share of ``reps`` simulated audits (seeded) that decide; the budget is found
by doubling then bisection on :math:`N`, with the same random numbers at every budget so the
power curve is monotone up to discreteness. Disparate impact is judged against its floor:
``gap`` is then one minus the true smallest ratio.

With three groups or more the simulation is vectorised over the audits (one call of the
family's intervals per budget), about a second a plan. With two groups the audit's interval is
the unconditional exact test inverted, computed per outcome; the planner takes each simulated
audit's verdict from :func:`fairprobe.stats.unconditional.unconditional_verdicts` (the same
verdict as the interval's, from at most four of its tests), and starts its search at the budget
Newcombe's (Koopman's) interval would need, which is smaller; a two-group plan takes tens of
seconds. Every plan simulates the audit's own default intervals.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from fairprobe import metrics as _metrics
from fairprobe.errors import InvalidParameterError
from fairprobe.stats.allocation import ADAPTIVE_BATCHES, apportion, neyman_weights
from fairprobe.stats.finding import decide_array
from fairprobe.stats.plan_options import PlannedAudit, PlanSearch, missing_arguments, plan_objects
from fairprobe.stats.simultaneous import family_intervals

__all__ = ["AuditPlan", "plan_audit_budget", "queries_to_decide", "simulated_power"]

#: The metrics the planner models (the registry's ``plan`` path), by short name: (kind, rate).
_METRICS = {m.short: (m.kind, m.rates[0]) for m in _metrics.METRICS.values()
            if _metrics.PATHS["plan"].accepts(m)}


@dataclass(frozen=True)
class AuditPlan:
    """The planned budget and the power curve it was read from."""

    metric: str
    tolerance: float
    gap: float
    target: str
    power_goal: float
    budget: int
    power: float
    group_shares: dict[str, float]
    base_rate: float
    label_rate: float
    confidence_level: float
    reps: int
    seed: int
    curve: list[tuple[int, float]] = field(default_factory=list)
    allocation: str = "balanced"
    searched_power: float = float("nan")
    check_reps: int = 0
    power_se: float = float("nan")
    hardest_group: str = ""
    method: str = ""
    group_sizes: dict[str, int] = field(default_factory=dict)
    pool: dict[str, dict[str, int | bool]] | None = None
    reachable: dict[str, Any] | None = None
    adaptive: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "budget": self.budget, "power": self.power, "power_goal": self.power_goal,
            "target_verdict": self.target, "metric": self.metric, "tolerance": self.tolerance,
            "gap": self.gap, "group_shares": dict(self.group_shares),
            "base_rate": self.base_rate, "label_rate": self.label_rate,
            "confidence_level": self.confidence_level, "reps": self.reps, "seed": self.seed,
            "method": self.method, "allocation": self.allocation,
            "searched_power": self.searched_power, "check_reps": self.check_reps,
            "power_se": self.power_se, "hardest_group": self.hardest_group,
            "gap_placement": "every group in turn; the power is the smallest",
            "group_sizes": dict(self.group_sizes), "pool": self.pool,
            "reachable": self.reachable, "adaptive": self.adaptive,
            "curve": [{"budget": n, "power": p} for n, p in self.curve],
        }

    def sentence(self) -> str:
        out = (f"{self.budget:,} queries ({self.allocation} allocation): the default audit of "
               f"{self.metric} over {len(self.group_shares)} groups says {self.target} with "
               f"probability {self.power:.3f} +/- {self.power_se:.3f} (goal {self.power_goal:g}) "
               f"when the largest gap is {self.gap:g} (tolerance {self.tolerance:g}), wherever "
               f"the gap falls (hardest: {self.hardest_group}); search {self.searched_power:.3f} "
               f"over {self.reps:,} audits, check over {self.check_reps:,}, seed {self.seed}.")
        if self.pool is not None:
            parts = [f"{g}: {v['needed']:,} of {v['rows']:,} rows" + (" SHORT" if v["short"]
                                                                     else "")
                     for g, v in self.pool.items()]
            out += "\nper group: " + "; ".join(parts) + "."
            short = [g for g, v in self.pool.items() if v["short"]]
            if short and self.reachable is not None:
                out += (f"\nthe pool cannot supply {', '.join(short)}; an audit of all "
                        f"{self.reachable['queries']:,} rows says {self.target} with "
                        f"probability {self.reachable['power']:.3f} (over "
                        f"{self.reachable['reps']:,} simulated audits).")
        if self.adaptive is not None:
            a = self.adaptive
            out += (f"\nadaptive: a cap of {self.budget:,} queries in at most {a['batches']} "
                    f"batches; simulated over {a['reps']:,} audits: "
                    f"{a['expected_queries']:,.0f} +/- {a['expected_queries_se']:,.0f} queries "
                    f"spent on average, decided (fair or unfair) in {a['decided']:.3f} +/- "
                    f"{a['decided_se']:.3f}, {self.target} in {a['target_share']:.3f} +/- "
                    f"{a['target_share_se']:.3f}.")
        return out


def _rates(kind: str, g: int, base: float, gap: float, on: int = 0) -> np.ndarray:
    r = np.full(g, base)
    r[on] = base * (1.0 - gap) if kind == "ratio" else base + gap
    return r


#: The allocations the planner models; the names are those of the audit's ``--allocation``.
ALLOCATIONS = ("uniform", "balanced", "neyman", "adaptive")


def _weights(allocation: str, shares: np.ndarray, rates: np.ndarray) -> np.ndarray:
    r"""Each group's share of the budget: the pool's shares (uniform), equal (balanced), or
    Neyman's split for the planned rates (:func:`fairprobe.stats.allocation.neyman_weights`,
    the split the audit's ``--allocation neyman`` uses)."""
    if allocation == "uniform":
        return shares / shares.sum()
    if allocation in ("balanced", "adaptive"):  # adaptive: its cap is split as balanced
        return np.full(shares.size, 1.0 / shares.size)
    return neyman_weights(rates)


#: Integer group sizes summing to a budget (largest remainders), shared with the audit.
allocate = apportion


#: The flat keywords of :func:`simulated_power` (the compatibility form): the audit's fields.
_POWER_FLAGS = frozenset(PlannedAudit.__dataclass_fields__)


def simulated_power(
    metric: str, tolerance: float, shares: np.ndarray, budget: int, *,
    model: PlannedAudit | None = None, reps: int = 2000, seed: int = 0,
    stand_in: bool = False, on: int = 0, fixed_sizes: np.ndarray | None = None,
    **flags: Any,
) -> float:
    """Share of ``reps`` simulated default audits at ``budget`` whose verdict is ``target``.

    ``model`` (:class:`~fairprobe.stats.plan_options.PlannedAudit`) is the audit simulated:
    its ``gap``, ``target``, ``base_rate``, ``label_rate``, ``confidence_level`` and
    ``allocation``. ``flags`` are those fields as keywords (the compatibility form, overriding
    ``model``'s); without ``model``, ``gap`` and ``target`` are required and ``allocation``
    defaults to ``uniform``.

    ``on``: the group whose rate carries the gap. ``allocation``: ``uniform`` (the queries
    fall into the groups by a multinomial draw with ``shares``), ``balanced`` (``budget / g``
    each) or ``neyman`` (in proportion to each group's binomial standard deviation), the
    per-group sizes of :func:`allocate`. ``stand_in``: two groups judged by Newcombe's
    (Koopman's) interval instead of the exact default (narrower, so it needs a smaller budget:
    the planner's search, rescaled and then checked exactly). ``fixed_sizes``: every audit
    has these group sizes (a whole pool)."""
    if model is None:
        flags = {"allocation": "uniform", **flags}
    m, _ = plan_objects("simulated_power", flags, model, accepted=_POWER_FLAGS)
    if model is None and (missing := [k for k in ("gap", "target") if k not in flags]):
        raise missing_arguments("simulated_power", missing)
    if m.target is None:
        raise missing_arguments("simulated_power", ["target"])
    kind, rate = _METRICS[metric]
    confidence_level = m.confidence_level
    if m.allocation == "adaptive" and stand_in and shares.size == 2:
        # two groups: the search's stand-in is the last look alone, at the look level
        confidence_level = 1.0 - (1.0 - confidence_level) / ADAPTIVE_BATCHES
    elif m.allocation == "adaptive" and fixed_sizes is None:  # the audit's batches, simulated
        return float(adaptive_outcome(metric, tolerance, shares.size, budget, gap=m.gap,
                                      target=m.target, base_rate=m.base_rate,
                                      label_rate=m.label_rate,
                                      confidence_level=confidence_level, reps=reps, seed=seed,
                                      on=on)["target_share"])  # fmt: skip
    rng = np.random.default_rng(seed)
    g = shares.size
    rates = _rates(kind, g, m.base_rate, m.gap, on=on)
    if fixed_sizes is not None:
        sizes = np.broadcast_to(np.asarray(fixed_sizes, dtype=np.int64), (reps, g)).copy()
    elif m.allocation == "uniform":
        sizes = rng.multinomial(budget, shares, size=reps)
    else:
        sizes = np.broadcast_to(allocate(budget, _weights(m.allocation, shares, rates)),
                                (reps, g)).copy()
    if rate == "true_positive_rate":  # the denominator: the positives of each group
        sizes = rng.binomial(sizes, m.label_rate)
    k = rng.binomial(sizes, rates[None, :])
    ok = (sizes >= 1).all(axis=1)
    if not ok.any():
        return 0.0
    k, n = k[ok], sizes[ok]
    if g == 2 and not stand_in:  # the exact default's verdicts, outcome by outcome
        from fairprobe.stats.unconditional import unconditional_verdicts

        v2 = unconditional_verdicts(kind, k[:, 0], n[:, 0], k[:, 1], n[:, 1],  # type: ignore[arg-type]
                                    threshold=tolerance, confidence_level=confidence_level)
        return float((v2 == m.target).sum() / reps)
    fam = family_intervals(k, n, k.sum(1, keepdims=True) - k, n.sum(1, keepdims=True) - n,
                           kind=kind,  # type: ignore[arg-type]
                           confidence_level=confidence_level,
                           method="exact" if g > 2 else "bonferroni")
    # the worst pair of each audit, as the summary reads it (simultaneous.worst_pair)
    _, _, olo, ohi = fam.ordered()
    if kind == "difference":
        lo, hi = np.maximum(0.0, olo.max(axis=1)), ohi.max(axis=1)
    else:
        lo = np.nanmin(olo, axis=1)
        hi = np.minimum(1.0, np.nanmin(np.nan_to_num(ohi, nan=np.inf), axis=1))
    verdicts = decide_array(lo, hi, kind=kind,  # type: ignore[arg-type]
                            threshold=tolerance)
    return float((verdicts == m.target).sum() / reps)


#: The flat keywords of :func:`plan_audit_budget`: every field of the two objects but the
#: target, which the planner derives from the gap.
_PLAN_FLAGS = frozenset(
    {*PlannedAudit.__dataclass_fields__, *PlanSearch.__dataclass_fields__} - {"target"})


def plan_audit_budget(
    metric: str,
    tolerance: float,
    group_shares: Mapping[str, float],
    *,
    model: PlannedAudit | None = None,
    search: PlanSearch | None = None,
    pool_rows: Mapping[str, int] | None = None,
    **flags: Any,
) -> AuditPlan:
    """The smallest budget at which the default audit decides with probability >= ``power``.

    Parameters
    ----------
    metric : {"dp", "di", "eo"}
        Demographic parity difference, disparate impact ratio (``tolerance`` is then the floor,
        e.g. 0.8), equal opportunity difference.
    tolerance : float
        Fair band half-width (differences) or floor (ratios).
    group_shares : mapping
        Each group's share of the queries (normalised to sum to 1); at least two groups.
    model : PlannedAudit, optional
        The audit simulated (:class:`~fairprobe.stats.plan_options.PlannedAudit`): ``gap``
        (default 0; at most the tolerance, ratios ``1 - gap >= floor``: the target verdict is
        ``fair``; beyond it, ``unfair``: its ``target`` is set so), ``base_rate`` (0.5),
        ``label_rate`` (0.5, for ``eo``), ``confidence_level`` (0.95) and ``allocation``
        (``balanced``: the same number per group, drawn within each group, the audit's
        per-group draw; ``uniform``: rows at random from the pool, each group getting its
        share; ``neyman``: per group, in proportion to the binomial standard deviation of its
        planned rate, each at least half its equal share, as the audit; ``adaptive``: the
        audit's batches under a cap).
    search : PlanSearch, optional
        How the budget is searched (:class:`~fairprobe.stats.plan_options.PlanSearch`):
        ``power`` (0.8), ``reps`` and ``seed`` (simulated audits per budget), ``max_budget``,
        ``resolution`` (relative, of the bisection), ``stand_in`` (two groups judged by
        Newcombe's interval: seconds instead of tens of seconds, a budget too small, see
        :func:`queries_to_decide` for how it is scaled up) and ``check_reps`` (audits of the
        check at the chosen budget; default 100 exact audits with two groups, ``reps``
        otherwise).
    pool_rows : mapping, optional
        Rows of each group in the query pool: the plan says per group how many it needs, flags
        the groups the pool cannot supply and, if any, the power of an audit of the whole pool.
    **flags
        The fields of ``model`` (but ``target``) and ``search`` as keywords (the compatibility
        form, e.g. ``gap=0.2, reps=500``), overriding the objects'.

    Notes
    -----
    The gap is placed on every group in turn (each distinct share under ``uniform``; one
    placement under a per-group allocation, where the sizes do not depend on the placement)
    and the power is the smallest: the plan holds wherever the gap falls. The search (doubling
    then bisection) simulates ``reps`` audits per budget; with two groups it judges them by
    Newcombe's (Koopman's) interval and scales the budget by the squared ratio of the exact
    interval's width to it; then ``check_reps`` audits of the exact default interval at the
    chosen budget, on another seed, give the printed power and its standard error.
    """
    o, s = plan_objects("plan_audit_budget", flags, model, search, accepted=_PLAN_FLAGS)
    metric = _metrics.resolve(metric, path="plan").short
    names, sh = _ordered_shares(group_shares)
    p = _Planner(metric, tolerance, sh, _checked_model(metric, tolerance, sh, o, s.power), s)
    curve, budget, searched, hardest = _search_budget(p)
    creps = int(s.check_reps if s.check_reps is not None else
                (_TWO_GROUP_CHECK_REPS if p.two else s.reps))
    budget, checked, hardest_check, method = _checked_budget(p, budget, hardest, creps)
    se = math.sqrt(max(checked * (1.0 - checked), 1e-12) / creps)
    m, g = p.model, sh.size
    sizes = (allocate(budget, sh) if m.allocation == "uniform" else
             allocate(budget, _weights(m.allocation, sh, _rates(p.kind, g, m.base_rate, m.gap,
                                                                on=hardest))))
    pool, reachable = (None, None) if pool_rows is None else _pool_report(
        p, names, sizes, pool_rows, creps)
    assert m.target is not None  # set by _checked_model
    return AuditPlan(metric=metric, tolerance=float(tolerance), gap=float(m.gap),
                     target=m.target, power_goal=float(s.power), budget=budget, power=checked,
                     group_shares=dict(zip(names, sh.tolist(), strict=True)),
                     base_rate=float(m.base_rate), label_rate=float(m.label_rate),
                     confidence_level=float(m.confidence_level), reps=int(s.reps),
                     seed=int(s.seed), curve=curve, allocation=m.allocation,
                     searched_power=searched, check_reps=creps, power_se=se,
                     hardest_group=names[hardest_check], method=method,
                     group_sizes=dict(zip(names, sizes.tolist(), strict=True)),
                     pool=pool, reachable=reachable,
                     adaptive=None if m.allocation != "adaptive" else adaptive_outcome(
                         metric, tolerance, g, budget, gap=m.gap, target=m.target,
                         base_rate=m.base_rate, label_rate=m.label_rate,
                         confidence_level=m.confidence_level, reps=creps, seed=s.seed + 1,
                         on=hardest_check))  # fmt: skip


def _ordered_shares(group_shares: Mapping[str, float]) -> tuple[list[str], np.ndarray]:
    """The groups and their shares (normalised) in one canonical order, largest share first,
    then by name: the order the shares are listed in never changes the plan."""
    items = sorted(((str(k), float(v)) for k, v in group_shares.items()),
                   key=lambda kv: (-kv[1] if math.isfinite(kv[1]) else 0.0, kv[0]))
    names = [k for k, _ in items]
    sh = np.asarray([v for _, v in items], dtype=np.float64)
    if sh.size < 2 or not np.isfinite(sh).all() or (sh <= 0).any():
        raise InvalidParameterError("plan: --group-shares needs at least two groups with "
                                    "shares > 0, e.g. 'a=0.5,b=0.3,c=0.2'.")
    sh = sh / sh.sum()
    if sh.size > _PLAN_MAX_GROUPS:  # the simulation holds reps x groups x pairs numbers
        raise InvalidParameterError(
            f"plan: {sh.size:,} groups is more than the planner simulates ({_PLAN_MAX_GROUPS:,}); "
            "plan for the groups the question compares (e.g. a coarser --group-col).")
    return names, sh


def _checked_model(metric: str, tolerance: float, sh: np.ndarray, model: PlannedAudit,
                   power: float) -> PlannedAudit:
    """``model`` checked (messages naming the ``fairprobe plan`` flags), with its target: fair
    when the gap is within the tolerance, unfair beyond it."""
    kind = _METRICS[metric][0]
    gap, base_rate, label_rate = model.gap, model.base_rate, model.label_rate
    if not 0.0 < power < 1.0:
        raise InvalidParameterError(f"plan: --power must be in (0, 1); got {power!r}.")
    if not 0.0 < base_rate < 1.0 or not 0.0 < label_rate <= 1.0:
        raise InvalidParameterError("plan: --base-rate must be in (0, 1) and --label-rate in "
                                    "(0, 1].")
    if kind == "ratio":
        target = "fair" if 1.0 - gap >= tolerance else "unfair"
    else:
        target = "fair" if gap <= tolerance else "unfair"
        if base_rate + gap > 1.0:
            raise InvalidParameterError(f"plan: --base-rate {base_rate:g} + --gap {gap:g} "
                                        "exceeds 1.")
    if target == "fair" and (gap == tolerance if kind == "difference"
                             else 1.0 - gap == tolerance):
        raise InvalidParameterError("plan: a gap exactly at the tolerance is never decided "
                                    "fair with high probability; plan for a smaller gap.")
    if model.allocation not in ALLOCATIONS:
        raise InvalidParameterError(f"plan: --allocation must be one of {', '.join(ALLOCATIONS)}; "
                                    f"got {model.allocation!r}.")
    return replace(model, target=target)


@dataclass(frozen=True)
class _Planner:
    """One plan's question, checked: the power of the simulated audit at a budget, the gap
    on the group ``on`` or on the hardest of the placements."""

    metric: str
    tolerance: float
    sh: np.ndarray
    model: PlannedAudit
    search: PlanSearch

    @property
    def kind(self) -> str:
        return _METRICS[self.metric][0]

    @property
    def two(self) -> bool:
        """Two groups judged by the exact default: the search runs on the stand-in."""
        return self.sh.size == 2 and not self.search.stand_in

    @property
    def places(self) -> list[int]:
        """The groups the gap is put on: the power printed is the smallest over them (groups
        of equal share, or equal sizes under a fixed allocation, are one placement)."""
        if self.model.allocation == "uniform":
            return [int(i) for i in np.unique(self.sh, return_index=True)[1]]
        return [0]

    def power_at(self, n: int, on: int, fast: bool, reps: int | None = None,
                 seed: int | None = None, fixed_sizes: np.ndarray | None = None) -> float:
        s = self.search
        return simulated_power(self.metric, self.tolerance, self.sh, n, model=self.model,
                               reps=s.reps if reps is None else reps,
                               seed=s.seed if seed is None else seed, stand_in=fast, on=on,
                               fixed_sizes=fixed_sizes)  # fmt: skip

    def weakest(self, n: int, fast: bool, reps: int | None = None,
                seed: int | None = None) -> tuple[float, int]:
        """The smallest power over the placements, and the placement."""
        return min((self.power_at(n, on, fast, reps, seed), on) for on in self.places)


def _search_budget(p: _Planner) -> tuple[list[tuple[int, float]], int, float, int]:
    """Doubling then bisection on the budget: the power curve, the budget found, its power and
    the hardest placement. Two groups: the search runs on Newcombe's (Koopman's) interval,
    seconds not minutes."""
    s = p.search
    fast = p.two or s.stand_in
    curve: list[tuple[int, float]] = []
    lo, hi = 0, 64 * p.sh.size
    while True:
        pw, _ = p.weakest(hi, fast)
        curve.append((hi, pw))
        if pw >= s.power:
            break
        lo = hi
        hi *= 2
        if hi > s.max_budget:
            raise InvalidParameterError(
                f"plan: no budget up to {s.max_budget:,} reaches power {s.power:g} (the gap is "
                f"too close to the tolerance); plan for a gap further from it.")
    while hi - lo > max(1, math.ceil(hi * s.resolution)):
        mid = (lo + hi) // 2
        pw, _ = p.weakest(mid, fast)
        curve.append((mid, pw))
        lo, hi = (lo, mid) if pw >= s.power else (mid, hi)
    curve.sort()
    searched, hardest = p.weakest(hi, fast)
    return curve, int(hi), searched, hardest


def _checked_budget(p: _Planner, budget: int, hardest: int, creps: int
                    ) -> tuple[int, float, int, str]:
    """The searched budget checked by ``creps`` audits on another seed (two groups: first
    scaled by the exact interval's squared width ratio), raised by 3% until the check holds;
    the budget, its checked power, the hardest placement and how it was found."""
    s, m, seed = p.search, p.model, p.search.seed + 1
    if p.two:
        w = _weights(m.allocation, p.sh, _rates(p.kind, 2, m.base_rate, m.gap, on=hardest))
        ratio = max(_width_ratio_at(p.kind, p.metric, w, budget, m.base_rate, m.gap,
                                    m.label_rate, m.confidence_level, on=on)
                    for on in p.places)  # fmt: skip
        budget = int(math.ceil(budget * ratio**2))
        method = ("search: simulated audits judged by Newcombe's (Koopman's) interval, the "
                  "budget scaled by the squared ratio of the exact interval's width to it; "
                  f"check: {creps:,} simulated audits with the exact default interval at that "
                  "budget (another seed)")
    else:
        method = ("search: simulated audits with the exact simultaneous intervals (the "
                  f"default); check: {creps:,} simulated audits at that budget (another seed)")
    checked, hardest_check = p.weakest(budget, s.stand_in, creps, seed)
    if m.allocation == "adaptive":
        method += ("; adaptive: the check (and with three groups or more the search) "
                   "simulates the batched design (simulate_adaptive)")
    # the check falls short of the goal: raise the budget by 3% until it holds (at most
    # twice with two groups, where each exact check costs seconds)
    for _ in range(2 if p.two else 20):
        if checked >= s.power:
            break
        budget = int(math.ceil(budget * 1.03))
        checked, hardest_check = p.weakest(budget, s.stand_in, creps, seed)
    return budget, checked, hardest_check, method


def _pool_report(p: _Planner, names: list[str], sizes: np.ndarray,
                 pool_rows: Mapping[str, int], creps: int
                 ) -> tuple[dict[str, dict[str, int | bool]], dict[str, Any] | None]:
    """Per group the pool's rows, the plan's need and whether the pool falls short; if some
    group does, the power of an audit of every row of the pool."""
    rows = np.asarray([int(pool_rows.get(nm, 0)) for nm in names], dtype=np.int64)
    pool: dict[str, dict[str, int | bool]] = {
        nm: {"rows": int(r), "needed": int(k), "short": bool(k > r)}
        for nm, r, k in zip(names, rows, sizes.tolist(), strict=True)}
    if not any(v["short"] for v in pool.values()):
        return pool, None
    g = p.sh.size
    # two groups: half the check's exact audits per placement, to stay in seconds
    wreps = max(creps // 2, 20) if g == 2 else creps
    # every row of the pool: the sizes are the rows, whatever the planned allocation
    whole_model = replace(p.model, allocation="uniform")
    whole = [simulated_power(p.metric, p.tolerance, p.sh, int(rows.sum()), model=whole_model,
                             reps=wreps, seed=p.search.seed + 2, on=on, fixed_sizes=rows)
             for on in (range(g) if g <= _SIMULATED_MAX_GROUPS else p.places)]  # fmt: skip
    return pool, {"queries": int(rows.sum()), "target": p.model.target, "power": min(whole),
                  "reps": wreps}


#: Exact two-group audits simulated at the chosen budget (each costs tens of milliseconds).
_TWO_GROUP_CHECK_REPS = 100


#: The most groups a plan simulates (memory grows with groups x pairs).
_PLAN_MAX_GROUPS = 100

#: Metrics of :class:`~fairprobe.stats.frame.GroupSummary` the planner models.
_PLANNED = {m.name: m.short for m in _metrics.METRICS.values() if m.short in _METRICS}


def queries_to_decide(
    metric: str, threshold: float, estimate: float, shares: Mapping[str, float], *,
    base_rate: float, queried: float, label_rate: float = 1.0,
    confidence_level: float = 0.95, power: float = 0.8, reps: int = 400, seed: int = 0,
) -> dict[str, Any] | None:
    """How many more queries would likely decide an undetermined summary: the planner
    (:func:`plan_audit_budget`) run on the observed rates, the estimate taken as the truth.

    ``metric`` is the summary's (``demographic_parity_difference``, ``disparate_impact_ratio``,
    ``equal_opportunity_difference``; others: ``None``), ``estimate`` its largest gap (smallest
    ratio), ``shares`` the groups' shares of the compared rate's instances, ``base_rate`` their
    pooled rate, ``queried`` the queries asked so far and ``label_rate`` the share of them the
    rate counts (the positives for equal opportunity). With two groups the plan uses Newcombe's
    (Koopman's) interval, and its budget is scaled up by the squared ratio of the exact
    interval's width to the stand-in's at that budget's expected counts (a budget scales as one
    over the width squared), so that an audit's reason costs a fraction of a second, not the
    minute of an exact two-group plan.

    Returns ``{"budget", "more", "target", "power", "gap", "assumes", "method"}``, or
    ``{"budget": None, "note"}`` when no budget would likely decide it (the estimate at the
    tolerance).
    """
    key = _PLANNED.get(metric)
    if key is None or not math.isfinite(estimate):
        return None
    kind = _METRICS[key][0]
    gap = abs(float(estimate)) if kind == "difference" else 1.0 - float(estimate)
    base = float(min(max(base_rate, 0.01), 0.99))
    if kind == "difference":
        base = min(base, 1.0 - gap - 1e-9) if gap < 1.0 else base
    two = len(shares) == 2
    # the planner puts the gap on every group and keeps the least power; sorted for a stable key
    shares = dict(sorted(shares.items(), key=lambda kv: kv[1]))
    if len(shares) > _SIMULATED_MAX_GROUPS:
        return _closed_form(kind, float(threshold), gap, shares, base=base, queried=queried,
                            label_rate=min(max(label_rate, 1e-6), 1.0),
                            confidence_level=confidence_level, power=power, estimate=estimate)
    try:
        plan = plan_audit_budget(key, threshold, shares, gap=gap, power=power, base_rate=base,
                                 label_rate=min(max(label_rate, 1e-6), 1.0),
                                 confidence_level=confidence_level, reps=reps, seed=seed,
                                 resolution=0.05, stand_in=two, allocation="uniform")
    except InvalidParameterError as e:
        return {"budget": None, "note": str(e).removeprefix("plan: ")}
    budget = plan.budget
    if two:
        budget = int(math.ceil(budget * _width_ratio(kind, plan) ** 2))
    return {
        "budget": budget, "more": int(max(0, math.ceil(budget - queried))),
        "target": plan.target, "power": power, "gap": gap,
        "assumes": (f"the true {'gap' if kind == 'difference' else 'smallest ratio'} is the "
                    f"estimate ({estimate:.4g}), on whichever group is hardest (the planner puts "
                    f"it on each), the groups' shares as observed (drawn as the audit drew "
                    f"them), their common rate {base:.3g}"),
        "method": ("planner (simulated default audits)" if not two else
                   "planner with Newcombe's/Koopman's interval, scaled by the exact interval's "
                   "squared width ratio at the planned budget's expected counts"),
    }


#: Above this many groups the "more queries" hint is a closed form, not a simulation: simulating
#: the exact family's intervals costs memory in groups x pairs (300 groups: 1.9 GB, 20 s).
_SIMULATED_MAX_GROUPS = 12


def _closed_form(kind: str, threshold: float, gap: float, shares: Mapping[str, float], *,
                 base: float, queried: float, label_rate: float, confidence_level: float,
                 power: float, estimate: float) -> dict[str, Any]:
    r"""The budget at which the worst pair (the two smallest groups) would likely decide, by the
    normal approximation: :math:`N = (z_{1-\alpha/(2m)} + z_{power})^2 v
    (1/s_1 + 1/s_2) / d^2`, with :math:`m` the pairs, :math:`s_1, s_2` the two smallest shares
    (times the label rate for rates among positives), :math:`v` the largest binomial variance
    of the two rates (of their logs for a ratio) and :math:`d` the distance from the gap to the
    threshold. Memory and time constant in the groups."""
    from scipy.special import ndtri

    sh = sorted(float(v) for v in shares.values())
    tot = sum(sh)
    s1, s2 = sh[0] / tot * label_rate, sh[1] / tot * label_rate
    m = len(sh) * (len(sh) - 1) / 2
    z = float(ndtri(1.0 - (1.0 - confidence_level) / (2.0 * m))) + float(ndtri(power))
    if kind == "difference":
        hi = min(base + gap, 1.0 - 1e-9)
        v = max(base * (1 - base), hi * (1 - hi))
        d = abs(gap - threshold)
    else:  # log ratio: var(log p^) ~ (1 - p) / (n p)
        lo = max(base * (1.0 - gap), 1e-9)
        v = max((1 - base) / base, (1 - lo) / lo)
        d = abs(math.log(max(1.0 - gap, 1e-12)) - math.log(threshold))
    if d <= 0:
        return {"budget": None, "note": "the estimate is at the threshold: no budget would "
                "likely decide it"}
    budget = int(math.ceil(z * z * v * (1.0 / s1 + 1.0 / s2) / (d * d)))
    target = ("fair" if gap <= threshold else "unfair") if kind == "difference" else (
        "fair" if 1.0 - gap >= threshold else "unfair")
    return {
        "budget": budget, "more": int(max(0, math.ceil(budget - queried))), "target": target,
        "power": power, "gap": gap,
        "assumes": (f"the true {'gap' if kind == 'difference' else 'smallest ratio'} is the "
                    f"estimate ({estimate:.4g}) and falls between the two smallest groups, the "
                    f"groups' shares as observed, their common rate {base:.3g}"),
        "method": (f"closed form for {len(sh)} groups (normal approximation of the worst "
                   "pair's interval at the family's Bonferroni level; an approximation, not a "
                   "simulation)"),
    }


def _width_ratio(kind: str, plan: AuditPlan) -> float:
    """Exact default's width over the stand-in's at the plan's expected counts (the uniform
    draw, the gap on the first group)."""
    sh = np.asarray(list(plan.group_shares.values()))
    return _width_ratio_at(kind, plan.metric, sh, plan.budget, plan.base_rate, plan.gap,
                           plan.label_rate, plan.confidence_level, on=0)


def _width_ratio_at(kind: str, metric: str, sh: np.ndarray, budget: int, base_rate: float,
                    gap: float, label_rate: float, confidence_level: float, *,
                    on: int) -> float:
    """Exact default's width over the stand-in's at ``budget`` spread by the weights ``sh``
    (>= 1; log widths for ratios; sizes capped at 20,000 per group)."""
    from fairprobe.stats.intervals import newcombe_interval, score_ratio_interval
    from fairprobe.stats.unconditional import (
        unconditional_difference_interval,
        unconditional_ratio_interval,
    )

    lab = label_rate if _METRICS[metric][1] == "true_positive_rate" else 1.0
    # at most 20,000 per group: the ratio settles towards 1 as the sizes grow, and the exact
    # interval of larger groups costs seconds
    n = np.maximum(np.rint(min(budget, 20_000 / max(sh.max() * lab, 1e-9)) * sh * lab), 1.0)
    k = np.rint(n * _rates(kind, 2, base_rate, gap, on=on))
    ex = unconditional_difference_interval if kind == "difference" else \
        unconditional_ratio_interval
    si = newcombe_interval if kind == "difference" else score_ratio_interval
    b = [float(x) for x in (*ex(k[0], n[0], k[1], n[1], confidence_level),
                            *si(k[0], n[0], k[1], n[1], confidence_level))]
    if kind == "ratio":
        with np.errstate(divide="ignore"):
            b = [float(np.log(x)) for x in b]
    w_ex, w_si = b[1] - b[0], b[3] - b[2]
    if not (math.isfinite(w_ex) and math.isfinite(w_si) and w_si > 0):
        return 1.0
    return max(1.0, w_ex / w_si)


def adaptive_outcome(metric: str, tolerance: float, groups: int, cap: int, *, gap: float,
                     target: str, base_rate: float = 0.5, label_rate: float = 0.5,
                     confidence_level: float = 0.95, reps: int = 2000, seed: int = 0,
                     on: int = 0) -> dict[str, Any]:
    """What ``audit --allocation adaptive`` with a budget cap of ``cap`` does, simulated.

    ``reps`` audits of :func:`fairprobe.stats.allocation.simulate_adaptive`: the cap split as
    balanced, at most :data:`~fairprobe.stats.allocation.ADAPTIVE_BATCHES` batches, each look
    judged by the exact family at the design's look level. Returns the mean queries spent and
    the share of audits decided (and decided ``target``), each with its standard error. For
    ``eo`` each group's positives are its expected ``label_rate`` share of its queries, and the
    queries spent are the positives asked divided by ``label_rate``.
    """
    from fairprobe.stats.allocation import simulate_adaptive

    kind, rate = _METRICS[metric]
    totals = apportion(int(cap), np.full(groups, 1.0 / groups))
    scale = label_rate if rate == "true_positive_rate" else 1.0
    if scale != 1.0:
        totals = np.maximum(1, np.round(totals * scale)).astype(np.int64)
    sim = simulate_adaptive(_rates(kind, groups, base_rate, gap, on=on), totals, reps=reps,
                            rng=np.random.default_rng(seed), kind=kind,  # type: ignore[arg-type]
                            tolerance=tolerance, confidence_level=confidence_level)
    spent = sim["spent"] / scale
    decided = sim["verdict"] != "undetermined"
    hit = sim["verdict"] == target

    def share(x: np.ndarray) -> tuple[float, float]:
        m = float(x.mean())
        return m, math.sqrt(max(m * (1.0 - m), 1e-12) / reps)

    (d, d_se), (t, t_se) = share(decided), share(hit)
    return {"simulated": True, "cap": int(cap), "batches": ADAPTIVE_BATCHES, "reps": int(reps),
            "seed": int(seed), "expected_queries": float(spent.mean()),
            "expected_queries_se": float(spent.std(ddof=1) / math.sqrt(reps)),
            "decided": d, "decided_se": d_se, "target_share": t, "target_share_se": t_se,
            "method": "simulated adaptive audits (fairprobe.stats.allocation.simulate_adaptive): "
                      "the cap split as balanced, each look judged by the exact family at the "
                      "design's look level"}
