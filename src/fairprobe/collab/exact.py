"""Exact integer arithmetic for the attacker: ``min_x (a x + b) mod m`` over a range, vectorised.

The adaptive attacker (Section IV-A, Algorithm 2) minimises ``|DP(C + delta)|`` over the finite set
``X_n``. For one budget split the labels that bring ``DP`` closest to 0 are the lattice points of a
box closest to a line, ``min |X Q - Y P|``; inside the box this is ``min_x min(s_x, P - s_x)`` with
``s_x = (Q x + c) mod P`` over a range of ``x``. :func:`min_mod_linear` computes
``min_{0 <= x < n} (a x + b) mod m`` exactly in ``O(log n)`` steps (the count of candidates at
least halves each step), vectorised over arrays of independent problems.

Derivation (own). Let ``s_x = (a x + b) mod m`` with ``0 <= a, b < m``.

* ``a == 0``: every term equals ``b``.
* ``2a <= m``: the sequence rises by ``a`` and wraps; the minimum is ``b`` (``x = 0``) or the first
  term after the ``k``-th wrap, ``(b - k m) mod a`` for ``k = 1..K`` with
  ``K = floor((a (n-1) + b) / m)``. Writing ``k = k' + 1`` that is
  ``min_{0 <= k' < K} ((-m mod a) k' + (b - m) mod a) mod a``: the same problem, modulus ``a``,
  ``K <= n a / m + 1`` terms.
* ``2a > m``: with ``a' = m - a`` the sequence falls by ``a'`` and wraps up; the minimum is the last
  term ``s_{n-1}`` or the last term before a wrap, ``(b + j m) mod a'`` for every ``j >= 0`` with
  ``b + j m < a' n``, i.e. ``min_{0 <= j < J} ((m mod a') j + b mod a') mod a'`` with
  ``J = ceil((a' n - b) / m)``: modulus ``a' < m / 2``.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["max_mod_linear", "min_mod_linear"]

IntArray = npt.NDArray[np.int64]


def min_mod_linear(
    n: npt.ArrayLike, m: npt.ArrayLike, a: npt.ArrayLike, b: npt.ArrayLike
) -> IntArray:
    """``min_{0 <= x < n} (a x + b) mod m`` elementwise (``n >= 1``, ``m >= 1``; ints).

    ``a`` and ``b`` may be any integers (they are reduced mod ``m``). Intermediate products are
    ``a * n`` and ``b``, so keep ``m * n`` well below ``2**62``.
    """
    nn, mm, aa, bb = (np.array(v, dtype=np.int64) for v in np.broadcast_arrays(n, m, a, b))
    shape = nn.shape
    nn, mm, aa, bb = nn.ravel(), mm.ravel(), aa.ravel(), bb.ravel()
    if (nn < 1).any() or (mm < 1).any():
        raise ValueError("min_mod_linear needs n >= 1 and m >= 1")
    aa = aa % mm
    bb = bb % mm
    out = bb.copy()
    idx = np.arange(nn.size)
    while idx.size:
        zero = aa == 0
        up = 2 * aa <= mm  # includes a == 0
        an1b = aa * (nn - 1) + bb
        out[idx] = np.minimum(out[idx], np.where(up, bb, an1b % mm))
        a_safe = np.where(zero, 1, aa)
        a2 = mm - aa  # >= 1 since a < m
        num = a2 * nn - bb
        new_n = np.where(up, an1b // mm, np.where(num > 0, (num + mm - 1) // mm, 0))
        new_n[zero] = 0
        new_m = np.where(up, a_safe, a2)
        new_a = np.where(up, (-mm) % a_safe, mm % a2)
        new_b = np.where(up, (bb - mm) % a_safe, bb % a2)
        keep = new_n >= 1
        idx, nn, mm, aa, bb = idx[keep], new_n[keep], new_m[keep], new_a[keep], new_b[keep]
    return out.reshape(shape)


def max_mod_linear(
    n: npt.ArrayLike, m: npt.ArrayLike, a: npt.ArrayLike, b: npt.ArrayLike
) -> IntArray:
    """``max_{0 <= x < n} (a x + b) mod m``, via ``m - 1 - s_x = ((-a) x + m - 1 - b) mod m``."""
    mm = np.asarray(m, dtype=np.int64)
    bm = np.asarray(b, dtype=np.int64) % mm
    return np.asarray(mm - 1 - min_mod_linear(n, mm, -np.asarray(a, dtype=np.int64), mm - 1 - bm))
