import json
from dataclasses import dataclass

import numpy as np
import pytest

from fairprobe.errors import DataError
from fairprobe.report import read_json, to_jsonable, write_json


@dataclass(frozen=True)
class _R:
    x: float
    arr: np.ndarray


def test_to_jsonable_handles_numpy_nan_and_dataclasses() -> None:
    out = to_jsonable({"r": _R(float("nan"), np.array([1, 2])), "i": np.int64(3), "t": (1.5,)})
    assert out == {"r": {"x": None, "arr": [1, 2]}, "i": 3, "t": [1.5]}


def test_write_json_is_atomic_and_readable(tmp_path) -> None:
    p = write_json(tmp_path / "sub" / "r.json", {"a": np.float64(0.5)})
    assert json.loads(p.read_text()) == {"a": 0.5}
    assert read_json(p) == {"a": 0.5}
    assert [f.name for f in p.parent.iterdir()] == ["r.json"]


def test_read_json_errors(tmp_path) -> None:
    with pytest.raises(DataError, match="not found"):
        read_json(tmp_path / "nope.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    with pytest.raises(DataError, match="not valid JSON"):
        read_json(bad)
