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
2. **Family-wise level by Bonferroni over the counted findings.** The error budget
   :math:`\alpha` is split into shares :math:`\alpha_i` with :math:`\sum_i \alpha_i \le
   \alpha`, fixed by the list of findings and their levels before any verdict is looked at:
   a finding whose interval cannot be recomputed at another level (a confidence sequence)
   keeps its own level :math:`\alpha_i` while it fits (half the budget is kept for the
   others when there are any), and every recomputable finding gets an equal share of the
   rest and is **recomputed at level** :math:`1 - \alpha_i` from its raw counts. A finding
   that gets no share is ``undetermined`` for the headline. Each finding keeps its own
   interval and verdict in its section; the headline uses the recomputed ones.
3. **Combination over questions.** Findings about the same answers and rates are one
   question: ``unfair`` if any of its headline verdicts is unfair, ``fair`` if all are fair.
   The headline is ``unfair`` if any question is unfair, ``fair`` if every question is fair,
   ``undetermined`` otherwise.

Theorem. If each counted finding's interval at level :math:`1 - \alpha_i` covers its true
value with probability at least :math:`1 - \alpha_i` (given its condition, for a conditional
finding), the headline is wrong with probability at most :math:`\sum_i \alpha_i \le \alpha`.
A wrong ``unfair`` headline needs a question said unfair on which the model is fair, hence a
counted headline verdict ``unfair`` whose interval lies outside the fair band while the true
value is inside it: the interval missed. A wrong ``fair`` needs a question on which the model
is unfair while every headline verdict of it says fair: some interval lies inside the band
while the true value is outside. ``undetermined`` is never wrong. By the union bound the
probability that any counted interval misses is at most :math:`\sum_i \alpha_i`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from fairprobe.stats.finding import Finding, Verdict, decide

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
    findings, each valid for its own window only).
    """

    question: str
    finding: Finding | None
    verdict: str = ""
    refit: Refit | None = None
    label: str = ""
    decide_at: Callable[[float], Verdict] | None = None
    not_counted: str | None = None


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

    def sentence(self) -> str:
        if self.questions == 0:
            return "No finding about the audited model: no verdict."
        q = f"{self.questions} question{'' if self.questions == 1 else 's'} about the model"
        tally = (f"{self.unfair} of {q} {'says' if self.unfair == 1 else 'say'} unfair, "
                 f"{self.fair} fair, {self.undetermined} undetermined")
        n = self.findings
        err = (f"the headline is wrong with probability at most {self.error_bound:.3g} "
               f"(family-wise: Bonferroni over {n} counted finding{'' if n == 1 else 's'}, "
               f"each recomputed at its share of {1.0 - self.level:.3g})")
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


def family_headline(entries: Sequence[Entry], alpha: float = DEFAULT_ALPHA) -> Headline:
    """The headline over ``entries`` at family-wise error ``alpha`` (rule in the module
    docstring)."""
    alpha = float(alpha)
    counted = [e for e in entries if e.finding is not None and e.finding.guarantee is not None
               and e.not_counted is None]
    fixed = [e for e in counted if e.refit is None and e.decide_at is None]
    flexible = [e for e in counted if e.refit is not None or e.decide_at is not None]
    # shares, from the list of findings and their levels only (never from their verdicts)
    reserve = alpha / 2.0 if flexible else 0.0
    share: dict[int, float] = {}
    used = 0.0
    for e in fixed:
        assert e.finding is not None
        a = 1.0 - float(e.finding.confidence_level)
        if used + a <= alpha - reserve + 1e-12:
            share[id(e)] = a
            used += a
    each = (alpha - used) / len(flexible) if flexible else 0.0
    for e in flexible:
        share[id(e)] = each
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
        if e.decide_at is not None:
            lo, hi, v = math.nan, math.nan, e.decide_at(1.0 - a)
        elif e.refit is not None:
            lo, hi = e.refit(1.0 - a)
            v = ("undetermined" if f.forced == "undetermined" else
                          decide(lo, hi, kind=f.question.kind, threshold=f.question.threshold))
        else:
            lo, hi, v = f.low, f.high, f.verdict
        total += a
        status = "counted" if f.guarantee == "guaranteed" else "conditional"
        if f.guarantee == "conditional" and f.condition and f.condition not in conditions:
            conditions.append(f.condition)
        per_q.setdefault(e.question, []).append(v)
        out.append(Counted(e.label, e.question, status,
                           f"recomputed at level {1.0 - a:.4g}"
                           if e.refit is not None or e.decide_at is not None
                           else f"its own level {f.confidence_level:g}", a, v, lo, hi))
    verdicts = [combine(v) for v in per_q.values()]
    return Headline(
        verdict=combine(verdicts), questions=len(verdicts), unfair=verdicts.count("unfair"),
        fair=verdicts.count("fair"), undetermined=verdicts.count("undetermined"),
        findings=sum(1 for c in out if c.status != "not counted"),
        error_bound=min(1.0, total) if total > 0 else 0.0, level=1.0 - alpha, shown=shown,
        conditions=tuple(conditions), entries=tuple(out),
    )


_WORDS = {"unfair": "unfair", "violation": "unfair", "fair": "fair", "compliant": "fair",
          "compliance": "fair"}


def normalise(verdict: str | None) -> Verdict:
    """A method's verdict word as fair / unfair / undetermined."""
    v = _WORDS.get((verdict or "").lower(), "undetermined")
    return "unfair" if v == "unfair" else ("fair" if v == "fair" else "undetermined")
