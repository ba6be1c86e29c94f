"""Exact consistency radius: a certified global optimum by a one-dimensional branch and bound.

Derivation (docs/radius.md has it in full). Write a reweighting as group masses ``q_g`` and
within-group reweightings ``r_g``. ``phi(P_h) = a - b`` depends only on the two within-group means
``a`` (group 0) and ``b`` (group 1), and the divergence splits (see :mod:`.divergences`), so

    R = min over admissible (a, b) of  T( pi_0 psi(c_0(a)) + pi_1 psi(c_1(b)) ),

where ``c_g`` is the least within-group divergence with mean a (an exponential tilt for KL, see
:mod:`.curves`) and ``T`` the closed-form mass split. The flip region in (a, b) is
``|a - b| < eps`` (audit unfair) or ``|a - b| >= eps`` (audit fair); since each ``c_g`` is convex
with its minimum 0 at the group mean, the optimum lies on a boundary line ``a - b = t`` with
``t = +-eps``, and on that line between the two means, where one term of
``F(a) = pi_0 psi(c_0(a)) + pi_1 psi(c_1(a - t))`` decreases and the other increases.

``F`` need not be unimodal (it is a sum of two log-concave bumps), so a local search is not enough.
The search over ``a`` is a branch and bound with rigorous bounds: each ``c_g`` is known exactly at
knots together with its slope; convexity gives a lower bound (the two tangents of the enclosing
cell, and 0) and an upper bound (the chord, achieved by a mixture of two tilts). Because
``psi(affine)`` is convex, the upper bound of ``F`` on a segment is attained at one of at most eight
break points, so each segment gets an exact upper bound; segments whose bound cannot beat the best
achieved value are discarded, the others are split. The loop stops when the best achieved radius
and the smallest radius any segment still allows differ by at most ``atol + rtol * R``; the
certified lower bound is returned with the result (certified up to the floating-point resolution of
the group means: segments a few ulp wide are bounded by their end values).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from fairprobe.radius._data import AuditData
from fairprobe.radius.curves import GroupCurve, KLCurve, make_curve
from fairprobe.radius.divergences import Divergence, get_divergence
from fairprobe.radius.result import RadiusResult

__all__ = ["exact_radius", "line_optimum"]

FloatArray = NDArray[np.float64]


@dataclass
class _Knots:
    """Knots of one group's cost curve in line coordinates (a for group 0, a = b + t for 1).

    Per knot: parameter ``P``, line coordinate ``A``, cost ``C``, slope ``S`` and the tangent in
    anchored form ``S (y - R) + I`` in *group* coordinates ``y = x - shift`` (for KL the
    conjugate form around the support end, exact for any tilt; see ``GroupCurve.tangents``).
    Knots whose mean lies within a few hundred ulp of a support end (but not at it) are dropped:
    their slopes are so large that one ulp of position moves the tangent by more than the
    certificate's tolerance, and the exact end knots bound that stretch instead.
    """

    curve: GroupCurve
    shift: float
    P: FloatArray
    A: FloatArray
    C: FloatArray
    S: FloatArray
    R: FloatArray
    I: FloatArray  # noqa: E741

    @classmethod
    def build(cls, curve: GroupCurve, shift: float, params: FloatArray) -> _Knots:
        e = np.empty(0)
        k = cls(curve, shift, e, e, e, e, e, e)
        k.add(np.unique(params))
        return k

    def _eval(self, params: FloatArray) -> tuple[FloatArray, ...]:
        cv = self.curve
        a, c, s, r, i = cv.eval_with_tangents(params)
        fin = np.isfinite(params)
        res = 256 * np.spacing(max(abs(cv.lo), abs(cv.hi), 1e-300))
        ok = ~fin | ((a - cv.lo > res) & (cv.hi - a > res)) | (params == 0)
        if not isinstance(cv, KLCurve):  # only KL tilts reach the ends with unbounded slope
            ok[:] = True
        return params[ok], a[ok] + self.shift, c[ok], s[ok], r[ok], i[ok]

    def _dedupe(self) -> None:
        order = np.argsort(self.A, kind="stable")
        A = self.A[order]
        keep = np.ones(A.size, dtype=bool)
        keep[1:] = np.diff(A) > 0
        for name in ("P", "A", "C", "S", "R", "I"):
            setattr(self, name, getattr(self, name)[order][keep])

    def add(self, params: FloatArray) -> int:
        if params.size == 0:
            return 0
        before = self.A.size
        new = self._eval(np.asarray(params, dtype=float))
        for name, arr in zip(("P", "A", "C", "S", "R", "I"), new, strict=True):
            setattr(self, name, np.concatenate([getattr(self, name), arr]))
        self._dedupe()
        return self.A.size - before

    def cell(self, z: FloatArray) -> NDArray[np.intp]:
        return np.clip(np.searchsorted(self.A, z, side="right") - 1, 0, max(self.A.size - 2, 0))

    def chord(self, z: FloatArray) -> FloatArray:
        return np.interp(z, self.A, self.C)

    def _y(self, x: FloatArray) -> FloatArray:
        """Group coordinate of line points, clamped into the support (true points lie inside)."""
        return np.clip(x - self.shift, self.curve.lo, self.curve.hi)

    def lower(self, k: NDArray[np.intp], x: FloatArray) -> FloatArray:
        """max(0, tangent at knot k, tangent at knot k+1) at x (x shaped like k or (k, m))."""
        kk = k if x.ndim == 1 else k[:, None]
        y = self._y(x)
        out = np.zeros_like(x)
        for j in (kk, kk + 1):
            s = self.S[j]
            fin = np.isfinite(s)
            with np.errstate(invalid="ignore", over="ignore"):
                t = np.where(fin, self.I[j] + np.where(fin, s, 0.0) * (y - self.R[j]), -np.inf)
            out = np.maximum(out, t)
        return out

    def candidates(self, k: NDArray[np.intp]) -> FloatArray:
        """Break points of the lower bound inside cell k: tangent crossing and zero crossings.

        Computed as offsets from the tangents' anchors (no large intercepts to cancel), then
        mapped to line coordinates.
        """
        s0, s1 = self.S[k], self.S[k + 1]
        r0, r1 = self.R[k], self.R[k + 1]
        i0, i1 = self.I[k], self.I[k + 1]
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            kink = r0 + (i1 - i0 + s1 * (r0 - r1)) / (s0 - s1)
            z0 = r0 - i0 / s0
            z1 = r1 - i1 / s1
        return np.column_stack([kink, z0, z1]) + self.shift

    def interior_param(self, k: NDArray[np.intp], z: FloatArray) -> FloatArray:
        """A parameter strictly inside cell k whose point lies near z (secant in the parameter)."""
        p0, p1 = self.P[k], self.P[k + 1]
        a0, a1 = self.A[k], self.A[k + 1]
        sc = self.curve.scale()
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            sec = p0 + (z - a0) / (a1 - a0) * (p1 - p0)
        mid = 0.5 * (p0 + p1)
        out = np.where(np.isfinite(sec) & (sec > p0) & (sec < p1), sec, mid)
        up = np.isinf(p1) & np.isfinite(p0)
        dn = np.isinf(p0) & np.isfinite(p1)
        with np.errstate(invalid="ignore", over="ignore"):
            out = np.where(up, p0 + np.maximum(np.abs(p0), sc), out)
            out = np.where(dn, p1 - np.maximum(np.abs(p1), sc), out)
        edge = up | dn
        if edge.any():
            # next to a support end the curve can be arbitrarily steep in the parameter:
            # solve for the parameter of the target mean instead of stepping blindly
            tgt = np.clip(z[edge] - self.shift, self.curve.lo, self.curve.hi)
            exact = self.curve.solve(tgt)
            out[edge] = np.where(np.isfinite(exact), exact, out[edge])
        out = np.where(np.isinf(p0) & np.isinf(p1), 0.0, out)
        ok = np.isfinite(out) & (out > p0) & (out < p1)
        return np.where(ok, out, np.nan)


def _initial_params(curve: GroupCurve, lo: float, hi: float, size: int = 9) -> FloatArray:
    pl, ph = curve.solve(np.array([lo, hi]))
    sc = curve.scale()
    fin = [p for p in (pl, ph) if np.isfinite(p)]
    parts = [np.array([pl, ph])]
    if np.isfinite(pl) and np.isfinite(ph):
        parts.append(np.linspace(pl, ph, size))
    else:
        base = fin[0] if fin else 0.0
        steps = sc * 8.0 ** np.arange(-1, 17)
        if ph == np.inf:
            parts.append(base + steps)
        if pl == -np.inf:
            parts.append((base if np.isfinite(ph) and np.isfinite(pl) else (ph if np.isfinite(ph) else base)) - steps)
        if not fin:
            parts.append(np.array([0.0]))
    return np.concatenate(parts)


@dataclass
class LineOptimum:
    """Optimum of the radius problem on the line ``a - b = t``."""

    radius: float
    lower: float
    a: float
    b: float
    param0: float
    param1: float
    c0: float
    c1: float


def line_optimum(
    c0: GroupCurve,
    c1: GroupCurve,
    pi: tuple[float, float],
    t: float,
    div: Divergence,
    *,
    rtol: float = 1e-10,
    atol: float = 1e-13,
    max_rounds: int = 500,
    rest: float = 0.0,
) -> LineOptimum | None:
    """Least divergence of a reweighting with group-mean difference exactly ``t`` (or None).

    ``rest`` is the audit mass of other groups, left untouched within (their cost is 0, so they
    add ``rest * psi(0) = rest`` to ``F``); ``pi`` are then the two groups' absolute masses.
    """
    jl = max(c0.lo, c1.lo + t)
    ju = min(c0.hi, c1.hi + t)
    if jl > ju:
        return None

    def exact_at(a: float, g0: float | None = None, g1: float | None = None) -> LineOptimum:
        gs0 = None if g0 is None else np.array([g0])
        gs1 = None if g1 is None else np.array([g1])
        p0 = float(c0.solve(np.array([a]), guess=gs0)[0]) if not c0.constant else 0.0
        p1 = float(c1.solve(np.array([a - t]), guess=gs1)[0]) if not c1.constant else 0.0
        k0 = float(c0.eval_full(np.array([p0]))[1][0]) if not c0.constant else 0.0
        k1 = float(c1.eval_full(np.array([p1]))[1][0]) if not c1.constant else 0.0
        f = pi[0] * float(div.psi(np.asarray(k0))) + pi[1] * float(div.psi(np.asarray(k1)))
        r = div.total(f + rest)
        return LineOptimum(r, r, a, a - t, p0, p1, k0, k1)

    if c0.constant or c1.constant or ju - jl <= 0.0:
        a = c0.lo if c0.constant else (c1.lo + t if c1.constant else jl)
        if a < jl - 1e-12 * (1 + abs(a)) or a > ju + 1e-12 * (1 + abs(a)):
            return None
        return exact_at(min(max(a, jl), ju))

    m_lo, m_hi = sorted((c0.mean, c1.mean + t))
    L = min(max(m_lo, jl), ju)
    U = min(max(m_hi, jl), ju)
    if U - L <= 1e-15 * (1.0 + abs(L)):
        return exact_at(L)

    k0 = _Knots.build(c0, 0.0, _initial_params(c0, L, U))
    k1 = _Knots.build(c1, t, _initial_params(c1, L - t, U - t))
    psi = div.psi
    best_f = -np.inf
    best_z = L
    ub = np.inf
    for _ in range(max_rounds):
        z = np.concatenate([k0.A, k1.A, [L, U]])
        z = np.unique(z[(z >= L) & (z <= U)])
        f_lb = pi[0] * psi(k0.chord(z)) + pi[1] * psi(k1.chord(z)) + rest
        i = int(np.argmax(f_lb))
        if f_lb[i] > best_f:
            best_f, best_z = float(f_lb[i]), float(z[i])
        zl, zr = z[:-1], z[1:]
        zm = 0.5 * (zl + zr)
        i0, i1 = k0.cell(zm), k1.cell(zm)
        cand = np.column_stack([zl, zr, k0.candidates(i0), k1.candidates(i1)])
        lo_b = zl[:, None]
        hi_b = zr[:, None]
        cand = np.where(np.isfinite(cand), np.clip(cand, lo_b, hi_b), lo_b)
        f_ub = pi[0] * psi(k0.lower(i0, cand)) + pi[1] * psi(k1.lower(i1, cand)) + rest
        seg_ub = f_ub.max(axis=1)
        # Segments at floating-point resolution cannot be split further: bound them by the
        # values at their ends (a is only resolved to a few ulp in any case).
        tiny = (zr - zl) <= 8 * np.spacing(np.maximum(np.abs(zl), np.abs(zr)))
        seg_ub = np.where(tiny, np.maximum(f_lb[:-1], f_lb[1:]), seg_ub)
        # split where the bound is largest (cutting-plane style), kept off the segment ends
        z_arg = cand[np.arange(cand.shape[0]), np.argmax(f_ub, axis=1)]
        wdt = zr - zl
        z_split = np.clip(z_arg, zl + 0.25 * wdt, zr - 0.25 * wdt)
        ub = float(seg_ub.max())
        r_best = div.total(best_f)
        r_lower = div.total(ub)
        if r_best - r_lower <= atol + rtol * r_best:
            break
        open_seg = np.flatnonzero(seg_ub > best_f)
        if open_seg.size > 64:
            open_seg = open_seg[np.argsort(seg_ub[open_seg])[-64:]]
        added = 0
        for kn in (k0, k1):
            newp = kn.interior_param(kn.cell(z_split[open_seg]), z_split[open_seg])
            newp = np.unique(newp[np.isfinite(newp)])
            added += kn.add(newp)
        if added == 0:
            break  # every open cell is at floating-point resolution
    guess = [float(np.interp(best_z, kn.A, np.where(np.isfinite(kn.P), kn.P, np.nan)))
             if isinstance(kn.curve, KLCurve) else None for kn in (k0, k1)]
    opt = exact_at(best_z, *[g if g is not None and np.isfinite(g) else None for g in guess])
    opt.lower = min(div.total(ub), opt.radius)
    return opt


def exact_radius(
    data: AuditData,
    tolerance: float,
    divergence: str = "kl",
    *,
    rtol: float = 1e-10,
    outside: float = 0.0,
) -> RadiusResult:
    """Global minimum of ``d(h)`` over reweightings that flip ``|phi| < eps`` (paper Eq. 5).

    See the module docstring for the method; ``lower_bound`` in the result is certified.
    ``outside`` is the audit mass of other groups that ``data`` (a pair of groups, probabilities
    summing to 1 within the pair) leaves out: they keep their within-group distribution and
    take part only in the mass split (:func:`fairprobe.radius.multigroup`). The returned ``h``
    then covers the pair's points, and ``reweighting["h_outside"]`` is the common ratio of the
    others.
    """
    div = get_divergence(divergence)
    inside = 1.0 - outside
    pm = data.group_mass()
    pi = (pm[0] * inside, pm[1] * inside)
    curves = [make_curve(divergence, *data.group_atoms(k)) for k in (0, 1)]
    phi = curves[0].mean - curves[1].mean
    fair = abs(phi) < tolerance
    base = dict(
        phi=phi, fair=fair, tolerance=tolerance, method="exact", divergence=divergence,
        n=data.n, groups=data.labels,
    )  # fmt: skip
    d_lo = curves[0].lo - curves[1].hi
    d_hi = curves[0].hi - curves[1].lo
    if fair:
        lines = [t for t in (tolerance, -tolerance) if (d_hi >= t if t > 0 else d_lo <= t)]
        why = (
            f"no reweighting can flip the 'fair' assessment: the group-mean difference can only "
            f"range over [{d_lo:.6g}, {d_hi:.6g}], inside the tolerance +-{tolerance:g}"
        )
    else:
        t = math.copysign(tolerance, phi)
        lines = [t] if (d_lo < tolerance and d_hi > -tolerance) else []
        why = (
            f"no reweighting can flip the 'unfair' assessment: the group-mean difference can only "
            f"range over [{d_lo:.6g}, {d_hi:.6g}], never strictly inside +-{tolerance:g}"
        )
    best: tuple[LineOptimum, float] | None = None
    lower = math.inf
    for t in lines:
        opt = line_optimum(curves[0], curves[1], pi, t, div, rtol=rtol, rest=outside)
        if opt is not None:
            lower = min(lower, opt.lower)  # certified for the minimum over both lines
            if best is None or opt.radius < best[0].radius:
                best = (opt, t)
    if best is None:
        return RadiusResult(radius=math.inf, phi_shifted=None, message=why + " (radius infinite)",
                            **base)  # type: ignore[arg-type]
    opt, t = best
    f_tot = pi[0] * float(div.psi(np.asarray(opt.c0))) + pi[1] * float(
        div.psi(np.asarray(opt.c1))
    ) + outside
    q0 = pi[0] * float(div.psi(np.asarray(opt.c0))) / f_tot
    q1 = pi[1] * float(div.psi(np.asarray(opt.c1))) / f_tot
    h = _reweighting(data, curves, (opt.param0, opt.param1), (q0 / pi[0], q1 / pi[1]))
    h_out = 1.0 / f_tot  # psi(0) = 1: the untouched groups all scale by the same ratio
    # the reported radius is the divergence of the reported shift itself (its certificate is
    # ``lower``): both come from the same tilts, so they agree to rounding
    radius_h = div.value(data.probs * inside, h)
    if outside > 0:
        radius_h += div.value(np.array([outside]), np.array([h_out]))
    if math.isfinite(radius_h) and abs(radius_h - opt.radius) <= 1e-9 * (1.0 + opt.radius):
        opt.radius = radius_h
    lower = min(lower, opt.radius)
    summary = {
        "group_mass_before": [pi[0], pi[1]],
        "group_mass_after": [q0, q1],
        "group_mean_before": [curves[0].mean, curves[1].mean],
        "group_mean_after": [opt.a, opt.b],
        "tilt": [opt.param0, opt.param1],
        "tilt_kind": "lambda (exp tilt)" if divergence == "kl" else "beta (clipped linear)",
        "within_group_divergence": [opt.c0, opt.c1],
        "h_min": float(h.min()),
        "h_max": float(h.max()),
    }
    if outside > 0:
        summary["h_outside"] = h_out
        summary["mass_outside"] = outside
    note = "" if fair else "infimum: any shift slightly beyond it gives |phi| < eps"
    return RadiusResult(
        radius=opt.radius, phi_shifted=t, reweighting=summary, lower_bound=lower, message=note,
        h=h, **base,  # type: ignore[arg-type]
    )


def _reweighting(
    data: AuditData,
    curves: list[GroupCurve],
    params: tuple[float, float],
    mass_ratio: tuple[float, float],
) -> FloatArray:
    """Per-point ``h_i = (q_g / pi_g) r_g(m_i)`` from the optimal tilts."""
    h = np.empty(data.n)
    for k in (0, 1):
        sel = data.groups == k
        cv = curves[k]
        r = np.ones(cv.v.size) if cv.constant else cv.ratio(params[k])
        idx = np.clip(np.searchsorted(cv.v, data.values[sel]), 0, cv.v.size - 1)
        h[sel] = mass_ratio[k] * r[idx]
    h[data.probs == 0] = 0.0  # points outside the audit distribution carry no mass
    return h


def flip_curve(
    data: AuditData,
    divergence: str = "kl",
    points: int = 41,
    *,
    rtol: float = 1e-8,
    outside: float = 0.0,
) -> dict[str, list[float | None]]:
    """The least divergence that moves ``phi`` to each target: the radius as a function of eps.

    For targets ``t`` on an even grid over the achievable range of the group-mean difference
    (``phi(P)`` itself included), ``kl[i] = min d(h) s.t. phi(P_h) = t[i]`` from the exact line
    solver. The consistency radius at tolerance eps is the smallest entry with ``|t| >= eps``
    (audit fair) or ``|t| <= eps`` (audit unfair): the lower envelope of the paper's Figure 2.
    ``None`` where no reweighting reaches the target (never inside the range). ``outside``: mass
    of other groups, as in :func:`exact_radius`.
    """
    div = get_divergence(divergence)
    pm = data.group_mass()
    pi = (pm[0] * (1.0 - outside), pm[1] * (1.0 - outside))
    curves = [make_curve(divergence, *data.group_atoms(k)) for k in (0, 1)]
    phi = curves[0].mean - curves[1].mean
    d_lo = curves[0].lo - curves[1].hi
    d_hi = curves[0].hi - curves[1].lo
    grid = np.unique(np.append(np.linspace(d_lo, d_hi, max(int(points), 2)), phi))
    out: list[float | None] = []
    for t in grid:
        opt = line_optimum(curves[0], curves[1], pi, float(t), div, rtol=rtol, atol=1e-12,
                           rest=outside)  # fmt: skip
        out.append(None if opt is None or not math.isfinite(opt.radius) else float(opt.radius))
    return {"phi": [float(x) for x in grid], "divergence": out}
