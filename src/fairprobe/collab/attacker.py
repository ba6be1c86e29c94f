"""Attack strategies: the adaptive attacker of Algorithm 2 (Section IV) and pluggable variants.

An attacker never queries the model. Each round it fabricates an increment ``delta`` in

    X_n = {delta in Z_{>=0}^4 : dA + dB = n, da <= dA, db <= dB}

from its own view ``C = sum_j M_k[j].c`` of the global counts vector (its past fabrications
included; attackers do not collude, each works from its own table). Strategies are stateless
functions of ``(view, n, round)``, vectorised over the rows of ``views`` so that the simulator can
run every attacker of a round in one call; :meth:`AttackStrategy.fabricate_one` is the scalar
form the protocol core uses. Register a new strategy with :func:`register_attack`.

The adaptive attacker (``"adaptive"``)
--------------------------------------
Round 1: the neutral vector, ``dA = floor(n/2)``, ``dB = n - dA``, ``da = floor(dA/2)``,
``db = floor(dB/2)`` (Lines 9-11). From round 2: the exact integer minimiser of ``|DP(C + delta)|``
over ``X_n`` (eq. 7). For a split ``y = dA`` let ``P = A + y``, ``Q = B + n - y``; the claimed
positives are ``X = a + da in [a, a + y]`` and ``Y = b + db in [b, b + n - y]`` and
``DP(C + delta) = (X Q - Y P) / (P Q)``. For each ``X`` the best ``Y`` is the integer next to
``X Q / P`` clamped to its range, so per split the optimum is one of

* the largest ``X`` with ``X Q < b P`` (the line lies below the box: ``Y = b``); when the whole box
  lies below the line's zero this is ``X = a + y``, ``Y = b``, the extreme labels of Lemma 1;
* the smallest ``X`` with ``X Q >= (b + n - y) P`` (``Y = b + n - y``);
* inside, ``min_x min(s_x, P - s_x)`` with ``s_x = X Q mod P``, computed exactly by
  :func:`fairprobe.collab.exact.min_mod_linear` in ``O(log n)``.

All splits of all attackers are evaluated at once with numpy; the best candidate is chosen by
exact rational comparison. Ties (equal ``|DP|``) go to the smallest ``dA``, then to the candidate
kinds in the order above, then to the smallest ``da``.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from fairprobe._registry import ClassRegistry
from fairprobe._validation import check_int
from fairprobe.collab.exact import min_mod_linear
from fairprobe.errors import DataError, InvalidParameterError
from fairprobe.stats.counts import CountsVector

__all__ = [
    "ATTACKS",
    "AdaptiveAttack",
    "AttackContext",
    "AttackStrategy",
    "ExtremeAttack",
    "NeutralAttack",
    "get_attack",
    "maximise_dp",
    "minimise_abs_dp",
    "neutral_increment",
    "register_attack",
]

IntArray = npt.NDArray[np.int64]

#: Largest total a view may hold: keeps every product of the exact search inside int64.
MAX_VIEW_TOTAL = 1_000_000_000


def neutral_increment(n: int) -> tuple[int, int, int, int]:
    """The neutral first report of Algorithm 2: an even split, half of each group positive."""
    dA = n // 2
    dB = n - dA
    return (dA // 2, dA, dB // 2, dB)


def _ceil_div(x: IntArray, y: IntArray) -> IntArray:
    return np.asarray(-((-x) // y))


def _check_views(views: npt.ArrayLike, n: int) -> IntArray:
    v = np.asarray(views, dtype=np.int64)
    if v.ndim == 1:
        v = v[None, :]
    if v.ndim != 2 or v.shape[1] != 4:
        raise DataError(f"views must have rows (a, A, b, B). Got shape {v.shape}.")
    if (v < 0).any() or (v[:, 0] > v[:, 1]).any() or (v[:, 2] > v[:, 3]).any():
        raise DataError("views must be valid counts vectors (0 <= a <= A, 0 <= b <= B).")
    if (v[:, 1] + v[:, 3] + n > MAX_VIEW_TOTAL).any():
        raise InvalidParameterError(
            f"views larger than {MAX_VIEW_TOTAL} queries are not supported by the exact attacker."
        )
    return v


def minimise_abs_dp(views: npt.ArrayLike, n: int) -> IntArray:
    """Exact ``argmin_{delta in X_n} |DP(C + delta)|`` for each row ``C`` of ``views``.

    Splits ``y`` with an empty group after the move (``A + y == 0`` or ``B + n - y == 0``) are
    skipped; a view for which every split leaves a group empty raises :class:`DataError`.

    Returns
    -------
    ndarray, shape (k, 4)
        One increment ``(da, dA, db, dB)`` per view.
    """
    n = check_int(n, "n", "minimise_abs_dp", lo=1)
    v = _check_views(views, n)
    k = v.shape[0]
    a, A, b, B = (v[:, i : i + 1] for i in range(4))
    y = np.arange(n + 1, dtype=np.int64)[None, :]
    P = A + y
    Q = B + n - y
    ok = (P > 0) & (Q > 0)
    if not ok.any(axis=1).all():
        raise DataError("Every budget split leaves a group empty: DP is undefined for this view.")
    Ps = np.where(ok, P, 1)
    Qs = np.where(ok, Q, 1)
    X0, X1 = a + 0 * y, a + y
    Y0, Y1 = b + 0 * y, b + n - y
    lo_raw = _ceil_div(Y0 * Ps, Qs)  # first X with X Q >= Y0 P
    hi_raw = _ceil_div(Y1 * Ps, Qs) - 1  # last X with X Q < Y1 P
    big = np.iinfo(np.int64).max
    # candidate kinds (last axis): 0 low edge, 1 inside below the line, 2 inside above, 3 high edge
    absg = np.full(P.shape + (4,), big, dtype=np.int64)
    x_lo = np.minimum(X1, lo_raw - 1)
    m_lo = ok & (x_lo >= X0)
    absg[..., 0] = np.where(m_lo, Y0 * Ps - x_lo * Qs, big)
    x_hi = np.maximum(X0, hi_raw + 1)
    m_hi = ok & (x_hi <= X1)
    absg[..., 3] = np.where(m_hi, x_hi * Qs - Y1 * Ps, big)
    L = np.maximum(X0, lo_raw)
    R = np.minimum(X1, hi_raw)
    inside = ok & (L <= R)
    targets = np.zeros(P.shape + (2,), dtype=np.int64)
    if inside.any():
        cnt = (R - L + 1)[inside]
        Pi, Qi, Li = Ps[inside], Qs[inside], L[inside]
        step = Qi % Pi
        start = (Li * Qi) % Pi
        # one call for both: min of s_x, and min of (P - 1 - s_x) = P - 1 - max s_x
        both = min_mod_linear(
            np.concatenate([cnt, cnt]),
            np.concatenate([Pi, Pi]),
            np.concatenate([step, -step]),
            np.concatenate([start, Pi - 1 - start]),
        )
        half = cnt.size
        smin, smax = both[:half], Pi - 1 - both[half:]
        absg[..., 1][inside] = smin
        absg[..., 2][inside] = Pi - smax
        targets[..., 0][inside] = smin
        targets[..., 1][inside] = smax
    denom = (Ps * Qs).astype(np.float64)
    val = np.where(absg == big, np.inf, absg.astype(np.float64) / denom[..., None])
    flat = val.reshape(k, -1)  # order (split, kind): argmin's first hit obeys the tie rule
    first = flat.argmin(axis=1)
    best = flat[np.arange(k), first]
    near = (flat <= (best * (1.0 + 1e-12))[:, None]).sum(axis=1)
    out = np.zeros((k, 4), dtype=np.int64)
    for r in range(k):
        pick = int(first[r])
        if near[r] > 1 and best[r] > 0:  # float near-tie: decide exactly
            cands = np.flatnonzero(flat[r] <= best[r] * (1.0 + 1e-12))
            bnum, bden = -1, 1
            for c in cands.tolist():
                sp, kind = divmod(c, 4)
                num = int(absg[r, sp, kind])
                den = int(Ps[r, sp]) * int(Qs[r, sp])
                if bnum < 0 or num * bden < bnum * den:
                    pick, bnum, bden = c, num, den
        sp, kind = divmod(pick, 4)
        Pv, Qv = int(Ps[r, sp]), int(Qs[r, sp])
        ar, br = int(a[r, 0]), int(b[r, 0])
        if kind == 0:
            X, Y = int(x_lo[r, sp]), br
        elif kind == 3:
            X, Y = int(x_hi[r, sp]), br + n - sp
        else:
            Lv = int(L[r, sp])
            x = _solve_linear_mod(Qv % Pv, (Lv * Qv) % Pv, int(targets[r, sp, kind - 1]), Pv)
            X = Lv + x
            Y = (X * Qv) // Pv + (1 if kind == 2 else 0)
        out[r] = (X - ar, sp, Y - br, n - sp)
    return out


def _solve_linear_mod(step: int, start: int, target: int, m: int) -> int:
    """Smallest ``x >= 0`` with ``(step x + start) mod m == target`` (a solution must exist)."""
    if step == 0:
        return 0
    g = math.gcd(step, m)
    t = (target - start) % m
    mg = m // g
    return ((t // g) * pow(step // g, -1, mg)) % mg if mg > 1 else 0


def maximise_dp(views: npt.ArrayLike, n: int) -> IntArray:
    """Lemma 1 move: the split maximising ``DP(C + delta)`` with extreme labels.

    ``delta = (y, y, 0, n - y)`` for ``y = argmax phi(y)``, ``phi(y) = (a+y)/(A+y) - b/(B+n-y)``
    (ties to the smallest ``y``; splits leaving a group empty are skipped).
    """
    n = check_int(n, "n", "maximise_dp", lo=1)
    v = _check_views(views, n)
    a, A, b, B = (v[:, i : i + 1].astype(np.float64) for i in range(4))
    y = np.arange(n + 1, dtype=np.float64)[None, :]
    P, Q = A + y, B + n - y
    ok = (P > 0) & (Q > 0)
    if not ok.any(axis=1).all():
        raise DataError("Every budget split leaves a group empty: DP is undefined for this view.")
    phi = np.where(ok, (a + y) / np.where(ok, P, 1) - b / np.where(ok, Q, 1), -np.inf)
    ys = phi.argmax(axis=1).astype(np.int64)
    out = np.zeros((v.shape[0], 4), dtype=np.int64)
    out[:, 0] = ys
    out[:, 1] = ys
    out[:, 3] = n - ys
    return out


@dataclass(frozen=True)
class AttackContext:
    """What the platform knows and tells a colluding attacker before the audit starts.

    Strategies that fix their behaviour in advance (the self-consistent liars of
    :mod:`fairprobe.collab.liars`) are calibrated with it; the adaptive attacker ignores it.

    Attributes
    ----------
    population : CountsVector
        The population's true counts (the honest auditors' pooled counts at the end).
    n : int
        Query budget per round.
    rounds : int
        Planned audit length ``R``.
    attackers : int
        Number ``K`` of liars the platform runs (each gets the same instruction).
    honest : int
        Number ``N`` of honest auditors (the roster size minus ``K``).
    tau : float
        Half-width of the fair band.
    seed : int
        Seed of the attackers' randomness (noise is drawn per attacker and round).
    ids : tuple of int
        Attacker index of each row of the views a call of ``fabricate`` receives.
    max_liars : int
        The liar bound ``K`` the auditors declared (public: it is in their configuration).
    honest_counts : tuple of (a, A, b, B)
        Each honest auditor's counts at the end of the audit, for strategies that need them
        (the platform answers every query, so it can know them); empty otherwise.
    """

    population: CountsVector
    n: int
    rounds: int
    attackers: int
    honest: int = 0
    tau: float = 0.05
    seed: int = 0
    ids: tuple[int, ...] = (0,)
    max_liars: int = 0
    honest_counts: tuple[tuple[int, int, int, int], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        # every field as it is, but those that JSON holds as lists
        return {
            **asdict(self),
            "population": list(self.population.as_tuple()),
            "ids": list(self.ids),
            "honest_counts": [list(c) for c in self.honest_counts],
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> AttackContext:
        # a key an older document lacks takes the field's default
        return cls(
            population=CountsVector(*(int(x) for x in d["population"])),
            n=int(d["n"]),
            rounds=int(d["rounds"]),
            attackers=int(d["attackers"]),
            honest=int(d.get("honest", cls.honest)),
            tau=float(d.get("tau", cls.tau)),
            seed=int(d.get("seed", cls.seed)),
            ids=tuple(int(x) for x in d.get("ids", cls.ids)),
            max_liars=int(d.get("max_liars", cls.max_liars)),
            honest_counts=tuple(
                (int(c[0]), int(c[1]), int(c[2]), int(c[3])) for c in d.get("honest_counts", ())
            ),
        )


class AttackStrategy(ABC):
    """A fabrication strategy of a (non-colluding) attacker.

    Subclasses implement :meth:`fabricate`, vectorised over views. Strategies are deterministic
    functions of ``(view, n, round)``; one that needs randomness draws it from its
    :class:`AttackContext` (seed, attacker index, round) and must stay reproducible. A strategy
    with ``needs_context = True`` must be :meth:`calibrate`-d before it fabricates.
    """

    name: ClassVar[str] = ""
    needs_context: ClassVar[bool] = False
    #: ``"counts"``: fabricates increments from views (:meth:`fabricate`); ``"answers"``: draws
    #: real records and reports an answer for each (:meth:`draws`, :meth:`answers`), so the
    #: simulator and the nodes know exactly which committed answers are false.
    level: ClassVar[str] = "counts"
    context: AttackContext | None = None

    def draws(self, n: int, round_: int) -> int:
        """Records an answer-level liar draws in round ``round_`` (default ``n``; the protocol
        refuses more than ``n`` per elapsed round in total)."""
        return int(n)

    def answers(
        self, groups: npt.ArrayLike, truth: npt.ArrayLike, round_: int
    ) -> npt.NDArray[np.int64]:
        """The decisions an answer-level liar reports for the records it drew this round
        (``groups``: 1 for group A; ``truth``: the model's decisions). Default: the truth."""
        return np.asarray(truth, dtype=np.int64).copy()

    def calibrate(self, ctx: AttackContext) -> AttackStrategy:
        """A copy of this strategy instructed by the platform (default: itself, unchanged)."""
        return self

    def for_ids(self, ids: tuple[int, ...]) -> AttackStrategy:
        """The strategy fabricating for the attackers ``ids`` (default: itself)."""
        return self

    @abstractmethod
    def fabricate(self, views: npt.ArrayLike, n: int, round_: int) -> IntArray:
        """Increments ``(da, dA, db, dB)`` in ``X_n``, one row per view, for round ``round_``."""

    def fabricate_one(self, view: CountsVector, n: int, round_: int) -> CountsVector:
        """Scalar form used by the per-auditor protocol core."""
        return CountsVector.from_array(self.fabricate(view.as_array()[None, :], n, round_)[0])

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


ATTACKS: ClassRegistry[AttackStrategy] = ClassRegistry("attack", "get_attack")


def register_attack(cls: type[AttackStrategy]) -> type[AttackStrategy]:
    """Class decorator: add a strategy to :data:`ATTACKS` under its ``name``."""
    return ATTACKS.register(cls)


def get_attack(name: str) -> AttackStrategy:
    """Instantiate the registered strategy ``name``."""
    return ATTACKS.make(name)


def _neutral_rows(k: int, n: int) -> IntArray:
    return np.tile(np.array(neutral_increment(n), dtype=np.int64), (k, 1))


class _NeutralFirst(AttackStrategy):
    """Neutral first report (nothing to adapt to yet), then :meth:`_adapt` of the views."""

    def fabricate(self, views: npt.ArrayLike, n: int, round_: int) -> IntArray:
        v = _check_views(views, n)
        if round_ <= 1:
            return _neutral_rows(v.shape[0], n)
        return self._adapt(v, n)

    @abstractmethod
    def _adapt(self, views: IntArray, n: int) -> IntArray:
        """The increments of a round after the first, from the checked ``(k, 4)`` views."""


@register_attack
class AdaptiveAttack(_NeutralFirst):
    """Algorithm 2: neutral first report, then the exact minimiser of ``|DP(C + delta)|``."""

    name = "adaptive"

    def _adapt(self, views: IntArray, n: int) -> IntArray:
        return minimise_abs_dp(views, n)


@register_attack
class ExtremeAttack(_NeutralFirst):
    """Neutral first report, then always the Lemma 1 maximiser of DP (no overshoot control)."""

    name = "extreme"

    def _adapt(self, views: IntArray, n: int) -> IntArray:
        return maximise_dp(views, n)


@register_attack
class NeutralAttack(AttackStrategy):
    """A self-consistent attacker: the neutral vector every round (rate 1/2 in each group).

    It never adapts, so the suspicion score cannot tell it from an honest source with such a query
    set; it moves the estimate only as much as any honest auditor could.
    """

    name = "neutral"

    def fabricate(self, views: npt.ArrayLike, n: int, round_: int) -> IntArray:
        v = _check_views(views, n)
        return _neutral_rows(v.shape[0], n)
