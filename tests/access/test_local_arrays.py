"""A model fitted on arrays is asked with arrays: no scikit-learn feature-name warning."""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.linear_model import LogisticRegression

from fairprobe.access.local import LocalModelBackend


def test_array_fitted_model_gets_no_feature_name_warning() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 2))
    model = LogisticRegression().fit(x, x[:, 0] > 0)
    backend = LocalModelBackend(model, feature_columns=["a", "b"], positive_label=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        answers = backend.ask([{"a": 1.0, "b": 0.0}, {"a": -1.0, "b": 0.0}])
    assert [a.decision for a in answers] == [1, 0]
