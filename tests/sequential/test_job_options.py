"""``sequential_job``'s options objects: the objects and the flat keywords (the compatibility
form, the command's flags) run the same audit; a wrong keyword fails as a function's does."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fairprobe.errors import ConfigError, InvalidParameterError
from fairprobe.options import AccessOptions, DataSource
from fairprobe.sequential.job import sequential_job
from fairprobe.sequential.options import SequentialOptions, sequential_options


def _pool(n: int = 1200, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    g = rng.choice(["a", "b"], n)
    dec = (rng.random(n) < np.where(g == "a", 0.6, 0.4)).astype(int)
    return pd.DataFrame({"g": g, "dec": dec})


def test_objects_and_flat_keywords_run_the_same_audit() -> None:
    df = _pool()
    flat = sequential_job(input=df, group_col="g", decision_col="dec", repeats=20, seed=3,
                          budget=600, tolerance=0.05)
    objs = sequential_job(answers=DataSource(df, flag="--input"),
                          options=SequentialOptions(group_col="g", decision_col="dec",
                                                    repeats=20, tolerance=0.05),
                          access_options=AccessOptions(budget=600, seed=3))
    assert objs.result.to_dict() == flat.result.to_dict()
    built = sequential_job(**sequential_options(input=df, group_col="g", decision_col="dec",
                                                repeats=20, seed=3, budget=600,
                                                tolerance=0.05))
    assert built.result.to_dict() == flat.result.to_dict()
    other = sequential_job(input=df, group_col="g", decision_col="dec", repeats=20, seed=4,
                           budget=600, tolerance=0.05)
    assert other.result.to_dict() != flat.result.to_dict()  # the seed reaches the orders


def test_pool_mode_reads_no_live_only_field() -> None:
    # cache, retries and timeout are live-mode flags: a pool-mode audit neither reads nor
    # checks them
    built = sequential_options(input=_pool(), group_col="g", decision_col="dec", retries=-1,
                               timeout=0, cache="somewhere.sqlite")
    assert built["access_options"] == AccessOptions(budget=4000, cache=AccessOptions().cache)
    with pytest.raises(InvalidParameterError, match="--retries"):
        sequential_options(backend=object(), retries=-1)


def test_wrong_keywords_and_modes_fail_with_one_line() -> None:
    with pytest.raises(TypeError, match=r"sequential_job\(\) got an unexpected keyword "
                                        "argument 'bogus'"):
        sequential_job(input=_pool(), bogus=1)
    with pytest.raises(ConfigError, match="Give --input FILE"):
        sequential_job(options=SequentialOptions(group_col="g"))
    with pytest.raises(ConfigError, match="not both"):
        sequential_job(answers=DataSource(_pool(), flag="--input"), backend=object())
    with pytest.raises(ConfigError, match="--min-per-group applies"):
        SequentialOptions(min_per_group=3)
    assert SequentialOptions(test="glr", min_per_group=3).test_name == "glr-wald"
