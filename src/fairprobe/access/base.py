"""The black-box model access interface every backend implements.

A :class:`Backend` answers one batch of input records (JSON-serialisable mappings) with one
:class:`Answer` each. Everything around it — the persistent response cache, budgets, retries with
backoff, bounded concurrency, progress bars — lives once in :class:`fairprobe.access.BlackBox`, so
that a backend only knows how to talk to its model.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from fairprobe.errors import AccessError

__all__ = ["OUTCOMES", "Answer", "AnswerBatch", "Backend", "TransientAccessError"]

#: The outcome of one answer: ``ok`` (a decision), ``unparsed`` (no decision could be read),
#: ``refused`` (the model declined to answer), ``truncated`` (the answer was cut off, e.g. by the
#: token limit). Only ``ok`` answers enter a metric; the others are counted per group.
OUTCOMES = ("ok", "unparsed", "refused", "truncated")

Record = Mapping[str, Any]


class TransientAccessError(AccessError):
    """A failure worth retrying (HTTP 429/5xx, a timeout, a refused connection); ``status`` is
    the HTTP status when the endpoint answered one (``None`` when it did not answer)."""

    status: int | None = None


@dataclass(frozen=True, slots=True)
class Answer:
    """One model answer.

    ``decision`` is ``None`` when the answer gave no decision (it is then dropped from the
    audit and counted). ``score`` (a probability in [0, 1]) and ``logit`` are ``None`` where the
    model does not expose them. ``raw`` keeps the raw text of generative models.

    ``outcome`` is one of :data:`OUTCOMES`; by default ``"ok"`` when there is a decision and
    ``"unparsed"`` when there is none. A backend that can tell a refusal or a truncated answer
    from an unparsable one sets ``"refused"`` or ``"truncated"`` (with ``decision=None``).
    """

    decision: int | None
    score: float | None = None
    logit: float | None = None
    raw: str | None = None
    outcome: str | None = None

    def __post_init__(self) -> None:
        if self.outcome is None:
            object.__setattr__(self, "outcome", "ok" if self.decision is not None else "unparsed")
        elif self.outcome not in OUTCOMES:
            raise ValueError(f"Answer outcome must be one of {OUTCOMES}; got {self.outcome!r}.")

    def to_json(self) -> dict[str, Any]:
        return {
            "decision": self.decision,
            "score": self.score,
            "logit": self.logit,
            "raw": self.raw,
            "outcome": self.outcome,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Answer:
        return cls(
            d.get("decision"), d.get("score"), d.get("logit"), d.get("raw"), d.get("outcome")
        )


class Backend(ABC):
    """A black-box model endpoint.

    Subclasses set ``kind`` and implement :meth:`identity` and :meth:`ask`. :meth:`ask` raises
    :class:`TransientAccessError` for failures that may pass (they are retried with backoff), and
    any other :class:`~fairprobe.errors.AccessError` for permanent ones.
    """

    kind: ClassVar[str] = "backend"
    #: Largest batch passed to one :meth:`ask` call.
    max_batch: int = 64

    @property
    @abstractmethod
    def identity(self) -> str:
        """Stable identifier of backend and model, part of every cache key."""

    @abstractmethod
    def ask(self, records: Sequence[Record]) -> list[Answer]:
        """Ask the model about ``records``; return one :class:`Answer` per record, in order."""

    def model_identity(self) -> Any:
        """The identity of the model behind this backend, or ``None`` if it reports none.

        Returns a :class:`fairprobe.access.identity.ModelIdentity`. Network backends ask the
        endpoint (it may raise :class:`TransientAccessError`, which is retried); local backends
        return their file or code hash. ``None`` makes
        :meth:`~fairprobe.access.BlackBox.resolve_identity` fingerprint the model by re-asking
        a few cached records. Called once per :class:`~fairprobe.access.BlackBox`.
        """
        return None

    def error_hint(self, status: int | None) -> str:
        """A sentence appended to a failed request's error (what was sent, the flag or config
        key that changes it); ``status`` is the HTTP status, if any. Default: none."""
        return ""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release connections; the default does nothing."""


@dataclass(frozen=True)
class AnswerBatch:
    """Answers to a batch of queries as numpy arrays (one entry per query, in query order).

    ``decisions`` holds 0/1 as floats with NaN where the answer gave no decision; ``scores`` and
    ``logits`` hold NaN where the model does not expose them. ``n_paid`` counts the queries this
    call actually sent to the model, ``n_cached`` those answered from the cache.
    ``outcomes`` holds each answer's outcome (one of :data:`OUTCOMES`) and ``cached`` whether it
    came from the cache (or repeats a record of the same call) rather than being paid now.
    """

    decisions: npt.NDArray[np.float64]
    scores: npt.NDArray[np.float64]
    logits: npt.NDArray[np.float64]
    n_paid: int
    n_cached: int
    outcomes: npt.NDArray[np.str_] | None = None
    cached: npt.NDArray[np.bool_] | None = None

    def __post_init__(self) -> None:
        n = self.decisions.shape[0]
        if self.outcomes is None:
            out = np.where(np.isnan(self.decisions), "unparsed", "ok").astype("<U9")
            object.__setattr__(self, "outcomes", out)
        if self.cached is None:
            object.__setattr__(self, "cached", np.zeros(n, dtype=bool))

    @property
    def parsed(self) -> npt.NDArray[np.bool_]:
        return ~np.isnan(self.decisions)

    @property
    def n_unparsed(self) -> int:
        """Answers without a decision (unparsed, refused or truncated)."""
        return int((~self.parsed).sum())

    def outcome_counts(self) -> dict[str, int]:
        """How many answers had each outcome."""
        assert self.outcomes is not None
        return {k: int((self.outcomes == k).sum()) for k in OUTCOMES}

    def __len__(self) -> int:
        return int(self.decisions.shape[0])
