"""Findings over time: a windowed audit's per-window findings and a monitor's alarm.

An audit with ``--time-col --window`` (``windows``) and ``fairprobe monitor`` (``windows`` and
``monitor``) answer questions over time, next to the pooled findings of every row:

* **the monitor**, one question per metric: "has the model been unfair in some window since
  monitoring began?". Its alarm is the crossing of ``log(m / alpha)`` by the largest log wealth
  of the betting e-processes (:mod:`fairprobe.scale.monitor`): by Ville's inequality a false
  alarm, at any of the times it is looked at, has probability at most ``alpha``. The wealth
  does not depend on ``alpha``, so the alarm at another level ``1 - a`` is the crossing of
  ``log(m / a)``: the headline recomputes it at its Bonferroni share (:func:`monitor_entries`).
  No alarm is ``undetermined``, never ``fair``.
* **the windows**, one question per metric: "in which windows is the model unfair?". Each
  window's interval holds at its level for that window alone, and the result keeps no counts
  to recompute them at a family-wise level, so they are **shown and not counted**: the
  headline states "unfair in k of n windows (from DATE)" and counts the question as
  ``undetermined``. A window with fewer rows than the median window's half is marked partial
  (the first and last windows of data that do not start at a window boundary).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from fairprobe.report._read import fmt, fmt_interval
from fairprobe.report.document import FigureSpec, Table
from fairprobe.stats.finding import Finding, Kind, Question, Verdict
from fairprobe.stats.headline import Entry

__all__ = ["TimeQuestion", "monitor_entries", "partial_windows", "time_questions",
           "window_rows"]


def _date(iso: Any) -> str:
    return str(iso)[:10] if iso else "?"


def partial_windows(windows: Sequence[Mapping[str, Any]]) -> set[int]:
    """Indices of windows with fewer than half the median window's rows (partial windows)."""
    ns = [int(w.get("n") or 0) for w in windows]
    if len(ns) < 3:
        return set()
    med = statistics.median(ns)
    return {i for i, n in enumerate(ns) if n < 0.5 * med}


def _signed(f: Mapping[str, Any], order: tuple[str, str] | None) -> float | None:
    """The window's gap as ``rate(order[0]) - rate(order[1])`` (the stored one is unsigned,
    with its pair higher-rate first); None when the pair is not the reference pair."""
    est = f.get("estimate")
    pair = [str(x) for x in f.get("pair") or []]
    if not isinstance(est, int | float) or order is None or len(pair) != 2:
        return None
    if (pair[0], pair[1]) == order:
        return float(est)
    if (pair[1], pair[0]) == order:
        return -float(est)
    return None


def window_rows(windows: Sequence[Mapping[str, Any]], metric: str) -> list[dict[str, Any]]:
    """Per window of one metric: start, end, rows, estimate, interval, pair, who is lower,
    verdict, partial."""
    part = partial_windows(windows)
    out = []
    for i, w in enumerate(windows):
        f = (w.get("findings") or {}).get(metric)
        if not isinstance(f, Mapping):
            continue
        pair = [str(x) for x in f.get("pair") or []]
        out.append({"start": str(w.get("start", "")), "end": str(w.get("end", "")),
                    "n": w.get("n"), "estimate": f.get("estimate"),
                    "low": f.get("low"), "high": f.get("high"), "pair": pair,
                    "lower": pair[1] if len(pair) == 2 else "",
                    "verdict": str(f.get("verdict", "undetermined")),
                    "threshold": f.get("threshold"), "partial": i in part})
    return out


class TimeQuestion:
    """One question over time of a result part, with what the report shows of it."""

    def __init__(self, kind: str, metric: str, verdict: Verdict, summary: str,
                 entry: Entry, table: Table | None = None,
                 figure: FigureSpec | None = None) -> None:
        self.kind, self.metric, self.verdict, self.summary = kind, metric, verdict, summary
        self.entry, self.table, self.figure = entry, table, figure


def monitor_entries(part: Mapping[str, Any], source: str) -> list[TimeQuestion]:
    """One counted question per monitored metric (rule in the module docstring)."""
    out = []
    mons = part.get("monitor")
    for name, m in (mons.items() if isinstance(mons, Mapping) else ()):
        if not isinstance(m, Mapping):
            continue
        alpha = m.get("alpha")
        fam = m.get("family_size")
        lw = [float(x) for x in m.get("log_wealth") or [] if isinstance(x, int | float)]
        wins = [str(x) for x in m.get("windows") or []]
        if not isinstance(alpha, int | float) or not 0 < alpha < 1 or \
                not isinstance(fam, int) or fam < 1:
            continue
        alarm = m.get("alarm")
        kind: Kind = "ratio" if m.get("kind") == "ratio" else "difference"
        bound = float(m.get("bound") or 0.0)
        q = Question(metric=f"{name} (monitor)", kind=kind, threshold=bound,
                     groups=tuple(str(g) for g in m.get("groups") or []),
                     rates=(f"monitor:{name}",))
        f = Finding(q, math.nan, -math.inf, math.inf, 1.0 - float(alpha), "betting e-process",
                    coverage="anytime-valid", forced="unfair" if alarm else "undetermined",
                    reason=(f"alarm at the window of {_date(alarm)}" if alarm else
                            "no alarm: not a proof of fairness"),
                    counts={"windows": len(wins), "family_size": fam})

        def at(level: float, lw: list[float] = lw, fam: int = fam) -> Verdict:
            line = math.log(fam / (1.0 - level))
            return "unfair" if any(x >= line for x in lw) else "undetermined"

        summary = (f"{name.replace('_', ' ')}: alarm since {_date(alarm)}" if alarm else
                   f"{name.replace('_', ' ')}: no alarm over {len(wins)} windows")
        label = f"monitor {name}"
        out.append(TimeQuestion("monitor", str(name), f.verdict, summary,
                                Entry(f"{source}|monitor|{name}", f, f.verdict, None,
                                      label=label, decide_at=at)))
    return out


def _window_figure(rows: list[dict[str, Any]], metric: str, order: tuple[str, str] | None,
                   alarm: str | None) -> FigureSpec | None:
    pts = []
    for r in rows:
        s = _signed({"estimate": r["estimate"], "pair": r["pair"]}, order)
        if s is None or r["low"] is None or r["high"] is None:
            continue
        sign = 1.0 if s >= 0 else -1.0
        lo, hi = sorted((sign * float(r["low"]), sign * float(r["high"])))
        pts.append({"x": r["start"][:10], "y": s, "low": lo, "high": hi,
                    "verdict": r["verdict"], "partial": r["partial"]})
    if not pts or order is None:
        return None
    thr = rows[0].get("threshold")
    label = metric.replace("_", " ")
    who = f"{order[0]} minus {order[1]}"
    text = "; ".join(f"{p['x']} {fmt(p['y'])} [{fmt(p['low'])}, {fmt(p['high'])}] "
                     f"{p['verdict']}{' (partial)' if p['partial'] else ''}" for p in pts)
    return FigureSpec(
        plot="windows",
        data={"points": pts, "threshold": thr, "ylabel": f"{label}: {who}",
              "alarm": _date(alarm) if alarm else None, "order": list(order)},
        alt=(f"The {label} per window, signed as {who} (below zero: {order[0]} has the "
             f"lower rate), with each window's interval and the fair band: {text}."),
        caption=(f"The {label} per window, signed ({who}; below zero {order[0]} is "
                 f"disadvantaged, above zero {order[1]}), each window's interval at its own "
                 f"level, hollow markers for partial windows"
                 + (f"; the monitor alarmed on {_date(alarm)}" if alarm else "") + "."),
    )


def time_questions(part: Mapping[str, Any], source: str) -> list[TimeQuestion]:
    """The monitor's questions, then one shown-not-counted question per windowed metric."""
    out = monitor_entries(part, source)
    alarms = {t.metric: (part.get("monitor") or {}).get(t.metric, {}).get("alarm")
              for t in out}
    windows = [w for w in part.get("windows") or [] if isinstance(w, Mapping)]
    metrics = list(dict.fromkeys(m for w in windows for m in (w.get("findings") or {})))
    for metric in metrics:
        rows = window_rows(windows, metric)
        if not rows:
            continue
        unfair = [r for r in rows if r["verdict"] == "unfair"]
        n_part = sum(r["partial"] for r in rows)
        pairs = [tuple(r["pair"]) for r in rows if len(r["pair"]) == 2]
        order = tuple(sorted(pairs[0])) if pairs else None  # a fixed orientation
        label = metric.replace("_", " ")
        summary = (f"{label}: unfair in {len(unfair)} of {len(rows)} windows"
                   + (f" (from {_date(unfair[0]['start'])})" if unfair else "")
                   + (f", {n_part} partial" if n_part else ""))
        why = ("each window's interval holds for its own window only, and the result keeps no "
               "counts to recompute them at a family-wise level: shown, not counted")
        table = Table(
            caption=f"The {label} per window (each interval at its own level; partial: fewer "
                    f"than half the median window's rows)",
            header=["window", "rows", "estimate", "interval", "lower rate", "verdict"],
            rows=[[f"{r['start'][:16]} to {r['end'][:16]}" + (" (partial)" if r["partial"]
                                                             else ""),
                   fmt(r["n"]) if r["n"] is not None else "n/a",
                   fmt(r["estimate"]) if r["estimate"] is not None else "n/a",
                   fmt_interval((r["low"], r["high"])) if r["low"] is not None else "n/a",
                   r["lower"] or "n/a", r["verdict"]] for r in rows],
            classes=[["", "", "", "", "", f"v-{r['verdict']}"] for r in rows])
        entry = Entry(f"{source}|windows|{metric}", None,
                      "unfair" if unfair else "undetermined", None,
                      label=f"windows: {summary}", not_counted=why)
        out.append(TimeQuestion("windows", metric, "unfair" if unfair else "undetermined",
                                summary, entry, table,
                                _window_figure(rows, metric, order,  # type: ignore[arg-type]
                                               alarms.get(metric))))
    return out
