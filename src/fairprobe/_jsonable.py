"""Plain JSON types from numpy, dataclasses and result objects.

A base module (it imports nothing of fairprobe's), so that the provenance block, the result
documents and the methods convert the same way without importing one another.
"""

from __future__ import annotations

import dataclasses
import math
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["to_jsonable"]


def to_jsonable(obj: Any) -> Any:
    """Convert ``obj`` into plain JSON types.

    Objects with a ``to_dict()`` method, dataclasses, numpy scalars and arrays, paths and sets are
    converted; non-finite floats become ``null`` (JSON has no NaN or infinity).
    """
    if hasattr(obj, "to_dict") and callable(obj.to_dict):
        return to_jsonable(obj.to_dict())
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, Mapping):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple | set | frozenset):
        return [to_jsonable(v) for v in obj]
    # numpy is not imported here (the command line starts without it): an object can only be
    # a numpy array or scalar once numpy is loaded
    np = sys.modules.get("numpy")
    if np is not None and isinstance(obj, np.ndarray):
        return [to_jsonable(v) for v in obj.tolist()]
    if np is not None and isinstance(obj, np.generic):
        return to_jsonable(obj.item())
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, Path):
        return str(obj)
    return obj
