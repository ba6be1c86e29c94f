r"""A sound combination of findings into one headline verdict on the audited model.

Findings about the audited model are grouped into *questions* (two findings on the same answers
about the same per-group rates, such as DI and DP, or the access levels of one sequential
audit, answer one question). Then, over questions:

* ``unfair`` if any question's findings say ``unfair``;
* ``fair`` only if every question's findings all say ``fair``;
* ``undetermined`` otherwise (also when there is no finding about the model).

Error of the headline. Each finding :math:`i` is wrong with probability at most
:math:`\alpha_i` (one minus its interval's level). A wrong ``unfair`` headline needs a finding
that says ``unfair`` to be wrong; a wrong ``fair`` headline needs a question on which the model
is unfair while all its findings say ``fair``, so again a wrong finding. Either way, by the
union bound, :math:`P(\text{wrong headline}) \le \sum_i \alpha_i` over the counted findings:
the figure the report states. Findings about simulations or demonstrations (a known truth,
bundled data) are shown apart and never counted.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from fairprobe.stats.finding import Verdict

__all__ = ["Headline", "combine", "headline"]


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
class Headline:
    """The combined verdict, its per-question tally and the bound on its error."""

    verdict: Verdict
    questions: int
    unfair: int
    fair: int
    undetermined: int
    findings: int
    error_bound: float

    def sentence(self) -> str:
        q = f"{self.questions} question{'' if self.questions == 1 else 's'} about the model"
        tally = (f"{self.unfair} of {q} {'says' if self.unfair == 1 else 'say'} unfair, "
                 f"{self.fair} fair, {self.undetermined} undetermined")
        if self.questions == 0:
            return "No finding about the audited model: no verdict."
        err = (f"the headline is wrong with probability at most {self.error_bound:.3g} "
               f"(union bound over {self.findings} finding{'' if self.findings == 1 else 's'})")
        if self.verdict == "unfair":
            return f"The audited model is judged unfair: {tally}; {err}."
        if self.verdict == "fair":
            return f"The audited model is judged fair: every one of {q} says fair; {err}."
        return f"No verdict on the audited model ({tally}): undetermined; {err}."


def headline(findings: Sequence[tuple[str, str, float]]) -> Headline:
    """Combine ``(question key, verdict, alpha)`` triples of findings about the audited model.

    Verdict words of other methods are mapped first (``violation`` -> unfair,
    ``compliance`` -> fair, anything else -> undetermined).
    """
    by_q: dict[str, list[str]] = {}
    alpha = 0.0
    for key, verdict, a in findings:
        by_q.setdefault(key, []).append(normalise(verdict))
        alpha += max(0.0, float(a))
    per_q = [combine(v) for v in by_q.values()]
    return Headline(
        verdict=combine(per_q), questions=len(per_q), unfair=per_q.count("unfair"),
        fair=per_q.count("fair"), undetermined=per_q.count("undetermined"),
        findings=len(findings), error_bound=min(1.0, alpha),
    )


_WORDS = {"unfair": "unfair", "violation": "unfair", "fair": "fair", "compliant": "fair",
          "compliance": "fair"}


def normalise(verdict: str | None) -> Verdict:
    """A method's verdict word as fair / unfair / undetermined."""
    v = _WORDS.get((verdict or "").lower(), "undetermined")
    return "unfair" if v == "unfair" else ("fair" if v == "fair" else "undetermined")
