"""More liars than the declared K, against the hull-aware liar: what the docs state holds.

Without verification a decided verdict is guaranteed only against at most ``certified_k`` liars
(Theorem 1 at each ``k``; Theorem 2: nothing narrower is sound), so ``K + 1`` hull-aware liars
can make it wrong -- and whenever it is wrong, ``certified_k`` is below the number of liars. With
the liars' number declared, or with verification on (the fabricators are proven and dropped), it
is never wrong. Every bundled population, ``K = 1``, ``K + 1`` and ``K + 2`` liars."""

from __future__ import annotations

import pytest

from fairprobe.collab import simulate as sim
from fairprobe.collab.verify import DEFAULT_RATE
from fairprobe.datasets.populations import POPULATIONS


def _run(case, liars, declared, verify=None, seed=0):
    cfg = sim.SimConfig(case=case, honest=20, attackers=liars, seed=seed, attack="hull-aware",
                        max_liars=declared, verify_rate=verify)
    r = sim.simulate(cfg, bounded_only=True)
    truth = "fair" if abs(r.honest_dp) <= cfg.tau else "unfair"
    return r, truth


def test_two_hull_aware_liars_make_an_unfair_case_fair_at_k_1():
    r, truth = _run("civil-moderate", 2, 1)
    assert truth == "unfair" and r.bounded["verdict"] == "fair"
    # the verdict said what it withstands: fewer liars than there are
    assert r.bounded["certified_k"] is not None and r.bounded["certified_k"] < 2


@pytest.mark.parametrize("case", list(POPULATIONS))
@pytest.mark.parametrize("liars", [2, 3])
def test_beyond_k_what_holds(case, liars):
    r, truth = _run(case, liars, 1)
    v = r.bounded["verdict"]
    if v not in (truth, "undetermined"):
        assert r.bounded["certified_k"] < liars
    r, truth = _run(case, liars, liars)  # Theorem 1's condition met
    assert r.bounded["verdict"] in (truth, "undetermined")
    r, truth = _run(case, liars, 1, verify=DEFAULT_RATE)  # fabricators proven and dropped
    assert r.bounded["verdict"] in (truth, "undetermined")
