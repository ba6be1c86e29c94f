"""How often is a report's headline wrong? Simulated reports with every question at its boundary.

Each simulated report holds ``m`` questions about one model. A question is a two-group audit
(demographic parity, the exact default interval, ``fairprobe.stats.metrics``) or an every-group
audit of four groups (``AuditFrame.summary``, the exact simultaneous family); its finding goes
through the same path a report uses (``fairprobe.stats.refit`` and
``fairprobe.stats.headline.family_headline``: each counted finding recomputed at its Bonferroni
share of alpha = 0.05). The truth sits where an error is most likely:

* ``at-tolerance``: every gap exactly at the tolerance (fair, on the band's edge): a wrong
  headline is "unfair";
* ``just-outside``: every gap 0.01 above the tolerance (unfair, at the edge): a wrong headline
  is "fair";
* ``mixed``: half the questions at the tolerance, half just outside: the model is unfair, so
  "fair" is wrong (and an "unfair" headline is right).

Besides, the tests that have no valid interval, through the real sequential code
(``fairprobe.sequential.run_pool``): ``--test fixed`` at a true gap of 0.12 (tolerance 0.1,
budget 300), whose non-rejection reads "compliance", and the paper's ``glr-wald`` at a gap
exactly at the tolerance. Their findings are shown and not counted, so the headline over them
is "undetermined": the script measures how often the method says "fair" / "unfair" and how
often the headline does.

``dp+di`` cells: each question is an every-group audit of four groups answered by two metrics
of the same selection rates, demographic parity and disparate impact (``AuditFrame.summary``).
Each report's headline is computed twice from the same findings: ``after``, the rule as
shipped (the two metrics read off one shared region and charged one share,
``fairprobe.stats.region``), and ``before``, every finding charged its own share
(``family_headline(..., share_regions=False)``). The table shows the error and the decided share
(the share of headlines that say fair or unfair) of both, with standard errors; in the other
cells no question has two metrics, so both rules coincide.

    python experiments/stats/headline_error.py [--reps 2000] [--seed 0]

Writes experiments/results/stats/headline_error.json; seeds: ``--seed`` (default 0) spawns one
stream per cell.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from fairprobe.stats import AuditFrame
from fairprobe.stats.counts import CountsVector
from fairprobe.stats.finding import Finding
from fairprobe.stats.headline import Entry, family_headline
from fairprobe.stats.metrics import demographic_parity_from_counts
from fairprobe.stats.refit import rate_box, refit_family, refit_two_group

OUT = Path(__file__).resolve().parents[1] / "results" / "stats" / "headline_error.json"
TOL = 0.1
ALPHA = 0.05


def two_group_entry(rng: np.random.Generator, gap: float, n: int, q: int, tol: float) -> Entry:
    p_b = 0.3
    a = int(rng.binomial(n, p_b + gap))
    b = int(rng.binomial(n, p_b))
    r = demographic_parity_from_counts(CountsVector(a, n, b, n), tolerance=tol)
    f = r.finding
    return Entry(f"q{q}", f, f.verdict, refit_two_group(f), label=f"q{q}")


def groups_entry(rng: np.random.Generator, gap: float, n: int, q: int, tol: float) -> Entry:
    """Four groups; the largest gap (between the first and last) is ``gap``."""
    rates = np.array([0.3 + gap, 0.3 + gap / 2, 0.3 + gap / 3, 0.3])
    labels = np.repeat([f"g{i}" for i in range(4)], n)
    pred = (rng.random(4 * n) < np.repeat(rates, n)).astype(int)
    af = AuditFrame(y_pred=pred, sensitive_features=labels, tolerance=tol)
    s = af.summary("dp")
    f = s.finding
    return Entry(f"q{q}", f, f.verdict, refit_family(Finding.from_dict(f.to_dict()),
                                                     _by_group(pred, labels), "exact"),
                 label=f"q{q}")


def _by_group(pred: np.ndarray, labels: np.ndarray) -> list[dict[str, Any]]:
    """The selection-rate cells of the document's ``by_group`` table, as ``AuditFrame.to_dict``
    writes them (``refit_family`` checks that they give back the finding's own interval)."""
    out = []
    for g in dict.fromkeys(labels.tolist()):
        m = labels == g
        n = int(m.sum())
        out.append({"group": g, "rates": {"selection_rate": {"value": int(pred[m].sum()) / n,
                                                             "n": n}}})
    return out


#: ``dp+di`` truths: four groups' selection rates. At the thresholds: DP = 0.1 and DI = 0.8
#: exactly (fair, on the edge; a wrong headline is "unfair"); equal rates (fair, far from the
#: edge: a decided headline is right); DP = 0.15, DI = 0.73 (unfair: a decided one is right).
DPDI_RATES = {"at-thresholds": (0.5, 0.47, 0.43, 0.4), "equal": (0.4, 0.4, 0.4, 0.4),
              "unfair": (0.55, 0.5, 0.45, 0.4)}


def dpdi_entries(rng: np.random.Generator, truth: str, n: int, q: int, tol: float) -> list[Entry]:
    """DP and DI of four groups' selection rates, one question, through the report's path."""
    rates = np.array(DPDI_RATES[truth])
    names = [f"g{i}" for i in range(len(rates))]
    labels = np.repeat(names, n)
    pred = (rng.random(len(rates) * n) < np.repeat(rates, n)).astype(int)
    af = AuditFrame(y_pred=pred, sensitive_features=labels, tolerance=tol)
    by_group = _by_group(pred, labels)
    out = []
    for metric in ("dp", "di"):
        f = Finding.from_dict(af.summary(metric).finding.to_dict())
        out.append(Entry(f"q{q}", f, f.verdict, refit_family(f, by_group, "exact"),
                         label=f"q{q}-{metric}", region=rate_box(f, by_group, "exact")))
    return out


def _share(x: int, reps: int) -> tuple[float, float]:
    r = x / reps
    return r, math.sqrt(max(r * (1 - r), 1.0 / reps) / reps)


def cell(kind: str, truth: str, m: int, n: int, tol: float, reps: int,
         seed: Any) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    make = two_group_entry if kind == "two-group" else groups_entry
    count = {rule: {"wrong": 0, "fair": 0, "unfair": 0} for rule in ("after", "before")}
    model_unfair = truth not in ("at-tolerance", "at-thresholds", "equal")
    for _ in range(reps):
        if kind == "dp+di":
            entries = [e for i in range(m) for e in dpdi_entries(rng, truth, n, i, tol)]
        else:
            gaps = [tol if truth == "at-tolerance" else tol + 0.01] * m
            if truth == "mixed":
                gaps = [tol if i % 2 == 0 else tol + 0.01 for i in range(m)]
            entries = [make(rng, g, n, i, tol) for i, g in enumerate(gaps)]
        for rule, c in count.items():
            h = family_headline(entries, ALPHA, share_regions=rule == "after")
            c["fair"] += h.verdict == "fair"
            c["unfair"] += h.verdict == "unfair"
            c["wrong"] += (h.verdict == "fair") if model_unfair else (h.verdict == "unfair")
    rate, se = _share(count["after"]["wrong"], reps)
    out: dict[str, Any] = {
        "kind": kind, "truth": truth, "questions": m, "n_per_group": n, "tolerance": tol,
        "reps": reps, "wrong": rate, "se": se, "bound": ALPHA,
        "within": rate <= ALPHA + 2 * math.sqrt(ALPHA * (1 - ALPHA) / reps)}
    for rule, c in count.items():
        sfx = "" if rule == "after" else "_before"
        d, dse = _share(c["fair"] + c["unfair"], reps)
        w, wse = _share(c["wrong"], reps)
        out.update({f"decided{sfx}": d, f"se_decided{sfx}": dse, f"fair{sfx}": c["fair"] / reps,
                    f"unfair{sfx}": c["unfair"] / reps})
        if rule == "before":
            out.update({"wrong_before": w, "se_before": wse})
    return out


def sequential_cell(test: str, gap: float, reps: int, seed: int) -> dict[str, Any]:
    """A pool whose true SP gap is ``gap``; the test's outcome over ``reps`` query orders."""
    from fairprobe.sequential.pool import AuditPool, run_pool
    from fairprobe.sequential.results import OUTCOMES
    from fairprobe.stats.finding import Finding as F
    from fairprobe.stats.finding import Question

    rng = np.random.default_rng(seed)
    n = 20_000
    in_a = np.r_[np.ones(n, bool), np.zeros(n, bool)]
    dec = np.r_[(rng.random(n) < 0.3 + gap), (rng.random(n) < 0.3)].astype(float)
    pool = AuditPool(in_a=in_a, group_names=("a", "b"), decisions=dec)
    res = run_pool(pool, metric="sp", test=test, tolerance=TOL, budget=300, repeats=reps,
                   seed=seed)
    outcomes = [OUTCOMES[int(c)] for c in res.codes]
    said = {"violation": "unfair", "compliant": "fair", "compliance": "fair"}
    fair = unfair = head_fair = head_unfair = 0
    for o in outcomes:
        forced = said.get(o, "undetermined")
        # the finding a sequential result without a confidence sequence carries (its decision,
        # coverage "none" for glr-wald, "conditional" with no stated condition otherwise)
        f = F(Question(metric="sp_gap", kind="difference", threshold=TOL), gap, -1.0, 1.0,
              1.0 - ALPHA, "normal at the stop",
              coverage="none" if test == "glr-wald" else "conditional",
              forced=forced)  # type: ignore[arg-type]
        h = family_headline([Entry("seq", f, f.verdict)], ALPHA)
        fair += forced == "fair"
        unfair += forced == "unfair"
        head_fair += h.verdict == "fair"
        head_unfair += h.verdict == "unfair"
    r = float(reps)
    return {"test": test, "gap": gap, "tolerance": TOL, "budget": 300, "reps": reps,
            "method_fair": fair / r, "method_unfair": unfair / r,
            "se_method_fair": math.sqrt(fair / r * (1 - fair / r) / r),
            "se_method_unfair": math.sqrt(unfair / r * (1 - unfair / r) / r),
            "headline_fair": head_fair / r, "headline_unfair": head_unfair / r}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--kinds", default="two-group,groups,dp+di",
                    help="which kinds of cells to run (comma-separated); the committed result "
                         "runs all")
    args = ap.parse_args()
    kinds = set(args.kinds.split(","))
    t0 = time.perf_counter()
    seeds = np.random.SeedSequence(args.seed).spawn(32)
    rows = []
    print(f"headline error at alpha = {ALPHA}, tolerance {TOL}, {args.reps} reports a cell")
    print(f"{'kind':>10} {'truth':>13} {'m':>3} {'n':>5} {'tol':>4} | {'bound':>5} | "
          f"{'wrong':>7} {'SE':>6} {'decided':>7} {'SE':>6} | before: {'wrong':>7} {'SE':>6} "
          f"{'decided':>7} {'SE':>6}")
    # "unfair" errors need intervals above the band (tolerance 0.1); "fair" errors need
    # intervals that fit in it, so the unfair-at-the-edge cells take a band of +-0.3
    plan = ([("two-group", "at-tolerance", m, 100, 0.1) for m in (1, 3, 6)]
            + [("two-group", "just-outside", m, 100, 0.3) for m in (1, 3, 6)]
            + [("two-group", "mixed", m, 100, 0.3) for m in (2, 4, 6)]
            + [("groups", "at-tolerance", 3, 300, 0.1), ("groups", "just-outside", 3, 300, 0.3)]
            + [("dp+di", "at-thresholds", 3, 1000, 0.1), ("dp+di", "equal", 3, 2000, 0.1),
               ("dp+di", "unfair", 3, 1000, 0.1)])
    for i, (kind, truth, m, n, tol) in enumerate(plan):
        if kind not in kinds:
            continue
        r = cell(kind, truth, m, n, tol, args.reps, seeds[i])
        rows.append(r)
        print(f"{kind:>10} {truth:>13} {m:>3} {n:>5} {tol:4.1f} | {ALPHA:5.2f} | "
              f"{r['wrong']:7.4f} {r['se']:6.4f} {r['decided']:7.3f} {r['se_decided']:6.4f} | "
              f"before: {r['wrong_before']:7.4f} {r['se_before']:6.4f} "
              f"{r['decided_before']:7.3f} {r['se_decided_before']:6.4f}", flush=True)
    seq = [sequential_cell("fixed", 0.12, args.reps, args.seed + 1),
           sequential_cell("glr-wald", TOL, args.reps, args.seed + 2)]
    print("\ntests without a valid interval (shown, not counted)")
    for s in seq:
        print(f"  {s['test']:>8} at gap {s['gap']:.2f}: the test says fair {s['method_fair']:.3f} "
              f"+- {s['se_method_fair']:.3f}, unfair {s['method_unfair']:.3f} +- "
              f"{s['se_method_unfair']:.3f}; the headline says fair {s['headline_fair']:.3f}, "
              f"unfair {s['headline_unfair']:.3f}")
    out = {"alpha": ALPHA, "tolerance": TOL, "reps": args.reps, "seed": args.seed,
           "cells": rows, "sequential": seq,
           "seconds": time.perf_counter() - t0, "load_average": os.getloadavg()[0]}
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(out, indent=1))
    print(f"\n({out['seconds']:.0f} s, load average {out['load_average']:.1f}) -> {OUT}")
    bad = [r for r in rows if not r["within"]]
    if bad or any(s["headline_fair"] or s["headline_unfair"] for s in seq):
        print(f"FAIL: {bad}")
        raise SystemExit(1)


if __name__ == "__main__":
    main()
