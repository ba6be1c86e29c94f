r"""One headline verdict on the audited model, wrong with probability at most the user's level.

A report answers many questions (metrics, results files, access levels). Its headline combines
them into one verdict and states **one** error bound, :math:`\le \alpha` (default 0.05), that
holds for the headline as a whole. The rule (proof and assumptions in ``docs/stats.md``,
measured by ``experiments/stats/headline_error.py``):

1. **Only guarantees count.** A finding enters the count only if its verdict comes from an
   interval with an ``exact`` or ``anytime-valid`` guarantee, or a ``conditional`` one whose
   condition the headline states (:attr:`fairprobe.stats.finding.Finding.guarantee`).
   Asymptotic, bootstrap and no-coverage findings, and decisions of tests without a valid
   interval (a non-rejection read as "fair", the paper's GLR with Wald boundaries), are shown
   and marked; their question is ``undetermined`` for the headline, so they can neither make
   it "fair" nor "unfair".
2. **Family-wise level by Bonferroni over the charged units.** A *unit* is either one
   finding, or every counted finding of one question that carries the same shared region
   (:class:`fairprobe.stats.region.RateBox`: the same counts of the same rates on the same
   answers, e.g. DP and DI of one set of selection rates) when there are at least two of
   them. The error budget :math:`\alpha` is split into shares :math:`\alpha_u` with
   :math:`\sum_u \alpha_u \le \alpha`, fixed by the list of findings and their levels
   before any verdict is looked at: a finding whose interval cannot be recomputed at another
   level (a confidence sequence) keeps its own level while it fits (half the budget is kept
   for the others when there are any), and every other unit gets an equal share of the rest.
   A one-finding unit is **recomputed at level** :math:`1 - \alpha_u` from its raw counts; the
   findings of a shared unit are all **read off one region at level** :math:`1 - \alpha_u`
   (a simultaneous Clopper-Pearson box of the per-group rates), so the unit pays one share
   whatever number of metrics answer it. A finding that gets no share is ``undetermined`` for
   the headline. Each finding keeps its own interval and verdict in its section; the headline
   uses the recomputed ones.
3. **Combination over questions.** Findings about the same answers and rates are one
   question: ``unfair`` if any of its headline verdicts is unfair, ``fair`` if all are fair.
   The headline is ``unfair`` if any question is unfair, ``fair`` if every question is fair,
   ``undetermined`` otherwise.

Theorem. If each one-finding unit's interval at level :math:`1 - \alpha_u` covers its true
value with probability at least :math:`1 - \alpha_u` (given its condition, for a conditional
finding), and each shared unit's region covers all its rates at once with probability at least
:math:`1 - \alpha_u`, the headline is wrong with probability at most
:math:`\sum_u \alpha_u \le \alpha`.
A wrong ``unfair`` headline needs a question said unfair on which the model is fair, hence a
counted headline verdict ``unfair`` whose interval lies outside the fair band while the true
value is inside it: the interval missed. A wrong ``fair`` needs a question on which the model
is unfair while every headline verdict of it says fair: some interval lies inside the band
while the true value is outside. ``undetermined`` is never wrong. So a wrong headline needs
a unit that missed: a one-finding unit's interval, or a shared unit's region (if the region
covers every rate, each interval read off it covers its summary, ``fairprobe.stats.region``).
By the union bound the probability that any unit misses is at most :math:`\sum_u \alpha_u`.
The shared units are a choice made from the list of findings (which carry a region), never
from their verdicts, so the shares stay fixed in advance.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from fairprobe.stats.finding import Finding, Verdict, decide
from fairprobe.stats.region import RateBox

__all__ = ["Entry", "Headline", "combine", "family_headline", "normalise"]

#: Default family-wise level of a headline's error: alpha = 0.05.
DEFAULT_ALPHA = 0.05

Refit = Callable[[float], tuple[float, float]]


def combine(verdicts: Iterable[str]) -> Verdict:
    """``unfair`` if any is unfair, ``fair`` if all (and at least one) are fair, else
    ``undetermined``."""
    vs = list(verdicts)
    if "unfair" in vs:
        return "unfair"
    if vs and all(v == "fair" for v in vs):
        return "fair"
    return "undetermined"


@dataclass(frozen=True)
class Entry:
    """One finding offered to the headline.

    ``question`` keys the question it answers; ``finding`` is ``None`` for a verdict word with
    no finding behind it (shown, never counted, ``verdict`` is that word); ``refit(level)``
    recomputes the finding's interval at another level from its raw counts (``None`` when
    it cannot be, e.g. a confidence sequence); ``decide_at(level)`` gives the verdict of a
    test at another level where the finding is a test's decision rather than an interval
    (the monitor's e-process: an alarm at level ``1 - a`` is a crossing of ``log(m / a)``).
    ``not_counted``, when set, says why a finding is shown but never counted (per-window
    findings, each valid for its own window only). ``region``, when set, is the shared
    confidence region of the rates the finding is a function of
    (:class:`fairprobe.stats.region.RateBox`): findings of one question with equal regions
    are charged one share together and read off that region.
    """

    question: str
    finding: Finding | None
    verdict: str = ""
    refit: Refit | None = None
    label: str = ""
    decide_at: Callable[[float], Verdict] | None = None
    not_counted: str | None = None
    region: RateBox | None = None


@dataclass(frozen=True)
class Counted:
    """What the headline did with one entry: its share of the budget, its headline verdict."""

    label: str
    question: str
    status: str  # "counted", "conditional", "not counted"
    why: str
    alpha: float
    verdict: Verdict
    low: float = float("nan")
    high: float = float("nan")


@dataclass(frozen=True)
class Headline:
    """The combined verdict, its per-question tally and its family-wise error bound."""

    verdict: Verdict
    questions: int
    unfair: int
    fair: int
    undetermined: int
    findings: int
    error_bound: float
    level: float = 1.0 - DEFAULT_ALPHA
    shown: int = 0
    conditions: tuple[str, ...] = ()
    entries: tuple[Counted, ...] = field(default=())
    #: how many shares the budget was split into (a shared region's findings take one)
    shares: int = 0

    def sentence(self) -> str:
        if self.questions == 0:
            return "No finding about the audited model: no verdict."
        q = f"{self.questions} question{'' if self.questions == 1 else 's'} about the model"
        tally = (f"{self.unfair} of {q} {'says' if self.unfair == 1 else 'say'} unfair, "
                 f"{self.fair} fair, {self.undetermined} undetermined")
        n = self.findings
        if self.shares and self.shares < n:
            over = (f"Bonferroni over {self.shares} share{'' if self.shares == 1 else 's'} "
                    f"for {n} counted findings, the metrics of the same rates read off one "
                    f"region at their question's share of {1.0 - self.level:.3g}")
        else:
            over = (f"Bonferroni over {n} counted finding{'' if n == 1 else 's'}, each "
                    f"recomputed at its share of {1.0 - self.level:.3g}")
        err = (f"the headline is wrong with probability at most {self.error_bound:.3g} "
               f"(family-wise: {over})")
        if self.conditions:
            err += f", if {' and '.join(self.conditions)}"
        if self.shown:
            err += (f"; {self.shown} finding{' is' if self.shown == 1 else 's are'} shown "
                    f"but not counted (the question table says why)")
        if self.verdict == "unfair":
            return f"The audited model is judged unfair: {tally}; {err}."
        if self.verdict == "fair":
            return f"The audited model is judged fair: every one of {q} says fair; {err}."
        return f"No verdict on the audited model ({tally}): undetermined; {err}."


def _why_not(f: Finding) -> str:
    if f.forced not in (None, "undetermined"):
        return (f"its verdict is the decision of a test without a valid interval "
                f"({f.reason or f.construction}), not a guarantee")
    if f.coverage == "conditional":
        return "its coverage is conditional and the condition is not stated"
    return f"its coverage is {f.coverage}, not guaranteed"


def _units(counted: Sequence[Entry]) -> tuple[dict[int, tuple[str, RateBox]], int]:
    """Which counted entries share a region: ``id -> (question, region)`` for every entry of
    a group of at least two with the same question and equal region, and the number of such
    groups."""
    groups: dict[tuple[str, RateBox], list[Entry]] = {}
    for e in counted:
        if e.region is not None and e.decide_at is None:
            groups.setdefault((e.question, e.region), []).append(e)
    out = {id(e): key for key, es in groups.items() if len(es) >= 2 for e in es}
    return out, sum(1 for es in groups.values() if len(es) >= 2)


def family_headline(entries: Sequence[Entry], alpha: float = DEFAULT_ALPHA, *,
                    share_regions: bool = True) -> Headline:
    """The headline over ``entries`` at family-wise error ``alpha`` (rule in the module
    docstring).

    ``share_regions=False`` charges every finding its own share even when several read off one
    region (the per-finding rule, kept for ``experiments/stats/headline_error.py`` to compare).
    """
    alpha = float(alpha)
    counted = [e for e in entries if e.finding is not None and e.finding.guarantee is not None
               and e.not_counted is None]
    shared, n_shared = _units(counted) if share_regions else ({}, 0)
    fixed = [e for e in counted if e.refit is None and e.decide_at is None
             and id(e) not in shared]
    flexible = [e for e in counted if (e.refit is not None or e.decide_at is not None)
                and id(e) not in shared]
    n_units = len(flexible) + n_shared
    # shares, from the list of findings and their levels only (never from their verdicts)
    reserve = alpha / 2.0 if n_units else 0.0
    share: dict[int, float] = {}
    used = 0.0
    n_fixed = 0
    for e in fixed:
        assert e.finding is not None
        a = 1.0 - float(e.finding.confidence_level)
        if used + a <= alpha - reserve + 1e-12:
            share[id(e)] = a
            used += a
            n_fixed += 1
    each = (alpha - used) / n_units if n_units else 0.0
    for e in flexible:
        share[id(e)] = each
    for i in shared:
        share[i] = each
    charged: set[tuple[str, RateBox]] = set()
    out: list[Counted] = []
    per_q: dict[str, list[str]] = {}
    conditions: list[str] = []
    total = 0.0
    shown = 0
    for e in entries:
        f = e.finding
        if e.not_counted is not None:
            shown += 1
            per_q.setdefault(e.question, []).append("undetermined")
            out.append(Counted(e.label, e.question, "not counted", e.not_counted, 0.0,
                               "undetermined"))
            continue
        if f is None or f.guarantee is None:
            shown += 1
            per_q.setdefault(e.question, []).append("undetermined")
            why = (f"no finding backs the verdict {e.verdict!r}" if f is None else _why_not(f))
            out.append(Counted(e.label, e.question, "not counted", why, 0.0, "undetermined"))
            continue
        a = share.get(id(e), 0.0)
        if a <= 0.0:
            per_q.setdefault(e.question, []).append("undetermined")
            out.append(Counted(e.label, e.question, "not counted",
                               f"its level {f.confidence_level:g} does not fit in the "
                               f"headline's budget {alpha:g}", 0.0, "undetermined"))
            shown += 1
            continue
        v: Verdict
        unit = shared.get(id(e))
        if unit is not None:
            assert e.region is not None
            lo, hi = e.region.interval(f.question.kind, 1.0 - a)  # type: ignore[arg-type]
            v = ("undetermined" if f.forced == "undetermined" else
                 decide(lo, hi, kind=f.question.kind, threshold=f.question.threshold))
        elif e.decide_at is not None:
            lo, hi, v = math.nan, math.nan, e.decide_at(1.0 - a)
        elif e.refit is not None:
            lo, hi = e.refit(1.0 - a)
            v = ("undetermined" if f.forced == "undetermined" else
                          decide(lo, hi, kind=f.question.kind, threshold=f.question.threshold))
        else:
            lo, hi, v = f.low, f.high, f.verdict
        if unit is None or unit not in charged:
            total += a
        if unit is not None:
            charged.add(unit)
        status = "counted" if f.guarantee == "guaranteed" else "conditional"
        if f.guarantee == "conditional" and f.condition and f.condition not in conditions:
            conditions.append(f.condition)
        per_q.setdefault(e.question, []).append(v)
        why = (f"read off its question's shared region at level {1.0 - a:.4g} (one share "
               f"for every metric of these rates)" if unit is not None else
               f"recomputed at level {1.0 - a:.4g}"
               if e.refit is not None or e.decide_at is not None
               else f"its own level {f.confidence_level:g}")
        out.append(Counted(e.label, e.question, status, why, a, v, lo, hi))
    verdicts = [combine(v) for v in per_q.values()]
    return Headline(
        verdict=combine(verdicts), questions=len(verdicts), unfair=verdicts.count("unfair"),
        fair=verdicts.count("fair"), undetermined=verdicts.count("undetermined"),
        findings=sum(1 for c in out if c.status != "not counted"),
        error_bound=min(1.0, total) if total > 0 else 0.0, level=1.0 - alpha, shown=shown,
        conditions=tuple(conditions), entries=tuple(out),
        shares=n_fixed + len(flexible) + n_shared,
    )


_WORDS = {"unfair": "unfair", "violation": "unfair", "fair": "fair", "compliant": "fair",
          "compliance": "fair"}


def normalise(verdict: str | None) -> Verdict:
    """A method's verdict word as fair / unfair / undetermined."""
    v = _WORDS.get((verdict or "").lower(), "undetermined")
    return "unfair" if v == "unfair" else ("fair" if v == "fair" else "undetermined")
