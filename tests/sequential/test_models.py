"""The Adult models: reproducible, three consistent access regimes, served by the platform."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from fairprobe.access import BlackBox, HttpJsonBackend, LocalModelBackend
from fairprobe.datasets.adult import load_adult
from fairprobe.platform.model import AUDIT_FEATURES
from fairprobe.sequential.models import build_adult_models, load_models, model_digest
from fairprobe.sequential.runner import audit_live

SMALL = dict(hidden=(8,), max_iter=20, grid_size=3, train_rows=800)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("models")
    return out, build_adult_models(seed=3, out_dir=out, **SMALL)


def test_models_reproducible_and_consistent(built: tuple[Path, dict]) -> None:
    out, models = built
    again = build_adult_models(seed=3, **SMALL)
    loaded = load_models(out, allow_pickle=True)
    X = load_adult("test", names_seed=None)[list(AUDIT_FEATURES)].iloc[:400]
    for name, m in models.items():
        assert model_digest(m) == model_digest(again[name]) == model_digest(loaded[name])
        z = m.decision_function(X)
        p = m.predict_proba(X)[:, 1]
        np.testing.assert_allclose(p, 1 / (1 + np.exp(-z)))
        np.testing.assert_array_equal(m.predict(X), (z > 0).astype(int))
        np.testing.assert_allclose(m.net.predict_proba(m.pre.transform(X))[:, 1], p, rtol=1e-9)
        np.testing.assert_allclose(m.transform(X), m.pre.transform(X))
    # (with this tiny configuration GridSearch may keep the unconstrained network: lambda = 0)


def test_local_backend_exposes_three_regimes(built: tuple[Path, dict]) -> None:
    _, models = built
    X = load_adult("test", names_seed=None)[list(AUDIT_FEATURES)].iloc[:50]
    m = models["mlp"]
    ans = BlackBox(LocalModelBackend(m)).query(X)
    np.testing.assert_array_equal(ans.decisions, m.predict(X))
    np.testing.assert_allclose(ans.scores, m.predict_proba(X)[:, 1])
    np.testing.assert_allclose(ans.logits, m.decision_function(X))


def test_sequential_audit_of_platform_serving_the_model(built: tuple[Path, dict]) -> None:
    from fairprobe.platform.process import PlatformProcess

    out, models = built
    te = load_adult("test", names_seed=None)[[*AUDIT_FEATURES, "income"]]
    with PlatformProcess(model_file=out / "mlp.joblib", allow_pickle=True) as proc:
        with BlackBox(HttpJsonBackend(url=proc.url)) as bb:
            res = audit_live(bb, te, group_col="sex", label_col="income", metric="sp",
                             access="logits", budget=120, seed=0, batch_size=20,
                             feature_cols=list(AUDIT_FEATURES))  # fmt: skip
            ans = bb.query(te[list(AUDIT_FEATURES)].iloc[:30])
    m = models["mlp"]
    X = te[list(AUDIT_FEATURES)].iloc[:30]
    np.testing.assert_array_equal(ans.decisions, m.predict(X))
    np.testing.assert_allclose(ans.logits, m.decision_function(X), atol=1e-6)
    assert res.outcome in ("violation", "compliant", "inconclusive")
    assert 1 <= res.queries <= 120 and res.queries_paid + res.queries_cached >= res.queries


def test_load_models_needs_the_pickle_opt_in(tmp_path: Path) -> None:
    """A planted joblib file runs code when loaded: nothing is loaded without allow_pickle."""
    import joblib

    from fairprobe.errors import ConfigError
    from fairprobe.sequential.models import MODEL_NAMES

    marker = tmp_path / "ran"

    class Planted:
        def __reduce__(self) -> tuple:
            return (marker.write_text, ("planted code ran",))

    for name in MODEL_NAMES:
        joblib.dump(Planted(), tmp_path / f"{name}.joblib")
    with pytest.raises(ConfigError, match="allow_pickle=True"):
        load_models(tmp_path)
    assert not marker.exists()
