"""The communication graph: a connected Erdős-Rényi graph and gossip delays (Section VI-A).

The ``N + K`` auditors communicate over ``G(V, p)`` with expected degree ``d`` (``p = d / (V-1)``,
capped at 1), redrawn until connected (at most ``max_redraws`` times, then
:class:`DisconnectedGraphError`). With synchronous rounds, an entry of auditor ``j`` produced at
round ``s`` reaches an auditor at hop distance ``h >= 1`` at the end of round ``s + h - 1`` (each
table carries the sender's fresh own entry plus what it merged the round before), so at the end of
round ``t`` auditor ``i`` holds ``c_j(t - lag_ij)`` with ``lag_ij = max(h_ij - 1, 0)``.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components, shortest_path

from fairprobe._validation import check_int, check_real
from fairprobe.errors import DataError

__all__ = ["DisconnectedGraphError", "connected_erdos_renyi", "gossip_lags", "hop_distances"]


class DisconnectedGraphError(DataError):
    """No connected graph could be drawn with the requested size and degree."""


def connected_erdos_renyi(
    n_nodes: int, degree: float, rng: np.random.Generator, *, max_redraws: int = 1000
) -> npt.NDArray[np.bool_]:
    """Symmetric boolean adjacency of a connected ``G(n_nodes, degree / (n_nodes - 1))``."""
    owner = "connected_erdos_renyi"
    n_nodes = check_int(n_nodes, "n_nodes", owner, lo=1)
    degree = check_real(degree, "degree", owner, lo=0.0, closed="neither")
    max_redraws = check_int(max_redraws, "max_redraws", owner, lo=1)
    if n_nodes == 1:
        return np.zeros((1, 1), dtype=bool)
    p = min(1.0, degree / (n_nodes - 1))
    iu = np.triu_indices(n_nodes, k=1)
    for _ in range(max_redraws):
        edges = rng.random(iu[0].size) < p
        adj = np.zeros((n_nodes, n_nodes), dtype=bool)
        adj[iu[0][edges], iu[1][edges]] = True
        adj |= adj.T
        ncomp, _ = connected_components(csr_matrix(adj), directed=False)
        if ncomp == 1:
            return adj
    raise DisconnectedGraphError(
        f"No connected Erdos-Renyi graph over {n_nodes} auditors with expected degree {degree:g} "
        f"in {max_redraws} draws. Raise the degree."
    )


def hop_distances(adj: npt.NDArray[np.bool_]) -> npt.NDArray[np.int64]:
    """All-pairs hop distances of a connected graph."""
    d = shortest_path(csr_matrix(adj.astype(np.int8)), directed=False, unweighted=True)
    if not np.isfinite(d).all():
        raise DisconnectedGraphError("The graph is not connected.")
    return d.astype(np.int64)


def gossip_lags(adj: npt.NDArray[np.bool_]) -> npt.NDArray[np.int64]:
    """``lag[i, j] = max(hops(i, j) - 1, 0)``: rounds by which ``i``'s copy of ``j`` is late."""
    return np.maximum(hop_distances(adj) - 1, 0)
