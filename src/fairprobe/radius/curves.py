"""Least-divergence reweighting of ONE group with a prescribed mean (the within-group problem).

For a group with distinct values ``v_j`` and within-group probabilities ``p_j`` the cost of moving
its mean to ``a`` is ``c(a) = min { D(r) : r >= 0, sum p r = 1, sum p r v = a }``; ``c`` is convex
in ``a``, zero at the group mean ``mu``, finite on ``[min v, max v]`` and infinite outside.

KL (``D = sum p r log r``): the minimiser is the exponential tilt ``r ∝ exp(lam v)``; with
``Lambda(lam) = log sum p exp(lam v)`` one has ``a = Lambda'(lam)``, ``c = lam a - Lambda(lam)``
(the convex dual) and ``c'(a) = lam``.

chi2 (``D = sum p (r - 1)^2``): the minimiser is ``r = max(0, alpha + beta v)``; parametrised by
``beta`` (``c'(a) = 2 beta``) it is ``r = beta (v - tau)_+`` for ``beta > 0`` with ``tau`` fixed
by ``sum p r = 1``, found exactly from sorted suffix sums; ``a = mu + beta sigma^2`` and
``c = beta^2 sigma^2`` while no point is clipped.

Each curve is parametrised by its slope parameter (``lam`` or ``beta``), monotone in ``a``;
``eval`` maps parameters to ``(a, c, c'(a))`` and ``solve`` inverts ``a -> parameter``. The
support ends have parameter ``+-inf`` and finite cost (``-log p_end`` for KL, ``1/p_end - 1`` for
chi2).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod

import numpy as np
from numpy.typing import NDArray

__all__ = ["Chi2Curve", "GroupCurve", "KLCurve", "make_curve"]

FloatArray = NDArray[np.float64]
_CHUNK = 4_000_000  # entries of the (params x atoms) block evaluated at once


class GroupCurve(ABC):
    """Common part: sorted atoms, mean, spread and the end points."""

    def __init__(self, v: FloatArray, p: FloatArray) -> None:
        self.v = np.asarray(v, dtype=float)
        self.p = np.asarray(p, dtype=float) / float(np.sum(p))
        self.lo = float(self.v[0])
        self.hi = float(self.v[-1])
        self.mean = float(self.p @ self.v)
        self.var = float(self.p @ (self.v - self.mean) ** 2)
        self.spread = self.hi - self.lo
        self.constant = self.spread <= 0.0

    # subclasses -------------------------------------------------------------------------
    @abstractmethod
    def end_cost(self, upper: bool) -> float:
        """Divergence of the reweighting that puts the mean at a support end."""

    def _end_ratio(self, param: float) -> FloatArray:
        """The ratio at ``param = +-inf``: all the mass on the largest (smallest) value."""
        r = np.zeros_like(self.v)
        k = -1 if param > 0 else 0
        r[k] = 1.0 / self.p[k]
        return r

    def end_param(self, upper: bool) -> float:
        """Parameter at which the mean reaches the support end (``+-inf`` for KL)."""
        return math.inf if upper else -math.inf

    @abstractmethod
    def eval(self, params: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
        """Means, divergences and their derivatives at ``params`` (vectorised)."""

    @abstractmethod
    def ratio(self, param: float) -> FloatArray:
        """Within-group density ratio ``r_j`` (mean 1 under p) for one parameter value."""

    @abstractmethod
    def scale(self) -> float:
        """A parameter value that moves the mean by about one standard deviation."""

    # shared -----------------------------------------------------------------------------
    def eval_full(self, params: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
        """``eval`` that also accepts ``+-inf`` (the support ends)."""
        params = np.asarray(params, dtype=float)
        a = np.empty_like(params)
        c = np.empty_like(params)
        s = np.empty_like(params)
        fin = np.isfinite(params)
        if fin.any():
            a[fin], c[fin], s[fin] = self.eval(params[fin])
        up = params == np.inf
        dn = params == -np.inf
        a[up], c[up], s[up] = self.hi, self.end_cost(True), np.inf
        a[dn], c[dn], s[dn] = self.lo, self.end_cost(False), -np.inf
        return a, c, s

    def tangents(self, params: FloatArray) -> tuple[FloatArray, FloatArray]:
        """Tangent of ``c`` at finite ``params`` as ``(anchor, intercept)``: the line is
        ``slope (y - anchor) + intercept``. Default: the curve point itself."""
        a, c, _ = self.eval(np.atleast_1d(np.asarray(params, dtype=float)))
        return a, c

    def eval_with_tangents(self, params: FloatArray) -> tuple[FloatArray, ...]:
        """``eval_full`` plus ``(anchor, intercept)`` of each tangent (the point itself)."""
        a, c, s = self.eval_full(params)
        return a, c, s, a.copy(), c.copy()

    def solve(self, targets: FloatArray, tol: float = 1e-14,
              guess: FloatArray | None = None) -> FloatArray:
        """Parameters whose curve point has mean ``targets`` (vectorised safeguarded secant).

        Targets at a support end give ``+-inf``; targets outside the support raise ValueError.
        """
        t = np.atleast_1d(np.asarray(targets, dtype=float))
        out = np.zeros_like(t)
        span = max(self.spread, 1e-300)
        out[t >= self.hi] = self.end_param(True)
        out[t <= self.lo] = self.end_param(False)
        inside = (t > self.lo) & (t < self.hi)
        slack = 1e-12 * span + 8 * np.spacing(max(abs(self.lo), abs(self.hi)))
        if np.any(t > self.hi + slack) or np.any(t < self.lo - slack):
            raise ValueError("target mean outside the group's support")
        if not inside.any():
            return out
        tt = t[inside]
        up = tt >= self.mean
        # bracket: [lo_p, hi_p] with a(lo_p) <= tt <= a(hi_p)
        lo_p = np.where(up, 0.0, -self.scale())
        hi_p = np.where(up, self.scale(), 0.0)
        for _ in range(200):
            a_hi, _, _ = self.eval(hi_p)
            need = up & (a_hi < tt)
            if not need.any():
                break
            lo_p = np.where(need, hi_p, lo_p)
            hi_p = np.where(need, hi_p * 2.0, hi_p)
        for _ in range(200):
            a_lo, _, _ = self.eval(lo_p)
            need = (~up) & (a_lo > tt)
            if not need.any():
                break
            hi_p = np.where(need, lo_p, hi_p)
            lo_p = np.where(need, lo_p * 2.0, lo_p)
        # Newton steps on a(param) = tt, where da/dparam is approximated by secants inside the
        # bracket, with bisection as the safeguard (Illinois-style regula falsi).
        a_lo, _, _ = self.eval(lo_p)
        a_hi, _, _ = self.eval(hi_p)

        def narrow(x: NDArray[np.float64]) -> NDArray[np.float64]:
            """Evaluate at ``x`` and keep the half of each bracket that holds the target."""
            nonlocal lo_p, a_lo, hi_p, a_hi
            ax, _, _ = self.eval(x)
            left = ax < tt
            lo_p, a_lo = np.where(left, x, lo_p), np.where(left, ax, a_lo)
            hi_p, a_hi = np.where(left, hi_p, x), np.where(left, a_hi, ax)
            return ax

        for _ in range(100):
            denom = a_hi - a_lo
            with np.errstate(divide="ignore", invalid="ignore"):
                x = lo_p + (tt - a_lo) * (hi_p - lo_p) / denom
            mid = 0.5 * (lo_p + hi_p)
            bad = ~np.isfinite(x) | (x <= np.minimum(lo_p, hi_p)) | (x >= np.maximum(lo_p, hi_p))
            x = np.where(bad, mid, x)
            # keep progress: mix in bisection when the bracket shrinks slowly
            ax = narrow(x)
            # Illinois modification: pull the stale end towards the target
            width = np.abs(hi_p - lo_p)
            done = (np.abs(ax - tt) <= tol * (abs(self.hi) + abs(self.lo) + span)) | (
                width <= 1e-15 * np.maximum(np.abs(hi_p), np.abs(lo_p)) + 1e-300
            )
            if done.all():
                break
            # one bisection step on every other iteration guarantees linear convergence
            narrow(0.5 * (lo_p + hi_p))
        res = np.where(np.abs(a_lo - tt) <= np.abs(a_hi - tt), lo_p, hi_p)
        out[inside] = res
        return out


class KLCurve(GroupCurve):
    """Exponential tilts ``r ∝ exp(lam v)`` of one group (KL divergence)."""

    def end_cost(self, upper: bool) -> float:
        return -math.log(float(self.p[-1] if upper else self.p[0]))

    def scale(self) -> float:
        return 1.0 / max(math.sqrt(self.var), 1e-300)

    def _sums(self, lam: FloatArray, second: bool = False) -> tuple[FloatArray, ...]:
        """Per tilt: ``z = sum p e^{lam (v - ref)}``, ``sum (.) x``, ``sum (.) (v - ref)`` and
        optionally ``sum (.) x^2`` (``x = v - mean``).

        ``ref`` is the support end that keeps exponents <= 0. Atoms whose exponent is below
        -750 contribute exactly 0.0 in float64 and are skipped (values are sorted, so the
        contributing atoms form a contiguous run): large tilts touch few atoms. The sum against
        ``v - ref`` has terms of one sign, so the offset of the tilted mean from its support end
        is accurate to a few ulp *of the offset* (no cancellation near the end).
        """
        if not hasattr(self, "_logp"):
            self._logp = np.log(self.p)
            self._x = self.v - self.mean
            self._x2 = self._x * self._x
        ref = np.where(lam >= 0, self.hi, self.lo)
        with np.errstate(divide="ignore"):
            cut = np.where(lam > 0, self.hi - 750.0 / lam, np.where(lam < 0, self.lo - 750.0 / lam, 0))
        n = self.v.size
        lo_i = np.where(lam > 0, np.searchsorted(self.v, cut, side="left"), 0)
        hi_i = np.where(lam < 0, np.searchsorted(self.v, cut, side="right"), n)
        z = np.empty(lam.size)
        s1 = np.empty(lam.size)
        sr = np.empty(lam.size)
        s2 = np.empty(lam.size)
        sparse = (hi_i - lo_i) < n // 2
        dense = ~sparse
        if dense.any():
            ld = lam[dense]
            dv = self.v[None, :] - ref[dense][:, None]
            e = np.exp(ld[:, None] * dv + self._logp[None, :])
            z[dense] = e.sum(axis=1)
            s1[dense] = e @ self._x
            sr[dense] = np.einsum("ij,ij->i", e, dv)
            if second:
                s2[dense] = e @ self._x2
        for i in np.flatnonzero(sparse):
            sl = slice(int(lo_i[i]), int(hi_i[i]))
            dv1 = self.v[sl] - ref[i]
            e1 = np.exp(lam[i] * dv1 + self._logp[sl])
            z[i] = e1.sum()
            s1[i] = e1 @ self._x[sl]
            sr[i] = e1 @ dv1
            if second:
                s2[i] = e1 @ self._x2[sl]
        return z, s1, s2, ref, sr

    def _block(self, lam: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
        a, c, s, _, _ = self._block_full(lam)
        return a, c, s

    def _block_full(self, lam: FloatArray) -> tuple[FloatArray, ...]:
        z, s1, _, ref, sr = self._sums(lam)
        d_mean = s1 / z  # tilted mean minus the group mean (accurate near the mean)
        d_ref = sr / z  # tilted mean minus the support end (accurate near the end)
        a = np.where(np.abs(d_ref) < np.abs(d_mean), ref + d_ref, self.mean + d_mean)
        # c = lam a - Lambda(lam) = lam (a - ref) - log z, with a - ref taken from d_ref: never
        # a rounded a minus ref times a huge lam (an end-of-range optimum has lam ~ -8e14)
        logz = np.log(z)
        c = lam * d_ref - logz
        return np.clip(a, self.lo, self.hi), np.maximum(c, 0.0), lam.copy(), ref, -logz

    def eval_with_tangents(self, params: FloatArray) -> tuple[FloatArray, ...]:
        """``eval_full`` plus the conjugate-form tangents (:meth:`tangents`) in one pass."""
        params = np.asarray(params, dtype=float)
        a, c, s = (np.empty_like(params) for _ in range(3))
        r, i = np.empty_like(params), np.empty_like(params)
        fin = np.isfinite(params)
        lam = params[fin]
        rows = max(1, _CHUNK // max(self.v.size, 1))
        parts = [self._block_full(lam[k: k + rows]) for k in range(0, lam.size, rows)]
        if parts:
            for arr, q in zip((a, c, s, r, i), zip(*parts, strict=True), strict=True):
                arr[fin] = np.concatenate(q)
        for end, upper in ((params == np.inf, True), (params == -np.inf, False)):
            a[end] = self.hi if upper else self.lo
            c[end] = self.end_cost(upper)
            s[end] = np.inf if upper else -np.inf
            r[end], i[end] = a[end], c[end]
        return a, c, s, r, i

    def tangents(self, params: FloatArray) -> tuple[FloatArray, FloatArray]:
        """Tangent of ``c`` at each tilt in conjugate form: ``c(y) >= lam (y - ref) - log z``.

        By convex duality ``c(y) = sup_lam (lam y - Lambda(lam))``, so the line is a valid lower
        bound for every ``lam``, and written around the support end ``ref`` it has no large
        intercept to cancel. Returns ``(anchor, intercept)`` = ``(ref, -log z)``.
        """
        lam = np.atleast_1d(np.asarray(params, dtype=float))
        z, _, _, ref, _ = self._sums(lam)
        return ref, -np.log(z)

    def eval(self, params: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
        lam = np.atleast_1d(np.asarray(params, dtype=float))
        rows = max(1, _CHUNK // max(self.v.size, 1))
        if lam.size <= rows:
            return self._block(lam)
        parts = [self._block(lam[i : i + rows]) for i in range(0, lam.size, rows)]
        return tuple(np.concatenate([q[k] for q in parts]) for k in range(3))  # type: ignore[return-value]

    def _mean_var(self, lam: FloatArray) -> tuple[FloatArray, FloatArray]:
        z, s1, s2, _, _ = self._sums(lam, second=True)
        ad = s1 / z
        return self.mean + ad, np.maximum(s2 / z - ad * ad, 0.0)

    def solve(self, targets: FloatArray, tol: float = 1e-14,
              guess: FloatArray | None = None) -> FloatArray:
        """Tilt parameters with mean ``targets``: Newton on ``Lambda'(lam) = a`` (the slope is the
        tilted variance), safeguarded by a bracket and bisection; ``+-inf`` at the support ends."""
        t = np.atleast_1d(np.asarray(targets, dtype=float))
        span = max(self.spread, 1e-300)
        slack = 1e-12 * span + 8 * np.spacing(max(abs(self.lo), abs(self.hi)))
        if np.any(t > self.hi + slack) or np.any(t < self.lo - slack):
            raise ValueError("target mean outside the group's support")
        out = np.where(t >= self.hi, np.inf, np.where(t <= self.lo, -np.inf, 0.0))
        inside = (t > self.lo) & (t < self.hi)
        if not inside.any():
            return out
        tt = t[inside]
        lo = np.full(tt.size, -np.inf)
        hi = np.full(tt.size, np.inf)
        lam = (tt - self.mean) / max(self.var, 1e-300)
        if guess is not None:
            gs = np.broadcast_to(np.asarray(guess, dtype=float), t.shape)[inside]
            lam = np.where(np.isfinite(gs), gs, lam)
        atol = tol * (abs(self.hi) + abs(self.lo) + span)
        for _ in range(200):
            a, var = self._mean_var(lam)
            f = a - tt
            lo = np.where(f < 0, np.maximum(lo, lam), lo)
            hi = np.where(f > 0, np.minimum(hi, lam), hi)
            if np.all(np.abs(f) <= atol):
                break
            with np.errstate(divide="ignore", invalid="ignore"):
                step = lam - f / var
            # bisection (or doubling towards an open side) when Newton leaves the bracket
            fin_lo, fin_hi = np.isfinite(lo), np.isfinite(hi)
            with np.errstate(invalid="ignore"):
                mid = np.where(fin_lo & fin_hi, 0.5 * (lo + hi),
                               np.where(fin_lo, lo + np.maximum(np.abs(lo), self.scale()),
                                        hi - np.maximum(np.abs(hi), self.scale())))
            bad = ~np.isfinite(step) | (step <= lo) | (step >= hi)
            new = np.where(bad, mid, step)
            done = np.abs(f) <= atol
            new = np.where(done, lam, new)
            if np.all(new == lam):
                break
            lam = new
        out[inside] = lam
        return out

    def ratio(self, param: float) -> FloatArray:
        if param == np.inf or param == -np.inf:
            return self._end_ratio(param)
        ref = self.hi if param >= 0 else self.lo
        e = np.exp(param * (self.v - ref))
        return e / float(self.p @ e)


class Chi2Curve(GroupCurve):
    """Clipped linear reweightings ``r = max(0, alpha + beta v)`` of one group (chi-square)."""

    def __init__(self, v: FloatArray, p: FloatArray) -> None:
        super().__init__(v, p)
        self._side = {+1: self._suffix(self.v - self.mean), -1: self._suffix(-(self.v - self.mean))}

    def _suffix(self, x: FloatArray) -> tuple[FloatArray, ...]:
        """Sorted x with suffix mass, suffix mean, suffix centred second moment (all stable)."""
        order = np.argsort(x, kind="stable")
        xs = x[order]
        ps = self.p[order]
        sp = np.cumsum(ps[::-1])[::-1]
        sm = np.cumsum((ps * xs)[::-1])[::-1]
        mean = sm / sp
        mean_next = np.append(mean[1:], xs[-1])
        # M2_k = M2_{k+1} + p_k (x_k - m_{k+1}) (x_k - m_k): non-negative terms, summed stably
        d = ps * (xs - mean_next) * (xs - mean)
        d[-1] = 0.0
        m2 = np.cumsum(np.maximum(d, 0.0)[::-1])[::-1]
        # S1 at tau = x_k: sum_{j>k} p_j (x_j - x_k) = P_{k+1} (m_{k+1} - x_k)
        sp1 = np.append(sp[1:], 0.0)
        s1_at = np.maximum(sp1 * (mean_next - xs), 0.0)
        return xs, sp, mean, m2, s1_at

    def _active(self, s: FloatArray, side: int) -> tuple[FloatArray, FloatArray, FloatArray]:
        """Active-set mass, mean and centred moment once S1(tau) = s forces clipping."""
        xs, sp, mean, m2, s1_at = self._side[side]
        k = np.searchsorted(-s1_at, -s, side="right") - 1
        k = np.clip(k, 0, xs.size - 2) + 1
        return sp[k], mean[k], m2[k]

    def end_cost(self, upper: bool) -> float:
        return 1.0 / float(self.p[-1] if upper else self.p[0]) - 1.0

    def end_param(self, upper: bool) -> float:
        # the mean reaches the end once only the end atom stays active: S1 = s1_at[-2]
        if self.v.size < 2:
            return 0.0
        s1 = float(self._side[1 if upper else -1][4][-2])
        b = 1.0 / s1 if s1 > 0 else math.inf
        return b if upper else -b

    def scale(self) -> float:
        return 1.0 / max(self.var, 1e-300)

    def _side_eval(self, beta: FloatArray, side: int) -> tuple[FloatArray, FloatArray]:
        """For beta > 0 on centred values x (side=+1: x = v - mu; side=-1: x = mu - v).

        With active set J (the points with x > tau), mass P, mean m_J and centred moment M2:
        ``a = m_J + beta M2`` and ``c = beta^2 M2 + 1/P - 1``; with no clipping (J = all)
        this is ``a = beta var`` and ``c = beta^2 var``.
        """
        xs = self._side[side][0]
        s = 1.0 / beta  # required S1(tau)
        free = s >= -xs[0]  # S1 at tau = x_min is mean(x) - x_min = -x_min
        ad = np.empty_like(beta)
        c = np.empty_like(beta)
        ad[free] = beta[free] * self.var
        c[free] = beta[free] ** 2 * self.var
        cl = ~free
        if cl.any():
            P, mj, m2 = self._active(s[cl], side)
            b = beta[cl]
            ad[cl] = mj + b * m2
            c[cl] = b * b * m2 + 1.0 / P - 1.0
        return ad, np.maximum(c, 0.0)

    def solve(self, targets: FloatArray, tol: float = 1e-14,
              guess: FloatArray | None = None) -> FloatArray:
        # beyond the end parameters the curve is flat; keep parameters inside them
        out = super().solve(targets, tol, guess)
        return np.clip(out, self.end_param(False), self.end_param(True))

    def eval(self, params: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
        beta = np.atleast_1d(np.asarray(params, dtype=float))
        if self.v.size >= 2:  # flat beyond the ends: clip so that the slope stays c'(end)
            beta = np.clip(beta, self.end_param(False), self.end_param(True))
        a = np.full_like(beta, self.mean)
        c = np.zeros_like(beta)
        pos = beta > 0
        neg = beta < 0
        if pos.any():
            ad, cc = self._side_eval(beta[pos], +1)
            a[pos] = self.mean + ad
            c[pos] = cc
        if neg.any():
            ad, cc = self._side_eval(-beta[neg], -1)
            a[neg] = self.mean - ad
            c[neg] = cc
        return np.clip(a, self.lo, self.hi), c, 2.0 * beta

    def ratio(self, param: float) -> FloatArray:
        if param == np.inf or param == -np.inf:
            return self._end_ratio(param)
        if param == 0:
            return np.ones_like(self.v)
        side = 1 if param > 0 else -1
        x = side * (self.v - self.mean)
        b = abs(param)
        s = 1.0 / b
        xs = self._side[side][0]
        if s >= -xs[0]:
            tau = -s
        else:
            P, mj, _ = self._active(np.array([s]), side)
            tau = float(mj[0] - s / P[0])
        r = b * np.maximum(x - tau, 0.0)
        return r / float(self.p @ r)


def make_curve(divergence: str, v: FloatArray, p: FloatArray) -> GroupCurve:
    return KLCurve(v, p) if divergence == "kl" else Chi2Curve(v, p)
