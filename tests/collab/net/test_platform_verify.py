"""Verification against a live model: the demo's attacker commits Adult records, honest nodes
re-ask the platform server for opened ones, prove the falsified answers and exclude it.

Real processes on 127.0.0.1: the platform server and one node process per auditor."""

from __future__ import annotations

import pytest

from fairprobe.collab.net.launcher import DemoSpec, run_demo

pytestmark = pytest.mark.timeout(300)


def test_a_fabricating_node_is_proven_by_re_asking_the_platform(tmp_path):
    from fairprobe.platform import PlatformProcess

    with PlatformProcess() as plat:
        base = dict(honest=3, attackers=1, seed=1, n=2000, round_timeout=120,
                    platform_url=plat.url)
        out = run_demo(DemoSpec(**base, verify=True, max_liars=1), workdir=tmp_path / "v")
        off = run_demo(DemoSpec(**base, verify=False, max_liars=0), workdir=tmp_path / "n")
    honest = [x for x in out["nodes"] if x["role"] == "honest"]
    (liar,) = [x["id"] for x in out["nodes"] if x["role"] == "attacker"]
    # every honest node holds a proof against the attacker and decides without it
    assert out["exclusions"][liar]["excluded_by"] == 3
    assert all(x["finding"]["verdict"] == "unfair" for x in honest)
    assert out["verdict"] == "unfair"
    assert out["escape_bound"] is not None and out["escape_bound"] < 0.5
    # the same audit trusting every source (K = 0, no verification) is fooled: it says fair
    assert off["verdict"] == "fair"
