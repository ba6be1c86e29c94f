"""The counts vector: positives and totals per group, ``(a, A, b, B)``.

This is the unit every fairprobe audit reduces its answers to, and the unit the collaborative
protocol exchanges between auditors (the "LAS vector" of the collaborative-auditing paper,
Section II-B): ``a`` positive decisions among ``A`` queries of group A, ``b`` among ``B`` of group B.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from fairprobe.errors import DataError, EmptyGroupError

__all__ = ["CountsVector", "counts_from_decisions"]


@dataclass(frozen=True, slots=True)
class CountsVector:
    """Positives and totals per group.

    Attributes
    ----------
    a, A : int
        Positive decisions and queries in group A (``0 <= a <= A``).
    b, B : int
        Positive decisions and queries in group B (``0 <= b <= B``).
    """

    a: int
    A: int
    b: int
    B: int

    def __post_init__(self) -> None:
        for name in ("a", "A", "b", "B"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int | np.integer):
                raise DataError(f"Counts vector field {name!r} must be an int. Got {v!r} instead.")
            object.__setattr__(self, name, int(v))
        if min(self.a, self.A, self.b, self.B) < 0:
            raise DataError(f"Counts vector fields must be non-negative. Got {self.as_tuple()}.")
        if self.a > self.A or self.b > self.B:
            raise DataError(
                f"Positives cannot exceed totals (a <= A, b <= B). Got {self.as_tuple()}."
            )

    @classmethod
    def zero(cls) -> CountsVector:
        return cls(0, 0, 0, 0)

    @classmethod
    def from_array(cls, arr: npt.ArrayLike) -> CountsVector:
        x = np.asarray(arr).ravel()
        if x.shape != (4,):
            raise DataError(f"A counts vector has 4 entries (a, A, b, B). Got shape {x.shape}.")
        return cls(int(x[0]), int(x[1]), int(x[2]), int(x[3]))

    def as_tuple(self) -> tuple[int, int, int, int]:
        return (self.a, self.A, self.b, self.B)

    def as_array(self) -> npt.NDArray[np.int64]:
        return np.array(self.as_tuple(), dtype=np.int64)

    def __add__(self, other: CountsVector) -> CountsVector:
        return CountsVector(self.a + other.a, self.A + other.A, self.b + other.b, self.B + other.B)

    def __sub__(self, other: CountsVector) -> CountsVector:
        return CountsVector(self.a - other.a, self.A - other.A, self.b - other.b, self.B - other.B)

    @property
    def total(self) -> int:
        return self.A + self.B

    @property
    def rate_a(self) -> float:
        """Positive rate of group A, ``a / A``; raises if group A is empty."""
        if self.A == 0:
            raise EmptyGroupError("Group A holds no query: its positive rate is undefined.")
        return self.a / self.A

    @property
    def rate_b(self) -> float:
        """Positive rate of group B, ``b / B``; raises if group B is empty."""
        if self.B == 0:
            raise EmptyGroupError("Group B holds no query: its positive rate is undefined.")
        return self.b / self.B

    def dp(self, default: float | None = None) -> float:
        """Demographic parity difference ``a/A - b/B``.

        With ``default`` given, an empty group yields ``default`` instead of raising (the
        collaborative protocol's convention before any statistics have arrived).
        """
        if default is not None and (self.A == 0 or self.B == 0):
            return default
        return self.rate_a - self.rate_b


def counts_from_decisions(decisions: npt.ArrayLike, in_group_a: npt.ArrayLike) -> CountsVector:
    """Counts vector of 0/1 ``decisions`` split by the boolean mask ``in_group_a``.

    Vectorised: one pass with numpy, no Python loop over queries.
    """
    d = np.asarray(decisions, dtype=float)
    g = np.asarray(in_group_a, dtype=bool)
    if d.shape != g.shape:
        raise DataError(f"decisions and group mask differ in shape: {d.shape} vs {g.shape}.")
    if np.isnan(d).any():
        raise DataError("Decisions contain NaN: drop or repair unparsed answers first.")
    if not np.isin(d, (0.0, 1.0)).all():
        raise DataError("Decisions must be 0 or 1.")
    a = int(d[g].sum())
    b = int(d[~g].sum())
    return CountsVector(a, int(g.sum()), b, int((~g).sum()))
