"""Fairness over time: each window's findings from windowed counts, and their figure.

Each window's interval is the audit's simultaneous interval *for that window* at the chosen
level: it covers that window's gap with probability >= the level, but over many windows some
intervals miss (pointwise in time). The statement valid over every window looked at is the
monitor's (:mod:`fairprobe.scale.monitor`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fairprobe.errors import DataError

__all__ = ["plot_windows", "window_findings"]


def window_findings(counts: Any, metrics: Sequence[str], **options: Any) -> list[dict[str, Any]]:
    """Per window (in time order): its rows and, per metric, the finding of the window's
    :class:`~fairprobe.stats.frame.AuditFrame` (estimate, pair, interval, verdict), or why it
    could not be summarised. ``options`` as :meth:`AuditFrame.from_counts`."""
    from fairprobe.stats.frame import AuditFrame, fairness_metric_name

    if counts.spec.window is None:
        raise DataError("per-window findings need a time column: give --time-col and --window.")
    names = [fairness_metric_name(m) for m in metrics]
    width = _width(counts.spec.window)
    out = []
    for start in counts.windows():
        part = counts.window(start)
        rec: dict[str, Any] = {"start": start.isoformat(), "end": (start + width).isoformat(),
                               "n": part.n_rows, "findings": {}}
        try:
            frame = AuditFrame.from_counts(part, **options)
        except DataError as exc:
            rec["not_summarised"] = {m: str(exc) for m in names}
            out.append(rec)
            continue
        for m in names:
            try:
                s = frame.summary(m)
            except DataError as exc:
                rec.setdefault("not_summarised", {})[m] = str(exc)
                continue
            rec["findings"][m] = {
                "estimate": _num(s.estimate), "pair": list(s.pair), "low": _num(s.low),
                "high": _num(s.high), "level": s.confidence_level, "verdict": s.verdict,
                "threshold": s.threshold, "compared": len(s.compared)}
        out.append(rec)
    return out


def _num(x: float) -> float | None:
    return float(x) if math.isfinite(float(x)) else None


def _width(window: str) -> Any:
    from fairprobe.scale.counts import window_width

    return window_width(window)


def plot_windows(windows: list[dict[str, Any]], path: str | Path, *,
                 monitors: Sequence[Any] = (), title: str = "") -> Path:
    """A figure (SVG or PNG by the suffix) of each metric over the windows with its
    per-window interval and threshold, and the monitor's log-wealth against its alarm line."""
    from fairprobe._extras import import_optional

    import_optional("matplotlib", feature="the time-series figure")
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd

    from fairprobe._io import write_file

    metrics = list(dict.fromkeys(m for w in windows for m in w["findings"]))
    rows = len(metrics) + (1 if monitors else 0)
    if rows == 0:
        raise DataError("no window has a finding to plot (too few rows per group?).")
    fig, axes = plt.subplots(rows, 1, figsize=(8, 2.6 * rows), squeeze=False, sharex=True)
    for ax, m in zip(axes[:, 0], metrics, strict=False):
        pts = [(pd.Timestamp(w["start"]), w["findings"][m]) for w in windows
               if m in w["findings"]]
        x = [p[0] for p in pts]
        est = [p[1]["estimate"] for p in pts]
        lo = [p[1]["low"] for p in pts]
        hi = [p[1]["high"] for p in pts]
        ax.fill_between(x, lo, hi, alpha=0.25, step="mid", label="per-window interval")
        ax.plot(x, est, marker=".", lw=1, label="estimate")
        ax.axhline(pts[0][1]["threshold"], color="k", ls="--", lw=0.8, label="threshold")
        ax.set_ylabel(m.replace("_", " "), fontsize=8)
        ax.legend(fontsize=7, loc="upper left")
    if monitors:
        ax = axes[-1, 0]
        for mon in monitors:
            ax.plot([pd.Timestamp(w) for w in mon.windows], mon.log_wealth, lw=1,
                    label=f"{mon.metric} log wealth")
            ax.axhline(mon.log_threshold, ls="--", lw=0.8, color="r")
        ax.set_ylabel("monitor log M_t", fontsize=8)
        ax.legend(fontsize=7, loc="upper left")
    fig.autofmt_xdate()
    if title:
        fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    buf = io.BytesIO()
    fmt = "png" if str(path).lower().endswith(".png") else "svg"
    fig.savefig(buf, format=fmt)
    plt.close(fig)
    return write_file(path, buf.getvalue(), what="--figure")
