"""The audited platform's model: features, the default logistic regression, model files.

The platform predicts whether a person's income exceeds $50K/year from the six characteristics the
two-source paper keeps after Feldman et al. (2015) (Section 5.1), taken as AIF360's Adult default
numeric and categorical features: ``age``, ``education-num``, ``race``, ``capital-gain``,
``capital-loss``, ``hours-per-week``; plus the protected attribute ``sex``.

Any object with ``predict_proba(DataFrame) -> array (n, 2)`` over these seven columns can be served
(see :func:`load_model_file`); the default is :func:`train_default_model`.
"""

from __future__ import annotations

import hashlib
import json
import os
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt
import pandas as pd

from fairprobe.datasets.adult import AUDIT_FEATURES
from fairprobe.errors import ConfigError, DataError

__all__ = [
    "AUDIT_FEATURES",
    "CATEGORIES",
    "DEFAULT_MODEL_ID",
    "LinearAdultModel",
    "NUMERIC_FEATURES",
    "PlatformModel",
    "ProbaModel",
    "evaluate_model",
    "load_model_file",
    "model_cache_path",
    "train_default_model",
]

NUMERIC_FEATURES: tuple[str, ...] = (
    "age",
    "education-num",
    "capital-gain",
    "capital-loss",
    "hours-per-week",
)
#: Allowed values of the categorical features (those of the Adult data).
CATEGORIES: dict[str, tuple[str, ...]] = {
    "race": ("White", "Black", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other"),
    "sex": ("Female", "Male"),
}
DEFAULT_MODEL_ID = "adult-logreg-v1"
#: A batch of records as columns: feature name -> float64 (numeric) or object (string) array.
Columns = Mapping[str, npt.NDArray[Any]]
DEFAULT_MODEL_SEED = 0


class ProbaModel(Protocol):
    """What a served model must offer."""

    def predict_proba(self, X: pd.DataFrame) -> Any: ...


def train_default_model(seed: int = DEFAULT_MODEL_SEED) -> Any:
    """Fit the default platform model on the bundled Adult training split.

    A scikit-learn pipeline: standardised numeric features and one-hot ``race`` and ``sex`` into a
    ``LogisticRegression(class_weight="balanced", max_iter=1000, random_state=seed)`` predicting
    ``income > 50K``. Class weighting makes the platform lenient (it predicts ``>50K`` for about
    38% of the test split) and brings its accuracy to the two-source paper's 76%; see
    ``docs/platform.md`` for the measured accuracy and disparate impact. Deterministic (lbfgs).
    """
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    from fairprobe.datasets.adult import load_adult

    train = load_adult("train", names_seed=None)
    pre = ColumnTransformer(
        [
            ("num", StandardScaler(), list(NUMERIC_FEATURES)),
            (
                "cat",
                OneHotEncoder(
                    categories=[list(CATEGORIES["race"]), list(CATEGORIES["sex"])],
                    handle_unknown="ignore",
                ),
                ["race", "sex"],
            ),
        ]
    )
    clf = LogisticRegression(class_weight="balanced", max_iter=1000, random_state=seed)
    pipe = Pipeline([("pre", pre), ("clf", clf)])
    pipe.fit(train[list(AUDIT_FEATURES)], train["income"].to_numpy())
    return pipe


class LinearAdultModel:
    """The fitted default pipeline as plain numpy: same probabilities, ~50x less overhead.

    ``z = b + sum_j w_j (x_j - mean_j) / scale_j + w_race[race] + w_sex[sex]``, ``p = expit(z)``;
    an unknown category adds 0 (as ``OneHotEncoder(handle_unknown="ignore")``). Built from the
    scikit-learn pipeline by :meth:`from_pipeline`; tests check both agree to 1e-12.
    """

    def __init__(
        self,
        mean: npt.NDArray[np.float64],
        scale: npt.NDArray[np.float64],
        w_num: npt.NDArray[np.float64],
        w_cat: dict[str, dict[str, float]],
        intercept: float,
    ) -> None:
        self.mean, self.scale, self.w_num = mean, scale, w_num
        self.w_cat, self.intercept = w_cat, intercept

    @classmethod
    def from_pipeline(cls, pipe: Any) -> LinearAdultModel:
        pre, clf = pipe.named_steps["pre"], pipe.named_steps["clf"]
        scaler = pre.named_transformers_["num"]
        enc = pre.named_transformers_["cat"]
        coef = np.asarray(clf.coef_, dtype=np.float64).ravel()
        n_num = len(NUMERIC_FEATURES)
        w_cat: dict[str, dict[str, float]] = {}
        pos = n_num
        for col, cats in zip(["race", "sex"], enc.categories_, strict=True):
            w_cat[col] = {str(c): float(coef[pos + i]) for i, c in enumerate(cats)}
            pos += len(cats)
        return cls(
            np.asarray(scaler.mean_, dtype=np.float64),
            np.asarray(scaler.scale_, dtype=np.float64),
            coef[:n_num],
            w_cat,
            float(np.asarray(clf.intercept_).ravel()[0]),
        )

    def to_json(self) -> str:
        """The coefficients as JSON (floats round-trip exactly)."""
        return json.dumps(
            {
                "numeric_features": list(NUMERIC_FEATURES),
                "mean": self.mean.tolist(),
                "scale": self.scale.tolist(),
                "w_num": self.w_num.tolist(),
                "w_cat": self.w_cat,
                "intercept": self.intercept,
            }
        )

    @classmethod
    def from_json(cls, text: str) -> LinearAdultModel:
        d = json.loads(text)
        if d["numeric_features"] != list(NUMERIC_FEATURES):
            raise ValueError("cached model has other features")
        arrays = [np.asarray(d[k], dtype=np.float64) for k in ("mean", "scale", "w_num")]
        if any(a.shape != (len(NUMERIC_FEATURES),) for a in arrays):
            raise ValueError("cached model has the wrong shape")
        w_cat = {str(c): {str(k): float(v) for k, v in w.items()} for c, w in d["w_cat"].items()}
        if set(w_cat) != {"race", "sex"}:
            raise ValueError("cached model has other categorical features")
        return cls(arrays[0], arrays[1], arrays[2], w_cat, float(d["intercept"]))

    def decision_columns(self, cols: Columns) -> npt.NDArray[np.float64]:
        """The logit for a batch given as columns (no pandas: the served fast path)."""
        num = np.column_stack([np.asarray(cols[f], dtype=np.float64) for f in NUMERIC_FEATURES])
        z = ((num - self.mean) / self.scale) @ self.w_num + self.intercept
        for col, weights in self.w_cat.items():
            values = np.asarray(cols[col], dtype=object)
            uniq, inv = np.unique(values.astype(str), return_inverse=True)
            w = np.array([weights.get(str(u), 0.0) for u in uniq], dtype=np.float64)
            z = z + w[inv.reshape(-1)]
        return np.asarray(z, dtype=np.float64)

    def proba_columns(self, cols: Columns) -> npt.NDArray[np.float64]:
        """``P(income > 50K)`` for a batch given as columns."""
        from scipy.special import expit

        return np.asarray(expit(self.decision_columns(cols)), dtype=np.float64)

    def decision_function(self, X: pd.DataFrame) -> npt.NDArray[np.float64]:
        return self.decision_columns({f: X[f].to_numpy() for f in AUDIT_FEATURES})

    def predict_proba(self, X: pd.DataFrame) -> npt.NDArray[np.float64]:
        p = self.proba_columns({f: X[f].to_numpy() for f in AUDIT_FEATURES})
        return np.column_stack([1.0 - p, p])


def model_cache_path(seed: int = DEFAULT_MODEL_SEED) -> Path:
    """Where the fitted default model is cached.

    ``$FAIRPROBE_CACHE_DIR``, else ``$XDG_CACHE_HOME/fairprobe``, else ``~/.cache/fairprobe``;
    the file name carries a hash of the model id, the training data's sha256, the scikit-learn
    version and the seed, so any change trains afresh.
    """
    from importlib.metadata import PackageNotFoundError, version

    from fairprobe.datasets.adult import ADULT_SHA256

    try:
        skl = version("scikit-learn")
    except PackageNotFoundError:  # pragma: no cover - scikit-learn is a dependency
        skl = "unknown"
    base = os.environ.get("FAIRPROBE_CACHE_DIR")
    if base:
        root = Path(base)
    else:
        xdg = os.environ.get("XDG_CACHE_HOME")
        root = (Path(xdg) if xdg else Path.home() / ".cache") / "fairprobe"
    key = hashlib.sha256(
        f"{DEFAULT_MODEL_ID}|{ADULT_SHA256['train']}|{skl}|{seed}".encode()
    ).hexdigest()[:16]
    return root / f"platform-{DEFAULT_MODEL_ID}-{key}.json"


def load_model_file(
    path: str | Path, *, allow_pickle: bool = False, trusted: Sequence[str] = ()
) -> Any:
    """Load a model saved with skops (``.skops``, the default) or joblib (``.joblib``/``.pkl``).

    The same rule as the local backend (:func:`fairprobe.access.local.load_estimator`): skops
    files load when every type they hold is trusted by skops or listed in ``trusted``; pickles
    can run arbitrary code when loaded, so they load only with ``allow_pickle``
    (``--allow-pickle``). The object must have ``predict_proba``.
    """
    from fairprobe.access.local import load_estimator

    model = load_estimator(
        path, trusted=trusted, allow_pickle=allow_pickle, pickle_hint="pass --allow-pickle",
        trusted_hint="this file, pass trusted=[{}] to load_model_file, or save it with joblib "
        "and pass --allow-pickle.",
    )
    p = Path(path)
    if not callable(getattr(model, "predict_proba", None)):
        raise ConfigError(
            f"Model file {str(p)!r} holds a {type(model).__name__} without predict_proba()."
        )
    return model


@dataclass(frozen=True)
class PlatformModel:
    """A served model: an id, and probabilities of ``income > 50K`` for audit-feature frames."""

    model_id: str
    estimator: Any

    @classmethod
    def default(cls, seed: int = DEFAULT_MODEL_SEED, *, cache: bool = True) -> PlatformModel:
        """The default logistic regression, served through :class:`LinearAdultModel`.

        With ``cache`` (default) the fitted coefficients are kept in
        :func:`model_cache_path` and reused by later processes (no scikit-learn import, no
        training); the file is keyed by the data checksum, the scikit-learn version and the
        seed, and rewritten when unreadable. Set ``FAIRPROBE_NO_MODEL_CACHE=1`` to always train.
        """
        if os.environ.get("FAIRPROBE_NO_MODEL_CACHE") == "1":
            cache = False
        path = model_cache_path(seed) if cache else None
        if path is not None and path.is_file():
            try:
                return cls(DEFAULT_MODEL_ID, LinearAdultModel.from_json(path.read_text()))
            except (OSError, ValueError, KeyError, TypeError):
                pass  # unreadable: train again and overwrite
        linear = LinearAdultModel.from_pipeline(train_default_model(seed))
        if path is not None:
            try:
                from fairprobe._io import write_file

                write_file(path, linear.to_json(), what="model cache")
            except (OSError, DataError):
                pass  # a read-only cache only costs the training time
        return cls(DEFAULT_MODEL_ID, linear)

    @classmethod
    def from_file(cls, path: str | Path, *, allow_pickle: bool = False) -> PlatformModel:
        p = Path(path)
        est = load_model_file(p, allow_pickle=allow_pickle)
        digest = hashlib.sha256(p.read_bytes()).hexdigest()[:12]
        return cls(f"file:{p.name}:{digest}", est)

    def proba(self, X: pd.DataFrame | Columns) -> npt.NDArray[np.float64]:
        """``P(income > 50K)`` per row of ``X`` (a DataFrame, or columns, with the
        :data:`AUDIT_FEATURES`)."""
        n = len(X) if isinstance(X, pd.DataFrame) else len(X["sex"])
        try:
            if isinstance(self.estimator, LinearAdultModel):
                cols = (
                    X
                    if not isinstance(X, pd.DataFrame)
                    else {f: X[f].to_numpy() for f in AUDIT_FEATURES}
                )
                out = self.estimator.proba_columns(cols)
            else:
                frame = X if isinstance(X, pd.DataFrame) else pd.DataFrame(dict(X))
                frame = frame[list(AUDIT_FEATURES)]
                with warnings.catch_warnings():  # e.g. feature-name warnings, once per request
                    warnings.simplefilter("ignore")
                    out = np.asarray(self.estimator.predict_proba(frame), dtype=float)
        except Exception as exc:
            raise DataError(f"The platform model failed on the input: {exc}") from exc
        if out.ndim == 2:
            out = out[:, -1]
        if out.shape != (n,) or not np.all(np.isfinite(out)):
            raise DataError("The platform model returned probabilities of the wrong shape or NaN.")
        # rounded so that an input's score does not depend on the batch it came in (BLAS noise)
        return np.asarray(np.round(np.clip(out, 0.0, 1.0), 12), dtype=np.float64)


def logit(p: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """``log(p / (1 - p))``, finite: p is clipped to ``[1e-12, 1 - 1e-12]``."""
    q = np.clip(p, 1e-12, 1.0 - 1e-12)
    return np.asarray(np.log(q) - np.log1p(-q), dtype=np.float64)


@dataclass(frozen=True)
class ModelEvaluation:
    """Accuracy and disparate impact by sex of a platform model on an Adult split."""

    model_id: str
    split: str
    n: int
    accuracy: float
    n_female: int
    n_male: int
    positives_female: int
    positives_male: int

    @property
    def rate_female(self) -> float:
        return self.positives_female / self.n_female

    @property
    def rate_male(self) -> float:
        return self.positives_male / self.n_male

    @property
    def disparate_impact(self) -> float:
        """``P(Y=1 | Female) / P(Y=1 | Male)`` (Eq. 1 of the two-source paper)."""
        return self.rate_female / self.rate_male if self.positives_male else float("nan")

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model_id,
            "split": self.split,
            "n": self.n,
            "accuracy": self.accuracy,
            "n_female": self.n_female,
            "n_male": self.n_male,
            "positives_female": self.positives_female,
            "positives_male": self.positives_male,
            "positive_rate_female": self.rate_female,
            "positive_rate_male": self.rate_male,
            "disparate_impact_sex": self.disparate_impact,
        }


def evaluate_model(model: PlatformModel, split: str = "test") -> ModelEvaluation:
    """Accuracy and DI by sex of ``model``'s decisions (score >= 0.5) on an Adult split."""
    from fairprobe.datasets.adult import load_adult

    df = load_adult(split, names_seed=None)
    decision = (model.proba(df) >= 0.5).astype(int)
    female = (df["sex"] == "Female").to_numpy()
    y = df["income"].to_numpy()
    return ModelEvaluation(
        model_id=model.model_id,
        split=split,
        n=len(df),
        accuracy=float((decision == y).mean()),
        n_female=int(female.sum()),
        n_male=int((~female).sum()),
        positives_female=int(decision[female].sum()),
        positives_male=int(decision[~female].sum()),
    )
