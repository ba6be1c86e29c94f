"""Robust-aggregation baselines over an auditor's table (Section VI-A and Appendix D-C).

Each honest auditor aggregates the latest counts vector it holds per source (its table, its own
entry included). Aggregators are vectorised over auditors: ``tables`` has shape ``(N, V, 4)``
and ``held`` ``(N, V)`` marks the entries actually received (round >= 1).

* ``none``: no defense, ``DP(sum_j M[j].c)``;
* ``median`` / ``trimmed-mean``: the median / the ``beta``-trimmed mean of the per-source positive
  rates of each group (``a/A`` over sources with ``A > 0``, ``b/B`` over sources with ``B > 0``),
  then the difference;
* ``median-local-dp`` / ``trimmed-mean-local-dp``: the same aggregators applied to each source's
  local DP ``a/A - b/B`` (sources with both groups).

The trimmed mean of ``m`` values drops the ``floor(beta m)`` smallest and the ``floor(beta m)``
largest before averaging. New aggregators subclass :class:`Aggregator` and are registered with
:func:`register_aggregator`.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from typing import ClassVar

import numpy as np
import numpy.typing as npt

from fairprobe._registry import ClassRegistry
from fairprobe._validation import check_real
from fairprobe.errors import DataError

__all__ = [
    "AGGREGATORS",
    "Aggregator",
    "get_aggregator",
    "masked_median",
    "masked_trimmed_mean",
    "register_aggregator",
]

FloatArray = npt.NDArray[np.float64]


def _rates(
    tables: npt.NDArray[np.int64], held: npt.NDArray[np.bool_]
) -> tuple[FloatArray, FloatArray, npt.NDArray[np.bool_], npt.NDArray[np.bool_]]:
    t = np.asarray(tables, dtype=np.float64)
    A, B = t[..., 1], t[..., 3]
    ok_a = held & (A > 0)
    ok_b = held & (B > 0)
    ra = np.where(ok_a, t[..., 0] / np.where(A > 0, A, 1.0), np.nan)
    rb = np.where(ok_b, t[..., 2] / np.where(B > 0, B, 1.0), np.nan)
    return ra, rb, ok_a, ok_b


def masked_trimmed_mean(
    values: FloatArray, valid: npt.NDArray[np.bool_], beta: float
) -> FloatArray:
    """Row-wise mean of the valid values after dropping ``floor(beta m)`` at each end.

    NaN for a row without valid value (or with every value trimmed).
    """
    v = np.where(valid, values, np.inf)
    s = np.sort(v, axis=-1)
    m = valid.sum(axis=-1)
    k = np.floor(beta * m + 1e-12).astype(np.int64)
    j = np.arange(v.shape[-1])
    keep = (j >= k[..., None]) & (j < (m - k)[..., None])
    cnt = keep.sum(axis=-1)
    tot = np.where(keep, s, 0.0).sum(axis=-1)
    return np.where(cnt > 0, tot / np.maximum(cnt, 1), np.nan)


def masked_median(values: FloatArray, valid: npt.NDArray[np.bool_]) -> FloatArray:
    """Row-wise median of the valid values (NaN for a row without any)."""
    v = np.where(valid, values, np.nan)
    with np.errstate(all="ignore"):
        out = np.full(v.shape[:-1], np.nan)
        rows = valid.any(axis=-1)
        if rows.any():
            out[rows] = np.nanmedian(v[rows], axis=-1)
    return out


class Aggregator(ABC):
    """Aggregates every honest auditor's table into its DP estimate."""

    name: ClassVar[str] = ""

    def __init__(self, beta: float = 0.2) -> None:
        self.beta = check_real(beta, "beta", type(self).__name__, lo=0.0, hi=0.5, closed="left")

    @abstractmethod
    def aggregate(self, tables: npt.NDArray[np.int64], held: npt.NDArray[np.bool_]) -> FloatArray:
        """Estimates, shape ``tables.shape[:-2]``."""

    def __call__(self, tables: npt.ArrayLike, held: npt.ArrayLike | None = None) -> FloatArray:
        t = np.asarray(tables, dtype=np.int64)
        if t.ndim < 2 or t.shape[-1] != 4:
            raise DataError(f"tables must end with (V, 4) counts vectors. Got shape {t.shape}.")
        h = np.ones(t.shape[:-1], dtype=bool) if held is None else np.asarray(held, dtype=bool)
        return self.aggregate(t, h)


AGGREGATORS: ClassRegistry[Aggregator] = ClassRegistry("method", "get_aggregator")


def register_aggregator(cls: type[Aggregator]) -> type[Aggregator]:
    """Class decorator: add an aggregator to :data:`AGGREGATORS` under its ``name``."""
    return AGGREGATORS.register(cls)


def get_aggregator(name: str, beta: float = 0.2) -> Aggregator:
    """Instantiate the registered aggregator ``name`` with trimming fraction ``beta``."""
    return AGGREGATORS.make(name, beta)


def _local_dp(
    tables: npt.NDArray[np.int64], held: npt.NDArray[np.bool_]
) -> tuple[FloatArray, npt.NDArray[np.bool_]]:
    """Each source's local DP ``a/A - b/B`` (nan where a group is empty) and where it exists."""
    ra, rb, ok_a, ok_b = _rates(tables, held)
    ok = ok_a & ok_b
    return np.where(ok, ra - rb, np.nan), ok


@register_aggregator
class NoDefense(Aggregator):
    """``DP(sum_j M[j].c)``: the plain sum of the table."""

    name = "none"

    def aggregate(self, tables: npt.NDArray[np.int64], held: npt.NDArray[np.bool_]) -> FloatArray:
        tot = np.where(held[..., None], tables, 0).sum(axis=-2).astype(np.float64)
        with np.errstate(all="ignore"):
            out = tot[..., 0] / tot[..., 1] - tot[..., 2] / tot[..., 3]
        return np.where((tot[..., 1] > 0) & (tot[..., 3] > 0), out, math.nan)


@register_aggregator
class MedianRates(Aggregator):
    """Median of ``a/A`` minus median of ``b/B`` over the sources."""

    name = "median"

    def aggregate(self, tables: npt.NDArray[np.int64], held: npt.NDArray[np.bool_]) -> FloatArray:
        ra, rb, ok_a, ok_b = _rates(tables, held)
        return masked_median(ra, ok_a) - masked_median(rb, ok_b)


@register_aggregator
class TrimmedMeanRates(Aggregator):
    """``beta``-trimmed mean of ``a/A`` minus that of ``b/B``."""

    name = "trimmed-mean"

    def aggregate(self, tables: npt.NDArray[np.int64], held: npt.NDArray[np.bool_]) -> FloatArray:
        ra, rb, ok_a, ok_b = _rates(tables, held)
        return masked_trimmed_mean(ra, ok_a, self.beta) - masked_trimmed_mean(rb, ok_b, self.beta)


@register_aggregator
class MedianLocalDP(Aggregator):
    """Median of the sources' local DP ``a/A - b/B`` (Appendix D-C)."""

    name = "median-local-dp"

    def aggregate(self, tables: npt.NDArray[np.int64], held: npt.NDArray[np.bool_]) -> FloatArray:
        return masked_median(*_local_dp(tables, held))


@register_aggregator
class TrimmedMeanLocalDP(Aggregator):
    """``beta``-trimmed mean of the sources' local DP (Appendix D-C)."""

    name = "trimmed-mean-local-dp"

    def aggregate(self, tables: npt.NDArray[np.int64], held: npt.NDArray[np.bool_]) -> FloatArray:
        return masked_trimmed_mean(*_local_dp(tables, held), self.beta)
