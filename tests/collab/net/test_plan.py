"""The networked run's set-up equals the simulator's; node query sets."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fairprobe.collab import simulate as sim
from fairprobe.collab.net.driver import load_query_set
from fairprobe.collab.net.plan import auditor_ids, honest_share, plan_network, sim_config
from fairprobe.collab.partition import item_types, local_counts
from fairprobe.datasets import get_population
from fairprobe.errors import ConfigError


def test_plan_is_the_simulators_run():
    kw = dict(case="civil-near-fair", honest=6, attackers=2, seed=3, n=500, alpha=1.0,
              max_rounds=150)
    plan = plan_network(**kw)
    cfg = sim_config(**kw)
    res = sim.simulate(cfg)
    assert [i for i, a in enumerate(plan.is_attacker) if a] == list(res.attacker_positions)
    assert plan.rounds == res.rounds
    adj, _ = sim._graph(cfg)
    assert all(sorted(plan.neighbours[i]) == np.flatnonzero(adj[i]).tolist()
               for i in range(8))
    assert plan.ids == auditor_ids(8) == [f"a{i:02d}" for i in range(8)]
    assert plan.honest_dp == pytest.approx(res.honest_dp)


def test_honest_share_rows_give_the_simulators_counts_and_increments():
    pop = get_population("civil-near-fair")
    in_a_all, dec_all = pop.answers()
    cfg = sim_config(case="civil-near-fair", honest=4, attackers=0, seed=9, n=700, alpha=0.5,
                     max_rounds=150)
    setup = sim.prepare_honest(cfg)
    seen = []
    for i in range(4):
        rows, in_a, sampler = honest_share(case="civil-near-fair", honest=4, alpha=0.5, seed=9,
                                           min_per_group=30, index=i)
        seen.append(rows)
        # the local items are the simulator's, row for row
        types = item_types(setup.cells[i])
        got = np.where(in_a, 0, 2) + (dec_all[rows] == 0)
        assert np.array_equal(got, types)
        assert np.array_equal(in_a, in_a_all[rows])
        # and the query order gives the simulator's per-round increments
        inc = []
        for _ in range(setup.rounds):
            idx = sampler.draw(cfg.n)
            d, g = dec_all[rows][idx], in_a[idx]
            inc.append([int(d[g].sum()), int(g.sum()), int(d[~g].sum()), int((~g).sum())])
        assert np.array_equal(np.array(inc), setup.increments[:, i])
        assert tuple(np.array(inc).sum(axis=0)) == tuple(local_counts(setup.cells[i]))
    # the shares partition the population: no row twice, none left out
    allrows = np.concatenate(seen)
    assert np.unique(allrows).size == allrows.size == in_a_all.size


def test_file_query_set(tmp_path):
    df = pd.DataFrame({"x": [1, 2, 3, 4, 5], "sex": ["f", "m", "f", "m", "m"]})
    df.to_csv(tmp_path / "q.csv", index=False)
    spec = {"kind": "file", "path": str(tmp_path / "q.csv"), "group_column": "sex",
            "group_a": "f"}
    records, in_a, sampler = load_query_set(spec, 7, False)
    assert records == [{"x": v} for v in [1, 2, 3, 4, 5]]
    assert in_a.tolist() == [True, False, True, False, False]
    assert sorted(sampler.draw(5).tolist()) == [0, 1, 2, 3, 4]
    for bad, match in [({**spec, "group_column": "nope"}, "no column"),
                       ({"kind": "file", "path": "x"}, "group_column"),
                       ({"kind": "web"}, "kind must be")]:
        with pytest.raises(ConfigError, match=match):
            load_query_set(bad, 7, False)
