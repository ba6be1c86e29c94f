"""Fixtures of the two-source tests: an in-process platform (the server's own logic, a tiny model)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pandas as pd
import pytest

from fairprobe.access.base import Answer, Backend
from fairprobe.access.blackbox import BlackBox
from fairprobe.access.local import LocalModelBackend
from fairprobe.platform.core import Platform
from fairprobe.platform.fairwash import FairwashConfig
from fairprobe.platform.model import PlatformModel


class TinyModel:
    """A fixed logistic score penalising women, over the platform's features."""

    def predict_proba(self, X: pd.DataFrame) -> np.ndarray:
        z = (
            0.06 * (X["age"].to_numpy(float) - 38)
            + 0.45 * (X["education-num"].to_numpy(float) - 10)
            - 1.4 * (X["sex"].to_numpy() == "Female")
            + 0.6
        )
        p = 1 / (1 + np.exp(-z))
        return np.stack([1 - p, p], axis=1)


def make_platform(mode: str = "none", gamma: float = 0.0, mix: float = 0.5) -> Platform:
    return Platform(
        PlatformModel("tiny", TinyModel()), FairwashConfig(mode, gamma, mix, seed=1), seed=0
    )


def sources(plat: Platform, cache: Any = None, name: str = "p") -> tuple[BlackBox, BlackBox]:
    def a(df: pd.DataFrame) -> np.ndarray:
        return plat.audit_predict(df.to_dict("records")).decisions

    def b(df: pd.DataFrame) -> np.ndarray:
        return plat.user_predict(df.to_dict("records")).decisions

    ident = f"{name}-{plat.fairwash.mode}-{plat.fairwash.gamma}-{plat.fairwash.mix}"
    return (
        BlackBox(LocalModelBackend(a, name=f"A-{ident}"), cache=cache),
        BlackBox(LocalModelBackend(b, name=f"B-{ident}"), cache=cache),
    )


class Unparsed(Backend):
    """Answers nothing usable: every decision is None."""

    kind = "unparsed"

    @property
    def identity(self) -> str:
        return "unparsed"

    def ask(self, records: Any) -> list[Answer]:
        return [Answer(None) for _ in records]


@pytest.fixture
def fake() -> Any:
    """``fake.platform(mode, gamma, mix)``, ``fake.sources(platform, cache)``, ``fake.Unparsed``."""
    return SimpleNamespace(platform=make_platform, sources=sources, Unparsed=Unparsed)


@pytest.fixture(scope="package")
def live_platform() -> Any:
    """One real platform server process (positive fairwashing, gamma 0.6) for the package."""
    from fairprobe.platform.process import PlatformProcess

    with PlatformProcess(fairwash="positive", gamma=0.6, seed=1) as plat:
        yield plat
