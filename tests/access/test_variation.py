"""Prompt variation and name-swap counterfactual pairs."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pandas as pd
import pytest

from fairprobe.access import BlackBox, LocalModelBackend
from fairprobe.access.variation import (
    name_swap_audit,
    name_swap_pairs,
    prompt_sensitivity,
    read_templates,
)
from fairprobe.datasets.names import FEMALE_NAMES, MALE_NAMES
from fairprobe.errors import DataError


def test_name_swap_pairs_fields_and_free_text() -> None:
    df = pd.DataFrame({"name": ["Ashley", "Michael", "Zed", None,
                                "Emily met Sarah", "Emily met John"], "x": range(6)})
    out, has, direction = name_swap_pairs(df, "name", seed=3)
    assert has.tolist() == [True, True, False, False, True, False]
    assert direction.tolist() == ["F->M", "M->F", "", "", "F->M", ""]
    assert out["name"][0] in MALE_NAMES and out["name"][1] in FEMALE_NAMES
    a, b = out["name"][4].split(" met ")
    assert a in MALE_NAMES and b in MALE_NAMES
    assert out["name"][2] == "Zed" and out["name"][5] == "Emily met John"  # no clean swap
    assert out["x"].tolist() == list(range(6))
    again, _, _ = name_swap_pairs(df, "name", seed=3)
    assert again.equals(out)
    with pytest.raises(DataError, match="not a column"):
        name_swap_pairs(df, "first_name")


def _model(uses_name: bool) -> LocalModelBackend:
    def predict(frame: pd.DataFrame) -> np.ndarray:
        if uses_name:
            return frame["name"].isin(FEMALE_NAMES).to_numpy().astype(int)
        return (frame["x"] % 2).to_numpy()

    return LocalModelBackend(predict, name=f"names-{uses_name}")


def test_flip_rate_with_interval() -> None:
    rng = np.random.default_rng(0)
    names = rng.choice(list(FEMALE_NAMES + MALE_NAMES), 200)
    df = pd.DataFrame({"name": names, "x": np.arange(200)})
    with BlackBox(_model(True)) as bb:
        res = name_swap_audit(bb, df, "name", seed=1)
    assert (res.n_pairs, res.n_usable, res.n_flips) == (200, 200, 200)
    n_f = int(np.isin(names, FEMALE_NAMES).sum())
    assert res.by_direction["F->M"] == {"usable": n_f, "flips": n_f, "to_positive": 0,
                                        "to_negative": n_f}
    lo, hi = res.confidence_interval()
    assert hi == 1.0 and 0.97 < lo < 1.0
    with BlackBox(_model(False)) as bb:
        res = name_swap_audit(bb, df, "name", seed=1)
    assert res.n_flips == 0 and res.flip_rate == 0.0
    lo, hi = res.confidence_interval()
    assert lo == 0.0 and 0.0 < hi < 0.03
    d = res.to_dict()
    assert d["interval"]["method"] == "wilson" and d["interval"]["level"] == 0.95
    with pytest.raises(DataError, match="No record"):
        name_swap_audit(BlackBox(_model(False)), df.assign(name="Zed"), "name")


def test_prompt_sensitivity_summary(tmp_path: Any) -> None:
    def fake(name: str, template: str) -> Any:
        est = {"a": 0.9, "b": 0.7, "c": 0.85}[name]
        metric = SimpleNamespace(to_dict=lambda: {"estimate": est, "interval": {}})
        return SimpleNamespace(metric=metric, backend=f"id-{name}", unparsed=0,
                               verdict="fair" if est >= 0.8 else "unfair",
                               outcomes_by_group={"F": {"ok": 5, "refused": 1}})
    res = prompt_sensitivity({"a": "A {record}", "b": "B {record}", "c": "C {record}"}, fake)
    d = res.to_dict()
    assert d["spread"] == pytest.approx(0.2) and d["verdicts_agree"] is False
    assert d["verdict_counts"] == {"fair": 2, "unfair": 1}
    assert d["variants"][0]["outcomes"]["refused"] == 1
    with pytest.raises(DataError, match="at least two"):
        prompt_sensitivity({"a": "x"}, fake)
    p = tmp_path / "v.toml"
    p.write_text('[templates]\nplain = "P {record}"\nterse = "{record} {labels}"\n')
    assert read_templates(str(p)) == {"plain": "P {record}", "terse": "{record} {labels}"}
    p.write_text('templates = ["x"]\n')
    with pytest.raises(DataError, match=r"\[templates\] table"):
        read_templates(str(p))
