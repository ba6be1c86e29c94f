"""Lazy package exports (PEP 562): one rule for every package that re-exports its modules' names.

A package lists each public name with the module that defines it; the name is imported on first
use, so importing the package (as the command line does at start-up) pays for nothing it does
not use.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(package: str, where: Mapping[str, str], namespace: dict[str, Any],
                 ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``.

    Parameters
    ----------
    package : str
        The package's ``__name__``.
    where : mapping
        Each lazy name -> the submodule (relative to ``package``) that defines it.
    namespace : dict
        The package's ``globals()``: a name once imported is stored there, so that later lookups
        are plain attribute reads.
    """

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace.get("__all__", ()), *where})

    return __getattr__, __dir__
