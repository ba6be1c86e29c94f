"""Input checking and compression of an audit set for the radius solvers.

An audit set is n points with a performance value ``m_i``, a binary group ``g_i`` and an optional
non-negative weight ``w_i``; the audit distribution is ``P_i = w_i / sum(w)`` (``1/n`` without
weights). Points with the same ``(value, group[, subgroup])`` are merged into one *atom* whose
probability is the sum of theirs: every solver here is invariant under that merge (the objectives
are strictly convex and symmetric in identical points, so the optimal reweighting gives identical
points identical weights), and it makes binary correctness data of any size a four-atom problem.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from fairprobe._validation import check_real
from fairprobe.errors import DataError, EmptyGroupError, InvalidParameterError

__all__ = ["AuditData", "prepare"]

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class AuditData:
    """A validated audit set, kept both per point and as merged atoms.

    Attributes
    ----------
    values, groups, probs:
        Per point: value ``m_i``, group index in {0, 1} and probability ``P_i``.
    labels:
        The two original group labels; group index 0 is ``labels[0]`` (the sorted first one).
    atom_values, atom_groups, atom_probs, atom_of:
        The merged atoms and, per point, the index of its atom.
    """

    values: FloatArray
    groups: NDArray[np.int8]
    probs: FloatArray
    labels: tuple[Any, Any]
    atom_values: FloatArray
    atom_groups: NDArray[np.int8]
    atom_probs: FloatArray
    atom_of: NDArray[np.intp]
    atom_subgroups: NDArray[np.intp] | None = None

    @property
    def n(self) -> int:
        return int(self.values.size)

    def group_mass(self) -> tuple[float, float]:
        """Audit masses ``(pi_0, pi_1)`` of the two groups."""
        m1 = float(self.atom_probs[self.atom_groups == 1].sum())
        return 1.0 - m1, m1

    def group_atoms(self, k: int) -> tuple[FloatArray, FloatArray]:
        """Sorted distinct values of group ``k`` and their within-group probabilities."""
        sel = (self.atom_groups == k) & (self.atom_probs > 0)  # zero-mass points cannot grow
        v = self.atom_values[sel]
        p = self.atom_probs[sel]
        order = np.argsort(v, kind="stable")
        return v[order], p[order] / p.sum()

    def phi(self, h: FloatArray | None = None) -> float:
        """``phi(P_h)``: the h-weighted mean value of group 0 minus that of group 1 (per point h)."""
        q = self.probs if h is None else self.probs * h
        return phi_of(self.values, self.groups, q)


def phi_of(values: FloatArray, groups: NDArray[np.int8], q: FloatArray) -> float:
    """Weighted group-mean difference for a (possibly unnormalised) mass vector ``q``."""
    q1 = q * (groups == 1)
    q0 = q - q1
    s0, s1 = float(q0.sum()), float(q1.sum())
    if s0 <= 0.0 or s1 <= 0.0:
        return float("nan")
    return float(q0 @ values) / s0 - float(q1 @ values) / s1


def _as_1d(x: Any, name: str) -> NDArray[Any]:
    arr = np.asarray(x)
    if arr.ndim != 1:
        raise DataError(f"{name} must be one-dimensional; got shape {arr.shape}.")
    return arr


def prepare(
    values: Any,
    groups: Any,
    weights: Any = None,
    subgroups: Any = None,
    *,
    owner: str = "consistency_radius",
) -> AuditData:
    """Validate the inputs and build an :class:`AuditData`.

    Raises
    ------
    DataError
        NaN or infinite values, mismatched lengths, more than two groups, negative or non-finite
        weights, all weights zero.
    EmptyGroupError
        Only one group present (or one group with zero total weight).
    """
    try:
        m = _as_1d(values, "values").astype(np.float64)
    except (TypeError, ValueError) as exc:
        raise DataError(f"values of {owner} must be numbers: {exc}.") from exc
    g_raw = _as_1d(groups, "groups")
    n = m.size
    if n == 0:
        raise DataError(f"{owner} needs at least one audit point; got an empty input.")
    if g_raw.size != n:
        raise DataError(f"values and groups must have the same length; got {n} and {g_raw.size}.")
    bad = ~np.isfinite(m)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise DataError(
            f"values hold {int(bad.sum())} NaN or infinite entries (first at row {i}); "
            "drop or fill them before computing the radius."
        )
    if g_raw.dtype.kind == "f" and np.isnan(g_raw.astype(float)).any():
        raise DataError("groups hold NaN entries; every point needs a group.")
    labels, g_idx = np.unique(g_raw, return_inverse=True)
    if labels.size > 2:
        raise DataError(
            f"the consistency radius needs a binary group; got {labels.size} groups "
            f"({', '.join(map(str, labels[:5]))}{', ...' if labels.size > 5 else ''})."
        )
    if labels.size < 2:
        raise EmptyGroupError(
            f"only one group ({labels[0]!r}) is present; the radius compares two groups."
        )
    g = g_idx.astype(np.int8)
    if weights is None:
        w = np.full(n, 1.0 / n)
    else:
        try:
            w = _as_1d(weights, "weights").astype(np.float64)
        except (TypeError, ValueError) as exc:
            raise DataError(f"weights must be numbers: {exc}.") from exc
        if w.size != n:
            raise DataError(f"weights must have one entry per point; got {w.size} for {n} points.")
        if not np.all(np.isfinite(w)):
            raise DataError("weights hold NaN or infinite entries; give every point a finite weight.")
        if (w < 0).any():
            i = int(np.flatnonzero(w < 0)[0])
            raise DataError(
                f"weights must be non-negative; row {i} has weight {w[i]:g}."
            )
        top = float(w.max()) if w.size else 0.0
        if top <= 0:
            raise DataError("weights sum to zero; at least one point needs a positive weight.")
        w = w / top  # scale first: weights near 1e308 would overflow the sum to inf
        w = w / float(w.sum())
    for k in (0, 1):
        if float(w[g == k].sum()) <= 0:
            raise EmptyGroupError(
                f"group {labels[k]!r} has zero total weight; both groups need audit mass."
            )
    keys: list[NDArray[Any]] = [m, g.astype(np.float64)]
    if subgroups is not None:
        s_raw = _as_1d(subgroups, "subgroups")
        if s_raw.size != n:
            raise DataError(f"subgroups must have one entry per point; got {s_raw.size} for {n}.")
        _, s_idx = np.unique(s_raw, return_inverse=True)
        keys.append(s_idx.astype(np.float64))
    stacked = np.column_stack(keys)
    order = np.lexsort(keys[::-1])
    srt = stacked[order]
    new = np.ones(n, dtype=bool)
    new[1:] = np.any(srt[1:] != srt[:-1], axis=1)
    uniq = srt[new]
    atom_of = np.empty(n, dtype=np.intp)
    atom_of[order] = np.cumsum(new) - 1
    atom_p = np.bincount(atom_of, weights=w, minlength=uniq.shape[0]).astype(np.float64)
    return AuditData(
        values=m,
        groups=g,
        probs=w,
        labels=(labels[0].item() if hasattr(labels[0], "item") else labels[0],
                labels[1].item() if hasattr(labels[1], "item") else labels[1]),
        atom_values=uniq[:, 0].copy(),
        atom_groups=uniq[:, 1].astype(np.int8),
        atom_probs=atom_p,
        atom_of=atom_of,
        atom_subgroups=uniq[:, 2].astype(np.intp) if subgroups is not None else None,
    )


def check_tolerance(tolerance: Any, owner: str) -> float:
    """``tolerance`` must be a finite float > 0 (the paper's eps)."""
    eps = check_real(tolerance, "tolerance", owner, lo=0.0, closed="neither")
    if not math.isfinite(eps):
        raise InvalidParameterError(
            f"The 'tolerance' parameter of {owner} must be a finite float > 0. Got {tolerance!r} "
            "instead: an infinite tolerance makes every audit fair and no shift can flip it."
        )
    return eps
