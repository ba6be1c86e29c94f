"""Several groups: every pair with Bonferroni keeps the family-wise type-I error."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fairprobe.errors import InvalidParameterError
from fairprobe.sequential.multigroup import run_groups


def _frame(rates: dict[str, float], n: int) -> pd.DataFrame:
    out = []
    for g, r in rates.items():
        d = np.zeros(n)
        d[: int(round(r * n))] = 1
        out.append(pd.DataFrame({"g": g, "d": d}))
    return pd.concat(out, ignore_index=True)


def test_largest_gap_at_delta_keeps_alpha_over_all_pairs() -> None:
    df = _frame({"A": 0.30, "B": 0.35, "C": 0.40}, 1500)  # worst pair A|C exactly at delta
    res = run_groups(df, "g", "d", tolerance=0.1, budget=4500, repeats=240, seed=1)
    assert res.shares["violation"] <= 0.05 + 2 * np.sqrt(0.05 * 0.95 / 240)
    d = res.to_dict()
    assert d["pool"]["gap"] == pytest.approx(0.1) and d["correction"] == "bonferroni"


def test_chosen_pair_and_bad_pairs() -> None:
    df = _frame({"A": 0.30, "B": 0.60, "C": 0.31}, 800)
    res = run_groups(df, "g", "d", pair=("A", "C"), tolerance=0.1, budget=1600, repeats=40)
    assert res.shares["compliant"] >= 0.9 and res.params["pairs"] == 1
    with pytest.raises(InvalidParameterError, match="'pair' parameter"):
        run_groups(df, "g", "d", pair=("A", "Z"))
    with pytest.raises(InvalidParameterError, match="two different groups"):
        run_groups(df, "g", "d", pair=("A", "A"))
