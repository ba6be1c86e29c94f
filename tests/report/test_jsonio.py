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


def test_write_result_envelope_and_read_back(tmp_path) -> None:
    from fairprobe.provenance import Provenance
    from fairprobe.report import read_result, write_result

    prov = Provenance.capture(seed=7)
    p = write_result(tmp_path / "r.json", "audit", {"kind": "old", "x": np.float64(0.5)}, prov)
    doc = json.loads(p.read_text())
    assert list(doc)[:3] == ["schema", "kind", "provenance"]
    assert doc["schema"] == "fairprobe/1" and doc["kind"] == "audit" and doc["x"] == 0.5
    assert doc["provenance"]["seed"] == 7
    assert read_result(p, "audit")["x"] == 0.5
    with pytest.raises(DataError, match="not 'sequential'"):
        read_result(p, "sequential")
    p2 = write_result(tmp_path / "d.json", "demo", {"y": 1})  # default provenance
    assert json.loads(p2.read_text())["provenance"]["fairprobe_version"]


def test_write_result_rejects_bad_kind_body_and_paths(tmp_path) -> None:
    from fairprobe.errors import InvalidParameterError
    from fairprobe.report import read_result, write_result

    with pytest.raises(InvalidParameterError, match="'kind'"):
        write_result(tmp_path / "r.json", "nonsense", {})
    with pytest.raises(InvalidParameterError, match="envelope"):
        write_result(tmp_path / "r.json", "audit", {"schema": "x"})
    with pytest.raises(DataError, match="is a directory"):
        write_result(tmp_path, "audit", {})
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(DataError, match="not a directory"):
        write_result(blocker / "r.json", "audit", {})
    foreign = tmp_path / "f.json"
    foreign.write_text('{"schema": "other/9"}')
    with pytest.raises(DataError, match="schema 'other/9'"):
        read_result(foreign)


def test_interval_dict_shape() -> None:
    from fairprobe.report import interval_dict

    assert interval_dict(np.float64(0.1), 0.2, 0.95, "wilson") == {
        "low": 0.1, "high": 0.2, "level": 0.95, "method": "wilson"}
