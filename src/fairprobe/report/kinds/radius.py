"""Consistency radius: the flip curve (metric vs divergence) and the radius."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fairprobe.report import assumptions as A
from fairprobe.report._read import (
    Doc,
    extra_assumptions,
    floats,
    fmt,
    mapping,
    num,
)
from fairprobe.report.document import FigureSpec, Section, Table

__all__ = ["adapt_radius"]


def adapt_radius(doc: Doc, source: str, label: str) -> Section:
    r = num(doc.get("radius"))
    infinite = bool(doc.get("radius_infinite"))
    assessment = str(doc.get("assessment") or ("fair" if doc.get("fair") else "unfair"))
    phi, tol = num(doc.get("phi")), num(doc.get("tolerance"))
    div = str(doc.get("divergence", "kl")).upper()
    if infinite:
        sentence = (f"The '{assessment}' conclusion (phi = {fmt(phi)}, tolerance {fmt(tol, 3)}) "
                    f"cannot be flipped by any reweighting of the audit data.")
    else:
        sentence = (
            f"The '{assessment}' conclusion (phi = {fmt(phi)}, fair iff |phi| < {fmt(tol, 3)}) "
            f"flips only under a shift of the audit distribution with {div} >= {fmt(r, 4)}"
            + (f"; by Pinsker no event's probability moves by more than "
               f"{fmt(doc.get('pinsker_bound'))} before that." if doc.get("pinsker_bound") else ".")
        )
    short = f"'{assessment}' holds up to {div} {fmt(r, 4)}"
    figures: list[FigureSpec] = []
    tables: list[Table] = []
    notes: list[str] = []
    curve = _flip_curve(doc)
    if curve is not None:
        figures.append(FigureSpec(
            plot="radius_curve",
            data={**curve, "radius": r, "tolerance": tol, "phi": phi, "divergence": div},
            alt=(f"Least {div} shift (x axis) that moves the metric to each value (y axis), for "
                 f"{len(curve['divergence_values'])} values up to "
                 f"{fmt(max(curve['divergence_values']), 3)}; it meets the tolerance "
                 f"{fmt(tol, 3)} at the radius {fmt(r, 4)}."),
            caption=(f"Flip curve: the least {div} shift of the audit distribution that moves "
                     f"the metric to each value, with the fair band (shaded) and the "
                     f"consistency radius (dashed), where the curve first reaches the band."),
        ))
    else:
        rw = mapping(doc.get("reweighting"))
        before, after = floats(rw.get("group_mean_before")), floats(rw.get("group_mean_after"))
        groups = doc.get("groups") if isinstance(doc.get("groups"), list) else None
        if before and after and groups and len(before) == len(after) == len(groups):
            figures.append(FigureSpec(
                plot="radius_shift",
                data={"groups": [str(g) for g in groups], "before": before, "after": after,
                      "phi": phi, "phi_shifted": num(doc.get("phi_shifted")), "radius": r,
                      "tolerance": tol, "divergence": div},
                alt=(f"Group means in the audit data ({', '.join(fmt(b) for b in before)}) and "
                     f"after the smallest flipping shift ({', '.join(fmt(a) for a in after)}); "
                     f"phi moves from {fmt(phi)} to {fmt(doc.get('phi_shifted'))} at "
                     f"{div} {fmt(r, 4)}."),
                caption=("Group means before and after the least shift that flips the "
                         "conclusion (the radius); the result carries no flip curve."),
            ))
        notes.append("This result carries no flip curve (field 'flip_curve' with divergence "
                     "and metric values): no curve figure.")
    pairs = [p for p in doc.get("pairs") or [] if isinstance(p, Mapping)
             and num(p.get("radius")) is not None]
    if pairs and len(pairs) > 1:
        rows = [{"label": " vs ".join(map(str, p.get("groups") or [])), "radius": num(p["radius"]),
                 "phi": num(p.get("phi")), "fair": bool(p.get("fair"))} for p in pairs]
        figures.append(FigureSpec(
            plot="radius_pairs",
            data={"rows": rows, "radius": r, "divergence": div, "tolerance": tol},
            alt=("Radius of each pair of groups: " + ", ".join(
                f"{x['label']} {fmt(x['radius'], 5)} (phi {fmt(x['phi'])})" for x in rows)
                 + f"; the radius of the whole assessment is {fmt(r, 5)}."),
            caption=("Consistency radius of each pair of groups (the least shift that flips "
                     "that pair's comparison) and the radius of the whole assessment (dashed)."),
        ))
        tables.append(Table(
            caption="Consistency radius per pair of groups",
            header=["pair", "phi", "fair", f"radius ({div})", "certified lower bound"],
            rows=[[" vs ".join(map(str, p.get("groups") or [])), fmt(p.get("phi")),
                   "yes" if p.get("fair") else "no", fmt(p.get("radius"), 5),
                   fmt(p.get("lower_bound"), 5)] for p in pairs],
        ))
    facts = [
        ("metric phi on the audit data", fmt(phi)),
        ("fair iff", f"|phi| < {fmt(tol, 3)}"),
        ("assessment", assessment),
        (f"radius ({div})", "infinite" if infinite else fmt(r, 5)),
        ("certified lower bound", fmt(doc.get("lower_bound"), 5)),
        ("phi at the radius", fmt(doc.get("phi_shifted"))),
        ("Pinsker bound on any event", fmt(doc.get("pinsker_bound"))),
        ("method", str(doc.get("method", "n/a"))),
        ("records", fmt(doc.get("n"))),
    ]
    if doc.get("message"):
        facts.append(("note", str(doc["message"])))
    title = "Consistency radius" + (f": {label}" if label else "")
    return Section("radius", title, source, assessment, sentence, short, facts, figures, tables,
                   A.RADIUS + extra_assumptions(doc), notes)

def _flip_curve(doc: Doc) -> dict[str, Any] | None:
    curve = doc.get("curve") or doc.get("flip_curve")
    xs = ys = None
    if isinstance(curve, Mapping):
        xs = floats(curve.get("divergence") or curve.get("kl") or curve.get("radius")
                    or curve.get("budget") or curve.get("x"))
        ys = floats(curve.get("metric") or curve.get("phi") or curve.get("value")
                    or curve.get("y"))
        ys_hi = floats(curve.get("metric_high") or curve.get("phi_max"))
        ys_lo = floats(curve.get("metric_low") or curve.get("phi_min"))
        if ys is None and ys_hi and ys_lo:
            ys = ys_lo
    elif isinstance(curve, list) and curve and isinstance(curve[0], Mapping):
        keys = curve[0].keys()
        xk = next((k for k in ("divergence", "kl", "budget", "radius", "x") if k in keys), None)
        yk = next((k for k in ("metric", "phi", "value", "y") if k in keys), None)
        if xk and yk:
            xs, ys = floats([c.get(xk) for c in curve]), floats([c.get(yk) for c in curve])
        ys_hi = ys_lo = None
    else:
        return None
    if not xs or not ys or len(xs) != len(ys):
        return None
    out: dict[str, Any] = {"divergence_values": xs, "metric_values": ys}
    if ys_hi and ys_lo and len(ys_hi) == len(ys_lo) == len(xs):
        out.update(metric_low=ys_lo, metric_high=ys_hi)
    return out
