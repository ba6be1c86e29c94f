"""An anytime-valid fairness monitor over time windows: a betting e-process per pair of groups.

The question a daily job asks is "has the model become unfair?", every day, forever. A test at
level alpha repeated at every look raises a false alarm almost surely over a year (measured in
``experiments/monitor/false_alarms.py``). This monitor's false-alarm probability stays at most
alpha *however many windows are looked at*, because its alarm is the crossing of ``1/alpha`` by
a non-negative supermartingale (Ville's inequality), as in the betting tests of Chugg et al.,
"Auditing fairness by betting" (NeurIPS 2023), built here on window counts.

Model and null (the assumptions of the theorem, also in ``docs/scale.md``)
---------------------------------------------------------------------------
Window ``t`` holds ``n_{g,t}`` rows of group ``g`` (sizes taken as given: they may depend on the
past but not on the decisions of window ``t``); given the sizes, the rows' values (decisions, or
scores in [0, 1]) are independent, with arbitrary per-row means that may change from window to
window. ``p_{g,t}`` is the mean of group ``g``'s rows in window ``t`` (of the rate's denominator:
``y_true = 1`` rows for TPR, ...). The null is that *every* window is fair:

* differences: ``p_{i,t} - p_{j,t} <= eps`` for every ordered pair ``(i, j)`` and window ``t``;
* ratios (DI): ``p_{j,t} >= tau p_{i,t}`` for every ordered pair.

Construction
------------
For an ordered pair and window ``t`` let ``D_t = phat_i - phat_j - eps`` (ratios:
``tau phat_i - phat_j``) and ``sigma_t^2 = 1/(4 n_i) + 1/(4 n_j)`` (ratios: ``tau^2/(4 n_i) +
1/(4 n_j)``). By Hoeffding's lemma ``D_t - E D_t`` is ``sigma_t``-sub-Gaussian, and under the
null ``E D_t <= 0``, so for any ``c >= 0`` fixed before window ``t``,
``e_t = exp(c z_t - c^2 / 2)`` with ``z_t = D_t / sigma_t`` has conditional mean at most 1.
The bet ``c_t`` is the mean of the last ``lookback`` values of ``z`` (plus one pseudo-value
``c0``), clipped to ``[0, c_max]``: it uses past windows only. The wealth is the mixture

``M_t = w1 prod_{u<=t} e_u + (1 - w1) [ sum_{s<=t} pi_s prod_{s<=u<=t} e_u + sum_{s>t} pi_s ]``

with ``pi_s = 1 / (s (s + 1))`` (bets started at every window, so a gap that appears late is
not held back by the evidence of fairness before it). Each term is a test supermartingale, so
``M`` is one, and ``P(sup_t M_t >= 1/alpha') <= alpha'``. With ``m`` ordered pairs (times the
rates of the metric) the monitor alarms when some pair's ``M_t >= m / alpha`` (a union bound):
the probability of any false alarm, over every window ever looked at, is at most ``alpha``.
Windows in which a group has fewer than ``min_group_size`` rows bet nothing for its pairs
(``e_t = 1``), which the sizes alone decide.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from fairprobe import metrics as _metrics
from fairprobe.errors import DataError

__all__ = ["MONITOR_METRICS", "MonitorResult", "log_wealth", "monitor_counts", "pair_z"]

#: metric -> (rates, kind); the rates are (numerator, denominator) of the window sums.
MONITOR_METRICS: dict[str, tuple[tuple[str, ...], str]] = {
    m.name: (m.rates, m.kind) for m in _metrics.METRICS.values()
    if m.kind == "difference" or m.rates == ("selection_rate",)}


def rate_sums(table: Any, rate: str) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.int64]]:
    """Numerator and denominator of ``rate`` per row of a counts table."""
    n = table["n"].to_numpy(dtype=np.int64)
    sp = table["sp"].to_numpy(dtype=np.int64)
    if rate == "selection_rate":
        return sp.astype(float), n
    if rate == "mean_score":
        if "s1" not in table:
            raise DataError("score-gap needs scores: count with a score column (--score-col).")
        return table["s1"].to_numpy(dtype=np.float64), n
    if "st" not in table:
        raise DataError(f"{rate} needs true labels: count with --y-true-col.")
    st = table["st"].to_numpy(dtype=np.int64)
    tp = table["stp"].to_numpy(dtype=np.int64)
    num, den = _metrics.label_rate_counts(
        {"11": tp, "10": sp - tp, "01": st - tp, "00": n - sp - st + tp})[rate]
    return num.astype(float), den


def pair_z(k: npt.NDArray[np.float64], n: npt.NDArray[np.int64], *, kind: str, bound: float,
           min_group_size: int = 1, pairs: npt.NDArray[np.int64] | None = None
           ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.bool_], list[tuple[int, int]]]:
    """Standardised evidence ``z`` of every ordered pair (or of ``pairs``, an ``(P, 2)`` array
    of group indices) in every window.

    ``k, n`` have shape ``(..., T, G)`` (sums and sizes per window and group); returns ``z`` of
    shape ``(..., T, P)``, the mask of windows where the pair bets, and the ``P`` pairs.
    """
    g = n.shape[-1]
    if pairs is None:
        pairs = _ordered_pairs(g, 0, g * (g - 1))
    ii, jj = pairs[:, 0], pairs[:, 1]
    nn = np.asarray(n, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.where(nn > 0, k / np.maximum(nn, 1), 0.0)
    ni, nj = nn[..., ii], nn[..., jj]
    ok = (ni >= max(1, min_group_size)) & (nj >= max(1, min_group_size))
    a = bound if kind == "ratio" else 1.0
    with np.errstate(divide="ignore", invalid="ignore"):
        d = a * p[..., ii] - p[..., jj] - (bound if kind == "difference" else 0.0)
        sigma = np.sqrt(a * a / (4 * ni) + 1 / (4 * nj))
        z = np.where(ok, d / sigma, 0.0)
    return z, ok, [(int(a), int(b)) for a, b in pairs]


def _ordered_pairs(g: int, start: int, stop: int) -> npt.NDArray[np.int64]:
    """Ordered pairs ``start..stop-1`` of ``g`` groups, in the order ``(0,1), (0,2), ...,
    (1,0), (1,2), ...`` (row ``i``, then every ``j != i``), computed from their index."""
    idx = np.arange(start, stop, dtype=np.int64)
    i = idx // (g - 1)
    r = idx % (g - 1)
    j = r + (r >= i)
    return np.stack([i, j], axis=1)


#: Pairs evaluated at once: memory stays bounded whatever the number of groups (1,500 groups
#: have 2.2 million ordered pairs a rate).
_PAIR_CHUNK = 20_000


def log_wealth(z: npt.NDArray[np.float64], ok: npt.NDArray[np.bool_], *, lookback: int = 3,
               c0: float = 1.0, c_max: float = 3.0, w1: float = 0.5
               ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """``log M_t`` (the mixture wealth) and the bets ``c_t``; time is axis ``-2``.

    ``z, ok`` have shape ``(..., T, P)``; windows where ``ok`` is false bet nothing.
    """
    shape = z.shape
    t_len = shape[-2]
    log_m = np.empty(shape, dtype=np.float64)
    bets = np.empty(shape, dtype=np.float64)
    log_w1 = np.zeros(shape[:-2] + shape[-1:])  # plain product from the first window
    log_a = np.full(shape[:-2] + shape[-1:], -np.inf)  # sum over started bets
    hist: list[npt.NDArray[np.float64]] = []
    hist_ok: list[npt.NDArray[np.bool_]] = []
    for t in range(t_len):
        zt, okt = z[..., t, :], ok[..., t, :]
        past = hist[-lookback:]
        past_ok = hist_ok[-lookback:]
        tot = np.full(zt.shape, c0)
        cnt = np.ones(zt.shape)
        for zp, op in zip(past, past_ok, strict=True):
            tot = tot + np.where(op, zp, 0.0)
            cnt = cnt + op
        c = np.clip(tot / cnt, 0.0, c_max)  # predictable: past windows only
        log_e = np.where(okt, c * zt - 0.5 * c * c, 0.0)
        s = t + 1
        log_a = np.logaddexp(log_a, -math.log(s * (s + 1))) + log_e
        log_w1 = log_w1 + log_e
        tail = -math.log(s + 1)  # bets not started yet: sum_{s' > s} pi_s' = 1 / (s + 1)
        log_m[..., t, :] = np.logaddexp(math.log(w1) + log_w1,
                                        math.log(1 - w1) + np.logaddexp(log_a, tail))
        bets[..., t, :] = c
        hist.append(zt)
        hist_ok.append(okt)
    return log_m, bets


@dataclass(frozen=True)
class MonitorResult:
    """The monitor of one metric over the windows looked at, in the order looked at.

    Attributes
    ----------
    metric, kind : str
    bound : float
        Tolerance of differences, floor of ratios.
    alpha : float
        Probability of any false alarm, over every window ever looked at.
    windows : list of str
        Window starts (ISO), in the order the monitor looked at them.
    log_wealth : list of float
        Per window, the largest ``log M_t`` over the pairs.
    log_threshold : float
        ``log(m / alpha)``: the alarm line.
    alarm : str or None
        The first window whose wealth crossed the line (then: unfair, with error <= alpha).
    alarm_pair : list of str
        The pair (and rate) that crossed it.
    family_size : int
        ``m``, the ordered pairs times the rates.
    groups : list of str
    """

    metric: str
    kind: str
    bound: float
    alpha: float
    windows: list[str]
    log_wealth: list[float]
    log_threshold: float
    alarm: str | None
    alarm_pair: list[str] = field(default_factory=list)
    family_size: int = 0
    groups: list[str] = field(default_factory=list)

    @property
    def status(self) -> str:
        """``alarm`` (the model became unfair in some window: the monitor's error is at most
        alpha) or ``no alarm`` (no evidence yet; not a proof of fairness)."""
        return "alarm" if self.alarm is not None else "no alarm"

    def to_dict(self) -> dict[str, Any]:
        return {"metric": self.metric, "kind": self.kind, "bound": self.bound,
                "alpha": self.alpha, "status": self.status, "alarm": self.alarm,
                "alarm_pair": self.alarm_pair, "family_size": self.family_size,
                "log_threshold": self.log_threshold, "windows": self.windows,
                "log_wealth": [round(x, 6) if math.isfinite(x) else None
                               for x in self.log_wealth],
                "groups": self.groups,
                "construction": "betting e-process per ordered pair (Hoeffding sub-Gaussian "
                                "bets, mixture over start windows), union over pairs"}


def monitor_counts(sealed: Any, metric: str, *, alpha: float = 0.05, tolerance: float = 0.05,
                   threshold: float = 0.8, min_group_size: int = 1,
                   order: list[Any] | None = None) -> MonitorResult:
    """The monitor of ``metric`` over the windows of ``sealed`` (a windowed
    :class:`~fairprobe.scale.GroupCounts`), looked at in ``order`` (default: time order)."""
    import pandas as pd

    from fairprobe.scale.counts import WINDOW
    from fairprobe.stats.frame import fairness_metric_name
    from fairprobe.stats.groups import _label

    name = fairness_metric_name(metric, "monitor")
    if sealed.spec.weight is not None:
        raise DataError("the monitor takes unweighted counts: drop --sample-weight-col.")
    if not 0 < alpha < 1:
        raise DataError(f"--alpha must lie in (0, 1); got {alpha}.")
    rates, kind = MONITOR_METRICS[name]
    bound = threshold if kind == "ratio" else tolerance
    tab = sealed.table
    cols = list(sealed.spec.group_cols)
    keys = sorted({tuple(r) for r in tab[cols].itertuples(index=False, name=None)},
                  key=lambda k: tuple(str(x) for x in k))
    labels = [", ".join(_label(v) for v in k) for k in keys]
    pos = {k: i for i, k in enumerate(keys)}
    wins = list(order) if order is not None else sealed.windows()
    widx = {pd.Timestamp(w): i for i, w in enumerate(wins)}
    t_len, g = len(wins), len(keys)
    if t_len == 0 or g < 2:
        return MonitorResult(name, kind, bound, alpha, [], [], math.log(max(1, g * (g - 1))
                                                                         * len(rates) / alpha),
                             None, [], g * (g - 1) * len(rates), labels)
    ti = np.array([widx[pd.Timestamp(w)] for w in tab[WINDOW]])
    gi = np.array([pos[tuple(r)] for r in tab[cols].itertuples(index=False, name=None)])
    n_pairs = g * (g - 1)
    m = n_pairs * len(rates)
    top = np.full(t_len, -np.inf)
    best = np.zeros(t_len, dtype=np.int64)  # index of the pair with the largest wealth
    for ri, r in enumerate(rates):
        k_r, n_r = rate_sums(tab, r)
        k = np.zeros((t_len, g))
        n = np.zeros((t_len, g), dtype=np.int64)
        np.add.at(k, (ti, gi), k_r)
        np.add.at(n, (ti, gi), n_r)
        # the pairs' wealths are independent: a chunk at a time, keeping each window's maximum
        for start in range(0, n_pairs, _PAIR_CHUNK):
            chunk = _ordered_pairs(g, start, min(n_pairs, start + _PAIR_CHUNK))
            z, ok, _ = pair_z(k, n, kind=kind, bound=bound, min_group_size=min_group_size,
                              pairs=chunk)
            log_m, _ = log_wealth(z, ok)
            c_top, c_arg = log_m.max(axis=-1), log_m.argmax(axis=-1)
            upd = c_top > top
            top[upd] = c_top[upd]
            best[upd] = ri * n_pairs + start + c_arg[upd]
    line = math.log(m / alpha)
    crossed = np.flatnonzero(top >= line)
    alarm = alarm_pair = None
    if crossed.size:
        t0 = int(crossed[0])
        alarm = pd.Timestamp(wins[t0]).isoformat()
        ri, pi = divmod(int(best[t0]), n_pairs)
        i, j = _ordered_pairs(g, pi, pi + 1)[0]
        alarm_pair = [labels[int(i)], labels[int(j)], rates[ri]]
    return MonitorResult(name, kind, bound, alpha,
                         [pd.Timestamp(w).isoformat() for w in wins],
                         [float(x) for x in top], line, alarm, alarm_pair or [], m, labels)
