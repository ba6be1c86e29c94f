"""The platform's two interfaces in process: model figures, name inference, fairwash flips."""

from __future__ import annotations

import numpy as np
import pytest

from fairprobe.datasets.adult import load_adult
from fairprobe.datasets.names import female_probability
from fairprobe.errors import DataError, InvalidParameterError
from fairprobe.platform.core import EXAMPLE_AUDIT_RECORD, Platform, record_key
from fairprobe.platform.fairwash import FairwashConfig, apply_flips
from fairprobe.platform.model import AUDIT_FEATURES, PlatformModel, evaluate_model

USER = ["age", "education-num", "race", "capital-gain", "capital-loss", "hours-per-week"]


@pytest.fixture(scope="module")
def model() -> PlatformModel:
    return PlatformModel.default()


@pytest.fixture(scope="module")
def adult_test() -> list[dict]:
    return load_adult("test", names_seed=0).to_dict("records")


@pytest.fixture(scope="module")
def distinct_rows() -> list[dict]:
    """The 20,336 distinct audit records of Adult: flips are drawn per distinct input, so the
    flipped share is binomial over distinct inputs only (duplicates share their draw)."""
    df = load_adult("all", names_seed=None)[list(AUDIT_FEATURES)].drop_duplicates()
    return df.to_dict("records")


def test_default_model_figures(model: PlatformModel) -> None:
    """Measured once and pinned: the default model is deterministic (lbfgs, fixed seed)."""
    ev = evaluate_model(model, "test")
    assert ev.n == 16_281
    assert ev.accuracy == pytest.approx(0.7602, abs=0.0005)
    assert ev.disparate_impact == pytest.approx(0.2571, abs=0.002)
    assert ev.disparate_impact < 0.8  # the platform is unfair by the 80% rule
    d = ev.to_dict()
    assert d["positives_female"] + d["positives_male"] > 0
    assert set(d) >= {"accuracy", "disparate_impact_sex", "positive_rate_female"}


def test_training_is_reproducible(model: PlatformModel, adult_test: list[dict]) -> None:
    again = PlatformModel.default()
    rows = adult_test[:500]
    a = Platform(model).audit_predict(rows)
    b = Platform(again).audit_predict(rows)
    assert np.array_equal(a.scores, b.scores)


def test_audit_answers_are_batch_independent(model: PlatformModel, adult_test: list) -> None:
    p = Platform(model)
    rows = adult_test[:300]
    whole = p.audit_predict(rows)
    one_by_one = np.array([p.audit_predict([r]).scores[0] for r in rows[:40]])
    assert np.array_equal(whole.scores[:40], one_by_one)
    rev = p.audit_predict(rows[::-1])
    assert np.array_equal(rev.scores[::-1], whole.scores)
    assert np.array_equal(whole.decisions, (whole.scores >= 0.5).astype(int))
    np.testing.assert_allclose(1 / (1 + np.exp(-whole.logits)), whole.scores, atol=1e-9)


def test_extra_fields_are_ignored(model: PlatformModel) -> None:
    p = Platform(model)
    rec = dict(EXAMPLE_AUDIT_RECORD)
    extra = rec | {"first_name": "Joe", "workclass": "Private"}
    assert p.audit_predict([rec]).scores[0] == p.audit_predict([extra]).scores[0]
    # 39 and 39.0 are the same input
    assert record_key(rec) == record_key(rec | {"age": 39.0})


def _female_and_male_scores(p: Platform, rows: list[dict]) -> tuple[np.ndarray, np.ndarray]:
    f = p.audit_predict([{k: r[k] for k in USER} | {"sex": "Female"} for r in rows]).scores
    m = p.audit_predict([{k: r[k] for k in USER} | {"sex": "Male"} for r in rows]).scores
    return f, m


def test_user_interface_infers_sex_from_names(model: PlatformModel, adult_test: list) -> None:
    p = Platform(model, seed=4)
    rows = adult_test[:3000]
    user_rows = [{k: r[k] for k in USER} | {"first_name": r["first_name"]} for r in rows]
    pred = p.user_predict(user_rows)
    pf = np.array([female_probability(r["first_name"]) for r in rows])
    inferred_f = pred.sex == "Female"
    assert inferred_f[pf == 1].all() and not inferred_f[pf == 0].any()
    half = pf == 0.5
    assert abs(inferred_f[half].mean() - 0.5) < 4 * np.sqrt(0.25 / half.sum())
    # the answer is the model's answer for the inferred sex
    f, m = _female_and_male_scores(p, rows)
    assert np.array_equal(pred.scores, np.where(inferred_f, f, m))
    # deterministic: again, in another order, one by one
    again = p.user_predict(user_rows[::-1])
    assert np.array_equal(again.sex[::-1], pred.sex)
    assert p.user_predict(user_rows[:1]).sex[0] == pred.sex[0]
    # the 1/2 draw depends on the server seed
    other = Platform(model, seed=5).user_predict(user_rows)
    assert (other.sex[half] != pred.sex[half]).any()
    assert np.array_equal(other.sex[~half], pred.sex[~half])


def test_sex_proxy_decision_agreement(model: PlatformModel) -> None:
    """The paper's 91% is the agreement of B's decisions with A's (Table 1 eps(proxy) = 9%)."""
    df = load_adult("test", names_seed=0)
    p = Platform(model)
    a = p.audit_predict(df[list(AUDIT_FEATURES)].to_dict("records"))
    b = p.user_predict(df[USER + ["first_name"]].to_dict("records"))
    sex_acc = (b.sex == df["sex"].to_numpy()).mean()
    agree = (a.decisions == b.decisions).mean()
    # expected sex accuracy: P(F) * 16/25 + P(M) * 21/25
    pf = (df["sex"] == "Female").mean()
    assert sex_acc == pytest.approx(pf * 0.64 + (1 - pf) * 0.84, abs=0.01)
    assert 0.85 < agree < 0.99


@pytest.mark.parametrize("gamma", [0.1, 0.35])
def test_positive_fairwash_flip_share(
    model: PlatformModel, distinct_rows: list, gamma: float
) -> None:
    rows = distinct_rows
    truth = Platform(model).audit_predict(rows)
    fw = FairwashConfig("positive", gamma=gamma, seed=11)
    lied = Platform(model, fairwash=fw).audit_predict(rows)
    female = truth.sex == "Female"
    cand = female & (truth.decisions == 0)
    flipped = lied.decisions != truth.decisions
    assert not (flipped & ~cand).any()  # only female negatives move, and only 0 -> 1
    share = flipped[cand].mean()
    assert abs(share - gamma) < 4 * np.sqrt(gamma * (1 - gamma) / cand.sum())
    assert np.array_equal(flipped, lied.flipped)
    # Appendix A: P(Y_A=1|F) = P(Y_B=1|F)(1-gamma) + gamma, in expectation
    rf_b = truth.decisions[female].mean()
    rf_a = lied.decisions[female].mean()
    assert rf_a == pytest.approx(rf_b * (1 - gamma) + gamma, abs=0.02)
    # scores and logits agree with the flipped decisions
    assert np.array_equal(lied.decisions, (lied.scores >= 0.5).astype(int))
    assert np.array_equal(lied.scores[flipped], 1 - truth.scores[flipped])
    assert (np.sign(lied.logits[flipped]) == -np.sign(truth.logits[flipped])).all()


def test_negative_and_mixed_fairwash(model: PlatformModel, distinct_rows: list) -> None:
    rows = distinct_rows
    truth = Platform(model).audit_predict(rows)
    female = truth.sex == "Female"
    neg = Platform(model, fairwash=FairwashConfig("negative", 0.3, seed=2)).audit_predict(rows)
    fl = neg.decisions != truth.decisions
    cand = ~female & (truth.decisions == 1)
    assert not (fl & ~cand).any()
    assert abs(fl[cand].mean() - 0.3) < 4 * np.sqrt(0.21 / cand.sum())
    mixed = FairwashConfig("mixed", 0.4, mix=0.25, seed=2)
    mix = Platform(model, fairwash=mixed).audit_predict(rows)
    fl = mix.decisions != truth.decisions
    c_pos = female & (truth.decisions == 0)
    c_neg = ~female & (truth.decisions == 1)
    assert not (fl & ~(c_pos | c_neg)).any()
    assert abs(fl[c_pos].mean() - 0.1) < 4 * np.sqrt(0.09 / c_pos.sum())
    assert abs(fl[c_neg].mean() - 0.3) < 4 * np.sqrt(0.21 / c_neg.sum())


def test_fairwash_is_deterministic_per_input(model: PlatformModel, adult_test: list) -> None:
    rows = [{k: r[k] for k in AUDIT_FEATURES} for r in adult_test[:2000]]
    p = Platform(model, fairwash=FairwashConfig("positive", 0.5, seed=9))
    a = p.audit_predict(rows)
    b = p.audit_predict(rows[::-1])
    assert np.array_equal(a.decisions, b.decisions[::-1])
    c = Platform(model, fairwash=FairwashConfig("positive", 0.5, seed=10)).audit_predict(rows)
    assert not np.array_equal(a.flipped, c.flipped)
    # larger gamma flips a superset (the same draw u is compared with the rate)
    big = Platform(model, fairwash=FairwashConfig("positive", 0.8, seed=9)).audit_predict(rows)
    assert (big.flipped | ~a.flipped).all()


def test_gamma_bounds() -> None:
    assert FairwashConfig("positive", 0.0).rate_positive == 0.0
    assert FairwashConfig("positive", 1.0).rate_positive == 1.0
    with pytest.raises(InvalidParameterError, match="'gamma' parameter"):
        FairwashConfig("positive", 1.5)
    with pytest.raises(InvalidParameterError, match="'fairwash' parameter"):
        FairwashConfig("lie", 0.1)
    with pytest.raises(InvalidParameterError, match="'mix' parameter"):
        FairwashConfig("mixed", 0.1, mix=-0.1)


def test_gamma_one_flips_every_candidate(model: PlatformModel, adult_test: list) -> None:
    rows = [{k: r[k] for k in AUDIT_FEATURES} for r in adult_test[:1000]]
    lied = Platform(model, fairwash=FairwashConfig("positive", 1.0)).audit_predict(rows)
    assert lied.decisions[lied.sex == "Female"].all()


def test_apply_flips_edges() -> None:
    s = np.array([0.5, 0.2, 0.9, 0.5])
    out = apply_flips(s, np.array([True, True, True, False]))
    assert out[0] < 0.5 and out[1] == 0.8 and out[2] == pytest.approx(0.1) and out[3] == 0.5


@pytest.mark.parametrize(
    ("instances", "match"),
    [
        ([], "empty"),
        ("x", "must be a list"),
        ([1], "not a JSON object"),
        ([{"age": 30}], "lacks feature"),
        ([EXAMPLE_AUDIT_RECORD | {"age": "30"}], "'age' must be a finite number"),
        ([EXAMPLE_AUDIT_RECORD | {"age": True}], "'age' must be a finite number"),
        ([EXAMPLE_AUDIT_RECORD | {"age": float("nan")}], "'age' must be a finite number"),
        ([EXAMPLE_AUDIT_RECORD | {"sex": "F"}], "'sex' must be one of"),
        ([EXAMPLE_AUDIT_RECORD | {"race": "Martian"}], "'race' must be one of"),
    ],
)
def test_bad_audit_instances(model: PlatformModel, instances: object, match: str) -> None:
    with pytest.raises(DataError, match=match):
        Platform(model).audit_predict(instances)


def test_bad_user_instances(model: PlatformModel) -> None:
    rec = {k: EXAMPLE_AUDIT_RECORD[k] for k in USER}
    with pytest.raises(DataError, match="lacks feature"):
        Platform(model).user_predict([rec])
    with pytest.raises(DataError, match="first_name"):
        Platform(model).user_predict([rec | {"first_name": "42"}])


@pytest.mark.parametrize("mode", ["positive", "negative"])
def test_margin_selection_flips_the_borderline_answers(model: PlatformModel, mode: str) -> None:
    """Reject-option variant: the flipped candidates are those nearest the boundary, and their
    share on the training data (the reference of the quantile) is gamma."""
    df = load_adult("train", names_seed=None)
    rows = df[list(AUDIT_FEATURES)].to_dict("records")
    truth = Platform(model).audit_predict(rows)
    cfg = FairwashConfig(mode, 0.3, seed=0, select="margin")
    lied = Platform(model, fairwash=cfg).audit_predict(rows)
    female = truth.sex == "Female"
    if mode == "positive":
        cand = female & (truth.decisions == 0)
    else:
        cand = ~female & (truth.decisions == 1)
    flipped = lied.decisions != truth.decisions
    assert not (flipped & ~cand).any()
    assert flipped[cand].mean() == pytest.approx(0.3, abs=0.01)
    s_flip, s_keep = truth.scores[cand & flipped], truth.scores[cand & ~flipped]
    if mode == "positive":
        assert s_flip.min() >= s_keep.max()
    else:
        assert s_flip.max() <= s_keep.min()
    # deterministic per input
    again = Platform(model, fairwash=cfg).audit_predict(rows[:500][::-1])
    assert np.array_equal(again.decisions[::-1], lied.decisions[:500])


def test_margin_extremes(model: PlatformModel, adult_test: list) -> None:
    rows = [{k: r[k] for k in AUDIT_FEATURES} for r in adult_test[:2000]]
    truth = Platform(model).audit_predict(rows)
    none = Platform(model, fairwash=FairwashConfig("positive", 0.0, select="margin"))
    assert np.array_equal(none.audit_predict(rows).decisions, truth.decisions)
    full = Platform(model, fairwash=FairwashConfig("positive", 1.0, select="margin"))
    assert full.audit_predict(rows).decisions[truth.sex == "Female"].all()
    with pytest.raises(InvalidParameterError, match="fairwash_select"):
        FairwashConfig("positive", 0.1, select="best")


def test_model_cache(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    import subprocess
    import sys

    from fairprobe.platform.model import model_cache_path

    monkeypatch.setenv("FAIRPROBE_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("FAIRPROBE_NO_MODEL_CACHE", raising=False)
    path = model_cache_path()
    assert path.parent == tmp_path and not path.exists()
    trained = PlatformModel.default()
    assert path.is_file()
    cached = PlatformModel.default()
    df = load_adult("test", names_seed=None)
    assert np.array_equal(trained.proba(df), cached.proba(df))  # floats round-trip exactly
    assert model_cache_path(seed=1) != path
    # a corrupt cache is retrained and rewritten
    path.write_text("{not json")
    again = PlatformModel.default()
    assert np.array_equal(again.proba(df), trained.proba(df))
    assert path.read_text().startswith("{")
    # a later process serves from the cache without importing scikit-learn
    code = (
        "import sys; from fairprobe.platform.model import PlatformModel; "
        "PlatformModel.default(); print('sklearn' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
