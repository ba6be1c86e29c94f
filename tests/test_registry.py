"""The shared plug-in registry behind every pluggable strategy."""

from __future__ import annotations

import pytest

from fairprobe._registry import Registry
from fairprobe.errors import ConfigError, InvalidParameterError


class _A:
    name = "a"

    def __init__(self, x: int = 0) -> None:
        self.x = x


def test_register_create_and_dict_behaviour() -> None:
    reg: Registry[type[_A]] = Registry("thing", "make_thing")
    assert reg.register(_A) is _A
    assert reg.register(_A) is _A  # the same class twice is harmless
    assert list(reg) == ["a"] and "a" in reg and reg["a"] is _A
    assert reg.create("a", x=3).x == 3
    with pytest.raises(InvalidParameterError, match="The 'thing' parameter of make_thing"):
        reg.create("b")


def test_name_clash_and_missing_name() -> None:
    reg: Registry[type[_A]] = Registry("thing", "make_thing")
    reg.register(_A)

    class _Other(_A):
        pass

    with pytest.raises(ConfigError, match="already registered"):
        reg.register(_Other)

    class _Nameless:
        name = ""

    with pytest.raises(InvalidParameterError, match="non-empty 'name'"):
        reg.register(_Nameless)  # type: ignore[arg-type]
    assert reg.register_as("fn")(len) is len and reg.create("fn", [1, 2]) == 2  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("module", "name", "factory"),
    [
        ("fairprobe.collab.attacker", "ATTACKS", "get_attack"),
        ("fairprobe.collab.baselines", "AGGREGATORS", "get_aggregator"),
        ("fairprobe.twosource.proxies", "PROXIES", "make_proxy"),
        ("fairprobe.twosource.detectors", "DETECTORS", "make_detector"),
        ("fairprobe.sequential.base", "_REGISTRY", "get_test"),
        ("fairprobe.radius.api", "METHODS", "consistency_radius"),
    ],
)
def test_every_strategy_family_uses_it(module: str, name: str, factory: str) -> None:
    import importlib

    reg = getattr(importlib.import_module(module), name)
    assert isinstance(reg, Registry) and len(reg) >= 2
    assert reg.owner == factory
