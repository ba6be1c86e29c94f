"""Backends from configuration files: ``load_backend`` dispatches on the ``kind`` key.

A backend config is a TOML or JSON table (either the whole file or its ``[backend]`` table)::

    kind = "http-json"
    url = "http://127.0.0.1:8765"
    path = "/audit/predict"

Each kind has a pydantic model that validates it (unknown keys are refused, so a typo is an error
rather than a silently ignored setting). Relative file paths in a config file are resolved against
the file's directory.
"""

from __future__ import annotations

import importlib
import json
import os
import tomllib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from fairprobe.access.base import Backend
from fairprobe.errors import ConfigError

__all__ = [
    "BackendConfig",
    "LocalConfig",
    "ReplayConfig",
    "backend_kinds",
    "load_backend",
    "register_backend",
]

Scalar = str | int | float | bool


class BackendConfig(BaseModel):
    """Base of every backend config model: strict keys, immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: str

    def resolve_paths(self, base_dir: Path) -> BackendConfig:
        """Return a copy whose relative file paths are resolved against ``base_dir``."""
        return self


def _resolve(p: str | None, base: Path) -> str | None:
    if p is None or os.path.isabs(p):
        return p
    return str(base / p)


class LocalConfig(BackendConfig):
    """A scikit-learn model file (skops or joblib) or an importable callable."""

    kind: Literal["local"] = "local"
    path: str | None = None
    callable: str | None = Field(default=None, description="'package.module:function'")
    trusted: list[str] = []
    allow_pickle: bool = False
    positive_label: Scalar | None = None
    feature_columns: list[str] | None = None
    name: str | None = None
    max_batch: int = Field(default=1024, ge=1)

    def resolve_paths(self, base_dir: Path) -> LocalConfig:
        return self.model_copy(update={"path": _resolve(self.path, base_dir)})


class ReplayConfig(BackendConfig):
    """Recorded answers in a CSV or Parquet file."""

    kind: Literal["replay"] = "replay"
    path: str
    key_column: str | None = None
    feature_columns: list[str] | None = None
    decision_column: str = "decision"
    score_column: str = "score"
    logit_column: str = "logit"
    positive_values: list[Scalar] | None = None
    allow_unparsed: bool = False
    max_batch: int = Field(default=4096, ge=1)

    def resolve_paths(self, base_dir: Path) -> ReplayConfig:
        return self.model_copy(update={"path": _resolve(self.path, base_dir)})


def _build_local(cfg: BackendConfig) -> Backend:
    from fairprobe.access.local import LocalModelBackend

    assert isinstance(cfg, LocalConfig)
    kw: dict[str, Any] = {
        "positive_label": cfg.positive_label,
        "feature_columns": cfg.feature_columns,
        "name": cfg.name,
        "max_batch": cfg.max_batch,
    }
    if (cfg.path is None) == (cfg.callable is None):
        raise ConfigError("a local backend config needs exactly one of 'path' or 'callable'.")
    if cfg.path is not None:
        return LocalModelBackend.from_file(
            cfg.path, trusted=cfg.trusted, allow_pickle=cfg.allow_pickle, **kw
        )
    assert cfg.callable is not None
    mod_name, _, attr = cfg.callable.partition(":")
    if not mod_name or not attr:
        raise ConfigError(
            f"'callable' must look like 'package.module:function'; got {cfg.callable!r}."
        )
    try:
        obj: Any = importlib.import_module(mod_name)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"cannot import {cfg.callable!r}: {exc}") from None
    return LocalModelBackend(obj, **kw)


def _build_replay(cfg: BackendConfig) -> Backend:
    from fairprobe.access.replay import ReplayBackend

    assert isinstance(cfg, ReplayConfig)
    # every field but the kind and the table is a keyword of ReplayBackend, under the same name
    return ReplayBackend(cfg.path, **cfg.model_dump(exclude={"kind", "path"}))


_REGISTRY: dict[str, tuple[type[BackendConfig], Callable[[BackendConfig], Backend]]] = {
    "local": (LocalConfig, _build_local),
    "replay": (ReplayConfig, _build_replay),
}


def register_backend(
    kind: str, config_model: type[BackendConfig], build: Callable[[BackendConfig], Backend]
) -> None:
    """Make ``kind`` loadable by :func:`load_backend` (config validated by ``config_model``)."""
    _REGISTRY[kind] = (config_model, build)


def backend_kinds() -> list[str]:
    """The registered backend kinds."""
    _load_builtin()
    return sorted(_REGISTRY)


def _load_builtin() -> None:
    # the network backends register themselves on import
    import fairprobe.access.http  # noqa: F401
    import fairprobe.access.openai_chat  # noqa: F401
    import fairprobe.access.servers  # noqa: F401


def _read_file(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise ConfigError(f"backend config file {str(path)!r} does not exist.")
    try:
        if path.suffix.lower() == ".toml":
            with path.open("rb") as f:
                return tomllib.load(f)
        if path.suffix.lower() == ".json":
            data = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(data, dict):
                raise ConfigError(f"{path.name} must hold a JSON object.")
            return data
    except (tomllib.TOMLDecodeError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot parse {path.name}: {exc}") from None
    raise ConfigError(f"backend config {path.name} must be a .toml or .json file.")


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    loc = ".".join(str(p) for p in err["loc"])
    more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return f"{loc!r}: {err['msg']}{more}" if loc else f"{err['msg']}{more}"


def parse_config(
    config: Mapping[str, Any] | BackendConfig, *, base_dir: Path | None = None, where: str = ""
) -> BackendConfig:
    """Validate a backend config mapping into its pydantic model."""
    if isinstance(config, BackendConfig):
        cfg = config
    else:
        data = dict(config)
        if "kind" not in data and isinstance(data.get("backend"), Mapping):
            data = dict(data["backend"])
        kind = data.get("kind")
        _load_builtin()
        if kind not in _REGISTRY:
            listed = ", ".join(repr(k) for k in sorted(_REGISTRY))
            raise ConfigError(f"backend config{where} needs 'kind', one of {listed}; got {kind!r}.")
        model, _ = _REGISTRY[str(kind)]
        try:
            cfg = model.model_validate(data)
        except ValidationError as exc:
            raise ConfigError(
                f"invalid {kind} backend config{where}: {_first_error(exc)}"
            ) from None
    if base_dir is not None:
        cfg = cfg.resolve_paths(base_dir)
    return cfg


def load_backend(config: str | os.PathLike[str] | Mapping[str, Any] | BackendConfig) -> Backend:
    """Build a backend from a config file (TOML/JSON), a mapping or a config model.

    The table (or the file's ``[backend]`` table) must have a ``kind`` among
    :func:`backend_kinds`: ``"http-json"``, ``"openai-chat"``, ``"local"``, ``"replay"``,
    ``"kserve-v2"``, ``"mlflow"``, ``"kserve-v1"`` / ``"tf-serving"``.

    Raises
    ------
    ConfigError
        Unknown kind, unknown or invalid keys, unreadable file — in one line.
    """
    base_dir: Path | None = None
    where = ""
    if isinstance(config, str | os.PathLike):
        path = Path(config)
        data: Mapping[str, Any] | BackendConfig = _read_file(path)
        base_dir = path.resolve().parent
        where = f" in {path.name}"
    else:
        data = config
    cfg = parse_config(data, base_dir=base_dir, where=where)
    _, build = _REGISTRY[cfg.kind]
    return build(cfg)
