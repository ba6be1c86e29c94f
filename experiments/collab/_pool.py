"""Run many simulations on a process pool (experiments that vary more than the sweep grid)."""

from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from fairprobe.collab.simulate import SimConfig, simulate
from fairprobe.errors import FairprobeError


def _one(args: tuple[dict[str, Any], bool]) -> dict[str, Any]:
    cfg_d, traj = args
    cfg = SimConfig(**cfg_d)
    try:
        r = simulate(cfg, trajectory=traj)
    except FairprobeError as exc:  # e.g. no feasible partition: the cell is left out
        return {"config": cfg.to_dict(), "error": str(exc)}
    out: dict[str, Any] = {
        "config": cfg.to_dict(),
        "rows": r.rows(),
        "rounds": r.rounds,
        "true_dp": r.true_dp,
    }
    if traj and r.trajectory is not None:
        out["trajectory"] = {k: v.tolist() for k, v in r.trajectory.items()}
    return out


def run_many(
    configs: list[SimConfig], trajectory: bool = False, workers: int | None = None
) -> list[dict[str, Any]]:
    payload = []
    for c in configs:
        d = c.to_dict()
        d["extra_betas"] = tuple(d["extra_betas"])
        payload.append((d, trajectory))
    with ProcessPoolExecutor(max_workers=workers or os.cpu_count() or 1) as ex:
        return list(ex.map(_one, payload, chunksize=4))
