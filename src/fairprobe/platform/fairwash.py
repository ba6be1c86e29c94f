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

__all__ = ["FAIRWASH_MODES", "FairwashConfig"]

FAIRWASH_MODES = ("none", "positive", "negative", "mixed")


@dataclass(frozen=True)
class FairwashConfig:
    """How the audit API lies. ``mode="none"`` (the default) answers truthfully."""

    mode: str = "none"
    gamma: float = 0.0
    mix: float = 0.5
    seed: int = 0

    def __post_init__(self) -> None:
        owner = "FairwashConfig"
        check_choice(self.mode, "fairwash", owner, FAIRWASH_MODES)
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
            "rate_positive": self.rate_positive,
            "rate_negative": self.rate_negative,
        }

    def flips(
        self,
        decisions: npt.NDArray[np.int64],
        female: npt.NDArray[np.bool_],
        u: npt.NDArray[np.float64],
    ) -> npt.NDArray[np.bool_]:
        """Which truthful decisions the audit API flips, given one uniform draw per input."""
        pos = female & (decisions == 0) & (u < self.rate_positive)
        neg = ~female & (decisions == 1) & (u < self.rate_negative)
        return np.asarray(pos | neg, dtype=bool)


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
