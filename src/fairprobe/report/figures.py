"""Figures of a report as accessible, self-contained SVG (matplotlib, no pyplot state).

:func:`render_svg` draws a :class:`~fairprobe.report.document.FigureSpec` and returns SVG markup
ready to inline in HTML: text stays text (``svg.fonttype = none``), no date in the metadata (same
input, same bytes), element ids prefixed per figure (several figures in one page never share an
id), ``role="img"`` with a ``<title>`` and ``<desc>`` for screen readers. Colours are the
Okabe-Ito palette (distinguishable with colour-vision deficiencies) and every colour-coded
meaning is also written as text (labels, legends).
"""

from __future__ import annotations

import io
import math
import re
import warnings
from collections.abc import Callable
from html import escape
from typing import Any

from fairprobe import metrics as _metrics
from fairprobe._extras import import_optional
from fairprobe.report.document import FigureSpec

__all__ = ["MAX_GROUPS", "MAX_LABEL", "bounded_spec", "render_svg", "short"]

BLUE, ORANGE, GREEN, RED, GREY, PURPLE = (
    "#0072B2", "#E69F00", "#009E73", "#D55E00", "#777777", "#CC79A7")
BAND = "#cfe8d8"


def _figure(width: float, height: float, ncols: int = 1) -> tuple[Any, list[Any]]:
    mfig = import_optional("matplotlib.figure", feature="the report's figures")
    fig = mfig.Figure(figsize=(width, height), layout="constrained")
    axes = fig.subplots(1, ncols, squeeze=False)[0].tolist()
    return fig, axes


def _ticker() -> Any:
    return import_optional("matplotlib.ticker", feature="the report's figures")


def _labelled(fig: Any, ax: Any, xlabel: str, ylabel: str, *, integer_x: bool = False) -> Any:
    """``fig`` with its axes labelled and the legend drawn (integer ticks for rounds)."""
    ax.set_xlabel(xlabel)
    if integer_x:
        ax.xaxis.set_major_locator(_ticker().MaxNLocator(integer=True))
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=8, loc="best")
    return fig


def _band(ax: Any, low: float | None, high: float | None, horizontal: bool = True,
          label: str = "fair band") -> None:
    if low is None or high is None:
        return
    if horizontal:
        ax.axhspan(low, high, color=BAND, zorder=0, label=label)
    else:
        ax.axvspan(low, high, color=BAND, zorder=0, label=label)


def plot_audit(d: dict[str, Any]) -> Any:
    groups = d.get("groups") or []
    excluded = set(d.get("excluded") or [])
    fig, (ax1, ax2) = _figure(8.0, 3.4, 2)
    if groups:
        names = [g["group"] for g in groups]
        rates = [g["rate"] for g in groups]
        err = [[max(g["rate"] - (g["low"] if g["low"] is not None else g["rate"]), 0)
                for g in groups],
               [max((g["high"] if g["high"] is not None else g["rate"]) - g["rate"], 0)
                for g in groups]]
        palette = [BLUE, ORANGE, GREEN, PURPLE, "#56B4E9", "#F0E442", GREY]
        out = [n in excluded or bool(g.get("too_small")) for n, g in zip(names, groups,
                                                                          strict=True)]
        colours = ["#dddddd" if o else palette[i % len(palette)] for i, o in enumerate(out)]
        x = list(range(len(names)))
        bars = ax1.bar(x, rates, color=colours, yerr=err, capsize=5, edgecolor="black",
                       linewidth=0.6, hatch=None)
        for b, o in zip(bars, out, strict=True):
            if o:
                b.set_hatch("xx")
        for b, r in zip(bars, rates, strict=True):
            ax1.annotate(f"{r:.3f}", (b.get_x() + b.get_width() / 2, r), xytext=(9, 2),
                         textcoords="offset points", ha="left", va="bottom", fontsize=7)
        long = len(names) > 3 or max(len(n) for n in names) > 10
        ax1.set_xticks(x, names, rotation=30 if long else 0, ha="right" if long else "center",
                       fontsize=8)
        ax1.set_ylabel(d.get("rate") or "positive-decision rate")
        top = max((g["high"] if g["high"] is not None else g["rate"]) for g in groups)
        ax1.set_ylim(0, min(1.05, top * 1.2 + 0.03))
        title = f"By group ({d.get('level', 0.95):.0%} intervals)"
        if any(out):
            title += "; hatched: not compared"
        ax1.set_title(title, fontsize=9)
    else:
        ax1.text(0.5, 0.5, "no by-group rates in this result", ha="center", va="center",
                 transform=ax1.transAxes)
        ax1.set_axis_off()
    est, iv, band = d.get("estimate"), d.get("interval"), d.get("band") or {}
    if est is not None:
        lo, hi = band.get("low"), band.get("high")
        if band.get("kind") == "ratio":
            hi_draw = max(hi or 1.0, (iv[1] if iv else est) * 1.1, 1.05)
            ax2.axvspan(lo, hi_draw, color=BAND, zorder=0, label=f"fair: ratio >= {lo:g}")
            ax2.axvline(1.0, color=GREY, lw=0.8, ls=":")
        else:
            _band(ax2, lo, hi, horizontal=False, label=f"fair: |gap| <= {hi:g}" if hi else "")
            ax2.axvline(0.0, color=GREY, lw=0.8, ls=":")
        xerr = [[est - iv[0]], [iv[1] - est]] if iv else None
        colour = RED if d.get("verdict") == "unfair" else GREEN if d.get("verdict") == "fair" \
            else ORANGE
        ax2.errorbar([est], [0], xerr=xerr, fmt="o", color=colour, capsize=8, ms=8,
                     label=f"estimate {est:.3f} ({d.get('verdict')})")
        ax2.set_yticks([])
        ax2.set_xlabel(d.get("metric", "metric"))
        ax2.set_title(d.get("pair") or "Metric vs the fair band", fontsize=9)
        ax2.legend(loc="upper center", bbox_to_anchor=(0.5, -0.25), fontsize=8, ncol=2,
                   frameon=False)
        ax2.set_ylim(-1, 1)
    else:
        ax2.set_axis_off()
    return fig


def plot_rates(d: dict[str, Any]) -> Any:
    """Small multiples: one panel per per-group rate (dots with intervals, one row a group)."""
    panels = [p for p in d.get("panels") or [] if p.get("groups")]
    ncols = min(3, max(1, len(panels)))
    nrows = max(1, -(-len(panels) // ncols))
    ngroups = max([len(p["groups"]) for p in panels] + [1])
    mfig = import_optional("matplotlib.figure", feature="the report's figures")
    fig = mfig.Figure(figsize=(8.0, 0.4 + nrows * (0.45 + 0.2 * ngroups)), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False).ravel().tolist()
    for ax, p in zip(axes, panels, strict=False):
        gs = p["groups"]
        for i, g in enumerate(gs):
            lo = g["low"] if g["low"] is not None else g["rate"]
            hi = g["high"] if g["high"] is not None else g["rate"]
            grey = bool(g.get("too_small"))
            ax.errorbar([g["rate"]], [i], xerr=[[max(g["rate"] - lo, 0)], [max(hi - g["rate"], 0)]],
                        fmt="o", ms=4, capsize=3, color=GREY if grey else BLUE)
        ax.set_yticks(range(len(gs)), [short(g["group"], 18) for g in gs], fontsize=7)
        ax.set_ylim(-0.6, len(gs) - 0.4)
        ax.invert_yaxis()
        ax.set_xlim(0, 1)
        ax.tick_params(axis="x", labelsize=7)
        ax.set_title(p.get("rate", "rate"), fontsize=8)
    for ax in list(axes)[len(panels):]:
        ax.set_axis_off()
    return fig


def plot_sequential_path(d: dict[str, Any]) -> Any:
    fig, (ax,) = _figure(7.0, 3.2)
    styles = {"statistic_upper": (BLUE, "statistic vs the upper boundary"),
              "statistic_lower": (ORANGE, "statistic vs the lower boundary"),
              "statistic": (BLUE, "statistic"), "log_wealth": (BLUE, "log wealth"),
              "wealth": (BLUE, "wealth"),
              "log_e_violation": (BLUE, "log e-value against compliance"),
              "log_e_below_delta": (ORANGE, "log e-value against gap > delta"),
              "log_e_above_minus_delta": (PURPLE, "log e-value against gap < -delta")}
    series = d["series"]
    names = {s["name"]: s for s in series}
    same = ("statistic_upper" in names and "statistic_lower" in names
            and names["statistic_upper"]["y"] == names["statistic_lower"]["y"])
    for s in series:
        if same and s["name"] == "statistic_lower":
            continue
        colour, label = styles.get(s["name"], (PURPLE, s["name"]))
        ax.step(s["x"], s["y"], where="post", color=colour, lw=1.4,
                label="statistic" if same else label)
    if d.get("upper") is not None:
        ax.axhline(d["upper"], color=RED, ls="--", lw=1.2,
                   label=f"upper boundary {d['upper']:.2f} (violation)")
    if d.get("lower") is not None:
        ax.axhline(d["lower"], color=GREEN, ls="--", lw=1.2,
                   label=f"lower boundary {d['lower']:.2f} (compliance)")
    ax.set_title(f"Outcome: {d.get('outcome')} after {int(d['queries'])} queries", fontsize=10)
    return _labelled(fig, ax, "queries", "test statistic")


def plot_sequential_repeats(d: dict[str, Any]) -> Any:
    fig, (ax,) = _figure(7.0, 3.0)
    colours = {"violation": RED, "compliant": GREEN, "inconclusive": ORANGE}
    qs, outs = d["queries"], d["outcomes"]
    top = max(qs) if qs else 1
    bins = [top * i / 30 for i in range(31)]
    kinds = sorted(set(outs), key=lambda k: list(colours).index(k) if k in colours else 9)
    data = [[q for q, o in zip(qs, outs, strict=True) if o == k] for k in kinds]
    ax.hist(data, bins=bins, stacked=True, color=[colours.get(k, GREY) for k in kinds],
            label=[f"{k} ({len(x)})" for k, x in zip(kinds, data, strict=True)],
            edgecolor="white", linewidth=0.4)
    if d.get("wald") is not None:
        ax.axvline(d["wald"], color="black", ls=":", lw=1,
                   label=f"Wald's bound on the mean {d['wald']:.0f}")
    return _labelled(fig, ax, "queries until the audit stopped", "audits")


def plot_confidence_sequence(d: dict[str, Any]) -> Any:
    fig, (ax,) = _figure(7.0, 3.2)
    q, lo, hi = d["query"], d["low"], d["high"]
    tol = d.get("tolerance")
    if tol is not None:
        _band(ax, -tol, tol, label=f"compliance band |gap| <= {tol:g}")
    finite = [v for v in lo + hi if math.isfinite(v)]
    cap = (max(abs(v) for v in finite) if finite else 1.0) * 1.1
    lo_c = [max(v, -cap) if math.isfinite(v) else -cap for v in lo]
    hi_c = [min(v, cap) if math.isfinite(v) else cap for v in hi]
    ax.fill_between(q, lo_c, hi_c, step="post", color=BLUE, alpha=0.25,
                    label="confidence sequence")
    if d.get("estimate"):
        ax.step(q, d["estimate"], where="post", color=BLUE, lw=1.4, label="gap estimate")
    ax.axhline(0, color=GREY, lw=0.8, ls=":")
    return _labelled(fig, ax, "queries", "gap")


def plot_radius_curve(d: dict[str, Any]) -> Any:
    fig, (ax,) = _figure(7.0, 3.2)
    xs, ys = d["divergence_values"], d["metric_values"]
    tol = d.get("tolerance")
    if tol is not None:
        _band(ax, -tol, tol, label=f"fair band |phi| < {tol:g}")
    if d.get("metric_low") and d.get("metric_high"):
        ax.fill_between(xs, d["metric_low"], d["metric_high"], color=BLUE, alpha=0.2,
                        label="reachable metric")
    ax.plot(xs, ys, color=BLUE, lw=1.8, marker="o", ms=3,
            label="least shift that moves the metric to phi")
    if d.get("phi") is not None:
        ax.plot([0], [d["phi"]], marker="D", color="black", ms=6, ls="none",
                label=f"audit data: phi {d['phi']:.3f}")
    r = d.get("radius")
    if r is not None:
        ax.axvline(r, color=RED, ls="--", lw=1.2, label=f"radius {r:.4f}")
    return _labelled(fig, ax, f"shift budget ({d.get('divergence', 'KL')})", "metric phi")


def plot_radius_shift(d: dict[str, Any]) -> Any:
    fig, (ax,) = _figure(7.0, 3.2)
    groups = d["groups"]
    x = list(range(len(groups)))
    w = 0.38
    ax.bar([i - w / 2 for i in x], d["before"], w, color=BLUE, label="audit data")
    ax.bar([i + w / 2 for i in x], d["after"], w, color=ORANGE, hatch="//",
           label=f"after the least flipping shift ({d.get('divergence')} {d.get('radius') or 0:.4f})")
    ax.set_xticks(x, groups)
    ax.set_ylabel("group mean")
    if d.get("phi") is not None and d.get("phi_shifted") is not None:
        ax.set_title(f"phi {d['phi']:.3f} -> {d['phi_shifted']:.3f} "
                     f"(fair iff |phi| < {d.get('tolerance') or 0:g})", fontsize=10)
    ax.legend(fontsize=8, loc="best")
    return fig


def plot_radius_pairs(d: dict[str, Any]) -> Any:
    rows = d["rows"]
    fig, (ax,) = _figure(7.0, 0.9 + 0.45 * max(len(rows), 2))
    r = d.get("radius")
    bars = ax.barh(range(len(rows)), [x["radius"] for x in rows], color=BLUE)
    if r is not None:
        ax.axvline(r, color=RED, ls="--", lw=1.2, label=f"radius of the assessment {r:.3g}")
        ax.legend(fontsize=8, loc="lower right")
    for b, x in zip(bars, rows, strict=True):
        phi = "n/a" if x["phi"] is None else f"{x['phi']:.3f}"
        ax.annotate(f"{x['radius']:.3g} (phi {phi}, {'fair' if x['fair'] else 'unfair'})",
                    (b.get_width(), b.get_y() + b.get_height() / 2), xytext=(3, 0),
                    textcoords="offset points", va="center", fontsize=7)
    ax.set_yticks(range(len(rows)), [x["label"] for x in rows], fontsize=8)
    ax.set_xlabel(f"radius ({d.get('divergence', 'KL')}) of the pair's comparison")
    ax.set_xlim(0, max([x["radius"] for x in rows] + [r or 0.0]) * 1.6)
    return fig


def plot_twosource(d: dict[str, Any]) -> Any:
    fig, (ax1, ax2, ax3) = _figure(10.0, 3.4, 3)
    di = [x for x in d.get(_metrics.DI.short) or [] if x.get("estimate") is not None]
    thr = d.get("threshold") or 0.8
    ys = list(range(len(di)))
    top = max([thr * 1.4] + [x["interval"][1] if x.get("interval") else x["estimate"]
                             for x in di])
    ax1.axvspan(thr, max(top, 1.0) * 1.05, color=BAND, zorder=0, label=f"fair: DI >= {thr:g}")
    for y, x, colour in zip(ys, di, (PURPLE, BLUE), strict=False):
        iv = x.get("interval")
        xerr = [[x["estimate"] - iv[0]], [iv[1] - x["estimate"]]] if iv else None
        ax1.errorbar([x["estimate"]], [y], xerr=xerr, fmt="o", color=colour, capsize=6)
    ax1.set_yticks(ys, [x["label"] for x in di], fontsize=8)
    ax1.set_xlabel("disparate impact")
    ax1.set_title("DI through A and B", fontsize=10)
    ax1.set_ylim(-0.6, len(di) - 0.4)
    ax1.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.22), frameon=False)
    dets = [x for x in d.get("detectors") or [] if x.get("p") is not None]
    if dets:
        floor = 1e-16
        ps = [max(x["p"], floor) for x in dets]
        colours = [RED if x["detected"] else BLUE for x in dets]
        bars = ax2.barh(range(len(dets)), [-math.log10(p) for p in ps], color=colours)
        for i, x in enumerate(dets):
            if x.get("alpha"):
                ax2.plot([-math.log10(x["alpha"])] * 2, [i - 0.4, i + 0.4], color="black", lw=2)
        for b, x, p in zip(bars, dets, ps, strict=False):
            ax2.annotate(f"p{'<1e-16' if x['p'] < floor else f'={p:.3g}'}"
                         f"{' FIRED' if x['detected'] else ''}",
                         (b.get_width(), b.get_y() + b.get_height() / 2), xytext=(3, 0),
                         textcoords="offset points", va="center", fontsize=7)
        ax2.set_yticks(range(len(dets)), [x["name"] for x in dets], fontsize=8)
        ax2.set_xlabel("-log10 p-value (black tick: level)")
        ax2.set_xlim(0, max(-math.log10(p) for p in ps) * 1.6 + 1)
        ax2.set_title("Detectors", fontsize=10)
    else:
        ax2.set_axis_off()
    checks = d.get("checks")
    if checks:
        ax3.plot(checks["checks"], checks["inconsistent"], color=BLUE, marker="o",
                 drawstyle="steps-post", label="inconsistent answers")
        if checks.get("n_max"):
            ax3.plot(checks["checks"], checks["n_max"], color=RED, ls="--", marker="_", ms=14,
                     drawstyle="steps-post", label="n_max (at each look)")
        elif d.get("n_max") is not None:
            ax3.axhline(d["n_max"], color=RED, ls="--", label=f"n_max {d['n_max']:g}")
        ax3.set_ylim(bottom=0)
        ax3.set_xlim(0, max(checks["checks"]) * 1.15 + 1)
        ax3.set_xlabel("checks")
        ax3.legend(fontsize=7)
    elif d.get("n_inconsistent") is not None and d.get("n_max") is not None:
        ax3.bar(["inconsistent", "n_max"], [d["n_inconsistent"], d["n_max"]],
                color=[BLUE, RED])
        ax3.set_ylabel("answers")
        ax3.set_xlabel(f"after {d.get('n_checked') or 0:g} checks")
    else:
        ax3.set_axis_off()
    ax3.set_title("Checks vs n_max", fontsize=10)
    return fig


def plot_collab_methods(d: dict[str, Any]) -> Any:
    fig, (ax,) = _figure(7.0, 0.5 + 0.42 * max(len(d["methods"]), 2))
    ms = [m for m in d["methods"] if m.get("estimate") is not None]
    tau = d.get("tau")
    if tau is not None:
        _band(ax, -tau, tau, horizontal=False, label=f"fair band |DP| <= {tau:g}")
    for i, m in enumerate(ms):
        ax.plot([m["estimate"]], [i], "X" if m["fooled"] else "o",
                color=RED if m["fooled"] else BLUE, ms=8)
    if d.get("true") is not None:
        ax.axvline(d["true"], color="black", ls="--", lw=1.2, label=f"true DP {d['true']:.3f}")
    ax.set_yticks(range(len(ms)), [m["method"] + (" (fooled)" if m["fooled"] else "")
                                   for m in ms], fontsize=8)
    ax.set_xlabel("estimated demographic parity gap")
    ax.legend(fontsize=8, loc="best")
    return fig


def plot_collab_trajectory(d: dict[str, Any]) -> Any:
    fig, (ax,) = _figure(7.0, 3.2)
    tau = d.get("tau")
    if tau is not None:
        _band(ax, -tau, tau, label=f"fair band |DP| <= {tau:g}")
    colours = [BLUE, RED, GREEN, ORANGE, PURPLE, GREY]
    for i, (name, ys) in enumerate(d["series"].items()):
        ax.plot(range(1, len(ys) + 1), ys, color=colours[i % 6], lw=1.6, label=name)
    if d.get("true") is not None:
        ax.axhline(d["true"], color="black", ls="--", lw=1, label=f"true DP {d['true']:.3f}")
    return _labelled(fig, ax, "round", "estimated DP gap", integer_x=True)


def plot_collab_nodes(d: dict[str, Any]) -> Any:
    nodes = [n for n in d["nodes"] if n.get("estimate") is not None]
    fig, (ax,) = _figure(7.0, 3.2)
    tau = d.get("tau")
    if tau is not None:
        _band(ax, -tau, tau, horizontal=False, label=f"fair band |DP| <= {tau:g}")
    for attacker, colour, marker, label in ((False, BLUE, "o", "honest node"),
                                            (True, RED, "X", "attacker")):
        sel = [n for n in nodes if n["attacker"] == attacker]
        if sel:
            ax.scatter([n["estimate"] for n in sel],
                       [n["weight"] if n["weight"] is not None else 1.0 for n in sel],
                       color=colour, marker=marker, s=40, label=label, zorder=3)
    if d.get("true") is not None:
        ax.axvline(d["true"], color="black", ls="--", lw=1, label=f"true DP {d['true']:.3f}")
    return _labelled(fig, ax, "node's local estimate", "weight")


def plot_collab_suspicion(d: dict[str, Any]) -> Any:
    fig, (ax,) = _figure(7.0, 3.2)
    attackers = set(d.get("attackers") or [])
    seen = set()
    for name, ys in d["series"].items():
        bad = name in attackers
        label = ("attacker" if bad else "honest node") if bad not in seen else None
        seen.add(bad)
        ax.plot(range(1, len(ys) + 1), ys, color=RED if bad else GREY, lw=1.6 if bad else 0.8,
                alpha=1.0 if bad else 0.6, label=label, zorder=3 if bad else 2)
    if d.get("z_max") is not None:
        ax.axhline(d["z_max"], color="black", ls=":", lw=1, label=f"cap z_max {d['z_max']:g}")
    return _labelled(fig, ax, "round", "suspicion score", integer_x=True)


def plot_collab_sweep(d: dict[str, Any]) -> Any:
    fig, (ax,) = _figure(7.0, 3.4)
    colours = [BLUE, ORANGE, GREEN, RED, PURPLE, GREY, "black"]
    markers = ["o", "s", "^", "D", "v", "P", "X"]
    for i, (label, series) in enumerate(sorted(d["success"].items())):
        ks = sorted(series, key=float)
        ax.plot([float(k) for k in ks], [series[k] for k in ks], marker=markers[i % 7],
                color=colours[i % 7], label=label)
    ax.set_xlabel("number of attackers K")
    ax.set_ylabel("attack success rate")
    ax.set_ylim(-0.03, 1.03)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5), frameon=False)
    return fig


def plot_estimates(d: dict[str, Any]) -> Any:
    rows = [r for r in d["rows"] if r.get("estimate") is not None]
    fig, (ax,) = _figure(7.0, 0.7 + 0.32 * max(len(rows), 2))
    band = d.get("band") or {}
    if band.get("kind") == "ratio":
        right = max([1.25] + [(r["interval"] or (0, r["estimate"]))[1] * 1.05 for r in rows])
        ax.axvspan(band["low"], band.get("high") or right, color=BAND, zorder=0,
                   label=f"fair: ratio >= {band['low']:g}")
    elif band:
        _band(ax, band.get("low"), band.get("high"), horizontal=False,
              label=f"fair: |gap| <= {band.get('high'):g}")
    for i, r in enumerate(rows):
        iv = r.get("interval")
        xerr = [[r["estimate"] - iv[0]], [iv[1] - r["estimate"]]] if iv else None
        colour = RED if r.get("verdict") == "unfair" else GREEN if r.get("verdict") == "fair" \
            else ORANGE
        ax.errorbar([r["estimate"]], [i], xerr=xerr, fmt="o", color=colour, capsize=5)
    ax.set_yticks(range(len(rows)), [f"{r['label']} ({r.get('verdict')})" for r in rows],
                  fontsize=8)
    ax.set_ylim(-0.6, len(rows) - 0.4)
    ax.set_xlabel(d.get("xlabel", "estimate"))
    if band:
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    return fig


def plot_xy(d: dict[str, Any]) -> Any:
    fig, (ax,) = _figure(6.0, 3.0)
    ax.plot(d["x"], d["y"], marker="o", ms=2.5 if len(d["x"]) > 40 else 5, lw=1.2, color=BLUE)
    ax.set_xlabel(d.get("xlabel", "x"))
    ax.set_ylabel(d.get("ylabel", "y"))
    return fig


def plot_windows(d: dict[str, Any]) -> Any:
    """A metric per window, signed (who is disadvantaged), intervals, the band, partial windows
    hollow, the monitor's alarm as a vertical line."""
    pts = d["points"]
    fig, (ax,) = _figure(7.0, 3.0)
    x = list(range(len(pts)))
    thr = d.get("threshold")
    if isinstance(thr, int | float):
        _band(ax, -float(thr), float(thr), label=f"fair band +/-{float(thr):g}")
    ax.axhline(0.0, color=GREY, lw=0.8)
    for i, p in enumerate(pts):
        colour = RED if p["verdict"] == "unfair" else GREEN if p["verdict"] == "fair" \
            else ORANGE
        ax.errorbar([i], [p["y"]], yerr=[[p["y"] - p["low"]], [p["high"] - p["y"]]],
                    fmt="o", color=colour, capsize=2, ms=4,
                    mfc="white" if p["partial"] else colour)
    if d.get("alarm"):
        hit = [i for i, p in enumerate(pts) if p["x"] >= d["alarm"]]
        if hit:
            ax.axvline(hit[0], color=RED, ls="--", lw=1, label=f"monitor alarm {d['alarm']}")
    step = max(1, len(pts) // 8)
    ax.set_xticks(x[::step], [p["x"] for p in pts][::step], fontsize=7)
    ax.set_xlabel("window start")
    ax.set_ylabel(d.get("ylabel", "gap"), fontsize=8)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    return fig


_PLOTS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "windows": plot_windows,
    "audit": plot_audit,
    "rates": plot_rates,
    "sequential_path": plot_sequential_path,
    "sequential_repeats": plot_sequential_repeats,
    "confidence_sequence": plot_confidence_sequence,
    "radius_curve": plot_radius_curve,
    "radius_shift": plot_radius_shift,
    "radius_pairs": plot_radius_pairs,
    "twosource": plot_twosource,
    "collab_methods": plot_collab_methods,
    "collab_nodes": plot_collab_nodes,
    "collab_trajectory": plot_collab_trajectory,
    "collab_suspicion": plot_collab_suspicion,
    "collab_sweep": plot_collab_sweep,
    "xy": plot_xy,
    "estimates": plot_estimates,
}

_ID = re.compile(r'\bid="([^"]+)"')


def _accessible(svg: str, prefix: str, spec: FigureSpec) -> str:
    svg = svg[svg.index("<svg"):]  # drop the XML declaration and doctype
    ids = set(_ID.findall(svg))
    for old in sorted(ids, key=len, reverse=True):
        new = f"{prefix}-{old}"
        svg = svg.replace(f'id="{old}"', f'id="{new}"').replace(f"#{old})", f"#{new})")
        svg = svg.replace(f'href="#{old}"', f'href="#{new}"')
    head_end = svg.index(">") + 1
    opening = svg[:head_end]
    opening = re.sub(r'\s(width|height)="[^"]*"', "", opening)
    opening = opening.replace(
        "<svg", f'<svg role="img" aria-labelledby="{prefix}-title {prefix}-desc" '
                f'class="figure-svg" focusable="false"', 1)
    return (opening + f'<title id="{prefix}-title">{escape(spec.caption)}</title>'
            f'<desc id="{prefix}-desc">{escape(spec.alt)}</desc>' + svg[head_end:])


#: At most this many groups (bars, rows, nodes, series) per figure; the section's tables keep
#: them all. More would make the figure unreadable and its layout slow (2,000 bars).
MAX_GROUPS = 30
#: Text from data (group names, labels) is cut to this many characters in figures.
MAX_LABEL = 40
#: The text alternative (``<desc>``) is cut to this many characters.
MAX_ALT = 4000
_CAPPED = ("groups", "rows", "nodes", "methods", _metrics.DI.short, "detectors")


def short(text: str, limit: int = MAX_LABEL) -> str:
    """``text`` cut to ``limit`` characters (with an ellipsis)."""
    return text if len(text) <= limit else text[:limit - 1] + "\u2026"


def _bounded(x: Any, capped: list[int], key: str = "") -> Any:
    """Data of a figure with every string cut to :data:`MAX_LABEL` and every per-group list or
    series mapping cut to :data:`MAX_GROUPS` (the numbers of elements dropped go to ``capped``)."""
    if isinstance(x, str):
        return short(x)
    if isinstance(x, dict):
        items = list(x.items())
        if key == "series" and len(items) > MAX_GROUPS:
            capped.append(len(items))
            items = items[:MAX_GROUPS]
        return {k: _bounded(v, capped, k) for k, v in items}
    if isinstance(x, list):
        if key in _CAPPED and len(x) > MAX_GROUPS:
            capped.append(len(x))
            x = x[:MAX_GROUPS]
        return [_bounded(v, capped) for v in x]
    return x


def bounded_spec(spec: FigureSpec) -> FigureSpec:
    """``spec`` as it is drawn: labels cut, at most :data:`MAX_GROUPS` groups (the caption says
    how many are shown), caption and text alternative at most :data:`MAX_ALT` characters.
    Idempotent (the report applies it when built, :func:`render_svg` again)."""
    if spec.data.get("_bounded"):
        return spec
    capped: list[int] = []
    data = _bounded(spec.data, capped)
    data["_bounded"] = True
    total = data.get("n_groups")
    if isinstance(total, int) and total > len(data.get("groups") or ()):
        capped.append(total)  # the adapter chose which groups to draw
    caption = spec.caption
    if capped:
        caption += (f" The figure shows the first {MAX_GROUPS} of {max(capped):,}; the table "
                    f"lists them all.")
    alt = spec.alt if len(spec.alt) <= MAX_ALT else (
        spec.alt[:MAX_ALT - 60] + "\u2026 (cut; the tables list every value)")
    if len(caption) > MAX_ALT:
        caption = caption[:MAX_ALT - 1] + "\u2026"
    return FigureSpec(spec.plot, data, alt, caption)


def render_svg(spec: FigureSpec, prefix: str) -> str:
    """The figure of ``spec`` as inline SVG markup with ids prefixed by ``prefix``.

    Text from data is drawn literally: mathtext is off (``$...$`` in a group name is text, not
    a formula) and TeX is never used. Labels are cut and groups capped (:func:`bounded_spec`).
    Matplotlib's warnings (layout) are kept off the terminal: the figure is drawn either way.
    """
    mpl = import_optional("matplotlib", feature="the report's figures")
    spec = bounded_spec(spec)
    fn = _PLOTS[spec.plot]
    with mpl.rc_context({"svg.fonttype": "none", "svg.hashsalt": "fairprobe",
                         "font.size": 9, "axes.spines.top": False,
                         "axes.spines.right": False, "font.family": "sans-serif",
                         "text.parse_math": False, "text.usetex": False}), \
            warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fig = fn(spec.data)
        buf = io.StringIO()
        fig.savefig(buf, format="svg", metadata={"Date": None})
    return _accessible(buf.getvalue(), prefix, spec)
