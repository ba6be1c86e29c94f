"""The headline charges a question once: DP and DI of the same rates read off one region.

Checks: one share for the two metrics of one set of rates (not split between them); the
region's DP and DI intervals cover whenever the region covers (brute force over the box, with
the region's own coverage computed exactly from binomial probabilities); and a seeded
simulation of the headline's error at the boundary.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from fairprobe.stats import AuditFrame
from fairprobe.stats.exact import clopper_pearson_interval
from fairprobe.stats.finding import Finding, Question
from fairprobe.stats.headline import Entry, family_headline
from fairprobe.stats.refit import rate_box, refit_family
from fairprobe.stats.region import RateBox


def _entries(rates: list[float], n: int, rng: np.random.Generator, tol: float = 0.1,
             question: str = "q") -> list[Entry]:
    k = len(rates)
    labels = np.repeat([f"g{i}" for i in range(k)], n)
    pred = (rng.random(k * n) < np.repeat(rates, n)).astype(int)
    d = AuditFrame(y_pred=pred, sensitive_features=labels, tolerance=tol).to_dict()
    out = []
    for name, s in d["summaries"].items():
        f = Finding.from_dict(s["finding"])
        out.append(Entry(question, f, f.verdict, refit_family(f, d["by_group"], "exact"),
                         label=name, region=rate_box(f, d["by_group"], "exact")))
    return out


def test_dp_and_di_of_the_same_rates_charge_one_share() -> None:
    es = _entries([0.5, 0.4, 0.3], 200, np.random.default_rng(1))
    assert {e.label for e in es} == {"demographic_parity_difference", "disparate_impact_ratio"}
    assert es[0].region is not None and es[0].region == es[1].region
    h = family_headline(es, 0.05)
    assert h.shares == 1 and h.findings == 2
    assert [c.alpha for c in h.entries] == [0.05, 0.05]  # not split between DP and DI
    assert h.error_bound == pytest.approx(0.05)
    assert "1 share for 2 counted findings" in h.sentence()
    # each interval is the one read off the region at the whole share, which for three groups
    # is also the exact family's (same box) at that level
    for c, e in zip(h.entries, es, strict=True):
        assert e.refit is not None and e.region is not None
        assert (c.low, c.high) == pytest.approx(e.refit(0.95))
        assert (c.low, c.high) == pytest.approx(
            e.region.interval(e.finding.question.kind, 0.95))  # type: ignore[union-attr]
    before = family_headline(es, 0.05, share_regions=False)
    assert before.shares == 2 and [c.alpha for c in before.entries] == [0.025, 0.025]
    assert before.error_bound == pytest.approx(0.05)


def test_other_findings_keep_their_own_share() -> None:
    rng = np.random.default_rng(2)
    es = _entries([0.5, 0.4, 0.3], 200, rng, question="a") + \
        _entries([0.3, 0.3, 0.3], 200, rng, question="b")
    lone = _entries([0.3, 0.35, 0.3], 200, rng, question="c")[:1]  # DP alone: its own share
    h = family_headline(es + lone, 0.05)
    assert h.shares == 3
    assert [c.alpha for c in h.entries] == pytest.approx([0.05 / 3] * 5)
    assert h.error_bound == pytest.approx(0.05)
    # two groups: no shared region (their exact two-group intervals are narrower)
    two = _entries([0.5, 0.3], 200, rng)
    assert all(e.region is None for e in two)
    assert family_headline(two, 0.05).shares == 2


def _pairwise_summaries(p: np.ndarray) -> tuple[float, float]:
    return float(p.max() - p.min()), float(p.min() / p.max()) if p.max() > 0 else 1.0


@pytest.mark.parametrize("counts", [((3, 10), (7, 10), (5, 10)), ((0, 6), (6, 6), (2, 5)),
                                    ((1, 8), (2, 9), (1, 7), (8, 8))])
def test_the_region_covering_implies_dp_and_di_cover(counts: tuple[tuple[int, int], ...]) -> None:
    """Every rate vector in the box (its corners and a seeded cloud inside) has its DP and DI
    inside the intervals read off the box."""
    box = RateBox(("selection_rate",), tuple(f"g{i}" for i in range(len(counts))), (counts,))
    for level in (0.8, 0.95):
        lo, hi = box.box(level)
        dlo, dhi = box.interval("difference", level)
        rlo, rhi = box.interval("ratio", level)
        corners = [np.array(c) for c in itertools.product(*zip(lo[0], hi[0], strict=True))]
        cloud = np.random.default_rng(3).uniform(lo[0], hi[0], size=(4000, len(counts)))
        for p in [*corners, *cloud]:
            dp, di = _pairwise_summaries(p)
            assert dlo - 1e-12 <= dp <= dhi + 1e-12
            assert rlo - 1e-12 <= di <= rhi + 1e-12
        # and the upper DP and lower DI bounds are attained at a corner (not wider than needed)
        assert max(_pairwise_summaries(c)[0] for c in corners) == pytest.approx(dhi)
        assert min(_pairwise_summaries(c)[1] for c in corners) == pytest.approx(rlo)


@pytest.mark.parametrize("p", [(0.5, 0.45, 0.4), (0.1, 0.1, 0.9), (0.02, 0.3, 0.5, 0.98)])
def test_the_region_covers_at_its_level_exactly(p: tuple[float, ...]) -> None:
    """P(the box covers every rate), summed exactly over the binomial outcomes, >= level."""
    n = 15
    level = 0.9
    each = level ** (1.0 / len(p))
    ks = np.arange(n + 1)
    lo, hi = clopper_pearson_interval(ks, np.full(n + 1, n), each)
    cover = 1.0
    for pg in p:
        inside = (lo <= pg) & (pg <= hi)
        cover *= float(stats.binom.pmf(ks, n, pg)[inside].sum())
    assert cover >= level - 1e-12
    # and the Sidak split is what the box uses
    box = RateBox(("r",), tuple(f"g{i}" for i in range(len(p))), (tuple((3, n) for _ in p),))
    blo, bhi = box.box(level)
    assert blo[0][0] == pytest.approx(lo[3]) and bhi[0][0] == pytest.approx(hi[3])


def _box_entries(rng: np.random.Generator, p: np.ndarray, n: int) -> list[Entry]:
    """DP and DI findings of one question, built from binomial counts through the region (the
    AuditFrame path is tested above; this keeps the simulation fast)."""
    groups = tuple(f"g{i}" for i in range(len(p)))
    box = RateBox(("selection_rate",), groups,
                  (tuple((int(k), n) for k in rng.binomial(n, p)),))
    out = []
    for metric, kind, thr in (("dp", "difference", 0.1), ("di", "ratio", 0.8)):
        lo, hi = box.interval(kind, 0.95)  # type: ignore[arg-type]
        f = Finding(Question(metric=metric, kind=kind, threshold=thr,  # type: ignore[arg-type]
                             groups=groups, rates=("selection_rate",)),
                    box.estimate(kind), lo, hi, 0.95, "region", coverage="exact")  # type: ignore[arg-type]

        def refit(level: float, kind: str = kind) -> tuple[float, float]:
            return box.interval(kind, level)  # type: ignore[arg-type]

        out.append(Entry("q", f, f.verdict, refit, label=metric, region=box))
    return out


@pytest.mark.parametrize(("truth", "alpha"), [("at-threshold", 0.05), ("just-outside", 0.05),
                                             ("at-threshold", 0.5), ("just-outside", 0.5)])
def test_headline_error_at_the_boundary_stays_below_alpha(truth: str, alpha: float) -> None:
    """Rates 0.5, 0.45, 0.4: DP = 0.1 and DI = 0.8, both exactly at their thresholds (fair), so
    an "unfair" headline is wrong; rates 0.505, 0.45, 0.395 are just outside both (unfair), so a
    "fair" headline is wrong. Seeded reports of three questions, 400 rows a group; at
    alpha = 0.5 wrong "unfair" headlines occur, so the count can fail."""
    rng = np.random.default_rng(int(alpha * 100) + (truth == "at-threshold"))
    p = np.array([0.5, 0.45, 0.4] if truth == "at-threshold" else [0.505, 0.45, 0.395])
    reps = 1500 if alpha < 0.1 else 400
    wrong = 0
    for _ in range(reps):
        es = [Entry(f"q{q}", e.finding, e.verdict, e.refit, e.label, region=e.region)
              for q in range(3) for e in _box_entries(rng, p, 400)]
        h = family_headline(es, alpha)
        assert h.shares == 3
        wrong += h.verdict == ("unfair" if truth == "at-threshold" else "fair")
    rate = wrong / reps
    assert rate <= alpha + 3 * math.sqrt(alpha * (1 - alpha) / reps)
    if alpha >= 0.5 and truth == "at-threshold":
        assert wrong > 0  # (a wrong "fair" needs every question's DP and DI to miss at once)


def test_rate_box_refuses_bad_counts() -> None:
    from fairprobe.errors import InvalidParameterError

    with pytest.raises(InvalidParameterError):
        RateBox(("r",), ("a",), (((1, 2),),))
    with pytest.raises(InvalidParameterError):
        RateBox(("r",), ("a", "b"), (((3, 2), (1, 2)),))


def test_the_report_reads_dp_and_di_of_an_audit_document_off_one_region() -> None:
    from fairprobe.report.build import _entries as report_entries

    rng = np.random.default_rng(6)
    labels = np.repeat(["a", "b", "c"], 300)
    pred = (rng.random(900) < np.repeat([0.75, 0.4, 0.4], 300)).astype(int)
    part = AuditFrame(y_pred=pred, sensitive_features=labels, tolerance=0.1).to_dict()
    es = report_entries("audit", part, "res.json|audit|x", "audit", None)
    assert len(es) == 2 and es[0].region is not None and es[0].region == es[1].region
    assert es[0].question == es[1].question
    h = family_headline(es, 0.05)
    assert h.shares == 1 and [c.alpha for c in h.entries] == [0.05, 0.05]
    assert h.verdict == "unfair"  # a gap of 0.35 at 300 rows a group: both metrics say so
