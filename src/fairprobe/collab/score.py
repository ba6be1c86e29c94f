"""The suspicion score of an increment and its weight (Algorithm 3, Sections V-B and V-C).

``collaborative-auditing-auditopus.md``, Section V-B. For a source ``j`` whose previous counts
vector is ``c = prev_j = (a, A, b, B)`` and whose new increment is
``delta = (da, dA, db, dB)``:

* Krichevsky-Trofimov estimates from ``c``::

      pi  = (A + 1/2) / (A + B + 1)      share of group A
      q_A = (a + 1/2) / (A + 1)          positive rate in group A
      q_B = (b + 1/2) / (B + 1)          positive rate in group B

* three binomial z-scores ``z(s; m, p) = (s - m p) / sqrt(m p (1 - p))``::

      z1 = z(dA; dA + dB, pi)            defined iff dA + dB > 0
      z2 = z(da; dA, q_A)                defined iff dA > 0
      z3 = z(db; dB, q_B)                defined iff dB > 0

* ``S = min(max_l |z_l|, z_max)`` over the defined z-scores (``S = 0`` when none is, i.e. an empty
  increment, which adds nothing anyway), ``z_max = 8`` by default;
* the weight is ``w = (1 + S)^-2`` (Section V-C); the first increment of a source (no history,
  ``prev_j = 0``) gets ``w = 1`` without being scored.

Everything is vectorised over rows; the per-auditor protocol core calls the very same function,
so that the simulator and the core produce bit-identical weights. The weight is computed as
``1 / ((1 + S) * (1 + S))`` (correctly rounded IEEE operations only) for that reason.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from fairprobe._validation import check_real

__all__ = ["Z_MAX", "ScoreResult", "kt_estimates", "suspicion_scores", "weights_from_scores"]

#: Default cap of the suspicion score (Section VI-A: ``z_max = 8`` in all experiments).
Z_MAX = 8.0

FloatArray = npt.NDArray[np.float64]


def _as_rows(x: npt.ArrayLike, name: str) -> npt.NDArray[np.int64]:
    arr = np.asarray(x, dtype=np.int64)
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2 or arr.shape[1] != 4:
        from fairprobe.errors import DataError

        raise DataError(f"{name} must have rows (a, A, b, B). Got shape {arr.shape}.")
    return arr


def kt_estimates(prev: npt.ArrayLike) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Krichevsky-Trofimov estimates ``(pi, q_A, q_B)`` of each row ``(a, A, b, B)``."""
    c = _as_rows(prev, "prev").astype(np.float64)
    a, A, b, B = c[:, 0], c[:, 1], c[:, 2], c[:, 3]
    pi = (A + 0.5) / (A + B + 1.0)
    qa = (a + 0.5) / (A + 1.0)
    qb = (b + 0.5) / (B + 1.0)
    return pi, qa, qb


def _z(s: FloatArray, m: FloatArray, p: FloatArray) -> FloatArray:
    """Binomial z-score, 0 where ``m == 0`` (the caller masks those out)."""
    safe_m = np.where(m > 0, m, 1.0)
    return (s - safe_m * p) / np.sqrt(safe_m * p * (1.0 - p))


@dataclass(frozen=True)
class ScoreResult:
    """Scores of a batch of increments.

    Attributes
    ----------
    z : ndarray, shape (m, 3)
        The three z-scores; NaN where undefined.
    score : ndarray, shape (m,)
        ``S = min(max |z|, z_max)`` (0 for an empty increment and for a first increment).
    weight : ndarray, shape (m,)
        ``(1 + S)^-2``, or 1 for a first increment.
    first : ndarray of bool, shape (m,)
        Rows whose ``prev`` is the zero vector (no history): weight 1, not scored.
    """

    z: FloatArray
    score: FloatArray
    weight: FloatArray
    first: npt.NDArray[np.bool_]


def weights_from_scores(score: npt.ArrayLike) -> FloatArray:
    """``w = (1 + S)^-2`` computed as ``1 / ((1 + S) * (1 + S))``."""
    s1 = 1.0 + np.asarray(score, dtype=np.float64)
    return np.asarray(1.0 / (s1 * s1), dtype=np.float64)


def suspicion_scores(
    prev: npt.ArrayLike, delta: npt.ArrayLike, z_max: float = Z_MAX
) -> ScoreResult:
    """Score increments ``delta`` against their sources' previous vectors ``prev`` (Algorithm 3).

    Parameters
    ----------
    prev, delta : array_like, shape (m, 4) or (4,)
        Rows ``(a, A, b, B)``: the vector held for the source at the end of the previous round,
        and the increment since.
    z_max : float
        Cap of the score (> 0).
    """
    z_max = check_real(z_max, "z_max", "suspicion_scores", lo=0.0, closed="neither")
    p = _as_rows(prev, "prev")
    d = _as_rows(delta, "delta").astype(np.float64)
    if p.shape != d.shape:
        from fairprobe.errors import DataError

        raise DataError(f"prev and delta differ in shape: {p.shape} vs {d.shape}.")
    pi, qa, qb = kt_estimates(p)
    da, dA, db, dB = d[:, 0], d[:, 1], d[:, 2], d[:, 3]
    m = dA + dB
    z = np.full((p.shape[0], 3), np.nan)
    ok1, ok2, ok3 = m > 0, dA > 0, dB > 0
    z[:, 0] = np.where(ok1, _z(dA, m, pi), np.nan)
    z[:, 1] = np.where(ok2, _z(da, dA, qa), np.nan)
    z[:, 2] = np.where(ok3, _z(db, dB, qb), np.nan)
    absz = np.where(np.isnan(z), 0.0, np.abs(z))
    score = np.minimum(absz.max(axis=1), z_max)
    first = np.asarray(~p.any(axis=1), dtype=bool)
    score = np.where(first, 0.0, score)
    weight = np.where(first, 1.0, weights_from_scores(score))
    return ScoreResult(z=z, score=score, weight=weight, first=first)
