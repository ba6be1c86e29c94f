"""The worked example of ``docs/proxy.md``: one lender's file, race not recorded.

40,000 applicants drawn from the census tables (``fairprobe.bisg.simulate``, seed 7): Hispanic
applicants approved far less often than White ones, decisions also depending on the place's
income. The script writes the file, audits it as ``fairprobe audit --predictions ... --proxy
bisg`` does (``proxy_job``), and saves the figures the page quotes to
``experiments/results/bisg/worked_example.json``; ``tests/bisg/test_worked_example.py``
recomputes them.

    python experiments/bisg/worked_example.py
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parents[1] / "results" / "bisg" / "worked_example.json"

#: The population of the example.
SPEC: dict[str, Any] = {"n": 40000, "seed": 7, "race_effect": {"hispanic": -3.0, "black": -0.4},
                        "income_effect": 0.3}


def compute(workdir: Path) -> dict[str, Any]:
    from fairprobe.bisg.job import proxy_job
    from fairprobe.bisg.simulate import draw_population

    pop = draw_population(SPEC["n"], seed=SPEC["seed"], race_effect=SPEC["race_effect"],
                          income_effect=SPEC["income_effect"])
    path = workdir / "applications.csv"
    pop.frame.assign(race=pop.race).to_csv(path, index=False)
    doc = proxy_job(path, y_pred_col="approved", surname_col="surname", zip_col="zip",
                    groups=["hispanic", "black"], race_col="race").to_dict()
    out: dict[str, Any] = {"spec": SPEC, "verdict": doc["verdict"],
                           "match": {k: doc["match"][k] for k in
                                     ("rows", "surname_matched", "geography_matched",
                                      "excluded")},
                           "truth": {g: pop.truth[g] - pop.truth["white"]
                                     for g in ("hispanic", "black")},
                           "comparisons": {}}
    for c in doc["comparisons"]:
        est = c["estimates"]
        out["comparisons"][c["group"]] = {
            "region": c["bounds"]["region"], "low": c["bounds"]["low"],
            "high": c["bounds"]["high"], "level": c["bounds"]["level"],
            "verdict": c["finding"]["verdict"],
            "weighted": est["weighted"]["finding"]["estimate"],
            "birdie": est["birdie"]["finding"]["estimate"],
        }
    out["direct"] = {d["group"]: {"estimate": d["estimate"], "low": d["low"], "high": d["high"],
                                  "verdict": d["verdict"]} for d in doc["validation"]["direct"]}
    out["brier"] = doc["validation"]["calibration"]["brier"]
    return out


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        res = compute(Path(tmp))
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(res, indent=1) + "\n")
    print(json.dumps(res, indent=1))
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
