"""Proxies linking the user interface B to the audit API A (Section 3.3 of the two-source paper).

A proxy :math:`\\phi` maps what the auditor sees on B, :math:`(x_B, y_B)`, to the A-side sample
it predicts, :math:`(x_A, y_A)`, with some probability. Here ``x_A`` differs from ``x_B`` by the
protected attribute (B does not show it; the proxy infers it), and the predicted answer is B's
answer (an honest platform runs one model behind both interfaces). Every proxy therefore gives,
for each B-side record, a probability per protected group; predictions are draws from these,
seeded.

Its accuracy :math:`p_\\phi` is measured on records where both sides are known (the auditor built
the queries): the expected share of records whose group the proxy gets right,
:math:`p_\\phi = \\frac{1}{n}\\sum_i P(\\phi(x_{B,i}) = g_i)` — exact, no sampling.

Registered proxies (:data:`PROXIES`, :func:`make_proxy`): ``identity`` (B shows the group:
Example 1, perfect), ``name`` (the last-letter rule of Section 5.1, via
:mod:`fairprobe.datasets.names`), ``mapping`` (a table of probabilities per value of one column,
Example 3), ``learned`` (any scikit-learn classifier) and ``random`` (Appendix C's worst case).
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt
import pandas as pd

from fairprobe._registry import ClassRegistry
from fairprobe._validation import check_choice, check_int
from fairprobe.errors import ConfigError, DataError, InvalidParameterError

__all__ = [
    "PROXIES",
    "IdentityProxy",
    "LearnedProxy",
    "MappingProxy",
    "NameProxy",
    "Proxy",
    "ProxyAccuracy",
    "RandomProxy",
    "honest_consistency",
    "make_proxy",
    "proxy_from_spec",
    "register_proxy",
    "resolve_inference",
    "true_group_probabilities",
]

FloatArray = npt.NDArray[np.float64]
ObjArray = npt.NDArray[np.object_]


@dataclass(frozen=True)
class ProxyAccuracy:
    r"""Accuracy of a proxy on records whose group is known.

    ``p_phi`` is the expected accuracy :math:`\frac1n\sum_i p_i` with
    :math:`p_i = P(\phi(x_{B,i}) = g_i)` (the paper's :math:`p_\phi`, 91% in Section 5.1).
    ``p_agree`` is :math:`\frac1n\sum_i p_i^2`: the probability that two independent draws of
    the proxy — the auditor's and the platform's own inference on B, which Section 5.1 assumes
    use the same rule — both land on the true group, a lower bound of the chance that an honest
    pair is consistent. Both are equal for a deterministic proxy. ``confusion[i][j]`` is the
    expected number of records of true group ``groups[i]`` that the proxy assigns to
    ``groups[j]``.
    """

    proxy: str
    n: int
    p_phi: float
    groups: tuple[str, ...]
    confusion: tuple[tuple[float, ...], ...]
    p_agree: float = float("nan")

    def to_dict(self) -> dict[str, Any]:
        return {
            "proxy": self.proxy,
            "n": self.n,
            "p_phi": self.p_phi,
            "p_agree": self.p_agree,
            "groups": list(self.groups),
            "confusion": [list(r) for r in self.confusion],
        }


class Proxy(ABC):
    """Base class: a per-record probability over protected groups, from B-side records.

    Subclasses set ``name`` and implement :meth:`group_probabilities`; ``groups`` lists the
    groups they can output, in column order.
    """

    name: ClassVar[str] = "proxy"
    groups: tuple[str, ...]

    @abstractmethod
    def group_probabilities(self, records: pd.DataFrame) -> FloatArray:
        """``(n, len(groups))`` array of ``P(phi(x_B) = group)``; rows sum to 1."""

    @property
    def required_columns(self) -> tuple[str, ...]:
        """B-side columns the proxy reads."""
        return ()

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "groups": list(self.groups)}

    # ---- shared machinery -------------------------------------------------------------------

    def probabilities(self, records: pd.DataFrame) -> FloatArray:
        """Validated ``(n, len(groups))`` probabilities of :meth:`group_probabilities`."""
        return self._probabilities(records)

    def _probabilities(self, records: pd.DataFrame) -> FloatArray:
        if not isinstance(records, pd.DataFrame):
            raise DataError(
                f"Proxy {self.name!r} needs a pandas DataFrame of B-side records. Got "
                f"{type(records).__name__} instead."
            )
        missing = [c for c in self.required_columns if c not in records.columns]
        if missing:
            raise DataError(
                f"Proxy {self.name!r} needs the column(s) {missing} in the B-side records; "
                f"they have {list(records.columns)}."
            )
        p = np.asarray(self.group_probabilities(records), dtype=np.float64)
        if p.shape != (len(records), len(self.groups)):
            raise DataError(
                f"Proxy {self.name!r} returned probabilities of shape {p.shape}, expected "
                f"{(len(records), len(self.groups))}."
            )
        if not np.all(np.isfinite(p)) or np.any(p < -1e-9) or not np.allclose(p.sum(1), 1.0):
            raise DataError(f"Proxy {self.name!r} returned rows that are not probabilities.")
        return np.clip(p, 0.0, 1.0)

    def predict_groups(self, records: pd.DataFrame, seed: int | None = 0) -> ObjArray:
        """One draw of :math:`\\phi` per record: the predicted protected group (seeded)."""
        return self.draw(self._probabilities(records), seed)

    def draw(self, p: FloatArray, seed: int | None = 0) -> ObjArray:
        """Seeded draws of groups from a ``(n, len(groups))`` probability array."""
        if p.shape[0] == 0:
            return np.empty(0, dtype=object)
        rng = np.random.default_rng(seed)
        u = np.asarray(rng.random(size=(p.shape[0],)), dtype=np.float64)
        cum = np.cumsum(p, axis=1)
        cum[:, -1] = 1.0 + 1e-12
        idx = (u[:, None] >= cum).sum(axis=1)
        return np.asarray(self.groups, dtype=object)[idx]

    def predict(
        self, records: pd.DataFrame, decisions: npt.ArrayLike, seed: int | None = 0
    ) -> tuple[ObjArray, FloatArray]:
        """:math:`\\phi(x_B, y_B) = (x_A, y_A)`: predicted group and predicted A answer.

        The predicted A answer is B's answer: the same model stands behind both interfaces.
        """
        d = np.asarray(decisions, dtype=np.float64)
        if d.shape != (len(records),):
            raise DataError(f"Got {len(records)} B-side records but {d.size} B answers.")
        return self.predict_groups(records, seed), d

    def check_groups(self, known: Sequence[str]) -> None:
        """Raise :class:`DataError` if the proxy can output a group outside ``known``."""
        unknown = sorted(set(self.groups) - set(known))
        if unknown:
            raise DataError(
                f"Proxy {self.name!r} maps to unknown group(s) {unknown}; the audit's groups "
                f"are {sorted(known)}. Fix the proxy's table or the group column."
            )

    def accuracy(self, records: pd.DataFrame, true_groups: npt.ArrayLike) -> ProxyAccuracy:
        """Exact expected accuracy :math:`p_\\phi` on records whose group is known."""
        g = np.asarray(true_groups, dtype=object)
        if g.shape != (len(records),):
            raise DataError(f"Got {len(records)} records but {g.size} known groups.")
        if len(records) == 0:
            raise DataError("A proxy's accuracy needs at least one record with a known group.")
        self.check_groups(list(pd.unique(g)) + list(self.groups))
        labels = tuple(sorted(set(self.groups) | {str(x) for x in pd.unique(g)}))
        p = self._probabilities(records)
        # expected confusion over the union of labels
        col_of = {grp: j for j, grp in enumerate(self.groups)}
        conf = np.zeros((len(labels), len(labels)))
        for i, lab in enumerate(labels):
            rows = g == lab
            if not rows.any():
                continue
            for grp, j in col_of.items():
                conf[i, labels.index(grp)] = p[rows, j].sum()
        hit = np.zeros(len(records))
        for grp, j in col_of.items():
            hit += np.where(g == grp, p[:, j], 0.0)
        return ProxyAccuracy(
            self.name,
            len(records),
            float(hit.mean()),
            labels,
            tuple(tuple(float(x) for x in r) for r in conf),
            float((hit * hit).mean()),
        )


#: The registry of proxy strategies, by name.
PROXIES: ClassRegistry[Proxy] = ClassRegistry("proxy", "make_proxy")
register_proxy = PROXIES.register
"""Class decorator adding a :class:`Proxy` subclass to :data:`PROXIES` under its ``name``."""
make_proxy = PROXIES.make
"""Build the registered proxy ``name`` (keyword arguments go to its constructor)."""


def _check_groups_arg(groups: Sequence[str], owner: str) -> tuple[str, ...]:
    gs = tuple(str(g) for g in groups)
    if len(gs) < 2 or len(set(gs)) != len(gs):
        raise InvalidParameterError(
            f"The 'groups' parameter of {owner} must list at least two distinct groups. Got "
            f"{list(groups)!r} instead."
        )
    return gs


@register_proxy
class IdentityProxy(Proxy):
    """B shows the protected attribute itself (Example 1, :math:`\\phi_X`): perfect proxy."""

    name = "identity"

    def __init__(self, column: str = "sex", groups: Sequence[str] = ("Female", "Male")) -> None:
        self.column = column
        self.groups = _check_groups_arg(groups, "IdentityProxy")

    @property
    def required_columns(self) -> tuple[str, ...]:
        return (self.column,)

    def group_probabilities(self, records: pd.DataFrame) -> FloatArray:
        v = records[self.column].astype(object).to_numpy()
        bad = sorted({str(x) for x in v} - set(self.groups))
        if bad:
            raise DataError(
                f"Proxy 'identity' maps to unknown group(s) {bad} found in column "
                f"{self.column!r}; known groups are {list(self.groups)}."
            )
        return np.stack([(v == g).astype(np.float64) for g in self.groups], axis=1)

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "column": self.column}


@register_proxy
class NameProxy(Proxy):
    """The first-name rule of Sections 3.3 and 5.1 (:mod:`fairprobe.datasets.names`).

    Last letter a, e or i: Female; h or y: Female or Male with probability 1/2 each; otherwise
    Male.
    """

    name = "name"

    def __init__(self, column: str = "first_name") -> None:
        from fairprobe.datasets.names import FEMALE, MALE

        self.column = column
        self.groups = (FEMALE, MALE)

    @property
    def required_columns(self) -> tuple[str, ...]:
        return (self.column,)

    def group_probabilities(self, records: pd.DataFrame) -> FloatArray:
        from fairprobe.datasets.names import female_probability

        names = records[self.column].to_numpy()
        # one rule evaluation per distinct name, then a vectorised lookup
        uniq, inv = np.unique(names.astype(str), return_inverse=True)
        pf = np.array([female_probability(str(n)) for n in uniq], dtype=np.float64)[inv]
        return np.stack([pf, 1.0 - pf], axis=1)

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "column": self.column, "rule": "last letter (Section 5.1)"}


@register_proxy
class MappingProxy(Proxy):
    """A table ``value -> {group: probability}`` on one B-side column (Example 3).

    A value may also map straight to a group name (probability 1). Values absent from the table
    use ``default`` (a ``{group: probability}`` mapping) or raise :class:`DataError`.
    """

    name = "mapping"

    def __init__(
        self,
        table: Mapping[Any, str | Mapping[str, float]],
        column: str,
        default: Mapping[str, float] | None = None,
    ) -> None:
        if not isinstance(table, Mapping) or not table:
            raise InvalidParameterError(
                "The 'table' parameter of MappingProxy must be a non-empty mapping. Got "
                f"{table!r} instead."
            )
        rows: dict[str, dict[str, float]] = {}
        for key, val in table.items():
            if isinstance(val, str):
                rows[str(key)] = {val: 1.0}
            elif isinstance(val, Mapping):
                rows[str(key)] = {str(g): float(p) for g, p in val.items()}
            else:
                raise InvalidParameterError(
                    f"MappingProxy: the entry for {key!r} must be a group name or a "
                    f"{{group: probability}} mapping. Got {val!r} instead."
                )
        dflt = None if default is None else {str(g): float(p) for g, p in default.items()}
        checked = [*rows.items(), *([("<default>", dflt)] if dflt is not None else [])]
        for key, dist in checked:
            vals = np.array(list(dist.values()), dtype=np.float64)
            if vals.size == 0 or np.any(vals < 0) or not np.isclose(vals.sum(), 1.0):
                raise InvalidParameterError(
                    f"MappingProxy: the probabilities for {key!r} must be >= 0 and sum to 1. "
                    f"Got {dist} instead."
                )
        self.groups = tuple(sorted({g for _, d in checked for g in d}))
        self.column = column
        self._table = {k: np.array([d.get(g, 0.0) for g in self.groups]) for k, d in rows.items()}
        self._default = None if dflt is None else np.array([dflt.get(g, 0.0) for g in self.groups])

    @classmethod
    def from_json(cls, path: str | Path) -> MappingProxy:
        """Load ``{"column": ..., "table": {...}, "default": {...}}`` from a JSON file."""
        p = Path(path)
        try:
            spec = json.loads(p.read_text())
        except (OSError, ValueError) as exc:
            raise ConfigError(f"Cannot read the mapping proxy file {str(p)!r}: {exc}") from exc
        if not isinstance(spec, dict) or "table" not in spec or "column" not in spec:
            raise ConfigError(
                f"The mapping proxy file {str(p)!r} must hold an object with 'column' and 'table'."
            )
        return cls(spec["table"], spec["column"], spec.get("default"))

    @property
    def required_columns(self) -> tuple[str, ...]:
        return (self.column,)

    def group_probabilities(self, records: pd.DataFrame) -> FloatArray:
        vals = records[self.column].astype(str).to_numpy()
        uniq, inv = np.unique(vals, return_inverse=True)
        out = np.empty((uniq.size, len(self.groups)))
        for i, v in enumerate(uniq):
            row = self._table.get(str(v), self._default)
            if row is None:
                raise DataError(
                    f"Proxy 'mapping' has no entry for {self.column}={v!r} and no default; "
                    "add it to the table."
                )
            out[i] = row
        return out[inv] if len(vals) else np.empty((0, len(self.groups)))

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "column": self.column, "entries": len(self._table)}


@register_proxy
class LearnedProxy(Proxy):
    """Any scikit-learn classifier with ``predict_proba``, fitted on records with known groups.

    ``features`` are the B-side columns it reads; categorical ones are one-hot encoded by a
    pipeline built here when ``estimator`` is a bare classifier. Default estimator:
    ``LogisticRegression(max_iter=1000)``; the fit is deterministic given ``seed``.
    """

    name = "learned"

    def __init__(
        self,
        features: Sequence[str] = ("first_name",),
        estimator: Any = None,
        seed: int = 0,
    ) -> None:
        if not features:
            raise InvalidParameterError(
                "The 'features' parameter of LearnedProxy must be non-empty."
            )
        self.features = tuple(features)
        self.seed = check_int(seed, "seed", "LearnedProxy", lo=0)
        self.estimator = estimator
        self.groups = ()
        self._model: Any = None

    @property
    def required_columns(self) -> tuple[str, ...]:
        return self.features

    def fit(self, records: pd.DataFrame, groups: npt.ArrayLike) -> LearnedProxy:
        """Fit on records whose protected group is known."""
        from sklearn.compose import ColumnTransformer
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import Pipeline
        from sklearn.preprocessing import OneHotEncoder, StandardScaler

        g = np.asarray(groups, dtype=object).astype(str)
        if g.shape != (len(records),) or len(records) == 0:
            raise DataError(f"LearnedProxy.fit needs one known group per record ({len(records)}).")
        missing = [c for c in self.features if c not in records.columns]
        if missing:
            raise DataError(f"LearnedProxy.fit: the records lack the column(s) {missing}.")
        if len(set(g)) < 2:
            raise DataError("LearnedProxy.fit needs records of at least two groups.")
        X = records[list(self.features)]
        cat = [c for c in self.features if not pd.api.types.is_numeric_dtype(X[c])]
        num = [c for c in self.features if c not in cat]
        clf = (
            self.estimator
            if self.estimator is not None
            else LogisticRegression(max_iter=1000, random_state=self.seed)
        )
        pre = ColumnTransformer(
            [("cat", OneHotEncoder(handle_unknown="ignore"), cat), ("num", StandardScaler(), num)]
        )
        model = Pipeline([("pre", pre), ("clf", clf)])
        try:
            model.fit(X, g)
        except Exception as exc:
            raise DataError(f"LearnedProxy could not fit its classifier: {exc}") from exc
        if not callable(getattr(model, "predict_proba", None)):
            raise InvalidParameterError("LearnedProxy needs a classifier with predict_proba.")
        self._model = model
        self.groups = tuple(str(c) for c in model.classes_)
        return self

    def group_probabilities(self, records: pd.DataFrame) -> FloatArray:
        if self._model is None:
            raise DataError("LearnedProxy is not fitted: call fit(records, groups) first.")
        if len(records) == 0:
            return np.empty((0, len(self.groups)))
        return np.asarray(self._model.predict_proba(records[list(self.features)]), dtype=float)

    def describe(self) -> dict[str, Any]:
        est = self._model.steps[-1][1] if self._model is not None else self.estimator
        return {**super().describe(), "features": list(self.features), "estimator": repr(est)}


@register_proxy
class RandomProxy(Proxy):
    """Ignores the record: each group with fixed probabilities (Appendix C's :math:`\\phi_*`)."""

    name = "random"

    def __init__(
        self,
        groups: Sequence[str] = ("Female", "Male"),
        probabilities: Sequence[float] | None = None,
    ) -> None:
        self.groups = _check_groups_arg(groups, "RandomProxy")
        if probabilities is None:
            self._p = np.full(len(self.groups), 1.0 / len(self.groups))
        else:
            p = np.asarray(probabilities, dtype=np.float64)
            if p.shape != (len(self.groups),) or np.any(p < 0) or not np.isclose(p.sum(), 1.0):
                raise InvalidParameterError(
                    "The 'probabilities' parameter of RandomProxy must be one probability per "
                    f"group summing to 1. Got {probabilities!r} instead."
                )
            self._p = p

    def group_probabilities(self, records: pd.DataFrame) -> FloatArray:
        return np.tile(self._p, (len(records), 1))

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "probabilities": self._p.tolist()}


def proxy_from_spec(spec: str, **kwargs: Any) -> Proxy:
    """Build a proxy from a CLI spec: ``identity``, ``name``, ``random``, ``learned`` or
    ``mapping:PATH.json``."""
    if spec.startswith("mapping:"):
        return MappingProxy.from_json(spec.split(":", 1)[1])
    if spec == "mapping":
        raise InvalidParameterError(
            "The 'proxy' parameter 'mapping' needs a table file: use mapping:PATH.json."
        )
    factory: Callable[..., Proxy] = PROXIES[check_choice(spec, "proxy", "twosource", list(PROXIES))]
    return factory(**kwargs)


def resolve_inference(proxy: Proxy, inference: Proxy | None, owner: str) -> Proxy:
    """The rule the detectors assume B uses to infer the group: ``inference``, else ``proxy``.

    The detectors' honest mismatch rates are the chances that *B's own* inference misses the
    true group. Taking them from the auditor's proxy is right only when the proxy is B's rule
    (Section 5.1's assumption). A learned classifier is the auditor's estimate of the group, not
    the platform's rule: its errors differ from B's, and depend on the decision (on the bundled
    platform an honest audit was flagged manipulated in most runs when its probabilities set
    the null), so it is refused without an explicit ``inference`` rule.
    """
    if inference is not None:
        if not isinstance(inference, Proxy):
            raise InvalidParameterError(
                f"The 'inference' parameter of {owner} must be a fairprobe.twosource Proxy (the "
                f"rule B uses to infer the group). Got {type(inference).__name__} instead."
            )
        return inference
    if isinstance(proxy, LearnedProxy):
        raise InvalidParameterError(
            f"{owner}: the learned proxy is the auditor's estimate of the group, not the rule B "
            "uses to infer it, so its probabilities cannot set the detectors' honest rates (its "
            "errors depend on the decision, and an honest platform would be flagged "
            "manipulated). Give the rule B uses as the 'inference' parameter (e.g. "
            "NameProxy(), the paper's Section 5.1 rule; CLI: --inference name)."
        )
    return proxy


def true_group_probabilities(rule: Proxy, records: pd.DataFrame,
                             true_groups: npt.ArrayLike) -> FloatArray:
    """``P(rule(x_B) = g_i)`` per record: the chance the rule lands on the true group."""
    g = np.asarray(true_groups, dtype=object)
    p = rule.probabilities(records)
    out = np.zeros(len(records))
    for j, grp in enumerate(rule.groups):
        out = np.where(g == grp, p[:, j], out)
    return np.asarray(out, dtype=np.float64)


def honest_consistency(proxy: Proxy, inference: Proxy, records: pd.DataFrame,
                       true_groups: npt.ArrayLike) -> float:
    r"""Lower bound of the chance that an honest pair is consistent, averaged over ``records``.

    A pair is surely consistent when the auditor's draw of ``proxy`` and B's inference with
    ``inference`` both land on the true group; the two draws are independent (the auditor's
    coin is her own), so the bound is :math:`\frac1n\sum_i p_i r_i`. With ``inference`` the
    proxy itself it is :attr:`ProxyAccuracy.p_agree`.
    """
    p = true_group_probabilities(proxy, records, true_groups)
    r = p if inference is proxy else true_group_probabilities(inference, records, true_groups)
    return float(np.mean(p * r))
