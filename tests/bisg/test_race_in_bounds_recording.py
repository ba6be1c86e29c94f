"""``--race-in-bounds`` when whether race is recorded depends on race (its assumption fails):
the experiment's recording is what it says, and at a few seeds its tightened bounds behave as
``experiments/results/bisg/race_in_bounds.json`` records over 200 (``docs/proxy.md``)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np

SCRIPT = Path(__file__).resolve().parents[2] / "experiments" / "bisg" / "race_in_bounds.py"


def _experiment():
    spec = importlib.util.spec_from_file_location("race_in_bounds_experiment", SCRIPT)
    assert spec is not None and spec.loader is not None
    exp = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(exp)
    return exp


def test_recording_depends_on_race_as_stated() -> None:
    exp = _experiment()
    race = np.array(["black"] * 20_000 + ["white"] * 20_000 + ["hispanic"] * 20_000)
    got = exp.recorded(race, exp.SCHEMES["race-dependent"], seed=0)
    shares = {r: float((got[race == r] >= 0).mean()) for r in ("black", "white", "hispanic")}
    assert abs(shares["black"] - 0.20) < 0.02 and abs(shares["white"] - 0.60) < 0.02
    assert abs(shares["hispanic"] - 0.60) < 0.02
    rec = got >= 0
    from fairprobe.bisg.tables import RACES

    assert all(RACES[c] == r for c, r in zip(got[rec][:50], race[rec][:50], strict=True))


def test_tightened_bounds_at_a_few_seeds_where_recording_depends_on_race() -> None:
    exp = _experiment()
    recs = [r for s in (0, 1) for r in exp.one_seed(s, 20_000, 0.05)]
    dep = [r for r in recs if r["scheme"] == "race-dependent-extreme"]
    alone = {(r["seed"], r["group"]): r for r in dep if r["variant"] == "proxy_alone"}
    tight = [r for r in dep if r["variant"] == "race_in_bounds"]
    # narrower than the proxy's alone, and covering the true gap at these seeds (as over the
    # 200 of the committed result: not a guarantee, the assumption fails here)
    assert all(t["high"] - t["low"] < alone[(t["seed"], t["group"])]["high"]
               - alone[(t["seed"], t["group"])]["low"] for t in tight)
    assert all(t["covered"] for t in tight)
