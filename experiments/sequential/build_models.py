"""Train the two audited Adult models (seed 0) and save them where the experiments read them.

    .venv/bin/python experiments/sequential/build_models.py [--seed 0] [--out DIR]

Writes ``mlp.joblib`` and ``mlp-fair.joblib`` (default ``.fairprobe/sequential-models/``, not
committed: rebuild them, it takes about two minutes) and prints their test-split accuracy and gaps.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from fairprobe.datasets.adult import load_adult
from fairprobe.platform.model import AUDIT_FEATURES
from fairprobe.sequential.models import build_adult_models, model_digest

DEFAULT_OUT = Path(".fairprobe") / "sequential-models"


def describe(models: dict) -> list[dict]:
    te = load_adult("test", names_seed=None)
    X = te[list(AUDIT_FEATURES)]
    y = te["income"].to_numpy()
    f = te["sex"].to_numpy() == "Female"
    rows = []
    for name, m in models.items():
        d, p, z = m.predict(X), m.predict_proba(X)[:, 1], m.decision_function(X)
        pos = y == 1
        rows.append(
            {
                "model": name,
                "digest": model_digest(m),
                "accuracy": float((d == y).mean()),
                "sp_decisions": float(d[~f].mean() - d[f].mean()),
                "sp_scores": float(p[~f].mean() - p[f].mean()),
                "sp_logits": float(z[~f].mean() - z[f].mean()),
                "eo_decisions": float(d[~f & pos].mean() - d[f & pos].mean()),
                "eo_scores": float(p[~f & pos].mean() - p[f & pos].mean()),
                "eo_logits": float(z[~f & pos].mean() - z[f & pos].mean()),
            }
        )
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    a = ap.parse_args()
    t0 = time.perf_counter()
    models = build_adult_models(seed=a.seed, out_dir=a.out)
    print(f"trained in {time.perf_counter() - t0:.0f} s -> {a.out}")
    for r in describe(models):
        print(
            f"{r['model']:9s} {r['digest']} acc {r['accuracy']:.3f}  gap (male - female): "
            + "  ".join(f"{k} {v:+.3f}" for k, v in r.items() if k.startswith(("sp_", "eo_")))
        )


if __name__ == "__main__":
    main()
