"""load_backend: dispatch on kind, validation errors in one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from fairprobe.access import (
    HttpJsonBackend,
    OpenAIChatBackend,
    backend_kinds,
    load_backend,
)
from fairprobe.errors import ConfigError


def test_kinds() -> None:
    assert {"http-json", "local", "openai-chat", "replay"} <= set(backend_kinds())


def test_toml_with_backend_table(tmp_path: Path) -> None:
    p = tmp_path / "audit.toml"
    p.write_text('[backend]\nkind = "http-json"\nurl = "http://127.0.0.1:8765/"\n'
                 'path = "/user/predict"\nmax_batch = 16\n')
    be = load_backend(p)
    assert isinstance(be, HttpJsonBackend)
    assert be.url == "http://127.0.0.1:8765/user/predict" and be.max_batch == 16


def test_openai_from_dict() -> None:
    be = load_backend({"kind": "openai-chat", "base_url": "http://127.0.0.1:1/v1", "model": "m",
                       "labels": ["yes", "no"], "positive_labels": ["yes"]})
    assert isinstance(be, OpenAIChatBackend) and be.max_batch == 1


@pytest.mark.parametrize(
    "cfg, match",
    [
        ({}, "needs 'kind', one of 'http-json', 'kserve-v1', 'kserve-v2', 'local', 'mlflow', "
             "'openai-chat', 'replay', 'tf-serving'; got None"),
        ({"kind": "grpc"}, "got 'grpc'"),
        ({"kind": "http-json"}, "invalid http-json backend config: 'url': Field required"),
        ({"kind": "http-json", "url": "127.0.0.1:80"}, "'url': Value error, must start with http"),
        ({"kind": "http-json", "url": "http://x", "max_batch": 0}, "'max_batch': Input should be"),
        ({"kind": "http-json", "url": "http://x", "decision_field": None},
         "without decision_field needs a threshold"),
        ({"kind": "openai-chat", "base_url": "http://x", "model": "m", "labels": ["a", "b"],
          "positive_labels": ["c"]}, "positive label\\(s\\) \\['c'\\] are not in labels"),
        ({"kind": "openai-chat", "base_url": "http://x", "model": "m", "labels": ["a", "b"],
          "positive_labels": ["a", "b"]}, "at least one negative label"),
        ({"kind": "openai-chat", "base_url": "http://x", "model": "m", "labels": ["a"],
          "positive_labels": ["a"]}, "'labels': List should have at least 2 items"),
        ({"kind": "openai-chat", "base_url": "http://x", "model": "m", "labels": ["a", "b"],
          "positive_labels": ["a"], "prompt_template": "{oops"}, "not a valid format string"),
        ({"kind": "openai-chat", "base_url": "http://x", "model": "m", "labels": ["a", "b"],
          "positive_labels": ["a"], "api_key_env": "FAIRPROBE_SURELY_UNSET_KEY"},
         "FAIRPROBE_SURELY_UNSET_KEY \\(the API key\\) is not set"),
    ],
)
def test_bad_configs_one_line(cfg: dict[str, object], match: str) -> None:
    with pytest.raises(ConfigError, match=match) as e:
        load_backend(cfg)
    assert "\n" not in str(e.value)


def test_bad_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_backend(tmp_path / "none.toml")
    (tmp_path / "a.toml").write_text("kind = ")
    with pytest.raises(ConfigError, match="cannot parse a.toml"):
        load_backend(tmp_path / "a.toml")
    (tmp_path / "a.yaml").write_text("kind: local")
    with pytest.raises(ConfigError, match="must be a .toml or .json"):
        load_backend(tmp_path / "a.yaml")
    (tmp_path / "l.json").write_text("[1]")
    with pytest.raises(ConfigError, match="must hold a JSON object"):
        load_backend(tmp_path / "l.json")
    (tmp_path / "k.toml").write_text('kind = "http-json"\nurl = "http://x"\nbatch_size = 3\n')
    with pytest.raises(ConfigError, match="in k.toml: 'batch_size': Extra inputs"):
        load_backend(tmp_path / "k.toml")


def test_public_names_resolve() -> None:
    import fairprobe.access as access

    for name in access.__all__:
        assert getattr(access, name) is not None
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        access.Nope  # noqa: B018
