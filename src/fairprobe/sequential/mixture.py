"""The default sequential test: a mixture-of-bets e-process on paired, balanced queries.

Anytime-valid test of H0 ``|g| <= delta`` (compliant) against H1 ``|g| > delta`` (violation),
``g = mu_a - mu_b`` the gap of the group means of the audited observable on the audit pool (the
positive rate for decisions, the mean score or the mean clipped logit). The argument is in
``docs/sequential.md``; in short:

**Pairs.** The test queries the groups alternately (``sampling = "alternate"``) and pairs the
k-th answer of group a with the k-th of group b. Within each group the answers are a uniformly
random sample *without replacement* of that group's ``N_a`` (``N_b``) pool members. With
``S_a``, ``S_b`` the sums of the first ``k - 1`` paired answers,

    z_k = S_a / N_a + (N_a - k + 1) / N_a * x_a,k  -  (S_b / N_b + (N_b - k + 1) / N_b * x_b,k)

has conditional mean exactly ``g`` given the past (Waudby-Smith and Ramdas, *Confidence sequences
for sampling without replacement*, NeurIPS 2020, the finite-population martingale). With no pool
size (``population=None``, i.i.d. draws) ``z_k = x_a,k - x_b,k``. ``z_k`` lies in a predictable
interval ``[zmin_k, zmax_k]`` because the observable lies in ``[lo, hi]``.

**Three e-processes**, each ``prod_k (1 + lambda_k y_k)`` with a predictable ``lambda_k >= 0``:

==========  =============================  ========================================
process     payoff ``y_k``                 mean ``<= 0`` (super-martingale) when
==========  =============================  ========================================
``V``       ``s_k z_k - delta``            ``|g| <= delta`` (H0), for either sign
``C+``      ``delta - z_k``                ``g >= delta``
``C-``      ``z_k + delta``                ``g <= -delta``
==========  =============================  ========================================

``s_k = sign`` of the running gap estimate (predictable): one gambler bets on the side the data
point to, so no ``log 2`` is lost splitting between ``g > delta`` and ``g < -delta``.

**Mixture of bets.** Each process is a weighted average of wealths: three whose bets target the
design excesses ``e_j = delta * (0.5, 0.87, 1.5)`` (Kelly's ``lambda = e / (Var z + e^2)`` with
the running variance; weight 0.3 each) and one adaptive bettor (weight 0.1) betting Kelly's
``lambda`` for the running mean payoff (plug-in, predictable), all capped so that
``1 + lambda y > 0`` for every possible ``y``. An average of test super-martingales is one; the
mixture adapts to the true excess at the price of at most ``log(1 / 0.3)`` against its best
design bettor (measured: far less).

**Decisions.** *violation* once ``V >= 1 / alpha`` (Ville: ``P_H0(ever) <= alpha``); *compliant*
once ``C+`` and ``C-`` have *each* reached ``1 / beta`` (intersection-union: under ``g > delta``
``C+`` is a super-martingale, so ``P(ever) <= beta``; likewise ``C-``); *inconclusive* at the
budget. Both guarantees hold at every stopping time, for any budget, on any pool (no model of the
observable beyond its range).

**Confidence sequence.** For each ``c`` on a grid, the same mixtures test ``g <= c`` and
``g >= c`` at level ``alpha / 2`` each; the bounds are the outermost grid points not yet
rejected, widened by one grid step (so that a gap between two grid points is covered: the
neighbour on its far side is a true hypothesis), a ``1 - alpha`` confidence sequence valid
simultaneously over all queries and every gap (it only shrinks).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from fairprobe._validation import check_int, check_real
from fairprobe.errors import InvalidParameterError
from fairprobe.sequential.base import (
    BoolArray,
    FloatArray,
    OrdersOutcome,
    SequentialTest,
    Stepper,
    check_budget,
    first_crossing,
    register_test,
)
from fairprobe.sequential.boundaries import Boundaries

__all__ = ["MixtureBettingTest", "pair_orders"]

#: design excesses, in units of delta (three bets; measured in experiments/sequential)
DESIGN = (0.5, 0.866, 1.5)
#: prior weight of the adaptive bettor (the design bets share the rest equally)
ADAPTIVE_WEIGHT = 0.1
_CAP = 0.75  # largest fraction of the "ruin" bet: 1 + lambda * y >= 0.25
_M0 = 5.0  # prior pseudo-pairs of the running variance
_PV_DIV = 4.0  # prior variance of a pair difference: (hi - lo)^2 / _PV_DIV
_CS_POINTS = 801


def _exclusive_cumsum(v: FloatArray) -> FloatArray:
    """Sum of the entries before each one along the last axis (same order as a running sum)."""
    out = np.zeros_like(v)
    np.cumsum(v[..., :-1], axis=-1, out=out[..., 1:])
    return out


def pair_orders(
    in_a: BoolArray, x: FloatArray
) -> tuple[FloatArray, FloatArray, npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Pair the k-th answer of group a with the k-th of group b in each order (row).

    Returns ``xa, xb`` (shape (orders, kmax)), the number of pairs per order and the query
    index (1-based) at which each pair is complete.
    """
    r, t = x.shape
    n_a = in_a.sum(axis=1)
    n_pairs = np.minimum(n_a, t - n_a).astype(np.int64)
    kmax = int(n_pairs.max()) if r else 0
    pos_a = np.argsort(~in_a, axis=1, kind="stable")[:, :kmax]
    pos_b = np.argsort(in_a, axis=1, kind="stable")[:, :kmax]
    xa = np.take_along_axis(x, pos_a, 1)
    xb = np.take_along_axis(x, pos_b, 1)
    when = (np.maximum(pos_a, pos_b) + 1).astype(np.int64)
    return xa, xb, n_pairs, when


@register_test("mixture")
class MixtureBettingTest(SequentialTest):
    """Anytime-valid tolerance test by a mixture of bets on balanced pairs (the default).

    See the module docstring for the construction and ``docs/sequential.md`` for the argument.
    ``statistic_upper = log V`` (against ``log(1 / alpha)``), ``statistic_lower = -min(max log
    C+, max log C-)`` (against ``log beta``).

    Parameters
    ----------
    tolerance, access, alpha, beta : see :class:`~fairprobe.sequential.base.SequentialTest`.
    population : (int, int), optional
        Pool sizes ``(N_a, N_b)`` of the two groups (of the audited sub-pool). With them the
        test uses the without-replacement martingale and audits the *pool's* gap, and gets
        sharper as the pool is used up; without, it assumes i.i.d. draws.
    bounds : (float, float), optional
        Range ``[lo, hi]`` of the observable: ``(0, 1)``. Logit access audits
        ``sigmoid(logit)``, the probability-scale gap (the tolerance is a probability, as for
        score access): the logit-scale gap has no bounded range and its tolerance would be in
        logit units, which no other access level shares.
    design : sequence of float
        Excesses ``|g| - delta`` the bets target, in units of ``delta``.
    """

    anytime_valid = True
    sampling = "alternate"
    sigmoid_logits = True

    def __init__(
        self,
        tolerance: float,
        access: str = "decisions",
        alpha: float = 0.05,
        beta: float = 0.2,
        population: tuple[int, int] | None = None,
        bounds: tuple[float, float] | None = None,
        design: tuple[float, ...] = DESIGN,
    ) -> None:
        super().__init__(tolerance, access, alpha, beta)
        owner = type(self).__name__
        if population is not None:
            na, nb = population
            population = (check_int(na, "population", owner, lo=1),
                          check_int(nb, "population", owner, lo=1))  # fmt: skip
        self.population = population
        if bounds is None:
            bounds = (0.0, 1.0)
        lo = check_real(bounds[0], "bounds", owner)
        hi = check_real(bounds[1], "bounds", owner)
        if (lo, hi) != (0.0, 1.0):
            raise InvalidParameterError(
                f"{owner}: the observable lies in (0, 1) (logits are audited as sigmoid(logit)); "
                f"got bounds {bounds}.")
        self.bounds = (lo, hi)
        if len(design) < 1:
            raise InvalidParameterError(f"{owner}: design needs at least one excess.")
        self.design = tuple(check_real(e, "design", owner, lo=0.0, closed="neither")
                            for e in design)  # fmt: skip
        self._e = np.array(self.design) * self.tolerance

    # ------------------------------------------------------------------ configuration
    def for_pool(self, in_a: BoolArray, x: FloatArray) -> MixtureBettingTest:
        """This test set up for a finite pool: its group sizes and (logits) its range."""
        na = int(in_a.sum())
        return self._copy(population=(na, len(in_a) - na))

    def _copy(self, **kw: Any) -> MixtureBettingTest:
        args: dict[str, Any] = dict(
            tolerance=self.tolerance, access=self.access, alpha=self.alpha, beta=self.beta,
            population=self.population, bounds=self.bounds, design=self.design,
        )  # fmt: skip
        args.update(kw)
        return type(self)(**args)

    def params(self) -> dict[str, Any]:
        out = super().params()
        out["population"] = list(self.population) if self.population else None
        out["bounds"] = list(self.bounds)
        out["design_excess"] = [float(e) for e in self._e]
        out["sampling"] = self.sampling
        if self.access == "logits":
            out["observable"] = "sigmoid"
        return out

    @property
    def boundaries(self) -> Boundaries:
        return Boundaries(math.log(1.0 / self.alpha), math.log(self.beta))

    def stepper(self, budget: int) -> Stepper:
        return _MixtureStepper(self, check_budget(budget, "MixtureBettingTest.stepper"))

    def _clip(self, x: FloatArray) -> FloatArray:
        if self.access != "logits":
            return x
        out: FloatArray = 1.0 / (1.0 + np.exp(-np.asarray(x, dtype=np.float64)))
        return out

    # ------------------------------------------------------------------ the vectorised kernel
    def _terms(
        self, xa: FloatArray, xb: FloatArray
    ) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray, FloatArray, FloatArray]:
        """Per pair: ``z``, its predictable range, the bet scale terms and the sign ``s``."""
        k = xa.shape[-1]
        i = np.arange(k, dtype=float)  # pairs before this one
        lo, hi = self.bounds
        sa = _exclusive_cumsum(xa)
        sb = _exclusive_cumsum(xb)
        d = xa - xb
        dprev = sa - sb
        qprev = _exclusive_cumsum(d * d)
        if self.population is None:
            wa = wb = np.ones(k)
            base = np.zeros_like(xa)
        else:
            na, nb = self.population
            wa = np.maximum(na - i, 0.0) / na
            wb = np.maximum(nb - i, 0.0) / nb
            base = sa / na - sb / nb
        z = base + wa * xa - wb * xb
        zmin = base + wa * lo - wb * hi
        zmax = base + wa * hi - wb * lo
        mean = np.where(i > 0, dprev / np.maximum(i, 1.0), 0.0)
        prior = (hi - lo) ** 2 / _PV_DIV
        var_d = (prior * _M0 + qprev - i * mean * mean) / (_M0 + i)
        var_z = np.maximum(var_d, 1e-12) * (wa * wa + wb * wb) / 2.0
        s = np.where(mean >= 0.0, 1.0, -1.0)
        return z, zmin, zmax, var_z, s, mean

    def _log_mix(self, y: FloatArray, ymin: FloatArray, var_z: FloatArray) -> FloatArray:
        """log of the mixture wealth after each pair (cumulative over the last axis)."""
        room = np.where(ymin < 0.0, _CAP / np.maximum(-ymin, 1e-300), np.inf)
        lw_design = math.log((1.0 - ADAPTIVE_WEIGHT) / len(self._e))
        acc = None
        for e in self._e:
            lam = np.minimum(e / (var_z + e * e), room)
            lw = np.cumsum(np.log1p(lam * y), axis=-1) + lw_design
            acc = lw if acc is None else np.logaddexp(acc, lw)
        # the adaptive bettor: Kelly's bet for the running mean payoff (shrunk to 0)
        k = y.shape[-1]
        ybar = _exclusive_cumsum(y) / (_M0 + np.arange(k, dtype=float))
        ybar = np.maximum(ybar, 0.0)
        lam = np.minimum(ybar / (var_z + ybar * ybar), room)
        lw = np.cumsum(np.log1p(lam * y), axis=-1) + math.log(ADAPTIVE_WEIGHT)
        out: FloatArray = np.logaddexp(acc, lw) if acc is not None else lw
        return out

    def processes(self, xa: FloatArray, xb: FloatArray) -> dict[str, FloatArray]:
        """``log V``, ``log C+``, ``log C-`` after each pair (paired answers, any leading shape)."""
        xa, xb = self._clip(xa), self._clip(xb)
        z, zmin, zmax, var_z, s, _ = self._terms(xa, xb)
        delta = self.tolerance
        yv = s * z - delta
        yv_min = np.where(s > 0, zmin, -zmax) - delta
        return {
            "V": self._log_mix(yv, yv_min, var_z),
            "C+": self._log_mix(delta - z, delta - zmax, var_z),
            "C-": self._log_mix(z + delta, zmin + delta, var_z),
        }

    def _run_orders(self, in_a: BoolArray, x: FloatArray) -> OrdersOutcome:
        r, t = x.shape
        xa, xb, n_pairs, when = pair_orders(in_a, x)
        if xa.shape[1] == 0:
            return OrdersOutcome.undecided(r, t)
        p = self.processes(xa, xb)
        valid = np.arange(xa.shape[1])[None, :] < n_pairs[:, None]
        viol = (p["V"] >= math.log(1.0 / self.alpha)) & valid
        lb = math.log(1.0 / self.beta)
        comp = (
            (np.maximum.accumulate(p["C+"], axis=1) >= lb)
            & (np.maximum.accumulate(p["C-"], axis=1) >= lb)
            & valid
        )
        return first_crossing(viol, comp, t, when)

    # ------------------------------------------------------------------ confidence sequence
    def confidence_sequence(
        self, xa: FloatArray, xb: FloatArray, level: float | None = None
    ) -> tuple[FloatArray, FloatArray]:
        """Lower and upper ``1 - alpha`` confidence bounds for ``g`` after each pair.

        For each ``c`` on a grid (801 points, step ``h``, across the possible gaps) the same
        mixture of bets tests ``g <= c`` and ``g >= c`` at ``alpha / 2`` each. The lower bound is
        ``min{c : "g <= c" never rejected} - h``, the upper ``max{c : "g >= c" never rejected}
        + h``: for a true gap in ``(c_j, c_{j+1}]`` the hypothesis ``g <= c_{j+1}`` is true, so it
        stays unrejected with probability ``>= 1 - alpha / 2`` (Ville) and the lower bound is
        then at most ``c_j < g``; likewise above. So ``P(g ever outside) <= alpha`` for *every*
        gap, between grid points too (the bounds on grid points alone, without the ``h``, cover
        only gaps on the grid: where the scores vary little, the interval shrinks below one grid
        step and misses a gap between two points). The bounds only tighten as pairs arrive.
        """
        grid, rej_low, rej_up, est = self.grid_rejections(xa, xb, level)
        w = float(grid[-1, 0])
        step = 2.0 * w / (_CS_POINTS - 1)
        g = np.broadcast_to(grid, rej_low.shape)
        low = np.maximum(np.where(~rej_low, g, np.inf).min(axis=0) - step, -w)
        up = np.minimum(np.where(~rej_up, g, -np.inf).max(axis=0) + step, w)
        # every grid point rejected on one side, or the bounds crossed: a true hypothesis was
        # rejected (probability <= alpha); keep the point estimate rather than an empty set
        empty = ~np.isfinite(low) | ~np.isfinite(up) | (low > up)
        low = np.where(empty, est, low)
        up = np.where(empty, est, up)
        return low, up

    def grid_rejections(
        self, xa: FloatArray, xb: FloatArray, level: float | None = None
    ) -> tuple[FloatArray, BoolArray, BoolArray, FloatArray]:
        """``(grid, rej_low, rej_up, estimate)``: the grid ``(P, 1)``, whether ``g <= c``
        (``rej_low``) and ``g >= c`` (``rej_up``) has been rejected by each pair ``(P, k)``, and
        the running gap estimate ``(k,)`` (:meth:`confidence_sequence` reads its bounds off)."""
        a = self.alpha if level is None else 1.0 - level
        xa, xb = self._clip(np.asarray(xa, float)), self._clip(np.asarray(xb, float))
        lo, hi = self.bounds
        w = hi - lo
        grid = np.linspace(-w, w, _CS_POINTS)[:, None]
        z, zmin, zmax, var_z, _, _ = self._terms(xa, xb)
        thr = math.log(2.0 / a)
        rej_low = np.maximum.accumulate(self._log_mix(z - grid, zmin - grid, var_z), 1) >= thr
        rej_up = np.maximum.accumulate(self._log_mix(grid - z, grid - zmax, var_z), 1) >= thr
        est = np.cumsum(xa - xb) / np.arange(1, xa.shape[-1] + 1)
        return grid, rej_low, rej_up, est

    def run_path(self, in_a: npt.ArrayLike, x: npt.ArrayLike) -> dict[str, Any]:
        """One order, step by step, plus the confidence sequence and e-values at each pair."""
        out = super().run_path(in_a, x)
        g = np.asarray(in_a, dtype=bool).ravel()[: out["queries"]]
        v = self.check_values(x).ravel()[: out["queries"]]
        xa, xb, n_pairs, when = pair_orders(g[None, :], v[None, :])
        k = int(n_pairs[0])
        xa, xb = xa[0, :k], xb[0, :k]
        if k:
            low, up = self.confidence_sequence(xa, xb)
            p = self.processes(xa, xb)
        else:
            low = up = np.zeros(0)
            p = {"V": np.zeros(0), "C+": np.zeros(0), "C-": np.zeros(0)}
        out["pairs"] = {
            "query": when[0, :k].tolist(),
            "cs_low": low.tolist(),
            "cs_high": up.tolist(),
            "log_e_violation": p["V"].tolist(),
            "log_e_above_minus_delta": p["C-"].tolist(),
            "log_e_below_delta": p["C+"].tolist(),
        }
        return out


class _MixtureStepper(Stepper):
    """O(J) per answer: running sums and the three mixtures' component wealths."""

    def __init__(self, test: MixtureBettingTest, budget: int) -> None:
        super().__init__(budget)
        self.t = test
        self.qa: list[float] = []
        self.qb: list[float] = []
        self.k = 0
        self.sa = self.sb = self.q = 0.0
        j = len(test._e)
        w0 = math.log((1.0 - ADAPTIVE_WEIGHT) / j)
        # per process: the design bettors' log-wealths, then the adaptive bettor's
        self.logw = [[w0] * j + [math.log(ADAPTIVE_WEIGHT)] for _ in range(3)]  # V, C+, C-
        self.ysum = [0.0, 0.0, 0.0]
        self.best = [0.0, 0.0]  # running max of log C+, log C-
        self.la = math.log(1.0 / test.alpha)
        self.lb = math.log(1.0 / test.beta)
        self.ia = self.ib = 0  # read positions in the queues
        self.pair_queries: list[int] = []

    def _mix(self, idx: int) -> float:
        ws = self.logw[idx]
        m = max(ws)
        return m + math.log(sum(math.exp(w - m) for w in ws))

    @property
    def log_e(self) -> tuple[float, float, float]:
        """log V, log C+, log C- now."""
        return self._mix(0), self._mix(1), self._mix(2)

    @property
    def statistic_upper(self) -> float:
        return self._mix(0)

    @property
    def statistic_lower(self) -> float:
        return -min(self.best)

    def _pair(self, xa: float, xb: float) -> str | None:
        t = self.t
        lo, hi = t.bounds
        i = float(self.k)
        if t.population is None:
            wa = wb = 1.0
            base = 0.0
        else:
            na, nb = t.population
            wa, wb = max(na - i, 0.0) / na, max(nb - i, 0.0) / nb
            base = self.sa / na - self.sb / nb
        z = base + wa * xa - wb * xb
        zmin = base + wa * lo - wb * hi
        zmax = base + wa * hi - wb * lo
        dprev = self.sa - self.sb
        mean = dprev / i if i > 0 else 0.0
        var_d = ((hi - lo) ** 2 / _PV_DIV * _M0 + self.q - i * mean * mean) / (_M0 + i)
        var_z = max(var_d, 1e-12) * (wa * wa + wb * wb) / 2.0
        s = 1.0 if mean >= 0.0 else -1.0
        delta = t.tolerance
        pays = (
            (s * z - delta, (zmin if s > 0 else -zmax) - delta),
            (delta - z, delta - zmax),
            (z + delta, zmin + delta),
        )
        for idx, (y, ymin) in enumerate(pays):
            room = _CAP / max(-ymin, 1e-300) if ymin < 0.0 else math.inf
            ws = self.logw[idx]
            es = t._e.tolist()
            for j, e in enumerate(es):
                lam = min(e / (var_z + e * e), room)
                ws[j] += math.log1p(lam * y)
            ybar = max(self.ysum[idx] / (_M0 + i), 0.0)
            lam = min(ybar / (var_z + ybar * ybar), room)
            ws[len(es)] += math.log1p(lam * y)
            self.ysum[idx] += y
        self.k += 1
        self.sa += xa
        self.sb += xb
        d = xa - xb
        self.q += d * d
        lv, lcp, lcm = self.log_e
        self.best[0] = max(self.best[0], lcp)
        self.best[1] = max(self.best[1], lcm)
        self.pair_queries.append(self.n)
        if lv >= self.la:
            return "violation"
        if min(self.best) >= self.lb:
            return "compliant"
        return None

    def _observe(self, in_group_a: bool, value: float) -> str | None:
        if self.t.access == "logits":
            value = 1.0 / (1.0 + math.exp(-min(max(value, -700.0), 700.0)))
        (self.qa if in_group_a else self.qb).append(value)
        if len(self.qa) > self.ia and len(self.qb) > self.ib:
            xa, xb = self.qa[self.ia], self.qb[self.ib]
            self.ia += 1
            self.ib += 1
            return self._pair(xa, xb)
        return None
