"""Shared helpers of the radius experiments (paths, JSON, timing)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

RESULTS = Path(__file__).resolve().parents[1] / "results" / "radius"
METHODS = ("exact", "core", "greedy", "worst-group")


def save(name: str, obj: Any) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / name

    def clean(x: Any) -> Any:
        if isinstance(x, dict):
            return {str(k): clean(v) for k, v in x.items()}
        if isinstance(x, list | tuple):
            return [clean(v) for v in x]
        if isinstance(x, np.generic):
            x = x.item()
        if isinstance(x, float) and not math.isfinite(x):
            return None
        return x

    path.write_text(json.dumps(clean(obj), indent=1) + "\n")
    return path


def adult_correctness(n_train: int | None = None, seed: int = 0) -> dict[str, np.ndarray]:
    """A neural network (sklearn MLP) trained on Adult train; correctness on the test split.

    Returns per test row: ``correct`` (0/1), ``sex`` and ``race`` (White / NonWhite).
    """
    import pandas as pd
    from sklearn.compose import ColumnTransformer
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    from fairprobe.datasets import load_adult

    num = ["age", "education-num", "capital-gain", "capital-loss", "hours-per-week"]
    cat = ["workclass", "marital-status", "occupation", "relationship", "race", "sex"]
    tr = load_adult("train", names_seed=None).fillna("missing")
    te = load_adult("test", names_seed=None).fillna("missing")
    if n_train is not None:
        tr = tr.sample(n=n_train, random_state=seed)
    pre = ColumnTransformer([("num", StandardScaler(), num),
                             ("cat", OneHotEncoder(handle_unknown="ignore"), cat)])
    model = make_pipeline(pre, MLPClassifier(hidden_layer_sizes=(32,), max_iter=60,
                                             early_stopping=True, random_state=seed))
    model.fit(tr[num + cat], tr["income"])
    pred = model.predict(te[num + cat])
    correct = (pred == te["income"].to_numpy()).astype(float)
    race = np.where(te["race"].to_numpy() == "White", "White", "NonWhite")
    return {"correct": correct, "sex": te["sex"].to_numpy(), "race": race,
            "accuracy": np.array(float(correct.mean())), "n": np.array(len(pd.Index(te.index)))}
