"""Modules that moved, importable under their old names for one release, with a warning.

``import fairprobe.auditing`` returns :mod:`fairprobe.audit.job` itself (the same module object,
so ``isinstance`` checks and monkeypatches agree) and emits a :class:`DeprecationWarning`
naming the new place. A finder on :data:`sys.meta_path` does it, rather than a stub file at the
old path, so that the old files are plain renames in version control.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import warnings
from types import ModuleType
from typing import Any

#: Old module name -> the module it moved to.
MOVED = {
    "fairprobe.auditing": "fairprobe.audit.job",
    "fairprobe.predictions": "fairprobe.audit.predictions",
}


def _stacklevel() -> int:
    """The warning's level: the first frame outside the import machinery and this module."""
    level, frame = 1, sys._getframe(1)
    while frame is not None and (frame.f_code.co_filename.startswith("<frozen importlib")
                                 or frame.f_code.co_filename == __file__):
        frame = frame.f_back  # type: ignore[assignment]
        level += 1
    return level


class _MovedLoader(importlib.abc.Loader):
    def __init__(self, new: str) -> None:
        self.new = new

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        warnings.warn(f"{spec.name} moved to {self.new}; import it from there (or the public "
                      f"names from fairprobe.audit): the old name goes in the next release.",
                      DeprecationWarning, stacklevel=_stacklevel())
        return importlib.import_module(self.new)

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run: the module is the new one, already executed."""


class _MovedFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname: str, path: Any, target: Any = None
                  ) -> importlib.machinery.ModuleSpec | None:
        new = MOVED.get(fullname)
        return None if new is None else importlib.util.spec_from_loader(
            fullname, _MovedLoader(new))


def install() -> None:
    """Put the finder on :data:`sys.meta_path` (once)."""
    if not any(isinstance(f, _MovedFinder) for f in sys.meta_path):
        sys.meta_path.append(_MovedFinder())
