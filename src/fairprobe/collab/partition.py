"""Heterogeneous query sets: the Dirichlet partition of Appendix C-C.

For every (group, predicted label) cell of the population, the inputs are split across the ``N``
honest auditors with proportions drawn from ``Dirichlet(alpha)`` (a multinomial draw of the cell's
size with those proportions, so that the cells add up exactly). The partition is redrawn until
every auditor holds at least ``min_per_group`` inputs of each group (30 in the paper), at most
``max_redraws`` times; then :class:`~fairprobe.errors.DataError` says why, never a hang.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from fairprobe._validation import check_int, check_real
from fairprobe.errors import DataError
from fairprobe.stats.counts import CountsVector

__all__ = ["CELLS", "dirichlet_partition", "increments_per_round", "local_counts"]

#: Column order of a partition: positives and negatives of group A, then of group B.
CELLS = ("pos_a", "neg_a", "pos_b", "neg_b")

IntArray = npt.NDArray[np.int64]


def dirichlet_partition(
    population: CountsVector,
    n_auditors: int,
    alpha: float,
    rng: np.random.Generator,
    *,
    min_per_group: int = 30,
    max_redraws: int = 1000,
) -> IntArray:
    """Split ``population`` across ``n_auditors``; returns ``(N, 4)`` cell counts (:data:`CELLS`).

    Raises
    ------
    DataError
        If no draw gives every auditor ``min_per_group`` inputs of each group within
        ``max_redraws`` draws (or if the population is too small for that at all).
    """
    owner = "dirichlet_partition"
    n_auditors = check_int(n_auditors, "n_auditors", owner, lo=1)
    alpha = check_real(alpha, "alpha", owner, lo=0.0, closed="neither")
    min_per_group = check_int(min_per_group, "min_per_group", owner, lo=0)
    max_redraws = check_int(max_redraws, "max_redraws", owner, lo=1)
    cells = np.array(
        [population.a, population.A - population.a, population.b, population.B - population.b],
        dtype=np.int64,
    )
    need = min_per_group * n_auditors
    if population.A < need or population.B < need:
        raise DataError(
            f"The population holds {population.A} inputs of group A and {population.B} of group B: "
            f"too few for {n_auditors} auditors with {min_per_group} of each group. "
            "Use fewer auditors or a smaller minimum."
        )
    conc = np.full(n_auditors, alpha)
    for _ in range(max_redraws):
        out = np.empty((n_auditors, 4), dtype=np.int64)
        for c in range(4):
            p = rng.dirichlet(conc)
            if not np.isfinite(p).all() or p.sum() <= 0:  # extreme alpha underflow
                p = np.zeros(n_auditors)
                p[rng.integers(n_auditors)] = 1.0
            out[:, c] = rng.multinomial(int(cells[c]), p / p.sum())
        if (out[:, 0] + out[:, 1] >= min_per_group).all() and (
            out[:, 2] + out[:, 3] >= min_per_group
        ).all():
            return out
    raise DataError(
        f"No Dirichlet(alpha={alpha:g}) partition over {n_auditors} auditors gave each one "
        f"{min_per_group} inputs of each group in {max_redraws} draws. "
        "Raise alpha, lower the number of auditors or the per-group minimum."
    )


def local_counts(cells: IntArray) -> IntArray:
    """Counts vectors ``(a, A, b, B)`` of partition rows ``(pos_a, neg_a, pos_b, neg_b)``."""
    c = np.asarray(cells, dtype=np.int64)
    return np.stack([c[..., 0], c[..., 0] + c[..., 1], c[..., 2], c[..., 2] + c[..., 3]], axis=-1)


def item_types(cells_row: IntArray) -> npt.NDArray[np.int8]:
    """Cell type (0..3, :data:`CELLS`) of each input of one auditor, in local index order."""
    return np.repeat(np.arange(4, dtype=np.int8), np.asarray(cells_row, dtype=np.int64))


#: Counts-vector contribution ``(a, A, b, B)`` of one input of each cell type.
TYPE_TO_COUNTS = np.array([[1, 1, 0, 0], [0, 1, 0, 0], [0, 0, 1, 1], [0, 0, 0, 1]], dtype=np.int64)


def increments_per_round(types_in_order: npt.NDArray[np.int8], n: int, rounds: int) -> IntArray:
    """Per-round increments ``(rounds, 4)`` of an auditor issuing ``types_in_order`` ``n`` a round.

    Rounds after the query set runs out have zero increments; inputs beyond ``rounds * n`` are
    never issued.
    """
    t = np.asarray(types_in_order, dtype=np.int64)[: rounds * n]
    idx = np.arange(t.size) // n
    onehot = np.bincount(idx * 4 + t, minlength=rounds * 4).reshape(rounds, 4).astype(np.int64)
    return np.asarray(onehot @ TYPE_TO_COUNTS)
