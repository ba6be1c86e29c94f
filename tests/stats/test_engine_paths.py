"""One question, one verdict: every path of the verdict engine agrees.

Guarantee checked: for random data sets (2-8 groups, 5-5,000 per group, rates including 0 and 1,
every metric), the two-group functions, ``compute_metric``, ``AuditFrame.summary`` and the
findings they expose give the same interval (up to the orientation of a signed difference) and
the same verdict for the same question; equalized odds is never below equal opportunity or the
FPR gap; every verdict is ``decide`` of its own interval.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fairprobe.errors import DataError, EmptyGroupError
from fairprobe.stats import AuditFrame, compute_metric
from fairprobe.stats.api import (
    demographic_parity_difference,
    disparate_impact_ratio,
    equal_opportunity_difference,
)
from fairprobe.stats.finding import Finding, decide

RATE = st.sampled_from([0.0, 1.0, 0.001, 0.02, 0.1, 0.3, 0.5, 0.7, 0.9, 0.98, 0.999])


@st.composite
def datasets(draw: st.DrawFn, min_groups: int = 2, max_groups: int = 8) -> dict:
    g = draw(st.integers(min_groups, max_groups))
    sizes = draw(st.lists(st.integers(5, 5000), min_size=g, max_size=g))
    sel = draw(st.lists(RATE, min_size=g, max_size=g))
    base = draw(st.lists(RATE, min_size=g, max_size=g))
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    labels = np.repeat([f"g{i}" for i in range(g)], sizes)
    p_pred = np.repeat(sel, sizes)
    p_true = np.repeat(base, sizes)
    y_true = (rng.random(labels.size) < p_true).astype(int)
    # decisions depend on the label a little, so TPR and FPR differ
    y_pred = (rng.random(labels.size) < np.clip(p_pred + 0.1 * (2 * y_true - 1), 0, 1)).astype(int)
    mgs = draw(st.sampled_from([1, 20]))
    return {"groups": labels, "y_true": y_true, "y_pred": y_pred, "min_group_size": mgs}


def _frame_verdict(af: AuditFrame, metric: str) -> tuple[str, object]:
    try:
        s = af.summary(metric)
    except DataError:  # fewer than two groups qualify: the question stays open
        return "undetermined", None
    assert s.verdict == decide(s.low, s.high, kind=s.kind, threshold=s.threshold)
    f = s.finding
    assert f.verdict == s.verdict and Finding.from_dict(f.to_dict()).verdict == f.verdict
    return s.verdict, s


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(datasets(2, 2))
def test_two_groups_same_question_same_interval_and_verdict(d: dict) -> None:
    af = AuditFrame(y_pred=d["y_pred"], y_true=d["y_true"], sensitive_features=d["groups"],
                    min_group_size=d["min_group_size"])
    for metric, fn in (("dp", demographic_parity_difference),
                       ("eo", equal_opportunity_difference)):
        fv, s = _frame_verdict(af, metric)
        try:
            r = compute_metric(metric, sensitive_features=d["groups"], y_pred=d["y_pred"],
                               y_true=d["y_true"], group_a="g0", group_b="g1",
                               min_group_size=d["min_group_size"])
        except EmptyGroupError:  # a group with no y_true = 1: the frame leaves it out
            assert fv == "undetermined"
            continue
        r2 = fn(d["y_true"], d["y_pred"], sensitive_features=d["groups"], group_a="g0",
                group_b="g1", min_group_size=d["min_group_size"])
        assert (r2.interval, r2.verdict) == (r.interval, r.verdict)
        assert r.verdict == fv, (metric, r, s)
        assert r.finding.verdict == r.verdict
        if s is not None:  # the largest gap's interval is the signed one's absolute image
            lo, hi = r.interval
            assert s.high == pytest.approx(max(hi, -lo), abs=1e-12)
            assert s.low == pytest.approx(max(0.0, lo, -hi), abs=1e-12)
            assert s.family_size == 1
    # the ratio: the every-group question is symmetric (each group's rate at least the floor
    # times the other's), so it is fair iff both orientations are, unfair iff one is
    fv, s = _frame_verdict(af, "di")
    ab = disparate_impact_ratio(None, d["y_pred"], sensitive_features=d["groups"], group_a="g0",
                                group_b="g1", min_group_size=d["min_group_size"])
    ba = disparate_impact_ratio(None, d["y_pred"], sensitive_features=d["groups"], group_a="g1",
                                group_b="g0", min_group_size=d["min_group_size"])
    vs = {ab.verdict, ba.verdict}
    want = "unfair" if "unfair" in vs else ("fair" if vs == {"fair"} else "undetermined")
    if s is None or not (math.isfinite(ab.estimate) and math.isfinite(ba.estimate)):
        return  # a zero rate: the pair form has no finite ratio to compare
    assert fv == want, (ab, ba, s)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(datasets(2, 8))
def test_equalized_odds_is_at_least_each_of_its_rates(d: dict) -> None:
    af = AuditFrame(y_pred=d["y_pred"], y_true=d["y_true"],
                    sensitive_features=pd.Series(d["groups"], name="g"),
                    min_group_size=d["min_group_size"])
    verdicts = {m: _frame_verdict(af, m) for m in ("eo", "fpr", "eodds", "dp", "di", "ppv",
                                                   "accuracy-gap", "error-rate")}
    eo, fpr, eodds = verdicts["eo"][1], verdicts["fpr"][1], verdicts["eodds"][1]
    if eodds is not None:
        for part in (eo, fpr):
            if part is not None:
                assert eodds.estimate >= part.estimate - 1e-12  # type: ignore[attr-defined]
    if eo is not None and fpr is not None:
        assert eodds is not None
    # a group left out is listed with its reason
    for _, s in verdicts.values():
        if s is not None:
            assert set(s.excluded).isdisjoint(s.compared) or len(s.rates) > 1  # type: ignore
            for why in s.excluded.values():  # type: ignore[attr-defined]
                assert "min_group_size" in why or "no instance" in why


def test_small_group_two_group_question_is_undetermined_with_reason() -> None:
    g = np.array(["a"] * 10 + ["b"] * 500)
    p = np.r_[np.zeros(10), np.ones(500)].astype(int)
    r = compute_metric("dp", sensitive_features=g, y_pred=p, group_a="a", group_b="b",
                       min_group_size=20)
    assert r.verdict == "undetermined" and "min_group_size 20" in (r.undetermined_reason or "")
    assert r.finding.forced == "undetermined" and r.finding.reason == r.undetermined_reason
    # the default compares every group: 0 of 10 against 500 of 500 is decided even so
    r1 = compute_metric("dp", sensitive_features=g, y_pred=p, group_a="a", group_b="b")
    assert r1.verdict == "unfair"
    with pytest.raises(DataError, match="two groups large enough"):
        AuditFrame(y_pred=p, sensitive_features=g, min_group_size=20).summary("dp")
    assert AuditFrame(y_pred=p, sensitive_features=g).summary("dp").verdict == "unfair"
