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
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from fairprobe.datasets.adult import USER_FEATURES
from fairprobe.datasets.names import FEMALE, female_probability, hash_uniform
from fairprobe.errors import DataError
from fairprobe.platform.fairwash import FairwashConfig, apply_flips, margin_thresholds
from fairprobe.platform.model import (
    AUDIT_FEATURES,
    CATEGORIES,
    NUMERIC_FEATURES,
    Columns,
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

#: What makes a first name: one letter (any script). The OpenAPI schema states the same pattern
#: (``fairprobe.platform.server``), so the schema and the check agree to the character.
NAME_LETTER_PATTERN = r"[^\W\d_]"
NAME_LETTER = re.compile(NAME_LETTER_PATTERN)


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


def _finite(v: float) -> bool:
    try:
        return math.isfinite(v)
    except OverflowError:  # an int too large for a float
        return False


def _validate(instances: Any, features: Sequence[str], where: str) -> dict[str, npt.NDArray[Any]]:
    """Check every record and return the features as columns (float64 or object arrays)."""
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
                if isinstance(v, bool) or not isinstance(v, int | float) or not _finite(v):
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
                if not isinstance(v, str) or NAME_LETTER.search(v) is None:
                    raise DataError(
                        f"{where}: instance {i} 'first_name' must be a string with a letter. "
                        f"Got {v!r} instead."
                    )
    cols: dict[str, npt.NDArray[Any]] = {}
    for f in features:
        values = [rec[f] for rec in instances]
        if f in NUMERIC_FEATURES:
            cols[f] = np.array(values, dtype=np.float64)
        else:
            arr = np.empty(len(values), dtype=object)
            arr[:] = values
            cols[f] = arr
    return cols


def _rows(cols: Columns, features: Sequence[str]) -> list[dict[str, Any]]:
    n = len(next(iter(cols.values())))
    lists = {f: cols[f].tolist() for f in features}
    return [{f: lists[f][i] for f in features} for i in range(n)]


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

    def audit_predict(self, instances: Any) -> Predictions:
        """The audit API: truthful model answers, then the configured fairwash flips."""
        cols = _validate(instances, AUDIT_FEATURES, "audit")
        n = len(instances)
        scores = self.model.proba(cols)
        decisions = (scores >= 0.5).astype(np.int64)
        female = np.asarray(cols["sex"] == FEMALE, dtype=bool)
        if self.fairwash.mode != "none" and self.fairwash.gamma > 0:
            if self.fairwash.select == "random":
                seed = self.fairwash.seed
                u = np.array(
                    [
                        hash_uniform(record_key(r), seed, "fairwash")
                        for r in _rows(cols, AUDIT_FEATURES)
                    ]
                )
            else:
                u = np.zeros(n)
            flips = self.fairwash.flips(decisions, female, u, scores, self.thresholds)
            scores = apply_flips(scores, flips)
            decisions = np.where(flips, 1 - decisions, decisions)
        else:
            flips = np.zeros(n, dtype=bool)
        return Predictions(decisions, scores, logit(scores), flips, cols["sex"])

    def infer_sex(self, cols: Columns) -> npt.NDArray[np.object_]:
        """Sex the user interface infers from ``first_name`` (deterministic per record)."""
        names = cols["first_name"].tolist()
        p = np.array([female_probability(n) for n in names], dtype=np.float64)
        half = np.flatnonzero((p > 0) & (p < 1))
        u = np.full(p.shape, 0.5)
        if half.size:
            rows = _rows({f: cols[f][half] for f in USER_FEATURES}, USER_FEATURES)
            u[half] = [hash_uniform(user_key(r), self.seed, "name") for r in rows]
        out = np.empty(p.shape, dtype=object)
        out[:] = np.where(u < p, FEMALE, "Male")
        return out

    def user_predict(self, instances: Any) -> Predictions:
        """The user interface: sex inferred from the first name, then the same model, no lies."""
        cols = _validate(instances, USER_FEATURES, "user")
        cols["sex"] = self.infer_sex(cols)
        scores = self.model.proba(cols)
        decisions = (scores >= 0.5).astype(np.int64)
        return Predictions(
            decisions, scores, logit(scores), np.zeros(len(scores), dtype=bool), cols["sex"]
        )
