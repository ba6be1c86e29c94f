"""The planner's options objects (:mod:`fairprobe.stats.plan_options`): the objects and the flat
keywords of the compatibility form plan the same budget, and a wrong keyword fails as a
function's does."""

from __future__ import annotations

import numpy as np
import pytest

from fairprobe.errors import InvalidParameterError
from fairprobe.stats.plan import plan_audit_budget, simulated_power
from fairprobe.stats.plan_options import PlannedAudit, PlanSearch

SHARES = {"a": 0.5, "b": 0.3, "c": 0.2}


def test_objects_and_flat_keywords_plan_the_same_budget() -> None:
    flat = plan_audit_budget("dp", 0.1, SHARES, gap=0.25, reps=200, seed=4, allocation="uniform")
    objs = plan_audit_budget("dp", 0.1, SHARES, model=PlannedAudit(gap=0.25, allocation="uniform"),
                             search=PlanSearch(reps=200, seed=4))
    assert objs.to_dict() == flat.to_dict()
    # a flat keyword overrides the object's field
    mixed = plan_audit_budget("dp", 0.1, SHARES, model=PlannedAudit(gap=0.0), gap=0.25,
                              search=PlanSearch(reps=200, seed=4), allocation="uniform")
    assert mixed.to_dict() == flat.to_dict()
    other = plan_audit_budget("dp", 0.1, SHARES, gap=0.25, reps=200, seed=5, allocation="uniform")
    assert other.curve != flat.curve  # the seed reaches the search through the object


def test_the_planner_sets_the_target_from_the_gap() -> None:
    plan = plan_audit_budget("dp", 0.1, SHARES, model=PlannedAudit(gap=0.25, target="fair"),
                             reps=200)
    assert plan.target == "unfair"


def test_wrong_keywords_fail_as_a_function_does() -> None:
    with pytest.raises(TypeError, match=r"plan_audit_budget\(\) got an unexpected keyword "
                                        "argument 'target'"):
        plan_audit_budget("dp", 0.1, SHARES, target="fair")
    with pytest.raises(TypeError, match=r"simulated_power\(\) got an unexpected keyword "
                                        "argument 'power'"):
        simulated_power("dp", 0.1, np.array([0.5, 0.5]), 100, gap=0.0, target="fair", power=0.8)
    with pytest.raises(TypeError, match="missing 2 required keyword-only arguments: 'gap' and "
                                        "'target'"):
        simulated_power("dp", 0.1, np.array([0.5, 0.5]), 100)
    with pytest.raises(InvalidParameterError, match="Expected a PlanSearch"):
        plan_audit_budget("dp", 0.1, SHARES, search=PlannedAudit())  # type: ignore[arg-type]


def test_simulated_power_reads_the_model() -> None:
    sh = np.array([0.5, 0.3, 0.2])
    flat = simulated_power("dp", 0.05, sh, 800, gap=0.2, target="unfair", reps=300, seed=1)
    # without a model the flat form's allocation is uniform; the object's default is balanced
    model = PlannedAudit(gap=0.2, target="unfair", allocation="uniform")
    assert simulated_power("dp", 0.05, sh, 800, model=model, reps=300, seed=1) == flat
    balanced = simulated_power("dp", 0.05, sh, 800, model=PlannedAudit(gap=0.2, target="unfair"),
                               reps=300, seed=1)
    assert balanced == simulated_power("dp", 0.05, sh, 800, gap=0.2, target="unfair", reps=300,
                                       seed=1, allocation="balanced")
    assert 0.0 < flat < 1.0


def test_two_source_budget_rates_object_equals_the_positional_form() -> None:
    # the two-source planner's population (fairprobe.twosource.budget.PlanningRates), beside
    # the audit planner's objects: the same plan from the object, the positional rates and
    # the flat keywords
    from fairprobe.twosource.budget import PlanningRates, plan_budget

    rates = (0.1205, 0.4686, 0.333)
    flat = plan_budget(30_000, 0.1, 0.8, *rates, accuracy_unprivileged=0.648,
                       accuracy_privileged=0.838)
    obj = plan_budget(30_000, 0.1, 0.8, rates=PlanningRates(
        *rates, accuracy_unprivileged=0.648, accuracy_privileged=0.838))
    assert obj.to_dict() == flat.to_dict()
    assert obj.recommended["accuracy_unprivileged"] == 0.648
    matrix = plan_budget(30_000, 0.1, 0.8, rates=PlanningRates(*rates), sigma_b_value=3.0)
    assert matrix.recommended["b_estimator"] == "matrix"
    with pytest.raises(TypeError, match="missing 1 required positional argument: "
                                        "'share_unprivileged'"):
        plan_budget(1000, 0.1, 0.9, 0.1, 0.4)
    with pytest.raises(TypeError, match="unexpected keyword argument 'sigma_b'"):
        plan_budget(1000, 0.1, 0.9, *rates, sigma_b=3.0)
