"""Models served by real model servers, as named backends.

Three wire protocols cover most deployed classifiers:

``kserve-v2``
    The Open Inference Protocol v2 (KServe, Seldon MLServer, NVIDIA Triton): columnar tensors.
    ``POST {url}/v2/models/{model}[/versions/{version}]/infer``; the model's declared inputs
    (names, datatypes) are read from ``GET {url}/v2/models/{model}``, readiness from
    ``GET {url}/v2/health/ready``.
``mlflow``
    ``mlflow models serve``: ``POST {url}/invocations`` with ``{"dataframe_split": {"columns",
    "data"}}``, answered ``{"predictions": [...]}``.
``kserve-v1`` (also ``tf-serving``)
    KServe v1 and TensorFlow Serving's REST API: ``POST {url}/v1/models/{model}[/versions/
    {version}]:predict`` with ``{"instances": [[...], ...]}`` (rows as lists, in
    ``feature_columns`` order), answered ``{"predictions": [...]}``.

Each batch is one request; tensors are built column by column and answers read as numpy arrays
(no per-record Python work beyond building the JSON body). The cache identity is what the server
reports about the model (v2 metadata: name, versions, platform, inputs, outputs; v1: the model's
version status), otherwise (MLflow reports nothing) cached answers pass the sized check of
:class:`fairprobe.access.BlackBox` before reuse. See ``docs/access.md``.
"""

from __future__ import annotations

import hashlib
import json
import threading
from abc import abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Literal

import numpy as np
import numpy.typing as npt
from pydantic import Field, field_validator

from fairprobe.access.base import Answer, Backend, Record, TransientAccessError
from fairprobe.access.config import BackendConfig, register_backend
from fairprobe.access.http import (
    TRANSPORT_KEYS,
    HttpBackend,
    HttpLimitsConfig,
    HttpStatusError,
    dotted_get,
    http_url,
    parse_decision,
    transport_for,
)
from fairprobe.errors import (
    AccessError,
    AnswerParseError,
    ConfigError,
    DataError,
    ModelIdentityError,
)
from fairprobe.provenance import redact_url

__all__ = [
    "KServeV1Backend",
    "KServeV1Config",
    "KServeV2Backend",
    "KServeV2Config",
    "MlflowBackend",
    "MlflowConfig",
    "ServedModelConfig",
]

Scalar = str | int | float | bool

#: Open Inference Protocol datatypes by the Python type of a column's values.
_V2_NUMERIC = {"BOOL", "UINT8", "UINT16", "UINT32", "UINT64", "INT8", "INT16", "INT32", "INT64",
               "FP16", "FP32", "FP64"}


class ServedModelConfig(HttpLimitsConfig):
    """Keys every model-server backend shares.

    Attributes
    ----------
    url : str
        Base URL of the server (``http://127.0.0.1:8080``).
    model : str
        The served model's name (KServe / MLServer / Triton / TF-Serving); for MLflow, an optional
        name that only enters the cache identity.
    version : str, optional
        The served model's version (requests go to ``.../versions/{version}``).
    feature_columns : list of str, optional
        Record fields sent, in order. Default: what the server declares (v2 metadata), else every
        field of the records in their order.
    positive_values : list, optional
        Decision values meaning positive when the model predicts labels (``[">50K"]``).
    negative_values : list, optional
        With ``positive_values``: the other valid labels (anything else is malformed).
    score_index : int
        Column of the positive class in a probability output of several columns (default 1,
        scikit-learn's ``predict_proba`` for 0/1 labels).
    threshold : float, optional
        Without a decision output: decision = ``score >= threshold``. With a probability vector
        and no threshold, the decision is its arg-max (scikit-learn's ``predict``).
    headers, headers_env : dict
        Extra headers, and headers read from environment variables (secrets; never cached).
    cache_name : str, optional
        Names the server in the cache identity instead of its URL.
    timeout : float
        Total deadline of one request in seconds (default 30), however the server paces its
        bytes.
    max_response_bytes_per_record, max_rate_limit_pause, proxy_loopback
        Transport limits (:class:`fairprobe.access.http.HttpLimitsConfig`).
    """

    url: str
    model: str | None = None
    version: str | None = None
    feature_columns: list[str] | None = None
    positive_values: list[Scalar] | None = None
    negative_values: list[Scalar] | None = None
    score_index: int = Field(default=1, ge=0)
    threshold: float | None = Field(default=None, ge=0.0, le=1.0)
    headers: dict[str, str] = {}
    headers_env: dict[str, str] = {}
    cache_name: str | None = None
    max_batch: int = Field(default=256, ge=1)
    timeout: float = Field(default=30.0, gt=0.0)

    @field_validator("url")
    @classmethod
    def _check_url(cls, v: str) -> str:
        url = http_url(v)
        # the protocol's own path is added by the backend: a URL that already holds it would
        # be asked at .../v2/v2/... (a 404 far from its cause)
        for tail in ("/v2/models", "/v2", "/v1/models", "/v1", "/invocations"):
            head, sep, _ = url.partition(tail)
            if sep and (url.endswith(tail) or url[len(head) + len(tail)] == "/"):
                raise ValueError(
                    f"give the server's base URL, without {tail!r}: url = {head!r} (the "
                    "backend adds the protocol's paths; model / version name the model)")
        return url


class KServeV2Config(ServedModelConfig):
    """An Open Inference Protocol v2 model (KServe, Seldon MLServer, Triton).

    Attributes
    ----------
    model : str
        Required: the model's name on the server. The cache identity is the model's metadata
        with its version (``version``, or the versions the server lists); a model the server
        lists without a version is fingerprinted instead (a name alone does not identify it).
    inputs : {"auto", "columns", "tensor"}
        ``columns``: one 1-D tensor per record field, named after it (what MLServer's pandas
        codec and multi-input Triton models take); ``tensor``: one 2-D tensor ``[n, d]`` of the
        fields in ``feature_columns`` order; ``auto`` (default): ``tensor`` when the model
        declares exactly one input that is not a record field, else ``columns``.
    tensor_name, tensor_datatype : str, optional
        Name and datatype of the 2-D tensor (default: the declared input, else ``input-0`` /
        ``FP64``).
    content_type : str, optional
        Request-level ``parameters.content_type`` (default ``"pd"`` with ``columns``, which tells
        MLServer to decode the inputs into a DataFrame; ``""`` sends none).
    decision_output : str, optional
        Output holding the decision (MLServer's scikit-learn runtime: ``"predict"``). Default:
        the first output the server returns, unless ``score_output`` is set and ``threshold``
        decides.
    score_output : str, optional
        Output holding probabilities (``"predict_proba"``); column ``score_index`` is the score.
    """

    kind: Literal["kserve-v2"] = "kserve-v2"
    model: str
    inputs: Literal["auto", "columns", "tensor"] = "auto"
    tensor_name: str | None = None
    tensor_datatype: str | None = None
    content_type: str | None = None
    decision_output: str | None = None
    score_output: str | None = None


class MlflowConfig(ServedModelConfig):
    """An MLflow scoring server (``mlflow models serve``, Databricks model serving).

    Attributes
    ----------
    path : str
        Default ``/invocations``.
    request_format : {"dataframe_split", "dataframe_records", "instances"}
        The body shape (default ``dataframe_split``: columns once, rows as lists).
    decision_field, score_field : str, optional
        Fields of one prediction when the model returns objects (a pyfunc returning a
        DataFrame); a scalar prediction is the decision, a list is a probability vector.
    """

    kind: Literal["mlflow"] = "mlflow"
    path: str = "/invocations"
    request_format: Literal["dataframe_split", "dataframe_records", "instances"] = (
        "dataframe_split")
    decision_field: str | None = None
    score_field: str | None = None


class KServeV1Config(ServedModelConfig):
    """KServe v1 / TensorFlow Serving REST (``/v1/models/{model}:predict``).

    Attributes
    ----------
    model : str
        Required: the model's name on the server.
    instances : {"lists", "objects"}
        Rows as lists in ``feature_columns`` order (default; TF-Serving's row format, scikit-learn
        servers) or as objects keyed by field.
    decision_field, score_field : str, optional
        Fields of one prediction when predictions are objects.
    """

    kind: Literal["kserve-v1", "tf-serving"] = "kserve-v1"
    model: str
    instances: Literal["lists", "objects"] = "lists"
    decision_field: str | None = None
    score_field: str | None = None


def _decisions(values: Sequence[Any], c: ServedModelConfig, where: str) -> npt.NDArray[np.int64]:
    """0/1 decisions from a model's predicted values, by the rule every backend applies
    (:func:`fairprobe.access.http.parse_decision`): null, NaN, text where 0/1 is expected and
    values of another kind than ``positive_values`` are malformed, never negatives."""
    if c.positive_values is None and all(type(v) in (int, bool) for v in values):
        num = np.asarray(values, dtype=np.int64)  # the common case, vectorised
        bad = (num != 0) & (num != 1)
        if not bad.any():
            return num
    out = np.empty(len(values), dtype=np.int64)
    for i, v in enumerate(values):
        try:
            out[i] = parse_decision(v, c.positive_values, c.negative_values)
        except AnswerParseError as exc:
            hint = ""
            if c.positive_values is None and isinstance(v, str):
                hint = (f" (set positive_values = [{json.dumps(v)}] in the backend config if that "
                        "label is the positive one)")
            raise AnswerParseError(f"{where} answer {i}: {exc}{hint}") from None
    if (c.positive_values is not None and c.negative_values is None and len(values) > 1
            and not out.any()):
        # labels that never match (">50k" against ">50K", True against "1") would otherwise
        # all read as negatives and a one-sided model would look fair
        from fairprobe.errors import ConfigError

        shown = ", ".join(json.dumps(v) for v in dict.fromkeys(map(str, values[:50])))[:120]
        raise ConfigError(
            f"{where}: none of {len(values)} answers matches positive_values "
            f"{list(c.positive_values)} (answers: {shown}): check the spelling and case of "
            "positive_values in the backend config, or list the other labels in "
            "negative_values.")
    return out


def _scores(matrix: npt.NDArray[np.float64], c: ServedModelConfig, where: str
            ) -> npt.NDArray[np.float64]:
    """The positive class's column of a probability output (or the output itself if 1-D)."""
    m = matrix.reshape(matrix.shape[0], -1)
    if m.shape[1] == 1:
        s = m[:, 0]
    elif c.score_index < m.shape[1]:
        s = m[:, c.score_index]
    else:
        raise AnswerParseError(
            f"{where}: the probability output has {m.shape[1]} columns; score_index = "
            f"{c.score_index} is out of range (set score_index in the backend config).")
    if not np.all(np.isfinite(s)) or np.any((s < 0) | (s > 1)):
        raise AnswerParseError(f"{where}: a score is not a finite number in [0, 1].")
    return s


def _answers(dec: npt.NDArray[np.int64] | None, score: npt.NDArray[np.float64] | None
             ) -> list[Answer]:
    assert dec is not None or score is not None
    n = len(dec) if dec is not None else len(score)  # type: ignore[arg-type]
    d = [None] * n if dec is None else dec.tolist()
    s = [None] * n if score is None else score.tolist()
    return [Answer(a, b) for a, b in zip(d, s, strict=True)]


def _from_predictions(preds: Any, n: int, c: ServedModelConfig, where: str,
                      decision_field: str | None, score_field: str | None) -> list[Answer]:
    """Answers from a ``predictions`` list: scalars (decisions), lists (probability vectors) or
    objects (``decision_field`` / ``score_field``)."""
    if not isinstance(preds, list):
        raise AnswerParseError(f"{where}: 'predictions' is a {type(preds).__name__}, not a list.")
    if len(preds) != n:
        raise AnswerParseError(f"{where} returned {len(preds)} predictions for {n} records.")
    if n == 0:
        return []
    first = preds[0]
    if isinstance(first, Mapping):
        if decision_field is None and score_field is None:
            raise AnswerParseError(
                f"{where}: predictions are objects ({', '.join(map(str, first))}); set "
                "decision_field (and score_field) in the backend config.")
        try:
            dv = None if decision_field is None else [dotted_get(p, decision_field) for p in preds]
            sv = None if score_field is None else [dotted_get(p, score_field) for p in preds]
        except (KeyError, TypeError) as exc:
            raise AnswerParseError(f"{where}: a prediction lacks field {exc.args[0]!r}.") from None
        score = None if sv is None else _scores(_float_matrix(sv, where), c, where)
        if dv is None:
            return _answers(_thresholded(score, c, where), score)
        return _answers(_decisions(dv, c, where), score)
    if isinstance(first, list):
        m = _float_matrix(preds, where)
        score = _scores(m, c, where)
        if c.threshold is not None or m.reshape(n, -1).shape[1] == 1:
            return _answers(_thresholded(score, c, where), score)
        dec = (np.argmax(m.reshape(n, -1), axis=1) == c.score_index).astype(np.int64)
        return _answers(dec, score)
    return _answers(_decisions(preds, c, where), None)


def _float_matrix(values: Any, where: str) -> npt.NDArray[np.float64]:
    try:
        return np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise AnswerParseError(f"{where}: the scores are not a rectangular array of numbers.") from None


def _thresholded(score: npt.NDArray[np.float64] | None, c: ServedModelConfig, where: str
                 ) -> npt.NDArray[np.int64]:
    if score is None or c.threshold is None:
        raise AnswerParseError(
            f"{where}: the model returned scores but no decision; set threshold (decision = "
            "score >= threshold) in the backend config.")
    return (score >= c.threshold).astype(np.int64)


class _ServedModel(HttpBackend):
    """The shared part of the model-server backends: transport, identity, feature order."""

    config: ServedModelConfig
    config_type: ClassVar[type[ServedModelConfig]]

    def __init__(self, config: ServedModelConfig | None = None, **kwargs: Any) -> None:
        config = self._config_of(config, kwargs)
        assert isinstance(config, self.config_type)
        c = config
        if c.negative_values is not None and c.positive_values is None:
            raise ConfigError("negative_values needs positive_values in the backend config.")
        self.config = c
        self.max_batch = c.max_batch
        self.url = self._endpoint(c)
        self._transport = transport_for(c, self.url, c.headers, c.headers_env, c.timeout)
        transport = set(TRANSPORT_KEYS)
        if c.cache_name is not None:
            transport |= {"url"}
        ident = json.dumps(c.model_dump(exclude=transport), sort_keys=True, default=str)
        where = redact_url(self.url) if c.cache_name is None else c.cache_name
        self._identity = (
            f"{c.kind}:{where}" + (f" model={c.model}" if c.model else "")
            + (f" version={c.version}" if c.version else "")
            + f"#{hashlib.sha256(ident.encode()).hexdigest()[:12]}"
        )

    @abstractmethod
    def _endpoint(self, c: Any) -> str:
        """The prediction URL of this protocol for config ``c``."""

    #: The columns of the last request sent (what reached the model; ``None`` before one).
    sent_columns: list[str] | None = None

    def _columns(self, records: Sequence[Record]) -> list[str]:
        if self.config.feature_columns is not None:
            cols = list(self.config.feature_columns)
        else:
            cols = list(records[0]) if records else []
        self.sent_columns = cols
        return cols

    def error_hint(self, status: int | None) -> str:
        """What was sent and how to change it; for a 404, the keys that locate the model."""
        parts = []
        if status == 404:
            parts.append(f"no such model or route at {self.url}: check the config keys url (the "
                         "server's base URL, e.g. http://127.0.0.1:8080, without a path) and "
                         "model")
        if self.sent_columns is not None:
            parts.append(f"the request sent the columns {', '.join(self.sent_columns)}; "
                         "--feature-cols (or feature_columns in the backend config) chooses "
                         "them, --send-group adds the sensitive column")
        return "; ".join(parts)

    def _rows(self, records: Sequence[Record], cols: list[str]) -> list[list[Any]]:
        self.sent_columns = list(cols)
        try:
            return [[r[k] for k in cols] for r in records]
        except KeyError as exc:
            raise DataError(
                f"a record has no field {exc.args[0]!r}, which the {self.kind} backend sends "
                "(config key feature_columns).") from None

    def declared_inputs(self) -> list[str] | None:
        """The input fields the server declares (``None`` when it declares none)."""
        return None


class KServeV2Backend(_ServedModel):
    """A model behind the Open Inference Protocol v2 (KServe, Seldon MLServer, Triton).

    ``KServeV2Backend(url="http://127.0.0.1:8080", model="income", score_output=
    "predict_proba", decision_output="predict")`` asks MLServer's scikit-learn runtime for both
    outputs; ``score_index`` picks the positive class's column. Records go as one tensor per field
    (``inputs = "columns"``, with ``parameters.content_type = "pd"`` so MLServer builds a
    DataFrame) or one 2-D tensor (a single declared input).
    """

    kind = "kserve-v2"
    config_type = KServeV2Config
    config: KServeV2Config

    def __init__(self, config: ServedModelConfig | None = None, **kwargs: Any) -> None:
        super().__init__(config, **kwargs)
        self._meta: dict[str, Any] | None = None
        self._meta_lock = threading.Lock()
        self._seen_version: str | None = None  # the model version that answered first

    def _model_path(self, c: KServeV2Config) -> str:
        v = f"/versions/{c.version}" if c.version else ""
        return f"{c.url}/v2/models/{c.model}{v}"

    def _endpoint(self, c: Any) -> str:
        return self._model_path(c) + "/infer"

    def metadata(self) -> dict[str, Any]:
        """``GET /v2/models/{model}`` (once): the model's name, versions, inputs, outputs."""
        with self._meta_lock:
            if self._meta is None:
                url = self._model_path(self.config)
                try:
                    meta = self._transport.request_json("GET", url, None)
                except HttpStatusError as exc:
                    raise AccessError(
                        f"{url} answered HTTP {exc.status}: the server has no model "
                        f"{self.config.model!r}{' version ' + self.config.version if self.config.version else ''}"
                        " (config keys model / version)."
                    ) from None
                self._meta = meta if isinstance(meta, dict) else {}
            return self._meta

    def declared_inputs(self) -> list[str] | None:
        names = [str(i.get("name")) for i in self.metadata().get("inputs") or []
                 if isinstance(i, Mapping) and i.get("name")]
        return names or None

    def model_identity(self) -> Any:
        """Ready check (``/v2/health/ready``), then the model's metadata as its identity."""
        from fairprobe.access.identity import identity_from_report

        c = self.config
        ready = f"{c.url}/v2/health/ready"
        try:
            self._transport.request_json("GET", ready, None)
        except HttpStatusError as exc:
            if exc.status == 404:  # no v2 server there: a wrong base URL, not a slow start
                raise AccessError(
                    f"{ready} answered HTTP 404: no Open Inference Protocol v2 server at "
                    f"{c.url}; check the config key url (the server's base URL, e.g. "
                    "http://127.0.0.1:8080) and kind.") from None
            err = TransientAccessError(f"{ready} answered HTTP {exc.status}: not ready")
            err.status = exc.status
            raise err from None
        except AnswerParseError:
            pass  # some servers answer readiness with an empty body
        meta = self.metadata()
        if not c.version and not meta.get("versions"):
            return None  # a name alone does not identify a model: fingerprint the answers
        detail: dict[str, Any] = {k: meta[k] for k in ("name", "versions", "platform", "inputs",
                                                      "outputs")
                  if k in meta}
        if c.version:
            detail["version"] = c.version
        mi = identity_from_report(detail)
        if mi is None:
            return None
        name = str(meta.get("name", c.model))
        return type(mi)(f"{name}:{c.version}" if c.version else name, mi.digest, mi.source,
                        mi.detail)

    def _plan(self, records: Sequence[Record]) -> tuple[str, list[str], dict[str, str]]:
        """``(mode, columns, datatypes)`` from the config and the declared inputs."""
        c = self.config
        declared = [i for i in self.metadata().get("inputs") or [] if isinstance(i, Mapping)]
        types = {str(i.get("name")): str(i.get("datatype", "")) for i in declared}
        fields = set(records[0]) if records else set()
        mode = c.inputs
        if mode == "auto":
            mode = "tensor" if len(declared) == 1 and str(declared[0].get("name")) not in fields \
                else "columns"
        if c.feature_columns is not None:
            cols = list(c.feature_columns)
        elif mode == "columns" and declared:
            absent = [n for n in types if n not in fields]
            if absent:
                raise DataError(
                    f"model {c.model!r} declares the input(s) {', '.join(map(repr, absent))}, "
                    "absent from the records; send them (--feature-cols, or --send-group for "
                    "the sensitive column) or set feature_columns in the backend config.")
            cols = list(types)
        else:
            cols = list(records[0]) if records else []
        return mode, cols, types

    def request_body(self, records: Sequence[Record]) -> dict[str, Any]:
        """The exact ``/infer`` body for ``records`` (to check before paying)."""
        c = self.config
        mode, cols, types = self._plan(records)
        n = len(records)
        rows = self._rows(records, cols)
        body: dict[str, Any] = {}
        if mode == "tensor":
            name = c.tensor_name or (next(iter(types)) if len(types) == 1 else "input-0")
            dtype = c.tensor_datatype or types.get(name) or "FP64"
            flat = [v for row in rows for v in row]
            _check_values(flat, cols, dtype)
            body["inputs"] = [{"name": name, "shape": [n, len(cols)], "datatype": dtype,
                               "data": flat}]
            content = c.content_type
        else:
            inputs = []
            for j, col in enumerate(cols):
                values = [row[j] for row in rows]
                dtype = types.get(col) or _v2_datatype(values, col)
                _check_values(values, [col], dtype)
                inputs.append({"name": col, "shape": [n, 1], "datatype": dtype, "data": values})
            body["inputs"] = inputs
            content = "pd" if c.content_type is None else c.content_type
        if content:
            body["parameters"] = {"content_type": content}
        outs = [o for o in (c.decision_output, c.score_output) if o]
        if outs:
            body["outputs"] = [{"name": o} for o in dict.fromkeys(outs)]
        return body

    def _check_identity(self, data: Mapping[str, Any], where: str) -> None:
        """The answer's ``model_name`` / ``model_version`` are the model asked, and the version
        stays the one first answered (a model swapped mid-audit is refused, not mixed in)."""
        c = self.config
        name, version = data.get("model_name"), data.get("model_version")
        if name is not None and str(name) != c.model:
            raise ModelIdentityError(
                f"{where} answered for model {str(name)!r}, not the model asked, {c.model!r}: "
                "refused (config key model).")
        if version is None:
            return
        version = str(version)
        if c.version and version != c.version:
            raise ModelIdentityError(
                f"{where} answered with model version {version!r}, not the version asked, "
                f"{c.version!r}: refused (config key version).")
        with self._meta_lock:
            first = self._seen_version
            if first is None:
                self._seen_version = first = version
        if version != first:
            raise ModelIdentityError(
                f"{where}: the model changed during the audit (version {first!r} answered "
                f"first, now {version!r}); answers of two models cannot be mixed: pin the "
                "version (config key version) and audit again.")

    def _outputs(self, data: Any, where: str) -> dict[str, Mapping[str, Any]]:
        outputs = data.get("outputs") if isinstance(data, Mapping) else None
        if not isinstance(outputs, list) or not outputs:
            raise AnswerParseError(f"{where} answered without 'outputs'.")
        by_name: dict[str, Mapping[str, Any]] = {}
        for o in outputs:
            if not isinstance(o, Mapping) or not isinstance(o.get("name"), str):
                raise AnswerParseError(f"{where}: an output is not an object with a name.")
            if o["name"] in by_name:
                raise AnswerParseError(
                    f"{where} returned output {o['name']!r} twice: which one is the answer is "
                    "undetermined, refused.")
            by_name[o["name"]] = o
        return by_name

    def _tensor(self, o: Mapping[str, Any], name: str, n: int, where: str
                ) -> tuple[list[Any], int, str]:
        """An output's values, its columns per record and its datatype, after checking that its
        shape, its length and its datatype agree with each other, with the ``n`` records asked
        and with what the model declares."""
        values, shape, dtype = o.get("data"), o.get("shape"), o.get("datatype")
        if not isinstance(values, list):
            raise AnswerParseError(f"{where}: output {name!r} holds no data list.")
        if (not isinstance(shape, list) or not shape
                or not all(type(d) is int and d >= 0 for d in shape)):
            raise AnswerParseError(f"{where}: output {name!r} has no valid shape ({shape!r}).")
        size = int(np.prod(shape))
        if size != len(values) or shape[0] != n:
            raise AnswerParseError(
                f"{where}: output {name!r} declares shape {shape} and holds {len(values)} values "
                f"for {n} records: refused.")
        if not isinstance(dtype, str) or dtype not in _V2_NUMERIC | {"BYTES"}:
            raise AnswerParseError(f"{where}: output {name!r} has no valid datatype ({dtype!r}).")
        declared = {str(d.get("name")): d for d in self.metadata().get("outputs") or []
                    if isinstance(d, Mapping)}
        if name in declared:
            d = declared[name]
            if d.get("datatype") is not None and str(d["datatype"]) != dtype:
                raise AnswerParseError(
                    f"{where}: output {name!r} is {dtype}, but the model declares "
                    f"{d['datatype']}: refused.")
            dshape = d.get("shape")
            if isinstance(dshape, list) and (
                    len(dshape) != len(shape)
                    or any(isinstance(a, int) and a >= 0 and a != b
                           for a, b in zip(dshape[1:], shape[1:], strict=False))):
                raise AnswerParseError(
                    f"{where}: output {name!r} has shape {shape}, but the model declares "
                    f"{dshape}: refused.")
        text = dtype == "BYTES"
        if any(v is not None and (isinstance(v, str) != text
                                  or not isinstance(v, str | int | float)) for v in values):
            raise AnswerParseError(
                f"{where}: output {name!r} is {dtype} but holds "
                f"{'non-text' if text else 'text or non-scalar'} values: refused.")
        return values, size // n if n else 1, dtype

    def ask(self, records: Sequence[Record]) -> list[Answer]:
        c = self.config
        if not records:
            return []
        data = self._transport.request_json("POST", self.url, self.request_body(records),
                                            len(records))
        where = f"POST {self.url}"
        by_name = self._outputs(data, where)
        self._check_identity(data, where)
        n = len(records)

        def tensor(name: str) -> tuple[list[Any], int, str]:
            o = by_name.get(name)
            if o is None:
                raise AnswerParseError(
                    f"{where} returned no output {name!r} (outputs: {', '.join(by_name)}); "
                    "check decision_output / score_output in the backend config.")
            return self._tensor(o, name, n, where)

        score = None
        if c.score_output:
            sv, _, _ = tensor(c.score_output)
            score = _scores(_float_matrix(sv, where).reshape(n, -1), c, where)
        dec_name = c.decision_output
        if dec_name is None and (score is None or c.threshold is None):
            dec_name = next(iter(by_name))
        if dec_name is None:
            return _answers(_thresholded(score, c, where), score)
        values, cols, dtype = tensor(dec_name)
        if cols != 1:  # a probability matrix [n, k] as the decision output
            if not dtype.startswith("FP") or cols < 2:
                raise AnswerParseError(
                    f"{where}: output {dec_name!r} holds {cols} {dtype} values per record; a "
                    "decision output holds one (a probability output is floating point, "
                    "config key score_output).")
            m = _float_matrix(values, where).reshape(n, cols)
            if score is None:
                score = _scores(m, c, where)
            return _answers((np.argmax(m, axis=1) == c.score_index).astype(np.int64), score)
        return _answers(_decisions(values, c, where), score)


def _v2_datatype(values: Sequence[Any], col: str) -> str:
    kinds = {type(v) for v in values}
    if kinds <= {bool}:
        return "BOOL"
    if kinds <= {int}:
        return "INT64"
    if kinds <= {int, float}:
        return "FP64"
    if kinds <= {str}:
        return "BYTES"
    shown = ", ".join(sorted(k.__name__ for k in kinds))
    raise DataError(
        f"field {col!r} mixes {shown} values, which no v2 tensor datatype holds; clean the column "
        "or leave it out (config key feature_columns).")


def _check_values(values: Sequence[Any], cols: list[str], dtype: str) -> None:
    if any(v is None for v in values):
        raise DataError(
            f"a record has a missing value in {', '.join(cols)}; the v2 protocol has no missing "
            "values: drop or impute those rows, or leave the column out (config key "
            "feature_columns).")
    if dtype in _V2_NUMERIC and any(isinstance(v, str) for v in values):
        raise DataError(
            f"the model declares {dtype} for {', '.join(cols)} but a record holds text there; "
            "send the columns it expects (config key feature_columns).")


class MlflowBackend(_ServedModel):
    """An MLflow scoring server: ``POST {url}/invocations`` with ``dataframe_split``.

    MLflow reports no model identity, so cached answers are checked by fingerprinting; set
    ``model`` / ``version`` to keep answers of different registered versions apart.
    """

    kind = "mlflow"
    config_type = MlflowConfig
    config: MlflowConfig

    def _endpoint(self, c: Any) -> str:
        return c.url + (c.path if c.path.startswith("/") else "/" + c.path)

    def request_body(self, records: Sequence[Record]) -> dict[str, Any]:
        c = self.config
        cols = self._columns(records)
        if c.request_format == "dataframe_records":
            return {"dataframe_records": [{k: r[k] for k in cols} for r in records]}
        rows = self._rows(records, cols)
        if c.request_format == "instances":
            return {"instances": rows}
        return {"dataframe_split": {"columns": cols, "data": rows}}

    def ask(self, records: Sequence[Record]) -> list[Answer]:
        c = self.config
        data = self._transport.request_json("POST", self.url, self.request_body(records),
                                            len(records))
        preds = data.get("predictions") if isinstance(data, Mapping) else data
        return _from_predictions(preds, len(records), c, f"POST {self.url}",
                                 c.decision_field, c.score_field)


class KServeV1Backend(_ServedModel):
    """KServe v1 / TF-Serving REST: ``POST {url}/v1/models/{model}:predict``.

    The identity is what ``GET {url}/v1/models/{model}`` reports (TF-Serving's version status,
    KServe's model name), readiness flags removed.
    """

    kind = "kserve-v1"
    config_type = KServeV1Config
    config: KServeV1Config

    def _model_path(self, c: KServeV1Config) -> str:
        v = f"/versions/{c.version}" if c.version else ""
        return f"{c.url}/v1/models/{c.model}{v}"

    def _endpoint(self, c: Any) -> str:
        return self._model_path(c) + ":predict"

    def __init__(self, config: ServedModelConfig | None = None, **kwargs: Any) -> None:
        super().__init__(config, **kwargs)
        self._first_status: dict[str, Any] | None = None  # the model status first reported
        self._status_lock = threading.Lock()

    def _status(self) -> dict[str, Any] | None:
        """What ``GET {url}/v1/models/{model}`` reports about the model (name, the versions
        TF-Serving lists), readiness flags removed; ``None`` when it reports nothing."""
        c = self.config
        try:
            report = self._transport.request_json("GET", self._model_path(c), None)
        except TransientAccessError:
            raise
        except (AccessError, AnswerParseError):
            return None
        if not isinstance(report, Mapping):
            return None
        detail: dict[str, Any] = {"name": report.get("name", c.model)}
        status = report.get("model_version_status")
        if isinstance(status, list):  # TF-Serving
            detail["versions"] = sorted(str(s.get("version")) for s in status
                                        if isinstance(s, Mapping))
        if c.version:
            detail["version"] = c.version
        with self._status_lock:
            if self._first_status is None:
                self._first_status = detail
        return detail

    def model_identity(self) -> Any:
        from fairprobe.access.identity import identity_from_report

        detail = self._status()
        return None if detail is None else identity_from_report(detail)

    def _check_same_model(self, where: str) -> None:
        """After each batch, the model status again: v1 answers carry no version, so a model
        swapped mid-audit shows only there (one GET per batch, no query paid)."""
        first = self._first_status
        now = self._status()
        if first is not None and now is not None and now != first:
            raise ModelIdentityError(
                f"{where}: the model changed during the audit (the server reported "
                f"{json.dumps(first, default=str)}, now {json.dumps(now, default=str)}); "
                "answers of two models cannot be mixed: pin the version (config key version) "
                "and audit again.")

    def request_body(self, records: Sequence[Record]) -> dict[str, Any]:
        cols = self._columns(records)
        if self.config.instances == "objects":
            return {"instances": [{k: r[k] for k in cols} for r in records]}
        return {"instances": self._rows(records, cols)}

    def ask(self, records: Sequence[Record]) -> list[Answer]:
        c = self.config
        data = self._transport.request_json("POST", self.url, self.request_body(records),
                                            len(records))
        if not isinstance(data, Mapping) or "predictions" not in data:
            raise AnswerParseError(f"POST {self.url} answered without 'predictions'.")
        self._check_same_model(f"POST {self.url}")
        return _from_predictions(data["predictions"], len(records), c, f"POST {self.url}",
                                 c.decision_field, c.score_field)


def _builder(cls: type[_ServedModel]) -> Any:
    def build(cfg: BackendConfig) -> Backend:
        assert isinstance(cfg, cls.config_type)
        return cls(cfg)

    return build


register_backend("kserve-v2", KServeV2Config, _builder(KServeV2Backend))
register_backend("mlflow", MlflowConfig, _builder(MlflowBackend))
register_backend("kserve-v1", KServeV1Config, _builder(KServeV1Backend))
register_backend("tf-serving", KServeV1Config, _builder(KServeV1Backend))
