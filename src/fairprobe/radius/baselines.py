"""The two comparison methods of the paper (Section 5.1): Greedy-Search and Worst-Group.

Both return the divergence of a flipping shift they construct, so they bound the radius from
above; neither minimises the divergence, which is why they overestimate it (paper Sec. 5.2-5.3).

* **Greedy-Search** starts from ``h = 1`` and follows the gradient of ``phi(P_h)`` (in the
  P-weighted metric, projected onto ``E_P[h] = 1``, ``h >= 0``) upwards in ``|phi|`` when the audit
  is fair and downwards when it is unfair, with steps of ``step`` (largest change of any h_i) until
  the assessment flips; the crossing inside the last step is located by bisection.
* **Worst-Group** splits each group into subgroups (``subgroups`` labels; default: the distinct
  values when a group has at most 10, else value quintiles), ranks them by their contribution to
  the gap, ``(mass_S / mass_g) (mean_S - mean_g)`` signed by the group, and rescales the weight of
  the top-ranked subgroup that can flip the assessment until ``|phi| = eps`` (bisection on the log
  scale factor).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from fairprobe._validation import check_int, check_real
from fairprobe.radius._data import AuditData
from fairprobe.radius.api import register_method
from fairprobe.radius.core import _phi_atoms
from fairprobe.radius.divergences import get_divergence
from fairprobe.radius.result import RadiusResult

__all__ = ["greedy_radius", "worst_group_radius"]

FloatArray = NDArray[np.float64]


def _base(data: AuditData, tolerance: float, divergence: str, method: str) -> dict[str, Any]:
    phi0 = data.phi()
    return dict(phi=phi0, fair=abs(phi0) < tolerance, tolerance=tolerance, method=method,
                divergence=divergence, n=data.n, groups=data.labels)  # fmt: skip


def _finish(data: AuditData, base: dict[str, Any], h_atoms: FloatArray | None, divergence: str,
            extra: dict[str, Any], fail: str) -> RadiusResult:
    if h_atoms is None:
        return RadiusResult(radius=math.inf, phi_shifted=None, message=fail, **base)
    h = h_atoms[data.atom_of]
    radius = get_divergence(divergence).value(data.probs, h)
    extra = {**extra, "h_min": float(h.min()), "h_max": float(h.max())}
    return RadiusResult(radius=radius, phi_shifted=_phi_atoms(data, h_atoms), h=h,
                        reweighting=extra,
                        message=f"{base['method']} estimate (upper bound on the exact radius)",
                        **base)


def _flipped(x: float, tolerance: float, fair: bool) -> bool:
    if math.isnan(x):
        return False
    return abs(x) >= tolerance if fair else abs(x) < tolerance


@register_method("greedy")
def greedy_radius(
    data: AuditData, tolerance: float, divergence: str = "kl", *, step: float = 0.01,
    max_steps: int = 20_000, **_opts: Any,
) -> RadiusResult:
    """Greedy-Search baseline (see module docstring)."""
    step = check_real(step, "step", "greedy_radius", lo=0.0, closed="neither")
    max_steps = check_int(max_steps, "max_steps", "greedy_radius", lo=1)
    base = _base(data, tolerance, divergence, "greedy")
    fair = base["fair"]
    p, g, v = data.atom_probs, data.atom_groups, data.atom_values
    sign = math.copysign(1.0, base["phi"]) if base["phi"] != 0 else 1.0
    direction = sign if fair else -sign
    h = np.ones_like(p)
    prev = h
    found = None
    for it in range(max_steps):
        q = p * h
        s0, s1 = q[g == 0].sum(), q[g == 1].sum()
        if s0 <= 0 or s1 <= 0:
            break
        mu0 = q[g == 0] @ v[g == 0] / s0
        mu1 = q[g == 1] @ v[g == 1] / s1
        # natural gradient of phi in the P-metric: d phi / d h_i divided by p_i
        grad = np.where(g == 0, (v - mu0) / s0, -(v - mu1) / s1)
        grad = grad - float(p @ grad)  # keep E_P[h] = 1
        grad[(h <= 0) & (direction * grad < 0)] = 0.0
        top = float(np.max(np.abs(grad)))
        if top <= 1e-15:
            break
        prev = h
        h = np.maximum(h + direction * step * grad / top, 0.0)
        h = h / float(p @ h)
        if _flipped(_phi_atoms(data, h), tolerance, fair):
            found = it
            break
    if found is None:
        return _finish(data, base, None, divergence, {},
                       "Greedy-Search found no flipping shift (gradient path stalled)")
    lo, hi = 0.0, 1.0  # bisection on the last step: lo not flipped, hi flipped
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        hm = (1 - mid) * prev + mid * h
        if _flipped(_phi_atoms(data, hm), tolerance, fair):
            hi = mid
        else:
            lo = mid
    hf = (1 - hi) * prev + hi * h
    return _finish(data, base, hf, divergence, {"steps": found + 1, "step": step}, "")


def _default_subgroups(data: AuditData) -> NDArray[np.intp]:
    sub = np.zeros(data.atom_values.size, dtype=np.intp)
    for k in (0, 1):
        sel = data.atom_groups == k
        v = data.atom_values[sel]
        u = np.unique(v)
        if u.size <= 10:
            sub[sel] = np.searchsorted(u, v)
        else:
            qs = np.quantile(data.values[data.groups == k], [0.2, 0.4, 0.6, 0.8])
            sub[sel] = np.searchsorted(qs, v, side="right")
    return sub


@register_method("worst-group")
def worst_group_radius(
    data: AuditData, tolerance: float, divergence: str = "kl", **_opts: Any
) -> RadiusResult:
    """Worst-Group baseline (see module docstring)."""
    base = _base(data, tolerance, divergence, "worst-group")
    fair = base["fair"]
    p, g, v = data.atom_probs, data.atom_groups, data.atom_values
    sub = data.atom_subgroups if data.atom_subgroups is not None else _default_subgroups(data)
    phi0 = base["phi"]
    pi = data.group_mass()
    mu = [float(p[g == k] @ v[g == k] / pi[k]) for k in (0, 1)]
    cells = []
    for k in (0, 1):
        for s in np.unique(sub[g == k]):
            sel = (g == k) & (sub == s)
            mass = float(p[sel].sum())
            if mass <= 0 or mass >= pi[k] * (1 - 1e-12):
                continue  # rescaling a whole group leaves phi unchanged
            mean = float(p[sel] @ v[sel] / mass)
            contrib = (mass / pi[k]) * (mean - mu[k]) * (1 if k == 0 else -1)
            cells.append((abs(contrib), k, int(s), sel))
    cells.sort(key=lambda c: -c[0])

    def scaled(sel: NDArray[np.bool_], logc: float) -> FloatArray:
        h = np.where(sel, math.exp(logc), 1.0)
        return h / float(p @ h)

    for _, _k, s, sel in cells:
        for end in (30.0, -30.0):  # up-weight, then down-weight the subgroup
            if not _flipped(_phi_atoms(data, scaled(sel, end)), tolerance, fair):
                continue
            lo, hi = 0.0, end  # lo: not flipped (h = 1), hi: flipped
            for _ in range(80):
                mid = 0.5 * (lo + hi)
                if _flipped(_phi_atoms(data, scaled(sel, mid)), tolerance, fair):
                    hi = mid
                else:
                    lo = mid
            return _finish(data, base, scaled(sel, hi), divergence,
                           {"subgroup": s, "group": data.labels[_k], "scale": math.exp(hi)}, "")
    del phi0
    return _finish(data, base, None, divergence, {},
                   "Worst-Group found no subgroup whose reweighting flips the assessment")
