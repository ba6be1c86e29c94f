"""LocalModelBackend: scikit-learn estimators (skops/joblib files) and callables."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import joblib
import numpy as np
import pandas as pd
import pytest
import skops.io as sio
from sklearn.compose import ColumnTransformer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler
from sklearn.svm import LinearSVC
from sklearn.tree import DecisionTreeClassifier

from fairprobe.access import BlackBox, LocalModelBackend, load_backend
from fairprobe.errors import AccessError, AnswerParseError, ConfigError, DataError


@pytest.fixture(scope="module")
def data() -> tuple[pd.DataFrame, np.ndarray]:
    rng = np.random.default_rng(0)
    X = pd.DataFrame(
        {
            "age": rng.integers(18, 80, 300),
            "hours": rng.normal(40, 10, 300),
            "sex": rng.choice(["Female", "Male"], 300),
        }
    )
    y = ((X["age"] - 40) / 10 + (X["hours"] - 40) / 10 + (X["sex"] == "Male") > 0.5).astype(int)
    return X, y.to_numpy()


@pytest.fixture(scope="module")
def pipe(data: tuple[pd.DataFrame, np.ndarray]) -> Any:
    X, y = data
    pre = ColumnTransformer(
        [("num", StandardScaler(), ["age", "hours"]), ("cat", OneHotEncoder(), ["sex"])]
    )
    return make_pipeline(pre, LogisticRegression()).fit(X, y)


def test_estimator_decisions_scores_logits(pipe: Any, data: Any) -> None:
    X, _ = data
    with BlackBox(LocalModelBackend(pipe, max_batch=64), concurrency=2) as bb:
        out = bb.query(X)
    np.testing.assert_array_equal(out.decisions, pipe.predict(X))
    np.testing.assert_allclose(out.scores, pipe.predict_proba(X)[:, 1])
    np.testing.assert_allclose(out.logits, pipe.decision_function(X))
    # logistic regression: score = sigmoid(logit)
    np.testing.assert_allclose(out.scores, 1 / (1 + np.exp(-out.logits)))


def test_feature_order_comes_from_the_model(pipe: Any, data: Any) -> None:
    X, _ = data
    shuffled = X[["sex", "hours", "age"]].assign(extra="ignored")
    out = BlackBox(LocalModelBackend(pipe)).query(shuffled)
    np.testing.assert_array_equal(out.decisions, pipe.predict(X))


def test_missing_feature_is_a_data_error(pipe: Any) -> None:
    with pytest.raises(DataError, match="lack the model's feature column\\(s\\) 'hours'"):
        BlackBox(LocalModelBackend(pipe)).query([{"age": 30, "sex": "Male"}])


def test_string_labels_and_positive_label(data: Any) -> None:
    X, y = data
    labels = np.where(y == 1, ">50K", "<=50K")
    tree = DecisionTreeClassifier(max_depth=3, random_state=0).fit(X[["age", "hours"]], labels)
    # classes_ sorted: ['<=50K', '>50K'] -> positive defaults to the second
    be = LocalModelBackend(tree)
    assert be.positive_label == ">50K"
    out = BlackBox(be).query(X[["age", "hours"]])
    np.testing.assert_array_equal(out.decisions, tree.predict(X[["age", "hours"]]) == ">50K")
    np.testing.assert_allclose(out.scores, tree.predict_proba(X[["age", "hours"]])[:, 1])
    assert np.isnan(out.logits).all()  # trees have no decision_function
    # the other class as positive flips decisions and scores
    neg = BlackBox(LocalModelBackend(tree, positive_label="<=50K")).query(X[["age", "hours"]])
    np.testing.assert_array_equal(neg.decisions, 1 - out.decisions)
    np.testing.assert_allclose(neg.scores, 1 - out.scores)


def test_margin_classifier_without_proba(data: Any) -> None:
    X, y = data
    svm = LinearSVC().fit(X[["age", "hours"]], y)
    out = BlackBox(LocalModelBackend(svm)).query(X[["age", "hours"]])
    assert np.isnan(out.scores).all()
    np.testing.assert_allclose(out.logits, svm.decision_function(X[["age", "hours"]]))


def test_multiclass_needs_positive_label(data: Any) -> None:
    X, _ = data
    y3 = np.arange(len(X)) % 3
    tree = DecisionTreeClassifier(max_depth=2).fit(X[["age"]], y3)
    with pytest.raises(ConfigError, match="3 classes"):
        LocalModelBackend(tree)
    out = BlackBox(LocalModelBackend(tree, positive_label=2)).query(X[["age"]])
    np.testing.assert_array_equal(out.decisions, tree.predict(X[["age"]]) == 2)
    with pytest.raises(ConfigError, match="positive_label 7 is not one of"):
        LocalModelBackend(tree, positive_label=7)


def test_unfitted_and_not_a_model() -> None:
    with pytest.raises(ConfigError, match="fit it"):
        LocalModelBackend(LogisticRegression())
    with pytest.raises(ConfigError, match="fitted estimator with predict"):
        LocalModelBackend(42)


def test_skops_file_loads_safely(tmp_path: Path, pipe: Any, data: Any) -> None:
    X, _ = data
    path = tmp_path / "model.skops"
    sio.dump(pipe, path)
    be = LocalModelBackend.from_file(path, trusted=sio.get_untrusted_types(file=path))
    out = BlackBox(be).query(X)
    np.testing.assert_array_equal(out.decisions, pipe.predict(X))
    assert be.identity.startswith("local:model.skops#")
    # same file content, same identity (the cache key survives restarts)
    assert LocalModelBackend.from_file(path, trusted=sio.get_untrusted_types(file=path)).identity \
        == be.identity


def test_skops_untrusted_types_are_refused(tmp_path: Path) -> None:
    class Custom:  # not a type skops trusts
        pass

    path = tmp_path / "odd.skops"
    lr = LogisticRegression().fit([[0.0], [1.0]], [0, 1])
    lr.custom_ = Custom()  # type: ignore[attr-defined]
    sio.dump(lr, path)
    with pytest.raises(ConfigError, match="types skops does not trust: .*Custom") as e:
        LocalModelBackend.from_file(path)
    assert "\n" not in str(e.value)


def test_joblib_needs_allow_pickle(tmp_path: Path, pipe: Any, data: Any) -> None:
    X, _ = data
    path = tmp_path / "model.joblib"
    joblib.dump(pipe, path)
    with pytest.raises(ConfigError, match="allow_pickle"):
        LocalModelBackend.from_file(path)
    be = LocalModelBackend.from_file(path, allow_pickle=True)
    np.testing.assert_array_equal(BlackBox(be).query(X).decisions, pipe.predict(X))


def test_bad_model_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        LocalModelBackend.from_file(tmp_path / "none.skops")
    (tmp_path / "m.txt").write_text("x")
    with pytest.raises(ConfigError, match="must end in .skops, .joblib or .pkl"):
        LocalModelBackend.from_file(tmp_path / "m.txt")
    (tmp_path / "broken.skops").write_bytes(b"not a zip")
    with pytest.raises(ConfigError, match="Cannot load model file"):
        LocalModelBackend.from_file(tmp_path / "broken.skops")


def test_callable_forms() -> None:
    df = pd.DataFrame({"x": [-2.0, 0.5, 3.0]})
    expected = [0, 1, 1]

    def only(d: pd.DataFrame) -> Any:
        return d["x"] > 0

    def pair(d: pd.DataFrame) -> Any:
        return (d["x"] > 0).to_numpy(), 1 / (1 + np.exp(-d["x"].to_numpy()))

    def mapping(d: pd.DataFrame) -> Any:
        return {"decision": (d["x"] > 0).astype(int), "logit": d["x"]}

    for fn in (only, pair, mapping):
        out = BlackBox(LocalModelBackend(fn)).query(df)
        np.testing.assert_array_equal(out.decisions, expected)
    out = BlackBox(LocalModelBackend(pair)).query(df)
    np.testing.assert_allclose(out.scores, 1 / (1 + np.exp(-df["x"])))
    out = BlackBox(LocalModelBackend(mapping)).query(df)
    np.testing.assert_allclose(out.logits, df["x"])
    assert np.isnan(out.scores).all()


def test_callable_identity_tracks_code_and_captured_values() -> None:
    def make(t: float) -> Any:
        return lambda d: d["x"] > t

    a, b, a2 = LocalModelBackend(make(0.0)), LocalModelBackend(make(1.0)), LocalModelBackend(make(0.0))
    assert a.identity != b.identity
    assert a.identity == a2.identity
    assert LocalModelBackend(make(0.0), name="rule-v1").identity.startswith("local:rule-v1:")


@pytest.mark.parametrize(
    "fn, err, match",
    [
        (lambda d: [1], AccessError, "decisions of shape \\(1,\\) for 2 records"),
        (lambda d: {"score": [0.1, 0.2]}, AccessError, "without a 'decision' key"),
        (lambda d: (1, 2, 3, 4), AccessError, "tuple of 4"),
        (lambda d: np.array([1.0, np.nan]), AnswerParseError, "NaN decision"),
        (lambda d: np.array([1, 2]), AnswerParseError, "decision 2"),
    ],
)
def test_callable_bad_output(fn: Any, err: type[Exception], match: str) -> None:
    with pytest.raises(err, match=match):
        BlackBox(LocalModelBackend(fn)).query([{"x": 1}, {"x": 2}])


def test_from_config(tmp_path: Path, pipe: Any, data: Any) -> None:
    X, _ = data
    sio.dump(pipe, tmp_path / "m.skops")
    trusted = sio.get_untrusted_types(file=tmp_path / "m.skops")
    cfg = tmp_path / "backend.toml"
    cfg.write_text(
        'kind = "local"\npath = "m.skops"\ntrusted = [' + ", ".join(f'"{t}"' for t in trusted) + "]\n"
    )
    be = load_backend(cfg)  # the relative path is resolved against the config file
    np.testing.assert_array_equal(BlackBox(be).query(X).decisions, pipe.predict(X))
    be2 = load_backend({"kind": "local", "callable": "numpy:sign", "name": "sign"})
    assert isinstance(be2, LocalModelBackend)
    with pytest.raises(ConfigError, match="exactly one of 'path' or 'callable'"):
        load_backend({"kind": "local"})
    with pytest.raises(ConfigError, match="cannot import 'numpy:nope'"):
        load_backend({"kind": "local", "callable": "numpy:nope"})


class _Evil:
    """A pickle that runs code when loaded (creates a marker file)."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):  # type: ignore[no-untyped-def]
        return (open, (self.marker, "w"))


def test_pickles_never_load_without_opt_in_anywhere(tmp_path: Path, capsys) -> None:
    """``platform --model-file`` loaded pickles with no opt-in; now one rule for both."""
    import pickle

    from fairprobe.cli.main import main
    from fairprobe.platform.model import PlatformModel

    marker = tmp_path / "pwned"
    evil = tmp_path / "evil.pkl"
    evil.write_bytes(pickle.dumps(_Evil(str(marker))))
    with pytest.raises(ConfigError, match="is a pickle"):
        LocalModelBackend.from_file(evil)
    with pytest.raises(ConfigError, match="--allow-pickle"):
        PlatformModel.from_file(evil)
    for cmd in (["platform", "info"], ["platform", "serve", "--port", "0"]):
        with pytest.raises(SystemExit) as exc:
            main([*cmd, "--model-file", str(evil)])
        assert exc.value.code == 2 and "is a pickle" in capsys.readouterr().err
    assert not marker.exists()  # the payload never ran
