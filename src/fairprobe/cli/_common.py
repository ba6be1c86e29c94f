"""Helpers shared by the CLI commands: reading tables, building backends, printing results."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console

from fairprobe.errors import ConfigError

if TYPE_CHECKING:
    import pandas as pd

console = Console(stderr=False, highlight=False)


def read_table(path: str | Path) -> pd.DataFrame:
    """A CSV or Parquet file given on the command line, with one-line errors."""
    from fairprobe._io import read_table as _read_table

    return _read_table(path, "File")


def build_backend(url: str | None, backend_config: str | None, path: str = "/audit/predict") -> Any:
    """A backend from ``--url`` (the platform's HTTP JSON shape) or ``--backend-config FILE``."""
    from fairprobe.access.config import load_backend
    from fairprobe.access.http import HttpJsonBackend

    if (url is None) == (backend_config is None):
        raise ConfigError("Give exactly one of --url and --backend-config.")
    if backend_config is not None:
        return load_backend(backend_config)
    return HttpJsonBackend(url=url, path=path)


def split_list(value: str | None) -> list[str] | None:
    """``"a,b,c"`` as ``["a", "b", "c"]``; ``None`` stays ``None``."""
    if value is None:
        return None
    return [v.strip() for v in value.split(",") if v.strip()]
