"""Shared helpers of the collaborative-audit experiments (tables, figures, paper numbers)."""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

RESULTS = Path(__file__).resolve().parents[1] / "results" / "collab"


def fair_populations() -> dict[str, Any]:
    """Fair populations built from the teacher case's group sizes: ``fair-0`` (DP 0),
    ``fair+0.045`` (inside the band 0.05) and ``fair-edge`` (DP +0.0500: on the band's edge,
    still fair)."""
    from fairprobe.datasets.populations import Population

    return {
        "fair-0": Population("fair-0", "bios", "teacher sizes, equal rates", 71_261, 63_018,
                             0.080, 0.080, 0.0),
        "fair+0.045": Population("fair+0.045", "bios", "teacher sizes, DP +0.045", 71_261,
                                 63_018, 0.1025, 0.0575, 0.045),
        "fair-edge": Population("fair-edge", "bios", "teacher sizes, DP +0.05", 71_261,
                                63_018, 0.1050, 0.0550, 0.05),
    }
MAIN_METHODS = ("none", "median", "trimmed-mean", "auditopus")
LABELS = {
    "none": "No-defense",
    "median": "Median",
    "trimmed-mean": "Trimmed mean",
    "auditopus": "Auditopus",
    "median-local-dp": "Median (local DP)",
    "trimmed-mean-local-dp": "Trimmed mean (local DP)",
}
CASE_LABEL = {
    "bios-very-unfair": "Very unfair (nurse)",
    "bios-moderate": "Moderate (physician)",
    "bios-near-fair": "Near-fair (teacher)",
    "civil-very-unfair": "Very unfair (Chr. vs Mus.)",
    "civil-moderate": "Moderate (Chr. vs Jew.)",
    "civil-near-fair": "Near-fair (Black vs White)",
}


def summarise(
    rows: Iterable[dict[str, Any]], cases: Sequence[str], methods: Sequence[str], kmin: int = 1
) -> dict[str, dict[str, dict[str, float]]]:
    """ASR (%) and mean |error| per case (and "all") and method over runs with K >= kmin."""
    by: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        if r["attackers"] >= kmin:
            by[(r["case"], r["method"])].append(r)
    out: dict[str, dict[str, dict[str, float]]] = {}
    for c in [*cases, "all"]:
        out[c] = {}
        for m in methods:
            rs = [r for cc in cases if c in (cc, "all") for r in by[(cc, m)]]
            if not rs:
                continue
            err = np.array([np.nan if r["error"] is None else r["error"] for r in rs])
            out[c][m] = {
                "asr": 100.0 * float(np.mean([r["fooled"] for r in rs])),
                "mae": float(np.nanmean(np.abs(err))),
                "mean_error": float(np.nanmean(err)),
                "runs": len(rs),
            }
    return out


def per_k(
    rows: Iterable[dict[str, Any]], case: str, method: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """K values, ASR (%), mean error and its std over seeds for one case and method."""
    by: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        if r["case"] == case and r["method"] == method:
            by[r["attackers"]].append(r)
    ks = np.array(sorted(by))
    asr = np.array([100 * np.mean([r["fooled"] for r in by[k]]) for k in ks])
    err = [np.array([r["error"] for r in by[k]], dtype=float) for k in ks]
    return ks, asr, np.array([e.mean() for e in err]), np.array([e.std() for e in err])


def seed_spread(
    rows: Iterable[dict[str, Any]], case: str, method: str, kmin: int = 1, n_boot: int = 2000
) -> tuple[float, float]:
    """Bootstrap std over seeds of (ASR %, MAE) for one case/method (resampling whole seeds)."""
    by: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        if r["case"] == case and r["method"] == method and r["attackers"] >= kmin:
            by[r["seed"]].append(r)
    seeds = sorted(by)
    if not seeds:
        return float("nan"), float("nan")
    rng = np.random.default_rng(0)
    asr, mae = [], []
    for _ in range(n_boot):
        pick = rng.choice(seeds, len(seeds))
        rs = [r for s in pick for r in by[s]]
        asr.append(100 * np.mean([r["fooled"] for r in rs]))
        mae.append(np.mean([abs(r["error"]) for r in rs]))
    return float(np.std(asr)), float(np.std(mae))


class Timer:
    def __enter__(self) -> Timer:
        self.t0, self.c0 = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.perf_counter() - self.t0
