"""Peers of ``fairprobe discover`` on one CSV file, run in the benchmark environment.

    python benchmarks/_discover_peers.py DATA.csv FEATURES Y_COL

Runs AIF360's MDSS bias scan (``aif360.detectors.mdss_detector.bias_scan``, Bernoulli scoring,
over-predicted direction) and pysubgroup's beam search (WRAcc, depth 2, the top 10) and prints
one JSON line: what each reports, and its seconds. Called by ``bench_discover.py`` with the
python of an environment that has aif360 and pysubgroup (not fairprobe's dependencies).
"""

import json
import sys
import time

import pandas as pd


def main() -> None:
    path, features, y = sys.argv[1], sys.argv[2].split(","), sys.argv[3]
    df = pd.read_csv(path)
    X = df[features].astype(str)
    out = {}
    from aif360.detectors.mdss_detector import bias_scan

    t = time.perf_counter()
    subset, score = bias_scan(data=X, observations=df[y].astype(float),
                              expectations=pd.Series(float(df[y].mean()), index=df.index),
                              scoring="Bernoulli", overpredicted=True)
    out["mdss"] = {"subgroups": [{k: [str(v) for v in vals] for k, vals in subset.items()}],
                   "score": float(score), "seconds": time.perf_counter() - t}
    import pysubgroup as ps

    t = time.perf_counter()
    data = X.assign(**{y: df[y].astype(int)})
    target = ps.BinaryTarget(y, 1)
    space = ps.create_selectors(data, ignore=[y])
    task = ps.SubgroupDiscoveryTask(data, target, space, result_set_size=10, depth=2,
                                    qf=ps.WRAccQF())
    res = ps.BeamSearch().execute(task)
    groups = []
    for _quality, sg in res.to_descriptions():
        conds = {}
        for sel in sg.selectors:
            conds[str(sel.attribute_name)] = [str(sel.attribute_value)]
        groups.append(conds)
    out["pysubgroup"] = {"subgroups": groups, "seconds": time.perf_counter() - t}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
