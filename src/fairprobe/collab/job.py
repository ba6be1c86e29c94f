"""Collaborative audits as one call each: what ``fairprobe collab simulate`` and ``fairprobe
collab demo`` do.

The commands parse their flags, call these functions and print and write what they return; a
Python user gets the same documents. ``fairprobe collab sweep`` is :func:`fairprobe.collab.sweep.
sweep` itself (it writes its resumable results file as runs arrive), and ``fairprobe node run``
is :func:`fairprobe.collab.net.node.run_node`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fairprobe.documents import Job

__all__ = ["nodes_job", "simulate_job"]


def simulate_job(cfg: Any) -> Job:
    """Simulate one collaborative audit (:func:`fairprobe.collab.simulate.simulate`).

    Parameters
    ----------
    cfg : fairprobe.collab.simulate.SimConfig
        The population, auditors, attack, protocol and verification parameters.

    Returns
    -------
    Job
        ``kind="collab-simulate"``; ``.result`` is the :class:`~fairprobe.collab.simulate.
        RunResult` (every method's estimate and verdict).
    """
    from fairprobe.collab.simulate import simulate
    from fairprobe.provenance import Provenance

    return Job("collab-simulate", simulate(cfg), Provenance.capture(seed=cfg.seed))


def nodes_job(spec: Any, *, workdir: Path | None = None, progress: bool = False) -> Job:
    """Run a collaborative audit with real node processes on 127.0.0.1 to the end
    (:func:`fairprobe.collab.net.launcher.run_demo`).

    Parameters
    ----------
    spec : fairprobe.collab.net.launcher.DemoSpec
        The network: honest and attacker nodes, population or platform, protocol, verification.
    workdir : Path, optional
        Keep keys, roster, configs and state here (default: a temporary directory).
    progress : bool
        Print the rounds as they finish (to standard error).

    Returns
    -------
    Job
        ``kind="collab-nodes"``; ``.result`` is the summary dict (``nodes``, ``verdict``,
        ``interval``, ``exclusions``, ...).
    """
    from fairprobe.collab.net.launcher import run_demo
    from fairprobe.provenance import Provenance

    out = run_demo(spec, workdir=workdir, progress=progress)
    prov = Provenance.capture(
        seed=spec.seed,
        query_pool={"case": spec.case} if spec.platform_url is None else {"adult": "test"},
        notes=("collaborative audit run by real node processes on 127.0.0.1",),
    )
    return Job("collab-nodes", out, prov)
