"""The platform's two interfaces over one model, independent of HTTP.

- :meth:`Platform.audit_predict` — the audit API ``A``: records carry ``sex``; answers may be
  fairwashed (:mod:`fairprobe.platform.fairwash`).
- :meth:`Platform.user_predict` — the user interface ``B``: records carry ``first_name`` instead of
  ``sex``; the platform infers sex with the last-letter rule of the two-source paper (Section 5.1,
  :mod:`fairprobe.datasets.names`) and answers truthfully. The 1/2 case is decided by
  ``hash_uniform(user_key, seed, "name")`` so the same query always gets the same answer.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from fairprobe.datasets.names import FEMALE, female_probability, hash_uniform
from fairprobe.errors import DataError
from fairprobe.platform.fairwash import FairwashConfig, apply_flips, margin_thresholds
from fairprobe.platform.model import (
    AUDIT_FEATURES,
    CATEGORIES,
    NUMERIC_FEATURES,
    PlatformModel,
    logit,
)

__all__ = [
    "EXAMPLE_AUDIT_RECORD",
    "EXAMPLE_USER_RECORD",
    "USER_FEATURES",
    "Platform",
    "Predictions",
    "record_key",
    "user_key",
]

#: Features of the user interface: the audit features without ``sex``, plus ``first_name``.
USER_FEATURES: tuple[str, ...] = tuple(f for f in AUDIT_FEATURES if f != "sex") + ("first_name",)

EXAMPLE_AUDIT_RECORD: dict[str, Any] = {
    "age": 39,
    "education-num": 13,
    "race": "White",
    "capital-gain": 2174,
    "capital-loss": 0,
    "hours-per-week": 40,
    "sex": "Male",
}
EXAMPLE_USER_RECORD: dict[str, Any] = {
    k: v for k, v in EXAMPLE_AUDIT_RECORD.items() if k != "sex"
} | {"first_name": "Brian"}


def _num(v: float) -> str:
    return repr(float(v))


def record_key(record: Mapping[Any, Any]) -> str:
    """Canonical text of a validated audit record: its 7 features in model order.

    Numbers are written as Python float reprs (``39`` and ``39.0`` are the same input); extra
    fields are ignored. This key seeds the fairwash draw.
    """
    parts = [_num(record[f]) if f in NUMERIC_FEATURES else str(record[f]) for f in AUDIT_FEATURES]
    return json.dumps(parts, separators=(",", ":"))


def user_key(record: Mapping[Any, Any]) -> str:
    """Canonical text of a validated user record (6 features and the first name as sent)."""
    parts = [_num(record[f]) if f in NUMERIC_FEATURES else str(record[f]) for f in USER_FEATURES]
    return json.dumps(parts, separators=(",", ":"))


@dataclass(frozen=True)
class Predictions:
    """Answers to a batch: decision 0/1, score P(>50K) in [0, 1], logit; ``flipped`` is internal."""

    decisions: npt.NDArray[np.int64]
    scores: npt.NDArray[np.float64]
    logits: npt.NDArray[np.float64]
    flipped: npt.NDArray[np.bool_]
    sex: npt.NDArray[np.object_]

    def to_json(self) -> list[dict[str, Any]]:
        return [
            {"decision": int(d), "score": float(s), "logit": float(lg)}
            for d, s, lg in zip(self.decisions, self.scores, self.logits, strict=True)
        ]


def _validate(instances: Any, features: Sequence[str], where: str) -> pd.DataFrame:
    if not isinstance(instances, list):
        raise DataError(f"{where}: 'instances' must be a list of JSON objects.")
    if not instances:
        raise DataError(f"{where}: 'instances' is empty; send at least one record.")
    for i, rec in enumerate(instances):
        if not isinstance(rec, dict):
            raise DataError(f"{where}: instance {i} is not a JSON object.")
        missing = [f for f in features if f not in rec]
        if missing:
            raise DataError(f"{where}: instance {i} lacks feature(s) {missing}.")
        for f in features:
            v = rec[f]
            if f in NUMERIC_FEATURES:
                if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
                    raise DataError(
                        f"{where}: instance {i} feature {f!r} must be a finite number. "
                        f"Got {v!r} instead."
                    )
            elif f in CATEGORIES:
                if v not in CATEGORIES[f]:
                    raise DataError(
                        f"{where}: instance {i} feature {f!r} must be one of "
                        f"{list(CATEGORIES[f])}. Got {v!r} instead."
                    )
            elif f == "first_name":
                if not isinstance(v, str) or not any(c.isalpha() for c in v):
                    raise DataError(
                        f"{where}: instance {i} 'first_name' must be a string with a letter. "
                        f"Got {v!r} instead."
                    )
    frame = pd.DataFrame.from_records([{f: rec[f] for f in features} for rec in instances])
    for f in NUMERIC_FEATURES:
        frame[f] = frame[f].astype("float64")
    return frame


@dataclass
class Platform:
    """One model behind two interfaces. ``seed`` drives the name draw of the user interface."""

    model: PlatformModel
    fairwash: FairwashConfig = field(default_factory=FairwashConfig)
    seed: int = 0
    thresholds: tuple[float, float] | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        if self.fairwash.select == "margin" and self.fairwash.mode != "none":
            from fairprobe.datasets.adult import load_adult

            ref = load_adult("train", names_seed=None)
            scores = self.model.proba(ref)
            self.thresholds = margin_thresholds(
                self.fairwash, scores, (ref["sex"] == FEMALE).to_numpy()
            )

    def _truthful(self, frame: pd.DataFrame) -> npt.NDArray[np.float64]:
        return self.model.proba(frame)

    def audit_predict(self, instances: Any) -> Predictions:
        """The audit API: truthful model answers, then the configured fairwash flips."""
        frame = _validate(instances, AUDIT_FEATURES, "audit")
        scores = self._truthful(frame)
        decisions = (scores >= 0.5).astype(np.int64)
        female = (frame["sex"] == FEMALE).to_numpy()
        if self.fairwash.mode != "none" and self.fairwash.gamma > 0:
            if self.fairwash.select == "random":
                u = np.array(
                    [
                        hash_uniform(record_key(r), self.fairwash.seed, "fairwash")
                        for r in frame.to_dict("records")
                    ]
                )
            else:
                u = np.zeros(len(frame))
            flips = self.fairwash.flips(decisions, female, u, scores, self.thresholds)
            scores = apply_flips(scores, flips)
            decisions = np.where(flips, 1 - decisions, decisions)
        else:
            flips = np.zeros(len(frame), dtype=bool)
        return Predictions(decisions, scores, logit(scores), flips, frame["sex"].to_numpy())

    def infer_sex(self, frame: pd.DataFrame) -> npt.NDArray[np.object_]:
        """Sex the user interface infers from ``first_name`` (deterministic per record)."""
        p = np.array([female_probability(n) for n in frame["first_name"]], dtype=np.float64)
        u = np.array(
            [
                hash_uniform(user_key(r), self.seed, "name") if 0 < pi < 1 else 0.5
                for r, pi in zip(frame.to_dict("records"), p, strict=True)
            ]
        )
        return np.where(u < p, FEMALE, "Male").astype(object)

    def user_predict(self, instances: Any) -> Predictions:
        """The user interface: sex inferred from the first name, then the same model, no lies."""
        frame = _validate(instances, USER_FEATURES, "user")
        frame["sex"] = self.infer_sex(frame)
        scores = self._truthful(frame)
        decisions = (scores >= 0.5).astype(np.int64)
        return Predictions(
            decisions,
            scores,
            logit(scores),
            np.zeros(len(frame), dtype=bool),
            frame["sex"].to_numpy(),
        )
