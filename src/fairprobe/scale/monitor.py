"""An anytime-valid fairness monitor over time windows: a betting e-process and a per-window
test per pair of groups, valid together.

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

Construction (``monitor_counts``)
---------------------------------
For an unordered pair ``{i, j}`` and window ``t`` let ``z_t^+ = D_t^{ij} / sigma_t^{ij}`` and
``z_t^- = D_t^{ji} / sigma_t^{ji}`` with ``D_t^{ij} = phat_i - phat_j - eps`` (ratios: ``tau
phat_i - phat_j``) and ``(sigma_t^{ij})^2 = 1/(4 n_i) + 1/(4 n_j)`` (ratios: ``tau^2/(4 n_i) +
1/(4 n_j)``). By Hoeffding's lemma ``D_t - E D_t`` is ``sigma_t``-sub-Gaussian, and under the
pair's null *both* ``E D_t^{ij} <= 0`` and ``E D_t^{ji} <= 0``.

* **Cumulative e-process** (:func:`signed_log_wealth`). Each window bets on one direction,
  the one with the larger mean ``z`` over the last ``lookback = 5`` windows (windows before the
  first count as ``c0 = 1``), with stake ``c_t`` = that mean minus ``0.25``, clipped to ``[0,
  3]``: past windows only. ``e_t = exp(c_t z_t - c_t^2 / 2)`` of the chosen direction has
  conditional mean at most 1 under the pair's null whichever direction was chosen, so one
  process covers both orders of the pair and the family is the ``G (G - 1) / 2`` unordered
  pairs (times the rates), not the ``G (G - 1)`` ordered ones. The wealth is the mixture
  ``M_t = w1 prod_{u<=t} e_u + (1 - w1) [sum_{s<=t} pi_s prod_{s<=u<=t} e_u + sum_{s>t} pi_s]``
  with ``w1 = 0.9`` and ``pi_s = 1 / (s (s + 1))`` (bets started at every window, so a gap
  that appears late is not held back by the evidence of fairness before it): a test
  supermartingale, ``P(sup_t M_t >= 1/a) <= a`` (Ville).
* **Per-window test** (:func:`spike_log_evidence`). In window ``t`` (the ``t``-th look),
  ``p_t = exp(-max(z_t^+, z_t^-, 0)^2 / 2)`` bounds each direction's one-window tail
  (Hoeffding: ``P(z_t^+ >= x) <= exp(-x^2 / 2)`` under the null, likewise ``z_t^-``), so
  ``P(p_t <= b) <= 2 b``; it rejects when ``p_t <= a w_t / 2`` with ``w_t = 6 / (pi^2
  t^2)`` (``sum_t w_t = 1``): over every window ever looked at, ``P(any rejection) <= a``. It catches a one-window spike, which the
  cumulative bet (set by the fair windows before it) stakes nothing on.

**Theorem (split of alpha).** With ``m`` unordered pairs times rates and ``s =``
:data:`SPIKE_SHARE` ``= 0.2``, the monitor alarms when, for some pair and window,
``M_t >= m / ((1 - s) alpha)`` or ``p_t <= s alpha w_t / (2 m)``. Under the null of every
window fair, each pair's cumulative test errs with probability ``<= (1 - s) alpha / m`` and its
per-window tests with ``<= s alpha / m`` over all windows ever looked at; a union over the
``m`` pairs gives ``P(ever any false alarm) <= alpha``. Equivalently the statistic
``S_t = max(log M_t + log(1 - s), log(w_t / (2 p_t)) + log s)`` (:func:`monitor_statistic`)
crosses ``log(m / alpha)``; the same ``S_t`` decides at any other level ``alpha'`` against
``log(m / alpha')`` (the report's headline uses that). Windows in which a group has fewer
than ``min_group_size`` rows bet and test nothing for its pairs, which the sizes alone decide.

The ordered-pair construction (one Hoeffding e-process per *ordered* pair, a union over them,
a plug-in bet that keeps a pseudo-value at every window, no per-window test) stays available as
:func:`pair_z` and :func:`log_wealth` (``experiments/monitor/tight.py`` measures both).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from fairprobe import metrics as _metrics
from fairprobe.errors import DataError

__all__ = ["MONITOR_METRICS", "SPIKE_SHARE", "MonitorResult", "log_wealth", "monitor_counts",
           "monitor_statistic", "pair_z", "signed_log_wealth", "signed_z", "spike_log_evidence"]

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


#: Share of the false-alarm budget spent on the per-window (spike) tests; the rest goes to
#: the cumulative e-process. Both are anytime-valid together (module docstring).
SPIKE_SHARE = 0.2


def _unordered_pairs(g: int, start: int, stop: int) -> npt.NDArray[np.int64]:
    """Unordered pairs ``start..stop-1`` of ``g`` groups, ``(0,1), (0,2), ..., (1,2), ...``,
    computed from their index (row ``i`` holds ``g - 1 - i`` pairs)."""
    idx = np.arange(start, stop, dtype=np.int64)
    # row i starts at c(i) = i (2g - i - 1) / 2: invert the quadratic, then correct by one
    b = 2 * g - 1
    i = np.floor((b - np.sqrt(np.maximum(b * b - 8 * idx, 0))) / 2).astype(np.int64)
    c = i * (b - i) // 2
    i = np.where(c > idx, i - 1, i)
    c = i * (b - i) // 2
    i = np.where(idx >= c + (g - 1 - i), i + 1, i)
    c = i * (b - i) // 2
    return np.stack([i, i + 1 + idx - c], axis=1)


def signed_z(k: npt.NDArray[np.float64], n: npt.NDArray[np.int64], *, kind: str, bound: float,
             min_group_size: int = 1, pairs: npt.NDArray[np.int64] | None = None
             ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64],
                        npt.NDArray[np.bool_], list[tuple[int, int]]]:
    """Both directions' evidence of every unordered pair (or of ``pairs``) in every window.

    Returns ``z_up`` (pair ``(i, j)``: evidence that ``i`` is favoured beyond the bound),
    ``z_down`` (``j`` favoured), the mask of windows where the pair bets, and the pairs.
    """
    g = n.shape[-1]
    if pairs is None:
        pairs = _unordered_pairs(g, 0, g * (g - 1) // 2)
    both = np.concatenate([pairs, pairs[:, ::-1]])
    z, ok, _ = pair_z(k, n, kind=kind, bound=bound, min_group_size=min_group_size, pairs=both)
    p = len(pairs)
    return z[..., :p], z[..., p:], ok[..., :p], [(int(a), int(b)) for a, b in pairs]


def signed_log_wealth(z_up: npt.NDArray[np.float64], z_down: npt.NDArray[np.float64],
                      ok: npt.NDArray[np.bool_], *, lookback: int = 5, c0: float = 1.0,
                      c_max: float = 3.0, w1: float = 0.9, shrink: float = 0.25
                      ) -> npt.NDArray[np.float64]:
    """``log M_t`` of the cumulative e-process of each unordered pair; time is axis ``-2``.

    Each window bets on one direction only, the one whose mean evidence over the last
    ``lookback`` windows is larger, with stake ``c_t`` = that mean clipped to ``[0, c_max]``
    (past windows only). Under the pair's null both directions' ``z`` are sub-Gaussian with
    non-positive mean, so ``exp(c_t z_t - c_t^2 / 2)`` has conditional mean at most 1 whichever
    direction the past picked: one process covers both orders of the pair.
    """
    shape = z_up.shape
    t_len = shape[-2]
    log_m = np.empty(shape, dtype=np.float64)
    log_w1 = np.zeros(shape[:-2] + shape[-1:])
    log_a = np.full(shape[:-2] + shape[-1:], -np.inf)
    up_hist: list[npt.NDArray[np.float64]] = []
    dn_hist: list[npt.NDArray[np.float64]] = []
    ok_hist: list[npt.NDArray[np.bool_]] = []
    for t in range(t_len):
        zu, zd, okt = z_up[..., t, :], z_down[..., t, :], ok[..., t, :]
        # windows before the first count as evidence ``c0`` (a prior that the first
        # ``lookback`` windows replace, so it never biases the bet later)
        fill = max(0, lookback - len(up_hist))
        tu = np.full(zu.shape, c0 * fill)
        td = np.full(zu.shape, c0 * fill)
        cnt = np.full(zu.shape, float(fill))
        for a, b, o in zip(up_hist[-lookback:], dn_hist[-lookback:], ok_hist[-lookback:],
                           strict=True):
            tu = tu + np.where(o, a, 0.0)
            td = td + np.where(o, b, 0.0)
            cnt = cnt + o
        with np.errstate(divide="ignore", invalid="ignore"):
            mu, md = np.where(cnt > 0, tu / cnt, 0.0), np.where(cnt > 0, td / cnt, 0.0)
        up = mu >= md
        c = np.clip(np.where(up, mu, md) - shrink, 0.0, c_max)
        zt = np.where(up, zu, zd)
        log_e = np.where(okt, c * zt - 0.5 * c * c, 0.0)
        s = t + 1
        log_a = np.logaddexp(log_a, -math.log(s * (s + 1))) + log_e
        log_w1 = log_w1 + log_e
        log_m[..., t, :] = np.logaddexp(math.log(w1) + log_w1,
                                        math.log(1 - w1) + np.logaddexp(log_a, -math.log(s + 1)))
        up_hist.append(zu)
        dn_hist.append(zd)
        ok_hist.append(okt)
    return log_m


def spike_log_evidence(z_up: npt.NDArray[np.float64], z_down: npt.NDArray[np.float64],
                       ok: npt.NDArray[np.bool_]) -> npt.NDArray[np.float64]:
    """``log(w_t / (2 p_t))`` of each pair's one-window test; time is axis ``-2``.

    ``p_t = exp(-z^2 / 2)`` (Hoeffding's tail, ``z`` the larger direction, positive) is a valid
    p-value of one direction in window ``t``; ``2`` pays for the two directions and
    ``w_t = 6 / (pi^2 t^2)`` (summing to 1 over the looks) for the windows.
    """
    t = np.arange(1, z_up.shape[-2] + 1, dtype=np.float64)
    log_w = np.log(6.0 / (math.pi ** 2 * t * t))[:, None]
    zmax = np.maximum(np.maximum(z_up, z_down), 0.0)
    return np.where(ok, 0.5 * zmax * zmax + log_w - math.log(2.0), -np.inf)


def monitor_statistic(z_up: npt.NDArray[np.float64], z_down: npt.NDArray[np.float64],
                      ok: npt.NDArray[np.bool_], *, spike_share: float = SPIKE_SHARE
                      ) -> npt.NDArray[np.float64]:
    """The combined statistic ``S_t`` of each pair: the monitor alarms at level ``alpha`` over
    ``m`` pairs when some ``S_t >= log(m / alpha)`` (module docstring)."""
    cum = signed_log_wealth(z_up, z_down, ok) + math.log1p(-spike_share)
    if spike_share <= 0:
        return cum
    return np.maximum(cum, spike_log_evidence(z_up, z_down, ok) + math.log(spike_share))


CONSTRUCTION = ("signed betting e-process per unordered pair (Hoeffding sub-Gaussian bets, "
                "mixture over start windows) at level (1 - s) alpha, and a per-window test at "
                "level s alpha 6 / (pi^2 t^2), union over unordered pairs")


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
        Per window, the largest combined statistic ``S_t`` over the pairs (module docstring).
    log_threshold : float
        ``log(m / alpha)``: the alarm line.
    alarm : str or None
        The first window whose wealth crossed the line (then: unfair, with error <= alpha).
    alarm_pair : list of str
        The pair (and rate) that crossed it.
    family_size : int
        ``m``, the unordered pairs times the rates.
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
                "construction": CONSTRUCTION, "spike_share": SPIKE_SHARE}


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
        fam = g * (g - 1) // 2 * len(rates)
        return MonitorResult(name, kind, bound, alpha, [], [], math.log(max(1, fam) / alpha),
                             None, [], fam, labels)
    ti = np.array([widx[pd.Timestamp(w)] for w in tab[WINDOW]])
    gi = np.array([pos[tuple(r)] for r in tab[cols].itertuples(index=False, name=None)])
    n_pairs = g * (g - 1) // 2  # one process per unordered pair covers both orders
    m = n_pairs * len(rates)
    top = np.full(t_len, -np.inf)
    best = np.zeros(t_len, dtype=np.int64)  # index of the pair with the largest statistic
    sums = []
    for ri, r in enumerate(rates):
        k_r, n_r = rate_sums(tab, r)
        k = np.zeros((t_len, g))
        n = np.zeros((t_len, g), dtype=np.int64)
        np.add.at(k, (ti, gi), k_r)
        np.add.at(n, (ti, gi), n_r)
        sums.append((k, n))
        # the pairs' statistics are independent: a chunk at a time, keeping each window's max
        for start in range(0, n_pairs, _PAIR_CHUNK):
            chunk = _unordered_pairs(g, start, min(n_pairs, start + _PAIR_CHUNK))
            zu, zd, ok, _ = signed_z(k, n, kind=kind, bound=bound,
                                     min_group_size=min_group_size, pairs=chunk)
            stat = monitor_statistic(zu, zd, ok)
            c_top, c_arg = stat.max(axis=-1), stat.argmax(axis=-1)
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
        pair = _unordered_pairs(g, pi, pi + 1)
        zu, zd, _, _ = signed_z(*sums[ri], kind=kind, bound=bound,
                                min_group_size=min_group_size, pairs=pair)
        i, j = pair[0] if zu[t0, 0] >= zd[t0, 0] else pair[0][::-1]  # the favoured group first
        alarm_pair = [labels[int(i)], labels[int(j)], rates[ri]]
    return MonitorResult(name, kind, bound, alpha,
                         [pd.Timestamp(w).isoformat() for w in wins],
                         [float(x) for x in top], line, alarm, alarm_pair or [], m, labels)
