"""The audited models of the sequential experiments: a plain and a fairness-constrained MLP.

Both are trained on the bundled UCI Adult training split over the platform's audit features
(:data:`fairprobe.platform.model.AUDIT_FEATURES`, which include ``sex``), predict ``income > 50K``
and expose the three access regimes of the paper:

- **decision** ``1{z(x) > 0}`` (``predict``), **score** ``sigmoid(z(x))`` (``predict_proba``) and
  **logit** ``z(x)`` (``decision_function``), where ``z`` is the pre-sigmoid output of the network,
  computed exactly from its weights (no clipping of probabilities).
- ``mlp``: ``MLPClassifier`` on standardised numeric and one-hot categorical features.
- ``mlp-fair``: fairlearn's reductions approach (Agarwal et al. 2018) with the
  :class:`fairlearn.reductions.GridSearch` reduction under a ``DemographicParity`` (default) or
  ``TruePositiveRateParity`` constraint, over the same MLP as base learner. GridSearch trains one
  network per Lagrange multiplier on reweighted, relabelled data and keeps a *single*
  deterministic network (the best trade-off on the training data), so the constrained model has
  genuine decisions, scores and logits. (ExponentiatedGradient returns a *randomized* mixture of
  networks whose only natural "score" is the probability of a positive decision, a step function
  of a few values with degenerate logits; we do not use it for that reason.)

:func:`build_adult_models` builds both reproducibly from a seed and saves them with joblib (the
format the platform's ``--model-file`` and :meth:`LocalModelBackend.from_file` read).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from fairprobe import metrics as _metrics
from fairprobe._validation import check_choice, check_int

__all__ = ["AuditedMLP", "MODEL_NAMES", "build_adult_models", "load_models"]

MODEL_NAMES: tuple[str, ...] = ("mlp", "mlp-fair")
FloatArray = npt.NDArray[np.float64]


class AuditedMLP:
    """A fitted preprocessing step and ``MLPClassifier`` exposing decisions, scores and logits.

    A scikit-learn-like binary classifier (``classes_ = [0, 1]``); ``feature_names_in_`` are the
    audit features, so :class:`~fairprobe.access.LocalModelBackend` and the platform server pass
    exactly those columns.
    """

    def __init__(self, pre: Any, net: Any, name: str, features: tuple[str, ...]) -> None:
        self.pre = pre
        self.net = net
        self.name = name
        self.feature_names_in_ = np.array(features, dtype=object)
        self.classes_ = np.array([0, 1])

    def transform(self, X: pd.DataFrame) -> FloatArray:
        """The network's input: the fitted scaler and one-hot encoder, applied with numpy.

        Equal to ``self.pre.transform`` (tested) but without its per-call overhead, which
        dominates one-record queries of a live audit.
        """
        num = self.pre.named_transformers_["num"]
        cat = self.pre.named_transformers_["cat"]
        cols_num = list(self.pre.transformers_[0][2])
        cols_cat = list(self.pre.transformers_[1][2])
        missing = [c for c in (*cols_num, *cols_cat) if c not in X.columns]
        if missing:
            from fairprobe.errors import DataError

            raise DataError(f"The model needs the column(s) {', '.join(map(repr, missing))}.")
        parts = [(X[cols_num].to_numpy(dtype=float) - num.mean_) / num.scale_]
        for col, cats in zip(cols_cat, cat.categories_, strict=True):
            vals = X[col].to_numpy()
            parts.append((vals[:, None] == np.asarray(cats, dtype=object)[None, :]).astype(float))
        return np.concatenate(parts, axis=1)

    def decision_function(self, X: pd.DataFrame) -> FloatArray:
        """The logit ``z(x)``: the network's output before its logistic activation."""
        from sklearn.neural_network._base import ACTIVATIONS

        h = self.transform(X)
        act = ACTIVATIONS[self.net.activation]
        n = len(self.net.coefs_)
        for i in range(n):
            h = h @ self.net.coefs_[i] + self.net.intercepts_[i]
            if i < n - 1:
                out = act(h)  # scikit-learn's activations work in place
                if out is not None:
                    h = out
        return np.asarray(h[:, 0], dtype=np.float64)

    def predict_proba(self, X: pd.DataFrame) -> FloatArray:
        z = self.decision_function(X)
        p = 1.0 / (1.0 + np.exp(-z))
        return np.column_stack([1.0 - p, p])

    def predict(self, X: pd.DataFrame) -> npt.NDArray[np.int64]:
        return (self.decision_function(X) > 0).astype(np.int64)

    def __repr__(self) -> str:
        return f"AuditedMLP({self.name!r})"


def _preprocessor() -> Any:
    from sklearn.compose import ColumnTransformer
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    from fairprobe.platform.model import CATEGORIES, NUMERIC_FEATURES

    return ColumnTransformer(
        [
            ("num", StandardScaler(), list(NUMERIC_FEATURES)),
            (
                "cat",
                OneHotEncoder(
                    categories=[list(CATEGORIES["race"]), list(CATEGORIES["sex"])],
                    handle_unknown="ignore",
                    sparse_output=False,
                ),
                ["race", "sex"],
            ),
        ]
    )


def build_adult_models(
    seed: int = 0,
    out_dir: str | Path | None = None,
    *,
    hidden: tuple[int, ...] = (32, 16),
    max_iter: int = 200,
    grid_size: int = 11,
    constraint: str = _metrics.DP.short,
    train_rows: int | None = None,
) -> dict[str, AuditedMLP]:
    """Train ``mlp`` and ``mlp-fair`` on Adult (train split) reproducibly; optionally save them.

    Parameters
    ----------
    seed : int
        Seeds the networks' initialisation and early-stopping split (and the row subsample).
    out_dir : path, optional
        Where to write ``mlp.joblib`` and ``mlp-fair.joblib`` (serve one with
        ``fairprobe platform serve --allow-pickle --model-file out_dir/mlp.joblib``).
    hidden, max_iter : MLP architecture and epochs (Adam, early stopping).
    grid_size : int
        Lagrange multipliers tried by GridSearch.
    constraint : {"dp", "tpr"}
        ``DemographicParity`` or ``TruePositiveRateParity`` (equal opportunity) for ``mlp-fair``.
    train_rows : int, optional
        Train on a random subsample (for quick tests).
    """
    from fairlearn.reductions import DemographicParity, GridSearch, TruePositiveRateParity
    from sklearn.neural_network import MLPClassifier

    from fairprobe.datasets.adult import load_adult
    from fairprobe.platform.model import AUDIT_FEATURES

    seed = check_int(seed, "seed", "build_adult_models", lo=0)
    check_choice(constraint, "constraint", "build_adult_models", (_metrics.DP.short, "tpr"))
    train = load_adult("train", names_seed=None)
    if train_rows is not None:
        k = check_int(train_rows, "train_rows", "build_adult_models", lo=100)
        idx = np.random.default_rng(seed).permutation(len(train))[:k]
        train = train.iloc[np.sort(idx)].reset_index(drop=True)
    feats = tuple(AUDIT_FEATURES)
    X = train[list(feats)]
    y = train["income"].to_numpy()
    pre = _preprocessor().fit(X)
    Xt = np.asarray(pre.transform(X), dtype=float)

    def net() -> MLPClassifier:
        return MLPClassifier(
            hidden_layer_sizes=hidden,
            max_iter=max_iter,
            early_stopping=True,
            n_iter_no_change=10,
            random_state=seed,
        )

    plain = net().fit(Xt, y)
    cons = DemographicParity() if constraint == _metrics.DP.short else TruePositiveRateParity()
    gs = GridSearch(net(), constraints=cons, grid_size=grid_size)
    gs.fit(Xt, y, sensitive_features=train["sex"].to_numpy())
    fair_net = gs.predictors_[gs.best_idx_]
    models = {
        "mlp": AuditedMLP(pre, plain, f"mlp-seed{seed}", feats),
        "mlp-fair": AuditedMLP(pre, fair_net, f"mlp-fair-{constraint}-seed{seed}", feats),
    }
    if out_dir is not None:
        import joblib

        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        for name, m in models.items():
            joblib.dump(m, out / f"{name}.joblib")
    return models


def load_models(out_dir: str | Path, *, allow_pickle: bool = False) -> dict[str, AuditedMLP]:
    """Load the models :func:`build_adult_models` saved.

    joblib files are pickles: loading one runs whatever code it holds, so a planted file in
    ``out_dir`` would run on load. ``allow_pickle=True`` says the files are yours (as the local
    backend's ``allow_pickle`` key and the platform's ``--allow-pickle`` do); without it nothing
    is loaded.

    Raises
    ------
    ConfigError
        ``allow_pickle`` is not set, or a model file is missing.
    """
    import joblib

    from fairprobe.errors import ConfigError

    if not allow_pickle:
        raise ConfigError(
            f"load_models reads joblib pickles from {out_dir}, which run code when loaded; pass "
            "allow_pickle=True only for files you built with build_adult_models.")
    out = {}
    for name in MODEL_NAMES:
        p = Path(out_dir) / f"{name}.joblib"
        if not p.is_file():
            raise ConfigError(f"{p} does not exist; build it with build_adult_models(out_dir=...).")
        out[name] = joblib.load(p)
    return out


def model_digest(model: AuditedMLP) -> str:
    """A short hash of a model's weights (to check that a rebuild is identical)."""
    h = hashlib.sha256()
    for w in [*model.net.coefs_, *model.net.intercepts_]:
        h.update(np.ascontiguousarray(w).tobytes())
    return h.hexdigest()[:16]
