"""Fairwashing of the audit API: positive, negative or mixed discrimination at rate gamma.

Definitions follow the two-source paper (Sections 3.2 and 4.1, Appendix A). With the privileged
group ``C`` = male and the truthful decision ``Y_B`` of the model:

- **positive** discrimination flips ``0 -> 1`` for the unprivileged (female) group, and
  ``gamma = |Y_A=1, Y_B=0, X not in C| / |Y_B=0, X not in C|`` is the share of the unprivileged
  group's truthful *negative* answers that the audit API turns positive. Hence (Appendix A)
  ``P(Y_A=1 | F) = P(Y_B=1 | F)(1 - gamma) + gamma`` and ``mu_A = mu_B (1 - gamma) + gamma / P(Y_B=1|M)``.
- **negative** discrimination flips ``1 -> 0`` for the privileged (male) group, ``gamma`` being the
  share of the privileged group's truthful *positive* answers turned negative:
  ``P(Y_A=1 | M) = P(Y_B=1 | M)(1 - gamma)``.
- **mixed** does both: positive at rate ``mix * gamma`` and negative at rate ``(1 - mix) * gamma``.

Which answers are flipped is decided per input, not per request: answer ``i`` is flipped iff
``hash_uniform(key_i, seed, "fairwash") < rate``, where ``key_i`` is the canonical form of the
record's audit features (see :func:`fairprobe.platform.core.record_key`). So a repeated query gets
the same answer (a cache or a replay cannot reveal the manipulation) and the flipped share over
many distinct inputs converges to the rate.

Selection (``select``): ``"random"`` (above; the paper's model, Lemma 1) or ``"margin"``, the
reject-option variant the paper attributes to the platform (Section 4.1, after Kamiran et al.,
2012): the candidates flipped are those closest to the decision boundary. A female negative is
flipped iff its score is at least ``t_pos``, the ``1 - rate`` quantile (method "higher") of the
scores of the female negatives of the platform's own training data (Adult ``adult.data``); a male
positive iff its score is below ``t_neg``, the ``rate`` quantile of the male positives' scores.
Deterministic per input too, and the flipped share is ``rate`` on inputs distributed like the
training data (not on others: an auditor who sends borderline profiles sees more flips).

A flipped answer gets a mirrored score ``1 - s`` (logit ``-l``), so score, logit and decision stay
consistent (decision = score >= 1/2); a mirrored score of exactly 1/2 that must read "0" is moved
to the largest float below 1/2.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from fairprobe._validation import check_choice, check_int, check_real

__all__ = ["FAIRWASH_MODES", "FAIRWASH_SELECTIONS", "FairwashConfig", "margin_thresholds"]

FAIRWASH_MODES = ("none", "positive", "negative", "mixed")
FAIRWASH_SELECTIONS = ("random", "margin")


@dataclass(frozen=True)
class FairwashConfig:
    """How the audit API lies. ``mode="none"`` (the default) answers truthfully."""

    mode: str = "none"
    gamma: float = 0.0
    mix: float = 0.5
    seed: int = 0
    select: str = "random"

    def __post_init__(self) -> None:
        owner = "FairwashConfig"
        check_choice(self.mode, "fairwash", owner, FAIRWASH_MODES)
        check_choice(self.select, "fairwash_select", owner, FAIRWASH_SELECTIONS)
        object.__setattr__(self, "gamma", check_real(self.gamma, "gamma", owner, lo=0, hi=1))
        object.__setattr__(self, "mix", check_real(self.mix, "mix", owner, lo=0, hi=1))
        object.__setattr__(self, "seed", check_int(self.seed, "seed", owner, lo=0))

    @property
    def rate_positive(self) -> float:
        """Share of female truthful negatives turned positive."""
        if self.mode == "positive":
            return self.gamma
        if self.mode == "mixed":
            return self.mix * self.gamma
        return 0.0

    @property
    def rate_negative(self) -> float:
        """Share of male truthful positives turned negative."""
        if self.mode == "negative":
            return self.gamma
        if self.mode == "mixed":
            return (1.0 - self.mix) * self.gamma
        return 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "gamma": self.gamma,
            "mix": self.mix,
            "seed": self.seed,
            "select": self.select,
            "rate_positive": self.rate_positive,
            "rate_negative": self.rate_negative,
        }

    def flips(
        self,
        decisions: npt.NDArray[np.int64],
        female: npt.NDArray[np.bool_],
        u: npt.NDArray[np.float64],
        scores: npt.NDArray[np.float64] | None = None,
        thresholds: tuple[float, float] | None = None,
    ) -> npt.NDArray[np.bool_]:
        """Which truthful decisions the audit API flips.

        ``u`` holds one uniform draw per input (``select="random"``); ``scores`` and the
        ``(t_pos, t_neg)`` of :func:`margin_thresholds` are needed for ``select="margin"``.
        """
        if self.select == "margin":
            if scores is None or thresholds is None:
                raise ValueError("margin selection needs the scores and the thresholds")
            t_pos, t_neg = thresholds
            pos = female & (decisions == 0) & (scores >= t_pos)
            neg = ~female & (decisions == 1) & (scores < t_neg)
        else:
            pos = female & (decisions == 0) & (u < self.rate_positive)
            neg = ~female & (decisions == 1) & (u < self.rate_negative)
        return np.asarray(pos | neg, dtype=bool)


def margin_thresholds(
    cfg: FairwashConfig,
    ref_scores: npt.NDArray[np.float64],
    ref_female: npt.NDArray[np.bool_],
) -> tuple[float, float]:
    """``(t_pos, t_neg)`` for ``select="margin"`` from reference scores (the training data).

    ``t_pos`` is the ``1 - rate_positive`` quantile of the female negatives' scores (``+inf`` at
    rate 0, ``-inf`` at rate 1); ``t_neg`` the ``rate_negative`` quantile of the male positives'
    scores (``-inf`` at rate 0, ``+inf`` at rate 1).
    """
    dec = ref_scores >= 0.5
    fneg = ref_scores[ref_female & ~dec]
    mpos = ref_scores[~ref_female & dec]
    rp, rn = cfg.rate_positive, cfg.rate_negative
    if rp <= 0 or fneg.size == 0:
        t_pos = np.inf
    elif rp >= 1:
        t_pos = -np.inf
    else:
        t_pos = float(np.quantile(fneg, 1.0 - rp, method="higher"))
    if rn <= 0 or mpos.size == 0:
        t_neg = -np.inf
    elif rn >= 1:
        t_neg = np.inf
    else:
        t_neg = float(np.quantile(mpos, rn, method="higher"))
    return float(t_pos), float(t_neg)


def apply_flips(
    scores: npt.NDArray[np.float64], flips: npt.NDArray[np.bool_]
) -> npt.NDArray[np.float64]:
    """Mirror the scores of flipped answers (``s -> 1 - s``), keeping ``decision = s >= 1/2``."""
    out = scores.copy()
    mirrored = 1.0 - scores[flips]
    was_positive = scores[flips] >= 0.5
    # a positive answer flipped to negative must end strictly below 1/2
    mirrored = np.where(was_positive & (mirrored >= 0.5), np.nextafter(0.5, 0.0), mirrored)
    # a negative answer flipped to positive must end at or above 1/2
    mirrored = np.where(~was_positive & (mirrored < 0.5), 0.5, mirrored)
    out[flips] = mirrored
    return out
