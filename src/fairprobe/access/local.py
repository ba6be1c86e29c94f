"""A local model as a black box: a scikit-learn estimator (skops or joblib file) or a callable."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from fairprobe.access.base import Answer, Backend, Record
from fairprobe.errors import AccessError, ConfigError, DataError

__all__ = ["PICKLE_SUFFIXES", "LocalModelBackend", "file_sha256", "load_estimator"]

#: Model files that are pickles (they can run code when loaded: opt-in only).
PICKLE_SUFFIXES = (".joblib", ".pkl", ".pickle")


def load_estimator(
    path: str | os.PathLike[str],
    *,
    trusted: Sequence[str] = (),
    allow_pickle: bool = False,
    pickle_hint: str = "set allow_pickle = true",
    trusted_hint: str | None = None,
) -> Any:
    """Load a model file with the one rule fairprobe applies everywhere.

    skops files (``.skops``) load safely: every type they hold must be trusted by skops or listed
    in ``trusted``. joblib/pickle files (``.joblib``, ``.pkl``, ``.pickle``) can run arbitrary
    code when loaded, so they load only with ``allow_pickle=True`` (files you made or trust);
    ``pickle_hint`` says how to opt in (``--allow-pickle`` on the command line), and
    ``trusted_hint`` how to trust more skops types (``{}`` receives the quoted type names;
    default: the backend config's ``trusted = [...]``).

    Raises
    ------
    ConfigError
        A missing, unreadable or untrusted file, a pickle without opt-in, another suffix.
    """
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"model file {str(p)!r} does not exist.")
    suffix = p.suffix.lower()
    if suffix == ".skops":
        import skops.io as sio

        try:
            untrusted = sio.get_untrusted_types(file=p)
        except Exception as exc:  # noqa: BLE001
            raise ConfigError(f"Cannot load model file {str(p)!r}: {exc}") from None
        refused = [t for t in untrusted if t not in set(trusted)]
        if refused:
            raise ConfigError(
                f"{p.name} holds types skops does not trust: {', '.join(refused)}; if you trust "
                + (trusted_hint or "this file, list them in the backend config: trusted = [{}].")
                .format(", ".join(f'"{t}"' for t in refused))
            )
        try:
            return sio.load(p, trusted=list(untrusted))
        except Exception as exc:  # noqa: BLE001
            raise ConfigError(f"Cannot load model file {str(p)!r}: {exc}") from None
    if suffix in PICKLE_SUFFIXES:
        if not allow_pickle:
            raise ConfigError(
                f"{p.name} is a pickle, which can run arbitrary code when loaded; {pickle_hint} "
                "if you trust it, or save the model with skops (.skops)."
            )
        import joblib

        try:
            return joblib.load(p)
        except Exception as exc:  # noqa: BLE001
            raise ConfigError(f"Cannot load model file {str(p)!r}: {exc}") from None
    raise ConfigError(
        f"model file {p.name} must end in .skops, .joblib or .pkl; got {suffix or 'none'}."
    )


def file_sha256(path: str | os.PathLike[str]) -> str:
    """SHA-256 (hex) of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _callable_fingerprint(fn: Callable[..., Any]) -> str:
    """A hash of a callable's code and captured values (best effort, stable across runs)."""
    import joblib

    h = hashlib.sha256()
    code = getattr(fn, "__code__", None)
    if code is not None:
        h.update(code.co_code)
        h.update(repr(code.co_consts).encode())
        h.update(repr(code.co_names).encode())
        for cell in getattr(fn, "__closure__", None) or ():
            try:
                h.update(joblib.hash(cell.cell_contents).encode())
            except Exception:  # noqa: BLE001 - unhashable capture: keep the rest
                h.update(b"?")
    else:
        try:
            h.update(joblib.hash(fn).encode())
        except Exception:  # noqa: BLE001
            h.update(type(fn).__qualname__.encode())
    return h.hexdigest()[:16]


def _as_column(values: Any, n: int, what: str, who: str) -> npt.NDArray[Any] | None:
    if values is None:
        return None
    arr = np.asarray(values)
    if arr.ndim != 1 or arr.shape[0] != n:
        raise AccessError(
            f"{who} returned {what} of shape {arr.shape} for {n} records; expected ({n},)."
        )
    return arr


def _scalar(v: Any) -> Any:
    if v is None:
        return None
    x = v.item() if isinstance(v, np.generic) else v
    if isinstance(x, float) and np.isnan(x):
        return None
    return x


class LocalModelBackend(Backend):
    """A scikit-learn estimator or any Python callable, asked in-process.

    Parameters
    ----------
    model : estimator or callable
        An object with ``predict`` (a fitted scikit-learn classifier or pipeline), or a callable
        ``f(df) -> decisions``, where ``df`` is the batch as a :class:`pandas.DataFrame` and the
        result is an array of 0/1 (or booleans), a tuple ``(decisions, scores[, logits])`` or a
        mapping with keys ``"decision"``, ``"score"``, ``"logit"``.
    positive_label : object, optional
        The class counted as a positive decision. Default: ``1`` (or ``True``) for 0/1 labels,
        else the second of ``classes_``; required for more than two classes.
    feature_columns : sequence of str, optional
        Columns passed to the model, in order. Default: the estimator's ``feature_names_in_``
        when it has one, else every field of the records.
    name : str, optional
        A stable name for the cache identity. Default: a hash of the estimator (``joblib.hash``)
        or of the callable's code and captured values.
    max_batch : int, default=1024
        Records per call.

    Notes
    -----
    For estimators, the decision is ``predict(X) == positive_label`` (the model's own decision
    rule), the score is ``predict_proba(X)[:, positive]`` where available and the logit is
    ``decision_function(X)`` for binary models (sign-flipped when the positive class comes
    first).
    """

    kind = "local"

    def __init__(
        self,
        model: Any,
        *,
        positive_label: Any = None,
        feature_columns: Sequence[str] | None = None,
        name: str | None = None,
        max_batch: int = 1024,
        _fingerprint: str | None = None,
    ) -> None:
        self.model = model
        self.max_batch = max_batch
        self._from_file = _fingerprint is not None
        self.feature_columns = None if feature_columns is None else list(feature_columns)
        self._is_estimator = hasattr(model, "predict")
        if not self._is_estimator and not callable(model):
            raise ConfigError(
                f"a local model must be a fitted estimator with predict() or a callable; got a "
                f"{type(model).__name__}."
            )
        self.positive_label = positive_label
        self._pos_index: int | None = None
        if self._is_estimator:
            classes = getattr(model, "classes_", None)
            if classes is None:
                raise ConfigError(_no_classes(model))
            classes = list(np.asarray(classes).tolist())
            if positive_label is None:
                if len(classes) == 2 and set(classes) <= {0, 1}:
                    positive_label = 1
                elif len(classes) == 2:
                    positive_label = classes[1]
                else:
                    raise ConfigError(
                        f"the model has {len(classes)} classes {classes}; set positive_label."
                    )
            if positive_label not in classes:
                raise ConfigError(
                    f"positive_label {positive_label!r} is not one of the model's classes "
                    f"{classes}."
                )
            self.positive_label = positive_label
            self._pos_index = classes.index(positive_label)
            self._n_classes = len(classes)
            if self.feature_columns is None and hasattr(model, "feature_names_in_"):
                self.feature_columns = [str(c) for c in model.feature_names_in_]
        if name is None:
            if _fingerprint is not None:
                name = _fingerprint
            elif self._is_estimator:
                import joblib

                name = f"{type(model).__name__}#{joblib.hash(model)[:16]}"
            else:
                qual = getattr(model, "__qualname__", type(model).__qualname__)
                mod = getattr(model, "__module__", "") or ""
                name = f"{mod}.{qual}#{_callable_fingerprint(model)}"
        self.name = name

    # -- construction from files ------------------------------------------------------------
    @classmethod
    def from_file(
        cls,
        path: str | os.PathLike[str],
        *,
        trusted: Sequence[str] = (),
        allow_pickle: bool = False,
        **kwargs: Any,
    ) -> LocalModelBackend:
        """Load an estimator saved with skops (``.skops``) or joblib (``.joblib``/``.pkl``).

        skops files load safely: every type they hold must be trusted by skops or listed in
        ``trusted``. joblib/pickle files can run arbitrary code when loaded, so they load only
        with ``allow_pickle=True`` (for files you made or trust).
        """
        p = Path(path)
        model = load_estimator(p, trusted=trusted, allow_pickle=allow_pickle)
        digest = file_sha256(p)[:16]
        kwargs.setdefault("_fingerprint", f"{p.name}#{digest}")
        return cls(model, **kwargs)

    # -- Backend ----------------------------------------------------------------------------
    @property
    def identity(self) -> str:
        cols = "" if self.feature_columns is None else ",".join(self.feature_columns)
        extra = hashlib.sha256(f"{self.positive_label!r}|{cols}".encode()).hexdigest()[:8]
        return f"local:{self.name}:{extra}"

    @property
    def endpoint(self) -> str:
        return f"in-process model {self.name}"

    def model_identity(self) -> Any:
        """The model's file hash (``from_file``) or its estimator/code hash: no re-asking."""
        from fairprobe.access.identity import ModelIdentity

        return ModelIdentity(
            model_id=self.name,
            digest=hashlib.sha256(self.identity.encode()).hexdigest()[:16],
            source="file-hash" if self._from_file else "code-hash",
        )

    def _frame(self, records: Sequence[Record]) -> pd.DataFrame:
        df = pd.DataFrame.from_records(list(records))
        if self.feature_columns is not None:
            absent = [c for c in self.feature_columns if c not in df.columns]
            if absent:
                raise DataError(
                    f"records lack the model's feature column(s) {', '.join(map(repr, absent))}"
                    "; send them (--feature-cols, or --send-group for the sensitive column) or "
                    "set feature_columns in the backend config."
                )
            df = df[self.feature_columns]
        self.sent_columns = [str(c) for c in df.columns]  # what reached the model
        return df

    def ask(self, records: Sequence[Record]) -> list[Answer]:
        n = len(records)
        df = self._frame(records)
        who = f"local model {self.name}"
        if self._is_estimator:
            dec, sco, lgt = self._ask_estimator(df)
        else:
            dec, sco, lgt = self._ask_callable(df, n, who)
        # NaN decisions are kept as NaN so that validation rejects them; None means unparsed
        ds = [v.item() if isinstance(v, np.generic) else v for v in dec.tolist()]
        ss = [None] * n if sco is None else [_scalar(v) for v in sco.tolist()]
        zs = [None] * n if lgt is None else [_scalar(v) for v in lgt.tolist()]
        return [Answer(d, s, z) for d, s, z in zip(ds, ss, zs, strict=True)]

    def _ask_estimator(
        self, df: pd.DataFrame
    ) -> tuple[npt.NDArray[Any], npt.NDArray[Any] | None, npt.NDArray[Any] | None]:
        model = self.model
        # a model fitted on arrays gets an array: a frame would make scikit-learn warn
        # "X has feature names" into the audit's output on every batch
        X: Any = (df.to_numpy() if hasattr(model, "n_features_in_")
                  and not hasattr(model, "feature_names_in_") else df)
        pred = np.asarray(model.predict(X))
        dec = (pred == self.positive_label).astype(np.int64)
        sco: npt.NDArray[Any] | None = None
        lgt: npt.NDArray[Any] | None = None
        try:
            proba = model.predict_proba(X)
        except AttributeError:
            proba = None
        if proba is not None:
            sco = np.clip(np.asarray(proba, dtype=np.float64)[:, self._pos_index], 0.0, 1.0)
        if self._n_classes == 2:
            try:
                z = np.asarray(model.decision_function(X), dtype=np.float64)
            except AttributeError:
                z = None
            if z is not None and z.ndim == 1:
                lgt = z if self._pos_index == 1 else -z
        return dec, sco, lgt

    def _ask_callable(
        self, df: pd.DataFrame, n: int, who: str
    ) -> tuple[npt.NDArray[Any], npt.NDArray[Any] | None, npt.NDArray[Any] | None]:
        out = self.model(df)
        if isinstance(out, Mapping):
            if "decision" not in out:
                raise AccessError(f"{who} returned a mapping without a 'decision' key.")
            parts = (out["decision"], out.get("score"), out.get("logit"))
        elif isinstance(out, tuple):
            if not 1 <= len(out) <= 3:
                raise AccessError(
                    f"{who} returned a tuple of {len(out)}; expected (decisions, scores, logits)."
                )
            parts = (*out, *(None,) * (3 - len(out)))
        else:
            parts = (out, None, None)
        dec = _as_column(parts[0], n, "decisions", who)
        assert dec is not None
        if dec.dtype == bool:
            dec = dec.astype(np.int64)
        return dec, _as_column(parts[1], n, "scores", who), _as_column(parts[2], n, "logits", who)


def _no_classes(model: Any) -> str:
    """Why an estimator without ``classes_`` cannot be audited, and what to do about it: a
    fitted regressor returns values, not decisions; anything else is not fitted yet."""
    from sklearn.base import is_regressor
    from sklearn.exceptions import NotFittedError
    from sklearn.utils.validation import check_is_fitted

    name = type(model).__name__
    try:
        check_is_fitted(model)
    except (NotFittedError, TypeError):
        return f"the {name} is not fitted: fit it before auditing it."
    if is_regressor(model):
        return (f"the {name} is a regressor: it returns continuous values, not decisions. "
                "Audit the decisions taken from them: pass a callable model, e.g. "
                "LocalModelBackend(lambda df: reg.predict(df) >= T), or save a classifier.")
    return f"the {name} has no classes_: audit a fitted classifier (predict gives decisions)."
