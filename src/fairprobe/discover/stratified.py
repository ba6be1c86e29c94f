r"""Subgroup discovery within strata of legitimate factors (``discover --control-col``).

A subgroup whose rate differs from the rest's only because it holds more rows of a stratum the
decision legitimately depends on (an income band, a credit grade) is not a finding. With control
columns the search compares each subgroup :math:`S` with the rest :math:`R` **within** each
stratum :math:`h` of the controls (binned as :func:`fairprobe.stats.stratified.bin_controls`
bins them for ``audit --control-col``) and combines the strata by the Mantel-Haenszel weights:

.. math::

    \hat\Delta_S = \frac{\sum_h w_h (\hat p_{Sh} - \hat p_{Rh})}{\sum_h w_h}, \qquad
    w_h = \frac{n_{Sh} n_{Rh}}{n_{Sh} + n_{Rh}},

over the strata where both sides have a row in the rate's denominator (a stratum the subgroup
fills, or never enters, says nothing about it: a subgroup defined by a control itself has no
comparable stratum and is not tested).

Test. :math:`\hat\Delta_S` is a sum of independent bounded terms, one per row: a row of
:math:`S` in stratum :math:`h` adds its 0/1 outcome times :math:`c_{Sh} = w_h / (W n_{Sh})`,
one of :math:`R` subtracts it times :math:`c_{Rh} = w_h / (W n_{Rh})` (:math:`W = \sum_h w_h`).
Given the features and controls (which fix the design, never the outcomes), Hoeffding's
inequality bounds each side, :math:`P(\hat\Delta_S - \Delta_S \ge t) \le
\exp(-2 t^2 / V_S)` with :math:`V_S = \sum_h (w_h / W)^2 (1 / n_{Sh} + 1 / n_{Rh})`, where
:math:`\Delta_S = E \hat\Delta_S` is the weighted within-stratum gap. The p-value of the
subgroup's null :math:`|\Delta_S| \le \tau` is

.. math::

    p_S = \min\{1,\; 2 \exp(-2 (|\hat\Delta_S| - \tau)_+^2 / V_S)\},

valid at every sample size (conservative: Hoeffding ignores the rates' variance), and the
interval matching it at level :math:`1 - a` is :math:`\hat\Delta_S \pm \sqrt{V_S \log(2/a)/2}`.
The p-values enter the same step-down or step-up procedure as the unconditioned search
(:func:`fairprobe.discover.fdr.step_up`), so the false-discovery guarantee is the same.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from fairprobe.errors import DataError

__all__ = ["StratifiedCounts", "decide_stratified", "hoeffding_pvalues",
           "stratified_subgroup_counts"]

STRATUM = "__fairprobe_stratum__"


class StratifiedCounts:
    """Per subgroup: conditions, rows, the MH-weighted within-stratum gap and its Hoeffding
    variance proxy, the comparable denominators, and the unadjusted gap for comparison."""

    def __init__(self, keys: tuple[Any, ...], size: np.ndarray, n_comp: np.ndarray,
                 nr_comp: np.ndarray, est: np.ndarray, var: np.ndarray, rate: np.ndarray,
                 rate_rest_std: np.ndarray, unadjusted: np.ndarray, rows: int,
                 strata: int) -> None:
        self.keys, self.size, self.n_comp, self.nr_comp = keys, size, n_comp, nr_comp
        self.est, self.var, self.rate, self.rate_rest_std = est, var, rate, rate_rest_std
        self.unadjusted, self.rows, self.strata = unadjusted, rows, strata


def stratified_subgroup_counts(
    frame: pd.DataFrame, sets: Sequence[tuple[str, ...]], metric: str,
    edges: dict[str, list[float]], strata: pd.Series, *, y_pred: str, y_true: str | None,
    pos_label: Any, engine: str,
) -> StratifiedCounts:
    """Count every subgroup of every feature combination within every stratum (one groupby
    per combination, never per subgroup) and combine the strata by their MH weights."""
    from fairprobe.discover.search import _condition, _rate_counts
    from fairprobe.scale.counts import CountSpec
    from fairprobe.scale.engine import count

    codes = pd.Series(strata.cat.codes.to_numpy(dtype=np.int64), index=frame.index)
    data = frame.assign(**{STRATUM: codes})
    n_strata = len(strata.cat.categories)
    tot = count(data, CountSpec(group_cols=(STRATUM,), y_pred=y_pred, y_true=y_true,
                                pos_label=pos_label), engine=engine).table
    kt, nt = (np.zeros(n_strata), np.zeros(n_strata))
    tk, tn = _rate_counts(tot, metric)
    si = tot[STRATUM].to_numpy(dtype=np.int64)
    kt[si], nt[si] = tk, tn
    rows_t = np.zeros(n_strata)
    rows_t[si] = tot["n"].to_numpy()
    keys: list[Any] = []
    parts: dict[str, list[np.ndarray]] = {x: [] for x in (
        "size", "n", "nr", "num", "v", "w", "rk", "ks", "ns")}
    for s in sets:
        t = count(data, CountSpec(group_cols=(*s, STRATUM), y_pred=y_pred, y_true=y_true,
                                  pos_label=pos_label), engine=engine).table
        combo = pd.MultiIndex.from_frame(t[list(s)]) if len(s) > 1 else pd.Index(t[s[0]])
        g, uniq = pd.factorize(combo, sort=False)
        h = t[STRATUM].to_numpy(dtype=np.int64)
        k, n = (np.asarray(x, dtype=np.float64) for x in _rate_counts(t, metric))
        kr, nr = kt[h] - k, nt[h] - n
        ok = (n > 0) & (nr > 0)
        with np.errstate(divide="ignore", invalid="ignore"):
            w = np.where(ok, n * nr / (n + nr), 0.0)
            d = np.where(ok, k / np.where(ok, n, 1.0) - kr / np.where(ok, nr, 1.0), 0.0)
            v = np.where(ok, w**2 * (1.0 / np.where(ok, n, 1.0) + 1.0 / np.where(ok, nr, 1.0)),
                         0.0)
        m = len(uniq)

        def tot_by(x: np.ndarray, g: np.ndarray = g, m: int = m) -> np.ndarray:
            return np.bincount(g, weights=x, minlength=m)

        parts["size"].append(tot_by(t["n"].to_numpy(dtype=np.float64)))
        parts["n"].append(tot_by(np.where(ok, n, 0.0)))
        parts["nr"].append(tot_by(np.where(ok, nr, 0.0)))
        parts["num"].append(tot_by(w * d))
        parts["v"].append(tot_by(v))
        parts["w"].append(tot_by(w))  # the weights' sum W
        parts["rk"].append(tot_by(np.where(ok, k, 0.0)))
        parts["ks"].append(tot_by(k))
        parts["ns"].append(tot_by(n))
        values = list(uniq) if len(s) > 1 else [(u,) for u in uniq]
        keys.extend(tuple(_condition(c, x, edges) for c, x in zip(s, combo_, strict=True))
                    for combo_ in values)
    cat = {x: np.concatenate(v) for x, v in parts.items()}
    big_w = cat["w"]
    with np.errstate(divide="ignore", invalid="ignore"):
        est = np.where(big_w > 0, cat["num"] / big_w, np.nan)
        var = np.where(big_w > 0, cat["v"] / big_w**2, np.nan)
        rate_c = np.where(cat["n"] > 0, cat["rk"] / cat["n"], np.nan)
        rate = cat["ks"] / cat["ns"]
        unadj = rate - (kt.sum() - cat["ks"]) / (nt.sum() - cat["ns"])
    return StratifiedCounts(tuple(keys), cat["size"].round().astype(np.int64),
                            cat["n"].round(), cat["nr"].round(), est, var, rate,
                            rate_c - est, unadj, int(rows_t.sum()), n_strata)


def hoeffding_pvalues(est: np.ndarray, var: np.ndarray, tolerance: float) -> np.ndarray:
    """``min(1, 2 exp(-2 (|est| - tolerance)_+^2 / var))`` (module docstring); 1 where the
    gap is undefined."""
    excess = np.maximum(np.abs(est) - tolerance, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.minimum(1.0, 2.0 * np.exp(-2.0 * excess**2 / var))
    return np.where(np.isfinite(p) & (var > 0), p, 1.0)


def decide_stratified(counts: StratifiedCounts, *, metric: str, fdr: float, tolerance: float,
                      method: str, min_size: int, depth: int, features: tuple[str, ...],
                      bins: dict[str, list[float]], control: dict[str, Any]) -> Any:
    """Test every subgroup's within-stratum gap and keep those ``method`` rejects at ``fdr``."""
    from fairprobe.discover.search import DiscoveryResult, Subgroup, run_procedure

    tested = (counts.n_comp >= min_size) & (counts.nr_comp >= min_size) & (counts.var > 0)
    if not tested.any() and len(counts.keys):
        control = {**control, "note": "no subgroup has min_size rows on both sides of a common "
                                      "stratum: every subgroup is explained by the controls "
                                      "or too small"}
    p = np.ones(len(counts.keys))
    p[tested] = hoeffding_pvalues(counts.est[tested], counts.var[tested], tolerance)
    reject, adjusted, m, a = run_procedure(p, tested, fdr, method)
    idx = np.flatnonzero(reject)
    half = np.sqrt(counts.var[idx] * np.log(2.0 / a) / 2.0)
    lo, hi = counts.est[idx] - half, counts.est[idx] + half
    order = idx[np.argsort(-np.abs(counts.est[idx]), kind="stable")]
    pos = {int(i): j for j, i in enumerate(idx)}
    subs = tuple(
        Subgroup(conditions=counts.keys[i], size=int(counts.size[i]),
                 denominator=int(counts.n_comp[i]), rate=float(counts.rate[i]),
                 rate_rest=float(counts.rate_rest_std[i]), estimate=float(counts.est[i]),
                 interval=(float(lo[pos[i]]), float(hi[pos[i]])), p_value=float(p[i]),
                 adjusted_p=float(adjusted[i]), verdict="unfair",
                 unadjusted=float(counts.unadjusted[i]))
        for i in (int(x) for x in order))
    return DiscoveryResult(subgroups=subs, metric=metric, tolerance=float(tolerance),
                           fdr=float(fdr), method=method, depth=int(depth), features=features,
                           tested=m, too_small=int((~tested).sum()), rows=counts.rows,
                           level=float(1.0 - a), bins=dict(bins), pvalue="stratified-hoeffding",
                           control={**control, "strata": counts.strata})


def check_controls(features: Sequence[str], controls: Sequence[str]) -> tuple[str, ...]:
    """The control columns, refused where they are also features (a legitimate factor is a
    control, not a finding)."""
    ctl = tuple(dict.fromkeys(str(c) for c in controls))
    both = [c for c in ctl if c in features]
    if both:
        raise DataError(f"--control-col {both[0]!r} is also in --features: a legitimate factor "
                        "is controlled for, not searched; drop it from --features.")
    return ctl
