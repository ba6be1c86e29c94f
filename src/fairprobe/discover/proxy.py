r"""Subgroup discovery when race is not recorded: ``fairprobe discover --proxy bisg|bifsg``.

For every slice :math:`S` of the searched features (the subgroups of
:func:`fairprobe.discover.search.slice_rows`: up to ``depth`` conditions, at least ``min_size``
rows) and every compared race :math:`a` against the reference :math:`b`, the target is the race
gap within the slice, :math:`\mu_a(S) - \mu_b(S)` with :math:`\mu_r(S) = P(Y = 1 \mid R = r,
X \in S)`. Race is estimated by BISG/BIFSG (:func:`fairprobe.bisg.job.proxy_probabilities`)
and each slice is audited by :func:`fairprobe.bisg.estimate.proxy_audit` on its own rows: the
Kallus-Mao-Zhou bounds with their finite-sample (empirical-Bernstein) interval, valid when the
proxy is calibrated **within the slice**, :math:`P(R = r \mid Z, X \in S) = q_r(Z)`. That holds
for every slice when the searched features carry no information about race beyond surname and
place (:math:`R \perp X \mid Z`: features of the place, or of the application, not of the
applicant's race); it is the condition the result states.

**The family.** With :math:`m` slices tested and :math:`G` compared races, every slice's
bounds are computed at level :math:`1 - q/m`, which :func:`~fairprobe.bisg.estimate.proxy_audit`
splits over its :math:`G` comparisons (Bonferroni), so each of the :math:`mG` intervals has
level :math:`1 - q/(mG)` and, by the union bound, **all of them cover their gaps at once with
probability at least** :math:`1 - q` (under calibration in every slice). A slice-race pair is
reported *unfair* only when its whole interval lies outside the band :math:`[-\tau, \tau]`. A
false report (a pair whose true gap is in the band) needs that pair's interval to miss its gap,
so the family-wise error of the list is at most :math:`q`, and so is its false-discovery rate
(the false share is 0 without a false report and never above 1). No independence between
slices is needed: they overlap.

Holm's step-down would test the slices left after :math:`r` reports at :math:`q/(m - r)`: with
hundreds of slices and a handful of reports that changes each level by under a few per cent,
and it would give up the simultaneous coverage of every printed interval, so the intervals are
Bonferroni's.

**Adjusted p-values** (what a report's headline recomputes at its own share of the error). The
bounds interval at level :math:`1 - \alpha` widens as :math:`\alpha` falls (the cross-fitting
branches and the coarsenings do not depend on :math:`\alpha`; every empirical-Bernstein width
grows with :math:`\log(1/\alpha)`), so the smallest :math:`\alpha` at which the interval at
:math:`1 - \alpha` lies outside the band, :math:`p`, satisfies :math:`P(p \le \alpha) \le \alpha`
for a pair in the band. It is found by bisection over :math:`\log \alpha` (the upper end of the
bracket is kept: the p-value errs upwards), and :math:`\min(1, mG\,p)` is its Bonferroni
adjustment: the list at a level :math:`q' < q` is the pairs whose adjusted p-value is at most
:math:`q'` (up to the bisection's step, on the safe side).

The weighted estimate of every reported pair (:func:`~fairprobe.bisg.estimate.weighted_rates`)
is shown with its assumption and never decides.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from fairprobe import metrics as _metrics
from fairprobe.errors import InvalidParameterError

__all__ = ["PROXY_SLICE_CONDITION", "ProxyOptions", "discover_by_proxy", "proxy_text"]

#: The condition every slice's bounds rest on, as the headline states it.
PROXY_SLICE_CONDITION = ("the BISG probabilities are calibrated within every slice searched, "
                         "P(race | surname, place, slice) = q (the searched features carry no "
                         "information about race beyond surname and place)")

#: Steps of the p-value's bisection over log(alpha), and its smallest alpha.
_BISECT_STEPS = 10
_ALPHA_FLOOR = 1e-12


@dataclass(frozen=True)
class ProxyOptions:
    """The race proxy of ``discover --proxy``: which one, the columns it reads (never searched,
    never sent to a model), the races compared and the two ways the bounds are tightened, as
    ``audit --predictions --proxy`` has them: ``strata_cols`` (``--proxy-strata``), columns the
    decisions may depend on, within whose cells the bounds are computed, and ``race_in_bounds``
    (``--race-in-bounds``), the rows with a recorded race entering the bounds as known races
    (:func:`~fairprobe.bisg.job.recorded_in_bounds`, under
    :data:`~fairprobe.bisg.job.IN_BOUNDS_ASSUMPTION`). Checked once, naming the flag."""

    method: str
    surname_col: str | None
    zip_col: str | None = None
    tract_col: str | None = None
    first_name_col: str | None = None
    race_col: str | None = None
    groups: tuple[str, ...] = ("black", "hispanic", "api")
    reference: str = "white"
    strata_cols: tuple[str, ...] = ()
    race_in_bounds: bool = False

    def __post_init__(self) -> None:
        from fairprobe.bisg.estimate import check_races

        if self.method not in ("bisg", "bifsg"):
            raise InvalidParameterError(f"--proxy must be bisg or bifsg; got {self.method!r}.")
        if self.surname_col is None:
            raise InvalidParameterError("--proxy needs --surname-col, the column of family "
                                        "names.")
        if self.method == "bifsg" and self.first_name_col is None:
            raise InvalidParameterError("--proxy bifsg needs --first-name-col (or use --proxy "
                                        "bisg).")
        if self.method == "bisg" and self.first_name_col is not None:
            raise InvalidParameterError("--first-name-col is used by --proxy bifsg: give that.")
        check_races(self.groups, self.reference)
        if self.race_in_bounds and self.race_col is None:
            raise InvalidParameterError("--race-in-bounds puts recorded races into the bounds: "
                                        "give --race-col.")

    @property
    def private(self) -> dict[str, str]:
        """The columns the proxy reads, each with its flag."""
        from fairprobe.bisg.job import proxy_columns

        return proxy_columns(self.surname_col, self.zip_col, self.tract_col,
                             self.first_name_col, self.race_col)


def _pair_pvalue(y: npt.NDArray[np.float64], q: npt.NDArray[np.float64], group: str,
                 reference: str, alpha_hi: float, audit: Any) -> float:
    """The smallest per-pair error :math:`\\alpha \\le` ``alpha_hi`` (up to the bisection's
    step) at which the pair's bounds still lie outside the band (module docstring)."""
    def outside(alpha: float) -> bool:
        f = audit(y, q, groups=(group,), confidence_level=1.0 - alpha).comparisons[0].finding
        return bool(f.verdict == "unfair")

    lo, hi = math.log(_ALPHA_FLOOR), math.log(alpha_hi)
    if outside(_ALPHA_FLOOR):
        return _ALPHA_FLOOR
    for _ in range(_BISECT_STEPS):
        mid = 0.5 * (lo + hi)
        if outside(math.exp(mid)):
            hi = mid
        else:
            lo = mid
    return math.exp(hi)


def discover_by_proxy(
    data: Any, *, y_pred: str, features: Sequence[str], proxy: ProxyOptions, depth: int = 2,
    fdr: float = 0.1, tolerance: float = 0.05, bins: int = 4, min_size: int = 30,
    pos_label: Any = None, seed: int = 0,
) -> Any:
    """Search the slices of ``features`` for race gaps in approval rate beyond ``tolerance``,
    race estimated by ``proxy`` (module docstring for the test).

    Parameters
    ----------
    data : DataFrame, or a path, directory or glob of Parquet / CSV files
        One row per decision: ``y_pred``, the ``features`` and the proxy's columns.
    proxy : ProxyOptions
        The proxy, its columns, the races compared (each of ``groups`` with ``reference``
        within every slice) and, with ``race_col``, the recorded races its calibration is
        checked on.
    fdr : float
        The family-wise error of the list (which bounds its false-discovery rate).
    seed : int
        Seed of the bounds' cross-fitting split.

    Returns
    -------
    DiscoveryResult
        With ``proxy`` set (method, match rates, assumptions, guarantee) and one
        :class:`~fairprobe.discover.search.Subgroup` per reported slice and race pair.
    """
    from fairprobe.bisg.estimate import BISG_CONDITION, WEIGHTED_ASSUMPTION, proxy_audit
    from fairprobe.bisg.job import (
        IN_BOUNDS_ASSUMPTION,
        proxy_probabilities,
        strata_codes,
        with_recorded,
    )
    from fairprobe.discover.search import (
        DiscoveryResult,
        Subgroup,
        _bin,
        _read,
        check_search,
        slice_rows,
    )
    from fairprobe.stats.frame import _binary_labels

    feats = check_search(features, depth=depth, bins=bins, min_size=min_size, fdr=fdr,
                         tolerance=tolerance)
    groups, reference, private = proxy.groups, proxy.reference, proxy.private
    clash = [c for c in (y_pred, *private) if c in feats]
    if clash:
        raise InvalidParameterError(f"--features names {clash[0]!r}, a decision, name or place "
                                    "column: search features the slices are defined by instead.")
    strata = [c for c in proxy.strata_cols if c not in private]
    frame = _read(data, feats, y_pred, None, extra=[*private, *strata],
                  flags={**private, **{c: "--proxy-strata" for c in strata}})
    assert proxy.surname_col is not None
    pp, match = proxy_probabilities(frame, surname_col=proxy.surname_col, zip_col=proxy.zip_col,
                                    tract_col=proxy.tract_col,
                                    first_name_col=proxy.first_name_col)
    used = pp.used
    # the proxy checked where race is recorded, and tightened, by audit --proxy's rule
    q, cells, validation, _ = with_recorded(
        pp, None if proxy.race_col is None else frame[proxy.race_col], race_col=proxy.race_col,
        races=(*groups, reference),
        cells=strata_codes(frame, proxy.strata_cols)[used] if proxy.strata_cols else None,
        race_in_bounds=proxy.race_in_bounds)
    y = _binary_labels(frame[y_pred].to_numpy(), f"--y-pred-col {y_pred}",
                       pos_label).astype(np.float64)[used]
    binned, edges = _bin(frame.loc[used, list(feats)].reset_index(drop=True), feats, bins)
    every = slice_rows(binned, feats, depth, edges)
    tested = [(c, rows) for c, rows in every if rows.size >= max(min_size, 2)]
    m, n_groups = max(len(tested), 1), len(groups)
    alpha_pair = fdr / (m * n_groups)

    found: list[Any] = []
    for conds, rows in tested:
        ys, qs = y[rows], q[rows]
        # the slice's own cells, dense (the bounds' menu of coarsenings counts them)
        cs = None if cells is None else np.unique(cells[rows], return_inverse=True)[1]

        def audit(yy: Any, qq: Any, cs: Any = cs, **kw: Any) -> Any:
            return proxy_audit(yy, qq, **{"groups": tuple(groups), "reference": reference,
                                          "tolerance": tolerance, "seed": seed, "birdie": False,
                                          "method": pp.method, "strata": cs, **kw})

        res = audit(ys, qs, confidence_level=1.0 - fdr / m)
        for c in res.comparisons:
            f, w = c.finding, c.weighted
            if f.verdict != "unfair":
                continue
            p = _pair_pvalue(ys, qs, c.group, reference, alpha_pair, audit)
            info = {"group": c.group, "reference": reference,
                    "bounds": {k: c.bounds[k] for k in ("low", "high", "level", "region")},
                    "weighted": {"estimate": w.estimate, "low": w.low, "high": w.high,
                                 "level": w.confidence_level, "coverage": "asymptotic",
                                 "assumption": WEIGHTED_ASSUMPTION}}
            found.append(Subgroup(
                conditions=conds, size=int(rows.size), denominator=int(rows.size),
                rate=float("nan"), rate_rest=float("nan"), estimate=float(f.estimate),
                interval=(float(f.low), float(f.high)), p_value=p,
                adjusted_p=min(1.0, p * m * n_groups), verdict="unfair", proxy=info))
    found.sort(key=lambda s: -abs(s.estimate))
    block = {
        "method": pp.method, "groups": list(groups), "reference": reference, "match": match,
        "comparisons": len(tested) * n_groups, "condition": PROXY_SLICE_CONDITION,
        "guarantee": (f"Bonferroni over {len(tested)} slices x {n_groups} races: every "
                      "printed interval covers its gap at once with probability at least "
                      f"{1 - fdr:g} if the proxy is calibrated within every slice, so the "
                      "family-wise error (which bounds the FDR) is at most the level"),
        "assumptions": {"bounds": f"{BISG_CONDITION}, within every slice searched" + (
                            f" (within the cells of {', '.join(proxy.strata_cols)} too)"
                            if proxy.strata_cols else ""),
                        "slices": PROXY_SLICE_CONDITION, "weighted": WEIGHTED_ASSUMPTION,
                        **({"in_bounds": IN_BOUNDS_ASSUMPTION} if proxy.race_in_bounds
                           else {})},
        "strata": list(proxy.strata_cols),
        **({"validation": validation} if validation is not None else {}),
    }
    return DiscoveryResult(
        subgroups=tuple(found), metric=_metrics.DP.short, tolerance=float(tolerance),
        fdr=float(fdr), method="bonferroni", depth=int(depth), features=feats,
        tested=len(tested), too_small=len(every) - len(tested), rows=int(len(frame)),
        level=1.0 - alpha_pair, bins=edges, pvalue="bisg-bounds", proxy=block)


def proxy_text(res: Any) -> str:
    """The terminal view of a discovery by proxied race (``str`` of its result; the command
    adds the match rates, as the report words them)."""
    px = res.proxy
    pairs = ", ".join(f"{g} - {px['reference']}" for g in px["groups"])
    lines = [
        f"{len(res.subgroups)} slice x race gaps of {px['comparisons']} ({res.tested} slices, "
        f"depth <= {res.depth}, {len(res.features)} features; {pairs}) differ by more than "
        f"{res.tolerance:g} in approval rate on the {str(px['method']).upper()} bounds, "
        f"family-wise error at most {res.fdr:g} ({px['guarantee']})",
    ]
    for s in res.subgroups[:20]:
        b, w = s.proxy["bounds"], s.proxy["weighted"]
        lines.append(f"  bounds [{b['low']:+.4f}, {b['high']:+.4f}] at {b['level']:.6g}  "
                     f"weighted {w['estimate']:+.4f}  n={s.size}  {s}  "
                     f"(adjusted p {s.adjusted_p:.2g})")
    if len(res.subgroups) > 20:
        lines.append(f"  ... {len(res.subgroups) - 20} more in the JSON")
    lines.append(f"bounds: hold if {px['condition']}")
    if "in_bounds" in px["assumptions"]:
        lines.append(f"recorded races in the bounds: hold if {px['assumptions']['in_bounds']}")
    lines.append(f"weighted: {px['assumptions']['weighted']} (shown, not counted)")
    return "\n".join(lines)
