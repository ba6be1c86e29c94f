"""Retries with exponential backoff and jitter for transient access failures."""

from __future__ import annotations

import random
import threading
from dataclasses import dataclass

from fairprobe._validation import check_real
from fairprobe.access.base import TransientAccessError

__all__ = ["Backoff", "RateLimitedError"]


class RateLimitedError(TransientAccessError):
    """A transient failure whose server asked to wait ``retry_after`` seconds (HTTP 429/503)."""

    def __init__(self, message: str, retry_after: float | None = None,
                 status: int | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        self.status = status


@dataclass(frozen=True)
class Backoff:
    """Exponential backoff with jitter.

    The wait before retry ``k`` (``k = 0, 1, ...``) is

    .. math:: d_k = \\min(\\text{cap}, \\text{base}\\cdot\\text{factor}^k)\\,(1 - j\\,U),
        \\qquad U \\sim \\mathcal U(0, 1),

    so it lies in ``[(1 - j) d, d]`` ("equal jitter" for ``j = 0.5``): retries of many clients
    spread out instead of hitting the server together, and the wait still grows geometrically.
    A ``Retry-After`` the server sent is honoured up to ``cap``.

    Parameters
    ----------
    base : float, default=0.5
        First wait in seconds (before jitter).
    factor : float, default=2.0
        Growth of the wait per retry (>= 1).
    cap : float, default=30.0
        Longest wait in seconds.
    jitter : float, default=0.5
        Fraction ``j`` in [0, 1] of the wait drawn at random.
    """

    base: float = 0.5
    factor: float = 2.0
    cap: float = 30.0
    jitter: float = 0.5

    def __post_init__(self) -> None:
        check_real(self.base, "base", "Backoff", lo=0.0)
        check_real(self.factor, "factor", "Backoff", lo=1.0)
        check_real(self.cap, "cap", "Backoff", lo=0.0)
        check_real(self.jitter, "jitter", "Backoff", lo=0.0, hi=1.0)

    def nominal(self, attempt: int) -> float:
        """The wait before retry ``attempt`` without jitter."""
        return float(min(self.cap, self.base * self.factor**attempt))

    def delay(self, attempt: int, u: float, retry_after: float | None = None) -> float:
        """The wait before retry ``attempt`` (0-based) for a uniform draw ``u`` in [0, 1)."""
        d = self.nominal(attempt) * (1.0 - self.jitter * u)
        if retry_after is not None and retry_after > d:
            d = min(float(retry_after), self.cap)
        return d


class _LockedRandom:
    """A seeded :class:`random.Random` shared by worker threads."""

    def __init__(self, seed: int | None) -> None:
        self._rng = random.Random(seed)
        self._lock = threading.Lock()

    def random(self) -> float:
        with self._lock:
            return self._rng.random()
